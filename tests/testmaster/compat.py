"""scrapy-testmaster 1.3.1 on Scrapy 2.19: the shims, applied once, on import.

scrapy-testmaster (last release 2021) records a spider's callbacks during a crawl and
replays them as unit tests. As shipped it does not run on Scrapy 2.19, and three of its
assumptions do not hold for the ``sitemap`` spider. Importing this module fixes both, by
patching names inside ``scrapy_testmaster`` (nothing in Scrapy or in ``sitemapcrawl``):

Scrapy 2.19 API

1. ``scrapy.utils.reqser`` (removed from Scrapy) is provided, backed by
   ``scrapy.utils.request``; testmaster imports it at module level.
2. ``AsyncTestMasterMiddleware``: Scrapy 2.19 rejects a spider middleware whose
   ``process_spider_output`` is a plain function (``TypeError`` when the engine starts),
   and passing ``spider`` to middleware methods is deprecated.
3. ``testmaster parse`` swaps ``spidercls.start_requests``, which Scrapy 2.19 never calls:
   the spider's ``start()`` is made to yield what that swapped-in method returns.
4. Replay looks the spider class up with ``walk_modules`` (deprecated, an error under our
   ``filterwarnings = error``): the project's spider loader is used instead.
5. Component priority dicts may hold classes, not only import paths (the add-on registers
   classes): testmaster's list of the middlewares after its own handles both.

This spider

6. Replay calls ``request.callback(response)`` without the request's ``cb_kwargs``; every
   callback of this spider takes some (``site``, ``task``): they are passed.
7. The replay crawler has no stats collector and no add-on defaults (it is never started);
   the spider counts into ``crawler.stats`` and reads ``SITEMAPCRAWL_*`` settings.
8. Items are dataclasses: they are recorded and compared as plain dicts, which gives a
   readable diff and lets ``TESTMASTER_SKIPPED_FIELDS`` drop a field (``testmaster parse``
   dropped them altogether: it kept ``Item`` and ``dict`` results only).
9. Spider state: testmaster pickles ``spider.__dict__`` before and after the callback and
   compares it by ``==``. This spider's progress lives in its parts (``frontier``,
   ``reading``, ``discovery``), which also hold the crawler; it includes ``Request``
   objects (sitemaps waiting; their callbacks would pickle the whole crawler) and a
   ``SeenUrls`` table of salted ``hash()`` values (meaningless in another process). The
   state is recorded as the spider's own data attributes plus each part's progress
   attributes, in a portable form (requests as dicts, seen URLs as the URLs), and
   compared by value; replay configures the spider (its parts are rebuilt from its
   arguments) and puts the recorded progress back into its parts.
10. ``site_report`` yields the report that ``sitemapcrawl.pipelines.report`` builds from
    the crawl context (segment records, stats, the discovery log); the recorded fixture
    keeps that context and replay rebuilds the report from it. The page fetches and the
    link follower's crawl happen in the pipeline (not a callback): they are not replayed,
    their results (coverage, link-only items) are.
11. ``view.json`` (testmaster's summary of each fixture's request) is written with
    ``json.dump``, which fails half-way on the ``SitemapTask`` in ``cb_kwargs`` and leaves a
    broken file: it is written with such objects as data (and indented).

Used by ``tests/testmaster/__init__.py`` (the generated tests), ``settings.py`` (recording
crawls) and ``cli.py`` (the ``testmaster`` command line).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime as dt
import functools
import json
import re
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy.utils.request as request_utils
from itemadapter import ItemAdapter, is_item
from scrapy import Request
from scrapy.spiderloader import get_spider_loader
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.conf import build_component_list
from scrapy.utils.spider import iterate_spider_output

import sitemapcrawl.spiders.reading as reading_module
from sitemapcrawl.crawlcontext import crawl_context
from sitemapcrawl.pipelines.report import site_reports
from sitemapcrawl.sitemaps.seen import SeenUrls

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.spiders import Spider

__all__ = [
    "NOT_COMPARED",
    "REPLAY_SETTINGS",
    "AsyncTestMasterMiddleware",
    "PortableSeenUrls",
    "json_data",
    "record_portably",
]

# -- 1. scrapy.utils.reqser ---------------------------------------------------------------

_reqser = types.ModuleType("scrapy.utils.reqser")
_reqser.request_to_dict = lambda request, spider=None: request.to_dict(spider=spider)
_reqser.request_from_dict = lambda d, spider=None: request_utils.request_from_dict(d, spider=spider)
_reqser._get_method = request_utils._get_method
sys.modules.setdefault("scrapy.utils.reqser", _reqser)

# Only now can testmaster be imported.
import scrapy_testmaster.middleware as tm_middleware  # noqa: E402
import scrapy_testmaster.parse as tm_parse  # noqa: E402
import scrapy_testmaster.utils as tm_utils  # noqa: E402

#: Settings the replayed tests run with (on top of the project's settings).
REPLAY_SETTINGS: dict[str, Any] = {
    # State is compared by value below (9): testmaster's own `==` check is off.
    "TESTMASTER_IGNORE_SPIDER_ARGS": True,
    # The report's generation time is the replay's clock.
    "TESTMASTER_SKIPPED_FIELDS": ["generated_at"],
    # As recorded (tests/testmaster/settings.py): no state across runs.
    "SITEMAPCRAWL_STATE_PATH": "",
}
_VERIFICATION_ATTR = "_testmaster_verification"  # (10) recorded state, not spider state
#: Recorded, not compared.
NOT_COMPARED = frozenset({_VERIFICATION_ATTR})
#: Each part of the spider with the attributes that are the crawl's progress; the rest is
#: configuration, rebuilt from the spider's arguments on replay. The frontier's requests
#: in the downloader are kept by a signal handler, between the recorded "before" and
#: "after" of a callback: not recorded.
_PARTS = {
    "frontier": ("visited", "scheduled", "_in_flight", "_seq", "_waiting", "_closing"),
    "reading": ("seen", "urls_emitted", "closing", "_report_sent"),
    "discovery": ("faults", "top_level_files", "listed_twice", "logged"),
}
#: Spider attributes that are neither data nor progress (parts without progress).
_NOT_STATE = frozenset({"crawler", "settings", "start_urls", "robots", _VERIFICATION_ATTR})


# -- 9. spider state in a portable form ----------------------------------------------------


class PortableSeenUrls(SeenUrls):
    """``SeenUrls`` that also keeps its URLs, so that a fixture can rebuild it in another
    process (the table itself holds ``hash()`` values, salted per process). It answers the
    same; recording crawls use it (:func:`record_portably`), replay rebuilds one."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        super().__init__(capacity)
        self.urls: list[str] = []

    def add(self, key: str) -> bool:
        new = super().add(key)
        if new:
            self.urls.append(key)
        return new


