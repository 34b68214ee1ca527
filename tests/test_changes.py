"""What changed in a site's list of URLs since its last finished run: the report's
``changes`` section over three runs against a real loopback server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report

if TYPE_CHECKING:
    from pathlib import Path

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*entries: tuple[str, str]) -> str:
    rows = "".join(f"<url><loc>{{base}}{p}</loc><lastmod>{m}</lastmod></url>" for p, m in entries)
    return f'<urlset xmlns="{NS}">{rows}</urlset>'


async def run(server: MockServer, state: Path) -> dict[str, Any]:
    _, report, crawler = await crawl_with_report(
        origin=server.base, sample="off", links="off", state=str(state)
    )
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert report is not None
    return dict(report["changes"])


@deferred_f_from_coro_f
async def test_added_moved_removed_and_unconfirmed_across_three_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "robots.txt").write_text("Sitemap: {base}/posts.xml\nSitemap: {base}/pages.xml\n")
    posts = site / "posts.xml"
    pages = site / "pages.xml"
    posts.write_text(urlset(("/a", "2024-01-01"), ("/b", "2024-01-02"), ("/c", "2024-01-03")))
    pages.write_text(urlset(("/d", "2024-02-01"), ("/e", "2024-02-02")))
    state = tmp_path / "state.sqlite"
    with MockServer(root=site) as server:
        base = server.base
        first = await run(server, state)
        # Run 2: /a's lastmod moves, /c is gone, /n is new; pages.xml fails (404): its URLs
        # are not removed but unconfirmed.
        posts.write_text(urlset(("/a", "2024-03-01"), ("/b", "2024-01-02"), ("/n", "2024-03-02")))
        pages.unlink()
        second = await run(server, state)
        # Run 3: pages.xml is back without /e; /c stays removed (it was, last run).
        pages.write_text(urlset(("/d", "2024-02-01")))
        third = await run(server, state)
    assert first == {
        "since_run": None,
        "added": 5,
        "moved": 0,
        "removed": 0,
        "unconfirmed": 0,
        "removed_urls": [],
        "unconfirmed_sitemaps": {},
        "changed": 0,
    }
    tombstone_c = {
        "url": f"{base}/c",
        "lastmod": "2024-01-03",
        "segment": "/",
        "sitemap": f"{base}/posts.xml",
    }
    last_seen = second["removed_urls"][0].pop("last_seen")
    assert last_seen is not None
    assert second == {
        "since_run": 1,
        "added": 1,
        "moved": 1,
        "removed": 1,
        "unconfirmed": 2,
        "removed_urls": [tombstone_c],
        "unconfirmed_sitemaps": {f"{base}/pages.xml": 2},
        "changed": 0,
    }
    tombstone_e = third["removed_urls"][0]
    assert tombstone_e.pop("last_seen") is not None  # run 1's clock: it was last listed then
    assert tombstone_e == {
        "url": f"{base}/e",
        "lastmod": "2024-02-02",
        "segment": "/",
        "sitemap": f"{base}/pages.xml",
    }
    assert {k: v for k, v in third.items() if k != "removed_urls"} == {
        "since_run": 2,
        "added": 0,
        "moved": 0,
        "removed": 1,
        "unconfirmed": 0,
        "unconfirmed_sitemaps": {},
        "changed": 0,
    }
