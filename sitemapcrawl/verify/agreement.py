"""Lastmod verification, L1: the agreement test of one sampled page.

docs/verification.md, "L1: the agreement test". :func:`agreement` compares a page's
lastmod with the modification date the page declares itself
(:mod:`sitemapcrawl.verify.pagedates`) and names the outcome: AGREE, LASTMOD_NEWER,
LASTMOD_OLDER, ``TZ_SHIFT:<k>``, PUBDATE_AS_LASTMOD, FUTURE, LAGGED, NO_EVIDENCE,
NO_LASTMOD. The outcome names are defined here, with the two the pipeline adds
(REDIRECT_OFFSITE, and PAGE_STAMP for a page whose date is a stamp,
:mod:`sitemapcrawl.verify.stamps`). Standard library only.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from sitemapcrawl.verify.intervals import (
    _TIME_PRECISIONS,
    _add,
    _hour_shift,
    _utc,
    lastmod_interval,
)
from sitemapcrawl.verify.thresholds import FUTURE_SLACK, MAX_LAG, PUBDATE_GAP, TAU

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime, timedelta

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "AGREE",
    "FUTURE",
    "LAGGED",
    "LASTMOD_NEWER",
    "LASTMOD_OLDER",
    "NO_EVIDENCE",
    "NO_LASTMOD",
    "PAGE_STAMP",
    "PUBDATE_AS_LASTMOD",
    "REDIRECT_OFFSITE",
    "TZ_SHIFT",
    "agreement",
    "outcome_counts",
]


AGREE = "AGREE"


LASTMOD_NEWER = "LASTMOD_NEWER"


LASTMOD_OLDER = "LASTMOD_OLDER"


TZ_SHIFT = "TZ_SHIFT"  # reported as "TZ_SHIFT:<k>", k signed hours


PUBDATE_AS_LASTMOD = "PUBDATE_AS_LASTMOD"


FUTURE = "FUTURE"


#: A sampled page that redirects to another host (the pipeline's outcome, not agreement's).
REDIRECT_OFFSITE = "REDIRECT_OFFSITE"


NO_EVIDENCE = "NO_EVIDENCE"


NO_LASTMOD = "NO_LASTMOD"


LAGGED = "LAGGED"  # LASTMOD_OLDER, but the page changed after the sitemap was built


#: A sampled page whose date is a template or build stamp (``page_stamps``): no evidence.
PAGE_STAMP = "PAGE_STAMP"


def agreement(
    lastmod: LastMod | None,
    modified: LastMod | None,
    published: LastMod | None,
    t_ref: datetime,
    *,
    tau: timedelta = TAU,
    built: datetime | None = None,
) -> str:
    """Compare one page's lastmod with its own evidence (docs/verification.md, "L1: the
    agreement test").

    ``modified`` is the page's usable modification date, chosen by the caller (its
    declared one, else an HTTP ``Last-Modified`` that is not the render time);
    ``published`` is the page's ``datePublished``. Both sides are
    widened by :func:`lastmod_interval`. Checked in this order: NO_LASTMOD;
    ``TZ_SHIFT:<k>`` (disjoint intervals, both timestamps, and the lastmod is
    k hours, 1 ≤ |k| ≤ 14, within 2 min, after the evidence); FUTURE (t_lo >
    t_ref + 15 min); NO_EVIDENCE; AGREE (intervals meet); PUBDATE_AS_LASTMOD
    (the lastmod meets ``published`` while the evidence is over a day after
    it); LASTMOD_NEWER; LAGGED (older, and the evidence is after ``built``, the
    sitemap file's ``Last-Modified``); LASTMOD_OLDER.

    >>> from datetime import UTC, datetime
    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod as p
    >>> now = datetime(2024, 6, 1, tzinfo=UTC)
    >>> agreement(p("2024-05-01"), p("2024-05-01T20:00:00Z"), None, now)
    'AGREE'
    >>> agreement(p("2024-05-01T15:00:00Z"), p("2024-05-01T10:00:00Z"), None, now)
    'TZ_SHIFT:5'
    >>> agreement(p("2024-01-01T09:00:00Z"), p("2024-05-01T10:07:00Z"), None, now)
    'LASTMOD_OLDER'
    >>> built = datetime(2024, 5, 31, 6, tzinfo=UTC)  # the page changed after the sitemap
    >>> agreement(p("2024-01-01T09:00:00Z"), p("2024-05-31T10:07:00Z"), None, now, built=built)
    'LAGGED'
    >>> agreement(p("2024-05-20T09:00:00Z"), None, None, now)
    'NO_EVIDENCE'
    """
    if lastmod is None or lastmod.value is None:
        return NO_LASTMOD
    t_ref = _utc(t_ref)
    l_lo, l_hi = lastmod_interval(lastmod, tau)
    evidence = None
    if modified is not None and modified.value is not None:
        e_lo, e_hi = lastmod_interval(modified, tau)
        evidence = (e_lo, e_hi, _utc(modified.value))
        meets = l_lo <= e_hi and e_lo <= l_hi
        if (
            not meets
            and lastmod.precision in _TIME_PRECISIONS
            and modified.precision in _TIME_PRECISIONS
        ):
            k = _hour_shift((_utc(lastmod.value) - evidence[2]).total_seconds())
            if k is not None:
                return f"{TZ_SHIFT}:{k}"
    if l_lo > _add(t_ref, FUTURE_SLACK):
        return FUTURE
    if evidence is None:
        return NO_EVIDENCE
    e_lo, e_hi, e_value = evidence
    if l_lo <= e_hi and e_lo <= l_hi:
        return AGREE
    if published is not None and published.value is not None and l_hi < e_lo:
        p_lo, p_hi = lastmod_interval(published, tau)
        if l_lo <= p_hi and p_lo <= l_hi and e_value - _utc(published.value) > PUBDATE_GAP:
            return PUBDATE_AS_LASTMOD
    if l_lo > e_hi:
        return LASTMOD_NEWER
    if built is not None and e_lo > _utc(built) and t_ref - _utc(built) <= MAX_LAG:
        return LAGGED
    return LASTMOD_OLDER


def _tz_k(outcome: str) -> int | None:
    if outcome.startswith(TZ_SHIFT + ":"):
        try:
            return int(outcome[len(TZ_SHIFT) + 1 :])
        except ValueError:
            return None
    return None


def outcome_counts(outcomes: Iterable[str]) -> dict[str, int]:
    """Count outcomes, folding every ``TZ_SHIFT:<k>`` into ``TZ_SHIFT``.

    >>> outcome_counts(["AGREE", "TZ_SHIFT:2", "TZ_SHIFT:-3", "AGREE"])
    {'AGREE': 2, 'TZ_SHIFT': 2}
    """
    counts: Counter[str] = Counter()
    for outcome in outcomes:
        counts[TZ_SHIFT if _tz_k(outcome) is not None else outcome] += 1
    return dict(counts)
