"""Render a simulated site at a virtual time: robots.txt, sitemap index, child sitemaps, pages.

Everything is a pure function of ``(site, t)`` except the per-request noise of
noisy sites (widgets, counters, CSRF tokens, ad-slot ids), which depends on a
request number as well. Pages carry their dates the way the segment's
``evidence`` says (see :class:`bench.simweb.model.SegmentSpec`).
"""

from __future__ import annotations

import hashlib
import json
import random
from html import escape
from typing import TYPE_CHECKING

import numpy as np

from .model import _WORDS, KINDS, T0, day_string, iso

if TYPE_CHECKING:
    from .model import Page, Site

_XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
_WORD_LIST = [str(w) for w in _WORDS]


def etag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'


def robots(origin: str) -> bytes:
    return (
        f"User-agent: *\nAllow: /\nDisallow: /wp-admin/\n\nSitemap: {origin}/sitemap_index.xml\n"
    ).encode()


def _format_lastmod(site: Site, page: Page, value: float) -> str:
    form = site.lastmod_format(page)
    if form == "date":
        return day_string(value)
    return iso(value, z=form == "tsz")


def sitemap_entries(site: Site, seg_no: int, t: float) -> list[tuple[Page, str | None]]:
    """The pages a child sitemap lists at ``t`` and their raw lastmod (None: no element)."""
    state = site.sitemap_time(t)
    out = []
    for page in site.segment_pages[seg_no]:
        if page.published > state:
            continue
        at = t if site.archetype.segments[seg_no].lastmod == "gen_request" else state
        out.append((page, site.lastmod_raw(page, at)))
    return out


def sitemap_index(site: Site, origin: str, t: float) -> bytes:
    lines = [_XML_HEAD, f"<sitemapindex {_NS}>\n"]
    state = site.sitemap_time(t)
    for seg_no, spec in enumerate(site.archetype.segments):
        values = [
            site.lastmod_value(p, t if spec.lastmod == "gen_request" else state)
            for p in site.segment_pages[seg_no]
            if p.published <= state
        ]
        present = [v for v in values if not np.isnan(v)]
        lines.append(f"  <sitemap><loc>{origin}{spec.path}</loc>")
        if present:
            page = site.segment_pages[seg_no][0]
            lines.append(f"<lastmod>{_format_lastmod(site, page, max(present))}</lastmod>")
        lines.append("</sitemap>\n")
    lines.append("</sitemapindex>\n")
    return "".join(lines).encode()


def sitemap(site: Site, seg_no: int, origin: str, t: float) -> bytes:
    lines = [_XML_HEAD, f"<urlset {_NS}>\n"]
    for page, raw in sitemap_entries(site, seg_no, t):
        lines.append(f"  <url><loc>{origin}{page.path}</loc>")
        if raw is not None:
            lines.append(f"<lastmod>{raw}</lastmod>")
        lines.append("</url>\n")
    lines.append("</urlset>\n")
    return "".join(lines).encode()


def sitemap_last_modified(site: Site, t: float) -> float | None:
    mode = site.archetype.sitemap_last_modified
    if mode == "rebuild":
        return site.sitemap_time(t)
    if mode == "deploy":
        value = site.last_deploy(t)
        return None if np.isnan(value) else value
    return None


# --------------------------------------------------------------------------------------
# Pages
# --------------------------------------------------------------------------------------


def _rng(site: Site, page: Page, *parts: object) -> random.Random:
    return random.Random(
        f"{site.seed}:{site.archetype.name}:{page.index}:" + ":".join(map(str, parts))
    )


def _paragraphs(site: Site, page: Page, version: int) -> list[str]:
    rng = _rng(site, page, "text", version)
    out = []
    for _ in range(rng.randint(3, 5)):
        words = rng.choices(_WORD_LIST, k=rng.randint(40, 80))
        out.append(" ".join(words).capitalize() + ".")
    return out


def _linkable(site: Site) -> list[Page]:
    """Pages other pages link to: those published before the simulation starts, so that a
    link never points at a page that does not exist yet (a 404 no real site would have)."""
    return [p for p in site.pages if p.published < T0]


