"""Sitemap parsing: the strict subset of XML the byte scanner reads itself.

Character data and attribute values are decoded as lxml would give them (newlines
normalised, references expanded), element and attribute names are expanded to lxml's
``{namespace}local`` form with the root's namespace declarations, and an entry that is not
of the scanner's ordinary shape is parsed into light elements (``El``) that the entry rules
read like lxml's. Anything outside the subset (comments, CDATA, processing instructions,
entities other than the five predefined ones, undeclared prefixes, ``xmlns`` below the
root, malformed or unbalanced tags, characters XML does not allow, invalid UTF-8, a bare
``&``) raises ``Unsupported``: lxml must read the body.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from .urls import escape_amps, has_bare_amp

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "ATTRIBUTES",
    "ATTR_SPACE",
    "CACHE_MAX",
    "END",
    "MAX_BLOCK",
    "MAX_TAG",
    "SPACE",
    "TAG",
    "XML_DECL",
    "El",
    "Markup",
    "Unsupported",
    "attr_value",
    "prose",
    "text",
]


class Unsupported(Exception):
    """Something the scanner does not fully understand: lxml must read the body."""


#: Past this many bytes, one entry is not an ordinary entry: lxml reads it (and its caps
#: on text and name sizes apply).
MAX_BLOCK: Final = 1024 * 1024
#: A start tag may need this many bytes before the scanner can tell it is malformed.
MAX_TAG: Final = 64 * 1024
#: Entries in memory are bounded, and so are the caches of decoded values.
CACHE_MAX: Final = 4096
_MAX_DEPTH: Final = 32

SPACE: Final = re.compile(rb"[ \t\n\r]*")
END: Final = re.compile(rb"[ \t\n\r]*>")
_NAME = rb"[A-Za-z_][A-Za-z0-9_.\-]{0,99}"
_QNAME = _NAME + rb"(?::" + _NAME + rb")?"
#: Attributes of a tag, each with the white space before it (a pattern without groups).
ATTRIBUTES: Final = rb"(?:[ \t\n\r]+" + _QNAME + rb"[ \t\n\r]*=[ \t\n\r]*(?:\"[^\"<]*\"|'[^'<]*'))*"
_ATTRS = rb"(" + ATTRIBUTES + rb")"
#: A tag: end?, name, attributes, empty?
TAG: Final = re.compile(rb"<(/?)(" + _QNAME + rb")" + _ATTRS + rb"[ \t\n\r]*(/?)>")
#: One token of a block: a tag (end?, name, attributes, empty?) or character data.
_TOKEN = re.compile(rb"<(/?)(" + _QNAME + rb")" + _ATTRS + rb"[ \t\n\r]*(/?)>|([^<]+)")
_ATTR = re.compile(rb"(" + _QNAME + rb")[ \t\n\r]*=[ \t\n\r]*(?:\"([^\"<]*)\"|'([^'<]*)')")
XML_DECL: Final = re.compile(
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
#: Literal tabs and newlines in an attribute value are spaces (attribute normalisation).
ATTR_SPACE: Final = bytes.maketrans(b"\t\n\r", b"   ")
#: Bytes looked for with ``in`` as ints: ``b"&" in raw`` first tries ``b"&"`` as an int,
#: and formats the error message it then drops, which costs more than the search.
_CR, _AMP = b"\r&"
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
        raise Unsupported("a character reference to a character XML does not allow")
    return chr(code)


def text(raw: bytes) -> str:
    """Character data as lxml gives it: newlines normalised, the stream's ``&`` escaping
    applied, references expanded. Raises ``Unsupported`` on what lxml would report.

    >>> text(b"a &amp; b\\r\\nc &#233;")
    'a & b\\nc é'
    """
    if _CR in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return _decode(raw)


def _decode(raw: bytes) -> str:
    if raw.isascii():  # printable ASCII needs no checking but for "&" and "]]>"
        decoded = raw.decode("ascii")
        if decoded.isprintable() and "]]>" not in decoded:
            if "&" not in decoded:
                return decoded
            if decoded.count("&") == decoded.count("&amp;"):  # the commonest reference only
                return decoded.replace("&amp;", "&")
    if b"]]>" in raw:
        raise Unsupported("']]>' in character data")
    if _NOT_CHAR.search(raw):
        raise Unsupported("a character XML does not allow")
    if _AMP in raw:
        if has_bare_amp(raw):  # a fault lxml's reading counts (bare_ampersand)
            raise Unsupported("a bare '&'")
        raw = escape_amps(raw)
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unsupported("invalid UTF-8") from exc
    if "&" in decoded:
        rest = _REF.sub("", decoded)
        if "&" in rest:  # "&#X41;", "&#0000000065;": not a reference XML knows
            raise Unsupported("a malformed reference")
        decoded = _REF.sub(_deref, decoded)
    return decoded


def prose(raw: bytes) -> str | None:
    """``extensions``' prose of an element with this text: white space collapsed."""
    stripped = text(raw).strip()
    return " ".join(stripped.split()) if stripped else None


