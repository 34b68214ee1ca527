"""Spider middleware, verification: records every listed URL's lastmod for its segment's L0 test."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["SitemapLastmodMiddleware"]

_P = "sitemapcrawl/lastmod/"


class SitemapLastmodMiddleware(BaseSpiderMiddleware):
    """Record the lastmod of every URL item, per segment, with its sitemap's own clock.

    Feeds each segment's streaming L0 accumulator (dispersion, recency, alignment…) and
    notes each sitemap response's ``Date`` minus ``Age`` (the server's "now") and
    ``Last-Modified``, and the parent index's ``<lastmod>``. Items pass unchanged; a
    ``SitemapUrlBatch`` is read URL by URL. The lastmod is taken as the spider parsed it
    (the item's ``lastmod``, precision and flags), not parsed again.

    Settings: ``SITEMAPCRAWL_VERIFY_ENABLED``. Stats: ``sitemapcrawl/lastmod/present_count``,
    ``missing_count``, ``invalid_count``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_VERIFY_ENABLED is off")
        super().__init__(crawler)
        self.site = crawl_context(crawler)

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if type(item) is SitemapUrlBatch:
            self._record(item.items, response)
        elif type(item) is SitemapUrlItem:
            self._record((item,), response)
        return item

    def _record(self, items: Iterable[SitemapUrlItem], response: Response | None) -> None:
        present = missing = invalid = 0
        name: str | None = None
        record = None
        site = self.site
        for item in items:
            if item.found_via == "links":
                continue  # URLs found only by links have no sitemap entry to judge
            if item.segment != name or record is None:
                if record is not None and site.sites:  # several sites: counted per site
                    self._count(record.site, present, missing, invalid)
                    present = missing = invalid = 0
                name = item.segment
                record = site.segment(name)
                if response is not None:
                    record.observe_sitemap(response, item.sitemap_lastmod)
            record.urls += 1
            if item.news:
                record.news = True
            if item.lastmod_raw is None:
                record.accumulator.add(None)
                missing += 1
            else:
                iso = item.lastmod
                record.accumulator.add_exported(iso, item.lastmod_precision, item.lastmod_flags)
                if iso is None:
                    invalid += 1
                else:
                    present += 1
        self._count(record.site if record is not None else "", present, missing, invalid)

    def _count(self, site: str, present: int, missing: int, invalid: int) -> None:
        stats = self.crawler.stats
        assert stats is not None
        for key, count in (("present", present), ("missing", missing), ("invalid", invalid)):
            if count:
                self.site.inc(stats, site, f"{_P}{key}_count", count)
