"""Render site reports as one self-contained HTML file.

Input: one or more :class:`~sitemapcrawl.htmlreport.feed.Run` (a ``SiteReport`` as a dict
and the :class:`~sitemapcrawl.htmlreport.collect.SiteTally` of its URL items). Output: a
single HTML document with inline CSS and inline SVG plots; it loads nothing (its Content
Security Policy forbids it) and runs no script. Every value from the report or the items
is escaped (:mod:`sitemapcrawl.htmlreport.markup`).

Per origin: the site verdict; a table of segments (URLs, lastmod coverage, verdict and
reason, sample size and Wilson bound); a timeline of every segment's lastmods by age at
the sitemap's fetch time; per segment a lastmod histogram with the fetch time marked, its
L0 metrics and sampled pages; where the sitemaps were found; coverage; errors and limits;
the incremental decisions and the state file.

Pure: no Scrapy or Twisted import.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import TYPE_CHECKING, Any

from sitemapcrawl import __version__

from .collect import SegmentTally, SiteTally, parse_iso_seconds
from .feed import Run
from .markup import Markup, el, esc, join
from .plots import TimelineRow, histogram_svg, timeline_svg

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = ["VERDICT_COLOURS", "render_html", "render_report"]

#: Verdict -> colour of its badge and plots (anything else is drawn grey).
VERDICT_COLOURS: dict[str, str] = {
    "TRUSTED": "#1e7b34",
    "PROVISIONAL": "#2f9e58",
    "OVER_REPORTING": "#a77d00",
    "PARTIAL": "#8a6d3b",
    "STALE": "#d35400",
    "TZ_SHIFT": "#c86a00",
    "GENERATION_TIME": "#c0392b",
    "INVALID": "#962d22",
    "ABSENT": "#6c7a7d",
    "UNVERIFIABLE": "#8e9b9d",
}
_OTHER_COLOUR = "#6c7a7d"
_MEANING = {
    "TRUSTED": "lastmod agreed with the pages across runs",
    "PROVISIONAL": "lastmod agrees with the sampled pages",
    "OVER_REPORTING": "lastmod changes more often than the pages",
    "PARTIAL": "only part of the URLs carry a lastmod",
    "STALE": "pages changed after their lastmod",
    "TZ_SHIFT": "lastmods are shifted by whole hours",
    "GENERATION_TIME": "lastmod is the sitemap's generation time",
    "INVALID": "lastmods are invalid or in the future",
    "ABSENT": "no usable lastmod",
    "UNVERIFIABLE": "not enough evidence to judge",
}
#: Rows shown at most in a generic table, items in a list, sampled pages per segment.
_MAX_ROWS = 200
_MAX_LIST = 50
_MAX_FILES_SHOWN = 200

_CSS = """
:root { color-scheme: light; --line: #d9dde1; --muted: #5d6a70; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1d2327; background: #f6f7f8; }
main { max-width: 1180px; margin: 0 auto; padding: 24px; }
header.page { background: #1d2327; color: #fff; padding: 18px 24px; }
header.page h1 { margin: 0; font-size: 20px; }
header.page p { margin: 4px 0 0; color: #c7ced3; }
section.origin { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 8px 24px 24px; margin-bottom: 28px; }
h2 { font-size: 19px; margin: 18px 0 6px; overflow-wrap: anywhere; }
h3 { font-size: 16px; margin: 26px 0 6px; border-top: 1px solid var(--line);
  padding-top: 14px; }
h4 { font-size: 14px; margin: 16px 0 4px; overflow-wrap: anywhere; }
p.note, .muted { color: var(--muted); }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left;
  vertical-align: top; }
th { background: #eef1f3; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.url, td.reason { overflow-wrap: anywhere; }
table.segments td.url { min-width: 170px; }
table.segments td.reason { min-width: 280px; }
table.kv th { white-space: nowrap; }
.verdict { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff;
  font-size: 12px; font-weight: 600; letter-spacing: .02em; white-space: nowrap; }
.summary { display: flex; flex-wrap: wrap; gap: 12px; margin: 10px 0 4px; }
.summary div { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px;
  min-width: 150px; background: #fafbfc; }
.summary b { display: block; font-size: 18px; }
figure { margin: 8px 0; }
figcaption { color: var(--muted); font-size: 12px; }
svg.plot { max-width: 100%; height: auto; }
details { margin: 6px 0; }
summary { cursor: pointer; color: #2b5d8a; }
code { font-size: 12px; }
"""


def render_report(
    report: Mapping[str, Any], items: Iterable[Mapping[str, Any]], **options: Any
) -> str:
    """The HTML report of one crawl: its ``SiteReport`` (a dict) and its URL items (dicts,
    consumed as a stream). ``options`` go to :func:`render_html`."""
    tally = SiteTally()
    for item in items:
        tally.add_item(item)
    return render_html([Run(dict(report), tally)], **options)


def render_html(
    runs: Sequence[Run],
    *,
    source: str | None = None,
    max_plots: int = 60,
    left_out: int = 0,
) -> str:
    """One HTML document with a section per run (per origin).

    ``source`` names the feed in the header; ``max_plots`` caps the segments that get a
    histogram (the largest ones; every segment is in the table); ``left_out`` is the number
    of URL items after the feed's last report, which no report covers.
    """
    origins = [str(run.report.get("origin") or "?") for run in runs]
    title = "Sitemap report: " + (
        origins[0] if len(origins) == 1 else f"{len(origins)} site reports"
    )
    subtitle = [f"sitemapcrawl {__version__}"]
    if source is not None:
        subtitle.append(f"from {source}")
    body = [
        el(
            "header",
            el("h1", title),
            el("p", " · ".join(subtitle)),
            class_="page",
        )
    ]
    sections = []
    if left_out:
        sections.append(
            el(
                "p",
                f"{left_out:,} URL items after the feed's last site report are not in this "
                "report (a crawl stopped before its end?).",
                class_="note",
            )
        )
    for index, run in enumerate(runs):
        sections.append(_run_section(run, index, max_plots))
    body.append(el("main", sections))
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", http_equiv="Content-Security-Policy", content=policy),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("meta", name="generator", content=f"sitemapcrawl {__version__}"),
        el("title", title),
        el("style", Markup(_CSS)),
    )
    return "<!DOCTYPE html>\n" + el("html", head, el("body", body), lang="en") + "\n"


# -- formatting ----------------------------------------------------------------------------


def _num(value: Any) -> Markup:
    """A number for a table cell (anything else escaped as text).

    >>> _num(1234567), _num(-0.0), _num(0.86681), _num(1234.5678), _num(None), _num("<b>")
    ('1,234,567', '0', '0.8668', '1,235', '—', '&lt;b&gt;')
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return esc("—" if value is None else value)
    if isinstance(value, int):
        return esc(f"{value:,}")
    if not math.isfinite(value):
        return esc(str(value))
    value += 0.0  # -0.0 shows as 0
    return esc(f"{value:,.4g}" if abs(value) >= 1 else f"{value:.4g}")


def _fixed(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return f"{value:.2f}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def _share(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return f"{100 * value:.1f}%"


def _when(value: Any) -> str:
    """An ISO 8601 time from the report, for people; anything else as it is.

    >>> _when("2024-05-01T10:00:00.5+02:00"), _when("soon"), _when(None)
    ('2024-05-01 08:00:00 UTC', 'soon', '—')
    """
    seconds = parse_iso_seconds(value)
    if seconds is None:
        return "—" if value is None else str(value)
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _colour(verdict: Any) -> str:
    return VERDICT_COLOURS.get(str(verdict), _OTHER_COLOUR)


def _badge(verdict: Any) -> Markup:
    name = "—" if verdict is None else str(verdict)
    return el(
        "span",
        name,
        class_="verdict",
        style=f"background:{_colour(verdict)}",
        title=_MEANING.get(name),
    )


def _link(url: Any) -> Markup:
    text = str(url)
    if text.startswith(("http://", "https://")):
        return el("a", text, href=text, rel="noopener noreferrer nofollow")
    return esc(text)


def _anchor(index: int, segment_index: int) -> str:
    return f"o{index}-s{segment_index}"


def _generic(value: Any, depth: int = 0) -> Markup:
    """Any JSON value as HTML: dicts as key/value tables, lists of dicts as tables."""
    if isinstance(value, dict):
        if not value:
            return esc("—")
        if depth >= 4:
            return el("code", json.dumps(value, ensure_ascii=False, default=str))
        rows = [
            el("tr", el("th", key), el("td", _generic(item, depth + 1)))
            for key, item in list(value.items())[:_MAX_ROWS]
        ]
        if len(value) > _MAX_ROWS:
            rows.append(el("tr", el("td", f"… {len(value) - _MAX_ROWS:,} more", colspan=2)))
        return el("table", rows, class_="kv")
    if isinstance(value, list):
        if not value:
            return esc("—")
        if all(isinstance(item, dict) for item in value) and depth < 4:
            keys: list[str] = []
            for item in value[:_MAX_ROWS]:
                keys.extend(k for k in item if k not in keys)
            head = el("tr", [el("th", key) for key in keys])
            rows = [
                el("tr", [el("td", _generic(item.get(key), depth + 1)) for key in keys])
                for item in value[:_MAX_ROWS]
            ]
            if len(value) > _MAX_ROWS:
                rows.append(el("tr", el("td", f"… {len(value) - _MAX_ROWS:,} more")))
            return el("table", head, rows)
        shown = [_generic(item, depth + 1) for item in value[:_MAX_LIST]]
        more = f" … {len(value) - _MAX_LIST:,} more" if len(value) > _MAX_LIST else None
        return join([join(shown, ", "), more])
    if isinstance(value, bool):
        return esc("yes" if value else "no")
    if isinstance(value, (int, float)):
        return _num(value)
    if value is None:
        return esc("—")
    return _link(value)


def _kv_table(pairs: Iterable[tuple[Any, Any]], numeric: bool = True) -> Markup:
    rows = [
        el(
            "tr",
            el("th", key),
            el(
                "td", _num(value) if numeric else _generic(value), class_="num" if numeric else None
            ),
        )
        for key, value in pairs
    ]
    return el("table", rows, class_="kv")


# -- sections ------------------------------------------------------------------------------


def _run_section(run: Run, index: int, max_plots: int) -> Markup:
    report = run.report
    tally = run.tally
    segments = [s for s in report.get("segments") or [] if isinstance(s, dict)]
    in_report = {str(s.get("segment")) for s in segments}
    extra = [name for name in sorted(tally.segments) if name not in in_report]
    parts: list[Any] = [el("h2", "Site: ", _link(report.get("origin") or "?"))]
    parts.append(_overview(report, tally, len(segments)))
    parts.append(el("h3", "Segments"))
    parts.append(_segment_table(segments, extra, tally, index))
    plotted = _plotted(segments, tally, max_plots)
    parts.append(el("h3", "Lastmod timeline"))
    parts.append(_timeline(segments, tally, plotted, index))
    parts.append(el("h3", "Per segment"))
    if len(plotted) < sum(1 for s in segments if _has_bins(tally, s)):
        parts.append(
            el(
                "p",
                f"Histograms are drawn for the {len(plotted)} largest segments; the others "
                "are in the table above.",
                class_="note",
            )
        )
    for position, segment in enumerate(segments):
        parts.append(_segment_detail(segment, tally, index, position, plotted))
    parts.append(el("h3", "Where the sitemaps were found"))
    parts.append(_discovery(report, tally))
    parts.append(el("h3", "Coverage"))
    parts.append(_coverage(report))
    parts.append(el("h3", "Errors and limits"))
    parts.append(_errors(report))
    parts.append(el("h3", "Incremental run"))
    parts.append(_incremental(report, tally))
    parts.append(el("h3", "State"))
    state = report.get("state")
    parts.append(_generic(state) if state else el("p", "No state file was used.", class_="note"))
    parts.append(el("h3", "Page sampling"))
    sample = report.get("sample")
    parts.append(_generic(sample) if sample else el("p", "No sampling data.", class_="note"))
    return el("section", parts, class_="origin", id=f"origin-{index}")


def _overview(report: Mapping[str, Any], tally: SiteTally, n_segments: int) -> Markup:
    verdict = report.get("site_verdict") or {}
    urls = report.get("urls") or {}
    found = urls.get("found", tally.items)
    present = urls.get("lastmod_present")
    boxes = [
        el("div", "Site verdict", el("b", _badge(verdict.get("verdict")))),
        el("div", "URLs found", el("b", _num(found))),
        el("div", "Segments", el("b", _num(n_segments))),
        el(
            "div",
            "With lastmod",
            el("b", _pct(present, found) if isinstance(present, int) and found else "—"),
        ),
        el("div", "Usable lastmod", el("b", _share(verdict.get("usable_share")))),
    ]
    by_verdict = verdict.get("urls_by_verdict") or {}
    lines = [
        el("p", "Report generated ", _when(report.get("generated_at")), ".", class_="note"),
        el("div", boxes, class_="summary"),
    ]
    if by_verdict:
        lines.append(
            el(
                "p",
                "URLs by verdict: ",
                join(
                    [join([_badge(name), " ", _num(count)]) for name, count in by_verdict.items()],
                    "  ",
                ),
            )
        )
    if urls:
        lines.append(_kv_table(urls.items()))
    return join(lines)


def _has_bins(tally: SiteTally, segment: Mapping[str, Any]) -> bool:
    found = tally.segments.get(str(segment.get("segment")))
    return found is not None and found.histogram.total > 0


def _plotted(segments: list[dict[str, Any]], tally: SiteTally, max_plots: int) -> set[str]:
    """The names of the segments that get plots: the ``max_plots`` largest with lastmods."""
    names = [str(s.get("segment")) for s in segments if _has_bins(tally, s)]
    names.sort(key=lambda name: (-tally.segments[name].urls, name))
    return set(names[:max_plots])


def _sample_cells(segment: Mapping[str, Any]) -> tuple[Markup, Markup]:
    evidence = segment.get("evidence") or {}
    sampled = evidence.get("n_sampled")
    if not sampled:
        size = esc("not sampled")
    else:
        n_ev = evidence.get("n_ev")
        parts: list[Any] = [_num(sampled), " sampled, ", _num(n_ev), " with evidence"]
        if evidence.get("n_unread"):
            parts += [", ", _num(evidence["n_unread"]), " unread"]
        problems = segment.get("page_problems") or {}
        if problems:
            parts += [
                "; ",
                join(
                    [join([_num(n), " ", str(name)]) for name, n in sorted(problems.items())],
                    ", ",
                ),
            ]
        size = join(parts)
    bound = evidence.get("bound")
    if not isinstance(bound, dict):
        return size, esc("—")
    text = join(
        [
            str(bound.get("proportion", "")),
            " ",
            _num(bound.get("successes")),
            "/",
            _num(bound.get("n")),
            ": [",
            _fixed(bound.get("lower")),
            ", ",
            _fixed(bound.get("upper")),
            "] vs ",
            _fixed(bound.get("threshold")),
        ]
    )
    return size, text


def _coverage_cell(segment: Mapping[str, Any], found: SegmentTally | None) -> Markup:
    if found is not None and found.urls:
        return esc(f"{_pct(found.lastmod, found.urls)} ({found.lastmod:,} of {found.urls:,})")
    l0 = segment.get("l0") or {}
    return esc(_share(l0.get("coverage")))


def _segment_table(
    segments: list[dict[str, Any]], extra: list[str], tally: SiteTally, index: int
) -> Markup:
    head = el(
        "tr",
        el("th", "segment"),
        el("th", "URLs", class_="num"),
        el("th", "lastmod coverage"),
        el("th", "verdict"),
        el("th", "reason"),
        el("th", "sample"),
        el("th", "Wilson bound (95%)"),
    )
    rows = []
    for position, segment in enumerate(segments):
        name = str(segment.get("segment"))
        found = tally.segments.get(name)
        size, bound = _sample_cells(segment)
        rows.append(
            el(
                "tr",
                el("td", el("a", name, href=f"#{_anchor(index, position)}"), class_="url"),
                el("td", _num(segment.get("urls")), class_="num"),
                el("td", _coverage_cell(segment, found)),
                el("td", _badge(segment.get("verdict")), class_="verdict-cell"),
                el("td", segment.get("reason") or "—", class_="reason"),
                el("td", size),
                el("td", bound),
                data_segment=name,
                data_verdict=str(segment.get("verdict")),
            )
        )
    for name in extra:
        found = tally.segments[name]
        rows.append(
            el(
                "tr",
                el("td", name, class_="url"),
                el("td", _num(found.urls), class_="num"),
                el("td", _coverage_cell({}, found)),
                el("td", "not in the report", colspan=4, class_="muted"),
                data_segment=name,
            )
        )
    if not rows:
        return el("p", "No segment: no URL was found.", class_="note")
    return el("table", head, rows, class_="segments")


def _t_ref(segment: Mapping[str, Any]) -> int | None:
    return parse_iso_seconds(segment.get("t_ref"))


def _timeline(
    segments: list[dict[str, Any]], tally: SiteTally, plotted: set[str], index: int
) -> Markup:
    rows = []
    for segment in segments:
        name = str(segment.get("segment"))
        t_ref = _t_ref(segment)
        if name not in plotted or t_ref is None:
            continue
        rows.append(
            TimelineRow(
                name,
                _colour(segment.get("verdict")),
                t_ref,
                tally.segments[name].histogram.sorted_bins(),
            )
        )
    if not rows:
        return el("p", "No lastmod to plot.", class_="note")
    svg = timeline_svg(
        rows, salt=f"o{index}-timeline", label="lastmod age at sitemap fetch, per segment"
    )
    caption = (
        "One row per segment; each dot is the segment's lastmods of that age when its sitemap "
        "was fetched (t_ref, the server's clock), its area their share of the segment. "
        "Lastmods stamped with the sitemap's generation time make one big dot in the “≤1 min” "
        "column; honest lastmods spread to the left. The dotted line is 10 minutes before "
        "t_ref; “after” holds lastmods later than t_ref."
    )
    return el("figure", svg, el("figcaption", caption))


def _segment_detail(
    segment: Mapping[str, Any],
    tally: SiteTally,
    index: int,
    position: int,
    plotted: set[str],
) -> Markup:
    name = str(segment.get("segment"))
    found = tally.segments.get(name)
    parts: list[Any] = [
        el("h4", _badge(segment.get("verdict")), " ", name, id=_anchor(index, position)),
        el("p", segment.get("reason") or ""),
    ]
    facts = [
        ("URLs", _num(segment.get("urls"))),
        ("sitemap fetched (t_ref)", esc(_when(segment.get("t_ref")))),
        ("clock skew", join([_num(segment.get("clock_skew_seconds")), " s"])),
        ("news sitemap", esc("yes" if segment.get("news") else "no")),
        ("files", _generic(segment.get("sitemaps") or [])),
    ]
    if found is not None:
        facts.extend(
            [
                ("lastmod usable", esc(f"{found.lastmod:,}")),
                ("lastmod missing", esc(f"{found.missing:,}")),
                ("lastmod invalid", esc(f"{found.invalid:,}")),
            ]
        )
        if found.flags:
            facts.append(("lastmod flags", _generic(dict(sorted(found.flags.items())))))
    parts.append(el("table", [el("tr", el("th", k), el("td", v)) for k, v in facts], class_="kv"))
    if found is not None and name in plotted:
        histogram = found.histogram
        level = histogram.display_level()
        svg = histogram_svg(
            histogram.sorted_bins(level),
            level=level,
            t_ref=_t_ref(segment),
            colour=_colour(segment.get("verdict")),
            salt=f"o{index}-h{position}",
            label=f"lastmod histogram of {name}",
        )
        notes = [f"{histogram.total:,} lastmods in bins of one {level}"]
        notes.extend(
            f"{count:,} {flag} lastmod(s) not drawn" for flag, count in found.not_plotted.items()
        )
        notes.append("the dashed line is the sitemap's fetch time (t_ref)")
        parts.append(el("figure", svg, el("figcaption", "; ".join(notes) + ".")))
    elif found is not None and found.histogram.total:
        parts.append(el("p", "Histogram left out (see above).", class_="note"))
    else:
        parts.append(el("p", "No lastmod to plot.", class_="note"))
    l0 = segment.get("l0")
    if l0:
        parts.append(el("details", el("summary", "Lastmod metrics (L0)"), _generic(l0)))
    evidence = segment.get("evidence")
    if evidence:
        parts.append(el("details", el("summary", "Evidence for the verdict"), _generic(evidence)))
    samples = segment.get("samples") or []
    if samples:
        parts.append(
            el(
                "details",
                el("summary", f"Sampled pages ({len(samples):,})"),
                _samples_table(samples),
            )
        )
    return el("div", parts, class_="segment")


def _samples_table(samples: list[Any]) -> Markup:
    head = el(
        "tr",
        el("th", "page"),
        el("th", "stratum"),
        el("th", "lastmod"),
        el("th", "status"),
        el("th", "page's own date"),
        el("th", "Last-Modified"),
        el("th", "outcome"),
    )
    rows = []
    for sample in samples[:_MAX_ROWS]:
        if not isinstance(sample, dict):
            continue
        modified = sample.get("page_modified")
        own = (
            join([modified.get("raw"), " (", modified.get("source"), modified.get("field"), ")"])
            if isinstance(modified, dict)
            else esc("—")
        )
        rows.append(
            el(
                "tr",
                el("td", _link(sample.get("url")), class_="url"),
                el("td", sample.get("stratum") or "—", " (panel)" * bool(sample.get("in_panel"))),
                el("td", _when(sample.get("lastmod"))),
                el("td", _num(sample.get("status")), class_="num"),
                el("td", own),
                el("td", _when(sample.get("http_last_modified"))),
                el("td", sample.get("outcome") or "—"),
            )
        )
    return el("table", head, rows)


def _discovery(report: Mapping[str, Any], tally: SiteTally) -> Markup:
    stats = dict(report.get("sitemaps") or {})
    files = stats.pop("files", None) or []
    parts: list[Any] = []
    if files:
        titles = ("top-level sitemap", "found via", "status", "kind", "URLs", "children")
        head = el("tr", *(el("th", title) for title in titles))
        rows = [
            el(
                "tr",
                el("td", _link(f.get("url", ""))),
                el("td", str(f.get("found_via", ""))),
                el("td", str(f.get("status", "—")) + (" (304)" if f.get("not_modified") else "")),
                el("td", str(f.get("kind") or f.get("error") or "—")),
                el("td", _num(f.get("urls"))),
                el("td", _num(f.get("sitemaps"))),
            )
            for f in files
        ]
        parts.extend([el("h4", "Top-level sitemap files"), el("table", head, rows)])
    groups = (
        ("robots.txt", "robots/"),
        ("Guessed locations", "guess/"),
        ("Sitemap files", "sitemaps/"),
    )
    for title, prefix in groups:
        pairs = [(k.removeprefix(prefix), v) for k, v in stats.items() if k.startswith(prefix)]
        if pairs:
            parts.append(el("h4", title))
            parts.append(_kv_table(pairs))
    others = [(k, v) for k, v in stats.items() if not k.startswith(tuple(p for _, p in groups))]
    if others:
        parts.append(el("h4", "Other"))
        parts.append(_kv_table(others))
    if not parts:
        parts.append(el("p", "No discovery statistics in the report.", class_="note"))
    if tally.files:
        files = sorted(tally.files.items(), key=lambda kv: (-kv[1][2], kv[0]))
        head = el(
            "tr",
            el("th", "file"),
            el("th", "found via"),
            el("th", "depth", class_="num"),
            el("th", "URLs", class_="num"),
        )
        rows = [
            el(
                "tr",
                el("td", _link(name), class_="url"),
                el("td", via or "—"),
                el("td", _num(depth), class_="num"),
                el("td", _num(urls), class_="num"),
            )
            for name, (via, depth, urls) in files[:_MAX_FILES_SHOWN]
        ]
        parts.append(el("h4", f"Files that listed URLs ({len(tally.files):,})"))
        parts.append(el("table", head, rows))
        hidden = len(files) - _MAX_FILES_SHOWN
        if hidden > 0 or tally.other_files_urls:
            parts.append(
                el(
                    "p",
                    f"{max(hidden, 0):,} more files, and {tally.other_files_urls:,} URLs from "
                    "files past the count limit, are not listed.",
                    class_="note",
                )
            )
    return join(parts)


def _coverage(report: Mapping[str, Any]) -> Markup:
    coverage = report.get("coverage")
    if not coverage:
        return el(
            "p",
            "Link-following not run: how many URLs only the sitemaps list, only the links "
            "reach, or both, is not known for this crawl (-a links=full, or sample=on).",
            class_="note",
        )
    urls = coverage.get("urls") or {}
    stopped = coverage.get("stopped_by") or []
    summary = (
        f"{urls.get('both', 0):,} URLs in both, {urls.get('sitemap_only', 0):,} only in the "
        f"sitemaps, {urls.get('link_only', 0):,} only reached by links "
        f"(links: {coverage.get('mode')}, {coverage.get('pages_fetched', 0):,} pages fetched; "
        + (f"stopped by {', '.join(map(str, stopped))})." if stopped else "complete).")
    )
    return join([el("p", summary), _generic(coverage)])


def _errors(report: Mapping[str, Any]) -> Markup:
    errors = report.get("errors") or {}
    limits = report.get("limits") or {}
    parts: list[Any] = []
    if errors:
        parts.extend([el("h4", "Faults in sitemap bodies"), _kv_table(errors.items())])
    stats = report.get("sitemaps") or {}
    failed = [(k, v) for k, v in stats.items() if k.startswith("sitemaps/failed_count/")]
    if failed:
        parts.extend(
            [
                el("h4", "Sitemaps that yielded nothing"),
                _kv_table((k.removeprefix("sitemaps/failed_count/"), v) for k, v in failed),
            ]
        )
    if limits:
        parts.extend([el("h4", "Limits hit"), _kv_table(limits.items())])
    faults = report.get("faults") or []
    if faults:
        head = el("tr", el("th", "fault"), el("th", "URL"), el("th", "what happened"))
        rows = [
            el(
                "tr",
                el("td", str(f.get("code", ""))),
                el("td", _link(f.get("url", ""))),
                el("td", str(f.get("message", ""))),
            )
            for f in faults
            if isinstance(f, dict)
        ]
        parts.extend([el("h4", "Each fault, where"), el("table", head, *rows)])
    if not parts:
        parts.append(el("p", "No fault met and no limit hit.", class_="note"))
    return join(parts)


def _incremental(report: Mapping[str, Any], tally: SiteTally) -> Markup:
    incremental = report.get("incremental")
    parts: list[Any] = []
    if incremental:
        parts.append(_generic(incremental))
    if tally.refetch:
        head = el("tr", el("th", "decision"), el("th", "reason"), el("th", "URLs", class_="num"))
        rows = [
            el(
                "tr",
                el("td", "refetch" if refetch else "skip"),
                el("td", reason or "—"),
                el("td", _num(count), class_="num"),
            )
            for (refetch, reason), count in sorted(
                tally.refetch.items(), key=lambda kv: (not kv[0][0], -kv[1], kv[0][1])
            )
        ]
        title = "Refetch decisions in the URL items, by reason"
        parts.extend([el("h4", title), el("table", head, rows)])
    if not parts:
        parts.append(el("p", "Not an incremental run.", class_="note"))
    return join(parts)
