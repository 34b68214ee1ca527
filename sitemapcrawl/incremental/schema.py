"""State across runs, the file: its SQLite schema and migrations, and how a file is opened.

The file carries SQLite's ``application_id`` (``SMCP``) and ``user_version`` (the schema
version). A file that is not SQLite, another application's database or a schema from a
newer sitemapcrawl is refused with :class:`StateError`, and never modified. Older schemas
are upgraded in place, in one transaction per step.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from typing import TYPE_CHECKING, BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's own locks only
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "RUN_BUSY_TIMEOUT",
    "SCHEMA_VERSION",
    "SiteLock",
    "StateError",
    "StateLocked",
    "check_header",
    "is_locked",
    "open_database",
    "writer_waited",
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
    # 6: compact URL rows (about 1.4 KB a URL after many runs, 500 B after one): origin,
    # segment and sitemap interned in ``names``; the URL stored without its origin (``path``
    # starts with "/"; a URL of another site is stored whole); times in Unix seconds; the
    # lastmod history bounded to the value before the current one and a count of changes,
    # instead of a row per change; no empty interval lists, no unused item column
    """
    CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    INSERT OR IGNORE INTO names (name)
        SELECT origin FROM urls UNION SELECT segment FROM urls UNION SELECT sitemap FROM urls;
    CREATE TEMP TABLE history6 (
        origin TEXT NOT NULL, url TEXT NOT NULL, changes INTEGER, previous TEXT,
        PRIMARY KEY (origin, url)
    ) WITHOUT ROWID;
    INSERT INTO temp.history6
        SELECT origin, url, changes, previous FROM (
            SELECT origin, url, count(*) OVER (PARTITION BY origin, url) AS changes,
                lag(lastmod_raw) OVER (PARTITION BY origin, url ORDER BY run_id, rowid)
                    AS previous,
                row_number() OVER (PARTITION BY origin, url ORDER BY run_id DESC, rowid DESC)
                    AS latest
            FROM lastmod_history
        ) WHERE latest = 1;
    CREATE TABLE urls6 (
        origin INTEGER NOT NULL,
        path TEXT NOT NULL,
        segment INTEGER NOT NULL,
        sitemap INTEGER NOT NULL,
        lastmod_raw TEXT,
        first_run INTEGER NOT NULL,
        last_run INTEGER NOT NULL,
        lastmod_changed_at INTEGER,
        lastmod_changed_run INTEGER,
        lastmod_changes INTEGER NOT NULL DEFAULT 1,
        previous_lastmod_raw TEXT,
        last_refetch_at INTEGER,
        fetched_at TEXT,
        fingerprint TEXT,
        page_modified TEXT,
        http_last_modified TEXT,
        etag TEXT,
        intervals TEXT,
        page_intervals TEXT,
        fetched_lastmod_raw TEXT,
        miss_since TEXT,
        miss_at TEXT,
        miss_run INTEGER,
        miss_counted INTEGER,
        PRIMARY KEY (origin, path)
    ) WITHOUT ROWID;
    INSERT INTO urls6
        SELECT o.id,
            CASE WHEN substr(u.url, 1, length(rtrim(u.origin, '/')) + 1)
                    = rtrim(u.origin, '/') || '/'
                THEN substr(u.url, length(rtrim(u.origin, '/')) + 1) ELSE u.url END,
            s.id, m.id, u.lastmod_raw, u.first_run, u.last_run,
            CAST(strftime('%s', u.lastmod_changed_at) AS INTEGER), u.lastmod_changed_run,
            coalesce(h.changes, 1), h.previous,
            CAST(strftime('%s', u.last_refetch_at) AS INTEGER),
            u.fetched_at, u.fingerprint, u.page_modified, u.http_last_modified, u.etag,
            nullif(u.intervals, '[]'), nullif(u.page_intervals, '[]'), u.fetched_lastmod_raw,
            u.miss_since, u.miss_at, u.miss_run, u.miss_counted
        FROM urls AS u
        JOIN names AS o ON o.name = u.origin
        JOIN names AS s ON s.name = u.segment
        JOIN names AS m ON m.name = u.sitemap
        LEFT JOIN temp.history6 AS h ON h.origin = u.origin AND h.url = u.url
        WHERE true ORDER BY 1, 2;
    DROP TABLE temp.history6;
    DROP TABLE urls;
    DROP TABLE lastmod_history;
    ALTER TABLE urls6 RENAME TO urls;
    """,
    # 7: the content fingerprint also hashes the main content's link targets: a fingerprint
    # of the old kind would differ from the next fetch's on every page with a link, a
    # change that is none. The next fetch of each page starts its comparisons afresh.
    """
    UPDATE urls SET fingerprint = NULL WHERE fingerprint IS NOT NULL;
    """,
    # 8: pages are read as a browser reads them (an HTML5 tree builder before lxml): a page
    # with a tag soup libxml2 repaired otherwise fingerprints anew, which is no change of its
    # content. The next fetch of each page starts its comparisons afresh.
    """
    UPDATE urls SET fingerprint = NULL WHERE fingerprint IS NOT NULL;
    """,
    # 9: the sitemaps a limit (max_sitemaps, the discovery time) left unread, carried to the
    # site's next run, which requests them first (each as its sitemap task, in JSON)
    """
    CREATE TABLE sitemap_backlog (
        origin TEXT NOT NULL,
        url TEXT NOT NULL,
        position INTEGER NOT NULL,
        run_id INTEGER NOT NULL,
        task TEXT NOT NULL,
        PRIMARY KEY (origin, url)
    ) WITHOUT ROWID;
    """,
    # 10: what our fetches learnt of each page (``incremental.learning``, in JSON): its own
    # change share, whether its lastmod moves came with a change, the runs it changed on
    """
    ALTER TABLE urls ADD COLUMN learned TEXT;
    """,
    # 11: what our last fetch of each page read (its masked main text and link targets,
    # zlib-compressed): the next fetch says *what* changed, and an edit made the same way
    # on many pages of one run is the template's (``verify.commonmode``). The fingerprint
    # now keeps highlighted code's comments (a class ``comment`` inside ``pre``/``code``):
    # the next fetch of each page starts its comparisons afresh.
    """
    UPDATE urls SET fingerprint = NULL WHERE fingerprint IS NOT NULL;
    CREATE TABLE page_content (
        origin INTEGER NOT NULL,
        path TEXT NOT NULL,
        content BLOB NOT NULL,
        PRIMARY KEY (origin, path)
    ) WITHOUT ROWID;
    """,
    # 12: the fingerprint reads link fragments (a link retargeted to another section is a
    # change), keeps paths made of words and numbers (only random-looking ids are masked)
    # and leaves out the previous / next pager: a fingerprint or a stored content of the
    # old kind would differ from the next fetch's where nothing changed. The next fetch of
    # each page starts its comparisons afresh.
    """
    UPDATE urls SET fingerprint = NULL WHERE fingerprint IS NOT NULL;
    DELETE FROM page_content;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


