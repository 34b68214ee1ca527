"""Lastmod trust scoring (L0 dispersion, L1 agreement, static verdicts) and page sampling."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.sitemaps.dates import FLAGS, PRECISIONS, LastMod, parse_lastmod
from sitemapcrawl.verify.agreement import agreement, outcome_counts
from sitemapcrawl.verify.dispersion import SegmentL0, SegmentL0Accumulator, burst_stamp, l0_signals
from sitemapcrawl.verify.intervals import lastmod_interval, wilson
from sitemapcrawl.verify.rules import static_verdict
from sitemapcrawl.verify.sampling import (
    SegmentSampler,
    allocate,
    fpc_sample_size,
    stratified_proportion,
    url_hash,
)
from sitemapcrawl.verify.stamps import SiteView, page_stamps, stamp_cluster
from sitemapcrawl.verify.thresholds import MAX_LAG

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

T_REF = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def z(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def lm(text: str) -> LastMod:
    parsed = parse_lastmod(text, now=T_REF)
    assert parsed is not None
    return parsed


def l0_of(entries: Iterable[LastMod | None], **kwargs: Any) -> SegmentL0:
    acc = SegmentL0Accumulator()
    for entry in entries:
        acc.add(entry)
    return acc.result(kwargs.pop("t_ref", T_REF), **kwargs)


# --- synthetic segments ----------------------------------------------------


def generation_time() -> list[LastMod | None]:
    """500 URLs stamped within the 2 minutes before the server clock."""
    return [lm(z(T_REF - timedelta(seconds=i * 120 // 500))) for i in range(500)]


def honest(n: int = 500) -> list[LastMod | None]:
    """Spread evenly over 3 years, at odd minutes."""
    step = timedelta(days=3 * 365) / n
    return [lm(z(T_REF - step * i - timedelta(minutes=7))) for i in range(n)]


def bulk_import(share: float = 0.7) -> list[LastMod | None]:
    """A share of 500 URLs imported within 4 minutes on one old day, the rest honest."""
    n_bulk = round(500 * share)
    start = datetime(2021, 3, 15, 3, 10, tzinfo=UTC)
    bulk = [lm(z(start + timedelta(seconds=i % 240))) for i in range(n_bulk)]
    step = timedelta(days=700) / (500 - n_bulk)
    before = [lm(z(start - step * (i + 1))) for i in range(500 - n_bulk)]
    return bulk + before


def daily_stamp() -> list[LastMod | None]:
    """Every URL dated today (date-only)."""
    return [lm("2024-06-01") for _ in range(500)]


def absent() -> list[LastMod | None]:
    return [None] * 480 + honest(20)


def partial() -> list[LastMod | None]:
    return [None] * 250 + honest(250)


def future_3h() -> list[LastMod | None]:
    """Generation time mislabelled by +3 h: every value is 3 h (and < 1 min) ahead."""
    return [lm(z(T_REF + timedelta(hours=3, seconds=i % 50))) for i in range(500)]


def future_random() -> list[LastMod | None]:
    rng = random.Random(7)
    ahead = [lm(z(T_REF + timedelta(minutes=rng.randrange(200, 90_000)))) for _ in range(100)]
    return ahead + honest(400)


def news_burst() -> list[LastMod | None]:
    """A news segment: 500 articles published in the last ten minutes, 1.2 s apart: a
    cluster no other kind of segment has honestly, the normal state of a news sitemap."""
    base = T_REF - timedelta(minutes=10)
    return [lm(z(base + timedelta(milliseconds=1200 * i))) for i in range(500)]


def news_stamped() -> list[LastMod | None]:
    """A news segment whose 500 entries carry the generation time, written per entry to
    the millisecond: all within one second."""
    base = T_REF - timedelta(minutes=3)
    return [lm(f"{z(base)[:-1]}.{i:03d}Z") for i in range(500)]


def invalid_heavy() -> list[LastMod | None]:
    return [lm("yesterday")] * 150 + honest(350)


# --- L0 metrics --------------------------------------------------------------


L0_CASES: list[tuple[str, Callable[[], list[LastMod | None]], dict[str, Any], dict[str, Any]]] = [
    (
        "generation_time",
        generation_time,
        {},
        {
            "n": 500,
            "n_lastmod": 500,
            "coverage": 1.0,
            "invalid_share": 0.0,
            "mode_share": 0.01,  # 120 distinct seconds, at most 5 URLs each
            "n_distinct": 120,
            "window": "10min",
            "window_share": 1.0,
            "top2_share": 1.0,
            "distinct_ratio": 0.24,
            "recency_10m": 1.0,
            "recency_1h": 1.0,
            "recency_24h": 1.0,
            "recency_48h": 1.0,
            "cluster_start": "2024-06-01T11:58:01Z",
            "cluster_end": "2024-06-01T12:00:00Z",
            "cluster_centre": "2024-06-01T11:59:00.5Z",
            "max_lastmod": "2024-06-01T12:00:00Z",
            "alignment_s": 0.0,
            "alignment_source": "max_lastmod",
            "gen_alignment_s": None,
            "future_share": 0.0,
            "tz_shift_k": None,
            "sentinel_share": 0.0,
            "date_only_share": 0.0,
            "no_tz_share": 0.0,
        },
    ),
    (
        "honest",
        honest,
        {"sitemap_last_modified": T_REF - timedelta(hours=1)},
        {
            "n_distinct": 500,
            "mode_share": 0.002,
            "window_share": 0.002,
            "top2_share": 0.004,
            "distinct_ratio": 1.0,
            "entropy": 1.0,
            "recency_10m": 0.002,  # only the URL 7 minutes old
            "recency_1h": 0.002,
            "recency_24h": 0.002,
            "recency_48h": 0.002,
            "cluster_centre": "2024-06-01T11:53:00Z",
            "gen_alignment_s": 3180.0,  # 53 min between the header and the newest URL
            "future_share": 0.0,
        },
    ),
    (
        "bulk_import",
        bulk_import,
        {"sitemap_last_modified": T_REF, "index_lastmod": T_REF - timedelta(minutes=5)},
        {
            "window_share": 0.7,
            "top2_share": 0.702,
            "cluster_start": "2021-03-15T03:10:00Z",
            "cluster_end": "2021-03-15T03:13:59Z",
            "alignment_s": 0.0,  # max(lastmod) is in the cluster ...
            "alignment_source": "max_lastmod",
            "gen_alignment_s": 101464861.0,  # ... but the generation time is far away
            "recency_48h": 0.0,
        },
    ),
    (
        "daily_stamp",
        daily_stamp,
        {},
        {
            "window": "1day",
            "window_share": 1.0,
            "mode_share": 1.0,
            "n_distinct": 1,
            "distinct_ratio": 0.002,
            "entropy": 0.0,
            "cluster_start": "2024-06-01T00:00:00Z",
            "cluster_end": "2024-06-02T00:00:00Z",
            "cluster_centre": "2024-06-01T12:00:00Z",
            "date_only_share": 1.0,
            "recency_1h": 0.0,  # midnight is 12 h before the server clock
            "recency_24h": 1.0,
            "future_share": 0.0,  # today's date is never in the future, whatever the zone
        },
    ),
    ("absent", absent, {}, {"n": 500, "n_lastmod": 20, "coverage": 0.04}),
    ("partial", partial, {}, {"n": 500, "n_lastmod": 250, "coverage": 0.5}),
    (
        "future_3h",
        future_3h,
        {},
        {
            "future_share": 1.0,
            "tz_shift_k": 3,
            "tz_shift_share": 1.0,
            "window_share": 1.0,
            "recency_48h": 0.0,
        },
    ),
    ("future_random", future_random, {}, {"future_share": 0.2, "tz_shift_k": None}),
    (
        "news_burst",
        news_burst,
        {"news": True},
        {"news": True, "window_share": 1.0, "n_distinct": 500, "recency_10m": 1.0},
    ),
    (
        "invalid_heavy",
        invalid_heavy,
        {},
        {"n": 500, "n_lastmod": 350, "n_invalid": 150, "invalid_share": 0.3, "coverage": 0.7},
    ),
    (
        "granularity_mix",
        lambda: [lm("2024-05-01T10:00:00"), lm("2024-05-01"), lm("1970-01-01"), lm("2024-05")],
        {},
        {"no_tz_share": 0.25, "date_only_share": 0.75, "sentinel_share": 0.25, "window": "1day"},
    ),
]


@pytest.mark.parametrize(
    ("build", "kwargs", "expected"),
    [case[1:] for case in L0_CASES],
    ids=[case[0] for case in L0_CASES],
)
def test_l0_metrics(
    build: Callable[[], list[LastMod | None]], kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    metrics = l0_of(build(), **kwargs).as_dict()
    assert {k: metrics[k] for k in expected} == expected


SIGNAL_CASES: list[tuple[str, Callable[[], list[LastMod | None]], dict[str, Any], list[str]]] = [
    ("generation_time", generation_time, {}, ["generation_time_suspected"]),
    ("honest", honest, {}, []),
    ("bulk_import", bulk_import, {"sitemap_last_modified": T_REF}, ["clustered_old"]),
    # 95 % on the import day and max(lastmod) inside it: still not generation time
    ("bulk_import_95", lambda: bulk_import(0.95), {}, ["clustered_old"]),
    ("daily_stamp", daily_stamp, {}, ["generation_time_suspected"]),
    ("absent", absent, {}, ["absent"]),
    ("partial", partial, {}, ["partial"]),
    ("future_3h", future_3h, {}, ["tz_shift:3", "generation_time_suspected"]),
    ("future_random", future_random, {}, ["invalid"]),
    ("news_burst", news_burst, {"news": True}, []),
    ("news_stamped", news_stamped, {"news": True}, ["generation_time_suspected"]),
    ("news_burst_not_news", news_burst, {}, ["generation_time_suspected"]),
    ("invalid_heavy", invalid_heavy, {}, ["partial", "invalid"]),
    # 19 stamps over 2 minutes: too few for a 10-minute window to mean anything
    ("too_few", lambda: generation_time()[::27], {}, ["too_few"]),
    # 19 pages within 5 seconds: one stamp to the second, however few (issue 20)
    (
        "too_few_in_a_burst",
        lambda: generation_time()[:19],
        {},
        ["too_few", "generation_time_suspected"],
    ),
    # 19 pages dated today: a small site regenerated daily (MkDocs' lastmods, issue 20)
    (
        "too_few_dates_of_today",
        lambda: daily_stamp()[:19],
        {},
        ["too_few", "generation_time_suspected"],
    ),
    # 9 are too few for one day to be no coincidence
    ("too_few_burst_of_dates", lambda: daily_stamp()[:9], {}, ["too_few"]),
    # 19 dates on one old day: an import, too few to say even that
    ("too_few_dates_of_one_old_day", lambda: [lm("2024-03-01")] * 19, {}, ["too_few"]),
    (
        # an old deploy stamp aligned with the sitemap's own Last-Modified
        "old_cluster_aligned",
        lambda: [lm("2024-05-20T08:00:00Z")] * 100,
        {"sitemap_last_modified": datetime(2024, 5, 20, 8, 4, tzinfo=UTC)},
        ["generation_time_suspected"],
    ),
    (
        "old_cluster_misaligned",
        lambda: [lm("2024-05-20T08:00:00Z")] * 100,
        {"sitemap_last_modified": datetime(2024, 5, 20, 8, 11, tzinfo=UTC)},
        ["clustered_old"],
    ),
]


@pytest.mark.parametrize(
    ("build", "kwargs", "expected"),
    [case[1:] for case in SIGNAL_CASES],
    ids=[case[0] for case in SIGNAL_CASES],
)
def test_l0_signals(
    build: Callable[[], list[LastMod | None]], kwargs: dict[str, Any], expected: list[str]
) -> None:
    assert l0_signals(l0_of(build(), **kwargs), T_REF) == expected


def test_window_share_slides_over_unsorted_input() -> None:
    # Two generators: 40 values around 10:00 and 60 around 14:00, interleaved.
    entries = []
    for i in range(100):
        hour = 10 if i % 5 < 2 else 14
        entries.append(lm(f"2024-05-01T{hour}:0{i % 10}:00Z"))
    l0 = l0_of(entries)
    assert (l0.window_share, l0.top2_share, l0.mode_share) == (0.6, 1.0, 0.1)
    assert l0.cluster_centre == datetime(2024, 5, 1, 14, 5, 30, tzinfo=UTC)


def test_empty_segment() -> None:
    l0 = l0_of([])
    assert (l0.n, l0.coverage, l0.window_share, l0.cluster_centre) == (0, 0.0, 0.0, None)
    assert l0_signals(l0, T_REF) == ["absent", "too_few"]
    assert static_verdict(l0, [], T_REF).name == "ABSENT"


def test_accumulator_memory_is_bounded_by_distinct_values() -> None:
    acc = SegmentL0Accumulator()
    stamps = [lm("2024-05-01"), lm("2024-05-02T10:00:00Z"), lm("2024-05-02T12:00:00+02:00")]
    for i in range(30_000):
        acc.add(stamps[i % 3])
    assert acc.n == 30_000
    assert len(acc.counts) == 2  # 10:00Z and 12:00+02:00 are the same value


def test_as_dict_is_json_friendly() -> None:
    import json

    d = l0_of(honest(30)).as_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["t_ref"] == "2024-06-01T12:00:00Z"


# --- intervals and Wilson --------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "lo", "hi"),
    [
        ("2024-05-01T10:00:00.5Z", "2024-05-01T09:00:00.5Z", "2024-05-01T11:00:00.5Z"),
        ("2024-05-01T10:00:00+02:00", "2024-05-01T07:00:00Z", "2024-05-01T09:00:01Z"),
        ("2024-05-01T10:00Z", "2024-05-01T09:00:00Z", "2024-05-01T11:01:00Z"),
        ("2024-05-01T10:00:00", "2024-04-30T19:00:00Z", "2024-05-02T01:00:01Z"),
        ("2024-05-01", "2024-04-30T10:00:00Z", "2024-05-02T14:00:00Z"),
        ("2024-12", "2024-11-30T10:00:00Z", "2025-01-01T14:00:00Z"),
        ("2024", "2023-12-31T10:00:00Z", "2025-01-01T14:00:00Z"),
        ("9999-12-31", "9999-12-30T10:00:00Z", "9999-12-31T23:59:59.999999Z"),
    ],
)
def test_lastmod_interval(raw: str, lo: str, hi: str) -> None:
    from sitemapcrawl.sitemaps.dates import format_utc

    assert tuple(format_utc(t) for t in lastmod_interval(lm(raw))) == (lo, hi)


def test_lastmod_interval_tau_and_invalid() -> None:
    lo, hi = lastmod_interval(lm("2024-05-01T10:00:00Z"), timedelta(0))
    assert (lo, hi) == (
        datetime(2024, 5, 1, 10, tzinfo=UTC),
        datetime(2024, 5, 1, 10, 0, 1, tzinfo=UTC),
    )
    with pytest.raises(ValueError, match="invalid lastmod"):
        lastmod_interval(lm("never"))


@pytest.mark.parametrize(
    ("successes", "n", "side", "expected"),
    [
        (30, 30, 0, 0.886),
        (60, 60, 0, 0.940),
        (27, 30, 0, 0.744),
        (0, 30, 1, 0.114),
        (0, 60, 1, 0.060),
        (0, 100, 1, 0.037),
    ],
)
def test_wilson_design_numbers(successes: int, n: int, side: int, expected: float) -> None:
    assert round(wilson(successes, n)[side], 3) == expected


def test_wilson_sample_sizes_from_the_design() -> None:
    # LB >= 0.8 needs n >= 16 with 0 disagreements, or 25 with 1 ...
    assert wilson(16, 16)[0] >= 0.8 > wilson(15, 15)[0]
    assert wilson(24, 25)[0] >= 0.8 > wilson(23, 24)[0]
    # ... and LB >= 0.9 needs 35 with 0, or 53 with 1.
    assert wilson(35, 35)[0] >= 0.9 > wilson(34, 34)[0]
    assert wilson(52, 53)[0] >= 0.9 > wilson(51, 52)[0]


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    for bad in ((-1, 3), (4, 3), (0, -1)):
        with pytest.raises(ValueError, match="successes"):
            wilson(*bad)


# --- L1 agreement ------------------------------------------------------------------


AGREEMENT_CASES: list[tuple[str, str | None, str | None, str | None, str]] = [
    # (id, lastmod, modified, published, outcome)
    ("same_instant", "2024-05-01T10:00:00Z", "2024-05-01T12:00:00+02:00", None, "AGREE"),
    ("within_2tau", "2024-05-01T10:00:00Z", "2024-05-01T11:50:00Z", None, "AGREE"),
    ("date_only_lastmod", "2024-05-01", "2024-05-02T13:30:00Z", None, "AGREE"),
    ("date_only_beyond", "2024-05-01", "2024-05-02T15:30:00Z", None, "LASTMOD_OLDER"),
    ("date_only_evidence", "2024-05-01T23:00:00Z", "2024-05-02", None, "AGREE"),
    ("no_tz_widened", "2024-05-01T10:00:00", "2024-05-01T22:00:00Z", None, "AGREE"),
    ("with_tz_same_gap", "2024-05-01T10:00:00Z", "2024-05-01T22:00:00Z", None, "TZ_SHIFT:-12"),
    ("tz_plus_5", "2024-05-01T15:00:00Z", "2024-05-01T10:01:30Z", None, "TZ_SHIFT:5"),
    ("tz_labelled", "2024-05-01T12:00:00Z", "2024-05-01T12:00:00+05:00", None, "TZ_SHIFT:5"),
    ("tz_minus_3", "2024-05-01T07:00:00Z", "2024-05-01T10:00:00Z", None, "TZ_SHIFT:-3"),
    ("shift_off_by_3min", "2024-05-01T15:00:00Z", "2024-05-01T10:03:00Z", None, "LASTMOD_NEWER"),
    ("tz_needs_times", "2024-05-01T15:00:00Z", "2024-04-28", None, "LASTMOD_NEWER"),
    ("newer", "2024-05-20T00:00:00Z", "2024-05-01T10:00:00Z", None, "LASTMOD_NEWER"),
    ("older", "2024-01-01T09:00:00Z", "2024-05-01T10:07:00Z", None, "LASTMOD_OLDER"),
    (
        "pubdate",
        "2024-01-10T09:00:00Z",
        "2024-03-01T12:34:00Z",
        "2024-01-10T09:00:00Z",
        "PUBDATE_AS_LASTMOD",
    ),
    (
        "pubdate_day",
        "2024-01-10",
        "2024-03-01T12:34:00Z",
        "2024-01-10T20:00:00Z",
        "PUBDATE_AS_LASTMOD",
    ),
    (
        "pubdate_within_a_day",
        "2024-01-10T09:00:00Z",
        "2024-01-11T05:07:00Z",
        "2024-01-10T09:00:00Z",
        "LASTMOD_OLDER",
    ),
    (
        "pubdate_not_lastmod",
        "2024-02-10T09:00:00Z",
        "2024-03-01T12:34:00Z",
        "2024-01-10T09:00:00Z",
        "LASTMOD_OLDER",
    ),
    ("future", "2024-06-03T00:00:00Z", "2024-05-01T10:07:00Z", None, "FUTURE"),
    ("future_no_evidence", "2024-06-03T00:00:00Z", None, None, "FUTURE"),
    ("future_tz", "2024-06-01T16:00:00Z", "2024-06-01T12:00:00Z", None, "TZ_SHIFT:4"),
    ("future_edge_in", "2024-06-01T13:15:00Z", None, None, "NO_EVIDENCE"),
    ("future_edge_out", "2024-06-01T13:16:00Z", None, None, "FUTURE"),
    ("future_date_only", "2024-06-02", None, None, "NO_EVIDENCE"),
    ("no_evidence", "2024-05-01T10:00:00Z", None, None, "NO_EVIDENCE"),
    ("invalid_evidence", "2024-05-01T10:00:00Z", "soon", None, "NO_EVIDENCE"),
    ("no_lastmod", None, "2024-05-01T10:00:00Z", None, "NO_LASTMOD"),
    ("invalid_lastmod", "2024-99-01", "2024-05-01T10:00:00Z", None, "NO_LASTMOD"),
]


@pytest.mark.parametrize(
    ("lastmod", "modified", "published", "outcome"),
    [case[1:] for case in AGREEMENT_CASES],
    ids=[case[0] for case in AGREEMENT_CASES],
)
def test_agreement(
    lastmod: str | None, modified: str | None, published: str | None, outcome: str
) -> None:
    def parse(text: str | None) -> LastMod | None:
        return None if text is None else lm(text)

    assert agreement(parse(lastmod), parse(modified), parse(published), T_REF) == outcome


def test_agreement_tau() -> None:
    a, b = lm("2024-05-01T10:00:00Z"), lm("2024-05-01T10:40:00Z")
    assert agreement(a, b, None, T_REF) == "AGREE"
    assert agreement(a, b, None, T_REF, tau=timedelta(minutes=10)) == "LASTMOD_OLDER"


def test_outcome_counts() -> None:
    assert outcome_counts(["TZ_SHIFT:3", "AGREE", "TZ_SHIFT:-1"]) == {"TZ_SHIFT": 2, "AGREE": 1}


# --- static verdicts ----------------------------------------------------------------


def outcomes(**counts: int) -> list[str]:
    out: list[str] = []
    for name, count in counts.items():
        out += [name.replace("TZ_SHIFT_", "TZ_SHIFT:")] * count
    return out


VERDICT_CASES: list[
    tuple[str, Callable[[], list[LastMod | None]], dict[str, Any], list[str], str, str]
] = [
    (
        "absent",
        absent,
        {},
        outcomes(NO_LASTMOD=5),
        "ABSENT",
        "Only 20 of 500 URLs carry a usable lastmod (coverage 0.04 < 0.10); "
        "the sitemap serves for discovery only.",
    ),
    (
        "invalid_unparseable",
        invalid_heavy,
        {},
        outcomes(AGREE=30),
        "INVALID",
        "150 of 500 lastmod values are unparseable (30% > 20%).",
    ),
    (
        "invalid_future",
        future_random,
        {},
        outcomes(AGREE=20, FUTURE=10),
        "INVALID",
        "20% of lastmod values lie more than 15 minutes after the server clock (> 5%) "
        "with no consistent whole-hour offset.",
    ),
    (
        "tz_shift_l0",
        future_3h,
        {},
        outcomes(TZ_SHIFT_3=30),
        "TZ_SHIFT",
        "100% of lastmod values are in the future, 100% of those by 3 h within 2 minutes; "
        "correct by -3 h and re-test.",
    ),
    (
        "tz_shift_l1",
        honest,
        {},
        outcomes(AGREE=12, TZ_SHIFT_2=15, LASTMOD_NEWER=3),
        "TZ_SHIFT",
        "15 of 18 disagreeing pages (15 of 30 with evidence, Wilson lower bound 0.33 >= 0.10) "
        "are off by +2 h; correct by -2 h and re-test.",
    ),
    (
        "generation_time_l0_l1",
        generation_time,
        {},
        outcomes(LASTMOD_NEWER=25, AGREE=5),
        "GENERATION_TIME",
        "100% of 500 lastmods fall in one 10min window centred 0.0 h before the server clock, "
        "and 25 of 30 sampled pages have an older modification date than the lastmod "
        "(Wilson lower bound 0.66 >= 0.30).",
    ),
    (
        "generation_time_l0_only",
        daily_stamp,
        {},
        outcomes(NO_EVIDENCE=28, AGREE=2),
        "GENERATION_TIME",
        "100% of 500 lastmods fall in one 1day window centred 0.0 h before the server clock, "
        "and only 2 sampled pages carry evidence (< 20): suspected from the sitemap alone, "
        "unconfirmed.",
    ),
    (
        "stale",
        honest,
        {},
        outcomes(AGREE=22, LASTMOD_OLDER=6, PUBDATE_AS_LASTMOD=2),
        "STALE",
        "8 of 30 sampled pages were modified after their lastmod (2 with lastmod = "
        "datePublished; Wilson lower bound 0.14 >= 0.10).",
    ),
    (
        "over_reporting",
        honest,
        {},
        outcomes(AGREE=15, LASTMOD_NEWER=15),
        "OVER_REPORTING",
        "15 of 30 sampled pages have an older modification date than the lastmod "
        "(Wilson lower bound 0.33 >= 0.30) and the sitemap shows no generation-time signature.",
    ),
    (
        "partial",
        partial,
        {},
        outcomes(AGREE=28, NO_LASTMOD=2),
        "PARTIAL",
        "Only 250 of 500 URLs (50%) carry a lastmod; the dated subset is PROVISIONAL: "
        "28 of 28 sampled pages agree (Wilson lower bound 0.88 >= 0.80).",
    ),
    (
        "provisional",
        honest,
        {},
        outcomes(AGREE=30),
        "PROVISIONAL",
        "30 of 30 sampled pages agree (Wilson lower bound 0.89 >= 0.80).",
    ),
    (
        "provisional_tz_corrected",
        honest,
        {},
        outcomes(AGREE=28, TZ_SHIFT_1=2),
        "PROVISIONAL",
        "30 of 30 sampled pages agree (incl. 2 after a +1 h correction) "
        "(Wilson lower bound 0.89 >= 0.80).",
    ),
    (
        "bulk_import_agrees",
        bulk_import,
        {"sitemap_last_modified": T_REF},
        outcomes(AGREE=30),
        "PROVISIONAL",
        "30 of 30 sampled pages agree (Wilson lower bound 0.89 >= 0.80).",
    ),
    (
        "unverifiable_escalate",
        honest,
        {},
        outcomes(AGREE=27, LASTMOD_NEWER=3),
        "UNVERIFIABLE",
        "27 of 30 sampled pages agree (Wilson lower bound 0.74 < 0.80); "
        "escalate the sample to 60 pages.",
    ),
    (
        "unverifiable_mixed",
        honest,
        {},
        outcomes(AGREE=40, LASTMOD_NEWER=10, LASTMOD_OLDER=2, FUTURE=8),
        "UNVERIFIABLE",
        "40 of 60 sampled pages agree (Wilson lower bound 0.54 < 0.80); "
        "no single failure mode is established.",
    ),
    (
        "unverifiable_no_evidence",
        honest,
        {},
        outcomes(AGREE=10, NO_EVIDENCE=20),
        "UNVERIFIABLE",
        "Only 10 of 30 sampled pages carry page evidence (< 20).",
    ),
    (
        "unread_pages_are_no_evidence",
        honest,
        {},
        outcomes(AGREE=25, HTTP_404=3) + ["FETCH_FAILED:TimeoutError"] * 2,
        "PROVISIONAL",
        "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80).",
    ),
    (
        "nothing_read",
        honest,
        {},
        outcomes(HTTP_301=28, NO_EVIDENCE=2),
        "UNVERIFIABLE",
        "Only 0 of 30 sampled pages carry page evidence (< 20, 28 could not be read).",
    ),
    (
        "news_not_generation_time",
        news_burst,
        {"news": True},
        outcomes(NO_EVIDENCE=30),
        "UNVERIFIABLE",
        "Only 0 of 30 sampled pages carry page evidence (< 20).",
    ),
    (
        "bulk_import_no_evidence",
        lambda: bulk_import(0.95),
        {},
        outcomes(NO_EVIDENCE=30),
        "UNVERIFIABLE",
        "Only 0 of 30 sampled pages carry page evidence (< 20).",
    ),
]


@pytest.mark.parametrize(
    ("build", "kwargs", "sampled", "name", "reason"),
    [case[1:] for case in VERDICT_CASES],
    ids=[case[0] for case in VERDICT_CASES],
)
def test_static_verdict(
    build: Callable[[], list[LastMod | None]],
    kwargs: dict[str, Any],
    sampled: list[str],
    name: str,
    reason: str,
) -> None:
    verdict = static_verdict(l0_of(build(), **kwargs), sampled, T_REF)
    assert (verdict.name, verdict.reason) == (name, reason)
    assert verdict.evidence["n_sampled"] == len(sampled)
    assert sum(verdict.evidence["counts"].values()) == len(sampled)
    assert verdict.evidence["l0"]["n"] == 500


@pytest.mark.parametrize(
    ("sampled", "urls", "escalate"),
    [
        (outcomes(NO_EVIDENCE=30), 500, False),  # 0 of 30: at most 7 of 60 (Wilson 0.11)
        (outcomes(AGREE=3, NO_EVIDENCE=27), 500, False),  # at most 15 of 60
        (outcomes(AGREE=5, NO_EVIDENCE=25), 500, True),  # at most 20 of 60
        (outcomes(AGREE=10, NO_EVIDENCE=20), 500, True),
        (outcomes(HTTP_301=28, NO_EVIDENCE=2), 500, True),  # 0 of 2 read: unknown
        (outcomes(NO_EVIDENCE=1), 2, False),  # 2 URLs never carry 20 pages of evidence
        (outcomes(AGREE=10, NO_EVIDENCE=20), 30, False),  # every URL sampled
    ],
)
def test_too_little_evidence_is_escalated_only_within_reach(
    sampled: list[str], urls: int, escalate: bool
) -> None:
    """A sample with fewer than 20 pages of evidence is escalated to 60 pages only when
    those could carry 20 at the Wilson upper bound of the share seen."""
    verdict = static_verdict(l0_of(honest(urls)), sampled, T_REF)
    assert verdict.name == "UNVERIFIABLE"
    assert verdict.evidence["escalate"] is escalate


def test_static_verdict_evidence() -> None:
    verdict = static_verdict(l0_of(partial()), outcomes(AGREE=25, LASTMOD_NEWER=3), T_REF)
    assert verdict.name == "PARTIAL"
    ev = verdict.evidence
    assert ev["subset_verdict"] == "UNVERIFIABLE"
    assert ev["escalate"] is True
    assert ev["bound"] == {
        "proportion": "AGREE+TZ_corrected",
        "successes": 25,
        "n": 28,
        "lower": 0.728,
        "upper": 0.9629,
        "threshold": 0.8,
    }
    assert ev["counts"] == {"AGREE": 25, "LASTMOD_NEWER": 3}
    assert ev["signals"] == ["partial"]
    assert ev["l0"]["coverage"] == 0.5


def test_generation_time_needs_newer_pages_when_evidence_exists() -> None:
    # Pages that agree with a recent cluster (a real mass edit): not generation time.
    verdict = static_verdict(l0_of(generation_time()), outcomes(AGREE=30), T_REF)
    assert verdict.name == "PROVISIONAL"
    assert verdict.evidence["signals"] == ["generation_time_suspected"]


def test_news_segment_lastmod_newer_is_over_reporting() -> None:
    l0 = l0_of(news_burst(), news=True)
    assert static_verdict(l0, outcomes(LASTMOD_NEWER=30), T_REF).name == "OVER_REPORTING"


# --- property tests ------------------------------------------------------------------

aware = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
constructed = st.builds(
    LastMod,
    raw=st.just("x"),
    value=aware,
    precision=st.sampled_from(PRECISIONS),
    flags=st.lists(st.sampled_from([f for f in FLAGS if f != "invalid"]), unique=True).map(tuple),
)
parsed = st.text(max_size=40).map(parse_lastmod)
w3c = st.builds(
    lambda d, fmt: parse_lastmod(d.strftime(fmt)),
    st.datetimes(min_value=datetime(1001, 1, 2), max_value=datetime(9998, 12, 30)),
    st.sampled_from(
        [
            "%Y",
            "%Y-%m",
            "%Y-%m-%d",
            "%Y-%m-%dT%H:%MZ",
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%dT%H:%M:%S+05:30",
        ]
    ),
)
any_lastmod = st.one_of(st.none(), constructed, parsed, w3c)


@given(
    st.one_of(constructed, w3c), st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=2))
)
def test_interval_contains_value(lastmod: LastMod | None, tau: timedelta) -> None:
    assert lastmod is not None
    assert lastmod.value is not None
    lo, hi = lastmod_interval(lastmod, tau)
    assert lo <= lastmod.value <= hi


@settings(max_examples=200)
@given(
    st.lists(any_lastmod, max_size=60),
    aware,
    st.tuples(st.none() | aware, st.none() | aware, st.booleans()),
    st.lists(
        st.sampled_from(
            [
                "AGREE",
                "LASTMOD_NEWER",
                "LASTMOD_OLDER",
                "TZ_SHIFT:2",
                "TZ_SHIFT:-7",
                "PUBDATE_AS_LASTMOD",
                "FUTURE",
                "NO_EVIDENCE",
                "NO_LASTMOD",
            ]
        ),
        max_size=40,
    ),
)
def test_accumulator_never_raises(
    entries: list[LastMod | None],
    t_ref: datetime,
    context: tuple[datetime | None, datetime | None, bool],
    sampled: list[str],
) -> None:
    header, index, news = context
    acc = SegmentL0Accumulator()
    for entry in entries:
        acc.add(entry)
    l0 = acc.result(t_ref, sitemap_last_modified=header, index_lastmod=index, news=news)
    assert 0.0 <= l0.coverage <= 1.0
    assert 0.0 <= l0.window_share <= l0.top2_share <= 1.0
    assert l0.n == len(entries)
    l0.as_dict()
    l0_signals(l0, t_ref)
    assert static_verdict(l0, sampled, t_ref).name in {
        "PROVISIONAL",
        "GENERATION_TIME",
        "ABSENT",
        "PARTIAL",
        "STALE",
        "OVER_REPORTING",
        "TZ_SHIFT",
        "INVALID",
        "UNVERIFIABLE",
    }


@given(any_lastmod, any_lastmod, any_lastmod, aware)
def test_agreement_never_raises(
    a: LastMod | None, b: LastMod | None, c: LastMod | None, t_ref: datetime
) -> None:
    assert agreement(a, b, c, t_ref).split(":")[0] in {
        "AGREE",
        "LASTMOD_NEWER",
        "LASTMOD_OLDER",
        "TZ_SHIFT",
        "PUBDATE_AS_LASTMOD",
        "FUTURE",
        "NO_EVIDENCE",
        "NO_LASTMOD",
    }


# --- sampling ---------------------------------------------------------------------------


def site(n: int, seed: int = 0) -> list[tuple[str, LastMod | None]]:
    """n URLs: ~10 % undated, the rest spread over 3 years (~1 % in the last week)."""
    rng = random.Random(seed)
    dates = [lm(z(T_REF - timedelta(days=d))) for d in range(0, 3 * 365, 3)]
    urls: list[tuple[str, LastMod | None]] = []
    for i in range(n):
        roll = rng.random()
        entry = None if roll < 0.1 else dates[0] if roll < 0.15 else rng.choice(dates)
        urls.append((f"https://example.com/p/{i}", entry))
    return urls


def run(
    urls: Iterable[tuple[str, LastMod | None]], seed: str = "example.com/p", **kw: Any
) -> list[Any]:
    sampler = SegmentSampler(seed, now=T_REF, **kw)
    for url, entry in urls:
        sampler.offer(url, entry)
    return sampler.sample()


def test_sampler_is_deterministic_and_order_independent() -> None:
    urls = site(3000)
    first = run(urls)
    shuffled = urls[:]
    random.Random(3).shuffle(shuffled)
    assert run(shuffled) == first
    assert run(reversed(urls)) == first
    assert run(urls, seed="other") != first
    assert url_hash("s", "u") == url_hash("s", "u") != url_hash("s", "v")


def test_sampler_memory_is_bounded() -> None:
    sampler = SegmentSampler("big", budget=30, panel=10, now=T_REF)
    stamps = [lm("2024-05-30"), lm("2024-01-01"), lm("2019-06-01"), None]
    for i in range(200_000):
        sampler.offer(f"https://big.example/{i}", stamps[i % 4])
        if i % 50_000 == 0:
            assert sampler.state_size() <= 4 * 30 + 10
    assert sampler.state_size() == 4 * 30 + 10
    assert sampler.population() == {"recent": 50_000, "year": 50_000, "old": 50_000, "none": 50_000}
    sample = sampler.sample()
    assert len(sample) == 30
    assert len({s.url for s in sample}) == 30


def test_stratum_shares() -> None:
    stamps = {"recent": lm("2024-05-30"), "year": lm("2024-01-01"), "old": lm("2019-06-01")}

    def targets(counts: dict[str, int], budget: int = 30) -> dict[str, int]:
        sampler = SegmentSampler("s", budget=budget, panel=0, now=T_REF)
        for name, count in counts.items():
            for i in range(count):
                sampler.offer(f"https://s.example/{name}/{i}", stamps.get(name))
        picked = sampler.sample()
        got = {
            name: sum(s.stratum == name for s in picked)
            for name in ("recent", "year", "old", "none")
        }
        assert got == sampler.targets()
        return got

    assert targets({"recent": 100, "year": 100, "old": 100}) == {
        "recent": 12,
        "year": 9,
        "old": 9,
        "none": 0,
    }
    assert targets({"recent": 100, "year": 100, "old": 100, "none": 100}) == {
        "recent": 10,
        "year": 8,
        "old": 7,
        "none": 5,
    }
    assert targets({"recent": 100, "year": 100, "old": 100, "none": 100}, budget=60) == {
        "recent": 22,
        "year": 16,
        "old": 16,
        "none": 6,
    }
    # An empty stratum's share is redistributed in proportion.
    assert targets({"year": 100, "old": 100}) == {"recent": 0, "year": 15, "old": 15, "none": 0}
    # A stratum that cannot fill its share hands the rest on.
    assert targets({"recent": 3, "year": 100, "old": 100, "none": 2}) == {
        "recent": 3,
        "year": 13,
        "old": 12,
        "none": 2,
    }
    # An undated segment is sampled from its undated URLs.
    assert targets({"none": 100}) == {"recent": 0, "year": 0, "old": 0, "none": 30}
    # Fewer URLs than the budget: take them all.
    assert targets({"recent": 4, "old": 3}) == {"recent": 4, "year": 0, "old": 3, "none": 0}


def test_panel_is_included_and_counted_within_the_budget() -> None:
    sample = run(site(2000))
    assert len(sample) == 30
    panel = [s for s in sample if s.in_panel]
    assert len(panel) == 10
    assert sample[:10] == panel


def test_panel_when_it_overfills_a_stratum() -> None:
    # All panel URLs are old, but old gets 9 of 30: the panel still goes in whole.
    urls = [(f"https://o.example/{i}", lm("2019-06-01")) for i in range(200)]
    urls += [(f"https://r.example/{i}", lm("2024-05-30")) for i in range(5)]
    sample = run(urls, panel=20)
    assert len(sample) == 30
    assert sum(s.in_panel for s in sample) == 20
    assert {s.stratum for s in sample if not s.in_panel} <= {"old", "recent"}


def test_panel_is_stable_when_urls_are_added_or_removed() -> None:
    urls = site(2000)
    panel = {s.url for s in run(urls) if s.in_panel}
    # Removing URLs outside the panel leaves it unchanged.
    kept = [u for i, u in enumerate(urls) if u[0] in panel or i % 10]
    assert {s.url for s in run(kept) if s.in_panel} == panel
    # New URLs displace a member only when their hash is smaller.
    added = urls + [(f"https://example.com/new/{i}", None) for i in range(500)]
    new_panel = {s.url for s in run(added) if s.in_panel}
    newcomers = {u for u in new_panel if "/new/" in u}
    assert new_panel - newcomers <= panel
    assert len(panel & new_panel) == 10 - len(newcomers) >= 5
    # Lastmod updates move pages between strata but never change the panel.
    bumped = [(url, lm("2024-05-31")) for url, _ in urls]
    assert {s.url for s in run(bumped) if s.in_panel} == panel


def test_sampler_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="budget"):
        SegmentSampler("s", budget=-1, now=T_REF)
    assert run([("https://a.example/", None)], budget=0) == []


def test_allocate() -> None:
    assert allocate({"a": 30, "b": 30}) == {"a": 30, "b": 30}
    assert allocate({f"s{i}": 30 for i in range(6)}) == {f"s{i}": 25 for i in range(6)}
    assert allocate({"a": 60, "b": 30, "c": 10, "d": 30, "e": 30, "f": 30}) == {
        "a": 28,
        "b": 28,
        "c": 10,
        "d": 28,
        "e": 28,
        "f": 28,
    }
    assert allocate({"a": 30, "b": 30, "c": 30}, 4) == {"a": 2, "b": 1, "c": 1}
    assert allocate({}, 150) == {}
    with pytest.raises(ValueError, match=">= 0"):
        allocate({"a": -1})


@given(st.dictionaries(st.text(max_size=3), st.integers(0, 100), max_size=12), st.integers(0, 400))
def test_allocate_is_max_min_fair(budgets: dict[str, int], cap: int) -> None:
    got = allocate(budgets, cap)
    assert got.keys() == budgets.keys()
    assert all(0 <= got[k] <= budgets[k] for k in budgets)
    assert sum(got.values()) == min(cap, sum(budgets.values()))
    short = [got[k] for k in budgets if got[k] < budgets[k]]
    if short:
        assert max(short) - min(short) <= 1
        assert all(got[k] <= max(short) or got[k] == budgets[k] for k in budgets)


def test_fpc_sample_size_table() -> None:
    table = {0.20: (25, 22, 24), 0.15: (43, 36, 41), 0.10: (97, 66, 88), 0.05: (385, 132, 278)}
    for margin, expected in table.items():
        assert (
            fpc_sample_size(margin),
            fpc_sample_size(margin, 200),
            fpc_sample_size(margin, 1000),
        ) == expected


def test_stratified_proportion() -> None:
    assert stratified_proportion({}) == (0.0, 0.0)
    p, var = stratified_proportion({"a": (100, 5, 10), "b": (100, 10, 10), "c": (50, 0, 0)})
    assert p == pytest.approx(0.75)
    assert var == pytest.approx(0.25 * 0.25 / 10)


def test_news_sitemap_stamped_with_one_second_is_generation_time() -> None:
    """The seed guide's first real failure: a news sitemap whose every entry carried the
    file's generation time, so "changed in the last six hours" returned everything."""
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    stamped = SegmentL0Accumulator()
    honest = SegmentL0Accumulator()
    for i in range(40):
        stamped.add(parse_lastmod("2026-11-29T11:58:07Z"))
        honest.add(parse_lastmod(f"2026-11-29T{(i % 12):02d}:{i:02d}:00Z"))
    assert "generation_time_suspected" in l0_signals(stamped.result(now, news=True), now)
    assert "generation_time_suspected" not in l0_signals(honest.result(now, news=True), now)
    verdict = static_verdict(stamped.result(now, news=True), [], now)
    assert verdict.name == "GENERATION_TIME"
    # The same stamp written per entry as the file is generated: milliseconds apart, or
    # spread over a few seconds by a slow generator. Still one stamp, not 40 articles.
    for step_ms in (20, 200):
        spread = SegmentL0Accumulator()
        for i in range(40):
            moment = datetime(2026, 11, 29, 11, 58, 7, tzinfo=UTC) + timedelta(
                milliseconds=step_ms * i
            )
            spread.add(parse_lastmod(moment.isoformat(timespec="milliseconds")))
        l0 = spread.result(now, news=True)
        assert l0.as_dict()["burst_share"] == 1.0
        assert static_verdict(l0, [], now).name == "GENERATION_TIME", step_ms
    # 40 articles 30 s apart (20 minutes): a news burst, not a stamp
    burst = SegmentL0Accumulator()
    for i in range(40):
        burst.add(parse_lastmod(f"2026-11-29T11:{30 + i // 2:02d}:{30 * (i % 2):02d}Z"))
    l0 = burst.result(now, news=True)
    assert l0.as_dict()["burst_share"] == 0.025
    assert "generation_time_suspected" not in l0_signals(l0, now)


