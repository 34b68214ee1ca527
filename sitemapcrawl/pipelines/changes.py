"""Item pipelines, what changed since the last run: each URL's status, and the feed of changes.

``UrlStatusPipeline`` (before the sampling pipeline, which writes this run's URL rows) sets
each URL item's ``status`` against the state file: ``new``, ``moved`` or ``unchanged``.
``ChangesFeedPipeline`` (after every pipeline of ours) leaves the unchanged URLs out of the
feed on ``-a emit=changes``; the spider's ``site_report`` callback then writes the changes
no URL item could tell (``UrlChange``: pages our fetches found changed, removed and
unconfirmed URLs). docs/output.md, "What changed since the last run".
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DropItem, NotConfigured

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

__all__ = ["ChangesFeedPipeline", "UrlStatusPipeline"]

_P = "sitemapcrawl/changes/"
#: A URL item's status, as its stat and the report's ``changes`` count it.
_COUNTED = {"new": "added", "moved": "moved", "unchanged": "unchanged"}
#: The URL items ``emit=changes`` keeps (a page's ``changed`` comes later, as a record).
_EMITTED = frozenset({"new", "moved"})
#: The report's counts of the whole run, as stats at the end.
_END_COUNTS = ("changed", "removed", "unconfirmed", "left_sitemaps", "carried_sitemaps")


class UrlStatusPipeline:
    """Set ``status`` on every sitemap URL item when the state file is in use: ``new``
    (never listed before), ``moved`` (its lastmod changed since the last run that listed
    it) or ``unchanged``, one state-file query per batch; link-only URLs (``found_via:
    links``) get none.

    Settings: ``SITEMAPCRAWL_VERIFY_ENABLED`` (the state file is used only with it).
    Stats: ``sitemapcrawl/changes/{added,moved,unchanged}_count`` (URL items by status),
    and at the end of a crawl whose report was built ``…/changed_count``,
    ``…/removed_count``, ``…/unconfirmed_count``, ``…/failed_sitemaps_count``,
    ``…/left_sitemaps_count``, ``…/carried_sitemaps_count`` (the report's ``changes``).
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_VERIFY_ENABLED is off: no state file is used")
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.context = crawl_context(crawler)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        state = self.context.state
        kind = type(item)
        if state is None or (kind is not SitemapUrlBatch and kind is not SitemapUrlItem):
            return item
        items = item.items if kind is SitemapUrlBatch else [item]
        listed = [entry for entry in items if entry.found_via != "links"]
        if not listed:
            return item
        counts: Counter[str] = Counter()
        statuses = state.url_changes.statuses((e.url, e.lastmod_raw) for e in listed)
        for entry, status in zip(listed, statuses, strict=True):
            entry.status = status
            counts[status] += 1
        for status, count in counts.items():
            self.stats.inc_value(f"{_P}{_COUNTED[status]}_count", count)
        return item

    def spider_closed(self) -> None:
        """The whole run's counts, once its changes were worked out (for the report)."""
        state = self.context.state
        if state is None or not state.url_changes.worked_out:
            return
        summary = state.url_changes.summary()
        for name in _END_COUNTS:
            self.stats.set_value(f"{_P}{name}_count", summary[name])
        self.stats.set_value(f"{_P}failed_sitemaps_count", len(summary["failed_sitemaps"]))


class ChangesFeedPipeline:
    """``-a emit=changes`` (``SITEMAPCRAWL_EMIT = "changes"``): URL items that are not
    ``new`` or ``moved`` leave the feed (``unchanged`` ones, and the link-only URLs, which
    no sitemap lists), after every pipeline of ours has seen them; a batch keeps the rest.
    Without the state file (another crawl held it), every URL is kept, and said once.

    Settings: ``SITEMAPCRAWL_VERIFY_ENABLED``, ``SITEMAPCRAWL_EMIT``. Stats:
    ``sitemapcrawl/changes/not_emitted_count`` (URL items left out).
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_VERIFY_ENABLED is off: no state file is used")
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.context = crawl_context(crawler)
        self._active: bool | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _filtering(self) -> bool:
        if self._active is None:
            args = self.context.arguments
            self._active = args is not None and args.emit == "changes"
            if self._active and self.context.state is None:
                logger.warning("emit=changes without the state file: every URL is written")
                self._active = False
        return self._active

    def process_item(self, item: Any) -> Any:
        kind = type(item)
        if (kind is not SitemapUrlBatch and kind is not SitemapUrlItem) or not self._filtering():
            return item
        if kind is SitemapUrlItem:
            if item.status in _EMITTED:
                return item
            self.stats.inc_value(_P + "not_emitted_count")
            raise DropItem(f"{item.status or 'link-only'} URL (emit=changes)", log_level="DEBUG")
        kept = [entry for entry in item.items if entry.status in _EMITTED]
        if len(kept) < len(item.items):
            self.stats.inc_value(_P + "not_emitted_count", len(item.items) - len(kept))
            item.items = kept
        return item
