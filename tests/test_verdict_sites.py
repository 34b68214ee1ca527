"""Verdicts reached on real loopback sites: TZ_SHIFT, OVER_REPORTING, INVALID and PARTIAL.

``test_scoring`` checks these verdicts on hand-made outcome lists. Here each one comes out of
a crawl of a small site with the real ``sitemap`` spider and ``sample=on``: the site's
robots.txt names a sitemap index with one child, the segment; every page carries its own
``dateModified`` (JSON-LD) and answers 200, so every outcome comes from a page's own date.
Each segment has at most 30 URLs, the segment budget, so every URL is sampled, whatever the
server's port does to the seeded sample; the counts are therefore exact.

Dates are set relative to the moment the site is built; the crawl follows at once, and the
server's clock (its ``Date``) is the verification's "now". One test crawls twice with a state
file, editing the site in between, for the cross-run (L2) road to OVER_REPORTING.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report

if TYPE_CHECKING:
    from pathlib import Path

SEGMENT = "/sitemaps/segment.xml"


@dataclass(frozen=True)
class Url:
    """One sitemap entry and its page: the raw ``<lastmod>`` (None: no element), the
    page's raw JSON-LD ``dateModified`` (None: the page has no date) and its article text."""

    lastmod: str | None
    modified: str | None
    text: str = "Some article text."


def iso(value: dt.datetime, zone: dt.timedelta = dt.timedelta(0)) -> str:
    """``value`` as an ISO timestamp in the zone ``zone`` east of UTC (``Z`` for UTC)."""
    local = value + zone
    if not zone:
        return local.strftime("%Y-%m-%dT%H:%M:%SZ")
    sign = "-" if zone < dt.timedelta(0) else "+"
    hours, rest = divmod(abs(int(zone.total_seconds())), 3600)
    return f"{local.strftime('%Y-%m-%dT%H:%M:%S')}{sign}{hours:02d}:{rest // 60:02d}"


def wall_clock_as_utc(value: dt.datetime, zone: dt.timedelta) -> str:
    """The classic mistake: the local wall-clock time of ``value`` labelled as UTC."""
    return iso(value + zone)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def history(at: dt.datetime, i: int) -> dt.datetime:
    """The last edit of the i-th page: 3 days to about 5 years before ``at``, one per page,
    at varied times of day (no two in one 10-minute window: no clustering)."""
    return at - dt.timedelta(days=3 + 67 * i, hours=i % 11, minutes=7 * i % 60)


