"""The core stays pure; robots.txt and scope edge cases; components refuse to load when off."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from scrapy.addons import AddonManager
from scrapy.exceptions import NotConfigured, ScrapyDeprecationWarning
from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.test import get_crawler

from sitemapcrawl.extensions.progress import SitemapProgressExtension
from sitemapcrawl.items import SitemapUrlBatch, SitemapUrlItem
from sitemapcrawl.pipelines.sampling import PageSamplingPipeline
from sitemapcrawl.pipelines.scrapedcount import ScrapedCountPipeline
from sitemapcrawl.sitemaps.robots import ROBOTS_MAX_RULES_SIZE, parse_robots
from sitemapcrawl.sitemaps.scope import ScopePolicy, private_address
from sitemapcrawl.spiders.sitemap import SitemapCrawlSpider
from tests.utils.crawl import project_settings

ROOT = Path(__file__).resolve().parents[1]


def test_core_never_imports_scrapy_or_twisted() -> None:
    code = textwrap.dedent(
        """
        import importlib
        import pkgutil
        import sys
        import sitemapcrawl.incremental
        import sitemapcrawl.sitemaps
        import sitemapcrawl.verify
        core = (sitemapcrawl.sitemaps, sitemapcrawl.verify, sitemapcrawl.incremental)
        names = [
            module.name
            for package in core
            for module in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        ]
        for name in names:  # every module of the core, in its subpackages too, a new one too
            importlib.import_module(name)
        assert "sitemapcrawl.sitemaps.segments" in names and len(names) >= 30, names
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("scrapy", "twisted"))
        assert not bad, bad
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_robots_sitemaps_past_the_rules_cap_are_kept() -> None:
    filler = b"Disallow: /x\n" * (ROBOTS_MAX_RULES_SIZE // 13 + 10)
    body = (
        b"User-agent: *\nSitemap: /first.xml\n"
        + filler
        + b"Sitemap: https://cdn.example.net/last.xml\n"
    )
    result = parse_robots(body, "https://site.example/robots.txt")
    assert result.truncated
    assert result.sitemaps == ["https://site.example/first.xml", "https://cdn.example.net/last.xml"]


def test_robots_html_and_hundreds_of_lines() -> None:
    assert parse_robots(
        b"<html><body>Sitemap: /x.xml</body></html>", "https://s.example/robots.txt"
    ).html
    many = "".join(f"Sitemap: /s{i}.xml\n" for i in range(500)).encode("utf-16")
    result = parse_robots(many, "https://s.example/robots.txt")
    assert len(result.sitemaps) == 500
    assert result.encoding == "utf-16-le-bom"


def test_robots_inside_groups_and_crlf() -> None:
    body = (
        b"User-agent: bot\r\nSitemap: /in-group.xml\r\nDisallow: /\r\n\r\n"
        b"user-agent: *\r\nSITEMAP:/b.xml#frag\r\n"
    )
    assert parse_robots(body, "https://s.example/robots.txt").sitemaps == [
        "https://s.example/in-group.xml",
        "https://s.example/b.xml",  # "#" starts a comment (RFC 9309)
    ]


@pytest.mark.parametrize(
    ("mode", "url", "sitemap", "declared", "reason"),
    [
        ("host", "https://www.site.example/a", "https://site.example/s.xml", False, None),
        ("host", "http://SITE.example:80/a", "https://site.example/s.xml", False, None),
        ("host", "https://blog.site.example/a", "https://site.example/s.xml", False, "other_host"),
        ("path", "https://site.example/news/a", "https://site.example/news/s.xml", False, None),
        (
            "path",
            "https://site.example/a",
            "https://site.example/news/s.xml",
            False,
            "outside_sitemap_path",
        ),
        (
            "path",
            "http://site.example/news/a",
            "https://site.example/news/s.xml",
            False,
            "outside_sitemap_path",
        ),
        ("robots", "https://site.example/a", "https://cdn.example.net/s.xml", True, None),
        (
            "robots",
            "https://site.example/a",
            "https://cdn.example.net/s.xml",
            False,
            "outside_sitemap_path",
        ),
        ("off", "https://anything.example.org/", "https://site.example/s.xml", False, None),
    ],
)
def test_scope(mode: str, url: str, sitemap: str, declared: bool, reason: str | None) -> None:
    assert ScopePolicy(mode, "https://site.example/").reason(url, sitemap, declared) == reason


def test_scope_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="scope must be one of"):
        ScopePolicy("planet", "https://site.example/")


