"""Link coverage: what the sitemaps and the links each reach, pure arithmetic (no Scrapy).

The link follower (``sitemapcrawl.linkfollow``) records every page it or the sampler fetched
as a :class:`PageRecord`; :class:`CoverageTally` counts the sitemap's URLs per section as
they stream by, and :func:`coverage_summary` turns both into the report's ``coverage``
section: URLs in both, sitemap-only and link-only with their shares, per section, the
"non-indexable URL in sitemap" findings, and an estimate of the sitemap's completeness with
a Wilson interval. :class:`UrlSpaceGuard` caps the URL spaces a crawler can be trapped in
(calendars, faceted search: query-string explosions, paths that repeat themselves).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sitemapcrawl.verify.intervals import wilson

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "FINDINGS",
    "CoverageTally",
    "PageRecord",
    "UrlSpaceGuard",
    "coverage_summary",
    "noindex_in",
    "section_of",
    "segment_coverage",
    "share",
]

#: Finding kinds for sitemap URLs, in report order.
FINDINGS = (
    "not_found",  # 404, 410
    "client_error",  # other 4xx
    "server_error",  # 5xx
    "redirected",  # 3xx, with where to
    "noindex",  # meta robots or X-Robots-Tag
    "canonical_elsewhere",  # <link rel=canonical> to another URL
    "blocked_by_robots",  # robots.txt disallows the page it lists
    "fetch_failed",  # no answer (timeout, refused, size cap)
)

#: Examples kept per finding and per list in the report (counts are always complete).
MAX_EXAMPLES = 50


def section_of(url: str) -> str:
    """The URL's first path component, the segment of a flat sitemap.

    >>> section_of("https://a.example/blog/post?x=1"), section_of("https://a.example/x")
    ('/blog/', '/')
    """
    path = urlsplit(url).path or "/"
    end = path.find("/", 1)
    return "/" if end < 0 else path[: end + 1]


def _origin_and_section(url: str) -> tuple[str, str]:
    """``scheme://netloc`` (lower case) and :func:`section_of` of an emitted URL, without
    ``urlsplit`` for the usual ``http(s)://host/path`` shape (once per listed URL).

    >>> _origin_and_section("HTTPS://A.example:8080/blog/post?x=1")
    ('https://a.example:8080', '/blog/')
    >>> _origin_and_section("https://a.example?x=/y/"), _origin_and_section("https://a.example")
    (('https://a.example', '/'), ('https://a.example', '/'))
    """
    start = url.find("://") + 3
    slash = url.find("/", start)
    if start > 3 and slash > 0:
        origin = url[:slash]
        if "?" not in origin and "#" not in origin:
            end = url.find("/", slash + 1)
            if end > 0:
                cut = url.find("?", slash, end)
                if cut < 0:
                    cut = url.find("#", slash, end)
                if cut < 0:
                    return origin.lower(), url[slash : end + 1]
            else:
                return origin.lower(), "/"
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.lower()}", section_of(url)


def share(part: int, whole: int) -> float:
    """``part / whole`` rounded to four places, 0.0 for an empty whole.

    >>> share(1, 3), share(0, 0)
    (0.3333, 0.0)
    """
    return round(part / whole, 4) if whole else 0.0


def noindex_in(value: str) -> bool:
    """Whether a robots directive list (meta ``content`` or ``X-Robots-Tag``) says noindex.

    ``X-Robots-Tag`` may name a user agent first (``googlebot: noindex``); ``none`` means
    ``noindex, nofollow``.

    >>> noindex_in("index, follow"), noindex_in("googlebot: noindex"), noindex_in("NONE")
    (False, True, True)
    """
    words = value.lower().replace(":", ",").replace(";", ",").split(",")
    return any(word.strip() in ("noindex", "none") for word in words)


class UrlSpaceGuard:
    """Refuse URLs of spaces that never end: more than ``max_query_variants`` distinct query
    strings on one path (calendars, facets, session ids), or a path that repeats a segment
    ``max_repeats`` times (relative-link loops such as ``/a/b/a/b/a/b``).

    Call :meth:`admit` once per distinct URL; it returns None or the limit that refused it.

    >>> guard = UrlSpaceGuard(max_query_variants=2)
    >>> [guard.admit(f"https://a.example/cal?m={m}") for m in range(4)]
    [None, None, 'query_variants', 'query_variants']
    >>> guard.admit("https://a.example/cal"), guard.admit("https://a.example/x/y/x/y/x/y")
    (None, 'repeated_path')
    """

    def __init__(self, max_query_variants: int = 20, max_repeats: int = 3) -> None:
        self.max_query_variants = max_query_variants
        self.max_repeats = max_repeats
        self._variants: Counter[str] = Counter()

    def admit(self, url: str) -> str | None:
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        if self.max_repeats and segments:
            most = Counter(segments).most_common(1)[0][1]
            if most >= self.max_repeats:
                return "repeated_path"
        if parts.query and self.max_query_variants:
            key = f"{parts.scheme}://{parts.netloc}{parts.path}"
            self._variants[key] += 1
            if self._variants[key] > self.max_query_variants:
                return "query_variants"
        return None


@dataclass(slots=True)
class PageRecord:
    """One URL the link follower knows: how it was reached and what fetching it showed.

    ``linked``: reached by a link (or the home page, or a redirect from such a URL), as
    opposed to only listed in a sitemap; ``via``: who fetched it (sample, refetch, links);
    ``status``: the HTTP status of its own fetch (None: not fetched, or no answer, see
    ``error``); ``location``: where a 3xx sent it; ``canonical``: its ``<link
    rel=canonical>``; ``noindex``: ``meta`` or ``header`` when one of them says noindex.
    """

    url: str
    depth: int
    linked: bool
    in_sitemap: bool
    via: str = "links"
    status: int | None = None
    error: str | None = None
    location: str | None = None
    canonical: str | None = None
    noindex: str | None = None
    content_type: str | None = None
    fetched: bool = False

    @property
    def canonical_elsewhere(self) -> bool:
        return self.canonical is not None and self.canonical.rstrip("/") != self.url.rstrip("/")

    @property
    def reachable(self) -> bool:
        """Reached by links and answered 2xx."""
        return self.linked and self.status is not None and 200 <= self.status < 300

    @property
    def indexable(self) -> bool:
        return self.reachable and self.noindex is None and not self.canonical_elsewhere

    def finding(self) -> tuple[str, str | None] | None:
        """The sitemap finding this page makes (kind, detail), if any."""
        status = self.status
        if self.error is not None:
            if self.error == "robots":
                return "blocked_by_robots", None
            return "fetch_failed", self.error
        if status is None:
            return None
        if status in (404, 410):
            return "not_found", str(status)
        if 300 <= status < 400:
            return "redirected", self.location
        if 400 <= status < 500:
            return "client_error", str(status)
        if status >= 500:
            return "server_error", str(status)
        if self.noindex is not None:
            return "noindex", self.noindex
        if self.canonical_elsewhere:
            return "canonical_elsewhere", self.canonical
        return None


@dataclass(slots=True)
class CoverageTally:
    """What the sitemaps listed, counted as the URL items stream by (O(sections) memory,
    plus the caller's set of listed URLs): per section, per scheme and host, and the
    URLs listed by more than one sitemap (examples)."""

    site: str
    listed: int = 0
    sections: Counter[str] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0
    duplicate_examples: list[dict[str, str]] = field(default_factory=list)

    def add(self, url: str) -> None:
        """One sitemap URL (emitted once)."""
        self.add_all([url])

    def add_all(self, urls: list[str]) -> None:
        """:meth:`add` for each of ``urls``.

        >>> a, b = CoverageTally(""), CoverageTally("")
        >>> urls = ["https://a.example/blog/1", "https://a.example/blog/2", "http://b.example/"]
        >>> for url in urls:
        ...     a.add(url)
        >>> b.add_all(urls)
        >>> a == b
        True
        """
        self.listed += len(urls)
        pairs = [_origin_and_section(url) for url in urls]
        self.sections.update(section for _, section in pairs)
        self.hosts.update(origin for origin, _ in pairs)

    def update(self, other: CoverageTally) -> None:
        """Add what another worker's tally of the same site counted."""
        self.listed += other.listed
        self.sections.update(other.sections)
        self.hosts.update(other.hosts)
        self.duplicates += other.duplicates
        room = MAX_EXAMPLES - len(self.duplicate_examples)
        self.duplicate_examples.extend(other.duplicate_examples[: max(0, room)])

    def duplicate(self, url: str, sitemap: str) -> None:
        """A URL listed again by ``sitemap`` (the item of its first listing was emitted)."""
        self.duplicates += 1
        if len(self.duplicate_examples) < MAX_EXAMPLES:
            self.duplicate_examples.append({"url": url, "sitemap": sitemap})


def _split_counts(listed: int, linked: int, both: int) -> dict[str, Any]:
    union = listed + linked - both
    return {
        "sitemap": listed,
        "links": linked,
        "both": both,
        "sitemap_only": listed - both,
        "link_only": linked - both,
        "both_share": share(both, union),
        "sitemap_only_share": share(listed - both, union),
        "link_only_share": share(linked - both, union),
    }


def coverage_summary(
    tally: CoverageTally,
    records: list[PageRecord],
    *,
    mode: str,
    limits: dict[str, int],
    broken_links: int,
    max_depth: int,
    max_pages: int,
    pages_fetched: int,
    unchecked: int | None = None,
) -> dict[str, Any]:
    """The report's ``coverage`` section.

    ``records``: every URL fetched or reached (see :class:`PageRecord`); ``limits``: URLs
    not fetched, by the limit that stopped them (``max_pages``, ``max_depth``,
    ``query_variants``, ``repeated_path``; ``page_size`` for pages too large to read);
    ``unchecked``: with ``links=full``, the listed URLs links did not reach that were not
    fetched either (the budget ran out); None when they are not checked.

    >>> tally = CoverageTally("https://a.example/")
    >>> for u in ("https://a.example/a", "https://a.example/b"):
    ...     tally.add(u)
    >>> recs = [PageRecord("https://a.example/a", 1, True, True, status=200, fetched=True),
    ...         PageRecord("https://a.example/c", 1, True, False, status=200, fetched=True)]
    >>> s = coverage_summary(tally, recs, mode="full", limits={}, broken_links=0,
    ...                      max_depth=5, max_pages=100, pages_fetched=2)
    >>> s["urls"]["both"], s["urls"]["sitemap_only"], s["urls"]["link_only"]
    (1, 1, 1)
    >>> s["completeness"]["estimate"], s["stopped_by"]
    (0.5, [])
    """
    reachable = [r for r in records if r.reachable]
    both = sum(r.in_sitemap for r in reachable)
    section_links: Counter[str] = Counter(section_of(r.url) for r in reachable)
    section_both: Counter[str] = Counter(section_of(r.url) for r in reachable if r.in_sitemap)
    names = sorted(set(tally.sections) | set(section_links))
    sections = [
        {
            "section": name,
            **_split_counts(tally.sections.get(name, 0), section_links[name], section_both[name]),
        }
        for name in names
    ]
    checked, findings, examples = _findings(records)
    stopped = sorted(k for k, v in limits.items() if v)
    main_host = max(tally.hosts, key=lambda h: tally.hosts[h]) if tally.hosts else None
    summary: dict[str, Any] = {
        "mode": mode,
        "max_depth": max_depth,
        "max_pages": max_pages,
        "pages_fetched": pages_fetched,
        "complete": not stopped,
        "stopped_by": stopped,
        "limits": {k: v for k, v in sorted(limits.items()) if v},
        "urls": _split_counts(tally.listed, len(reachable), both),
        "sitemap_only_means": _sitemap_only_means(mode, stopped, max_depth),
        "sections": sections,
        "completeness": _completeness(reachable),
        "findings": {
            "checked": checked,
            "counts": {k: findings[k] for k in FINDINGS if findings[k]},
            "pages": examples,
        },
        "broken_links": broken_links,
        "listed_twice": {"count": tally.duplicates, "examples": tally.duplicate_examples},
        "host_variants": {
            "main": main_host,
            "others": {h: n for h, n in sorted(tally.hosts.items()) if h != main_host},
        },
    }
    unreached = [r for r in records if r.via == "check"]
    if unreached or unchecked is not None:
        summary["sitemap_only_checked"] = {
            "fetched": len(unreached),
            "alive": sum(r.status is not None and 200 <= r.status < 300 for r in unreached),
            "unchecked": unchecked or 0,
        }
    return summary


def _completeness(reachable: list[PageRecord]) -> dict[str, Any]:
    """The sitemaps' completeness: the share of the indexable pages reached by links that
    a sitemap lists, with its Wilson interval."""
    indexable = [r for r in reachable if r.indexable]
    listed = sum(r.in_sitemap for r in indexable)
    low, high = wilson(listed, len(indexable))
    return {
        "indexable_reached": len(indexable),
        "listed": listed,
        "estimate": share(listed, len(indexable)) if indexable else None,
        "low": round(low, 4),
        "high": round(high, 4),
        "basis": "share of the indexable pages reached by links (2xx, no noindex, "
        "canonical to itself) that a sitemap lists; Wilson 95 % interval",
    }


def _findings(records: list[PageRecord]) -> tuple[int, Counter[str], list[dict[str, Any]]]:
    """The listed URLs whose fetch was checked, their findings by kind, and examples (at
    most ``MAX_EXAMPLES`` per kind on average), in URL order."""
    findings: Counter[str] = Counter()
    examples: list[dict[str, Any]] = []
    checked = 0
    for record in sorted(records, key=lambda r: r.url):
        if not record.in_sitemap or not (record.fetched or record.error):
            continue
        checked += 1
        found = record.finding()
        if found is None:
            continue
        kind, detail = found
        findings[kind] += 1
        if len(examples) < MAX_EXAMPLES * len(FINDINGS):
            examples.append(
                {"url": record.url, "finding": kind, "status": record.status, "detail": detail}
            )
    return checked, findings, examples


def _sitemap_only_means(mode: str, stopped: list[str], max_depth: int) -> str:
    """What "sitemap-only" means for this link crawl: orphans only when the crawl of the
    links were followed from the home page (not only from the sampled pages) and no limit
    stopped the link crawl."""
    if mode == "sample":
        return (
            "not reached by links followed from the sampled pages and the home page "
            f"(depth {max_depth}): sitemap-only does not mean orphan"
        )
    if stopped:
        return (
            f"not reached by links, but the link crawl was stopped by {', '.join(stopped)}: "
            "orphans and pages the crawl did not get to"
        )
    return (
        f"not linked from the home page within {max_depth} clicks, nor from a page "
        "fetched on the way (samples included): orphans"
    )


def segment_coverage(
    records: list[PageRecord],
    listed: Mapping[str, int],
    segment_of: Callable[[str], str | None],
) -> dict[str, dict[str, Any]]:
    """Per sitemap segment: its URLs reached by links too (``both``), the others
    (``sitemap_only``), the share reached, and its findings by kind.

    ``listed``: URLs per segment; ``segment_of``: the segment that listed a URL (None when
    no sitemap did). Link-only URLs belong to no segment: see the report's ``sections``.

    >>> recs = [PageRecord("https://a.example/p/1", 1, True, True, status=200, fetched=True),
    ...         PageRecord("https://a.example/p/2", 0, False, True, status=404, fetched=True)]
    >>> seg = segment_coverage(recs, {"/s.xml": 3}, lambda url: "/s.xml")["/s.xml"]
    >>> seg["both"], seg["sitemap_only"], seg["reached_share"], seg["findings"]
    (1, 2, 0.3333, {'not_found': 1})
    """
    both: Counter[str] = Counter()
    checked: Counter[str] = Counter()
    findings: dict[str, Counter[str]] = {}
    for record in records:
        if not record.in_sitemap:
            continue
        segment = segment_of(record.url)
        if segment is None:
            continue
        if record.reachable:
            both[segment] += 1
        if record.fetched or record.error:
            checked[segment] += 1
            found = record.finding()
            if found is not None:
                findings.setdefault(segment, Counter())[found[0]] += 1
    result = {}
    for segment, count in listed.items():
        kinds = findings.get(segment, Counter())
        result[segment] = {
            "sitemap": count,
            "both": both[segment],
            "sitemap_only": count - both[segment],
            "reached_share": share(both[segment], count),
            "checked": checked[segment],
            "findings": {k: kinds[k] for k in FINDINGS if kinds[k]},
        }
    return result
