"""Extension, sitemap downloads: stop a body at its size cap or deadline and keep what arrived.

Scrapy's own cap (``download_maxsize``) refuses a body announced larger before any byte
arrives and cancels one that grows past it, delivering nothing; its timeout drops a slow
body whole. Sitemap requests (meta ``sitemapcrawl_sitemap``) therefore carry no Scrapy cap:
this extension stops their download at ``SITEMAPCRAWL_MAX_DOWNLOAD_SIZE`` bytes, or after
``SITEMAPCRAWL_READ_DEADLINE`` of ``download_timeout`` past its headers (a server dripping
bytes), and the spider parses what came (meta ``sitemapcrawl_stopped`` says why).

Every request's non-2xx body (a sitemap's, robots.txt's, a sampled or followed page's) is
read no further than ``SITEMAPCRAWL_ERROR_BODY_MAXSIZE`` (64 KiB: enough to log what it
was): a failing server costs that much per request, not 50 MB. The status is known before
the body from ``sitemapcrawl.downloadhandlers`` (meta ``sitemapcrawl_status``); with
another download handler, error bodies are read like any other.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import StopDownload

from sitemapcrawl import meta

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["HTML_MAX_SIZE", "SitemapDownloadExtension", "looks_like_html"]

logger = logging.getLogger(__name__)

#: Stats of error bodies stopped at their cap (every one) and of them per status.
ERROR_BODY_STAT = "sitemapcrawl/download/error_body_stopped_count"

#: An HTML body (an error page, a soft 404) is read no further than this.
HTML_MAX_SIZE = 1024 * 1024
_HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body")


def looks_like_html(head: bytes) -> bool:
    r"""Whether a body's first bytes are an HTML document's (after a BOM and white space).

    >>> looks_like_html(b"\xef\xbb\xbf  <!DOCTYPE html><html>")
    True
    >>> looks_like_html(b"<?xml version='1.0'?><urlset>")
    False
    """
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().lower().startswith(_HTML_STARTS)


class SitemapDownloadExtension:
    """Stop sitemap downloads at the size cap or the read deadline, keeping what arrived.

    Settings: ``SITEMAPCRAWL_MAX_DOWNLOAD_SIZE`` (bytes; 0: no cap),
    ``SITEMAPCRAWL_ERROR_BODY_MAXSIZE`` (bytes of a non-2xx body; 0: no cap),
    ``SITEMAPCRAWL_READ_DEADLINE`` (share of ``DOWNLOAD_TIMEOUT``, or the request's
    ``download_timeout``). Meta read: ``sitemapcrawl_sitemap``, ``download_timeout``;
    written: ``sitemapcrawl_received``, ``sitemapcrawl_expected``,
    ``sitemapcrawl_headers_at``, ``sitemapcrawl_stopped`` (``too_large``, ``too_slow``,
    ``html``, ``error_body``).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self._maxsize = settings.getint("SITEMAPCRAWL_MAX_DOWNLOAD_SIZE")
        self._robots_maxsize = settings.getint("SITEMAPCRAWL_ROBOTS_MAX_SIZE")
        self._timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        self._deadline = settings.getfloat("SITEMAPCRAWL_READ_DEADLINE")
        self._error_maxsize = settings.getint("SITEMAPCRAWL_ERROR_BODY_MAXSIZE")
        self._stats = crawler.stats
        self._error_logged = False
        crawler.signals.connect(self._on_headers, signal=signals.headers_received)
        crawler.signals.connect(self._on_bytes, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _on_headers(
        self, headers: Any, body_length: int, request: Request, spider: Any = None
    ) -> None:
        if request.meta.get(meta.SITEMAP) or request.meta.get(meta.ROBOTS):
            # Twisted says UNKNOWN_LENGTH (a string) for a chunked body
            known = isinstance(body_length, int) and body_length > 0
            request.meta[meta.EXPECTED] = body_length if known else 0
            request.meta[meta.HEADERS_AT] = time.monotonic()

    def _on_bytes(self, data: bytes, request: Request, spider: Any = None) -> None:
        status = request.meta.get(meta.STATUS)
        if status is not None and not 200 <= status < 300 and self._error_maxsize > 0:
            self._error_body(data, request, status)
            return
        page_cap = request.meta.get(meta.PAGE_CAP)
        if page_cap:  # a page fetched for its dates: what its head holds is enough
            received = request.meta.get(meta.RECEIVED, 0) + len(data)
            request.meta[meta.RECEIVED] = received
            if received >= page_cap:
                request.meta[meta.STOPPED] = "too_large"
                raise StopDownload(fail=False)
            return
        robots = bool(request.meta.get(meta.ROBOTS))
        if not robots and not request.meta.get(meta.SITEMAP):
            return
        received = request.meta.get(meta.RECEIVED, 0)
        if not received:
            request.meta[meta.HTML] = looks_like_html(data[:256])
        received += len(data)
        request.meta[meta.RECEIVED] = received
        maxsize = self._robots_maxsize if robots else self._maxsize
        if received >= maxsize > 0:
            request.meta[meta.STOPPED] = "too_large"
            raise StopDownload(fail=False)
        if received >= HTML_MAX_SIZE and request.meta.get(meta.HTML):
            # an error page or soft 404: enough of it was read to know it is no sitemap
            request.meta[meta.STOPPED] = "html"
            raise StopDownload(fail=False)
        # The clock starts with the headers (time queued in the downloader does not count,
        # and Scrapy's own timeout has at least this much left).
        started = request.meta.get(meta.HEADERS_AT)
        if started is None:
            return
        timeout = float(request.meta.get("download_timeout") or self._timeout)
        now = time.monotonic()
        if timeout <= 0 or now - started <= timeout * self._deadline:
            return
        # Past the deadline: stop, unless the announced length will arrive in time at the
        # rate seen so far.
        expected = request.meta.get(meta.EXPECTED) or 0
        rate = received / max(now - started, 1e-3)
        if (
            expected > received
            and (expected - received) / rate < timeout * (1 - self._deadline) / 2
        ):
            return
        request.meta[meta.STOPPED] = "too_slow"
        raise StopDownload(fail=False)

    def _error_body(self, data: bytes, request: Request, status: int) -> None:
        """A non-2xx body: stop it at the error-body cap, keeping what arrived."""
        received = request.meta.get(meta.RECEIVED, 0) + len(data)
        request.meta[meta.RECEIVED] = received
        if received < self._error_maxsize:
            return
        request.meta[meta.STOPPED] = "error_body"
        if self._stats is not None:
            self._stats.inc_value(ERROR_BODY_STAT)
            self._stats.inc_value(f"{ERROR_BODY_STAT}/{status}")
        if not self._error_logged:
            self._error_logged = True
            logger.warning(
                "Stopped reading the HTTP %(status)d body of %(url)s at %(cap)d bytes "
                "(SITEMAPCRAWL_ERROR_BODY_MAXSIZE); further error bodies are stopped "
                "silently and counted in %(stat)s",
                {"status": status, "url": request.url, "cap": self._error_maxsize,
                 "stat": ERROR_BODY_STAT},
            )  # fmt: skip
        raise StopDownload(fail=False)
