"""The hardening catalogue: every hostile or broken input, each a real crawl.

Each case writes its files (bombs and big files are generated here, never committed) under
its own directory of a loopback mock server, runs ``scrapy crawl sitemap`` in a child
process and checks the four conditions of "handled":

- no crash: exit status 0, ``finish_reason`` as expected, no Traceback in the log;
- bounded: the child's peak RSS (``os.wait4``) is under 256 MiB, and it ends within the
  case's timeout (a hang fails the test with ``subprocess.TimeoutExpired``);
- nothing lost: the exact URLs the sitemaps held before the fault;
- named: the exact ``sitemapcrawl/`` stats, and each fault logged once with its URL.

Children are run two or three at a time before the first case is checked (they are mostly
waiting on the server), so the module takes about a minute. No packet leaves loopback: the
child's DNS resolver (``TWISTED_DNS_RESOLVER``) maps ``*.example`` and ``localhost`` to
127.0.0.1 and fails everything else without asking a DNS server, and its HTTP download
handler refuses any other host before connecting.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tracemalloc
import urllib.request
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.resolver import CachingThreadedResolver
from scrapy.statscollectors import MemoryStatsCollector
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from sitemapcrawl.sitemaps.errors import ENTRY_FAULTS, FAULT_CODES
from tests.mockserver import REPO_ROOT, MockServer

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

MIB = 1024 * 1024
RSS_LIMIT_KIB = 256 * 1024
WORKERS = 3
SITE_HOST = "site.example"  # resolves to 127.0.0.1 in the children (see LoopbackResolver)

# -- what runs inside the child crawls ----------------------------------------------------


class LoopbackResolver(CachingThreadedResolver):
    """``TWISTED_DNS_RESOLVER`` for the child crawls: ``localhost`` and names under the
    reserved ``.example`` TLD (RFC 2606) are 127.0.0.1; every other name fails with
    ``DNSLookupError`` at once. No DNS server is ever asked."""

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        host = name.lower().rstrip(".")
        if host in ("localhost", "127.0.0.1") or host.endswith(".example"):
            return defer.succeed("127.0.0.1")
        return defer.fail(DNSLookupError(f"{name}: refused by the loopback-only test resolver"))


class NonLoopbackRequest(Exception):
    """The child tried to reach a host that is not on loopback."""


class LoopbackOnlyHandler(HTTP11DownloadHandler):
    """The child crawls' http handler: refuses, before connecting, any IP literal that is
    not 127.0.0.1 (names go through ``LoopbackResolver``). A regression in the private
    address rule shows up as a ``NonLoopbackRequest`` failure, never as a packet."""

    async def download_request(self, request: Request) -> Response:
        host = (urlsplit(request.url).hostname or "").lower()
        if host != "127.0.0.1" and (not host or host[0].isdigit() or ":" in host):
            raise NonLoopbackRequest(request.url)
        return await super().download_request(request)


class JsonStatsCollector(MemoryStatsCollector):
    """Write the final stats as JSON to ``HARDENING_STATS_FILE`` for the parent test."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._path = Path(crawler.settings["HARDENING_STATS_FILE"])

    def _persist_stats(self, stats: dict[str, Any]) -> None:
        super()._persist_stats(stats)
        self._path.write_text(json.dumps(stats, default=str))


# -- the catalogue ------------------------------------------------------------------------


@dataclass
class Ctx:
    """What a case builder gets: where to write files and the server's URLs."""

    root: Path
    case: str
    base: str  # http://127.0.0.1:PORT
    alt: str  # http://localhost:PORT
    site: str  # http://site.example:PORT (a "public" origin that resolves to loopback)

    def write(self, name: str, data: bytes | str) -> str:
        """Write ``data`` under the case's directory; return its URL path."""
        path = self.root / self.case / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return f"/{self.case}/{name}"

    def url(self, name: str) -> str:
        return f"{self.base}/{self.case}/{name}"

    def page(self, name: str) -> str:
        return f"{self.base}/{self.case}/p/{name}"


@dataclass
class Case:
    """One catalogue entry: what to crawl and what must come out."""

    given: list[str]  # sitemap (or robots.txt) URLs
    urls: list[str]  # the exact URLs emitted (any order)
    stats: dict[str, int]  # the exact sitemapcrawl/ stats (urls/per_minute aside)
    logged: list[tuple[str, str]]  # (URL, fault) warnings, each exactly once
    settings: dict[str, Any] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    never: list[str] = field(default_factory=list)  # paths the server must never see
    finish_reason: str = "finished"
    timeout: float = 30.0
    check: Callable[[list[dict[str, Any]]], None] | None = None  # extra item checks
    # fault code -> (URL, message): a fault the reader records, which must be logged, counted
    # and reported (test_every_reader_fault_is_visible)
    faults: dict[str, tuple[str, str]] = field(default_factory=dict)


BUILDERS: dict[str, Callable[[Ctx], Case]] = {}


def case(name: str) -> Callable[[Callable[[Ctx], Case]], Callable[[Ctx], Case]]:
    def register(builder: Callable[[Ctx], Case]) -> Callable[[Ctx], Case]:
        assert name not in BUILDERS, name
        BUILDERS[name] = builder
        return builder

    return register


NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'


def urlset(*locs: str, head: str = DECL, ns: str = NS, extra: str = "") -> str:
    body = "".join(f"<url><loc>{loc}</loc></url>\n" for loc in locs)
    xmlns = f' xmlns="{ns}"' if ns else ""
    return f"{head}<urlset{xmlns}>\n{body}{extra}</urlset>\n"


def index(*locs: str) -> str:
    body = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'{DECL}<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n'


def parsed(n: int, kind: str = "urlset", found: int | None = None) -> dict[str, int]:
    """Stats of ``n`` given sitemaps all read as ``kind``, emitting ``found`` URLs."""
    stats = {
        "sitemapcrawl/sitemaps/requested_count": n,
        "sitemapcrawl/sitemaps/done_count": n,
        "sitemapcrawl/sitemaps/parsed_count": n,
        f"sitemapcrawl/sitemaps/parsed_count/{kind}": n,
    }
    if found:
        stats["sitemapcrawl/urls/found_count"] = found
    return stats


def failed(reason: str, n: int = 1) -> dict[str, int]:
    return {
        "sitemapcrawl/sitemaps/requested_count": n,
        "sitemapcrawl/sitemaps/done_count": n,
        "sitemapcrawl/sitemaps/failed_count": n,
        f"sitemapcrawl/sitemaps/failed_count/{reason}": n,
    }


def err(code: str, n: int = 1) -> dict[str, int]:
    return {f"sitemapcrawl/errors/{code}_count": n}


def ent(name: str, n: int = 1) -> dict[str, int]:
    return {f"sitemapcrawl/entries/{name}_count": n}


