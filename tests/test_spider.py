"""The sitemap spider against real loopback sites: exact items, exact stats, exact requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.spiders.sitemap import SitemapCrawlSpider
from tests.mockserver import MockServer
from tests.utils.crawl import crawl, crawl_with_report, crawl_with_reports, our_stats

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path


SERIAL = {"CONCURRENT_REQUESTS": 1}  # one request at a time: a deterministic order


def item(url: str, **fields: Any) -> dict[str, Any]:
    """An expected item: the item's defaults, then ``fields``."""
    return {
        "url": url,
        "lastmod": None,
        "lastmod_raw": None,
        "lastmod_precision": None,
        "lastmod_flags": [],
        "changefreq": None,
        "priority": None,
        "sitemap": "",
        "sitemap_lastmod": None,
        "segment": "",
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
        "status": None,
    } | fields


def by_url(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda i: i["url"])


@deferred_f_from_coro_f
async def test_basic_site(site: Callable[[str], MockServer]) -> None:
    server = site("basic")
    b = server.base
    items, crawler = await crawl(settings=SERIAL, origin=b)

    posts = f"{b}/_/gzip/sitemaps/posts.xml"
    archive = f"{b}/sitemaps/archive.xml"
    posts_fields = {
        "sitemap": posts,
        "sitemap_lastmod": "2024-06-01T08:00:00Z",
        "segment": "/_/gzip/sitemaps/posts.xml",
        "depth": 1,
    }
    archive_fields = {
        "sitemap": archive,
        "sitemap_lastmod": "2019-01-01T00:00:00Z",
        "segment": "/sitemaps/archive.xml",
        "depth": 1,
    }
    assert by_url(items) == by_url(
        [
            item(f"{b}/", sitemap=f"{b}/pages.txt", segment="/"),
            item(f"{b}/about", sitemap=f"{b}/pages.txt", segment="/"),
            item(
                f"{b}/extra/from-cdn",
                sitemap=f"{b}/cdn/extra.xml",
                segment="/cdn/extra.xml",
                depth=1,
            ),
            item(
                f"{b}/news/merger",
                sitemap=f"{b}/sitemaps/news.xml",
                sitemap_lastmod="2024-06-02T00:00:00Z",
                segment="/sitemaps/news.xml",
                depth=1,
                news=[
                    {
                        "publication_name": "The Basic Times",
                        "publication_language": "en",
                        "publication_date_raw": "2024-06-02T08:30:00Z",
                        "publication_date_utc": "2024-06-02T08:30:00Z",
                        "title": "Companies A, B in merger talks",
                        "keywords": ["business", "merger"],
                        "genres": [],
                        "stock_tickers": [],
                        "access": None,
                    }
                ],
            ),
            item(
                f"{b}/blog/first-post",
                lastmod="2024-05-30T10:00:00Z",
                lastmod_raw="2024-05-30T12:00:00+02:00",
                lastmod_precision="second",
                changefreq="weekly",
                priority=0.8,
                **posts_fields,
            ),
            item(
                f"{b}/blog/second-post?a=1&b=2",
                lastmod="2024-05-31T00:00:00Z",
                lastmod_raw="2024-05-31",
                lastmod_precision="day",
                lastmod_flags=["date_only"],
                **posts_fields,
            ),
            item(
                f"{b}/blog/third-post",
                lastmod_raw="2024-13-01",
                lastmod_flags=["invalid"],
                **posts_fields,
            ),
            item(
                f"{b}/archive/2018/gallery",
                lastmod="2018-12-31T23:59:59Z",
                lastmod_raw="2018-12-31T23:59:59Z",
                lastmod_precision="second",
                images=[
                    {
                        "loc": f"{b}/img/1.jpg",
                        "caption": None,
                        "title": None,
                        "geo_location": None,
                        "license": None,
                    },
                    {
                        "loc": f"{b}/img/2.jpg",
                        "caption": "Two",
                        "title": None,
                        "geo_location": None,
                        "license": None,
                    },
                ],
                alternates=[
                    {"rel": "alternate", "hreflang": "de", "href": f"{b}/de/archive/2018/gallery"}
                ],
                **archive_fields,
            ),
            item(f"{b}/archive/relative", flags=["relative_loc"], **archive_fields),
        ]
    )
    assert our_stats(crawler) == {
        "sitemapcrawl/robots/requested_count": 1,
        "sitemapcrawl/robots/status_count/200": 1,
        "sitemapcrawl/robots/sitemaps_count": 2,
        "sitemapcrawl/sitemaps/requested_count": 7,
        "sitemapcrawl/sitemaps/done_count": 7,
        "sitemapcrawl/sitemaps/parsed_count": 6,
        "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 1,
        "sitemapcrawl/sitemaps/parsed_count/text": 1,
        "sitemapcrawl/sitemaps/parsed_count/urlset": 4,
        "sitemapcrawl/sitemaps/gzip_count": 1,
        "sitemapcrawl/sitemaps/loop_count": 1,
        "sitemapcrawl/sitemaps/failed_count": 1,
        "sitemapcrawl/sitemaps/failed_count/http_404": 1,
        "sitemapcrawl/children/listed_count": 6,
        "sitemapcrawl/entries/lastmod_invalid_count": 1,
        "sitemapcrawl/entries/loc_bad_scheme_count": 1,
        "sitemapcrawl/errors/loc_bad_scheme_count": 1,  # a fault since issue 22
        "sitemapcrawl/entries/loc_relative_count": 1,
        "sitemapcrawl/scope/dropped_count/other_host": 1,
        "sitemapcrawl/urls/duplicate_count": 1,
        "sitemapcrawl/urls/found_count": 9,
        # The lastmod middleware and the L0 verdicts (no page is sampled by default).
        "sitemapcrawl/lastmod/present_count": 3,
        "sitemapcrawl/lastmod/invalid_count": 1,
        "sitemapcrawl/lastmod/missing_count": 5,
        "sitemapcrawl/verdict_count/ABSENT": 3,  # /, news, the CDN file: no lastmod at all
        "sitemapcrawl/verdict_count/INVALID": 1,  # posts: 1 of 3 lastmods is not a date
        "sitemapcrawl/verdict_count/PARTIAL": 1,  # archive: 1 of 2 URLs dated
    }
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["finish_reason"] == "finished"
    assert "log_count/ERROR" not in stats
    # the loop, the 404 and the javascript: location (issue 22), each once
    assert stats["log_count/WARNING"] == 3
    # Only robots.txt and sitemap files were requested, never a page; children of the index
    # on the site's own host were read newest <lastmod> first, undated ones last.
    requests = server.requests()
    assert sorted(requests) == sorted(
        [
            "/robots.txt",
            "/pages.txt",
            "/sitemap_index.xml",
            "/sitemaps/news.xml",
            "/_/gzip/sitemaps/posts.xml",
            "/sitemaps/archive.xml",
            "/sitemaps/gone.xml",
            "/cdn/extra.xml",
        ]
    )
    same_host_children = [r for r in requests if r.startswith(("/sitemaps/", "/_/gzip/"))]
    assert same_host_children == [
        "/sitemaps/news.xml",
        "/_/gzip/sitemaps/posts.xml",
        "/sitemaps/archive.xml",
        "/sitemaps/gone.xml",
    ]