def attr_value(raw: bytes) -> str:
    """An attribute value as lxml gives it: literal tabs and newlines become spaces."""
    if _CR in raw:
        raw = raw.replace(b"\r\n", b" ")
    return _decode(raw.translate(ATTR_SPACE))


class El:
    """The part of lxml's element API that the entry rules and ``extensions`` use."""

    __slots__ = ("attrib", "children", "tag", "tail", "text")

    def __init__(self, tag: str, attrib: dict[str, str]) -> None:
        self.tag = tag
        self.attrib = attrib
        self.text: str | None = None
        self.tail: str | None = None
        self.children: list[El] = []

    def __len__(self) -> int:
        return len(self.children)

    def __iter__(self) -> Iterator[El]:
        return iter(self.children)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.attrib.get(key, default)

    def iter(self) -> Iterator[El]:
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


class Markup:
    """The names and entries of one document: the root's namespace declarations
    (``declare``), names expanded with them (``qname``), and entries parsed into ``El``s
    (``block``). Its caches are bounded."""

    def __init__(self) -> None:
        self.ns: dict[str, str] = {}
        self._names: dict[tuple[bytes, bool], str] = {}
        self._blanks: dict[bytes, str] = {}

    def declare(self, attrs: bytes) -> None:
        """Read the root's namespace declarations; check its other attributes."""
        others = []
        seen = set()
        for match in _ATTR.finditer(attrs):
            name, dq, sq = match.groups()
            value = dq if dq is not None else sq
            if name in seen:
                raise Unsupported("a repeated attribute")
            seen.add(name)
            if name == b"xmlns" or name.startswith(b"xmlns:"):
                prefix = name[6:].decode("ascii")
                if prefix in ("xml", "xmlns") or _NS_URI.fullmatch(value) is None:
                    raise Unsupported("a namespace declaration the scanner does not read")
                self.ns[prefix] = value.decode("ascii")
            else:
                others.append((name, value))
        expanded = set()
        for name, value in others:
            qualified = self.qname(name, element=False)
            if qualified in expanded:
                raise Unsupported("a repeated attribute")
            expanded.add(qualified)
            attr_value(value)

    def qname(self, qname: bytes, *, element: bool) -> str:
        """The name in lxml's ``{namespace}local`` form."""
        key = (qname, element)
        name = self._names.get(key)
        if name is None:
            if len(self._names) >= CACHE_MAX:  # made-up names must not grow it unbounded
                self._names.clear()
            name = self._names[key] = self._expand(qname, element=element)
        return name

    def _expand(self, qname: bytes, *, element: bool) -> str:
        prefix, colon, local = qname.decode("ascii").rpartition(":")
        if not colon:
            uri = self.ns.get("") if element else None
            return f"{{{uri}}}{local}" if uri else local
        if prefix == "xml":
            return f"{{{_XML_NS}}}{local}"
        if prefix.startswith("xmlns") or prefix not in self.ns:
            raise Unsupported(f"an undeclared namespace prefix {prefix!r}")
        return f"{{{self.ns[prefix]}}}{local}"

    def block(self, buf: bytes, pos: int, eof: bool) -> tuple[El, int] | None:
        """Parse the element at ``pos`` (a ``<url>`` or ``<sitemap>``) into ``El``s and
        return it with the position after it; None when the buffer ends first (``eof``:
        there is nothing more to read)."""
        head = TAG.match(buf, pos)
        if head is None:
            if buf[pos + 1 : pos + 2] in (b"!", b"?"):
                raise Unsupported("a comment, CDATA section, DOCTYPE or PI")
            if not eof and len(buf) - pos < MAX_TAG:
                return None
            raise Unsupported("markup the scanner does not read")
        if head.group(1):
            raise Unsupported("a malformed or unbalanced end tag")
        qname = head.group(2)
        if head.group(4):
            end = head.end()
        else:  # the first end tag of that name closes it (a nested entry is refused)
            close = buf.find(b"</" + qname, head.end())
            if close < 0:
                return None
            tail = END.match(buf, close + 2 + len(qname))
            if tail is None:
                if buf[close + 2 + len(qname) :].strip(b" \t\n\r") or eof:
                    raise Unsupported("a malformed or unbalanced end tag")
                return None
            end = tail.end()
        block = buf[pos:end]
        return self._tree(block), end

    def _tree(self, block: bytes) -> El:
        """The elements of one whole entry, ``block``."""
        stack: list[El] = []
        names: list[bytes] = []
        last: El | None = None  # the element whose tail the next text is
        blanks = self._blanks
        tags = 0
        root: El | None = None
        for closing, qname, attrs, empty, raw in _TOKEN.findall(block):
            if raw:  # character data
                data = blanks.get(raw)
                if data is None:
                    data = text(raw)
                    if len(raw) < 80 and not raw.strip(b" \t\n\r"):
                        if len(blanks) >= CACHE_MAX:
                            blanks.clear()
                        blanks[raw] = data
                if last is not None:
                    last.tail = data
                elif stack:
                    stack[-1].text = data
                else:
                    raise Unsupported("text after an entry")
                continue
            tags += 1
            if closing:
                if attrs or empty or not names or names.pop() != qname:
                    raise Unsupported("a malformed or unbalanced end tag")
                last = stack.pop()
                continue
            if root is not None and not stack:
                raise Unsupported("an element after an entry")
            name = self.qname(qname, element=True)
            local = name[name.rfind("}") + 1 :].lower()  # (lxml reads <URL> entries too)
            if stack and local in ("url", "sitemap"):
                raise Unsupported("an entry inside an entry")
            if not stack and local not in ("url", "sitemap"):
                raise Unsupported(f"an element {local!r} between entries")
            element = El(name, self.attributes(attrs) if attrs else {})
            if stack:
                stack[-1].children.append(element)
            else:
                root = element
            if empty:
                last = element
                continue
            if len(stack) >= _MAX_DEPTH:
                raise Unsupported("an entry nested too deep")
            stack.append(element)
            names.append(qname)
            last = None
        if stack or root is None or tags != block.count(b"<"):
            # A "<" no tag accounts for: a comment, CDATA, a PI or a malformed tag.
            raise Unsupported("markup the scanner does not read")
        return root

    def attributes(self, attrs: bytes) -> dict[str, str]:
        """A tag's attributes as lxml gives them (names expanded, values normalised)."""
        out: dict[str, str] = {}
        for match in _ATTR.finditer(attrs):
            raw_name, dq, sq = match.groups()
            if raw_name == b"xmlns" or raw_name.startswith(b"xmlns:"):
                raise Unsupported("a namespace declared below the root")
            name = self.qname(raw_name, element=False)
            if name in out:
                raise Unsupported("a repeated attribute")
            out[name] = attr_value(dq if dq is not None else sq)
        return out
