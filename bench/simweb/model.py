"""Simulated sites: archetypes, change processes and ground truth, deterministic from a seed.

Time is a float count of seconds since the Unix epoch (UTC) throughout. The
simulation starts at :data:`T0`; run ``d`` (one crawl per simulated day)
happens at :func:`run_time` ``(d) = T0 + d days + 06:00``. Every process is
generated from ``history`` (up to :data:`HISTORY_DAYS` before ``T0``) to
:data:`HORIZON_DAYS` after it, so a site does not depend on how many days a
benchmark runs: ``Site(archetype, seed, n_pages)`` is the whole truth.

Per page:

* significant edits: a Poisson process of rate λᵢ, λ drawn from a lognormal
  (median 1/60 per day, sigma = 1.5, capped at 2 per day); 5 % "hot" pages at
  0.5-2 per day; 20 % never change. Each edit has a kind: ``text`` (main
  text), ``price`` (one token, product pages), ``sd`` (structured data only)
  or ``links`` (the related-links list in the main content);
* non-significant events: comments (rendered in a ``#comments`` block),
  site-wide template changes (footer, asset versions) and, on noisy sites,
  per-request widgets, counters and CSRF tokens;
* new pages: 5 % of a ``post`` segment is published during the first 60 days.

Ground truth: :meth:`Site.events` (a per-page log of ``(t, kind,
significant)``) and :meth:`Site.version` (``v(i, t)``: the number of
significant edits live at ``t``; -1 before publication). On a static-site
generator (``release="deploy"``) an edit goes live at the next deploy.
"""

from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

DAY = 86_400.0
HOUR = 3_600.0
#: Simulation start (a Monday), 00:00 UTC.
T0 = dt.datetime(2026, 3, 2, tzinfo=dt.UTC).timestamp()
RUN_HOUR = 6
HISTORY_DAYS = 730
HORIZON_DAYS = 90
END = T0 + HORIZON_DAYS * DAY
#: The lastmod interval's slack for a timestamp with a time zone ("Lastmod intervals").
TAU = HOUR
#: Widening of a date-only value (any UTC offset is possible).
TZ_SLACK = 14 * HOUR

KINDS = ("text", "price", "sd", "links")
#: Verdicts whose lastmod a scheduler uses (the spider's own set).
USABLE = frozenset({"TRUSTED", "PROVISIONAL", "OVER_REPORTING"})


def run_time(day: int, hour: float = RUN_HOUR) -> float:
    """The virtual time of run ``day`` (0-based): 06:00 UTC (``hour``) on day ``day`` after T0."""
    return T0 + day * DAY + hour * HOUR


@dataclass(frozen=True)
class SegmentSpec:
    """One child sitemap of a site.

    ``lastmod`` is the mode that computes its ``<lastmod>`` (see
    :meth:`Site.lastmod_values`), ``truth`` the verdict a correct verifier
    reaches, ``evidence`` how pages declare their dates (``graph``: a
    Yoast-like JSON-LD ``@graph`` plus OpenGraph; ``single``: one JSON-LD
    Article with a Comment that has its own date; ``mainentity``: a JSON-LD
    WebPage whose ``mainEntity`` is the article; ``microdata``: a schema.org
    Product; ``og``: OpenGraph ``article:modified_time`` only), ``kind`` the
    page kind (``post``, ``page``, ``product``, ``doc``) and ``weight`` its
    share of the site's pages.
    """

    name: str
    lastmod: str
    truth: str
    evidence: str = "graph"
    kind: str = "post"
    weight: float = 1.0

    @property
    def path(self) -> str:
        """The child sitemap's path, which is how the spider names the segment."""
        return f"/sitemap-{self.name}.xml"


