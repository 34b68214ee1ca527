"""Sitemap reading: a downloaded sitemap's URLs become items, its children requests.

The hot path of a crawl: one ``SitemapUrlItem`` per URL a sitemap lists, in the order it
lists them, with scope and de-duplication decided on the way, then its children, newest
first by the index's ``<lastmod>`` (``spiders/children.py``, requested through the
spider's ``SitemapRequester``). A body the state file stored (a 304, an unchanged child)
comes back from ``spiders/replay.py`` as a response, read here like a download.
"""

from __future__ import annotations

import hashlib
from functools import partial
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import CloseSpider

from sitemapcrawl import meta
from sitemapcrawl.crawlcontext import PendingReport
from sitemapcrawl.items import SitemapUrlItem
from sitemapcrawl.sitemaps import Limits, SitemapReader, SitemapRef, UrlEntry
from sitemapcrawl.sitemaps.decompress import BodyDecoder, is_gzip
from sitemapcrawl.sitemaps.errors import SitemapError
from sitemapcrawl.sitemaps.scope import dedupe_key
from sitemapcrawl.sitemaps.seen import SeenUrls
from sitemapcrawl.sitemaps.segments import PathGroups, first_segment
from sitemapcrawl.spiders.children import IndexChildren
from sitemapcrawl.spiders.discoverylog import ScopeDrops
from sitemapcrawl.spiders.replay import ReplayedSitemap, SitemapReplay, clock_headers

if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable, Iterator

    from scrapy.http import Headers, Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlcontext import CrawlContext
    from sitemapcrawl.incremental.crawlstate import CrawlState
    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog
    from sitemapcrawl.spiders.requester import SitemapRequester
    from sitemapcrawl.spiders.task import SitemapTask

__all__ = [
    "SitemapReading",
    "content_digest",
    "file_limits",
    "filtered_entries",
    "paused_refusal",
    "received_body",
]

#: Kinds of documents read as sitemaps; anything else is a fault (or a guess that missed).
_SITEMAP_KINDS = ("urlset", "sitemapindex", "text", "rss", "atom", "xml")
#: The stock spider's page callbacks: (URL pattern, callback).
PageCallbacks = list[tuple["re.Pattern[str]", "Callable[..., Any]"]]


def _site_first_segment(site: str, url: str) -> str:
    """:func:`first_segment` after its site, for crawls over several sites."""
    return site + first_segment(url)


def file_limits(settings: BaseSettings) -> Limits:
    """The limits every sitemap file is read within (``SITEMAPCRAWL_MAX_SIZE``,
    ``..._MAX_URLS_PER_FILE``, ``..._KEEP_EXCESS_URLS``, ``..._MAX_LOC_LENGTH``)."""
    return Limits(
        max_size=settings.getint("SITEMAPCRAWL_MAX_SIZE"),
        max_urls=settings.getint("SITEMAPCRAWL_MAX_URLS_PER_FILE"),
        keep_excess=settings.getbool("SITEMAPCRAWL_KEEP_EXCESS_URLS"),
        max_loc_length=settings.getint("SITEMAPCRAWL_MAX_LOC_LENGTH"),
    )


