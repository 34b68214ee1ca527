"""Discovery: the URLs already emitted, as keyed 96-bit digests in a table of 256 shards.

A Python ``set`` of a million URL hashes costs about 76 MB (an int object and a slot per
entry); this table costs 11 bytes per slot (of the digest's 96 bits, 64 in one array, 16
and 8 in two others, views of one block; its top 8 bits are its shard's number) and keeps
at most three quarters of its slots full, so 15 to 30 bytes per URL (ten million URLs: 2²⁴
slots, 185 MB). Linear probing at three quarters full looks at about 8 slots for a new key
at worst, 2.5 on average over a doubling; each look is one array read (the other 24 bits
are read only when the 64 match).

**Shards.** The slots are split into 256 shards by the top 8 bits of the digest, and each
shard doubles on its own when it is three quarters full. A flat table held its old and its
new arrays at once while it doubled: 302 MB of slots at ten million URLs (2²³ → 2²⁴ slots
of 12 bytes, at 6.3 million), where the table itself ended at 201. A shard's doubling
holds one shard's arrays twice: 1/256 of the table (0.7 MB at ten million URLs), so the
table's peak is its size. Every shard draws its keys from the same uniform digests, so they
fill (and double) together: the table as a whole still has between 1.33 and 2.67 slots per
key. A shard's number is not stored in its slots, which is the byte the 11 save over 12.

**Exact, in the sense of issue 33's decision 2.** Two different URLs share a 96-bit digest
with a probability of about n²/2⁹⁷ over a crawl of n URLs: 6·10⁻¹⁶ for ten million, 6·10⁻¹⁸
for a million (such a URL would be counted as a duplicate). A table pickled by a paused
``JOBDIR`` crawl in an older layout (1: 64-bit BLAKE2b values, 2.7·10⁻⁶ at ten million; 2:
these digests in one flat table) is :attr:`SeenUrls.stale`, and the spider ends with
``bad_state`` rather than misread it (``spiders/reading.py``).

The digest is xxHash's XXH3-128 (the ``xxhash`` wheel), keyed with :data:`KEY`, cut to 96
bits: about three times faster than the BLAKE2b it replaces. It is not Python's
``hash()``: that one is salted per process, so a paused crawl would not recognise its own
URLs when it resumes in a new process. The key is fixed (not drawn per crawl) because the
workers of a distributed crawl compare their digests, and a resumed crawl its old ones; it
separates this table's digests from any other use of XXH3. It is no secret: a site that
made two of its own URLs collide on purpose could only hide one of them, which it can do by
not listing it.

The same table serves the link followers (``sitemapcrawl.listedurls``): once they use it,
it keeps a 2-byte tag per slot (4 beyond 65,535 tags), the segment that listed the URL
(:meth:`SeenUrls.tag_all`), so the crawl holds one table of its URLs, not two.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from xxhash import xxh3_128_intdigest

from sitemapcrawl.sitemaps.shardmemory import Memory, Pickled, block, views

if TYPE_CHECKING:
    from collections.abc import Container, Iterable, Iterator

__all__ = ["KEY", "SeenUrls", "TaggedUrls"]

#: The XXH3 seed the digests are keyed with (fixed: see the module's docstring).
KEY = 0x5C3A_9E21_D1F0_0002
#: The pickled layout: 3, 256 shards (2: one flat table; 1: 64-bit BLAKE2b values).
_FORMAT = 3
#: A digest's shard: its top 8 bits. Its next 64 are a slot's "high" value (0: an empty
#: slot), whose low bits are the first slot to look at; then 8 "middle" and 16 "low" bits.
_SHIFT = 88
_SHARDS = 1 << (96 - _SHIFT)
_HIGH = 0xFFFF_FFFF_FFFF_FFFF
#: The fewest slots a shard has.
_SMALLEST = 8


def _hash(key: str) -> int:
    """``key``'s 96-bit digest; its bits 24 to 87 are never all 0 (0 marks an empty slot)."""
    value = xxh3_128_intdigest(key.encode("utf-8", "surrogatepass"), KEY) >> 32
    return value if value >> 24 & _HIGH else value | (1 << 24)


def _limit(size: int) -> int:
    """How many keys a shard of ``size`` slots holds before it doubles (three quarters).

    >>> _limit(8), _limit(1 << 16)
    (6, 49152)
    """
    return size * 3 // 4


