"""The scanner (``sitemaps/scan.py``) against lxml: the same entries, counts and faults.

Every body is read twice, by the default reader (scanner first, lxml when it gives up)
and with ``fast_path=False`` (lxml only), and everything the reader reports is compared:
the conformance corpus, the benchmark corpus at a small size, the test fixtures, and a
seeded set of mutated and malformed sitemaps, cut at every byte and read in chunks of
every size. The scanner must also really be used on the plain files (``reader.parser``).
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as dt
import gzip
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from sitemapcrawl.sitemaps import Limits, SitemapReader, UrlEntry, dates
from sitemapcrawl.sitemaps.errors import EntryFault
from tests.conftest import CONFORMANCE, DATA

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import corpus as bench_corpus

NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
BASE = "https://www.example.com/sitemap.xml"


def outcome(reader: SitemapReader) -> dict[str, Any]:
    entries = list(reader)
    return {
        "entries": entries,
        "kind": reader.kind,
        "faults": [(type(f).__name__, f.code, f.message) for f in reader.faults],
        "counts": list(reader.counts.items()),
        "urls": reader.urls,
        "sitemaps": reader.sitemaps,
        "layers": reader.decoder.layers,
    }


def same(body: bytes, url: str = BASE, **limits: Any) -> SitemapReader:
    """Read ``body`` both ways, assert the outcomes are identical, return the fast reader."""
    lim = Limits(**limits)
    fast = SitemapReader(body, url, limits=lim, now=NOW)
    slow = SitemapReader(body, url, limits=lim, now=NOW, fast_path=False)
    got, want = outcome(fast), outcome(slow)
    assert got == want, (fast.parser, fast.scan_stopped, body[:2000])
    assert slow.parser in ("lxml", None)
    return fast


# -- real files ------------------------------------------------------------------------

CONFORMANCE_FILES = sorted(p for p in (CONFORMANCE / "sitemaps").rglob("*") if p.is_file())
FIXTURES = sorted(
    p
    for p in DATA.rglob("*")
    if p.is_file() and p.suffix in (".xml", ".gz", ".txt") and "pages" not in p.parts
)


@pytest.mark.parametrize("path", CONFORMANCE_FILES, ids=lambda p: p.name)
def test_conformance_files(path: Path) -> None:
    same(path.read_bytes(), "https://www.example.com/" + path.name)


def test_conformance_urlsets_are_scanned() -> None:
    scanned = [
        p.name
        for p in CONFORMANCE_FILES
        if same(p.read_bytes(), "https://www.example.com/" + p.name).parser == "scan"
    ]
    assert {"sitemap.ns.xml", "sitemap.index.xml", "sitemap-images.xml"} <= set(scanned)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_fixtures(path: Path) -> None:
    same(path.read_bytes(), "http://127.0.0.1:8000/" + path.name)


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 4096, 256 * 1024])
def test_bench_corpus_is_scanned(chunk_size: int) -> None:
    base = "http://127.0.0.1:18730"
    urlset = bench_corpus.urlset_xml(42, "urlset-50k", base, 1, 400).encode()
    worst, _ = bench_corpus.worst_case_urlset(42, base, 100_001, size=300_000)
    heavy = bench_corpus.heavy_urlset(42, base, 300_001, n=300, size=400_000)
    for body in (urlset, gzip.compress(urlset), worst, heavy):
        reader = same(body, base + "/s.xml", chunk_size=chunk_size)
        assert reader.parser == "scan", reader.scan_stopped
        assert reader.urls > 100


# -- generated: a small sitemap with every feature, then broken in every way -------------

URLSET = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
  xmlns:xhtml="http://www.w3.org/1999/xhtml" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
  xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
  xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
  xmlns:mobile="http://www.google.com/schemas/sitemap-mobile/1.0">
  <url><loc>https://www.example.com/a</loc><lastmod>2024-05-01</lastmod></url>
  <url>
    <loc> https://www.example.com/b?x=1&amp;y=2 </loc>
    <lastmod>2024-05-01T10:00:00+02:00</lastmod>
    <changefreq>Daily</changefreq>
    <priority>0.8</priority>
  </url>
  <url><loc>/relative/c</loc><lastmod>not a date</lastmod><priority>7</priority></url>
  <url><priority>0.5</priority><loc>https://www.example.com:8080/d</loc></url>
  <url><loc>https://www.example.com/é?q=ü</loc><changefreq> </changefreq></url>
  <url><loc></loc></url>
  <url><loc>javascript:alert(1)</loc></url>
  <url>
    <loc>https://www.example.com/e</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/e"/>
    <image:image><image:loc>https://www.example.com/e.jpg</image:loc>
      <image:title>An   image &lt;1&gt;</image:title></image:image>
    <mobile:mobile/>
  </url>
  <url>
    <loc>https://www.example.com/f</loc>
    <news:news><news:publication><news:name>Daily</news:name>
      <news:language>en</news:language></news:publication>
      <news:publication_date>2024-05-01T10:00:00Z</news:publication_date>
      <news:title>Title &#233;&#x41;</news:title><news:keywords>a, b</news:keywords></news:news>
    <video:video><video:title>V</video:title><video:duration>60</video:duration>
      <video:player_loc allow_embed="yes">https://www.example.com/p</video:player_loc>
      <video:price currency="EUR">1.5</video:price></video:video>
  </url>
  <url><loc>https://www.example.com/g</loc><lastmod>2030-01-01</lastmod></url>
  <url ><loc >https://www.example.com/h</loc ><lastmod>1970-01-01</lastmod></url >
</urlset>
"""

