"""Write the HTML site report when a crawl ends (``SITEMAPCRAWL_HTML_REPORT_PATH``)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem, SiteReport

from .collect import SiteTally
from .feed import runs_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

__all__ = ["HtmlReportExtension"]


class HtmlReportExtension:
    """Count every URL item as it is scraped, and render the HTML report at the end.

    Settings: ``SITEMAPCRAWL_HTML_REPORT_PATH`` (where to write it; unset, the extension is
    off). Memory stays bounded: items are counted into per-segment histograms
    (:class:`~sitemapcrawl.htmlreport.collect.SiteTally`), never kept. The report is
    rendered from the ``SiteReport`` item the crawl ended with (one per site when it spanned
    several); a crawl that ended without one (stopped early) gets no HTML report, and a
    warning says so.
    """

    def __init__(self, crawler: Crawler) -> None:
        path = crawler.settings.get("SITEMAPCRAWL_HTML_REPORT_PATH")
        if not path:
            raise NotConfigured  # no message: Scrapy would log a warning for an option off
        self.path = Path(path)
        self.context = crawl_context(crawler)
        self.tally = SiteTally()
        self.reports: list[dict[str, Any]] = []
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def item_scraped(self, item: Any) -> None:
        if type(item) is SitemapUrlBatch:
            for entry in item.items:
                self._url_item(entry)
        elif type(item) is SitemapUrlItem:
            self._url_item(item)
        elif type(item) is SiteReport:
            self.reports.append(asdict(item))  # one per site of the crawl

    def _url_item(self, item: SitemapUrlItem) -> None:
        self.tally.add(
            segment=item.segment,
            lastmod=item.lastmod,
            lastmod_raw=item.lastmod_raw,
            lastmod_flags=item.lastmod_flags,
            sitemap=item.sitemap,
            found_via=item.found_via,
            depth=item.depth,
            refetch=item.refetch,
            refetch_reason=item.refetch_reason,
        )

    def spider_closed(self, reason: str) -> None:
        if not self.reports and self.context.reported_elsewhere:
            return  # distributed mode: another worker reports
        if not self.reports:
            logger.warning(
                "No site report at the end of the crawl (%(reason)s): the HTML report was "
                "not written to %(path)s",
                {"reason": reason, "path": self.path},
            )
            return
        # matplotlib is imported here, when a report is drawn, not when Scrapy starts.
        from .render import render_html  # noqa: PLC0415

        document = render_html(runs_of(self.reports, self.tally))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(document, encoding="utf-8")
        logger.info("HTML site report written to %(path)s", {"path": self.path})
