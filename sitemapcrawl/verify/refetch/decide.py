"""Refetch scheduling: one URL's decision, and why.

The design: docs/verification.md, "Scheduling incremental refetches", "Change rates" and
"Page dates as change history".

The decision uses a URL's lastmod only where its segment's standing verdict allows it:

* **TRUSTED, PROVISIONAL, OVER_REPORTING** (and the dated URLs of a PARTIAL segment whose
  dated subset passed): refetch iff the lastmod may have moved since the cut — its interval's
  upper bound (so a date-only value covers its whole day in any timezone) is after ``since``,
  or, on ``since=last`` runs, the raw value differs from the previous run's — unless the
  new value reports a time between our last two fetches of the page and the later one found
  the change (a lagged sitemap catching up with a change that fetch already has). Otherwise a
  seeded random **audit** share is refetched anyway (the audit is what measures misses;
  on TRUSTED segments sized by need, see :func:`trusted_audit_share`),
  and a **max-age** safety net refetches what has not been refetched for too long.
* **TZ_SHIFT** with a known offset of k whole hours: as PROVISIONAL, the lastmod corrected
  by -k h.
* **STALE**: a moving lastmod still triggers a refetch (it is right when it moves); the rest
  follow the change-rate schedule (a hybrid). **UNVERIFIABLE** too: its moving
  lastmods point at the pages that will show whether it is right.
* **everything else** (GENERATION_TIME, ABSENT, INVALID, or no
  verdict yet): lastmod is ignored. Each URL's change rate λ̂ is estimated from our own
  fetches (the irregular-interval MLE of Kolobov et al., pooled with the segment's rate as a
  prior of one pseudo-change), and the URL is refetched when the probability that it changed
  since our last fetch, 1 - exp(-λ̂·Δt), reaches θ. A URL with no fetch history, or fetched
  only once (no interval to learn from), is refetched.

**Page dates as change history.** Where the segment's pages carry their own modification
time and our fetches have shown it honest (:func:`page_dates_verified`: it moved into the
window between two fetches when the content changed, and stayed put when it did not), each
fetch tells when the page last changed, not only whether it did: a change observed at that
moment and none since (:func:`page_date_intervals`). The first fetch then already gives a
rate (a page last edited two years ago is not fetched again tomorrow), so the second fetch
is not needed, and at equal fetches fewer pages stay stale than with the fetch intervals
alone (docs/benchmarks.md).

A lastmod that moved to a time our last fetch already covers (a lagged sitemap catching up,
``captured`` in :func:`delta_l`) says nothing of the time since, but it does say the page was
edited lately: the page's change rate decides, with θ, as for an untrusted URL
(``lastmod_late``).

**Probes and waves.** Changes often come together: a release rewrites the docs, a rebuild
changes every page's template, a batch of edits lands in one afternoon. Per-page rates
cannot foresee them, and a segment whose lastmod is not used would miss them all. When the
crawl fetches the pages itself (``pages=refetch``), a few random pages of each untrusted
segment may be fetched on every run (``probe``: ``Policy.probe_min`` pages, none by
default); after the run's fetches, a segment whose fetched pages changed far more than
their rates predicted
(:func:`wave`) has its other URLs fetched too (``wave``, at most ``Policy.wave_max``).

**Learning per page** (:mod:`~sitemapcrawl.verify.refetch.learn`). A page that changed in
many of its own fetches is fetched on every run (``page_history``): in a segment whose
lastmod is used, counting only the fetches where its lastmod had not moved, after the
audit's draw. With ``Policy.move_learner``, a page whose lastmod moves our fetches showed
without a change is not fetched on its moves (``lastmod_idle``).

Reasons (``refetch_reason``): new, lastmod_changed, lastmod_late, lastmod_unchanged,
lastmod_idle, audit, page_history, max_age, undated, no_history, poisson, poisson_wait,
probe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.verify.crossrun import TRUSTING
from sitemapcrawl.verify.refetch.audits import _audit_share
from sitemapcrawl.verify.refetch.learn import PageRecord, changes_every_run, stops_following
from sitemapcrawl.verify.refetch.moves import delta_l, late_report
from sitemapcrawl.verify.refetch.policy import Decision, Policy
from sitemapcrawl.verify.refetch.rates import change_probability, change_rate, rate_history

if TYPE_CHECKING:
    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "RunWindow",
    "SegmentStanding",
    "UrlHistory",
    "decide",
    "uses_lastmod",
]


@dataclass(frozen=True, slots=True)
class RunWindow:
    """The run a decision is made on: the cut (``since``), whether the cut is the previous
    run (``since_last``: a changed raw value also counts), the run's clock and its policy."""

    since: datetime
    since_last: bool
    now: datetime
    policy: Policy


