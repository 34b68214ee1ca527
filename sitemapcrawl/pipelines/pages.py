"""Page fetching for verification: sampled and refetched pages, their dates, their outcome.

Pages go through the engine's downloader (robots.txt obeyed, AutoThrottle and the download
slots apply, retries), at most ``CONCURRENT_REQUESTS`` at a time, in this worker. A sampled
page's own modification date (``sitemapcrawl.verify.pagedates``) is compared with its
lastmod; a refetched page is recorded in the state file as it is now.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import TYPE_CHECKING, Any

from scrapy import Request
from w3lib.url import safe_url_string

from sitemapcrawl import meta
from sitemapcrawl.linkfollow import over_size_cap, redirect_target
from sitemapcrawl.sitemaps.dates import parse_feed_date
from sitemapcrawl.sitemaps.scope import same_host
from sitemapcrawl.verify.agreement import REDIRECT_OFFSITE, agreement
from sitemapcrawl.verify.pagedates import page_evidence

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from sitemapcrawl.crawlcontext import CrawlContext, SegmentRecord
    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.linkfollow import LinkFollower
    from sitemapcrawl.sitemaps.dates import LastMod
    from sitemapcrawl.verify.pagedates import DateEvidence
    from sitemapcrawl.verify.sampling import SampledUrl

__all__ = ["PageFetcher"]

_P = "sitemapcrawl/sample/"
_R = "sitemapcrawl/refetch/"


class PageFetcher:
    """Fetch sampled and refetched pages; judge each sampled page against its lastmod.

    Settings: ``SITEMAPCRAWL_PAGE_MAX_SIZE`` (bytes: a larger page is not read),
    ``CONCURRENT_REQUESTS``, ``REDIRECT_ENABLED``/``REDIRECT_MAX_TIMES`` (redirects within
    the site are followed here). Meta written: ``sitemapcrawl_sample`` (the segment),
    ``sitemapcrawl_refetch`` (why). Stats: ``sitemapcrawl/sample/...`` and
    ``sitemapcrawl/refetch/...`` (docs/stats.md).
    """

    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        settings = crawler.settings
        self._crawler = crawler
        self._context = context
        self._page_max_size = settings.getint("SITEMAPCRAWL_PAGE_MAX_SIZE")
        self._workers = max(1, settings.getint("CONCURRENT_REQUESTS"))
        self._redirects = (
            settings.getint("REDIRECT_MAX_TIMES") if settings.getbool("REDIRECT_ENABLED") else 0
        )
        #: the pages this run fetches on their own (a redirect to one is not followed)
        self.planned: set[str] = set()

    def _inc(self, site: str, key: str, count: int = 1) -> None:
        stats = self._crawler.stats
        assert stats is not None
        self._context.inc(stats, site, key, count)

    def _links_of(self, url: str) -> LinkFollower | None:
        links = self._context.links
        return links.of_url(url) if links is not None else None

    # -- requests ------------------------------------------------------------------------

    def page_meta(self) -> dict[str, Any]:
        """Meta of sampled and refetched pages: every status reaches us (redirects are
        followed by :meth:`download`, within the site only), and the body is capped. A
        page that still fails after Scrapy's retries is an outcome we count and report,
        not an error of the crawl: Scrapy gives up on it with a WARNING."""
        return {
            "handle_httpstatus_all": True,
            # no Scrapy cap: the download guard stops the body at the cap and the page is
            # read up to there (sitemapcrawl.extensions.sitemapdownload)
            "download_maxsize": 0,
            meta.PAGE_CAP: self._page_max_size,
            "download_warnsize": 0,
            "give_up_log_level": "WARNING",
        }

    def sample_request(self, record: SegmentRecord, sampled: SampledUrl) -> Request:
        return Request(
            sampled.url,
            cb_kwargs={"record": record, "sampled": sampled},
            meta={meta.SAMPLE: record.name, **self.page_meta()},
            dont_filter=True,
            priority=-10,
        )

    def refetches(self, state: CrawlState, sampled: set[str]) -> Iterator[Request]:
        """The pages marked for refetch, conditional (``If-None-Match`` /
        ``If-Modified-Since``) where the segment's validators are verified and no link
        follower needs this run's bodies."""
        return self._refetch_requests(state, state.pending_pages(sampled))

    def waves(self, state: CrawlState) -> Iterator[Request]:
        """The pages of this run's waves (``PageObservations.waves``): the other pages of
        an untrusted segment whose fetched pages changed far more than their rates said,
        and the pages that changed together with a page found changed on this run."""
        rows = state.pages_seen.waves(set(self.planned))
        for _, segment, reason in rows:
            self._inc(self._context.site_of(segment), _R + f"{reason}_count")
        return self._refetch_requests(state, iter(rows))

    def _refetch_requests(
        self, state: CrawlState, rows: Iterator[tuple[str, str, str]]
    ) -> Iterator[Request]:
        for url, segment, reason in rows:
            self.planned.add(url)
            headers = {} if self._links_of(url) else state.page_validators(url, segment)
            if headers:
                self._inc(self._context.site_of(segment), _R + "conditional_count")
            yield Request(
                url,
                headers=headers or None,
                cb_kwargs={"segment": segment, "reason": reason},
                meta={meta.REFETCH: reason, **self.page_meta()},
                dont_filter=True,
                priority=-20,
            )

    # -- downloads -----------------------------------------------------------------------

    async def fetch(self, pending: Iterator[Request]) -> None:
        """Fetch ``pending`` with ``CONCURRENT_REQUESTS`` workers: samples are judged,
        refetches recorded."""
        engine = self._crawler.engine
        assert engine is not None

        async def worker() -> None:
            for request in pending:
                if meta.REFETCH in request.meta:
                    await self._refetch(engine, request)
                else:
                    await self._sample(engine, request)

        await asyncio.gather(*(worker() for _ in range(self._workers)))

    async def download(self, engine: ExecutionEngine, request: Request, via: str) -> Response:
        """``request`` through the engine. A redirect to the same site (the page's host or
        its ``www.`` twin, any scheme) is followed, at most ``REDIRECT_MAX_TIMES`` hops and
        never in a loop: the page's evidence is the page it leads to. The 3xx response is
        returned as it is when the redirect leads to another host (that page says nothing
        about this site's lastmod) or to a page this run fetches on its own (sampled, to
        be refetched, or fetched already for links): a page is fetched once. Every hop is
        shown to the link follower."""
        links = self._links_of(request.url)
        hops, seen = self._redirects, {request.url}
        while True:
            response = await engine.download_async(request)
            if links is not None:
                links.observe(request.url, response, via)
            target = _redirect_target(response)
            if (
                target is None
                or hops <= 0
                or target in seen
                or target in self.planned
                or not same_host(target, request.url)
                or (links is not None and links.was_fetched(target))
            ):
                return response
            hops -= 1
            seen.add(target)
            stats = self._crawler.stats
            assert stats is not None
            stats.inc_value(_P + "redirect_followed_count")
            request = request.replace(url=target)

    async def _sample(self, engine: ExecutionEngine, request: Request) -> None:
        record: SegmentRecord = request.cb_kwargs["record"]
        sampled: SampledUrl = request.cb_kwargs["sampled"]
        try:
            response = await self.download(engine, request, "sample")
        except Exception as exc:  # noqa: BLE001 - every fetch failure is one counted outcome
            if (links := self._links_of(sampled.url)) is not None:
                links.failed(sampled.url, exc, "sample")
            self._sample_failed(record, sampled, _failure_reason(exc))
        else:
            self._judge_page(response, record, sampled)

    async def _refetch(self, engine: ExecutionEngine, request: Request) -> None:
        """A page marked for refetch: fetch it and record what it is now."""
        state = self._context.state
        assert state is not None
        segment: str = request.cb_kwargs["segment"]
        reason: str = request.cb_kwargs["reason"]
        site = self._context.site_of(segment)
        self._inc(site, _R + "requested_count")
        links = self._links_of(request.url)
        if links is not None:
            links.planned(request.url, "refetch")
        try:
            response = await self.download(engine, request, "refetch")
        except Exception as exc:  # noqa: BLE001 - a failed refetch is counted, never fatal
            if links is not None:
                links.failed(request.url, exc, "refetch")
            self._inc(site, _R + "failed_count")
            state.observe_page(
                request.url,
                segment,
                reason,
                status=None,
                fetched_at=_now(None),
                fingerprint=None,
                page_modified=None,
                http_last_modified=None,
                etag=None,
            )
            return
        self._refetched(state, request, response, segment, reason)

    def _refetched(
        self, state: CrawlState, request: Request, response: Response, segment: str, reason: str
    ) -> None:
        """Record a refetched page in the state file: its fingerprint and dates now (a
        ``304`` to our conditional request: what we fetched last time)."""
        site = self._context.site_of(segment)
        self._inc(site, _R + f"status_count/{response.status}")
        fingerprint = page_modified = http_modified = etag = content = None
        not_modified = response.status == 304 and bool(
            request.headers.get(b"If-None-Match") or request.headers.get(b"If-Modified-Since")
        )
        if not_modified:
            self._inc(site, _R + "not_modified_count")
        if response.status == 200:
            evidence = page_evidence(
                response.body, response.url, _headers(response), now=_now(response)
            )
            self._count_problems(evidence.problems, _R, site)
            fingerprint = evidence.fingerprint
            best = evidence.best_modified
            page_modified = best.value.iso if best is not None and best.value else None
            http_modified = evidence.http_last_modified.iso if evidence.http_last_modified else None
            etag = evidence.etag
            content = evidence.content
        observed = state.observe_page(
            request.url,
            segment,
            reason,
            status=response.status,
            fetched_at=_now(response),
            fingerprint=fingerprint,
            page_modified=page_modified,
            http_last_modified=http_modified,
            etag=etag,
            not_modified=not_modified,
            content=content,
        )
        if observed:  # (held: counted when settled)
            self._inc(site, _R + ("changed_count" if observed["changed"] else "unchanged_count"))

    async def probe_noise(self, state: CrawlState) -> None:
        """Fetch a few would-be misses of each site again at once
        (``PageObservations.noise_probes``): a page that differs again differs on every
        fetch. Not a refetch of the page (nothing recorded but the comparison), not shown
        to the link follower, never redirected."""
        probes = state.pages_seen.noise_probes()
        engine = self._crawler.engine
        assert engine is not None

        async def probe(url: str, segment: str) -> None:
            site = self._context.site_of(segment)
            self._inc(site, _R + "noise_probe_count")
            request = Request(
                url, meta={meta.REFETCH: "noise", **self.page_meta()}, dont_filter=True
            )
            try:
                response = await engine.download_async(request)
            except Exception:  # noqa: BLE001 - a failed probe is counted, never fatal
                self._inc(site, _R + "noise_failed_count")
                return
            fingerprint = None
            if response.status == 200:
                evidence = page_evidence(response.body, response.url, _headers(response))
                fingerprint = evidence.fingerprint
            if state.pages_seen.held.noise(url, fingerprint):
                self._inc(site, _R + "noise_differed_count")

        await asyncio.gather(*(probe(url, segment) for url, segment in probes))

    def settle(self, state: CrawlState) -> None:
        """Record the pages held for the common-mode rule (``PageObservations.settle``),
        counted: a refetch's change as any other, and each template edit."""
        for _, segment, reason, observed in state.pages_seen.settle():
            if not observed:
                continue
            site = self._context.site_of(segment)
            prefix = _P if reason in ("sample", "panel") else _R
            if prefix == _R:
                changed = observed["changed"]
                self._inc(site, _R + ("changed_count" if changed else "unchanged_count"))
            if observed.get("template_edit"):
                self._inc(site, prefix + "template_edit_count")

    # -- judging a sampled page ----------------------------------------------------------

    def _judge_page(self, response: Response, record: SegmentRecord, sampled: SampledUrl) -> None:
        """A sampled page's outcome against its lastmod, kept on its segment's record."""
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
            outcome, page_modified = self._read_page(response, record, sampled, result)
        result["outcome"] = outcome
        content = result.pop("content", None)  # for the state file, not the report
        self._inc(record.site, _P + f"outcome_count/{outcome.split(':')[0]}")
        state = self._context.state
        if state is not None:
            observed = state.observe_page(
                sampled.url,
                record.name,
                "panel" if sampled.in_panel else "sample",
                status=response.status,
                fetched_at=_now(response),
                fingerprint=result.get("fingerprint"),
                page_modified=page_modified,
                http_last_modified=result.get("http_last_modified"),
                etag=result.get("etag"),
                content=content,
            )
            if observed is not None:
                result["change"] = observed
        record.samples.append(result)

    def _read_page(
        self,
        response: Response,
        record: SegmentRecord,
        sampled: SampledUrl,
        result: dict[str, Any],
    ) -> tuple[str, str | None]:
        """Read a sampled page's dates into ``result``; its outcome, and its own
        modification date (ISO) when it has one."""
        t_ref = record.t_ref or self._context.started
        evidence = page_evidence(response.body, response.url, _headers(response), now=t_ref)
        problems = list(evidence.problems)
        if "download_stopped" in response.flags and "truncated" not in problems:
            problems.append("truncated")  # read up to the page cap: the head holds the dates
        self._count_problems(problems, _P, record.site)
        best = evidence.best_modified
        page_modified = best.value.iso if best is not None and best.value is not None else None
        published = evidence.published[0] if evidence.published else None
        fallback = evidence.http_last_modified
        if fallback is not None and _is_now(fallback, evidence.http_date):
            # Last-Modified = Date: a page generated per request says nothing
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
            content=evidence.content,
            problems=problems,
        )
        self._inc(record.site, _P + "fetched_count")
        return outcome, page_modified

    def _count_problems(self, problems: Iterable[str], prefix: str, site: str) -> None:
        """Count what was wrong with a page we read (broken JSON-LD, conflicting or future
        dates, a date that is the render time, not HTML, cut at the parse cap…)."""
        for problem in problems:
            self._inc(site, prefix + f"problem_count/{problem}")

    def _sample_failed(self, record: SegmentRecord, sampled: SampledUrl, reason: str) -> None:
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


def _now(response: Response | None) -> dt.datetime:
    """The server's clock (its ``Date`` header), else ours."""
    if response is not None:
        raw = response.headers.get(b"Date")
        if raw:
            parsed = parse_feed_date(raw.decode("latin-1"))
            if parsed is not None and parsed.value is not None:
                return parsed.value
    return dt.datetime.now(dt.UTC)


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