def page_dates(site: Site, page: Page, t: float) -> tuple[str, str]:
    """(datePublished, dateModified) as the page writes them."""
    arch = site.archetype
    offset = arch.local_offset_hours if arch.page_offset_hours is None else arch.page_offset_hours
    return iso(page.published, offset), iso(site.page_modified(page, t), offset)


def render_page(site: Site, page: Page, origin: str, t: float, request_no: int = 0) -> bytes:
    """The page's HTML at ``t``. Only noisy sites use ``request_no``."""
    arch = site.archetype
    spec = arch.segments[page.segment]
    url = origin + page.path
    counts = dict(zip(KINDS, site.kind_counts(page, t), strict=True))
    published, modified = page_dates(site, page, t)
    template = site.template_version(t)
    title = escape(page.title)
    site_name = f"Sim {arch.name}"
    sd_rng = _rng(site, page, "sd", counts["sd"])
    keywords = ", ".join(sd_rng.sample(_WORD_LIST, 3))
    price = None
    if spec.kind == "product":
        price = f"{19 + _rng(site, page, 'price', counts['price']).randint(0, 400) / 10:.2f}"

    head = [
        '<meta charset="utf-8">',
        f"<title>{title} - {site_name}</title>",
        f'<link rel="canonical" href="{url}">',
        f'<link rel="stylesheet" href="/assets/theme.css?ver=5.{template}">',
        f'<meta property="og:title" content="{title}">',
        f'<meta property="og:url" content="{url}">',
        '<meta property="og:type" content="article">',
    ]
    if spec.evidence in ("graph", "og"):
        head.append(f'<meta property="article:published_time" content="{published}">')
        head.append(f'<meta property="article:modified_time" content="{modified}">')
    if spec.evidence == "og":
        head.append(f'<meta property="article:tag" content="{keywords}">')
    data = _jsonld(
        spec.evidence,
        site,
        page,
        url=url,
        origin=origin,
        published=published,
        modified=modified,
        keywords=keywords,
        t=t,
    )
    if data is not None:
        head.append(
            '<script type="application/ld+json">'
            + json.dumps(data, separators=(",", ":"))
            + "</script>"
        )

    article_attrs = ""
    micro = []
    if spec.evidence == "microdata":
        article_attrs = ' itemscope itemtype="https://schema.org/Product"'
        micro = [
            f'<meta itemprop="name" content="{title}">',
            f'<meta itemprop="datePublished" content="{published}">',
            f'<meta itemprop="dateModified" content="{modified}">',
            f'<meta itemprop="keywords" content="{keywords}">',
        ]
    body = [f"<article{article_attrs}>", *micro, f"<h1>{title}</h1>"]
    body.extend(f"<p>{p}</p>" for p in _paragraphs(site, page, counts["text"]))
    if price is not None:
        offer = (
            ' itemprop="offers" itemscope itemtype="https://schema.org/Offer"'
            if spec.evidence == "microdata"
            else ""
        )
        body.append(
            f'<div class="price"{offer}>Price: <span itemprop="price">{price}</span>'
            ' <span itemprop="priceCurrency">EUR</span></div>'
        )
    links_rng = _rng(site, page, "links", counts["links"])
    body.append('<ul class="further-reading">')
    body.extend(
        f'<li><a href="{target.path}">{escape(target.title)}</a></li>'
        for target in links_rng.sample(_linkable(site), 3)
    )
    body.append("</ul>")
    noise = random.Random(f"{site.seed}:{page.index}:{t}:{request_no}") if arch.noisy else None
    if noise is not None:
        views = noise.randint(1_000, 90_000)
        body.append(
            f'<p class="stats">{views:,} views · updated {noise.randint(2, 23)} hours ago</p>'
        )
    body.append("</article>")
    n_comments = site.comment_count(page, t)
    if spec.kind == "post":
        body.append(f'<section id="comments" class="comments"><h2>{n_comments} comments</h2>')
        crng = _rng(site, page, "comments")
        for k in range(min(n_comments, 20)):
            words = " ".join(crng.choices(_WORD_LIST, k=12))
            body.append(f'<div class="comment" id="comment-{k}"><p>{words}</p></div>')
        body.append("</section>")

    aside = ['<aside class="sidebar"><h2>Popular now</h2><ul>']
    if noise is not None:
        picks = noise.sample(_linkable(site), 5)
    else:
        picks = _rng(site, page, "popular", template).sample(_linkable(site), 5)
    aside.extend(f'<li><a href="{x.path}">{escape(x.title)}</a></li>' for x in picks)
    aside.append("</ul></aside>")
    extra = []
    if noise is not None:
        token = f"{noise.getrandbits(128):032x}"
        slot = f"{noise.getrandbits(48):012x}"
        extra = [
            '<form class="newsletter" method="post" action="/subscribe">'
            f'<input type="hidden" name="csrf_token" value="{token}">'
            '<input type="email" name="email"></form>',
            f'<div class="ad" id="ad-slot-{slot}" data-rendered="{iso(t)}"></div>',
        ]
    year = day_string(t)[:4]
    page_html = [
        "<!DOCTYPE html>",
        '<html lang="en"><head>',
        *head,
        "</head><body>",
        # Only pages the sitemaps list are linked: a link-following crawler finds no 404s.
        '<header class="site-header"><nav>'
        + " | ".join(s.name.capitalize() for s in arch.segments)
        + "</nav></header>",
        "<main>",
        *body,
        "</main>",
        *aside,
        *extra,
        f'<footer class="site-footer">&copy; 2019-{year} {site_name}. Theme build {template}.'
        "</footer>",
        "</body></html>",
    ]
    return "\n".join(page_html).encode()


