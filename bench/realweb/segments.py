"""The spider's segments of each deploy's listed pages: what the labels are keyed by.

A page of an index's child sitemap is in that child's segment (its path, as the spider
names it). A page of a flat sitemap (one no index lists) is in its path group, by the
spider's own rule: ``sitemapcrawl.sitemaps.segments.first_segment`` (``/`` for pages at the
root, ``/{year}/`` for date paths, else the first path component), and a group with fewer
than ``SITEMAPCRAWL_SEGMENT_MIN_URLS`` URLs in its file joins ``/`` (past ``HELD_MAX``
waiting URLs, the waiting ones and every later URL of a group not grown yet join ``/``).
:func:`flat_file_segments` runs the spider's grouping (``segments.PathGroups``) on one
file's URLs, in the file's order.

The grouping depends on each deploy's file (a group that grows to 5 URLs becomes a
segment of its own from that deploy on), so the map is per deploy. Only the naming is the
spider's; the judge (``truth.py``'s main content and fingerprints) stays independent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapcrawl.addon import DEFAULTS
from sitemapcrawl.sitemaps.segments import PathGroups, first_segment

from . import truth

if TYPE_CHECKING:
    from pathlib import Path

    from .corpus import SiteSpec

#: The replay's origin as the spider sees it (only the path shape matters).
_ORIGIN = "http://127.0.0.1"
#: The spider's default (the benchmark runs it with the defaults).
MIN_URLS = int(DEFAULTS["SITEMAPCRAWL_SEGMENT_MIN_URLS"])


class _Url:
    __slots__ = ("segment",)

    def __init__(self, segment: str) -> None:
        self.segment = segment


def flat_file_segments(urls: list[str], min_urls: int | None = None) -> list[str]:
    """The segment of each URL (a path, with its query) of one flat sitemap file, in order:
    the spider's own grouping (``PathGroups``) on its own names (``first_segment``).

    >>> flat_file_segments(["/", "/a/1", "/b/1", "/b/2", "/2018/05/x"], min_urls=2)
    ['/', '/', '/b/', '/b/', '/']
    """
    groups: PathGroups[_Url] = PathGroups(
        first_segment(_ORIGIN + "/"), MIN_URLS if min_urls is None else min_urls
    )
    out = [_Url(first_segment(_ORIGIN + url)) for url in urls]
    for url in out:
        if url.segment not in groups.grown:
            groups.place(url, None)
    groups.rest()  # the groups still waiting at the end join the root group
    return [url.segment for url in out]


def deploy_segments(spec: SiteSpec, root: Path) -> dict[str, str]:
    """Page path -> the spider's segment, for one deploy (the pages ``truth.py`` lists)."""
    files: list[tuple[str, int, list[str]]] = []
    truth.sitemap_urls(spec, root, files=files)
    out: dict[str, str] = {}
    for path, depth, listed in files:
        names = [path] * len(listed) if depth else flat_file_segments(listed)
        for url, name in zip(listed, names, strict=True):
            out.setdefault(url.partition("?")[0], name)
    return out


def per_deploy(spec: SiteSpec, roots: list[Path]) -> list[dict[str, str]]:
    """:func:`deploy_segments` of every deploy, in order."""
    return [deploy_segments(spec, r) for r in roots]
