"""The pure core on hostile, broken and odd input: specific faults, bounded cost, nothing lost."""

from __future__ import annotations

import gzip
import resource
import zlib
from typing import Any
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.sitemaps import (
    BodyDecoder,
    Limits,
    SitemapReader,
    SitemapRef,
    UrlEntry,
    parse_lastmod,
    sniff,
)

BASE = "https://site.example/sitemap.xml"


def urlset(*locs: str, extra: str = "") -> bytes:
    body = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{extra}{body}</urlset>'
    ).encode()


def parse(body: bytes, url: str = BASE, **limits: Any) -> tuple[list[str], SitemapReader]:
    reader = SitemapReader(body, url, limits=Limits(**limits))
    return [e.loc for e in reader], reader


def codes(reader: SitemapReader) -> list[str]:
    return [f.code for f in reader.faults]


# -- sniffing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b'<?xml version="1.0"?>\n<!-- c --><urlset>', "urlset"),
        (b"<sitemapindex xmlns='x'>", "sitemapindex"),
        (b"<sm:urlset xmlns:sm='x'>", "urlset"),
        (b'<?xml version="1.0"?><rss version="2.0">', "rss"),
        (b'<rdf:RDF xmlns:rdf="x">', "rss"),
        (b'<feed xmlns="http://www.w3.org/2005/Atom">', "atom"),
        (b"<!DOCTYPE html>\n<html lang=en>", "html"),
        (b"<!DOCTYPE urlset [<!ENTITY a 'b'>]><urlset>", "urlset"),
        (b"\xef\xbb\xbf  \n<urlset>", "urlset"),
        (b"https://a.example/1\nhttps://a.example/2", "text"),
        (b"# comment\nhttps://a.example/1", "text"),
        (b"", "empty"),
        (b" \r\n\t", "empty"),
        (b'{"json": true}', "unknown"),
        (b"<foo><url><loc>x</loc></url></foo>", "xml"),
    ],
)
def test_sniff(head: bytes, kind: str) -> None:
    assert sniff(head) == kind


def test_sniff_utf16() -> None:
    assert sniff('<?xml version="1.0" encoding="UTF-16"?><urlset>'.encode("utf-16")) == "urlset"


# -- compression --------------------------------------------------------------------------


def test_gzip_by_magic_nested_and_concatenated() -> None:
    doc = urlset("https://site.example/a")
    assert parse(gzip.compress(doc))[0] == ["https://site.example/a"]
    assert parse(gzip.compress(gzip.compress(doc)))[0] == ["https://site.example/a"]
    two = gzip.compress(doc[:40]) + gzip.compress(doc[40:])
    locs, reader = parse(two)
    assert locs == ["https://site.example/a"]
    assert reader.decoder.layers == 1