def page(modified: str | None, text: str) -> str:
    data: dict[str, Any] = {"@context": "https://schema.org", "@type": "Article", "headline": "x"}
    if modified is not None:
        data["dateModified"] = modified
    return (
        "<!DOCTYPE html><html><head><title>x</title>"
        f'<script type="application/ld+json">{json.dumps(data)}</script></head>'
        f"<body><main><article><p>{text}</p></article></main></body></html>"
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build(root: Path, urls: list[Url]) -> None:
    """The site: robots.txt -> sitemap index -> one child (the segment) listing ``/p/0.html``..."""
    assert len(urls) <= 30  # the segment budget: every URL is sampled
    rows = []
    for i, url in enumerate(urls):
        lastmod = f"<lastmod>{url.lastmod}</lastmod>" if url.lastmod is not None else ""
        rows.append(f"<url><loc>{{base}}/p/{i}.html</loc>{lastmod}</url>")
        write(root / "p" / f"{i}.html", page(url.modified, url.text))
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    write(root / "sitemaps" / "segment.xml", f"<urlset {ns}>{''.join(rows)}</urlset>")
    write(
        root / "sitemap_index.xml",
        f"<sitemapindex {ns}><sitemap><loc>{{base}}{SEGMENT}</loc></sitemap></sitemapindex>",
    )
    write(root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


async def crawl_segment(tmp_path: Path, urls: list[Url]) -> dict[str, Any]:
    """Build the site, crawl it with sampling on, return the report's one segment.

    ``links=off``: no home page (nor its links) is fetched, so the crawl requests only the
    site's own files, every one of which answers 200."""
    root = tmp_path / "site"
    build(root, urls)
    with MockServer(root=root) as server:
        items, report, _ = await crawl_with_report(origin=server.base, sample="on", links="off")
        requested = server.requests()
    assert report is not None
    assert len(items) == len(urls)
    # Every page was fetched once, and nothing else but the site's own files.
    pages = sorted(r for r in requested if r.startswith("/p/"))
    assert pages == sorted(f"/p/{i}.html" for i in range(len(urls)))
    assert sorted(set(requested) - set(pages)) == sorted(
        ["/robots.txt", "/sitemap_index.xml", SEGMENT]
    )
    assert len(requested) == len(set(requested))  # each once
    assert report["sample"]["fetched"] == len(urls)
    assert report["sample"]["failed"] == 0
    (segment,) = report["segments"]
    assert segment["segment"] == SEGMENT
    assert segment["urls"] == len(urls)
    assert len(segment["samples"]) == len(urls)
    assert {s["status"] for s in segment["samples"]} == {200}
    return segment


def evidence(segment: dict[str, Any], *keys: str) -> dict[str, Any]:
    """These keys of the verdict's evidence (each must be there). Not the whole dict: its
    L0 copy holds clock-dependent values (cluster centre, alignment)."""
    return {k: segment["evidence"][k] for k in keys}


#: The evidence every verdict carries.
COMMON = ("n_sampled", "n_ev", "counts", "signals")


def l0(segment: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: segment["l0"][k] for k in keys}


def bound(
    proportion: str, successes: int, n: int, *, lower: float, upper: float, threshold: float
) -> dict[str, Any]:
    """A Wilson bound as the evidence writes it (values written out, not recomputed)."""
    return {
        "proportion": proportion,
        "successes": successes,
        "n": n,
        "lower": lower,
        "upper": upper,
        "threshold": threshold,
    }


# --------------------------------------------------------------------------------------
# TZ_SHIFT
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hours", "reason"),
    [
        (
            3,
            "25 of 25 disagreeing pages (25 of 25 with evidence, Wilson lower bound 0.87 >= "
            "0.10) are off by +3 h; correct by -3 h and re-test.",
        ),
        (
            -4,
            "25 of 25 disagreeing pages (25 of 25 with evidence, Wilson lower bound 0.87 >= "
            "0.10) are off by -4 h; correct by +4 h and re-test.",
        ),
    ],
)
@deferred_f_from_coro_f
async def test_local_time_labelled_utc_is_a_tz_shift_seen_on_the_pages(
    tmp_path: Path, hours: int, reason: str
) -> None:
    """The pages write their times with their zone (``+03:00``, ``-04:00``); the sitemap
    writes the same wall-clock time with a ``Z``. No lastmod is in the future, so L0 sees
    nothing: the shift is found on the pages (L1), signed lastmod minus page, and the
    pages' zone is kept."""
    zone = dt.timedelta(hours=hours)
    at = now()
    urls = [
        Url(wall_clock_as_utc(history(at, i), zone), iso(history(at, i), zone)) for i in range(25)
    ]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "TZ_SHIFT"
    assert segment["reason"] == reason
    assert evidence(segment, *COMMON, "k", "source", "bound", "utc_offset_s") == {
        "n_sampled": 25,
        "n_ev": 25,
        "counts": {f"TZ_SHIFT:{hours}": 25},
        "signals": [],
        "k": hours,
        "source": "L1",
        "bound": bound("TZ_SHIFT", 25, 25, lower=0.8668, upper=1.0, threshold=0.1),
        "utc_offset_s": {3: 10800, -4: -14400}[hours],
    }
    assert segment["outcomes"] == {"TZ_SHIFT": 25}
    assert l0(segment, "n", "n_lastmod", "future_share", "tz_shift_k") == {
        "n": 25,
        "n_lastmod": 25,
        "future_share": 0.0,
        "tz_shift_k": None,
    }


@deferred_f_from_coro_f
async def test_a_two_hour_shift_is_within_the_tolerance_and_agrees(tmp_path: Path) -> None:
    """The counterpart: lastmod and page are each widened by τ = 1 h, so a shift of 2 h
    still meets (the intervals touch) and is no evidence of a shift: PROVISIONAL."""
    zone = dt.timedelta(hours=2)
    at = now()
    urls = [
        Url(wall_clock_as_utc(history(at, i), zone), iso(history(at, i), zone)) for i in range(25)
    ]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "PROVISIONAL"
    assert segment["reason"] == "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80)."
    assert evidence(segment, *COMMON) == {
        "n_sampled": 25,
        "n_ev": 25,
        "counts": {"AGREE": 25},
        "signals": [],
    }


@deferred_f_from_coro_f
async def test_fresh_edits_an_exact_number_of_hours_ahead_are_a_tz_shift_from_the_sitemap(
    tmp_path: Path,
) -> None:
    """A site at UTC+5 writes local wall-clock times labelled UTC. The five pages edited a
    moment ago therefore have lastmods 5 h in the future, all by 5 h within 2 minutes: the
    sitemap alone (L0) shows the shift, and that rule comes first. (Those five pages' own
    dates are within 2 minutes of their response, which reads as a render time and is no
    evidence: their lastmods are just FUTURE. The 20 older pages show the +5 h on L1.)"""
    zone = dt.timedelta(hours=5)
    at = now()
    urls = [Url(wall_clock_as_utc(at, zone), iso(at, zone)) for _ in range(5)]
    urls += [
        Url(wall_clock_as_utc(history(at, i), zone), iso(history(at, i), zone)) for i in range(20)
    ]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "TZ_SHIFT"
    assert segment["reason"] == (
        "20% of lastmod values are in the future, 100% of those by 5 h within 2 minutes; "
        "correct by -5 h and re-test."
    )
    assert evidence(segment, *COMMON, "k", "source", "utc_offset_s") == {
        "n_sampled": 25,
        "n_ev": 25,
        "counts": {"FUTURE": 5, "TZ_SHIFT:5": 20},
        "signals": ["tz_shift:5"],
        "k": 5,
        "source": "L0",
        "utc_offset_s": 18000,
    }
    assert l0(segment, "n", "n_lastmod", "future_share", "tz_shift_k", "tz_shift_share") == {
        "n": 25,
        "n_lastmod": 25,
        "future_share": 0.2,
        "tz_shift_k": 5,
        "tz_shift_share": 1.0,
    }


@deferred_f_from_coro_f
async def test_future_lastmods_the_pages_explain_are_a_tz_shift_not_invalid(
    tmp_path: Path,
) -> None:
    """The same UTC+5 site, with three pages edited 1-3 hours ago: their lastmods lie 2-4 h
    ahead of the server clock, by no whole number of hours, which alone would be INVALID
    (12 % > 5 % in the future). The pages say why: every lastmod is 5 h after its page's
    own date, so the L1 shift wins. The L0 signals still say ``invalid``."""
    zone = dt.timedelta(hours=5)
    at = now()
    edits = [at - dt.timedelta(hours=h, minutes=m) for h, m in ((1, 9), (2, 31), (3, 2))]
    edits += [history(at, i) for i in range(22)]
    urls = [Url(wall_clock_as_utc(edit, zone), iso(edit, zone)) for edit in edits]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "TZ_SHIFT"
    assert segment["reason"] == (
        "25 of 25 disagreeing pages (25 of 25 with evidence, Wilson lower bound 0.87 >= "
        "0.10) are off by +5 h; correct by -5 h and re-test."
    )
    assert evidence(segment, *COMMON, "k", "source") == {
        "n_sampled": 25,
        "n_ev": 25,
        "counts": {"TZ_SHIFT:5": 25},
        "signals": ["invalid"],
        "k": 5,
        "source": "L1",
    }
    assert l0(segment, "future_share", "tz_shift_k") == {"future_share": 0.12, "tz_shift_k": None}


# --------------------------------------------------------------------------------------
# OVER_REPORTING
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("newer", "verdict", "reason", "extra"),
    [
        (
            12,
            "OVER_REPORTING",
            "12 of 25 sampled pages have an older modification date than the lastmod (Wilson "
            "lower bound 0.30 >= 0.30) and the sitemap shows no generation-time signature.",
            {"bound": bound("LASTMOD_NEWER", 12, 25, lower=0.3003, upper=0.665, threshold=0.3)},
        ),
        (
            11,
            "OVER_REPORTING",
            "14 of 25 sampled pages agree and 11 have an older modification date than the "
            "lastmod: 25 of 25 show no change after their lastmod (Wilson lower bound 0.87 >= "
            "0.80; ahead of the page: 0.27 >= 0.10), so lastmod moves more often than the "
            "pages but does not miss their changes.",
            {
                "bound": bound(
                    "AGREE+TZ_corrected+LASTMOD_NEWER",
                    25,
                    25,
                    lower=0.8668,
                    upper=1.0,
                    threshold=0.8,
                )
            },
        ),
        (
            2,
            "UNVERIFIABLE",
            "23 of 25 sampled pages agree (Wilson lower bound 0.75 < 0.80); no single failure "
            "mode is established.",
            {
                "bound": bound(
                    "AGREE+TZ_corrected", 23, 25, lower=0.7503, upper=0.9778, threshold=0.8
                ),
                "escalate": False,
            },
        ),
    ],
)
@deferred_f_from_coro_f
async def test_lastmods_bumped_without_page_edits_over_report(
    tmp_path: Path, newer: int, verdict: str, reason: str, extra: dict[str, Any]
) -> None:
    """A CMS that moves lastmod when a comment or the sidebar changes: the lastmods are
    spread over years (no generation-time cluster), but ``newer`` pages were last edited 20
    days before their lastmod. 12 of 25 puts the Wilson lower bound just over 0.3 (0.3003);
    11 of 25 (0.2667) does not, and 14 agreeing pages of 25 are too few to trust the
    lastmod either, but no page is behind its lastmod and 11 are ahead: two populations,
    over-reporting. 2 of 25 ahead is noise (lower bound 0.02 < 0.10): neither."""
    at = now()
    urls = []
    for i in range(25):
        lastmod = history(at, i)
        edited = lastmod - dt.timedelta(days=20) if i < newer else lastmod
        urls.append(Url(iso(lastmod), iso(edited)))
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == verdict
    assert segment["reason"] == reason
    assert evidence(segment, *COMMON, *extra) == {
        "n_sampled": 25,
        "n_ev": 25,
        "counts": {"AGREE": 25 - newer, "LASTMOD_NEWER": newer},
        "signals": [],
        **extra,
    }
    # no generation-time signature: one lastmod per 10-minute window
    assert l0(segment, "n_lastmod", "window_share") == {"n_lastmod": 25, "window_share": 0.04}


