"""State across runs: the pages we fetched (the ``fetches`` table and the URL rows'
columns our fetches fill: fingerprint, page date, validators, the change histories, a
miss waiting for the sitemap to report it)."""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any

from sitemapcrawl.incremental.learning import PageLearning
from sitemapcrawl.incremental.store import path_of, url_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sitemapcrawl.incremental.store import StateStore

#: Fetch intervals kept per URL for its change-rate estimate (the most recent ones).
MAX_INTERVALS = 32

#: A page's content (``PageEvidence.content``) longer than this is not kept: too long to
#: compare word by word anyway (``verify.commonmode.MAX_WORDS``).
MAX_CONTENT_CHARS = 400_000


def _json_list(values: list[Any]) -> str | None:
    """A list of intervals as stored: None for none."""
    return json.dumps(values, separators=(",", ":")) if values else None


class FetchStore:
    """The pages we fetched, in one state file (``CrawlState.fetches``)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        #: what our fetches learnt of each page (its row's ``learned``)
        self.learning = PageLearning(store)

    def runs_since(self, origin: str, url: str, run_id: int) -> int:
        """The runs of ``origin`` since our previous fetch of ``url`` (this one counted: 1
        when it was fetched on the run before); when that fetch's record was pruned, the
        runs kept, a lower bound."""
        count = self.store.db.execute(
            "SELECT count(*) FROM runs WHERE origin = ?1 AND id <= ?3 AND id > coalesce(("
            "SELECT max(run_id) FROM fetches WHERE origin = ?1 AND url = ?2 AND run_id < ?3"
            "), -1)",
            (origin, url, run_id),
        ).fetchone()[0]
        return max(int(count), 1)

    def content(self, origin: str, url: str) -> str | None:
        """What our last fetch of ``url`` read (``PageEvidence.content``), when kept."""
        origin_id = self.store.name_id(origin)
        if origin_id is None:
            return None
        row = self.store.db.execute(
            "SELECT content FROM page_content WHERE origin = ? AND path = ?",
            (origin_id, path_of(origin, url)),
        ).fetchone()
        return zlib.decompress(row[0]).decode("utf-8", "replace") if row is not None else None

    def _keep_content(self, key: tuple[int | None, str], content: str) -> None:
        """Keep a page's content for the next fetch to compare with ("": forget it)."""
        if content and len(content) <= MAX_CONTENT_CHARS:
            self.store.db.execute(
                "INSERT OR REPLACE INTO page_content (origin, path, content) VALUES (?, ?, ?)",
                (*key, zlib.compress(content.encode("utf-8", "replace"))),
            )
        else:
            self.store.db.execute("DELETE FROM page_content WHERE origin = ? AND path = ?", key)

    def record(
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
        learned: str | None = None,
        content: str | None = None,
    ) -> None:
        """One page fetched by us; ``interval`` (seconds since our previous fetch, content
        changed) extends the URL's change history, ``page_intervals`` the one its own dates
        give. ``miss``: the content changed and the
        lastmod did not say so: (the previous fetch's time, whether the miss was counted);
        it waits in the URL's row for a later lastmod that covers it (see
        :meth:`open_misses`). ``learned``: the page's record (``PageLearning.observe``).
        ``content``: what this fetch read, for the next to compare with
        (:meth:`_keep_content`; None: leave the one kept, a ``304``)."""
        db = self.store.db
        db.execute("BEGIN")
        try:
            changed = None if interval is None else int(interval[1])
            db.execute(
                "INSERT INTO fetches (origin, url, run_id, fetched_at, reason, status, "
                "fingerprint, page_modified, changed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (origin, url, run_id, fetched_at, reason, status, fingerprint, page_modified,
                 changed),
            )  # fmt: skip
            key = (self.store.name_id(origin), path_of(origin, url))
            if fingerprint is not None:
                row = db.execute(
                    "SELECT intervals, page_intervals FROM urls WHERE origin = ? AND path = ?", key
                ).fetchone()
                intervals = json.loads(row[0]) if row is not None and row[0] else []
                from_dates = json.loads(row[1]) if row is not None and row[1] else []
                if interval is not None:
                    intervals = [*intervals, [round(interval[0], 1), int(interval[1])]]
                from_dates += [[round(t, 1), int(c)] for t, c in page_intervals]
                db.execute(
                    "UPDATE urls SET fetched_at = ?, fingerprint = ?, page_modified = ?, "
                    "http_last_modified = ?, etag = ?, intervals = ?, page_intervals = ?, "
                    "learned = coalesce(?, learned), fetched_lastmod_raw = lastmod_raw "
                    "WHERE origin = ? AND path = ?",
                    (
                        fetched_at,
                        fingerprint,
                        page_modified,
                        http_last_modified,
                        etag,
                        _json_list(intervals[-MAX_INTERVALS:]),
                        _json_list(from_dates[-MAX_INTERVALS:]),
                        learned,
                        *key,
                    ),
                )
            if content is not None:
                self._keep_content(key, content)
            if miss is not None:
                db.execute(
                    "UPDATE urls SET miss_since = ?, miss_at = ?, miss_run = ?, "
                    "miss_counted = ? WHERE origin = ? AND path = ?",
                    (miss[0], fetched_at, run_id, int(miss[1]), *key),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def open_misses(
        self, origin: str, run_id: int
    ) -> list[tuple[str, str, str | None, str, str, int, bool, bool]]:
        """Misses found before this run and not yet settled: (url, segment, lastmod_raw,
        miss_since, miss_at, miss_run, counted, lastmod moved since the miss)."""
        return [
            (
                url_of(origin, path),
                self.store.name(seg),
                raw,
                since,
                at,
                run,
                bool(counted),
                bool(moved),
            )
            for path, seg, raw, since, at, run, counted, moved in self.store.db.execute(
                "SELECT path, segment, lastmod_raw, miss_since, miss_at, miss_run, "
                "miss_counted, coalesce(lastmod_changed_run > miss_run, 0) FROM urls "
                "WHERE origin = ? AND miss_at IS NOT NULL AND miss_run < ?",
                (self.store.name_id(origin), run_id),
            )
        ]

    def settle_misses(self, origin: str, urls: Iterable[str]) -> None:
        origin_id = self.store.name_id(origin)
        self.store.db.executemany(
            "UPDATE urls SET miss_since = NULL, miss_at = NULL, miss_run = NULL, "
            "miss_counted = NULL WHERE origin = ? AND path = ?",
            [(origin_id, path_of(origin, url)) for url in urls],
        )

    def segment_rate(
        self, origin: str, segment: str, *, page_dates: bool = False
    ) -> tuple[int, float]:
        """Changes observed and observation time (seconds) over the segment's URLs: the
        pooled prior of the per-URL change-rate estimate (``page_dates``: of the one from
        the pages' own dates)."""
        column = "page_intervals" if page_dates else "intervals"
        changes, seconds = 0, 0.0
        for (intervals,) in self.store.db.execute(
            f"SELECT {column} FROM urls WHERE origin = ? AND segment = ? "  # noqa: S608 - one of two column names
            f"AND {column} IS NOT NULL",
            (self.store.name_id(origin), self.store.name_id(segment)),
        ):
            for t, c in json.loads(intervals):
                changes += int(c)
                seconds += float(t)
        return changes, seconds
