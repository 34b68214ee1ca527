"""The link-following safety net: follow links from the pages the crawl fetches, find the
URLs the sitemaps miss, and record what every fetched page says about itself.

``PageSamplingPipeline`` owns one ``LinkFollower`` per crawl. The pipeline's sampled and
refetched pages are offered to it (:meth:`LinkFollower.observe`), so no page is fetched twice;
then :meth:`LinkFollower.crawl` fetches the frontier through the engine (robots.txt obeyed,
throttling and download slots apply), breadth first, within the depth, page and URL-space
limits. The arithmetic is in ``sitemapcrawl.verify.coverage``.

Modes (argument ``links``, setting ``SITEMAPCRAWL_LINKS``): ``off``; ``fallback`` (crawl from
the home page when no sitemap was read at all); ``sample`` (when pages are fetched anyway,
``sample=on`` or ``pages=refetch``: follow their links and the home page's, to
``SITEMAPCRAWL_LINKS_SAMPLE_DEPTH``); ``full`` (crawl from the home page, to
``SITEMAPCRAWL_LINKS_MAX_DEPTH``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor

from sitemapcrawl import meta
from sitemapcrawl.items import SitemapUrlItem
from sitemapcrawl.listedurls import ListedUrls, SegmentTags
from sitemapcrawl.listedurls import canonical_key as _key
from sitemapcrawl.sitemaps.hosts import InvalidHost, canonical_url
from sitemapcrawl.sitemaps.scope import ScopePolicy, private_address
from sitemapcrawl.sitemaps.seen import SeenUrls
from sitemapcrawl.verify.coverage import (
    CoverageTally,
    PageRecord,
    UrlSpaceGuard,
    coverage_summary,
    noindex_in,
    section_of,
    segment_coverage,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

__all__ = ["LINK_MODES", "LinkFollower", "LinkFollowers"]

LINK_MODES = ("off", "fallback", "sample", "full")
_P = "sitemapcrawl/links/"


def redirect_target(response: Response) -> str | None:
    """Where a 3xx response sends us (``Location`` made absolute, its host canonical), or
    None (none, or a host no browser requests)."""
    if not 300 <= response.status < 400:
        return None
    location = response.headers.get(b"Location")
    if not location:
        return None
    try:
        return canonical_url(urljoin(response.url, location.decode("latin-1")))
    except InvalidHost:
        return None


def over_size_cap(exc: BaseException) -> bool:
    """Whether a fetch failed because its body was over ``download_maxsize`` (Scrapy
    cancels such a download)."""
    return type(exc).__name__ in ("DownloadCancelledError", "CancelledError")


def _page_flags(record: PageRecord) -> list[str]:
    """What makes a page found by links not indexable (why a sitemap may rightly omit it)."""
    flags = []
    if record.noindex is not None:
        flags.append("noindex")
    if record.canonical_elsewhere:
        flags.append("canonical_elsewhere")
    return flags


class LinkFollower:
    """Follow links within the site's scope and budget; keep a record of every page.

    Settings: ``SITEMAPCRAWL_LINKS``, ``SITEMAPCRAWL_LINKS_MAX_DEPTH``,
    ``SITEMAPCRAWL_LINKS_MAX_PAGES``, ``SITEMAPCRAWL_LINKS_SAMPLE_DEPTH``,
    ``SITEMAPCRAWL_LINKS_SAMPLE_PAGES``, ``SITEMAPCRAWL_LINKS_MAX_QUERY_VARIANTS``,
    ``SITEMAPCRAWL_LINKS_NOFOLLOW``, ``SITEMAPCRAWL_LINKS_MAX_PAGE_SIZE``. Meta written on
    its page requests: ``sitemapcrawl_link`` (the depth). Stats: ``sitemapcrawl/links/...``
    (docs/stats.md).
    """

    def __init__(
        self,
        crawler: Crawler,
        mode: str,
        *,
        table: Callable[[], SeenUrls | None] = lambda: None,
        tags: SegmentTags | None = None,
    ) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.mode = mode
        sample = mode == "sample"
        self.max_depth = settings.getint(
            "SITEMAPCRAWL_LINKS_SAMPLE_DEPTH" if sample else "SITEMAPCRAWL_LINKS_MAX_DEPTH"
        )
        self.max_pages = settings.getint(
            "SITEMAPCRAWL_LINKS_SAMPLE_PAGES" if sample else "SITEMAPCRAWL_LINKS_MAX_PAGES"
        )
        self.nofollow = settings.getbool("SITEMAPCRAWL_LINKS_NOFOLLOW")
        #: full: fetch the listed URLs links did not reach, within what is left of the budget
        self.check_unreached = mode == "full" and settings.getbool(
            "SITEMAPCRAWL_LINKS_CHECK_UNREACHED"
        )
        self._listed_urls: list[str] = []
        self.unchecked = 0
        self.max_page_size = settings.getint("SITEMAPCRAWL_LINKS_MAX_PAGE_SIZE")
        self.guard = UrlSpaceGuard(settings.getint("SITEMAPCRAWL_LINKS_MAX_QUERY_VARIANTS"))
        self.extractor = LinkExtractor(canonicalize=True, unique=True)
        self.site = ""
        #: put before the segment of link-only URLs (a crawl over several sites: their site)
        self.segment_prefix = ""
        self.policy: ScopePolicy | None = None
        #: Every URL a sitemap listed (canonical form), fed by the pipeline, each tagged
        #: with its segment, in the reader's own table where it can (``ListedUrls``).
        self.listed = ListedUrls(table, tags if tags is not None else SegmentTags())
        self.tally = CoverageTally("")
        self.records: dict[str, PageRecord] = {}
        self.limits: dict[str, int] = {}
        self.broken_links = 0
        self.fetched = 0
        self.active = False
        self._frontier: deque[PageRecord] = deque()
        self._discovered = SeenUrls()
        self._in_flight = 0
        self._wake = asyncio.Event()

    @property
    def stats(self) -> StatsCollector:
        stats = self.crawler.stats
        assert stats is not None
        return stats

    # -- the sitemap side ---------------------------------------------------------------

    def note_listed_run(self, items: list[SitemapUrlItem], segment_name: str) -> None:
        """A run of one segment's URL items from the sitemaps (each URL once): their
        canonical keys, tagged with the segment, and the tally."""
        urls = [item.url for item in items]
        self.listed.note(urls, segment_name)
        self.tally.add_all(urls)
        if self.check_unreached:
            for url in urls:
                if self.max_pages and len(self._listed_urls) >= self.max_pages:
                    self.unchecked += 1  # more than the whole budget: never checked
                else:
                    self._listed_urls.append(url)

    def listed_share(self) -> dict[str, Any]:
        """What the sitemap side noted, for another worker (``sitemapcrawl.shares``)."""
        listed, names = self.listed.share()
        return {
            "listed": listed,
            "segments": names,
            "tally": self.tally,
            "listed_urls": self._listed_urls,
            "unchecked": self.unchecked,
        }

    def take_listed(self, share: dict[str, Any]) -> None:
        """Add what another worker's follower of the same site noted (:meth:`listed_share`)."""
        self.listed.take(share["listed"], share["segments"])
        self.tally.update(share["tally"])
        for url in share["listed_urls"]:
            if self.max_pages and len(self._listed_urls) >= self.max_pages:
                self.unchecked += 1
            else:
                self._listed_urls.append(url)
        self.unchecked += share["unchecked"]

    def segment_of(self, url: str) -> str | None:
        """The segment that listed ``url`` (looked up for the few pages fetched only)."""
        return self.listed.segment_of(url)

    def segments(self) -> dict[str, dict[str, Any]]:
        """Per sitemap segment: URLs reached by links too, and findings."""
        return segment_coverage(list(self.records.values()), self.listed.counts(), self.segment_of)

    def is_listed(self, url: str) -> bool:
        return url in self.listed

    def was_fetched(self, url: str) -> bool:
        """Whether ``url`` was fetched already (by links, a sample or a refetch)."""
        record = self.records.get(_key(url))
        return record is not None and record.fetched

    # -- planning -----------------------------------------------------------------------

    def start(self, site: str, policy: ScopePolicy, *, home: bool) -> None:
        """Ready to follow links on ``site``; seed its home page when ``home``."""
        self.active = True
        self.site = site
        self.policy = policy
        self.tally.site = site
        if home:
            self._discover(site, depth=0, linked=True)

    def planned(self, url: str, via: str) -> None:
        """A page the pipeline will fetch itself (a sample or a refetch): never ours to fetch."""
        key = _key(url)
        self._discovered.add(key)
        if key not in self.records:
            self.records[key] = PageRecord(url, 0, False, self.is_listed(url), via=via)

    def _limit(self, name: str, count: int = 1) -> None:
        self.limits[name] = self.limits.get(name, 0) + count
        self.stats.inc_value(_P + f"limit_count/{name}", count)

    def _discover(self, url: str, *, depth: int, linked: bool) -> None:
        """A link (or a redirect's target) to ``url`` found at ``depth``."""
        try:
            url = canonical_url(url)  # one spelling of the host for every check and request
        except InvalidHost:
            self.stats.inc_value(_P + "invalid_host_count")
            return
        key = _key(url)
        record = self.records.get(key)
        if record is not None:
            if linked and not record.linked:
                record.linked = True
                if record.location is not None:  # its redirect target is reached too
                    self._discover(record.location, depth=depth + 1, linked=True)
            return
        if not self._discovered.add(key):
            return  # refused before, counted then
        assert self.policy is not None
        if self.policy.reason(url, self.site, True) is not None:
            self.stats.inc_value(_P + "out_of_scope_count")
            return
        if private_address(url, self.site):
            self.stats.inc_value(_P + "private_address_count")
            return
        refused = self.guard.admit(url)
        if refused is not None:
            self._limit(refused)
            return
        if depth > self.max_depth:
            self._limit("max_depth")
            return
        if self.max_pages and self.fetched + len(self._frontier) >= self.max_pages:
            # the budget is spoken for: keep no record (memory stays O(max_pages))
            self._limit("max_pages")
            return
        self.stats.inc_value(_P + "discovered_count")
        record = PageRecord(url, depth, linked, self.is_listed(url))
        self.records[key] = record
        self._frontier.append(record)
        self._wake.set()

    # -- pages --------------------------------------------------------------------------

    def observe(self, url: str, response: Response, via: str) -> None:
        """What a fetched page says: status, redirect target, canonical, noindex; its links
        join the frontier (one click deeper)."""
        key = _key(url)
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = PageRecord(url, 0, False, self.is_listed(url), via=via)
        record.fetched = True
        record.status = response.status
        record.content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        self.stats.inc_value(_P + f"status_count/{response.status}")
        checking = record.via == "check"  # a listed URL links did not reach: no links
        if 300 <= response.status < 400:
            record.location = redirect_target(response)
            if record.location is not None and not checking:
                self._discover(record.location, depth=record.depth + 1, linked=record.linked)
            return
        if record.linked and record.depth and response.status >= 400:  # not the home page
            self.broken_links += 1
        if not 200 <= response.status < 300:
            return
        header = b", ".join(response.headers.getlist(b"X-Robots-Tag")).decode("latin-1")
        if header and noindex_in(header):
            record.noindex = "header"
        if not isinstance(response, HtmlResponse):
            self.stats.inc_value(_P + "not_html_count")
            return
        robots_meta = " ".join(
            response.xpath("//meta[translate(@name,'ROBTS','robts')='robots']/@content").getall()
        )
        if record.noindex is None and noindex_in(robots_meta):
            record.noindex = "meta"
        canonical = response.xpath(
            "//link[contains(concat(' ',translate(@rel,'CANOIL','canoil'),' '),"
            "' canonical ')]/@href"
        ).get()
        if canonical and canonical.strip():
            record.canonical = urljoin(response.url, canonical.strip())
        if checking:
            return
        if self.nofollow and "nofollow" in robots_meta.lower():
            self.stats.inc_value(_P + "nofollow_pages_count")
            return
        for link in self.extractor.extract_links(response):
            if self.nofollow and link.nofollow:
                self.stats.inc_value(_P + "nofollow_count")
                continue
            self._discover(link.url, depth=record.depth + 1, linked=True)

    def failed(self, url: str, exc: BaseException, via: str) -> None:
        """A fetch that gave no response: robots.txt refused it, the size cap, an error."""
        key = _key(url)
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = PageRecord(url, 0, False, self.is_listed(url), via=via)
        if isinstance(exc, IgnoreRequest):
            record.error = "robots"
            self.stats.inc_value(_P + "robots_count")
        elif over_size_cap(exc):
            record.error = "page_size"
            self._limit("page_size")
        else:
            record.error = type(exc).__name__
            self.stats.inc_value(_P + f"failed_count/{record.error}")

    # -- the crawl ----------------------------------------------------------------------

    async def crawl(self, engine: ExecutionEngine, workers: int, proxy: dict[str, Any]) -> None:
        """Fetch the frontier, breadth first, until it is empty or the page budget is spent."""

        async def worker() -> None:
            while True:
                if self._frontier:
                    record = self._frontier.popleft()
                    if record.fetched or record.error is not None:
                        continue  # a refetch or a sample got it meanwhile: fetched once
                    if self.max_pages and self.fetched >= self.max_pages:
                        self._limit("max_pages", 1 + len(self._frontier))
                        self._frontier.clear()
                        continue
                    self.fetched += 1
                    self._in_flight += 1
                    try:
                        await self._fetch(engine, record, proxy)
                    finally:
                        self._in_flight -= 1
                        self._wake.set()
                elif self._in_flight == 0:
                    return
                else:
                    self._wake.clear()
                    await self._wake.wait()

        await asyncio.gather(*(worker() for _ in range(max(1, workers))))
        if self.check_unreached:
            self._plan_checks()
            await asyncio.gather(*(worker() for _ in range(max(1, workers))))
        if self.limits:
            logger.warning(
                "Link following stopped by %(limits)s (URLs not fetched: %(counts)s)",
                {"limits": ", ".join(sorted(self.limits)), "counts": self.limits},
            )

    def _plan_checks(self) -> None:
        """The listed URLs no link reached (orphans, or dead): fetch them with what is left
        of the page budget, to tell live orphans from dead entries."""
        left = self.max_pages - self.fetched if self.max_pages else len(self._listed_urls)
        for url in self._listed_urls:
            key = _key(url)
            if key in self.records:
                continue
            if left <= 0:
                self.unchecked += 1
                continue
            left -= 1
            record = self.records[key] = PageRecord(url, 0, False, True, via="check")
            self._frontier.append(record)
        self._listed_urls = []
        if self.unchecked:
            self.stats.inc_value(_P + "unchecked_count", self.unchecked)

    async def _fetch(
        self, engine: ExecutionEngine, record: PageRecord, proxy: dict[str, Any]
    ) -> None:
        request = Request(
            record.url,
            meta={
                meta.LINK: record.depth,
                "handle_httpstatus_all": True,
                "download_maxsize": self.max_page_size,
                "download_warnsize": 0,
                # a page that fails after retries is a finding of the coverage, not an error
                "give_up_log_level": "WARNING",
                **proxy,
            },
            dont_filter=True,
            priority=-30,
        )
        self.stats.inc_value(_P + "requested_count")
        try:
            response = await engine.download_async(request)
        except Exception as exc:  # noqa: BLE001 - every failure is one counted outcome
            self.failed(record.url, exc, "links")
            return
        try:
            self.observe(record.url, response, "links")
        except Exception as exc:  # noqa: BLE001 - one unreadable page must not end the crawl
            record.error = type(exc).__name__
            self.stats.inc_value(_P + f"failed_count/{record.error}")
            logger.warning(
                "%(url)s: page not readable for links (%(error)s)",
                {"url": record.url, "error": exc},
            )

    # -- results ------------------------------------------------------------------------

    def link_only_items(self) -> list[SitemapUrlItem]:
        """The URLs links reached that no sitemap lists, as items (each once)."""
        items = [
            SitemapUrlItem(
                record.url,
                segment=self.segment_prefix + section_of(record.url),
                depth=record.depth,
                found_via="links",
                flags=_page_flags(record),
            )
            for record in self.records.values()
            if record.reachable and not record.in_sitemap
        ]
        self.stats.inc_value(_P + "emitted_count", len(items))  # (one follower per site)
        return items

    def summary(self) -> dict[str, Any]:
        """The report's ``coverage`` section."""
        return coverage_summary(
            self.tally,
            list(self.records.values()),
            mode=self.mode,
            limits=self.limits,
            broken_links=self.broken_links,
            max_depth=self.max_depth,
            max_pages=self.max_pages,
            pages_fetched=self.fetched,
            unchecked=self.unchecked if self.check_unreached else None,
        )


