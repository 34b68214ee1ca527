"""State across runs, refetch decisions: whether an incremental run refetches one URL, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.segmentrun import audited_url_runs, audits, captured, utc
from sitemapcrawl.verify.crossrun import DECAY
from sitemapcrawl.verify.refetch.audits import audit_draw, trusted_audit_share
from sitemapcrawl.verify.refetch.decide import (
    RunWindow,
    SegmentStanding,
    UrlHistory,
    decide,
    uses_lastmod,
)
from sitemapcrawl.verify.refetch.moves import late_report
from sitemapcrawl.verify.refetch.policy import Decision
from sitemapcrawl.verify.refetch.quiet import quiet_audit_size
from sitemapcrawl.verify.refetch.rates import change_probability, change_rate, rate_history

if TYPE_CHECKING:
    import datetime as dt

    from sitemapcrawl.incremental.standing import RunFacts, SegmentStandings
    from sitemapcrawl.incremental.store import SegmentState, UrlState
    from sitemapcrawl.items import SitemapUrlItem

__all__ = ["RefetchDecisions"]


class RefetchDecisions:
    """The refetch decision of each URL of an incremental run (``sitemapcrawl.verify.refetch``),
    with its segment's standing verdict, change-rate prior and audit share.

    ``since_last``: the run's cut is the previous run's; ``pages``: the crawl fetches the
    pages itself (untrusted segments are probed); ``first_audit``:
    ``SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT``."""

    def __init__(
        self,
        run: RunFacts,
        standings: SegmentStandings,
        *,
        since_last: bool,
        pages: bool,
        first_audit: int,
    ) -> None:
        self._run = run
        self._standings = standings
        self._since_last = since_last
        self._pages = pages
        self._first_audit = first_audit
        self._priors: dict[str, tuple[int, float]] = {}
        self._page_priors: dict[str, tuple[int, float]] = {}
        #: the audit share of each segment that has its own (TRUSTED: by need)
        self.audit_shares: dict[str, float] = {}
        self._probe_shares: dict[str, float | None] = {}

    def decide(
        self,
        item: SitemapUrlItem,
        lastmod: Any,
        prev: UrlState | None,
        now: dt.datetime,
        cut: dt.datetime | None,
    ) -> Decision:
        standing = self._standings.segments.get(item.segment)
        verdict = standing.verdict if standing is not None else None
        if cut is None:  # since=last and no previous run: all new
            return Decision(True, "new")
        shift, offset = (
            self._standings.shift(item.segment),
            self._standings.utc_offset(item.segment),
        )
        history = None
        if prev is not None:
            history = UrlHistory(
                prev.lastmod_raw,
                last_refetch=utc(prev.last_refetch_at),
                last_fetch=utc(prev.fetched_at),
                intervals=prev.intervals,
                captured=captured(prev, shift or 0.0, offset),
                page_history=self._page_history(item.segment, standing, prev),
                learned=self._run.fetches.learning.record(self._run.origin, item.url),
            )
        segment = SegmentStanding(
            verdict,
            subset_trusted=bool(standing and standing.counts.get("subset_trusted")),
            prior=self._prior(item.segment),
            shift=shift,
            audit_share=self._audit_share(item.segment, standing),
            utc_offset=offset,
            probe_share=self._probe_share(item.segment, standing),
        )
        run = RunWindow(cut, self._since_last, now, self._run.policy)
        draw = audit_draw(self._run.seed, self._run.run_id, item.url)
        if (
            history is not None
            and history.captured is not None
            and history.last_fetch is not None
            and lastmod is not None
            and lastmod.value is not None
            and history.previous_raw not in (None, lastmod.raw)
            and late_report(lastmod, history.captured, shift or 0.0, offset)
        ):
            # a lagged sitemap catching up: how far behind our fetch that had it
            self._standings.by_segment[item.segment].late(history.last_fetch, lastmod.value)
        return decide(lastmod, history, segment, run, draw)

    def _prior(self, segment: str) -> tuple[int, float]:
        """The segment's pooled change-rate prior (cached)."""
        prior = self._priors.get(segment)
        if prior is None:
            prior = self._priors[segment] = self._run.fetches.segment_rate(
                self._run.origin, segment
            )
        return prior

    def untrusted(self, segment: str) -> bool:
        """Whether the segment's lastmod is not used on this run (``uses_lastmod``): its
        URLs follow their change rates."""
        standing = self._standings.segments.get(segment)
        if standing is None:
            return True
        return not uses_lastmod(
            standing.verdict,
            subset_trusted=bool(standing.counts.get("subset_trusted")),
            shift_known=self._standings.shift(segment) is not None,
        )

    def change_probability(self, segment: str, prev: UrlState, seconds: float) -> float:
        """P(the page changed) over ``seconds`` since our previous fetch (``prev``), by
        the rate its decision used (``rate_history``)."""
        standing = self._standings.segments.get(segment)
        intervals, prior = rate_history(
            prev.intervals,
            self._prior(segment),
            self._page_history(segment, standing, prev),
            self._run.policy,
        )
        rate = change_rate(intervals, prior[0], prior[1], self._run.policy)
        return change_probability(rate, seconds)

    def _probe_share(self, segment: str, standing: SegmentState | None) -> float | None:
        """An untrusted segment's probe share (``Policy.probe_min`` of its URLs) when the
        crawl fetches the pages itself; None otherwise. Cached."""
        if segment not in self._probe_shares:
            share = None
            if self._pages and self._run.policy.probe_min > 0 and self.untrusted(segment):
                known = self._run.store.segment_size(self._run.origin, segment)
                share = min(1.0, self._run.policy.probe_min / max(known, 1))
            self._probe_shares[segment] = share
        return self._probe_shares[segment]

    def _page_history(
        self, segment: str, standing: SegmentState | None, prev: UrlState | None
    ) -> tuple[list[tuple[float, bool]], tuple[int, float]] | None:
        """The URL's change history from its page's own dates, with the segment's pooled
        prior, when the segment's page dates are verified (see ``page_dates_verified``)."""
        if (
            prev is None
            or not prev.page_intervals
            or standing is None
            or not standing.counts.get("page_dates_verified")
        ):
            return None
        prior = self._page_priors.get(segment)
        if prior is None:
            prior = self._page_priors[segment] = self._run.fetches.segment_rate(
                self._run.origin, segment, page_dates=True
            )
        return prev.page_intervals, prior

    def _audit_share(self, segment: str, standing: SegmentState | None) -> float | None:
        """The segment's audit share when it is not the policy's: a TRUSTED segment's,
        sized by need from its counts; a PROVISIONAL one never audited yet audits
        ``SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT`` URLs at once (a lastmod that stays put
        while pages change, which its pages' own dates can hide, shows on the first run
        that can see it). Cached."""
        if standing is None or standing.verdict not in ("TRUSTED", "PROVISIONAL"):
            return None
        share = self.audit_shares.get(segment)
        if share is None:
            counts = standing.counts
            if standing.verdict == "TRUSTED":
                share = trusted_audit_share(
                    float(counts.get("tp", 0.0)),
                    float(counts.get("n_unch", 0.0)),
                    DECAY,
                    self._run.policy,
                    audits=audited_url_runs(counts),
                    # the first run has nothing to compare with: no ΔL = 0 count
                    runs=max(int(counts.get("runs", 0)) - 1, 1),
                    pool=self._standings.standing_pool(segment),
                )
                if counts.get("quiet_alarm"):  # one audit sized to see the missed changes
                    known = max(self._run.store.segment_size(self._run.origin, segment), 1)
                    size = quiet_audit_size(known, float(counts.get("quiet_missed") or 0.0))
                    share = max(share, min(1.0, size / known))
            elif self._first_audit and audits(counts) < 1:
                known = self._run.store.segment_size(self._run.origin, segment)
                share = min(1.0, self._first_audit / max(known, 1))
                share = max(self._run.policy.audit_provisional, share)
            else:
                share = self._run.policy.audit_provisional
            self.audit_shares[segment] = share
        return share