@deferred_f_from_coro_f
async def test_no_escalation_is_asked_when_every_url_was_sampled(tmp_path: Path) -> None:
    """27 of 30 pages agree, 3 over-report: the Wilson interval (0.74-0.97) straddles 0.8,
    which would ask for a larger sample (60 pages), but every URL of the segment is in the
    sample already: no escalation, and the reason does not ask for one."""
    at = now()
    urls = []
    for i in range(30):
        lastmod = history(at, i)
        edited = lastmod - dt.timedelta(days=20) if i < 3 else lastmod
        urls.append(Url(iso(lastmod), iso(edited)))
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "UNVERIFIABLE"
    assert evidence(segment, *COMMON) == {
        "n_sampled": 30,
        "n_ev": 30,
        "counts": {"AGREE": 27, "LASTMOD_NEWER": 3},
        "signals": [],
    }
    assert segment["l0"]["n"] == 30  # every URL of the segment is in the sample
    assert segment["evidence"]["escalate"] is False
    assert segment["reason"] == (
        "27 of 30 sampled pages agree (Wilson lower bound 0.74 < 0.80); no single failure "
        "mode is established."
    )


# --------------------------------------------------------------------------------------
# INVALID
# --------------------------------------------------------------------------------------

GARBAGE = ("0000-00-00", "{{ post.modified }}", "2024-02-30", "n/a", "yesterday", "TBD", "-")