def test_lagged_only_for_a_sitemap_built_recently() -> None:
    """A lastmod older than the page's date is LAGGED when the page changed after the
    sitemap file was built within MAX_LAG of t_ref; an older file is stale, not late."""
    p = parse_lastmod
    now = datetime(2024, 6, 10, tzinfo=UTC)
    lastmod, page = p("2024-06-01T08:00:00Z"), p("2024-06-09T20:00:00Z")
    recent = now - timedelta(hours=10)
    assert agreement(lastmod, page, None, now, built=recent) == "LAGGED"
    assert agreement(lastmod, page, None, now, built=now - MAX_LAG - timedelta(seconds=1)) == (
        "LASTMOD_OLDER"
    )
    # before the build, the page's change could have been in the sitemap
    assert agreement(lastmod, p("2024-06-09T12:00:00Z"), None, now, built=recent) == (
        "LASTMOD_OLDER"
    )
    assert agreement(lastmod, page, None, now) == "LASTMOD_OLDER"
    # LAGGED pages are not evidence: 25 agreeing of 25 with evidence is PROVISIONAL
    acc = SegmentL0Accumulator()
    for day in range(1, 31):
        acc.add(p(f"2024-05-{day:02d}T08:00:00Z"))
    verdict = static_verdict(acc.result(now), ["AGREE"] * 25 + ["LAGGED"] * 5, now)
    assert (verdict.name, verdict.evidence["n_ev"]) == ("PROVISIONAL", 25)


