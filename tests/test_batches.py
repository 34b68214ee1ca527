"""URL items in batches (``SitemapBatchMiddleware``): the same feeds, fewer Scrapy items."""

from __future__ import annotations

import csv
import io
import json
import marshal
import pickle
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any, ClassVar

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem, SiteReport
from sitemapcrawl.spidermiddlewares.batch import SitemapBatchMiddleware
from sitemapcrawl.spiders.sitemap import SitemapCrawlSpider
from tests.utils.crawl import crawl, crawl_with_report

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from tests.mockserver import MockServer

SERIAL = {"CONCURRENT_REQUESTS": 1}
URL_ITEMS = ["sitemapcrawl.items.SitemapUrlItem", "sitemapcrawl.items.SitemapUrlBatch"]


class RecordingPipeline:
    """A project's own pipeline: what it is handed, in order."""

    seen: ClassVar[list[Any]] = []

    def process_item(self, item: Any) -> Any:
        RecordingPipeline.seen.append(item)
        return item


def _records(fmt: str, data: bytes) -> list[Any]:
    """The records a feed file holds, in file order, as plain values."""
    if fmt == "jsonl":
        return [json.loads(line) for line in data.decode().splitlines()]
    if fmt in ("json", "json-indent"):
        return list(json.loads(data))
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(data.decode())))
    if fmt == "xml":
        return [{field.tag: field.text for field in element} for element in ET.fromstring(data)]
    loads = pickle.load if fmt == "pickle" else marshal.load
    stream, records = io.BytesIO(data), []
    while stream.tell() < len(data):
        records.append(loads(stream))
    return records


FORMATS = {
    "jsonl": {"format": "jsonl"},
    "json": {"format": "json"},
    "json-indent": {"format": "json", "indent": 2},
    "csv": {"format": "csv"},
    "xml": {"format": "xml"},
    "pickle": {"format": "pickle"},
    "marshal": {"format": "marshal"},
}


