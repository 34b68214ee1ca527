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

from bench import equalgets

from .model import HOUR, USABLE

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

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


# --------------------------------------------------------------------------------------
# Cost by the verdict in use
# --------------------------------------------------------------------------------------

#: The verdict classes of the cost table, in order. Run 1 has no standing verdict and is
#: left out of every aggregate (as in ``fetches_per_run``); a later run without one (its
#: predecessors gave no report) counts as untrusted, which is how the scheduler treats it.
VERDICT_CLASSES = ("TRUSTED", "PROVISIONAL", "untrusted")
#: Verdicts whose lastmod the scheduler uses with the larger PROVISIONAL audit (TZ_SHIFT
#: corrected by its offset).
PROVISIONAL_LIKE = frozenset({"PROVISIONAL", "OVER_REPORTING", "TZ_SHIFT"})
#: The purpose of a GET of a page the spider did not mark ``refetch: true`` (its
#: verification sample or panel).
SAMPLE = "sample/panel"
#: A second or later GET of the same page in the same run.
REPEAT = "repeat"


def verdict_class(verdict: str | None) -> str:
    """The cost table's class of a verdict in use.

    >>> [verdict_class(v) for v in ("TRUSTED", "TZ_SHIFT", "STALE", None)]
    ['TRUSTED', 'PROVISIONAL', 'untrusted', 'untrusted']
    """
    if verdict == "TRUSTED":
        return "TRUSTED"
    return "PROVISIONAL" if verdict in PROVISIONAL_LIKE else "untrusted"


def verdicts_in_use(reported: Sequence[str | None]) -> list[str | None]:
    """The standing verdict each run decided with: the last one reported before it.

    A run that reported none (it failed) leaves the standing verdict as it was.

    >>> verdicts_in_use(["PROVISIONAL", None, "TRUSTED", "TRUSTED"])
    [None, 'PROVISIONAL', 'PROVISIONAL', 'TRUSTED']
    """
    out: list[str | None] = []
    standing: str | None = None
    for verdict in reported:
        out.append(standing)
        if verdict is not None:
            standing = verdict
    return out


def attribute_by_verdict(
    segments: np.ndarray,
    segment_names: Sequence[str],
    *,
    version: np.ndarray,
    oracle: np.ndarray,
    gets: Sequence[Sequence[int]],
    marked: Sequence[Mapping[int, tuple[bool, str]]],
    reported: Mapping[str, Sequence[str | None]],
) -> list[dict[str, Any]]:
    """One row per (run, segment): the verdict in use and what the run cost there.

    ``segments[page]`` is the page's segment number (an index into ``segment_names``, the
    names the spider reports verdicts under); ``version[run, page]`` the live version (-1:
    not published); ``oracle[run, page]`` the oracle's fetches; ``gets[run]`` the page of
    every page GET (200 or 304) the server logged, repeats kept; ``marked[run]`` the
    spider's decision per page (``refetch``, ``refetch_reason``); ``reported[segment]``
    the verdict the spider reported at each run (None: no report).

    Each row: ``gets`` (requests), ``purposes`` (GETs by ``refetch_reason`` for pages
    marked ``refetch: true``, :data:`SAMPLE` for the others, :data:`REPEAT` for a page's
    second GET in the run), ``oracle`` fetches, ``pages`` (published pages) and ``stale``
    (those whose version held after the run differs from the live one).
    """
    n_runs, n_pages = version.shape
    exists = version >= 0
    fetched = np.zeros((n_runs, n_pages), dtype=bool)
    for d, pages in enumerate(gets):
        fetched[d, list(pages)] = True
    fetched &= exists
    held = np.full(n_pages, -2, dtype=version.dtype)
    stale = np.zeros((n_runs, n_pages), dtype=bool)
    for d in range(n_runs):
        held = np.where(fetched[d], version[d], held)
        stale[d] = exists[d] & (held != version[d])
    in_use = {
        name: verdicts_in_use(list(reported.get(name, [None] * n_runs))) for name in segment_names
    }
    rows = []
    for d in range(n_runs):
        purposes: list[dict[str, int]] = [{} for _ in segment_names]
        seen: set[int] = set()
        for page in gets[d]:
            if page in seen:
                purpose = REPEAT
            else:
                seen.add(page)
                refetch, reason = marked[d].get(page, (False, ""))
                purpose = reason if refetch else SAMPLE
            counts = purposes[int(segments[page])]
            counts[purpose] = counts.get(purpose, 0) + 1
        for s, name in enumerate(segment_names):
            mask = segments == s
            verdict = in_use[name][d]
            rows.append(
                {
                    "run": d,
                    "segment": name,
                    "verdict_in_use": verdict,
                    "class": verdict_class(verdict) if d > 0 else None,
                    "gets": sum(purposes[s].values()),
                    "purposes": dict(sorted(purposes[s].items())),
                    "oracle": int(oracle[d, mask].sum()),
                    "pages": int(exists[d, mask].sum()),
                    "stale": int(stale[d, mask].sum()),
                }
            )
    return rows


def cost_by_class(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Sum the rows of :func:`attribute_by_verdict` per verdict class (runs 2.. only).

    Per class: ``segment_runs``, ``gets``, ``oracle``, ``x_oracle`` (GETs ÷ the oracle's
    fetches; None when the oracle fetched nothing), ``stale_page_runs`` (stale ÷ published
    page-runs) and ``purposes``. Classes without a segment-run are left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["class"] is None:
            continue
        acc = out.setdefault(
            row["class"],
            {"segment_runs": 0, "gets": 0, "oracle": 0, "pages": 0, "stale": 0, "purposes": {}},
        )
        for key in ("gets", "oracle", "pages", "stale"):
            acc[key] += row[key]
        acc["segment_runs"] += 1
        for purpose, n in row["purposes"].items():
            acc["purposes"][purpose] = acc["purposes"].get(purpose, 0) + n
    for acc in out.values():
        acc["x_oracle"] = acc["gets"] / acc["oracle"] if acc["oracle"] else None
        acc["stale_page_runs"] = acc["stale"] / acc["pages"] if acc["pages"] else None
    return {c: out[c] for c in VERDICT_CLASSES if c in out}


def equal_gets(
    tl: Timeline, fetched: np.ndarray, names: Sequence[str], classes: Sequence[str]
) -> dict[str, Any]:
    """The spider's page GETs (``fetched[run, page]``) against a uniform random refetch of
    as many pages of the same segment and against Poisson-only at the same counts, runs
    1.. (:mod:`bench.equalgets`): for the site, per segment (``names[s]``) and per segment
    class (``classes[s]``: its true verdict)."""
    order = equalgets.RateOrder()
    tally = equalgets.Tally()
    previous: dict[int, int] = {}
    for d in range(len(tl.times)):
        listed = np.flatnonzero(tl.listed[d] & (tl.version[d] >= 0))
        versions = {int(i): int(tl.version[d, i]) for i in listed}
        if d == 0:
            order.see(versions, float(tl.times[d]))
        else:
            segment_of = {int(i): names[int(tl.segments[i])] for i in listed}
            got = {int(i) for i in np.flatnonzero(fetched[d])}
            per = equalgets.score_run(
                segment_of, previous, versions, got, order=order, now=float(tl.times[d])
            )
            for name, catch in per.items():
                tally.add(name, classes[names.index(name)], catch)
        previous = versions
    return tally.to_json()
