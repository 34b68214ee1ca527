"""The benchmark's fixed rules, pure code (no git, no network): the split, the pair sampler,
the front-matter rule of the source truth and the page URL -> source file mapping.

Everything here was written down before any method was measured (bench/pagepairs/README.md).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from dataclasses import dataclass

TUNING = "tuning"
HELD_OUT = "held-out"


def half(repo: str) -> str:
    """bench/realweb/split.py's rule (wt-realweb, written 2026-12-07 before any result):
    held-out when the low bit of the first byte of blake2b(repo, digest_size=8) is 1."""
    digest = hashlib.blake2b(repo.encode("utf-8"), digest_size=8).digest()
    return HELD_OUT if digest[0] & 1 else TUNING


# --- the pair sampler ---------------------------------------------------------------------

#: Per site: at most this many changed and this many unchanged pairs.
PER_CLASS = 150
#: Per deploy transition: at most this many pairs of a site.
PER_DEPLOY = 40
#: Per page URL: at most this many pairs of a site.
PER_URL = 6
#: Candidates examined (judged) per site, in the seeded order, at most.
MAX_EXAMINED = 1500


@dataclass(frozen=True)
class Candidate:
    k: int  # the pair is (deploy k-1, deploy k)
    path: str  # the file's path under the site root


def shuffled(site: str, candidates: list[Candidate]) -> list[Candidate]:
    """The candidates in the seeded order: sorted, then shuffled by
    ``random.Random(f"pagepairs:{site}")``."""
    out = sorted(candidates, key=lambda c: (c.k, c.path))
    random.Random(f"pagepairs:{site}").shuffle(out)
    return out


class Sampler:
    """Walk the shuffled candidates, judge each, keep it while its class, its deploy and its
    URL have room; stop when both classes are full or MAX_EXAMINED were judged."""

    def __init__(
        self,
        per_class: int = PER_CLASS,
        per_deploy: int = PER_DEPLOY,
        per_url: int = PER_URL,
        max_examined: int = MAX_EXAMINED,
    ) -> None:
        self.per_class, self.per_deploy, self.per_url = per_class, per_deploy, per_url
        self.max_examined = max_examined
        self.classes: Counter[bool] = Counter()
        self.deploys: Counter[int] = Counter()
        self.urls: Counter[str] = Counter()
        self.examined = 0

    def full(self) -> bool:
        return self.examined >= self.max_examined or (
            self.classes[True] >= self.per_class and self.classes[False] >= self.per_class
        )

    def wants(self, c: Candidate) -> bool:
        """Whether the candidate is worth judging (its deploy and URL have room)."""
        return self.deploys[c.k] < self.per_deploy and self.urls[c.path] < self.per_url

    def offer(self, c: Candidate, changed: bool | None) -> bool:
        """Count one judged candidate; True when it is kept. ``None``: no truth, dropped."""
        self.examined += 1
        if changed is None or self.classes[changed] >= self.per_class or not self.wants(c):
            return False
        self.classes[changed] += 1
        self.deploys[c.k] += 1
        self.urls[c.path] += 1
        return True


# --- the source truth: front matter ---------------------------------------------------------

#: Front-matter keys that hold dates a build or an editor moves without a content change.
DATE_KEYS = re.compile(
    r"^\s*[\"']?(?:date|lastmod|last[-_]?mod(?:ified)?(?:[-_]at)?|last[-_]?updated?(?:[-_]at)?"
    r"|updated(?:[-_]at)?|modified(?:[-_]at)?|mod[-_]?date|publish[-_]?date|pub[-_]?date"
    r"|expiry[-_]?date|sitemap[-_]?lastmod)[\"']?\s*[:=]",
    re.IGNORECASE,
)

_FENCES = {"---": "---", "+++": "+++"}


def split_front_matter(text: str) -> tuple[list[str], list[str]]:
    """(front-matter lines, body lines): YAML (``---``) or TOML (``+++``) at the top."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[0].strip() in _FENCES:
        fence = _FENCES[lines[0].strip()]
        for i in range(1, len(lines)):
            if lines[i].strip() in (fence, "..."):
                return lines[1:i], lines[i + 1 :]
    return [], lines


def content_key(text: str) -> str:
    """The source file's text as it bears on the page: the front matter without its date
    lines, then the body; whitespace collapsed on each line, blank lines dropped."""
    front, body = split_front_matter(text)
    kept = [ln for ln in front if not DATE_KEYS.match(ln)]
    return "\n".join(" ".join(ln.split()) for ln in (*kept, "\x00", *body) if ln.strip())


def source_changed(old: str | None, new: str | None) -> bool:
    """A page's source changed outside front-matter dates (a file that appeared or went:
    changed)."""
    if old is None or new is None:
        return old is not new
    return content_key(old) != content_key(new)


# --- page URL -> source file ------------------------------------------------------------------

