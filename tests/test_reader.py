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


def test_huge_text_node_is_cut_out_and_the_rest_read() -> None:
    # libxml2 stops a parse at a text node over 10 MB: the reader cuts such a node out of
    # the stream first (issue 22), so the entries after a 30 MB one are read.
    doc = urlset(
        "https://site.example/a",
        "https://site.example/" + "x" * 30_000_000,
        "https://site.example/b",
    )
    locs, reader = parse(doc)
    assert locs == ["https://site.example/a", "https://site.example/b"]
    assert codes(reader) == ["text_too_long", "loc_too_long"]
    assert reader.counts["loc_too_long"] == 1


def test_long_white_space_is_dropped_without_a_fault() -> None:
    doc = urlset("https://site.example/a", extra=" \n" * 6_000_000).replace(
        b"</urlset>", b"<url><loc>https://site.example/b</loc></url></urlset>"
    )
    locs, reader = parse(doc, chunk_size=7_777)
    assert locs == ["https://site.example/a", "https://site.example/b"]
    assert codes(reader) == []


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


def test_unescaped_ampersand_is_kept_and_a_fault() -> None:
    locs, reader = parse(
        urlset("https://site.example/p?a=1&b=2&amp;c=3&#38;d=4", "https://site.example/q?x&y&z")
    )
    assert locs == ["https://site.example/p?a=1&b=2&c=3&d=4", "https://site.example/q?x&y&z"]
    assert codes(reader) == ["bare_ampersand"]  # once, at the first
    assert "'https://site.example/p?a=1&b=2&amp;c=3&#38;d=4'" in reader.faults[0].message
    assert reader.counts["bare_ampersand"] == 3  # every one


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


@pytest.mark.parametrize("fast_path", [True, False])
def test_mixed_urlset_and_index(fast_path: bool) -> None:
    # Both are read (the file says them), and the mix is a fault (issue 22).
    doc = urlset("https://site.example/page").replace(
        b"</urlset>",
        b"<sitemap><loc>https://site.example/child.xml</loc><lastmod>2024-01-01</lastmod>"
        b"</sitemap></urlset>",
    )
    reader = SitemapReader(doc, BASE, fast_path=fast_path)
    assert [type(e).__name__ for e in reader] == ["UrlEntry", "SitemapRef"]
    assert codes(reader) == ["mixed_entries"]
    assert "'<sitemap> in a <urlset>'" in reader.faults[0].message
    index = doc.replace(b"urlset", b"sitemapindex")
    reader = SitemapReader(index, BASE, fast_path=fast_path)
    assert [type(e).__name__ for e in reader] == ["UrlEntry", "SitemapRef"]
    assert codes(reader) == ["mixed_entries"]
    assert reader.counts["mixed_entries"] == 1


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
    assert locs == ["https://site.example/a", "https://site.example/b", "https://site.example/c"]
    assert reader.kind == "text"
    assert codes(reader) == ["loc_not_absolute"]  # never resolved against the file's URL
    assert dict(reader.counts) == {"loc_not_absolute": 1}


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
        expected.append((loc.partition("#")[0], lastmod, changefreq, priority))  # no fragment
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


# -- issue 22: never emit what the file did not say; every fault visible -------------------


def test_only_xml_white_space_is_stripped_and_a_control_character_drops_the_location() -> None:
    page = "https://site.example/"
    locs, reader = parse(
        urlset(
            f"\r\n \t{page}padded \n",
            f"{page}tab\tinside",
            f"{page}new\nline",
            f"{page}bell&#7;ref",
            f"{page}raw\x01byte",  # XML does not allow it: libxml2 dropped it silently
            f"{page}del\x7fchar",
            f"{page}nel\x85c1",
        )
    )
    assert locs == [f"{page}padded"]
    assert reader.counts["loc_control_chars"] == 6
    assert codes(reader) == ["loc_control_chars", "xml_syntax_error"]  # (&#7; is malformed)
    assert "'https://site.example/tab\\tinside'" in reader.faults[0].message


def test_invisible_characters_inside_drop_a_location_at_its_ends_are_stripped() -> None:
    locs, reader = parse(
        urlset(
            "\u200bhttps://site.example/zero-width",
            "\ufeffhttps://site.example/bom",
            "https://site.example/bom\ufeffinside",
            "https://site.example/rtl\u202emark",
            "https://site.example/nbsp\xa0",
            "https://site.example/\u0645\u06cc\u200c\u062e",  # ZWNJ: Persian needs it
            "https://site.example/no-break\xa0inside",
            "\u200b /relative\u2060",
            "\u200b\ufeff",
        )
    )
    assert locs == [
        "https://site.example/zero-width",
        "https://site.example/bom",
        "https://site.example/nbsp",
        "https://site.example/%D9%85%DB%8C%E2%80%8C%D8%AE",
        "https://site.example/no-break%C2%A0inside",
        "https://site.example/relative",
    ]
    assert dict(reader.counts) == {
        "loc_invisible_padding": 5,
        "loc_invisible_chars": 2,
        "loc_missing": 1,
        "loc_relative": 1,
    }
    assert codes(reader) == ["loc_invisible_padding", "loc_invisible_chars", "loc_missing"]


