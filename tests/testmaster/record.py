"""Re-record the scrapy-testmaster fixtures of the ``sitemap`` spider.

Run from the repository root (see ``docs/testing.md``)::

    python -m tests.testmaster.record

It serves the loopback test sites on fixed ports, so that the recorded URLs do not change
from one recording to the next (``tests/data/sites/basic`` on 127.0.0.1:8791,
``tests/testmaster/sites/sampled`` on 127.0.0.1:8792), deletes ``tests/testmaster/tests/``
and records it again with ``tests/testmaster/settings.py``:

1. ``scrapy crawl sitemap -a origin=BASIC -a sample=off``: ``_parse_robots``, ``_read_sitemap`` (the
   sitemap index, its children, a text sitemap, a news sitemap, a gzipped one, a 404) and
   ``site_report`` (verdicts from the sitemaps alone);
2. ``testmaster parse BASIC/pages.txt -c _parse_sitemap`` and the same for
   ``BASIC/sitemaps/news.xml``: the callback that subclasses use for sitemaps they request;
3. ``scrapy crawl sitemap -a origin=SAMPLED -a sample=on``: sampled pages with JSON-LD
   dates, and the ``site_report`` built from them.

Then it rewrites the one line of each generated ``test_fixtures.py`` that names the command
(testmaster writes the recording process's ``sys.argv``, with absolute paths), and writes a
readable JSON view next to each ``fixtureN.bin`` (``fixtureN.json``, see :func:`view`).
A crawl that logs an error or does not finish stops the recording.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.mockserver import MockServer
from tests.testmaster.compat import json_data

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "tests"
SITES = {
    "basic": (ROOT / "tests" / "data" / "sites" / "basic", 8791),
    "sampled": (HERE / "sites" / "sampled", 8792),
}
COMMAND = "python -m tests.testmaster.record"
_NUMBERS = re.compile(r"\[\n\s+((?:-?[\d.]+,\n\s+)*-?[\d.]+)\n\s+\]")  # a list of numbers


def view(fixture: Path) -> str:
    """A fixture (``.bin``: a zlib-compressed pickle) as indented JSON: the request, the
    response (a gzipped body is shown decompressed), the spider's state before and after
    the callback, and what the callback returned."""
    import scrapy_testmaster.utils as tm_utils  # after the shims (imported with compat)

    info = tm_utils.unpickle_data(tm_utils.decompress_data(fixture.read_bytes()), "utf-8")
    data = tm_utils.unpickle_data(info["data"], info["encoding"])
    response = dict(data["response"])
    body = response.pop("body")
    if body[:2] == b"\x1f\x8b":
        response["body (gunzipped)"] = gzip.decompress(body)
    else:
        response["body"] = body
    shown = {
        "spider": data["spider_name"],
        "callback": data["request"]["callback"],
        "request": data["request"],
        "response": response,
        "spider_state_before": data["spider_args_in"],
        "result": data["result"],
        "spider_state_after": data["spider_args_out"],
        "settings": data["settings"],
        "middlewares_replayed": data["middlewares"],
    }
    text = json.dumps(json_data(shown), indent=2, sort_keys=True, ensure_ascii=False)
    return _NUMBERS.sub(lambda m: f"[{', '.join(n.strip() for n in m[1].split(','))}]", text) + "\n"


def _run(args: list[str], env: dict[str, str], log: Path) -> None:
    """Run one recording process; fail on a non-zero exit, an error or an unfinished crawl
    (``scrapy crawl`` exits 0 even when a callback raised)."""
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.run(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=300, check=False
        ).returncode
    text = log.read_text(encoding="utf-8")
    if (
        code
        or "Traceback" in text
        or "] ERROR:" in text
        or "'finish_reason': 'finished'" not in text
    ):
        sys.stderr.write(text[-5000:])
        raise SystemExit(f"recording failed: {' '.join(args)} (exit code {code}; log above)")


def _environment(site: str, *, parse: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        SCRAPY_SETTINGS_MODULE="tests.testmaster.settings",
        SITEMAPCRAWL_TESTMASTER_SITE=site,
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("SITEMAPCRAWL_TESTMASTER_PARSE", None)
    if parse:
        env["SITEMAPCRAWL_TESTMASTER_PARSE"] = "1"
    return env


def _server(site: str) -> MockServer:
    root, port = SITES[site]
    command = [sys.executable, "-m", "tests.mockserver", "--root", str(root)]
    return MockServer(command=[*command, "--port", str(port), "--watch-stdin"])


def record(workdir: Path) -> None:
    """Record every fixture again (see the module's docstring)."""
    shutil.rmtree(FIXTURES, ignore_errors=True)
    crawl = [sys.executable, "-m", "scrapy", "crawl", "sitemap"]
    parse = [sys.executable, "-m", "tests.testmaster.cli", "parse"]
    with _server("basic") as basic:
        env = _environment("basic")
        out = workdir / "basic.jsonl"
        args = [*crawl, "-a", f"origin={basic.base}", "-a", "sample=off", "-O", str(out)]
        _run(args, env, workdir / "basic.log")
        for n, path in enumerate(("/pages.txt", "/sitemaps/news.xml")):
            _run(
                [
                    *parse,
                    basic.url(path),
                    "--spider=sitemap",
                    "-c",
                    "_parse_sitemap",
                    "-a",
                    f"origin={basic.base}",
                    "--nocolour",
                ],
                _environment("basic", parse=True),
                workdir / f"parse{n}.log",
            )
    with _server("sampled") as sampled:
        out = workdir / "sampled.jsonl"
        args = [*crawl, "-a", f"origin={sampled.base}", "-a", "sample=on", "-O", str(out)]
        _run(args, _environment("sampled"), workdir / "sampled.log")
    for test in FIXTURES.rglob("test_fixtures.py"):
        text = re.sub(
            r"^# Generated by: .*$",
            f"# Generated by: {COMMAND}  # noqa: E501",
            test.read_text(encoding="utf-8"),
            count=1,
            flags=re.MULTILINE,
        )
        test.write_text(text, encoding="utf-8")
    for fixture in sorted(FIXTURES.rglob("fixture*.bin")):
        fixture.with_suffix(".json").write_text(view(fixture), encoding="utf-8")
        sys.stdout.write(f"recorded {fixture.relative_to(ROOT)}\n")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="testmaster-") as workdir:
        record(Path(workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
