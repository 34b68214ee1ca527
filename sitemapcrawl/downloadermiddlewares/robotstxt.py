"""Downloader middleware, robots.txt: Scrapy's, fed by the spider's own fetch, waiters fixed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred

from sitemapcrawl import meta

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)

__all__ = ["UNREACHABLE", "SitemapRobotsTxtMiddleware"]

#: The rules of a robots.txt that answered 5xx or could not be fetched (RFC 9309 2.3.1.3
#: and 2.3.1.4: the crawler assumes a complete disallow).
UNREACHABLE = b"User-agent: *\nDisallow: /\n"


class SitemapRobotsTxtMiddleware(RobotsTxtMiddleware):
    """``RobotsTxtMiddleware`` whose waiting requests all get the parsed robots.txt.

    In Scrapy 2.19 every request that arrives while a host's robots.txt is being fetched
    awaits the same Deferred through ``maybe_deferred_to_future``, whose callback consumes
    the result: the first waiter gets the parser, every later one gets ``None`` and is let
    through unchecked. Sampled pages arrive in a burst, so disallowed pages were fetched
    (``tests/test_verification.py`` shows it). Here each waiter gets its own Deferred, fed
    by a callback that passes the result on. Registered by the add-on in the stock
    middleware's place.

    The spider fetches robots.txt itself for its ``Sitemap:`` lines (meta
    ``sitemapcrawl_robots``); that response is parsed here on its way back (:meth:`reuse`),
    so the pages' checks need no second request.
    """

    def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(meta.ROBOTS):
            self.reuse(request, response)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if request.meta.get(meta.ROBOTS):  # unreachable after retries: complete disallow
            self._keep(request, None, UNREACHABLE)

    def reuse(self, request: Request, response: Response) -> bool:
        """Parse a robots.txt the spider downloaded itself (for its ``Sitemap:`` lines), so
        that page requests never fetch the same file again, whatever it answered, as
        RFC 9309 reads it: a success by its rules (what arrived of a body cut short),
        a 4xx or a redirect not followed as "no rules", a 5xx as "disallow all". False
        when the host already has a parser (or one on its way)."""
        if 200 <= response.status < 300:
            body = response.body
        elif response.status >= 500:
            body = UNREACHABLE
        else:
            body = b""
        return self._keep(request, response, body)

    def _keep(self, request: Request, response: Response | None, body: bytes) -> bool:
        """Keep the parser of ``body`` for the robots.txt's host, and for the hosts its
        redirects went through (``http://a.example`` to ``https://www.a.example``)."""
        netlocs = {urlparse_cached(request).netloc}
        netlocs.update(urlsplit(url).netloc for url in request.meta.get("redirect_urls", ()))
        if response is not None:
            netlocs.add(urlparse_cached(response).netloc)
        netlocs -= set(self._parsers)
        if not netlocs:
            return False
        parser = build_from_crawler(self._parserimpl, self.crawler, body)
        for netloc in netlocs:
            self._parsers[netloc] = parser
        self._stats.inc_value("robotstxt/response_count")
        if response is not None:
            self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        self.crawler.signals.send_catch_log(
            signal=signals.robots_parsed, robotparser=parser, request=request
        )
        return True

    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        if netloc not in self._parsers:
            await self._fetch(request, netloc)
        parser = self._parsers.get(netloc)
        if isinstance(parser, Deferred):
            waiter: Deferred[RobotParser | None] = Deferred()

            def relay(result: RobotParser | None) -> RobotParser | None:
                waiter.callback(result)
                return result  # the next waiter gets it too

            parser.addCallback(relay)
            return await maybe_deferred_to_future(waiter)
        return parser

    async def _fetch(self, request: Request, netloc: str) -> None:
        """The robots.txt of a page's host the spider did not read itself (a sampled or
        linked page on another host): Scrapy's fetch, but a host that cannot be reached
        (no such name, refused) is one WARNING and a count, never an ERROR with a
        traceback; its pages are then fetched without rules, as Scrapy does, and their own
        failure is their outcome (``FETCH_FAILED``)."""
        self._parsers[netloc] = Deferred()
        url = urlparse_cached(request)
        robots = Request(
            f"{url.scheme}://{netloc}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            meta={"dont_obey_robotstxt": True, "give_up_log_level": "DEBUG"},  # ours below
            callback=NO_CALLBACK,
        )
        try:
            assert self.crawler.engine is not None
            response = await self.crawler.engine.download_async(robots)
            await self._parse_robots(response, netloc, request)
        except Exception as exc:  # noqa: BLE001 - any download failure, as Scrapy catches
            if not isinstance(exc, IgnoreRequest):
                logger.warning("%s: robots.txt could not be fetched: %s", robots.url, exc)
                self._stats.inc_value("sitemapcrawl/robots/fetch_failed_count")
            self._robots_error(exc, netloc)
        self._stats.inc_value("robotstxt/request_count")