@deferred_f_from_coro_f
async def test_every_feed_format_writes_one_record_per_url_whatever_the_batch(
    site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    """Batches of 1 (one Scrapy item per URL), 2 and the default 250: the same bytes in
    every feed format, one record per URL, the records being the URL items themselves."""
    server = site("basic")
    written: dict[int, dict[str, bytes]] = {}
    collected: dict[int, list[dict[str, Any]]] = {}
    for size in (1, 2, 250):
        feeds = {
            str(tmp_path / f"{size}-{name}.out"): {**options, "item_classes": URL_ITEMS}
            for name, options in FORMATS.items()
        }
        settings = {**SERIAL, "FEEDS": feeds, "SITEMAPCRAWL_ITEM_BATCH_SIZE": size}
        items, _ = await crawl(settings=settings, origin=server.base)
        collected[size] = items
        written[size] = {name: (tmp_path / f"{size}-{name}.out").read_bytes() for name in FORMATS}
    assert len(collected[1]) == 9
    # the batches' feeds are byte-identical to one item per URL, in every format (marshal
    # writes a back-reference for a value held twice, which a batch does: equal records)
    for name in FORMATS:
        for size in (2, 250):
            if name == "marshal":
                assert _records(name, written[size][name]) == _records(name, written[1][name])
            else:
                assert written[size][name] == written[1][name], name
    # and they are the URL items, one record each, in the order they were scraped
    items = collected[1]
    assert collected[2] == items
    assert collected[250] == items
    assert _records("jsonl", written[1]["jsonl"]) == items
    assert _records("json", written[1]["json"]) == items
    assert _records("json-indent", written[1]["json-indent"]) == items
    assert b'[\n{\n  "url": ' in written[1]["json-indent"]
    assert _records("pickle", written[1]["pickle"]) == items
    assert _records("marshal", written[1]["marshal"]) == items
    assert [r["url"] for r in _records("csv", written[1]["csv"])] == [i["url"] for i in items]
    xml_records = _records("xml", written[1]["xml"])
    assert [r["url"] for r in xml_records] == [i["url"] for i in items]


@deferred_f_from_coro_f
async def test_pipelines_get_batches_of_one_sitemap_file_then_the_report(
    site: Callable[[str], MockServer],
) -> None:
    """A project's pipeline gets each file's URLs in batches of at most the batch size, in
    the spider's order, then the site report; with batches off, one URL item each."""
    server = site("basic")
    pipelines = {"tests.test_batches.RecordingPipeline": 500}
    seen: dict[int, list[Any]] = {}
    for size in (1, 2):
        RecordingPipeline.seen = []
        settings = {**SERIAL, "ITEM_PIPELINES": pipelines, "SITEMAPCRAWL_ITEM_BATCH_SIZE": size}
        items, report, crawler = await crawl_with_report(settings=settings, origin=server.base)
        assert report is not None
        seen[size] = RecordingPipeline.seen
        assert crawler.stats is not None
        assert crawler.stats.get_value("item_scraped_count") == len(items) + 1
    single = seen[1]
    assert [type(i) for i in single] == [SitemapUrlItem] * 9 + [SiteReport]
    batches = seen[2][:-1]
    assert type(seen[2][-1]) is SiteReport
    assert {type(b) for b in batches} == {SitemapUrlBatch}
    # the same URL items, in the same order, cut into runs of <= 2 from one file each
    assert [i for b in batches for i in b] == single[:-1]
    expected: list[list[str]] = []
    for item in single[:-1]:
        run = expected[-1] if expected else None
        if run is not None and len(run) < 2 and run[-1] == item.sitemap:
            run.append(item.sitemap)
        else:
            expected.append([item.sitemap])
    assert [[i.sitemap for i in b] for b in batches] == expected
    assert len(batches) < len(single) - 1


def _url(n: int) -> SitemapUrlItem:
    return SitemapUrlItem(f"http://127.0.0.1/{n}", sitemap="http://127.0.0.1/s.xml")


async def _run(
    middleware: SitemapBatchMiddleware, outputs: list[Any], error: Exception | None
) -> tuple[list[Any], Exception | None]:
    async def callback() -> AsyncIterator[Any]:
        for output in outputs:
            yield output
        if error is not None:
            raise error

    got: list[Any] = []
    try:
        async for output in middleware.process_spider_output(None, callback()):
            got.append(output)  # noqa: PERF401 - what came before the exception counts
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return got, exc
    return got, None


@deferred_f_from_coro_f
async def test_the_middleware_keeps_order_and_hands_on_what_came_before_a_failure() -> None:
    crawler = get_crawler(SitemapCrawlSpider, {"SITEMAPCRAWL_ITEM_BATCH_SIZE": 3})
    middleware = SitemapBatchMiddleware.from_crawler(crawler)
    u = [_url(n) for n in range(8)]
    request = Request("http://127.0.0.1/child.xml")
    report = SiteReport(origin="http://127.0.0.1", generated_at="2026-11-30T00:00:00Z")
    # full batches as they fill; a request passes at once; another item sends what is held
    got, error = await _run(middleware, [u[0], u[1], request, u[2], u[3], report, u[4]], None)
    assert error is None
    assert got == [
        request,
        SitemapUrlBatch(u[0:3]),
        SitemapUrlBatch([u[3]]),
        report,
        SitemapUrlBatch([u[4]]),
    ]
    # a callback that fails: what it yielded before goes on, then its exception
    failure = ValueError("broken")
    got, error = await _run(middleware, [u[5], u[6], u[7], u[0]], failure)
    assert got == [SitemapUrlBatch(u[5:8]), SitemapUrlBatch([u[0]])]
    assert error is failure
    got, error = await _run(middleware, [], None)
    assert got == []
    assert error is None


@deferred_f_from_coro_f
async def test_batches_are_off_at_size_one_and_bound_the_items_read_ahead(
    site: Callable[[str], MockServer],
) -> None:
    """The add-on turns CONCURRENT_ITEMS down to 1 when URLs come in batches (Scrapy reads
    3 x CONCURRENT_ITEMS outputs of a callback ahead of the pipelines), leaves Scrapy's
    default without batches, and a project's own value wins."""
    server = site("basic")
    found = []
    for overrides in ({}, {"SITEMAPCRAWL_ITEM_BATCH_SIZE": 1}, {"CONCURRENT_ITEMS": 7}):
        items, crawler = await crawl(settings={**SERIAL, **overrides}, origin=server.base)
        assert len(items) == 9
        middlewares = crawler.settings.getwithbase("SPIDER_MIDDLEWARES")
        found.append(
            (
                crawler.settings.getint("SITEMAPCRAWL_ITEM_BATCH_SIZE"),
                crawler.settings.getint("CONCURRENT_ITEMS"),
                middlewares.get(SitemapBatchMiddleware),
            )
        )
    assert found == [(250, 1, 1010), (1, 100, 1010), (250, 7, 1010)]
    with pytest.raises(NotConfigured):  # without a message: Scrapy would warn
        SitemapBatchMiddleware.from_crawler(
            get_crawler(SitemapCrawlSpider, {"SITEMAPCRAWL_ITEM_BATCH_SIZE": 1})
        )


@deferred_f_from_coro_f
async def test_a_feed_cut_into_files_of_n_items_gets_n_urls_per_file(
    site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    """``batch_item_count`` counts Scrapy items, so a feed cut by it turns batches off
    (unless the project set SITEMAPCRAWL_ITEM_BATCH_SIZE itself): files of 4 URLs."""
    server = site("basic")
    feeds = {
        str(tmp_path / "part-%(batch_id)d.jsonl"): {
            "format": "jsonl",
            "batch_item_count": 4,
            "item_classes": URL_ITEMS,
        }
    }
    items, crawler = await crawl(settings={**SERIAL, "FEEDS": feeds}, origin=server.base)
    assert crawler.settings.getint("SITEMAPCRAWL_ITEM_BATCH_SIZE") == 1
    parts = [_records("jsonl", (tmp_path / f"part-{n}.jsonl").read_bytes()) for n in (1, 2, 3)]
    assert [len(part) for part in parts] == [4, 4, 1]
    assert [record for part in parts for record in part] == items
    assert not (tmp_path / "part-4.jsonl").exists()