INDEX = """<?xml version='1.0'?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://www.example.com/s1.xml</loc><lastmod>2024-05-01</lastmod></sitemap>
  <sitemap>https://www.example.com/bare.xml</sitemap>
  <sitemap><loc>/s2.xml.gz</loc></sitemap>
  <url><loc>https://www.example.com/page</loc></url>
</sitemapindex>
"""

SNIPPETS = [
    b"&",
    b"&amp;",
    b"&nbsp;",
    b"&#65;",
    b"&#x41;",
    b"&#X41;",
    b"&#0;",
    b"&#xD800;",
    b"&#1114112;",
    b"&#0000000065;",
    b"&a" + b"b" * 45 + b";",
    b"<![CDATA[x&y]]>",
    b"<!-- c -->",
    b"<?pi x?>",
    b"]]>",
    b"\r\n",
    b"\r",
    b"\t",
    b"\x00",
    b"\x01",
    b"\x0b",
    b"\x1c",
    b"\x85",
    b"\xff",
    b"\xc3",
    b"\xef\xbf\xbe",
    b"\xc2\xa0",
    b"\xe3\x80\x80",
    b"<",
    b">",
    b'"',
    b"'",
    b"=",
    b"/",
    b"text",
    b"<x:y/>",
    b'<image:foo xmlns:image="urn:z"/>',
    b'<foo xmlns="urn:z"/>',
    b"<foo/>",
    b"</url>",
    b"<url>",
    b"<url><loc>https://x.example/</loc></url>",
    b"<sitemap><loc>https://x.example/s.xml</loc></sitemap>",
    b"</loc>",
    b"<loc>",
    b"<!DOCTYPE x>",
    b'<!DOCTYPE x [<!ENTITY e "v">]>',
    b"&e;",
    b' a="1"',
    b' a="1" a="2"',
    b" xml:lang='en'",
    b' xmlns:q="urn:q"',
    b" q:a='1'",
    b"\xef\xbb\xbf",
    # issue 22's faults
    b"\xe2\x80\x8b",
    b"<URL><LOC>https://x.example/u</LOC></URL>",
    b"<Loc>https://x.example/l</Loc>",
    b"<loc>https://x.example/2</loc>",
    b"<loc>//other.example/x</loc>",
    b"<lastmod>2024-05-01 10:00</lastmod>",
    b"<lastmod>May 6, 2024</lastmod>",
]


