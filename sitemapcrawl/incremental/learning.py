"""State across runs, what our fetches learnt of each page (``urls.learned``, schema 10):
its own change share, whether its lastmod moves came with a change, the runs on which it
changed (``verify.refetch.learn``). Kept compactly in the URL's row, so it goes when the
row goes (retention)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapcrawl.incremental.store import path_of, url_of
from sitemapcrawl.verify.refetch.learn import PageRecord

if TYPE_CHECKING:
    from sitemapcrawl.incremental.store import StateStore

__all__ = ["PageLearning"]


class PageLearning:
    """Each page's :class:`PageRecord`, read once per origin and run, updated as pages are
    fetched (the row is written with the fetch, ``FetchStore.record``)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._records: dict[str, dict[str, PageRecord]] = {}

    def _of(self, origin: str) -> dict[str, PageRecord]:
        records = self._records.get(origin)
        if records is None:
            records = self._records[origin] = {}
            origin_id = self.store.name_id(origin)
            if origin_id is not None:
                for path, text in self.store.db.execute(
                    "SELECT path, learned FROM urls WHERE origin = ? AND learned IS NOT NULL",
                    (origin_id,),
                ):
                    records[path] = PageRecord.from_json(text)
        return records

    def record(self, origin: str, url: str) -> PageRecord | None:
        """What our fetches learnt of ``url`` (None: nothing yet)."""
        return self._of(origin).get(path_of(origin, url))

    def observe(
        self, origin: str, url: str, run_id: int, *, changed: bool, moved: bool
    ) -> PageRecord:
        """One more fetch of ``url`` compared with the one before; the record to write."""
        records = self._of(origin)
        path = path_of(origin, url)
        record = records.get(path, PageRecord()).observe(run_id, changed=changed, moved=moved)
        records[path] = record
        return record

    def listed_changed(self, origin: str, run_id: int) -> dict[str, tuple[str, PageRecord]]:
        """The URLs listed on run ``run_id`` that our fetches saw change at least once:
        url -> (segment, its record)."""
        records = self._of(origin)
        origin_id = self.store.name_id(origin)
        if origin_id is None:
            return {}
        out = {}
        for path, segment in self.store.db.execute(
            "SELECT path, segment FROM urls WHERE origin = ? AND last_run = ? "
            "AND learned IS NOT NULL",
            (origin_id, run_id),
        ):
            record = records.get(path)
            if record is not None and record.change_runs:
                out[url_of(origin, path)] = (self.store.name(segment), record)
        return out
