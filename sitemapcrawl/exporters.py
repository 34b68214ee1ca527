"""Feed exporters for sitemapcrawl's items: Scrapy's own, with a fast path and flat CSV cells.

Every format writes a ``SitemapUrlBatch`` (``SitemapBatchMiddleware``) as one record per URL,
exactly as if each URL had been its own Scrapy item. Scrapy's exporters look every field up
through ItemAdapter (its field metadata, then its value), which profiling showed to be a
third of a 100,000-URL crawl's CPU time. For ``SitemapUrlItem`` (a dataclass without field
metadata) the fields are read directly, in declaration order; anything else, or a feed with
``fields_to_export``, takes Scrapy's path. JSON Lines and JSON encode a whole batch and
write it at once.
"""

from __future__ import annotations

import dataclasses
import json
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

    def _encoded(self, batch: SitemapUrlBatch) -> list[str]:
        """Each URL of ``batch`` as the JSON text ``export_item`` would write for it."""
        encode = self.encoder.encode  # type: ignore[attr-defined]
        return [encode(dict(zip(_FIELDS, _VALUES(entry), strict=True))) for entry in batch]

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


class SitemapJsonLinesItemExporter(_DirectFields, JsonLinesItemExporter):
    """JSON Lines (``.jsonl``, ``.jl``): nested fields kept as JSON."""

    def export_item(self, item: Any) -> None:
        if type(item) is SitemapUrlBatch and self._plain():
            lines = self._encoded(item)
            if lines:
                self.file.write(to_bytes("\n".join(lines) + "\n", self.encoding))
            return
        super().export_item(item)


class SitemapJsonItemExporter(_DirectFields, JsonItemExporter):
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
