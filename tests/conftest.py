"""Fixtures: loopback servers for the test sites, and the conformance corpus (in tests/data)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.mockserver import MockServer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

# Collected for doctests, tests/testmaster/settings.py would install the recording shims in
# the test process (a recording crawl's settings module, for its own process only).
collect_ignore = ["testmaster/settings.py"]

DATA = Path(__file__).parent / "data"
SITES = DATA / "sites"
# crawler-commons' test resources, with their licence and provenance (README.md there).
CONFORMANCE = DATA / "conformance" / "crawler-commons"


@pytest.fixture(scope="session")
def mockserver() -> Iterator[MockServer]:
    """One server over all of ``tests/data`` (for ``sitemap_urls`` tests and endpoints)."""
    with MockServer(root=DATA) as server:
        yield server


@pytest.fixture(scope="session")
def site() -> Iterator[Callable[[str], MockServer]]:
    """``site("basic")`` serves ``tests/data/sites/basic`` at its own origin (so robots.txt
    is at ``/robots.txt``); one server per site for the whole session."""
    servers: dict[str, MockServer] = {}

    def start(name: str) -> MockServer:
        if name not in servers:
            root = SITES / name
            assert root.is_dir(), root
            servers[name] = MockServer(root=root).__enter__()
        servers[name].reset_requests()
        return servers[name]

    yield start
    for server in servers.values():
        server.__exit__(None, None, None)


@pytest.fixture(scope="session")
def conformance() -> Path:
    """The crawler-commons corpus; its absence is a failure, not a skip."""
    assert (CONFORMANCE / "expected.json").is_file(), (
        f"conformance corpus not found at {CONFORMANCE}"
    )
    return CONFORMANCE


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for servers that cannot bind port 0 themselves)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a loopback port, without persistence. Its absence fails."""
    binary = shutil.which("redis-server")
    assert binary, (
        "redis-server is not installed (.ci/run installs it: apt-get install redis-server)"
    )
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            assert process.poll() is None, "redis-server exited"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
