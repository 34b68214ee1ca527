"""Discovery: the URLs already emitted, as keyed 96-bit digests in one flat table.

A Python ``set`` of a million URL hashes costs about 76 MB (an int object and a slot per
entry); this table costs 12 bytes per slot (the digest's high 64 bits in one array, its low
32 in another) and grows (doubles) when it is three quarters full, so 16 to 32 bytes per
URL (10 million URLs: 2²⁴ slots, 201 MB). Linear probing at three quarters full looks at
about 8 slots for a new key at worst, 2.5 on average over a doubling; each look is one
array read (the low half is read only when the high half matches).

**Exact, in the sense of issue 33's decision 2.** Two different URLs share a 96-bit digest
with a probability of about n²/2⁹⁷ over a crawl of n URLs: 6·10⁻¹⁶ for ten million, 6·10⁻¹⁸
for a million (such a URL would be counted as a duplicate). The 64-bit BLAKE2b values of
the format before (2.7·10⁻⁶ at ten million) are refused: a table pickled by a paused
``JOBDIR`` crawl in that format is :attr:`SeenUrls.stale`, and the spider ends with
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

if TYPE_CHECKING:
    from collections.abc import Container, Iterable, Iterator

__all__ = ["KEY", "SeenUrls", "TaggedUrls"]

#: The XXH3 seed the digests are keyed with (fixed: see the module's docstring).
KEY = 0x5C3A_9E21_D1F0_0002
_LOW = 0xFFFF_FFFF
_FORMAT = 2


def _hash(key: str) -> int:
    """``key``'s 96-bit digest; its high 64 bits are never 0 (0 marks an empty slot)."""
    value = xxh3_128_intdigest(key.encode("utf-8", "surrogatepass"), KEY) >> 32
    return value if value >> 32 else value | (1 << 32)


