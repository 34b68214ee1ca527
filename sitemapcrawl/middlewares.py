"""Deprecated path: the spider middlewares are in ``sitemapcrawl.spidermiddlewares``."""

from sitemapcrawl.deprecate import moved

__getattr__ = moved(
    __name__,
    {
        "SitemapLastmodMiddleware": "sitemapcrawl.spidermiddlewares.lastmod",
        "SitemapBatchMiddleware": "sitemapcrawl.spidermiddlewares.batch",
    },
)
