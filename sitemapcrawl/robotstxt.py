"""Deprecated path: the robots.txt middleware is in ``sitemapcrawl.downloadermiddlewares``."""

from sitemapcrawl.deprecate import moved

__getattr__ = moved(
    __name__, {"SitemapRobotsTxtMiddleware": "sitemapcrawl.downloadermiddlewares.robotstxt"}
)
