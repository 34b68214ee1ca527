"""Sitemap discovery, the requests: one requester accepts, counts, schedules and builds them.

Every robots.txt and sitemap request of the spider is made here, by whichever part finds
the sitemap (the spider's start, robots.txt and the guessed locations, an index's
children): the frontier (``spiders/frontier.py``) decides whether and when a sitemap is
requested, the requester builds the request when it leaves, with the spider's callbacks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy import Request
from w3lib.url import canonicalize_url

from sitemapcrawl import meta
from sitemapcrawl.spiders.frontier import SitemapFrontier

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.sitemaps.scope import ScopePolicy
    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog
    from sitemapcrawl.spiders.task import SitemapTask

__all__ = ["SitemapCallbacks", "SitemapRequester"]

_ERROR_STATUSES = list(range(400, 600))
#: Sitemap requests also take 304 Not Modified (conditional requests from the state file).
_SITEMAP_STATUSES = [304, *_ERROR_STATUSES]


class SitemapCallbacks(NamedTuple):
    """The spider's callbacks of its robots.txt and sitemap requests (``JOBDIR`` and the
    Redis queue store requests by their names)."""

    robots: Callable[[Response, str], Iterable[Any]]
    robots_failed: Callable[[Failure], Iterable[Any]]
    sitemap: Callable[[Response, SitemapTask], Iterable[Any]]
    sitemap_failed: Callable[[Failure], Iterable[Any]]


class SitemapRequester:
    """The spider's robots.txt and sitemap requests: a sitemap is accepted by the frontier
    (the gate it builds and holds, :attr:`frontier`), counted, scheduled, and its request
    built when the frontier lets it leave (conditional with the state file and
    ``conditional``: ``SITEMAPCRAWL_CONDITIONAL_SITEMAPS``). Settings: the frontier's.
    """

    def __init__(  # noqa: PLR0917 - the spider builds its parts in one place
        self,
        crawler: Crawler,
        spider: Spider,
        args: CrawlArguments,
        log: DiscoveryLog,
        scope_policy: Callable[[str], ScopePolicy],
        callbacks: SitemapCallbacks,
        conditional: bool,
    ) -> None:
        self._log = log
        self._scope_policy = scope_policy
        self._callbacks = callbacks
        self._proxy_meta = args.proxy_meta
        self._conditional = conditional
        self._state: CrawlState | None = None
        self.frontier = SitemapFrontier(crawler, spider, args, log, scope_policy, self.build)

    def use_state(self, state: CrawlState) -> None:
        """Sitemap requests are conditional on the validators the state file keeps."""
        self._state = state

    def sitemap(self, task: SitemapTask, priority: int = 0) -> Request | None:
        """The request for a sitemap, or None when the frontier refuses it or holds it."""
        if not self.frontier.accepts(task):
            return None
        if not task.depth:  # the site (robots.txt) or the user named it: its host is vouched for
            self._scope_policy(task.site).vouch(task.url)
        self._log.inc(task.site, "sitemaps/requested_count")
        return self.frontier.schedule(task, priority)

    def carried(self, tasks: Sequence[SitemapTask]) -> Iterator[Request]:
        """The sitemaps the site's last run left unread (a limit stopped it), requested
        before any other, in the order they were left (an index's newest children first)."""
        top = 100 + len(tasks)  # above robots.txt's
        for n, task in enumerate(tasks):
            self.frontier.carried.add(canonicalize_url(task.url))
            if request := self.sitemap(task, top - n):
                yield request

    def admitted(self, url: str) -> bool:
        """Whether a sitemap request for ``url`` was taken (sent, held back, or read already)."""
        return self.frontier.admitted(url)

    def robots(self, url: str, site: str) -> Request:
        """The request for a site's robots.txt (counted, never refused)."""
        self._log.inc(site, "robots/requested_count")
        request = Request(
            url,
            callback=self._callbacks.robots,
            errback=self._callbacks.robots_failed,
            cb_kwargs={"site": site},
            # meta.ROBOTS: the robots.txt middleware parses this response for the pages;
            # no Scrapy cap: the download guard stops it at its cap, keeping what came
            meta=self._meta(0, **{meta.ROBOTS: True}),
            dont_filter=not self.frontier.distributed,
            priority=100,
        )
        return self.frontier.count(request)

    def build(self, task: SitemapTask, priority: int) -> Request:
        """A sitemap's request, built when the frontier sends it."""
        headers = None
        if self._state is not None and self._conditional:
            headers = self._state.sitemaps.conditional_headers(task.url) or None
            if headers:
                self._log.inc(task.site, "state/conditional_count")
        request_meta = self._meta(
            # no Scrapy cap: the download guard stops the body at the cap, keeping what
            # came (sitemapcrawl.extensions.sitemapdownload)
            0,
            # a connection lost mid-body still delivers what arrived: parse it
            download_fail_on_dataloss=False,
            **{meta.SITEMAP: True},
        )
        request_meta["handle_httpstatus_list"] = _SITEMAP_STATUSES
        return Request(
            task.url,
            callback=self._callbacks.sitemap,
            errback=self._callbacks.sitemap_failed,
            cb_kwargs={"task": task},
            headers=headers,
            meta=request_meta,
            # Alone, the frontier dedupes sitemaps; with workers sharing a Redis queue,
            # the shared dupefilter must see them so each is fetched once.
            dont_filter=not self.frontier.distributed,
            priority=priority,
        )

    def _meta(self, maxsize: int, **extra: Any) -> dict[str, Any]:
        """Meta of robots.txt and sitemap requests: every status reaches the callback, they
        are exempt from robots.txt and offsite filtering, capped, counted, proxied."""
        return {
            "handle_httpstatus_list": _ERROR_STATUSES,
            "dont_obey_robotstxt": True,
            "allow_offsite": True,
            "download_maxsize": maxsize,
            "download_warnsize": 0,
            # a file that still fails after retries is a fault we log and count (WARNING)
            "give_up_log_level": "WARNING",
            meta.COUNTED: True,
            **self._proxy_meta,
            **extra,
        }
