"""What the HTML report keeps of the URL items: per-segment counters and lastmod histograms.

Items stream through :class:`SiteTally` one at a time (from a feed, or from ``item_scraped``
during a crawl); nothing keeps the items themselves. Memory is bounded per segment: a
:class:`LastmodHistogram` has at most ``max_bins`` bins (it coarsens its bin width when
more would be needed), and the per-file and per-reason counters are capped.

Pure: no Scrapy or Twisted import.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "LEVELS",
    "LastmodHistogram",
    "SegmentTally",
    "SiteTally",
    "bin_end",
    "floor_to_level",
    "parse_iso_seconds",
]

#: Bin widths, finest first. Each bin of a level lies inside exactly one bin of the next,
#: so coarsening merges counts exactly.
LEVELS: tuple[str, ...] = ("second", "minute", "10min", "hour", "6h", "day", "month", "year")
_FIXED = {"second": 1, "minute": 60, "10min": 600, "hour": 3600, "6h": 21600, "day": 86400}
#: Average widths in seconds (calendar months and years vary).
WIDTHS = {**_FIXED, "month": 2_629_800, "year": 31_557_600}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

#: Distinct sitemap files and refetch reasons counted per site; the rest are summed.
MAX_FILES = 5000
MAX_REASONS = 200


def floor_to_level(seconds: int, level: str) -> int:
    """The start (epoch seconds, UTC) of the ``level`` bin holding ``seconds``.

    >>> floor_to_level(1714557845, "hour")  # 2024-05-01T10:04:05Z
    1714557600
    >>> floor_to_level(1714557845, "month")  # 2024-05-01T00:00:00Z
    1714521600
    """
    width = _FIXED.get(level)
    if width is not None:
        return seconds - seconds % width
    moment = _EPOCH + dt.timedelta(seconds=seconds)
    if level == "month":
        start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    else:
        start = moment.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return int((start - _EPOCH).total_seconds())


def bin_end(start: int, level: str) -> int:
    """The end (exclusive) of the ``level`` bin starting at ``start``.

    >>> bin_end(0, "day")
    86400
    >>> bin_end(0, "month") // 86400  # January 1970 has 31 days
    31
    """
    width = _FIXED.get(level)
    if width is not None:
        return start + width
    moment = _EPOCH + dt.timedelta(seconds=start)
    if level == "month":
        following = (
            moment.replace(year=moment.year + 1, month=1)
            if moment.month == 12
            else moment.replace(month=moment.month + 1)
        )
    elif moment.year == dt.MAXYEAR:
        following = dt.datetime.max.replace(tzinfo=dt.UTC)
    else:
        following = moment.replace(year=moment.year + 1)
    return int((following - _EPOCH).total_seconds())


def parse_iso_seconds(value: Any) -> int | None:
    """Epoch seconds (UTC, floored) of an item's ISO 8601 ``lastmod``; None when unusable.

    >>> parse_iso_seconds("2024-05-01T10:04:05.9Z")
    1714557845
    >>> parse_iso_seconds("not a date") is None
    True
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return math.floor(moment.timestamp())