_LASTMOD_TEXTS = [
    "2024-05-01",
    "2024-05-01T10:00",
    "2024-05-01T10:00:00",
    "2024-05-01T10:00:00Z",
    "2024-05-01T10:00:00.123Z",
    "2024-05-01T10:00:00.5+02:00",
    "2024-05-01T23:30:00-09:30",
    "2024-01-01",  # a sentinel candidate
    "1970-01-01T00:00:00Z",
    "0001-01-01",
    "2999-12-31T23:59:59Z",  # future
    "2024",
    "2024-05",
    "Wed, 01 May 2024 10:00:00 GMT",
    "soon",
    "2024-13-45",
]


@given(st.lists(st.sampled_from([*_LASTMOD_TEXTS, None]), max_size=60))
@settings(max_examples=200, deadline=None)
def test_exported_fields_count_as_the_parsed_lastmod(texts: list[str | None]) -> None:
    """The lastmod middleware feeds the accumulator from a URL item's fields (``lastmod``,
    precision, flags) instead of parsing the raw text again: the same accumulator."""
    parsed, exported = SegmentL0Accumulator(), SegmentL0Accumulator()
    for text in texts:
        lastmod = parse_lastmod(text)
        parsed.add(lastmod)
        if lastmod is None:
            exported.add(None)
        else:
            exported.add_exported(lastmod.iso, lastmod.precision, list(lastmod.flags))
    assert exported == parsed
    t_ref = datetime(2024, 6, 1, tzinfo=UTC)
    assert exported.result(t_ref) == parsed.result(t_ref)


