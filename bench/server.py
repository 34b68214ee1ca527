"""Fast loopback static file server for the sitemap benchmarks.

* Binds 127.0.0.1 only.
* Serves files as-is with ``socket.sendfile`` (zero-copy), HTTP/1.1 keep-alive,
  one thread per connection.  ``.gz`` files go out as
  ``application/x-gzip`` *without* ``Content-Encoding`` (like a real static
  host serving ``sitemap.xml.gz``).
* Counts requests per path (and per status).  ``GET /_stats`` returns them as
  JSON; ``GET /_stats?reset=1`` returns them and then resets the counters.
  Requests to ``/_stats`` itself are not counted.

Usage::

    python bench/server.py --root DIR [--port 0]

Prints ``READY <port>`` on stdout once listening (port 0 = pick a free one).
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

CONTENT_TYPES = {
    ".xml": "application/xml",
    ".gz": "application/x-gzip",
    ".txt": "text/plain; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
}


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.paths: dict[str, int] = {}
        self.status: dict[str, int] = {}
        self.bytes_sent = 0
        self.total = 0
        self.since = time.time()

    def add(self, path: str, status: int, nbytes: int) -> None:
        with self.lock:
            self.paths[path] = self.paths.get(path, 0) + 1
            k = str(status)
            self.status[k] = self.status.get(k, 0) + 1
            self.bytes_sent += nbytes
            self.total += 1

    def snapshot(self, reset: bool = False) -> dict:
        with self.lock:
            d = {
                "total": self.total,
                "paths": dict(self.paths),
                "status": dict(self.status),
                "bytes_sent": self.bytes_sent,
                "since": self.since,
            }
            if reset:
                self.reset()
        return d


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sitemapcrawl-bench/1"
    sys_version = ""

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args) -> None:
        pass

    def _send_simple(self, status: int, body: bytes, ctype: str, count_path: str | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        if count_path is not None:
            self.server.stats.add(count_path, status, len(body))  # type: ignore[attr-defined]

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path) or "/"
        if path == "/_stats":
            reset = "reset=1" in (parts.query or "")
            body = json.dumps(self.server.stats.snapshot(reset=reset)).encode()  # type: ignore[attr-defined]
            self._send_simple(200, body, "application/json", None)
            return
        norm = posixpath.normpath(path)
        if ".." in norm.split("/"):
            self._send_simple(403, b"forbidden\n", "text/plain", path)
            return
        fs_path = os.path.join(self.server.root, norm.lstrip("/"))  # type: ignore[attr-defined]
        if os.path.isdir(fs_path):
            fs_path = os.path.join(fs_path, "index.html")
        try:
            f = open(fs_path, "rb")  # noqa: SIM115 - closed by the with below
        except OSError:
            self._send_simple(404, b"not found\n", "text/plain", path)
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            ext = os.path.splitext(fs_path)[1]
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPES.get(ext, "application/octet-stream"))
            self.send_header("Content-Length", str(size))
            self.end_headers()  # flushes headers to the socket
            if self.command != "HEAD":
                try:
                    self.connection.sendfile(f)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
        self.server.stats.add(path, 200, size)  # type: ignore[attr-defined]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, root: str, port: int) -> None:
        self.root = os.path.abspath(root)
        self.stats = Stats()
        super().__init__(("127.0.0.1", port), Handler)

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
        super().server_bind()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--root", required=True)
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args(argv)
    srv = Server(a.root, a.port)
    print(f"READY {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
