"""Sitemap parsing: the byte scanner for well-formed XML urlsets and sitemap indexes.

``Scan`` reads the decoded byte stream with compiled regular expressions and ``bytes``
methods instead of building an lxml tree: one regex match per ordinary ``<url>`` (``loc``,
``lastmod``, ``changefreq``, ``priority`` in that order as plain text, then ``xhtml:link``
alternates and ``image:image`` entries of the common shape), and one ``findall`` into light
elements (``markup.El``) for any other ``<url>`` or ``<sitemap>`` (other extensions,
attributes, orders, prefixes), which go through the entry rules like lxml's elements. It
understands only a strict subset of XML (``markup``) and stops, with a reason, at the first
thing it does not fully understand, an entry or a run of white space over
``markup.MAX_BLOCK`` bytes, a body that ends before the root is closed, or anything after
it. The reader then hands the body to lxml, which gives the answer for the whole file; the
entries the scanner yielded are exactly lxml's first ones (``tests/test_scan.py`` checks it).

In an ordinary entry, the common cases take shortcuts that give what the general code
would: a plain location is checked with ``translate`` and a cached scheme and authority,
a W3C ``lastmod`` is decoded by ``dates.w3c_lastmod``, and extensions made only of
printable ASCII are split rather than decoded value by value.

The scanner keeps at most one chunk plus one entry in memory (its caches are bounded), and
reads the chunks as the decoder produces them, so the decoder's caps apply unchanged.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import TYPE_CHECKING, Final, cast

from .dates import w3c_lastmod
from .entries import priority_value
from .markup import (
    CACHE_MAX,
    END,
    MAX_BLOCK,
    MAX_TAG,
    SPACE,
    TAG,
    XML_DECL,
    Markup,
    Unsupported,
    text,
)
from .model import SitemapRef, UrlEntry
from .scanext import PREFIXES, grammar, read
from .urls import PLAIN_BYTES, PLAIN_HEAD

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from lxml.etree import _Element

    from .dates import LastMod
    from .entries import EntryRules

__all__ = ["Scan"]

_S = rb"[ \t\n\r]*"
_TEXT = rb"([^<]*)"
# (An optional part is written "(?:...|)", not "(?:...)?": the same matches, and the
# regex engine takes a branch faster than it repeats a group at most once.)
_CORE = (
    _S + rb"<url>" + _S
    + rb"<loc>[ \t\n\r]*+" + _TEXT + rb"</loc>" + _S
    + rb"(?:<lastmod>" + _TEXT + rb"</lastmod>" + _S + rb"|)"
    + rb"(?:<changefreq>" + _TEXT + rb"</changefreq>" + _S + rb"|)"
    + rb"(?:<priority>" + _TEXT + rb"</priority>" + _S + rb"|)"
)  # fmt: skip
_SIMPLE: dict[frozenset[str], re.Pattern[bytes]] = {}
#: The first entries, read before any is given: most of them of shapes only the light
#: elements read, and lxml reads the body instead.
_PROBE: Final = 16
_NEVER = re.compile(rb"(?!)").match
#: Bound here: CPython 3.11 compiles ``NAME.method()`` as an attribute load plus a call of
#: the bound method when NAME was imported (this one runs at each chunk and odd entry).
_space = SPACE.match
#: A W3C datetime's characters, nothing to strip, decode or check (``text`` is a no-op).
_LASTMOD_SHAPE = re.compile(
    rb"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt][0-9:.]{5,40}(?:[Zz]|[+-][0-9:]{2,5})?)?"
)


def _simple(prefixes: frozenset[str]) -> re.Pattern[bytes]:
    """An ordinary entry: the four protocol tags, unprefixed, in protocol order, text
    only (groups 1-4); then extension elements of the shapes ``scanext`` reads, for the
    prefixes among ``scanext.PREFIXES`` the document declares (group 5)."""
    if prefixes not in _SIMPLE:
        shape = grammar(prefixes)
        extensions = rb"((?:" + shape + _S + rb")*+)" if shape else rb"()"
        _SIMPLE[prefixes] = re.compile(_CORE + extensions + rb"</url>")
    return _SIMPLE[prefixes]


def _plain_head(loc: bytes, head: bytes) -> tuple[bytes, bool]:
    """Whether ``loc`` starts as a plain URL (``urls.PLAIN_HEAD``), and the head to test
    the next locations with: its start up to the path, when it has one (the match depends
    on nothing after the "/", "?" or "#" that ends it, so a location that starts the same
    matches), else ``head`` unchanged."""
    start = PLAIN_HEAD.match(loc)
    if start is None:
        return head, False
    if start.end() < len(loc):
        return loc[: start.end() + 1], True
    return head, True


class Scan:
    """One scan of one body, read under ``rules`` (their tallies are the scan's). Iterate
    to get the entries; afterwards ``complete`` says whether the scanner read the whole
    document (else ``reason`` says why it stopped and lxml must read it), and ``replay``
    holds the chunks it consumed when it yielded nothing and they fit in
    ``markup.MAX_BLOCK`` (lxml can then go on with them), else None. ``transcoded``: the
    body was transcoded to UTF-8 (a UTF-16 or UTF-32 declaration then holds no more)."""

    def __init__(
        self, rules: EntryRules, chunks: Iterator[bytes], *, transcoded: bool = False
    ) -> None:
        self.rules = rules
        self.chunks = chunks
        self.transcoded = transcoded
        self.complete = False
        self.reason: str | None = None
        self.replay: list[bytes] | None = []
        self.yielded = 0
        #: Entries read through the light elements (the general, slower path).
        self.general = 0
        self._probing = True
        self._replay_size = 0
        self._eof = False
        self._markup = Markup()
        self._end_tag = b""
        self._lastmods: dict[bytes, LastMod] = {}  # what w3c_lastmod gave
        self._days: dict[bytes, LastMod] = {}  # the same for the values of 10 bytes
        self._other_lastmods: dict[bytes, LastMod | None] = {}
        self._changefreqs: dict[bytes, str | None] = {}
        self._priorities: dict[bytes, tuple[float | None, bool]] = {}
        self._plain_priorities: dict[bytes, float] = {}

    # -- input --------------------------------------------------------------------------

    def _read(self) -> bytes | None:
        for chunk in self.chunks:
            if self.replay is not None:
                self.replay.append(chunk)
                self._replay_size += len(chunk)
                if (self.yielded and not self._probing) or self._replay_size > MAX_BLOCK:
                    self.replay = None
            if chunk:
                return chunk
        self._eof = True
        return None

    def _more(self, buf: bytes, pos: int) -> tuple[bytes, int]:
        """Drop what was read and append the next chunk; at the end, set ``_eof``."""
        if len(buf) - pos > MAX_BLOCK:
            raise Unsupported(f"an entry longer than {MAX_BLOCK} bytes")
        chunk = self._read()
        if chunk is None:
            return buf[pos:], 0
        return buf[pos:] + chunk, 0

    # -- the document -------------------------------------------------------------------

    def __iter__(self) -> Iterator[UrlEntry | SitemapRef]:
        return self._probed(self._content())

    def _probed(
        self, entries: Generator[UrlEntry | SitemapRef, None, None]
    ) -> Iterator[UrlEntry | SitemapRef]:
        """The entries, once the first ``_PROBE`` are read: when most of them went through
        the light elements, which cost more than lxml's path, the scan gives up having given
        nothing, and lxml reads the body from its start (without a second decode when the
        chunks read so far fit in ``markup.MAX_BLOCK``)."""
        probe = list(islice(entries, _PROBE))
        self._probing = False
        if self.reason is None and len(probe) == _PROBE and self.general * 2 > _PROBE:
            self.reason = "entries of shapes the scanner reads slower than lxml"
            self.yielded = 0
            entries.close()
            return
        yield from probe
        if self.reason is None:
            yield from entries

    def _head(self) -> tuple[bytes, int]:
        """Read the XML declaration (if any) and the root element's start tag; return the
        buffer and the position after them."""
        buf = b""
        while True:
            chunk = self._read()
            if chunk is None:
                raise Unsupported("the body ends in the root element's start tag")
            buf += chunk
            if buf.startswith(b"<?"):
                decl = XML_DECL.match(buf)
                if decl is None:
                    if b"?>" in buf:
                        raise Unsupported("an XML declaration the scanner does not read")
                    continue
                encoding = decl.group(1) or decl.group(2)
                if encoding is not None and encoding.lower() != b"utf-8" and not self.transcoded:
                    raise Unsupported("a declared encoding other than UTF-8")
                pos = SPACE.match(buf, decl.end()).end()  # type: ignore[union-attr]
            else:
                pos = 0
            root = TAG.match(buf, pos)
            if root is None:
                if len(buf) - pos < MAX_TAG:
                    continue
                raise Unsupported("a root start tag the scanner does not read")
            break
        closing, qname, attrs, empty = root.groups()
        if closing or empty:
            raise Unsupported("an empty root element")
        self._end_tag = b"</" + qname
        self._markup.declare(attrs)
        self._markup.qname(qname, element=True)
        return buf, root.end()

    def _content(self) -> Generator[UrlEntry | SitemapRef, None, None]:
        # One generator, not three: each level of ``yield from`` costs every entry. An
        # ordinary entry is read inline; anything else is a step of ``_between``.
        try:
            buf, pos = self._head()
        except Unsupported as exc:
            self.reason = str(exc)
            return
        rules = self.rules
        max_urls, max_loc, now = rules.limits.max_urls, rules.limits.max_loc_length, rules.now
        simple = _simple(frozenset(p for p in PREFIXES if p in self._markup.ns)).match
        if rules.index_root:  # a <url> there is a fault (mixed_entries): the rules read it
            simple = _NEVER
        head = b"\0"  # what the last plain location started with, up to its path
        lastmods, days, changefreqs = self._lastmods, self._days, self._changefreqs
        priorities = self._plain_priorities
        markup = self._markup
        blank = 0  # white space between entries since the last one, across chunks
        try:
            while True:
                match = simple(buf, pos)
                extensions = None
                if match is not None:
                    loc_b, lastmod_b, changefreq_b, priority_b, raw_extensions = match.groups()
                    if raw_extensions:
                        extensions = read(raw_extensions, markup)
                        if extensions is None:
                            match = None  # the entry goes through the light elements
                if match is None:
                    buf, pos, blank, found = self._between(buf, pos, blank)
                    if found is not None:
                        self.yielded += 1
                        yield found
                    elif self.complete:
                        return
                    continue
                # An ordinary entry: what ``rules.element`` would make of it.
                blank = 0
                pos = match.end()
                loc_b = loc_b.rstrip(b" \t\n\r")  # (the regex took the leading space)
                plain_head = loc_b.startswith(head)
                if not plain_head:
                    head, plain_head = _plain_head(loc_b, head)
                if plain_head and 0 not in loc_b.translate(PLAIN_BYTES) and len(loc_b) <= max_loc:
                    loc = loc_b.decode("ascii")  # rules.loc would return it as is
                    relative = fragment = False
                else:
                    checked, relative, fragment = rules.loc(text(loc_b) or None)
                    if checked is None:
                        continue
                    loc = checked
                lastmod = None
                if lastmod_b is not None:
                    # Dates apart: they repeat, times may not (and would evict them).
                    cache = days if len(lastmod_b) == 10 else lastmods
                    lastmod = cache.get(lastmod_b)
                    if lastmod is None:
                        lastmod = w3c_lastmod(lastmod_b, now)
                        if lastmod is None:
                            lastmod = self._other_lastmod(lastmod_b)
                        else:
                            if len(cache) >= CACHE_MAX:
                                cache.clear()
                            cache[lastmod_b] = lastmod
                changefreq = None
                if changefreq_b is not None:
                    changefreq = changefreqs.get(changefreq_b) or self._changefreq(changefreq_b)
                priority = None
                if priority_b is not None:
                    priority = priorities.get(priority_b)
                    if priority is None:
                        priority = self._priority(priority_b)
                urls = rules.urls
                # UrlEntry's fields in order (tests/test_scan.py checks it): a call
                # without keywords or default factories is cheaper.
                if extensions is None:
                    entry = UrlEntry(
                        loc,
                        lastmod,
                        changefreq,
                        priority,
                        [],
                        [],
                        [],
                        [],
                        False,
                        [],
                        relative,
                        urls,
                        fragment,
                    )
                else:
                    entry = UrlEntry(
                        loc,
                        lastmod,
                        changefreq,
                        priority,
                        extensions.news,
                        extensions.images,
                        extensions.videos,
                        extensions.alternates,
                        extensions.mobile,
                        [],
                        relative,
                        urls,
                        fragment,
                    )
                urls += 1
                rules.urls = urls
                if urls > max_urls and not rules.over_url_limit():
                    self.complete = True
                    return
                self.yielded += 1
                yield entry
        except Unsupported as exc:
            self.reason = str(exc)

    def _between(
        self, buf: bytes, pos: int, blank: int
    ) -> tuple[bytes, int, int, UrlEntry | SitemapRef | None]:
        """One step where no ordinary entry starts at ``pos``: white space (``blank``
        counts it since the last entry, across chunks), the end of the buffer (more is
        read), the root's end tag (the document is then ``complete``) or an entry of
        another shape, read by the entry rules. Returns the buffer, the position, the
        count of white space and the entry to yield, if any (counted: when the URL limit
        stops the reading, ``complete`` is set instead)."""
        end = _space(buf, pos).end()  # type: ignore[union-attr]
        blank += end - pos
        pos = end
        if blank > MAX_BLOCK:  # lxml keeps it as a text node, and caps those
            raise Unsupported(f"more than {MAX_BLOCK} bytes of white space")
        if pos >= len(buf):
            if self._eof:
                raise Unsupported("the body ends before the root element is closed")
            buf, pos = self._more(buf, pos)
            return buf, pos, blank, None
        if buf[pos] != 0x3C:  # "<"
            raise Unsupported("text between entries")
        if buf.startswith(self._end_tag, pos):
            self._end(buf, pos + len(self._end_tag))
            return buf, pos, blank, None
        block = self._markup.block(buf, pos, self._eof)
        if block is None:
            if self._eof:
                raise Unsupported("the body ends inside an entry")
            buf, pos = self._more(buf, pos)
            return buf, pos, blank, None
        element, pos = block
        self.general += 1
        found = self.rules.element(cast("_Element", element))
        if type(found) is UrlEntry and not self.rules.count_url():
            self.complete = True
            found = None
        return buf, pos, 0, found

    def _end(self, buf: bytes, pos: int) -> None:
        """After ``</root``: ``>``, then nothing but white space to the end of the body."""
        while True:
            match = END.match(buf, pos)
            if match is not None:
                pos = match.end()
                break
            if self._eof or buf[pos:].strip(b" \t\n\r"):
                raise Unsupported("a malformed end tag of the root element")
            buf, pos = self._more(buf, pos)
        while True:
            pos = _space(buf, pos).end()  # type: ignore[union-attr]
            if pos < len(buf):
                raise Unsupported("content after the root element")
            if self._eof:
                self.complete = True
                return
            buf, pos = self._more(buf, pos)

    # -- values, cached: a sitemap repeats them -------------------------------------------

    def _other_lastmod(self, raw: bytes) -> LastMod | None:
        """``rules.lastmod`` of a ``<lastmod>`` text ``w3c_lastmod`` does not take."""
        cache = self._other_lastmods
        if raw in cache:
            lastmod = cache[raw]
            if lastmod is not None and lastmod.flags:
                self.rules.tally_lastmod(lastmod)
            return lastmod
        if _LASTMOD_SHAPE.fullmatch(raw) is not None:
            lastmod = self.rules.lastmod(raw.decode("ascii"))
        else:
            lastmod = self.rules.lastmod(text(raw).strip() or None)
        if len(cache) >= CACHE_MAX:
            cache.clear()
        if lastmod is None or "future" not in lastmod.flags:
            cache[raw] = lastmod
        return lastmod

    def _changefreq(self, raw: bytes) -> str | None:
        cache = self._changefreqs
        if raw in cache:
            return cache[raw]
        value = text(raw).strip() or None  # extensions.text_of
        value = value.lower() if value else None
        if len(cache) >= CACHE_MAX:
            cache.clear()
        cache[raw] = value
        return value

    def _priority(self, raw: bytes) -> float | None:
        """The value; ``_plain_priorities`` caches the valid ones, this the others."""
        cached = self._priorities.get(raw)
        if cached is None:
            cached = priority_value(text(raw).strip() or None)  # extensions.text_of
            if len(self._priorities) >= CACHE_MAX:
                self._priorities.clear()
                self._plain_priorities.clear()
            self._priorities[raw] = cached
            if cached[0] is not None:
                self._plain_priorities[raw] = cached[0]
        if cached[1]:
            self.rules.counts["priority_invalid"] += 1
        return cached[0]
