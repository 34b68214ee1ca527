"""Lastmod verification: the thresholds of the single-run tests, in one table.

Every bar that L0 (:mod:`~sitemapcrawl.verify.dispersion`), L1
(:mod:`~sitemapcrawl.verify.agreement`), the page stamps (:mod:`~sitemapcrawl.verify.stamps`)
and the static verdict (:mod:`~sitemapcrawl.verify.rules`) test against. The design, and
where each value comes from, is in docs/verification.md ("Lastmod intervals", "L0: the
dispersion test", "Wilson bounds", "L1: the agreement test", "Page stamps", "Static
verdict"); a change to one belongs in both places. The cross-run (L2) thresholds are
:mod:`sitemapcrawl.verify.crossrun`'s.

Thresholds
----------

=============================  ==========  ======================================
name                           value       what it bounds
=============================  ==========  ======================================
``TAU``                        60 min      a timezoned timestamp's interval, ±
``TZ_SLACK``                   14 h        a date's or zoneless time's interval, ±
``FUTURE_SLACK``               15 min      future values (L0) and FUTURE (L1)
``WINDOW_TIMESTAMP``           10 min      the window share, timestamps
``WINDOW_DATE``                1 day       the window share, dates (calendar day)
``RECENCY_DELTAS``             10m 1h      recency f(Δ)
                               24h 48h
``RECENCY_EPSILON``            15 min      the ε of f(Δ) = ``FUTURE_SLACK``
``MIN_N_L``                    20          dated values the clustering rules need
``STAMP_MIN_N_L``              5           … or these, within one 10-second burst
``DAY_STAMP_MIN_N_L``          10          … or these dates, on the server clock's day
``ARCHIVE_SPAN``               365 days    publication dates of a burst-stamped archive
``PAGE_STAMP_MIN``             3           sampled pages sharing one date: a page stamp…
``PAGE_STAMP_SHARE``           0.5         … when also this share of the dated pages
``ABSENT_COVERAGE``            0.1         coverage below it: ABSENT
``PARTIAL_COVERAGE``           0.9         coverage below it: PARTIAL
``INVALID_SHARE``              0.2         unparseable values above it: INVALID
``FUTURE_SHARE``               0.05        future values above it: INVALID or TZ
``GENERATION_WINDOW_SHARE``    0.9         window share: generation time suspected
``GENERATION_RECENCY``         48 h        ``t_ref - c*``: a recent cluster
``ALIGNMENT``                  10 min      cluster to generation time: aligned
``CLUSTERED_OLD_SHARE``        0.5         window share of an old cluster
``ONE_DATE_SHARE``             0.95        one value, or one day of dates: said in the reason
``TZ_TOLERANCE``               120 s       a whole-hour shift, ±
``TZ_MAX_HOURS``               14          k ∈ [1, 14]
``TZ_CONSISTENT_SHARE``        0.5         one k for half the shifted values
``TZ_MIN_LB``                  0.10        Wilson LB of the L1-shifted pages
``PUBDATE_GAP``                1 day       PUBDATE_AS_LASTMOD
``MIN_N_EV``                   20          pages with evidence for PROVISIONAL
``PROVISIONAL_LB``             0.8         Wilson LB of agreeing pages
``STALE_LB``                   0.10        Wilson LB of pages changed after lastmod
``OVER_REPORTING_LB``          0.3         Wilson LB of pages behind their lastmod
``ESCALATED_SAMPLE``           60          pages of an escalated sample
``MAX_LAG``                    2 days      built earlier, a sitemap is stale, not late
``Z``                          1.96        two-sided 95 %
=============================  ==========  ======================================

Details
-------

* The L0 alignment is the distance from t_gen to the densest window (0 inside): it is
  |c* - t_gen| up to half a window, and does not punish a date-only stamp for its
  precision.
* Sentinels (1970-01-01, 9999…) parse, count in N_L and are reported in
  ``sentinel_share``; no rule reads them.
* FUTURE counts as page evidence: the server's clock is the evidence.
* A suspected GENERATION_TIME with page evidence needs LB(LASTMOD_NEWER) ≥ 0.3, the
  complement of OVER_REPORTING: the same pages ahead of their lastmod, with the
  generation-time signature.
* TZ_SHIFT:k carries a signed k = (lastmod - evidence) in hours; correct the lastmod by
  subtracting k hours.
"""

