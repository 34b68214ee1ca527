"""Items in the order a CSV user wants to read their columns (feeds keep declaration order)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["SiteReport", "SitemapUrlBatch", "SitemapUrlItem", "UrlChange"]


@dataclass(slots=True)
class SitemapUrlItem:
    """One page URL and everything its sitemap said about it.

    ``lastmod`` is ISO 8601 UTC (``2024-05-01T10:00:00Z``) or None; ``lastmod_raw`` the text
    as written; ``lastmod_precision`` year/month/day/minute/second/fraction; ``lastmod_flags``
    any of assumed_utc, date_only, future, invalid, sentinel. ``sitemap`` is the file that
    listed the URL, ``sitemap_lastmod`` the ``<lastmod>`` its parent index gave that file,
    ``segment`` the child sitemap (its path) or, for a site with one flat sitemap, the URL's
    group by path shape: its first path component (``/blog/``), ``/{year}/`` for date
    paths, ``/`` for pages at the root and for groups under ``SITEMAPCRAWL_SEGMENT_MIN_URLS``
    (after the site, ``https://a.example/blog/``, when ``sitemap_urls`` span several sites).
    ``depth`` is 0 for a top-level sitemap, 1 for an index's child…
    ``found_via`` says how the top-level sitemap was found: robots, guessed or given; or
    ``links`` for a URL no sitemap lists that the link follower reached (then ``sitemap``
    is empty, ``segment`` is the URL's first path component and ``depth`` its link depth).
    ``flags``: relative_loc (resolved against the sitemap URL), beyond_protocol_limit
    (past the 50,000th URL of its file), fragment_dropped (listed with a ``#fragment``: the
    page is the URL without it). ``refetch`` and ``refetch_reason`` are set on
    incremental runs (``since``) only: whether the page should be fetched again and why
    (see docs/output.md); None otherwise. ``status`` is set when the state file is in
    use: ``new`` (never listed before), ``moved`` (its lastmod changed since the last run
    that listed it) or ``unchanged``; None without the state file (docs/output.md, "What
    changed since the last run").
    """

    url: str
    lastmod: str | None = None
    lastmod_raw: str | None = None
    lastmod_precision: str | None = None
    lastmod_flags: list[str] = field(default_factory=list)
    changefreq: str | None = None
    priority: float | None = None
    sitemap: str = ""
    sitemap_lastmod: str | None = None
    segment: str = ""
    depth: int = 0
    found_via: str = ""
    news: list[dict[str, Any]] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    videos: list[dict[str, Any]] = field(default_factory=list)
    alternates: list[dict[str, Any]] = field(default_factory=list)
    mobile: bool = False
    flags: list[str] = field(default_factory=list)
    refetch: bool | None = None
    refetch_reason: str | None = None
    status: str | None = None


@dataclass(slots=True)
class SitemapUrlBatch:
    """Consecutive URL items of one sitemap response, handed on as one Scrapy item.

    Scrapy spends about 45 µs of CPU on every item it carries from a callback to the feed
    (an asyncio task per item and per ``item_scraped`` receiver, the pipeline chain): more
    than reading the sitemap entry itself. ``SitemapBatchMiddleware`` therefore groups the
    spider's ``SitemapUrlItem`` into batches of ``SITEMAPCRAWL_ITEM_BATCH_SIZE`` as they
    leave the callback; sitemapcrawl's feed exporters write one record per URL, as before.
    Spider middlewares (ordered below 1010), item pipelines and ``item_scraped`` receivers
    see batches: iterate one (``for item in batch``) to get its URL items, or set
    ``SITEMAPCRAWL_ITEM_BATCH_SIZE = 1`` to get one Scrapy item per URL.
    """

    items: list[SitemapUrlItem] = field(default_factory=list)

    def __iter__(self) -> Iterator[SitemapUrlItem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(slots=True)
class UrlChange:
    """A change of the site's list of URLs that no URL item tells, written under
    ``-a emit=changes`` after the URL items and before the site report: ``status`` is
    ``changed`` (our own fetch on this run found the page's content changed: known only
    after its URL item was written), ``removed`` (no longer listed, in a sitemap read
    whole) or ``unconfirmed`` (not listed because its sitemap was not read: it failed, or
    a limit left it for the next run). ``lastmod`` and ``segment`` are the URL's last ones,
    ``last_seen`` the server clock of the last run that listed it (this run's, for
    ``changed``).
    """

    url: str
    status: str
    lastmod: str | None = None
    segment: str = ""
    last_seen: str | None = None


@dataclass(slots=True)
class SiteReport:
    """One per crawl, after the URL items: what was found, and whether lastmod can be trusted
    (one per site, each with its own share, when ``sitemap_urls`` span several sites).

    ``sitemaps``: how the top-level sitemaps were found and how many files were read or
    failed, with ``files``: each top-level file, how it was found and what it held;
    ``urls``: URL counts; ``limits`` and ``errors``: the limits hit and the faults met (from
    the ``sitemapcrawl/`` stats); ``segments``: per segment its URL count, the L0
    dispersion metrics, the sampled pages (when sampling ran), the verdict and its reason;
    ``site_verdict``: the verdict covering most URLs and the share of URLs whose segment's
    lastmod may be used; ``sample``: the sampling budget and what was fetched; ``incremental``: on
    incremental runs, the ``since`` time and the refetch decisions by reason and segment;
    ``state``: the SQLite state file used (path, run number), empty when state is off;
    ``coverage``: when links were followed, the two-way coverage between sitemaps and links
    (docs/output.md), else empty; ``faults``: each distinct fault logged during the crawl
    (``code``, ``url``, ``message``), the first 1,000; ``changes``: with the state file,
    what changed in the site's list of URLs since its last finished run (URLs added, moved,
    removed with their tombstones, unconfirmed where a sitemap was not read whole, pages our
    fetches saw change), else empty.
    """

    origin: str
    generated_at: str
    sitemaps: dict[str, Any] = field(default_factory=dict)
    urls: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    segments: list[dict[str, Any]] = field(default_factory=list)
    site_verdict: dict[str, Any] = field(default_factory=dict)
    sample: dict[str, Any] = field(default_factory=dict)
    incremental: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)
    faults: list[dict[str, str]] = field(default_factory=list)
    changes: dict[str, Any] = field(default_factory=dict)