@pytest.mark.parametrize(
    ("invalid", "verdict", "reason", "signals"),
    [
        (
            7,
            "INVALID",
            "7 of 30 lastmod values are unparseable (23% > 20%).",
            ["partial", "invalid"],
        ),
        (
            6,
            "PARTIAL",
            "Only 24 of 30 URLs (80%) carry a lastmod; the dated subset is PROVISIONAL: 24 of "
            "24 sampled pages agree (Wilson lower bound 0.86 >= 0.80).",
            ["partial"],
        ),
    ],
)
@deferred_f_from_coro_f
async def test_unparseable_lastmods_make_a_segment_invalid(
    tmp_path: Path, invalid: int, verdict: str, reason: str, signals: list[str]
) -> None:
    """A template that prints placeholders and impossible dates for some entries. Over 20 %
    of the lastmods present (7 of 30) is INVALID; exactly 20 % (6 of 30) is not, but an
    unparseable value is no lastmod for the coverage either, which drops to 80 %: PARTIAL."""
    at = now()
    urls = [Url(GARBAGE[i], iso(history(at, i))) for i in range(invalid)]
    urls += [Url(iso(history(at, i)), iso(history(at, i))) for i in range(invalid, 30)]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == verdict
    assert segment["reason"] == reason
    assert evidence(segment, *COMMON) == {
        "n_sampled": 30,
        "n_ev": 30 - invalid,
        "counts": {"AGREE": 30 - invalid, "NO_LASTMOD": invalid},
        "signals": signals,
    }
    assert l0(segment, "n", "n_lastmod", "n_invalid", "invalid_share", "coverage") == {
        "n": 30,
        "n_lastmod": 30 - invalid,
        "n_invalid": invalid,
        "invalid_share": {7: 0.2333, 6: 0.2}[invalid],
        "coverage": {7: 0.7667, 6: 0.8}[invalid],
    }
    # the pages sampled without a lastmod value are exactly the garbled entries
    garbled = sorted(s["url"].rsplit("/", 1)[1] for s in segment["samples"] if not s["lastmod"])
    assert garbled == sorted(f"{i}.html" for i in range(invalid))