def mutants(seed: int, doc: bytes, n: int) -> list[bytes]:
    rng = random.Random(f"{seed}:{len(doc)}")
    out = []
    for _ in range(n):
        body = doc
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            op = rng.random()
            at = rng.randrange(len(body) + 1)
            if op < 0.55:
                body = body[:at] + rng.choice(SNIPPETS) + body[at:]
            elif op < 0.7:
                body = body[:at] + body[at + rng.randint(1, 40) :]
            elif op < 0.8:
                end = min(len(body), at + rng.randint(1, 200))
                body = body[:end] + body[at:end] + body[end:]
            elif op < 0.9:
                body = body[:at] + bytes([rng.randrange(256)]) + body[at + 1 :]
            else:
                body = body[:at]
        out.append(body)
    return out


DOCS = {"urlset": URLSET.encode(), "index": INDEX.encode()}


def variants(doc: bytes) -> dict[str, bytes]:
    tight = b">".join(part.rstrip() for part in doc.split(b">"))
    return {
        "as is": doc,
        "crlf": doc.replace(b"\n", b"\r\n"),
        "cr": doc.replace(b"\n", b"\r"),
        "tight": tight,
        "tabs": doc.replace(b"  ", b"\t"),
        "bom": codecs.BOM_UTF8 + doc,
        "leading space": b" \n\t" + doc,
        "no declaration": doc[doc.index(b"?>") + 2 :].lstrip(),
        "utf-16": doc.decode().encode("utf-16"),
        "utf-16-be": doc.decode().encode("utf-16-be"),
        "utf-16-le no bom": doc.decode().replace("UTF-8", "UTF-16").encode("utf-16-le"),
        "latin-1 declared": doc.replace(b"UTF-8", b"ISO-8859-1"),
        "gzip": gzip.compress(doc),
        "double gzip": gzip.compress(gzip.compress(doc)),
        "prefixed": doc.replace(b"<url>", b"<s:url>")
        .replace(b"</url>", b"</s:url>")
        .replace(b"<urlset ", b'<urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9" ')
        .replace(b"<sitemapindex ", b'<sitemapindex xmlns:s="urn:s" '),
        "comment first": doc.replace(b"?>", b"?><!-- generated -->", 1),
        "stylesheet": doc.replace(b"?>", b'?><?xml-stylesheet href="s.xsl"?>', 1),
        "trailing comment": doc + b"<!-- end -->",
        "trailing garbage": doc + b"garbage",
        "no namespace": doc.replace(b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"', b""),
        "relative namespace": doc.replace(b"http://www.sitemaps.org/schemas/sitemap/0.9", b"s"),
    }


@pytest.mark.parametrize("name", sorted(DOCS))
@pytest.mark.parametrize("variant", sorted(variants(b"<?x?>")))
def test_variants(name: str, variant: str) -> None:
    body = variants(DOCS[name])[variant]
    reader = same(body)
    if variant in ("as is", "crlf", "tight", "bom", "gzip", "no declaration", "prefixed"):
        assert reader.parser == "scan", reader.scan_stopped


@pytest.mark.parametrize("name", sorted(DOCS))
def test_truncated_at_every_byte(name: str) -> None:
    doc = DOCS[name]
    for end in range(len(doc) + 1):
        same(doc[:end])


def test_gzip_truncated_at_many_bytes() -> None:
    packed = gzip.compress(DOCS["urlset"])
    for end in range(0, len(packed) + 1, 3):
        same(packed[:end])


@pytest.mark.parametrize("name", sorted(DOCS))
def test_chunk_boundary_at_every_offset(name: str) -> None:
    doc = DOCS[name]
    for size in range(1, len(doc) + 1):
        same(doc, chunk_size=size)


def test_chunk_boundaries_with_references_and_crlf() -> None:
    doc = DOCS["urlset"].replace(b"\n", b"\r\n").replace(b"&amp;", b"&")
    for size in range(1, 200):
        same(doc, chunk_size=size)


@pytest.mark.parametrize("name", sorted(DOCS))
@pytest.mark.parametrize("seed", range(4))
def test_mutants(name: str, seed: int) -> None:
    for body in mutants(seed, DOCS[name], 150):
        same(body)
        same(body, chunk_size=64)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_urls": 3},
        {"max_urls": 3, "keep_excess": False},
        {"max_urls": 0, "keep_excess": False},
        {"max_urls": 1, "keep_excess": False, "chunk_size": 50},
        {"max_loc_length": 25},
        {"max_size": 700},
        {"max_size": 700, "chunk_size": 64},
    ],
)
@pytest.mark.parametrize("name", sorted(DOCS))
def test_caps(name: str, limits: dict[str, Any]) -> None:
    same(DOCS[name], **limits)
    same(gzip.compress(DOCS[name]), **limits)


