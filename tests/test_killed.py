"""A crawl killed with SIGKILL mid-run (the OOM killer, a lost node, ``kill -9``): the
state file survives it whole, and the next run works from the last finished one."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.incremental.store import StateStore
from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report

ROOT = Path(__file__).resolve().parents[1]
URLS = 120


def _site(root: Path, *, hang: bool) -> None:
    stamp = (dt.datetime.now(dt.UTC) - dt.timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = "".join(
        f"<url><loc>{{base}}/p/{i}</loc><lastmod>{stamp}</lastmod></url>" for i in range(URLS)
    )
    (root / "sitemaps").mkdir(exist_ok=True)
    (root / "sitemaps" / "a.xml").write_text(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
    )
    children = "<sitemap><loc>{base}/sitemaps/a.xml</loc></sitemap>"
    if hang:  # a child that never answers: the crawl is still running when it is killed
        children += "<sitemap><loc>{base}/_/hang/600</loc></sitemap>"
    (root / "sitemap_index.xml").write_text(
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{children}'
        "</sitemapindex>"
    )
    (root / "robots.txt").write_text("Sitemap: {base}/sitemap_index.xml\n")


def _read(state: Path, query: str) -> list[Any]:
    """A reader beside the crawl (WAL mode lets it read while the crawl writes)."""
    if not state.exists():
        return []
    try:
        with sqlite3.connect(f"file:{state}?mode=ro", uri=True, timeout=1) as db:
            return db.execute(query).fetchall()
    except sqlite3.OperationalError:  # the schema is not written yet
        return []


@deferred_f_from_coro_f
async def test_a_killed_crawl_leaves_a_usable_state_file(tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    _site(root, hang=True)
    state = tmp_path / "state.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    with MockServer(root=root) as server:
        crawl = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                "sitemap",
                "-a",
                f"origin={server.base}",
                "-O",
                str(tmp_path / "killed.jsonl"),
                "-s",
                f"SITEMAPCRAWL_STATE_PATH={state}",
                "-s",
                "REMOTE_CONTROL_ENABLED=False",
                "-s",
                "TELNETCONSOLE_ENABLED=False",
                "-s",
                "LOG_LEVEL=INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # Kill it once a.xml is read (its row is in the state file) while the other
            # child still hangs.
            deadline = time.monotonic() + 60
            while not (
                _read(state, "SELECT url FROM sitemaps WHERE url LIKE '%/a.xml'")
                and "/_/hang/600" in server.requests()
            ):
                assert crawl.poll() is None, "the crawl ended before it could be killed"
                assert time.monotonic() < deadline, "a.xml was never read"
                time.sleep(0.05)
            crawl.send_signal(signal.SIGKILL)
        finally:
            crawl.kill()
            crawl.wait(timeout=30)
        assert crawl.returncode == -signal.SIGKILL
        # The file opens as a state file (no damage: SQLite's journal recovers it), with
        # the killed run on record and never finished.
        StateStore.open(state).close()
        with sqlite3.connect(state) as db:
            assert db.execute("PRAGMA quick_check").fetchall() == [("ok",)]
            assert db.execute("SELECT id, finish_reason FROM runs").fetchall() == [(1, None)]
        # The next run: the site without the hanging child, incremental from the last
        # finished run (there is none: every URL is decided as without history).
        _site(root, hang=False)
        items, report, crawler = await crawl_with_report(
            origin=server.base, state=str(state), since="last"
        )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") is None
    assert report is not None
    assert report["state"]["run"] == 2
    assert report["state"]["runs_before"] == 1
    assert report["state"]["previous_run"] is None  # the killed run is no cut
    assert report["incremental"]["cut"] is None
    # The killed run's URL rows were staged, never merged (documented): nothing it read
    # counts as seen, so every URL is new and fetched: more than needed, never less.
    assert report["incremental"]["by_reason"] == {"new": URLS}
    assert sorted(i["url"] for i in items) == sorted(f"{server.base}/p/{i}" for i in range(URLS))
    assert {(i["refetch"], i["refetch_reason"]) for i in items} == {(True, "new")}
    with sqlite3.connect(state) as db:
        assert db.execute("SELECT id, finish_reason FROM runs").fetchall() == [
            (1, None),
            (2, "finished"),
        ]
