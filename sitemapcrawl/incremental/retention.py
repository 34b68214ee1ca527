"""State across runs, kept bounded: what ``scrapy sitemapstate prune`` removes, and the
file's size.

Three rules, each off at 0 (``SITEMAPCRAWL_STATE_RETENTION_DAYS``,
``SITEMAPCRAWL_STATE_KEEP_RUNS``; docs/settings.md):

* a site (an origin) whose last run started more than ``days`` days ago goes whole: its
  runs, URLs, fetches, segments, verdicts and sitemap files;
* of a site's runs, those before its last ``keep_runs`` go (the last finished run stays
  too: the next ``since=last`` run compares with it), with their verdicts and fetches, and
  the URL rows no kept run saw (URLs gone from the site's sitemaps since);
* a stored sitemap body its site's last finished run did not use (the file was not read
  nor replayed on it) goes with the file's validators, so the next run fetches it whole.

Then the file is vacuumed: SQLite keeps freed pages otherwise.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sitemapcrawl.sitemaps.dates import format_utc

if TYPE_CHECKING:
    from sitemapcrawl.incremental.store import StateStore

__all__ = ["Pruned", "prune", "size"]

#: The tables with one row per (origin, something): a site removed whole goes from each.
_BY_ORIGIN = (
    "fetches",
    "segments",
    "verdicts",
    "sitemaps",
    "sitemap_children",
    "sitemap_backlog",
)


@dataclass
class Pruned:
    """What ``prune`` removed (or would remove, on a dry run)."""

    sites: int = 0
    runs: int = 0
    urls: int = 0
    bodies: int = 0
    bytes_before: int = 0
    bytes_after: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def prune(
    store: StateStore,
    *,
    days: float,
    keep_runs: int,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> Pruned:
    """Apply the retention rules to ``store``'s file (0 turns a rule off) and vacuum it;
    ``dry_run`` counts what would go and changes nothing."""
    db = store.db
    now = now or dt.datetime.now(dt.UTC)
    pruned = Pruned(bytes_before=store.path.stat().st_size)
    store.merge_urls()
    db.execute("BEGIN IMMEDIATE")
    try:
        if days > 0:
            cut = format_utc((now - dt.timedelta(days=days)).replace(microsecond=0))
            old = [
                origin
                for (origin,) in db.execute(
                    "SELECT origin FROM runs GROUP BY origin HAVING max(started_at) < ?", (cut,)
                )
            ]
            for origin in old:
                _drop_site(store, origin, pruned)
        if keep_runs > 0:
            origins = [origin for (origin,) in db.execute("SELECT DISTINCT origin FROM runs")]
            for origin in origins:
                _drop_old_runs(store, origin, keep_runs, pruned)
        pruned.bodies += db.execute(
            "UPDATE sitemaps SET body = NULL, content_encoding = NULL, etag = NULL, "
            "last_modified = NULL, body_hash = NULL WHERE body IS NOT NULL AND run_id < "
            "(SELECT max(id) FROM runs WHERE runs.origin = sitemaps.origin "
            "AND finish_reason = 'finished')"
        ).rowcount
        db.execute("ROLLBACK" if dry_run else "COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if not dry_run:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pruned.bytes_after = store.path.stat().st_size
    return pruned


def _drop_site(store: StateStore, origin: str, pruned: Pruned) -> None:
    db = store.db
    pruned.sites += 1
    pruned.runs += db.execute("DELETE FROM runs WHERE origin = ?", (origin,)).rowcount
    origin_id = store.name_id(origin)
    if origin_id is not None:
        pruned.urls += db.execute("DELETE FROM urls WHERE origin = ?", (origin_id,)).rowcount
        db.execute("DELETE FROM page_content WHERE origin = ?", (origin_id,))
    for table in _BY_ORIGIN:
        removed = db.execute(f"DELETE FROM {table} WHERE origin = ?", (origin,)).rowcount  # noqa: S608 - a table name of ours
        if table == "sitemaps":
            pruned.bodies += removed


def _drop_old_runs(store: StateStore, origin: str, keep: int, pruned: Pruned) -> None:
    db = store.db
    kept = [
        run_id
        for (run_id,) in db.execute(
            "SELECT id FROM runs WHERE origin = ? ORDER BY id DESC LIMIT ?", (origin, keep)
        )
    ]
    finished = db.execute(
        "SELECT max(id) FROM runs WHERE origin = ? AND finish_reason = 'finished'", (origin,)
    ).fetchone()[0]
    oldest = min([*kept, *([finished] if finished is not None else [])])
    pruned.runs += db.execute(
        "DELETE FROM runs WHERE origin = ? AND id < ?", (origin, oldest)
    ).rowcount
    for table in ("verdicts", "fetches"):
        db.execute(f"DELETE FROM {table} WHERE origin = ? AND run_id < ?", (origin, oldest))  # noqa: S608 - a table name of ours
    origin_id = store.name_id(origin)
    if origin_id is not None:
        pruned.urls += db.execute(
            "DELETE FROM urls WHERE origin = ? AND last_run < ?", (origin_id, oldest)
        ).rowcount
        db.execute(
            "DELETE FROM page_content AS c WHERE origin = ?1 AND NOT EXISTS "
            "(SELECT 1 FROM urls AS u WHERE u.origin = ?1 AND u.path = c.path)",
            (origin_id,),
        )


def size(store: StateStore) -> dict[str, Any]:
    """The file's size, its URL rows and runs, and bytes per URL row (the whole file, and
    the URL table alone where SQLite can tell)."""
    db = store.db
    store.merge_urls()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    urls = db.execute("SELECT count(*) FROM urls").fetchone()[0]
    runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    sites = db.execute("SELECT count(DISTINCT origin) FROM runs").fetchone()[0]
    file_bytes = store.path.stat().st_size
    out: dict[str, Any] = {
        "path": str(store.path),
        "schema": store.version,
        "bytes": file_bytes,
        "sites": sites,
        "runs": runs,
        "urls": urls,
        "bytes_per_url": round(file_bytes / urls, 1) if urls else None,
    }
    try:
        tables = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    except sqlite3.OperationalError:  # SQLite built without the dbstat table
        return out
    out["url_table_bytes_per_url"] = round(tables.get("urls", 0) / urls, 1) if urls else None
    out["sitemap_bodies_bytes"] = tables.get("sitemaps", 0)
    return out
