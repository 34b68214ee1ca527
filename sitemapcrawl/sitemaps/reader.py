"""Sitemap parsing: read one sitemap body, whatever it is, as a stream of entries.

``SitemapReader`` sniffs the decoded body (XML urlset or index, RSS, Atom, plain text, or
an HTML page that is not a sitemap at all), then parses it incrementally: memory stays
flat however many URLs the file holds. XML goes through lxml's pull parser with entity
resolution, DTD loading and network access off, so entity bombs, external entities and
XInclude are never expanded or fetched. Faults are recorded, never raised; every entry
read before a fault is kept.
"""

from __future__ import annotations

import codecs
from itertools import chain
from typing import TYPE_CHECKING, Any, Final

from lxml import etree

from .decompress import BodyDecoder
from .entries import EntryRules
from .errors import (
    BareAmpersand,
    EmptyBody,
    EntitiesDeclared,
    ErrorDocument,
    NamespaceMissing,
    NamespaceWrong,
    NotASitemap,
    SitemapError,
    SitemapSyntaxError,
    TagCase,
    TextTooLong,
    UnknownFormat,
    UnknownRoot,
)
from .model import Limits, SitemapRef, UrlEntry
from .prolog import (
    ERROR_ROOTS,
    LEADING,
    MAX_PROLOG,
    SITEMAP_NAMESPACES,
    SNIFF_BYTES,
    Prolog,
    declared_encoding,
    decode_head,
    error_summary,
    head_complete,
    root_name,
    root_tag,
    sniff,
    strip_leading,
    transcode,
    undeclared_legacy_encoding,
    wide_encoding,
)
from .scan import Scan
from .urls import bare_amps, mark_controls

if TYPE_CHECKING:
    import datetime as dt
    from collections import Counter
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from lxml.etree import _Element

__all__ = ["SITEMAP_KINDS", "SitemapReader", "sniff"]

#: Kinds that hold URLs. ``html``, ``error_document`` (an XML soft 404),
#: ``unknown_root`` (XML of another kind), ``empty`` and ``unknown`` are the other results.
SITEMAP_KINDS: Final = ("urlset", "sitemapindex", "text", "rss", "atom")
_NOT_READ: Final = ("html", "error_document", "unknown_root", "empty", "unknown")
#: A text node longer than this is cut out of the stream (its entry loses what it held)
#: before libxml2, whose 10 MB limit on a text node would end the parse, sees it.
MAX_TEXT: Final = 1024 * 1024
#: The protocol tags of an entry, and the same in the other cases seen in the wild.
_ENTRY_TAGS: Final = ("{*}url", "{*}sitemap", "{*}URL", "{*}Url", "{*}SITEMAP", "{*}Sitemap")
_SPACE: Final = b" \t\r\n"
_CUT_REF: Final = b"&#xE002;"  # urls.CUT

#: The scanner bounds an entry and a run of white space by about 1 MiB plus one chunk,
#: which must stay far below libxml2's 10 MB text node limit (lxml reports those).
_SCAN_MAX_CHUNK = 4 * 1024 * 1024


