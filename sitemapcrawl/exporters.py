"""Feed exporters for sitemapcrawl's items: Scrapy's own, with a fast path and flat CSV cells.

Every format writes a ``SitemapUrlBatch`` (``SitemapBatchMiddleware``) as one record per URL,
exactly as if each URL had been its own Scrapy item. Scrapy's exporters look every field up
through ItemAdapter (its field metadata, then its value), which profiling showed to be a
third of a 100,000-URL crawl's CPU time. For ``SitemapUrlItem`` (a dataclass without field
metadata) the fields are read directly, in declaration order; anything else, or a feed with
``fields_to_export``, takes Scrapy's path.

JSON Lines and JSON encode a whole batch with ``orjson`` and write it at once: a record is
the item's fields in declaration order (docs/output.md), and its contract is its parsed JSON
values and their key order, not Scrapy's byte layout (``orjson`` writes no space after
``:`` and ``,``). A value ``orjson`` cannot write goes through the feed's own encoder's
``default`` (Scrapy's: sets, dates, decimals), and a batch ``orjson`` still refuses, or a
feed whose text ``orjson`` cannot give (an encoding other than UTF-8, an ``indent``,
``sort_keys``, an encoder of its own), takes the feed encoder's path record by record.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import orjson
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
    from collections.abc import Iterable

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
#: Between two records of a batch encoded in one call, and its JSON text between them.
_SEPARATOR = "\x00\x01"
_SEPARATOR_TEXT = b',"\\u0000\\u0001",'


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
    """The JSON exporters' batch encoding: one record per URL, through ``orjson`` where the
    feed's encoder and encoding allow it."""

    def __init__(self, file: Any, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)  # type: ignore[call-arg]
        encoder: json.JSONEncoder = self.encoder  # type: ignore[attr-defined]
        kind = type(encoder)
        self._fast = (
            codecs.lookup(self.encoding or "utf-8").name == "utf-8"  # type: ignore[attr-defined]
            and not encoder.ensure_ascii
            and encoder.indent is None
            and not encoder.sort_keys
            and kind.encode is json.JSONEncoder.encode
            and kind.iterencode is json.JSONEncoder.iterencode
        )
        self._default = encoder.default

    def _batch(self, item: Any) -> list[SitemapUrlItem] | None:
        """The URL items ``item`` holds when this exporter writes them itself (a batch, or
        one URL item: the same text either way), else None."""
        kind = type(item)
        if (kind is SitemapUrlBatch or kind is SitemapUrlItem) and self._plain():
            return item.items if kind is SitemapUrlBatch else [item]
        return None

    def _encoded(self, batch: list[SitemapUrlItem]) -> list[bytes]:
        """Each URL of ``batch`` as one JSON record, in the feed's encoding."""
        if self._fast and batch:
            # One orjson call per batch (a call per record costs twice the encoding): the
            # records with a separator string between them, cut at its text. A value equal
            # to the separator would cut a record in two: then the count is off, and each
            # record is encoded alone.
            interleaved: list[Any] = [_SEPARATOR] * (2 * len(batch) - 1)
            interleaved[::2] = batch
            try:
                records = orjson.dumps(interleaved, self._default, orjson.OPT_NON_STR_KEYS)
                cut = records[1:-1].split(_SEPARATOR_TEXT)
                if len(cut) == len(batch):
                    return cut
                dumps, default = orjson.dumps, self._default
                return [dumps(entry, default, orjson.OPT_NON_STR_KEYS) for entry in batch]
            except orjson.JSONEncodeError:
                pass  # an integer past 64 bits, a default that gave no JSON type: the encoder's
        encode = self.encoder.encode  # type: ignore[attr-defined]
        encoding = self.encoding  # type: ignore[attr-defined]
        return [
            to_bytes(encode(dict(zip(_FIELDS, _VALUES(entry), strict=True))), encoding)
            for entry in batch
        ]


class SitemapJsonLinesItemExporter(_JsonRecords, JsonLinesItemExporter):
    """JSON Lines (``.jsonl``, ``.jl``): nested fields kept as JSON."""

    def export_item(self, item: Any) -> None:
        batch = self._batch(item)
        if batch is not None:
            lines = self._encoded(batch)
            if lines:
                lines.append(b"")
                self.file.write(b"\n".join(lines))
            return
        super().export_item(item)


class SitemapJsonItemExporter(_JsonRecords, JsonItemExporter):
    """A JSON array (``.json``): nested fields kept as JSON."""

    def export_item(self, item: Any) -> None:
        batch = self._batch(item)
        if batch is not None:
            records = self._encoded(batch)
            if not records:
                return
            separator = to_bytes(",\n" if self.indent is not None else ",", self.encoding)
            text = separator.join(records)
            if self.first_item:
                self.first_item = False
            else:
                text = separator + text
            self.file.write(text)
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
