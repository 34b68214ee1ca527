"""Page dates: :func:`page_evidence`, everything one fetched page says about itself.

docs/verification.md, "Page dates" and "Fingerprints". Runs the rooms of
:mod:`sitemapcrawl.verify.pagedates` in order on one page (HTTP headers, structured data,
OpenGraph, ``<meta>``), chooses among the dates found and adds the HTTP validators and the
content fingerprint (:mod:`sitemapcrawl.verify.fingerprint`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from sitemapcrawl.sitemaps.dates import parse_feed_date
from sitemapcrawl.verify.fingerprint import EMPTY_FINGERPRINT, content_tree, fingerprint_of
from sitemapcrawl.verify.intervals import _utc
from sitemapcrawl.verify.pagedates.declared import (
    DateEvidence,
    PageEvidence,
    _Cand,
    _evidence,
    _Found,
)
from sitemapcrawl.verify.pagedates.meta import (
    OPENGRAPH_MODIFIED,
    OPENGRAPH_PUBLISHED,
    _meta_candidates,
)
from sitemapcrawl.verify.pagedates.resolve import _resolve
from sitemapcrawl.verify.pagedates.structured import (
    _jsonld_fallback,
    _Node,
    _norm_url,
    _rdfa_to_tree,
    _run_extruct,
    _structured_candidates,
    _walk,
    jsonld_past,
)
from sitemapcrawl.verify.pagehtml import MAX_HTML_BYTES, _decode, _looks_like_html, _tree, html5

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping

__all__ = [
    "page_evidence",
]


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
    fingerprint, text_length = EMPTY_FINGERPRINT
    content = ""
    if not body.strip():
        problems.add("empty")
    elif not _looks_like_html(body, content_type, encoding):
        problems.add("not_html")
        fingerprint = hashlib.blake2b(body, digest_size=16).hexdigest()
    else:
        masked, links = _read_html(body, url, content_type, encoding, found)
        fingerprint, text_length = fingerprint_of(masked, links)
        content = f"{masked}\n{links}" if links else masked

    return _resolve(
        found,
        now_ref=now_ref,
        http_lm=http_lm,
        http_date=http_date,
        etag=etag,
        fingerprint=fingerprint,
        text_length=text_length,
        content=content,
    )


def _read_html(
    body: bytes, url: str, content_type: str | None, encoding: str | None, found: _Found
) -> tuple[str, str]:
    """The dates of an HTML page into ``found``; its masked main text and link targets
    (``verify.fingerprint.content_tree``)."""
    past: list[Any] = []
    if len(body) > MAX_HTML_BYTES:
        found.problems.add("truncated")
        # The tree stops at the cap; the JSON-LD blocks of the rest were downloaded too.
        past = jsonld_past(_decode(body, content_type, encoding), MAX_HTML_BYTES)
        body = body[:MAX_HTML_BYTES]
    data = html5(_decode(body, content_type, encoding).encode("utf-8", "replace"))
    root = _tree(data)
    if root is None:
        return "", ""
    _extract_dates(root, data, url, found, past)
    return content_tree(root)


def _extract_dates(
    root: Any, data: bytes, url: str, found: _Found, past: list[Any] | None = None
) -> None:
    """The dates of the page's tree; ``past``: JSON-LD read beyond the tree's cap."""
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
    _walk(jsonld + (past or []), "json-ld", base, urls, nodes)
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
