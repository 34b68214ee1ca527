"""The core against crawler-commons' sitemap and robots.txt test files (tests/data/conformance).

Every expectation comes from ``expected.json``: locations in document order, lastmods,
changefreq, priority, every extension field, scope, the robots.txt Sitemap lines and the
XXE canary, which must never leak.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from sitemapcrawl.sitemaps import SitemapReader, SitemapRef, UrlEntry
from sitemapcrawl.sitemaps.robots import parse_robots
from sitemapcrawl.sitemaps.scope import ScopePolicy
from tests.conftest import CONFORMANCE

if TYPE_CHECKING:
    from pathlib import Path

EXPECTED = json.loads((CONFORMANCE / "expected.json").read_text(encoding="utf-8"))
FILES = EXPECTED["files"]
SITEMAPS = [f for f in FILES if f["category"] == "sitemap"]
ROBOTS = [f for f in FILES if f["category"] == "robots"]
CANARY = next(f for f in FILES if f["category"] == "canary")


def normalise(value: Any) -> Any:
    """The corpus compares text after collapsing whitespace; so do we, on both sides."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


def read(case: dict[str, Any], conformance: Path) -> SitemapReader:
    return SitemapReader((conformance / case["path"]).read_bytes(), case["base_url"])


def test_corpus_is_complete() -> None:
    assert len(FILES) == 42
    assert len(SITEMAPS) == 17
    assert len(ROBOTS) == 24


@pytest.mark.parametrize("case", SITEMAPS, ids=lambda c: c["path"])
def test_sitemap(case: dict[str, Any], conformance: Path) -> None:
    reader = read(case, conformance)
    entries = list(reader)
    assert reader.kind == case["kind"]
    assert reader.faults == []
    if case["kind"] == "sitemapindex":
        assert all(type(e) is SitemapRef for e in entries)
        got = [
            {
                "loc": e.loc,
                "lastmod_raw": e.lastmod and e.lastmod.raw,
                "lastmod_utc": e.lastmod and e.lastmod.iso,
            }
            for e in entries
        ]
        want = [{k: s[k] for k in ("loc", "lastmod_raw", "lastmod_utc")} for s in case["sitemaps"]]
        assert got == want
        return
    assert all(type(e) is UrlEntry for e in entries)
    assert [e.loc for e in entries] == [u["loc"] for u in case["urls"]]
    for entry, want in zip(entries, case["urls"], strict=True):
        assert isinstance(entry, UrlEntry)
        got: dict[str, Any] = {
            "loc": entry.loc,
            "lastmod_raw": entry.lastmod.raw if entry.lastmod else None,
            "lastmod_utc": entry.lastmod.iso if entry.lastmod else None,
            "changefreq": entry.changefreq,
            "priority": entry.priority,
        }
        for key in case.get("extensions") or []:
            got[key] = getattr(entry, key)
        expected = {k: want[k] for k in got}
        assert normalise(got) == normalise(expected)


@pytest.mark.parametrize("case", SITEMAPS, ids=lambda c: c["path"])
def test_sitemap_scope(case: dict[str, Any], conformance: Path) -> None:
    """The path policy (sitemaps.org location rule) marks exactly the corpus' out-of-scope URLs."""
    if case["kind"] == "sitemapindex":
        return
    policy = ScopePolicy("path", case["base_url"])
    entries = list(read(case, conformance))
    got = [policy.reason(e.loc, case["base_url"], False) is None for e in entries]
    assert got == [u["in_scope"] for u in case["urls"]]


@pytest.mark.parametrize("case", ROBOTS, ids=lambda c: c["path"])
def test_robots_sitemaps(case: dict[str, Any], conformance: Path) -> None:
    result = parse_robots((conformance / case["path"]).read_bytes(), case["base_url"])
    assert result.sitemaps == case["sitemaps"]
    assert not result.html


@pytest.mark.parametrize("xxe", CANARY["xxe_cases"], ids=lambda c: c["name"])
def test_canary_never_leaks(xxe: dict[str, Any], conformance: Path) -> None:
    canary = (conformance / CANARY["path"]).resolve()
    document = xxe["document"].replace("{CANARY_FILE_URI}", canary.as_uri())
    reader = SitemapReader(document.encode(), xxe["base_url"])
    locs = [e.loc for e in reader]
    assert locs == xxe["expected_urls_if_parsed"]
    for forbidden in CANARY["forbidden_in_output"]:
        assert all(forbidden not in loc for loc in locs)
