"""State across runs: what changed in a site's list of URLs since its last finished run.

URLs **added** (never listed before), **moved** (listed before, their lastmod changed),
**removed** (listed by the previous finished run, or a later one, and not by this one, in a
sitemap this run read whole: a tombstone with the last lastmod, segment and sitemap, and
when the URL was last seen) and **unconfirmed** (not listed on this run because the
sitemap that listed them was not read whole: it failed, was cut, or was not reached; they
are not removed, the sitemaps are named, and the next runs carry them until one reads
their sitemap whole). Pages whose content our fetches saw change
are the report's ``changed`` (docs/output.md, "The site report").
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sitemapcrawl.incremental.store import StateStore

__all__ = ["MAX_EXAMPLES", "run_changes"]

#: Tombstones listed per report (their count is always whole).
MAX_EXAMPLES = 50


def run_changes(
    store: StateStore,
    origin: str,
    run_id: int,
    previous_run: int | None,
    *,
    read_whole: set[str],
    only: set[str] | None = None,
) -> dict[str, Any]:
    """The changes of ``origin``'s URL list on run ``run_id`` (its URL rows merged), of the
    segments in ``only`` when given; ``previous_run``: the site's last finished run before
    it (None: nothing to compare with: every URL is added, none removed); ``read_whole``:
    the sitemaps read whole on this run."""
    carried: set[str] = set()
    if previous_run is not None:  # its unconfirmed URLs wait for their sitemap to be read
        previous = store.run_report(previous_run)
        for report in previous if isinstance(previous, list) else [previous]:
            if isinstance(report, dict):
                carried.update((report.get("changes") or {}).get("unconfirmed_sitemaps", {}))
    by_segment, left = store.run_changes(
        origin, run_id, previous_run if previous_run is not None else run_id, carried
    )
    totals: Counter[str] = Counter()
    for segment, counts in by_segment.items():
        if only is None or segment in only:
            totals.update(counts)
    removed: list[dict[str, Any]] = []
    removed_count = 0
    unconfirmed: Counter[str] = Counter()
    for url, segment, sitemap, lastmod_raw, last_seen in left:
        if only is not None and segment not in only:
            continue
        if sitemap not in read_whole:
            unconfirmed[sitemap] += 1
            continue
        removed_count += 1
        if len(removed) < MAX_EXAMPLES:
            removed.append(
                {
                    "url": url,
                    "lastmod": lastmod_raw,
                    "segment": segment,
                    "sitemap": sitemap,
                    "last_seen": last_seen,
                }
            )
    return {
        "since_run": previous_run,
        "added": totals["added"],
        "moved": totals["moved"],
        "removed": removed_count,
        "unconfirmed": sum(unconfirmed.values()),
        "removed_urls": removed,
        # every one: the next run carries their URLs until it reads the sitemap whole
        "unconfirmed_sitemaps": dict(unconfirmed.most_common()),
    }
