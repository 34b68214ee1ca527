"""Extension, observability: progress lines while a crawl runs, one summary line at its end."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from sitemapcrawl.crawlcontext import crawl_context

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
_clock = time.monotonic  # a name of ours, so a test can turn the clock without touching others'


class SitemapProgressExtension:
    """Log progress every interval, and a summary at close.

    A progress line has the sitemaps done, queued and failed, the URLs found and their rate,
    the pages sampled (once sampling has begun) and an ETA where the total is known: the
    sampled pages left, or the URLs left before ``max_urls``. Settings:
    ``SITEMAPCRAWL_PROGRESS_ENABLED``, ``SITEMAPCRAWL_PROGRESS_INTERVAL`` (seconds; 0 keeps
    only the closing summary). Reads the ``sitemapcrawl/sitemaps/*``, ``sitemapcrawl/urls/*``
    and ``sitemapcrawl/sample/*`` stats; writes ``sitemapcrawl/urls/per_minute`` (every
    interval and at close) and ``sitemapcrawl/progress/eta_seconds`` (every interval where an
    ETA is known; 0 at close).
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SITEMAPCRAWL_PROGRESS_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_PROGRESS_ENABLED is off")
        self.interval = crawler.settings.getfloat("SITEMAPCRAWL_PROGRESS_INTERVAL")
        if self.interval < 0:
            raise NotConfigured(f"SITEMAPCRAWL_PROGRESS_INTERVAL={self.interval!r} is negative")
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self.crawler = crawler
        self.started = _clock()
        self.task: AsyncioLoopingCall | LoopingCall | None = None
        #: When sampling was first seen, and how many pages were done then.
        self.sampling_since: tuple[float, int] | None = None
        self.eta_set = False
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _get(self, key: str) -> int:
        return int(self.stats.get_value(_PREFIX + key, 0) or 0)

    def spider_opened(self, spider: Spider) -> None:
        self.started = _clock()
        if self.interval:
            self.task = create_looping_call(self.log_progress)
            self.task.start(self.interval, now=False)

    def _sampled(self) -> int:
        """Sampled pages answered or failed (every one gets exactly one outcome)."""
        prefix = _PREFIX + "sample/outcome_count/"
        return sum(
            int(value or 0)
            for key, value in self.stats.get_stats().items()
            if key.startswith(prefix)
        )

    def log_progress(self) -> None:
        """One progress line (see the class docstring), and the rate and ETA as stats."""
        now = _clock()
        requested = self._get("sitemaps/requested_count")
        done = self._get("sitemaps/done_count")
        urls = self._get("urls/found_count")
        minutes = max(now - self.started, 1e-9) / 60
        rate = urls / minutes
        self.stats.set_value(_PREFIX + "urls/per_minute", round(rate))
        line = (
            "Progress: %(done)d sitemaps done, %(queued)d queued, %(failed)d failed; "
            "%(urls)d URLs found (%(rate)d/min)"
        )
        values: dict[str, Any] = {
            "done": done,
            "queued": max(requested - done, 0),
            "failed": self._get("sitemaps/failed_count"),
            "urls": urls,
            "rate": rate,
        }
        eta: float | None = None
        to_sample = self._get("sample/requested_count")
        args = crawl_context(self.crawler).arguments
        max_urls = args.max_urls if args is not None else 0
        if to_sample:
            sampled = self._sampled()
            if self.sampling_since is None:
                self.sampling_since = (now, sampled)
            since, sampled_then = self.sampling_since
            line += "; %(sampled)d of %(to_sample)d pages sampled"
            values.update(sampled=sampled, to_sample=to_sample)
            pace = (sampled - sampled_then) / (now - since) if now > since else 0.0
            if sampled >= to_sample:
                eta = 0.0
            elif pace > 0:
                eta = (to_sample - sampled) / pace
        elif max_urls and urls and urls < max_urls:
            eta = (max_urls - urls) / (rate / 60)
            line += " of max_urls %(max_urls)d"
            values["max_urls"] = max_urls
        if eta is not None:
            line += ", ETA %(eta)s"
            values["eta"] = _duration(eta)
            self.stats.set_value(_PREFIX + "progress/eta_seconds", round(eta))
            self.eta_set = True
        logger.info(line, values)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        minutes = max(_clock() - self.started, 1e-9) / 60
        urls = self._get("urls/found_count")
        self.stats.set_value(_PREFIX + "urls/per_minute", round(urls / minutes))
        if self.eta_set:
            self.stats.set_value(_PREFIX + "progress/eta_seconds", 0)
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


def _duration(seconds: float) -> str:
    """A short duration for a log line.

    >>> _duration(42.4), _duration(130), _duration(3720), _duration(90061)
    ('42s', '2m10s', '1h02m', '25h01m')
    """
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"
