"""A sitemap task: what the spider knows about one sitemap request.

A value with no dependencies, shared by the spider's parts, the crawl context and the
sitemap redirect middleware (it travels as the request's ``cb_kwargs["task"]``).
Requests pickled by earlier versions (``JOBDIR``, the Redis queue, testmaster fixtures)
name it ``sitemapcrawl.spiders.frontier.SitemapTask``: that module re-exports it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["SitemapTask", "task_dict", "task_from_dict"]


@dataclass(frozen=True, slots=True)
class SitemapTask:
    """What the spider knows about a sitemap request (passed as ``cb_kwargs["task"]``)."""

    url: str
    found_via: str  # robots | guessed | given
    site: str  # the site root every scope decision is made against
    depth: int = 0
    parent_lastmod: str | None = None  # the index's <lastmod> for this file (ISO UTC)
    segment: str | None = None  # None: top-level file, segment by first path component
    chain: tuple[str, ...] = ()  # canonical URLs of the indexes above this file
    declared_in_robots: bool = False
    probe: bool = False  # a guessed location: a 404 is a quiet miss
    parent: str | None = None  # the index that listed this file


def task_dict(task: SitemapTask) -> dict[str, Any]:
    """A task as plain JSON values (kept in the state file for a next run)."""
    return asdict(task)


def task_from_dict(values: dict[str, Any]) -> SitemapTask:
    """The task :func:`task_dict` gave."""
    return SitemapTask(**{**values, "chain": tuple(values.get("chain", ()))})
