"""Custom contracts for ``scrapy check sitemap`` (see ``docs/testing.md``).

Contracts run a real crawl, so the spider's callbacks name their sample URLs on a loopback
test site: ``@url {base}/pages.txt``, where ``@site`` puts the site's URL (the
``SITEMAPCRAWL_CHECK_SITE`` environment variable) in place of ``{base}``. Register them with
``SPIDER_CONTRACTS`` and run, from the repository root, with ``tests/data/sites/basic``
served at ``$SITEMAPCRAWL_CHECK_SITE`` (``tests/test_contracts.py`` does this)::

    scrapy check sitemap -a origin=$SITEMAPCRAWL_CHECK_SITE \\
        -s 'SPIDER_CONTRACTS={"tests.contracts.SiteContract": 10,
                              "tests.contracts.SitemapTaskContract": 11,
                              "tests.contracts.LastmodsContract": 12}'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy.contracts import Contract
from scrapy.exceptions import ContractFail

from sitemapcrawl.spiders.sitemap import SitemapTask

if TYPE_CHECKING:
    from scrapy.http import Response

__all__ = ["ENV", "LastmodsContract", "SiteContract", "SitemapTaskContract"]

#: The loopback test site's URL, e.g. ``http://127.0.0.1:8791`` (no trailing slash).
ENV = "SITEMAPCRAWL_CHECK_SITE"


class SiteContract(Contract):
    """``@site``: put ``$SITEMAPCRAWL_CHECK_SITE`` in place of ``{base}`` in the ``@url`` and
    in the ``@cb_kwargs`` above it, and configure the spider before the callback as its
    ``start()`` would (``scrapy check`` replaces ``start()``; pass ``-a origin=...``)."""

    name = "site"

    def __init__(self, method: Any, *args: Any) -> None:
        super().__init__(method, *args)
        self.spider = method.__self__

    def adjust_request_args(self, args: dict[str, Any]) -> dict[str, Any]:
        base = os.environ.get(ENV, "").rstrip("/")
        if not base:
            raise ValueError(f"set {ENV} to the URL of the loopback test site")
        args["url"] = args["url"].replace("{base}", base)
        if args.get("cb_kwargs"):
            args["cb_kwargs"] = {
                k: v.replace("{base}", base) if isinstance(v, str) else v
                for k, v in args["cb_kwargs"].items()
            }
        return args

    def pre_process(self, response: Response) -> None:
        spider = self.spider
        if not spider._configured:  # what the spider's start() does first
            spider._configure(spider.crawler)
        if spider.argument_error:
            raise ContractFail(f"spider arguments: {spider.argument_error}")


class SitemapTaskContract(Contract):
    """``@sitemap_task FOUND_VIA``: pass the callback the ``task`` the spider would have
    made for a top-level sitemap at the ``@url`` (after ``@site``), found via FOUND_VIA
    (robots, guessed or given)."""

    name = "sitemap_task"

    def adjust_request_args(self, args: dict[str, Any]) -> dict[str, Any]:
        url = args["url"]
        task = SitemapTask(url, self.args[0], urljoin(url, "/"))
        args["cb_kwargs"] = {**(args.get("cb_kwargs") or {}), "task": task}
        return args


class LastmodsContract(Contract):
    """``@lastmods N``: exactly N of the items returned carry a ``lastmod``."""

    name = "lastmods"

    def post_process(self, output: list[Any]) -> None:
        expected = int(self.args[0])
        found = sum(1 for x in output if getattr(x, "lastmod", None) is not None)
        if found != expected:
            raise ContractFail(f"{found} items carry a lastmod, expected {expected}")
