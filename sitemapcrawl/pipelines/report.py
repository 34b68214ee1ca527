"""The site report: each segment's verdict and the crawl's findings, built from the crawl context.

Built once discovery, sampling and link following are over (or when ``max_urls`` stops the
crawl), one per site, and emitted as the feed's last item by the spider's ``site_report``
callback; kept in the state file and written to ``SITEMAPCRAWL_REPORT_PATH`` when set.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.items import SitemapUrlItem, SiteReport
from sitemapcrawl.sitemaps.dates import format_utc, parse_lastmod
from sitemapcrawl.verify.agreement import PAGE_STAMP
from sitemapcrawl.verify.dispersion import SegmentL0Accumulator, l0_signals
from sitemapcrawl.verify.refetch.moves import site_utc_offset
from sitemapcrawl.verify.rules import static_verdict
from sitemapcrawl.verify.stamps import SiteView, page_stamps, stamp_cluster

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlcontext import CrawlContext, SegmentRecord
    from sitemapcrawl.sitemaps.dates import LastMod
    from sitemapcrawl.verify.dispersion import SegmentL0
    from sitemapcrawl.verify.verdict import Verdict

logger = logging.getLogger(__name__)

__all__ = ["SiteReports", "judge", "site_reports"]

_P = "sitemapcrawl/"
#: Verdicts whose lastmod a scheduler may use.
_USABLE = frozenset({"TRUSTED", "PROVISIONAL", "OVER_REPORTING"})
#: Stats about the whole crawl, told in the report of each of its sites.
_CRAWL_WIDE = frozenset({"sitemapcrawl/limits/max_urls_count"})
_DISCOVERY_STATS = ("sitemapcrawl/sitemaps/", "sitemapcrawl/robots/", "sitemapcrawl/guess/")


#: The site reports of each crawl (``SiteReports.for_crawler``).
_REPORTS: WeakKeyDictionary[Crawler, SiteReports] = WeakKeyDictionary()


def site_reports(crawler: Crawler) -> SiteReports:
    """The crawl's site reports (created on first use): ``SiteReports.for_crawler``."""
    return SiteReports.for_crawler(crawler)


def judge(
    context: CrawlContext, record: SegmentRecord, *, sampling: bool | None = None
) -> tuple[SegmentL0, list[str], Counter[str], Verdict]:
    """A segment's single-run verdict from its L0 metrics, its site's, and its sampled pages.

    The pages' dates that are template or build stamps are no evidence (``PAGE_STAMP``,
    ``verify.stamps.page_stamps``): a date shared by most of the segment's or the site's
    sampled pages, or one that echoes the lastmods' own stamp. ``sampling``: whether this
    crawl samples pages (None: not known here), for the reason of a segment none of whose
    pages was sampled."""
    t_ref = record.t_ref or context.started
    l0 = record.l0(context.started)
    site = None if record.news else site_view(context, record)
    samples = [] if record.panel_only else record.samples  # the panel is for L2, not L1
    outcomes = [s["outcome"] for s in samples]
    dates = [_judged_date(s) for s in samples]
    stamped = page_stamps(
        dates,
        outcomes,
        population=_site_dates(context, record.site),
        echo_of=stamp_cluster(l0, site),
    )
    for sample, stamp in zip(samples, stamped, strict=True):
        sample["page_stamp"] = stamp  # the report shows which pages were set aside
    outcomes = [PAGE_STAMP if stamp else o for o, stamp in zip(outcomes, stamped, strict=True)]
    state = context.state
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
        site=site,
        archive_days=_archive_days(context, record, site),
        unsampled=None if outcomes else _why_unsampled(record, sampling),
    )
    return l0, outcomes, problems, verdict


#: Per crawl and site root: the site's L0 metrics, their signals, its segment count, and
#: its segments whose own lastmods are a build stamp, with their sitemap files.
_Built = tuple[tuple[str, frozenset[str]], ...]
_SITE_L0: WeakKeyDictionary[
    CrawlContext, dict[str, tuple[SegmentL0, tuple[str, ...], int, _Built]]
] = WeakKeyDictionary()


