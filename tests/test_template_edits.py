"""A theme's edit at a deploy is not a change of every page (issue 36, point 1: the
common-mode rule), over two runs with one state file against a loopback site.

The site's posts have honest lastmods and JSON-LD dates; each page's main content
ends with a Docsy-like line naming the last commit that touched it. At the second deploy the
theme rewrites that line's wording ("Last modified" → "Page last updated") on every page,
adds ``rel`` attributes to links, writes ``<br>`` for ``<br/>`` and a stray ``</html>``
before ``<body>`` (the Hexo theme of the issue); three posts are edited
(their lastmods move). Every unmoved page's fingerprint changed, by the same edit: it is
the template's, and the honest segment stays PROVISIONAL (it was STALE: 22 "misses"). The
counterpart: an unreported insertion shared by four pages of 25 (a shared note, added
without moving their lastmods) is under the share a template edit reaches: four misses.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report, our_stats

if TYPE_CHECKING:
    from pathlib import Path

SEGMENT = "/sitemaps/posts.xml"
N = 25
AUDIT_ALL = {
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_TRUSTED": 1.0,
    "SITEMAPCRAWL_INCREMENTAL_AUDIT_PROVISIONAL": 1.0,
    "CONCURRENT_REQUESTS": 4,
}
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def z(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class Site:
    """``N`` posts with honest lastmods, the theme of a deploy, notes added to some posts."""

    def __init__(self, root: Path, at: dt.datetime) -> None:
        self.root = root
        self.modified = [at - dt.timedelta(days=3 + 11 * i, hours=i % 7) for i in range(N)]
        self.edition = [0] * N
        self.notes: dict[int, str] = {}  # a paragraph added to a post (no lastmod move)
        self.code = ["keep the cache warm"] * N  # each post's highlighted code comment
        self.theme = 1

    def edit(self, i: int, at: dt.datetime) -> None:
        self.modified[i] = at
        self.edition[i] += 1

    def _page(self, i: int) -> str:
        words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(40 + i))
        text = f"<p>Post {i}, edition {self.edition[i]}: {words}.</p>"
        if i in self.notes:
            text += f"<p>{self.notes[i]}</p>"
        text += (
            '<pre><code class="language-py"><span class="comment"># '
            f'{self.code[i]}</span>\n<span class="n">cache</span>.warm()</code></pre>'
        )
        day = self.modified[i].strftime("%B %-d, %Y")
        message = f"Edit {self.edition[i]} of post {i}: {WORDS[i % len(WORDS)]} section"
        if self.theme == 1:
            footer = (
                f'<div class="text-muted">Last modified {day}: '
                f'<a href="/commit/{i}-{self.edition[i]}">{message}</a></div>'
            )
            links = f'<a href="/posts/{(i + 1) % N}">next</a><br/>'
        else:
            footer = (
                f'<div class="text-muted">Page last updated {day}: '
                f'<a href="/commit/{i}-{self.edition[i]}" rel="noopener">{message}</a></div>'
            )
            links = f'<a href="/posts/{(i + 1) % N}" rel="next">next</a><br>'
        data = '{"@context": "https://schema.org", "@type": "Article", "dateModified": "%s"}'
        return (
            "<!DOCTYPE html><html><head><title>t</title>"
            f'<script type="application/ld+json">{data % z(self.modified[i])}</script>'
            f"</head>{'' if self.theme == 1 else '</html>'}<body>"
            f"<main><article><h1>Post {i}</h1>{text}{links}</article>{footer}</main>"
            "</body></html>"
        )

    def write(self) -> None:
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        rows = "".join(
            f"<url><loc>{{base}}/posts/{i}</loc><lastmod>{z(self.modified[i])}</lastmod></url>"
            for i in range(N)
        )
        for i in range(N):
            _write(self.root / "posts" / str(i), self._page(i))
        _write(self.root / "sitemaps" / "posts.xml", f"<urlset {ns}>{rows}</urlset>")
        _write(
            self.root / "sitemap_index.xml",
            f"<sitemapindex {ns}><sitemap><loc>{{base}}{SEGMENT}</loc></sitemap></sitemapindex>",
        )
        _write(self.root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


async def run(
    server: MockServer, state: Path, at: dt.datetime, **args: Any
) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """One crawl with the server's clock at ``at``: each post's refetch reason, the
    segment's report, the ``sitemapcrawl/`` stats."""
    server.set_clock(at.timestamp() - time.time())
    items, report, crawler = await crawl_with_report(
        settings=AUDIT_ALL, origin=server.base, state=str(state), links="off", **args
    )
    assert report is not None
    (segment,) = report["segments"]
    assert segment["segment"] == SEGMENT
    reasons = {i["url"].rsplit("/", 1)[1]: i["refetch_reason"] for i in items}
    if report["incremental"]:
        segment["template_edits"] = report["incremental"]["segments"][SEGMENT].get("template_edits")
    return reasons, segment, our_stats(crawler)


