"""``-s JOBDIR=…``: stop a crawl after a few sitemaps, resume it, get the uninterrupted result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.utils.crawl import scrapy_crawl

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.mockserver import MockServer

ROOT = Path(__file__).resolve().parents[1]


def run(server: MockServer, out: Path, *extra: str) -> str:
    return scrapy_crawl(out, "-a", f"origin={server.base}", *extra)


def rows(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if "url" in row]  # without the site report


def reports(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if "url" not in row]


def test_pause_and_resume_equals_an_uninterrupted_run(
    site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    server = site("basic")
    run(server, tmp_path / "whole.jsonl")
    whole = rows(tmp_path / "whole.jsonl")

    server.reset_requests()
    jobdir = str(tmp_path / "job")
    first = run(
        server, tmp_path / "parts.jsonl", "-s", f"JOBDIR={jobdir}", "-s", "CLOSESPIDER_PAGECOUNT=3"
    )
    assert "'finish_reason': 'closespider_pagecount'" in first
    assert "sitemaps not read yet were kept for later" in first
    part = rows(tmp_path / "parts.jsonl")
    assert 0 < len(part) < len(whole)

    second = run(server, tmp_path / "parts.jsonl", "-s", f"JOBDIR={jobdir}")
    assert "'finish_reason': 'finished'" in second
    assert "Resuming:" in second
    resumed = rows(tmp_path / "parts.jsonl")
    key = lambda row: row["url"]  # noqa: E731
    assert sorted(resumed, key=key) == sorted(whole, key=key)
    # robots.txt and each sitemap were fetched once over both runs.
    requests = server.requests()
    assert len(requests) == len(set(requests))
    # The resumed run's report still lists what was found before the pause: the top-level
    # sitemaps and the faults met (each once), as the uninterrupted run's report does.
    (whole_report,) = reports(tmp_path / "whole.jsonl")
    *_, resumed_report = reports(tmp_path / "parts.jsonl")
    assert resumed_report["sitemaps"]["files"] == whole_report["sitemaps"]["files"]
    assert sorted(map(json.dumps, resumed_report["faults"])) == sorted(
        map(json.dumps, whole_report["faults"])
    )


def test_seen_urls_survive_a_new_process(tmp_path: Path) -> None:
    """The emitted-URL table pickled by a paused crawl still knows its URLs in the process
    that resumes it (Python's own ``hash()`` is salted per process)."""
    import pickle

    from sitemapcrawl.sitemaps.seen import SeenUrls

    seen = SeenUrls()
    for i in range(1000):
        seen.add(f"https://a.example/{i}")
    saved = tmp_path / "seen.pickle"
    saved.write_bytes(pickle.dumps(seen))
    script = (
        "import pickle, sys; seen = pickle.loads(open(sys.argv[1], 'rb').read()); "
        "print(sum(not seen.add(f'https://a.example/{i}') for i in range(1000)), "
        "seen.add('https://a.example/new'))"
    )
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", script, str(saved)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert result.stdout.split() == ["1000", "True"]


def _old_format_table(urls: list[str], layout: int) -> Any:
    """A ``SeenUrls`` as an older version pickled it, its slots as ``pickle`` writes a class
    with ``__slots__`` (``(None, {slot: value})``). Layout 1, before issue 33's decision 2:
    64-bit BLAKE2b values in one array, no format mark. Layout 2: 96-bit XXH3 digests in
    one flat table (the high halves in one array, the low halves in another)."""
    from array import array
    from hashlib import blake2b

    from sitemapcrawl.sitemaps.seen import SeenUrls

    size = 1 << 16
    table = array("Q", bytes(8 * size))
    lows = array("I", bytes(4 * size))
    for url in urls:
        if layout == 1:
            value = int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "little") or 1
            low = 0
        else:
            digest = SeenUrls.hash(url)
            value, low = digest >> 32, digest & 0xFFFF_FFFF
        index = value & (size - 1)
        while table[index]:
            index = (index + 1) & (size - 1)
        table[index] = value
        lows[index] = low
    slots: dict[str, Any] = {"_count": len(urls), "_mask": size - 1, "_table": table}
    if layout == 2:
        slots.update({"_low": lows, "_format": 2})
    old = SeenUrls.__new__(SeenUrls)
    old.__setstate__((None, slots))
    assert old.__reduce_ex__(4)[2] == (None, slots)
    return old


@pytest.mark.parametrize("layout", [1, 2])
def test_a_paused_crawl_of_an_old_table_layout_is_refused(
    site: Callable[[str], MockServer], tmp_path: Path, layout: int
) -> None:
    """A JOBDIR paused by a version that kept 64-bit BLAKE2b values (layout 1), or 96-bit
    digests in one flat table (layout 2), is never misread: the crawl ends with
    ``bad_state`` and one error line, emits nothing, and leaves the paused state as it was
    (the version that wrote it can still finish it)."""
    import pickle

    server = site("basic")
    jobdir = tmp_path / "job"
    out = tmp_path / "parts.jsonl"
    first = run(server, out, "-s", f"JOBDIR={jobdir}", "-s", "CLOSESPIDER_PAGECOUNT=3")
    assert "'finish_reason': 'closespider_pagecount'" in first
    emitted = rows(out)
    assert emitted
    state_file = jobdir / "spider.state"
    state = pickle.loads(state_file.read_bytes())
    state["sitemapcrawl"]["seen"] = _old_format_table([row["url"] for row in emitted], layout)
    old = pickle.dumps(state, protocol=4)
    state_file.write_bytes(old)
    assert pickle.loads(old)["sitemapcrawl"]["seen"].stale

    server.reset_requests()
    second = run(server, out, "-s", f"JOBDIR={jobdir}")
    assert "'finish_reason': 'bad_state'" in second
    errors = [line for line in second.splitlines() if "] ERROR:" in line]
    assert len(errors) == 1, errors
    assert "written by an older sitemapcrawl" in errors[0]
    assert "Resuming:" not in second
    assert rows(out) == emitted  # nothing more: no URL emitted twice, none misread
    assert server.requests() == []  # no sitemap requested again
    # The paused state is kept as the old version wrote it (its table in the old layout).
    kept = pickle.loads(state_file.read_bytes())["sitemapcrawl"]
    assert kept["seen"].stale
    assert kept["seen"].__getstate__() == pickle.loads(old)["sitemapcrawl"]["seen"].__getstate__()
    # Refused again on the next try (the state was not consumed).
    third = run(server, out, "-s", f"JOBDIR={jobdir}")
    assert "'finish_reason': 'bad_state'" in third
