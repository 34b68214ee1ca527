"""Lastmod verification: what a fetched page says of itself (dates, validators, fingerprint).

Pure code (lxml, w3lib, extruct; never scrapy or twisted). :func:`page_evidence`
is called once per sampled page; it never raises, whatever the bytes. The design:
docs/verification.md, "Page dates" and "Fingerprints".

Where dates come from
---------------------

* structured data read by extruct 0.18 (``json-ld``, ``microdata``, and
  ``rdfa`` when the page carries RDFa attributes, because the RDFa parser is
  about 10-60 times slower): ``dateModified`` / ``datePublished`` of every
  entity, including ``@graph`` members, nested ``mainEntity`` /
  ``mainEntityOfPage`` objects and prefixed keys (``schema:dateModified``,
  ``https://schema.org/dateModified``);
* OpenGraph, read by extruct (``<head>`` only): see :data:`OPENGRAPH_MODIFIED`
  and :data:`OPENGRAPH_PUBLISHED`;
* our own pass over ``<meta name|property|itemprop|http-equiv>`` and over
  ``<time|meta itemprop=dateModified|datePublished>`` outside any
  ``itemscope`` (which microdata ignores): see :data:`META_MODIFIED` and
  :data:`META_PUBLISHED`. Their ``source`` is ``"meta"``;
* the HTTP ``Last-Modified`` header (``source="http"``).

Main entity
-----------

Every structured-data entity is scored: +3 when its ``@id``, ``url``,
``mainEntityOfPage`` or ``isPartOf`` (fragment dropped; scheme, ``www.`` and
a trailing slash ignored) is the page URL or its ``<link rel=canonical>``, or
when it is the ``mainEntity`` of such an entity; +2 for a page-like type
(:data:`MAIN_TYPES`); +1 at the top level (a top-level object or a direct
``@graph`` member) or under ``mainEntity`` / ``mainEntityOfPage``. Entities of
an :data:`EXCLUDED_TYPES` type, under an :data:`EXCLUDED_KEYS` property
(authors, comments, reviews, offers, breadcrumbs, related items...) and
everything below them are never the main entity. Among the entities that
carry a date of a kind, the best-scoring ones (score above 0) are the main
entity. OpenGraph, ``<meta>`` and HTTP dates describe the page itself, so they
are always ``main_entity``.

Priority of modification dates (``PageEvidence.modified``)
----------------------------------------------------------

1. main-entity ``dateModified`` from structured data, latest first (a
   WebPage and its Article may disagree: the later one is the page's), then
   JSON-LD before microdata before RDFa;
2. OpenGraph, in :data:`OPENGRAPH_MODIFIED` order;
3. ``<meta>`` / orphan ``itemprop``, in :data:`META_MODIFIED` order (Dublin
   Core first: it is usually set deliberately by the CMS);
4. HTTP ``Last-Modified`` (last: it is often the render time or a deploy mtime);
5. dates of other entities (``main_entity=False``), in document order.

``best_modified`` is the first main-entity candidate that parsed, is not a
sentinel, not ``future``, not more than a day before the main published date
and not "now": minute-or-finer values within two minutes of the response
``Date`` header (or of ``now`` when there is no ``Date`` header) are dates
rendered on every request, so they are skipped, and ``now_like`` tells
whether the first eligible candidate was one. ``modified`` lists
``best_modified`` first, then the others in the order above.

Problems
--------

``not_html``, ``empty``, ``truncated`` (only the first :data:`MAX_HTML_BYTES`
were read), ``<syntax>_invalid`` (extruct failed on that syntax;
``json-ld_invalid`` also when one JSON-LD block is broken: extruct 0.18 then
drops every block of the page, so the blocks are re-read one by one with a
tolerant cleanup), ``conflicting_modified`` (main-entity structured
``dateModified`` values disagree at their common precision),
``future_modified``, ``invalid_modified`` (a main-entity value did not parse),
``modified_before_published``, ``now_modified`` (the first eligible modification date is
the render time: ``now_like``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import extruct  # type: ignore[import-untyped, unused-ignore]
import jstyleson  # type: ignore[import-untyped, unused-ignore]
import lxml.etree
import lxml.html
from w3lib.encoding import html_to_unicode

from sitemapcrawl.sitemaps.dates import LastMod, parse_feed_date, parse_lastmod

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

__all__ = [
    "EXCLUDED_KEYS",
    "EXCLUDED_TYPES",
    "MAIN_TYPES",
    "MAX_HTML_BYTES",
    "META_MODIFIED",
    "META_PUBLISHED",
    "NOW_WINDOW",
    "OPENGRAPH_MODIFIED",
    "OPENGRAPH_PUBLISHED",
    "DateEvidence",
    "PageEvidence",
    "content_fingerprint",
    "page_evidence",
]

logger = logging.getLogger(__name__)

#: Only this much of the body is parsed (bytes; characters for
#: :func:`content_fingerprint`).
MAX_HTML_BYTES = 2 * 1024 * 1024
#: A minute-or-finer date this close to the response ``Date`` is "now".
NOW_WINDOW = dt.timedelta(minutes=2)

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
_MAX_RAW = 256
_MAX_OTHER = 100
_MAX_FALLBACK_BLOCK = 512 * 1024
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SNIFF_TYPES = frozenset({"", "text/plain", "application/octet-stream", "binary/octet-stream"})
_BINARY_MAGIC = (b"%PDF", b"PK\x03\x04", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"\x1f\x8b")
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")
_PRECISION_CHARS = {"year": 4, "month": 7, "day": 10, "minute": 16, "second": 19, "fraction": 26}
_FINE = frozenset({"minute", "second", "fraction"})
_EPOCH_RE = re.compile(r"[0-9]{10}(?:[0-9]{3})?")


@dataclass(frozen=True, slots=True)
class DateEvidence:
    """One declared date of a page.

    ``source`` is ``json-ld``, ``microdata``, ``rdfa``, ``opengraph``,
    ``meta`` or ``http``; ``field`` the property (``dateModified``,
    ``article:modified_time``, ``dcterms.modified``, ``last-modified``...);
    ``raw`` the text as written (at most 256 characters); ``value`` its
    parse (``None`` only when ``raw`` is blank, which is never recorded);
    ``kind`` is ``modified`` or ``published``.
    """

    source: str
    field: str
    raw: str
    value: LastMod | None
    main_entity: bool
    kind: str


@dataclass(frozen=True, slots=True)
class PageEvidence:
    """What one fetch of a page says about its modification time and content.

    See the module documentation for the candidate order and the problems.
    """

    modified: tuple[DateEvidence, ...]
    published: tuple[DateEvidence, ...]
    best_modified: DateEvidence | None
    now_like: bool
    http_last_modified: LastMod | None
    http_date: LastMod | None
    etag: str | None
    fingerprint: str
    text_length: int
    problems: tuple[str, ...]


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def page_evidence(
    body: bytes,
    url: str,
    headers: Mapping[str, str],
    *,
    encoding: str | None = None,
    now: dt.datetime | None = None,
) -> PageEvidence:
    """Extract the declared dates, HTTP validators and content fingerprint of a page.

    ``headers`` are the response headers (any case). ``encoding`` overrides
    the detected one (Content-Type, BOM, ``<meta charset>``). ``now`` (naive
    means UTC) is the reference for the ``future`` flag, defaulting to the
    ``Date`` header, then the clock; it is also the "now" reference when
    there is no ``Date`` header. Never raises.

    >>> html = b'''<html><head><script type="application/ld+json">
    ... {"@type": "Article", "url": "https://example.com/a",
    ...  "datePublished": "2024-05-01", "dateModified": "2024-05-06T07:08:09+02:00"}
    ... </script></head><body><article><p>Hello</p></article></body></html>'''
    >>> ev = page_evidence(html, "https://example.com/a",
    ...                    {"Date": "Tue, 11 Jun 2024 10:00:00 GMT", "ETag": '"v1"'})
    >>> best = ev.best_modified
    >>> best.source, best.field, best.value.iso, best.main_entity
    ('json-ld', 'dateModified', '2024-05-06T05:08:09Z', True)
    >>> [p.value.iso for p in ev.published], ev.now_like, ev.etag, ev.problems
    (['2024-05-01T00:00:00Z'], False, '"v1"', ())
    >>> page_evidence(b"%PDF-1.4", "https://example.com/a.pdf", {}).problems
    ('not_html',)
    """
    hdrs = {str(k).strip().lower(): str(v) for k, v in headers.items()}
    http_date = parse_feed_date(hdrs.get("date"))
    if http_date is not None and http_date.value is None:
        http_date = None
    ref = _utc(now) if now is not None else None
    future_ref = ref if ref is not None else (http_date.value if http_date else None)
    http_lm = parse_feed_date(hdrs.get("last-modified"), now=future_ref)
    etag = hdrs.get("etag", "").strip() or None
    now_ref = http_date.value if http_date is not None else ref

    found = _Found(future_ref)
    problems = found.problems
    if http_lm is not None:
        found.mod.append(
            _Cand(
                DateEvidence("http", "last-modified", http_lm.raw, http_lm, True, "modified"),
                3,
                0,
                0,
            )
        )

    content_type = hdrs.get("content-type")
    fingerprint, text_length = _digest(""), 0
    if not body.strip():
        problems.add("empty")
    elif not _looks_like_html(body, content_type, encoding):
        problems.add("not_html")
        fingerprint = hashlib.blake2b(body, digest_size=16).hexdigest()
    else:
        if len(body) > MAX_HTML_BYTES:
            problems.add("truncated")
            body = body[:MAX_HTML_BYTES]
        data = _decode(body, content_type, encoding).encode("utf-8", "replace")
        root = _parse(data)
        if root is not None:
            _extract_dates(root, data, url, found)
            fingerprint, text_length = _fingerprint_tree(root)

    return _resolve(
        found,
        now_ref=now_ref,
        http_lm=http_lm,
        http_date=http_date,
        etag=etag,
        fingerprint=fingerprint,
        text_length=text_length,
    )


def content_fingerprint(html: str) -> tuple[str, int]:
    """Digest (blake2b-128, hex) and length of the page's normalised main text.

    Boilerplate (``script``, ``style``, ``nav``, ``aside``, ``form``,
    ``noscript``, ``iframe``, page-level ``header`` / ``footer``, comments,
    ad slots, comment threads, share widgets, counters, carousels, and blocks of
    related, recommended, random or popular posts, named by their class, id or
    heading) is dropped; the
    text of ``<main>``, else of the top-level ``<article>`` elements, else of
    ``<body>`` is kept, whitespace is collapsed and volatile tokens (dates,
    times, "x minutes ago", view counters, UUIDs, long hex / base64 ids,
    session and CSRF tokens, ad-slot ids, copyright years) are masked
    before hashing, with the paths the kept content links to (a link now pointing
    elsewhere under the same text is a change; another host, query or fragment is not).
    Only the first :data:`MAX_HTML_BYTES` characters are read.

    >>> a = content_fingerprint("<main><p>Price 19 EUR</p><p>1,204 views, 14:02:11</p></main>")
    >>> b = content_fingerprint("<main><p>Price 19 EUR</p><p>1,311 views, 14:05:40</p></main>")
    >>> a == b, a[1]
    (True, 30)
    >>> content_fingerprint("<main><p>Price 21 EUR</p></main>")[0] == a[0]
    False
    >>> page = "<main><p>Price 19 EUR</p><section><h2>You may also like</h2>{}</section></main>"
    >>> content_fingerprint(page.format("<a href=/x>X</a>")) == content_fingerprint(
    ...     page.format("<a href=/y>Y</a>"))
    True
    """
    root = _parse(html[:MAX_HTML_BYTES].encode("utf-8", "replace"))
    if root is None:
        return _digest(""), 0
    return _fingerprint_tree(root)


# --------------------------------------------------------------------------
# Decoding and parsing
# --------------------------------------------------------------------------


def _utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def _looks_like_html(body: bytes, content_type: str | None, encoding: str | None) -> bool:
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if mime not in _HTML_TYPES and mime not in _SNIFF_TYPES:
        return False
    head = body[:4096]
    wide = f"{content_type or ''} {encoding or ''}".lower()
    if head.startswith(_WIDE_BOMS) or "utf-16" in wide or "utf-32" in wide:
        # NUL bytes are normal in UTF-16 / UTF-32 text: sniff the decoded head.
        head = _decode(head, content_type, encoding).encode("utf-8", "replace")
    if b"\x00" in head or head.startswith(_BINARY_MAGIC):
        return False
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n\f")[:1]
    if start in (b"{", b"["):
        return False
    return mime in _HTML_TYPES or b"<" in head


def _decode(body: bytes, content_type: str | None, encoding: str | None) -> str:
    if encoding:
        try:
            return body.decode(encoding, "replace")
        except LookupError:
            pass
    return html_to_unicode(content_type, body)[1]


def _parse(data: bytes) -> Any:
    parser = lxml.html.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
    )
    try:
        return lxml.html.document_fromstring(data, parser=parser)
    except (ValueError, lxml.etree.LxmlError):
        return None


# --------------------------------------------------------------------------
# Date candidates
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cand:
    ev: DateEvidence
    tier: int  # 0 structured, 1 opengraph, 2 meta, 3 http
    rank: int  # order within the tier
    order: int  # document order


class _Found:
    """What the extraction steps accumulate for one page."""

    __slots__ = ("mod", "now", "problems", "pub")

    def __init__(self, now: dt.datetime | None) -> None:
        self.now = now
        self.mod: list[_Cand] = []
        self.pub: list[_Cand] = []
        self.problems: set[str] = set()


def _evidence(
    source: str, field: str, raw: object, *, kind: str, main: bool, now: dt.datetime | None
) -> DateEvidence | None:
    text = raw if isinstance(raw, str) else str(raw) if isinstance(raw, int | float) else ""
    text = text.strip()[:_MAX_RAW]
    if not text:
        return None
    value: LastMod | None
    if source == "meta" and _EPOCH_RE.fullmatch(text):
        seconds = int(text[:10])
        value = LastMod(text, dt.datetime.fromtimestamp(seconds, dt.UTC), "second", ())
    else:
        value = parse_lastmod(text, now=now)
    return DateEvidence(source, field, text, value, main, kind)


def _extract_dates(root: Any, data: bytes, url: str, found: _Found) -> None:
    now, mod, pub, problems = found.now, found.mod, found.pub, found.problems
    base = url
    for href in root.xpath("//base/@href")[:1]:
        base = urljoin(url, str(href).strip())
    page_urls = [url]
    page_urls += root.xpath(
        "//link[@href][contains(concat(' ', normalize-space(@rel), ' '), ' canonical ')]/@href"
    )[:1]
    urls = frozenset(u for u in (_norm_url(str(h), base) for h in page_urls) if u)

    nodes: list[_Node] = []
    for script in root.xpath("//script[@type]"):  # extruct reads the exact type only
        kind = str(script.get("type")).split(";", 1)[0].strip().lower()
        if kind == "application/ld+json" and script.get("type") != kind:
            script.set("type", kind)  # with parameters, in upper case, with spaces
    jsonld = _run_extruct(root, base, "json-ld", problems)
    if jsonld is None:
        jsonld = list(_jsonld_fallback(root))
    _walk(jsonld, "json-ld", base, urls, nodes)
    microdata = _run_extruct(root, base, "microdata", problems)
    _walk(microdata or [], "microdata", base, urls, nodes)
    if root.xpath("boolean(//*[@vocab or @typeof or (@property and not(self::meta))])"):
        rdfa = _run_extruct(data, base, "rdfa", problems)
        _walk(_rdfa_to_tree(rdfa or []), "rdfa", base, urls, nodes)
    _structured_candidates(nodes, now, mod, pub, problems)

    seen: set[tuple[str, str]] = set()
    for item in _run_extruct(root, base, "opengraph", problems) or []:
        if not isinstance(item, dict):
            continue
        for fields, out, kind in (
            (OPENGRAPH_MODIFIED, mod, "modified"),
            (OPENGRAPH_PUBLISHED, pub, "published"),
        ):
            for rank, field in enumerate(fields):
                ev = _evidence("opengraph", field, item.get(field), kind=kind, main=True, now=now)
                if ev is not None and (field, ev.raw) not in seen:
                    seen.add((field, ev.raw))
                    out.append(_Cand(ev, 1, rank, len(out)))
    _meta_candidates(root, now, mod, pub, seen)


def _run_extruct(document: Any, base: str, syntax: str, problems: set[str]) -> list[Any] | None:
    """One syntax at a time, so that a failure loses only that syntax."""
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


# --------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------


def _eligible(ev: DateEvidence) -> bool:
    lm = ev.value
    return (
        ev.main_entity
        and lm is not None
        and lm.value is not None
        and "sentinel" not in lm.flags
        and "future" not in lm.flags
    )


def _is_now(ev: DateEvidence, ref: dt.datetime | None) -> bool:
    lm = ev.value
    if ref is None or lm is None or lm.value is None or lm.precision not in _FINE:
        return False
    return abs(lm.value - ref) <= NOW_WINDOW


def _resolve(
    found: _Found,
    *,
    now_ref: dt.datetime | None,
    http_lm: LastMod | None,
    http_date: LastMod | None,
    etag: str | None,
    fingerprint: str,
    text_length: int,
) -> PageEvidence:
    mod, pub, problems = found.mod, found.pub, found.problems

    def key(c: _Cand) -> tuple[int, float, int, int]:
        # Main structured dates: latest first (a WebPage and its Article may disagree).
        latest = 0.0
        if c.tier == 0 and c.ev.value is not None and c.ev.value.value is not None:
            latest = -c.ev.value.value.timestamp()
        return (c.tier, latest, c.rank, c.order)

    modified = [c.ev for c in sorted(mod, key=key)]
    published = [c.ev for c in sorted(pub, key=key)]
    main_mod = [m for m in modified if m.main_entity]
    main_mod = main_mod + [m for m in modified if not m.main_entity][:_MAX_OTHER]
    published = [p for p in published if p.main_entity] + [
        p for p in published if not p.main_entity
    ][:_MAX_OTHER]
    modified = main_mod

    for ev in modified:
        if not ev.main_entity or ev.value is None:
            continue
        if "invalid" in ev.value.flags:
            problems.add("invalid_modified")
        if "future" in ev.value.flags:
            problems.add("future_modified")

    first_pub = next((p for p in published if _eligible(p)), None)
    floor = None
    if first_pub is not None and first_pub.value is not None and first_pub.value.value is not None:
        floor = first_pub.value.value - dt.timedelta(days=1)

    best: DateEvidence | None = None
    now_like = False
    first = True
    for ev in modified:
        if not _eligible(ev):
            continue
        assert ev.value is not None
        assert ev.value.value is not None
        if floor is not None and ev.value.value < floor:
            problems.add("modified_before_published")
            continue
        if _is_now(ev, now_ref):
            now_like = now_like or first
            first = False
            continue
        first = False
        best = ev
        break
    if best is not None:
        modified.remove(best)
        modified.insert(0, best)
    if now_like:
        problems.add("now_modified")
    return PageEvidence(
        modified=tuple(modified),
        published=tuple(published),
        best_modified=best,
        now_like=now_like,
        http_last_modified=http_lm,
        http_date=http_date,
        etag=etag,
        fingerprint=fingerprint,
        text_length=text_length,
        problems=tuple(sorted(problems)),
    )


# --------------------------------------------------------------------------
# Fingerprint
# --------------------------------------------------------------------------

_DROP_TAGS = (
    "script", "style", "nav", "aside", "form", "noscript", "iframe", "template", "svg",
    "canvas", "object", "embed", "button", "select", "textarea", "input", "link", "meta",
)  # fmt: skip
_KEEP_TAGS = frozenset({"html", "body", "main", "article"})
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
# Whole class / id tokens of blocks that change without the content changing: ads,
# comments, share and cookie widgets, and what a build or a request fills anew (related,
# recommended or random posts, counters, carousels, sidebar widgets). Recent, latest,
# featured or popular posts are left alone: on a home or list page they are its content.
_DROP_TOKEN_RE = re.compile(
    r"(?:ads?|advert\w*|advertisement|ad[-_]?(?:slot|unit|container|wrapper|banner|box)[-_\w]*"
    r"|(?:div-)?gpt-ad[-_\w]*|dfp[-_\w]*|sponsored|comments?|comment-list|comments-area"
    r"|disqus_thread|share(?:[-_]\w+)?|social-share|sharedaddy"
    r"|cookie[-_\w]*|consent[-_\w]*|newsletter[-_\w]*|breadcrumbs?|sidebar|skip-link"
    r"|(?:[a-z0-9]+[-_])*(?:related|recommend(?:ed|ations?)?|random|suggested|similar"
    r"|yarpp|jp-relatedposts|crp|rp4wp|you-may-also-like|also-like|read-next)(?:[-_][-_\w]*)?"
    r"|widgets?(?:[-_][-_\w]*)?|carousel(?:[-_][-_\w]*)?|rotat(?:ing|or)(?:[-_][-_\w]*)?"
    r"|(?:[a-z0-9]+[-_])*(?:counter|view-?count|hit-?count|visit-?count|pageviews?|page-views"
    r"|read-?count|like-?count)(?:[-_][-_\w]*)?|busuanzi[-_\w]*|waline[-_\w]*|twikoo[-_\w]*"
    r"|giscus[-_\w]*|utterances[-_\w]*)",
    re.IGNORECASE,
)
# A heading that names a block filled anew on every build or request ("Related posts",
# "Random Recommended Posts", "You may also like"): the block goes, heading and all. Not
# "Recent posts" and the like, which are a home page's content.
_NOISE_HEADING_RE = re.compile(
    r"(?:(?:random\s+)?(?:related|recommended|suggested|similar|random)\s+(?:posts?|articles?"
    r"|stories|entries|reads?|reading|content|pages?|items|links|products|videos)"
    r"|random\s+recommended(?:\s+\w+)?|recommended\s+for\s+you|you\s+(?:may|might|will)"
    r"(?:\s+also)?\s+(?:like|enjoy|be\s+interested(?:\s+in)?)|read\s+(?:next|this\s+next)"
    r"|what\s+to\s+read\s+next"
    r"|ähnliche\s+(?:artikel|beiträge)|das\s+könnte\s+(?:dich|sie)\s+auch\s+interessieren"
    r"|articles?\s+(?:similaires|liés|connexes)|à\s+lire\s+aussi|vous\s+aimerez\s+aussi"
    r"|artículos\s+relacionados|también\s+te\s+puede\s+interesar|关联文章|相关文章|相關文章"
    r"|推荐阅读|推薦閱讀|猜你喜欢|関連記事|関連する記事|おすすめ記事"
    r"|관련\s*글|추천\s*글)[\s:.!…]*",
    re.IGNORECASE,
)
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: Headings longer than this are content, whatever words they use.
_NOISE_HEADING_MAX = 60

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAYS = (
    r"(?:mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)\b\.?,?\s*"
)
_UNITS = r"(?:sec(?:ond)?s?|min(?:ute)?s?|hours?|hrs?|days?|weeks?|months?|years?|[smhdw])"
_COUNTED = (
    r"(?:views?|page\s?views|comments?|likes?|shares?|reads?|visits?|hits|replies|reactions?"
    r"|votes?|downloads?|followers?|subscribers?|retweets?|claps?)"
)
# (pattern, placeholder), applied in order; placeholders contain no digits so
# masking twice changes nothing.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        # Session ids, tokens and cache busters in URLs and key=value text.
        (r"([?&;](?:[a-z_]*sess(?:ion)?[a-z_]*|sid|s|token|csrf[a-z_]*|xsrf[a-z_]*|nonce"
         r"|ver|v|_|cb|rnd|ts|t|utm_[a-z]+)=)[^&\s#\"'<>]*", r"\1~"),
        (r"\b((?:csrf|xsrf|authenticity)[-_]?(?:token)?|token|nonce|session[-_]?id|sid)"
         r"(\s*[:=]\s*)\S+", r"\1\2~"),
        (r"\b(?:div-)?(?:gpt-ad|ad[-_]?slot|ad[-_]?unit|adslot)[-_\w]*", "~ad~"),
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "~id~"),
        (r"\b[0-9a-f]{16,}\b", "~id~"),
        # ISO date-times before the shorter date / time patterns.
        (r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
         r"(?:\s?(?:Z|[+-]\d{2}:?\d{2}))?)?", "~date~"),
        (r"\b\d{4}([./-])\d{1,2}\1\d{1,2}\b|\b\d{1,2}([./-])\d{1,2}\2(?:\d{4}|\d{2})\b", "~date~"),
        (rf"\b(?:{_DAYS})?\d{{1,2}}(?:st|nd|rd|th)?\.?\s+(?:of\s+)?{_MONTHS},?\s+\d{{4}}",
         "~date~"),
        (rf"\b(?:{_DAYS})?{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}", "~date~"),
        (rf"\b{_DAYS}~date~", "~date~"),
        (r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?(?:\s?(?:utc|gmt|cet|cest|bst|[ecmp][sd]t))?\b",
         "~time~"),
        (rf"\b(?:\d+|an?|one|a\s+few|few)\s*{_UNITS}\.?\s+ago\b|\bjust\s+now\b", "~ago~"),
        (r"\bvor\s+(?:\d+|einer?|wenigen)\s+(?:sekunden?|minuten?|stunden?|tag(?:en)?"
         r"|wochen?|monat(?:en)?|jahr(?:en)?)\b", "~ago~"),
        (rf"\b\d+(?:[,. ]\d{{3}})*(?:[.,]\d+)?(?:\s?[km])?\s*({_COUNTED})\b", r"~n~ \1"),
        (rf"\b({_COUNTED})\s*:\s*\d[\d,.]*[km]?\b", r"\1: ~n~"),
        (r"(?:©|\(c\)|copyright)\s*\d{4}(?:\s*[-\u2013]\s*\d{4})?", "©~year~"),
    )
)  # fmt: skip
# Long base64-like ids are masked after the URL, token and ad-slot patterns
# (which keep their names) and before the UUID / hex / date patterns.
_B64_AT = 3
_B64_RE = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")


def _mask_b64(match: re.Match[str]) -> str:
    token = match.group()
    if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return "~id~"
    return token


def _mask(text: str) -> str:
    for i, (pattern, replacement) in enumerate(_MASKS):
        if i == _B64_AT:
            text = _B64_RE.sub(_mask_b64, text)
        text = pattern.sub(replacement, text)
    return text


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()


def _droppable(el: Any) -> bool:
    tag = el.tag
    if not isinstance(tag, str):
        return True
    if tag in ("header", "footer"):
        # An article's own header holds its headline: keep it.
        return next(el.iterancestors("article", "main"), None) is None
    if el.get("hidden") is not None or el.get("aria-hidden", "").lower() == "true":
        return True
    if el.get("role", "").lower() in _DROP_ROLES:
        return True
    tokens = el.get("class", "").split()
    tokens.append(el.get("id", ""))
    return any(t and _DROP_TOKEN_RE.fullmatch(t) for t in tokens)


def _fingerprint_tree(root: Any) -> tuple[str, int]:
    """Hash the masked main text of *root*; mutates the tree (call it last)."""
    for el in list(root.iter(*_DROP_TAGS)):
        el.drop_tree()
    for el in list(root.iter()):
        if el.getparent() is not None and el.tag not in _KEEP_TAGS and _droppable(el):
            el.drop_tree()
    for heading in list(root.iter(*_HEADINGS)):
        _drop_noise_block(heading)
    text = ""
    chosen = root.xpath("//main | //*[@role='main']")[:1] or root.xpath(
        "//article[not(ancestor::article)]"
    )
    if chosen:
        text = _normalise(" ".join(t for el in chosen for t in el.itertext()))
    if len(text) < 200:
        body = root.find("body")
        chosen = [body if body is not None else root]
        text = _normalise(" ".join(chosen[0].itertext()))
    masked = _normalise(_mask(text))
    links = _mask(" ".join(sorted({k for el in chosen for k in _link_keys(el)})))
    return _digest(f"{masked}\n{links}" if links else masked), len(masked)


def _link_keys(scope: Any) -> Iterator[str]:
    """The targets of the links in ``scope`` that a change of can matter: the path of each
    ``<a href>``, without scheme, host, query or fragment (a site served from another
    origin, a tracking or cache-busting parameter, a jump within the page are no change);
    a list page whose entries now point elsewhere under the same titles is one."""
    for href in scope.xpath(".//a/@href"):
        text = str(href).strip()
        if not text or text.startswith(("#", "javascript:")):
            continue
        try:
            parts = urlsplit(text)
        except ValueError:
            continue
        if parts.path:
            yield parts.path


def _drop_noise_block(heading: Any) -> None:
    """Drop the block a heading names when it names a related, recommended, random or
    popular list (:data:`_NOISE_HEADING_RE`): the heading's parent when the heading opens it
    (no text before it) and the parent is no page-level container, else the heading and
    its following siblings up to the next heading of its level or higher."""
    parent = heading.getparent()
    if parent is None:
        return  # dropped with an earlier block
    title = " ".join(heading.text_content().split())
    if len(title) > _NOISE_HEADING_MAX or not _NOISE_HEADING_RE.fullmatch(title):
        return
    if parent.tag not in _KEEP_TAGS and parent.getparent() is not None and _opens(heading):
        parent.drop_tree()
        return
    level = int(heading.tag[1])
    following = []
    for sibling in heading.itersiblings():
        tag = sibling.tag
        if isinstance(tag, str) and tag in _HEADINGS and int(tag[1]) <= level:
            break
        following.append(sibling)
    heading.drop_tree()
    for sibling in following:
        sibling.drop_tree()


def _opens(heading: Any) -> bool:
    """Whether ``heading`` is the first thing with text in its parent."""
    parent = heading.getparent()
    if (parent.text or "").strip():
        return False
    for sibling in heading.itersiblings(preceding=True):
        if (sibling.tail or "").strip() or (
            isinstance(sibling.tag, str) and sibling.text_content().strip()
        ):
            return False
    return True


def _normalise(text: str) -> str:
    return " ".join(text.split())
