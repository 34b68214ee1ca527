"""Discovery: which URLs belong to the site mapped, and which addresses are never requested."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from sitemapcrawl.sitemaps.hosts import InvalidHost, canonical_host

__all__ = [
    "SCOPE_MODES",
    "ScopePolicy",
    "dedupe_key",
    "normal_host",
    "private_address",
    "same_host",
]

#: ``host``: the site's host or its ``www.`` twin; ``path``: the sitemaps.org rule (under
#: the sitemap file's own directory); ``robots``: ``path``, or ``host`` for sitemaps the
#: site declared in its robots.txt (sitemaps.org cross-submission); ``off``: everything.
SCOPE_MODES = ("host", "path", "robots", "off")


def normal_host(host: str) -> str:
    """A host as compared: lower case, no trailing dot, an IPv4 address in dotted-quad form
    whatever form it was written in (``127.1``, ``0x7f.0.0.1``, ``2130706433``).

    >>> normal_host("Example.COM."), normal_host("0x7f.0.0.1"), normal_host("2130706433")
    ('example.com', '127.0.0.1', '127.0.0.1')
    """
    try:
        return canonical_host(host)
    except (InvalidHost, UnicodeError):
        return host.lower().rstrip(".")


def _bare_host(host: str) -> str:
    host = normal_host(host)
    return host[4:] if host.startswith("www.") else host


def _split(url: str) -> tuple[str, str, str]:
    """(scheme, host[:port] without default port, path) of a URL, lowercased where it may be."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = normal_host(parts.hostname or "")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host = f"{host}:{port}"
    return scheme, host, parts.path or "/"


class ScopePolicy:
    """Judge page URLs against a scope mode; ``reason()`` gives why one is out, or None.

    >>> policy = ScopePolicy("host", "https://www.example.com/")
    >>> policy.reason("https://example.com/a", "https://cdn.example.net/s.xml", True) is None
    True
    >>> policy.reason("https://other.example.org/a", "https://www.example.com/s.xml", True)
    'other_host'
    >>> ScopePolicy("path", "https://example.com/").reason(
    ...     "https://example.com/blog/a", "https://example.com/news/sitemap.xml", False)
    'outside_sitemap_path'
    """

    def __init__(self, mode: str, site: str) -> None:
        if mode not in SCOPE_MODES:
            raise ValueError(f"scope must be one of {', '.join(SCOPE_MODES)}, not {mode!r}")
        self.mode = mode
        _, host, _ = _split(site)
        self.site_host = _bare_host(host)
        bare = self.site_host
        # Fast path: the prefixes every in-scope URL of a typical site starts with.
        self._prefixes = tuple(
            f"{scheme}://{www}{bare}/" for scheme in ("http", "https") for www in ("", "www.")
        )
        self._path_cache: dict[str, tuple[str, ...]] = {}
        #: hosts whose sitemap files the site vouched for (robots.txt, the user's own URLs)
        self._vouched: set[str] = set()

    @property
    def prefixes(self) -> tuple[str, ...]:
        """Prefixes that URLs of the site's host, spelled as usual, start with."""
        return self._prefixes

    def vouch(self, url: str) -> None:
        """Sitemap files on ``url``'s host are the site's (a robots.txt ``Sitemap:`` line, a
        URL the user gave): an index there may list children on that host."""
        self._vouched.add(_bare_host(_split(url)[1]))

    def sitemap_reason(self, url: str) -> str | None:
        """None when a sitemap file at ``url`` (an index's child, a redirect's target) may
        be read: on the site's host or its ``www.`` twin, or a host the site vouched for;
        else ``other_host``. Nothing is out of scope with ``off``."""
        if self.mode == "off" or self._host_ok(url):
            return None
        return None if _bare_host(_split(url)[1]) in self._vouched else "other_host"

    def _host_ok(self, url: str) -> bool:
        if url.startswith(self._prefixes):
            return True
        _, host, _ = _split(url)
        return _bare_host(host) == self.site_host

    def _path_ok(self, url: str, sitemap_url: str) -> bool:
        prefixes = self._path_cache.get(sitemap_url)
        if prefixes is None:
            scheme, host, path = _split(sitemap_url)
            directory = path[: path.rfind("/") + 1]
            prefixes = (f"{scheme}://{host}{directory}",)
            if len(self._path_cache) < 10_000:
                self._path_cache[sitemap_url] = prefixes
        if url.startswith(prefixes):
            return True
        scheme, host, path = _split(url)
        return f"{scheme}://{host}{path}".startswith(prefixes)

    def reason(self, url: str, sitemap_url: str, declared_in_robots: bool) -> str | None:
        """None when ``url`` (listed in ``sitemap_url``) is in scope, else a short reason."""
        mode = self.mode
        if mode == "off":
            return None
        if mode == "host":
            return None if self._host_ok(url) else "other_host"
        if self._path_ok(url, sitemap_url):
            return None
        if mode == "robots" and declared_in_robots and self._host_ok(url):
            return None
        return "outside_sitemap_path"


def private_address(url: str, origin: str | None) -> bool:
    """True when ``url`` targets a loopback, private, link-local or reserved IP literal or
    ``localhost`` that the origin itself is not on (a sitemap must not steer us there).

    >>> private_address("http://169.254.169.254/latest/meta-data", "https://example.com")
    True
    >>> private_address("http://127.0.0.1:8000/s.xml", "http://127.0.0.1:8000/")
    False
    >>> private_address("http://0251.0376.0251.0376/", "https://example.com")  # 169.254.169.254
    True
    """
    host = normal_host(urlsplit(url).hostname or "")
    if host == "localhost" or host.endswith(".localhost"):
        internal = True
    else:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        internal = not address.is_global
    if not internal:
        return False
    if origin is None:
        return False
    origin_host = normal_host(urlsplit(origin).hostname or "")
    if origin_host == "localhost" or origin_host.endswith(".localhost"):
        return False
    try:
        return ipaddress.ip_address(origin_host).is_global
    except ValueError:
        return True


def same_host(url: str, other: str) -> bool:
    """True when both URLs are on one host or its ``www.`` twin, whatever the scheme
    (a non-default port is part of the host).

    >>> same_host("https://www.example.com/a", "http://example.com/b")
    True
    >>> same_host("https://example.com/a", "https://cdn.example.com/a")
    False
    >>> same_host("http://127.0.0.1:8001/a", "http://127.0.0.1:8002/a")
    False
    """
    return _bare_host(_split(url)[1]) == _bare_host(_split(other)[1])


def dedupe_key(url: str) -> str:
    """``url`` with its scheme and host as compared (see :func:`normal_host`, default port
    dropped), the rest as written: two spellings of one URL have one key.

    >>> dedupe_key("HTTP://Example.com.:80/A?b")
    'http://example.com/A?b'
    """
    scheme, host, _ = _split(url)
    rest = url.split("//", 1)[1]
    slash = rest.find("/")
    query = rest.find("?")
    cut = min(i for i in (slash, query, len(rest)) if i >= 0)
    return f"{scheme}://{host}{rest[cut:]}"
