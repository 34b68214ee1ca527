"""Lastmod verification: which pages of a segment the L1 agreement test fetches.

Pure Python, standard library only; never imports scrapy or twisted. The design:
docs/verification.md, "Sampling".

* about 30 pages per segment (``budget``), at most about 150 per site
  (:func:`allocate`); escalate to 60 when a Wilson interval straddles a
  threshold: a sampler made with ``reserve`` keeps ``budget + reserve``
  candidates per stratum, and ``sample(budget + reserve)`` extends the first
  sample (the caller fetches the pages it does not have yet);
* strata by lastmod age relative to the server clock, with fixed shares:
  ``recent`` (<= 7 days, future values included) 40 %, ``year`` (7 days - 1
  year) 30 %, ``old`` (> 1 year) 30 %, and ``none`` (no or unparseable
  lastmod) 10 % of the budget clamped to 5-10 pages. The share of an empty
  stratum, and whatever a stratum cannot fill, goes to the others;
* a fixed panel of ``panel`` (about 10) URLs re-fetched every run, counted
  within the budget;
* reproducible: every URL gets a 64-bit hash of ``(seed, url)`` and each
  stratum keeps its ``budget`` smallest hashes (bottom-k sampling), the panel
  the ``panel`` smallest over the whole segment. The sample therefore depends
  on the set of URLs and the seed, not on their order, and adding or removing
  URLs only changes the panel where a new hash is smaller.

Memory is O(budget + panel) per segment whatever the number of URLs.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import LastMod, parse_lastmod

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "STRATA",
    "SampledUrl",
    "SegmentSampler",
    "allocate",
    "fpc_sample_size",
    "stratified_proportion",
    "url_hash",
]

STRATA: tuple[str, ...] = ("recent", "year", "old", "none")
SHARES: dict[str, float] = {"recent": 0.4, "year": 0.3, "old": 0.3}
NONE_SHARE = 0.1
NONE_MIN = 5
NONE_MAX = 10
RECENT_AGE = timedelta(days=7)
YEAR_AGE = timedelta(days=365)
DEFAULT_BUDGET = 30
DEFAULT_PANEL = 10
DEFAULT_SITE_BUDGET = 150


def url_hash(seed: str, url: str) -> int:
    """A stable 64-bit hash of ``(seed, url)`` (BLAKE2b, not Python's ``hash``).

    >>> url_hash("site", "https://a.example/") == url_hash("site", "https://a.example/")
    True
    >>> url_hash("site", "https://a.example/") == url_hash("other", "https://a.example/")
    False
    """
    return _keyed_hash(_seed_key(seed), url)


def _seed_key(seed: str) -> bytes:
    return hashlib.blake2b(seed.encode("utf-8", "surrogatepass"), digest_size=32).digest()


def _keyed_hash(key: bytes, url: str) -> int:
    digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8, key=key).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True)
class SampledUrl:
    """One sampled page: its stratum, its lastmod and whether it is in the panel."""

    url: str
    stratum: str
    lastmod: LastMod | None
    in_panel: bool


class _BottomK:
    """The k entries with the smallest ``(hash, url)`` seen so far."""

    __slots__ = ("_heap", "_k", "_urls")

    def __init__(self, k: int) -> None:
        self._k = k
        # Max-heap through negated hashes; the url breaks (rare) hash ties.
        self._heap: list[tuple[int, _Neg, LastMod | None]] = []
        self._urls: set[str] = set()

    def offer(self, h: int, url: str, lastmod: LastMod | str | None) -> None:
        """Keep ``url`` if its ``(hash, url)`` is among the k smallest; a lastmod given as
        its raw text is parsed only then (most URLs are not kept)."""
        if self._k <= 0 or url in self._urls:
            return
        heap = self._heap
        if len(heap) >= self._k:
            top, top_url, _ = heap[0]
            if -h < top or (-h == top and url >= top_url.url):
                return  # not among the k smallest: the common case
        kept = parse_lastmod(lastmod) if isinstance(lastmod, str) else lastmod
        entry = (-h, _Neg(url), kept)
        if len(heap) < self._k:
            heapq.heappush(heap, entry)
            self._urls.add(url)
        else:
            _, dropped, _ = heapq.heapreplace(heap, entry)
            self._urls.discard(dropped.url)
            self._urls.add(url)

    def update(self, other: _BottomK) -> None:
        """Keep the k smallest of both: the same as if ``other``'s URLs had been offered here."""
        for h, url, lastmod in other.items():
            self.offer(h, url, lastmod)

    def items(self) -> list[tuple[int, str, LastMod | None]]:
        """Entries by increasing ``(hash, url)``."""
        return sorted((-h, neg.url, lm) for h, neg, lm in self._heap)

    def __len__(self) -> int:
        return len(self._heap)


class _Neg:
    """A url ordered backwards, so the max-heap keeps the smallest ``(hash, url)``."""

    __slots__ = ("url",)

    def __init__(self, url: str) -> None:
        self.url = url

    def __lt__(self, other: _Neg) -> bool:
        return self.url > other.url

    def __gt__(self, other: _Neg) -> bool:
        return self.url < other.url

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Neg) and self.url == other.url

    def __hash__(self) -> int:
        return hash(self.url)


