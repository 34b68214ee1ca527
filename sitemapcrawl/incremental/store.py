"""State across runs, the store: one SQLite file per project, what a next run needs per origin.

What a next run needs, per origin (the site the crawl was started on):

* ``runs``: every run, its server clock (``server_now``: the sitemaps' ``Date``), how it
  ended, and whether it was incremental (``since``);
* ``urls``: per URL its segment and sitemap, the lastmod seen on the last run, when the
  lastmod last changed, when it was last marked for refetch, and what our own fetches saw
  (fingerprint, the page's ``dateModified``, ``Last-Modified``, ``ETag``) plus the recent
  fetch intervals that feed the per-URL change-rate estimate (and the history its own
  modification dates give, used where those are verified);
* ``lastmod_history``: each URL's lastmod values, one row per change;
* ``fetches``: every page this project fetched (sample, audit, refetch), with the reason;
* ``segments``: per segment the current verdict, since when, and the decayed cross-run
  counts (L2: lastmod changed vs content changed); ``verdicts``: the verdict of every run;
* ``sitemaps``/``sitemap_children``: each sitemap file's validators (``ETag``,
  ``Last-Modified``), its body as downloaded (parsed again when a later request answers
  ``304 Not Modified``) and its hash, the children an index listed with their ``<lastmod>``,
  and how often an index's ``<lastmod>`` agreed with its children's content.

The schema, its migrations and the checks a file passes before use are in
``sitemapcrawl.incremental.schema``; the sitemap files' tables in
``sitemapcrawl.incremental.sitemapfiles``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.schema import (
    APPLICATION_ID,
    RUN_BUSY_TIMEOUT,
    SCHEMA_VERSION,
    StateError,
    StateLocked,
    open_database,
)
from sitemapcrawl.incremental.sitemapfiles import SitemapState, SitemapStore

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Sequence

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "SegmentState",
    "SitemapState",
    "StateError",
    "StateLocked",
    "StateStore",
    "UrlState",
]

#: URL rows staged at most before ``merge_urls`` writes them into the URL table in one
#: pass (the staging table is a temporary file: about 250 MB at this many rows).
MERGE_EVERY = 1_000_000
#: Fetch intervals kept per URL for its change-rate estimate (the most recent ones).
MAX_INTERVALS = 32


@dataclass(slots=True)
class UrlState:
    """A URL as the previous runs left it."""

    url: str
    segment: str
    sitemap: str
    lastmod_raw: str | None
    first_run: int
    last_run: int
    lastmod_changed_at: str | None
    last_refetch_at: str | None
    fetched_at: str | None
    fingerprint: str | None
    page_modified: str | None
    intervals: list[tuple[float, bool]]
    fetched_lastmod_raw: str | None = None  # the lastmod when we last fetched the page
    page_intervals: list[tuple[float, bool]] | None = None  # from the page's own dates
    etag: str | None = None  # the page's validators when we last fetched it
    http_last_modified: str | None = None


@dataclass(slots=True)
class SegmentState:
    """A segment's standing verdict and its decayed cross-run counts."""

    segment: str
    verdict: str | None
    verdict_since_run: int | None
    counts: dict[str, Any]


_URL_COLUMNS = (
    "url, segment, sitemap, lastmod_raw, first_run, last_run, lastmod_changed_at, "
    "last_refetch_at, fetched_at, fingerprint, page_modified, intervals, fetched_lastmod_raw, "
    "page_intervals, etag, http_last_modified"
)


def _url_state(row: Sequence[Any]) -> UrlState:
    url, segment, sitemap, raw, first, last, changed, refetch, fetched, fp, modified = row[:11]
    return UrlState(
        url,
        segment,
        sitemap,
        raw,
        first,
        last,
        changed,
        refetch,
        fetched,
        fp,
        modified,
        [(float(t), bool(c)) for t, c in json.loads(row[11])],
        row[12],
        [(float(t), bool(c)) for t, c in json.loads(row[13])],
        row[14],
        row[15],
    )


