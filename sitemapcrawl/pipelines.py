"""The page-sampling pipeline: sample pages per segment, read their own dates, judge lastmod.

Items stream through ``process_item``, which offers each URL to its segment's seeded,
stratified sampler (memory O(budget) per segment). When discovery is over (the spider is
idle), the samples are fetched through the Scrapy engine, politely (robots.txt obeyed,
AutoThrottle and the download slots apply), each page's own modification date is read with
extruct (``sitemapcrawl.verify.pagedates``) and compared with its lastmod; then every segment
gets a verdict and one ``SiteReport`` item closes the feed (and is written to
``SITEMAPCRAWL_REPORT_PATH`` when set).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.extensions.corestats import CoreStats
from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure
from w3lib.url import safe_url_string

from sitemapcrawl.distributed import LOCAL_META
from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem, SiteReport
from sitemapcrawl.linkfollow import LinkFollower, over_size_cap, redirect_target
from sitemapcrawl.sitemaps.dates import format_utc, parse_feed_date, parse_lastmod
from sitemapcrawl.sitemaps.scope import same_host
from sitemapcrawl.verification import PendingReport, site_verification
from sitemapcrawl.verify.pagedates import page_evidence
from sitemapcrawl.verify.sampling import SegmentSampler, allocate
from sitemapcrawl.verify.schedule import site_utc_offset
from sitemapcrawl.verify.scoring import (
    ESCALATED_SAMPLE,
    REDIRECT_OFFSITE,
    agreement,
    static_verdict,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Self

    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider

    from sitemapcrawl.sitemaps.dates import LastMod
    from sitemapcrawl.state import CrawlState
    from sitemapcrawl.verification import SegmentRecord
    from sitemapcrawl.verify.pagedates import DateEvidence
    from sitemapcrawl.verify.sampling import SampledUrl
    from sitemapcrawl.verify.scoring import SegmentL0, Verdict

logger = logging.getLogger(__name__)

__all__ = ["PageSamplingPipeline", "ScrapedCountPipeline"]

_P = "sitemapcrawl/sample/"
_USABLE = frozenset({"TRUSTED", "PROVISIONAL", "OVER_REPORTING"})
_SAMPLE_META = "sitemapcrawl_sample"
_REFETCH_META = "sitemapcrawl_refetch"
_R = "sitemapcrawl/refetch/"
_DISCOVERY_STATS = ("sitemapcrawl/sitemaps/", "sitemapcrawl/robots/", "sitemapcrawl/guess/")


class ScrapedCountPipeline:
    """The last item pipeline: counts ``item_scraped_count`` in place of Scrapy's CoreStats
    extension, whose ``item_scraped`` receiver it disconnects.

    On Scrapy 2.19 every ``item_scraped`` receiver costs an asyncio Task per item (about
    15 µs of CPU on the bench machine): with one URL item per sitemap entry, CoreStats' one
    line of counting was about a tenth of a crawl's CPU (docs/benchmarks.md). An item that
    leaves the last pipeline is the item Scrapy then reports as scraped, so the count is
    the same. With CoreStats disabled it counts nothing; disabled itself, CoreStats keeps
    counting as usual.
    """

    def __init__(self, crawler: Crawler) -> None:
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.counting = False
        for extension in getattr(crawler.extensions, "middlewares", ()):
            if isinstance(extension, CoreStats):
                crawler.signals.disconnect(extension.item_scraped, signal=signals.item_scraped)
                self.counting = True

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if self.counting:
            count = len(item.items) if type(item) is SitemapUrlBatch else 1
            self.stats.inc_value("item_scraped_count", count)
        return item


class PageSamplingPipeline:
    """Sample pages per segment, fetch them, extract their dates, give each segment a verdict.

    Settings: ``SITEMAPCRAWL_VERIFY_ENABLED`` (L0 verdicts and the report),
    ``SITEMAPCRAWL_SAMPLE_ENABLED`` (fetch pages; argument ``sample=on``),
    ``SITEMAPCRAWL_SAMPLE_SEGMENT_BUDGET``, ``SITEMAPCRAWL_SAMPLE_SITE_BUDGET``,
    ``SITEMAPCRAWL_SAMPLE_PANEL``, ``SITEMAPCRAWL_SAMPLE_SEED``, ``SITEMAPCRAWL_REPORT_PATH``,
    ``SITEMAPCRAWL_PAGE_MAX_SIZE`` (bytes: a larger sampled or refetched page is not read).
    Meta written on page requests: ``sitemapcrawl_sample``. Stats:
    ``sitemapcrawl/sample/requested_count``, ``fetched_count``, ``failed_count``,
    ``outcome_count/<OUTCOME>``, ``sitemapcrawl/verdict_count/<VERDICT>``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED"):
            raise NotConfigured("SITEMAPCRAWL_VERIFY_ENABLED is off")
        self.crawler = crawler
        self.site = site_verification(crawler)
        self._sampling_setting = settings.getbool("SITEMAPCRAWL_SAMPLE_ENABLED")
        self._sampling: bool | None = None
        self.segment_budget = settings.getint("SITEMAPCRAWL_SAMPLE_SEGMENT_BUDGET")
        self.site_budget = settings.getint("SITEMAPCRAWL_SAMPLE_SITE_BUDGET")
        self.panel = settings.getint("SITEMAPCRAWL_SAMPLE_PANEL")
        self.seed = settings.get("SITEMAPCRAWL_SAMPLE_SEED")
        self.page_max_size = settings.getint("SITEMAPCRAWL_PAGE_MAX_SIZE")
        self._planned: set[str] = set()  # the pages this run fetches on their own
        self._l0: dict[str, SegmentL0] = {}  # per segment, once discovery is over
        self.redirects = (
            settings.getint("REDIRECT_MAX_TIMES") if settings.getbool("REDIRECT_ENABLED") else 0
        )
        report_path = settings.get("SITEMAPCRAWL_REPORT_PATH")
        self.report_path = Path(report_path) if report_path else None
        self.phase = "discovery"
        self._due: dict[str, bool] = {}
        self._report_requested = False  # the report's request went to the engine
        self._note_links: bool | None = None
        #: the reports built, by site root ("" for a crawl of one site)
        self.reports: dict[str, SiteReport] = {}
        self._links_setting = settings.get("SITEMAPCRAWL_LINKS")
        #: the link followers by site root ("" for a crawl of one site)
        self._followers: dict[str, LinkFollower] = {}
        self.site.closing_report = self._final_report
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- streaming ------------------------------------------------------------------------

    @property
    def sampling(self) -> bool:
        """Whether pages are sampled: the spider's ``sample`` argument, else the setting."""
        if self._sampling is None:
            chosen = getattr(self.crawler.spider, "sample_pages", None)
            self._sampling = self._sampling_setting if chosen is None else bool(chosen)
        return self._sampling

    def _follower(self, site: str) -> LinkFollower:
        """The link follower of ``site`` ("" in a crawl of one site; in a crawl over several,
        each site has its own, with its own page budget and coverage), in the mode of the
        spider's ``links`` argument, else of the setting."""
        found = self._followers.get(site)
        if found is None:
            mode = getattr(self.crawler.spider, "links_mode", None) or self._links_setting
            found = self._followers[site] = LinkFollower(self.crawler, str(mode))
        return found

    @property
    def links(self) -> LinkFollower:
        """The crawl's link follower (the first site's in a crawl over several: the mode is
        the same for all)."""
        sites = self.site.sites
        return self._follower(sites[0] if sites else "")

    def _links_of(self, url: str) -> LinkFollower | None:
        """The link follower that is told about the page ``url``, when links are followed."""
        found = self._followers.get(urljoin(url, "/") if self.site.sites else "")
        return found if found is not None and found.active else None

    def _following(self) -> list[LinkFollower]:
        return [follower for follower in self._followers.values() if follower.active]

    @property
    def pages_fetched(self) -> bool:
        """Whether this crawl fetches pages anyway (samples, or ``pages=refetch``)."""
        return self.sampling or bool(getattr(self.crawler.spider, "fetch_pages", False))

    def process_item(self, item: Any) -> Any:
        if type(item) is SitemapUrlBatch:
            if self._url_work():
                for entry in item.items:
                    self._url_item(entry)
        elif type(item) is SitemapUrlItem:
            self._url_item(item)
        elif type(item) is PendingReport and self.site.closing_report is not None:
            return self.site.closing_report(item)
        return item

    def _noting_links(self) -> bool:
        """Whether listed URLs are noted for the link follower: only when links will be
        followed (it costs memory)."""
        if self._note_links is None:
            mode = self.links.mode
            self._note_links = mode == "full" or (mode == "sample" and self.pages_fetched)
        return self._note_links

    def _url_work(self) -> bool:
        """Whether URL items are looked at one by one: for the link follower, the state
        file or the sampler (otherwise a batch passes as it is)."""
        return self._noting_links() or self.site.state is not None or self.sampling

    def _url_item(self, item: SitemapUrlItem) -> None:
        if item.found_via == "links":
            return
        if self._noting_links():
            self._follower(self.site.site_of(item.segment)).note_listed(item)
        state = self.site.state
        if state is not None:
            record = self.site.segment(item.segment)
            decision = state.observe_item(item, record.t_ref or self.site.started)
            if decision is not None:
                item.refetch = decision.refetch
                item.refetch_reason = decision.reason
                stats = self.crawler.stats
                assert stats is not None
                stats.inc_value(f"sitemapcrawl/incremental/{decision.reason}_count")
                if decision.refetch:
                    stats.inc_value("sitemapcrawl/incremental/refetch_count")
        if self.sampling:
            record = self.site.segment(item.segment)
            if record.sampler is None and state is not None:
                due = self._due.get(item.segment)
                if due is None:
                    due = self._due[item.segment] = state.sample_due(
                        item.segment, record.t_ref or self.site.started
                    )
                    if not due:
                        stats = self.crawler.stats
                        assert stats is not None
                        if self.panel and state.panel_due(item.segment):
                            # not re-judged on its pages, but its panel is re-fetched: the
                            # random observations the cross-run score needs (§5d)
                            record.panel_only = True
                            self._inc(record.site, _P + "panel_segment_count")
                        else:
                            self._inc(record.site, _P + "skipped_segment_count")
                if not due and not record.panel_only:
                    return
            if record.sampler is None:
                record.sampler = SegmentSampler(
                    seed=f"{self.seed}:{item.segment}",
                    budget=self.panel if record.panel_only else self.segment_budget,
                    panel=self.panel,
                    now=record.t_ref or self.site.started,
                    # candidates kept for an escalated sample
                    reserve=0
                    if record.panel_only
                    else max(0, ESCALATED_SAMPLE - self.segment_budget),
                )
            raw = item.lastmod_raw
            record.sampler.offer(item.url, parse_lastmod(raw) if raw is not None else None)

    # -- phases ---------------------------------------------------------------------------

    def spider_idle(self, spider: Spider) -> None:
        if getattr(spider, "discovery_pending", False):
            return  # the spider still holds sitemaps back: discovery is not over
        if self.phase == "discovery":
            self.phase = "sampling"
            requests = self._plan() if self.sampling else []
            state = self.site.state
            following = self._start_links(spider, requests)
            if requests or (state is not None and state.pending) or following:
                fetching = deferred_from_coro(self._fetch_all(requests))
                fetching.addBoth(self._sampled)
                raise DontCloseSpider
            self._schedule_report()
        elif self.phase == "report" and self._report_requested:
            # The report's request was processed without building it: its callback or a
            # spider middleware raised (Scrapy logged it). Close instead of waiting for ever.
            logger.error("The site report could not be built; the crawl ends without it")
            self.phase = "done"
        if self.phase != "done":
            raise DontCloseSpider  # sampled pages or the report are still on their way

    def _start_links(self, spider: Spider, requests: list[Request]) -> bool:
        """Start the link follower when its mode applies to this crawl; plan the samples as
        pages it must not fetch again."""
        links = self.links
        stats = self.crawler.stats
        assert stats is not None
        if links.mode == "off" or getattr(spider, "argument_error", None):
            return False
        if links.mode == "sample" and not self.pages_fetched:
            return False  # a crawl that fetches no page does not start to for links
        origin = getattr(spider, "origin", None) or next(
            iter(getattr(spider, "sitemap_urls", None) or ()), None
        )
        policy = getattr(spider, "_policy", None)
        if origin is None or policy is None:
            return False
        several = self.site.sites
        started = False
        for site in several or [urljoin(origin, "/")]:  # each site of the crawl from its home
            values = self.site.site_stats[site] if several else stats.get_stats()
            if links.mode == "fallback" and values.get("sitemapcrawl/sitemaps/parsed_count"):
                continue
            follower = self._follower(site if several else "")
            follower.start(site, policy(site), home=True)
            if several:  # its link-only URLs' segments carry their site, as the sitemaps' do
                follower.segment_prefix = site.rstrip("/")
            if links.mode == "fallback":
                logger.info("No sitemap found: crawling %(site)s by its links", {"site": site})
            started = True
        if not started:
            return False
        for request in requests:
            if (told := self._links_of(request.url)) is not None:
                told.planned(request.url, "sample")
        return True

    def _inc(self, site: str, key: str, count: int = 1) -> None:
        """Add to a stat, and to ``site``'s share of it in a crawl over several sites."""
        stats = self.crawler.stats
        assert stats is not None
        self.site.inc(stats, site, key, count)

    def _per_site(self, sizes: Iterable[tuple[SegmentRecord, int]]) -> dict[str, int]:
        """Pages per segment within the site budget: each site of the crawl has its own."""
        by_site: dict[str, dict[str, int]] = {}
        for record, size in sizes:
            by_site.setdefault(record.site, {})[record.name] = size
        budgets: dict[str, int] = {}
        for sizes_of_site in by_site.values():
            budgets.update(allocate(sizes_of_site, self.site_budget))
        return budgets

    def _plan(self) -> list[Request]:
        records = [r for r in self.site.segments.values() if r.sampler is not None]
        state = self.site.state
        if state is not None:  # "maybe due" segments (see ``CrawlState.sample_due``)
            for record in list(records):
                if record.panel_only:
                    continue
                centre = self._l0_of(record).as_dict().get("cluster_centre")
                if not state.sample_due(record.name, record.t_ref or self.site.started, centre):
                    records.remove(record)
                    record.sampler = None
                    self._inc(record.site, _P + "skipped_segment_count")
        budgets = self._per_site((r, self.segment_budget) for r in records)
        requests = []
        for record in records:
            assert record.sampler is not None
            chosen = record.sampler.sample()[: budgets.get(record.name, 0)]
            requests += [self._sample_request(record, sampled) for sampled in chosen]
            self.site.count(record.site, _P + "requested_count", len(chosen))
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(_P + "requested_count", len(requests))
        return requests

    def _sample_request(self, record: SegmentRecord, sampled: SampledUrl) -> Request:
        return Request(
            sampled.url,
            cb_kwargs={"record": record, "sampled": sampled},
            meta={_SAMPLE_META: record.name, **self._page_meta()},
            dont_filter=True,
            priority=-10,
        )

    def _page_meta(self) -> dict[str, Any]:
        """Meta of sampled and refetched pages: every status reaches us (redirects are
        followed by ``_download``, within the site only), and the body is capped. A page
        that still fails after Scrapy's retries is an outcome we count and report, not an
        error of the crawl: Scrapy gives up on it with a WARNING (``give_up_log_level``)."""
        return {
            "handle_httpstatus_all": True,
            "download_maxsize": self.page_max_size,
            "download_warnsize": 0,
            "give_up_log_level": "WARNING",
        }

    async def _download(self, engine: ExecutionEngine, request: Request, via: str) -> Response:
        """``request`` through the engine. A redirect to the same site (the page's host or
        its ``www.`` twin, any scheme) is followed, at most ``REDIRECT_MAX_TIMES`` hops and
        never in a loop: the page's evidence is the page it leads to. The 3xx response is
        returned as it is when the redirect leads to another host (that page says nothing
        about this site's lastmod) or to a page this run fetches on its own (sampled, to
        be refetched, or fetched already for links): a page is fetched once. Every hop is
        shown to the link follower."""
        links = self._links_of(request.url)
        hops, seen = self.redirects, {request.url}
        while True:
            response = await engine.download_async(request)
            if links is not None:
                links.observe(request.url, response, via)
            target = _redirect_target(response)
            if (
                target is None
                or hops <= 0
                or target in seen
                or target in self._planned
                or not same_host(target, request.url)
                or (links is not None and links.was_fetched(target))
            ):
                return response
            hops -= 1
            seen.add(target)
            self.crawler.stats.inc_value(_P + "redirect_followed_count")
            request = request.replace(url=target)

    async def _fetch_all(self, requests: list[Request]) -> None:
        """Fetch the samples, then more pages of the segments whose sample left the
        verdict undecided (escalation, §5b), then the pages marked for refetch
        (``pages=refetch``), through the engine's downloader (robots.txt, throttling,
        retries apply), in this worker, at most ``CONCURRENT_REQUESTS`` at a time. A page
        sampled is not fetched again as a refetch."""
        engine = self.crawler.engine
        assert engine is not None
        state = self.site.state
        sampled = {r.url for r in requests}
        self._planned = sampled
        workers = max(1, self.crawler.settings.getint("CONCURRENT_REQUESTS"))

        async def fetch(pending: Iterator[Request]) -> None:
            async def worker() -> None:
                for request in pending:
                    if _REFETCH_META in request.meta:
                        await self._refetch(engine, request)
                    else:
                        await self._fetch(engine, request)

            await asyncio.gather(*(worker() for _ in range(workers)))

        await fetch(iter(requests))
        more = self._escalations(sampled)
        if more:
            sampled.update(r.url for r in more)
            await fetch(iter(more))
        if state is not None and state.pending:
            await fetch(self._refetches(state, sampled))
        following = self._following()
        if following:
            # After the samples and refetches: a link to one of them finds it fetched.
            proxy = getattr(self.crawler.spider, "_proxy_meta", None) or {}
            await asyncio.gather(*(links.crawl(engine, workers, proxy) for links in following))

    def _escalations(self, fetched: set[str]) -> list[Request]:
        """More pages for the segments whose verdict the sample left undecided (the Wilson
        interval straddles the bar, or too few pages carried evidence): each is sampled
        up to ``ESCALATED_SAMPLE`` (60) pages, the first sample's pages included; all of
        them together at most ``SITEMAPCRAWL_SAMPLE_SITE_BUDGET`` more pages."""
        wanted: dict[str, tuple[SegmentRecord, list[SampledUrl]]] = {}
        for record in self.site.segments.values():
            sampler = record.sampler
            if sampler is None or record.panel_only or not sampler.reserve:
                continue
            if not self._judge(record)[3].evidence.get("escalate"):
                continue
            more = [
                s for s in sampler.sample(sampler.budget + sampler.reserve) if s.url not in fetched
            ]
            if more:
                wanted[record.name] = (record, more)
        if not wanted:
            return []
        budgets = self._per_site((record, len(more)) for record, more in wanted.values())
        requests = []
        for name, (record, more) in sorted(wanted.items()):
            chosen = more[: budgets[name]]
            requests += [self._sample_request(record, sampled) for sampled in chosen]
            self._inc(record.site, _P + "escalated_segment_count")
            self._inc(record.site, _P + "escalated_count", len(chosen))
            self._inc(record.site, _P + "requested_count", len(chosen))
        return requests

    def _refetches(self, state: CrawlState, sampled: set[str]) -> Iterator[Request]:
        """The pages marked for refetch, conditional (``If-None-Match`` /
        ``If-Modified-Since``) where the segment's validators are verified and no link
        follower needs this run's bodies."""
        stats = self.crawler.stats
        assert stats is not None
        for url, segment, reason in state.pending_pages(sampled):
            self._planned.add(url)
            headers = {} if self._links_of(url) else state.page_validators(url, segment)
            if headers:
                self._inc(self.site.site_of(segment), _R + "conditional_count")
            yield Request(
                url,
                headers=headers or None,
                cb_kwargs={"segment": segment, "reason": reason},
                meta={_REFETCH_META: reason, **self._page_meta()},
                dont_filter=True,
                priority=-20,
            )

    async def _refetch(self, engine: ExecutionEngine, request: Request) -> None:
        """A page marked for refetch: fetch it and record what it is now."""
        stats = self.crawler.stats
        assert stats is not None
        state = self.site.state
        assert state is not None
        segment: str = request.cb_kwargs["segment"]
        reason: str = request.cb_kwargs["reason"]
        site = self.site.site_of(segment)
        self._inc(site, _R + "requested_count")
        links = self._links_of(request.url)
        if links is not None:
            links.planned(request.url, "refetch")
        try:
            response = await self._download(engine, request, "refetch")
        except Exception as exc:  # noqa: BLE001 - a failed refetch is counted, never fatal
            if links is not None:
                links.failed(request.url, exc, "refetch")
            self._inc(site, _R + "failed_count")
            state.observe_page(
                request.url,
                segment,
                reason,
                status=None,
                fetched_at=self._now(None),
                fingerprint=None,
                page_modified=None,
                http_last_modified=None,
                etag=None,
            )
            return
        self._inc(site, _R + f"status_count/{response.status}")
        fingerprint = page_modified = http_modified = etag = None
        not_modified = response.status == 304 and bool(
            request.headers.get(b"If-None-Match") or request.headers.get(b"If-Modified-Since")
        )
        if not_modified:
            self._inc(site, _R + "not_modified_count")
        if response.status == 200:
            evidence = page_evidence(
                response.body, response.url, _headers(response), now=self._now(response)
            )
            self._count_problems(evidence.problems, _R, site)
            fingerprint = evidence.fingerprint
            best = evidence.best_modified
            page_modified = best.value.iso if best is not None and best.value else None
            http_modified = evidence.http_last_modified.iso if evidence.http_last_modified else None
            etag = evidence.etag
        observed = state.observe_page(
            request.url,
            segment,
            reason,
            status=response.status,
            fetched_at=self._now(response),
            fingerprint=fingerprint,
            page_modified=page_modified,
            http_last_modified=http_modified,
            etag=etag,
            not_modified=not_modified,
        )
        if observed is not None:
            self._inc(site, _R + ("changed_count" if observed["changed"] else "unchanged_count"))

    def _now(self, response: Response | None) -> dt.datetime:
        """The server's clock (its ``Date`` header), else ours."""
        if response is not None:
            raw = response.headers.get(b"Date")
            if raw:
                parsed = parse_feed_date(raw.decode("latin-1"))
                if parsed is not None and parsed.value is not None:
                    return parsed.value
        return dt.datetime.now(dt.UTC)

    async def _fetch(self, engine: ExecutionEngine, request: Request) -> None:
        record: SegmentRecord = request.cb_kwargs["record"]
        sampled: SampledUrl = request.cb_kwargs["sampled"]
        try:
            response = await self._download(engine, request, "sample")
        except Exception as exc:  # noqa: BLE001 - every fetch failure is one counted outcome
            if (links := self._links_of(sampled.url)) is not None:
                links.failed(sampled.url, exc, "sample")
            self._page_failed(record, sampled, _failure_reason(exc))
        else:
            self._page(response, record, sampled)

    def _sampled(self, result: Any) -> None:
        if isinstance(result, Failure):
            logger.error("Page sampling failed: %(error)s", {"error": result.getErrorMessage()})
        self._schedule_report()

    def _schedule_report(self) -> None:
        """The report is the spider's last item: a ``data:`` request whose callback (a spider
        method, so the request stays serialisable) yields it."""
        self.phase = "report"
        self.site.report_builder = self._final_report
        if self._following():
            self.site.link_items = self._link_only_items
        spider = self.crawler.spider
        callback = getattr(spider, "site_report", None)
        if callback is None:  # a spider that does not emit reports
            self.phase = "done"
            return
        self.crawler.engine.crawl(
            Request(
                "data:,",
                callback=callback,
                dont_filter=True,
                # LOCAL_META: with a shared (scrapy-redis) queue, this worker's report must
                # not be taken by another worker
                meta={"allow_offsite": True, "dont_obey_robotstxt": True, LOCAL_META: True},
            )
        )
        self._report_requested = True

    def _final_report(self, which: PendingReport | str = "") -> SiteReport:
        """The report of one site ("" for a crawl of one site), kept and saved in the state
        file (a crawl over several sites saves the list of its reports)."""
        site = which.site if isinstance(which, PendingReport) else which
        self.phase = "done"
        report = self.reports[site] = self.build_report(site)
        state = self.site.state
        if state is not None:
            state.store.save_report(state.run_id, self._reports_payload())
        return report

    def _reports_payload(self) -> dict[str, Any] | list[dict[str, Any]]:
        """The report as a dict; a crawl over several sites gives the list of its reports."""
        if not self.site.sites:
            return _as_dict(self.reports[""])
        return [_as_dict(self.reports[site]) for site in self.site.sites if site in self.reports]

    # -- pages ----------------------------------------------------------------------------

    def _page(self, response: Response, record: SegmentRecord, sampled: SampledUrl) -> None:
        stats = self.crawler.stats
        assert stats is not None
        headers = _headers(response)
        t_ref = record.t_ref or self.site.started
        result: dict[str, Any] = {
            "url": sampled.url,
            "stratum": sampled.stratum,
            "in_panel": sampled.in_panel,
            "lastmod": sampled.lastmod.iso if sampled.lastmod else None,
            "status": response.status,
            "final_url": response.url if response.url != sampled.url else None,
        }
        page_modified = None
        target = _redirect_target(response)
        if target is not None and not same_host(target, response.url):
            # A redirect to another host: what that page says is not about this lastmod.
            outcome = REDIRECT_OFFSITE
            result["final_url"] = target
        elif response.status != 200:
            outcome = f"HTTP_{response.status}"
        else:
            evidence = page_evidence(response.body, response.url, headers, now=t_ref)
            self._count_problems(evidence.problems, _P, record.site)
            best = evidence.best_modified
            if best is not None and best.value is not None:
                page_modified = best.value.iso
            published = evidence.published[0] if evidence.published else None
            fallback = evidence.http_last_modified
            if fallback is not None and _is_now(fallback, evidence.http_date):
                # Last-Modified = Date: a page generated per request says nothing (§5c)
                fallback = None
            outcome = agreement(
                sampled.lastmod,
                best.value if best is not None else fallback,
                published.value if published is not None else None,
                t_ref,
                built=record.sitemap_last_modified,
            )
            result.update(
                page_modified=_date_evidence(best),
                page_published=_date_evidence(published),
                http_last_modified=(
                    evidence.http_last_modified.iso if evidence.http_last_modified else None
                ),
                etag=evidence.etag,
                fingerprint=evidence.fingerprint,
                problems=list(evidence.problems),
            )
            self._inc(record.site, _P + "fetched_count")
        result["outcome"] = outcome
        self._inc(record.site, _P + f"outcome_count/{outcome.split(':')[0]}")
        state = self.site.state
        if state is not None:
            observed = state.observe_page(
                sampled.url,
                record.name,
                "panel" if sampled.in_panel else "sample",
                status=response.status,
                fetched_at=self._now(response),
                fingerprint=result.get("fingerprint"),
                page_modified=page_modified,
                http_last_modified=result.get("http_last_modified"),
                etag=result.get("etag"),
            )
            if observed is not None:
                result["change"] = observed
        record.samples.append(result)

    def _count_problems(self, problems: Iterable[str], prefix: str, site: str) -> None:
        """Count what was wrong with a page we read (broken JSON-LD, conflicting or future
        dates, a date that is the render time, not HTML, cut at the parse cap…)."""
        for problem in problems:
            self._inc(site, prefix + f"problem_count/{problem}")

    def _page_failed(self, record: SegmentRecord, sampled: SampledUrl, reason: str) -> None:
        self._inc(record.site, _P + "failed_count")
        self._inc(record.site, _P + "outcome_count/FETCH_FAILED")
        record.samples.append(
            {
                "url": sampled.url,
                "stratum": sampled.stratum,
                "in_panel": sampled.in_panel,
                "lastmod": sampled.lastmod.iso if sampled.lastmod else None,
                "status": None,
                "outcome": f"FETCH_FAILED:{reason}",
            }
        )

    # -- the report -----------------------------------------------------------------------

    def build_report(self, site: str = "") -> SiteReport:
        """The site report from the segment records and the crawl's stats; in a crawl over
        several sites, the report of ``site`` (its root): its segments, its share of the
        stats, its files and faults (crawl-wide faults, such as ``max_urls``, in each)."""
        stats = self.crawler.stats
        assert stats is not None
        values = stats.get_stats()
        spider = self.crawler.spider
        origin = getattr(spider, "origin", None) or ",".join(getattr(spider, "sitemap_urls", []))
        files = list(getattr(spider, "top_level_files", {}).values())
        faults = list(getattr(spider, "faults", []))
        if site:
            origin = site.rstrip("/")
            values = {
                **self.site.site_stats.get(site, {}),
                **{k: v for k, v in values.items() if k in _CRAWL_WIDE},
            }
            files = [_untagged(f) for f in files if f.get("site") == site]
            faults = [_untagged(f) for f in faults if f.get("site", "") in ("", site)]
        now = dt.datetime.now(dt.UTC)
        segments = []
        state = self.site.state
        verdicts: Counter[str] = Counter()
        urls_by_verdict: Counter[str] = Counter()
        by_segment = self._segment_coverage()
        records = [r for r in self.site.segments.values() if r.site == site]
        for record in sorted(records, key=lambda r: r.name):
            t_ref = record.t_ref or self.site.started
            l0, outcomes, problems, verdict = self._judge(record)
            name, reason, evidence = verdict.name, verdict.reason, verdict.evidence
            offset = site_utc_offset(
                m["raw"] for m in (s.get("page_modified") for s in record.samples) if m
            )
            if offset is not None:  # dates in the sitemap are read in the pages' zone
                evidence = {**evidence, "utc_offset_s": offset}
            cross_run: dict[str, Any] = {}
            if state is not None:
                name, reason, cross_run = state.judge(record.name, name, reason, evidence)
            verdicts[name] += 1
            urls_by_verdict[name] += record.urls
            self._inc(site, f"sitemapcrawl/verdict_count/{name}")
            segments.append(
                {
                    "segment": record.name,
                    "urls": record.urls,
                    "news": record.news,
                    "sitemaps": sorted(record.sitemaps),
                    "t_ref": format_utc(t_ref),
                    "clock_skew_seconds": record.clock_skew_seconds,
                    "verdict": name,
                    "reason": reason,
                    "evidence": evidence,
                    **({"static_verdict": verdict.name, "cross_run": cross_run} if state else {}),
                    "l0": l0.as_dict(),
                    "outcomes": dict(Counter(o.split(":")[0] for o in outcomes)),
                    "page_problems": dict(sorted(problems.items())),
                    "samples": sorted(record.samples, key=lambda s: s["url"]),
                    **(
                        {"coverage": by_segment.get(record.name, {})}
                        if by_segment is not None
                        else {}
                    ),
                }
            )
        total = sum(urls_by_verdict.values())
        usable = sum(n for name, n in urls_by_verdict.items() if name in _USABLE)
        return SiteReport(
            origin=origin,
            generated_at=format_utc(now.replace(microsecond=0)),
            sitemaps={
                **{
                    key.removeprefix("sitemapcrawl/"): value
                    for key, value in values.items()
                    if key.startswith(
                        ("sitemapcrawl/sitemaps/", "sitemapcrawl/robots/", "sitemapcrawl/guess/")
                    )
                },
                "files": sorted(files, key=lambda f: f["url"]),
            },
            urls={
                "found": values.get("sitemapcrawl/urls/found_count", 0),
                "duplicates": values.get("sitemapcrawl/urls/duplicate_count", 0),
                "out_of_scope": sum(
                    v for k, v in values.items() if k.startswith("sitemapcrawl/scope/")
                ),
                "lastmod_present": values.get("sitemapcrawl/lastmod/present_count", 0),
                "lastmod_missing": values.get("sitemapcrawl/lastmod/missing_count", 0),
                "lastmod_invalid": values.get("sitemapcrawl/lastmod/invalid_count", 0),
            },
            limits={
                k.removeprefix("sitemapcrawl/limits/"): v
                for k, v in values.items()
                if k.startswith("sitemapcrawl/limits/")
            },
            errors={
                k.removeprefix("sitemapcrawl/errors/"): v
                for k, v in values.items()
                if k.startswith("sitemapcrawl/errors/")
            },
            faults=faults,
            segments=segments,
            site_verdict={
                "verdict": urls_by_verdict.most_common(1)[0][0] if urls_by_verdict else None,
                "segments_by_verdict": dict(sorted(verdicts.items())),
                "urls_by_verdict": dict(sorted(urls_by_verdict.items())),
                "usable_share": round(usable / total, 4) if total else 0.0,
            },
            sample={
                "enabled": self.sampling,
                "segment_budget": self.segment_budget,
                "site_budget": self.site_budget,
                "panel": self.panel,
                "seed": self.seed,
                "requested": values.get(_P + "requested_count", 0),
                "fetched": values.get(_P + "fetched_count", 0),
                "failed": values.get(_P + "failed_count", 0),
            },
            incremental=(
                {
                    **state.incremental_summary({r.name for r in records} if site else None),
                    "pages_requested": values.get(_R + "requested_count", 0),
                    "pages_failed": values.get(_R + "failed_count", 0),
                    "pages_changed": values.get(_R + "changed_count", 0),
                    "pages_unchanged": values.get(_R + "unchanged_count", 0),
                }
                if state is not None and state.incremental
                else {}
            ),
            state=state.describe() if state is not None else {},
            coverage=self._coverage(values, site),
        )

    def _l0_of(self, record: SegmentRecord) -> SegmentL0:
        """A segment's L0 metrics, computed once: discovery is over, and the sampling
        plan, escalation and the report all read them."""
        l0 = self._l0.get(record.name)
        if l0 is None:
            l0 = self._l0[record.name] = record.accumulator.result(
                record.t_ref or self.site.started,
                sitemap_last_modified=record.sitemap_last_modified,
                index_lastmod=record.index_lastmod,
                news=record.news,
            )
        return l0

    def _judge(self, record: SegmentRecord) -> tuple[SegmentL0, list[str], Counter[str], Verdict]:
        """A segment's single-run verdict from its L0 metrics and its sampled pages."""
        t_ref = record.t_ref or self.site.started
        l0 = self._l0_of(record)
        outcomes = [s["outcome"] for s in record.samples]
        if record.panel_only:  # fetched for the cross-run score, not an L1 sample
            outcomes = []
        state = self.site.state
        moves = (
            state.cluster_moves(record.name, l0.as_dict().get("cluster_centre"))
            if state is not None
            else None
        )
        problems = Counter(p for s in record.samples for p in s.get("problems", ()))
        verdict = static_verdict(
            l0,
            outcomes,
            t_ref,
            generation_ruled_out=moves is not None and moves < 2,
            problems=problems,
        )
        return l0, outcomes, problems, verdict

    def _link_only_items(self) -> list[SitemapUrlItem]:
        """The URLs links reached that no sitemap lists, of every site followed."""
        return [item for links in self._following() for item in links.link_only_items()]

    def _segment_coverage(self) -> dict[str, dict[str, Any]] | None:
        """Per segment coverage when links were followed, else None."""
        following = self._following()
        if not following:
            return None
        by_segment: dict[str, dict[str, Any]] = {}
        for links in following:  # several sites: segment names carry their site
            by_segment.update(links.segments())
        return by_segment

    def _coverage(self, values: dict[str, Any], site: str) -> dict[str, Any]:
        """The report's ``coverage``: of ``site``'s link follower, when it followed links."""
        links = self._followers.get(site)
        if links is None or not links.active:
            return {}
        tally = links.tally
        tally.duplicates = values.get("sitemapcrawl/urls/duplicate_count", 0)
        tally.duplicate_examples = list(getattr(self.crawler.spider, "listed_twice", []))
        return links.summary()

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.report_path is None:
            return
        for site in self.site.sites or [""]:  # a crawl stopped before its reports were due
            if site not in self.reports:
                self.reports[site] = self.build_report(site)
        self.report_path.parent.mkdir(parents=True, exist_ok=True)
        with self.report_path.open("w", encoding="utf-8") as handle:
            json.dump(self._reports_payload(), handle, indent=2, ensure_ascii=False, default=str)
        logger.info("Site report written to %(path)s", {"path": self.report_path})


