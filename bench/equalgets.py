"""The refetch choice against two baselines at equal GETs (issue 35), for both benchmarks.

Per segment and run (runs 1..), from the truth:

* ``changes``: the segment's pages listed at the run before and at this one whose content
  changed between the two;
* ``listed``: the segment's pages listed at both runs (N: what a refetch can choose from;
  a new page is fetched by every policy);
* ``fetched``: how many of those the spider fetched on the run (k), and ``caught``: how
  many of its fetches were a change of that run;
* ``uniform``: what a uniform random draw of k of the N pages catches in expectation,
  k / N x changes (no random numbers: the expectation);
* ``poisson``: what a rate-ordered choice of the same k pages catches (Poisson-only,
  :class:`RateOrder`: each page's change probability since its own last fetch from the rate
  its own fetches showed, the k most likely).

Summed per site and per segment class, :class:`Catch` gives ``caught / uniform`` (the
issue's target: at least 2 x on every site with 5 or more changes) and ``caught /
poisson``. Shared by ``bench/realweb`` (its ``recorded`` fetches: the pages the spider
chose, not those link following fetched for coverage) and ``bench/simweb`` (every page
GET).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Collection, Hashable, Iterable, Mapping

#: The Poisson baseline's rate bounds, per day (as bench/simweb's ``poisson_only``).
LAMBDA_MIN, LAMBDA_MAX = 0.0005, 7.0
#: One pseudo interval of each kind, in days (as bench/simweb's ``poisson_only``).
PSEUDO = 0.5
DAY = 86400.0


def uniform_expected(fetched: int, listed: int, changes: int) -> float:
    """The changes a uniform random draw of ``fetched`` of ``listed`` pages catches, in
    expectation.

    >>> uniform_expected(3, 12, 4)
    1.0
    >>> uniform_expected(0, 0, 0)
    0.0
    """
    if listed <= 0:
        return 0.0
    return min(fetched, listed) / listed * changes


def mle_rate(changed: Iterable[float], unchanged: float) -> float:
    """λ̂ per day from the intervals (days) over which a change was seen and the days over
    which none was, with one pseudo interval of each kind (``PSEUDO``): the root of
    Σ_changed τ / (e^{λτ} - 1) = Σ_unchanged τ, by bisection on a log scale.

    >>> round(mle_rate([], 0.0), 3)  # the pseudo intervals alone
    1.386
    >>> mle_rate([1.0, 1.0, 1.0], 0.0) > mle_rate([1.0], 10.0)
    True
    """
    taus = [t for t in changed if t > 0] + [PSEUDO]
    rhs = unchanged + PSEUDO
    lo, hi = math.log(LAMBDA_MIN), math.log(LAMBDA_MAX)
    for _ in range(40):
        mid = (lo + hi) / 2
        lam = math.exp(mid)
        left = sum(t / math.expm1(lam * t) if lam * t < 700 else 0.0 for t in taus)
        if left > rhs:  # the left side falls with λ: λ is too small
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def _tie(page: Hashable) -> bytes:
    return hashlib.blake2b(repr(page).encode(), digest_size=8).digest()


@dataclass
class _Page:
    time: float  # the baseline's last fetch, seconds
    version: int  # the version it got then
    changed: list[float] = field(default_factory=list)  # days
    unchanged: float = 0.0  # days


class RateOrder:
    """Poisson-only at a given count: a replay of its own fetch history on the truth.

    A page is fetched when first seen (as every policy fetches a new page). On each later
    run, :meth:`choose` picks the ``count`` pages with the highest 1 - e^(-λ̂Δt), λ̂ from
    the page's own fetches (:func:`mle_rate`), Δt since its own last fetch (ties by a hash
    of the page, not by its order), and records what those fetches saw.

    >>> order = RateOrder()
    >>> order.see({"a": 0, "b": 0}, 0.0)
    >>> sorted(order.choose(["a", "b"], 1, DAY, {"a": 1, "b": 0}))  # no history: the hash
    ['b']
    """

    def __init__(self) -> None:
        self._pages: dict[Hashable, _Page] = {}

    def see(self, versions: Mapping[Hashable, int], now: float) -> None:
        """Fetch the pages seen for the first time (``versions``: the live ones)."""
        for page, version in versions.items():
            if page not in self._pages:
                self._pages[page] = _Page(now, version)

    def choose(
        self,
        candidates: Collection[Hashable],
        count: int,
        now: float,
        versions: Mapping[Hashable, int],
    ) -> set[Hashable]:
        """The ``count`` candidates most likely changed since their last fetch; fetches
        them (``versions``: their live version now)."""
        scored = []
        for page in candidates:
            state = self._pages.get(page)
            if state is None:
                continue
            age = max(0.0, (now - state.time) / DAY)
            p = -math.expm1(-mle_rate(state.changed, state.unchanged) * age)
            scored.append((-p, _tie(page), page))
        scored.sort(key=lambda row: row[:2])
        chosen = {page for _, _, page in scored[: max(0, count)]}
        for page in chosen:
            state = self._pages[page]
            age = max(0.0, (now - state.time) / DAY)
            if versions[page] != state.version:
                state.changed.append(age)
            else:
                state.unchanged += age
            state.time, state.version = now, versions[page]
        return chosen


@dataclass
class Catch:
    """Changes caught at equal GETs, summed over segment-runs."""

    changes: int = 0
    listed: int = 0
    fetched: int = 0
    caught: int = 0
    uniform: float = 0.0
    poisson: int = 0

    def add(self, other: Catch) -> None:
        self.changes += other.changes
        self.listed += other.listed
        self.fetched += other.fetched
        self.caught += other.caught
        self.uniform += other.uniform
        self.poisson += other.poisson

    @property
    def x_uniform(self) -> float | None:
        """Changes caught ÷ uniform random's expectation (None when it expects none)."""
        return self.caught / self.uniform if self.uniform > 0 else None

    @property
    def x_poisson(self) -> float | None:
        """Changes caught ÷ Poisson-only's at the same counts (None when it caught none)."""
        return self.caught / self.poisson if self.poisson > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "changes": self.changes,
            "listed": self.listed,
            "fetched": self.fetched,
            "caught": self.caught,
            "uniform": round(self.uniform, 3),
            "poisson": self.poisson,
            "x_uniform": None if self.x_uniform is None else round(self.x_uniform, 3),
            "x_poisson": None if self.x_poisson is None else round(self.x_poisson, 3),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Catch:
        return cls(
            int(data["changes"]),
            int(data["listed"]),
            int(data["fetched"]),
            int(data["caught"]),
            float(data["uniform"]),
            int(data["poisson"]),
        )


