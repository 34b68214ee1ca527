"""Pooling (docs/verification.md, "Pooling across segments"): a slow segment of a site whose
other segments have shown lastmod moves with content is trusted on the site's pooled score,
once its own audit has seen enough pages without a miss; never when it has a miss of its
own."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.verify.crossrun import POOL_OWN_AUDITS, CrossRun, combine
from tests.mockserver import MockServer
from tests.test_state import (
    PAGES_SEG,
    POSTS_SEG,
    Site,
    _page,
    _urlset,
    _write,
    iso,
    run,
    verdicts,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

AGREE = "30 of 30 agree."


def slow() -> CrossRun:
    """A segment whose pages change rarely: 4 changes seen, 30 audited pages, no miss,
    300 URL-runs whose lastmod stood still: its own recall bound is far below 0.8."""
    return CrossRun(tp=4, fp=0, fn=0, tn=30, n_unch=300, runs=4)


def pool_with(own: CrossRun) -> CrossRun:
    """The site's pool: ``own`` plus a busy segment of the same site software."""
    busy = CrossRun(tp=60, fp=2, fn=0, tn=200, n_unch=300, runs=4)
    return CrossRun(
        tp=own.tp + busy.tp,
        fp=own.fp + busy.fp,
        fn=own.fn + busy.fn,
        tn=own.tn + busy.tn,
        n_unch=own.n_unch + busy.n_unch,
    )


def test_a_slow_segment_is_trusted_on_its_sites_pooled_score() -> None:
    own = slow()
    assert own.metrics()["recall_lower"] < 0.8  # alone it stays PROVISIONAL
    alone = combine("PROVISIONAL", AGREE, "PROVISIONAL", slow())
    assert alone[0] == "PROVISIONAL"
    pool = pool_with(own)
    lower = pool.metrics()["recall_lower"]
    assert lower >= 0.8
    first = combine("PROVISIONAL", AGREE, "PROVISIONAL", own, pool=pool, pool_segments=2)
    assert first[0] == "PROVISIONAL"  # promotion needs two such runs in a row
    name, reason, evidence = combine(
        "PROVISIONAL", AGREE, "PROVISIONAL", own, pool=pool, pool_segments=2
    )
    assert name == "TRUSTED"
    assert reason == (
        "Across 4 runs, on the 2 segments of this site whose lastmod agrees with their "
        f"pages, lastmod moved with 64 of the content changes we saw and the audit found 0 "
        f"misses in 230 (recall lower bound {lower:.2f} >= 0.80); this segment's own audit "
        "found no miss in 30."
    )
    assert evidence["pool"] == {"segments": 2, "l2": pool.metrics()}


def test_no_pooling_with_a_miss_of_its_own_or_too_few_own_audits_or_alone() -> None:
    missed = CrossRun(tp=4, fp=0, fn=1, tn=29, n_unch=300, runs=4)
    few = CrossRun(tp=4, fp=0, fn=0, tn=POOL_OWN_AUDITS - 1, n_unch=300, runs=4)
    for own, segments in ((missed, 2), (few, 2), (slow(), 1)):
        pool = pool_with(own)
        for _ in range(3):
            name, _, evidence = combine(
                "PROVISIONAL", AGREE, "PROVISIONAL", own, pool=pool, pool_segments=segments
            )
            assert name != "TRUSTED"
            assert "pool" not in evidence


def test_a_pool_with_misses_does_not_lift_its_segments() -> None:
    own = slow()
    pool = pool_with(own)
    pool.fn += 6  # another segment's audit found misses: the pooled bound falls below 0.8
    assert pool.metrics()["recall_lower"] < 0.8
    for _ in range(3):
        name, _, _ = combine("PROVISIONAL", AGREE, "PROVISIONAL", own, pool=pool, pool_segments=2)
        assert name == "PROVISIONAL"


def test_red_flags_still_demote_a_pooled_segment() -> None:
    own = slow()
    pool = pool_with(own)
    name, _, _ = combine(
        "GENERATION_TIME", "clustered.", "TRUSTED", own, pool=pool, pool_segments=2
    )
    assert name == "GENERATION_TIME"


class _SiteWithDocs(Site):
    """test_state's site (busy honest posts, generation-time pages) plus docs: honest
    lastmods on pages nobody edits, so the docs alone never see a change to score."""

    def write(self) -> None:
        super().write()
        root = self.root
        docs = []
        for i in range(DOCS):
            modified = self.now - dt.timedelta(days=50 + 9 * i)
            docs.append((f"/docs/{i}", iso(modified)))
            _write(root / "docs" / str(i), _page(modified, f"A document about {i}."))
        _write(root / "sitemaps" / "docs.xml", _urlset(docs))
        index = (root / "sitemap_index.xml").read_text()
        _write(
            root / "sitemap_index.xml",
            index.replace(
                "</sitemapindex>",
                "<sitemap><loc>{base}/sitemaps/docs.xml</loc></sitemap></sitemapindex>",
            ),
        )


