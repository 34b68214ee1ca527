"""Lastmod verification: a template edit is not a change (the common-mode rule).

docs/verification.md, "Common-mode edits". A deploy that changes the site's template (a
footer's wording, an attribute on every link, a new banner) changes the fingerprint of
every page at once while no page's own content changed; counted page by page, each is a
change its lastmod did not report, and an honest sitemap looks STALE. No list of the
template's parts can know every theme; the run can see it: two fetches of a page are
compared word by word (:func:`edit_signatures`), and an edit made the same way on
:data:`MIN_PAGES` or more pages of one site in one run, and on :data:`MIN_SHARE` of the
pages it compared (:class:`CommonEdits`), is the template's. A page whose every edit is
common changed only its template. Pure code (the standard library; never scrapy or
twisted).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["MAX_EDITS", "MAX_WORDS", "MIN_PAGES", "MIN_SHARE", "CommonEdits", "edit_signatures"]

#: Distinct pages of one site and run that must show an edit for it to be the template's.
MIN_PAGES = 3

#: The share of the site's pages compared on the run (changed or not) that must show it:
#: a template edit reaches every page built with that part of the template, a new post
#: the few list pages that list it (tuned on bench/pagepairs' tuning half, the byte-identical
#: pages of each deploy counted as a spider's sample would: from 0.4 to 0.5 no real change
#: of the source-truth pairs lost, at 0.3 one, at 0.6 the hugegraph footer edit, on 39 of
#: about 72 pages, left standing; docs/benchmarks.md).
MIN_SHARE = 0.5

#: More edits than this between two fetches of a page is a rewrite, never a template edit.
MAX_EDITS = 12

#: Pages longer than this (words) are not compared word by word (the cost is quadratic at
#: worst): their change stands.
MAX_WORDS = 40_000


def edit_signatures(before: str, after: str) -> frozenset[str] | None:
    """The edits that turn one fetch's content into the next's, each a short digest of
    what was deleted and what was inserted (the words, lower-cased; the masked text and
    the link targets compared apart, as ``verify.fingerprint.content_tree`` gives them),
    so that the same template edit on two pages has the same signature whatever text
    surrounds it. None when there is nothing to compare (no text), when the pages are too
    long, or when they differ by more than :data:`MAX_EDITS` edits.

    >>> a = "Intro text here. Last modified ~date~: fix typo in install guide"
    >>> b = "Intro text here. Page last updated ~date~: fix typo in install guide"
    >>> c = "Other page body. Last modified ~date~: add the FAQ"
    >>> d = "Other page body. Page last updated ~date~: add the FAQ"
    >>> edit_signatures(a, b) == edit_signatures(c, d) != None
    True
    >>> edit_signatures(a, a)
    frozenset()
    >>> edit_signatures("", "x") is None
    True
    """
    if not before or not after:
        return None
    found: set[str] = set()
    for old, new in zip(_sections(before), _sections(after), strict=True):
        if old == new:
            continue
        a, b = old.lower().split(), new.lower().split()
        if len(a) > MAX_WORDS or len(b) > MAX_WORDS:
            return None
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b).get_opcodes():
            if tag == "equal":
                continue
            edit = f"{' '.join(a[i1:i2])}\x1f{' '.join(b[j1:j2])}"
            found.add(hashlib.blake2b(edit.encode("utf-8", "replace"), digest_size=8).hexdigest())
            if len(found) > MAX_EDITS:
                return None
    return frozenset(found)


def _sections(content: str) -> tuple[str, str]:
    text, _, links = content.partition("\n")
    return text, links


class CommonEdits:
    """The edits seen on the pages one run compared, per site: which are the template's.

    An edit is the template's when at least :attr:`min_pages` pages and at least
    :attr:`share` of every page of the site compared on the run (changed or not) show it.

    >>> edits = CommonEdits()
    >>> for page in ("a", "b", "c"):
    ...     edits.add("s", page, frozenset({"footer"}))
    >>> edits.add("s", "d", frozenset({"footer", "own"}))
    >>> edits.template_only("s", frozenset({"footer"}))
    True
    >>> edits.template_only("s", frozenset({"footer", "own"}))
    False
    >>> edits.template_only("other", frozenset({"footer"}))
    False
    >>> for page in "efghi":  # now 4 of 9 pages: under the share
    ...     edits.add("s", page, frozenset())
    >>> edits.template_only("s", frozenset({"footer"}))
    False

    A page rewritten (its edits None) was compared too: six pages that show one edit are
    no template edit when fourteen others changed past comparing on the same run.

    >>> edits = CommonEdits()
    >>> for page in range(20):
    ...     edits.add("s", f"p{page}", frozenset({"release link"}) if page < 6 else None)
    >>> edits.template_only("s", frozenset({"release link"}))
    False
    """

    __slots__ = ("_pages", "_seen", "min_pages", "share")

    def __init__(self, min_pages: int = MIN_PAGES, share: float = MIN_SHARE) -> None:
        self.min_pages = min_pages
        self.share = share
        self._seen: dict[str, dict[str, frozenset[str]]] = {}
        self._pages: dict[str, Counter[str]] = {}

    def add(self, site: str, page: str, signatures: Iterable[str] | None) -> None:
        """The edits of one page compared on this run: none when its content did not
        change, None when it changed in a way not compared edit by edit (a rewrite, more
        than :data:`MAX_EDITS` edits, no earlier text): a page compared all the same, which
        the share counts (a page counted once: its last comparison)."""
        seen = self._seen.setdefault(site, {})
        counts = self._pages.setdefault(site, Counter())
        old = seen.get(page)
        if old is not None:
            counts.subtract(old)
        seen[page] = new = frozenset(signatures or ())
        counts.update(new)

    def template_only(self, site: str, signatures: frozenset[str] | None) -> bool:
        """Whether every edit of a page is one enough pages of ``site`` show."""
        if not signatures:
            return False
        counts = self._pages.get(site)
        if counts is None:
            return False
        bar = max(self.min_pages, math.ceil(self.share * len(self._seen[site]) - 1e-9))
        return all(counts[s] >= bar for s in signatures)
