"""Read one sitemap body, whatever it is, as a stream of entries.

``SitemapReader`` sniffs the decoded body (XML urlset or index, RSS, Atom, plain text, or
an HTML page that is not a sitemap at all), then parses it incrementally: memory stays
flat however many URLs the file holds. XML goes through lxml's pull parser with entity
resolution, DTD loading and network access off, so entity bombs, external entities and
XInclude are never expanded or fetched. Faults are recorded, never raised; every entry
read before a fault is kept.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from itertools import chain
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin

from lxml import etree
from w3lib.url import safe_url_string

from . import extensions as ext
from .dates import parse_feed_date, parse_lastmod
from .decompress import BodyDecoder
from .errors import (
    EmptyBody,
    EntitiesDeclared,
    NotASitemap,
    SitemapError,
    SitemapSyntaxError,
    TooManyUrls,
    UnknownFormat,
)
from .model import Limits, SitemapRef, UrlEntry
from .scan import Scan, escape_amps

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from lxml.etree import _Element

    from .dates import LastMod

__all__ = ["SITEMAP_KINDS", "SitemapReader", "sniff"]

#: Kinds that hold URLs. ``html``, ``empty`` and ``unknown`` are the other sniff results.
SITEMAP_KINDS: Final = ("urlset", "sitemapindex", "text", "rss", "atom")

_SNIFF_BYTES = 64 * 1024
#: The scanner bounds an entry and a run of white space by about 1 MiB plus one chunk,
#: which must stay far below libxml2's 10 MB text node limit (lxml reports those).
_SCAN_MAX_CHUNK = 4 * 1024 * 1024
_MAX_PROLOG = 1024 * 1024  # past this without a root element, the body is not a sitemap
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
_NAME = re.compile(r"<([A-Za-z_][\w.\-]*:)?([A-Za-z_][\w.\-]*)")
_LEADING = b" \t\r\n\x00\xef\xbb\xbf"
_XML_DECL = re.compile(rb"<\?xml[ \t\r\n][^<>]{0,512}?\?>")
_DOCTYPE = re.compile(rb"<!(?i:doctype)(?=[ \t\r\n\[>])")
_SPACE = re.compile(rb"(?:[ \t\r\n\x00]|\xef\xbb\xbf)+")
_ROOT_NAME_END = re.compile(rb"<[^ \t\r\n/>]*[ \t\r\n/>]")
_DOCTYPE_RUN = re.compile(rb"(?:[^\"'\[\]<>]|<(?!!--|\?|!ENTITY))+")
_EXTERNAL_ID = re.compile(rb"\b(?:SYSTEM|PUBLIC)\b", re.IGNORECASE)
_QUOTES = frozenset(b"\"'")
_OPEN, _CLOSE, _GT = b"[]>"
#: A real DOCTYPE has a few hundred tokens; past this it is an attack, not a document.
_MAX_DOCTYPE_TOKENS = 1_000_000


def _head_complete(head: bytes) -> bool:
    """Enough of the body to sniff it: the root element's start, a text line, or the cap."""
    if len(head) >= _MAX_PROLOG:
        return True
    stripped = head.lstrip(b" \t\r\n\x00")
    if stripped.startswith(codecs.BOM_UTF8):
        stripped = stripped[3:].lstrip(b" \t\r\n")
    if not stripped:
        return False
    if stripped[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or stripped[:1] != b"<":
        return b"\n" in stripped or len(stripped) >= _SNIFF_BYTES
    return _prolog(stripped.decode("latin-1")) is not None


_HTTP = ("http://", "https://")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
#: An absolute http(s) URL of printable ASCII with a plain host (no user, no brackets) and
#: a port up to 65535 if any: nothing in it needs resolving, encoding or checking.
_PLAIN_URL = re.compile(
    r"https?://[A-Za-z0-9._~%!$&'()*+,;=\-]+"
    r"(?::(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
    r"(?:[/?#][!-Z^-~]*)?"
)
_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
_C0_SPACE = "".join(map(chr, range(0x21))) + "\x7f"
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")


def _decode_head(head: bytes) -> tuple[str, str | None]:
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


def _root_name(text: str) -> str | None:
    """Local name of the first element, lowercased."""
    found = _prolog(text)
    if found is None:
        return None
    match = _NAME.match(text, found[2])
    return match.group(2).lower() if match else None


def sniff(head: bytes) -> str:
    """Tell what a decoded body is from its first bytes.

    >>> sniff(b'<?xml version="1.0"?><urlset xmlns="x">'), sniff(b"https://a.example/\\n")
    ('urlset', 'text')
    >>> sniff(b"<!DOCTYPE html><html><body>Not found"), sniff(b"  \\n"), sniff(b"{}")
    ('html', 'empty', 'unknown')
    """
    text, _ = _decode_head(head)
    stripped = text.lstrip(" \t\r\n\ufeff\x00")
    if not stripped:
        return "empty"
    if stripped[0] == "<":
        root = _root_name(stripped)
        if root is None:
            return "unknown"
        return _ROOT_KIND.get(root, "xml")
    first_line = stripped.split("\n", 1)[0].strip().lower()
    if first_line.startswith(_HTTP) or first_line.startswith("#") or "://" in first_line[:16]:
        return "text"
    return "unknown"


class SitemapReader:
    """Iterate over the entries of one sitemap body: ``UrlEntry`` or ``SitemapRef`` objects.

    ``body`` is the raw response body (gzip is detected and peeled here); ``url`` is where
    it came from, for resolving relative locations. After ``sniff()`` (called on first
    iteration), ``kind`` says what the body is. After iteration, ``faults`` holds the
    distinct problems found, ``counts`` how often each per-entry problem happened
    (``loc_missing``, ``loc_relative``, ``loc_too_long``, ``loc_bad_scheme``,
    ``lastmod_invalid``, ``priority_invalid``, ``over_url_limit``), ``urls`` and
    ``sitemaps`` the number of each entry kind, and ``decoder`` the decompression details.

    Well-formed urlsets and indexes are read by a scanner (``scan.py``) that hands the body
    to lxml at the first thing it does not fully understand; the entries, counts and
    faults are those of lxml either way. ``parser`` says which read the body (``scan``,
    ``lxml``, or ``scan+lxml`` when the scanner gave up after yielding entries) and
    ``scan_stopped`` why the scanner gave up; ``fast_path=False`` reads with lxml only.

    >>> body = b'<urlset><url><loc>/a</loc><lastmod>2024-05-01</lastmod></url></urlset>'
    >>> reader = SitemapReader(body, "https://x.example/s.xml")
    >>> [(e.loc, e.lastmod.iso, e.relative) for e in reader], reader.parser
    ([('https://x.example/a', '2024-05-01T00:00:00Z', True)], 'scan')
    """

    def __init__(
        self,
        body: bytes,
        url: str,
        *,
        limits: Limits | None = None,
        now: dt.datetime | None = None,
        content_encoding: Sequence[str] = (),
        fast_path: bool = True,
    ) -> None:
        self.url = url
        self.limits = limits or Limits()
        self.now = now
        self._body = body
        self._content_encoding = content_encoding
        self._fast_path = fast_path
        self.decoder = self._decoder()
        self.parser: str | None = None
        self.scan_stopped: str | None = None
        self.kind: str | None = None
        self.root: str | None = None
        self.faults: list[SitemapError] = []
        self.counts: Counter[str] = Counter()
        self.urls = 0
        self.sitemaps = 0
        self._chunks: Iterator[bytes] | None = None
        self._head = b""
        self._doctype_removed = False
        self._transcoded = False
        self._chunks_done = False

    def _decoder(self) -> BodyDecoder:
        return BodyDecoder(
            self._body,
            max_size=self.limits.max_size,
            chunk_size=self.limits.chunk_size,
            max_layers=self.limits.max_gzip_layers,
            content_encoding=self._content_encoding,
        )

    def _restart(self) -> None:
        """Back to the state before ``sniff()``, with a fresh decoder, then sniff again."""
        self.decoder = self._decoder()
        self.kind = self.root = None
        self.faults.clear()
        self.counts.clear()
        self.urls = self.sitemaps = 0
        self._chunks = None
        self._head = b""
        self._doctype_removed = self._transcoded = self._chunks_done = False
        self.sniff()

    # -- sniffing ----------------------------------------------------------------------

    def sniff(self) -> str:
        """Decode enough of the body to tell its kind; idempotent.

        UTF-16 and UTF-32 bodies are transcoded to UTF-8 here, so everything after this
        sees ASCII-compatible bytes. For XML, the prolog is consumed up to the root element
        however long it is (the decoder's size cap bounds it): comments and processing
        instructions are dropped, and so is the DOCTYPE: a sitemap needs no DTD, and
        without one no entity can be expanded, fetched, or amplified.
        """
        if self.kind is not None:
            return self.kind
        chunks = iter(self.decoder)
        first = b""
        for chunk in chunks:  # enough to tell the encoding family, however small the chunks
            first += chunk
            if len(first) >= 4:
                break
        stream: Iterator[bytes] = chain((first,), chunks)
        wide = _wide_encoding(first)
        if wide is not None:
            stream = _transcode(stream, wide)
            self._transcoded = True
        self._chunks = stream
        head = b""
        for chunk in stream:
            head += chunk
            if head.lstrip(_LEADING)[:1] == b"<" or _head_complete(head):
                break
        if head.lstrip(_LEADING)[:1] == b"<":
            head = self._skip_prolog(head)
        self.kind = sniff(head[:_MAX_PROLOG])
        if self.kind == "xml":
            # An XML root we do not know: read it like a urlset, by local names (lenient).
            self.root = _root_name(_decode_head(head[:_SNIFF_BYTES])[0])
        self._head = head
        if self.kind in ("html", "empty", "unknown"):
            # Nothing will be read: a decoding fault (a corrupt gzip that inflated to
            # nothing) explains the kind, so it comes first.
            self.faults.extend(self.decoder.faults)
        self._kind_fault()
        return self.kind

    def _more(self, buf: bytearray) -> bool:
        """Append the next chunk to ``buf``; False at the end of the body."""
        assert self._chunks is not None
        for chunk in self._chunks:
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
            if search > _SNIFF_BYTES:  # skipped bytes are gone for good: memory stays flat
                del buf[:search]
                search = 0
            if not self._more(buf):
                return -1

    def _skip_prolog(self, head: bytes) -> bytes:
        """Consume the XML prolog; return the XML declaration, then the body from the root
        element on (at least its name, or all that is left)."""
        buf = bytearray(head)
        pos = 0
        kept = b""
        eof = False
        while True:
            if not eof and len(buf) - pos < 16:  # room to recognise any token
                if pos > _SNIFF_BYTES:
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
        while _ROOT_NAME_END.match(head, len(kept)) is None and len(head) < _SNIFF_BYTES:
            more = bytearray()
            if not self._more(more):
                break
            head += more
        return head

    def _skip_doctype(self, buf: bytearray, pos: int) -> int:
        """Skip a DOCTYPE from just after ``<!DOCTYPE``: quoted literals, comments and
        processing instructions are skipped whole, so a ``]>`` inside an entity value does
        not end it early. Return where it ends, or -1 when the body ends first (or the
        DOCTYPE is absurdly long). Declared entities or an external DTD are a fault."""
        in_subset = declares = False
        tokens = 0
        end = -1
        while tokens < _MAX_DOCTYPE_TOKENS:
            tokens += 1
            if len(buf) - pos < 16:
                if pos > _SNIFF_BYTES:
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
        self._doctype_removed = True
        if declares:
            self.faults.append(
                EntitiesDeclared(
                    "the document declares entities or an external DTD; none were expanded"
                )
            )
        return end

    def _kind_fault(self) -> None:
        if self.kind == "html":
            self.faults.append(NotASitemap("the body is an HTML page, not a sitemap"))
        elif self.kind == "empty":
            self.faults.append(EmptyBody("the body is empty"))
        elif self.kind == "unknown":
            self.faults.append(UnknownFormat("the body is neither XML, a feed nor a text sitemap"))

    def _body_chunks(self) -> Iterator[bytes]:
        if self._head:
            yield self._head
        assert self._chunks is not None
        yield from self._chunks
        self._chunks_done = True
        self.faults.extend(self.decoder.faults)

    # -- iteration ---------------------------------------------------------------------

    def __iter__(self) -> Iterator[UrlEntry | SitemapRef]:
        kind = self.sniff()
        if kind in ("html", "empty", "unknown"):
            return
        if kind == "text":
            yield from self._text(self._body_chunks())
        else:
            yield from self._xml(self._body_chunks(), kind)

    # -- locations ---------------------------------------------------------------------

    def _loc(self, raw: str | None) -> tuple[str | None, bool]:
        """Validate one location: absolute http(s), within the length limit.

        As browsers do (WHATWG URL), leading and trailing control characters and spaces
        are stripped, tabs and newlines inside are removed, and other control characters
        are percent-encoded; a location that had any is counted (``loc_control_chars``).
        """
        if raw is None:
            self.counts["loc_missing"] += 1
            return None, False
        if _PLAIN_URL.fullmatch(raw) and len(raw) <= self.limits.max_loc_length:
            return raw, False  # the common case, with nothing to check further
        loc = raw
        if _UNEXPANDED in loc:  # made of an entity reference, never expanded: unknowable
            self.counts["loc_unexpanded_entity"] += 1
            return None, False
        controls = _CONTROLS.search(loc) is not None
        if controls:
            loc = loc.strip(_C0_SPACE).translate(_TAB_NEWLINE)
            if not loc:
                self.counts["loc_missing"] += 1
                return None, False
        relative = False
        if not loc.startswith(_HTTP):
            lowered = loc[:8].lower()
            if lowered.startswith(_HTTP):  # "HTTP://": schemes are case-insensitive
                colon = loc.index(":")
                loc = lowered[:colon] + loc[colon:]
            else:
                if _SCHEME.match(loc):  # RFC 3986 scheme: javascript:, data:, user-agent:…
                    self.counts["loc_bad_scheme"] += 1
                    return None, False
                try:
                    loc = urljoin(self.url, loc)
                except ValueError:  # "//[not-an-address" and the like
                    self.counts["loc_invalid"] += 1
                    return None, False
                relative = True
                if not loc[:8].lower().startswith(_HTTP):  # only from a non-http base URL
                    self.counts["loc_bad_scheme"] += 1
                    return None, False
                self.counts["loc_relative"] += 1
        if controls:
            self.counts["loc_control_chars"] += 1
            if _CONTROLS.search(_authority(loc)):  # no host has one: it cannot be fixed
                self.counts["loc_invalid"] += 1
                return None, False
        if controls or not loc.isascii() or " " in loc or "[" in loc or "]" in loc:
            try:
                loc = safe_url_string(loc.strip())
            except ValueError:  # a bracketed host that is not an IP address
                self.counts["loc_invalid"] += 1
                return None, False
            if _CONTROLS.search(loc) or " " in loc:  # left in the host: no such host
                self.counts["loc_invalid"] += 1
                return None, False
        if len(loc) > self.limits.max_loc_length:
            self.counts["loc_too_long"] += 1
            return None, False
        if _bad_authority(loc):
            self.counts["loc_invalid"] += 1
            return None, False
        return loc, relative

    def _lastmod(self, raw: str | None, feed: bool = False) -> LastMod | None:
        if raw is None:
            return None
        parsed = parse_feed_date(raw, now=self.now) if feed else parse_lastmod(raw, now=self.now)
        if parsed is not None and parsed.value is None:
            self.counts["lastmod_invalid"] += 1
        return parsed

    def _count_url(self) -> bool:
        """Count a URL entry; False when reading must stop at the protocol limit."""
        self.urls += 1
        if self.urls > self.limits.max_urls:
            if self.urls == self.limits.max_urls + 1:
                self.faults.append(
                    TooManyUrls(f"more than {self.limits.max_urls} URLs in one sitemap file")
                )
            self.counts["over_url_limit"] += 1
            return self.limits.keep_excess
        return True

    def _over_sitemap_limit(self) -> bool:
        """An index child past the protocol limit (the same 50,000 as for URLs): counted,
        and kept only with ``keep_excess``."""
        if self.sitemaps == self.limits.max_urls + 1:
            self.faults.append(
                TooManyUrls(f"more than {self.limits.max_urls} sitemaps in one index file")
            )
        self.counts["over_url_limit"] += 1
        return self.limits.keep_excess

    # -- text --------------------------------------------------------------------------

    def _text(self, chunks: Iterable[bytes]) -> Iterator[UrlEntry]:
        decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")  # UTF-16 was transcoded
        pending = ""
        position = 0
        for chunk in chunks:
            pending += decoder.decode(chunk)
            lines = pending.split("\n")
            pending = lines.pop()
            for line in lines:
                entry = self._text_line(line, position)
                if entry is not None:
                    position += 1
                    if not self._count_url():
                        return
                    yield entry
        pending += decoder.decode(b"", final=True)
        entry = self._text_line(pending, position)
        if entry is not None and self._count_url():
            yield entry

    def _text_line(self, line: str, position: int) -> UrlEntry | None:
        line = line.strip().strip("\ufeff")
        if not line or line.startswith("#"):
            return None
        loc, relative = self._loc(line)
        if loc is None:
            return None
        return UrlEntry(loc, relative=relative, position=position)

    # -- XML ---------------------------------------------------------------------------

    def _xml(self, chunks: Iterator[bytes], kind: str) -> Iterator[UrlEntry | SitemapRef]:
        if not (
            self._fast_path
            and kind in ("urlset", "sitemapindex")
            and not self._doctype_removed
            and self.limits.chunk_size <= _SCAN_MAX_CHUNK
            and (self._transcoded or _undeclared_legacy_encoding(self._head) is None)
        ):
            self.parser = "lxml"
            yield from self._lxml(chunks, kind)
            return
        faults_before = len(self.faults)
        scan = Scan(self, chunks)
        yield from scan
        if scan.complete:
            self.parser = "scan"
            return
        self.scan_stopped = scan.reason
        # lxml reads the body and has the last word on everything: the state the scan left
        # goes, and the entries the scan yielded are lxml's first ones (tests/test_scan.py).
        if not scan.yielded and scan.replay is not None and not self._chunks_done:
            # Nothing yielded and the input not exhausted: lxml goes on with the same chunks.
            self.parser = "lxml"
            del self.faults[faults_before:]
            self.counts.clear()
            self.urls = self.sitemaps = 0
            yield from self._lxml(chain(scan.replay, chunks), kind)
            return
        self.parser = "scan+lxml"
        self._restart()
        skip = scan.yielded
        for entry in self._lxml(self._body_chunks(), kind):
            if skip:
                skip -= 1
                continue
            yield entry

    def _lxml(self, chunks: Iterator[bytes], kind: str) -> Iterator[UrlEntry | SitemapRef]:
        head = self._head[:_SNIFF_BYTES]
        if kind == "rss":
            tags: tuple[str, ...] = ("{*}item",)
        elif kind == "atom":
            tags = ("{*}entry",)
        else:
            tags = ("{*}url", "{*}sitemap")
        encoding = "utf-8" if self._transcoded else _undeclared_legacy_encoding(head)
        if encoding is not None and not self._transcoded:
            self.counts["encoding_guessed"] += 1
        source = _XmlSource(chunks)
        at_eof = 0  # errors logged before the input ran out (the rest are about its end)
        events = etree.iterparse(
            source,
            events=("end",),
            tag=tags,
            encoding=encoding,
            recover=True,
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
            collect_ids=False,
            strip_cdata=True,
        )
        handle = self._rss_item if kind == "rss" else self._atom_entry if kind == "atom" else None

        def mark_eof() -> None:
            nonlocal at_eof
            at_eof = len(events.error_log)

        source.on_eof = mark_eof
        try:
            for _, el in events:
                if source.eof and len(events.error_log):
                    # Closed by recovery at the end of a truncated body: incomplete, dropped.
                    self.counts["entry_truncated"] += 1
                    continue
                try:
                    entry = handle(el) if handle else self._sitemap_element(el)
                except UnicodeDecodeError:
                    # libxml2's recovery keeps a reference to a surrogate (&#xD800;) as
                    # bytes lxml cannot decode; the reference is a syntax error too.
                    self.counts["entry_undecodable"] += 1
                    entry = None
                el.clear(keep_tail=False)
                parent = el.getparent()
                if parent is not None:
                    while el.getprevious() is not None:
                        del parent[0]
                if entry is None:
                    continue
                if type(entry) is UrlEntry and not self._count_url():
                    return
                yield entry
        except etree.LxmlError as exc:
            self.faults.append(SitemapSyntaxError(f"XML parsing stopped: {exc}"))
            return
        # A body cut short by the decoder (size cap, truncated or corrupt gzip) ends in the
        # middle of the XML: the errors about its end are that fault, already recorded.
        cut = any(f.code in ("too_large", "decompression_error") for f in self.decoder.faults)
        errors = [
            e
            for i, e in enumerate(events.error_log)
            if e.level >= etree.ErrorLevels.ERROR
            and not (cut and source.eof and i >= at_eof)
            # References to the entities of the DOCTYPE we cut out: already reported.
            and not (self._doctype_removed and e.type_name == "ERR_UNDECLARED_ENTITY")
        ]
        if errors:
            first_error = errors[0]
            self.faults.append(
                SitemapSyntaxError(
                    f"malformed XML at line {first_error.line}: {first_error.message.strip()}"
                    + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
                )
            )

    def _sitemap_element(self, el: _Element) -> UrlEntry | SitemapRef | None:
        tag = el.tag
        is_index = tag[tag.rfind("}") + 1 :] == "sitemap"
        loc_raw = lastmod_raw = changefreq = priority_raw = None
        entry_lists: dict[str, list[dict[str, object]]] | None = None
        mobile = False
        has_loc = False
        for child in el:
            ctag = child.tag
            if type(ctag) is not str:
                continue
            name = ctag[ctag.rfind("}") + 1 :]
            if name == "loc":
                has_loc = True
                if len(child):
                    if any(sub.tag is etree.Entity for sub in child.iter()):
                        # An entity left unexpanded on purpose: the location is unknowable.
                        self.counts["loc_unexpanded_entity"] += 1
                        return None
                    loc_raw = ext.text_of(child)
                else:
                    loc_raw = child.text
                    if loc_raw is not None:
                        loc_raw = loc_raw.strip() or None
            elif name == "lastmod":
                lastmod_raw = child.text
                if lastmod_raw is not None:
                    lastmod_raw = lastmod_raw.strip() or None
            elif is_index:
                continue
            elif name == "changefreq":
                changefreq = ext.text_of(child)
            elif name == "priority":
                priority_raw = ext.text_of(child)
            elif name == "mobile":
                mobile = True
            else:
                if entry_lists is None:
                    entry_lists = {
                        "news": [],
                        "images": [],
                        "videos": [],
                        "alternates": [],
                        "pagemap": [],
                    }
                if name == "link":
                    alt = ext.alternate(child)
                    if alt is not None:
                        entry_lists["alternates"].append(alt)
                elif name == "image":
                    entry_lists["images"].append(ext.image(child))
                elif name == "video":
                    entry_lists["videos"].append(ext.video(child))
                elif name == "news":
                    entry_lists["news"].append(ext.news(child))
                elif name == "PageMap":
                    entry_lists["pagemap"].extend(ext.pagemap(child))
        if not has_loc and is_index and el.text:
            # Lenient: a <sitemap> holding its URL as bare text (seen in the wild).
            loc_raw = el.text.strip() or None
        loc, relative = self._loc(loc_raw)
        if loc is None:
            return None
        lastmod = self._lastmod(lastmod_raw)
        if is_index:
            self.sitemaps += 1
            if self.sitemaps > self.limits.max_urls and not self._over_sitemap_limit():
                return None
            return SitemapRef(loc, lastmod, relative, self.sitemaps - 1)
        priority = None
        if priority_raw is not None:
            try:
                priority = float(priority_raw)
            except ValueError:
                self.counts["priority_invalid"] += 1
            else:
                if not 0.0 <= priority <= 1.0:
                    self.counts["priority_invalid"] += 1
                    priority = None
        entry = UrlEntry(
            loc,
            lastmod,
            changefreq.lower() if changefreq else None,
            priority,
            mobile=mobile,
            relative=relative,
            position=self.urls,
        )
        if entry_lists is not None:
            entry.news = entry_lists["news"]
            entry.images = entry_lists["images"]
            entry.videos = entry_lists["videos"]
            entry.alternates = entry_lists["alternates"]
            entry.pagemap = entry_lists["pagemap"]
        return entry

    def _rss_item(self, el: _Element) -> UrlEntry | None:
        link = guid = date_raw = None
        iso_date = False
        for child in el:
            name = ext.local_name(child.tag)
            if name == "link":
                link = ext.text_of(child) or child.get("href")
            elif name == "guid" and (child.get("isPermaLink") or "true").lower() != "false":
                guid = ext.text_of(child)
            elif name == "pubDate":
                date_raw = ext.text_of(child)
            elif name == "date" and date_raw is None:  # RSS 1.0 dc:date (W3C format)
                date_raw, iso_date = ext.text_of(child), True
        about = el.get("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about")
        loc, relative = self._loc(link or guid or about)
        if loc is None:
            return None
        return UrlEntry(
            loc,
            self._lastmod(date_raw, feed=not iso_date),
            relative=relative,
            position=self.urls,
        )

    def _atom_entry(self, el: _Element) -> UrlEntry | None:
        href = updated = published = None
        for child in el:
            name = ext.local_name(child.tag)
            if name == "link" and href is None and child.get("rel", "alternate") == "alternate":
                href = child.get("href")
                href = href.strip() if href else None
            elif name == "updated":
                updated = ext.text_of(child)
            elif name == "published":
                published = ext.text_of(child)
        loc, relative = self._loc(href)
        if loc is None:
            return None
        return UrlEntry(
            loc, self._lastmod(updated or published), relative=relative, position=self.urls
        )


#: What a reference to a declared (never expanded) entity becomes: a private-use character
#: that marks the text as unknowable. libxml2's own handling of undeclared entities in
#: recovery mode loses the ``&amp;`` of later locations.
_UNEXPANDED = "\ue000"


#: Escape bare ``&``; replace references to non-predefined entities by ``_UNEXPANDED``.
_escape_amps = escape_amps


_XML_DECL_ENCODING = re.compile(rb"^\s*<\?xml[^>]*\bencoding\s*=", re.IGNORECASE)


class _XmlSource:
    """A file-like view of the decoded chunks for ``lxml.etree.iterparse``.

    It drops whitespace before the XML declaration (libxml2 rejects it) and escapes bare
    ``&`` (``?a=1&b=2`` unescaped is the commonest sitemap bug; libxml2's recovery would
    silently eat ``&b``). ``eof`` tells events released by the end of input apart, and
    ``on_eof`` is called once when the input runs out.
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._first = True
        self._held = b""
        self._cdata = False
        self.eof = False
        self.on_eof: Callable[[], None] = lambda: None

    def read(self, size: int = -1) -> bytes:
        for raw in self._chunks:
            chunk = raw
            if self._first:
                self._first = False
                chunk = _strip_leading(chunk)
            if self._held:
                chunk = self._held + chunk
                self._held = b""
            amp = chunk.rfind(b"&")
            if amp >= 0 and len(chunk) - amp < 64:
                # An entity may continue in the next chunk: decide once it is whole.
                chunk, self._held = chunk[:amp], chunk[amp:]
            if b"<![CDATA[" in chunk:
                self._cdata = True  # "&" is literal inside CDATA: stop escaping from here
            if b"&" in chunk and not self._cdata:
                chunk = _escape_amps(chunk)
            if chunk:
                return chunk
        if self._held:
            chunk, self._held = self._held, b""
            return chunk if self._cdata else _escape_amps(chunk)
        if not self.eof:
            self.eof = True
            self.on_eof()
        return b""


def _authority(loc: str) -> str:
    """The ``user@host:port`` part of an absolute URL."""
    start = loc.find("//") + 2
    end = len(loc)
    for separator in "/?#":
        found = loc.find(separator, start, end)
        if found >= 0:
            end = found
    return loc[start:end]


def _bad_authority(loc: str) -> bool:
    """True when an http(s) URL has no host or a port that is not a number up to 65535
    (``Request`` would raise on it, and no server answers there).

    >>> _bad_authority("https://a.example:8080/x"), _bad_authority("http://a.example:x/")
    (False, True)
    """
    netloc = _authority(loc)
    if ":" not in netloc:
        return not netloc
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):  # already checked by safe_url_string
        hostport = hostport.rpartition("]")[2]
        return bool(hostport) and not (hostport[0] == ":" and _port_ok(hostport[1:]))
    host, _, port = hostport.partition(":")  # a second colon makes the port invalid
    return not host or not _port_ok(port)


def _port_ok(port: str) -> bool:
    return not port or (port.isascii() and port.isdigit() and int(port) <= 65535)


def _wide_encoding(first: bytes) -> str | None:
    """UTF-16 or UTF-32, by BOM or by the zero bytes around a leading ``<``; else None.

    >>> _wide_encoding(b"\\xff\\xfe<\\x00"), _wide_encoding(b"\\x00<\\x00?")
    ('utf-16', 'utf-16-be')
    >>> _wide_encoding(b"<?xm") is None
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


def _transcode(chunks: Iterable[bytes], encoding: str) -> Iterator[bytes]:
    """Re-encode a UTF-16/32 stream as UTF-8 (the BOM goes; bad sequences become U+FFFD)."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text.encode("utf-8", "replace")
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8", "replace")


def _undeclared_legacy_encoding(head: bytes) -> str | None:
    """windows-1252 for a body with no BOM, no declared encoding and bytes that are not UTF-8."""
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


def _strip_leading(chunk: bytes) -> bytes:
    """Drop whitespace before ``<?xml`` (libxml2 rejects it) after an optional UTF-8 BOM."""
    if chunk.startswith(codecs.BOM_UTF8):
        chunk = chunk[3:]
    if chunk[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return chunk
    return chunk.lstrip(b" \t\r\n\x00")
