"""Discovery: the Sitemap lines of a robots.txt, read with protego and the fixes files need."""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from urllib.parse import urljoin

from protego import Protego
from w3lib.url import safe_url_string

from .hosts import InvalidHost, canonical_url
from .urls import HTTP, bad_authority

__all__ = ["ROBOTS_MAX_RULES_SIZE", "RobotsSitemaps", "parse_robots"]

#: RFC 9309 §2.5: crawlers may limit the parsed size; at least 500 KiB must be read.
ROBOTS_MAX_RULES_SIZE = 500 * 1024

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(slots=True)
class RobotsSitemaps:
    """What a robots.txt says about sitemaps.

    ``sitemaps``: absolute URLs, deduplicated, in order of first appearance. ``html``: the
    body was an HTML page (a soft 404 or a login wall), so nothing was taken from it.
    ``truncated``: the body went past ``ROBOTS_MAX_RULES_SIZE``; rules were read from the
    first 500 KiB only, Sitemap lines from all of it. ``invalid``: Sitemap lines skipped
    because they are not http(s) URLs a request can be made for (another scheme, white
    space or a control character inside, bytes not valid in the file's encoding, a bad
    authority); ``invalid_example``: the first of them, as read.
    """

    sitemaps: list[str] = field(default_factory=list)
    html: bool = False
    truncated: bool = False
    invalid: int = 0
    invalid_example: str | None = None
    encoding: str = "utf-8"


def _decode(body: bytes) -> tuple[str, str]:
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(encoding, "replace"), encoding + "-bom"
    return body.decode("utf-8", "replace"), "utf-8"


def parse_robots(body: bytes, url: str) -> RobotsSitemaps:
    """Take every Sitemap line of a robots.txt body fetched from ``url``.

    Sitemap lines are group-independent (RFC 9309), so the whole body is scanned for them,
    even past the 500 KiB rules cap. Relative URLs are resolved against ``url``.

    >>> parse_robots(b"User-agent: *\\nSitemap : /s.xml # main\\nsitemap: /s.xml", "https://a.example/robots.txt").sitemaps
    ['https://a.example/s.xml']
    """
    text, encoding = _decode(body)
    result = RobotsSitemaps(encoding=encoding)
    head = text.lstrip()[:512].lower()
    if head.startswith(("<!doctype html", "<html")) or "<html" in head[:100]:
        result.html = True
        return result
    result.truncated = len(body) > ROBOTS_MAX_RULES_SIZE
    # protego does the line grammar (case, "Sitemap :" spacing, comments, CRLF, BOM-less
    # text); it is given every line that could be a Sitemap line when the body is too big.
    if result.truncated:
        lines = [line for line in text.splitlines() if "site" in line.lower()]
        text = "\n".join(lines)
    seen: set[str] = set()
    for declared in Protego.parse(text).sitemaps:
        value = declared.strip()
        if not value:
            continue
        absolute = _http_url(url, value)
        if absolute is None:
            result.invalid += 1
            if result.invalid_example is None:
                result.invalid_example = value
        elif absolute not in seen:
            seen.add(absolute)
            result.sitemaps.append(absolute)
    return result


def _http_url(base: str, value: str) -> str | None:
    """``value`` resolved against ``base`` and made safe, or None when it is not an http(s)
    URL a request can be made for: another scheme, a bad port or IPv6 literal, white space
    or a control character inside it, or U+FFFD (bytes the file's encoding could not
    decode: never requested as ``%EF%BF%BD``).

    >>> [_http_url("https://a.example/r", v) for v in ("/s.xml", "s\ufffd.xml", "not a url")]
    ['https://a.example/s.xml', None, None]
    """
    if "\ufffd" in value or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return None
    try:
        absolute = safe_url_string(urljoin(base, value))
    except ValueError:  # "http://[not-an-address" and the like
        return None
    if not absolute[:8].lower().startswith(HTTP):
        return None
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in absolute) or bad_authority(absolute):
        return None
    try:
        return canonical_url(absolute)  # 0177.0.0.1 is 127.0.0.1 for every check after
    except InvalidHost:
        return None
