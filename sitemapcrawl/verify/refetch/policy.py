"""Refetch scheduling: the knobs (:class:`Policy`) and the shape of a decision.

docs/verification.md, "Scheduling incremental refetches". The knobs come from the
``SITEMAPCRAWL_INCREMENTAL_*`` settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

__all__ = [
    "DAY",
    "Decision",
    "Policy",
]


DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Policy:
    """The scheduling knobs (``SITEMAPCRAWL_INCREMENTAL_*`` settings)."""

    theta: float = 0.3  # refetch when P(changed) reaches this
    max_age: timedelta = timedelta(days=30)  # refetch at least this often
    max_age_trusted: timedelta = timedelta(days=365)  # … in a TRUSTED segment
    audit_trusted: float = 0.03  # audit share of unchanged URLs, TRUSTED / OVER_REPORTING
    audit_provisional: float = 0.08  # … PROVISIONAL and PARTIAL
    audit_min: int = 5  # audited URLs per TRUSTED segment and run, at least
    prior_rate: float = 1 / (30 * DAY)  # per second, when the segment has no history either
    page_dates: bool = True  # use verified page dates as change history
    probe_min: int = 0  # random pages per untrusted segment and run (``probe``; 0: none)
    wave_alpha: float = 0.01  # P(this many changes | the rates) at most this: a wave
    wave_max: int = 1000  # pages a wave refetches per segment and run, at most
    page_share: float = 0.5  # a page's own change share (Beta(1, 1) mean) to fetch every run
    page_min_changes: int = 2  # … with at least this many changes seen (0: off)
    cochange_min: int = 2  # earlier runs changed together to fetch in the same run (0: off)
    move_learner: bool = False  # stop following the moves of a page they show unchanged


@dataclass(frozen=True, slots=True)
class Decision:
    refetch: bool
    reason: str
    delta_l: bool | None = None  # lastmod said "maybe changed" (None: not dated)
