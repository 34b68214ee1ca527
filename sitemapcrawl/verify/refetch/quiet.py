"""Refetch decisions: a sitemap that stops reporting (the quiet-stretch detector).

A TRUSTED segment's lastmod is followed, and audits check the pages whose lastmod stands
still; but a sitemap that stops being regenerated (a frozen export, a broken build step)
keeps every lastmod still while pages change, and on a site whose pages carry no date
nothing else shows it: bench/realweb's WordPress export stayed TRUSTED 12 runs after its
sitemap froze. What does show is the quiet itself: runs in a row without a single lastmod
move, which the segment's own history makes unlikely.

Per segment, and pooled over its site's TRUSTED segments: the runs before the current
quiet stretch, how many of them had no move (their share's one-sided 95 % Wilson upper
bound is q: runs, not moves, so that a release of 20 pages in one run does not make quiet
look rare), and the stretch's length r. The alarm sounds when q^r < ``QUIET_P`` (1 %), with
at least ``QUIET_HISTORY`` runs of history. Replayed on bench/realweb's truth
(``bench/realweb/whatif.py --quiet``): no alarm on the real history of any honest segment,
an alarm 3 runs after a freeze for each site's TRUSTED segments together. On an alarm, the
segment's re-sample is due at once and one audit sized to find the missed changes is
ordered, once per quiet stretch (:func:`quiet_audit_size`). When our audits in the stretch
(that one, or the routine ones before it) find a page changed whose lastmod stood still,
the sitemap has stopped reporting: the segment is STALE from the alarm on, for as long as
the stretch lasts (:func:`stopped_after`). A truly quiet site's audit finds
nothing changed (its pages are as still as its lastmods) and it stays TRUSTED.

Why one miss is enough there, where the cross-run score wants three: the alarm already
says the stretch is one the segment's own history gives less than 1 %, and the misses are
pages that stretch left unreported; on an honest site the audit's misses are
what its list pages and feeds miss at any time, and those are rare enough that a
TRUSTED segment has a recall bound of 0.8 with them. Measured on bench/realweb's
WordPress export frozen from deploy 18 (docs/benchmarks.md): the alarm at +3 and an
audit that found 2 misses among 274 pages, where the three-miss rule left the segment
TRUSTED for the rest of the history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sitemapcrawl.verify.intervals import wilson

__all__ = [
    "QUIET_HISTORY",
    "QUIET_P",
    "QUIET_TALLY",
    "STOPPED",
    "QuietStretch",
    "quiet_audit_size",
    "stopped_after",
    "stopped_reason",
]

#: The alarm: a quiet stretch that the history gives less than this probability.
QUIET_P = 0.01
#: Runs of history before the first alarm.
QUIET_HISTORY = 5
#: One-sided 95 %.
_Z = 1.645
#: Misses an alarm's audit aims to see (``crossrun.STALE_MISSES``).
_MISSES = 3
#: The L2 counts' record of a sitemap found to have stopped reporting (:func:`stopped_after`).
STOPPED = "quiet_stopped"
#: The L2 counts (FN, TN) as the current quiet stretch began: its audits are the rest.
QUIET_TALLY = "quiet_tally"


@dataclass(frozen=True, slots=True)
class QuietStretch:
    """A segment's (or a site's) record of runs with and without lastmod moves.

    ``runs``: runs before the current stretch; ``quiet``: of them, runs without a move;
    ``stretch``: runs without a move since the last one; ``moves``: lastmod moves over the
    ``runs`` (for sizing an audit).

    >>> q = QuietStretch()
    >>> for moved in [2, 1, 1, 3, 1, 2, 1, 1, 1, 2]:  # ten runs, each with a move
    ...     q = q.after(moved)
    >>> q.after(0).after(0).alarm(), q.after(0).after(0).after(0).alarm()
    (False, True)
    >>> q.after(0).after(0).after(0).after(4)
    QuietStretch(runs=14, quiet=3, stretch=0, moves=19)
    >>> round(q.after(0).after(0).after(0).expected_missed(), 1)
    4.5
    """

    runs: int = 0
    quiet: int = 0
    stretch: int = 0
    moves: int = 0

    @classmethod
    def from_counts(cls, value: Any) -> QuietStretch:
        """From a segment's stored counts (``as_counts``); a fresh one when absent."""
        if isinstance(value, list) and len(value) == 4:
            return cls(*(int(v) for v in value))
        return cls()

    def as_counts(self) -> list[int]:
        return [self.runs, self.quiet, self.stretch, self.moves]

    def after(self, moved: int) -> QuietStretch:
        """The record after one more run with ``moved`` lastmod moves."""
        if moved <= 0:
            return QuietStretch(self.runs, self.quiet, self.stretch + 1, self.moves)
        return QuietStretch(
            self.runs + self.stretch + 1, self.quiet + self.stretch, 0, self.moves + moved
        )

    def alarm(self) -> bool:
        """Whether the current quiet stretch is one the history makes unlikely."""
        if not self.stretch or self.runs < QUIET_HISTORY:
            return False
        upper = wilson(self.quiet, self.runs, z=_Z)[1]
        return bool(upper**self.stretch < QUIET_P)

    def expected_missed(self) -> float:
        """Changes the stretch would have reported at the history's rate of moves."""
        return self.moves / self.runs * self.stretch if self.runs else 0.0


