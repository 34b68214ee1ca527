"""The HTML site report: the renderer, the end-of-crawl extension, the command, and the
report opened in headless Chromium (Debian's ``chromium``; its absence fails)."""

from __future__ import annotations

import base64
import datetime as dt
import doctest
import json
import logging
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PIL import Image
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from websockets.sync.client import connect

import sitemapcrawl.extensions.progress
from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.extensions.progress import SitemapProgressExtension
from sitemapcrawl.htmlreport import collect, feed, markup, plots, render
from sitemapcrawl.htmlreport.collect import LastmodHistogram, SiteTally
from sitemapcrawl.htmlreport.extension import HtmlReportExtension
from sitemapcrawl.htmlreport.feed import FeedError, iter_feed, read_runs
from sitemapcrawl.htmlreport.markup import Markup, el
from sitemapcrawl.htmlreport.render import render_html, render_report
from sitemapcrawl.spiders.arguments import parse_arguments
from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, project_settings

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from websockets.sync.client import ClientConnection

ROOT = Path(__file__).resolve().parents[1]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def seconds(text: str) -> int:
    return int((dt.datetime.fromisoformat(text) - EPOCH).total_seconds())


def iso(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the histogram and the tally -----------------------------------------------------------


def test_histogram_counts_each_bin_exactly_and_coarsens_exactly() -> None:
    values = [
        "2024-05-01T10:00:00Z",
        "2024-05-01T10:00:00Z",
        "2024-05-01T10:00:59Z",
        "2024-05-01T10:01:00Z",
        "2024-05-01T23:59:59Z",
        "2024-05-02T00:00:00Z",
        "2024-06-30T12:00:00Z",
    ]
    histogram = LastmodHistogram(max_bins=1000)
    for value in values:
        histogram.add(seconds(value))
    assert histogram.level == "second"
    assert histogram.total == 7
    assert histogram.sorted_bins() == [
        (seconds("2024-05-01T10:00:00Z"), seconds("2024-05-01T10:00:01Z"), 2),
        (seconds("2024-05-01T10:00:59Z"), seconds("2024-05-01T10:01:00Z"), 1),
        (seconds("2024-05-01T10:01:00Z"), seconds("2024-05-01T10:01:01Z"), 1),
        (seconds("2024-05-01T23:59:59Z"), seconds("2024-05-02T00:00:00Z"), 1),
        (seconds("2024-05-02T00:00:00Z"), seconds("2024-05-02T00:00:01Z"), 1),
        (seconds("2024-06-30T12:00:00Z"), seconds("2024-06-30T12:00:01Z"), 1),
    ]
    assert histogram.sorted_bins("minute") == [
        (seconds("2024-05-01T10:00:00Z"), seconds("2024-05-01T10:01:00Z"), 3),
        (seconds("2024-05-01T10:01:00Z"), seconds("2024-05-01T10:02:00Z"), 1),
        (seconds("2024-05-01T23:59:00Z"), seconds("2024-05-02T00:00:00Z"), 1),
        (seconds("2024-05-02T00:00:00Z"), seconds("2024-05-02T00:01:00Z"), 1),
        (seconds("2024-06-30T12:00:00Z"), seconds("2024-06-30T12:01:00Z"), 1),
    ]
    assert histogram.sorted_bins("day") == [
        (seconds("2024-05-01T00:00:00Z"), seconds("2024-05-02T00:00:00Z"), 5),
        (seconds("2024-05-02T00:00:00Z"), seconds("2024-05-03T00:00:00Z"), 1),
        (seconds("2024-06-30T00:00:00Z"), seconds("2024-07-01T00:00:00Z"), 1),
    ]
    assert histogram.sorted_bins("month") == [
        (seconds("2024-05-01T00:00:00Z"), seconds("2024-06-01T00:00:00Z"), 6),
        (seconds("2024-06-01T00:00:00Z"), seconds("2024-07-01T00:00:00Z"), 1),
    ]
    # The span is 60 days: a hundred bars at most means bars of a day.
    assert histogram.display_level(max_bars=100) == "day"
    assert histogram.display_level(max_bars=1) == "year"

    # Past max_bins the histogram itself coarsens, level by level, and stays exact.
    small = LastmodHistogram(max_bins=3)
    for value in values:
        small.add(seconds(value))
    assert small.level == "day"
    assert small.sorted_bins() == histogram.sorted_bins("day")
    with pytest.raises(ValueError, match="cannot be split"):
        small.sorted_bins("hour")


def test_histogram_memory_is_bounded_by_max_bins() -> None:
    histogram = LastmodHistogram(max_bins=50)
    start = seconds("2000-01-01T00:00:00Z")
    for step in range(20_000):
        histogram.add(start + step * 37_171)  # about 23.6 years, every 10.3 hours
        assert len(histogram.bins) <= 50
    assert histogram.level == "year"
    assert histogram.total == 20_000
    assert sum(count for _, _, count in histogram.sorted_bins()) == 20_000
    assert [b[0] for b in histogram.sorted_bins()][:2] == [
        seconds("2000-01-01T00:00:00Z"),
        seconds("2001-01-01T00:00:00Z"),
    ]


def test_tally_counts_items_by_segment_flag_file_and_refetch_reason() -> None:
    tally = SiteTally()
    base = {"sitemap": "https://s.example/a.xml", "found_via": "robots", "depth": 1}
    items: list[dict[str, Any]] = [
        {**base, "url": "u1", "segment": "/a/", "lastmod": "2024-05-01T10:00:00Z"},
        {**base, "url": "u2", "segment": "/a/", "lastmod": "2024-05-01T10:00:00.5Z"},
        {**base, "url": "u3", "segment": "/a/", "lastmod": None, "lastmod_raw": None},
        {
            **base,
            "url": "u4",
            "segment": "/a/",
            "lastmod": None,
            "lastmod_raw": "yesterday",
            "lastmod_flags": ["invalid"],
        },
        {
            **base,
            "url": "u5",
            "segment": "/a/",
            "lastmod": "1970-01-01T00:00:00Z",
            "lastmod_flags": ["date_only", "sentinel"],
        },
        {
            **base,
            "url": "u6",
            "segment": "/b/",
            "lastmod": "9998-01-01T00:00:00Z",
            "lastmod_flags": ["future"],
            "sitemap": "https://s.example/b.xml",
            "refetch": True,
            "refetch_reason": "lastmod_changed",
        },
        {
            **base,
            "url": "u7",
            "segment": "/b/",
            "lastmod": "2024-05-03T00:00:00Z",
            "lastmod_flags": ["date_only"],
            "sitemap": "https://s.example/b.xml",
            "refetch": False,
            "refetch_reason": "unchanged",
        },
    ]
    for item in items:
        tally.add_item(item)
    a, b = tally.segments["/a/"], tally.segments["/b/"]
    assert (a.urls, a.lastmod, a.missing, a.invalid) == (5, 3, 1, 1)
    assert dict(a.flags) == {"invalid": 1, "date_only": 1, "sentinel": 1}
    assert dict(a.not_plotted) == {"sentinel": 1}
    assert a.histogram.sorted_bins() == [
        (seconds("2024-05-01T10:00:00Z"), seconds("2024-05-01T10:00:01Z"), 2)
    ]
    assert (b.urls, b.lastmod, b.missing, b.invalid) == (2, 2, 0, 0)
    assert dict(b.not_plotted) == {"future": 1}
    assert b.histogram.total == 1
    assert tally.files == {
        "https://s.example/a.xml": ["robots", 1, 5],
        "https://s.example/b.xml": ["robots", 1, 2],
    }
    assert dict(tally.refetch) == {(True, "lastmod_changed"): 1, (False, "unchanged"): 1}
    assert tally.items == 7


# -- escaping ------------------------------------------------------------------------------

HOSTILE = "<script>console.error('pwned')</script>"


def test_markup_escapes_children_and_attributes_exactly() -> None:
    assert el("td", HOSTILE, title='a"b') == (
        '<td title="a&quot;b">&lt;script&gt;console.error(&#x27;pwned&#x27;)&lt;/script&gt;</td>'
    )
    assert el("p", Markup("<b>ours</b>"), " & ", 3) == "<p><b>ours</b> &amp; 3</p>"
    assert el("meta", charset="utf-8") == '<meta charset="utf-8">'


class _Tags(HTMLParser):
    """Every start tag and its attributes, and every id, of a document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend(attrs)
        self.ids.extend(value or "" for name, value in attrs if name == "id")


def hostile_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A report and URL items with markup everywhere site data can reach."""
    t_ref = "2024-05-10T12:00:00Z"
    segment = f"/s/{HOSTILE}.xml"
    report: dict[str, Any] = {
        "origin": f"https://evil.example/{HOSTILE}",
        "generated_at": t_ref,
        "sitemaps": {
            "robots/sitemaps_count": 1,
            f"sitemaps/failed_count/{HOSTILE}": 2,
            "files": [
                {
                    "url": f"https://evil.example/s.xml?{HOSTILE}",
                    "found_via": HOSTILE,
                    "status": 404,
                    "error": HOSTILE,
                }
            ],
        },
        "urls": {"found": 3, "lastmod_present": 2},
        "limits": {HOSTILE: 1},
        "errors": {HOSTILE: 4},
        "segments": [
            {
                "segment": segment,
                "urls": 3,
                "news": False,
                "sitemaps": [f"javascript:alert(1)//{HOSTILE}"],
                "t_ref": t_ref,
                "clock_skew_seconds": 0.0,
                "verdict": HOSTILE,
                "reason": f"Because {HOSTILE} & more",
                "evidence": {
                    "n_sampled": 5,
                    "n_ev": 1,
                    "n_unread": 3,
                    "bound": {"proportion": HOSTILE},
                },
                "page_problems": {HOSTILE: 2},
                "l0": {HOSTILE: 0.5},
                "outcomes": {},
                "samples": [
                    {
                        "url": f"https://evil.example/p?q={HOSTILE}",
                        "stratum": HOSTILE,
                        "lastmod": t_ref,
                        "status": 200,
                        "page_modified": {"raw": HOSTILE, "source": "meta", "field": HOSTILE},
                        "etag": HOSTILE,
                        "outcome": HOSTILE,
                    }
                ],
            }
        ],
        "site_verdict": {"verdict": HOSTILE, "urls_by_verdict": {HOSTILE: 3}},
        "sample": {"seed": HOSTILE},
        "incremental": {"since": HOSTILE, "by_reason": {HOSTILE: 2}},
        "state": {"path": HOSTILE},
        "coverage": {"sitemap_only": 1, HOSTILE: 2},
    }
    items = [
        {
            "url": f"https://evil.example/{HOSTILE}/{i}",
            "segment": segment,
            "lastmod": "2024-05-10T11:59:00Z",
            "sitemap": f"https://evil.example/{HOSTILE}.xml",
            "found_via": HOSTILE,
            "depth": 0,
            "refetch": True,
            "refetch_reason": HOSTILE,
        }
        for i in range(2)
    ]
    items.append({"url": "x", "segment": HOSTILE, "lastmod": None, "sitemap": "x"})
    return report, items


def test_renderer_escapes_every_site_value() -> None:
    report, items = hostile_run()
    document = render_report(report, items)
    escaped = "&lt;script&gt;console.error(&#x27;pwned&#x27;)&lt;/script&gt;"
    parser = _Tags()
    parser.feed(document)
    assert "script" not in parser.tags
    assert [name for name, _ in parser.attributes if name.startswith("on")] == []
    assert "<script" not in document.lower()
    # Each hostile value is shown, escaped, where it belongs.
    assert f"<title>Sitemap report: https://evil.example/{escaped}</title>" in document
    assert f'<td class="reason">Because {escaped} &amp; more</td>' in document
    assert f'data-segment="/s/{escaped}.xml"' in document
    assert f'<span class="verdict" style="background:#6c7a7d">{escaped}</span>' in document
    assert f"<tr><th>{escaped}</th><td class=" in document  # error codes, limits
    # A javascript: URL is text, never a link; http(s) URLs are links.
    assert 'href="javascript' not in document
    assert f"<td>javascript:alert(1)//{escaped}</td>" in document
    assert (
        f'<a href="https://evil.example/p?q={escaped}" rel="noopener noreferrer nofollow">'
        in document
    )
    # A segment's sample: its size, pages with evidence, unread pages and page problems.
    assert f"5 sampled, 1 with evidence, 3 unread; 2 {escaped}" in document
    # Where the sitemaps were found: one row per top-level file.
    assert (
        f'<tr><td><a href="https://evil.example/s.xml?{escaped}" rel="noopener noreferrer '
        f'nofollow">https://evil.example/s.xml?{escaped}</a></td><td>{escaped}</td>'
        f"<td>404</td><td>{escaped}</td><td>—</td><td>—</td></tr>"
    ) in document
    # Segments and refetch reasons seen only in the items are listed too.
    assert f'<tr data-segment="{escaped}"><td class="url">{escaped}</td>' in document
    assert f'<td>refetch</td><td>{escaped}</td><td class="num">2</td>' in document


def test_render_is_deterministic_with_unique_ids() -> None:
    report, items = hostile_run()
    second = dict(report, origin="https://two.example/")
    runs = [
        feed.Run(report, _tally(items)),
        feed.Run(second, _tally(items)),
    ]
    first = render_html(runs, source="f.jsonl")
    assert render_html(runs, source="f.jsonl") == first
    parser = _Tags()
    parser.feed(first)
    duplicates = sorted({i for i in parser.ids if parser.ids.count(i) > 1})
    assert duplicates == []
    # Two runs, each with a timeline and one histogram: four inline SVG plots.
    assert first.count('<svg role="img" class="plot"') == 4
    # Nothing to load: no src at all; SVG references stay inside the document; only
    # links (<a>) point out, and only over http(s).
    assert re.findall(r"\ssrc=", first) == []
    references = re.findall(r'<(\w+)[^>]*?\s(?:xlink:)?href="([^"]*)"', first)
    assert references
    for tag, target in references:
        allowed = ("#", "http://", "https://") if tag == "a" else ("#",)
        assert target.startswith(allowed), (tag, target)


def _tally(items: list[dict[str, Any]]) -> SiteTally:
    tally = SiteTally()
    for item in items:
        tally.add_item(item)
    return tally


def test_sections_without_data_say_so() -> None:
    report = {
        "origin": "https://s.example",
        "generated_at": "2024-05-10T12:00:00Z",
        "segments": [],
        "site_verdict": {},
        "incremental": {},
        "state": {},
    }
    document = render_report(report, [])
    for sentence in (
        "No segment: no URL was found.",
        "Link-following not run",
        "No fault met and no limit hit.",
        "Not an incremental run.",
        "No state file was used.",
        "No lastmod to plot.",
    ):
        assert sentence in document


def test_pure_modules_do_not_import_scrapy_or_twisted() -> None:
    code = (
        "import sys\n"
        "import sitemapcrawl.htmlreport.render, sitemapcrawl.htmlreport.feed\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted'))\n"
        "sys.stdout.write(repr(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout == "[]"


@pytest.mark.parametrize(
    "module",
    [collect, feed, markup, plots, render, sitemapcrawl.extensions.progress],
    ids=lambda module: module.__name__,
)
def test_doctests(module: Any) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# -- reading feeds -------------------------------------------------------------------------

REPORT = {
    "origin": "https://s.example",
    "generated_at": "2024-05-10T12:00:00Z",
    "segments": [
        {
            "segment": "/a/",
            "urls": 2,
            "t_ref": "2024-05-10T12:00:00Z",
            "verdict": "GENERATION_TIME",
            "reason": "r",
        }
    ],
    "site_verdict": {"verdict": "GENERATION_TIME"},
    "incremental": {},
    "state": {},
}
ITEMS = [
    {"url": f"https://s.example/a/{i}", "segment": "/a/", "lastmod": "2024-05-10T11:59:58Z"}
    for i in range(2)
]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_json(path: Path, records: list[dict[str, Any]]) -> Path:
    """The layout of Scrapy's JsonItemExporter: ``[``, one element a line, ``]``."""
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]", encoding="utf-8")
    return path


def test_jsonl_and_json_feeds_give_the_same_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [*ITEMS, REPORT, {"url": "https://s.example/é", "segment": "/b/" * 500}, REPORT]
    lines = write_jsonl(tmp_path / "f.jsonl", records)
    array = write_json(tmp_path / "f.json", records)
    monkeypatch.setattr(feed, "_CHUNK", 7)  # elements and UTF-8 characters span chunks
    assert list(iter_feed(lines)) == records
    assert list(iter_feed(array)) == records
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + array.read_bytes())
    assert list(iter_feed(bom)) == records
    runs, left = read_runs(array)
    assert [run.tally.items for run in runs] == [2, 1]
    assert left == 0
    runs, left = read_runs(write_jsonl(tmp_path / "g.jsonl", [*records, *ITEMS]))
    assert left == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "empty file, not a feed"),
        (b"url,lastmod\n", "not a JSON or JSON Lines feed (starts with 'u')"),
        (b'{"url": "u"}\n{"url": \n', "line 2: not JSON"),
        (b'[{"url": "u"}, 3]', "element 1: not a JSON object"),
        (b'[{"url": "u"}', "the JSON array is not closed"),
        (b'{"url": "u", "segment": "/"}\n', "no SiteReport in this feed"),
    ],
)
def test_bad_feeds_are_clear_errors(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "feed.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(FeedError, match=re.escape(message)):
        read_runs(path)


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("create table t (x)")
    db.close()
    before = path.read_bytes()
    with pytest.raises(FeedError, match="not a sitemapcrawl state file"):
        read_runs(path)
    assert path.read_bytes() == before


@deferred_f_from_coro_f
async def test_a_state_file_gives_each_sites_last_report(
    site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    server = site("basic")
    state = tmp_path / "state.sqlite"
    settings = {"SITEMAPCRAWL_STATE_PATH": str(state)}
    await crawl_with_report(settings=settings, origin=server.base, max_urls=3)  # stopped early
    items, report, _ = await crawl_with_report(settings=settings, origin=server.base)
    assert report is not None
    before = state.read_bytes()
    runs, left_out = read_runs(state)
    assert state.read_bytes() == before  # read-only
    assert (len(runs), left_out) == (1, 0)
    assert runs[0].report == json.loads(json.dumps(report, default=str))
    assert runs[0].report["state"]["run"] == 2
    assert runs[0].tally.items == len(items)
    assert sorted(runs[0].tally.segments) == sorted({i["segment"] for i in items})


# -- the command ---------------------------------------------------------------------------


def scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args, "-s", "TELNETCONSOLE_ENABLED=False"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def main_of(document: str) -> str:
    match = re.search(r"<main>.*</main>", document, re.DOTALL)
    assert match is not None
    return match.group(0)


def test_command_renders_jsonl_and_json_feeds_alike(tmp_path: Path) -> None:
    records = [*ITEMS, REPORT]
    lines = write_jsonl(tmp_path / "f.jsonl", records)
    array = write_json(tmp_path / "f.json", records)
    out = tmp_path / "out" / "a.html"
    result = scrapy("sitemapreport", str(lines), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"sitemapreport: wrote {out} (1 site report(s), 2 URLs)\n"
    result = scrapy("sitemapreport", str(array), "-o", str(tmp_path / "b.html"))
    assert result.returncode == 0, result.stderr
    from_lines = out.read_text(encoding="utf-8")
    assert main_of(from_lines) == main_of((tmp_path / "b.html").read_text(encoding="utf-8"))
    assert main_of(from_lines) == main_of(render_report(REPORT, ITEMS))
    assert "sitemapcrawl 0.1.0 · from f.jsonl" in from_lines


def test_command_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    result = scrapy("sitemapreport", str(missing), "-o", str(tmp_path / "r.html"))
    assert (result.returncode, result.stderr) == (
        1,
        f"sitemapreport: error: {missing}: no such file\n",
    )
    no_report = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    result = scrapy("sitemapreport", str(no_report), "-o", str(tmp_path / "r.html"))
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"sitemapreport: error: {no_report}: no SiteReport in this feed"
    )
    assert not (tmp_path / "r.html").exists()
    result = scrapy("sitemapreport", str(no_report))
    assert result.returncode == 2
    assert "-o FILE is required" in result.stderr


# -- the extension and the progress line ---------------------------------------------------


def test_html_report_extension_is_off_without_a_path() -> None:
    crawler = get_crawler(settings_dict=project_settings())
    with pytest.raises(NotConfigured):
        build_from_crawler(HtmlReportExtension, crawler)


def test_progress_line_has_pages_sampled_and_eta(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    now = [1000.0]
    monkeypatch.setattr(sitemapcrawl.extensions.progress, "_clock", lambda: now[0])
    crawler = get_crawler(settings_dict=project_settings())
    assert crawler.stats is not None
    stats = crawler.stats
    extension = build_from_crawler(SitemapProgressExtension, crawler)  # clock: 1000
    crawl_context(crawler).arguments = parse_arguments(
        {"origin": "http://127.0.0.1", "max_urls": 600}, (), crawler.settings
    )
    caplog.set_level(logging.INFO, logger="sitemapcrawl.extensions.progress")
    for key, value in {
        "sitemaps/requested_count": 5,
        "sitemaps/done_count": 3,
        "urls/found_count": 120,
    }.items():
        stats.set_value(f"sitemapcrawl/{key}", value)
    now[0] = 1060.0
    extension.log_progress()  # 60 s: 120 URLs/min, 480 left before max_urls
    stats.set_value("sitemapcrawl/sample/requested_count", 50)
    stats.set_value("sitemapcrawl/sample/outcome_count/AGREE", 10)
    now[0] = 1070.0
    extension.log_progress()  # 70 s: sampling seen first, no pace yet
    stats.set_value("sitemapcrawl/sample/outcome_count/FETCH_FAILED", 10)
    now[0] = 1080.0
    extension.log_progress()  # 80 s: 10 pages in 10 s, 30 left
    assert [r.getMessage() for r in caplog.records] == [
        "Progress: 3 sitemaps done, 2 queued, 0 failed; 120 URLs found (120/min) "
        "of max_urls 600, ETA 4m00s",
        "Progress: 3 sitemaps done, 2 queued, 0 failed; 120 URLs found (102/min); "
        "10 of 50 pages sampled",
        "Progress: 3 sitemaps done, 2 queued, 0 failed; 120 URLs found (90/min); "
        "20 of 50 pages sampled, ETA 30s",
    ]
    assert stats.get_value("sitemapcrawl/progress/eta_seconds") == 30
    assert stats.get_value("sitemapcrawl/urls/per_minute") == 90


# -- a real crawl, rendered and opened in Chromium -----------------------------------------


def page(modified: dt.datetime) -> str:
    data = {"@context": "https://schema.org", "@type": "Article", "dateModified": iso(modified)}
    return (
        "<!DOCTYPE html><html><head><title>x</title>"
        f'<script type="application/ld+json">{json.dumps(data)}</script></head>'
        "<body><main><article><p>Some article text.</p></article></main></body></html>"
    )


def build_site(root: Path) -> None:
    """Two segments: honest lastmods (each page's own date), and every lastmod stamped
    with the generation time (now) while the pages are older."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    rows: dict[str, list[str]] = {"honest": [], "gen": []}
    for i in range(25):
        changed = now - dt.timedelta(days=3 + 41 * i, hours=i)
        rows["honest"].append(
            f"<url><loc>{{base}}/honest/{i}</loc><lastmod>{iso(changed)}</lastmod></url>"
        )
        write(root / "honest" / str(i), page(changed))
        rows["gen"].append(f"<url><loc>{{base}}/gen/{i}</loc><lastmod>{iso(now)}</lastmod></url>")
        write(root / "gen" / str(i), page(now - dt.timedelta(days=30 + 20 * i)))
    index = []
    for name, urls in rows.items():
        write(
            root / "sitemaps" / f"{name}.xml",
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(urls)
            + "</urlset>",
        )
        index.append(f"<sitemap><loc>{{base}}/sitemaps/{name}.xml</loc></sitemap>")
    write(
        root / "sitemap_index.xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(index)
        + "</sitemapindex>",
    )
    write(root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def two_segments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    root = tmp_path_factory.mktemp("two-segments")
    build_site(root)
    with MockServer(root=root) as server:
        yield server


class Browser:
    """Headless Chromium driven over the DevTools protocol: open a page, record what it
    logs, throws and requests, read its DOM and take a screenshot. Chromium resolves no
    host name but 127.0.0.1 and runs none of its background services."""

    FLAGS = (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--remote-debugging-port=0",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--no-first-run",
        "--no-default-browser-check",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--window-size=1280,900",
        "--hide-scrollbars",
    )

    def __init__(self, binary: str, profile: Path) -> None:
        self.events: list[dict[str, Any]] = []
        self._id = 0
        self.socket: ClientConnection | None = None
        self._closing = ExitStack()
        self.process = subprocess.Popen(
            [binary, f"--user-data-dir={profile}", *self.FLAGS, "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    def _connect(self) -> None:
        assert self.process.stderr is not None
        endpoint = ""
        for line in self.process.stderr:  # ends when Chromium exits: never hangs
            if line.startswith("DevTools listening on ws://127.0.0.1:"):
                endpoint = line.split(" on ", 1)[1].strip()
                break
        assert endpoint, "Chromium did not start its DevTools endpoint"
        port = endpoint.split(":")[2].split("/")[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            targets = json.load(answer)
        target = next(t for t in targets if t["type"] == "page")
        self.socket = self._closing.enter_context(
            connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        )
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable")

    def _receive(self) -> dict[str, Any]:
        assert self.socket is not None
        message: dict[str, Any] = json.loads(self.socket.recv(timeout=60))
        return message

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        assert self.socket is not None
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == self._id:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result
            self.events.append(message)

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 120  # a bound, not an assertion on speed
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, "the page did not load"
            self.events.append(self._receive())
        self.evaluate("1")  # events sent before this answer are in self.events

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def problems(self) -> list[str]:
        """Console messages, uncaught exceptions, log entries and dialogs of the page."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Log.entryAdded":
                entry = params["entry"]
                found.append(f"log {entry['level']}: {entry['text']}")
            elif method == "Page.javascriptDialogOpening":
                found.append(f"dialog: {params['message']}")
        return found

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def close(self) -> None:
        self._closing.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        assert self.process.stderr is not None
        self.process.stderr.close()


@pytest.fixture
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = shutil.which("chromium")
    assert binary, "chromium is not installed (.ci/run installs it: apt-get install chromium)"
    opened = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield opened
    finally:
        opened.close()


VERDICT_ROWS = (
    "Object.fromEntries([...document.querySelectorAll('table.segments tr[data-verdict]')]"
    ".map(r => [r.dataset.segment, r.querySelector('.verdict').textContent]))"
)
PLOTS = (
    "[...document.querySelectorAll('svg.plot')]"
    ".map(s => s.getBoundingClientRect()).filter(r => r.width > 300 && r.height > 100).length"
)


def colour_pixels(path: Path, hex_colour: str) -> int:
    """How many pixels of the screenshot have exactly this colour."""
    wanted = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 24) or []
    return sum(count for count, colour in colours if colour == wanted)


@deferred_f_from_coro_f
async def test_crawl_report_opens_in_chromium(
    two_segments: MockServer, tmp_path: Path, browser: Browser
) -> None:
    html_path = tmp_path / "report.html"
    _, report, _ = await crawl_with_report(
        settings={
            "EXTENSIONS": {HtmlReportExtension: 100},
            "SITEMAPCRAWL_HTML_REPORT_PATH": str(html_path),
            "FEEDS": {
                str(tmp_path / "urls.jsonl"): {"format": "jsonlines"},
                str(tmp_path / "urls.json"): {"format": "json"},
            },
        },
        origin=two_segments.base,
        sample="on",
    )
    assert report is not None
    verdicts = {s["segment"]: s["verdict"] for s in report["segments"]}
    assert verdicts == {
        "/sitemaps/gen.xml": "GENERATION_TIME",
        "/sitemaps/honest.xml": "PROVISIONAL",
    }
    document = html_path.read_text(encoding="utf-8")

    url = html_path.as_uri()
    browser.open(url)
    assert browser.evaluate(VERDICT_ROWS) == verdicts
    assert browser.evaluate(PLOTS) == 3  # the timeline and two histograms, drawn
    reasons = browser.evaluate(
        "[...document.querySelectorAll('table.segments td.reason')].map(c => c.textContent)"
    )
    assert reasons == [s["reason"] for s in report["segments"]]
    assert browser.problems() == []
    assert browser.requests() == [url]  # nothing loaded but the file itself
    shot = tmp_path / "report.png"
    browser.screenshot(shot)
    with Image.open(shot) as image:
        assert image.format == "PNG"
        assert image.width == 1280
        assert image.height > 2000  # the full page, not the window
    # Both verdict badges are painted: their solid background colours are on screen.
    assert colour_pixels(shot, render.VERDICT_COLOURS["GENERATION_TIME"]) > 500
    assert colour_pixels(shot, render.VERDICT_COLOURS["PROVISIONAL"]) > 500

    # The command renders the crawl's feeds (JSON Lines and JSON) into the same report.
    for name in ("urls.jsonl", "urls.json"):
        out = tmp_path / f"{name}.html"
        result = scrapy("sitemapreport", str(tmp_path / name), "-o", str(out))
        assert result.returncode == 0, result.stderr
        assert main_of(out.read_text(encoding="utf-8")) == main_of(document)


def test_hostile_report_is_inert_in_chromium(tmp_path: Path, browser: Browser) -> None:
    report, items = hostile_run()
    path = tmp_path / "hostile.html"
    path.write_text(render_report(report, items), encoding="utf-8")
    browser.open(path.as_uri())
    assert browser.problems() == []
    assert browser.requests() == [path.as_uri()]
    assert browser.evaluate("document.scripts.length") == 0
    assert browser.evaluate("document.querySelector('td.reason').textContent") == (
        f"Because {HOSTILE} & more"
    )
    assert browser.evaluate("document.title") == f"Sitemap report: https://evil.example/{HOSTILE}"


def test_chromium_reports_what_the_checks_look_for(tmp_path: Path, browser: Browser) -> None:
    """The browser checks can fail: a script's console error, a blocked load are seen."""
    path = tmp_path / "bad.html"
    path.write_text(
        "<!DOCTYPE html><title>t</title><script>console.error('seen')</script>"
        '<img src="http://127.0.0.1:9/x.png">',
        encoding="utf-8",
    )
    browser.open(path.as_uri())
    assert sorted(browser.problems()) == [  # the two arrive in either order
        "console.error: [{'type': 'string', 'value': 'seen'}]",
        "log error: Failed to load resource: net::ERR_UNSAFE_PORT",
    ]
    assert browser.requests() == [path.as_uri(), "http://127.0.0.1:9/x.png"]