class LinkFollowers:
    """The crawl's link followers: one per site ("" for a crawl of one site; in a crawl
    over several, each site has its own page budget and coverage), all in one mode (the
    ``links`` argument, else ``SITEMAPCRAWL_LINKS``)."""

    def __init__(
        self,
        crawler: Crawler,
        mode: str,
        sites: list[str],
        *,
        table: Callable[[], SeenUrls | None] = lambda: None,
    ) -> None:
        self._crawler = crawler
        self.mode = mode
        self._sites = sites
        self._followers: dict[str, LinkFollower] = {}
        #: the reader's de-duplication table, which the followers tag (None: a table of
        #: their own), and the segments' tags in it
        self._table = table
        self._tags = SegmentTags()

    def of_site(self, site: str) -> LinkFollower:
        """``site``'s follower ("" in a crawl of one site), created on first use."""
        found = self._followers.get(site)
        if found is None:
            found = self._followers[site] = LinkFollower(
                self._crawler, self.mode, table=self._table, tags=self._tags
            )
        return found

    def items(self) -> list[tuple[str, LinkFollower]]:
        """Every follower made so far, by site."""
        return list(self._followers.items())

    def get(self, site: str) -> LinkFollower | None:
        """``site``'s follower when it follows links."""
        found = self._followers.get(site)
        return found if found is not None and found.active else None

    def of_url(self, url: str) -> LinkFollower | None:
        """The follower told about the page ``url``, when links are followed."""
        return self.get(urljoin(url, "/") if self._sites else "")

    def active(self) -> list[LinkFollower]:
        """The followers that follow links."""
        return [follower for follower in self._followers.values() if follower.active]
