"""Lastmod verification: the content fingerprint of a page, in a room of its own.

docs/verification.md, "Fingerprints". Two fetches of a page whose fingerprints differ saw
its main content change (ΔC, the cross-run score's other fact). The interface is
:func:`content_fingerprint` (HTML text in, ``(digest, length)`` out),
:func:`fingerprint_tree` (the same on a parsed tree, which it mutates) and
:data:`EMPTY_FINGERPRINT` (no text); everything else here (the dropped and kept tags,
the boilerplate tokens and noise headings, the masks of volatile tokens, the link keys)
is private. Pure code (lxml; never scrapy or twisted).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from sitemapcrawl.verify.pagehtml import MAX_HTML_BYTES, _parse

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "EMPTY_FINGERPRINT",
    "content_fingerprint",
    "content_tree",
    "fingerprint_of",
    "fingerprint_tree",
]


def content_fingerprint(html: str) -> tuple[str, int]:
    """Digest (blake2b-128, hex) and length of the page's normalised main text.

    Boilerplate (``script``, ``style``, ``nav``, ``aside``, ``form``,
    ``noscript``, ``iframe``, page-level ``header`` / ``footer``, comments,
    ad slots, comment threads, share widgets, counters, carousels, and blocks of
    related, recommended, random or popular posts, named by their class, id or
    heading) is dropped; the
    text of ``<main>``, else of the top-level ``<article>`` elements, else of
    ``<body>`` is kept, whitespace is collapsed and volatile tokens (dates,
    times, "x minutes ago", view counters, UUIDs, long hex / base64 ids,
    session and CSRF tokens, ad-slot ids, copyright years) are masked
    before hashing, with the paths and fragments the kept content links to (a link now
    pointing elsewhere, or at another section, under the same text is a change; another
    host or query is not); the previous / next pager the head declares is left out.
    Only the first :data:`MAX_HTML_BYTES` characters are read.

    >>> a = content_fingerprint("<main><p>Price 19 EUR</p><p>1,204 views, 14:02:11</p></main>")
    >>> b = content_fingerprint("<main><p>Price 19 EUR</p><p>1,311 views, 14:05:40</p></main>")
    >>> a == b, a[1]
    (True, 30)
    >>> content_fingerprint("<main><p>Price 21 EUR</p></main>")[0] == a[0]
    False
    >>> page = "<main><p>Price 19 EUR</p><section><h2>You may also like</h2>{}</section></main>"
    >>> content_fingerprint(page.format("<a href=/x>X</a>")) == content_fingerprint(
    ...     page.format("<a href=/y>Y</a>"))
    True
    """
    root = _parse(html[:MAX_HTML_BYTES].encode("utf-8", "replace"))
    if root is None:
        return EMPTY_FINGERPRINT
    return fingerprint_tree(root)


_DROP_TAGS = (
    "script", "style", "nav", "aside", "form", "noscript", "iframe", "template", "svg",
    "canvas", "object", "embed", "button", "select", "textarea", "input", "link", "meta",
)  # fmt: skip


_KEEP_TAGS = frozenset({"html", "body", "main", "article"})


_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})


# Whole class / id tokens of blocks that change without the content changing: ads,
# comments, share and cookie widgets, and what a build or a request fills anew (related,
# recommended or random posts, counters, carousels, sidebar widgets). Recent, latest,
# featured or popular posts are left alone: on a home or list page they are its content.
_DROP_TOKEN_RE = re.compile(
    r"(?:ads?|advert\w*|advertisement|ad[-_]?(?:slot|unit|container|wrapper|banner|box)[-_\w]*"
    r"|(?:div-)?gpt-ad[-_\w]*|dfp[-_\w]*|sponsored|comments?|comment-list|comments-area"
    r"|disqus_thread|share(?:[-_]\w+)?|social-share|sharedaddy"
    r"|cookie[-_\w]*|consent[-_\w]*|newsletter[-_\w]*|breadcrumbs?|sidebar|skip-link"
    r"|(?:[a-z0-9]+[-_])*(?:related|recommend(?:ed|ations?)?|random|suggested|similar"
    r"|yarpp|jp-relatedposts|crp|rp4wp|you-may-also-like|also-like|read-next)(?:[-_][-_\w]*)?"
    r"|widgets?(?:[-_][-_\w]*)?|carousel(?:[-_][-_\w]*)?|rotat(?:ing|or)(?:[-_][-_\w]*)?"
    r"|(?:[a-z0-9]+[-_])*(?:counter|view-?count|hit-?count|visit-?count|pageviews?|page-views"
    r"|read-?count|like-?count)(?:[-_][-_\w]*)?|busuanzi[-_\w]*|waline[-_\w]*|twikoo[-_\w]*"
    r"|giscus[-_\w]*|utterances[-_\w]*)",
    re.IGNORECASE,
)


# A heading that names a block filled anew on every build or request ("Related posts",
# "Random Recommended Posts", "You may also like"): the block goes, heading and all. Not
# "Recent posts" and the like, which are a home page's content.
_NOISE_HEADING_RE = re.compile(
    r"(?:(?:random\s+)?(?:related|recommended|suggested|similar|random)\s+(?:posts?|articles?"
    r"|stories|entries|reads?|reading|content|pages?|items|links|products|videos)"
    r"|random\s+recommended(?:\s+\w+)?|recommended\s+for\s+you|you\s+(?:may|might|will)"
    r"(?:\s+also)?\s+(?:like|enjoy|be\s+interested(?:\s+in)?)|read\s+(?:next|this\s+next)"
    r"|what\s+to\s+read\s+next"
    r"|ähnliche\s+(?:artikel|beiträge)|das\s+könnte\s+(?:dich|sie)\s+auch\s+interessieren"
    r"|articles?\s+(?:similaires|liés|connexes)|à\s+lire\s+aussi|vous\s+aimerez\s+aussi"
    r"|artículos\s+relacionados|también\s+te\s+puede\s+interesar|关联文章|相关文章|相關文章"
    r"|推荐阅读|推薦閱讀|猜你喜欢|関連記事|関連する記事|おすすめ記事"
    r"|관련\s*글|추천\s*글)[\s:.!…]*",
    re.IGNORECASE,
)


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


#: Headings longer than this are content, whatever words they use.
_NOISE_HEADING_MAX = 60


_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)


_DAYS = (
    r"(?:mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)\b\.?,?\s*"
)


_UNITS = r"(?:sec(?:ond)?s?|min(?:ute)?s?|hours?|hrs?|days?|weeks?|months?|years?|[smhdw])"


_COUNTED = (
    r"(?:views?|page\s?views|comments?|likes?|shares?|reads?|visits?|hits|replies|reactions?"
    r"|votes?|downloads?|followers?|subscribers?|retweets?|claps?)"
)


# (pattern, placeholder), applied in order; placeholders contain no digits so
# masking twice changes nothing.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        # Session ids, tokens and cache busters in URLs and key=value text.
        (r"([?&;](?:[a-z_]*sess(?:ion)?[a-z_]*|sid|s|token|csrf[a-z_]*|xsrf[a-z_]*|nonce"
         r"|ver|v|_|cb|rnd|ts|t|utm_[a-z]+)=)[^&\s#\"'<>]*", r"\1~"),
        (r"\b((?:csrf|xsrf|authenticity)[-_]?(?:token)?|token|nonce|session[-_]?id|sid)"
         r"(\s*[:=]\s*)\S+", r"\1\2~"),
        (r"\b(?:div-)?(?:gpt-ad|ad[-_]?slot|ad[-_]?unit|adslot)[-_\w]*", "~ad~"),
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "~id~"),
        (r"\b[0-9a-f]{16,}\b", "~id~"),
        # ISO date-times before the shorter date / time patterns.
        (r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
         r"(?:\s?(?:Z|[+-]\d{2}:?\d{2}))?)?", "~date~"),
        (r"\b\d{4}([./-])\d{1,2}\1\d{1,2}\b|\b\d{1,2}([./-])\d{1,2}\2(?:\d{4}|\d{2})\b", "~date~"),
        (rf"\b(?:{_DAYS})?\d{{1,2}}(?:st|nd|rd|th)?\.?\s+(?:of\s+)?{_MONTHS},?\s+\d{{4}}",
         "~date~"),
        (rf"\b(?:{_DAYS})?{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}", "~date~"),
        (rf"\b{_DAYS}~date~", "~date~"),
        (r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?(?:\s?(?:utc|gmt|cet|cest|bst|[ecmp][sd]t))?\b",
         "~time~"),
        (rf"\b(?:\d+|an?|one|a\s+few|few)\s*{_UNITS}\.?\s+ago\b|\bjust\s+now\b", "~ago~"),
        (r"\bvor\s+(?:\d+|einer?|wenigen)\s+(?:sekunden?|minuten?|stunden?|tag(?:en)?"
         r"|wochen?|monat(?:en)?|jahr(?:en)?)\b", "~ago~"),
        (rf"\b\d+(?:[,. ]\d{{3}})*(?:[.,]\d+)?(?:\s?[km])?\s*({_COUNTED})\b", r"~n~ \1"),
        (rf"\b({_COUNTED})\s*:\s*\d[\d,.]*[km]?\b", r"\1: ~n~"),
        (r"(?:©|\(c\)|copyright)\s*\d{4}(?:\s*[-\u2013]\s*\d{4})?", "©~year~"),
    )
)  # fmt: skip


# Long base64-like ids are masked after the URL, token and ad-slot patterns
# (which keep their names) and before the UUID / hex / date patterns.
_B64_AT = 3


_B64_RE = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")


#: The runs of letters and digits between a base64-like token's separators.
_PIECE_RE = re.compile(r"[A-Za-z0-9]+")


#: Digit / letter alternations in a piece that make it look random (``a3f9c2e1``), where a
#: word with a number has one or two (``python3``, ``ubuntu2204lts``, ``x86``).
_RANDOM_TURNS = 3


def _mask_b64(match: re.Match[str]) -> str:
    """A long token of base64 characters with digits and letters is an id when it is one
    piece (``aGVsbG8gMTIz…``) or holds a random-looking piece (a commit link's path); a path
    or a hyphenated name made of words and numbers (``/docs/api-performance/v0``,
    ``download_10_1_0``) is kept: its change is a change."""
    token = match.group()
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return token
    pieces = _PIECE_RE.findall(token)
    if len(pieces) == 1 or any(_random(piece) for piece in pieces):
        return "~id~"
    return token


def _random(piece: str) -> bool:
    digits = sum(c.isdigit() for c in piece)
    if not 0 < digits < len(piece):
        return False
    turns = sum(a.isdigit() != b.isdigit() for a, b in itertools.pairwise(piece))
    return len(piece) >= 16 or (len(piece) >= 8 and turns >= _RANDOM_TURNS)


def _mask(text: str) -> str:
    for i, (pattern, replacement) in enumerate(_MASKS):
        if i == _B64_AT:
            text = _B64_RE.sub(_mask_b64, text)
        text = pattern.sub(replacement, text)
    return text


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()


#: The fingerprint of a page with no text (empty, or no HTML tree to read).
EMPTY_FINGERPRINT: tuple[str, int] = (_digest(""), 0)


def _droppable(el: Any) -> bool:
    tag = el.tag
    if not isinstance(tag, str):
        return True
    if tag in ("header", "footer"):
        # An article's own header holds its headline: keep it.
        return next(el.iterancestors("article", "main"), None) is None
    if el.get("hidden") is not None or el.get("aria-hidden", "").lower() == "true":
        return True
    if el.get("role", "").lower() in _DROP_ROLES:
        return True
    tokens = el.get("class", "").split()
    tokens.append(el.get("id", ""))
    # Inside code, classes name the highlighted tokens (``comment``, ``c1``…): content.
    return any(t and _DROP_TOKEN_RE.fullmatch(t) for t in tokens) and (
        next(el.iterancestors("pre", "code"), None) is None
    )


def fingerprint_tree(root: Any) -> tuple[str, int]:
    """Hash the masked main text of *root*; mutates the tree (call it last)."""
    return fingerprint_of(*content_tree(root))


def fingerprint_of(masked: str, links: str) -> tuple[str, int]:
    """The fingerprint of :func:`content_tree`'s output: digest and text length."""
    return _digest(f"{masked}\n{links}" if links else masked), len(masked)


def content_tree(root: Any) -> tuple[str, str]:
    """What :func:`fingerprint_tree` hashes: the masked main text of *root* and the
    masked, sorted link targets of its kept content (space-separated); mutates the tree."""
    _drop_pager(root)
    for el in list(root.iter(*_DROP_TAGS)):
        el.drop_tree()
    for el in list(root.iter()):
        if el.getparent() is not None and el.tag not in _KEEP_TAGS and _droppable(el):
            el.drop_tree()
    for heading in list(root.iter(*_HEADINGS)):
        _drop_noise_block(heading)
    text = ""
    chosen = root.xpath("//main | //*[@role='main']")[:1] or root.xpath(
        "//article[not(ancestor::article)]"
    )
    if chosen:
        text = _normalise(" ".join(t for el in chosen for t in el.itertext()))
    if len(text) < 200:
        body = root.find("body")
        chosen = [body if body is not None else root]
        text = _normalise(" ".join(chosen[0].itertext()))
    masked = _normalise(_mask(text))
    links = _mask(" ".join(sorted({k for el in chosen for k in _link_keys(el)})))
    return masked, links


_PAGER_RELS = frozenset({"prev", "previous", "next"})


def _drop_pager(root: Any) -> None:
    """Drop the pager: the last link to each page the head's ``<link rel=prev|next>`` names
    (a docs site's "previous / next" at the foot of the page). It shows the neighbours'
    titles, which change when a page is added or renamed next to this one, not when this
    one changes. Only the head's declaration marks it: a theme that adds ``rel=next`` to
    its links at a deploy must not change every page at once.

    >>> page = ('<html><head><link rel="next" href="b.html"></head><body><main><p>Text, see '
    ...         '<a href="b.html">B</a>.</p><a href="b.html"><p>next</p><p>{}</p></a></main>')
    >>> content_tree(_parse(page.format("B").encode()))
    ('Text, see B .', 'b.html')
    >>> fingerprint_tree(_parse(page.format("B, renamed").encode())) == fingerprint_tree(
    ...     _parse(page.format("B").encode()))
    True
    """
    targets = {
        _resolved(el.get("href"))
        for el in root.iter("link")
        if _PAGER_RELS & set(el.get("rel", "").lower().split())
    }
    targets.discard(None)
    last = {}
    for el in root.iter("a"):
        target = _resolved(el.get("href"))
        if target in targets:
            last[target] = el
    for el in last.values():
        el.drop_tree()


def _resolved(href: str | None) -> str | None:
    """A link's target path as seen from any page (relative links resolved alike)."""
    try:
        return urlsplit(urljoin("http://h/a/b/c/d/", (href or "").strip())).path if href else None
    except ValueError:
        return None


def _link_keys(scope: Any) -> Iterator[str]:
    """The targets of the links in ``scope`` that a change of can matter: the path and the
    fragment of each ``<a href>``, without scheme, host or query (a site served from
    another origin, a tracking or cache-busting parameter are no change); a list page
    whose entries now point elsewhere under the same titles is one, and so is a link
    retargeted to another section (``#options`` → ``#global-options``: bench/pagepairs,
    where the Markdown changed only there)."""
    for href in scope.xpath(".//a/@href"):
        text = str(href).strip()
        if not text or text.startswith("javascript:"):
            continue
        try:
            parts = urlsplit(text)
        except ValueError:
            continue
        if parts.path or parts.fragment:
            yield f"{parts.path}#{parts.fragment}" if parts.fragment else parts.path


def _drop_noise_block(heading: Any) -> None:
    """Drop the block a heading names when it names a related, recommended, random or
    popular list (:data:`_NOISE_HEADING_RE`): the heading's parent when the heading opens it
    (no text before it) and the parent is no page-level container, else the heading and
    its following siblings up to the next heading of its level or higher."""
    parent = heading.getparent()
    if parent is None:
        return  # dropped with an earlier block
    title = " ".join(heading.text_content().split())
    if len(title) > _NOISE_HEADING_MAX or not _NOISE_HEADING_RE.fullmatch(title):
        return
    if parent.tag not in _KEEP_TAGS and parent.getparent() is not None and _opens(heading):
        parent.drop_tree()
        return
    level = int(heading.tag[1])
    following = []
    for sibling in heading.itersiblings():
        tag = sibling.tag
        if isinstance(tag, str) and tag in _HEADINGS and int(tag[1]) <= level:
            break
        following.append(sibling)
    heading.drop_tree()
    for sibling in following:
        sibling.drop_tree()


def _opens(heading: Any) -> bool:
    """Whether ``heading`` is the first thing with text in its parent."""
    parent = heading.getparent()
    if (parent.text or "").strip():
        return False
    for sibling in heading.itersiblings(preceding=True):
        if (sibling.tail or "").strip() or (
            isinstance(sibling.tag, str) and sibling.text_content().strip()
        ):
            return False
    return True


def _normalise(text: str) -> str:
    return " ".join(text.split())
