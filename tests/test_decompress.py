"""The core's streaming Content-Encoding decoding (sitemap responses keep theirs)."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
from backports import zstd

from sitemapcrawl.sitemaps.decompress import BodyDecoder

DOC = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + b" " * 5000 + b"</urlset>"


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        (["gzip"], gzip.compress(DOC)),
        (["x-gzip"], gzip.compress(DOC)),
        (["deflate"], zlib.compress(DOC)),
        (["deflate"], raw_deflate(DOC)),  # what some servers send as "deflate"
        (["br"], brotli.compress(DOC)),
        (["zstd"], zstd.compress(DOC)),
        (["identity"], DOC),
        (["gzip", "br"], brotli.compress(gzip.compress(DOC))),  # applied in that order
        (["gzip, br"], brotli.compress(gzip.compress(DOC))),
        (["br"], brotli.compress(gzip.compress(DOC))),  # a .gz file sent with br
    ],
)
def test_content_encodings_decode_in_small_chunks(encoding: list[str], body: bytes) -> None:
    decoder = BodyDecoder(body, max_size=1 << 20, chunk_size=256, content_encoding=encoding)
    chunks = list(decoder)
    assert b"".join(chunks) == DOC
    # brotli's output limit is a floor of its own (32 KiB) or about twice the limit
    assert max(len(c) for c in chunks) <= (32768 if "br" in encoding[-1] else 256)
    assert decoder.faults == []


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_bombs_stop_at_the_cap_and_keep_the_start(encoding: str) -> None:
    doc = b"<urlset><url><loc>https://a.example/</loc></url>" + b" " * (64 << 20)
    body = {
        "gzip": lambda d: gzip.compress(d, 1),
        "deflate": lambda d: zlib.compress(d, 1),
        "br": lambda d: brotli.compress(d, quality=1),
        "zstd": lambda d: zstd.compress(d, 1),
    }[encoding](doc)
    assert len(body) < 1 << 20
    decoder = BodyDecoder(body, max_size=1 << 20, content_encoding=[encoding])
    out = b"".join(decoder)
    assert out == doc[: 1 << 20]
    assert [f.code for f in decoder.faults] == ["too_large"]


@pytest.mark.parametrize(
    ("encoding", "body", "message"),
    [
        ("gzip", gzip.compress(DOC)[:40], "gzip data is truncated"),
        ("deflate", zlib.compress(DOC)[:20], "deflate data is truncated"),
        ("br", brotli.compress(DOC)[:10], "brotli data is truncated"),
        ("zstd", zstd.compress(DOC)[:15], "zstd data is truncated"),
        ("br", b"\xff" * 40, "corrupt brotli data"),
        ("zstd", b"\x28\xb5\x2f\xfd" + b"\xff" * 40, "corrupt zstd data"),
        ("compress", b"whatever", "unknown Content-Encoding 'compress'"),
    ],
)
def test_broken_encodings_are_named(encoding: str, body: bytes, message: str) -> None:
    decoder = BodyDecoder(body, max_size=1 << 20, content_encoding=[encoding])
    b"".join(decoder)
    assert len(decoder.faults) == 1
    assert message in str(decoder.faults[0])