class LastmodHistogram:
    """Counts of lastmod values per bin, with the finest bin width that fits ``max_bins``.

    It starts with one-second bins; whenever a new bin would make more than ``max_bins``,
    all bins are merged into the next level of :data:`LEVELS` (minute, 10 minutes, hour,
    6 hours, day, calendar month, calendar year). Counts stay exact; at the year level
    the number of bins is bounded by the calendar itself.

    >>> h = LastmodHistogram(max_bins=2)
    >>> for s in (0, 1, 61):
    ...     h.add(s)
    >>> h.level, sorted(h.bins.items())
    ('minute', [(0, 2), (60, 1)])
    """

    __slots__ = ("_level", "bins", "max_bins", "total")

    def __init__(self, max_bins: int = 512) -> None:
        if max_bins < 1:
            raise ValueError(f"max_bins must be at least 1, not {max_bins!r}")
        self.max_bins = max_bins
        self._level = 0
        self.bins: dict[int, int] = {}
        self.total = 0

    @property
    def level(self) -> str:
        """The current bin width, a name from :data:`LEVELS`."""
        return LEVELS[self._level]

    def add(self, seconds: int, count: int = 1) -> None:
        """Count ``count`` lastmods at ``seconds`` (epoch seconds, UTC)."""
        key = floor_to_level(seconds, LEVELS[self._level])
        bins = self.bins
        bins[key] = bins.get(key, 0) + count
        self.total += count
        while len(bins) > self.max_bins and self._level < len(LEVELS) - 1:
            self._coarsen()
            bins = self.bins

    def _coarsen(self) -> None:
        self._level += 1
        level = LEVELS[self._level]
        merged: dict[int, int] = {}
        for start, count in self.bins.items():
            key = floor_to_level(start, level)
            merged[key] = merged.get(key, 0) + count
        self.bins = merged

    def sorted_bins(self, level: str | None = None) -> list[tuple[int, int, int]]:
        """``(start, end, count)`` per bin, oldest first (epoch seconds, end exclusive),
        merged into ``level`` bins when it is coarser than the current level."""
        level = level or self.level
        if LEVELS.index(level) < self._level:
            raise ValueError(f"bins of one {self.level} cannot be split into {level} bins")
        merged: dict[int, int] = {}
        for start, count in self.bins.items():
            key = floor_to_level(start, level)
            merged[key] = merged.get(key, 0) + count
        return [(start, bin_end(start, level), merged[start]) for start in sorted(merged)]

    def display_level(self, max_bars: int = 100) -> str:
        """The finest level at which the lastmods' time span is at most ``max_bars`` bins wide
        (so bars stay visible: 25 lastmods spread over three years are drawn per month).

        >>> h = LastmodHistogram()
        >>> for day in range(0, 3 * 365, 40):
        ...     h.add(day * 86400 + 7)
        >>> h.level, h.display_level()
        ('second', 'month')
        """
        if not self.bins:
            return self.level
        first = min(self.bins)
        span = bin_end(max(self.bins), self.level) - first
        for level in LEVELS[self._level :]:
            if span / WIDTHS[level] <= max_bars:
                return level
        return LEVELS[-1]


@dataclass(slots=True)
class SegmentTally:
    """What the URL items of one segment said, counted.

    ``lastmod``: items with a usable lastmod; ``missing``: without one; ``invalid``: one
    that did not parse. Lastmods flagged ``future`` (over a day ahead) or ``sentinel``
    (placeholders such as 1970-01-01) are counted in ``not_plotted`` and kept out of the
    histogram, so one year-9999 value does not stretch the time axis.
    """

    urls: int = 0
    lastmod: int = 0
    missing: int = 0
    invalid: int = 0
    flags: Counter[str] = field(default_factory=Counter)
    not_plotted: Counter[str] = field(default_factory=Counter)
    histogram: LastmodHistogram = field(default_factory=LastmodHistogram)
    refetch: Counter[tuple[bool, str]] = field(default_factory=Counter)


_NOT_PLOTTED = ("sentinel", "future")


