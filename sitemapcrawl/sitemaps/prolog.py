"""Sitemap parsing: what a body is (sniffing), its encoding, and its XML prolog.

``sniff`` tells a urlset from an index, a feed, a text sitemap or an HTML page by its first
bytes. UTF-16 and UTF-32 bodies are found (``wide_encoding``) and transcoded to UTF-8
(``transcode``), so the parsers after this only see ASCII-compatible bytes. ``Prolog``
consumes an XML prolog of any length from the chunk stream, dropping the DOCTYPE: a sitemap
needs no DTD, and without one no entity can be expanded, fetched or amplified.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = [
    "ERROR_ROOTS",
    "LEADING",
    "MAX_PROLOG",
    "SITEMAP_NAMESPACES",
    "SNIFF_BYTES",
    "Prolog",
    "declared_encoding",
    "decode_head",
    "error_summary",
    "head_complete",
    "root_name",
    "root_tag",
    "sniff",
    "strip_leading",
    "transcode",
    "undeclared_legacy_encoding",
    "wide_encoding",
]

SNIFF_BYTES: Final = 64 * 1024
MAX_PROLOG: Final = 1024 * 1024  # past this without a root element, the body is not a sitemap
#: What may come before a body's first ``<``.
LEADING: Final = b" \t\r\n\x00\xef\xbb\xbf"
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ROOT_KIND = {
    "urlset": "urlset",
    "sitemapindex": "sitemapindex",
    "rss": "rss",
    "rdf": "rss",
    "feed": "atom",
    "html": "html",
}
_HTTP = ("http://", "https://")
#: The protocol's namespace, and Google's two from before sitemaps.org (read as it is).
SITEMAP_NAMESPACES: Final = frozenset(
    (
        "http://www.sitemaps.org/schemas/sitemap/0.9",
        "http://www.google.com/schemas/sitemap/0.84",
        "http://www.google.com/schemas/sitemap/0.9",
    )
)
#: Roots of XML error documents (a storage bucket's ``<Error>``, an API's
#: ``<ErrorResponse>``), lower-cased: soft 404s in XML.
ERROR_ROOTS: Final = frozenset(("error", "errors", "errorresponse"))
_START_TAG = re.compile(r"<([^\s/>]+)([^>]*)>")
_XMLNS = re.compile(r"""\bxmlns(?::([^\s=]+))?\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_ERROR_FIELD = re.compile(r"<(?:[\w.\-]+:)?(code|message)\b[^>]*>([^<]{1,200})<", re.IGNORECASE)
_NAME = re.compile(r"<([A-Za-z_][\w.\-]*:)?([A-Za-z_][\w.\-]*)")
_XML_DECL = re.compile(rb"<\?xml[ \t\r\n][^<>]{0,512}?\?>")
_XML_DECL_ENCODING = re.compile(rb"^\s*<\?xml[^>]*\bencoding\s*=", re.IGNORECASE)
_DECLARED = re.compile(
    rb"<\?xml[ \t\r\n][^<>?]*?\bencoding[ \t\r\n]*=[ \t\r\n]*[\"']([A-Za-z0-9._:\-]{1,40})[\"']"
)
_DOCTYPE = re.compile(rb"<!(?i:doctype)(?=[ \t\r\n\[>])")
_SPACE = re.compile(rb"(?:[ \t\r\n\x00]|\xef\xbb\xbf)+")
_ROOT_NAME_END = re.compile(rb"<[^ \t\r\n/>]*[ \t\r\n/>]")
_DOCTYPE_RUN = re.compile(rb"(?:[^\"'\[\]<>]|<(?!!--|\?|!ENTITY))+")
_EXTERNAL_ID = re.compile(rb"\b(?:SYSTEM|PUBLIC)\b", re.IGNORECASE)
_QUOTES = frozenset(b"\"'")
_OPEN, _CLOSE, _GT = b"[]>"
#: A real DOCTYPE has a few hundred tokens; past this it is an attack, not a document.
_MAX_DOCTYPE_TOKENS = 1_000_000


