"""The crawl's view of the state file: what the spider and the pipeline ask of it.

One ``CrawlState`` per crawl (``crawl_context(crawler).state``), opened by the spider
when the crawl starts. It wraps :class:`sitemapcrawl.incremental.store.StateStore` (pure
SQLite) with the crawl's context: the origin, this run's id, the previous finished run, the
segments' standing verdicts, the incremental cut (``since``), and buffers for the per-URL
rows (written in batches) and for this run's page observations (the L2 counts).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.store import SegmentState, SitemapState, StateError, StateStore
from sitemapcrawl.sitemaps.dates import format_utc, parse_feed_date, parse_lastmod
from sitemapcrawl.verify.crossrun import DECAY, CrossRun, Observation, combine
from sitemapcrawl.verify.schedule import (
    Decision,
    Policy,
    audit_draw,
    decide,
    delta_l,
    page_date_intervals,
    page_dates_verified,
    reports_within,
    trusted_audit_share,
)
from sitemapcrawl.verify.scoring import MAX_LAG

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from scrapy.http import Response
    from scrapy.settings import BaseSettings

    from sitemapcrawl.incremental.store import UrlState
    from sitemapcrawl.items import SitemapUrlItem

logger = logging.getLogger(__name__)

__all__ = ["CrawlState", "StateError", "parse_since", "state_path"]

_FLUSH_EVERY = 20000  # URL rows per transaction (fewer, larger batches: see store.py)
#: Consecutive fetches on which a generation-time cluster must move to be confirmed (§5a).
GENERATION_CONFIRM = 3
#: Share of a segment's lastmods in one 10-minute window that makes them one stamp.
STAMP_SHARE = 0.9
#: Audits (decayed) after which a segment's panel is no longer re-fetched between samples.
PANEL_AUDITS = 60
#: Runs a miss waits for a lagged sitemap to report it before it stands.
LAG_RUNS = 2
#: Page fetches chosen independently of how the page changes: they estimate the miss rate
#: (§5d). The sample, the panel and the audit are drawn at random; ``no_history`` is every
#: URL of an untrusted segment fetched once so far (on a second run, the whole segment: a
#: census, the best audit there is). ``poisson`` is not: it picks the pages that change
#: most, and would overstate the misses.
RANDOM_REASONS = frozenset({"sample", "panel", "audit", "no_history"})
_UNKNOWN: Any = object()  # sample_due: the cluster centre is not known yet


def state_path(value: str | None, settings: BaseSettings) -> Path | None:
    """The state file chosen by the ``state`` argument or ``SITEMAPCRAWL_STATE_PATH``;
    None when state is off (``off`` or empty)."""
    chosen = value if value is not None else settings.get("SITEMAPCRAWL_STATE_PATH")
    if chosen is None or str(chosen).strip().lower() in ("", "off", "false", "0"):
        return None
    return Path(str(chosen).strip()).expanduser()


def parse_since(value: str) -> dt.datetime | str:
    """``last`` or an ISO 8601 date/time (UTC when no zone); raises ValueError."""
    text = value.strip()
    if text.lower() == "last":
        return "last"
    parsed = parse_lastmod(text)
    if parsed is None or parsed.value is None or "invalid" in parsed.flags:
        raise ValueError(f"argument since={value!r} is not 'last' or an ISO 8601 date/time")
    return parsed.value


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def _captured(prev: UrlState) -> tuple[dt.datetime, dt.datetime] | None:
    """The window between our last two fetches of a URL when the later one found it
    changed (a lastmod moving into it later reports that change, already fetched)."""
    if not prev.intervals or not prev.intervals[-1][1]:
        return None
    end = _utc(prev.fetched_at)
    if end is None:
        return None
    return end - dt.timedelta(seconds=prev.intervals[-1][0]), end


def _utc(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    parsed = parse_feed_date(text)
    return parsed.value if parsed is not None else None


#: A segment's pages are refetched conditionally once their ETag or Last-Modified changed
#: with their content this many times (decayed), and never stayed put while it changed.
VALIDATOR_MIN_HITS = 10


_PAGE_CHECKS = ("hit", "miss", "false", "still")


def _decayed(kept: list[float] | None, checks: Counter[str], kinds: tuple[str, ...]) -> list[float]:
    """Counts kept across runs (decayed by ``DECAY`` per run) plus this run's, by kind."""
    old = kept or [0.0] * len(kinds)
    return [round(DECAY * float(o) + checks[k], 3) for o, k in zip(old, kinds, strict=True)]


