"""What the lastmod middleware and the sampling pipeline share during one crawl.

One ``SiteVerification`` per crawler holds a ``SegmentRecord`` per segment: the streaming L0
accumulator fed by ``SitemapLastmodMiddleware``, the sampler fed by ``PageSamplingPipeline``,
the sitemap responses' own clock (``Date`` minus ``Age``) and the sampled pages' results.

A crawl over several sites (``sitemap_urls`` on more than one host) also keeps each site's
share of the ``sitemapcrawl/`` stats here, so that each site gets its own report.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from sitemapcrawl.sitemaps.dates import parse_feed_date
from sitemapcrawl.verify.sampling import SegmentSampler
from sitemapcrawl.verify.scoring import SegmentL0Accumulator

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.state import CrawlState


__all__ = ["PendingReport", "SegmentRecord", "SiteVerification", "site_verification"]

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


class SiteVerification:
    """The per-crawl segment records (``site_verification(crawler)`` gives the crawl's one)."""

    def __init__(self) -> None:
        self.segments: dict[str, SegmentRecord] = {}
        self.started = dt.datetime.now(dt.UTC)
        #: Set by the sampling pipeline; the spider's ``site_report`` callback calls it
        #: (with each site root of ``sites``, or "" for a crawl of one site).
        self.report_builder: Callable[[str], Any] | None = None
        #: Set by the sampling pipeline: the link-only URL items, yielded before the report.
        self.link_items: Callable[[], list[Any]] | None = None
        #: Set by the sampling pipeline: the report as it stands, for a crawl that stops
        #: before its end (``max_urls``): the spider yields a ``PendingReport`` before
        #: closing, which the pipeline turns into the report with this.
        self.closing_report: Callable[[PendingReport], Any] | None = None
        #: The state file, when the spider opened one (``sitemapcrawl.state``).
        self.state: CrawlState | None = None
        #: A crawl over several sites: their roots (``https://a.example/``), each reported
        #: apart. Empty for a crawl of one site (the common case: nothing is kept per site).
        self.sites: list[str] = []
        #: Per site root, its share of the crawl's ``sitemapcrawl/`` stats (same keys).
        self.site_stats: dict[str, Counter[str]] = {}
        #: Segments whose name does not start with their site (a child sitemap on another
        #: host names its segment by its URL): segment name -> site root.
        self.segment_sites: dict[str, str] = {}

    def set_sites(self, sites: list[str]) -> None:
        """The crawl spans these sites (two or more): keep each one's stats apart."""
        self.sites = sorted(set(sites))
        self.site_stats = {site: Counter() for site in self.sites}

    def count(self, site: str, key: str, value: int = 1) -> None:
        """Add to ``site``'s share of the stat ``key`` (a crawl over several sites only)."""
        counts = self.site_stats.get(site)
        if counts is not None:
            counts[key] += value

    def inc(self, stats: StatsCollector, site: str, key: str, value: int = 1) -> None:
        """Add to the crawl's stat ``key``, and to ``site``'s share of it."""
        stats.inc_value(key, value)
        self.count(site, key, value)

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


_REGISTRY: WeakKeyDictionary[Crawler, SiteVerification] = WeakKeyDictionary()


def site_verification(crawler: Crawler) -> SiteVerification:
    """The crawl's ``SiteVerification``, created on first use."""
    found = _REGISTRY.get(crawler)
    if found is None:
        found = _REGISTRY[crawler] = SiteVerification()
    return found
