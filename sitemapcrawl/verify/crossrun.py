"""Lastmod verification: L2, the cross-run score, and the verdict over runs.

The verdict combines the score with L0/L1 and the segment's past (docs/verification.md,
"Cross-run score", "Cross-run verdict").

Pure Python, standard library only. Over runs, for every page we fetched twice, two facts
are compared: ΔL, "lastmod says it may have changed since our previous fetch" (its interval's
upper bound is later than that fetch, or the raw value differs), and ΔC, "the page's masked
main-content fingerprint changed". Pages with ΔL = 1 are true or false positives; pages with
ΔL = 0 picked at random (the sample, the panel, the audit) estimate the miss rate, the only
way to see a lastmod that does not move when the page does. Counts decay by half every
``HALF_LIFE_RUNS`` runs so that a site that changes its CMS is re-learnt.

Recall is TP / (TP + missed changes), the missed changes being the audited misses (FN,
counted) plus the miss rate per URL-run times the ΔL = 0 URL-runs that were not audited:
its lower bound is TP / (TP + FN + m_hi·(N_unch - seen)), m_hi the one-sided Wilson upper
bound of FN / seen, ``seen`` the URL-runs the audits looked at (a clean audit of a page
last fetched j runs ago saw j of them, a miss one; a finite-population reading: a segment
audited whole has no unseen misses).

Thresholds (the simulated-web benchmark is where to tune them):

========================  =======  ===========================================================
``HALF_LIFE_RUNS``        30       runs for the counts to decay by half
``Z_L2``                  1.645    one-sided 95 % Wilson bound on the miss rate
``TRUSTED_RECALL``        0.8      R_lo, the recall lower bound, for TRUSTED
``MIN_TP``                10       true positives for TRUSTED
``PROMOTE_RUNS``          2        runs in a row over the bar before TRUSTED
``STALE_MISSES``          3        audited misses with R̂ < ``STALE_RECALL``: STALE
``STALE_RECALL``          0.8
``STALE_RECALL_UPPER``    0.85     R_hi below it: STALE from one miss, the bound says so
``OVER_PRECISION``        0.5      OVER_REPORTING: R_lo ≥ 0.8 but P < 0.5 …
``OVER_EVENTS``           20       … over ≥ 20 ΔL events
``GEN_EVENTS``            30       GENERATION_TIME by lift < ``GEN_LIFT`` over ≥ 30 ΔL events
``GEN_LIFT``              1.5      a lift "about 1": lastmod moves say nothing
``RECOVER_RUNS``          2        clean runs before a red verdict is lifted
``STAMP_AUDITS``          60       audited pages before a one-stamp lastmod over-reports
                                   (59 audits see a 5 % miss rate with 95 % power)
``POOL_OWN_AUDITS``       20       a segment's own audited pages, none a miss, before it
                                   may be trusted on its site's pooled score
``LATE_MOVES``            3        late reports (decayed) before the reason names the lag
========================  =======  ===========================================================

**Pooling** (docs/verification.md, "Pooling across segments"). A segment whose pages
change rarely sees too few changes in a few runs to bound its own recall, however honest
its lastmod. The segments of one site that are PROVISIONAL or TRUSTED are written by the
same site software, so their counts are also summed: when the pooled recall lower bound
passes the bar, a segment whose own L1 sample agrees and whose own audit has seen
``POOL_OWN_AUDITS`` pages without a single miss is promoted as if the score were its own.
A miss of its own, or a pool that includes misses, is never hidden: the demotion rules read
the segment's own counts, and a pool's misses raise the pooled bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sitemapcrawl.verify.intervals import wilson
from sitemapcrawl.verify.noise import VOLATILE
from sitemapcrawl.verify.refetch.quiet import STOPPED, stopped_reason

__all__ = [
    "RED",
    "TRUSTING",
    "CrossRun",
    "Observation",
    "combine",
    "generation_refuted",
    "url_runs",
]

HALF_LIFE_RUNS = 30
DECAY = 0.5 ** (1 / HALF_LIFE_RUNS)
Z_L2 = 1.645
TRUSTED_RECALL = 0.8
MIN_TP = 10
PROMOTE_RUNS = 2
STALE_MISSES = 3
STALE_RECALL = 0.8
STALE_RECALL_UPPER = 0.85
OVER_PRECISION = 0.5
OVER_EVENTS = 20
GEN_EVENTS = 30
GEN_LIFT = 1.5
RECOVER_RUNS = 2
#: The L2 counts' memory that the segment was STALE (:func:`_once_stale`).
ONCE_STALE = "once_stale"
STAMP_AUDITS = 60
POOL_OWN_AUDITS = 20
LATE_MOVES = 3

#: Verdicts whose lastmod may drive refetch decisions.
TRUSTING = frozenset({"TRUSTED", "PROVISIONAL", "OVER_REPORTING"})
#: Verdicts that demote at once and are lifted only after clean runs.
RED = frozenset({"ABSENT", "INVALID", "TZ_SHIFT", "GENERATION_TIME", "STALE"})


@dataclass(frozen=True, slots=True)
class Observation:
    """One page fetched on this run that we had fetched before."""

    delta_l: bool  # lastmod said "maybe changed" since our previous fetch
    delta_c: bool  # the content fingerprint changed
    random: bool  # chosen at random (sample, panel, audit): counts for the miss rate
    #: the ΔL = 0 URL-runs a random fetch with ΔL = 0 looked at: the runs since our previous
    #: fetch of the page, each decayed as the segment's ΔL = 0 count is (:func:`url_runs`)
    runs: float = 1.0


@dataclass(slots=True)
class CrossRun:
    """A segment's decayed L2 counts and hysteresis counters (stored as a dict)."""

    tp: float = 0.0
    fp: float = 0.0
    fn: float = 0.0  # audited ΔL = 0 pages that changed
    tn: float = 0.0  # audited ΔL = 0 pages that did not
    n_unch: float = 0.0  # ΔL = 0 URLs of the segment, summed over runs
    seen: float = 0.0  # the ΔL = 0 URL-runs the audited pages covered (``Observation.runs``)
    fp_burst: float = 0.0  # the most false positives one run brought (decayed since)
    promote_streak: int = 0
    clean_streak: int = 0
    runs: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrossRun:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "extra"}
        l2 = cls(**known, extra={k: v for k, v in data.items() if k not in known})
        if "seen" not in data:  # counts stored before URL-runs were: one run per audit
            l2.seen = l2.fn + l2.tn
        return l2

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.extra,
            "tp": round(self.tp, 6),
            "fp": round(self.fp, 6),
            "fn": round(self.fn, 6),
            "tn": round(self.tn, 6),
            "n_unch": round(self.n_unch, 6),
            "seen": round(self.seen, 6),
            "fp_burst": round(self.fp_burst, 6),
            "promote_streak": self.promote_streak,
            "clean_streak": self.clean_streak,
            "runs": self.runs,
        }

    def add_run(self, observations: list[Observation], n_unchanged: int) -> None:
        """Decay, then add one run's observations and its count of ΔL = 0 URLs."""
        self.tp *= DECAY
        self.fp *= DECAY
        self.fn *= DECAY
        self.tn *= DECAY
        self.n_unch *= DECAY
        self.seen *= DECAY
        self.fp_burst *= DECAY
        fp = 0
        for o in observations:
            if o.delta_l:
                if o.delta_c:
                    self.tp += 1
                else:
                    fp += 1
            elif o.random:
                if o.delta_c:
                    self.fn += 1
                    self.seen += 1  # at least one changed URL-run; the rest unknown
                else:
                    self.tn += 1
                    self.seen += max(o.runs, 1.0)
        self.fp += fp
        self.fp_burst = max(self.fp_burst, fp)
        self.n_unch += n_unchanged
        self.runs += 1

    @property
    def audited_runs(self) -> float:
        """The ΔL = 0 URL-runs the audits saw (``seen``), never fewer than the audits: a
        miss settled on a later run (``incremental.judgement``) adds to FN alone."""
        return max(self.seen, self.fn + self.tn)

    def metrics(self) -> dict[str, Any]:
        """Precision, miss rate (Wilson), recall (point and lower bound), lift.

        The miss rate that bounds the recall is per ΔL = 0 URL-run: a clean audit of a page
        we last fetched j runs ago saw j of them (``seen``), a miss at least one changed
        (the others of its window are unknown, left with the unseen ones). ``miss_rate``,
        per audited page, is what the lift compares with the precision (both per fetch).
        """
        events = self.tp + self.fp
        audits = self.fn + self.tn
        seen = self.audited_runs
        precision = self.tp / events if events else None
        n_a = round(audits)
        n_s = round(seen)
        misses = min(round(self.fn), n_a)
        m = self.fn / audits if audits else None
        m_run = self.fn / seen if seen else None
        m_lo, m_hi = wilson(misses, n_s, Z_L2) if n_s else (0.0, 1.0)
        recall = recall_lo = recall_hi = None
        if self.tp > 0 and m_run is not None:
            # The audited misses are counted, not estimated: the miss rate's bounds apply only
            # to the ΔL = 0 URL-runs nobody looked at (a segment audited whole has none).
            unseen = max(self.n_unch - seen, 0.0)
            recall = self.tp / (self.tp + self.fn + m_run * unseen)
            recall_lo = self.tp / (self.tp + self.fn + m_hi * unseen)
            # Looser (all of N_unch): STALE from a single miss must be sure of it.
            recall_hi = self.tp / (self.tp + m_lo * self.n_unch)
        elif m is not None and misses:
            recall = recall_hi = 0.0  # changes seen only where lastmod stood still
        elif self.tp > 0 and self.n_unch <= 0:
            # no URL-run with a still lastmod: no change can have gone unreported (a
            # segment whose every lastmod moves on every run, as a home page's may)
            recall = recall_lo = recall_hi = 1.0
        lift = None
        if precision is not None and m is not None:
            lift = math.inf if m == 0 else precision / m
        return {
            "tp": round(self.tp, 2),
            "fp": round(self.fp, 2),
            "fn": round(self.fn, 2),
            "tn": round(self.tn, 2),
            "n_unchanged": round(self.n_unch, 1),
            "lastmod_events": round(events, 2),
            "audits": round(audits, 2),
            "audited_url_runs": round(seen, 2),
            "precision": _r(precision),
            "miss_rate": _r(m),
            "miss_rate_per_run": _r(m_run),
            "miss_rate_bounds": [_r(m_lo), _r(m_hi)],
            "recall": _r(recall),
            "recall_lower": _r(recall_lo),
            "recall_upper": _r(recall_hi),
            "lift": None if lift is None else ("inf" if math.isinf(lift) else _r(lift)),
            "runs": self.runs,
        }