class SiteTally:
    """Per-segment counters and histograms for one crawl's URL items (bounded memory).

    >>> tally = SiteTally()
    >>> tally.add_item({"url": "https://s.example/a", "segment": "/a/",
    ...                 "lastmod": "2024-05-01T10:00:00Z", "sitemap": "https://s.example/s.xml",
    ...                 "found_via": "robots", "depth": 1})
    >>> tally.segments["/a/"].lastmod, tally.files["https://s.example/s.xml"]
    (1, ['robots', 1, 1])
    """

    def __init__(self, max_bins: int = 512) -> None:
        self.max_bins = max_bins
        self.segments: dict[str, SegmentTally] = {}
        #: sitemap file -> [found_via, depth, URLs], for the first MAX_FILES files
        self.files: dict[str, list[Any]] = {}
        self.other_files_urls = 0
        #: (refetch, reason) -> URLs, over the whole site (incremental runs only)
        self.refetch: Counter[tuple[bool, str]] = Counter()
        self.items = 0
        self.link_only = 0  # items found_via=links (no sitemap entry)
        self._last_lastmod: str | None = None
        self._last_seconds: int | None = None

    def part(self, report: Mapping[str, Any]) -> SiteTally:
        """The share of this tally a site report covers: the items of its segments, the
        files its segments were read from, and as many link-only items as its coverage
        counts. A crawl over several sites ends with one report per site, all
        after the URL items of every site: each is drawn with its own part."""
        names = {s.get("segment") for s in report.get("segments") or ()}
        files = {f for s in report.get("segments") or () for f in s.get("sitemaps") or ()}
        part = SiteTally(max_bins=self.max_bins)
        part.segments = {n: t for n, t in self.segments.items() if n in names}
        part.files = {f: entry for f, entry in self.files.items() if f in files}
        part.items = sum(t.urls for t in part.segments.values())
        for tally in part.segments.values():
            part.refetch.update(tally.refetch)
        coverage = report.get("coverage") or {}  # its own link-only URLs, when it has them
        part.link_only = min(self.link_only, int((coverage.get("urls") or {}).get("link_only", 0)))
        return part

    def segment(self, name: str) -> SegmentTally:
        """The tally of segment ``name``, created on first use."""
        found = self.segments.get(name)
        if found is None:
            found = self.segments[name] = SegmentTally(
                histogram=LastmodHistogram(max_bins=self.max_bins)
            )
        return found

    def add_item(self, item: Mapping[str, Any]) -> None:
        """Count one URL item given as a dict (a feed line)."""
        self.add(
            segment=item.get("segment") or "",
            lastmod=item.get("lastmod"),
            lastmod_raw=item.get("lastmod_raw"),
            lastmod_flags=item.get("lastmod_flags") or (),
            sitemap=item.get("sitemap") or "",
            found_via=item.get("found_via") or "",
            depth=item.get("depth"),
            refetch=item.get("refetch"),
            refetch_reason=item.get("refetch_reason"),
        )

    def add(
        self,
        *,
        segment: str,
        lastmod: str | None,
        lastmod_raw: str | None,
        lastmod_flags: Iterable[str],
        sitemap: str,
        found_via: str,
        depth: Any,
        refetch: bool | None,
        refetch_reason: str | None,
    ) -> None:
        """Count one URL item given field by field (no dict built during a crawl)."""
        if found_via == "links":  # no sitemap entry: counted in the report's coverage
            self.link_only += 1
            return
        self.items += 1
        tally = self.segments.get(segment) or self.segment(str(segment))
        tally.urls += 1
        flags = [str(flag) for flag in lastmod_flags] if lastmod_flags else []
        if flags:
            tally.flags.update(flags)
        # Sitemaps repeat lastmods (a generation-time sitemap has one): parse each run once.
        if lastmod == self._last_lastmod:
            seconds = self._last_seconds
        else:
            seconds = parse_iso_seconds(lastmod)
            self._last_lastmod, self._last_seconds = lastmod, seconds
        if seconds is None:
            if "invalid" in flags or lastmod_raw:
                tally.invalid += 1
            else:
                tally.missing += 1
        else:
            tally.lastmod += 1
            hidden = next((flag for flag in _NOT_PLOTTED if flag in flags), None) if flags else None
            if hidden is not None:
                tally.not_plotted[hidden] += 1
            else:
                tally.histogram.add(seconds)
        entry = self.files.get(sitemap)
        if entry is not None:
            entry[2] += 1
        elif len(self.files) < MAX_FILES:
            self.files[sitemap] = [str(found_via), depth if isinstance(depth, int) else None, 1]
        else:
            self.other_files_urls += 1
        if refetch is not None:
            key = (bool(refetch), str(refetch_reason or ""))
            if key not in self.refetch and len(self.refetch) >= MAX_REASONS:
                key = (key[0], "(other reasons)")
            self.refetch[key] += 1
            tally.refetch[key] += 1
