"""Parser micro-benchmark: ONE parse of ONE document, in this (fresh) process.

Run by ``bench/run.py`` once per (parser, file, repetition)::

    python bench/parsers.py --parser lxml --file bench/out/.../urlset-50k.xml \
        --url http://127.0.0.1:PORT/urlset-50k.xml

Prints one JSON object on stdout.  What is measured, in order:

1. import the parser's modules (``import_s``, not part of the parse time);
2. read the file into memory as bytes (as a downloader would hand it over);
3. ``rss_before`` = RSS now; rusage and ``perf_counter`` snapshots;
4. the parse: gunzip (if ``.gz``) + full iteration, counting URL entries;
5. ``wall_s``, ``cpu_s`` (user+sys delta from ``resource.getrusage``),
   ``rss_after``, ``peak_rss`` (lifetime peak, ``VmHWM``: imports + body +
   parse), ``rss_growth`` = ``rss_after - rss_before`` (memory retained) and
   ``peak_growth`` = parse peak - ``rss_before`` (transient memory used by
   the parse: the high-water mark is reset through ``/proc/self/clear_refs``
   just before the parse, so VmHWM afterwards is the parse's own peak; where
   that reset is refused, ``peak_reset`` is false and the figure is a lower
   bound).  ``ru_maxrss`` is not used: on Linux it also keeps the parent's
   RSS at spawn time across ``exec``.

Parsers (``--list`` prints them):

* ``ours``        ``sitemapcrawl.sitemaps.SitemapReader(body, url)``, iterated, each
                  entry's ``loc`` and ``lastmod.iso`` read (what a feed reads).
                  Gets the body as downloaded (gzipped for ``.gz``); if that
                  fails for a ``.gz`` it is retried with the gunzipped body
                  (reported as ``mode: pre-gunzipped``).
* ``ours-lxml``   the same with ``fast_path=False``: lxml's pull parser only, without
                  the scanner (the reader as it was before the scanner; the scanner's
                  fallback).
* ``scrapy``      ``scrapy.utils.sitemap.Sitemap(body)`` iterated, after
                  ``scrapy.utils.gz.gunzip`` for ``.gz`` (= SitemapSpider).
* ``usp``         ultimate-sitemap-parser 1.8.1's own single-document path:
                  a ``SitemapFetcher`` whose ``_fetch`` returns the bytes
                  (no network), i.e. usp's gunzip + decode + expat
                  ``XMLSitemapParser`` / ``PlainTextSitemapParser`` + page
                  objects (pickled to a temp file, as usp does); pages counted
                  with ``len(sitemap.pages)``.
* ``defusedxml``  ``defusedxml.ElementTree.iterparse`` + ``clear()``, loc+lastmod.
* ``lxml``        ``lxml.etree.iterparse(tag="{*}url")`` + ``clear()`` and
                  sibling deletion, loc+lastmod (the near-limit reference).
* ``pyexpat``     raw ``xml.parsers.expat``, loc+lastmod only.
* ``lines``       text sitemaps only: ``bytes.splitlines`` + strip (reference).

A parser that does not support the format reports ``status: "n/a"``; one
that cannot be imported reports ``status: "unavailable"``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import io
import json
import os
import resource
import sys
import time
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
PAGE = os.sysconf("SC_PAGE_SIZE")


class NotApplicable(Exception):
    pass


class Unavailable(Exception):
    pass


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def hwm() -> int:
    """VmHWM: this process's own peak RSS.  Not ru_maxrss: on Linux that also
    carries the peak of the parent's memory at spawn time across exec()."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak() -> bool:
    """Reset the peak-RSS high-water mark (Linux >= 4.0) so that ru_maxrss
    afterwards is the peak of the parse alone, not of the imports."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def kind_of(path: str) -> str:
    if path.endswith(".txt"):
        return "text"
    return "xml"


# --- parser factories: import (untimed), return run(body, url) -> count ------


def _read(entries) -> int:
    """Each entry's loc and lastmod ISO string read, as a user's feed reads them (the
    reader computes ``lastmod.iso`` only when asked: counting entries alone would leave
    that work out, which lxml's ``findtext`` and Scrapy's dict values do not)."""
    count = 0
    for entry in entries:
        _loc = entry.loc
        lastmod = entry.lastmod
        if lastmod is not None:
            _iso = lastmod.iso
        count += 1
    return count


def p_ours(path: str):
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)
    try:
        from sitemapcrawl.sitemaps import SitemapReader
    except Exception as ex:  # not written yet / broken
        raise Unavailable(f"{type(ex).__name__}: {ex}") from ex

    def run(body: bytes, url: str) -> int:
        return _read(SitemapReader(body, url))

    return run


def p_ours_lxml(path: str):
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)
    try:
        from sitemapcrawl.sitemaps import SitemapReader
    except Exception as ex:
        raise Unavailable(f"{type(ex).__name__}: {ex}") from ex

    def run(body: bytes, url: str) -> int:
        return _read(SitemapReader(body, url, fast_path=False))

    return run


def p_scrapy(path: str):
    if kind_of(path) == "text":
        raise NotApplicable("scrapy.utils.sitemap.Sitemap parses XML only")
    from scrapy.utils.gz import gunzip
    from scrapy.utils.sitemap import Sitemap

    def run(body: bytes, url: str) -> int:
        if body[:3] == b"\x1f\x8b\x08":
            body = gunzip(body)
        s = Sitemap(body)
        return sum(1 for _ in s)

    return run


def p_usp(path: str):
    import logging

    logging.getLogger("usp").setLevel(logging.ERROR)
    from usp.fetch_parse import SitemapFetcher
    from usp.objects.sitemap import InvalidSitemap
    from usp.web_client.abstract_client import AbstractWebClientSuccessResponse, LocalWebClient

    ctype = (
        "application/x-gzip"
        if path.endswith(".gz")
        else ("text/plain" if path.endswith(".txt") else "application/xml")
    )

    class BytesResponse(AbstractWebClientSuccessResponse):
        def __init__(self, url: str, data: bytes):
            self._url, self._data = url, data

        def status_code(self) -> int:
            return 200

        def status_message(self) -> str:
            return "OK"

        def header(self, case_insensitive_name: str):
            return ctype if case_insensitive_name.lower() == "content-type" else None

        def raw_data(self) -> bytes:
            return self._data

        def url(self) -> str:
            return self._url

    class BytesFetcher(SitemapFetcher):
        __slots__ = ["_body"]

        def __init__(self, url: str, body: bytes):
            super().__init__(url=url, recursion_level=0, web_client=LocalWebClient())
            self._body = body

        def _fetch(self):
            return BytesResponse(self._url, self._body)

    def run(body: bytes, url: str) -> int:
        sm = BytesFetcher(url, body).sitemap()
        if isinstance(sm, InvalidSitemap):
            raise RuntimeError(f"usp: invalid sitemap: {sm.reason}")
        return len(sm.pages)

    return run


def p_defusedxml(path: str):
    if kind_of(path) == "text":
        raise NotApplicable("XML only")
    from defusedxml.ElementTree import iterparse

    url_t, loc_t, lm_t = f"{{{SM_NS}}}url", f"{{{SM_NS}}}loc", f"{{{SM_NS}}}lastmod"

    def run(body: bytes, url: str) -> int:
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        n = 0
        for _ev, el in iterparse(io.BytesIO(body), events=("end",)):
            if el.tag == url_t:
                loc = el.findtext(loc_t)
                _lastmod = el.findtext(lm_t)
                if loc:
                    n += 1
                el.clear()
        return n

    return run


def p_lxml(path: str):
    if kind_of(path) == "text":
        raise NotApplicable("XML only")
    from lxml import etree

    loc_t, lm_t = f"{{{SM_NS}}}loc", f"{{{SM_NS}}}lastmod"

    def run(body: bytes, url: str) -> int:
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        n = 0
        for _ev, el in etree.iterparse(
            io.BytesIO(body),
            events=("end",),
            tag="{*}url",
            resolve_entities=False,
            no_network=True,
            huge_tree=False,
        ):
            loc = el.findtext(loc_t)
            _lastmod = el.findtext(lm_t)
            if loc:
                n += 1
            el.clear(keep_tail=False)
            parent = el.getparent()
            if parent is not None:
                while el.getprevious() is not None:
                    del parent[0]
        return n

    return run


def p_pyexpat(path: str):
    if kind_of(path) == "text":
        raise NotApplicable("XML only")
    from xml.parsers import expat

    URL, LOC, LM = f"{SM_NS}}}url", f"{SM_NS}}}loc", f"{SM_NS}}}lastmod"

    def run(body: bytes, url: str) -> int:
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        p = expat.ParserCreate(namespace_separator="}")
        p.buffer_text = True
        p.buffer_size = 1 << 16
        st = {"n": 0, "cap": None, "loc": None, "lm": None, "buf": []}
        buf = st["buf"]

        def start(name, attrs):
            if name in (LOC, LM):
                st["cap"] = name
                buf.clear()
            elif name == URL:
                st["loc"] = st["lm"] = None

        def end(name):
            if name == st["cap"]:
                text = "".join(buf).strip()
                if name == LOC:
                    st["loc"] = text
                else:
                    st["lm"] = text
                st["cap"] = None
            elif name == URL and st["loc"]:
                st["n"] += 1

        def chars(data):
            if st["cap"] is not None:
                buf.append(data)

        p.StartElementHandler = start
        p.EndElementHandler = end
        p.CharacterDataHandler = chars
        p.Parse(body, True)
        return st["n"]

    return run


def p_lines(path: str):
    if kind_of(path) != "text":
        raise NotApplicable("text sitemaps only")

    def run(body: bytes, url: str) -> int:
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        n = 0
        for raw in body.splitlines():
            line = raw.strip()
            if line.startswith((b"http://", b"https://")):
                n += 1
        return n

    return run


PARSERS = {
    "ours": p_ours,
    "ours-lxml": p_ours_lxml,
    "scrapy": p_scrapy,
    "usp": p_usp,
    "defusedxml": p_defusedxml,
    "lxml": p_lxml,
    "pyexpat": p_pyexpat,
    "lines": p_lines,
}


def measure(parser: str, path: str, url: str) -> dict:
    res: dict = {"parser": parser, "file": os.path.basename(path)}
    t = time.perf_counter()
    try:
        run = PARSERS[parser](path)
    except NotApplicable as ex:
        return {**res, "status": "n/a", "reason": str(ex)}
    except Unavailable as ex:
        return {**res, "status": "unavailable", "reason": str(ex)}
    res["import_s"] = time.perf_counter() - t
    with open(path, "rb") as f:
        body = f.read()
    res["bytes"] = len(body)
    mode = "as-downloaded"
    attempts = [body]
    if parser in ("ours", "ours-lxml") and body[:2] == b"\x1f\x8b":
        attempts.append(gzip.decompress(body))
    err = None
    for i, b in enumerate(attempts):
        gc.collect()
        peak_pre = hwm()
        hwm_reset = reset_peak()
        rss_before = rss_now()
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        try:
            n = run(b, url)
        except Exception as ex:
            err = f"{type(ex).__name__}: {ex}"
            res["traceback"] = traceback.format_exc(limit=6)
            n = None
        t1 = time.perf_counter()
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        if n or i == len(attempts) - 1:
            break
        mode = "pre-gunzipped"  # ours could not read the gzipped body: retry
    if n is None:
        return {**res, "status": "error", "reason": err}
    rss_after = rss_now()
    parse_peak = hwm()  # since the reset, if it worked
    res.update(
        status="ok",
        mode=mode,
        urls=n,
        wall_s=t1 - t0,
        cpu_s=(ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        user_s=ru1.ru_utime - ru0.ru_utime,
        sys_s=ru1.ru_stime - ru0.ru_stime,
        rss_before=rss_before,
        rss_after=rss_after,
        rss_growth=rss_after - rss_before,
        peak_rss=max(peak_pre, parse_peak),
        parse_peak_rss=parse_peak,
        peak_growth=max(0, parse_peak - rss_before),
        peak_reset=hwm_reset,
    )
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--parser", choices=sorted(PARSERS))
    p.add_argument("--file")
    p.add_argument("--url", default=None, help="URL the document was 'downloaded' from")
    p.add_argument("--list", action="store_true")
    a = p.parse_args(argv)
    if a.list:
        print("\n".join(PARSERS))
        return 0
    if not a.parser or not a.file:
        p.error("--parser and --file are required")
    url = a.url or f"http://127.0.0.1/{os.path.basename(a.file)}"
    print(json.dumps(measure(a.parser, a.file, url)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