def url_runs(gap: int) -> float:
    """The ΔL = 0 URL-runs one audit of a page last fetched ``gap`` runs ago saw, weighted
    as ``CrossRun.n_unch`` weighs them by now (this run's 1, the one before ``DECAY``…):
    an unchanged page with a still lastmod was unchanged on each of those runs.

    >>> url_runs(1), round(url_runs(2), 4), round(url_runs(10_000), 1)
    (1.0, 1.9772, 43.8)
    """
    return float((1 - DECAY ** max(gap, 1)) / (1 - DECAY))


def generation_refuted(l2: CrossRun) -> bool:
    """Whether the cross-run score refutes a GENERATION_TIME read from one fetch: over at
    least ``OVER_EVENTS`` lastmod moves, ``MIN_TP`` or more and at least ``OVER_PRECISION``
    of them were content changes. A generation or build stamp moves whether or not the
    pages change; lastmods that moved together because the pages were edited together (a
    batch edit, an import) are not one.

    >>> generation_refuted(CrossRun(tp=24, fp=0))
    True
    >>> generation_refuted(CrossRun(tp=2, fp=93))
    False
    """
    events = l2.tp + l2.fp
    return l2.tp >= MIN_TP and events >= OVER_EVENTS and l2.tp / events >= OVER_PRECISION


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def combine(
    static_name: str,
    static_reason: str,
    previous: str | None,
    l2: CrossRun,
    *,
    sampled: bool = True,
    stamp: bool = False,
    pool: CrossRun | None = None,
    pool_segments: int = 1,
) -> tuple[str, str, dict[str, Any]]:
    """This run's verdict: L0/L1 (``static_*``), the L2 counts (already updated with this
    run) and the previous verdict, with hysteresis (demote at once, promote slowly).
    ``sampled``: pages were sampled on this run (else an UNVERIFIABLE from L0/L1 only means
    "no new page evidence" and the previous verdict stands unless L2 says otherwise).
    ``stamp``: every lastmod of the segment is one stamp (a deploy, a template or cron
    bump): newer than its pages, it over-reports only if no change lands between two
    stamps, which only the audit can show; until ``STAMP_AUDITS`` audited pages without a
    miss, such an OVER_REPORTING is held as UNVERIFIABLE. Not a segment already judged
    OVER_REPORTING or TRUSTED before the stamp: a site-wide bump of a lastmod that was
    seen to report changes between bumps does not undo that (the audit goes on).
    ``pool``: the summed counts of the site's PROVISIONAL and TRUSTED segments, this one
    included (``pool_segments`` of them): see "Pooling" above.

    The rules, in order: the red flags (:func:`_demote`), a red verdict held until clean
    runs (:func:`_held`), PARTIAL as it stands, a run without pages keeping a usable
    verdict (:func:`_unsampled`), OVER_REPORTING (:func:`_over_reporting`), TRUSTED and
    PROVISIONAL by the recall bound (:func:`_trusted`), else the static verdict.

    >>> l2 = CrossRun(tp=12, fp=1, fn=0, tn=60, n_unch=50, runs=3)
    >>> combine("PROVISIONAL", "30 of 30 agree.", "PROVISIONAL", l2)[0]
    'PROVISIONAL'
    >>> combine("PROVISIONAL", "30 of 30 agree.", "PROVISIONAL", l2)[0]
    'TRUSTED'
    >>> combine("GENERATION_TIME", "clustered.", "TRUSTED", l2)[0]
    'GENERATION_TIME'
    """
    run = _Run(
        static_name,
        static_reason,
        previous,
        l2,
        sampled=sampled,
        stamp=stamp,
        pool=pool,
        pool_segments=pool_segments,
    )
    found = _demote(run) or _held(run)
    if found is not None:
        return found
    if run.static_name == "PARTIAL":
        l2.promote_streak = 0
        return run.result(run.static_name, run.static_reason)
    _unsampled(run)
    run.pooled = run.pool_metrics()
    _once_stale(run)
    name, reason, evidence = (
        _over_reporting(run) or _trusted(run) or run.result(run.static_name, run.static_reason)
    )
    return name, _noisy(l2, _lagged(l2, name, reason)), evidence


