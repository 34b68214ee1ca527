"""Sitemap discovery and parsing, the pure core: robots.txt, bodies, entries, dates, limits.

Nothing in this package imports Scrapy or Twisted (a test enforces it), so it can be fed
the conformance corpus, fuzzed and benchmarked without a reactor.
"""

from .dates import LastMod, format_utc, parse_feed_date, parse_lastmod
from .decompress import BodyDecoder, is_gzip
from .errors import (
    BodyTooLarge,
    DecompressionError,
    EmptyBody,
    EntitiesDeclared,
    NotASitemap,
    SitemapError,
    SitemapSyntaxError,
    TooManyUrls,
    UnknownFormat,
)
from .model import Limits, SitemapRef, UrlEntry
from .prolog import sniff
from .reader import SITEMAP_KINDS, SitemapReader
from .seen import SeenUrls

__all__ = [
    "SITEMAP_KINDS",
    "BodyDecoder",
    "BodyTooLarge",
    "DecompressionError",
    "EmptyBody",
    "EntitiesDeclared",
    "LastMod",
    "Limits",
    "NotASitemap",
    "SeenUrls",
    "SitemapError",
    "SitemapReader",
    "SitemapRef",
    "SitemapSyntaxError",
    "TooManyUrls",
    "UnknownFormat",
    "UrlEntry",
    "format_utc",
    "is_gzip",
    "parse_feed_date",
    "parse_lastmod",
    "sniff",
]
