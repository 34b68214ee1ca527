"""Scrapy's robots.txt middleware, with the concurrent-waiters bug of Scrapy 2.19 fixed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.robotstxt import RobotParser

__all__ = ["SitemapRobotsTxtMiddleware"]


class SitemapRobotsTxtMiddleware(RobotsTxtMiddleware):
    """``RobotsTxtMiddleware`` whose waiting requests all get the parsed robots.txt.

    In Scrapy 2.19 every request that arrives while a host's robots.txt is being fetched
    awaits the same Deferred through ``maybe_deferred_to_future``, whose callback consumes
    the result: the first waiter gets the parser, every later one gets ``None`` and is let
    through unchecked. Sampled pages arrive in a burst, so disallowed pages were fetched
    (``tests/test_verification.py`` shows it). Here each waiter gets its own Deferred, fed
    by a callback that passes the result on. Registered by the add-on in the stock
    middleware's place.
    """

    async def robot_parser(self, request: Request) -> RobotParser | None:
        parser = self._parsers.get(urlparse_cached(request).netloc)
        if isinstance(parser, Deferred):
            waiter: Deferred[RobotParser | None] = Deferred()

            def relay(result: RobotParser | None) -> RobotParser | None:
                waiter.callback(result)
                return result  # the next waiter gets it too

            parser.addCallback(relay)
            return await maybe_deferred_to_future(waiter)
        return await super().robot_parser(request)
