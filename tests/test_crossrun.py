"""The cross-run score (L2) and the refetch decision, as pure functions, exactly."""

from __future__ import annotations

import math
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sitemapcrawl.sitemaps.dates import parse_lastmod
from sitemapcrawl.verify.crossrun import DECAY, CrossRun, Observation, combine, url_runs
from sitemapcrawl.verify.intervals import wilson
from sitemapcrawl.verify.refetch.decide import RunWindow, SegmentStanding, UrlHistory, decide
from sitemapcrawl.verify.refetch.policy import DAY, Decision, Policy
from sitemapcrawl.verify.refetch.rates import (
    change_probability,
    change_rate,
    page_date_intervals,
    page_dates_verified,
)

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
CUT = NOW - timedelta(days=1)


def test_counts_decay_and_split_by_audit() -> None:
    l2 = CrossRun(tp=10, fp=4, fn=2, tn=20, n_unch=100)
    l2.add_run(
        [
            Observation(delta_l=True, delta_c=True, random=False),
            Observation(delta_l=True, delta_c=False, random=True),
            Observation(delta_l=False, delta_c=True, random=True),
            Observation(delta_l=False, delta_c=False, random=True),
            Observation(delta_l=False, delta_c=True, random=False),  # scheduled: no audit
        ],
        n_unchanged=50,
    )
    assert (l2.tp, l2.fp, l2.fn, l2.tn) == pytest.approx(
        (10 * DECAY + 1, 4 * DECAY + 1, 2 * DECAY + 1, 20 * DECAY + 1)
    )
    assert l2.n_unch == pytest.approx(100 * DECAY + 50)
    assert l2.runs == 1
    assert pytest.approx(0.5) == DECAY**30


def test_metrics() -> None:
    m = CrossRun(tp=20, fp=20, fn=2, tn=98, n_unch=500).metrics()
    assert m["precision"] == 0.5
    assert m["miss_rate"] == 0.02
    assert m["recall"] == round(20 / (20 + 0.02 * 500), 4)
    assert m["lift"] == 25.0
    lo, hi = m["miss_rate_bounds"]
    assert lo < 0.02 < hi
    # the 2 audited misses are counted; the bound applies to the 400 URL-runs not audited
    assert m["recall_lower"] == pytest.approx(20 / (20 + 2 + hi * 400), abs=1e-3)
    assert m["recall_upper"] == pytest.approx(20 / (20 + lo * 500), abs=1e-3)
    # a segment audited whole: no unseen misses, the bound is the count
    assert CrossRun(tp=12, fp=0, fn=0, tn=400, n_unch=400).metrics()["recall_lower"] == 1.0
    # a quarter of it: most of the 400 URL-runs are unseen, the bound is low
    assert CrossRun(tp=12, fp=0, fn=0, tn=100, n_unch=400).metrics()["recall_lower"] < 0.8
    assert CrossRun(tp=5, fp=0, fn=0, tn=10, n_unch=10).metrics()["lift"] == "inf"
    # no URL-run with a still lastmod (every lastmod moved on every run): nothing unseen
    whole = CrossRun(tp=12, fp=3, n_unch=0).metrics()
    assert (whole["recall"], whole["recall_lower"], whole["recall_upper"]) == (1.0, 1.0, 1.0)
    assert CrossRun(tp=12, fp=3, n_unch=5).metrics()["recall_lower"] is None


