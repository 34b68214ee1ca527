"""Spider middleware, output: hands a callback's URL items on in batches, not one by one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["SitemapBatchMiddleware"]


class SitemapBatchMiddleware:
    """Hand a callback's URL items on in batches (``SitemapUrlBatch``), not one by one.

    Every Scrapy item costs an asyncio task in the scraper, one per ``item_scraped``
    receiver, a pass through each spider middleware and item pipeline (about 45 µs of CPU
    per item on the bench machine, docs/benchmarks.md): more than reading the URL from its
    sitemap. This middleware, ordered at 1010 (next to the spider, so the other spider
    middlewares see batches too), groups consecutive URL items of one response. Requests
    pass through at once; any other item (the site report) first sends the URLs held
    before it, so the feed keeps its order. A callback that stops on an exception
    (``CloseSpider`` at ``max_urls``) still hands on what it yielded before.

    Settings: ``SITEMAPCRAWL_ITEM_BATCH_SIZE`` (URL items per batch; 1 or less: off).
    """

    def __init__(self, crawler: Crawler) -> None:
        size = crawler.settings.getint("SITEMAPCRAWL_ITEM_BATCH_SIZE")
        if size <= 1:
            raise NotConfigured  # no message: Scrapy would log a warning for an option off
        self.size = size

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapBatchMiddleware:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        size = self.size
        held: list[SitemapUrlItem] = []
        try:
            async for output in result:
                if type(output) is SitemapUrlItem:
                    held.append(output)
                    if len(held) >= size:
                        yield SitemapUrlBatch(held)
                        held = []
                    continue
                if held and not isinstance(output, Request):
                    yield SitemapUrlBatch(held)
                    held = []
                yield output
        except Exception:
            if held:
                yield SitemapUrlBatch(held)
            raise
        if held:
            yield SitemapUrlBatch(held)
