"""The crawl context: what one crawl's spider, middlewares, pipelines and report share.

One ``CrawlContext`` per crawler (``crawl_context(crawler)``) holds what the spider knows
(its validated arguments, what its discovery log found, the frontier's gate, the scope
policies), a ``SegmentRecord`` per segment (the streaming L0 accumulator fed by
``SitemapLastmodMiddleware``, the sampler and sampled pages of ``PageSamplingPipeline``, the
sitemap responses' own clock), the state file and the link followers. Components read the
spider's side from here, never from the spider's attributes. Of the spider's parts it
holds only what the components read (``sitemapcrawl.crawlparts``); the site reports keep
their own registry (``SiteReports.for_crawler``).

A crawl over several sites (``sitemap_urls`` on more than one host) also keeps each site's
share of the ``sitemapcrawl/`` stats here (``SiteStats``), so that each site gets its own
report.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from sitemapcrawl.crawlparts import SiteStats
from sitemapcrawl.sitemaps.dates import parse_feed_date
from sitemapcrawl.sitemaps.scope import ScopePolicy
from sitemapcrawl.verify.dispersion import SegmentL0, SegmentL0Accumulator
from sitemapcrawl.verify.sampling import SegmentSampler

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlparts import DiscoveryFindings, SitemapGate
    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.linkfollow import LinkFollowers
    from sitemapcrawl.sitemaps.seen import SeenUrls
    from sitemapcrawl.spiders.arguments import CrawlArguments


__all__ = ["CrawlContext", "PendingReport", "SegmentRecord", "crawl_context"]

#: Our clock and the site's disagree when they are further apart than this.
CLOCK_SKEW = dt.timedelta(minutes=5)


@dataclass(slots=True)
class SegmentRecord:
    """Everything known about one segment during the crawl."""

    name: str
    #: the site root it belongs to in a crawl over several sites ("" for one site)
    site: str = ""
    accumulator: SegmentL0Accumulator = field(default_factory=SegmentL0Accumulator)
    sampler: SegmentSampler | None = None
    urls: int = 0
    news: bool = False
    t_ref: dt.datetime | None = None
    clock_skew_seconds: float | None = None
    sitemap_last_modified: dt.datetime | None = None
    index_lastmod: dt.datetime | None = None
    sitemaps: set[str] = field(default_factory=set)
    samples: list[dict[str, Any]] = field(default_factory=list)
    #: only the fixed panel was fetched, for the cross-run score (no L1 sample due)
    panel_only: bool = False
    #: the L0 metrics, once discovery is over (:meth:`l0`)
    l0_result: SegmentL0 | None = None

    def l0(self, started: dt.datetime) -> SegmentL0:
        """The segment's L0 metrics, computed once: discovery is over, and the sampling
        plan, escalation and the report all read them. ``started``: the reference time
        when no sitemap response gave one."""
        if self.l0_result is None:
            self.l0_result = self.accumulator.result(
                self.t_ref or started,
                sitemap_last_modified=self.sitemap_last_modified,
                index_lastmod=self.index_lastmod,
                news=self.news,
            )
        return self.l0_result

    def update(self, other: SegmentRecord) -> None:
        """Take in what another worker recorded of this segment during discovery (its
        sitemap files, lastmods, sampler): distributed mode's one report per site."""
        self.accumulator = SegmentL0Accumulator.merged([self.accumulator, other.accumulator])
        if other.sampler is not None:
            if self.sampler is None:
                self.sampler = other.sampler
            else:
                self.sampler.update(other.sampler)
        self.urls += other.urls
        self.news = self.news or other.news
        if self.t_ref is None or (other.t_ref is not None and other.t_ref < self.t_ref):
            self.t_ref, self.clock_skew_seconds = other.t_ref, other.clock_skew_seconds
        self.sitemap_last_modified = _latest(
            self.sitemap_last_modified, other.sitemap_last_modified
        )
        self.index_lastmod = _latest(self.index_lastmod, other.index_lastmod)
        self.sitemaps |= other.sitemaps
        self.l0_result = None

    def observe_sitemap(self, response: Response, index_lastmod: str | None) -> None:
        """Record a sitemap file of this segment: the server's "now" and its Last-Modified."""
        if response.url in self.sitemaps:
            return
        self.sitemaps.add(response.url)
        ours = dt.datetime.now(dt.UTC)
        date = _header_date(response, b"Date")
        if self.t_ref is None:
            server_now = ours
            if date is not None:
                age = response.headers.get(b"Age")
                try:
                    seconds = int(age) if age is not None else 0
                except ValueError:
                    seconds = 0
                server_now = date - dt.timedelta(seconds=max(seconds, 0))
                self.clock_skew_seconds = round((date - ours).total_seconds(), 1)
            self.t_ref = server_now
        modified = _header_date(response, b"Last-Modified")
        if modified is not None and (
            self.sitemap_last_modified is None or modified > self.sitemap_last_modified
        ):
            self.sitemap_last_modified = modified
        if index_lastmod:
            parsed = parse_feed_date(index_lastmod)
            if parsed is not None and parsed.value is not None:
                self.index_lastmod = parsed.value


def _latest(a: dt.datetime | None, b: dt.datetime | None) -> dt.datetime | None:
    return b if a is None else a if b is None else max(a, b)


def _header_date(response: Response, name: bytes) -> dt.datetime | None:
    raw = response.headers.get(name)
    if not raw:
        return None
    parsed = parse_feed_date(raw.decode("latin-1"))
    return parsed.value if parsed is not None else None


