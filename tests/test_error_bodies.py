"""A non-2xx body is read no further than ``SITEMAPCRAWL_ERROR_BODY_MAXSIZE`` (issue 34, 2).

Against the real loopback server: robots.txt, two child sitemaps and one sampled page each
answer an error status with a body that never ends (the server streams up to 1 GiB). Each
is stopped at the cap, counted, logged once; the crawl reads the rest of the site as usual.
Without the cap a sitemap's error body is read up to ``SITEMAPCRAWL_MAX_DOWNLOAD_SIZE``
(50 MiB) and thrown away.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.downloadhandlers import StatusHTTP11DownloadHandler
from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Loopback socket buffers hold a few MiB the client never read: the server's count of
#: bytes written stays far under this when the client stops at 64 KiB, and would reach
#: the 50 MiB download cap (a sitemap) without it.
WRITTEN_MAX = 16 * 1024 * 1024

ENDLESS_XML_404 = "/_/endless?status=404"
ENDLESS_XML_410 = "/_/endless?status=410"
ENDLESS_HTML_404 = "/_/endless?html=1&status=404"

FILES = {
    "_redirects": f"/robots.txt {ENDLESS_XML_404} 302\n",
    "sitemap.xml": (
        '<?xml version="1.0"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        "<sitemap><loc>{base}/ok.xml</loc></sitemap>\n"
        f"<sitemap><loc>{{base}}{ENDLESS_XML_404}</loc></sitemap>\n"
        f"<sitemap><loc>{{base}}{ENDLESS_XML_410}</loc></sitemap>\n"
        "</sitemapindex>\n"
    ).replace("&", "&amp;"),
    "ok.xml": (
        '<?xml version="1.0"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        "<url><loc>{base}/a</loc><lastmod>2026-01-02</lastmod></url>\n"
        "<url><loc>{base}/b</loc><lastmod>2026-01-03</lastmod></url>\n"
        f"<url><loc>{{base}}{ENDLESS_HTML_404}</loc><lastmod>2026-01-04</lastmod></url>\n"
        "</urlset>\n"
    ).replace("&", "&amp;"),
    "a": "<html><head><title>a</title></head><body><p>a</p></body></html>",
    "b": "<html><head><title>b</title></head><body><p>b</p></body></html>",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    root = tmp_path_factory.mktemp("error-bodies")
    for path, text in FILES.items():
        (root / path).write_text(text, encoding="utf-8")
    with MockServer(root=root) as mock:
        yield mock


def written(server: MockServer) -> dict[str, int]:
    """Per path, the body bytes the server wrote (streamed answers only)."""
    return {e["path"]: e["sent"] for e in server.request_log() if "sent" in e}


@deferred_f_from_coro_f
async def test_error_bodies_stop_at_the_cap(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reset_requests()
    caplog.set_level(logging.WARNING)
    items, report, crawler = await crawl_with_report(
        settings={"SITEMAPCRAWL_SAMPLE_ENABLED": True, "SITEMAPCRAWL_LINKS": "off"},
        origin=server.base,
        guess="fallback",
    )
    base = server.base
    assert sorted(item["url"] for item in items) == [
        f"{base}{ENDLESS_HTML_404}", f"{base}/a", f"{base}/b"
    ]  # fmt: skip
    stats = our_stats(crawler)
    stopped = {k: v for k, v in stats.items() if k.startswith("sitemapcrawl/download/")}
    assert stopped == {
        "sitemapcrawl/download/error_body_stopped_count": 4,
        "sitemapcrawl/download/error_body_stopped_count/404": 3,
        "sitemapcrawl/download/error_body_stopped_count/410": 1,
    }
    logged = [
        r.getMessage() for r in caplog.records if "Stopped reading the HTTP" in r.getMessage()
    ]
    assert len(logged) == 1  # once; counted every time
    assert logged[0].endswith(
        "at 65536 bytes (SITEMAPCRAWL_ERROR_BODY_MAXSIZE); further error bodies are stopped "
        "silently and counted in sitemapcrawl/download/error_body_stopped_count"
    )
    sent = written(server)
    assert sorted(sent) == sorted([ENDLESS_XML_404, ENDLESS_XML_410, ENDLESS_HTML_404])
    assert all(0 < n < WRITTEN_MAX for n in sent.values()), sent
    assert report is not None
    failed = sorted(
        (f["url"], f["code"]) for f in report["faults"] if f["code"].startswith("http_")
    )
    assert failed == [
        (f"{base}{ENDLESS_XML_404}", "http_404"),
        (f"{base}{ENDLESS_XML_410}", "http_410"),
    ]
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") is None


@deferred_f_from_coro_f
async def test_without_the_cap_an_error_body_is_read_on(
    server: MockServer,
) -> None:
    """The cap at 0 (off): the same 404 sitemap body is read up to the download cap (here
    8 MiB): what the cap saves, measured on the same server."""
    server.reset_requests()
    _items, _report, crawler = await crawl_with_report(
        settings={
            "SITEMAPCRAWL_ERROR_BODY_MAXSIZE": 0,
            "SITEMAPCRAWL_MAX_DOWNLOAD_SIZE": 8 * 1024 * 1024,
        },
        sitemap_urls=f"{server.base}{ENDLESS_XML_404}",
    )
    assert written(server)[ENDLESS_XML_404] >= 8 * 1024 * 1024
    assert not any(k.startswith("sitemapcrawl/download/") for k in our_stats(crawler))


def test_the_addon_installs_the_handler_unless_a_project_chose_one() -> None:
    from scrapy.settings import Settings

    from sitemapcrawl.addon import SitemapCrawlAddon

    path = f"{StatusHTTP11DownloadHandler.__module__}.{StatusHTTP11DownloadHandler.__name__}"
    settings = Settings()
    SitemapCrawlAddon().update_settings(settings)
    assert settings.getdict("DOWNLOAD_HANDLERS") == {"http": path, "https": path}
    mine: dict[str, Any] = {"https": "myproject.handlers.Mine"}
    settings = Settings({"DOWNLOAD_HANDLERS": mine})
    SitemapCrawlAddon().update_settings(settings)
    assert settings.getdict("DOWNLOAD_HANDLERS") == {
        "http": path,
        "https": "myproject.handlers.Mine",
    }
