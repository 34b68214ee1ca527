"""State across runs, one run's bookkeeping per segment, and the helpers its parts share."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import parse_feed_date, parse_lastmod
from sitemapcrawl.verify.crossrun import CrossRun, Observation
from sitemapcrawl.verify.refetch.moves import reports_within

if TYPE_CHECKING:
    from sitemapcrawl.incremental.store import UrlState

__all__ = ["SegmentRun", "audited_url_runs", "audits", "captured", "page_moment", "utc"]


@dataclass(slots=True)
class SegmentRun:
    """This run's incremental bookkeeping for one segment."""

    decisions: Counter[str] = field(default_factory=Counter)
    refetch: int = 0
    observations: list[Observation] = field(default_factory=list)
    lastmod_after_since: int = 0
    #: URLs whose lastmod moved since our previous reading, late reports included, whatever
    #: the segment's verdict (the quiet-stretch detector's moves)
    lastmod_moves: int = 0
    undated: int = 0
    urls: int = 0
    lag_pending: int = 0
    #: How the pages' own dates behaved on re-fetch: hit, miss, false, still.
    page_checks: Counter[str] = field(default_factory=Counter)
    #: Pages whose content changed between two fetches: their ETag / Last-Modified
    #: changed too (hit) or not (miss: a conditional GET would have hidden the change).
    validator_checks: Counter[str] = field(default_factory=Counter)
    #: Pages fetched on this run, fetched before, whose change the rates predict (an
    #: untrusted segment: ``verify.refetch.rates.wave``): how many, how many changed, and the
    #: sum of their change probabilities; pages the wave fetched.
    wave_pages: int = 0
    wave_changed: int = 0
    wave_expected: float = 0.0
    wave_fetched: int = 0
    #: Pages fetched in the co-change wave: they changed together with a page found
    #: changed on this run, on earlier runs (``verify.refetch.learn.co_changed``).
    cochange_fetched: int = 0
    #: Lastmod moves to a time our last fetch already covered (a lagged sitemap catching
    #: up), and the longest lag they show: our fetch that had the change minus the value.
    late_moves: int = 0
    late_lag_s: float = 0.0
    #: Changes the audit found where the lastmod's date, read in the pages' zone, ended
    #: before our last fetch but, in some zone, still contained it: the sitemap does not
    #: write its dates in the pages' zone.
    zone_misses: int = 0
    #: Pages whose content changed only by edits made the same way on many pages of the
    #: run (a template edit: ``verify.commonmode``): no change of theirs.
    template_edits: int = 0
    #: The site's pages fetched again at once on this run that differed, and how many were
    #: (``verify.noise``); the changed pages it left without content evidence.
    noise: tuple[int, int] | None = None
    volatile_pages: int = 0

    def late(self, fetched: dt.datetime, value: dt.datetime) -> None:
        """Count a late report of a change our fetch at ``fetched`` already had."""
        self.late_moves += 1
        self.late_lag_s = max(self.late_lag_s, (fetched - value).total_seconds())

    def summary(self, audit_share: float | None) -> dict[str, Any]:
        """The segment's part of ``CrawlState.incremental_summary``; ``audit_share``: the
        share of its unchanged URLs audited (TRUSTED: by need), when it has its own."""
        summary: dict[str, Any] = {
            "urls": self.urls,
            "refetch": self.refetch,
            "lastmod_after_since": self.lastmod_after_since,
            "undated": self.undated,
            "by_reason": dict(sorted(self.decisions.items())),
        }
        if audit_share is not None:
            summary["audit_share"] = round(audit_share, 4)
        if self.wave_pages:  # pages fetched with what their rates predicted, and the wave
            summary["wave"] = {
                "pages": self.wave_pages,
                "changed": self.wave_changed,
                "expected": round(self.wave_expected, 3),
                "refetched": self.wave_fetched,
            }
        if self.cochange_fetched:
            summary["cochange"] = self.cochange_fetched
        if self.template_edits:
            summary["template_edits"] = self.template_edits
        if self.noise is not None:  # pages fetched again at once: differed, fetched
            summary["noise"] = {
                "differed": self.noise[0],
                "probed": self.noise[1],
                "pages_without_evidence": self.volatile_pages,
            }
        return summary


def utc(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    parsed = parse_feed_date(text)
    return parsed.value if parsed is not None else None


def captured(
    prev: UrlState, shift: float = 0.0, utc_offset: float | None = None
) -> tuple[dt.datetime, dt.datetime] | None:
    """The window between our last two fetches of a URL when the later one found it
    changed and its lastmod had not reported that change yet (a lastmod moving into it
    later reports that change, already fetched). When the lastmod we saw at that fetch
    already stood inside the window, it had reported the change: a later value, even one
    inside the window, is news of another edit (a static site deploys a source commit
    made before our fetch after it), not a late report; unless the page we fetched then
    declared a modification time of its own after that lastmod: it had the edits up to
    that time, so a later value up to it is a late report (a sitemap rebuilt on a cycle)."""
    if not prev.intervals or not prev.intervals[-1][1]:
        return None
    end = utc(prev.fetched_at)
    if end is None:
        return None
    window = end - dt.timedelta(seconds=prev.intervals[-1][0]), end
    seen = parse_lastmod(prev.fetched_lastmod_raw) if prev.fetched_lastmod_raw else None
    if seen is not None and reports_within(seen, window, shift, utc_offset):
        declared = page_moment(prev.page_modified)
        if declared is None or not reports_within(seen, (window[0], declared), shift, utc_offset):
            return None
        # the page's own time, to the second it names (a lastmod of that second is in it)
        return window[0], min(end, declared + dt.timedelta(seconds=1))
    return window


def page_moment(text: str | None) -> dt.datetime | None:
    """A page's own modification date as an instant: a time with its zone, else None."""
    parsed = parse_lastmod(text) if text else None
    if (
        parsed is None
        or parsed.value is None
        or parsed.precision in ("day", "month", "year")
        or "assumed_utc" in parsed.flags
    ):
        return None
    return parsed.value


def audits(counts: dict[str, Any]) -> float:
    """A segment's audited ΔL = 0 pages (decayed), from its stored L2 counts."""
    return float(counts.get("fn", 0.0)) + float(counts.get("tn", 0.0))


def unsampled_runs(counts: dict[str, Any]) -> int:
    """The runs of a segment since its last L1 sample (0: sampled on its last run); a
    large number when its stored counts predate the count (they are sampled when due by
    days alone)."""
    value = counts.get("unsampled_runs")
    return 1 << 30 if value is None else int(value)


def audited_url_runs(counts: dict[str, Any]) -> float:
    """The ΔL = 0 URL-runs a segment's audits saw (decayed), from its stored L2 counts:
    what its miss rate is counted over (``CrossRun.audited_runs``)."""
    return CrossRun.from_dict(counts).audited_runs
