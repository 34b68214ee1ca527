"""Incremental runs: should this URL be fetched again? Pure Python.

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

Reasons (``refetch_reason``): new, lastmod_changed, lastmod_late, lastmod_unchanged, audit,
max_age, undated, no_history, poisson, poisson_wait, probe.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.verify.crossrun import TRUSTING, Z_L2
from sitemapcrawl.verify.intervals import lastmod_interval, wilson
from sitemapcrawl.verify.thresholds import TZ_SLACK

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "Decision",
    "Policy",
    "RunWindow",
    "SegmentStanding",
    "UrlHistory",
    "audit_draw",
    "change_probability",
    "change_rate",
    "decide",
    "delta_l",
    "interval",
    "late_report",
    "page_date_intervals",
    "page_dates_verified",
    "rate_history",
    "reports_within",
    "site_utc_offset",
    "trusted_audit_share",
    "uses_lastmod",
    "wave",
]

DAY = 86_400.0
#: λ̂ is kept inside [1/10 years, 10/day], per second.
RATE_BOUNDS = (1 / (3650 * DAY), 10 / DAY)
#: A page date observed is a change seen at that moment: an interval this short (seconds)
#: stands for it in the incomplete-observation estimate (τ/(e^{λτ}-1) → 1/λ, the
#: complete-observation term).
OBSERVED_CHANGE = 1.0
#: Clock slack between a page's own date and the server's ``Date`` (seconds).
PAGE_DATE_SLACK = 60.0
#: Page dates are trusted for change rates after this many changes they reported…
PAGE_DATE_MIN_HITS = 10
#: …with the Wilson lower bound of "moved when the content changed" at least this…
PAGE_DATE_RECALL = 0.7
#: …and the upper bound of "moved while the content did not" at most this.
PAGE_DATE_FALSE = 0.1


@dataclass(frozen=True, slots=True)
class Policy:
    """The scheduling knobs (``SITEMAPCRAWL_INCREMENTAL_*`` settings)."""

    theta: float = 0.3  # refetch when P(changed) reaches this
    max_age: timedelta = timedelta(days=30)  # refetch at least this often
    max_age_trusted: timedelta = timedelta(days=365)  # … in a TRUSTED segment
    audit_trusted: float = 0.03  # audit share of unchanged URLs, TRUSTED / OVER_REPORTING
    audit_provisional: float = 0.08  # … PROVISIONAL and PARTIAL
    audit_min: int = 5  # audited URLs per TRUSTED segment and run, at least
    prior_rate: float = 1 / (30 * DAY)  # per second, when the segment has no history either
    page_dates: bool = True  # use verified page dates as change history
    probe_min: int = 0  # random pages per untrusted segment and run (``probe``; 0: none)
    wave_alpha: float = 0.01  # P(this many changes | the rates) at most this: a wave
    wave_max: int = 1000  # pages a wave refetches per segment and run, at most


@dataclass(frozen=True, slots=True)
class Decision:
    refetch: bool
    reason: str
    delta_l: bool | None = None  # lastmod said "maybe changed" (None: not dated)


def audit_draw(seed: str, run: int, url: str) -> float:
    """A reproducible uniform draw in [0, 1) for ``url`` on run ``run``.

    >>> audit_draw("s", 1, "https://a/") == audit_draw("s", 1, "https://a/")
    True
    >>> audit_draw("s", 1, "https://a/") != audit_draw("s", 2, "https://a/")
    True
    """
    digest = hashlib.blake2b(f"{seed}\0{run}\0{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


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


def change_rate(
    intervals: Sequence[tuple[float, bool]],
    prior_changes: int,
    prior_seconds: float,
    policy: Policy,
) -> float:
    """λ̂ per second from fetch intervals (seconds, changed), with the segment as prior.

    Solves Σ_changed t/(exp(λt) - 1) = Σ_unchanged t by bisection (the left side falls with
    λ). One pseudo interval of the observed mean length t̄ smooths it (Kolobov et al.): it
    counts as changed with the prior's probability 1 - exp(-λ₀t̄) and as unchanged with the
    rest, λ₀ being the segment's pooled rate.

    >>> round(change_rate([(DAY, True)] * 5 + [(DAY, False)] * 5, 0, 0.0, Policy()) * DAY, 2)
    0.61
    >>> change_rate([], 0, 0.0, Policy()) == Policy().prior_rate
    True
    """
    prior = (prior_changes + 0.5) / (prior_seconds + 0.5 / policy.prior_rate)
    observed = [(t, c) for t, c in intervals if t > 0]
    if not observed:
        return prior
    mean = sum(t for t, _ in observed) / len(observed)
    weight = change_probability(prior, mean)
    changed = [(t, 1.0) for t, c in observed if c] + [(mean, weight)]
    unchanged = sum(t for t, c in observed if not c) + (1 - weight) * mean

    def excess(lam: float) -> float:
        total = 0.0
        for t, w in changed:
            x = lam * t
            total += w * t / math.expm1(x) if x < 700 else 0.0
        return total - unchanged

    lo, hi = RATE_BOUNDS
    if excess(hi) > 0:
        return hi
    if excess(lo) < 0:
        return lo
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1.0001:
            break
    return math.sqrt(lo * hi)


def trusted_audit_share(
    tp: float,
    n_unchanged: float,
    decay: float,
    policy: Policy,
    *,
    audits: float = 0.0,
    runs: int | None = None,
    target: float = 0.85,
    pool: tuple[float, float, float] | None = None,
) -> float:
    """The audit share that keeps a TRUSTED segment's recall lower bound near ``target``.

    The bound is TP / (TP + m_hi·N_unch); with no miss, the one-sided Wilson bound on the
    miss rate after n audits is about z²/(n + z²), so the bound holds while the decayed
    audit count is n ≥ z²(1/m* - 1), m* = (TP/N_unch)(1/target - 1): a number set by the
    segment's change rate, not its size. ``audits`` (decayed) are counted already; after
    this run's decay they must be topped up to n, which in the steady state takes
    (1 - decay)·n audits per run, and nothing while an earlier, larger audit (a
    PROVISIONAL segment's first one) still covers it. The share is that number (at least
    ``policy.audit_min``) over the run's ΔL = 0 URLs, at most ``policy.audit_trusted``: on
    a large segment the audit costs a few fetches per run, not a percentage. The run's ΔL
    = 0 URLs are N_unch's per-run part over the ``runs`` runs that summed it (decayed), not
    the steady state's: early on that would understate them.

    ``pool``: the (TP, N_unch, audits) of the site's PROVISIONAL and TRUSTED segments,
    this one included (crossrun "Pooling"). A segment whose pages change rarely needs many
    audits to bound its own recall (the need grows as 1/change rate) but may be trusted on
    the pooled bound; the pool's need, spread over its URLs at one share (proportional
    allocation keeps the pooled miss rate unbiased), is then enough, and the segment keeps
    at least ``policy.audit_min`` audits of its own per run for its own demotion rules.

    >>> # 100 URLs changing 5 % a run, in the steady state: the cap (9 needed, 3 allowed)
    >>> round(trusted_audit_share(219, 4166, 0.977, Policy(), audits=385), 3)
    0.03
    >>> # 10,000 URLs: the steady state's 7 a run; 5 a run (the floor) while an audit of
    >>> # 320 pages is still decaying to the 289 needed
    >>> round(trusted_audit_share(21900, 416600, 0.977, Policy(), audits=289) * 9500, 1)
    6.6
    >>> round(trusted_audit_share(21900, 416600, 0.977, Policy(), audits=320) * 9500, 1)
    5.0
    >>> # 1,000 URLs changing 1 % a run, alone (the 3 % cap: 30 a run) and beside 2,000
    >>> # changing 5 % (the pool's need, 9 a run, is under this segment's floor)
    >>> slow = trusted_audit_share(438, 43000, 0.977, Policy(), audits=900)
    >>> pooled = trusted_audit_share(
    ...     438, 43000, 0.977, Policy(), audits=900, pool=(4818, 126600, 1250)
    ... )
    >>> round(slow * 990), round(pooled * 990)
    (30, 5)
    >>> # 10,000 URLs changing 5 % after 10 runs (the decayed sums hold a fifth of the
    >>> # steady state's), 160 audits counted: 131 more tops them up to the 289 needed
    >>> round(trusted_audit_share(4550, 86500, 0.977, Policy(), audits=160, runs=10) * 9500)
    131
    """
    span = 1 - decay ** max(runs, 1) if runs is not None else 1.0
    per_run_unchanged = n_unchanged * (1 - decay) / span
    if per_run_unchanged <= 0:
        return policy.audit_trusted
    shares = []
    if tp > 0:
        shares.append(_audits_to_hold(tp, n_unchanged, audits, decay, target) / per_run_unchanged)
    if pool is not None and pool[0] > 0 and pool[1] > 0:
        pool_tp, pool_unchanged, pool_audits = pool
        held = _audits_to_hold(pool_tp, pool_unchanged, pool_audits, decay, target)
        shares.append(held / (pool_unchanged * (1 - decay) / span))
    if not shares:
        return policy.audit_trusted
    share = max(min(shares), policy.audit_min / per_run_unchanged)
    return min(share, policy.audit_trusted)


def _audits_to_hold(
    tp: float, n_unchanged: float, audits: float, decay: float, target: float
) -> float:
    """Audits this run that keep TP / (TP + m_hi·N_unch) at ``target`` (no miss): what the
    decayed count will lack of z²(1/m* - 1) after this run's decay."""
    m_star = (tp / n_unchanged) * (1 / target - 1)
    return max(Z_L2**2 * (1 / m_star - 1) - audits * decay, 0.0)