class SegmentSampler:
    """Streaming, seeded, stratified sample of one segment's URLs.

    Call :meth:`offer` once per URL as entries stream by, then
    :meth:`sample`. ``now`` is the server clock used for the age strata. A URL
    offered twice keeps its first offer.

    >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
    >>> now = datetime(2024, 6, 1, tzinfo=UTC)
    >>> sampler = SegmentSampler("example.com/posts", budget=10, panel=3, now=now)
    >>> for i in range(100):
    ...     sampler.offer(f"https://example.com/p{i}", parse_lastmod(f"2024-05-{i % 28 + 1:02d}"))
    ...     sampler.offer(f"https://example.com/old{i}", parse_lastmod("2019-01-02"))
    >>> picked = sampler.sample()
    >>> len(picked), sum(s.in_panel for s in picked)
    (10, 3)
    >>> sampler.population()
    {'recent': 12, 'year': 88, 'old': 100, 'none': 0}
    >>> sampler.targets()
    {'recent': 4, 'year': 3, 'old': 3, 'none': 0}
    """

    def __init__(
        self,
        seed: str,
        budget: int = DEFAULT_BUDGET,
        panel: int = DEFAULT_PANEL,
        *,
        now: datetime,
        reserve: int = 0,
    ) -> None:
        if budget < 0 or panel < 0 or reserve < 0:
            raise ValueError(
                f"budget, panel and reserve must be >= 0, got {budget}, {panel} and {reserve}"
            )
        self.seed = seed
        self._key = _seed_key(seed)
        self.budget = budget
        self.reserve = reserve
        self.panel = min(panel, budget)
        now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
        self.now = now
        self._recent_from = now - RECENT_AGE
        self._year_from = now - YEAR_AGE
        self._strata = {name: _BottomK(budget + reserve) for name in STRATA}
        self._panel = _BottomK(self.panel)
        self._population = dict.fromkeys(STRATA, 0)

    def stratum(self, lastmod: LastMod | None) -> str:
        """The stratum of a lastmod relative to ``now``.

        >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
        >>> s = SegmentSampler("x", now=datetime(2024, 6, 1, tzinfo=UTC))
        >>> [s.stratum(parse_lastmod(t)) for t in ("2024-05-30", "2024-01-01", "2020-01-02", "?")]
        ['recent', 'year', 'old', 'none']
        """
        value = None if lastmod is None else lastmod.value
        if value is None:
            return "none"
        if value >= self._recent_from:
            return "recent"
        if value >= self._year_from:
            return "year"
        return "old"

    def update(self, other: SegmentSampler) -> None:
        """Take in the URLs another worker's sampler of the same segment (same seed) was
        offered: the sample is the one a single sampler offered both streams would draw
        (bottom-k by keyed hash), the strata as each side's clock put them.

        >>> now = datetime(2024, 6, 1, tzinfo=UTC)
        >>> whole, a, b = (SegmentSampler("s", budget=4, panel=2, now=now) for _ in range(3))
        >>> for i in range(40):
        ...     url = f"https://example.com/p{i}"
        ...     whole.offer(url, None)
        ...     (a if i % 3 else b).offer(url, None)
        >>> a.update(b)
        >>> a.sample() == whole.sample(), a.population() == whole.population()
        (True, True)
        """
        if other.seed != self.seed:
            raise ValueError(f"samplers of different seeds: {self.seed!r}, {other.seed!r}")
        for name, part in other._strata.items():
            self._strata[name].update(part)
            self._population[name] += other._population[name]
        self._panel.update(other._panel)

    def offer(self, url: str, lastmod: LastMod | None) -> None:
        """Consider one URL of the segment (call once per URL)."""
        h = _keyed_hash(self._key, url)
        name = self.stratum(lastmod)
        self._population[name] += 1
        self._strata[name].offer(h, url, lastmod)
        self._panel.offer(h, url, lastmod)

    def offer_exported(self, url: str, iso: str | None, raw: str | None) -> None:
        """:meth:`offer` for a URL item's lastmod as exported: its ISO text (UTC, exact to
        the microsecond: the stratum) and its raw text (parsed only if the URL is kept), so
        that the streaming path parses no lastmod a second time.

        >>> s = SegmentSampler("x", budget=2, now=datetime(2024, 6, 1, tzinfo=UTC))
        >>> s.offer_exported("https://a.example/1", "2024-05-30T00:00:00Z", "2024-05-30")
        >>> s.offer_exported("https://a.example/2", None, "never")
        >>> s.population()["recent"], [(p.stratum, p.lastmod.raw) for p in s.sample()]
        (1, [('recent', '2024-05-30'), ('none', 'never')])
        """
        self._offer_rows(((url, iso, raw),))

    def offer_items(self, items: Iterable[Any]) -> None:
        """:meth:`offer_exported` for each of a run of URL items (``url``, ``lastmod``: the
        ISO text, ``lastmod_raw``), in one loop.

        >>> from types import SimpleNamespace as Item
        >>> a = SegmentSampler("x", budget=2, now=datetime(2024, 6, 1, tzinfo=UTC))
        >>> b = SegmentSampler("x", budget=2, now=datetime(2024, 6, 1, tzinfo=UTC))
        >>> rows = [("https://a.example/1", "2024-05-30T00:00:00Z", "2024-05-30"),
        ...         ("https://a.example/2", None, None)]
        >>> for row in rows:
        ...     a.offer_exported(*row)
        >>> b.offer_items(Item(url=u, lastmod=i, lastmod_raw=r) for u, i, r in rows)
        >>> a.sample() == b.sample(), a.population() == b.population()
        (True, True)
        """
        self._offer_rows((item.url, item.lastmod, item.lastmod_raw) for item in items)

    def _offer_rows(self, rows: Iterable[tuple[str, str | None, str | None]]) -> None:
        """The one loop behind :meth:`offer_exported` and :meth:`offer_items`: each row's
        keyed hash, its stratum from the ISO text, the bottom-k heaps."""
        key, recent_from, year_from = self._key, self._recent_from, self._year_from
        population, strata, panel = self._population, self._strata, self._panel.offer
        parse = datetime.fromisoformat
        for url, iso, raw in rows:
            h = _keyed_hash(key, url)
            if iso is None:
                name = "none"
            else:
                value = parse(iso)
                name = "recent" if value >= recent_from else "year" if value >= year_from else "old"
            population[name] += 1
            strata[name].offer(h, url, raw)
            panel(h, url, raw)

    def population(self) -> dict[str, int]:
        """URLs offered per stratum (the weights W_h of :func:`stratified_proportion`)."""
        return dict(self._population)

    def state_size(self) -> int:
        """Entries held in memory: at most ``4 * (budget + reserve) + panel``."""
        return sum(len(b) for b in self._strata.values()) + len(self._panel)

    def targets(self, budget: int | None = None) -> dict[str, int]:
        """Pages per stratum, summing to ``min(budget, URLs offered)`` (``budget``: the
        sampler's own, or up to ``budget + reserve`` for an escalated sample).

        The panel is not taken into account here; :meth:`sample` moves pages
        between strata when the panel over-fills one.
        """
        budget = self._budget(budget)
        pop = self._population
        total = min(budget, sum(pop.values()))
        target = dict.fromkeys(STRATA, 0)
        if not total:
            return target
        dated = [name for name in SHARES if pop[name]]
        if pop["none"]:
            wanted = min(NONE_MAX, max(NONE_MIN, round(NONE_SHARE * budget)))
            # Undated pages never take more than half a sample with dated pages.
            target["none"] = min(wanted, pop["none"], total // 2 if dated else total)
        rest = total - target["none"]
        if dated:
            weight = sum(SHARES[name] for name in dated)
            exact = {name: rest * SHARES[name] / weight for name in dated}
            for name in dated:
                target[name] = math.floor(exact[name])
            # Largest remainder, ties in STRATA order.
            by_remainder = sorted(dated, key=lambda n: -(exact[n] - target[n]))
            for name in by_remainder[: rest - sum(target[n] for n in dated)]:
                target[name] += 1
        # Hand what a stratum cannot fill, one page at a time, to those with
        # spare URLs (total <= URLs offered, so this ends).
        for name in STRATA:
            target[name] = min(target[name], pop[name])
        excess = total - sum(target.values())
        while excess:
            for name in STRATA:
                if excess and pop[name] > target[name]:
                    target[name] += 1
                    excess -= 1
        return target

    def _budget(self, budget: int | None) -> int:
        if budget is None:
            return self.budget
        if not 0 <= budget <= self.budget + self.reserve:
            raise ValueError(f"budget {budget} is not within 0..{self.budget + self.reserve}")
        return budget

    def sample(self, budget: int | None = None) -> list[SampledUrl]:
        """The sample: panel first, then each stratum by increasing hash. ``budget``
        (at most ``budget + reserve``) escalates it: each stratum's pages are the same
        smallest hashes, more of them.

        >>> from sitemapcrawl.sitemaps.dates import parse_lastmod
        >>> now = datetime(2024, 6, 1, tzinfo=UTC)
        >>> sampler = SegmentSampler("s", budget=10, panel=3, now=now, reserve=10)
        >>> for i in range(100):
        ...     sampler.offer(f"https://a.example/{i}", parse_lastmod(f"2024-{i % 12 + 1:02d}-02"))
        >>> first, wider = sampler.sample(), sampler.sample(20)
        >>> len(first), len(wider), {s.url for s in first} <= {s.url for s in wider}
        (10, 20, True)
        """
        budget = self._budget(budget)
        target = self.targets(budget)
        panel = {url for _, url, _ in self._panel.items()}
        picked: dict[str, list[tuple[int, str, LastMod | None]]] = {}
        in_panel: dict[str, int] = {}
        for name in STRATA:
            entries = self._strata[name].items()
            picked[name] = entries
            in_panel[name] = sum(url in panel for _, url, _ in entries)
        # The panel always goes in; a stratum it over-fills takes pages from
        # the strata with the most non-panel pages.
        for name in STRATA:
            target[name] = max(target[name], in_panel[name])
        while sum(target.values()) > min(budget, sum(self._population.values())):
            donor = max(STRATA, key=lambda n: (target[n] - in_panel[n], -STRATA.index(n)))
            target[donor] -= 1
        out: list[SampledUrl] = []
        seen: set[str] = set()
        for name in STRATA:
            chosen = [e for e in picked[name] if e[1] in panel]
            others = [e for e in picked[name] if e[1] not in panel]
            chosen += others[: target[name] - len(chosen)]
            for _, url, lm in chosen:
                if url not in seen:  # a URL offered twice, in two strata
                    seen.add(url)
                    out.append(SampledUrl(url, name, lm, url in panel))
        out.sort(key=lambda s: (not s.in_panel, STRATA.index(s.stratum), s.url))
        return out


def allocate(budgets: dict[str, int], site_budget: int = DEFAULT_SITE_BUDGET) -> dict[str, int]:
    """Fit per-segment budgets under a per-site cap, max-min fairly.

    Every segment gets ``min(budget, level)`` for the largest level that fits;
    the pages left over go one each to the still unsatisfied segments in name
    order. Within the cap, budgets are returned unchanged.

    >>> allocate({"a": 30, "b": 30, "c": 30}, 150)
    {'a': 30, 'b': 30, 'c': 30}
    >>> allocate({"a": 30, "b": 30, "c": 30, "d": 30, "e": 30, "f": 10}, 150)
    {'a': 28, 'b': 28, 'c': 28, 'd': 28, 'e': 28, 'f': 10}
    >>> allocate({"a": 60, "b": 5}, 20)
    {'a': 15, 'b': 5}
    """
    if site_budget < 0 or any(b < 0 for b in budgets.values()):
        raise ValueError("budgets must be >= 0")
    if sum(budgets.values()) <= site_budget:
        return dict(budgets)
    out = dict.fromkeys(budgets, 0)
    left = site_budget
    pending = sorted(budgets, key=lambda n: (budgets[n], n))
    # Satisfy the smallest budgets first while an equal share covers them.
    while pending:
        level = left // len(pending)
        name = pending[0]
        if budgets[name] > level:
            break
        out[name] = budgets[name]
        left -= budgets[name]
        pending.pop(0)
    if pending:
        level, extra = divmod(left, len(pending))
        for i, name in enumerate(sorted(pending)):
            out[name] = level + (1 if i < extra else 0)
    return out


def fpc_sample_size(margin: float, population: int | None = None, z: float = 1.96) -> int:
    """Worst-case sample size for a proportion, with the finite-population correction.

    n0 = z^2 * 0.25 / e^2 and n = n0 / (1 + (n0 - 1) / N), rounded up.

    >>> [fpc_sample_size(e) for e in (0.20, 0.15, 0.10, 0.05)]
    [25, 43, 97, 385]
    >>> [fpc_sample_size(e, 200) for e in (0.20, 0.15, 0.10, 0.05)]
    [22, 36, 66, 132]
    >>> [fpc_sample_size(e, 1000) for e in (0.20, 0.15, 0.10, 0.05)]
    [24, 41, 88, 278]
    """
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    n0 = z * z * 0.25 / (margin * margin)
    if population is not None and population > 0:
        n0 /= 1 + (n0 - 1) / population
    # Round first so that float noise (24.0000001) does not add a page.
    return math.ceil(round(n0, 9))


def stratified_proportion(strata: dict[str, tuple[int, int, int]]) -> tuple[float, float]:
    """Stratified estimate ``(p, variance)`` from ``{name: (N_h, successes_h, n_h)}``.

    p = sum W_h p_h and Var = sum W_h^2 p_h (1 - p_h) / n_h, with W_h = N_h / N;
    strata with no sampled page are left out (their weight is redistributed).

    >>> p, var = stratified_proportion({"recent": (100, 10, 12), "old": (300, 9, 9)})
    >>> round(p, 4), round(var, 5)
    (0.9583, 0.00072)
    """
    used = {k: v for k, v in strata.items() if v[2] > 0 and v[0] > 0}
    total = sum(v[0] for v in used.values())
    if not total:
        return 0.0, 0.0
    p = var = 0.0
    for pop, successes, n in used.values():
        w = pop / total
        p_h = successes / n
        p += w * p_h
        var += w * w * p_h * (1 - p_h) / n
    return p, var
