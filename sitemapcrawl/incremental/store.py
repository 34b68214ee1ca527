"""State across runs, the store: one SQLite file per project, what a next run needs per origin.

What a next run needs, per origin (the site the crawl was started on):

* ``runs``: every run, its server clock (``server_now``: the sitemaps' ``Date``), how it
  ended, and whether it was incremental (``since``);
* ``urls``: per URL its segment and sitemap, the lastmod seen on the last run, the one
  before it and how often it changed, when it last changed, when it was last marked for
  refetch, and what our own fetches saw (fingerprint, the page's ``dateModified``,
  ``Last-Modified``, ``ETag``) plus the recent fetch intervals that feed the per-URL
  change-rate estimate (and the history its own modification dates give, used where those
  are verified). Compact (schema 6): origin, segment and sitemap are ids in ``names``, the
  URL is stored without its origin (``path``), times in Unix seconds;
* ``fetches``: every page this project fetched (sample, audit, refetch), with the reason;
* ``segments``: per segment the current verdict, since when, and the decayed cross-run
  counts (L2: lastmod changed vs content changed); ``verdicts``: the verdict of every run;
* ``sitemaps``/``sitemap_children``: each sitemap file's validators (``ETag``,
  ``Last-Modified``), its body as downloaded (parsed again when a later request answers
  ``304 Not Modified``) and its hash, the children an index listed with their ``<lastmod>``,
  and how often an index's ``<lastmod>`` agreed with its children's content.

The schema, its migrations and the checks a file passes before use are in
``sitemapcrawl.incremental.schema``; the sitemap files' tables in
``sitemapcrawl.incremental.sitemapfiles``; what our page fetches write in
``sitemapcrawl.incremental.fetches``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
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
from sitemapcrawl.sitemaps.dates import format_utc

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Collection, Sequence

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "SegmentState",
    "SitemapState",
    "StateError",
    "StateLocked",
    "StateStore",
    "UrlState",
    "path_of",
    "url_of",
    "url_prefix",
]

#: URL rows staged at most before ``merge_urls`` writes them into the URL table in one
#: pass (the staging table is a temporary file: about 250 MB at this many rows).
MERGE_EVERY = 1_000_000


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
    "path, segment, sitemap, lastmod_raw, first_run, last_run, lastmod_changed_at, "
    "last_refetch_at, fetched_at, fingerprint, page_modified, intervals, fetched_lastmod_raw, "
    "page_intervals, etag, http_last_modified"
)


def url_prefix(origin: str) -> str:
    """What a URL of ``origin`` starts with, its path aside: a row keeps the rest.

    >>> url_prefix("https://x.example/"), path_of("https://x.example", "https://x.example/a")
    ('https://x.example/', '/a')
    >>> path_of("https://x.example", "https://y.example/a")
    'https://y.example/a'
    """
    return origin.rstrip("/") + "/"


def path_of(origin: str, url: str) -> str:
    """The key of ``url`` in ``origin``'s rows: from the "/" after the origin, or the whole
    URL when it is another site's (a path starts with "/", a URL never does)."""
    prefix = url_prefix(origin)
    return url[len(prefix) - 1 :] if url.startswith(prefix) else url


def url_of(origin: str, path: str) -> str:
    """The URL of a row's ``path`` (``path_of`` undone)."""
    return origin.rstrip("/") + path if path.startswith("/") else path


def _iso(seconds: int | None) -> str | None:
    """Unix seconds as the state's ISO text (``format_utc``)."""
    if seconds is None:
        return None
    return format_utc(dt.datetime.fromtimestamp(seconds, dt.UTC))


