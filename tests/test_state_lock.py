"""Two crawls and one state file (issue 22, "Concurrency"): a crawl never stalls behind
another. It waits ``SITEMAPCRAWL_STATE_LOCK_TIMEOUT`` at most for another crawl of the same
site (an advisory lock, held here by another process) or for another crawl's write (SQLite's
lock, held here by another connection), then goes on without the file and says so once, in
the log, the stats and the report. Crawls of different sites share the file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.incremental.schema import SiteLock, StateLocked
from sitemapcrawl.incremental.store import StateStore
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from tests.mockserver import MockServer

WAIT = 0.5
SETTINGS = {"SITEMAPCRAWL_STATE_LOCK_TIMEOUT": WAIT}

#: Holds a SiteLock in another process until its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from sitemapcrawl.incremental.schema import SiteLock
lock = SiteLock(Path(sys.argv[1]), sys.argv[2])
lock.acquire(5)
print("held", flush=True)
sys.stdin.read()
"""


def runs(state: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(state) as db:
        return db.execute("SELECT origin, finish_reason FROM runs ORDER BY id").fetchall()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Any]:
    """Start a process holding the site lock of (state file, origin)."""
    procs: list[subprocess.Popen[str]] = []

    def hold(state: Path, origin: str) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(state), origin],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n"

    yield hold
    for proc in procs:
        proc.communicate("", timeout=10)  # closes its pipes; it ends, and so does its lock


def basic(site: Callable[[str], MockServer]) -> dict[str, Any]:
    return {"origin": site("basic").base}


async def first_run(site: Callable[[str], MockServer], state: Path) -> tuple[list[Any], str]:
    items, report, crawler = await crawl_with_report(
        settings=SETTINGS, state=str(state), **basic(site)
    )
    assert report is not None
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    (origin,) = {o for o, _ in runs(state)}
    return items, origin


def locked_out(
    crawler: Any, report: dict[str, Any] | None, caplog: pytest.LogCaptureFixture
) -> str:
    """The crawl went on without the file, and said so once everywhere: the message."""
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") is None
    assert our_stats(crawler)["sitemapcrawl/state/locked_count"] == 1
    warnings = [r.getMessage() for r in caplog.records if "state file not used" in r.getMessage()]
    assert len(warnings) == 1
    assert report is not None
    (fault,) = [f for f in report["faults"] if f["code"] == "state_locked"]
    assert fault["message"] in warnings[0]
    assert report["state"] == {}  # no state file in this run
    return warnings[0]


@deferred_f_from_coro_f
async def test_a_second_crawl_of_the_site_goes_on_without_the_state_file(
    site: Callable[[str], MockServer],
    tmp_path: Path,
    holder: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = tmp_path / "state.sqlite"
    expected, origin = await first_run(site, state)
    holder(state, origin)  # another crawl of the site, in another process
    started = time.monotonic()
    items, report, crawler = await crawl_with_report(
        settings=SETTINGS, state=str(state), since="last", **basic(site)
    )
    message = locked_out(crawler, report, caplog)
    assert f"another crawl of this site is using the state file (waited {WAIT:g} s)" in message
    assert "-a state=PATH" in message
    # every URL, as a first crawl gives them: nothing decided from the file it could not use
    assert sorted(i["url"] for i in items) == sorted(i["url"] for i in expected)
    assert {i["refetch"] for i in items} == {None}
    assert runs(state) == [(origin, "finished")]  # the file is untouched
    assert time.monotonic() - started < 30


@deferred_f_from_coro_f
async def test_a_crawl_does_not_wait_long_for_another_crawls_write(
    site: Callable[[str], MockServer], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state.sqlite"
    _, origin = await first_run(site, state)
    writer = sqlite3.connect(state, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another crawl's long write transaction
    try:
        items, report, crawler = await crawl_with_report(
            settings=SETTINGS, state=str(state), **basic(site)
        )
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    message = locked_out(crawler, report, caplog)
    assert f"another crawl is writing to the state file and held it for more than {WAIT:g} s" in (
        message
    )
    assert items
    assert runs(state) == [(origin, "finished")]


@deferred_f_from_coro_f
async def test_crawls_of_other_sites_share_the_file(
    site: Callable[[str], MockServer], tmp_path: Path, holder: Any
) -> None:
    state = tmp_path / "state.sqlite"
    _, origin = await first_run(site, state)
    holder(state, "https://another.example")  # a crawl of another site holds its own lock
    _, report, crawler = await crawl_with_report(settings=SETTINGS, state=str(state), **basic(site))
    assert report is not None
    assert report["state"]["run"] == 2
    assert "sitemapcrawl/state/locked_count" not in our_stats(crawler)
    assert runs(state) == [(origin, "finished"), (origin, "finished")]


def test_the_site_lock_is_released_when_its_holder_ends(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    StateStore.open(state).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state), "https://a.example"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    with pytest.raises(StateLocked, match=r"waited 0\.2 s"):
        SiteLock(state, "https://a.example").acquire(0.2)
    proc.kill()  # ends without releasing anything: the system releases its lock
    proc.communicate(timeout=10)
    lock = SiteLock(state, "https://a.example")
    lock.acquire(0.2)
    lock.release()