from __future__ import annotations

from datetime import timedelta

__all__ = [
    "ABSENT_COVERAGE",
    "ALIGNMENT",
    "ARCHIVE_SPAN",
    "CLUSTERED_OLD_SHARE",
    "DAY_STAMP_MIN_N_L",
    "ESCALATED_SAMPLE",
    "FUTURE_SHARE",
    "FUTURE_SLACK",
    "GENERATION_RECENCY",
    "GENERATION_WINDOW_SHARE",
    "INVALID_SHARE",
    "MAX_LAG",
    "MIN_N_EV",
    "MIN_N_L",
    "NEWS_BURST",
    "NEWS_MIN_N_L",
    "ONE_DATE_SHARE",
    "OVER_REPORTING_LB",
    "PAGE_STAMP_MIN",
    "PAGE_STAMP_SHARE",
    "PARTIAL_COVERAGE",
    "PROVISIONAL_LB",
    "PUBDATE_GAP",
    "RECENCY_DELTAS",
    "RECENCY_EPSILON",
    "STALE_LB",
    "STAMP_MIN_N_L",
    "TAU",
    "TZ_CONSISTENT_SHARE",
    "TZ_MAX_HOURS",
    "TZ_MIN_LB",
    "TZ_SLACK",
    "TZ_TOLERANCE",
    "WINDOW_DATE",
    "WINDOW_TIMESTAMP",
    "Z",
]


TAU = timedelta(minutes=60)


TZ_SLACK = timedelta(hours=14)


FUTURE_SLACK = timedelta(minutes=15)


WINDOW_TIMESTAMP = timedelta(minutes=10)


WINDOW_DATE = timedelta(days=1)


RECENCY_DELTAS: dict[str, timedelta] = {
    "10m": timedelta(minutes=10),
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "48h": timedelta(hours=48),
}


RECENCY_EPSILON = FUTURE_SLACK


MIN_N_L = 20


#: News segments: at least this many entries sharing one timestamp to the second.
NEWS_MIN_N_L = 10


#: News entries this close together are one generation stamp, not distinct articles.
NEWS_BURST = timedelta(seconds=10)


#: Distinct pages whose lastmods fall within one ``NEWS_BURST`` are one stamp from this many
#: on: the clustering rules apply to them below ``MIN_N_L`` (a second shared by 5 pages is
#: no coincidence; a day shared by 5 pages can be).
STAMP_MIN_N_L = 5


#: Date-only lastmods on one day, the server clock's day or the day before: one stamp from
#: this many on (a small site regenerated with "today" on every page, such as MkDocs').
DAY_STAMP_MIN_N_L = 10


#: A burst stamp over pages whose publication dates span this much is an archive stamped at
#: build time: no archive written over a year was modified within seconds.
ARCHIVE_SPAN = timedelta(days=365)


#: A date carried by at least this many sampled pages, and by at least ``PAGE_STAMP_SHARE`` of
#: the sampled pages with a date (the segment's or the site's), is a template or build stamp.
PAGE_STAMP_MIN = 3


PAGE_STAMP_SHARE = 0.5


ABSENT_COVERAGE = 0.1


PARTIAL_COVERAGE = 0.9


INVALID_SHARE = 0.2


FUTURE_SHARE = 0.05


GENERATION_WINDOW_SHARE = 0.9


GENERATION_RECENCY = timedelta(hours=48)


ALIGNMENT = timedelta(minutes=10)


CLUSTERED_OLD_SHARE = 0.5


ONE_DATE_SHARE = 0.95


TZ_TOLERANCE = 120.0


TZ_MAX_HOURS = 14


TZ_CONSISTENT_SHARE = 0.5


TZ_MIN_LB = 0.10


PUBDATE_GAP = timedelta(days=1)


MIN_N_EV = 20


PROVISIONAL_LB = 0.8


STALE_LB = 0.10


OVER_REPORTING_LB = 0.3


ESCALATED_SAMPLE = 60


MAX_LAG = timedelta(days=2)


Z = 1.96