def _noisy(l2: CrossRun, reason: str) -> str:
    """A verdict's reason, with what the noise probes of this run say (``verify.noise``):
    a site whose pages differ on every fetch gives no content evidence."""
    differed, probed = l2.extra.get("noise") or (0, 0)
    if differed < VOLATILE:
        return reason
    return (
        f"{reason} Its pages differ on every fetch ({differed} of {probed} fetched again at "
        "once differed): their content is no evidence on this run."
    )


def _lagged(l2: CrossRun, name: str, reason: str) -> str:
    """A usable or undecided verdict's reason, with what the late reports say: a sitemap
    that reports changes hours after they happen (rebuilt on a cycle) is late, not wrong.
    The lag is the longest one the late reports show (``lag_s``): our fetch that already
    had a change, minus the time the lastmod later gave it; the sitemap read then was at
    least that far behind the pages."""
    moves = float(l2.extra.get("late_moves", 0.0))
    lag = float(l2.extra.get("lag_s", 0.0))
    if name not in TRUSTING | {"UNVERIFIABLE"} or round(moves) < LATE_MOVES or lag < 3600:
        return reason
    return (
        f"{reason} Its sitemap is late, not wrong: lagged by about {lag / 3600:.0f} h "
        f"({moves:.0f} lastmod moves reported changes our earlier fetch already had)."
    )