# --- issue 20: local dates, page stamps, the site's view, archives --------------------


@pytest.mark.parametrize(
    ("lastmod", "page"),
    [
        ("2024-05-01", "2024-05-01T00:00:00+14:00"),  # the earliest instant of 1 May
        ("2024-05-01", "2024-05-01T23:59:59-12:00"),  # the latest
        ("2024-05-01T00:20:00", "2024-05-01T00:20:00+14:00"),  # zone-less, local time
        ("2024-05-01T23:40:00", "2024-05-01T23:40:00-12:00"),
    ],
)
def test_a_local_date_meets_its_page_in_every_zone(lastmod: str, page: str) -> None:
    assert agreement(lm(lastmod), lm(page), None, T_REF) == "AGREE"
    assert agreement(lm(lastmod), lm(page), None, T_REF, tau=timedelta(0)) == "AGREE"


def test_a_date_outside_every_zone_is_older() -> None:
    # 2 May 12:00 at UTC-12 is 3 May 00:00 UTC: past 1 May in every zone, and past τ
    assert agreement(lm("2024-05-01"), lm("2024-05-02T13:01:00-12:00"), None, T_REF) == (
        "LASTMOD_OLDER"
    )


def test_a_site_wide_date_is_a_stamp_unless_it_agrees() -> None:
    site_wide = lm("2024-05-20T08:00:00Z")
    dates = [site_wide] * 4 + [lm("2023-01-02T10:00:00Z")]
    found = page_stamps(dates, ["LASTMOD_OLDER"] * 3 + ["AGREE", "LASTMOD_OLDER"])
    assert found == [True, True, True, False, False]
    # shared by 3 of 7 in the segment (< half), but by most of the site's sampled pages
    dates = [site_wide] * 3 + [lm(f"2023-0{m}-02T10:00:00Z") for m in range(1, 5)]
    assert page_stamps(dates, ["LASTMOD_OLDER"] * 7) == [False] * 7
    population = [site_wide] * 20 + [lm("2022-01-01T00:00:00Z")] * 2
    assert page_stamps(dates, ["LASTMOD_OLDER"] * 7, population=population) == (
        [True] * 3 + [False] * 4
    )
    # FUTURE, NO_EVIDENCE and unread pages are never stamps
    assert page_stamps([site_wide] * 3, ["FUTURE", "NO_EVIDENCE", "HTTP_404"]) == [False] * 3


