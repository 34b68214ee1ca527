"""Score fetch matrices and verdicts against a site's ground truth.

Fetch metrics (one policy, one site) from ``F[run, page]``:

* ``fetches_per_run``: mean page fetches over runs 1.. (run 0 fetches every
  listed page for every policy, so it is reported apart as ``fetches_run0``);
* ``stale_page_runs``: over all runs, the share of (page, run) pairs, among
  pages that exist at that run, whose latest captured version differs from
  the live one (never captured counts as stale);
* ``changes``: the content versions first live at a run after run 0
  (significant edits and new pages) that were live at one run time at least;
  ``missed``: those never captured;
* ``delay_mean_h`` / ``delay_p95_h``: from a version going live to its first
  capture, over captured versions (the oracle's delay is the run spacing's);
* ``wasted_share``: fetches (runs 1..) that found the content unchanged;
* ``efficiency`` = fetches / the oracle's and ``savings`` = 1 - fetches /
  refetch_all's, both over runs 1.. (set by :func:`relative`).

Verdict metrics (one segment): correct at each run (``strict``: the true
verdict; ``lenient``: see :data:`LENIENT`), runs until correct and staying
correct, flaps (verdict changes), and dangerous-trust runs (a STALE or
GENERATION_TIME segment given a verdict whose lastmod a scheduler uses:
TRUSTED, PROVISIONAL or OVER_REPORTING).
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from .model import HOUR, USABLE

if TYPE_CHECKING:
    from .model import Site, Timeline

#: Verdicts also accepted as "right direction" for each true verdict.
LENIENT: dict[str, frozenset[str]] = {
    "TRUSTED": frozenset({"TRUSTED", "PROVISIONAL"}),
    "OVER_REPORTING": frozenset({"OVER_REPORTING", "TRUSTED", "PROVISIONAL"}),
    "STALE": frozenset({"STALE", "GENERATION_TIME", "UNVERIFIABLE"}),
    "GENERATION_TIME": frozenset({"GENERATION_TIME"}),
    "ABSENT": frozenset({"ABSENT"}),
    "PARTIAL": frozenset({"PARTIAL"}),
    "TZ_SHIFT": frozenset({"TZ_SHIFT"}),
}
DANGEROUS_TRUTH = frozenset({"STALE", "GENERATION_TIME"})


def captured_versions(tl: Timeline, fetched: np.ndarray) -> np.ndarray:
    """``[runs, pages]``: the version held after each run (-2: never fetched)."""
    out = np.empty_like(tl.version)
    held = np.full(tl.version.shape[1], -2, dtype=tl.version.dtype)
    for d in range(len(tl.times)):
        held = np.where(fetched[d] & (tl.version[d] >= 0), tl.version[d], held)
        out[d] = held
    return out


def _version_start(site: Site, page_index: int, version: int) -> float:
    page = site.pages[page_index]
    return page.published if version == 0 else float(page.live[version - 1])


def score_fetches(site: Site, tl: Timeline, fetched: np.ndarray) -> dict[str, Any]:
    fetched = fetched & (tl.version >= 0)
    n_runs = len(tl.times)
    held = captured_versions(tl, fetched)
    exists = tl.version >= 0
    stale = exists & (held != tl.version)
    per_run = fetched.sum(axis=1)
    later = slice(1, n_runs)
    previous = np.vstack([np.full((1, held.shape[1]), -2), held[:-1]])
    wasted = fetched[later] & (previous[later] == tl.version[later])
    changes = missed = 0
    delays: list[float] = []
    for i in range(tl.version.shape[1]):
        column = tl.version[:, i]
        first = column[0]
        new_versions = {int(v) for v in column[1:] if v >= 0 and v != first}
        if not new_versions:
            continue
        got: dict[int, float] = {}
        for d in np.flatnonzero(fetched[:, i]):
            got.setdefault(int(column[d]), float(tl.times[d]))
        changes += len(new_versions)
        for v in new_versions:
            if v in got:
                delays.append((got[v] - _version_start(site, i, v)) / HOUR)
            else:
                missed += 1
    n_fetch_later = int(per_run[later].sum())
    return {
        "fetches_run0": int(per_run[0]),
        "fetches_per_run": float(per_run[later].mean()) if n_runs > 1 else 0.0,
        "fetches_total": int(per_run.sum()),
        "stale_page_runs": float(stale.sum() / max(1, exists.sum())),
        "stale_last_run": float(stale[-1].sum() / max(1, exists[-1].sum())),
        "changes": changes,
        "missed": missed,
        "missed_share": missed / changes if changes else 0.0,
        "delay_mean_h": float(np.mean(delays)) if delays else None,
        "delay_p95_h": float(np.percentile(delays, 95)) if delays else None,
        "wasted_share": float(wasted.sum() / n_fetch_later) if n_fetch_later else 0.0,
    }


def relative(scores: dict[str, dict[str, Any]]) -> None:
    """Add ``efficiency`` (÷ oracle) and ``savings`` (vs refetch_all) to every score."""
    oracle = scores["oracle"]["fetches_per_run"]
    everything = scores["refetch_all"]["fetches_per_run"]
    for score in scores.values():
        f = score["fetches_per_run"]
        score["efficiency"] = f / oracle if oracle else None
        score["savings"] = 1 - f / everything if everything else None


def frontier_stale(scores: dict[str, dict[str, Any]], fetches: float) -> float | None:
    """Poisson-only's stale page-run fraction at ``fetches`` per run, interpolated linearly
    between its θ points (None outside the frontier)."""
    points = sorted(
        (s["fetches_per_run"], s["stale_page_runs"])
        for name, s in scores.items()
        if name.startswith("poisson_only@")
    )
    xs = [p[0] for p in points]
    if not points or fetches < xs[0] or fetches > xs[-1]:
        return None
    return float(np.interp(fetches, xs, [p[1] for p in points]))


def score_verdicts(truth: str, verdicts: list[str | None]) -> dict[str, Any]:
    """Per-run verdict quality of one segment (``None``: the run gave no verdict)."""
    lenient_set = LENIENT.get(truth, frozenset({truth}))
    strict = [v == truth for v in verdicts]
    lenient = [v in lenient_set for v in verdicts]
    return {
        "truth": truth,
        "verdicts": verdicts,
        "final": verdicts[-1] if verdicts else None,
        "correct_final": bool(strict and strict[-1]),
        "lenient_final": bool(lenient and lenient[-1]),
        "runs_to_correct": _runs_to_stay(strict),
        "runs_to_lenient": _runs_to_stay(lenient),
        "correct_runs": sum(strict),
        "flaps": sum(1 for a, b in pairwise(verdicts) if a != b),
        "dangerous_runs": (
            sum(1 for v in verdicts if v in USABLE) if truth in DANGEROUS_TRUTH else 0
        ),
    }


def _runs_to_stay(ok: list[bool]) -> int | None:
    """Runs until the verdict is right and stays right to the end (None: not at the end)."""
    if not ok or not ok[-1]:
        return None
    k = len(ok)
    while k > 0 and ok[k - 1]:
        k -= 1
    return k + 1
