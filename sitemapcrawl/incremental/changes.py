"""State across runs: what changed in a site's list of URLs since its last finished run.

URLs **added** (never listed before: their items' ``status`` is ``new``), **moved** (listed
before, their lastmod changed), **unchanged**, **changed** (our own fetch on this run found
the page's content changed), **removed** (listed by the previous finished run, or carried
unconfirmed since, and not by this one, in a sitemap this run read whole, or in one no
longer listed when discovery read every sitemap it found: a tombstone with the last
lastmod, segment and sitemap, and when the URL was last seen) and **unconfirmed** (not
listed on this run because the sitemap that listed them was not read: it failed, a limit
left it for the next run, or discovery stopped short before it was reached; they are not
removed, the sitemaps are named, and the next runs carry them until one reads their
sitemap whole). The report's ``changes`` section and the ``-a emit=changes`` records
(docs/output.md, "What changed since the last run").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.store import path_of
from sitemapcrawl.sitemaps.dates import parse_lastmod

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable

    from sitemapcrawl.incremental.sitemapfiles import SitemapFiles
    from sitemapcrawl.incremental.store import StateStore

__all__ = ["MAX_EXAMPLES", "ChangeList", "UrlChanges", "run_changes"]

#: Tombstones listed per report (their count is always whole).
MAX_EXAMPLES = 50
#: URLs looked up in one query (SQLite's default limit of host parameters is 32,766).
_LOOKUP_CHUNK = 500

#: A URL row not listed on this run: (url, segment, sitemap, lastmod_raw, last seen).
Left = tuple[str, str, str, str | None, str | None]


@dataclass
class ChangeList:
    """The changes of one run, whole: counts per segment, every removed and unconfirmed
    URL (by path)."""

    since_run: int | None
    by_segment: dict[str, Counter[str]] = field(default_factory=dict)
    removed: list[Left] = field(default_factory=list)
    unconfirmed: list[Left] = field(default_factory=list)


def run_changes(
    store: StateStore,
    origin: str,
    run_id: int,
    previous_run: int | None,
    *,
    files: SitemapFiles,
) -> ChangeList:
    """The changes of ``origin``'s URL list on run ``run_id`` (its URL rows merged);
    ``previous_run``: the site's last finished run before it (None: nothing to compare
    with: every URL is added, none removed); ``files``: what became of the sitemaps on
    this run (read whole, failed, left by a limit)."""
    carried: set[str] = set()
    if previous_run is not None:  # its unconfirmed URLs wait for their sitemap to be read
        previous = store.run_report(previous_run)
        for report in previous if isinstance(previous, list) else [previous]:
            if isinstance(report, dict):
                carried.update((report.get("changes") or {}).get("unconfirmed_sitemaps", {}))
    by_segment, left = store.run_changes(
        origin, run_id, previous_run if previous_run is not None else run_id, carried
    )
    changes = ChangeList(previous_run, by_segment)
    unread = set(files.failed) | {task["url"] for task in files.left}
    whole = files.whole
    for row in left:
        sitemap = row[2]
        if sitemap in files.complete or (whole and sitemap not in unread):
            changes.removed.append(row)
        else:
            changes.unconfirmed.append(row)
    return changes


def _iso(raw: str | None) -> str | None:
    """A lastmod as written, in UTC ISO 8601 as URL items carry it (None if unreadable)."""
    parsed = parse_lastmod(raw) if raw else None
    return parsed.iso if parsed is not None and parsed.value is not None else None


class UrlChanges:
    """One run's changes as the crawl asks for them: each URL item's ``status``, the
    pages our fetches saw change, the report's section and the ``emit=changes`` records.

    ``compute`` works the run's changes out once (its URL rows written first)."""

    def __init__(
        self,
        store: StateStore,
        origin: str,
        files: SitemapFiles,
        compute: Callable[[], ChangeList],
    ) -> None:
        self._store = store
        self._origin = origin
        self._files = files
        self._compute = compute
        #: pages our fetches on this run saw change: URL -> segment
        self.changed: dict[str, str] = {}
        self._list: ChangeList | None = None

    def statuses(self, urls: Iterable[tuple[str, str | None]]) -> list[str]:
        """``new``, ``moved`` or ``unchanged`` for each ``(url, lastmod_raw)`` of this run,
        against the URL table as the runs before left it (this run's rows are staged, not
        merged, while sitemaps are read), in one query per ``_LOOKUP_CHUNK`` URLs."""
        pairs = list(urls)
        known: dict[str, str | None] = {}
        origin_id = self._store.name_id(self._origin)
        paths = [path_of(self._origin, url) for url, _ in pairs]
        if origin_id is not None:
            db = self._store.db
            for start in range(0, len(paths), _LOOKUP_CHUNK):
                chunk = paths[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                known.update(
                    db.execute(
                        "SELECT path, lastmod_raw FROM urls "  # noqa: S608 - marks only
                        f"WHERE origin = ? AND path IN ({marks})",
                        (origin_id, *chunk),
                    ).fetchall()
                )
        return [
            "new" if path not in known else "unchanged" if known[path] == raw else "moved"
            for path, (_, raw) in zip(paths, pairs, strict=True)
        ]

    def saw_change(self, url: str, segment: str) -> None:
        """A page whose content our fetch on this run found changed."""
        self.changed[url] = segment

    @property
    def worked_out(self) -> bool:
        """Whether the run's changes were worked out (the report was built)."""
        return self._list is not None

    @property
    def run(self) -> ChangeList:
        """The run's changes, worked out on first use."""
        if self._list is None:
            self._list = self._compute()
        return self._list

    def summary(self, only: Collection[str] | None = None) -> dict[str, Any]:
        """The report's ``changes``: of the segments in ``only`` when given (a crawl over
        several sites); the sitemaps' outcomes are the crawl's."""
        changes, files = self.run, self._files
        totals: Counter[str] = Counter()
        for segment, counts in changes.by_segment.items():
            if only is None or segment in only:
                totals.update(counts)
        removed = [row for row in changes.removed if only is None or row[1] in only]
        unconfirmed: Counter[str] = Counter(
            row[2] for row in changes.unconfirmed if only is None or row[1] in only
        )
        return {
            "since_run": changes.since_run,
            "added": totals["added"],
            "moved": totals["moved"],
            "unchanged": totals["unchanged"],
            "changed": sum(1 for s in self.changed.values() if only is None or s in only),
            "removed": len(removed),
            "unconfirmed": sum(unconfirmed.values()),
            "removed_urls": [
                {"url": url, "lastmod": raw, "segment": seg, "sitemap": sm, "last_seen": seen}
                for url, seg, sm, raw, seen in removed[:MAX_EXAMPLES]
            ],
            # every one: the next run carries their URLs until it reads the sitemap whole
            "unconfirmed_sitemaps": dict(unconfirmed.most_common()),
            "failed_sitemaps": dict(sorted(files.failed.items())),
            "left_sitemaps": len(files.left),
            "carried_sitemaps": len(files.carried),
        }

    def records(self, now: str | None) -> list[dict[str, Any]]:
        """The ``emit=changes`` records no URL item told: each changed page (``last_seen``:
        ``now``, this run's server clock), then each removed and each unconfirmed URL."""
        out = []
        for url in sorted(self.changed):
            row = self._store.url(self._origin, url)
            lastmod = _iso(row.lastmod_raw) if row is not None else None
            segment = row.segment if row is not None else self.changed[url]
            out.append(_record(url, "changed", lastmod, segment, now))
        changes = self.run
        for status, rows in (("removed", changes.removed), ("unconfirmed", changes.unconfirmed)):
            out += [_record(url, status, _iso(raw), seg, seen) for url, seg, _, raw, seen in rows]
        return out


def _record(
    url: str, status: str, lastmod: str | None, segment: str, last_seen: str | None
) -> dict[str, Any]:
    return {
        "url": url,
        "status": status,
        "lastmod": lastmod,
        "segment": segment,
        "last_seen": last_seen,
    }
