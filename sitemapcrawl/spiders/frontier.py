"""Sitemap discovery, the frontier: which sitemaps are requested, when, and what a stop keeps.

Every robots.txt and sitemap request of the spider passes this gate. It refuses loops,
repeats, private addresses and what ``max_sitemaps`` leaves out; it holds requests back in
priority order (newest children first) so that at most ``SITEMAPCRAWL_CONCURRENT_SITEMAPS``
are downloaded or being read at once (each holds its body and a parser); it keeps the
workers' shared count in distributed mode; and on an interrupted crawl it hands the
sitemaps not read yet to ``JOBDIR``'s spider state or back to the shared Redis queue.
"""

from __future__ import annotations

import heapq
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.request import request_from_dict
from w3lib.url import canonicalize_url

from sitemapcrawl import meta
from sitemapcrawl.distributed import SharedProgress, requeue
from sitemapcrawl.sitemaps.scope import private_address

# Requests pickled before SitemapTask had a module of its own (JOBDIR, the Redis queue,
# the testmaster fixtures) name it here.
from sitemapcrawl.spiders.task import SitemapTask

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from sitemapcrawl.sitemaps.scope import ScopePolicy
    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog

logger = logging.getLogger("sitemapcrawl.spiders.sitemap")

__all__ = ["SitemapFrontier", "SitemapTask"]


