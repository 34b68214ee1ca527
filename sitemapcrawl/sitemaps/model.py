"""Sitemap parsing: what a sitemap says (a ``UrlEntry`` per URL, a ``SitemapRef`` per child)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .dates import LastMod

__all__ = ["Limits", "SitemapRef", "UrlEntry"]


@dataclass(slots=True)
class UrlEntry:
    """A page URL with everything its sitemap entry says about it.

    ``loc`` is absolute (a relative ``<loc>`` is resolved against the sitemap URL and
    ``relative`` is set). Extension data use the key names of Google's schemas; lists are
    empty when absent. ``position`` is the entry's 0-based index in its file.
    """

    loc: str
    lastmod: LastMod | None = None
    changefreq: str | None = None
    priority: float | None = None
    news: list[dict[str, Any]] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    videos: list[dict[str, Any]] = field(default_factory=list)
    alternates: list[dict[str, Any]] = field(default_factory=list)
    mobile: bool = False
    pagemap: list[dict[str, Any]] = field(default_factory=list)
    relative: bool = False
    position: int = 0
    #: the location was listed with a ``#fragment``, dropped (the page is the URL without it)
    fragment: bool = False


@dataclass(slots=True)
class SitemapRef:
    """A child sitemap listed by a sitemap index, with the index's ``<lastmod>`` for it."""

    loc: str
    lastmod: LastMod | None = None
    relative: bool = False
    position: int = 0


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps that bound the time and memory one body can cost.

    ``max_size``: decoded bytes read (the protocol's 50 MiB); ``max_urls``: the protocol's
    per-file URL count, past which a fault is recorded and, unless ``keep_excess``, reading
    stops; ``max_loc_length``: longer locations are dropped and counted.
    """

    max_size: int = 52_428_800
    max_urls: int = 50_000
    keep_excess: bool = True
    max_loc_length: int = 2048
    max_gzip_layers: int = 3
    chunk_size: int = 256 * 1024