def test_gzip_truncated_keeps_complete_entries() -> None:
    doc = urlset(*(f"https://site.example/{i}" for i in range(2000)))
    packed = gzip.compress(doc)
    locs, reader = parse(packed[: len(packed) // 2])
    assert 0 < len(locs) < 2000
    assert locs == [f"https://site.example/{i}" for i in range(len(locs))]
    assert "decompression_error" in codes(reader)


def test_gzip_trailing_garbage_is_a_fault_but_content_is_kept() -> None:
    locs, reader = parse(gzip.compress(urlset("https://site.example/a")) + b"JUNK")
    assert locs == ["https://site.example/a"]
    assert codes(reader) == ["decompression_error"]


def test_gzip_bomb_is_capped_in_time_and_memory() -> None:
    inflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = urlset("https://site.example/first").replace(b"</urlset>", b"")
    parts = [inflater.compress(head)]
    block = b" " * (1 << 20)
    parts += [inflater.compress(block) for _ in range(1024)]  # 1 GiB of whitespace
    parts.append(inflater.flush())
    bomb = b"".join(parts)
    assert len(bomb) < 2_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    locs, reader = parse(bomb, max_size=8 * 1024 * 1024)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert locs == ["https://site.example/first"]
    assert "too_large" in codes(reader)
    assert reader.decoder.size == 8 * 1024 * 1024
    assert grown_kib < 64 * 1024


def test_decoder_caps_plain_bodies() -> None:
    decoder = BodyDecoder(b"x" * 1000, max_size=100, chunk_size=64)
    assert b"".join(decoder) == b"x" * 100
    assert [f.code for f in decoder.faults] == ["too_large"]


# -- hostile XML --------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://site.example/before</loc></url>
<url><loc>https://site.example/&lol9;</loc></url>
<url><loc>https://site.example/after</loc></url>
</urlset>"""


def test_billion_laughs_is_never_expanded_and_the_rest_is_read() -> None:
    locs, reader = parse(BILLION_LAUGHS)
    assert locs == ["https://site.example/before", "https://site.example/after"]
    assert codes(reader) == ["xml_entities"]
    assert reader.counts["loc_unexpanded_entity"] == 1


def test_quadratic_blowup_is_not_expanded() -> None:
    big = "A" * 100_000
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "{big}">]><urlset>'
        + "<url><loc>https://site.example/x"
        + "&a;" * 10_000
        + "</loc></url>"
        + "<url><loc>https://site.example/ok</loc></url></urlset>"
    ).encode()
    locs, reader = parse(doc)
    assert locs == ["https://site.example/ok"]
    assert "xml_entities" in codes(reader)


def test_external_entity_and_dtd_are_never_fetched(tmp_path: Any) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("https://site.example/SECRET")
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY leak SYSTEM "' + secret.as_uri() + '">')
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "{dtd.as_uri()}">'
        f"<urlset><url><loc>&leak;</loc></url><url><loc>https://site.example/ok</loc></url></urlset>"
    ).encode()
    locs, reader = parse(doc)
    assert locs == ["https://site.example/ok"]
    assert "xml_entities" in codes(reader)


def test_deep_nesting_is_an_error_after_the_entries_before_it() -> None:
    doc = urlset("https://site.example/a").replace(
        b"</urlset>", b"<x>" * 10_000 + b"</x>" * 10_000 + b"</urlset>"
    )
    locs, reader = parse(doc)
    assert locs == ["https://site.example/a"]
    assert codes(reader) == ["xml_syntax_error"]


def test_huge_text_node_is_refused() -> None:
    doc = urlset("https://site.example/a", "https://site.example/" + "x" * 12_000_000)
    locs, _reader = parse(doc)
    assert locs[0] == "https://site.example/a"
    assert "https://site.example/" + "x" * 12_000_000 not in locs


def test_truncated_xml_keeps_every_complete_entry() -> None:
    doc = urlset(*(f"https://site.example/{i}" for i in range(100)))
    locs, reader = parse(doc[: len(doc) - 60])
    assert locs == [f"https://site.example/{i}" for i in range(98)]
    assert codes(reader) == ["xml_syntax_error"]
    assert reader.counts["entry_truncated"] == 1


def test_html_soft_404_is_recognised_not_parsed() -> None:
    locs, reader = parse(b"<!DOCTYPE html><html><body><a href='https://site.example/x'>x</a>")
    assert locs == []
    assert reader.kind == "html"
    assert codes(reader) == ["html"]


def test_empty_and_unknown() -> None:
    assert codes(parse(b"")[1]) == ["empty"]
    assert codes(parse(b"\x00\x01\x02binary")[1]) == ["unknown_format"]


# -- tolerance ----------------------------------------------------------------------------


def test_tolerant_forms() -> None:
    doc = (
        b"\xef\xbb\xbf \n\t<?xml version='1.0'?>"
        b"<x:urlset xmlns:x='urn:wrong-namespace'>"
        b"<x:url><x:loc>\n  https://site.example/ns  \n</x:loc></x:url>"
        b"<url><loc><![CDATA[https://site.example/cdata?a=1&b=2]]></loc></url>"
        b"</x:urlset>"
    )
    assert parse(doc)[0] == ["https://site.example/ns", "https://site.example/cdata?a=1&b=2"]


def test_unescaped_ampersand_is_kept() -> None:
    locs, reader = parse(urlset("https://site.example/p?a=1&b=2&amp;c=3&#38;d=4"))
    assert locs == ["https://site.example/p?a=1&b=2&c=3&d=4"]
    assert reader.faults == []


def test_unescaped_ampersand_across_chunks() -> None:
    loc = "https://site.example/p?" + "&".join(f"k{i}=v" for i in range(200))
    locs, _ = parse(urlset(loc), chunk_size=7)
    assert locs == [loc]


def test_comment_inside_loc() -> None:
    assert parse(urlset("https://site.<!-- c -->example/z"))[0] == ["https://site.example/z"]


def test_declared_latin1_and_undeclared_cp1252() -> None:
    declared = urlset("https://site.example/caf").replace(b"caf<", b"caf\xe9<")
    declared = declared.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"')
    assert parse(declared)[0] == ["https://site.example/caf%C3%A9"]
    undeclared = b"<urlset><url><loc>https://site.example/caf\xe9</loc></url></urlset>"
    locs, reader = parse(undeclared)
    assert locs == ["https://site.example/caf%C3%A9"]
    assert reader.counts["encoding_guessed"] == 1


def test_utf16_with_bom() -> None:
    doc = '<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>https://site.example/é</loc></url></urlset>'
    assert parse(doc.encode("utf-16"))[0] == ["https://site.example/%C3%A9"]


def test_iri_host_and_path() -> None:
    assert parse(urlset("https://bücher.example/straße"))[0] == [
        "https://xn--bcher-kva.example/stra%C3%9Fe"
    ]


def test_locations_checked_and_counted() -> None:
    long = "https://site.example/" + "a" * 2100
    locs, reader = parse(
        urlset(
            "/relative",
            "page.html",
            "//site.example/proto-relative",
            "javascript:alert(1)",
            "data:text/html,x",
            "mailto:a@site.example",
            long,
            "",
        )
    )
    assert locs == [
        "https://site.example/relative",
        "https://site.example/page.html",
        "https://site.example/proto-relative",
    ]
    assert dict(reader.counts) == {
        "loc_relative": 3,
        "loc_bad_scheme": 3,
        "loc_too_long": 1,
        "loc_missing": 1,
    }


def test_protocol_url_limit_kept_and_flagged_or_dropped() -> None:
    doc = urlset(*(f"https://site.example/{i}" for i in range(12)))
    locs, reader = parse(doc, max_urls=10)
    assert len(locs) == 12
    assert codes(reader) == ["too_many_urls"]
    assert reader.counts["over_url_limit"] == 2
    locs, reader = parse(doc, max_urls=10, keep_excess=False)
    assert locs == [f"https://site.example/{i}" for i in range(10)]
    assert codes(reader) == ["too_many_urls"]


def test_mixed_urlset_and_index() -> None:
    doc = (
        b"<urlset><url><loc>https://site.example/page</loc></url>"
        b"<sitemap><loc>https://site.example/child.xml</loc><lastmod>2024-01-01</lastmod></sitemap>"
        b"</urlset>"
    )
    entries = list(SitemapReader(doc, BASE))
    assert [type(e).__name__ for e in entries] == ["UrlEntry", "SitemapRef"]


def test_priority_and_changefreq() -> None:
    doc = (
        b"<urlset><url><loc>https://site.example/a</loc><priority>1.5</priority>"
        b"<changefreq> DAILY </changefreq></url>"
        b"<url><loc>https://site.example/b</loc><priority>high</priority></url>"
        b"<url><loc>https://site.example/c</loc><priority>0.3</priority></url></urlset>"
    )
    reader = SitemapReader(doc, BASE)
    entries = [e for e in reader if isinstance(e, UrlEntry)]
    assert [(e.priority, e.changefreq) for e in entries] == [
        (None, "daily"),
        (None, None),
        (0.3, None),
    ]
    assert reader.counts["priority_invalid"] == 2


# -- text, RSS, Atom ----------------------------------------------------------------------


def test_text_sitemap() -> None:
    body = b"\xef\xbb\xbf# list\r\nhttps://site.example/a\r\n\r\n  https://site.example/b  \nnot a url\nhttps://site.example/c"
    locs, reader = parse(body, "https://site.example/sitemap.txt")
    assert locs == [
        "https://site.example/a",
        "https://site.example/b",
        "https://site.example/not%20a%20url",
        "https://site.example/c",
    ]
    assert reader.kind == "text"


def test_text_sitemap_across_chunks_and_utf16() -> None:
    lines = [f"https://site.example/{i}" for i in range(500)]
    body = "\n".join(lines).encode()
    assert parse(body, chunk_size=13)[0] == lines
    assert parse("\n".join(lines[:3]).encode("utf-16"))[0] == lines[:3]


def test_rss_and_atom() -> None:
    rss = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>T</title>
    <link>https://site.example/</link>
    <item><title>a</title><link>https://site.example/a</link>
      <pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
    <item><guid isPermaLink="true">https://site.example/b</guid></item>
    <item><guid isPermaLink="false">tag:1</guid></item>
    </channel></rss>"""
    entries = [
        e for e in SitemapReader(rss, "https://site.example/feed") if isinstance(e, UrlEntry)
    ]
    assert [(e.loc, e.lastmod.iso if e.lastmod else None) for e in entries] == [
        ("https://site.example/a", "2003-06-10T04:00:00Z"),
        ("https://site.example/b", None),
    ]
    atom = b"""<feed xmlns="http://www.w3.org/2005/Atom"><link href="https://site.example/"/>
    <entry><link rel="edit" href="https://site.example/edit"/><link href="/rel"/>
    <updated>2024-01-02T03:04:05+01:00</updated></entry></feed>"""
    entries = [
        e for e in SitemapReader(atom, "https://site.example/atom") if isinstance(e, UrlEntry)
    ]
    assert [(e.loc, e.lastmod.iso if e.lastmod else None) for e in entries] == [
        ("https://site.example/rel", "2024-01-02T02:04:05Z")
    ]


# -- properties ---------------------------------------------------------------------------

_segment = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12
)
_lastmod = st.datetimes(
    min_value=__import__("datetime").datetime(1990, 1, 1),
    max_value=__import__("datetime").datetime(2090, 1, 1),
    timezones=st.just(__import__("datetime").UTC),
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_segment, min_size=1, max_size=3),
            st.none() | _lastmod,
            st.none() | st.sampled_from(["daily", "weekly", "never"]),
            st.none() | st.integers(0, 10).map(lambda i: i / 10),
        ),
        max_size=30,
    ),
    st.sampled_from([1, 5, 64, 1 << 16]),
    st.booleans(),
)
def test_parse_of_serialised_entries_round_trips(
    entries: list[tuple[list[str], Any, str | None, float | None]], chunk: int, gz: bool
) -> None:
    from w3lib.url import safe_url_string

    parts = []
    expected = []
    for path, lastmod, changefreq, priority in entries:
        loc = safe_url_string("https://site.example/" + "/".join(path))
        xml = f"<url><loc>{escape(loc)}</loc>"
        if lastmod is not None:
            xml += f"<lastmod>{lastmod.isoformat()}</lastmod>"
        if changefreq is not None:
            xml += f"<changefreq>{changefreq}</changefreq>"
        if priority is not None:
            xml += f"<priority>{priority}</priority>"
        parts.append(xml + "</url>")
        expected.append((loc, lastmod, changefreq, priority))
    doc = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(parts)
        + "</urlset>"
    ).encode()
    if gz:
        doc = gzip.compress(doc)
    reader = SitemapReader(doc, BASE, limits=Limits(chunk_size=chunk))
    got = [
        (e.loc, e.lastmod.value if e.lastmod else None, e.changefreq, e.priority)
        for e in reader
        if isinstance(e, UrlEntry)
    ]
    assert got == expected
    assert reader.faults == []


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([3, 64, 4096]))
def test_arbitrary_bytes_never_raise(data: bytes, chunk: int) -> None:
    for body in (data, b"<urlset>" + data, gzip.compress(data)[: max(len(data) // 2, 2)]):
        reader = SitemapReader(body, BASE, limits=Limits(chunk_size=chunk, max_size=100_000))
        for entry in reader:
            assert isinstance(entry, (UrlEntry, SitemapRef))
            assert entry.loc.startswith(("http://", "https://"))


def test_lastmod_parse_used_by_reader() -> None:
    doc = (
        b"<urlset><url><loc>https://site.example/a</loc>"
        b"<lastmod>2024-05-01 10:00</lastmod></url></urlset>"
    )
    (entry,) = list(SitemapReader(doc, BASE))
    assert isinstance(entry, UrlEntry)
    assert entry.lastmod == parse_lastmod("2024-05-01 10:00")


@pytest.mark.parametrize("fast_path", [True, False])
def test_reference_to_a_surrogate_is_a_fault_not_an_exception(fast_path: bool) -> None:
    # libxml2's recovery keeps "&#xD800;" as bytes lxml cannot decode: the entry goes,
    # counted, the others stay, and the document is reported malformed.
    doc = urlset(
        "https://site.example/a", "https://site.example/b&#xD800;", "https://site.example/c"
    )
    reader = SitemapReader(doc, BASE, fast_path=fast_path)
    locs = [e.loc for e in reader]
    assert locs == ["https://site.example/a", "https://site.example/c"]
    assert reader.counts["entry_undecodable"] == 1
    assert codes(reader) == ["xml_syntax_error"]
    assert reader.parser == ("scan+lxml" if fast_path else "lxml")
