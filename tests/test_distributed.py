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
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

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
    # the stopped worker published what it read: the other's report covers every URL
    assert reports(tmp_path / "a.jsonl") == []
    (report,) = reports(tmp_path / "b.jsonl")
    assert report["urls"]["found"] == 200  # type: ignore[index]


def test_the_last_worker_cleans_up(mockserver: MockServer, redis_url: str, tmp_path: Path) -> None:
    import redis

    process = worker(mockserver, redis_url, tmp_path / "a.jsonl")
    finish(process)
    assert redis.Redis.from_url(redis_url).keys("sitemap:*") == []


def reports(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if "url" not in row]


#: One site for the report tests: six child sitemaps (each answers after a second, so both
#: workers read some), three whose lastmods are the pages' own dates and three stamped
#: with one build time over pages dated otherwise.
REPORT_CHILDREN = 6


@pytest.fixture(scope="module")
def report_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    from tests.mockserver import MockServer

    root = tmp_path_factory.mktemp("distributed-report")
    children = []
    for c in range(REPORT_CHILDREN):
        entries = []
        for i in range(20):
            day = f"2026-{1 + (c * 20 + i) % 11:02d}-{1 + i % 27:02d}"
            page_date = f"{day}T08:00:00Z"
            lastmod = page_date if c < 3 else "2026-11-30T10:00:00Z"
            entries.append(
                f"<url><loc>{{base}}/p/{c}/{i}.html</loc><lastmod>{lastmod}</lastmod></url>"
            )
            page = root / "p" / str(c) / f"{i}.html"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(
                "<!DOCTYPE html><html><head><title>p</title>"
                '<script type="application/ld+json">{"@context": "https://schema.org", '
                f'"@type": "Article", "dateModified": "{page_date}"}}</script></head>'
                f"<body><main><h1>Page {c}/{i}</h1><p>Text of page {c}/{i}.</p>"
                f'<a href="/p/{c}/{(i + 1) % 20}.html">next</a></main></body></html>',
                encoding="utf-8",
            )
        (root / f"c{c}.xml").write_text(
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(entries)
            + "</urlset>",
            encoding="utf-8",
        )
        children.append(f"<sitemap><loc>{{base}}/_/slow/1/c{c}.xml</loc></sitemap>")
    (root / "index.xml").write_text(
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(children)
        + "</sitemapindex>",
        encoding="utf-8",
    )
    (root / "index.html").write_text(
        '<html><body><a href="/p/0/0.html">first</a><a href="/about.html">about</a></body></html>',
        encoding="utf-8",
    )
    (root / "about.html").write_text("<html><body><p>about</p></body></html>", encoding="utf-8")
    with MockServer(root=root) as server:
        yield server


def report_worker(server: MockServer, out: Path, redis_url: str | None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    shared = ["-s", f"SITEMAPCRAWL_REDIS_URL={redis_url}"] if redis_url else []
    return subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "sitemap",
            "-a", f"sitemap_urls={server.base}/index.xml", "-a", "origin=" + server.base,
            "-O", str(out), "-s", "SITEMAPCRAWL_STATE_PATH=",
            *shared,
            "-s", "CONCURRENT_REQUESTS=1", "-s", "SITEMAPCRAWL_REDIS_WAIT=30",
            "-s", "REMOTE_CONTROL_ENABLED=False", "-s", "TELNETCONSOLE_ENABLED=False",
            "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "LOG_LEVEL=INFO",
        ],
        cwd=ROOT, env={**env, "SITEMAPCRAWL_REDIS_URL": ""},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def verdicts(report: dict[str, Any]) -> dict[str, tuple[str, str, list[str]]]:
    """Per segment: its verdict, its reason and the URLs of its sampled pages."""
    return {
        s["segment"]: (s["verdict"], s["reason"], sorted(p["url"] for p in s["samples"]))
        for s in report["segments"]
    }


def test_two_workers_write_one_report_with_a_single_workers_verdicts(
    report_site: MockServer, redis_url: str, tmp_path: Path
) -> None:
    """Two workers on one Redis, one site: every URL once in the union of their feeds, one
    report (the reporter's) over every segment, with the verdicts, reasons and sampled
    pages of a single worker's crawl; no link-only duplicate from the other worker."""
    single = report_worker(report_site, tmp_path / "single.jsonl", None)
    finish(single)
    alone = rows(tmp_path / "single.jsonl")
    (alone_report,) = [r for r in alone if "url" not in r]

    first = report_worker(report_site, tmp_path / "a.jsonl", redis_url)
    time.sleep(1.5)  # the second joins a crawl under way
    second = report_worker(report_site, tmp_path / "b.jsonl", redis_url)
    logs = [finish(first), finish(second)]
    a, b = rows(tmp_path / "a.jsonl"), rows(tmp_path / "b.jsonl")
    reports = [r for r in a + b if "url" not in r]
    items = [r for r in a + b if "url" in r]
    assert len(reports) == 1  # one report for the crawl
    (report,) = reports
    assert [r["url"] for r in a if "url" in r]  # both workers read sitemaps
    assert [r["url"] for r in b if "url" in r]
    assert Counter(r["url"] for r in items) == Counter(r["url"] for r in alone if "url" in r)
    assert max(Counter(r["url"] for r in items).values()) == 1
    assert report["urls"] == alone_report["urls"]
    assert report["urls"]["found"] == REPORT_CHILDREN * 20
    assert verdicts(report) == verdicts(alone_report)
    assert len({v for v, _, _ in verdicts(report).values()}) >= 2  # not one verdict for all
    assert report["coverage"] == alone_report["coverage"]
    assert sum("This worker reports for the crawl" in log for log in logs) == 1
    assert sum("Another worker reports for the crawl" in log for log in logs) == 1
    assert all("'finish_reason': 'finished'" in log for log in logs)
    assert all("log_count/ERROR" not in log for log in logs)
    import redis

    assert redis.Redis.from_url(redis_url).keys("sitemap:*") == []


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


@pytest.mark.parametrize("layout", [1, 2])
def test_a_share_of_an_old_layout_is_refused(
    mockserver: MockServer, redis_url: str, tmp_path: Path, layout: int
) -> None:
    """A worker's share written by a version that kept 64-bit BLAKE2b keys (layout 1), or
    96-bit digests in one flat table (layout 2), is never taken in: the reporter ends with
    ``bad_state``, one error line, and no report."""
    import pickle

    import redis

    server = redis.Redis.from_url(redis_url)
    prefix = "sitemap:sitemapcrawl:"
    old = {"layout": layout, "segments": {}, "listed": {}, "stats": {}}
    server.hset(prefix + "shares", "old-worker", pickle.dumps(old))
    # a second registered worker that has not published: the keys are not left-overs
    server.sadd(prefix + "workers", "old-worker", "another-old-worker")
    process = worker(mockserver, redis_url, tmp_path / "a.jsonl", "-s", "SITEMAPCRAWL_REDIS_WAIT=1")
    log = finish(process)
    assert "'finish_reason': 'bad_state'" in log
    errors = [line for line in log.splitlines() if "] ERROR:" in line]
    assert len(errors) == 1, errors
    assert f"share in Redis is of layout {layout}, not 3" in errors[0]
    assert sorted(urls(tmp_path / "a.jsonl")) == expected(mockserver)  # its own discovery
    assert reports(tmp_path / "a.jsonl") == []  # no report built on a misread share
    for key in server.keys("sitemap:*"):  # the refused worker's queue too (parametrized)
        server.delete(key)