def site_view(context: CrawlContext, record: SegmentRecord) -> SiteView:
    """The L0 test over the whole site of ``record`` (every segment but news ones, computed
    once discovery is over), the share of ``record``'s lastmods in the site's cluster
    (docs/verification.md, "L0 over the whole site"), and the segments whose own lastmods
    are a build stamp and that share a sitemap file with ``record`` ("Static builds": the
    file that stamps them is the same build's as the one that dates ``record``'s URLs)."""
    by_site = _SITE_L0.setdefault(context, {})
    found = by_site.get(record.site)
    if found is None:
        records = [r for r in context.segments.values() if r.site == record.site and not r.news]
        t_ref = max((r.t_ref for r in records if r.t_ref is not None), default=context.started)
        moments = [
            moment
            for r in records
            for moment in (r.sitemap_last_modified, r.index_lastmod)
            if moment is not None
        ]
        merged = SegmentL0Accumulator.merged(r.accumulator for r in records)
        l0 = merged.result(t_ref, generation_times=sorted(set(moments)))
        built = tuple(
            sorted(
                (r.name, frozenset(r.sitemaps))
                for r in records
                if "generation_time_suspected"
                in l0_signals(r.l0(context.started), r.t_ref or context.started)
            )
        )
        found = by_site[record.site] = (l0, tuple(l0_signals(l0, t_ref)), len(records), built)
    l0, signals, segments, built = found
    inside = 0.0
    if l0.cluster_start is not None and l0.cluster_end is not None:
        inside = record.accumulator.share_within((l0.cluster_start, l0.cluster_end))
    others = tuple(
        name
        for name, files in built
        if name != record.name and not files.isdisjoint(record.sitemaps)
    )
    return SiteView(l0, signals, inside, segments, others)


#: The evidence outcomes a page's own date (or its Last-Modified) was judged on.
_DATED = frozenset({"AGREE", "LASTMOD_NEWER", "LASTMOD_OLDER", "PUBDATE_AS_LASTMOD"})


def _judged_date(sample: dict[str, Any]) -> LastMod | None:
    """The date a sampled page's outcome was judged on: its own modification date, else
    (when the outcome is page evidence) its ``Last-Modified``."""
    found = sample.get("page_modified")
    raw = found.get("raw") if isinstance(found, dict) else None
    if raw is None and (
        sample.get("outcome") in _DATED or str(sample.get("outcome")).startswith("TZ_SHIFT:")
    ):
        raw = sample.get("http_last_modified")
    if not raw:
        return None
    parsed = parse_lastmod(str(raw))
    return parsed if parsed is not None and parsed.value is not None else None


def _site_dates(context: CrawlContext, site: str) -> list[LastMod | None]:
    """The judged dates of every page sampled on ``site``, panels included."""
    return [
        _judged_date(s)
        for r in context.segments.values()
        if r.site == site and not r.news
        for s in r.samples
    ]


def _archive_days(
    context: CrawlContext, record: SegmentRecord, site: SiteView | None
) -> float | None:
    """How many days the sampled pages' publication dates span (the site's pages when
    the segment's lastmods are in its site's stamp or burst), with at least 3 of them."""
    if site is not None and (site.stamped or site.burst):
        samples = [s for r in context.segments.values() if r.site == record.site for s in r.samples]
    else:
        samples = record.samples
    moments = []
    for sample in samples:
        found = sample.get("page_published")
        raw = found.get("raw") if isinstance(found, dict) else None
        parsed = parse_lastmod(str(raw)) if raw else None
        if parsed is not None and parsed.value is not None:
            moments.append(parsed.value)
    if len(moments) < 3:
        return None
    return (max(moments) - min(moments)).total_seconds() / 86400


