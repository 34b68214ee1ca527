"""Tests for the loopback mock server (tests/mockserver.py), with plain urllib/http.client."""

from __future__ import annotations

import email.utils
import gzip
import http.client
import json
import re
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.mockserver import DEFAULT_ROOT, MockServer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from email.message import Message

DATA = Path(__file__).resolve().parent / "data" / "mockserver"
HELLO = (DATA / "hello.xml").read_bytes()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
_FOLLOWING_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    """One mock server for the whole module, serving tests/data/mockserver."""
    with MockServer(root=DATA) as srv:
        yield srv


def fetch(
    url: str, headers: dict[str, str] | None = None, *, method: str = "GET", timeout: float = 5
) -> tuple[int, Message, bytes]:
    """GET ``url`` without proxies or redirects; return status, headers and raw body."""
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers, exc.read()


def subst(srv: MockServer, data: bytes) -> bytes:
    """What the server makes of a text file's placeholders."""
    return data.replace(b"{base}", srv.base.encode()).replace(b"{alt}", srv.alt_base.encode())


def conn(srv: MockServer, timeout: float = 5) -> http.client.HTTPConnection:
    """A raw keep-alive connection to the server."""
    return http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)


# -- process and API ---------------------------------------------------------------------------


def test_base_and_urls(server: MockServer) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.base)
    assert server.alt_base == f"http://localhost:{server.port}"
    assert server.url("/a?b=1") == server.base + "/a?b=1"
    assert server.url("a") == server.base + "/a"
    assert server.alt_url("/a") == f"http://localhost:{server.port}/a"
    assert Path(__file__).resolve().parent / "data" == DEFAULT_ROOT


def test_command_line_first_line_is_the_url() -> None:
    with MockServer(root=DATA) as srv:
        status, _, body = fetch(srv.url("/hello.xml"))
        assert status == 200
        assert body == subst(srv, HELLO)
        proc = srv._proc
        assert proc is not None
    assert proc.poll() is not None  # the child is gone after __exit__


def test_startup_fails_fast_on_garbage() -> None:
    cmd = [sys.executable, "-c", "import sys; sys.stdout.write('hello\\n'); sys.stdout.flush()"]
    with pytest.raises(RuntimeError, match=r"not an http://127\.0\.0\.1 URL"):
        MockServer(command=cmd).start()


def test_startup_fails_fast_on_silence() -> None:
    cmd = [sys.executable, "-c", "import time; time.sleep(30)"]
    with pytest.raises(RuntimeError, match="did not report its URL"):
        MockServer(command=cmd, startup_timeout=0.5).start()


