"""Downloader middleware, sitemap redirects: never fetch a sitemap requested already again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from sitemapcrawl import meta
from sitemapcrawl.crawlcontext import crawl_context

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["SitemapRedirectMiddleware", "SitemapRedirectRefused"]


class SitemapRedirectRefused(IgnoreRequest):
    """A redirected sitemap request not sent: ``why`` is ``loop`` (an ancestor index) or
    ``duplicate`` (a sitemap requested already); ``target`` where it led."""

    def __init__(self, why: str, target: str) -> None:
        super().__init__(f"sitemap redirect to {target} not followed ({why})")
        self.why = why
        self.target = target


class SitemapRedirectMiddleware:
    """Stop a redirected sitemap request before its download when it leads to an ancestor
    index or to a sitemap the crawl requested already (``/sitemap.xml`` redirecting to a
    ``/sitemap_index.xml`` guessed too): a path is never fetched twice. The spider's
    errback reports it (a duplicate file, or a loop).

    Meta read: ``sitemapcrawl_sitemap``, ``redirect_urls``; written:
    ``sitemapcrawl_redirect_taken``. Stats (through the spider):
    ``sitemapcrawl/sitemaps/duplicate_file_count``, ``sitemapcrawl/sitemaps/loop_count``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if not request.meta.get(meta.SITEMAP) or not request.meta.get("redirect_urls"):
            return
        frontier = crawl_context(self._crawler).frontier
        task = request.cb_kwargs.get("task")
        if frontier is None or task is None:
            return
        if request.meta.get(meta.REDIRECT_TAKEN) == request.url:
            return  # checked already (a retry of the same hop)
        why = frontier.redirect_refusal(task, request.url)
        if why is not None:
            raise SitemapRedirectRefused(why, request.url)
        request.meta[meta.REDIRECT_TAKEN] = request.url