class SitemapReading:
    """Read sitemap responses for the spider: faults, the body, the entries, the children.

    ``requester``: the spider's sitemap requests (``requester.frontier``, its gate, also
    judges redirects and stops at ``max_urls``). ``page_callbacks``, ``follow``,
    ``alternate_links``, ``entry_filter``: the stock ``SitemapSpider`` contract (rules,
    ``sitemap_follow``, ``sitemap_alternate_links``, an overridden ``sitemap_filter``).
    Settings: those of :func:`file_limits`, ``SITEMAPCRAWL_MAX_DOWNLOAD_SIZE``,
    ``SITEMAPCRAWL_READ_DEADLINE``, ``SITEMAPCRAWL_DEDUPLICATE``,
    ``SITEMAPCRAWL_INDEX_TRUST_MIN``, ``SITEMAPCRAWL_INDEX_AUDIT_SHARE``,
    ``SITEMAPCRAWL_SEGMENT_MIN_URLS``.
    """

    def __init__(
        self,
        *,
        context: CrawlContext,
        stats: StatsCollector,
        settings: BaseSettings,
        args: CrawlArguments,
        log: DiscoveryLog,
        requester: SitemapRequester,
        page_callbacks: PageCallbacks,
        follow: list[re.Pattern[str]],
        alternate_links: bool,
        entry_filter: Callable[[Iterable[dict[str, Any]]], Iterable[dict[str, Any]]] | None,
    ) -> None:
        self._context = context
        self._stats = stats
        self._args = args
        self._log = log
        #: the spider's robots.txt and sitemap requests, handed to the index's children
        self.requester = requester
        self._frontier = requester.frontier
        self._page_callbacks = page_callbacks
        self._alternate_links = alternate_links
        self._entry_filter = entry_filter
        self._proxy_meta = args.proxy_meta
        self.limits = file_limits(settings)
        self._maxsize = settings.getint("SITEMAPCRAWL_MAX_DOWNLOAD_SIZE")
        self._read_deadline = settings.getfloat("SITEMAPCRAWL_READ_DEADLINE")
        self._deduplicate = settings.getbool("SITEMAPCRAWL_DEDUPLICATE")
        self.children = IndexChildren(
            context=context,
            args=args,
            log=log,
            settings=settings,
            requester=requester,
            follow=follow,
        )
        self._group_min = settings.getint("SITEMAPCRAWL_SEGMENT_MIN_URLS")
        self.seen = context.seen = SeenUrls()
        self.urls_emitted = 0
        self.closing = False
        self._report_sent = False  # the site report went out early (max_urls)
        self._found_top: set[str] = set()  # top-level files that proved sitemaps
        self._digests: dict[str, str] = {}  # top-level files: content digest -> first URL
        self._state: CrawlState | None = None
        self._replay: SitemapReplay | None = None

    def found(self, task: SitemapTask) -> bool:
        """Whether the top-level file ``task`` proved to be a sitemap (asked once)."""
        if task.url in self._found_top:
            self._found_top.discard(task.url)
            return True
        return False

    def use_state(self, state: CrawlState) -> None:
        """Read through the state file: 304s and unchanged children from stored bodies."""
        self._state = state
        self._replay = SitemapReplay(state, self._frontier, self._log)
        self.children.state, self.children.replay = state, self._replay

    # -- a response ----------------------------------------------------------------------

    def read(self, response: Response, task: SitemapTask) -> Iterator[Any]:
        """A sitemap response's items and child requests (nothing for a fault, logged)."""
        if self.closing:  # max_urls reached while this file was in flight
            return
        if not self._redirect_allowed(response, task):
            return
        if response.status >= 400:
            if task.probe:
                self._log.inc(task.site, "guess/miss_count")
                return
            self._log.top_level(task, status=response.status)
            self._http_failed(response, task)
            return
        if response.status == 304:
            if self._replay is None:
                self._log.top_level(task, not_modified=True)
                self._log.failed(
                    task, "http_304", "answered 304 Not Modified without a stored copy"
                )
                return
            if (replayed := self._replay.not_modified(response, task)) is not None:
                yield from self._replayed(replayed)
            return
        body = received_body(response, task, self._log, self._maxsize, self._read_deadline)
        encodings = [v.decode("latin-1") for v in response.headers.getlist(b"Content-Encoding")]
        reader = SitemapReader(body, response.url, limits=self.limits, content_encoding=encodings)
        kind = reader.sniff()
        if kind in _SITEMAP_KINDS and self._read_already(task, body, encodings, response.status):
            return
        if not self._readable(reader, kind, task, response.status):
            return
        yield from self.entries(reader, task, clock_headers(response.headers))
        if not task.depth:
            self._log.top_level(task, urls=reader.urls, sitemaps=reader.sitemaps)
        if self._state is not None:
            self._remember(response, task, reader, kind, body)

    def _replayed(self, replayed: ReplayedSitemap) -> Iterator[Any]:
        """A body the state file stored, read in place of a download; its URLs counted."""
        urls = 0
        try:
            for output in self.read(replayed.response, replayed.task):
                if type(output) is SitemapUrlItem:
                    urls += 1
                yield output
        finally:
            self._log.inc(replayed.task.site, "state/replayed_urls_count", urls)

    def _http_failed(self, response: Response, task: SitemapTask) -> None:
        """A sitemap that answered an error status (after retries, or given up at once
        when its ``Retry-After`` asked to wait longer than allowed)."""
        status = response.status
        request = response.request
        if request is not None and request.meta.get(meta.GAVE_UP) == "retry_after":
            wait = (response.headers.get(b"Retry-After") or b"").decode("latin-1")
            message = (
                f"answered HTTP {status} asking to retry after {wait!r}, longer than "
                "SITEMAPCRAWL_RETRY_AFTER_MAX: given up"
            )
            self._log.failed(task, "retry_after", message)
            return
        self._log.failed(task, f"http_{status}", f"answered HTTP {status}")

    def _redirect_allowed(self, response: Response, task: SitemapTask) -> bool:
        """A redirect to an ancestor, or to a sitemap requested already, is not read (the
        sitemap redirect middleware stops it before the download; this is the check
        when it is off)."""
        request = response.request  # (none for a body replayed from the state file)
        taken = request.meta.get(meta.REDIRECT_TAKEN) if request is not None else None
        if response.url in (task.url, taken):
            return True
        hops = request.meta.get("redirect_urls", ()) if request is not None else ()
        why = self._frontier.redirect_refusal(task, response.url, hops)
        if why is None:
            return True
        self._log.redirect_refused(task, why, response.url)
        if why == "duplicate" and not task.depth:
            self._found_top.add(task.url)
        return False

    def _read_already(
        self, task: SitemapTask, body: bytes, encodings: list[str], status: int
    ) -> bool:
        """Whether a top-level file holds what another top-level file of the crawl held
        (``/sitemap.xml`` and ``/sitemap.xml.gz``, an index copied under another name):
        compared by the digest of the decoded content, listed as a duplicate of the first,
        not parsed again."""
        if task.depth or task.parent is not None:
            return False
        digest = content_digest(body, encodings, self.limits.max_size)
        first = self._digests.setdefault(digest, task.url)
        if first == task.url:
            return False
        self._log.top_level(task, status=status, duplicate_of=first)
        self._log.inc(task.site, "sitemaps/duplicate_file_count")
        self._found_top.add(task.url)
        return True

    def _readable(self, reader: SitemapReader, kind: str, task: SitemapTask, status: int) -> bool:
        """Whether the document is a sitemap (counted by kind); a guess that is not is a
        quiet miss, anything else a fault."""
        log, site = self._log, task.site
        if kind not in _SITEMAP_KINDS:
            if task.probe:
                log.inc(site, "guess/miss_count")
                return False
            log.inc(site, f"errors/{reader.faults[0].code}_count")
            log.failed(task, kind, reader.faults[0].message)
            return False
        if task.probe:
            log.inc(site, "guess/found_count")
        if not task.depth:
            self._found_top.add(task.url)
        log.top_level(task, status=status, kind=kind)
        log.inc(site, "sitemaps/parsed_count")
        log.inc(site, f"sitemaps/parsed_count/{kind}")
        if reader.decoder.layers:
            log.inc(site, "sitemaps/gzip_count")
        return True

    def _remember(
        self, response: Response, task: SitemapTask, reader: SitemapReader, kind: str, body: bytes
    ) -> None:
        """Keep the file's validators and body in the state file; an index lastmod that
        stood still while its child changed ends that index's trust."""
        assert self._state is not None
        complete = not (
            reader.faults
            or self.closing
            or "download_stopped" in response.flags
            or "dataloss" in response.flags
        )
        check = self._state.sitemap_read(
            task.url,
            response,
            kind="sitemapindex" if reader.sitemaps else kind,
            body=body,
            index_lastmod=task.parent_lastmod,
            parent=task.parent,
            complete=complete,
        )
        if check == "miss" and task.parent is not None:
            self._log.inc(task.site, "state/index_lastmod_miss_count")
            message = (
                f"child {task.url} changed while its <lastmod> in the index did not: "
                "this index's lastmods no longer let children be skipped"
            )
            self._log.log_once("index_lastmod_miss", task.parent, message, task.site)

    # -- entries -------------------------------------------------------------------------

    def entries(
        self, reader: SitemapReader, task: SitemapTask, clock: Headers | None = None
    ) -> Iterator[Any]:
        """The file's URLs as items, then its children as requests; ``clock``: the
        response's ``Date``/``Age``, the clock of the children skipped by their index
        lastmod (they are read from the state file, with no response of their own)."""
        children: list[SitemapRef] = []
        yield from self._urls(reader, task, children)
        if self.closing:
            yield from self._close()
        if children:
            if self._state is not None:
                self._state.sitemaps.save_children(
                    task.url, [(c.loc, c.lastmod.raw if c.lastmod else None) for c in children]
                )
            for child in self.children.requests(children, task, reader.url, clock):
                if type(child) is ReplayedSitemap:  # unchanged, not requested: read now
                    try:
                        yield from self._replayed(child)
                    finally:
                        self._log.inc(child.task.site, "sitemaps/done_count")
                else:
                    yield child

    def _urls(
        self, reader: SitemapReader, task: SitemapTask, children: list[SitemapRef]
    ) -> Iterator[Any]:
        """One item per URL in scope and not listed before; children are put aside."""
        url_callbacks = self._page_callbacks
        sitemap_url = reader.url
        policy = self._context.scope_policy(task.site)
        usual = policy.prefixes
        declared, segment = task.declared_in_robots, task.segment
        segment_of, groups = self._segment_names(task)
        parent_lastmod, depth, found_via = task.parent_lastmod, task.depth, task.found_via
        seen, dedupe, max_urls = self.seen, self._deduplicate, self._args.max_urls
        emitted = duplicates = 0
        drops = ScopeDrops()
        protocol_limit = self.limits.max_urls
        try:
            for entry in self._entries(reader):
                if type(entry) is SitemapRef:
                    children.append(entry)
                    continue
                assert type(entry) is UrlEntry
                if max_urls and self.urls_emitted + emitted >= max_urls:
                    self.closing = True
                    break
                loc = entry.loc
                why = policy.reason(loc, sitemap_url, declared)
                if why is not None:
                    drops.add(why, loc)
                    continue
                # two spellings of one host (case, a trailing dot, a default port): one URL
                if dedupe and not seen.add(loc if loc.startswith(usual) else dedupe_key(loc)):
                    duplicates += 1
                    self._log.listed_again(loc, sitemap_url)
                    continue
                lastmod = entry.lastmod
                beyond = reader.urls > protocol_limit
                flags = _flags(entry, beyond) if entry.relative or entry.fragment or beyond else []
                item = SitemapUrlItem(
                    loc,
                    lastmod.iso if lastmod else None,
                    lastmod.raw if lastmod else None,
                    lastmod.precision if lastmod else None,
                    list(lastmod.flags) if lastmod else [],
                    entry.changefreq,
                    entry.priority,
                    sitemap_url,
                    parent_lastmod,
                    segment if segment is not None else segment_of(loc),
                    depth,
                    found_via,
                    entry.news,
                    entry.images,
                    entry.videos,
                    entry.alternates,
                    entry.mobile,
                    flags,
                )
                emitted += 1
                if not emitted & 1023:  # keep the live count (progress lines) current
                    self._log.inc(task.site, "urls/found_count", 1024)
                if (
                    groups is not None
                    and item.segment not in groups.grown
                    and (ready := groups.place(item, entry)) is not None
                ):
                    yield from self._items(ready)
                else:
                    yield item
                    if url_callbacks:
                        yield from self._page_requests(entry)
                if max_urls and self.urls_emitted + emitted >= max_urls:
                    self.closing = True
                    break
            if groups is not None:
                yield from self._items(groups.rest())  # the small groups, together
        finally:
            self.urls_emitted += emitted
            self._log.file_read(reader, task.site, emitted, duplicates, drops)

    def _entries(self, reader: SitemapReader) -> Iterable[UrlEntry | SitemapRef]:
        """The file's entries, or those a ``sitemap_filter`` kept."""
        if self._entry_filter is None:
            return reader
        return filtered_entries(reader, self._entry_filter)

    def _segment_names(
        self, task: SitemapTask
    ) -> tuple[Callable[[str], str], PathGroups[SitemapUrlItem] | None]:
        """How the file's URLs are named as segments when it has no segment of its own
        (not a child of an index): by the shape of their path (after their site on a crawl
        over several sites), grouped (:class:`PathGroups`) unless
        ``SITEMAPCRAWL_SEGMENT_MIN_URLS`` is 1."""
        segment_of: Callable[[str], str] = first_segment
        if task.segment is None and self._args.multi_site:
            segment_of = partial(_site_first_segment, task.site.rstrip("/"))
        if task.segment is None and self._group_min > 1:
            return segment_of, PathGroups(segment_of(task.site.rstrip("/") + "/"), self._group_min)
        return segment_of, None

    def _close(self) -> Iterator[Any]:
        """``max_urls`` reached: the site reports go out now (after the URLs before them,
        as on a finished crawl), then the crawl closes."""
        self._stats.set_value("sitemapcrawl/limits/max_urls_count", 1)
        self._log.cut_short("max_urls")
        self._log.log_once("max_urls", "", f"max_urls={self._args.max_urls} reached; closing")
        self._frontier.stop()
        if self._context.reporting and not self._report_sent:
            self._report_sent = True
            for root in self._context.sites or [""]:  # one per site, built by the pipeline
                yield PendingReport(root)
        raise CloseSpider("max_urls")

    def _items(self, pairs: Iterable[tuple[SitemapUrlItem, UrlEntry]]) -> Iterator[Any]:
        """Items held back with their entries, and their pages' requests."""
        url_callbacks = self._page_callbacks
        for item, entry in pairs:
            yield item
            if url_callbacks:
                yield from self._page_requests(entry)

    def _page_requests(self, entry: UrlEntry) -> Iterator[Request]:
        """A subclass's ``sitemap_rules``: requests for the pages whose URL matches."""
        locs = [entry.loc]
        if self._alternate_links:
            locs += [a["href"] for a in entry.alternates]
        for loc in locs:
            for regex, callback in self._page_callbacks:
                if regex.search(loc):
                    yield Request(loc, callback=callback, meta=dict(self._proxy_meta))
                    break

    # -- pause and resume ----------------------------------------------------------------

    def saved(self) -> dict[str, Any]:
        """What a paused crawl keeps of the reading (``JOBDIR``'s spider state)."""
        return {"seen": self.seen, "urls_emitted": self.urls_emitted}

    def restore(self, saved: dict[str, Any]) -> None:
        self.seen = self._context.seen = saved["seen"]
        self.urls_emitted = saved["urls_emitted"]


