"""Several workers on one crawl, through scrapy-redis's shared scheduler and dupefilter.

``SITEMAPCRAWL_REDIS_URL`` (a setting, or the environment variable of the same name) turns
the mode on: the add-on then installs scrapy-redis's ``Scheduler`` and ``RFPDupeFilter`` with
``SCHEDULER_PERSIST`` (a worker that finishes first must not flush the queue the others still
read). On top of scrapy-redis, sitemapcrawl keeps one shared counter of robots.txt and
sitemap requests scheduled and not yet read, so that

- an idle worker waits while another still reads a sitemap that may list more children
  (without it, a worker that starts second would close at once on an empty queue);
- a worker that is stopped (SIGINT/SIGTERM, or a CLOSESPIDER_* limit) puts the sitemaps it
  had taken but not read back on the shared queue, so nothing is lost;
- the last worker to finish deletes the crawl's keys, so the next run starts clean.

A request that must be handled by the worker that made it (meta ``sitemapcrawl_local``: the
site report's ``data:`` request, whose callback emits this worker's report) stays in that
worker's own queue (:class:`Scheduler`); on the shared queue another worker could take it.

A worker killed with SIGKILL cannot give its in-flight sitemaps back: the others wait for
them ``SITEMAPCRAWL_REDIS_WAIT`` seconds, then finish without them (logged).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import load_object
from scrapy_redis import connection, defaults
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from sitemapcrawl import meta

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)

__all__ = ["Scheduler", "SharedProgress", "redis_settings", "requeue"]


def redis_settings(url: str) -> dict[str, Any]:
    """The scrapy-redis settings the add-on sets (at ``addon`` priority) for ``url``."""
    return {
        "SCHEDULER": "sitemapcrawl.distributed.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "REDIS_URL": url,
        "SCHEDULER_PERSIST": True,
    }


class Scheduler(RedisScheduler):  # type: ignore[misc]  # scrapy-redis has no type hints
    """scrapy-redis's shared scheduler, and a queue of this worker's own for the requests
    marked ``sitemapcrawl_local`` (``meta.LOCAL``), served first. Every other request goes
    through Redis as before."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.local: deque[Request] = deque()

    def __len__(self) -> int:
        return len(self.local) + int(super().__len__())

    # enqueue_request and next_request are scrapy-redis's own, with the local queue added
    # and the stats counted without the ``spider`` argument Scrapy 2.19 deprecates.

    def enqueue_request(self, request: Request) -> bool:
        if request.meta.get(meta.LOCAL):
            self.local.append(request)
            self._count("scheduler/enqueued/local")
            return True
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            return False
        self._count("scheduler/enqueued/redis")
        self.queue.push(request)
        return True

    def next_request(self) -> Request | None:
        if self.local:
            self._count("scheduler/dequeued/local")
            return self.local.popleft()
        request: Request | None = self.queue.pop(self.idle_before_close)
        if request is not None:
            self._count("scheduler/dequeued/redis")
        return request

    def _count(self, key: str) -> None:
        if self.stats:
            self.stats.inc_value(key)


def _server(crawler: Crawler) -> Any:
    return connection.from_settings(crawler.settings)


def _queue(crawler: Crawler, spider: Spider, server: Any) -> Any:
    settings = crawler.settings
    return load_object(settings.get("SCHEDULER_QUEUE_CLASS", defaults.SCHEDULER_QUEUE_CLASS))(
        server=server,
        spider=spider,
        key=settings.get("SCHEDULER_QUEUE_KEY", defaults.SCHEDULER_QUEUE_KEY)
        % {"spider": spider.name},
        serializer=load_object(settings.get("SCHEDULER_SERIALIZER", "scrapy_redis.picklecompat")),
    )


def requeue(crawler: Crawler, spider: Spider, requests: list[Request]) -> None:
    """Put requests this worker took but will not read back on the shared queue."""
    queue = _queue(crawler, spider, _server(crawler))
    for request in requests:
        queue.push(request)


class SharedProgress:
    """The number of robots.txt and sitemap requests scheduled by any worker and not read yet."""

    def __init__(self, crawler: Crawler, spider: Spider, wait: float) -> None:
        self.crawler = crawler
        self.spider = spider
        self.server = _server(crawler)
        self.key = f"{spider.name}:sitemapcrawl:pending"
        settings = crawler.settings
        self.keys = [
            self.key,
            settings.get("SCHEDULER_QUEUE_KEY", defaults.SCHEDULER_QUEUE_KEY)
            % {"spider": spider.name},
            settings.get("SCHEDULER_DUPEFILTER_KEY", defaults.SCHEDULER_DUPEFILTER_KEY)
            % {"spider": spider.name},
        ]
        self.wait = wait
        self._last_value: int | None = None
        self._last_change = time.monotonic()

    def scheduled(self) -> None:
        self.server.incr(self.key)

    def done(self) -> None:
        self.server.decr(self.key)

    def pending(self) -> int:
        return int(self.server.get(self.key) or 0)

    def should_wait(self) -> bool:
        """True while other workers still read sitemaps (and they have moved recently)."""
        value = self.pending()
        now = time.monotonic()
        if value != self._last_value:
            self._last_value, self._last_change = value, now
        if value <= 0:
            return False
        if now - self._last_change > self.wait:
            logger.warning(
                "%(n)d sitemaps are still marked pending by other workers, with no progress "
                "for %(wait)ds (a worker killed with SIGKILL?): finishing without them",
                {"n": value, "wait": self.wait},
            )
            return False
        return True

    def clean_up(self) -> None:
        """The last worker out deletes the crawl's queue, dupefilter and counter."""
        if self.pending() <= 0:
            self.server.delete(*self.keys)
