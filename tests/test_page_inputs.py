"""Sampled pages that are broken, odd or hostile, against a real loopback site: each is
counted, reasoned about in the segment's report, and never stops the crawl."""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

DAY = dt.timedelta(days=1)


def iso(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def html(head: str = "", body: str = "<p>Some article text.</p>") -> str:
    return (
        f"<!DOCTYPE html><html><head><title>x</title>{head}</head>"
        f"<body><main><article>{body}</article></main></body></html>"
    )


def jsonld(**fields: str) -> str:
    data = {"@context": "https://schema.org", "@type": "Article", "headline": "x", **fields}
    return f'<script type="application/ld+json">{json.dumps(data)}</script>'


class Site:
    """One flat sitemap whose pages go wrong in every way the issue lists."""

    def __init__(self, root: Path) -> None:
        self.now = now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        # lastmod of entry i: days apart, so the sitemap shows no generation-time cluster
        self.lastmod = {}
        entries: list[tuple[str, str]] = []
        pages: dict[str, tuple[str | bytes, dt.datetime]] = {}

        def entry(loc: str, age_days: int, body: str | bytes | None = None) -> dt.datetime:
            moment = now - (10 + 7 * age_days) * DAY
            entries.append((loc, iso(moment)))
            self.lastmod[loc] = moment
            if body is not None:
                pages[loc] = (body, moment)
            return moment

        m = entry("/p/agree.html", 0)
        pages["/p/agree.html"] = (html(jsonld(dateModified=iso(m))), m)
        m = entry("/p/broken-jsonld.html", 1)
        pages["/p/broken-jsonld.html"] = (
            html(
                '<script type="application/ld+json">{"@type": "Article", "dateModified": </script>'
                f'<meta property="article:modified_time" content="{iso(m)}">'
            ),
            m,
        )
        m = entry("/p/conflict.html", 2)
        both = {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": "WebPage", "dateModified": iso(m)},
                {"@type": "Article", "dateModified": iso(m - 30 * DAY)},
            ],
        }
        pages["/p/conflict.html"] = (
            html(f'<script type="application/ld+json">{json.dumps(both)}</script>'),
            m,
        )
        m = entry("/p/future.html", 3)
        pages["/p/future.html"] = (html(jsonld(dateModified=iso(now + 40 * DAY))), m)
        m = entry("/p/now.html", 4)  # its date is the render time: within 2 minutes of Date
        pages["/p/now.html"] = (html(jsonld(dateModified=iso(now))), m)
        m = entry("/p/huge.html", 5)
        pages["/p/huge.html"] = (html(jsonld(dateModified=iso(m)), "<p>x</p>" * 40_000), m)
        m = entry("/p/doc.json", 6)
        pages["/p/doc.json"] = ('{"not": "html"}', m)
        entry("/_/status/404", 7)
        entry("/_/status/500", 8)
        entry("/_/redirect/301?to={alt}/p/agree.html", 9)  # another host name
        m = entry("/_/redirect/302?to={base}/p/moved.html", 10)  # same site: followed
        pages["/p/moved.html"] = (html(jsonld(dateModified=iso(m))), m)
        for loc, (body, mtime) in pages.items():
            path = root / loc.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body.encode() if isinstance(body, str) else body)
            # Last-Modified (the file's mtime) = the page's lastmod, not the render time
            os.utime(path, (mtime.timestamp(), mtime.timestamp()))
        rows = "".join(
            f"<url><loc>{{base}}{loc}</loc><lastmod>{lastmod}</lastmod></url>"
            for loc, lastmod in entries
        )
        # one child of an index: one segment, whatever the URLs' paths
        (root / "sitemaps").mkdir()
        (root / "sitemaps" / "odd.xml").write_text(
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
        )
        (root / "sitemap_index.xml").write_text(
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            "<sitemap><loc>{base}/sitemaps/odd.xml</loc></sitemap></sitemapindex>"
        )
        (root / "robots.txt").write_text("User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


@pytest.fixture(scope="module")
def odd_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, MockServer]]:
    root = tmp_path_factory.mktemp("odd")
    site = Site(root)
    with MockServer(root=root) as server:
        yield site, server


