"""Refetch scheduling: did a URL's lastmod move since our cut (ΔL)?

docs/verification.md, "Scheduling incremental refetches" and "Cross-run score". A move is
read on the lastmod's interval (:func:`interval`: in the site's own zone when its pages
declare one, :func:`site_utc_offset`), corrected for a known whole-hour shift, and a value
that moved to a time our last fetch already covers is a late report (:func:`late_report`),
not a new change.
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.verify.intervals import lastmod_interval
from sitemapcrawl.verify.thresholds import TZ_SLACK

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "delta_l",
    "interval",
    "late_report",
    "reports_within",
    "site_utc_offset",
]


def delta_l(
    lastmod: LastMod | None,
    since: datetime,
    previous_raw: str | None,
    compare_raw: bool,
    *,
    captured: tuple[datetime, datetime] | None = None,
    shift: float = 0.0,
    utc_offset: float | None = None,
) -> bool | None:
    """Whether lastmod says "possibly changed since ``since``" (None: no usable lastmod).

    ``captured``: the window ``(start, end]`` between our last two fetches of the page when
    the later one found its content changed. A value that moved to a time inside it is a
    late report (a lagged sitemap) of the change that fetch already has: it says nothing
    about the time since. ``shift``: seconds to subtract from the value (a segment whose
    lastmod is off by whole hours, TZ_SHIFT). ``utc_offset``: the site's own UTC offset in
    seconds, when its pages declare one: a date (or a time without a zone) is then read in
    that zone instead of any zone (± 14 h).

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod as p
    >>> from datetime import UTC
    >>> cut = datetime(2024, 6, 1, 12, tzinfo=UTC)
    >>> delta_l(p("2024-06-01"), cut, None, False)  # the day may end after the cut
    True
    >>> delta_l(p("2024-05-30"), cut, None, False)
    False
    >>> delta_l(p("2024-05-30"), cut, "2024-05-29", True)  # the value moved
    True
    >>> window = (cut - timedelta(days=3), cut)
    >>> delta_l(p("2024-05-30T08:00:00Z"), cut, "2024-05-01", True, captured=window)
    False
    >>> delta_l(p("2024-06-01T15:00:00Z"), cut, None, False, shift=5 * 3600)  # 10:00 really
    False
    >>> delta_l(p("2024-06-01"), cut + timedelta(hours=12), None, False)  # any zone's 1 June
    True
    >>> edited = "2024-06-01T11:40:00Z"  # 20 minutes before the cut, as we saw it then
    >>> delta_l(p(edited), cut, None, False)  # no value to compare: within τ of the cut
    True
    >>> delta_l(p(edited), cut, edited, True)  # the same instant as before: no edit since
    False
    >>> delta_l(p("2024-06-01"), cut, "2024-06-01", True)  # the same day: maybe edited since
    True
    >>> delta_l(p("2024-06-01"), cut + timedelta(hours=12), None, False, utc_offset=7200)
    False
    """
    if lastmod is None or lastmod.value is None:
        return None
    if compare_raw and previous_raw is not None:
        if previous_raw != lastmod.raw:
            return not late_report(lastmod, captured, shift, utc_offset)
        if _instant(lastmod):
            # The very timestamp we saw before ``since``: no edit since. Its interval (± τ
            # for clock skew) would still reach past ``since`` when the page was edited
            # within τ before our look, and count a change that look already had.
            return False
    return _shifted(interval(lastmod, utc_offset)[1], shift) > since


def _instant(lastmod: LastMod) -> bool:
    """Whether the value names one instant: a time with its zone. A date, or a time
    without a zone, covers a span our previous look may have fallen inside: the same value
    can stand for an edit after it."""
    return lastmod.precision not in ("day", "month", "year") and "assumed_utc" not in (
        lastmod.flags
    )


def late_report(
    lastmod: LastMod,
    captured: tuple[datetime, datetime] | None,
    shift: float = 0.0,
    utc_offset: float | None = None,
) -> bool:
    """Whether a lastmod value that moved reports a time inside ``captured``, the window
    between our last two fetches of the page when the later one found it changed: a late
    report (a lagged sitemap) of a change that fetch already has."""
    return captured is not None and reports_within(lastmod, captured, shift, utc_offset)


def interval(
    lastmod: LastMod, utc_offset: float | None = None, tau: timedelta | None = None
) -> tuple[datetime, datetime]:
    """:func:`lastmod_interval` (``tau``: its widening of a timestamp), with a date or a time
    without a zone read in the site's own zone when ``utc_offset`` (seconds east of UTC) is
    known."""
    lo, hi = lastmod_interval(lastmod) if tau is None else lastmod_interval(lastmod, tau)
    if utc_offset is None or not (
        lastmod.precision in ("day", "month", "year") or "assumed_utc" in lastmod.flags
    ):
        return lo, hi
    with suppress(OverflowError):  # the ends of the calendar stay as they are
        local = timedelta(seconds=utc_offset)
        return lo + TZ_SLACK - local, hi - TZ_SLACK - local
    return lo, hi


def reports_within(
    lastmod: LastMod,
    window: tuple[datetime, datetime],
    shift: float = 0.0,
    utc_offset: float | None = None,
) -> bool:
    """Whether ``lastmod`` (corrected by ``shift`` seconds) reports a change inside the
    window ``(start, end]``: all the times it may stand for (a date-only value or one
    without a timezone: its whole day, ± 14 h, or in ``utc_offset``'s zone) are inside.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod as p
    >>> from datetime import UTC
    >>> window = (datetime(2024, 6, 1, tzinfo=UTC), datetime(2024, 6, 2, tzinfo=UTC))
    >>> reports_within(p("2024-06-01T10:00:00Z"), window)
    True
    >>> reports_within(p("2024-06-01"), window)  # a day in some timezone: may be outside
    False
    """
    if lastmod.value is None:
        return False
    start, end = window
    lo, hi = interval(lastmod, utc_offset, tau=timedelta(0))
    return start < _shifted(lo, shift) and _shifted(hi, shift) <= end


def _shifted(moment: datetime, shift: float) -> datetime:
    if shift:
        with suppress(OverflowError):  # a value at the ends of the calendar stays there
            return moment - timedelta(seconds=shift)
    return moment


_OFFSET = re.compile(r"T\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(Z|[+-]\d\d:?\d\d)$", re.IGNORECASE)


def site_utc_offset(page_dates: Iterable[str], *, minimum: int = 5) -> int | None:
    """The UTC offset (seconds) the site's pages write their times in: the one at least
    80 % of the timestamps with a zone share, over at least ``minimum`` of them.

    >>> site_utc_offset(["2024-06-01T10:00:00+02:00"] * 5 + ["2024-06-01T08:00:00Z"])
    7200
    >>> site_utc_offset(["2024-06-01T10:00:00+02:00"] * 3 + ["2024-06-01"] * 9) is None
    True
    """
    found: list[int] = []
    for raw in page_dates:
        match = _OFFSET.search(raw.strip())
        if match is None:
            continue
        zone = match.group(1).replace(":", "")
        if zone.upper() == "Z":
            found.append(0)
            continue
        sign = -1 if zone[0] == "-" else 1
        found.append(sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60))
    if len(found) < minimum:
        return None
    value = max(set(found), key=found.count)
    return value if found.count(value) >= 0.8 * len(found) else None
