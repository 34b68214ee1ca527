"""State across runs, sitemap files: validators, stored bodies, what index lastmods are worth.

Each sitemap file read completely keeps its ``ETag``, ``Last-Modified``, the hash of its
body and the body as downloaded (still compressed): the next run asks for it conditionally
and parses the stored body on a ``304``. An index's ``<lastmod>`` for a child earns trust
when it moved every time the child's content changed; then a child whose lastmod stood
still can be read from its stored body without a request.

Each run also records what became of the sitemaps it did not read whole (``SitemapFiles``:
``failed``, ``left`` by a limit, discovery ``cut`` as a whole): their URLs are
``unconfirmed``, not removed (``sitemapcrawl.incremental.changes``); the sitemaps a limit
left are carried to the next run (the ``sitemap_backlog`` table), which requests them first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import parse_feed_date
from sitemapcrawl.verify.refetch.audits import audit_draw

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

    from scrapy.http import Response

__all__ = ["SitemapFiles", "SitemapState", "SitemapStore"]


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


class SitemapStore:
    """The ``sitemaps`` and ``sitemap_children`` tables of a state file."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def get(self, origin: str, url: str) -> SitemapState | None:
        row = self.db.execute(
            "SELECT url, kind, etag, last_modified, body_hash, index_lastmod, run_id, "
            "lastmod_agree, lastmod_miss FROM sitemaps WHERE origin = ? AND url = ?",
            (origin, url),
        ).fetchone()
        return SitemapState(*row) if row is not None else None

    def save(self, origin: str, run_id: int, state: SitemapState) -> None:
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

    def backlog(self, origin: str) -> list[dict[str, Any]]:
        """The sitemaps the site's last run left unread, in the order they were left."""
        return [
            json.loads(task)
            for (task,) in self.db.execute(
                "SELECT task FROM sitemap_backlog WHERE origin = ? ORDER BY position", (origin,)
            )
        ]

    def save_backlog(self, origin: str, run_id: int, tasks: Sequence[dict[str, Any]]) -> None:
        """Replace the site's backlog with ``tasks`` (each a sitemap task as a dict)."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute("DELETE FROM sitemap_backlog WHERE origin = ?", (origin,))
            db.executemany(
                "INSERT OR IGNORE INTO sitemap_backlog (origin, url, position, run_id, task) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    (origin, task["url"], n, run_id, json.dumps(task, sort_keys=True))
                    for n, task in enumerate(tasks)
                ),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


class SitemapFiles:
    """The sitemap files of one origin as one run reads them."""

    def __init__(self, store: SitemapStore, origin: str, run_id: int, seed: str) -> None:
        self.store = store
        self.origin = origin
        self.run_id = run_id
        self.seed = seed
        #: When each sitemap read on this run was built (Last-Modified, else read time).
        self.as_of: dict[str, dt.datetime] = {}
        #: The sitemaps read whole on this run: a URL they no longer list is removed.
        self.complete: set[str] = set()
        #: Sitemaps requested on this run and not read whole, with why (a fault code).
        self.failed: dict[str, str] = {}
        #: Sitemaps a limit (``max_sitemaps``, the discovery time) left unread, as task
        #: dicts in the order they were left: the next run requests them first.
        self.left: list[dict[str, Any]] = []
        self._left_urls: set[str] = set()
        #: Why discovery as a whole stopped short (robots.txt unreachable, ``max_urls``).
        self.cut: set[str] = set()
        #: The sitemaps carried from the last run (its ``left``), requested first.
        self.carried: list[dict[str, Any]] = store.backlog(origin)

    def failed_file(self, url: str, reason: str) -> None:
        """A sitemap requested on this run that could not be read whole."""
        if url not in self.complete:
            self.failed.setdefault(url, reason)

    def left_file(self, task: dict[str, Any]) -> None:
        """A sitemap a limit left unread (each once)."""
        if task["url"] not in self._left_urls:
            self._left_urls.add(task["url"])
            self.left.append(task)

    @property
    def whole(self) -> bool:
        """Whether discovery read every sitemap it found: nothing failed, nothing was
        left by a limit or cut short, and some sitemap was read whole. Then a sitemap
        not read on this run is one no longer listed: its URLs are removed."""
        return bool(self.complete) and not (self.failed or self.left or self.cut)

    def conditional_headers(self, url: str) -> dict[str, str]:
        """``If-None-Match``/``If-Modified-Since`` for a sitemap read completely before."""
        known = self.store.get(self.origin, url)
        if known is None:
            return {}
        headers = {}
        if known.etag:
            headers["If-None-Match"] = known.etag
        if known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
        return headers

    def read(
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
        if complete:
            self.complete.add(url)
            self.complete.add(response.url)  # a redirect's target names the URLs' sitemap
            self.failed.pop(url, None)
        else:
            self.failed_file(url, "incomplete")
        read_at = _utc(_header(response, b"Date")) or dt.datetime.now(dt.UTC)
        built = _utc(_header(response, b"Last-Modified"))
        self.as_of[url] = min(built, read_at) if built is not None else read_at
        prev = self.store.get(self.origin, url)
        digest = hashlib.blake2b(body, digest_size=16).hexdigest()
        check = None
        if parent is not None and prev is not None and prev.body_hash is not None:
            content_changed = prev.body_hash != digest
            lastmod_moved = prev.index_lastmod != index_lastmod
            parent_state = self.store.get(self.origin, parent)
            if parent_state is not None and content_changed:
                if lastmod_moved:
                    parent_state.lastmod_agree += 1
                    check = "agree"
                else:
                    parent_state.lastmod_miss += 1
                    check = "miss"
                self.store.save(self.origin, parent_state.run_id, parent_state)
        etag = response.headers.get(b"ETag")
        modified = response.headers.get(b"Last-Modified")
        keep = prev if prev is not None else None
        encoding = b", ".join(response.headers.getlist(b"Content-Encoding")).decode("latin-1")
        self.store.save(
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
        if complete and (prev is None or prev.body_hash != digest):
            # (the same bytes as stored, e.g. a 304 replayed: written once is enough)
            self.store.save_body(self.origin, url, body, encoding)
        return check

    def save_children(self, index_url: str, children: list[tuple[str, str | None]]) -> None:
        self.store.save_children(self.origin, index_url, children)

    def known(self, url: str) -> SitemapState | None:
        return self.store.get(self.origin, url)

    def stored_body(self, url: str) -> tuple[bytes, str] | None:
        """The body of ``url`` as last downloaded completely, and its Content-Encoding."""
        return self.store.body(self.origin, url)

    def audit_draw(self, url: str) -> float:
        """This run's reproducible draw for auditing a skippable child sitemap."""
        return audit_draw(self.seed + "\0index", self.run_id, url)

    def trusted(self, index_url: str, minimum: int) -> bool:
        """An index whose ``<lastmod>`` moved every time a child's content changed, at least
        ``minimum`` times and never missed: its unchanged child lastmods may skip fetches."""
        known = self.store.get(self.origin, index_url)
        return known is not None and known.lastmod_miss == 0 and known.lastmod_agree >= minimum


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def _utc(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    parsed = parse_feed_date(text)
    return parsed.value if parsed is not None else None