def test_a_page_date_on_the_lastmods_day_echoes_a_date_stamp() -> None:
    # six lastmods, one date: the day in every zone is the stamp its pages would echo
    cluster = stamp_cluster(l0_of([lm("2024-05-20")] * 6))
    assert cluster is not None
    dates = [
        lm("2024-05-20"),
        lm("2024-05-20T05:00:00+09:00"),  # 19 May, 20:00 UTC: 20 May in Tokyo
        lm("2024-05-25T10:00:00Z"),
    ]
    assert page_stamps(dates, ["AGREE"] * 3, echo_of=cluster) == [True, True, False]
    assert stamp_cluster(l0_of([lm("2024-05-20")] * 4)) is None  # too few to be a stamp


def stamped(n: int, at: datetime) -> list[LastMod | None]:
    return [lm(z(at + timedelta(seconds=i % 3))) for i in range(n)]


def test_a_burst_of_five_is_one_stamp_but_four_are_too_few() -> None:
    old = T_REF - timedelta(days=90)
    assert burst_stamp(l0_of(stamped(5, old)))
    assert not burst_stamp(l0_of(stamped(4, old)))
    assert not burst_stamp(l0_of([lm("2024-05-01")] * 9))  # one day is not one second


def site_view(segment: list[LastMod | None], others: list[list[LastMod | None]]) -> SiteView:
    parts = [SegmentL0Accumulator() for _ in range(len(others) + 1)]
    for acc, entries in zip(parts, [segment, *others], strict=True):
        for entry in entries:
            acc.add(entry)
    merged = SegmentL0Accumulator.merged(parts).result(T_REF)
    assert merged.cluster_start is not None
    assert merged.cluster_end is not None
    inside = parts[0].share_within((merged.cluster_start, merged.cluster_end))
    return SiteView(merged, tuple(l0_signals(merged, T_REF)), inside, len(parts))