def merge(*parts: dict[str, int]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            total[key] = total.get(key, 0) + value
    return total


LAUGHS = "".join(
    f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
)  # lol9 is 10^9 "lol"s


def doctype_urlset(c: Ctx, subset: str, *locs: str, name: str = "sitemap.xml") -> str:
    head = f'{DECL}<!DOCTYPE urlset [<!ENTITY lol "lol">{subset}]>\n'
    return c.write(name, urlset(*locs, head=head))


# XML ---------------------------------------------------------------------------------------


@case("xml-billion-laughs")
def _(c: Ctx) -> Case:
    path = doctype_urlset(c, LAUGHS, c.page("before"), c.page("&lol9;"), c.page("after"))
    return Case(
        [c.base + path],
        [c.page("before"), c.page("after")],
        merge(parsed(1, found=2), err("xml_entities"), ent("loc_unexpanded_entity")),
        [(c.base + path, "xml_entities")],
    )


@case("xml-quadratic-blowup")
def _(c: Ctx) -> Case:
    subset = f'<!ENTITY a "{"A" * 100_000}">'
    path = doctype_urlset(c, subset, c.page("x" + "&a;" * 20_000), c.page("ok"))
    return Case(
        [c.base + path],
        [c.page("ok")],
        merge(parsed(1, found=1), err("xml_entities"), ent("loc_unexpanded_entity")),
        [(c.base + path, "xml_entities")],
    )


@case("xml-external-entity-file")
def _(c: Ctx) -> Case:
    secret = c.root / c.case / "secret.txt"
    c.write("secret.txt", c.page("SECRET"))
    subset = f'<!ENTITY leak SYSTEM "{secret.as_uri()}">'
    path = doctype_urlset(c, subset, "&leak;", c.page("ok"))
    return Case(
        [c.base + path],
        [c.page("ok")],
        merge(parsed(1, found=1), err("xml_entities"), ent("loc_unexpanded_entity")),
        [(c.base + path, "xml_entities")],
    )


@case("xml-external-entity-http")
def _(c: Ctx) -> Case:
    c.write("canary.txt", c.page("CANARY"))
    subset = (
        f'<!ENTITY leak SYSTEM "{c.url("canary.txt")}">'
        f'<!ENTITY % pe SYSTEM "{c.url("canary-pe.dtd")}"> %pe;'
    )
    path = doctype_urlset(c, subset, "&leak;", c.page("a&leak;"), c.page("ok"))
    return Case(
        [c.base + path],
        [c.page("ok")],
        merge(parsed(1, found=1), err("xml_entities"), ent("loc_unexpanded_entity", 2)),
        [(c.base + path, "xml_entities")],
        never=[f"/{c.case}/canary.txt", f"/{c.case}/canary-pe.dtd"],
    )


@case("xml-external-dtd")
def _(c: Ctx) -> Case:
    c.write("evil.dtd", f'<!ENTITY leak "{c.page("FROM-DTD")}">')
    head = f'{DECL}<!DOCTYPE urlset SYSTEM "{c.url("evil.dtd")}">\n'
    path = c.write("sitemap.xml", urlset("&leak;", c.page("ok"), head=head))
    return Case(
        [c.base + path],
        [c.page("ok")],
        merge(parsed(1, found=1), err("xml_entities"), ent("loc_unexpanded_entity")),
        [(c.base + path, "xml_entities")],
        never=[f"/{c.case}/evil.dtd"],
    )


@case("xml-xinclude-and-schema")
def _(c: Ctx) -> Case:
    c.write("inc.xml", urlset(c.page("INCLUDED")))
    extra = f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{c.url("inc.xml")}"/>'
    head = DECL
    body = urlset(c.page("a"), c.page("b"), head=head, extra=extra).replace(
        "<urlset ",
        '<urlset xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{NS} {c.url("schema.xsd")}" ',
    )
    path = c.write("sitemap.xml", body)
    return Case(
        [c.base + path],
        [c.page("a"), c.page("b")],
        parsed(1, found=2),
        [],
        never=[f"/{c.case}/inc.xml", f"/{c.case}/schema.xsd"],
    )


@case("xml-deep-nesting")
def _(c: Ctx) -> Case:
    deep = "<x>" * 100_000 + "</x>" * 100_000
    path = c.write("sitemap.xml", urlset(c.page("a"), c.page("b"), extra=deep))
    return Case(
        [c.base + path],
        [c.page("a"), c.page("b")],
        merge(parsed(1, found=2), err("xml_syntax_error")),
        [(c.base + path, "xml_syntax_error")],
    )


@case("xml-huge-text-node")
def _(c: Ctx) -> Case:
    # Issue 22: the 12 MiB location is cut out of the stream (libxml2's 10 MB limit on a
    # text node stopped the parse, and "b" was lost): dropped, and the rest is read.
    path = c.write("sitemap.xml", urlset(c.page("a"), c.page("x" * 12 * MIB), c.page("b")))
    return Case(
        [c.base + path],
        [c.page("a"), c.page("b")],
        merge(parsed(1, found=2), err("text_too_long"), err("loc_too_long"), ent("loc_too_long")),
        [(c.base + path, "text_too_long"), (c.base + path, "loc_too_long")],
    )


@case("xml-30mib-text-node")
def _(c: Ctx) -> Case:
    # Issue 22: a 30 MiB location, a 2 MiB text node of prose in an entry and 12 MiB of
    # white space between two entries: the entries after each are read; the white space
    # is dropped without a word (44 MiB in all: under the 50 MiB download cap).
    prose = f"<url><loc>{c.page('p')}</loc><extra>" + "word " * (MIB * 2 // 5) + "</extra></url>"
    body = urlset(c.page("a"), c.page("y" * 30 * MIB), c.page("b"), extra=prose)
    last = " " * 12 * MIB + f"<url><loc>{c.page('c')}</loc></url></urlset>"
    body = body.replace("</urlset>", last)
    path = c.write("sitemap.xml", body)
    return Case(
        [c.base + path],
        [c.page("p"), c.page("a"), c.page("b"), c.page("c")],
        merge(parsed(1, found=4), err("text_too_long"), err("loc_too_long"), ent("loc_too_long")),
        [(c.base + path, "text_too_long"), (c.base + path, "loc_too_long")],
    )


@case("xml-huge-attribute")
def _(c: Ctx) -> Case:
    huge = f'<url data-x="{"x" * 20 * MIB}">'
    body = urlset(c.page("a"), c.page("b"), c.page("c"))
    body = body.replace("<url>", huge, 2).replace(huge, "<url>", 1)  # on the second one
    path = c.write("sitemap.xml", body)
    return Case(
        [c.base + path],
        [c.page("a"), c.page("b"), c.page("c")],  # libxml2 drops the attribute, goes on
        merge(parsed(1, found=3), err("xml_syntax_error")),
        [(c.base + path, "xml_syntax_error")],
    )


@case("xml-processing-instructions-and-comments")
def _(c: Ctx) -> Case:
    body = urlset(
        c.page("a<?php echo 1; ?>b"),
        c.page("c<!-- a comment -->d"),
        c.page("e") + "<!-- trailing -->",
        head=DECL + '<?xml-stylesheet type="text/xsl" href="s.xsl"?>\n<!-- prolog -->\n',
    ).replace("</url>\n<url>", "</url><?pi between?>\n<url>", 1)
    path = c.write("sitemap.xml", body)
    return Case(
        [c.base + path],
        [c.page("ab"), c.page("cd"), c.page("e")],
        parsed(1, found=3),
        [],
        never=[f"/{c.case}/s.xsl"],
    )


@case("xml-doctype-over-1mib")
def _(c: Ctx) -> Case:
    subset = "".join(f'<!ENTITY e{i} "{"x" * 1000}">' for i in range(3000))  # ~3 MiB
    path = doctype_urlset(c, subset, c.page("a"), c.page("b"))
    return Case(
        [c.base + path],
        [c.page("a"), c.page("b")],
        merge(parsed(1, found=2), err("xml_entities")),
        [(c.base + path, "xml_entities")],
    )


@case("xml-doctype-brackets-in-literals")
def _(c: Ctx) -> Case:
    subset = "<!ENTITY a \"]>\"><!-- ]> --><?pi ]>?><!ENTITY b ']>'>"
    path = doctype_urlset(c, subset, c.page("a"), c.page("b&b;"), c.page("c"))
    return Case(
        [c.base + path],
        [c.page("a"), c.page("c")],
        merge(parsed(1, found=2), err("xml_entities"), ent("loc_unexpanded_entity")),
        [(c.base + path, "xml_entities")],
    )


@case("xml-comment-prolog-over-1mib")
def _(c: Ctx) -> Case:
    head = DECL + "<!--" + "c" * (2 * MIB) + "-->\n"
    path = c.write("sitemap.xml", urlset(c.page("a"), head=head))
    return Case([c.base + path], [c.page("a")], parsed(1, found=1), [])


@case("xml-utf16-billion-laughs")
def _(c: Ctx) -> Case:
    head = '<?xml version="1.0" encoding="UTF-16"?>\n'
    head += f'<!DOCTYPE urlset [<!ENTITY lol "lol">{LAUGHS}]>\n'
    body = urlset(c.page("before"), c.page("&lol9;"), c.page("after?a=1&amp;b=2"), head=head)
    path = c.write("sitemap.xml", body.encode("utf-16"))
    return Case(
        [c.base + path],
        [c.page("before"), c.page("after?a=1&b=2")],
        merge(parsed(1, found=2), err("xml_entities"), ent("loc_unexpanded_entity")),
        [(c.base + path, "xml_entities")],
    )


# Compression ------------------------------------------------------------------------------


# A bomb's padding is whitespace: one text node the reader cuts out (libxml2 never sees a
# text node past its 10 MB limit) while the decoder inflates on to the 50 MiB cap
# (too_large). Issue 22: no xml_syntax_error any more (it was libxml2's limit).
BOMB_FAULTS = err("too_large")


@case("gzip-bomb-1gib")
def _(c: Ctx) -> Case:
    url = c.base + "/_/bomb/gzip?mb=1024"
    return Case(
        [url],
        [c.base + "/bomb/0"],
        merge(parsed(1, found=1), {"sitemapcrawl/sitemaps/gzip_count": 1}, BOMB_FAULTS),
        [(url, "too_large")],
    )


@case("gzip-bomb-4gib-members")
def _(c: Ctx) -> Case:
    member = gzip.compress(b" " * (64 * MIB), mtime=0)
    first = gzip.compress(urlset(c.page("first")).replace("</urlset>\n", "").encode(), mtime=0)
    path = c.write("bomb.xml.gz", first + member * 64)  # ~4 GiB from ~4 MiB
    return Case(
        [c.base + path],
        [c.page("first")],
        merge(parsed(1, found=1), {"sitemapcrawl/sitemaps/gzip_count": 1}, BOMB_FAULTS),
        [(c.base + path, "too_large")],
    )


def ce_bomb(c: Ctx, endpoint: str) -> Case:
    # Sitemap bodies keep their Content-Encoding for the core's streaming decoder: the URL
    # before the padding is kept, as with a gzip file (Scrapy's decoder dropped it all).
    url = f"{c.base}/_/bomb/{endpoint}"
    return Case(
        [url],
        [c.base + "/bomb/0"],
        merge(parsed(1, found=1), BOMB_FAULTS),
        [(url, "too_large")],
    )


@case("gzip-bomb-content-encoding")
def _(c: Ctx) -> Case:
    return ce_bomb(c, "gzip?mb=1024&ce=1")


@case("deflate-bomb-content-encoding")
def _(c: Ctx) -> Case:
    return ce_bomb(c, "deflate?mb=1024")


@case("brotli-bomb-content-encoding")
def _(c: Ctx) -> Case:
    return ce_bomb(c, "br?mb=1024")


@case("gzip-wrappings")
def _(c: Ctx) -> Case:
    plain = c.write("plain.xml", urlset(c.page("plain")))
    c.write("gz.xml", urlset(c.page("gz-no-name")))
    c.write("g2.xml", urlset(c.page("gzip2")))
    c.write("ce.xml", urlset(c.page("ce-gzip")))
    c.write("br.xml", urlset(c.page("ce-br")))
    c.write("def.xml", urlset(c.page("ce-deflate")))
    fake = c.write("fake.xml.gz", urlset(c.page("gz-name-plain")))
    real = c.write("real.xml.gz", gzip.compress(urlset(c.page("ce-plus-gz")).encode()))
    given = [
        c.base + plain,
        f"{c.base}/_/gzip/{c.case}/gz.xml",  # gzip without a .gz name
        f"{c.base}/_/gzip2/{c.case}/g2.xml",  # gzip inside gzip
        f"{c.base}/_/ce/gzip/{c.case}/ce.xml",
        f"{c.base}/_/ce/br/{c.case}/br.xml",
        f"{c.base}/_/ce/deflate/{c.case}/def.xml",
        c.base + fake,  # a .gz name over plain XML
        f"{c.base}/_/ce/gzip{real}",  # Content-Encoding over a gzipped file
    ]
    return Case(
        given,
        [
            c.page(n)
            for n in (
                "plain",
                "gz-no-name",
                "gzip2",
                "ce-gzip",
                "ce-br",
                "ce-deflate",
                "gz-name-plain",
                "ce-plus-gz",
            )
        ],
        merge(parsed(8, found=8), {"sitemapcrawl/sitemaps/gzip_count": 3}),
        [],
    )


@case("zstd-content-encoding")
def _(c: Ctx) -> Case:
    path = c.write("sitemap.xml.zst", zstd_raw_frame(urlset(c.page("a")).encode()))
    url = f"{c.base}/_/headers{path}?Content-Encoding=zstd&Content-Type=application/xml"
    return Case([url], [c.page("a")], parsed(1, found=1), [])


@case("gzip-truncated")
def _(c: Ctx) -> Case:
    locs = [c.page(str(i)) for i in range(3000)]
    packed = gzip.compress(urlset(*locs).encode(), mtime=0)
    path = c.write("sitemap.xml.gz", packed[: len(packed) // 2])
    reader_locs = _core_locs(packed[: len(packed) // 2], c.url("sitemap.xml.gz"))
    assert 100 < len(reader_locs) < 3000
    assert reader_locs == locs[: len(reader_locs)]
    return Case(
        [c.base + path],
        reader_locs,
        merge(
            parsed(1, found=len(reader_locs)),
            {"sitemapcrawl/sitemaps/gzip_count": 1},
            err("decompression_error"),
            ent("entry_truncated"),
        ),
        [(c.base + path, "decompression_error")],  # the XML cut with it is not another fault
    )


@case("gzip-trailing-garbage")
def _(c: Ctx) -> Case:
    data = gzip.compress(urlset(c.page("a"), c.page("b")).encode()) + b"GARBAGE" * 100
    path = c.write("sitemap.xml.gz", data)
    return Case(
        [c.base + path],
        [c.page("a"), c.page("b")],
        merge(
            parsed(1, found=2),
            {"sitemapcrawl/sitemaps/gzip_count": 1},
            err("decompression_error"),
        ),
        [(c.base + path, "decompression_error")],
    )


@case("gzip-corrupt")
def _(c: Ctx) -> Case:
    locs = [c.page(str(i)) for i in range(3000)]
    doc = urlset(*locs).encode()
    # A valid member with the first half, then a member whose deflate data is invalid
    # (0xff: a final block of the reserved type 3).
    corrupt = gzip.compress(b"", mtime=0)[:10] + b"\xff" * 64
    path = c.write("sitemap.xml.gz", gzip.compress(doc[: len(doc) // 2]) + corrupt)
    kept = _core_locs(doc[: len(doc) // 2], c.url("sitemap.xml.gz"))
    assert 1000 < len(kept) < 3000
    assert kept == locs[: len(kept)]
    # Corrupt from the first block: nothing inflates, so the body is empty, for that reason.
    small = c.write("small.xml.gz", corrupt)
    return Case(
        [c.base + path, c.base + small],
        kept,
        merge(
            parsed(1, found=len(kept)),
            {"sitemapcrawl/sitemaps/gzip_count": 1},
            err("decompression_error", 2),
            ent("entry_truncated"),
            failed("empty"),
        ),
        [(c.base + path, "decompression_error"), (c.base + small, "decompression_error")],
    )


# Structure --------------------------------------------------------------------------------


@case("index-cycle")
def _(c: Ctx) -> Case:
    c.write("a.xml", index(c.url("b.xml")))
    c.write("b.xml", index(c.url("a.xml"), c.url("leaf.xml")))
    c.write("leaf.xml", urlset(c.page("leaf")))
    return Case(
        [c.url("a.xml")],
        [c.page("leaf")],
        {
            "sitemapcrawl/sitemaps/requested_count": 3,
            "sitemapcrawl/sitemaps/done_count": 3,
            "sitemapcrawl/sitemaps/parsed_count": 3,
            "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 2,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 1,
            "sitemapcrawl/children/listed_count": 3,
            "sitemapcrawl/sitemaps/loop_count": 1,
            "sitemapcrawl/urls/found_count": 1,
        },
        [(c.url("a.xml"), "loop")],
    )


@case("index-self-reference")
def _(c: Ctx) -> Case:
    c.write("self.xml", index(c.url("self.xml"), c.url("leaf.xml")))
    c.write("leaf.xml", urlset(c.page("leaf")))
    return Case(
        [c.url("self.xml")],
        [c.page("leaf")],
        {
            "sitemapcrawl/sitemaps/requested_count": 2,
            "sitemapcrawl/sitemaps/done_count": 2,
            "sitemapcrawl/sitemaps/parsed_count": 2,
            "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 1,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 1,
            "sitemapcrawl/children/listed_count": 2,
            "sitemapcrawl/sitemaps/loop_count": 1,
            "sitemapcrawl/urls/found_count": 1,
        },
        [(c.url("self.xml"), "loop")],
    )


@case("index-redirect-back-to-parent")
def _(c: Ctx) -> Case:
    back = f"{c.base}/_/redirect/302?to={c.url('parent.xml')}&case={c.case}"
    c.write("parent.xml", index(back.replace("&", "&amp;"), c.url("leaf.xml")))
    c.write("leaf.xml", urlset(c.page("leaf")))
    return Case(
        [c.url("parent.xml")],
        [c.page("leaf")],
        {
            "sitemapcrawl/sitemaps/requested_count": 3,
            "sitemapcrawl/sitemaps/done_count": 3,
            "sitemapcrawl/sitemaps/parsed_count": 2,
            "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 1,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 1,
            "sitemapcrawl/children/listed_count": 2,
            "sitemapcrawl/sitemaps/loop_count": 1,
            "sitemapcrawl/urls/found_count": 1,
        },
        [(back, "loop")],
    )


@case("index-diamond-and-duplicate-locs")
def _(c: Ctx) -> Case:
    c.write("top.xml", index(c.url("left.xml"), c.url("right.xml")))
    c.write("left.xml", index(c.url("leaf.xml")))
    c.write("right.xml", index(c.url("leaf.xml"), c.url("dups.xml")))
    c.write("leaf.xml", urlset(c.page("leaf"), c.page("shared")))
    c.write("dups.xml", urlset(c.page("shared"), c.page("d"), c.page("d")))
    return Case(
        [c.url("top.xml")],
        [c.page("leaf"), c.page("shared"), c.page("d")],
        {
            "sitemapcrawl/sitemaps/requested_count": 5,
            "sitemapcrawl/sitemaps/done_count": 5,
            "sitemapcrawl/sitemaps/parsed_count": 5,
            "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 3,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 2,
            "sitemapcrawl/children/listed_count": 5,
            "sitemapcrawl/sitemaps/duplicate_count": 1,
            "sitemapcrawl/urls/duplicate_count": 2,
            "sitemapcrawl/urls/found_count": 3,
        },
        [],
    )


@case("index-deep-chain")
def _(c: Ctx) -> Case:
    for level in range(12):
        c.write(f"level{level}.xml", index(c.url(f"level{level + 1}.xml")))
    return Case(
        [c.url("level0.xml")],
        [],
        {
            "sitemapcrawl/sitemaps/requested_count": 6,
            "sitemapcrawl/sitemaps/done_count": 6,
            "sitemapcrawl/sitemaps/parsed_count": 6,
            "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 6,
            "sitemapcrawl/children/listed_count": 6,
            "sitemapcrawl/limits/max_depth_count": 1,
            "sitemapcrawl/urls/found_count": 0,
        },
        [(c.url("level5.xml"), "max_depth"), (f"{c.base}/", "nothing_found")],
    )


@case("index-50001-children")
def _(c: Ctx) -> Case:
    children = [
        f"{c.base}/_/gen/urlset?n=1&amp;prefix=/{c.case}/c/&amp;part={i}" for i in range(50_001)
    ]
    path = c.write("index.xml", index(*children))
    return Case(
        [c.base + path],
        [f"{c.base}/{c.case}/c/{i}/0" for i in range(3)],
        {
            "sitemapcrawl/sitemaps/requested_count": 4,
            "sitemapcrawl/sitemaps/done_count": 4,
            "sitemapcrawl/sitemaps/parsed_count": 4,
            "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 1,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 3,
            "sitemapcrawl/children/listed_count": 50_001,
            "sitemapcrawl/limits/max_sitemaps_count": 49_998,
            "sitemapcrawl/errors/too_many_urls_count": 1,
            "sitemapcrawl/entries/over_url_limit_count": 1,
            "sitemapcrawl/urls/found_count": 3,
        },
        [(c.base + path, "too_many_urls"), (c.base + "/", "max_sitemaps")],
        args={"max_sitemaps": "4"},
    )


@case("urlset-50003-urls")
def _(c: Ctx) -> Case:
    url = f"{c.base}/_/gen/urlset?n=50003&prefix=/{c.case}/p/"
    return Case(
        [url],
        [c.page(str(i)) for i in range(50_003)],
        merge(parsed(1, found=50_003), err("too_many_urls"), ent("over_url_limit", 3)),
        [(url, "too_many_urls")],
    )


LONG_PREFIX = "/" + "l" * 1500 + "/"


@case("urlset-over-50mib-gzipped")
def _(c: Ctx) -> Case:
    url = f"{c.base}/_/gen/urlset?n=40000&gzip=1&prefix=/{c.case}{LONG_PREFIX}"
    return Case(
        [url],
        [],  # filled in by check_over_50mib
        merge(
            parsed(1),
            {"sitemapcrawl/sitemaps/gzip_count": 1},
            err("too_large"),
            ent("entry_truncated"),
        ),
        [(url, "too_large")],
        check=lambda items: check_prefix_run(items, f"{c.base}/{c.case}{LONG_PREFIX}"),
    )


@case("urlset-over-50mib-plain")
def _(c: Ctx) -> Case:
    # The spider stops the download at SITEMAPCRAWL_MAX_DOWNLOAD_SIZE (Scrapy's own cap
    # would cancel it and deliver nothing) and reads every <url> that arrived whole.
    url = f"{c.base}/_/gen/urlset?n=40000&prefix=/{c.case}{LONG_PREFIX}"
    return Case(
        [url],
        [],
        merge(parsed(1), err("too_large"), err("xml_syntax_error"), ent("entry_truncated")),
        [(url, "too_large"), (url, "xml_syntax_error")],
        check=lambda items: check_contiguous(items, f"{c.base}/{c.case}{LONG_PREFIX}", 30_000),
    )


@case("content-length-over-the-cap")
def _(c: Ctx) -> Case:
    # A static file that announces its length: Scrapy's cap would refuse it before any
    # byte; sitemap requests carry no Scrapy cap, so it is read up to ours.
    locs = [c.page(str(i)) for i in range(2000)]
    body = urlset(*locs).encode()
    path = c.write("big.xml", body)
    kept = _core_locs(body[:60_000], c.base + path)
    assert 100 < len(kept) < 1000
    return Case(
        [c.base + path],
        kept,
        merge(
            parsed(1, found=len(kept)),
            err("too_large"),
            err("xml_syntax_error"),
            ent("entry_truncated"),
        ),
        [(c.base + path, "too_large"), (c.base + path, "xml_syntax_error")],
        settings={"SITEMAPCRAWL_MAX_DOWNLOAD_SIZE": 60_000},
    )


@case("endless-body")
def _(c: Ctx) -> Case:
    # Stopped at the download cap (1 MB here, to keep the case short); what arrived is read.
    url = c.base + "/_/endless"
    return Case(
        [url],
        [],
        merge(parsed(1), err("too_large"), err("xml_syntax_error"), ent("entry_truncated")),
        [(url, "too_large"), (url, "xml_syntax_error")],
        settings={"SITEMAPCRAWL_MAX_DOWNLOAD_SIZE": 1_000_000},
        check=lambda items: check_contiguous(items, f"{c.base}/x/", 10_000),
    )


@case("empty-and-soft-404")
def _(c: Ctx) -> Case:
    empty = c.write("empty.xml", b"")
    blank = c.write("blank.xml", b"  \r\n\t\n")
    soft = c.write("soft404.xml", "<!DOCTYPE html><html><body><h1>Not found</h1></body></html>")
    return Case(
        [c.base + empty, c.base + blank, c.base + soft],
        [],
        {
            "sitemapcrawl/sitemaps/requested_count": 3,
            "sitemapcrawl/sitemaps/done_count": 3,
            "sitemapcrawl/sitemaps/failed_count": 3,
            "sitemapcrawl/sitemaps/failed_count/empty": 2,
            "sitemapcrawl/sitemaps/failed_count/html": 1,
            "sitemapcrawl/errors/empty_count": 2,
            "sitemapcrawl/errors/html_count": 1,
        },
        [
            (c.base + empty, "empty"),
            (c.base + blank, "empty"),
            (c.base + soft, "html"),
            (f"{c.base}/", "nothing_found"),  # every sitemap failed
        ],
    )


@case("formats-under-the-wrong-type")
def _(c: Ctx) -> Case:
    rss = c.write(
        "feed.xml",
        f'{DECL}<rss version="2.0"><channel><item><link>{c.page("rss")}</link></item>'
        "</channel></rss>",
    )
    atom = c.write(
        "atom.xml",
        f'{DECL}<feed xmlns="http://www.w3.org/2005/Atom"><entry>'
        f'<link href="{c.page("atom")}"/></entry></feed>',
    )
    text = c.write("list.xml", f"{c.page('text-1')}\n{c.page('text-2')}\n")
    xml_as_text = c.write("urlset.txt", urlset(c.page("xml-as-text")))
    return Case(
        [c.base + rss, c.base + atom, c.base + text, c.base + xml_as_text],
        [c.page(n) for n in ("rss", "atom", "text-1", "text-2", "xml-as-text")],
        {
            "sitemapcrawl/sitemaps/requested_count": 4,
            "sitemapcrawl/sitemaps/done_count": 4,
            "sitemapcrawl/sitemaps/parsed_count": 4,
            "sitemapcrawl/sitemaps/parsed_count/rss": 1,
            "sitemapcrawl/sitemaps/parsed_count/atom": 1,
            "sitemapcrawl/sitemaps/parsed_count/text": 1,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 1,
            "sitemapcrawl/urls/found_count": 5,
        },
        [],
    )


@case("namespaces-wrong-and-missing-and-mixed-root")
def _(c: Ctx) -> Case:
    wrong = c.write(
        "wrong.xml", urlset(c.page("wrong-ns"), ns="http://www.google.com/schemas/sitemap/0.84")
    )
    missing = c.write("missing.xml", urlset(c.page("no-ns"), ns=""))
    c.write("child.xml", urlset(c.page("child")))
    mixed = c.write(
        "mixed.xml",
        urlset(c.page("mixed")).replace(
            "</urlset>", f"<sitemap><loc>{c.url('child.xml')}</loc></sitemap></urlset>"
        ),
    )
    unknown = c.write(
        "unknown.xml", f"{DECL}<pages><url><loc>{c.page('odd-root')}</loc></url></pages>"
    )
    # Issue 22: Google's old namespace is read as it is; a missing one is a fault (read all
    # the same), so is a <sitemap> in a urlset (followed all the same); an unknown root is
    # not a sitemap (its <url> was read as one).
    return Case(
        [c.base + p for p in (wrong, missing, mixed, unknown)],
        [c.page(n) for n in ("wrong-ns", "no-ns", "mixed", "child")],
        {
            "sitemapcrawl/sitemaps/requested_count": 5,
            "sitemapcrawl/sitemaps/done_count": 5,
            "sitemapcrawl/sitemaps/parsed_count": 4,
            "sitemapcrawl/sitemaps/parsed_count/urlset": 4,
            "sitemapcrawl/sitemaps/failed_count": 1,
            "sitemapcrawl/sitemaps/failed_count/unknown_root": 1,
            "sitemapcrawl/children/listed_count": 1,
            "sitemapcrawl/urls/found_count": 4,
            "sitemapcrawl/errors/namespace_missing_count": 1,
            "sitemapcrawl/errors/unknown_root_count": 1,
            "sitemapcrawl/errors/mixed_entries_count": 1,
            "sitemapcrawl/entries/mixed_entries_count": 1,
        },
        [
            (c.base + missing, "namespace_missing"),
            (c.base + mixed, "mixed_entries"),
            (c.base + unknown, "unknown_root"),
        ],
    )


@case("locations-relative-bad-scheme-long")
def _(c: Ctx) -> Case:
    path = c.write(
        "sitemap.xml",
        urlset(
            "/rel/absolute-path",
            "relative-page",
            f"//{urlsplit(c.base).netloc}/proto-relative",
            "javascript:alert(1)",
            "data:text/html,&lt;script&gt;",
            "mailto:a@site.example",
            "ftp://ftp.example/file",
            "user-agent:*",
            c.page("l" * 2100),  # over 2,048 characters
            c.page("ok"),
            "",
            "http://host.example:99999/bad-port",
            "http://[not-an-ip]/x",
            "HTTPS://" + urlsplit(c.base).netloc + f"/{c.case}/p/upper-scheme",
        ),
    )
    # Issue 22: every dropped location is a fault, logged once per kind with its first
    # example and counted each time (they were only counted).
    url = c.base + path
    return Case(
        [url],
        [
            f"{c.base}/rel/absolute-path",
            c.url("relative-page"),
            f"{c.base}/proto-relative",
            c.page("ok"),
            c.page("upper-scheme").replace("http://", "https://"),
        ],
        merge(
            parsed(1, found=5),  # host scope: https on the same host is the same site
            ent("loc_relative", 3),
            ent("loc_bad_scheme", 5),
            ent("loc_too_long"),
            ent("loc_missing"),
            ent("loc_invalid", 2),
            *(err(code) for code in ("loc_bad_scheme", "loc_too_long", "loc_missing")),
            err("loc_invalid"),
        ),
        [(url, code) for code in ("loc_bad_scheme", "loc_too_long", "loc_missing", "loc_invalid")],
        check=lambda items: check_flags(items, c.url("relative-page"), ["relative_loc"]),
    )


@case("locations-control-characters")
def _(c: Ctx) -> Case:
    body = urlset(
        c.page("tab\tin"),
        c.page("new\nline"),
        "\r\n  " + c.page("padded") + " \t",
        c.page("bell&#7;char"),
        c.page("del\x7fchar"),
        c.page("raw\x01byte"),
    )
    path = c.write("sitemap.xml", body)
    # Issue 22: only XML white space around a location is stripped; a control character in
    # it drops it (they were removed or percent-encoded, giving URLs the file never said;
    # libxml2 dropped the raw \x01 without a trace). &#7; is still a syntax error.
    return Case(
        [c.base + path],
        [c.page("padded")],
        merge(
            parsed(1, found=1),
            ent("loc_control_chars", 5),
            err("loc_control_chars"),
            err("xml_syntax_error"),
        ),
        [(c.base + path, "xml_syntax_error"), (c.base + path, "loc_control_chars")],
    )


# Encodings --------------------------------------------------------------------------------


@case("encodings")
def _(c: Ctx) -> Case:
    def u16(name: str, codec: str, bom: bool = True) -> str:
        head = '<?xml version="1.0" encoding="UTF-16"?>\n'
        data = urlset(c.page(name + "-é"), c.page(name + "?a=1&amp;b=2"), head=head)
        raw = data.encode(codec)
        return c.write(f"{name}.xml", (b"" if not bom else _BOMS[codec]) + raw)

    le = u16("utf16le", "utf-16-le")
    be = u16("utf16be", "utf-16-be")
    nobom = u16("utf16nobom", "utf-16-le", bom=False)
    latin1 = c.write(
        "latin1.xml",
        urlset(c.page("caf\xe9"), head='<?xml version="1.0" encoding="ISO-8859-1"?>\n').encode(
            "latin-1"
        ),
    )
    undeclared = c.write("undeclared.xml", urlset(c.page("na\xefve"), head="").encode("latin-1"))
    invalid = c.write(
        "invalid-utf8.xml",
        urlset(c.page("a"), c.page("b") + "\udcff", c.page("c")).encode("utf-8", "surrogateescape"),
    )
    iri = c.write("iri.xml", urlset("http://bücher.example/straße", c.page("ünï")))
    return Case(
        [c.base + p for p in (le, be, nobom, latin1, undeclared, invalid, iri)],
        [
            *(c.page(f"{n}-%C3%A9") for n in ("utf16le", "utf16be", "utf16nobom")),
            *(c.page(f"{n}?a=1&b=2") for n in ("utf16le", "utf16be", "utf16nobom")),
            c.page("caf%C3%A9"),
            c.page("na%C3%AFve"),
            c.page("a"),
            # Issue 22: "b" and its invalid byte is dropped (it came out as b%EF%BF%BD)
            c.page("c"),
            c.page("%C3%BCn%C3%AF"),
        ],
        merge(
            parsed(7, found=11),
            ent("encoding_guessed"),
            err("xml_syntax_error"),
            err("loc_undecodable"),
            ent("loc_undecodable"),
            {"sitemapcrawl/scope/dropped_count/other_host": 1},
        ),
        [(c.base + invalid, "xml_syntax_error"), (c.base + invalid, "loc_undecodable")],
        settings={"SITEMAPCRAWL_SCOPE": "host"},
    )


_BOMS = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}


# lastmod ----------------------------------------------------------------------------------

LASTMODS = {
    "month-13": "2024-13-01",
    "year-0000": "0000-01-01",
    "year-9999": "9999-12-31",
    "epoch-seconds": "1714550400",
    "epoch-millis": "1714550400000",
    "rfc2822": "Wed, 01 May 2024 10:00:00 GMT",
    "empty": "",
    "garbage": "yesterday-ish",
    "day-32": "2024-01-32",
    "hour-25": "2024-05-01T25:00:00Z",
    "ok": "2024-05-01T10:00:00+02:00",
}


@case("lastmod-malformed")
def _(c: Ctx) -> Case:
    body = urlset().replace(
        "</urlset>",
        "".join(
            f"<url><loc>{c.page(k)}</loc><lastmod>{v}</lastmod></url>\n"
            for k, v in LASTMODS.items()
        )
        + "</urlset>",
    )
    path = c.write("sitemap.xml", body)
    from sitemapcrawl.sitemaps import parse_lastmod

    expected = {c.page(k): parse_lastmod(v) for k, v in LASTMODS.items()}
    invalid = sum(1 for v in expected.values() if v is not None and v.value is None)
    nonstandard = sum(1 for v in expected.values() if v is not None and "nonstandard" in v.flags)
    assert nonstandard == 1  # the RFC 2822 date (issue 22)

    def check(items: list[dict[str, Any]]) -> None:
        for item in items:
            want = expected[item["url"]]
            got = (item["lastmod"], item["lastmod_raw"], item["lastmod_flags"])
            assert got == ((want.iso, want.raw, list(want.flags)) if want else (None, None, [])), (
                item["url"]
            )
        by_url = {i["url"]: i for i in items}
        assert by_url[c.page("ok")]["lastmod"] == "2024-05-01T08:00:00Z"
        assert by_url[c.page("month-13")]["lastmod"] is None
        assert "invalid" in by_url[c.page("month-13")]["lastmod_flags"]

    return Case(
        [c.base + path],
        list(expected),
        merge(
            parsed(1, found=len(LASTMODS)),
            ent("lastmod_invalid", invalid),
            ent("lastmod_nonstandard", nonstandard),
        ),
        [],
        check=check,
    )


# robots.txt -------------------------------------------------------------------------------


def robots_stats(status: int, declared: int, **extra: int) -> dict[str, int]:
    stats = {
        "sitemapcrawl/robots/requested_count": 1,
        f"sitemapcrawl/robots/status_count/{status}": 1,
        "sitemapcrawl/robots/sitemaps_count": declared,
    }
    stats.update({f"sitemapcrawl/{k.replace('__', '/')}": v for k, v in extra.items()})
    return stats


@case("robots-over-500kib")
def _(c: Ctx) -> Case:
    # 780 KB: read no further than 500 KiB (RFC 9309's minimum); a Sitemap line before
    # the cut is kept, the one after it is never seen
    c.write("s.xml", urlset(c.page("from-large-robots")))
    body = (
        f"User-agent: *\nSitemap: {c.url('s.xml')}\n"
        + "Disallow: /x\n" * 60_000
        + f"Sitemap: {c.url('late.xml')}\n"
    )
    path = c.write("robots.txt", body)
    return Case(
        [c.base + path],
        [c.page("from-large-robots")],
        merge(robots_stats(200, 1, robots__truncated_count=1), parsed(1, found=1)),
        [(c.base + path, "robots_truncated")],
        args={"guess": "off"},
        never=[f"/{c.case}/late.xml"],
    )


@case("robots-utf16-bom")
def _(c: Ctx) -> Case:
    c.write("s.xml", urlset(c.page("from-utf16-robots")))
    body = f"User-agent: *\nDisallow:\nSitemap: {c.url('s.xml')}\n"
    path = c.write("robots.txt", b"\xff\xfe" + body.encode("utf-16-le"))
    return Case(
        [c.base + path],
        [c.page("from-utf16-robots")],
        merge(robots_stats(200, 1), parsed(1, found=1)),
        [],
        args={"guess": "off"},
    )


@case("robots-html")
def _(c: Ctx) -> Case:
    path = c.write(
        "robots.txt", f"<!DOCTYPE html><html><body>Sitemap: {c.url('s.xml')}</body></html>"
    )
    return Case(
        [c.base + path],
        [],
        robots_stats(200, 0, robots__html_count=1),
        [(c.base + path, "robots_html"), (f"{c.base}/", "nothing_found")],
        args={"guess": "off"},
        never=[f"/{c.case}/s.xml"],
    )


@case("robots-redirect-loop")
def _(c: Ctx) -> Case:
    url = f"{c.base}/_/loop/0/{c.case}/robots.txt"  # 302 to /_/loop/1, /_/loop/2…
    return Case(
        [url],
        [],
        {
            "sitemapcrawl/robots/requested_count": 1,
            "sitemapcrawl/robots/failed_count/IgnoreRequest": 1,
            "sitemapcrawl/robots/unreachable_count": 1,
        },
        [(f"{c.base}/_/loop/5", "robots_unreachable")],  # where the redirects were given up
        args={"guess": "off"},
        settings={"REDIRECT_MAX_TIMES": 5},
    )


@case("robots-error-statuses")
def _(c: Ctx) -> Case:
    c.write("robots.txt", f"Sitemap: {c.url('never.xml')}\n")
    given = [f"{c.base}/_/status/{code}/{c.case}/robots.txt" for code in (401, 403, 404, 503)]
    return Case(
        given,
        [],
        {
            "sitemapcrawl/robots/requested_count": 4,
            "sitemapcrawl/robots/status_count/401": 1,
            "sitemapcrawl/robots/status_count/403": 1,
            "sitemapcrawl/robots/status_count/404": 1,
            "sitemapcrawl/robots/status_count/503": 1,
            "sitemapcrawl/robots/sitemaps_count": 0,
            "sitemapcrawl/robots/unreachable_count": 1,  # 503: RFC 9309's complete disallow
        },
        [(given[3], "robots_unreachable")],
        args={"guess": "off"},
        never=[f"/{c.case}/never.xml"],
    )


@case("robots-sitemaps-in-groups-and-hundreds")
def _(c: Ctx) -> Case:
    lines = ["User-agent: googlebot", f"Sitemap: {c.url('in-group.xml')}", "Disallow: /a", ""]
    lines += ["User-agent: *", "Disallow:"]
    lines += [
        f"Sitemap: {c.base}/_/gen/urlset?n=1&prefix=/{c.case}/r/&part={i}" for i in range(300)
    ]
    lines += [f"sitemap:{c.url('in-group.xml')}"]  # a duplicate, spelled differently
    c.write("in-group.xml", urlset(c.page("in-group")))
    path = c.write("robots.txt", "\n".join(lines) + "\n")
    return Case(
        [c.base + path],
        [c.page("in-group"), *(f"{c.base}/{c.case}/r/{i}/0" for i in range(4))],
        merge(
            robots_stats(200, 301, limits__max_sitemaps_count=296),
            parsed(5, found=5),
        ),
        [(c.base + "/", "max_sitemaps")],
        args={"guess": "off", "max_sitemaps": "5"},
    )


@case("robots-invalid-sitemap-lines")
def _(c: Ctx) -> Case:
    c.write("s.xml", urlset(c.page("valid")))
    bad = ["http://[oops/s.xml", "http://site.example:99999/s.xml", "ftp://site.example/s.xml"]
    path = c.write("robots.txt", "".join(f"Sitemap: {u}\n" for u in [*bad, c.url("s.xml")]))
    return Case(
        [c.base + path],
        [c.page("valid")],
        merge(robots_stats(200, 1, robots__invalid_sitemaps_count=3), parsed(1, found=1)),
        [(c.base + path, "robots_invalid_sitemap")],  # said once, counted for each line
        args={"guess": "off"},
    )


# Network ----------------------------------------------------------------------------------


@case("network-hang-and-slow-drip")
def _(c: Ctx) -> Case:
    c.write("drip.xml", urlset(c.page("never-complete")))
    ok = c.write("ok.xml", urlset(c.page("ok")))
    hang = f"{c.base}/_/hang/60?case={c.case}"
    drip = f"{c.base}/_/drip/1/{c.case}/drip.xml"
    # The hang times out (3 s). The drip (a byte a second) is stopped by the read deadline
    # at its first byte after 1.5 s (half its timeout): what came is no sitemap (empty).
    # Each outcome has a second of margin either way, so a busy machine gives the same.
    return Case(
        [hang, drip, c.base + ok],
        [c.page("ok")],
        merge(
            failed("timeout"), failed("empty"), err("too_slow"), err("empty"), parsed(1, found=1)
        ),
        [(hang, "timeout"), (drip, "too_slow"), (drip, "empty")],
        settings={"DOWNLOAD_TIMEOUT": 3, "RETRY_TIMES": 0, "SITEMAPCRAWL_READ_DEADLINE": 0.5},
    )


@case("network-slow-drip-keeps-what-arrived")
def _(c: Ctx) -> Case:
    # 2,000 bytes a second, after the headers: past half its 7 s timeout the download is
    # stopped (at the 4th chunk, 4 s in) and the 8,000 bytes that came are read.
    locs = [c.page(str(i)) for i in range(400)]
    body = urlset(*locs).encode()
    c.write("drip.xml", body)
    url = f"{c.base}/_/drip/2000/{c.case}/drip.xml"
    kept = _core_locs(body[:8000], url)
    assert 50 < len(kept) < 200
    return Case(
        [url],
        kept,
        merge(
            parsed(1, found=len(kept)),
            err("too_slow"),
            err("xml_syntax_error"),
            ent("entry_truncated"),
        ),
        [(url, "too_slow"), (url, "xml_syntax_error")],
        settings={"DOWNLOAD_TIMEOUT": 7, "RETRY_TIMES": 0, "SITEMAPCRAWL_READ_DEADLINE": 0.5},
    )


@case("network-reset-mid-body")
def _(c: Ctx) -> Case:
    locs = [c.page(str(i)) for i in range(400)]
    body = urlset(*locs).encode()
    c.write("sitemap.xml", body)
    url = f"{c.base}/_/reset/{c.case}/sitemap.xml"
    kept = _core_locs(body[: len(body) // 2], url)
    return Case(
        [url],
        kept,
        merge(
            parsed(1, found=len(kept)),
            err("dataloss"),
            err("xml_syntax_error"),
            ent("entry_truncated"),
        ),
        [(url, "dataloss"), (url, "xml_syntax_error")],
    )


@case("network-429-retry-after-and-503-flapping")
def _(c: Ctx) -> Case:
    c.write("a.xml", urlset(c.page("after-429")))
    c.write("b.xml", urlset(c.page("after-503s")))
    c.write("c.xml", urlset(c.page("never")))
    given = [
        f"{c.base}/_/flaky/1/429/{c.case}/a.xml?retry_after=1",
        f"{c.base}/_/flaky/2/503/{c.case}/b.xml",
        f"{c.base}/_/flaky/9/503/{c.case}/c.xml",
    ]
    return Case(
        given,
        [c.page("after-429"), c.page("after-503s")],
        merge(parsed(2, found=2), failed("http_503")),
        [(given[2], "http_status")],
        settings={"RETRY_TIMES": 2},
    )


@case("network-redirects")
def _(c: Ctx) -> Case:
    c.write("target.xml", urlset(c.page("after-redirect")))
    same = f"{c.base}/_/redirect/301?to={c.base}/{c.case}/target.xml"
    away = f"{c.base}/_/redirect/301?to={c.alt}/{c.case}/target.xml"  # another host
    loop = f"{c.base}/_/loop/0?case={c.case}"

    def check(items: list[dict[str, Any]]) -> None:  # read from where it was redirected
        assert [i["sitemap"] for i in items] == [f"{c.base}/{c.case}/target.xml"]

    return Case(
        [same, away, loop],
        [c.page("after-redirect")],
        merge(
            parsed(1, found=1),
            failed("IgnoreRequest"),
            {  # the redirect to another host: requested, not followed
                "sitemapcrawl/sitemaps/requested_count": 1,
                "sitemapcrawl/sitemaps/done_count": 1,
                "sitemapcrawl/sitemaps/out_of_scope_count": 1,
            },
        ),
        [(loop, "fetch_failed"), (away, "redirect_other_host")],
        settings={"REDIRECT_MAX_TIMES": 5},
        check=check,
    )


@case("network-dns-failure")
def _(c: Ctx) -> Case:
    ok = c.write("ok.xml", urlset(c.page("ok")))
    port = urlsplit(c.base).port
    dead = f"http://no-such-host.invalid:{port}/{c.case}/sitemap.xml"
    return Case(
        [dead, c.base + ok],
        [c.page("ok")],
        merge(failed("CannotResolveHostError"), parsed(1, found=1)),
        # the dead site's own report: its only sitemap failed
        [(dead, "fetch_failed"), (f"http://no-such-host.invalid:{port}/", "nothing_found")],
        settings={"RETRY_TIMES": 0},
    )


# Scope ------------------------------------------------------------------------------------


@case("scope-private-addresses")
def _(c: Ctx) -> Case:
    port = urlsplit(c.base).port
    site = c.site + f"/{c.case}"
    private = [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/sitemap.xml",
        "http://192.168.1.1/sitemap.xml",
        f"http://127.0.0.1:{port}/{c.case}/internal.xml",  # another loopback service
        f"http://localhost:{port}/{c.case}/internal2.xml",
        f"http://[::1]:{port}/{c.case}/internal3.xml",
    ]
    c.write("internal.xml", urlset(c.page("INTERNAL")))
    c.write("leaf.xml", urlset(f"{site}/p/public"))
    c.write("index.xml", index(*private, f"{site}/leaf.xml"))
    c.write(
        "robots.txt",
        "".join(
            f"Sitemap: {u}\n" for u in ("http://169.254.169.254/s.xml", "http://10.1.2.3/s.xml")
        )
        + f"Sitemap: {site}/index.xml\n",
    )
    return Case(
        [f"{site}/robots.txt"],
        [f"{site}/p/public"],
        merge(
            robots_stats(200, 3, sitemaps__private_address_count=8),
            {
                "sitemapcrawl/sitemaps/requested_count": 2,
                "sitemapcrawl/sitemaps/done_count": 2,
                "sitemapcrawl/sitemaps/parsed_count": 2,
                "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 1,
                "sitemapcrawl/sitemaps/parsed_count/urlset": 1,
                "sitemapcrawl/children/listed_count": 7,
                "sitemapcrawl/urls/found_count": 1,
            },
        ),
        [
            (u, "private_address")
            for u in ("http://169.254.169.254/s.xml", "http://10.1.2.3/s.xml", *private)
        ],
        args={"guess": "off"},
        never=[f"/{c.case}/internal.xml", f"/{c.case}/internal2.xml", f"/{c.case}/internal3.xml"],
    )


@case("scope-redirect-to-private-address")
def _(c: Ctx) -> Case:
    # A public sitemap URL that redirects to the cloud metadata service: refused by
    # PrivateRedirectMiddleware before any connection (the test's handler guard never fires).
    target = "http://169.254.169.254/latest/meta-data/"
    moved = f"{c.site}/_/redirect/302?to={target}"
    fine = f"{c.site}/_/redirect/302?to={c.site}/{c.case}/leaf.xml"
    c.write("leaf.xml", urlset(f"{c.site}/{c.case}/p/ok"))
    return Case(
        [moved, fine],
        [f"{c.site}/{c.case}/p/ok"],
        merge(
            parsed(1, found=1),
            failed("IgnoreRequest"),
            {"sitemapcrawl/sitemaps/private_address_count": 1},
        ),
        [(moved, "fetch_failed")],
        args={"guess": "off"},
    )


# Every fault the reader records ---------------------------------------------------------

EVERY_FAULT = "reader-faults-every-code"
#: The reader's limits in that case: a small decoded-size cap (the file that inflates past
#: it) above the longest text node taken, and three URLs per file (the file with four).
EVERY_FAULT_MAX_SIZE = 2 * MIB
EVERY_FAULT_MAX_URLS = 3


def _every_fault_files(c: Ctx) -> dict[str, bytes]:
    """One file per fault code the reader can record (``errors.FAULT_CODES``), each
    producing that fault; a few produce another one too (said beside them)."""
    p = c.page
    decl = DECL.encode()

    def doc(*entries: str, root: str = "urlset", ns: str = NS, head: str = DECL) -> bytes:
        xmlns = f' xmlns="{ns}"' if ns else ""
        return f"{head}<{root}{xmlns}>{''.join(entries)}</{root}>".encode()

    def url(loc: str) -> str:
        return f"<url><loc>{loc}</loc></url>"

    gz = doc(url(p("gzip-layers")))
    for _ in range(4):  # one more layer than are peeled
        gz = gzip.compress(gz, mtime=0)
    inflating = doc(url(p("before-the-cap")), " " * (3 * MIB), url(p("after-the-cap")))
    return {
        "bare_ampersand": doc(url(p("amp?a=1&b=2"))),
        "decompression_error": gzip.compress(doc(url(p("gz"))), mtime=0) + b"GARBAGE",
        "empty": b"",
        "error_document": (
            decl + b"<Error><Code>NoSuchKey</Code>"
            b"<Message>The specified key does not exist.</Message></Error>"
        ),
        "gzip_layers": gz,
        "html": b"<!DOCTYPE html><html><body><h1>Not found</h1></body></html>",
        "loc_bad_scheme": doc(url("ftp://ftp.example/file"), url(p("scheme-ok"))),
        "loc_control_chars": doc(url(p("tab&#9;inside")), url(p("control-ok"))),
        "loc_invalid": doc(url("http://host.example:99999/bad-port")),
        "loc_invisible_chars": doc(url(p("zero\u200bwidth")), url(p("invisible-ok"))),
        "loc_invisible_padding": doc(url("\u200b" + p("padded")), url(p("padding-ok"))),
        "loc_missing": doc("<url><lastmod>2024-05-01</lastmod></url>", url(p("missing-ok"))),
        "loc_not_absolute": f"{p('text-ok')}\nrelative/line\n".encode(),
        "loc_relative_other_host": doc(url("//other.example/x"), url("relative-ok")),
        "loc_query_or_fragment": doc(url("?page=2")),
        "loc_repeated": doc(f"<url><loc>{p('first')}</loc><loc>{p('second')}</loc></url>"),
        "loc_too_long": doc(url(p("l" * 2100))),
        # (the byte is also a syntax error of the declared UTF-8)
        "loc_undecodable": doc(url(p("byte-XX")), url(p("byte-ok"))).replace(b"-XX", b"-\xff"),
        "mixed_entries": doc(url(p("url-in-an-index")), root="sitemapindex"),
        "namespace_missing": doc(url(p("no-namespace")), ns=""),
        "namespace_wrong": doc(url(p("https-namespace")), ns=NS.replace("http:", "https:")),
        "tag_case": doc(f"<URL><LOC>{p('upper')}</LOC></URL>", root="URLSET"),
        "text_too_long": doc(
            f"<url><loc>{p('prose')}</loc><note>{'word ' * (MIB // 4)}</note></url>"
        ),
        "too_large": gzip.compress(inflating, mtime=0),
        "too_many_urls": doc(*(url(p(f"many-{i}")) for i in range(EVERY_FAULT_MAX_URLS + 1))),
        "unknown_format": b'{"sitemap": false}',
        "unknown_root": doc(url(p("odd-root")), root="pages"),
        "xml_entities": (
            decl + b'<!DOCTYPE urlset [<!ENTITY e "x">]>' + doc(url(p("entities")), head="")
        ),
        "xml_syntax_error": doc(url(p("syntax")), "<oops>"),
    }


@case(EVERY_FAULT)
def _(c: Ctx) -> Case:
    """Every fault code the reader can record, each from a file of its own in one crawl: its
    WARNING names the file, its stat counts it, the site report lists it."""
    from sitemapcrawl.sitemaps import Limits, SitemapReader

    files = _every_fault_files(c)
    assert sorted(files) == sorted(FAULT_CODES)  # a new code needs a file here
    limits = Limits(max_size=EVERY_FAULT_MAX_SIZE, max_urls=EVERY_FAULT_MAX_URLS)
    given, urls, faults, logged = [], [], {}, []
    for code, body in files.items():
        name = f"{code}.txt" if code == "loc_not_absolute" else f"{code}.xml"
        given.append(c.base + c.write(name, body))
        reader = SitemapReader(body, given[-1], limits=limits)
        urls += [e.loc for e in reader]
        (fault,) = [f for f in reader.faults if f.code == code]  # the file produces it
        faults[code] = (given[-1], fault.message)
        if reader.kind in ("html", "error_document", "unknown_root", "empty", "unknown"):
            logged.append((given[-1], reader.faults[0].code))  # the spider logs the first
        else:
            logged += [(given[-1], f.code) for f in reader.faults]
    return Case(
        given,
        urls,
        EVERY_FAULT_STATS,
        [(u, "unknown" if code == "unknown_format" else code) for u, code in logged],
        settings={
            "SITEMAPCRAWL_MAX_SIZE": EVERY_FAULT_MAX_SIZE,
            "SITEMAPCRAWL_MAX_URLS_PER_FILE": EVERY_FAULT_MAX_URLS,
        },
        faults=faults,
    )


EVERY_FAULT_STATS = merge(
    {
        "sitemapcrawl/sitemaps/requested_count": 23,  # and the 6 failed() adds
        "sitemapcrawl/sitemaps/done_count": 23,
        "sitemapcrawl/sitemaps/parsed_count": 23,
        "sitemapcrawl/sitemaps/parsed_count/urlset": 21,
        "sitemapcrawl/sitemaps/parsed_count/sitemapindex": 1,  # mixed_entries
        "sitemapcrawl/sitemaps/parsed_count/text": 1,  # loc_not_absolute
        "sitemapcrawl/sitemaps/gzip_count": 2,  # decompression_error, too_large
        "sitemapcrawl/urls/found_count": 24,
    },
    # the bodies that are not sitemaps, by what they are
    failed("empty"),
    failed("error_document"),
    failed("html"),
    failed("unknown", 2),  # unknown_format, gzip_layers
    failed("unknown_root"),
    *(err(code) for code in FAULT_CODES),  # each once: one file each
    err("xml_syntax_error"),  # and the undecodable byte is one too
    *(ent(code) for code in ENTRY_FAULTS),  # each entry fault once
    ent("loc_relative"),  # the relative location in the directory, kept
    ent("over_url_limit"),
)


# -- helpers used by the cases -------------------------------------------------------------


def _core_locs(body: bytes, url: str) -> list[str]:
    """What the core reads from ``body``: the expected URLs of a fault cut at a known byte."""
    from sitemapcrawl.sitemaps import SitemapReader

    return [e.loc for e in SitemapReader(body, url)]


def zstd_raw_frame(data: bytes) -> bytes:
    """A valid zstd frame made of raw (stored) blocks, built without the zstandard module."""
    out = bytearray(b"\x28\xb5\x2f\xfd")
    out += bytes([0xA0]) + len(data).to_bytes(4, "little")  # single segment, 4-byte size
    blocks = [data[i : i + 65536] for i in range(0, len(data), 65536)] or [b""]
    for number, block in enumerate(blocks):
        last = number == len(blocks) - 1
        out += (len(block) << 3 | int(last)).to_bytes(3, "little") + block
    return bytes(out)


def check_flags(items: list[dict[str, Any]], url: str, flags: list[str]) -> None:
    (item,) = [i for i in items if i["url"] == url]
    assert item["flags"] == flags


def check_prefix_run(items: list[dict[str, Any]], stem: str) -> None:
    """A file cut by the size cap: every ``<url>`` that ended within 50 MiB, in order."""
    size = len(b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="' + NS.encode() + b'">\n')
    complete = 0
    while True:
        size += len(f"<url><loc>{stem}{complete}</loc></url>")
        if size > 50 * MIB:
            break
        size += 1  # the newline
        complete += 1
    assert [i["url"] for i in items] == [f"{stem}{k}" for k in range(complete)]


def check_contiguous(items: list[dict[str, Any]], stem: str, at_least: int) -> None:
    """A download stopped at the cap: the URLs that arrived whole, in order, none skipped."""
    urls = [i["url"] for i in items]
    assert len(urls) >= at_least
    assert urls == [f"{stem}{k}" for k in range(len(urls))]


# -- running the children -----------------------------------------------------------------


@dataclass
class Outcome:
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    log: str
    rss_kib: int
    returncode: int
    report: dict[str, Any] | None = None


BASE_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "AUTOTHROTTLE_ENABLED": False,
    "RETRY_TIMES": 1,
    "DOWNLOAD_TIMEOUT": 10,
    "TELNETCONSOLE_ENABLED": False,
    "SITEMAPCRAWL_PROGRESS_INTERVAL": 0,
    "SITEMAPCRAWL_STATE_PATH": "",  # each case starts from nothing
    "SITEMAPCRAWL_SAMPLE_ENABLED": False,  # hostile sitemaps: no page is sampled
    "STATS_CLASS": f"{__name__}.JsonStatsCollector",
    "TWISTED_DNS_RESOLVER": f"{__name__}.LoopbackResolver",
    "DOWNLOAD_HANDLERS": json.dumps({"http": f"{__name__}.LoopbackOnlyHandler"}),
}


# Runs one command in a fork of this small interpreter and prints its exit status and peak
# RSS. Forking the test process itself would not do: a child's peak RSS starts from the
# parent's, and the test process holds every case's generated files.
_LAUNCHER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    try:
        log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss]))
"""


def run_crawl(name: str, spec: Case, workdir: Path) -> Outcome:
    """``scrapy crawl sitemap`` in a child; its peak RSS is measured by ``os.wait4``."""
    out = workdir / f"{name}.jsonl"
    stats_file = workdir / f"{name}.stats.json"
    log_file = workdir / f"{name}.log"
    settings = {**BASE_SETTINGS, **spec.settings, "HARDENING_STATS_FILE": str(stats_file)}
    command = ["-m", "scrapy", "crawl", "sitemap", "-O", f"{out}:jsonl"]
    command += ["-a", "sitemap_urls=" + ",".join(spec.given)]
    for key, value in spec.args.items():
        command += ["-a", f"{key}={value}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(log_file), *command],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        start_new_session=True,  # its own process group: a timeout kills the crawl too
    )
    try:
        stdout, _ = proc.communicate(timeout=spec.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    returncode, rss_kib = json.loads(stdout)
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    items = [r for r in records if "url" in r]  # URL items (a site report may follow them)
    reports = [r for r in records if "segments" in r and "faults" in r]
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    log = log_file.read_text("utf-8", "replace")
    return Outcome(items, stats, log, rss_kib, returncode, reports[-1] if reports else None)


#: The stat areas of discovery and parsing (docs/stats.md); others (lastmod verification,
#: the site report) are not about hostile input.
_AREAS = (
    *(f"sitemapcrawl/{area}/" for area in ("robots", "guess", "sitemaps", "children")),
    *(f"sitemapcrawl/{area}/" for area in ("limits", "errors", "entries", "scope")),
    "sitemapcrawl/urls/found_count",
    "sitemapcrawl/urls/duplicate_count",
)


def our_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """The discovery and parsing stats, exactly (the rate aside)."""
    return {k: v for k, v in stats.items() if k.startswith(_AREAS)}


_FAULTS = (
    ("Sitemap line(s) skipped: not an http(s) URL", "robots_invalid_sitemap"),
    ("the site is off limits", "robots_unreachable"),
    ("no answer in time", "timeout"),
    ("on another host; not read", "redirect_other_host"),
    ("on another host the site did not vouch for", "child_other_host"),
    ("redirects in a loop", "redirect_loop"),
    ("redirected more than", "too_many_redirects"),
    ("asking to retry after", "retry_after"),
    ("no URL found:", "nothing_found"),
    ("URLs the sitemaps list were dropped by scope", "scope_dropped"),
    ("could not be fetched:", "fetch_failed"),
    ("the document declares entities", "xml_entities"),
    ("malformed XML", "xml_syntax_error"),
    ("XML parsing stopped", "xml_syntax_error"),
    ("decoded body exceeds", "too_large"),
    ("download stopped at", "too_large"),
    ("download still running after", "too_slow"),
    ("gzip data", "decompression_error"),
    ("after the gzip data", "decompression_error"),
    ("the body is an HTML page", "html"),
    ("the body is empty", "empty"),
    ("neither XML", "unknown"),
    ("URLs in one sitemap file", "too_many_urls"),
    ("sitemaps in one index file", "too_many_urls"),
    ("connection lost mid-body", "dataloss"),
    ("answered HTTP", "http_status"),
    ("loop cut", "loop"),
    ("private or loopback address", "private_address"),
    ("robots.txt is an HTML page", "robots_html"),
    ("robots.txt is over", "robots_truncated"),
    ("robots.txt answered", "robots_status"),
    ("robots.txt could not be fetched", "robots_failed"),
    ("max_sitemaps=", "max_sitemaps"),
    ("deeper than max_depth", "max_depth"),
    # the reader's faults of issue 22
    ("still gzip after", "gzip_layers"),
    ("XML error document", "error_document"),
    ("is not a sitemap's (urlset", "unknown_root"),
    ("has no namespace", "namespace_missing"),
    ("in the namespace", "namespace_wrong"),
    ("a text node longer than", "text_too_long"),
    *((cls.what, code) for code, cls in ENTRY_FAULTS.items()),
)
_WARNING = re.compile(r"\[sitemapcrawl\.spiders\.sitemap\] WARNING: (\S+): (.*)")


def faults_logged(log: str) -> list[tuple[str, str]]:
    """The spider's fault warnings as (URL, fault), in log order."""
    found = []
    for url, message in _WARNING.findall(log):
        code = next((code for text, code in _FAULTS if text in message), f"?{message}")
        found.append((url, code))
    return found


# -- the tests ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalogue(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Build every selected case under one server and run their crawls, a few at a time."""
    ours = [i for i in request.session.items if getattr(i, "module", None) is sys.modules[__name__]]
    wanted = {
        item.callspec.params["name"]
        for item in ours
        if getattr(item, "originalname", None) == "test_catalogue_case_is_handled"
    }
    if any(item.name == "test_every_reader_fault_is_visible" for item in ours):
        wanted.add(EVERY_FAULT)
    root = tmp_path_factory.mktemp("hardening-root")
    work = tmp_path_factory.mktemp("hardening-runs")
    with MockServer(root=root) as server:
        port = server.port
        specs = {}
        for name in sorted(wanted):
            ctx = Ctx(root, name, server.base, server.alt_base, f"http://{SITE_HOST}:{port}")
            specs[name] = BUILDERS[name](ctx)
        # The bombs are built (compressing up to 1 GiB each, one at a time) before any crawl
        # starts: built on first request, they made the last bomb case wait past its
        # sitemap deadline on a busy machine, and it read nothing.
        bombs = {u for spec in specs.values() for u in spec.given if "/_/bomb/" in u}
        for url in sorted(bombs):
            with urllib.request.urlopen(url, timeout=600) as answer:
                answer.read()
        server.reset_requests()
        # The slow ones (timeouts, bombs) first, so that they overlap with the rest.
        order = sorted(specs, key=lambda n: -specs[n].timeout - ("bomb" in n or "network" in n))
        with ThreadPoolExecutor(WORKERS) as pool:
            futures = {n: pool.submit(run_crawl, n, specs[n], work) for n in order}
            results = {n: f.exception() or f.result() for n, f in futures.items()}
        if os.environ.get("HARDENING_DUMP"):
            _dump(Path(os.environ["HARDENING_DUMP"]), specs, results)
        yield {"specs": specs, "results": results, "requests": server.requests()}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_catalogue_case_is_handled(name: str, catalogue: dict[str, Any]) -> None:
    spec: Case = catalogue["specs"][name]
    result = catalogue["results"][name]
    if isinstance(result, BaseException):
        raise result  # TimeoutExpired for a hang: the time bound was broken
    assert isinstance(result, Outcome)
    # No crash.
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log
    assert result.stats.get("finish_reason") == spec.finish_reason
    assert "spider_exceptions" not in " ".join(result.stats)
    # Bounded memory (the time bound is the child's timeout).
    assert result.rss_kib < RSS_LIMIT_KIB, f"peak RSS {result.rss_kib // 1024} MiB"
    # Nothing lost, nothing invented.
    urls = [i["url"] for i in result.items]
    if spec.check is not None:
        spec.check(result.items)
    if spec.urls or spec.check is None:
        assert sorted(urls) == sorted(spec.urls), (result.stats, result.log[-3000:])
    assert len(urls) == len(set(urls))
    # Named: exact stats, each fault logged once with its URL.
    ours = our_stats(result.stats)
    if spec.check is not None and not spec.urls:
        ours.pop("sitemapcrawl/urls/found_count", None)
    assert ours == spec.stats
    logged = faults_logged(result.log)
    assert sorted(logged) == sorted(spec.logged)
    # … and listed in the site report (a crawl closed early has no report), with its URL.
    if spec.finish_reason == "finished":
        assert result.report is not None
        listed = [(f["url"], f["message"]) for f in result.report["faults"]]
        assert sorted(listed) == sorted(_WARNING.findall(result.log))
        assert result.report["errors"] == {
            k.removeprefix("sitemapcrawl/errors/"): v
            for k, v in result.stats.items()
            if k.startswith("sitemapcrawl/errors/")
        }
    # Never requested: canaries, external DTDs, other services.
    requested = catalogue["requests"]
    for path in spec.never:
        assert not [p for p in requested if p.split("?")[0] == path], path
    assert "NonLoopbackRequest" not in result.log


def test_every_reader_fault_is_visible(catalogue: dict[str, Any]) -> None:
    """Issue 22: every fault code the reader can record (``errors.FAULT_CODES``), in a real
    crawl of a file that produces it, is a WARNING naming the file (once), a
    ``sitemapcrawl/errors/<code>_count`` stat, and a fault in the site report."""
    spec: Case = catalogue["specs"][EVERY_FAULT]
    result = catalogue["results"][EVERY_FAULT]
    assert isinstance(result, Outcome), result
    assert sorted(spec.faults) == sorted(FAULT_CODES)
    warnings = _WARNING.findall(result.log)
    assert result.report is not None
    reported = result.report["faults"]
    for code, (url, message) in spec.faults.items():
        assert warnings.count((url, message)) == 1, code
        assert result.stats.get(f"sitemapcrawl/errors/{code}_count", 0) >= 1, code
        if code in ENTRY_FAULTS:  # and each entry counted
            assert result.stats.get(f"sitemapcrawl/entries/{code}_count", 0) >= 1, code
        (fault,) = [f for f in reported if (f["url"], f["message"]) == (url, message)]
        # a body that is not read is reported as what it is (html, unknown...)
        assert fault["code"] in (code, "unknown", "html", "empty"), (code, fault)


def _dump(path: Path, specs: dict[str, Case], results: dict[str, Any]) -> None:
    """``HARDENING_DUMP=file``: write what each case produced, to review a catalogue change."""
    report = {}
    for name, result in results.items():
        if isinstance(result, BaseException):
            report[name] = repr(result)
            continue
        ours = our_stats(result.stats)
        urls = sorted(i["url"] for i in result.items)
        report[name] = {
            "rc": result.returncode,
            "rss_mib": result.rss_kib // 1024,
            "finish": result.stats.get("finish_reason"),
            "stats+": {k: v for k, v in ours.items() if specs[name].stats.get(k) != v},
            "stats-": {k: v for k, v in specs[name].stats.items() if ours.get(k) != v},
            "urls+": [u[:150] for u in urls if u not in specs[name].urls][:8],
            "urls-": [u[:150] for u in specs[name].urls if u not in urls][:8],
            "logged": faults_logged(result.log),
            "traceback": "Traceback" in result.log,
        }
    path.write_text(json.dumps(report, indent=1))


# -- the core alone: fuzz findings and the memory bound -----------------------------------------

#: Inputs found by ``fuzz/fuzz_reader.py`` (minimised), with what the reader must make of them.
FUZZ_FINDINGS = [
    # A location whose "scheme" has a hyphen was resolved as relative and came out as
    # ``user-agent:%20*…``, not an http URL.
    (b"User-agent:*Crawl-delay:1", [], {"loc_bad_scheme": 1}),
    # A control character left in the host (in XML, libxml2 drops it before we see it).
    # Issue 22: a control character anywhere drops the location (it was cleaned, or
    # percent-encoded in the path).
    (b"http://www.doh\x08ml/", [], {"loc_control_chars": 1}),
    (b"http://www.example.com/\x08x", [], {"loc_control_chars": 1}),
    # Ports Scrapy's Request (safe_url_string) raises on.
    (b"http://a.example:.com/x", [], {"loc_invalid": 1}),
    (b"http://www.example.com:2025-06-06T09:00:00+00:00", [], {"loc_invalid": 1}),
    (b"http://a.example:99999/", [], {"loc_invalid": 1}),
    # A bracket without its pair, a bracketed host that is no address: urlsplit raises.
    (b"http://www.domain.com]/page1.html", [], {"loc_invalid": 1}),
    (b"//[oops", [], {"loc_invalid": 1}),  # (a text sitemap's line: loc_not_absolute)
    (b"http://[not-an-ip]/", [], {"loc_invalid": 1}),
    # A mixed-case scheme was kept as is.
    (b"hTtp://www.example.com/A", ["http://www.example.com/A"], {}),
]


def test_fuzz_finding_robots_sitemap_lines_that_are_no_urls() -> None:
    from sitemapcrawl.sitemaps.robots import parse_robots

    # urljoin raised "Invalid IPv6 URL" out of parse_robots, losing every other line.
    body = (
        b"Sitemap: http://[oops/s.xml\nSitemap: ftp://a.example/s.xml\n"
        b"Sitemap: http://a.example:99999/\nSitemap: /ok.xml\n"
    )
    result = parse_robots(body, "https://site.example/robots.txt")
    assert result.sitemaps == ["https://site.example/ok.xml"]
    assert result.invalid == 3


@pytest.mark.parametrize(("line", "locs", "counts"), FUZZ_FINDINGS)
def test_fuzz_findings_stay_fixed(line: bytes, locs: list[str], counts: dict[str, int]) -> None:
    from w3lib.url import safe_url_string

    from sitemapcrawl.sitemaps import SitemapReader

    ok = b"https://site.example/ok"
    variants = [(ok + b"\n" + line + b"\n", "text")]
    if b"\x08" not in line:
        variants.append((urlset_bytes(ok, line), "urlset"))
    for body, kind in variants:
        reader = SitemapReader(body, "https://site.example/dir/sitemap.txt")
        got = [e.loc for e in reader]
        assert reader.kind == kind
        assert got == [ok.decode(), *locs]
        for loc in got:
            assert safe_url_string(loc) == loc  # what Request does: no error, no change
        if kind == "text" and line.startswith(b"//"):  # a text line is never resolved
            assert dict(reader.counts) == {"loc_not_absolute": 1}
        else:
            assert dict(reader.counts) == counts


def urlset_bytes(*locs: bytes) -> bytes:
    entries = b"".join(
        b"<url><loc>"
        + loc.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;")
        + b"</loc></url>"
        for loc in locs
    )
    return urlset().encode().replace(b"</urlset>", entries + b"</urlset>")


_PADDING = {
    "spaces": (b"", b" " * 4096, b""),
    "comment": (b"<!--", b"c" * 4096, b"-->"),
    "doctype": (b'<!DOCTYPE urlset [<!ENTITY a "', b"x" * 4096, b'">]>'),
    "text": (b"<url><loc>https://site.example/", b"t" * 4096, b"</loc></url>"),
    "attribute": (b'<url a="', b"v" * 4096, b'"><loc>https://site.example/x</loc></url>'),
    "urls": (b"", b"<url><loc>https://site.example/u</loc></url>" * 90, b""),
}


def _hostile(kind: str, mib: int, layers: int) -> bytes:
    """A gzip (``layers`` deep) of a urlset whose middle is ``mib`` MiB of ``kind``."""
    start, unit, end = _PADDING[kind]
    head = b'<?xml version="1.0"?>'
    if kind not in ("doctype", "comment"):
        head += b"<urlset><url><loc>https://site.example/first</loc></url>"
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    out = [comp.compress(head + start)]
    block = unit * (MIB // len(unit))
    out += [comp.compress(block) for _ in range(mib)]
    out.append(
        comp.compress(end + b"<urlset><url><loc>https://site.example/last</loc></url></urlset>")
    )
    out.append(comp.flush())
    body = b"".join(out)
    for _ in range(layers - 1):
        body = gzip.compress(body, compresslevel=1)
    return body


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(_PADDING)),
    st.integers(6, 40),
    st.integers(1, 2),
    st.sampled_from([4096, 65536, 256 * 1024]),
)
def test_memory_is_bounded_by_the_caps_not_the_input(
    kind: str, mib: int, layers: int, chunk: int
) -> None:
    """However far a body inflates, the reader's own allocations stay within a few times
    its size cap (libxml2's are capped by ``huge_tree=False``: 10 MB per node)."""
    from sitemapcrawl.sitemaps import Limits, SitemapReader

    body = _hostile(kind, mib, layers)
    cap = 4 * MIB
    tracemalloc.start()
    try:
        reader = SitemapReader(
            body, "https://site.example/s.xml", limits=Limits(max_size=cap, chunk_size=chunk)
        )
        count = sum(1 for _ in reader)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * cap + len(body), f"{peak / MIB:.1f} MiB"
    assert "too_large" in [f.code for f in reader.faults]
    assert reader.decoder.size == cap
    assert count <= cap // len(b"<url><loc>https://site.example/u</loc></url>") + 1
