"""The simulated-web benchmark for lastmod verification: verdicts, fetches and staleness.

    python bench/simweb/run.py [--quick] [--days N] [--seed S] [--archetypes a,b]
                               [--pages N[,N...]] [--pages-for NAME=N[,N...]]
                               [--jobs J] [--no-spider]
    python bench/simweb/run.py --render bench/out/simweb-<timestamp>.json

For every archetype it generates a site, replays the baseline policies on its
event log (in process), serves it on 127.0.0.1 and runs the real spider once
per simulated day, then scores everything against the ground truth. Writes
``bench/out/simweb-<timestamp>.md`` and ``.json`` (and the spider's feeds and
logs under ``bench/out/simweb/<timestamp>/``). See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import equalgets
from bench.simweb import metrics, policies
from bench.simweb.model import ARCHETYPES, QUICK_ARCHETYPES, Site
from bench.simweb.server import SimServer
from bench.simweb.spider import REPO, decision_quality, fetch_matrix, run_day

OUT = REPO / "bench" / "out"


def _server(site: Site, label: str) -> SimServer:
    """The site's server, on a port fixed by its label: the spider's seeded sample hashes
    whole URLs, port included, so a random port would draw other pages on every run of the
    benchmark (the same code gave different verdict paths). A port in use falls back to a
    free one, and the log says the draw is then not the usual one."""
    port = 20000 + int.from_bytes(hashlib.blake2b(label.encode(), digest_size=4).digest()) % 20000
    try:
        return SimServer(site, port)
    except OSError:
        log(f"{label}: port {port} in use; serving on a free port (another sample draw)")
        return SimServer(site)


def log(message: str) -> None:
    print(f"[simweb {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 archetypes, 8 days, 150 pages")
    parser.add_argument("--days", type=int, help="simulated days (runs); 30 by default")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--archetypes", help="comma-separated names (default: all)")
    parser.add_argument(
        "--pages",
        type=_sizes,
        help="pages per site (default 300; quick 150); several comma-separated sizes run "
        "every archetype at each (a scaling sweep: results named archetype@pages)",
    )
    parser.add_argument(
        "--pages-for",
        action="append",
        default=[],
        metavar="NAME=N[,N...]",
        help="the page count(s) of one archetype, instead of --pages; repeatable",
    )
    parser.add_argument("--jobs", type=int, default=2, help="sites crawled at once")
    parser.add_argument("--no-spider", action="store_true", help="baselines only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per spider run")
    parser.add_argument(
        "--spider-repo",
        type=Path,
        default=REPO,
        help="run the spider of this checkout (default: this repository)",
    )
    parser.add_argument(
        "--spider-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an extra spider argument (-a), e.g. links=off; repeatable",
    )
    parser.add_argument(
        "--snapshot",
        choices=("head", "tree", "none"),
        default="head",
        help="run the spider from a copy of its committed code (head, the default), of the "
        "working tree as it is at the start (tree), or from the checkout itself (none)",
    )
    parser.add_argument(
        "--render", metavar="JSON", help="only rewrite the Markdown report of a saved run"
    )
    args = parser.parse_args(argv)
    if args.archetypes:
        names = [a.strip() for a in args.archetypes.split(",") if a.strip()]
        unknown = [a for a in names if a not in ARCHETYPES]
        if unknown:
            parser.error(f"unknown archetypes {unknown}; known: {', '.join(ARCHETYPES)}")
    else:
        names = list(QUICK_ARCHETYPES if args.quick else ARCHETYPES)
    args.names = names
    args.days = args.days or (8 if args.quick else 30)
    args.pages = args.pages or [150 if args.quick else 300]
    sizes = dict.fromkeys(names, args.pages)
    for spec in args.pages_for:
        name, _, value = spec.partition("=")
        if name not in sizes:
            parser.error(f"--pages-for {spec!r}: {name!r} is not among the archetypes run")
        try:
            sizes[name] = _sizes(value)
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--pages-for {spec!r}: {exc}")
    args.tasks = [(name, n) for name in names for n in sizes[name]]
    args.sizes = sorted({n for _, n in args.tasks})
    if not 1 <= args.days <= 90:
        parser.error("--days must be within 1..90 (the simulated horizon)")
    return args


def _sizes(text: str) -> list[int]:
    """``"300,3000"`` -> ``[300, 3000]`` (each at least 10, no repeats)."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a page count list: {text!r}") from None
    if not sizes or min(sizes) < 10 or len(set(sizes)) != len(sizes):
        raise argparse.ArgumentTypeError(f"page counts must be distinct and >= 10: {text!r}")
    return sizes