@dataclass(frozen=True)
class Archetype:
    """How a site reports modification dates (one archetype of the simulated web)."""

    name: str
    description: str
    segments: tuple[SegmentSpec, ...]
    #: The page's own dateModified: ``true`` (last significant change), ``stale`` (the same
    #: stale field as the sitemap), ``now`` (render time), ``authored`` (the source edit
    #: time; static sites).
    page_modified: str = "true"
    #: The page's ``Last-Modified`` header: ``true``, ``now``, ``deploy``, ``stale``, ``absent``.
    http_last_modified: str = "true"
    #: The sitemap files' ``Last-Modified`` header: ``absent``, ``rebuild``, ``deploy``.
    sitemap_last_modified: str = "absent"
    #: ``live``: edits are visible at once; ``deploy``: only at the next deploy.
    release: str = "live"
    #: The sitemap is rebuilt every 6-24 h and served from that rebuild in between.
    lagged: bool = False
    #: Weekly deploys (static site or CMS deploy stamp).
    deploys: bool = False
    template_interval_days: float = 30.0
    noisy: bool = False
    bulk_import_share: float = 0.0
    #: ``tz_shift``: local time UTC+k written with ``Z``.
    tz_hours: int = 0
    #: ``honest_date``: dates in this local UTC offset; pages show it too (unless
    #: ``page_offset_hours`` says in which offset they write their times).
    local_offset_hours: int = 0
    page_offset_hours: int | None = None
    #: The UTC hour of the daily crawl (``Site.run_time``).
    run_hour: float = RUN_HOUR
    #: Share of edits followed by a second edit later the same local day (a burst).
    burst_share: float = 0.0
    #: A sitemap rebuilt on a fixed cycle of this many hours (0: no cycle), the first
    #: rebuild of each day at ``rebuild_phase_hours`` UTC.
    rebuild_every_hours: float = 0.0
    rebuild_phase_hours: float = 0.0
    #: ``partial``: share of URLs that carry a lastmod.
    partial_share: float = 0.3
    #: ``stale_partial``: share of edits that bump lastmod.
    report_share: float = 0.3
    #: ``cron``: share of rows a nightly job touches (each night a share drawn between
    #: ``cron_share`` and ``cron_share_max`` when that is set).
    cron_share: float = 0.2
    cron_share_max: float = 0.0


def _segs(*specs: SegmentSpec) -> tuple[SegmentSpec, ...]:
    return specs


