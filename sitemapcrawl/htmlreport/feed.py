"""Read a crawl's JSON or JSON Lines feed as a stream, and pair each SiteReport with its URLs.

A feed written by ``scrapy crawl sitemap -O urls.jsonl`` (or ``.json``) holds the URL items
and, last, one ``SiteReport`` (one per site when the crawl spanned several sites: each
report is paired with the URLs of its own segments). A feed appended to by several runs
(``-o``) holds several such groups: each report closes the group of URL items before it.
Neither format is loaded whole: JSON Lines is read line by line, a JSON array one element
at a time.

Pure: no Scrapy or Twisted import.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .collect import SiteTally

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

__all__ = [
    "FeedError",
    "Run",
    "collect_runs",
    "is_site_report",
    "iter_feed",
    "read_runs",
    "runs_of",
]

_CHUNK = 1 << 20
_SPACE = re.compile(r"[ \t\r\n]*")  # JSON's whitespace
_SQLITE_MAGIC = b"SQLite format 3\x00"


class FeedError(Exception):
    """The file is missing, not a JSON/JSON Lines feed, or holds no SiteReport."""


@dataclass(slots=True)
class Run:
    """One crawl: its SiteReport (as a dict) and the tally of the URL items before it."""

    report: dict[str, Any]
    tally: SiteTally = field(default_factory=SiteTally)


def is_site_report(record: Any) -> bool:
    """Whether a feed record is a ``SiteReport`` (URL items have ``url``; reports do not).

    >>> is_site_report({"origin": "https://s.example", "segments": [], "site_verdict": {}})
    True
    >>> is_site_report({"url": "https://s.example/", "segment": "/"})
    False
    """
    return (
        isinstance(record, dict)
        and "url" not in record
        and "segments" in record
        and "site_verdict" in record
    )


def iter_feed(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the records of a JSON Lines or JSON array feed, one at a time.

    The format is told by the first character (``[`` or ``{``), not by the file name.
    Raises :class:`FeedError` for a missing file, a SQLite state file, or malformed JSON.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise FeedError(f"{path}: no such file") from None
    except OSError as exc:
        raise FeedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        head = handle.read(len(_SQLITE_MAGIC))
        if head == _SQLITE_MAGIC:
            raise FeedError(
                f"{path}: a SQLite file (a state file?); only JSON and JSON Lines feeds "
                "can be read for now"
            )
        handle.seek(0)
        text = _Text(handle)
        first = text.peek_non_space()
        if first == "[":
            yield from _json_array(text, path)
        elif first == "{":
            yield from _json_lines(handle, path)
        elif first == "":
            raise FeedError(f"{path}: empty file, not a feed")
        else:
            raise FeedError(f"{path}: not a JSON or JSON Lines feed (starts with {first!r})")


class _Text:
    """A UTF-8 text buffer over a binary file, refilled on demand (a BOM is skipped)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.buffer = ""
        self.pos = 0
        self.eof = False
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def fill(self) -> bool:
        """Read another chunk; False at the end of the file."""
        if self.eof:
            return False
        chunk = self.handle.read(_CHUNK)
        self.eof = not chunk
        decoded = self._decoder.decode(chunk, final=self.eof)
        self.buffer = self.buffer[self.pos :] + decoded
        self.pos = 0
        return not self.eof

    def peek_non_space(self) -> str:
        """The next non-whitespace character ('' at the end), without consuming it."""
        while True:
            match = _SPACE.match(self.buffer, self.pos)
            assert match is not None  # \s* always matches
            self.pos = match.end()
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self.fill():
                return ""