def test_a_fault_after_entries_keeps_them_and_says_why() -> None:
    body = DOCS["urlset"].replace(b"<url><loc>https://www.example.com/g", b"<url><loc>&#0;")
    reader = same(body)
    assert reader.parser == "scan+lxml"
    assert reader.scan_stopped == "a character reference to a character XML does not allow"
    assert reader.urls >= 6
    # the entry faults of the entries read, then why the rest is not
    assert [f.code for f in reader.faults if not isinstance(f, EntryFault)] == ["xml_syntax_error"]


ISSUE_22 = {
    # name: (body, what reads it)
    "bare ampersand": (
        DOCS["urlset"].replace(b"b?x=1&amp;y=2", b"b?x=1&y=2&z"),
        "scan+lxml",  # the scanner stops at it: lxml's stream escapes and counts them
    ),
    "index with a url": (DOCS["index"], "scan"),
    "urlset with a sitemap": (
        DOCS["urlset"].replace(
            b"</urlset>", b"<sitemap><loc>https://www.example.com/s.xml</loc></sitemap></urlset>"
        ),
        "scan",
    ),
    "upper-case entry": (
        DOCS["urlset"]
        .replace(b"<url><loc>https://www.example.com/g</loc>", b"<URL><LOC>g</LOC>")
        .replace(b"<lastmod>2030-01-01</lastmod></url>", b"<lastmod>2030-01-01</lastmod></URL>"),
        "scan",
    ),
    "upper-case child": (
        DOCS["urlset"].replace(b"<loc>https://www.example.com/g</loc>", b"<Loc>g</Loc>"),
        "scan",
    ),
    "two locs": (
        DOCS["urlset"].replace(
            b"<loc>https://www.example.com/g</loc>",
            b"<loc>https://www.example.com/g</loc><loc>https://www.example.com/g2</loc>",
        ),
        "scan",
    ),
    "invisible and control characters": (
        DOCS["urlset"]
        .replace(b"https://www.example.com/g", b"\xe2\x80\x8bhttps://www.example.com/g")
        .replace(b"https://www.example.com/h", b"https://www.example.com/h&#9;"),
        "scan",
    ),
    "relative to another host": (
        DOCS["urlset"].replace(b"https://www.example.com/g", b"//other.example/g"),
        "scan",
    ),
    "nonstandard lastmods, repeated": (
        DOCS["urlset"]
        .replace(b"2024-05-01T10:00:00+02:00", b"2024-05-01 10:00:00 +02:00")
        .replace(b"<lastmod>2030-01-01</lastmod>", b"<lastmod>2024-05-01 10:00:00 +02:00</lastmod>")
        .replace(b"<lastmod>1970-01-01</lastmod>", b"<lastmod>2024-05-01T10:00</lastmod>"),
        "scan",
    ),
    "declared US-ASCII, UTF-8 bytes": (
        DOCS["urlset"].replace(b'encoding="UTF-8"', b'encoding="US-ASCII"'),
        "scan",  # decoded in Python by the declared encoding, then read as UTF-8
    ),
    "a raw control character": (
        DOCS["urlset"].replace(b"example.com/g", b"example.com/\x01g"),
        "scan+lxml",
    ),
}


@pytest.mark.parametrize("name", sorted(ISSUE_22))
def test_issue_22_faults_read_the_same_by_both(name: str) -> None:
    """The rules of issue 22 give the same entries, counts and faults whichever parser
    reads the body, and the scanner keeps the bodies it can read."""
    body, parser = ISSUE_22[name]
    for size in (7, 64, 256 * 1024):
        reader = same(body, chunk_size=size)
        assert reader.parser == parser, reader.scan_stopped
    assert reader.faults or reader.counts["lastmod_nonstandard"], name