def head_complete(head: bytes) -> bool:
    """Enough of the body to sniff it: the root element's start, a text line, or the cap."""
    if len(head) >= MAX_PROLOG:
        return True
    stripped = head.lstrip(b" \t\r\n\x00")
    if stripped.startswith(codecs.BOM_UTF8):
        stripped = stripped[3:].lstrip(b" \t\r\n")
    if not stripped:
        return False
    if stripped[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or stripped[:1] != b"<":
        return b"\n" in stripped or len(stripped) >= SNIFF_BYTES
    return _prolog(stripped.decode("latin-1")) is not None


def decode_head(head: bytes) -> tuple[str, str | None]:
    """Decode the first bytes for sniffing; return the text and the BOM's encoding."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return head[len(bom) :].decode(encoding, "replace"), encoding
    return head.decode("utf-8", "replace"), None


def _prolog(text: str) -> tuple[int, int, int] | None:
    """Scan the prolog: (doctype start, doctype end, root element start), or None when the
    root element has not appeared yet. Doctype positions are -1 when there is none. The
    XML declaration, comments and processing instructions are skipped."""
    pos = 0
    doctype = (-1, -1)
    n = len(text)
    while pos < n:
        pos = text.find("<", pos)
        if pos < 0:
            return None
        if text.startswith("<?", pos):
            end = text.find("?>", pos)
            end = end + 1 if end >= 0 else -1
        elif text.startswith("<!--", pos):
            end = text.find("-->", pos)
            end = end + 2 if end >= 0 else -1
        elif text.startswith("<!", pos):
            bracket = text.find("[", pos)
            end = text.find(">", pos)
            if 0 <= bracket < end:  # an internal subset: it ends at "]" then ">"
                close = text.find("]", bracket)
                end = text.find(">", close) if close >= 0 else -1
            if end >= 0 and text[pos + 2 : pos + 9].upper() == "DOCTYPE":
                doctype = (pos, end + 1)
        else:
            return doctype[0], doctype[1], pos
        if end < 0:
            return None
        pos = end + 1
    return None


def root_name(text: str) -> str | None:
    """Local name of the first element, lowercased.

    >>> root_name('<?xml version="1.0"?><!-- x --><s:urlset xmlns:s="u">')
    'urlset'
    """
    found = _prolog(text)
    if found is None:
        return None
    match = _NAME.match(text, found[2])
    return match.group(2).lower() if match else None


def root_tag(text: str) -> tuple[str, str | None] | None:
    """The root element's name as written and its namespace (None: none declared); None
    when ``text`` does not hold the root's whole start tag.

    >>> root_tag('<?xml version="1.0"?><s:urlset xmlns:s="u" xmlns="v">')
    ('s:urlset', 'u')
    >>> root_tag("<URLSET>"), root_tag("<urlset xmlns=")
    (('URLSET', None), None)
    """
    found = _prolog(text)
    if found is None:
        return None
    match = _START_TAG.match(text, found[2])
    if match is None:
        return None
    qname, attrs = match.groups()
    prefix = qname.rpartition(":")[0]
    for decl in _XMLNS.finditer(attrs):
        if (decl.group(1) or "") == prefix:
            namespace = decl.group(2) if decl.group(2) is not None else decl.group(3)
            return qname, namespace.strip() or None
    return qname, None


def error_summary(text: str) -> str:
    """What an XML error document says: its code and message, if it has them.

    >>> error_summary("<Error><Code>NoSuchKey</Code><Message>The key does not exist.</Message>")
    'NoSuchKey: The key does not exist.'
    """
    fields: dict[str, str] = {}
    for name, value in _ERROR_FIELD.findall(text[:SNIFF_BYTES]):
        fields.setdefault(name.lower(), value.strip())
    return ": ".join(v for v in (fields.get("code"), fields.get("message")) if v)


def sniff(head: bytes) -> str:
    """Tell what a decoded body is from its first bytes.

    >>> sniff(b'<?xml version="1.0"?><urlset xmlns="x">'), sniff(b"https://a.example/\\n")
    ('urlset', 'text')
    >>> sniff(b"<!DOCTYPE html><html><body>Not found"), sniff(b"  \\n"), sniff(b"{}")
    ('html', 'empty', 'unknown')
    """
    text, _ = decode_head(head)
    stripped = text.lstrip(" \t\r\n\ufeff\x00")
    if not stripped:
        return "empty"
    if stripped[0] == "<":
        root = root_name(stripped)
        if root is None:
            return "unknown"
        return _ROOT_KIND.get(root, "xml")
    first_line = stripped.split("\n", 1)[0].strip().lower()
    if first_line.startswith(_HTTP) or first_line.startswith("#") or "://" in first_line[:16]:
        return "text"
    return "unknown"


class Prolog:
    """Consume an XML prolog from ``chunks``, the body's decoded stream after ``head``.

    ``skip(head)`` returns the XML declaration, then the body from the root element on (at
    least its name, or all that is left); the chunks it read are gone from the stream.
    Afterwards ``doctype_removed`` says a DOCTYPE was dropped, and ``declaring_doctypes``
    counts those that declared entities or an external DTD (none were expanded: each is a
    fault to report).
    Memory stays flat: skipped bytes are dropped as they go.
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.doctype_removed = False
        self.declaring_doctypes = 0

    def _more(self, buf: bytearray) -> bool:
        """Append the next chunk to ``buf``; False at the end of the body."""
        for chunk in self.chunks:
            if chunk:
                buf += chunk
                return True
        return False

    def _until(self, buf: bytearray, pos: int, marker: bytes) -> int:
        """Index just past the next ``marker`` at or after ``pos``, reading more as needed;
        -1 at the end of the body. What lies before the marker may be trimmed from ``buf``
        (it is being skipped), so only the returned index is valid afterwards."""
        search = pos
        while True:
            found = buf.find(marker, search)
            if found >= 0:
                return found + len(marker)
            search = max(search, len(buf) - len(marker) + 1)
            if search > SNIFF_BYTES:  # skipped bytes are gone for good: memory stays flat
                del buf[:search]
                search = 0
            if not self._more(buf):
                return -1

    def skip(self, head: bytes) -> bytes:
        """Consume the prolog that starts ``head`` (see the class docstring)."""
        buf = bytearray(head)
        pos = 0
        kept = b""
        eof = False
        while True:
            if not eof and len(buf) - pos < 16:  # room to recognise any token
                if pos > SNIFF_BYTES:
                    del buf[:pos]
                    pos = 0
                eof = not self._more(buf)
                continue
            if pos >= len(buf):
                break
            if buf.startswith(b"<?", pos):
                decl = _XML_DECL.match(buf, pos)
                if decl is not None and not kept:
                    kept = bytes(decl.group())
                    pos = decl.end()
                    continue
                pos = self._until(buf, pos + 2, b"?>")
            elif buf.startswith(b"<!--", pos):
                pos = self._until(buf, pos + 4, b"-->")
            elif _DOCTYPE.match(buf, pos):
                pos = self._skip_doctype(buf, pos + 9)
            else:
                space = _SPACE.match(buf, pos)
                if space is None:
                    break  # the root element, or not an XML prolog: sniffing decides
                pos = space.end()
            if pos < 0:  # the body ended inside a comment, PI or DOCTYPE
                return kept
        head = kept + bytes(buf[pos:])
        while _ROOT_NAME_END.match(head, len(kept)) is None and len(head) < SNIFF_BYTES:
            more = bytearray()
            if not self._more(more):
                break
            head += more
        return head

    def _skip_doctype(self, buf: bytearray, pos: int) -> int:
        """Skip a DOCTYPE from just after ``<!DOCTYPE``: quoted literals, comments and
        processing instructions are skipped whole, so a ``]>`` inside an entity value does
        not end it early. Return where it ends, or -1 when the body ends first (or the
        DOCTYPE is absurdly long)."""
        in_subset = declares = False
        tokens = 0
        end = -1
        while tokens < _MAX_DOCTYPE_TOKENS:
            tokens += 1
            if len(buf) - pos < 16:
                if pos > SNIFF_BYTES:
                    del buf[:pos]
                    pos = 0
                if self._more(buf):
                    continue
                if pos >= len(buf):
                    break
            byte = buf[pos]
            if byte in _QUOTES:
                pos = self._until(buf, pos + 1, bytes((byte,)))
            elif buf.startswith(b"<!--", pos):
                pos = self._until(buf, pos + 4, b"-->")
            elif buf.startswith(b"<?", pos):
                pos = self._until(buf, pos + 2, b"?>")
            elif byte == _OPEN:
                in_subset = True
                pos += 1
            elif byte == _CLOSE:
                in_subset = False
                pos += 1
            elif byte == _GT and not in_subset:
                end = pos + 1
                break
            elif buf.startswith(b"<!ENTITY", pos):
                declares = True
                pos += 8
            else:
                run = _DOCTYPE_RUN.match(buf, pos)
                if run is None:  # a lone ">" inside the subset, or "<!" / "<?" cut short
                    pos += 1
                    continue
                if not in_subset and _EXTERNAL_ID.search(run.group()):
                    declares = True
                pos = run.end()
            if pos < 0:
                break
        self.doctype_removed = True
        self.declaring_doctypes += declares
        return end


def wide_encoding(first: bytes) -> str | None:
    """UTF-16 or UTF-32, by BOM or by the zero bytes around a leading ``<``; else None.

    >>> wide_encoding(b"\\xff\\xfe<\\x00"), wide_encoding(b"\\x00<\\x00?")
    ('utf-16', 'utf-16-be')
    >>> wide_encoding(b"<?xm") is None
    True
    """
    if first.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if first[:4] in (b"<\x00\x00\x00", b"\x00\x00\x00<"):
        return "utf-32-le" if first[0] else "utf-32-be"
    if len(first) >= 4 and first[1] == first[3] == 0 and first[0] and first[2]:
        return "utf-16-le"
    if len(first) >= 4 and first[0] == first[2] == 0 and first[1] and first[3]:
        return "utf-16-be"
    return None


def transcode(chunks: Iterable[bytes], encoding: str) -> Iterator[bytes]:
    """Re-encode a UTF-16/32 stream as UTF-8 (the BOM goes; bad sequences become U+FFFD)."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text.encode("utf-8", "replace")
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8", "replace")


def declared_encoding(head: bytes) -> str | None:
    """The body's own encoding, by the XML rules, when it is not UTF-8 and Python reads it
    as an ASCII-compatible codec: its name (``utf-16`` for a UTF-16 or UTF-32 declaration,
    which bytes that are not wide cannot be: they are read as UTF-8); else None (UTF-8, no
    declaration, a name no codec has, a UTF-8 BOM, which wins over a declaration).

    >>> declared_encoding(b'<?xml version="1.0" encoding="US-ASCII"?><urlset>')
    'ascii'
    >>> declared_encoding(b"<?xml version='1.0' encoding='utf8'?>"), declared_encoding(b"<a>")
    (None, None)
    """
    if head.startswith(codecs.BOM_UTF8):
        return None
    match = _DECLARED.match(head.lstrip(b" \t\r\n\x00"))
    if match is None:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None  # (libxml2 says so, and reads it as UTF-8)
    if name.startswith(("utf-16", "utf-32")):
        return "utf-16"
    if name in ("utf-8", "utf-8-sig") or "<?xml".encode(name, "replace") != b"<?xml":
        return None
    return name


def undeclared_legacy_encoding(head: bytes) -> str | None:
    """windows-1252 for a body with no BOM, no declared encoding and bytes that are not UTF-8.

    >>> undeclared_legacy_encoding(b"<urlset>caf\\xe9 and more"), undeclared_legacy_encoding(b"<a>")
    ('windows-1252', None)
    """
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or head.startswith(codecs.BOM_UTF8):
        return None
    if _XML_DECL_ENCODING.match(head):
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not merely a character cut at the end of the head
            return "windows-1252"
    return None


def strip_leading(chunk: bytes) -> bytes:
    """Drop whitespace before ``<?xml`` (libxml2 rejects it) after an optional UTF-8 BOM."""
    if chunk.startswith(codecs.BOM_UTF8):
        chunk = chunk[3:]
    if chunk[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return chunk
    return chunk.lstrip(b" \t\r\n\x00")
