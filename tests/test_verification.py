"""Lastmod verification against real loopback sites, one segment per archetype.

Each site is generated into a temporary directory at test time, with lastmods placed
relative to the moment of the test (the server's clock is the verification's "now").
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)  # reset when the site is built


def iso(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def page(modified: dt.datetime | None, published: dt.datetime | None = None) -> str:
    data: dict[str, Any] = {"@context": "https://schema.org", "@type": "Article", "headline": "x"}
    if modified is not None:
        data["dateModified"] = iso(modified)
    if published is not None:
        data["datePublished"] = iso(published)
    return (
        "<!DOCTYPE html><html><head><title>x</title>"
        f'<script type="application/ld+json">{json.dumps(data)}</script></head>'
        "<body><main><article><p>Some article text.</p></article></main></body></html>"
    )


def urlset(entries: list[tuple[str, str | None]], news: bool = False) -> str:
    rows = []
    for loc, lastmod in entries:
        extra = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        if news:
            extra += (
                "<news:news><news:publication><news:name>Daily</news:name>"
                "<news:language>en</news:language></news:publication>"
                f"<news:publication_date>{lastmod}</news:publication_date>"
                "<news:title>t</news:title></news:news>"
            )
        rows.append(f"<url><loc>{{base}}{loc}</loc>{extra}</url>")
    ns = ' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"' if news else ""
    return (
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"{ns}>'
        + "".join(rows)
        + "</urlset>"
    )


def build_site(root: Path) -> None:
    """Five segments: honest, generation time, stale, absent, and a news sitemap stamped
    with its generation time (the seed guide's first real failure), plus three pages that
    robots.txt disallows. Dates are relative to the moment the site is built."""
    global NOW  # noqa: PLW0603 - the crawl follows at once; its server clock is "now"
    NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
    (root / "sitemaps").mkdir(parents=True)
    segments: dict[str, str] = {}
    honest, gen, stale, absent = [], [], [], []
    for i in range(25):
        changed = NOW - dt.timedelta(days=3 + 41 * i, hours=i)
        honest.append((f"/honest/{i}", iso(changed)))
        write(root / "honest" / str(i), page(changed))
        gen.append((f"/gen/{i}", iso(NOW)))
        write(root / "gen" / str(i), page(NOW - dt.timedelta(days=30 + 20 * i)))
        old = NOW - dt.timedelta(days=700 + i)
        stale.append((f"/stale/{i}", iso(old)))
        write(root / "stale" / str(i), page(NOW - dt.timedelta(days=2 + i), published=old))
        absent.append((f"/absent/{i}", None))
        write(root / "absent" / str(i), page(NOW - dt.timedelta(days=5 * i)))
    news = [(f"/news/{i}", iso(NOW)) for i in range(15)]
    for i in range(15):
        write(root / "news" / str(i), page(NOW - dt.timedelta(hours=2 + 3 * i, minutes=17)))
    private = [(f"/private/{i}", iso(NOW - dt.timedelta(days=9 * i))) for i in range(3)]
    for i in range(3):
        write(root / "private" / str(i), page(NOW - dt.timedelta(days=9 * i)))
    segments = {
        "honest": urlset(honest),
        "gen": urlset(gen),
        "stale": urlset(stale),
        "absent": urlset(absent),
        "news": urlset(news, news=True),
        "private": urlset(private),
    }
    index = []
    for name, body in segments.items():
        write(root / "sitemaps" / f"{name}.xml", body)
        index.append(f"<sitemap><loc>{{base}}/sitemaps/{name}.xml</loc></sitemap>")
    write(
        root / "sitemap_index.xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(index)
        + "</sitemapindex>",
    )
    write(
        root / "robots.txt",
        "User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap_index.xml\n",
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def archetypes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    root = tmp_path_factory.mktemp("archetypes")
    build_site(root)
    with MockServer(root=root) as server:
        yield server


@deferred_f_from_coro_f
async def test_each_archetype_gets_its_verdict(archetypes: MockServer, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    items, report, crawler = await crawl_with_report(
        settings={"SITEMAPCRAWL_REPORT_PATH": str(report_path)},
        origin=archetypes.base,
        sample="on",
    )
    assert len(items) == 118
    assert report is not None
    verdicts = {s["segment"]: (s["verdict"], s["reason"]) for s in report["segments"]}
    assert verdicts == {
        "/sitemaps/absent.xml": (
            "ABSENT",
            "Only 0 of 25 URLs carry a usable lastmod (coverage 0.00 < 0.10); the sitemap "
            "serves for discovery only.",
        ),
        "/sitemaps/gen.xml": (
            "GENERATION_TIME",
            "100% of 25 lastmods fall in one 10min window centred 0.0 h before the server "
            "clock, and 25 of 25 sampled pages have an older modification date than the "
            "lastmod (Wilson lower bound 0.87 >= 0.30).",
        ),
        "/sitemaps/honest.xml": (
            "PROVISIONAL",
            "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80).",
        ),
        "/sitemaps/news.xml": (
            "GENERATION_TIME",
            "100% of 15 lastmods fall in one 10min window centred 0.0 h before the server "
            "clock, and only 15 sampled pages carry evidence (< 20): suspected from the "
            "sitemap alone, unconfirmed.",
        ),
        "/sitemaps/private.xml": (
            # robots.txt refuses every sampled page: none of them counts as evidence
            "UNVERIFIABLE",
            "Only 0 of 3 sampled pages carry page evidence (< 20, 3 could not be read).",
        ),
        "/sitemaps/stale.xml": (
            "STALE",
            "25 of 25 sampled pages were modified after their lastmod (25 with lastmod = "
            "datePublished; Wilson lower bound 0.87 >= 0.10).",
        ),
    }
    # A stale page's evidence: its modification date and the publication date its lastmod
    # repeats, each with where it was found and its precision.
    stale = next(s for s in report["segments"] if s["segment"] == "/sitemaps/stale.xml")
    first = next(s for s in stale["samples"] if s["url"].endswith("/stale/0"))
    assert (first["outcome"], first["page_modified"], first["page_published"]) == (
        "PUBDATE_AS_LASTMOD",
        {
            "source": "json-ld",
            "field": "dateModified",
            "raw": iso(NOW - dt.timedelta(days=2)),
            "precision": "second",
        },
        {
            "source": "json-ld",
            "field": "datePublished",
            "raw": iso(NOW - dt.timedelta(days=700)),
            "precision": "second",
        },
    )
    private = next(s for s in report["segments"] if s["segment"] == "/sitemaps/private.xml")
    assert {s["outcome"] for s in private["samples"]} == {"FETCH_FAILED:IgnoreRequest"}
    # Pages obey robots.txt: nothing under /private/ was requested; every other sampled
    # page was fetched exactly once, and the home page (links=sample, the default, follows
    # links from it and from the samples: this site has none, and no home page)
    requests = archetypes.requests()
    assert not [r for r in requests if r.startswith("/private/")]
    # robots.txt once: the spider's copy is handed to the robots middleware pages obey
    assert requests.count("/robots.txt") == 1
    pages = [r for r in requests if not r.startswith(("/sitemaps/", "/robots", "/sitemap_"))]
    assert len(pages) == len(set(pages)) == 116
    assert "/" in pages
    assert report["coverage"]["urls"]["links"] == 0
    assert report["coverage"]["broken_links"] == 0  # the home page (404) is no link
    assert report["sample"] == {
        "enabled": True,
        "segment_budget": 30,
        "site_budget": 150,
        "panel": 10,
        "seed": "sitemapcrawl",
        "requested": 118,
        "fetched": 115,
        "failed": 3,
    }
    assert report["site_verdict"] == {
        "verdict": "GENERATION_TIME",
        "segments_by_verdict": {
            "ABSENT": 1,
            "GENERATION_TIME": 2,
            "PROVISIONAL": 1,
            "STALE": 1,
            "UNVERIFIABLE": 1,
        },
        "urls_by_verdict": {
            "ABSENT": 25,
            "GENERATION_TIME": 40,
            "PROVISIONAL": 25,
            "STALE": 25,
            "UNVERIFIABLE": 3,
        },
        "usable_share": round(25 / 118, 4),
    }
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/lastmod/present_count"] == 93
    assert stats["sitemapcrawl/lastmod/missing_count"] == 25
    assert stats["sitemapcrawl/sample/outcome_count/AGREE"] == 25
    assert crawler.stats.get_value("finish_reason") == "finished"  # type: ignore[union-attr]
    assert json.loads(report_path.read_text())["segments"] == report["segments"]


@deferred_f_from_coro_f
async def test_a_large_sitemap_without_lastmod_is_absent(mockserver: MockServer) -> None:
    """The seed guide's second real failure: a 10,236-URL archive with no lastmod at all."""
    url = f"{mockserver.base}/_/gen/urlset?n=10236&prefix=/archive/"
    items, report, _ = await crawl_with_report(sitemap_urls=url)
    assert len(items) == 10236
    assert report is not None
    (segment,) = report["segments"]
    assert segment["segment"] == "/archive/"
    assert segment["verdict"] == "ABSENT"
    assert segment["reason"] == (
        "Only 0 of 10236 URLs carry a usable lastmod (coverage 0.00 < 0.10); the sitemap "
        "serves for discovery only."
    )
    assert report["sample"]["enabled"] is False
    assert report["site_verdict"]["usable_share"] == 0.0