def guessed(b: str) -> list[dict[str, Any]]:
    """The guess site's /sitemap.xml, as items."""
    return [
        item(
            f"{b}/shop/item-1",
            lastmod="2024-01-02T03:04:05Z",
            lastmod_raw="2024-01-02T03:04:05Z",
            lastmod_precision="second",
            sitemap=f"{b}/sitemap.xml",
            segment="/",
            found_via="guessed",
        ),
        item(f"{b}/shop/item-2", sitemap=f"{b}/sitemap.xml", segment="/", found_via="guessed"),
    ]


@deferred_f_from_coro_f
async def test_fallback_guessing_stops_at_the_first_sitemap(
    site: Callable[[str], MockServer],
) -> None:
    """robots.txt answers 404: the usual locations are tried two at a time, most common
    first, and the first wave holds a sitemap: nothing more is requested (the site's
    /sitemap.txt is never asked for)."""
    server = site("guess")
    b = server.base
    items, crawler = await crawl(settings=SERIAL, origin=b)
    assert by_url(items) == by_url(guessed(b))
    assert our_stats(crawler) == {
        "sitemapcrawl/robots/requested_count": 1,
        "sitemapcrawl/robots/status_count/404": 1,
        "sitemapcrawl/robots/sitemaps_count": 0,
        "sitemapcrawl/guess/requested_count": 2,
        "sitemapcrawl/guess/found_count": 1,
        "sitemapcrawl/guess/miss_count": 1,
        "sitemapcrawl/sitemaps/requested_count": 2,
        "sitemapcrawl/sitemaps/done_count": 2,
        "sitemapcrawl/sitemaps/parsed_count": 1,
        "sitemapcrawl/sitemaps/parsed_count/urlset": 1,
        "sitemapcrawl/urls/found_count": 2,
        "sitemapcrawl/lastmod/present_count": 1,
        "sitemapcrawl/lastmod/missing_count": 1,
        "sitemapcrawl/verdict_count/PARTIAL": 1,
    }
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert "log_count/WARNING" not in stats  # each miss is quiet
    assert server.requests() == ["/robots.txt", "/sitemap.xml", "/sitemap_index.xml"]


