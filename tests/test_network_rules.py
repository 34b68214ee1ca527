"""Hostile servers, round two: robots.txt failure rules, Retry-After and deadlines, redirect
and index budgets, scope for sitemap files, host spellings, and pages read up to their cap.

Each case is a real crawl of a loopback site the test writes, with the exact request log,
items and ``sitemapcrawl/`` stats asserted, and each fault named once in the log and in the
site report.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SERIAL = {"CONCURRENT_REQUESTS": 1, "RETRY_TIMES": 2}
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*locs: str) -> str:
    urls = "".join(f"<url><loc>{u}</loc></url>" for u in locs)
    return f'<urlset xmlns="{NS}">{urls}</urlset>'


def index(*locs: str) -> str:
    children = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in locs)
    return f'<sitemapindex xmlns="{NS}">{children}</sitemapindex>'


def write(root: Path, path: str, text: str | bytes) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        target.write_text(text, encoding="utf-8")
    else:
        target.write_bytes(text)


def faults(report: dict[str, Any] | None) -> list[tuple[str, str]]:
    assert report is not None
    return [(f["code"], f["url"]) for f in report["faults"]]


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("sitemapcrawl")
    ]


# -- robots.txt ------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_robots_txt_that_never_answers_makes_the_site_off_limits(
    tmp_path: Path,
) -> None:
    """robots.txt accepts the connection and never answers: its deadline ends it once (no
    retry after the deadline), and as an unreachable robots.txt the site is off limits:
    no guess, no sitemap, no page."""
    write(tmp_path, "sitemap.xml", urlset("{base}/a"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings={**SERIAL, "SITEMAPCRAWL_SITEMAP_DEADLINE": 1.5},
            sitemap_urls=f"{server.base}/_/hang/30/robots.txt",
        )
        requests = server.requests()
    assert items == []
    assert requests == ["/_/hang/30/robots.txt"]
    assert our_stats(crawler) == {
        "sitemapcrawl/robots/requested_count": 1,
        "sitemapcrawl/robots/failed_count/DownloadTimeoutError": 1,
        "sitemapcrawl/robots/unreachable_count": 1,
    }
    assert faults(report) == [("robots_unreachable", f"{server.base}/_/hang/30/robots.txt")]


@deferred_f_from_coro_f
async def test_a_huge_robots_txt_is_read_no_further_than_its_cap(tmp_path: Path) -> None:
    """A 3 MB robots.txt: the first 500 KiB are read, the Sitemap lines in them kept, the
    one after them never seen; the download is stopped, not buffered."""
    filler = "Disallow: /nothing-to-see-here\n" * 40_000  # about 1.2 MB
    write(
        tmp_path,
        "robots.txt",
        "Sitemap: {base}/first.xml\n" + filler + "Sitemap: {base}/late.xml\n" + filler,
    )
    write(tmp_path, "first.xml", urlset("{base}/a"))
    write(tmp_path, "late.xml", urlset("{base}/b"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/a"]
    assert requests == ["/robots.txt", "/first.xml"]
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["downloader/response_bytes"] < 600 * 1024
    assert our_stats(crawler)["sitemapcrawl/robots/truncated_count"] == 1
    assert ("robots_large", f"{server.base}/robots.txt") in faults(report)


# -- time: Retry-After and deadlines ---------------------------------------------------------


@deferred_f_from_coro_f
async def test_retry_after_is_honoured_never_sooner(tmp_path: Path) -> None:
    write(tmp_path, "s.xml", urlset("{base}/a"))
    with MockServer(root=tmp_path) as server:
        url = f"{server.base}/_/flaky/1/503/s.xml?retry_after=1"
        items, report, _crawler = await crawl_with_report(settings=SERIAL, sitemap_urls=url)
        log = server.request_log()
    assert [i["url"] for i in items] == [f"{server.base}/a"]
    assert [e["path"] for e in log] == ["/_/flaky/1/503/s.xml?retry_after=1"] * 2
    assert log[1]["time"] - log[0]["time"] >= 1.0  # the server's own log: not sooner
    assert faults(report) == []


@deferred_f_from_coro_f
async def test_a_retry_after_over_the_cap_gives_up_at_once(tmp_path: Path) -> None:
    write(tmp_path, "s.xml", urlset("{base}/a"))
    write(tmp_path, "ok.xml", urlset("{base}/b"))
    with MockServer(root=tmp_path) as server:
        slow = f"{server.base}/_/status/503/s.xml?retry_after=3600"
        items, report, crawler = await crawl_with_report(
            settings=SERIAL, sitemap_urls=f"{slow},{server.base}/ok.xml"
        )
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/b"]
    assert sorted(requests) == sorted(["/_/status/503/s.xml?retry_after=3600", "/ok.xml"])
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/sitemaps/failed_count/retry_after"] == 1
    assert ("retry_after", slow) in faults(report)


@deferred_f_from_coro_f
async def test_a_sitemap_that_never_answers_costs_its_deadline_once(tmp_path: Path) -> None:
    write(tmp_path, "ok.xml", urlset("{base}/b"))
    with MockServer(root=tmp_path) as server:
        hang = f"{server.base}/_/hang/30"
        items, report, crawler = await crawl_with_report(
            settings={**SERIAL, "SITEMAPCRAWL_SITEMAP_DEADLINE": 1.5},
            sitemap_urls=f"{hang},{server.base}/ok.xml",
        )
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/b"]  # what the others gave is kept
    assert sorted(requests) == ["/_/hang/30", "/ok.xml"]  # no retry past the deadline
    assert our_stats(crawler)["sitemapcrawl/sitemaps/failed_count/timeout"] == 1
    assert ("timeout", hang) in faults(report)


# -- budgets ---------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_redirect_loop_is_named_and_cut_before_a_path_is_fetched_twice(
    tmp_path: Path,
) -> None:
    write(tmp_path, "_redirects", "/a.xml /b.xml 301\n/b.xml /a.xml 301\n")
    write(tmp_path, "ok.xml", urlset("{base}/ok"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings=SERIAL, sitemap_urls=f"{server.base}/a.xml,{server.base}/ok.xml"
        )
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/ok"]
    assert sorted(requests) == ["/a.xml", "/b.xml", "/ok.xml"]
    assert our_stats(crawler)["sitemapcrawl/sitemaps/redirect_loop_count"] == 1
    assert ("redirect_loop", f"{server.base}/a.xml") in faults(report)


@deferred_f_from_coro_f
async def test_a_redirect_chain_stops_at_ten(tmp_path: Path) -> None:
    with MockServer(root=tmp_path) as server:
        chain = f"{server.base}/_/loop/0"  # 302 to /_/loop/1, /_/loop/2…
        items, report, crawler = await crawl_with_report(settings=SERIAL, sitemap_urls=chain)
        requests = server.requests()
    assert items == []
    assert requests == [f"/_/loop/{n}" for n in range(11)]
    assert our_stats(crawler)["sitemapcrawl/sitemaps/failed_count/too_many_redirects"] == 1
    assert [code for code, _ in faults(report)] == ["too_many_redirects", "nothing_found"]


@deferred_f_from_coro_f
async def test_a_redirect_to_another_host_follows_the_scope_policy(tmp_path: Path) -> None:
    write(tmp_path, "_redirects", "/s.xml /moved.xml 301\n")  # (same host: followed)
    write(tmp_path, "moved.xml", urlset("{base}/a"))
    with MockServer(root=tmp_path) as server:
        away = f"{server.base}/_/redirect/301?to={server.alt_base}/moved.xml"
        items, report, crawler = await crawl_with_report(
            settings=SERIAL, sitemap_urls=f"{away},{server.base}/s.xml"
        )
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/a"]
    assert sorted(requests) == sorted([away.removeprefix(server.base), "/s.xml", "/moved.xml"])
    assert our_stats(crawler)["sitemapcrawl/sitemaps/out_of_scope_count"] == 1
    assert ("redirect_other_host", away) in faults(report)


@deferred_f_from_coro_f
async def test_an_index_child_on_another_host_follows_the_scope_policy(tmp_path: Path) -> None:
    write(tmp_path, "robots.txt", "Sitemap: {base}/index.xml\n")
    write(tmp_path, "index.xml", index("{base}/mine.xml", "{alt}/theirs.xml"))
    write(tmp_path, "mine.xml", urlset("{base}/a"))
    write(tmp_path, "theirs.xml", urlset("{base}/b"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
        requests = server.requests()
        kept, _, _ = await crawl_with_report(settings=SERIAL, origin=server.base, scope="off")
    assert [i["url"] for i in items] == [f"{server.base}/a"]
    assert "/theirs.xml" not in requests
    assert our_stats(crawler)["sitemapcrawl/sitemaps/out_of_scope_count"] == 1
    assert ("child_other_host", f"{server.base}/index.xml") in faults(report)
    assert sorted(i["url"] for i in kept) == [f"{server.base}/a", f"{server.base}/b"]


@deferred_f_from_coro_f
async def test_an_index_of_fifty_thousand_children_is_read_within_max_sitemaps(
    tmp_path: Path,
) -> None:
    """An index that lists 50,000 children: they wait in the frontier as tasks, not
    requests, and ``max_sitemaps`` (1,000 by default) stops the crawl's sitemap requests,
    named once."""
    with MockServer(root=tmp_path) as server:
        huge = f"{server.base}/_/gen/index?n=50000&child=/_/gen/urlset%3Fn%3D1"
        _items, report, crawler = await crawl_with_report(
            settings={"CONCURRENT_REQUESTS": 8}, sitemap_urls=huge
        )
        requests = server.requests()
    assert len(requests) == 1000
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/sitemaps/requested_count"] == 1000
    assert stats["sitemapcrawl/limits/max_sitemaps_count"] == 50_000 - 999
    assert [code for code, _ in faults(report)].count("max_sitemaps") == 1


@deferred_f_from_coro_f
async def test_two_spellings_of_one_host_are_one_url(tmp_path: Path) -> None:
    with MockServer(root=tmp_path) as server:
        port = server.port
        write(
            tmp_path,
            "s.xml",
            urlset(
                f"http://127.0.0.1:{port}/a",
                f"http://127.0.0.1.:{port}/a",
                f"http://127.0.0.1.:{port}/b",
            ),
        )
        items, _report, crawler = await crawl_with_report(
            settings=SERIAL, sitemap_urls=f"{server.base}/s.xml"
        )
    assert [i["url"] for i in items] == [  # emitted as the URL Standard writes the host
        f"http://127.0.0.1:{port}/a",
        f"http://127.0.0.1:{port}/b",
    ]
    assert our_stats(crawler)["sitemapcrawl/urls/duplicate_count"] == 1


@deferred_f_from_coro_f
async def test_an_html_error_body_that_never_ends_is_read_no_further_than_a_mebibyte(
    tmp_path: Path,
) -> None:
    write(tmp_path, "ok.xml", urlset("{base}/a"))
    with MockServer(root=tmp_path) as server:
        endless = f"{server.base}/_/endless?html=1&status=404"
        items, report, crawler = await crawl_with_report(
            settings={**SERIAL, "RETRY_TIMES": 0},
            sitemap_urls=f"{endless},{server.base}/ok.xml",
        )
    assert [i["url"] for i in items] == [f"{server.base}/a"]
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["downloader/response_bytes"] < 2 * 1024 * 1024
    assert ("http_404", endless) in faults(report)


# -- pages -----------------------------------------------------------------------------------


def article(modified: str, script_type: str = "application/ld+json", pad: int = 0) -> str:
    data = json.dumps(
        {"@context": "https://schema.org", "@type": "Article", "dateModified": modified}
    )
    return (
        f'<html><head><script type="{script_type}">{data}</script></head>'
        f"<body><article><p>text</p>{'x' * pad}</article></body></html>"
    )


@deferred_f_from_coro_f
async def test_pages_are_read_up_to_their_cap_with_any_json_ld_type_spelling(
    tmp_path: Path,
) -> None:
    """A JSON-LD block typed ``application/ld+json; charset=utf-8`` (or in upper case) is
    read; a page over the page cap is read up to the cap (its head holds the dates), not
    refused whole."""
    lastmod = "2024-05-06T07:08:09Z"
    pages = {
        "param": article(lastmod, "application/ld+json; charset=utf-8"),
        "upper": article(lastmod, " APPLICATION/LD+JSON "),
        "big": article(lastmod, pad=3 * 1024 * 1024),
    }
    for name, html in pages.items():
        write(tmp_path, f"p/{name}", html)
    write(
        tmp_path,
        "s.xml",
        f'<urlset xmlns="{NS}">'
        + "".join(
            f"<url><loc>{{base}}/p/{n}</loc><lastmod>{lastmod}</lastmod></url>" for n in pages
        )
        + "</urlset>",
    )
    with MockServer(root=tmp_path) as server:
        _items, report, _crawler = await crawl_with_report(
            settings={**SERIAL, "SITEMAPCRAWL_PAGE_MAX_SIZE": 1024 * 1024},
            sitemap_urls=f"{server.base}/s.xml",
            sample="on",
        )
    assert report is not None
    samples = {s["url"].rsplit("/", 1)[1]: s for seg in report["segments"] for s in seg["samples"]}
    assert {name: s["outcome"] for name, s in samples.items()} == {
        "param": "AGREE",
        "upper": "AGREE",
        "big": "AGREE",
    }
    assert samples["param"]["page_modified"]["source"] == "json-ld"
    assert samples["big"]["page_modified"]["source"] == "json-ld"


@deferred_f_from_coro_f
async def test_sitemap_lines_that_are_not_urls_are_skipped_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Sitemap line with bytes that are not UTF-8, one with white space inside, one of
    another scheme: none is requested (never as ``%EF%BF%BD``), all three are counted, and
    one fault says so with the first of them."""
    write(
        tmp_path,
        "robots.txt",
        b"User-agent: *\nSitemap: {base}/bad\xff.xml\nSitemap: not a url\n"
        b"Sitemap: ftp://files.example/s.xml\nSitemap: {base}/sitemap.xml\n",
    )
    write(tmp_path, "sitemap.xml", urlset("{base}/a"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
        requests = server.requests()
        base = server.base
    assert [i["url"] for i in items] == [f"{base}/a"]
    assert requests == ["/robots.txt", "/sitemap.xml"]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/robots/invalid_sitemaps_count"] == 3
    assert stats["sitemapcrawl/robots/sitemaps_count"] == 1
    message = (
        "3 Sitemap line(s) skipped: not an http(s) URL a request can be made for "
        f"(first: '{base}/bad\ufffd.xml')"
    )
    assert faults(report) == [("robots_invalid_sitemap", f"{base}/robots.txt")]
    assert report is not None
    assert report["faults"][0]["message"] == message
    assert logged(caplog) == [f"{base}/robots.txt: {message}"]