def test_entries_of_other_shapes_go_to_lxml_without_a_restart() -> None:
    # Core tags in another order: every entry would go through the light elements.
    entry = b"<url><lastmod>2024-05-01</lastmod><loc>https://www.example.com/%d</loc></url>"
    body = b"<urlset>" + b"".join(entry % i for i in range(40)) + b"</urlset>"
    reader = same(body, chunk_size=256)
    assert reader.parser == "lxml"
    assert reader.scan_stopped == "entries of shapes the scanner reads slower than lxml"
    assert reader.urls == 40


def test_a_long_entry_goes_to_lxml() -> None:
    big = b"<url><loc>https://www.example.com/x</loc>" + b" " * 1_400_000 + b"</url>"
    body = DOCS["urlset"].replace(b"</urlset>", big + b"</urlset>")
    reader = same(body)
    assert reader.parser == "scan+lxml"
    assert reader.scan_stopped is not None
    assert "longer than" in reader.scan_stopped


def test_a_long_run_of_white_space_goes_to_lxml() -> None:
    body = DOCS["urlset"].replace(b"</urlset>", b" " * 2_500_000 + b"</urlset>")
    reader = same(body)
    assert reader.parser == "scan+lxml"
    assert reader.scan_stopped == "more than 1048576 bytes of white space"


def test_nothing_read_yet_goes_to_lxml_without_a_restart() -> None:
    entry = b"<url><loc>https://www.example.com/</loc></url>"
    reader = same(b"<urlset><!-- c -->" + entry * 100 + b"</urlset>", chunk_size=100)
    assert reader.parser == "lxml"
    assert reader.scan_stopped == "a comment, CDATA section, DOCTYPE or PI"


# -- the fast paths: extensions, lastmods, entries ----------------------------------------

EXTENSIONS = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
  xmlns:xhtml="http://www.w3.org/1999/xhtml"
  xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc>https://www.example.com/1</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/1"/></url>
  <url><loc>https://www.example.com/2</loc><lastmod>2024-05-01T10:00:00Z</lastmod>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/2"/>
    <xhtml:link rel="alternate"  hreflang="fr"	href="https://www.example.com/fr/2" />
    <xhtml:link
      rel="alternate" hreflang="x-default" href="https://www.example.com/2"/>
  </url>
  <url><loc>https://www.example.com/3</loc>
    <xhtml:link rel="alter	nate" hreflang="de
AT" href="
 https://www.example.com/de/3	x "/>
    <xhtml:link rel="alternate" hreflang="fr" href=""/>
    <xhtml:link rel="alternate" hreflang="it" href=" 	 "/>
    <xhtml:link rel="" hreflang="" href="/relative"/>
  </url>
  <url><loc>https://www.example.com/4</loc>
    <image:image><image:loc>https://www.example.com/4.jpg</image:loc></image:image>
  </url>
  <url><loc>https://www.example.com/5</loc><changefreq>daily</changefreq>
    <image:image>
      <image:loc>
        https://www.example.com/5a.jpg
      </image:loc>
      <image:title>  A   title
	on two lines  </image:title>
    </image:image>
    <image:image><image:loc>https://www.example.com/5b.jpg</image:loc>
      <image:caption>A caption "quoted"</image:caption></image:image>
    <image:image><image:loc></image:loc><image:title></image:title>
      <image:caption>   </image:caption></image:image>
    <image:image><image:loc> </image:loc><image:title>t</image:title>
      <image:caption>c</image:caption></image:image>
  </url>
  <url><loc>https://www.example.com/6</loc><priority>0.4</priority>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/6"/>
    <image:image><image:loc>https://www.example.com/6.jpg</image:loc>
      <image:title>Six</image:title></image:image>
    <xhtml:link rel="alternate" hreflang="fr" href="https://www.example.com/fr/6"/>
  </url>
  <url><loc>https://www.example.com/7</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/7?a=1&amp;b=2"/>
  </url>
  <url><loc>https://www.example.com/8</loc>
    <image:image><image:loc>https://www.example.com/8.jpg</image:loc>
      <image:title>Caf\u00e9 &lt;8&gt;</image:title></image:image>
  </url>
  <url><loc>https://www.example.com/9</loc>
    <image:image><image:loc>https://www.example.com/9.jpg</image:loc>
      <image:title>del \x7f here</image:title></image:image>
  </url>