@pytest.mark.parametrize(
    ("url", "origin", "private"),
    [
        ("http://169.254.169.254/latest/", "https://site.example/", True),
        ("http://10.1.2.3/s.xml", "https://site.example/", True),
        ("http://[::1]/s.xml", "https://site.example/", True),
        ("http://localhost/s.xml", "https://site.example/", True),
        ("https://cdn.example.net/s.xml", "https://site.example/", False),
        ("http://10.1.2.3/s.xml", "http://10.9.9.9/", False),
        ("http://127.0.0.1:8000/s.xml", "http://localhost:8000/", False),
    ],
)
def test_private_addresses(url: str, origin: str, private: bool) -> None:
    assert private_address(url, origin) is private


def test_progress_extension_not_configured_when_off() -> None:
    crawler = get_crawler(settings_dict=project_settings({"SITEMAPCRAWL_PROGRESS_ENABLED": False}))
    with pytest.raises(NotConfigured, match="SITEMAPCRAWL_PROGRESS_ENABLED"):
        build_from_crawler(SitemapProgressExtension, crawler)
    crawler = get_crawler(settings_dict=project_settings({"SITEMAPCRAWL_PROGRESS_INTERVAL": -1}))
    with pytest.raises(NotConfigured, match="negative"):
        build_from_crawler(SitemapProgressExtension, crawler)


def test_addon_defaults_are_overridable() -> None:
    crawler = get_crawler(settings_dict=project_settings({"SITEMAPCRAWL_SCOPE": "path"}))
    assert crawler.settings["SITEMAPCRAWL_SCOPE"] == "path"
    assert crawler.settings.getint("SITEMAPCRAWL_MAX_SIZE") == 52_428_800
    assert crawler.settings.getdict("FEED_EXPORTERS")["csv"].endswith("SitemapCsvItemExporter")


def test_fast_exporters_write_what_scrapys_exporters_write() -> None:
    from io import BytesIO

    from scrapy.exporters import JsonItemExporter, JsonLinesItemExporter

    from sitemapcrawl.exporters import SitemapJsonItemExporter, SitemapJsonLinesItemExporter
    from sitemapcrawl.items import SitemapUrlItem

    items = [
        SitemapUrlItem(
            "https://s.example/a",
            lastmod="2024-01-01T00:00:00Z",
            lastmod_flags=["date_only"],
            images=[{"loc": "https://s.example/i.jpg", "caption": None}],
            mobile=True,
        ),
        {"url": "https://s.example/other-item-type"},
    ]
    for ours, scrapys, kwargs in [
        (SitemapJsonLinesItemExporter, JsonLinesItemExporter, {}),
        (SitemapJsonItemExporter, JsonItemExporter, {}),
        (SitemapJsonLinesItemExporter, JsonLinesItemExporter, {"fields_to_export": ["url"]}),
    ]:
        outputs = []
        for cls in (ours, scrapys):
            buffer = BytesIO()
            exporter = cls(buffer, **kwargs)
            exporter.start_exporting()
            for item in items:
                exporter.export_item(item)
            exporter.finish_exporting()
            outputs.append(buffer.getvalue())
        assert outputs[0] == outputs[1]


