"""The ``sitemap`` spider: thin Scrapy glue around the pure core in ``sitemapcrawl.sitemaps``.

It is a drop-in subclass of Scrapy's ``SitemapSpider``: ``sitemap_urls``, ``sitemap_rules``,
``sitemap_follow``, ``sitemap_alternate_links`` and ``sitemap_filter`` keep their meaning,
but parsing, discovery, limits and reporting are sitemapcrawl's. By default it requests
robots.txt and sitemap files only and yields one ``SitemapUrlItem`` per URL; a subclass
that sets ``sitemap_rules`` also gets its callbacks called for the matching pages.
"""

from __future__ import annotations

import heapq
import logging
import sys
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, StopDownload
from scrapy.http import Headers, Response
from scrapy.spiders import SitemapSpider
from scrapy.utils.request import request_from_dict
from w3lib.url import canonicalize_url

from sitemapcrawl.distributed import SharedProgress, requeue
from sitemapcrawl.httpcompression import SITEMAP_META
from sitemapcrawl.items import SitemapUrlItem
from sitemapcrawl.linkfollow import LINK_MODES
from sitemapcrawl.robotstxt import SitemapRobotsTxtMiddleware
from sitemapcrawl.sitemaps import Limits, SitemapReader, SitemapRef, UrlEntry
from sitemapcrawl.sitemaps.robots import parse_robots
from sitemapcrawl.sitemaps.scope import SCOPE_MODES, ScopePolicy, private_address
from sitemapcrawl.sitemaps.seen import SeenUrls
from sitemapcrawl.state import CrawlState, StateError, parse_since, state_path
from sitemapcrawl.verification import PendingReport, SiteVerification, site_verification

if TYPE_CHECKING:
    import datetime as dt
    import re
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

__all__ = ["SitemapCrawlSpider", "SitemapTask"]

_GUESS_MODES = ("off", "fallback", "always")
_SWITCH = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}
_ERROR_STATUSES = list(range(400, 600))
_P = "sitemapcrawl/"
_SITEMAP_META = SITEMAP_META  # marks sitemap requests (pause/resume, compression)
_COUNTED_META = "sitemapcrawl_counted"  # robots.txt and sitemaps: shared progress counter
_RECEIVED_META = "sitemapcrawl_received"  # bytes of a sitemap body received so far
_STOPPED_META = "sitemapcrawl_stopped"  # why we stopped its download: too_large, too_slow
_EXPECTED_META = "sitemapcrawl_expected"  # its announced length (0: unknown)
_FIRST_BYTE_META = "sitemapcrawl_headers_at"  # when its headers arrived (monotonic)
# Reasons after which nothing is left to read: no state is kept for a next run.
_MAX_FAULTS_LISTED = 1000  # the site report lists the first ones; the stats count them all
_FINAL_REASONS = frozenset({"finished", "max_urls", "bad_argument", "bad_state"})
# Sitemap requests also take 304 Not Modified (conditional requests from the state file).
_SITEMAP_STATUSES = [304, *_ERROR_STATUSES]
_MAX_TWICE = 50  # examples of URLs listed by several sitemaps kept for the report
_MAX_TOP_LEVEL_LISTED = 1000  # top-level sitemap files listed in the report


@dataclass(frozen=True, slots=True)
class SitemapTask:
    """What the spider knows about a sitemap request (passed as ``cb_kwargs["task"]``)."""

    url: str
    found_via: str  # robots | guessed | given
    site: str  # the site root every scope decision is made against
    depth: int = 0
    parent_lastmod: str | None = None  # the index's <lastmod> for this file (ISO UTC)
    segment: str | None = None  # None: top-level file, segment by first path component
    chain: tuple[str, ...] = ()  # canonical URLs of the indexes above this file
    declared_in_robots: bool = False
    probe: bool = False  # a guessed location: a 404 is a quiet miss
    parent: str | None = None  # the index that listed this file


def _positive_int(name: str, value: Any) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"argument {name}={value!r} is not a whole number") from None
    if number < 0:
        raise ValueError(f"argument {name}={value!r} must be 0 (no limit) or more")
    return number


def _http_url(name: str, value: str) -> str:
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = "" if parts.password else f"={value!r}"  # never echo credentials
        raise ValueError(f"argument {name}{shown} is not an http(s) URL")
    return value


def _first_segment(url: str) -> str:
    """``/blog/`` for ``https://a.example/blog/post``; ``/`` for a page at the root."""
    start = url.find("/", url.find("//") + 2)
    if start < 0:
        return "/"
    end = url.find("/", start + 1)
    return "/" if end < 0 else url[start : end + 1]


def _site_first_segment(site: str, url: str) -> str:
    """:func:`_first_segment` after its site, for crawls over several sites."""
    return site + _first_segment(url)


def _file_segment(url: str, site: str) -> str:
    """A child sitemap's name as a segment: its path (and query), or its URL on another host."""
    parts = urlsplit(url)
    if parts.netloc.lower() != urlsplit(site).netloc.lower():
        return url
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _dated(headers: Headers) -> Headers:
    """A response's clock headers only (``Date``, ``Age``), for a body read from the state."""
    return Headers({k: v for k, v in headers.items() if k.lower() in (b"date", b"age")})


def _child_time(child: SitemapRef) -> dt.datetime:
    assert child.lastmod is not None
    assert child.lastmod.value is not None
    return child.lastmod.value


