"""Lastmods that are late, local or bulk-touched (issue 36, point 4), over several runs.

Each test builds a small site (robots.txt, an index, one child sitemap: the segment), serves
it on 127.0.0.1 and crawls it several times with one state file, moving the server's clock
(its ``Date``) a day or half a day between runs and rewriting the site as its software would:

* a site that writes its sitemap's dates in its local day (UTC-3) while its pages write
  their times in UTC, and edits a page again later on the day we fetched it;
* a sitemap rebuilt every 12 hours, read just before a rebuild;
* a nightly job that moves the lastmod of a fifth of the rows without a content change, on a
  template that does not change.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report

if TYPE_CHECKING:
    from pathlib import Path

SEGMENT = "/sitemaps/posts.xml"
N = 25
WEST = dt.timedelta(hours=-3)  # the site's local zone
#: Exact decisions: no random audit unless a run asks for one.
EXACT = {
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED": 0.0,
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL": 0.0,
    "SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT": 0,
    "CONCURRENT_REQUESTS": 4,
}
AUDIT_ALL = {"SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL": 1.0}


def z(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def local_day(value: dt.datetime) -> str:
    """The date of ``value`` in the site's local zone (UTC-3)."""
    return (value.astimezone(dt.UTC) + WEST).strftime("%Y-%m-%d")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class Posts:
    """``N`` posts; each has a lastmod as the sitemap writes it, its page's JSON-LD
    ``dateModified`` (UTC) and an edition (its text)."""

    def __init__(self, root: Path, at: dt.datetime, lastmod: Any) -> None:
        self.root = root
        self.lastmod = lastmod  # how the sitemap writes a moment
        self.modified = [
            at - dt.timedelta(days=3 + 37 * i, hours=i % 9, minutes=7 * i % 60) for i in range(N)
        ]
        self.edition = [0] * N
        self.shown = list(self.modified)  # what the sitemap says (a lagged one: behind)
        self.touched: dict[int, dt.datetime] = {}  # a nightly job's lastmod, no edit

    def edit(self, i: int, at: dt.datetime) -> None:
        self.modified[i] = at
        self.edition[i] += 1

    def rebuild(self, built: dt.datetime | None = None) -> None:
        """The sitemap as of now (``built``: its Last-Modified)."""
        self.shown = list(self.modified)
        self.write()
        if built is not None:
            stamp = built.timestamp()
            os.utime(self.root / "sitemaps" / "posts.xml", (stamp, stamp))

    def write(self) -> None:
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        rows = []
        for i in range(N):
            moment = max(self.shown[i], self.touched.get(i, self.shown[i]))
            rows.append(
                f"<url><loc>{{base}}/posts/{i}</loc><lastmod>{self.lastmod(moment)}</lastmod></url>"
            )
            data = {"@context": "https://schema.org", "@type": "Article"}
            data["dateModified"] = z(self.modified[i])
            text = f"Post {i} in edition {self.edition[i]}: " + "words " * (10 + i)
            _write(
                self.root / "posts" / str(i),
                "<!DOCTYPE html><html><head><title>x</title>"
                f'<script type="application/ld+json">{json.dumps(data)}</script></head>'
                f"<body><main><article><p>{text}</p></article></main></body></html>",
            )
        _write(self.root / "sitemaps" / "posts.xml", f"<urlset {ns}>{''.join(rows)}</urlset>")
        _write(
            self.root / "sitemap_index.xml",
            f"<sitemapindex {ns}><sitemap><loc>{{base}}{SEGMENT}</loc></sitemap></sitemapindex>",
        )
        _write(self.root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


def clock_at(hour: int) -> dt.datetime:
    """A moment two days back at ``hour``:00 UTC, to the second (the runs' clock starts
    there and moves forward by whole days or half days)."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    return now.replace(hour=hour, minute=0, second=0) - dt.timedelta(days=2)


async def run(
    server: MockServer,
    state: Path,
    at: dt.datetime,
    settings: dict[str, Any] | None = None,
    **args: Any,
) -> tuple[dict[str, tuple[bool, str]], dict[str, Any]]:
    """One crawl with the server's clock at ``at`` (plus the seconds the crawl takes);
    returns each post's refetch decision and the segment's report."""
    server.set_clock(at.timestamp() - time.time())
    items, report, _ = await crawl_with_report(
        settings={**EXACT, **(settings or {})},
        origin=server.base,
        state=str(state),
        links="off",
        **args,
    )
    assert report is not None
    (segment,) = report["segments"]
    assert segment["segment"] == SEGMENT
    decisions = {i["url"].rsplit("/", 1)[1]: (i["refetch"], i["refetch_reason"]) for i in items}
    return decisions, segment


@deferred_f_from_coro_f
async def test_a_local_date_still_holds_our_fetch_when_the_page_is_edited_again_that_day(
    tmp_path: Path,
) -> None:
    """The sitemap writes each post's local date (UTC-3), the pages their times in UTC, so
    the sample learns the pages' zone, UTC, which is not the sitemap's. We crawl at 01:00
    UTC, 22:00 local: posts edited that evening before our crawl and again at 23:00 local
    keep their date, whose UTC reading ended an hour before our fetch. In any zone from
    UTC-12 to UTC+14 the date still holds our fetch: the audit's changes there are no
    misses (here they were STALE), and the pages' zone is no longer used to read the
    sitemap's dates, so the next day's second edits are fetched on the lastmod."""
    start = clock_at(1)
    posts = Posts(tmp_path / "site", start, local_day)
    for i in range(4):
        posts.edit(i, start - dt.timedelta(hours=9))  # 13:00 local, before our crawl
    posts.rebuild()
    state = tmp_path / "state.sqlite"
    with MockServer(root=posts.root) as server:
        _, seg1 = await run(server, state, start, sample="on")
        assert seg1["verdict"] == "PROVISIONAL"
        assert seg1["evidence"]["utc_offset_s"] == 0  # the pages' zone: UTC

        for i in range(4):  # 23:00 local, the same local day: the dates stay
            posts.edit(i, start + dt.timedelta(hours=1))
        for i in (4, 5):  # edited the next local morning, before run 2
            posts.edit(i, start + dt.timedelta(hours=12))
        posts.rebuild()
        day2 = start + dt.timedelta(days=1)
        got2, seg2 = await run(server, state, day2, AUDIT_ALL, since="last", pages="refetch")
        assert [got2[str(i)] for i in range(6)] == [(True, "audit")] * 4 + [
            (True, "lastmod_changed")
        ] * 2
        l2 = seg2["cross_run"]["l2"]
        assert (l2["tp"], l2["fp"], l2["fn"], l2["tn"]) == (6, 0, 0, N - 6)
        assert seg2["verdict"] == "PROVISIONAL"
        assert seg2["reason"] == (
            "Kept PROVISIONAL: no pages were sampled on this run and the sitemap shows no red flag."
        )

        for i in (4, 5):  # 23:00 local again, after run 2's fetch: the dates stay
            posts.edit(i, day2 + dt.timedelta(hours=1))
        posts.rebuild()
        got3, seg3 = await run(
            server, state, day2 + dt.timedelta(days=1), since="last", pages="refetch"
        )
        # read in any zone, the date still holds run 2's fetch: fetched on the lastmod
        assert [got3[str(i)] for i in (3, 4, 5)] == [
            (False, "lastmod_unchanged"),
            (True, "lastmod_changed"),
            (True, "lastmod_changed"),
        ]
        l2 = seg3["cross_run"]["l2"]
        assert (l2["tp"], l2["fn"]) == (7.86, 0)  # 6 decayed by a run, and 2
        assert seg3["verdict"] == "PROVISIONAL"


@deferred_f_from_coro_f
async def test_a_sitemap_rebuilt_every_12_hours_is_late_not_over_reporting(
    tmp_path: Path,
) -> None:
    """The sitemap is rebuilt at 06:05 and 18:05 UTC and read at 06:00, 12 hours behind the
    pages. Six posts are edited at 10:00 (the evening rebuild shows it) and again at 18:10,
    after it: run 2 fetches them on the first move and gets the second edit too (the page
    says so: its dateModified is 18:10). The morning rebuild then moves their lastmod to
    18:10, a time run 2's fetch already covered: a late report, not six moves without a
    change (here they were six false positives: enough of them made the segment
    OVER_REPORTING), and the reason says how late, measured on those moves."""
    start = clock_at(6)
    posts = Posts(tmp_path / "site", start, z)
    posts.rebuild(built=start - dt.timedelta(hours=11, minutes=55))
    state = tmp_path / "state.sqlite"
    with MockServer(root=posts.root) as server:
        _, seg1 = await run(server, state, start, sample="on")
        assert seg1["verdict"] == "PROVISIONAL"

        for i in range(6):
            posts.edit(i, start + dt.timedelta(hours=4, seconds=i))
        posts.rebuild(built=start + dt.timedelta(hours=12, minutes=5))
        for i in range(6):  # after the evening rebuild: the sitemap does not show it yet
            posts.edit(i, start + dt.timedelta(hours=12, minutes=10, seconds=i))
        posts.write()
        day2 = start + dt.timedelta(days=1)
        got2, seg2 = await run(server, state, day2, since="last", pages="refetch")
        assert [got2[str(i)] for i in range(7)] == [(True, "lastmod_changed")] * 6 + [
            (False, "lastmod_unchanged")
        ]
        assert (seg2["cross_run"]["l2"]["tp"], seg2["cross_run"]["l2"]["fp"]) == (6, 0)

        posts.rebuild(built=day2 + dt.timedelta(minutes=5))  # the morning rebuild
        got3, seg3 = await run(
            server, state, day2 + dt.timedelta(days=1), since="last", pages="refetch"
        )
        # what run 2 already had: the change rate decides (here: edited twice a day)
        assert [got3[str(i)] for i in range(6)] == [(True, "lastmod_late")] * 6
        l2 = seg3["cross_run"]["l2"]
        assert (l2["tp"], l2["fp"], l2["fn"]) == (5.86, 0, 0)
        assert seg3["verdict"] == "PROVISIONAL"
        assert seg3["reason"] == (
            "Kept PROVISIONAL: no pages were sampled on this run and the sitemap shows no "
            "red flag. Its sitemap is late, not wrong: lagged by about 12 h (6 lastmod "
            "moves reported changes our earlier fetch already had)."
        )


@deferred_f_from_coro_f
async def test_a_nightly_job_touching_a_fifth_of_the_rows_over_reports(tmp_path: Path) -> None:
    """Honest lastmods, and a job that moves the lastmod of a fifth of the rows at 02:00
    every night without changing them; the template never changes. After three nights 15
    of 25 pages are older than their lastmod and none newer: OVER_REPORTING on the first
    crawl. Two more nights, with one real edit each and an audit of every unmoved page:
    the touched rows are moves without a change, the audit finds nothing, the segment
    stays OVER_REPORTING (a safe filter), never STALE."""
    start = clock_at(6)
    posts = Posts(tmp_path / "site", start, z)
    for night in range(3):
        at = start - dt.timedelta(days=2 - night, hours=4)
        posts.touched.update(dict.fromkeys(range(5 * night, 5 * night + 5), at))
    posts.rebuild()
    state = tmp_path / "state.sqlite"
    with MockServer(root=posts.root) as server:
        _, seg1 = await run(server, state, start, sample="on")
        assert seg1["verdict"] == "OVER_REPORTING"
        assert seg1["reason"] == (
            "15 of 25 sampled pages have an older modification date than the lastmod (Wilson "
            "lower bound 0.41 >= 0.30) and the sitemap shows no generation-time signature."
        )
        for night in (3, 4):
            at = start + dt.timedelta(days=night - 2, hours=-4)
            rows = range(5 * night, 5 * night + 5)
            posts.touched.update(dict.fromkeys(rows, at))
            posts.edit(night, at - dt.timedelta(hours=3))  # one real edit a day
            posts.rebuild()
            got, seg = await run(
                server, state, at + dt.timedelta(hours=4), AUDIT_ALL, since="last", pages="refetch"
            )
            moved = sorted(int(u) for u, (_, why) in got.items() if why == "lastmod_changed")
            assert moved == sorted({night, *rows})
            assert seg["verdict"] == "OVER_REPORTING"
            assert seg["reason"] == (
                "Kept OVER_REPORTING: no pages were sampled on this run and the sitemap shows "
                "no red flag."
            )
        l2 = seg["cross_run"]["l2"]
        assert (l2["tp"], l2["fp"], l2["fn"]) == (1.98, 9.89, 0)
