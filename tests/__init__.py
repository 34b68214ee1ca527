"""Test package for sitemapcrawl.

Like Scrapy's own ``tests/__init__.py``, importing this package removes the
proxy environment variables so that no test traffic (urllib, Scrapy's
HttpProxyMiddleware, child processes) is ever sent to a system-wide proxy
instead of the loopback mock server.
"""

from __future__ import annotations

import os

_PROXY_VARS = ("http_proxy", "https_proxy", "ftp_proxy", "no_proxy", "all_proxy")

for _name in _PROXY_VARS:
    os.environ.pop(_name, None)
    os.environ.pop(_name.upper(), None)
