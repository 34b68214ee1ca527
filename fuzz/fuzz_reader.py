"""Coverage-guided fuzzing of the pure core with atheris (libFuzzer).

Run it from the repository root (atheris is not a project requirement: ``pip install
atheris``)::

    python fuzz/fuzz_reader.py -max_total_time=3600 -rss_limit_mb=1024

With no corpus directory on the command line, ``fuzz/corpus/`` is used, seeded on first run
from ``tests/data`` (the conformance corpus included; the seeds are not committed). Crashes are
written by libFuzzer as ``crash-*`` files in the current directory; replay one with
``python fuzz/fuzz_reader.py crash-...``.

The first input byte picks a target: the sitemap reader on the raw bytes, on the bytes
inside a ``<urlset>``, on the bytes gzipped (whole and cut short), the robots.txt parser,
or the lastmod parsers. Every target must return normally: an exception of any kind
(the reader records ``SitemapError`` faults instead of raising them) or an entry whose
location is not an absolute http(s) URL is a finding. Memory is bounded by the reader's
caps, which are small here so that a bomb shows up as an RSS-limit finding.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import atheris
from w3lib.url import safe_url_string

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: the package is not installed

with atheris.instrument_imports():
    from sitemapcrawl.sitemaps import Limits, SitemapReader, parse_feed_date, parse_lastmod
    from sitemapcrawl.sitemaps.robots import parse_robots

CORPUS = Path(__file__).resolve().parent / "corpus"
SEEDS = (ROOT / "tests" / "data",)  # the conformance corpus is in tests/data/conformance
URL = "https://site.example/dir/sitemap.xml"
LIMITS = Limits(max_size=1 << 20, max_urls=1000, chunk_size=4096)
SMALL_CHUNKS = Limits(max_size=1 << 20, max_urls=1000, chunk_size=7)


def _read(body: bytes, limits: Limits) -> None:
    reader = SitemapReader(body, URL, limits=limits)
    for entry in reader:
        loc = entry.loc
        if not loc.startswith(("http://", "https://")):
            raise AssertionError(f"entry with a non-http location: {loc!r}")
        if any(ord(c) < 0x21 or ord(c) == 0x7F for c in loc):
            raise AssertionError(f"control character or space in a location: {loc!r}")
        safe_url_string(loc)  # what Scrapy's Request does with it: must not raise
    for fault in reader.faults:
        assert fault.code, fault


def test_one_input(data: bytes) -> None:
    """One fuzz iteration: dispatch on the first byte."""
    if not data:
        return
    target, body = data[0] % 6, data[1:]
    if target == 0:
        _read(body, LIMITS)
    elif target == 1:
        _read(b'<?xml version="1.0"?><urlset><url><loc>' + body + b"</loc></url></urlset>", LIMITS)
    elif target == 2:
        _read(body, SMALL_CHUNKS)
    elif target == 3:
        packed = gzip.compress(body, mtime=0)
        _read(packed, LIMITS)
        _read(packed[: len(packed) // 2 + 1], LIMITS)
    elif target == 4:
        result = parse_robots(body, "https://site.example/robots.txt")
        for url in result.sitemaps:
            if not url.startswith(("http://", "https://")):
                raise AssertionError(f"robots.txt sitemap that is not http(s): {url!r}")
            safe_url_string(url)  # the spider makes a Request of it: must not raise
    else:
        text = body.decode("utf-8", "replace")
        for parsed in (parse_lastmod(text), parse_feed_date(text)):
            if parsed is not None and parsed.value is not None:
                assert parsed.value.utcoffset() is not None


def _seed(corpus: Path) -> None:
    """Fill an empty corpus with the test fixtures, each under every target byte."""
    corpus.mkdir(parents=True, exist_ok=True)
    if any(corpus.iterdir()):
        return
    count = 0
    for root in SEEDS:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.stat().st_size > 256 * 1024:
                continue
            data = path.read_bytes()
            for target in range(6):
                (corpus / f"seed-{count}-{target}").write_bytes(bytes([target]) + data)
            count += 1


def main() -> None:
    """Start libFuzzer; the default corpus directory is ``fuzz/corpus``."""
    args = list(sys.argv)
    if not any(not a.startswith("-") for a in args[1:]):
        _seed(CORPUS)
        args.append(str(CORPUS))
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
