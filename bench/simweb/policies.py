"""Baseline re-crawl policies, replayed in process on a site's :class:`Timeline`.

Each policy returns a boolean fetch matrix ``F[run, page]``. All of them see
what a crawler would see at run ``d``: the URLs listed in the sitemap and
their stated lastmod (``Timeline.listed``, ``lm_value``, ``lm_upper``), and,
on each fetch, whether the page's content changed since its previous fetch
(a perfect fingerprint: the ground-truth version). The oracle alone sees the
live version of every page.

* ``refetch_all``: every listed URL, every run;
* ``naive_trust``: a URL whose raw lastmod differs from the one at its last
  fetch, or that has no lastmod, or was never fetched;
* ``naive_granular``: as ``naive_trust``, plus "the lastmod interval's upper
  bound is after the last fetch" (date-only values work);
* ``poisson_only(θ)``: fetch when ``1 - exp(-λ̂ Δt) ≥ θ`` (or after
  :data:`MAX_AGE_DAYS`), λ̂ the irregular-interval incomplete-observation MLE
  ("Change rates"; Kolobov et al. 2019 Eq. 10; θ from 0.05 to 0.95) with one pseudo
  changed and one pseudo unchanged interval of half a day, bounded to [0.0005, 7] per day and
  solved by bisection for all pages at once (θ every 0.05 draws the frontier);
* ``oracle``: exactly the pages whose live version differs from the captured
  one (new pages included): zero staleness at run granularity with the fewest
  fetches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .model import DAY

if TYPE_CHECKING:
    from collections.abc import Callable

    from .model import Timeline

MAX_AGE_DAYS = 30.0
LAMBDA_MIN, LAMBDA_MAX = 0.0005, 7.0
PSEUDO = 0.5  # days
#: Every 0.05: "at equal fetches" interpolates linearly between neighbouring points, and the
#: frontier is convex, so sparse points would flatter whatever lies between them.
THETAS = tuple(round(0.05 * k, 2) for k in range(1, 20))
#: The θ values shown in the report tables (the others only draw the frontier).
TABLE_THETAS = (0.1, 0.3, 0.5)


def refetch_all(tl: Timeline) -> np.ndarray:
    return tl.listed.copy()


def _lastmod_policy(tl: Timeline, granular: bool) -> np.ndarray:
    n_runs, n = tl.version.shape
    fetched = np.zeros((n_runs, n), dtype=bool)
    ever = np.zeros(n, dtype=bool)
    last_time = np.full(n, -np.inf)
    last_lm = np.full(n, np.nan)
    for d in range(n_runs):
        lm = tl.lm_value[d]
        changed = ~(lm == last_lm)  # NaN on either side counts as changed
        want = ~ever | np.isnan(lm) | changed
        if granular:
            want |= tl.lm_upper[d] > last_time
        f = tl.listed[d] & want
        fetched[d] = f
        ever |= f
        last_time = np.where(f, tl.times[d], last_time)
        last_lm = np.where(f, lm, last_lm)
    return fetched


def naive_trust(tl: Timeline) -> np.ndarray:
    return _lastmod_policy(tl, granular=False)


def naive_granular(tl: Timeline) -> np.ndarray:
    return _lastmod_policy(tl, granular=True)


def oracle(tl: Timeline) -> np.ndarray:
    n_runs, n = tl.version.shape
    fetched = np.zeros((n_runs, n), dtype=bool)
    captured = np.full(n, -2, dtype=np.int64)
    for d in range(n_runs):
        live = tl.version[d]
        f = (live >= 0) & (live != captured)
        fetched[d] = f
        captured = np.where(f, live, captured)
    return fetched


def mle_rates(changed: np.ndarray, unchanged: np.ndarray) -> np.ndarray:
    """λ̂ per page from ``changed`` ([pages, k] interval lengths in days, 0 = padding) and
    ``unchanged`` ([pages] total days of intervals without a change).

    Solves Σ_changed τ/(e^{λτ} - 1) = Σ_unchanged τ with one pseudo interval of each kind.

    >>> rates = mle_rates(np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([0.0, 20.0]))
    >>> bool(rates[0] > 1.0), bool(rates[1] < 0.05)
    (True, True)
    """
    taus = np.concatenate([changed, np.full((len(changed), 1), PSEUDO)], axis=1)
    mask = taus > 0
    rhs = unchanged + PSEUDO
    lo = np.full(len(changed), np.log(LAMBDA_MIN))
    hi = np.full(len(changed), np.log(LAMBDA_MAX))
    for _ in range(40):
        mid = (lo + hi) / 2
        lam = np.exp(mid)[:, None]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            terms = np.where(mask, taus / np.expm1(lam * taus), 0.0)
        too_small = terms.sum(axis=1) > rhs  # left side decreases in λ
        lo = np.where(too_small, mid, lo)
        hi = np.where(too_small, hi, mid)
    return np.exp((lo + hi) / 2)


def poisson_only(tl: Timeline, theta: float) -> np.ndarray:
    n_runs, n = tl.version.shape
    fetched = np.zeros((n_runs, n), dtype=bool)
    captured = np.full(n, -2, dtype=np.int64)
    last_time = np.full(n, np.nan)
    changed = np.zeros((n, n_runs), dtype=float)
    n_changed = np.zeros(n, dtype=np.int64)
    unchanged = np.zeros(n, dtype=float)
    for d in range(n_runs):
        t = tl.times[d]
        ever = ~np.isnan(last_time)
        age = np.where(ever, (t - last_time) / DAY, np.inf)
        lam = mle_rates(changed[:, : max(1, int(n_changed.max()))], unchanged)
        p_change = -np.expm1(-lam * np.where(ever, age, 0.0))
        want = ~ever | (p_change >= theta) | (age >= MAX_AGE_DAYS)
        f = tl.listed[d] & want
        fetched[d] = f
        live = tl.version[d]
        observed = f & ever
        did_change = observed & (live != captured)
        rows = np.flatnonzero(did_change)
        changed[rows, n_changed[rows]] = age[rows]
        n_changed[rows] += 1
        unchanged += np.where(observed & ~did_change, age, 0.0)
        captured = np.where(f, live, captured)
        last_time = np.where(f, t, last_time)
    return fetched


def baselines(tl: Timeline) -> dict[str, np.ndarray]:
    """Every baseline's fetch matrix, by name (``poisson_only@0.3``...)."""
    out: dict[str, np.ndarray] = {
        "refetch_all": refetch_all(tl),
        "naive_trust": naive_trust(tl),
        "naive_granular": naive_granular(tl),
    }
    for theta in THETAS:
        out[f"poisson_only@{theta:g}"] = poisson_only(tl, theta)
    out["oracle"] = oracle(tl)
    return out


POLICIES: dict[str, Callable[[Timeline], np.ndarray]] = {
    "refetch_all": refetch_all,
    "naive_trust": naive_trust,
    "naive_granular": naive_granular,
    "oracle": oracle,
}