_Result = tuple[str, str, dict[str, Any]]


class _Run:
    """One :func:`combine`: its inputs (the static verdict may be replaced by the previous
    one, :func:`_unsampled`), the segment's L2 metrics, the evidence every result carries,
    and whether the recall bound is strong enough alone or with the site's pool."""

    def __init__(
        self,
        static_name: str,
        static_reason: str,
        previous: str | None,
        l2: CrossRun,
        *,
        sampled: bool,
        stamp: bool,
        pool: CrossRun | None,
        pool_segments: int,
    ) -> None:
        self.static_name = static_name
        self.static_reason = static_reason
        self.previous = previous
        self.l2 = l2
        self.sampled = sampled
        self.stamp = stamp
        self.m = l2.metrics()
        self.evidence: dict[str, Any] = {"l2": self.m, "static": static_name, "previous": previous}
        self.misses = round(l2.fn)  # decayed counts: three misses a run ago are 2.93
        recall_lo = self.m["recall_lower"]
        self.strong = l2.tp >= MIN_TP and recall_lo is not None and recall_lo >= TRUSTED_RECALL
        self.pool = pool
        self.pool_segments = pool_segments
        self.pooled: dict[str, Any] | None = None

    def pool_metrics(self) -> dict[str, Any] | None:
        """The pool's metrics when the segment may be trusted on them: its own bound is
        not enough, it has no miss of its own and ``POOL_OWN_AUDITS`` audits, and the
        pool's bound passes the bar (then recorded in the evidence)."""
        l2, pool, pool_segments = self.l2, self.pool, self.pool_segments
        if (
            self.strong
            or pool is None
            or pool_segments <= 1
            or self.misses != 0
            or round(l2.fn + l2.tn) < POOL_OWN_AUDITS
        ):
            return None
        pm = pool.metrics()
        pool_lo = pm["recall_lower"]
        if pool.tp >= MIN_TP and pool_lo is not None and pool_lo >= TRUSTED_RECALL:
            self.evidence["pool"] = {"segments": pool_segments, "l2": pm}
            return pm
        return None

    def result(self, name: str, reason: str) -> _Result:
        return name, reason, self.evidence

    def red(self, name: str, reason: str) -> _Result:
        """A red verdict: the promotion and recovery streaks start over (a STALE one is
        remembered: :func:`_once_stale`)."""
        self.l2.clean_streak = 0
        self.l2.promote_streak = 0
        if name == "STALE":
            self.l2.extra[ONCE_STALE] = 1
        return self.result(name, reason)


