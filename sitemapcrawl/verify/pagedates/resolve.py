"""Page dates: the choice of the page's modification date among the candidates.

docs/verification.md, "Page dates": the candidates sorted by priority, the first eligible
main-entity one (parsed, not a sentinel, not in the future, not before publication, not the
render time) is ``best_modified``, and the problems they show are recorded.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from sitemapcrawl.verify.pagedates.declared import (
    _MAX_OTHER,
    DateEvidence,
    PageEvidence,
    _Cand,
    _Found,
)

if TYPE_CHECKING:
    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "NOW_WINDOW",
]


#: A minute-or-finer date this close to the response ``Date`` is "now".
NOW_WINDOW = dt.timedelta(minutes=2)


_FINE = frozenset({"minute", "second", "fraction"})


def _eligible(ev: DateEvidence) -> bool:
    lm = ev.value
    return (
        ev.main_entity
        and lm is not None
        and lm.value is not None
        and "sentinel" not in lm.flags
        and "future" not in lm.flags
    )


def _is_now(ev: DateEvidence, ref: dt.datetime | None) -> bool:
    lm = ev.value
    if ref is None or lm is None or lm.value is None or lm.precision not in _FINE:
        return False
    return abs(lm.value - ref) <= NOW_WINDOW


def _resolve(
    found: _Found,
    *,
    now_ref: dt.datetime | None,
    http_lm: LastMod | None,
    http_date: LastMod | None,
    etag: str | None,
    fingerprint: str,
    text_length: int,
    content: str = "",
) -> PageEvidence:
    mod, pub, problems = found.mod, found.pub, found.problems

    def key(c: _Cand) -> tuple[int, float, int, int]:
        # Main structured dates: latest first (a WebPage and its Article may disagree).
        latest = 0.0
        if c.tier == 0 and c.ev.value is not None and c.ev.value.value is not None:
            latest = -c.ev.value.value.timestamp()
        return (c.tier, latest, c.rank, c.order)

    modified = [c.ev for c in sorted(mod, key=key)]
    published = [c.ev for c in sorted(pub, key=key)]
    main_mod = [m for m in modified if m.main_entity]
    main_mod = main_mod + [m for m in modified if not m.main_entity][:_MAX_OTHER]
    published = [p for p in published if p.main_entity] + [
        p for p in published if not p.main_entity
    ][:_MAX_OTHER]
    modified = main_mod

    for ev in modified:
        if not ev.main_entity or ev.value is None:
            continue
        if "invalid" in ev.value.flags:
            problems.add("invalid_modified")
        if "future" in ev.value.flags:
            problems.add("future_modified")

    first_pub = next((p for p in published if _eligible(p)), None)
    floor = None
    if first_pub is not None and first_pub.value is not None and first_pub.value.value is not None:
        floor = first_pub.value.value - dt.timedelta(days=1)

    best: DateEvidence | None = None
    now_like = False
    first = True
    for ev in modified:
        if not _eligible(ev):
            continue
        assert ev.value is not None
        assert ev.value.value is not None
        if floor is not None and ev.value.value < floor:
            problems.add("modified_before_published")
            continue
        if _is_now(ev, now_ref):
            now_like = now_like or first
            first = False
            continue
        first = False
        best = ev
        break
    if best is not None:
        modified.remove(best)
        modified.insert(0, best)
    if now_like:
        problems.add("now_modified")
    return PageEvidence(
        modified=tuple(modified),
        published=tuple(published),
        best_modified=best,
        now_like=now_like,
        http_last_modified=http_lm,
        http_date=http_date,
        etag=etag,
        fingerprint=fingerprint,
        text_length=text_length,
        problems=tuple(sorted(problems)),
        content=content,
    )