def record_portably() -> None:
    """In a recording process (``settings.py``): the spider keeps a ``PortableSeenUrls``."""
    reading_module.SeenUrls = PortableSeenUrls  # type: ignore[misc]


@contextlib.contextmanager
def _portable_seen() -> Iterator[None]:
    """While one fixture is replayed: the spider keeps a ``PortableSeenUrls``, as recorded.

    Scoped, not global: a test run alone or in any order replays the same, and the other
    tests of the process keep the spider's own ``SeenUrls``."""
    kept = reading_module.SeenUrls
    reading_module.SeenUrls = PortableSeenUrls  # type: ignore[misc]
    try:
        yield
    finally:
        reading_module.SeenUrls = kept  # type: ignore[misc]


class RecordedRequest(dict[str, Any]):
    """A ``Request`` held in a spider attribute, as ``Request.to_dict(spider=...)``."""


class RecordedSeenUrls(list[str]):
    """A ``SeenUrls`` held in a spider attribute, as the URLs it holds, in order."""


class RecordedPart(dict[str, Any]):
    """A part of the spider (``frontier``, ``reading``, ``discovery``) as its progress."""


def _freeze(value: Any, spider: Spider) -> Any:
    """Spider state as data: requests and seen-URL tables become their portable forms."""
    if isinstance(value, Request):
        return RecordedRequest(value.to_dict(spider=spider))
    if isinstance(value, PortableSeenUrls):
        return RecordedSeenUrls(value.urls)
    if isinstance(value, RecordedPart):
        return RecordedPart({k: _freeze(v, spider) for k, v in value.items()})
    if type(value) is dict:
        return {k: _freeze(v, spider) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_freeze(v, spider) for v in value)
    return value


