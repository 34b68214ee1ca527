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
from .errors import SitemapError, TooManyUrls
from .model import SitemapRef, UrlEntry
from .urls import HTTP, PLAIN_URL, UNEXPANDED, authority, bad_authority

if TYPE_CHECKING:
    import datetime as dt

    from lxml.etree import _Element

    from .dates import LastMod
    from .model import Limits

__all__ = ["EntryRules", "priority_value"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
_C0_SPACE = "".join(map(chr, range(0x21))) + "\x7f"
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
#: Bound here: CPython 3.11 compiles ``NAME.method()`` as an attribute load plus a call of
#: the bound method when NAME was imported, a cost on every entry.
_plain_url = PLAIN_URL.fullmatch


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

    ``url`` is where the body came from (relative locations are resolved against it),
    ``limits`` its caps, ``now`` the clock future lastmods are judged by. ``counts``: how
    often each per-entry problem happened (``loc_missing``, ``loc_relative``,
    ``loc_too_long``, ``loc_bad_scheme``, ``lastmod_invalid``, ``priority_invalid``,
    ``over_url_limit``…); ``faults``: the distinct problems; ``urls`` and ``sitemaps``: the
    URL entries and index children counted so far.

    >>> from sitemapcrawl.sitemaps.model import Limits
    >>> rules = EntryRules("https://x.example/s.xml", Limits(max_urls=1))
    >>> rules.loc("/a"), rules.loc("javascript:alert(1)"), dict(rules.counts)
    (('https://x.example/a', True), (None, False), {'loc_relative': 1, 'loc_bad_scheme': 1})
    >>> rules.count_url(), rules.count_url(), [f.code for f in rules.faults]
    (True, True, ['too_many_urls'])
    """

    def __init__(self, url: str, limits: Limits, now: dt.datetime | None = None) -> None:
        self.url = url
        self.limits = limits
        self.now = now
        self.counts: Counter[str] = Counter()
        self.faults: list[SitemapError] = []
        self.urls = 0
        self.sitemaps = 0

    def reset(self, faults_kept: int = 0) -> None:
        """Forget the tallies (a parser starts the body over), keeping the first
        ``faults_kept`` faults."""
        del self.faults[faults_kept:]
        self.counts.clear()
        self.urls = self.sitemaps = 0

    # -- values ------------------------------------------------------------------------

    def loc(self, raw: str | None) -> tuple[str | None, bool]:
        """Validate one location: absolute http(s), within the length limit; return it
        (None when unusable, counted) and whether it was relative.

        As browsers do (WHATWG URL), leading and trailing control characters and spaces
        are stripped, tabs and newlines inside are removed, and other control characters
        are percent-encoded; a location that had any is counted (``loc_control_chars``).
        """
        if raw is None:
            self.counts["loc_missing"] += 1
            return None, False
        if _plain_url(raw) and len(raw) <= self.limits.max_loc_length:
            return raw, False  # the common case, with nothing to check further
        loc = raw
        if UNEXPANDED in loc:  # made of an entity reference, never expanded: unknowable
            self.counts["loc_unexpanded_entity"] += 1
            return None, False
        controls = _CONTROLS.search(loc) is not None
        if controls:
            loc = loc.strip(_C0_SPACE).translate(_TAB_NEWLINE)
            if not loc:
                self.counts["loc_missing"] += 1
                return None, False
        relative = False
        if not loc.startswith(HTTP):
            lowered = loc[:8].lower()
            if lowered.startswith(HTTP):  # "HTTP://": schemes are case-insensitive
                colon = loc.index(":")
                loc = lowered[:colon] + loc[colon:]
            else:
                if _SCHEME.match(loc):  # RFC 3986 scheme: javascript:, data:, user-agent:…
                    self.counts["loc_bad_scheme"] += 1
                    return None, False
                try:
                    loc = urljoin(self.url, loc)
                except ValueError:  # "//[not-an-address" and the like
                    self.counts["loc_invalid"] += 1
                    return None, False
                relative = True
                if not loc[:8].lower().startswith(HTTP):  # only from a non-http base URL
                    self.counts["loc_bad_scheme"] += 1
                    return None, False
                self.counts["loc_relative"] += 1
        if controls:
            self.counts["loc_control_chars"] += 1
            if _CONTROLS.search(authority(loc)):  # no host has one: it cannot be fixed
                self.counts["loc_invalid"] += 1
                return None, False
        if controls or not loc.isascii() or " " in loc or "[" in loc or "]" in loc:
            try:
                loc = safe_url_string(loc.strip())
            except ValueError:  # a bracketed host that is not an IP address
                self.counts["loc_invalid"] += 1
                return None, False
            if _CONTROLS.search(loc) or " " in loc:  # left in the host: no such host
                self.counts["loc_invalid"] += 1
                return None, False
        if len(loc) > self.limits.max_loc_length:
            self.counts["loc_too_long"] += 1
            return None, False
        if bad_authority(loc):
            self.counts["loc_invalid"] += 1
            return None, False
        return loc, relative

    def lastmod(self, raw: str | None, feed: bool = False) -> LastMod | None:
        """The parsed ``<lastmod>`` (``feed``: an RSS date), an invalid one counted."""
        if raw is None:
            return None
        parsed = parse_feed_date(raw, now=self.now) if feed else parse_lastmod(raw, now=self.now)
        if parsed is not None and parsed.value is None:
            self.counts["lastmod_invalid"] += 1
        return parsed

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
        line = line.strip().strip("\ufeff")
        if not line or line.startswith("#"):
            return None
        loc, relative = self.loc(line)
        if loc is None:
            return None
        return UrlEntry(loc, relative=relative, position=position)

    def element(self, el: _Element) -> UrlEntry | SitemapRef | None:
        """The entry of a ``<url>`` or ``<sitemap>`` element, lxml's or the scanner's light
        one (None: its location is unusable, or an index child past the limit)."""
        tag = el.tag
        is_index = tag[tag.rfind("}") + 1 :] == "sitemap"
        loc_raw = lastmod_raw = changefreq = priority_raw = None
        lists: dict[str, list[dict[str, object]]] | None = None
        mobile = has_loc = False
        for child in el:
            ctag = child.tag
            if type(ctag) is not str:
                continue
            name = ctag[ctag.rfind("}") + 1 :]
            if name == "loc":
                has_loc = True
                if len(child):
                    if any(sub.tag is etree.Entity for sub in child.iter()):
                        # An entity left unexpanded on purpose: the location is unknowable.
                        self.counts["loc_unexpanded_entity"] += 1
                        return None
                    loc_raw = ext.text_of(child)
                else:
                    loc_raw = child.text
                    if loc_raw is not None:
                        loc_raw = loc_raw.strip() or None
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
        if not has_loc and is_index and el.text:
            # Lenient: a <sitemap> holding its URL as bare text (seen in the wild).
            loc_raw = el.text.strip() or None
        loc, relative = self.loc(loc_raw)
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
                link = ext.text_of(child) or child.get("href")
            elif name == "guid" and (child.get("isPermaLink") or "true").lower() != "false":
                guid = ext.text_of(child)
            elif name == "pubDate":
                date_raw = ext.text_of(child)
            elif name == "date" and date_raw is None:  # RSS 1.0 dc:date (W3C format)
                date_raw, iso_date = ext.text_of(child), True
        about = el.get("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about")
        loc, relative = self.loc(link or guid or about)
        if loc is None:
            return None
        return UrlEntry(
            loc,
            self.lastmod(date_raw, feed=not iso_date),
            relative=relative,
            position=self.urls,
        )

    def atom_entry(self, el: _Element) -> UrlEntry | None:
        """The entry of an Atom ``<entry>``: its alternate link, updated (or published)."""
        href = updated = published = None
        for child in el:
            name = ext.local_name(child.tag)
            if name == "link" and href is None and child.get("rel", "alternate") == "alternate":
                href = child.get("href")
                href = href.strip() if href else None
            elif name == "updated":
                updated = ext.text_of(child)
            elif name == "published":
                published = ext.text_of(child)
        loc, relative = self.loc(href)
        if loc is None:
            return None
        return UrlEntry(
            loc, self.lastmod(updated or published), relative=relative, position=self.urls
        )


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
