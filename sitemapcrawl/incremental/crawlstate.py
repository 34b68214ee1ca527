"""State across runs, the crawl's view: what the spider and the pipelines ask of the state file.

One ``CrawlState`` per crawl (``crawl_context(crawler).state``), opened by the spider when
the crawl starts. It wraps :class:`sitemapcrawl.incremental.store.StateStore` (pure SQLite)
with the run: the origin, this run's id, the previous finished run, the segments' standing
verdicts, the incremental cut (``since``), the per-URL rows (written in batches), and its
parts: the sitemap files (``sitemapfiles``), refetch decisions (``decisions``), our page
fetches (``pages``) and the verdicts across runs (``judgement``). It builds the parts
and wires them: each is handed the run's facts and the segments' standings
(``standing``) and the few handles it needs, never the ``CrawlState``.
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.changes import UrlChanges, run_changes
from sitemapcrawl.incremental.decisions import RefetchDecisions
from sitemapcrawl.incremental.fetches import FetchStore
from sitemapcrawl.incremental.judgement import GENERATION_CONFIRM, SegmentJudgement
from sitemapcrawl.incremental.pages import PageObservations
from sitemapcrawl.incremental.schema import RUN_BUSY_TIMEOUT, SiteLock, is_locked, writer_waited
from sitemapcrawl.incremental.segmentrun import audits, unsampled_runs, utc
from sitemapcrawl.incremental.sitemapfiles import SitemapFiles
from sitemapcrawl.incremental.standing import RunFacts, SegmentStandings
from sitemapcrawl.incremental.store import StateError, StateLocked, StateStore
from sitemapcrawl.sitemaps.dates import format_utc, parse_lastmod
from sitemapcrawl.verify.refetch.moves import delta_l
from sitemapcrawl.verify.refetch.policy import Decision, Policy

if TYPE_CHECKING:
    from collections import defaultdict
    from collections.abc import Callable, Iterator

    from scrapy.http import Response
    from scrapy.settings import BaseSettings

    from sitemapcrawl.incremental.changes import ChangeList
    from sitemapcrawl.incremental.segmentrun import SegmentRun
    from sitemapcrawl.incremental.store import SegmentState
    from sitemapcrawl.items import SitemapUrlItem

logger = logging.getLogger(__name__)

__all__ = ["CrawlState", "StateError", "StateLocked", "parse_since", "state_path"]

_FLUSH_EVERY = 20000  # URL rows per transaction (fewer, larger batches: see store.py)
#: Audits (decayed) after which a segment's panel is no longer re-fetched between samples.
PANEL_AUDITS = 60
_UNKNOWN: Any = object()  # sample_due: the cluster centre is not known yet


def state_path(value: str | None, settings: BaseSettings) -> Path | None:
    """The state file chosen by the ``state`` argument or ``SITEMAPCRAWL_STATE_PATH``;
    None when state is off (``off`` or empty)."""
    chosen = value if value is not None else settings.get("SITEMAPCRAWL_STATE_PATH")
    if chosen is None or str(chosen).strip().lower() in ("", "off", "false", "0"):
        return None
    return Path(str(chosen).strip()).expanduser()


def _policy(settings: BaseSettings) -> Policy:
    """The refetch policy the ``SITEMAPCRAWL_INCREMENTAL_*`` settings choose."""
    return Policy(
        theta=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_THETA"),
        max_age=dt.timedelta(days=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_MAX_AGE_DAYS")),
        max_age_trusted=dt.timedelta(
            days=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_MAX_AGE_TRUSTED_DAYS")
        ),
        audit_trusted=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED"),
        audit_provisional=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL"),
        audit_min=settings.getint("SITEMAPCRAWL_INCREMENTAL_AUDIT_MIN"),
        page_dates=settings.getbool("SITEMAPCRAWL_INCREMENTAL_PAGE_DATES"),
        probe_min=settings.getint("SITEMAPCRAWL_INCREMENTAL_PROBE_MIN"),
        wave_alpha=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_WAVE_ALPHA"),
        wave_max=settings.getint("SITEMAPCRAWL_INCREMENTAL_WAVE_MAX"),
        page_share=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_PAGE_SHARE"),
        page_min_changes=settings.getint("SITEMAPCRAWL_INCREMENTAL_PAGE_MIN_CHANGES"),
        cochange_min=settings.getint("SITEMAPCRAWL_INCREMENTAL_COCHANGE_MIN"),
        move_learner=settings.getbool("SITEMAPCRAWL_INCREMENTAL_MOVE_LEARNER"),
    )


def parse_since(value: str) -> dt.datetime | str:
    """``last`` or an ISO 8601 date/time (UTC when no zone); raises ValueError."""
    text = value.strip()
    if text.lower() == "last":
        return "last"
    parsed = parse_lastmod(text)
    if parsed is None or parsed.value is None or "invalid" in parsed.flags:
        raise ValueError(f"argument since={value!r} is not 'last' or an ISO 8601 date/time")
    return parsed.value


class CrawlState:
    """The state file as one crawl uses it."""

    def __init__(
        self,
        store: StateStore,
        origin: str,
        *,
        since: dt.datetime | str | None,
        pages: bool,
        settings: BaseSettings,
    ) -> None:
        self.store = store
        self.origin = origin
        self.started = dt.datetime.now(dt.UTC)
        self.previous = store.previous_run(origin)
        self.run_id = store.begin_run(
            origin,
            format_utc(self.started.replace(microsecond=0)),
            since if isinstance(since, str) else (format_utc(since) if since else None),
        )
        self.since_arg = since
        self.incremental = since is not None
        self.pages = pages
        #: the segments' standing verdicts and this run's bookkeeping, shared by the parts
        self.standings = SegmentStandings(store.segments(origin))
        self.policy = _policy(settings)
        self.conditional_pages = settings.getbool("SITEMAPCRAWL_CONDITIONAL_PAGES")
        self.seed = str(settings.get("SITEMAPCRAWL_SAMPLE_SEED"))
        self.first_audit = settings.getint("SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT")
        self.resample_after = dt.timedelta(days=settings.getfloat("SITEMAPCRAWL_RESAMPLE_DAYS"))
        self.resample_trusted = dt.timedelta(
            days=settings.getfloat("SITEMAPCRAWL_RESAMPLE_TRUSTED_DAYS")
        )
        self.resample_trusted_runs = settings.getint("SITEMAPCRAWL_RESAMPLE_TRUSTED_RUNS")
        self._rows: list[tuple[str, str, str, str | None, int, bool]] = []
        self.server_now: dt.datetime | None = None
        self.closed = False
        self.lock: SiteLock | None = None  # set by open
        store.db.execute(
            "CREATE TEMP TABLE IF NOT EXISTS pending (url TEXT PRIMARY KEY, segment TEXT, "
            "reason TEXT)"
        )
        self.pending = 0
        self._now_for: dt.datetime | None = None
        self._now_seconds = 0
        #: the run's parts: sitemap files, refetch decisions, page fetches, verdicts
        self.sitemaps = SitemapFiles(store.sitemaps, origin, self.run_id, self.seed)
        self.fetches = FetchStore(store)
        run = RunFacts(
            origin, self.run_id, self.started, self.seed, self.policy, store, self.fetches
        )
        standings = self.standings
        self.decisions = RefetchDecisions(
            run,
            standings,
            since_last=self.since_last,
            pages=pages,
            first_audit=self.first_audit,
        )
        self.url_changes = UrlChanges(store, origin, self.sitemaps, self._run_changes)
        self.pages_seen = PageObservations(
            run,
            standings,
            self.decisions,
            sitemap_as_of=self.sitemaps.as_of,
            conditional=self.conditional_pages,
            flush=self.flush,
            clock=self._clock,
            saw_change=self.url_changes.saw_change,
        )
        self.judgement = SegmentJudgement(run, standings, flush=self.flush, clock=self._clock)

    @classmethod
    def open(
        cls,
        path: Path,
        origin: str,
        *,
        since: dt.datetime | str | None,
        pages: bool,
        settings: BaseSettings,
    ) -> CrawlState:
        """Open the file (raises :class:`StateError` with a clear message).

        One crawl of a site at a time (:class:`SiteLock`); another crawl's write is waited
        for. Either wait is ``SITEMAPCRAWL_STATE_LOCK_TIMEOUT`` seconds at most, then
        :class:`StateLocked` is raised (the crawl goes on without the file); once the run
        is begun, a write waits up to ``RUN_BUSY_TIMEOUT`` for another crawl's."""
        wait = settings.getfloat("SITEMAPCRAWL_STATE_LOCK_TIMEOUT")
        lock = SiteLock(path, origin)
        lock.acquire(wait)
        try:
            store = StateStore.open(path, wait=wait)
        except BaseException:
            lock.release()
            raise
        try:
            state = cls(store, origin, since=since, pages=pages, settings=settings)
        except BaseException as exc:
            store.close()
            lock.release()
            if not isinstance(exc, sqlite3.OperationalError):
                raise
            if is_locked(exc):  # beginning the run waited for another crawl's write
                raise writer_waited(path, wait) from exc
            raise StateError(f"{path}: the state file cannot be used ({exc})") from exc
        state.lock = lock
        store.set_wait(RUN_BUSY_TIMEOUT)
        if store.upgraded_from is not None:
            logger.info(
                "State file %(path)s upgraded from schema %(old)d to %(new)d",
                {"path": path, "old": store.upgraded_from, "new": store.version},
            )
        return state

    # -- the standings (shared with the parts) ----------------------------------------------

    @property
    def segments(self) -> dict[str, SegmentState]:
        return self.standings.segments

    @property
    def by_segment(self) -> defaultdict[str, SegmentRun]:
        return self.standings.by_segment

    @property
    def site_of(self) -> Callable[[str], str]:
        """The site a segment belongs to (a crawl over several sites: set by the spider);
        segments pool their counts within their site only."""
        return self.standings.site_of

    @site_of.setter
    def site_of(self, site_of: Callable[[str], str]) -> None:
        self.standings.site_of = site_of

    def _clock(self) -> dt.datetime:
        """The run's server clock so far (its start before the first URL)."""
        return self.server_now or self.started

    # -- the incremental cut ---------------------------------------------------------------

    @property
    def since_last(self) -> bool:
        return self.since_arg == "last"

    def cut(self, now: dt.datetime) -> dt.datetime | None:
        """The time lastmod is compared with: ``since``, or the previous run's server clock
        (None on a ``since=last`` run with no previous run: everything is new)."""
        if isinstance(self.since_arg, dt.datetime):
            return self.since_arg
        if self.previous is not None:
            return utc(self.previous["server_now"]) or utc(self.previous["started_at"])
        return None

    def sample_due(self, segment: str, now: dt.datetime, centre: Any = _UNKNOWN) -> bool:
        """On incremental runs, a segment with a standing verdict is sampled again only
        every ``SITEMAPCRAWL_RESAMPLE_DAYS``; once TRUSTED, when both
        ``…_TRUSTED_DAYS`` and ``…_TRUSTED_RUNS`` runs have passed (the audit watches it
        meanwhile; a site crawled every two weeks would otherwise re-sample its TRUSTED
        segments every other run, the largest cost they had on bench/realweb; before
        TRUSTED, the panel watches too); one without a verdict
        or UNVERIFIABLE is sampled every run, and a GENERATION_TIME one whose cluster
        stopped moving too. Verdicts the sitemap alone gives and keeps giving are not
        re-sampled: ABSENT and INVALID (nothing to compare pages with; if lastmods appear,
        the sitemap's own statistics change the verdict and sampling resumes), and a
        GENERATION_TIME cluster seen moving on ``GENERATION_CONFIRM`` fetches in a row.

        ``centre``: this run's cluster centre, once the segment is read. Before that, an
        unconfirmed GENERATION_TIME segment is "maybe due" (True): whether its cluster
        moved on this run decides, and the first fetch cannot have shown it moving (a
        deploy stamp judged GENERATION_TIME on a first run is re-sampled on the second,
        when it is seen standing still)."""
        if not self.incremental:
            return True
        standing = self.segments.get(segment)
        if standing is None or standing.verdict in (None, "UNVERIFIABLE"):
            return True
        if standing.verdict in ("ABSENT", "INVALID"):
            return False
        if standing.verdict == "GENERATION_TIME":
            moves = int(standing.counts.get("cluster_moves") or 0)
            if moves >= GENERATION_CONFIRM:
                return False  # confirmed on every fetch by the sitemap itself
            if centre is _UNKNOWN or moves == 0:
                return True  # stopped moving: the pages must say what it is now
            if self.cluster_moves(segment, centre) == 0:
                return True  # it stopped on this run
        last = utc(standing.counts.get("sampled_at"))
        if standing.verdict == "TRUSTED" and standing.counts.get("quiet_alarm"):
            return True  # a quiet stretch its history makes unlikely (verify.refetch.quiet)
        if standing.verdict != "TRUSTED":
            return last is None or now - last >= self.resample_after
        return last is None or (
            now - last >= self.resample_trusted
            and unsampled_runs(standing.counts) + 1 >= self.resample_trusted_runs
        )

    def panel_due(self, segment: str) -> bool:
        """Between samples, a segment whose lastmod is used before the cross-run score
        confirmed it (PROVISIONAL, OVER_REPORTING, a PARTIAL one's dated subset, a
        corrected TZ_SHIFT) has its fixed panel re-fetched on every run until the audits
        reach ``PANEL_AUDITS``: with the audit, the random observations that catch a
        lastmod which stays put while pages change (the issue's "fixed panel re-fetched
        every run"). Past that, a miss rate of 5 % would have shown with 95 % power (59
        audits: docs/verification.md, "Audit"), and the audit alone goes on;
        TRUSTED segments rely on it too."""
        standing = self.segments.get(segment)
        if standing is None:
            return False
        counts = standing.counts
        if audits(counts) >= PANEL_AUDITS:
            return False
        return (
            standing.verdict in ("PROVISIONAL", "OVER_REPORTING")
            or (standing.verdict == "PARTIAL" and bool(counts.get("subset_trusted")))
            or (standing.verdict == "TZ_SHIFT" and self.standings.shift(segment) is not None)
        )

    def cluster_moves(self, segment: str, centre: Any) -> int | None:
        """:meth:`SegmentStandings.cluster_moves`."""
        return self.standings.cluster_moves(segment, centre)

    def describe(self) -> dict[str, Any]:
        return {
            "path": str(self.store.path),
            "run": self.run_id,
            "runs_before": self.store.run_count(self.origin) - 1,
            "previous_run": self.previous,
            "schema": self.store.version,
        }

    # -- URLs ------------------------------------------------------------------------------

    def observe_item(self, item: SitemapUrlItem, now: dt.datetime) -> Decision | None:
        """Record one URL of this run; on incremental runs, decide whether to refetch it.

        A run that is not incremental never reads the URL's row back: its writes are
        batched, and what changed is worked out in SQL."""
        if self.server_now is None or now < self.server_now:
            self.server_now = now
        seg = self.by_segment[item.segment]
        seg.urls += 1
        decision = None
        if self.incremental:
            prev = self.store.url(self.origin, item.url)
            raw = item.lastmod_raw
            lastmod = parse_lastmod(raw) if raw is not None else None
            cut = self.cut(now)
            if lastmod is None or lastmod.value is None:
                seg.undated += 1
            elif cut is not None and delta_l(
                lastmod, cut, prev.lastmod_raw if prev else None, self.since_last
            ):
                seg.lastmod_after_since += 1
            decision = self.decisions.decide(item, lastmod, prev, now, cut)
            seg.decisions[decision.reason] += 1
            seg.lastmod_moves += bool(decision.delta_l) or decision.reason == "lastmod_late"
            if decision.refetch:
                seg.refetch += 1
                if self.pages:
                    self.store.db.execute(
                        "INSERT OR IGNORE INTO pending VALUES (?, ?, ?)",
                        (item.url, item.segment, decision.reason),
                    )
                    self.pending += 1
        if now is not self._now_for:
            self._now_for = now
            self._now_seconds = int(now.timestamp())
        self._rows.append(
            (
                item.url,
                item.segment,
                item.sitemap,
                item.lastmod_raw,
                self._now_seconds,
                # A run without ``since`` hands every URL over: the max-age clock restarts.
                decision.refetch if decision is not None else True,
            )
        )
        if len(self._rows) >= _FLUSH_EVERY:
            self._stage()
        return decision

    def flush(self) -> None:
        """Write every URL row of the run so far into the URL table."""
        self._stage()
        self.store.merge_urls()

    def _stage(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self.store.write_urls(self.origin, self.run_id, rows)

    def pending_pages(self, exclude: set[str]) -> Iterator[tuple[str, str, str]]:
        """The URLs marked for refetch this run (``pages=refetch``), minus ``exclude``."""
        self.flush()
        cursor = self.store.db.execute("SELECT url, segment, reason FROM pending ORDER BY rowid")
        for url, segment, reason in cursor:
            if url not in exclude:
                yield url, segment, reason

    # -- pages, sitemaps and verdicts (the run's parts) ---------------------------------------

    def observe_page(
        self, url: str, segment: str, reason: str, **fetch: Any
    ) -> dict[str, Any] | None:
        """Record a page we fetched (:meth:`PageObservations.observe`)."""
        observed = self.pages_seen.observe(url, segment, reason, **fetch)
        if observed and observed["changed"]:
            self.url_changes.saw_change(url, segment)
        return observed

    def page_validators(self, url: str, segment: str) -> dict[str, str]:
        """Conditional headers to refetch ``url`` (:meth:`PageObservations.validators`)."""
        return self.pages_seen.validators(url, segment)

    def sitemap_read(self, url: str, response: Response, **read: Any) -> str | None:
        """A sitemap file read on this run (:meth:`SitemapFiles.read`); its URLs staged first."""
        self._stage()
        return self.sitemaps.read(url, response, **read)

    def judge(
        self, segment: str, static_name: str, static_reason: str, evidence: dict[str, Any]
    ) -> tuple[str, str, dict[str, Any]]:
        """The segment's verdict across runs, saved (:meth:`SegmentJudgement.judge`)."""
        self.pages_seen.settle()  # the pages held for the common-mode rule
        return self.judgement.judge(segment, static_name, static_reason, evidence)

    def changes(self, only: set[str] | None = None) -> dict[str, Any]:
        """The report's ``changes`` (:meth:`UrlChanges.summary`)."""
        return self.url_changes.summary(only)

    def _run_changes(self) -> ChangeList:
        """:func:`changes.run_changes` of this run, its URL rows written first."""
        self.flush()
        previous = self.previous["id"] if self.previous is not None else None
        return run_changes(self.store, self.origin, self.run_id, previous, files=self.sitemaps)

    def incremental_summary(self, only: set[str] | None = None) -> dict[str, Any]:
        """The incremental run's decisions, of the segments in ``only`` when given (the
        report of one site in a crawl over several)."""
        if not self.incremental:
            return {}
        reasons: Counter[str] = Counter()
        segments = {}
        chosen = {n: s for n, s in self.by_segment.items() if only is None or n in only}
        for name, seg in sorted(chosen.items()):
            reasons.update(seg.decisions)
            segments[name] = seg.summary(self.decisions.audit_shares.get(name))
        cut = self.cut(self._clock())
        return {
            "since": (
                self.since_arg
                if isinstance(self.since_arg, str)
                else format_utc(cut)
                if cut is not None
                else None
            ),
            "cut": format_utc(cut) if cut is not None else None,
            "urls": sum(s.urls for s in chosen.values()),
            "lastmod_after_since": sum(s.lastmod_after_since for s in chosen.values()),
            "undated": sum(s.undated for s in chosen.values()),
            "refetch": sum(s.refetch for s in chosen.values()),
            "by_reason": dict(sorted(reasons.items())),
            "segments": segments,
            "pages_fetched": self.pages,
        }

    # -- the end ---------------------------------------------------------------------------

    def finish(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.pages_seen.settle()
            self.flush()
            self.store.sitemaps.save_backlog(self.origin, self.run_id, self.sitemaps.left)
            now = dt.datetime.now(dt.UTC).replace(microsecond=0)
            server_now = self._clock()
            self.store.finish_run(
                self.run_id,
                format_utc(now),
                reason,
                format_utc(server_now.replace(microsecond=0)),
            )
        except sqlite3.OperationalError as exc:
            if not is_locked(exc):
                raise
            # the run stays unfinished in the file: the next one does not build on it
            logger.warning(
                "State file %(path)s: this run's end was not written: another crawl held "
                "the file for more than %(wait)g s",
                {"path": self.store.path, "wait": RUN_BUSY_TIMEOUT},
            )
        finally:
            self.store.close()
            if self.lock is not None:
                self.lock.release()
