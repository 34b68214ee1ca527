"""Discovery: the URLs already emitted, as 64-bit hashes in one flat array.

A Python ``set`` of a million URL hashes costs about 76 MB (an int object and a slot per
entry); this table costs 16 bytes per URL at most (8-byte slots, at most half full), so the
memory of a million-URL run stays flat. Two different URLs share a 64-bit hash with a
probability of about n²/2⁶⁵ (3·10⁻⁸ for a million URLs); such a URL would be counted as a
duplicate.

The hash is BLAKE2b cut to 64 bits, not Python's ``hash()``: that one is salted per process,
so a table pickled by a paused ``JOBDIR`` crawl would not recognise its own URLs when the
crawl resumes in a new process.
"""

from __future__ import annotations

from array import array
from hashlib import blake2b

__all__ = ["SeenUrls"]


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
        if self._count * 2 > mask:
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
