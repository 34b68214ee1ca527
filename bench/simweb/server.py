"""Serve simulated sites over HTTP on 127.0.0.1, with a virtual clock and an access log.

One :class:`SimServer` per site (its own port, so each site's robots.txt is at
``/robots.txt``). The clock is set by the driver between runs
(:meth:`SimServer.set_clock`) or, when started from the command line, with
``GET /_sim/clock?t=<ISO 8601 or epoch>`` (``/_sim/`` requests are not logged).
Every response carries ``Date`` = the virtual now. Pages carry an ``ETag``
(a hash of the body) and the archetype's ``Last-Modified``, and a matching
``If-None-Match`` (or, without it, ``If-Modified-Since``) gets a 304.

The access log holds one :class:`Hit` per request: the run number, the path,
what it was (robots, index, sitemap, page, other), the status, the page's index
and the content version served (for a 304, the version the client holds,
which is the live one).

    python -m bench.simweb.server --archetype honest-ts [--seed 1] [--pages 300] [--day 0]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from . import render
from .model import Site, http_date

if TYPE_CHECKING:
    from .model import Page


@dataclass(frozen=True, slots=True)
class Hit:
    run: int
    clock: float
    path: str
    what: str
    status: int
    page: int
    version: int
    conditional: bool
    nbytes: int


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "simweb/1"
    sys_version = ""
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.sim.handle(self)

    def do_HEAD(self) -> None:
        self.server.sim.handle(self, head=True)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 drops SYNs under 8 concurrent connections
    sim: SimServer


class SimServer:
    """One site on ``http://127.0.0.1:<port>``."""

    def __init__(self, site: Site, port: int = 0) -> None:
        self.site = site
        self.httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self.httpd.sim = self
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.clock = site.run_time(0)
        self.run = 0
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._requests = 0
        self._cache: dict[str, tuple[bytes, dict[str, str], int, int]] = {}
        self._thread: threading.Thread | None = None
        self.sitemap_paths = {s.path: n for n, s in enumerate(site.archetype.segments)}

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> SimServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_clock(self, t: float, run: int | None = None) -> None:
        with self._lock:
            self.clock = t
            if run is not None:
                self.run = run
            self._cache.clear()

    def drop_run(self, run: int) -> int:
        """Forget the requests of ``run`` (a crawl that was killed and is run again)."""
        with self._lock:
            kept = [h for h in self.hits if h.run != run]
            dropped = len(self.hits) - len(kept)
            self.hits = kept
        return dropped

    def hits_of(self, run: int) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.run == run]

    # -- requests -----------------------------------------------------------------------

    def handle(self, req: _Handler, head: bool = False) -> None:
        parts = urlsplit(req.path)
        path = parts.path
        if path.startswith("/_sim/"):
            self._control(req, path, parse_qs(parts.query))
            return
        with self._lock:
            t, run = self.clock, self.run
            self._requests += 1
            request_no = self._requests
        status, body, headers, page_no, version, what = self._respond(path, t, request_no)
        conditional = False
        if status == 200 and what in ("page", "sitemap", "index"):
            conditional = bool(
                req.headers.get("If-None-Match") or req.headers.get("If-Modified-Since")
            )
            if _not_modified(req, headers):
                status, body = 304, b""
        out = {"Date": http_date(t), **headers}
        if status != 304:
            out["Content-Length"] = str(len(body))
        # recorded before the answer leaves: once the client has it, its next request may
        # be handled by another thread first, and the log would be out of order
        hit = Hit(run, t, path, what, status, page_no, version, conditional, len(body))
        with self._lock:
            self.hits.append(hit)
        # not send_response(): it adds a second Date header with the real clock
        req.log_request(status)
        req.send_response_only(status)
        for name, value in out.items():
            req.send_header(name, value)
        req.end_headers()
        if not head and status != 304:
            req.wfile.write(body)

    def _respond(
        self, path: str, t: float, request_no: int
    ) -> tuple[int, bytes, dict[str, str], int, int, str]:
        site = self.site
        xml = "application/xml; charset=utf-8"
        if path == "/robots.txt":
            return 200, render.robots(self.origin), _plain("text/plain"), -1, -1, "robots"
        if path == "/sitemap_index.xml":
            body = render.sitemap_index(site, self.origin, t)
            return 200, body, _with_validators(xml, body, None), -1, -1, "index"
        if path in self.sitemap_paths:
            body = render.sitemap(site, self.sitemap_paths[path], self.origin, t)
            modified = render.sitemap_last_modified(site, t)
            return 200, body, _with_validators(xml, body, modified), -1, -1, "sitemap"
        page = site.by_path.get(path)
        if page is None or page.published > t:
            return 404, b"not found\n", _plain("text/plain"), -1, -1, "other"
        cached = None if site.archetype.noisy else self._cache.get(path)
        if cached is None:
            cached = self._render(page, t, request_no)
            if not site.archetype.noisy:
                with self._lock:
                    self._cache[path] = cached
        body, headers, version, index = cached
        return 200, body, headers, index, version, "page"

    def _render(
        self, page: Page, t: float, request_no: int
    ) -> tuple[bytes, dict[str, str], int, int]:
        body = render.render_page(self.site, page, self.origin, t, request_no)
        modified = self.site.http_last_modified(page, t)
        headers = _with_validators("text/html; charset=utf-8", body, modified)
        return body, headers, self.site.version(page, t), page.index

    def _control(self, req: _Handler, path: str, query: dict[str, list[str]]) -> None:
        if path == "/_sim/clock" and "t" in query:
            raw = query["t"][0]
            try:
                t = float(raw)
            except ValueError:
                t = dt.datetime.fromisoformat(raw).timestamp()
            self.set_clock(t, int(query["run"][0]) if "run" in query else None)
        body = json.dumps(
            {"clock": self.clock, "iso": render.iso(self.clock), "run": self.run}
        ).encode()
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)


def _plain(content_type: str) -> dict[str, str]:
    return {"Content-Type": content_type}


def _with_validators(content_type: str, body: bytes, modified: float | None) -> dict[str, str]:
    headers = {"Content-Type": content_type, "ETag": render.etag(body)}
    if modified is not None:
        headers["Last-Modified"] = http_date(modified)
    return headers


def _not_modified(req: _Handler, headers: dict[str, str]) -> bool:
    inm = req.headers.get("If-None-Match")
    if inm is not None:
        tags = {tag.strip().removeprefix("W/") for tag in inm.split(",")}
        return "*" in tags or headers.get("ETag") in tags
    ims = req.headers.get("If-Modified-Since")
    modified = headers.get("Last-Modified")
    if ims and modified:
        try:
            since = dt.datetime.strptime(ims, "%a, %d %b %Y %H:%M:%S GMT")
            last = dt.datetime.strptime(modified, "%a, %d %b %Y %H:%M:%S GMT")
        except ValueError:
            return False
        return last <= since
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--archetype", default="honest-ts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--day", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = SimServer(Site(args.archetype, args.seed, args.pages), args.port)
    server.set_clock(server.site.run_time(args.day), args.day)
    print(f"READY {server.origin}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