def _once_stale(run: _Run) -> None:
    """A segment once STALE is not PROVISIONAL again on its pages' agreement alone: its
    lastmod agreed with its pages while it missed changes (a page whose text or links
    change without its own source file, as a list page's), so the agreement shows no
    recall. It stays UNVERIFIABLE until the cross-run score (its own or its site's pool)
    bounds the recall, when the memory is dropped."""
    if run.strong or run.pooled is not None:
        run.l2.extra.pop(ONCE_STALE, None)
        return
    if run.static_name == "PROVISIONAL" and run.l2.extra.get(ONCE_STALE):
        run.l2.promote_streak = 0
        run.static_name = "UNVERIFIABLE"
        run.static_reason = (
            f"{run.static_reason[:-1]}; but this segment's lastmod was STALE (changes it did "
            "not report), which agreeing pages cannot refute: UNVERIFIABLE until the "
            f"cross-run score bounds its recall (lower bound >= {TRUSTED_RECALL:.2f})."
        )


def _demote(run: _Run) -> _Result | None:
    """Red flags demote at once: a red static verdict, STALE when the audit finds the
    changes lastmod misses, GENERATION_TIME when a moving lastmod predicts no change."""
    m, fn = run.m, run.l2.fn
    recall, recall_hi = m["recall"], m["recall_upper"]
    stale = (run.misses >= STALE_MISSES and recall is not None and recall < STALE_RECALL) or (
        run.misses >= 1 and recall_hi is not None and recall_hi < STALE_RECALL_UPPER
    )
    # A TZ_SHIFT lastmod is used corrected, so the audit still judges it: misses make it
    # STALE.
    if run.static_name in RED and not (run.static_name == "TZ_SHIFT" and stale):
        return run.red(run.static_name, run.static_reason)
    stopped = run.l2.extra.get(STOPPED)
    if stopped:  # a quiet stretch whose audit found changes (verify.refetch.quiet)
        return run.red("STALE", stopped_reason(stopped))
    if stale:
        assert recall is not None
        bound = (
            f"estimated recall {recall:.2f} < {STALE_RECALL:.2f}"
            if run.misses >= STALE_MISSES and recall < STALE_RECALL
            else f"recall upper bound {recall_hi or 0.0:.2f} < {STALE_RECALL_UPPER:.2f}"
        )
        return run.red(
            "STALE",
            f"Across runs, {fn:.0f} of {m['audits']:.0f} audited pages whose lastmod did not "
            f"move had changed ({bound}).",
        )
    lift = m["lift"]
    events = run.l2.tp + run.l2.fp
    if events >= GEN_EVENTS and lift not in (None, "inf") and float(lift) < GEN_LIFT:
        return run.red(
            "GENERATION_TIME",
            f"Across runs, a moving lastmod predicts a content change no better than a still "
            f"one (lift {float(lift):.2f} < {GEN_LIFT} over {events:.0f} lastmod changes).",
        )
    return None