</urlset>
""".encode()


def test_extensions() -> None:
    reader = same(EXTENSIONS)
    assert reader.parser == "scan", reader.scan_stopped
    entries = list(SitemapReader(EXTENSIONS, BASE, now=NOW))
    assert [len(e.alternates) for e in entries] == [1, 3, 2, 0, 0, 2, 1, 0, 0]
    assert [len(e.images) for e in entries] == [0, 0, 0, 1, 4, 1, 0, 1, 1]
    assert entries[2].alternates[0] == {
        "rel": "alter nate",
        "hreflang": "de AT",
        "href": "https://www.example.com/de/3 x",
    }
    assert entries[4].images[0]["title"] == "A title on two lines"
    for name, body in variants(EXTENSIONS).items():
        same(body), name
    for size in (1, 7, 100, 333):
        same(EXTENSIONS, chunk_size=size)


@pytest.mark.parametrize("seed", range(3))
def test_extension_mutants(seed: int) -> None:
    for body in mutants(seed, EXTENSIONS, 150):
        same(body)


#: The shapes of shops and publishers (bench/corpus.py's heavy urlset) and the other
#: shapes the scanner's extension patterns take (``sitemaps/scanext.py``).
RICH = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
  xmlns:xhtml="http://www.w3.org/1999/xhtml"
  xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
  xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
  xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
  xmlns:mobile="http://www.google.com/schemas/sitemap-mobile/1.0">
  <url><loc>https://www.example.com/p/1?variant=2&amp;utm=x</loc>
    <lastmod>2024-05-01T10:00:00-05:00</lastmod><changefreq>daily</changefreq>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/p/1?a=1&amp;b=2"/>
    <image:image>
      <image:loc>https://cdn.example.com/1.jpg?v=1</image:loc>
      <image:title>Café Crème &amp; Co</image:title>
      <image:caption>A  caption—with ½ and &lt;tags&gt;.</image:caption>
    </image:image>
    <image:image><image:loc>https://cdn.example.com/2.jpg</image:loc></image:image>
  </url>
  <url><loc>https://www.example.com/2024/05/01/story.html</loc>
    <news:news>
      <news:publication>
        <news:name>The  Example Times</news:name>
        <news:language>en</news:language>
      </news:publication>
      <news:publication_date>2024-05-01T10:00:00+02:00</news:publication_date>
      <news:title>A title &amp; more</news:title>
      <news:keywords>a, b , ,c</news:keywords>
    </news:news>
    <image:image>
      <image:loc>https://cdn.example.com/3.jpg</image:loc>
      <image:caption>Caption first</image:caption>
      <image:title>then the title</image:title>
    </image:image>
  </url>
  <url><loc>https://www.example.com/3</loc>
    <news:news><news:publication><news:language>fr</news:language>
      <news:name>Le Quotidien</news:name></news:publication>
      <news:title>Order changed</news:title><news:genres>Blog, OpEd</news:genres>
      <news:access>Subscription</news:access><news:publication_date>bad</news:publication_date>
    </news:news>
    <image:image><image:loc>https://cdn.example.com/4.jpg</image:loc>
      <image:geo_location>Paris,  France</image:geo_location>
      <image:license>https://example.com/l</image:license></image:image>
    <mobile:mobile/>
  </url>
  <url><loc>https://www.example.com/v</loc>
    <video:video>
      <video:thumbnail_loc>https://www.example.com/t.jpg</video:thumbnail_loc>
      <video:title>A   video</video:title>
      <video:description>About it &amp; more</video:description>
      <video:content_loc>https://www.example.com/v.mp4</video:content_loc>
      <video:player_loc allow_embed="yes" autoplay="ap=1">https://www.example.com/p</video:player_loc>
      <video:duration>600</video:duration>
      <video:rating>4.2</video:rating>
      <video:view_count>12.0</video:view_count>
      <video:publication_date>2024-05-01T10:00:00Z</video:publication_date>
      <video:family_friendly>Yes</video:family_friendly>
      <video:restriction relationship="allow">IE GB  US</video:restriction>
      <video:price currency="EUR" type="own">1.50</video:price>
      <video:tag>one</video:tag><video:tag> two </video:tag>
      <video:uploader info="https://www.example.com/u">Someone</video:uploader>
      <video:gallery_loc title="A  gallery">https://www.example.com/g</video:gallery_loc>
      <video:content_segment_loc duration="30">https://www.example.com/s1</video:content_segment_loc>
      <video:live>no</video:live>
    </video:video>
  </url>
  <url><loc>https://www.example.com/4</loc>
    <xhtml:link href="https://www.example.com/fr/4" hreflang="fr" rel="alternate"/>
    <xhtml:link rel='alternate' hreflang='it' href='https://www.example.com/it/4'/>
  </url>
</urlset>
""".encode()


