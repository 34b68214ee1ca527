"""What changed in a site's list of URLs since its last finished run: each URL item's
``status``, the report's ``changes`` section, the ``-a emit=changes`` feed, and the sitemaps
a failure or a limit left unread, over several runs against a real loopback server with one
state file. Feeds are real JSON Lines files, read back record by record in key order."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.incremental.store import SCHEMA_VERSION, StateStore
from sitemapcrawl.items import SitemapUrlItem, UrlChange
from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
URL_KEYS = [f.name for f in fields(SitemapUrlItem)]
CHANGE_KEYS = ["url", "status", "lastmod", "segment", "last_seen"]


def urlset(*entries: tuple[str, str]) -> str:
    rows = "".join(f"<url><loc>{{base}}{p}</loc><lastmod>{m}</lastmod></url>" for p, m in entries)
    return f'<urlset xmlns="{NS}">{rows}</urlset>'


def page(text: str) -> str:
    return (
        "<!DOCTYPE html><html><head><title>x</title></head>"
        f"<body><main><article><p>{text}</p></article></main></body></html>"
    )


async def run(
    server: MockServer, state: Path, feed: Path, settings: dict[str, Any] | None = None, **args: Any
) -> tuple[list[dict[str, Any]], Crawler]:
    """One crawl writing a JSON Lines feed; its records, in order and in key order."""
    feed.unlink(missing_ok=True)
    _, report, crawler = await crawl_with_report(
        settings={"FEEDS": {feed.as_uri(): {"format": "jsonlines"}}, **(settings or {})},
        origin=server.base,
        links="off",
        state=str(state),
        **{"sample": "off", **args},
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert report is not None
    records = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines()]
    assert records[-1]["origin"] == server.base  # the site report closes the feed
    assert records[-1]["changes"] == report["changes"]
    return records, crawler


def url_item(base: str, path: str, day: str, sitemap: str, status: str) -> dict[str, Any]:
    """A URL item of a top-level urlset (segment "/": groups under 5 URLs join it)."""
    return {
        "url": f"{base}{path}",
        "lastmod": f"{day}T00:00:00Z",
        "lastmod_raw": day,
        "lastmod_precision": "day",
        "lastmod_flags": ["date_only"],
        "changefreq": None,
        "priority": None,
        "sitemap": f"{base}/{sitemap}",
        "sitemap_lastmod": None,
        "segment": "/",
        "depth": 0,
        "found_via": "robots",
        "news": [],
        "images": [],
        "videos": [],
        "alternates": [],
        "mobile": False,
        "flags": [],
        "refetch": None,
        "refetch_reason": None,
        "status": status,
    }


def change(base: str, path: str, status: str, day: str, segment: str) -> dict[str, Any]:
    """A ``UrlChange`` record without its ``last_seen``."""
    return {
        "url": f"{base}{path}",
        "status": status,
        "lastmod": f"{day}T00:00:00Z",
        "segment": segment,
    }


def changes_stats(crawler: Crawler) -> dict[str, Any]:
    return {k: v for k, v in our_stats(crawler).items() if k.startswith("sitemapcrawl/changes/")}


def without_clock(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The change records with ``last_seen`` (a run's server clock) checked and dropped."""
    out = []
    for record in records:
        assert list(record) == CHANGE_KEYS
        assert record["last_seen"].endswith("Z")
        out.append({k: v for k, v in record.items() if k != "last_seen"})
    return out


