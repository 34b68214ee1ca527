"""Every fault code of the spider side ("the glue", ``GLUE_FAULTS``), visible in all three
places (issue 22): one WARNING naming the URL and the message, its stat counted every time,
and a ``{code, url, message}`` entry in the site report's ``faults``.

Five real crawls of one loopback mock server carry every code between them (the state file
crawl runs three times). Each expected fault is declared in :data:`EXPECTED`;
:func:`test_every_glue_fault_has_a_case` fails on a catalogue code without one, and each crawl
fails on a glue code it logged that it did not expect, or that the catalogue does not know
(``DiscoveryLog.log_once`` also refuses one outright). Nothing is sent anywhere but
127.0.0.1: a crawl whose origin is ``http://site.example/`` (to make loopback sitemaps
"private") requests nothing there, guessing off.
"""

from __future__ import annotations

import logging
import re
import socket
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.sitemaps import SitemapReader
from sitemapcrawl.sitemaps.errors import FAULT_CODES
from sitemapcrawl.spiders.discoverylog import GLUE_FAULTS, fault_key, fault_stat
from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from collections.abc import Iterator

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "hardening.md"
ORIGIN_B = "http://site.example/"  # never contacted: everything of crawl B is on loopback
MAX_DOWNLOAD = 4096
ROBOTS_MAX = 2048
LOCK_WAIT = 0.5
#: A soft 404 that never ends, answered 200: read no further than 1 MiB.
ENDLESS_HTML = "/_/endless?html=1&status=200"
#: Retries once (a 5xx is asked twice).
SETTINGS: dict[str, Any] = {"RETRY_TIMES": 1}
#: Crawl A: a body still arriving 5 % into its 10 s timeout is stopped (the drip's first
#: chunk comes 1 s after its headers); a download stops at 4 KiB.
READ_DEADLINE = 0.05


def urlset(*locs: str, pad: int = 0) -> str:
    urls = "".join(f"<url><loc>{u}</loc></url>" for u in locs)
    filler = f"<!--{'x' * pad}-->" if pad else ""
    return f'<urlset xmlns="{NS}">{urls}{filler}</urlset>'


def index(*locs: str, lastmod: str = "") -> str:
    date = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    children = "".join(f"<sitemap><loc>{u}</loc>{date}</sitemap>" for u in locs)
    return f'<sitemapindex xmlns="{NS}">{children}</sitemapindex>'


#: Bodies that are not sitemaps, by the code the spider gives them (its kind).
NOT_SITEMAPS = {
    "html": "<!DOCTYPE html><html><body><h1>Not found</h1></body></html>",
    "empty": "",
    "unknown": '{"sitemap": false}',
    "error_document": "<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>",
    "unknown_root": "<pages><page>{base}/a/odd</page></pages>",
}

FILES: dict[str, str] = {
    # crawl A: one file (or endpoint) per download, redirect, index and scope fault
    "a/robots.txt": "Sitemap: {base}/a/ok.xml\nSitemap: not a url\nSitemap: ftp://f.example/s\n",
    "a/ok.xml": urlset("{base}/a/page-1", "{base}/a/page-2"),
    "a/drip.xml": urlset(*(f"{{base}}/a/drip-{i}" for i in range(12))),
    # the first URL, then padding past the download cap, then one never read
    "a/big.xml": urlset("{base}/a/big-1", pad=2 * MAX_DOWNLOAD) + urlset("{base}/a/big-2"),
    "a/half.xml": urlset("{base}/a/half-1", pad=400) + urlset("{base}/a/half-2"),
    **{f"a/{kind}.xml": body for kind, body in NOT_SITEMAPS.items()},
    "a/self.xml": index("{base}/a/self.xml"),
    "a/foreign.xml": index("{alt}/a/f1.xml", "{alt}/a/f2.xml"),
    "a/deep.xml": index("{base}/a/deep2.xml"),
    "a/deep2.xml": index("{base}/a/d1.xml", "{base}/a/d2.xml"),
    "a/drop.xml": urlset(*(f"{{alt}}/a/other-{i}" for i in range(10))),
    "_redirects": "/a/ra.xml /a/rb.xml 302\n/a/rb.xml /a/ra.xml 302\n",
    # crawl B: a robots.txt that is an HTML page over its cap; private sitemaps
    "b/robots.txt": "<!DOCTYPE html>\n<html><body>\n"
    + "<p>not robots</p>\n" * 300
    + "</body></html>",
    "b/p1.xml": urlset("{base}/b/page"),
    # crawl C: an index that answers after the discovery budget; more sitemaps than allowed
    "c/index.xml": index("{base}/c/k1.xml", "{base}/c/k2.xml"),
    **{f"c/{name}.xml": urlset(f"{{base}}/c/{name}") for name in ("ok", "x", "y", "k1", "k2")},
    # crawl D: more URLs than max_urls
    "d/three.xml": urlset("{base}/d/1", "{base}/d/2", "{base}/d/3"),
    # crawl E: an index whose lastmods stand still while its children change
    "e/index.xml": index("{base}/e/c1.xml", "{base}/e/c2.xml", lastmod="2024-01-01"),
    "e/c1.xml": urlset("{base}/e/1"),
    "e/c2.xml": urlset("{base}/e/2"),
}


