"""Lastmod verification: the static verdict's rules, tried in order.

docs/verification.md, "Static verdict". :func:`static_verdict` judges a segment from one
sitemap fetch (L0, :mod:`sitemapcrawl.verify.dispersion`) and its sampled pages (L1,
:mod:`sitemapcrawl.verify.agreement`). The cross-run score (L2) is
:mod:`sitemapcrawl.verify.crossrun`, so :func:`static_verdict` never returns ``TRUSTED``.

Verdict order in :func:`static_verdict`: ABSENT, INVALID, TZ_SHIFT, GENERATION_TIME, STALE,
OVER_REPORTING, then PROVISIONAL or UNVERIFIABLE (the two-population OVER_REPORTING between
them), PARTIAL around those two. Standard library only.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sitemapcrawl.verify.agreement import (
    AGREE,
    LASTMOD_NEWER,
    LASTMOD_OLDER,
    NO_LASTMOD,
    PAGE_STAMP,
    PUBDATE_AS_LASTMOD,
)
from sitemapcrawl.verify.intervals import wilson
from sitemapcrawl.verify.thresholds import (
    ABSENT_COVERAGE,
    ESCALATED_SAMPLE,
    FUTURE_SHARE,
    INVALID_SHARE,
    MIN_N_EV,
    MIN_N_L,
    NEWS_BURST,
    ONE_DATE_SHARE,
    OVER_REPORTING_LB,
    PARTIAL_COVERAGE,
    PROVISIONAL_LB,
    STALE_LB,
    TZ_MIN_LB,
)
from sitemapcrawl.verify.verdict import Verdict, _Sample

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from sitemapcrawl.verify.dispersion import SegmentL0
    from sitemapcrawl.verify.stamps import SiteView

__all__ = [
    "one_date_note",
    "static_verdict",
]


#: How a page problem (``pagedates.page_evidence``) reads
#: in a reason: "N <text>".
_PROBLEM_TEXT = {
    "json-ld_invalid": "with broken JSON-LD",
    "microdata_invalid": "with broken microdata",
    "rdfa_invalid": "with broken RDFa",
    "opengraph_invalid": "with broken OpenGraph",
    "conflicting_modified": "with conflicting modification dates",
    "future_modified": "with a modification date in the future",
    "invalid_modified": "with an unreadable modification date",
    "modified_before_published": "modified before they were published",
    "now_modified": "giving the render time as their modification date",
    "not_html": "not HTML",
    "empty": "empty",
    "truncated": "cut at the parse cap",
}


def _bound(label: str, successes: int, n: int, threshold: float) -> dict[str, Any]:
    lo, hi = wilson(successes, n)
    return {
        "proportion": label,
        "successes": successes,
        "n": n,
        "lower": round(lo, 4),
        "upper": round(hi, 4),
        "threshold": threshold,
    }


def _pct(x: float) -> str:
    return f"{x:.0%}"


def static_verdict(
    l0: SegmentL0,
    outcomes: Sequence[str],
    t_ref: datetime,
    *,
    generation_ruled_out: bool = False,
    problems: Mapping[str, int] | None = None,
    site: SiteView | None = None,
    archive_days: float | None = None,
    unsampled: str | None = None,
) -> Verdict:
    """Judge a segment from one sitemap fetch (L0) and its sampled pages (L1).

    ``outcomes`` are the :func:`agreement` results of the sampled pages, a page whose date
    is a stamp given as ``PAGE_STAMP`` (:func:`page_stamps`). The
    rules are tried in order (``_RULES``): ABSENT, INVALID, TZ_SHIFT, GENERATION_TIME,
    STALE, OVER_REPORTING; then ``_by_agreement``: PARTIAL (wrapping the dated subset's
    PROVISIONAL or UNVERIFIABLE), PROVISIONAL, UNVERIFIABLE (docs/verification.md,
    "Static verdict"). ``TRUSTED`` needs the cross-run recall bound and is never
    returned here. ``generation_ruled_out``: the
    cross-run history shows the cluster is not moving with each generation.
    ``problems``: how many sampled pages had each page problem (``pagedates``); they are
    kept in the evidence and, where too few pages carry evidence, named in the reason.
    ``site``: the L0 test over the whole site (:class:`SiteView`); ``archive_days``: how
    many days the sampled pages' publication dates span; ``unsampled``: why no page of the
    segment was sampled, when none was (said in the reason, with how to verify it).

    >>> from datetime import UTC, datetime
    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> from sitemapcrawl.verify.dispersion import SegmentL0Accumulator
    >>> now = datetime(2024, 6, 1, tzinfo=UTC)
    >>> acc = SegmentL0Accumulator()
    >>> for day in range(1, 31):
    ...     for hour in (8, 9, 10):  # 90 URLs: 30 sampled, 60 could be
    ...         acc.add(parse_lastmod(f"2024-04-{day:02d}T{hour:02d}:00:00Z"))
    >>> v = static_verdict(acc.result(now), ["AGREE"] * 27 + ["LASTMOD_NEWER"] * 3, now)
    >>> v.name
    'UNVERIFIABLE'
    >>> for part in v.reason.split("; "):
    ...     print(part)
    27 of 30 sampled pages agree (Wilson lower bound 0.74 < 0.80)
    escalate the sample to 60 pages.
    """
    sample = _Sample.of(
        l0,
        outcomes,
        t_ref,
        generation_ruled_out,
        problems,
        site=site,
        archive_days=archive_days,
        unsampled=unsampled,
    )
    verdict = _first_rule(sample)
    one_date = one_date_note(l0)
    if one_date is not None:
        verdict.evidence["one_date"] = one_date
        if "lastmods fall" not in verdict.reason:  # the clustering rules say it already
            verdict = replace(verdict, reason=f"{one_date['text']}; {verdict.reason}")
    if verdict.name == "GENERATION_TIME":
        # What the rules say without the generation-time signature: the cross-run score
        # may refute it (lastmod moves that were content changes), and then this stands.
        plain = replace(sample, signalled=False, suspected=False)
        other = _first_rule(plain)
        verdict.evidence["without_generation"] = {
            "verdict": other.name,
            "reason": other.reason,
            "evidence": {k: v for k, v in other.evidence.items() if k not in sample.evidence},
        }
    return verdict


def one_date_note(l0: SegmentL0) -> dict[str, Any] | None:
    """When at least ``ONE_DATE_SHARE`` of a segment's ``MIN_N_L`` or more lastmods are one
    value, or dates of one day: the date, the share and its age, for the verdict's reason.
    A user planning re-crawls on lastmod is told that every URL carries the same date,
    whatever the pages say (a build that stamps all its URLs, a CMS export).

    >>> from datetime import UTC, datetime
    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> from sitemapcrawl.verify.dispersion import SegmentL0Accumulator
    >>> acc = SegmentL0Accumulator()
    >>> for _ in range(61):
    ...     acc.add(parse_lastmod("2026-01-04"))
    >>> one_date_note(acc.result(datetime(2026, 12, 7, tzinfo=UTC)))["text"]
    '100% of 61 lastmods carry one date, 2026-01-04 (337 days before the server clock)'
    """
    if l0.n_lastmod < MIN_N_L or l0.cluster_start is None or l0.cluster_end is None:
        return None
    share = l0.mode_share
    if l0.window == "1day":
        share = max(share, l0.window_share)
    if share < ONE_DATE_SHARE:
        return None
    day = l0.cluster_start.date()
    if l0.cluster_end - l0.cluster_start > timedelta(days=1):
        return None
    age = (l0.t_ref.date() - day).days  # calendar days, UTC
    when = f"{age} days before" if age >= 0 else f"{-age} days after"
    return {
        "date": day.isoformat(),
        "share": round(share, 4),
        "text": (
            f"{share:.0%} of {l0.n_lastmod} lastmods carry one date, {day.isoformat()} "
            f"({when} the server clock)"
        ),
    }


def _first_rule(sample: _Sample) -> Verdict:
    for rule in _RULES:
        verdict = rule(sample)
        if verdict is not None:
            return verdict
    return _by_agreement(sample)


def _absent(s: _Sample) -> Verdict | None:
    """ABSENT: too few URLs carry a usable lastmod to judge anything."""
    l0 = s.l0
    if l0.coverage >= ABSENT_COVERAGE:
        return None
    return s.verdict(
        "ABSENT",
        f"Only {l0.n_lastmod} of {l0.n} URLs carry a usable lastmod "
        f"(coverage {l0.coverage:.2f} < {ABSENT_COVERAGE:.2f}); "
        "the sitemap serves for discovery only.",
    )


def _invalid(s: _Sample) -> Verdict | None:
    """INVALID: unparseable values, or future ones no whole-hour offset explains."""
    l0 = s.l0
    if l0.invalid_share > INVALID_SHARE:
        return s.verdict(
            "INVALID",
            f"{l0.n_invalid} of {l0.n_invalid + l0.n_lastmod} lastmod values are unparseable "
            f"({_pct(l0.invalid_share)} > {_pct(INVALID_SHARE)}).",
        )
    if l0.future_share > FUTURE_SHARE and l0.tz_shift_k is None and not s.l1_tz:
        return s.verdict(
            "INVALID",
            f"{_pct(l0.future_share)} of lastmod values lie more than 15 minutes after the "
            f"server clock (> {_pct(FUTURE_SHARE)}) with no consistent whole-hour offset.",
        )
    return None


def _tz_shift(s: _Sample) -> Verdict | None:
    """TZ_SHIFT: future values (L0) or disagreeing pages (L1) off by whole hours."""
    l0 = s.l0
    if any(sig.startswith("tz_shift:") for sig in s.signals) and l0.tz_shift_k is not None:
        return s.verdict(
            "TZ_SHIFT",
            f"{_pct(l0.future_share)} of lastmod values are in the future, "
            f"{_pct(l0.tz_shift_share)} of those by {l0.tz_shift_k} h within 2 minutes; "
            f"correct by -{l0.tz_shift_k} h and re-test.",
            k=l0.tz_shift_k,
            source="L0",
        )
    if s.l1_tz and s.l1_k is not None:
        lo = wilson(s.l1_k_count, s.n_ev)[0]
        return s.verdict(
            "TZ_SHIFT",
            f"{s.l1_k_count} of {s.disagreeing} disagreeing pages ({s.l1_k_count} of {s.n_ev} "
            f"with evidence, Wilson lower bound {lo:.2f} >= {TZ_MIN_LB:.2f}) are off by "
            f"{s.l1_k:+d} h; correct by {-s.l1_k:+d} h and re-test.",
            k=s.l1_k,
            source="L1",
            bound=_bound("TZ_SHIFT", s.l1_k_count, s.n_ev, TZ_MIN_LB),
        )
    return None


def _generation_time(s: _Sample) -> Verdict | None:
    """GENERATION_TIME, suspected: the L0 signature (the segment's, its site's, or a burst
    stamp over an archive published over years), with pages whose lastmod is ahead of them
    or too few pages to say otherwise (confirmation needs the cross-run history). A
    signature the history rules out (the cluster stood still) is left to the pages,
    unless none of the sampled pages carries a date of its own: pages that cannot judge
    leave a one-stamp lastmod what it looks like, a build stamp."""
    n_ev = s.n_ev
    if not s.signalled:
        return None
    if s.ruled_out and not (s.n_sampled and n_ev == 0):
        return None
    if (
        not s.ruled_out
        and s.archive_days is None
        and not (s.newer_lb >= OVER_REPORTING_LB or n_ev < MIN_N_EV)
    ):
        return None  # an archive stamp stands whatever its pages echo
    l0_part = _cluster_words(s)
    stamps = s.counts[PAGE_STAMP]
    echo = f"; {stamps} carry the stamp or a date shared by most pages" if stamps else ""
    if s.ruled_out:
        return s.verdict(
            "GENERATION_TIME",
            f"{l0_part}; the cluster did not move on every fetch, but none of the "
            f"{s.n_sampled} sampled pages carries a date of its own{echo}: a build stamp, "
            "not the pages' modification times.",
            basis="L0",
            confirmed=False,
            reason_l0=l0_part,
        )
    if s.archive_days is not None:
        return s.verdict(
            "GENERATION_TIME",
            f"{l0_part}, but the sampled pages were published over "
            f"{s.archive_days / 365.25:.1f} years: an archive written over years cannot have "
            f"changed within seconds, so lastmod is a build or generation stamp, whatever the "
            f"pages echo ({n_ev} of {s.n_sampled} sampled pages carry a date of their own"
            f"{echo}).",
            basis="L0+archive",
            confirmed=False,
            reason_l0=l0_part,
        )
    if n_ev < MIN_N_EV:
        reason = (
            f"{l0_part}: suspected from the sitemap alone, unconfirmed (no page of this "
            f"segment was sampled: {s.unsampled})."
            if s.unsampled
            else f"{l0_part}, and only {n_ev} sampled pages carry evidence (< {MIN_N_EV}"
            f"{echo}): suspected from the sitemap alone, unconfirmed."
        )
        return s.verdict(
            "GENERATION_TIME",
            reason,
            basis="L0",
            confirmed=False,
            reason_l0=l0_part,
        )
    return s.verdict(
        "GENERATION_TIME",
        f"{l0_part}, and {s.newer} of {n_ev} sampled pages have an older modification date "
        f"than the lastmod (Wilson lower bound {s.newer_lb:.2f} >= {OVER_REPORTING_LB:.2f}).",
        basis="L0+L1",
        confirmed=False,
        bound=_bound(LASTMOD_NEWER, s.newer, n_ev, OVER_REPORTING_LB),
        reason_l0=l0_part,
    )


def _cluster_words(s: _Sample) -> str:
    """The L0 part of a GENERATION_TIME reason: the segment's cluster, or the site's."""
    site = s.site
    l0 = site.l0 if site is not None else s.l0
    assert l0.cluster_centre is not None
    age_h = (s.t_ref - l0.cluster_centre).total_seconds() / 3600
    side = "before" if age_h >= 0 else "after"
    if s.archive_days is not None and site is None:
        return (
            f"{_pct(l0.burst_share or 0.0)} of {l0.n_lastmod} lastmods fall within "
            f"{NEWS_BURST.seconds} seconds, {abs(age_h):.1f} h {side} the server clock"
        )
    where = (
        f"{_pct(l0.window_share)} of {l0.n_lastmod} lastmods fall in one {l0.window} window "
        f"centred {abs(age_h):.1f} h {side} the server clock"
    )
    if site is None:
        return where
    return (
        f"{_pct(site.in_cluster)} of this segment's {s.l0.n_lastmod} lastmods lie in its "
        f"site's cluster: across the site's {site.segments} segments, {where}"
    )


def _stale(s: _Sample) -> Verdict | None:
    """STALE: enough pages were modified after their lastmod (or it is their publication
    date) for the lower bound of that share to pass ``STALE_LB``."""
    counts, n_ev = s.counts, s.n_ev
    older = counts[LASTMOD_OLDER] + counts[PUBDATE_AS_LASTMOD]
    older_lb = wilson(older, n_ev)[0]
    if not (n_ev and older_lb >= STALE_LB):
        return None
    return s.verdict(
        "STALE",
        f"{older} of {n_ev} sampled pages were modified after their lastmod "
        f"({counts[PUBDATE_AS_LASTMOD]} with lastmod = datePublished; "
        f"Wilson lower bound {older_lb:.2f} >= {STALE_LB:.2f}).",
        bound=_bound("LASTMOD_OLDER+PUBDATE_AS_LASTMOD", older, n_ev, STALE_LB),
    )


def _over_reporting(s: _Sample) -> Verdict | None:
    """OVER_REPORTING: lastmod ahead of the pages, with no generation-time signature."""
    if not (s.n_ev and s.newer_lb >= OVER_REPORTING_LB and not s.suspected):
        return None
    return s.verdict(
        "OVER_REPORTING",
        f"{s.newer} of {s.n_ev} sampled pages have an older modification date than the "
        f"lastmod (Wilson lower bound {s.newer_lb:.2f} >= {OVER_REPORTING_LB:.2f}) and the "
        "sitemap shows no generation-time signature.",
        bound=_bound(LASTMOD_NEWER, s.newer, s.n_ev, OVER_REPORTING_LB),
    )


#: The red-flag and failure-mode rules of :func:`static_verdict`, in the order they are
#: tried; the first that applies gives the verdict, else :func:`_by_agreement` does.
_RULES = (_absent, _invalid, _tz_shift, _generation_time, _stale, _over_reporting)


def _by_agreement(s: _Sample) -> Verdict:
    """No failure mode: PROVISIONAL when the pages agree, else UNVERIFIABLE (or, once the
    sample cannot grow, the two-population OVER_REPORTING); PARTIAL around PROVISIONAL and
    UNVERIFIABLE when too few URLs carry a lastmod: the dated subset is judged, the rest
    is scheduled as untrusted."""
    l0, counts, n_ev = s.l0, s.counts, s.n_ev
    agreeing = counts[AGREE] + (s.tz_counts[s.l1_k] if s.l1_k is not None else 0)
    lo, hi = wilson(agreeing, n_ev)
    bound = _bound("AGREE+TZ_corrected", agreeing, n_ev, PROVISIONAL_LB)
    corrected = (
        f" (incl. {agreeing - counts[AGREE]} after a {s.l1_k:+d} h correction)"
        if (s.l1_k is not None and agreeing > counts[AGREE])
        else ""
    )
    extra: dict[str, Any] = {}
    if n_ev >= MIN_N_EV and lo >= PROVISIONAL_LB and s.build_stamped:
        name = "UNVERIFIABLE"
        reason = _build_echo(s, agreeing, n_ev, corrected, lo)
        extra = {"static_build": list(s.build_stamped)}
    elif n_ev >= MIN_N_EV and lo >= PROVISIONAL_LB:
        name = "PROVISIONAL"
        reason = (
            f"{agreeing} of {n_ev} sampled pages agree{corrected} "
            f"(Wilson lower bound {lo:.2f} >= {PROVISIONAL_LB:.2f})."
        )
    elif n_ev < MIN_N_EV:
        name = "UNVERIFIABLE"
        reason = _too_little_evidence(s)
        extra = {"escalate": _evidence_within_reach(s, l0.n)}
    else:
        name = "UNVERIFIABLE"
        escalate = hi >= PROVISIONAL_LB and s.n_sampled < min(ESCALATED_SAMPLE, l0.n)
        if not escalate:
            two = _two_populations(s, agreeing, corrected)
            if two is not None:
                return two
        tail = (
            f"; escalate the sample to {ESCALATED_SAMPLE} pages."
            if escalate
            else "; no single failure mode is established."
        )
        reason = (
            f"{agreeing} of {n_ev} sampled pages agree{corrected} "
            f"(Wilson lower bound {lo:.2f} < {PROVISIONAL_LB:.2f}){tail}"
        )
        extra = {"escalate": escalate}
    if l0.coverage < PARTIAL_COVERAGE:
        return s.verdict(
            "PARTIAL",
            f"Only {l0.n_lastmod} of {l0.n} URLs ({_pct(l0.coverage)}) carry a lastmod; "
            f"the dated subset is {name}: {reason[0].lower()}{reason[1:]}",
            bound=bound,
            subset_verdict=name,
            subset_reason=reason,
            **extra,
        )
    # TRUSTED needs the cross-run recall bound: it is promoted from PROVISIONAL there,
    # never from a single fetch.
    return s.verdict(name, reason, bound=bound, **extra)


def _build_echo(s: _Sample, agreeing: int, n_ev: int, corrected: str, lo: float) -> str:
    """UNVERIFIABLE's reason when the pages agree on a site built as a whole: its build
    stamps other segments' lastmods, so the same build printed each page's date and its
    lastmod from one value (front matter, a file time), and their agreement cannot show
    that an edit moves the lastmod; only the cross-run audit can."""
    named = ", ".join(s.build_stamped[:3]) + (
        f" and {len(s.build_stamped) - 3} more" if len(s.build_stamped) > 3 else ""
    )
    return (
        f"{agreeing} of {n_ev} sampled pages agree{corrected} (Wilson lower bound "
        f"{lo:.2f} >= {PROVISIONAL_LB:.2f}), but the sitemap that dates them stamps "
        f"{named} with the build time: a static build prints a page's date and its "
        "lastmod from one value, so their agreement cannot show that edits move the "
        "lastmod; the cross-run audit decides."
    )


def _evidence_within_reach(s: _Sample, n_urls: int) -> bool:
    """Whether escalating a sample with fewer than ``MIN_N_EV`` pages of evidence could
    reach them: the segment has pages left to sample, and at the Wilson upper bound of the
    share of the sampled pages read that carried evidence, ``ESCALATED_SAMPLE`` pages would carry
    ``MIN_N_EV``. 0 of 30 (bound 0.11: 7 of 60) is not escalated: a template without page
    dates shows none on 60 pages either, and escalating it cost 30 pages on every
    re-sample of such a segment on bench/realweb (hugo-jena, wp-saint-gilles); 5 of 30
    (0.34: 20) is."""
    wanted = min(ESCALATED_SAMPLE, n_urls)
    if s.n_sampled >= wanted:
        return False
    read = s.n_sampled - s.n_unread  # a page that could not be read says nothing of the rest
    return read <= 0 or wilson(s.n_ev, read)[1] * wanted >= MIN_N_EV


def _too_little_evidence(s: _Sample) -> str:
    """UNVERIFIABLE's reason when fewer than ``MIN_N_EV`` pages carry evidence: why none
    was sampled and how to verify it; else how many could not be read, how many carry a
    stamp, and the page problems of the others."""
    if s.unsampled:
        return f"No page of this segment was sampled: {s.unsampled}."
    unread = f", {s.n_unread} could not be read" if s.n_unread else ""
    if s.counts[PAGE_STAMP]:
        unread += f", {s.counts[PAGE_STAMP]} carry a template or build stamp"
    if s.problems:
        unread += "".join(
            f", {count} {_PROBLEM_TEXT.get(name, name)}"
            for name, count in sorted(s.problems.items(), key=lambda kv: (-kv[1], kv[0]))
        )
    undated = s.counts[NO_LASTMOD]
    of = f"{s.n_sampled - undated} sampled pages" + (" with a lastmod" if undated else "")
    return f"Only {s.n_ev} of {of} carry page evidence (< {MIN_N_EV}{unread})."


def _two_populations(s: _Sample, agreeing: int, corrected: str) -> Verdict | None:
    """OVER_REPORTING from two populations, neither alone over its bar: pages whose lastmod
    agrees and pages whose lastmod is ahead of them (a template or cron bump since their
    last edit), and next to none behind. Such a lastmod moves more often than the pages
    but never stays put when they change."""
    n_ev, newer = s.n_ev, s.newer
    safe = agreeing + newer
    safe_lo = wilson(safe, n_ev)[0]
    if not (safe_lo >= PROVISIONAL_LB and s.newer_lb >= STALE_LB):
        return None
    return s.verdict(
        "OVER_REPORTING",
        f"{agreeing} of {n_ev} sampled pages agree{corrected} and {newer} have an "
        f"older modification date than the lastmod: {safe} of {n_ev} show no change "
        f"after their lastmod (Wilson lower bound {safe_lo:.2f} >= "
        f"{PROVISIONAL_LB:.2f}; ahead of the page: {s.newer_lb:.2f} >= "
        f"{STALE_LB:.2f}), so lastmod moves more often than the pages but does not "
        "miss their changes.",
        bound=_bound("AGREE+TZ_corrected+LASTMOD_NEWER", safe, n_ev, PROVISIONAL_LB),
    )