@deferred_f_from_coro_f
async def test_added_moved_changed_removed_and_unconfirmed_across_three_runs(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "robots.txt").write_text("Sitemap: {base}/posts.xml\nSitemap: {base}/pages.xml\n")
    posts, pages = site / "posts.xml", site / "pages.xml"
    posts.write_text(urlset(("/a", "2024-01-01"), ("/b", "2024-01-02"), ("/c", "2024-01-03")))
    pages.write_text(urlset(("/d", "2024-02-01"), ("/e", "2024-02-02")))
    for name in "abcden":
        (site / name).write_text(page(f"Page {name}, its first version."))
    state, feed = tmp_path / "state.sqlite", tmp_path / "urls.jsonl"
    # Every page is sampled on every run (5 URLs a segment, 30 allowed): our fetches see
    # which pages changed.
    with MockServer(root=site) as server:
        base = server.base
        first, crawler1 = await run(server, state, feed, sample="on")
        # Run 2: /a's lastmod moves, /b's page changes under the same lastmod, /c is gone,
        # /n is new; pages.xml fails (404): its URLs are unconfirmed, not removed.
        posts.write_text(urlset(("/a", "2024-03-01"), ("/b", "2024-01-02"), ("/n", "2024-03-02")))
        (site / "b").write_text(page("Page b, rewritten from top to bottom."))
        pages.unlink()
        second, crawler2 = await run(server, state, feed, sample="on", emit="changes")
        # Run 3 (emit=all): pages.xml is back without /e (removed now); /b changes again,
        # which its URL item, written before the page is fetched, cannot say.
        pages.write_text(urlset(("/d", "2024-02-01")))
        (site / "b").write_text(page("Page b, rewritten once more, with other words."))
        third, crawler3 = await run(server, state, feed, sample="on")

    # Run 1: every URL is new; emit=all writes every URL item, then the report.
    assert [list(r) for r in first[:-1]] == [URL_KEYS] * 5
    assert sorted(first[:-1], key=lambda r: r["url"]) == [
        url_item(base, "/a", "2024-01-01", "posts.xml", "new"),
        url_item(base, "/b", "2024-01-02", "posts.xml", "new"),
        url_item(base, "/c", "2024-01-03", "posts.xml", "new"),
        url_item(base, "/d", "2024-02-01", "pages.xml", "new"),
        url_item(base, "/e", "2024-02-02", "pages.xml", "new"),
    ]
    assert first[-1]["changes"] == {
        "since_run": None,
        "added": 5,
        "moved": 0,
        "unchanged": 0,
        "changed": 0,
        "removed": 0,
        "unconfirmed": 0,
        "removed_urls": [],
        "unconfirmed_sitemaps": {},
        "failed_sitemaps": {},
        "left_sitemaps": 0,
        "carried_sitemaps": 0,
    }
    assert changes_stats(crawler1) == {
        "sitemapcrawl/changes/added_count": 5,
        "sitemapcrawl/changes/changed_count": 0,
        "sitemapcrawl/changes/removed_count": 0,
        "sitemapcrawl/changes/unconfirmed_count": 0,
        "sitemapcrawl/changes/failed_sitemaps_count": 0,
        "sitemapcrawl/changes/left_sitemaps_count": 0,
        "sitemapcrawl/changes/carried_sitemaps_count": 0,
    }

    # Run 2, emit=changes: the new and moved URL items in sitemap order, then one record
    # per changed page, per removed URL and per unconfirmed URL, then the report.
    assert second[:2] == [
        url_item(base, "/a", "2024-03-01", "posts.xml", "moved"),
        url_item(base, "/n", "2024-03-02", "posts.xml", "new"),
    ]
    assert without_clock(second[2:-1]) == [
        change(base, "/b", "changed", "2024-01-02", "/"),
        change(base, "/c", "removed", "2024-01-03", "/"),
        change(base, "/d", "unconfirmed", "2024-02-01", "/"),
        change(base, "/e", "unconfirmed", "2024-02-02", "/"),
    ]
    run1_clock = second[3]["last_seen"]  # /c was last listed by run 1
    assert second[4]["last_seen"] == second[5]["last_seen"] == run1_clock
    changes2 = second[-1]["changes"]
    assert changes2 == {
        "since_run": 1,
        "added": 1,
        "moved": 1,
        "unchanged": 1,
        "changed": 1,
        "removed": 1,
        "unconfirmed": 2,
        "removed_urls": [
            {
                "url": f"{base}/c",
                "lastmod": "2024-01-03",
                "segment": "/",
                "sitemap": f"{base}/posts.xml",
                "last_seen": run1_clock,
            }
        ],
        "unconfirmed_sitemaps": {f"{base}/pages.xml": 2},
        "failed_sitemaps": {f"{base}/pages.xml": "http_404"},
        "left_sitemaps": 0,
        "carried_sitemaps": 0,
    }
    assert changes_stats(crawler2) == {
        "sitemapcrawl/changes/added_count": 1,
        "sitemapcrawl/changes/moved_count": 1,
        "sitemapcrawl/changes/unchanged_count": 1,
        "sitemapcrawl/changes/not_emitted_count": 1,
        "sitemapcrawl/changes/changed_count": 1,
        "sitemapcrawl/changes/removed_count": 1,
        "sitemapcrawl/changes/unconfirmed_count": 2,
        "sitemapcrawl/changes/failed_sitemaps_count": 1,
        "sitemapcrawl/changes/left_sitemaps_count": 0,
        "sitemapcrawl/changes/carried_sitemaps_count": 0,
    }

    # Run 3, emit=all: every URL once, with its status at discovery; /d is back to normal
    # (unchanged), /e is removed and /b changed: both in the report only.
    assert sorted(third[:-1], key=lambda r: r["url"]) == [
        url_item(base, "/a", "2024-03-01", "posts.xml", "unchanged"),
        url_item(base, "/b", "2024-01-02", "posts.xml", "unchanged"),
        url_item(base, "/d", "2024-02-01", "pages.xml", "unchanged"),
        url_item(base, "/n", "2024-03-02", "posts.xml", "unchanged"),
    ]
    changes3 = dict(third[-1]["changes"])
    (tombstone_e,) = changes3.pop("removed_urls")
    assert tombstone_e == {
        "url": f"{base}/e",
        "lastmod": "2024-02-02",
        "segment": "/",
        "sitemap": f"{base}/pages.xml",
        "last_seen": run1_clock,
    }
    assert changes3 == {
        "since_run": 2,
        "added": 0,
        "moved": 0,
        "unchanged": 4,
        "changed": 1,
        "removed": 1,
        "unconfirmed": 0,
        "unconfirmed_sitemaps": {},
        "failed_sitemaps": {},
        "left_sitemaps": 0,
        "carried_sitemaps": 0,
    }
    assert changes_stats(crawler3) == {
        "sitemapcrawl/changes/unchanged_count": 4,
        "sitemapcrawl/changes/changed_count": 1,
        "sitemapcrawl/changes/removed_count": 1,
        "sitemapcrawl/changes/unconfirmed_count": 0,
        "sitemapcrawl/changes/failed_sitemaps_count": 0,
        "sitemapcrawl/changes/left_sitemaps_count": 0,
        "sitemapcrawl/changes/carried_sitemaps_count": 0,
    }


