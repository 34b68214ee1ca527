"""Lastmod verification, L0: the dispersion test of one sitemap fetch.

docs/verification.md, "L0: the dispersion test" and "L0 over the whole site". A segment's
lastmods are streamed into :class:`SegmentL0Accumulator` while the sitemap is read; its
:meth:`~SegmentL0Accumulator.result` is the segment's :class:`SegmentL0` metrics (coverage,
window shares, recency, alignment with the generation time, future values), and
:func:`l0_signals` turns them into the flags the static verdict reads. Reads nothing but
the sitemap. Standard library only (plus :mod:`sitemapcrawl.sitemaps.dates`).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from itertools import groupby
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import format_utc
from sitemapcrawl.verify.intervals import _DATE_PRECISIONS, _add, _hour_shift, _interval, _utc
from sitemapcrawl.verify.thresholds import (
    ABSENT_COVERAGE,
    ALIGNMENT,
    CLUSTERED_OLD_SHARE,
    DAY_STAMP_MIN_N_L,
    FUTURE_SHARE,
    FUTURE_SLACK,
    GENERATION_RECENCY,
    GENERATION_WINDOW_SHARE,
    INVALID_SHARE,
    MIN_N_L,
    NEWS_BURST,
    NEWS_MIN_N_L,
    PARTIAL_COVERAGE,
    RECENCY_DELTAS,
    RECENCY_EPSILON,
    STAMP_MIN_N_L,
    TZ_CONSISTENT_SHARE,
    WINDOW_DATE,
    WINDOW_TIMESTAMP,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "SegmentL0",
    "SegmentL0Accumulator",
    "burst_stamp",
    "l0_signals",
]


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
_SECOND_US = 1_000_000
_DAY_US = 86_400 * _SECOND_US
_I32 = 1 << 31


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
    #: (precision, assumed UTC, unit in µs) -> values in that unit: whole days and whole
    #: seconds (most lastmods) in 4-byte ints, anything else in 8-byte µs
    _values: dict[tuple[str, bool, int], array[int]] = field(default_factory=dict, repr=False)

    @property
    def counts(self) -> Counter[_Key]:
        """How often each normalised value occurs: (UTC value, precision, assumed UTC)."""
        counts: Counter[_Key] = Counter()
        for (precision, assumed_utc, unit), values in self._values.items():
            for v, group in groupby(sorted(values)):
                value = _EPOCH + timedelta(microseconds=v * unit)
                key = (value, precision, assumed_utc)
                counts[key] = counts[key] + sum(1 for _ in group)
        return counts

    def _micros(self) -> Iterator[int]:
        """Every value, in µs since the epoch."""
        for (_, _, unit), values in self._values.items():
            if unit == 1:
                yield from values
            else:
                yield from (v * unit for v in values)

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
        unit = _DAY_US if not micros % _DAY_US else _SECOND_US if not micros % _SECOND_US else 1
        value = micros // unit
        if unit != 1 and not -_I32 <= value < _I32:
            unit, value = 1, micros  # outside 1902-2038 in seconds: 8 bytes
        key = (precision, assumed_utc, unit)
        values = self._values.get(key)
        if values is None:
            values = self._values[key] = array("q" if unit == 1 else "i")
        values.append(value)

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
                    mine = out._values[key] = array(values.typecode)
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
        total = sum(len(values) for values in self._values.values())
        inside = sum(1 for v in self._micros() if lo <= v <= hi)
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