#: Once a run holds the file, how long one of its writes waits for another crawl's write
#: (each is a short transaction; the longest, the end of a large run's URL merge).
RUN_BUSY_TIMEOUT = 60.0


class StateError(Exception):
    """The state file cannot be used (not SQLite, foreign, from a newer version, locked)."""


class StateLocked(StateError):
    """Another crawl holds the state file past the wait: a crawl can go on without it."""


def open_database(
    path: Path, upto: int = SCHEMA_VERSION, *, wait: float = RUN_BUSY_TIMEOUT
) -> tuple[sqlite3.Connection, int, int | None]:
    """Open ``path`` (creating it and its directory when missing), checked, tuned and
    upgraded to schema ``upto``: the connection, its schema version, and the version it
    was upgraded from (None when it was not). ``wait``: how long to wait for another
    connection's write lock (the connection's busy timeout, until it is changed).
    Raises :class:`StateError`, :class:`StateLocked` when the wait ran out."""
    existed = path.exists() and path.stat().st_size > 0
    if existed:
        check_header(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        db = sqlite3.connect(path, timeout=wait, isolation_level=None)
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot open the state file ({exc})") from exc
    try:
        if existed:
            _check_database(db, path)
        version, upgraded_from = _migrate(db, path, existed, upto)
    except sqlite3.OperationalError as exc:
        db.close()
        if is_locked(exc):
            raise writer_waited(path, wait) from exc
        raise StateError(f"{path}: the state file is damaged or not SQLite ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StateError(f"{path}: the state file is damaged or not SQLite ({exc})") from exc
    except StateError:
        db.close()
        raise
    return db, version, upgraded_from


def writer_waited(path: Path, wait: float) -> StateLocked:
    """The error for another connection's write lock held past ``wait`` seconds."""
    return StateLocked(
        f"{path}: another crawl is writing to the state file and held it for more than {wait:g} s"
    )


def is_locked(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite giving up on another connection's lock."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    )


class SiteLock:
    """One crawl of a site at a time on one state file: an advisory lock (POSIX record
    lock, released by the system when the process ends, whatever way it ends) on one byte
    of ``<state file>.lock`` chosen by the site. Crawls of different sites share the file;
    a second crawl of the same site waits ``wait`` seconds, then :meth:`acquire` raises
    :class:`StateLocked`. (Locks are per process: two crawls of one process are not told
    apart. Without ``fcntl``, on Windows, nothing is locked.)"""

    def __init__(self, path: Path, origin: str) -> None:
        self.path = path.with_name(path.name + ".lock")
        digest = hashlib.blake2b(origin.encode(), digest_size=4).digest()
        self._offset = int.from_bytes(digest, "big") & 0x7FFFFFFF
        self._file: BinaryIO | None = None

    def acquire(self, wait: float) -> None:
        if fcntl is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("ab")
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, self._offset)
            except OSError:
                if time.monotonic() >= deadline:
                    handle.close()
                    raise StateLocked(
                        f"{self.path.with_suffix('')}: another crawl of this site is using "
                        f"the state file (waited {wait:g} s)"
                    ) from None
                time.sleep(min(0.1, wait))
                continue
            self._file = handle
            return

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the file releases its locks
            self._file = None


def _check_database(db: sqlite3.Connection, path: Path) -> None:
    """Refuse another application's database, or a damaged file."""
    app = db.execute("PRAGMA application_id").fetchone()[0]
    if app != APPLICATION_ID:
        raise StateError(
            f"{path}: not a sitemapcrawl state file (another application's "
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
            f"{path}: the state file is damaged (SQLite's quick_check: "
            f"{'; '.join(found[:3])}); refusing to touch it: move it away to start "
            "afresh, or restore a copy"
        )


def _migrate(
    db: sqlite3.Connection, path: Path, existed: bool, upto: int
) -> tuple[int, int | None]:
    """Tune the connection and upgrade the schema to ``upto``, one transaction a step."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StateError(
            f"{path}: written by a newer sitemapcrawl (schema {version}, this one "
            f"knows up to {SCHEMA_VERSION}); refusing to touch it"
        )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    # URL rows are merged in key order (see StateStore.write_urls), so the merge needs few
    # pages at a time; checkpoints every 20,000 pages keep pages from being copied again
    # and again. An 8 MiB page cache keeps the upper levels of a large URL table for
    # incremental runs' lookups (docs/benchmarks.md, "The state file's cost").
    db.execute("PRAGMA cache_size=-8192")
    db.execute("PRAGMA wal_autocheckpoint=20000")
    db.execute("PRAGMA foreign_keys=OFF")
    upgraded_from = version if existed and version < upto else None
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
    return (upto if version < upto else version), upgraded_from


_SQLITE_MAGIC = b"SQLite format 3\x00"


def check_header(path: Path) -> None:
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
