"""The URL table (``SeenUrls``): 256 shards that grow one at a time answer as a set of the
keys' 96-bit digests, across growth, with tags, and after a pickle round trip."""

from __future__ import annotations

import mmap
import pickle
from array import array
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.sitemaps.seen import SeenUrls, TaggedUrls

_REST = 0xFF_FFFF  # a digest's 24 bits after its shard's 8 and its 64 "high" ones


def _urls(n: int, start: int = 0) -> list[str]:
    return [f"https://www.example.com/s{i % 7}/item-{i}.html?v={i % 3}" for i in range(start, n)]


def _sizes(seen: SeenUrls) -> list[int]:
    """Each shard's slots (white box: the growth these tests are about)."""
    return [len(table) for table in seen._highs]


def test_it_answers_as_a_set_of_digests_across_every_shard_s_growth() -> None:
    urls = _urls(120_000)
    seen = SeenUrls(capacity=0)  # every shard at its smallest: each doubles 7 or 8 times
    reference: set[int] = set()
    for i, url in enumerate(urls):
        value = SeenUrls.hash(url)
        assert seen.add(url) is (value not in reference)
        reference.add(value)
        if i % 5 == 0:  # every fifth URL listed again at once
            assert not seen.add(url)
    assert len(seen) == len(reference) == 120_000
    assert set(seen.values()) == reference
    assert all(size >= 512 for size in _sizes(seen))
    assert all(url in seen for url in urls[::97])
    assert not any(url in seen for url in _urls(121_000, 120_000))
    # three quarters full at most, in every shard
    assert all(len([h for h in t if h]) * 4 <= len(t) * 3 for t in seen._highs)


def test_one_shard_grows_alone_and_its_cluster_wraps() -> None:
    """Keys of one shard that share their high half (so their first slot, whatever the
    shard's size) and differ in the low one: one cluster, which wraps past the shard's last
    slot, and the 96 bits tell them apart."""
    seen = SeenUrls(capacity=0)
    high = 1 << 40 | 2045  # the 64 bits after the shard's 8: slot 2045 of 2048 at the end
    crowded = [200 << 88 | high << 24 | i * 2654435761 & _REST for i in range(1500)]
    for value in crowded:
        assert seen.add_hash(value)
        assert not seen.add_hash(value)
    assert all(seen.contains_hash(v) for v in crowded)
    assert not seen.contains_hash(200 << 88 | high << 24 | 1500 * 2654435761 & _REST)
    assert not seen.contains_hash(crowded[1] ^ 1 << 64)  # one bit of the 64 apart
    assert not seen.contains_hash(crowded[1] ^ 1 << 95)  # the same, in another shard
    sizes = _sizes(seen)
    assert sizes[200] == 2048
    assert seen._highs[200][-1] == seen._highs[200][0] == high  # the cluster wrapped
    assert set(sizes[:200] + sizes[201:]) == {8}  # the other shards never grew
    assert len(seen) == 1500


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # 4 of the 256 shards: they grow on few keys
            st.integers(1, 63),  # a few high halves: clusters of one high half
            st.integers(0, 1 << 16),  # the low half (and a few more high halves)
            st.integers(0, 3),  # tag (0: none)
        ),
        max_size=400,
    ),
    st.booleans(),
)
def test_tagged_table_against_a_dict(ops: list[tuple[int, int, int, int]], wide: bool) -> None:
    """Any keys, tagged or not, with a pickle round trip half way (tags are not pickled)."""
    seen = SeenUrls(capacity=0)
    seen.use_tags()
    reference: dict[int, int] = {}
    others = TaggedUrls(capacity=0)
    half = len(ops) // 2
    for i, (shard, home, rest, tag) in enumerate(ops):
        if i == half:
            seen = pickle.loads(pickle.dumps(seen))
            assert not seen.stale
            seen.use_tags()
            reference = dict.fromkeys(reference, 0)
            others = TaggedUrls(capacity=0)
        value = shard << 94 | ((rest & 3) << 6 | home) << 24 | rest
        if tag:
            mark = tag + 0xFFFF if wide else tag
            seen.tag_all([value], mark, others, {mark})
            if value not in reference:
                assert others.tag_hash(value) >= 0
            elif reference[value] == 0:
                reference[value] = mark
        else:
            assert seen.add_hash(value) is (value not in reference)
            reference.setdefault(value, 0)
    assert len(seen) == len(reference)
    assert sorted(seen.values()) == sorted(reference)
    for value, tag in reference.items():
        assert seen.tag_hash(value) == tag
    assert dict(seen.tagged_hashes(set(range(1, 1 << 17)))) == {
        value: tag for value, tag in reference.items() if tag
    }