def test_small_segments_in_a_recent_site_stamp_are_generation_time() -> None:
    at = T_REF - timedelta(hours=2)
    view = site_view(stamped(3, at), [stamped(25, at), stamped(4, at)])
    assert (view.stamped, view.burst, view.in_cluster) == (True, True, 1.0)
    verdict = static_verdict(l0_of(stamped(3, at)), outcomes(PAGE_STAMP=3), T_REF, site=view)
    assert verdict.name == "GENERATION_TIME"
    assert verdict.reason == (
        "100% of this segment's 3 lastmods lie in its site's cluster: across the site's 3 "
        "segments, 100% of 32 lastmods fall in one 10min window centred 2.0 h before the "
        "server clock, and only 0 sampled pages carry evidence (< 20; 3 carry the stamp or "
        "a date shared by most pages): suspected from the sitemap alone, unconfirmed."
    )
    assert verdict.evidence["signals"] == ["too_few", "generation_time_suspected"]
    assert verdict.evidence["site"]["in_cluster"] == 1.0
    # the rules without the signature, kept for the cross-run refutation
    assert verdict.evidence["without_generation"]["verdict"] == "UNVERIFIABLE"


def test_a_segment_outside_its_site_stamp_keeps_its_own_verdict() -> None:
    at = T_REF - timedelta(hours=2)
    view = site_view(honest(25), [stamped(25, at), stamped(25, at)])
    assert (view.stamped, view.burst) == (False, False)
    verdict = static_verdict(l0_of(honest(25)), outcomes(AGREE=25), T_REF, site=view)
    assert verdict.name == "PROVISIONAL"


