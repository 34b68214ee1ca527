"""Print why segments got the verdicts they got in a results JSON (the input to RESULTS.md).

    python bench/realweb/explain.py bench/out/realweb-<timestamp>.json [--all] [--site NAME]

Per segment (only those not right at the last run, unless ``--all``): the verdict per run,
the label, the first and last reasons, the last run's cross-run counts (``l2``: tp, fp, fn,
tn, recall bound), and a few samples (lastmod, the page's own modification date and where
it came from, the outcome). Per site: the refetch reasons and the missed changes per run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _l2(cross: dict[str, Any] | None) -> str:
    if not cross:
        return "-"
    l2 = cross.get("l2") or {}
    keys = ("tp", "fp", "fn", "tn", "recall_lower", "miss_rate", "runs")
    return ", ".join(f"{k}={l2.get(k)}" for k in keys if k in l2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--all", action="store_true", help="every segment, right or not")
    parser.add_argument("--site")
    args = parser.parse_args(argv)
    data = json.loads(args.results.read_text(encoding="utf-8"))
    for site in data["sites"]:
        if args.site and site["name"] != args.site:
            continue
        print(f"=== {site['name']} ({site['generator']}, {site['deploys']} deploys)")
        f = site["fetches"]
        print(
            f"  refetch/run {f['refetch_per_run']:.1f}, GETs/run {f['gets_per_run']:.1f}, "
            f"oracle/run {f['oracle_per_run']:.1f}, missed {f['totals'].get('missed', 0)}"
            f"/{f['totals'].get('changed', 0)}, never fetched {f['versions_never_fetched']}"
        )
        misses = [
            (r["deploy"], r["missed"], r["missed_pages"][:4]) for r in f["per_run"] if r["missed"]
        ]
        if misses:
            print(f"  missed per run: {misses}")
        reasons: dict[str, int] = {}
        for run in site["runs"][1:]:
            for k, v in run["reasons"].items():
                reasons[k] = reasons.get(k, 0) + v
        print(f"  refetch reasons (runs 1..): {reasons}")
        for name, seg in site["segments"].items():
            if seg["right_final"] and not args.all:
                continue
            verdicts = " ".join((v or "-")[:4] for v in seg["verdicts"])
            print(f"  -- {name} ({seg['urls']} urls) label {seg['label']} {seg['accept']}")
            print(f"     verdicts: {verdicts}")
            print(f"     first: {seg['first_reason']}")
            print(f"     last:  {seg['last_reason']}")
            print(f"     l2: {_l2(seg.get('last_cross_run'))}")
            for s in (seg.get("last_samples") or [])[:4]:
                print(
                    f"     sample {s['url'][-48:]}: lastmod {s['lastmod']}, page "
                    f"{s['page_modified']} ({s['page_modified_source']}), "
                    f"published {s['page_published']}, {s['outcome']}"
                )
        snap = site.get("snapshot") or {}
        wrong = {k: v for k, v in snap.get("segments", {}).items() if not v["right"]}
        for name, v in wrong.items():
            print(f"  snapshot {name}: {v['verdict']} (label {v['label']}): {v['reason']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
