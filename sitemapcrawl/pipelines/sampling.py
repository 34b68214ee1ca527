"""Item pipeline, verification: sample pages per segment, fetch them, and close with the report.

Items stream through ``process_item``, which offers each URL to its segment's seeded,
stratified sampler (memory O(budget) per segment) and, with the state file, decides
whether an incremental run refetches it. When discovery is over (the spider is idle), the
samples are fetched (``sitemapcrawl.pipelines.pages``), then more pages of the segments
their sample left undecided, then the pages marked for refetch, then links are followed;
then the spider emits one ``SiteReport`` per site (``sitemapcrawl.pipelines.report``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure

from sitemapcrawl import meta
from sitemapcrawl.crawlcontext import PendingReport, crawl_context
from sitemapcrawl.distributed import ReportElection
from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem
from sitemapcrawl.linkfollow import LinkFollowers
from sitemapcrawl.pipelines.pages import PageFetcher
from sitemapcrawl.pipelines.report import judge, site_reports
from sitemapcrawl.verify.sampling import SegmentSampler, allocate
from sitemapcrawl.verify.thresholds import ESCALATED_SAMPLE

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlcontext import SegmentRecord
    from sitemapcrawl.verify.sampling import SampledUrl

logger = logging.getLogger(__name__)

__all__ = ["PageSamplingPipeline"]

_P = "sitemapcrawl/sample/"
_SEGMENT = attrgetter("segment")


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
        self.context = crawl_context(crawler)
        self.segment_budget = settings.getint("SITEMAPCRAWL_SAMPLE_SEGMENT_BUDGET")
        self.site_budget = settings.getint("SITEMAPCRAWL_SAMPLE_SITE_BUDGET")
        self.panel = settings.getint("SITEMAPCRAWL_SAMPLE_PANEL")
        self.seed = settings.get("SITEMAPCRAWL_SAMPLE_SEED")
        self._sampling: bool | None = None
        self._note_links: bool | None = None
        self._due: dict[str, bool] = {}
        self._spent: Counter[str] = Counter()  # sampled pages asked for, per site
        self.phase = "discovery"  # then sampling, report, done
        self._report_requested = False  # the report's request went to the engine
        self.fetcher = PageFetcher(crawler, self.context)
        #: also tells the spider that a report is due when max_urls stops the crawl
        self.reports = site_reports(crawler)
        #: distributed mode: the workers' shares and their reporter (set when opened)
        self.election: ReportElection | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _inc(self, site: str, key: str, count: int = 1) -> None:
        """Add to a stat, and to ``site``'s share of it in a crawl over several sites."""
        stats = self.crawler.stats
        assert stats is not None
        self.context.inc(stats, site, key, count)

    @property
    def sampling(self) -> bool:
        """Whether pages are sampled (decided once the spider's arguments are known)."""
        if self._sampling is None:
            self._sampling = self.context.sampling(self.crawler.settings)
        return self._sampling

    @property
    def links(self) -> LinkFollowers:
        """The crawl's link followers, in the mode of the ``links`` argument, else of the
        setting (kept in the crawl context, where the report finds them)."""
        links = self.context.links
        if links is None:
            args = self.context.arguments
            mode = (
                args.links if args is not None else self.crawler.settings.get("SITEMAPCRAWL_LINKS")
            )
            context = self.context
            links = context.links = LinkFollowers(
                self.crawler, str(mode), context.sites, table=lambda: context.seen
            )
        return links

    # -- streaming ------------------------------------------------------------------------

    def process_item(self, item: Any) -> Any:
        if type(item) is SitemapUrlBatch:
            if self._url_work():
                self._url_items(item.items)
        elif type(item) is SitemapUrlItem:
            self._url_items((item,))
        elif type(item) is PendingReport:
            return self.reports.final(item.site)
        return item

    def _noting_links(self) -> bool:
        """Whether listed URLs are noted for the link follower: only when links will be
        followed (it costs memory)."""
        if self._note_links is None:
            mode = self.links.mode
            fetched = self.context.pages_fetched(self.crawler.settings)
            self._note_links = mode == "full" or (mode == "sample" and fetched)
        return self._note_links

    def _url_work(self) -> bool:
        """Whether URL items are looked at one by one: for the link follower, the state
        file or the sampler (otherwise a batch passes as it is)."""
        return self._noting_links() or self.context.state is not None or self.sampling

    def _url_items(self, items: Iterable[SitemapUrlItem]) -> None:
        """A batch's URL items (one sitemap file's, mostly one segment's): noted for the
        link follower, decided on an incremental run, offered to their segment's sampler,
        a run of one segment's items at a time (what depends on the segment is looked up
        once per run)."""
        context = self.context
        noting = self._noting_links()
        deciding = context.state is not None
        sampling = self.sampling
        listed = (item for item in items if item.found_via != "links")
        for segment, group in groupby(listed, key=_SEGMENT):
            run = list(group)
            if noting:
                self.links.of_site(context.site_of(segment)).note_listed_run(run, segment)
            if deciding:
                for item in run:
                    self._decide(item)
            if sampling:
                sampler = self._sampler(context.segment(segment))
                if sampler is not None:
                    sampler.offer_items(run)

    def _sampler(self, record: SegmentRecord) -> SegmentSampler | None:
        """The segment's sampler, made at its first URL; None when its pages are not
        sampled on this run."""
        if record.sampler is None and not self._sampler_due(record):
            return None
        if record.sampler is None:
            record.sampler = SegmentSampler(
                seed=f"{self.seed}:{record.name}",
                budget=self.panel if record.panel_only else self.segment_budget,
                panel=self.panel,
                now=record.t_ref or self.context.started,
                # candidates kept for an escalated sample
                reserve=0 if record.panel_only else max(0, ESCALATED_SAMPLE - self.segment_budget),
            )
        return record.sampler

    def _decide(self, item: SitemapUrlItem) -> None:
        """An incremental run's refetch decision for ``item``, on the item."""
        state = self.context.state
        assert state is not None
        record = self.context.segment(item.segment)
        decision = state.observe_item(item, record.t_ref or self.context.started)
        if decision is None:
            return
        item.refetch = decision.refetch
        item.refetch_reason = decision.reason
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(f"sitemapcrawl/incremental/{decision.reason}_count")
        if decision.refetch:
            stats.inc_value("sitemapcrawl/incremental/refetch_count")

    def _sampler_due(self, record: SegmentRecord) -> bool:
        """Whether a segment's pages are offered to a sampler on this run: always without
        the state file; else when its standing verdict is due to be re-sampled, or its
        panel to be re-fetched for the cross-run score (docs/verification.md, "Audit")."""
        state = self.context.state
        if state is None:
            return True
        due = self._due.get(record.name)
        if due is None:
            due = self._due[record.name] = state.sample_due(
                record.name, record.t_ref or self.context.started
            )
            if not due:
                if self.panel and state.panel_due(record.name):
                    record.panel_only = True
                    self._inc(record.site, _P + "panel_segment_count")
                else:
                    self._inc(record.site, _P + "skipped_segment_count")
        return due or record.panel_only

    # -- phases ---------------------------------------------------------------------------

    def _stats(self) -> StatsCollector:
        stats = self.crawler.stats
        assert stats is not None
        return stats

    def spider_opened(self, spider: Spider) -> None:
        settings = self.crawler.settings
        if settings.get("SITEMAPCRAWL_REDIS_URL"):
            wait = settings.getfloat("SITEMAPCRAWL_REDIS_WAIT")
            self.election = ReportElection(self.crawler, spider, wait)
            self.election.register()

    def spider_idle(self) -> None:
        if self.context.discovery_pending:
            return  # the spider (or another worker) still reads sitemaps
        if self.phase == "discovery" and self.election is not None:
            turn = self.election.turn(self.context, self.links, self._stats())
            if turn is None:
                raise DontCloseSpider  # the other workers' shares are on their way
            if not turn:
                self.phase = "done"  # another worker samples, follows links, reports
                return
        if self.phase == "discovery":
            self.phase = "sampling"
            requests = self._plan() if self.sampling else []
            state = self.context.state
            following = self._start_links(requests)
            if requests or (state is not None and state.pending) or following:
                fetching = deferred_from_coro(self._fetch_all(requests))
                fetching.addBoth(self._sampled)
                raise DontCloseSpider
            self._schedule_report()
        elif self.phase == "report" and self.reports.built:
            self.phase = "done"
        elif self.phase == "report" and self._report_requested:
            # The report's request was processed without building it: its callback or a
            # spider middleware raised (Scrapy logged it). Close instead of waiting for ever.
            logger.error("The site report could not be built; the crawl ends without it")
            self.phase = "done"
        if self.phase != "done":
            raise DontCloseSpider  # sampled pages or the report are still on their way

    def _start_links(self, requests: list[Request]) -> bool:
        """Start the link followers when their mode applies to this crawl, each site's from
        its home page; the planned samples are pages they must not fetch again."""
        links = self.links
        args = self.context.arguments
        if links.mode == "off" or args is None:
            return False
        if links.mode == "sample" and not self.context.pages_fetched(self.crawler.settings):
            return False  # a crawl that fetches no page does not start to for links
        stats = self.crawler.stats
        assert stats is not None
        state = self.context.state
        if links.mode == "sample" and not requests and state is not None and state.incremental:
            # An incremental run samples its links with its pages: when no segment is due
            # for a sample (SITEMAPCRAWL_RESAMPLE_DAYS), its refetches are all it fetches
            # (a link sample on every run cost up to SITEMAPCRAWL_LINKS_SAMPLE_PAGES more).
            stats.inc_value("sitemapcrawl/links/not_due_count")
            return False
        several = self.context.sites
        started = False
        for site in several or [urljoin(args.origin or args.sitemap_urls[0], "/")]:
            values = self.context.site_stats[site] if several else stats.get_stats()
            parsed = "sitemapcrawl/sitemaps/parsed_count"
            if links.mode == "fallback" and (
                values.get(parsed) or (not several and self.context.peer_stats.get(parsed))
            ):
                continue
            follower = links.of_site(site if several else "")
            follower.start(site, self.context.scope_policy(site), home=True)
            if several:  # its link-only URLs' segments carry their site, as the sitemaps' do
                follower.segment_prefix = site.rstrip("/")
            if links.mode == "fallback":
                logger.info("No sitemap found: crawling %(site)s by its links", {"site": site})
            started = True
        if not started:
            return False
        for request in requests:
            if (told := links.of_url(request.url)) is not None:
                told.planned(request.url, "sample")
        return True

    def _plan(self) -> list[Request]:
        """The first sample of every segment due, within the site budget."""
        context = self.context
        records = [r for r in context.segments.values() if r.sampler is not None]
        state = context.state
        if state is not None:  # "maybe due" segments (see ``CrawlState.sample_due``)
            for record in list(records):
                if record.panel_only:
                    continue
                centre = record.l0(context.started).as_dict().get("cluster_centre")
                if not state.sample_due(record.name, record.t_ref or context.started, centre):
                    records.remove(record)
                    record.sampler = None
                    self._inc(record.site, _P + "skipped_segment_count")
        drawn = {r.name: r.sampler.sample() if r.sampler is not None else [] for r in records}
        budgets = self._per_site((r, len(drawn[r.name])) for r in records)
        requests = []
        for record in records:
            chosen = drawn[record.name][: budgets.get(record.name, 0)]
            requests += [self.fetcher.sample_request(record, sampled) for sampled in chosen]
            context.count(record.site, _P + "requested_count", len(chosen))
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(_P + "requested_count", len(requests))
        return requests

    def _per_site(self, sizes: Iterable[tuple[SegmentRecord, int]]) -> dict[str, int]:
        """Pages per segment within what is left of the site budget (each site of the
        crawl has its own): every sampled page of a site counts, escalations included."""
        by_site: dict[str, dict[str, int]] = {}
        for record, size in sizes:
            by_site.setdefault(record.site, {})[record.name] = size
        budgets: dict[str, int] = {}
        for site, sizes_of_site in by_site.items():
            left = max(0, self.site_budget - self._spent[site])
            granted = allocate(sizes_of_site, left)
            self._spent[site] += sum(granted.values())
            budgets.update(granted)
        return budgets

    async def _fetch_all(self, requests: list[Request]) -> None:
        """Fetch the samples, then more pages of the segments whose sample left the
        verdict undecided (escalation), then the pages marked for refetch
        (``pages=refetch``) and the waves they show (``PageObservations.waves``), then follow
        links. A page sampled is not fetched again as a
        refetch; a link to a page fetched already finds it fetched."""
        fetcher = self.fetcher
        state = self.context.state
        sampled = {r.url for r in requests}
        fetcher.planned = sampled
        await fetcher.fetch(iter(requests))
        more = self._escalations(sampled)
        if more:
            sampled.update(r.url for r in more)
            await fetcher.fetch(iter(more))
        if state is not None and state.pending:
            await fetcher.fetch(fetcher.refetches(state, sampled))
        if state is not None:  # before the waves: a template edit, a noisy page is no wave
            await fetcher.probe_noise(state)
            fetcher.settle(state)
        if state is not None and state.pages and state.incremental:
            await fetcher.fetch(fetcher.waves(state))
            await fetcher.probe_noise(state)
            fetcher.settle(state)
        following = self.links.active()
        if following:
            engine = self.crawler.engine
            assert engine is not None
            args = self.context.arguments
            proxy = args.proxy_meta if args is not None else {}
            workers = max(1, self.crawler.settings.getint("CONCURRENT_REQUESTS"))
            await asyncio.gather(*(links.crawl(engine, workers, proxy) for links in following))

    def _escalations(self, fetched: set[str]) -> list[Request]:
        """More pages for the segments whose verdict the sample left undecided (the Wilson
        interval straddles the bar, or too few pages carried evidence): each is sampled
        up to ``ESCALATED_SAMPLE`` (60) pages, the first sample's pages included, within
        what the first sample left of ``SITEMAPCRAWL_SAMPLE_SITE_BUDGET``: the site's
        sampled pages never exceed it."""
        wanted: dict[str, tuple[SegmentRecord, list[SampledUrl]]] = {}
        for record in self.context.segments.values():
            sampler = record.sampler
            if sampler is None or record.panel_only or not sampler.reserve:
                continue
            if not judge(self.context, record)[3].evidence.get("escalate"):
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
            if not chosen:  # undecided, but its site's budget is spent
                self._inc(record.site, _P + "escalation_over_budget_count")
                continue
            requests += [self.fetcher.sample_request(record, sampled) for sampled in chosen]
            self._inc(record.site, _P + "escalated_segment_count")
            self._inc(record.site, _P + "escalated_count", len(chosen))
            self._inc(record.site, _P + "requested_count", len(chosen))
        return requests

    def _sampled(self, result: Any) -> None:
        if isinstance(result, Failure):
            logger.error("Page sampling failed: %(error)s", {"error": result.getErrorMessage()})
        self._schedule_report()

    def _schedule_report(self) -> None:
        """The report is the spider's last item: a ``data:`` request whose callback (the
        spider's ``site_report``, so the request stays serialisable) yields it."""
        self.phase = "report"
        callback = self.context.report_callback
        if callback is None:  # a spider that does not emit reports
            self.phase = "done"
            return
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(
            Request(
                "data:,",
                callback=callback,
                dont_filter=True,
                # with a shared (scrapy-redis) queue, this worker's report must not be
                # taken by another worker
                meta={"allow_offsite": True, "dont_obey_robotstxt": True, meta.LOCAL: True},
            )
        )
        self._report_requested = True

    def spider_closed(self) -> None:
        if self.election is not None:
            if self.phase == "discovery":  # stopped: the reporter takes in what it read
                self.election.publish_share(self.context, self.context.links, self._stats())
            self.election.finish()
        self.reports.write()
