"""A flat sitemap's segments: its URLs grouped by the shape of their path.

A sitemap index's children are its segments; a flat file's URLs are grouped here (issue
20: a WordPress file of root-level slugs must not become dozens of one-URL segments).
Pure: bench/realweb names its labels' segments with the same code.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

__all__ = ["HELD_MAX", "PathGroups", "first_segment"]

#: Items of a flat file held back at most while their path group is too small to be a
#: segment (``SITEMAPCRAWL_SEGMENT_MIN_URLS``).
HELD_MAX = 10_000


def first_segment(url: str) -> str:
    """A URL's segment in a flat sitemap, by the shape of its path: the first path
    component of a URL below it (``/blog/`` for ``/blog/post``); pages at the root
    together (``/`` for ``/about`` and ``/my-post/``: WordPress slugs); date paths together
    (``/{year}/`` for ``/2018/05/post``).

    >>> [first_segment(f"https://a.example{p}") for p in ("/blog/post", "/my-post/", "/")]
    ['/blog/', '/', '/']
    >>> first_segment("https://a.example/2018/05/post"), first_segment("https://a.example/a?b/c")
    ('/{year}/', '/')
    """
    start = url.find("/", url.find("//") + 2)
    if start < 0:
        return "/"
    end = url.find("/", start + 1)
    if end < 0 or end + 1 >= len(url) or url[end + 1] in "?#":
        return "/"  # a page at the root, slash or not
    query = url.find("?", start, end)
    if query >= 0:
        return "/"
    if end - start == 5 and url[start + 1 : end].isdigit():
        return "/{year}/"
    return url[start : end + 1]


class _Grouped(Protocol):
    segment: str


_T = TypeVar("_T", bound=_Grouped)


class PathGroups(Generic[_T]):
    """A flat file's URLs grouped by the shape of their path (``first_segment``): a group
    is a segment from its ``min_urls``-th URL on (``SITEMAPCRAWL_SEGMENT_MIN_URLS``); its
    first ones wait for it, and the groups still smaller at the file's end join the root
    group (they go out then). At most ``HELD_MAX`` items wait: past that, the waiting ones
    and every later URL of a group not grown yet join the root group at once (memory
    stays bounded)."""

    __slots__ = ("gave_up", "grown", "held", "min_urls", "root", "waiting")

    def __init__(self, root: str, min_urls: int) -> None:
        self.root = root
        self.min_urls = min_urls
        self.grown: set[str] = {root}  # the groups that are segments: their items go out
        self.waiting: dict[str, list[tuple[_T, Any]]] = {}
        self.held = 0
        self.gave_up = False

    def place(self, item: _T, entry: Any) -> list[tuple[_T, Any]] | None:
        """An item of a group not grown yet, with what goes out with it (the spider: its
        entry): the items that go out now (none while it waits); None when it goes out as
        it is. bench/realweb's ``segments.py`` names its labels' segments with it."""
        if self.gave_up:
            item.segment = self.root  # grouping was given up in this file
            return [(item, entry)]
        group = self.waiting.setdefault(item.segment, [])
        group.append((item, entry))
        self.held += 1
        if len(group) >= self.min_urls:
            self.grown.add(item.segment)
            self.held -= len(group)
            return self.waiting.pop(item.segment)
        if self.held > HELD_MAX:
            self.gave_up = True
            return self.rest()
        return []

    def rest(self) -> list[tuple[_T, Any]]:
        """The items still waiting, in the root group; none wait after."""
        pairs = []
        for group in self.waiting.values():
            for item, _ in group:
                item.segment = self.root
            pairs += group
        self.waiting.clear()
        self.held = 0
        return pairs