SOURCE_EXTS = (".md", ".mdx", ".markdown", ".rst", ".ipynb", ".adoc", ".org", ".qmd")
_INDEX_NAMES = frozenset({"index", "_index", "readme"})
#: Folders whose files are never a page's source.
_SKIP_DIRS = frozenset(
    {"node_modules", ".github", "themes", "vendor", "_build", "build", "public", "i18n",
     "versioned_docs", "_includes", "_layouts", "snippets", "partials", "archetypes",
     "layouts", "static", "assets", "site", ".vitepress"}
)  # fmt: skip
_LANG_SUFFIX = re.compile(r"\.[a-z]{2}(?:-[a-z]{2,4})?$")


def source_key(path: str) -> tuple[str, ...] | None:
    """A source file's page key: its path without the extension, a trailing ``index`` /
    ``_index`` / ``README`` dropped, lower case; a Hugo language suffix (``about.bn.md``,
    ``index.bn.md``) becomes the URL's language folder (``bn/about``); None when the file
    cannot be a page's source."""
    low = path.lower()
    if not low.endswith(SOURCE_EXTS):
        return None
    parts = low.rsplit(".", 1)[0].split("/")
    if any(p in _SKIP_DIRS or (p.startswith("_") and p != "_index") for p in parts[:-1]):
        return None
    lang = _LANG_SUFFIX.search(parts[-1]) if len(parts[-1]) > 3 else None
    if lang:
        parts[-1] = parts[-1][: lang.start()]
    if parts[-1] in _INDEX_NAMES:
        parts = parts[:-1]
    key = tuple(p for p in parts if p)
    if lang:
        # the language folder goes after the generator's root folders (content/, docs/)
        cut = 0
        while cut < len(key) and key[cut] in _TOP_DIRS:
            cut += 1
        key = (*key[:cut], lang.group()[1:], *key[cut:])
    return key


def url_key(path: str) -> tuple[str, ...]:
    """A page's key: its path under the site root without ``index.html`` / ``.html`` and
    slashes, lower case, in components."""
    low = path.lower().strip("/")
    if low.endswith("index.html"):
        low = low[: -len("index.html")]
    elif low.endswith((".html", ".htm")):
        low = low.rsplit(".", 1)[0]
    return tuple(p for p in low.split("/") if p)


#: Leading folders of a source path that a generator does not put in the URL.
_ROOT_DIRS = frozenset(
    {"content", "docs", "doc", "src", "source", "pages", "website", "site-src", "exampleSite",
     "examplesite", "markdown", "en", "posts", "_posts", "blog", "documentation", "book"}
)  # fmt: skip


def map_sources(
    url_keys: list[tuple[str, ...]], source_paths: list[str]
) -> dict[tuple[str, ...], str]:
    """URL key -> the one source file whose key ends with it, the rest of its key made
    only of generator root folders (content/, docs/, src/...). A URL with two candidates at the same
    depth, or none, has no source (the HTML judge decides)."""
    by_key: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    for sp in source_paths:
        key = source_key(sp)
        if key is None:
            continue
        for cut in range(len(key)):
            prefix, rest = key[:cut], key[cut:]
            if all(p in _ROOT_DIRS for p in prefix) and rest:
                by_key.setdefault(rest, []).append((cut, sp))
    out: dict[tuple[str, ...], str] = {}
    for uk in url_keys:
        if not uk:
            continue
        found = by_key.get(uk)
        if not found:
            continue
        found.sort()
        if len(found) > 1 and found[0][0] == found[1][0]:
            continue
        out[uk] = found[0][1]
    return out


#: The generators' content roots, before which no language folder goes.
_TOP_DIRS = frozenset({"content", "docs", "doc", "src", "source", "website", "examplesite"})


_WORD = re.compile(r"\w+", re.UNICODE)


def prose_lines(source_text: str, n: int = 3, min_chars: int = 40) -> list[str]:
    """The source's ``n`` longest prose lines (no code fence, table, directive or HTML),
    reduced to their words: the check that a page shows its mapped source."""
    _, body = split_front_matter(source_text)
    lines, fenced = [], False
    for ln in body:
        s = ln.strip()
        if s.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if (
            fenced
            or not s
            or s.startswith(("|", "<", "..", ":", "{", "!", "[!", "import ", "    "))
        ):
            continue
        s = re.sub(r"\]\([^)]*\)|`[^`]*`|\{[^}]*\}|<[^>]+>|https?://\S+", " ", s)
        words = " ".join(_WORD.findall(s.lower()))
        if len(words) >= min_chars:
            lines.append(words)
    return sorted(lines, key=len, reverse=True)[:n]


def shows(page_words: str, source_text: str) -> bool | None:
    """Whether a page's text (reduced to its words) contains one of its source's prose
    lines; None when the source has no prose line to check."""
    lines = prose_lines(source_text)
    if not lines:
        return None
    return any(ln in page_words for ln in lines)


def words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))
