"""Discovery: the URLs already emitted, as 64-bit hashes in one flat array.

A Python ``set`` of a million URL hashes costs about 76 MB (an int object and a slot per
entry); this table costs 8 bytes per slot and grows (doubles) when it is three quarters full,
so 10.7 to 21.3 bytes per URL (10 million URLs: 2²⁴ slots, 134 MB; at half full, the rule
until issue 33, they took 2²⁵ slots, 268 MB, and briefly both tables while it doubled).
Linear probing at three quarters full looks at about 8 slots for a new key at worst, 2.5
on average over a doubling; each look is one array read. Two different URLs share a 64-bit
hash with a probability of about n²/2⁶⁵ (3·10⁻⁸ for a million URLs, 2.7·10⁻⁶ for ten
million); such a URL would be counted as a duplicate.

The hash is BLAKE2b cut to 64 bits, not Python's ``hash()``: that one is salted per process,
so a table pickled by a paused ``JOBDIR`` crawl would not recognise its own URLs when the
crawl resumes in a new process.

The same table serves the link followers (``sitemapcrawl.listedurls``): once they use it,
it keeps a 2-byte tag per slot (4 beyond 65,535 tags), the segment that listed the URL
(:meth:`SeenUrls.tag_all`), so the crawl holds one table of its URLs, not two.
"""

from __future__ import annotations

from array import array
from hashlib import blake2b
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Container, Iterable, Iterator

__all__ = ["SeenUrls", "TaggedUrls"]


def _hash(key: str) -> int:
    digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1  # 0 marks an empty slot


class SeenUrls:
    """Remember strings by their 64-bit hash; ``add`` tells whether one is new.

    >>> seen = SeenUrls()
    >>> seen.add("https://a.example/"), seen.add("https://a.example/"), len(seen)
    (True, False, 1)
    >>> "https://a.example/" in seen, "https://b.example/" in seen
    (True, False)
    """

    __slots__ = ("_count", "_mask", "_table", "_tags")

    def __init__(self, capacity: int = 1 << 16) -> None:
        size = 1 << max(4, (capacity * 2 - 1).bit_length())
        self._table = array("Q", bytes(8 * size))
        self._mask = size - 1
        self._count = 0
        #: a tag per slot (0: none), once :meth:`use_tags` was called: the link followers'
        #: segment of each URL they noted, in the reader's own table (one table for both)
        self._tags: array[int] | None = None

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # Tags are not kept: they name the segments of one process's link followers,
        # which a paused crawl does not keep either (they start again on resume).
        return None, {"_count": self._count, "_mask": self._mask, "_table": self._table}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        _, slots = state
        self._count = slots["_count"]  # type: ignore[assignment]
        self._mask = slots["_mask"]  # type: ignore[assignment]
        self._table = slots["_table"]  # type: ignore[assignment]
        self._tags = None

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        value = _hash(key)
        table = self._table
        mask = self._mask
        index = value & mask
        while True:
            slot = table[index]
            if slot == 0:
                return False
            if slot == value:
                return True
            index = (index + 1) & mask

    def add(self, key: str) -> bool:
        """Add ``key``; True when it was not there yet."""
        return self.add_hash(_hash(key))

    @staticmethod
    def hash(key: str) -> int:
        """The 64-bit value the table keeps for ``key``: hash once, add to several tables
        (:meth:`add_hash`)."""
        return _hash(key)

    def add_hash(self, value: int) -> bool:
        """Add a key by its :meth:`hash`; True when it was not there yet."""
        table = self._table
        mask = self._mask
        index = value & mask
        while True:
            slot = table[index]
            if slot == 0:
                break
            if slot == value:
                return False
            index = (index + 1) & mask
        table[index] = value
        self._count += 1
        if self._count * 4 > mask * 3:
            self._grow()
        return True

    def update(self, other: SeenUrls) -> None:
        """Add every key of ``other`` (another worker's table, by value).

        >>> a, b = SeenUrls(), SeenUrls()
        >>> _ = a.add("x"), b.add("x"), b.add("y")
        >>> a.update(b)
        >>> len(a), "y" in a
        (2, True)
        """
        for value in other._table:
            if value:
                self.add_hash(value)

    # -- tags: the link followers' segments, in the same table ----------------------------

    def use_tags(self, widest: int = 0xFFFF) -> None:
        """Keep a tag per slot from now on (2 bytes; 4 once a tag over ``widest`` comes),
        all 0 (none) at first. The slots cost 10 bytes where a second table of the same
        keys cost 12 more."""
        tags = self._tags
        if tags is None:
            code = "H" if widest <= 0xFFFF else "I"
            self._tags = array(code, bytes(array(code).itemsize * len(self._table)))
        elif widest > 0xFFFF and tags.typecode == "H":
            self._tags = array("I", tags)

    def tag_hash(self, value: int) -> int:
        """The tag of the key whose :meth:`hash` is ``value``: 0 when it has none, -1
        when the key is not in the table."""
        table = self._table
        mask = self._mask
        index = value & mask
        while True:
            slot = table[index]
            if slot == 0:
                return -1
            if slot == value:
                tags = self._tags
                return 0 if tags is None else tags[index]
            index = (index + 1) & mask

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
        table = self._table
        mask = self._mask
        contains, add_other = others.contains_hash, others.add_tagged
        added = 0
        for value in values:
            index = value & mask
            while (slot := table[index]) and slot != value:
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

    def contains_hash(self, value: int) -> bool:
        """Whether the key whose :meth:`hash` is ``value`` is in the table."""
        table = self._table
        mask = self._mask
        index = value & mask
        while True:
            slot = table[index]
            if slot == 0:
                return False
            if slot == value:
                return True
            index = (index + 1) & mask

    def tagged_hashes(self, own: Container[int]) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag, for the tags in ``own``."""
        tags = self._tags
        if tags is None:
            return
        for value, tag in zip(self._table, tags, strict=True):
            if tag and tag in own:
                yield value, tag

    def _grow(self) -> None:
        old, old_tags = self._table, self._tags
        size = len(old) * 2
        table = array("Q", bytes(8 * size))
        mask = size - 1
        if old_tags is None:
            for value in old:
                if value:
                    index = value & mask
                    while table[index]:
                        index = (index + 1) & mask
                    table[index] = value
        else:
            tags = array(old_tags.typecode, bytes(old_tags.itemsize * size))
            for value, tag in zip(old, old_tags, strict=True):
                if value:
                    index = value & mask
                    while table[index]:
                        index = (index + 1) & mask
                    table[index] = value
                    tags[index] = tag
            self._tags = tags
        self._table = table
        self._mask = mask


class TaggedUrls(SeenUrls):
    """:class:`SeenUrls` that keeps a small number per key (a segment's id) from the start,
    0 included: 4 more bytes per slot, where a table per segment cost 8 to 16 bytes per URL
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
        table = self._table
        mask = self._mask
        index = value & mask
        while True:
            slot = table[index]
            if slot == 0:
                break
            if slot == value:
                return False
            index = (index + 1) & mask
        table[index] = value
        self._tags[index] = tag  # type: ignore[index]
        self._count += 1
        if self._count * 4 > mask * 3:
            self._grow()
        return True

    def tag_of(self, key: str) -> int | None:
        """The tag ``key`` was added with; None when it was not added."""
        tag = self.tag_hash(_hash(key))
        return None if tag < 0 else tag

    def tagged(self) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag."""
        assert self._tags is not None
        for value, tag in zip(self._table, self._tags, strict=True):
            if value:
                yield value, tag
