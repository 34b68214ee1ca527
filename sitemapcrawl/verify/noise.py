"""Lastmod verification: the fingerprint's noise floor, measured on the site itself.

docs/verification.md, "Noise floor". A page whose fingerprint moved while its lastmod
stood still is a miss only if the fingerprint means something on that site. On a site
whose pages are rendered anew on every request (counters, tokens, rotating boxes no mask
or class list knows), every fetch differs and every unmoved lastmod would look like a
miss. So when a run finds would-be misses on a site, it fetches a few of those pages
again at once (:data:`PROBES`): a page changed since our last fetch is the same seconds
later; a page that differs again differs on every fetch. When :data:`VOLATILE` of the
pages fetched again differ, the site's fingerprints carry no content evidence on this run:
its changed pages are neither misses nor true positives, and the verdict says so. Pure
code (never scrapy or twisted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["PROBES", "VOLATILE", "NoiseFloor"]

#: Would-be misses of a site fetched again at once, at most, on a run.
PROBES = 3

#: Pages fetched again that must differ for the site's pages to differ on every fetch.
VOLATILE = 2


@dataclass(slots=True)
class _Site:
    chosen: set[str] = field(default_factory=set)
    probed: int = 0
    differed: int = 0


class NoiseFloor:
    """The noise probes of one run, per site (host).

    >>> floor = NoiseFloor()
    >>> floor.choose({"s": ["c", "a", "b", "d"]}, key=str)
    [('s', 'a'), ('s', 'b'), ('s', 'c')]
    >>> floor.choose({"s": ["e"]}, key=str)  # three chosen already
    []
    >>> for differed in (True, False, True):
    ...     floor.record("s", differed)
    >>> floor.volatile("s"), floor.measured("s"), floor.volatile("other")
    (True, (2, 3), False)
    """

    __slots__ = ("_sites",)

    def __init__(self) -> None:
        self._sites: dict[str, _Site] = {}

    def choose(
        self, candidates: Mapping[str, Iterable[str]], key: Callable[[str], float | str]
    ) -> list[tuple[str, str]]:
        """(site, url) of the pages to fetch again: per site, the first by ``key`` (a seeded
        draw) among its ``candidates`` (would-be misses), up to :data:`PROBES` a run."""
        chosen = []
        for site, urls in sorted(candidates.items()):
            state = self._sites.setdefault(site, _Site())
            room = PROBES - len(state.chosen)
            for url in sorted((u for u in urls if u not in state.chosen), key=key)[:room]:
                state.chosen.add(url)
                chosen.append((site, url))
        return chosen

    def record(self, site: str, differed: bool) -> None:
        """One page fetched again: whether it differed from this run's first fetch."""
        state = self._sites.setdefault(site, _Site())
        state.probed += 1
        state.differed += differed

    def volatile(self, site: str) -> bool:
        """Whether ``site``'s pages differ on every fetch (:data:`VOLATILE` probes did)."""
        state = self._sites.get(site)
        return state is not None and state.differed >= VOLATILE

    def measured(self, site: str) -> tuple[int, int] | None:
        """(pages that differed, pages fetched again) on ``site`` this run, if any."""
        state = self._sites.get(site)
        return (state.differed, state.probed) if state is not None and state.probed else None