@dataclass(frozen=True)
class Expect:
    """A fault a crawl must show: its code, URL and message (a regex; ``{base}``,
    ``{alt}``, ``{port}`` are the server's), and how often its stat counts it (default:
    as many times as it is expected, one per URL)."""

    code: str
    url: str
    message: str
    count: int | None = None


def reader_message(kind: str) -> str:
    """What the reader says of a body that is not a sitemap (the glue logs it as is)."""
    reader = SitemapReader(NOT_SITEMAPS[kind].encode(), "http://127.0.0.1/a/x.xml")
    assert reader.sniff() == kind
    return re.escape(reader.faults[0].message)


def lit(text: str) -> str:
    """A message known whole: escaped, with the placeholders left to fill."""
    return re.escape(text).replace(r"\{", "{").replace(r"\}", "}")


EXPECTED: dict[str, list[Expect]] = {
    "A": [
        Expect("http_404", "{base}/a/missing.xml", lit("answered HTTP 404")),
        Expect("http_404", "{base}/_/status/404", lit("answered HTTP 404")),
        Expect("http_500", "{base}/_/status/500", lit("answered HTTP 500")),
        Expect(
            "http_304",
            "{base}/_/status/304",
            lit("answered 304 Not Modified without a stored copy"),
        ),
        Expect(
            "retry_after",
            "{base}/_/status/503?retry_after=3600",
            lit(
                "answered HTTP 503 asking to retry after '3600', longer than "
                "SITEMAPCRAWL_RETRY_AFTER_MAX: given up"
            ),
        ),
        Expect(
            "DownloadConnectionRefusedError",
            "http://127.0.0.1:{closed}/a/s.xml",
            lit("could not be fetched: ") + ".*[Cc]onnection.*refused.*",
        ),
        Expect(
            "too_slow",
            "{base}/_/drip/50/a/drip.xml",
            lit("download still running after 5% of its timeout (")
            + r"\d+"
            + lit(" bytes); stopped, reading what arrived"),
        ),
        Expect(
            "too_large",
            "{base}/a/big.xml",
            lit(f"download stopped at {MAX_DOWNLOAD} bytes; reading what arrived"),
        ),
        Expect(
            "dataloss",
            "{base}/_/reset/a/half.xml",
            lit("connection lost mid-body; reading what arrived"),
        ),
        *(Expect(kind, f"{{base}}/a/{kind}.xml", reader_message(kind)) for kind in NOT_SITEMAPS),
        Expect(
            "redirect_other_host",
            "{base}/_/redirect/301?to={alt}/a/ok.xml",
            lit("redirects to {alt}/a/ok.xml, on another host; not read (-a scope=off reads it)"),
        ),
        Expect(
            "too_many_redirects", "{base}/_/loop/0", lit("redirected more than 10 times; given up")
        ),
        Expect(
            "redirect_loop",
            "{base}/a/ra.xml",
            lit("redirects in a loop (back to {base}/a/ra.xml); given up"),
        ),
        Expect(
            "loop", "{base}/a/self.xml", lit("sitemap index loop cut (the file lists an ancestor)")
        ),
        Expect(
            "child_other_host",
            "{base}/a/foreign.xml",
            lit("lists {alt}/a/f")
            + "[12]"
            + lit(
                ".xml, on another host the site did not vouch for in robots.txt; "
                "not read (-a scope=off reads it)"
            ),
            count=2,
        ),
        Expect(
            "max_depth",
            "{base}/a/deep2.xml",
            lit("index deeper than max_depth=1; children skipped"),
            count=2,
        ),
        Expect(
            "scope_dropped",
            "{base}",  # (the origin as given)
            lit("10 of the ")
            + r"\d+"
            + lit(" URLs the sitemaps list were dropped by scope=")
            + r"\w+"
            + lit(" on other hosts: localhost:{port} (10); -a scope=off keeps them"),
            count=10,
        ),
        Expect(
            "robots_invalid_sitemap",
            "{base}/a/robots.txt",
            lit(
                "2 Sitemap line(s) skipped: not an http(s) URL a request can be made for "
                "(first: 'not a url')"
            ),
            count=2,
        ),
        Expect(
            "robots_unreachable",
            "{base}/_/status/500/a/robots.txt",
            lit(
                "robots.txt answered 500: the site is off limits (RFC 9309: complete "
                "disallow); no sitemap or page requested (-s ROBOTSTXT_OBEY=False overrides)"
            ),
        ),
    ],
    "B": [
        Expect(
            "robots_large",
            "{base}/b/robots.txt",
            lit("robots.txt is over ")
            + r"\d+"
            + lit(" bytes; read no further, every Sitemap line before the cut was kept"),
        ),
        Expect("robots_html", "{base}/b/robots.txt", lit("robots.txt is an HTML page; ignored")),
        *(
            Expect(
                "private",
                f"{{base}}/b/{name}",
                lit("sitemap on a private or loopback address; not requested"),
            )
            for name in ("p1.xml", "p2.xml")
        ),
        Expect(
            "nothing_found",
            ORIGIN_B,
            lit(
                "no URL found: no sitemap: robots.txt declares none and guessing is off "
                "(-a guess=fallback tries the usual locations); give one with "
                "-a sitemap_urls=URL"
            ),
        ),
    ],
    "C": [
        Expect("html", "{base}" + ENDLESS_HTML, reader_message("html")),
        Expect("timeout", "{base}/_/hang/30", lit("no answer in time, retries included: ") + ".+"),
        Expect(
            "max_sitemaps",
            "{base}/",
            lit("max_sitemaps=4 reached; later sitemaps skipped"),
            count=2,
        ),
        Expect(
            "time_budget",
            "{base}/",
            lit(
                "discovery has run 1 s (SITEMAPCRAWL_MAX_DISCOVERY_SECONDS); later sitemaps skipped"
            ),
            count=2,
        ),
    ],
    "D": [Expect("max_urls", "{base}/", lit("max_urls=1 reached; closing"))],
    "E2": [
        Expect(
            "index_lastmod_miss",
            "{base}/e/index.xml",
            lit("child {base}/e/c")
            + "[12]"
            + lit(
                ".xml changed while its <lastmod> in the index did not: this index's "
                "lastmods no longer let children be skipped"
            ),
            count=2,
        ),
    ],
    "E3": [
        Expect(
            "state_locked",
            "{base}/",
            lit("state file not used: ")
            + ".+"
            + lit(
                "; this run is not incremental and keeps no history (give each concurrent "
                "crawl its own file: -a state=PATH)"
            ),
        ),
    ],
}


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (a connection is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    root = tmp_path_factory.mktemp("glue-faults")
    for path, text in FILES.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    with MockServer(root=root) as mock:
        yield mock


def spider_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name == "sitemapcrawl.spiders.sitemap"
    ]


