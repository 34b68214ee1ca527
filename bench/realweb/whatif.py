"""What a lastmod-following refetch could save on honest pages, from the truth alone.

    python bench/realweb/whatif.py hugo-jena wp-saint-gilles hugo-comdev

No spider runs: for every page of a TRUSTED label listed at two deploys in a row, the
truth (``truth.py``) says whether its lastmod moved and whether its main content changed.
Two schedulers are replayed on that, neither with an audit, a sample or a max-age:

* the **lastmod follower** refetches exactly the pages whose lastmod moved (what
  ``run.py`` reports as ``moved_old``): the floor of any scheduler that trusts lastmod;
* the **per-URL learner** also refetches on a move, except a page whose moves we
  fetched ``min_moves`` times or more and whose Beta(1, 1) posterior share of moves
  that came with a change (against the version we held) is under ``theta``: a section
  page dated by its newest member, whose own content rarely changes.

``--quiet K`` replays instead a detector of a sitemap that stops reporting, per segment of
a TRUSTED label: at each run, the share of runs without a lastmod move before the current
quiet stretch (its Wilson upper bound q) and the stretch's length r; an alarm when
q^r < ``QUIET_P``. It prints the alarms on the real history (each one a needless
audit) and, with the lastmods frozen from deploy K (no move after K), the runs to the first
alarm.

It prints refetches, the changes missed (a change on a deploy the scheduler did not
fetch) and the ratio to the changes: the issue's bound on honest segments is 1.2 x with
at most 0.5 % missed. This bounds what the spider could reach before its audit is paid
for; it does not replay the spider.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.realweb import corpus, truth
from bench.realweb import segments as segmentation
from sitemapcrawl.verify.intervals import wilson


@dataclass(frozen=True)
class PageRun:
    deploy: int
    page: str
    moved: bool
    changed: bool
    version: int


def _truth(spec: corpus.SiteSpec, cache: Path) -> tuple[truth.Truth, list[dict[str, str]]]:
    """The site's truth (cached) and the spider's segment of each page, per deploy."""
    roots = [corpus.deploy_dir(cache, spec, k) for k in range(len(spec.deploys))]
    tr = truth.compute(spec, roots, cache / spec.name / "truth.json")
    return tr, segmentation.per_deploy(spec, roots)


def honest_page_runs(spec: corpus.SiteSpec, cache: Path) -> list[PageRun]:
    """The page-runs of TRUSTED-label pages listed at the deploy and the one before."""
    tr, segmaps = _truth(spec, cache)
    out = []
    for k in range(1, len(segmaps)):
        moved, changed = tr.lastmod_moved(k), tr.changed(k)
        for page in sorted(tr.listed(k) & tr.listed(k - 1)):
            segment = segmaps[k].get(page)
            label = spec.label(segment) if segment is not None else None
            if label and label["verdict"] == "TRUSTED":
                out.append(PageRun(k, page, page in moved, page in changed, tr.versions[page][k]))
    return out


def replay(
    runs: list[PageRun], theta: float | None = None, min_moves: int = 2
) -> tuple[int, int, int]:
    """(refetches, changes missed, changes); ``theta`` None: the lastmod follower."""
    held: dict[str, int] = {}  # the version we hold of a page, once fetched
    history: dict[str, tuple[int, int]] = {}  # moves fetched, of them with a change
    refetches = missed = changes = 0
    for run in runs:  # in deploy order
        changes += run.changed
        fetch = run.moved
        moves, with_change = history.get(run.page, (0, 0))
        if fetch and theta is not None and moves >= min_moves:
            fetch = (with_change + 1) / (moves + 2) >= theta
        if not fetch:
            missed += run.changed
            continue
        refetches += 1
        news = run.changed or (run.page in held and held[run.page] != run.version)
        history[run.page] = (moves + 1, with_change + news)
        held[run.page] = run.version
    return refetches, missed, changes


#: The quiet detector's alarm: a quiet stretch its segment's move rate gives less than this.
QUIET_P = 0.01
#: Runs of history the detector needs before its first alarm.
QUIET_HISTORY = 5


def segment_moves(spec: corpus.SiteSpec, cache: Path, every: bool = False) -> dict[str, list[int]]:
    """Per segment of a TRUSTED label (``every``: per segment): its pages' lastmod moves on
    each run 1.. (pages listed at the deploy and the one before)."""
    tr, segmaps = _truth(spec, cache)
    out: dict[str, list[int]] = {}
    for name in sorted({s for m in segmaps for s in m.values()}):
        label = spec.label(name)
        if every or (label and label["verdict"] == "TRUSTED"):
            out[name] = [
                sum(1 for p in tr.lastmod_moved(k) if segmaps[k].get(p) == name)
                for k in range(1, len(segmaps))
            ]
    return out


def quiet_alarms(moves: list[int]) -> list[int]:
    """The runs (1-based, as ``moves``) on which the quiet detector raises an alarm."""
    alarms = []
    quiet = 0
    for k, m in enumerate(moves, start=1):
        quiet = quiet + 1 if m == 0 else 0
        history = moves[: k - quiet]
        if not quiet or len(history) < QUIET_HISTORY:
            continue
        # the share of runs without a move, its one-sided 95 % Wilson upper bound: runs, not
        # moves, so that a burst (20 pages in one release) does not make the quiet look rare
        if wilson(history.count(0), len(history), z=1.645)[1] ** quiet < QUIET_P:
            alarms.append(k)
    return alarms


def quiet_report(names: list[str], specs: dict[str, corpus.SiteSpec], cache: Path, k: int) -> None:
    for name in names:
        per_segment = segment_moves(specs[name], cache)
        runs = len(next(iter(per_segment.values()), []))
        site = [sum(m[k] for m in per_segment.values()) for k in range(runs)]
        every = segment_moves(specs[name], cache, every=True)
        width = len(next(iter(every.values()), []))
        whole = [sum(m[k] for m in every.values()) for k in range(width)]
        rows = (
            list(per_segment.items())
            + ([("(its TRUSTED segments together)", site)] if site else [])
            + ([("(all its segments together)", whole)] if whole else [])
        )
        for segment, moves in rows:
            real = quiet_alarms(moves)
            # served with deploy k's lastmods from k on: run k still sees deploy k's moves
            frozen = quiet_alarms(moves[:k] + [0] * (len(moves) - k))
            first = next((r for r in frozen if r > k), None)
            delay = "never" if first is None else f"+{first - k}"
            rate = sum(moves) / len(moves)
            print(
                f"{name} {segment}: {rate:.1f} moves a run; alarms on the real history "
                f"{len(real)} {real[:6]}; frozen from {k}: first alarm {delay}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sites", nargs="+")
    parser.add_argument("--cache", type=Path, default=corpus.DEFAULT_CACHE)
    parser.add_argument(
        "--quiet", type=int, metavar="K", help="the quiet detector, lastmods frozen from K"
    )
    args = parser.parse_args(argv)
    specs = {spec.name: spec for spec in corpus.load_sites()}
    if args.quiet is not None:
        quiet_report(args.sites, specs, args.cache, args.quiet)
        return 0
    totals: dict[str, list[int]] = {}
    variants: list[tuple[str, float | None, int]] = [("lastmod follower", None, 0)]
    variants += [
        (f"learner theta {theta:.2f}, {m} moves", theta, m)
        for theta in (0.1, 0.2, 0.3)
        for m in (2, 3)
    ]
    for name in args.sites:
        runs = honest_page_runs(specs[name], args.cache)
        print(f"{name}: {len(runs)} honest page-runs")
        for label, theta, min_moves in variants:
            got = replay(runs, theta, min_moves)
            total = totals.setdefault(label, [0, 0, 0])
            for i, value in enumerate(got):
                total[i] += value
            print(f"  {label}: {_line(*got)}")
    if len(args.sites) > 1:
        print("all:")
        for label, (refetches, missed, changes) in totals.items():
            print(f"  {label}: {_line(refetches, missed, changes)}")
    return 0


def _line(refetches: int, missed: int, changes: int) -> str:
    ratio = refetches / changes if changes else float("nan")
    return f"{refetches} refetches, {missed} of {changes} changes missed ({ratio:.2f} x)"


if __name__ == "__main__":
    raise SystemExit(main())
