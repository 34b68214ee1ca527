"""The ``sitemap`` spider: ``start()`` and the callbacks, thin glue around the spider's parts.

It is a drop-in subclass of Scrapy's ``SitemapSpider``: ``sitemap_urls``, ``sitemap_rules``,
``sitemap_follow``, ``sitemap_alternate_links`` and ``sitemap_filter`` keep their meaning,
but parsing, discovery, limits and reporting are sitemapcrawl's. By default it requests
robots.txt and sitemap files only and yields one ``SitemapUrlItem`` per URL; a subclass
that sets ``sitemap_rules`` also gets its callbacks called for the matching pages.

Its parts: ``arguments`` (the validated ``-a`` values), ``robots`` (robots.txt and guessed
locations), ``requester`` (every robots.txt and sitemap request, built with the callbacks
below), ``frontier`` (which sitemaps are requested, when; pause and resume), ``reading``
(a sitemap's URLs as items), ``children`` (an index's children as requests), ``replay``
(sitemaps from the state file), ``discoverylog`` (faults, files, the report's discovery
side), ``task`` (what a sitemap request carries). The callbacks keep their names:
``JOBDIR`` and the Redis queue store requests by them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin, urlsplit

from scrapy import signals
from scrapy.exceptions import CloseSpider, DownloadTimeoutError
from scrapy.spiders import SitemapSpider

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.downloadermiddlewares.sitemapredirect import SitemapRedirectRefused
from sitemapcrawl.incremental.crawlstate import CrawlState, StateError, StateLocked
from sitemapcrawl.items import UrlChange
from sitemapcrawl.pipelines.report import site_reports
from sitemapcrawl.sitemaps.dates import format_utc
from sitemapcrawl.spiders.arguments import ARGUMENT_NAMES, parse_arguments
from sitemapcrawl.spiders.discoverylog import DiscoveryLog
from sitemapcrawl.spiders.reading import SitemapReading, paused_refusal
from sitemapcrawl.spiders.requester import SitemapCallbacks, SitemapRequester
from sitemapcrawl.spiders.robots import RobotsDiscovery
from sitemapcrawl.spiders.task import SitemapTask, task_from_dict

if TYPE_CHECKING:
    import re
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

    from sitemapcrawl.spiders.arguments import CrawlArguments

logger = logging.getLogger(__name__)

# SitemapTask is imported from here by requests a paused crawl pickled (JOBDIR).
__all__ = ["SitemapCrawlSpider", "SitemapTask"]

#: Reasons after which nothing is left to read: no state is kept for a next run.
_FINAL_REASONS = frozenset({"finished", "max_urls", "bad_argument", "bad_state"})


class SitemapCrawlSpider(SitemapSpider):
    """Discover every URL of a site from robots.txt and its sitemaps.

    Arguments (``-a``): ``origin`` (the site, e.g. ``https://www.example.com``);
    ``sitemap_urls`` (comma-separated; skips discovery); ``max_sitemaps``, ``max_urls``,
    ``max_depth`` (0 = no limit); ``scope`` (host, path, robots, off); ``guess`` (off,
    fallback, always); ``links`` (off, fallback, sample, full: see ``sitemapcrawl.linkfollow``);
    ``sample``, ``since``, ``state``, ``pages``, ``proxy``. Each overrides the
    ``SITEMAPCRAWL_*`` setting of the same name (``sitemapcrawl.spiders.arguments``).
    """

    name = "sitemap"
    #: Discovery only: no page requests unless a subclass sets rules.
    sitemap_rules: Sequence[tuple[re.Pattern[str] | str, str | Callable[..., Any]]] = ()
    _ARGUMENTS: ClassVar[tuple[str, ...]] = ARGUMENT_NAMES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._raw_args = {k: kwargs.pop(k) for k in self._ARGUMENTS if k in kwargs}
        if "sitemap_urls" in self._raw_args:
            given = self._raw_args["sitemap_urls"]
            kwargs["sitemap_urls"] = (
                [u for u in given.split(",") if u.strip()]
                if isinstance(given, str)
                else list(given)
            )
        super().__init__(*args, **kwargs)
        self.argument_error: str | None = None
        self._configured = False
        self.crawl_state: CrawlState | None = None

    @property
    def stats(self) -> StatsCollector:
        """The crawler's stats (they exist once the crawl starts)."""
        stats = self.crawler.stats
        assert stats is not None
        return stats

    # -- configuration -------------------------------------------------------------------

    def _configure(self, crawler: Crawler) -> None:
        """Read arguments and settings (add-on defaults exist only once the crawl starts),
        and build the spider's parts."""
        self._configured = True
        context = crawl_context(crawler)
        try:
            args = parse_arguments(self._raw_args, self.sitemap_urls or (), crawler.settings)
        except ValueError as exc:
            self.argument_error = context.argument_error = str(exc)
            return
        self.args: CrawlArguments = args
        context.arguments = args
        self.sitemap_urls = list(args.sitemap_urls)
        if args.multi_site:  # each site gets its own report
            context.set_sites(args.sites)
        settings = crawler.settings
        if args.links in ("fallback", "full") and not settings.getbool(
            "SITEMAPCRAWL_VERIFY_ENABLED"
        ):
            logger.warning(
                "links=%(mode)s needs SITEMAPCRAWL_VERIFY_ENABLED (its pipeline follows the "
                "links): no link will be followed",
                {"mode": args.links},
            )
        self.discovery = context.discovery = DiscoveryLog(
            context.site_shares, self.stats, args.first_site, args.multi_site
        )
        callbacks = SitemapCallbacks(
            self._parse_robots, self._robots_failed, self._read_sitemap, self._sitemap_failed
        )
        self._conditional = settings.getbool("SITEMAPCRAWL_CONDITIONAL_SITEMAPS")
        # the requester is held by its users (reading, robots), not by the spider: testmaster
        # records the spider's own attributes as its state (tests/testmaster/compat.py)
        requester = SitemapRequester(
            crawler, self, args, self.discovery, context.scope_policy, callbacks, self._conditional
        )
        self.frontier = context.frontier = requester.frontier
        self.robots = RobotsDiscovery(
            args,
            settings.getlist("SITEMAPCRAWL_GUESS_PATHS"),
            settings.getint("SITEMAPCRAWL_GUESS_AT_ONCE"),
            self.discovery,
            requester,
            settings.getbool("ROBOTSTXT_OBEY"),
        )
        overridden = type(self).sitemap_filter is not SitemapSpider.sitemap_filter
        self.reading = SitemapReading(
            context=context,
            stats=self.stats,
            settings=settings,
            args=args,
            log=self.discovery,
            requester=requester,
            page_callbacks=self._cbs,
            follow=self._follow,
            alternate_links=self.sitemap_alternate_links,
            entry_filter=self.sitemap_filter if overridden else None,
        )
        context.report_callback = self.site_report

    def _open_state(self) -> None:
        """Open the state file (verification on, one machine); a bad one stops the crawl."""
        args, settings = self.args, self.crawler.settings
        if args.state_file is None or not settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            return
        if self.frontier.distributed:
            logger.info(
                "State file not used: workers sharing a Redis queue each see part of the "
                "site (see README, 'State across runs')"
            )
            return
        state = CrawlState.open(
            args.state_file,
            args.state_origin,
            since=args.since,
            pages=args.fetch_pages,
            settings=settings,
        )
        self.crawl_state = state
        context = crawl_context(self.crawler)
        context.state = state
        state.site_of = context.site_of  # pooling stays within a site
        self.reading.use_state(state)
        self.reading.requester.use_state(state)  # conditional sitemap requests
        self.discovery.outcomes = state.sitemaps  # unread sitemaps: URLs unconfirmed
        self.crawler.signals.connect(self._close_state, signal=signals.spider_closed)
        since = args.since
        logger.info(
            "State: %(path)s (run %(run)d, since %(since)s)",
            {
                "path": args.state_file,
                "run": state.run_id,
                "since": "not set"
                if since is None
                else str(since)
                if isinstance(since, str)
                else since.isoformat(),
            },
        )

    def _close_state(self, reason: str) -> None:
        if self.crawl_state is not None:
            self.crawl_state.finish(reason)

    # -- start ---------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        self._configure(self.crawler)
        if self.argument_error:
            logger.error("Not crawling: %(error)s", {"error": self.argument_error})
            raise CloseSpider("bad_argument")
        refused = self._paused_elsewhere()
        if refused is not None:
            logger.error("Not crawling: %(error)s", {"error": refused})
            raise CloseSpider("bad_state")
        try:
            self._open_state()
        except StateLocked as exc:
            # never stall behind another crawl: this one goes on, without the state file
            self.discovery.inc("", "state/locked_count")
            self.discovery.log_once(
                "state_locked",
                "",
                f"state file not used: {exc}; this run is not incremental and keeps no "
                "history (give each concurrent crawl its own file: -a state=PATH)",
            )
        except StateError as exc:
            logger.error("Not crawling: %(error)s", {"error": exc})
            raise CloseSpider("bad_state") from None
        resumed = self._resume()
        if resumed is not None:
            for unread in resumed:
                yield self.frontier.resumed(unread)
            return
        requester = self.reading.requester
        if self.crawl_state is not None:  # what a limit left unread on the last run, first
            carried = self.crawl_state.sitemaps.carried
            for carried_request in requester.carried([task_from_dict(t) for t in carried]):
                yield carried_request
        for url in self.args.sitemap_urls:
            site = self.args.origin or urljoin(url, "/")
            if urlsplit(url).path.endswith("/robots.txt"):
                yield requester.robots(url, site)
            elif request := requester.sitemap(SitemapTask(url, "given", site), 0):
                yield request
        if not self.args.sitemap_urls:
            assert self.args.origin is not None
            site = urljoin(self.args.origin, "/")
            yield requester.robots(urljoin(site, "/robots.txt"), site)

    # -- callbacks -----------------------------------------------------------------------

    def _parse_robots(self, response: Response, site: str) -> Iterator[Request]:
        """Request each sitemap robots.txt declares (or guess where sitemaps are).

        @url {base}/robots.txt
        @cb_kwargs {"site": "{base}/"}
        @site
        @returns requests 2 2
        @returns items 0 0
        """
        yield from self.robots.read(response, site)
        self.frontier.done()

    def _robots_failed(self, failure: Failure) -> Iterator[Request]:
        request = failure.request  # type: ignore[attr-defined]
        yield from self.robots.failed(failure, request.cb_kwargs["site"], request.url)
        self.frontier.done()

    def _read_sitemap(self, response: Response, task: SitemapTask) -> Iterator[Any]:
        """Read a sitemap the spider requested: its URLs as items, its children as requests.

        @url {base}/_/gzip/sitemaps/posts.xml
        @site
        @sitemap_task robots
        @returns items 3 3
        @returns requests 0 0
        @lastmods 2
        @scrapes url lastmod lastmod_raw sitemap segment depth found_via
        """
        try:
            yield from self.reading.read(response, task)
        finally:  # done once every entry is out (or the crawl stopped reading it)
            self.discovery.inc(task.site, "sitemaps/done_count")
        yield from self.frontier.release(task)
        found = self.reading.found(task)
        if task.probe:  # a guessed location: the next ones unless it was a sitemap
            yield from self.robots.probed(task, found)
        elif task.found_via == "robots" and not task.depth:
            yield from self.robots.declared_read(task, found)

    def _sitemap_failed(self, failure: Failure) -> Iterator[Request]:
        task: SitemapTask = failure.request.cb_kwargs["task"]  # type: ignore[attr-defined]
        reason = failure.type.__name__ if failure.type else "error"
        self.discovery.inc(task.site, "sitemaps/done_count")
        refused = failure.value if isinstance(failure.value, SitemapRedirectRefused) else None
        if refused is not None:
            self.discovery.redirect_refused(task, refused.why, refused.target)
        elif task.probe:
            self.discovery.inc(task.site, "guess/miss_count")
        elif isinstance(failure.value, DownloadTimeoutError):  # the request's own deadline
            message = f"no answer in time, retries included: {failure.getErrorMessage()}"
            self.discovery.failed(task, "timeout", message)
        else:
            message = f"could not be fetched: {failure.getErrorMessage()}"
            self.discovery.failed(task, reason, message)
        yield from self.frontier.release(task)
        # a redirect to a sitemap requested already found one
        found = refused is not None and refused.why == "duplicate"
        if task.probe:
            yield from self.robots.probed(task, found=found)
        elif task.found_via == "robots" and not task.depth:
            yield from self.robots.declared_read(task, found)

    def _parse_sitemap(self, response: Response) -> Iterable[Any]:
        """The stock spider's callback, for subclasses that request sitemaps themselves:
        robots.txt or a sitemap given by URL, read by sitemapcrawl.

        @url {base}/pages.txt
        @site
        @returns items 2 2
        @returns requests 0 0
        @scrapes url sitemap segment found_via
        """
        if not self._configured:
            self._configure(self.crawler)
        site = self.args.origin or urljoin(response.url, "/")
        if urlsplit(response.url).path.endswith("/robots.txt"):
            return self._parse_robots(response, site)
        self.discovery.inc(site, "sitemaps/requested_count")
        self.discovery.inc(site, "sitemaps/done_count")
        return self.reading.read(response, SitemapTask(response.url, "given", site))

    def site_report(self, response: Response) -> Iterator[Any]:
        """Yield the URLs only links reached, then the site report, the feed's last item
        (one per site when the crawl spans several), requested by the sampling pipeline
        once discovery, sampling and link following are over; with ``-a emit=changes``,
        the changes no URL item told come first (changed pages, removed and unconfirmed
        URLs: ``UrlChange``)."""
        state = self.crawl_state
        if state is not None and self.args.emit == "changes":
            now = format_utc((state.server_now or state.started).replace(microsecond=0))
            for record in state.url_changes.records(now):
                yield UrlChange(**record)
        yield from site_reports(self.crawler).final_items()

    # -- pause and resume ----------------------------------------------------------------

    def closed(self, reason: str) -> None:
        """On an interrupted crawl, keep the sitemaps not read yet for the next run.

        Requests still in Scrapy's scheduler are kept by it (``JOBDIR``'s disk queue, or the
        shared Redis queue); those held back by the frontier, and those already
        downloading, would be lost: they go to ``JOBDIR``'s spider state, or back to the
        Redis queue.
        """
        if not self._configured or self.argument_error:
            return
        if reason in _FINAL_REASONS:
            if reason == "finished":
                self.frontier.finished()
                self._explain()
            return
        unread = self.frontier.unread()
        if hasattr(self, "state"):  # JOBDIR: Scrapy's SpiderState extension pickles this
            self.state["sitemapcrawl"] = {
                **self.frontier.saved(self, unread),
                **self.reading.saved(),
                # for the report of the run that resumes: what was found before the pause
                **self.discovery.saved(),
            }
        self.frontier.hand_back(self, unread)
        logger.info(
            "Crawl interrupted (%(reason)s): %(n)d sitemaps not read yet were kept for later",
            {"reason": reason, "n": len(unread)},
        )

    def _explain(self) -> None:
        """A crawl that found little says why (once: the site report may have said it)."""
        context = crawl_context(self.crawler)
        for site in context.sites or [""]:
            values = context.site_stats[site] if site else self.stats.get_stats()
            self.discovery.explain(site, values, self.args)

    def _paused_elsewhere(self) -> str | None:
        """Why the paused crawl in ``JOBDIR`` cannot be resumed by this version (its URL
        table is of an older format); None when it can, or when there is none. The paused
        state is left as it was, for the version that wrote it."""
        saved = getattr(self, "state", {}).get("sitemapcrawl")
        return None if saved is None else paused_refusal(saved)

    def _resume(self) -> list[Request] | None:
        """The sitemaps a previous, interrupted run of this JOBDIR had not read; None if new."""
        saved = getattr(self, "state", {}).pop("sitemapcrawl", None)
        if saved is None:
            return None
        requests = self.frontier.restore(self, saved)
        self.reading.restore(saved)
        self.discovery.restore(saved)
        logger.info(
            "Resuming: %(n)d sitemaps left unread by the interrupted run",
            {"n": len(requests)},
        )
        return requests