def _json_lines(handle: IO[bytes], path: Path) -> Iterator[dict[str, Any]]:
    handle.seek(0)
    for number, raw in enumerate(handle, 1):
        line = raw.strip()
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise FeedError(f"{path}, line {number}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise FeedError(f"{path}, line {number}: not a JSON object")
        yield record


def _json_array(text: _Text, path: Path) -> Iterator[dict[str, Any]]:
    decoder = json.JSONDecoder()
    text.pos += 1  # the "["
    expect_value = True
    index = 0
    while True:
        char = text.peek_non_space()
        if char == "":
            raise FeedError(f"{path}: the JSON array is not closed (truncated feed?)")
        if char == "]":
            return
        if char == "," and not expect_value:
            text.pos += 1
            expect_value = True
            continue
        if not expect_value:
            raise FeedError(f"{path}: element {index}: expected ',' or ']', found {char!r}")
        while True:
            try:
                record, end = decoder.raw_decode(text.buffer, text.pos)
            except ValueError as exc:
                # The element may run past the buffer: read on until it parses or the file ends.
                if text.fill():
                    continue
                raise FeedError(f"{path}: element {index}: not JSON ({exc})") from None
            break
        if not isinstance(record, dict):
            raise FeedError(f"{path}: element {index}: not a JSON object")
        text.pos = end
        index += 1
        expect_value = False
        yield record


def collect_runs(records: Iterable[dict[str, Any]], max_bins: int = 512) -> tuple[list[Run], int]:
    """Group a feed's records into runs: each SiteReport with the URL items before it.

    Returns the runs and the number of URL items after the last report (a crawl that was
    stopped before its report); those are left out.

    >>> runs, left = collect_runs([{"url": "u", "segment": "/", "found_via": "robots"},
    ...                            {"url": "v", "status": "removed", "last_seen": None},
    ...                            {"origin": "o", "segments": [], "site_verdict": {}}])
    >>> len(runs), runs[0].tally.items, left
    (1, 1, 0)
    """
    runs: list[Run] = []
    tally = SiteTally(max_bins=max_bins)
    closing: list[dict[str, Any]] = []  # the reports after the current group of URL items
    for record in records:
        if is_site_report(record):
            closing.append(record)
            continue
        if "found_via" not in record and "last_seen" in record:
            continue  # a change no URL item told (emit=changes: UrlChange), no URL of its own
        if closing:
            runs += runs_of(closing, tally)
            closing, tally = [], SiteTally(max_bins=max_bins)
        tally.add_item(record)
    if closing:
        runs += runs_of(closing, tally)
        tally = SiteTally(max_bins=max_bins)
    return runs, tally.items


def runs_of(reports: list[dict[str, Any]], tally: SiteTally) -> list[Run]:
    """The runs of the reports that close one group of URL items: one report takes the
    whole tally; several (a crawl over several sites, one report per site) each take the
    part of their own segments (:meth:`SiteTally.part`)."""
    if len(reports) == 1:
        return [Run(reports[0], tally)]
    return [Run(report, tally.part(report)) for report in reports]


def read_runs(path: Path, max_bins: int = 512) -> tuple[list[Run], int]:
    """:func:`collect_runs` over the feed at ``path``; a feed without a report is an error.

    A SQLite state file gives the last report of each site it holds, with the URLs of that
    run (read-only)."""
    if _is_sqlite(path):
        return _state_runs(path, max_bins), 0
    try:
        runs, left_over = collect_runs(iter_feed(path), max_bins=max_bins)
    except UnicodeDecodeError as exc:
        raise FeedError(f"{path}: not UTF-8 ({exc.reason})") from None
    if not runs:
        raise FeedError(
            f"{path}: no SiteReport in this feed (is it a CSV feed, or from a crawl that "
            "was stopped before its end?)"
        )
    return runs, left_over


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _state_runs(path: Path, max_bins: int) -> list[Run]:
    from sitemapcrawl.incremental.reports import StateError, read_reports  # noqa: PLC0415

    try:
        reports = read_reports(path)
    except StateError as exc:
        raise FeedError(str(exc)) from None
    if not reports:
        raise FeedError(f"{path}: this state file holds no site report yet")
    runs = []
    for report, items in reports:
        tally = SiteTally(max_bins=max_bins)
        for item in items:
            tally.add_item(item)
        runs.append(Run(report, tally))
    return runs
