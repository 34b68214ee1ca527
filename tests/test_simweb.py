"""The simulated web of the lastmod benchmark (bench/simweb): determinism and ground truth."""

from __future__ import annotations

import doctest
import http.client
import json
import re
from typing import TYPE_CHECKING

import numpy as np  # requirements-dev.txt: a missing numpy fails, it is not skipped
import pytest

from bench.simweb import policies, render
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