def test_tags_move_with_their_keys_when_a_shard_doubles() -> None:
    seen = SeenUrls(capacity=0)
    seen.use_tags()
    first = _urls(3000)
    for url in first:
        seen.add(url)
    others = TaggedUrls()
    assert seen.tag_all(SeenUrls.hashes(first), 7, others, {7}) == 3000
    before = _sizes(seen)
    for url in _urls(60_000, 3000):  # every shard doubles a few times
        seen.add(url)
    assert all(after > size for after, size in zip(_sizes(seen), before, strict=True))
    assert [seen.tag_hash(v) for v in SeenUrls.hashes(first)] == [7] * 3000
    assert {seen.tag_hash(v) for v in SeenUrls.hashes(_urls(60_000, 3000))} == {0}
    assert len(others) == 0
    # a tag past two bytes widens every shard's tags, the ones kept included
    assert seen.tag_all(SeenUrls.hashes(_urls(3010, 3000)), 70_000, others, {70_000}) == 10
    assert seen.tag_hash(SeenUrls.hash(first[0])) == 7
    assert seen.tag_hash(SeenUrls.hash(_urls(3001, 3000)[0])) == 70_000


def test_a_pickled_table_answers_the_same_and_grows_on() -> None:
    seen = SeenUrls()
    urls = _urls(50_000)
    for url in urls:
        seen.add(url)
    again = pickle.loads(pickle.dumps(seen, protocol=pickle.HIGHEST_PROTOCOL))
    assert not again.stale
    assert len(again) == 50_000
    assert set(again.values()) == set(seen.values())
    assert not any(again.add(url) for url in urls)
    assert all(again.add(url) for url in _urls(400_000, 50_000))  # and every shard doubles
    assert len(again) == 400_000
    assert all(url in again for url in urls[::101])


def test_a_tagged_share_survives_pickling() -> None:
    listed = TaggedUrls(capacity=0)
    values = SeenUrls.hashes(_urls(20_000))
    for i, value in enumerate(values):
        assert listed.add_tagged(value, i % 5)
    again = pickle.loads(pickle.dumps(listed))
    assert sorted(again.tagged()) == sorted((v, i % 5) for i, v in enumerate(values))
    assert again.tag_of(_urls(4)[3]) == 3


def _flat(**slots: Any) -> tuple[None, dict[str, Any]]:
    return None, {"_count": 1, "_mask": 15, "_table": array("Q", [5] + [0] * 15), **slots}


def test_older_layouts_are_stale_and_kept_as_read() -> None:
    """Layout 1 (64-bit values, no mark) and layout 2 (one flat table of 96-bit digests):
    refused by the spider and the shares, and pickled again as they were read."""
    for state in (_flat(), _flat(_low=array("I", [9] * 16), _format=2)):
        table = SeenUrls.__new__(SeenUrls)
        table.__setstate__(state)
        assert table.stale
        assert table.__getstate__() == state
        assert pickle.loads(pickle.dumps(table)).__getstate__() == state
    tagged = TaggedUrls.__new__(TaggedUrls)
    state = _flat(_low=array("I", [9] * 16), _format=2, _tags=array("I", [1] * 16))
    tagged.__setstate__(state)
    assert tagged.stale
    assert tagged.__getstate__() == state
    assert not SeenUrls().stale


def test_shards_in_mappings_of_their_own_pickle_and_grow(monkeypatch: Any) -> None:
    """Every shard's memory an anonymous mapping (as large shards' are), across growth
    and a pickle round trip (whose blocks come back as bytearrays)."""
    from sitemapcrawl.sitemaps import shardmemory

    monkeypatch.setattr(shardmemory, "MAPPED", 0)
    seen = SeenUrls(capacity=0)
    urls = _urls(30_000)
    for url in urls[:20_000]:
        seen.add(url)
    assert all(isinstance(block, mmap.mmap) for block in seen._blocks)
    again = pickle.loads(pickle.dumps(seen))
    assert all(isinstance(block, bytearray) for block in again._blocks)
    for table in (seen, again):
        assert not any(table.add(url) for url in urls[:20_000])
        assert all(table.add(url) for url in urls[20_000:])
        assert len(table) == 30_000
    assert set(again.values()) == set(seen.values()) == set(SeenUrls.hashes(urls))
