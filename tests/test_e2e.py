"""``scrapy crawl sitemap`` as users run it: a subprocess writing JSON Lines, JSON and CSV feeds."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.mockserver import MockServer

ROOT = Path(__file__).resolve().parents[1]


def scrapy_crawl(*args: str, out: Path) -> tuple[str, dict[str, Any]]:
    """Run ``scrapy crawl sitemap ARGS -O out``; return stderr and the final stats it logged."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "sitemap",
            *args,
            "-O",
            str(out),
            "-s",
            "REMOTE_CONTROL_ENABLED=False",
            "-s",
            "TELNETCONSOLE_ENABLED=False",
            "-s",
            "AUTOTHROTTLE_ENABLED=False",
            "-s",
            "LOG_LEVEL=INFO",
            # One request at a time: a URL listed in two files keeps the entry read first,
            # and with one request in flight "first" does not depend on network timing.
            "-s",
            "CONCURRENT_REQUESTS=1",
            # The state file is on by default: each crawl here gets its own.
            "-s",
            f"SITEMAPCRAWL_STATE_PATH={out.parent / 'state.sqlite'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    stats = dict(
        re.findall(r"'([\w/.-]+)': (\d+|'\w+')", result.stderr.split("Dumping Scrapy stats:")[-1])
    )
    return result.stderr, stats


EXPECTED = {
    "/": ("/pages.txt", None),
    "/about": ("/pages.txt", None),
    "/extra/from-cdn": ("/cdn/extra.xml", None),
    "/news/merger": ("/sitemaps/news.xml", None),
    "/blog/first-post": ("/_/gzip/sitemaps/posts.xml", "2024-05-30T10:00:00Z"),
    "/blog/second-post?a=1&b=2": ("/_/gzip/sitemaps/posts.xml", "2024-05-31T00:00:00Z"),
    "/blog/third-post": ("/_/gzip/sitemaps/posts.xml", None),
    "/archive/2018/gallery": ("/sitemaps/archive.xml", "2018-12-31T23:59:59Z"),
    "/archive/relative": ("/sitemaps/archive.xml", None),
}

FIELDS = [
    "url",
    "lastmod",
    "lastmod_raw",
    "lastmod_precision",
    "lastmod_flags",
    "changefreq",
    "priority",
    "sitemap",
    "sitemap_lastmod",
    "segment",
    "depth",
    "found_via",
    "news",
    "images",
    "videos",
    "alternates",
    "mobile",
    "flags",
    "refetch",
    "refetch_reason",
    "status",
]


def expected(server: MockServer) -> dict[str, tuple[str, str | None]]:
    def absolute(path: str) -> str:
        return (
            path.replace("{alt}", server.alt_base)
            if path.startswith("{alt}")
            else server.base + path
        )

    return {server.base + url: (absolute(sm), lm) for url, (sm, lm) in EXPECTED.items()}


def test_jsonl_feed(site: Callable[[str], MockServer], tmp_path: Path) -> None:
    server = site("basic")
    out = tmp_path / "urls.jsonl"
    stderr, stats = scrapy_crawl("-a", f"origin={server.base}", out=out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    report = rows.pop()  # the site report closes the feed
    assert report["origin"] == server.base
    assert {s["segment"] for s in report["segments"]} == {
        "/", "/sitemaps/news.xml", "/_/gzip/sitemaps/posts.xml", "/sitemaps/archive.xml",
        "/cdn/extra.xml",
    }  # fmt: skip
    assert {r["url"]: (r["sitemap"], r["lastmod"]) for r in rows} == expected(server)
    assert all(list(r) == FIELDS for r in rows)
    gallery = next(r for r in rows if r["url"].endswith("/gallery"))
    assert gallery["images"][1] == {
        "loc": f"{server.base}/img/2.jpg",
        "caption": "Two",
        "title": None,
        "geo_location": None,
        "license": None,
    }
    assert stats["finish_reason"] == "'finished'"
    assert stats["item_scraped_count"] == "10"  # 9 URLs and the site report
    assert stats["sitemapcrawl/urls/found_count"] == "9"
    assert "log_count/ERROR" not in stats
    assert "Sitemap crawl finished (finished): 6 sitemaps read, 1 failed, 9 URLs found" in stderr


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_feeds(site: Callable[[str], MockServer], tmp_path: Path, fmt: str) -> None:
    server = site("basic")
    out = tmp_path / f"urls.{fmt}"
    scrapy_crawl("-a", f"origin={server.base}", out=out)
    if fmt == "json":
        rows = json.loads(out.read_text(encoding="utf-8"))
        assert "segments" in rows.pop()  # the site report closes the feed
        assert {r["url"]: (r["sitemap"], r["lastmod"]) for r in rows} == expected(server)
        return
    with out.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == FIELDS
        rows = list(reader)
    assert {r["url"]: (r["sitemap"], r["lastmod"] or None) for r in rows} == expected(server)
    gallery = next(r for r in rows if r["url"].endswith("/gallery"))
    # Nested data is JSON in its cell, lists of words are |-joined, booleans are words:
    # nothing is a Python repr.
    assert json.loads(gallery["images"])[0]["loc"] == f"{server.base}/img/1.jpg"
    assert json.loads(gallery["alternates"]) == [
        {"rel": "alternate", "hreflang": "de", "href": f"{server.base}/de/archive/2018/gallery"}
    ]
    assert gallery["news"] == ""
    assert gallery["mobile"] == "false"
    second = next(r for r in rows if "second-post" in r["url"])
    assert second["lastmod_flags"] == "date_only"
    third = next(r for r in rows if "third-post" in r["url"])
    assert third["lastmod_flags"] == "invalid"
    assert third["lastmod_raw"] == "2024-13-01"
    for row in rows:
        for value in row.values():
            assert not value.startswith(("[{'", "{'", "['", "True", "False", "None"))


def test_bad_argument_is_one_clear_line(site: Callable[[str], MockServer], tmp_path: Path) -> None:
    server = site("basic")
    stderr, stats = scrapy_crawl(
        "-a", f"origin={server.base}", "-a", "max_sitemaps=abc", out=tmp_path / "x.jsonl"
    )
    errors = [line for line in stderr.splitlines() if " ERROR: " in line]
    assert errors == [errors[0]]
    assert errors[0].endswith("Not crawling: argument max_sitemaps='abc' is not a whole number")
    assert stats["finish_reason"] == "'bad_argument'"
    assert server.requests() == []