def _thaw(value: Any, spider: Spider) -> Any:
    """The inverse of :func:`_freeze`, bound to the replaying spider."""
    if isinstance(value, RecordedRequest):
        return request_utils.request_from_dict(dict(value), spider=spider)
    if isinstance(value, RecordedSeenUrls):
        seen = PortableSeenUrls()
        for url in value:
            seen.add(url)
        return seen
    if isinstance(value, RecordedPart):
        return RecordedPart({k: _thaw(v, spider) for k, v in value.items()})
    if type(value) is dict:
        return {k: _thaw(v, spider) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_thaw(v, spider) for v in value)
    return value


def _comparable(value: Any) -> Any:
    """Frozen state in a form compared by value: objects without their own ``==`` (the
    scope policies, the limits' holders) are compared by their type and attributes."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_comparable(v) for v in value]]
    if value is not None and type(value).__eq__ is object.__eq__ and not callable(value):
        return [type(value).__qualname__, _comparable(value.__getstate__())]
    return value


def _state(spider: Spider) -> dict[str, Any]:
    """What testmaster records of a spider: its own data attributes, and each part's
    progress (9)."""
    state = {k: v for k, v in vars(spider).items() if k not in _NOT_STATE and k not in _PARTS}
    for name, fields in _PARTS.items():
        part = vars(spider).get(name)
        if part is not None:
            state[name] = RecordedPart({field: getattr(part, field) for field in fields})
    return state


def _recordable(spider: Spider, report_due: bool) -> Spider:
    """A shallow copy of the spider (same class, so testmaster finds callbacks by name)
    holding only its frozen state, plus the crawl context when the report is due (10)."""
    snapshot = copy.copy(spider)
    kept = {k: v for k, v in vars(spider).items() if k in ("crawler", "settings", "start_urls")}
    vars(snapshot).clear()
    vars(snapshot).update(kept)
    for name, value in _state(spider).items():
        setattr(snapshot, name, _freeze(value, spider))
    if report_due:
        context = crawl_context(spider.crawler)
        reports = site_reports(spider.crawler)
        stats = spider.crawler.stats
        assert stats is not None
        setattr(
            snapshot,
            _VERIFICATION_ATTR,
            {
                "segments": context.segments,
                "started": context.started,
                "stats": dict(stats.get_stats()),
                # the link follower's results as they were (its pages are fetched by the
                # pipeline, outside any callback): the report's coverage, the link items
                "coverage": reports._coverage(dict(stats.get_stats()), ""),
                "segment_coverage": reports._segment_coverage(),
                "link_items": reports.link_only_items(),
            },
        )
    return snapshot


def _is_report(response: Response) -> bool:
    """Whether ``response`` is for the site report's request."""
    callback = response.request.callback if response.request is not None else None
    return getattr(callback, "__name__", None) == "site_report"


# -- 2. an async middleware ---------------------------------------------------------------


