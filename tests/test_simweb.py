"""The simulated web of the lastmod benchmark (bench/simweb): determinism and ground truth."""

from __future__ import annotations

import doctest
import http.client
import json
import re
from typing import TYPE_CHECKING

import numpy as np  # requirements-dev.txt: a missing numpy fails, it is not skipped
import pytest

from bench.simweb import metrics, policies, render, run
from bench.simweb.model import (
    ARCHETYPES,
    DAY,
    HOUR,
    T0,
    Site,
    day_string,
    http_date,
    iso,
    run_time,
)
from bench.simweb.server import SimServer

if TYPE_CHECKING:
    from bench.simweb.model import Page

ORIGIN = "http://127.0.0.1:1"


def _changing_page(site: Site) -> Page:
    """The first page of the first segment that has an edit live within the first 10 days."""
    for page in site.segment_pages[0]:
        live = page.live[(page.live > T0 + DAY) & (page.live < T0 + 10 * DAY)]
        if len(live) and page.published < T0:
            return page
    raise AssertionError("no page changes in the first 10 days")


def _jsonld_dates(html: bytes) -> list[tuple[str, str]]:
    found = []
    for block in re.findall(rb'<script type="application/ld\+json">(.*?)</script>', html):
        data = json.loads(block)
        nodes = data.get("@graph", [data])
        for node in nodes:
            found.extend(
                (key, node[key]) for key in ("dateModified", "datePublished") if key in node
            )
            main = node.get("mainEntity")
            if isinstance(main, dict) and "dateModified" in main:
                found.append(("dateModified", main["dateModified"]))
    return found


@pytest.mark.parametrize("name", sorted(ARCHETYPES))
def test_same_seed_same_event_logs(name: str) -> None:
    a, b = Site(name, seed=7, n_pages=40), Site(name, seed=7, n_pages=40)
    assert [p.path for p in a.pages] == [p.path for p in b.pages]
    assert [a.events(p) for p in a.pages] == [b.events(p) for p in b.pages]
    t = run_time(3)
    assert render.sitemap(a, 0, ORIGIN, t) == render.sitemap(b, 0, ORIGIN, t)
    assert render.render_page(a, a.pages[1], ORIGIN, t) == render.render_page(
        b, b.pages[1], ORIGIN, t
    )


def test_another_seed_another_site() -> None:
    a, b = Site("honest-ts", seed=1, n_pages=40), Site("honest-ts", seed=2, n_pages=40)
    assert [a.events(p) for p in a.pages] != [b.events(p) for p in b.pages]


def test_version_counts_significant_events() -> None:
    site = Site("honest-ts", seed=3, n_pages=60)
    page = _changing_page(site)
    t_edit = float(page.live[np.searchsorted(page.live, T0 + DAY)])
    before, after = site.version(page, t_edit - 1), site.version(page, t_edit)
    assert after == before + 1
    significant = [e for e in site.events(page, until=t_edit) if e[2]]
    assert after == len(significant) - 1  # the publication is version 0
    assert site.version(page, page.published - 1) == -1
    # Comments and template changes are logged but never change the version.
    kinds = {kind for _, kind, sig in site.events(page) if not sig}
    assert "template" in kinds


def test_static_site_changes_only_at_deploys() -> None:
    site = Site("ssg-deploy", seed=1, n_pages=60)
    deploys = set(site.deploys.tolist())
    for page in site.pages:
        assert set(page.live[np.isfinite(page.live)].tolist()) <= deploys
        assert page.published in deploys or page.published > site.deploys[-1]


def test_honest_page_renders_its_true_dates() -> None:
    site = Site("honest-ts", seed=3, n_pages=60)
    page = _changing_page(site)
    t_edit = float(page.live[np.searchsorted(page.live, T0 + DAY)])
    html = render.render_page(site, page, ORIGIN, t_edit + HOUR)
    modified = iso(t_edit)
    assert ("dateModified", modified) in _jsonld_dates(html)
    assert f'<meta property="article:modified_time" content="{modified}">'.encode() in html
    raw = {p.path: r for p, r in render.sitemap_entries(site, 0, t_edit + HOUR)}
    assert raw[page.path] == modified