def page_date_intervals(
    *,
    fetched_at: datetime,
    page_date: datetime | None,
    previous_fetch: datetime | None,
    previous_date: datetime | None,
    changed: bool | None,
    cap: float,
) -> tuple[list[tuple[float, bool]], str | None]:
    """What one fetch of a page with its own modification date adds to the page-date change
    history, and how the date behaved: ``(intervals, check)``.

    ``changed``: whether our fingerprint changed since ``previous_fetch`` (None: the first
    fetch). ``check``: ``hit`` (the date moved into the window since our previous fetch and
    the content changed), ``miss`` (the content changed, the date did not say so),
    ``false`` (the date moved, the content did not), ``still`` (neither moved) or None (a
    first fetch). A first fetch gives a change at the date and none since, the quiet time
    counted up to ``cap`` seconds (older history is not trusted to predict); a later one
    the same when the date reports a change inside the window, else the plain fetch
    interval.

    >>> from datetime import UTC
    >>> now = datetime(2024, 6, 10, tzinfo=UTC)
    >>> page_date_intervals(fetched_at=now, page_date=now - timedelta(days=400),
    ...     previous_fetch=None, previous_date=None, changed=None, cap=30 * DAY)
    ([(1.0, True), (2592000.0, False)], None)
    >>> page_date_intervals(fetched_at=now, page_date=now - timedelta(hours=2),
    ...     previous_fetch=now - timedelta(days=1), previous_date=now - timedelta(days=9),
    ...     changed=True, cap=30 * DAY)
    ([(1.0, True), (7200.0, False)], 'hit')
    >>> page_date_intervals(fetched_at=now, page_date=now - timedelta(days=9),
    ...     previous_fetch=now - timedelta(days=1), previous_date=now - timedelta(days=9),
    ...     changed=True, cap=30 * DAY)
    ([(86400.0, True)], 'miss')
    """
    slack = timedelta(seconds=PAGE_DATE_SLACK)
    if page_date is not None and page_date > fetched_at + slack:
        page_date = None  # a date in the future is no observation
    if previous_fetch is None or changed is None:
        if page_date is None:
            return [], None
        quiet = min(max((fetched_at - page_date).total_seconds(), 0.0), cap)
        return [(OBSERVED_CHANGE, True), (quiet, False)], None
    seconds = max((fetched_at - previous_fetch).total_seconds(), 0.0)
    plain = [(seconds, changed)] if seconds > 0 else []
    if page_date is None:
        return plain, ("miss" if changed else None)
    moved = previous_date is None or abs((page_date - previous_date).total_seconds()) > 1
    if moved and previous_fetch - slack < page_date:
        if changed:
            quiet = max((fetched_at - page_date).total_seconds(), 0.0)
            return [(OBSERVED_CHANGE, True), (quiet, False)], "hit"
        return plain, "false"
    if changed:
        return plain, "miss"
    return plain, ("false" if moved else "still")