@deferred_f_from_coro_f
async def test_lastmods_far_in_the_future_make_a_segment_invalid(tmp_path: Path) -> None:
    """Scheduled posts listed with their future publication times: 4 of 25 lastmods lie
    days ahead of the server clock, by no whole number of hours in common, so no time zone
    explains them."""
    at = now()
    ahead = [
        dt.timedelta(days=3, hours=7, minutes=13),
        dt.timedelta(days=9, hours=2, minutes=41),
        dt.timedelta(days=17, minutes=5),
        dt.timedelta(days=30, hours=11, minutes=52),
    ]
    urls = [Url(iso(at + delta), iso(at - dt.timedelta(days=1))) for delta in ahead]
    urls += [Url(iso(history(at, i)), iso(history(at, i))) for i in range(21)]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "INVALID"
    assert segment["reason"] == (
        "16% of lastmod values lie more than 15 minutes after the server clock (> 5%) with "
        "no consistent whole-hour offset."
    )
    assert evidence(segment, *COMMON) == {
        "n_sampled": 25,
        "n_ev": 25,
        "counts": {"AGREE": 21, "FUTURE": 4},
        "signals": ["invalid"],
    }
    assert l0(segment, "n", "n_lastmod", "n_invalid", "future_share", "tz_shift_k") == {
        "n": 25,
        "n_lastmod": 25,
        "n_invalid": 0,
        "future_share": 0.16,
        "tz_shift_k": None,
    }


# --------------------------------------------------------------------------------------
# PARTIAL
# --------------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_partly_dated_segment_is_partial_with_a_verdict_for_its_dated_subset(
    tmp_path: Path,
) -> None:
    """22 posts carry an honest lastmod, 8 landing pages none: the dated subset is judged on
    its own (22 of 22 agree: PROVISIONAL) and the segment as a whole is PARTIAL."""
    at = now()
    urls = [Url(iso(history(at, i)), iso(history(at, i))) for i in range(22)]
    urls += [Url(None, iso(history(at, i))) for i in range(22, 30)]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "PARTIAL"
    subset = "22 of 22 sampled pages agree (Wilson lower bound 0.85 >= 0.80)."
    assert segment["reason"] == (
        f"Only 22 of 30 URLs (73%) carry a lastmod; the dated subset is PROVISIONAL: {subset}"
    )
    keys = ("bound", "subset_verdict", "subset_reason")
    assert evidence(segment, *COMMON, *keys) == {
        "n_sampled": 30,
        "n_ev": 22,
        "counts": {"AGREE": 22, "NO_LASTMOD": 8},
        "signals": ["partial"],
        "bound": bound("AGREE+TZ_corrected", 22, 22, lower=0.8513, upper=1.0, threshold=0.8),
        "subset_verdict": "PROVISIONAL",
        "subset_reason": subset,
    }
    assert l0(segment, "n", "n_lastmod", "coverage") == {
        "n": 30,
        "n_lastmod": 22,
        "coverage": 0.7333,
    }


