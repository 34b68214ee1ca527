"""Deprecated path: the compression middleware is in ``sitemapcrawl.downloadermiddlewares``."""

from sitemapcrawl.deprecate import moved

__getattr__ = moved(
    __name__,
    {"SitemapHttpCompressionMiddleware": "sitemapcrawl.downloadermiddlewares.httpcompression"},
)
