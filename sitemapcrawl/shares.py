"""Distributed mode: a worker's discovery, as a share another worker can take in.

Workers sharing a crawl through scrapy-redis each read some of the sitemaps. So that the
site gets one report (and link following knows every URL any worker listed), each worker
packs what its discovery recorded when discovery is over (or when it is stopped): per
segment the L0 accumulator, the sampler and the sitemap files' clocks; the link follower's
table of listed URLs and its tally; the discovery log's faults, top-level files and
examples of URLs listed twice; its ``sitemapcrawl/`` stats. One worker (the reporter,
elected in Redis: ``sitemapcrawl.distributed.ReportElection``) takes every other worker's
share into its own crawl context, then samples, follows links and reports as a single
worker would on the whole site. The samplers are bottom-k by keyed hash, so the merged
sample is the one a single worker draws.
"""

from __future__ import annotations

import pickle
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlcontext import CrawlContext
    from sitemapcrawl.linkfollow import LinkFollowers

__all__ = ["LAYOUT", "ShareRefused", "pack", "take"]

#: Bumped when the share's layout changes: a share of another layout is refused. 3: the
#: listed URLs' table is pickled as 256 shards (2: 96-bit XXH3 digests in one flat table;
#: 1: 64-bit BLAKE2b values).
LAYOUT = 3


class ShareRefused(ValueError):
    """A worker's share of another layout (an older sitemapcrawl): never taken in."""


def pack(context: CrawlContext, links: LinkFollowers | None, stats: StatsCollector) -> bytes:
    """This worker's discovery, pickled."""
    segments = {}
    for name, record in context.segments.items():
        record.l0_result = None  # computed again on the merged entries
        segments[name] = record
    log = context.discovery
    share: dict[str, Any] = {
        "layout": LAYOUT,
        "segments": segments,
        "segment_sites": context.segment_sites,
        "site_stats": context.site_stats,
        "stats": {
            key: value
            for key, value in stats.get_stats().items()
            if key.startswith("sitemapcrawl/") and isinstance(value, int)
        },
        "faults": list(log.faults) if log is not None else [],
        "files": dict(log.top_level_files) if log is not None else {},
        "listed_twice": list(log.listed_twice) if log is not None else [],
        "listed": {site: follower.listed_share() for site, follower in links.items()}
        if links is not None
        else {},
    }
    return pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL)


def take(context: CrawlContext, links: LinkFollowers | None, blob: bytes) -> dict[str, int]:
    """Take another worker's share into this worker's context and link followers; return
    its ``sitemapcrawl/`` stats (the report adds them to this worker's)."""
    share = pickle.loads(blob)  # noqa: S301 (the crawl's own Redis, as scrapy-redis's queue)
    if share.get("layout") != LAYOUT:
        raise ShareRefused(
            f"a worker's share in Redis is of layout {share.get('layout')!r}, not {LAYOUT} "
            "(written by an older sitemapcrawl, whose URL keys this version cannot compare "
            "with its own); run every worker of a crawl on one version"
        )
    for name, record in share["segments"].items():
        mine = context.segments.get(name)
        if mine is None:
            context.segments[name] = record
        else:
            mine.update(record)
    context.segment_sites.update(share["segment_sites"])
    for site, counts in share["site_stats"].items():
        context.site_stats.setdefault(site, Counter()).update(counts)
    log = context.discovery
    if log is not None:
        known = {(f.get("code"), f.get("url")) for f in log.faults}
        log.faults.extend(f for f in share["faults"] if (f.get("code"), f.get("url")) not in known)
        for url, entry in share["files"].items():
            log.top_level_files.setdefault(url, entry)
        log.listed_twice.extend(share["listed_twice"])
    if links is not None:
        for site, listed in share["listed"].items():
            links.of_site(site).take_listed(listed)
    return dict(share["stats"])
