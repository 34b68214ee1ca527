"""State across runs, the verdict: a segment's cross-run score, pooled within its site, saved.

This run's observations (lastmod moved or not against content changed or not, from the
pages we fetched twice) are added to each segment's decayed counts; misses a lagged sitemap
reported late are settled; a segment whose pages change too rarely is scored with its
site's other PROVISIONAL and TRUSTED segments; the verdict combines the run's own (L0/L1)
with that history (``sitemapcrawl.verify.crossrun.combine``) and is saved.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.segmentrun import utc
from sitemapcrawl.incremental.store import SegmentState
from sitemapcrawl.sitemaps.dates import format_utc, parse_lastmod
from sitemapcrawl.verify.crossrun import DECAY, CrossRun, combine, generation_refuted
from sitemapcrawl.verify.refetch.moves import reports_within
from sitemapcrawl.verify.refetch.quiet import QUIET_TALLY, STOPPED, QuietStretch, stopped_after
from sitemapcrawl.verify.refetch.rates import page_dates_verified

if TYPE_CHECKING:
    from collections.abc import Callable

    from sitemapcrawl.incremental.standing import RunFacts, SegmentStandings

__all__ = ["GENERATION_CONFIRM", "SegmentJudgement"]

#: Consecutive fetches on which a generation-time cluster must move to be confirmed
#: (docs/verification.md, "L0: the dispersion test").
GENERATION_CONFIRM = 3
#: Share of a segment's lastmods in one 10-minute window that makes them one stamp.
STAMP_SHARE = 0.9
#: Runs a miss waits for a lagged sitemap to report it before it stands.
LAG_RUNS = 2
#: A segment's pages are refetched conditionally once their ETag or Last-Modified changed
#: with their content this many times (decayed), and never stayed put while it changed.
VALIDATOR_MIN_HITS = 10
_PAGE_CHECKS = ("hit", "miss", "false", "still")
#: A static GENERATION_TIME's own evidence, dropped when the cross-run score refutes it.
_GENERATION_KEYS = ("basis", "confirmed", "reason_l0", "bound", "without_generation")


def _decayed(kept: list[float] | None, checks: Counter[str], kinds: tuple[str, ...]) -> list[float]:
    """Counts kept across runs (decayed by ``DECAY`` per run) plus this run's, by kind."""
    old = kept or [0.0] * len(kinds)
    return [round(DECAY * float(o) + checks[k], 3) for o, k in zip(old, kinds, strict=True)]


