"""Refetch scheduling: a page's change rate, from our fetches and its own dates.

docs/verification.md, "Change rates", "Page dates as change history" and "Probes and
waves". :func:`change_rate` is the irregular-interval MLE of Kolobov et al. with the
segment's pooled rate as prior; verified page dates (:func:`page_dates_verified`) stand for
the change history (:func:`page_date_intervals`); :func:`wave` tells a burst of changes the
rates could not foresee.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.verify.intervals import wilson
from sitemapcrawl.verify.refetch.policy import DAY, Policy

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "OBSERVED_CHANGE",
    "PAGE_DATE_FALSE",
    "PAGE_DATE_MIN_HITS",
    "PAGE_DATE_RECALL",
    "PAGE_DATE_SLACK",
    "RATE_BOUNDS",
    "change_probability",
    "change_rate",
    "page_date_intervals",
    "page_dates_verified",
    "rate_history",
    "wave",
]


#: λ̂ is kept inside [1/10 years, 10/day], per second.
RATE_BOUNDS = (1 / (3650 * DAY), 10 / DAY)


#: A page date observed is a change seen at that moment: an interval this short (seconds)
#: stands for it in the incomplete-observation estimate (τ/(e^{λτ}-1) → 1/λ, the
#: complete-observation term).
OBSERVED_CHANGE = 1.0


#: Clock slack between a page's own date and the server's ``Date`` (seconds).
PAGE_DATE_SLACK = 60.0


#: Page dates are trusted for change rates after this many changes they reported…
PAGE_DATE_MIN_HITS = 10


#: …with the Wilson lower bound of "moved when the content changed" at least this…
PAGE_DATE_RECALL = 0.7


#: …and the upper bound of "moved while the content did not" at most this.
PAGE_DATE_FALSE = 0.1


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


def rate_history(
    intervals: Sequence[tuple[float, bool]],
    prior: tuple[int, float],
    page_history: tuple[Sequence[tuple[float, bool]], tuple[int, float]] | None,
    policy: Policy,
) -> tuple[Sequence[tuple[float, bool]], tuple[int, float]]:
    """The history a URL's change rate is estimated from: its page-date history and prior
    when the segment's page dates are verified (and used), else its fetch intervals."""
    if page_history is not None and page_history[0] and policy.page_dates:
        return page_history
    return intervals, prior


def page_date_intervals(
    *,
    fetched_at: datetime,
    page_date: datetime | None,
    previous_fetch: datetime | None,
    previous_date: datetime | None,
    changed: bool | None,
    cap: float,
) -> tuple[list[tuple[float, bool]], str | None]:
    """What one fetch of a page with its own modification date adds to the page-date change
    history, and how the date behaved: ``(intervals, check)``.

    ``changed``: whether our fingerprint changed since ``previous_fetch`` (None: the first
    fetch). ``check``: ``hit`` (the date moved into the window since our previous fetch and
    the content changed), ``miss`` (the content changed, the date did not say so),
    ``false`` (the date moved, the content did not), ``still`` (neither moved) or None (a
    first fetch). A first fetch gives a change at the date and none since, the quiet time
    counted up to ``cap`` seconds (older history is not trusted to predict); a later one
    the same when the date reports a change inside the window, else the plain fetch
    interval.

    >>> from datetime import UTC
    >>> now = datetime(2024, 6, 10, tzinfo=UTC)
    >>> page_date_intervals(fetched_at=now, page_date=now - timedelta(days=400),
    ...     previous_fetch=None, previous_date=None, changed=None, cap=30 * DAY)
    ([(1.0, True), (2592000.0, False)], None)
    >>> page_date_intervals(fetched_at=now, page_date=now - timedelta(hours=2),
    ...     previous_fetch=now - timedelta(days=1), previous_date=now - timedelta(days=9),
    ...     changed=True, cap=30 * DAY)
    ([(1.0, True), (7200.0, False)], 'hit')
    >>> page_date_intervals(fetched_at=now, page_date=now - timedelta(days=9),
    ...     previous_fetch=now - timedelta(days=1), previous_date=now - timedelta(days=9),
    ...     changed=True, cap=30 * DAY)
    ([(86400.0, True)], 'miss')
    """
    slack = timedelta(seconds=PAGE_DATE_SLACK)
    if page_date is not None and page_date > fetched_at + slack:
        page_date = None  # a date in the future is no observation
    if previous_fetch is None or changed is None:
        if page_date is None:
            return [], None
        quiet = min(max((fetched_at - page_date).total_seconds(), 0.0), cap)
        return [(OBSERVED_CHANGE, True), (quiet, False)], None
    seconds = max((fetched_at - previous_fetch).total_seconds(), 0.0)
    plain = [(seconds, changed)] if seconds > 0 else []
    if page_date is None:
        return plain, ("miss" if changed else None)
    moved = previous_date is None or abs((page_date - previous_date).total_seconds()) > 1
    if moved and previous_fetch - slack < page_date:
        if changed:
            quiet = max((fetched_at - page_date).total_seconds(), 0.0)
            return [(OBSERVED_CHANGE, True), (quiet, False)], "hit"
        return plain, "false"
    if changed:
        return plain, "miss"
    return plain, ("false" if moved else "still")


def page_dates_verified(hits: float, misses: float, false: float, still: float) -> bool:
    """Whether a segment's page dates are honest enough to stand for its change history:
    at least :data:`PAGE_DATE_MIN_HITS` changes they reported, their recall's Wilson lower
    bound at least :data:`PAGE_DATE_RECALL` and the upper bound of their false moves at
    most :data:`PAGE_DATE_FALSE` (counts as decayed, rounded).

    >>> page_dates_verified(12, 0, 0, 250)
    True
    >>> page_dates_verified(12, 9, 0, 250)  # dates that stay put while pages change
    False
    >>> page_dates_verified(12, 0, 240, 10)  # dates that move on every fetch
    False
    >>> page_dates_verified(8, 0, 0, 250)
    False
    """
    hits, misses, false, still = (round(x) for x in (hits, misses, false, still))
    if hits < PAGE_DATE_MIN_HITS or wilson(hits, hits + misses)[0] < PAGE_DATE_RECALL:
        return False
    quiet = false + still
    return quiet > 0 and wilson(false, quiet)[1] <= PAGE_DATE_FALSE


def wave(expected: float, changed: int, alpha: float) -> bool:
    """Whether ``changed`` content changes among the pages fetched on this run, which by
    their change rates were expected to show ``expected`` (the sum of their change
    probabilities), are a wave: a release, a rebuild, an edit of many pages at once, which
    per-page rates cannot foresee. The test is the Poisson tail P(X >= changed | expected)
    <= ``alpha`` (a sum of independent Bernoulli draws has a thinner tail than the Poisson
    of the same mean: the test errs towards no wave).

    >>> wave(0.05, 2, 0.01)  # two changes where one in twenty was expected
    True
    >>> wave(0.05, 1, 0.01)  # one is not enough at that rate
    False
    >>> wave(3.0, 4, 0.01)  # about what the rates said
    False
    """
    if changed < 1:
        return False
    return _poisson_tail(expected, changed) <= alpha


def _poisson_tail(mean: float, k: int) -> float:
    """P(X >= k) for X ~ Poisson(mean)."""
    if mean <= 0:
        return 0.0
    term = total = math.exp(-mean)
    for i in range(1, k):
        term *= mean / i
        total += term
    return max(0.0, 1.0 - total)
