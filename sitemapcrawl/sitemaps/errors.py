"""Sitemap parsing: the faults a sitemap or robots.txt body can have.

The core never raises these out of a parse: a reader records them in ``faults`` and keeps
every entry it read before the fault. They are exceptions so that callers that want to
stop on the first fault can ``raise reader.faults[0]``.

Two kinds of fault. A *file* fault is about the body as a whole (it is compressed too
deep, it is not a sitemap, its XML is malformed). An *entry* fault (``EntryFault``) is
about single entries (a location dropped, a tag in the wrong case): it is recorded once per
file, at the first entry that has it, with that entry as its example, and the reader's
``counts`` holds, under the same name, how many entries had it. Every fault a reader can
record has its own ``code``; ``FAULT_CODES`` lists them all.

>>> print(LocBadScheme.at("ftp://a.example/").message)
location on a scheme other than http(s), dropped: 'ftp://a.example/' (the first; each is counted)
>>> "loc_bad_scheme" in FAULT_CODES, "error" in FAULT_CODES
(True, False)
"""

from __future__ import annotations

from typing import ClassVar, Final, Self

__all__ = [
    "FAULT_CODES",
    "BareAmpersand",
    "BodyTooLarge",
    "DecompressionError",
    "EmptyBody",
    "EntitiesDeclared",
    "EntryFault",
    "ErrorDocument",
    "GzipTooDeep",
    "LocBadScheme",
    "LocControlChars",
    "LocInvalid",
    "LocInvisibleChars",
    "LocMissing",
    "LocNotAbsolute",
    "LocQueryOrFragment",
    "LocRelativeOtherHost",
    "LocRepeated",
    "LocTooLong",
    "LocUndecodable",
    "MixedEntries",
    "NamespaceMissing",
    "NamespaceWrong",
    "NotASitemap",
    "SitemapError",
    "SitemapSyntaxError",
    "TagCase",
    "TextTooLong",
    "TooManyUrls",
    "UnknownFormat",
    "UnknownRoot",
]

#: An example taken from the body is shown up to this many characters.
_EXAMPLE_MAX = 100


