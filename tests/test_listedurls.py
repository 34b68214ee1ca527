"""The link followers' listed URLs, tagged in the reader's de-duplication table, answer as
tables of canonical keys of their own did (one per follower, the first segment kept)."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.listedurls import ListedUrls, SegmentTags, canonical_key
from sitemapcrawl.sitemaps.scope import dedupe_key
from sitemapcrawl.sitemaps.seen import SeenUrls

#: Spellings that the reader's key and the canonical key treat apart: query order, host
#: case and trailing dot, default port, percent-encoding, fragments.
_HOSTS = ["https://a.example", "https://A.example", "https://a.example:443", "https://b.example"]
_PATHS = ["/x", "/x/", "/%7Ex", "/~x", "/y;p", "/a b", "/é"]
_QUERIES = ["", "?a=1", "?b=2&a=1", "?a=1&b=2", "?a=%41", "?a=A", "#top"]
_SEGMENTS = ["/s1/", "/s2/", "b:/s3/"]


def _urls() -> st.SearchStrategy[str]:
    parts = st.tuples(st.sampled_from(_HOSTS), st.sampled_from(_PATHS), st.sampled_from(_QUERIES))
    return parts.map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_urls(), st.sampled_from(_SEGMENTS)), max_size=40),
    st.booleans(),
    st.lists(_urls(), max_size=20),
)
def test_tagging_the_reader_table_answers_as_tables_of_their_own(
    listed: list[tuple[str, str]], dedupe: bool, asked: list[str]
) -> None:
    reader = SeenUrls(capacity=4)  # small: it grows, tags and all, while tagged
    tags = SegmentTags()
    # one follower per site, as in a crawl over several: b.example's segments are "b:..."
    followers = {site: ListedUrls(lambda: reader, tags) for site in ("a", "b")}
    reference: dict[str, dict[str, str]] = {"a": {}, "b": {}}
    counts: dict[str, dict[str, int]] = {"a": {}, "b": {}}
    for url, segment in listed:
        # the reader: the URL as written for the usual prefix, else its host spelled once
        if dedupe and not reader.add(
            url if url.startswith("https://a.example/") else dedupe_key(url)
        ):
            continue
        site = "b" if segment.startswith("b:") else "a"
        followers[site].note([url], segment)
        counts[site].setdefault(segment, 0)
        reference[site].setdefault(canonical_key(url), segment)  # the first segment stays
    for site, follower in followers.items():
        for url in [u for u, _ in listed] + asked:
            assert follower.segment_of(url) == reference[site].get(canonical_key(url))
            assert (url in follower) is (canonical_key(url) in reference[site])
        expected = dict.fromkeys(counts[site], 0)
        for segment in reference[site].values():
            expected[segment] += 1
        assert follower.counts() == expected
        # another worker takes this follower's share: the same answers there
        taker = ListedUrls(lambda: None, SegmentTags())
        taker.take(*follower.share())
        for url in [u for u, _ in listed] + asked:
            assert taker.segment_of(url) == reference[site].get(canonical_key(url))


def test_a_paused_crawl_keeps_the_keys_not_the_tags() -> None:
    """The tags name one process's segments: a resumed crawl's followers start again (as
    they did with a table of their own, which a paused crawl never kept)."""
    reader = SeenUrls()
    reader.add("https://a.example/x")
    listed = ListedUrls(lambda: reader, SegmentTags())
    listed.note(["https://a.example/x"], "/s/")
    assert reader.tag_hash(SeenUrls.hash("https://a.example/x")) == 1
    resumed = pickle.loads(pickle.dumps(reader))
    assert "https://a.example/x" in resumed
    assert resumed.tag_hash(SeenUrls.hash("https://a.example/x")) == 0
    assert "https://a.example/x" not in ListedUrls(lambda: resumed, SegmentTags())


def test_most_listed_urls_are_tagged_in_the_reader_table() -> None:
    """Only the URLs whose canonical key is not their reader key take room of their own."""
    reader = SeenUrls()
    urls = [f"https://a.example/p/{i}.html" for i in range(1000)]
    urls += [f"https://a.example/q?b={i}&a=1" for i in range(10)]  # sorted by canonicalize_url
    for url in urls:
        reader.add(url)
    listed = ListedUrls(lambda: reader, SegmentTags())
    listed.note(urls, "/p/")
    assert len(listed.others) == 10
    assert listed.counts() == {"/p/": 1010}
    assert listed.segment_of("https://a.example/q?a=1&b=3") == "/p/"


def test_more_segments_than_two_byte_tags_hold() -> None:
    reader = SeenUrls()
    tags = SegmentTags()
    for i in range(0xFFFF):
        tags.tag(f"/t{i}/")
    reader.add("https://a.example/1")
    listed = ListedUrls(lambda: reader, tags)
    listed.note(["https://a.example/1"], "/last/")  # tag 65,536
    assert listed.segment_of("https://a.example/1") == "/last/"


def test_a_key_kept_apart_is_not_tagged_again_when_the_reader_meets_it() -> None:
    """A query's second order: its canonical key was kept apart (the reader had it under
    the order first written); the reader then emits the canonical order itself."""
    reader = SeenUrls()
    listed = ListedUrls(lambda: reader, SegmentTags())
    first, second = "https://a.example/x?b=2&a=1", "https://a.example/x?a=1&b=2"
    reader.add(first)
    listed.note([first], "/one/")
    reader.add(second)
    listed.note([second], "/two/")
    assert listed.counts() == {"/one/": 1, "/two/": 0}
    assert listed.segment_of(second) == "/one/"


def test_the_reader_table_is_used_even_while_it_is_empty() -> None:
    reader = SeenUrls()
    listed = ListedUrls(lambda: reader, SegmentTags())
    listed.note([], "/s/")  # bound now, to the reader's table, still empty
    reader.add("https://a.example/x")
    listed.note(["https://a.example/x"], "/s/")
    assert len(listed.others) == 0
    assert listed.segment_of("https://a.example/x") == "/s/"