async def two_deploys(tmp_path: Path, notes: dict[int, str]) -> tuple[Any, ...]:
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=2)
    site = Site(tmp_path / "site", start)
    site.write()
    state = tmp_path / "state.sqlite"
    with MockServer(root=site.root) as server:
        _, seg1, _ = await run(server, state, start, sample="on")
        assert seg1["verdict"] == "PROVISIONAL"
        assert len(seg1["samples"]) == N
        site.theme = 2
        for i in (0, 1, 2):
            site.edit(i, start + dt.timedelta(hours=5))
        site.notes.update(notes)
        site.write()
        return await run(server, state, start + dt.timedelta(days=1), since="last", pages="refetch")


@deferred_f_from_coro_f
async def test_a_theme_edit_on_every_page_is_no_change(tmp_path: Path) -> None:
    reasons, seg, stats = await two_deploys(tmp_path, {})
    assert [reasons[str(i)] for i in range(N)] == ["lastmod_changed"] * 3 + ["audit"] * (N - 3)
    l2 = seg["cross_run"]["l2"]
    assert (l2["tp"], l2["fp"], l2["fn"], l2["tn"]) == (3, 0, 0, N - 3)
    assert seg["verdict"] == "PROVISIONAL"
    assert seg["template_edits"] == N - 3
    assert stats["sitemapcrawl/refetch/template_edit_count"] == N - 3
    # every page changed as served (its rate, the change list): the theme's edit
    assert stats["sitemapcrawl/refetch/changed_count"] == N
    assert "sitemapcrawl/refetch/unchanged_count" not in stats


@deferred_f_from_coro_f
async def test_an_unreported_insertion_on_a_few_pages_is_still_a_change(tmp_path: Path) -> None:
    note = "A note added to this post: see the migration guide for release two."
    reasons, seg, stats = await two_deploys(tmp_path, dict.fromkeys((10, 11, 12, 13), note))
    assert [reasons[str(i)] for i in range(N)] == ["lastmod_changed"] * 3 + ["audit"] * (N - 3)
    l2 = seg["cross_run"]["l2"]
    assert (l2["tp"], l2["fp"], l2["fn"], l2["tn"]) == (3, 0, 4, N - 7)
    assert seg["template_edits"] == N - 7
    assert stats["sitemapcrawl/refetch/template_edit_count"] == N - 7
    assert stats["sitemapcrawl/refetch/changed_count"] == N


@deferred_f_from_coro_f
async def test_an_edit_to_highlighted_code_is_a_change(tmp_path: Path) -> None:
    """A post whose only edit is a comment in its highlighted code (``<span
    class="comment">``, as Hexo and Prism write it), its lastmod unmoved: a miss. The class
    names a code token, not a comment thread (the fingerprint used to drop it)."""
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=2)
    site = Site(tmp_path / "site", start)
    site.write()
    state = tmp_path / "state.sqlite"
    with MockServer(root=site.root) as server:
        await run(server, state, start, sample="on")
        site.code[5] = "warm the cache only once a day"
        site.write()
        _, seg, stats = await run(
            server, state, start + dt.timedelta(days=1), since="last", pages="refetch"
        )
    l2 = seg["cross_run"]["l2"]
    assert (l2["tp"], l2["fp"], l2["fn"], l2["tn"]) == (0, 0, 1, N - 1)
    assert seg["template_edits"] is None
    assert stats["sitemapcrawl/refetch/changed_count"] == 1
    assert stats["sitemapcrawl/refetch/noise_probe_count"] == 1
