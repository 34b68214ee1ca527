"""A loopback HTTP mock server for real-server tests (stdlib only).

Run it as a process from the repository root::

    python -m tests.mockserver --root DIR [--verbose]

It binds ``127.0.0.1`` on a free port, writes exactly its base URL (for example
``http://127.0.0.1:41234``) and a newline as the first line of stdout, then serves
until it is killed. Logs go to stderr only, and only with ``--verbose`` (errors
other than client disconnects are always reported).

In tests, use :class:`MockServer`, a context manager that starts that process and
knows its URL::

    with MockServer(root=DATA) as srv:
        urlopen(srv.url("/sitemap.xml"))
        assert srv.requests() == ["/sitemap.xml"]

Static files are served from ROOT; a ``ROOT/_redirects`` file (lines ``/from /to [CODE]``,
as on static hosts) redirects those paths (301 by default). Text-like files (``.xml .txt
.html .htm .rss .atom .json``) get the placeholders ``{base}`` (``http://127.0.0.1:PORT``) and
``{alt}`` (``http://localhost:PORT``, the same server under a second host name) and
``{now}`` (the server's clock) and ``{rand}`` (three words drawn anew for each occurrence
on each request: a page rendered anew every time, its rotating boxes and counters) replaced,
byte-wise. Static responses carry ``Date``, ``Last-Modified`` (file mtime)
and ``ETag`` and answer ``If-None-Match`` / ``If-Modified-Since`` with 304.

Special endpoints (``PATH`` is a file under ROOT, placeholders already substituted):

=====================================================  =====================================
``/_/requests``                                        JSON request log (not itself logged;
                                                       a streamed body's entry has ``sent``)
``/_/requests/reset``                                  clear the request log
``/_/clock/SECONDS``                                   from now on, ``Date`` is the real
                                                       clock + SECONDS (may be negative):
                                                       a server "yesterday" (not logged)
``/_/gzip/PATH``                                       gzipped, ``application/xml``, no CE
``/_/gzip2/PATH``                                      gzipped twice, ``application/xml``
``/_/ce/ENC/PATH``                                     ``Content-Encoding: ENC`` (gzip,
                                                       deflate, br, zstd; 501 if missing)
``/_/ctype/TYPE/PATH``                                 Content-Type TYPE (URL-encoded; an
                                                       empty TYPE sends no Content-Type)
``/_/status/CODE[/PATH][?retry_after=N]``              status CODE (HTML body or PATH)
``/_/flaky/N/CODE/PATH[?retry_after=N]``               CODE for the first N hits of this URL
``/_/redirect/CODE?to=URL``                            redirect to URL (placeholders ok)
``/_/loop/N``                                          302 to ``/_/loop/N+1`` forever
``/_/slow/SECONDS/PATH``                               wait, then serve
``/_/hang[/SECONDS]``                                  never answer (600 s by default)
``/_/drip/BYTES_PER_SEC/PATH``                         headers, then a chunk each second
``/_/reset/PATH``                                      full Content-Length, half the body, RST
``/_/truncate/NBYTES/PATH``                            first NBYTES only, matching length
``/_/endless[?html=1][&status=CODE]``                   endless chunked urlset (1 GiB cap), or
                                                       an endless HTML page; with that status
``/_/headers/PATH?Name=Value&...``                     add/override (empty value: remove)
``/_/calendar/YEAR/MONTH``                             an endless HTML calendar: links to the
                                                       next and previous month and 31 day
                                                       views (``?day=N``) of this month
``/_/gen/urlset?n=&prefix=&lastmod=&gzip=&part=``      generated urlset, streamed
``/_/gen/index?n=&child=&lastmod=&gzip=``              generated sitemap index
``/_/gen/text?n=&prefix=&gzip=&part=``                 generated text sitemap
``/_/bomb/gzip?mb=N[&ce=1]``                           gzip that inflates to N MiB
``/_/bomb/deflate?mb=N``, ``/_/bomb/br?mb=N``         the same bomb as ``Content-Encoding``
=====================================================  =====================================
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import gzip
import hashlib
import html
import json
import os
import random
import re
import select
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import TCPServer
from typing import TYPE_CHECKING, Any, Self
from xml.sax.saxutils import escape as xml_escape

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from types import TracebackType

brotli: Any
zstandard: Any
try:
    import brotli
except ImportError:  # pragma: no cover - depends on the environment
    brotli = None
try:
    import zstandard
except ImportError:  # pragma: no cover - depends on the environment
    zstandard = None

__all__ = [
    "DEFAULT_ROOT",
    "REPO_ROOT",
    "MockHTTPServer",
    "MockRequestHandler",
    "MockServer",
    "main",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = Path(__file__).resolve().parent / "data"

MIB = 1024 * 1024
ENDLESS_LIMIT = 1 << 30
MAX_WAIT = 600.0
MAX_GEN = 50_000_000
MAX_BOMB_MB = 4096

TEXT_SUFFIXES = frozenset({".xml", ".txt", ".html", ".htm", ".rss", ".atom", ".json"})
CONTENT_TYPES = {
    ".xml": "application/xml",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".rss": "application/rss+xml",
    ".atom": "application/atom+xml",
    ".json": "application/json",
    ".gz": "application/x-gzip",
}
HTML_TYPE = "text/html; charset=utf-8"
URLSET_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)
URLSET_TAIL = b"</urlset>\n"
INDEX_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)
INDEX_TAIL = b"</sitemapindex>\n"
BASE_RE = re.compile(r"http://127\.0\.0\.1:(\d+)")
PROXY_VARS = ("http_proxy", "https_proxy", "ftp_proxy", "no_proxy", "all_proxy")

Headers = list[tuple[str, str]]


#: What ``{rand}`` draws from (no digits: nothing a fingerprint masks).
_WORDS = ("apple", "river", "stone", "cloud", "maple", "harbor", "violet", "lantern")


def _rand_words() -> bytes:
    return " ".join(random.choices(_WORDS, k=3)).encode()


class HTTPError(Exception):
    """Raised inside a handler to answer with an error status and a small HTML page."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message


