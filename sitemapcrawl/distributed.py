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
import os
import socket
import time
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import CloseSpider
from scrapy.utils.misc import load_object
from scrapy_redis import connection, defaults
from scrapy_redis.scheduler import Scheduler as RedisScheduler
from twisted.internet.task import LoopingCall

from sitemapcrawl import meta
from sitemapcrawl.shares import ShareRefused, pack, take

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.spiders import Spider
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlcontext import CrawlContext
    from sitemapcrawl.linkfollow import LinkFollowers

logger = logging.getLogger(__name__)

__all__ = ["ReportElection", "Scheduler", "SharedProgress", "redis_settings", "requeue"]


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
        self._gave_up = False

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
            if not self._gave_up:
                self._gave_up = True
                logger.warning(
                    "%(n)d sitemaps are still marked pending by other workers, with no "
                    "progress for %(wait)ds (a worker killed with SIGKILL?): finishing "
                    "without them",
                    {"n": value, "wait": self.wait},
                )
            return False
        return True

    def clean_up(self) -> None:
        """The last worker out deletes the crawl's queue, dupefilter and counter."""
        if self.pending() <= 0:
            self.server.delete(*self.keys)


#: How long the election's keys outlive a crawl whose reporter died (seconds).
_KEYS_TTL = 24 * 3600
#: The reporter's key expires this long after its last heartbeat (seconds).
_REPORTER_TTL = 60


class ReportElection:
    """One report for the whole crawl: the workers' discovery shares and their reporter.

    Every worker registers when it opens (``<spider>:sitemapcrawl:workers``). When the
    crawl's discovery is over (no worker has a sitemap pending), or when it is stopped, a
    worker publishes its share (``sitemapcrawl.shares``) under ``...:shares``, then tries
    to become the reporter (``SET ...:reporter NX``). The reporter waits until every
    registered worker has published (at most ``SITEMAPCRAWL_REDIS_WAIT`` seconds without a
    new share: a worker killed with SIGKILL publishes nothing), takes the shares in, and
    samples, follows links and reports alone; the others finish without a report. The
    reporter keeps its key alive while it runs (a heartbeat; a reporter that died lets it
    expire, and the next crawl starts clean) and deletes the keys when it finishes.
    """

    def __init__(self, crawler: Crawler, spider: Spider, wait: float) -> None:
        self.server = _server(crawler)
        prefix = f"{spider.name}:sitemapcrawl:"
        self.workers_key = prefix + "workers"
        self.shares_key = prefix + "shares"
        self.reporter_key = prefix + "reporter"
        self.me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.wait = wait
        self.published = False
        #: None until this worker took part in the election
        self.reporter: bool | None = None
        self._seen = -1
        self._last_change = time.monotonic()
        self._heartbeat: Any = None

    def register(self) -> None:
        """Join the crawl. Keys left by a crawl whose reporter died are cleared first."""
        server = self.server
        published = int(server.hlen(self.shares_key))
        if (
            published
            and not server.exists(self.reporter_key)
            and int(server.scard(self.workers_key)) <= published
        ):
            # every registered worker published and no reporter is alive: left over
            logger.warning("Clearing the report election of a crawl whose reporter died")
            server.delete(self.workers_key, self.shares_key)
        server.sadd(self.workers_key, self.me)
        server.expire(self.workers_key, _KEYS_TTL)

    def publish_share(
        self, context: CrawlContext, links: LinkFollowers | None, stats: StatsCollector
    ) -> None:
        """Publish this worker's discovery (``sitemapcrawl.shares``), once."""
        if self.published:
            return
        self.server.hset(self.shares_key, self.me, pack(context, links, stats))
        self.server.expire(self.shares_key, _KEYS_TTL)
        self.published = True

    def turn(
        self, context: CrawlContext, links: LinkFollowers, stats: StatsCollector
    ) -> bool | None:
        """Discovery is over: publish this worker's share; True when this worker reports
        (every other worker's share taken into ``context`` and ``links``), False when
        another does, None while the reporter waits for the others' shares."""
        self.publish_share(context, links, stats)
        if not self.elect():
            context.reported_elsewhere = True
            return False
        if not self.all_published():
            return None
        for blob in self.shares():
            try:
                context.peer_stats.update(take(context, links, blob))
            except ShareRefused as exc:
                logger.error("Not reporting: %(error)s", {"error": exc})
                raise CloseSpider("bad_state") from None
        return True

    def elect(self) -> bool:
        """Whether this worker reports (decided once, after it published)."""
        if self.reporter is None:
            won = self.server.set(self.reporter_key, self.me, nx=True, ex=_REPORTER_TTL)
            self.reporter = bool(won)
            if self.reporter:
                self._heartbeat = LoopingCall(self._beat)
                self._heartbeat.start(_REPORTER_TTL / 4, now=False)
            logger.info(
                "%(who)s reports for the crawl",
                {"who": "This worker" if self.reporter else "Another worker"},
            )
        return self.reporter

    def _beat(self) -> None:
        self.server.set(self.reporter_key, self.me, xx=True, ex=_REPORTER_TTL)

    def all_published(self) -> bool:
        """Whether every registered worker published (or none did for ``wait`` seconds)."""
        workers = int(self.server.scard(self.workers_key))
        published = int(self.server.hlen(self.shares_key))
        if published >= workers:
            return True
        now = time.monotonic()
        if published != self._seen:
            self._seen, self._last_change = published, now
            return False
        if now - self._last_change > self.wait:
            logger.warning(
                "%(n)d of %(workers)d workers published no discovery for %(wait)ds (killed "
                "with SIGKILL?): the report is made without them",
                {"n": workers - published, "workers": workers, "wait": self.wait},
            )
            return True
        return False

    def shares(self) -> list[bytes]:
        """Every other worker's share."""
        found = self.server.hgetall(self.shares_key)
        return [blob for who, blob in found.items() if who.decode() != self.me]

    def finish(self) -> None:
        """The crawl is over for this worker: the reporter deletes the election's keys."""
        if self._heartbeat is not None and self._heartbeat.running:
            self._heartbeat.stop()
        if self.reporter:
            self.server.delete(self.workers_key, self.shares_key, self.reporter_key)