def _validator_moved(prev: UrlState, etag: str | None, last_modified: str | None) -> bool | None:
    """Whether the page's validator changed since ``prev`` (its ETag when both fetches had
    one, else its Last-Modified); None when there is none to compare."""
    if prev.etag and etag:
        return prev.etag.removeprefix("W/") != etag.removeprefix("W/")
    if prev.http_last_modified and last_modified:
        return prev.http_last_modified != last_modified
    return None


def _page_moment(text: str | None) -> dt.datetime | None:
    """A page's own modification date as a moment: only a time with its zone (a date, or
    a time in an unknown zone, cannot place a change between two daily fetches)."""
    if not text:
        return None
    parsed = parse_lastmod(text)
    if (
        parsed is None
        or parsed.value is None
        or parsed.precision in ("day", "month", "year")
        or "assumed_utc" in parsed.flags
    ):
        return None
    return parsed.value


@dataclass(slots=True)
class _SegmentRun:
    """This run's incremental bookkeeping for one segment."""

    decisions: Counter[str] = field(default_factory=Counter)
    refetch: int = 0
    observations: list[Observation] = field(default_factory=list)
    lastmod_after_since: int = 0
    undated: int = 0
    urls: int = 0
    lag_pending: int = 0
    #: How the pages' own dates behaved on re-fetch: hit, miss, false, still.
    page_checks: Counter[str] = field(default_factory=Counter)
    #: Pages whose content changed between two fetches: their ETag / Last-Modified
    #: changed too (hit) or not (miss: a conditional GET would have hidden the change).
    validator_checks: Counter[str] = field(default_factory=Counter)


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
        self.segments: dict[str, SegmentState] = store.segments(origin)
        self.policy = Policy(
            theta=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_THETA"),
            max_age=dt.timedelta(days=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_MAX_AGE_DAYS")),
            audit_trusted=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED"),
            audit_provisional=settings.getfloat("SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL"),
            audit_min=settings.getint("SITEMAPCRAWL_INCREMENTAL_AUDIT_MIN"),
            page_dates=settings.getbool("SITEMAPCRAWL_INCREMENTAL_PAGE_DATES"),
        )
        self.conditional_pages = settings.getbool("SITEMAPCRAWL_CONDITIONAL_PAGES")
        self.seed = str(settings.get("SITEMAPCRAWL_SAMPLE_SEED"))
        self.first_audit = settings.getint("SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT")
        self.resample_after = dt.timedelta(days=settings.getfloat("SITEMAPCRAWL_RESAMPLE_DAYS"))
        self.resample_trusted = dt.timedelta(
            days=settings.getfloat("SITEMAPCRAWL_RESAMPLE_TRUSTED_DAYS")
        )
        self._rows: list[tuple[str, str, str, str | None, str, bool]] = []
        self._priors: dict[str, tuple[int, float]] = {}
        self._page_priors: dict[str, tuple[int, float]] = {}
        self.by_segment: defaultdict[str, _SegmentRun] = defaultdict(_SegmentRun)
        self.replayed_sitemaps = 0
        self.skipped_children = 0
        self.server_now: dt.datetime | None = None
        self.closed = False
        store.db.execute(
            "CREATE TEMP TABLE IF NOT EXISTS pending (url TEXT PRIMARY KEY, segment TEXT, "
            "reason TEXT)"
        )
        self.pending = 0
        self._now_for: dt.datetime | None = None
        self._now_text = ""
        self._unchanged: dict[str, int] | None = None
        self._late: dict[str, tuple[int, int]] = {}
        #: this run's L2 counts per segment, all updated at the first verdict (pooling)
        self._l2_now: dict[str, CrossRun] | None = None
        #: the site a segment belongs to (a crawl over several sites: set by the spider);
        #: segments pool their counts within their site only
        self.site_of: Callable[[str], str] = _one_site
        self._audit_shares: dict[str, float] = {}
        #: When each sitemap read on this run was built (Last-Modified, else read time).
        self.sitemap_as_of: dict[str, dt.datetime] = {}

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
        """Open the file (raises :class:`StateError` with a clear message)."""
        store = StateStore.open(path)
        if store.upgraded_from is not None:
            logger.info(
                "State file %(path)s upgraded from schema %(old)d to %(new)d",
                {"path": path, "old": store.upgraded_from, "new": store.version},
            )
        return cls(store, origin, since=since, pages=pages, settings=settings)

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
            return _utc(self.previous["server_now"]) or _utc(self.previous["started_at"])
        return None

    def sample_due(self, segment: str, now: dt.datetime, centre: Any = _UNKNOWN) -> bool:
        """On incremental runs, a segment with a standing verdict is sampled again only
        every ``SITEMAPCRAWL_RESAMPLE_DAYS`` (``…_TRUSTED_DAYS`` once TRUSTED: the audit
        and, before TRUSTED, the panel keep watching it meanwhile); one without a verdict
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
        last = _utc(standing.counts.get("sampled_at"))
        every = self.resample_trusted if standing.verdict == "TRUSTED" else self.resample_after
        return last is None or now - last >= every

    def panel_due(self, segment: str) -> bool:
        """Between samples, a segment whose lastmod is used before the cross-run score
        confirmed it (PROVISIONAL, OVER_REPORTING, a PARTIAL one's dated subset, a
        corrected TZ_SHIFT) has its fixed panel re-fetched on every run until the audits
        reach ``PANEL_AUDITS``: with the audit, the random observations that catch a
        lastmod which stays put while pages change (the issue's "fixed panel re-fetched
        every run"). Past that, a miss rate of 5 % would have shown with 95 % power (design
        §5d: 59 audits), and the audit alone goes on; TRUSTED segments rely on it too."""
        standing = self.segments.get(segment)
        if standing is None:
            return False
        counts = standing.counts
        if _audits(counts) >= PANEL_AUDITS:
            return False
        return (
            standing.verdict in ("PROVISIONAL", "OVER_REPORTING")
            or (standing.verdict == "PARTIAL" and bool(counts.get("subset_trusted")))
            or (standing.verdict == "TZ_SHIFT" and self.shift(segment) is not None)
        )

    def cluster_moves(self, segment: str, centre: Any) -> int | None:
        """Consecutive fetches on which the segment's lastmod cluster moved, this one
        included; None without an earlier fetch to compare with."""
        standing = self.segments.get(segment)
        last = standing.counts.get("cluster_centre") if standing is not None else None
        if last is None or centre is None:
            return None
        if str(centre) == last:
            return 0
        return int(standing.counts.get("cluster_moves", 0)) + 1 if standing else 1

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
            decision = self._decide(item, lastmod, prev, now, cut)
            seg.decisions[decision.reason] += 1
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
            self._now_text = format_utc(now.replace(microsecond=0))
        self._rows.append(
            (
                item.url,
                item.segment,
                item.sitemap,
                item.lastmod_raw,
                self._now_text,
                # A run without ``since`` hands every URL over: the max-age clock restarts.
                decision.refetch if decision is not None else True,
            )
        )
        if len(self._rows) >= _FLUSH_EVERY:
            self._stage()
        return decision

    def _decide(
        self,
        item: SitemapUrlItem,
        lastmod: Any,
        prev: UrlState | None,
        now: dt.datetime,
        cut: dt.datetime | None,
    ) -> Decision:
        standing = self.segments.get(item.segment)
        verdict = standing.verdict if standing is not None else None
        if cut is None:  # since=last and no previous run: all new
            return Decision(True, "new")
        prior = self._priors.get(item.segment)
        if prior is None:
            prior = self._priors[item.segment] = self.store.segment_rate(self.origin, item.segment)
        return decide(
            verdict=verdict,
            subset_trusted=bool(standing and standing.counts.get("subset_trusted")),
            lastmod=lastmod,
            known=prev is not None,
            previous_raw=prev.lastmod_raw if prev is not None else None,
            since=cut,
            since_last=self.since_last,
            now=now,
            last_refetch=_utc(prev.last_refetch_at) if prev is not None else None,
            last_fetch=_utc(prev.fetched_at) if prev is not None else None,
            intervals=prev.intervals if prev is not None else (),
            prior=prior,
            draw=audit_draw(self.seed, self.run_id, item.url),
            policy=self.policy,
            shift=self.shift(item.segment),
            captured=_captured(prev) if prev is not None else None,
            audit_share=self._audit_share(item.segment, standing),
            utc_offset=self.utc_offset(item.segment),
            page_history=self._page_history(item.segment, standing, prev),
        )

    def _page_history(
        self, segment: str, standing: SegmentState | None, prev: UrlState | None
    ) -> tuple[list[tuple[float, bool]], tuple[int, float]] | None:
        """The URL's change history from its page's own dates, with the segment's pooled
        prior, when the segment's page dates are verified (see ``page_dates_verified``)."""
        if (
            prev is None
            or not prev.page_intervals
            or standing is None
            or not standing.counts.get("page_dates_verified")
        ):
            return None
        prior = self._page_priors.get(segment)
        if prior is None:
            prior = self._page_priors[segment] = self.store.segment_rate(
                self.origin, segment, page_dates=True
            )
        return prev.page_intervals, prior

    def _audit_share(self, segment: str, standing: SegmentState | None) -> float | None:
        """The segment's audit share when it is not the policy's: a TRUSTED segment's,
        sized by need from its counts; a PROVISIONAL one never audited yet audits
        ``SITEMAPCRAWL_INCREMENTAL_FIRST_AUDIT`` URLs at once (a lastmod that stays put
        while pages change, which its pages' own dates can hide, shows on the first run
        that can see it). Cached."""
        if standing is None or standing.verdict not in ("TRUSTED", "PROVISIONAL"):
            return None
        share = self._audit_shares.get(segment)
        if share is None:
            counts = standing.counts
            if standing.verdict == "TRUSTED":
                share = trusted_audit_share(
                    float(counts.get("tp", 0.0)),
                    float(counts.get("n_unch", 0.0)),
                    DECAY,
                    self.policy,
                    audits=_audits(counts),
                    # the first run has nothing to compare with: no ΔL = 0 count
                    runs=max(int(counts.get("runs", 0)) - 1, 1),
                    pool=self._standing_pool(segment),
                )
            elif self.first_audit and _audits(counts) < 1:
                known = self.store.segment_size(self.origin, segment)
                share = min(1.0, self.first_audit / max(known, 1))
                share = max(self.policy.audit_provisional, share)
            else:
                share = self.policy.audit_provisional
            self._audit_shares[segment] = share
        return share

    def _standing_pool(self, segment: str) -> tuple[float, float, float] | None:
        """The summed (TP, N_unch, audits) of ``segment``'s site's PROVISIONAL and TRUSTED
        segments as they stood after the previous run, when there are several (``_pool``)."""
        members = [
            standing.counts
            for name, standing in self.segments.items()
            if self._pools_with(segment, name)
        ]
        if len(members) < 2:
            return None
        return (
            sum(float(c.get("tp", 0.0)) for c in members),
            sum(float(c.get("n_unch", 0.0)) for c in members),
            sum(_audits(c) for c in members),
        )

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

    def page_validators(self, url: str, segment: str) -> dict[str, str]:
        """``If-None-Match`` / ``If-Modified-Since`` for refetching ``url``: only in a segment
        whose validators changed every time our fetches saw its content change (see
        :data:`VALIDATOR_MIN_HITS`), so a ``304`` can be believed."""
        standing = self.segments.get(segment)
        if (
            not self.conditional_pages
            or standing is None
            or not standing.counts.get("validators_verified")
        ):
            return {}
        prev = self.store.url(self.origin, url)
        if prev is None or prev.fingerprint is None:
            return {}
        headers = {}
        if prev.etag:
            headers["If-None-Match"] = prev.etag
        if prev.http_last_modified:
            moment = _utc(prev.http_last_modified)
            if moment is not None:
                headers["If-Modified-Since"] = email.utils.format_datetime(
                    moment.astimezone(dt.UTC), usegmt=True
                )
        return headers

    # -- pages we fetched ------------------------------------------------------------------

    def observe_page(
        self,
        url: str,
        segment: str,
        reason: str,
        *,
        status: int | None,
        fetched_at: dt.datetime,
        fingerprint: str | None,
        page_modified: str | None,
        http_last_modified: str | None,
        etag: str | None,
        not_modified: bool = False,
    ) -> dict[str, Any] | None:
        """Record a fetched page; returns the change observation when we had fetched it
        before (``changed``, ``interval_s``, ``lastmod_moved``). ``not_modified``: it
        answered ``304`` to our conditional request: it is what we fetched last time."""
        self.flush()
        prev = self.store.url(self.origin, url)
        if not_modified and prev is not None:
            fingerprint, page_modified = prev.fingerprint, prev.page_modified
            http_last_modified, etag = prev.http_last_modified, prev.etag
        interval = None
        observed: dict[str, Any] | None = None
        miss: tuple[str, bool] | None = None
        from_dates: list[tuple[float, bool]] = []
        if fingerprint is not None and (prev is None or prev.fingerprint is None):
            from_dates, _ = page_date_intervals(
                fetched_at=fetched_at,
                page_date=_page_moment(page_modified),
                previous_fetch=None,
                previous_date=None,
                changed=None,
                cap=self.policy.max_age.total_seconds(),
            )
        if prev is not None and prev.fingerprint is not None and fingerprint is not None:
            before = _utc(prev.fetched_at)
            if before is not None and prev.fetched_at is not None:
                seconds = max((fetched_at - before).total_seconds(), 0.0)
                changed = fingerprint != prev.fingerprint
                interval = (seconds, changed)
                from_dates, check = page_date_intervals(
                    fetched_at=fetched_at,
                    page_date=_page_moment(page_modified),
                    previous_fetch=before,
                    previous_date=_page_moment(prev.page_modified),
                    changed=changed,
                    cap=self.policy.max_age.total_seconds(),
                )
                if check is not None:
                    self.by_segment[segment].page_checks[check] += 1
                moved_validator = _validator_moved(prev, etag, http_last_modified)
                if changed and moved_validator is not None and not not_modified:
                    self.by_segment[segment].validator_checks[
                        "hit" if moved_validator else "miss"
                    ] += 1
                lastmod = parse_lastmod(prev.lastmod_raw) if prev.lastmod_raw else None
                moved = bool(
                    delta_l(
                        lastmod,
                        before,
                        prev.fetched_lastmod_raw,
                        compare_raw=True,
                        captured=_captured(prev),
                        shift=self.shift(segment) or 0.0,
                        utc_offset=self.utc_offset(segment),
                    )
                )
                random = reason in RANDOM_REASONS
                observed = {"changed": changed, "interval_s": seconds, "lastmod_moved": moved}
                if lastmod is not None and lastmod.value is not None:
                    seg = self.by_segment[segment]
                    lagging = False
                    if changed and not moved and random:
                        # A miss, unless the sitemap was built before the change could be
                        # in it; either way a later lastmod covering it settles it.
                        lagging = self._lag_explains(prev.sitemap, before, page_modified)
                        miss = (prev.fetched_at, not lagging)
                        observed["lag_explained"] = lagging
                        seg.lag_pending += lagging
                    if not lagging:
                        seg.observations.append(Observation(moved, changed, random))
        self.store.record_fetch(
            self.origin,
            self.run_id,
            url,
            fetched_at=format_utc(fetched_at.replace(microsecond=0)),
            reason=reason,
            status=status,
            fingerprint=fingerprint,
            page_modified=page_modified,
            http_last_modified=http_last_modified,
            etag=etag,
            interval=interval,
            miss=miss,
            page_intervals=from_dates,
        )
        return observed

    def _lag_explains(self, sitemap: str, before: dt.datetime, page_modified: str | None) -> bool:
        """Whether a change found between our fetch at ``before`` and now can be too recent
        for the sitemap as read on this run: the whole window, or the page's own date (not
        a render time: see ``PageEvidence.best_modified``) inside it, is after the moment
        the sitemap was built (its ``Last-Modified``, else the time we read it)."""
        as_of = self.sitemap_as_of.get(sitemap)
        if as_of is None or (self.server_now or self.started) - as_of > MAX_LAG:
            return False  # a file built days ago is not lagging: it is stale
        if before > as_of:  # (the same second says nothing: HTTP dates are in seconds)
            return True
        modified = _utc(page_modified)
        return modified is not None and modified >= before and modified > as_of

    def shift(self, segment: str) -> float | None:
        """A TZ_SHIFT segment's offset in seconds (lastmod minus the truth), else None."""
        standing = self.segments.get(segment)
        if standing is None or standing.verdict != "TZ_SHIFT":
            return None
        value = standing.counts.get("tz_shift_s")
        return float(value) if value is not None else None

    def utc_offset(self, segment: str) -> float | None:
        """The UTC offset the segment's pages write their times in, when known."""
        standing = self.segments.get(segment)
        value = standing.counts.get("utc_offset_s") if standing is not None else None
        return float(value) if value is not None else None

    def _settle_misses(self) -> dict[str, tuple[int, int]]:
        """Misses of earlier runs, settled now. A lastmod that moved into the window the
        change happened in was late, not wrong (a lagged sitemap): the miss becomes a true
        positive. One that moved past the window reports a later change that hides
        whether the earlier one would have been reported: a counted miss stays counted,
        one waiting for the sitemap is dropped. One that moved to an earlier time, or not
        at all within ``LAG_RUNS`` runs, is a miss. Per segment: (late reports, misses
        to add)."""
        settled: list[str] = []
        result: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        for url, segment, raw, since, at, run, counted, moved in self.store.open_misses(
            self.origin, self.run_id
        ):
            lastmod = parse_lastmod(raw) if raw and moved else None
            start, end = _utc(since), _utc(at)
            shift = self.shift(segment) or 0.0
            if lastmod is not None and lastmod.value is not None and start and end:
                offset = self.utc_offset(segment)
                if reports_within(lastmod, (start, end), shift, offset):
                    result[segment][0] += 1
                    result[segment][1] -= int(counted)
                elif not reports_within(
                    lastmod, (dt.datetime.min.replace(tzinfo=dt.UTC), end), shift, offset
                ):
                    pass  # superseded by a later change
                else:
                    result[segment][1] += int(not counted)
            elif moved or self.run_id - run >= LAG_RUNS:
                result[segment][1] += int(not counted)
            else:
                continue
            settled.append(url)
        if settled:
            self.store.settle_misses(self.origin, settled)
        return {segment: (late, fn) for segment, (late, fn) in result.items()}

    # -- verdicts --------------------------------------------------------------------------

    def _updated_l2(self, segment: str) -> CrossRun:
        """``segment``'s L2 counts with this run added (every segment's, computed at once
        on the first call, so that a verdict can read its site's pooled counts)."""
        if self._l2_now is None:
            self.flush()
            self._unchanged = self.store.unchanged_counts(self.origin, self.run_id)
            self._late = self._settle_misses()
            self._l2_now = {}
            for name in list(self.by_segment):
                self._l2_now[name] = self._with_this_run(name)
        found = self._l2_now.get(segment)
        if found is None:  # a segment first seen after the others were judged
            found = self._l2_now[segment] = self._with_this_run(segment)
        return found

    def _with_this_run(self, segment: str) -> CrossRun:
        """The segment's stored L2 counts, decayed, plus this run's observations and the
        late reports and misses settled on it."""
        standing = self.segments.get(segment)
        l2 = CrossRun.from_dict(standing.counts if standing is not None else {})
        l2.add_run(self.by_segment[segment].observations, (self._unchanged or {}).get(segment, 0))
        late, misses = self._late.get(segment, (0, 0))
        if late or misses:
            l2.tp += late
            l2.fn = max(0.0, l2.fn + misses)
            l2.extra["late_reports"] = int(l2.extra.get("late_reports", 0)) + late
        return l2

    def _pool(self, segment: str) -> tuple[CrossRun, int]:
        """The summed L2 counts of ``segment`` and of its site's other segments whose
        standing verdict is PROVISIONAL or TRUSTED (written by the same site software; a
        red or over-reporting segment's counts would flatter the recall), and how many
        they are (crossrun "Pooling")."""
        assert self._l2_now is not None
        pool = CrossRun()
        members = 0
        for name, l2 in self._l2_now.items():
            if not self._pools_with(segment, name):
                continue
            members += 1
            pool.tp += l2.tp
            pool.fp += l2.fp
            pool.fn += l2.fn
            pool.tn += l2.tn
            pool.n_unch += l2.n_unch
            pool.runs = max(pool.runs, l2.runs)
        return pool, members

    def _pools_with(self, segment: str, name: str) -> bool:
        """Whether ``name``'s counts are in ``segment``'s pool: itself, or a segment of its
        site whose standing verdict is PROVISIONAL or TRUSTED."""
        if name == segment:
            return True
        standing = self.segments.get(name)
        return (
            standing is not None
            and standing.verdict in ("PROVISIONAL", "TRUSTED")
            and self.site_of(name) == self.site_of(segment)
        )

    def judge(
        self, segment: str, static_name: str, static_reason: str, evidence: dict[str, Any]
    ) -> tuple[str, str, dict[str, Any]]:
        """Combine this run's L0/L1 verdict with the segment's history and save it."""
        standing = self.segments.get(segment)
        seg = self.by_segment[segment]
        l2 = self._updated_l2(segment)
        late = self._late.get(segment, (0, 0))[0]
        pool, pool_segments = self._pool(segment)
        previous = standing.verdict if standing is not None else None
        # §5a: a generation-time cluster is confirmed when it moves on 3 fetches in a row.
        centre = (evidence.get("l0") or {}).get("cluster_centre")
        centre = str(centre) if centre is not None else None
        moves = self.cluster_moves(segment, centre)
        if moves is None:
            moves = 1 if centre is not None else 0
        if static_name == "GENERATION_TIME" and centre is not None and moves >= GENERATION_CONFIRM:
            static_reason = (
                f"{static_reason[:-1]}; confirmed: the cluster moved on {moves} "
                "consecutive fetches."
            )
            evidence = {**evidence, "confirmed": True}
        if evidence.get("n_sampled"):
            l2.extra["sampled_at"] = format_utc(
                (self.server_now or self.started).replace(microsecond=0)
            )
        l2.extra["cluster_centre"] = centre
        l2.extra["cluster_moves"] = moves
        name, reason, extra = combine(
            static_name,
            static_reason,
            previous,
            l2,
            sampled=bool(evidence.get("n_sampled")),
            stamp=(evidence.get("l0") or {}).get("window_share", 0.0) >= STAMP_SHARE,
            pool=pool,
            pool_segments=pool_segments,
        )
        if evidence.get("utc_offset_s") is not None:
            l2.extra["utc_offset_s"] = evidence["utc_offset_s"]
        if name == "TZ_SHIFT":
            k = evidence.get("k")
            if k is not None:
                l2.extra["tz_shift_s"] = int(k) * 3600
        else:
            l2.extra.pop("tz_shift_s", None)
        page_dates = _decayed(l2.extra.get("page_dates"), seg.page_checks, _PAGE_CHECKS)
        l2.extra["page_dates"] = page_dates
        l2.extra["page_dates_verified"] = int(page_dates_verified(*page_dates))
        validators = _decayed(l2.extra.get("validators"), seg.validator_checks, ("hit", "miss"))
        l2.extra["validators"] = validators
        l2.extra["validators_verified"] = int(
            validators[0] >= VALIDATOR_MIN_HITS and validators[1] < 0.5
        )
        l2.extra["subset_trusted"] = int(
            static_name == "PARTIAL" and evidence.get("subset_verdict") == "PROVISIONAL"
        )
        since_run = (
            standing.verdict_since_run
            if standing is not None and standing.verdict == name
            else self.run_id
        )
        new = SegmentState(segment, name, since_run, l2.as_dict())
        self.store.save_segment(self.origin, self.run_id, new, reason, {**evidence, **extra})
        extra = {
            **extra,
            "verdict_since_run": since_run,
            "cluster_moves": moves,
            "page_dates": {
                "hits": page_dates[0],
                "misses": page_dates[1],
                "false_moves": page_dates[2],
                "still": page_dates[3],
                "verified": bool(l2.extra["page_dates_verified"]),
            },
            "validators": {
                "hits": validators[0],
                "misses": validators[1],
                "verified": bool(l2.extra["validators_verified"]),
            },
        }
        if late or seg.lag_pending:
            extra["late_reports"] = {"settled": late, "waiting": seg.lag_pending}
        return name, reason, extra

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
            segments[name] = {
                "urls": seg.urls,
                "refetch": seg.refetch,
                "lastmod_after_since": seg.lastmod_after_since,
                "undated": seg.undated,
                "by_reason": dict(sorted(seg.decisions.items())),
            }
            share = self._audit_shares.get(name)
            if share is not None:  # the share of its unchanged URLs audited (TRUSTED: by need)
                segments[name]["audit_share"] = round(share, 4)
        cut = self.cut(self.server_now or self.started)
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

    # -- sitemaps --------------------------------------------------------------------------

    def conditional_headers(self, url: str) -> dict[str, str]:
        """``If-None-Match``/``If-Modified-Since`` for a sitemap read completely before."""
        known = self.store.sitemap(self.origin, url)
        if known is None:
            return {}
        headers = {}
        if known.etag:
            headers["If-None-Match"] = known.etag
        if known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
        return headers

    def sitemap_read(
        self,
        url: str,
        response: Response,
        *,
        kind: str,
        body: bytes,
        index_lastmod: str | None,
        parent: str | None,
        complete: bool,
    ) -> str | None:
        """A sitemap file read on this run. Only a complete read keeps validators (a
        truncated or faulty file is fetched whole next time). Returns what the read says
        about the index that listed the file: ``agree`` (its content changed and its index
        lastmod moved), ``miss`` (changed, the index lastmod stood still), else None."""
        self._stage()  # its URLs: merged with the next batch, or when read back
        read_at = _utc(_header(response, b"Date")) or dt.datetime.now(dt.UTC)
        built = _utc(_header(response, b"Last-Modified"))
        self.sitemap_as_of[url] = min(built, read_at) if built is not None else read_at
        prev = self.store.sitemap(self.origin, url)
        digest = hashlib.blake2b(body, digest_size=16).hexdigest()
        check = None
        if parent is not None and prev is not None and prev.body_hash is not None:
            content_changed = prev.body_hash != digest
            lastmod_moved = prev.index_lastmod != index_lastmod
            parent_state = self.store.sitemap(self.origin, parent)
            if parent_state is not None and content_changed:
                if lastmod_moved:
                    parent_state.lastmod_agree += 1
                    check = "agree"
                else:
                    parent_state.lastmod_miss += 1
                    check = "miss"
                self.store.save_sitemap(self.origin, parent_state.run_id, parent_state)
        etag = response.headers.get(b"ETag")
        modified = response.headers.get(b"Last-Modified")
        keep = prev if prev is not None else None
        encoding = b", ".join(response.headers.getlist(b"Content-Encoding")).decode("latin-1")
        self.store.save_sitemap(
            self.origin,
            self.run_id,
            SitemapState(
                url,
                kind,
                etag.decode("latin-1") if etag and complete else None,
                modified.decode("latin-1") if modified and complete else None,
                digest if complete else None,
                index_lastmod,
                self.run_id,
                keep.lastmod_agree if keep is not None else 0,
                keep.lastmod_miss if keep is not None else 0,
            ),
        )
        if complete:
            self.store.save_body(self.origin, url, body, encoding)
        return check

    def save_children(self, index_url: str, children: list[tuple[str, str | None]]) -> None:
        self.store.save_children(self.origin, index_url, children)

    def known_sitemap(self, url: str) -> SitemapState | None:
        return self.store.sitemap(self.origin, url)

    def stored_body(self, url: str) -> tuple[bytes, str] | None:
        """The body of ``url`` as last downloaded completely, and its Content-Encoding."""
        return self.store.body(self.origin, url)

    def index_audit_draw(self, url: str) -> float:
        """This run's reproducible draw for auditing a skippable child sitemap."""
        return audit_draw(self.seed + "\0index", self.run_id, url)

    def index_trusted(self, index_url: str, minimum: int) -> bool:
        """An index whose ``<lastmod>`` moved every time a child's content changed, at least
        ``minimum`` times and never missed: its unchanged child lastmods may skip fetches."""
        known = self.store.sitemap(self.origin, index_url)
        return known is not None and known.lastmod_miss == 0 and known.lastmod_agree >= minimum

    # -- the end ---------------------------------------------------------------------------

    def finish(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.flush()
            now = dt.datetime.now(dt.UTC).replace(microsecond=0)
            server_now = self.server_now or self.started
            self.store.finish_run(
                self.run_id,
                format_utc(now),
                reason,
                format_utc(server_now.replace(microsecond=0)),
            )
        finally:
            self.store.close()


def _audits(counts: dict[str, Any]) -> float:
    """A segment's audited ΔL = 0 pages (decayed), from its stored L2 counts."""
    return float(counts.get("fn", 0.0)) + float(counts.get("tn", 0.0))


def _one_site(segment: str) -> str:
    """``CrawlState.site_of`` for a crawl of one site: every segment is the site's."""
    return ""