@dataclass
class Document:
    """A static file as served: the (substituted) body, its type and mtime."""

    body: bytes
    content_type: str
    mtime: float


def content_type_for(name: str) -> str:
    """Return the Content-Type for a file name, from its extension.

    A ``.charset-NAME.`` part in the name adds ``; charset=NAME``.
    """
    lower = name.lower()
    ctype = CONTENT_TYPES.get(Path(lower).suffix, "application/octet-stream")
    match = re.search(r"\.charset-([A-Za-z0-9_-]+)\.", name)
    if match:
        ctype = f"{ctype}; charset={match.group(1)}"
    return ctype


def is_text_name(name: str) -> bool:
    """Tell whether a file gets its ``{base}``/``{alt}`` placeholders substituted."""
    return name == "robots.txt" or Path(name.lower()).suffix in TEXT_SUFFIXES


def http_date(timestamp: float | None = None) -> str:
    """Format a timestamp (default: now) as an HTTP date."""
    return email.utils.formatdate(timestamp, usegmt=True)


def make_etag(body: bytes) -> str:
    """Return a strong ETag for a body."""
    return '"' + hashlib.sha1(body).hexdigest()[:20] + '"'


def gzip_stream(chunks: Iterable[bytes], level: int = 6) -> Iterator[bytes]:
    """Gzip an iterable of chunks lazily."""
    comp = zlib.compressobj(level, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = comp.compress(chunk)
        if out:
            yield out
    yield comp.flush()


def encode_body(encoding: str, body: bytes) -> bytes:
    """Compress ``body`` for a ``Content-Encoding``; raise :class:`HTTPError` if unsupported."""
    if encoding == "gzip":
        return gzip.compress(body, mtime=0)
    if encoding == "deflate":
        return zlib.compress(body)
    if encoding == "br":
        if brotli is None:
            raise HTTPError(501, "the brotli module is not installed")
        return bytes(brotli.compress(body))
    if encoding == "zstd":
        if zstandard is None:
            raise HTTPError(501, "the zstandard module is not installed")
        return bytes(zstandard.ZstdCompressor().compress(body))
    raise HTTPError(400, f"unknown encoding {encoding!r}")


def _find(headers: Headers, name: str) -> str | None:
    lname = name.lower()
    for key, value in headers:
        if key.lower() == lname:
            return value
    return None


def _apply(headers: Headers, overrides: Iterable[tuple[str, str]]) -> Headers:
    """Return ``headers`` with ``overrides`` replacing same-named ones (empty value: remove)."""
    result = list(headers)
    for name, value in overrides:
        lname = name.lower()
        result = [(k, v) for k, v in result if k.lower() != lname]
        if value != "":
            result.append((name, value))
    return result


class MockHTTPServer(ThreadingHTTPServer):
    """The threaded loopback server: holds the root, base URLs and shared state."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, root: Path, *, port: int = 0, verbose: bool = False) -> None:
        self.root = Path(root).resolve()
        self.verbose = verbose
        self._lock = threading.Lock()
        self._log: list[dict[str, Any]] = []
        self.clock_offset = 0.0
        self._flaky: dict[str, int] = {}
        self._bombs: dict[tuple[int, str], bytes] = {}
        self._bomb_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), MockRequestHandler)
        self.port = int(self.server_address[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self.alt = f"http://localhost:{self.port}"

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup (getfqdn can be slow)."""
        TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = int(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore client disconnects; report anything else on stderr."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        sys.stderr.write(f"mockserver: error handling a request from {client_address}:\n")
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()

    def substitute(self, data: bytes) -> bytes:
        """Replace the ``{base}``, ``{alt}``, ``{now}`` (the server's clock, ISO 8601 UTC,
        to the second) and ``{rand}`` (three words, drawn anew) placeholders, byte-wise."""
        data = data.replace(b"{base}", self.base.encode()).replace(b"{alt}", self.alt.encode())
        if b"{rand}" in data:
            data = re.sub(rb"\{rand\}", lambda _: _rand_words(), data)
        if b"{now}" in data:
            now = time.time() + self.clock_offset
            data = data.replace(
                b"{now}", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)).encode()
            )
        return data

    def record(self, entry: dict[str, Any]) -> None:
        """Append an entry to the request log."""
        with self._lock:
            self._log.append(entry)

    def request_log(self) -> list[dict[str, Any]]:
        """Return a copy of the request log."""
        with self._lock:
            return list(self._log)

    def reset_log(self) -> None:
        """Clear the request log."""
        with self._lock:
            self._log.clear()

    def flaky_hit(self, key: str) -> int:
        """Count one more request for ``key`` and return the count."""
        with self._lock:
            self._flaky[key] = self._flaky.get(key, 0) + 1
            return self._flaky[key]

    def bomb(self, mb: int, kind: str = "gzip") -> bytes:
        """Return (building once, then caching) a ``kind`` stream (gzip, deflate, br) that
        inflates to ``mb`` MiB."""
        with self._bomb_lock:
            data = self._bombs.get((mb, kind))
            if data is None:
                data = self._bombs[(mb, kind)] = build_bomb(mb, self.base, kind)
            return data