def test_startup_fails_fast_on_early_exit() -> None:
    cmd = [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"]
    with pytest.raises(RuntimeError, match=r"(?s)exited \(code 3\).*boom"):
        MockServer(command=cmd).start()


# -- static files ------------------------------------------------------------------------------


def test_static_text_is_substituted(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/hello.xml"))
    assert status == 200
    assert body == subst(server, HELLO)
    assert f"{server.base}/page/1".encode() in body
    assert f"http://localhost:{server.port}/page/2".encode() in body
    assert headers["Content-Type"] == "application/xml"
    assert headers["Content-Length"] == str(len(body))
    assert "Content-Encoding" not in headers
    date = email.utils.parsedate_to_datetime(headers["Date"]).timestamp()
    assert abs(date - time.time()) < 5
    mtime = (DATA / "hello.xml").stat().st_mtime
    assert email.utils.parsedate_to_datetime(headers["Last-Modified"]).timestamp() == int(mtime)
    assert headers["ETag"].startswith('"')


def test_robots_and_subdir_and_alt_host(server: MockServer) -> None:
    status, headers, body = fetch(server.alt_url("/robots.txt"))
    assert status == 200
    assert headers["Content-Type"] == "text/plain"
    assert f"Sitemap: {server.base}/hello.xml".encode() in body
    status, _, body = fetch(server.url("/sub/notes.txt"))
    assert status == 200
    assert body == subst(server, (DATA / "sub" / "notes.txt").read_bytes())


def test_charset_from_name(server: MockServer) -> None:
    _, headers, _ = fetch(server.url("/page.charset-iso-8859-1.html"))
    assert headers["Content-Type"] == "text/html; charset=iso-8859-1"


def test_non_utf8_file_is_intact(server: MockServer) -> None:
    _, _, body = fetch(server.url("/latin1.xml"))
    assert body == subst(server, (DATA / "latin1.xml").read_bytes())
    assert f"{server.base}/caf\xe9".encode("latin-1") in body


def test_binary_gz_is_served_as_is(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/hello.xml.gz"))
    assert status == 200
    assert body == (DATA / "hello.xml.gz").read_bytes()
    assert headers["Content-Type"] == "application/x-gzip"
    assert "Content-Encoding" not in headers
    assert gzip.decompress(body) == HELLO  # not substituted


@pytest.mark.parametrize("path", ["/missing.xml", "/sub", "/sub/", "/", "/../setup.py"])
def test_not_found(server: MockServer, path: str) -> None:
    status, headers, body = fetch(server.url(path))
    assert status == 404
    assert headers["Content-Type"].startswith("text/html")
    assert b"<html>" in body
    assert b"404" in body


def test_head(server: MockServer) -> None:
    c = conn(server)
    c.request("HEAD", "/hello.xml")
    resp = c.getresponse()
    assert resp.status == 200
    assert resp.headers["Content-Length"] == str(len(subst(server, HELLO)))
    assert resp.read() == b""
    c.close()


def test_conditional_requests(server: MockServer) -> None:
    _, headers, _ = fetch(server.url("/hello.xml"))
    etag, last_modified = headers["ETag"], headers["Last-Modified"]
    status, h304, body = fetch(server.url("/hello.xml"), {"If-None-Match": etag})
    assert status == 304
    assert body == b""
    assert h304["ETag"] == etag
    status, _, body = fetch(server.url("/hello.xml"), {"If-None-Match": '"other"'})
    assert status == 200
    assert body
    status, _, _ = fetch(server.url("/hello.xml"), {"If-Modified-Since": last_modified})
    assert status == 304
    status, _, _ = fetch(
        server.url("/hello.xml"), {"If-Modified-Since": "Mon, 01 Jan 1990 00:00:00 GMT"}
    )
    assert status == 200


def test_keep_alive(server: MockServer) -> None:
    c = conn(server)
    for _ in range(3):
        c.request("GET", "/hello.xml")
        resp = c.getresponse()
        assert resp.read() == subst(server, HELLO)
    c.close()


# -- request log -------------------------------------------------------------------------------


def test_request_log(server: MockServer) -> None:
    server.reset_requests()
    assert server.requests() == []
    fetch(server.url("/hello.xml?x=1"), {"User-Agent": "probe/1.0", "Accept-Encoding": "gzip"})
    fetch(server.url("/missing"))
    assert server.requests() == ["/hello.xml?x=1", "/missing"]
    first = server.request_log()[0]
    assert first["method"] == "GET"
    assert first["path"] == "/hello.xml?x=1"
    assert first["headers"]["User-Agent"] == "probe/1.0"
    assert first["headers"]["Accept-Encoding"] == "gzip"
    # the control endpoint answers JSON and is not itself recorded
    status, headers, body = fetch(server.url("/_/requests"))
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert [e["path"] for e in json.loads(body)] == ["/hello.xml?x=1", "/missing"]
    server.reset_requests()
    assert server.requests() == []


# -- compression -------------------------------------------------------------------------------


def test_gzip(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/gzip/hello.xml"))
    assert status == 200
    assert headers["Content-Type"] == "application/xml"
    assert "Content-Encoding" not in headers
    assert gzip.decompress(body) == subst(server, HELLO)


def test_gzip2(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/gzip2/hello.xml"))
    assert status == 200
    assert "Content-Encoding" not in headers
    inner = gzip.decompress(body)
    assert inner[:2] == b"\x1f\x8b"
    assert gzip.decompress(inner) == subst(server, HELLO)


def _have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_content_encoding(server: MockServer, enc: str) -> None:
    status, headers, body = fetch(server.url(f"/_/ce/{enc}/hello.xml"))
    module = {"br": "brotli", "zstd": "zstandard"}.get(enc)
    if module and not _have(module):
        assert status == 501
        return
    assert status == 200
    assert headers["Content-Encoding"] == enc
    assert headers["Content-Type"] == "application/xml"
    if enc == "gzip":
        plain = gzip.decompress(body)
    elif enc == "deflate":
        plain = zlib.decompress(body)
    elif enc == "br":
        import brotli

        plain = brotli.decompress(body)
    else:
        import zstandard

        plain = zstandard.ZstdDecompressor().decompress(body)
    assert plain == subst(server, HELLO)


def test_content_encoding_unknown(server: MockServer) -> None:
    assert fetch(server.url("/_/ce/lzma/hello.xml"))[0] == 400


def test_ctype(server: MockServer) -> None:
    _, headers, body = fetch(server.url("/_/ctype/text%2Fhtml/hello.xml"))
    assert headers["Content-Type"] == "text/html"
    assert body == subst(server, HELLO)
    _, headers, _ = fetch(server.url("/_/ctype/text%2Fxml%3B%20charset%3Dutf-8/hello.xml"))
    assert headers["Content-Type"] == "text/xml; charset=utf-8"
    _, headers, body = fetch(server.url("/_/ctype//hello.xml"))
    assert "Content-Type" not in headers
    assert body == subst(server, HELLO)


# -- statuses and redirects --------------------------------------------------------------------


def test_status(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/status/404"))
    assert status == 404
    assert b"<html>" in body
    status, headers, body = fetch(server.url("/_/status/503/hello.xml?retry_after=7"))
    assert status == 503
    assert headers["Retry-After"] == "7"
    assert body == subst(server, HELLO)
    status, headers, body = fetch(server.url("/_/status/410/hello.xml"))
    assert status == 410
    assert "Retry-After" not in headers
    assert body == subst(server, HELLO)


def test_flaky(server: MockServer) -> None:
    url = server.url("/_/flaky/2/503/hello.xml?retry_after=1")
    first, second, third = fetch(url), fetch(url), fetch(url)
    assert first[0] == second[0] == 503
    assert first[1]["Retry-After"] == "1"
    assert third[0] == 200
    assert third[2] == subst(server, HELLO)
    # another URL has its own counter
    assert fetch(server.url("/_/flaky/1/500/hello.xml"))[0] == 500
    assert fetch(server.url("/_/flaky/1/500/hello.xml"))[0] == 200


def test_redirect(server: MockServer) -> None:
    target = server.url("/hello.xml")
    quoted = urllib.parse.quote(target, safe="")
    status, headers, _ = fetch(server.url(f"/_/redirect/301?to={quoted}"))
    assert status == 301
    assert headers["Location"] == target
    status, headers, _ = fetch(server.url("/_/redirect/307?to=%2Fsub%2Fnotes.txt%3Fa%3D1"))
    assert status == 307
    assert headers["Location"] == "/sub/notes.txt?a=1"
    status, headers, _ = fetch(server.url("/_/redirect/302?to=%7Balt%7D/hello.xml"))
    assert headers["Location"] == server.alt_url("/hello.xml")
    with _FOLLOWING_OPENER.open(server.url(f"/_/redirect/302?to={quoted}"), timeout=5) as resp:
        assert resp.read() == subst(server, HELLO)


def test_loop(server: MockServer) -> None:
    status, headers, _ = fetch(server.url("/_/loop/3"))
    assert status == 302
    assert headers["Location"] == "/_/loop/4"
    with pytest.raises(urllib.error.HTTPError, match=r"redirect loop|infinite loop"):
        _FOLLOWING_OPENER.open(server.url("/_/loop/0"), timeout=5)


# -- timing and broken connections -------------------------------------------------------------


def test_slow(server: MockServer) -> None:
    start = time.monotonic()
    status, _, body = fetch(server.url("/_/slow/0.3/hello.xml"))
    assert time.monotonic() - start >= 0.3
    assert status == 200
    assert body == subst(server, HELLO)
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        fetch(server.url("/_/slow/2/hello.xml"), timeout=0.2)


def test_hang(server: MockServer) -> None:
    c = conn(server, timeout=0.3)
    c.request("GET", "/_/hang")
    with pytest.raises(TimeoutError):
        c.getresponse()
    c.close()
    assert fetch(server.url("/hello.xml"))[0] == 200  # the server is fine


def test_drip(server: MockServer) -> None:
    c = conn(server, timeout=1.5)
    c.request("GET", "/_/drip/10/hello.xml")
    resp = c.getresponse()  # headers come at once
    assert resp.status == 200
    assert resp.headers["Content-Length"] == str(len(subst(server, HELLO)))
    start = time.monotonic()
    chunk = resp.read(10)  # one chunk a second
    assert chunk == subst(server, HELLO)[:10]
    assert time.monotonic() - start > 0.5  # the first chunk waits a second
    assert c.sock is not None
    c.sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        resp.read()  # the whole body would take ~20 s
    c.close()


def test_reset(server: MockServer) -> None:
    c = conn(server)
    c.request("GET", "/_/reset/hello.xml")
    resp = c.getresponse()
    assert resp.status == 200
    assert resp.headers["Content-Length"] == str(len(subst(server, HELLO)))
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        resp.read()
    c.close()
    assert fetch(server.url("/hello.xml"))[0] == 200  # the server survived


def test_truncate(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/truncate/50/hello.xml"))
    assert status == 200
    assert headers["Content-Length"] == "50"
    assert body == subst(server, HELLO)[:50]


def test_endless(server: MockServer) -> None:
    c = conn(server)
    c.request("GET", "/_/endless")
    resp = c.getresponse()
    assert resp.status == 200
    assert resp.headers["Transfer-Encoding"] == "chunked"
    data = resp.read(300_000)
    assert len(data) == 300_000
    assert data.startswith(b"<?xml")
    assert b"<urlset" in data
    assert f"<url><loc>{server.base}/x/0</loc></url>".encode() in data
    assert f"{server.base}/x/5000<".encode() in data
    c.close()  # the server stops writing
    assert fetch(server.url("/hello.xml"))[0] == 200


def test_headers_override(server: MockServer) -> None:
    query = urllib.parse.urlencode(
        {
            "Last-Modified": "Tue, 01 Jan 2002 00:00:00 GMT",
            "Date": "Wed, 02 Jan 2002 00:00:00 GMT",
            "Age": "42",
            "X-Robots-Tag": "noindex",
            "ETag": "",
        }
    )
    status, headers, body = fetch(server.url(f"/_/headers/hello.xml?{query}"))
    assert status == 200
    assert body == subst(server, HELLO)
    assert headers.get_all("Last-Modified") == ["Tue, 01 Jan 2002 00:00:00 GMT"]
    assert headers.get_all("Date") == ["Wed, 02 Jan 2002 00:00:00 GMT"]
    assert headers["Age"] == "42"
    assert headers["X-Robots-Tag"] == "noindex"
    assert "ETag" not in headers
    assert headers["Content-Type"] == "application/xml"


# -- generated sitemaps and bombs --------------------------------------------------------------


def test_gen_urlset_large(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/gen/urlset?n=60000&prefix=/q/"))
    assert status == 200
    assert headers["Content-Type"] == "application/xml"
    locs = re.findall(rb"<loc>([^<]+)</loc>", body)
    assert len(locs) == 60000
    assert locs[0] == f"{server.base}/q/0".encode()
    assert locs[-1] == f"{server.base}/q/59999".encode()
    assert body.rstrip().endswith(b"</urlset>")


def test_gen_urlset_gzip_lastmod_part(server: MockServer) -> None:
    url = server.url("/_/gen/urlset?n=3&lastmod=2024-01-02&gzip=1&part=7")
    status, headers, body = fetch(url)
    assert status == 200
    assert headers["Content-Type"] == "application/x-gzip"
    xml = gzip.decompress(body)
    assert xml.count(b"<lastmod>2024-01-02</lastmod>") == 3
    assert re.findall(rb"<loc>([^<]+)</loc>", xml) == [
        f"{server.base}/p/7/{i}".encode() for i in range(3)
    ]
    _, headers, body = fetch(server.url("/_/gen/urlset?n=5&cl=1"))
    assert headers["Content-Length"] == str(len(body))


def test_gen_index(server: MockServer) -> None:
    status, _, body = fetch(server.url("/_/gen/index?n=3&child=/_/gen/urlset%3Fn%3D2"))
    assert status == 200
    assert body.startswith(b"<?xml")
    assert b"<sitemapindex" in body
    locs = [loc.decode().replace("&amp;", "&") for loc in re.findall(rb"<loc>([^<]+)</loc>", body)]
    assert locs == [f"{server.base}/_/gen/urlset?n=2&part={i}" for i in range(3)]
    children = [re.findall(rb"<loc>([^<]+)</loc>", fetch(loc)[2]) for loc in locs]
    assert children[0] != children[1]
    assert all(len(c) == 2 for c in children)


def test_gen_text(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/gen/text?n=4"))
    assert status == 200
    assert headers["Content-Type"] == "text/plain"
    assert body.decode().splitlines() == [f"{server.base}/p/{i}" for i in range(4)]


def test_bomb(server: MockServer) -> None:
    status, headers, body = fetch(server.url("/_/bomb/gzip?mb=4"))
    assert status == 200
    assert headers["Content-Type"] == "application/x-gzip"
    assert "Content-Encoding" not in headers
    assert len(body) < 64 * 1024
    plain = gzip.decompress(body)
    assert len(plain) == 4 * 1024 * 1024
    assert plain.startswith(b"<?xml")
    assert b"<urlset" in plain[:200]
    assert plain.rstrip().endswith(b"</urlset>")
    assert fetch(server.url("/_/bomb/gzip?mb=4"))[2] == body  # cached, identical
    _, headers, _ = fetch(server.url("/_/bomb/gzip?mb=1&ce=1"))
    assert headers["Content-Encoding"] == "gzip"


def test_bad_arguments(server: MockServer) -> None:
    assert fetch(server.url("/_/nosuch"))[0] == 404
    assert fetch(server.url("/_/status/abc"))[0] == 400
    assert fetch(server.url("/_/redirect/302"))[0] == 400
    assert fetch(server.url("/_/gzip/missing.xml"))[0] == 404
    assert fetch(server.url("/_/bomb/gzip?mb=0"))[0] == 400


def test_server_survives_abrupt_clients(server: MockServer) -> None:
    for path in ("/_/endless", "/_/drip/1/hello.xml", "/_/hang", "/_/slow/5/hello.xml"):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=2)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        sock.close()
    assert fetch(server.url("/hello.xml"))[0] == 200


def test_no_server_errors_logged(server: MockServer) -> None:
    """Runs last: nothing above (disconnects, resets, hangs) made the server log an error."""
    time.sleep(0.3)
    assert "Traceback" not in server.stderr
    assert server.stderr == ""
