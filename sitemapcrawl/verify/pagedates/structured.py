"""Page dates from structured data: JSON-LD, microdata and RDFa read by extruct.

docs/verification.md, "Page dates" (the main entity). One syntax at a time
(:func:`_run_extruct`), a tolerant re-read of broken JSON-LD blocks one by one
(:func:`_jsonld_fallback`), RDFa's flat node list made a tree (:func:`_rdfa_to_tree`), then
every entity scored as the page's main entity or not (:func:`_walk`) and its
``dateModified`` / ``datePublished`` made candidates (:func:`_structured_candidates`).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import jstyleson  # type: ignore[import-untyped, unused-ignore]

from sitemapcrawl.verify.pagedates.declared import _Cand, _evidence

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Iterable, Iterator

    from sitemapcrawl.sitemaps.dates import LastMod

__all__ = [
    "EXCLUDED_KEYS",
    "EXCLUDED_TYPES",
    "MAIN_TYPES",
]


logger = logging.getLogger(__name__)


#: schema.org types that can be the page's main entity.
MAIN_TYPES: frozenset[str] = frozenset(
    {
        "WebPage", "ItemPage", "AboutPage", "CollectionPage", "FAQPage", "QAPage",
        "ProfilePage", "ContactPage", "SearchResultsPage", "MedicalWebPage", "RealEstateListing",
        "Article", "NewsArticle", "BlogPosting", "TechArticle", "Report", "ScholarlyArticle",
        "LiveBlogPosting", "SocialMediaPosting", "DiscussionForumPosting", "AnalysisNewsArticle",
        "OpinionNewsArticle", "ReportageNewsArticle", "ReviewNewsArticle", "Question",
        "Product", "Recipe", "Event", "JobPosting", "HowTo", "Course", "Dataset", "Book",
        "SoftwareApplication", "Movie", "CreativeWork",
    }
)  # fmt: skip


#: Types whose dates are never the page's (unless the entity also has a MAIN_TYPES type).
EXCLUDED_TYPES: frozenset[str] = frozenset(
    {
        "Comment", "Answer", "Review", "Person", "Organization", "NewsMediaOrganization",
        "ImageObject", "VideoObject", "AudioObject", "MediaObject", "Offer", "AggregateOffer",
        "Rating", "AggregateRating", "BreadcrumbList", "ListItem", "ItemList", "WebSite",
        "SiteNavigationElement", "WPHeader", "WPFooter", "WPSideBar", "Brand", "Place",
        "PostalAddress", "SearchAction",
    }
)  # fmt: skip


#: Properties whose values (and everything below) are never the main entity.
EXCLUDED_KEYS: frozenset[str] = frozenset(
    {
        "author", "creator", "contributor", "editor", "publisher", "sourceOrganization",
        "copyrightHolder", "sponsor", "funder", "comment", "comments", "review", "reviews",
        "suggestedAnswer", "acceptedAnswer", "offers", "breadcrumb", "itemListElement",
        "relatedLink", "isRelatedTo", "isSimilarTo", "citation", "mentions", "isBasedOn",
        "image", "video", "logo", "thumbnail", "potentialAction", "subjectOf", "workExample",
    }
)  # fmt: skip


_MAIN_KEYS = frozenset({"mainEntity", "mainEntityOfPage"})


_SCHEMA_PREFIXES = ("schema:", "http://schema.org/", "https://schema.org/")


_SOURCE_RANK = {"json-ld": 0, "microdata": 1, "rdfa": 2}


_MAX_NODES = 5000


_MAX_DEPTH = 32


_MAX_VALUES = 20


_MAX_FALLBACK_BLOCK = 512 * 1024


_PRECISION_CHARS = {"year": 4, "month": 7, "day": 10, "minute": 16, "second": 19, "fraction": 26}


def _run_extruct(document: Any, base: str, syntax: str, problems: set[str]) -> list[Any] | None:
    """One syntax at a time, so that a failure loses only that syntax."""
    # imported at the first page read: extruct and its parsers (rdflib, mf2py, html5lib)
    # cost about 30 MB that a discovery-only crawl never uses (docs/benchmarks.md)
    import extruct  # type: ignore[import-untyped, unused-ignore]  # noqa: PLC0415

    try:
        out = extruct.extract(
            document, base_url=base, syntaxes=[syntax], uniform=True, errors="strict"
        )
    # extruct and its parsers (json, jstyleson, pyRdfa, rdflib) raise anything.
    except Exception:
        logger.debug("extruct failed on %s for %s", syntax, base, exc_info=True)
        problems.add(f"{syntax}_invalid")
        return None
    items = out.get(syntax) if isinstance(out, dict) else None
    return items if isinstance(items, list) else []


_CDATA_RE = re.compile(r"(?://\s*|/\*\s*)?(?:<!\[CDATA\[|\]\]>)(?:\s*\*/)?")


_HTML_COMMENT_RE = re.compile(r"<!--|-->")


_DOUBLE_COMMA_RE = re.compile(r",(\s*,)+")


def _jsonld_fallback(root: Any) -> Iterator[Any]:
    """Each JSON-LD block on its own, after a tolerant cleanup; broken ones are skipped."""
    for script in root.xpath("//script[@type]"):
        if script.get("type", "").split(";")[0].strip().lower() != "application/ld+json":
            continue
        text = (script.text or "")[:_MAX_FALLBACK_BLOCK]
        if not text.strip():
            continue
        data = _loads_tolerant(text)
        if isinstance(data, list):
            yield from data
        elif isinstance(data, dict):
            yield data


#: A JSON-LD ``<script>`` block in raw HTML text (the tree builder never saw it).
_JSONLD_BLOCK_RE = re.compile(
    r"<script\b[^>]*?\btype\s*=\s*[\"']?\s*application/ld\+json\b[^>]*>(.*?)</script\s*>",
    re.IGNORECASE | re.DOTALL,
)


def jsonld_past(text: str, cut: int) -> list[Any]:
    """The JSON-LD blocks of a page's whole ``text`` that the tree, built from its first
    ``cut`` characters, did not hold whole: a page whose head is heavier than the parse cap
    (inlined styles, a framework's state) keeps its ``dateModified``.

    >>> page = "<p>" + "x" * 50 + '<script type="application/ld+json">{"dateModified":'
    >>> page += ' "2024-05-06"}</script>'
    >>> jsonld_past(page, 60), jsonld_past(page, len(page))
    ([{'dateModified': '2024-05-06'}], [])
    """
    found: list[Any] = []
    for match in _JSONLD_BLOCK_RE.finditer(text, max(0, cut - _MAX_FALLBACK_BLOCK)):
        if match.end() <= cut:
            continue  # in the tree: read with the rest
        data = _loads_tolerant(match.group(1)[:_MAX_FALLBACK_BLOCK])
        if isinstance(data, list):
            found.extend(data)
        elif isinstance(data, dict):
            found.append(data)
    return found


def _loads_tolerant(text: str) -> Any:
    try:
        return json.loads(text, strict=False)
    except (ValueError, RecursionError):
        pass
    cleaned = _HTML_COMMENT_RE.sub("", _CDATA_RE.sub("", text))
    try:
        cleaned = jstyleson.dispose(_DOUBLE_COMMA_RE.sub(",", cleaned)).strip().rstrip(";")
        return json.loads(cleaned, strict=False)
    except (ValueError, RecursionError, IndexError):
        pass
    # Trailing garbage or several concatenated objects: keep what decodes.
    decoder = json.JSONDecoder(strict=False)
    items: list[Any] = []
    pos = 0
    while pos < len(cleaned) and len(items) < _MAX_VALUES:
        try:
            item, end = decoder.raw_decode(cleaned, pos)
        except (ValueError, RecursionError):
            break
        items.append(item)
        pos = end
        while pos < len(cleaned) and cleaned[pos] in " \t\r\n;,":
            pos += 1
    return items


def _rdfa_to_tree(items: list[Any]) -> list[dict[str, Any]]:
    """Turn extruct's flat RDFa node list into nested dicts with schema.org local keys."""
    by_id = {n["@id"]: n for n in items if isinstance(n, dict) and isinstance(n.get("@id"), str)}
    referenced: set[str] = set()
    for node in by_id.values():
        for key, values in node.items():
            if key.startswith("@") or not isinstance(values, list):
                continue
            for v in values:
                if isinstance(v, dict) and isinstance(v.get("@id"), str) and v["@id"] in by_id:
                    referenced.add(v["@id"])

    def convert(node: dict[str, Any], path: frozenset[str]) -> dict[str, Any]:
        node_id = node.get("@id", "")
        out: dict[str, Any] = {"@type": node.get("@type", [])}
        if isinstance(node_id, str) and not node_id.startswith("_:"):
            out["@id"] = node_id
        for key, values in node.items():
            if key.startswith("@") or not key.startswith(_SCHEMA_PREFIXES):
                continue
            converted: list[Any] = []
            for v in values if isinstance(values, list) else [values]:
                if isinstance(v, dict) and "@value" in v:
                    converted.append(v["@value"])
                elif isinstance(v, dict) and v.get("@id") in by_id and v["@id"] not in path:
                    child = by_id[v["@id"]]
                    if len(path) < _MAX_DEPTH:
                        converted.append(convert(child, path | {v["@id"]}))
                elif isinstance(v, dict) and "@id" in v:
                    converted.append(v["@id"])
            out[_local(key)] = converted
        return out

    if len(by_id) > _MAX_NODES:
        return []
    return [convert(n, frozenset({i})) for i, n in by_id.items() if i not in referenced]


@dataclass(slots=True)
class _Node:
    data: dict[str, Any]
    source: str
    score: int
    excluded: bool
    order: int


def _local(key: str) -> str:
    for prefix in _SCHEMA_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _types(obj: dict[str, Any]) -> set[str]:
    raw = obj.get("@type", obj.get("type"))
    values = raw if isinstance(raw, list) else [raw]
    return {re.split(r"[/#:]", v.strip())[-1] for v in values if isinstance(v, str) and v.strip()}


def _norm_url(value: object, base: str) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parts = urlsplit(urljoin(base, value.strip()))
        host = (parts.hostname or "").removeprefix("www.")
        port = parts.port
    except ValueError:
        return None
    if port not in (None, 80, 443):
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    return f"{host}{path}?{parts.query}" if parts.query else f"{host}{path}"


def _ids(obj: dict[str, Any]) -> Iterator[object]:
    for key in ("@id", "url", "id", "mainEntityOfPage", "isPartOf"):
        for value in _as_list(obj.get(key)):
            if isinstance(value, dict):
                yield value.get("@id")
                yield value.get("url")
            else:
                yield value


def _as_list(value: object) -> list[Any]:
    if value is None:
        return []
    return value[:_MAX_VALUES] if isinstance(value, list) else [value]


def _walk(
    items: Iterable[Any], source: str, base: str, urls: frozenset[str], out: list[_Node]
) -> None:
    """Record every entity (dict) with its main-entity score; iterative and bounded."""
    # (object, depth, parent key, parent matched the page URL, parent excluded, level)
    stack: list[tuple[Any, int, str | None, bool, bool, int]] = [
        (item, 0, None, False, False, 0) for item in reversed(list(items)[:_MAX_NODES])
    ]
    while stack and len(out) < _MAX_NODES:
        obj, depth, pkey, pmatch, pexcl, level = stack.pop()
        if level > _MAX_DEPTH:
            continue
        if isinstance(obj, list):
            stack.extend(
                (v, depth, pkey, pmatch, pexcl, level + 1) for v in reversed(obj[:_MAX_NODES])
            )
            continue
        if not isinstance(obj, dict) or "@value" in obj:
            continue
        types = _types(obj)
        main_type = bool(types & MAIN_TYPES)
        match = (pmatch and pkey == "mainEntity") or any(
            _norm_url(v, base) in urls for v in _ids(obj)
        )
        excluded = (
            pexcl or pkey in EXCLUDED_KEYS or (bool(types & EXCLUDED_TYPES) and not main_type)
        )
        top = depth == 0 or pkey in _MAIN_KEYS
        score = 3 * match + 2 * main_type + top - 5 * excluded
        out.append(_Node(obj, source, score, excluded, len(out)))
        children: list[tuple[Any, int, str | None, bool, bool, int]] = []
        for key, value in obj.items():
            if not isinstance(value, dict | list) or key == "@context":
                continue
            if key == "@graph":
                children.append((value, depth, None, False, excluded, level + 1))
            else:
                children.append((value, depth + 1, _local(str(key)), match, excluded, level + 1))
        stack.extend(reversed(children))


def _structured_candidates(
    nodes: list[_Node],
    now: dt.datetime | None,
    mod: list[_Cand],
    pub: list[_Cand],
    problems: set[str],
) -> None:
    for field, out, kind in (
        ("dateModified", mod, "modified"),
        ("datePublished", pub, "published"),
    ):
        found: list[tuple[_Node, object]] = []
        for node in nodes:
            for key, value in node.data.items():
                if isinstance(key, str) and _local(key) == field:
                    found.extend((node, raw) for raw in _date_values(value))
        best = max((n.score for n, _ in found if not n.excluded), default=0)
        main_values: list[LastMod] = []
        for node, raw in found:
            main = not node.excluded and best > 0 and node.score == best
            ev = _evidence(node.source, field, raw, kind=kind, main=main, now=now)
            if ev is None:
                continue
            out.append(_Cand(ev, 0 if main else 4, _SOURCE_RANK[node.source], node.order))
            if main and kind == "modified" and ev.value is not None:
                main_values.append(ev.value)
        if _disagree(main_values):
            problems.add("conflicting_modified")


def _date_values(value: object) -> Iterator[object]:
    for item in _as_list(value):
        v = item.get("@value") if isinstance(item, dict) else item
        if isinstance(v, str | int | float) and not isinstance(v, bool):
            yield v


def _disagree(values: list[LastMod]) -> bool:
    valid = [v for v in values if v.value is not None and v.precision is not None]
    for i, a in enumerate(valid):
        for b in valid[i + 1 :]:
            assert a.value is not None
            assert b.value is not None
            assert a.precision is not None
            assert b.precision is not None
            n = min(_PRECISION_CHARS[a.precision], _PRECISION_CHARS[b.precision])
            fmt = "%Y-%m-%dT%H:%M:%S.%f"
            if a.value.strftime(fmt)[:n] != b.value.strftime(fmt)[:n]:
                return True
    return False
