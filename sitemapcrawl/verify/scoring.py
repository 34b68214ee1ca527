"""Lastmod verification: the L0 dispersion test, the L1 agreement test, the static verdict.

Pure Python, standard library only (plus :mod:`sitemapcrawl.sitemaps.dates`); never imports
scrapy or twisted. The design is in docs/verification.md ("Lastmod intervals", "L0: the
dispersion test", "Wilson bounds", "L1: the agreement test", "Static verdict"). The
cross-run score (L2) is :mod:`sitemapcrawl.verify.crossrun`, so :func:`static_verdict`
never returns ``TRUSTED``.

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

Verdict order in :func:`static_verdict`: ABSENT, INVALID, TZ_SHIFT, GENERATION_TIME, STALE,
OVER_REPORTING, then PROVISIONAL or UNVERIFIABLE (the two-population OVER_REPORTING between
them), PARTIAL around those two.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from itertools import groupby
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import format_utc

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "AGREE",
    "FUTURE",
    "LAGGED",
    "LASTMOD_NEWER",
    "LASTMOD_OLDER",
    "NO_EVIDENCE",
    "NO_LASTMOD",
    "PAGE_STAMP",
    "PUBDATE_AS_LASTMOD",
    "TAU",
    "TZ_SHIFT",
    "VERDICTS",
    "SegmentL0",
    "SegmentL0Accumulator",
    "SiteView",
    "Verdict",
    "agreement",
    "burst_stamp",
    "l0_signals",
    "lastmod_interval",
    "outcome_counts",
    "page_stamps",
    "stamp_cluster",
    "static_verdict",
    "wilson",
]

# --- thresholds (see the module docstring for their sources) --------------
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

# --- L1 outcomes ------------------------------------------------------------
AGREE = "AGREE"
LASTMOD_NEWER = "LASTMOD_NEWER"
LASTMOD_OLDER = "LASTMOD_OLDER"
TZ_SHIFT = "TZ_SHIFT"  # reported as "TZ_SHIFT:<k>", k signed hours
PUBDATE_AS_LASTMOD = "PUBDATE_AS_LASTMOD"
FUTURE = "FUTURE"
#: A sampled page that redirects to another host (the pipeline's outcome, not agreement's).
REDIRECT_OFFSITE = "REDIRECT_OFFSITE"
NO_EVIDENCE = "NO_EVIDENCE"
NO_LASTMOD = "NO_LASTMOD"
LAGGED = "LAGGED"  # LASTMOD_OLDER, but the page changed after the sitemap was built
#: A sampled page whose date is a template or build stamp (``page_stamps``): no evidence.
PAGE_STAMP = "PAGE_STAMP"

# --- verdicts. TRUSTED needs the L2 recall bound. ---------------------------
VERDICTS: tuple[str, ...] = (
    "TRUSTED",
    "PROVISIONAL",
    "GENERATION_TIME",
    "ABSENT",
    "PARTIAL",
    "STALE",
    "OVER_REPORTING",
    "TZ_SHIFT",
    "INVALID",
    "UNVERIFIABLE",
)

_MIN_DT = datetime.min.replace(tzinfo=UTC)
_MAX_DT = datetime.max.replace(tzinfo=UTC)
_DATE_PRECISIONS = frozenset({"year", "month", "day"})
_TIME_PRECISIONS = frozenset({"minute", "second", "fraction"})
_UNIT = {"minute": timedelta(minutes=1), "second": timedelta(seconds=1)}


# --------------------------------------------------------------------------
# Intervals and Wilson bounds
# --------------------------------------------------------------------------


def _utc(value: datetime) -> datetime:
    """Aware UTC datetime; naive values are taken to be UTC."""
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _add(value: datetime, delta: timedelta) -> datetime:
    """``value + delta`` clamped to the representable range."""
    try:
        return value + delta
    except OverflowError:
        return _MAX_DT if delta > timedelta(0) else _MIN_DT


def _period_end(value: datetime, precision: str) -> datetime:
    """Start of the period after the one *value* (its start) names."""
    try:
        if precision == "year":
            return value.replace(year=value.year + 1, month=1, day=1)
        if precision == "month":
            if value.month == 12:
                return value.replace(year=value.year + 1, month=1, day=1)
            return value.replace(month=value.month + 1, day=1)
    except ValueError:
        return _MAX_DT
    return _add(value, timedelta(days=1))


def lastmod_interval(lm: LastMod, tau: timedelta = TAU) -> tuple[datetime, datetime]:
    """Return the UTC interval ``(t_lo, t_hi)`` a lastmod may stand for
    (docs/verification.md, "Lastmod intervals").

    A timestamp with a timezone is widened by ±τ, one without by ±14 h ± τ; a
    date covers its whole UTC day (month, year: the whole period) ± 14 h. The
    value is truncated to its precision, so minute and second precisions also
    cover the rest of that minute or second. Bounds are clamped to the
    ``datetime`` range. Raises :class:`ValueError` for an invalid lastmod.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> [format_utc(t) for t in lastmod_interval(parse_lastmod("2024-05-01T10:00:00Z"))]
    ['2024-05-01T09:00:00Z', '2024-05-01T11:00:01Z']
    >>> [format_utc(t) for t in lastmod_interval(parse_lastmod("2024-05-01T10:00:00"))]
    ['2024-04-30T19:00:00Z', '2024-05-02T01:00:01Z']
    >>> [format_utc(t) for t in lastmod_interval(parse_lastmod("2024-05-01"))]
    ['2024-04-30T10:00:00Z', '2024-05-02T14:00:00Z']
    >>> [format_utc(t) for t in lastmod_interval(parse_lastmod("2024-02"))]
    ['2024-01-31T10:00:00Z', '2024-03-01T14:00:00Z']
    """
    value = lm.value
    if value is None:
        raise ValueError(f"invalid lastmod {lm.raw!r} has no interval")
    value = _utc(value)
    precision = lm.precision or "fraction"
    if precision in _DATE_PRECISIONS:
        return _add(value, -TZ_SLACK), _add(_period_end(value, precision), TZ_SLACK)
    slack = tau + TZ_SLACK if "assumed_utc" in lm.flags else tau
    end = _add(value, _UNIT.get(precision, timedelta(0)))
    return _add(value, -slack), _add(end, slack)


def wilson(successes: int, n: int, z: float = Z) -> tuple[float, float]:
    """Wilson score interval ``(lower, upper)`` for ``successes`` out of ``n``
    (docs/verification.md, "Wilson bounds").

    ``n = 0`` gives ``(0.0, 1.0)``; raises :class:`ValueError` unless
    ``0 <= successes <= n``.

    >>> round(wilson(30, 30)[0], 3), round(wilson(60, 60)[0], 3)
    (0.886, 0.94)
    >>> round(wilson(27, 30)[0], 3)
    0.744
    >>> round(wilson(0, 30)[1], 3), round(wilson(0, 60)[1], 3), round(wilson(0, 100)[1], 3)
    (0.114, 0.06, 0.037)
    >>> wilson(0, 0)
    (0.0, 1.0)
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _hour_shift(delta_s: float) -> int | None:
    """Signed k when ``delta_s`` is within 2 min of k hours, 1 <= |k| <= 14."""
    k = round(delta_s / 3600)
    if 1 <= abs(k) <= TZ_MAX_HOURS and abs(delta_s - k * 3600) < TZ_TOLERANCE:
        return int(k)
    return None


