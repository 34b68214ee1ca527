"""The report's plots, drawn with matplotlib and returned as inline SVG.

No pyplot: each plot is a ``matplotlib.figure.Figure`` saved by the SVG backend, so no
global backend is chosen and nothing is shown. Text stays text (``svg.fonttype: none``),
ids are salted per plot (several SVGs share one HTML document) and the date metadata is
left out, so the same input gives the same bytes. Site data reaches a plot only as the
timeline's row labels, reduced to printable ASCII and drawn with mathtext off.

Pure: no Scrapy or Twisted import.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import re
from typing import TYPE_CHECKING

import matplotlib as mpl
import matplotlib.dates as mdates
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator

from .markup import Markup

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractContextManager

__all__ = [
    "AFTER_X",
    "AGE_TICKS",
    "MIN_AGE",
    "TimelineRow",
    "histogram_svg",
    "plot_label",
    "timeline_points",
    "timeline_svg",
]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
T_REF_COLOUR = "#c0392b"

#: Ages (seconds before t_ref) at or under this are drawn together in the first column.
MIN_AGE = 60
#: The x position of lastmods after t_ref on the timeline.
AFTER_X = 15
#: Tick positions (seconds before t_ref) and labels of the timeline's log axis.
AGE_TICKS: tuple[tuple[float, str], ...] = (
    (AFTER_X, "after"),
    (MIN_AGE, "≤1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (86400, "1 day"),
    (7 * 86400, "1 week"),
    (30 * 86400, "30 days"),
    (365 * 86400, "1 year"),
    (3650 * 86400, "10 years"),
)


def _style() -> AbstractContextManager[None]:
    """The plots' look (and text kept as text in the SVG)."""
    return mpl.rc_context(
        {
            "svg.fonttype": "none",
            "font.family": "DejaVu Sans",
            "font.size": 8.5,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.fontsize": 8,
        }
    )


def _days(seconds: int) -> float:
    """Matplotlib's date number (days since its epoch) of epoch seconds."""
    return float(mdates.date2num(_moment(seconds)))  # type: ignore[no-untyped-call]


def _moment(seconds: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(seconds=seconds)


def plot_label(text: str, width: int = 44) -> str:
    """A segment name fit for a plot: printable ASCII only, shortened in the middle.

    >>> plot_label("/sitemaps/<script>é</script>.xml")
    '/sitemaps/<script>?</script>.xml'
    >>> plot_label("/" + "a" * 60 + ".xml", width=20)
    '/aaaaaaa...aaaaa.xml'
    """
    cleaned = "".join(ch if " " <= ch <= "~" else "?" for ch in text)
    if len(cleaned) > width:
        head = (width - 3) // 2
        cleaned = cleaned[:head] + "..." + cleaned[len(cleaned) - (width - 3 - head) :]
    return cleaned


def _svg(figure: Figure, salt: str, label: str) -> Markup:
    """The figure as an ``<svg>`` element to inline in HTML."""
    buffer = io.StringIO()
    with mpl.rc_context({"svg.hashsalt": salt}):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    svg = _prefix_ids(text[text.index("<svg") :], salt)
    # The root element gets an accessible name; the label is escaped like any attribute.
    return Markup(
        svg.replace(
            "<svg ",
            f'<svg role="img" class="plot" aria-label="{html.escape(label, quote=True)}" ',
            1,
        )
    )


_ID = re.compile(r'\sid="([^"]+)"')


def _prefix_ids(svg: str, prefix: str) -> str:
    """Make every id of one SVG (and every reference to it) unique in the HTML document:
    matplotlib numbers its groups per figure (``line2d_1``), so two figures would clash.

    >>> _prefix_ids('<g id="a"><use xlink:href="#a"/><path clip-path="url(#a)"/></g>', "p")
    '<g id="p-a"><use xlink:href="#p-a"/><path clip-path="url(#p-a)"/></g>'
    """
    ids = set(_ID.findall(svg))
    if not ids:
        return svg
    alternatives = "|".join(re.escape(name) for name in sorted(ids, key=len, reverse=True))
    pattern = re.compile(rf'(\sid="|href="#|url\(#)({alternatives})(?=[")])')
    return pattern.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def histogram_svg(
    bins: Sequence[tuple[int, int, int]],
    *,
    level: str,
    t_ref: int | None,
    colour: str,
    salt: str,
    label: str,
) -> Markup:
    """A bar per bin (``(start, end, count)``, epoch seconds) on a date axis, with t_ref."""
    with _style():
        figure = Figure(figsize=(7.6, 2.3), layout="constrained")
        axes = figure.add_subplot()
        starts = [_days(start) for start, _, _ in bins]
        widths = [(end - start) / 86400 for start, end, _ in bins]
        counts = [count for _, _, count in bins]
        axes.bar(
            starts,
            counts,
            width=widths,
            align="edge",
            color=colour,
            edgecolor=colour,
            linewidth=0.8,
            label=f"lastmods per {level}",
        )
        low = min(starts)
        high = max(s + w for s, w in zip(starts, widths, strict=True))
        if t_ref is not None:
            ref = _days(t_ref)
            axes.axvline(
                ref, color=T_REF_COLOUR, linestyle="--", linewidth=1.3, label="sitemap fetched"
            )
            low, high = min(low, ref), max(high, ref)
        pad = max((high - low) * 0.04, min(widths) * 2, 1 / 86400)
        axes.set_xlim(low - pad, high + pad)
        locator = mdates.AutoDateLocator(minticks=3, maxticks=8)  # type: ignore[no-untyped-call]
        axes.xaxis.set_major_locator(locator)
        axes.xaxis.set_major_formatter(
            mdates.ConciseDateFormatter(locator)  # type: ignore[no-untyped-call]
        )
        axes.set_ylabel(f"URLs per {level}")
        axes.set_ylim(0, max(counts) * 1.15)
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False)
        return _svg(figure, salt, label)