class AsyncTestMasterMiddleware(tm_middleware.TestMasterMiddleware):
    """testmaster's recording middleware with Scrapy 2.19's signatures (no ``spider``
    argument, async ``process_spider_output``); it hands testmaster the recordable copy of
    the spider (9). Its name must end with ``TestMasterMiddleware`` (testmaster looks for
    that), and it must be the spider middleware nearest the spider (highest number), so
    that it records the callback's own output."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.crawler = crawler

    def process_spider_input(self, response: Response) -> None:
        spider = self.crawler.spider
        assert spider is not None
        super().process_spider_input(response, _recordable(spider, _is_report(response)))

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        collected = [x async for x in result]  # the callback has run to its end
        spider = self.crawler.spider
        assert spider is not None
        snapshot = _recordable(spider, _is_report(response))
        for x in super().process_spider_output(response, collected, snapshot):
            yield x


# -- 3. testmaster parse: start() ---------------------------------------------------------

_set_spidercls = tm_parse.set_spidercls


def _set_spidercls_with_start(url_list: list[str], args: Any) -> None:
    _set_spidercls(url_list, args)
    spidercls = tm_parse.spidercls

    async def start(self: Spider) -> AsyncIterator[Any]:
        for request in spidercls.start_requests(self):  # set by testmaster
            yield request

    spidercls.start = start


tm_parse.set_spidercls = _set_spidercls_with_start


# -- 4. the spider class, without walk_modules ---------------------------------------------


def _get_spider_class(spider_name: str, project_settings: BaseSettings) -> type[Spider]:
    return get_spider_loader(project_settings).load(spider_name)


tm_utils.get_spider_class = _get_spider_class


# -- 5. middleware lists that hold classes ----------------------------------------------------


def _component_path(component: Any) -> str:
    if isinstance(component, str):
        return component
    return f"{component.__module__}.{component.__qualname__}"


def _get_middlewares(spider: Spider) -> list[str]:
    """Import paths of the spider middlewares after testmaster's (replayed with it)."""
    paths = [
        _component_path(c)
        for c in build_component_list(spider.settings.getwithbase("SPIDER_MIDDLEWARES"))
    ]
    ours = next(i for i, p in enumerate(paths) if p.endswith("TestMasterMiddleware"))
    return paths[ours + 1 :]


tm_middleware.get_middlewares = _get_middlewares
tm_utils.get_middlewares = _get_middlewares


# -- 6, 7, 9, 10. replay ----------------------------------------------------------------------

_request_from_dict = tm_utils.request_from_dict


def _request_with_cb_kwargs(d: dict[str, Any], spider: Spider | None = None) -> Request:
    """The recorded request, whose callback is called with the request's ``cb_kwargs``."""
    request = _request_from_dict(d, spider)
    if request.callback is not None and request.cb_kwargs:
        callback = functools.partial(request.callback, **request.cb_kwargs)
        request = request.replace(callback=callback, cb_kwargs={})
    return request


tm_utils.request_from_dict = _request_with_cb_kwargs


def _set_spider_attrs(spider: Spider, args: dict[str, Any]) -> None:
    """The recorded state back on the replaying spider: its own attributes, then its
    parts, rebuilt from its arguments, with the recorded progress (9)."""
    parts: dict[str, RecordedPart] = {}
    for name, value in args.items():
        thawed = _thaw(value, spider)
        if isinstance(thawed, RecordedPart):
            parts[name] = thawed
        else:
            setattr(spider, name, thawed)
    if not parts:
        return
    spider._configure(spider.crawler)  # type: ignore[attr-defined]
    for name, progress in parts.items():
        part = getattr(spider, name)
        for field, value in progress.items():
            setattr(part, field, value)


tm_utils.set_spider_attrs = _set_spider_attrs

_prepare_callback_replay = tm_utils.prepare_callback_replay
_replays: list[tuple[dict[str, Any], Spider]] = []  # (fixture data, spider) of the last replay


def _prepare_replay(fixture_path: str, encoding: str = "utf-8") -> Any:
    data, crawler, spider, settings = _prepare_callback_replay(fixture_path, encoding)
    for replay_settings in (settings, crawler.settings):
        replay_settings.setdict(REPLAY_SETTINGS, priority="cmdline")
    crawler.addons.load_settings(crawler.settings)  # the SITEMAPCRAWL_* defaults
    crawler.stats = MemoryStatsCollector(crawler)
    recorded = data.get("spider_args_in", {}).get(_VERIFICATION_ATTR)
    if recorded is not None:
        context = crawl_context(crawler)
        context.segments = recorded["segments"]
        context.started = recorded["started"]
        crawler.stats.set_stats(dict(recorded["stats"]))
        reports = site_reports(crawler)
        coverage, link_items = recorded.get("coverage", {}), recorded.get("link_items", [])
        by_segment = recorded.get("segment_coverage")
        setattr(reports, "_coverage", lambda values, site: coverage)  # noqa: B010
        setattr(reports, "_segment_coverage", lambda: by_segment)  # noqa: B010
        setattr(reports, "link_only_items", lambda: list(link_items))  # noqa: B010
    _replays.append((data, spider))
    return data, crawler, spider, settings


