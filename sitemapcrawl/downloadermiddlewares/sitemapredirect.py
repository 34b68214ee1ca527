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

__all__ = [
    "ROBOTS_MAX_REDIRECTS",
    "SITEMAP_MAX_REDIRECTS",
    "SitemapRedirectMiddleware",
    "SitemapRedirectRefused",
]

#: Redirects followed at most: RFC 9309 asks for at least 5 for robots.txt (more: it is
#: unreachable); a sitemap gets 10.
ROBOTS_MAX_REDIRECTS = 5
SITEMAP_MAX_REDIRECTS = 10


class SitemapRedirectRefused(IgnoreRequest):
    """A redirected sitemap request not sent: ``why`` is ``loop`` (an ancestor index) or
    ``duplicate`` (a sitemap requested already); ``target`` where it led."""

    def __init__(self, why: str, target: str) -> None:
        super().__init__(f"sitemap redirect to {target} not followed ({why})")
        self.why = why
        self.target = target


class SitemapRedirectMiddleware:
    """Stop a redirected robots.txt request past 5 redirects, a redirected sitemap request
    past 10, and one before its download when it leads back into its own redirect chain,
    to an ancestor index, out of the scope policy (another host), or to a sitemap the
    crawl requested already (``/sitemap.xml`` redirecting to a ``/sitemap_index.xml``
    guessed too): a path is never fetched twice. The spider's errback reports it (a
    duplicate file, or a named fault).

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
        hops = request.meta.get("redirect_urls")
        if not hops:
            return
        if request.meta.get(meta.ROBOTS) and len(hops) > ROBOTS_MAX_REDIRECTS:
            raise SitemapRedirectRefused("too_many_redirects", request.url)
        if not request.meta.get(meta.SITEMAP):
            return
        if len(hops) > SITEMAP_MAX_REDIRECTS:
            raise SitemapRedirectRefused("too_many_redirects", request.url)
        frontier = crawl_context(self._crawler).frontier
        task = request.cb_kwargs.get("task")
        if frontier is None or task is None:
            return
        if request.meta.get(meta.REDIRECT_TAKEN) == request.url:
            return  # checked already (a retry of the same hop)
        why = frontier.redirect_refusal(task, request.url, request.meta["redirect_urls"])
        if why is not None:
            raise SitemapRedirectRefused(why, request.url)
        request.meta[meta.REDIRECT_TAKEN] = request.url