class SitemapFrontier:
    """The gate between the spider and Scrapy's scheduler for robots.txt and sitemaps.

    Settings: ``SITEMAPCRAWL_CONCURRENT_SITEMAPS`` (ignored with workers sharing a Redis
    queue: the queue is the gate there), ``SITEMAPCRAWL_REDIS_WAIT``.
    """

    def __init__(  # noqa: PLR0917 - the spider builds its parts in one place
        self,
        crawler: Crawler,
        spider: Spider,
        args: CrawlArguments,
        log: DiscoveryLog,
        scope_policy: Callable[[str], ScopePolicy],
        build: Callable[[SitemapTask, int], Request],
    ) -> None:
        settings = crawler.settings
        self._crawler = crawler
        self._args = args
        self._log = log
        self._scope_policy = scope_policy
        #: canonical URLs of every sitemap requested (or read from the state file)
        self.visited: set[str] = set()
        self.scheduled = 0  # sitemaps counted against max_sitemaps
        #: canonical URLs of the sitemaps the last run left unread, requested first
        self.carried: set[str] = set()
        self._in_flight = 0
        self._seq = 0
        #: sitemaps held back for a place: (-priority, order, task, priority); their
        #: requests are built when they leave, so an index of 50,000 children costs
        #: 50,000 small tasks here, not 50,000 requests
        self._waiting: list[tuple[int, int, SitemapTask, int]] = []
        self._build = build
        self._started = time.monotonic()
        self._time_budget = settings.getfloat("SITEMAPCRAWL_MAX_DISCOVERY_SECONDS")
        self._downloading: dict[str, Request] = {}
        self.distributed = bool(settings.get("SITEMAPCRAWL_REDIS_URL"))
        self._concurrent = (
            sys.maxsize
            if self.distributed
            else max(1, settings.getint("SITEMAPCRAWL_CONCURRENT_SITEMAPS"))
        )
        self._closing = False
        self._shared: SharedProgress | None = None
        if self.distributed:
            wait = settings.getfloat("SITEMAPCRAWL_REDIS_WAIT")
            self._shared = SharedProgress(crawler, spider, wait)
            crawler.signals.connect(self._dropped, signal=signals.request_dropped)
        crawler.signals.connect(self._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._reached_downloader, signal=signals.request_reached_downloader)

    @property
    def pending(self) -> bool:
        """Sitemaps are still held back here, or (distributed mode) another worker still
        reads one: discovery is not over even if Scrapy is idle."""
        if self._waiting:
            return True
        return self._shared is not None and not self._closing and self._shared.should_wait()

    def admitted(self, url: str) -> bool:
        """Whether a request for ``url`` was taken (sent, held back, or read already)."""
        return canonicalize_url(url) in self.visited

    def stop(self) -> None:
        """The crawl is closing (``max_urls``): the idle handler releases nothing more."""
        self._closing = True

    # -- the gate ------------------------------------------------------------------------

    def accepts(self, task: SitemapTask) -> bool:
        """Whether ``task`` may be requested: not an ancestor (a loop), not requested
        already, not on a private address, an index's child within the scope policy,
        within the discovery time and ``max_sitemaps`` (a guessed location counts for
        neither). A refusal is counted; all but a repeat are logged once."""
        key = canonicalize_url(task.url)
        log, site = self._log, task.site
        if key in task.chain:
            log.inc(site, "sitemaps/loop_count")
            log.log_once(
                "loop", task.url, "sitemap index loop cut (the file lists an ancestor)", site
            )
            return False
        if key in self.visited:
            if key not in self.carried:  # (one carried from the last run is listed again)
                log.inc(site, "sitemaps/duplicate_count")
            return False
        if private_address(task.url, self._args.origin or site):
            log.inc(site, "sitemaps/private_address_count")
            message = "sitemap on a private or loopback address; not requested"
            log.log_once("private", task.url, message, site)
            return False
        if task.parent is not None and self._scope_policy(site).sitemap_reason(task.url):
            log.inc(site, "sitemaps/out_of_scope_count")
            message = (
                f"lists {task.url}, on another host the site did not vouch for in "
                "robots.txt; not read (-a scope=off reads it)"
            )
            log.log_once("child_other_host", task.parent, message, site)
            return False
        budget = self._time_budget
        if not task.probe and budget and time.monotonic() - self._started > budget:
            log.inc(site, "limits/time_budget_count")
            message = f"discovery has run {budget:g} s (SITEMAPCRAWL_MAX_DISCOVERY_SECONDS); "
            log.log_once("time_budget", "", message + "later sitemaps skipped")
            log.left_unread(task)
            return False
        limit = self._args.max_sitemaps
        if not task.probe and limit and self.scheduled >= limit:
            log.inc(site, "limits/max_sitemaps_count")
            message = f"max_sitemaps={limit} reached; later sitemaps skipped"
            log.log_once("max_sitemaps", "", message)
            log.left_unread(task)
            return False
        self.visited.add(key)
        if not task.probe:
            self.scheduled += 1
        return True

    def redirect_refusal(
        self, task: SitemapTask, target: str, hops: Sequence[str] = ()
    ) -> str | None:
        """Why a redirect of ``task`` to ``target`` (through ``hops``, the URLs redirected
        from) is not followed: ``redirect_loop`` (a URL of its own chain again), ``loop``
        (an ancestor index), ``other_host`` (out of the scope policy), ``duplicate`` (a
        sitemap requested already); None: it is new, and taken."""
        key = canonicalize_url(target)
        if key in {canonicalize_url(hop) for hop in hops}:
            return "redirect_loop"
        if key == canonicalize_url(task.url):
            return None
        if key in task.chain:
            return "loop"
        if self._scope_policy(task.site).sitemap_reason(target) is not None:
            return "other_host"
        if key in self.visited:
            return "duplicate"
        self.visited.add(key)
        return None

    def schedule(self, task: SitemapTask, priority: int) -> Request | None:
        """The request for ``task`` to send now, or None when it waits here for a place
        (in priority order: every sitemap in flight holds its body and a parser until its
        last entry is out)."""
        if self._in_flight >= self._concurrent:
            self._seq += 1
            heapq.heappush(self._waiting, (-priority, self._seq, task, priority))
            return None
        self._in_flight += 1
        return self._request(task, priority)

    def _request(self, task: SitemapTask, priority: int) -> Request:
        return self.count(self._build(task, priority))

    def _pop(self) -> Request:
        _, _, task, priority = heapq.heappop(self._waiting)
        return self._request(task, priority)

    def release(self, task: SitemapTask) -> Iterator[Request]:
        """One sitemap finished: send the next waiting ones, up to the concurrency limit.

        Called after the sitemap's children were yielded, so the shared count (distributed
        mode) never reaches zero between a parent and its children."""
        self.done()
        self._in_flight -= 1
        self._downloading.pop(task.url, None)
        while self._waiting and self._in_flight < self._concurrent:
            self._in_flight += 1
            yield self._pop()

    def resumed(self, request: Request) -> Request:
        """A request kept by an interrupted run, sent again on its own."""
        self._in_flight += 1
        return request

    # -- the workers' shared count (distributed mode) ------------------------------------

    def count(self, request: Request) -> Request:
        """Count a request before it exists for the other workers, so the shared count
        never drops to zero while a sitemap that lists more is still being read."""
        if self._shared is not None:
            self._shared.scheduled()
        return request

    def done(self) -> None:
        """A counted request was read (or failed)."""
        if self._shared is not None:
            self._shared.done()

    def _dropped(self, request: Request, spider: Any = None) -> None:
        """The shared dupefilter refused one (another worker had it): uncount it."""
        if self._shared is not None and request.meta.get(meta.COUNTED):
            self._shared.done()

    # -- signals -------------------------------------------------------------------------

    def _on_idle(self) -> None:
        """Never close while sitemaps wait here (a callback that died released none), or,
        with shared workers, while another worker still reads one."""
        if self._closing:
            return
        if self._shared is not None and self._shared.should_wait():
            raise DontCloseSpider
        if not self._waiting:
            return
        engine = self._crawler.engine
        assert engine is not None
        while self._waiting:
            engine.crawl(self._pop())
        raise DontCloseSpider

    def _reached_downloader(self, request: Request, spider: Any = None) -> None:
        """Remember sitemap requests that left the scheduler: a stop loses those."""
        if request.meta.get(meta.SITEMAP):
            self._downloading[request.cb_kwargs["task"].url] = request

    # -- pause and resume ----------------------------------------------------------------

    def finished(self) -> None:
        """The crawl ended for good: the last worker deletes the shared keys."""
        if self._shared is not None:
            self._shared.clean_up()

    def unread(self) -> list[Request]:
        """The sitemaps not read yet that Scrapy's scheduler does not keep: those waiting
        here, in priority order, and those already downloading."""
        held = [self._request(task, priority) for _, _, task, priority in sorted(self._waiting)]
        return held + list(self._downloading.values())

    def hand_back(self, spider: Spider, unread: list[Request]) -> None:
        """Distributed mode: put the sitemaps this worker took back on the shared queue."""
        if self.distributed and unread:
            requeue(self._crawler, spider, unread)

    def saved(self, spider: Spider, unread: list[Request]) -> dict[str, Any]:
        """What a paused crawl keeps of the frontier (``JOBDIR``'s spider state)."""
        return {
            "visited": self.visited,
            "sitemaps_scheduled": self.scheduled,
            "unread": [r.to_dict(spider=spider) for r in unread],
        }

    def restore(self, spider: Spider, saved: dict[str, Any]) -> list[Request]:
        """Take back what :meth:`saved` kept; the unread sitemaps, to request again."""
        self.visited = saved["visited"]
        self.scheduled = saved["sitemaps_scheduled"]
        return [request_from_dict(d, spider=spider) for d in saved["unread"]]