def _held(run: _Run) -> _Result | None:
    """A red verdict is lifted only after ``RECOVER_RUNS`` clean runs in a row; a run that
    sampled no page is no evidence either way."""
    previous, l2 = run.previous, run.l2
    if previous in RED and not run.sampled and run.static_name == "UNVERIFIABLE":
        return run.result(
            previous,
            f"Kept {previous}: no pages were sampled on this run ({run.static_reason[:-1]}).",
        )
    if previous not in RED:
        l2.clean_streak = 0
        return None
    l2.clean_streak += 1
    if l2.clean_streak < RECOVER_RUNS:
        return run.result(
            previous,
            f"Held at {previous} until {RECOVER_RUNS} clean runs in a row "
            f"({l2.clean_streak} so far); this run: {run.static_reason}",
        )
    return None


def _unsampled(run: _Run) -> None:
    """With no page sampled, an UNVERIFIABLE from the sitemap alone means "no new page
    evidence": a usable previous verdict stands in for it (L2 may still change it)."""
    if (
        not run.sampled
        and run.static_name == "UNVERIFIABLE"
        and run.previous in ("PROVISIONAL", "TRUSTED", "OVER_REPORTING", "UNVERIFIABLE")
    ):
        assert run.previous is not None
        run.static_name = run.previous
        run.static_reason = (
            f"Kept {run.previous}: no pages were sampled on this run and the sitemap shows "
            "no red flag."
        )


