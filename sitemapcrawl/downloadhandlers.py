"""Download handler, HTTP/1.1: tell the body's readers the response status before the body.

Scrapy's ``headers_received`` signal carries the headers and the announced length, not the
status; so a 404 or 503 body is read as far as a 200's would be (for a sitemap, up to
``SITEMAPCRAWL_MAX_DOWNLOAD_SIZE``: a hostile server makes every failing child cost 50 MB).
This handler is Scrapy's ``HTTP11DownloadHandler`` whose agent writes the status to the
request's meta (``sitemapcrawl_status``) when the headers arrive, before any body byte;
``SitemapDownloadExtension`` then stops a non-2xx body at ``SITEMAPCRAWL_ERROR_BODY_MAXSIZE``
and keeps what came (enough to log what it was).

It reaches into Scrapy's private agent (``_ScrapyAgent``): Scrapy is pinned
(requirements.txt), and tests/test_error_bodies.py checks on a real server that a non-2xx
body is stopped, so an upgrade that changes the agent fails there, not in production.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler, _ScrapyAgent
from scrapy.exceptions import ResponseDataLossError
from scrapy.utils._download_handlers import get_dataloss_msg, wrap_twisted_exceptions
from scrapy.utils.defer import maybe_deferred_to_future

from sitemapcrawl import meta

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from twisted.internet.defer import Deferred
    from twisted.web.client import Response as TxResponse

__all__ = ["StatusHTTP11DownloadHandler"]

logger = logging.getLogger(__name__)


class _StatusAgent(_ScrapyAgent):
    def _cb_bodyready(self, txresponse: TxResponse, request: Request) -> Any:
        request.meta[meta.STATUS] = int(txresponse.code)
        request.meta.pop(meta.RECEIVED, None)  # a retry's count starts again
        return super()._cb_bodyready(txresponse, request)


class StatusHTTP11DownloadHandler(HTTP11DownloadHandler):
    """``HTTP11DownloadHandler`` whose responses' status is in meta before their body."""

    async def download_request(self, request: Request) -> Response:
        # HTTP11DownloadHandler.download_request (Scrapy 2.19) with the agent above.
        agent = _StatusAgent(
            contextFactory=self._contextFactory,
            bindAddress=self._bind_address,
            pool=self._pool,
            maxsize=self._default_maxsize,
            warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss,
            crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging,
        )
        try:
            with wrap_twisted_exceptions():
                deferred: Deferred[Response] = agent.download_request(request)
                return await maybe_deferred_to_future(deferred)
        except ResponseDataLossError:
            if not self._fail_on_dataloss_warned:
                logger.warning(get_dataloss_msg(request.url))
                self._fail_on_dataloss_warned = True
            raise
