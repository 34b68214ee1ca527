"""The one host canonicaliser (sitemaps/hosts.py): the URL Standard's IPv4 forms, IDNA, and
what it refuses; the private-address check reads every form."""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.utils.defer import deferred_f_from_coro_f

from sitemapcrawl.sitemaps.hosts import InvalidHost, canonical_host, canonical_url
from sitemapcrawl.sitemaps.scope import private_address

if TYPE_CHECKING:
    from pathlib import Path

# Cases from the URL Standard's IPv4 parser (and web-platform-tests' urltestdata).
WHATWG = [
    ("127.0.0.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"),
    ("0X7F.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.000.000.001", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    ("0x", "0.0.0.0"),
    ("0xffffffff", "255.255.255.255"),
    ("4294967295", "255.255.255.255"),
    ("0251.0376.0251.0376", "169.254.169.254"),
    ("%31%32%37.0.0.1", "127.0.0.1"),
    ("Example.COM.", "example.com"),
    ("www.example.com", "www.example.com"),
    ("b\u00fccher.example", "xn--bcher-kva.example"),
    ("1.2.3.example", "1.2.3.example"),
    ("0x1.example", "0x1.example"),
    ("[::1]", "[::1]"),
]

INVALID = [
    "1.2.3.4.5",
    "256.0.0.1",
    "4294967296",
    "0x100000000",
    "09.0.0.1",
    "1.2.3.08",
    "a b.com",
    "a..b",
    ".a",
    "0..",
]


@pytest.mark.parametrize(("host", "expected"), WHATWG)
def test_the_url_standard_forms(host: str, expected: str) -> None:
    assert canonical_host(host) == expected


@pytest.mark.parametrize("host", INVALID)
def test_hosts_no_browser_requests_are_refused(host: str) -> None:
    with pytest.raises(InvalidHost):
        canonical_host(host)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_address_in_every_form(address: int) -> None:
    dotted = str(ipaddress.IPv4Address(address))
    octets = dotted.split(".")
    forms = [
        dotted,
        str(address),
        hex(address),
        "0" + oct(address)[2:],
        ".".join("0" + oct(int(o))[2:] for o in octets),
        ".".join(hex(int(o)) for o in octets),
        f"{octets[0]}.{int(octets[1]) * 65536 + int(octets[2]) * 256 + int(octets[3])}",
        dotted + ".",
    ]
    assert {canonical_host(form) for form in forms} == {dotted}
    assert socket.inet_ntoa(socket.inet_aton(dotted)) == canonical_host(dotted)


@given(st.from_regex(r"[a-z0-9][a-z0-9.\-]{0,30}", fullmatch=True))
def test_canonical_twice_is_canonical_once(host: str) -> None:
    try:
        once = canonical_host(host)
    except InvalidHost:
        return
    assert canonical_host(once) == once


def test_a_canonical_url_keeps_everything_but_the_host() -> None:
    url = "http://u:p@0x7F.1:8080/a/../b?q=1#f"
    assert canonical_url(url) == "http://u:p@127.0.0.1:8080/a/../b?q=1#f"
    same = "https://example.com/x"
    assert canonical_url(same) is same
    with pytest.raises(InvalidHost):
        canonical_url("http://1.2.3.4.5/")


@pytest.mark.parametrize(
    "url",
    [
        "http://0177.0.0.1/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://127.000.000.001/",
        "http://127.0.0.1./",
        "http://0251.0376.0251.0376/latest/meta-data",
        "http://0xa9fea9fe/",
        "http://10.1/",
        "http://LOCALHOST./",
    ],
)
def test_private_addresses_in_any_form(url: str) -> None:
    assert private_address(url, "https://example.com/")
    assert not private_address(url, "http://127.0.0.1:8000/")


@given(
    st.from_regex(
        r"https?://[a-zA-Z0-9.\-]{1,12}(:[0-9]{1,5})?(/[a-zA-Z0-9#%.\-]{0,8})?", fullmatch=True
    )
)
def test_a_plain_url_is_canonical_already(url: str) -> None:
    """The readers' fast path (``urls.PLAIN_URL``) takes only URLs the full check would
    leave as they are: a canonical host, no fragment."""
    from sitemapcrawl.sitemaps.urls import PLAIN_HEAD, PLAIN_URL

    if PLAIN_URL.fullmatch(url):
        assert "#" not in url
        assert canonical_url(url) == url
    if PLAIN_HEAD.match(url.encode()):
        head = url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0]
        assert canonical_host(head) == head