def test_undecodable_bytes_drop_their_location() -> None:
    body = urlset("https://site.example/a", "https://site.example/bXX", "https://site.example/c")
    locs, reader = parse(body.replace(b"XX", b"\xff\xfe"))  # declared UTF-8
    assert locs == ["https://site.example/a", "https://site.example/c"]
    assert reader.counts["loc_undecodable"] == 1
    assert codes(reader) == ["loc_undecodable", "xml_syntax_error"]
    # A text sitemap: UTF-8 at its start, then a byte that is not.
    lines = [f"https://site.example/{i}" for i in range(4000)]
    text = "\n".join(lines).encode() + b"\nhttps://site.example/caf\xe9\nhttps://site.example/z\n"
    locs, reader = parse(text, "https://site.example/s.txt")
    assert locs == [*lines, "https://site.example/z"]
    assert codes(reader) == ["loc_undecodable"]
    # A text sitemap not in UTF-8 from its start is read as windows-1252.
    locs, reader = parse(b"https://site.example/caf\xe9\n", "https://site.example/s.txt")
    assert locs == ["https://site.example/caf%C3%A9"]
    assert dict(reader.counts) == {"encoding_guessed": 1}


def test_relative_locations_stay_on_the_sitemap_host() -> None:
    locs, reader = parse(
        urlset(
            "page",
            "/root-page",
            "../up",
            "//www.site.example/twin",
            "//other.example/x",
            "?page=2",
            "#top",
        ),
        "https://site.example/blog/sitemap.xml",
    )
    assert locs == [
        "https://site.example/blog/page",
        "https://site.example/root-page",
        "https://site.example/up",
        "https://www.site.example/twin",
    ]
    assert dict(reader.counts) == {
        "loc_relative": 4,
        "loc_relative_other_host": 1,
        "loc_query_or_fragment": 2,
    }
    assert codes(reader) == ["loc_relative_other_host", "loc_query_or_fragment"]


def test_a_text_line_is_never_resolved() -> None:
    body = b"https://site.example/a\n/relative\npage.html\n//site.example/b\nftp://x/\n"
    locs, reader = parse(body, "https://site.example/sitemap.txt")
    assert locs == ["https://site.example/a"]
    assert dict(reader.counts) == {"loc_not_absolute": 3, "loc_bad_scheme": 1}
    assert "'/relative'" in reader.faults[0].message


def test_atom_xml_base_is_the_base_of_relative_links() -> None:
    atom = b"""<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://cdn.example/blog/">
    <entry><link href="post-1"/></entry>
    <entry xml:base="/news/"><link href="post-2"/></entry>
    <entry><link href="https://site.example/absolute"/></entry></feed>"""
    locs, reader = parse(atom, "https://site.example/feeds/atom.xml")
    assert locs == [
        "https://cdn.example/blog/post-1",
        "https://cdn.example/news/post-2",
        "https://site.example/absolute",
    ]
    assert reader.counts["loc_relative"] == 2
    assert reader.faults == []


@pytest.mark.parametrize(
    ("body", "kind", "message"),
    [
        (
            b'<?xml version="1.0"?><Error><Code>NoSuchKey</Code>'
            b"<Message>The specified key does not exist.</Message><Key>sitemap.xml</Key></Error>",
            "error_document",
            "the body is an XML error document <Error> ('NoSuchKey: The specified key does not "
            "exist.'), not a sitemap",
        ),
        (
            b"<pages><url><loc>https://site.example/a</loc></url></pages>",
            "unknown_root",
            "the body is XML whose root <pages> is not a sitemap's (urlset, sitemapindex, rss, "
            "feed); nothing was read",
        ),
    ],
)
def test_xml_that_is_not_a_sitemap_is_a_named_fault(body: bytes, kind: str, message: str) -> None:
    locs, reader = parse(body)
    assert (locs, reader.kind) == ([], kind)
    assert [(f.code, f.message) for f in reader.faults] == [(kind, message)]


@pytest.mark.parametrize(
    ("root", "faults"),
    [
        ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">', []),
        ('<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9">', []),
        ('<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">', []),
        ("<urlset>", ["namespace_missing"]),
        ('<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9">', ["namespace_wrong"]),
        (
            '<s:urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:s="x">',
            ["namespace_wrong"],
        ),
    ],
)
def test_a_missing_or_wrong_namespace_is_a_fault_and_read(root: str, faults: list[str]) -> None:
    end = "</s:urlset>" if root.startswith("<s:") else "</urlset>"
    url = "<s:url><s:loc>https://site.example/a</s:loc></s:url>" if end.startswith("</s") else ""
    url = url or "<url><loc>https://site.example/a</loc></url>"
    locs, reader = parse((root + url + end).encode())
    assert locs == ["https://site.example/a"]
    assert codes(reader) == faults


