"""The memory of one shard of the URL table (``sitemaps.seen``): one block for its slots'
three parts, a mapping of its own once it is large.

>>> _, highs, lows, mids = views(bytearray(11 * 4))
>>> len(highs), highs.format
(4, 'Q')
"""

from __future__ import annotations

import mmap

__all__ = ["MAPPED", "Memory", "Pickled", "block", "views"]

#: The smallest shard memory that is a mapping of its own (:func:`block`).
MAPPED = 1 << 16

Memory = bytearray | mmap.mmap


class Pickled:
    """A shard's memory as ``pickle`` writes it: a ``bytearray`` (an ``mmap`` cannot be
    pickled), copied when it is written, one shard at a time."""

    __slots__ = ("block",)

    def __init__(self, block: Memory) -> None:
        self.block = block

    def __reduce__(self) -> tuple[type[bytearray], tuple[bytes]]:
        return bytearray, (bytes(self.block),)


def block(size: int) -> tuple[Memory, memoryview, memoryview, memoryview]:
    """One shard's memory for ``size`` slots, and its three arrays (8, 2 and 1 bytes a
    slot) as views of it.

    One block, not three arrays, and a block of :data:`MAPPED` bytes or more is a mapping
    of its own (anonymous ``mmap``), given back to the system when the shard grows past it.
    Arrays from ``malloc`` left freed holes in the heap that the larger arrays of the next
    size did not fit: about 24 MiB at ten million URLs (bench/seen_table.py).

    >>> _, highs, lows, mids = block(8)
    >>> len(highs), len(lows), len(mids), highs.format, lows.format, mids.format
    (8, 8, 8, 'Q', 'H', 'B')
    """
    length = 11 * size
    return views(mmap.mmap(-1, length) if length >= MAPPED else bytearray(length))


def views(block: Memory) -> tuple[Memory, memoryview, memoryview, memoryview]:
    """A shard's block with its three arrays (:func:`block`)."""
    size = len(block) // 11
    view = memoryview(block)
    return (
        block,
        view[: 8 * size].cast("Q"),
        view[8 * size : 10 * size].cast("H"),
        view[10 * size :].cast("B"),
    )
