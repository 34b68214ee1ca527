"""The one place every ``SITEMAPCRAWL_*`` default lives, and where components are registered.

Everything is set at ``addon`` priority, so project settings, ``custom_settings`` and
``-s`` on the command line still override it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES

from .distributed import redis_settings
from .downloadermiddlewares.httpcompression import SitemapHttpCompressionMiddleware
from .downloadermiddlewares.privateredirect import PrivateRedirectMiddleware
from .downloadermiddlewares.retry import SitemapRetryMiddleware
from .downloadermiddlewares.robotstxt import SitemapRobotsTxtMiddleware
from .downloadermiddlewares.sitemapredirect import SitemapRedirectMiddleware
from .extensions.progress import SitemapProgressExtension
from .extensions.sitemapdownload import SitemapDownloadExtension
from .htmlreport.extension import HtmlReportExtension
from .pipelines.changes import ChangesFeedPipeline, UrlStatusPipeline
from .pipelines.sampling import PageSamplingPipeline
from .pipelines.scrapedcount import ScrapedCountPipeline
from .spidermiddlewares.batch import SitemapBatchMiddleware
from .spidermiddlewares.lastmod import SitemapLastmodMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["DEFAULTS", "GUESS_PATHS", "SitemapCrawlAddon"]

#: Where sites put sitemaps when robots.txt does not say, most common first: most
#: generators write /sitemap.xml (Hugo, Jekyll, Hexo, MkDocs, Docusaurus, Shopify…), Yoast
#: and Rank Math /sitemap_index.xml, Gatsby and Astro /sitemap-index.xml, WordPress core
#: /wp-sitemap.xml.
GUESS_PATHS = (
    "/sitemap.xml",
    "/sitemap_index.xml",
    "/sitemap-index.xml",
    "/wp-sitemap.xml",
    "/sitemap.xml.gz",
    "/sitemap.txt",
    "/sitemaps.xml",
    "/sitemap_news.xml",
    "/post-sitemap.xml",
)

DEFAULTS: dict[str, Any] = {
    # Discovery
    "SITEMAPCRAWL_GUESS": "fallback",  # off | fallback (when robots.txt declares none) | always
    "SITEMAPCRAWL_GUESS_PATHS": list(GUESS_PATHS),
    # guess=fallback tries this many locations at a time, and stops at the first sitemap
    "SITEMAPCRAWL_GUESS_AT_ONCE": 2,
    "SITEMAPCRAWL_SCOPE": "host",  # host | path | robots | off
    # Limits per run (0 = no limit)
    "SITEMAPCRAWL_MAX_SITEMAPS": 1000,
    # no sitemap is requested once discovery has run this long (0: no limit)
    "SITEMAPCRAWL_MAX_DISCOVERY_SECONDS": 3600.0,
    "SITEMAPCRAWL_MAX_URLS": 0,
    "SITEMAPCRAWL_MAX_DEPTH": 5,
    # Sitemaps downloaded or being read at once: each holds its body and a parser, so this
    # bounds memory (and keeps the newest-first order when an index lists many children).
    "SITEMAPCRAWL_CONCURRENT_SITEMAPS": 4,
    # Limits per file
    "SITEMAPCRAWL_MAX_SIZE": 52_428_800,  # decoded bytes read from one sitemap
    "SITEMAPCRAWL_MAX_DOWNLOAD_SIZE": 52_428_800,  # bytes downloaded for one sitemap
    "SITEMAPCRAWL_MAX_URLS_PER_FILE": 50_000,  # the protocol's limit: more is a violation
    "SITEMAPCRAWL_KEEP_EXCESS_URLS": True,  # keep (and flag) URLs past that limit
    "SITEMAPCRAWL_MAX_LOC_LENGTH": 2048,
    # bytes of robots.txt read (RFC 9309: at least 500 KiB); its Sitemap lines up to there
    "SITEMAPCRAWL_ROBOTS_MAX_SIZE": 500 * 1024,
    # bytes of a non-2xx body read (any request: sitemap, robots.txt, page); 0: no cap
    "SITEMAPCRAWL_ERROR_BODY_MAXSIZE": 64 * 1024,
    # A sitemap download still running after this share of its download_timeout is stopped
    # and what arrived is parsed (a server dripping bytes would otherwise cost everything).
    "SITEMAPCRAWL_READ_DEADLINE": 0.8,
    # A robots.txt or sitemap request's own deadline, retries included (seconds; 0: none)
    "SITEMAPCRAWL_SITEMAP_DEADLINE": 20.0,
    # A 429/503 asking (Retry-After) to wait longer than this is given up at once
    "SITEMAPCRAWL_RETRY_AFTER_MAX": 180.0,
    # Output
    "SITEMAPCRAWL_DEDUPLICATE": True,  # one item per URL even when listed in several files
    "SITEMAPCRAWL_SEGMENT_MIN_URLS": 5,  # a flat file's smaller path groups join "/"
    # URL items handed to pipelines and feeds per Scrapy item (SitemapUrlBatch); 1 = one each
    "SITEMAPCRAWL_ITEM_BATCH_SIZE": 250,
    # Lastmod verification (sitemapcrawl.spidermiddlewares.lastmod, sitemapcrawl.pipelines)
    "SITEMAPCRAWL_VERIFY_ENABLED": True,  # L0 verdicts per segment and the site report
    # fetch a sample of pages to verify lastmod (argument: sample=off for discovery only)
    "SITEMAPCRAWL_SAMPLE_ENABLED": True,
    "SITEMAPCRAWL_SAMPLE_SEGMENT_BUDGET": 30,
    "SITEMAPCRAWL_SAMPLE_SITE_BUDGET": 150,
    "SITEMAPCRAWL_SAMPLE_PANEL": 10,  # fixed URLs re-fetched every run, within the budget
    "SITEMAPCRAWL_SAMPLE_SEED": "sitemapcrawl",
    "SITEMAPCRAWL_PAGE_MAX_SIZE": 5 * 1024 * 1024,  # bytes: larger sampled/refetched pages unread
    "SITEMAPCRAWL_REPORT_PATH": "",  # also write the site report as JSON here
    "SITEMAPCRAWL_HTML_REPORT_PATH": None,  # also write the HTML site report here
    # Link following (sitemapcrawl.linkfollow): argument links=off|fallback|sample|full
    "SITEMAPCRAWL_LINKS": "sample",  # sample: only when pages are fetched anyway
    "SITEMAPCRAWL_LINKS_MAX_DEPTH": 5,  # clicks from the home page (full, fallback)
    "SITEMAPCRAWL_LINKS_MAX_PAGES": 1000,  # pages fetched for links (full, fallback)
    "SITEMAPCRAWL_LINKS_SAMPLE_DEPTH": 1,  # clicks from a sampled page or the home page
    "SITEMAPCRAWL_LINKS_SAMPLE_PAGES": 100,  # pages fetched for links (sample)
    "SITEMAPCRAWL_LINKS_MAX_QUERY_VARIANTS": 20,  # distinct query strings per path
    "SITEMAPCRAWL_LINKS_NOFOLLOW": True,  # respect rel=nofollow and meta robots nofollow
    "SITEMAPCRAWL_LINKS_MAX_PAGE_SIZE": 5 * 1024 * 1024,  # bytes: larger pages are skipped
    "SITEMAPCRAWL_LINKS_CHECK_UNREACHED": True,  # full: fetch listed URLs links missed
    # State across runs (sitemapcrawl.incremental): verdict history, lastmod history, fingerprints,
    # sitemap validators. Relative paths are under the crawl's working directory; "" = off.
    "SITEMAPCRAWL_STATE_PATH": ".scrapy/sitemapcrawl/state.sqlite",  # argument: state
    # scrapy sitemapstate prune: sites not crawled for this many days, runs before each
    # site's last K (0: keep)
    "SITEMAPCRAWL_STATE_RETENTION_DAYS": 365,
    "SITEMAPCRAWL_STATE_KEEP_RUNS": 50,
    "SITEMAPCRAWL_STATE_LOCK_TIMEOUT": 5.0,  # then crawl without the file another crawl holds
    "SITEMAPCRAWL_CONDITIONAL_SITEMAPS": True,  # If-None-Match / If-Modified-Since; 304 replays
    # What the feed gets (argument: emit): all (every URL, with its status when the state
    # file is on) | changes (new, moved and changed URLs, and removed and unconfirmed ones)
    "SITEMAPCRAWL_EMIT": "all",
    "SITEMAPCRAWL_INDEX_TRUST_MIN": 3,  # agreeing child changes before index lastmod skips
    "SITEMAPCRAWL_INDEX_AUDIT_SHARE": 0.1,  # skippable children fetched anyway, to check
    # Incremental runs (argument since=ISO|last; pages=refetch fetches what is marked)
    "SITEMAPCRAWL_INCREMENTAL_THETA": 0.3,  # refetch when P(changed) >= this (untrusted)
    "SITEMAPCRAWL_INCREMENTAL_MAX_AGE_DAYS": 30.0,  # refetch at least this often
    "SITEMAPCRAWL_INCREMENTAL_MAX_AGE_TRUSTED_DAYS": 365.0,  # … in a TRUSTED segment
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED": 0.03,  # audit share of unchanged URLs
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL": 0.08,
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_MIN": 1,  # audited URLs per TRUSTED segment and run
    "SITEMAPCRAWL_INCREMENTAL_PROBE_MIN": 0,  # random pages per untrusted segment and run (0: none)
    "SITEMAPCRAWL_INCREMENTAL_WAVE_ALPHA": 0.01,  # a wave: P(the changes | the rates) <= this
    "SITEMAPCRAWL_INCREMENTAL_WAVE_MAX": 1000,  # pages a wave refetches per segment and run
    # Learning per page: a page changed in this share of its own fetches (Beta(1, 1) mean,
    # at least PAGE_MIN_CHANGES changes; 0: off) is fetched every run; pages that changed
    # together on COCHANGE_MIN earlier runs (0: off) are fetched when one of them changed;
    # MOVE_LEARNER: stop following the lastmod moves of a page they showed unchanged
    "SITEMAPCRAWL_INCREMENTAL_PAGE_SHARE": 0.5,
    "SITEMAPCRAWL_INCREMENTAL_PAGE_MIN_CHANGES": 2,
    "SITEMAPCRAWL_INCREMENTAL_COCHANGE_MIN": 2,
    "SITEMAPCRAWL_INCREMENTAL_MOVE_LEARNER": False,
    "SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT": 200,  # a PROVISIONAL segment's first audit
    "SITEMAPCRAWL_INCREMENTAL_PAGE_DATES": True,  # change rates from verified page dates
    "SITEMAPCRAWL_CONDITIONAL_PAGES": True,  # refetch with verified ETag/Last-Modified
    # Incremental runs sample a segment whose lastmod stands verified only this often
    "SITEMAPCRAWL_RESAMPLE_DAYS": 7.0,
    "SITEMAPCRAWL_RESAMPLE_TRUSTED_DAYS": 28.0,
    "SITEMAPCRAWL_RESAMPLE_TRUSTED_RUNS": 8,
    # Production
    "SITEMAPCRAWL_PROXY": "",  # every request through this proxy (argument: proxy)
    # Workers sharing a crawl through scrapy-redis (see sitemapcrawl.distributed)
    "SITEMAPCRAWL_REDIS_URL": os.environ.get("SITEMAPCRAWL_REDIS_URL", ""),
    "SITEMAPCRAWL_REDIS_WAIT": 60.0,  # idle workers wait this long for others' progress
    # Observability
    "SITEMAPCRAWL_PROGRESS_ENABLED": True,
    "SITEMAPCRAWL_PROGRESS_INTERVAL": 60.0,
}


def _splits_feeds(settings: BaseSettings) -> bool:
    """Whether a feed is cut into files of so many items (``batch_item_count``)."""
    if settings.getint("FEED_EXPORT_BATCH_ITEM_COUNT"):
        return True
    return any(
        isinstance(options, dict) and options.get("batch_item_count")
        for options in settings.getdict("FEEDS").values()
    )


_STOCK_ROBOTS = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
_STOCK_COMPRESSION = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"
_STOCK_RETRY = "scrapy.downloadermiddlewares.retry.RetryMiddleware"
_STATUS_HANDLER = "sitemapcrawl.downloadhandlers.StatusHTTP11DownloadHandler"


class SitemapCrawlAddon:
    """Register sitemapcrawl's components and set its defaults.

    Enable it with ``ADDONS = {"sitemapcrawl.addon.SitemapCrawlAddon": 0}`` (the project's
    settings do).
    """

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in DEFAULTS.items():
            settings.set(name, value, "addon")
        redis_url = settings.get("SITEMAPCRAWL_REDIS_URL")
        if redis_url:
            for name, value in redis_settings(redis_url).items():
                settings.set(name, value, "addon")
        if (
            _splits_feeds(settings)
            and (settings.getpriority("SITEMAPCRAWL_ITEM_BATCH_SIZE") or 0)
            <= SETTINGS_PRIORITIES["addon"]
        ):
            # A feed cut into files of N items counts Scrapy items: keep one per URL.
            settings.set("SITEMAPCRAWL_ITEM_BATCH_SIZE", 1, "addon")
        if settings.getint("SITEMAPCRAWL_ITEM_BATCH_SIZE") > 1:
            # Scrapy reads up to 3 x CONCURRENT_ITEMS items of a callback ahead of its item
            # pipelines: 300 batches would hold a whole sitemap file in memory. Batches are
            # already bulk; the pipelines take them one at a time.
            settings.set("CONCURRENT_ITEMS", 1, "addon")
        settings.set("LOG_FORMATTER", "sitemapcrawl.logformatter.SitemapLogFormatter", "addon")
        exporters = "sitemapcrawl.exporters."
        settings.set(
            "FEED_EXPORTERS",
            {
                "csv": exporters + "SitemapCsvItemExporter",
                "json": exporters + "SitemapJsonItemExporter",
                "jsonlines": exporters + "SitemapJsonLinesItemExporter",
                "jsonl": exporters + "SitemapJsonLinesItemExporter",
                "jl": exporters + "SitemapJsonLinesItemExporter",
                "xml": exporters + "SitemapXmlItemExporter",
                "pickle": exporters + "SitemapPickleItemExporter",
                "marshal": exporters + "SitemapMarshalItemExporter",
            },
            "addon",
        )
        settings.setdefault_in_component_priority_dict("EXTENSIONS", SitemapProgressExtension, 500)
        # Sitemap bodies carry no Scrapy size cap: this stops them, keeping what arrived.
        settings.setdefault_in_component_priority_dict("EXTENSIONS", SitemapDownloadExtension, 500)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", HtmlReportExtension, 500)
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SitemapLastmodMiddleware, 550
        )
        # Next to the spider (above the built-in ones, 25-1000): every other spider
        # middleware, item pipeline and item_scraped receiver gets URL items in batches.
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SitemapBatchMiddleware, 1010
        )
        # Before the sampling pipeline (which writes this run's URL rows): each URL's status
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", UrlStatusPipeline, 290)
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", PageSamplingPipeline, 300)
        # emit=changes: unchanged URLs leave the feed after every pipeline of ours saw them
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", ChangesFeedPipeline, 990)
        # Last: counts item_scraped_count instead of CoreStats' per-item signal receiver.
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", ScrapedCountPipeline, 1000)
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", PrivateRedirectMiddleware, 950
        )
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", SitemapRedirectMiddleware, 951
        )
        _replace_downloader_parts(settings)


def _replace_downloader_parts(settings: BaseSettings) -> None:
    """Scrapy's robots.txt, retry and compression middlewares and its HTTP handler give way
    to sitemapcrawl's, unless a project disabled or chose them on purpose."""
    # Scrapy's robots.txt middleware lets concurrent waiters through (see robotstxt.py):
    # ours takes its place, unless a project disabled it on purpose.
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    if middlewares.get(_STOCK_ROBOTS, 0) is not None:
        middlewares[_STOCK_ROBOTS] = None
        middlewares.setdefault(SitemapRobotsTxtMiddleware, 100)
    # robots.txt and sitemaps get a deadline and Retry-After (retry.py); pages as before.
    if middlewares.get(_STOCK_RETRY, 0) is not None:
        middlewares[_STOCK_RETRY] = None
        middlewares.setdefault(SitemapRetryMiddleware, 550)
    # Sitemap bodies stay encoded for the core's streaming decoder (httpcompression.py).
    if middlewares.get(_STOCK_COMPRESSION, 0) is not None:
        middlewares[_STOCK_COMPRESSION] = None
        middlewares.setdefault(SitemapHttpCompressionMiddleware, 590)
    settings.set(
        "DOWNLOADER_MIDDLEWARES",
        middlewares,
        priority=settings.getpriority("DOWNLOADER_MIDDLEWARES") or 0,
    )
    # The status before the body (downloadhandlers.py): error bodies stop at a small
    # cap. A project that chose its own HTTP handler keeps it.
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    for scheme in ("http", "https"):
        handlers.setdefault(scheme, _STATUS_HANDLER)
    settings.set(
        "DOWNLOAD_HANDLERS",
        handlers,
        priority=settings.getpriority("DOWNLOAD_HANDLERS") or 0,
    )