def page_dates_verified(hits: float, misses: float, false: float, still: float) -> bool:
    """Whether a segment's page dates are honest enough to stand for its change history:
    at least :data:`PAGE_DATE_MIN_HITS` changes they reported, their recall's Wilson lower
    bound at least :data:`PAGE_DATE_RECALL` and the upper bound of their false moves at
    most :data:`PAGE_DATE_FALSE` (counts as decayed, rounded).

    >>> page_dates_verified(12, 0, 0, 250)
    True
    >>> page_dates_verified(12, 9, 0, 250)  # dates that stay put while pages change
    False
    >>> page_dates_verified(12, 0, 240, 10)  # dates that move on every fetch
    False
    >>> page_dates_verified(8, 0, 0, 250)
    False
    """
    hits, misses, false, still = (round(x) for x in (hits, misses, false, still))
    if hits < PAGE_DATE_MIN_HITS or wilson(hits, hits + misses)[0] < PAGE_DATE_RECALL:
        return False
    quiet = false + still
    return quiet > 0 and wilson(false, quiet)[1] <= PAGE_DATE_FALSE


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


def change_probability(rate: float, seconds: float) -> float:
    """P(at least one change in ``seconds``) for a Poisson rate per second."""
    return -math.expm1(-rate * max(seconds, 0.0))


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
    to start."""

    previous_raw: str | None
    last_refetch: datetime | None = None
    last_fetch: datetime | None = None
    intervals: Sequence[tuple[float, bool]] = ()
    captured: tuple[datetime, datetime] | None = None
    page_history: tuple[Sequence[tuple[float, bool]], tuple[int, float]] | None = None


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
    if trusting and moved is not None:
        if moved:
            return Decision(True, "lastmod_changed", True)
        return _unmoved(lastmod, history, segment, run, draw)
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
    latest = max((t for t in (history.last_refetch, last_fetch) if t is not None), default=None)
    # A TRUSTED lastmod has shown that it moves with the changes, and its audit keeps
    # measuring that: its safety net is longer (a site crawled every few weeks would
    # otherwise be refetched whole on every run).
    age = policy.max_age_trusted if segment.verdict == "TRUSTED" else policy.max_age
    if _older(latest, run.now, age):
        return Decision(True, "max_age", False)
    return Decision(False, "lastmod_unchanged", False)


def uses_lastmod(verdict: str | None, *, subset_trusted: bool, shift_known: bool) -> bool:
    """Whether a segment's standing verdict lets its lastmod drive refetches: TRUSTED,
    PROVISIONAL, OVER_REPORTING, a PARTIAL one whose dated subset passed, a TZ_SHIFT one
    whose offset is known (used corrected)."""
    return (
        verdict in TRUSTING
        or (verdict == "PARTIAL" and subset_trusted)
        or (verdict == "TZ_SHIFT" and shift_known)
    )


def rate_history(
    intervals: Sequence[tuple[float, bool]],
    prior: tuple[int, float],
    page_history: tuple[Sequence[tuple[float, bool]], tuple[int, float]] | None,
    policy: Policy,
) -> tuple[Sequence[tuple[float, bool]], tuple[int, float]]:
    """The history a URL's change rate is estimated from: its page-date history and prior
    when the segment's page dates are verified (and used), else its fetch intervals."""
    if page_history is not None and page_history[0] and policy.page_dates:
        return page_history
    return intervals, prior


