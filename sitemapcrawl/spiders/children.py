"""An index's children as sitemap requests: newest first by the index's ``<lastmod>``,
within ``max_depth`` and ``sitemap_follow``; an unchanged child of a trusted index is read
from the state file instead (``SitemapReplay``: its stored body, handed back to be read),
but for a random audit share."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

if TYPE_CHECKING:
    import datetime as dt
    import re
    from collections.abc import Iterator

    from scrapy import Request
    from scrapy.http import Headers
    from scrapy.settings import BaseSettings

    from sitemapcrawl.crawlcontext import CrawlContext
    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.sitemaps import SitemapRef
    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog
    from sitemapcrawl.spiders.replay import ReplayedSitemap, SitemapReplay
    from sitemapcrawl.spiders.requester import SitemapRequester
    from sitemapcrawl.spiders.task import SitemapTask

__all__ = ["IndexChildren"]


def _file_segment(url: str, site: str) -> str:
    """A child sitemap's name as a segment: its path (and query), or its URL on another host."""
    parts = urlsplit(url)
    if parts.netloc.lower() != urlsplit(site).netloc.lower():
        return url
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _child_time(child: SitemapRef) -> dt.datetime:
    assert child.lastmod is not None
    assert child.lastmod.value is not None
    return child.lastmod.value


class IndexChildren:
    """The children of the indexes a crawl reads, as requests (``requester``: the spider's
    sitemap requests, which refuse a child or hold it back; ``follow``:
    ``sitemap_follow``). Settings: ``SITEMAPCRAWL_INDEX_TRUST_MIN``,
    ``SITEMAPCRAWL_INDEX_AUDIT_SHARE``. ``state`` and ``replay`` are set when the crawl
    has a state file."""

    def __init__(
        self,
        *,
        context: CrawlContext,
        args: CrawlArguments,
        log: DiscoveryLog,
        settings: BaseSettings,
        requester: SitemapRequester,
        follow: list[re.Pattern[str]],
    ) -> None:
        self._context = context
        self._args = args
        self._log = log
        self._requester = requester
        self._follow = follow
        self._trust_min = settings.getint("SITEMAPCRAWL_INDEX_TRUST_MIN")
        self._audit_share = settings.getfloat("SITEMAPCRAWL_INDEX_AUDIT_SHARE")
        self.state: CrawlState | None = None
        self.replay: SitemapReplay | None = None

    def requests(
        self,
        children: list[SitemapRef],
        task: SitemapTask,
        sitemap_url: str,
        clock: Headers | None = None,
    ) -> Iterator[Request | ReplayedSitemap]:
        """An index's children, newest first by its ``<lastmod>`` (undated ones last, in
        document order); an unchanged child of a trusted index comes as its body stored in
        the state file, for the caller to read in its place."""
        max_depth = self._args.max_depth
        if task.depth + 1 > max_depth > 0:
            self._log.inc(task.site, "limits/max_depth_count", len(children))
            message = f"index deeper than max_depth={max_depth}; children skipped"
            self._log.log_once("max_depth", sitemap_url, message, task.site)
            return
        dated = [c for c in children if c.lastmod is not None and c.lastmod.value is not None]
        undated = [c for c in children if c.lastmod is None or c.lastmod.value is None]
        dated.sort(key=_child_time, reverse=True)
        chain = (*task.chain, canonicalize_url(sitemap_url))
        state, replay = self.state, self.replay
        trusted = state is not None and state.sitemaps.trusted(task.url, self._trust_min)
        for rank, child in enumerate(dated + undated):
            if not any(regex.search(child.loc) for regex in self._follow):
                self._log.inc(task.site, "sitemaps/not_followed_count")
                continue
            child_task = self._task(task, child, chain)
            if trusted and replay is not None and replay.unchanged_child(child_task):
                assert state is not None
                if state.sitemaps.audit_draw(child_task.url) >= self._audit_share:
                    if (replayed := replay.skip_child(child_task, clock)) is not None:
                        yield replayed
                    continue
                # fetched (conditionally) all the same: a child that changed while its
                # index lastmod stood still ends the index's trust
                self._log.inc(task.site, "state/audited_children_count")
            if request := self._requester.sitemap(child_task, -rank - task.depth * 1000):
                yield request

    def _task(self, task: SitemapTask, child: SitemapRef, chain: tuple[str, ...]) -> SitemapTask:
        """A child sitemap's task: one level deeper, its own segment."""
        segment = _file_segment(child.loc, task.site)
        if self._args.multi_site and segment.startswith("/"):
            segment = task.site.rstrip("/") + segment
        child_task = replace(
            task,
            url=child.loc,
            depth=task.depth + 1,
            parent_lastmod=child.lastmod.iso if child.lastmod else None,
            segment=segment,
            chain=chain,
            probe=False,
            parent=task.url,
        )
        if self._args.multi_site:
            self._context.segment_sites.setdefault(segment, task.site)
        return child_task