def paused_refusal(saved: dict[str, Any]) -> str | None:
    """Why the reading a paused crawl kept (:meth:`SitemapReading.saved`) cannot be
    restored (None: it can): a URL table of an older format, whose keys this version
    cannot compare with its own, or of another layout."""
    seen = saved.get("seen")
    if isinstance(seen, SeenUrls) and not seen.stale:
        return None
    return (
        "the paused crawl in JOBDIR was written by an older sitemapcrawl (its table of "
        "emitted URLs holds 64-bit BLAKE2b values, or 96-bit digests in one flat table; "
        "this version keeps 96-bit XXH3 digests in 256 shards); finish it with the "
        "version that paused it, or start again with a new JOBDIR"
    )


def filtered_entries(
    reader: SitemapReader,
    entry_filter: Callable[[Iterable[dict[str, Any]]], Iterable[dict[str, Any]]],
) -> Iterator[UrlEntry | SitemapRef]:
    """Pass entries through a user's ``sitemap_filter`` as the dicts the stock spider uses,
    extended with the parsed fields; entries come back by their ``_entry`` key."""

    def as_dicts() -> Iterator[dict[str, Any]]:
        for entry in reader:
            lastmod = entry.lastmod
            d: dict[str, Any] = {
                "loc": entry.loc,
                "lastmod": lastmod.raw if lastmod else None,
                "lastmod_parsed": lastmod.value if lastmod else None,
                "lastmod_precision": lastmod.precision if lastmod else None,
                "lastmod_flags": list(lastmod.flags) if lastmod else [],
                "_entry": entry,
            }
            if type(entry) is UrlEntry:
                if entry.changefreq is not None:
                    d["changefreq"] = entry.changefreq
                if entry.priority is not None:
                    d["priority"] = entry.priority
                if entry.alternates:
                    d["alternate"] = [a["href"] for a in entry.alternates]
                d.update(
                    news=entry.news,
                    images=entry.images,
                    videos=entry.videos,
                    alternates=entry.alternates,
                    mobile=entry.mobile,
                )
            yield d

    for d in entry_filter(as_dicts()):
        entry = d.get("_entry")
        if entry is None or entry.loc != d.get("loc"):
            entry = UrlEntry(str(d["loc"]))
        yield entry


