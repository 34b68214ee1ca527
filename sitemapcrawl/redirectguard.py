"""Deprecated path: the private-redirect guard is in ``sitemapcrawl.downloadermiddlewares``."""

from sitemapcrawl.deprecate import moved

__getattr__ = moved(
    __name__, {"PrivateRedirectMiddleware": "sitemapcrawl.downloadermiddlewares.privateredirect"}
)
