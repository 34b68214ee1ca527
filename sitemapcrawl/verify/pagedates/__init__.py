"""Lastmod verification: the dates a fetched page declares about itself.

Pure code (lxml, w3lib, extruct; never scrapy or twisted). :func:`page_evidence`
is called once per sampled page; it never raises, whatever the bytes. The design:
docs/verification.md, "Page dates" and "Fingerprints". The rooms, in the order a page is
read: :mod:`~sitemapcrawl.verify.pagehtml` (sniff, decode, parse), ``structured``
(extruct's JSON-LD, microdata and RDFa, the JSON-LD fallback, the main entity), ``meta``
(OpenGraph and ``<meta>`` keys), ``declared`` (what a found date is), ``resolve`` (the
choice among the candidates), ``evidence`` (:func:`page_evidence`, which runs them and adds
the content fingerprint, :mod:`sitemapcrawl.verify.fingerprint`).

Where dates come from
---------------------

* structured data read by extruct 0.18 (``json-ld``, ``microdata``, and
  ``rdfa`` when the page carries RDFa attributes, because the RDFa parser is
  about 10-60 times slower): ``dateModified`` / ``datePublished`` of every
  entity, including ``@graph`` members, nested ``mainEntity`` /
  ``mainEntityOfPage`` objects and prefixed keys (``schema:dateModified``,
  ``https://schema.org/dateModified``);
* OpenGraph, read by extruct (``<head>`` only): see :data:`OPENGRAPH_MODIFIED`
  and :data:`OPENGRAPH_PUBLISHED`;
* our own pass over ``<meta name|property|itemprop|http-equiv>`` and over
  ``<time|meta itemprop=dateModified|datePublished>`` outside any
  ``itemscope`` (which microdata ignores): see :data:`META_MODIFIED` and
  :data:`META_PUBLISHED`. Their ``source`` is ``"meta"``;
* the HTTP ``Last-Modified`` header (``source="http"``).

Main entity
-----------

Every structured-data entity is scored: +3 when its ``@id``, ``url``,
``mainEntityOfPage`` or ``isPartOf`` (fragment dropped; scheme, ``www.`` and
a trailing slash ignored) is the page URL or its ``<link rel=canonical>``, or
when it is the ``mainEntity`` of such an entity; +2 for a page-like type
(:data:`MAIN_TYPES`); +1 at the top level (a top-level object or a direct
``@graph`` member) or under ``mainEntity`` / ``mainEntityOfPage``. Entities of
an :data:`EXCLUDED_TYPES` type, under an :data:`EXCLUDED_KEYS` property
(authors, comments, reviews, offers, breadcrumbs, related items...) and
everything below them are never the main entity. Among the entities that
carry a date of a kind, the best-scoring ones (score above 0) are the main
entity. OpenGraph, ``<meta>`` and HTTP dates describe the page itself, so they
are always ``main_entity``.

Priority of modification dates (``PageEvidence.modified``)
----------------------------------------------------------

1. main-entity ``dateModified`` from structured data, latest first (a
   WebPage and its Article may disagree: the later one is the page's), then
   JSON-LD before microdata before RDFa;
2. OpenGraph, in :data:`OPENGRAPH_MODIFIED` order;
3. ``<meta>`` / orphan ``itemprop``, in :data:`META_MODIFIED` order (Dublin
   Core first: it is usually set deliberately by the CMS);
4. HTTP ``Last-Modified`` (last: it is often the render time or a deploy mtime);
5. dates of other entities (``main_entity=False``), in document order.

``best_modified`` is the first main-entity candidate that parsed, is not a
sentinel, not ``future``, not more than a day before the main published date
and not "now": minute-or-finer values within two minutes of the response
``Date`` header (or of ``now`` when there is no ``Date`` header) are dates
rendered on every request, so they are skipped, and ``now_like`` tells
whether the first eligible candidate was one. ``modified`` lists
``best_modified`` first, then the others in the order above.

Problems
--------

``not_html``, ``empty``, ``truncated`` (only the first :data:`MAX_HTML_BYTES`
were read), ``<syntax>_invalid`` (extruct failed on that syntax;
``json-ld_invalid`` also when one JSON-LD block is broken: extruct 0.18 then
drops every block of the page, so the blocks are re-read one by one with a
tolerant cleanup), ``conflicting_modified`` (main-entity structured
``dateModified`` values disagree at their common precision),
``future_modified``, ``invalid_modified`` (a main-entity value did not parse),
``modified_before_published``, ``now_modified`` (the first eligible modification date is
the render time: ``now_like``).
"""

from __future__ import annotations

from sitemapcrawl.verify.pagedates.declared import DateEvidence, PageEvidence
from sitemapcrawl.verify.pagedates.evidence import page_evidence
from sitemapcrawl.verify.pagedates.meta import (
    META_MODIFIED,
    META_PUBLISHED,
    OPENGRAPH_MODIFIED,
    OPENGRAPH_PUBLISHED,
)
from sitemapcrawl.verify.pagedates.resolve import NOW_WINDOW
from sitemapcrawl.verify.pagedates.structured import EXCLUDED_KEYS, EXCLUDED_TYPES, MAIN_TYPES
from sitemapcrawl.verify.pagehtml import MAX_HTML_BYTES

__all__ = [
    "EXCLUDED_KEYS",
    "EXCLUDED_TYPES",
    "MAIN_TYPES",
    "MAX_HTML_BYTES",
    "META_MODIFIED",
    "META_PUBLISHED",
    "NOW_WINDOW",
    "OPENGRAPH_MODIFIED",
    "OPENGRAPH_PUBLISHED",
    "DateEvidence",
    "PageEvidence",
    "page_evidence",
]