def _jsonld(
    style: str,
    site: Site,
    page: Page,
    *,
    url: str,
    origin: str,
    published: str,
    modified: str,
    keywords: str,
    t: float,
) -> dict | None:
    kind = site.archetype.segments[page.segment].kind
    art_type = {"post": "BlogPosting", "doc": "TechArticle"}.get(kind, "Article")
    author = {"@type": "Person", "name": "Ada Example", "url": origin + "/author/ada/"}
    if style == "graph":
        return {
            "@context": "https://schema.org",
            "@graph": [
                {
                    "@type": "WebPage",
                    "@id": url,
                    "url": url,
                    "name": page.title,
                    "isPartOf": {"@id": origin + "/#website"},
                    "breadcrumb": {"@id": url + "#breadcrumb"},
                    "datePublished": published,
                    "dateModified": modified,
                },
                {
                    "@type": art_type,
                    "@id": url + "#article",
                    "isPartOf": {"@id": url},
                    "mainEntityOfPage": {"@id": url},
                    "headline": page.title,
                    "keywords": keywords,
                    "author": {"@id": origin + "/#/person/ada"},
                    "datePublished": published,
                    "dateModified": modified,
                },
                {
                    "@type": "BreadcrumbList",
                    "@id": url + "#breadcrumb",
                    "itemListElement": [
                        {"@type": "ListItem", "position": 1, "name": "Home", "item": origin + "/"}
                    ],
                },
                {"@type": "WebSite", "@id": origin + "/#website", "url": origin + "/"},
                {"@type": "Person", "@id": origin + "/#/person/ada", "name": "Ada Example"},
            ],
        }
    if style == "single":
        n = site.comment_count(page, t)
        data: dict = {
            "@context": "https://schema.org",
            "@type": art_type,
            "headline": page.title,
            "keywords": keywords,
            "mainEntityOfPage": {"@type": "WebPage", "@id": url},
            "author": author,
            "datePublished": published,
            "dateModified": modified,
        }
        if n:
            last = float(page.comments[n - 1])
            data["comment"] = [{"@type": "Comment", "dateModified": iso(last), "text": "Nice."}]
        return data
    if style == "mainentity":
        return {
            "@context": "https://schema.org",
            "@type": "WebPage",
            "@id": url,
            "name": page.title,
            "mainEntity": {
                "@type": art_type,
                "headline": page.title,
                "keywords": keywords,
                "author": author,
                "datePublished": published,
                "dateModified": modified,
            },
        }
    return None  # microdata and og: no JSON-LD


__all__ = [
    "etag",
    "page_dates",
    "render_page",
    "robots",
    "sitemap",
    "sitemap_entries",
    "sitemap_index",
    "sitemap_last_modified",
]
