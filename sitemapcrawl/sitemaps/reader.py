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

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Iterable, Iterator

    from lxml.etree import _Element

    from .dates import LastMod

__all__ = ["SITEMAP_KINDS", "SitemapReader", "sniff"]

#: Kinds that hold URLs. ``html``, ``empty`` and ``unknown`` are the other sniff results.
SITEMAP_KINDS: Final = ("urlset", "sitemapindex", "text", "rss", "atom")

_SNIFF_BYTES = 64 * 1024
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
_ENTITY_DECL = re.compile(r"<!ENTITY|<!DOCTYPE[^>\[]*\b(?:SYSTEM|PUBLIC)\b", re.IGNORECASE)


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

    >>> body = b'<urlset><url><loc>/a</loc><lastmod>2024-05-01</lastmod></url></urlset>'
    >>> [(e.loc, e.lastmod.iso, e.relative) for e in SitemapReader(body, "https://x.example/s.xml")]
    [('https://x.example/a', '2024-05-01T00:00:00Z', True)]
    """

    def __init__(
        self,
        body: bytes,
        url: str,
        *,
        limits: Limits | None = None,
        now: dt.datetime | None = None,
    ) -> None:
        self.url = url
        self.limits = limits or Limits()
        self.now = now
        self.decoder = BodyDecoder(
            body,
            max_size=self.limits.max_size,
            chunk_size=self.limits.chunk_size,
            max_layers=self.limits.max_gzip_layers,
        )
        self.kind: str | None = None
        self.root: str | None = None
        self.faults: list[SitemapError] = []
        self.counts: Counter[str] = Counter()
        self.urls = 0
        self.sitemaps = 0
        self._chunks: Iterator[bytes] | None = None
        self._head = b""
        self._doctype_removed = False

    # -- sniffing ----------------------------------------------------------------------

    def sniff(self) -> str:
        """Decode enough of the body to tell its kind; idempotent.

        For XML that is up to the root element (however long the prolog, within 1 MiB). A
        DOCTYPE is cut out of the stream here: a sitemap needs no DTD, and without one no
        entity can be expanded, fetched, or amplified.
        """
        if self.kind is not None:
            return self.kind
        self._chunks = iter(self.decoder)
        head = b""
        for chunk in self._chunks:
            head += chunk
            if _head_complete(head):
                break
        self.kind = sniff(head[:_MAX_PROLOG])
        if self.kind == "xml":
            # An XML root we do not know: read it like a urlset, by local names (lenient).
            self.root = _root_name(_decode_head(head[:_SNIFF_BYTES])[0])
        if self.kind in (*SITEMAP_KINDS[:2], "rss", "atom", "xml"):
            head = self._strip_doctype(head)
        self._head = head
        self._kind_fault()
        return self.kind

    def _strip_doctype(self, head: bytes) -> bytes:
        if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or head[:4] in (
            codecs.BOM_UTF32_LE,
            codecs.BOM_UTF32_BE,
        ):
            return head  # not ASCII-compatible: libxml2 keeps entities unexpanded anyway
        text = head[:_MAX_PROLOG].decode("latin-1")  # one char per byte: positions match
        found = _prolog(text)
        if found is None or found[0] < 0:
            return head
        start, end, _ = found
        if _ENTITY_DECL.search(text, start, end):
            self.faults.append(
                EntitiesDeclared(
                    "the document declares entities or an external DTD; none were expanded"
                )
            )
        self._doctype_removed = True
        return head[:start] + head[end:]

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
        self.faults.extend(self.decoder.faults)

    # -- iteration ---------------------------------------------------------------------

    def __iter__(self) -> Iterator[UrlEntry | SitemapRef]:
        kind = self.sniff()
        if kind in ("html", "empty", "unknown"):
            self.faults.extend(self.decoder.faults)
            return
        if kind == "text":
            yield from self._text(self._body_chunks())
        else:
            yield from self._xml(self._body_chunks(), kind)

    # -- locations ---------------------------------------------------------------------

    def _loc(self, raw: str | None) -> tuple[str | None, bool]:
        """Validate one location: absolute http(s), within the length limit."""
        if raw is None:
            self.counts["loc_missing"] += 1
            return None, False
        loc = raw
        relative = False
        if not loc.startswith(_HTTP):
            lowered = loc[:8].lower()
            if not lowered.startswith(_HTTP):
                scheme, colon, _ = loc.partition(":")
                if colon and scheme.isalpha() and not loc.startswith("//"):
                    self.counts["loc_bad_scheme"] += 1
                    return None, False
                loc = urljoin(self.url, loc)
                relative = True
                self.counts["loc_relative"] += 1
        if not loc.isascii() or " " in loc:
            loc = safe_url_string(loc.strip())
        if len(loc) > self.limits.max_loc_length:
            self.counts["loc_too_long"] += 1
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

    # -- text --------------------------------------------------------------------------

    def _text(self, chunks: Iterable[bytes]) -> Iterator[UrlEntry]:
        decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
        if self._head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
            decoder = codecs.getincrementaldecoder("utf-16")("replace")
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
        head = self._head[:_SNIFF_BYTES]
        if kind == "rss":
            tags: tuple[str, ...] = ("{*}item",)
        elif kind == "atom":
            tags = ("{*}entry",)
        else:
            tags = ("{*}url", "{*}sitemap")
        encoding = _undeclared_legacy_encoding(head)
        if encoding is not None:
            self.counts["encoding_guessed"] += 1
        source = _XmlSource(chunks)
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
        try:
            for _, el in events:
                if source.eof and len(events.error_log):
                    # Closed by recovery at the end of a truncated body: incomplete, dropped.
                    self.counts["entry_truncated"] += 1
                    continue
                entry = handle(el) if handle else self._sitemap_element(el)
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
        errors = [
            e
            for e in events.error_log
            if e.level >= etree.ErrorLevels.ERROR
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


_BARE_AMP = re.compile(rb"&(?!(?:[A-Za-z_][\w.\-]{0,40}|#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,8});)")
_XML_DECL_ENCODING = re.compile(rb"^\s*<\?xml[^>]*\bencoding\s*=", re.IGNORECASE)


class _XmlSource:
    """A file-like view of the decoded chunks for ``lxml.etree.iterparse``.

    It drops whitespace before the XML declaration (libxml2 rejects it) and escapes bare
    ``&`` (``?a=1&b=2`` unescaped is the commonest sitemap bug; libxml2's recovery would
    silently eat ``&b``). ``eof`` tells events released by the end of input apart.
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._first = True
        self._held = b""
        self._cdata = False
        self.eof = False

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
                chunk = _BARE_AMP.sub(b"&amp;", chunk)
            if chunk:
                return chunk
        if self._held:
            chunk, self._held = self._held, b""
            return chunk if self._cdata else _BARE_AMP.sub(b"&amp;", chunk)
        self.eof = True
        return b""


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