# --------------------------------------------------------------------------------------
# One archetype
# --------------------------------------------------------------------------------------


def bench_site(
    name: str, pages: int, args: argparse.Namespace, workdir: Path, label: str | None = None
) -> dict[str, Any]:
    """Generate, replay, crawl and score one archetype at ``pages`` pages."""
    label = label or name
    site = Site(name, args.seed, pages)
    times = [site.run_time(d) for d in range(args.days)]
    tl = site.timeline(times)
    fetch = policies.baselines(tl)
    scores = {policy: metrics.score_fetches(site, tl, f) for policy, f in fetch.items()}
    result: dict[str, Any] = {
        "archetype": name,
        "label": label,
        "description": site.archetype.description,
        "pages": pages,
        "segments": [
            {"segment": s.path, "truth": s.truth, "lastmod": s.lastmod, "evidence": s.evidence}
            for s in site.archetype.segments
        ],
        "changed_pages_per_run": float(fetch["oracle"][1:].sum(axis=1).mean())
        if args.days > 1
        else 0.0,
    }
    if args.no_spider:
        metrics.relative(scores)
        result["policies"] = scores
        return result
    site_dir = workdir / label
    site_dir.mkdir(parents=True, exist_ok=True)
    records = []
    with _server(site, label) as server:
        for day in range(args.days):
            record = run_day(
                site,
                server,
                day,
                site_dir,
                timeout=args.timeout,
                repo=args.spider_repo,
                extra=args.spider_arg,
            )
            if record.returncode < 0 and "timed out" not in (record.error or ""):
                # Killed by a signal from outside (another process's cleanup on a shared
                # machine): forget its requests and run the day once more.
                log(f"{label} day {day}: killed ({record.returncode}); running it again")
                server.drop_run(day)
                killed = record.returncode
                record = run_day(
                    site,
                    server,
                    day,
                    site_dir,
                    timeout=args.timeout,
                    repo=args.spider_repo,
                    extra=args.spider_arg,
                )
                record.killed.append(killed)
            records.append(record)
            log(
                f"{label} day {day}: exit {record.returncode}, {record.wall_s:.1f} s, "
                f"{len(record.page_gets)} page GETs, "
                f"verdicts {sorted(record.verdicts.values())}"
                + (f", error: {record.error}" if record.error else "")
            )
            if record.returncode != 0 and day == 0:
                break
    result["runs"] = [r.summary() for r in records]
    result["failed_runs"] = [r.day for r in records if r.error]
    result["killed_runs"] = [r.day for r in records if r.killed]
    result["incremental"] = any(r.incremental for r in records)
    verdicts = {}
    for spec in site.archetype.segments:
        per_run = [r.verdicts.get(spec.path) for r in records]
        verdicts[spec.path] = metrics.score_verdicts(spec.truth, per_run)
    result["verdicts"] = verdicts
    if result["incremental"] and len(records) == args.days:
        fetched = fetch_matrix(records, len(site.pages))
        scores["spider"] = metrics.score_fetches(site, tl, fetched)
        refetch_true = [sum(1 for r, _ in rec.refetch.values() if r) for rec in records]
        scores["spider"]["refetch_marked_per_run"] = (
            float(np.mean(refetch_true[1:])) if args.days > 1 else 0.0
        )
        scores["spider"]["extra_gets_per_run"] = (
            scores["spider"]["fetches_per_run"] - scores["spider"]["refetch_marked_per_run"]
        )
        result["decisions"] = decision_quality(records, tl.version, fetched)
        result["equal_gets"] = metrics.equal_gets(
            tl,
            fetched,
            [spec.path for spec in site.archetype.segments],
            [spec.truth for spec in site.archetype.segments],
        )
    if len(records) == args.days:
        result["by_verdict"] = metrics.attribute_by_verdict(
            tl.segments,
            [spec.path for spec in site.archetype.segments],
            version=tl.version,
            oracle=fetch["oracle"],
            gets=[r.page_gets for r in records],
            marked=[r.refetch for r in records],
            reported={path: v["verdicts"] for path, v in verdicts.items()},
        )
    metrics.relative(scores)
    if "spider" in scores:
        scores["spider"]["poisson_stale_at_equal_fetches"] = metrics.frontier_stale(
            scores, scores["spider"]["fetches_per_run"]
        )
    result["policies"] = scores
    return result


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _pages_text(pages: int | list[int]) -> str:
    return str(pages) if isinstance(pages, int) else ", ".join(map(str, pages))