def _why_unsampled(record: SegmentRecord, sampling: bool | None) -> str:
    """Why no page of ``record`` was sampled on this run, and how to verify it."""
    if sampling is False:
        return (
            "sampling is off; crawl with -a sample=on (SITEMAPCRAWL_SAMPLE_ENABLED) to compare "
            "its lastmods with the pages' own dates"
        )
    if record.panel_only:
        return "only its panel was fetched on this run, for the cross-run score"
    if record.sampler is None:
        return (
            "it is not due on this run (a segment with a standing verdict is sampled again "
            "every SITEMAPCRAWL_RESAMPLE_DAYS)"
        )
    return (
        "the site's sample budget went to its other segments; raise "
        "SITEMAPCRAWL_SAMPLE_SITE_BUDGET to sample this one"
    )


class SiteReports:
    """Build, keep, save and write the site report of each site of the crawl ("" for a
    crawl of one site).

    Settings: ``SITEMAPCRAWL_REPORT_PATH`` (also write the reports as JSON there),
    ``SITEMAPCRAWL_SAMPLE_*`` (told in the report's ``sample`` section). Stats written:
    ``sitemapcrawl/verdict_count/<VERDICT>``.
    """

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> SiteReports:
        """The crawl's site reports, created on first use (by the sampling pipeline: the
        crawl context then says they exist, for a crawl that ``max_urls`` stops)."""
        found = _REPORTS.get(crawler)
        if found is None:
            context = crawl_context(crawler)
            found = _REPORTS[crawler] = cls(crawler, context)
            context.reporting = True
        return found

    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        settings = crawler.settings
        assert crawler.stats is not None
        self._stats: StatsCollector = crawler.stats
        self._settings = settings
        self._context = context
        report_path = settings.get("SITEMAPCRAWL_REPORT_PATH")
        self.path = Path(report_path) if report_path else None
        #: the reports built, by site root ("" for a crawl of one site)
        self.built: dict[str, SiteReport] = {}

    @property
    def sites(self) -> list[str]:
        """The site roots reported on ("" alone for a crawl of one site)."""
        return self._context.sites or [""]

    # -- what the feed gets --------------------------------------------------------------

    def final_items(self) -> list[Any]:
        """The URLs only links reached, then each site's report: the feed's last items."""
        return [*self.link_only_items(), *(self.final(site) for site in self.sites)]

    def final(self, site: str = "") -> SiteReport:
        """The report of one site, kept and saved in the state file (a crawl over several
        sites saves the list of its reports)."""
        report = self.built[site] = self.build(site)
        state = self._context.state
        if state is not None:
            state.store.save_report(state.run_id, self.payload())
        return report

    def payload(self) -> dict[str, Any] | list[dict[str, Any]]:
        """The reports as a dict; a crawl over several sites gives the list of its reports."""
        if not self._context.sites:
            return asdict(self.built[""])
        return [asdict(self.built[site]) for site in self._context.sites if site in self.built]

    def write(self) -> None:
        """Write the reports to ``SITEMAPCRAWL_REPORT_PATH`` (a crawl stopped before its
        reports were due gets them built now)."""
        if self.path is None or self._context.reported_elsewhere:
            return
        for site in self.sites:
            if site not in self.built:
                self.built[site] = self.build(site)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w", encoding="utf-8") as handle:
            json.dump(self.payload(), handle, indent=2, ensure_ascii=False, default=str)
        logger.info("Site report written to %(path)s", {"path": self.path})

    def link_only_items(self) -> list[SitemapUrlItem]:
        """The URLs links reached that no sitemap lists, of every site followed."""
        links = self._context.links
        if links is None:
            return []
        return [item for follower in links.active() for item in follower.link_only_items()]

    # -- building ------------------------------------------------------------------------

    def build(self, site: str = "") -> SiteReport:
        """The site report from the segment records and the crawl's stats; in a crawl over
        several sites, the report of ``site`` (its root): its segments, its share of the
        stats, its files and faults (crawl-wide faults, such as ``max_urls``, in each)."""
        context = self._context
        values = self._values(site)
        records = sorted(
            (r for r in context.segments.values() if r.site == site), key=lambda r: r.name
        )
        coverage = self._segment_coverage()
        segments = [self._segment(record, site, coverage) for record in records]
        urls_by_verdict: Counter[str] = Counter()
        for entry in segments:
            urls_by_verdict[entry["verdict"]] += entry["urls"]
        log, args = context.discovery, context.arguments
        if log is not None and args is not None:  # a crawl that found little says why
            log.explain(site, values, args)
        files, faults = self._files_and_faults(site)
        return SiteReport(
            origin=self._origin(site),
            generated_at=format_utc(dt.datetime.now(dt.UTC).replace(microsecond=0)),
            sitemaps={
                **{
                    key.removeprefix(_P): value
                    for key, value in values.items()
                    if key.startswith(_DISCOVERY_STATS)
                },
                "files": sorted(files, key=lambda f: f["url"]),
            },
            urls=_urls_section(values),
            limits=_section(values, "sitemapcrawl/limits/"),
            errors=_section(values, "sitemapcrawl/errors/"),
            faults=faults,
            segments=segments,
            site_verdict=_site_verdict(Counter(e["verdict"] for e in segments), urls_by_verdict),
            sample=self._sample_section(values),
            incremental=self._incremental_section(values, records, site),
            state=context.state.describe() if context.state is not None else {},
            coverage=self._coverage(values, site),
            changes=self._changes_section(values, records, site),
        )

    def _values(self, site: str) -> dict[str, Any]:
        """The stats the report of ``site`` is made of: the crawl's, or in a crawl over
        several sites, ``site``'s share of them and the crawl-wide ones."""
        values = self._stats.get_stats()
        peers = self._context.peer_stats
        if peers:  # distributed mode: the other workers' discovery too
            values = dict(values)
            for key, value in peers.items():
                values[key] = values.get(key, 0) + value
        if not site:
            return values
        return {
            **self._context.site_stats.get(site, {}),
            **{k: v for k, v in values.items() if k in _CRAWL_WIDE},
        }

    def _origin(self, site: str) -> str:
        if site:
            return site.rstrip("/")
        args = self._context.arguments
        if args is None:
            return ""
        return args.origin or ",".join(args.sitemap_urls)

    def _files_and_faults(self, site: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The discovery log's top-level files and faults, of ``site`` when given."""
        log = self._context.discovery
        files: list[dict[str, Any]] = list(log.top_level_files.values()) if log else []
        faults: list[dict[str, Any]] = list(log.faults) if log else []
        if site:
            files = [_untagged(f) for f in files if f.get("site") == site]
            faults = [_untagged(f) for f in faults if f.get("site", "") in ("", site)]
        return files, faults

    def _segment(
        self, record: SegmentRecord, site: str, coverage: dict[str, dict[str, Any]] | None
    ) -> dict[str, Any]:
        """One segment's entry: its verdict (across runs with the state file), the L0
        metrics, the sampled pages and their outcomes, its coverage."""
        state = self._context.state
        l0, outcomes, problems, verdict = judge(
            self._context, record, sampling=self._context.sampling(self._settings)
        )
        name, reason, evidence = verdict.name, verdict.reason, verdict.evidence
        offset = site_utc_offset(
            m["raw"] for m in (s.get("page_modified") for s in record.samples) if m
        )
        if offset is not None:  # dates in the sitemap are read in the pages' zone
            evidence = {**evidence, "utc_offset_s": offset}
        cross_run: dict[str, Any] = {}
        if state is not None:
            name, reason, cross_run = state.judge(record.name, name, reason, evidence)
        self._context.inc(self._stats, site, f"{_P}verdict_count/{name}")
        return {
            "segment": record.name,
            "urls": record.urls,
            "news": record.news,
            "sitemaps": sorted(record.sitemaps),
            "t_ref": format_utc(record.t_ref or self._context.started),
            "clock_skew_seconds": record.clock_skew_seconds,
            "verdict": name,
            "reason": reason,
            "evidence": evidence,
            **({"static_verdict": verdict.name, "cross_run": cross_run} if state else {}),
            "l0": l0.as_dict(),
            "outcomes": dict(Counter(o.split(":")[0] for o in outcomes)),
            "page_problems": dict(sorted(problems.items())),
            "samples": sorted(record.samples, key=lambda s: s["url"]),
            **({"coverage": coverage.get(record.name, {})} if coverage is not None else {}),
        }

    def _sample_section(self, values: dict[str, Any]) -> dict[str, Any]:
        settings = self._settings
        return {
            "enabled": self._context.sampling(settings),
            "segment_budget": settings.getint("SITEMAPCRAWL_SAMPLE_SEGMENT_BUDGET"),
            "site_budget": settings.getint("SITEMAPCRAWL_SAMPLE_SITE_BUDGET"),
            "panel": settings.getint("SITEMAPCRAWL_SAMPLE_PANEL"),
            "seed": settings.get("SITEMAPCRAWL_SAMPLE_SEED"),
            "requested": values.get(_P + "sample/requested_count", 0),
            "fetched": values.get(_P + "sample/fetched_count", 0),
            "failed": values.get(_P + "sample/failed_count", 0),
        }

    def _incremental_section(
        self, values: dict[str, Any], records: list[SegmentRecord], site: str
    ) -> dict[str, Any]:
        state = self._context.state
        if state is None or not state.incremental:
            return {}
        return {
            **state.incremental_summary({r.name for r in records} if site else None),
            "pages_requested": values.get(_P + "refetch/requested_count", 0),
            "pages_failed": values.get(_P + "refetch/failed_count", 0),
            "pages_changed": values.get(_P + "refetch/changed_count", 0),
            "pages_unchanged": values.get(_P + "refetch/unchanged_count", 0),
        }

    def _changes_section(
        self, values: dict[str, Any], records: list[SegmentRecord], site: str
    ) -> dict[str, Any]:
        """With the state file: what changed since the site's last finished run."""
        state = self._context.state
        if state is None:
            return {}
        return state.changes({r.name for r in records} if site else None)

    def _segment_coverage(self) -> dict[str, dict[str, Any]] | None:
        """Per segment coverage when links were followed, else None."""
        links = self._context.links
        following = links.active() if links is not None else []
        if not following:
            return None
        by_segment: dict[str, dict[str, Any]] = {}
        for follower in following:  # several sites: segment names carry their site
            by_segment.update(follower.segments())
        return by_segment

    def _coverage(self, values: dict[str, Any], site: str) -> dict[str, Any]:
        """The report's ``coverage``: of ``site``'s link follower, when it followed links."""
        links = self._context.links
        follower = links.get(site) if links is not None else None
        if follower is None:
            return {}
        tally = follower.tally
        tally.duplicates = values.get("sitemapcrawl/urls/duplicate_count", 0)
        log = self._context.discovery
        tally.duplicate_examples = list(log.listed_twice) if log is not None else []
        return follower.summary()


def _urls_section(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "found": values.get("sitemapcrawl/urls/found_count", 0),
        "duplicates": values.get("sitemapcrawl/urls/duplicate_count", 0),
        "out_of_scope": sum(v for k, v in values.items() if k.startswith("sitemapcrawl/scope/")),
        "lastmod_present": values.get("sitemapcrawl/lastmod/present_count", 0),
        "lastmod_missing": values.get("sitemapcrawl/lastmod/missing_count", 0),
        "lastmod_invalid": values.get("sitemapcrawl/lastmod/invalid_count", 0),
    }


def _section(values: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The stats under ``prefix``, named without it."""
    return {k.removeprefix(prefix): v for k, v in values.items() if k.startswith(prefix)}


def _site_verdict(verdicts: Counter[str], urls_by_verdict: Counter[str]) -> dict[str, Any]:
    """The site's verdict: the verdict of most of its URLs, and how much is usable."""
    total = sum(urls_by_verdict.values())
    usable = sum(n for name, n in urls_by_verdict.items() if name in _USABLE)
    return {
        "verdict": urls_by_verdict.most_common(1)[0][0] if urls_by_verdict else None,
        "segments_by_verdict": dict(sorted(verdicts.items())),
        "urls_by_verdict": dict(sorted(urls_by_verdict.items())),
        "usable_share": round(usable / total, 4) if total else 0.0,
    }


def _untagged(entry: dict[str, Any]) -> dict[str, Any]:
    """A fault or file entry without the site it was tagged with (several sites)."""
    return {k: v for k, v in entry.items() if k != "site"}