def test_lastmod_and_page_dates_per_archetype() -> None:
    t = run_time(5)
    gen = Site("gen-per-request", seed=1, n_pages=40)
    assert {r for _, r in render.sitemap_entries(gen, 0, t)} == {iso(t)}
    daily = Site("gen-daily-date", seed=1, n_pages=40)
    assert {r for _, r in render.sitemap_entries(daily, 0, t)} == {day_string(t)}

    shifted = Site("tz-shift", seed=1, n_pages=40)
    for page, raw in render.sitemap_entries(shifted, 0, t):
        assert raw == iso(shifted.true_modified(page, t) + 5 * HOUR, z=True)

    local = Site("honest-date", seed=1, n_pages=40)
    page, raw = render.sitemap_entries(local, 0, t)[0]
    assert raw == iso(local.true_modified(page, t), 2)[:10]
    html = render.render_page(local, page, ORIGIN, t)
    assert ("dateModified", iso(local.true_modified(page, t), 2)) in _jsonld_dates(html)

    stale = Site("stale-consistent", seed=1, n_pages=60)
    for page, raw in render.sitemap_entries(stale, 0, t)[:20]:
        html = render.render_page(stale, page, ORIGIN, t)
        assert raw == iso(stale.stale_modified(page, t))
        assert ("dateModified", raw) in _jsonld_dates(html)

    dynamic = Site("dynamic-datemodified", seed=1, n_pages=40)
    page = dynamic.segment_pages[0][0]
    assert ("dateModified", iso(t)) in _jsonld_dates(render.render_page(dynamic, page, ORIGIN, t))
    assert dynamic.http_last_modified(page, t) == t

    pub = Site("stale-pubdate", seed=1, n_pages=40)
    assert all(raw == iso(page.published) for page, raw in render.sitemap_entries(pub, 0, t))
    absent = Site("absent", seed=1, n_pages=40)
    assert all(raw is None for _, raw in render.sitemap_entries(absent, 0, t))
    partial = Site("partial", seed=1, n_pages=200)
    dated = [raw for _, raw in render.sitemap_entries(partial, 0, t) if raw is not None]
    assert 0.2 < len(dated) / len(partial.pages) < 0.4


def test_lagged_sitemap_serves_the_last_rebuild() -> None:
    site = Site("honest-lagged", seed=1, n_pages=60)
    t = run_time(4)
    built = site.sitemap_time(t)
    assert t - 24 * HOUR <= built <= t
    for page, raw in render.sitemap_entries(site, 0, t):
        assert raw == iso(site.true_modified(page, built))