def wave(expected: float, changed: int, alpha: float) -> bool:
    """Whether ``changed`` content changes among the pages fetched on this run, which by
    their change rates were expected to show ``expected`` (the sum of their change
    probabilities), are a wave: a release, a rebuild, an edit of many pages at once, which
    per-page rates cannot foresee. The test is the Poisson tail P(X >= changed | expected)
    <= ``alpha`` (a sum of independent Bernoulli draws has a thinner tail than the Poisson
    of the same mean: the test errs towards no wave).

    >>> wave(0.05, 2, 0.01)  # two changes where one in twenty was expected
    True
    >>> wave(0.05, 1, 0.01)  # one is not enough at that rate
    False
    >>> wave(3.0, 4, 0.01)  # about what the rates said
    False
    """
    if changed < 1:
        return False
    return _poisson_tail(expected, changed) <= alpha


def _poisson_tail(mean: float, k: int) -> float:
    """P(X >= k) for X ~ Poisson(mean)."""
    if mean <= 0:
        return 0.0
    term = total = math.exp(-mean)
    for i in range(1, k):
        term *= mean / i
        total += term
    return max(0.0, 1.0 - total)


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


def _audit_share(verdict: str | None, audit_share: float | None, policy: Policy) -> float:
    """The share of a trusted segment's unchanged URLs audited this run: the segment's
    own when set, else the policy's for its verdict (PROVISIONAL audits more)."""
    if audit_share is not None:
        return audit_share
    if verdict in ("TRUSTED", "OVER_REPORTING"):
        return policy.audit_trusted
    return policy.audit_provisional


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
