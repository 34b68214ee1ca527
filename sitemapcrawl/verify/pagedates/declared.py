"""Page dates: what a declared date is, and what the extraction steps collect.

:class:`DateEvidence` is one date a page declares, :class:`PageEvidence` what one fetch of a
page says about its modification time and content; ``_Cand`` and ``_Found`` hold the
candidates the steps (:mod:`.structured`, :mod:`.meta`, the HTTP headers) find, before
:mod:`.resolve` orders them. docs/verification.md, "Page dates".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from sitemapcrawl.sitemaps.dates import LastMod, parse_lastmod

__all__ = [
    "DateEvidence",
    "PageEvidence",
]


_MAX_RAW = 256


_MAX_OTHER = 100


_EPOCH_RE = re.compile(r"[0-9]{10}(?:[0-9]{3})?")


@dataclass(frozen=True, slots=True)
class DateEvidence:
    """One declared date of a page.

    ``source`` is ``json-ld``, ``microdata``, ``rdfa``, ``opengraph``,
    ``meta`` or ``http``; ``field`` the property (``dateModified``,
    ``article:modified_time``, ``dcterms.modified``, ``last-modified``...);
    ``raw`` the text as written (at most 256 characters); ``value`` its
    parse (``None`` only when ``raw`` is blank, which is never recorded);
    ``kind`` is ``modified`` or ``published``.
    """

    source: str
    field: str
    raw: str
    value: LastMod | None
    main_entity: bool
    kind: str


@dataclass(frozen=True, slots=True)
class PageEvidence:
    """What one fetch of a page says about its modification time and content.

    See the module documentation for the candidate order and the problems.
    """

    modified: tuple[DateEvidence, ...]
    published: tuple[DateEvidence, ...]
    best_modified: DateEvidence | None
    now_like: bool
    http_last_modified: LastMod | None
    http_date: LastMod | None
    etag: str | None
    fingerprint: str
    text_length: int
    problems: tuple[str, ...]
    #: What the fingerprint hashes, as text: the masked main text, then a newline and the
    #: masked link targets (``verify.fingerprint.content_tree``); kept to say *what*
    #: changed between two fetches (``verify.commonmode``). Empty for no HTML text.
    content: str = ""


@dataclass(frozen=True, slots=True)
class _Cand:
    ev: DateEvidence
    tier: int  # 0 structured, 1 opengraph, 2 meta, 3 http
    rank: int  # order within the tier
    order: int  # document order


class _Found:
    """What the extraction steps accumulate for one page."""

    __slots__ = ("mod", "now", "problems", "pub")

    def __init__(self, now: dt.datetime | None) -> None:
        self.now = now
        self.mod: list[_Cand] = []
        self.pub: list[_Cand] = []
        self.problems: set[str] = set()


def _evidence(
    source: str, field: str, raw: object, *, kind: str, main: bool, now: dt.datetime | None
) -> DateEvidence | None:
    text = raw if isinstance(raw, str) else str(raw) if isinstance(raw, int | float) else ""
    text = text.strip()[:_MAX_RAW]
    if not text:
        return None
    value: LastMod | None
    if source == "meta" and _EPOCH_RE.fullmatch(text):
        seconds = int(text[:10])
        value = LastMod(text, dt.datetime.fromtimestamp(seconds, dt.UTC), "second", ())
    else:
        value = parse_lastmod(text, now=now)
    return DateEvidence(source, field, text, value, main, kind)
