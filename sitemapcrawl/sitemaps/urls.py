"""Sitemap parsing: the URL checks the reader, the scanner and robots.txt share.

A sitemap location is usable when a request can be made for it: an absolute http(s) URL
with a host and a port up to 65535. Most locations are plain (printable ASCII, a plain
host), and the plain-URL test (``PLAIN_URL``, and ``PLAIN_HEAD`` with ``PLAIN_BYTES`` on
raw bytes) accepts them without parsing them. Bare ``&`` is escaped before XML is parsed
(``escape_amps``): unescaped query strings are the commonest sitemap bug; each is counted.

Some things libxml2 would drop or change without a trace are marked in the stream before it
parses it (``UNEXPANDED``, ``CUT``: private-use characters no real location holds; raw
control characters as DEL, ``mark_controls``): a location that holds one is dropped and
counted, never emitted.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "CUT",
    "HTTP",
    "PLAIN_BYTES",
    "PLAIN_HEAD",
    "PLAIN_URL",
    "UNEXPANDED",
    "XML_SPACE",
    "authority",
    "bad_authority",
    "bare_amps",
    "escape_amps",
    "has_bare_amp",
    "invisible",
    "mark_controls",
    "strip_invisible",
]

HTTP: Final = ("http://", "https://")

# A host already in its canonical spelling (``hosts.canonical_host``): lower-case labels, no
# trailing dot, and not ending in a number (an IPv4 address in any of the URL Standard's
# forms, which ``hosts`` rewrites) unless it is a dotted quad written canonically; anything
# else takes the full check.
_LABEL = rb"[a-z0-9_\-]+"
_OCTET = rb"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_HOST = (
    rb"https?://(?:"
    + _OCTET
    + rb"(?:\."
    + _OCTET
    + rb"){3}(?=[:/?#]|\Z)|(?:"
    + _LABEL
    + rb"\.)*(?!(?:[0-9]+|0x[0-9a-f]*)(?:[:/?#]|\Z))"
    + _LABEL
    + rb")"
)
_PORT = (  # ":port" up to 65535, if any
    rb"(?::(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}"
    rb"|655[0-2][0-9]|6553[0-5]))?"
)
#: An absolute http(s) URL of printable ASCII with a canonical host (no user, no brackets),
#: a port up to 65535 if any and no fragment: nothing in it needs resolving, encoding or
#: checking.
PLAIN_URL: Final = re.compile((_HOST + _PORT + rb'(?:[/?][!-"$-Z^-~]*)?').decode("ascii"))
#: ``PLAIN_URL`` up to its path, on bytes: a location it matches whose every byte is in
#: ``[!-"$-Z^-~]`` (checked with ``translate`` and ``PLAIN_BYTES``) is a plain URL.
PLAIN_HEAD: Final = re.compile(_HOST + _PORT + rb"(?=[/?#]|\Z)")
_URL_BYTES = bytes(c for c in range(0x21, 0x7F) if c not in b"#[\\]")  # [!-"$-Z^-~]
#: ``[!-"$-Z^-~]`` but "&" (and "<") as themselves, every other byte as NUL: a location
#: translated with it holds a NUL when it is not plain (in XML text "&" starts a reference;
#: "#" starts a fragment, which the full check drops).
PLAIN_BYTES: Final = bytes(c if c in _URL_BYTES and c not in b"&<" else 0 for c in range(256))

#: What a reference to a declared (never expanded) entity becomes: a private-use character
#: that marks the text as unknowable. libxml2's own handling of undeclared entities in
#: recovery mode loses the ``&amp;`` of later locations.
UNEXPANDED: Final = "\ue000"

#: What a text node too long to parse becomes (the reader cuts it out of the stream).
CUT: Final = "\ue002"
#: The only characters XML strips around a value (a location, a text sitemap line).
XML_SPACE: Final = " \t\n\r"

_BARE_AMP = re.compile(rb"&(?!(?:[A-Za-z_][\w.\-]{0,40}|#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,8});)")
_ENTITY_REF = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos);)[A-Za-z_][\w.\-]{0,40};")


def escape_amps(chunk: bytes) -> bytes:
    """Escape bare ``&``; replace references to non-predefined entities by ``UNEXPANDED``.

    >>> escape_amps(b"a?b=1&c=2 &nbsp; &amp;")
    b'a?b=1&amp;c=2 &#xE000; &amp;'
    """
    return _ENTITY_REF.sub(b"&#xE000;", _BARE_AMP.sub(b"&amp;", chunk))


def bare_amps(chunk: bytes) -> tuple[bytes, int, int]:
    """``escape_amps``, with how many bare ``&`` it escaped and where the first was (-1).

    >>> bare_amps(b"a?b=1&c=2&amp;d=3&e")
    (b'a?b=1&amp;c=2&amp;d=3&amp;e', 2, 5)
    """
    first = _BARE_AMP.search(chunk)
    if first is None:
        return _ENTITY_REF.sub(b"&#xE000;", chunk), 0, -1
    escaped, count = _BARE_AMP.subn(b"&amp;", chunk)
    return _ENTITY_REF.sub(b"&#xE000;", escaped), count, first.start()


def has_bare_amp(raw: bytes) -> bool:
    """True when ``raw`` holds an ``&`` that starts no reference.

    >>> has_bare_amp(b"a&amp;b&#38;c"), has_bare_amp(b"a&b")
    (False, True)
    """
    return _BARE_AMP.search(raw) is not None


#: Every byte but the raw C0 controls XML does not allow: ``translate(None, …)`` with it
#: leaves only those (faster than a regular expression's search).
_NOT_RAW_CONTROL = bytes(c for c in range(256) if c >= 0x20 or c in (0x09, 0x0A, 0x0D))
#: Raw C0 controls (but tab, CR, LF) to DEL: the same byte in every ASCII-compatible
#: encoding, in CDATA or not, and a character XML allows (libxml2 keeps it).
_TO_DEL = bytes(0x7F if c < 0x20 and c not in (0x09, 0x0A, 0x0D) else c for c in range(256))


def mark_controls(chunk: bytes) -> bytes:
    """Turn raw C0 control characters (but tab, CR and LF) into DEL: XML does not allow
    them and libxml2 would drop them without a trace, so a location that held one would
    come out as another URL; DEL, a control character XML allows, keeps the mark.

    >>> mark_controls(b"<loc>a\\x01b</loc>")
    b'<loc>a\\x7fb</loc>'
    """
    if not chunk.translate(None, _NOT_RAW_CONTROL):
        return chunk
    return chunk.translate(_TO_DEL)


#: Invisible characters no location may hold: zero-width space, word joiner, the BOM
#: (zero-width no-break space) and the bidirectional marks, embeddings, overrides and
#: isolates (the joiners ZWJ and ZWNJ are left: scripts and emoji need them).
_INVISIBLE = re.compile("[\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
#: White space XML does not strip (no-break and typographic spaces, line separators): not
#: at either end of a location, where no one sees it.
_OTHER_SPACE = (
    "\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)


def invisible(loc: str) -> bool:
    """True when ``loc`` (stripped of XML white space) holds an invisible character, or
    starts or ends with white space XML does not strip.

    >>> invisible("\u200bhttps://a.example/"), invisible("https://a.example/\xa0")
    (True, True)
    >>> invisible("https://a.example/\u0645\u06cc\u200c\u062e"), invisible("/a\xa0b")
    (False, False)
    """
    return _INVISIBLE.search(loc) is not None or loc[:1] in _OTHER_SPACE or loc[-1:] in _OTHER_SPACE


#: What a CMS pads a location with that no one sees: the invisible characters above, white
#: space XML does not strip, and XML's own between them.
_PADDING = (
    "".join(
        chr(c)
        for c in (0x200B, 0x200E, 0x200F, *range(0x202A, 0x202F), 0x2060, *range(0x2066, 0x206A))
    )
    + "\ufeff"
    + _OTHER_SPACE
    + XML_SPACE
)


def strip_invisible(loc: str) -> str:
    """``loc`` without the invisible characters and white space padding its ends (a CMS
    that pads every ``<loc>`` with a zero-width space or a BOM); what is inside stays.

    >>> strip_invisible("\u200b\ufeff https://a.example/x\xa0"), strip_invisible("/a\u200bb")
    ('https://a.example/x', '/a\u200bb')
    """
    return loc.strip(_PADDING)


def authority(loc: str) -> str:
    """The ``user@host:port`` part of an absolute URL.

    >>> authority("https://u@a.example:8080/x?y#z")
    'u@a.example:8080'
    """
    start = loc.find("//") + 2
    end = len(loc)
    for separator in "/?#":
        found = loc.find(separator, start, end)
        if found >= 0:
            end = found
    return loc[start:end]


def bad_authority(loc: str) -> bool:
    """True when an http(s) URL has no host or a port that is not a number up to 65535
    (``Request`` would raise on it, and no server answers there).

    >>> bad_authority("https://a.example:8080/x"), bad_authority("http://a.example:x/")
    (False, True)
    """
    netloc = authority(loc)
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