def received_body(
    response: Response, task: SitemapTask, log: DiscoveryLog, maxsize: int, deadline: float
) -> bytes:
    """The body to parse: what arrived, exactly up to the size cap where the download
    guard stopped it; a stopped or cut download is logged, and read all the same."""
    body = response.body
    site = task.site
    if "download_stopped" in response.flags:  # (a replayed body has neither flag nor meta)
        stopped = response.meta.get(meta.STOPPED)
        if stopped == "too_slow":
            log.inc(site, "errors/too_slow_count")
            message = (
                f"download still running after {deadline:.0%} of its timeout "
                f"({len(body)} bytes); stopped, reading what arrived"
            )
            log.log_once("too_slow", task.url, message, site)
        elif stopped != "html":  # (an HTML page stopped at 1 MiB: its kind is the fault)
            # Read exactly up to the cap, wherever the network cut the last chunk.
            body = body[:maxsize]
            log.inc(site, "errors/too_large_count")
            message = f"download stopped at {maxsize} bytes; reading what arrived"
            log.log_once("too_large", task.url, message, site)
    if "dataloss" in response.flags:
        log.inc(site, "errors/dataloss_count")
        log.log_once("dataloss", task.url, "connection lost mid-body; reading what arrived", site)
    return body


def content_digest(body: bytes, content_encoding: list[str], max_size: int) -> str:
    """The digest of a sitemap's decoded content (within the decoded-size cap): the same
    file compressed or not, under any name, has the same one. Decoded only when it is
    compressed; a body that cannot be decoded is digested as it is."""
    digest = hashlib.blake2b(digest_size=16)
    if not content_encoding and not is_gzip(body):
        digest.update(body)
        return digest.hexdigest()
    try:
        for chunk in BodyDecoder(body, max_size=max_size, content_encoding=content_encoding):
            digest.update(chunk)
    except SitemapError:
        return hashlib.blake2b(body, digest_size=16).hexdigest()
    return digest.hexdigest()


def _flags(entry: UrlEntry, beyond_protocol_limit: bool) -> list[str]:
    """A URL item's flags: what its entry needed to be read (docs/output.md)."""
    flags = []
    if entry.relative:
        flags.append("relative_loc")
    if beyond_protocol_limit:
        flags.append("beyond_protocol_limit")
    if entry.fragment:
        flags.append("fragment_dropped")
    return flags
