"""Progress while a crawl runs, and one summary line when it ends."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider
    from scrapy.statscollectors import StatsCollector
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)

__all__ = ["SitemapProgressExtension"]

_PREFIX = "sitemapcrawl/"


class SitemapProgressExtension:
    """Log sitemaps done/queued, URLs found and the rate every interval, and a summary at close.

    Settings: ``SITEMAPCRAWL_PROGRESS_ENABLED``, ``SITEMAPCRAWL_PROGRESS_INTERVAL`` (seconds;
    0 keeps only the closing summary). Reads the ``sitemapcrawl/sitemaps/*`` and
    ``sitemapcrawl/urls/*`` stats; writes ``sitemapcrawl/urls/per_minute`` at close.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SITEMAPCRAWL_PROGRESS_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_PROGRESS_ENABLED is off")
        self.interval = crawler.settings.getfloat("SITEMAPCRAWL_PROGRESS_INTERVAL")
        if self.interval < 0:
            raise NotConfigured(f"SITEMAPCRAWL_PROGRESS_INTERVAL={self.interval!r} is negative")
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self.started = time.monotonic()
        self.task: AsyncioLoopingCall | LoopingCall | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _get(self, key: str) -> int:
        return int(self.stats.get_value(_PREFIX + key, 0) or 0)

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        if self.interval:
            self.task = create_looping_call(self.log_progress)
            self.task.start(self.interval, now=False)

    def log_progress(self) -> None:
        """One progress line: sitemaps done and queued, URLs found, URLs per minute."""
        requested = self._get("sitemaps/requested_count")
        done = self._get("sitemaps/done_count")
        urls = self._get("urls/found_count")
        minutes = max(time.monotonic() - self.started, 1e-9) / 60
        logger.info(
            "Progress: %(done)d sitemaps done, %(queued)d queued, %(failed)d failed; "
            "%(urls)d URLs found (%(rate)d/min)",
            {
                "done": done,
                "queued": max(requested - done, 0),
                "failed": self._get("sitemaps/failed_count"),
                "urls": urls,
                "rate": urls / minutes,
            },
        )

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        minutes = max(time.monotonic() - self.started, 1e-9) / 60
        urls = self._get("urls/found_count")
        self.stats.set_value(_PREFIX + "urls/per_minute", round(urls / minutes))
        logger.info(
            "Sitemap crawl finished (%(reason)s): %(read)d sitemaps read, %(failed)d failed, "
            "%(urls)d URLs found",
            {
                "reason": reason,
                "read": self._get("sitemaps/parsed_count"),
                "failed": self._get("sitemaps/failed_count"),
                "urls": urls,
            },
        )