DOCS = 20
DOCS_SEG = "/sitemaps/docs.xml"


@pytest.fixture
def docs_site(tmp_path: Path) -> Iterator[tuple[Site, MockServer]]:
    built = _SiteWithDocs(tmp_path / "site")
    with MockServer(root=built.root) as server:
        yield built, server


@deferred_f_from_coro_f
async def test_a_segment_without_changes_is_trusted_with_its_site(
    docs_site: tuple[Site, MockServer], tmp_path: Path
) -> None:
    """Three runs in which only posts are edited: the posts earn TRUSTED on their own
    score; the docs, whose pages never change, on the site's pool (posts + docs; the
    generation-time pages are left out of it), once their own sample has audited 20 pages
    without a miss."""
    built, server = docs_site
    state = tmp_path / "state.sqlite"
    every_run = {
        "SITEMAPCRAWL_RESAMPLE_DAYS": 0,
        "SITEMAPCRAWL_RESAMPLE_TRUSTED_DAYS": 0,
        "SITEMAPCRAWL_RESAMPLE_TRUSTED_RUNS": 1,
    }
    _, report1, _, _ = await run(server, state, sample="on")
    assert verdicts(report1) == {
        DOCS_SEG: "PROVISIONAL",
        PAGES_SEG: "GENERATION_TIME",
        POSTS_SEG: "PROVISIONAL",
    }
    built.edit(*range(12))
    await run(server, state, every_run, sample="on", since="last", pages="refetch")
    built.edit(*range(12, 24))
    _, report3, _, _ = await run(
        server, state, every_run, sample="on", since="last", pages="refetch"
    )
    assert verdicts(report3) == {
        DOCS_SEG: "TRUSTED",
        # the pages' stamp has not moved in three runs: a stamp, not the generation time
        PAGES_SEG: "UNVERIFIABLE",
        POSTS_SEG: "TRUSTED",
    }
    docs = next(s for s in report3["segments"] if s["segment"] == DOCS_SEG)
    own = docs["cross_run"]["l2"]
    assert (own["tp"], own["fn"]) == (0, 0)  # nothing of its own to score
    assert own["recall_lower"] is None
    pool = docs["cross_run"]["pool"]
    assert pool["segments"] == 2  # posts and docs: not the pages (GENERATION_TIME on run 2)
    assert pool["l2"]["tp"] == 23.73  # 12 two runs ago, 12 on this one, decayed
    assert pool["l2"]["runs"] == 3
    assert pool["l2"]["recall_lower"] >= 0.8
    assert docs["reason"].startswith("Across 3 runs, on the 2 segments of this site whose")
    assert docs["reason"].endswith(
        f"this segment's own audit found no miss in {own['audits']:.0f}."
    )
    posts = next(s for s in report3["segments"] if s["segment"] == POSTS_SEG)
    assert "pool" not in posts["cross_run"]  # trusted on its own score


@deferred_f_from_coro_f
async def test_a_pooled_segment_audits_at_its_sites_need(
    docs_site: tuple[Site, MockServer], tmp_path: Path
) -> None:
    """A TRUSTED segment's audit is sized by need: what keeps its recall bound. The docs
    change too rarely to have a need of their own (no change seen: alone they would audit
    every unchanged URL, the cap, lifted here to all of them); trusted on the site's pool,
    they audit at the pool's need, which the audits of the last runs already cover: the
    floor, 1 of their 20 URLs (``SITEMAPCRAWL_INCREMENTAL_AUDIT_MIN``). The posts' own need
    is covered too: 1 of their 15 or so unchanged URLs a run."""
    built, server = docs_site
    state = tmp_path / "state.sqlite"
    every_run = {
        "SITEMAPCRAWL_RESAMPLE_DAYS": 0,
        "SITEMAPCRAWL_RESAMPLE_TRUSTED_DAYS": 0,
        "SITEMAPCRAWL_RESAMPLE_TRUSTED_RUNS": 1,
    }
    await run(server, state, sample="on")
    for edited in (range(12), range(12, 24), range(6)):
        built.edit(*edited)
        _, report, _, _ = await run(
            server, state, every_run, sample="on", since="last", pages="refetch"
        )
    assert verdicts(report)[DOCS_SEG] == "TRUSTED"
    assert verdicts(report)[POSTS_SEG] == "TRUSTED"
    built.edit(*range(6, 12))
    lifted = {**every_run, "SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED": 1.0}
    _, report, _, _ = await run(server, state, lifted, sample="on", since="last", pages="refetch")
    shares = {
        name: part.get("audit_share") for name, part in report["incremental"]["segments"].items()
    }
    # the pages are not trusted: no audit share
    assert shares == {DOCS_SEG: 0.05, POSTS_SEG: 0.0665, PAGES_SEG: None}
