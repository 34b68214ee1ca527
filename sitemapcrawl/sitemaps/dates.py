"""Sitemap parsing: ``<lastmod>`` values and RSS / HTTP dates, read tolerantly.

Pure Python, standard library only (never imports scrapy or twisted), so it
can be used from spiders, pipelines, offline tools and benchmarks alike.

Accepted forms
--------------

:func:`parse_lastmod` accepts the W3C datetime profile of ISO 8601 used by the
sitemap protocol::

    YYYY | YYYY-MM | YYYY-MM-DD
    YYYY-MM-DDThh:mmTZD | YYYY-MM-DDThh:mm:ssTZD | YYYY-MM-DDThh:mm:ss.sTZD
    TZD = Z | +hh:mm | -hh:mm

plus the deviations found in real sitemaps:

* lowercase ``z`` / ``t``, one or more spaces instead of ``T``;
* offsets written ``+hhmm`` or ``+hh``, optionally preceded by ``UTC``/``GMT``
  (``UTC+02:00``; the sign has its ordinary ISO meaning, not the POSIX one);
* ``UTC`` / ``GMT`` suffixes (any case, with or without a space);
* a comma as the decimal mark; any number of fraction digits (truncated, not
  rounded, to microseconds);
* no timezone at all (UTC is assumed and the ``assumed_utc`` flag is set);
* ``24:00[:00]`` (midnight at the end of the day, i.e. the next day);
* a leap second ``:60`` (clamped to ``:59``);
* a full date followed by a timezone (XML Schema ``xs:date`` style,
  ``2024-05-01Z`` / ``2024-05-01+02:00``): the timezone is ignored, the value
  is the start of that calendar day in UTC;
* anything :func:`parse_feed_date` understands (RFC 2822 / 5322 / 1123 / 850
  and asctime dates), which some sitemaps use.

Years outside 1000..9999 are invalid, so are out-of-range fields (month 13,
day 32, 30 February, hour 25, minute 60), offsets above 14 hours, letters and
bare numbers such as Unix timestamps (``1700000000``).

Results
-------

Every non-empty input gives a :class:`LastMod`. All values are aware
datetimes in ``datetime.UTC``. Dates with a precision coarser than a minute
(year, month, day) are midnight UTC at the start of the period. ``flags`` is a
sorted subset of :data:`FLAGS`:

``assumed_utc``
    a time was given without a (known) timezone; UTC was assumed.
``date_only``
    the precision is ``year``, ``month`` or ``day`` (no time was given).
``future``
    the value is more than one day after ``now``.
``invalid``
    the text could not be parsed; ``value`` and ``precision`` are ``None``.
``nonstandard``
    the text was parsed but is not in a form the protocol names: neither the W3C
    datetime profile above nor the XML Schema ``date`` / ``dateTime`` of the protocol's
    schema (which adds a time with seconds and no zone, and a date with a zone). A
    space for ``T``, ``+hhmm`` offsets, ``UTC`` suffixes, lower-case ``t``/``z``, a
    decimal comma, a leap second, minutes without a zone and RFC 2822 dates are kept,
    parsed, and flagged so. For :func:`parse_feed_date`, RFC 822 / 2822 dates (RSS's
    own) are standard too.
``sentinel``
    the value is a well-known placeholder rather than a real modification
    time; see below.

Sentinel values
---------------

The check is made on the UTC value (so it applies to every precision):

* any time on 1601-01-01 (Windows FILETIME epoch), 1900-01-01 (spreadsheet /
  SQL Server / NTP zero) and 1970-01-01 (Unix epoch, including epoch 0
  rendered in a local timezone, e.g. ``1969-12-31T19:00:00-05:00``);
* exactly 2000-01-01T00:00:00Z (Y2K default);
* any value in year 9999 ("never expires" / ``DateTime.MaxValue``).  If a
  year-9999 value with a negative offset cannot be represented, it is clamped
  to ``datetime.max`` in UTC.

``0001-01-01`` (``DateTime.MinValue``) and ``0000-00-00`` are invalid, not
sentinels, because years before 1000 are rejected.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from time import monotonic as _monotonic
from typing import Any

__all__ = [
    "FLAGS",
    "PRECISIONS",
    "LastMod",
    "format_utc",
    "parse_feed_date",
    "parse_lastmod",
]

PRECISIONS: tuple[str, ...] = ("year", "month", "day", "minute", "second", "fraction")
FLAGS: tuple[str, ...] = (
    "assumed_utc",
    "date_only",
    "future",
    "invalid",
    "nonstandard",
    "sentinel",
)

_UTC = dt.UTC
_ONE_DAY = dt.timedelta(days=1)
_ZERO = dt.timedelta(0)
_MAX_OFFSET = dt.timedelta(hours=14)
_MIN_YEAR = 1000
_MAX_YEAR = 9999
_SENTINEL_YEARS = frozenset({1601, 1900, 1970})
_CACHE_SIZE = 8192
# Longer texts are parsed without the cache (so it cannot pin huge strings)
# and never reach the RFC 2822 parser; no real date is anywhere near this.
_MAX_CACHED_LEN = 256


@dataclass(frozen=True, slots=True)
class LastMod:
    """A parsed date.

    >>> lm = parse_lastmod(" 2024-05-01T12:00:00+02:00 ")
    >>> lm.raw, lm.iso, lm.precision, lm.flags
    ('2024-05-01T12:00:00+02:00', '2024-05-01T10:00:00Z', 'second', ())
    """

    raw: str
    value: dt.datetime | None
    precision: str | None
    flags: tuple[str, ...]
    #: ``iso`` once computed (a URL item carries it; a sitemap repeats its lastmods)
    _iso: str | None = field(default=None, init=False, repr=False, compare=False)

    def __init__(
        self,
        raw: str,
        value: dt.datetime | None,
        precision: str | None,
        flags: tuple[str, ...],
    ) -> None:
        # The generated frozen __init__, cheaper: it stores through the slot descriptors
        # directly (one LastMod is built per distinct lastmod of a million-URL sitemap).
        _set_raw(self, raw)
        _set_value(self, value)
        _set_precision(self, precision)
        _set_flags(self, flags)
        _set_iso(self, None)

    def __setstate__(self, state: list[Any]) -> None:
        # A LastMod pickled before the ISO cache existed (a paused JOBDIR crawl) has four
        # values; dataclass's own __setstate__ would leave the cache unset.
        _set_iso(self, None)
        for setter, value in zip(_SETTERS, state, strict=False):
            setter(self, value)

    @property
    def iso(self) -> str | None:
        """The value as ``YYYY-MM-DDThh:mm:ssZ``, ``None`` when invalid.

        The fraction is shown (microseconds, trailing zeros stripped, at least
        one digit) when the precision is ``"fraction"``.

        >>> parse_lastmod("2024-05-01T10:00:00.1230Z").iso
        '2024-05-01T10:00:00.123Z'
        >>> parse_lastmod("2024-05-01T10:00:00.000Z").iso
        '2024-05-01T10:00:00.0Z'
        >>> parse_lastmod("2024-05").iso
        '2024-05-01T00:00:00Z'
        >>> parse_lastmod("soon").iso is None
        True
        """
        cached = self._iso
        if cached is not None:
            return cached
        value = self.value
        if value is None:
            return None
        if self.precision == "fraction":
            frac = f"{value.microsecond:06d}".rstrip("0") or "0"
            cached = f"{_format_seconds(value)}.{frac}Z"
        else:
            cached = format_utc(value)
        _set_iso(self, cached)
        return cached


_set_raw = getattr(LastMod, "raw").__set__  # noqa: B009
_set_value = getattr(LastMod, "value").__set__  # noqa: B009
_set_precision = getattr(LastMod, "precision").__set__  # noqa: B009
_set_flags = getattr(LastMod, "flags").__set__  # noqa: B009
_set_iso = getattr(LastMod, "_iso").__set__  # noqa: B009
_SETTERS = (_set_raw, _set_value, _set_precision, _set_flags, _set_iso)


def format_utc(value: dt.datetime) -> str:
    """Format *value* in UTC as ``YYYY-MM-DDThh:mm:ss[.ffffff]Z``.

    Aware values are converted to UTC; naive values are taken to be UTC. The
    fraction appears only when microseconds are non-zero (trailing zeros
    stripped).

    >>> format_utc(dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))))
    '2024-05-01T10:00:00Z'
    >>> format_utc(dt.datetime(2024, 5, 1, 10, 0, 0, 120000))
    '2024-05-01T10:00:00.12Z'
    """
    tzinfo = value.tzinfo
    if tzinfo is not None and tzinfo is not _UTC and value.utcoffset() is not None:
        value = value.astimezone(_UTC)
    if value.microsecond:
        return f"{_format_seconds(value)}.{value.microsecond:06d}".rstrip("0") + "Z"
    return _format_seconds(value) + "Z"


def _format_seconds(v: dt.datetime) -> str:
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}"


def parse_lastmod(text: str | None, *, now: dt.datetime | None = None) -> LastMod | None:
    """Parse a sitemap ``<lastmod>`` value (W3C datetime and common deviations).

    Returns ``None`` for ``None`` or blank input and never raises for any
    string; unparseable text gives a :class:`LastMod` flagged ``invalid``.
    Falls back to the RFC 2822 parser of :func:`parse_feed_date`. ``now``
    (naive means UTC) is only used for the ``future`` flag; by default it is
    the current time, sampled at most once per second. Results for repeated
    texts come from a bounded LRU cache (the ``future`` flag is computed per
    call).

    >>> parse_lastmod("2024-05-01T10:00:00+02:00").iso
    '2024-05-01T08:00:00Z'
    >>> lm = parse_lastmod("2024-05-01")
    >>> lm.iso, lm.precision, lm.flags
    ('2024-05-01T00:00:00Z', 'day', ('date_only',))
    >>> parse_lastmod("2024-05-01 10:00").flags
    ('assumed_utc', 'nonstandard')
    >>> parse_lastmod("May 6, 2024").flags, parse_lastmod("2024-05-06T07:08:09").flags
    (('date_only', 'nonstandard'), ('assumed_utc',))
    >>> parse_lastmod("2030-01-01", now=dt.datetime(2024, 1, 1, tzinfo=dt.UTC)).flags
    ('date_only', 'future')
    >>> parse_lastmod("2024-13-01")
    LastMod(raw='2024-13-01', value=None, precision=None, flags=('invalid',))
    >>> parse_lastmod("   ") is None
    True
    """
    if text is None:
        return None
    raw = text.strip()
    if not raw:
        return None
    result = _parse_cached(raw) if len(raw) <= _MAX_CACHED_LEN else _parse_general(raw)
    value = result.value
    if value is None:
        return result
    if value > _future_limit(now):
        return LastMod(raw, value, result.precision, tuple(sorted((*result.flags, "future"))))
    return result


def parse_feed_date(text: str | None, *, now: dt.datetime | None = None) -> LastMod | None:
    """Parse an RSS ``pubDate`` / HTTP date (RFC 2822, 5322, 1123, 850, asctime).

    Named zones (``GMT``, ``UT``, ``Z``, ``EST``, ``PDT``, ``CET``...),
    numeric offsets, a missing weekday and 2-digit years (``00``-``49`` ->
    20xx, ``50``-``99`` -> 19xx) are understood; an unknown or missing zone
    means UTC with the ``assumed_utc`` flag. The weekday is not checked
    against the date. The precision is ``"second"``, or
    ``"minute"`` without seconds (``"day"`` without any time). ISO / W3C forms
    are handled as by :func:`parse_lastmod`. Never raises for any string.

    >>> lm = parse_feed_date("Tue, 10 Jun 2003 04:00:00 GMT")
    >>> lm.iso, lm.precision, lm.flags
    ('2003-06-10T04:00:00Z', 'second', ())
    >>> parse_feed_date("10 Jun 03 04:00 -0500").iso
    '2003-06-10T09:00:00Z'
    >>> parse_feed_date("2003-06-10T04:00:00Z").iso
    '2003-06-10T04:00:00Z'
    >>> parse_lastmod("10 Jun 2003 04:00 GMT").flags, parse_feed_date("10 Jun 2003 04:00 GMT").flags
    (('nonstandard',), ())
    """
    parsed = parse_lastmod(text, now=now)
    if parsed is None or "nonstandard" not in parsed.flags:
        return parsed
    if _RFC_RE.fullmatch(" ".join(parsed.raw.split())) is None:
        return parsed
    flags = tuple(f for f in parsed.flags if f != "nonstandard")
    return LastMod(parsed.raw, parsed.value, parsed.precision, flags)


# --------------------------------------------------------------------------
# Internals
# --------------------------------------------------------------------------


# The default "now + 1 day" limit is sampled at most once per second: the
# future flag has a day of slack, and dt.datetime.now() per URL is costly.
class _Clock:
    __slots__ = ("expires", "limit")

    def __init__(self) -> None:
        self.expires = float("-inf")
        self.limit = dt.datetime.now(_UTC)


_CLOCK = _Clock()


_INVALID_FLAGS: tuple[str, ...] = ("invalid",)
_DATE_ONLY_FLAGS: tuple[str, ...] = ("date_only",)
_ASSUMED_UTC_FLAGS: tuple[str, ...] = ("assumed_utc",)
_NONSTANDARD_FLAGS: tuple[str, ...] = ("nonstandard",)
_ASSUMED_UTC_NONSTANDARD_FLAGS: tuple[str, ...] = ("assumed_utc", "nonstandard")
_NO_FLAGS: tuple[str, ...] = ()
#: The forms the protocol names: the W3C datetime profile (a time needs a zone), and the
#: XML Schema date and dateTime of its schema (a date may have a zone, a time with seconds
#: may have none). Leap seconds are in neither (checked apart).
_STANDARD = re.compile(
    r"[0-9]{4}(?:-[0-9]{2}(?:-[0-9]{2}(?:"
    r"Z|[+-][0-9]{2}:[0-9]{2}"
    r"|T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:[0-9]{2})"
    r"|T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r")?)?)?"
)
_LEAP_SECOND = re.compile(r"T[0-9]{2}:[0-9]{2}:60")

# Fast path: the canonical W3C shapes, handed to the C fromisoformat().
# Anything unusual (other shapes, out-of-range fields, 24:00, leap seconds,
# edge years, 1 January) returns None and goes through the general parser,
# which is authoritative.
_FAST_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})?)?"
)
_fromisoformat = dt.datetime.fromisoformat
# Every valid "+hh:mm" / "-hh:mm" offset of the fast path (|offset| <= 14h).
_OFFSETS: dict[str, dt.timedelta] = {
    f"{sign}{minutes // 60:02d}:{minutes % 60:02d}": dt.timedelta(
        minutes=minutes if sign == "+" else -minutes
    )
    for sign in "+-"
    for minutes in range(14 * 60 + 1)
}


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _parse_cached(raw: str) -> LastMod:
    """Parse stripped, non-empty text; everything except the ``future`` flag."""
    if _FAST_RE.fullmatch(raw) is None:
        return _parse_general(raw)
    try:
        if len(raw) == 10:
            value = _fromisoformat(raw + "T00:00:00+00:00")
            size = 10
            precision = "day"
            flags = _DATE_ONLY_FLAGS
        elif raw[-1] == "Z":
            value = _fromisoformat(raw)
            size = len(raw) - 1
            flags = _NO_FLAGS if raw[10] == "T" else _NONSTANDARD_FLAGS
        elif raw[-6] in "+-":
            size = len(raw) - 6
            offset = _OFFSETS.get(raw[size:])
            if offset is None:  # beyond +-14:00
                return _parse_general(raw)
            value = _fromisoformat(raw[:size] + "+00:00")
            if offset:
                value -= offset
            flags = _NO_FLAGS if raw[10] == "T" else _NONSTANDARD_FLAGS
        else:
            value = _fromisoformat(raw + "+00:00")
            size = len(raw)
            # XML Schema's dateTime: a time with seconds may have no zone
            standard = raw[10] == "T" and size > 16
            flags = _ASSUMED_UTC_FLAGS if standard else _ASSUMED_UTC_NONSTANDARD_FLAGS
        if size != 10:
            precision = "minute" if size == 16 else "second" if size == 19 else "fraction"
    except (ValueError, OverflowError):
        return _parse_general(raw)
    year = value.year
    if year <= _MIN_YEAR or year >= _MAX_YEAR or (value.month == 1 and value.day == 1):
        return _parse_general(raw)  # edge years and sentinel candidates
    return LastMod(raw, value, precision, flags)


#: Digits to "9": a W3C value's shape (``2024-05-01T10:00:00Z`` -> ``9999-99-99T99:99:99Z``).
_TO_SHAPE = bytes.maketrans(b"0123456789", b"9999999999")
_DAY, _ZULU, _OFFSET, _LOCAL = range(4)
#: The shapes of ``_FAST_RE`` written with a ``T`` (and ``Z``, ``+hh:mm``, ``-hh:mm`` or no
#: zone), the only ones ``w3c_lastmod`` reads: shape -> (zone kind, precision, flags).
_W3C_SHAPES: dict[bytes, tuple[int, str, tuple[str, ...]]] = {
    b"9999-99-99": (_DAY, "day", _DATE_ONLY_FLAGS)
}
for _time, _precision in (
    (b"99:99", "minute"),
    (b"99:99:99", "second"),
    *((b"99:99:99." + b"9" * _n, "fraction") for _n in range(1, 7)),
):
    for _zone, _kind, _flags in (
        (b"Z", _ZULU, _NO_FLAGS),
        (b"+99:99", _OFFSET, _NO_FLAGS),
        (b"-99:99", _OFFSET, _NO_FLAGS),
        (b"", _LOCAL, _ASSUMED_UTC_FLAGS),
    ):
        if _kind == _LOCAL and _precision == "minute":
            continue  # no zone and no seconds: neither W3C nor XML Schema (nonstandard)
        _W3C_SHAPES[b"9999-99-99T" + _time + _zone] = (_kind, _precision, _flags)
_new_lastmod = LastMod.__new__


def w3c_lastmod(raw: bytes, now: dt.datetime | None = None) -> LastMod | None:
    """``parse_lastmod(raw.decode(), now=now)`` for the commonest W3C values, faster (the
    sitemap scanner calls it for each distinct ``<lastmod>``); None for any other text,
    and for what ``parse_lastmod`` would flag or send to its general parser (edge years,
    1 January, offsets over 14 hours, out-of-range fields, the future): call it then.

    >>> w3c_lastmod(b"2024-05-01T10:00:00+02:00") == parse_lastmod("2024-05-01T10:00:00+02:00")
    True
    >>> w3c_lastmod(b" 2024-05-01") is None, w3c_lastmod(b"2024-01-01") is None
    (True, True)
    """
    shape = _W3C_SHAPES.get(raw.translate(_TO_SHAPE))
    if shape is None:
        return None
    kind, precision, flags = shape
    text = raw.decode("ascii")
    # The same computation as _parse_cached's, for the same shapes.
    try:
        if kind == _OFFSET:
            offset = _OFFSETS.get(text[-6:])
            if offset is None:
                return None
            value = _fromisoformat(text[:-6] + "+00:00")
            if offset:
                value -= offset
        elif kind == _ZULU:
            value = _fromisoformat(text)
        elif kind == _DAY:
            value = _fromisoformat(text + "T00:00:00+00:00")
        else:
            value = _fromisoformat(text + "+00:00")
    except (ValueError, OverflowError):
        return None
    year = value.year
    if year <= _MIN_YEAR or year >= _MAX_YEAR or (value.month == 1 and value.day == 1):
        return None
    if value > _future_limit(now):  # parse_lastmod's "future" limit
        return None
    lastmod = _new_lastmod(LastMod)
    _set_raw(lastmod, text)
    _set_value(lastmod, value)
    _set_precision(lastmod, precision)
    _set_flags(lastmod, flags)
    # The commonest shapes are their own ISO form, or nearly (the value is their text).
    if kind == _ZULU and precision == "second":
        _set_iso(lastmod, text)
    elif kind == _DAY:
        _set_iso(lastmod, text + "T00:00:00Z")
    else:
        _set_iso(lastmod, None)
    return lastmod


def _future_limit(now: dt.datetime | None) -> dt.datetime:
    """The moment after which a lastmod is in the future: ``now`` (else the clock, read at
    most once a second) + 1 day; the largest datetime when that overflows (nothing is in
    the future then)."""
    if now is None:
        clock = _CLOCK
        tick = _monotonic()
        if tick >= clock.expires:
            clock.expires = tick + 1.0
            clock.limit = dt.datetime.now(_UTC) + _ONE_DAY
        return clock.limit
    tzinfo = now.tzinfo
    if tzinfo is None or (tzinfo is not _UTC and now.utcoffset() is None):
        now = now.replace(tzinfo=_UTC)
    try:
        return now + _ONE_DAY
    except OverflowError:
        return dt.datetime.max.replace(tzinfo=_UTC)


def _parse_general(raw: str) -> LastMod:
    try:
        parsed = _parse_iso(raw)
        if parsed is None:
            parsed = _parse_rfc(raw) if len(raw) <= _MAX_CACHED_LEN else None
    except (ValueError, OverflowError, TypeError, KeyError, IndexError):
        parsed = None
    if parsed is None:
        return LastMod(raw, None, None, _INVALID_FLAGS)
    value, precision, assumed_utc = parsed
    flags: list[str] = []
    if assumed_utc:
        flags.append("assumed_utc")
    if precision in ("year", "month", "day"):
        flags.append("date_only")
    if _STANDARD.fullmatch(raw) is None or _LEAP_SECOND.search(raw) is not None:
        flags.append("nonstandard")
    if _is_sentinel(value):
        flags.append("sentinel")
    return LastMod(raw, value, precision, tuple(flags))


def _is_sentinel(v: dt.datetime) -> bool:
    if v.year >= _MAX_YEAR:
        return True
    if v.month != 1 or v.day != 1:
        return False
    if v.year in _SENTINEL_YEARS:
        return True
    return v.year == 2000 and not (v.hour or v.minute or v.second or v.microsecond)


_Parsed = tuple[dt.datetime, str, bool]

_TZ = r"[Zz]|(?:(?i:UTC|GMT)\s*)?[+-][0-9]{2}(?::?[0-9]{2})?|(?i:UTC|GMT)"

_ISO_RE = re.compile(
    r"([0-9]{4})"  # year
    r"(?:-([0-9]{2})"  # month
    r"(?:-([0-9]{2})"  # day
    r"(?:(?:\s*[Tt]\s*|\s+)"  # separator
    r"([0-9]{2}):([0-9]{2})"  # hour, minute
    r"(?::([0-9]{2})(?:[.,]([0-9]+))?)?"  # second, fraction
    r")?"
    rf"(?:\s*({_TZ}))?"  # timezone
    r")?)?"
)


@functools.lru_cache(maxsize=512)
def _tz_offset(tz: str) -> dt.timedelta | None:
    """Offset of a numeric / UTC-ish zone string; ``None`` when out of range."""
    s = tz.upper()
    if s in ("Z", "UTC", "GMT", "UT"):
        return _ZERO
    if s.startswith(("UTC", "GMT")):
        s = s[3:].lstrip()
    sign = -1 if s[0] == "-" else 1
    digits = s[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:]) if len(digits) > 2 else 0
    if minutes > 59:
        return None
    offset = dt.timedelta(hours=hours, minutes=minutes)
    if offset > _MAX_OFFSET:
        return None
    return sign * offset


def _build(
    date: tuple[int, int, int],
    time: tuple[int, int, int, int],
    offset: dt.timedelta,
) -> dt.datetime | None:
    """Validate fields and build a UTC datetime (``None`` when invalid).

    *date* is (year, month, day), *time* (hour, minute, second, microsecond)
    as written; *offset* is the written UTC offset.
    """
    year, month, day = date
    hour, minute, second, micro = time
    if not _MIN_YEAR <= year <= _MAX_YEAR or minute > 59 or second > 60:
        return None
    if second == 60:  # leap second
        second = 59
    if hour == 24:
        if minute or second or micro:
            return None
        value = dt.datetime(year, month, day, tzinfo=_UTC) + _ONE_DAY
    else:
        value = dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=_UTC)
    if offset:
        try:
            value -= offset
        except OverflowError:
            if year != _MAX_YEAR:
                return None
            value = dt.datetime.max.replace(microsecond=0, tzinfo=_UTC)
    return value


def _parse_iso(raw: str) -> _Parsed | None:
    m = _ISO_RE.fullmatch(raw)
    if m is None:
        return None
    ys, mos, ds, hs, mis, ss, fs, tz = m.groups()
    year = int(ys)
    if mos is None:
        if not _MIN_YEAR <= year <= _MAX_YEAR:
            return None
        return dt.datetime(year, 1, 1, tzinfo=_UTC), "year", False
    month = int(mos)
    if ds is None:
        if not _MIN_YEAR <= year <= _MAX_YEAR:
            return None
        return dt.datetime(year, month, 1, tzinfo=_UTC), "month", False
    day = int(ds)
    if hs is None:
        # Date only; an xs:date style timezone is validated but ignored.
        if tz is not None and _tz_offset(tz) is None:
            return None
        value = _build((year, month, day), (0, 0, 0, 0), _ZERO)
        return None if value is None else (value, "day", False)
    offset = _ZERO if tz is None else _tz_offset(tz)
    if offset is None:
        return None
    if ss is None:
        precision = "minute"
        second = micro = 0
    else:
        second = int(ss)
        if fs is None:
            precision = "second"
            micro = 0
        else:
            precision = "fraction"
            micro = int(fs[:6].ljust(6, "0"))
    value = _build((year, month, day), (int(hs), int(mis), second, micro), offset)
    if value is None:
        return None
    return value, precision, tz is None


# --- RFC 2822 / 5322 / 1123 / 850 and asctime ---------------------------

_MONTHS: dict[str, int] = {}
for _i, _name in enumerate(
    (
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ),
    start=1,
):
    _MONTHS[_name] = _i
    _MONTHS[_name[:3]] = _i
_MONTHS["sept"] = 9

_NAMED_ZONES: dict[str, int] = {  # minutes east of UTC
    "UT": 0,
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "EST": -300,
    "EDT": -240,
    "CST": -360,
    "CDT": -300,
    "MST": -420,
    "MDT": -360,
    "PST": -480,
    "PDT": -420,
    "AKST": -540,
    "AKDT": -480,
    "HST": -600,
    "WET": 0,
    "WEST": 60,
    "BST": 60,
    "CET": 60,
    "CEST": 120,
    "MET": 60,
    "MEST": 120,
    "EET": 120,
    "EEST": 180,
    "MSK": 180,
    "JST": 540,
    "KST": 540,
    "AEST": 600,
    "AEDT": 660,
    "NZST": 720,
    "NZDT": 780,
}

_WEEKDAY = r"(?:(?i:mon|tue|wed|thu|fri|sat|sun)[A-Za-z]*\.?\s*,?\s*)?"
_TIME = r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?"
_ZONE = (
    r"(?:\s*,?\s*([+-][0-9]{2}:?[0-9]{2}|[A-Za-z]{1,5}(?:[+-][0-9]{2}:?[0-9]{2})?))?"
    r"(?:\s*\([^()]*\))?"  # trailing comment such as "(EST)"
)

# [Tue, ]10 Jun 2003[ 04:00[:00] zone]; also RFC 850 "Tuesday, 10-Jun-03 ...".
_RFC_RE = re.compile(
    _WEEKDAY
    + r"([0-9]{1,2})\s*[\s-]\s*([A-Za-z]{3,9})\.?\s*[\s-]\s*([0-9]{2,4})"
    + r"(?:\s*,?\s+(?:at\s+)?"
    + _TIME
    + _ZONE
    + r")?"
)
# [Tue, ]Jun 10[,] 2003[ 04:00[:00] zone]
_MDY_RE = re.compile(
    _WEEKDAY
    + r"([A-Za-z]{3,9})\.?\s+([0-9]{1,2})(?:st|nd|rd|th)?\s*,?\s+([0-9]{4})"
    + r"(?:\s*,?\s+(?:at\s+)?"
    + _TIME
    + _ZONE
    + r")?"
)
# asctime: Tue Jun 10 04:00:00 2003 (optionally with a zone before the year)
_ASCTIME_RE = re.compile(
    _WEEKDAY
    + r"([A-Za-z]{3,9})\s+([0-9]{1,2})\s+"
    + _TIME
    + r"(?:\s+([A-Za-z]{1,5}|[+-][0-9]{4}))?\s+([0-9]{4})"
)


def _rfc_zone(zone: str | None) -> tuple[dt.timedelta | None, bool]:
    """Return (offset, assumed_utc); offset ``None`` means invalid."""
    if zone is None:
        return _ZERO, True
    if zone[0] in "+-":
        return _tz_offset(zone), False
    upper = zone.upper()
    if "+" in upper or "-" in upper:
        if upper[:3] not in ("UTC", "GMT"):
            return None, False
        return _tz_offset(upper), False
    minutes = _NAMED_ZONES.get(upper)
    if minutes is None:
        # RFC 5322 4.3: unknown / military zones carry no usable information.
        return _ZERO, True
    return dt.timedelta(minutes=minutes), False


def _rfc_year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        return year + (2000 if year < 50 else 1900)
    if len(text) == 3:
        return year + 1900
    return year


def _parse_rfc(raw: str) -> _Parsed | None:
    # Collapsing whitespace runs keeps the \s* sequences of the patterns from
    # backtracking quadratically on long blank runs.
    raw = " ".join(raw.split())
    m = _RFC_RE.fullmatch(raw)
    if m is not None:
        ds, mon, ys, hs, mis, ss, zone = m.groups()
    else:
        m = _MDY_RE.fullmatch(raw)
        if m is not None:
            mon, ds, ys, hs, mis, ss, zone = m.groups()
        else:
            m = _ASCTIME_RE.fullmatch(raw)
            if m is None:
                return None
            mon, ds, hs, mis, ss, zone, ys = m.groups()
    month = _MONTHS.get(mon.lower())
    if month is None:
        return None
    year = _rfc_year(ys)
    day = int(ds)
    if hs is None:
        value = _build((year, month, day), (0, 0, 0, 0), _ZERO)
        return None if value is None else (value, "day", False)
    offset, assumed_utc = _rfc_zone(zone)
    if offset is None:
        return None
    hour = int(hs)
    precision = "minute" if ss is None else "second"
    value = _build((year, month, day), (hour, int(mis), int(ss or 0), 0), offset)
    return None if value is None else (value, precision, assumed_utc)
