"""State across runs, what the run's parts share: the run's facts and the segments' standings.

``CrawlState`` builds its parts (refetch decisions, page observations, the verdicts across
runs) from these two, not from itself: :class:`RunFacts`, fixed when the run begins (the
site, the run, the policy, the file), and :class:`SegmentStandings`, the standing verdicts
the previous runs left with this run's bookkeeping per segment, which the parts read and
add to.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.fetches import FetchStore
from sitemapcrawl.incremental.segmentrun import SegmentRun, audited_url_runs
from sitemapcrawl.incremental.store import StateStore
from sitemapcrawl.verify.refetch.policy import Policy

if TYPE_CHECKING:
    from collections.abc import Callable

    from sitemapcrawl.incremental.store import SegmentState

__all__ = ["RunFacts", "SegmentStandings", "one_site"]


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the run's parts read of the run, fixed when it begins."""

    origin: str
    run_id: int
    #: when the run began (its clock until a URL gives the server's)
    started: dt.datetime
    #: ``SITEMAPCRAWL_SAMPLE_SEED``: the seeded draws
    seed: str
    policy: Policy
    store: StateStore
    fetches: FetchStore


def one_site(segment: str) -> str:
    """``site_of`` for a crawl of one site: every segment is the site's."""
    return ""


class SegmentStandings:
    """Each segment's standing verdict (as the previous runs left it), this run's
    bookkeeping for it, and the site it belongs to."""

    def __init__(self, segments: dict[str, SegmentState]) -> None:
        self.segments = segments
        self.by_segment: defaultdict[str, SegmentRun] = defaultdict(SegmentRun)
        #: the site a segment belongs to (a crawl over several sites: set by the spider);
        #: segments pool their counts within their site only
        self.site_of: Callable[[str], str] = one_site

    def shift(self, segment: str) -> float | None:
        """A TZ_SHIFT segment's offset in seconds (lastmod minus the truth), else None."""
        standing = self.segments.get(segment)
        if standing is None or standing.verdict != "TZ_SHIFT":
            return None
        value = standing.counts.get("tz_shift_s")
        return float(value) if value is not None else None

    def utc_offset(self, segment: str) -> float | None:
        """The UTC offset the segment's pages write their times in, when known."""
        standing = self.segments.get(segment)
        value = standing.counts.get("utc_offset_s") if standing is not None else None
        return float(value) if value is not None else None

    def cluster_moves(self, segment: str, centre: Any) -> int | None:
        """Consecutive fetches on which the segment's lastmod cluster moved, this one
        included; None without an earlier fetch to compare with."""
        standing = self.segments.get(segment)
        last = standing.counts.get("cluster_centre") if standing is not None else None
        if last is None or centre is None:
            return None
        if str(centre) == last:
            return 0
        return int(standing.counts.get("cluster_moves", 0)) + 1 if standing else 1

    def pools_with(self, segment: str, name: str) -> bool:
        """Whether ``name``'s counts are in ``segment``'s pool: itself, or a segment of its
        site whose standing verdict is PROVISIONAL or TRUSTED."""
        if name == segment:
            return True
        standing = self.segments.get(name)
        return (
            standing is not None
            and standing.verdict in ("PROVISIONAL", "TRUSTED")
            and self.site_of(name) == self.site_of(segment)
        )

    def standing_pool(self, segment: str) -> tuple[float, float, float] | None:
        """The summed (TP, N_unch, audited URL-runs) of ``segment``'s site's PROVISIONAL and TRUSTED
        segments as they stood after the previous run, when there are several
        (``SegmentJudgement._pool``)."""
        members = [
            standing.counts
            for name, standing in self.segments.items()
            if self.pools_with(segment, name)
        ]
        if len(members) < 2:
            return None
        return (
            sum(float(c.get("tp", 0.0)) for c in members),
            sum(float(c.get("n_unch", 0.0)) for c in members),
            sum(audited_url_runs(c) for c in members),
        )
