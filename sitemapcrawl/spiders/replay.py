"""Sitemap discovery from the state file: a 304 or an unchanged child, read from its stored body."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.http import Headers, Response
from w3lib.url import canonicalize_url

from sitemapcrawl.items import SitemapUrlItem

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog
    from sitemapcrawl.spiders.frontier import SitemapFrontier
    from sitemapcrawl.spiders.task import SitemapTask

__all__ = ["SitemapReplay", "clock_headers"]


def clock_headers(headers: Headers) -> Headers:
    """A response's clock headers only (``Date``, ``Age``), for a body read from the state."""
    return Headers({k: v for k, v in headers.items() if k.lower() in (b"date", b"age")})


class SitemapReplay:
    """Read sitemaps from the bodies the state file stored when they were last read whole:
    on a ``304 Not Modified``, and for an index's child whose ``<lastmod>`` did not move
    once the index's lastmods have earned that trust (``SITEMAPCRAWL_INDEX_TRUST_MIN``).

    ``read``: the spider's reading of a sitemap response (items and child requests).
    """

    def __init__(
        self,
        state: CrawlState,
        frontier: SitemapFrontier,
        log: DiscoveryLog,
        read: Callable[[Response, SitemapTask], Iterator[Any]],
    ) -> None:
        self._state = state
        self._frontier = frontier
        self._log = log
        self._read = read

    def not_modified(self, response: Response, task: SitemapTask) -> Iterator[Any]:
        """A conditional request answered 304: parse the body stored when the file was last
        read completely, as if it had been downloaded again."""
        stored = self._state.sitemaps.stored_body(task.url)
        self._log.top_level(task, not_modified=True)
        if stored is None:
            self._log.failed(task, "http_304", "answered 304 Not Modified without a stored copy")
            return
        self._log.inc(task.site, "state/not_modified_count")
        yield from self._replay(response, task, stored)

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

    def skip_child(self, task: SitemapTask, clock: Headers | None = None) -> Iterator[Any]:
        """A child whose index lastmod did not move: its stored body, without a request.
        ``clock``: the index response's ``Date``/``Age``, the server's "now" for the
        child's segment (without it, the segment's reference time would be our clock)."""
        stored = self._state.sitemaps.stored_body(task.url)
        if stored is None:
            return
        self._frontier.visited.add(canonicalize_url(task.url))
        self._log.inc(task.site, "state/skipped_children_count")
        self._log.inc(task.site, "sitemaps/requested_count")
        stand_in = Response(task.url, status=200, headers=clock)  # the index's clock
        try:
            yield from self._replay(stand_in, task, stored)
        finally:
            self._log.inc(task.site, "sitemaps/done_count")

    def _replay(
        self, response: Response, task: SitemapTask, stored: tuple[bytes, str]
    ) -> Iterator[Any]:
        """Read ``stored`` (body, Content-Encoding) in place of ``response``'s body, keeping
        its clock (``Date``) and validators (else the file's known ones)."""
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
        urls = 0
        try:
            for output in self._read(replayed, task):
                if type(output) is SitemapUrlItem:
                    urls += 1
                yield output
        finally:
            self._log.inc(task.site, "state/replayed_urls_count", urls)