def test_a_clean_audit_sees_every_run_since_our_previous_fetch() -> None:
    """An unchanged page with a still lastmod, last fetched 10 runs ago, was unchanged on
    each of them: its audit covers 10 ΔL = 0 URL-runs (decayed as N_unch is), not one; a
    miss covers one (the other runs of its window are unknown)."""
    assert url_runs(1) == 1.0
    assert url_runs(10) == pytest.approx(sum(DECAY**i for i in range(10)))
    assert url_runs(10**6) == pytest.approx(1 / (1 - DECAY))
    l2 = CrossRun(n_unch=400)
    l2.add_run(
        [Observation(delta_l=False, delta_c=False, random=True, runs=url_runs(10))] * 20
        + [Observation(delta_l=False, delta_c=True, random=True, runs=url_runs(10))]
        + [Observation(delta_l=False, delta_c=False, random=False, runs=url_runs(10))],
        n_unchanged=40,
    )
    assert (l2.fn, l2.tn) == (1, 20)
    assert l2.seen == pytest.approx(20 * url_runs(10) + 1)
    l2.tp = 30
    m = l2.metrics()
    seen = 20 * url_runs(10) + 1
    assert m["audits"] == 21
    assert m["audited_url_runs"] == round(seen, 2)
    assert m["miss_rate"] == round(1 / 21, 4)  # per audited page: what the lift reads
    assert m["miss_rate_per_run"] == round(1 / seen, 4)
    lo, hi = wilson(1, round(seen), 1.645)
    assert m["miss_rate_bounds"] == [round(lo, 4), round(hi, 4)]
    unseen = 400 * DECAY + 40 - seen
    assert m["recall"] == round(30 / (30 + 1 + unseen / seen), 4)
    assert m["recall_lower"] == pytest.approx(30 / (30 + 1 + hi * unseen), abs=1e-4)
    # the same audits counted one run each (as stored before): a far weaker bound
    old = CrossRun(tp=30, fn=1, tn=20, n_unch=400 * DECAY + 40).metrics()
    assert old["audited_url_runs"] == 21
    assert old["recall_lower"] < 0.5 < m["recall_lower"]
    # counts stored without URL-runs read one run an audit
    assert CrossRun.from_dict({"fn": 1.0, "tn": 20.0}).seen == 21
    assert CrossRun.from_dict(l2.as_dict()).seen == pytest.approx(l2.seen, abs=1e-5)


def test_demote_at_once_and_recover_after_two_clean_runs() -> None:
    l2 = CrossRun(tp=30, fp=1, fn=0, tn=200, n_unch=300, promote_streak=3)
    assert combine("GENERATION_TIME", "stamped.", "TRUSTED", l2)[0] == "GENERATION_TIME"
    assert l2.promote_streak == 0
    name, reason, _ = combine("PROVISIONAL", "30 of 30 agree.", "GENERATION_TIME", l2)
    assert name == "GENERATION_TIME"
    assert reason.startswith("Held at GENERATION_TIME until 2 clean runs in a row (1 so far)")
    assert combine("PROVISIONAL", "30 of 30 agree.", "GENERATION_TIME", l2)[0] in (
        "PROVISIONAL",
        "TRUSTED",
    )


def test_a_once_stale_segment_needs_the_score_not_agreeing_pages() -> None:
    """STALE on one audited miss, then two clean runs: the red verdict is lifted, but its
    pages' agreement (which held all along) is no evidence of recall: UNVERIFIABLE, not
    PROVISIONAL, until the score bounds the recall; then TRUSTED, and the memory goes."""
    l2 = CrossRun(tp=2, fp=0, fn=1, tn=60, n_unch=100, runs=3)
    name, _, _ = combine("PROVISIONAL", "21 of 21 agree.", "PROVISIONAL", l2)
    assert name == "STALE"
    assert CrossRun.from_dict(l2.as_dict()).extra == {"once_stale": 1}
    l2.tp = 4  # more reported changes: the one miss no longer says STALE
    assert combine("PROVISIONAL", "21 of 21 agree.", "STALE", l2)[0] == "STALE"  # held
    name, reason, _ = combine("PROVISIONAL", "21 of 21 agree.", "STALE", l2)
    assert name == "UNVERIFIABLE"
    assert reason == (
        "21 of 21 agree; but this segment's lastmod was STALE (changes it did not report), "
        "which agreeing pages cannot refute: UNVERIFIABLE until the cross-run score bounds "
        "its recall (lower bound >= 0.80)."
    )
    assert combine("PROVISIONAL", "21 of 21 agree.", "UNVERIFIABLE", l2)[0] == "UNVERIFIABLE"
    l2.tp, l2.fn, l2.tn, l2.n_unch = 40, 0, 400, 400
    assert combine("PROVISIONAL", "21 of 21 agree.", "UNVERIFIABLE", l2)[0] == "PROVISIONAL"
    assert "once_stale" not in l2.extra
    # a segment never STALE is PROVISIONAL on its pages' agreement, as before
    fresh = CrossRun(tp=4, fp=0, fn=1, tn=60, n_unch=100, runs=3)
    assert combine("PROVISIONAL", "21 of 21 agree.", "PROVISIONAL", fresh)[0] == "PROVISIONAL"


def test_stale_from_audited_misses() -> None:
    l2 = CrossRun(tp=10, fp=0, fn=4, tn=16, n_unch=200)
    name, reason, _ = combine("PROVISIONAL", "30 of 30 agree.", "TRUSTED", l2)
    assert name == "STALE"
    assert reason == (
        "Across runs, 4 of 20 audited pages whose lastmod did not move had changed "
        "(estimated recall 0.20 < 0.80)."
    )


