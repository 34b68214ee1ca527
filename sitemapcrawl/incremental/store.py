"""The state that outlives a run: one SQLite file, versioned, standard library only.

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

The file carries SQLite's ``application_id`` (``SMCP``) and ``user_version`` (the schema
version). A file that is not SQLite, another application's database or a schema from a
newer sitemapcrawl is refused with :class:`StateError`, and never modified. Older schemas
are upgraded in place, in one transaction per step.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "SegmentState",
    "SitemapState",
    "StateError",
    "StateStore",
    "UrlState",
    "read_reports",
]

APPLICATION_ID = 0x534D4350  # "SMCP"

#: Each step upgrades the schema by one version; ``SCHEMA_VERSION`` is their count.
MIGRATIONS: tuple[str, ...] = (
    # 1: runs, URLs with their lastmod history, segments and their verdicts
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        origin TEXT NOT NULL,
        started_at TEXT NOT NULL,
        server_now TEXT,
        finished_at TEXT,
        finish_reason TEXT,
        since TEXT
    );
    CREATE INDEX runs_origin ON runs (origin, id);
    CREATE TABLE urls (
        origin TEXT NOT NULL,
        url TEXT NOT NULL,
        segment TEXT NOT NULL,
        sitemap TEXT NOT NULL,
        lastmod_raw TEXT,
        first_run INTEGER NOT NULL,
        last_run INTEGER NOT NULL,
        lastmod_changed_at TEXT,
        last_refetch_at TEXT,
        fetched_at TEXT,
        fingerprint TEXT,
        page_modified TEXT,
        http_last_modified TEXT,
        etag TEXT,
        intervals TEXT NOT NULL DEFAULT '[]',
        item TEXT,
        PRIMARY KEY (origin, url)
    ) WITHOUT ROWID;
    CREATE TABLE lastmod_history (
        origin TEXT NOT NULL,
        url TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        lastmod_raw TEXT
    );
    CREATE INDEX lastmod_history_url ON lastmod_history (origin, url);
    CREATE TABLE fetches (
        origin TEXT NOT NULL,
        url TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        fetched_at TEXT NOT NULL,
        reason TEXT NOT NULL,
        status INTEGER,
        fingerprint TEXT,
        page_modified TEXT,
        changed INTEGER
    );
    CREATE INDEX fetches_url ON fetches (origin, url);
    CREATE TABLE segments (
        origin TEXT NOT NULL,
        segment TEXT NOT NULL,
        verdict TEXT,
        verdict_since_run INTEGER,
        counts TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (origin, segment)
    ) WITHOUT ROWID;
    CREATE TABLE verdicts (
        origin TEXT NOT NULL,
        segment TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        reason TEXT NOT NULL,
        evidence TEXT NOT NULL
    );
    CREATE INDEX verdicts_segment ON verdicts (origin, segment, run_id);
    """,
    # 2: sitemap files (conditional requests, 304 replay, trusted index lastmod)
    """
    CREATE TABLE sitemaps (
        origin TEXT NOT NULL,
        url TEXT NOT NULL,
        kind TEXT NOT NULL,
        etag TEXT,
        last_modified TEXT,
        body_hash TEXT,
        index_lastmod TEXT,
        run_id INTEGER NOT NULL,
        lastmod_agree INTEGER NOT NULL DEFAULT 0,
        lastmod_miss INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (origin, url)
    ) WITHOUT ROWID;
    CREATE TABLE sitemap_children (
        origin TEXT NOT NULL,
        index_url TEXT NOT NULL,
        child_url TEXT NOT NULL,
        lastmod_raw TEXT,
        position INTEGER NOT NULL,
        PRIMARY KEY (origin, index_url, child_url)
    ) WITHOUT ROWID;
    CREATE INDEX urls_sitemap ON urls (origin, sitemap);
    ALTER TABLE urls ADD COLUMN fetched_lastmod_raw TEXT;
    ALTER TABLE urls ADD COLUMN lastmod_changed_run INTEGER;
    ALTER TABLE runs ADD COLUMN report TEXT;
    ALTER TABLE sitemaps ADD COLUMN body BLOB;
    ALTER TABLE sitemaps ADD COLUMN content_encoding TEXT;
    """,
    # 3: a change our fetch found before the lastmod reported it (a miss, or a lagged
    # sitemap's late report): the window it happened in, until a later lastmod covers it
    """
    ALTER TABLE urls ADD COLUMN miss_since TEXT;
    ALTER TABLE urls ADD COLUMN miss_at TEXT;
    ALTER TABLE urls ADD COLUMN miss_run INTEGER;
    ALTER TABLE urls ADD COLUMN miss_counted INTEGER;
    """,
    # 4: the change history the page's own dates give (a change at the date, none since),
    # used for the URL's change rate once the segment's page dates are verified
    """
    ALTER TABLE urls ADD COLUMN page_intervals TEXT NOT NULL DEFAULT '[]';
    """,
    # 5: two indexes nothing reads (URLs by sitemap: a 304 now parses the stored body;
    # a URL's lastmod history: kept as a table to query, scanned when it is) cost a copy of
    # every URL each; at 1,000,000 URLs they were a third of the file
    """
    DROP INDEX urls_sitemap;
    DROP INDEX lastmod_history_url;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
#: URL rows staged at most before ``merge_urls`` writes them into the URL table in one
#: pass (the staging table is a temporary file: about 250 MB at this many rows).
MERGE_EVERY = 1_000_000
#: Fetch intervals kept per URL for its change-rate estimate (the most recent ones).
MAX_INTERVALS = 32


class StateError(Exception):
    """The state file cannot be used (not SQLite, foreign, from a newer version, locked)."""


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


@dataclass(slots=True)
class SitemapState:
    """A sitemap file as last read completely."""

    url: str
    kind: str
    etag: str | None
    last_modified: str | None
    body_hash: str | None
    index_lastmod: str | None
    run_id: int
    lastmod_agree: int
    lastmod_miss: int


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

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, upto: int = SCHEMA_VERSION) -> StateStore:
        """Open ``path``, creating it (and its directory) when missing.

        ``upto`` stops the schema at an older version (for upgrade tests)."""
        path = Path(path)
        existed = path.exists() and path.stat().st_size > 0
        if existed:
            _check_header(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise StateError(f"{path}: cannot open the state file ({exc})") from exc
        try:
            store = cls(db, path)
            store._prepare(existed, upto)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StateError(f"{path}: the state file is damaged or not SQLite ({exc})") from exc
        except StateError:
            db.close()
            raise
        return store

    def _prepare(self, existed: bool, upto: int) -> None:
        db = self.db
        if existed:
            app = db.execute("PRAGMA application_id").fetchone()[0]
            if app != APPLICATION_ID:
                raise StateError(
                    f"{self.path}: not a sitemapcrawl state file (another application's "
                    "SQLite database); refusing to touch it"
                )
            # A damaged file opens and reads until it meets the damage; refuse it whole
            # (a malformed header or root page raises DatabaseError here, reported alike).
            found = [
                line
                for (text,) in db.execute("PRAGMA quick_check(10)")
                for line in str(text).splitlines()
                if line != "ok" and not line.startswith("***")
            ]
            if found:
                raise StateError(
                    f"{self.path}: the state file is damaged (SQLite's quick_check: "
                    f"{'; '.join(found[:3])}); refusing to touch it: move it away to start "
                    "afresh, or restore a copy"
                )
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StateError(
                f"{self.path}: written by a newer sitemapcrawl (schema {version}, this one "
                f"knows up to {SCHEMA_VERSION}); refusing to touch it"
            )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        # URL rows are merged in key order (see write_urls), so the merge needs few pages
        # at a time; checkpoints every 20,000 pages (not 1,000) keep pages from being copied
        # again and again. 1,000,000 URLs written alone (bench/state_writes.py): a 16 MiB
        # page cache 14-18 s of CPU and 68 MB peak, 8 MiB 12.7 s and 52 MB, 4 MiB 12.6 s and
        # 43 MB; 8 MiB keeps the upper levels of a large URL table for incremental runs'
        # lookups (docs/benchmarks.md, "The state file's cost").
        db.execute("PRAGMA cache_size=-8192")
        db.execute("PRAGMA wal_autocheckpoint=20000")
        db.execute("PRAGMA foreign_keys=OFF")
        self.upgraded_from = version if existed and version < upto else None
        for step in range(version, upto):
            db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(MIGRATIONS[step]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {step + 1}")
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self.version = upto if version < upto else version
        # This connection's staging area for URL rows (see write_urls): not in the file.
        db.execute(
            "CREATE TEMP TABLE staged_urls (url TEXT, segment TEXT, sitemap TEXT, "
            "lastmod_raw TEXT, now TEXT, refetch INTEGER)"
        )

    def close(self) -> None:
        self.db.close()

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

    # -- sitemaps --------------------------------------------------------------------------

    def sitemap(self, origin: str, url: str) -> SitemapState | None:
        row = self.db.execute(
            "SELECT url, kind, etag, last_modified, body_hash, index_lastmod, run_id, "
            "lastmod_agree, lastmod_miss FROM sitemaps WHERE origin = ? AND url = ?",
            (origin, url),
        ).fetchone()
        return SitemapState(*row) if row is not None else None

    def save_sitemap(self, origin: str, run_id: int, state: SitemapState) -> None:
        self.db.execute(
            "INSERT INTO sitemaps (origin, url, kind, etag, last_modified, body_hash, "
            "index_lastmod, run_id, lastmod_agree, lastmod_miss) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (origin, url) DO UPDATE SET "
            "kind = excluded.kind, etag = excluded.etag, last_modified = excluded.last_modified, "
            "body_hash = excluded.body_hash, index_lastmod = excluded.index_lastmod, "
            "run_id = excluded.run_id, lastmod_agree = excluded.lastmod_agree, "
            "lastmod_miss = excluded.lastmod_miss",
            (
                origin,
                state.url,
                state.kind,
                state.etag,
                state.last_modified,
                state.body_hash,
                state.index_lastmod,
                run_id,
                state.lastmod_agree,
                state.lastmod_miss,
            ),
        )

    def save_body(self, origin: str, url: str, body: bytes, content_encoding: str) -> None:
        """The sitemap as downloaded (still compressed), to be parsed again after a 304."""
        self.db.execute(
            "UPDATE sitemaps SET body = ?, content_encoding = ? WHERE origin = ? AND url = ?",
            (body, content_encoding, origin, url),
        )

    def body(self, origin: str, url: str) -> tuple[bytes, str] | None:
        row = self.db.execute(
            "SELECT body, content_encoding FROM sitemaps WHERE origin = ? AND url = ? "
            "AND body IS NOT NULL",
            (origin, url),
        ).fetchone()
        return (bytes(row[0]), row[1] or "") if row is not None else None

    def save_children(
        self, origin: str, index_url: str, children: Sequence[tuple[str, str | None]]
    ) -> None:
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute(
                "DELETE FROM sitemap_children WHERE origin = ? AND index_url = ?",
                (origin, index_url),
            )
            db.executemany(
                "INSERT OR IGNORE INTO sitemap_children (origin, index_url, child_url, "
                "lastmod_raw, position) VALUES (?, ?, ?, ?, ?)",
                ((origin, index_url, child, raw, n) for n, (child, raw) in enumerate(children)),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before sqlite3 touches it."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise StateError(f"{path}: cannot read the state file ({exc})") from exc
    if head != _SQLITE_MAGIC:
        raise StateError(
            f"{path}: not a SQLite file (a sitemapcrawl state file was expected); "
            "refusing to overwrite it: move it away or set SITEMAPCRAWL_STATE_PATH"
        )


def _statements(sql: str) -> list[str]:
    """A migration's statements, run one by one inside our own transaction
    (``executescript`` would commit first)."""
    return [s.strip() for s in sql.split(";") if s.strip()]


def read_reports(path: str | Path) -> list[tuple[dict[str, Any], Iterator[dict[str, Any]]]]:
    """The last site report of every origin in a state file, each with its URLs (as item
    dicts: url, segment, sitemap, lastmod, lastmod_raw, lastmod_flags), read-only: the
    file is never created, upgraded or changed. A crawl over several sites saved one report
    per site: each comes with the URLs of its own segments. Raises :class:`StateError`."""
    from sitemapcrawl.sitemaps.dates import parse_lastmod  # noqa: PLC0415 - core, no cycle

    path = Path(path)
    if not path.is_file():
        raise StateError(f"{path}: no such file")
    _check_header(path)
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise StateError(f"{path}: the state file is damaged or not SQLite ({exc})") from exc
    if app != APPLICATION_ID:
        db.close()
        raise StateError(f"{path}: not a sitemapcrawl state file")
    if not 2 <= version <= SCHEMA_VERSION:
        db.close()
        raise StateError(f"{path}: schema {version} holds no site reports (2 to {SCHEMA_VERSION})")
    rows = db.execute(
        "SELECT r.id, r.origin, r.report FROM runs r WHERE r.report IS NOT NULL AND r.id = "
        "(SELECT max(id) FROM runs s WHERE s.origin = r.origin AND s.report IS NOT NULL) "
        "ORDER BY r.origin"
    ).fetchall()

    def items(
        origin: str, run_id: int, segments: set[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        for url, segment, sitemap, raw in db.execute(
            "SELECT url, segment, sitemap, lastmod_raw FROM urls "
            "WHERE origin = ? AND last_run >= ? ORDER BY url",
            (origin, run_id),
        ):
            if segments is not None and segment not in segments:
                continue
            lastmod = parse_lastmod(raw) if raw is not None else None
            yield {
                "url": url,
                "segment": segment,
                "sitemap": sitemap,
                "lastmod_raw": raw,
                "lastmod": lastmod.iso if lastmod is not None else None,
                "lastmod_flags": list(lastmod.flags) if lastmod is not None else [],
            }

    found: list[tuple[dict[str, Any], Iterator[dict[str, Any]]]] = []
    for run_id, origin, text in rows:
        report = json.loads(text)
        if isinstance(report, list):  # several sites: each report with its segments' URLs
            found += [
                (one, items(origin, run_id, {s["segment"] for s in one.get("segments", ())}))
                for one in report
            ]
        else:
            found.append((report, items(origin, run_id)))
    return found
