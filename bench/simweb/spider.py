"""Run the real ``sitemap`` spider against a simulated site once per simulated day.

Each run is ``scrapy crawl sitemap`` in a child process (cwd = the repository,
the interpreter that runs the benchmark), with the incremental contract::

    -a origin=<site> -a sample=on -a since=last -a pages=refetch
    -s SITEMAPCRAWL_STATE_PATH=<state> -O <feed.jsonl> -s LOG_FILE=<log>
    -s AUTOTHROTTLE_ENABLED=False -s REMOTE_CONTROL_ENABLED=False -s TELNETCONSOLE_ENABLED=False

The virtual clock is fixed for the whole run (the spider reads "now" from the
``Date`` header). What the spider fetched comes from the server's access log;
its decisions (``refetch``, ``refetch_reason``) and verdicts from the feed.
A spider whose URL items never carry ``refetch`` has no incremental support:
:attr:`RunRecord.incremental` is False and the caller must not score its
fetches as a re-crawl policy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .model import Site
    from .server import SimServer

REPO = Path(__file__).resolve().parents[2]


@dataclass
class RunRecord:
    """One spider run: its outcome, decisions, verdicts and the requests the server saw."""

    day: int
    returncode: int
    wall_s: float
    items: int = 0
    incremental: bool = False
    refetch: dict[int, tuple[bool, str]] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    verdict_reasons: dict[str, str] = field(default_factory=dict)
    report_incremental: dict[str, Any] = field(default_factory=dict)
    page_gets: list[int] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    conditional: int = 0
    not_modified: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    log_errors: int = 0
    #: Exit statuses of earlier attempts killed by a signal from outside (see run.py).
    killed: list[int] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "returncode": self.returncode,
            "wall_s": round(self.wall_s, 2),
            "items": self.items,
            "incremental": self.incremental,
            "refetch_true": sum(1 for r, _ in self.refetch.values() if r),
            "reasons": self.reasons,
            "verdicts": self.verdicts,
            "verdict_reasons": self.verdict_reasons,
            "report_incremental": self.report_incremental,
            "page_gets": len(self.page_gets),
            "fetched_pages": sorted(set(self.page_gets)),
            "statuses": self.statuses,
            "requests": self.requests,
            "conditional": self.conditional,
            "not_modified": self.not_modified,
            "error": self.error,
            "killed": self.killed,
            "log_errors": self.log_errors,
        }


def command(
    origin: str, feed: Path, log: Path, state: Path, extra: Sequence[str] = ()
) -> list[str]:
    """The spider's command line; ``extra`` are more ``name=value`` spider arguments."""
    more = [part for arg in extra for part in ("-a", arg)]
    return [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "sitemap",
        "-a",
        f"origin={origin}",
        "-a",
        "sample=on",
        "-a",
        "since=last",
        "-a",
        "pages=refetch",
        *more,
        "-s",
        f"SITEMAPCRAWL_STATE_PATH={state}",
        "-O",
        str(feed),
        "-s",
        f"LOG_FILE={log}",
        "-s",
        "LOG_LEVEL=INFO",
        "-s",
        "AUTOTHROTTLE_ENABLED=False",
        "-s",
        "REMOTE_CONTROL_ENABLED=False",
        "-s",
        "TELNETCONSOLE_ENABLED=False",
    ]


def run_day(
    site: Site,
    server: SimServer,
    day: int,
    workdir: Path,
    *,
    timeout: float = 600.0,
    repo: Path = REPO,
    extra: Sequence[str] = (),
) -> RunRecord:
    """Set the clock to run ``day`` and crawl the site once with the spider of ``repo``."""
    server.set_clock(site.run_time(day), day)
    run_dir = workdir / f"day-{day:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    feed, log = run_dir / "feed.jsonl", run_dir / "spider.log"
    cmd = command(server.origin, feed, log, workdir / "state.sqlite", extra)
    started = time.monotonic()
    try:
        with (run_dir / "stdout.txt").open("wb") as out:
            proc = subprocess.run(
                cmd, cwd=repo, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
            )
        returncode = proc.returncode
        error = None if returncode == 0 else f"exit status {returncode}"
    except subprocess.TimeoutExpired:
        returncode, error = -1, f"timed out after {timeout:.0f} s"
    record = RunRecord(day, returncode, time.monotonic() - started, error=error)
    _read_feed(site, server, feed, record)
    record.log_errors = _log_errors(log)
    if record.log_errors and record.error is None:
        record.error = f"{record.log_errors} ERROR lines in the spider's log"
    hits = server.hits_of(day)
    record.statuses = dict(Counter(str(h.status) for h in hits))
    record.requests = dict(Counter(h.what for h in hits))
    record.conditional = sum(1 for h in hits if h.conditional)
    record.not_modified = dict(Counter(h.what for h in hits if h.status == 304))
    record.page_gets = [h.page for h in hits if h.what == "page" and h.status in (200, 304)]
    return record


def _log_errors(log: Path) -> int:
    if not log.is_file():
        return 0
    with log.open(encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if "] ERROR: " in line)


def _read_feed(site: Site, server: SimServer, feed: Path, record: RunRecord) -> None:
    if not feed.is_file():
        record.error = record.error or "no feed written"
        return
    report: dict[str, Any] | None = None
    reasons: Counter[str] = Counter()
    with feed.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            item = json.loads(line)
            if "segments" in item and "url" not in item:
                report = item
                continue
            record.items += 1
            page = site.by_path.get(urlsplit(item.get("url", "")).path)
            refetch = item.get("refetch")
            if refetch is None:
                continue
            record.incremental = True
            reason = str(item.get("refetch_reason"))
            reasons[reason] += 1
            if page is not None:
                record.refetch[page.index] = (bool(refetch), reason)
    record.reasons = dict(reasons)
    if report is None:
        record.error = record.error or "no SiteReport in the feed"
        return
    if not report.get("segments"):
        record.error = record.error or "the SiteReport has no segments"
    for segment in report.get("segments", []):
        record.verdicts[segment.get("segment", "?")] = segment.get("verdict")
        record.verdict_reasons[segment.get("segment", "?")] = segment.get("reason")
    record.report_incremental = report.get("incremental") or {}


def fetch_matrix(records: list[RunRecord], n_pages: int) -> np.ndarray:
    """``F[run, page]``: the page got a 200 or a 304 during that run."""
    fetched = np.zeros((len(records), n_pages), dtype=bool)
    for d, record in enumerate(records):
        fetched[d, record.page_gets] = True
    return fetched


def decision_quality(
    records: list[RunRecord], version: np.ndarray, fetched: np.ndarray
) -> dict[str, dict[str, int]]:
    """Per ``refetch_reason`` over runs 1..: how many URLs, how many had changed since the
    spider's last capture (``changed``), how many were fetched (``fetched``)."""
    out: dict[str, dict[str, int]] = {}
    held = np.full(version.shape[1], -2)
    for d, record in enumerate(records):
        if d > 0:
            for page, (refetch, reason) in record.refetch.items():
                row = out.setdefault(
                    f"{reason} ({'refetch' if refetch else 'skip'})",
                    {"urls": 0, "changed": 0, "fetched": 0},
                )
                row["urls"] += 1
                row["changed"] += int(version[d, page] >= 0 and version[d, page] != held[page])
                row["fetched"] += int(fetched[d, page])
        held = np.where(fetched[d] & (version[d] >= 0), version[d], held)
    return out
