"""Discovery that wastes nothing and explains itself, on real loopback sites the tests write.

Guessed locations are read once even when two hold the same file; robots.txt is fetched
once per run, also when pages are sampled; a crawl that finds little or nothing says why
at WARNING, in the stats and in the site report, naming what to change.
"""

from __future__ import annotations

import gzip
import logging
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.sitemaps.segments import HELD_MAX
from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SERIAL = {"CONCURRENT_REQUESTS": 1}
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*locs: str) -> str:
    return (
        f'<urlset xmlns="{NS}">' + "".join(f"<url><loc>{u}</loc></url>" for u in locs) + "</urlset>"
    )


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


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "sitemapcrawl.spiders.sitemap"
    ]


def faults(report: dict[str, Any] | None) -> list[tuple[str, str]]:
    assert report is not None
    return [(f["code"], f["message"]) for f in report["faults"]]


# -- guessing without waste ----------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_redirect_to_a_guessed_location_fetches_no_path_twice(tmp_path: Path) -> None:
    """/sitemap.xml redirects to /sitemap_index.xml (Yoast, Rank Math), both guessed in the
    first wave: the index is fetched once, the redirect is listed as a duplicate of it,
    and the crawl costs robots.txt, the sitemap files and one other request."""
    write(tmp_path, "_redirects", "/sitemap.xml /sitemap_index.xml 301\n")
    write(tmp_path, "sitemap_index.xml", index("{base}/post-sitemap.xml"))
    write(tmp_path, "post-sitemap.xml", urlset("{base}/p/1", "{base}/p/2"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings=SERIAL, origin=server.base, sample="off", links="off"
        )
        requests = server.requests()
    b = server.base
    assert sorted(i["url"] for i in items) == [f"{b}/p/1", f"{b}/p/2"]
    assert sorted(requests) == sorted(
        ["/robots.txt", "/sitemap.xml", "/sitemap_index.xml", "/post-sitemap.xml"]
    )
    assert report is not None
    files = {f["url"]: f for f in report["sitemaps"]["files"]}
    assert files[f"{b}/sitemap.xml"] == {
        "url": f"{b}/sitemap.xml",
        "found_via": "guessed",
        "duplicate_of": f"{b}/sitemap_index.xml",
    }
    assert files[f"{b}/sitemap_index.xml"]["kind"] == "sitemapindex"
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/sitemaps/duplicate_file_count"] == 1
    assert stats["sitemapcrawl/guess/requested_count"] == 2
    assert stats["sitemapcrawl/guess/found_count"] == 1
    assert "sitemapcrawl/sitemaps/loop_count" not in stats
    assert faults(report) == []


@deferred_f_from_coro_f
async def test_two_guessed_locations_with_the_same_content_are_read_once(tmp_path: Path) -> None:
    """/sitemap.xml and /sitemap.xml.gz hold the same urlset (MkDocs writes both): with
    guess=always both are fetched, the second is recognised by its content's digest and
    listed as a duplicate, not parsed again."""
    body = urlset("{base}/a", "{base}/b")
    write(tmp_path, "sitemap.xml", body)
    with MockServer(root=tmp_path) as server:
        write(
            tmp_path, "sitemap.xml.gz", gzip.compress(body.replace("{base}", server.base).encode())
        )
        items, report, crawler = await crawl_with_report(
            settings={**SERIAL, "SITEMAPCRAWL_CONCURRENT_SITEMAPS": 1},
            origin=server.base,
            guess="always",
        )
    b = server.base
    assert sorted(i["url"] for i in items) == [f"{b}/a", f"{b}/b"]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/sitemaps/parsed_count"] == 1
    assert stats["sitemapcrawl/sitemaps/duplicate_file_count"] == 1
    assert "sitemapcrawl/urls/duplicate_count" not in stats  # not parsed: nothing repeated
    assert report is not None
    files = {f["url"]: f for f in report["sitemaps"]["files"]}
    assert files[f"{b}/sitemap.xml.gz"]["duplicate_of"] == f"{b}/sitemap.xml"
    assert "duplicate_of" not in files[f"{b}/sitemap.xml"]


# -- robots.txt once -----------------------------------------------------------------------


def sampled_site(root: Path, robots: str | None) -> None:
    pages = [f"/post/{i}" for i in range(4)]
    for path in pages:
        write(root, path, "<html><head><title>x</title></head><body><p>text</p></body></html>")
    write(root, "sitemap.xml", urlset(*(f"{{base}}{p}" for p in pages)))
    if robots is not None:
        write(root, "robots.txt", robots)


@deferred_f_from_coro_f
async def test_robots_txt_is_fetched_once_when_pages_are_sampled(tmp_path: Path) -> None:
    sampled_site(tmp_path, "User-agent: *\nDisallow: /post/3\nSitemap: {base}/sitemap.xml\n")
    with MockServer(root=tmp_path) as server:
        _items, _report, crawler = await crawl_with_report(
            settings=SERIAL, origin=server.base, sample="on", links="off"
        )
        requests = server.requests()
    assert requests.count("/robots.txt") == 1
    assert "/post/3" not in requests  # its rules were applied to the pages all the same
    assert sorted(r for r in requests if r.startswith("/post/")) == [
        "/post/0",
        "/post/1",
        "/post/2",
    ]
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert "robotstxt/request_count" not in stats  # the middleware never asked for it
    assert stats["robotstxt/response_count"] == 1
    assert stats["robotstxt/forbidden"] == 1


@deferred_f_from_coro_f
async def test_a_missing_robots_txt_is_fetched_once_when_pages_are_sampled(
    tmp_path: Path,
) -> None:
    """robots.txt answers 404 ("no rules", RFC 9309): the pages are fetched without asking
    for it again."""
    sampled_site(tmp_path, None)
    with MockServer(root=tmp_path) as server:
        _items, _report, crawler = await crawl_with_report(
            settings=SERIAL, origin=server.base, sample="on", links="off"
        )
        requests = server.requests()
    assert requests.count("/robots.txt") == 1
    assert sorted(r for r in requests if r.startswith("/post/")) == [f"/post/{i}" for i in range(4)]
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert "robotstxt/request_count" not in stats
    assert stats["robotstxt/response_status_count/404"] == 1
    assert "robotstxt/forbidden" not in stats


# -- a result of zero explains itself --------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_sitemap_of_another_host_is_explained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A documentation site whose generator was set to the main domain: every URL of its
    sitemap is on another host, and scope=host drops them all. The crawl says so, naming
    the host and the argument that keeps them."""
    docs = [f"https://www.main-site.example/docs/{i}" for i in range(3)]
    write(tmp_path, "robots.txt", "Sitemap: {base}/sitemap.xml\n")
    write(tmp_path, "sitemap.xml", urlset(*docs))
    caplog.set_level(logging.INFO)
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
    assert items == []
    message = (
        "3 of the 3 URLs the sitemaps list were dropped by scope=host on other hosts: "
        "www.main-site.example (3); -a scope=off keeps them"
    )
    assert warnings_of(caplog) == [f"{server.base}: {message}"]
    assert faults(report) == [("scope_dropped", message)]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/scope/dropped_count/other_host"] == 3
    assert stats["sitemapcrawl/urls/found_count"] == 0
    assert crawler.stats.get_value("log_count/WARNING") == 1  # type: ignore[union-attr]

    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings=SERIAL, origin=server.base, scope="off"
        )
    assert sorted(i["url"] for i in items) == docs


@deferred_f_from_coro_f
async def test_a_sitemap_that_is_an_html_page_is_explained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "robots.txt", "Sitemap: {base}/sitemap.xml\n")
    write(tmp_path, "sitemap.xml", "<!DOCTYPE html><html><body>Log in</body></html>")
    with MockServer(root=tmp_path) as server:
        items, report, _crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
    assert items == []
    found = faults(report)
    assert [code for code, _ in found] == ["html", "nothing_found"]
    assert found[1][1] == (
        "no URL found: every sitemap failed (1), 1 of them an HTML page where a sitemap was "
        "expected (a soft 404, a login page): see the faults"
    )
    assert len(warnings_of(caplog)) == 2


@deferred_f_from_coro_f
async def test_every_sitemap_failing_is_explained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "robots.txt", "Sitemap: {base}/gone.xml\nSitemap: {base}/also-gone.xml\n")
    with MockServer(root=tmp_path) as server:
        items, report, _crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
    assert items == []
    assert [code for code, _ in faults(report)] == ["http_404", "http_404", "nothing_found"]
    assert faults(report)[2][1] == "no URL found: every sitemap failed (2): see the faults"


@deferred_f_from_coro_f
async def test_a_site_without_a_sitemap_is_explained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "index.html", "<html><body>home</body></html>")
    with MockServer(root=tmp_path) as server:
        items, report, _crawler = await crawl_with_report(settings=SERIAL, origin=server.base)
        requests = server.requests()
    assert items == []
    assert faults(report) == [
        (
            "nothing_found",
            "no URL found: no sitemap: robots.txt declares none and no usual location is "
            "one; give its URL with -a sitemap_urls=URL, or crawl by links with "
            "-a links=fallback",
        )
    ]
    assert len(requests) == 1 + 9  # robots.txt, then every usual location once, in waves
    assert len(set(requests)) == len(requests)


@deferred_f_from_coro_f
async def test_when_every_declared_sitemap_fails_the_usual_locations_are_guessed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """robots.txt declares a sitemap that does not answer (a base URL missing its slash,
    a host nothing listens on) and one that is gone: the site still has its /sitemap.xml,
    found by guessing as if robots.txt had declared none."""
    write(
        tmp_path,
        "robots.txt",
        "Sitemap: http://127.0.0.1:9/sitemap.xml\nSitemap: {base}/gone.xml\n",
    )
    write(tmp_path, "sitemap.xml", urlset("{base}/a"))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings={**SERIAL, "RETRY_TIMES": 0}, origin=server.base
        )
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/a"]
    assert requests == ["/robots.txt", "/gone.xml", "/sitemap.xml", "/sitemap_index.xml"]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/guess/fallback_count"] == 1
    assert stats["sitemapcrawl/guess/found_count"] == 1
    assert [code for code, _ in faults(report)] == ["DownloadConnectionRefusedError", "http_404"]
    assert items[0]["found_via"] == "guessed"


@deferred_f_from_coro_f
async def test_a_wordpress_style_flat_sitemap_makes_a_handful_of_segments(
    tmp_path: Path,
) -> None:
    """150 URLs in one flat file, posts as root-level slugs (``/%postname%/``), date
    archives, categories, tags: a handful of segments a person recognises, none of them a
    single post."""
    locs = [f"{{base}}/post-number-{i}/" for i in range(100)]
    locs += [f"{{base}}/{2015 + i % 8}/0{1 + i % 9}/" for i in range(20)]
    locs += [f"{{base}}/category/topic-{i}/" for i in range(15)]
    locs += [f"{{base}}/tag/word-{i}/" for i in range(14)]
    # groups under SITEMAPCRAWL_SEGMENT_MIN_URLS (5) join the root group: 4 author pages,
    # an about page below its own folder, the site's root
    locs += [f"{{base}}/author/{name}/" for name in ("ann", "bob", "cy", "di")]
    locs += ["{base}/about/team/", "{base}/"]
    write(tmp_path, "robots.txt", "Sitemap: {base}/sitemap.xml\n")
    write(tmp_path, "sitemap.xml", urlset(*dict.fromkeys(locs)))
    with MockServer(root=tmp_path) as server:
        items, report, _ = await crawl_with_report(settings=SERIAL, origin=server.base)
        base = server.base
    assert report is not None
    by_segment = {s["segment"]: s["urls"] for s in report["segments"]}
    assert by_segment == {"/": 106, "/{year}/": 20, "/category/": 15, "/tag/": 14}
    assert len(items) == 155
    segment_of = {i["url"]: i["segment"] for i in items}
    assert segment_of[f"{base}/author/ann/"] == segment_of[f"{base}/about/team/"] == "/"
    assert segment_of[f"{base}/tag/word-0/"] == "/tag/"  # held back, then its group's
    assert segment_of[f"{base}/2015/01/"] == "/{year}/"


@deferred_f_from_coro_f
async def test_a_flat_sitemap_of_unique_paths_holds_back_a_bounded_number_of_urls(
    tmp_path: Path,
) -> None:
    """Every URL its own path group (``/p123/page``): at most ``HELD_MAX`` items wait for
    their group to grow; past that the waiting ones and every later URL of a group not
    grown yet go to the root group at once. A group grown before (``/tag/``) stays one."""
    locs = [f"{{base}}/tag/t{i}/" for i in range(5)]
    locs += [f"{{base}}/p{i}/page" for i in range(HELD_MAX + 10)]
    locs += [f"{{base}}/tag/late-{i}/" for i in range(3)]
    locs += [f"{{base}}/blog/b{i}" for i in range(6)]  # would have grown: too late
    write(tmp_path, "sitemap.xml", urlset(*locs))
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings=SERIAL, sitemap_urls=f"{server.base}/sitemap.xml"
        )
    assert report is not None
    assert {s["segment"]: s["urls"] for s in report["segments"]} == {
        "/tag/": 8,
        "/": HELD_MAX + 16,
    }
    assert len({i["url"] for i in items}) == len(items) == len(locs)
    assert our_stats(crawler)["sitemapcrawl/urls/found_count"] == len(locs)
