"""Sitemap parsing: Google's extensions (image, video, news, hreflang alternates, PageMaps).

Each function takes the extension's lxml element and returns plain data (dicts, lists,
strings, numbers) with Google's field names. Namespaces are matched by local name only,
so a wrong or missing extension namespace still parses.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .dates import parse_lastmod

if TYPE_CHECKING:
    from lxml.etree import _Element

__all__ = [
    "alternate",
    "bool_of",
    "float_of",
    "image",
    "int_of",
    "list_of",
    "local_name",
    "news",
    "pagemap",
    "text_of",
    "video",
    "video_fields",
]


def local_name(tag: object) -> str | None:
    """Local part of an lxml tag; None for comments, PIs and entities.

    >>> local_name("{http://www.sitemaps.org/schemas/sitemap/0.9}loc"), local_name("loc")
    ('loc', 'loc')
    """
    if type(tag) is not str:
        return None
    return tag[tag.rfind("}") + 1 :]


def text_of(el: _Element) -> str | None:
    """Stripped text of an element, across CDATA and child nodes; None when empty."""
    text = el.text
    if len(el):
        text = "".join(el.itertext())
    if not text:
        return None
    text = text.strip()
    return text or None


def _prose(el: _Element) -> str | None:
    text = text_of(el)
    return " ".join(text.split()) if text else None


def int_of(text: str | None) -> int | None:
    """An integer field: ``12`` or ``12.0``; None when it is not a whole number."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None


def float_of(text: str | None) -> float | None:
    """A finite number; None otherwise."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def bool_of(text: str | None) -> bool | None:
    """``yes``/``true`` or ``no``/``false``, in any case; None otherwise."""
    if text is None:
        return None
    return {"yes": True, "true": True, "no": False, "false": False}.get(text.lower())


def list_of(text: str | None, sep: str | None = ",") -> list[str]:
    """The non-blank parts of a list (comma-separated; ``sep=None``: white space)."""
    if not text:
        return []
    return [part.strip() for part in text.split(sep) if part.strip()]


def _date(out: dict[str, Any], key: str, text: str | None) -> None:
    parsed = parse_lastmod(text)
    out[f"{key}_raw"] = text
    out[f"{key}_utc"] = parsed.iso if parsed is not None else None


def image(el: _Element) -> dict[str, Any]:
    """``<image:image>`` → loc, caption, title, geo_location, license."""
    out: dict[str, Any] = dict.fromkeys(("loc", "caption", "title", "geo_location", "license"))
    for child in el:
        name = local_name(child.tag)
        if name in {"loc", "license"}:
            out[name] = text_of(child)
        elif name in ("caption", "title", "geo_location"):
            out[name] = _prose(child)
    return out


def alternate(el: _Element) -> dict[str, Any] | None:
    """``<xhtml:link rel=alternate hreflang=.. href=..>`` → rel, hreflang, href.

    None when there is no href."""
    href = el.get("href")
    if href is None or not href.strip():
        return None
    return {"rel": el.get("rel"), "hreflang": el.get("hreflang"), "href": href.strip()}


def news(el: _Element) -> dict[str, Any]:
    """``<news:news>`` → publication name and language, date, title, keywords, genres,
    stock tickers, access."""
    out: dict[str, Any] = {
        "publication_name": None,
        "publication_language": None,
        "publication_date_raw": None,
        "publication_date_utc": None,
        "title": None,
        "keywords": [],
        "genres": [],
        "stock_tickers": [],
        "access": None,
    }
    for child in el:
        name = local_name(child.tag)
        if name == "publication":
            for sub in child:
                sub_name = local_name(sub.tag)
                if sub_name == "name":
                    out["publication_name"] = _prose(sub)
                elif sub_name == "language":
                    out["publication_language"] = text_of(sub)
        elif name == "publication_date":
            _date(out, "publication_date", text_of(child))
        elif name == "title":
            out["title"] = _prose(child)
        elif name in ("keywords", "genres", "stock_tickers"):
            out[name] = list_of(text_of(child))
        elif name == "access":
            out["access"] = text_of(child)
    return out


_VIDEO_TEXT = ("title", "description", "category", "gallery_title", "uploader")
_VIDEO_LOCS = ("thumbnail_loc", "content_loc", "gallery_loc", "uploader_info")


def video_fields() -> dict[str, Any]:
    """Every field of Google's video schema, absent."""
    return {
        "thumbnail_loc": None,
        "title": None,
        "description": None,
        "content_loc": None,
        "player_loc": None,
        "player_loc_attrs": {},
        "duration": None,
        "expiration_date_raw": None,
        "expiration_date_utc": None,
        "rating": None,
        "view_count": None,
        "publication_date_raw": None,
        "publication_date_utc": None,
        "family_friendly": None,
        "tags": [],
        "category": None,
        "restriction": None,
        "platform": None,
        "gallery_loc": None,
        "gallery_title": None,
        "prices": [],
        "requires_subscription": None,
        "uploader": None,
        "uploader_info": None,
        "live": None,
        "content_segment_locs": [],
    }


