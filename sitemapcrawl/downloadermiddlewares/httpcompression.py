"""Downloader middleware, sitemap bodies: left compressed for the core's streaming, capped decoder.

Scrapy's ``HttpCompressionMiddleware`` inflates a ``Content-Encoding`` body whole, up to
``download_maxsize``, and drops the response when it is larger: a sitemap whose first
thousand URLs were followed by a bomb lost all of them. For sitemap requests (meta
``sitemapcrawl_sitemap``) this subclass passes the body on still encoded, with its
``Content-Encoding`` header, and :class:`sitemapcrawl.sitemaps.decompress.BodyDecoder` decodes
it chunk by chunk up to ``SITEMAPCRAWL_MAX_SIZE``, keeping every entry before the cap. Every
other response (robots.txt, pages) is decoded by Scrapy as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware

from sitemapcrawl import meta

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response

__all__ = ["SitemapHttpCompressionMiddleware"]


class SitemapHttpCompressionMiddleware(HttpCompressionMiddleware):
    """``HttpCompressionMiddleware`` that leaves sitemap bodies to the streaming decoder."""

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        if request.meta.get(meta.SITEMAP):
            return response
        return super().process_response(request, response)
