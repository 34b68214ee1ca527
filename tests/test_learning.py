"""Learning per page across incremental runs (issue 35; docs/verification.md, "Learning per
page"): a page that changes without its lastmod moving is fetched every run
(``page_history``), pages that changed together before are fetched together
(``cochange``), and, with ``SITEMAPCRAWL_INCREMENTAL_MOVE_LEARNER``, a page whose lastmod
moves came without a change is no longer fetched on them (``lastmod_idle``).

One history, three runs on a real loopback server with one state file (:func:`history`),
then the fourth run's variants, each on a copy of the state file.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.incremental.store import path_of
from tests.mockserver import MockServer
from tests.test_state import POSTS, POSTS_SEG, Site, decisions, paths, run, verdicts
from tests.utils.crawl import our_stats

if TYPE_CHECKING:
    from pathlib import Path

INCREMENTAL = {"since": "last", "pages": "refetch"}
#: Runs 2 and 3 audit every unmoved post: what shows a change its lastmod did not report.
AUDIT_ALL = {"SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL": 1.0}
RELEASE = range(5, 15)  # posts edited with a lastmod move on runs 2 and 3


class LearningSite(Site):
    """:class:`Site`, plus a touch: a post's lastmod moves, its content does not."""

    def touch(self, *posts: int) -> None:
        stamp = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=2)
        stamp = self.last_stamp = max(stamp, self.last_stamp + dt.timedelta(seconds=60))
        for i in posts:
            self.posts[i]["modified"] = stamp - dt.timedelta(seconds=i)
        self.index_lastmod["posts"] = stamp
        self.write()


async def history(built: LearningSite, server: MockServer, state: Path) -> list[dict[str, Any]]:
    """Run 1 samples every post. Before runs 2 and 3: post 0 is edited with a lastmod
    move (a child), post 1 without one (its list page), posts 5-14 with one (a release),
    post 2's lastmod moves without a change (a touch). Returns the reports."""
    _, report1, _, _ = await run(server, state, sample="on")
    reports = [report1]
    for _ in range(2):
        built.edit(0, *RELEASE)
        built.edit(1, lastmod=False)
        built.touch(2)
        _, report, _, _ = await run(server, state, AUDIT_ALL, **INCREMENTAL)
        reports.append(report)
    return reports


def learned(state: Path, server: MockServer, *posts: int) -> dict[int, list[Any]]:
    """The ``learned`` record of these posts in the state file."""
    with sqlite3.connect(state) as db:
        return {
            i: json.loads(
                db.execute(
                    "SELECT learned FROM urls WHERE path = ?",
                    (path_of(server.base, f"{server.base}/posts/{i}"),),
                ).fetchone()[0]
            )
            for i in posts
        }


def refetch_stats(crawler: Any) -> dict[str, int]:
    """The crawl's ``refetch/`` and ``incremental/`` stats."""
    return {
        k.removeprefix("sitemapcrawl/"): v
        for k, v in our_stats(crawler).items()
        if k.startswith(("sitemapcrawl/refetch/", "sitemapcrawl/incremental/"))
    }


def moved_or_fetched(items: list[dict[str, Any]]) -> dict[str, tuple[bool | None, str | None]]:
    """The posts' decisions other than "unchanged lastmod, not fetched"."""
    return {
        u: d
        for u, d in decisions(items).items()
        if u.startswith("posts/") and d != (False, "lastmod_unchanged")
    }


async def fourth_run(
    server: MockServer, state: Path, name: str, settings: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any], Any, list[str]]:
    """Run 4 on a copy of the state file: items, report, crawler, the posts fetched."""
    copy = state.with_name(f"{name}.sqlite")
    shutil.copy(state, copy)
    items, report, crawler, log = await run(server, copy, settings, **INCREMENTAL)
    return items, report, crawler, paths(log, "/posts/")


