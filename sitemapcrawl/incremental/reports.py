"""State across runs, read back: the last site report of every origin, with its URLs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    StateError,
    check_header,
)
from sitemapcrawl.incremental.store import url_prefix
from sitemapcrawl.sitemaps.dates import parse_lastmod

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["StateError", "read_reports"]


def read_reports(path: str | Path) -> list[tuple[dict[str, Any], Iterator[dict[str, Any]]]]:
    """The last site report of every origin in a state file, each with its URLs (as item
    dicts: url, segment, sitemap, lastmod, lastmod_raw, lastmod_flags), read-only: the
    file is never created, upgraded or changed. A crawl over several sites saved one report
    per site: each comes with the URLs of its own segments. Raises :class:`StateError`."""
    path = Path(path)
    if not path.is_file():
        raise StateError(f"{path}: no such file")
    check_header(path)
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
        if version >= 6:  # compact rows: ids in names, the URL without its origin
            prefix = url_prefix(origin)
            rows = db.execute(
                "SELECT CASE WHEN substr(u.path, 1, 1) = '/' THEN ?3 || substr(u.path, 2) "
                "ELSE u.path END, s.name, m.name, u.lastmod_raw FROM urls AS u "
                "JOIN names AS o ON o.id = u.origin JOIN names AS s ON s.id = u.segment "
                "JOIN names AS m ON m.id = u.sitemap "
                "WHERE o.name = ?1 AND u.last_run >= ?2 ORDER BY 1",
                (origin, run_id, prefix),
            )
        else:
            rows = db.execute(
                "SELECT url, segment, sitemap, lastmod_raw FROM urls "
                "WHERE origin = ? AND last_run >= ? ORDER BY url",
                (origin, run_id),
            )
        for url, segment, sitemap, raw in rows:
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
