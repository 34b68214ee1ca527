"""Link following and two-way coverage against real loopback sites built at test time."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def html(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head><title>t</title>{head}</head><body>{body}</body></html>"


def a(href: str, rel: str = "") -> str:
    extra = f' rel="{rel}"' if rel else ""
    return f'<a href="{href}"{extra}>x</a>'


def write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def urlset(locs: list[str]) -> str:
    rows = "".join(f"<url><loc>{{base}}{loc}</loc></url>" for loc in locs)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'


#: What the sitemap lists (two files; /blog/1.html is in both).
LISTED = [
    "/",
    "/blog/1.html",
    "/blog/2.html",
    "/orphan.html",
    "/gone.html",
    "/_/redirect/301?to={base}/blog/2.html",
    "/noindex.html",
    "/_/headers/hdr.html?X-Robots-Tag=noindex",
    "/canon.html",
]


def build_site(root: Path) -> None:
    """A home page, a listed blog, a shop section no sitemap lists, and the classic
    non-indexable sitemap entries: a 404, a redirect, noindex (meta and header), a canonical
    elsewhere; robots.txt disallows /private/."""
    write(
        root,
        "robots.txt",
        "User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap.xml\n"
        "Sitemap: {base}/more.xml\n",
    )
    write(root, "sitemap.xml", urlset(LISTED))
    write(root, "more.xml", urlset(["/blog/1.html"]))
    write(
        root,
        "index.html",
        html(
            a("/blog/1.html")
            + a("/blog/1.html#comments")
            + a("blog/2.html")
            + a("/shop/a.html")
            + a("http://other.example/elsewhere.html")
            + a("/private/p.html")
            + a("/hidden.html", rel="nofollow")
            + a("/report.pdf")
            + a("/missing.html")
        ),
    )
    write(root, "blog/1.html", html(a("/") + a("/blog/2.html") + a("/shop/c.html")))
    write(root, "blog/2.html", html(a("/blog/1.html")))
    write(root, "shop/a.html", html(a("/shop/b.html") + a("/shop/a.html?sort=asc")))
    write(root, "shop/b.html", html(a("/shop/a.html")))
    write(root, "shop/c.html", html("no links", '<meta name="ROBOTS" content="noindex">'))
    write(root, "orphan.html", html("nobody links here"))
    write(root, "hidden.html", html("only a nofollow link"))
    write(root, "private/p.html", html("disallowed"))
    write(root, "noindex.html", html("", '<meta name="robots" content="noindex, follow">'))
    write(root, "hdr.html", html(""))
    write(root, "canon.html", html("", '<link rel="canonical" href="/blog/1.html">'))
    write(root, "report.pdf", "%PDF-1.4")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    root = tmp_path_factory.mktemp("links")
    build_site(root)
    with MockServer(root=root) as server:
        yield server


LINK_STATS = "sitemapcrawl/links/"


def paths(server: MockServer) -> Counter[str]:
    return Counter(server.requests())


def by_url(items: list[dict[str, Any]], base: str) -> dict[str, str]:
    return {i["url"].removeprefix(base): i["found_via"] for i in items}


@deferred_f_from_coro_f
async def test_full_finds_what_the_sitemap_omits_and_fetches_each_page_once(
    site: MockServer,
) -> None:
    site.reset_requests()
    base = site.base
    # every path group its own segment, however small: the coverage of each is what is
    # checked below
    items, report, crawler = await crawl_with_report(
        settings={"SITEMAPCRAWL_SEGMENT_MIN_URLS": 1}, origin=base, links="full", sample="on"
    )
    found = by_url(items, base)
    listed = {loc.replace("{base}", base) for loc in LISTED}
    assert {u for u, via in found.items() if via == "robots"} == listed
    # the shop section is reached only by links; /missing.html is a broken link, /hidden.html
    # is behind rel=nofollow, /private/ is disallowed, the other host is out of scope
    assert {u for u, via in found.items() if via == "links"} == {
        "/shop/a.html",
        "/shop/b.html",
        "/shop/c.html",
        "/shop/a.html?sort=asc",
    }
    # each once, after every sitemap URL
    assert len(items) == len(found) == 13
    assert {i["found_via"] for i in items[-4:]} == {"links"}
    assert {(i["segment"], i["sitemap"], i["lastmod"]) for i in items[-4:]} == {
        ("/shop/", "", None)
    }
    assert {i["url"].removeprefix(base): i["flags"] for i in items[-4:]} == {
        "/shop/a.html": [],
        "/shop/b.html": [],
        "/shop/c.html": ["noindex"],  # reached, not indexable: rightly left out
        "/shop/a.html?sort=asc": [],
    }
    assert report is not None
    coverage = report["coverage"]
    assert coverage["urls"] == {
        "sitemap": 9,
        "links": 7,
        "both": 3,
        "sitemap_only": 6,
        "link_only": 4,
        "both_share": 0.2308,
        "sitemap_only_share": 0.4615,
        "link_only_share": 0.3077,
    }
    assert coverage["findings"]["counts"] == {
        "not_found": 1,
        "redirected": 1,
        "noindex": 2,
        "canonical_elsewhere": 1,
    }
    assert {
        (p["url"].removeprefix(base), p["finding"], p["detail"])
        for p in coverage["findings"]["pages"]
    } == {
        ("/gone.html", "not_found", "404"),
        ("/_/redirect/301?to=" + base + "/blog/2.html", "redirected", base + "/blog/2.html"),
        ("/noindex.html", "noindex", "meta"),
        ("/_/headers/hdr.html?X-Robots-Tag=noindex", "noindex", "header"),
        ("/canon.html", "canonical_elsewhere", base + "/blog/1.html"),
    }
    assert coverage["complete"] is True
    assert coverage["stopped_by"] == []
    assert coverage["broken_links"] == 1
    # per segment (here, a flat sitemap: the first path component)
    assert {s["segment"]: s["coverage"] for s in report["segments"]} == {
        "/": {
            "sitemap": 5,
            "both": 1,
            "sitemap_only": 4,
            "reached_share": 0.2,
            "checked": 5,
            "findings": {"not_found": 1, "noindex": 1, "canonical_elsewhere": 1},
        },
        "/_/": {
            "sitemap": 2,
            "both": 0,
            "sitemap_only": 2,
            "reached_share": 0.0,
            "checked": 2,
            "findings": {"redirected": 1, "noindex": 1},
        },
        "/blog/": {
            "sitemap": 2,
            "both": 2,
            "sitemap_only": 0,
            "reached_share": 1.0,
            "checked": 2,
            "findings": {},
        },
    }
    assert coverage["listed_twice"]["count"] == 1  # which file came second depends on timing
    assert [e["url"] for e in coverage["listed_twice"]["examples"]] == [base + "/blog/1.html"]
    assert coverage["host_variants"] == {"main": base, "others": {}}
    assert coverage["sections"][-1] == {
        "section": "/shop/",
        "sitemap": 0,
        "links": 4,
        "both": 0,
        "sitemap_only": 0,
        "link_only": 4,
        "both_share": 0.0,
        "sitemap_only_share": 0.0,
        "link_only_share": 1.0,
    }
    assert coverage["completeness"] == {
        "indexable_reached": 6,  # the 7 reached, less /shop/c.html (noindex)
        "listed": 3,
        "estimate": 0.5,
        "low": 0.1876,
        "high": 0.8124,
        "basis": coverage["completeness"]["basis"],
    }
    # robots.txt once: its Sitemap lines, then handed to the robots middleware for pages
    assert paths(site) == Counter(
        {"/robots.txt": 1}
        | dict.fromkeys(
            [
                "/sitemap.xml",
                "/more.xml",
                *(loc.replace("{base}", base) for loc in LISTED),
                "/shop/a.html",
                "/shop/a.html?sort=asc",
                "/shop/b.html",
                "/shop/c.html",
                "/missing.html",
            ],
            1,
        )
    )
    assert {k: v for k, v in our_stats(crawler).items() if k.startswith(LINK_STATS)} == {
        # home, 4 shop pages, /missing.html, /private/p.html (robots.txt refuses it)
        "sitemapcrawl/links/discovered_count": 7,
        "sitemapcrawl/links/requested_count": 6,
        "sitemapcrawl/links/status_count/200": 11,  # every page seen: samples and ours
        "sitemapcrawl/links/status_count/301": 1,
        "sitemapcrawl/links/status_count/404": 2,
        "sitemapcrawl/links/out_of_scope_count": 1,
        "sitemapcrawl/links/nofollow_count": 1,
        "sitemapcrawl/links/robots_count": 1,
        "sitemapcrawl/links/emitted_count": 4,
    }


@deferred_f_from_coro_f
async def test_default_crawl_requests_no_page_and_has_no_coverage(site: MockServer) -> None:
    """links=sample (the default) follows links only when pages are fetched anyway."""
    site.reset_requests()
    items, report, crawler = await crawl_with_report(origin=site.base)
    assert {i["found_via"] for i in items} == {"robots"}
    assert len(items) == 9
    assert report is not None
    assert report["coverage"] == {}
    assert set(paths(site)) == {"/robots.txt", "/sitemap.xml", "/more.xml"}
    assert not [k for k in our_stats(crawler) if k.startswith(LINK_STATS)]


@deferred_f_from_coro_f
async def test_links_off_with_samples_fetches_only_the_samples(site: MockServer) -> None:
    site.reset_requests()
    items, report, crawler = await crawl_with_report(origin=site.base, links="off", sample="on")
    assert len(items) == 9
    assert report is not None
    assert report["coverage"] == {}
    assert set(paths(site)) == {
        "/robots.txt",
        "/sitemap.xml",
        "/more.xml",
        *(loc.replace("{base}", site.base) for loc in LISTED),
    }
    assert not [k for k in our_stats(crawler) if k.startswith(LINK_STATS)]


@deferred_f_from_coro_f
async def test_sample_mode_follows_one_click_from_the_samples_and_the_home_page(
    site: MockServer,
) -> None:
    site.reset_requests()
    base = site.base
    items, report, crawler = await crawl_with_report(origin=base, sample="on")
    # /shop/a.html (from the home page) and /shop/c.html (from a sampled post) are one
    # click away; /shop/b.html and /shop/a.html?sort=asc are two
    assert {i["url"].removeprefix(base) for i in items[-2:]} == {"/shop/a.html", "/shop/c.html"}
    assert [i["found_via"] for i in items] == ["robots"] * 9 + ["links"] * 2
    assert report is not None
    coverage = report["coverage"]
    assert coverage["mode"] == "sample"
    assert coverage["max_depth"] == 1
    assert coverage["stopped_by"] == ["max_depth"]
    assert coverage["limits"] == {"max_depth": 2}
    assert coverage["complete"] is False
    assert coverage["sitemap_only_means"].startswith("not reached by links followed from the")
    assert coverage["urls"]["link_only"] == 2
    assert coverage["urls"]["both"] == 3
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/links/limit_count/max_depth"] == 2
    assert stats["sitemapcrawl/links/emitted_count"] == 2
    pages = paths(site)
    assert "/shop/b.html" not in pages
    assert pages["/"] == 1


def build_bare_site(root: Path) -> None:
    """No sitemap anywhere; a home page into a calendar trap, a redirect loop, a page over
    the size cap and a JSON file."""
    write(root, "robots.txt", "User-agent: *\nDisallow:\n")
    write(
        root,
        "index.html",
        html(
            a("/about.html")
            + a("/_/calendar/2026/1")
            + a("/_/loop/0")
            + a("/big.html")
            + a("/data.json")
        ),
    )
    write(root, "about.html", html(a("/") + a("/about.html")))
    write(root, "big.html", html("x" * 5000))
    write(root, "data.json", '{"a": 1}')


@pytest.fixture(scope="module")
def bare_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    root = tmp_path_factory.mktemp("bare")
    build_bare_site(root)
    with MockServer(root=root) as server:
        yield server


@deferred_f_from_coro_f
async def test_fallback_crawls_a_site_without_sitemaps_within_its_limits(
    bare_site: MockServer,
) -> None:
    bare_site.reset_requests()
    base = bare_site.base
    items, report, crawler = await crawl_with_report(
        settings={
            "SITEMAPCRAWL_LINKS_MAX_PAGES": 25,
            "SITEMAPCRAWL_LINKS_MAX_DEPTH": 3,
            "SITEMAPCRAWL_LINKS_MAX_PAGE_SIZE": 2000,
            # one page at a time: which limit the budget meets first depends on the order
            "CONCURRENT_REQUESTS": 1,
        },
        origin=base,
        links="fallback",
    )
    urls = [i["url"].removeprefix(base) for i in items]
    assert {i["found_via"] for i in items} == {"links"}
    assert len(urls) == len(set(urls))  # each once
    assert {"/", "/about.html", "/data.json", "/_/calendar/2026/1"} <= set(urls)
    assert "/big.html" not in urls  # over the size cap: not read
    assert not [u for u in urls if u.startswith("/_/loop/")]  # redirects are not pages
    assert report is not None
    coverage = report["coverage"]
    assert coverage["mode"] == "fallback"
    assert coverage["pages_fetched"] == 25
    # the page budget ran out before three clicks into the calendar; its day views of each
    # month past the 20th were refused; /big.html was over the size cap
    assert coverage["stopped_by"] == ["max_pages", "page_size", "query_variants"]
    assert coverage["limits"]["query_variants"] == 33  # 11 per month page seen (3)
    assert coverage["urls"]["sitemap"] == 0
    assert coverage["urls"]["links"] == len(urls)
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/links/requested_count"] == 25
    assert stats["sitemapcrawl/links/limit_count/page_size"] == 1
    assert stats["sitemapcrawl/links/not_html_count"] == 1
    assert stats["sitemapcrawl/links/limit_count/query_variants"] > 0
    assert stats["sitemapcrawl/links/limit_count/max_pages"] > 0
    assert stats["sitemapcrawl/guess/miss_count"] == stats["sitemapcrawl/guess/requested_count"]
    pages = paths(bare_site)
    assert all(n == 1 for p, n in pages.items() if p != "/robots.txt"), pages
    # the calendar's day views: at most 20 query strings per month page were fetched
    day_views = Counter(p.partition("?")[0] for p in pages if "?day=" in p)
    assert day_views
    assert max(day_views.values()) <= 20


@deferred_f_from_coro_f
async def test_fallback_does_nothing_when_a_sitemap_was_read(site: MockServer) -> None:
    site.reset_requests()
    items, report, _ = await crawl_with_report(origin=site.base, links="fallback", sample="off")
    assert len(items) == 9
    assert report is not None
    assert report["coverage"] == {}
    assert set(paths(site)) == {"/robots.txt", "/sitemap.xml", "/more.xml"}


@deferred_f_from_coro_f
async def test_bad_links_argument_stops_before_any_request(site: MockServer) -> None:
    site.reset_requests()
    items, report, crawler = await crawl_with_report(origin=site.base, links="all")
    assert items == []
    assert report is None
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "bad_argument"
    assert paths(site) == Counter()


@deferred_f_from_coro_f
async def test_refetched_pages_are_shared_with_the_link_follower(
    site: MockServer, tmp_path: Path
) -> None:
    """pages=refetch and links=full on one run: a page both want is fetched once."""
    state = str(tmp_path / "state.sqlite")
    await crawl_with_report(origin=site.base, state=state)  # no page fetched: no history
    site.reset_requests()
    items, report, crawler = await crawl_with_report(
        # every listed page is due (no_history): the home page and the posts are wanted by
        # both the refetch and the link follower
        origin=site.base,
        links="full",
        since="last",
        pages="refetch",
        state=state,
    )
    stats = our_stats(crawler)
    refetched = stats["sitemapcrawl/refetch/requested_count"]
    assert refetched == 9
    assert report is not None
    assert report["coverage"]["urls"]["link_only"] == 4
    assert [i["found_via"] for i in items].count("links") == 4
    requested = paths(site)
    pages = {p: n for p, n in requested.items() if p not in ("/robots.txt", "/sitemap.xml")}
    pages.pop("/more.xml", None)
    assert set(pages.values()) == {1}, pages  # each page once, whoever asked
    # the link follower fetched only what no refetch had: the shop, /missing.html, and
    # /private/p.html, which robots.txt refused before any request
    assert stats["sitemapcrawl/links/requested_count"] == 6
    assert stats["sitemapcrawl/links/robots_count"] == 1
    assert len(pages) == 9 + 5


@deferred_f_from_coro_f
async def test_full_checks_the_listed_urls_links_did_not_reach(site: MockServer) -> None:
    """Without samples, links=full fetches the sitemap-only URLs after the link crawl: live
    orphans are told from dead entries, and the findings are the same as with samples."""
    site.reset_requests()
    base = site.base
    items, report, crawler = await crawl_with_report(origin=base, links="full")
    assert [i["found_via"] for i in items].count("links") == 4
    assert report is not None
    coverage = report["coverage"]
    # /orphan.html, /noindex.html, the X-Robots-Tag page and /canon.html answer 200;
    # /gone.html is dead and the redirect is a redirect
    assert coverage["sitemap_only_checked"] == {"fetched": 6, "alive": 4, "unchecked": 0}
    assert coverage["findings"]["counts"] == {
        "not_found": 1,
        "redirected": 1,
        "noindex": 2,
        "canonical_elsewhere": 1,
    }
    assert coverage["findings"]["checked"] == 9
    # 9 by links (the home page and /private/p.html, refused by robots.txt, included),
    # then the 6 checks
    assert coverage["pages_fetched"] == 9 + 6
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/links/requested_count"] == 15
    assert "sitemapcrawl/sample/requested_count" not in stats
    assert set(paths(site).values()) == {1}  # every page once, robots.txt too
    assert paths(site)["/robots.txt"] == 1


@deferred_f_from_coro_f
async def test_full_checks_within_what_is_left_of_the_budget(site: MockServer) -> None:
    _, report, crawler = await crawl_with_report(
        settings={"SITEMAPCRAWL_LINKS_MAX_PAGES": 12}, origin=site.base, links="full"
    )
    assert report is not None
    coverage = report["coverage"]
    assert coverage["pages_fetched"] == 12
    assert coverage["sitemap_only_checked"] == {
        "fetched": 3,
        "alive": coverage["sitemap_only_checked"]["alive"],
        "unchecked": 3,
    }
    assert our_stats(crawler)["sitemapcrawl/links/unchecked_count"] == 3


@deferred_f_from_coro_f
async def test_links_without_verification_warn_and_fetch_no_page(
    site: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    site.reset_requests()
    items, report, _ = await crawl_with_report(
        settings={"SITEMAPCRAWL_VERIFY_ENABLED": False}, origin=site.base, links="full"
    )
    assert len(items) == 9
    assert report is None
    assert "links=full needs SITEMAPCRAWL_VERIFY_ENABLED" in caplog.text
    assert set(paths(site)) == {"/robots.txt", "/sitemap.xml", "/more.xml"}


_URL_CHARS = "aZ09-._~!$&'()*+,;=:@/?#%[]^`{|} \u00e9"


@given(
    st.sampled_from(["http://a.example", "https://www.b-c.example:8080", "http://A.example"]),
    st.text(alphabet=_URL_CHARS, max_size=14),
)
def test_the_listed_key_is_canonicalize_url(origin: str, rest: str) -> None:
    """The link follower's key skips ``canonicalize_url`` only where it would change nothing."""
    from w3lib.url import canonicalize_url

    from sitemapcrawl.listedurls import canonical_key as _key

    url = f"{origin}/{rest}"
    assert _key(url) == canonicalize_url(url)


_UNRESERVED = "aZ09-._~"


@given(
    st.lists(
        st.tuples(
            st.text(alphabet=_UNRESERVED, min_size=1, max_size=4),
            st.text(alphabet=_UNRESERVED, max_size=4),
        ),
        min_size=2,
        max_size=6,
    )
)
def test_a_query_of_several_arguments_is_sorted_as_canonicalize_url_sorts_it(
    pairs: list[tuple[str, str]],
) -> None:
    """Several unreserved ``name=value`` arguments take the fast path (sorted, not parsed)."""
    from w3lib.url import canonicalize_url

    from sitemapcrawl.listedurls import _SORTABLE
    from sitemapcrawl.listedurls import canonical_key as _key

    url = "https://a.example/p/x.html?" + "&".join(f"{k}={v}" for k, v in pairs)
    assert _SORTABLE(url)
    assert _key(url) == canonicalize_url(url)