@dataclass(frozen=True, slots=True)
class SegmentStanding:
    """What a URL's segment brings to its decision: its standing verdict; whether a PARTIAL
    one's dated subset passed; its pooled change-rate ``prior``; a TZ_SHIFT segment's
    ``shift`` in seconds (lastmod minus the truth: its lastmod is used corrected, with the
    PROVISIONAL audit); its ``audit_share`` when set (a TRUSTED one's, see
    :func:`trusted_audit_share`; a PROVISIONAL one's first audit), else the policy's; the
    site's ``utc_offset`` (see :func:`delta_l`); ``probe_share``: the share of an untrusted
    segment's URLs the rates leave that are fetched anyway (``probe``), set when the crawl
    fetches the pages itself."""

    verdict: str | None
    subset_trusted: bool = False
    prior: tuple[int, float] = (0, 0.0)
    shift: float | None = None
    audit_share: float | None = None
    utc_offset: float | None = None
    probe_share: float | None = None


@dataclass(frozen=True, slots=True)
class UrlHistory:
    """What the state holds of a URL from earlier runs: the lastmod it had on the previous
    run, when we last refetched and fetched it, its fetch intervals, ``captured`` (see
    :func:`delta_l`) and ``page_history``: its page-date change history with its segment's
    pooled prior, when the segment's page dates are verified (see
    :func:`page_date_intervals`): the rate is estimated from it, and one fetch is enough
    to start; ``learned``: what our fetches learnt of the page (``verify.refetch.learn``)."""

    previous_raw: str | None
    last_refetch: datetime | None = None
    last_fetch: datetime | None = None
    intervals: Sequence[tuple[float, bool]] = ()
    captured: tuple[datetime, datetime] | None = None
    page_history: tuple[Sequence[tuple[float, bool]], tuple[int, float]] | None = None
    learned: PageRecord | None = None


def decide(
    lastmod: LastMod | None,
    history: UrlHistory | None,
    segment: SegmentStanding,
    run: RunWindow,
    draw: float,
) -> Decision:
    """One URL's refetch decision (see the module docstring): ``history`` is None for a URL
    the state has not seen; ``draw`` is :func:`audit_draw`'s, for the audit and the probe."""
    if history is None:
        if run.since_last:
            return Decision(True, "new")
        history = UrlHistory(None)
    verdict, policy, shift = segment.verdict, run.policy, segment.shift
    corrected = verdict == "TZ_SHIFT" and shift is not None
    moved = delta_l(
        lastmod,
        run.since,
        history.previous_raw,
        run.since_last,
        captured=history.captured,
        shift=shift or 0.0,
        utc_offset=segment.utc_offset,
    )
    trusting = uses_lastmod(verdict, subset_trusted=segment.subset_trusted, shift_known=corrected)
    learned = history.learned
    if trusting and moved is not None:
        if not moved:
            return _unmoved(lastmod, history, segment, run, draw)
        if (
            policy.move_learner
            and learned is not None
            and stops_following(learned, theta=policy.theta)
        ):
            # its moves came without a change: a section page dated by its newest member
            return Decision(False, "lastmod_idle", True)
        return Decision(True, "lastmod_changed", True)
    if verdict in ("STALE", "UNVERIFIABLE") and moved:
        # STALE: a move is still right; UNVERIFIABLE (no red flag, no page evidence yet):
        # the pages it points at are the ones that show whether it is right
        return Decision(True, "lastmod_changed", True)
    intervals, prior = rate_history(history.intervals, segment.prior, history.page_history, policy)
    decision = _by_change_rate(
        moved,
        trusting,
        run.now,
        history.last_fetch,
        intervals=intervals,
        prior=prior,
        policy=policy,
    )
    if not decision.refetch and _changes_every_run(learned, policy, trusting=False):
        return Decision(True, "page_history", moved)
    if not decision.refetch and not trusting and segment.probe_share and draw < segment.probe_share:
        # a few pages the rates would leave, at random: what shows a wave of changes
        # (``wave``) the per-page rates cannot foresee
        return Decision(True, "probe", moved)
    return decision