class TimelineRow:
    """One segment on the timeline: its label, colour, t_ref and histogram bins."""

    __slots__ = ("bins", "colour", "label", "t_ref", "total")

    def __init__(
        self, label: str, colour: str, t_ref: int, bins: Sequence[tuple[int, int, int]]
    ) -> None:
        self.label = label
        self.colour = colour
        self.t_ref = t_ref
        self.bins = bins
        self.total = sum(count for _, _, count in bins)


def timeline_points(bins: Sequence[tuple[int, int, int]], t_ref: int) -> list[tuple[float, int]]:
    """``(age, count)`` per timeline position: age in seconds before ``t_ref``.

    A bin's age is the middle of its part before t_ref, at least :data:`MIN_AGE`; bins
    wholly after t_ref go to :data:`AFTER_X`. Bins at the same position are added up.

    >>> timeline_points([(9990, 9991, 3), (9000, 9600, 2), (10500, 10501, 4), (9999, 10599, 1)],
    ...                 t_ref=10000)
    [(15, 4), (60, 4), (700.0, 2)]
    """
    merged: dict[float, int] = {}
    for start, end, count in bins:
        if start > t_ref:
            age: float = AFTER_X
        else:
            age = max(t_ref - (start + min(end, t_ref)) / 2, MIN_AGE)
        merged[age] = merged.get(age, 0) + count
    return sorted(merged.items())


def timeline_svg(rows: Sequence[TimelineRow], salt: str, label: str) -> Markup:
    """Every segment's lastmods by age at the sitemap's fetch time (log axis), one row each.

    The dot area is the share of the segment's lastmods at that age: a sitemap stamped
    with its generation time is one big dot in the "≤1 min" column.
    """
    with _style():
        figure = Figure(figsize=(7.6, 0.9 + 0.34 * len(rows)), layout="constrained")
        axes = figure.add_subplot()
        oldest = 3650 * 86400.0
        for index, row in enumerate(rows):
            points = timeline_points(row.bins, row.t_ref)
            ages = [age for age, _ in points]
            sizes = [8 + 420 * count / row.total for _, count in points]
            axes.scatter(
                ages,
                [index] * len(points),
                s=sizes,
                color=row.colour,
                alpha=0.75,
                linewidths=0,
            )
            oldest = max([oldest, *ages])
        axes.axvline(600, color=T_REF_COLOUR, linestyle=":", linewidth=1)
        axes.set_xscale("log")
        axes.set_xlim(AFTER_X / 1.8, oldest * 1.8)
        axes.set_xticks([x for x, _ in AGE_TICKS], [name for _, name in AGE_TICKS])
        axes.xaxis.set_minor_locator(NullLocator())
        axes.invert_xaxis()  # time runs left to right: oldest left, the fetch on the right
        axes.set_yticks(
            list(range(len(rows))), [plot_label(row.label) for row in rows], parse_math=False
        )
        axes.set_ylim(len(rows) - 0.5, -0.5)
        axes.set_xlabel("age of the lastmod when the sitemap was fetched (t_ref), log scale")
        axes.grid(axis="x", color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
        return _svg(figure, salt, label)
