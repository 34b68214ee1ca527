"""Page-pair change-detection benchmark: build the corpus, measure the detectors, report.

    python bench/pagepairs/run.py build            # the pairs, from the mirrors (build.py)
    python bench/pagepairs/run.py measure          # every detector on every pair; the report
    python bench/pagepairs/run.py render bench/out/pagepairs-<ts>.json
    python bench/pagepairs/run.py merge a.json b.json   # halves of the sites run apart

See bench/pagepairs/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.pagepairs import build, methods, rules

OUT = build.REPO_ROOT / "bench" / "out"
#: The template detector's thresholds: a line on at least this share of the deploy's
#: sampled pages (and on 3 at least) is template. The tuning half picks one.
SHARES = (0.1, 0.2, 0.3, 0.5)
#: Text sources the template rule is applied to (d, and d applied to b / c).
TEMPLATE_BASES = ("resiliparse-all", "trafilatura-html5", "resiliparse-main")


def measure_site(path: Path) -> dict[str, Any]:
    """One site's rows, cached beside its pairs (``measured-<site>.json``: a crash of
    another site loses nothing; delete the file to measure again)."""
    done = path.with_name(path.name.replace("pairs-", "measured-", 1))
    if done.is_file() and done.stat().st_mtime >= path.stat().st_mtime:
        return json.loads(done.read_text())
    out = _measure_site(path)
    done.write_text(json.dumps(out))
    return out


def _measure_site(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    blobs = path.parent / "blobs"
    site = data["site"]
    per_blob: dict[str, dict[str, Any]] = {}
    cost: dict[str, list[float]] = defaultdict(list)

    def dates(sha: str) -> dict[str, Any]:
        """htmldate on a page whose true modification date the source gives (only there:
        its extensive search costs about 100 ms a page)."""
        rec = per_blob[sha]
        if "htmldate" not in rec["days"]:
            html = methods.decode((blobs / sha).read_bytes())
            for ext in (True, False):
                day, ms = methods.timed(methods.htmldate_day, html, extensive=ext)
                cost[f"htmldate{'' if ext else '-fast'}"].append(ms)
                rec["days"][f"htmldate{'' if ext else '-fast'}"] = day
        return rec["days"]

    def page(sha: str, url: str, *, full: bool) -> dict[str, Any]:
        got = per_blob.get(sha)
        if got is not None and (got["full"] or not full):
            return got
        body = (blobs / sha).read_bytes()
        rec: dict[str, Any] = {"full": full, "lines": {}, "key": {}}
        text, ms = methods.timed(methods.extract, "resiliparse-all", body)
        cost["resiliparse-all"].append(ms)
        rec["lines"]["resiliparse-all"] = methods.lines_of(text)
        if full:
            ev, ms = methods.timed(methods.spider, body, url)
            cost["spider (page_evidence: dates + fingerprint)"].append(ms)
            rec["key"]["fingerprint"] = ev.fingerprint
            rec["days"] = methods.evidence_days(ev)
            _, ms = methods.timed(methods.fingerprint_only, body)
            cost["fingerprint"].append(ms)
            for name in ("trafilatura", "trafilatura-html5", "readability", "resiliparse-main"):
                text, ms = methods.timed(methods.extract, name, body)
                cost[name].append(ms)
                rec["key"][name] = methods.key_of_text(text)
                rec["lines"][name] = methods.lines_of(text)
        per_blob[sha] = rec
        return rec

    # the site's template per deploy, from its seeded sample
    templates: dict[tuple[int, float], set[str]] = {}
    for k, shas in data["template_sample"].items():
        pages = [page(s, "", full=False)["lines"]["resiliparse-all"] for s in shas]
        for share in SHARES:
            templates[int(k), share] = methods.template_lines(pages, share)

    rows = []
    for p in data["pairs"]:
        a = page(p["blobs"][0], p["url"], full=True)
        b = page(p["blobs"][1], p["url"], full=True)
        verdicts = {name: a["key"][name] != b["key"][name] for name in a["key"]}
        k = p["k"]
        for base in TEMPLATE_BASES:
            tag = "template" if base == "resiliparse-all" else f"{base}+template"
            for share in SHARES:
                ta, tb = templates[k - 1, share], templates[k, share]
                union = ta | tb
                verdicts[f"{tag}@{share}"] = methods.minus_template(
                    a["lines"][base], union
                ) != methods.minus_template(b["lines"][base], union)
                if base == "resiliparse-all":
                    verdicts[f"template-own@{share}"] = methods.minus_template(
                        a["lines"][base], ta
                    ) != methods.minus_template(b["lines"][base], tb)
        row = {
            "site": site,
            "k": k,
            "url": p["url"],
            "changed": p["changed"],
            "truth": p["truth"],
            "html_judge_changed": p["html_judge_changed"],
            "verdicts": verdicts,
        }
        src = p.get("source")
        if src and src.get("file_times"):
            row["date_truth"] = sorted(
                {
                    dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d")
                    for t in src["file_times"]
                }
            )
            row["days"] = dates(p["blobs"][1])
            row["blob_b"] = p["blobs"][1]
        rows.append(row)
    return {
        "site": site,
        "repo": data["repo"],
        "generator": data["generator"],
        "half": data["half"],
        "sites_json": data["sites_json"],
        "deploys": data["deploys"],
        "candidates": data["candidates"],
        "identical": data["identical"],
        "source_commits": data["source_commits"],
        "rows": rows,
        "cost": {k: [sum(v), len(v)] for k, v in cost.items()},
    }


# --- aggregation ----------------------------------------------------------------------------


def _day_diff(a: str, b: str) -> int:
    return abs((dt.date.fromisoformat(a) - dt.date.fromisoformat(b)).days)


def aggregate(sites: list[dict[str, Any]]) -> dict[str, Any]:
    acc: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    dates: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    agree: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    cost: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for s in sites:
        for name, (total, n) in s["cost"].items():
            cost[name][0] += total
            cost[name][1] += n
        seen_pages = set()
        for r in s["rows"]:
            for method, said in r["verdicts"].items():
                gens_of = [s["generator"], "all"]
                if r["truth"] == "source":
                    gens_of.append("source-truth pairs")
                for gen in gens_of:
                    for hf in (s["half"], "both"):
                        c = acc[method, gen, hf]
                        if r["changed"]:
                            c[2] += 1
                            c[3] += not said
                        else:
                            c[0] += 1
                            c[1] += said
            if r["truth"] == "source":
                a = agree[s["site"]]
                a[0] += 1
                a[1] += r["changed"] == r["html_judge_changed"]
                a[2] += r["changed"] and not r["html_judge_changed"]
                a[3] += r["html_judge_changed"] and not r["changed"]
            if "date_truth" in r and (r["url"], r["blob_b"]) not in seen_pages:
                seen_pages.add((r["url"], r["blob_b"]))
                for reader, day in r["days"].items():
                    for gen in (s["generator"], "all"):
                        d = dates[reader, gen]
                        if day is None:
                            d[3] += 1
                        elif day in r["date_truth"]:
                            d[0] += 1
                        elif min(_day_diff(day, t) for t in r["date_truth"]) <= 1:
                            d[1] += 1
                        else:
                            d[2] += 1
    return {
        "detect": {"|".join(k): v for k, v in acc.items()},
        "dates": {"|".join(k): v for k, v in dates.items()},
        "source_vs_html_judge": agree,
        "cost_ms": {k: (v[0] / v[1] if v[1] else None, v[1]) for k, v in cost.items()},
    }


def _pct(x: int, n: int) -> str:
    return f"{100 * x / n:.1f} %" if n else "-"


def render(report: dict[str, Any]) -> str:
    agg = report["aggregate"]
    detect = agg["detect"]
    sites = report["sites"]
    gens = sorted({s["generator"] for s in sites})
    methods_all = sorted({k.split("|")[0] for k in detect})
    lines = [
        f"# Page-pair change detection — run {report['run_id']}",
        "",
        f"Commit `{report['commit']}`; {report['n_pairs']} pairs from {len(sites)} sites, "
        f"{len(gens)} generators; measured in {report['seconds']:.0f} s.",
        "",
        "## Corpus",
        "",
        "| site | generator | half | deploys | pairs | changed | source truth "
        "| source = HTML judge |"
        " byte-identical pairs (not sampled) | candidates |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sorted(sites, key=lambda s: (s["half"], s["generator"], s["site"])):
        rows = s["rows"]
        a = agg["source_vs_html_judge"].get(s["site"], [0, 0, 0, 0])
        lines.append(
            f"| {s['site']} | {s['generator']} | {s['half']} | {s['deploys']} | {len(rows)} | "
            f"{sum(r['changed'] for r in rows)} | {sum(r['truth'] == 'source' for r in rows)} | "
            f"{a[1]}/{a[0]} (src-only {a[2]}, html-only {a[3]}) | {s['identical']} | "
            f"{s['candidates']} |"
        )
    lines += ["", "## Per method and half (all generators)", ""]
    for hf in ("tuning", "held-out", "both"):
        lines += [
            f"### {hf}",
            "",
            "| method | false changes / unchanged | missed / changed | ms / page |",
            "|---|---|---|---|",
        ]
        for m in methods_all:
            c = detect.get(f"{m}|all|{hf}")
            if not c:
                continue
            base = m.split("@")[0].split("+")[0]
            base = "resiliparse-all" if base.startswith("template") else base
            ms = agg["cost_ms"].get(base, (None, 0))[0]
            extra = ""
            if "+template" in m:
                ms = (ms or 0) + (agg["cost_ms"].get("resiliparse-all", (0, 0))[0] or 0)
                extra = " (+ lines)"
            lines.append(
                f"| {m} | {c[1]}/{c[0]} = {_pct(c[1], c[0])} | "
                f"{c[3]}/{c[2]} = {_pct(c[3], c[2])} | "
                f"{ms:.1f}{extra} |"
                if ms is not None
                else f"| {m} | {c[1]}/{c[0]} = {_pct(c[1], c[0])} | "
                f"{c[3]}/{c[2]} = {_pct(c[3], c[2])} | - |"
            )
        lines.append("")
    lines += [
        "## Source-truth pairs only (the HTML judge's notion of main content plays no part)",
        "",
        "| method | half | false changes / unchanged | missed / changed |",
        "|---|---|---|---|",
    ]
    for m in methods_all:
        for hf in ("tuning", "held-out"):
            c = detect.get(f"{m}|source-truth pairs|{hf}")
            if c:
                lines.append(
                    f"| {m} | {hf} | {c[1]}/{c[0]} = {_pct(c[1], c[0])} | "
                    f"{c[3]}/{c[2]} = {_pct(c[3], c[2])} |"
                )
    lines.append("")
    key_methods = report.get("key_methods") or methods_all
    lines += ["## Per generator (false changes / missed), key methods", ""]
    for hf in ("tuning", "held-out"):
        lines += [
            f"### {hf}",
            "",
            "| generator | pairs (unch/ch) | " + " | ".join(key_methods) + " |",
        ]
        lines.append("|---|---|" + "---|" * len(key_methods))
        for g in gens:
            c0 = detect.get(f"{key_methods[0]}|{g}|{hf}")
            if not c0:
                continue
            cells = []
            for m in key_methods:
                c = detect.get(f"{m}|{g}|{hf}", [0, 0, 0, 0])
                cells.append(f"{_pct(c[1], c[0])} / {_pct(c[3], c[2])}")
            lines.append(f"| {g} | {c0[0]}/{c0[2]} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## Page dates (pages with source truth: the last commit of the page's source file)",
        "",
        "| reader | generator | right (same UTC day) | ±1 day | wrong | absent |",
        "|---|---|---|---|---|---|",
    ]
    readers = ("htmldate", "htmldate-fast", "structured", "meta", "best")
    for g in ["all", *gens]:
        for rd in readers:
            d = agg["dates"].get(f"{rd}|{g}")
            if not d:
                continue
            n = sum(d)
            lines.append(
                f"| {rd} | {g} | {d[0]} ({_pct(d[0], n)}) | {d[1]} | {d[2]} ({_pct(d[2], n)}) | "
                f"{d[3]} ({_pct(d[3], n)}) |"
            )
    lines += ["", "## Cost (ms per page, mean)", "", "| step | ms | pages |", "|---|---|---|"]
    for k, (ms, n) in sorted(agg["cost_ms"].items()):
        lines.append(f"| {k} | {ms:.1f} | {n} |" if ms is not None else f"| {k} | - | {n} |")
    return "\n".join(lines) + "\n"


KEY_METHODS = [
    "fingerprint",
    "trafilatura",
    "trafilatura-html5",
    "readability",
    "resiliparse-main",
    "template@0.2",
    "trafilatura-html5+template@0.2",
]


def cmd_measure(args: argparse.Namespace) -> int:
    files = sorted(args.cache.glob("pairs-*.json"))
    if args.sites:
        files = [f for f in files if f.stem[len("pairs-") :] in args.sites.split(",")]
    t0 = time.time()
    sites = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for r in pool.map(measure_site, files):
            print(f"[pagepairs] {r['site']}: {len(r['rows'])} pairs measured", file=sys.stderr)
            sites.append(r)
    commit = build.Git(build.REPO_ROOT / ".git")
    commit.close()
    import subprocess

    head = subprocess.run(
        ["git", "-C", str(build.REPO_ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    run_id = time.strftime("%Y%m%d-%H%M%S")
    report = {
        "run_id": run_id,
        "commit": head,
        "seconds": time.time() - t0,
        "n_pairs": sum(len(s["rows"]) for s in sites),
        "sampler": {
            "per_class": rules.PER_CLASS,
            "per_deploy": rules.PER_DEPLOY,
            "per_url": rules.PER_URL,
            "max_examined": rules.MAX_EXAMINED,
            "template_sample": build.TEMPLATE_SAMPLE,
            "shares": SHARES,
        },
        "key_methods": args.key_methods.split(",") if args.key_methods else KEY_METHODS,
        "sites": sites,
        "aggregate": aggregate(sites),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"pagepairs-{run_id}"
    out.with_suffix(".json").write_text(json.dumps(report))
    out.with_suffix(".md").write_text(render(report))
    print(out.with_suffix(".md"))
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    report = json.loads(Path(args.report).read_text())
    if args.key_methods:
        report["key_methods"] = args.key_methods.split(",")
    report["aggregate"] = aggregate(report["sites"])
    Path(args.report).with_suffix(".md").write_text(render(report))
    print(Path(args.report).with_suffix(".md"))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """One report from several measured on disjoint sites (run side by side)."""
    parts = [json.loads(Path(f).read_text()) for f in args.reports]
    report = dict(parts[0])
    report["sites"] = [s for p in parts for s in p["sites"]]
    report["run_id"] = "+".join(p["run_id"] for p in parts)
    report["seconds"] = sum(p["seconds"] for p in parts)
    report["n_pairs"] = sum(len(s["rows"]) for s in report["sites"])
    if args.key_methods:
        report["key_methods"] = args.key_methods.split(",")
    report["aggregate"] = aggregate(report["sites"])
    out = OUT / f"pagepairs-{parts[-1]['run_id']}-merged"
    out.with_suffix(".json").write_text(json.dumps(report))
    out.with_suffix(".md").write_text(render(report))
    print(out.with_suffix(".md"))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build"]:  # its options are build.py's (REMAINDER drops leading ones)
        return build.main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("build", help="build the pairs (bench/pagepairs/build.py)")
    p.set_defaults(func=lambda a: build.main(a.rest))
    p.add_argument("rest", nargs=argparse.REMAINDER)
    for name, fn in (("measure", cmd_measure), ("render", cmd_render)):
        p = sub.add_parser(name)
        p.add_argument("--key-methods", help="comma-separated methods for the per-generator table")
        p.set_defaults(func=fn)
        if name == "measure":
            p.add_argument("--cache", type=Path, default=build.CACHE)
            p.add_argument("--sites")
            p.add_argument("--jobs", type=int, default=2)
        else:
            p.add_argument("report")
    p = sub.add_parser("merge", help="merge reports measured on disjoint sites")
    p.add_argument("reports", nargs="+")
    p.add_argument("--key-methods")
    p.set_defaults(func=cmd_merge)
    args = ap.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
