"""Per-page learning from our own fetches: a page's own change share, its co-changes, and
how often its lastmod moves came with a change.

docs/verification.md, "Learning per page". Each fetch of a page that we had fetched
before adds one observation to its :class:`PageRecord`: whether the content changed, and
whether its lastmod had moved since our previous fetch. From them:

* :func:`changes_every_run`: a page that changed in many of its own fetches is fetched
  on every run, whatever its segment's rate or its lastmod (a list page, a feed or a
  search index that changes without its lastmod moving): the Beta(1, 1) posterior mean of
  its change share, (c + 1) / (n + 2), at least ``Policy.page_share`` with at least
  ``Policy.page_min_changes`` changes;
* :func:`co_changed`: the pages that changed on the same runs as a page found changed on
  this run, at least ``Policy.cochange_min`` times before (a release's pages, a section
  list and its children): fetched in the same run (``cochange``);
* :func:`stops_following`: a page whose lastmod moves, fetched at least ``min_moves``
  times, came with a change in a posterior share under θ (a section page dated by its
  newest member): its moves are not followed (off by default,
  ``SITEMAPCRAWL_INCREMENTAL_MOVE_LEARNER``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "CHANGE_RUNS",
    "PageRecord",
    "changes_every_run",
    "co_changed",
    "own_share",
    "stops_following",
]

#: The runs kept per page on which our fetch found its content changed (the latest ones).
CHANGE_RUNS = 8


@dataclass(frozen=True, slots=True)
class PageRecord:
    """What our fetches of one page showed: ``fetches`` compared with the one before and
    ``changed`` of them; ``unmoved``: those where its lastmod had not moved since, and
    ``unmoved_changed``; ``moves``: those after a move, and ``moves_changed``;
    ``change_runs``: the runs whose fetch found a change (at most :data:`CHANGE_RUNS`)."""

    fetches: int = 0
    changed: int = 0
    unmoved: int = 0
    unmoved_changed: int = 0
    moves: int = 0
    moves_changed: int = 0
    change_runs: tuple[int, ...] = ()

    def observe(self, run_id: int, *, changed: bool, moved: bool) -> PageRecord:
        """This record with one more fetch.

        >>> rec = PageRecord().observe(3, changed=True, moved=False)
        >>> rec = rec.observe(4, changed=False, moved=True)
        >>> rec.fetches, rec.changed, rec.unmoved_changed, rec.moves, rec.change_runs
        (2, 1, 1, 1, (3,))
        """
        runs = self.change_runs
        if changed and run_id not in runs:
            runs = (*runs, run_id)[-CHANGE_RUNS:]
        return replace(
            self,
            fetches=self.fetches + 1,
            changed=self.changed + changed,
            unmoved=self.unmoved + (not moved),
            unmoved_changed=self.unmoved_changed + (changed and not moved),
            moves=self.moves + moved,
            moves_changed=self.moves_changed + (changed and moved),
            change_runs=runs,
        )

    def to_json(self) -> str:
        """The compact form the state file keeps (``urls.learned``)."""
        return json.dumps(
            [
                self.fetches,
                self.changed,
                self.unmoved,
                self.unmoved_changed,
                self.moves,
                self.moves_changed,
                list(self.change_runs),
            ],
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> PageRecord:
        """The record :meth:`to_json` wrote (an empty one for None).

        >>> rec = PageRecord(2, 1, 1, 1, 1, 0, (7,))
        >>> PageRecord.from_json(rec.to_json()) == rec, rec.to_json()
        (True, '[2,1,1,1,1,0,[7]]')
        """
        if not text:
            return cls()
        fetches, changed, unmoved, unmoved_changed, moves, moves_changed, runs = json.loads(text)
        return cls(
            int(fetches),
            int(changed),
            int(unmoved),
            int(unmoved_changed),
            int(moves),
            int(moves_changed),
            tuple(int(r) for r in runs),
        )


def own_share(changed: int, observed: int) -> float:
    """The Beta(1, 1) posterior mean of a share: (changed + 1) / (observed + 2).

    >>> own_share(5, 10)
    0.5
    >>> own_share(0, 0)
    0.5
    """
    return (changed + 1) / (observed + 2)


def changes_every_run(
    record: PageRecord, *, trusting: bool, share: float, min_changes: int
) -> bool:
    """Whether a page changed in enough of its own fetches to be fetched on every run.
    ``trusting``: its segment's lastmod drives refetches, so only the fetches where it did
    not move count (a change a move reported is fetched anyway).

    >>> rec = PageRecord(fetches=10, changed=5, unmoved=4, unmoved_changed=1)
    >>> changes_every_run(rec, trusting=False, share=0.5, min_changes=2)
    True
    >>> changes_every_run(rec, trusting=True, share=0.5, min_changes=2)
    False
    """
    if trusting:
        changed, observed = record.unmoved_changed, record.unmoved
    else:
        changed, observed = record.changed, record.fetches
    return changed >= min_changes and own_share(changed, observed) >= share


def stops_following(record: PageRecord, *, theta: float, min_moves: int = 2) -> bool:
    """Whether a page's lastmod moves are no longer worth a fetch: ``min_moves`` or more
    fetched, and the posterior share of them that came with a change under ``theta``
    (bench/realweb's ``whatif.py`` replays it on the truth).

    >>> stops_following(PageRecord(moves=2, moves_changed=0), theta=0.3)
    True
    >>> stops_following(PageRecord(moves=2, moves_changed=1), theta=0.3)
    False
    >>> stops_following(PageRecord(moves=1, moves_changed=0), theta=0.3)
    False
    """
    return record.moves >= min_moves and own_share(record.moves_changed, record.moves) < theta


def co_changed(
    changed_now: Iterable[tuple[int, ...]],
    others: Mapping[str, tuple[int, ...]],
    *,
    run_id: int,
    min_common: int,
) -> set[str]:
    """The pages of ``others`` (url -> its change runs) that changed on at least
    ``min_common`` of the same earlier runs as one of the pages found changed on this run
    (``changed_now``: their change runs; run ``run_id`` itself is not counted).

    >>> co_changed([(2, 5, 9)], {"a": (2, 5), "b": (5,), "c": (1, 3)}, run_id=9, min_common=2)
    {'a'}
    """
    earlier = [{r for r in runs if r != run_id} for runs in changed_now]
    earlier = [runs for runs in earlier if len(runs) >= min_common]
    if not earlier:
        return set()
    out = set()
    for url, runs in others.items():
        mine = {r for r in runs if r != run_id}
        if len(mine) >= min_common and any(len(mine & theirs) >= min_common for theirs in earlier):
            out.add(url)
    return out
