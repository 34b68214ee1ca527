"""Peer (reference): a minimal plain-Scrapy spider that yields ONE ITEM PER URL.

    python bench/peers/scrapy_items_spider.py http://127.0.0.1:PORT/robots.txt OUT.jsonl

robots.txt -> sitemap index -> children, parsed with scrapy.utils.sitemap
(like SitemapSpider), but every urlset entry is yielded as a dict item and
written by the JSON-lines feed exporter, as ours does.  It is the floor for
"Scrapy + one item per URL + -O jsonl": compared with the stock
SitemapSpider peer (which yields nothing) it shows what the item machinery
and the exporter cost.  Plain settings, not the project's.  Prints
``RESULT {json}`` on stdout at the end.
"""

from __future__ import annotations

import json
import sys

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots


class ItemsSpider(scrapy.Spider):
    name = "scrapy_items"

    def __init__(self, robots: str, **kw):
        super().__init__(**kw)
        self.robots = robots

    async def start(self):
        yield scrapy.Request(self.robots, callback=self.parse_robots)

    def parse_robots(self, response):
        for url in sitemap_urls_from_robots(response.body, base_url=response.url):
            yield scrapy.Request(url, callback=self.parse_sitemap)

    def parse_sitemap(self, response):
        body = gunzip(response.body) if gzip_magic_number(response) else response.body
        s = Sitemap(body)
        if s.type == "sitemapindex":
            for d in s:
                yield scrapy.Request(d["loc"], callback=self.parse_sitemap)
        else:
            for d in s:
                d["sitemap"] = response.url
                yield d


def main() -> int:
    robots, out = sys.argv[1], sys.argv[2]
    stats: dict = {}
    proc = CrawlerProcess(
        settings={
            "LOG_LEVEL": "INFO",
            "TELNETCONSOLE_ENABLED": False,
            "ROBOTSTXT_OBEY": False,
            "COOKIES_ENABLED": False,
            "FEEDS": {out: {"format": "jsonlines", "overwrite": True, "encoding": "utf-8"}},
        }
    )
    crawler = proc.create_crawler(ItemsSpider)

    def closed(spider, reason):
        stats.update(crawler.stats.get_stats())
        stats["finish_reason"] = reason

    crawler.signals.connect(closed, signal=signals.spider_closed)
    proc.crawl(crawler, robots=robots)
    proc.start()
    print(
        "RESULT "
        + json.dumps(
            {
                "urls": stats.get("item_scraped_count", 0),
                "finish_reason": stats.get("finish_reason"),
                "requests": stats.get("downloader/request_count"),
            },
            default=str,
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