def test_one_miss_is_stale_while_the_recall_upper_bound_says_so() -> None:
    """Early on (few true positives), one audited miss bounds recall below 0.85: STALE at
    once (docs/verification.md, "Cross-run verdict"); the same miss in a long honest
    history does not."""
    early = CrossRun(tp=2, fp=1, fn=1, tn=24, n_unch=123)
    m_lo = wilson(1, 25, 1.645)[0]  # the miss rate's one-sided 95 % lower bound
    assert early.metrics()["recall_upper"] == round(2 / (2 + m_lo * 123), 4) == 0.6444
    name, reason, _ = combine("PROVISIONAL", "30 of 30 agree.", "PROVISIONAL", early)
    assert (name, reason) == (
        "STALE",
        "Across runs, 1 of 25 audited pages whose lastmod did not move had changed "
        "(recall upper bound 0.64 < 0.85).",
    )
    mature = CrossRun(tp=200, fp=5, fn=1, tn=150, n_unch=4000, promote_streak=2)
    assert mature.metrics()["recall_upper"] > 0.85
    assert combine("PROVISIONAL", "30 of 30 agree.", "TRUSTED", mature)[0] == "TRUSTED"


def test_decayed_misses_are_counted_as_the_misses_they_were() -> None:
    """Three misses decayed by a run (2.93) are still three."""
    l2 = CrossRun(tp=40, fp=0, fn=2.93, tn=40, n_unch=800)
    assert combine("PROVISIONAL", "30 of 30 agree.", "PROVISIONAL", l2)[0] == "STALE"


def test_a_corrected_tz_shift_is_still_judged_by_the_audit() -> None:
    """TZ_SHIFT is a red flag (demote at once), but its lastmod is used corrected by the
    offset, so audited misses make it STALE."""
    clean = CrossRun(tp=20, fp=0, fn=0, tn=40, n_unch=400)
    assert combine("TZ_SHIFT", "off by 5 h.", "TZ_SHIFT", clean)[0] == "TZ_SHIFT"
    missing = CrossRun(tp=10, fp=0, fn=4, tn=16, n_unch=200)
    assert combine("TZ_SHIFT", "off by 5 h.", "TZ_SHIFT", missing)[0] == "STALE"


def test_a_one_stamp_lastmod_over_reports_only_after_the_audit() -> None:
    """A lastmod that is one stamp newer than the pages is held UNVERIFIABLE until 60
    audited pages without a miss; then OVER_REPORTING. Not once it over-reported."""
    args = ("OVER_REPORTING", "30 of 30 sampled pages are older than the lastmod.")
    young = CrossRun(tp=3, fp=20, fn=0, tn=59, n_unch=300)
    assert combine(*args, "GENERATION_TIME", young, stamp=True)[0] == "GENERATION_TIME"
    young.clean_streak = 1
    assert combine(*args, "UNVERIFIABLE", young, stamp=True)[0] == "UNVERIFIABLE"
    audited = CrossRun(tp=3, fp=20, fn=0, tn=60, n_unch=300)
    assert combine(*args, "UNVERIFIABLE", audited, stamp=True)[0] == "OVER_REPORTING"
    assert combine(*args, "UNVERIFIABLE", young, stamp=False)[0] == "OVER_REPORTING"
    # a site-wide bump of a segment already judged a safe filter (or trusted) does not put
    # it back on hold: it was seen to report the changes between stamps
    for judged in ("OVER_REPORTING", "TRUSTED"):
        again = CrossRun(tp=3, fp=20, fn=0, tn=20, n_unch=300)
        assert combine(*args, judged, again, stamp=True)[0] == "OVER_REPORTING"


def test_generation_time_from_lift() -> None:
    # P(ΔC | ΔL) = 30/180 ≈ P(ΔC | no ΔL) = 3/18; every unchanged URL audited and few of
    # them, so recall stays high
    l2 = CrossRun(tp=30, fp=150, fn=3, tn=15, n_unch=18)
    name, reason, _ = combine("PROVISIONAL", "ok.", "PROVISIONAL", l2)
    assert name == "GENERATION_TIME"
    assert "lift 1.00 < 1.5 over 180 lastmod changes" in reason


def test_over_reporting_is_a_safe_filter() -> None:
    l2 = CrossRun(tp=20, fp=40, fn=0, tn=300, n_unch=100)
    name, reason, _ = combine("PROVISIONAL", "ok.", "PROVISIONAL", l2)
    assert name == "OVER_REPORTING"
    assert "only 33% of its moves are real changes" in reason


