"""State across runs, our page fetches: what changed between two fetches, and what lastmod said.

Each page we fetch (sampled, audited, refetched) is compared with our previous fetch of it:
its content changed or not (the fingerprint), its own date and its validators moved or
not, and its lastmod moved or not. A change the lastmod did not report is a miss, unless
the sitemap was built before the change could be in it (a lagged sitemap).
"""

from __future__ import annotations

import datetime as dt
import email.utils
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.held import HeldPages
from sitemapcrawl.incremental.segmentrun import captured, page_moment, utc
from sitemapcrawl.sitemaps.dates import format_utc, parse_lastmod
from sitemapcrawl.verify.crossrun import Observation, url_runs
from sitemapcrawl.verify.refetch.audits import audit_draw
from sitemapcrawl.verify.refetch.learn import co_changed
from sitemapcrawl.verify.refetch.moves import delta_l
from sitemapcrawl.verify.refetch.rates import page_date_intervals, wave
from sitemapcrawl.verify.thresholds import MAX_LAG

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from sitemapcrawl.incremental.decisions import RefetchDecisions
    from sitemapcrawl.incremental.standing import RunFacts, SegmentStandings
    from sitemapcrawl.incremental.store import UrlState
    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = ["RANDOM_REASONS", "PageObservations"]

#: Page fetches chosen independently of how the page changes: they estimate the miss rate
#: (docs/verification.md, "Audit"). The sample, the panel and the audit are drawn at
#: random; ``no_history`` is every URL of an untrusted segment fetched once so far (on a
#: second run, the whole segment: a census, the best audit there is); ``probe`` is a
#: seeded draw among the pages an untrusted segment's rates leave; ``max_age`` picks by the
#: time since our last fetch, not by change (if anything it overstates the misses, as a
#: page unfetched for long had more time to change). ``poisson`` is not: it
#: picks the pages that change most, and would overstate the misses; nor is ``wave``.
RANDOM_REASONS = frozenset({"sample", "panel", "audit", "no_history", "probe", "max_age"})
#: Page fetches whose change the rates predict, in an untrusted segment: what the wave test
#: reads (``verify.refetch.rates.wave``). Not a moving lastmod's (it points at the changes), nor
#: a new page's, nor the wave's own.
WAVE_REASONS = frozenset({"sample", "panel", "no_history", "probe", "poisson", "max_age"})


@dataclass(slots=True)
class _Change:
    """One page fetch compared with our previous fetch of it."""

    interval: tuple[float, bool] | None  # seconds since our previous fetch, content changed
    from_dates: list[tuple[float, bool]]  # the history the page's own dates give
    observed: dict[str, Any] = field(default_factory=dict)
    miss: tuple[str, bool] | None = None  # (previous fetch's time, counted)


