"""Feed exporters for sitemapcrawl's items: Scrapy's own, with a fast path and flat CSV cells.

Every format writes a ``SitemapUrlBatch`` (``SitemapBatchMiddleware``) as one record per URL,
exactly as if each URL had been its own Scrapy item. Scrapy's exporters look every field up
through ItemAdapter (its field metadata, then its value), which profiling showed to be a
third of a 100,000-URL crawl's CPU time. For ``SitemapUrlItem`` (a dataclass without field
metadata) the fields are read directly, in declaration order; anything else, or a feed with
``fields_to_export``, takes Scrapy's path. JSON Lines and JSON encode a whole batch and
write it at once, each URL through a template of its record (``_RecordEncoder``) rather
than a dict handed to ``JSONEncoder.encode``: the same text, in about half the time.
"""

from __future__ import annotations

import dataclasses
import json
from json.encoder import encode_basestring, encode_basestring_ascii
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from scrapy.exporters import (
    BaseItemExporter,
    CsvItemExporter,
    JsonItemExporter,
    JsonLinesItemExporter,
    MarshalItemExporter,
    PickleItemExporter,
    XmlItemExporter,
)
from scrapy.utils.python import to_bytes

from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem, SiteReport

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "SitemapCsvItemExporter",
    "SitemapJsonItemExporter",
    "SitemapJsonLinesItemExporter",
    "SitemapMarshalItemExporter",
    "SitemapPickleItemExporter",
    "SitemapXmlItemExporter",
]