def test_one_bulk_touch_does_not_make_a_trusted_lastmod_over_report() -> None:
    """A TRUSTED segment (30 changes reported, 5 moves without one) gets 42 moves without
    a change on one run (one commit touched 42 source files): it stays TRUSTED. A second
    such run is a habit: OVER_REPORTING. A segment not yet TRUSTED over-reports at once."""
    l2 = CrossRun(tp=30, fp=5, fn=0, tn=300, n_unch=300, runs=12)
    touched = [Observation(delta_l=True, delta_c=False, random=False)] * 42
    l2.add_run([*touched, Observation(delta_l=True, delta_c=True, random=False)], 20)
    assert l2.fp_burst == 42
    assert l2.fp == pytest.approx(5 * DECAY + 42)
    name, reason, _ = combine("PROVISIONAL", "ok.", "TRUSTED", l2)
    assert name == "TRUSTED"
    assert reason.startswith(
        "Kept TRUSTED: 42 of the 47 lastmod moves without a content change came on one run"
    )
    assert combine("PROVISIONAL", "ok.", "PROVISIONAL", CrossRun.from_dict(l2.as_dict()))[0] == (
        "OVER_REPORTING"
    )
    l2.add_run(touched, 20)
    assert l2.fp_burst == 42
    assert combine("PROVISIONAL", "ok.", "TRUSTED", l2)[0] == "OVER_REPORTING"


def test_no_sample_keeps_the_standing_verdict() -> None:
    l2 = CrossRun()
    args = ("UNVERIFIABLE", "Only 0 of 0 sampled pages carry page evidence (< 20).")
    assert combine(*args, "PROVISIONAL", l2, sampled=False)[0] == "PROVISIONAL"
    assert combine(*args, "PROVISIONAL", l2, sampled=True)[0] == "UNVERIFIABLE"
    assert combine(*args, None, l2, sampled=False)[0] == "UNVERIFIABLE"


QUIET = [(2 * DAY, False)] * 3  # three fetch intervals without a change


