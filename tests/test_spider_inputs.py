"""Given sitemaps behind every wrapping and every fault the loopback server can produce."""

from __future__ import annotations

import urllib.request
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.utils.crawl import crawl, our_stats

if TYPE_CHECKING:
    from tests.mockserver import MockServer


def fetch(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return bytes(response.read())


@deferred_f_from_coro_f
async def test_given_sitemaps_decode_whatever_the_wrapping(mockserver: MockServer) -> None:
    b = mockserver.base
    given = [
        b + "/_/gzip2/sites/basic/sitemaps/posts.xml",  # gzipped twice, named .xml
        b + "/_/ce/gzip/sites/basic/sitemaps/news.xml",  # Content-Encoding: gzip
        b + "/_/ctype/text%2Fhtml/sites/basic/pages.txt",  # a text sitemap served as HTML
        b + "/_/ce/gzip/sites/basic/sitemaps/posts.xml.gz",  # missing: a 404, not a crash
    ]
    items, crawler = await crawl(sitemap_urls=",".join(given))
    assert sorted(i["url"] for i in items) == sorted(
        [
            f"{b}/blog/first-post",
            f"{b}/blog/second-post?a=1&b=2",
            f"{b}/blog/third-post",
            f"{b}/news/merger",
            f"{b}/",
            f"{b}/about",
        ]
    )
    assert {i["found_via"] for i in items} == {"given"}
    assert {i["sitemap"] for i in items} == set(given[:3])
    assert our_stats(crawler) == {
        "sitemapcrawl/sitemaps/requested_count": 4,
        "sitemapcrawl/sitemaps/done_count": 4,
        "sitemapcrawl/sitemaps/parsed_count": 3,
        "sitemapcrawl/sitemaps/parsed_count/urlset": 2,
        "sitemapcrawl/sitemaps/parsed_count/text": 1,
        "sitemapcrawl/sitemaps/gzip_count": 1,
        "sitemapcrawl/sitemaps/failed_count": 1,
        "sitemapcrawl/sitemaps/failed_count/http_404": 1,
        "sitemapcrawl/entries/lastmod_invalid_count": 1,
        "sitemapcrawl/urls/found_count": 6,
        "sitemapcrawl/lastmod/present_count": 2,
        "sitemapcrawl/lastmod/invalid_count": 1,
        "sitemapcrawl/lastmod/missing_count": 3,
        # each file's path groups are under SITEMAPCRAWL_SEGMENT_MIN_URLS: one segment, "/"
        "sitemapcrawl/verdict_count/INVALID": 1,
    }


@deferred_f_from_coro_f
async def test_broken_sitemaps_are_counted_and_keep_what_was_read(mockserver: MockServer) -> None:
    b = mockserver.base
    posts = fetch(b + "/sites/basic/sitemaps/posts.xml")
    cut = posts.index(b"second-post")  # inside the second <url>
    given = [
        f"{b}/_/truncate/{cut}/sites/basic/sitemaps/posts.xml",
        f"{b}/soft404.html",  # an HTML page where a sitemap should be
        f"{b}/_/status/500",
        f"{b}/_/reset/sites/basic/sitemaps/archive.xml",
        f"{b}/_/status/200/sites/basic/blog/first-post",  # HTML body, 200: a soft 404
    ]
    items, crawler = await crawl(sitemap_urls=",".join(given))
    assert [i["url"] for i in items] == [f"{b}/blog/first-post"]
    stats = our_stats(crawler)
    assert stats == {
        "sitemapcrawl/sitemaps/requested_count": 5,
        "sitemapcrawl/sitemaps/done_count": 5,
        # The truncated file and the half that arrived before the reset are both read.
        "sitemapcrawl/sitemaps/parsed_count": 2,
        "sitemapcrawl/sitemaps/parsed_count/urlset": 2,
        "sitemapcrawl/sitemaps/failed_count": 3,
        "sitemapcrawl/sitemaps/failed_count/html": 2,
        "sitemapcrawl/sitemaps/failed_count/http_500": 1,
        "sitemapcrawl/errors/html_count": 2,
        "sitemapcrawl/errors/dataloss_count": 1,
        "sitemapcrawl/errors/xml_syntax_error_count": 2,
        "sitemapcrawl/entries/entry_truncated_count": 2,
        "sitemapcrawl/urls/found_count": 1,
        "sitemapcrawl/lastmod/present_count": 1,
        "sitemapcrawl/verdict_count/UNVERIFIABLE": 1,
    }
    all_stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert all_stats["finish_reason"] == "finished"
    # Scrapy's retry middleware gives up on the 500 with a WARNING (a sitemap that fails is
    # a fault we count, not an error of the crawl); ours logs each fault once: the two
    # truncations, two HTML pages, the 500, the lost connection.
    assert "log_count/ERROR" not in all_stats
    assert all_stats["log_count/WARNING"] == 7
    # The 500 was retried once (RETRY_TIMES=1 in tests), then given up.
    assert mockserver.requests().count("/_/status/500") == 2


@deferred_f_from_coro_f
async def test_protocol_limit_kept_and_flagged(mockserver: MockServer) -> None:
    url = f"{mockserver.base}/_/gen/urlset?n=50003&prefix=/p/"
    items, crawler = await crawl(sitemap_urls=url)
    assert len(items) == 50003
    assert [i["url"] for i in items[-4:]] == [
        f"{mockserver.base}/p/{n}" for n in range(49999, 50003)
    ]
    assert [i["flags"] for i in items[-4:]] == [
        [],
        ["beyond_protocol_limit"],
        ["beyond_protocol_limit"],
        ["beyond_protocol_limit"],
    ]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/errors/too_many_urls_count"] == 1
    assert stats["sitemapcrawl/entries/over_url_limit_count"] == 3

    items, crawler = await crawl(
        settings={"SITEMAPCRAWL_KEEP_EXCESS_URLS": False}, sitemap_urls=url
    )
    assert len(items) == 50000


@deferred_f_from_coro_f
async def test_network_failures_are_counted_and_the_crawl_goes_on(mockserver: MockServer) -> None:
    b = mockserver.base
    given = [
        f"{b}/_/hang",  # never answers: its deadline (DOWNLOAD_TIMEOUT, shorter here)
        f"{b}/_/loop/0",  # a redirect loop: Scrapy's REDIRECT_MAX_TIMES
        f"{b}/sites/guess/sitemap.xml",
        "http://127.0.0.1:9/refused.xml",  # nothing listens on the discard port
    ]
    items, crawler = await crawl(
        settings={"DOWNLOAD_TIMEOUT": 1, "RETRY_TIMES": 0, "REDIRECT_MAX_TIMES": 3},
        sitemap_urls=",".join(given),
    )
    assert sorted(i["url"] for i in items) == [f"{b}/shop/item-1", f"{b}/shop/item-2"]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/sitemaps/failed_count"] == 3
    assert stats["sitemapcrawl/sitemaps/failed_count/timeout"] == 1
    assert stats["sitemapcrawl/sitemaps/failed_count/IgnoreRequest"] == 1
    assert stats["sitemapcrawl/sitemaps/failed_count/DownloadConnectionRefusedError"] == 1
    assert crawler.stats.get_value("finish_reason") == "finished"  # type: ignore[union-attr]


@deferred_f_from_coro_f
async def test_robots_5xx_is_retried_then_the_site_is_off_limits(mockserver: MockServer) -> None:
    b = mockserver.base
    # /_/flaky/1/503/...: 503 once, then the basic site's robots.txt.
    items, crawler = await crawl(
        settings={"RETRY_TIMES": 1}, sitemap_urls=f"{b}/_/flaky/1/503/sites/basic/robots.txt"
    )
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/robots/status_count/200"] == 1
    assert stats["sitemapcrawl/robots/sitemaps_count"] == 2
    # the two sitemaps it declares are at the server's root, where nothing is: both fail,
    # so the usual locations are guessed (once, after the last declared one failed)
    assert stats["sitemapcrawl/guess/fallback_count"] == 1

    items, crawler = await crawl(
        settings={"RETRY_TIMES": 1}, sitemap_urls=f"{b}/_/status/503/sites/basic/robots.txt"
    )
    assert items == []
    # RFC 9309: a robots.txt that answers 5xx after retries disallows the whole site, its
    # sitemaps included: nothing is guessed, nothing else is requested.
    assert our_stats(crawler) == {
        "sitemapcrawl/robots/requested_count": 1,
        "sitemapcrawl/robots/status_count/503": 1,
        "sitemapcrawl/robots/sitemaps_count": 0,
        "sitemapcrawl/robots/unreachable_count": 1,
    }
    assert mockserver.requests()[-2:] == ["/_/status/503/sites/basic/robots.txt"] * 2


@deferred_f_from_coro_f
async def test_progress_is_logged_while_crawling(mockserver: MockServer, caplog: Any) -> None:
    caplog.set_level("INFO", logger="sitemapcrawl.extensions.progress")
    items, _ = await crawl(
        settings={"SITEMAPCRAWL_PROGRESS_INTERVAL": 0.1},
        sitemap_urls=f"{mockserver.base}/_/slow/1/sites/guess/sitemap.xml",
    )
    assert len(items) == 2
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Progress:")]
    assert progress
    assert progress[0].startswith("Progress: 0 sitemaps done, 1 queued, 0 failed; 0 URLs found")
    summary = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Sitemap crawl")]
    assert summary == ["Sitemap crawl finished (finished): 1 sitemaps read, 0 failed, 2 URLs found"]