def test_pages_that_agree_in_a_sitemap_whose_build_stamps_other_groups_are_unverifiable() -> None:
    """Hexo: one sitemap file, its tag and category pages stamped with the build day, its
    posts dated from front matter or file times that the pages print too. The agreement
    is the same value printed twice; the cross-run audit decides."""
    at = T_REF - timedelta(hours=2)
    view = site_view(honest(25), [stamped(25, at)])
    echo = replace(view, build_stamped=("/categories/", "/tags/"))
    verdict = static_verdict(l0_of(honest(25)), outcomes(AGREE=25), T_REF, site=echo)
    assert (verdict.name, verdict.reason) == (
        "UNVERIFIABLE",
        "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80), but the sitemap "
        "that dates them stamps /categories/, /tags/ with the build time: a static build "
        "prints a page's date and its lastmod from one value, so their agreement cannot "
        "show that edits move the lastmod; the cross-run audit decides.",
    )
    assert verdict.evidence["static_build"] == ["/categories/", "/tags/"]
    assert verdict.evidence["site"]["build_stamped"] == ["/categories/", "/tags/"]
    # pages that disagree are judged as before: the echo only withholds PROVISIONAL
    stale = static_verdict(
        l0_of(honest(25)), outcomes(AGREE=15, LASTMOD_OLDER=10), T_REF, site=echo
    )
    assert stale.name == "STALE"


