"""The state file's URL writes alone: N random URLs through ``StateStore.write_urls`` in the
crawl's 20,000-row batches, then ``merge_urls``; CPU seconds, peak RSS and file size.

    python bench/state_writes.py 1000000                 # the merge every MERGE_EVERY rows
    python bench/state_writes.py 1000000 --merge-every 20000

The URLs are generated here (seeded, about 3 s of the CPU time at 1,000,000: run with
``--generate-only`` to see that part alone). The file goes to ``bench/out/``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sitemapcrawl.incremental.store as store_module
from sitemapcrawl.incremental.store import StateStore

BATCH = 20_000  # sitemapcrawl.incremental.crawlstate._FLUSH_EVERY
ORIGIN = "http://127.0.0.1:8000"
WORDS = [
    "garden",
    "laptop",
    "holiday",
    "river",
    "running",
    "best",
    "top",
    "beach",
    "cat",
    "quick",
    "shoes",
    "kitchen",
    "dog",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("urls", type=int)
    parser.add_argument("--merge-every", type=int, default=store_module.MERGE_EVERY)
    parser.add_argument("--generate-only", action="store_true")
    args = parser.parse_args()
    store_module.MERGE_EVERY = args.merge_every
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "state-writes.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    rng = random.Random(1)
    started = time.process_time()
    store = None if args.generate_only else StateStore.open(path)
    run = store.begin_run(ORIGIN, "2026-11-30T00:00:00Z", None) if store else 0
    batch = []
    for i in range(args.urls):
        slug = "-".join(rng.choices(WORDS, k=6))
        part = f"{ORIGIN}/sitemaps/part-{i // 50_000:02d}.xml.gz"
        url = f"{ORIGIN}/{rng.choice(WORDS)}/{slug}-{rng.randrange(10**9)}.html"
        batch.append((url, part[len(ORIGIN) :], part, "2024-05-01", 1_795_996_800, True))
        if len(batch) >= BATCH:
            if store:
                store.write_urls(ORIGIN, run, batch)
            batch = []
    if store:
        store.write_urls(ORIGIN, run, batch)
        store.merge_urls()
        store.close()
    size = os.path.getsize(path) // 2**20 if store else 0
    print(
        f"urls={args.urls} merge_every={args.merge_every} "
        f"cpu_s={time.process_time() - started:.1f} "
        f"peak_rss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} file_mb={size}"
    )


if __name__ == "__main__":
    main()
