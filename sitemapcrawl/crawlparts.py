"""What the crawl context holds of the parts above it, named here, low in the house.

The crawl context (``sitemapcrawl.crawlcontext``) is shared by components on every floor:
it keeps each site's share of the stats (:class:`SiteStats`, which the spider's discovery
log also takes), and of the spider's parts only what the components below read:
the sitemap gate's :class:`SitemapGate` face (the frontier) and the discovery log's
:class:`DiscoveryFindings` (read by the site report). The spider's parts satisfy these
protocols without importing this module's callers.

>>> shares = SiteStats()
>>> shares.set_sites(["https://b.example/", "https://a.example/", "https://b.example/"])
>>> shares.sites
['https://a.example/', 'https://b.example/']
>>> shares.count("https://a.example/", "sitemapcrawl/urls/found_count", 3)
>>> shares.count("https://c.example/", "sitemapcrawl/urls/found_count")  # not a site: no share
>>> dict(shares.by_site["https://a.example/"])
{'sitemapcrawl/urls/found_count': 3}
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.task import SitemapTask

__all__ = ["DiscoveryFindings", "SiteStats", "SitemapGate"]


class SiteStats:
    """Each site's share of the crawl's ``sitemapcrawl/`` stats (same keys), in a crawl
    over several sites; a crawl of one site keeps nothing per site (the common case)."""

    __slots__ = ("by_site", "sites")

    def __init__(self) -> None:
        #: A crawl over several sites: their roots (``https://a.example/``), each reported
        #: apart. Empty for a crawl of one site.
        self.sites: list[str] = []
        #: Per site root, its share of the crawl's ``sitemapcrawl/`` stats (same keys).
        self.by_site: dict[str, Counter[str]] = {}

    def set_sites(self, sites: list[str]) -> None:
        """The crawl spans these sites (two or more): keep each one's stats apart."""
        self.sites = sorted(set(sites))
        self.by_site = {site: Counter() for site in self.sites}

    def count(self, site: str, key: str, value: int = 1) -> None:
        """Add to ``site``'s share of the stat ``key`` (a crawl over several sites only)."""
        counts = self.by_site.get(site)
        if counts is not None:
            counts[key] += value

    def inc(self, stats: StatsCollector, site: str, key: str, value: int = 1) -> None:
        """Add to the crawl's stat ``key``, and to ``site``'s share of it."""
        stats.inc_value(key, value)
        self.count(site, key, value)


class SitemapGate(Protocol):
    """What the components read of the spider's sitemap frontier
    (``sitemapcrawl.spiders.frontier.SitemapFrontier``)."""

    @property
    def pending(self) -> bool:
        """Sitemaps are still held back: discovery is not over even if Scrapy is idle."""
        ...

    def redirect_refusal(
        self, task: SitemapTask, target: str, hops: Sequence[str] = ()
    ) -> str | None:
        """Why a redirect of ``task`` to ``target`` is not followed; None: it is taken."""
        ...


class DiscoveryFindings(Protocol):
    """What the site report reads of the spider's discovery log
    (``sitemapcrawl.spiders.discoverylog.DiscoveryLog``)."""

    @property
    def faults(self) -> list[dict[str, str]]:
        """Each distinct fault logged (code, URL, message; and site in a crawl over several)."""
        ...

    @property
    def top_level_files(self) -> dict[str, dict[str, Any]]:
        """Top-level sitemap files (URL -> how found, status, kind, counts)."""
        ...

    @property
    def listed_twice(self) -> list[dict[str, str]]:
        """Examples of URLs listed by several sitemaps."""
        ...

    def explain(self, site: str, values: Mapping[str, Any], args: CrawlArguments) -> None:
        """Say once why a crawl found little or nothing."""
        ...
