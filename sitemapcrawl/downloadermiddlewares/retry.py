"""Downloader middleware, retries: Scrapy's, with Retry-After and a deadline for sitemaps.

A robots.txt or sitemap request has a deadline of its own (``SITEMAPCRAWL_SITEMAP_DEADLINE``,
from its first attempt): each attempt's ``download_timeout`` is what is left of it, and no
retry starts past it, so a server that accepts connections and never answers costs the
deadline once, not ``RETRY_TIMES`` full timeouts. A ``429`` or ``503`` with ``Retry-After``
(seconds or an HTTP date) is retried no sooner than it asks; one that asks for more than
``SITEMAPCRAWL_RETRY_AFTER_MAX`` seconds, or past the deadline, is given up at once. Every
other request is retried as Scrapy's ``RetryMiddleware`` does.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import time
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.retry import RetryMiddleware, get_retry_request
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.response import response_status_message
from twisted.internet.task import deferLater

from sitemapcrawl import meta

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["SitemapRetryMiddleware", "retry_after_seconds"]

_WAITING = (429, 503)


def retry_after_seconds(value: bytes | None, now: float) -> float | None:
    """A ``Retry-After`` value in seconds from ``now`` (Unix time): a number of seconds or
    an HTTP date; None when absent or unreadable.

    >>> retry_after_seconds(b"120", 0.0)
    120.0
    >>> retry_after_seconds(b"Thu, 01 Jan 1970 00:01:00 GMT", 30.0)
    30.0
    >>> retry_after_seconds(b"soon", 0.0) is None
    True
    """
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return max(0.0, moment.timestamp() - now)


class SitemapRetryMiddleware:
    """A deadline and ``Retry-After`` for robots.txt and sitemap requests (meta
    ``sitemapcrawl_sitemap`` or ``sitemapcrawl_robots``); Scrapy's ``RetryMiddleware``, which
    it takes the place of, for every other request.

    Settings: ``SITEMAPCRAWL_SITEMAP_DEADLINE`` (seconds; 0: none),
    ``SITEMAPCRAWL_RETRY_AFTER_MAX`` (seconds), and Scrapy's ``RETRY_*``. Meta written:
    ``sitemapcrawl_started`` (the first attempt, ``time.monotonic``), ``download_timeout``,
    ``sitemapcrawl_gave_up`` (``retry_after`` or ``deadline``, on the request given up).
    """

    def __init__(self, crawler: Crawler) -> None:
        self._stock = RetryMiddleware.from_crawler(crawler)  # NotConfigured if RETRY_ENABLED off
        self.crawler = crawler
        self._deadline = crawler.settings.getfloat("SITEMAPCRAWL_SITEMAP_DEADLINE")
        self._retry_after_max = crawler.settings.getfloat("SITEMAPCRAWL_RETRY_AFTER_MAX")
        self._timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @staticmethod
    def _ours(request: Request) -> bool:
        return bool(request.meta.get(meta.SITEMAP) or request.meta.get(meta.ROBOTS))

    def process_request(self, request: Request) -> None:
        if not self._ours(request) or self._deadline <= 0:
            return
        started = request.meta.setdefault(meta.STARTED, time.monotonic())
        left = self._deadline - (time.monotonic() - started)
        timeout = request.meta.get("download_timeout") or self._timeout
        request.meta["download_timeout"] = max(1.0, min(float(timeout), left))

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        if not self._ours(request):
            return self._stock.process_response(request, response)
        if request.meta.get("dont_retry") or response.status not in self._stock.retry_http_codes:
            return response
        wait = None
        if response.status in _WAITING:
            wait = retry_after_seconds(response.headers.get(b"Retry-After"), time.time())
        if wait is not None and wait > self._retry_after_max:
            request.meta[meta.GAVE_UP] = "retry_after"
            return response
        if wait is not None and self._past_deadline(request, wait):
            request.meta[meta.GAVE_UP] = "deadline"
            return response
        if wait:  # never sooner than the server asked
            from twisted.internet import reactor  # noqa: PLC0415 - the one Scrapy installed

            await maybe_deferred_to_future(deferLater(reactor, wait, lambda: None))
        retry = self._retry_request(request, response_status_message(response.status))
        return retry or response

    def process_exception(
        self, request: Request, exception: Exception
    ) -> Request | Response | None:
        if not self._ours(request):
            return self._stock.process_exception(request, exception)
        retried = isinstance(exception, self._stock.exceptions_to_retry)
        if not retried or request.meta.get("dont_retry"):
            return None
        if self._past_deadline(request, 0.0):
            return None  # the deadline is spent: the errback names the timeout
        return self._retry_request(request, exception)

    def _past_deadline(self, request: Request, wait: float) -> bool:
        started = request.meta.get(meta.STARTED)
        if self._deadline <= 0 or started is None:
            return False
        return bool(time.monotonic() + wait - started >= self._deadline)

    def _retry_request(self, request: Request, reason: str | Exception) -> Request | None:
        spider = self.crawler.spider
        assert spider is not None
        return get_retry_request(
            request,
            reason=reason,
            spider=spider,
            max_retry_times=request.meta.get("max_retry_times", self._stock.max_retry_times),
            priority_adjust=request.meta.get("priority_adjust", self._stock.priority_adjust),
            give_up_log_level=request.meta.get("give_up_log_level", self._stock.give_up_log_level),
        )
