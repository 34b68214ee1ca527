"""Issue 20 on real loopback sites: page dates that are stamps, local-date lastmods, a noisy
template.

Each test writes a small site, serves it with ``tests/mockserver.py`` on 127.0.0.1 and crawls
it with the real ``sitemap`` spider, first crawl, default settings but ``sample=on`` (main is
turning sampling on by default) and ``links=off`` (only the site's own files are fetched).
The robots.txt names a sitemap index whose children are the segments; no segment has more
than 30 URLs nor the site more than 150 (the default budgets), so every URL is sampled and
the counts are exact. Dates are set relative to the moment the site is written; the crawl
follows at once and the server's clock (its ``Date``) is the verification's "now".

The classes (docs/verification.md, "Page stamps", "L0 over the whole site", "Lastmod
intervals", "Fingerprints"):

* a static site that stamps every lastmod and every page with its build time, its posts
  written over years: GENERATION_TIME, never PROVISIONAL or TRUSTED;
* an honest blog whose list pages all carry the site-wide ``og:updated_time``: the posts
  PROVISIONAL, the list pages UNVERIFIABLE (their date is a stamp), never STALE;
* date-only or zone-less lastmods written in the site's local time, from UTC-12 to UTC+14,
  edited near local midnight: PROVISIONAL, never STALE;
* a template whose related-posts box and view counter change on every render: the
  fingerprint does not move, and the cross-run score finds nothing stale.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.mockserver import MockServer
from tests.utils.crawl import crawl_with_report

if TYPE_CHECKING:
    from pathlib import Path

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@dataclass(frozen=True)
class Page:
    """One sitemap entry and its page: ``lastmod`` (None: no element), the page's
    ``<head>`` extras (dates), and its article text."""

    path: str
    lastmod: str | None
    head: str = ""
    text: str = "Some article text, the same on every render."
    extra: str = ""  # more body after the article (a related-posts box, a counter)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def iso(value: dt.datetime, zone: dt.timedelta = dt.timedelta(0)) -> str:
    """``value`` as an ISO timestamp in the zone ``zone`` east of UTC."""
    local = value + zone
    sign = "-" if zone < dt.timedelta(0) else "+"
    hours, rest = divmod(abs(int(zone.total_seconds())), 3600)
    return f"{local.strftime('%Y-%m-%dT%H:%M:%S')}{sign}{hours:02d}:{rest // 60:02d}"


def meta(prop: str, value: str) -> str:
    return f'<meta property="{prop}" content="{value}">'


def jsonld(**dates: str) -> str:
    data = {"@context": "https://schema.org", "@type": "BlogPosting", "headline": "x", **dates}
    return f'<script type="application/ld+json">{json.dumps(data)}</script>'


def html(page: Page) -> str:
    return (
        f"<!DOCTYPE html><html><head><title>x</title>{page.head}</head><body><main>"
        f"<article><p>{page.text}</p></article>{page.extra}</main></body></html>"
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build(root: Path, segments: dict[str, list[Page]]) -> None:
    """robots.txt -> /sitemap_index.xml -> one child ``/sitemaps/<name>.xml`` a segment."""
    children = []
    for name, pages in segments.items():
        assert len(pages) <= 30  # the segment budget: every URL is sampled
        rows = []
        for page in pages:
            lastmod = f"<lastmod>{page.lastmod}</lastmod>" if page.lastmod is not None else ""
            rows.append(f"<url><loc>{{base}}{page.path}</loc>{lastmod}</url>")
            write(root / page.path.strip("/") / "index.html", html(page))
        write(root / "sitemaps" / f"{name}.xml", f"<urlset {NS}>{''.join(rows)}</urlset>")
        children.append(f"<sitemap><loc>{{base}}/sitemaps/{name}.xml</loc></sitemap>")
    assert sum(len(p) for p in segments.values()) <= 150  # the site budget
    write(root / "sitemap_index.xml", f"<sitemapindex {NS}>{''.join(children)}</sitemapindex>")
    write(root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap_index.xml\n")


async def crawl_site(
    root: Path, segments: dict[str, list[Page]], **kwargs: Any
) -> dict[str, dict[str, Any]]:
    """Build the site, crawl it once (``sample=on``), return its segments by name."""
    build(root, segments)
    with MockServer(root=root) as server:
        _, report, _ = await crawl_with_report(
            origin=server.base, sample="on", links="off", **kwargs
        )
    return by_name(report)


def by_name(report: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    assert report is not None
    out = {s["segment"].rsplit("/", 1)[1].removesuffix(".xml"): s for s in report["segments"]}
    for name, segment in out.items():  # every URL sampled, every page read
        assert len(segment["samples"]) == segment["urls"], name
        assert {s["status"] for s in segment["samples"]} == {200}, name
    return out


def evidence(segment: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: segment["evidence"][k] for k in keys}


# --------------------------------------------------------------------------------------
# A static site stamped at build time
# --------------------------------------------------------------------------------------


def stamped_site(built: dt.datetime, zone: dt.timedelta) -> dict[str, list[Page]]:
    """A Hugo-like site built at ``built``: every lastmod is the build time (within one
    second), every page echoes it in ``og:updated_time``, the posts were published over
    six years (``article:published_time``). 25 posts, 3 pages, 4 tag pages."""
    second = dt.timedelta(seconds=1)

    def stamp(i: int) -> str:
        return iso(built + (second if i % 2 else dt.timedelta(0)), zone)

    posts = [
        Page(
            f"/posts/{i}/",
            stamp(i),
            meta("og:updated_time", stamp(i))
            + meta("article:published_time", iso(built - dt.timedelta(days=90 * i + 3), zone)),
        )
        for i in range(25)
    ]
    pages = [Page(f"/{n}/", stamp(i), meta("og:updated_time", stamp(i))) for i, n in
             enumerate(("about", "contact", "now"))]  # fmt: skip
    tags = [Page(f"/tags/{t}/", stamp(i), meta("og:updated_time", stamp(i))) for i, t in
            enumerate(("go", "hugo", "css", "life"))]  # fmt: skip
    return {"posts": posts, "pages": pages, "tags": tags}


@pytest.mark.parametrize(
    ("age", "ago"),
    [(dt.timedelta(hours=2), "2.0 h"), (dt.timedelta(days=40), "960.0 h")],
    ids=["built-2h-ago", "built-40d-ago"],
)
@deferred_f_from_coro_f
async def test_a_build_stamped_static_site_is_generation_time_on_its_first_crawl(
    tmp_path: Path, age: dt.timedelta, ago: str
) -> None:
    """Every lastmod of the site falls within one second, and every page echoes it: the
    pages "agree" with lastmod because both are the build. Those dates are stamps (no
    evidence), and the posts, published over six years, cannot all have changed in that
    second: GENERATION_TIME on the first crawl, recent build or not. The two small
    segments (3 and 4 URLs) get it from the posts' archive through the site's burst."""
    at = now()
    segments = await crawl_site(tmp_path / "site", stamped_site(at - age, dt.timedelta(hours=9)))
    assert {n: s["verdict"] for n, s in segments.items()} == {
        "posts": "GENERATION_TIME",
        "pages": "GENERATION_TIME",
        "tags": "GENERATION_TIME",
    }
    for name, segment in segments.items():
        n = segment["urls"]
        assert evidence(segment, "n_sampled", "n_ev", "counts", "basis", "confirmed") == {
            "n_sampled": n,
            "n_ev": 0,
            "counts": {"PAGE_STAMP": n},
            "basis": "L0+archive",
            "confirmed": False,
        }, name
        assert {s["page_stamp"] for s in segment["samples"]} == {True}, name
        # the posts' publication dates span 72 x 90 days over 24 steps: 5.9 years
        assert segment["evidence"]["archive_days"] == 2160.0, name
        assert segment["reason"].endswith(
            ", but the sampled pages were published over 5.9 years: an archive written over "
            "years cannot have changed within seconds, so lastmod is a build or generation "
            f"stamp, whatever the pages echo (0 of {n} sampled pages carry a date of their "
            f"own; {n} carry the stamp or a date shared by most pages)."
        ), name
    assert segments["posts"]["reason"].startswith(
        f"100% of 25 lastmods fall within 10 seconds, {ago} before the server clock, but"
    )
    recent = age < dt.timedelta(days=2)
    assert segments["posts"]["evidence"]["signals"] == [
        "generation_time_suspected" if recent else "clustered_old",
        "archive_stamp",
    ]
    if recent:  # the site's cluster holds the small segments' lastmods
        assert segments["tags"]["reason"].startswith(
            "100% of this segment's 4 lastmods lie in its site's cluster: across the site's "
            f"3 segments, 100% of 32 lastmods fall in one 10min window centred {ago} before "
            "the server clock, but"
        )
        assert segments["tags"]["evidence"]["signals"] == [
            "too_few",
            "generation_time_suspected",
            "archive_stamp",
        ]
    else:  # an old burst raises no signal by itself; the archive does
        assert segments["tags"]["reason"].startswith(
            f"100% of 4 lastmods fall within 10 seconds, {ago} before the server clock, but"
        )
        assert segments["tags"]["evidence"]["signals"] == ["too_few", "archive_stamp"]


@deferred_f_from_coro_f
async def test_honest_lastmods_edited_together_are_not_a_stamp(tmp_path: Path) -> None:
    """The counterpart: 25 posts edited on one afternoon, a few minutes apart (a batch of
    fixes), each page's ``article:modified_time`` its own edit. Their lastmods cluster in
    a 10-minute window but no two share a second: no burst, and each page's date is its
    own: PROVISIONAL."""
    at = now()
    start = at - dt.timedelta(days=30)
    posts = []
    for i in range(25):
        edited = iso(start + dt.timedelta(seconds=23 * i + 1))
        published = iso(start - dt.timedelta(days=90 * i + 3))
        head = meta("article:modified_time", edited) + meta("article:published_time", published)
        posts.append(Page(f"/posts/{i}/", edited, head))
    segments = await crawl_site(tmp_path / "site", {"posts": posts})
    (posts_segment,) = segments.values()
    assert posts_segment["verdict"] == "PROVISIONAL"
    assert posts_segment["reason"] == (
        "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80)."
    )
    assert evidence(posts_segment, "n_ev", "counts", "signals") == {
        "n_ev": 25,
        "counts": {"AGREE": 25},
        "signals": ["clustered_old"],
    }
    assert {s["page_stamp"] for s in posts_segment["samples"]} == {False}


# --------------------------------------------------------------------------------------
# An honest blog whose list pages carry a site-wide og:updated_time
# --------------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_site_wide_og_updated_time_on_list_pages_is_not_stale(tmp_path: Path) -> None:
    """Posts: honest lastmods, each equal to the page's ``article:modified_time``. List
    pages (categories, tags): lastmod is the newest post of the list, but every list page
    carries the newest date of the whole site as ``og:updated_time``. Those are after the
    list pages' lastmods, which used to read as "modified after their lastmod" and made
    the list segment STALE. It is one date on every list page: a template stamp, no
    evidence. The one list page whose lastmod is that date agrees."""
    at = now()
    newest = at - dt.timedelta(days=2, hours=5, minutes=17)
    edits = [newest] + [at - dt.timedelta(days=9 + 41 * i, minutes=13 * i) for i in range(1, 25)]
    posts = [
        Page(f"/posts/{i}/", iso(edit), meta("article:modified_time", iso(edit)))
        for i, edit in enumerate(edits)
    ]
    site_wide = meta("og:updated_time", iso(newest))
    lists = [Page("/categories/news/", iso(newest), site_wide)]
    lists += [
        Page(f"/tags/t{i}/", iso(edits[3 * i]), site_wide, text=f"Posts tagged t{i}.")
        for i in range(1, 8)
    ]
    segments = await crawl_site(tmp_path / "site", {"posts": posts, "lists": lists})
    assert segments["posts"]["verdict"] == "PROVISIONAL"
    assert segments["posts"]["reason"] == (
        "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80)."
    )
    lists_segment = segments["lists"]
    assert lists_segment["verdict"] == "UNVERIFIABLE"
    assert lists_segment["reason"] == (
        "Only 1 of 8 sampled pages carry page evidence (< 20, 7 carry a template or build stamp)."
    )
    assert evidence(lists_segment, "n_sampled", "n_ev", "counts") == {
        "n_sampled": 8,
        "n_ev": 1,
        "counts": {"AGREE": 1, "PAGE_STAMP": 7},
    }
    stamped = sorted(s["url"].split("/", 3)[3] for s in lists_segment["samples"] if s["page_stamp"])
    assert stamped == [f"tags/t{i}/" for i in range(1, 8)]


# --------------------------------------------------------------------------------------
# Date-only and zone-less lastmods in the site's local time
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hours", "form"),
    [(14, "date"), (-12, "date"), (9, "date"), (14, "zoneless"), (-12, "zoneless")],
)
@deferred_f_from_coro_f
async def test_local_date_lastmods_are_not_stale(tmp_path: Path, hours: int, form: str) -> None:
    """A site at UTC+14, UTC-12 or UTC+9 writes its lastmods as local dates (or local
    wall-clock times without a zone) and its pages' ``dateModified`` with the zone. Every
    edit is 20 minutes from a local midnight, on either side: its UTC day is not its local
    day. A date (or zone-less time) covers its whole day (its instant) in any zone from
    UTC-12 to UTC+14, so every page agrees: PROVISIONAL, not STALE."""
    zone = dt.timedelta(hours=hours)
    at = now()
    pages = []
    for i in range(25):
        local_day = (at + zone).date() - dt.timedelta(days=5 + 53 * i)
        midnight = dt.datetime.combine(local_day, dt.time(), dt.UTC) - zone  # local 00:00
        edited = midnight + dt.timedelta(minutes=20 if i % 2 else 24 * 60 - 20)
        local = edited + zone
        lastmod = (
            local.date().isoformat() if form == "date" else local.strftime("%Y-%m-%dT%H:%M:%S")
        )
        pages.append(Page(f"/posts/{i}/", lastmod, jsonld(dateModified=iso(edited, zone))))
    segments = await crawl_site(tmp_path / "site", {"posts": pages})
    (segment,) = segments.values()
    assert segment["verdict"] == "PROVISIONAL"
    assert segment["reason"] == "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80)."
    assert evidence(segment, "n_ev", "counts", "signals") == {
        "n_ev": 25,
        "counts": {"AGREE": 25},
        "signals": [],
    }
    share = "date_only_share" if form == "date" else "no_tz_share"
    assert segment["l0"][share] == 1.0


# --------------------------------------------------------------------------------------
# A noisy template
# --------------------------------------------------------------------------------------


def noisy(i: int, render: int) -> str:
    """The box a theme draws anew on every render: other posts at random, a view counter."""
    picks = [(i + render * 7 + k) % 30 for k in (1, 2, 3)]
    links = "".join(f"<li><a href='/posts/{p}/'>Post number {p}</a></li>" for p in picks)
    return (
        f"<section class='section'><h2>Random Recommended Posts</h2><ul>{links}</ul></section>"
        f"<p>Read <span class='post-view-count'>{1000 + 37 * render + i}</span> times</p>"
    )


@deferred_f_from_coro_f
async def test_a_related_posts_box_drawn_anew_on_every_render_is_not_a_change(
    tmp_path: Path,
) -> None:
    """30 honest posts, crawled twice with a state file. Between the crawls the site is
    rebuilt: every page's related-posts box and view counter are drawn anew, and 3 posts
    really are edited (text, lastmod and dateModified). The fingerprint moves on exactly
    those 3: the 27 others are the same content, and the cross-run score counts 3 true
    positives, 27 true negatives, no miss."""
    at = now()
    root = tmp_path / "site"
    state = tmp_path / "state.sqlite"
    edits = [at - dt.timedelta(days=9 + 41 * i, minutes=13 * i) for i in range(30)]

    def site(render: int, edited: set[int]) -> dict[str, list[Page]]:
        pages = []
        for i, edit in enumerate(edits):
            when = at - dt.timedelta(hours=3, minutes=i) if i in edited else edit
            text = f"Rewritten article {i}." if i in edited else f"Article {i}, as written."
            head = jsonld(dateModified=iso(when))
            pages.append(Page(f"/posts/{i}/", iso(when), head, text, noisy(i, render)))
        return {"posts": pages}

    build(root, site(0, set()))
    with MockServer(root=root) as server:
        _, report1, _ = await crawl_with_report(
            origin=server.base, sample="on", links="off", state=str(state)
        )
        body1 = (root / "posts" / "5" / "index.html").read_text()
        build(root, site(1, {2, 11, 23}))
        body2 = (root / "posts" / "5" / "index.html").read_text()
        _, report2, _ = await crawl_with_report(
            origin=server.base, sample="on", links="off", state=str(state)
        )
    assert body1 != body2  # the box and the counter did change
    first, second = by_name(report1)["posts"], by_name(report2)["posts"]
    assert first["verdict"] == second["verdict"] == "PROVISIONAL"
    before = {s["url"]: s["fingerprint"] for s in first["samples"]}
    after = {s["url"]: s["fingerprint"] for s in second["samples"]}
    moved = sorted(int(u.rstrip("/").rsplit("/", 1)[1]) for u in before if before[u] != after[u])
    assert moved == [2, 11, 23]
    l2 = second["cross_run"]["l2"]
    assert {k: l2[k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 3, "fp": 0, "fn": 0, "tn": 27}


# --------------------------------------------------------------------------------------
# A static build whose sitemap stamps its list pages and dates its posts (Hexo)
# --------------------------------------------------------------------------------------


def hexo_site(root: Path, built: dt.datetime, *, stamp_tags: bool, one_file: bool) -> None:
    """Hexo's shape: 25 posts whose sitemap lastmod is the day of their ``updated`` value
    (front matter or the source file's time) and whose ``article:modified_time`` prints
    the same value to the millisecond; 12 tag pages dated with the build day
    (``stamp_tags``, else without a lastmod). ``one_file``: one flat ``sitemap.xml``, as
    Hexo writes it (else an index with a child per group, each written apart)."""
    posts = []
    for i in range(25):
        updated = built - dt.timedelta(days=17 * i + 3, hours=i % 5, minutes=7 * i)
        head = meta("article:modified_time", updated.strftime("%Y-%m-%dT%H:%M:%S.251Z"))
        head += meta("article:published_time", iso(updated - dt.timedelta(days=30)))
        posts.append(Page(f"/posts/p{i}/", updated.date().isoformat(), head))
    day = built.date().isoformat() if stamp_tags else None
    tags = [Page(f"/tags/t{i}/", day) for i in range(12)]
    if not one_file:
        build(root, {"posts": posts, "tags": tags})
        return
    rows = []
    for page in posts + tags:
        lastmod = f"<lastmod>{page.lastmod}</lastmod>" if page.lastmod is not None else ""
        rows.append(f"<url><loc>{{base}}{page.path}</loc>{lastmod}</url>")
        write(root / page.path.strip("/") / "index.html", html(page))
    write(root / "sitemap.xml", f"<urlset {NS}>{''.join(rows)}</urlset>")
    write(root / "robots.txt", "User-agent: *\nSitemap: {base}/sitemap.xml\n")


@pytest.mark.parametrize(
    ("stamp_tags", "one_file", "posts_verdict"),
    [(True, True, "UNVERIFIABLE"), (False, True, "PROVISIONAL"), (True, False, "PROVISIONAL")],
    ids=["hexo-one-file", "no-build-stamp", "stamped-file-apart"],
)
@deferred_f_from_coro_f
async def test_page_dates_that_restate_a_static_builds_lastmod_are_no_agreement(
    tmp_path: Path, stamp_tags: bool, one_file: bool, posts_verdict: str
) -> None:
    """The posts' pages agree with their lastmods 25 of 25, because one build printed both
    from one value: that cannot show that an edit moves the lastmod (hexo-lianbian in
    bench/realweb: PROVISIONAL for 13 runs, STALE at the first edit that did not move it).
    The sitemap file that dates the posts stamps the tag pages with the build day, which
    shows the build: the posts are UNVERIFIABLE until the cross-run audit decides. Without
    the stamp, or with the stamped group in a file of its own (written apart, as a CMS and
    a docs build behind one index are), the agreement counts: PROVISIONAL."""
    root = tmp_path / "site"
    hexo_site(root, now(), stamp_tags=stamp_tags, one_file=one_file)
    with MockServer(root=root) as server:
        _, report, _ = await crawl_with_report(origin=server.base, sample="on", links="off")
    assert report is not None
    segments = {s["segment"].removeprefix(server.base): s for s in report["segments"]}
    names = ("/posts/", "/tags/") if one_file else ("/sitemaps/posts.xml", "/sitemaps/tags.xml")
    posts, tags = (segments[name] for name in names)
    assert len(segments) == 2
    assert (posts["urls"], len(posts["samples"]), tags["urls"]) == (25, 25, 12)
    assert (posts["verdict"], tags["verdict"]) == (
        posts_verdict,
        "GENERATION_TIME" if stamp_tags else "ABSENT",
    )
    assert evidence(posts, "n_ev", "counts") == {"n_ev": 25, "counts": {"AGREE": 25}}
    agree = "25 of 25 sampled pages agree (Wilson lower bound 0.87 >= 0.80)"
    if posts_verdict == "PROVISIONAL":
        assert posts["reason"] == f"{agree}."
        assert "static_build" not in posts["evidence"]
        return
    assert posts["reason"] == (
        f"{agree}, but the sitemap that dates them stamps {names[1]} with the build time: a "
        "static build prints a page's date and its lastmod from one value, so their "
        "agreement cannot show that edits move the lastmod; the cross-run audit decides."
    )
    assert posts["evidence"]["static_build"] == [names[1]]


@deferred_f_from_coro_f
async def test_a_site_whose_every_lastmod_is_one_date_says_so(tmp_path: Path) -> None:
    """An MkDocs site built once (61 URLs, every lastmod the build's date, 337 days old),
    whose pages carry no date: whatever the verdict, its reason says that every URL carries
    the same date, and which, on the first crawl (issue 36)."""
    now = dt.datetime.now(dt.UTC)
    day = (now - dt.timedelta(days=337)).date().isoformat()
    rows = "".join(
        f"<url><loc>{{base}}/docs/page-{i}/</loc><lastmod>{day}</lastmod></url>" for i in range(61)
    )
    (tmp_path / "sitemap.xml").write_text(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
    )
    (tmp_path / "robots.txt").write_text("Sitemap: {base}/sitemap.xml\n")
    for i in range(61):
        page = tmp_path / "docs" / f"page-{i}" / "index.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html><body><main><h1>Page {i}</h1><p>text</p></main></body></html>")
    with MockServer(root=tmp_path) as server:
        _, report, crawler = await crawl_with_report(origin=server.base, sample="on", links="off")
    assert crawler.stats is not None
    assert crawler.stats.get_value("log_count/ERROR") is None
    assert report is not None
    (segment,) = report["segments"]
    note = f"100% of 61 lastmods carry one date, {day} (337 days before the server clock)"
    assert segment["evidence"]["one_date"] == {"date": day, "share": 1.0, "text": note}
    assert segment["reason"].startswith(note + "; ")