def _get(port: int, path: str, headers: dict[str, str] | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_server_conditional_requests_and_virtual_clock() -> None:
    site = Site("honest-ts", seed=3, n_pages=60)
    page = _changing_page(site)
    t_edit = float(page.live[np.searchsorted(page.live, T0 + DAY)])
    with SimServer(site) as server:
        server.set_clock(t_edit - HOUR, run=0)
        status, headers, body = _get(server.port, page.path)
        assert status == 200
        assert headers["Date"] == http_date(t_edit - HOUR)
        assert headers["Last-Modified"] == http_date(site.true_modified(page, t_edit - HOUR))
        tag = headers["ETag"]
        status, headers, body = _get(server.port, page.path, {"If-None-Match": tag})
        assert (status, body) == (304, b"")
        assert headers["ETag"] == tag
        server.set_clock(t_edit + HOUR, run=1)
        status, headers, _ = _get(server.port, page.path, {"If-None-Match": tag})
        assert status == 200
        assert headers["ETag"] != tag
        status, _, robots = _get(server.port, "/robots.txt")
        assert status == 200
        assert f"Sitemap: {server.origin}/sitemap_index.xml".encode() in robots
        assert _get(server.port, "/nope/")[0] == 404
        hits = server.hits_of(0)
    assert [(h.what, h.status, h.page, h.conditional) for h in hits] == [
        ("page", 200, page.index, False),
        ("page", 304, page.index, True),
    ]
    assert {h.version for h in hits} == {site.version(page, t_edit) - 1}


def test_noisy_pages_differ_on_every_request() -> None:
    site = Site("noisy-honest", seed=1, n_pages=40)
    page, t = site.pages[0], run_time(0)
    first = render.render_page(site, page, ORIGIN, t, request_no=1)
    second = render.render_page(site, page, ORIGIN, t, request_no=2)
    assert first != second
    assert b'name="csrf_token"' in first


def test_oracle_fetches_exactly_the_changed_pages() -> None:
    site = Site("honest-ts", seed=5, n_pages=120)
    tl = site.timeline([run_time(d) for d in range(12)])
    fetched = policies.oracle(tl)
    assert fetched[0].sum() == (tl.version[0] >= 0).sum()
    for d in range(1, 12):
        changed = (tl.version[d] >= 0) & (tl.version[d] != tl.version[d - 1])
        assert fetched[d].sum() == changed.sum()
        assert (fetched[d] == changed).all()


def test_refetch_all_and_naive_trust_on_generation_time() -> None:
    site = Site("gen-per-request", seed=1, n_pages=60)
    tl = site.timeline([run_time(d) for d in range(4)])
    assert (policies.naive_trust(tl) == tl.listed).all()
    assert (policies.refetch_all(tl) == tl.listed).all()


def test_policy_doctests() -> None:
    assert doctest.testmod(policies).failed == 0


# -- cost by the verdict in use (hand-built: 2 segments, 4 pages, 3 runs) ---------------------

_SEGMENTS = np.array([0, 0, 1, 1])
_NAMES = ["/a.xml", "/b.xml"]
# Page 0 changes at runs 2 and 3, page 2 at run 3; page 3 is published at run 2.
_VERSION = np.array([[0, 0, 0, -1], [1, 0, 0, 0], [2, 0, 1, 0]])
_ORACLE = np.array(
    [[True, True, True, False], [True, False, False, True], [True, False, True, False]]
)
# Run 2 fetches page 0 twice and page 1 unmarked; run 3 misses page 2's change.
_GETS = [[0, 1, 2], [0, 0, 1, 3], [0, 1]]
_MARKED = [
    {0: (True, "new"), 1: (True, "new"), 2: (True, "new")},
    {0: (True, "lastmod_changed"), 1: (False, "lastmod_unchanged"), 3: (True, "new")},
    {0: (True, "lastmod_changed"), 1: (True, "audit"), 2: (False, "poisson_wait")},
]
# /b.xml's run 2 gave no report: its standing verdict stays.
_REPORTED = {
    "/a.xml": ["PROVISIONAL", "TRUSTED", "TRUSTED"],
    "/b.xml": ["GENERATION_TIME", None, "GENERATION_TIME"],
}


def _attributed() -> list[dict[str, object]]:
    return metrics.attribute_by_verdict(
        _SEGMENTS,
        _NAMES,
        version=_VERSION,
        oracle=_ORACLE,
        gets=_GETS,
        marked=_MARKED,
        reported=_REPORTED,
    )


def test_attribute_by_verdict_uses_the_previous_runs_verdict() -> None:
    rows = _attributed()
    got = [
        (r["run"], r["segment"], r["verdict_in_use"], r["class"], r["gets"], r["purposes"])
        for r in rows
    ]
    assert got == [
        (0, "/a.xml", None, None, 2, {"new": 2}),
        (0, "/b.xml", None, None, 1, {"new": 1}),
        (
            1,
            "/a.xml",
            "PROVISIONAL",
            "PROVISIONAL",
            3,
            {"lastmod_changed": 1, "repeat": 1, "sample/panel": 1},
        ),
        (1, "/b.xml", "GENERATION_TIME", "untrusted", 1, {"new": 1}),
        (2, "/a.xml", "TRUSTED", "TRUSTED", 2, {"audit": 1, "lastmod_changed": 1}),
        (2, "/b.xml", "GENERATION_TIME", "untrusted", 0, {}),
    ]
    assert [(r["oracle"], r["pages"], r["stale"]) for r in rows] == [
        (2, 2, 0),
        (1, 1, 0),
        (1, 2, 0),
        (1, 2, 0),
        (1, 2, 0),
        (1, 2, 1),  # page 2 changed at run 3 and was not fetched
    ]


def test_cost_by_class_sums_runs_after_the_first() -> None:
    cost = metrics.cost_by_class(_attributed())
    assert list(cost) == ["TRUSTED", "PROVISIONAL", "untrusted"]
    assert cost["TRUSTED"] == {
        "segment_runs": 1,
        "gets": 2,
        "oracle": 1,
        "pages": 2,
        "stale": 0,
        "purposes": {"audit": 1, "lastmod_changed": 1},
        "x_oracle": 2.0,
        "stale_page_runs": 0.0,
    }
    assert (cost["PROVISIONAL"]["gets"], cost["PROVISIONAL"]["x_oracle"]) == (3, 3.0)
    untrusted = cost["untrusted"]
    assert (untrusted["segment_runs"], untrusted["gets"], untrusted["oracle"]) == (2, 1, 2)
    assert (untrusted["x_oracle"], untrusted["stale_page_runs"]) == (0.5, 0.25)


def test_verdict_classes() -> None:
    assert metrics.verdicts_in_use([None, "TRUSTED", None, "STALE"]) == [
        None,
        None,
        "TRUSTED",
        "TRUSTED",
    ]
    assert [metrics.verdict_class(v) for v in ("OVER_REPORTING", "PARTIAL", "ABSENT")] == [
        "PROVISIONAL",
        "untrusted",
        "untrusted",
    ]
    assert doctest.testmod(metrics).failed == 0


def test_targets_use_the_trusted_segment_runs() -> None:
    result = {
        "archetype": "honest-ts",
        "pages": 4,
        "segments": [
            {"segment": "/a.xml", "truth": "TRUSTED"},
            {"segment": "/b.xml", "truth": "TRUSTED"},
        ],
        "policies": {"spider": {"efficiency": 1.75, "stale_page_runs": 0.0}},
        "by_verdict": _attributed(),
    }
    rows = [line for line in run.targets([result], {}) if line.startswith("| honest-ts")]
    assert rows == [
        "| honest-ts: <= 1.2 x oracle, <= 0.5 % stale page-runs | TRUSTED runs 2.00 x oracle, "
        "0.00 % (1 of 4 segment-runs); all runs 1.50 x oracle, 12.50 % "
        "(pages fetched: 1.75 x oracle, 0.00 %) |",
        "| honest-ts `/a.xml`: <= 1.2 x oracle, <= 0.5 % stale | TRUSTED runs 2.00 x oracle, "
        "0.00 % (1 of 2 segment-runs); all runs 2.50 x oracle, 0.00 % |",
        "| honest-ts `/b.xml`: <= 1.2 x oracle, <= 0.5 % stale | TRUSTED runs n/a "
        "(never TRUSTED); all runs 0.50 x oracle, 25.00 % |",
    ]
    table = run.cost_by_verdict([result])
    assert "| **all** | TRUSTED | 1 | 2 | 1 | 2.00 | 0.00 % | audit 1, lastmod_changed 1 |" in table


def test_pages_per_archetype_and_sweeps() -> None:
    args = run.parse_args(
        ["--archetypes", "honest-ts,absent", "--pages", "300,3000", "--pages-for", "absent=50"]
    )
    assert args.tasks == [("honest-ts", 300), ("honest-ts", 3000), ("absent", 50)]
    assert args.sizes == [50, 300, 3000]
    with pytest.raises(SystemExit):
        run.parse_args(["--archetypes", "honest-ts", "--pages-for", "absent=50"])
