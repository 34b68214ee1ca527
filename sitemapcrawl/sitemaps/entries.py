"""Sitemap parsing: the rules every entry goes through, and their tallies.

``EntryRules`` is shared by the two XML readers (the byte scanner and lxml) and the text
and feed readers of one body, so an entry reads the same whichever parser met it: a
location must be a usable absolute http(s) URL (a relative one is resolved against the
sitemap's URL), a lastmod is parsed and an invalid one counted, a priority must be a number
in [0, 1], and a file holds at most the protocol's 50,000 URLs and 50,000 index children.
Problems are counted in ``counts`` and faults recorded in ``faults``, never raised.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from lxml import etree
from w3lib.url import safe_url_string

from . import extensions as ext
from .dates import parse_feed_date, parse_lastmod
from .errors import (
    LocBadScheme,
    LocControlChars,
    LocInvalid,
    LocInvisibleChars,
    LocInvisiblePadding,
    LocMissing,
    LocNotAbsolute,
    LocQueryOrFragment,
    LocRelativeOtherHost,
    LocRepeated,
    LocTooLong,
    LocUndecodable,
    MixedEntries,
    SitemapError,
    TagCase,
    TooManyUrls,
)
from .hosts import InvalidHost, canonical_url
from .model import SitemapRef, UrlEntry
from .scope import same_host
from .urls import (
    CUT,
    HTTP,
    PLAIN_URL,
    UNEXPANDED,
    XML_SPACE,
    bad_authority,
    invisible,
    strip_invisible,
)

if TYPE_CHECKING:
    import datetime as dt

    from lxml.etree import _Element

    from .dates import LastMod
    from .errors import EntryFault
    from .model import Limits

__all__ = ["EntryRules", "priority_value"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
#: Control characters: C0, DEL (also the reader's mark of a raw C0 libxml2 would drop), C1.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: ``_unusable``'s answer for a location made of an entity reference (not an entry fault:
#: the file's ``xml_entities`` fault tells why).
_UNEXPANDED = LocMissing
#: Protocol tags an entry may hold, by their lower-case names.
_PROTOCOL_TAGS = frozenset(("loc", "lastmod", "changefreq", "priority"))
#: The names of an entry's children read as they are (the others are checked for case).
_CHILD_TAGS = _PROTOCOL_TAGS | {"mobile", "link", "image", "video", "news", "PageMap"}
#: Bound here: CPython 3.11 compiles ``NAME.method()`` as an attribute load plus a call of
#: the bound method when NAME was imported, a cost on every entry.
_plain_url = PLAIN_URL.fullmatch


def _unusable(loc: str) -> type[EntryFault] | None:
    """Why a location (stripped of XML white space) that is not plain ASCII, or holds a
    control character, can never be a URL; None when it may be one.

    >>> _unusable("https://a.example/\\ufffd").code, _unusable("https://a.example/a\\tb").code
    ('loc_undecodable', 'loc_control_chars')
    >>> _unusable("https://a.example/\\xe9") is None
    True
    """
    if UNEXPANDED in loc:
        return _UNEXPANDED
    if CUT in loc:
        return LocTooLong
    if "\ufffd" in loc:  # what the decoders put for bytes invalid in the encoding
        return LocUndecodable
    if _CONTROLS.search(loc) is not None:
        return LocControlChars
    if invisible(loc):
        return LocInvisibleChars
    return None


def priority_value(text: str | None) -> tuple[float | None, bool]:
    """A ``<priority>`` text's value and whether it is invalid (not a number in [0, 1]).

    >>> priority_value("0.8"), priority_value("2"), priority_value("high"), priority_value(None)
    ((0.8, False), (None, True), (None, True), (None, False))
    """
    if text is None:
        return None, False
    try:
        priority = float(text)
    except ValueError:
        return None, True
    if not 0.0 <= priority <= 1.0:
        return None, True
    return priority, False


class EntryRules:
    """The entry rules of one sitemap body, with its tallies.

    ``url`` is where the body came from (relative locations are resolved against it, and
    must stay on its host), ``limits`` its caps, ``now`` the clock future lastmods
    are judged by. ``counts``: how often each per-entry problem happened (``loc_missing``,
    ``loc_relative``, ``loc_too_long``, ``loc_bad_scheme``, ``lastmod_invalid``,
    ``lastmod_nonstandard``, ``priority_invalid``, ``over_url_limit``…); ``faults``: the
    distinct problems (an entry fault, ``errors.EntryFault``, once: at its first entry);
    ``urls`` and ``sitemaps``: the URL entries and index children counted so far.
    ``index_root``: the file's root is a ``sitemapindex`` (None: neither kind of sitemap);
    an entry of the other kind is a ``mixed_entries`` fault.

    >>> from sitemapcrawl.sitemaps.model import Limits
    >>> rules = EntryRules("https://x.example/s.xml", Limits(max_urls=1))
    >>> rules.loc("/a#top"), rules.loc("javascript:alert(1)")
    (('https://x.example/a', True, True), (None, False, False))
    >>> dict(rules.counts)
    {'loc_relative': 1, 'loc_fragment_dropped': 1, 'loc_bad_scheme': 1}
    >>> rules.count_url(), rules.count_url(), [f.code for f in rules.faults]
    (True, True, ['loc_bad_scheme', 'too_many_urls'])
    """

    def __init__(self, url: str, limits: Limits, now: dt.datetime | None = None) -> None:
        self.url = url
        self.limits = limits
        self.now = now
        self.counts: Counter[str] = Counter()
        self.faults: list[SitemapError] = []
        self.urls = 0
        self.sitemaps = 0
        self.index_root: bool | None = None
        self._recorded: set[str] = set()  # the codes of the entry faults recorded

    def reset(self, faults_kept: int = 0) -> None:
        """Forget the tallies (a parser starts the body over), keeping the first
        ``faults_kept`` faults."""
        del self.faults[faults_kept:]
        self._recorded = {f.code for f in self.faults}
        self.counts.clear()
        self.urls = self.sitemaps = 0

    def entry_fault(self, fault: type[EntryFault], example: str | None, count: int = 1) -> None:
        """Count ``count`` entries with ``fault``; record it at the first (``example``).
        ``count=0``: record it (once) without counting an entry (the root's tag)."""
        code = fault.code
        if code not in self._recorded:
            self._recorded.add(code)
            if example is not None:
                example = example.replace(CUT, "[a text node too long, cut out]")
            self.faults.append(fault.at(example))
        if count:
            self.counts[code] += count

    # -- values ------------------------------------------------------------------------

    def loc(self, raw: str | None, base: str | None = None) -> tuple[str | None, bool, bool]:
        """Validate one location: absolute http(s), within the length limit; return it
        (None when unusable: counted, an entry fault), whether it was relative and whether
        its fragment was dropped.

        Only XML white space, and invisible padding (counted), is stripped at its ends. A
        location that holds a control character, an invisible character, undecodable bytes
        or a marker of text the reader cut is dropped, never cleaned into another URL. Its
        fragment is dropped (``loc_fragment_dropped``) and its host made canonical
        (``hosts.canonical_url``: ``0177.0.0.1`` is ``127.0.0.1``; a host no browser
        requests drops it). A relative location is
        resolved against the sitemap's URL (a relative path: against its directory) and
        kept only when it stays on the sitemap's host, or its ``www.`` twin (``base``: an
        explicit base, Atom's ``xml:base``, resolved against the sitemap's URL: it is the
        file's own word, so it may name another host).
        """
        if raw is None:
            self.entry_fault(LocMissing, None)
            return None, False, False
        if _plain_url(raw) and len(raw) <= self.limits.max_loc_length:
            return raw, False, False  # the common case, with nothing to check further
        loc = raw.strip(XML_SPACE)
        if not loc:
            self.entry_fault(LocMissing, None)
            return None, False, False
        if not loc.isascii() or _CONTROLS.search(loc) is not None:
            padded = loc
            loc = strip_invisible(loc)
            if loc != padded:
                self.entry_fault(LocInvisiblePadding, padded)
                if not loc:
                    self.entry_fault(LocMissing, None)
                    return None, False, False
                if loc.isascii() and _plain_url(loc) and len(loc) <= self.limits.max_loc_length:
                    return loc, False, False
            why = _unusable(loc)
            if why is not None:
                if why is not _UNEXPANDED:
                    self.entry_fault(why, loc)
                else:  # an entity reference, never expanded: xml_entities tells why
                    self.counts["loc_unexpanded_entity"] += 1
                return None, False, False
        relative = False
        if not loc.startswith(HTTP):
            lowered = loc[:8].lower()
            if lowered.startswith(HTTP):  # "HTTP://": schemes are case-insensitive
                colon = loc.index(":")
                loc = lowered[:colon] + loc[colon:]
            else:
                resolved = self._resolve(loc, base)
                if resolved is None:
                    return None, False, False
                loc, relative = resolved, True
        if not loc.isascii() or " " in loc or "[" in loc or "]" in loc:
            try:
                loc = safe_url_string(loc)
            except ValueError:  # a bracketed host that is not an IP address
                self.entry_fault(LocInvalid, loc)
                return None, False, False
            if " " in loc:  # left in the host: no such host
                self.entry_fault(LocInvalid, loc)
                return None, False, False
        fragment = "#" in loc
        if fragment:  # the page is the URL without it: one item, one fetch
            loc = loc[: loc.index("#")]
            self.counts["loc_fragment_dropped"] += 1
        try:
            loc = canonical_url(loc)
        except InvalidHost:  # a host no browser requests ("1.2.3.4.5", "256.0.0.1")
            self.entry_fault(LocInvalid, loc)
            return None, False, False
        if len(loc) > self.limits.max_loc_length:
            self.entry_fault(LocTooLong, loc)
            return None, False, False
        if bad_authority(loc):
            self.entry_fault(LocInvalid, loc)
            return None, False, False
        return loc, relative, fragment

    def _resolve(self, loc: str, base: str | None) -> str | None:
        """A location without an http(s) scheme, resolved (None: dropped, counted)."""
        if _SCHEME.match(loc):  # RFC 3986 scheme: javascript:, data:, user-agent:…
            self.entry_fault(LocBadScheme, loc)
            return None
        if loc[0] in "?#":
            self.entry_fault(LocQueryOrFragment, loc)
            return None
        try:
            resolved = urljoin(self.url if base is None else urljoin(self.url, base), loc)
        except ValueError:  # "//[not-an-address" and the like
            self.entry_fault(LocInvalid, loc)
            return None
        if not resolved[:8].lower().startswith(HTTP):  # only from a non-http base URL
            self.entry_fault(LocBadScheme, resolved)
            return None
        if base is None and not same_host(resolved, self.url):  # "//other.example/x"
            self.entry_fault(LocRelativeOtherHost, loc)
            return None
        self.counts["loc_relative"] += 1
        return resolved

    def lastmod(self, raw: str | None, feed: bool = False) -> LastMod | None:
        """The parsed ``<lastmod>`` (``feed``: an RSS date), an invalid one counted."""
        if raw is None:
            return None
        parsed = parse_feed_date(raw, now=self.now) if feed else parse_lastmod(raw, now=self.now)
        if parsed is not None and (parsed.value is None or "nonstandard" in parsed.flags):
            self.tally_lastmod(parsed)
        return parsed

    def tally_lastmod(self, lastmod: LastMod) -> None:
        """Count a lastmod that is invalid or in a nonstandard form."""
        flags = lastmod.flags
        if lastmod.value is None:
            self.counts["lastmod_invalid"] += 1
        elif "nonstandard" in flags:
            self.counts["lastmod_nonstandard"] += 1

    def priority(self, raw: str) -> float | None:
        """The ``<priority>`` value; an invalid one is counted and read as None."""
        priority, invalid = priority_value(raw)
        if invalid:
            self.counts["priority_invalid"] += 1
        return priority

    # -- limits ------------------------------------------------------------------------

    def count_url(self) -> bool:
        """Count a URL entry; False when reading must stop at the protocol limit."""
        self.urls += 1
        if self.urls > self.limits.max_urls:
            return self.over_url_limit()
        return True

    def over_url_limit(self) -> bool:
        """The URL entry just counted is past the protocol limit: record it; False when
        reading must stop there (unless ``keep_excess``)."""
        if self.urls == self.limits.max_urls + 1:
            self.faults.append(
                TooManyUrls(f"more than {self.limits.max_urls} URLs in one sitemap file")
            )
        self.counts["over_url_limit"] += 1
        return self.limits.keep_excess

    def _sitemap_ref(self, loc: str, lastmod: LastMod | None, relative: bool) -> SitemapRef | None:
        """An index child, counted: past the protocol limit (the same 50,000 as for URLs)
        it is counted as such, and kept only with ``keep_excess``."""
        self.sitemaps += 1
        if self.sitemaps > self.limits.max_urls:
            if self.sitemaps == self.limits.max_urls + 1:
                self.faults.append(
                    TooManyUrls(f"more than {self.limits.max_urls} sitemaps in one index file")
                )
            self.counts["over_url_limit"] += 1
            if not self.limits.keep_excess:
                return None
        return SitemapRef(loc, lastmod, relative, self.sitemaps - 1)

    # -- entries -----------------------------------------------------------------------

    def text_line(self, line: str, position: int) -> UrlEntry | None:
        """The entry of one line of a text sitemap (None: blank, a comment, unusable)."""
        line = line.strip(XML_SPACE)
        if not line or line[0] == "#":
            return None
        if _plain_url(line) and len(line) <= self.limits.max_loc_length:
            return UrlEntry(line, position=position)  # the common case, as ``loc`` gives it
        if not line[:8].lower().startswith(HTTP):  # never resolved: only absolute URLs
            why = _unusable(line)
            if why is None or why is _UNEXPANDED:
                why = LocBadScheme if _SCHEME.match(line) else LocNotAbsolute
            self.entry_fault(why, line)
            return None
        loc, _, fragment = self.loc(line)
        if loc is None:
            return None
        return UrlEntry(loc, position=position, fragment=fragment)

    def element(self, el: _Element) -> UrlEntry | SitemapRef | None:
        """The entry of a ``<url>`` or ``<sitemap>`` element, lxml's or the scanner's light
        one (None: its location is unusable, or an index child past the limit).

        Protocol tags in another case (``<URL>``, ``<Loc>``) are read as the protocol's
        (``tag_case``); an entry of the other kind than the root is read all the same
        (``mixed_entries``); of two ``<loc>``, the first is read (``loc_repeated``).
        """
        tag = el.tag
        local = tag[tag.rfind("}") + 1 :]
        is_index = local == "sitemap"
        miscased = False
        if not is_index and local != "url":  # <URL>, <Sitemap>
            local = local.lower()
            is_index = local == "sitemap"
            miscased = True
        if is_index is not self.index_root and self.index_root is not None:
            root = "sitemapindex" if self.index_root else "urlset"
            self.entry_fault(MixedEntries, f"<{local}> in a <{root}>")
        loc_raw = lastmod_raw = changefreq = priority_raw = None
        lists: dict[str, list[dict[str, object]]] | None = None
        mobile = has_loc = False
        child_tags = _CHILD_TAGS
        for child in el:
            ctag = child.tag
            if type(ctag) is not str:
                continue
            name = ctag[ctag.rfind("}") + 1 :]
            if name not in child_tags:
                lowered = name.lower()
                if lowered in _PROTOCOL_TAGS:  # <LOC>, <LastMod>
                    name = lowered
                    miscased = True
            if name == "loc":
                if has_loc:
                    self.entry_fault(LocRepeated, _loc_text(child))
                    continue
                has_loc = True
                if not len(child):
                    loc_raw = child.text
                    if loc_raw is not None:
                        loc_raw = loc_raw.strip(XML_SPACE) or None
                    continue
                if any(sub.tag is etree.Entity for sub in child.iter()):
                    # An entity left unexpanded on purpose: the location is unknowable.
                    self.counts["loc_unexpanded_entity"] += 1
                    return None
                loc_raw = _loc_text(child)
            elif name == "lastmod":
                lastmod_raw = child.text
                if lastmod_raw is not None:
                    lastmod_raw = lastmod_raw.strip() or None
            elif is_index:
                continue
            elif name == "changefreq":
                changefreq = ext.text_of(child)
            elif name == "priority":
                priority_raw = ext.text_of(child)
            elif name == "mobile":
                mobile = True
            else:
                lists = _extension(lists, name, child)
        if miscased:
            self.entry_fault(TagCase, _start_tag(el))
        if not has_loc and is_index and el.text:
            # Lenient: a <sitemap> holding its URL as bare text (seen in the wild).
            loc_raw = el.text.strip(XML_SPACE) or None
        loc, relative, fragment = self.loc(loc_raw)
        if loc is None:
            return None
        lastmod = self.lastmod(lastmod_raw)
        if is_index:
            return self._sitemap_ref(loc, lastmod, relative)
        entry = UrlEntry(
            loc,
            lastmod,
            changefreq.lower() if changefreq else None,
            None if priority_raw is None else self.priority(priority_raw),
            mobile=mobile,
            relative=relative,
            position=self.urls,
            fragment=fragment,
        )
        if lists is not None:
            entry.news = lists["news"]
            entry.images = lists["images"]
            entry.videos = lists["videos"]
            entry.alternates = lists["alternates"]
            entry.pagemap = lists["pagemap"]
        return entry

    def rss_item(self, el: _Element) -> UrlEntry | None:
        """The entry of an RSS ``<item>``: its link (or permalink guid), its date."""
        link = guid = date_raw = None
        iso_date = False
        for child in el:
            name = ext.local_name(child.tag)
            if name == "link":
                link = _loc_text(child) or child.get("href")
            elif name == "guid" and (child.get("isPermaLink") or "true").lower() != "false":
                guid = _loc_text(child)
            elif name == "pubDate":
                date_raw = ext.text_of(child)
            elif name == "date" and date_raw is None:  # RSS 1.0 dc:date (W3C format)
                date_raw, iso_date = ext.text_of(child), True
        about = el.get("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about")
        loc, relative, fragment = self.loc(link or guid or about)
        if loc is None:
            return None
        return UrlEntry(
            loc,
            self.lastmod(date_raw, feed=not iso_date),
            relative=relative,
            position=self.urls,
            fragment=fragment,
        )

    def atom_entry(self, el: _Element) -> UrlEntry | None:
        """The entry of an Atom ``<entry>``: its alternate link, updated (or published).
        A relative link is resolved against its ``xml:base`` (on the link, the entry or
        the feed), when there is one."""
        href = updated = published = base = None
        for child in el:
            name = ext.local_name(child.tag)
            if name == "link" and href is None and child.get("rel", "alternate") == "alternate":
                href = child.get("href")
                href = href.strip(XML_SPACE) if href else None
                base = child.base  # xml:base, resolved through the ancestors (None: none)
            elif name == "updated":
                updated = ext.text_of(child)
            elif name == "published":
                published = ext.text_of(child)
        loc, relative, fragment = self.loc(href, base)
        if loc is None:
            return None
        return UrlEntry(
            loc,
            self.lastmod(updated or published),
            relative=relative,
            position=self.urls,
            fragment=fragment,
        )


def _loc_text(el: _Element) -> str | None:
    """A ``<loc>``'s text (across CDATA and what comments and PIs split), with only XML
    white space stripped; None when empty."""
    text = "".join(el.itertext()) if len(el) else el.text
    if text is None:
        return None
    return text.strip(XML_SPACE) or None


def _start_tag(el: _Element) -> str:
    """An entry's tag and its children's, as written (the example of ``tag_case``)."""
    names = [ext.local_name(child.tag) for child in el]
    return f"<{ext.local_name(el.tag)}>" + "".join(f"<{n}>" for n in names if n)


def _extension(
    lists: dict[str, list[dict[str, object]]] | None, name: str, child: _Element
) -> dict[str, list[dict[str, object]]]:
    """Add an extension element of a ``<url>`` (an image, a video, news, an hreflang link,
    a PageMap; anything else is skipped) to the entry's lists, made on the first one."""
    if lists is None:
        lists = {"news": [], "images": [], "videos": [], "alternates": [], "pagemap": []}
    if name == "link":
        alt = ext.alternate(child)
        if alt is not None:
            lists["alternates"].append(alt)
    elif name == "image":
        lists["images"].append(ext.image(child))
    elif name == "video":
        lists["videos"].append(ext.video(child))
    elif name == "news":
        lists["news"].append(ext.news(child))
    elif name == "PageMap":
        lists["pagemap"].extend(ext.pagemap(child))
    return lists