# --------------------------------------------------------------------------
# L0: the dispersion test
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentL0:
    """The single-fetch L0 metrics of one segment (docs/verification.md, "L0: the
    dispersion test").

    Shares of values are over N_L (``n_lastmod``), except ``coverage`` (over
    N) and ``invalid_share`` (over lastmod values present). Durations are in
    seconds. ``window`` is ``"10min"`` or ``"1day"``. ``cluster_*`` describe
    the densest window; ``tz_shift_k`` is the dominant hour shift of future
    values (``tz_shift_share`` of them), ``None`` without one.
    """

    t_ref: datetime
    news: bool
    n: int
    n_lastmod: int
    n_invalid: int
    n_distinct: int
    coverage: float
    invalid_share: float
    mode_share: float
    window: str
    window_share: float
    top2_share: float
    distinct_ratio: float
    entropy: float
    recency_10m: float
    recency_1h: float
    recency_24h: float
    recency_48h: float
    cluster_start: datetime | None
    cluster_end: datetime | None
    cluster_centre: datetime | None
    max_lastmod: datetime | None
    alignment_s: float | None
    alignment_source: str | None
    gen_alignment_s: float | None
    future_share: float
    tz_shift_k: int | None
    tz_shift_share: float
    sentinel_share: float
    date_only_share: float
    no_tz_share: float
    #: The share in the densest ``NEWS_BURST`` (10 s) window: one stamp to the second.
    burst_share: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly copy: floats rounded to 4 places, datetimes as ISO ``...Z``.

        >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
        >>> acc = SegmentL0Accumulator()
        >>> acc.add(parse_lastmod("2024-05-01T10:00:00Z"))
        >>> acc.add(None)
        >>> d = acc.result(datetime(2024, 5, 2, tzinfo=UTC)).as_dict()
        >>> d["coverage"], d["cluster_centre"], d["t_ref"]
        (0.5, '2024-05-01T10:00:00Z', '2024-05-02T00:00:00Z')
        """
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, float):
                value = round(value, 4)
            elif isinstance(value, datetime):
                value = format_utc(value)
            out[name] = value
        return out


# Normalised key of a parsed value: (value, precision, assumed_utc).
_Key = tuple[datetime, str, bool]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@lru_cache(maxsize=4096)
def _iso_micros(iso: str) -> int:
    """Microseconds since the epoch of a UTC ``…Z`` value (``LastMod.iso``)."""
    return (datetime.fromisoformat(iso) - _EPOCH) // _MICROSECOND


@dataclass
class SegmentL0Accumulator:
    """Stream one segment's lastmods into the L0 metrics, one entry at a time.

    Values are kept as 8-byte microsecond counts in one ``array`` per (precision, assumed
    UTC) pair: a million-URL site costs 8 MB here, about a tenth of a ``Counter`` of
    datetimes. ``counts`` rebuilds the distinct-value counts when the metrics are computed,
    one segment at a time.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> acc = SegmentL0Accumulator()
    >>> for minute in range(25):
    ...     acc.add(parse_lastmod(f"2024-05-01T10:{minute:02d}:00Z"))
    >>> acc.add(parse_lastmod("garbage"))
    >>> l0 = acc.result(datetime(2024, 5, 1, 10, 30, tzinfo=UTC))
    >>> l0.n, l0.n_lastmod, round(l0.invalid_share, 4), round(l0.window_share, 2)
    (26, 25, 0.0385, 0.44)
    """

    n: int = 0
    n_invalid: int = 0
    n_sentinel: int = 0
    n_date_only: int = 0
    n_no_tz: int = 0
    _values: dict[tuple[str, bool], array[int]] = field(default_factory=dict, repr=False)

    @property
    def counts(self) -> Counter[_Key]:
        """How often each normalised value occurs: (UTC value, precision, assumed UTC)."""
        counts: Counter[_Key] = Counter()
        for (precision, assumed_utc), values in self._values.items():
            for micros, group in groupby(sorted(values)):
                value = _EPOCH + timedelta(microseconds=micros)
                counts[(value, precision, assumed_utc)] = sum(1 for _ in group)
        return counts

    def add(self, lastmod: LastMod | None) -> None:
        """Count one URL entry; ``None`` means the entry has no ``<lastmod>``."""
        if lastmod is None:
            self.n += 1
            return
        value = lastmod.value
        if value is None:
            self.add_exported(None, None, ())
            return
        self._count(lastmod.precision, lastmod.flags, (_utc(value) - _EPOCH) // _MICROSECOND)

    def add_exported(self, iso: str | None, precision: str | None, flags: Sequence[str]) -> None:
        """Count one entry whose ``<lastmod>`` is present, from the fields a URL item
        carries: ``iso`` the UTC value as ``LastMod.iso`` writes it (None: invalid), its
        precision and flags. The same as ``add`` with the parsed value, without parsing the
        raw text again.

        >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
        >>> a, b = SegmentL0Accumulator(), SegmentL0Accumulator()
        >>> lm = parse_lastmod("2024-05-01T12:00:00+02:00")
        >>> a.add(lm); b.add_exported(lm.iso, lm.precision, lm.flags)
        >>> a == b
        True
        """
        if iso is None:
            self.n += 1
            self.n_invalid += 1
            return
        self._count(precision, flags, _iso_micros(iso))

    def _count(self, precision: str | None, flags: Sequence[str], micros: int) -> None:
        """Count one valid lastmod: its value in microseconds since the epoch (UTC)."""
        self.n += 1
        precision = precision or "fraction"
        assumed_utc = "assumed_utc" in flags
        if "sentinel" in flags:
            self.n_sentinel += 1
        if precision in _DATE_PRECISIONS:
            self.n_date_only += 1
        if assumed_utc:
            self.n_no_tz += 1
        values = self._values.get((precision, assumed_utc))
        if values is None:
            values = self._values[(precision, assumed_utc)] = array("q")
        values.append(micros)

    @classmethod
    def merged(cls, parts: Iterable[SegmentL0Accumulator]) -> SegmentL0Accumulator:
        """One accumulator holding every entry of ``parts``: a site's segments together,
        for the L0 test over the whole site (docs/verification.md, "L0 over the whole
        site"). The parts are left as they are.

        >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
        >>> a, b = SegmentL0Accumulator(), SegmentL0Accumulator()
        >>> a.add(parse_lastmod("2024-05-01")); b.add(parse_lastmod("2024-05-01")); b.add(None)
        >>> site = SegmentL0Accumulator.merged([a, b])
        >>> site.n, site.n_date_only, len(site.counts)
        (3, 2, 1)
        """
        out = cls()
        for part in parts:
            out.n += part.n
            out.n_invalid += part.n_invalid
            out.n_sentinel += part.n_sentinel
            out.n_date_only += part.n_date_only
            out.n_no_tz += part.n_no_tz
            for key, values in part._values.items():
                mine = out._values.get(key)
                if mine is None:
                    mine = out._values[key] = array("q")
                mine.extend(values)
        return out

    def share_within(self, span: tuple[datetime, datetime]) -> float:
        """The share of this accumulator's dated values that lie in the closed ``span``
        (0.0 without a dated value): how much of a segment sits in its site's cluster.

        >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
        >>> acc = SegmentL0Accumulator()
        >>> for day in ("2024-05-01", "2024-05-01", "2024-05-01", "2023-01-09"):
        ...     acc.add(parse_lastmod(day))
        >>> acc.share_within((datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC)))
        0.75
        """
        lo = (_utc(span[0]) - _EPOCH) // _MICROSECOND
        hi = (_utc(span[1]) - _EPOCH) // _MICROSECOND
        inside = total = 0
        for values in self._values.values():
            total += len(values)
            inside += sum(1 for v in values if lo <= v <= hi)
        return inside / total if total else 0.0

    def result(
        self,
        t_ref: datetime,
        *,
        sitemap_last_modified: datetime | None = None,
        index_lastmod: datetime | None = None,
        news: bool = False,
        generation_times: Iterable[datetime] = (),
    ) -> SegmentL0:
        """Compute every single-fetch L0 metric at reference time ``t_ref``.

        ``t_ref`` is the server clock (``Date`` minus ``Age``); naive datetimes
        are taken to be UTC. ``sitemap_last_modified`` is the sitemap's HTTP
        ``Last-Modified`` and ``index_lastmod`` the sitemapindex ``<lastmod>``
        of this child, both used for alignment; ``generation_times`` are more such
        moments (a whole site's: each of its sitemaps' ``Last-Modified`` and index
        ``<lastmod>``). ``news`` marks an ``xmlns:news`` segment (recorded for
        :func:`l0_signals`).
        """
        t_ref = _utc(t_ref)
        all_counts = self.counts
        n_l = sum(all_counts.values())
        present = n_l + self.n_invalid

        def share(count: int, total: int = n_l) -> float:
            return count / total if total else 0.0

        native, by_value, future, tz_votes, recency = _spread(all_counts, t_ref)
        mode = max(native.values(), default=0)
        entropy = 0.0
        if n_l > 1:
            entropy = -sum(c / n_l * math.log(c / n_l) for c in native.values()) / math.log(n_l)
        date_mode = self.n_date_only * 2 > n_l
        best, top2, span = (_day_windows if date_mode else _time_windows)(by_value)
        centre = None if span is None else span[0] + (span[1] - span[0]) / 2

        max_lastmod = max(by_value, default=None)
        alignment_s, source, gen_alignment_s = _alignment(
            span, _candidates(sitemap_last_modified, index_lastmod, generation_times, max_lastmod)
        )
        tz_k, tz_share = _dominant_shift(tz_votes, future)

        return SegmentL0(
            t_ref=t_ref,
            news=news,
            n=self.n,
            n_lastmod=n_l,
            n_invalid=self.n_invalid,
            n_distinct=len(native),
            coverage=share(n_l, self.n),
            invalid_share=share(self.n_invalid, present),
            mode_share=share(mode),
            window="1day" if date_mode else "10min",
            window_share=share(best),
            top2_share=share(top2),
            distinct_ratio=share(len(native)),
            entropy=entropy,
            recency_10m=share(recency["10m"]),
            recency_1h=share(recency["1h"]),
            recency_24h=share(recency["24h"]),
            recency_48h=share(recency["48h"]),
            cluster_start=None if span is None else span[0],
            cluster_end=None if span is None else span[1],
            cluster_centre=centre,
            max_lastmod=max_lastmod,
            alignment_s=alignment_s,
            alignment_source=source,
            gen_alignment_s=gen_alignment_s,
            future_share=share(future),
            tz_shift_k=tz_k,
            tz_shift_share=tz_share,
            sentinel_share=share(self.n_sentinel),
            date_only_share=share(self.n_date_only),
            no_tz_share=share(self.n_no_tz),
            burst_share=share(_time_windows(by_value, NEWS_BURST)[0]),
        )


def _spread(
    all_counts: Counter[_Key], t_ref: datetime
) -> tuple[Counter[tuple[datetime, str]], Counter[datetime], int, Counter[int], dict[str, int]]:
    """One pass over the distinct values: their counts at native granularity (the same
    instant at the same precision is one value) and by instant, the future values (t_lo
    after t_ref + 15 min) with their votes for a whole-hour shift k > 0, and the recency
    counts f(Δ) by Δ."""
    native: Counter[tuple[datetime, str]] = Counter()
    by_value: Counter[datetime] = Counter()
    future = 0
    tz_votes: Counter[int] = Counter()
    recency = dict.fromkeys(RECENCY_DELTAS, 0)
    future_limit = _add(t_ref, FUTURE_SLACK)
    recency_limit = _add(t_ref, RECENCY_EPSILON)
    recency_from = {name: _add(t_ref, -delta) for name, delta in RECENCY_DELTAS.items()}
    for (value, precision, assumed_utc), count in all_counts.items():
        native[(value, precision)] += count
        by_value[value] += count
        lo, _ = _interval(value, precision, assumed_utc)
        if lo > future_limit:
            future += count
            k = _hour_shift((value - t_ref).total_seconds())
            if k is not None and k > 0:
                tz_votes[k] += count
        if value <= recency_limit:
            for name, start in recency_from.items():
                if value >= start:
                    recency[name] += count
    return native, by_value, future, tz_votes, recency


def _candidates(
    sitemap_last_modified: datetime | None,
    index_lastmod: datetime | None,
    generation_times: Iterable[datetime],
    max_lastmod: datetime | None,
) -> dict[str, datetime | None]:
    """The generation-time candidates a cluster is aligned with, by name, in order."""
    candidates: dict[str, datetime | None] = {
        "last_modified": sitemap_last_modified,
        "index_lastmod": index_lastmod,
    }
    for i, moment in enumerate(generation_times):
        candidates[f"generation_time_{i}"] = moment
    candidates["max_lastmod"] = max_lastmod
    return candidates


def _alignment(
    span: tuple[datetime, datetime] | None, candidates: Mapping[str, datetime | None]
) -> tuple[float | None, str | None, float | None]:
    """Seconds from the densest window to the nearest generation-time candidate, which
    one, and the same over the candidates other than ``max_lastmod`` (the external ones:
    max(lastmod) lies in the cluster whenever the newest entries do)."""
    alignment_s = source = gen_alignment_s = None
    if span is None:
        return None, None, None
    for name, t_gen in candidates.items():
        if t_gen is None:
            continue
        distance = _distance(_utc(t_gen), span)
        if alignment_s is None or distance < alignment_s:
            alignment_s, source = distance, name
        if name != "max_lastmod" and (gen_alignment_s is None or distance < gen_alignment_s):
            gen_alignment_s = distance
    return alignment_s, source, gen_alignment_s


def _dominant_shift(tz_votes: Counter[int], future: int) -> tuple[int | None, float]:
    """The whole-hour shift k that explains at least half of the future values, with
    that share; (None, 0.0) without one."""
    if tz_votes:
        k, votes = max(tz_votes.items(), key=lambda kv: (kv[1], -kv[0]))
        if votes >= TZ_CONSISTENT_SHARE * future:
            return k, votes / future
    return None, 0.0


def _interval(
    value: datetime, precision: str, assumed_utc: bool, tau: timedelta = TAU
) -> tuple[datetime, datetime]:
    """:func:`lastmod_interval` on the parts of a normalised key."""
    if precision in _DATE_PRECISIONS:
        return _add(value, -TZ_SLACK), _add(_period_end(value, precision), TZ_SLACK)
    slack = tau + TZ_SLACK if assumed_utc else tau
    return _add(value, -slack), _add(_add(value, _UNIT.get(precision, timedelta(0))), slack)


def _distance(t: datetime, span: tuple[datetime, datetime]) -> float:
    """Seconds from *t* to the closed span (0 inside)."""
    if t < span[0]:
        return (span[0] - t).total_seconds()
    if t > span[1]:
        return (t - span[1]).total_seconds()
    return 0.0


_Windows = tuple[int, int, tuple[datetime, datetime] | None]


def _time_windows(by_value: Counter[datetime], width: timedelta = WINDOW_TIMESTAMP) -> _Windows:
    """Densest closed window of ``width`` (10 minutes), best two disjoint windows, densest
    span.

    Two pointers over the sorted distinct values: O(d log d) for d distinct
    values. Among equally dense windows the most recent one wins.
    """
    values = sorted(by_value)
    if not values:
        return 0, 0, None
    cum = [0]
    for v in values:
        cum.append(cum[-1] + by_value[v])
    best = top2 = 0
    span = (values[0], values[0])
    prefix_best = [0] * (len(values) + 1)  # best window ending before index i
    left = 0
    for right, v in enumerate(values):
        while v - values[left] > width:
            left += 1
        count = cum[right + 1] - cum[left]
        if count >= best:
            best, span = count, (values[left], v)
        top2 = max(top2, count + prefix_best[left])
        prefix_best[right + 1] = max(prefix_best[right], count)
    return best, top2, span


def _day_windows(by_value: Counter[datetime]) -> _Windows:
    """Densest UTC calendar day, best two days, and that day as a span."""
    days: Counter[date] = Counter()
    for value, count in by_value.items():
        days[value.date()] += count
    if not days:
        return 0, 0, None
    ranked = sorted(days.items(), key=lambda dc: (dc[1], dc[0]), reverse=True)
    day, best = ranked[0]
    top2 = best + (ranked[1][1] if len(ranked) > 1 else 0)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return best, top2, (start, _add(start, WINDOW_DATE))


def l0_signals(l0: SegmentL0, t_ref: datetime) -> list[str]:
    """Flags raised by the L0 decision rules for one fetch of a segment.

    ``absent``, ``partial``, ``too_few`` (N_L < 20), ``invalid``,
    ``tz_shift:<k>``, ``generation_time_suspected`` and ``clustered_old``.
    The two clustering flags need N_L ≥ 20, or N_L ≥ 5 timestamps within one
    10-second burst (one stamp to the second: no coincidence, even on 5 pages), or
    N_L ≥ 10 dates on one day within 48 h of the server clock, and are never raised for
    news segments. The exact rules: docs/verification.md, "L0: the
    dispersion test".

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    >>> acc = SegmentL0Accumulator()
    >>> for i in range(30):
    ...     acc.add(parse_lastmod(f"2024-05-01T11:59:{i:02d}Z"))
    >>> l0_signals(acc.result(now), now)
    ['generation_time_suspected']
    >>> l0_signals(acc.result(now, news=True), now)  # 30 distinct seconds: fine for news
    []
    >>> small = SegmentL0Accumulator()
    >>> for _ in range(6):
    ...     small.add(parse_lastmod("2024-05-01T11:40:00Z"))
    >>> l0_signals(small.result(now), now)  # 6 pages, one second
    ['too_few', 'generation_time_suspected']
    >>> today = SegmentL0Accumulator()
    >>> for _ in range(12):
    ...     today.add(parse_lastmod("2024-05-01"))
    >>> l0_signals(today.result(now), now)  # 12 pages dated today
    ['too_few', 'generation_time_suspected']
    """
    t_ref = _utc(t_ref)
    signals: list[str] = []
    if l0.coverage < ABSENT_COVERAGE:
        signals.append("absent")
    elif l0.coverage < PARTIAL_COVERAGE:
        signals.append("partial")
    if l0.n_lastmod < MIN_N_L:
        signals.append("too_few")
    future_skewed = l0.future_share > FUTURE_SHARE
    if l0.invalid_share > INVALID_SHARE or (future_skewed and l0.tz_shift_k is None):
        signals.append("invalid")
    if future_skewed and l0.tz_shift_k is not None:
        signals.append(f"tz_shift:{l0.tz_shift_k}")
    if l0.news and l0.cluster_centre is not None:
        # News sitemaps cluster by nature (the last 48 hours of articles), so the window
        # rules do not apply; but distinct articles cannot all carry the same few seconds
        # (a generator that writes each entry's "now" spreads them over a few: NEWS_BURST).
        if (
            l0.n_lastmod >= NEWS_MIN_N_L
            and max(l0.mode_share, l0.burst_share or 0.0) >= GENERATION_WINDOW_SHARE
            and l0.date_only_share < 0.5
            and t_ref - l0.cluster_centre <= GENERATION_RECENCY
        ):
            signals.append("generation_time_suspected")
        return signals
    if l0.cluster_centre is None:
        return signals
    recent = t_ref - l0.cluster_centre <= GENERATION_RECENCY
    today = (
        recent
        and l0.window == "1day"
        and l0.n_lastmod >= DAY_STAMP_MIN_N_L
        and l0.window_share >= GENERATION_WINDOW_SHARE
    )
    if not (l0.n_lastmod >= MIN_N_L or burst_stamp(l0) or today):
        return signals
    aligned = l0.gen_alignment_s is not None and l0.gen_alignment_s <= ALIGNMENT.total_seconds()
    if l0.window_share >= GENERATION_WINDOW_SHARE and (recent or aligned):
        signals.append("generation_time_suspected")
    elif l0.window_share >= CLUSTERED_OLD_SHARE and not recent:
        signals.append("clustered_old")
    return signals


def burst_stamp(l0: SegmentL0) -> bool:
    """Whether at least ``STAMP_MIN_N_L`` lastmods, most of them times of day, and 90 % of
    them, fall within one 10-second burst: one stamp to the second.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> acc = SegmentL0Accumulator()
    >>> for second in (0, 0, 3, 3, 9):
    ...     acc.add(parse_lastmod(f"2020-12-17T17:46:{second:02d}+09:00"))
    >>> burst_stamp(acc.result(datetime(2024, 1, 1, tzinfo=UTC)))
    True
    """
    return (
        l0.n_lastmod >= STAMP_MIN_N_L
        and l0.date_only_share < 0.5
        and (l0.burst_share or 0.0) >= GENERATION_WINDOW_SHARE
    )


@dataclass(frozen=True)
class SiteView:
    """What the site as a whole says about one of its segments (docs/verification.md, "L0
    over the whole site"): the L0 metrics and signals of all its segments' lastmods
    together, and the share of this segment's lastmods inside the site's densest window.

    A site whose every URL carries one date is caught even when each segment is small:
    a segment whose lastmods lie in the site's cluster (90 %) shares the site's signals.
    ``segments``: how many segments the site has.
    """

    l0: SegmentL0
    signals: tuple[str, ...]
    in_cluster: float
    segments: int
    #: The site's other segments that share a sitemap file with this one and whose own
    #: lastmods are a build stamp (their own L0 says generation time): the file is a
    #: static build's, which prints a page's date and its lastmod from one value
    #: (docs/verification.md, "Static builds").
    build_stamped: tuple[str, ...] = ()

    @property
    def stamped(self) -> bool:
        """The site's lastmods are one generation-time cluster, and this segment is in it."""
        return (
            self.segments > 1
            and "generation_time_suspected" in self.signals
            and self.in_cluster >= GENERATION_WINDOW_SHARE
        )

    @property
    def burst(self) -> bool:
        """The site's lastmods are one burst stamp (:func:`burst_stamp`), recent or not,
        and this segment is in it: a build stamp, whether or not the build was recent."""
        return (
            self.segments > 1
            and self.in_cluster >= GENERATION_WINDOW_SHARE
            and burst_stamp(self.l0)
        )

    def as_dict(self) -> dict[str, Any]:
        """The evidence a verdict carries about the site."""
        return {
            "segments": self.segments,
            "n_lastmod": self.l0.n_lastmod,
            "window": self.l0.window,
            "window_share": round(self.l0.window_share, 4),
            "burst_share": round(self.l0.burst_share or 0.0, 4),
            "cluster_centre": (
                format_utc(self.l0.cluster_centre) if self.l0.cluster_centre else None
            ),
            "signals": list(self.signals),
            "in_cluster": round(self.in_cluster, 4),
            **({"build_stamped": list(self.build_stamped)} if self.build_stamped else {}),
        }


def page_stamps(
    dates: Sequence[LastMod | None],
    outcomes: Sequence[str],
    *,
    population: Sequence[LastMod | None] = (),
    echo_of: tuple[datetime, datetime] | None = None,
) -> list[bool]:
    """Which sampled pages' dates are template or build stamps, not the page's own date
    (docs/verification.md, "Page stamps"). ``dates[i]`` is the date the i-th page's
    ``outcomes[i]`` was judged on (None: none). A stamp is no evidence for or against
    lastmod:

    * a date carried by at least ``PAGE_STAMP_MIN`` sampled pages and by at least
      ``PAGE_STAMP_SHARE`` of those with a date, among ``dates`` or among ``population``
      (the site's sampled pages), unless the page agrees with its lastmod: a site-wide
      ``og:updated_time`` on list pages, a deploy's ``Last-Modified`` on every file (an
      agreeing shared date is an import both sides wrote, for L2 to judge, unless it is an
      echo);
    * a date that meets ``echo_of``, the lastmods' own generation-time or one-stamp
      cluster: the page echoes the stamp (a static site stamps its pages and its sitemap
      at the same build).

    Dates are compared at their own precision (the same second, or the same day).
    FUTURE outcomes are the server clock's evidence and are never stamps.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod as p
    >>> site = p("2024-05-20T08:00:00Z")
    >>> dates = [site, site, site, p("2023-01-02T10:00:00Z")]
    >>> page_stamps(dates, ["LASTMOD_OLDER"] * 3 + ["AGREE"])
    [True, True, True, False]
    >>> page_stamps(dates, ["AGREE"] * 4)  # a shared date that agrees: not by itself
    [False, False, False, False]
    >>> cluster = (datetime(2024, 5, 20, 7, 59, tzinfo=UTC), site.value)
    >>> page_stamps(dates, ["AGREE"] * 4, echo_of=cluster)
    [True, True, True, False]
    """
    shared = _shared_dates(dates) | _shared_dates(population)
    out = []
    for found, outcome in zip(dates, outcomes, strict=True):
        stampable = outcome in _STAMPABLE or _tz_k(outcome) is not None
        if found is None or found.value is None or not stampable:
            out.append(False)
            continue
        if echo_of is not None:
            lo, hi = lastmod_interval(found, timedelta(0))
            if lo <= _utc(echo_of[1]) and _utc(echo_of[0]) <= hi:
                out.append(True)
                continue
        out.append(outcome != AGREE and _date_key(found) in shared)
    return out


def _date_key(date: LastMod) -> tuple[datetime, str]:
    assert date.value is not None
    precision = date.precision or "fraction"
    value = _utc(date.value)
    if precision in _DATE_PRECISIONS:
        return value.replace(hour=0, minute=0, second=0, microsecond=0), "day"
    return value.replace(microsecond=0), "second"


def _shared_dates(dates: Sequence[LastMod | None]) -> set[tuple[datetime, str]]:
    keys = Counter(_date_key(d) for d in dates if d is not None and d.value is not None)
    total = sum(keys.values())
    return {
        key
        for key, count in keys.items()
        if count >= PAGE_STAMP_MIN and count >= PAGE_STAMP_SHARE * total
    }


# --------------------------------------------------------------------------
# L1: the agreement test
# --------------------------------------------------------------------------


def agreement(
    lastmod: LastMod | None,
    modified: LastMod | None,
    published: LastMod | None,
    t_ref: datetime,
    *,
    tau: timedelta = TAU,
    built: datetime | None = None,
) -> str:
    """Compare one page's lastmod with its own evidence (docs/verification.md, "L1: the
    agreement test").

    ``modified`` is the page's usable modification date, chosen by the caller (its
    declared one, else an HTTP ``Last-Modified`` that is not the render time);
    ``published`` is the page's ``datePublished``. Both sides are
    widened by :func:`lastmod_interval`. Checked in this order: NO_LASTMOD;
    ``TZ_SHIFT:<k>`` (disjoint intervals, both timestamps, and the lastmod is
    k hours, 1 ≤ |k| ≤ 14, within 2 min, after the evidence); FUTURE (t_lo >
    t_ref + 15 min); NO_EVIDENCE; AGREE (intervals meet); PUBDATE_AS_LASTMOD
    (the lastmod meets ``published`` while the evidence is over a day after
    it); LASTMOD_NEWER; LAGGED (older, and the evidence is after ``built``, the
    sitemap file's ``Last-Modified``); LASTMOD_OLDER.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod as p
    >>> now = datetime(2024, 6, 1, tzinfo=UTC)
    >>> agreement(p("2024-05-01"), p("2024-05-01T20:00:00Z"), None, now)
    'AGREE'
    >>> agreement(p("2024-05-01T15:00:00Z"), p("2024-05-01T10:00:00Z"), None, now)
    'TZ_SHIFT:5'
    >>> agreement(p("2024-01-01T09:00:00Z"), p("2024-05-01T10:07:00Z"), None, now)
    'LASTMOD_OLDER'
    >>> built = datetime(2024, 5, 31, 6, tzinfo=UTC)  # the page changed after the sitemap
    >>> agreement(p("2024-01-01T09:00:00Z"), p("2024-05-31T10:07:00Z"), None, now, built=built)
    'LAGGED'
    >>> agreement(p("2024-05-20T09:00:00Z"), None, None, now)
    'NO_EVIDENCE'
    """
    if lastmod is None or lastmod.value is None:
        return NO_LASTMOD
    t_ref = _utc(t_ref)
    l_lo, l_hi = lastmod_interval(lastmod, tau)
    evidence = None
    if modified is not None and modified.value is not None:
        e_lo, e_hi = lastmod_interval(modified, tau)
        evidence = (e_lo, e_hi, _utc(modified.value))
        meets = l_lo <= e_hi and e_lo <= l_hi
        if (
            not meets
            and lastmod.precision in _TIME_PRECISIONS
            and modified.precision in _TIME_PRECISIONS
        ):
            k = _hour_shift((_utc(lastmod.value) - evidence[2]).total_seconds())
            if k is not None:
                return f"{TZ_SHIFT}:{k}"
    if l_lo > _add(t_ref, FUTURE_SLACK):
        return FUTURE
    if evidence is None:
        return NO_EVIDENCE
    e_lo, e_hi, e_value = evidence
    if l_lo <= e_hi and e_lo <= l_hi:
        return AGREE
    if published is not None and published.value is not None and l_hi < e_lo:
        p_lo, p_hi = lastmod_interval(published, tau)
        if l_lo <= p_hi and p_lo <= l_hi and e_value - _utc(published.value) > PUBDATE_GAP:
            return PUBDATE_AS_LASTMOD
    if l_lo > e_hi:
        return LASTMOD_NEWER
    if built is not None and e_lo > _utc(built) and t_ref - _utc(built) <= MAX_LAG:
        return LAGGED
    return LASTMOD_OLDER


# --------------------------------------------------------------------------
# Static verdict (L0 + L1)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A segment verdict with a one-sentence human reason and its evidence."""

    name: str
    reason: str
    evidence: dict[str, Any]


_L0_USED = (
    "n",
    "n_lastmod",
    "coverage",
    "invalid_share",
    "future_share",
    "tz_shift_k",
    "window",
    "window_share",
    "cluster_centre",
    "alignment_s",
    "gen_alignment_s",
    "news",
)


#: How a page problem (``pagedates.page_evidence``) reads
#: in a reason: "N <text>".
_PROBLEM_TEXT = {
    "json-ld_invalid": "with broken JSON-LD",
    "microdata_invalid": "with broken microdata",
    "rdfa_invalid": "with broken RDFa",
    "opengraph_invalid": "with broken OpenGraph",
    "conflicting_modified": "with conflicting modification dates",
    "future_modified": "with a modification date in the future",
    "invalid_modified": "with an unreadable modification date",
    "modified_before_published": "modified before they were published",
    "now_modified": "giving the render time as their modification date",
    "not_html": "not HTML",
    "empty": "empty",
    "truncated": "cut at the parse cap",
}
#: The L1 outcomes that are page evidence about a lastmod (n_ev), besides TZ_SHIFT:k.
_EVIDENCE = frozenset({AGREE, LASTMOD_NEWER, LASTMOD_OLDER, PUBDATE_AS_LASTMOD, FUTURE})
#: The outcomes judged on the page's own date (which may be a stamp), besides TZ_SHIFT:k.
_STAMPABLE = frozenset({AGREE, LASTMOD_NEWER, LASTMOD_OLDER, PUBDATE_AS_LASTMOD})
#: Outcomes of a sampled page that could not be read: an HTTP error or redirect left
#: unfollowed, a failed or refused fetch.
_UNREAD = ("HTTP_", "FETCH_FAILED", REDIRECT_OFFSITE)


def _tz_k(outcome: str) -> int | None:
    if outcome.startswith(TZ_SHIFT + ":"):
        try:
            return int(outcome[len(TZ_SHIFT) + 1 :])
        except ValueError:
            return None
    return None


def _bound(label: str, successes: int, n: int, threshold: float) -> dict[str, Any]:
    lo, hi = wilson(successes, n)
    return {
        "proportion": label,
        "successes": successes,
        "n": n,
        "lower": round(lo, 4),
        "upper": round(hi, 4),
        "threshold": threshold,
    }


def _pct(x: float) -> str:
    return f"{x:.0%}"


def static_verdict(
    l0: SegmentL0,
    outcomes: Sequence[str],
    t_ref: datetime,
    *,
    generation_ruled_out: bool = False,
    problems: Mapping[str, int] | None = None,
    site: SiteView | None = None,
    archive_days: float | None = None,
    unsampled: str | None = None,
) -> Verdict:
    """Judge a segment from one sitemap fetch (L0) and its sampled pages (L1).

    ``outcomes`` are the :func:`agreement` results of the sampled pages, a page whose date
    is a stamp given as ``PAGE_STAMP`` (:func:`page_stamps`). The
    rules are tried in order (``_RULES``): ABSENT, INVALID, TZ_SHIFT, GENERATION_TIME,
    STALE, OVER_REPORTING; then ``_by_agreement``: PARTIAL (wrapping the dated subset's
    PROVISIONAL or UNVERIFIABLE), PROVISIONAL, UNVERIFIABLE (docs/verification.md,
    "Static verdict"). ``TRUSTED`` needs the cross-run recall bound and is never
    returned here. ``generation_ruled_out``: the
    cross-run history shows the cluster is not moving with each generation.
    ``problems``: how many sampled pages had each page problem (``pagedates``); they are
    kept in the evidence and, where too few pages carry evidence, named in the reason.
    ``site``: the L0 test over the whole site (:class:`SiteView`); ``archive_days``: how
    many days the sampled pages' publication dates span; ``unsampled``: why no page of the
    segment was sampled, when none was (said in the reason, with how to verify it).

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> now = datetime(2024, 6, 1, tzinfo=UTC)
    >>> acc = SegmentL0Accumulator()
    >>> for day in range(1, 31):
    ...     for hour in (8, 9, 10):  # 90 URLs: 30 sampled, 60 could be
    ...         acc.add(parse_lastmod(f"2024-04-{day:02d}T{hour:02d}:00:00Z"))
    >>> v = static_verdict(acc.result(now), ["AGREE"] * 27 + ["LASTMOD_NEWER"] * 3, now)
    >>> v.name
    'UNVERIFIABLE'
    >>> for part in v.reason.split("; "):
    ...     print(part)
    27 of 30 sampled pages agree (Wilson lower bound 0.74 < 0.80)
    escalate the sample to 60 pages.
    """
    sample = _Sample.of(
        l0,
        outcomes,
        t_ref,
        generation_ruled_out,
        problems,
        site=site,
        archive_days=archive_days,
        unsampled=unsampled,
    )
    verdict = _first_rule(sample)
    if verdict.name == "GENERATION_TIME":
        # What the rules say without the generation-time signature: the cross-run score
        # may refute it (lastmod moves that were content changes), and then this stands.
        plain = replace(sample, signalled=False, suspected=False)
        other = _first_rule(plain)
        verdict.evidence["without_generation"] = {
            "verdict": other.name,
            "reason": other.reason,
            "evidence": {k: v for k, v in other.evidence.items() if k not in sample.evidence},
        }
    return verdict


def _first_rule(sample: _Sample) -> Verdict:
    for rule in _RULES:
        verdict = rule(sample)
        if verdict is not None:
            return verdict
    return _by_agreement(sample)


def stamp_cluster(l0: SegmentL0, site: SiteView | None = None) -> tuple[datetime, datetime] | None:
    """The span of a segment's lastmods when they are one stamp: the dates its pages would
    echo (:func:`page_stamps`). One stamp is 90 % of at least ``STAMP_MIN_N_L`` lastmods
    within one 10-second burst, or on one day when they are dates, or the lastmods' share
    of their site's generation-time cluster or burst stamp. (A 10-minute window is not
    enough: edits made together in a few minutes are edits, and their pages' dates are
    evidence.) A day of dates spans that day in every zone (± ``TZ_SLACK``). None
    otherwise.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> acc = SegmentL0Accumulator()
    >>> for _ in range(6):
    ...     acc.add(parse_lastmod("2024-05-20"))
    >>> [format_utc(t) for t in stamp_cluster(acc.result(datetime(2024, 6, 1, tzinfo=UTC)))]
    ['2024-05-19T10:00:00Z', '2024-05-21T14:00:00Z']
    """
    if l0.cluster_start is None or l0.cluster_end is None:
        return None
    span = l0.cluster_start, l0.cluster_end
    if l0.window == "1day":
        span = _add(span[0], -TZ_SLACK), _add(span[1], TZ_SLACK)
    if site is not None and (site.stamped or site.burst):
        return span
    if burst_stamp(l0):
        return span
    if (
        l0.window == "1day"
        and l0.n_lastmod >= STAMP_MIN_N_L
        and l0.window_share >= GENERATION_WINDOW_SHARE
    ):
        return span
    return None


def _l1_shift(counts: Counter[str], disagreeing: int) -> tuple[Counter[int], int | None, int]:
    """L1 hour shifts: the pages per whole-hour shift k, and the dominant k among the
    disagreeing pages with its count (None, 0 when under ``TZ_CONSISTENT_SHARE`` of them)."""
    tz_counts: Counter[int] = Counter()
    for outcome, count in counts.items():
        k = _tz_k(outcome)
        if k is not None:
            tz_counts[k] += count
    if not tz_counts:
        return tz_counts, None, 0
    l1_k, l1_k_count = max(tz_counts.items(), key=lambda kv: (kv[1], -abs(kv[0]), kv[0]))
    if l1_k_count < TZ_CONSISTENT_SHARE * disagreeing:
        return tz_counts, None, 0
    return tz_counts, l1_k, l1_k_count


@dataclass(frozen=True)
class _Sample:
    """What the verdict rules read: one fetch's L0 metrics and signals, the outcomes of the
    sampled pages, and the L1 shares the rules test."""

    l0: SegmentL0
    t_ref: datetime
    signals: list[str]
    counts: Counter[str]
    problems: Mapping[str, int] | None
    n_sampled: int
    n_ev: int  # pages with evidence about their lastmod
    n_unread: int
    evidence: dict[str, Any]  # every verdict's evidence starts with this
    disagreeing: int  # pages with evidence that do not agree
    tz_counts: Counter[int]  # pages off by k whole hours, by k
    l1_k: int | None  # the dominant k among the disagreeing pages, if consistent
    l1_k_count: int
    l1_tz: bool  # the L1 shift is established (Wilson lower bound >= TZ_MIN_LB)
    newer: int  # LASTMOD_NEWER pages
    newer_lb: float
    signalled: bool  # L0 (the segment's, the site's, or an archive stamp) says generation
    ruled_out: bool  # the history shows the cluster standing still
    suspected: bool  # signalled, and the history does not rule it out
    site: SiteView | None  # the whole site, when its cluster is what signals
    archive_days: float | None  # a burst stamp over pages published over this many days
    unsampled: str | None  # why no page was sampled
    build_stamped: tuple[str, ...] = ()  # the site's other segments stamped by its build

    @classmethod
    def of(
        cls,
        l0: SegmentL0,
        outcomes: Sequence[str],
        t_ref: datetime,
        generation_ruled_out: bool,
        problems: Mapping[str, int] | None,
        *,
        site: SiteView | None = None,
        archive_days: float | None = None,
        unsampled: str | None = None,
    ) -> _Sample:
        t_ref = _utc(t_ref)
        signals = l0_signals(l0, t_ref)
        by_site = None
        if site is not None and site.stamped and "generation_time_suspected" not in signals:
            # The segment is small or its own window is not the site's: the site's cluster,
            # which holds this segment's lastmods, is the generation time.
            signals = [sig for sig in signals if sig != "clustered_old"]
            signals.append("generation_time_suspected")
            by_site = site
        burst = burst_stamp(l0) or (site is not None and site.burst)
        archive = None
        if (
            burst
            and archive_days is not None
            and archive_days >= ARCHIVE_SPAN.total_seconds() / 86400
            and not l0.news
        ):
            signals.append("archive_stamp")
            archive = archive_days
        counts = Counter(outcomes)
        n_ev = sum(n for o, n in counts.items() if o in _EVIDENCE or _tz_k(o) is not None)
        n_unread = sum(n for o, n in counts.items() if o.startswith(_UNREAD))
        evidence: dict[str, Any] = {
            "n_sampled": len(outcomes),
            "n_ev": n_ev,
            "n_unread": n_unread,
            **({"page_problems": dict(sorted(problems.items()))} if problems else {}),
            "counts": dict(sorted(counts.items())),
            "signals": signals,
            "l0": {k: v for k, v in l0.as_dict().items() if k in _L0_USED},
            **({"site": site.as_dict()} if site is not None and site.segments > 1 else {}),
            **({"archive_days": round(archive, 1)} if archive is not None else {}),
        }
        disagreeing = n_ev - counts[AGREE]
        tz_counts, l1_k, l1_k_count = _l1_shift(counts, disagreeing)
        newer = counts[LASTMOD_NEWER]
        signalled = "generation_time_suspected" in signals or archive is not None
        return cls(
            l0=l0,
            t_ref=t_ref,
            signals=signals,
            counts=counts,
            problems=problems,
            n_sampled=len(outcomes),
            n_ev=n_ev,
            n_unread=n_unread,
            evidence=evidence,
            disagreeing=disagreeing,
            tz_counts=tz_counts,
            l1_k=l1_k,
            l1_k_count=l1_k_count,
            l1_tz=l1_k is not None and wilson(l1_k_count, n_ev)[0] >= TZ_MIN_LB,
            newer=newer,
            newer_lb=wilson(newer, n_ev)[0],
            signalled=signalled,
            ruled_out=generation_ruled_out,
            # Earlier fetches can rule the signature out: a cluster that did not move on
            # two fetches in a row is a deploy or import stamp, not the generation time.
            suspected=signalled and not generation_ruled_out,
            site=by_site,
            archive_days=archive,
            unsampled=unsampled if not outcomes else None,
            build_stamped=site.build_stamped if site is not None else (),
        )

    def verdict(self, name: str, reason: str, **extra: Any) -> Verdict:
        return Verdict(name, reason, {**self.evidence, **extra})


def _absent(s: _Sample) -> Verdict | None:
    """ABSENT: too few URLs carry a usable lastmod to judge anything."""
    l0 = s.l0
    if l0.coverage >= ABSENT_COVERAGE:
        return None
    return s.verdict(
        "ABSENT",
        f"Only {l0.n_lastmod} of {l0.n} URLs carry a usable lastmod "
        f"(coverage {l0.coverage:.2f} < {ABSENT_COVERAGE:.2f}); "
        "the sitemap serves for discovery only.",
    )


def _invalid(s: _Sample) -> Verdict | None:
    """INVALID: unparseable values, or future ones no whole-hour offset explains."""
    l0 = s.l0
    if l0.invalid_share > INVALID_SHARE:
        return s.verdict(
            "INVALID",
            f"{l0.n_invalid} of {l0.n_invalid + l0.n_lastmod} lastmod values are unparseable "
            f"({_pct(l0.invalid_share)} > {_pct(INVALID_SHARE)}).",
        )
    if l0.future_share > FUTURE_SHARE and l0.tz_shift_k is None and not s.l1_tz:
        return s.verdict(
            "INVALID",
            f"{_pct(l0.future_share)} of lastmod values lie more than 15 minutes after the "
            f"server clock (> {_pct(FUTURE_SHARE)}) with no consistent whole-hour offset.",
        )
    return None


def _tz_shift(s: _Sample) -> Verdict | None:
    """TZ_SHIFT: future values (L0) or disagreeing pages (L1) off by whole hours."""
    l0 = s.l0
    if any(sig.startswith("tz_shift:") for sig in s.signals) and l0.tz_shift_k is not None:
        return s.verdict(
            "TZ_SHIFT",
            f"{_pct(l0.future_share)} of lastmod values are in the future, "
            f"{_pct(l0.tz_shift_share)} of those by {l0.tz_shift_k} h within 2 minutes; "
            f"correct by -{l0.tz_shift_k} h and re-test.",
            k=l0.tz_shift_k,
            source="L0",
        )
    if s.l1_tz and s.l1_k is not None:
        lo = wilson(s.l1_k_count, s.n_ev)[0]
        return s.verdict(
            "TZ_SHIFT",
            f"{s.l1_k_count} of {s.disagreeing} disagreeing pages ({s.l1_k_count} of {s.n_ev} "
            f"with evidence, Wilson lower bound {lo:.2f} >= {TZ_MIN_LB:.2f}) are off by "
            f"{s.l1_k:+d} h; correct by {-s.l1_k:+d} h and re-test.",
            k=s.l1_k,
            source="L1",
            bound=_bound("TZ_SHIFT", s.l1_k_count, s.n_ev, TZ_MIN_LB),
        )
    return None


def _generation_time(s: _Sample) -> Verdict | None:
    """GENERATION_TIME, suspected: the L0 signature (the segment's, its site's, or a burst
    stamp over an archive published over years), with pages whose lastmod is ahead of them
    or too few pages to say otherwise (confirmation needs the cross-run history). A
    signature the history rules out (the cluster stood still) is left to the pages,
    unless none of the sampled pages carries a date of its own: pages that cannot judge
    leave a one-stamp lastmod what it looks like, a build stamp."""
    n_ev = s.n_ev
    if not s.signalled:
        return None
    if s.ruled_out and not (s.n_sampled and n_ev == 0):
        return None
    if (
        not s.ruled_out
        and s.archive_days is None
        and not (s.newer_lb >= OVER_REPORTING_LB or n_ev < MIN_N_EV)
    ):
        return None  # an archive stamp stands whatever its pages echo
    l0_part = _cluster_words(s)
    stamps = s.counts[PAGE_STAMP]
    echo = f"; {stamps} carry the stamp or a date shared by most pages" if stamps else ""
    if s.ruled_out:
        return s.verdict(
            "GENERATION_TIME",
            f"{l0_part}; the cluster did not move on every fetch, but none of the "
            f"{s.n_sampled} sampled pages carries a date of its own{echo}: a build stamp, "
            "not the pages' modification times.",
            basis="L0",
            confirmed=False,
            reason_l0=l0_part,
        )
    if s.archive_days is not None:
        return s.verdict(
            "GENERATION_TIME",
            f"{l0_part}, but the sampled pages were published over "
            f"{s.archive_days / 365.25:.1f} years: an archive written over years cannot have "
            f"changed within seconds, so lastmod is a build or generation stamp, whatever the "
            f"pages echo ({n_ev} of {s.n_sampled} sampled pages carry a date of their own"
            f"{echo}).",
            basis="L0+archive",
            confirmed=False,
            reason_l0=l0_part,
        )
    if n_ev < MIN_N_EV:
        reason = (
            f"{l0_part}: suspected from the sitemap alone, unconfirmed (no page of this "
            f"segment was sampled: {s.unsampled})."
            if s.unsampled
            else f"{l0_part}, and only {n_ev} sampled pages carry evidence (< {MIN_N_EV}"
            f"{echo}): suspected from the sitemap alone, unconfirmed."
        )
        return s.verdict(
            "GENERATION_TIME",
            reason,
            basis="L0",
            confirmed=False,
            reason_l0=l0_part,
        )
    return s.verdict(
        "GENERATION_TIME",
        f"{l0_part}, and {s.newer} of {n_ev} sampled pages have an older modification date "
        f"than the lastmod (Wilson lower bound {s.newer_lb:.2f} >= {OVER_REPORTING_LB:.2f}).",
        basis="L0+L1",
        confirmed=False,
        bound=_bound(LASTMOD_NEWER, s.newer, n_ev, OVER_REPORTING_LB),
        reason_l0=l0_part,
    )


def _cluster_words(s: _Sample) -> str:
    """The L0 part of a GENERATION_TIME reason: the segment's cluster, or the site's."""
    site = s.site
    l0 = site.l0 if site is not None else s.l0
    assert l0.cluster_centre is not None
    age_h = (s.t_ref - l0.cluster_centre).total_seconds() / 3600
    side = "before" if age_h >= 0 else "after"
    if s.archive_days is not None and site is None:
        return (
            f"{_pct(l0.burst_share or 0.0)} of {l0.n_lastmod} lastmods fall within "
            f"{NEWS_BURST.seconds} seconds, {abs(age_h):.1f} h {side} the server clock"
        )
    where = (
        f"{_pct(l0.window_share)} of {l0.n_lastmod} lastmods fall in one {l0.window} window "
        f"centred {abs(age_h):.1f} h {side} the server clock"
    )
    if site is None:
        return where
    return (
        f"{_pct(site.in_cluster)} of this segment's {s.l0.n_lastmod} lastmods lie in its "
        f"site's cluster: across the site's {site.segments} segments, {where}"
    )


def _stale(s: _Sample) -> Verdict | None:
    """STALE: enough pages were modified after their lastmod (or it is their publication
    date) for the lower bound of that share to pass ``STALE_LB``."""
    counts, n_ev = s.counts, s.n_ev
    older = counts[LASTMOD_OLDER] + counts[PUBDATE_AS_LASTMOD]
    older_lb = wilson(older, n_ev)[0]
    if not (n_ev and older_lb >= STALE_LB):
        return None
    return s.verdict(
        "STALE",
        f"{older} of {n_ev} sampled pages were modified after their lastmod "
        f"({counts[PUBDATE_AS_LASTMOD]} with lastmod = datePublished; "
        f"Wilson lower bound {older_lb:.2f} >= {STALE_LB:.2f}).",
        bound=_bound("LASTMOD_OLDER+PUBDATE_AS_LASTMOD", older, n_ev, STALE_LB),
    )


def _over_reporting(s: _Sample) -> Verdict | None:
    """OVER_REPORTING: lastmod ahead of the pages, with no generation-time signature."""
    if not (s.n_ev and s.newer_lb >= OVER_REPORTING_LB and not s.suspected):
        return None
    return s.verdict(
        "OVER_REPORTING",
        f"{s.newer} of {s.n_ev} sampled pages have an older modification date than the "
        f"lastmod (Wilson lower bound {s.newer_lb:.2f} >= {OVER_REPORTING_LB:.2f}) and the "
        "sitemap shows no generation-time signature.",
        bound=_bound(LASTMOD_NEWER, s.newer, s.n_ev, OVER_REPORTING_LB),
    )


#: The red-flag and failure-mode rules of :func:`static_verdict`, in the order they are
#: tried; the first that applies gives the verdict, else :func:`_by_agreement` does.
_RULES = (_absent, _invalid, _tz_shift, _generation_time, _stale, _over_reporting)


def _by_agreement(s: _Sample) -> Verdict:
    """No failure mode: PROVISIONAL when the pages agree, else UNVERIFIABLE (or, once the
    sample cannot grow, the two-population OVER_REPORTING); PARTIAL around PROVISIONAL and
    UNVERIFIABLE when too few URLs carry a lastmod: the dated subset is judged, the rest
    is scheduled as untrusted."""
    l0, counts, n_ev = s.l0, s.counts, s.n_ev
    agreeing = counts[AGREE] + (s.tz_counts[s.l1_k] if s.l1_k is not None else 0)
    lo, hi = wilson(agreeing, n_ev)
    bound = _bound("AGREE+TZ_corrected", agreeing, n_ev, PROVISIONAL_LB)
    corrected = (
        f" (incl. {agreeing - counts[AGREE]} after a {s.l1_k:+d} h correction)"
        if (s.l1_k is not None and agreeing > counts[AGREE])
        else ""
    )
    extra: dict[str, Any] = {}
    if n_ev >= MIN_N_EV and lo >= PROVISIONAL_LB and s.build_stamped:
        name = "UNVERIFIABLE"
        reason = _build_echo(s, agreeing, n_ev, corrected, lo)
        extra = {"static_build": list(s.build_stamped)}
    elif n_ev >= MIN_N_EV and lo >= PROVISIONAL_LB:
        name = "PROVISIONAL"
        reason = (
            f"{agreeing} of {n_ev} sampled pages agree{corrected} "
            f"(Wilson lower bound {lo:.2f} >= {PROVISIONAL_LB:.2f})."
        )
    elif n_ev < MIN_N_EV:
        name = "UNVERIFIABLE"
        reason = _too_little_evidence(s)
        extra = {"escalate": _evidence_within_reach(s, l0.n)}
    else:
        name = "UNVERIFIABLE"
        escalate = hi >= PROVISIONAL_LB and s.n_sampled < min(ESCALATED_SAMPLE, l0.n)
        if not escalate:
            two = _two_populations(s, agreeing, corrected)
            if two is not None:
                return two
        tail = (
            f"; escalate the sample to {ESCALATED_SAMPLE} pages."
            if escalate
            else "; no single failure mode is established."
        )
        reason = (
            f"{agreeing} of {n_ev} sampled pages agree{corrected} "
            f"(Wilson lower bound {lo:.2f} < {PROVISIONAL_LB:.2f}){tail}"
        )
        extra = {"escalate": escalate}
    if l0.coverage < PARTIAL_COVERAGE:
        return s.verdict(
            "PARTIAL",
            f"Only {l0.n_lastmod} of {l0.n} URLs ({_pct(l0.coverage)}) carry a lastmod; "
            f"the dated subset is {name}: {reason[0].lower()}{reason[1:]}",
            bound=bound,
            subset_verdict=name,
            subset_reason=reason,
            **extra,
        )
    # TRUSTED needs the cross-run recall bound: it is promoted from PROVISIONAL there,
    # never from a single fetch.
    return s.verdict(name, reason, bound=bound, **extra)


def _build_echo(s: _Sample, agreeing: int, n_ev: int, corrected: str, lo: float) -> str:
    """UNVERIFIABLE's reason when the pages agree on a site built as a whole: its build
    stamps other segments' lastmods, so the same build printed each page's date and its
    lastmod from one value (front matter, a file time), and their agreement cannot show
    that an edit moves the lastmod; only the cross-run audit can."""
    named = ", ".join(s.build_stamped[:3]) + (
        f" and {len(s.build_stamped) - 3} more" if len(s.build_stamped) > 3 else ""
    )
    return (
        f"{agreeing} of {n_ev} sampled pages agree{corrected} (Wilson lower bound "
        f"{lo:.2f} >= {PROVISIONAL_LB:.2f}), but the sitemap that dates them stamps "
        f"{named} with the build time: a static build prints a page's date and its "
        "lastmod from one value, so their agreement cannot show that edits move the "
        "lastmod; the cross-run audit decides."
    )


def _evidence_within_reach(s: _Sample, n_urls: int) -> bool:
    """Whether escalating a sample with fewer than ``MIN_N_EV`` pages of evidence could
    reach them: the segment has pages left to sample, and at the Wilson upper bound of the
    share of the sampled pages read that carried evidence, ``ESCALATED_SAMPLE`` pages would carry
    ``MIN_N_EV``. 0 of 30 (bound 0.11: 7 of 60) is not escalated: a template without page
    dates shows none on 60 pages either, and escalating it cost 30 pages on every
    re-sample of such a segment on bench/realweb (hugo-jena, wp-saint-gilles); 5 of 30
    (0.34: 20) is."""
    wanted = min(ESCALATED_SAMPLE, n_urls)
    if s.n_sampled >= wanted:
        return False
    read = s.n_sampled - s.n_unread  # a page that could not be read says nothing of the rest
    return read <= 0 or wilson(s.n_ev, read)[1] * wanted >= MIN_N_EV


def _too_little_evidence(s: _Sample) -> str:
    """UNVERIFIABLE's reason when fewer than ``MIN_N_EV`` pages carry evidence: why none
    was sampled and how to verify it; else how many could not be read, how many carry a
    stamp, and the page problems of the others."""
    if s.unsampled:
        return f"No page of this segment was sampled: {s.unsampled}."
    unread = f", {s.n_unread} could not be read" if s.n_unread else ""
    if s.counts[PAGE_STAMP]:
        unread += f", {s.counts[PAGE_STAMP]} carry a template or build stamp"
    if s.problems:
        unread += "".join(
            f", {count} {_PROBLEM_TEXT.get(name, name)}"
            for name, count in sorted(s.problems.items(), key=lambda kv: (-kv[1], kv[0]))
        )
    undated = s.counts[NO_LASTMOD]
    of = f"{s.n_sampled - undated} sampled pages" + (" with a lastmod" if undated else "")
    return f"Only {s.n_ev} of {of} carry page evidence (< {MIN_N_EV}{unread})."


def _two_populations(s: _Sample, agreeing: int, corrected: str) -> Verdict | None:
    """OVER_REPORTING from two populations, neither alone over its bar: pages whose lastmod
    agrees and pages whose lastmod is ahead of them (a template or cron bump since their
    last edit), and next to none behind. Such a lastmod moves more often than the pages
    but never stays put when they change."""
    n_ev, newer = s.n_ev, s.newer
    safe = agreeing + newer
    safe_lo = wilson(safe, n_ev)[0]
    if not (safe_lo >= PROVISIONAL_LB and s.newer_lb >= STALE_LB):
        return None
    return s.verdict(
        "OVER_REPORTING",
        f"{agreeing} of {n_ev} sampled pages agree{corrected} and {newer} have an "
        f"older modification date than the lastmod: {safe} of {n_ev} show no change "
        f"after their lastmod (Wilson lower bound {safe_lo:.2f} >= "
        f"{PROVISIONAL_LB:.2f}; ahead of the page: {s.newer_lb:.2f} >= "
        f"{STALE_LB:.2f}), so lastmod moves more often than the pages but does not "
        "miss their changes.",
        bound=_bound("AGREE+TZ_corrected+LASTMOD_NEWER", safe, n_ev, PROVISIONAL_LB),
    )


def outcome_counts(outcomes: Iterable[str]) -> dict[str, int]:
    """Count outcomes, folding every ``TZ_SHIFT:<k>`` into ``TZ_SHIFT``.

    >>> outcome_counts(["AGREE", "TZ_SHIFT:2", "TZ_SHIFT:-3", "AGREE"])
    {'AGREE': 2, 'TZ_SHIFT': 2}
    """
    counts: Counter[str] = Counter()
    for outcome in outcomes:
        counts[TZ_SHIFT if _tz_k(outcome) is not None else outcome] += 1
    return dict(counts)
