"""Serve the demo site on 127.0.0.1 and run ``scrapy crawl sitemap`` against it.

Usage (from the repository root): ``python demo/run.py [--format jsonl|json|csv]
[--out-dir DIR]``. The output goes to ``demo-output/urls.<format>`` (the HTML site report to
``demo-output/report.html``, the state file to ``demo-output/state.sqlite``); the script prints
where, and a summary: URLs per segment and each segment's lastmod verdict.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mockserver import MockServer  # noqa: E402 - needs the repository root on the path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--format", choices=("jsonl", "json", "csv"), default="jsonl")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "demo-output")
    args = parser.parse_args()
    out = args.out_dir / f"urls.{args.format}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with MockServer(root=ROOT / "demo" / "site") as server:
        sys.stdout.write(f"Demo site serving on {server.base}\n")
        sys.stdout.flush()
        command = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "sitemap",
            "-a",
            f"origin={server.base}",
            "-O",
            str(out),
            "-s",
            "REMOTE_CONTROL_ENABLED=False",
            "-s",
            "LOG_LEVEL=INFO",
            "-s",
            f"SITEMAPCRAWL_STATE_PATH={args.out_dir / 'state.sqlite'}",
            "-s",
            f"SITEMAPCRAWL_HTML_REPORT_PATH={args.out_dir / 'report.html'}",
        ]
        result = subprocess.run(command, cwd=ROOT, check=False)  # noqa: S603 - our own argv
    if result.returncode != 0:
        return result.returncode
    if args.format == "jsonl":
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        rows = [r for r in records if "url" in r]  # the site report closes the feed
        reports = [r for r in records if "url" not in r]
        verdicts = {s["segment"]: s["verdict"] for r in reports for s in r.get("segments", [])}
        segments: dict[str, int] = {}
        for row in rows:
            segments[row["segment"]] = segments.get(row["segment"], 0) + 1
        sys.stdout.write(f"\n{len(rows)} URLs, by segment (lastmod verdict):\n")
        for segment, count in sorted(segments.items()):
            verdict = verdicts.get(segment, "-")
            sys.stdout.write(f"  {count:4d}  {segment}  ({verdict})\n")
    sys.stdout.write(f"\nOutput written to {out}\n")
    report = args.out_dir / "report.html"
    if report.exists():
        sys.stdout.write(f"HTML site report: {report}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
