"""Ground truth for the replayed history: which pages' main content changed at each deploy.

An independent judge (it shares no code with sitemapcrawl's fingerprints): a page's
*main content* is the first of ``<main>``, ``[role=main]``, the ``<article>`` elements
(all of them, in order), else ``<body>``, minus ``script``, ``style``, ``noscript``,
``template``, ``svg``, ``nav``, ``header``, ``footer``, ``aside``, ``form`` and
``button``, and elements whose class or id names a widget that a build fills anew
(related or recommended posts, share buttons, comments, table of contents, pagination,
breadcrumbs, permalink anchors), and the box of a heading that names one ("Random
Recommended Posts");
its fingerprint is a hash of the whitespace-normalised text and of the sorted
links (``<a href>``) inside it, with the site's public origins removed from the links
(the text is hashed without any whitespace, its sentences sorted: minifiers drop newlines
between blocks, and some builds emit the same sections in another order).
A page changed at deploy k when its fingerprint differs from deploy k-1's.

The pages are the URLs listed in each deploy's sitemaps (an index is followed into its
children), mapped to files as the replay server does. Each page's versions are numbered
in order of first appearance; ``first_seen`` tells the deploy where each first appeared.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lxml import etree, html

from .server import resolve_path

if TYPE_CHECKING:
    from pathlib import Path

    from .corpus import SiteSpec

DROP = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
)
_WS = re.compile(r"\s+")
_SENTENCE = re.compile(r"(?<=[.!?:;\u0964\u3002\uff01\uff1f])\s+")
#: Zero-width characters, the replacement character and private-use icon glyphs.
_INVISIBLE = re.compile("[\u200b-\u200f\u2060\ufeff\ufffd\ue000-\uf8ff]")
WIDGET_HEADING = re.compile(r"related|recommended|random|read next|you may also like", re.I)
#: Searched at the start of a word of the class or id (words split at anything but a letter
#: or digit): ``post-comments``, ``toctree-wrapper``, ``sharedaddy`` are widgets;
#: Scaladoc's ``shortcomment`` / ``fullcomment`` doc text, a ``protocol`` or ``stock`` box
#: are not (until version 8 the words were matched anywhere: doc comments were dropped).
WIDGET = re.compile(
    r"(?<![a-z0-9])(?:related|recommend|share|sharing|comment|disqus|toc|pagination|pager"
    r"|breadcrumb|headerlink|hash-link)"
)
TRUTH_VERSION = 9


def main_content(body: bytes, strip_hosts: list[str]) -> tuple[str, list[str]]:
    """(the main content's text nodes, whitespace-normalised, one a line; sorted links)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None  # let lxml find the charset
    try:
        doc = html.fromstring(text if text is not None else body)
    except (etree.ParserError, ValueError):
        return "", []
    for bad in doc.xpath("//comment() | //processing-instruction()"):
        parent = bad.getparent()
        if parent is not None:
            parent.remove(bad)
    roots = doc.xpath("//main") or doc.xpath("//*[@role='main']")
    roots = roots[:1] if roots else doc.xpath("//article") or doc.xpath("//body") or [doc]
    texts, links = [], set()
    hosts = "|".join(re.escape(h) for h in strip_hosts) or "(?!)"
    origin = re.compile(rf"^(?:https?:)?//(?:{hosts})(?::\d+)?|^https?://127\.0\.0\.1:\d+")
    for root in roots:
        for tag in DROP:
            for el in root.xpath(f".//{tag}"):
                el.drop_tree()
        for el in root.xpath(".//*[@class or @id]"):
            names = f"{el.get('class', '')} {el.get('id', '')}".lower()
            if WIDGET.search(names) and el.getparent() is not None:
                el.drop_tree()
        for heading in root.xpath(".//h2 | .//h3 | .//h4"):
            box = heading.getparent()
            if WIDGET_HEADING.search(heading.text_content()) and box is not None:
                if box is root or box.getparent() is None:
                    heading.drop_tree()
                else:
                    box.drop_tree()
        texts.extend(root.itertext())
        for a in root.xpath(".//a[@href]"):
            links.add(origin.sub("", a.get("href", "").strip()))
    units = (_WS.sub(" ", _INVISIBLE.sub("", t)).strip() for t in texts)
    return "\n".join(u for u in units if u), sorted(links)


def fingerprint(body: bytes, strip_hosts: list[str]) -> str:
    text, links = main_content(body, strip_hosts)
    h = hashlib.blake2b(digest_size=12)
    # Whitespace is left out (a minifier that drops the newline between two paragraphs
    # changes no content) and the sentences are sorted (a generator that emits sections in
    # a different order on each build, as Hugo does for hugo-toha's /bn/, changes none).
    sentences = sorted(
        _WS.sub("", part) for line in text.split("\n") for part in _SENTENCE.split(line)
    )
    h.update("\n".join(sentences).encode("utf-8", "surrogateescape"))
    h.update(b"\x00")
    h.update("\n".join(links).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _xml(data: bytes) -> Any:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, huge_tree=True)
    return etree.fromstring(data, parser)


def first_segment(path: str) -> str:
    """The segment the spider gave a URL of a top-level sitemap before the flat-sitemap
    grouping (its first path component); kept for ``truth.json``'s ``segments`` and for
    ``labels.py``'s note on merged segments. The segments scored are ``segments.py``'s."""
    end = path.find("/", 1)
    return "/" if end < 0 else path[: end + 1]


def sitemap_urls(
    spec: SiteSpec,
    root: Path,
    segments: dict[str, str] | None = None,
    files: list[tuple[str, int, list[str]]] | None = None,
) -> dict[str, str | None]:
    """Page path -> raw lastmod, from the deploy's sitemaps (indexes followed); fills
    ``segments`` (page path -> the child sitemap's path for a page of an index's child,
    else the first path component) and ``files`` (per sitemap file read, in order: its
    path, its depth and the URLs (path and query) of the pages it lists first)."""
    out: dict[str, str | None] = {}
    todo = [(spec.mount + s, 0) for s in spec.sitemaps]
    seen: set[str] = set()
    while todo:
        path, depth = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        status, file, _ = resolve_path(root, spec.mount, path)
        if status != 200 or file is None:
            continue
        tree = _xml(file.read_bytes())
        if tree is None:
            continue
        kind = etree.QName(tree).localname
        listed: list[str] = []
        if files is not None:
            files.append((path, depth, listed))
        for entry in tree:
            if not isinstance(entry.tag, str):
                continue
            loc = lastmod = None
            for child in entry:
                if not isinstance(child.tag, str):
                    continue
                name = etree.QName(child).localname
                if name == "loc":
                    loc = (child.text or "").strip()
                elif name == "lastmod":
                    lastmod = (child.text or "").strip()
            if not loc:
                continue
            parts = urlsplit(loc)
            p = parts.path or "/"
            if kind == "sitemapindex":
                todo.append((p, depth + 1))
            elif p not in out:
                out[p] = lastmod
                listed.append(p + (f"?{parts.query}" if parts.query else ""))
                if segments is not None:
                    segments[p] = path if depth else first_segment(p)
    return out


@dataclass
class Truth:
    """Per deploy: each listed page's fingerprint (None: listed but not served)."""

    pages: list[str]
    fingerprints: list[dict[str, str | None]]
    lastmods: list[dict[str, str | None]]
    segments: dict[str, str] = field(default_factory=dict)  # path -> spider's segment
    versions: dict[str, list[int]] = field(default_factory=dict)  # path -> version per deploy
    first_seen: dict[str, list[int]] = field(default_factory=dict)  # path -> deploy of each v

    def finish(self) -> Truth:
        for p in self.pages:
            ids: dict[str, int] = {}
            row, firsts = [], []
            for k, fps in enumerate(self.fingerprints):
                fp = fps.get(p)
                if fp is None:
                    row.append(-1)
                    continue
                if fp not in ids:
                    ids[fp] = len(ids)
                    firsts.append(k)
                row.append(ids[fp])
            self.versions[p], self.first_seen[p] = row, firsts
        return self

    def changed(self, k: int) -> set[str]:
        """Pages listed at k and k-1 whose main content differs."""
        if k == 0:
            return set()
        return {
            p
            for p, row in self.versions.items()
            if row[k] >= 0 and row[k - 1] >= 0 and row[k] != row[k - 1]
        }

    def new(self, k: int) -> set[str]:
        """Pages served at k that were not served (or not listed) at k-1."""
        return {p for p, row in self.versions.items() if row[k] >= 0 and (k == 0 or row[k - 1] < 0)}

    def listed(self, k: int) -> set[str]:
        return {p for p, row in self.versions.items() if row[k] >= 0}

    def lastmod_moved(self, k: int) -> set[str]:
        if k == 0:
            return set()
        a, b = self.lastmods[k - 1], self.lastmods[k]
        return {p for p in b if p in a and a[p] != b[p]}

    def to_json(self) -> dict[str, Any]:
        return {
            "version": TRUTH_VERSION,
            "pages": self.pages,
            "fingerprints": self.fingerprints,
            "lastmods": self.lastmods,
            "segments": self.segments,
        }


def compute(spec: SiteSpec, roots: list[Path], cache_file: Path | None = None) -> Truth:
    """The truth over ``roots`` (the extracted deploys, in order), cached in ``cache_file``."""
    key = [str(r.name) for r in roots]
    if cache_file is not None and cache_file.is_file():
        data = json.loads(cache_file.read_text())
        if data.get("version") == TRUTH_VERSION and data.get("key") == key:
            return Truth(
                data["pages"], data["fingerprints"], data["lastmods"], data["segments"]
            ).finish()
    hosts = spec.public_origins
    fingerprints, lastmods, pages = [], [], {}
    segments: dict[str, str] = {}
    for root in roots:
        listed = sitemap_urls(spec, root, segments)
        lastmods.append(listed)
        fps: dict[str, str | None] = {}
        for p in listed:
            pages.setdefault(p, None)
            status, file, location = resolve_path(root, spec.mount, p)
            if status == 301:
                status, file, _ = resolve_path(root, spec.mount, location)
            fps[p] = fingerprint(file.read_bytes(), hosts) if file is not None else None
        fingerprints.append(fps)
    truth = Truth(list(pages), fingerprints, lastmods, segments).finish()
    if cache_file is not None:
        data = truth.to_json()
        data["key"] = key
        cache_file.write_text(json.dumps(data))
    return truth