@dataclass(slots=True)
class PendingReport:
    """The site report of a crawl that stops early (``max_urls``), as the spider yields it.

    The sampling pipeline builds the report when this reaches it: after the URL items the
    spider yielded before it, which by then have been recorded by the lastmod middleware
    and decided by the pipeline, wherever batching held them. ``site``: in a crawl over
    several sites, the site root it reports on (one is yielded per site).
    """

    site: str = ""


class CrawlContext:
    """What one crawl shares between its components (``crawl_context(crawler)``)."""

    def __init__(self) -> None:
        self.segments: dict[str, SegmentRecord] = {}
        self.started = dt.datetime.now(dt.UTC)
        #: The spider's validated arguments (None before the crawl starts, on a bad
        #: argument, or with a spider that is not sitemapcrawl's).
        self.arguments: CrawlArguments | None = None
        #: Why the spider refused its arguments (the crawl then stops at once).
        self.argument_error: str | None = None
        #: The spider's faults, top-level files and URLs listed twice (its discovery log).
        self.discovery: DiscoveryFindings | None = None
        #: The spider's sitemap gate (sitemaps it still holds back, redirects it refuses).
        self.frontier: SitemapGate | None = None
        #: The state file, when the spider opened one (``sitemapcrawl.incremental``).
        self.state: CrawlState | None = None
        #: The link followers, per site (set by the sampling pipeline).
        self.links: LinkFollowers | None = None
        #: The spider's de-duplication table (every URL emitted, by its reader key), which
        #: the link followers tag with the segment of each URL they note: one table for both.
        self.seen: SeenUrls | None = None
        #: The site reports exist (``SiteReports.for_crawler``), to be built once discovery,
        #: sampling and links are over (created by the sampling pipeline: without it, a
        #: crawl stopped early gets none).
        self.reporting = False
        #: The spider callback that emits the site reports as the feed's last items.
        self.report_callback: Callable[[Response], Iterable[Any]] | None = None
        self._policies: dict[str, ScopePolicy] = {}
        #: Each site's share of the stats, in a crawl over several sites.
        self.site_shares = SiteStats()
        #: Distributed mode: the other workers' ``sitemapcrawl/`` stats, taken in by the
        #: worker that reports (``sitemapcrawl.shares``); the report adds them to its own.
        self.peer_stats: Counter[str] = Counter()
        #: Distributed mode: another worker reports for the crawl (this one emits none).
        self.reported_elsewhere = False
        #: Segments whose name does not start with their site (a child sitemap on another
        #: host names its segment by its URL): segment name -> site root.
        self.segment_sites: dict[str, str] = {}

    @property
    def sites(self) -> list[str]:
        """A crawl over several sites: their roots (``https://a.example/``), each reported
        apart. Empty for a crawl of one site (the common case: nothing is kept per site)."""
        return self.site_shares.sites

    @property
    def site_stats(self) -> dict[str, Counter[str]]:
        """Per site root, its share of the crawl's ``sitemapcrawl/`` stats (same keys)."""
        return self.site_shares.by_site

    @property
    def discovery_pending(self) -> bool:
        """The spider still holds sitemaps back: discovery is not over even if idle."""
        return self.frontier is not None and self.frontier.pending

    def sampling(self, settings: BaseSettings) -> bool:
        """Whether pages are sampled: the spider's ``sample`` argument, else the setting."""
        chosen = self.arguments.sample if self.arguments is not None else None
        return settings.getbool("SITEMAPCRAWL_SAMPLE_ENABLED") if chosen is None else chosen

    def pages_fetched(self, settings: BaseSettings) -> bool:
        """Whether this crawl fetches pages anyway (samples, or ``pages=refetch``)."""
        args = self.arguments
        return self.sampling(settings) or (args is not None and args.fetch_pages)

    def scope_policy(self, site: str) -> ScopePolicy:
        """The scope policy URLs of ``site`` are judged by (the ``scope`` argument's)."""
        policy = self._policies.get(site)
        if policy is None:
            assert self.arguments is not None
            policy = self._policies[site] = ScopePolicy(self.arguments.scope, site)
        return policy

    def set_sites(self, sites: list[str]) -> None:
        """The crawl spans these sites (two or more): keep each one's stats apart."""
        self.site_shares.set_sites(sites)

    def count(self, site: str, key: str, value: int = 1) -> None:
        """Add to ``site``'s share of the stat ``key`` (a crawl over several sites only)."""
        self.site_shares.count(site, key, value)

    def inc(self, stats: StatsCollector, site: str, key: str, value: int = 1) -> None:
        """Add to the crawl's stat ``key``, and to ``site``'s share of it."""
        self.site_shares.inc(stats, site, key, value)

    def site_of(self, segment: str) -> str:
        """The site root a segment belongs to ("" in a crawl of one site)."""
        if not self.sites:
            return ""
        known = self.segment_sites.get(segment)
        if known is not None:
            return known
        parts = urlsplit(segment)
        root = f"{parts.scheme}://{parts.netloc}/"
        return root if root in self.site_stats else ""

    def segment(self, name: str) -> SegmentRecord:
        record = self.segments.get(name)
        if record is None:
            record = self.segments[name] = SegmentRecord(name, self.site_of(name))
        return record


_REGISTRY: WeakKeyDictionary[Crawler, CrawlContext] = WeakKeyDictionary()


def crawl_context(crawler: Crawler) -> CrawlContext:
    """The crawl's ``CrawlContext``, created on first use."""
    found = _REGISTRY.get(crawler)
    if found is None:
        found = _REGISTRY[crawler] = CrawlContext()
    return found
