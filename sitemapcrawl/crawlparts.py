"""What the crawl context holds of the parts above it, named here, low in the house.

The crawl context (``sitemapcrawl.crawlcontext``) is shared by components on every floor:
it keeps each site's share of the stats (:class:`SiteStats`, which the spider's discovery
log also takes).

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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

__all__ = ["SiteStats"]


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
