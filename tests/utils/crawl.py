"""Run the spider in-process against a loopback server and collect what it yields."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from sitemapcrawl.items import SitemapUrlBatch, SiteReport
from sitemapcrawl.spiders.sitemap import SitemapCrawlSpider

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

TEST_SETTINGS: dict[str, Any] = {
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 10,
    "RETRY_TIMES": 1,
    "LOG_LEVEL": "INFO",
    "REMOTE_CONTROL_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    # No state across runs unless a test gives a file: crawls stay independent.
    "SITEMAPCRAWL_STATE_PATH": "",
    # Discovery tests fetch no page unless they ask (-a sample=on); the default (pages
    # sampled) is what tests/test_demo.py and the tests of the defaults run.
    "SITEMAPCRAWL_SAMPLE_ENABLED": False,
}


def project_settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The project's own settings module, then test settings, then ``overrides``."""
    settings = Settings()
    settings.setmodule("sitemapcrawl.settings", priority="project")
    values = {name: settings[name] for name in settings.attributes if name.isupper()}
    project = {name: values[name] for name in _project_names()}
    return {**project, **TEST_SETTINGS, **(overrides or {})}


def _project_names() -> list[str]:
    import sitemapcrawl.settings as module

    return [name for name in dir(module) if name.isupper()]


async def crawl(
    spidercls: type[SitemapCrawlSpider] = SitemapCrawlSpider,
    settings: dict[str, Any] | None = None,
    **kwargs: Any,
) -> tuple[list[dict[str, Any]], Crawler]:
    """Crawl to the end; return the URL items (as dicts) and the crawler (for stats)."""
    items, _, crawler = await crawl_with_reports(spidercls, settings, **kwargs)
    return items, crawler


async def crawl_with_report(
    spidercls: type[SitemapCrawlSpider] = SitemapCrawlSpider,
    settings: dict[str, Any] | None = None,
    **kwargs: Any,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, Crawler]:
    """Crawl to the end; return the other items, the site report (or None) and the crawler."""
    items, reports, crawler = await crawl_with_reports(spidercls, settings, **kwargs)
    assert len(reports) <= 1
    return items, reports[0] if reports else None, crawler


async def crawl_with_reports(
    spidercls: type[SitemapCrawlSpider] = SitemapCrawlSpider,
    settings: dict[str, Any] | None = None,
    **kwargs: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Crawler]:
    """Crawl to the end; return the other items, every site report (one per site) and the
    crawler."""
    crawler = get_crawler(spidercls, project_settings(settings))
    items: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []

    def collect(item: Any) -> None:  # a named function: signal receivers are weak refs
        if type(item) is SitemapUrlBatch:  # URL items leave the spider in batches
            items.extend(ItemAdapter(entry).asdict() for entry in item)
            return
        (reports if type(item) is SiteReport else items).append(ItemAdapter(item).asdict())

    crawler.signals.connect(collect, signal=signals.item_scraped)
    await crawler.crawl_async(**kwargs)
    return items, reports, crawler


def our_stats(crawler: Crawler) -> dict[str, Any]:
    """The ``sitemapcrawl/`` stats, without the rate (which depends on the clock)."""
    assert crawler.stats is not None
    return {
        key: value
        for key, value in crawler.stats.get_stats().items()
        if key.startswith("sitemapcrawl/") and key != "sitemapcrawl/urls/per_minute"
    }


ROOT = Path(__file__).resolve().parents[2]


def scrapy_crawl(out: Path, *args: str) -> str:
    """``scrapy crawl sitemap ARGS`` in a child process, appending a JSON Lines feed to
    ``out``, one request and one sitemap at a time, without a state file (``ARGS`` come
    last, so a ``-s`` among them wins); returns its log
    (stderr) after checking it exited 0 without a traceback."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    result = subprocess.run(
        [
            sys.executable, "-m", "scrapy", "crawl", "sitemap", "-o", f"{out}:jsonlines",
            "-s", "CONCURRENT_REQUESTS=1", "-s", "SITEMAPCRAWL_CONCURRENT_SITEMAPS=1",
            "-s", "REMOTE_CONTROL_ENABLED=False", "-s", "TELNETCONSOLE_ENABLED=False",
            "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "LOG_LEVEL=INFO",
            "-s", "SITEMAPCRAWL_STATE_PATH=", "-s", "SITEMAPCRAWL_SAMPLE_ENABLED=False", *args,
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result.stderr