def run_decide(**over: Any) -> Decision:
    """``decide`` on a TRUSTED URL fetched two days ago, its lastmod still, with ``over``'s
    fields changed (any field of ``UrlHistory``, ``SegmentStanding`` or ``RunWindow``,
    ``lastmod``, ``draw``, or ``known``)."""
    args: dict[str, Any] = {
        "verdict": "TRUSTED",
        "lastmod": parse_lastmod("2026-11-20T00:00:00Z"),
        "known": True,
        "previous_raw": "2026-11-20T00:00:00Z",
        "since": CUT,
        "since_last": True,
        "now": NOW,
        "last_refetch": NOW - timedelta(days=2),
        "last_fetch": NOW - timedelta(days=2),
        "draw": 0.5,
        "policy": Policy(),
    }
    args.update(over)

    def pick(cls: type) -> dict[str, Any]:
        return {f.name: args.pop(f.name) for f in fields(cls) if f.name in args}

    history_fields = pick(UrlHistory)
    history = UrlHistory(**history_fields) if args.pop("known") else None
    segment = SegmentStanding(**pick(SegmentStanding))
    run = RunWindow(**pick(RunWindow))
    decision = decide(args.pop("lastmod"), history, segment, run, args.pop("draw"))
    assert not args, f"unknown fields {sorted(args)}"
    return decision


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({}, (False, "lastmod_unchanged")),
        ({"known": False}, (True, "new")),
        ({"lastmod": parse_lastmod("2026-11-29T23:30:00Z")}, (True, "lastmod_changed")),
        ({"previous_raw": "2026-11-10"}, (True, "lastmod_changed")),  # the value moved
        ({"lastmod": parse_lastmod("2026-11-29")}, (True, "lastmod_changed")),  # whole day
        ({"draw": 0.01}, (True, "audit")),
        ({"draw": 0.05}, (False, "lastmod_unchanged")),  # 3 % audit for TRUSTED
        ({"draw": 0.05, "verdict": "PROVISIONAL"}, (True, "audit")),  # 8 %
        (
            {
                "verdict": "PROVISIONAL",
                "last_refetch": NOW - timedelta(days=40),
                "last_fetch": None,
            },
            (True, "max_age"),
        ),
        # a TRUSTED segment's safety net is a year (its audit measures the misses)
        (
            {"last_refetch": NOW - timedelta(days=40), "last_fetch": None},
            (False, "lastmod_unchanged"),
        ),
        ({"last_refetch": NOW - timedelta(days=400), "last_fetch": None}, (True, "max_age")),
        # the very timestamp seen before the cut, 20 minutes before it: no move (its ± τ
        # interval would reach past the cut)
        (
            {
                "lastmod": parse_lastmod("2026-11-29T11:40:00Z"),
                "previous_raw": "2026-11-29T11:40:00Z",
            },
            (False, "lastmod_unchanged"),
        ),
        ({"lastmod": None, "last_fetch": None}, (True, "undated")),
        ({"verdict": "GENERATION_TIME", "last_fetch": None}, (True, "no_history")),
        ({"verdict": "GENERATION_TIME"}, (True, "no_history")),  # fetched once: no interval
        ({"verdict": "GENERATION_TIME", "intervals": QUIET}, (False, "poisson_wait")),
        (
            {"verdict": "GENERATION_TIME", "intervals": [(DAY, True)] * 4},
            (True, "poisson"),
        ),
        ({"verdict": "STALE", "previous_raw": "2026-11-10"}, (True, "lastmod_changed")),
        ({"verdict": "STALE", "intervals": QUIET}, (False, "poisson_wait")),
        ({"verdict": "PARTIAL", "subset_trusted": True}, (False, "lastmod_unchanged")),
        ({"verdict": "PARTIAL", "intervals": QUIET}, (False, "poisson_wait")),
        # a lagged sitemap: the value moved into the window our last fetch found it in
        (
            {
                "previous_raw": "2026-11-10",
                "lastmod": parse_lastmod("2026-11-27T13:00:00Z"),
                "captured": (NOW - timedelta(days=3), NOW - timedelta(days=2)),
            },
            (False, "lastmod_unchanged"),
        ),
        (
            {
                "previous_raw": "2026-11-10",
                "lastmod": parse_lastmod("2026-11-28T13:00:00Z"),  # after that fetch
                "captured": (NOW - timedelta(days=3), NOW - timedelta(days=2)),
            },
            (True, "lastmod_changed"),
        ),
        # ... and when the page, edited lately, changes often: the change rate decides
        (
            {
                "previous_raw": "2026-11-10",
                "lastmod": parse_lastmod("2026-11-27T13:00:00Z"),
                "captured": (NOW - timedelta(days=3), NOW - timedelta(days=2)),
                "intervals": [(DAY, True)] * 4,
            },
            (True, "lastmod_late"),
        ),
        # TZ_SHIFT: used corrected by its offset, with the PROVISIONAL audit
        ({"verdict": "TZ_SHIFT", "draw": 0.05}, (True, "no_history")),
        ({"verdict": "TZ_SHIFT", "shift": 5 * 3600.0, "draw": 0.05}, (True, "audit")),
        (
            {
                "verdict": "TZ_SHIFT",
                "shift": 5 * 3600.0,
                "since_last": False,
                "lastmod": parse_lastmod("2026-11-29T04:00:00Z"),  # 23:00 the day before
            },
            (False, "lastmod_unchanged"),
        ),
        # a date in any timezone may end 14 h after its UTC day; in the site's own zone not
        ({"since_last": False, "lastmod": parse_lastmod("2026-11-28")}, (True, "lastmod_changed")),
        (
            {"since_last": False, "lastmod": parse_lastmod("2026-11-28"), "utc_offset": 7200.0},
            (False, "lastmod_unchanged"),
        ),
        # a TRUSTED segment's audit share sized by need
        ({"draw": 0.02, "audit_share": 0.01}, (False, "lastmod_unchanged")),
        (
            {"verdict": None, "last_fetch": NOW - timedelta(days=31), "intervals": QUIET},
            (True, "max_age"),
        ),
        # verified page dates: one fetch is enough, and they say how long the page was quiet
        (
            {"verdict": "ABSENT", "page_history": ([(1.0, True), (30 * DAY, False)], (0, 0.0))},
            (False, "poisson_wait"),
        ),
        (
            {"verdict": "ABSENT", "page_history": ([(1.0, True), (3600.0, False)], (0, 0.0))},
            (True, "poisson"),
        ),
        # without them the same URL, fetched once, is fetched again
        ({"verdict": "ABSENT", "page_history": None}, (True, "no_history")),
        (
            {
                "verdict": "ABSENT",
                "page_history": ([(1.0, True), (30 * DAY, False)], (0, 0.0)),
                "policy": Policy(page_dates=False),
            },
            (True, "no_history"),
        ),
        # a trusted lastmod decides before any change rate
        (
            {"page_history": ([(1.0, True), (3600.0, False)], (0, 0.0))},
            (False, "lastmod_unchanged"),
        ),
    ],
)
def test_decide(over: dict[str, object], expected: tuple[bool, str]) -> None:
    decision = run_decide(**over)
    assert (decision.refetch, decision.reason) == expected


