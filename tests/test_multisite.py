"""A crawl over several sites (``sitemap_urls`` on more than one host): one ``SiteReport``
per site, each with its own segments, counts, files, faults, sample budget and verdicts."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.downloadermiddlewares.privateredirect import PrivateRedirectMiddleware
from sitemapcrawl.htmlreport.extension import HtmlReportExtension
from sitemapcrawl.htmlreport.feed import read_runs
from sitemapcrawl.htmlreport.render import render_html
from sitemapcrawl.incremental.reports import read_reports
from tests.mockserver import MockServer
from tests.test_state import _page, iso
from tests.utils.crawl import crawl_with_reports, our_stats, scrapy_crawl

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

DAY = dt.timedelta(days=1)
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def page(modified: dt.datetime) -> str:
    return _page(modified, "Text.")


class TwoSites:
    """One loopback server under two host names: site A (127.0.0.1) lists /blog/ in a
    urlset (and a stray URL of site B, out of its scope); site B has an index of one good
    child and one that answers 404."""

    def __init__(self, root: Path) -> None:
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        self.lastmod = {
            "/blog/a.html": now - 30 * DAY,
            "/blog/b.html": now - 20 * DAY,
            "/news/d.html": now - 10 * DAY,
        }
        for loc, moment in self.lastmod.items():
            path = root / loc.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page(moment))
            os.utime(path, (moment.timestamp(), moment.timestamp()))
        (root / "blog" / "c.html").write_text(page(now - 5 * DAY))
        # the home page (the same under both host names): links to pages of both sitemaps
        links = "".join(
            f'<a href="/{p}">{p}</a>' for p in ("blog/a.html", "blog/c.html", "about.html")
        )
        (root / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
        (root / "about.html").write_text("<!DOCTYPE html><html><body>About</body></html>")
        lm = {loc: f"<lastmod>{iso(m)}</lastmod>" for loc, m in self.lastmod.items()}
        (root / "a.xml").write_text(
            f"<urlset {NS}>"
            f"<url><loc>{{base}}/blog/a.html</loc>{lm['/blog/a.html']}</url>"
            f"<url><loc>{{base}}/blog/b.html</loc>{lm['/blog/b.html']}</url>"
            "<url><loc>{alt}/blog/stray.html</loc></url></urlset>"
        )
        (root / "b.xml").write_text(
            f"<sitemapindex {NS}>"
            "<sitemap><loc>{alt}/b-child.xml</loc></sitemap>"
            "<sitemap><loc>{alt}/missing.xml</loc></sitemap></sitemapindex>"
        )
        (root / "b-child.xml").write_text(
            f"<urlset {NS}>"
            "<url><loc>{alt}/blog/c.html</loc></url>"
            f"<url><loc>{{alt}}/news/d.html</loc>{lm['/news/d.html']}</url></urlset>"
        )


@pytest.fixture(scope="module")
def two_sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TwoSites, MockServer]]:
    root = tmp_path_factory.mktemp("two")
    sites = TwoSites(root)
    with MockServer(root=root) as server:
        yield sites, server


def main_of(document: str) -> str:
    match = re.search(r"<main>.*</main>", document, re.DOTALL)
    assert match is not None
    return match.group(0)


@deferred_f_from_coro_f
async def test_each_site_gets_its_own_report(
    two_sites: tuple[TwoSites, MockServer], tmp_path: Path
) -> None:
    """Two reports, in site order, each with only its own site's share: segments, URL and
    sitemap counts, files, faults, sampled pages (the site budget is per site), verdicts.
    The report file holds both; the state file gives each with its own URLs; the HTML
    report draws each with its own URLs."""
    _, server = two_sites
    base, alt = server.base, server.alt_base
    feed = tmp_path / "urls.jsonl"
    items, reports, crawler = await crawl_with_reports(
        settings={
            "CONCURRENT_REQUESTS": 1,
            "SITEMAPCRAWL_SAMPLE_SITE_BUDGET": 1,
            "SITEMAPCRAWL_REPORT_PATH": str(tmp_path / "report.json"),
            "SITEMAPCRAWL_STATE_PATH": str(tmp_path / "state.sqlite"),
            "SITEMAPCRAWL_HTML_REPORT_PATH": str(tmp_path / "report.html"),
            "EXTENSIONS": {HtmlReportExtension: 100},
            "FEEDS": {str(feed): {"format": "jsonlines"}},
        },
        sitemap_urls=f"{base}/a.xml,{alt}/b.xml",
        sample="on",
        links="off",
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") is None
    assert sorted((i["url"], i["segment"]) for i in items) == [
        (f"{base}/blog/a.html", f"{base}/"),
        (f"{base}/blog/b.html", f"{base}/"),
        (f"{alt}/blog/c.html", f"{alt}/b-child.xml"),
        (f"{alt}/news/d.html", f"{alt}/b-child.xml"),
    ]
    assert [r["origin"] for r in reports] == [base, alt]
    a, b = reports
    assert a["sitemaps"] == {
        "sitemaps/requested_count": 1,
        "sitemaps/parsed_count": 1,
        "sitemaps/parsed_count/urlset": 1,
        "sitemaps/done_count": 1,
        "files": [
            {
                "url": f"{base}/a.xml",
                "found_via": "given",
                "status": 200,
                "kind": "urlset",
                "urls": 3,
                "sitemaps": 0,
            }
        ],
    }
    assert b["sitemaps"] == {
        "sitemaps/requested_count": 3,
        "sitemaps/parsed_count": 2,
        "sitemaps/parsed_count/sitemapindex": 1,
        "sitemaps/parsed_count/urlset": 1,
        "sitemaps/done_count": 3,
        "sitemaps/failed_count": 1,
        "sitemaps/failed_count/http_404": 1,
        "files": [
            {
                "url": f"{alt}/b.xml",
                "found_via": "given",
                "status": 200,
                "kind": "sitemapindex",
                "urls": 0,
                "sitemaps": 2,
            }
        ],
    }
    # site A's stray URL on site B's host is out of A's scope: counted for A only
    assert a["urls"] == {
        "found": 2,
        "duplicates": 0,
        "out_of_scope": 1,
        "lastmod_present": 2,
        "lastmod_missing": 0,
        "lastmod_invalid": 0,
    }
    assert b["urls"] == {
        "found": 2,
        "duplicates": 0,
        "out_of_scope": 0,
        "lastmod_present": 1,
        "lastmod_missing": 1,
        "lastmod_invalid": 0,
    }
    assert (a["faults"], a["errors"], a["limits"]) == ([], {}, {})
    assert (b["faults"], b["errors"], b["limits"]) == (
        [{"code": "http_404", "url": f"{alt}/missing.xml", "message": "answered HTTP 404"}],
        {},
        {},
    )
    assert [(s["segment"], s["urls"], s["verdict"]) for s in a["segments"]] == [
        (f"{base}/", 2, "UNVERIFIABLE")
    ]
    assert [(s["segment"], s["urls"], s["verdict"]) for s in b["segments"]] == [
        (f"{alt}/b-child.xml", 2, "PARTIAL")
    ]
    # SITEMAPCRAWL_SAMPLE_SITE_BUDGET = 1 is each site's: one page each (a crawl-wide
    # budget gave 1 page in all).
    # Which of the two is drawn is a seeded hash of the whole URL, the test server's
    # port included.
    for report, pages in (
        (a, ["/blog/a.html", "/blog/b.html"]),
        (b, ["/blog/c.html", "/news/d.html"]),
    ):
        origin = report["origin"]
        (segment,) = report["segments"]
        (sampled,) = [s["url"] for s in segment["samples"]]
        assert sampled in [origin + p for p in pages]
        assert {k: report["sample"][k] for k in ("requested", "fetched", "failed")} == {
            "requested": 1,
            "fetched": 1,
            "failed": 0,
        }
        assert report["sample"]["site_budget"] == 1
    assert a["site_verdict"] == {
        "verdict": "UNVERIFIABLE",
        "segments_by_verdict": {"UNVERIFIABLE": 1},
        "urls_by_verdict": {"UNVERIFIABLE": 2},
        "usable_share": 0.0,
    }
    assert b["site_verdict"]["urls_by_verdict"] == {"PARTIAL": 2}
    stats = our_stats(crawler)
    sampled = {k: v for k, v in stats.items() if k.startswith("sitemapcrawl/sample/")}
    outcomes = {k: sampled.pop(k) for k in list(sampled) if "/outcome_count/" in k}
    # both segments are undecided, but their 2 URLs can never carry 20 pages of evidence:
    # nothing is escalated (test_page_inputs: an escalation over the site budget)
    assert sampled == {
        "sitemapcrawl/sample/requested_count": 2,
        "sitemapcrawl/sample/fetched_count": 2,
    }
    assert sum(outcomes.values()) == 2
    assert stats["sitemapcrawl/urls/found_count"] == 4
    assert stats["sitemapcrawl/verdict_count/UNVERIFIABLE"] == 1
    assert stats["sitemapcrawl/verdict_count/PARTIAL"] == 1

    # the report file: both reports, as the feed has them
    assert json.loads((tmp_path / "report.json").read_text()) == reports
    # the state file: each report with its own site's URLs
    got = [
        (r["origin"], [i["url"] for i in urls])
        for r, urls in read_reports(tmp_path / "state.sqlite")
    ]
    assert got == [
        (base, [f"{base}/blog/a.html", f"{base}/blog/b.html"]),
        (alt, [f"{alt}/blog/c.html", f"{alt}/news/d.html"]),
    ]
    # the feed and the HTML report: each site's report drawn with its own URLs
    runs, left_out = read_runs(feed)
    assert left_out == 0
    assert [(r.report["origin"], r.tally.items, sorted(r.tally.segments)) for r in runs] == [
        (base, 2, [f"{base}/"]),
        (alt, 2, [f"{alt}/b-child.xml"]),
    ]
    assert [sorted(r.tally.files) for r in runs] == [[f"{base}/a.xml"], [f"{alt}/b-child.xml"]]
    document = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert main_of(document) == main_of(render_html(runs))
    assert [main_of(document).count(f'Site: <a href="{o}"') for o in (base, alt)] == [1, 1]


@deferred_f_from_coro_f
async def test_max_urls_closes_every_sites_report(
    two_sites: tuple[TwoSites, MockServer], tmp_path: Path
) -> None:
    """A crawl over several sites stopped by ``max_urls`` still ends with one report per
    site; the limit and its fault are crawl-wide, so each report tells them."""
    _, server = two_sites
    base, alt = server.base, server.alt_base
    items, reports, crawler = await crawl_with_reports(
        settings={"CONCURRENT_REQUESTS": 1},
        sitemap_urls=f"{base}/a.xml,{alt}/b.xml",
        max_urls=3,
        links="off",
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "max_urls"
    assert len(items) == 3
    assert [r["origin"] for r in reports] == [base, alt]
    fault = {"code": "max_urls", "url": f"{base}/", "message": "max_urls=3 reached; closing"}
    a, b = reports
    assert (a["limits"], a["faults"]) == ({"max_urls_count": 1}, [fault])
    assert (b["limits"], b["faults"]) == ({"max_urls_count": 1}, [fault])
    assert sum(r["urls"]["found"] for r in reports) == 3
    assert {s["segment"]: s["urls"] for r in reports for s in r["segments"]} == {
        f"{base}/": 2,
        f"{alt}/b-child.xml": 1,
    }


@deferred_f_from_coro_f
async def test_links_are_followed_on_each_site(
    two_sites: tuple[TwoSites, MockServer], tmp_path: Path
) -> None:
    """``links=full`` over several sites: each site's links are followed from its own home
    page, within its own budget; its link-only URLs carry their site in their segment, and
    each report has its own coverage."""
    _, server = two_sites
    base, alt = server.base, server.alt_base
    feed = tmp_path / "urls.jsonl"
    items, reports, crawler = await crawl_with_reports(
        settings={"CONCURRENT_REQUESTS": 1, "FEEDS": {str(feed): {"format": "jsonlines"}}},
        sitemap_urls=f"{base}/a.xml,{alt}/b.xml",
        links="full",
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") is None
    link_only = sorted((i["url"], i["segment"]) for i in items if i["found_via"] == "links")
    assert link_only == [
        (f"{base}/", f"{base}/"),  # the home page is in no sitemap
        (f"{base}/about.html", f"{base}/"),
        (f"{base}/blog/c.html", f"{base}/blog/"),
        (f"{alt}/", f"{alt}/"),
        (f"{alt}/about.html", f"{alt}/"),
        (f"{alt}/blog/a.html", f"{alt}/blog/"),
    ]
    a, b = reports
    for report in (a, b):
        urls = report["coverage"]["urls"]
        assert {k: urls[k] for k in ("both", "sitemap_only", "link_only")} == {
            "both": 1,
            "sitemap_only": 1,
            "link_only": 3,
        }
    # each site's listed URLs, as its segments saw links reach them
    assert [{s["segment"]: s["coverage"]["both"] for s in r["segments"]} for r in reports] == [
        {f"{base}/": 1},
        {f"{alt}/b-child.xml": 1},
    ]
    runs, _ = read_runs(feed)
    assert [(r.report["origin"], r.tally.items, r.tally.link_only) for r in runs] == [
        (base, 2, 3),
        (alt, 2, 3),
    ]


@deferred_f_from_coro_f
async def test_incremental_runs_report_each_sites_own_decisions(
    two_sites: tuple[TwoSites, MockServer], tmp_path: Path
) -> None:
    """A second run with ``since=last``: each site's report counts the decisions of its
    own URLs and segments only, and together they make the crawl's."""
    _, server = two_sites
    base, alt = server.base, server.alt_base
    state = str(tmp_path / "state.sqlite")
    args = {"sitemap_urls": f"{base}/a.xml,{alt}/b.xml", "links": "off", "state": state}
    await crawl_with_reports(settings={"CONCURRENT_REQUESTS": 1}, **args)
    items, reports, crawler = await crawl_with_reports(
        settings={"CONCURRENT_REQUESTS": 1}, since="last", **args
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("log_count/ERROR") is None
    a, b = (r["incremental"] for r in reports)
    assert sorted(a["segments"]) == [f"{base}/"]
    assert sorted(b["segments"]) == [f"{alt}/b-child.xml"]
    assert (a["urls"], b["urls"]) == (2, 2)
    assert a["since"] == b["since"] == "last"
    decided: dict[str, int] = {}
    for item in items:
        reason = item["refetch_reason"]
        decided[reason] = decided.get(reason, 0) + 1
    pooled: dict[str, int] = {}
    for part in (a, b):
        for reason, count in part["by_reason"].items():
            pooled[reason] = pooled.get(reason, 0) + count
    assert pooled == decided
    # no page was fetched on the first run: every URL is refetched, for want of history
    assert (a["by_reason"], a["refetch"]) == ({"no_history": 2}, 2)
    assert (b["by_reason"], b["refetch"]) == ({"no_history": 2}, 2)
    assert [r["state"]["run"] for r in reports] == [2, 2]


def test_a_redirect_to_a_private_address_is_counted_for_its_site() -> None:
    """``PrivateRedirectMiddleware`` refuses a sitemap that redirects to the cloud metadata
    address, and in a crawl over several sites counts it for the site whose sitemap it was
    (the first URL of the chain; a real crawl's redirect to 169.254.x cannot be made on a
    loopback-only test machine: tests/test_hardening.py does it through a resolver)."""
    crawler = get_crawler(settings_dict={})
    verification = crawl_context(crawler)
    verification.set_sites(["https://a.example/", "https://b.example/"])
    guard = PrivateRedirectMiddleware.from_crawler(crawler)
    moved = Request(
        "http://169.254.169.254/latest/meta-data/",
        meta={"redirect_urls": ["https://a.example/sitemap.xml"]},
    )
    with pytest.raises(IgnoreRequest):
        guard.process_request(moved)
    assert crawler.stats is not None
    assert crawler.stats.get_stats() == {"sitemapcrawl/sitemaps/private_address_count": 1}
    assert verification.site_stats == {
        "https://a.example/": {"sitemapcrawl/sitemaps/private_address_count": 1},
        "https://b.example/": {},
    }


def _scrapy(out: Path, sitemap_urls: str, *extra: str) -> str:
    return scrapy_crawl(out, "-a", f"sitemap_urls={sitemap_urls}", "-a", "links=off", *extra)


def test_pause_and_resume_keeps_each_sites_files_and_faults(
    two_sites: tuple[TwoSites, MockServer], tmp_path: Path
) -> None:
    """``JOBDIR`` pause and resume of a crawl over several sites: the resumed run ends with
    one report per site, whose top-level files and faults are those of an uninterrupted
    run (what was found before the pause is kept, each with its site)."""
    _, server = two_sites
    given = f"{server.base}/a.xml,{server.alt_base}/b.xml"
    _scrapy(tmp_path / "whole.jsonl", given)
    jobdir = f"JOBDIR={tmp_path / 'job'}"
    first = _scrapy(tmp_path / "parts.jsonl", given, "-s", jobdir, "-s", "CLOSESPIDER_PAGECOUNT=2")
    assert "'finish_reason': 'closespider_pagecount'" in first
    assert "sitemaps not read yet were kept for later" in first
    second = _scrapy(tmp_path / "parts.jsonl", given, "-s", jobdir)
    assert "'finish_reason': 'finished'" in second
    assert "Resuming:" in second

    def records(name: str) -> list[dict[str, Any]]:
        lines = (tmp_path / name).read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    whole = [r for r in records("whole.jsonl") if "url" not in r]
    *_, last_a, last_b = [r for r in records("parts.jsonl") if "url" not in r]
    assert [r["origin"] for r in whole] == [last_a["origin"], last_b["origin"]]
    for uninterrupted, resumed in zip(whole, (last_a, last_b), strict=True):
        assert resumed["sitemaps"]["files"] == uninterrupted["sitemaps"]["files"]
        assert resumed["faults"] == uninterrupted["faults"]
    urls = sorted(r["url"] for r in records("parts.jsonl") if "url" in r)
    assert urls == sorted(r["url"] for r in records("whole.jsonl") if "url" in r)
