"""Incremental runs: should this URL be fetched again? (§5e, §2.2). Pure Python.

The decision uses a URL's lastmod only where its segment's standing verdict allows it:

* **TRUSTED, PROVISIONAL, OVER_REPORTING** (and the dated URLs of a PARTIAL segment whose
  dated subset passed): refetch iff the lastmod may have moved since the cut — its interval's
  upper bound (so a date-only value covers its whole day in any timezone) is after ``since``,
  or, on ``since=last`` runs, the raw value differs from the previous run's. Otherwise a
  seeded random **audit** share is refetched anyway (the audit is what measures misses),
  and a **max-age** safety net refetches what has not been refetched for too long.
* **STALE**: a moving lastmod still triggers a refetch (it is right when it moves); the rest
  follow the change-rate schedule (the hybrid of §5d).
* **everything else** (GENERATION_TIME, ABSENT, INVALID, TZ_SHIFT, UNVERIFIABLE, or no
  verdict yet): lastmod is ignored. Each URL's change rate λ̂ is estimated from our own
  fetches (the irregular-interval MLE of Kolobov et al., pooled with the segment's rate as a
  prior of one pseudo-change), and the URL is refetched when the probability that it changed
  since our last fetch, 1 - exp(-λ̂·Δt), reaches θ. A URL with no fetch history is refetched.

Reasons (``refetch_reason``): new, lastmod_changed, lastmod_unchanged, audit, max_age,
undated, no_history, poisson, poisson_wait.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.verify.crossrun import TRUSTING
from sitemapcrawl.verify.scoring import lastmod_interval

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "Decision",
    "Policy",
    "audit_draw",
    "change_probability",
    "change_rate",
    "decide",
    "delta_l",
]

DAY = 86_400.0
#: λ̂ is kept inside [1/10 years, 10/day], per second.
RATE_BOUNDS = (1 / (3650 * DAY), 10 / DAY)


@dataclass(frozen=True, slots=True)
class Policy:
    """The scheduling knobs (``SITEMAPCRAWL_INCREMENTAL_*`` settings)."""

    theta: float = 0.3  # refetch when P(changed) reaches this
    max_age: timedelta = timedelta(days=30)  # refetch at least this often
    audit_trusted: float = 0.03  # audit share of unchanged URLs, TRUSTED / OVER_REPORTING
    audit_provisional: float = 0.08  # … PROVISIONAL and PARTIAL
    prior_rate: float = 1 / (30 * DAY)  # per second, when the segment has no history either


@dataclass(frozen=True, slots=True)
class Decision:
    refetch: bool
    reason: str
    delta_l: bool | None = None  # lastmod said "maybe changed" (None: not dated)


def audit_draw(seed: str, run: int, url: str) -> float:
    """A reproducible uniform draw in [0, 1) for ``url`` on run ``run``.

    >>> audit_draw("s", 1, "https://a/") == audit_draw("s", 1, "https://a/")
    True
    >>> audit_draw("s", 1, "https://a/") != audit_draw("s", 2, "https://a/")
    True
    """
    digest = hashlib.blake2b(f"{seed}\0{run}\0{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def delta_l(
    lastmod: LastMod | None, since: datetime, previous_raw: str | None, compare_raw: bool
) -> bool | None:
    """Whether lastmod says "possibly changed since ``since``" (None: no usable lastmod).

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod as p
    >>> from datetime import UTC
    >>> cut = datetime(2024, 6, 1, 12, tzinfo=UTC)
    >>> delta_l(p("2024-06-01"), cut, None, False)  # the day may end after the cut
    True
    >>> delta_l(p("2024-05-30"), cut, None, False)
    False
    >>> delta_l(p("2024-05-30"), cut, "2024-05-29", True)  # the value moved
    True
    """
    if lastmod is None or lastmod.value is None:
        return None
    if compare_raw and previous_raw is not None and previous_raw != lastmod.raw:
        return True
    return lastmod_interval(lastmod)[1] > since


def change_rate(
    intervals: Sequence[tuple[float, bool]],
    prior_changes: int,
    prior_seconds: float,
    policy: Policy,
) -> float:
    """λ̂ per second from fetch intervals (seconds, changed), with the segment as prior.

    Solves Σ_changed t/(exp(λt) - 1) = Σ_unchanged t by bisection (the left side falls with
    λ). One pseudo interval of the observed mean length t̄ smooths it (Kolobov et al.): it
    counts as changed with the prior's probability 1 - exp(-λ₀t̄) and as unchanged with the
    rest, λ₀ being the segment's pooled rate.

    >>> round(change_rate([(DAY, True)] * 5 + [(DAY, False)] * 5, 0, 0.0, Policy()) * DAY, 2)
    0.61
    >>> change_rate([], 0, 0.0, Policy()) == Policy().prior_rate
    True
    """
    prior = (prior_changes + 0.5) / (prior_seconds + 0.5 / policy.prior_rate)
    observed = [(t, c) for t, c in intervals if t > 0]
    if not observed:
        return prior
    mean = sum(t for t, _ in observed) / len(observed)
    weight = change_probability(prior, mean)
    changed = [(t, 1.0) for t, c in observed if c] + [(mean, weight)]
    unchanged = sum(t for t, c in observed if not c) + (1 - weight) * mean

    def excess(lam: float) -> float:
        total = 0.0
        for t, w in changed:
            x = lam * t
            total += w * t / math.expm1(x) if x < 700 else 0.0
        return total - unchanged

    lo, hi = RATE_BOUNDS
    if excess(hi) > 0:
        return hi
    if excess(lo) < 0:
        return lo
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1.0001:
            break
    return math.sqrt(lo * hi)


def change_probability(rate: float, seconds: float) -> float:
    """P(at least one change in ``seconds``) for a Poisson rate per second."""
    return -math.expm1(-rate * max(seconds, 0.0))


def decide(
    *,
    verdict: str | None,
    subset_trusted: bool,
    lastmod: LastMod | None,
    known: bool,
    previous_raw: str | None,
    since: datetime,
    since_last: bool,
    now: datetime,
    last_refetch: datetime | None,
    last_fetch: datetime | None,
    intervals: Sequence[tuple[float, bool]],
    prior: tuple[int, float],
    draw: float,
    policy: Policy,
) -> Decision:
    """One URL's refetch decision (see the module docstring).

    ``known``: the state has the URL from an earlier run; ``since_last``: the cut is the
    previous run (so a changed raw value also counts); ``draw``: :func:`audit_draw`.
    """
    if not known and since_last:
        return Decision(True, "new")
    moved = delta_l(lastmod, since, previous_raw, since_last)
    trusting = verdict in TRUSTING or (verdict == "PARTIAL" and subset_trusted)
    if trusting and moved is not None:
        if moved:
            return Decision(True, "lastmod_changed", True)
        share = (
            policy.audit_trusted
            if verdict in ("TRUSTED", "OVER_REPORTING")
            else (policy.audit_provisional)
        )
        if draw < share:
            return Decision(True, "audit", False)
        latest = max((t for t in (last_refetch, last_fetch) if t is not None), default=None)
        if _older(latest, now, policy.max_age):
            return Decision(True, "max_age", False)
        return Decision(False, "lastmod_unchanged", False)
    if verdict == "STALE" and moved:
        return Decision(True, "lastmod_changed", True)
    if last_fetch is None:  # never fetched by us: no history to estimate a rate from
        return Decision(True, "undated" if trusting else "no_history", moved)
    if _older(last_fetch, now, policy.max_age):
        return Decision(True, "max_age", moved)
    rate = change_rate(intervals, prior[0], prior[1], policy)
    p = change_probability(rate, (now - last_fetch).total_seconds())
    return Decision(p >= policy.theta, "poisson" if p >= policy.theta else "poisson_wait", moved)


def _older(then: datetime | None, now: datetime, age: timedelta) -> bool:
    return then is None or now - then > age