def _record_values() -> Any:
    """Field values of every kind a ``SitemapUrlItem`` may hold, and some it should not."""
    import datetime as dt
    import math

    from hypothesis import strategies as st

    text = st.text(max_size=12)  # any code point, surrogates and controls included
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.5, 1.0, math.inf, -0.0, 1e-310]),
        text,
        st.datetimes().map(lambda d: d.replace(tzinfo=dt.UTC)),
    )
    nested = st.recursive(
        scalar,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.tuples(inner, inner),
            st.frozensets(st.integers(0, 9), max_size=3).map(set),
            st.dictionaries(text, inner, max_size=3),
        ),
        max_leaves=6,
    )
    return st.one_of(scalar, nested, st.just([]))


def test_record_encoder_writes_what_the_json_encoder_writes() -> None:
    """The JSON exporters' template (``_RecordEncoder``) against ``encoder.encode`` of the
    item's dict: the same text for any values, the same error for what cannot be written,
    and a refused value does not spoil the next batch."""
    import dataclasses

    from hypothesis import given, settings
    from hypothesis import strategies as st
    from scrapy.utils.serialize import ScrapyJSONEncoder

    from sitemapcrawl.exporters import _RecordEncoder

    names = [field.name for field in dataclasses.fields(SitemapUrlItem)]
    typical = {
        "url": st.text(max_size=30),
        "lastmod": st.none() | st.just("2024-01-01T00:00:00Z"),
        "sitemap": st.sampled_from(["http://a/s.xml", "http://a/s\u00e9.xml"]),
        "segment": st.sampled_from(["/s.xml", "/t.xml"]),
        "priority": st.none() | st.floats(0, 1),
        "depth": st.integers(0, 3),
        "mobile": st.booleans(),
        "refetch": st.none() | st.booleans(),
    }

    @st.composite
    def items(draw: Any) -> SitemapUrlItem:
        odd = _record_values()
        values = {
            name: draw(typical[name] if name in typical and draw(st.booleans()) else odd)
            for name in names
        }
        return SitemapUrlItem(**values)

    encoders = [
        ScrapyJSONEncoder(ensure_ascii=True),
        ScrapyJSONEncoder(ensure_ascii=False),
        ScrapyJSONEncoder(ensure_ascii=True, allow_nan=False),
        ScrapyJSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")),
    ]
    fast = [_RecordEncoder.for_encoder(encoder) for encoder in encoders]
    assert all(fast)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(items(), max_size=6))
    def check(batch: list[SitemapUrlItem]) -> None:
        for encoder, records in zip(encoders, fast, strict=True):
            assert records is not None
            try:
                expected = [
                    encoder.encode({name: getattr(item, name) for name in names}) for item in batch
                ]
            except (TypeError, ValueError) as error:
                with pytest.raises(type(error)):
                    records.encode(batch)
                continue
            assert records.encode(batch) == expected

    check()
    # A value the encoder refuses half-way into a list, then the same list written fine.
    shared = ["x"]
    bad = SitemapUrlItem("http://a/1", news=[{"k": shared}, {"k": object()}])
    good = SitemapUrlItem("http://a/2", news=[{"k": shared}])
    records = fast[0]
    assert records is not None
    with pytest.raises(TypeError):
        records.encode([bad])
    assert records.encode([good]) == [encoders[0].encode(dataclasses.asdict(good))]
    # Encoders whose text the template cannot reproduce keep Scrapy's path.
    for other in (
        ScrapyJSONEncoder(indent=2),
        ScrapyJSONEncoder(sort_keys=True),
        type("Own", (ScrapyJSONEncoder,), {"encode": lambda self, o: "x"})(),
    ):
        assert _RecordEncoder.for_encoder(other) is None