@pytest.mark.parametrize(
    ("archive_days", "verdict"),
    [(None, "PROVISIONAL"), (200.0, "PROVISIONAL"), (2160.0, "GENERATION_TIME")],
)
def test_an_archive_stamped_within_seconds_is_generation_time_whatever_its_pages_say(
    archive_days: float | None, verdict: str
) -> None:
    """An old burst stamp raises no generation-time signal; 25 pages agreeing with it
    (their own dates in the same second) would make it PROVISIONAL, unless the pages were
    published over a year or more."""
    l0 = l0_of(stamped(25, T_REF - timedelta(days=40)))
    found = static_verdict(l0, outcomes(AGREE=25), T_REF, archive_days=archive_days)
    assert found.name == verdict
    if verdict == "GENERATION_TIME":
        assert found.evidence["basis"] == "L0+archive"
        assert found.evidence["signals"] == ["clustered_old", "archive_stamp"]
        assert found.reason == (
            "100% of 25 lastmods fall within 10 seconds, 960.0 h before the server clock, but "
            "the sampled pages were published over 5.9 years: an archive written over years "
            "cannot have changed within seconds, so lastmod is a build or generation stamp, "
            "whatever the pages echo (25 of 25 sampled pages carry a date of their own)."
        )
        assert found.evidence["without_generation"]["verdict"] == "PROVISIONAL"


def test_an_unsampled_segment_says_why_and_how_to_verify_it() -> None:
    reason = "sampling is off; crawl with -a sample=on"
    verdict = static_verdict(l0_of(honest(25)), [], T_REF, unsampled=reason)
    assert (verdict.name, verdict.reason) == (
        "UNVERIFIABLE",
        "No page of this segment was sampled: sampling is off; crawl with -a sample=on.",
    )
    stamp = static_verdict(l0_of(generation_time()), [], T_REF, unsampled=reason)
    assert stamp.name == "GENERATION_TIME"
    assert stamp.reason.endswith(
        ": suspected from the sitemap alone, unconfirmed (no page of this segment was "
        "sampled: sampling is off; crawl with -a sample=on)."
    )


@given(
    st.lists(
        st.tuples(
            st.integers(0, 400),
            st.sampled_from(
                [
                    "2024-05-30",
                    "2024-01-01T10:00:00+02:00",
                    "2019-03-04",
                    "2024-05-31T23:59:59.5Z",
                    "garbage",
                    None,
                    "2024-06-01T00:00:00Z",
                    "2023-06-01",
                ]
            ),
        ),
        max_size=120,
    )
)
def test_offering_an_exported_lastmod_samples_as_offering_the_parsed_one(
    entries: list[tuple[int, str | None]],
) -> None:
    """The streaming path's ``offer_exported`` (ISO text for the stratum, raw text parsed
    only if kept) draws exactly the sample ``offer`` draws from parsed lastmods."""
    from sitemapcrawl.sitemaps.dates import parse_lastmod
    from sitemapcrawl.verify.sampling import SegmentSampler

    now = datetime(2024, 6, 1, tzinfo=UTC)
    parsed = SegmentSampler("seed", budget=12, panel=5, now=now, reserve=8)
    exported = SegmentSampler("seed", budget=12, panel=5, now=now, reserve=8)
    for number, raw in entries:
        url = f"https://a.example/{number}"
        lastmod = parse_lastmod(raw) if raw is not None else None
        parsed.offer(url, lastmod)
        exported.offer_exported(url, lastmod.iso if lastmod else None, raw)
    assert exported.population() == parsed.population()
    for budget in (None, 20):
        assert [
            (s.url, s.stratum, s.in_panel, s.lastmod.iso if s.lastmod else None)
            for s in exported.sample(budget)
        ] == [
            (s.url, s.stratum, s.in_panel, s.lastmod.iso if s.lastmod else None)
            for s in parsed.sample(budget)
        ]
