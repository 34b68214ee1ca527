"""State across runs, our page fetches: the pages of a run held before they are recorded.

A page whose content changed since our last fetch is not recorded at once: the run first
compares enough pages to tell a template edit (``verify.commonmode``) and fetches a few
would-be misses again (``verify.noise``). :class:`HeldPages` keeps them and answers both
questions; ``PageObservations.settle`` records them.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitemapcrawl.verify.commonmode import CommonEdits, edit_signatures
from sitemapcrawl.verify.noise import NoiseFloor

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Held", "HeldPages"]


@dataclass(slots=True)
class Held:
    """A page whose content changed since our last fetch, held. ``candidate``: a would-be
    miss (a random fetch, its lastmod as at our last fetch); ``observed``: the dict its
    fetch's caller got, filled when it is recorded."""

    url: str
    segment: str
    reason: str
    fetch: dict[str, Any]
    host: str
    edits: frozenset[str] | None
    candidate: bool
    observed: dict[str, Any] = field(default_factory=dict)


class HeldPages:
    """The held pages of one run, the edits of every page it compared and its noise probes."""

    def __init__(self) -> None:
        self.edits = CommonEdits()
        self.floor = NoiseFloor()
        self.pages: list[Held] = []

    def unchanged(self, url: str) -> None:
        """A page compared on this run whose content did not change (the edits' share)."""
        self.edits.add(_host(url), url, frozenset())

    def hold(
        self,
        url: str,
        segment: str,
        reason: str,
        fetch: dict[str, Any],
        *,
        before: str | None,
        candidate: bool,
    ) -> dict[str, Any]:
        """Hold a page whose content changed (``before``: what our last fetch read); the
        dict its observation will fill."""
        host = _host(url)
        content = fetch["content"]
        edits = edit_signatures(before, content) if before and content else None
        self.edits.add(host, url, edits)  # a page compared, whether or not edit by edit
        page = Held(url, segment, reason, fetch, host, edits, candidate)
        self.pages.append(page)
        return page.observed

    def probes(self, key: Callable[[str], float]) -> list[tuple[str, str]]:
        """(url, segment) of the held would-be misses to fetch again at once, a few per site
        (first by ``key``, a seeded draw); each answered with :meth:`noise`."""
        candidates: dict[str, list[str]] = {}
        segments = {}
        for page in self.pages:
            if page.candidate:
                candidates.setdefault(page.host, []).append(page.url)
                segments[page.url] = page.segment
        return [(url, segments[url]) for _, url in self.floor.choose(candidates, key=key)]

    def noise(self, url: str, fingerprint: str | None) -> bool | None:
        """A held page fetched again: whether its fingerprint differs from this run's first
        fetch (None: not compared, the second fetch failed or was no page)."""
        page = next((p for p in self.pages if p.url == url), None)
        if page is None or fingerprint is None:
            return None
        differed = bool(fingerprint != page.fetch["fingerprint"])
        self.floor.record(page.host, differed)
        return differed

    def take(self) -> list[tuple[Held, bool, bool, tuple[int, int] | None]]:
        """The pages held so far, released: each with whether every edit of it is the
        template's by now, whether its site's pages differ on every fetch, and its site's
        noise probes (differed, fetched) when there were any."""
        pages, self.pages = self.pages, []
        return [
            (
                page,
                self.edits.template_only(page.host, page.edits),
                self.floor.volatile(page.host),
                self.floor.measured(page.host),
            )
            for page in pages
        ]


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc
