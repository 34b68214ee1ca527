"""The URLs the sitemaps listed, as the link follower compares them: canonical keys, each
tagged with the segment that listed it, kept in the reader's own de-duplication table.

The reader de-duplicates on its own key (the URL as written, its host spelled one way:
``sitemaps.scope.dedupe_key``); the link follower compares links with listed URLs by
``canonicalize_url``'s form (:func:`canonical_key`). For most URLs a sitemap lists the two
are the same string, so the follower tags the reader's slot with the URL's segment
(:meth:`SeenUrls.tag_all`) instead of keeping a second table of the same keys (12 bytes a
slot: 201 MB at ten million URLs). The rest (a query whose arguments ``canonicalize_url``
sorts or quotes, another spelling of the host or port, the reader's de-duplication off, a
key another site's follower tagged first) go to a table of the follower's own
(:attr:`ListedUrls.others`). A slot's tag counts only when the follower put it there, so a
reader key that happens to be some other URL's canonical form is never taken as listed:
the answers are those of a table of canonical keys alone.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from w3lib.url import canonicalize_url

from sitemapcrawl.sitemaps.seen import SeenUrls, TaggedUrls

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ListedUrls", "SegmentTags", "canonical_key"]

#: URLs that ``canonicalize_url`` returns unchanged: lower-case host, a path of RFC 3986
#: path characters but ";" and no dot segment, at most one query argument of unreserved
#: characters, no fragment, nothing percent-encoded. Most URLs a sitemap lists have this
#: shape; matching it costs a twentieth of canonicalising (tests/test_links.py checks the
#: two agree on generated URLs).
_PATH = (
    r"https?://[a-z0-9](?:[a-z0-9.\-]*[a-z0-9])?(?::[0-9]{1,5})?"
    r"(?![^?]*/\.\.?(?:/|\?|$))/[A-Za-z0-9\-._~!$&'()*+,=:@/]*"
)
_PAIR = r"[A-Za-z0-9\-._~]+=[A-Za-z0-9\-._~]*"
_CANONICAL = re.compile(rf"{_PATH}(?:\?{_PAIR})?").fullmatch
#: The same with several such query arguments: ``canonicalize_url`` only sorts them (by
#: name, then value), which is done here without its parsing and re-quoting.
_SORTABLE = re.compile(rf"{_PATH}\?{_PAIR}(?:&{_PAIR})+").fullmatch


def canonical_key(url: str) -> str:
    """``url`` in the form links and listed URLs are compared in (``canonicalize_url``'s).

    >>> canonical_key("https://a.example/x/"), canonical_key("https://a.example/x?b=2&a=1#top")
    ('https://a.example/x/', 'https://a.example/x?a=1&b=2')
    >>> canonical_key("https://a.example/x?ref=s&page=7&a-b=1&a=")
    'https://a.example/x?a=&a-b=1&page=7&ref=s'
    """
    if _CANONICAL(url):
        return url
    if _SORTABLE(url):
        base, _, query = url.partition("?")
        pairs = sorted(pair.split("=", 1) for pair in query.split("&"))
        return base + "?" + "&".join(f"{name}={value}" for name, value in pairs)
    return canonicalize_url(url)


class SegmentTags:
    """The crawl's segment names as tags of the reader's URL table (1, 2, …; 0 is none),
    one numbering for every site's follower, since they tag the same table.

    >>> tags = SegmentTags()
    >>> tags.tag("/blog/"), tags.tag("/shop/"), tags.tag("/blog/"), tags.names[2]
    (1, 2, 1, '/shop/')
    """

    __slots__ = ("_ids", "names")

    def __init__(self) -> None:
        #: tag -> segment name (tag 0: none)
        self.names: list[str] = [""]
        self._ids: dict[str, int] = {}

    def tag(self, name: str) -> int:
        """``name``'s tag, given at its first use."""
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self.names)
            self.names.append(name)
        return found


class ListedUrls:
    """One follower's listed URLs (each once, by canonical key) and their segments.

    ``table``: the reader's de-duplication table, asked for at the first note (None: a
    table of its own). ``tags``: the segments' numbering, shared by every follower that
    tags the same table.

    >>> reader = SeenUrls()
    >>> for url in ("https://a.example/x", "https://a.example/q?b=1&a=2"):
    ...     _ = reader.add(url)
    >>> listed = ListedUrls(lambda: reader, SegmentTags())
    >>> listed.note(["https://a.example/x", "https://a.example/q?b=1&a=2"], "/s/")
    >>> listed.segment_of("https://a.example/q?a=2&b=1"), len(listed.others)
    ('/s/', 1)
    >>> "https://a.example/x" in listed, "https://a.example/y" in listed, listed.counts()
    (True, False, {'/s/': 2})
    """

    __slots__ = ("_counts", "_own", "_table", "_table_of", "_tags", "others")

    def __init__(self, table: Callable[[], SeenUrls | None], tags: SegmentTags) -> None:
        self._table_of = table
        self._table: SeenUrls | None = None
        self._tags = tags
        #: the keys not tagged in the reader's table
        self.others = TaggedUrls()
        #: the tags of this follower's segments, and how many keys each one listed first
        self._own: set[int] = set()
        self._counts: Counter[int] = Counter()

    def note(self, urls: list[str], segment: str) -> None:
        """One segment's URLs (a sitemap's run of them)."""
        tag = self._tag(segment)
        canonical = _CANONICAL  # most URLs: canonical_key's first test, without its call
        keys = [url if canonical(url) else canonical_key(url) for url in urls]
        values = SeenUrls.hashes(keys)
        self._counts[tag] += self._bound().tag_all(values, tag, self.others, self._own)

    def _tag(self, segment: str) -> int:
        tag = self._tags.tag(segment)
        self._own.add(tag)
        return tag

    def _bound(self) -> SeenUrls:
        """The reader's table, tagged from now on (a table of its own without a reader)."""
        table = self._table
        if table is None:
            table = self._table_of()  # (an empty table is falsy: no "or" here)
            if table is None:
                table = SeenUrls(capacity=16)
            self._table = table
            table.use_tags()
        return table

    def _tag_of(self, url: str) -> int | None:
        value = SeenUrls.hash(canonical_key(url))
        if self._table is not None:
            tag = self._table.tag_hash(value)
            if tag > 0 and tag in self._own:
                return tag
        tag = self.others.tag_hash(value)
        return None if tag < 0 else tag

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and self._tag_of(url) is not None

    def segment_of(self, url: str) -> str | None:
        """The segment that listed ``url`` first; None when none did."""
        tag = self._tag_of(url)
        return None if tag is None else self._tags.names[tag]

    def counts(self) -> dict[str, int]:
        """Per segment (in the order they were first noted), the URLs it listed first."""
        names = self._tags.names
        return {names[tag]: self._counts[tag] for tag in sorted(self._own)}

    def share(self) -> tuple[TaggedUrls, list[str]]:
        """Every key (its hash) with its segment's tag, in one table of its own, and the
        tags' names: for another worker (the reader's table holds other keys too)."""
        listed = TaggedUrls()
        if self._table is not None:
            for value, tag in self._table.tagged_hashes(self._own):
                listed.add_tagged(value, tag)
        for value, tag in self.others.tagged():
            listed.add_tagged(value, tag)
        return listed, self._tags.names

    def take(self, listed: TaggedUrls, names: list[str]) -> None:
        """Add another worker's :meth:`share` (its tags named by ``names``)."""
        table = self._bound()
        for value, tag in listed.tagged():
            mine = self._tag(names[tag])
            self._counts[mine] += table.tag_all((value,), mine, self.others, self._own)
