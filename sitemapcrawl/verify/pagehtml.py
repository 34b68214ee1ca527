"""Lastmod verification: a fetched page's bytes as an HTML tree.

Whether a body is HTML at all (the content type, a sniff of its first bytes), its text
(the declared or detected encoding) and its tree, for the page dates
(:mod:`sitemapcrawl.verify.pagedates`) and the content fingerprint
(:mod:`sitemapcrawl.verify.fingerprint`). docs/verification.md, "Page dates". Pure code
(selectolax, lxml, w3lib; never scrapy or twisted).

A page is read as a browser reads it: an HTML5 tree builder (lexbor, through selectolax)
builds the tree, and its serialisation is what lxml parses (extruct and the XPath work on
lxml trees). libxml2's HTML parser alone stops building at a stray ``</html>`` before
``<body>`` (a Hexo theme writes one: the page's body then arrived as unstructured text) and
repairs misnested and unclosed tags otherwise than a browser does; the HTML5 algorithm
gives every page the one tree a browser would.
"""

from __future__ import annotations

from typing import Any

import lxml.etree
import lxml.html
from selectolax.lexbor import LexborHTMLParser
from w3lib.encoding import html_to_unicode

__all__ = [
    "MAX_HTML_BYTES",
    "html5",
]


#: Only this much of the body is parsed (bytes; characters for
#: :func:`content_fingerprint`).
MAX_HTML_BYTES = 2 * 1024 * 1024


_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


_SNIFF_TYPES = frozenset({"", "text/plain", "application/octet-stream", "binary/octet-stream"})


_BINARY_MAGIC = (b"%PDF", b"PK\x03\x04", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"\x1f\x8b")


_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")


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


def html5(data: bytes) -> bytes:
    """UTF-8 HTML as the HTML5 tree-building algorithm leaves it, serialised (UTF-8).

    >>> html5(b"<html><head><title>t</title></head></html><body><p>a<b>b</p>c</b>")
    b'<html><head><title>t</title></head><body><p>a<b>b</b></p><b>c</b></body></html>'
    """
    try:
        serialised = LexborHTMLParser(data.decode("utf-8", "replace")).html
    except (RuntimeError, ValueError):  # what selectolax raises on a failure of lexbor's
        return data
    return serialised.encode("utf-8", "replace") if serialised else data


def _parse(data: bytes) -> Any:
    """The lxml tree of UTF-8 HTML, built as a browser builds it (:func:`html5`)."""
    return _tree(html5(data))


def _tree(data: bytes) -> Any:
    """The lxml tree of UTF-8 HTML already through :func:`html5`, or None."""
    parser = lxml.html.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
    )
    try:
        return lxml.html.document_fromstring(data, parser=parser)
    except (ValueError, lxml.etree.LxmlError):
        return None
