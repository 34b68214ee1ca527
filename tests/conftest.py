"""Fixtures: loopback servers for the test sites, and the shared conformance corpus."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.mockserver import MockServer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DATA = Path(__file__).parent / "data"
SITES = DATA / "sites"
# CI lays shared/ beside the clone; SITEMAPCRAWL_SHARED points elsewhere if needed.
SHARED = Path(os.environ.get("SITEMAPCRAWL_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CONFORMANCE = SHARED / "conformance" / "crawler-commons"


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
    """The crawler-commons corpus from shared/; its absence is a failure, not a skip."""
    assert (CONFORMANCE / "expected.json").is_file(), (
        f"conformance corpus not found at {CONFORMANCE}; set SITEMAPCRAWL_SHARED"
    )
    return CONFORMANCE
