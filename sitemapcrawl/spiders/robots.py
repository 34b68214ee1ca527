"""Sitemap discovery, the start: robots.txt's ``Sitemap:`` lines, else the usual locations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from sitemapcrawl.sitemaps.robots import parse_robots
from sitemapcrawl.spiders.task import SitemapTask

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy import Request
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog
    from sitemapcrawl.spiders.requester import SitemapRequester

__all__ = ["RobotsDiscovery"]


@dataclass(slots=True)
class _GuessRound:
    """The guessed locations of one site, tried a few at a time until one is a sitemap."""

    candidates: list[tuple[int, str]]  # (rank, URL) still to try, most common first
    in_flight: set[str] = field(default_factory=set)
    found: bool = False


class RobotsDiscovery:
    """Read robots.txt for its ``Sitemap:`` lines, and guess where sitemaps are when it
    declares none (``guess=fallback``), always (``always``) or never (``off``).

    ``guess=fallback`` tries the usual locations in order of how common they are,
    ``SITEMAPCRAWL_GUESS_AT_ONCE`` at a time, and stops at the first one that is a sitemap;
    ``guess=always`` requests every one. ``requester``: the spider's sitemap requests (its
    frontier refuses a sitemap or holds it back); ``obey``: ``ROBOTSTXT_OBEY``. Settings:
    ``SITEMAPCRAWL_GUESS_PATHS``, ``SITEMAPCRAWL_GUESS_AT_ONCE``.
    """

    def __init__(  # noqa: PLR0917 - the spider builds its parts in one place
        self,
        args: CrawlArguments,
        guess_paths: list[str],
        at_once: int,
        log: DiscoveryLog,
        requester: SitemapRequester,
        obey: bool,
    ) -> None:
        self._guess = args.guess
        self._guess_paths = guess_paths
        self._at_once = max(1, at_once)
        self._log = log
        self._requester = requester
        self._obey = obey
        self._rounds: dict[str, _GuessRound] = {}
        #: per site, the declared sitemaps not read yet (none found so far)
        self._declared: dict[str, set[str]] = {}
        self._outbox: list[Request] = []

    def read(self, response: Response, site: str) -> Iterator[Request]:
        """Request each sitemap robots.txt declares, in the order the site declared them
        (or guess where sitemaps are)."""
        log = self._log
        log.inc(site, f"robots/status_count/{response.status}")
        declared: list[str] = []
        if response.status == 200:
            body = response.body
            if "download_stopped" in response.flags:  # over the cap: whole lines only
                body = body[: body.rfind(b"\n") + 1]
                log.inc(site, "robots/truncated_count")
                message = (
                    f"robots.txt is over {len(response.body)} bytes; read no further, "
                    "every Sitemap line before the cut was kept"
                )
                log.log_once("robots_large", response.url, message, site)
            robots = parse_robots(body, response.url)
            if robots.html:
                log.inc(site, "robots/html_count")
                log.log_once(
                    "robots_html", response.url, "robots.txt is an HTML page; ignored", site
                )
            if robots.truncated and "download_stopped" not in response.flags:
                log.inc(site, "robots/truncated_count")
                message = "robots.txt is over 500 KiB; every Sitemap line was still read"
                log.log_once("robots_large", response.url, message, site)
            declared = robots.sitemaps
            if robots.invalid:
                log.inc(site, "robots/invalid_sitemaps_count", robots.invalid)
                message = (
                    f"{robots.invalid} Sitemap line(s) skipped: not an http(s) URL a request "
                    f"can be made for (first: {robots.invalid_example!r})"
                )
                log.log_once("robots_invalid_sitemap", response.url, message, site)
        elif response.status >= 500:
            log.inc(site, "robots/sitemaps_count", 0)
            yield from self._unreachable(site, response.url, f"answered {response.status}")
            return
        log.inc(site, "robots/sitemaps_count", len(declared))
        waiting = self._declared.setdefault(site, set())
        for rank, url in enumerate(declared):
            task = SitemapTask(url, "robots", site, declared_in_robots=True)
            before = self._requester.admitted(url)
            if request := self._requester.sitemap(task, -rank):
                yield request
            if request is not None or (self._requester.admitted(url) and not before):
                waiting.add(url)
        if self._guess == "always" or (self._guess == "fallback" and not waiting):
            yield from self.guesses(site, exclude=set(declared))

    def failed(self, failure: Failure, site: str, url: str) -> Iterator[Request]:
        """robots.txt could not be fetched at all: guess, unless guessing is off."""
        reason = failure.type.__name__ if failure.type else "error"
        self._log.inc(site, f"robots/failed_count/{reason}")
        yield from self._unreachable(site, url, f"could not be fetched ({reason})")

    def _unreachable(self, site: str, url: str, why: str) -> Iterator[Request]:
        """robots.txt answered 5xx after retries, or could not be fetched: RFC 9309 has the
        crawler assume a complete disallow, so nothing of the site is requested, no
        sitemap either (``-s ROBOTSTXT_OBEY=False`` reads them all the same)."""
        if not self._obey:
            message = f"robots.txt {why}; ROBOTSTXT_OBEY is off: guessing sitemap locations"
            self._log.log_once("robots_unreachable", url, message, site)
            if self._guess != "off":
                yield from self.guesses(site, exclude=set())
            return
        self._log.inc(site, "robots/unreachable_count")
        self._log.cut_short("robots_unreachable")
        message = (
            f"robots.txt {why}: the site is off limits (RFC 9309: complete disallow); "
            "no sitemap or page requested (-s ROBOTSTXT_OBEY=False overrides)"
        )
        self._log.log_once("robots_unreachable", url, message, site)

    def guesses(self, site: str, exclude: set[str]) -> Iterator[Request]:
        """The usual sitemap locations of ``site``, most common first: all of them with
        ``guess=always``, else the first few (:meth:`probed` sends the next ones)."""
        urls = [(rank, urljoin(site, path)) for rank, path in enumerate(self._guess_paths)]
        urls = [(rank, url) for rank, url in urls if url not in exclude]
        if self._guess == "always":
            for rank, url in urls:
                self._probe(site, url, rank)
            yield from self._sent()
            return
        self._rounds[site] = _GuessRound(urls)
        yield from self._next(site)

    def declared_read(self, task: SitemapTask, found: bool) -> Iterator[Request]:
        """A sitemap robots.txt declared was read (``found``: it is one) or failed; when
        every one failed (a host that does not exist, a 404, an HTML page), the usual
        locations are guessed as if robots.txt had declared none."""
        waiting = self._declared.get(task.site)
        if waiting is None or task.url not in waiting:
            return
        waiting.discard(task.url)
        if found:
            self._declared.pop(task.site, None)  # the site has a sitemap: nothing to guess
            return
        if not waiting and self._guess == "fallback":
            del self._declared[task.site]
            self._log.inc(task.site, "guess/fallback_count")
            yield from self.guesses(task.site, exclude={task.url})

    def probed(self, task: SitemapTask, found: bool) -> Iterator[Request]:
        """A guessed location was read (``found``: it is a sitemap) or missed: the next
        few are tried while none was found."""
        round_ = self._rounds.get(task.site)
        if round_ is None:
            return
        round_.in_flight.discard(task.url)
        round_.found = round_.found or found
        yield from self._next(task.site)

    def _next(self, site: str) -> Iterator[Request]:
        """The next few locations, once every one in flight missed."""
        round_ = self._rounds[site]
        if round_.found or round_.in_flight:
            return
        while round_.candidates and len(round_.in_flight) < self._at_once:
            rank, url = round_.candidates.pop(0)
            if self._probe(site, url, rank):
                round_.in_flight.add(url)
        yield from self._sent()

    def _probe(self, site: str, url: str, rank: int) -> bool:
        """Ask for a guessed location; whether the frontier took it (sent now, or held
        back for a place: either way it will be read)."""
        self._log.inc(site, "guess/requested_count")
        before = self._requester.admitted(url)
        request = self._requester.sitemap(SitemapTask(url, "guessed", site, probe=True), -rank)
        if request is not None:
            self._outbox.append(request)
        return request is not None or (self._requester.admitted(url) and not before)

    def _sent(self) -> Iterator[Request]:
        requests, self._outbox = self._outbox, []
        yield from requests
