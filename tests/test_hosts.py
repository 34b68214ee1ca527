"""The one host canonicaliser (sitemaps/hosts.py): the URL Standard's IPv4 forms, IDNA, and
what it refuses; the private-address check reads every form."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapcrawl.sitemaps.hosts import InvalidHost, canonical_host, canonical_url
from sitemapcrawl.sitemaps.scope import private_address

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

INVALID = ["1.2.3.4.5", "256.0.0.1", "4294967296", "0x100000000", "09.0.0.1", "1.2.3.08", "a b.com"]


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
