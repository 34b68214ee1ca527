"""The real-history benchmark's fetch scoring (bench/realweb): the lastmod follower's
refetches, the honest refetches by reason, and whatif's per-URL learner, on a small truth."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING

from bench.realweb import corpus, run, server, split, truth, whatif

if TYPE_CHECKING:
    from pathlib import Path


def _truth() -> truth.Truth:
    """Three deploys. /a/ changes with a lastmod move at 1; /b/'s lastmod moves at 1 and 2
    without a change; /c/ changes at 1 without a move; /d/ is new at 2."""
    fingerprints: list[dict[str, str | None]] = [
        {"/a/": "a1", "/b/": "b1", "/c/": "c1"},
        {"/a/": "a2", "/b/": "b1", "/c/": "c2"},
        {"/a/": "a2", "/b/": "b1", "/c/": "c2", "/d/": "d1"},
    ]
    lastmods: list[dict[str, str | None]] = [
        {"/a/": "2024-01-01", "/b/": "2024-01-01", "/c/": "2024-01-01"},
        {"/a/": "2024-01-02", "/b/": "2024-01-02", "/c/": "2024-01-01"},
        {"/a/": "2024-01-02", "/b/": "2024-01-03", "/c/": "2024-01-01", "/d/": "2024-01-03"},
    ]
    return truth.Truth(["/a/", "/b/", "/c/", "/d/"], fingerprints, lastmods).finish()


def _label_of(k: int, page: str) -> str | None:
    return "STALE" if page == "/c/" else "TRUSTED"


def _standing_of(k: int, page: str) -> str | None:
    return "PROVISIONAL" if k == 1 else "TRUSTED"


def test_lastmod_follower_counts_the_moves_of_pages_listed_before() -> None:
    got = run.lastmod_follower(_truth(), 3, _label_of, _standing_of)
    assert {name: dict(c) for name, c in got.items()} == {
        "TRUSTED": {"moved_old": 3, "moved_old_changed": 1},
        "TRUSTED, standing TRUSTED": {"moved_old": 1, "moved_old_changed": 0},
    }
    assert run.lastmod_follower(_truth(), 3, None, None) == {}


def test_trusted_refetch_reasons_on_trusted_segment_runs_only() -> None:
    records = [run.RunRecord(k, f"c{k}", "", 0, 0.0) for k in range(3)]
    records[1].refetch = {"/a/": "lastmod_changed", "/b/": "lastmod_changed", "/c/": "audit"}
    records[2].refetch = {"/b/": "lastmod_changed", "/a/": "audit", "/d/": "new"}

    def standing(k: int, page: str) -> str | None:
        return "TRUSTED"

    got = run.trusted_refetch_reasons(_truth(), records, _label_of, standing)
    assert got == {
        "audit": {"refetch": 1, "changed": 0},
        "lastmod_changed": {"refetch": 3, "changed": 1},
    }
    assert run.trusted_refetch_reasons(_truth(), records, _label_of, _standing_of) == {
        "audit": {"refetch": 1, "changed": 0},
        "lastmod_changed": {"refetch": 1, "changed": 0},
    }


def test_whatif_learner_skips_a_page_whose_moves_carry_no_change() -> None:
    runs = [whatif.PageRun(k, "/b/", True, False, 0) for k in (1, 2, 3)]
    runs.append(whatif.PageRun(4, "/b/", True, True, 1))
    assert whatif.replay(runs) == (4, 0, 1)
    # two clean moves fetched: a posterior of 1/4 under 0.3, the later moves are left
    assert whatif.replay(runs, 0.3, 2) == (2, 1, 1)
    # under 0.2 it is not: every move is fetched
    assert whatif.replay(runs, 0.2, 2) == (4, 0, 1)
    # a change seen on a fetched move keeps the page followed
    mixed = [whatif.PageRun(1, "/a/", True, True, 1), whatif.PageRun(2, "/a/", True, False, 1)]
    mixed.append(whatif.PageRun(3, "/a/", True, True, 2))
    assert whatif.replay(mixed, 0.3, 2) == (3, 0, 2)


def test_freeze_lastmods_rewrites_the_known_pages_only() -> None:
    body = (
        b"<urlset><url><loc>http://127.0.0.1:5/a/</loc><lastmod>2024-02-02</lastmod></url>\n"
        b"<url>\n <loc> /b/ </loc>\n <lastmod>2024-03-03T00:00:00Z</lastmod></url>"
        b"<url><loc>http://x/c/</loc><lastmod>2024-01-05</lastmod></url>"
        b"<url><loc>http://x/d/</loc></url></urlset>"
    )
    frozen: dict[str, str | None] = {"/a/": "2023-01-01", "/b/": "2023-02-02", "/c/": None}
    assert server.freeze_lastmods(body, frozen) == (
        b"<urlset><url><loc>http://127.0.0.1:5/a/</loc><lastmod>2023-01-01</lastmod></url>\n"
        b"<url>\n <loc> /b/ </loc>\n <lastmod>2023-02-02</lastmod></url>"
        b"<url><loc>http://x/c/</loc><lastmod>2024-01-05</lastmod></url>"
        b"<url><loc>http://x/d/</loc></url></urlset>"
    )


def test_score_frozen_counts_the_runs_to_stop_trusting() -> None:
    spec = next(s for s in corpus.load_sites() if s.name == "hugo-jena")
    assert (spec.label("/about_jena/") or {}).get("verdict") == "TRUSTED"
    fingerprints: list[dict[str, str | None]] = [
        {"/about_jena/x/": f"v{k // 2}", "/about_jena/y/": "y"} for k in range(5)
    ]
    lastmods: list[dict[str, str | None]] = [
        {"/about_jena/x/": "2024-01-01", "/about_jena/y/": "2024-01-01"} for _ in range(5)
    ]
    tr = truth.Truth(["/about_jena/x/", "/about_jena/y/"], fingerprints, lastmods).finish()
    segmaps = [dict.fromkeys(tr.pages, "/about_jena/") for _ in range(5)]
    verdicts = ["TRUSTED", "TRUSTED", "TRUSTED", "TRUSTED", "STALE"]
    records = []
    for k, verdict in enumerate(verdicts):
        record = run.RunRecord(k, f"c{k}", "", 0, 0.0)
        record.segments = {"/about_jena/": {"verdict": verdict}}
        records.append(record)
    records[4].page_gets = ["/about_jena/x/"]
    # x changes at deploys 2 and 4: both after the freeze at 2, the second one fetched on
    # the run that stopped trusting the segment
    got = run.score_frozen(tr, segmaps, records, 2, spec)
    assert got == {
        "from": 2,
        "segments": {
            "/about_jena/": {
                "before": "TRUSTED",
                "verdicts": ["TRUSTED", "TRUSTED", "STALE"],
                "detected": 4,
                "changes_until": 2,
                "fetched_until": 1,
            }
        },
    }


def test_quiet_detector_counts_runs_not_moves() -> None:
    steady = [2, 1, 3, 1, 2, 1, 2, 1]
    # no quiet run yet: no alarm; after eight moving runs the Wilson bound of the quiet
    # share is 0.253: 3 quiet runs 0.016, 4 quiet runs 0.004 (under 0.01)
    assert whatif.quiet_alarms(steady) == []
    assert whatif.quiet_alarms([*steady, 0, 0, 0, 0, 0]) == [12, 13]
    # a bursty segment (quiet most runs) never alarms, however large its bursts
    bursty = [0, 0, 20, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 30, 0, 0, 0, 0, 0]
    assert whatif.quiet_alarms(bursty) == []
    # too short a history says nothing
    assert whatif.quiet_alarms([5, 5, 5, 0, 0, 0, 0, 0, 0]) == []


def test_a_failed_run_is_wrong_for_every_segment_it_should_have_judged() -> None:
    label = {"verdict": "ABSENT", "accept": ["ABSENT"]}
    got = run.score_segment(label, ["ABSENT", None, "ABSENT", "ABSENT"], failed={1})
    # run 1 crashed: not a gap but a wrong run (the segment had a verdict before and after)
    assert got["verdicts"] == ["ABSENT", run.FAILED, "ABSENT", "ABSENT"]
    assert got["gaps"] == 0
    assert got["right_runs"] == 3
    assert got["failed_runs"] == 1
    assert got["runs_to_right"] == 3
    # a failed last run: wrong at the end, never right within 5 runs
    last = run.score_segment(label, ["ABSENT", "ABSENT", None], failed={2})
    assert (last["right_final"], last["right_within_run0"], last["final"]) == (
        False,
        False,
        run.FAILED,
    )
    # a segment no run judged, but the deploys have: each failed run it should have judged
    never = run.score_segment(label, [None, None, None], failed={0, 2}, expected=[True] * 3)
    assert never["verdicts"] == [run.FAILED, None, run.FAILED]
    assert (never["runs_present"], never["right_runs"], never["gaps"]) == (2, 0, 1)
    # a run that did not fail and gave no verdict is still a gap
    assert run.score_segment(label, ["ABSENT", None, "ABSENT"])["gaps"] == 1


def test_exact_matches_beside_the_accept_list() -> None:
    label = {"verdict": "STALE", "accept": ["STALE", "GENERATION_TIME", "UNVERIFIABLE"]}
    got = run.score_segment(label, ["UNVERIFIABLE", "GENERATION_TIME", "STALE", "STALE"])
    assert (got["right_runs"], got["exact_runs"]) == (4, 2)
    assert got["right_within_run0"]
    assert got["runs_to_right"] == 1
    assert got["exact_within_run0"]
    assert got["strict_final"]
    late = run.score_segment(label, ["UNVERIFIABLE"] * 6 + ["STALE"])
    assert (late["right_within_run0"], late["exact_within_run0"]) == (True, False)


def test_honest_segments_judged_stale_or_over_reporting_and_streaks() -> None:
    label = {"verdict": "TRUSTED", "accept": ["TRUSTED", "OVER_REPORTING"]}
    verdicts = ["PROVISIONAL", "STALE", "STALE", "TRUSTED", "OVER_REPORTING", None, "STALE"]
    got = run.score_segment(label, verdicts)
    # counted whatever the accept list says (OVER_REPORTING is accepted here)
    assert got["honest_wrong_runs"] == 4
    assert got["honest_wrong_streak"] == 2  # runs 1-2; the gap at 5 ends run 4's streak
    prov = run.score_segment({"verdict": "PROVISIONAL"}, ["STALE", "PROVISIONAL"])
    assert (prov["honest_wrong_runs"], prov["honest_wrong_streak"]) == (1, 1)
    stale = run.score_segment({"verdict": "STALE"}, ["STALE", "TRUSTED", "TRUSTED", "STALE"])
    assert stale["honest_wrong_runs"] == 0
    assert (stale["dangerous_runs"], stale["dangerous_streak"]) == (2, 2)
    assert run.longest_streak([True, False, True, True, True, False]) == 3
    assert run.longest_streak([]) == 0


def _site(name: str, repo: str, segments: dict[str, dict[str, object]]) -> dict[str, object]:
    return {
        "name": name,
        "repo": repo,
        "segments": segments,
        "fetches": {"totals": {}},
        "failed_runs": [],
    }


def test_summaries_per_half() -> None:
    trusted = {"verdict": "TRUSTED", "accept": ["TRUSTED"]}
    stale = {"verdict": "STALE", "accept": ["STALE", "GENERATION_TIME", "UNVERIFIABLE"]}
    a = run.score_segment(trusted, ["PROVISIONAL", "STALE", "STALE", "TRUSTED"], [0] * 4)
    b = run.score_segment(stale, ["TRUSTED", "STALE", "STALE", "STALE"])
    c = run.score_segment(stale, ["GENERATION_TIME", None, "GENERATION_TIME"], failed={1})
    repos = {}
    for repo in ("x/a", "x/b", "x/c", "x/d", "x/e"):
        repos.setdefault(split.half(repo), []).append(repo)
    held, tuning = repos[split.HELD_OUT][0], repos[split.TUNING][0]
    results = [
        _site("one", held, {"/": a, "/b/": b}),
        _site("two", tuning, {"/": c}),
    ]
    halves = run.summarise_halves(results)
    h = halves[split.HELD_OUT]
    assert (h["sites"], h["segments"], h["segment_runs"]) == (1, 2, 8)
    assert (h["right_within_run0"], h["right_runs"], h["exact_runs"]) == (2, 5, 4)
    assert (h["honest_segment_runs"], h["honest_wrong_runs"], h["honest_wrong_streak_max"]) == (
        4,
        2,
        2,
    )
    assert (h["honest_wrong_over_1"], h["dangerous_runs"], h["dangerous_max"]) == (1, 1, 1)
    t = halves[split.TUNING]
    assert (t["segments"], t["segment_runs"], t["right_runs"], t["exact_runs"]) == (1, 3, 2, 0)
    assert (t["failed_segment_runs"], t["right_within_run0"], t["right_final"]) == (1, 1, 1)
    # the rule is the low bit of blake2b(repo)'s first byte, fixed for good
    assert split.half("apache/jena-site") == split.HELD_OUT
    assert split.half("L-Arantele/saint-gilles-vieux-marche.net") == split.TUNING


def test_equal_gets_per_segment_and_class() -> None:
    """/a/ and /b/ in /x/, /c/ and /d/ in /y/. Run 1: /a/ and /c/ change, the spider
    records /a/ only: /x/ caught 1 where a uniform draw of 1 of 2 pages expects 0.5, and
    Poisson-only, with no history, takes /b/ (the hash breaks the tie) and catches none;
    /y/ fetched nothing of its 1 change. Run 2: nothing changed; /d/ is new (not counted)."""
    records = [run.RunRecord(k, f"c{k}", "", 0, 0.0) for k in range(3)]
    records[0].recorded = ["/a/", "/b/", "/c/"]
    records[1].recorded = ["/a/"]
    records[2].recorded = ["/b/", "/d/"]
    segmap = {"/a/": "/x/", "/b/": "/x/", "/c/": "/y/", "/d/": "/y/"}
    labels = {"/x/": "TRUSTED", "/y/": "STALE"}
    got = run.equal_gets(_truth(), [segmap] * 3, records, [0.0, 86400.0, 172800.0], labels.get)
    x = {
        "changes": 1,
        "listed": 4,
        "fetched": 2,
        "caught": 1,
        "uniform": 0.5,
        "poisson": 0,
        "x_uniform": 2.0,
        "x_poisson": None,
    }
    y = {
        "changes": 1,
        "listed": 2,
        "fetched": 0,
        "caught": 0,
        "uniform": 0.0,
        "poisson": 0,
        "x_uniform": None,
        "x_poisson": None,
    }
    site = {**x, "changes": 2, "listed": 6}
    assert got == {
        "site": site,
        "by_class": {"STALE": y, "TRUSTED": x},
        "by_segment": {"/x/": x, "/y/": y},
    }
    summary = run.summarise(
        [{"segments": {}, "fetches": {"totals": {}, "equal_gets": got}, "failed_runs": []}] * 2
    )
    assert summary["equal_gets_by_class"]["TRUSTED"] == {
        **x,
        "changes": 2,
        "listed": 8,
        "fetched": 4,
        "caught": 2,
        "uniform": 1.0,
    }


def test_recorded_by_run_reads_each_finished_run_from_the_state_file(tmp_path: Path) -> None:
    """A killed run (not finished) is left out; paths only, per run, in run order."""
    state = tmp_path / "state.sqlite"
    with contextlib.closing(sqlite3.connect(state)) as db:
        db.executescript(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, finished_at TEXT);"
            "CREATE TABLE fetches (run_id INTEGER, url TEXT);"
            "INSERT INTO runs VALUES (1, 'x'), (2, NULL), (3, 'y');"
            "INSERT INTO fetches VALUES (1, 'http://h/a/'), (1, 'http://h/b/'),"
            " (2, 'http://h/a/'), (3, 'http://h/'), (3, 'http://h/b/');"
        )
        db.commit()
    assert run.recorded_by_run(state) == [["/a/", "/b/"], ["/", "/b/"]]
    assert run.recorded_by_run(tmp_path / "none.sqlite") is None
