"""The fingerprint's noise floor, measured on the site itself (issue 36, point 1), over two
runs with one state file against a loopback site.

A forum whose pages are rendered anew on every request: a "who is online" line and a
rotating tip drawn at random (``{rand}`` in the mock server: words no mask or class list
knows). Its lastmods are honest. On the second run every audited page differs from the
first fetch while its lastmod stands still: 22 would-be misses (it was STALE). Three of
them are fetched again at once and differ again: the site's pages differ on every fetch,
its content is no evidence on this run, the segment stays PROVISIONAL and the reason says
why. The counterpart: on a static site whose changed pages are the same seconds later, the
misses stand (``test_template_edits``: an unreported insertion on four pages).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from pathlib import Path

SEGMENT = "/sitemaps/threads.xml"
N = 25
AUDIT_ALL = {
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED": 1.0,
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL": 1.0,
    "CONCURRENT_REQUESTS": 4,
}


def z(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_forum(root: Path, modified: list[dt.datetime], edition: list[int]) -> None:
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    rows = "".join(
        f"<url><loc>{{base}}/threads/{i}.html</loc><lastmod>{z(modified[i])}</lastmod></url>"
        for i in range(N)
    )
    for i in range(N):
        data = '{"@context": "https://schema.org", "@type": "DiscussionForumPosting", '
        data += f'"dateModified": "{z(modified[i])}"}}'
        _write(
            root / "threads" / f"{i}.html",
            "<!DOCTYPE html><html><head><title>t</title>"
            f'<script type="application/ld+json">{data}</script></head><body><main>'
            f"<h1>Thread {i}</h1><p>Question {i} in its edition {edition[i]}: how do I set "
            f"up the thing number {i} so that it works?</p>"
            "<div><p>Online now: {rand}</p><p>Tip of the day: {rand}</p></div>"
            "</main></body></html>",
        )
    _write(root / "sitemaps" / "threads.xml", f"<urlset {ns}>{rows}</urlset>")
    _write(
        root / "sitemap_index.xml",
        f"<sitemapindex {ns}><sitemap><loc>{{base}}{SEGMENT}</loc></sitemap></sitemapindex>",
    )
    _write(root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


async def run(server: MockServer, state: Path, at: dt.datetime, **args: Any) -> tuple[Any, ...]:
    server.set_clock(at.timestamp() - time.time())
    items, report, crawler = await crawl_with_report(
        settings=AUDIT_ALL, origin=server.base, state=str(state), links="off", **args
    )
    assert report is not None
    (segment,) = report["segments"]
    reasons = {i["url"].rsplit("/", 1)[1].removesuffix(".html"): i["refetch_reason"] for i in items}
    incremental = report["incremental"]["segments"][SEGMENT] if report["incremental"] else {}
    return reasons, segment, incremental, our_stats(crawler)


@deferred_f_from_coro_f
async def test_pages_that_differ_on_every_fetch_give_no_content_evidence(tmp_path: Path) -> None:
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=2)
    modified = [start - dt.timedelta(days=2 + 5 * i, hours=i % 5) for i in range(N)]
    edition = [0] * N
    root = tmp_path / "site"
    write_forum(root, modified, edition)
    state = tmp_path / "state.sqlite"
    with MockServer(root=root) as server:
        _, seg1, _, _ = await run(server, state, start, sample="on")
        assert seg1["verdict"] == "PROVISIONAL"
        for i in (0, 1, 2):  # three honest edits
            modified[i] = start + dt.timedelta(hours=4)
            edition[i] += 1
        write_forum(root, modified, edition)
        reasons, seg, incremental, stats = await run(
            server, state, start + dt.timedelta(days=1), since="last", pages="refetch"
        )
    assert [reasons[str(i)] for i in range(N)] == ["lastmod_changed"] * 3 + ["audit"] * (N - 3)
    print(
        seg["verdict"],
        seg["reason"],
        seg["cross_run"]["l2"],
        incremental,
        {k: v for k, v in stats.items() if "refetch" in k},
    )
    assert stats["sitemapcrawl/refetch/noise_probe_count"] == 3
    assert stats["sitemapcrawl/refetch/noise_differed_count"] == 3
    assert incremental["noise"] == {"differed": 3, "probed": 3, "pages_without_evidence": N}
    l2 = seg["cross_run"]["l2"]
    assert (l2["tp"], l2["fp"], l2["fn"], l2["tn"]) == (0, 0, 0, 0)
    assert seg["verdict"] == "PROVISIONAL"
    assert seg["reason"].endswith(
        "Its pages differ on every fetch (3 of 3 fetched again at once differed): their "
        "content is no evidence on this run."
    )