def build_bomb(mb: int, base: str, kind: str = "gzip") -> bytes:
    """Build a gzip (or zlib ``deflate``, or brotli ``br``) stream of a urlset (one URL,
    then whitespace) inflating to exactly ``mb`` MiB."""
    head = URLSET_HEAD + f"<url><loc>{xml_escape(base)}/bomb/0</loc></url>\n".encode()
    pad = max(0, mb * MIB - len(head) - len(URLSET_TAIL))
    line = b" " * 1023 + b"\n"
    block = line * (MIB // len(line))
    compress: Any
    finish: Any
    if kind == "br":
        comp = brotli.Compressor(quality=1)
        compress, finish = comp.process, comp.finish
    else:
        zcomp = zlib.compressobj(6, zlib.DEFLATED, 31 if kind == "gzip" else 15)
        compress, finish = zcomp.compress, zcomp.flush
    out = [compress(head)]
    while pad > 0:
        take = min(pad, len(block))
        out.append(compress(block[:take]))
        pad -= take
    out.append(compress(URLSET_TAIL))
    out.append(finish())
    return b"".join(out)


class MockRequestHandler(BaseHTTPRequestHandler):
    """Request handler: static files plus the ``/_/`` test endpoints."""

    protocol_version = "HTTP/1.1"
    server_version = "MockServer/1.0"
    sys_version = ""
    timeout = 120
    server: MockHTTPServer

    _head = False
    _aborted = False

    def version_string(self) -> str:
        """Return the Server header value."""
        return self.server_version

    # -- plumbing ---------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        """Log to stderr only in verbose mode."""
        if self.server.verbose:
            super().log_message(format, *args)

    def handle_one_request(self) -> None:
        """Handle one request; a client that goes away is not an error."""
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except (ValueError, OSError):
            if not self._aborted:
                raise
            self.close_connection = True

    def do_GET(self) -> None:
        """Serve a GET."""
        self._handle("GET")

    def do_HEAD(self) -> None:
        """Serve a HEAD (like GET, without a body)."""
        self._handle("HEAD")

    def do_POST(self) -> None:
        """Serve a POST like a GET (its body is read and ignored)."""
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._handle("POST")

    def _handle(self, method: str) -> None:
        self._head = method == "HEAD"
        target = self.path
        if not target.startswith("/"):
            split = urllib.parse.urlsplit(target)
            target = (split.path or "/") + (f"?{split.query}" if split.query else "")
        raw_path, _, query = target.partition("?")
        if raw_path.rstrip("/") == "/_/requests":
            self._send_json(self.server.request_log())
            return
        if raw_path.rstrip("/") == "/_/requests/reset":
            self.server.reset_log()
            self._send_json([])
            return
        if raw_path.startswith("/_/clock/"):
            try:
                self.server.clock_offset = float(raw_path.rsplit("/", 1)[1])
            except ValueError:
                self._send_error(400, "bad clock offset")
                return
            self._send_json(self.server.clock_offset)
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self._entry: dict[str, Any] = {
            "method": method, "path": target, "headers": headers, "time": time.time()
        }  # fmt: skip
        self.server.record(self._entry)
        try:
            self._dispatch(raw_path, query)
        except HTTPError as exc:
            self._send_error(exc.status, exc.message)

    def _dispatch(self, raw_path: str, query: str) -> None:
        parts = raw_path.split("/")[1:]
        if len(parts) >= 2 and parts[0] == "_":
            handler = getattr(self, f"_ep_{parts[1]}", None)
            if handler is None:
                raise HTTPError(404, f"no such endpoint: /_/{parts[1]}")
            handler(parts[2:], query)
            return
        moved = self._redirects().get(raw_path)
        if moved is not None:
            self._redirect(moved[1], self.server.base + moved[0])
            return
        self._send_doc(self._load(parts), conditional=True)

    def _redirects(self) -> dict[str, tuple[str, int]]:
        """``ROOT/_redirects``: path -> (target path, status)."""
        rules = self.server.root / "_redirects"
        if not rules.is_file():
            return {}
        found = {}
        for line in rules.read_text(encoding="utf-8").splitlines():
            fields = line.split()
            if len(fields) >= 2:
                found[fields[0]] = (fields[1], int(fields[2]) if len(fields) > 2 else 301)
        return found

    # -- responses --------------------------------------------------------------------------

    def _send_head(
        self, status: int, headers: Headers, overrides: Iterable[tuple[str, str]] = ()
    ) -> None:
        final = _apply(
            [
                ("Server", self.version_string()),
                ("Date", http_date(time.time() + self.server.clock_offset)),
                *headers,
            ],
            overrides,
        )
        self.send_response_only(status)
        for name, value in final:
            self.send_header(name, value)
        self.end_headers()

    def _respond(
        self,
        status: int,
        body: bytes = b"",
        headers: Headers | None = None,
        overrides: Iterable[tuple[str, str]] = (),
    ) -> None:
        headers = list(headers or [])
        has_body = status >= 200 and status not in (204, 304)
        if has_body and _find(headers, "Content-Length") is None:
            headers.append(("Content-Length", str(len(body))))
        overrides = list(overrides)
        if any(k.lower() == "content-length" for k, _ in overrides):
            self.close_connection = True
        self._send_head(status, headers, overrides)
        if has_body and not self._head:
            self.wfile.write(body)

    def _send_error(self, status: int, message: str = "", extra: Headers | None = None) -> None:
        reason = self.responses.get(status, ("",))[0]
        title = html.escape(f"{status} {reason}".strip())
        body = (
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{html.escape(message)}</p></body></html>\n"
        ).encode()
        self._respond(status, body, [("Content-Type", HTML_TYPE)] + (extra or []))

    def _send_json(self, data: Any) -> None:
        body = json.dumps(data).encode()
        self._respond(200, body, [("Content-Type", "application/json")])

    def _send_doc(
        self,
        doc: Document,
        body: bytes | None = None,
        *,
        status: int = 200,
        content_type: str | None = None,
        extra: Headers | None = None,
        overrides: Iterable[tuple[str, str]] = (),
        conditional: bool = False,
    ) -> None:
        """Send a file-backed response with validators; maybe answer 304."""
        body = doc.body if body is None else body
        ctype = doc.content_type if content_type is None else content_type
        headers: Headers = [("Content-Type", ctype)] if ctype else []
        headers += [("Last-Modified", http_date(doc.mtime)), ("ETag", make_etag(body))]
        headers += extra or []
        overrides = list(overrides)
        if conditional and status == 200 and self._not_modified(_apply(headers, overrides)):
            kept = [
                (k, v)
                for k, v in _apply(headers, overrides)
                if not k.lower().startswith("content-")
            ]
            self._respond(304, b"", kept)
            return
        self._respond(status, body, headers, overrides)

    def _not_modified(self, headers: Headers) -> bool:
        if self.command not in ("GET", "HEAD"):
            return False
        inm = self.headers.get("If-None-Match")
        if inm is not None:
            etag = _find(headers, "ETag")
            tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
            return "*" in tags or (etag is not None and etag.removeprefix("W/") in tags)
        ims = self.headers.get("If-Modified-Since")
        last_modified = _find(headers, "Last-Modified")
        if ims is None or last_modified is None:
            return False
        try:
            since = email.utils.parsedate_to_datetime(ims).timestamp()
            modified = email.utils.parsedate_to_datetime(last_modified).timestamp()
        except (TypeError, ValueError, IndexError):
            return False
        return modified <= since

    def _stream(self, status: int, headers: Headers, chunks: Iterable[bytes]) -> None:
        """Send a body of unknown length: chunked for HTTP/1.1, else close-delimited."""
        chunked = self.request_version == "HTTP/1.1"
        framing = ("Transfer-Encoding", "chunked") if chunked else ("Connection", "close")
        self._send_head(status, [*headers, framing])
        if self._head:
            return
        sent = 0
        try:
            for chunk in chunks:
                if not chunk:
                    continue
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.wfile.write(chunk)
                sent += len(chunk)
        finally:
            self._entry["sent"] = sent  # body bytes written (a client that stops reads less)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.close_connection = True

    # -- helpers ----------------------------------------------------------------------------

    def _load(self, parts: Sequence[str]) -> Document:
        """Load (and substitute) the file named by the path segments ``parts``."""
        rel = urllib.parse.unquote("/".join(parts)).lstrip("/")
        root = self.server.root
        target = (root / rel).resolve()
        if target.is_dir() and (target / "index.html").is_file():
            target = target / "index.html"  # a site's home page
        if not target.is_relative_to(root) or not target.is_file():
            raise HTTPError(404, f"not found: /{rel}")
        body = target.read_bytes()
        if is_text_name(target.name):
            body = self.server.substitute(body)
        return Document(body, content_type_for(target.name), target.stat().st_mtime)

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return False early if the client closed the connection."""
        deadline = time.monotonic() + min(seconds, MAX_WAIT)
        sock = self.connection
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            readable, _, _ = select.select([sock], [], [], min(remaining, 0.2))
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return False
                except OSError:
                    return False
                time.sleep(min(max(remaining, 0), 0.2))  # pipelined bytes: keep waiting

    @staticmethod
    def _number(text: str, kind: type = int) -> Any:
        try:
            value = kind(urllib.parse.unquote(text))
        except ValueError:
            raise HTTPError(400, f"not a number: {text!r}") from None
        if not 0 <= value < float("inf"):
            raise HTTPError(400, f"not a finite non-negative number: {text!r}")
        return value

    @staticmethod
    def _params(query: str) -> dict[str, str]:
        return dict(urllib.parse.parse_qsl(query, keep_blank_values=True))

    def _status_code(self, text: str) -> int:
        code = self._number(text)
        if not 200 <= code <= 999:
            raise HTTPError(400, f"unsupported status code {code}")
        return int(code)

    @staticmethod
    def _retry_after(query: str) -> Headers:
        value = MockRequestHandler._params(query).get("retry_after")
        return [("Retry-After", value)] if value else []

    # -- endpoints --------------------------------------------------------------------------

    def _ep_gzip(self, rest: list[str], query: str) -> None:
        doc = self._load(rest)
        body = gzip.compress(doc.body, mtime=0)
        self._send_doc(doc, body, content_type="application/xml", conditional=True)

    def _ep_gzip2(self, rest: list[str], query: str) -> None:
        doc = self._load(rest)
        body = gzip.compress(gzip.compress(doc.body, mtime=0), mtime=0)
        self._send_doc(doc, body, content_type="application/xml", conditional=True)

    def _ep_ce(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/ce/ENC/PATH")
        encoding = urllib.parse.unquote(rest[0]).lower()
        encode_body(encoding, b"")  # validate before touching the file
        doc = self._load(rest[1:])
        body = encode_body(encoding, doc.body)
        self._send_doc(
            doc,
            body,
            extra=[("Content-Encoding", encoding), ("Vary", "Accept-Encoding")],
            conditional=True,
        )

    def _ep_ctype(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/ctype/TYPE/PATH")
        doc = self._load(rest[1:])
        self._send_doc(doc, content_type=urllib.parse.unquote(rest[0]), conditional=True)

    def _ep_status(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/status/CODE[/PATH]")
        code = self._status_code(rest[0])
        extra = self._retry_after(query)
        if len(rest) == 1 or rest[1:] == [""]:
            self._send_error(code, "status requested by the test", extra)
        else:
            self._send_doc(self._load(rest[1:]), status=code, extra=extra)

    def _ep_flaky(self, rest: list[str], query: str) -> None:
        if len(rest) < 3:
            raise HTTPError(400, "usage: /_/flaky/N/CODE/PATH")
        failures = self._number(rest[0])
        code = self._status_code(rest[1])
        key = "/".join(["", "_", "flaky", *rest]) + (f"?{query}" if query else "")
        if self.server.flaky_hit(key) <= failures:
            self._send_error(code, "flaky failure", self._retry_after(query))
        else:
            self._send_doc(self._load(rest[2:]), conditional=True)

    def _ep_redirect(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/redirect/CODE?to=URL")
        code = self._status_code(rest[0])
        target = self._params(query).get("to")
        if target is None:
            raise HTTPError(400, "missing ?to=URL")
        self._redirect(code, self.server.substitute(target.encode()).decode())

    def _redirect(self, code: int, location: str) -> None:
        link = html.escape(location)
        body = f'<html><body><a href="{link}">{link}</a></body></html>\n'.encode()
        self._respond(code, body, [("Location", location), ("Content-Type", HTML_TYPE)])

    def _ep_loop(self, rest: list[str], query: str) -> None:
        step = self._number(rest[0]) if rest and rest[0] else 0
        self._redirect(302, f"/_/loop/{step + 1}")

    def _ep_slow(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/slow/SECONDS/PATH")
        seconds = self._number(rest[0], float)
        doc = self._load(rest[1:])
        if not self._wait(seconds):
            self.close_connection = True
            return
        self._send_doc(doc, conditional=True)

    def _ep_hang(self, rest: list[str], query: str) -> None:
        seconds = self._number(rest[0], float) if rest and rest[0] else MAX_WAIT
        self._wait(seconds)
        self.close_connection = True

    def _ep_drip(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/drip/BYTES_PER_SEC/PATH")
        rate = max(1, self._number(rest[0]))
        doc = self._load(rest[1:])
        body = doc.body
        self._send_head(
            200, [("Content-Type", doc.content_type), ("Content-Length", str(len(body)))]
        )
        if self._head:
            return
        for start in range(0, len(body), rate):
            if not self._wait(1.0):
                self.close_connection = True
                return
            self.wfile.write(body[start : start + rate])

    def _ep_reset(self, rest: list[str], query: str) -> None:
        doc = self._load(rest)
        body = doc.body
        self._send_head(
            200, [("Content-Type", doc.content_type), ("Content-Length", str(len(body)))]
        )
        if self._head:
            return
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        time.sleep(0.05)  # let the half body reach the client before the RST
        self._abort()

    def _abort(self) -> None:
        """Close the connection with a TCP RST (SO_LINGER 0)."""
        self._aborted = True
        self.close_connection = True
        sock = self.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # The fd is only released once the makefile() objects are closed too.
        self.rfile.close()
        self.wfile.close()
        sock.close()

    def _ep_truncate(self, rest: list[str], query: str) -> None:
        if not rest:
            raise HTTPError(400, "usage: /_/truncate/NBYTES/PATH")
        size = self._number(rest[0])
        doc = self._load(rest[1:])
        self._send_doc(doc, doc.body[:size])

    def _ep_endless(self, rest: list[str], query: str) -> None:
        base = self.server.base
        params = self._params(query)
        status = self._status_code(params.get("status", "200"))
        if params.get("html"):  # an error page that never ends: ?html=1&status=404

            def page() -> Iterator[bytes]:
                yield b"<!DOCTYPE html><html><head><title>Not found</title></head><body>\n"
                sent = 0
                while sent < ENDLESS_LIMIT:
                    sent += 65536
                    yield b"<p>" + b"x" * 65529 + b"</p>"

            self._stream(status, [("Content-Type", "text/html")], page())
            self.close_connection = True
            return

        def chunks() -> Iterator[bytes]:
            sent = len(URLSET_HEAD)
            yield URLSET_HEAD
            i = 0
            while sent < ENDLESS_LIMIT:
                batch = "".join(
                    f"<url><loc>{base}/x/{n}</loc></url>\n" for n in range(i, i + 1000)
                ).encode()
                i += 1000
                sent += len(batch)
                yield batch
            yield URLSET_TAIL

        self._stream(status, [("Content-Type", "application/xml")], chunks())
        self.close_connection = True

    def _ep_headers(self, rest: list[str], query: str) -> None:
        doc = self._load(rest)
        substitute = self.server.substitute
        overrides = [
            (name, substitute(value.encode("latin-1", "replace")).decode("latin-1"))
            for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True)
        ]
        self._send_doc(doc, overrides=overrides, conditional=True)

    def _ep_calendar(self, rest: list[str], query: str) -> None:
        try:
            year, month = int(rest[0]), int(rest[1])
        except (IndexError, ValueError):
            year, month = 2026, 1
        after = (year + month // 12, month % 12 + 1)
        before = (year - (month == 1), (month - 2) % 12 + 1)
        links = [f'<a href="/_/calendar/{y}/{m}">{y}-{m}</a>' for y, m in (before, after)]
        links += [f'<a href="/_/calendar/{year}/{month}?day={d}">{d}</a>' for d in range(1, 32)]
        body = f"<html><body><h1>{year}-{month}</h1>{''.join(links)}</body></html>".encode()
        self._respond(200, body, [("Content-Type", HTML_TYPE)])

    def _ep_gen(self, rest: list[str], query: str) -> None:
        kind = rest[0] if rest else ""
        params = self._params(query)
        count = self._number(params.get("n", "10"))
        if count > MAX_GEN:
            raise HTTPError(400, f"n is capped at {MAX_GEN}")
        base = self.server.alt if params.get("host") == "alt" else self.server.base
        lastmod = params.get("lastmod", "")
        part = params.get("part")
        prefix = params.get("prefix", "/p/") + (f"{part}/" if part is not None else "")
        if kind == "urlset":
            chunks = _gen_urlset(base + prefix, count, lastmod)
            ctype = "application/xml"
        elif kind == "index":
            child = self.server.substitute(
                params.get("child", "/_/gen/urlset?n=10").encode()
            ).decode()
            if not child.startswith(("http://", "https://")):
                child = base + ("" if child.startswith("/") else "/") + child
            chunks = _gen_index(child, count, lastmod)
            ctype = "application/xml"
        elif kind == "text":
            chunks = _gen_text(base + prefix, count)
            ctype = "text/plain"
        else:
            raise HTTPError(404, "use /_/gen/urlset, /_/gen/index or /_/gen/text")
        if params.get("gzip") in ("1", "true", "yes"):
            chunks = gzip_stream(chunks)
            ctype = "application/x-gzip"
        headers: Headers = [("Content-Type", ctype)]
        if params.get("cl") in ("1", "true", "yes"):
            self._respond(200, b"".join(chunks), headers)
        else:
            self._stream(200, headers, chunks)

    def _ep_bomb(self, rest: list[str], query: str) -> None:
        if rest not in (["gzip"], ["deflate"], ["br"]):
            raise HTTPError(404, "use /_/bomb/gzip?mb=N, /_/bomb/deflate or /_/bomb/br")
        kind = rest[0]
        params = self._params(query)
        mb = self._number(params.get("mb", "10"))
        if not 1 <= mb <= MAX_BOMB_MB:
            raise HTTPError(400, f"mb must be within 1..{MAX_BOMB_MB}")
        if kind == "br" and brotli is None:
            raise HTTPError(501, "the brotli module is not installed")
        body = self.server.bomb(mb, kind)
        if kind != "gzip":
            headers = [("Content-Type", "application/xml"), ("Content-Encoding", kind)]
        elif params.get("ce") in ("1", "true", "yes"):
            headers = [("Content-Type", "application/xml"), ("Content-Encoding", "gzip")]
        else:
            headers = [("Content-Type", "application/x-gzip")]
        self._respond(200, body, headers)


def _gen_urlset(stem: str, count: int, lastmod: str) -> Iterator[bytes]:
    loc = xml_escape(stem)
    extra = f"<lastmod>{xml_escape(lastmod)}</lastmod>" if lastmod else ""
    yield URLSET_HEAD
    for start in range(0, count, 1000):
        yield "".join(
            f"<url><loc>{loc}{i}</loc>{extra}</url>\n"
            for i in range(start, min(count, start + 1000))
        ).encode()
    yield URLSET_TAIL


def _gen_index(child: str, count: int, lastmod: str) -> Iterator[bytes]:
    loc = xml_escape(child + ("&" if "?" in child else "?") + "part=")
    extra = f"<lastmod>{xml_escape(lastmod)}</lastmod>" if lastmod else ""
    yield INDEX_HEAD
    for start in range(0, count, 1000):
        yield "".join(
            f"<sitemap><loc>{loc}{i}</loc>{extra}</sitemap>\n"
            for i in range(start, min(count, start + 1000))
        ).encode()
    yield INDEX_TAIL


def _gen_text(stem: str, count: int) -> Iterator[bytes]:
    for start in range(0, count, 1000):
        yield "".join(f"{stem}{i}\n" for i in range(start, min(count, start + 1000))).encode()


# -- the test-side controller -----------------------------------------------------------------

_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _child_env() -> dict[str, str]:
    env = os.environ.copy()
    for name in PROXY_VARS:
        env.pop(name, None)
        env.pop(name.upper(), None)
    return env


class MockServer:
    """Run ``python -m tests.mockserver`` in a child process for the duration of a ``with``.

    ``base`` is ``http://127.0.0.1:PORT``; ``alt_base`` the same server as
    ``http://localhost:PORT`` (a second host for cross-host tests).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        startup_timeout: float = 10.0,
        verbose: bool = False,
        command: Sequence[str] | None = None,
    ) -> None:
        self.root = Path(root).resolve() if root is not None else DEFAULT_ROOT
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self.command = list(command) if command is not None else None
        self.base = ""
        self.alt_base = ""
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the child process and wait for its base URL (fails after ``startup_timeout``)."""
        cmd = self.command or [
            sys.executable,
            "-m",
            "tests.mockserver",
            "--root",
            str(self.root),
            "--watch-stdin",
        ]
        if self.verbose and self.command is None:
            cmd.append("--verbose")
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - kept until stop()
        self._proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=_child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        try:
            line = self._first_line()
        except BaseException:
            self.stop()
            raise
        match = BASE_RE.fullmatch(line)
        if not match:
            detail = self._stderr_tail()
            self.stop()
            raise RuntimeError(f"mock server printed {line!r}, not an http://127.0.0.1 URL{detail}")
        self.base = line
        self.port = int(match.group(1))
        self.alt_base = f"http://localhost:{self.port}"

    def _first_line(self) -> str:
        assert self._proc is not None
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + self.startup_timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(remaining):
                    raise RuntimeError(
                        f"mock server did not report its URL within {self.startup_timeout:g} s"
                        f"{self._stderr_tail()}"
                    )
                data = os.read(fd, 4096)
                if not data:
                    try:
                        code: int | None = self._proc.wait(2)
                    except subprocess.TimeoutExpired:
                        code = None
                    raise RuntimeError(
                        f"mock server exited (code {code}) before reporting its URL; "
                        f"got {buf!r}{self._stderr_tail()}"
                    )
                buf += data
        return buf.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text = self._stderr.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; stderr:\n{text}" if text else ""

    def stop(self) -> None:
        """Terminate (then kill if needed) the child and wait for it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    @property
    def stderr(self) -> str:
        """What the child wrote to stderr so far."""
        return self._stderr_tail().removeprefix("; stderr:\n")

    def url(self, path: str = "/") -> str:
        """Return ``base + path`` (a missing leading slash is added)."""
        return self.base + (path if path.startswith("/") else "/" + path)

    def alt_url(self, path: str = "/") -> str:
        """Like :meth:`url` on the ``localhost`` host name."""
        return self.alt_base + (path if path.startswith("/") else "/" + path)

    def request_log(self) -> list[dict[str, Any]]:
        """Return the full request log: dicts with ``method``, ``path``, ``headers``, ``time``."""
        with _NO_PROXY_OPENER.open(self.url("/_/requests"), timeout=10) as resp:
            return list(json.loads(resp.read()))

    def requests(self) -> list[str]:
        """Return the paths (with query) of the requests received so far, in order."""
        return [entry["path"] for entry in self.request_log()]

    def reset_requests(self) -> None:
        """Clear the server's request log."""
        with _NO_PROXY_OPENER.open(self.url("/_/requests/reset"), timeout=10) as resp:
            resp.read()

    def set_clock(self, offset: float) -> None:
        """Send ``Date`` headers ``offset`` seconds from the real clock from now on."""
        with _NO_PROXY_OPENER.open(self.url(f"/_/clock/{offset:g}"), timeout=10) as resp:
            resp.read()


# -- the process entry point ------------------------------------------------------------------


def _exit_on_stdin_eof() -> None:
    try:
        sys.stdin.buffer.read()
    finally:
        os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve ROOT on 127.0.0.1 (free port); the first stdout line is the base URL."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.mockserver", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--root", default=str(DEFAULT_ROOT), help="directory to serve")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    parser.add_argument(
        "--watch-stdin", action="store_true", help="exit when stdin reaches EOF (parent died)"
    )
    args = parser.parse_args(argv)
    server = MockHTTPServer(Path(args.root), port=args.port, verbose=args.verbose)
    sys.stdout.write(server.base + "\n")
    sys.stdout.flush()
    sys.stdout = sys.stderr  # nothing else may ever reach the parent's stdout pipe
    if args.verbose:
        sys.stderr.write(f"mockserver: serving {server.root} at {server.base}\n")
    if args.watch_stdin:
        threading.Thread(target=_exit_on_stdin_eof, name="stdin-watch", daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