class SitemapError(Exception):
    """Base class. ``code`` is the stable, short name used in stats and reports."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# -- the body as a whole ---------------------------------------------------------------------


class BodyTooLarge(SitemapError):
    """The (decompressed) body went past the size cap; what came before it was parsed."""

    code = "too_large"


class DecompressionError(SitemapError):
    """A gzip or zlib stream is corrupt or truncated; what decompressed before it was parsed."""

    code = "decompression_error"


class GzipTooDeep(SitemapError):
    """The body is still gzip after as many layers as the policy peels
    (``Limits.max_gzip_layers``); the rest is not decompressed (and is no sitemap)."""

    code = "gzip_layers"


class SitemapSyntaxError(SitemapError):
    """The XML is malformed; entries before the fault (and after it, where lxml recovered)
    are kept."""

    code = "xml_syntax_error"


class EntitiesDeclared(SitemapError):
    """The document declares entities or a DTD; they were neither expanded nor fetched."""

    code = "xml_entities"


class NotASitemap(SitemapError):
    """The body is an HTML page (a soft 404, a login wall), not a sitemap."""

    code = "html"


class ErrorDocument(SitemapError):
    """The body is an XML error document (``<Error>``: a storage bucket's "NoSuchKey", an
    API's error response): a soft 404 in XML, not a sitemap."""

    code = "error_document"


class UnknownRoot(SitemapError):
    """The body is XML whose root is none of ``urlset``, ``sitemapindex``, ``rss`` (or
    RSS 1.0's ``rdf:RDF``), ``feed``: not a sitemap; nothing is read from it."""

    code = "unknown_root"


class EmptyBody(SitemapError):
    """The body is empty or only whitespace."""

    code = "empty"


class UnknownFormat(SitemapError):
    """Neither XML sitemap, feed, nor text sitemap."""

    code = "unknown_format"


class TooManyUrls(SitemapError):
    """More than the protocol's 50,000 URLs in one file (a protocol violation)."""

    code = "too_many_urls"


class NamespaceMissing(SitemapError):
    """A ``urlset`` or ``sitemapindex`` without the protocol's namespace; read by local
    names all the same."""

    code = "namespace_missing"


class NamespaceWrong(SitemapError):
    """A ``urlset`` or ``sitemapindex`` in a namespace that is neither the protocol's nor
    one of Google's older ones; read by local names all the same."""

    code = "namespace_wrong"


class TextTooLong(SitemapError):
    """A text node longer than the reader takes (``reader.MAX_TEXT``, well under libxml2's
    10 MB limit, which would end the parse) was cut out; the entries after it are read."""

    code = "text_too_long"


# -- single entries ------------------------------------------------------------------------


class EntryFault(SitemapError):
    """A problem of single entries, recorded once per file (``at``: made from its first
    example) and counted for each entry in the reader's ``counts`` under ``code``."""

    code = "entry"
    #: what happened to such an entry, the start of the message
    what: ClassVar[str] = ""

    @classmethod
    def at(cls, example: str | None) -> Self:
        """The fault, with the first entry that has it as its example (if any)."""
        if example is None:
            return cls(f"{cls.what} (each is counted)")
        if len(example) > _EXAMPLE_MAX:
            example = example[:_EXAMPLE_MAX] + "…"
        return cls(f"{cls.what}: {example!r} (the first; each is counted)")


class LocMissing(EntryFault):
    """An entry without a location (no ``<loc>``, or an empty one): dropped."""

    code = "loc_missing"
    what = "entry without a location, dropped"


class LocBadScheme(EntryFault):
    """A location on another scheme than http(s) (``javascript:``, ``ftp:``): dropped."""

    code = "loc_bad_scheme"
    what = "location on a scheme other than http(s), dropped"


class LocTooLong(EntryFault):
    """A location over ``Limits.max_loc_length`` (the protocol's 2,048) characters:
    dropped."""

    code = "loc_too_long"
    what = "location longer than the limit, dropped"


class LocInvalid(EntryFault):
    """A location no request can be made for (a bad port, a stray bracket, a bracketed
    host that is no address, a space in the host): dropped."""

    code = "loc_invalid"
    what = "location no request can be made for, dropped"


class LocControlChars(EntryFault):
    """A location holding a control character (a tab or newline inside it, a raw or
    referenced C0 or C1 control, DEL): dropped, never cleaned into another URL."""

    code = "loc_control_chars"
    what = "location with a control character in it, dropped"


class LocUndecodable(EntryFault):
    """A location with bytes that are not valid in the body's encoding: dropped, never
    sent with U+FFFD in place of what the file said."""

    code = "loc_undecodable"
    what = "location with bytes invalid in the body's encoding, dropped"


class LocInvisibleChars(EntryFault):
    """A location with an invisible format character in it (zero-width space, a BOM,
    bidirectional marks) or white space XML does not strip at either end (no-break
    space): dropped, never read as a relative path."""

    code = "loc_invisible_chars"
    what = "location with an invisible character in it, dropped"


class LocInvisiblePadding(EntryFault):
    """A location padded at an end with invisible characters (zero-width space, a BOM,
    a bidirectional mark, a no-break space): read without them (a CMS that pads every
    ``<loc>`` would otherwise lose its whole sitemap). Inside a location they still drop
    it (``loc_invisible_chars``)."""

    code = "loc_invisible_padding"
    what = "location padded with invisible characters at an end, read without them"


class LocNotAbsolute(EntryFault):
    """A text sitemap line that is not an absolute http(s) URL: dropped, not resolved."""

    code = "loc_not_absolute"
    what = "text sitemap line that is not an absolute URL, dropped"


class LocQueryOrFragment(EntryFault):
    """A relative location that is only a query (``?p=1``) or a fragment (``#top``):
    dropped."""

    code = "loc_query_or_fragment"
    what = "location that is only a query or a fragment, dropped"


class LocRelativeOtherHost(EntryFault):
    """A relative location that resolves to another host than the sitemap's (a
    protocol-relative ``//other.example/x``): dropped. (``/x`` and ``../x`` stay on the
    sitemap's host, and are kept.)"""

    code = "loc_relative_other_host"
    what = "relative location that resolves to another host than the sitemap's, dropped"


class LocRepeated(EntryFault):
    """An entry with more than one ``<loc>``: the first is read, the others dropped."""

    code = "loc_repeated"
    what = "entry with a second <loc>, which was dropped (the first is read)"


class TagCase(EntryFault):
    """Protocol tags not in lower case (``<URL>``, ``<Loc>``): read as the protocol's."""

    code = "tag_case"
    what = "protocol tags not in lower case, read as the protocol's"


class MixedEntries(EntryFault):
    """A ``<sitemap>`` in a ``urlset`` or a ``<url>`` in a ``sitemapindex``: read all
    the same."""

    code = "mixed_entries"
    what = "entry of the other kind than the file's root, read all the same"


class BareAmpersand(EntryFault):
    """A bare ``&`` (not starting a reference): read as ``&amp;``. Counted per ``&``."""

    code = "bare_ampersand"
    what = "bare '&' (not escaped as &amp;), read as '&'"


def _codes(cls: type[SitemapError]) -> list[str]:
    found = []
    for sub in cls.__subclasses__():
        if sub is not EntryFault:
            found.append(sub.code)
        found.extend(_codes(sub))
    return found


#: Every code a reader (with its decoder) can record.
FAULT_CODES: Final = tuple(sorted(_codes(SitemapError)))
#: The entry faults by code.
ENTRY_FAULTS: Final[dict[str, type[EntryFault]]] = {
    cls.code: cls for cls in EntryFault.__subclasses__()
}
