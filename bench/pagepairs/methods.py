"""The change detectors measured on the page pairs, and the page-date readers.

Each detector maps a page's HTML to a key; a pair is "changed" when its two keys differ.
Extractors' texts are whitespace-normalised before hashing; the template detectors work on
text lines (blocks) and drop those that recur on many of the site's pages at the deploy.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from typing import Any

HEADERS = {"Content-Type": "text/html"}


def _h(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest()


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _lines(text: str | None) -> list[str]:
    out = []
    for ln in (text or "").split("\n"):
        n = " ".join(ln.split())
        if n:
            out.append(n)
    return out


def decode(body: bytes) -> str:
    from w3lib.encoding import html_to_unicode

    return html_to_unicode("text/html", body)[1]


# --- the detectors: html bytes -> (key or text lines), timed by the caller --------------------


def spider(body: bytes, url: str) -> Any:
    """sitemapcrawl as the spider reads a fetched page: page_evidence (the lexbor HTML5
    tree, the dates, the content fingerprint)."""
    from sitemapcrawl.verify.pagedates import page_evidence

    return page_evidence(body, url, HEADERS)


def fingerprint_only(body: bytes) -> str:
    from sitemapcrawl.verify.fingerprint import content_fingerprint

    return content_fingerprint(decode(body))[0]


def trafilatura_text(html: str) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            html,
            include_comments=False,
            include_tables=True,
            include_images=False,
            deduplicate=False,
            with_metadata=False,
        )
        or ""
    )


def html5(body: bytes) -> str:
    from sitemapcrawl.verify.pagehtml import html5 as lexbor

    return lexbor(decode(body).encode("utf-8", "replace")).decode("utf-8", "replace")


def readability_text(html: str) -> str:
    import lxml.html
    from readability import Document

    try:
        summary = Document(html).summary(html_partial=True)
        return "\n".join(lxml.html.fromstring(summary).itertext())
    except Exception:  # readability's Unparseable, lxml's "Document is empty"
        return ""


def resiliparse_text(html: str, *, main: bool) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(
        HTMLTree.parse(html),
        main_content=main,
        alt_texts=False,
        links=False,
        list_bullets=False,
        form_fields=False,
        noscript=False,
    )


#: name -> (description, how the page's text is obtained)
EXTRACTORS = {
    "trafilatura": "trafilatura 2.3.1 extract() on the page as served",
    "trafilatura-html5": "trafilatura 2.3.1 extract() on the lexbor-normalised page",
    "readability": "readability-lxml 0.9 Document.summary() text",
    "resiliparse-main": "resiliparse 2.0.0 extract_plain_text(main_content=True)",
    "resiliparse-all": "resiliparse 2.0.0 extract_plain_text(main_content=False): every block",
}


def extract(name: str, body: bytes) -> str:
    html = decode(body)
    if name == "trafilatura":
        return trafilatura_text(html)
    if name == "trafilatura-html5":
        return trafilatura_text(html5(body))
    if name == "readability":
        return readability_text(html)
    if name == "resiliparse-main":
        return resiliparse_text(html, main=True)
    if name == "resiliparse-all":
        return resiliparse_text(html, main=False)
    raise KeyError(name)


def timed(fn: Any, *args: Any, **kw: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, (time.perf_counter() - t) * 1000


# --- the site-level template detector -------------------------------------------------------


def template_lines(pages: list[list[str]], share: float, min_pages: int = 3) -> set[str]:
    """The lines (text blocks) found on at least ``max(min_pages, ceil(share * n))`` of the
    ``n`` sampled pages of one deploy: the site's template, wherever it sits.

    >>> sorted(template_lines([["Home", "a"], ["Home", "b"], ["Home", "c"], ["x"]], 0.5))
    ['Home']
    """
    n = len(pages)
    need = max(min_pages, math.ceil(share * n))
    counts: Counter[str] = Counter()
    for lines in pages:
        counts.update(set(lines))
    return {ln for ln, c in counts.items() if c >= need}


def minus_template(lines: list[str], template: set[str]) -> str:
    return _h("\n".join(ln for ln in lines if ln not in template))


def key_of_text(text: str) -> str:
    return _h(_norm(text))


def lines_of(text: str) -> list[str]:
    return _lines(text)


# --- page dates -----------------------------------------------------------------------------


def htmldate_day(html: str, *, extensive: bool) -> str | None:
    from htmldate import find_date

    try:
        return find_date(
            html, original_date=False, extensive_search=extensive, outputformat="%Y-%m-%d"
        )
    except Exception:
        return None


def evidence_days(ev: Any) -> dict[str, str | None]:
    """The page's modification day per reader of sitemapcrawl.verify.pagedates: structured
    data (extruct: JSON-LD, microdata, RDFa), meta tags (OpenGraph, <meta>), and the
    spider's choice (best_modified)."""

    def day(d: Any) -> str | None:
        if d is None or d.value is None or d.value.value is None:
            return None
        return d.value.value.strftime("%Y-%m-%d")

    structured = next(
        (d for d in ev.modified if d.source in ("json-ld", "microdata", "rdfa")), None
    )
    meta = next((d for d in ev.modified if d.source in ("opengraph", "meta")), None)
    return {"structured": day(structured), "meta": day(meta), "best": day(ev.best_modified)}