@deferred_f_from_coro_f
async def test_fallback_guessing_goes_on_while_every_location_misses(
    site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    """Only the least common location holds a sitemap: wave after wave, two at a time,
    each wave once the one before missed whole, every location once."""
    (tmp_path / "post-sitemap.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>{base}/p/1</loc></url></urlset>"
    )
    with MockServer(root=tmp_path) as server:
        items, crawler = await crawl(settings=SERIAL, origin=server.base)
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/p/1"]
    paths = ["/sitemap.xml", "/sitemap_index.xml", "/sitemap-index.xml", "/wp-sitemap.xml"]
    paths += ["/sitemap.xml.gz", "/sitemap.txt", "/sitemaps.xml", "/sitemap_news.xml"]
    paths += ["/post-sitemap.xml"]
    assert requests[0] == "/robots.txt"
    waves = [set(requests[i : i + 2]) for i in range(1, len(requests), 2)]
    assert waves == [set(paths[i : i + 2]) for i in range(0, len(paths), 2)]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/guess/requested_count"] == 9
    assert stats["sitemapcrawl/guess/miss_count"] == 8
    assert stats["sitemapcrawl/guess/found_count"] == 1


@deferred_f_from_coro_f
async def test_guess_always_reads_every_location_that_is_a_sitemap(
    site: Callable[[str], MockServer],
) -> None:
    server = site("guess")
    b = server.base
    items, crawler = await crawl(settings=SERIAL, origin=b, guess="always")
    assert by_url(items) == by_url(
        [
            *guessed(b),
            item(f"{b}/contact", sitemap=f"{b}/sitemap.txt", segment="/", found_via="guessed"),
        ]
    )
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/guess/requested_count"] == 9
    assert stats["sitemapcrawl/guess/found_count"] == 2
    assert stats["sitemapcrawl/guess/miss_count"] == 7
    assert stats["sitemapcrawl/urls/duplicate_count"] == 1  # /shop/item-2, in both
    assert len(server.requests()) == 10


@deferred_f_from_coro_f
async def test_html_robots_loops_and_depth(site: Callable[[str], MockServer]) -> None:
    """robots.txt that is an HTML page is ignored (guessing takes over); an index that lists
    itself, redirects back to itself, or lists a child twice (with a fragment) is cut."""
    server = site("htmlrobots")
    b = server.base
    items, crawler = await crawl(settings=SERIAL, origin=b)
    assert items == [
        item(
            f"{b}/deep/page",
            sitemap=f"{b}/leaf.xml",
            segment="/leaf.xml",
            depth=2,
            found_via="guessed",
        )
    ]
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/robots/html_count"] == 1
    assert stats["sitemapcrawl/sitemaps/loop_count"] == 3
    assert stats["sitemapcrawl/sitemaps/parsed_count/sitemapindex"] == 2
    assert "/not-a-real-declaration.xml" not in server.requests()

    server.reset_requests()
    items, crawler = await crawl(settings=SERIAL, origin=b, max_depth="1")
    assert items == []
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/limits/max_depth_count"] == 2
    assert "/leaf.xml" not in server.requests()


@deferred_f_from_coro_f
async def test_max_urls_closes_the_spider(site: Callable[[str], MockServer]) -> None:
    server = site("basic")
    items, report, crawler = await crawl_with_report(
        settings=SERIAL, origin=server.base, max_urls="3"
    )
    assert len(items) == 3
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["finish_reason"] == "max_urls"
    assert stats["sitemapcrawl/limits/max_urls_count"] == 1
    assert stats["sitemapcrawl/urls/found_count"] == 3
    # the site report still closes the feed, with the limit it hit and the URLs it has
    assert report is not None
    assert report["limits"] == {"max_urls_count": 1}
    assert report["urls"]["found"] == 3
    assert sum(s["urls"] for s in report["segments"]) == 3


@deferred_f_from_coro_f
async def test_max_sitemaps_keeps_the_newest(site: Callable[[str], MockServer]) -> None:
    server = site("basic")
    b = server.base
    items, crawler = await crawl(settings=SERIAL, origin=b, max_sitemaps="4", guess="off")
    # 2 declared in robots.txt, then the 2 newest children of the index.
    assert sorted(i["sitemap"] for i in items) == sorted(
        [f"{b}/pages.txt"] * 2 + [f"{b}/sitemaps/news.xml"] + [f"{b}/_/gzip/sitemaps/posts.xml"] * 3
    )
    assert our_stats(crawler)["sitemapcrawl/limits/max_sitemaps_count"] == 3


@deferred_f_from_coro_f
async def test_bad_argument_stops_before_any_request(site: Callable[[str], MockServer]) -> None:
    server = site("basic")
    for arguments, message in [
        (
            {"origin": server.base, "max_sitemaps": "abc"},
            "max_sitemaps='abc' is not a whole number",
        ),
        ({"origin": "not a url"}, "origin='not a url' is not an http(s) URL"),
        ({}, "argument origin is missing"),
        ({"origin": server.base, "scope": "galaxy"}, "scope='galaxy' is not one of"),
    ]:
        items, crawler = await crawl(**arguments)
        stats = crawler.stats.get_stats()  # type: ignore[union-attr]
        assert items == []
        assert stats["finish_reason"] == "bad_argument"
        assert stats["log_count/ERROR"] == 1
        assert "downloader/request_count" not in stats
        assert crawler.spider.argument_error is not None  # type: ignore[union-attr]
        assert message in crawler.spider.argument_error  # type: ignore[union-attr]
    assert server.requests() == []


class BlogSpider(SitemapCrawlSpider):
    """A user's subclass, written for the stock SitemapSpider."""

    name = "blog"
    sitemap_rules = [("/blog/", "parse_blog")]
    sitemap_follow = ["/sitemaps/", "/_/gzip/"]

    def sitemap_filter(self, entries: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        for entry in entries:
            parsed = entry["lastmod_parsed"]
            if "/blog/" in entry["loc"] and (parsed is None or parsed.year < 2024):
                continue
            yield entry

    def parse_blog(self, response: Any) -> Iterable[dict[str, Any]]:
        yield {"page": response.url, "status": response.status}


@deferred_f_from_coro_f
async def test_user_subclass_rules_follow_and_filter(site: Callable[[str], MockServer]) -> None:
    server = site("basic")
    b = server.base
    items, crawler = await crawl(BlogSpider, settings={**SERIAL, "ROBOTSTXT_OBEY": False}, origin=b)
    pages = sorted(i["page"] for i in items if "page" in i)
    # Only /blog/ URLs that passed the filter (the 2019 duplicate and the invalid one did not).
    assert pages == [f"{b}/blog/first-post", f"{b}/blog/second-post?a=1&b=2"]
    assert [i["status"] for i in items if "page" in i] == [200, 200]
    urls = sorted(i["url"] for i in items if "url" in i)
    assert f"{b}/blog/third-post" not in urls
    assert f"{b}/extra/from-cdn" not in urls  # cdn/extra.xml is not followed
    assert our_stats(crawler)["sitemapcrawl/sitemaps/not_followed_count"] == 2  # itself, the CDN


class OffsiteSpider(SitemapCrawlSpider):
    """A subclass that restricts pages to the site: its CDN sitemap must still be read."""

    name = "offsite"
    allowed_domains = ["127.0.0.1"]


@deferred_f_from_coro_f
async def test_cdn_sitemaps_are_not_dropped_by_offsite_filtering(tmp_path: Path) -> None:
    """An index's child on a CDN host (read with scope=off: under host scope it is not):
    Scrapy's offsite filtering, restricted to the site, never drops it."""
    (tmp_path / "robots.txt").write_text("Sitemap: {base}/index.xml\n")
    (tmp_path / "index.xml").write_text(
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>{alt}/cdn.xml</loc></sitemap></sitemapindex>"
    )
    (tmp_path / "cdn.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>{base}/from-cdn</loc></url></urlset>"
    )
    with MockServer(root=tmp_path) as server:
        items, crawler = await crawl(
            OffsiteSpider, settings=SERIAL, origin=server.base, scope="off"
        )
        requests = server.requests()
    assert [i["url"] for i in items] == [f"{server.base}/from-cdn"]
    assert requests == ["/robots.txt", "/index.xml", "/cdn.xml"]
    assert crawler.stats.get_value("offsite/filtered") is None  # type: ignore[union-attr]


@deferred_f_from_coro_f
async def test_sitemaps_in_flight_are_bounded_and_read_newest_first(
    site: Callable[[str], MockServer],
) -> None:
    """With one sitemap at a time, the whole site is read in priority order: the robots.txt
    declarations in their order, index children newest <lastmod> first, undated ones last."""
    server = site("basic")
    items, crawler = await crawl(
        settings={"SITEMAPCRAWL_CONCURRENT_SITEMAPS": 1}, origin=server.base
    )
    assert len(items) == 9
    assert server.requests() == [
        "/robots.txt",
        "/sitemap_index.xml",
        "/sitemaps/news.xml",
        "/pages.txt",
        "/_/gzip/sitemaps/posts.xml",
        "/sitemaps/archive.xml",
        "/sitemaps/gone.xml",
        "/cdn/extra.xml",
    ]
    assert our_stats(crawler)["sitemapcrawl/sitemaps/done_count"] == 7


@deferred_f_from_coro_f
async def test_guess_always_adds_the_usual_locations(site: Callable[[str], MockServer]) -> None:
    server = site("basic")
    items, crawler = await crawl(settings=SERIAL, origin=server.base, guess="always")
    assert len(items) == 9  # nothing more: every guessed location is a miss on this site
    stats = our_stats(crawler)
    # /sitemap_index.xml is declared in robots.txt, so it is not guessed again.
    assert stats["sitemapcrawl/guess/requested_count"] == 8
    assert stats["sitemapcrawl/guess/miss_count"] == 8
    assert {"/sitemap.xml", "/post-sitemap.xml", "/wp-sitemap.xml"} <= set(server.requests())
    assert {i["found_via"] for i in items} == {"robots"}


@deferred_f_from_coro_f
async def test_scraped_count_is_kept_by_the_last_pipeline(
    site: Callable[[str], MockServer],
) -> None:
    """``item_scraped_count`` counts the URLs and the report whether the last pipeline counts
    it (the default: CoreStats' per-item receiver is disconnected; a batch counts its
    URLs) or CoreStats does (the pipeline off, one Scrapy item per URL); with the pipeline
    off and URL batches, CoreStats counts Scrapy items: one batch per sitemap file here;
    nobody counts with CoreStats off."""
    server = site("basic")
    stock = "scrapy.extensions.corestats.CoreStats"
    ours = "sitemapcrawl.pipelines.scrapedcount.ScrapedCountPipeline"
    counts = []
    files = []
    for extra in (
        {},
        {"ITEM_PIPELINES": {ours: None}, "SITEMAPCRAWL_ITEM_BATCH_SIZE": 1},
        {"ITEM_PIPELINES": {ours: None}},
        {"EXTENSIONS": {stock: None}},
    ):
        items, crawler = await crawl(settings={**SERIAL, **extra}, origin=server.base)
        assert crawler.stats is not None
        counts.append((len(items), crawler.stats.get_value("item_scraped_count")))
        files.append(len({i["sitemap"] for i in items}))
    n = counts[0][0]
    assert n > 0
    assert files[2] < n  # the files have several URLs each, so batches are fewer
    # the URL items and the site report
    assert counts == [(n, n + 1), (n, n + 1), (n, files[2] + 1), (n, None)]


@deferred_f_from_coro_f
async def test_the_report_lists_the_top_level_sitemaps_and_how_they_were_found(
    site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    """``sitemaps.files``: every top-level sitemap file (not the children of an index), by
    URL, how it was found, what it answered and held; a guessed location that missed is
    not listed (``guess/miss_count`` counts it)."""
    server = site("basic")
    _, report, _ = await crawl_with_report(settings=SERIAL, origin=server.base)
    assert report is not None
    base = server.base
    assert report["sitemaps"]["files"] == [
        {
            "url": f"{base}/pages.txt",
            "found_via": "robots",
            "status": 200,
            "kind": "text",
            "urls": 2,
            "sitemaps": 0,
        },
        {
            "url": f"{base}/sitemap_index.xml",
            "found_via": "robots",
            "status": 200,
            "kind": "sitemapindex",
            "urls": 0,
            "sitemaps": 6,
        },
    ]
    root = tmp_path
    (root / "robots.txt").write_text("Sitemap: {base}/missing.xml\n")
    (root / "sitemap.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>{base}/a</loc></url></urlset>"
    )
    with MockServer(root=root) as other:
        _, report, _ = await crawl_with_report(settings=SERIAL, origin=other.base, guess="always")
    assert report is not None
    assert report["sitemaps"]["files"] == [
        {
            "url": f"{other.base}/missing.xml",
            "found_via": "robots",
            "status": 404,
            "error": "http_404",
        },
        {
            "url": f"{other.base}/sitemap.xml",
            "found_via": "guessed",
            "status": 200,
            "kind": "urlset",
            "urls": 1,
            "sitemaps": 0,
        },
    ]


class _BrokenReport(SitemapCrawlSpider):
    name = "broken-report"

    def site_report(self, response: Any) -> Any:
        raise RuntimeError("the report callback failed")


@deferred_f_from_coro_f
async def test_a_report_that_cannot_be_built_does_not_hang_the_crawl(
    site: Callable[[str], MockServer],
) -> None:
    """The report's request came back without a report (its callback raised): the crawl
    ends, with Scrapy's error and one of ours, instead of waiting for it for ever."""
    items, reports, crawler = await crawl_with_reports(
        _BrokenReport, settings=SERIAL, origin=site("basic").base
    )
    assert crawler.stats is not None
    assert reports == []
    assert len(items) == 9
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") == 2


@deferred_f_from_coro_f
async def test_sitemaps_of_several_sites_keep_their_segments_apart(tmp_path: Path) -> None:
    """``sitemap_urls`` on two sites (here one server under two host names), each listing
    its own /blog/: two segments named by site, never one /blog/ judged for both."""
    (tmp_path / "sitemap.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>{base}/blog/a</loc><lastmod>2024-05-01</lastmod></url>"
        "<url><loc>{base}/blog/b</loc><lastmod>2024-05-02</lastmod></url></urlset>"
    )
    (tmp_path / "other.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>{alt}/blog/c</loc></url></urlset>"
    )
    with MockServer(root=tmp_path) as server:
        base, alt = server.base, server.base.replace("127.0.0.1", "localhost")
        items, reports, _ = await crawl_with_reports(
            settings=SERIAL, sitemap_urls=f"{base}/sitemap.xml,{alt}/other.xml"
        )
    assert sorted((i["url"], i["segment"]) for i in items) == [
        (f"{base}/blog/a", f"{base}/"),
        (f"{base}/blog/b", f"{base}/"),
        (f"{alt}/blog/c", f"{alt}/"),
    ]
    # one report per site (tests/test_multisite.py)
    assert [(r["origin"], {s["segment"]: s["urls"] for s in r["segments"]}) for r in reports] == [
        (base, {f"{base}/": 2}),
        (alt, {f"{alt}/": 1}),
    ]
