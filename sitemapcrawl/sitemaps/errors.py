"""Sitemap parsing: the faults a sitemap or robots.txt body can have.

The core never raises these out of a parse: a reader records them in ``faults`` and keeps
every entry it read before the fault. They are exceptions so that callers that want to
stop on the first fault can ``raise reader.faults[0]``.
"""

from __future__ import annotations

__all__ = [
    "BodyTooLarge",
    "DecompressionError",
    "EmptyBody",
    "EntitiesDeclared",
    "NotASitemap",
    "SitemapError",
    "SitemapSyntaxError",
    "TooManyUrls",
    "UnknownFormat",
]


class SitemapError(Exception):
    """Base class. ``code`` is the stable, short name used in stats and reports."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BodyTooLarge(SitemapError):
    """The (decompressed) body went past the size cap; what came before it was parsed."""

    code = "too_large"


class DecompressionError(SitemapError):
    """A gzip or zlib stream is corrupt or truncated; what decompressed before it was parsed."""

    code = "decompression_error"


class SitemapSyntaxError(SitemapError):
    """The XML is malformed; entries before the fault (and after it, where lxml recovered)
    are kept."""

    code = "xml_syntax_error"


class EntitiesDeclared(SitemapError):
    """The document declares entities or a DTD; they were neither expanded nor fetched."""

    code = "xml_entities"


class NotASitemap(SitemapError):
    """The body is an HTML page (a soft 404, a login wall), not a sitemap."""

    code = "html"


class EmptyBody(SitemapError):
    """The body is empty or only whitespace."""

    code = "empty"


class UnknownFormat(SitemapError):
    """Neither XML sitemap, feed, nor text sitemap."""

    code = "unknown_format"


class TooManyUrls(SitemapError):
    """More than the protocol's 50,000 URLs in one file (a protocol violation)."""

    code = "too_many_urls"
