"""Sitemap parsing: the scanner's reading of Google's extensions in an ordinary entry.

An ordinary entry (``scan.py``) may end with extension elements of the shapes real
sitemaps use: hreflang ``xhtml:link`` alternates, ``image:image`` with its text fields in
any order, ``news:news`` with its publication, ``video:video`` with its text fields (and
the attributes of those that have some), and ``mobile:mobile``. ``grammar`` gives the
bytes pattern of one such element for the prefixes a document declares (compiled into
the scanner's entry pattern, so the structure is checked there), and ``read`` turns the
matched run of elements into what ``extensions.py`` makes of lxml's elements, with one
decode and one ``findall`` for the whole run. A run ``read`` cannot take that way (a
carriage return, "]]>", a character XML does not allow, invalid UTF-8) gives None: the
entry then goes through the light elements (``markup.py``) and the entry rules, as any
entry of another shape does.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from .dates import parse_lastmod
from .extensions import bool_of, float_of, int_of, list_of, video_fields
from .markup import ATTRIBUTES, attr_value, text

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .markup import Markup

__all__ = ["PREFIXES", "Extensions", "grammar", "read"]

#: The prefixes the fast path knows, by the extension each names.
PREFIXES: Final = ("xhtml", "image", "news", "video", "mobile")

_S = rb"[ \t\n\r]*+"
_IMAGE_FIELDS = (b"loc", b"caption", b"title", b"geo_location", b"license")
_NEWS_FIELDS = (b"publication_date", b"title", b"keywords", b"genres", b"stock_tickers", b"access")
#: Video fields without attributes, then those ``extensions.video`` reads attributes of.
_VIDEO_FIELDS = (
    b"thumbnail_loc",
    b"title",
    b"description",
    b"content_loc",
    b"duration",
    b"expiration_date",
    b"rating",
    b"view_count",
    b"publication_date",
    b"family_friendly",
    b"tag",
    b"category",
    b"requires_subscription",
    b"live",
)
_VIDEO_ATTRIBUTED = (
    b"player_loc",
    b"restriction",
    b"platform",
    b"gallery_loc",
    b"price",
    b"uploader",
    b"content_segment_loc",
)


#: Text without a character XML does not allow (C0 controls but tab and newlines).
_VALUE = rb"[^<\x00-\x08\x0b\x0c\x0e-\x1f]*+"


def _leaves(prefix: bytes, names: Iterable[bytes], attributed: Iterable[bytes] = ()) -> bytes:
    """One text-only element of these names (with attributes for ``attributed``)."""
    end = b"</" + prefix + b":"
    branches = [name + b">" + _VALUE + end + name + b">" for name in names]
    branches += [name + ATTRIBUTES + _S + b">" + _VALUE + end + name + b">" for name in attributed]
    return b"<" + prefix + b":(?:" + b"|".join(branches) + b")"


_GRAMMAR = {
    "xhtml": b"<xhtml:link" + ATTRIBUTES + _S + b"/>",
    "image": (
        b"<image:image>" + _S + b"(?:" + _leaves(b"image", _IMAGE_FIELDS) + _S + b")*+"
        b"</image:image>"
    ),
    "news": (
        b"<news:news>" + _S + b"(?:(?:<news:publication>" + _S
        + b"(?:" + _leaves(b"news", (b"name", b"language")) + _S + b")*+</news:publication>"
        + b"|" + _leaves(b"news", _NEWS_FIELDS) + b")" + _S + b")*+</news:news>"
    ),
    "video": (
        b"<video:video>" + _S + b"(?:" + _leaves(b"video", _VIDEO_FIELDS, _VIDEO_ATTRIBUTED)
        + _S + b")*+</video:video>"
    ),
    "mobile": b"<mobile:mobile" + _S + b"/>",
}  # fmt: skip


def grammar(prefixes: Iterable[str]) -> bytes | None:
    """The pattern (without groups) of one extension element of the fast path's shapes,
    for these declared prefixes; None when it knows none of them."""
    shapes = [_GRAMMAR[prefix] for prefix in PREFIXES if prefix in prefixes]
    return b"(?:" + b"|".join(shapes) + b")" if shapes else None


_SPACE = rb"[ \t\n\r]"
#: The tokens of a run the grammar matched: 1 a container (``image``, ``news``, ``video``),
#: 2 a link's attributes, 3 ``mobile:mobile``, 4-6 a text-only element's local name,
#: attributes and text (the ``news:publication`` start tag reads as one, with its white
#: space). End tags are skipped.
_TOKEN = re.compile(
    rb"<(?:image|news|video):(image|news|video)>"
    rb"|<xhtml:link(" + ATTRIBUTES + rb")" + _SPACE + rb"*/>"
    rb"|<(m)obile:mobile"
    rb"|<[a-z]+:([A-Za-z_]+)(" + ATTRIBUTES + rb")" + _SPACE + rb"*>([^<]*)"
)
# The commonest shapes, each element of a kind whole (one findall a kind): a link's rel,
# hreflang and href; an image's loc, then its title and caption in either order; a news
# entry's publication name and language, date, title, then keywords, genres and stock
# tickers if any.
_QUOTED = rb'"([^"<\x00-\x08\x0b\x0c\x0e-\x1f]*)"'
_LINKS = re.compile(
    rb"<xhtml:link" + _SPACE + rb"+rel=" + _QUOTED + _SPACE + rb"+hreflang=" + _QUOTED
    + _SPACE + rb"+href=" + _QUOTED + _SPACE + rb"*/>"
)  # fmt: skip
_IMAGES = re.compile(
    rb"<image:image>" + _S + rb"<image:loc>([^<]*+)</image:loc>" + _S
    + rb"(?:<image:title>([^<]*+)</image:title>" + _S
    + rb"(?:<image:caption>([^<]*+)</image:caption>" + _S + rb"|)"
    + rb"|<image:caption>([^<]*+)</image:caption>" + _S
    + rb"(?:<image:title>([^<]*+)</image:title>" + _S + rb"|)|)</image:image>"
)  # fmt: skip
_NEWS = re.compile(
    rb"<news:news>" + _S + rb"<news:publication>" + _S + rb"<news:name>([^<]*+)</news:name>"
    + _S + rb"<news:language>([^<]*+)</news:language>" + _S + rb"</news:publication>" + _S
    + rb"<news:publication_date>([^<]*+)</news:publication_date>" + _S
    + rb"<news:title>([^<]*+)</news:title>" + _S
    + rb"(?:<news:keywords>([^<]*+)</news:keywords>" + _S + rb"|)"
    + rb"(?:<news:genres>([^<]*+)</news:genres>" + _S + rb"|)"
    + rb"(?:<news:stock_tickers>([^<]*+)</news:stock_tickers>" + _S + rb"|)</news:news>"
)  # fmt: skip
#: The start of each element of a run, by kind (one findall tells which kinds it holds).
_KINDS = re.compile(rb"<(xhtml:link|image:image|news:news|video:video|mobile:mobile)[ \t\n\r/>]")
_LINK, _IMAGE, _NEWS_ENTRY, _VIDEO = "xhtml:link", "image:image", "news:news", "video:video"
# The patterns above, on text: a run is decoded once.
_TOKEN_TEXT, _LINKS_TEXT, _IMAGES_TEXT, _NEWS_TEXT, _KINDS_TEXT = (
    re.compile(pattern.pattern.decode("ascii"))
    for pattern in (_TOKEN, _LINKS, _IMAGES, _NEWS, _KINDS)
)
_ATTR_SPACE_TEXT = str.maketrans("\t\n", "  ")
#: Bytes looked for with ``in`` as ints (``markup``'s reason).
_BRACKET, _EF = b"]\xef"


def _text(value: str) -> str:
    """``markup.text`` of this part of a decoded run (no character XML does not allow)."""
    if "&" in value or "\r" in value:
        return text(value.encode("utf-8"))
    return value


def _attribute(value: str) -> str:
    """``markup.attr_value`` of an attribute value of a decoded run."""
    if "&" in value or "\r" in value:
        return attr_value(value.encode("utf-8"))
    if "\t" in value or "\n" in value:
        return value.translate(_ATTR_SPACE_TEXT)
    return value


def _stripped(value: str) -> str | None:
    """``extensions.text_of`` of an element with this text."""
    if "&" in value or "\r" in value:
        value = text(value.encode("utf-8"))
    return value.strip() or None


def _prose(value: str) -> str | None:
    """``extensions``' prose of an element with this text."""
    if "&" in value or "\r" in value:
        value = text(value.encode("utf-8"))
    return _plain_prose(value)


