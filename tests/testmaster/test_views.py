"""The recorded fixtures: what they cover, their readable views, nothing machine-specific.

The replay tests themselves are the generated ``tests/testmaster/tests/**/test_fixtures.py``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from tests.testmaster.record import FIXTURES, ROOT, SITES, view

if TYPE_CHECKING:
    from pathlib import Path

BINS = sorted(FIXTURES.rglob("fixture*.bin"))


def _views(callback_dir: str) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text()) for p in sorted((FIXTURES / callback_dir).glob("fixture*.json"))
    ]


def test_every_callback_is_recorded() -> None:
    dirs = {str(p.parent.relative_to(FIXTURES / "sitemap")) for p in BINS}
    assert dirs == {
        "basic/_parse_robots",
        "basic/_parse_sitemap",
        "basic/_read_sitemap",
        "basic/site_report",
        "sampled/_parse_robots",
        "sampled/_read_sitemap",
        "sampled/site_report",
    }


def test_the_recorded_sitemaps() -> None:
    """A sitemap index, a text sitemap, a news sitemap, and a sampled page with JSON-LD."""
    read = {v["response"]["url"]: v for v in _views("sitemap/basic/_read_sitemap")}
    index = read["http://127.0.0.1:8791/sitemap_index.xml"]
    assert [r["type"] for r in index["result"]] == ["request"] * len(index["result"])
    parsed = {v["response"]["url"]: v["result"] for v in _views("sitemap/basic/_parse_sitemap")}
    text = parsed["http://127.0.0.1:8791/pages.txt"]
    assert [r["data"]["url"] for r in text] == [
        "http://127.0.0.1:8791/",
        "http://127.0.0.1:8791/about",
    ]
    (news,) = parsed["http://127.0.0.1:8791/sitemaps/news.xml"]
    assert news["data"]["news"][0]["title"] == "Companies A, B in merger talks"
    (report,) = _views("sitemap/sampled/site_report")[0]["result"]
    samples = {s["url"]: s for s in report["data"]["segments"][0]["samples"]}
    agree = samples["http://127.0.0.1:8792/articles/agree.html"]
    assert agree["page_modified"] == {
        "source": "json-ld",
        "field": "dateModified",
        "raw": "2024-05-06T07:08:09+02:00",
        "precision": "second",
    }
    assert agree["outcome"] == "AGREE"


@pytest.mark.parametrize("fixture", BINS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_view_is_the_fixture(fixture: Path) -> None:
    """``fixtureN.json`` shows what ``fixtureN.bin`` holds (record.py writes both)."""
    assert fixture.with_suffix(".json").read_text(encoding="utf-8") == view(fixture)


def test_nothing_machine_specific() -> None:
    """No absolute path of the recording machine, no port but the fixed ones."""
    ports = {str(port) for _, port in SITES.values()}
    for path in FIXTURES.rglob("*"):
        if path.suffix not in (".json", ".py"):
            continue
        text = path.read_text(encoding="utf-8")
        assert str(ROOT) not in text, path
        assert "/tmp/" not in text, path
        assert set(re.findall(r"(?:127\.0\.0\.1|localhost):(\d+)", text)) <= ports, path
