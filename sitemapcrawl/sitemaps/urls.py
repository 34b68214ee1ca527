"""Sitemap parsing: the URL checks the reader, the scanner and robots.txt share.

A sitemap location is usable when a request can be made for it: an absolute http(s) URL
with a host and a port up to 65535. Most locations are plain (printable ASCII, a plain
host), and the plain-URL test (``PLAIN_URL``, and ``PLAIN_HEAD`` with ``PLAIN_BYTES`` on
raw bytes) accepts them without parsing them. Bare ``&`` is escaped before XML is parsed
(``escape_amps``): unescaped query strings are the commonest sitemap bug.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "HTTP",
    "PLAIN_BYTES",
    "PLAIN_HEAD",
    "PLAIN_URL",
    "UNEXPANDED",
    "authority",
    "bad_authority",
    "escape_amps",
]

HTTP: Final = ("http://", "https://")

_HOST = rb"https?://[A-Za-z0-9._~%!$&'()*+,;=\-]+"
_PORT = (  # ":port" up to 65535, if any
    rb"(?::(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}"
    rb"|655[0-2][0-9]|6553[0-5]))?"
)
#: An absolute http(s) URL of printable ASCII with a plain host (no user, no brackets) and
#: a port up to 65535 if any: nothing in it needs resolving, encoding or checking.
PLAIN_URL: Final = re.compile((_HOST + _PORT + rb"(?:[/?#][!-Z^-~]*)?").decode("ascii"))
#: ``PLAIN_URL`` up to its path, on bytes: a location it matches whose every byte is in
#: ``[!-Z^-~]`` (checked with ``translate`` and ``PLAIN_BYTES``) is a plain URL.
PLAIN_HEAD: Final = re.compile(_HOST + _PORT + rb"(?=[/?#]|\Z)")
_URL_BYTES = bytes(range(0x21, 0x5B)) + bytes(range(0x5E, 0x7F))  # [!-Z^-~]
#: ``[!-Z^-~]`` but "&" (and "<") as themselves, every other byte as NUL: a location
#: translated with it holds a NUL when it is not plain (in XML text "&" starts a reference).
PLAIN_BYTES: Final = bytes(c if c in _URL_BYTES and c not in b"&<" else 0 for c in range(256))

#: What a reference to a declared (never expanded) entity becomes: a private-use character
#: that marks the text as unknowable. libxml2's own handling of undeclared entities in
#: recovery mode loses the ``&amp;`` of later locations.
UNEXPANDED: Final = "\ue000"

_BARE_AMP = re.compile(rb"&(?!(?:[A-Za-z_][\w.\-]{0,40}|#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,8});)")
_ENTITY_REF = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos);)[A-Za-z_][\w.\-]{0,40};")


def escape_amps(chunk: bytes) -> bytes:
    """Escape bare ``&``; replace references to non-predefined entities by ``UNEXPANDED``.

    >>> escape_amps(b"a?b=1&c=2 &nbsp; &amp;")
    b'a?b=1&amp;c=2 &#xE000; &amp;'
    """
    return _ENTITY_REF.sub(b"&#xE000;", _BARE_AMP.sub(b"&amp;", chunk))


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