@deferred_f_from_coro_f
async def test_one_spelling_of_the_host_is_emitted_and_requested(tmp_path: Path) -> None:
    """A sitemap that writes its own host in the forms a browser reads as 127.0.0.1, a URL
    with a fragment and its twin without, a host no browser requests, a redirect to the
    integer form, a home page linking in the hex form, a robots.txt ``Sitemap:`` line in
    octal and an origin with a trailing dot: every URL once, with its host as the URL
    Standard writes it, each page requested once and under that host (the ``Host`` header
    the server saw); the fragment's URL flagged."""
    from tests.mockserver import MockServer
    from tests.utils.crawl import crawl_with_report, our_stats

    with MockServer(root=tmp_path) as server:
        port = server.base.rsplit(":", 1)[1]
        forms = {
            "octal": f"http://0177.0.0.1:{port}",
            "integer": f"http://2130706433:{port}",
            "padded": f"http://127.000.000.001:{port}",
            "dot": f"http://127.0.0.1.:{port}",
            "hex": f"http://0x7F.1:{port}",
        }
        locs = [f"{origin}/p/{name}.html" for name, origin in forms.items()]
        locs += [
            f"{server.base}/p/frag.html#top",
            f"{server.base}/p/frag.html",
            f"{server.base}/p/plain.html",
            f"{server.base}/p/plain.html#again",
            f"http://1.2.3.4.5:{port}/p/invalid.html",
            f"{server.base}/_/redirect/302?to={forms['integer']}/p/moved.html",
        ]
        rows = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
        (tmp_path / "sitemap.xml").write_text(
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'
        )
        (tmp_path / "second.xml").write_text(
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{forms['dot']}/p/second.html</loc></url></urlset>"
        )
        (tmp_path / "robots.txt").write_text(
            f"Sitemap: {forms['octal']}/sitemap.xml\n"
            f"Sitemap: {server.base}/_/redirect/301?to={forms['padded']}/second.xml\n"
        )
        (tmp_path / "p").mkdir()
        for name in [*forms, "frag", "plain", "moved", "linked", "second"]:
            (tmp_path / "p" / f"{name}.html").write_text(
                "<html><body><main><p>text</p></main></body></html>"
            )
        (tmp_path / "index.html").write_text(  # the home page links in the hex form
            f'<html><body><a href="{forms["hex"]}/p/linked.html">x</a></body></html>'
        )
        server.reset_requests()
        items, report, crawler = await crawl_with_report(
            origin=f"http://127.0.0.1.:{port}", sample="on", links="sample"
        )
        log = server.request_log()
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("log_count/ERROR") is None
    # the two sitemaps are read concurrently: their items come in either order
    assert sorted((i["url"], i["flags"], i["found_via"]) for i in items) == sorted(
        [
            *((f"{server.base}/p/{name}.html", [], "robots") for name in forms),
            (f"{server.base}/p/frag.html", ["fragment_dropped"], "robots"),
            (f"{server.base}/p/plain.html", [], "robots"),
            (f"{server.base}/_/redirect/302?to={forms['integer']}/p/moved.html", [], "robots"),
            (f"{server.base}/p/second.html", [], "robots"),
            (f"{server.base}/", [], "links"),
            (f"{server.base}/p/linked.html", [], "links"),
        ]
    )
    stats = our_stats(crawler)
    assert stats["sitemapcrawl/urls/found_count"] == 9
    assert stats["sitemapcrawl/urls/duplicate_count"] == 2  # a URL and its #fragment twin
    assert stats["sitemapcrawl/entries/loc_fragment_dropped_count"] == 2
    assert stats["sitemapcrawl/errors/loc_invalid_count"] == 1
    assert report is not None
    assert [f["code"] for f in report["faults"]] == ["loc_invalid"]
    hosts = {(entry["path"], entry["headers"].get("Host")) for entry in log}
    expected_host = f"127.0.0.1:{port}"
    assert {host for _, host in hosts} == {expected_host}
    paths = [entry["path"] for entry in log]
    assert paths.count("/sitemap.xml") == 1
    assert sorted(p for p in paths if p.startswith("/p/")) == sorted(
        f"/p/{name}.html" for name in [*forms, "frag", "plain", "moved", "linked", "second"]
    )
    assert paths.count("/second.xml") == 1


@deferred_f_from_coro_f
async def test_a_page_on_a_host_that_refuses_connections_is_a_warning_and_an_outcome(
    tmp_path: Path,
) -> None:
    """A listed page on a loopback port nothing listens on (scope off): its robots.txt and
    the page each fail once, each a WARNING without a traceback and a count; no ERROR. (A
    name that does not resolve takes the same path; a loopback port keeps the test from
    asking any DNS server.)"""
    from tests.mockserver import MockServer
    from tests.utils.crawl import crawl_with_report

    with socket.socket() as probe:  # a port that was free a moment ago: refused now
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    (tmp_path / "robots.txt").write_text("Sitemap: {base}/sitemap.xml\n")
    (tmp_path / "sitemap.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{closed}/a</loc></url><url><loc>{{base}}/b</loc></url></urlset>"
    )
    (tmp_path / "b").write_text("<html><body><main><p>b</p></main></body></html>")
    with MockServer(root=tmp_path) as server:
        items, report, crawler = await crawl_with_report(
            settings={"RETRY_TIMES": 1}, origin=server.base, sample="on", links="off", scope="off"
        )
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert [i["url"] for i in items] == [f"{closed}/a", f"{server.base}/b"]
    assert stats.get("log_count/ERROR") is None
    assert stats["log_count/WARNING"] == 2  # the robots.txt, the page
    assert stats["sitemapcrawl/robots/fetch_failed_count"] == 1
    assert stats["sitemapcrawl/sample/outcome_count/FETCH_FAILED"] == 1
    assert report is not None
    outcomes = sorted(s["outcome"] for seg in report["segments"] for s in seg["samples"])
    assert outcomes == ["FETCH_FAILED:DownloadConnectionRefusedError", "NO_LASTMOD"]