class PageObservations:
    """The pages one run fetched, recorded against what the state knew of them.

    ``decisions``: the change rates an untrusted segment's pages follow (the wave);
    ``sitemap_as_of``: when each sitemap read on this run was built (a lagged sitemap);
    ``conditional``: ``SITEMAPCRAWL_CONDITIONAL_PAGES``; ``flush`` writes the run's URL
    rows so far (before one is read back); ``clock`` is the run's server clock so far."""

    def __init__(
        self,
        run: RunFacts,
        standings: SegmentStandings,
        decisions: RefetchDecisions,
        *,
        sitemap_as_of: Mapping[str, dt.datetime],
        conditional: bool,
        flush: Callable[[], None],
        clock: Callable[[], dt.datetime],
        saw_change: Callable[[str, str], None] = lambda url, segment: None,
    ) -> None:
        self._run = run
        self._standings = standings
        self._decisions = decisions
        self._sitemap_as_of = sitemap_as_of
        self._conditional = conditional
        self._flush = flush
        self._clock = clock
        self._saw_change = saw_change
        self.held = HeldPages()
        #: the change runs of the pages this run's fetches found changed (co-change)
        self._changed_now: list[tuple[int, ...]] = []

    def observe(
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
        content: str | None = None,
    ) -> dict[str, Any] | None:
        """Record a fetched page; returns the change observation when we had fetched it
        before (``changed``, ``interval_s``, ``lastmod_moved``). ``not_modified``: it
        answered ``304`` to our conditional request: it is what we fetched last time.
        ``content``: what the fingerprint hashed (``PageEvidence.content``). A page whose
        content changed is held (``incremental.held``), its observation an empty dict
        filled by :meth:`settle`."""
        run = self._run
        self._flush()
        prev = run.store.url(run.origin, url)
        fetch: dict[str, Any] = {
            "status": status,
            "fetched_at": fetched_at,
            "fingerprint": fingerprint,
            "page_modified": page_modified,
            "http_last_modified": http_last_modified,
            "etag": etag,
            "not_modified": not_modified,
            "content": None if not_modified else (content or ""),
        }
        if prev is None or prev.fingerprint is None or fingerprint is None or not_modified:
            return self._observe(url, segment, reason, prev, fetch)
        if fingerprint == prev.fingerprint:
            self.held.unchanged(url)
            return self._observe(url, segment, reason, prev, fetch)
        unmoved = prev.lastmod_raw is not None and prev.lastmod_raw == prev.fetched_lastmod_raw
        return self.held.hold(
            url,
            segment,
            reason,
            fetch,
            before=run.fetches.content(run.origin, url),
            candidate=unmoved and reason in RANDOM_REASONS,
        )

    def noise_probes(self) -> list[tuple[str, str]]:
        """(url, segment) of the held would-be misses to fetch again at once
        (``HeldPages.probes``: a seeded draw), each answered with ``held.noise``."""
        run = self._run
        return self.held.probes(lambda url: audit_draw(run.seed, run.run_id, url))

    def settle(self) -> list[tuple[str, str, str, dict[str, Any]]]:
        """Record the pages held so far (:meth:`observe`), each as changed unless every one
        of its edits is the template's by now (``CommonEdits.template_only``): (url,
        segment, reason, observation) of each."""
        held = self.held.take()
        if held:
            self._flush()
        settled = []
        for page, template, volatile, noise in held:
            seg = self._standings.by_segment[page.segment]
            seg.noise = noise or seg.noise
            prev = self._run.store.url(self._run.origin, page.url)
            observed = self._observe(
                page.url,
                page.segment,
                page.reason,
                prev,
                page.fetch,
                template=template,
                volatile=volatile,
            )
            if observed is not None:
                page.observed.update(observed)
                if template:
                    page.observed["template_edit"] = True
                    seg.template_edits += 1
                if observed["changed"]:
                    self._saw_change(page.url, page.segment)
            settled.append((page.url, page.segment, page.reason, page.observed))
        return settled

    def _observe(
        self,
        url: str,
        segment: str,
        reason: str,
        prev: UrlState | None,
        fetch: dict[str, Any],
        *,
        template: bool = False,
        volatile: bool = False,
    ) -> dict[str, Any] | None:
        """:meth:`observe` once the page's change is known; ``template``: its content
        changed by template edits alone; ``volatile``: its site's pages differ on every
        fetch."""
        run = self._run
        fingerprint, page_modified = fetch["fingerprint"], fetch["page_modified"]
        http_last_modified, etag = fetch["http_last_modified"], fetch["etag"]
        not_modified, fetched_at = fetch["not_modified"], fetch["fetched_at"]
        if not_modified and prev is not None:
            fingerprint, page_modified = prev.fingerprint, prev.page_modified
            http_last_modified, etag = prev.http_last_modified, prev.etag
        change: _Change | None = None
        from_dates: list[tuple[float, bool]] = []
        if fingerprint is not None and (prev is None or prev.fingerprint is None):
            from_dates, _ = page_date_intervals(
                fetched_at=fetched_at,
                page_date=page_moment(page_modified),
                previous_fetch=None,
                previous_date=None,
                changed=None,
                cap=run.policy.max_age.total_seconds(),
            )
        if prev is not None and prev.fingerprint is not None and fingerprint is not None:
            change = self._compare(
                prev,
                segment,
                reason,
                fetched_at=fetched_at,
                fingerprint=fingerprint,
                page_modified=page_modified,
                validators=(etag, http_last_modified),
                not_modified=not_modified,
                template=template,
                volatile=volatile,
            )
            if change is not None:
                from_dates = change.from_dates
        learned = None
        if change is not None and not change.observed.get("volatile"):
            changed, moved = change.observed["changed"], change.observed["lastmod_moved"]
            record = run.fetches.learning.observe(
                run.origin, url, run.run_id, changed=changed, moved=moved
            )
            learned = record.to_json()
            if changed:
                self._changed_now.append(record.change_runs)
        run.fetches.record(
            run.origin,
            run.run_id,
            url,
            fetched_at=format_utc(fetched_at.replace(microsecond=0)),
            reason=reason,
            status=fetch["status"],
            fingerprint=fingerprint,
            page_modified=page_modified,
            http_last_modified=http_last_modified,
            etag=etag,
            interval=change.interval if change is not None else None,
            miss=change.miss if change is not None else None,
            page_intervals=from_dates,
            content=fetch["content"] if fingerprint is not None else None,
            learned=learned,
        )
        return change.observed if change is not None else None

    def _compare(
        self,
        prev: UrlState,
        segment: str,
        reason: str,
        *,
        fetched_at: dt.datetime,
        fingerprint: str,
        page_modified: str | None,
        validators: tuple[str | None, str | None],
        not_modified: bool,
        template: bool,
        volatile: bool,
    ) -> _Change | None:
        """This fetch against our previous one: content changed or not, and whether the
        page's own date, its validators and its lastmod said so (this run's counts).
        ``template``: it changed by template edits alone: a change of the page as served
        (its rate, the wave, the change list); when its lastmod did not move, not one of
        its own content, which is what its lastmod and its own date answer for (no miss).
        A lastmod that moved reported a change, whatever made it. ``volatile``: the site's
        pages differ on every fetch: the change is no evidence at all (no rate, no score)."""
        run = self._run
        before = utc(prev.fetched_at)
        if before is None or prev.fetched_at is None:
            return None
        seconds = max((fetched_at - before).total_seconds(), 0.0)
        changed = fingerprint != prev.fingerprint
        seg = self._standings.by_segment[segment]
        if volatile and changed:
            seg.volatile_pages += 1
            change = _Change(None, [])
            change.observed = {"changed": True, "interval_s": seconds, "volatile": True}
            return change
        lastmod = parse_lastmod(prev.lastmod_raw) if prev.lastmod_raw else None
        moved, own = self._moved(prev, segment, before, lastmod, changed=changed, template=template)
        if reason in WAVE_REASONS and self._decisions.untrusted(segment):
            seg.wave_pages += 1
            seg.wave_changed += changed
            seg.wave_expected += self._decisions.change_probability(segment, prev, seconds)
        from_dates, check = page_date_intervals(
            fetched_at=fetched_at,
            page_date=page_moment(page_modified),
            previous_fetch=before,
            previous_date=page_moment(prev.page_modified),
            changed=own,
            cap=run.policy.max_age.total_seconds(),
        )
        if check is not None:
            seg.page_checks[check] += 1
        moved_validator = _validator_moved(prev, *validators)
        if changed and moved_validator is not None and not not_modified:
            seg.validator_checks["hit" if moved_validator else "miss"] += 1
        random = reason in RANDOM_REASONS
        change = _Change((seconds, changed), from_dates)
        change.observed = {"changed": changed, "interval_s": seconds, "lastmod_moved": moved}
        if lastmod is None or lastmod.value is None:
            return change
        lagging = False
        if own and not moved and random:
            # A miss, unless the sitemap was built before the change could be in it;
            # either way a later lastmod covering it settles it.
            lagging = self._lag_explains(prev.sitemap, before, page_modified)
            change.miss = (prev.fetched_at, not lagging)
            change.observed["lag_explained"] = lagging
            seg.lag_pending += lagging
        if not lagging:
            runs = 1.0
            if random and not moved and not own:
                runs = url_runs(run.fetches.runs_since(run.origin, prev.url, run.run_id))
            seg.observations.append(Observation(moved, own, random, runs))
        return change

    def _moved(
        self,
        prev: UrlState,
        segment: str,
        before: dt.datetime,
        lastmod: LastMod | None,
        *,
        changed: bool,
        template: bool,
    ) -> tuple[bool, bool]:
        """Whether the lastmod moved since our fetch at ``before`` (read in any zone when
        the page changed and the pages' zone says not), and whether the page's own content
        changed (a template edit is none unless the lastmod moved)."""
        shift, offset = self._standings.shift(segment) or 0.0, self._standings.utc_offset(segment)
        moved = _lastmod_moved(lastmod, prev, before, shift, offset)
        own = changed and (moved or not template)
        if own and not moved and offset is not None and lastmod is not None:
            moved = _in_any_zone(lastmod, prev, before, shift)
            self._standings.by_segment[segment].zone_misses += moved
        return moved, own

    def waves(self, fetched: set[str]) -> list[tuple[str, str, str]]:
        """The pages of this run's waves (``pages=refetch``): in each untrusted segment
        whose fetched pages changed far more than their rates predicted
        (``verify.refetch.rates.wave``), its URLs of this run not fetched yet, at most
        ``Policy.wave_max`` (those first in the seeded draw), counted in the segment's
        ``wave`` summary; then, in any segment, the pages not fetched yet that changed
        together with a page this run's fetches found changed (``cochange``, see
        :meth:`co_changes`)."""
        rows = list(self._rate_waves(fetched))
        taken = fetched | {url for url, _, _ in rows}
        return rows + self.co_changes(taken)

    def co_changes(self, fetched: set[str]) -> list[tuple[str, str, str]]:
        """The URLs of this run not in ``fetched`` that changed on at least
        ``Policy.cochange_min`` of the same earlier runs as a page this run's fetches
        found changed (``verify.refetch.learn.co_changed``), at most ``Policy.wave_max``
        (those first in the seeded draw); counted in each segment's ``cochange``. In a
        segment whose lastmod is used, only the pages our fetches saw change without a
        lastmod move are candidates."""
        run = self._run
        policy = run.policy
        if policy.cochange_min <= 0 or not self._changed_now:
            return []
        listed = run.fetches.learning.listed_changed(run.origin, run.run_id)
        # where the lastmod is used, only a page that has changed without a move: the
        # others' changes are what their lastmod reports
        others = {
            url: record.change_runs
            for url, (segment, record) in listed.items()
            if url not in fetched
            and (record.unmoved_changed > 0 or self._decisions.untrusted(segment))
        }
        chosen = sorted(
            co_changed(
                self._changed_now, others, run_id=run.run_id, min_common=policy.cochange_min
            ),
            key=lambda url: audit_draw(run.seed, run.run_id, url),
        )[: policy.wave_max]
        rows = []
        for url in sorted(chosen):
            segment = listed[url][0]
            self._standings.by_segment[segment].cochange_fetched += 1
            rows.append((url, segment, "cochange"))
        return rows

    def _rate_waves(self, fetched: set[str]) -> Iterator[tuple[str, str, str]]:
        run = self._run
        policy = run.policy
        for segment, seg in sorted(self._standings.by_segment.items()):
            if not wave(seg.wave_expected, seg.wave_changed, policy.wave_alpha):
                continue
            rest = [
                url
                for url in run.store.segment_urls(run.origin, segment, run.run_id)
                if url not in fetched
            ]
            if len(rest) > policy.wave_max:
                rest.sort(key=lambda url: audit_draw(run.seed, run.run_id, url))
                rest = rest[: policy.wave_max]
            seg.wave_fetched = len(rest)
            for url in rest:
                yield url, segment, "wave"

    def _lag_explains(self, sitemap: str, before: dt.datetime, page_modified: str | None) -> bool:
        """Whether a change found between our fetch at ``before`` and now can be too recent
        for the sitemap as read on this run: the whole window, or the page's own date (not
        a render time: see ``PageEvidence.best_modified``) inside it, is after the moment
        the sitemap was built (its ``Last-Modified``, else the time we read it)."""
        as_of = self._sitemap_as_of.get(sitemap)
        if as_of is None or self._clock() - as_of > MAX_LAG:
            return False  # a file built days ago is not lagging: it is stale
        if before > as_of:  # (the same second says nothing: HTTP dates are in seconds)
            return True
        modified = utc(page_modified)
        return modified is not None and modified >= before and modified > as_of

    def validators(self, url: str, segment: str) -> dict[str, str]:
        """``If-None-Match`` / ``If-Modified-Since`` for refetching ``url``: only in a segment
        whose validators changed every time our fetches saw its content change (see
        :data:`VALIDATOR_MIN_HITS`), so a ``304`` can be believed."""
        standing = self._standings.segments.get(segment)
        if (
            not self._conditional
            or standing is None
            or not standing.counts.get("validators_verified")
        ):
            return {}
        prev = self._run.store.url(self._run.origin, url)
        if prev is None or prev.fingerprint is None:
            return {}
        headers = {}
        if prev.etag:
            headers["If-None-Match"] = prev.etag
        if prev.http_last_modified:
            moment = utc(prev.http_last_modified)
            if moment is not None:
                headers["If-Modified-Since"] = email.utils.format_datetime(
                    moment.astimezone(dt.UTC), usegmt=True
                )
        return headers