def _over_reporting(run: _Run) -> _Result | None:
    """OVER_REPORTING: lastmod catches the changes but most of its moves are none (a safe
    filter); a static one from one stamp is held as UNVERIFIABLE until the audit has
    seen ``STAMP_AUDITS`` pages; otherwise a static OVER_REPORTING stands. A TRUSTED
    segment whose precision fell under the bar only by one run's false positives (its
    ``fp_burst``: a commit that touched many source files without changing their text)
    stays TRUSTED: one bulk touch is not a habit, a second one is."""
    m, l2 = run.m, run.l2
    precision = m["precision"]
    if (
        run.strong
        and l2.tp + l2.fp >= OVER_EVENTS
        and precision is not None
        and precision < OVER_PRECISION
        and run.static_name in ("PROVISIONAL", "UNVERIFIABLE", "OVER_REPORTING")
    ):
        habit = l2.tp / (l2.tp + l2.fp - l2.fp_burst) if l2.tp + l2.fp > l2.fp_burst else 1.0
        if run.previous == "TRUSTED" and habit >= OVER_PRECISION:
            return run.result(
                "TRUSTED",
                f"Kept TRUSTED: {l2.fp_burst:.0f} of the {l2.fp:.0f} lastmod moves without a "
                "content change came on one run (one edit to many source files, a "
                f"re-render), not a habit: without them {habit:.0%} of its moves are real "
                f"changes (recall lower bound {m['recall_lower']:.2f}).",
            )
        return run.result(
            "OVER_REPORTING",
            f"Across runs, lastmod catches the changes (recall lower bound "
            f"{m['recall_lower']:.2f}) but only {precision:.0%} of its moves are real "
            "changes: a safe filter.",
        )
    if run.static_name != "OVER_REPORTING":
        return None
    if (
        run.stamp
        and l2.fn + l2.tn < STAMP_AUDITS
        and run.previous not in ("OVER_REPORTING", "TRUSTED")
    ):
        l2.promote_streak = 0
        return run.result(
            "UNVERIFIABLE",
            f"{run.static_reason[:-1]}; but every lastmod is one stamp: it is a safe filter "
            f"only if no change lands between two stamps, and the audit has seen "
            f"{l2.fn + l2.tn:.0f} of the {STAMP_AUDITS} pages that takes.",
        )
    return run.result(run.static_name, run.static_reason)


def _trusted(run: _Run) -> _Result | None:
    """TRUSTED once the recall lower bound (the segment's, or its site's pool's) has
    passed the bar on ``PROMOTE_RUNS`` runs in a row, PROVISIONAL on the way when the
    run has no page evidence; a TRUSTED segment without a red flag stays TRUSTED."""
    l2, previous = run.l2, run.previous
    if not (run.strong or run.pooled is not None):
        l2.promote_streak = 0
        if previous == "TRUSTED" and run.static_name in ("PROVISIONAL", "UNVERIFIABLE"):
            return run.result(
                "TRUSTED",
                f"Kept TRUSTED: no red flag on this run ({run.static_reason[:-1].lower()}).",
            )
        return None
    l2.promote_streak += 1
    score = _score(run)
    if previous == "TRUSTED" or l2.promote_streak >= PROMOTE_RUNS:
        return run.result("TRUSTED", f"{score[0].upper()}{score[1:]}.")
    if run.static_name == "UNVERIFIABLE":
        return run.result(
            "PROVISIONAL",
            f"No page evidence on this run, but {score}; promotion to TRUSTED needs "
            f"{PROMOTE_RUNS} such runs in a row.",
        )
    return None


def _score(run: _Run) -> str:
    """The recall score a promotion rests on, in words: the segment's own, or its site's
    pooled one with the segment's own audit."""
    l2, m, pooled = run.l2, run.m, run.pooled
    if pooled is not None:
        return (
            f"across {l2.runs} runs, on the {run.pool_segments} segments of this site whose "
            f"lastmod agrees with their pages, lastmod moved with {pooled['tp']:.0f} of the "
            f"content changes we saw and the audit found {pooled['fn']:.0f} misses in "
            f"{pooled['audits']:.0f} (recall lower bound {pooled['recall_lower']:.2f} >= "
            f"{TRUSTED_RECALL:.2f}); this segment's own audit found no miss in "
            f"{l2.fn + l2.tn:.0f}"
        )
    assert m["recall_lower"] is not None
    return (
        f"across {l2.runs} runs, lastmod moved with {l2.tp:.0f} of the content changes "
        f"we saw and the audit found {l2.fn:.0f} misses in {m['audits']:.0f} "
        f"(recall lower bound {m['recall_lower']:.2f} >= {TRUSTED_RECALL:.2f})"
    )
