"""Page dates from OpenGraph and ``<meta>`` tags: the keys and their priority.

docs/verification.md, "Page dates". OpenGraph is read by extruct (``<head>`` only; see
:mod:`.evidence`), in :data:`OPENGRAPH_MODIFIED` / :data:`OPENGRAPH_PUBLISHED` order;
:func:`_meta_candidates` is our own pass over ``<meta name|property|itemprop|http-equiv>``
and over ``<time|meta itemprop>`` outside any ``itemscope``, in :data:`META_MODIFIED` /
:data:`META_PUBLISHED` order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitemapcrawl.verify.pagedates.declared import _MAX_OTHER, _Cand, _evidence

if TYPE_CHECKING:
    import datetime as dt

__all__ = [
    "META_MODIFIED",
    "META_PUBLISHED",
    "OPENGRAPH_MODIFIED",
    "OPENGRAPH_PUBLISHED",
]


OPENGRAPH_MODIFIED: tuple[str, ...] = (
    "article:modified_time",
    "og:updated_time",
    "og:modified_time",
    "article:modified",
    "article:modified_date",
    "og:article:modified_time",
)


OPENGRAPH_PUBLISHED: tuple[str, ...] = (
    "article:published_time",
    "og:published_time",
    "article:published",
    "og:article:published_time",
)


#: ``<meta>`` keys (``name``, ``property``, ``itemprop`` or ``http-equiv``,
#: compared in lower case), in priority order. ``datemodified`` /
#: ``datepublished`` also match ``<time itemprop>`` outside an item.
META_MODIFIED: tuple[str, ...] = (
    "dcterms.modified",
    "dcterms:modified",
    "dc.date.modified",
    "dc.modified",
    "datemodified",
    "article:modified_time",
    "og:updated_time",
    "og:modified_time",
    "article:modified",
    "article:modified_date",
    "modified_time",
    "updated_time",
    "bt:moddate",
    "article.updated",
    "last-modified",
    "lastmodified",
    "last_modified",
    "lastmod",
    "modified",
    "utime",
)


META_PUBLISHED: tuple[str, ...] = (
    "dcterms.issued",
    "dcterms:issued",
    "dcterms.created",
    "dcterms:created",
    "dc.date.issued",
    "dc.date.created",
    "dc.date",
    "datepublished",
    "article:published_time",
    "og:published_time",
    "article:published",
    "published_time",
    "parsely-pub-date",
    "sailthru.date",
    "article.published",
    "citation_publication_date",
    "citation_date",
    "pubdate",
    "publishdate",
    "publish-date",
    "publish_date",
    "date",
)


def _meta_candidates(
    root: Any,
    now: dt.datetime | None,
    mod: list[_Cand],
    pub: list[_Cand],
    seen: set[tuple[str, str]],
) -> None:
    ranks = {
        **{k: ("modified", i, mod) for i, k in enumerate(META_MODIFIED)},
        **{k: ("published", i, pub) for i, k in enumerate(META_PUBLISHED)},
    }
    fields = {"datemodified": "dateModified", "datepublished": "datePublished"}
    for el in root.iter("meta", "time"):
        if len(mod) + len(pub) > 4 * _MAX_OTHER:
            break
        # An itemprop inside an item is microdata's (extruct reads it).
        if (el.tag == "time" or el.get("itemprop") is not None) and el.xpath(
            "boolean(ancestor::*[@itemscope])"
        ):
            continue
        keys = (
            [el.get("itemprop")]
            if el.tag == "time"
            else [el.get(a) for a in ("name", "property", "itemprop", "http-equiv")]
        )
        raw = (el.get("datetime") or el.text_content()) if el.tag == "time" else el.get("content")
        for key in keys:
            if not key:
                continue
            # itemprop may list several names.
            for name in key.lower().split():
                hit = ranks.get(name)
                if hit is None:
                    continue
                kind, rank, out = hit
                field = fields.get(name, name)
                ev = _evidence("meta", field, raw, kind=kind, main=True, now=now)
                if ev is None or (field, ev.raw) in seen:
                    continue
                seen.add((field, ev.raw))
                out.append(_Cand(ev, 2, rank, len(out)))