def _in_any_zone(lastmod: LastMod, prev: UrlState, before: dt.datetime, shift: float) -> bool:
    """Whether lastmod moved since our fetch at ``before`` read in any zone. A date (or a
    time without a zone) is its whole day in any zone from UTC-12 to UTC+14: read in the
    pages' zone it may end before our last fetch while in some zone it still holds it, and
    an edit after that fetch on that day keeps the value. Such a change is no miss: the
    pages' zone is not the sitemap's."""
    return _lastmod_moved(lastmod, prev, before, shift, None)


def _lastmod_moved(
    lastmod: LastMod | None,
    prev: UrlState,
    before: dt.datetime,
    shift: float,
    utc_offset: float | None,
) -> bool:
    """``delta_l`` of our fetch at ``before``, its dates read at ``utc_offset``."""
    return bool(
        delta_l(
            lastmod,
            before,
            prev.fetched_lastmod_raw,
            compare_raw=True,
            captured=captured(prev, shift, utc_offset),
            shift=shift,
            utc_offset=utc_offset,
        )
    )


def _validator_moved(prev: UrlState, etag: str | None, last_modified: str | None) -> bool | None:
    """Whether the page's validator changed since ``prev`` (its ETag when both fetches had
    one, else its Last-Modified); None when there is none to compare."""
    if prev.etag and etag:
        return prev.etag.removeprefix("W/") != etag.removeprefix("W/")
    if prev.http_last_modified and last_modified:
        return prev.http_last_modified != last_modified
    return None