class SitemapReader:
    """Iterate over the entries of one sitemap body: ``UrlEntry`` or ``SitemapRef`` objects.

    ``body`` is the raw response body (gzip is detected and peeled here); ``url`` is where
    it came from, for resolving relative locations. After ``sniff()`` (called on first
    iteration), ``kind`` says what the body is (a sitemap's ``SITEMAP_KINDS``, or what is
    not read: ``html``, ``error_document``, ``unknown_root``, ``empty``, ``unknown``).
    After iteration, ``faults`` holds the distinct problems found, each with its own code
    (``errors.FAULT_CODES``; an entry fault once, at its first entry), ``counts`` how often
    each per-entry problem happened (``loc_missing``, ``loc_relative``, ``loc_too_long``,
    ``loc_bad_scheme``, ``lastmod_invalid``, ``lastmod_nonstandard``, ``priority_invalid``,
    ``over_url_limit``…: an entry fault's code counts its entries), ``urls`` and
    ``sitemaps`` the number of each entry kind, and ``decoder`` the decompression details.
    The per-entry rules and these tallies are ``rules`` (``entries.EntryRules``).

    Well-formed urlsets and indexes are read by a scanner (``scan.py``) that hands the body
    to lxml at the first thing it does not fully understand; the entries, counts and
    faults are those of lxml either way. ``parser`` says which read the body (``scan``,
    ``lxml``, or ``scan+lxml`` when the scanner gave up after yielding entries) and
    ``scan_stopped`` why the scanner gave up, ``scan_general`` how many entries it read
    through its light elements (shapes its patterns do not take); ``fast_path=False`` reads
    with lxml only.

    >>> body = b'<urlset><url><loc>/a</loc><lastmod>2024-05-01</lastmod></url></urlset>'
    >>> reader = SitemapReader(body, "https://x.example/s.xml")
    >>> [(e.loc, e.lastmod.iso, e.relative) for e in reader], reader.parser
    ([('https://x.example/a', '2024-05-01T00:00:00Z', True)], 'scan')
    """

    def __init__(
        self,
        body: bytes,
        url: str,
        *,
        limits: Limits | None = None,
        now: dt.datetime | None = None,
        content_encoding: Sequence[str] = (),
        fast_path: bool = True,
    ) -> None:
        self.url = url
        self.limits = limits or Limits()
        self.now = now
        self._body = body
        self._content_encoding = content_encoding
        self._fast_path = fast_path
        self.decoder = self._decoder()
        self.parser: str | None = None
        self.scan_stopped: str | None = None
        self.scan_general = 0
        self.kind: str | None = None
        self.root: str | None = None
        self.rules = EntryRules(url, self.limits, now)
        self.faults: list[SitemapError] = self.rules.faults
        self.counts: Counter[str] = self.rules.counts
        self._chunks: Iterator[bytes] | None = None
        self._head = b""
        self._doctype_removed = False
        self._transcoded = False
        self._chunks_done = False

    @property
    def urls(self) -> int:
        """URL entries read so far."""
        return self.rules.urls

    @property
    def sitemaps(self) -> int:
        """Index children read so far."""
        return self.rules.sitemaps

    def _decoder(self) -> BodyDecoder:
        return BodyDecoder(
            self._body,
            max_size=self.limits.max_size,
            chunk_size=self.limits.chunk_size,
            max_layers=self.limits.max_gzip_layers,
            content_encoding=self._content_encoding,
        )

    def _restart(self) -> None:
        """Back to the state before ``sniff()``, with a fresh decoder, then sniff again."""
        self.decoder = self._decoder()
        self.kind = self.root = None
        self.rules.reset()
        self._chunks = None
        self._head = b""
        self._doctype_removed = self._transcoded = self._chunks_done = False
        self.sniff()

    # -- sniffing ----------------------------------------------------------------------

    def sniff(self) -> str:
        """Decode enough of the body to tell its kind; idempotent.

        UTF-16 and UTF-32 bodies are transcoded to UTF-8 here, so everything after this
        sees ASCII-compatible bytes. For XML, the prolog is consumed up to the root element
        however long it is (the decoder's size cap bounds it): comments and processing
        instructions are dropped, and so is the DOCTYPE: a sitemap needs no DTD, and
        without one no entity can be expanded, fetched, or amplified.
        """
        if self.kind is not None:
            return self.kind
        chunks = iter(self.decoder)
        first = b""
        for chunk in chunks:  # enough to tell the encoding family, however small the chunks
            first += chunk
            if len(first) >= 4:
                break
        stream: Iterator[bytes] = chain((first,), chunks)
        wide = wide_encoding(first)
        if wide is not None:
            stream = transcode(stream, wide)
            self._transcoded = True
        self._chunks = stream
        head = b""
        for chunk in stream:
            head += chunk
            if head.lstrip(LEADING)[:1] == b"<" or head_complete(head):
                break
        if head.lstrip(LEADING)[:1] == b"<":
            head = self._skip_prolog(head)
            if not self._transcoded:
                head = self._declared(head, first)
        kind = sniff(head[:MAX_PROLOG])
        self._head = head
        if kind not in ("text", "empty", "unknown"):
            self._root(kind, decode_head(head[:SNIFF_BYTES])[0])
        else:
            self.kind = kind
        if self.kind in _NOT_READ:
            # Nothing will be read: a decoding fault (a corrupt gzip that inflated to
            # nothing) explains the kind, so it comes first, then the kind's own.
            self.faults[:0] = [*self.decoder.faults, _kind_fault(self.kind, self.root, self._head)]
        return self.kind  # type: ignore[return-value]

    def _root(self, kind: str, text: str) -> None:
        """The kind of an XML body by its root, and the root's faults: a sitemap's root
        without the protocol's namespace or in the wrong case; XML of another kind."""
        self.root = root_name(text)
        tag = root_tag(text)
        if kind == "xml":  # not a sitemap: an error document (a soft 404), or else
            self.kind = "error_document" if self.root in ERROR_ROOTS else "unknown_root"
            if tag is not None:
                self.root = tag[0]  # as written, for the message
            return
        self.kind = kind
        if kind not in ("urlset", "sitemapindex"):
            return
        self.rules.index_root = kind == "sitemapindex"
        if tag is None:  # a start tag longer than the head: not checked
            return
        qname, namespace = tag
        if namespace is None:
            self.faults.append(
                NamespaceMissing(f"the root <{qname}> has no namespace; read all the same")
            )
        elif namespace not in SITEMAP_NAMESPACES:
            self.faults.append(
                NamespaceWrong(
                    f"the root <{qname}> is in the namespace {namespace[:200]!r}, not the "
                    "protocol's; read all the same"
                )
            )
        if qname.rpartition(":")[2] != kind:  # <URLSET>, <sitemapIndex>
            self.rules.entry_fault(TagCase, f"<{qname}>", count=0)

    def _declared(self, head: bytes, first: bytes) -> bytes:
        """Decode an XML body by the encoding it declares (``prolog.declared_encoding``),
        in Python, to UTF-8: bytes invalid in it become U+FFFD (and a location holding one
        is dropped) where libxml2 would stop at the first (``us-ascii``, a UTF-16
        declaration on bytes that are not). Return the new head; the parsers then read
        UTF-8 whatever the declaration says (``_transcoded``)."""
        encoding = None if first.startswith(codecs.BOM_UTF8) else declared_encoding(head)
        if encoding is None:
            return head
        self._transcoded = True
        if encoding == "utf-16":  # a wide declaration on bytes that are not: UTF-8
            return head
        assert self._chunks is not None
        size = len(head)
        stream = transcode(chain((head,), self._chunks), encoding)
        head = b""
        for chunk in stream:
            head += chunk
            if len(head) >= size:
                break
        self._chunks = stream
        return head

    def _skip_prolog(self, head: bytes) -> bytes:
        """Consume the XML prolog (``prolog.Prolog``); a DOCTYPE that declares entities or
        an external DTD is a fault."""
        assert self._chunks is not None
        prolog = Prolog(self._chunks)
        head = prolog.skip(head)
        self._doctype_removed = prolog.doctype_removed
        for _ in range(prolog.declaring_doctypes):
            self.faults.append(
                EntitiesDeclared(
                    "the document declares entities or an external DTD; none were expanded"
                )
            )
        return head

    def _body_chunks(self) -> Iterator[bytes]:
        if self._head:
            yield self._head
        assert self._chunks is not None
        yield from self._chunks
        self._chunks_done = True
        self.faults.extend(self.decoder.faults)

    # -- iteration ---------------------------------------------------------------------

    def __iter__(self) -> Iterator[UrlEntry | SitemapRef]:
        kind = self.sniff()
        if kind in _NOT_READ:
            return
        if kind == "text":
            yield from self._text(self._body_chunks())
        else:
            yield from self._xml(self._body_chunks(), kind)

    def _text(self, chunks: Iterator[bytes]) -> Iterator[UrlEntry]:
        """A text sitemap's lines. It should be UTF-8 (UTF-16 was transcoded); a body whose
        start is not is read as windows-1252 (``encoding_guessed``). Bytes invalid in the
        encoding become U+FFFD, and their line is dropped (``loc_undecodable``)."""
        start = b""
        for chunk in chunks:
            start += chunk
            if len(start) >= SNIFF_BYTES:
                break
        encoding = "utf-8-sig"
        if not self._transcoded and _not_utf8(start[:SNIFF_BYTES], len(start) < SNIFF_BYTES):
            encoding = "windows-1252"
            self.counts["encoding_guessed"] += 1
        decoder = codecs.getincrementaldecoder(encoding)("replace")
        text_line, count_url = self.rules.text_line, self.rules.count_url
        pending = ""
        position = 0
        for chunk in chain((start,), chunks):
            pending += decoder.decode(chunk)
            lines = pending.split("\n")
            pending = lines.pop()
            for line in lines:
                entry = text_line(line, position)
                if entry is not None:
                    position += 1
                    if not count_url():
                        return
                    yield entry
        pending += decoder.decode(b"", final=True)
        entry = text_line(pending, position)
        if entry is not None and count_url():
            yield entry

    def _xml(self, chunks: Iterator[bytes], kind: str) -> Iterator[UrlEntry | SitemapRef]:
        if not (
            self._fast_path
            and kind in ("urlset", "sitemapindex")
            and not self._doctype_removed
            and self.limits.chunk_size <= _SCAN_MAX_CHUNK
            and (self._transcoded or undeclared_legacy_encoding(self._head) is None)
        ):
            self.parser = "lxml"
            yield from self._lxml(chunks, kind)
            return
        faults_before = len(self.faults)
        scan = Scan(self.rules, chunks, transcoded=self._transcoded)
        yield from scan
        self.scan_general = scan.general
        if scan.complete:
            self.parser = "scan"
            return
        self.scan_stopped = scan.reason
        # lxml reads the body and has the last word on everything: the state the scan left
        # goes, and the entries the scan yielded are lxml's first ones (tests/test_scan.py).
        if not scan.yielded and scan.replay is not None and not self._chunks_done:
            # Nothing yielded and the input not exhausted: lxml goes on with the same chunks.
            self.parser = "lxml"
            self.rules.reset(faults_before)
            yield from self._lxml(chain(scan.replay, chunks), kind)
            return
        self.parser = "scan+lxml"
        self._restart()
        skip = scan.yielded
        for entry in self._lxml(self._body_chunks(), kind):
            if skip:
                skip -= 1
                continue
            yield entry

    def _lxml(self, chunks: Iterator[bytes], kind: str) -> Iterator[UrlEntry | SitemapRef]:
        head = self._head[:SNIFF_BYTES]
        rules = self.rules
        handle: Callable[[_Element], UrlEntry | SitemapRef | None]
        if kind == "rss":
            tags: tuple[str, ...] = ("{*}item",)
            handle = rules.rss_item
        elif kind == "atom":
            tags = ("{*}entry",)
            handle = rules.atom_entry
        else:
            tags = _ENTRY_TAGS
            handle = rules.element
        encoding = "utf-8" if self._transcoded else undeclared_legacy_encoding(head)
        if encoding is not None and not self._transcoded:
            self.counts["encoding_guessed"] += 1
        source = _XmlSource(iter(_TextRuns(chunks, self.faults)), rules)
        at_eof = 0  # errors logged before the input ran out (the rest are about its end)
        events = etree.iterparse(
            source,
            events=("end",),
            tag=tags,
            encoding=encoding,
            recover=True,
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
            collect_ids=False,
            strip_cdata=True,
        )

        def mark_eof() -> None:
            nonlocal at_eof
            at_eof = len(events.error_log)

        source.on_eof = mark_eof
        try:
            for _, el in events:
                if source.eof and len(events.error_log):
                    # Closed by recovery at the end of a truncated body: incomplete, dropped.
                    self.counts["entry_truncated"] += 1
                    continue
                try:
                    entry = handle(el)
                except UnicodeDecodeError:
                    # libxml2's recovery keeps a reference to a surrogate (&#xD800;) as
                    # bytes lxml cannot decode; the reference is a syntax error too.
                    self.counts["entry_undecodable"] += 1
                    entry = None
                el.clear(keep_tail=False)
                parent = el.getparent()
                if parent is not None:
                    while el.getprevious() is not None:
                        del parent[0]
                if entry is None:
                    continue
                if type(entry) is UrlEntry and not rules.count_url():
                    return
                yield entry
        except etree.LxmlError as exc:
            self.faults.append(SitemapSyntaxError(f"XML parsing stopped: {exc}"))
            return
        self._syntax_fault(events.error_log, at_eof if source.eof else None)

    def _syntax_fault(self, error_log: Iterable[Any], eof_at: int | None) -> None:
        """Record lxml's errors as one fault, but those about a body's end the decoder cut
        short (size cap, truncated or corrupt gzip): that fault is recorded already.
        ``eof_at``: how many errors were logged before the input ran out (None: it did
        not)."""
        cut = any(f.code in ("too_large", "decompression_error") for f in self.decoder.faults)
        errors = [
            e
            for i, e in enumerate(error_log)
            if e.level >= etree.ErrorLevels.ERROR
            and not (cut and eof_at is not None and i >= eof_at)
            # References to the entities of the DOCTYPE we cut out: already reported.
            and not (self._doctype_removed and e.type_name == "ERR_UNDECLARED_ENTITY")
        ]
        if errors:
            first_error = errors[0]
            self.faults.append(
                SitemapSyntaxError(
                    f"malformed XML at line {first_error.line}: {first_error.message.strip()}"
                    + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
                )
            )