def quiet_audit_size(urls: int, expected_missed: float) -> int:
    """Pages an alarm's audit fetches: enough that ``_MISSES`` stale pages are expected
    among them if ``expected_missed`` of the ``urls`` went unreported (all, at worst).

    >>> quiet_audit_size(274, 12.0), quiet_audit_size(274, 0.5), quiet_audit_size(40, 30.0)
    (69, 274, 4)
    """
    if urls <= 0:
        return 0
    if expected_missed <= _MISSES:
        return urls
    return min(urls, math.ceil(_MISSES * urls / expected_missed))


def stopped_after(
    previous: dict[str, Any] | None,
    *,
    alarmed: bool,
    tally: tuple[float, float],
    stretch: int,
) -> dict[str, Any] | None:
    """The record of a sitemap that stopped reporting after this run, or None.

    ``alarmed``: a TRUSTED segment whose alarm sounded on this run or earlier in the
    current stretch; ``tally``: the misses and audited pages of the stretch so far, this
    run's included (the alarm's audit and any other); ``stretch``: the segment's runs
    without a lastmod move, this one included (a move ends the record: the sitemap reports
    again, and the red verdict's clean runs decide).

    >>> first = stopped_after(None, alarmed=True, tally=(2.0, 270.6), stretch=4)
    >>> first
    {'runs': 4, 'found': 2, 'audited': 271}
    >>> stopped_after(first, alarmed=True, tally=(2.0, 272.0), stretch=5)
    {'runs': 5, 'found': 2, 'audited': 271}
    >>> stopped_after(first, alarmed=True, tally=(2.0, 272.0), stretch=0) is None
    True
    >>> stopped_after(None, alarmed=True, tally=(0.02, 274.0), stretch=4) is None
    True
    >>> stopped_after(None, alarmed=False, tally=(3.0, 9.0), stretch=2) is None  # no alarm
    True
    """
    if not stretch:
        return None
    if previous:
        return {**previous, "runs": stretch}
    found, audited = tally
    if alarmed and round(found) >= 1:
        return {"runs": stretch, "found": round(found), "audited": round(audited)}
    return None


def stopped_reason(record: dict[str, Any]) -> str:
    """The STALE verdict's reason for a sitemap that stopped reporting.

    >>> stopped_reason({"runs": 4, "found": 2, "audited": 271})[-60:]
    'me found 2 of 271 pages changed whose lastmod had not moved.'
    """
    return (
        f"The sitemap has stopped reporting changes: no lastmod moved in {record['runs']} runs "
        f"(a quiet stretch its history makes less than {QUIET_P * 100:g} % likely), while our "
        f"audits in that time found {record['found']} of {record['audited']} pages changed "
        "whose lastmod had not moved."
    )