def _unmoved(
    lastmod: LastMod | None,
    history: UrlHistory,
    segment: SegmentStanding,
    run: RunWindow,
    draw: float,
) -> Decision:
    """The decision where the segment's lastmod drives refetches and the URL's has not
    moved: a late report the change rate takes up, the audit, the max-age safety net."""
    policy, last_fetch = run.policy, history.last_fetch
    if (
        run.since_last
        and last_fetch is not None
        and _moved_late(
            lastmod,
            history.previous_raw,
            history.captured,
            segment.shift or 0.0,
            segment.utc_offset,
        )
    ):
        # It says nothing of the time since our last fetch, but it says the page was
        # edited lately: whether to fetch it again is the change rate's question (a
        # page edited lately is edited again more often than its lastmod shows).
        rate = change_rate(history.intervals, segment.prior[0], segment.prior[1], policy)
        if change_probability(rate, (run.now - last_fetch).total_seconds()) >= policy.theta:
            return Decision(True, "lastmod_late", False)
    if draw < _audit_share(segment.verdict, segment.audit_share, policy):
        return Decision(True, "audit", False)
    if _changes_every_run(history.learned, policy, trusting=True):
        # it changes without its lastmod moving (a list page, a feed, a search index):
        # after the audit's draw, so the audit stays a uniform sample of the segment
        return Decision(True, "page_history", False)
    latest = max((t for t in (history.last_refetch, last_fetch) if t is not None), default=None)
    # A TRUSTED lastmod has shown that it moves with the changes, and its audit keeps
    # measuring that: its safety net is longer (a site crawled every few weeks would
    # otherwise be refetched whole on every run).
    age = policy.max_age_trusted if segment.verdict == "TRUSTED" else policy.max_age
    if _older(latest, run.now, age):
        return Decision(True, "max_age", False)
    return Decision(False, "lastmod_unchanged", False)


def _changes_every_run(learned: PageRecord | None, policy: Policy, *, trusting: bool) -> bool:
    return (
        learned is not None
        and policy.page_min_changes > 0
        and changes_every_run(
            learned,
            trusting=trusting,
            share=policy.page_share,
            min_changes=policy.page_min_changes,
        )
    )


def uses_lastmod(verdict: str | None, *, subset_trusted: bool, shift_known: bool) -> bool:
    """Whether a segment's standing verdict lets its lastmod drive refetches: TRUSTED,
    PROVISIONAL, OVER_REPORTING, a PARTIAL one whose dated subset passed, a TZ_SHIFT one
    whose offset is known (used corrected)."""
    return (
        verdict in TRUSTING
        or (verdict == "PARTIAL" and subset_trusted)
        or (verdict == "TZ_SHIFT" and shift_known)
    )


def _moved_late(
    lastmod: LastMod | None,
    previous_raw: str | None,
    captured: tuple[datetime, datetime] | None,
    shift: float,
    utc_offset: float | None,
) -> bool:
    """Whether a lastmod moved to a time our last fetch already covers (``late_report``):
    a lagged sitemap catching up with a change that fetch has."""
    return (
        lastmod is not None
        and previous_raw not in (None, lastmod.raw)
        and late_report(lastmod, captured, shift, utc_offset)
    )


def _by_change_rate(
    moved: bool | None,
    trusting: bool,
    now: datetime,
    last_fetch: datetime | None,
    *,
    intervals: Sequence[tuple[float, bool]],
    prior: tuple[int, float],
    policy: Policy,
) -> Decision:
    """Refetch when the page has probably changed since our last fetch by its change rate
    (P(changed) >= θ), when it is older than the max age, or when no rate can be learnt
    yet (never fetched, or fetched once with no page-date history)."""
    if last_fetch is None or (not trusting and not intervals):
        # never fetched, or fetched once: no interval to estimate a rate from yet
        return Decision(True, "undated" if trusting else "no_history", moved)
    if _older(last_fetch, now, policy.max_age):
        return Decision(True, "max_age", moved)
    rate = change_rate(intervals, prior[0], prior[1], policy)
    p = change_probability(rate, (now - last_fetch).total_seconds())
    return Decision(p >= policy.theta, "poisson" if p >= policy.theta else "poisson_wait", moved)


def _older(then: datetime | None, now: datetime, age: timedelta) -> bool:
    return then is None or now - then > age
