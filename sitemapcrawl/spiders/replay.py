"""Sitemap discovery from the state file: a 304 or an unchanged child, from its stored body.

The replay hands back the stored body as a response (:class:`ReplayedSitemap`); the
sitemap reading (``spiders/reading.py``) reads it as it reads a download.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from scrapy.http import Headers, Response
from w3lib.url import canonicalize_url

if TYPE_CHECKING:
    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog
    from sitemapcrawl.spiders.frontier import SitemapFrontier
    from sitemapcrawl.spiders.task import SitemapTask

__all__ = ["ReplayedSitemap", "SitemapReplay", "clock_headers"]


def clock_headers(headers: Headers) -> Headers:
    """A response's clock headers only (``Date``, ``Age``), for a body read from the state."""
    return Headers({k: v for k, v in headers.items() if k.lower() in (b"date", b"age")})


class ReplayedSitemap(NamedTuple):
    """A sitemap's body stored in the state file, as the response to read in place of a
    download (a 304's, or an unchanged child's that was not requested)."""

    response: Response
    task: SitemapTask


class SitemapReplay:
    """Read sitemaps from the bodies the state file stored when they were last read whole:
    on a ``304 Not Modified``, and for an index's child whose ``<lastmod>`` did not move
    once the index's lastmods have earned that trust (``SITEMAPCRAWL_INDEX_TRUST_MIN``).
    Each hands back the stored body as a :class:`ReplayedSitemap`, to be read as if it had
    been downloaded again.
    """

    def __init__(self, state: CrawlState, frontier: SitemapFrontier, log: DiscoveryLog) -> None:
        self._state = state
        self._frontier = frontier
        self._log = log

    def not_modified(self, response: Response, task: SitemapTask) -> ReplayedSitemap | None:
        """A conditional request answered 304: the body stored when the file was last read
        completely, to parse as if it had been downloaded again (None: none was stored, a
        fault)."""
        stored = self._state.sitemaps.stored_body(task.url)
        self._log.top_level(task, not_modified=True)
        if stored is None:
            self._log.failed(task, "http_304", "answered 304 Not Modified without a stored copy")
            return None
        self._log.inc(task.site, "state/not_modified_count")
        return self._replay(response, task, stored)

    def unchanged_child(self, task: SitemapTask) -> bool:
        """The index's ``<lastmod>`` for this child is what it was when the child was last
        read completely (and the index's lastmods have proven to move with content)."""
        known = self._state.sitemaps.known(task.url)
        return (
            known is not None
            and known.body_hash is not None
            and task.parent_lastmod is not None
            and known.index_lastmod == task.parent_lastmod
            and canonicalize_url(task.url) not in self._frontier.visited
        )

    def skip_child(self, task: SitemapTask, clock: Headers | None = None) -> ReplayedSitemap | None:
        """A child whose index lastmod did not move: its stored body, without a request
        (None: none is stored; the child is then not read). ``clock``: the index
        response's ``Date``/``Age``, the server's "now" for the child's segment (without
        it, the segment's reference time would be our clock)."""
        stored = self._state.sitemaps.stored_body(task.url)
        if stored is None:
            return None
        self._frontier.visited.add(canonicalize_url(task.url))
        self._log.inc(task.site, "state/skipped_children_count")
        self._log.inc(task.site, "sitemaps/requested_count")
        stand_in = Response(task.url, status=200, headers=clock)  # the index's clock
        return self._replay(stand_in, task, stored)

    def _replay(
        self, response: Response, task: SitemapTask, stored: tuple[bytes, str]
    ) -> ReplayedSitemap:
        """``stored`` (body, Content-Encoding) in place of ``response``'s body, keeping its
        clock (``Date``) and validators (else the file's known ones)."""
        body, encoding = stored
        known = self._state.sitemaps.known(task.url)
        headers = clock_headers(response.headers)
        # A 304 carries the validators a 200 would have (RFC 9110 15.4.5): a file written
        # again with the same bytes has a newer Last-Modified, the moment it was current.
        for name, known_value in (
            (b"ETag", known.etag if known is not None else None),
            (b"Last-Modified", known.last_modified if known is not None else None),
        ):
            value = response.headers.get(name)
            if not value and known_value:
                value = known_value.encode("latin-1")
            if value:
                headers[name] = value
        if encoding:
            headers[b"Content-Encoding"] = encoding.encode("latin-1")
        replayed = Response(
            response.url, status=200, headers=headers, body=body, request=response.request
        )
        return ReplayedSitemap(replayed, task)