def _plain_prose(value: str) -> str | None:
    """``_prose`` of a value without references or carriage returns."""
    if value.isprintable() and "  " not in value and value[:1] != " " and value[-1:] != " ":
        return value or None  # one space between words already (no other white space)
    return " ".join(value.split()) or None


def _date(out: dict[str, Any], key: str, raw: str) -> None:
    value = _stripped(raw)
    parsed = parse_lastmod(value)
    out[f"{key}_raw"] = value
    out[f"{key}_utc"] = parsed.iso if parsed is not None else None


class Extensions:
    """What ``read`` found: the entry's news, images, videos, alternates and mobile flag."""

    __slots__ = ("alternates", "images", "mobile", "news", "videos")

    def __init__(self) -> None:
        self.news: list[dict[str, Any]] = []
        self.images: list[dict[str, Any]] = []
        self.videos: list[dict[str, Any]] = []
        self.alternates: list[dict[str, Any]] = []
        self.mobile = False


def read(raw: bytes, markup: Markup) -> Extensions | None:
    """The extensions of a run of elements ``grammar`` matched, as ``extensions.py`` reads
    lxml's elements; None when the run must go through the light elements instead.
    Raises ``markup.Unsupported`` where ``markup`` would (a malformed reference, invalid
    UTF-8, a repeated attribute...)."""
    if (_BRACKET in raw and raw.find(b"]]>") >= 0) or (
        _EF in raw and (raw.find(b"\xef\xbf\xbe") >= 0 or raw.find(b"\xef\xbf\xbf") >= 0)
    ):
        return None  # what text() refuses, but for references and invalid UTF-8
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    kinds = _KINDS_TEXT.findall(decoded)
    if _VIDEO in kinds:
        return _tokens(decoded, markup)
    found = Extensions()
    # Without references or carriage returns, a value is its text: stripped, or prose.
    plain = "&" not in decoded and "\r" not in decoded
    if _LINK in kinds:
        links = _LINKS_TEXT.findall(decoded)
        if len(links) != kinds.count(_LINK):
            return _tokens(decoded, markup)
        alternates = found.alternates
        for rel, hreflang, href in links:
            stripped = _attribute(href).strip()
            if stripped:
                alternates.append(
                    {"rel": _attribute(rel), "hreflang": _attribute(hreflang), "href": stripped}
                )
    if _IMAGE in kinds:
        images = _IMAGES_TEXT.findall(decoded)
        if len(images) != kinds.count(_IMAGE):
            return _tokens(decoded, markup)
        prose = _plain_prose if plain else _prose
        found.images = [
            {
                "loc": (loc.strip() if plain else _text(loc).strip()) or None,
                "caption": prose(caption or caption_first),
                "title": prose(title or title_second),
                "geo_location": None,
                "license": None,
            }
            for loc, title, caption, caption_first, title_second in images
        ]
    if _NEWS_ENTRY in kinds:
        news = _NEWS_TEXT.findall(decoded)
        if len(news) != kinds.count(_NEWS_ENTRY):
            return _tokens(decoded, markup)
        for name, language, date, title, keywords, genres, tickers in news:
            entry: dict[str, Any] = {
                "publication_name": _prose(name),
                "publication_language": _stripped(language),
                "publication_date_raw": None,
                "publication_date_utc": None,
                "title": _prose(title),
                "keywords": list_of(_stripped(keywords)) if keywords else [],
                "genres": list_of(_stripped(genres)) if genres else [],
                "stock_tickers": list_of(_stripped(tickers)) if tickers else [],
                "access": None,
            }
            _date(entry, "publication_date", date)
            found.news.append(entry)
    if "mobile:mobile" in kinds:
        found.mobile = True
    return found


