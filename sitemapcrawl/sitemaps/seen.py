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
"""

from __future__ import annotations

from array import array
from hashlib import blake2b
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

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

    __slots__ = ("_count", "_mask", "_table")

    def __init__(self, capacity: int = 1 << 16) -> None:
        size = 1 << max(4, (capacity * 2 - 1).bit_length())
        self._table = array("Q", bytes(8 * size))
        self._mask = size - 1
        self._count = 0

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

    def _grow(self) -> None:
        old = self._table
        size = len(old) * 2
        table = array("Q", bytes(8 * size))
        mask = size - 1
        for value in old:
            if value:
                index = value & mask
                while table[index]:
                    index = (index + 1) & mask
                table[index] = value
        self._table = table
        self._mask = mask


class TaggedUrls(SeenUrls):
    """:class:`SeenUrls` that keeps a small number per key (a segment's id): 4 more bytes
    per slot, where a table per segment cost 8 to 16 bytes per URL more and a lookup in each.

    >>> tags = TaggedUrls()
    >>> tags.add_tagged(SeenUrls.hash("https://a.example/1"), 3)
    True
    >>> tags.add_tagged(SeenUrls.hash("https://a.example/1"), 5)  # the first tag stays
    False
    >>> tags.tag_of("https://a.example/1"), tags.tag_of("https://a.example/2")
    (3, None)
    """

    __slots__ = ("_tags",)

    def __init__(self, capacity: int = 1 << 16) -> None:
        super().__init__(capacity)
        self._tags = array("I", bytes(4 * len(self._table)))

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
        self._tags[index] = tag
        self._count += 1
        if self._count * 4 > mask * 3:
            self._grow()
        return True

    def tag_of(self, key: str) -> int | None:
        """The tag ``key`` was added with; None when it was not added."""
        value = _hash(key)
        table = self._table
        mask = self._mask
        index = value & mask
        while True:
            slot = table[index]
            if slot == 0:
                return None
            if slot == value:
                return int(self._tags[index])
            index = (index + 1) & mask

    def tagged(self) -> Iterator[tuple[int, int]]:
        """Every key's hash and tag."""
        for value, tag in zip(self._table, self._tags, strict=True):
            if value:
                yield value, tag

    def _grow(self) -> None:
        old, old_tags = self._table, self._tags
        size = len(old) * 2
        table = array("Q", bytes(8 * size))
        tags = array("I", bytes(4 * size))
        mask = size - 1
        for value, tag in zip(old, old_tags, strict=True):
            if value:
                index = value & mask
                while table[index]:
                    index = (index + 1) & mask
                table[index] = value
                tags[index] = tag
        self._table, self._tags, self._mask = table, tags, mask
