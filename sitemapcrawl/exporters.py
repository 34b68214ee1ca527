"""Feed exporters for sitemapcrawl's items: Scrapy's own, with a fast path and flat CSV cells.

Scrapy's exporters look every field up through ItemAdapter (its field metadata, then its
value), which profiling showed to be a third of a 100,000-URL crawl's CPU time. For
``SitemapUrlItem`` (a dataclass without field metadata) the fields are read directly, in
declaration order; anything else, or a feed with ``fields_to_export``, takes Scrapy's path.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from scrapy.exporters import (
    BaseItemExporter,
    CsvItemExporter,
    JsonItemExporter,
    JsonLinesItemExporter,
)

from sitemapcrawl.items import SitemapUrlItem, SiteReport

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "SitemapCsvItemExporter",
    "SitemapJsonItemExporter",
    "SitemapJsonLinesItemExporter",
]

_FIELDS = tuple(field.name for field in dataclasses.fields(SitemapUrlItem))
_NO_METADATA: dict[str, Any] = {}


class _DirectFields:
    """Read ``SitemapUrlItem`` fields without ItemAdapter's per-field lookups."""

    def get_serialized_fields(
        self, item: Any, default_value: Any = None, include_empty: bool | None = None
    ) -> Iterable[tuple[str, Any]]:
        exporter: BaseItemExporter = self  # type: ignore[assignment]
        if type(item) is not SitemapUrlItem or exporter.fields_to_export is not None:
            return super().get_serialized_fields(item, default_value, include_empty)  # type: ignore[misc,no-any-return]
        if type(exporter).serialize_field is BaseItemExporter.serialize_field:
            # No field metadata, so no serializer: values go out as they are.
            return [(name, getattr(item, name)) for name in _FIELDS]
        serialize = exporter.serialize_field
        return [(name, serialize(_NO_METADATA, name, getattr(item, name))) for name in _FIELDS]


class SitemapJsonLinesItemExporter(_DirectFields, JsonLinesItemExporter):
    """JSON Lines (``.jsonl``, ``.jl``): nested fields kept as JSON."""


class SitemapJsonItemExporter(_DirectFields, JsonItemExporter):
    """A JSON array (``.json``): nested fields kept as JSON."""


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