def _intervals(text: str | None) -> list[tuple[float, bool]]:
    return [(float(t), bool(c)) for t, c in json.loads(text)] if text else []


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
            "CREATE TEMP TABLE IF NOT EXISTS staged_urls (url TEXT, segment INTEGER, "
            "sitemap INTEGER, lastmod_raw TEXT, now INTEGER, refetch INTEGER)"
        )
        #: ``names`` both ways (origins, segments, sitemaps: a few thousand at most)
        self._ids: dict[str, int] = {}
        self._names: dict[int, str] = {}
        #: (origin, run) of runs that began with no URL row of their origin in the file
        self._fresh: set[tuple[str, int]] = set()

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
        store.load_names()
        return store

    def load_names(self) -> None:
        """Read ``names`` (origins, segments and sitemaps by id) into memory."""
        if self.version < 6:  # an older schema kept for an upgrade test: no names yet
            return
        for name_id, name in self.db.execute("SELECT id, name FROM names"):
            self._ids[name] = name_id
            self._names[name_id] = name

    def name_id(self, name: str, *, create: bool = False) -> int | None:
        """The id of an origin, segment or sitemap (made when ``create``; else None when
        the file has none)."""
        found = self._ids.get(name)
        if found is None and create:
            self.db.execute("INSERT OR IGNORE INTO names (name) VALUES (?)", (name,))
            (found,) = self.db.execute("SELECT id FROM names WHERE name = ?", (name,)).fetchone()
            self._ids[name] = found
            self._names[found] = name
        return found

    def name(self, name_id: int) -> str:
        """The origin, segment or sitemap of an id."""
        return self._names[name_id]

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
        origin_id = self.name_id(origin)
        if origin_id is None or (
            self.db.execute("SELECT 1 FROM urls WHERE origin = ? LIMIT 1", (origin_id,)).fetchone()
            is None
        ):
            # every URL row of this origin will be this run's: unchanged_counts is empty
            self._fresh.add((origin, cursor.lastrowid))
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
        origin_id = self.name_id(origin)
        if origin_id is None:
            return None
        row = self.db.execute(
            f"SELECT {_URL_COLUMNS} FROM urls WHERE origin = ? AND path = ?",  # noqa: S608
            (origin_id, path_of(origin, url)),
        ).fetchone()
        return self._url_state(origin, row) if row is not None else None

    def _url_state(self, origin: str, row: Sequence[Any]) -> UrlState:
        path, segment, sitemap, raw, first, last, changed, refetch, fetched, fp, modified = row[:11]
        return UrlState(
            url_of(origin, path),
            self._names[segment],
            self._names[sitemap],
            raw,
            first,
            last,
            _iso(changed),
            _iso(refetch),
            fetched,
            fp,
            modified,
            _intervals(row[11]),
            row[12],
            _intervals(row[13]),
            row[14],
            row[15],
        )

    def write_urls(
        self, origin: str, run_id: int, rows: Sequence[tuple[str, str, str, str | None, int, bool]]
    ) -> None:
        """Stage the URLs one run saw, each ``(url, segment, sitemap, lastmod_raw, now,
        refetch)``, ``now`` in Unix seconds; ``merge_urls`` writes them into ``urls``, by
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
            # Segments and sitemaps by id: a few distinct names, so the staged rows are
            # shorter and the merge looks nothing up.
            ids = self._ids
            for name in {name for row in rows for name in (row[1], row[2])} - ids.keys():
                self.name_id(name, create=True)
            db.executemany(
                "INSERT INTO temp.staged_urls VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (url, ids[seg], ids[sm], raw, now, refetch)
                    for url, seg, sm, raw, now, refetch in rows
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._ids.clear()
            self._names.clear()
            self.load_names()
            raise
        self.staged += len(rows)
        if self.staged >= MERGE_EVERY:
            self.merge_urls()

    def merge_urls(self) -> None:
        """Write the staged URLs into ``urls``: a lastmod that differs from the stored one
        stamps ``lastmod_changed_at``/``_run``, keeps the stored one as
        ``previous_lastmod_raw`` and counts a change. In key order (a URL staged twice keeps
        its order), all in SQL."""
        if not self.staged or self._staged_for is None:
            return
        origin, run_id = self._staged_for
        prefix = url_prefix(origin)
        db = self.db
        db.execute("BEGIN")
        try:
            origin_id = self.name_id(origin, create=True)
            db.execute(
                "INSERT INTO urls (origin, path, segment, sitemap, lastmod_raw, first_run, "
                "last_run, lastmod_changed_at, lastmod_changed_run, last_refetch_at) "
                "SELECT ?1, CASE WHEN substr(s.url, 1, ?3) = ?4 THEN substr(s.url, ?3) "
                "ELSE s.url END, s.segment, s.sitemap, s.lastmod_raw, ?2, ?2, s.now, "
                "?2, CASE WHEN s.refetch THEN s.now END FROM temp.staged_urls AS s WHERE true "
                "ORDER BY 2, s.rowid "
                "ON CONFLICT (origin, path) DO UPDATE SET segment = excluded.segment, "
                "sitemap = excluded.sitemap, lastmod_raw = excluded.lastmod_raw, "
                "last_run = excluded.last_run, "
                "lastmod_changed_at = CASE WHEN lastmod_raw IS excluded.lastmod_raw "
                "THEN lastmod_changed_at ELSE excluded.lastmod_changed_at END, "
                "lastmod_changed_run = CASE WHEN lastmod_raw IS excluded.lastmod_raw "
                "THEN lastmod_changed_run ELSE excluded.last_run END, "
                "lastmod_changes = lastmod_changes + (lastmod_raw IS NOT excluded.lastmod_raw), "
                "previous_lastmod_raw = CASE WHEN lastmod_raw IS excluded.lastmod_raw "
                "THEN previous_lastmod_raw ELSE lastmod_raw END, "
                "last_refetch_at = coalesce(excluded.last_refetch_at, last_refetch_at)",
                (origin_id, run_id, len(prefix), prefix),
            )
            db.execute("DELETE FROM temp.staged_urls")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._ids.clear()
            self._names.clear()
            self.load_names()
            raise
        self.staged = 0

    def unchanged_counts(self, origin: str, run_id: int) -> dict[str, int]:
        """Per segment, URLs of this run already known before it whose lastmod did not
        change on it (the ΔL = 0 population of the cross-run score)."""
        origin_id = self.name_id(origin)
        if origin_id is None or (origin, run_id) in self._fresh:
            return {}
        return {
            self._names[segment]: count
            for segment, count in self.db.execute(
                "SELECT segment, count(*) FROM urls WHERE origin = ? AND last_run = ? "
                "AND first_run < ? AND (lastmod_changed_run IS NULL OR lastmod_changed_run < ?) "
                "GROUP BY segment",
                (origin_id, run_id, run_id, run_id),
            )
        }

    def run_report(self, run_id: int) -> Any:
        """The site report saved with run ``run_id`` (a list for a crawl over several
        sites), or None."""
        row = self.db.execute("SELECT report FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(row[0]) if row is not None and row[0] else None

    def run_changes(
        self, origin: str, run_id: int, since_run: int, carried: Collection[str] = ()
    ) -> tuple[dict[str, Counter[str]], list[tuple[str, str, str, str | None, str | None]]]:
        """What changed in ``origin``'s list of URLs on run ``run_id`` (its rows merged):
        per segment, URLs ``added`` (first listed on it), ``moved`` (listed before, their
        lastmod changed on it) and ``unchanged`` (listed before, same lastmod); and the rows
        not listed on it that were live before it:
        listed on run ``since_run`` (the previous finished run) or after, or listed earlier
        in a sitemap of ``carried`` (one whose URLs were left unconfirmed since), as (url,
        segment, sitemap, lastmod_raw, last seen: that run's server clock), by path."""
        origin_id = self.name_id(origin)
        if origin_id is None:
            return {}, []
        counts: dict[str, Counter[str]] = {}
        for segment, added, moved, unchanged in self.db.execute(
            "SELECT segment, sum(first_run = ?1), sum(first_run < ?1 AND lastmod_changed_run = ?1),"
            " sum(first_run < ?1 AND coalesce(lastmod_changed_run, 0) < ?1) "
            "FROM urls WHERE origin = ?2 AND last_run = ?1 GROUP BY segment",
            (run_id, origin_id),
        ):
            counts[self._names[segment]] = Counter(
                added=int(added), moved=int(moved), unchanged=int(unchanged)
            )
        carried_ids = [i for i in (self.name_id(name) for name in carried) if i is not None]
        marks = ",".join("?" * len(carried_ids)) or "NULL"
        left = [
            (url_of(origin, path), self._names[segment], self._names[sitemap], raw, seen)
            for path, segment, sitemap, raw, seen in self.db.execute(
                "SELECT u.path, u.segment, u.sitemap, u.lastmod_raw, r.server_now "  # noqa: S608 - marks only
                "FROM urls AS u LEFT JOIN runs AS r ON r.id = u.last_run "
                "WHERE u.origin = ? AND u.last_run < ? "
                f"AND (u.last_run >= ? OR u.sitemap IN ({marks})) ORDER BY u.path",
                (origin_id, run_id, since_run, *carried_ids),
            )
        ]
        return counts, left

    def segment_size(self, origin: str, segment: str) -> int:
        """URLs of the segment the state knows."""
        key = (self.name_id(origin), self.name_id(segment))
        if None in key:
            return 0
        row = self.db.execute(
            "SELECT count(*) FROM urls WHERE origin = ? AND segment = ?", key
        ).fetchone()
        return int(row[0])

    def segment_urls(self, origin: str, segment: str, run_id: int) -> list[str]:
        """The segment's URLs listed on run ``run_id``."""
        key = (self.name_id(origin), self.name_id(segment))
        if None in key:
            return []
        return [
            url_of(origin, path)
            for (path,) in self.db.execute(
                "SELECT path FROM urls WHERE origin = ? AND segment = ? AND last_run = ?",
                (*key, run_id),
            )
        ]

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
