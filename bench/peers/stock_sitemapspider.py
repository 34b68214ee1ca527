"""Peer: stock Scrapy ``SitemapSpider`` discovering every URL from robots.txt.

    python bench/peers/stock_sitemapspider.py http://127.0.0.1:PORT/robots.txt

Counts the urlset entries inside ``sitemap_filter`` and yields none of them,
so no page is requested: only robots.txt, the index and its children are
downloaded.  Plain ``CrawlerProcess`` settings (no project settings), log at
INFO, telnet console off.  Prints ``RESULT {json}`` on stdout at the end.
"""

from __future__ import annotations

import json
import sys

from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.spiders import SitemapSpider


class StockSitemapSpider(SitemapSpider):
    name = "stock_sitemap"
    count = 0

    def sitemap_filter(self, entries):
        # ``entries`` is the scrapy.utils.sitemap.Sitemap object itself.
        if getattr(entries, "type", None) == "urlset":
            n = 0
            for _ in entries:
                n += 1
            StockSitemapSpider.count += n
            return
        yield from entries

    def parse(self, response):  # never called: no page requests
        return None


def main() -> int:
    robots = sys.argv[1]
    stats: dict = {}
    proc = CrawlerProcess(
        settings={
            "LOG_LEVEL": "INFO",
            "TELNETCONSOLE_ENABLED": False,
            "ROBOTSTXT_OBEY": False,
            "COOKIES_ENABLED": False,
        }
    )
    crawler = proc.create_crawler(StockSitemapSpider)

    def closed(spider, reason):
        stats.update(crawler.stats.get_stats())
        stats["finish_reason"] = reason

    crawler.signals.connect(closed, signal=signals.spider_closed)
    proc.crawl(crawler, sitemap_urls=[robots])
    proc.start()
    print(
        "RESULT "
        + json.dumps(
            {
                "urls": StockSitemapSpider.count,
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