ARCHETYPES: dict[str, Archetype] = {
    a.name: a
    for a in (
        Archetype(
            "honest-ts",
            "lastmod = last significant change, +00:00",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("pages", "honest", "TRUSTED", "single", "page", 1),
                SegmentSpec("products", "honest", "TRUSTED", "microdata", "product", 1),
            ),
        ),
        Archetype(
            "honest-date",
            "date of the last change in local time (UTC+2), no time",
            _segs(
                SegmentSpec("posts", "honest_date", "TRUSTED", "graph", "post", 2),
                SegmentSpec("docs", "honest_date", "TRUSTED", "og", "doc", 1),
            ),
            http_last_modified="absent",
            local_offset_hours=2,
        ),
        Archetype(
            "honest-lagged",
            "honest, but the sitemap is rebuilt every 6-24 h",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("pages", "honest", "TRUSTED", "mainentity", "page", 1),
            ),
            sitemap_last_modified="rebuild",
            lagged=True,
        ),
        Archetype(
            "honest-bulk-import",
            "honest; 60 % of pages share an old import date",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 1),
                SegmentSpec("archive", "honest", "TRUSTED", "single", "page", 1),
            ),
            bulk_import_share=0.6,
        ),
        Archetype(
            "gen-per-request",
            "every lastmod = the request time",
            _segs(
                SegmentSpec("posts", "gen_request", "GENERATION_TIME", "graph", "post", 2),
                SegmentSpec("pages", "gen_request", "GENERATION_TIME", "single", "page", 1),
            ),
        ),
        Archetype(
            "gen-daily-date",
            "every lastmod = today (UTC date, no time)",
            _segs(SegmentSpec("posts", "gen_daily", "GENERATION_TIME", "graph", "post", 1)),
            http_last_modified="absent",
        ),
        Archetype(
            "ssg-deploy",
            "static site: weekly deploys stamp every lastmod; edits go live only at deploys",
            _segs(
                SegmentSpec("docs", "deploy", "OVER_REPORTING", "og", "doc", 1),
                SegmentSpec("blog", "deploy", "OVER_REPORTING", "graph", "post", 1),
            ),
            page_modified="authored",
            http_last_modified="deploy",
            sitemap_last_modified="deploy",
            release="deploy",
            deploys=True,
        ),
        Archetype(
            "cms-deploy-stamp",
            "every lastmod = the last weekly deploy, but CMS edits go live in between",
            _segs(
                SegmentSpec("posts", "deploy", "STALE", "graph", "post", 2),
                SegmentSpec("pages", "deploy", "STALE", "single", "page", 1),
            ),
            sitemap_last_modified="deploy",
            deploys=True,
        ),
        Archetype(
            "absent",
            "no lastmod at all",
            _segs(
                SegmentSpec("posts", "absent", "ABSENT", "graph", "post", 2),
                SegmentSpec("pages", "absent", "ABSENT", "single", "page", 1),
            ),
        ),
        Archetype(
            "partial",
            "30 % of URLs carry an honest lastmod",
            _segs(SegmentSpec("posts", "partial", "PARTIAL", "graph", "post", 1)),
        ),
        Archetype(
            "stale-pubdate",
            "lastmod = datePublished forever",
            _segs(SegmentSpec("posts", "pubdate", "STALE", "graph", "post", 1)),
        ),
        Archetype(
            "stale-partial",
            "only 30 % of edits bump lastmod; pages show the true dateModified",
            _segs(
                SegmentSpec("posts", "stale_partial", "STALE", "graph", "post", 2),
                SegmentSpec("products", "stale_partial", "STALE", "microdata", "product", 1),
            ),
        ),
        Archetype(
            "stale-consistent",
            "as stale-partial, and the page's dateModified is the same stale field",
            _segs(SegmentSpec("posts", "stale_partial", "STALE", "graph", "post", 1)),
            page_modified="stale",
            http_last_modified="absent",
        ),
        Archetype(
            "bumped-template",
            "lastmod also moves on every site-wide template change (every ~10 days)",
            _segs(
                SegmentSpec("posts", "template", "OVER_REPORTING", "graph", "post", 2),
                SegmentSpec("pages", "template", "OVER_REPORTING", "single", "page", 1),
            ),
            template_interval_days=10.0,
        ),
        Archetype(
            "bumped-cron",
            "a nightly job touches the lastmod of 20 % of rows",
            _segs(
                SegmentSpec("products", "cron", "OVER_REPORTING", "microdata", "product", 1),
                SegmentSpec("posts", "cron", "OVER_REPORTING", "graph", "post", 1),
            ),
        ),
        Archetype(
            "honest-date-local",
            "date of the last change in the site's local day (UTC-3), no time; the pages "
            "write their times in UTC; 40 % of edits are followed by another the same local "
            "day; crawled at 01:00 UTC (22:00 local)",
            _segs(
                SegmentSpec("posts", "honest_date", "TRUSTED", "graph", "post", 2),
                SegmentSpec("docs", "honest_date", "TRUSTED", "og", "doc", 1),
            ),
            http_last_modified="absent",
            local_offset_hours=-3,
            page_offset_hours=0,
            run_hour=1,
            burst_share=0.4,
        ),
        Archetype(
            "honest-lagged-12h",
            "honest, but the sitemap is rebuilt every 12 h (06:30 and 18:30 UTC): read at "
            "06:00, it is 11.5 h behind the pages; 40 % of edits come in same-day bursts",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("pages", "honest", "TRUSTED", "mainentity", "page", 1),
            ),
            sitemap_last_modified="rebuild",
            rebuild_every_hours=12.0,
            rebuild_phase_hours=6.5,
            burst_share=0.4,
        ),
        Archetype(
            "bumped-nightly",
            "honest lastmod, and a nightly job touches the lastmod of 15-25 % of rows "
            "without a content change; the template never changes",
            _segs(
                SegmentSpec("products", "cron", "OVER_REPORTING", "microdata", "product", 1),
                SegmentSpec("posts", "cron", "OVER_REPORTING", "graph", "post", 1),
            ),
            template_interval_days=10_000.0,
            cron_share=0.15,
            cron_share_max=0.25,
        ),
        Archetype(
            "tz-shift",
            "local time (UTC+5) labelled Z: lastmods are 5 h ahead, some in the future",
            _segs(SegmentSpec("posts", "tz_shift", "TZ_SHIFT", "graph", "post", 1)),
            tz_hours=5,
        ),
        Archetype(
            "mixed",
            "honest posts, pages stamped with the generation time",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("pages", "gen_request", "GENERATION_TIME", "single", "page", 1),
            ),
        ),
        Archetype(
            "mixed-stale",
            "honest posts; pages whose lastmod and dateModified are one stale field (30 % of "
            "edits bump it): only the audit can tell, and the posts must not vouch for them",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("pages", "stale_partial", "STALE", "single", "page", 1),
            ),
            page_modified="stale",
            http_last_modified="absent",
        ),
        Archetype(
            "noisy-honest",
            "honest lastmod; pages carry rotating widgets, counters and CSRF tokens",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("products", "honest", "TRUSTED", "microdata", "product", 1),
            ),
            noisy=True,
        ),
        Archetype(
            "dynamic-datemodified",
            "honest lastmod; the page's dateModified and Last-Modified are the render time",
            _segs(
                SegmentSpec("posts", "honest", "TRUSTED", "graph", "post", 2),
                SegmentSpec("pages", "honest", "TRUSTED", "mainentity", "page", 1),
            ),
            page_modified="now",
            http_last_modified="now",
        ),
    )
}

