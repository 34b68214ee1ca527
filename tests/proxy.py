"""A small forward HTTP proxy for tests: loopback only, Basic auth, every request recorded."""

from __future__ import annotations

import base64
import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["ForwardProxy"]


class _Handler(BaseHTTPRequestHandler):
    server: _ProxyServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        target = urlsplit(self.path)
        expected = "Basic " + base64.b64encode(self.server.credentials.encode()).decode()
        authorised = self.headers.get("Proxy-Authorization") == expected
        self.server.record(self.path, authorised)
        if not authorised:
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if target.hostname not in ("127.0.0.1", "localhost"):
            self.send_error(403, "loopback targets only")
            return
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        path = target.path + (f"?{target.query}" if target.query else "")
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in ("proxy-authorization", "proxy-connection", "connection")
        }
        upstream.request("GET", path, headers=headers)
        response = upstream.getresponse()
        body = response.read()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        upstream.close()


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, credentials: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.credentials = credentials
        self.log: list[tuple[str, bool]] = []
        self._lock = threading.Lock()

    def record(self, url: str, authorised: bool) -> None:
        with self._lock:
            self.log.append((url, authorised))


class ForwardProxy:
    """``with ForwardProxy("user:secret") as proxy:`` → ``proxy.url`` (credentials included),
    ``proxy.requests()`` the absolute URLs it was asked for, with whether auth was right."""

    def __init__(self, credentials: str) -> None:
        self._server = _ProxyServer(credentials)
        host, port = self._server.server_address[:2]
        self.url = f"http://{credentials}@{host!s}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def requests(self) -> list[tuple[str, bool]]:
        with self._server._lock:
            return list(self._server.log)