def _label(result: dict[str, Any]) -> str:
    return str(result.get("label") or result["archetype"])


def pct(x: float | None, nd: int = 2) -> str:
    return "n/a" if x is None else f"{100 * x:.{nd}f} %"


def num(x: float | None, nd: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    return lines


def summarise(results: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    segs = [v for r in results for v in r.get("verdicts", {}).values()]
    affected = [v for v in segs if v["truth"] in metrics.DANGEROUS_TRUTH]

    def share(pred: Any) -> float | None:
        return sum(1 for v in segs if pred(v)) / len(segs) if segs else None

    return {
        "segments": len(segs),
        "correct_final": share(lambda v: v["correct_final"]),
        "lenient_final": share(lambda v: v["lenient_final"]),
        "correct_within_5": share(
            lambda v: v["runs_to_correct"] is not None and v["runs_to_correct"] <= 5
        ),
        "correct_within_7": share(
            lambda v: v["runs_to_correct"] is not None and v["runs_to_correct"] <= 7
        ),
        "dangerous_runs_total": sum(v["dangerous_runs"] for v in affected),
        "dangerous_runs_max": max((v["dangerous_runs"] for v in affected), default=0),
        "affected_segments": len(affected),
        "incremental": any(r.get("incremental") for r in results) if segs else None,
        "failed_runs": sum(len(r.get("failed_runs", [])) for r in results),
    }


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = [
        f"# Simulated-web benchmark ({meta['started']})",
        "",
        f"`{meta['command']}`: seed {meta['seed']}, {meta['days']} daily runs, "
        f"{_pages_text(meta['pages'])} pages per site, "
        f"{len({r['archetype'] for r in results})} archetypes; "
        f"sitemapcrawl commit `{meta['commit']}`; {meta['wall_s']:.0f} s on "
        f"{meta['cpus']} CPUs (load {meta['load_before']} → {meta['load_after']}).",
        "",
    ]
    summary = meta.get("summary") or {}
    if not meta["spider"]:
        out += ["The spider was not run (`--no-spider`): baselines only.", ""]
    elif summary.get("incremental") is False:
        out += [
            "**The spider has no incremental support**: its URL items carry no `refetch` "
            "decision, so its fetches are not scored as a re-crawl policy (only its "
            "verification sample hit the pages). Verdicts below are per-run (no state "
            "across runs).",
            "",
        ]
    broken = [r for r in results if r.get("failed_runs")]
    if broken:
        out += [
            "Spider runs with an error (a non-zero exit, no SiteReport or no segments in it, "
            "or ERROR lines in its log; a run without a report has the verdict `None`, and "
            "fetches count as they happened): "
            + "; ".join(f"{_label(r)} runs {[d + 1 for d in r['failed_runs']]}" for r in broken)
            + ".",
            "",
        ]
    killed = [r for r in results if r.get("killed_runs")]
    if killed:
        out += [
            "Runs killed by a signal from outside and run again: "
            + "; ".join(f"{_label(r)} runs {[d + 1 for d in r['killed_runs']]}" for r in killed)
            + ".",
            "",
        ]
    if meta["spider"]:
        out += ["## Verdicts per segment", ""]
        rows = []
        for r in results:
            for path, v in r.get("verdicts", {}).items():
                rows.append(
                    [
                        _label(r),
                        path,
                        v["truth"],
                        v["verdicts"][0] if v["verdicts"] else "-",
                        v["final"],
                        "yes"
                        if v["correct_final"]
                        else ("lenient" if v["lenient_final"] else "no"),
                        v["runs_to_correct"] or "never",
                        v["dangerous_runs"],
                        v["flaps"],
                    ]
                )
        out += table(
            [
                "archetype",
                "segment",
                "truth",
                "run 1",
                "last run",
                "correct",
                "runs to correct",
                "dangerous runs",
                "flaps",
            ],
            rows,
        )
        out += [
            "",
            f"Segments: {summary.get('segments')}; correct at the last run "
            f"{pct(summary.get('correct_final'), 1)} "
            f"(lenient {pct(summary.get('lenient_final'), 1)}); "
            f"correct and staying correct within 5 runs {pct(summary.get('correct_within_5'), 1)}, "
            f"within 7 runs {pct(summary.get('correct_within_7'), 1)}; dangerous trust "
            f"{summary.get('dangerous_runs_total')} runs over {summary.get('affected_segments')} "
            f"STALE/GENERATION_TIME segments (worst segment {summary.get('dangerous_runs_max')}).",
            "",
        ]
    out += [
        "## Fetches per run and staleness",
        "",
        "Each cell: page fetches per run (runs 2..N) / stale page-run fraction (all runs). "
        "Oracle = exactly the changed pages.",
        "",
    ]
    failed = [r for r in results if r.get("error")]
    if failed:
        out += ["Failed: " + "; ".join(f"{_label(r)}: {r['error']}" for r in failed), ""]
        results = [r for r in results if not r.get("error")]
    names = ["refetch_all", "naive_trust", "naive_granular"]
    names += [f"poisson_only@{t:g}" for t in policies.TABLE_THETAS]
    has_spider = any("spider" in r["policies"] for r in results)
    header = ["archetype", *names, *(["spider"] if has_spider else []), "oracle"]
    rows = []
    for r in results:
        p = r["policies"]
        row = [_label(r)]
        for name in [*names, *(["spider"] if has_spider else [])]:
            s = p.get(name)
            row.append(
                "n/a" if s is None else f"{s['fetches_per_run']:.1f} / {pct(s['stale_page_runs'])}"
            )
        row.append(f"{p['oracle']['fetches_per_run']:.1f}")
        rows.append(row)
    out += table(header, rows)
    if has_spider:
        out += ["", "## The spider against the oracle and Poisson-only", ""]
        rows = []
        for r in results:
            s = r["policies"].get("spider")
            if s is None:
                continue
            rows.append(
                [
                    _label(r),
                    f"{s['fetches_per_run']:.1f}",
                    f"{s['refetch_marked_per_run']:.1f}",
                    f"{s['extra_gets_per_run']:.1f}",
                    num(s["efficiency"], 2),
                    pct(s["savings"], 1),
                    pct(s["stale_page_runs"]),
                    f"{s['missed']} / {s['changes']}",
                    num(s["delay_mean_h"]),
                    pct(s["poisson_stale_at_equal_fetches"]),
                    _sitemap_304(r),
                    _page_304(r),
                    _other_gets(r),
                ]
            )
        out += table(
            [
                "archetype",
                "GETs/run",
                "marked refetch/run",
                "extra GETs/run",
                "x oracle",
                "saved vs all",
                "stale page-runs",
                "missed / changes",
                "delay h",
                "Poisson-only stale at equal GETs",
                "sitemap 304s / requests",
                "page 304s / GETs",
                "other GETs/run",
            ],
            rows,
        )
        out += ["", "### Decisions by reason (runs 2..N)", ""]
        rows = []
        for r in results:
            for reason, d in sorted(r.get("decisions", {}).items()):
                rows.append([_label(r), reason, d["urls"], d["changed"], d["fetched"]])
        out += table(["archetype", "reason", "URLs", "changed since capture", "fetched"], rows)
    out += cost_by_verdict(results)
    out += equal_gets_lines(results)
    out += targets(results, summary) if has_spider else []
    out += [""]
    return "\n".join(out)


def _sitemap_304(result: dict[str, Any]) -> str:
    """Sitemap and index responses that were 304 over those requested, runs 2..N."""
    runs = result.get("runs", [])[1:]
    if not all("not_modified" in r for r in runs):
        return "n/a"
    asked = sum(r["requests"].get(w, 0) for r in runs for w in ("index", "sitemap"))
    same = sum(r.get("not_modified", {}).get(w, 0) for r in runs for w in ("index", "sitemap"))
    return f"{same} / {asked}"


def _page_304(result: dict[str, Any]) -> str:
    """Page GETs answered 304 (a conditional refetch of an unchanged page: no body) over all
    page GETs, runs 2..N."""
    runs = result.get("runs", [])[1:]
    if not all("not_modified" in r for r in runs):
        return "n/a"
    asked = sum(r["requests"].get("page", 0) for r in runs)
    same = sum(r.get("not_modified", {}).get("page", 0) for r in runs)
    return f"{same} / {asked}"


def _other_gets(result: dict[str, Any]) -> str:
    """Requests per run (runs 2..N) for paths that are no page, sitemap or robots.txt."""
    runs = result.get("runs", [])[1:]
    return num(sum(r["requests"].get("other", 0) for r in runs) / len(runs)) if runs else "n/a"


CLASS_LABELS = {
    "TRUSTED": "TRUSTED",
    "PROVISIONAL": "PROVISIONAL, OVER_REPORTING, TZ_SHIFT",
    "untrusted": "untrusted (any other)",
}


def _purposes(counts: dict[str, int]) -> str:
    """``{"audit": 3, "lastmod_changed": 40}`` -> ``lastmod_changed 40, audit 3``."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{purpose} {n}" for purpose, n in ranked) or "-"


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f} x"


def _catch_row(name: str, c: dict[str, Any]) -> list[Any]:
    changes = c["changes"]
    return [
        name,
        changes,
        f"{c['fetched']} / {c['listed']}",
        f"{c['caught']} ({pct(c['caught'] / changes if changes else None, 1)})",
        f"{c['uniform']:.1f}",
        _times(c["x_uniform"]),
        c["poisson"],
        _times(c["x_poisson"]),
    ]


def equal_gets_lines(results: list[dict[str, Any]]) -> list[str]:
    """Changes caught by the spider's page GETs against a uniform random refetch of as
    many pages and against Poisson-only at the same counts (issue 35), per archetype and
    per segment class (the true verdict)."""
    scored = [r for r in results if r.get("equal_gets")]
    if not scored:
        return []
    header = [
        "changes",
        "spider's GETs / page-runs listed",
        "caught",
        "uniform random (expected)",
        "x uniform",
        "Poisson-only",
        "x Poisson",
    ]
    by_class: dict[str, equalgets.Catch] = {}
    for r in scored:
        for cls, data in r["equal_gets"]["by_class"].items():
            by_class.setdefault(cls, equalgets.Catch()).add(equalgets.Catch.from_json(data))
    return [
        "",
        "### Changes caught at equal GETs (issue 35)",
        "",
        "Runs 1..; per segment and run, the pages listed at the run before and this one: the "
        "changes the spider's GETs caught, what a uniform random draw of as many of the "
        "segment's pages catches in expectation, and what Poisson-only choosing as many by "
        "its own rates catches (`bench/equalgets.py`).",
        "",
        *table(
            ["archetype", *header], [_catch_row(_label(r), r["equal_gets"]["site"]) for r in scored]
        ),
        "",
        *table(
            ["true verdict", *header],
            [_catch_row(c, v.to_json()) for c, v in sorted(by_class.items())],
        ),
        "",
    ]


def cost_by_verdict(results: list[dict[str, Any]]) -> list[str]:
    """The spider's page GETs, the oracle's fetches and the staleness per verdict class in
    use (see :func:`metrics.attribute_by_verdict`), per archetype and over all of them."""
    scored = [r for r in results if r.get("by_verdict")]
    if not scored:
        return []
    out = [
        "",
        "## Cost by the verdict in use (runs 2..N)",
        "",
        "Each (run, segment) is attributed to the verdict the spider used for that run's "
        "decisions: the segment's standing verdict from the previous run. GETs are the "
        "page requests the server logged (200 or 304; a page's second GET in a run counts "
        "as `repeat`), split by the `refetch_reason` of pages marked `refetch: true`; "
        f"`{metrics.SAMPLE}` is a page fetched without that mark (verification sample or "
        "panel). Stale page-runs: published pages whose captured version differs from the "
        "live one after the run.",
        "",
    ]
    rows = []
    every: list[dict[str, Any]] = []
    for r in [*scored, None]:
        by_run = every if r is None else r["by_verdict"]
        if r is not None:
            every.extend(r["by_verdict"])
        for cls, c in metrics.cost_by_class(by_run).items():
            rows.append(
                [
                    "**all**" if r is None else _label(r),
                    CLASS_LABELS[cls],
                    c["segment_runs"],
                    c["gets"],
                    c["oracle"],
                    num(c["x_oracle"], 2),
                    pct(c["stale_page_runs"]),
                    _purposes(c["purposes"]),
                ]
            )
    out += table(
        [
            "archetype",
            "verdict in use",
            "segment-runs",
            "GETs",
            "oracle fetches",
            "x oracle",
            "stale page-runs",
            "GETs by purpose",
        ],
        rows,
    )
    rows = []
    for r in scored:
        trusted = metrics.cost_by_class(r["by_verdict"]).get("TRUSTED")
        if trusted is None:
            continue
        n = trusted["segment_runs"]
        audit = trusted["purposes"].get("audit", 0)
        rows.append(
            [
                _label(r),
                r["pages"],
                n,
                num(trusted["oracle"] / n),
                num(trusted["gets"] / n),
                num(audit / n),
                num(_ratio(audit, trusted["oracle"]), 2),
                num(trusted["x_oracle"], 2),
            ]
        )
    if rows:
        out += [
            "",
            "### TRUSTED segment-runs: the audit against the oracle",
            "",
            "Per TRUSTED segment-run: the oracle's fetches, the spider's GETs and its audit "
            "GETs. A need-sized audit costs about the same number of GETs whatever the size "
            "of the segment, so audit ÷ oracle falls as sites grow.",
            "",
        ]
        out += table(
            [
                "archetype",
                "pages",
                "TRUSTED segment-runs",
                "oracle / segment-run",
                "GETs / segment-run",
                "audit / segment-run",
                "audit ÷ oracle",
                "x oracle",
            ],
            rows,
        )
    return out


def _trusted_cost(rows: list[dict[str, Any]]) -> str:
    """A target cell: the TRUSTED segment-runs' cost, then that of all runs 2..N."""
    total = metrics.cost_by_class(rows)
    n_all = sum(c["segment_runs"] for c in total.values())
    trusted = total.get("TRUSTED")
    every = {
        key: sum(c[key] for c in total.values()) for key in ("gets", "oracle", "stale", "pages")
    }
    all_runs = (
        f"all runs {num(_ratio(every['gets'], every['oracle']), 2)} x oracle, "
        f"{pct(_ratio(every['stale'], every['pages']))}"
    )
    if trusted is None:
        return f"TRUSTED runs n/a (never TRUSTED); {all_runs}"
    return (
        f"TRUSTED runs {num(trusted['x_oracle'], 2)} x oracle, "
        f"{pct(trusted['stale_page_runs'])} ({trusted['segment_runs']} of {n_all} "
        f"segment-runs); {all_runs}"
    )


TRUSTED_TRUTHS = frozenset({"TRUSTED"})
UNTRUSTED_TRUTHS = frozenset({"STALE", "GENERATION_TIME", "ABSENT"})


def targets(results: list[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    """Issue 7's targets, each with what was measured."""
    rows = [
        [
            ">= 95 % of segments correct within 5 runs (strict)",
            pct(summary.get("correct_within_5"), 1),
        ],
        [
            "dangerous trust <= 1 run per STALE/GENERATION_TIME segment",
            f"worst segment {summary.get('dangerous_runs_max')} runs",
        ],
    ]
    for r in results:
        truths = {s["truth"] for s in r["segments"]}
        spider = r["policies"].get("spider")
        if spider is None:
            continue
        by_run = r.get("by_verdict") or []
        if truths <= TRUSTED_TRUTHS:
            measured = f"{num(spider['efficiency'], 2)} x oracle, {pct(spider['stale_page_runs'])}"
            if by_run:
                measured = f"{_trusted_cost(by_run)} (pages fetched: {measured})"
            rows.append([f"{_label(r)}: <= 1.2 x oracle, <= 0.5 % stale page-runs", measured])
        elif truths <= UNTRUSTED_TRUTHS:
            rows.append(
                [
                    f"{_label(r)}: stale <= Poisson-only at equal GETs",
                    f"{pct(spider['stale_page_runs'])} vs "
                    f"{pct(spider['poisson_stale_at_equal_fetches'])}",
                ]
            )
        if by_run and len(r["segments"]) > 1:
            rows.extend(
                [
                    f"{_label(r)} `{seg['segment']}`: <= 1.2 x oracle, <= 0.5 % stale",
                    _trusted_cost([x for x in by_run if x["segment"] == seg["segment"]]),
                ]
                for seg in r["segments"]
                if seg["truth"] in TRUSTED_TRUTHS
            )
    note = (
        "The cost targets of TRUSTED segments are measured on the segment-runs that used "
        "the verdict TRUSTED (the PROVISIONAL phase before it audits heavily by design); "
        '"all runs" is runs 2..N whatever the verdict in use, "pages fetched" the distinct '
        "pages fetched over runs 2..N as in the tables above."
    )
    return ["", "## Targets (issue 7)", "", note, "", *table(["target", "measured"], rows)]


def rerender(path: Path) -> int:
    """Rewrite ``<run>.md`` from ``<run>.json`` (after a change to the report's layout).

    The baselines are replayed again (they are deterministic and take seconds), so a new
    baseline or θ shows up; the spider's scores are kept as they were measured.
    """
    saved = json.loads(path.read_text(encoding="utf-8"))
    meta = saved["meta"]
    for result in saved["results"]:
        if result.get("error"):
            continue
        site = Site(result["archetype"], meta["seed"], result.get("pages", meta["pages"]))
        tl = site.timeline([site.run_time(d) for d in range(meta["days"])])
        scores = {
            policy: metrics.score_fetches(site, tl, f)
            for policy, f in policies.baselines(tl).items()
        }
        if "spider" in result["policies"]:
            scores["spider"] = result["policies"]["spider"]
        metrics.relative(scores)
        if "spider" in scores:
            scores["spider"]["poisson_stale_at_equal_fetches"] = metrics.frontier_stale(
                scores, scores["spider"]["fetches_per_run"]
            )
        result["policies"] = scores
    report = markdown(saved["results"], meta)
    path.with_suffix(".md").write_text(report, encoding="utf-8")
    print(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        return rerender(Path(args.render))
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    workdir = OUT / "simweb" / stamp
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.monotonic()
    commit = _commit(args.spider_repo, args.snapshot)
    if not args.no_spider and args.snapshot != "none":
        # One benchmark = one version of the spider, even while someone edits the tree.
        args.spider_repo = snapshot(args.spider_repo, workdir / "spider", args.snapshot)
    log(
        f"{len(args.names)} archetypes x {args.days} days, {_pages_text(args.sizes)} pages, "
        f"seed {args.seed}; output {workdir}"
    )
    several = len(args.sizes) > 1

    def one(task: tuple[str, int]) -> dict[str, Any]:
        name, pages = task
        label = f"{name}@{pages}" if several else name
        try:
            return bench_site(name, pages, args, workdir, label)
        except Exception as exc:  # one broken site must not lose the others' results
            log(f"{label}: failed: {exc!r}")
            return {
                "archetype": name,
                "label": label,
                "pages": pages,
                "error": repr(exc),
                "policies": {},
                "verdicts": {},
            }

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, args.tasks))
    meta = {
        "started": stamp,
        "command": "python bench/simweb/run.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "seed": args.seed,
        "days": args.days,
        "pages": args.sizes[0] if not several else args.sizes,
        "spider": not args.no_spider,
        "commit": commit,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": time.monotonic() - started,
    }
    meta["summary"] = summarise(results, args) if not args.no_spider else None
    report = markdown(results, meta)
    (OUT / f"simweb-{stamp}.md").write_text(report, encoding="utf-8")
    with (OUT / f"simweb-{stamp}.json").open("w", encoding="utf-8") as handle:
        json.dump({"meta": meta, "results": results}, handle, indent=1, default=_jsonable)
    print(report)
    log(f"wrote {OUT / f'simweb-{stamp}.md'} and .json in {meta['wall_s']:.0f} s")
    return 0


def snapshot(repo: Path, dest: Path, what: str) -> Path:
    """Copy the spider's code (``sitemapcrawl/`` and ``scrapy.cfg``) of ``repo`` to ``dest``:
    as committed at HEAD (``head``) or as it is in the working tree (``tree``)."""
    dest.mkdir(parents=True, exist_ok=True)
    if what == "head":
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", "HEAD", "sitemapcrawl", "scrapy.cfg"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
        return dest
    shutil.copytree(
        repo / "sitemapcrawl",
        dest / "sitemapcrawl",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    shutil.copy2(repo / "scrapy.cfg", dest / "scrapy.cfg")
    return dest


def _commit(repo: Path, what: str = "none") -> str:
    """HEAD, and whether the spider's code that runs differs from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "sitemapcrawl"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"unknown (not a git checkout: {repo})"
    if what == "head" or not dirty:
        return head
    return f"{head} + uncommitted changes in sitemapcrawl/"


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


if __name__ == "__main__":
    raise SystemExit(main())
