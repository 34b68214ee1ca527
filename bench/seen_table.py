"""The URL table alone (``sitemapcrawl.sitemaps.seen.SeenUrls``): N adds, CPU and peak RSS.

Each measurement is a fresh process that imports ``SeenUrls`` from a source tree (this
one, or a ``git archive`` of another commit), makes the URLs in chunks of 100,000 (not
timed), and adds every one to one table (timed: ``time.process_time`` around the adds,
the table's growth included). Memory: the peak RSS over the process's RSS just before the
table is made (``VmHWM`` after ``/proc/self/clear_refs`` is reset), so the table and its
largest growth, plus one chunk of URLs.

    python bench/seen_table.py --urls 10000000 --rounds 3 /tmp/base .

runs the trees in turn, round after round (A B A B A B), and prints one JSON line per run
and a summary (median CPU, peak) per tree. The machine's load average is printed with
each run: compare CPU only within one invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHUNK = 100_000


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _urls(start: int, stop: int) -> list[str]:
    sections = ("blog", "shop/products", "news/2026", "docs/guide", "p")
    return [
        f"https://www.example.com/{sections[i % 5]}/item-{i * 7919 % 1000003}-{i}.html"
        for i in range(start, stop)
    ]


def child(source: str, n: int) -> dict[str, object]:
    """One measurement in this process (``source``: the tree to import from)."""
    sys.path.insert(0, os.path.abspath(source))
    from sitemapcrawl.sitemaps.seen import SeenUrls  # (from the tree given)

    chunk = _urls(0, min(CHUNK, n))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status("VmRSS")
    seen = SeenUrls()
    cpu = 0.0
    new = 0
    for start in range(0, n, CHUNK):
        if start:
            chunk = _urls(start, min(start + CHUNK, n))
        add = seen.add
        t0 = time.process_time()
        for url in chunk:
            new += add(url)
        cpu += time.process_time() - t0
    assert new == n == len(seen), (new, n, len(seen))
    return {
        "source": source,
        "urls": n,
        "cpu_s": round(cpu, 3),
        "us_per_add": round(cpu / n * 1e6, 4),
        "peak_over_start_mib": round((_status("VmHWM") - before) / 1024, 1),
        "rss_end_over_start_mib": round((_status("VmRSS") - before) / 1024, 1),
        "peak_rss_mib": round(_status("VmHWM") / 1024, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="source trees to import SeenUrls from")
    ap.add_argument("--urls", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        sys.stdout.write(json.dumps(child(a.trees[0], a.urls)) + "\n")
        return 0
    runs: dict[str, list[dict[str, object]]] = {tree: [] for tree in a.trees}
    for _ in range(a.rounds):
        for tree in a.trees:
            load = os.getloadavg()[0]
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--urls", str(a.urls), tree],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            result = {**json.loads(out.stdout), "load": round(load, 2)}
            runs[tree].append(result)
            sys.stdout.write(json.dumps(result) + "\n")
            sys.stdout.flush()
    for tree, results in runs.items():
        cpu = statistics.median(float(r["cpu_s"]) for r in results)  # type: ignore[arg-type]
        peak = max(float(r["peak_over_start_mib"]) for r in results)  # type: ignore[arg-type]
        sys.stdout.write(
            f"{tree}: median CPU {cpu:.2f} s ({cpu / a.urls * 1e6:.3f} us/add), "
            f"peak over start {peak:.1f} MiB, {len(results)} runs\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
