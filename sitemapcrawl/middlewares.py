"""The spider middleware that records every URL's lastmod for the verification."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from sitemapcrawl.items import SitemapUrlItem
from sitemapcrawl.sitemaps.dates import parse_lastmod
from sitemapcrawl.verification import site_verification

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["SitemapLastmodMiddleware"]

_P = "sitemapcrawl/lastmod/"


class SitemapLastmodMiddleware(BaseSpiderMiddleware):
    """Record the lastmod of every URL item, per segment, with its sitemap's own clock.

    Feeds each segment's streaming L0 accumulator (dispersion, recency, alignment…) and
    notes each sitemap response's ``Date`` minus ``Age`` (the server's "now") and
    ``Last-Modified``, and the parent index's ``<lastmod>``. Items pass unchanged.

    Settings: ``SITEMAPCRAWL_VERIFY_ENABLED``. Stats: ``sitemapcrawl/lastmod/present_count``,
    ``missing_count``, ``invalid_count``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_VERIFY_ENABLED is off")
        super().__init__(crawler)
        self.site = site_verification(crawler)
        self.counts = {"present": 0, "missing": 0, "invalid": 0}

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if type(item) is not SitemapUrlItem or item.found_via == "links":
            return item  # URLs found only by links have no sitemap entry to judge
        record = self.site.segment(item.segment)
        record.urls += 1
        if item.news:
            record.news = True
        if response is not None:
            record.observe_sitemap(response, item.sitemap_lastmod)
        raw = item.lastmod_raw
        lastmod = parse_lastmod(raw) if raw is not None else None
        record.accumulator.add(lastmod)
        stats = self.crawler.stats
        assert stats is not None
        if lastmod is None:
            stats.inc_value(_P + "missing_count")
        elif lastmod.value is None:
            stats.inc_value(_P + "invalid_count")
        else:
            stats.inc_value(_P + "present_count")
        return item
