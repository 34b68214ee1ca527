"""Lastmod verification: the interval a lastmod stands for, and Wilson bounds.

docs/verification.md, "Lastmod intervals" and "Wilson bounds": every comparison of a
lastmod with a time goes through :func:`lastmod_interval`, every decision on a
proportion through :func:`wilson`. Also the whole-hour shift test (a value off by k hours,
TZ_SHIFT) and the UTC helpers the other rooms share. Standard library only.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.verify.thresholds import TAU, TZ_MAX_HOURS, TZ_SLACK, TZ_TOLERANCE, Z

if TYPE_CHECKING:
    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "lastmod_interval",
    "wilson",
]


_MIN_DT = datetime.min.replace(tzinfo=UTC)


_MAX_DT = datetime.max.replace(tzinfo=UTC)


_DATE_PRECISIONS = frozenset({"year", "month", "day"})


_TIME_PRECISIONS = frozenset({"minute", "second", "fraction"})


_UNIT = {"minute": timedelta(minutes=1), "second": timedelta(seconds=1)}


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

    >>> from sitemapcrawl.sitemaps.dates import format_utc
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


def _interval(
    value: datetime, precision: str, assumed_utc: bool, tau: timedelta = TAU
) -> tuple[datetime, datetime]:
    """:func:`lastmod_interval` on the parts of a normalised key."""
    if precision in _DATE_PRECISIONS:
        return _add(value, -TZ_SLACK), _add(_period_end(value, precision), TZ_SLACK)
    slack = tau + TZ_SLACK if assumed_utc else tau
    return _add(value, -slack), _add(_add(value, _UNIT.get(precision, timedelta(0))), slack)


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