def _kind_fault(kind: str, root: str | None, head: bytes) -> SitemapError:
    """The fault of a body of ``kind`` that is not read (``_NOT_READ``): its root element
    and first bytes say what it was."""
    if kind == "html":
        return NotASitemap("the body is an HTML page, not a sitemap")
    if kind == "empty":
        return EmptyBody("the body is empty")
    if kind == "error_document":
        said = error_summary(decode_head(head[:SNIFF_BYTES])[0])
        return ErrorDocument(
            f"the body is an XML error document <{root}>"
            + (f" ({said[:300]!r})" if said else "")
            + ", not a sitemap"
        )
    if kind == "unknown_root":
        return UnknownRoot(
            f"the body is XML whose root <{root}> is not a sitemap's (urlset, "
            "sitemapindex, rss, feed); nothing was read"
        )
    return UnknownFormat("the body is neither XML, a feed nor a text sitemap")


def _not_utf8(head: bytes, whole: bool) -> bool:
    """Whether ``head`` (``whole``: the whole body) is not UTF-8, but for a character cut
    at its end."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return whole or exc.start < len(head) - 4
    return False


class _TextRuns:
    """The decoded chunks, with every text node longer than ``MAX_TEXT`` cut out: one of
    white space goes (it says nothing), any other becomes a reference to ``urls.CUT`` (a
    location that holds it is dropped) and is a ``text_too_long`` fault, recorded once in
    ``faults``. Without this, libxml2 would stop at its 10 MB limit on a text node and
    every entry after it would be lost.

    A text node is what follows a ``>`` up to the next ``<``; the part of one that ends a
    chunk is held back (``MAX_TEXT`` bytes at most) until it is known to be short.
    """

    def __init__(self, chunks: Iterable[bytes], faults: list[SitemapError]) -> None:
        self._chunks = chunks
        self._faults = faults

    def __iter__(self) -> Iterator[bytes]:
        limit = MAX_TEXT
        held = b""  # the start of the text node the last chunk ended in
        in_text = skipping = False
        marked = True  # the node being skipped has its mark (False: white space so far)
        for raw in self._chunks:
            chunk = raw
            if skipping:
                lt = chunk.find(b"<")
                if not marked and (chunk if lt < 0 else chunk[:lt]).strip(_SPACE):
                    marked = True
                    yield self._mark()
                if lt < 0:
                    continue
                chunk = chunk[lt:]
                skipping = in_text = False
            elif in_text:
                if held:
                    chunk = held + chunk
                    held = b""
                lt = chunk.find(b"<")
                end = len(chunk) if lt < 0 else lt
                if end > limit:
                    marked = bool(chunk[:end].strip(_SPACE))
                    if marked:
                        yield self._mark()
                    if lt < 0:
                        skipping = True
                        continue
                    chunk = chunk[lt:]
                elif lt < 0:
                    held = chunk
                    continue
            gt = chunk.rfind(b">")
            if gt > chunk.rfind(b"<"):  # it ends in a text node: hold that back
                held = chunk[gt + 1 :]
                chunk = chunk[: gt + 1]
                in_text = True
            elif gt >= 0 or b"<" in chunk:
                in_text = False
            if chunk:
                yield chunk
        if held:
            yield held

    def _mark(self) -> bytes:
        if not any(f.code == "text_too_long" for f in self._faults):
            self._faults.append(
                TextTooLong(
                    f"a text node longer than {MAX_TEXT} bytes was cut out; "
                    "the entries after it are read"
                )
            )
        return _CUT_REF


class _XmlSource:
    """A file-like view of the decoded chunks for ``lxml.etree.iterparse``.

    It drops whitespace before the XML declaration (libxml2 rejects it), turns raw control
    characters into DEL (libxml2 would drop them: ``urls.mark_controls``) and escapes bare
    ``&`` (``?a=1&b=2`` unescaped is the commonest sitemap bug; libxml2's recovery would
    silently eat ``&b``), counting them (``bare_ampersand``, an entry fault of ``rules``).
    ``eof`` tells events released by the end of input apart, and ``on_eof`` is called
    once when the input runs out.
    """

    def __init__(self, chunks: Iterator[bytes], rules: EntryRules) -> None:
        self._chunks = chunks
        self._rules = rules
        self._first = True
        self._held = b""
        self._cdata = False
        self.eof = False
        self.on_eof: Callable[[], None] = lambda: None

    def _escape(self, chunk: bytes) -> bytes:
        escaped, count, first = bare_amps(chunk)
        if count:  # the example: the text around the first one
            start = chunk.rfind(b">", max(0, first - 200), first) + 1 or max(0, first - 60)
            end = chunk.find(b"<", first, first + 200)
            example = chunk[start : end if end >= 0 else first + 40]
            self._rules.entry_fault(BareAmpersand, example.decode("utf-8", "replace"), count)
        return escaped

    def read(self, size: int = -1) -> bytes:
        for raw in self._chunks:
            chunk = raw
            if self._first:
                self._first = False
                chunk = strip_leading(chunk)
            chunk = mark_controls(chunk)
            if self._held:
                chunk = self._held + chunk
                self._held = b""
            amp = chunk.rfind(b"&")
            if amp >= 0 and len(chunk) - amp < 64:
                # An entity may continue in the next chunk: decide once it is whole.
                chunk, self._held = chunk[:amp], chunk[amp:]
            if b"<![CDATA[" in chunk:
                self._cdata = True  # "&" is literal inside CDATA: stop escaping from here
            if b"&" in chunk and not self._cdata:
                chunk = self._escape(chunk)
            if chunk:
                return chunk
        if self._held:
            chunk, self._held = self._held, b""
            return chunk if self._cdata else self._escape(chunk)
        if not self.eof:
            self.eof = True
            self.on_eof()
        return b""