def _tokens(decoded: str, markup: Markup) -> Extensions:
    """``read`` of any run ``grammar`` matched: one token at a time."""
    found = Extensions()
    current: dict[str, Any] = {}
    kind = ""
    for container, link, mobile, name, attrs, value in _TOKEN_TEXT.findall(decoded):
        if name:
            if kind == "image":
                if name in ("loc", "license"):
                    current[name] = _stripped(value)
                else:  # caption, title, geo_location
                    current[name] = _prose(value)
            elif kind == "news":
                _news(current, name, value)
            else:
                _video(current, name, markup.attributes(attrs.encode()) if attrs else {}, value)
        elif container:
            kind = container
            if kind == "image":
                current = {
                    "loc": None,
                    "caption": None,
                    "title": None,
                    "geo_location": None,
                    "license": None,
                }
                found.images.append(current)
            elif kind == "news":
                current = {
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
                found.news.append(current)
            else:
                current = video_fields()
                found.videos.append(current)
        elif mobile:
            found.mobile = True
        else:
            attributes = markup.attributes(link.encode()) if link else {}
            href = attributes.get("href")
            if href is not None and href.strip():
                found.alternates.append(
                    {
                        "rel": attributes.get("rel"),
                        "hreflang": attributes.get("hreflang"),
                        "href": href.strip(),
                    }
                )
    return found


def _news(out: dict[str, Any], name: str, value: str) -> None:
    """``extensions.news`` of one text-only element (``publication``'s own start tag
    included, which says nothing)."""
    if name == "name":
        out["publication_name"] = _prose(value)
    elif name == "language":
        out["publication_language"] = _stripped(value)
    elif name == "publication_date":
        _date(out, "publication_date", value)
    elif name == "title":
        out["title"] = _prose(value)
    elif name == "access":
        out["access"] = _stripped(value)
    elif name != "publication":  # keywords, genres, stock_tickers
        out[name] = list_of(_stripped(value))


def _video(out: dict[str, Any], name: str, attributes: dict[str, str], value: str) -> None:
    """``extensions.video`` of one text-only element."""
    if name in ("thumbnail_loc", "content_loc"):
        out[name] = _stripped(value)
    elif name in ("title", "description", "category"):
        out[name] = _prose(value)
    elif name == "player_loc":
        out["player_loc"] = _stripped(value)
        out["player_loc_attrs"] = attributes
    elif name in ("duration", "view_count"):
        out[name] = int_of(_stripped(value))
    elif name == "rating":
        out["rating"] = float_of(_stripped(value))
    elif name in ("expiration_date", "publication_date"):
        _date(out, name, value)
    elif name in ("family_friendly", "requires_subscription", "live"):
        out[name] = bool_of(_stripped(value))
    elif name == "tag":
        tag = _prose(value)
        if tag:
            out["tags"].append(tag)
    elif name in ("restriction", "platform"):
        out[name] = {
            "relationship": attributes.get("relationship"),
            "countries" if name == "restriction" else "platforms": list_of(_stripped(value), None),
        }
    elif name == "gallery_loc":
        out["gallery_loc"] = _stripped(value)
        title = attributes.get("title")
        out["gallery_title"] = " ".join(title.split()) if title else out["gallery_title"]
    elif name == "price":
        raw = _stripped(value)
        out["prices"].append(
            {
                "currency": attributes.get("currency"),
                "type": attributes.get("type"),
                "resolution": attributes.get("resolution"),
                "value_raw": raw,
                "value": float_of(raw),
            }
        )
    elif name == "uploader":
        out["uploader"] = _prose(value)
        out["uploader_info"] = attributes.get("info")
    else:  # content_segment_loc
        out["content_segment_locs"].append(
            {"duration": int_of(attributes.get("duration")), "loc": _stripped(value)}
        )
