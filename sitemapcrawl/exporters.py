"""CSV that a spreadsheet can read: flat cells, never Python reprs."""

from __future__ import annotations

import json
from typing import Any

from scrapy.exporters import CsvItemExporter

__all__ = ["SitemapCsvItemExporter"]


class SitemapCsvItemExporter(CsvItemExporter):
    """Flatten nested item fields for CSV.

    Lists of strings become ``a|b`` (flags), booleans ``true``/``false``, and structured
    extension data (news, images, videos, alternates) compact JSON, so nothing is lost and
    every cell parses back. Registered for the ``csv`` format by the add-on.
    """

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return "|".join(value)
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else ""
        return super().serialize_field(field, name, value)