@deferred_f_from_coro_f
async def test_every_bad_page_is_counted_and_reasoned_about(
    odd_site: tuple[Site, MockServer],
) -> None:
    _, server = odd_site
    server.reset_requests()
    items, report, crawler = await crawl_with_report(
        settings={"SITEMAPCRAWL_PAGE_MAX_SIZE": 64 * 1024, "RETRY_TIMES": 1},
        origin=server.base,
        sample="on",
        links="off",
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    # Scrapy's retry middleware gives up on the 500 page with a WARNING (not an error of
    # the crawl: the page's outcome is counted and reported), and its retry is counted
    assert crawler.stats.get_value("log_count/ERROR") is None
    assert crawler.stats.get_value("retry/max_reached") == 1
    assert len(items) == 11
    assert report is not None
    (segment,) = report["segments"]
    base, alt = server.base, server.base.replace("127.0.0.1", "localhost")
    samples: dict[str, dict[str, Any]] = {
        s["url"].removeprefix(base): s for s in segment["samples"]
    }
    got = {
        loc: (s["outcome"], s.get("problems"), s.get("final_url", "-"))
        for loc, s in samples.items()
    }
    assert got == {
        "/p/agree.html": ("AGREE", [], None),
        "/p/broken-jsonld.html": ("AGREE", ["json-ld_invalid"], None),
        # the later of the page's two dateModified values (the design takes the maximum)
        "/p/conflict.html": ("AGREE", ["conflicting_modified"], None),
        # no usable date in the page: its Last-Modified is the evidence
        "/p/future.html": ("AGREE", ["future_modified"], None),
        "/p/now.html": ("AGREE", ["now_modified"], None),
        "/p/doc.json": ("AGREE", ["not_html"], None),
        # read up to the page cap (64 KiB here): the head holds the date
        "/p/huge.html": ("AGREE", ["truncated"], None),
        "/_/status/404": ("HTTP_404", None, None),
        "/_/status/500": ("HTTP_500", None, None),
        f"/_/redirect/301?to={alt}/p/agree.html": (
            "REDIRECT_OFFSITE",
            None,
            f"{alt}/p/agree.html",
        ),
        f"/_/redirect/302?to={base}/p/moved.html": ("AGREE", [], f"{base}/p/moved.html"),
    }
    assert segment["page_problems"] == {
        "conflicting_modified": 1,
        "future_modified": 1,
        "json-ld_invalid": 1,
        "not_html": 1,
        "now_modified": 1,
        "truncated": 1,
    }
    assert segment["evidence"]["n_ev"] == 8
    assert segment["evidence"]["n_unread"] == 3
    assert (segment["verdict"], segment["reason"]) == (
        "UNVERIFIABLE",
        "Only 8 of 11 sampled pages carry page evidence (< 20, 3 could not be read, "
        "1 with conflicting modification dates, 1 with a modification date in the future, "
        "1 with broken JSON-LD, 1 not HTML, "
        "1 giving the render time as their modification date, 1 cut at the parse cap).",
    )
    stats = our_stats(crawler)
    assert {k: v for k, v in stats.items() if k.startswith("sitemapcrawl/sample/")} == {
        "sitemapcrawl/sample/requested_count": 11,
        "sitemapcrawl/sample/fetched_count": 8,
        "sitemapcrawl/sample/redirect_followed_count": 1,
        "sitemapcrawl/sample/outcome_count/AGREE": 8,
        "sitemapcrawl/sample/outcome_count/HTTP_404": 1,
        "sitemapcrawl/sample/outcome_count/HTTP_500": 1,
        "sitemapcrawl/sample/outcome_count/REDIRECT_OFFSITE": 1,
        "sitemapcrawl/sample/problem_count/conflicting_modified": 1,
        "sitemapcrawl/sample/problem_count/future_modified": 1,
        "sitemapcrawl/sample/problem_count/json-ld_invalid": 1,
        "sitemapcrawl/sample/problem_count/not_html": 1,
        "sitemapcrawl/sample/problem_count/now_modified": 1,
        "sitemapcrawl/sample/problem_count/truncated": 1,
    }
    # The redirect to another host is not followed; the one within the site is, once;
    # the huge page's body is read up to the page cap, once.
    requests = server.requests()
    assert "/p/moved.html" in requests
    assert requests.count("/p/agree.html") == 1
    assert requests.count("/_/status/500") == 2  # RETRY_TIMES = 1


@pytest.mark.parametrize("budget", [150, 60])
@deferred_f_from_coro_f
async def test_an_undecided_sample_is_escalated_to_60_pages(tmp_path: Path, budget: int) -> None:
    """27 of the first 30 pages agree: the Wilson interval straddles 0.80, so the segment
    gets 30 more pages (the same seeded sample, extended) and is judged on 60; a segment
    whose 30 pages all agree is not escalated. With a site budget of 60 the first samples
    spend it: the undecided segment stays undecided, and the stats say why."""
    from sitemapcrawl.sitemaps.dates import parse_lastmod
    from sitemapcrawl.verify.sampling import SegmentSampler

    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    (tmp_path / "sitemaps").mkdir()
    (tmp_path / "sitemap_index.xml").write_text(
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>{base}/sitemaps/mixed.xml</loc></sitemap>"
        "<sitemap><loc>{base}/sitemaps/fine.xml</loc></sitemap></sitemapindex>"
    )
    (tmp_path / "robots.txt").write_text("User-agent: *\nSitemap: {base}/sitemap_index.xml\n")
    with MockServer(root=tmp_path) as server:
        disagree: set[str] = set()
        for name in ("mixed", "fine"):
            # lastmods 30-129 days old: one stratum, whatever the second the crawl runs
            lastmods = {f"{server.base}/{name}/{i}.html": now - (30 + i) * DAY for i in range(100)}
            if name == "mixed":
                sampler = SegmentSampler(
                    f"sitemapcrawl:/sitemaps/{name}.xml", budget=30, panel=10, now=now
                )
                for url, moment in lastmods.items():
                    sampler.offer(url, parse_lastmod(iso(moment)))
                first = sorted(s.url for s in sampler.sample())
                disagree = set(first[:3])  # 3 of the first 30: modified 5 days earlier
            for url, moment in lastmods.items():
                modified = moment - 5 * DAY if url in disagree else moment
                path = tmp_path / url.removeprefix(server.base + "/")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(html(jsonld(dateModified=iso(modified))))
            rows = "".join(
                f"<url><loc>{url}</loc><lastmod>{iso(moment)}</lastmod></url>"
                for url, moment in lastmods.items()
            )
            (tmp_path / "sitemaps" / f"{name}.xml").write_text(
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
            )
        items, report, crawler = await crawl_with_report(
            settings={"SITEMAPCRAWL_SAMPLE_SITE_BUDGET": budget},
            origin=server.base,
            sample="on",
            links="off",
        )
        requests = server.requests()
    assert len(items) == 200
    assert report is not None
    segments = {s["segment"]: s for s in report["segments"]}
    mixed, fine = segments["/sitemaps/mixed.xml"], segments["/sitemaps/fine.xml"]
    assert (fine["verdict"], fine["reason"]) == (
        "PROVISIONAL",
        "30 of 30 sampled pages agree (Wilson lower bound 0.89 >= 0.80).",
    )
    stats = our_stats(crawler)
    escalation = {k: v for k, v in stats.items() if "/sample/escalat" in k}
    pages = [r for r in requests if r.startswith(("/mixed/", "/fine/"))]
    if budget == 60:
        assert (mixed["verdict"], mixed["reason"]) == (
            "UNVERIFIABLE",
            "27 of 30 sampled pages agree (Wilson lower bound 0.74 < 0.80); "
            "escalate the sample to 60 pages.",
        )
        assert sorted(s["url"] for s in mixed["samples"]) == first
        assert stats["sitemapcrawl/sample/requested_count"] == 60
        assert escalation == {"sitemapcrawl/sample/escalation_over_budget_count": 1}
        assert len(pages) == len(set(pages)) == 60
        return
    assert (mixed["verdict"], mixed["reason"]) == (
        "PROVISIONAL",
        "57 of 60 sampled pages agree (Wilson lower bound 0.86 >= 0.80).",
    )
    assert mixed["outcomes"] == {"AGREE": 57, "LASTMOD_NEWER": 3}
    assert {s["url"] for s in mixed["samples"]} >= set(first)
    assert stats["sitemapcrawl/sample/requested_count"] == 90
    assert escalation == {
        "sitemapcrawl/sample/escalated_segment_count": 1,
        "sitemapcrawl/sample/escalated_count": 30,
    }
    assert len(pages) == len(set(pages)) == 90  # each sampled page fetched once


@deferred_f_from_coro_f
async def test_each_syntax_gives_the_page_date_with_its_source_and_precision(
    tmp_path: Path,
) -> None:
    """A crawl over pages that state their modification date in each syntax extruct reads
    (JSON-LD in an @graph and as mainEntity, microdata, RDFa, OpenGraph) and in a plain
    ``<meta>``: each sample says where the date came from, as written, at its precision."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    moment = now - 40 * DAY
    stamp, day = iso(moment), moment.strftime("%Y-%m-%d")
    graph = {
        "@context": "https://schema.org",
        "@graph": [{"@type": "WebSite", "name": "x"}, {"@type": "Article", "dateModified": stamp}],
    }
    main_entity = {
        "@context": "https://schema.org",
        "@type": "WebPage",
        "mainEntity": {"@type": "Article", "dateModified": stamp},
    }
    heads = {
        "graph": f'<script type="application/ld+json">{json.dumps(graph)}</script>',
        "main-entity": f'<script type="application/ld+json">{json.dumps(main_entity)}</script>',
        "opengraph": f'<meta property="og:updated_time" content="{stamp}">',
        "meta": f'<meta name="dcterms.modified" content="{day}">',
        # a head heavier than the 2 MiB parse cap, its JSON-LD after it: read all the same
        "heavy-head": "<style>" + "a{}" * 750_000 + "</style>" + jsonld(dateModified=stamp),
    }
    bodies = {
        "microdata": (
            '<div itemscope itemtype="https://schema.org/Article">'
            f'<meta itemprop="dateModified" content="{stamp}"><p>Some article text.</p></div>'
        ),
        "rdfa": (
            '<div vocab="https://schema.org/" typeof="Article">'
            f'<meta property="dateModified" content="{stamp}"><p>Some article text.</p></div>'
        ),
    }
    (tmp_path / "p").mkdir()
    rows = []
    for name in [*heads, *bodies]:
        path = tmp_path / "p" / f"{name}.html"
        if name in heads:
            path.write_text(html(heads[name]))
        else:
            path.write_text(html(body=bodies[name]))
        os.utime(path, (moment.timestamp(), moment.timestamp()))
        lastmod = day if name == "meta" else stamp
        rows.append(f"<url><loc>{{base}}/p/{name}.html</loc><lastmod>{lastmod}</lastmod></url>")
    (tmp_path / "sitemap.xml").write_text(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{"".join(rows)}</urlset>'
    )
    (tmp_path / "robots.txt").write_text("Sitemap: {base}/sitemap.xml\n")
    with MockServer(root=tmp_path) as server:
        _, report, _ = await crawl_with_report(origin=server.base, sample="on", links="off")
    assert report is not None
    (segment,) = report["segments"]
    got = {
        s["url"].rsplit("/", 1)[1]: (s["outcome"], s["page_modified"]) for s in segment["samples"]
    }
    second = {"raw": stamp, "precision": "second"}
    assert got == {
        "graph.html": ("AGREE", {"source": "json-ld", "field": "dateModified", **second}),
        "main-entity.html": ("AGREE", {"source": "json-ld", "field": "dateModified", **second}),
        "microdata.html": ("AGREE", {"source": "microdata", "field": "dateModified", **second}),
        "rdfa.html": ("AGREE", {"source": "rdfa", "field": "dateModified", **second}),
        "opengraph.html": ("AGREE", {"source": "opengraph", "field": "og:updated_time", **second}),
        "heavy-head.html": ("AGREE", {"source": "json-ld", "field": "dateModified", **second}),
        "meta.html": (
            "AGREE",
            {"source": "meta", "field": "dcterms.modified", "raw": day, "precision": "day"},
        ),
    }


def _twins(stamp: str) -> dict[str, str]:
    """A clean page and its broken twin: a stray ``</html>`` before ``<body>``, misnested
    tags, an unclosed ``<p>`` around the article (what a theme writes at some deploy)."""
    head = f"<head><title>x</title>{jsonld(dateModified=stamp)}</head>"
    clean = (
        "<article><h1>Release notes</h1>"
        '<p><b>The <a href="/docs/">docs</a> moved.</b></p><p>Second paragraph.</p></article>'
    )
    broken = (
        "<p><article><h1>Release notes</h1>"
        '<p><b>The <a href="/docs/">docs</a> moved.</p></b><p>Second paragraph.</article>'
    )
    return {
        "clean": f"<!DOCTYPE html><html>{head}<body><main>{clean}</main></body></html>",
        "broken": f"<!DOCTYPE html><html>{head}</html><body><main>{broken}</main></body></html>",
    }


@deferred_f_from_coro_f
async def test_a_page_read_as_a_browser_reads_it(tmp_path: Path) -> None:
    """The broken twin gives the same page date and the same content fingerprint as the
    clean page (docs/verification.md, "Page dates"): libxml2 alone stopped building its
    tree at the stray ``</html>``."""
    import sqlite3

    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    stamp = iso(now - 20 * DAY)
    (tmp_path / "p").mkdir()
    for name, body in _twins(stamp).items():
        (tmp_path / "p" / f"{name}.html").write_text(body)
    rows = "".join(
        f"<url><loc>{{base}}/p/{name}.html</loc><lastmod>{stamp}</lastmod></url>"
        for name in ("clean", "broken")
    )
    (tmp_path / "sitemap.xml").write_text(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
    )
    (tmp_path / "robots.txt").write_text("Sitemap: {base}/sitemap.xml\n")
    state = tmp_path / "state.sqlite"
    with MockServer(root=tmp_path) as server:
        _, report, _ = await crawl_with_report(
            origin=server.base, sample="on", links="off", state=str(state)
        )
    assert report is not None
    (segment,) = report["segments"]
    got = {
        s["url"].rsplit("/", 1)[1]: (s["outcome"], s["page_modified"]) for s in segment["samples"]
    }
    date = {"source": "json-ld", "field": "dateModified", "raw": stamp, "precision": "second"}
    assert got == {"clean.html": ("AGREE", date), "broken.html": ("AGREE", date)}
    with sqlite3.connect(state) as db:
        prints = dict(db.execute("SELECT path, fingerprint FROM urls").fetchall())
    clean, broken = (prints[f"/p/{name}.html"] for name in ("clean", "broken"))
    assert clean is not None
    assert broken == clean