class SegmentJudgement:
    """Each segment's verdict across runs, with this run's observations.

    ``flush`` writes the run's URL rows so far (before they are counted); ``clock`` is the
    run's server clock so far."""

    def __init__(
        self,
        run: RunFacts,
        standings: SegmentStandings,
        *,
        flush: Callable[[], None],
        clock: Callable[[], dt.datetime],
    ) -> None:
        self._run = run
        self._standings = standings
        self._flush = flush
        self._clock = clock
        self._unchanged: dict[str, int] | None = None
        self.late: dict[str, tuple[int, int]] = {}
        #: this run's L2 counts per segment, all updated at the first verdict (pooling)
        self._l2_now: dict[str, CrossRun] | None = None
        self._moves: dict[str, int] | None = None

    def judge(
        self, segment: str, static_name: str, static_reason: str, evidence: dict[str, Any]
    ) -> tuple[str, str, dict[str, Any]]:
        """Combine this run's L0/L1 verdict with the segment's history and save it."""
        run, standings = self._run, self._standings
        standing = standings.segments.get(segment)
        l2 = self.updated_l2(segment)
        pool, pool_segments = self._pool(segment)
        centre = (evidence.get("l0") or {}).get("cluster_centre")
        centre = str(centre) if centre is not None else None
        moves = standings.cluster_moves(segment, centre)
        if moves is None:
            moves = 1 if centre is not None else 0
        other = evidence.get("without_generation")
        if static_name == "GENERATION_TIME" and other and generation_refuted(l2):
            # lastmods that move together with content are edits made together, not a stamp
            m = l2.metrics()
            static_name = other["verdict"]
            static_reason = (
                f"{other['reason'][:-1]}; the sitemap looks like one stamp, but across runs "
                f"{m['tp']:.0f} of {m['lastmod_events']:.0f} lastmod moves were content "
                f"changes (precision {m['precision']:.2f}): not the generation time."
            )
            evidence = {
                **{k: v for k, v in evidence.items() if k not in _GENERATION_KEYS},
                **other["evidence"],
            }
        if static_name == "GENERATION_TIME" and centre is not None and moves >= GENERATION_CONFIRM:
            # a generation-time cluster is confirmed when it moves on 3 fetches in a row
            l0_part = evidence.get("reason_l0") or static_reason[:-1]
            static_reason = (
                f"{l0_part}; confirmed: the cluster moved on {moves} consecutive fetches."
            )
            evidence = {**evidence, "confirmed": True}
        if evidence.get("n_sampled"):
            l2.extra["sampled_at"] = format_utc(self._clock().replace(microsecond=0))
            l2.extra["unsampled_runs"] = 0
        elif standing is not None and "unsampled_runs" in standing.counts:
            l2.extra["unsampled_runs"] = int(standing.counts["unsampled_runs"]) + 1
        l2.extra["cluster_centre"] = centre
        l2.extra["cluster_moves"] = moves
        quiet = self._quiet(segment, standing, l2)
        name, reason, extra = combine(
            static_name,
            static_reason,
            standing.verdict if standing is not None else None,
            l2,
            sampled=bool(evidence.get("n_sampled")),
            stamp=(evidence.get("l0") or {}).get("window_share", 0.0) >= STAMP_SHARE,
            pool=pool,
            pool_segments=pool_segments,
        )
        signals = self._keep_signals(segment, l2, name, static_name, evidence)
        since_run = (
            standing.verdict_since_run
            if standing is not None and standing.verdict == name
            else run.run_id
        )
        new = SegmentState(segment, name, since_run, l2.as_dict())
        run.store.save_segment(run.origin, run.run_id, new, reason, {**evidence, **extra})
        extra = {**extra, "verdict_since_run": since_run, "cluster_moves": moves, **signals}
        if quiet:
            extra["quiet"] = quiet
        late, waiting = self.late.get(segment, (0, 0))[0], standings.by_segment[segment].lag_pending
        if late or waiting:
            extra["late_reports"] = {"settled": late, "waiting": waiting}
        return name, reason, extra

    def _run_moves(self) -> dict[str, int]:
        """Lastmod moves per segment on this run, of the segments it decided on (an
        incremental run: a run without ``since`` makes no decision and moves nothing),
        whatever their verdicts: a generation stamp's moves show the site's build runs."""
        if self._moves is None:
            self._moves = {
                name: seg.lastmod_moves
                for name, seg in self._standings.by_segment.items()
                if seg.decisions
            }
        return self._moves

    def _quiet(
        self, segment: str, standing: SegmentState | None, l2: CrossRun
    ) -> dict[str, Any] | None:
        """The quiet-stretch detector (``verify.refetch.quiet``) after this run, kept in
        the segment's counts, for the segment and for its site's segments together;
        an alarm (once per quiet stretch) makes the next run re-sample the segment and audit
        it (``CrawlState.sample_due``, ``RefetchDecisions``). Returns what the report says
        of it, if anything."""
        moves = self._run_moves()
        if standing is None or segment not in moves:
            return None
        standings, counts = self._standings, standing.counts
        site = standings.site_of(segment)
        # the site's every segment: a sitemap that stops being regenerated stops every
        # segment's moves, and a record kept only on runs with a TRUSTED segment would
        # count the runs before trust as quiet ones, making the stretch look ordinary
        site_moves = sum(moved for name, moved in moves.items() if standings.site_of(name) == site)
        own = QuietStretch.from_counts(counts.get("quiet")).after(moves[segment])
        pooled = QuietStretch.from_counts(counts.get("site_quiet")).after(site_moves)
        # the alarm this run started with was acted on; a move ends the stretch
        acted = bool(counts.get("quiet_alarm") or counts.get("quiet_acted"))
        acted = acted and bool(own.stretch or pooled.stretch)
        alarm = (own.alarm() or pooled.alarm()) and not acted
        # the audited misses and pages of the stretch: the counts now against those before
        # it (kept from its first run), decayed alike; a miss settled late counts too
        base = l2.extra.get(QUIET_TALLY) if own.stretch > 1 else None
        if not base:
            base = [float(counts.get("fn", 0.0)), float(counts.get("tn", 0.0))]
        l2.extra[QUIET_TALLY] = base
        decayed = DECAY ** max(own.stretch, 1)
        found = l2.fn - base[0] * decayed
        stopped = stopped_after(
            l2.extra.get(STOPPED),
            alarmed=(alarm or acted) and standing.verdict == "TRUSTED",
            tally=(found, found + l2.tn - base[1] * decayed),
            stretch=own.stretch,
        )
        if stopped:
            l2.extra[STOPPED] = stopped
        else:
            l2.extra.pop(STOPPED, None)
        l2.extra.update(
            quiet=own.as_counts(),
            site_quiet=pooled.as_counts(),
            quiet_acted=acted,
            quiet_alarm=alarm,
            quiet_missed=round(own.expected_missed(), 3),
        )
        if not (alarm or own.stretch):
            return None
        return {
            "runs_without_move": own.stretch,
            "site_runs_without_move": pooled.stretch,
            "alarm": alarm,
            "expected_missed": round(own.expected_missed(), 2),
        }

    def _keep_signals(
        self,
        segment: str,
        l2: CrossRun,
        name: str,
        static_name: str,
        evidence: dict[str, Any],
    ) -> dict[str, Any]:
        """Keep with the segment's counts what later runs use besides the verdict: the
        pages' UTC offset, a TZ_SHIFT's shift, whether its pages' own dates and its
        validators proved honest, whether a PARTIAL segment's dated subset agreed. Returns
        the report's view of the page-date and validator checks."""
        seg = self._standings.by_segment[segment]
        if seg.zone_misses:
            # the audit found a change the pages' zone hid: the sitemap writes its dates
            # in another zone (``PageObservations``), read in any zone from now on
            l2.extra["utc_offset_refuted"] = 1
            l2.extra.pop("utc_offset_s", None)
        elif evidence.get("utc_offset_s") is not None and not l2.extra.get("utc_offset_refuted"):
            l2.extra["utc_offset_s"] = evidence["utc_offset_s"]
        if name == "TZ_SHIFT":
            k = evidence.get("k")
            if k is not None:
                l2.extra["tz_shift_s"] = int(k) * 3600
        else:
            l2.extra.pop("tz_shift_s", None)
        page_dates = _decayed(l2.extra.get("page_dates"), seg.page_checks, _PAGE_CHECKS)
        l2.extra["page_dates"] = page_dates
        l2.extra["page_dates_verified"] = int(page_dates_verified(*page_dates))
        validators = _decayed(l2.extra.get("validators"), seg.validator_checks, ("hit", "miss"))
        l2.extra["validators"] = validators
        l2.extra["validators_verified"] = int(
            validators[0] >= VALIDATOR_MIN_HITS and validators[1] < 0.5
        )
        l2.extra["subset_trusted"] = int(
            static_name == "PARTIAL" and evidence.get("subset_verdict") == "PROVISIONAL"
        )
        return {
            "page_dates": {
                "hits": page_dates[0],
                "misses": page_dates[1],
                "false_moves": page_dates[2],
                "still": page_dates[3],
                "verified": bool(l2.extra["page_dates_verified"]),
            },
            "validators": {
                "hits": validators[0],
                "misses": validators[1],
                "verified": bool(l2.extra["validators_verified"]),
            },
        }

    def settle_misses(self) -> dict[str, tuple[int, int]]:
        """Misses of earlier runs, settled now. A lastmod that moved into the window the
        change happened in was late, not wrong (a lagged sitemap): the miss becomes a true
        positive. One that moved past the window reports a later change that hides
        whether the earlier one would have been reported: a counted miss stays counted,
        one waiting for the sitemap is dropped. One that moved to an earlier time, or not
        at all within ``LAG_RUNS`` runs, is a miss. Per segment: (late reports, misses
        to add)."""
        settled: list[str] = []
        result: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        for url, segment, raw, since, at, run, counted, moved in self._run.fetches.open_misses(
            self._run.origin, self._run.run_id
        ):
            lastmod = parse_lastmod(raw) if raw and moved else None
            start, end = utc(since), utc(at)
            shift = self._standings.shift(segment) or 0.0
            if lastmod is not None and lastmod.value is not None and start and end:
                offset = self._standings.utc_offset(segment)
                if reports_within(lastmod, (start, end), shift, offset):
                    result[segment][0] += 1
                    self._standings.by_segment[segment].late(end, lastmod.value)
                    result[segment][1] -= int(counted)
                elif not reports_within(
                    lastmod, (dt.datetime.min.replace(tzinfo=dt.UTC), end), shift, offset
                ):
                    pass  # superseded by a later change
                else:
                    result[segment][1] += int(not counted)
            elif moved or self._run.run_id - run >= LAG_RUNS:
                result[segment][1] += int(not counted)
            else:
                continue
            settled.append(url)
        if settled:
            self._run.fetches.settle_misses(self._run.origin, settled)
        return {segment: (late, fn) for segment, (late, fn) in result.items()}

    def updated_l2(self, segment: str) -> CrossRun:
        """``segment``'s L2 counts with this run added (every segment's, computed at once
        on the first call, so that a verdict can read its site's pooled counts)."""
        if self._l2_now is None:
            self._flush()
            self._unchanged = self._run.store.unchanged_counts(self._run.origin, self._run.run_id)
            self.late = self.settle_misses()
            self._l2_now = {}
            for name in list(self._standings.by_segment):
                self._l2_now[name] = self._with_this_run(name)
        found = self._l2_now.get(segment)
        if found is None:  # a segment first seen after the others were judged
            found = self._l2_now[segment] = self._with_this_run(segment)
        return found

    def _with_this_run(self, segment: str) -> CrossRun:
        """The segment's stored L2 counts, decayed, plus this run's observations and the
        late reports and misses settled on it."""
        standing = self._standings.segments.get(segment)
        l2 = CrossRun.from_dict(standing.counts if standing is not None else {})
        l2.add_run(
            self._standings.by_segment[segment].observations,
            (self._unchanged or {}).get(segment, 0),
        )
        late, misses = self.late.get(segment, (0, 0))
        if late or misses:
            l2.tp += late
            l2.fn = max(0.0, l2.fn + misses)
            l2.extra["late_reports"] = int(l2.extra.get("late_reports", 0)) + late
        seg = self._standings.by_segment[segment]
        moves = DECAY * float(l2.extra.get("late_moves", 0.0)) + seg.late_moves
        l2.extra["late_moves"] = round(moves, 3)
        if seg.late_lag_s > 0:
            l2.extra["lag_s"] = round(max(float(l2.extra.get("lag_s", 0.0)), seg.late_lag_s))
        if seg.noise is not None:  # this run's noise probes (verify.noise): differed, fetched
            l2.extra["noise"] = list(seg.noise)
        else:
            l2.extra.pop("noise", None)
        return l2

    def _pool(self, segment: str) -> tuple[CrossRun, int]:
        """The summed L2 counts of ``segment`` and of its site's other segments whose
        standing verdict is PROVISIONAL or TRUSTED (written by the same site software; a
        red or over-reporting segment's counts would flatter the recall), and how many
        they are (crossrun "Pooling")."""
        assert self._l2_now is not None
        pool = CrossRun()
        members = 0
        for name, l2 in self._l2_now.items():
            if not self._standings.pools_with(segment, name):
                continue
            members += 1
            pool.tp += l2.tp
            pool.fp += l2.fp
            pool.fn += l2.fn
            pool.tn += l2.tn
            pool.seen += l2.audited_runs
            pool.n_unch += l2.n_unch
            pool.runs = max(pool.runs, l2.runs)
        return pool, members
