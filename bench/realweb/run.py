"""The real-history benchmark: replay real sites' deploys on 127.0.0.1 and crawl each in order.

    python bench/realweb/run.py prepare [--sites a,b] [--mirror-root DIR] [--cache DIR]
    python bench/realweb/run.py [run] [--sites a,b] [--quick] [--deploys N] [--no-snapshot]
    python bench/realweb/run.py render bench/out/realweb-<timestamp>.json

For each site of ``sites.json``: extract its deploys (``prepare``; from the fetched
mirror, else a bare clone from GitHub), compute the ground truth (which pages' main
content changed at each deploy, ``truth.py``), serve deploy k on a port fixed by the
site's name with the clock at the deploy's commit time, and run the real spider once per
deploy with the state file (the first run ``sample=on``, the later ones also
``since=last pages=refetch``). Then one crawl of the newest deploy with the default
settings and no state (the one-snapshot check). Scores each segment's verdict against
its label and each run's refetches against the truth. Writes
``bench/out/realweb-<timestamp>.md`` and ``.json``; the spider's feeds, reports and logs
go to ``bench/out/realweb/<timestamp>/``. See ``bench/realweb/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import equalgets
from bench.realweb import corpus, split, truth
from bench.realweb import segments as segmentation
from bench.realweb.server import ReplayServer, port_for

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

REPO = corpus.REPO
OUT = REPO / "bench" / "out"
#: Verdicts whose lastmod a scheduler uses.
USABLE = frozenset({"TRUSTED", "PROVISIONAL", "OVER_REPORTING"})
#: True verdicts under which trusting lastmod loses changes.
DANGEROUS_TRUTH = frozenset({"STALE", "GENERATION_TIME"})
WITHIN = 5
QUICK_DEPLOYS = 6


def log(message: str) -> None:
    print(f"[realweb {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# One spider run
# --------------------------------------------------------------------------------------


@dataclass
class RunRecord:
    deploy: int
    commit: str
    clock: str
    returncode: int
    wall_s: float
    error: str | None = None
    items: int = 0
    refetch: dict[str, str] = field(default_factory=dict)  # path -> reason, refetch true
    item_segments: dict[str, str] = field(default_factory=dict)  # path -> the item's segment
    reasons: dict[str, int] = field(default_factory=dict)
    segments: dict[str, dict[str, Any]] = field(default_factory=dict)
    incremental: dict[str, Any] = field(default_factory=dict)
    page_gets: list[str] = field(default_factory=list)
    #: pages the spider fetched and recorded in its state file on this run (samples,
    #: refetches, probes, waves; not the pages link following fetched for coverage)
    recorded: list[str] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)
    log_errors: int = 0

    def verdict(self, segment: str) -> str | None:
        seg = self.segments.get(segment)
        return None if seg is None else seg.get("verdict")


def spider_command(
    origin: str,
    run_dir: Path,
    state: Path | None,
    *,
    incremental: bool,
    sample: bool,
    settings: Sequence[str] = (),
) -> list[str]:
    """The spider's command line; ``settings``: ``--set``'s ``NAME=VALUE`` (a policy to
    measure against the defaults, as bench/simweb's ``--spider-arg``)."""
    cmd = ["nice", "-n", "10", sys.executable, "-m", "scrapy", "crawl", "sitemap"]
    cmd += ["-a", f"origin={origin}"]
    if sample:
        cmd += ["-a", "sample=on"]
    cmd += ["-a", f"state={state}" if state else "state=off"]
    if incremental:
        cmd += ["-a", "since=last", "-a", "pages=refetch"]
    cmd += ["-O", str(run_dir / "feed.jsonl")]
    for setting in (
        f"SITEMAPCRAWL_REPORT_PATH={run_dir / 'report.json'}",
        f"LOG_FILE={run_dir / 'spider.log'}",
        "LOG_LEVEL=INFO",
        "REMOTE_CONTROL_ENABLED=False",
        "TELNETCONSOLE_ENABLED=False",
        # AutoThrottle's first delay is seconds per request; the replay answers at once.
        "AUTOTHROTTLE_ENABLED=False",
        *settings,
    ):
        cmd += ["-s", setting]
    return cmd


def crawl(
    server: ReplayServer,
    k: int,
    run_dir: Path,
    state: Path | None,
    *,
    incremental: bool,
    sample: bool = True,
    timeout: float = 600.0,
    settings: Sequence[str] = (),
) -> RunRecord:
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("feed.jsonl", "report.json", "spider.log"):
        (run_dir / stale).unlink(missing_ok=True)
    spec = server.spec
    cmd = spider_command(
        server.origin, run_dir, state, incremental=incremental, sample=sample, settings=settings
    )
    started = time.monotonic()
    try:
        with (run_dir / "stdout.txt").open("wb") as out:
            proc = subprocess.run(
                cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
            )
        rc, error = proc.returncode, None if proc.returncode == 0 else f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        rc, error = -1, f"timed out after {timeout:.0f} s"
    deploy = spec.deploys[k]
    record = RunRecord(k, deploy.commit, deploy.iso, rc, time.monotonic() - started, error)
    read_outputs(record, run_dir)
    hits = server.hits_of(server.run)
    record.requests = dict(Counter(f"{h.what} {h.status}" for h in hits))
    record.page_gets = sorted({h.path for h in hits if h.what == "page" and h.status == 200})
    if state is not None and state.is_file():
        record.recorded = recorded_pages(state)
    return record


def recorded_pages(state: Path) -> list[str]:
    """The paths of the pages the spider's last run recorded in its state file (its
    ``fetches`` table: what it fetched and keeps the fingerprint of)."""
    with contextlib.closing(sqlite3.connect(f"file:{state}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT url FROM fetches WHERE run_id = (SELECT max(id) FROM runs)"
        ).fetchall()
    return sorted({urlsplit(url).path or "/" for (url,) in rows})


def recorded_by_run(state: Path) -> list[list[str]] | None:
    """The paths each finished run recorded in the state file (its ``fetches``), in run
    order: what :func:`recorded_pages` read after each run, read again at the end (None
    when there is no file)."""
    if not state.is_file():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{state}?mode=ro", uri=True)) as db:
        runs = [
            run_id
            for (run_id,) in db.execute(
                "SELECT id FROM runs WHERE finished_at IS NOT NULL ORDER BY id"
            )
        ]
        out: dict[int, set[str]] = {run_id: set() for run_id in runs}
        for run_id, url in db.execute("SELECT run_id, url FROM fetches"):
            if run_id in out:
                out[run_id].add(urlsplit(url).path or "/")
    return [sorted(out[run_id]) for run_id in runs]


def read_outputs(record: RunRecord, run_dir: Path) -> None:
    feed = run_dir / "feed.jsonl"
    reasons: Counter[str] = Counter()
    if feed.is_file():
        with feed.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                item = json.loads(line)
                if "url" not in item:
                    continue
                record.items += 1
                if item.get("segment") is not None:
                    path = urlsplit(item["url"]).path or "/"
                    record.item_segments.setdefault(path, str(item["segment"]))
                if item.get("refetch") is None:
                    continue
                reasons[str(item.get("refetch_reason"))] += 1
                if item["refetch"]:
                    path = urlsplit(item["url"]).path or "/"
                    record.refetch[path] = str(item.get("refetch_reason"))
    record.reasons = dict(reasons)
    report_file = run_dir / "report.json"
    report: Any = None
    if report_file.is_file():
        report = json.loads(report_file.read_text(encoding="utf-8"))
        if isinstance(report, list):
            report = report[0] if report else None
    if not report:
        record.error = record.error or "no site report"
        return
    for seg in report.get("segments", []):
        record.segments[seg.get("segment", "?")] = {
            "verdict": seg.get("verdict"),
            "static_verdict": seg.get("static_verdict"),
            "urls": seg.get("urls"),
            "reason": seg.get("reason"),
            "evidence": seg.get("evidence"),
            "cross_run": seg.get("cross_run"),
            "samples": [
                {
                    "url": urlsplit(s.get("url", "")).path,
                    "lastmod": s.get("lastmod"),
                    "page_modified": (s.get("page_modified") or {}).get("raw"),
                    "page_modified_source": (s.get("page_modified") or {}).get("source"),
                    "page_published": (s.get("page_published") or {}).get("raw"),
                    "outcome": s.get("outcome"),
                }
                for s in (seg.get("samples") or [])[:12]
            ],
        }
    record.incremental = report.get("incremental") or {}
    log_file = run_dir / "spider.log"
    if log_file.is_file():
        with log_file.open(encoding="utf-8", errors="replace") as handle:
            record.log_errors = sum(1 for line in handle if "] ERROR: " in line)


# --------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------


def accepted(label: dict[str, Any] | None, key: str = "accept") -> set[str]:
    if not label:
        return set()
    return set(label.get(key) or label.get("accept") or [label["verdict"]])


def snapshot_accepted(label: dict[str, Any] | None) -> set[str]:
    """What a first crawl may say of a segment: its label's ``snapshot_accept`` (else
    ``accept``); of a TRUSTED label also PROVISIONAL and UNVERIFIABLE (one crawl has no
    history to show the recall)."""
    ok = accepted(label, "snapshot_accept")
    if label and label.get("verdict") == "TRUSTED":
        ok |= UNKNOWABLE_ACCEPT
    return ok


def runs_to_stay(ok: list[bool]) -> int | None:
    """Runs until the verdict is right and stays right to the end (None: wrong at the end)."""
    if not ok or not ok[-1]:
        return None
    k = len(ok)
    while k > 0 and ok[k - 1]:
        k -= 1
    return k + 1


#: Changes caught with a lastmod move before TRUSTED can be known: with n of n caught and
#: no miss, the one-sided 95 % Wilson lower bound of the recall, n / (n + 1.645²), reaches
#: 0.8 at n = 11 (whatever the spider's own thresholds).
KNOWABLE_TP = 11
#: What a TRUSTED label also accepts on the runs before that: no history can show it yet.
UNKNOWABLE_ACCEPT = frozenset({"PROVISIONAL", "UNVERIFIABLE"})


#: What a run that crashed or timed out is scored as, on every segment it should have judged.
FAILED = "FAILED"
#: Labels of honest lastmods, and the verdicts that call honest lastmods wrong.
HONEST_TRUTH = frozenset({"TRUSTED", "PROVISIONAL"})
HONEST_WRONG = frozenset({"STALE", "OVER_REPORTING"})


def longest_streak(flags: Sequence[bool]) -> int:
    """The longest run of consecutive True values."""
    best = cur = 0
    for flag in flags:
        cur = cur + 1 if flag else 0
        best = max(best, cur)
    return best


def with_failures(
    verdicts: list[str | None], failed: set[int], expected: Sequence[bool] | None = None
) -> list[str | None]:
    """The verdicts with every failed run (crashed or timed out) set to ``FAILED`` where the
    segment should have been judged: it had a verdict, or ``expected[k]`` (the segment is
    one of the deploy's, ``segments.py``); without ``expected``, whenever any run judged
    the segment."""
    out = list(verdicts)
    seen = any(v is not None for v in verdicts)
    for k in failed:
        if not 0 <= k < len(out):
            continue
        should = seen if expected is None else (k < len(expected) and bool(expected[k]))
        if out[k] is not None or should:
            out[k] = FAILED
    return out


def score_segment(
    label: dict[str, Any] | None,
    verdicts: list[str | None],
    caught: list[int] | None = None,
    first_unreported: int | None = None,
    *,
    failed: set[int] | None = None,
    expected: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """Scores over the runs where the segment exists. A category a site adds or removes is
    judged while it is there; a group the flat-sitemap grouping folds into ``/`` for a few
    deploys (it fell under ``SITEMAPCRAWL_SEGMENT_MIN_URLS``) has no verdict then, and a
    run without a verdict is neither right nor wrong (``gaps`` counts them). ``caught[k]``:
    the segment's changes that came with a lastmod move in runs 1..k; a TRUSTED label also
    accepts PROVISIONAL and UNVERIFIABLE while fewer than ``KNOWABLE_TP`` have come (no
    history can show the recall yet). ``first_unreported``: the first run with a change of
    a dated page of the segment that its lastmod did not report; the trust given from then
    on is ``dangerous_after`` (before it, the lastmod had been right about every change).
    ``failed``: runs that crashed or timed out; each is WRONG for the segment when the
    segment should have been judged then (:func:`with_failures`), never a gap. Beside the
    accept lists: ``exact_*`` (the label's own verdict), ``honest_wrong_*`` (a TRUSTED or
    PROVISIONAL label judged STALE or OVER_REPORTING, whatever the accept list says) and
    the longest streaks of those and of dangerous trust."""
    verdicts = with_failures(verdicts, failed or set(), expected)
    ok_set = accepted(label)
    truth_v = label["verdict"] if label else None
    present = [k for k, v in enumerate(verdicts) if v is not None]
    span = [v for v in verdicts if v is not None]
    right = [
        verdicts[k] in ok_set
        or (
            truth_v == "TRUSTED"
            and caught is not None
            and caught[k] < KNOWABLE_TP
            and verdicts[k] in UNKNOWABLE_ACCEPT
        )
        for k in present
    ]
    knowable = (
        next((k for k, n in enumerate(caught) if n >= KNOWABLE_TP), None)
        if truth_v == "TRUSTED" and caught is not None
        else None
    )
    stay = runs_to_stay(right)
    exact = [verdicts[k] == truth_v for k in present]
    exact_stay = runs_to_stay(exact)
    # consecutive in run numbers: a gap (no verdict) ends a streak
    honest_wrong = [
        truth_v in HONEST_TRUTH and verdicts[k] in HONEST_WRONG for k in range(len(verdicts))
    ]
    danger = [truth_v in DANGEROUS_TRUTH and verdicts[k] in USABLE for k in range(len(verdicts))]
    return {
        "label": truth_v,
        "accept": sorted(ok_set),
        "verdicts": verdicts,
        "runs_present": len(span),
        "gaps": (present[-1] - present[0] + 1 - len(present)) if present else 0,
        "final": span[-1] if span else None,
        "right_final": bool(right and right[-1]),
        "strict_final": bool(span and span[-1] == truth_v),
        "runs_to_right": stay,
        # from the run where it can be known: run 0, or a TRUSTED label's knowable_from
        "right_within": stay is not None
        and (stay <= WITHIN or (knowable is not None and stay - 1 - knowable < WITHIN)),
        "right_within_run0": stay is not None and stay <= WITHIN,
        "right_runs": sum(right),
        "flaps": sum(1 for a, b in pairwise(span) if a != b),
        "dangerous_runs": (
            sum(1 for v in span if v in USABLE) if truth_v in DANGEROUS_TRUTH else 0
        ),
        **({"knowable_from": knowable} if truth_v == "TRUSTED" and caught is not None else {}),
        "first_unreported": first_unreported,
        "dangerous_after": (
            sum(
                1
                for k in present
                if first_unreported is not None and k >= first_unreported and verdicts[k] in USABLE
            )
            if truth_v in DANGEROUS_TRUTH
            else 0
        ),
        "dangerous_streak": longest_streak(danger),
        "exact_runs": sum(exact),
        "exact_within_run0": exact_stay is not None and exact_stay <= WITHIN,
        "honest_wrong_runs": sum(honest_wrong),
        "honest_wrong_streak": longest_streak(honest_wrong),
        "failed_runs": sum(1 for v in verdicts if v == FAILED),
    }


def _captured(path: str, gets: set[str]) -> bool:
    return path in gets or (path + "/") in gets


_TRUSTED_RUNS = "TRUSTED, standing TRUSTED"
#: The fetch counts kept per label verdict (``by_label``).
_CLASS_KEYS = (
    "changed",
    "refetch_marked",
    "refetch_old",
    "refetch_old_changed",
    "fetched_old",
    "missed",
    "missed_recorded",
    "moved_old",
    "moved_old_changed",
)


def score_fetches(
    tr: truth.Truth,
    records: list[RunRecord],
    label_of: Callable[[int, str], str | None] | None = None,
    standing_of: Callable[[int, str], str | None] | None = None,
) -> dict[str, Any]:
    """The fetch side against the oracle, runs 1.. (run 0 has no history). ``label_of(k,
    page)``: the label verdict of the page's segment at deploy k; the counts are also kept
    per label verdict (``by_label``), which is how the issue's bound on honest segments
    (label TRUSTED: at most 1.2 x the oracle refetched, 0.5 % of changes missed) is read.
    ``refetch_old``: refetches of pages listed at the previous deploy too (a new page must
    be fetched whatever its lastmod says; the oracle is the changed pages). ``fetched_old``:
    every GET of such a page on the run, whatever asked for it (refetch, sample, panel,
    audit, link following): what the site paid. ``moved_old``: see
    :func:`lastmod_follower`. ``standing_of(k,
    page)``: the verdict of the page's segment on run k - 1, the one run k's decisions
    used; pages of a TRUSTED label whose segment was TRUSTED then are also counted as
    "TRUSTED, standing TRUSTED" (bench/simweb reads its bound on such segment-runs).
    ``missed_recorded``: changed pages the spider did not fetch and record in its state
    on that run (a page link following fetched for coverage is not recorded)."""
    per_run = []
    totals = Counter()
    by_label: dict[str, Counter[str]] = {}
    held: dict[str, int] = {}  # page -> version the spider holds
    never: Counter[str] = Counter()
    live_versions: dict[tuple[str, int], bool] = {}
    for k, rec in enumerate(records):
        gets = set(rec.page_gets)
        changed, new = tr.changed(k), tr.new(k)
        refetch = set(rec.refetch)
        fetched_changed = {p for p in changed if _captured(p, gets)}
        missed = changed - fetched_changed
        recorded = set(rec.recorded)
        missed_recorded = {p for p in changed if not _captured(p, recorded)}
        listed = tr.listed(k)
        if k > 0 and label_of is not None:
            before = tr.listed(k - 1)
            for name, pages in (
                ("changed", changed),
                ("refetch_marked", refetch),
                ("refetch_old", refetch & before),
                ("refetch_old_changed", refetch & before & changed),
                ("fetched_old", {p for p in before & listed if _captured(p, gets)}),
                ("missed", missed),
                ("missed_recorded", missed_recorded),
            ):
                for p in pages:
                    for cls in label_classes(k, p, label_of, standing_of):
                        by_label.setdefault(cls, Counter())[name] += 1
        stale = 0
        for p in listed:
            v = tr.versions[p][k]
            live_versions.setdefault((p, v), False)
            if _captured(p, gets):
                held[p] = v
                live_versions[(p, v)] = True
            if held.get(p) != v:
                stale += 1
        row = {
            "deploy": k,
            "listed": len(listed),
            "changed": len(changed),
            "new": len(new) if k else 0,
            "lastmod_moved": len(tr.lastmod_moved(k)),
            "lastmod_moved_changed": len(tr.lastmod_moved(k) & changed),
            "refetch_marked": len(refetch),
            "refetch_marked_changed": len(refetch & changed),
            "page_gets": len(gets),
            "listed_gets": sum(1 for p in listed if _captured(p, gets)),
            "changed_fetched": len(fetched_changed),
            "missed": len(missed),
            "missed_pages": sorted(missed)[:20],
            "recorded": len(recorded),
            "missed_recorded": len(missed_recorded),
            "stale_after": stale,
        }
        per_run.append(row)
        if k > 0:
            for key in (
                "changed",
                "new",
                "refetch_marked",
                "refetch_marked_changed",
                "page_gets",
                "listed_gets",
                "changed_fetched",
                "missed",
                "recorded",
                "missed_recorded",
                "stale_after",
                "listed",
            ):
                totals[key] += row[key]
    for name, counts in lastmod_follower(tr, len(records), label_of, standing_of).items():
        by_label.setdefault(name, Counter()).update(counts)
    for (p, v), got in live_versions.items():
        if v > 0 and not got:
            never[p] += 1
    runs = max(1, len(records) - 1)
    return {
        "per_run": per_run,
        "totals": dict(totals),
        "refetch_per_run": totals["refetch_marked"] / runs,
        "gets_per_run": totals["page_gets"] / runs,
        "oracle_per_run": totals["changed"] / runs,
        "missed_share": totals["missed"] / totals["changed"] if totals["changed"] else None,
        "versions_never_fetched": sum(never.values()),
        "by_label": {
            name: {key: counts[key] for key in _CLASS_KEYS}
            for name, counts in sorted(by_label.items())
        },
        "stale_page_runs": totals["stale_after"] / totals["listed"] if totals["listed"] else None,
    }


def label_verdict(spec: corpus.SiteSpec) -> Callable[[str], str | None]:
    """The label verdict of each segment of the site (None: no label)."""

    def verdict(segment: str) -> str | None:
        label = spec.label(segment)
        return label["verdict"] if label else None

    return verdict


def equal_gets(
    tr: truth.Truth,
    segmaps: list[dict[str, str]],
    records: list[RunRecord],
    times: Sequence[float],
    class_of: Callable[[str], str | None],
) -> dict[str, Any]:
    """Changes caught by the pages the spider chose to fetch (its ``recorded`` fetches:
    samples, refetches, audits, probes, waves; not the pages link following fetched for
    coverage) against a uniform random refetch of as many pages of the same segment and
    against Poisson-only at the same counts (:mod:`bench.equalgets`), runs 1..: for the
    site, per segment, and per segment class (``class_of(segment)``: its label verdict).
    ``times``: each deploy's clock, seconds."""
    order = equalgets.RateOrder()
    tally = equalgets.Tally()
    previous: dict[str, int] = {}
    for k, rec in enumerate(records):
        listed = tr.listed(k)
        versions = {p: tr.versions[p][k] for p in listed}
        if k == 0:
            order.see(versions, times[k])
        else:
            recorded = set(rec.recorded)
            fetched = {p for p in listed if _captured(p, recorded)}
            segment_of = {p: segmaps[k][p] for p in listed if p in segmaps[k]}
            per = equalgets.score_run(
                segment_of, previous, versions, fetched, order=order, now=times[k]
            )
            for segment, catch in per.items():
                tally.add(segment, class_of(segment) or "unlabelled", catch)
        previous = versions
    return tally.to_json()


def segment_mismatches(segmaps: list[dict[str, str]], records: list[RunRecord]) -> dict[str, Any]:
    """The labels' segments (``segments.py``) against the spider's items, per listed page
    and run: a check that the labels are keyed as the spider names its segments."""
    count, checked, samples = 0, 0, []
    for k, rec in enumerate(records):
        for path, expected in segmaps[k].items():
            got = rec.item_segments.get(path)
            if got is None:
                continue
            checked += 1
            if got != expected:
                count += 1
                if len(samples) < 10:
                    samples.append({"run": k, "path": path, "label": expected, "spider": got})
    return {"checked": checked, "mismatches": count, "samples": samples}


def label_classes(
    k: int,
    page: str,
    label_of: Callable[[int, str], str | None],
    standing_of: Callable[[int, str], str | None] | None,
) -> list[str]:
    """The classes a page's counts at deploy k go to: its segment's label verdict, and
    ``TRUSTED, standing TRUSTED`` too when the label is TRUSTED and the segment was
    TRUSTED on the run before (the issue's bound, as bench/simweb reads it)."""
    label = label_of(k, page) or "unlabelled"
    if label == "TRUSTED" and standing_of is not None and standing_of(k, page) == "TRUSTED":
        return [label, _TRUSTED_RUNS]
    return [label]


def lastmod_follower(
    tr: truth.Truth,
    n: int,
    label_of: Callable[[int, str], str | None] | None,
    standing_of: Callable[[int, str], str | None] | None,
) -> dict[str, Counter[str]]:
    """Per label (and ``TRUSTED, standing TRUSTED``): ``moved_old``, the pages listed at
    the previous deploy too whose lastmod moved, and ``moved_old_changed``, those whose
    main content changed as well: what a scheduler that refetches exactly the lastmod
    moves (no audit, no max-age, no sample) would fetch, from the truth alone. The floor
    of any refetch that follows lastmod: the moves without a change are the site's own
    over-reporting."""
    out: dict[str, Counter[str]] = {}
    if label_of is None:
        return out
    for k in range(1, n):
        before, changed = tr.listed(k - 1), tr.changed(k)
        for page in tr.lastmod_moved(k) & before & tr.listed(k):
            for name in label_classes(k, page, label_of, standing_of):
                counts = out.setdefault(name, Counter())
                counts["moved_old"] += 1
                counts["moved_old_changed"] += page in changed
    return out


def score_frozen(
    tr: truth.Truth,
    segmaps: list[dict[str, str]],
    records: list[RunRecord],
    start: int,
    spec: corpus.SiteSpec,
) -> dict[str, Any]:
    """A run with the lastmods frozen from deploy ``start`` on (``--freeze-lastmods-from``):
    the sitemap stops reporting changes while the pages go on changing. Per segment of a
    TRUSTED label that was trusting on run ``start`` - 1: the verdicts from ``start``, the
    first run whose verdict no longer lets the lastmod drive refetches (``detected``, None
    when none did), and the changes of its pages on runs ``start`` .. ``detected`` (all
    unreported now) with how many of them the run fetched anyway."""
    out: dict[str, Any] = {"from": start, "segments": {}}
    for name in sorted({s for r in records for s in r.segments}):
        label = spec.label(name)
        before = records[start - 1].verdict(name) if start > 0 else None
        if not label or label["verdict"] != "TRUSTED" or before not in USABLE:
            continue
        verdicts = [r.verdict(name) for r in records[start:]]
        detected = next(
            (start + i for i, v in enumerate(verdicts) if v is not None and v not in USABLE),
            None,
        )
        changes = fetched = 0
        for k in range(start, (detected if detected is not None else len(records) - 1) + 1):
            gets = set(records[k].page_gets)
            for page in tr.changed(k):
                if segmaps[k].get(page) == name:
                    changes += 1
                    fetched += _captured(page, gets)
        out["segments"][name] = {
            "before": before,
            "verdicts": verdicts,
            "detected": detected,
            "changes_until": changes,
            "fetched_until": fetched,
        }
    return out


def page_labels(
    spec: corpus.SiteSpec, segmaps: list[dict[str, str]], verdicts: list[dict[str, Any]]
) -> tuple[Callable[[int, str], str | None], Callable[[int, str], str | None]]:
    """``label_of(k, page)``: the label verdict of the page's segment at deploy k;
    ``standing_of(k, page)``: its segment's verdict on run k - 1 (the one run k used),
    from ``verdicts`` (per run, segment -> verdict)."""

    def label_of(k: int, page: str) -> str | None:
        segment = segmaps[k].get(page)
        label = spec.label(segment) if segment is not None else None
        return label["verdict"] if label else None

    def standing_of(k: int, page: str) -> str | None:
        segment = segmaps[k].get(page)
        return verdicts[k - 1].get(segment) if segment is not None and k > 0 else None

    return label_of, standing_of


def trusted_refetch_reasons(
    tr: truth.Truth,
    records: list[RunRecord],
    label_of: Callable[[int, str], str | None],
    standing_of: Callable[[int, str], str | None],
) -> dict[str, dict[str, int]]:
    """What the refetches the issue's bound reads are made of: the refetches of pages
    listed at the previous deploy too, of a TRUSTED label on a TRUSTED segment-run (the
    ``TRUSTED, standing TRUSTED`` row's "of listed pages"), per the spider's
    ``refetch_reason``, and how many of them had changed (``lastmod_changed`` unchanged:
    the lastmod moved without a change of the main content; ``audit``: the audit's
    cost)."""
    reasons: dict[str, Counter[str]] = {}
    for k, rec in enumerate(records):
        if k == 0:
            continue
        before, changed = tr.listed(k - 1), tr.changed(k)
        for page, reason in rec.refetch.items():
            if page not in before or _TRUSTED_RUNS not in label_classes(
                k, page, label_of, standing_of
            ):
                continue
            counts = reasons.setdefault(reason, Counter())
            counts["refetch"] += 1
            counts["changed"] += page in changed
    return {reason: dict(c) for reason, c in sorted(reasons.items())}


def segment_history(
    tr: truth.Truth, segmaps: list[dict[str, str]], n: int
) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Per segment: its changes that came with a lastmod move, summed over runs 1..k
    (``caught[segment][k]``), and the first run with a change of a dated page that its
    lastmod did not report."""
    caught: dict[str, list[int]] = {}
    for k in range(n):
        moved_changed = tr.changed(k) & tr.lastmod_moved(k)
        counts = Counter(segmaps[k][p] for p in moved_changed if p in segmaps[k])
        for s in set(caught) | set(counts):
            before = caught.setdefault(s, [0] * n)[k - 1] if k else 0
            caught[s][k] = before + counts.get(s, 0)
    first_unreported: dict[str, int] = {}
    for k in range(1, n):
        unreported = {
            p
            for p in tr.changed(k) - tr.lastmod_moved(k)
            if tr.lastmods[k].get(p) is not None and p in segmaps[k]
        }
        for p in unreported:
            first_unreported.setdefault(segmaps[k][p], k)
    for k in range(1, n):  # segments with no change at some runs carry the count on
        for row in caught.values():
            row[k] = max(row[k], row[k - 1])
    return caught, first_unreported


def expected_segments(
    spec: corpus.SiteSpec, segmaps: list[dict[str, str]], n: int
) -> dict[str, list[bool]]:
    """Per labelled segment of the deploys (``segments.py``): whether deploy k has it, the
    runs that should judge it (a failed run is scored WRONG on them)."""
    out: dict[str, list[bool]] = {}
    for k in range(min(n, len(segmaps))):
        for seg in set(segmaps[k].values()):
            if spec.label(seg) is not None:
                out.setdefault(seg, [False] * n)[k] = True
    return out


def score_site_segments(
    spec: corpus.SiteSpec,
    result: dict[str, Any],
    *,
    verdicts_of: dict[str, list[str | None]],
    segmaps: list[dict[str, str]],
    caught: dict[str, list[int]],
    first_unreported: dict[str, int | None],
    failed: set[int],
) -> dict[str, dict[str, Any]]:
    """Score every segment with a verdict, and, when runs failed, the labelled segments the
    deploys have that no run judged (all their runs then count WRONG)."""
    n = result["deploys"]
    expected = expected_segments(spec, segmaps, n)
    names = set(verdicts_of)
    if failed:
        names |= set(expected)
    out = {}
    for name in sorted(names):
        out[name] = score_segment(
            spec.label(name),
            verdicts_of.get(name, [None] * n),
            caught.get(name, [0] * n),
            first_unreported.get(name),
            failed=failed,
            expected=expected.get(name),
        )
    return out


def rescore(data: dict[str, Any], cache: Path) -> None:
    """Score a results file's segments again from its verdicts (the fetch counts stay):
    what a scoring change says of a run already made. The lastmod follower's counts
    (:func:`lastmod_follower`) are the truth's, and the refetch reasons
    (:func:`trusted_refetch_reasons`) are read again when the run's spider outputs are
    still on this machine."""
    specs = {spec.name: spec for spec in corpus.load_sites()}
    for result in data["sites"]:
        spec, n = specs[result["name"]], result["deploys"]
        roots = [corpus.deploy_dir(cache, spec, k) for k in range(n)]
        tr = truth.compute(spec, roots, cache / spec.name / "truth.json")
        segmaps = segmentation.per_deploy(spec, roots)
        caught, first = segment_history(tr, segmaps, n)
        result["half"] = split.half(spec.repo)
        failed = {k for k, run_ in enumerate(result["runs"]) if run_.get("error")}
        result["failed_runs"] = sorted(failed)
        verdicts_of = {
            name: [run_["verdicts"].get(name) for run_ in result["runs"]]
            for name in result["segments"]
        }
        scored = score_site_segments(
            spec,
            result,
            verdicts_of=verdicts_of,
            segmaps=segmaps,
            caught=caught,
            first_unreported=first,
            failed=failed,
        )
        for name, seg in scored.items():
            result["segments"].setdefault(name, {"urls": None, "last_reason": None}).update(seg)
        verdicts = [run["verdicts"] for run in result["runs"]]
        label_of, standing_of = page_labels(spec, segmentation.per_deploy(spec, roots), verdicts)
        by_label = result["fetches"].setdefault("by_label", {})
        for name, counts in lastmod_follower(tr, n, label_of, standing_of).items():
            by_label.setdefault(name, {}).update(counts)
        site_dir = _site_dir(data["meta"], result["name"])
        if site_dir is not None:  # the spider's outputs are still there: the reasons
            records = []
            for k in range(n):
                record = RunRecord(k, spec.deploys[k].commit, "", 0, 0.0)
                read_outputs(record, site_dir / f"run{k:02d}")
                records.append(record)
            result["fetches"]["trusted_reasons"] = trusted_refetch_reasons(
                tr, records, label_of, standing_of
            )
            recorded = recorded_by_run(site_dir / "state.sqlite")
            if recorded is not None and len(recorded) == n:
                for record, paths in zip(records, recorded, strict=True):
                    record.recorded = paths
                result["fetches"]["equal_gets"] = equal_gets(
                    tr,
                    segmaps,
                    records,
                    [d.time for d in spec.deploys[:n]],
                    label_verdict(spec),
                )
    data["meta"]["summary"] = summarise(data["sites"])
    data["meta"]["summary_by_half"] = summarise_halves(data["sites"])
    data["meta"]["rescored"] = _commit()


def _site_dir(meta: dict[str, Any], name: str) -> Path | None:
    """The site's spider outputs of a results file's run (a merged file has one work
    directory per part), when they are still on this machine."""
    for workdir in str(meta.get("workdir", "")).split():
        site_dir = Path(workdir) / name
        if (site_dir / "run00").is_dir():
            return site_dir
    return None


# --------------------------------------------------------------------------------------
# One site
# --------------------------------------------------------------------------------------


def bench_site(spec: corpus.SiteSpec, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    n = len(spec.deploys) if args.deploys is None else min(args.deploys, len(spec.deploys))
    corpus.prepare([spec], args.mirror_root, args.cache, limit=n)
    roots = [corpus.deploy_dir(args.cache, spec, k) for k in range(n)]
    tr = truth.compute(spec, roots, args.cache / spec.name / "truth.json")
    segmaps = segmentation.per_deploy(spec, roots)
    site_dir = workdir / spec.name
    state = site_dir / "state.sqlite"
    result: dict[str, Any] = {
        "name": spec.name,
        "repo": spec.repo,
        "branch": spec.branch,
        "generator": spec.generator,
        "generator_version": spec.generator_version,
        "deploys": n,
        "pages": len(tr.pages),
        "changed_per_deploy": [len(tr.changed(k)) for k in range(n)],
    }
    records: list[RunRecord] = []
    try:
        server = ReplayServer(spec, port_for(spec.name))
    except OSError:
        log(f"{spec.name}: port {port_for(spec.name)} in use; a free port (another sample draw)")
        server = ReplayServer(spec)
    with server:
        result["origin"] = server.origin
        freeze_from = args.freeze_lastmods_from
        for k in range(n):
            frozen = (
                tr.lastmods[freeze_from] if freeze_from is not None and k >= freeze_from else None
            )
            server.set_deploy(roots[k], spec.deploys[k].time, k, frozen)
            run_dir = site_dir / f"run{k:02d}"
            options = {"timeout": args.timeout, "settings": args.set}
            rec = crawl(server, k, run_dir, state, incremental=k > 0, **options)
            if rec.returncode < -1:  # killed by a signal from outside: once more
                log(f"{spec.name} deploy {k}: killed ({rec.returncode}); again")
                server.drop_run(k)
                rec = crawl(server, k, run_dir, state, incremental=k > 0, **options)
            records.append(rec)
            log(
                f"{spec.name} deploy {k} ({rec.clock}): exit {rec.returncode}, "
                f"{rec.wall_s:.1f} s, {len(rec.page_gets)} page GETs, "
                f"{len(rec.refetch)} refetch, changed {len(tr.changed(k))}; "
                + ", ".join(f"{s}={v['verdict']}" for s, v in sorted(rec.segments.items())[:6])
                + (f"; error: {rec.error}" if rec.error else "")
            )
        if not args.no_snapshot:
            server.set_deploy(roots[-1], spec.deploys[n - 1].time, 1000)
            snap = crawl(
                server,
                n - 1,
                site_dir / "snapshot",
                None,
                incremental=False,
                sample=False,
                timeout=args.timeout,
                settings=args.set,
            )
            result["snapshot"] = {
                "returncode": snap.returncode,
                "error": snap.error,
                "segments": {
                    s: {
                        "verdict": v["verdict"],
                        "reason": v["reason"],
                        "label": (spec.label(s) or {}).get("verdict"),
                        "right": v["verdict"] in snapshot_accepted(spec.label(s)),
                    }
                    for s, v in snap.segments.items()
                },
            }
    segments = sorted({s for r in records for s in r.segments})
    result["segments"] = {}
    result["half"] = split.half(spec.repo)
    caught, first_unreported = segment_history(tr, segmaps, n)
    failed = {r.deploy for r in records if r.error}
    all_scored = score_site_segments(
        spec,
        result,
        verdicts_of={s: [r.verdict(s) for r in records] for s in segments},
        segmaps=segmaps,
        caught=caught,
        first_unreported=first_unreported,
        failed=failed,
    )
    for s, scored in all_scored.items():
        last = next((r.segments[s] for r in reversed(records) if s in r.segments), {})
        scored["urls"] = last.get("urls")
        scored["last_reason"] = last.get("reason")
        scored["last_evidence"] = last.get("evidence")
        scored["last_cross_run"] = last.get("cross_run")
        scored["last_samples"] = last.get("samples")
        scored["first_reason"] = records[0].segments.get(s, {}).get("reason")
        scored["label_note"] = (spec.label(s) or {}).get("note")
        result["segments"][s] = scored

    verdicts = [{s: v["verdict"] for s, v in r.segments.items()} for r in records]
    label_of, standing_of = page_labels(spec, segmaps, verdicts)
    result["fetches"] = score_fetches(tr, records, label_of, standing_of)
    result["fetches"]["trusted_reasons"] = trusted_refetch_reasons(
        tr, records, label_of, standing_of
    )
    result["fetches"]["equal_gets"] = equal_gets(
        tr,
        segmaps,
        records,
        [d.time for d in spec.deploys[:n]],
        label_verdict(spec),
    )
    result["runs"] = [
        {
            "deploy": r.deploy,
            "commit": r.commit,
            "clock": r.clock,
            "returncode": r.returncode,
            "wall_s": round(r.wall_s, 1),
            "error": r.error,
            "items": r.items,
            "reasons": r.reasons,
            "requests": r.requests,
            "verdicts": {s: v["verdict"] for s, v in r.segments.items()},
            "reasons_by_segment": {s: v["reason"] for s, v in r.segments.items()},
            "log_errors": r.log_errors,
        }
        for r in records
    ]
    result["failed_runs"] = [r.deploy for r in records if r.error]
    if args.freeze_lastmods_from is not None:
        result["frozen"] = score_frozen(tr, segmaps, records, args.freeze_lastmods_from, spec)
    result["segment_mismatches"] = segment_mismatches(segmaps, records)
    return result


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _label_row(name: str, c: dict[str, int]) -> list[Any]:
    changed, missed, old = c.get("changed", 0), c.get("missed", 0), c.get("refetch_old", 0)
    unrecorded = c.get("missed_recorded", 0)
    ratio = f" ({old / changed:.2f} x)" if changed else ""
    fetched = c.get("fetched_old", 0)
    fetched_ratio = f" ({fetched / changed:.2f} x)" if changed else ""
    moved = c.get("moved_old", 0)
    moved_ratio = f" ({moved / changed:.2f} x)" if changed else ""
    return [
        name,
        changed,
        f"{missed} ({pct(_share(missed, changed))})",
        f"{unrecorded} ({pct(_share(unrecorded, changed))})",
        c.get("refetch_marked", 0),
        f"{old}{ratio}",
        c.get("refetch_old_changed", 0),
        f"{fetched}{fetched_ratio}",
        f"{moved}{moved_ratio}, {c.get('moved_old_changed', 0)} changed",
    ]


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    return lines


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    segs = [v for r in results for v in r["segments"].values() if v["label"]]
    unlabelled = [
        f"{r['name']} {s}" for r in results for s, v in r["segments"].items() if not v["label"]
    ]
    tot: Counter[str] = Counter()
    for r in results:
        tot.update(r["fetches"]["totals"])
    snaps = [v for r in results for v in (r.get("snapshot") or {}).get("segments", {}).values()]
    by_label: dict[str, Counter[str]] = {}
    for r in results:
        for name, counts in (r["fetches"].get("by_label") or {}).items():
            by_label.setdefault(name, Counter()).update(counts)
    reasons: dict[str, Counter[str]] = {}
    for r in results:
        for reason, counts in (r["fetches"].get("trusted_reasons") or {}).items():
            reasons.setdefault(reason, Counter()).update(counts)
    catch_by_class: dict[str, equalgets.Catch] = {}
    for r in results:
        for cls, data in ((r["fetches"].get("equal_gets") or {}).get("by_class") or {}).items():
            catch_by_class.setdefault(cls, equalgets.Catch()).add(equalgets.Catch.from_json(data))
    return {
        "equal_gets_by_class": {c: v.to_json() for c, v in sorted(catch_by_class.items())},
        "by_label": {name: dict(c) for name, c in sorted(by_label.items())},
        "trusted_reasons": {reason: dict(c) for reason, c in sorted(reasons.items())},
        "sites": len(results),
        "segments": len(segs),
        "unlabelled_segments": unlabelled,
        "right_within": sum(v["right_within"] for v in segs),
        "right_within_run0": sum(v.get("right_within_run0", v["right_within"]) for v in segs),
        "right_final": sum(v["right_final"] for v in segs),
        "strict_final": sum(v["strict_final"] for v in segs),
        "dangerous_runs": sum(v["dangerous_runs"] for v in segs),
        "dangerous_segments": sum(1 for v in segs if v["dangerous_runs"]),
        "dangerous_after": sum(v.get("dangerous_after", 0) for v in segs),
        "dangerous_after_segments": sum(1 for v in segs if v.get("dangerous_after")),
        "dangerous_streak_max": max((v.get("dangerous_streak", 0) for v in segs), default=0),
        "dangerous_max": max((v.get("dangerous_runs", 0) for v in segs), default=0),
        "segment_runs": sum(v["runs_present"] for v in segs),
        "right_runs": sum(v["right_runs"] for v in segs),
        "exact_runs": sum(v.get("exact_runs", 0) for v in segs),
        "exact_within_run0": sum(v.get("exact_within_run0", False) for v in segs),
        "honest_segment_runs": sum(v["runs_present"] for v in segs if v["label"] in HONEST_TRUTH),
        "honest_wrong_runs": sum(v.get("honest_wrong_runs", 0) for v in segs),
        "honest_wrong_segments": sum(1 for v in segs if v.get("honest_wrong_runs")),
        "honest_wrong_streak_max": max((v.get("honest_wrong_streak", 0) for v in segs), default=0),
        "honest_wrong_over_1": sum(1 for v in segs if v.get("honest_wrong_streak", 0) > 1),
        "dangerous_over_1": sum(1 for v in segs if v.get("dangerous_runs", 0) > 1),
        "failed_segment_runs": sum(v.get("failed_runs", 0) for v in segs),
        "fetch_totals": dict(tot),
        "missed_share": tot["missed"] / tot["changed"] if tot["changed"] else None,
        "snapshot_right": sum(1 for v in snaps if v["right"]),
        "snapshot_segments": len(snaps),
        "failed_runs": sum(len(r["failed_runs"]) for r in results),
        "segment_checked": sum(
            (r.get("segment_mismatches") or {}).get("checked", 0) for r in results
        ),
        "segment_mismatches": sum(
            (r.get("segment_mismatches") or {}).get("mismatches", 0) for r in results
        ),
    }


def summarise_halves(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """:func:`summarise` of each half (``split.py``), the site's half recomputed from its
    repository (a results file made before the split has none)."""
    halves: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        halves.setdefault(r.get("half") or split.half(r["repo"]), []).append(r)
    return {name: summarise(rs) for name, rs in sorted(halves.items())}


def _half_lines(name: str, s: dict[str, Any], sites: list[str]) -> list[str]:
    seg = s["segments"]
    runs = s["segment_runs"]
    return [
        f"### {name} half ({s['sites']} sites: {', '.join(sites)})",
        "",
        f"* labelled segments {seg}: right within {WITHIN} runs counted from run 0 "
        f"**{s['right_within_run0']}** ({pct(_share(s['right_within_run0'], seg))}); with a "
        f"TRUSTED label's runs counted from its `knowable_from`: {s['right_within']} "
        f"({pct(_share(s['right_within'], seg))}); the label's own verdict (exact) within "
        f"{WITHIN} runs from run 0: {s['exact_within_run0']} "
        f"({pct(_share(s['exact_within_run0'], seg))})",
        f"* right at the last run: {s['right_final']} ({pct(_share(s['right_final'], seg))}); "
        f"exact at the last run: {s['strict_final']} ({pct(_share(s['strict_final'], seg))})",
        f"* segment-runs {runs}: in the accept list {s['right_runs']} "
        f"({pct(_share(s['right_runs'], runs))}); the label's own verdict {s['exact_runs']} "
        f"({pct(_share(s['exact_runs'], runs))}); failed (crashed or timed out, counted "
        f"wrong) {s['failed_segment_runs']} ({s['failed_runs']} failed runs)",
        f"* honest segment-runs (label TRUSTED or PROVISIONAL) judged STALE or "
        f"OVER_REPORTING: **{s['honest_wrong_runs']}** of {s['honest_segment_runs']} on "
        f"{s['honest_wrong_segments']} segments; longest streak "
        f"**{s['honest_wrong_streak_max']}** runs; segments over 1 run: "
        f"{s['honest_wrong_over_1']}",
        f"* dangerous trust (label STALE or GENERATION_TIME given TRUSTED, PROVISIONAL or "
        f"OVER_REPORTING): **{s['dangerous_runs']}** runs on {s['dangerous_segments']} "
        f"segments, at most {max_dangerous(s)} on one segment (longest streak "
        f"{s['dangerous_streak_max']}); segments over 1 run: {s['dangerous_over_1']}",
        "",
    ]


def _catch_row(name: str, c: dict[str, Any]) -> list[Any]:
    def times(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f} x"

    return [
        name,
        c["changes"],
        f"{c['fetched']} / {c['listed']}",
        f"{c['caught']} ({pct(_share(c['caught'], c['changes']))})",
        f"{c['uniform']:.1f}",
        times(c["x_uniform"]),
        c["poisson"],
        times(c["x_poisson"]),
    ]


_CATCH_HEADER = [
    "",
    "changes",
    "spider's fetches / page-runs listed",
    "caught",
    "uniform random (expected)",
    "x uniform",
    "Poisson-only",
    "x Poisson",
]


def equal_gets_lines(results: list[dict[str, Any]], halves: dict[str, dict[str, Any]]) -> list[str]:
    """The refetch choice against uniform random and Poisson-only at equal GETs (issue
    35), per site and per segment class, each half apart (``halves``: the summaries)."""
    out: list[str] = []
    for half, summary in halves.items():
        rows = []
        for r in results:
            eg = (r["fetches"].get("equal_gets") or {}).get("site")
            if eg and (r.get("half") or split.half(r["repo"])) == half:
                rows.append(_catch_row(r["name"], eg))
        if not rows:
            continue
        out += [
            f"Changes caught at equal GETs, {half} half (runs 1..; pages listed at the run "
            "before and this one; the spider's recorded fetches: samples, refetches, audits, "
            "probes, waves, not link following) against a uniform random refetch of as many "
            "pages of the same segment (its expectation) and Poisson-only choosing as many "
            "by its own rates (`bench/equalgets.py`). Target (issue 35): at least 2 x "
            "uniform on every site with 5 or more changes.",
            "",
            *table(["site", *_CATCH_HEADER[1:]], rows),
            "",
        ]
        by_class = summary.get("equal_gets_by_class") or {}
        if by_class:
            out += table(
                [f"label of the segment ({half})", *_CATCH_HEADER[1:]],
                [_catch_row(c, v) for c, v in by_class.items()],
            )
            out.append("")
    return out


def max_dangerous(s: dict[str, Any]) -> int:
    return int(s.get("dangerous_max", 0))


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    s = meta["summary"]
    ft = s["fetch_totals"]
    out = [
        f"# Real-history benchmark ({meta['started']})",
        "",
        f"`{meta['command']}`: {s['sites']} sites, sitemapcrawl commit `{meta['commit']}`, "
        f"{meta['wall_s']:.0f} s.",
        "",
        "## Overall",
        "",
        f"* segments with a label: {s['segments']}; right within {WITHIN} runs (and staying "
        f"right; a TRUSTED label's runs counted from its `knowable_from`): "
        f"**{s['right_within']}** (counted from run 0 for every label: "
        f"{s.get('right_within_run0', s['right_within'])}); right at the last run: "
        f"**{s['right_final']}** (the label's own verdict: {s['strict_final']})",
        f"* dangerous-trust runs (a STALE or GENERATION_TIME segment given TRUSTED, "
        f"PROVISIONAL or OVER_REPORTING): **{s['dangerous_runs']}** on "
        f"{s['dangerous_segments']} segments; of them after the segment's first change "
        f"that its lastmod did not report (before it the lastmod had been right every time): "
        f"**{s.get('dangerous_after', 0)}** on {s.get('dangerous_after_segments', 0)}",
        f"* runs 1..: pages whose main content changed {s['fetch_totals'].get('changed', 0)}; "
        f"marked refetch {s['fetch_totals'].get('refetch_marked', 0)} (of them changed "
        f"{s['fetch_totals'].get('refetch_marked_changed', 0)}); page GETs "
        f"{s['fetch_totals'].get('page_gets', 0)}; missed changes "
        f"**{s['fetch_totals'].get('missed', 0)}** ({pct(s['missed_share'])}); not fetched "
        f"and recorded by the spider (link following's coverage GETs not counted): "
        f"**{s['fetch_totals'].get('missed_recorded', 0)}** "
        f"({pct(_share(ft.get('missed_recorded', 0), ft.get('changed', 0)))})",
        f"* one-snapshot check (newest deploy, default settings, no state): "
        f"{s['snapshot_right']} of {s['snapshot_segments']} segments as labelled",
        f"* failed runs: {s['failed_runs']}",
        f"* labels keyed as the spider's segments: {s.get('segment_mismatches', 0)} of "
        f"{s.get('segment_checked', 0)} item segments (page-runs) differ from `segments.py`",
        "",
    ]
    halves = meta.get("summary_by_half") or summarise_halves(results)
    out += [
        "## The two halves",
        "",
        "Split by `bench/realweb/split.py` (the low bit of blake2b(repo)), written down "
        "before the enlarged corpus was run. Targets (issue 36) on the held-out half: at "
        f"least 95 % of segments right within {WITHIN} runs from run 0; no honest segment "
        "STALE or OVER_REPORTING for more than 1 run; dangerous trust at most 1 run.",
        "",
    ]
    for name, hs in halves.items():
        sites = [r["name"] for r in results if (r.get("half") or split.half(r["repo"])) == name]
        out += _half_lines(name, hs, sites)
    if s.get("by_label"):
        out += [
            "Fetches by the label of the page's segment (runs 1..; the issue's bound reads the "
            "TRUSTED rows: refetches of listed pages at most 1.2 x the changes, at most 0.5 % "
            "missed; bench/simweb reads it on TRUSTED segment-runs, the second row):",
            "",
        ]
        out += table(
            [
                "label",
                "changed",
                "missed (no GET)",
                "missed (not recorded)",
                "refetch marked",
                "of listed pages",
                "of them changed",
                "all GETs of listed pages",
                "lastmod moves of listed pages (a pure lastmod follower's refetches)",
            ],
            [_label_row(name, c) for name, c in s["by_label"].items()],
        )
        out.append("")
    if s.get("trusted_reasons"):
        parts = [
            f"{reason} {c.get('refetch', 0)} ({c.get('changed', 0)} changed)"
            for reason, c in sorted(
                s["trusted_reasons"].items(), key=lambda item: -item[1].get("refetch", 0)
            )
        ]
        out += [
            "The TRUSTED-on-TRUSTED-runs refetches of listed pages by the spider's reason "
            "(of them changed): " + ", ".join(parts) + ".",
            "",
        ]
    out += equal_gets_lines(results, halves)
    if s["unlabelled_segments"]:
        out += [f"Segments without a label: {', '.join(s['unlabelled_segments'])}", ""]
    rows = []
    for r in results:
        segs = [v for v in r["segments"].values() if v["label"]]
        f = r["fetches"]
        rows.append(
            [
                r["name"],
                r["generator"],
                r["deploys"],
                r["pages"],
                f"{sum(v['right_within'] for v in segs)}/{len(segs)}",
                f"{sum(v['right_final'] for v in segs)}/{len(segs)}",
                sum(v["dangerous_runs"] for v in segs),
                f"{f['refetch_per_run']:.1f}",
                f"{f['gets_per_run']:.1f}",
                f"{f['oracle_per_run']:.1f}",
                f"{f['totals'].get('missed', 0)}/{f['totals'].get('changed', 0)}",
                f"{len(r['failed_runs'])}",
            ]
        )
    out += ["## Per site", ""]
    out += table(
        [
            "site",
            "generator",
            "deploys",
            "pages",
            f"right ≤{WITHIN}",
            "right last",
            "danger runs",
            "refetch/run",
            "GETs/run",
            "oracle/run",
            "missed",
            "failed",
        ],
        rows,
    )
    out += ["", "## Per segment", ""]
    rows = []
    for r in results:
        for name, v in r["segments"].items():
            rows.append(
                [
                    r["name"],
                    f"`{name}`",
                    v["urls"],
                    v["label"] or "—",
                    ",".join(v["accept"]) or "—",
                    " ".join(_abbr(x) for x in v["verdicts"]),
                    v["runs_to_right"] if v["runs_to_right"] is not None else "never",
                    "yes" if v["right_final"] else "**no**",
                    v["dangerous_runs"],
                    v.get("dangerous_after", 0),
                    v.get("honest_wrong_runs", 0),
                    r.get("half") or split.half(r["repo"]),
                ]
            )
    out += table(
        [
            "site",
            "segment",
            "urls",
            "label",
            "accepted",
            "verdict per run",
            "runs",
            "last",
            "danger",
            "danger after",
            "honest STALE/OVER",
            "half",
        ],
        rows,
    )
    out += [
        "",
        "Verdicts: T TRUSTED, P PROVISIONAL, G GENERATION_TIME, A ABSENT, S STALE, "
        "O OVER_REPORTING, p PARTIAL, I INVALID, Z TZ_SHIFT, U UNVERIFIABLE, x failed run "
        "(crashed or timed out: wrong), - none.",
        "",
    ]
    out += ["## One-snapshot check (newest deploy, default settings, state off)", ""]
    rows = []
    for r in results:
        for name, v in (r.get("snapshot") or {}).get("segments", {}).items():
            rows.append(
                [
                    r["name"],
                    f"`{name}`",
                    v["verdict"],
                    v["label"] or "—",
                    "yes" if v["right"] else "no",
                ]
            )
    out += table(["site", "segment", "verdict", "label", "as labelled"], rows)
    out += ["", "## Reasons at the last run (segments not right)", ""]
    for r in results:
        for name, v in r["segments"].items():
            if v["right_final"]:
                continue
            out.append(
                f"* **{r['name']} `{name}`** {v['final']} (label {v['label']}): {v['last_reason']}"
            )
    out.append("")
    frozen = [(r["name"], r["frozen"]) for r in results if r.get("frozen")]
    if frozen:
        out += [
            "",
            "## Lastmods frozen (a sitemap that stops reporting)",
            "",
            "From the deploy named on, every sitemap gives its pages that deploy's lastmods: "
            "the segments of a TRUSTED label trusting on the run before, the run whose verdict "
            "stopped using the lastmod, and the changes of their pages from the freeze to it "
            "(all unreported), with how many the runs fetched anyway.",
            "",
        ]
        rows = []
        for name, f in frozen:
            for seg, v in f["segments"].items():
                verdicts = " ".join((x or "-")[:1] for x in v["verdicts"])
                detected = v["detected"]
                after = "never" if detected is None else f"run {detected} (+{detected - f['from']})"
                fetched = f"{v['fetched_until']} / {v['changes_until']}"
                rows.append([name, f"`{seg}`", f["from"], v["before"], verdicts, after, fetched])
        out += table(
            ["site", "segment", "frozen from", "verdict before", "verdicts", "detected", "fetched"],
            rows,
        )
    return "\n".join(out)


_ABBR = {
    "TRUSTED": "T",
    "PROVISIONAL": "P",
    "GENERATION_TIME": "G",
    "ABSENT": "A",
    "STALE": "S",
    "OVER_REPORTING": "O",
    "PARTIAL": "p",
    "INVALID": "I",
    "TZ_SHIFT": "Z",
    "UNVERIFIABLE": "U",
    FAILED: "x",
}


def _abbr(v: str | None) -> str:
    return "-" if v is None else _ABBR.get(v, v)


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "sitemapcrawl"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out + ("+dirty" if dirty else "")


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


COMMANDS = ("prepare", "run", "render", "rescore", "merge")


def merge(path: Path, parts: list[Path]) -> None:
    """Write ``path`` (.json and .md) from runs of parts of the corpus (``--sites``, run
    side by side): their sites in ``sites.json``'s order, scored together."""
    loaded = [json.loads(p.read_text(encoding="utf-8")) for p in parts]
    order = {spec.name: k for k, spec in enumerate(corpus.load_sites())}
    results = sorted(
        (site for data in loaded for site in data["sites"]),
        key=lambda site: order.get(site["name"], len(order)),
    )
    metas = [data["meta"] for data in loaded]
    meta = {
        "started": " + ".join(m["started"] for m in metas),
        "command": " and ".join(m["command"] for m in metas),
        "commit": " / ".join(sorted({m["commit"] for m in metas})),
        "wall_s": max(m["wall_s"] for m in metas),
        "cpus": metas[0].get("cpus"),
        "workdir": " ".join(m["workdir"] for m in metas),
        "merged": [str(p) for p in parts],
    }
    write_results(path, results, meta)


def write_results(base: Path, results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """Score ``results`` together into ``meta``'s summary and write ``base``.json and .md;
    returns the markdown."""
    meta["summary"] = summarise(results)
    meta["summary_by_half"] = summarise_halves(results)
    base.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "sites": results}, indent=1, default=str)
    )
    text = markdown(results, meta)
    base.with_suffix(".md").write_text(text)
    return text


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        argv.insert(0, "run")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cmd", choices=COMMANDS)
    parser.add_argument("path", nargs="?", help="render, rescore: the results JSON")
    parser.add_argument("parts", nargs="*", help="merge: the results JSONs to merge into path")
    parser.add_argument("--sites", help="comma-separated site names (default: all)")
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_DEPLOYS} deploys")
    parser.add_argument("--deploys", type=int, help="first N deploys of each site")
    parser.add_argument("--no-snapshot", action="store_true", help="skip the one-snapshot check")
    parser.add_argument(
        "--freeze-lastmods-from",
        type=int,
        metavar="K",
        help="serve every sitemap with deploy K's lastmods from deploy K on: a lastmod that "
        "stops reporting, on the real pages (reported per TRUSTED segment: runs to detect)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per spider run")
    parser.add_argument("--mirror-root", type=Path, default=corpus.DEFAULT_MIRRORS)
    parser.add_argument("--cache", type=Path, default=corpus.DEFAULT_CACHE)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting for every spider run (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.quick and args.deploys is None:
        args.deploys = QUICK_DEPLOYS
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cmd == "rescore":
        path = Path(args.path)
        data = json.loads(path.read_text(encoding="utf-8"))
        rescore(data, args.cache)
        path.write_text(json.dumps(data, indent=1, default=str))
        path.with_suffix(".md").write_text(markdown(data["sites"], data["meta"]))
        return 0
    if args.cmd == "merge":
        merge(Path(args.path), [Path(p) for p in args.parts])
        return 0
    if args.cmd == "render":
        data = json.loads(Path(args.path).read_text(encoding="utf-8"))
        Path(args.path).with_suffix(".md").write_text(markdown(data["sites"], data["meta"]))
        return 0
    specs = corpus.select(corpus.load_sites(), args.sites)
    if args.cmd == "prepare":
        corpus.prepare(specs, args.mirror_root, args.cache, limit=args.deploys)
        return 0
    stamp = time.strftime("%Y%m%d-%H%M%S")
    commit = _commit()
    workdir = OUT / "realweb" / stamp
    for k in range(2, 100):  # two runs started in the same second keep their own files
        try:
            workdir.mkdir(parents=True)
            break
        except FileExistsError:
            stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{k}"
            workdir = OUT / "realweb" / stamp
    started = time.monotonic()
    results = []
    for spec in specs:
        log(f"{spec.name}: {spec.generator}, {spec.repo}@{spec.branch}")
        results.append(bench_site(spec, args, workdir))
    meta = {
        "started": stamp,
        "command": "python bench/realweb/run.py " + " ".join(sys.argv[1:]),
        "commit": commit,
        "wall_s": time.monotonic() - started,
        "cpus": os.cpu_count(),
        "workdir": str(workdir),
    }
    base = OUT / f"realweb-{stamp}"
    text = write_results(base, results, meta)
    print(text)
    log(f"wrote {base}.md and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
