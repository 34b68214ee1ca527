"""Two ``scrapy crawl sitemap`` workers sharing one crawl through a real redis-server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.mockserver import MockServer

ROOT = Path(__file__).resolve().parents[1]
CHILDREN = [f"/_/slow/1/sites/distributed/c{c}.xml" for c in range(8)]


def worker(server: MockServer, redis_url: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "sitemap",
            "-a", f"sitemap_urls={server.base}/sites/distributed/index.xml",
            "-O", str(out),
            "-s", f"SITEMAPCRAWL_REDIS_URL={redis_url}",
            "-s", "CONCURRENT_REQUESTS=1",
            "-s", "SITEMAPCRAWL_REDIS_WAIT=30",
            "-s", "REMOTE_CONTROL_ENABLED=False", "-s", "TELNETCONSOLE_ENABLED=False",
            "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "LOG_LEVEL=INFO",
            *extra,
        ],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def urls(path: Path) -> list[str]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row["url"] for row in rows if "url" in row]  # the site report has none


def expected(server: MockServer) -> list[str]:
    return sorted(f"{server.base}/d/{c}/{i}" for c in range(8) for i in range(25))


def finish(process: subprocess.Popen[str]) -> str:
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    return stderr


def test_two_workers_share_the_crawl(
    mockserver: MockServer, redis_url: str, tmp_path: Path
) -> None:
    mockserver.reset_requests()
    first = worker(mockserver, redis_url, tmp_path / "a.jsonl")
    time.sleep(1.5)  # the second worker joins a crawl under way
    second = worker(mockserver, redis_url, tmp_path / "b.jsonl")
    logs = [finish(first), finish(second)]
    a, b = urls(tmp_path / "a.jsonl"), urls(tmp_path / "b.jsonl")
    assert sorted(a + b) == expected(mockserver)  # nothing lost, nothing twice
    assert a
    assert b  # both workers read sitemaps
    requests = Counter(mockserver.requests())
    assert requests["/sites/distributed/index.xml"] == 1
    assert all(requests[child] == 1 for child in CHILDREN)
    assert all("'finish_reason': 'finished'" in log for log in logs)


def test_a_stopped_worker_hands_its_sitemaps_back(
    mockserver: MockServer, redis_url: str, tmp_path: Path
) -> None:
    mockserver.reset_requests()
    first = worker(mockserver, redis_url, tmp_path / "a.jsonl")
    second = worker(mockserver, redis_url, tmp_path / "b.jsonl")
    deadline = time.monotonic() + 60
    while len(urls(tmp_path / "a.jsonl")) < 25:  # the first has read a whole sitemap
        assert time.monotonic() < deadline, "the first worker read nothing"
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)  # stopped mid-crawl, as an operator would
    stopped = finish(first)
    assert "sitemaps not read yet were kept for later" in stopped
    finish(second)
    a, b = urls(tmp_path / "a.jsonl"), urls(tmp_path / "b.jsonl")
    assert sorted(a + b) == expected(mockserver)
    assert len(a) < 200


def test_the_last_worker_cleans_up(mockserver: MockServer, redis_url: str, tmp_path: Path) -> None:
    import redis

    process = worker(mockserver, redis_url, tmp_path / "a.jsonl")
    finish(process)
    assert redis.Redis.from_url(redis_url).keys("sitemap:*") == []