def index(*children: tuple[str, str]) -> str:
    rows = "".join(
        f"<sitemap><loc>{{base}}/{name}</loc><lastmod>{m}</lastmod></sitemap>"
        for name, m in children
    )
    return f'<sitemapindex xmlns="{NS}">{rows}</sitemapindex>'


def child_item(base: str, path: str, day: str, child: str, status: str) -> dict[str, Any]:
    """A URL item of an index's child: the child is its segment."""
    return {
        **url_item(base, path, day, child, status),
        "sitemap_lastmod": None,  # set by the caller: the index's lastmod for the child
        "segment": f"/{child}",
        "depth": 1,
    }


@deferred_f_from_coro_f
async def test_sitemaps_left_by_max_sitemaps_are_carried_to_the_next_run(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "robots.txt").write_text("Sitemap: {base}/index.xml\n")
    # Newest first: s1, s2, s3, s4.
    (site / "index.xml").write_text(
        index(
            ("s4.xml", "2024-04-01"),
            ("s3.xml", "2024-05-01"),
            ("s2.xml", "2024-06-01"),
            ("s1.xml", "2024-07-01"),
        )
    )
    for n in range(1, 5):
        (site / f"s{n}.xml").write_text(urlset((f"/p{n}", f"2024-0{n}-01")))
    state, feed = tmp_path / "state.sqlite", tmp_path / "urls.jsonl"
    one_at_a_time = {"SITEMAPCRAWL_CONCURRENT_SITEMAPS": 1, "CONCURRENT_REQUESTS": 1}
    with MockServer(root=site) as server:
        base = server.base
        # Run 1: the index, s1 and s2; s3 and s4 are left for the next run.
        first, crawler1 = await run(server, state, feed, one_at_a_time, max_sitemaps="3")
        # Run 2: s3 and s4 first (carried, newest first), then the index; s1 and s2 are
        # left: their URLs are unconfirmed, not removed.
        second, crawler2 = await run(server, state, feed, one_at_a_time, max_sitemaps="3")
        # Run 3, no limit: s1 and s2 first, then everything; s4 no longer lists /p4.
        (site / "s4.xml").write_text(urlset(("/q4", "2024-04-02")))
        third, crawler3 = await run(server, state, feed, one_at_a_time, emit="changes")

    assert [(r["url"], r["status"]) for r in first[:-1]] == [
        (f"{base}/p1", "new"),
        (f"{base}/p2", "new"),
    ]
    assert {k: first[-1]["changes"][k] for k in ("left_sitemaps", "carried_sitemaps")} == {
        "left_sitemaps": 2,
        "carried_sitemaps": 0,
    }
    assert first[-1]["limits"] == {"max_sitemaps_count": 2}
    assert changes_stats(crawler1)["sitemapcrawl/changes/left_sitemaps_count"] == 2

    assert second[:-1] == [
        {
            **child_item(base, "/p3", "2024-03-01", "s3.xml", "new"),
            "sitemap_lastmod": "2024-05-01T00:00:00Z",
        },
        {
            **child_item(base, "/p4", "2024-04-01", "s4.xml", "new"),
            "sitemap_lastmod": "2024-04-01T00:00:00Z",
        },
    ]
    assert second[-1]["changes"] == {
        "since_run": 1,
        "added": 2,
        "moved": 0,
        "unchanged": 0,
        "changed": 0,
        "removed": 0,
        "unconfirmed": 2,
        "removed_urls": [],
        "unconfirmed_sitemaps": {f"{base}/s1.xml": 1, f"{base}/s2.xml": 1},
        "failed_sitemaps": {},
        "left_sitemaps": 2,
        "carried_sitemaps": 2,
    }
    assert changes_stats(crawler2) == {
        "sitemapcrawl/changes/added_count": 2,
        "sitemapcrawl/changes/changed_count": 0,
        "sitemapcrawl/changes/removed_count": 0,
        "sitemapcrawl/changes/unconfirmed_count": 2,
        "sitemapcrawl/changes/failed_sitemaps_count": 0,
        "sitemapcrawl/changes/left_sitemaps_count": 2,
        "sitemapcrawl/changes/carried_sitemaps_count": 2,
    }
    # a carried sitemap listed again by its index is not a duplicate
    assert "sitemapcrawl/sitemaps/duplicate_count" not in our_stats(crawler2)

    assert [list(r) for r in third[1:-1]] == [CHANGE_KEYS]
    assert third[0] == {
        **child_item(base, "/q4", "2024-04-02", "s4.xml", "new"),
        "sitemap_lastmod": "2024-04-01T00:00:00Z",
    }
    assert without_clock(third[1:-1]) == [change(base, "/p4", "removed", "2024-04-01", "/s4.xml")]
    changes3 = dict(third[-1]["changes"])
    changes3.pop("removed_urls")
    assert changes3 == {
        "since_run": 2,
        "added": 1,
        "moved": 0,
        "unchanged": 3,
        "changed": 0,
        "removed": 1,
        "unconfirmed": 0,
        "unconfirmed_sitemaps": {},
        "failed_sitemaps": {},
        "left_sitemaps": 0,
        "carried_sitemaps": 2,
    }
    assert changes_stats(crawler3) == {
        "sitemapcrawl/changes/added_count": 1,
        "sitemapcrawl/changes/unchanged_count": 3,
        "sitemapcrawl/changes/not_emitted_count": 3,
        "sitemapcrawl/changes/changed_count": 0,
        "sitemapcrawl/changes/removed_count": 1,
        "sitemapcrawl/changes/unconfirmed_count": 0,
        "sitemapcrawl/changes/failed_sitemaps_count": 0,
        "sitemapcrawl/changes/left_sitemaps_count": 0,
        "sitemapcrawl/changes/carried_sitemaps_count": 2,
    }