_FIELDS = tuple(field.name for field in dataclasses.fields(SitemapUrlItem))
_VALUES = attrgetter(*_FIELDS)
_NO_METADATA: dict[str, Any] = {}
#: The standard library's C encoder (``json.encoder`` has had it since Python 2.6; None
#: where the C accelerator is missing).
_C_MAKE_ENCODER: Callable[..., Callable[[Any, int], tuple[str, ...]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
#: The field order ``_RecordEncoder.encode`` unpacks; were the item's fields to change, the
#: template would be off and every record would take ``JSONEncoder.encode``.
_RECORD_FIELDS = (
    "url", "lastmod", "lastmod_raw", "lastmod_precision", "lastmod_flags", "changefreq",
    "priority", "sitemap", "sitemap_lastmod", "segment", "depth", "found_via", "news",
    "images", "videos", "alternates", "mobile", "flags", "refetch", "refetch_reason",
)  # fmt: skip


class _RecordEncoder:
    """``SitemapUrlItem`` records as the JSON text ``encoder.encode(dict(fields))`` gives.

    Profiling a 1,000,000-URL crawl put the JSON encoding at 16 % of its CPU time, most of
    it around the standard library's C encoder rather than in it: a dict per URL, and a new
    C encoder made on every ``encode`` call. Here one C encoder is made per exporter (with
    the encoder's own settings) and each record is a ``%`` template of its field values:
    strings through the encoder's string function, ``None``/booleans/ints/finite floats
    written as the encoder writes them, empty lists as ``[]``; any other value (a non-empty
    list, a value of an unexpected type) through the C encoder. ``for_encoder`` returns None
    where the text could differ: an encoder with ``indent``, ``sort_keys`` or its own
    ``encode``/``iterencode``, or no C encoder. ``tests/test_core_boundaries.py`` compares
    the two on random records.
    """

    __slots__ = ("_c", "_encoder", "_string", "_template")

    def __init__(self, encoder: json.JSONEncoder) -> None:
        self._encoder = encoder
        self._string: Callable[[str], str] = (
            encode_basestring_ascii if encoder.ensure_ascii else encode_basestring
        )
        self._c = self._make_c()
        key, item = encoder.key_separator, encoder.item_separator
        self._template = (
            "{" + item.join(self._string(name) + key + "%s" for name in _RECORD_FIELDS) + "}"
        )

    @classmethod
    def for_encoder(cls, encoder: json.JSONEncoder) -> _RecordEncoder | None:
        kind = type(encoder)
        if (
            _C_MAKE_ENCODER is None
            or _FIELDS != _RECORD_FIELDS
            or encoder.indent is not None
            or encoder.sort_keys
            or kind.encode is not json.JSONEncoder.encode
            or kind.iterencode is not json.JSONEncoder.iterencode
        ):
            return None
        return cls(encoder)

    def _make_c(self) -> Callable[[Any, int], tuple[str, ...]]:
        encoder, make = self._encoder, _C_MAKE_ENCODER
        assert make is not None  # for_encoder checked it
        return make(
            {} if encoder.check_circular else None,
            encoder.default,
            self._string,
            None,
            encoder.key_separator,
            encoder.item_separator,
            encoder.sort_keys,
            encoder.skipkeys,
            encoder.allow_nan,
        )

    def encode(self, batch: Iterable[SitemapUrlItem]) -> list[str]:
        """Each URL's record, as ``encoder.encode`` would write it."""
        try:
            return self._encode(batch)
        except BaseException:
            # A value the encoder refused can leave the C encoder's circular-reference
            # markers set: start the next batch with a fresh one.
            self._c = self._make_c()
            raise

    def _encode(self, batch: Iterable[SitemapUrlItem]) -> list[str]:
        string, c_encode, template, join = self._string, self._c, self._template, "".join

        def value(v: Any) -> str:
            """What the C encoder writes for ``v`` (the uncommon values)."""
            return join(c_encode(v, 0))

        def text(v: Any) -> str:
            return string(v) if type(v) is str else "null" if v is None else value(v)

        def items(v: Any) -> str:
            return "[]" if type(v) is list and not v else value(v)

        # The fields one sitemap file gives all its URLs, encoded once; only values that
        # are str or None are keys, so an equal key always has the same text.
        common: dict[tuple[Any, ...], tuple[str, str, str, str]] = {}
        records = []
        for entry in batch:
            (
                url, lastmod, raw, precision, lastmod_flags, changefreq, priority, sitemap,
                sitemap_lastmod, segment, depth, found_via, news, images, videos,
                alternates, mobile, flags, refetch, reason,
            ) = _VALUES(entry)  # fmt: skip
            key = (sitemap, sitemap_lastmod, segment, found_via)
            try:
                shared = common.get(key)
            except TypeError:  # an unhashable value: never a key
                shared = None
            if shared is None:
                shared = (text(sitemap), text(sitemap_lastmod), text(segment), text(found_via))
                if all(type(v) is str or v is None for v in key):
                    common[key] = shared
            records.append(
                template
                % (
                    string(url) if type(url) is str else value(url),
                    text(lastmod),
                    text(raw),
                    text(precision),
                    items(lastmod_flags),
                    text(changefreq),
                    "null"
                    if priority is None
                    else float.__repr__(priority)
                    if type(priority) is float and priority - priority == 0
                    else value(priority),
                    shared[0],
                    shared[1],
                    shared[2],
                    int.__repr__(depth) if type(depth) is int else value(depth),
                    shared[3],
                    items(news),
                    items(images),
                    items(videos),
                    items(alternates),
                    "true" if mobile is True else "false" if mobile is False else value(mobile),
                    items(flags),
                    "null"
                    if refetch is None
                    else "true"
                    if refetch is True
                    else "false"
                    if refetch is False
                    else value(refetch),
                    text(reason),
                )
            )
        return records


class _DirectFields:
    """Read ``SitemapUrlItem`` fields without ItemAdapter's per-field lookups; write a
    ``SitemapUrlBatch`` URL by URL."""

    def _plain(self) -> bool:
        """No field list and no serializer: each URL is its fields' values as they are."""
        exporter: BaseItemExporter = self  # type: ignore[assignment]
        return (
            exporter.fields_to_export is None
            and type(exporter).serialize_field is BaseItemExporter.serialize_field
        )

    def get_serialized_fields(
        self, item: Any, default_value: Any = None, include_empty: bool | None = None
    ) -> Iterable[tuple[str, Any]]:
        exporter: BaseItemExporter = self  # type: ignore[assignment]
        if type(item) is not SitemapUrlItem or exporter.fields_to_export is not None:
            return super().get_serialized_fields(item, default_value, include_empty)  # type: ignore[misc,no-any-return]
        if type(exporter).serialize_field is BaseItemExporter.serialize_field:
            # No field metadata, so no serializer: values go out as they are.
            return list(zip(_FIELDS, _VALUES(item), strict=True))
        serialize = exporter.serialize_field
        return [(name, serialize(_NO_METADATA, name, getattr(item, name))) for name in _FIELDS]

    def export_item(self, item: Any) -> None:
        if type(item) is SitemapUrlBatch:
            export = super().export_item  # type: ignore[misc]
            for entry in item.items:
                export(entry)
            return
        super().export_item(item)  # type: ignore[misc]


class _JsonRecords(_DirectFields):
    """The JSON exporters' batch encoding: one record per URL, through ``_RecordEncoder``
    where the exporter's encoder allows it."""

    def __init__(self, file: Any, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)  # type: ignore[call-arg]
        self._records = _RecordEncoder.for_encoder(self.encoder)  # type: ignore[attr-defined]

    def _encoded(self, batch: SitemapUrlBatch) -> list[str]:
        """Each URL of ``batch`` as the JSON text ``export_item`` would write for it."""
        if self._records is not None:
            return self._records.encode(batch.items)
        encode = self.encoder.encode  # type: ignore[attr-defined]
        return [encode(dict(zip(_FIELDS, _VALUES(entry), strict=True))) for entry in batch]


class SitemapJsonLinesItemExporter(_JsonRecords, JsonLinesItemExporter):
    """JSON Lines (``.jsonl``, ``.jl``): nested fields kept as JSON."""

    def export_item(self, item: Any) -> None:
        if type(item) is SitemapUrlBatch and self._plain():
            lines = self._encoded(item)
            if lines:
                self.file.write(to_bytes("\n".join(lines) + "\n", self.encoding))
            return
        super().export_item(item)


class SitemapJsonItemExporter(_JsonRecords, JsonItemExporter):
    """A JSON array (``.json``): nested fields kept as JSON."""

    def export_item(self, item: Any) -> None:
        if type(item) is SitemapUrlBatch and self._plain():
            records = self._encoded(item)
            if not records:
                return
            separator = ",\n" if self.indent is not None else ","
            text = separator.join(records)
            if self.first_item:
                self.first_item = False
            else:
                text = separator + text
            self.file.write(to_bytes(text, self.encoding))
            return
        super().export_item(item)


class SitemapXmlItemExporter(_DirectFields, XmlItemExporter):
    """XML (``.xml``): one ``<item>`` per URL."""


class SitemapPickleItemExporter(_DirectFields, PickleItemExporter):
    """Pickle (``.pickle``): one dict per URL."""


class SitemapMarshalItemExporter(_DirectFields, MarshalItemExporter):
    """Marshal (``.marshal``): one dict per URL."""


class SitemapCsvItemExporter(_DirectFields, CsvItemExporter):
    """Flatten nested item fields for CSV.

    Lists of strings become ``a|b`` (flags), booleans ``true``/``false``, and structured
    extension data (news, images, videos, alternates) compact JSON, so nothing is lost and
    every cell parses back. The ``SiteReport`` has no place in a table of URLs: CSV feeds
    leave it out (JSON feeds and ``SITEMAPCRAWL_REPORT_PATH`` have it).
    """

    def export_item(self, item: Any) -> None:
        if type(item) is SiteReport:
            return
        super().export_item(item)

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return "|".join(value)
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else ""
        return super().serialize_field(field, name, value)
