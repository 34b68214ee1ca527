"""Sitemap discovery, the start: robots.txt's ``Sitemap:`` lines, else the usual locations."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin

from sitemapcrawl.sitemaps.robots import parse_robots
from sitemapcrawl.spiders.frontier import SitemapTask

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from scrapy import Request
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.discoverylog import DiscoveryLog

__all__ = ["RobotsDiscovery"]


class RobotsDiscovery:
    """Read robots.txt for its ``Sitemap:`` lines, and guess where sitemaps are when it
    declares none (``guess=fallback``), always (``always``) or never (``off``).

    ``sitemap_request``: the spider's request for a sitemap task at a priority (None when
    the frontier refuses it or holds it back). Settings: ``SITEMAPCRAWL_GUESS_PATHS``.
    """

    def __init__(
        self,
        args: CrawlArguments,
        guess_paths: list[str],
        log: DiscoveryLog,
        sitemap_request: Callable[[SitemapTask, int], Request | None],
    ) -> None:
        self._guess = args.guess
        self._guess_paths = guess_paths
        self._log = log
        self._sitemap_request = sitemap_request

    def read(self, response: Response, site: str) -> Iterator[Request]:
        """Request each sitemap robots.txt declares, in the order the site declared them
        (or guess where sitemaps are)."""
        log = self._log
        log.inc(site, f"robots/status_count/{response.status}")
        declared: list[str] = []
        if response.status == 200:
            robots = parse_robots(response.body, response.url)
            if robots.html:
                log.inc(site, "robots/html_count")
                log.log_once(
                    "robots_html", response.url, "robots.txt is an HTML page; ignored", site
                )
            if robots.truncated:
                log.inc(site, "robots/truncated_count")
                message = "robots.txt is over 500 KiB; every Sitemap line was still read"
                log.log_once("robots_large", response.url, message, site)
            declared = robots.sitemaps
            if robots.invalid:
                log.inc(site, "robots/invalid_sitemaps_count", robots.invalid)
        elif response.status >= 500:
            message = (
                f"robots.txt answered {response.status} after retries; guessing sitemap locations"
            )
            log.log_once("robots_status", response.url, message, site)
        log.inc(site, "robots/sitemaps_count", len(declared))
        for rank, url in enumerate(declared):
            task = SitemapTask(url, "robots", site, declared_in_robots=True)
            if request := self._sitemap_request(task, -rank):
                yield request
        if self._guess == "always" or (self._guess == "fallback" and not declared):
            yield from self.guesses(site, exclude=set(declared))

    def failed(self, failure: Failure, site: str, url: str) -> Iterator[Request]:
        """robots.txt could not be fetched at all: guess, unless guessing is off."""
        reason = failure.type.__name__ if failure.type else "error"
        self._log.inc(site, f"robots/failed_count/{reason}")
        self._log.log_once(
            "robots_failed", url, f"robots.txt could not be fetched ({reason})", site
        )
        if self._guess != "off":
            yield from self.guesses(site, exclude=set())

    def guesses(self, site: str, exclude: set[str]) -> Iterator[Request]:
        """The usual sitemap locations of ``site``, most likely first."""
        for rank, path in enumerate(self._guess_paths):
            url = urljoin(site, path)
            if url in exclude:
                continue
            self._log.inc(site, "guess/requested_count")
            if request := self._sitemap_request(
                SitemapTask(url, "guessed", site, probe=True), -rank
            ):
                yield request