def test_rich_extensions_take_the_scanner_s_patterns() -> None:
    reader = same(RICH)
    assert reader.parser == "scan", reader.scan_stopped
    assert reader.scan_general == 0
    entries = list(SitemapReader(RICH, BASE, now=NOW))
    assert entries[0].images[0] == {
        "loc": "https://cdn.example.com/1.jpg?v=1",
        "caption": "A caption—with ½ and <tags>.",
        "title": "Café Crème & Co",
        "geo_location": None,
        "license": None,
    }
    assert entries[0].alternates[0]["href"] == "https://www.example.com/de/p/1?a=1&b=2"
    assert entries[1].news[0]["publication_name"] == "The Example Times"
    assert entries[1].news[0]["publication_date_utc"] == "2024-05-01T08:00:00Z"
    assert entries[1].news[0]["keywords"] == ["a", "b", "c"]
    assert entries[1].images[0]["title"] == "then the title"
    assert entries[2].mobile
    assert entries[3].videos[0]["player_loc_attrs"] == {"allow_embed": "yes", "autoplay": "ap=1"}
    assert [len(e.alternates) for e in entries] == [1, 0, 0, 0, 2]
    for name, body in variants(RICH).items():
        same(body), name
    for size in (1, 7, 100, 333):
        same(RICH, chunk_size=size)


@pytest.mark.parametrize("seed", range(4))
def test_rich_extension_mutants(seed: int) -> None:
    for body in mutants(seed, RICH, 200):
        same(body)


def test_url_entry_fields_are_in_the_order_the_scanner_passes_them() -> None:
    assert [f.name for f in dataclasses.fields(UrlEntry)] == [
        "loc",
        "lastmod",
        "changefreq",
        "priority",
        "news",
        "images",
        "videos",
        "alternates",
        "mobile",
        "pagemap",
        "relative",
        "position",
        "fragment",
    ]