class Tally:
    """One site's :class:`Catch` sums: the whole site, per segment class, per segment."""

    def __init__(self) -> None:
        self.site = Catch()
        self.by_class: dict[str, Catch] = {}
        self.by_segment: dict[str, Catch] = {}

    def add(self, segment: str, cls: str, catch: Catch) -> None:
        self.site.add(catch)
        self.by_segment.setdefault(segment, Catch()).add(catch)
        self.by_class.setdefault(cls, Catch()).add(catch)

    def to_json(self) -> dict[str, Any]:
        return {
            "site": self.site.to_json(),
            "by_class": {c: v.to_json() for c, v in sorted(self.by_class.items())},
            "by_segment": {s: v.to_json() for s, v in sorted(self.by_segment.items())},
        }


def score_run(
    segment_of: Mapping[Hashable, str],
    before: Mapping[Hashable, int],
    now_versions: Mapping[Hashable, int],
    fetched: Collection[Hashable],
    *,
    order: RateOrder,
    now: float,
) -> dict[str, Catch]:
    """One run's :class:`Catch` per segment. ``segment_of``: the segment of each page
    listed now; ``before`` / ``now_versions``: the live version of each page listed at the
    run before / now; ``fetched``: the pages the spider fetched on this run; ``order``:
    the Poisson baseline, advanced by this run (new pages are seen after the choice)."""
    old: dict[str, list[Hashable]] = {}
    for page, segment in segment_of.items():
        if page in before and page in now_versions:
            old.setdefault(segment, []).append(page)
    out: dict[str, Catch] = {}
    for segment, pages in sorted(old.items()):
        changed = {p for p in pages if now_versions[p] != before[p]}
        got = [p for p in pages if p in fetched]
        chosen = order.choose(pages, len(got), now, now_versions)
        out[segment] = Catch(
            changes=len(changed),
            listed=len(pages),
            fetched=len(got),
            caught=sum(1 for p in got if p in changed),
            uniform=uniform_expected(len(got), len(pages), len(changed)),
            poisson=len(chosen & changed),
        )
    order.see(now_versions, now)
    return out
