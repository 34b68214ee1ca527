"""``-a proxy=URL``: every request goes through a real forward proxy; credentials stay secret."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.proxy import ForwardProxy
from tests.utils.crawl import crawl

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.mockserver import MockServer


@deferred_f_from_coro_f
async def test_every_request_goes_through_the_proxy(
    site: Callable[[str], MockServer], caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    server = site("basic")
    with ForwardProxy("crawler:s3cr3t-pw") as proxy:
        items, crawler = await crawl(
            settings={"CONCURRENT_REQUESTS": 1}, origin=server.base, proxy=proxy.url
        )
        through_proxy = proxy.requests()
    assert len(items) == 9
    direct = server.requests()
    assert len(direct) == 8
    # Every request the site saw came through the proxy, authenticated.
    seen_by_proxy = sorted(url.split(":", 2)[2].split("/", 1)[1] for url, _ in through_proxy)
    assert seen_by_proxy == sorted(path.lstrip("/") for path in direct)
    assert all(authorised for _, authorised in through_proxy)
    # The credentials appear in no log line and no item.
    assert "s3cr3t-pw" not in caplog.text
    assert all("s3cr3t-pw" not in repr(item) for item in items)
    assert crawler.stats.get_value("finish_reason") == "finished"  # type: ignore[union-attr]


@deferred_f_from_coro_f
async def test_bad_proxy_argument_does_not_echo_credentials(
    site: Callable[[str], MockServer], caplog: Any
) -> None:
    server = site("basic")
    items, crawler = await crawl(origin=server.base, proxy="socks5://user:hunter2@127.0.0.1:1")
    assert items == []
    assert crawler.stats.get_value("finish_reason") == "bad_argument"  # type: ignore[union-attr]
    assert "hunter2" not in caplog.text
    assert "argument proxy is not an http(s) URL" in caplog.text