class StateStore:
    """One state file. ``StateStore.open(path)`` validates, creates or upgrades it.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "state.sqlite"
    >>> store = StateStore.open(path)
    >>> run = store.begin_run("https://example.com", "2024-06-01T00:00:00Z", since=None)
    >>> store.previous_run("https://example.com") is None
    True
    >>> store.finish_run(run, "2024-06-01T00:00:05Z", "finished", "2024-06-01T00:00:00Z")
    >>> store.previous_run("https://example.com")["server_now"]
    '2024-06-01T00:00:00Z'
    >>> store.close()
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.db = connection
        self.path = path
        self.staged = 0  # URL rows in the staging table, not merged yet
        self._staged_for: tuple[str, int] | None = None  # their origin and run
        self.sitemaps = SitemapStore(connection)
        self.version = SCHEMA_VERSION
        self.upgraded_from: int | None = None
        # This connection's staging area for URL rows (see write_urls): not in the file.
        connection.execute(
            "CREATE TEMP TABLE IF NOT EXISTS staged_urls (url TEXT, segment TEXT, "
            "sitemap TEXT, lastmod_raw TEXT, now TEXT, refetch INTEGER)"
        )

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str | Path, *, upto: int = SCHEMA_VERSION, wait: float = RUN_BUSY_TIMEOUT
    ) -> StateStore:
        """Open ``path``, creating it (and its directory) when missing.

        ``upto`` stops the schema at an older version (for upgrade tests); ``wait``: how
        long a write waits for another connection's (see ``open_database``)."""
        path = Path(path)
        db, version, upgraded_from = open_database(path, upto, wait=wait)
        store = cls(db, path)
        store.version, store.upgraded_from = version, upgraded_from
        return store

    def close(self) -> None:
        self.db.close()

    def set_wait(self, seconds: float) -> None:
        """How long a write waits for another connection's write lock."""
        self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    # -- runs ------------------------------------------------------------------------------

    def begin_run(self, origin: str, started_at: str, since: str | None) -> int:
        cursor = self.db.execute(
            "INSERT INTO runs (origin, started_at, since) VALUES (?, ?, ?)",
            (origin, started_at, since),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def finish_run(self, run_id: int, finished_at: str, reason: str, server_now: str) -> None:
        self.db.execute(
            "UPDATE runs SET finished_at = ?, finish_reason = ?, server_now = ? WHERE id = ?",
            (finished_at, reason, server_now, run_id),
        )

    def save_report(self, run_id: int, report: dict[str, Any] | list[dict[str, Any]]) -> None:
        """The run's site report (JSON), for ``scrapy sitemapreport STATE``: a list of
        reports for a crawl over several sites (one per site)."""
        self.db.execute(
            "UPDATE runs SET report = ? WHERE id = ?",
            (json.dumps(report, ensure_ascii=False, default=str), run_id),
        )

    def previous_run(self, origin: str, before: int | None = None) -> dict[str, Any] | None:
        """The last run of ``origin`` that finished reading everything."""
        row = self.db.execute(
            "SELECT id, started_at, server_now, finished_at, since FROM runs "
            "WHERE origin = ? AND finish_reason = 'finished' AND id < ? "
            "ORDER BY id DESC LIMIT 1",
            (origin, before if before is not None else 1 << 62),
        ).fetchone()
        if row is None:
            return None
        return dict(
            zip(("id", "started_at", "server_now", "finished_at", "since"), row, strict=True)
        )

    def run_count(self, origin: str) -> int:
        return int(
            self.db.execute("SELECT count(*) FROM runs WHERE origin = ?", (origin,)).fetchone()[0]
        )

    # -- URLs ------------------------------------------------------------------------------

    def url(self, origin: str, url: str) -> UrlState | None:
        row = self.db.execute(
            f"SELECT {_URL_COLUMNS} FROM urls WHERE origin = ? AND url = ?",  # noqa: S608
            (origin, url),
        ).fetchone()
        return _url_state(row) if row is not None else None

    def write_urls(
        self, origin: str, run_id: int, rows: Sequence[tuple[str, str, str, str | None, str, bool]]
    ) -> None:
        """Stage the URLs one run saw, each ``(url, segment, sitemap, lastmod_raw, now,
        refetch)``; ``merge_urls`` writes them into ``urls`` (and ``lastmod_history``), by
        itself every ``MERGE_EVERY`` rows and before rows of another origin or run.

        Staged rows are appended to a temporary table (this connection's only, never in the
        file), which costs next to nothing; the merge then walks the URL table's B-tree once
        in key order for up to ``MERGE_EVERY`` rows. Upserting 20,000-row batches directly
        touched most of the table's leaf pages at every batch once it outgrew the page
        cache (1,000,000 URLs written alone: docs/benchmarks.md, "The state file's cost").
        The crawl merges when it reads URL rows back (page fetches, the end of the run)."""
        if not rows:
            return
        if self._staged_for != (origin, run_id):
            self.merge_urls()
            self._staged_for = (origin, run_id)
        db = self.db
        db.execute("BEGIN")
        try:
            db.executemany("INSERT INTO temp.staged_urls VALUES (?, ?, ?, ?, ?, ?)", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.staged += len(rows)
        if self.staged >= MERGE_EVERY:
            self.merge_urls()

    def merge_urls(self) -> None:
        """Write the staged URLs into ``urls``: a lastmod that differs from the stored one (or
        a new URL) goes to ``lastmod_history`` and stamps ``lastmod_changed_at``/``_run``.
        In key order (a URL staged twice keeps its order), all in SQL."""
        if not self.staged or self._staged_for is None:
            return
        origin, run_id = self._staged_for
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute(
                "INSERT INTO lastmod_history (origin, url, run_id, lastmod_raw) "
                "SELECT ?1, s.url, ?2, s.lastmod_raw FROM temp.staged_urls AS s "
                "WHERE NOT EXISTS (SELECT 1 FROM urls WHERE origin = ?1 AND url = s.url "
                "AND lastmod_raw IS s.lastmod_raw) ORDER BY s.url, s.rowid",
                (origin, run_id),
            )
            db.execute(
                "INSERT INTO urls (origin, url, segment, sitemap, lastmod_raw, first_run, "
                "last_run, lastmod_changed_at, lastmod_changed_run, last_refetch_at, item) "
                "SELECT ?1, url, segment, sitemap, lastmod_raw, ?2, ?2, now, ?2, "
                "CASE WHEN refetch THEN now END, NULL FROM temp.staged_urls WHERE true "
                "ORDER BY url, rowid "
                "ON CONFLICT (origin, url) DO UPDATE SET segment = excluded.segment, "
                "sitemap = excluded.sitemap, lastmod_raw = excluded.lastmod_raw, "
                "last_run = excluded.last_run, "
                "lastmod_changed_at = CASE WHEN lastmod_raw IS excluded.lastmod_raw "
                "THEN lastmod_changed_at ELSE excluded.lastmod_changed_at END, "
                "lastmod_changed_run = CASE WHEN lastmod_raw IS excluded.lastmod_raw "
                "THEN lastmod_changed_run ELSE excluded.last_run END, "
                "last_refetch_at = coalesce(excluded.last_refetch_at, last_refetch_at), "
                "item = excluded.item",
                (origin, run_id),
            )
            db.execute("DELETE FROM temp.staged_urls")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.staged = 0

    def unchanged_counts(self, origin: str, run_id: int) -> dict[str, int]:
        """Per segment, URLs of this run already known before it whose lastmod did not
        change on it (the ΔL = 0 population of the cross-run score)."""
        return dict(
            self.db.execute(
                "SELECT segment, count(*) FROM urls WHERE origin = ? AND last_run = ? "
                "AND first_run < ? AND (lastmod_changed_run IS NULL OR lastmod_changed_run < ?) "
                "GROUP BY segment",
                (origin, run_id, run_id, run_id),
            ).fetchall()
        )

    def record_fetch(
        self,
        origin: str,
        run_id: int,
        url: str,
        *,
        fetched_at: str,
        reason: str,
        status: int | None,
        fingerprint: str | None,
        page_modified: str | None,
        http_last_modified: str | None,
        etag: str | None,
        interval: tuple[float, bool] | None,
        miss: tuple[str, bool] | None = None,
        page_intervals: Sequence[tuple[float, bool]] = (),
    ) -> None:
        """One page fetched by us; ``interval`` (seconds since our previous fetch, content
        changed) extends the URL's change history, ``page_intervals`` the one its own dates
        give. ``miss``: the content changed and the
        lastmod did not say so: (the previous fetch's time, whether the miss was counted);
        it waits in the URL's row for a later lastmod that covers it (see
        :meth:`open_misses`)."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute(
                "INSERT INTO fetches (origin, url, run_id, fetched_at, reason, status, "
                "fingerprint, page_modified, changed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    origin,
                    url,
                    run_id,
                    fetched_at,
                    reason,
                    status,
                    fingerprint,
                    page_modified,
                    None if interval is None else int(interval[1]),
                ),
            )
            if fingerprint is not None:
                row = db.execute(
                    "SELECT intervals, page_intervals FROM urls WHERE origin = ? AND url = ?",
                    (origin, url),
                ).fetchone()
                intervals = json.loads(row[0]) if row is not None else []
                from_dates = json.loads(row[1]) if row is not None else []
                if interval is not None:
                    intervals = [*intervals, [round(interval[0], 1), int(interval[1])]]
                from_dates += [[round(t, 1), int(c)] for t, c in page_intervals]
                db.execute(
                    "UPDATE urls SET fetched_at = ?, fingerprint = ?, page_modified = ?, "
                    "http_last_modified = ?, etag = ?, intervals = ?, page_intervals = ?, "
                    "fetched_lastmod_raw = lastmod_raw WHERE origin = ? AND url = ?",
                    (
                        fetched_at,
                        fingerprint,
                        page_modified,
                        http_last_modified,
                        etag,
                        json.dumps(intervals[-MAX_INTERVALS:], separators=(",", ":")),
                        json.dumps(from_dates[-MAX_INTERVALS:], separators=(",", ":")),
                        origin,
                        url,
                    ),
                )
            if miss is not None:
                db.execute(
                    "UPDATE urls SET miss_since = ?, miss_at = ?, miss_run = ?, "
                    "miss_counted = ? WHERE origin = ? AND url = ?",
                    (miss[0], fetched_at, run_id, int(miss[1]), origin, url),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def segment_size(self, origin: str, segment: str) -> int:
        """URLs of the segment the state knows."""
        row = self.db.execute(
            "SELECT count(*) FROM urls WHERE origin = ? AND segment = ?", (origin, segment)
        ).fetchone()
        return int(row[0])

    def open_misses(
        self, origin: str, run_id: int
    ) -> list[tuple[str, str, str | None, str, str, int, bool, bool]]:
        """Misses found before this run and not yet settled: (url, segment, lastmod_raw,
        miss_since, miss_at, miss_run, counted, lastmod moved since the miss)."""
        return [
            (url, seg, raw, since, at, run, bool(counted), bool(moved))
            for url, seg, raw, since, at, run, counted, moved in self.db.execute(
                "SELECT url, segment, lastmod_raw, miss_since, miss_at, miss_run, "
                "miss_counted, coalesce(lastmod_changed_run > miss_run, 0) FROM urls "
                "WHERE origin = ? AND miss_at IS NOT NULL AND miss_run < ?",
                (origin, run_id),
            )
        ]

    def settle_misses(self, origin: str, urls: Iterable[str]) -> None:
        self.db.executemany(
            "UPDATE urls SET miss_since = NULL, miss_at = NULL, miss_run = NULL, "
            "miss_counted = NULL WHERE origin = ? AND url = ?",
            [(origin, url) for url in urls],
        )

    def segment_rate(
        self, origin: str, segment: str, *, page_dates: bool = False
    ) -> tuple[int, float]:
        """Changes observed and observation time (seconds) over the segment's URLs: the
        pooled prior of the per-URL change-rate estimate (``page_dates``: of the one from
        the pages' own dates)."""
        column = "page_intervals" if page_dates else "intervals"
        changes, seconds = 0, 0.0
        for (intervals,) in self.db.execute(
            f"SELECT {column} FROM urls WHERE origin = ? AND segment = ? AND {column} != '[]'",  # noqa: S608 - one of two column names
            (origin, segment),
        ):
            for t, c in json.loads(intervals):
                changes += int(c)
                seconds += float(t)
        return changes, seconds

    # -- segments --------------------------------------------------------------------------

    def segments(self, origin: str) -> dict[str, SegmentState]:
        return {
            name: SegmentState(name, verdict, since, json.loads(counts))
            for name, verdict, since, counts in self.db.execute(
                "SELECT segment, verdict, verdict_since_run, counts FROM segments WHERE origin = ?",
                (origin,),
            )
        }

    def save_segment(
        self,
        origin: str,
        run_id: int,
        state: SegmentState,
        reason: str,
        evidence: dict[str, Any],
    ) -> None:
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute(
                "INSERT INTO segments (origin, segment, verdict, verdict_since_run, counts) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (origin, segment) DO UPDATE SET "
                "verdict = excluded.verdict, verdict_since_run = excluded.verdict_since_run, "
                "counts = excluded.counts",
                (
                    origin,
                    state.segment,
                    state.verdict,
                    state.verdict_since_run,
                    json.dumps(state.counts, sort_keys=True),
                ),
            )
            if state.verdict is not None:
                db.execute(
                    "INSERT INTO verdicts (origin, segment, run_id, verdict, reason, evidence) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        origin,
                        state.segment,
                        run_id,
                        state.verdict,
                        reason,
                        json.dumps(evidence, sort_keys=True, default=str),
                    ),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