tm_utils.prepare_callback_replay = _prepare_replay

_generate_test = tm_utils.generate_test


def _generate_test_with_state(fixture_path: str, encoding: str = "utf-8") -> Callable[..., None]:
    """testmaster's replay, then the spider's state after the callback, compared by value."""
    with _portable_seen():
        test = _generate_test(fixture_path, encoding)
    data, spider = _replays.pop()

    def test_with_state(case: Any) -> None:
        with _portable_seen():
            test(case)
        recorded = {k: v for k, v in data["spider_args_out"].items() if k not in NOT_COMPARED}
        replayed = {
            k: _freeze(v, spider) for k, v in _state(spider).items() if k not in NOT_COMPARED
        }
        case.assertEqual(  # noqa: PT009 - a unittest TestCase: its readable diff
            _comparable(recorded),
            _comparable(replayed),
            f"Spider state after the callback differs.\nFixture path: {fixture_path}",
        )

    return test_with_state


tm_utils.generate_test = _generate_test_with_state


# -- 8. items as plain dicts ------------------------------------------------------------------

_parse_object = tm_utils.parse_object


def _parse_object_plain(obj: Any, spider: Spider, cb_settings: Any) -> Any:
    if is_item(obj) and not isinstance(obj, dict):
        obj = ItemAdapter(obj).asdict()
    return _parse_object(obj, spider, cb_settings)


tm_utils.parse_object = _parse_object_plain


def _run_callback(
    response: Response, callback: Callable[..., Any], cb_kwargs: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[Request]]:
    """``testmaster parse`` keeps only ``Item`` and ``dict`` results (it drops dataclass
    items, and prints items with ``dict(item)``): items of any kind, as dicts."""
    items, requests = [], []
    for x in iterate_spider_output(callback(response, **(cb_kwargs or {}))):
        if isinstance(x, Request):
            requests.append(x)
        elif is_item(x):
            items.append(ItemAdapter(x).asdict())
    return items, requests


tm_parse.run_callback = _run_callback


# -- 11. view.json ------------------------------------------------------------------------------


def json_data(value: Any) -> Any:
    """``value`` as JSON data: dataclasses (their ``__init__`` fields: the others are caches,
    like ``LastMod``'s ISO text) and other objects as dicts of their attributes, bytes as
    text, sets sorted; never a ``repr`` holding a memory address."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: json_data(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
    if isinstance(value, dict):
        return {str(json_data(k)): json_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_data(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((json_data(v) for v in value), key=repr)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(value)} bytes, not UTF-8>"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, re.Pattern):
        return f"re.compile({value.pattern!r})"
    if callable(value):
        return getattr(value, "__qualname__", type(value).__qualname__)
    if hasattr(value, "__dict__") or hasattr(type(value), "__slots__"):
        state = value.__getstate__()
        if isinstance(state, tuple):  # (__dict__ or None, slots or None)
            state = {**(state[0] or {}), **(state[1] or {})}
        return {"__class__": type(value).__qualname__, **json_data(state)}
    return repr(value)


def _write_json(test_dir: str, request: dict[str, Any], result: Any, fixture_num: int) -> None:
    """testmaster's ``write_json``: the request and the counts of items and requests."""
    path = Path(test_dir) / "view.json"
    views = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    views[str(fixture_num)] = {
        "request": json_data(request),
        "num_items": sum(1 for r in result if r["type"] == "item"),
        "num_requests": sum(1 for r in result if r["type"] == "request"),
    }
    text = json.dumps(views, indent=2, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


tm_middleware.write_json = _write_json
