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


def reports(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if "url" not in row]


def test_each_worker_emits_its_own_report(
    mockserver: MockServer, redis_url: str, tmp_path: Path
) -> None:
    """The report's request stays in the worker that made it: each worker's feed ends with
    one report, of the URLs that worker read, and no worker waits for a lost one."""
    first = worker(mockserver, redis_url, tmp_path / "a.jsonl")
    time.sleep(1.5)
    second = worker(mockserver, redis_url, tmp_path / "b.jsonl")
    logs = [finish(first), finish(second)]
    for name, log in zip("ab", logs, strict=True):
        feed = tmp_path / f"{name}.jsonl"
        (report,) = reports(feed)
        assert report["urls"]["found"] == len(urls(feed))  # type: ignore[index]
        assert "could not be built" not in log
        assert "'scheduler/enqueued/local': 1" in log
        assert "'scheduler/dequeued/local': 1" in log
        assert "'finish_reason': 'finished'" in log


def test_a_local_request_never_reaches_the_shared_queue(redis_url: str) -> None:
    import redis
    from scrapy import Request, Spider
    from scrapy.utils.test import get_crawler

    from sitemapcrawl.distributed import Scheduler, redis_settings
    from sitemapcrawl.meta import LOCAL

    class Probe(Spider):
        name = "probe-local"

    def scheduler() -> Scheduler:
        crawler = get_crawler(Probe, redis_settings(redis_url))
        made = Scheduler.from_crawler(crawler)
        made.open(Probe.from_crawler(crawler))
        return made

    mine, theirs = scheduler(), scheduler()
    shared = redis.Redis.from_url(redis_url)
    try:
        assert mine.enqueue_request(Request("data:,", dont_filter=True, meta={LOCAL: True}))
        assert mine.enqueue_request(Request("http://127.0.0.1:1/shared", dont_filter=True))
        assert shared.zcard("probe-local:requests") == 1  # only the shared one went to Redis
        assert len(mine) == 2
        assert len(theirs) == 1
        taken = theirs.next_request()
        assert taken is not None
        assert taken.url == "http://127.0.0.1:1/shared"
        assert theirs.next_request() is None  # the local one is not theirs to take
        local = mine.next_request()
        assert local is not None
        assert local.url == "data:,"
        assert not mine.has_pending_requests()
    finally:
        shared.delete(*shared.keys("probe-local:*") or ["probe-local:none"])
