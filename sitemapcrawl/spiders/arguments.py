"""Spider arguments: the ``-a`` values of a crawl, validated once, frozen, with their settings."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from sitemapcrawl.incremental.crawlstate import parse_since, state_path
from sitemapcrawl.linkfollow import LINK_MODES
from sitemapcrawl.sitemaps.hosts import InvalidHost, canonical_url
from sitemapcrawl.sitemaps.scope import SCOPE_MODES

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from scrapy.settings import BaseSettings

__all__ = ["ARGUMENT_NAMES", "EMIT_MODES", "GUESS_MODES", "CrawlArguments", "parse_arguments"]

#: The spider's ``-a`` arguments; each overrides the ``SITEMAPCRAWL_*`` setting of its name.
ARGUMENT_NAMES = (
    "origin",
    "sitemap_urls",
    "max_sitemaps",
    "max_urls",
    "max_depth",
    "scope",
    "guess",
    "proxy",
    "sample",
    "since",
    "state",
    "pages",
    "links",
    "emit",
)
GUESS_MODES = ("off", "fallback", "always")
#: What the feed gets: every URL (each with its status when the state file is on), or
#: only what changed since the site's last run (docs/output.md).
EMIT_MODES = ("all", "changes")
_SWITCH = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}


@dataclass(frozen=True, slots=True)
class CrawlArguments:
    """What one crawl was asked to do (the spider's arguments over the settings)."""

    origin: str | None
    sitemap_urls: tuple[str, ...]
    max_sitemaps: int
    max_urls: int
    max_depth: int
    scope: str
    guess: str
    #: pages sampled: the ``sample`` argument; None leaves it to the setting
    sample: bool | None
    proxy: str | None
    since: dt.datetime | str | None
    state_file: Path | None
    #: ``pages=refetch``: fetch the pages an incremental run marks
    fetch_pages: bool
    links: str
    #: ``changes``: the feed gets only new, moved and changed URLs and removed ones
    emit: str = "all"

    @property
    def multi_site(self) -> bool:
        """The sitemaps given belong to several sites: each gets its own report, and
        segment names carry their site (two sites' ``/blog/`` are two segments)."""
        return not self.origin and len({urlsplit(u).netloc.lower() for u in self.sitemap_urls}) > 1

    @property
    def sites(self) -> list[str]:
        """The site roots of a crawl over several sites (empty for a crawl of one)."""
        return [urljoin(u, "/") for u in self.sitemap_urls] if self.multi_site else []

    @property
    def proxy_meta(self) -> dict[str, str]:
        """Request meta sending a request through the proxy, if one was given."""
        return {"proxy": self.proxy} if self.proxy else {}

    @property
    def first_site(self) -> str:
        """The site a crawl-wide message is told against: the origin, else the root of the
        first sitemap given."""
        return self.origin or urljoin((self.sitemap_urls or ("/",))[0], "/")

    @property
    def state_origin(self) -> str:
        """The key of this crawl's rows in the state file."""
        return self.origin or ",".join(self.sitemap_urls)


def parse_arguments(
    raw: Mapping[str, Any], sitemap_urls: Sequence[str], settings: BaseSettings
) -> CrawlArguments:
    """Validate the spider's arguments over the settings; raises ``ValueError`` naming the
    first bad one (its message never echoes credentials)."""
    origin = _http_url("origin", raw["origin"]) if raw.get("origin") else None
    urls = tuple(_http_url("sitemap_urls", u) for u in sitemap_urls)
    limits = {
        name: _count(raw, name, settings) for name in ("max_sitemaps", "max_urls", "max_depth")
    }
    scope = str(raw.get("scope", settings.get("SITEMAPCRAWL_SCOPE"))).strip()
    _one_of("scope", scope, SCOPE_MODES)
    guess = str(raw.get("guess", settings.get("SITEMAPCRAWL_GUESS"))).strip()
    _one_of("guess", guess, GUESS_MODES)
    sample = raw.get("sample")
    if sample is not None and str(sample).strip().lower() not in _SWITCH:
        raise ValueError(f"argument sample={sample!r} is not one of on, off")
    proxy = raw.get("proxy") or settings.get("SITEMAPCRAWL_PROXY")
    proxy = _http_url("proxy", proxy) if proxy else None
    since = parse_since(str(raw["since"])) if raw.get("since") else None
    state_file = state_path(raw.get("state"), settings)
    pages = str(raw.get("pages", "none")).strip().lower()
    _one_of("pages", pages, ("none", "refetch"))
    if pages == "refetch" and since is None:
        raise ValueError("argument pages=refetch needs since=last or since=<date>")
    if since is not None and state_file is None:
        raise ValueError(
            "argument since needs the state file: state is off "
            "(set SITEMAPCRAWL_STATE_PATH or -a state=PATH)"
        )
    links = str(raw.get("links", settings.get("SITEMAPCRAWL_LINKS"))).strip()
    _one_of("links", links, LINK_MODES)
    emit = str(raw.get("emit", settings.get("SITEMAPCRAWL_EMIT"))).strip()
    _one_of("emit", emit, EMIT_MODES)
    if emit == "changes" and (
        state_file is None or not settings.getbool("SITEMAPCRAWL_VERIFY_ENABLED")
    ):
        raise ValueError(
            "argument emit=changes needs the state file: state is off "
            "(set SITEMAPCRAWL_STATE_PATH or -a state=PATH, and SITEMAPCRAWL_VERIFY_ENABLED)"
        )
    if not origin and not urls:
        raise ValueError(
            "argument origin is missing: pass -a origin=https://site or -a sitemap_urls=..."
        )
    return CrawlArguments(
        origin=origin,
        sitemap_urls=urls,
        **limits,
        scope=scope,
        guess=guess,
        sample=_SWITCH[str(sample).strip().lower()] if sample else None,
        proxy=proxy,
        since=since,
        state_file=state_file,
        fetch_pages=pages == "refetch",
        links=links,
        emit=emit,
    )


def _count(raw: Mapping[str, Any], name: str, settings: BaseSettings) -> int:
    """A limit: the argument, else its setting; a whole number, 0 meaning no limit."""
    value = raw.get(name, settings.getint(f"SITEMAPCRAWL_{name.upper()}"))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"argument {name}={value!r} is not a whole number") from None
    if number < 0:
        raise ValueError(f"argument {name}={value!r} must be 0 (no limit) or more")
    return number


def _one_of(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"argument {name}={value!r} is not one of {', '.join(choices)}")


def _http_url(name: str, value: str) -> str:
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = "" if parts.password else f"={value!r}"  # never echo credentials
        raise ValueError(f"argument {name}{shown} is not an http(s) URL")
    try:
        return canonical_url(value)  # one spelling of the host for every check and request
    except InvalidHost:
        shown = "" if parts.password else f"={value!r}"
        raise ValueError(f"argument {name}{shown} names a host no browser requests") from None
