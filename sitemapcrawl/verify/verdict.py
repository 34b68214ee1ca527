"""Lastmod verification: the static verdict, and the case its rules read.

docs/verification.md, "Segments and verdicts" and "Static verdict". :class:`Verdict` is a
segment's verdict with its reason and evidence, :data:`VERDICTS` every name one may have.
``_Sample`` is what the rules of :mod:`sitemapcrawl.verify.rules` judge: one fetch's L0
metrics and signals (the segment's, its site's, an archive stamp), the outcomes of the
sampled pages and the L1 shares the rules test. Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sitemapcrawl.verify.agreement import (
    AGREE,
    FUTURE,
    LASTMOD_NEWER,
    LASTMOD_OLDER,
    PUBDATE_AS_LASTMOD,
    REDIRECT_OFFSITE,
    _tz_k,
)
from sitemapcrawl.verify.dispersion import SegmentL0, burst_stamp, l0_signals
from sitemapcrawl.verify.intervals import _utc, wilson
from sitemapcrawl.verify.stamps import SiteView
from sitemapcrawl.verify.thresholds import ARCHIVE_SPAN, TZ_CONSISTENT_SHARE, TZ_MIN_LB

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "VERDICTS",
    "Verdict",
]


VERDICTS: tuple[str, ...] = (
    "TRUSTED",
    "PROVISIONAL",
    "GENERATION_TIME",
    "ABSENT",
    "PARTIAL",
    "STALE",
    "OVER_REPORTING",
    "TZ_SHIFT",
    "INVALID",
    "UNVERIFIABLE",
)


@dataclass(frozen=True)
class Verdict:
    """A segment verdict with a one-sentence human reason and its evidence."""

    name: str
    reason: str
    evidence: dict[str, Any]


_L0_USED = (
    "n",
    "n_lastmod",
    "coverage",
    "invalid_share",
    "future_share",
    "tz_shift_k",
    "window",
    "window_share",
    "cluster_centre",
    "alignment_s",
    "gen_alignment_s",
    "news",
)


#: The L1 outcomes that are page evidence about a lastmod (n_ev), besides TZ_SHIFT:k.
_EVIDENCE = frozenset({AGREE, LASTMOD_NEWER, LASTMOD_OLDER, PUBDATE_AS_LASTMOD, FUTURE})


#: Outcomes of a sampled page that could not be read: an HTTP error or redirect left
#: unfollowed, a failed or refused fetch.
_UNREAD = ("HTTP_", "FETCH_FAILED", REDIRECT_OFFSITE)


def _l1_shift(counts: Counter[str], disagreeing: int) -> tuple[Counter[int], int | None, int]:
    """L1 hour shifts: the pages per whole-hour shift k, and the dominant k among the
    disagreeing pages with its count (None, 0 when under ``TZ_CONSISTENT_SHARE`` of them)."""
    tz_counts: Counter[int] = Counter()
    for outcome, count in counts.items():
        k = _tz_k(outcome)
        if k is not None:
            tz_counts[k] += count
    if not tz_counts:
        return tz_counts, None, 0
    l1_k, l1_k_count = max(tz_counts.items(), key=lambda kv: (kv[1], -abs(kv[0]), kv[0]))
    if l1_k_count < TZ_CONSISTENT_SHARE * disagreeing:
        return tz_counts, None, 0
    return tz_counts, l1_k, l1_k_count


@dataclass(frozen=True)
class _Sample:
    """What the verdict rules read: one fetch's L0 metrics and signals, the outcomes of the
    sampled pages, and the L1 shares the rules test."""

    l0: SegmentL0
    t_ref: datetime
    signals: list[str]
    counts: Counter[str]
    problems: Mapping[str, int] | None
    n_sampled: int
    n_ev: int  # pages with evidence about their lastmod
    n_unread: int
    evidence: dict[str, Any]  # every verdict's evidence starts with this
    disagreeing: int  # pages with evidence that do not agree
    tz_counts: Counter[int]  # pages off by k whole hours, by k
    l1_k: int | None  # the dominant k among the disagreeing pages, if consistent
    l1_k_count: int
    l1_tz: bool  # the L1 shift is established (Wilson lower bound >= TZ_MIN_LB)
    newer: int  # LASTMOD_NEWER pages
    newer_lb: float
    signalled: bool  # L0 (the segment's, the site's, or an archive stamp) says generation
    ruled_out: bool  # the history shows the cluster standing still
    suspected: bool  # signalled, and the history does not rule it out
    site: SiteView | None  # the whole site, when its cluster is what signals
    archive_days: float | None  # a burst stamp over pages published over this many days
    unsampled: str | None  # why no page was sampled
    build_stamped: tuple[str, ...] = ()  # the site's other segments stamped by its build

    @classmethod
    def of(
        cls,
        l0: SegmentL0,
        outcomes: Sequence[str],
        t_ref: datetime,
        generation_ruled_out: bool,
        problems: Mapping[str, int] | None,
        *,
        site: SiteView | None = None,
        archive_days: float | None = None,
        unsampled: str | None = None,
    ) -> _Sample:
        t_ref = _utc(t_ref)
        signals = l0_signals(l0, t_ref)
        by_site = None
        if site is not None and site.stamped and "generation_time_suspected" not in signals:
            # The segment is small or its own window is not the site's: the site's cluster,
            # which holds this segment's lastmods, is the generation time.
            signals = [sig for sig in signals if sig != "clustered_old"]
            signals.append("generation_time_suspected")
            by_site = site
        burst = burst_stamp(l0) or (site is not None and site.burst)
        archive = None
        if (
            burst
            and archive_days is not None
            and archive_days >= ARCHIVE_SPAN.total_seconds() / 86400
            and not l0.news
        ):
            signals.append("archive_stamp")
            archive = archive_days
        counts = Counter(outcomes)
        n_ev = sum(n for o, n in counts.items() if o in _EVIDENCE or _tz_k(o) is not None)
        n_unread = sum(n for o, n in counts.items() if o.startswith(_UNREAD))
        evidence: dict[str, Any] = {
            "n_sampled": len(outcomes),
            "n_ev": n_ev,
            "n_unread": n_unread,
            **({"page_problems": dict(sorted(problems.items()))} if problems else {}),
            "counts": dict(sorted(counts.items())),
            "signals": signals,
            "l0": {k: v for k, v in l0.as_dict().items() if k in _L0_USED},
            **({"site": site.as_dict()} if site is not None and site.segments > 1 else {}),
            **({"archive_days": round(archive, 1)} if archive is not None else {}),
        }
        disagreeing = n_ev - counts[AGREE]
        tz_counts, l1_k, l1_k_count = _l1_shift(counts, disagreeing)
        newer = counts[LASTMOD_NEWER]
        signalled = "generation_time_suspected" in signals or archive is not None
        return cls(
            l0=l0,
            t_ref=t_ref,
            signals=signals,
            counts=counts,
            problems=problems,
            n_sampled=len(outcomes),
            n_ev=n_ev,
            n_unread=n_unread,
            evidence=evidence,
            disagreeing=disagreeing,
            tz_counts=tz_counts,
            l1_k=l1_k,
            l1_k_count=l1_k_count,
            l1_tz=l1_k is not None and wilson(l1_k_count, n_ev)[0] >= TZ_MIN_LB,
            newer=newer,
            newer_lb=wilson(newer, n_ev)[0],
            signalled=signalled,
            ruled_out=generation_ruled_out,
            # Earlier fetches can rule the signature out: a cluster that did not move on
            # two fetches in a row is a deploy or import stamp, not the generation time.
            suspected=signalled and not generation_ruled_out,
            site=by_site,
            archive_days=archive,
            unsampled=unsampled if not outcomes else None,
            build_stamped=site.build_stamped if site is not None else (),
        )

    def verdict(self, name: str, reason: str, **extra: Any) -> Verdict:
        return Verdict(name, reason, {**self.evidence, **extra})