def _is_now(modified: LastMod, date: LastMod | None) -> bool:
    """``Last-Modified`` within a minute of the response's ``Date``."""
    if modified.value is None or date is None or date.value is None:
        return False
    return abs((modified.value - date.value).total_seconds()) <= 60


def _headers(response: Response) -> dict[str, str]:
    """A response's headers as text: list headers joined, a header that holds one value
    (``Date``, ``Last-Modified``, ``ETag``) sent twice read as Scrapy reads it, the last."""
    return {
        k.decode("latin-1"): (v[-1] if k.lower() in _SINGLE_VALUED else b", ".join(v)).decode(
            "latin-1"
        )
        for k, v in response.headers.items()
        if v
    }


_SINGLE_VALUED = frozenset({b"date", b"last-modified", b"etag", b"content-type"})


def _as_dict(report: SiteReport) -> dict[str, Any]:
    return asdict(report)


#: Stats about the whole crawl, told in the report of each of its sites.
_CRAWL_WIDE = frozenset({"sitemapcrawl/limits/max_urls_count"})


def _untagged(entry: dict[str, Any]) -> dict[str, Any]:
    """A fault or file entry without the site it was tagged with (several sites)."""
    return {k: v for k, v in entry.items() if k != "site"}


def _redirect_target(response: Response) -> str | None:
    """:func:`redirect_target` as the URL a request for it would have."""
    target = redirect_target(response)
    return safe_url_string(target) if target is not None else None


def _date_evidence(found: DateEvidence | None) -> dict[str, Any] | None:
    """A page date for the report: where it was found, as written, at what precision."""
    if found is None:
        return None
    return {
        "source": found.source,
        "field": found.field,
        "raw": found.raw,
        "precision": found.value.precision if found.value else None,
    }


def _failure_reason(exc: BaseException) -> str:
    """A failed page fetch's outcome detail: ``page_size`` where the body was over the
    cap (Scrapy cancels the download), else the exception's name (``IgnoreRequest`` for
    robots.txt, ``TimeoutError``…)."""
    return "page_size" if over_size_cap(exc) else type(exc).__name__
