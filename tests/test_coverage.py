"""The pure coverage arithmetic (``sitemapcrawl.verify.coverage``): no crawl needed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from sitemapcrawl.verify.coverage import (
    CoverageTally,
    PageRecord,
    UrlSpaceGuard,
    coverage_summary,
    noindex_in,
)

SITE = "https://www.example.com/"


def record(path: str, **kwargs: object) -> PageRecord:
    values: dict = {"depth": 1, "linked": True, "in_sitemap": False, "fetched": True}
    values.update(kwargs)
    return PageRecord(SITE.rstrip("/") + path, **values)


def summary(tally: CoverageTally, records: list[PageRecord], **limits: int) -> dict:
    return coverage_summary(
        tally,
        records,
        mode="full",
        limits=limits,
        broken_links=0,
        max_depth=5,
        max_pages=100,
        pages_fetched=len(records),
    )


def test_counts_by_hand() -> None:
    tally = CoverageTally(SITE)
    for path in ("/", "/a", "/b", "/c", "/gone", "/old"):
        tally.add(SITE.rstrip("/") + path)
    tally.add("http://example.com/x")  # a host and scheme variant
    records = [
        record("/", status=200, in_sitemap=True, depth=0),
        record("/a", status=200, in_sitemap=True),
        record("/new", status=200),
        record("/news/1", status=200),
        record("/gone", status=410, in_sitemap=True, linked=False, via="sample"),
        record("/old", status=301, location=SITE + "a", in_sitemap=True, linked=False),
        record("/b", status=200, in_sitemap=True, linked=False, noindex="header"),
        record("/c", status=200, in_sitemap=True, canonical=SITE + "a"),
        record("/broken", status=404),
    ]
    result = summary(tally, records, max_pages=3, query_variants=0)
    # reached by links with a 2xx: /, /a, /new, /news/1, /c
    assert result["urls"] == {
        "sitemap": 7,
        "links": 5,
        "both": 3,
        "sitemap_only": 4,
        "link_only": 2,
        "both_share": 0.3333,
        "sitemap_only_share": 0.4444,
        "link_only_share": 0.2222,
    }
    assert result["stopped_by"] == ["max_pages"]
    assert result["limits"] == {"max_pages": 3}
    assert result["complete"] is False
    assert "stopped by max_pages" in result["sitemap_only_means"]
    assert result["findings"]["counts"] == {
        "not_found": 1,
        "redirected": 1,
        "noindex": 1,
        "canonical_elsewhere": 1,
    }
    assert result["findings"]["checked"] == 6
    # indexable and reached: /, /a, /new, /news/1 (not /c, canonical elsewhere)
    assert result["completeness"]["indexable_reached"] == 4
    assert result["completeness"]["listed"] == 2
    assert result["completeness"]["estimate"] == 0.5
    assert 0 < result["completeness"]["low"] < 0.5 < result["completeness"]["high"] < 1
    assert result["host_variants"] == {
        "main": "https://www.example.com",
        "others": {"http://example.com": 1},
    }
    assert [s["section"] for s in result["sections"]] == ["/", "/news/"]


def test_nothing_reached_has_no_estimate() -> None:
    result = summary(CoverageTally(SITE), [])
    assert result["completeness"]["estimate"] is None
    assert (result["completeness"]["low"], result["completeness"]["high"]) == (0.0, 1.0)
    assert result["complete"] is True


def test_noindex_directives() -> None:
    assert noindex_in("noindex")
    assert noindex_in("max-snippet:-1, NoIndex")
    assert noindex_in("none")
    assert not noindex_in("index, follow, noarchive")
    assert not noindex_in("")


def test_query_cap_is_per_path_and_plain_paths_always_pass() -> None:
    guard = UrlSpaceGuard(max_query_variants=3)
    assert [guard.admit(f"https://a.example/cal?d={d}") for d in range(5)] == [
        None,
        None,
        None,
        "query_variants",
        "query_variants",
    ]
    assert guard.admit("https://a.example/other?d=1") is None
    assert all(guard.admit(f"https://a.example/p/{n}") is None for n in range(100))
    assert guard.admit("https://a.example/a/b/a/b/a") == "repeated_path"
    assert UrlSpaceGuard(max_query_variants=0).admit("https://a.example/c?d=1") is None


@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(200, 599)), max_size=40))
def test_shares_add_up(rows: list[tuple[bool, bool, int]]) -> None:
    tally = CoverageTally(SITE)
    records = []
    for n, (listed, linked, status) in enumerate(rows):
        url = f"{SITE}p{n}"
        if listed:
            tally.add(url)
        records.append(PageRecord(url, 1, linked, listed, status=status, fetched=True))
    urls = summary(tally, records)["urls"]
    assert urls["both"] + urls["sitemap_only"] == urls["sitemap"]
    assert urls["both"] + urls["link_only"] == urls["links"]
    if urls["sitemap"] + urls["link_only"]:
        total = urls["both_share"] + urls["sitemap_only_share"] + urls["link_only_share"]
        assert abs(total - 1) < 0.001


def test_never_imports_scrapy_or_twisted() -> None:
    code = textwrap.dedent(
        """
        import sys
        import sitemapcrawl.verify.coverage
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("scrapy", "twisted"))
        assert not bad, bad
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], check=True)


@given(
    st.sampled_from(["http://a.example", "HTTPS://B.Example:8080", "https://u@c.example"]),
    st.text(alphabet="ab/?#=.%", max_size=12),
)
def test_the_tally_splits_urls_as_urlsplit_does(origin: str, rest: str) -> None:
    from urllib.parse import urlsplit

    from sitemapcrawl.verify.coverage import _origin_and_section, section_of

    url = origin + rest
    parts = urlsplit(url)
    expected = (f"{parts.scheme}://{parts.netloc.lower()}", section_of(url))
    assert _origin_and_section(url) == expected