class SeenUrls:
    """Remember strings by their 96-bit digest; ``add`` tells whether one is new.

    ``capacity``: the keys it is expected to hold without growing (it grows past them).

    >>> seen = SeenUrls()
    >>> seen.add("https://a.example/"), seen.add("https://a.example/"), len(seen)
    (True, False, 1)
    >>> "https://a.example/" in seen, "https://b.example/" in seen
    (True, False)
    """

    __slots__ = ("_blocks", "_count", "_highs", "_kept", "_lows", "_mids", "_room", "_tags")

    def __init__(self, capacity: int = 1 << 16) -> None:
        size = max(_SMALLEST, 1 << (-(-capacity * 2 // _SHARDS) - 1).bit_length())
        self._blocks: list[Memory] = []
        #: per shard: each digest's bits 24 to 87 (0: an empty slot), 0 to 15 and 16 to 23
        self._highs: list[memoryview] = []
        self._lows: list[memoryview] = []
        self._mids: list[memoryview] = []
        self._use([block(size) for _ in range(_SHARDS)])
        #: per shard: how many more keys it takes before it doubles
        self._room = [_limit(size)] * _SHARDS
        self._count = 0
        #: per shard, once :meth:`use_tags` was called: a tag per slot (0: none), the link
        #: followers' segment of each URL they noted, in the reader's own table
        self._tags: list[array[int]] | None = None
        #: the pickled state of an older layout, kept as read (:attr:`stale`)
        self._kept: dict[str, object] | None = None

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # Tags are not kept: they name the segments of one process's link followers,
        # which a paused crawl does not keep either (they start again on resume).
        if self._kept is not None:  # as read: the version that wrote it can still resume it
            return None, self._kept
        return None, {
            "_format": _FORMAT,
            "_blocks": [Pickled(memory) for memory in self._blocks],
            "_room": self._room,
        }

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        _, slots = state
        self._tags = None
        if slots.get("_format") == _FORMAT:
            blocks: list[bytearray] = slots["_blocks"]  # type: ignore[assignment]
            self._use([views(memory) for memory in blocks])
            self._room = slots["_room"]  # type: ignore[assignment]
            self._count = sum(
                _limit(len(table)) - room
                for table, room in zip(self._highs, self._room, strict=True)
            )
            self._kept = None
        else:  # an older layout: kept as read, and refused; an empty table meanwhile
            self.__init__(0)  # type: ignore[misc]
            self._kept = slots

    def _use(self, blocks: list[tuple[Memory, memoryview, memoryview, memoryview]]) -> None:
        self._blocks = [memory for memory, _, _, _ in blocks]
        self._highs = [highs for _, highs, _, _ in blocks]
        self._lows = [lows for _, _, lows, _ in blocks]
        self._mids = [mids for _, _, _, mids in blocks]

    @property
    def stale(self) -> bool:
        """Whether the table was pickled in an older layout (64-bit BLAKE2b values, or one
        flat table): this version cannot use it, so it must not be resumed."""
        return self._kept is not None

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.contains_hash(_hash(key))

    def add(self, key: str) -> bool:
        """Add ``key``; True when it was not there yet."""
        # The reader's call for every URL: the digest and the insertion are inline here
        # (as in _put), which saves two calls a URL.
        value = xxh3_128_intdigest(key.encode("utf-8", "surrogatepass"), KEY) >> 32
        high = value >> 24 & _HIGH or 1
        low, mid, shard = value & 0xFFFF, value >> 16 & 0xFF, value >> _SHIFT
        table = self._highs[shard]
        lows = self._lows[shard]
        mids = self._mids[shard]
        mask = len(table) - 1
        index = high & mask
        while slot := table[index]:
            if slot == high and lows[index] == low and mids[index] == mid:
                return False
            index = (index + 1) & mask
        table[index] = high
        lows[index] = low
        mids[index] = mid
        self._count += 1
        room = self._room
        left = room[shard] - 1
        if left:
            room[shard] = left
        else:
            self._grow(shard)
        return True

    @staticmethod
    def hash(key: str) -> int:
        """The 96-bit value the table keeps for ``key``: hash once, add to several tables
        (:meth:`add_hash`)."""
        return _hash(key)

    @staticmethod
    def hashes(keys: Iterable[str]) -> list[int]:
        """:meth:`hash` of each key, in one call.

        >>> SeenUrls.hashes(["a", "b"]) == [SeenUrls.hash("a"), SeenUrls.hash("b")]
        True
        """
        digest, key_ = xxh3_128_intdigest, KEY
        values = [digest(key.encode("utf-8", "surrogatepass"), key_) >> 32 for key in keys]
        return [value if value >> 24 & _HIGH else value | (1 << 24) for value in values]

    def add_hash(self, value: int) -> bool:
        """Add a key by its :meth:`hash`; True when it was not there yet."""
        return self._put(value, 0)

    def _put(self, value: int, tag: int) -> bool:
        """Add a key by its hash, with ``tag`` when it is new (0: none); True when new."""
        high = value >> 24 & _HIGH or 1
        low, mid, shard = value & 0xFFFF, value >> 16 & 0xFF, value >> _SHIFT
        table = self._highs[shard]
        lows = self._lows[shard]
        mids = self._mids[shard]
        mask = len(table) - 1
        index = high & mask
        while slot := table[index]:
            if slot == high and lows[index] == low and mids[index] == mid:
                return False
            index = (index + 1) & mask
        table[index] = high
        lows[index] = low
        mids[index] = mid
        if tag:
            self._tags[shard][index] = tag  # type: ignore[index]  # (tag > 0: tags are kept)
        self._count += 1
        room = self._room
        left = room[shard] - 1
        if left:
            room[shard] = left
        else:
            self._grow(shard)
        return True

    def contains_hash(self, value: int) -> bool:
        """Whether the key whose :meth:`hash` is ``value`` is in the table."""
        return self._slot(value) is not None

    def _slot(self, value: int) -> tuple[int, int] | None:
        """The shard and slot of the key whose :meth:`hash` is ``value``; None when it is
        not there."""
        high = value >> 24 & _HIGH or 1
        low, mid, shard = value & 0xFFFF, value >> 16 & 0xFF, value >> _SHIFT
        table = self._highs[shard]
        lows = self._lows[shard]
        mids = self._mids[shard]
        mask = len(table) - 1
        index = high & mask
        while slot := table[index]:
            if slot == high and lows[index] == low and mids[index] == mid:
                return shard, index
            index = (index + 1) & mask
        return None

    def values(self) -> Iterator[int]:
        """Every key's :meth:`hash`."""
        for shard, (table, lows, mids) in enumerate(
            zip(self._highs, self._lows, self._mids, strict=True)
        ):
            top = shard << _SHIFT
            for high, low, mid in zip(table, lows, mids, strict=True):
                if high:
                    yield top | high << 24 | mid << 16 | low

    def update(self, other: SeenUrls) -> None:
        """Add every key of ``other`` (another worker's table, by value).

        >>> a, b = SeenUrls(), SeenUrls()
        >>> _ = a.add("x"), b.add("x"), b.add("y")
        >>> a.update(b)
        >>> len(a), "y" in a
        (2, True)
        """
        put = self._put
        for value in other.values():
            put(value, 0)

    def _grow(self, shard: int) -> None:
        """Double one shard: the others, and their memory, are left as they are."""
        old, old_lows, old_mids = self._highs[shard], self._lows[shard], self._mids[shard]
        size = len(old) * 2
        mask = size - 1
        memory, table, lows, mids = block(size)
        count = 0
        if self._tags is None:
            for high, low, mid in zip(old, old_lows, old_mids, strict=True):
                if high:
                    index = high & mask
                    while table[index]:
                        index = (index + 1) & mask
                    table[index] = high
                    lows[index] = low
                    mids[index] = mid
                    count += 1
        else:
            old_tags = self._tags[shard]
            tags = array(old_tags.typecode, [0]) * size
            for high, low, mid, tag in zip(old, old_lows, old_mids, old_tags, strict=True):
                if high:
                    index = high & mask
                    while table[index]:
                        index = (index + 1) & mask
                    table[index] = high
                    lows[index] = low
                    mids[index] = mid
                    tags[index] = tag
                    count += 1
            self._tags[shard] = tags
        self._blocks[shard] = memory
        self._highs[shard], self._lows[shard], self._mids[shard] = table, lows, mids
        self._room[shard] = _limit(size) - count

    # -- tags: the link followers' segments, in the same table ----------------------------

    def use_tags(self, widest: int = 0xFFFF) -> None:
        """Keep a tag per slot from now on (2 bytes; 4 once a tag over ``widest`` comes),
        all 0 (none) at first: 13 bytes a slot where a second table of the same keys cost
        15 more."""
        tags = self._tags
        if tags is None:
            code = "H" if widest <= 0xFFFF else "I"
            self._tags = [array(code, [0]) * len(table) for table in self._highs]
        elif widest > 0xFFFF and tags[0].typecode == "H":
            self._tags = [array("I", shard) for shard in tags]

    def tag_hash(self, value: int) -> int:
        """The tag of the key whose :meth:`hash` is ``value``: 0 when it has none, -1
        when the key is not in the table."""
        found = self._slot(value)
        if found is None:
            return -1
        tags = self._tags
        return 0 if tags is None else tags[found[0]][found[1]]

    def tag_all(
        self, values: Iterable[int], tag: int, others: TaggedUrls, own: Container[int]
    ) -> int:
        """Tag keys by their hashes (``tag`` > 0, after :meth:`use_tags`); return how many
        were not tagged before by this tagger (``own``: its tags).

        A key of this table without a tag takes ``tag`` (unless ``others`` has it); a key
        this table has not, or has with another tagger's tag, goes to ``others`` (the
        tagger's own table of the keys that are not this table's): each key is tagged once
        per tagger, the first tag stays.

        >>> seen, others = SeenUrls(), TaggedUrls()
        >>> seen.use_tags()
        >>> _ = seen.add("a"), seen.add("b")
        >>> h = SeenUrls.hash
        >>> seen.tag_all([h("a"), h("c"), h("a")], 1, others, {1})
        2
        >>> seen.tag_hash(h("a")), seen.tag_hash(h("b")), seen.tag_hash(h("c")), len(others)
        (1, 0, -1, 1)
        """
        assert self._tags is not None
        assert tag > 0
        if tag > 0xFFFF and self._tags[0].typecode == "H":
            self.use_tags(tag)
        highs, lows, mids, tagged = self._highs, self._lows, self._mids, self._tags
        assert tagged is not None
        contains, add_other = others.contains_hash, others.add_tagged
        added = 0
        for value in values:
            high = value >> 24 & _HIGH or 1
            shard = value >> _SHIFT
            table = highs[shard]
            mask = len(table) - 1
            index = high & mask
            while (slot := table[index]) and (
                slot != high
                or lows[shard][index] != value & 0xFFFF
                or mids[shard][index] != value >> 16 & 0xFF
            ):
                index = (index + 1) & mask
            if slot:
                tags = tagged[shard]
                found = tags[index]
                if found == 0:
                    if not (others._count and contains(value)):
                        tags[index] = tag
                        added += 1
                        continue
                elif found in own:
                    continue
            if add_other(value, tag):
                added += 1
        return added

    def tagged_hashes(self, own: Container[int]) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag, for the tags in ``own``."""
        if self._tags is not None:
            yield from ((value, tag) for value, tag in self._tagged() if tag and tag in own)

    def _tagged(self) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag (0: none), once tags are kept."""
        assert self._tags is not None
        shards = zip(self._highs, self._lows, self._mids, self._tags, strict=True)
        for shard, (table, lows, mids, tags) in enumerate(shards):
            top = shard << _SHIFT
            for high, low, mid, tag in zip(table, lows, mids, tags, strict=True):
                if high:
                    yield top | high << 24 | mid << 16 | low, tag


class TaggedUrls(SeenUrls):
    """:class:`SeenUrls` that keeps a small number per key (a segment's id) from the start,
    0 included: 4 more bytes per slot, where a table per segment cost 12 to 24 bytes per URL
    more and a lookup in each. The link followers keep the keys that are not in the reader's
    table (or that another site's follower tagged there) in one of these.

    >>> tags = TaggedUrls()
    >>> tags.add_tagged(SeenUrls.hash("https://a.example/1"), 3)
    True
    >>> tags.add_tagged(SeenUrls.hash("https://a.example/1"), 5)  # the first tag stays
    False
    >>> tags.tag_of("https://a.example/1"), tags.tag_of("https://a.example/2")
    (3, None)
    """

    __slots__ = ()

    def __init__(self, capacity: int = 1 << 16) -> None:
        super().__init__(capacity)
        self.use_tags(0xFFFFFFFF)

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        _, slots = super().__getstate__()
        if self.stale:
            return None, slots
        return None, {**slots, "_tags": self._tags}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        super().__setstate__(state)
        if self.stale:
            self.use_tags(0xFFFFFFFF)
        else:
            self._tags = state[1]["_tags"]  # type: ignore[assignment]

    def add_tagged(self, value: int, tag: int) -> bool:
        """Add a key by its hash with ``tag``; True when it was not there yet."""
        return self._put(value, tag)

    def tag_of(self, key: str) -> int | None:
        """The tag ``key`` was added with; None when it was not added."""
        tag = self.tag_hash(_hash(key))
        return None if tag < 0 else tag

    def tagged(self) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag."""
        return self._tagged()