@pytest.mark.parametrize(
    ("args", "settings", "error"),
    [
        ({"emit": "everything"}, {}, "argument emit='everything' is not one of all, changes"),
        ({"emit": "changes", "state": "off"}, {}, "argument emit=changes needs the state file"),
    ],
)
@deferred_f_from_coro_f
async def test_bad_emit_argument_stops_the_crawl(
    args: dict[str, str], settings: dict[str, Any], error: str, caplog: pytest.LogCaptureFixture
) -> None:
    items, report, crawler = await crawl_with_report(
        settings=settings, origin="http://127.0.0.1:9/", **args
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "bad_argument"
    assert (items, report) == ([], None)
    assert error in caplog.text


def test_change_record_keys_are_documented_in_this_order() -> None:
    assert [f.name for f in fields(UrlChange)] == CHANGE_KEYS
    assert URL_KEYS[-3:] == ["refetch", "refetch_reason", "status"]


@deferred_f_from_coro_f
async def test_a_schema_8_file_is_upgraded_and_carries_what_a_limit_left(tmp_path: Path) -> None:
    """Schema 9 adds the backlog of sitemaps left unread; a schema 8 file keeps its runs
    and URLs, and its next run is compared with them."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "robots.txt").write_text("Sitemap: {base}/index.xml\n")
    (site / "index.xml").write_text(index(("s1.xml", "2024-07-01"), ("s2.xml", "2024-06-01")))
    (site / "s1.xml").write_text(urlset(("/p1", "2024-01-01")))
    (site / "s2.xml").write_text(urlset(("/p2", "2024-02-01")))
    state, feed = tmp_path / "state.sqlite", tmp_path / "urls.jsonl"
    StateStore.open(state, upto=8).close()
    with sqlite3.connect(state) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 8
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        assert "sitemap_backlog" not in tables
    with MockServer(root=site) as server:
        first, _ = await run(server, state, feed, max_sitemaps="2")
        second, _ = await run(server, state, feed, max_sitemaps="2")
    assert first[-1]["state"]["schema"] == SCHEMA_VERSION == 10
    assert [(r["url"], r["status"]) for r in first[:-1]] == [(f"{server.base}/p1", "new")]
    assert first[-1]["changes"]["left_sitemaps"] == 1
    # run 2: s2 (carried) first, then the index: s1 is left and its URL unconfirmed
    assert [(r["url"], r["status"]) for r in second[:-1]] == [(f"{server.base}/p2", "new")]
    changes = second[-1]["changes"]
    assert (changes["unconfirmed_sitemaps"], changes["carried_sitemaps"]) == (
        {f"{server.base}/s1.xml": 1},
        1,
    )
    with sqlite3.connect(state) as db:
        backlog = db.execute("SELECT url, position, run_id FROM sitemap_backlog").fetchall()
    assert backlog == [(f"{server.base}/s1.xml", 0, 2)]
