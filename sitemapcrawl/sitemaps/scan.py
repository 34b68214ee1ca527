"""A fast path for well-formed XML urlsets and sitemap indexes.

``Scan`` reads the decoded byte stream with compiled regular expressions and ``bytes``
methods instead of building an lxml tree: one regex match per ordinary ``<url>`` (``loc``,
``lastmod``, ``changefreq``, ``priority`` in that order as plain text, then ``xhtml:link``
alternates and ``image:image`` entries of the common shape), and one ``findall`` into light
elements for any other ``<url>`` or ``<sitemap>`` (other extensions, attributes, orders,
prefixes), which go through the reader's own ``_sitemap_element``. It understands only a
strict subset of XML and stops, with a reason, at the first thing it does not fully
understand: comments, CDATA, processing instructions or text between entries, entities
other than the five predefined ones and valid character references, undeclared prefixes,
``xmlns`` below the root, malformed or unbalanced tags, control characters, invalid UTF-8,
an entry or a run of white space over ``_MAX_BLOCK`` bytes, a body that ends before the
root is closed, anything after it. The reader then hands the body to lxml
(``SitemapReader._xml``), which gives the answer for the whole file; the entries the
scanner yielded are exactly lxml's first ones (``tests/test_scan.py`` checks it).

In an ordinary entry, the common cases take shortcuts that give what the general code
would: a plain location is checked with ``translate`` and a cached scheme and authority,
a W3C ``lastmod`` is decoded by ``dates.w3c_lastmod``, and extensions made only of
printable ASCII are split rather than decoded value by value.

The scanner keeps at most one chunk plus one entry in memory (its caches are bounded), and
reads the chunks as the decoder produces them, so the decoder's caps apply unchanged.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, cast

from .dates import w3c_lastmod
from .model import SitemapRef, UrlEntry

if TYPE_CHECKING:
    from collections.abc import Iterator

    from lxml.etree import _Element

    from .dates import LastMod
    from .reader import SitemapReader

__all__ = ["Scan", "escape_amps"]

_BARE_AMP = re.compile(rb"&(?!(?:[A-Za-z_][\w.\-]{0,40}|#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,8});)")
_ENTITY_REF = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos);)[A-Za-z_][\w.\-]{0,40};")


def escape_amps(chunk: bytes) -> bytes:
    """Escape bare ``&``; replace references to non-predefined entities by U+E000.

    >>> escape_amps(b"a?b=1&c=2 &nbsp; &amp;")
    b'a?b=1&amp;c=2 &#xE000; &amp;'
    """
    return _ENTITY_REF.sub(b"&#xE000;", _BARE_AMP.sub(b"&amp;", chunk))


class _Unsupported(Exception):
    """Something the scanner does not fully understand: lxml must read the body."""


#: Past this many bytes, one entry is not an ordinary entry: lxml reads it (and its caps
#: on text and name sizes apply).
_MAX_BLOCK: Final = 1024 * 1024
#: A start tag may need this many bytes before the scanner can tell it is malformed.
_MAX_TAG: Final = 64 * 1024
_MAX_DEPTH: Final = 32
_CACHE_MAX: Final = 4096

_S = rb"[ \t\n\r]*"
_TEXT = rb"([^<]*)"
# (An optional part is written "(?:...|)", not "(?:...)?": the same matches, and the
# regex engine takes a branch faster than it repeats a group at most once.)
_CORE = (
    _S + rb"<url>" + _S
    + rb"<loc>[ \t\n\r]*+" + _TEXT + rb"</loc>" + _S
    + rb"(?:<lastmod>" + _TEXT + rb"</lastmod>" + _S + rb"|)"
    + rb"(?:<changefreq>" + _TEXT + rb"</changefreq>" + _S + rb"|)"
    + rb"(?:<priority>" + _TEXT + rb"</priority>" + _S + rb"|)"
)  # fmt: skip
_LINK = (
    rb"<xhtml:link[ \t\n\r]+rel=\"([^\"<]*)\"[ \t\n\r]+hreflang=\"([^\"<]*)\""
    rb"[ \t\n\r]+href=\"([^\"<]*)\"[ \t\n\r]*/>"
)
_IMAGE = (
    rb"<image:image>" + _S + rb"<image:loc>" + _TEXT + rb"</image:loc>" + _S
    + rb"(?:<image:title>" + _TEXT + rb"</image:title>" + _S + rb"|)"
    + rb"(?:<image:caption>" + _TEXT + rb"</image:caption>" + _S + rb"|)"
    + rb"</image:image>"
)  # fmt: skip
#: One extension element of the shapes ``_simple`` takes: groups 1-3 a link's rel,
#: hreflang and href, 4-6 an image's loc, title and caption.
_EXTENSION = re.compile(_LINK + rb"|" + _IMAGE)
#: The same for ASCII text (``_PLAIN_TEXT``), as ``str``.
_EXTENSION_TEXT = re.compile((_LINK + rb"|" + _IMAGE).decode("ascii"))
#: Tab, newline and printable ASCII but "&" (and DEL): text of these bytes (without "]]>")
#: is what ``_text`` gives back decoded, and ``_attr_value`` with tabs and newlines as spaces.
_PLAIN_TEXT = b"\t\n" + bytes(range(0x20, 0x26)) + bytes(range(0x27, 0x80))
_ATTR_SPACE_TEXT = str.maketrans("\t\n", "  ")
#: An image's fields in the images-only text of an entry.
_IMAGE_FIELD = re.compile(r"<image:(loc|title|caption)>([^<]*)")
_SIMPLE: dict[tuple[bool, bool], re.Pattern[bytes]] = {}


def _simple(links: bool, images: bool) -> re.Pattern[bytes]:
    """An ordinary entry: the four protocol tags, unprefixed, in protocol order, text
    only (groups 1-4); then, when their prefixes are declared, ``xhtml:link`` alternates
    and ``image:image`` entries of the commonest shape (group 5)."""
    key = (links, images)
    if key not in _SIMPLE:
        # The same shapes without their groups: ``_EXTENSION`` reads them afterwards.
        shapes = [
            shape.replace(b"([^", b"(?:[^")
            for shape, on in ((_LINK, links), (_IMAGE, images))
            if on
        ]
        extensions = rb"((?:(?:" + rb"|".join(shapes) + rb")" + _S + rb")*)" if shapes else rb"()"
        _SIMPLE[key] = re.compile(_CORE + extensions + rb"</url>")
    return _SIMPLE[key]


_SPACE = re.compile(_S)
#: A W3C datetime's characters, nothing to strip, decode or check (``_text`` is a no-op).
_LASTMOD_SHAPE = re.compile(
    rb"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt][0-9:.]{5,40}(?:[Zz]|[+-][0-9:]{2,5})?)?"
)
_END = re.compile(_S + rb">")
_NAME = rb"[A-Za-z_][A-Za-z0-9_.\-]{0,99}"
_QNAME = _NAME + rb"(?::" + _NAME + rb")?"
_TAG = re.compile(
    rb"<(/?)(" + _QNAME + rb")((?:[ \t\n\r]+" + _QNAME + rb"[ \t\n\r]*=[ \t\n\r]*"
    rb"(?:\"[^\"<]*\"|'[^'<]*'))*)[ \t\n\r]*(/?)>"
)
#: One token of a block: a tag (end?, name, attributes, empty?) or character data.
_TOKEN = re.compile(
    rb"<(/?)(" + _QNAME + rb")((?:[ \t\n\r]+" + _QNAME + rb"[ \t\n\r]*=[ \t\n\r]*"
    rb"(?:\"[^\"<]*\"|'[^'<]*'))*)[ \t\n\r]*(/?)>|([^<]+)"
)
_ATTR = re.compile(rb"(" + _QNAME + rb")[ \t\n\r]*=[ \t\n\r]*(?:\"([^\"<]*)\"|'([^'<]*)')")
_XML_DECL = re.compile(
    rb"<\?xml[ \t\n\r]+version[ \t\n\r]*=[ \t\n\r]*(?:\"1\.0\"|'1\.0')"
    rb"(?:[ \t\n\r]+encoding[ \t\n\r]*=[ \t\n\r]*(?:\"([A-Za-z0-9._\-]+)\"|'([A-Za-z0-9._\-]+)'))?"
    rb"(?:[ \t\n\r]+standalone[ \t\n\r]*=[ \t\n\r]*(?:\"(?:yes|no)\"|'(?:yes|no)'))?"
    rb"[ \t\n\r]*\?>"
)
#: A namespace name libxml2 takes without a warning: an absolute URI of plain characters.
_NS_URI = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]*:[A-Za-z0-9\-._~:/?#@!$'()*+,;=%]*")
#: Characters XML does not allow (C0 controls but tab and newlines; U+FFFE, U+FFFF).
_NOT_CHAR = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")
_REF = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#([0-9]{1,8})|#x([0-9A-Fa-f]{1,8}));")
_PREDEFINED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_ATTR_SPACE = bytes.maketrans(b"\t\n\r", b"   ")
#: Bytes looked for with ``in`` as ints: ``b"&" in raw`` first tries ``b"&"`` as an int,
#: and formats the error message it then drops, which costs more than the search.
_CR, _AMP = b"\r&"
#: An absolute http(s) location with a plain host and an optional port up to 65535: with
#: every byte in ``[!-Z^-~]`` (checked with ``translate``), it is ``reader._PLAIN_URL``.
_PLAIN_HEAD = re.compile(
    rb"https?://[A-Za-z0-9._~%!$&'()*+,;=\-]+"
    rb"(?::(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
    rb"(?=[/?#]|\Z)"
)
_URL_BYTES = bytes(range(0x21, 0x5B)) + bytes(range(0x5E, 0x7F))  # [!-Z^-~]
#: ``[!-Z^-~]`` but "&" (and "<") as themselves, every other byte as NUL.
_PLAIN_BYTES = bytes(c if c in _URL_BYTES and c not in b"&<" else 0 for c in range(256))
_XML_NS = "http://www.w3.org/XML/1998/namespace"


def _valid_char(code: int) -> bool:
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def _deref(match: re.Match[str]) -> str:
    name, dec, hexa = match.groups()
    if name is not None:
        return _PREDEFINED[name]
    code = int(dec) if dec is not None else int(hexa, 16)
    if not _valid_char(code):
        raise _Unsupported("a character reference to a character XML does not allow")
    return chr(code)


def _text(raw: bytes) -> str:
    """Character data as lxml gives it: newlines normalised, the stream's ``&`` escaping
    applied, references expanded. Raises ``_Unsupported`` on what lxml would report."""
    if _CR in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return _decode(raw)


def _decode(raw: bytes) -> str:
    if raw.isascii():  # printable ASCII needs no checking but for "&" and "]]>"
        text = raw.decode("ascii")
        if text.isprintable() and "&" not in text and "]]>" not in text:
            return text
    if b"]]>" in raw:
        raise _Unsupported("']]>' in character data")
    if _NOT_CHAR.search(raw):
        raise _Unsupported("a character XML does not allow")
    if _AMP in raw:
        raw = escape_amps(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unsupported("invalid UTF-8") from exc
    if "&" in text:
        rest = _REF.sub("", text)
        if "&" in rest:  # "&#X41;", "&#0000000065;": not a reference XML knows
            raise _Unsupported("a malformed reference")
        text = _REF.sub(_deref, text)
    return text


def _prose(raw: bytes) -> str | None:
    """``ext._prose`` of an element with this text."""
    text = _text(raw).strip()
    return " ".join(text.split()) if text else None


def _attr_value(raw: bytes) -> str:
    """An attribute value as lxml gives it: literal tabs and newlines become spaces."""
    if _CR in raw:
        raw = raw.replace(b"\r\n", b" ")
    return _decode(raw.translate(_ATTR_SPACE))


def _alternate(alternates: list[dict[str, Any]], rel: str, hreflang: str, href: str) -> None:
    """``ext.alternate`` of a link whose attribute values are plain ASCII text."""
    if "\t" in href or "\n" in href:
        href = href.translate(_ATTR_SPACE_TEXT)
    href = href.strip()
    if href:
        if "\t" in rel or "\n" in rel:
            rel = rel.translate(_ATTR_SPACE_TEXT)
        if "\t" in hreflang or "\n" in hreflang:
            hreflang = hreflang.translate(_ATTR_SPACE_TEXT)
        alternates.append({"rel": rel, "hreflang": hreflang, "href": href})


class _El:
    """The part of lxml's element API that ``_sitemap_element`` and ``extensions`` use."""

    __slots__ = ("attrib", "children", "tag", "tail", "text")

    def __init__(self, tag: str, attrib: dict[str, str]) -> None:
        self.tag = tag
        self.attrib = attrib
        self.text: str | None = None
        self.tail: str | None = None
        self.children: list[_El] = []

    def __len__(self) -> int:
        return len(self.children)

    def __iter__(self) -> Iterator[_El]:
        return iter(self.children)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.attrib.get(key, default)

    def iter(self) -> Iterator[_El]:
        yield self
        for child in self.children:
            yield from child.iter()

    def itertext(self) -> Iterator[str]:
        if self.text:
            yield self.text
        for child in self.children:
            yield from child.itertext()
            if child.tail:
                yield child.tail


