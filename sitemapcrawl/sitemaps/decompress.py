"""Streaming, capped decoding of a sitemap body: gzip by magic bytes, nested gzip, size cap.

Nothing here holds more than one chunk of decompressed data at a time, so a gzip bomb costs
the time to inflate up to the cap and no more memory than a chunk.
"""

from __future__ import annotations

import zlib
from itertools import chain
from typing import TYPE_CHECKING

from .errors import BodyTooLarge, DecompressionError, SitemapError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["GZIP_MAGIC", "BodyDecoder", "is_gzip"]

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(data: bytes) -> bool:
    """Tell gzip data by its magic bytes, whatever its name or Content-Type says.

    >>> import gzip
    >>> is_gzip(gzip.compress(b"<urlset/>")), is_gzip(b"<urlset/>")
    (True, False)
    """
    return data[:2] == GZIP_MAGIC


def _chunks(body: bytes, size: int) -> Iterator[bytes]:
    view = memoryview(body)
    for start in range(0, len(body), size):
        yield bytes(view[start : start + size])


class BodyDecoder:
    """Iterate over the decoded body in chunks of at most ``chunk_size`` bytes.

    ``max_size`` caps the decoded bytes; ``max_layers`` caps how many gzip layers are peeled
    (a body gzipped twice is common when a server adds ``Content-Encoding`` to a ``.gz``
    file and a proxy decodes it once). After iteration, ``faults`` lists what went wrong,
    ``layers`` how many gzip layers there were and ``size`` how many bytes came out.

    >>> import gzip
    >>> d = BodyDecoder(gzip.compress(gzip.compress(b"<urlset/>")), max_size=100)
    >>> b"".join(d), d.layers, d.faults
    (b'<urlset/>', 2, [])
    """

    def __init__(
        self,
        body: bytes,
        *,
        max_size: int,
        chunk_size: int = 256 * 1024,
        max_layers: int = 3,
    ) -> None:
        self._body = body
        self.max_size = max_size
        self.chunk_size = chunk_size
        self.max_layers = max_layers
        self.faults: list[SitemapError] = []
        self.layers = 0
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        stream: Iterator[bytes] = _chunks(self._body, self.chunk_size)
        while True:
            first = b""
            for chunk in stream:  # at least the two magic bytes, however small the chunks
                first += chunk
                if len(first) >= 2:
                    break
            if not first:
                return
            stream = chain((first,), stream)
            if first[:2] != GZIP_MAGIC or self.layers >= self.max_layers:
                break
            self.layers += 1
            stream = self._gunzip(stream)
        yield from self._capped(stream)

    def _capped(self, stream: Iterator[bytes]) -> Iterator[bytes]:
        limit = self.max_size
        for chunk in stream:
            room = limit - self.size
            if len(chunk) > room:
                if room > 0:
                    self.size += room
                    yield chunk[:room]
                self.faults.append(
                    BodyTooLarge(f"decoded body exceeds {limit} bytes; the rest was not read")
                )
                return
            self.size += len(chunk)
            yield chunk

    def _gunzip(self, stream: Iterator[bytes]) -> Iterator[bytes]:
        size = self.chunk_size
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        fed = False  # has the current gzip member received any input?
        for chunk in stream:
            data = chunk
            while data:
                fed = True
                try:
                    out = inflater.decompress(data, size)
                except zlib.error as exc:
                    self.faults.append(DecompressionError(f"corrupt gzip data: {exc}"))
                    return
                if out:
                    yield out
                if not inflater.eof:
                    data = inflater.unconsumed_tail
                    continue
                # A member ended: another may follow (concatenated gzip), or junk may.
                data = inflater.unused_data
                inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
                fed = False
                if data and not GZIP_MAGIC.startswith(data[:2]):
                    if data.strip(b"\0") or any(c.strip(b"\0") for c in stream):
                        self.faults.append(
                            DecompressionError("trailing bytes after the gzip data were ignored")
                        )
                    return
        if fed:
            tail = inflater.flush()
            if tail:
                yield tail
            self.faults.append(DecompressionError("gzip data is truncated; the rest is missing"))
