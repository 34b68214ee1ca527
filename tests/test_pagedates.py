"""Tests for sitemapcrawl.verify.pagedates (declared page dates and content fingerprint)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from pathlib import Path

import extruct
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.verify.fingerprint import content_fingerprint
from sitemapcrawl.verify.pagedates import MAX_HTML_BYTES, DateEvidence, PageEvidence, page_evidence

ROOT = Path(__file__).resolve().parents[1]
PAGES = Path(__file__).parent / "data" / "pages"
URL = "https://news.example/story/a-story"
DATE = "Tue, 11 Jun 2024 10:00:00 GMT"  # 2024-06-11T10:00:00Z
HEADERS = {
    "Date": DATE,
    "Last-Modified": "Mon, 10 Jun 2024 08:00:00 GMT",
    "ETag": '"v1-abc"',
    "Content-Type": "text/html; charset=utf-8",
}
HTTP_LM = ("http", "last-modified", "2024-06-10T08:00:00Z", True)
FAST = settings(max_examples=100, deadline=None)


def evidence(name: str, headers: dict[str, str] | None = None) -> PageEvidence:
    return page_evidence((PAGES / name).read_bytes(), URL, HEADERS if headers is None else headers)


def rows(items: tuple[DateEvidence, ...]) -> list[tuple[str, str, str | None, bool]]:
    return [(e.source, e.field, e.value.iso if e.value else None, e.main_entity) for e in items]


def best(ev: PageEvidence) -> tuple[str, str, str | None] | None:
    b = ev.best_modified
    return None if b is None else (b.source, b.field, b.value.iso if b.value else None)


# (fixture, best_modified, modified candidates, published candidates, problems)
FIXTURES = [
    pytest.param(
        "jsonld_simple.html",
        ("json-ld", "dateModified", "2024-05-06T05:08:09Z"),
        [
            ("json-ld", "dateModified", "2024-05-06T05:08:09Z", True),
            HTTP_LM,
            ("json-ld", "dateModified", "2023-01-01T00:00:00Z", False),  # the author's
        ],
        [("json-ld", "datePublished", "2024-05-01T06:00:00Z", True)],
        (),
        id="jsonld-simple",
    ),
    pytest.param(
        "jsonld_graph.html",
        ("json-ld", "dateModified", "2024-05-06T05:08:09Z"),
        [
            ("json-ld", "dateModified", "2024-05-06T05:08:09Z", True),  # WebPage
            ("json-ld", "dateModified", "2024-05-06T05:08:09Z", True),  # Article
            ("opengraph", "article:modified_time", "2024-05-06T05:08:09Z", True),
            HTTP_LM,
            ("json-ld", "dateModified", "2024-06-10T00:00:00Z", False),  # breadcrumb items
            ("json-ld", "dateModified", "2024-06-09T00:00:00Z", False),
            ("json-ld", "dateModified", "2024-06-01T00:00:00Z", False),  # Person
        ],
        [
            ("json-ld", "datePublished", "2024-05-01T06:00:00Z", True),
            ("json-ld", "datePublished", "2024-05-01T06:00:00Z", True),
            ("opengraph", "article:published_time", "2024-05-01T06:00:00Z", True),
        ],
        (),
        id="jsonld-graph",
    ),
    pytest.param(
        "jsonld_main_entity.html",
        ("json-ld", "dateModified", "2024-03-15T12:30:00Z"),
        [
            ("json-ld", "dateModified", "2024-03-15T12:30:00Z", True),  # WebPage.mainEntity
            HTTP_LM,
            ("json-ld", "dateModified", "2024-06-01T00:00:00Z", False),  # author
            ("json-ld", "dateModified", "2024-06-02T00:00:00Z", False),  # comment
            ("json-ld", "dateModified", "2024-06-04T00:00:00Z", False),  # relatedLink
            ("json-ld", "dateModified", "2024-06-05T00:00:00Z", False),  # other product
            ("json-ld", "dateModified", "2024-06-06T00:00:00Z", False),  # its offer
        ],
        [
            ("json-ld", "datePublished", "2024-03-01T00:00:00Z", True),
            ("json-ld", "datePublished", "2024-06-03T00:00:00Z", False),
        ],
        (),
        id="jsonld-main-entity",
    ),
    pytest.param(
        "jsonld_conflict.html",
        ("json-ld", "dateModified", "2024-04-20T10:00:00Z"),
        [
            ("json-ld", "dateModified", "2024-04-20T10:00:00Z", True),
            ("json-ld", "dateModified", "2024-04-01T10:00:00Z", True),
            HTTP_LM,
        ],
        [],
        ("conflicting_modified",),
        id="jsonld-conflict",
    ),
    pytest.param(
        "jsonld_broken_microdata.html",
        ("microdata", "dateModified", "2024-02-10T08:00:00Z"),
        [("microdata", "dateModified", "2024-02-10T08:00:00Z", True), HTTP_LM],
        [("microdata", "datePublished", "2024-02-01T00:00:00Z", True)],
        ("json-ld_invalid",),
        id="broken-jsonld-good-microdata",
    ),
    pytest.param(
        "microdata_only.html",
        ("microdata", "dateModified", "2024-01-20T16:45:00Z"),
        [
            ("microdata", "dateModified", "2024-01-20T16:45:00Z", True),
            HTTP_LM,
            ("microdata", "dateModified", "2024-06-01T00:00:00Z", False),
            ("microdata", "dateModified", "2024-06-02T00:00:00Z", False),
        ],
        [("microdata", "datePublished", "2024-01-05T00:00:00Z", True)],
        (),
        id="microdata",
    ),
    pytest.param(
        "rdfa_only.html",
        ("rdfa", "dateModified", "2023-12-24T23:00:00Z"),
        [
            ("rdfa", "dateModified", "2023-12-24T23:00:00Z", True),
            HTTP_LM,
            ("rdfa", "dateModified", "2024-06-01T00:00:00Z", False),
        ],
        [("rdfa", "datePublished", "2023-11-02T00:00:00Z", True)],
        (),
        id="rdfa",
    ),
    pytest.param(
        "opengraph_only.html",
        ("opengraph", "article:modified_time", "2024-02-02T02:04:05Z"),
        [
            ("opengraph", "article:modified_time", "2024-02-02T02:04:05Z", True),
            ("opengraph", "og:updated_time", "2024-02-02T02:02:02Z", True),
            HTTP_LM,
        ],
        [("opengraph", "article:published_time", "2024-01-01T01:01:01Z", True)],
        (),
        id="opengraph",
    ),
    pytest.param(
        "meta_only.html",
        ("meta", "dcterms.modified", "2024-03-05T00:00:00Z"),
        [
            ("meta", "dcterms.modified", "2024-03-05T00:00:00Z", True),
            ("meta", "last-modified", "2024-03-04T10:00:00Z", True),
            ("meta", "utime", "2024-03-04T10:00:00Z", True),
            HTTP_LM,
        ],
        [
            ("meta", "parsely-pub-date", "2024-02-27T08:00:00Z", True),
            ("meta", "date", "2024-02-28T00:00:00Z", True),
        ],
        (),
        id="meta",
    ),
    pytest.param(
        "time_only.html",
        ("meta", "dateModified", "2024-04-03T09:15:00Z"),
        [("meta", "dateModified", "2024-04-03T09:15:00Z", True), HTTP_LM],
        [("meta", "datePublished", "2024-04-01T07:00:00Z", True)],
        (),
        id="time-itemprop",
    ),
    pytest.param(
        "no_date.html",
        ("http", "last-modified", "2024-06-10T08:00:00Z"),
        [HTTP_LM],
        [],
        (),
        id="no-date",
    ),
    pytest.param(
        "future.html",
        ("opengraph", "og:updated_time", "2024-05-20T00:00:00Z"),
        [
            ("opengraph", "og:updated_time", "2024-05-20T00:00:00Z", True),
            ("json-ld", "dateModified", "2031-01-01T00:00:00Z", True),
            HTTP_LM,
        ],
        [],
        ("future_modified",),
        id="future",
    ),
]


@pytest.mark.parametrize(("name", "expected_best", "modified", "published", "problems"), FIXTURES)
def test_fixture_pages(
    name: str,
    expected_best: tuple[str, str, str] | None,
    modified: list[tuple[str, str, str, bool]],
    published: list[tuple[str, str, str, bool]],
    problems: tuple[str, ...],
) -> None:
    ev = evidence(name)
    assert best(ev) == expected_best
    assert rows(ev.modified) == modified
    assert rows(ev.published) == published
    assert ev.problems == problems
    assert not ev.now_like
    assert ev.text_length > 0
    assert all(e.kind == "modified" for e in ev.modified)
    assert all(e.kind == "published" for e in ev.published)
    if ev.best_modified is not None:
        assert ev.modified[0] is ev.best_modified


def test_headers_are_parsed_case_insensitively() -> None:
    ev = evidence(
        "no_date.html",
        {"date": DATE, "LAST-MODIFIED": "Sun, 09 Jun 2024 07:00:00 GMT", "etag": ' W/"x1" '},
    )
    assert ev.http_date is not None
    assert ev.http_date.iso == "2024-06-11T10:00:00Z"
    assert ev.http_last_modified is not None
    assert ev.http_last_modified.iso == "2024-06-09T07:00:00Z"
    assert ev.etag == 'W/"x1"'
    assert best(ev) == ("http", "last-modified", "2024-06-09T07:00:00Z")

    bare = evidence("no_date.html", {"Date": "yesterday", "ETag": ""})
    assert (bare.http_date, bare.http_last_modified, bare.etag) == (None, None, None)
    assert bare.modified == ()
    assert bare.best_modified is None


def test_now_like_date_is_skipped_for_the_next_candidate() -> None:
    ev = evidence("now_like.html", {"Date": DATE})
    assert ev.now_like
    assert best(ev) == ("meta", "dcterms.modified", "2024-05-30T12:00:00Z")
    assert rows(ev.modified) == [
        ("meta", "dcterms.modified", "2024-05-30T12:00:00Z", True),
        ("json-ld", "dateModified", "2024-06-11T09:59:30Z", True),
    ]
    # Without a Date header, "now" is the caller's fetch time; none: nothing is now-like.
    at = dt.datetime(2024, 6, 11, 10, 1)
    assert page_evidence((PAGES / "now_like.html").read_bytes(), URL, {}, now=at).now_like
    later = page_evidence((PAGES / "now_like.html").read_bytes(), URL, {})
    assert not later.now_like
    assert best(later) == ("json-ld", "dateModified", "2024-06-11T09:59:30Z")


def test_last_modified_equal_to_date_is_now_like() -> None:
    ev = evidence("no_date.html", {"Date": DATE, "Last-Modified": DATE})
    assert ev.now_like
    assert ev.best_modified is None
    assert rows(ev.modified) == [("http", "last-modified", "2024-06-11T10:00:00Z", True)]


def test_canonical_link_identifies_the_main_entity() -> None:
    html = b"""<html><head><link rel="canonical" href="https://news.example/canonical">
    <script type="application/ld+json">[
      {"@type": "Article", "url": "https://news.example/canonical", "dateModified": "2024-01-02"},
      {"@type": "Article", "url": "https://news.example/other", "dateModified": "2024-05-05"}
    ]</script></head><body><p>x</p></body></html>"""
    ev = page_evidence(html, "https://news.example/canonical?utm_source=feed", {})
    assert rows(ev.modified) == [
        ("json-ld", "dateModified", "2024-01-02T00:00:00Z", True),
        ("json-ld", "dateModified", "2024-05-05T00:00:00Z", False),
    ]
    assert ev.problems == ()


def test_modified_long_before_published_is_not_used() -> None:
    html = b"""<html><head><script type="application/ld+json">
    {"@type": "BlogPosting", "datePublished": "2024-05-01", "dateModified": "2020-01-01"}
    </script><meta name="dcterms.modified" content="2024-05-02"></head><body>x</body></html>"""
    ev = page_evidence(html, URL, {})
    assert best(ev) == ("meta", "dcterms.modified", "2024-05-02T00:00:00Z")
    assert ev.problems == ("modified_before_published",)


def test_extruct_drops_every_jsonld_block_when_one_is_broken() -> None:
    # Why the fallback exists: extruct 0.18 reads all blocks in one go.
    html = (PAGES / "jsonld_broken_microdata.html").read_text()
    out = extruct.extract(html, syntaxes=["json-ld", "microdata"], errors="ignore")
    assert "json-ld" not in out
    assert len(out["microdata"]) == 1
    with pytest.raises(ValueError, match="Expecting"):
        extruct.extract(html, syntaxes=["json-ld"], errors="strict")


def test_jsonld_blocks_are_recovered_one_by_one() -> None:
    html = b"""<html><head>
    <script type="application/ld+json">{"@type": "Article", "dateModified": "2024-03-03",,}</script>
    <script type="application/ld+json">
      /*<![CDATA[*/ {"@type": "WebPage", "url": "%s",
      "datePublished": "2024-03-01", // a comment
      "dateModified": "2024-03-03T10:00:00Z",} /*]]>*/
    </script>
    <script type="application/ld+json">{"@type": "Person", "name": </script>
    </head><body>x</body></html>""".replace(b"%s", URL.encode())
    ev = page_evidence(html, URL, {})
    assert ev.problems == ("json-ld_invalid",)
    assert rows(ev.modified) == [
        ("json-ld", "dateModified", "2024-03-03T10:00:00Z", True),  # WebPage (URL match)
        ("json-ld", "dateModified", "2024-03-03T00:00:00Z", False),
    ]
    assert rows(ev.published) == [("json-ld", "datePublished", "2024-03-01T00:00:00Z", True)]


def test_invalid_main_value_and_prefixed_keys() -> None:
    html = b"""<html><head><script type="application/ld+json">
    {"@context": {"schema": "https://schema.org/"}, "@type": "schema:Article",
     "schema:dateModified": {"@value": "2024-02-30"},
     "https://schema.org/datePublished": "2024-02-01"}
    </script><meta property="og:updated_time" content="2024-02-05T00:00:00Z"></head>
    <body>x</body></html>"""
    ev = page_evidence(html, URL, {})
    assert rows(ev.modified) == [
        ("opengraph", "og:updated_time", "2024-02-05T00:00:00Z", True),
        ("json-ld", "dateModified", None, True),
    ]
    assert rows(ev.published) == [("json-ld", "datePublished", "2024-02-01T00:00:00Z", True)]
    assert ev.problems == ("invalid_modified",)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj <</Type /Catalog>> endobj\n", "application/pdf"),
        (b"%PDF-1.7\n<</Type /Catalog>>", "text/html"),
        (b'{"dateModified": "2024-01-01", "html": "<p>x</p>"}', "application/json"),
        (b'[{"@type": "Article"}]', ""),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
    ],
)
def test_non_html_bodies(body: bytes, content_type: str) -> None:
    headers = {"Last-Modified": "Mon, 10 Jun 2024 08:00:00 GMT"}
    if content_type:
        headers["Content-Type"] = content_type
    ev = page_evidence(body, URL, headers)
    assert ev.problems == ("not_html",)
    assert rows(ev.modified) == [HTTP_LM]
    assert ev.published == ()
    assert ev.text_length == 0
    assert len(ev.fingerprint) == 32
    other = page_evidence(body + b" ", URL, headers)
    assert other.fingerprint != ev.fingerprint  # raw-body digest


def test_empty_body() -> None:
    ev = page_evidence(b"  \n", URL, {"Content-Type": "text/html"})
    assert ev.problems == ("empty",)
    assert (ev.modified, ev.best_modified, ev.text_length) == ((), None, 0)
    assert ev.fingerprint == content_fingerprint("")[0]


def test_huge_page_is_truncated() -> None:
    head = (PAGES / "jsonld_simple.html").read_bytes().split(b"<body>")[0]
    # Megabytes of inline state, as single-page-app pages carry, then a late JSON-LD block.
    blob = b"<script>window.__STATE__ = '" + b"x" * (MAX_HTML_BYTES + 4096) + b"';</script>"
    late = b'<script type="application/ld+json">{"@type": "Article", "dateModified": "2020-01-01"}'
    body = head + b"<body><article><p>Start of the story.</p>" + blob + late + b"</script>"
    ev = page_evidence(body, URL, HEADERS)
    assert ev.problems == ("truncated",)
    assert best(ev) == ("json-ld", "dateModified", "2024-05-06T05:08:09Z")
    # The tree stops at the cap; the late block was downloaded, and is read all the same.
    late_dates = [(e.source, e.raw, e.main_entity) for e in ev.modified if e.raw == "2020-01-01"]
    assert late_dates == [("json-ld", "2020-01-01", False)]
    assert ev.text_length == len("Start of the story.")


@pytest.mark.parametrize("codec", ["utf-16", "cp1252"])
def test_encodings(codec: str) -> None:
    html = (
        f'<html><head><meta charset="{codec}"><meta name="dcterms.modified" content="2024-01-02">'
        "</head><body><main><p>Café crème, déjà vu.</p></main></body></html>"
    )
    body = html.encode(codec)
    ev = page_evidence(body, URL, {"Content-Type": f"text/html; charset={codec}"})
    assert best(ev) == ("meta", "dcterms.modified", "2024-01-02T00:00:00Z")
    assert ev.fingerprint == content_fingerprint(html)[0]
    forced = page_evidence(body, URL, {"Content-Type": "text/html; charset=ascii"}, encoding=codec)
    assert forced.fingerprint == ev.fingerprint
    wrong = page_evidence(body, URL, {}, encoding="no-such-codec")
    assert wrong.fingerprint == ev.fingerprint  # falls back to detection


# --- fingerprint -------------------------------------------------------------


def test_fingerprint_ignores_volatile_tokens() -> None:
    one = evidence("article_fetch1.html")
    two = evidence("article_fetch2.html")
    assert one.fingerprint == two.fingerprint
    assert one.text_length == two.text_length > 300
    assert content_fingerprint((PAGES / "article_fetch1.html").read_text()) == (
        one.fingerprint,
        one.text_length,
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("to start next spring", "to start next autumn"),  # a changed paragraph
        ("4.2 million euros", "4.9 million euros"),  # a price
        ("voted 7 to 2", "voted 6 to 3"),
        ("<h1>City council approves the new bridge</h1>", "<h1>Council approves bridge</h1>"),
    ],
)
def test_fingerprint_sees_content_changes(old: str, new: str) -> None:
    html = (PAGES / "article_fetch1.html").read_text()
    assert old in html
    assert content_fingerprint(html.replace(old, new))[0] != content_fingerprint(html)[0]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Posted 2024-06-11T14:32:05+02:00", "Posted 2024-06-12T09:00:00Z"),
        ("on 11 June 2024", "on Wednesday, 12 June 2024"),
        ("on June 11, 2024 at 2:32 pm", "on June 12, 2024 at 9:05 am"),
        ("11/06/2024", "12/06/2024"),
        ("5 minutes ago", "an hour ago"),
        ("vor 2 Stunden", "vor 3 Stunden"),
        ("1,204 views and 12 comments", "1,317 views and 13 comments"),
        ("Views: 1204", "Views: 99"),
        ("id 123e4567-e89b-12d3-a456-426614174000", "id 00000000-1111-2222-3333-444444444444"),
        ("token=kX9fQ2pL7vR1", "token=Zq81mNcV0bX7"),
        ("see /a?sessionid=abc&x=1", "see /a?sessionid=zzz&x=1"),
        ("build aGVsbG8gd29ybGQgMTIzNDU2Nzg5MA==", "build c29tZXRoaW5nIGVsc2UgOTg3NjU0MzIx"),
        ("slot div-gpt-ad-1718112725-0", "slot div-gpt-ad-99-1"),
        ("© 2009\u20132024", "© 2009\u20132025"),
    ],
)
def test_masked_tokens(a: str, b: str) -> None:
    page = "<main><p>The same article text, long enough. {}</p></main>"
    assert content_fingerprint(page.format(a)) == content_fingerprint(page.format(b))


def test_fingerprint_without_main_or_article_uses_body_minus_boilerplate() -> None:
    page = "<body><nav>Menu {0}</nav><div class='related-posts'>{0}</div><p>Body text</p></body>"
    assert content_fingerprint(page.format("a")) == content_fingerprint(page.format("b"))
    assert content_fingerprint(page.format("a"))[1] == len("Body text")


# --- robustness --------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "<html>", "<head>", "<body>", "</div>", "<main>", "<article>", "<p>", "text ",
        '<script type="application/ld+json">', "</script>", '{"@type": "Article", ',
        '"dateModified": "2024-01-01T00:00:00Z"', '"@graph": [', "]", "}", ",", '"url": ',
        '"mainEntity": {', '"author": {"dateModified": "x"}', "<!--", "-->", "<![CDATA[",
        '<meta property="article:modified_time" content="2024-13-45">',
        '<meta name="date" content="9999-12-31">', '<time itemprop="dateModified">',
        '<div itemscope itemtype="https://schema.org/Article">', '<span itemprop="dateModified"',
        ' vocab="https://schema.org/" typeof="Article" property="dateModified"', ">", "<",
        "\x00", "\ufffd", "é", "12:00", "3 minutes ago", '<base href="::">', "<link rel=canonical href='http://[x'>",
    ]
)  # fmt: skip


@FAST
@given(
    body=st.binary(max_size=2048),
    content_type=st.sampled_from(
        ["", "text/html", "text/html; charset=utf-16", "x/y; charset=bogus"]
    ),
    url=st.sampled_from([URL, "", "not a url", "http://[::1"]),
)
def test_arbitrary_bytes_never_raise(body: bytes, content_type: str, url: str) -> None:
    headers = {"Content-Type": content_type, "Date": DATE} if content_type else {}
    ev = page_evidence(body, url, headers)
    assert isinstance(ev, PageEvidence)
    assert len(ev.fingerprint) == 32


@FAST
@given(
    parts=st.lists(_PIECES, max_size=40),
    encoding=st.sampled_from([None, "utf-8", "latin-1", "utf-16"]),
)
def test_html_soup_never_raises(parts: list[str], encoding: str | None) -> None:
    html = "".join(parts)
    ev = page_evidence(html.encode("utf-8"), URL, {"Content-Type": "text/html"}, encoding=encoding)
    assert ev.best_modified is None or ev.best_modified.main_entity
    digest, length = content_fingerprint(html)
    assert len(digest) == 32
    assert length >= 0


def test_never_imports_scrapy_or_twisted() -> None:
    code = textwrap.dedent(
        """
        import sys
        import extruct
        from sitemapcrawl.verify import pagedates
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("scrapy", "twisted"))
        assert not bad, bad
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_fingerprint_reads_the_main_contents_link_targets() -> None:
    """A list page whose entries now point elsewhere under the same titles changed, and so
    did one pointing at another section of the same page (bench/pagepairs: an edit that
    only retargets a link); a link served from another origin, with another query, or in a
    related-posts block, did not."""
    page = (
        "<html><body><nav><a href='/nav-{nav}'>Home</a></nav><main><h1>Tag: python</h1>"
        "<ul><li><a href='{first}'>First post</a></li><li><a href='/b/'>Second</a></li></ul>"
        "<section><h2>Related posts</h2><a href='/r{related}/'>R</a></section>"
        "</main></body></html>"
    )

    def fp(**kw: str) -> str:
        values = {"nav": "1", "first": "/tags.html", "related": "1", **kw}
        return content_fingerprint(page.format(**values))[0]

    base = fp()
    assert fp(first="/tags/") != base
    assert fp(first="https://example.com/tags.html") == base
    assert fp(first="/tags.html?utm_source=feed") == base
    assert fp(first="/tags.html#top") != base
    assert fp(nav="2") == base
    assert fp(related="2") == base
    assert content_fingerprint(page.format(nav=1, first="/tags.html", related=1))[1] == len(
        "Tag: python First post Second"
    )
