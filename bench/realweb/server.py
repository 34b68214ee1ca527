"""Serve one deploy of a real site on 127.0.0.1, as GitHub Pages would, with the history's clock.

One :class:`ReplayServer` per site, on a port fixed by the site's name (the spider's seeded
sample hashes whole URLs, port included). :meth:`ReplayServer.set_deploy` switches the
deploy served between runs. Per request:

* the site's public origins (``https://docs.example.org``, ``http://…``, ``//…``) in HTML,
  XML and text are rewritten to the server's origin, so sitemaps, robots.txt, links and
  canonical tags point here;
* ``/x/`` is ``x/index.html``; ``/x`` is the file ``x``, else ``x.html``, else a 301 to
  ``/x/`` when ``x/index.html`` exists (GitHub Pages' rules); a miss is the deploy's
  ``404.html`` with status 404;
* ``/robots.txt`` is the deploy's when the site is at the host's root and has one (its
  ``Sitemap:`` lines that do not point here dropped, the site's sitemaps added when none
  is left), else a generated one declaring the site's sitemaps;
* no ``Last-Modified`` and no ``ETag`` (the files' times are checkout times and mean
  nothing), so every request is a full 200; ``Date`` is the deploy's committer time.

The access log holds one :class:`Hit` per request, with the run number.
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from pathlib import Path

    from .corpus import SiteSpec

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".xml": "application/xml",
    ".xsl": "application/xml",
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".gz": "application/x-gzip",
}


def resolve_path(root: Path, mount: str, path: str) -> tuple[int, Path | None, str]:
    """(status, file, redirect location) of URL ``path`` in the deploy at ``root``."""
    if not path.startswith(mount):
        return 404, None, ""
    rel = unquote(path[len(mount) :])
    if ".." in rel.split("/"):
        return 404, None, ""
    base = root / rel if rel else root
    if path.endswith("/"):
        index = base / "index.html"
        return (200, index, "") if index.is_file() else (404, None, "")
    if base.is_file():
        return 200, base, ""
    html = base.with_name(base.name + ".html")
    if html.is_file():
        return 200, html, ""
    if (base / "index.html").is_file():
        return 301, None, path + "/"
    return 404, None, ""


_URL_BLOCK = re.compile(rb"<url>.*?</url>", re.DOTALL)
_LOC = re.compile(rb"<loc>\s*(.*?)\s*</loc>", re.DOTALL)
_LASTMOD = re.compile(rb"<lastmod>.*?</lastmod>", re.DOTALL)


def freeze_lastmods(body: bytes, frozen: dict[str, str | None]) -> bytes:
    """A urlset whose ``<lastmod>`` values are those of ``frozen`` (page path -> raw
    lastmod) where it has the page: a sitemap that stopped reporting changes, on the real
    pages (a URL it does not know keeps its own; an index's lastmods move as before).
    Plain, unprefixed ``<url>``, ``<loc>`` and ``<lastmod>`` tags, as the honest sites write.
    """

    def one(match: re.Match[bytes]) -> bytes:
        block = match.group(0)
        loc = _LOC.search(block)
        if loc is None:
            return block
        path = urlsplit(loc.group(1).decode("utf-8", errors="replace")).path or "/"
        value = frozen.get(path)
        if value is None:
            return block
        return _LASTMOD.sub(lambda _: b"<lastmod>" + value.encode() + b"</lastmod>", block)

    return _URL_BLOCK.sub(one, body)


def port_for(name: str) -> int:
    """The site's fixed port (as ``bench/simweb`` does for its archetypes)."""
    digest = hashlib.blake2b(f"realweb:{name}".encode(), digest_size=4).digest()
    return 20000 + int.from_bytes(digest) % 20000


@dataclass(frozen=True, slots=True)
class Hit:
    run: int
    path: str
    status: int
    what: str  # robots, sitemap, page, redirect, missing, other


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "realweb/1"
    sys_version = ""
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.replay.handle(self)

    def do_HEAD(self) -> None:
        self.server.replay.handle(self, head=True)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    replay: ReplayServer


class ReplayServer:
    """One site on ``http://127.0.0.1:<port>``, serving the deploy set last."""

    def __init__(self, spec: SiteSpec, port: int = 0) -> None:
        self.spec = spec
        self.httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self.httpd.replay = self
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.mount = spec.mount
        self.root: Path | None = None
        self.clock = 0.0
        self.run = -1
        self.hits: list[Hit] = []
        #: page path -> the lastmod every sitemap gives it (``run.py --freeze-lastmods-from``)
        self.freeze: dict[str, str | None] | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        hosts = "|".join(re.escape(h) for h in spec.public_origins)
        self._origin_re = re.compile(rf"(?:https?:)?//(?:{hosts})(?::\d+)?(?=[/\"'<\s?#]|$)")
        self._sitemap_paths = {self.mount + s for s in spec.sitemaps}

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_deploy(
        self, root: Path, clock: float, run: int, freeze: dict[str, str | None] | None = None
    ) -> None:
        with self._lock:
            self.root, self.clock, self.run, self.freeze = root, clock, run, freeze

    def hits_of(self, run: int) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.run == run]

    def drop_run(self, run: int) -> None:
        with self._lock:
            self.hits = [h for h in self.hits if h.run != run]

    # -- requests -------------------------------------------------------------------

    def rewrite(self, body: bytes) -> bytes:
        text = body.decode("utf-8", errors="surrogateescape")
        return self._origin_re.sub(self.origin, text).encode("utf-8", errors="surrogateescape")

    def resolve(self, path: str) -> tuple[int, Path | None, str]:
        """(status, file, redirect location) of a URL path in the current deploy."""
        assert self.root is not None
        return resolve_path(self.root, self.mount, path)

    def robots(self) -> bytes:
        """The deploy's robots.txt (site at the host root) with only the ``Sitemap:`` lines
        that point here, and the site's own sitemaps when none does; else a generated one.

        A declared sitemap elsewhere is dropped: hugo-theme-iris's 2020 robots.txt says
        ``Sitemap: https://hugothemeiris.peaceiris.appsitemap.xml`` (a base URL without its
        slash), which no rewrite can bring here, and the replay sends nothing off the host."""
        assert self.root is not None
        lines: list[str] = []
        own = self.root / "robots.txt"
        if self.mount == "/" and own.is_file():
            text = self.rewrite(own.read_bytes()).decode("utf-8", errors="replace")
            lines = [
                line
                for line in text.splitlines()
                if not line.lower().startswith("sitemap:")
                or line.split(":", 1)[1].strip().startswith(self.origin + "/")
            ]
        if not any(line.lower().startswith("sitemap:") for line in lines):
            if not lines:
                lines = ["User-agent: *", "Allow: /"]
            lines += [f"Sitemap: {self.origin}{self.mount}{s}" for s in self.spec.sitemaps]
        return ("\n".join(lines) + "\n").encode()

    def handle(self, req: _Handler, head: bool = False) -> None:
        path = urlsplit(req.path).path or "/"
        with self._lock:
            run, clock, root, freeze = self.run, self.clock, self.root, self.freeze
        headers = {"Date": email.utils.formatdate(clock, usegmt=True)}
        if root is None:
            status, body, what = 503, b"no deploy\n", "other"
            headers["Content-Type"] = "text/plain"
        elif path == "/robots.txt":
            status, body, what = 200, self.robots(), "robots"
            headers["Content-Type"] = "text/plain; charset=utf-8"
        else:
            status, file, location = self.resolve(path)
            if status == 301:
                body, what = b"", "redirect"
                headers["Location"] = location
            elif file is None:
                what = "missing"
                page404 = root / "404.html"
                body = self.rewrite(page404.read_bytes()) if page404.is_file() else b"not found\n"
                headers["Content-Type"] = "text/html; charset=utf-8"
            else:
                suffix = file.suffix.lower()
                headers["Content-Type"] = TYPES.get(suffix, "application/octet-stream")
                raw = file.read_bytes()
                body = raw if suffix == ".gz" else self.rewrite(raw)
                is_sitemap = path in self._sitemap_paths or (
                    suffix in (".xml", ".gz") and "sitemap" in file.name.lower()
                )
                what = (
                    "sitemap"
                    if is_sitemap
                    else ("page" if suffix in (".html", ".htm") else "other")
                )
                if freeze is not None and is_sitemap and suffix != ".gz":
                    body = freeze_lastmods(body, freeze)
        headers["Content-Length"] = str(len(body))
        req.log_request(status)
        req.send_response_only(status)
        for name, value in headers.items():
            req.send_header(name, value)
        req.end_headers()
        if not head:
            req.wfile.write(body)
        with self._lock:
            self.hits.append(Hit(run, path, status, what))