def check(
    name: str,
    report: dict[str, Any] | None,
    stats: dict[str, Any],
    warnings: list[str],
    **values: Any,
) -> None:
    """Every fault ``EXPECTED[name]`` lists is logged once, counted and reported; every
    glue fault the crawl recorded is one of them, and a code the catalogue knows."""
    assert report is not None
    expected = EXPECTED[name]
    reported = report["faults"]
    for fault in reported:  # no code outside the catalogues
        assert fault_key(fault["code"]) is not None or fault["code"] in FAULT_CODES, fault
    wanted = {(e.code, e.url.format(**values)) for e in expected}
    for fault in reported:  # no glue fault this crawl did not expect
        if fault["code"] not in FAULT_CODES:
            assert (fault["code"], fault["url"]) in wanted, fault
    for warning in warnings:  # nothing logged that the report does not list
        assert warning in [f"{f['url']}: {f['message']}" for f in reported], warning
    counts: Counter[str] = Counter()  # stat -> times counted (codes may share a stat)
    for e in expected:
        url = e.url.format(**values)
        found = [f for f in reported if (f["code"], f["url"]) == (e.code, url)]
        assert len(found) == 1, (e, reported)
        assert re.fullmatch(e.message.format(**values), found[0]["message"]), (e, found)
        assert warnings.count(f"{url}: {found[0]['message']}") == 1, (e, warnings)
        stat = "scope/dropped_count/other_host" if e.code == "scope_dropped" else fault_stat(e.code)
        counts["sitemapcrawl/" + stat] += e.count or 1
    assert {stat: stats.get(stat) for stat in counts} == dict(counts)