def test_change_rate_and_probability() -> None:
    policy = Policy()
    # a page seen changed on every daily fetch changes more than once a day
    assert change_rate([(DAY, True)] * 10, 0, 0.0, policy) * DAY > 1.5
    # never changed over 10 daily fetches: the rate falls well under the 30-day prior
    assert change_rate([(DAY, False)] * 10, 0, 0.0, policy) * DAY < 1 / 30
    assert change_probability(1 / DAY, DAY) == pytest.approx(1 - math.exp(-1))
    assert change_probability(1 / DAY, -5) == 0.0


DAYS = [NOW - timedelta(days=k) for k in range(12)]


@pytest.mark.parametrize(
    ("page_date", "previous_date", "changed", "expected"),
    [
        # the date moved into the window and the content changed: a change seen at the date
        (DAYS[0] - timedelta(hours=5), DAYS[9], True, ([(1.0, True), (5 * 3600.0, False)], "hit")),
        # the content changed, the date stayed put (or moved to before our last fetch)
        (DAYS[9], DAYS[9], True, ([(DAY, True)], "miss")),
        (DAYS[3], DAYS[9], True, ([(DAY, True)], "miss")),
        (None, DAYS[9], True, ([(DAY, True)], "miss")),
        # nothing changed and the date says so
        (DAYS[9], DAYS[9], False, ([(DAY, False)], "still")),
        # the date moved while the content did not (a render time)
        (DAYS[0], DAYS[1] + timedelta(hours=1), False, ([(DAY, False)], "false")),
        # a date in the future is no observation
        (NOW + timedelta(hours=3), DAYS[9], True, ([(DAY, True)], "miss")),
        (None, None, False, ([(DAY, False)], None)),
    ],
)
def test_page_date_intervals(
    page_date: datetime | None,
    previous_date: datetime | None,
    changed: bool,
    expected: tuple[list[tuple[float, bool]], str | None],
) -> None:
    got = page_date_intervals(
        fetched_at=NOW,
        page_date=page_date,
        previous_fetch=DAYS[1],
        previous_date=previous_date,
        changed=changed,
        cap=30 * DAY,
    )
    assert got == expected


def test_page_date_intervals_first_fetch_and_verification() -> None:
    first = {"previous_fetch": None, "previous_date": None, "changed": None, "cap": 30 * DAY}
    # the quiet time since the page's date, up to the cap
    assert page_date_intervals(fetched_at=NOW, page_date=DAYS[2], **first) == (
        [(1.0, True), (2 * DAY, False)],
        None,
    )
    assert page_date_intervals(fetched_at=NOW, page_date=NOW - timedelta(days=700), **first)[0] == [
        (1.0, True),
        (30 * DAY, False),
    ]
    assert page_date_intervals(fetched_at=NOW, page_date=None, **first) == ([], None)
    # a page edited two years ago is due much later than one edited this morning
    policy = Policy()
    old = change_rate([(1.0, True), (30 * DAY, False)], 0, 0.0, policy)
    fresh = change_rate([(1.0, True), (3 * 3600.0, False)], 0, 0.0, policy)
    assert old * DAY < 0.1
    assert fresh * DAY > 1
    # honest dates are verified; too few, stale or moving ones are not
    assert page_dates_verified(10, 0, 0, 100)
    assert not page_dates_verified(9, 0, 0, 100)
    assert not page_dates_verified(10, 4, 0, 100)
    assert not page_dates_verified(30, 0, 12, 88)
    assert not page_dates_verified(30, 0, 0, 0)  # never seen a quiet page: no check of moves


def test_last_modified_equal_to_date_is_no_evidence() -> None:
    from sitemapcrawl.pipelines.pages import _is_now
    from sitemapcrawl.sitemaps.dates import parse_feed_date

    date = parse_feed_date("Mon, 30 Nov 2026 12:00:00 GMT")
    same = parse_feed_date("Mon, 30 Nov 2026 11:59:30 GMT")
    older = parse_feed_date("Sun, 29 Nov 2026 12:00:00 GMT")
    assert same is not None
    assert older is not None
    assert _is_now(same, date) is True
    assert _is_now(older, date) is False
    assert _is_now(same, None) is False
