"""One spelling per host: the WHATWG URL Standard's host rules, applied before any check.

A browser (and the URL Standard, "host parsing") reads ``0177.0.0.1``, ``0x7f.1``,
``2130706433``, ``127.000.000.001`` and ``127.0.0.1.`` as the one address ``127.0.0.1``;
Python's ``ipaddress`` refuses every one of them, and a DNS resolver sends the last to a
search domain. So a host is made canonical once, before the scope check, the private-address
check, de-duplication, emission and the request: lower case, percent-decoded, IDNA-encoded,
one trailing dot dropped, and a host that ends in a number read as an IPv4 address in any
of the forms the standard accepts (decimal, octal with a leading ``0``, hex with ``0x``;
one to four parts, the last filling the remaining bytes). A host that ends in a number but
is no such address (``1.2.3.4.5``, ``256.0.0.1``, ``0x``-junk) is invalid: no browser
requests it, and neither do we.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["InvalidHost", "canonical_host", "canonical_url"]


class InvalidHost(ValueError):
    """A host no browser would request (the URL Standard's host parser fails on it)."""


# Code points the URL Standard forbids in a domain (after percent-decoding).
_FORBIDDEN = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
_DECIMAL = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]*")
_OCTAL = re.compile(r"[0-7]+")


def _ipv4_number(part: str) -> int | None:
    """A part of an IPv4 host as the URL Standard reads it, or None when it is not one."""
    if part[:2] in ("0x", "0X"):
        digits = part[2:]
        return int(digits or "0", 16) if _HEX.fullmatch(digits) else None
    if len(part) > 1 and part[0] == "0":
        digits = part[1:]
        return int(digits, 8) if _OCTAL.fullmatch(digits) else None
    return int(part) if _DECIMAL.fullmatch(part) else None


def _ends_in_a_number(parts: list[str]) -> bool:
    last = parts[-1]
    if _DECIMAL.fullmatch(last):
        return True
    return last[:2] in ("0x", "0X") and _HEX.fullmatch(last[2:]) is not None


def _ipv4(parts: list[str]) -> str:
    numbers = [_ipv4_number(part) for part in parts]
    if len(parts) > 4 or any(n is None for n in numbers):
        raise InvalidHost(".".join(parts))
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise InvalidHost(".".join(parts))
    address = values[-1]
    for index, value in enumerate(values[:-1]):
        address += value * 256 ** (3 - index)
    return ".".join(str((address >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def canonical_host(host: str) -> str:
    """``host`` as the URL Standard's host parser leaves it; raises :class:`InvalidHost`.

    >>> [canonical_host(h) for h in ("0177.0.0.1", "0x7f.1", "2130706433", "127.000.000.001")]
    ['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']
    >>> canonical_host("Example.COM."), canonical_host("b\\u00fccher.example")
    ('example.com', 'xn--bcher-kva.example')
    >>> canonical_host("1.2.3.4.5")
    Traceback (most recent call last):
    ...
    sitemapcrawl.sitemaps.hosts.InvalidHost: 1.2.3.4.5
    """
    if host.startswith("["):  # an IPv6 literal: its own parser (urllib's) already ran
        return host.lower()
    if "%" in host:
        host = unquote(host, errors="strict")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidHost(host) from exc
    host = host.lower()
    if host.endswith(".") and len(host) > 1:
        host = host[:-1]
    parts = host.split(".")
    if not host or _FORBIDDEN.search(host) or "" in parts:  # an empty label: "a..b", ".a"
        raise InvalidHost(host)
    if _ends_in_a_number(parts):
        return _ipv4(parts)
    return host


def canonical_url(url: str) -> str:
    """``url`` with its host canonical (:func:`canonical_host`), the rest as written.

    Unchanged (the same object) when the host already is; raises :class:`InvalidHost`.

    >>> canonical_url("http://0177.0.0.1:8080/a?b#c")
    'http://127.0.0.1:8080/a?b#c'
    >>> canonical_url("https://user@WWW.Example.com./x")
    'https://user@www.example.com/x'
    """
    start = url.find("//") + 2
    if start < 2:
        return url
    end = len(url)
    for separator in "/?#":
        found = url.find(separator, start, end)
        if found >= 0:
            end = found
    authority = url[start:end]
    at = authority.rfind("@") + 1
    hostport = authority[at:]
    if hostport.startswith("["):
        close = hostport.find("]") + 1
        host, port = hostport[:close], hostport[close:]
    else:
        colon = hostport.find(":")
        host, port = (hostport, "") if colon < 0 else (hostport[:colon], hostport[colon:])
    canonical = canonical_host(host)
    if canonical == host:
        return url
    return f"{url[:start]}{authority[:at]}{canonical}{port}{url[end:]}"