@pytest.mark.parametrize("fast_path", [True, False])
def test_upper_case_tags_are_read_and_a_fault(fast_path: bool) -> None:
    body = (
        b'<URLSET xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<URL><LOC>https://site.example/a</LOC><LASTMOD>2024-05-01</LASTMOD></URL>"
        b"<Url><Loc>https://site.example/b</Loc></Url>"
        b"<url><loc>https://site.example/c</loc><LastMod>2024-05-02</LastMod></url>"
        b"<url><loc>https://site.example/d</loc></url></URLSET>"
    )
    reader = SitemapReader(body, BASE, fast_path=fast_path)
    entries = [e for e in reader if isinstance(e, UrlEntry)]
    assert [(e.loc, e.lastmod and e.lastmod.iso) for e in entries] == [
        ("https://site.example/a", "2024-05-01T00:00:00Z"),
        ("https://site.example/b", None),
        ("https://site.example/c", "2024-05-02T00:00:00Z"),
        ("https://site.example/d", None),
    ]
    assert codes(reader) == ["tag_case"]  # once: at the root, the first
    assert reader.counts["tag_case"] == 3  # every entry


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_second_loc_is_dropped_the_first_read(fast_path: bool) -> None:
    body = urlset("https://site.example/x").replace(
        b"<loc>https://site.example/x</loc>",
        b"<loc>https://site.example/first</loc><loc>https://site.example/second</loc>",
    )
    reader = SitemapReader(body, BASE, fast_path=fast_path)
    assert [e.loc for e in reader] == ["https://site.example/first"]
    assert codes(reader) == ["loc_repeated"]


def test_gzip_beyond_the_layers_peeled_is_a_fault() -> None:
    body = urlset("https://site.example/a")
    for layers, want in ((3, ["https://site.example/a"]), (4, [])):
        packed = body
        for _ in range(layers):
            packed = gzip.compress(packed)
        locs, reader = parse(packed)
        assert locs == want
        assert codes(reader) == ([] if want else ["gzip_layers", "unknown_format"])


def test_an_entry_fault_is_recorded_once_per_file_and_counted_per_entry() -> None:
    locs, reader = parse(
        urlset(*(f"ftp://ftp.example/{i}" for i in range(5)), "https://site.example/ok")
    )
    assert locs == ["https://site.example/ok"]
    assert [(f.code, f.message) for f in reader.faults] == [
        (
            "loc_bad_scheme",
            "location on a scheme other than http(s), dropped: 'ftp://ftp.example/0' "
            "(the first; each is counted)",
        )
    ]
    assert reader.counts["loc_bad_scheme"] == 5


@pytest.mark.parametrize("fast_path", [True, False])
def test_nonstandard_lastmods_are_kept_flagged_and_counted(fast_path: bool) -> None:
    values = ["May 6, 2024", "2024-05-06 07:08:09 +02:00", "2024-05-06T07:08:09Z", "2024-05-06"]
    body = urlset(*(f"https://site.example/{i}" for i in range(len(values) * 2)))
    for i, value in enumerate(values * 2):  # twice: the scanner caches the second
        body = body.replace(
            f"/{i}</loc>".encode(), f"/{i}</loc><lastmod>{value}</lastmod>".encode()
        )
    reader = SitemapReader(body, BASE, fast_path=fast_path)
    entries = [e for e in reader if isinstance(e, UrlEntry)]
    flagged = [e.lastmod is not None and "nonstandard" in e.lastmod.flags for e in entries]
    assert flagged == [True, True, False, False] * 2
    assert [e.lastmod.iso for e in entries if e.lastmod][:2] == [
        "2024-05-06T00:00:00Z",
        "2024-05-06T05:08:09Z",
    ]
    assert reader.counts["lastmod_nonstandard"] == 4
    assert reader.faults == []  # a count and an item flag, not a fault


@pytest.mark.parametrize(
    ("declared", "locs", "faults"),
    [
        # bytes invalid in the declared encoding: only their location is dropped (libxml2
        # stopped at the first, and every location was lost)
        ("US-ASCII", ["https://site.example/b"], ["loc_undecodable"]),
        # a UTF-16 declaration on bytes that are not wide: read as UTF-8 (all was lost)
        ("UTF-16", ["https://site.example/caf%C3%A9", "https://site.example/b"], []),
        # what the file said, in the encoding it names
        ("ISO-8859-1", ["https://site.example/caf%C3%83%C2%A9", "https://site.example/b"], []),
        # a name no codec has: libxml2 says so and reads UTF-8, as before
        ("no-such-codec", ["https://site.example/caf%C3%A9", "https://site.example/b"], None),
    ],
)
@pytest.mark.parametrize("fast_path", [True, False])
def test_the_declared_encoding_decodes_the_body(
    declared: str, locs: list[str], faults: list[str] | None, fast_path: bool
) -> None:
    body = urlset("https://site.example/caf\u00e9", "https://site.example/b")
    body = body.replace(b'encoding="UTF-8"', f'encoding="{declared}"'.encode())
    reader = SitemapReader(body, BASE, fast_path=fast_path)
    assert [e.loc for e in reader] == locs
    assert codes(reader) == (faults if faults is not None else ["xml_syntax_error"])
