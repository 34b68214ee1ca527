"""The state file's retention (``incremental/retention.py``) and ``scrapy sitemapstate``."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from sitemapcrawl.incremental.retention import prune, size
from sitemapcrawl.incremental.sitemapfiles import SitemapState
from sitemapcrawl.incremental.store import SCHEMA_VERSION, StateStore

ROOT = Path(__file__).resolve().parents[1]
A, B = "https://a.example", "https://b.example"
NOW = dt.datetime(2026, 1, 10, tzinfo=dt.UTC)


def build(path: Path) -> None:
    """Site A: four finished runs (1-4, January 2026); /u1 on every run, /u2 on run 1 only,
    /u3 from run 3. Its sitemap /s1.xml read on run 4, /old.xml last on run 2. Site B:
    one run (5) a year earlier, one URL, one sitemap."""
    store = StateStore.open(path)
    seen = {1: ["/u1", "/u2"], 2: ["/u1"], 3: ["/u1", "/u3"], 4: ["/u1", "/u3"]}
    for day, paths in seen.items():
        run = store.begin_run(A, f"2026-01-0{day}T00:00:00Z", None)
        rows = [(A + p, "/s1.xml", A + "/s1.xml", "2025-12-01", 1_767_225_600, True) for p in paths]
        store.write_urls(A, run, rows)
        store.merge_urls()
        store.finish_run(run, f"2026-01-0{day}T00:01:00Z", "finished", f"2026-01-0{day}T00:00:00Z")
    run = store.begin_run(B, "2025-01-01T00:00:00Z", None)
    store.write_urls(B, run, [(B + "/x", "/s.xml", B + "/s.xml", None, 1_735_689_600, True)])
    store.merge_urls()
    store.finish_run(run, "2025-01-01T00:01:00Z", "finished", "2025-01-01T00:00:00Z")
    for origin, url, run_id in (
        (A, A + "/s1.xml", 4),
        (A, A + "/old.xml", 2),
        (B, B + "/s.xml", 5),
    ):
        store.sitemaps.save(
            origin, run_id, SitemapState(url, "urlset", '"e"', None, "h", None, run_id, 0, 0)
        )
        store.sitemaps.save_body(origin, url, b"\x1f\x8b body", "")
    store.close()


def contents(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path) as db:
        return {
            "runs": db.execute("SELECT id, origin FROM runs ORDER BY id").fetchall(),
            "urls": db.execute(
                "SELECT n.name, u.path, u.first_run, u.last_run FROM urls AS u "
                "JOIN names AS n ON n.id = u.origin ORDER BY 1, 2"
            ).fetchall(),
            "sitemaps": db.execute(
                "SELECT url, body IS NOT NULL, etag FROM sitemaps ORDER BY url"
            ).fetchall(),
        }


def test_prune_drops_old_sites_old_runs_and_unused_bodies(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    build(path)
    before = contents(path)
    store = StateStore.open(path)
    counted = prune(store, days=90, keep_runs=2, now=NOW, dry_run=True)
    store.close()
    assert contents(path) == before
    store = StateStore.open(path)
    done = prune(store, days=90, keep_runs=2, now=NOW)
    store.close()
    assert (done.sites, done.runs, done.urls, done.bodies) == (1, 3, 2, 2)
    assert (counted.sites, counted.runs, counted.urls, counted.bodies) == (1, 3, 2, 2)
    assert done.bytes_after <= done.bytes_before
    assert contents(path) == {
        "runs": [(3, A), (4, A)],
        "urls": [(A, "/u1", 1, 4), (A, "/u3", 3, 4)],
        "sitemaps": [(A + "/old.xml", 0, None), (A + "/s1.xml", 1, '"e"')],
    }
    # what is left still opens, and a next run compares with run 4
    store = StateStore.open(path)
    assert store.previous_run(A) is not None
    assert store.previous_run(A)["id"] == 4  # type: ignore[index]
    assert store.url(A, A + "/u3") is not None
    store.close()


def test_prune_keeps_the_last_finished_run_and_every_rule_can_be_off(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    build(path)
    store = StateStore.open(path)
    run = store.begin_run(A, "2026-01-09T00:00:00Z", None)  # interrupted: never finished
    store.close()
    store = StateStore.open(path)
    done = prune(store, days=0, keep_runs=1, now=NOW)
    store.close()
    # run 6 is the last, run 4 the last finished one: both stay, and what they saw
    assert (done.sites, done.runs, done.urls, done.bodies) == (0, 3, 1, 1)
    assert [r for r in contents(path)["runs"] if r[1] == A] == [(4, A), (run, A)]
    store = StateStore.open(path)
    nothing = prune(store, days=0, keep_runs=0, now=NOW)
    store.close()
    assert (nothing.sites, nothing.runs, nothing.urls, nothing.bodies) == (0, 0, 0, 0)


def test_size_counts_rows_and_bytes_per_url(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    build(path)
    store = StateStore.open(path)
    found = size(store)
    store.close()
    assert {k: found[k] for k in ("schema", "sites", "runs", "urls")} == {
        "schema": SCHEMA_VERSION,
        "sites": 2,
        "runs": 5,
        "urls": 4,
    }
    assert found["bytes_per_url"] == round(path.stat().st_size / 4, 1)


def scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "sitemapstate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_command_prunes_and_describes(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    build(path)
    result = scrapy("prune", "--state", str(path), "--days", "0", "--keep-runs", "1", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"sitemapstate: {path}: would remove 0 site(s), 3 run(s), 1 URL row(s), "
        "1 stored sitemap bod(ies); "
    )
    result = scrapy("prune", "--state", str(path), "--days", "0", "--keep-runs", "1")
    assert result.returncode == 0, result.stderr
    assert ": removed 0 site(s), 3 run(s), 1 URL row(s), 1 stored sitemap bod(ies); " in (
        result.stdout
    )
    result = scrapy("info", "-s", f"SITEMAPCRAWL_STATE_PATH={path}")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert (info["sites"], info["runs"], info["urls"]) == (2, 2, 3)


def test_command_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    result = scrapy("prune", "--state", str(missing))
    assert (result.returncode, result.stderr) == (
        1,
        f"sitemapstate: error: {missing}: no such state file\n",
    )
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE t (x)")
    result = scrapy("info", "--state", str(foreign))
    assert result.returncode == 1
    assert "not a sitemapcrawl state file" in result.stderr
    assert scrapy("shrink").returncode == 2
    assert scrapy("prune", "--keep-runs", "-1").returncode == 2