def placeholders(server: MockServer, **extra: Any) -> dict[str, Any]:
    return {"base": server.base, "alt": server.alt_base, "port": server.port, **extra}


# -- the crawls ------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_download_redirect_index_and_scope_faults(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Crawl A: a given sitemap (or robots.txt) per fault, and the files that show it."""
    values = placeholders(server, closed=free_port())
    # each fault's URL (but the site's, and an index's child), and the files behind them
    given = [
        e.url.format(**values)
        for e in EXPECTED["A"]
        if e.code not in ("scope_dropped", "max_depth")
    ]
    given += [f"{server.base}/a/{name}.xml" for name in ("ok", "drop", "deep")]
    _items, report, crawler = await crawl_with_report(
        settings={
            **SETTINGS,
            "SITEMAPCRAWL_MAX_DOWNLOAD_SIZE": MAX_DOWNLOAD,
            "SITEMAPCRAWL_READ_DEADLINE": READ_DEADLINE,
        },
        origin=server.base,
        sitemap_urls=",".join(dict.fromkeys(given)),
        max_depth="1",
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    check("A", report, our_stats(crawler), spider_warnings(caplog), **values)


@deferred_f_from_coro_f
async def test_robots_private_and_nothing_found(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Crawl B: the origin is a public name (never contacted), so sitemaps on loopback are
    private; its robots.txt, given by URL, is an HTML page over its cap."""
    values = placeholders(server)
    server.reset_requests()
    given = [f"{server.base}/b/robots.txt", f"{server.base}/b/p1.xml", f"{server.base}/b/p2.xml"]
    _items, report, crawler = await crawl_with_report(
        settings={**SETTINGS, "SITEMAPCRAWL_ROBOTS_MAX_SIZE": ROBOTS_MAX},
        origin=ORIGIN_B,
        sitemap_urls=",".join(given),
        guess="off",
    )
    assert server.requests() == ["/b/robots.txt"]  # the private sitemaps: never requested
    check("B", report, our_stats(crawler), spider_warnings(caplog), **values)


@deferred_f_from_coro_f
async def test_limits_a_timeout_and_an_endless_soft_404(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Crawl C: four sitemaps allowed of six; the index among them answers after 1.5 s,
    past the 1 s discovery budget, so its two children are skipped; one never answers;
    an endless HTML page answered 200 is read no further than 1 MiB."""
    given = [f"{server.base}/_/slow/1.5/c/index.xml", f"{server.base}{ENDLESS_HTML}"]
    given += [f"{server.base}/_/hang/30", f"{server.base}/c/ok.xml"]
    given += [f"{server.base}/c/{name}.xml" for name in ("x", "y")]
    _items, report, crawler = await crawl_with_report(
        settings={
            **SETTINGS,
            "SITEMAPCRAWL_MAX_DISCOVERY_SECONDS": 1,
            # a sitemap that never answers costs 2.5 s; the slow index answers before
            "SITEMAPCRAWL_SITEMAP_DEADLINE": 2.5,
        },
        sitemap_urls=",".join(given),
        max_sitemaps="4",
    )
    # an HTML page read no further than 1 MiB is that, not a body over the download cap
    assert report is not None
    assert [f["code"] for f in report["faults"] if f["code"] == "too_large"] == []
    check("C", report, our_stats(crawler), spider_warnings(caplog), **placeholders(server))


@deferred_f_from_coro_f
async def test_max_urls(server: MockServer, caplog: pytest.LogCaptureFixture) -> None:
    """Crawl D: the crawl closes at its first URL, and its report still goes out."""
    items, report, crawler = await crawl_with_report(
        settings=SETTINGS, sitemap_urls=f"{server.base}/d/three.xml", max_urls="1"
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "max_urls"
    assert len(items) == 1
    check("D", report, our_stats(crawler), spider_warnings(caplog), **placeholders(server))


@deferred_f_from_coro_f
async def test_state_file_faults(
    server: MockServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Crawl E, three runs on one state file: both children change while the index's
    lastmods stand still (run 2); another crawl holds the file (run 3)."""
    state = str(tmp_path / "state.sqlite")
    settings = {
        **SETTINGS,
        "SITEMAPCRAWL_CONDITIONAL_SITEMAPS": False,
        "SITEMAPCRAWL_INDEX_TRUST_MIN": 1000,  # the children are always fetched
        "SITEMAPCRAWL_STATE_LOCK_TIMEOUT": LOCK_WAIT,
    }
    given = f"{server.base}/e/index.xml"
    _, report, _ = await crawl_with_report(settings=settings, sitemap_urls=given, state=state)
    assert report is not None
    assert report["faults"] == []
    root = Path(server.root)
    for name in ("c1", "c2"):
        (root / "e" / f"{name}.xml").write_text(urlset(f"{{base}}/e/{name}-changed"))
    caplog.clear()
    _, report, crawler = await crawl_with_report(settings=settings, sitemap_urls=given, state=state)
    values = placeholders(server)
    check("E2", report, our_stats(crawler), spider_warnings(caplog), **values)
    caplog.clear()
    writer = sqlite3.connect(state, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another crawl's long write
    try:
        _, report, crawler = await crawl_with_report(
            settings=settings, sitemap_urls=given, state=state
        )
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    check("E3", report, our_stats(crawler), spider_warnings(caplog), **values)


# -- the catalogue ---------------------------------------------------------------------------


def test_every_glue_fault_has_a_case() -> None:
    """A code added to ``GLUE_FAULTS`` needs a crawl here; a case whose code the catalogue
    does not know fails too (each family needs one member)."""
    covered = {fault_key(e.code) for cases in EXPECTED.values() for e in cases}
    assert None not in covered
    assert covered == set(GLUE_FAULTS)


def test_the_catalogue_is_documented() -> None:
    """docs/hardening.md has a row for every code of the catalogue, with its stat."""
    text = DOCS.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([^`]+)` \| [^|]+ \| `([^`]+)`", text, flags=re.MULTILINE))
    assert {code: rows.get(code) for code in GLUE_FAULTS} == {
        code: fault.stat for code, fault in GLUE_FAULTS.items()
    }


def test_log_once_refuses_a_code_the_catalogues_do_not_know() -> None:
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from sitemapcrawl.crawlcontext import CrawlContext
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog

    log = DiscoveryLog(CrawlContext(), MemoryStatsCollector(get_crawler()), "http://a/", False)
    log.log_once("http_404", "http://a/s.xml", "answered HTTP 404")
    with pytest.raises(AssertionError, match="brand_new"):
        log.log_once("brand_new", "http://a/s.xml", "a fault nobody catalogued")
