"""Downloader middleware, safety: no redirect into a private address the crawl did not start on."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin

from scrapy.exceptions import IgnoreRequest

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.sitemaps.hosts import InvalidHost, canonical_url
from sitemapcrawl.sitemaps.scope import private_address

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["PrivateRedirectMiddleware"]

_KEY = "sitemapcrawl/sitemaps/private_address_count"


class PrivateRedirectMiddleware:
    """Drop a redirected request whose target is a private, loopback or link-local address
    (169.254.169.254, 10.x…) that the first URL of its redirect chain was not on.

    The spider refuses such sitemap URLs before requesting them; a redirect would otherwise
    take Scrapy there anyway (server-side request forgery). A redirect's target is first
    written with its host's canonical spelling (``0177.0.0.1`` is ``127.0.0.1``: the request
    is made again so), and one whose host no browser requests is dropped.
    Meta read: ``redirect_urls``. Stats: ``sitemapcrawl/sitemaps/private_address_count``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> Request | None:
        chain = request.meta.get("redirect_urls")
        if not chain:
            return None
        try:  # a Location in any IPv4 form a browser reads: one spelling, then the checks
            canonical = canonical_url(request.url)
        except InvalidHost:
            raise IgnoreRequest(
                f"redirected from {chain[0]} to a host no browser requests"
            ) from None
        if canonical != request.url:
            return request.replace(url=canonical)
        if private_address(request.url, chain[0]):
            stats = self._crawler.stats
            assert stats is not None
            # a crawl over several sites: the share of the sitemap's site (its task's)
            site = getattr(request.cb_kwargs.get("task"), "site", None) or urljoin(chain[0], "/")
            crawl_context(self._crawler).inc(stats, site, _KEY)
            raise IgnoreRequest(f"redirected from {chain[0]} to a private address")
        return None