def test_item_log_records_only_at_debug() -> None:
    from sitemapcrawl.logformatter import SitemapLogFormatter

    spider = SitemapCrawlSpider()
    quiet = build_from_crawler(
        SitemapLogFormatter, get_crawler(settings_dict={"LOG_LEVEL": "INFO"})
    )
    assert quiet.scraped({"url": "u"}, None, spider) is None  # type: ignore[arg-type]
    loud = build_from_crawler(
        SitemapLogFormatter, get_crawler(settings_dict={"LOG_LEVEL": "DEBUG"})
    )
    record = loud.scraped({"url": "u"}, None, spider)  # type: ignore[arg-type]
    assert record is not None
    assert record["msg"].startswith("Scraped from")
    batch = SitemapUrlBatch([SitemapUrlItem("http://a/1"), SitemapUrlItem("http://a/2")])
    assert quiet.scraped(batch, None, spider) is None  # type: ignore[arg-type]
    record = loud.scraped(batch, None, spider)  # type: ignore[arg-type]
    assert record is not None
    assert record["msg"] % record["args"] == "Scraped 2 URLs from None:\nhttp://a/1\nhttp://a/2"


def test_seen_urls_is_a_set() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from sitemapcrawl.sitemaps import SeenUrls

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.text(max_size=6), max_size=300))
    def check(keys: list[str]) -> None:
        seen = SeenUrls(capacity=4)  # small, so it grows several times
        reference: set[str] = set()
        for key in keys:
            assert seen.add(key) is (key not in reference)
            reference.add(key)
        assert len(seen) == len(reference)

    check()


_MOVED = [
    ("sitemapcrawl.pipelines.PageSamplingPipeline", "sitemapcrawl.pipelines.sampling"),
    ("sitemapcrawl.pipelines.ScrapedCountPipeline", "sitemapcrawl.pipelines.scrapedcount"),
    ("sitemapcrawl.middlewares.SitemapLastmodMiddleware", "sitemapcrawl.spidermiddlewares.lastmod"),
    ("sitemapcrawl.middlewares.SitemapBatchMiddleware", "sitemapcrawl.spidermiddlewares.batch"),
    (
        "sitemapcrawl.robotstxt.SitemapRobotsTxtMiddleware",
        "sitemapcrawl.downloadermiddlewares.robotstxt",
    ),
    (
        "sitemapcrawl.httpcompression.SitemapHttpCompressionMiddleware",
        "sitemapcrawl.downloadermiddlewares.httpcompression",
    ),
    (
        "sitemapcrawl.redirectguard.PrivateRedirectMiddleware",
        "sitemapcrawl.downloadermiddlewares.privateredirect",
    ),
    ("sitemapcrawl.extensions.SitemapProgressExtension", "sitemapcrawl.extensions.progress"),
]


@pytest.mark.parametrize(("old", "module"), _MOVED)
def test_an_old_component_path_loads_with_a_deprecation_warning(old: str, module: str) -> None:
    name = old.rsplit(".", 1)[1]
    with pytest.warns(ScrapyDeprecationWarning, match=rf"moved to {re.escape(module)}\.{name}"):
        found = load_object(old)
    assert found is load_object(f"{module}.{name}")


def _pipelines_after_the_addon(settings: Settings) -> list[Any]:
    """The item pipelines a crawl with ``settings`` builds, the add-on's included."""
    AddonManager(get_crawler(settings_dict={})).load_settings(settings)
    return [load_object(p) for p in build_component_list(settings.getwithbase("ITEM_PIPELINES"))]


def test_a_project_naming_an_old_pipeline_path_runs_the_pipeline_once() -> None:
    settings = Settings(
        project_settings({"ITEM_PIPELINES": {"sitemapcrawl.pipelines.PageSamplingPipeline": 300}})
    )
    with pytest.warns(ScrapyDeprecationWarning):
        pipelines = _pipelines_after_the_addon(settings)
    assert pipelines.count(PageSamplingPipeline) == 1
    assert pipelines.count(ScrapedCountPipeline) == 1


def test_an_unknown_name_on_an_old_path_is_an_attribute_error() -> None:
    import sitemapcrawl.middlewares

    with pytest.raises(AttributeError, match="SitemapNoSuchMiddleware"):
        _ = sitemapcrawl.middlewares.SitemapNoSuchMiddleware