#: A few archetypes that cover every verdict family, for ``--quick``.
QUICK_ARCHETYPES = (
    "honest-ts",
    "gen-per-request",
    "stale-partial",
    "stale-consistent",
    "absent",
    "mixed",
)


# --------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------


def iso(t: float, offset_hours: int = 0, z: bool = False) -> str:
    """``t`` as ``YYYY-MM-DDThh:mm:ss+hh:mm`` in that offset (``Z`` when ``z``)."""
    tz = dt.timezone(dt.timedelta(hours=offset_hours))
    moment = dt.datetime.fromtimestamp(int(t), tz)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if z:
        return text + "Z"
    sign = "+" if offset_hours >= 0 else "-"
    return f"{text}{sign}{abs(offset_hours):02d}:00"


def day_string(t: float) -> str:
    """The UTC calendar date of ``t`` (``t`` being a midnight for date values)."""
    return dt.datetime.fromtimestamp(int(t), dt.UTC).strftime("%Y-%m-%d")


def http_date(t: float) -> str:
    """An RFC 9110 IMF-fixdate."""
    return dt.datetime.fromtimestamp(int(t), dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


# --------------------------------------------------------------------------------------
# Pages
# --------------------------------------------------------------------------------------


@dataclass
class Page:
    """One page's identity, rates and event streams (all times sorted, epoch seconds)."""

    index: int
    segment: int
    path: str
    title: str
    published: float
    #: When the CMS row was created: the publication, or the bulk-import date.
    base: float
    rate: float
    hot: bool
    #: Significant edits: the time each goes live, its authoring time and kind.
    live: np.ndarray
    authored: np.ndarray
    kinds: np.ndarray
    #: ``stale_partial``: whether each edit bumps the lastmod.
    reported: np.ndarray
    comments: np.ndarray
    has_lastmod: bool = True
    cron_offset: float = 0.0
    #: Cumulative edit counts per kind, one row per edit (rendering needs the counts).
    cumulative: np.ndarray = field(default_factory=lambda: np.zeros((0, len(KINDS)), np.int32))


def _stable_seed(seed: int, *names: str) -> list[int]:
    return [seed, *(zlib.crc32(n.encode()) for n in names)]


class Site:
    """One simulated site: its pages, its site-wide events and its ground truth."""

    def __init__(self, archetype: Archetype | str, seed: int = 1, n_pages: int = 300) -> None:
        self.archetype = ARCHETYPES[archetype] if isinstance(archetype, str) else archetype
        self.seed = seed
        self.n_pages = n_pages
        arch = self.archetype
        rng = np.random.default_rng(_stable_seed(seed, arch.name))
        start = T0 - (HISTORY_DAYS + 70) * DAY
        self.templates = self._regular(rng, start, arch.template_interval_days)
        self.deploys = self._regular(rng, start, 7.0, jitter=0.04) if arch.deploys else _empty()
        if arch.lagged:
            gaps = rng.uniform(6 * HOUR, 24 * HOUR, size=int(HORIZON_DAYS * 4 + 40))
            self.rebuilds = T0 - 5 * DAY + np.cumsum(gaps)
        elif arch.rebuild_every_hours:
            step = arch.rebuild_every_hours * HOUR
            first = T0 - 5 * DAY + arch.rebuild_phase_hours * HOUR
            self.rebuilds = np.arange(first, END + DAY, step, dtype=float)
        else:
            self.rebuilds = _empty()
        self.cron_nights = (
            T0 + 2 * HOUR + DAY * np.arange(-60, HORIZON_DAYS + 1, dtype=float)
            if any(s.lastmod == "cron" for s in arch.segments)
            else _empty()
        )
        self.import_date = T0 - rng.uniform(300, 500) * DAY
        self.pages: list[Page] = []
        weights = np.array([s.weight for s in arch.segments], dtype=float)
        counts = np.floor(weights / weights.sum() * n_pages).astype(int)
        counts[0] += n_pages - counts.sum()
        index = 0
        for seg_no, spec in enumerate(arch.segments):
            for _ in range(counts[seg_no]):
                self.pages.append(self._page(rng, index, seg_no, spec))
                index += 1
        share: float | np.ndarray = arch.cron_share
        if arch.cron_share_max and len(self.cron_nights):
            # each night's share of touched rows, from a stream of its own
            nights = np.random.default_rng(_stable_seed(seed, arch.name, "cron"))
            share = nights.uniform(arch.cron_share, arch.cron_share_max, len(self.cron_nights))
            share = share[:, None]
        self.cron_mask = (
            rng.random((len(self.cron_nights), n_pages)) < share
            if len(self.cron_nights)
            else np.zeros((0, n_pages), bool)
        )
        self.by_path = {p.path: p for p in self.pages}
        self.segment_pages: list[list[Page]] = [[] for _ in arch.segments]
        for page in self.pages:
            self.segment_pages[page.segment].append(page)

    # -- generation ---------------------------------------------------------------------

    @staticmethod
    def _regular(rng: np.random.Generator, start: float, days: float, jitter: float = 0.3):
        n = int((END - start) / (days * DAY)) + 3
        gaps = days * DAY * (1 + rng.uniform(-jitter, jitter, size=n))
        return start + rng.uniform(0, days * DAY) + np.cumsum(gaps)

    def _page(self, rng: np.random.Generator, index: int, seg_no: int, spec: SegmentSpec) -> Page:
        arch = self.archetype
        slug = "-".join(rng.choice(_WORDS, size=3))
        path = f"/{spec.name}/{slug}-{index}/"
        if spec.kind == "post" and rng.random() < 0.05:
            published = T0 + rng.uniform(HOUR, 60 * DAY)
        else:
            published = T0 - rng.uniform(1, HISTORY_DAYS) * DAY
        if arch.release == "deploy":
            # A static site publishes a new page at the next deploy too.
            at = int(np.searchsorted(self.deploys, published, side="left"))
            published = float(self.deploys[at]) if at < len(self.deploys) else END + DAY
        base = published
        u = rng.random()
        hot = u < 0.05
        if hot:
            rate = rng.uniform(0.5, 2.0)
        elif u < 0.25:
            rate = 0.0
        else:
            rate = float(min(2.0, np.exp(rng.normal(np.log(1 / 60), 1.5))))
        if arch.bulk_import_share and not hot and rng.random() < arch.bulk_import_share:
            # An archive imported in bulk: never edited since the import.
            published = self.import_date - rng.uniform(30, 1500) * DAY
            base = self.import_date
            rate = 0.0
        n_edits = rng.poisson(rate * (END - base) / DAY) if rate > 0 else 0
        authored = np.sort(rng.uniform(base, END, size=n_edits))
        if arch.burst_share and n_edits:
            authored = self._bursts(authored, index)
            n_edits = len(authored)
        if arch.release == "deploy":
            at = np.searchsorted(self.deploys, authored, side="left")
            last = len(self.deploys) - 1
            live = np.where(at <= last, self.deploys[np.minimum(at, last)], np.inf)
        else:
            live = authored.copy()
        probs = (0.45, 0.35, 0.1, 0.1) if spec.kind == "product" else (0.8, 0.0, 0.05, 0.15)
        kinds = rng.choice(len(KINDS), size=n_edits, p=probs).astype(np.int8)
        reported = rng.random(n_edits) < arch.report_share
        comment_rate = (0.3 if arch.noisy else 0.05) if spec.kind == "post" else 0.0
        n_comments = rng.poisson(comment_rate * (END - published) / DAY)
        comments = np.sort(rng.uniform(published, END, size=n_comments))
        has_lastmod = spec.lastmod != "partial" or rng.random() < arch.partial_share
        cumulative = np.cumsum(np.eye(len(KINDS), dtype=np.int32)[kinds], axis=0)
        return Page(
            index=index,
            segment=seg_no,
            path=path,
            title=" ".join(w.capitalize() for w in slug.split("-")),
            published=float(published),
            base=float(base),
            rate=float(rate),
            hot=bool(hot),
            live=live,
            authored=authored,
            kinds=kinds,
            reported=reported,
            comments=comments,
            has_lastmod=bool(has_lastmod),
            cron_offset=float(rng.uniform(0, 600)),
            cumulative=cumulative.reshape(-1, len(KINDS)),
        )

    def _bursts(self, authored: np.ndarray, index: int) -> np.ndarray:
        """``burst_share`` of the edits followed by a second one 1-10 h later, when that is
        still the same local day (``local_offset_hours``); drawn from a stream of the page's
        own, so the site's other draws are those of an archetype without bursts."""
        arch = self.archetype
        rng = np.random.default_rng(_stable_seed(self.seed, arch.name, "burst", str(index)))
        chosen = rng.random(len(authored)) < arch.burst_share
        second = authored + rng.uniform(HOUR, 10 * HOUR, len(authored))
        local = arch.local_offset_hours * HOUR
        same_day = np.floor((second + local) / DAY) == np.floor((authored + local) / DAY)
        extra = second[chosen & same_day & (second < END)]
        return np.sort(np.concatenate((authored, extra)))

    def run_time(self, day: int) -> float:
        """The virtual time of this site's run ``day`` (at its archetype's ``run_hour``)."""
        return run_time(day, self.archetype.run_hour)

    # -- ground truth -------------------------------------------------------------------

    def exists(self, page: Page, t: float) -> bool:
        return page.published <= t

    def version(self, page: Page, t: float) -> int:
        """v(i, t): significant edits live at ``t`` (0 = as published; -1 = not published)."""
        if page.published > t:
            return -1
        return int(np.searchsorted(page.live, t, side="right"))

    def kind_counts(self, page: Page, t: float) -> tuple[int, ...]:
        """Live edits per kind at ``t`` (what the rendered content depends on)."""
        k = int(np.searchsorted(page.live, t, side="right"))
        if k == 0:
            return (0,) * len(KINDS)
        return tuple(int(x) for x in page.cumulative[k - 1])

    def events(self, page: Page, until: float = END) -> list[tuple[float, str, bool]]:
        """The page's ground-truth log ``(t, kind, significant)`` from publication to ``until``."""
        arch = self.archetype
        log: list[tuple[float, str, bool]] = [(page.published, "publish", True)]
        for live, authored, kind in zip(page.live, page.authored, page.kinds, strict=True):
            if arch.release == "deploy":
                log.append((float(authored), "draft", False))
                if np.isfinite(live):
                    log.append((float(live), f"deploy:{KINDS[kind]}", True))
            else:
                log.append((float(live), f"edit:{KINDS[kind]}", True))
        log.extend((float(t), "comment", False) for t in page.comments)
        log.extend((float(t), "template", False) for t in self.templates)
        log.extend((float(t), "deploy", False) for t in self.deploys)
        spec = self.archetype.segments[page.segment]
        if spec.lastmod == "cron":
            touched = self.cron_nights[self.cron_mask[:, page.index]]
            log.extend((float(t + page.cron_offset), "cron_touch", False) for t in touched)
        return sorted(e for e in log if page.published <= e[0] <= until)

    def change_times(self, page: Page) -> np.ndarray:
        """The distinct times at which the page's significant content changed (incl. publish)."""
        live = page.live[np.isfinite(page.live)]
        return np.unique(np.concatenate(([page.published], live)))

    # -- what the site says -------------------------------------------------------------

    def sitemap_time(self, t: float) -> float:
        """The moment the sitemap served at ``t`` was built (``t`` unless lagged)."""
        if not len(self.rebuilds):
            return t
        k = int(np.searchsorted(self.rebuilds, t, side="right"))
        return float(self.rebuilds[k - 1]) if k else t

    def _last(self, times: np.ndarray, t: float) -> float:
        k = int(np.searchsorted(times, t, side="right"))
        return float(times[k - 1]) if k else float("nan")

    def true_modified(self, page: Page, t: float) -> float:
        """The CMS's honest modification time: the last live edit, else the row's creation."""
        last = self._last(page.live, t)
        return page.base if np.isnan(last) else max(last, page.base)

    def authored_modified(self, page: Page, t: float) -> float:
        """A static site's front-matter date: authoring time of the last edit live at ``t``."""
        k = int(np.searchsorted(page.live, t, side="right"))
        return float(page.authored[k - 1]) if k else page.base

    def stale_modified(self, page: Page, t: float) -> float:
        """The stale field: the last *reported* edit (``stale_partial``), else the creation."""
        live = page.live[page.reported]
        last = self._last(live, t)
        return page.base if np.isnan(last) else max(last, page.base)

    def last_deploy(self, t: float) -> float:
        return self._last(self.deploys, t)

    def lastmod_value(self, page: Page, t: float) -> float:
        """The lastmod the sitemap built at ``t`` states for ``page`` (NaN: none).

        Timestamps are epoch seconds (truncated to the second); date-only modes give
        the midnight (UTC) of the date written.
        """
        arch = self.archetype
        mode = arch.segments[page.segment].lastmod
        if mode == "absent" or (mode == "partial" and not page.has_lastmod):
            return float("nan")
        if mode in ("honest", "partial"):
            value = self.true_modified(page, t)
        elif mode == "honest_date":
            local = self.true_modified(page, t) + arch.local_offset_hours * HOUR
            return float(np.floor(local / DAY) * DAY)
        elif mode == "gen_request":
            value = t
        elif mode == "gen_daily":
            return float(np.floor(t / DAY) * DAY)
        elif mode == "deploy":
            value = self.last_deploy(t)
        elif mode == "pubdate":
            value = page.published
        elif mode == "stale_partial":
            value = self.stale_modified(page, t)
        elif mode == "template":
            value = max(self.true_modified(page, t), self._last(self.templates, t))
        elif mode == "cron":
            touched = self.cron_nights[self.cron_mask[:, page.index]] + page.cron_offset
            value = float(np.nanmax([self.true_modified(page, t), self._last(touched, t)]))
        elif mode == "tz_shift":
            value = self.true_modified(page, t) + arch.tz_hours * HOUR
        else:
            raise ValueError(f"unknown lastmod mode {mode!r}")
        return float(np.floor(value))

    def lastmod_format(self, page: Page) -> str:
        """``ts`` (``+00:00``), ``tsz`` (``Z``) or ``date``."""
        mode = self.archetype.segments[page.segment].lastmod
        if mode in ("honest_date", "gen_daily"):
            return "date"
        return "tsz" if mode == "tz_shift" else "ts"

    def lastmod_raw(self, page: Page, t: float) -> str | None:
        value = self.lastmod_value(page, t)
        if np.isnan(value):
            return None
        form = self.lastmod_format(page)
        if form == "date":
            return day_string(value)
        return iso(value, z=form == "tsz")

    def lastmod_upper(self, page: Page, value: float) -> float:
        """Upper bound of the lastmod interval (docs/verification.md): what ``naive_granular``
        compares."""
        if np.isnan(value):
            return float("nan")
        if self.lastmod_format(page) == "date":
            return value + DAY + TZ_SLACK
        return value + 1 + TAU

    def page_modified(self, page: Page, t: float) -> float:
        """The dateModified the page itself declares at ``t`` (``stale``: the stale field,
        on the segments whose lastmod is that field; the others' pages are true)."""
        mode = self.archetype.page_modified
        if mode == "now":
            return t
        if mode == "stale":
            if self.archetype.segments[page.segment].lastmod != "stale_partial":
                return self.true_modified(page, t)
            return self.stale_modified(page, t)
        if mode == "authored":
            return self.authored_modified(page, t)
        return self.true_modified(page, t)

    def http_last_modified(self, page: Page, t: float) -> float | None:
        mode = self.archetype.http_last_modified
        if mode == "absent":
            return None
        if mode == "now":
            return t
        if mode == "deploy":
            value = self.last_deploy(t)
            return None if np.isnan(value) else value
        if mode == "stale":
            return self.stale_modified(page, t)
        return self.true_modified(page, t)

    def template_version(self, t: float) -> int:
        return int(np.searchsorted(self.templates, t, side="right"))

    def comment_count(self, page: Page, t: float) -> int:
        return int(np.searchsorted(page.comments, t, side="right"))

    def in_sitemap(self, page: Page, t: float) -> bool:
        return page.published <= self.sitemap_time(t)

    # -- matrices for the policies ------------------------------------------------------

    def timeline(self, times: Sequence[float]) -> Timeline:
        """Ground truth and sitemap state of every page at each run time ([runs, pages])."""
        runs = np.asarray(times, dtype=float)
        n_runs, n = len(runs), len(self.pages)
        version = np.full((n_runs, n), -1, dtype=np.int64)
        listed = np.zeros((n_runs, n), dtype=bool)
        lm_value = np.full((n_runs, n), np.nan)
        lm_upper = np.full((n_runs, n), np.nan)
        states = [self.sitemap_time(t) for t in runs]
        for page in self.pages:
            i = page.index
            alive = runs >= page.published
            counts = np.searchsorted(page.live, runs, side="right")
            version[:, i] = np.where(alive, counts, -1)
            for d, (t, s) in enumerate(zip(runs, states, strict=True)):
                if page.published <= s:
                    listed[d, i] = True
                    value = self.lastmod_value(page, s if self._state_based(page) else t)
                    lm_value[d, i] = value
                    lm_upper[d, i] = self.lastmod_upper(page, value)
        segments = np.array([p.segment for p in self.pages])
        return Timeline(runs, version, listed, lm_value, lm_upper, segments)

    def _state_based(self, page: Page) -> bool:
        # gen_request stamps the request time even on a lagged sitemap (none here).
        return self.archetype.segments[page.segment].lastmod != "gen_request"


@dataclass
class Timeline:
    """``[runs, pages]`` arrays: live version (-1: not published), listed in the sitemap,
    stated lastmod (NaN: none) and its interval upper bound; plus each page's segment."""

    times: np.ndarray
    version: np.ndarray
    listed: np.ndarray
    lm_value: np.ndarray
    lm_upper: np.ndarray
    segments: np.ndarray


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=float)


_WORD_TEXT = """
    alpine amber anchor arbor atlas aurora basil beacon birch blossom bramble breeze cactus
    canyon cedar cinder citrus clover cobalt comet coral cosmos crimson crystal cypress dahlia
    delta dune ember falcon fern fjord flint forest frost garnet glacier granite grove harbor
    hazel heron horizon indigo iris island ivory jasmine juniper kelp lagoon lantern laurel
    lemon lilac linen lotus lunar maple marble meadow mesa mint mist moss nectar nova oak ocean
    olive onyx orchid pearl pebble pepper pine plum prairie quartz quill raven reef ridge river
    saffron sage sapphire shadow sierra silver slate spruce stone summit sunset thistle thunder
    tide timber topaz tulip tundra valley velvet violet willow winter zephyr"""
_WORDS = np.array(_WORD_TEXT.split())