class SitemapCrawlSpider(SitemapSpider):
    """Discover every URL of a site from robots.txt and its sitemaps.

    Arguments (``-a``): ``origin`` (the site, e.g. ``https://www.example.com``);
    ``sitemap_urls`` (comma-separated; skips discovery); ``max_sitemaps``, ``max_urls``,
    ``max_depth`` (0 = no limit); ``scope`` (host, path, robots, off); ``guess`` (off,
    fallback, always); ``links`` (off, fallback, sample, full: see ``sitemapcrawl.linkfollow``).
    Each overrides the ``SITEMAPCRAWL_*`` setting of the same name.
    """

    name = "sitemap"
    #: The sitemaps given belong to several sites (segment names then carry the site).
    _multi_site = False
    #: Discovery only: no page requests unless a subclass sets rules.
    sitemap_rules: Sequence[tuple[re.Pattern[str] | str, str | Callable[..., Any]]] = ()
    _ARGUMENTS: ClassVar[tuple[str, ...]] = (
        "origin",
        "sitemap_urls",
        "max_sitemaps",
        "max_urls",
        "max_depth",
        "scope",
        "guess",
        "proxy",
        "sample",
        "since",
        "state",
        "pages",
        "links",
    )

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
        self.sample_pages: bool | None = None
        self._configured = False
        self._visited: set[str] = set()
        self._seen_urls = SeenUrls()
        self._urls_emitted = 0
        self._sitemaps_scheduled = 0
        self._logged: set[tuple[str, str]] = set()
        #: Each distinct fault logged (code, URL, message), for the site report.
        self.faults: list[dict[str, str]] = []
        #: top-level sitemap files (URL -> how found, status, kind, counts) for the report
        self.top_level_files: dict[str, dict[str, Any]] = {}
        self._closing = False
        self._report_sent = False  # the site report went out early (max_urls)
        self._in_flight = 0
        self._seq = 0
        self._waiting: list[tuple[int, int, Request]] = []
        self._downloading: dict[str, Request] = {}
        #: URLs listed again by another sitemap (the first listing was emitted): examples.
        self.listed_twice: list[dict[str, str]] = []
        self._filter_overridden = type(self).sitemap_filter is not SitemapSpider.sitemap_filter

    @property
    def _verification(self) -> SiteVerification:
        return site_verification(self.crawler)

    # -- configuration -------------------------------------------------------------------

    def _configure(self, crawler: Crawler) -> None:
        """Read arguments and settings (add-on defaults exist only once the crawl starts)."""
        settings = crawler.settings
        self._configured = True
        raw = self._raw_args
        try:
            self.origin = _http_url("origin", raw["origin"]) if raw.get("origin") else None
            self.sitemap_urls = [_http_url("sitemap_urls", u) for u in (self.sitemap_urls or ())]
            # Sitemaps of several sites in one crawl: segment names carry their site, or the
            # /blog/ of one would be judged together with the /blog/ of another.
            self._multi_site = not self.origin and (
                len({urlsplit(u).netloc.lower() for u in self.sitemap_urls}) > 1
            )
            if self._multi_site:  # and each site gets its own report
                self._verification.set_sites([urljoin(u, "/") for u in self.sitemap_urls])
            self.max_sitemaps = _positive_int(
                "max_sitemaps",
                raw.get("max_sitemaps", settings.getint("SITEMAPCRAWL_MAX_SITEMAPS")),
            )
            self.max_urls = _positive_int(
                "max_urls", raw.get("max_urls", settings.getint("SITEMAPCRAWL_MAX_URLS"))
            )
            self.max_depth = _positive_int(
                "max_depth", raw.get("max_depth", settings.getint("SITEMAPCRAWL_MAX_DEPTH"))
            )
            self.scope = str(raw.get("scope", settings.get("SITEMAPCRAWL_SCOPE"))).strip()
            if self.scope not in SCOPE_MODES:
                raise ValueError(
                    f"argument scope={self.scope!r} is not one of {', '.join(SCOPE_MODES)}"
                )
            self.guess = str(raw.get("guess", settings.get("SITEMAPCRAWL_GUESS"))).strip()
            if self.guess not in _GUESS_MODES:
                raise ValueError(
                    f"argument guess={self.guess!r} is not one of {', '.join(_GUESS_MODES)}"
                )
            sample = raw.get("sample")
            if sample is not None and str(sample).strip().lower() not in _SWITCH:
                raise ValueError(f"argument sample={sample!r} is not one of on, off")
            self.sample_pages = _SWITCH[str(sample).strip().lower()] if sample else None
            proxy = raw.get("proxy") or settings.get("SITEMAPCRAWL_PROXY")
            self._proxy_meta = {"proxy": _http_url("proxy", proxy)} if proxy else {}
            since = raw.get("since")
            self.since = parse_since(str(since)) if since else None
            self.state_file = state_path(raw.get("state"), settings)
            pages = str(raw.get("pages", "none")).strip().lower()
            if pages not in ("none", "refetch"):
                raise ValueError(f"argument pages={pages!r} is not one of none, refetch")
            self.fetch_pages = pages == "refetch"
            if self.fetch_pages and self.since is None:
                raise ValueError("argument pages=refetch needs since=last or since=<date>")
            if self.since is not None and self.state_file is None:
                raise ValueError(
                    "argument since needs the state file: state is off "
                    "(set SITEMAPCRAWL_STATE_PATH or -a state=PATH)"
                )
            self.links_mode = str(raw.get("links", settings.get("SITEMAPCRAWL_LINKS"))).strip()
            if self.links_mode not in LINK_MODES:
                raise ValueError(
                    f"argument links={self.links_mode!r} is not one of {', '.join(LINK_MODES)}"
                )
            if not self.origin and not self.sitemap_urls:
                raise ValueError(
                    "argument origin is missing: pass -a origin=https://site or -a sitemap_urls=..."
                )
        except ValueError as exc:
            self.argument_error = str(exc)
            return
        if self.links_mode in ("fallback", "full") and not settings.getbool(
            "SITEMAPCRAWL_VERIFY_ENABLED"
        ):
            logger.warning(
                "links=%(mode)s needs SITEMAPCRAWL_VERIFY_ENABLED (its pipeline follows the "
                "links): no link will be followed",
                {"mode": self.links_mode},
            )
        self.guess_paths = settings.getlist("SITEMAPCRAWL_GUESS_PATHS")
        self.distributed = bool(settings.get("SITEMAPCRAWL_REDIS_URL"))
        # Workers sharing a Redis queue must not hold sitemaps back: the queue is the gate.
        self.concurrent_sitemaps = (
            sys.maxsize
            if self.distributed
            else max(1, settings.getint("SITEMAPCRAWL_CONCURRENT_SITEMAPS"))
        )
        crawler.signals.connect(self._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._reached_downloader, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._on_bytes, signal=signals.bytes_received)
        crawler.signals.connect(self._on_headers, signal=signals.headers_received)
        self._shared: SharedProgress | None = None
        if self.distributed:
            self._shared = SharedProgress(
                crawler, self, settings.getfloat("SITEMAPCRAWL_REDIS_WAIT")
            )
            crawler.signals.connect(self._dropped, signal=signals.request_dropped)
        self.deduplicate = settings.getbool("SITEMAPCRAWL_DEDUPLICATE")
        self._sitemap_maxsize = settings.getint("SITEMAPCRAWL_MAX_DOWNLOAD_SIZE")
        self._robots_maxsize = settings.getint("SITEMAPCRAWL_ROBOTS_MAX_SIZE")
        self._download_timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        self._read_deadline = settings.getfloat("SITEMAPCRAWL_READ_DEADLINE")
        self.limits = Limits(
            max_size=settings.getint("SITEMAPCRAWL_MAX_SIZE"),
            max_urls=settings.getint("SITEMAPCRAWL_MAX_URLS_PER_FILE"),
            keep_excess=settings.getbool("SITEMAPCRAWL_KEEP_EXCESS_URLS"),
            max_loc_length=settings.getint("SITEMAPCRAWL_MAX_LOC_LENGTH"),
        )
        self._policies: dict[str, ScopePolicy] = {}
        self._conditional = settings.getbool("SITEMAPCRAWL_CONDITIONAL_SITEMAPS")
        self._index_trust_min = settings.getint("SITEMAPCRAWL_INDEX_TRUST_MIN")
        self._index_audit = settings.getfloat("SITEMAPCRAWL_INDEX_AUDIT_SHARE")
        self.crawl_state: CrawlState | None = None

    def _open_state(self) -> None:
        """Open the state file (verification on, one machine); a bad one stops the crawl."""
        settings = self.crawler.settings
        if self.state_file is None or not settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            return
        if self.distributed:
            logger.info(
                "State file not used: workers sharing a Redis queue each see part of the "
                "site (see README, 'State across runs')"
            )
            return
        origin = self.origin or ",".join(self.sitemap_urls)
        self.crawl_state = CrawlState.open(
            self.state_file,
            origin,
            since=self.since,
            pages=self.fetch_pages,
            settings=settings,
        )
        verification = site_verification(self.crawler)
        verification.state = self.crawl_state
        self.crawl_state.site_of = verification.site_of  # pooling stays within a site
        self.crawler.signals.connect(self._close_state, signal=signals.spider_closed)
        since = self.since
        logger.info(
            "State: %(path)s (run %(run)d, since %(since)s)",
            {
                "path": self.state_file,
                "run": self.crawl_state.run_id,
                "since": "not set"
                if since is None
                else since
                if isinstance(since, str)
                else since.isoformat(),
            },
        )

    def _close_state(self, reason: str) -> None:
        if self.crawl_state is not None:
            self.crawl_state.finish(reason)

    @property
    def discovery_pending(self) -> bool:
        """Sitemaps are still held back here: discovery is not over even if Scrapy is idle."""
        return bool(self._waiting)

    def _inc(self, site: str, key: str, count: int = 1) -> None:
        """Add to the stat ``sitemapcrawl/<key>``, and to ``site``'s share of it when the
        crawl spans several sites (each gets its own report)."""
        self._verification.inc(self.stats, site, _P + key, count)

    @property
    def stats(self) -> StatsCollector:
        """The crawler's stats (they exist once the crawl starts)."""
        stats = self.crawler.stats
        assert stats is not None
        return stats

    # -- start ---------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        self._configure(self.crawler)
        if self.argument_error:
            logger.error("Not crawling: %(error)s", {"error": self.argument_error})
            raise CloseSpider("bad_argument")
        try:
            self._open_state()
        except StateError as exc:
            logger.error("Not crawling: %(error)s", {"error": exc})
            raise CloseSpider("bad_state") from None
        resumed = self._resume()
        if resumed is not None:
            for unread in resumed:
                self._in_flight += 1
                yield unread
            return
        if self.sitemap_urls:
            for url in self.sitemap_urls:
                site = self.origin or urljoin(url, "/")
                if urlsplit(url).path.endswith("/robots.txt"):
                    yield self._robots_request(url, site)
                else:
                    task = SitemapTask(url, "given", site)
                    if request := self._sitemap_request(task):
                        yield request
            return
        assert self.origin is not None
        site = urljoin(self.origin, "/")
        yield self._robots_request(urljoin(site, "/robots.txt"), site)

    # -- robots.txt ----------------------------------------------------------------------

    def _robots_request(self, url: str, site: str) -> Request:
        self._inc(site, "robots/requested_count")
        return self._count(
            Request(
                url,
                callback=self._parse_robots,
                errback=self._robots_failed,
                cb_kwargs={"site": site},
                meta=self._meta(self._robots_maxsize),
                dont_filter=not self.distributed,
                priority=100,
            )
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
            _COUNTED_META: True,
            **self._proxy_meta,
            **extra,
        }

    def _parse_robots(self, response: Response, site: str) -> Iterator[Request]:
        """Request each sitemap robots.txt declares (or guess where sitemaps are).

        @url {base}/robots.txt
        @cb_kwargs {"site": "{base}/"}
        @site
        @returns requests 2 2
        @returns items 0 0
        """
        self._inc(site, f"robots/status_count/{response.status}")
        declared: list[str] = []
        if response.status == 200:
            self._share_robots(response)
            robots = parse_robots(response.body, response.url)
            if robots.html:
                self._inc(site, "robots/html_count")
                self._log_once(
                    "robots_html", response.url, "robots.txt is an HTML page; ignored", site
                )
            if robots.truncated:
                self._inc(site, "robots/truncated_count")
                self._log_once(
                    "robots_large",
                    response.url,
                    "robots.txt is over 500 KiB; every Sitemap line was still read",
                    site,
                )
            declared = robots.sitemaps
            if robots.invalid:
                self._inc(site, "robots/invalid_sitemaps_count", robots.invalid)
        elif response.status >= 500:
            self._log_once(
                "robots_status",
                response.url,
                f"robots.txt answered {response.status} after retries; guessing sitemap locations",
                site,
            )
        self._inc(site, "robots/sitemaps_count", len(declared))
        for rank, url in enumerate(declared):  # in the order the site declared them
            if request := self._sitemap_request(
                SitemapTask(url, "robots", site, declared_in_robots=True), priority=-rank
            ):
                yield request
        if self.guess == "always" or (self.guess == "fallback" and not declared):
            yield from self._guesses(site, exclude=set(declared))
        self._done()

    def _share_robots(self, response: Response) -> None:
        """Hand the file to the robots.txt middleware, which pages obey: one request."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # a callback run outside a crawl (contracts, fixtures)
            return
        downloader = getattr(engine, "downloader", None)
        for middleware in getattr(getattr(downloader, "middleware", None), "middlewares", ()):
            if isinstance(middleware, SitemapRobotsTxtMiddleware):
                middleware.reuse(response)

    def _robots_failed(self, failure: Failure) -> Iterator[Request]:
        request = failure.request  # type: ignore[attr-defined]
        reason = failure.type.__name__ if failure.type else "error"
        site = request.cb_kwargs["site"]
        self._inc(site, f"robots/failed_count/{reason}")
        self._log_once(
            "robots_failed", request.url, f"robots.txt could not be fetched ({reason})", site
        )
        if self.guess != "off":
            yield from self._guesses(site, exclude=set())
        self._done()

    def _guesses(self, site: str, exclude: set[str]) -> Iterator[Request]:
        for rank, path in enumerate(self.guess_paths):  # most likely locations first
            url = urljoin(site, path)
            if url in exclude:
                continue
            self._inc(site, "guess/requested_count")
            task = SitemapTask(url, "guessed", site, probe=True)
            if request := self._sitemap_request(task, priority=-rank):
                yield request

    # -- sitemap requests ----------------------------------------------------------------

    def _policy(self, site: str) -> ScopePolicy:
        policy = self._policies.get(site)
        if policy is None:
            policy = self._policies[site] = ScopePolicy(self.scope, site)
        return policy

    def _sitemap_request(self, task: SitemapTask, priority: int = 0) -> Request | None:
        key = canonicalize_url(task.url)
        if key in task.chain:
            self._inc(task.site, "sitemaps/loop_count")
            self._log_once(
                "loop", task.url, "sitemap index loop cut (the file lists an ancestor)", task.site
            )
            return None
        if key in self._visited:
            self._inc(task.site, "sitemaps/duplicate_count")
            return None
        if private_address(task.url, self.origin or task.site):
            self._inc(task.site, "sitemaps/private_address_count")
            self._log_once(
                "private",
                task.url,
                "sitemap on a private or loopback address; not requested",
                task.site,
            )
            return None
        if not task.probe and self.max_sitemaps and self._sitemaps_scheduled >= self.max_sitemaps:
            self._inc(task.site, "limits/max_sitemaps_count")
            self._log_once(
                "max_sitemaps",
                "",
                f"max_sitemaps={self.max_sitemaps} reached; later sitemaps skipped",
            )
            return None
        self._visited.add(key)
        if not task.probe:
            self._sitemaps_scheduled += 1
        self._inc(task.site, "sitemaps/requested_count")
        headers = None
        if self.crawl_state is not None and self._conditional:
            headers = self.crawl_state.conditional_headers(task.url) or None
            if headers:
                self._inc(task.site, "state/conditional_count")
        meta = self._meta(
            # Scrapy's own cap would refuse a body whose Content-Length is over it before any
            # byte, or drop it when reached: _on_bytes stops at the cap and keeps what came.
            0,
            # A connection lost mid-body still delivers what arrived: parse it.
            download_fail_on_dataloss=False,
            **{_SITEMAP_META: True, _RECEIVED_META: 0},
        )
        meta["handle_httpstatus_list"] = _SITEMAP_STATUSES
        request = Request(
            task.url,
            callback=self._read_sitemap,
            errback=self._sitemap_failed,
            cb_kwargs={"task": task},
            headers=headers,
            meta=meta,
            # Alone, the spider's own visited set dedupes sitemaps; with workers sharing a
            # Redis queue, the shared dupefilter must see them so each is fetched once.
            dont_filter=not self.distributed,
            priority=priority,
        )
        self._count(request)
        if self._in_flight >= self.concurrent_sitemaps:
            # Every sitemap in flight holds its body and a parser until its last entry is
            # out: hold the rest here, in priority order (newest children first).
            self._seq += 1
            heapq.heappush(self._waiting, (-priority, self._seq, request))
            return None
        self._in_flight += 1
        return request

    def _release(self, task: SitemapTask) -> Iterator[Request]:
        """One sitemap finished: send the next waiting ones, up to the concurrency limit.

        Called after the sitemap's children were yielded, so the shared count (distributed
        mode) never reaches zero between a parent and its children."""
        self._done()
        self._in_flight -= 1
        self._downloading.pop(task.url, None)
        while self._waiting and self._in_flight < self.concurrent_sitemaps:
            self._in_flight += 1
            yield heapq.heappop(self._waiting)[2]

    def _count(self, request: Request) -> Request:
        """Distributed mode: count a request before it exists for the others, so the shared
        count never drops to zero while a sitemap that lists more is still being read."""
        if self._shared is not None:
            self._shared.scheduled()
        return request

    def _dropped(self, request: Request, spider: Any = None) -> None:
        """The shared dupefilter refused one (another worker had it): uncount it."""
        if self._shared is not None and request.meta.get(_COUNTED_META):
            self._shared.done()

    def _done(self) -> None:
        if self._shared is not None:
            self._shared.done()

    def _on_bytes(self, data: bytes, request: Request, spider: Any = None) -> None:
        """Stop a sitemap download at the size cap, or when it has taken most of its time,
        and keep what arrived.

        Scrapy's own cap (``download_maxsize``) refuses a body announced larger before any
        byte arrives and cancels one that grows past it, delivering nothing; its timeout
        drops a slow body whole. So sitemap requests carry no Scrapy cap: at
        ``SITEMAPCRAWL_MAX_DOWNLOAD_SIZE`` bytes, or after ``SITEMAPCRAWL_READ_DEADLINE`` of
        ``download_timeout`` after its headers (a server dripping bytes), the download stops
        here and the callback parses what came.
        """
        received = request.meta.get(_RECEIVED_META)
        if received is None:
            return
        received += len(data)
        request.meta[_RECEIVED_META] = received
        if received >= self._sitemap_maxsize > 0:
            request.meta[_STOPPED_META] = "too_large"
            raise StopDownload(fail=False)
        # The clock starts with the headers (time queued in the downloader does not count,
        # and Scrapy's own timeout has at least this much left).
        started = request.meta.get(_FIRST_BYTE_META)
        if started is None:
            return
        timeout = float(request.meta.get("download_timeout") or self._download_timeout)
        now = time.monotonic()
        if timeout <= 0 or now - started <= timeout * self._read_deadline:
            return
        # Past the deadline: stop, unless the announced length will arrive in time at the
        # rate seen so far.
        expected = request.meta.get(_EXPECTED_META) or 0
        rate = received / max(now - started, 1e-3)
        if (
            expected > received
            and (expected - received) / rate < timeout * (1 - self._read_deadline) / 2
        ):
            return
        request.meta[_STOPPED_META] = "too_slow"
        raise StopDownload(fail=False)

    def _on_headers(
        self, headers: Any, body_length: int, request: Request, spider: Any = None
    ) -> None:
        if request.meta.get(_SITEMAP_META):
            # Twisted says UNKNOWN_LENGTH (a string) for a chunked body
            known = isinstance(body_length, int) and body_length > 0
            request.meta[_EXPECTED_META] = body_length if known else 0
            request.meta[_FIRST_BYTE_META] = time.monotonic()

    def _reached_downloader(self, request: Request, spider: Any = None) -> None:
        """Remember sitemap requests that left the scheduler: a stop loses those."""
        if request.meta.get(_SITEMAP_META):
            self._downloading[request.cb_kwargs["task"].url] = request

    def closed(self, reason: str) -> None:
        """On an interrupted crawl, keep the sitemaps not read yet for the next run.

        Requests still in Scrapy's scheduler are kept by it (``JOBDIR``'s disk queue, or the
        shared Redis queue); those waiting in this spider, and those already downloading,
        would be lost: they go to ``JOBDIR``'s spider state, or back to the Redis queue.
        """
        if not self._configured or self.argument_error:
            return
        if reason in _FINAL_REASONS:
            if self._shared is not None and reason == "finished":
                self._shared.clean_up()
            return
        unread = [r for _, _, r in sorted(self._waiting)] + list(self._downloading.values())
        if hasattr(self, "state"):  # JOBDIR: Scrapy's SpiderState extension pickles this
            self.state["sitemapcrawl"] = {
                "visited": self._visited,
                "seen": self._seen_urls,
                "urls_emitted": self._urls_emitted,
                "sitemaps_scheduled": self._sitemaps_scheduled,
                "unread": [r.to_dict(spider=self) for r in unread],
                # for the report of the run that resumes: what was found before the pause
                "top_level_files": self.top_level_files,
                "faults": self.faults,
                "logged": self._logged,
                "listed_twice": self.listed_twice,
            }
        if self.distributed and unread:
            requeue(self.crawler, self, unread)
        logger.info(
            "Crawl interrupted (%(reason)s): %(n)d sitemaps not read yet were kept for later",
            {"reason": reason, "n": len(unread)},
        )

    def _resume(self) -> list[Request] | None:
        """The sitemaps a previous, interrupted run of this JOBDIR had not read; None if new."""
        saved = getattr(self, "state", {}).pop("sitemapcrawl", None)
        if saved is None:
            return None
        self._visited = saved["visited"]
        self._seen_urls = saved["seen"]
        self._urls_emitted = saved["urls_emitted"]
        self._sitemaps_scheduled = saved["sitemaps_scheduled"]
        # (absent from the state of a version before they were kept)
        self.top_level_files = saved.get("top_level_files", {})
        self.faults = saved.get("faults", [])
        self.listed_twice = saved.get("listed_twice", [])
        self._logged = saved.get("logged", set())
        requests = [request_from_dict(d, spider=self) for d in saved["unread"]]
        logger.info(
            "Resuming: %(n)d sitemaps left unread by the interrupted run",
            {"n": len(requests)},
        )
        return requests

    def _on_idle(self) -> None:
        """Never close while sitemaps wait here (a callback that died released none), or,
        with shared workers, while another worker still reads one."""
        if self._closing:
            return
        if self._shared is not None and self._shared.should_wait():
            raise DontCloseSpider
        if not self._waiting:
            return
        while self._waiting:
            self.crawler.engine.crawl(heapq.heappop(self._waiting)[2])
        raise DontCloseSpider

    def _sitemap_failed(self, failure: Failure) -> Iterator[Request]:
        request = failure.request  # type: ignore[attr-defined]
        task: SitemapTask = request.cb_kwargs["task"]
        reason = failure.type.__name__ if failure.type else "error"
        self._inc(task.site, "sitemaps/done_count")
        if task.probe:
            self._inc(task.site, "guess/miss_count")
        else:
            self._failed(task, reason, f"could not be fetched: {failure.getErrorMessage()}")
        yield from self._release(task)

    def _top_level(self, task: SitemapTask, **facts: Any) -> None:
        """What became of a top-level sitemap file (not an index's child): the report
        lists each, with how it was found (``SiteReport.sitemaps["files"]``)."""
        if task.depth or task.parent is not None:
            return
        entry = self.top_level_files.get(task.url)
        if entry is None:
            if len(self.top_level_files) >= _MAX_TOP_LEVEL_LISTED:
                return
            entry = self.top_level_files[task.url] = {"url": task.url, "found_via": task.found_via}
            if self._multi_site:  # whose report lists it
                entry["site"] = task.site
        entry.update(facts)

    def _failed(self, task: SitemapTask, reason: str, message: str) -> None:
        self._top_level(task, error=reason)
        self._inc(task.site, "sitemaps/failed_count")
        self._inc(task.site, f"sitemaps/failed_count/{reason}")
        self._log_once(reason, task.url, message, task.site)

    def _site_segment(self, name: str, site: str) -> str:
        """``name`` (a path) qualified by its site when the crawl spans several sites."""
        if self._multi_site and name.startswith("/"):
            return site.rstrip("/") + name
        return name

    def _log_once(self, code: str, url: str, message: str, site: str = "") -> None:
        """Log a fault once per (code, URL); list it for the report (of ``site`` when the
        crawl spans several sites; "" for a crawl-wide one, told in every site's report)."""
        if (code, url) in self._logged:
            return
        self._logged.add((code, url))
        # A crawl-wide fault (a limit) is told against the site.
        where = url or self.origin or urljoin((self.sitemap_urls or ["/"])[0], "/")
        logger.warning("%(url)s: %(message)s", {"url": where, "message": message})
        if len(self.faults) < _MAX_FAULTS_LISTED:
            fault = {"code": code, "url": where, "message": message}
            if self._multi_site:
                fault["site"] = site
            self.faults.append(fault)

    # -- sitemap responses ---------------------------------------------------------------

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
        site = self.origin or urljoin(response.url, "/")
        if urlsplit(response.url).path.endswith("/robots.txt"):
            return self._parse_robots(response, site)
        self._inc(site, "sitemaps/requested_count")
        self._inc(site, "sitemaps/done_count")
        return self._read(response, SitemapTask(response.url, "given", site))

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
            yield from self._read(response, task)
        finally:  # done once every entry is out (or the crawl stopped reading it)
            self._inc(task.site, "sitemaps/done_count")
        yield from self._release(task)

    def _read(self, response: Response, task: SitemapTask) -> Iterator[Any]:
        if self._closing:  # max_urls reached while this file was in flight
            return
        if response.url != task.url:
            key = canonicalize_url(response.url)
            if key in task.chain or (key in self._visited and key != canonicalize_url(task.url)):
                self._inc(task.site, "sitemaps/loop_count")
                self._log_once(
                    "loop",
                    task.url,
                    f"redirects to {response.url}, already read; loop cut",
                    task.site,
                )
                return
            self._visited.add(key)
        if response.status >= 400:
            if task.probe:
                self._inc(task.site, "guess/miss_count")
                return
            self._top_level(task, status=response.status)
            self._failed(task, f"http_{response.status}", f"answered HTTP {response.status}")
            return
        if response.status == 304:
            yield from self._not_modified(response, task)
            return
        body = response.body
        if "download_stopped" in response.flags:
            if response.meta.get(_STOPPED_META) == "too_slow":
                self._inc(task.site, "errors/too_slow_count")
                self._log_once(
                    "too_slow",
                    task.url,
                    f"download still running after {self._read_deadline:.0%} of its timeout "
                    f"({len(body)} bytes); stopped, reading what arrived",
                    task.site,
                )
            else:
                # Read exactly up to the cap, wherever the network cut the last chunk.
                body = body[: self._sitemap_maxsize]
                self._inc(task.site, "errors/too_large_count")
                self._log_once(
                    "too_large",
                    task.url,
                    f"download stopped at {self._sitemap_maxsize} bytes; reading what arrived",
                    task.site,
                )
        if "dataloss" in response.flags:
            self._inc(task.site, "errors/dataloss_count")
            self._log_once(
                "dataloss", task.url, "connection lost mid-body; reading what arrived", task.site
            )
        reader = SitemapReader(
            body,
            response.url,
            limits=self.limits,
            content_encoding=[
                v.decode("latin-1") for v in response.headers.getlist(b"Content-Encoding")
            ],
        )
        kind = reader.sniff()
        if kind not in ("urlset", "sitemapindex", "text", "rss", "atom", "xml"):
            if task.probe:
                self._inc(task.site, "guess/miss_count")
                return
            self._inc(task.site, f"errors/{reader.faults[0].code}_count")
            self._failed(task, kind, reader.faults[0].message)
            return
        if task.probe:
            self._inc(task.site, "guess/found_count")
        self._top_level(task, status=response.status, kind=kind)
        self._inc(task.site, "sitemaps/parsed_count")
        self._inc(task.site, f"sitemaps/parsed_count/{kind}")
        if reader.decoder.layers:
            self._inc(task.site, "sitemaps/gzip_count")
        yield from self._entries(reader, task, _dated(response.headers))
        if not task.depth:
            self._top_level(task, urls=reader.urls, sitemaps=reader.sitemaps)
        if self.crawl_state is not None:
            complete = not (
                reader.faults
                or self._closing
                or "download_stopped" in response.flags
                or "dataloss" in response.flags
            )
            check = self.crawl_state.sitemap_read(
                task.url,
                response,
                kind="sitemapindex" if reader.sitemaps else kind,
                body=body,
                index_lastmod=task.parent_lastmod,
                parent=task.parent,
                complete=complete,
            )
            if check == "miss" and task.parent is not None:
                self._inc(task.site, "state/index_lastmod_miss_count")
                self._log_once(
                    "index_lastmod_miss",
                    task.parent,
                    f"child {task.url} changed while its <lastmod> in the index did not: "
                    "this index's lastmods no longer let children be skipped",
                    task.site,
                )

    def _entries(
        self, reader: SitemapReader, task: SitemapTask, clock: Headers | None = None
    ) -> Iterator[Any]:
        """The file's URLs as items, then its children as requests; ``clock``: the
        response's ``Date``/``Age``, the clock of the children skipped by their index
        lastmod (they are read from the state file, with no response of their own)."""
        children: list[SitemapRef] = []
        url_callbacks = self._cbs
        entries: Iterable[UrlEntry | SitemapRef] = reader
        if self._filter_overridden:
            entries = self._filtered(reader)
        sitemap_url = reader.url
        policy = self._policy(task.site)
        declared = task.declared_in_robots
        segment = task.segment
        first_segment: Callable[[str], str] = _first_segment
        if segment is None and self._multi_site:
            first_segment = partial(_site_first_segment, task.site.rstrip("/"))

        parent_lastmod = task.parent_lastmod
        depth = task.depth
        found_via = task.found_via
        seen = self._seen_urls
        dedupe = self.deduplicate
        max_urls = self.max_urls
        emitted = duplicates = 0
        dropped: dict[str, int] = {}
        protocol_limit = self.limits.max_urls
        try:
            for entry in entries:
                if type(entry) is SitemapRef:
                    children.append(entry)
                    continue
                assert type(entry) is UrlEntry
                if max_urls and self._urls_emitted + emitted >= max_urls:
                    self._closing = True
                    break
                loc = entry.loc
                why = policy.reason(loc, sitemap_url, declared)
                if why is not None:
                    dropped[why] = dropped.get(why, 0) + 1
                    continue
                if dedupe and not seen.add(loc):
                    duplicates += 1
                    if len(self.listed_twice) < _MAX_TWICE:
                        self.listed_twice.append({"url": loc, "sitemap": sitemap_url})
                    continue
                lastmod = entry.lastmod
                flags = []
                if entry.relative:
                    flags.append("relative_loc")
                if reader.urls > protocol_limit:
                    flags.append("beyond_protocol_limit")
                yield SitemapUrlItem(
                    loc,
                    lastmod.iso if lastmod else None,
                    lastmod.raw if lastmod else None,
                    lastmod.precision if lastmod else None,
                    list(lastmod.flags) if lastmod else [],
                    entry.changefreq,
                    entry.priority,
                    sitemap_url,
                    parent_lastmod,
                    segment if segment is not None else first_segment(loc),
                    depth,
                    found_via,
                    entry.news,
                    entry.images,
                    entry.videos,
                    entry.alternates,
                    entry.mobile,
                    flags,
                )
                emitted += 1
                if not emitted & 1023:  # keep the live count (progress lines) current
                    self._inc(task.site, "urls/found_count", 1024)
                if url_callbacks:
                    yield from self._page_requests(entry)
                if max_urls and self._urls_emitted + emitted >= max_urls:
                    self._closing = True
                    break
        finally:
            self._urls_emitted += emitted
            self._record(reader, task.site, emitted, duplicates, dropped)
        if self._closing:
            self.stats.set_value(_P + "limits/max_urls_count", 1)
            self._log_once("max_urls", "", f"max_urls={max_urls} reached; closing")
            site = site_verification(self.crawler)
            if site.closing_report is not None and not self._report_sent:
                self._report_sent = True  # the feed's last item, as on a finished crawl
                for root in site.sites or [""]:  # one per site, built by the pipeline
                    yield PendingReport(root)  # after the URLs before it
            raise CloseSpider("max_urls")
        if children:
            if self.crawl_state is not None:
                self.crawl_state.save_children(
                    task.url, [(c.loc, c.lastmod.raw if c.lastmod else None) for c in children]
                )
            yield from self._child_requests(children, task, sitemap_url, clock)

    def _record(
        self,
        reader: SitemapReader,
        site: str,
        emitted: int,
        duplicates: int,
        dropped: dict[str, int],
    ) -> None:
        self._inc(site, "urls/found_count", emitted & 1023)  # the rest was counted live
        if duplicates:
            self._inc(site, "urls/duplicate_count", duplicates)
        for why, count in dropped.items():
            self._inc(site, f"scope/dropped_count/{why}", count)
        for name, count in reader.counts.items():
            self._inc(site, f"entries/{name}_count", count)
        if reader.sitemaps:
            self._inc(site, "children/listed_count", reader.sitemaps)
        for fault in reader.faults:
            self._inc(site, f"errors/{fault.code}_count")
            self._log_once(fault.code, reader.url, fault.message, site)

    def _page_requests(self, entry: UrlEntry) -> Iterator[Request]:
        locs = [entry.loc]
        if self.sitemap_alternate_links:
            locs += [a["href"] for a in entry.alternates]
        for loc in locs:
            for regex, callback in self._cbs:
                if regex.search(loc):
                    yield Request(loc, callback=callback, meta=dict(self._proxy_meta))
                    break

    def _child_requests(
        self,
        children: list[SitemapRef],
        task: SitemapTask,
        sitemap_url: str,
        clock: Headers | None = None,
    ) -> Iterator[Request]:
        if task.depth + 1 > self.max_depth > 0:
            self._inc(task.site, "limits/max_depth_count", len(children))
            self._log_once(
                "max_depth",
                sitemap_url,
                f"index deeper than max_depth={self.max_depth}; children skipped",
                task.site,
            )
            return
        # Newest first by the index's <lastmod>; undated children last, in document order.
        dated = [c for c in children if c.lastmod is not None and c.lastmod.value is not None]
        undated = [c for c in children if c.lastmod is None or c.lastmod.value is None]
        dated.sort(key=_child_time, reverse=True)
        chain = (*task.chain, canonicalize_url(sitemap_url))
        state = self.crawl_state
        trusted_index = state is not None and state.index_trusted(task.url, self._index_trust_min)
        for rank, child in enumerate(dated + undated):
            if not any(regex.search(child.loc) for regex in self._follow):
                self._inc(task.site, "sitemaps/not_followed_count")
                continue
            child_task = replace(
                task,
                url=child.loc,
                depth=task.depth + 1,
                parent_lastmod=child.lastmod.iso if child.lastmod else None,
                segment=self._site_segment(_file_segment(child.loc, task.site), task.site),
                chain=chain,
                probe=False,
                parent=task.url,
            )
            if self._multi_site and child_task.segment is not None:
                self._verification.segment_sites.setdefault(child_task.segment, task.site)
            if trusted_index and self._unchanged_child(child_task):
                assert state is not None
                if state.index_audit_draw(child_task.url) >= self._index_audit:
                    yield from self._skip_child(child_task, clock)
                    continue
                # fetched (conditionally) all the same: a child that changed while its
                # index lastmod stood still ends the index's trust (``sitemap_read``)
                self._inc(task.site, "state/audited_children_count")
            if request := self._sitemap_request(child_task, priority=-rank - task.depth * 1000):
                yield request

    # -- the state file: 304s and unchanged children -------------------------------------

    def _not_modified(self, response: Response, task: SitemapTask) -> Iterator[Any]:
        """A conditional request answered 304: parse the body stored when the file was last
        read completely, as if it had been downloaded again."""
        state = self.crawl_state
        stored = state.stored_body(task.url) if state is not None else None
        self._top_level(task, not_modified=True)
        if state is None or stored is None:
            self._failed(task, "http_304", "answered 304 Not Modified without a stored copy")
            return
        self._inc(task.site, "state/not_modified_count")
        yield from self._replay(response, task, stored)

    def _unchanged_child(self, task: SitemapTask) -> bool:
        """The index's ``<lastmod>`` for this child is what it was when the child was last
        read completely (and the index's lastmods have proven to move with content)."""
        state = self.crawl_state
        assert state is not None
        known = state.known_sitemap(task.url)
        return (
            known is not None
            and known.body_hash is not None
            and task.parent_lastmod is not None
            and known.index_lastmod == task.parent_lastmod
            and canonicalize_url(task.url) not in self._visited
        )

    def _skip_child(self, task: SitemapTask, clock: Headers | None = None) -> Iterator[Any]:
        """A child whose index lastmod did not move: its stored body, without a request.
        ``clock``: the index response's ``Date``/``Age``, the server's "now" for the
        child's segment (without it, the segment's reference time would be our clock)."""
        state = self.crawl_state
        assert state is not None
        stored = state.stored_body(task.url)
        if stored is None:
            return
        self._visited.add(canonicalize_url(task.url))
        self._inc(task.site, "state/skipped_children_count")
        self._inc(task.site, "sitemaps/requested_count")
        stand_in = Response(task.url, status=200, headers=clock)  # the index's clock
        try:
            yield from self._replay(stand_in, task, stored)
        finally:
            self._inc(task.site, "sitemaps/done_count")

    def _replay(
        self, response: Response, task: SitemapTask, stored: tuple[bytes, str]
    ) -> Iterator[Any]:
        """Read ``stored`` (body, Content-Encoding) in place of ``response``'s body, keeping
        its clock (``Date``) and validators (else the file's known ones)."""
        state = self.crawl_state
        assert state is not None
        body, encoding = stored
        known = state.known_sitemap(task.url)
        headers = _dated(response.headers)
        # A 304 carries the validators a 200 would have (RFC 9110 15.4.5): a file written
        # again with the same bytes has a newer Last-Modified, the moment it was current.
        for name, known_value in (
            (b"ETag", known.etag if known is not None else None),
            (b"Last-Modified", known.last_modified if known is not None else None),
        ):
            value = response.headers.get(name)
            if not value and known_value:
                value = known_value.encode("latin-1")
            if value:
                headers[name] = value
        if encoding:
            headers[b"Content-Encoding"] = encoding.encode("latin-1")
        replayed = Response(response.url, status=200, headers=headers, body=body)
        before = self._urls_emitted
        try:
            yield from self._read(replayed, task)
        finally:
            self._inc(task.site, "state/replayed_urls_count", self._urls_emitted - before)

    # -- the site report -----------------------------------------------------------------

    def site_report(self, response: Response) -> Iterator[Any]:
        """Yield the URLs only links reached, then the site report, the feed's last item
        (one per site when the crawl spans several), requested by the sampling pipeline
        once discovery, sampling and link following are over."""
        site = site_verification(self.crawler)
        if site.link_items is not None:
            yield from site.link_items()
        builder = site.report_builder
        if builder is not None:
            for root in site.sites or [""]:  # one report per site
                yield builder(root)

    # -- sitemap_filter compatibility ----------------------------------------------------

    def _filtered(self, reader: SitemapReader) -> Iterator[UrlEntry | SitemapRef]:
        """Pass entries through a user's ``sitemap_filter`` as the dicts the stock spider uses,
        extended with the parsed fields; entries come back by their ``_entry`` key."""

        def as_dicts() -> Iterator[dict[str, Any]]:
            for entry in reader:
                lastmod = entry.lastmod
                d: dict[str, Any] = {
                    "loc": entry.loc,
                    "lastmod": lastmod.raw if lastmod else None,
                    "lastmod_parsed": lastmod.value if lastmod else None,
                    "lastmod_precision": lastmod.precision if lastmod else None,
                    "lastmod_flags": list(lastmod.flags) if lastmod else [],
                    "_entry": entry,
                }
                if type(entry) is UrlEntry:
                    if entry.changefreq is not None:
                        d["changefreq"] = entry.changefreq
                    if entry.priority is not None:
                        d["priority"] = entry.priority
                    if entry.alternates:
                        d["alternate"] = [a["href"] for a in entry.alternates]
                    d.update(
                        news=entry.news,
                        images=entry.images,
                        videos=entry.videos,
                        alternates=entry.alternates,
                        mobile=entry.mobile,
                    )
                yield d

        for d in self.sitemap_filter(as_dicts()):
            entry = d.get("_entry")
            if entry is None or entry.loc != d.get("loc"):
                entry = UrlEntry(str(d["loc"]))
            yield entry