@deferred_f_from_coro_f
async def test_a_page_that_changes_without_a_lastmod_move_is_fetched_every_run(
    tmp_path: Path,
) -> None:
    """Post 1 changed on runs 2 and 3, its lastmod still both times (the audit saw it): a
    share of 2 in 2 unmoved fetches, (2 + 1) / (2 + 2) = 0.75, reaches 0.5 with 2 changes,
    so run 4 fetches it (``page_history``) in a TRUSTED segment whose other posts follow
    their lastmod. Post 0 changed as often, but with a move each time: only the fetches
    where the lastmod stood still count, and it is not fetched."""
    built = LearningSite(tmp_path / "site")
    state = tmp_path / "state.sqlite"
    with MockServer(root=built.root) as server:
        reports = await history(built, server, state)
        assert [verdicts(r)[POSTS_SEG] for r in reports] == ["PROVISIONAL"] * 2 + ["TRUSTED"]
        # fetches, changed, unmoved, unmoved changed, moves, moves changed, change runs
        assert learned(state, server, 0, 1, 2, 3) == {
            0: [2, 2, 0, 0, 2, 2, [2, 3]],
            1: [2, 2, 2, 2, 0, 0, [2, 3]],
            2: [2, 0, 0, 0, 2, 0, []],
            3: [2, 0, 2, 0, 0, 0, []],
        }
        items, report, crawler, fetched = await fourth_run(server, state, "on", {})
        off = {"SITEMAPCRAWL_INCREMENTAL_PAGE_MIN_CHANGES": 0}
        items_off, _, crawler_off, fetched_off = await fourth_run(server, state, "off", off)
    assert verdicts(report)[POSTS_SEG] == "TRUSTED"
    assert moved_or_fetched(items) == {"posts/1": (True, "page_history")}
    assert fetched == ["/posts/1"]
    assert report["incremental"]["segments"][POSTS_SEG]["by_reason"] == {
        "lastmod_unchanged": POSTS - 1,
        "page_history": 1,
    }
    assert refetch_stats(crawler) == {
        "incremental/lastmod_unchanged_count": POSTS - 1,
        "incremental/page_history_count": 1,
        "incremental/poisson_wait_count": 20,
        "incremental/refetch_count": 1,
        "refetch/conditional_count": 1,
        "refetch/not_modified_count": 1,
        "refetch/requested_count": 1,
        "refetch/status_count/304": 1,
        "refetch/unchanged_count": 1,
    }
    # the same history without the rule: post 1 waits for the audit
    assert moved_or_fetched(items_off) == {}
    assert fetched_off == []
    assert "incremental/page_history_count" not in refetch_stats(crawler_off)


@deferred_f_from_coro_f
async def test_pages_that_changed_together_before_are_fetched_in_the_same_run(
    tmp_path: Path,
) -> None:
    """Posts 0, 1 and 5-14 changed on runs 2 and 3. On run 4 post 0 moves and changes
    and post 1 changes without a move (a list page and its child): post 0's refetch finds
    the change, and post 1, which changed with it on 2 earlier runs without its lastmod
    moving, is fetched in the same run (``cochange``) and its change caught. The release
    5-14 changed with post 0 too, but always with a move: in a segment whose lastmod is
    used their lastmod speaks for them, and they are not fetched. Without co-change
    (``COCHANGE_MIN`` 0) post 1's change is missed. The own-share rule is off here, so
    co-change alone fetches post 1."""
    built = LearningSite(tmp_path / "site")
    state = tmp_path / "state.sqlite"
    with MockServer(root=built.root) as server:
        await history(built, server, state)
        built.edit(0)
        built.edit(1, lastmod=False)
        alone = {"SITEMAPCRAWL_INCREMENTAL_PAGE_MIN_CHANGES": 0}
        items, report, crawler, fetched = await fourth_run(server, state, "on", alone)
        off = {**alone, "SITEMAPCRAWL_INCREMENTAL_COCHANGE_MIN": 0}
        _, report_off, crawler_off, fetched_off = await fourth_run(server, state, "off", off)
    assert moved_or_fetched(items) == {"posts/0": (True, "lastmod_changed")}
    assert fetched == ["/posts/0", "/posts/1"]
    assert report["incremental"]["segments"][POSTS_SEG]["cochange"] == 1
    assert refetch_stats(crawler) == {
        "incremental/lastmod_changed_count": 1,
        "incremental/lastmod_unchanged_count": POSTS - 1,
        "incremental/poisson_wait_count": 20,
        "incremental/refetch_count": 1,
        "refetch/changed_count": 2,
        "refetch/cochange_count": 1,
        "refetch/conditional_count": 2,
        "refetch/requested_count": 2,
        "refetch/status_count/200": 2,
    }
    assert fetched_off == ["/posts/0"]
    assert "cochange" not in report_off["incremental"]["segments"][POSTS_SEG]
    assert refetch_stats(crawler_off)["refetch/changed_count"] == 1
    assert "refetch/cochange_count" not in refetch_stats(crawler_off)


@deferred_f_from_coro_f
async def test_the_move_learner_stops_following_moves_that_bring_no_change(
    tmp_path: Path,
) -> None:
    """Post 2's lastmod moved on runs 2 and 3 and its content did not: 0 changes in 2
    moves, (0 + 1) / (2 + 2) = 0.25 under θ = 0.3. With the learner on, its third move
    is not fetched (``lastmod_idle``); by default it is (``lastmod_changed``)."""
    built = LearningSite(tmp_path / "site")
    state = tmp_path / "state.sqlite"
    with MockServer(root=built.root) as server:
        await history(built, server, state)
        built.touch(2)
        on = {"SITEMAPCRAWL_INCREMENTAL_MOVE_LEARNER": True}
        items, _, crawler, fetched = await fourth_run(server, state, "on", on)
        items_off, _, _, fetched_off = await fourth_run(server, state, "off", {})
    assert moved_or_fetched(items) == {
        "posts/1": (True, "page_history"),
        "posts/2": (False, "lastmod_idle"),
    }
    assert fetched == ["/posts/1"]
    assert refetch_stats(crawler)["incremental/lastmod_idle_count"] == 1
    assert moved_or_fetched(items_off) == {
        "posts/1": (True, "page_history"),
        "posts/2": (True, "lastmod_changed"),
    }
    assert fetched_off == ["/posts/1", "/posts/2"]
