"""Build HTML where escaping is the default: every value is text unless it is ``Markup``.

Site data is hostile (a URL, an ETag or an error key may hold ``<script>``), so nothing is
ever formatted into HTML by hand: :func:`el` escapes its children and attribute values,
and only ``Markup`` (what :func:`el` returns, or a constant written here) passes as is.

Pure: no Scrapy or Twisted import.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Markup", "el", "esc", "join"]

_VOID = frozenset({"br", "hr", "img", "meta", "wbr"})


class Markup(str):
    """A string of trusted HTML."""

    __slots__ = ()


def esc(value: Any) -> Markup:
    """``value`` as HTML text: ``Markup`` passes, anything else is escaped (quotes too).

    >>> esc('<script>alert("x")</script>')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    >>> esc(Markup("<b>ok</b>"))
    '<b>ok</b>'
    """
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def join(parts: Iterable[Any], separator: Any = "") -> Markup:
    """Escape each part (and the separator) and concatenate them.

    >>> join(["a<b", Markup("<br>"), "c"], ", ")
    'a&lt;b, <br>, c'
    """
    return Markup(esc(separator).join(esc(part) for part in _flatten(parts)))


def _flatten(parts: Iterable[Any]) -> Iterable[Any]:
    for part in parts:
        if part is None:
            continue
        if isinstance(part, (list, tuple)):
            yield from _flatten(part)
        else:
            yield part


def el(tag: str, *children: Any, **attrs: Any) -> Markup:
    """An element: ``tag`` is ours (never site data); children and attributes are escaped.

    ``None`` and ``False`` attributes are left out, ``True`` ones written bare; a trailing
    underscore is dropped (``class_``) and other underscores become hyphens (``aria_label``).
    Lists of children are flattened; ``None`` children are skipped.

    >>> el("a", "x<y", href='https://s.example/?a=1&b="2"', class_="u")
    '<a href="https://s.example/?a=1&amp;b=&quot;2&quot;" class="u">x&lt;y</a>'
    >>> el("td", None, ["a", el("br")], colspan=2, hidden=True)
    '<td colspan="2" hidden>a<br></td>'
    """
    assert tag.isalnum(), tag
    rendered = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        if value is True:
            rendered.append(f" {key}")
        else:
            rendered.append(f' {key}="{html.escape(str(value), quote=True)}"')
    if tag in _VOID:
        assert not children, tag
        return Markup(f"<{tag}{''.join(rendered)}>")
    inner = join(children)
    return Markup(f"<{tag}{''.join(rendered)}>{inner}</{tag}>")