class Scan:
    """One scan of one body. Iterate to get the entries; afterwards ``complete`` says
    whether the scanner read the whole document (else ``reason`` says why it stopped and
    lxml must read it), and ``replay`` holds the chunks it consumed when it yielded
    nothing and they fit in ``_MAX_BLOCK`` (lxml can then go on with them), else None."""

    def __init__(self, reader: SitemapReader, chunks: Iterator[bytes]) -> None:
        self.reader = reader
        self.chunks = chunks
        self.complete = False
        self.reason: str | None = None
        self.replay: list[bytes] | None = []
        self.yielded = 0
        self._replay_size = 0
        self._eof = False
        self._ns: dict[str, str] = {}
        self._root = b""
        self._lastmods: dict[bytes, LastMod] = {}  # what w3c_lastmod gave
        self._days: dict[bytes, LastMod] = {}  # the same for the values of 10 bytes
        self._other_lastmods: dict[bytes, LastMod | None] = {}
        self._names: dict[tuple[bytes, bool], str] = {}
        self._blanks: dict[bytes, str] = {}
        self._changefreqs: dict[bytes, str | None] = {}
        self._priorities: dict[bytes, tuple[float | None, bool]] = {}
        self._plain_priorities: dict[bytes, float] = {}

    # -- input --------------------------------------------------------------------------

    def _read(self) -> bytes | None:
        for chunk in self.chunks:
            if self.replay is not None:
                self.replay.append(chunk)
                self._replay_size += len(chunk)
                if self.yielded or self._replay_size > _MAX_BLOCK:
                    self.replay = None
            if chunk:
                return chunk
        self._eof = True
        return None

    # -- the document -------------------------------------------------------------------

    def __iter__(self) -> Iterator[UrlEntry | SitemapRef]:
        return self._content()

    def _head(self) -> tuple[bytes, int]:
        """Read the XML declaration (if any) and the root element's start tag; return the
        buffer and the position after them."""
        buf = b""
        while True:
            chunk = self._read()
            if chunk is None:
                raise _Unsupported("the body ends in the root element's start tag")
            buf += chunk
            if buf.startswith(b"<?"):
                decl = _XML_DECL.match(buf)
                if decl is None:
                    if b"?>" in buf:
                        raise _Unsupported("an XML declaration the scanner does not read")
                    continue
                encoding = decl.group(1) or decl.group(2)
                if (
                    encoding is not None
                    and encoding.lower() != b"utf-8"
                    and not self.reader._transcoded
                ):
                    raise _Unsupported("a declared encoding other than UTF-8")
                pos = _SPACE.match(buf, decl.end()).end()  # type: ignore[union-attr]
            else:
                pos = 0
            root = _TAG.match(buf, pos)
            if root is None:
                if len(buf) - pos < _MAX_TAG:
                    continue
                raise _Unsupported("a root start tag the scanner does not read")
            break
        closing, qname, attrs, empty = root.groups()
        if closing or empty:
            raise _Unsupported("an empty root element")
        self._root = qname
        self._declare(attrs)
        self._qname(qname, element=True)
        return buf, root.end()

    def _declare(self, attrs: bytes) -> None:
        """Read the root's namespace declarations; check its other attributes."""
        others = []
        seen = set()
        for match in _ATTR.finditer(attrs):
            name, dq, sq = match.groups()
            value = dq if dq is not None else sq
            if name in seen:
                raise _Unsupported("a repeated attribute")
            seen.add(name)
            if name == b"xmlns" or name.startswith(b"xmlns:"):
                prefix = name[6:].decode("ascii")
                if prefix in ("xml", "xmlns") or _NS_URI.fullmatch(value) is None:
                    raise _Unsupported("a namespace declaration the scanner does not read")
                self._ns[prefix] = value.decode("ascii")
            else:
                others.append((name, value))
        expanded = set()
        for name, value in others:
            qualified = self._qname(name, element=False)
            if qualified in expanded:
                raise _Unsupported("a repeated attribute")
            expanded.add(qualified)
            _attr_value(value)

    def _qname(self, qname: bytes, *, element: bool) -> str:
        """The name in lxml's ``{namespace}local`` form."""
        key = (qname, element)
        name = self._names.get(key)
        if name is None:
            if len(self._names) >= _CACHE_MAX:  # made-up names must not grow it unbounded
                self._names.clear()
            name = self._names[key] = self._expand(qname, element=element)
        return name

    def _expand(self, qname: bytes, *, element: bool) -> str:
        prefix, colon, local = qname.decode("ascii").rpartition(":")
        if not colon:
            uri = self._ns.get("") if element else None
            return f"{{{uri}}}{local}" if uri else local
        if prefix == "xml":
            return f"{{{_XML_NS}}}{local}"
        if prefix.startswith("xmlns") or prefix not in self._ns:
            raise _Unsupported(f"an undeclared namespace prefix {prefix!r}")
        return f"{{{self._ns[prefix]}}}{local}"

    def _content(self) -> Iterator[UrlEntry | SitemapRef]:
        # One generator, not three: each level of ``yield from`` costs every entry.
        try:
            buf, pos = self._head()
        except _Unsupported as exc:
            self.reason = str(exc)
            return
        reader = self.reader
        limits = reader.limits
        max_urls = limits.max_urls
        max_loc = limits.max_loc_length
        now = reader.now
        simple = _simple("xhtml" in self._ns, "image" in self._ns).match
        space = _SPACE.match
        plain = _PLAIN_HEAD.match
        check_loc = reader._loc
        plain_bytes = _PLAIN_BYTES
        head = b"\0"  # what the last plain location started with, up to its path
        lastmods = self._lastmods
        days = self._days
        w3c = w3c_lastmod
        other_lastmod = self._other_lastmod
        changefreqs = self._changefreqs
        changefreq_of = self._changefreq
        priorities = self._plain_priorities
        priority_of = self._priority
        extensions_of = self._extensions
        entry_type = UrlEntry
        end_tag = b"</" + self._root
        blank = 0  # white space between entries since the last one, across chunks
        try:
            while True:
                match = simple(buf, pos)
                if match is not None:
                    blank = 0
                    # _sitemap_element for an entry of loc, lastmod, changefreq, priority.
                    pos = match.end()
                    loc_b, lastmod_b, changefreq_b, priority_b, extensions = match.groups()
                    loc_b = loc_b.rstrip(b" \t\n\r")  # (the regex took the leading space)
                    if loc_b.startswith(head):
                        plain_head = True
                    else:
                        start = plain(loc_b)
                        plain_head = start is not None
                        if start is not None and start.end() < len(loc_b):
                            # The match depends on nothing after the "/", "?" or "#"
                            # that ends it: a location that starts the same matches.
                            head = loc_b[: start.end() + 1]
                    if (
                        plain_head
                        and 0 not in loc_b.translate(plain_bytes)
                        and len(loc_b) <= max_loc
                    ):
                        loc = loc_b.decode("ascii")  # reader._loc would return it as is
                        relative = False
                    else:
                        checked, relative = check_loc(_text(loc_b).strip() or None)
                        if checked is None:
                            continue
                        loc = checked
                    lastmod = None
                    if lastmod_b is not None:
                        # Dates apart: they repeat, times may not (and would evict them).
                        cache = days if len(lastmod_b) == 10 else lastmods
                        lastmod = cache.get(lastmod_b)
                        if lastmod is None:
                            lastmod = w3c(lastmod_b, now)
                            if lastmod is None:
                                lastmod = other_lastmod(lastmod_b)
                            else:
                                if len(cache) >= _CACHE_MAX:
                                    cache.clear()
                                cache[lastmod_b] = lastmod
                    changefreq = None
                    if changefreq_b is not None:
                        changefreq = changefreqs.get(changefreq_b) or changefreq_of(changefreq_b)
                    priority = None
                    if priority_b is not None:
                        priority = priorities.get(priority_b)
                        if priority is None:
                            priority = priority_of(priority_b)
                    urls = reader.urls
                    # UrlEntry's fields in order (tests/test_scan.py checks it): a call
                    # without keywords or default factories is cheaper.
                    if extensions:
                        alternates, images = extensions_of(extensions)
                        entry = entry_type(
                            loc, lastmod, changefreq, priority,
                            [], images, [], alternates, False, [], relative, urls,
                        )  # fmt: skip
                    else:
                        entry = entry_type(
                            loc, lastmod, changefreq, priority,
                            [], [], [], [], False, [], relative, urls,
                        )  # fmt: skip
                    urls += 1
                    reader.urls = urls
                    if urls > max_urls and not self._over_limit():
                        self.complete = True
                        return
                    self.yielded += 1
                    yield entry
                    continue
                end = space(buf, pos).end()  # type: ignore[union-attr]
                blank += end - pos
                pos = end
                if blank > _MAX_BLOCK:  # lxml keeps it as a text node, and caps those
                    raise _Unsupported(f"more than {_MAX_BLOCK} bytes of white space")
                if pos >= len(buf):
                    if self._eof:
                        raise _Unsupported("the body ends before the root element is closed")
                    buf, pos = self._more(buf, pos)
                    continue
                if buf[pos] != 0x3C:  # "<"
                    raise _Unsupported("text between entries")
                if buf.startswith(end_tag, pos):
                    self._end(buf, pos + len(end_tag))
                    return
                block = self._block(buf, pos)
                if block is None:
                    if self._eof:
                        raise _Unsupported("the body ends inside an entry")
                    buf, pos = self._more(buf, pos)
                    continue
                element, pos = block
                blank = 0
                found = reader._sitemap_element(cast("_Element", element))
                if found is None:
                    continue
                if type(found) is UrlEntry and not reader._count_url():
                    self.complete = True
                    return
                self.yielded += 1
                yield found
        except _Unsupported as exc:
            self.reason = str(exc)

    def _other_lastmod(self, raw: bytes) -> LastMod | None:
        """``reader._lastmod`` of a ``<lastmod>`` text ``w3c_lastmod`` does not take."""
        cache = self._other_lastmods
        if raw in cache:
            lastmod = cache[raw]
            if lastmod is not None and lastmod.value is None:
                self.reader.counts["lastmod_invalid"] += 1
            return lastmod
        if _LASTMOD_SHAPE.fullmatch(raw) is not None:
            lastmod = self.reader._lastmod(raw.decode("ascii"))
        else:
            lastmod = self.reader._lastmod(_text(raw).strip() or None)
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        if lastmod is None or "future" not in lastmod.flags:
            cache[raw] = lastmod
        return lastmod

    @staticmethod
    def _extensions(raw: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``ext.alternate`` and ``ext.image`` for the shapes of ``_EXTENSION``: the
        alternates and the images."""
        alternates: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        if not raw.translate(None, _PLAIN_TEXT) and raw.find(b"]]>") < 0:
            # ASCII without references, CRs or control characters: ``_text`` is a mere
            # decode, ``_attr_value`` turns tabs and newlines into spaces.
            if raw.find(b"<image:") < 0:  # alternates only: three quoted values each
                # (white space out of the values is dropped: it may be made spaces)
                parts = raw.translate(_ATTR_SPACE).decode("ascii").split('"')
                for rel, hreflang, href in zip(parts[1::6], parts[3::6], parts[5::6], strict=True):
                    stripped = href.strip()
                    if stripped:
                        alternates.append({"rel": rel, "hreflang": hreflang, "href": stripped})
                return alternates, images
            text = raw.decode("ascii")
            if "<xhtml:" not in text:  # images only: a loc first, a title, a caption
                image: dict[str, Any] = {}
                for name, value in _IMAGE_FIELD.findall(text):
                    if name == "loc":
                        image = {
                            "loc": value.strip() or None,
                            "caption": None,
                            "title": None,
                            "geo_location": None,
                            "license": None,
                        }
                        images.append(image)
                    else:
                        prose = value.strip()
                        image[name] = " ".join(prose.split()) if prose else None
            else:
                for match in _EXTENSION_TEXT.finditer(text):
                    rel, hreflang, href, loc, title, caption = match.groups()
                    if href is not None:
                        _alternate(alternates, rel, hreflang, href)
                        continue
                    if title is not None:
                        title = title.strip()
                        title = " ".join(title.split()) if title else None
                    if caption is not None:
                        caption = caption.strip()
                        caption = " ".join(caption.split()) if caption else None
                    images.append(
                        {
                            "loc": loc.strip() or None,
                            "caption": caption,
                            "title": title,
                            "geo_location": None,
                            "license": None,
                        }
                    )
            return alternates, images
        for element in _EXTENSION.finditer(raw):
            rel_b, hreflang_b, href_b, loc_b, title_b, caption_b = element.groups()
            if href_b is not None:
                href = _attr_value(href_b).strip()
                # Decoded even when the link is dropped: lxml reports what they hold.
                rel = _attr_value(rel_b)
                hreflang = _attr_value(hreflang_b)
                if href:
                    alternates.append({"rel": rel, "hreflang": hreflang, "href": href})
                continue
            loc = _text(loc_b).strip() or None
            title = None if title_b is None else _prose(title_b)
            images.append(
                {
                    "loc": loc,
                    "caption": None if caption_b is None else _prose(caption_b),
                    "title": title,
                    "geo_location": None,
                    "license": None,
                }
            )
        return alternates, images

    def _over_limit(self) -> bool:
        """``reader._count_url`` after its increment, for the inlined count."""
        reader = self.reader
        reader.urls -= 1
        return reader._count_url()

    def _changefreq(self, raw: bytes) -> str | None:
        cache = self._changefreqs
        if raw in cache:
            return cache[raw]
        text = _text(raw).strip() or None  # ext.text_of
        value = text.lower() if text else None
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[raw] = value
        return value

    def _priority(self, raw: bytes) -> float | None:
        """The value; ``_plain_priorities`` caches the valid ones, this the others."""
        cached = self._priorities.get(raw)
        if cached is None:
            text = _text(raw).strip() or None  # ext.text_of
            priority = None
            invalid = False
            if text is not None:
                try:
                    priority = float(text)
                except ValueError:
                    invalid = True
                else:
                    if not 0.0 <= priority <= 1.0:
                        invalid = True
                        priority = None
            cached = (priority, invalid)
            if len(self._priorities) >= _CACHE_MAX:
                self._priorities.clear()
                self._plain_priorities.clear()
            self._priorities[raw] = cached
            if priority is not None:
                self._plain_priorities[raw] = priority
        if cached[1]:
            self.reader.counts["priority_invalid"] += 1
        return cached[0]

    def _more(self, buf: bytes, pos: int) -> tuple[bytes, int]:
        """Drop what was read and append the next chunk; at the end, set ``_eof``."""
        if len(buf) - pos > _MAX_BLOCK:
            raise _Unsupported(f"an entry longer than {_MAX_BLOCK} bytes")
        chunk = self._read()
        if chunk is None:
            return buf[pos:], 0
        return buf[pos:] + chunk, 0

    def _end(self, buf: bytes, pos: int) -> None:
        """After ``</root``: ``>``, then nothing but white space to the end of the body."""
        while True:
            match = _END.match(buf, pos)
            if match is not None:
                pos = match.end()
                break
            if self._eof or buf[pos:].strip(b" \t\n\r"):
                raise _Unsupported("a malformed end tag of the root element")
            buf, pos = self._more(buf, pos)
        while True:
            pos = _SPACE.match(buf, pos).end()  # type: ignore[union-attr]
            if pos < len(buf):
                raise _Unsupported("content after the root element")
            if self._eof:
                self.complete = True
                return
            buf, pos = self._more(buf, pos)

    # -- one block ------------------------------------------------------------------------

    def _block(self, buf: bytes, pos: int) -> tuple[_El, int] | None:
        """Parse the element at ``pos`` (a ``<url>`` or ``<sitemap>``) into ``_El``s;
        None when the buffer ends first."""
        head = _TAG.match(buf, pos)
        if head is None:
            if buf[pos + 1 : pos + 2] in (b"!", b"?"):
                raise _Unsupported("a comment, CDATA section, DOCTYPE or PI")
            if not self._eof and len(buf) - pos < _MAX_TAG:
                return None
            raise _Unsupported("markup the scanner does not read")
        if head.group(1):
            raise _Unsupported("a malformed or unbalanced end tag")
        qname = head.group(2)
        if head.group(4):
            end = head.end()
        else:  # the first end tag of that name closes it (a nested entry is refused)
            close = buf.find(b"</" + qname, head.end())
            if close < 0:
                return None
            tail = _END.match(buf, close + 2 + len(qname))
            if tail is None:
                if buf[close + 2 + len(qname) :].strip(b" \t\n\r") or self._eof:
                    raise _Unsupported("a malformed or unbalanced end tag")
                return None
            end = tail.end()
        block = buf[pos:end]
        tokens = _TOKEN.findall(block)
        stack: list[_El] = []
        names: list[bytes] = []
        last: _El | None = None  # the element whose tail the next text is
        blanks = self._blanks
        tags = 0
        root: _El | None = None
        for closing, qname, attrs, empty, raw in tokens:
            if raw:  # character data
                text = blanks.get(raw)
                if text is None:
                    text = _text(raw)
                    if len(raw) < 80 and not raw.strip(b" \t\n\r"):
                        if len(blanks) >= _CACHE_MAX:
                            blanks.clear()
                        blanks[raw] = text
                if last is not None:
                    last.tail = text
                elif stack:
                    stack[-1].text = text
                else:
                    raise _Unsupported("text after an entry")
                continue
            tags += 1
            if closing:
                if attrs or empty or not names or names.pop() != qname:
                    raise _Unsupported("a malformed or unbalanced end tag")
                last = stack.pop()
                continue
            if root is not None and not stack:
                raise _Unsupported("an element after an entry")
            name = self._qname(qname, element=True)
            local = name[name.rfind("}") + 1 :]
            if stack and local in ("url", "sitemap"):
                raise _Unsupported("an entry inside an entry")
            if not stack and local not in ("url", "sitemap"):
                raise _Unsupported(f"an element {local!r} between entries")
            element = _El(name, self._attributes(attrs) if attrs else {})
            if stack:
                stack[-1].children.append(element)
            else:
                root = element
            if empty:
                last = element
                continue
            if len(stack) >= _MAX_DEPTH:
                raise _Unsupported("an entry nested too deep")
            stack.append(element)
            names.append(qname)
            last = None
        if stack or root is None or tags != block.count(b"<"):
            # A "<" no tag accounts for: a comment, CDATA, a PI or a malformed tag.
            raise _Unsupported("markup the scanner does not read")
        return root, end

    def _attributes(self, attrs: bytes) -> dict[str, str]:
        out: dict[str, str] = {}
        for match in _ATTR.finditer(attrs):
            raw_name, dq, sq = match.groups()
            if raw_name == b"xmlns" or raw_name.startswith(b"xmlns:"):
                raise _Unsupported("a namespace declared below the root")
            name = self._qname(raw_name, element=False)
            if name in out:
                raise _Unsupported("a repeated attribute")
            out[name] = _attr_value(dq if dq is not None else sq)
        return out