class SeenUrls:
    """Remember strings by their 96-bit digest; ``add`` tells whether one is new.

    >>> seen = SeenUrls()
    >>> seen.add("https://a.example/"), seen.add("https://a.example/"), len(seen)
    (True, False, 1)
    >>> "https://a.example/" in seen, "https://b.example/" in seen
    (True, False)
    """

    __slots__ = ("_count", "_format", "_low", "_mask", "_table", "_tags")

    def __init__(self, capacity: int = 1 << 16) -> None:
        size = 1 << max(4, (capacity * 2 - 1).bit_length())
        #: each digest's high 64 bits (0: an empty slot) and low 32 bits
        self._table = array("Q", bytes(8 * size))
        self._low = array("I", bytes(4 * size))
        self._mask = size - 1
        self._count = 0
        self._format = _FORMAT
        #: a tag per slot (0: none), once :meth:`use_tags` was called: the link followers'
        #: segment of each URL they noted, in the reader's own table (one table for both)
        self._tags: array[int] | None = None

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # Tags are not kept: they name the segments of one process's link followers,
        # which a paused crawl does not keep either (they start again on resume).
        slots = {"_count": self._count, "_mask": self._mask, "_table": self._table}
        if self.stale:  # as read: the version that wrote it can still resume it
            return None, slots
        return None, {**slots, "_low": self._low, "_format": self._format}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        _, slots = state
        self._count = slots["_count"]  # type: ignore[assignment]
        self._mask = slots["_mask"]  # type: ignore[assignment]
        self._table = slots["_table"]  # type: ignore[assignment]
        # a table of the 64-bit format (no "_format") is kept as read, and refused
        self._format = slots.get("_format", 1)  # type: ignore[assignment]
        self._low = slots.get("_low") or array("I", bytes(4 * len(self._table)))  # type: ignore[assignment]
        self._tags = None

    @property
    def stale(self) -> bool:
        """Whether the table was pickled in an older format (64-bit BLAKE2b values): its
        keys cannot be compared with this format's, so it must not be used."""
        return self._format != _FORMAT

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.contains_hash(_hash(key))

    def add(self, key: str) -> bool:
        """Add ``key``; True when it was not there yet."""
        # the reader's call for every URL: the digest computed here, not by a call to _hash
        value = xxh3_128_intdigest(key.encode("utf-8", "surrogatepass"), KEY) >> 32
        return self.add_hash(value if value >> 32 else value | (1 << 32))

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
        return [value if value >> 32 else value | (1 << 32) for value in values]

    def add_hash(self, value: int) -> bool:
        """Add a key by its :meth:`hash`; True when it was not there yet."""
        table = self._table
        mask = self._mask
        high, low = value >> 32, value & _LOW
        index = high & mask
        while slot := table[index]:
            if slot == high and self._low[index] == low:
                return False
            index = (index + 1) & mask
        table[index] = high
        self._low[index] = low
        self._count += 1
        if self._count * 4 > mask * 3:
            self._grow()
        return True

    def contains_hash(self, value: int) -> bool:
        """Whether the key whose :meth:`hash` is ``value`` is in the table."""
        return self._index(value) >= 0

    def _index(self, value: int) -> int:
        """The slot of the key whose :meth:`hash` is ``value``; -1 when it is not there."""
        table = self._table
        mask = self._mask
        high, low = value >> 32, value & _LOW
        index = high & mask
        while slot := table[index]:
            if slot == high and self._low[index] == low:
                return index
            index = (index + 1) & mask
        return -1

    def values(self) -> Iterator[int]:
        """Every key's :meth:`hash`."""
        for high, low in zip(self._table, self._low, strict=True):
            if high:
                yield high << 32 | low

    def update(self, other: SeenUrls) -> None:
        """Add every key of ``other`` (another worker's table, by value).

        >>> a, b = SeenUrls(), SeenUrls()
        >>> _ = a.add("x"), b.add("x"), b.add("y")
        >>> a.update(b)
        >>> len(a), "y" in a
        (2, True)
        """
        for value in other.values():
            self.add_hash(value)

    # -- tags: the link followers' segments, in the same table ----------------------------

    def use_tags(self, widest: int = 0xFFFF) -> None:
        """Keep a tag per slot from now on (2 bytes; 4 once a tag over ``widest`` comes),
        all 0 (none) at first: 14 bytes a slot where a second table of the same keys cost
        16 more."""
        tags = self._tags
        if tags is None:
            code = "H" if widest <= 0xFFFF else "I"
            self._tags = array(code, bytes(array(code).itemsize * len(self._table)))
        elif widest > 0xFFFF and tags.typecode == "H":
            self._tags = array("I", tags)

    def tag_hash(self, value: int) -> int:
        """The tag of the key whose :meth:`hash` is ``value``: 0 when it has none, -1
        when the key is not in the table."""
        index = self._index(value)
        if index < 0:
            return -1
        tags = self._tags
        return 0 if tags is None else tags[index]

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
        tags = self._tags
        assert tags is not None
        assert tag > 0
        if tag > 0xFFFF and tags.typecode == "H":
            self.use_tags(tag)
            tags = self._tags
            assert tags is not None
        table, lows = self._table, self._low
        mask = self._mask
        contains, add_other = others.contains_hash, others.add_tagged
        added = 0
        for value in values:
            high, low = value >> 32, value & _LOW
            index = high & mask
            while (slot := table[index]) and (slot != high or lows[index] != low):
                index = (index + 1) & mask
            if slot:
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
        tags = self._tags
        if tags is None:
            return
        for high, low, tag in zip(self._table, self._low, tags, strict=True):
            if tag and tag in own:
                yield high << 32 | low, tag

    def _grow(self) -> None:
        old, old_low, old_tags = self._table, self._low, self._tags
        size = len(old) * 2
        table = array("Q", bytes(8 * size))
        lows = array("I", bytes(4 * size))
        mask = size - 1
        if old_tags is None:
            for high, low in zip(old, old_low, strict=True):
                if high:
                    index = high & mask
                    while table[index]:
                        index = (index + 1) & mask
                    table[index] = high
                    lows[index] = low
        else:
            tags = array(old_tags.typecode, bytes(old_tags.itemsize * size))
            for high, low, tag in zip(old, old_low, old_tags, strict=True):
                if high:
                    index = high & mask
                    while table[index]:
                        index = (index + 1) & mask
                    table[index] = high
                    lows[index] = low
                    tags[index] = tag
            self._tags = tags
        self._table, self._low, self._mask = table, lows, mask


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
        return None, {**slots, "_tags": self._tags}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        super().__setstate__(state)
        self._tags = state[1]["_tags"]  # type: ignore[assignment]

    def add_hash(self, value: int) -> bool:
        return self.add_tagged(value, 0)

    def add_tagged(self, value: int, tag: int) -> bool:
        """Add a key by its hash with ``tag``; True when it was not there yet."""
        if not SeenUrls.add_hash(self, value):
            return False
        self._tags[self._index(value)] = tag  # type: ignore[index]  # (small tables: twice)
        return True

    def tag_of(self, key: str) -> int | None:
        """The tag ``key`` was added with; None when it was not added."""
        tag = self.tag_hash(_hash(key))
        return None if tag < 0 else tag

    def tagged(self) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag."""
        assert self._tags is not None
        for high, low, tag in zip(self._table, self._low, self._tags, strict=True):
            if high:
                yield high << 32 | low, tag
