"""Sitemap parsing: the streaming, capped decoding of a body before it is parsed.

``Content-Encoding`` (gzip, deflate, br, zstd) is undone, then gzip by its magic bytes
(nested too), then the size cap applies.

Nothing here holds more than one chunk of decompressed data at a time, so a bomb costs the
time to inflate up to the cap and no more memory than a chunk, and every byte decoded before
the cap is parsed.
"""

from __future__ import annotations

import zlib
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar

import brotli  # br and zstd: the libraries Scrapy itself decodes them with
from backports import zstd

from .errors import BodyTooLarge, DecompressionError, GzipTooDeep, SitemapError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["GZIP_MAGIC", "BodyDecoder", "is_gzip"]

GZIP_MAGIC = b"\x1f\x8b"
_Decoder = "Callable[[BodyDecoder, Iterator[bytes]], Iterator[bytes]]"


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

    ``content_encoding`` lists the response's ``Content-Encoding`` values in the order they
    were applied (decoded last first; ``identity`` is skipped, an unknown one is a fault and
    the body is read as it is from there).
    ``max_size`` caps the decoded bytes; ``max_layers`` caps how many gzip layers are peeled
    (a body gzipped twice is common when a server adds ``Content-Encoding`` to a ``.gz``
    file and a proxy decodes it once); a body still gzip after them is a ``gzip_layers``
    fault. After iteration, ``faults`` lists what went wrong,
    ``layers`` how many gzip layers there were and ``size`` how many bytes came out.

    >>> import gzip
    >>> d = BodyDecoder(gzip.compress(gzip.compress(b"<urlset/>")), max_size=100)
    >>> b"".join(d), d.layers, d.faults
    (b'<urlset/>', 2, [])
    >>> d = BodyDecoder(zlib.compress(b"<urlset/>"), max_size=100, content_encoding=["deflate"])
    >>> b"".join(d), d.decoded_encodings, d.faults
    (b'<urlset/>', ['deflate'], [])
    """

    def __init__(
        self,
        body: bytes,
        *,
        max_size: int,
        chunk_size: int = 256 * 1024,
        max_layers: int = 3,
        content_encoding: Sequence[str] = (),
    ) -> None:
        self._body = body
        self.content_encoding = [
            e.strip().lower() for value in content_encoding for e in value.split(",") if e.strip()
        ]
        self.decoded_encodings: list[str] = []
        self.max_size = max_size
        self.chunk_size = chunk_size
        self.max_layers = max_layers
        self.faults: list[SitemapError] = []
        self.layers = 0
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        stream: Iterator[bytes] = _chunks(self._body, self.chunk_size)
        for encoding in reversed(self.content_encoding):
            if encoding == "identity":
                continue
            decoder = self._CONTENT_DECODERS.get(encoding)
            if decoder is None:
                self.faults.append(
                    DecompressionError(
                        f"unknown Content-Encoding {encoding!r}; the body is read as it is"
                    )
                )
                break
            self.decoded_encodings.append(encoding)
            stream = decoder(self, stream)
        while True:
            first = b""
            for chunk in stream:  # at least the two magic bytes, however small the chunks
                first += chunk
                if len(first) >= 2:
                    break
            if not first:
                return
            stream = chain((first,), stream)
            if first[:2] != GZIP_MAGIC:
                break
            if self.layers >= self.max_layers:
                self.faults.append(
                    GzipTooDeep(
                        f"still gzip after {self.layers} layers, the most that are peeled; "
                        "not decompressed further"
                    )
                )
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

    def _content_gunzip(self, stream: Iterator[bytes]) -> Iterator[bytes]:
        return self._gunzip(stream)

    def _inflate(self, stream: Iterator[bytes]) -> Iterator[bytes]:
        """``deflate``: zlib-wrapped as the RFC says, or raw deflate as some servers send."""
        size = self.chunk_size
        inflater: Any = None
        for chunk in stream:
            data = chunk
            if inflater is None:
                wbits = zlib.MAX_WBITS if (data[:1] == b"\x78") else -zlib.MAX_WBITS
                inflater = zlib.decompressobj(wbits)
            while data:
                try:
                    out = inflater.decompress(data, size)
                except zlib.error as exc:
                    self.faults.append(DecompressionError(f"corrupt deflate data: {exc}"))
                    return
                if out:
                    yield out
                if inflater.eof:
                    return
                data = inflater.unconsumed_tail
        if inflater is not None and not inflater.eof:
            self.faults.append(DecompressionError("deflate data is truncated; the rest is missing"))

    def _unbrotli(self, stream: Iterator[bytes]) -> Iterator[bytes]:
        size = self.chunk_size
        decompressor = brotli.Decompressor()
        for chunk in stream:
            try:
                out = decompressor.process(chunk, output_buffer_limit=size)
                while True:
                    if out:
                        yield out
                    if decompressor.can_accept_more_data():
                        break
                    out = decompressor.process(b"", output_buffer_limit=size)
            except brotli.error as exc:
                self.faults.append(DecompressionError(f"corrupt brotli data: {exc}"))
                return
            if decompressor.is_finished():
                return
        if not decompressor.is_finished():
            self.faults.append(DecompressionError("brotli data is truncated; the rest is missing"))

    def _unzstd(self, stream: Iterator[bytes]) -> Iterator[bytes]:
        size = self.chunk_size
        decompressor = zstd.ZstdDecompressor()
        for chunk in stream:
            data = chunk
            try:
                while True:
                    out = decompressor.decompress(data, size)
                    if out:
                        yield out
                    if decompressor.eof or decompressor.needs_input:
                        break
                    data = b""
            except (zstd.ZstdError, EOFError) as exc:
                self.faults.append(DecompressionError(f"corrupt zstd data: {exc}"))
                return
            if decompressor.eof:
                return
        if not decompressor.eof:
            self.faults.append(DecompressionError("zstd data is truncated; the rest is missing"))

    _CONTENT_DECODERS: ClassVar[
        dict[str, Callable[[BodyDecoder, Iterator[bytes]], Iterator[bytes]]]
    ]

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


BodyDecoder._CONTENT_DECODERS = {
    "gzip": BodyDecoder._content_gunzip,
    "x-gzip": BodyDecoder._content_gunzip,
    "deflate": BodyDecoder._inflate,
    "br": BodyDecoder._unbrotli,
    "zstd": BodyDecoder._unzstd,
}
