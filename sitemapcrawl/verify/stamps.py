"""Lastmod verification: stamps, dates written by a build or a template, not by an edit.

docs/verification.md, "L0 over the whole site", "Page stamps" and "Static builds". On the
sitemap side, :class:`SiteView` is the L0 test over a whole site (a site whose every URL
carries one date is caught even when each segment is small) and :func:`stamp_cluster` the
span of a segment's lastmods when they are one stamp; on the page side, :func:`page_stamps`
tells which sampled pages' dates are such stamps (they are no evidence for or against
lastmod, and are given the outcome PAGE_STAMP). Standard library only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import format_utc
from sitemapcrawl.verify.agreement import (
    AGREE,
    LASTMOD_NEWER,
    LASTMOD_OLDER,
    PUBDATE_AS_LASTMOD,
    _tz_k,
)
from sitemapcrawl.verify.dispersion import SegmentL0, burst_stamp
from sitemapcrawl.verify.intervals import _DATE_PRECISIONS, _add, _utc, lastmod_interval
from sitemapcrawl.verify.thresholds import (
    GENERATION_WINDOW_SHARE,
    PAGE_STAMP_MIN,
    PAGE_STAMP_SHARE,
    STAMP_MIN_N_L,
    TZ_SLACK,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "SiteView",
    "page_stamps",
    "stamp_cluster",
]


#: The outcomes judged on the page's own date (which may be a stamp), besides TZ_SHIFT:k.
_STAMPABLE = frozenset({AGREE, LASTMOD_NEWER, LASTMOD_OLDER, PUBDATE_AS_LASTMOD})


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


def stamp_cluster(l0: SegmentL0, site: SiteView | None = None) -> tuple[datetime, datetime] | None:
    """The span of a segment's lastmods when they are one stamp: the dates its pages would
    echo (:func:`page_stamps`). One stamp is 90 % of at least ``STAMP_MIN_N_L`` lastmods
    within one 10-second burst, or on one day when they are dates, or the lastmods' share
    of their site's generation-time cluster or burst stamp. (A 10-minute window is not
    enough: edits made together in a few minutes are edits, and their pages' dates are
    evidence.) A day of dates spans that day in every zone (± ``TZ_SLACK``). None
    otherwise.

    >>> from datetime import UTC
    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> from sitemapcrawl.verify.dispersion import SegmentL0Accumulator
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

    >>> from datetime import UTC
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