LASTMOD_EDGES = [
    "2024-05-01",
    "2024-01-01",
    "2024-02-29",
    "2023-02-29",
    "2024-13-01",
    "2024-00-10",
    "2024-05-32",
    "0999-05-01",
    "1000-05-01",
    "1001-05-01",
    "9998-12-31",
    "9999-05-01",
    "1970-01-01",
    "1969-12-31T19:00:00-05:00",
    "1970-01-02T00:30:00+01:00",
    "2000-01-01T00:00:00Z",
    "1999-12-31T23:00:00-01:00",
    "2024-01-01T00:30:00+01:00",
    "2024-01-02T00:30:00+01:00",
    "2023-12-31T23:30:00-01:00",
    "2024-05-01T10:00",
    "2024-05-01T10:00Z",
    "2024-05-01T10:00:00",
    "2024-05-01T10:00:00Z",
    "2024-05-01T10:00:00+00:00",
    "2024-05-01T10:00:00-00:00",
    "2024-05-01T10:00:00+14:00",
    "2024-05-01T10:00:00-14:00",
    "2024-05-01T10:00:00+14:01",
    "2024-05-01T10:00:00-13:59",
    "2024-05-01T10:00:00+05:60",
    "2024-05-01T10:00:00+99:99",
    "2024-05-01T10:00:00.1Z",
    "2024-05-01T10:00:00.12+02:00",
    "2024-05-01T10:00:00.123-02:00",
    "2024-05-01T10:00:00.1234",
    "2024-05-01T10:00:00.12345Z",
    "2024-05-01T10:00:00.123456+05:30",
    "2024-05-01T10:00:00.1234567Z",
    "2024-05-01T10:00:00.000Z",
    "2024-05-01T24:00",
    "2024-05-01T24:00:00Z",
    "2024-05-01T23:59:60Z",
    "2024-05-01T25:00:00Z",
    "2024-05-01T10:60:00Z",
    "2024-05-01t10:00:00z",
    "2024-05-01 10:00:00",
    "2024-05-01T10:00:00+0200",
    "2024-05-01Z",
    "2024-05",
    "2024",
    "9998-12-31T23:59:59-14:00",
    "1001-01-01T00:00:00+14:00",
    "2030-01-01",
    "2030-06-01T10:00:00Z",
    "2025-01-02T00:00:00Z",
    "2025-01-02T00:00:01Z",
]
LASTMOD_NOWS = [
    None,
    NOW,
    dt.datetime(2025, 1, 1),
    dt.datetime(2025, 1, 1, 3, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    dt.datetime.max,
    dt.datetime.max.replace(tzinfo=dt.UTC),
    dt.datetime.min,
]


def _random_lastmods(seed: int, n: int) -> list[str]:
    """Values of every shape the fast path reads: any digits, or fields mostly in range."""
    rng = random.Random(seed)
    shapes = [shape.decode() for shape in dates._W3C_SHAPES]
    out = []
    for _ in range(n):
        shape = rng.choice(shapes)
        if rng.random() < 0.2:
            out.append("".join(str(rng.randrange(10)) if c == "9" else c for c in shape))
            continue
        edge = rng.choice((1000, 1001, 9998, 9999))
        year = rng.choice((rng.randint(1000, 9999), rng.randint(1990, 2030), 2024, edge))
        text = f"{year:04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 31):02d}"
        if len(shape) > 10:
            text += f"T{rng.randint(0, 24):02d}:{rng.randint(0, 60):02d}"
            if shape[16:19] == ":99":
                text += f":{rng.randint(0, 60):02d}"
            if "." in shape:
                fraction = shape.split(".")[1]
                digits = len(fraction) - len(fraction.lstrip("9"))
                text += "." + "".join(str(rng.randrange(10)) for _ in range(digits))
            if shape.endswith("Z"):
                text += "Z"
            elif shape[-6] in "+-":
                minutes = rng.choice((0, 30, 45, 59, 60))
                text += f"{shape[-6]}{rng.randint(0, 15):02d}:{minutes:02d}"
        assert text.encode().translate(dates._TO_SHAPE).decode() == shape, (text, shape)
        out.append(text)
    return out


def test_lastmod_fast_path_agrees_with_parse_lastmod() -> None:
    values = LASTMOD_EDGES + _random_lastmods(7, 20_000)
    fast = 0
    for text in values:
        for now in LASTMOD_NOWS:
            got = dates.w3c_lastmod(text.encode(), now)
            if got is None:
                continue
            fast += 1
            want = dates.parse_lastmod(text, now=now)
            assert got == want, (text, now)
            assert repr(got) == repr(want), (text, now)
            assert got.iso == want.iso, (text, now)  # the fast path's ISO text, precomputed
            assert got.value is not None
            assert got.value.tzinfo is dt.UTC
    assert fast > len(values) * 2  # the fast path is really taken
    for text in ("2024-05-01", "2024-05-01T10:00:00Z", "2024-05-01T10:00:00.5-05:00"):
        assert dates.w3c_lastmod(text.encode()) is not None, text


def test_lastmods_in_a_sitemap() -> None:
    entries = "".join(
        f"<url><loc>https://www.example.com/{i}</loc><lastmod>{text}</lastmod></url>"
        for i, text in enumerate(LASTMOD_EDGES * 2 + _random_lastmods(8, 500))
    )
    body = f"<urlset>{entries}</urlset>".encode()
    for now in (None, NOW):
        fast = SitemapReader(body, BASE, now=now)
        slow = SitemapReader(body, BASE, now=now, fast_path=False)
        assert outcome(fast) == outcome(slow)
        assert fast.parser == "scan"