def video(el: _Element) -> dict[str, Any]:
    """``<video:video>`` → every field of Google's video schema, typed (ints, floats, bools)."""
    out = video_fields()
    for child in el:
        name = local_name(child.tag)
        if name is None:
            continue
        if name in ("thumbnail_loc", "content_loc"):
            out[name] = text_of(child)
        elif name in ("title", "description", "category"):
            out[name] = _prose(child)
        elif name == "player_loc":
            out["player_loc"] = text_of(child)
            out["player_loc_attrs"] = dict(child.attrib)
        elif name in {"duration", "view_count"}:
            out[name] = int_of(text_of(child))
        elif name == "rating":
            out["rating"] = float_of(text_of(child))
        elif name in ("expiration_date", "publication_date"):
            _date(out, name, text_of(child))
        elif name in ("family_friendly", "requires_subscription", "live"):
            out[name] = bool_of(text_of(child))
        elif name == "tag":
            tag = _prose(child)
            if tag:
                out["tags"].append(tag)
        elif name in ("restriction", "platform"):
            out[name] = {
                "relationship": child.get("relationship"),
                "countries" if name == "restriction" else "platforms": list_of(
                    text_of(child), None
                ),
            }
        elif name == "gallery_loc":
            out["gallery_loc"] = text_of(child)
            title = child.get("title")
            out["gallery_title"] = " ".join(title.split()) if title else out["gallery_title"]
        elif name == "price":
            raw = text_of(child)
            out["prices"].append(
                {
                    "currency": child.get("currency"),
                    "type": child.get("type"),
                    "resolution": child.get("resolution"),
                    "value_raw": raw,
                    "value": float_of(raw),
                }
            )
        elif name == "uploader":
            out["uploader"] = _prose(child)
            out["uploader_info"] = child.get("info")
        elif name == "content_segment_loc":
            out["content_segment_locs"].append(
                {"duration": int_of(child.get("duration")), "loc": text_of(child)}
            )
        elif name == "tvshow":
            out["tvshow"] = _tvshow(child)
    return out


def _tvshow(el: _Element) -> dict[str, Any]:
    out: dict[str, Any] = {
        "show_title": None,
        "video_type": None,
        "episode_title": None,
        "season_number": None,
        "episode_number": None,
        "premier_date_raw": None,
        "premier_date_utc": None,
    }
    for child in el:
        name = local_name(child.tag)
        if name in ("show_title", "episode_title"):
            out[name] = _prose(child)
        elif name == "video_type":
            out[name] = text_of(child)
        elif name in ("season_number", "episode_number"):
            out[name] = int_of(text_of(child))
        elif name == "premier_date":
            _date(out, "premier_date", text_of(child))
    return out


def pagemap(el: _Element) -> list[dict[str, Any]]:
    """``<PageMap>`` → one dict per DataObject: type, id and its attributes."""
    objects = []
    for obj in el:
        if local_name(obj.tag) != "DataObject":
            continue
        attributes: dict[str, Any] = {}
        for attr in obj:
            if local_name(attr.tag) == "Attribute" and attr.get("name"):
                value = attr.get("value")
                attributes[attr.get("name") or ""] = value if value is not None else text_of(attr)
        objects.append({"type": obj.get("type"), "id": obj.get("id"), "attributes": attributes})
    return objects