@deferred_f_from_coro_f
async def test_a_sparsely_dated_segment_is_partial_and_its_subset_unverifiable(
    tmp_path: Path,
) -> None:
    """Only 8 of 30 URLs carry a lastmod: enough not to be ABSENT (coverage >= 10 %), too
    few pages with evidence (< 20) to judge the dated subset, which asks for more pages."""
    at = now()
    urls = [Url(iso(history(at, i)), iso(history(at, i))) for i in range(8)]
    urls += [Url(None, iso(history(at, i))) for i in range(8, 30)]
    segment = await crawl_segment(tmp_path, urls)
    assert segment["verdict"] == "PARTIAL"
    subset = "Only 8 of 8 sampled pages with a lastmod carry page evidence (< 20)."
    assert segment["reason"] == (
        "Only 8 of 30 URLs (27%) carry a lastmod; the dated subset is UNVERIFIABLE: only 8 of "
        "8 sampled pages with a lastmod carry page evidence (< 20)."
    )
    keys = ("bound", "subset_verdict", "subset_reason")
    assert evidence(segment, *COMMON, *keys) == {
        "n_sampled": 30,
        "n_ev": 8,
        "counts": {"AGREE": 8, "NO_LASTMOD": 22},
        "signals": ["partial", "too_few"],
        "bound": bound("AGREE+TZ_corrected", 8, 8, lower=0.6756, upper=1.0, threshold=0.8),
        "subset_verdict": "UNVERIFIABLE",
        "subset_reason": subset,
    }
    assert l0(segment, "n", "n_lastmod", "coverage") == {
        "n": 30,
        "n_lastmod": 8,
        "coverage": 0.2667,
    }


@deferred_f_from_coro_f
async def test_lastmods_that_move_more_often_than_the_pages_over_report_across_runs(
    tmp_path: Path,
) -> None:
    """The other road to OVER_REPORTING: the cross-run score (L2), with a state file. On
    each run the lastmods agree with the pages' own dates (PROVISIONAL from L0/L1), but
    between two runs the CMS touched 22 of the 30 pages, moving lastmod and dateModified,
    and rewrote the text of only 10 of them: lastmod catches every change (no change where
    it stood still) while only 10 of its 22 moves are real (precision 0.45 < 0.5)."""
    at = now()
    root = tmp_path / "site"
    state = tmp_path / "state.sqlite"
    urls = [Url(iso(history(at, i)), iso(history(at, i))) for i in range(30)]
    build(root, urls)
    with MockServer(root=root) as server:
        _, report1, _ = await crawl_with_report(
            origin=server.base, sample="on", links="off", state=str(state)
        )
        # Touched 3 h ago, a minute apart (hours back: not a render time, nor a change
        # our previous fetch could have missed).
        for i in range(22):
            touched = iso(at - dt.timedelta(hours=3, minutes=i))
            text = f"Rewritten article text number {i}." if i < 10 else urls[i].text
            urls[i] = Url(touched, touched, text)
        build(root, urls)
        _, report2, _ = await crawl_with_report(
            origin=server.base, sample="on", links="off", state=str(state)
        )
    assert report1 is not None
    assert report2 is not None
    (first,) = report1["segments"]
    assert (first["static_verdict"], first["verdict"]) == ("PROVISIONAL", "PROVISIONAL")
    (second,) = report2["segments"]
    assert (second["static_verdict"], second["verdict"]) == ("PROVISIONAL", "OVER_REPORTING")
    assert second["reason"] == (
        "Across runs, lastmod catches the changes (recall lower bound 1.00) but only 45% of "
        "its moves are real changes: a safe filter."
    )
    assert evidence(second, *COMMON) == {
        "n_sampled": 30,
        "n_ev": 30,
        "counts": {"AGREE": 30},
        "signals": [],
    }
    l2 = second["cross_run"]["l2"]
    assert {k: l2[k] for k in ("tp", "fp", "fn", "tn", "precision", "recall_lower")} == {
        "tp": 10,
        "fp": 12,
        "fn": 0,
        "tn": 8,
        "precision": 0.4545,
        "recall_lower": 1.0,  # the 8 pages whose lastmod stood still were all sampled
    }
