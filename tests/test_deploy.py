"""Deployment: the egg scrapyd-deploy builds, and a real Scrapyd running the spider."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import free_port

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tests.mockserver import MockServer

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def copy_tree(target: Path) -> Path:
    """The project as scrapyd-deploy sees it, without virtualenvs, outputs or caches."""
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "bench",
        "demo-output", ".hypothesis", ".mypy_cache", ".ruff_cache",
    )  # fmt: skip
    shutil.copytree(ROOT, target, ignore=ignore)
    return target


def test_egg_ships_the_package_and_nothing_else(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "tree")
    subprocess.run(
        [sys.executable, "setup.py", "-q", "bdist_egg", "-d", str(tmp_path / "dist")],
        cwd=tree, check=True, capture_output=True,
    )  # fmt: skip
    (egg,) = (tmp_path / "dist").glob("*.egg")
    names = zipfile.ZipFile(egg).namelist()
    assert "sitemapcrawl/spiders/sitemap.py" in names
    assert "sitemapcrawl/sitemaps/reader.py" in names
    assert not [n for n in names if n.startswith(("tests/", "bench/", "demo/"))]
    entry_points = zipfile.ZipFile(egg).read("EGG-INFO/entry_points.txt").decode()
    assert "settings = sitemapcrawl.settings" in entry_points


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real scrapyd on 127.0.0.1, from a temporary directory (never the project's)."""
    binary = BIN / "scrapyd"
    assert binary.exists(), "scrapyd is not installed (requirements-dev.txt)"
    home = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
    (home / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        f"bind_address = 127.0.0.1\nhttp_port = {port}\n"
        f"eggs_dir = {home}/eggs\nlogs_dir = {home}/logs\nitems_dir = {home}/items\n"
        f"dbs_dir = {home}/dbs\nmax_proc = 2\npoll_interval = 0.5\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    process = subprocess.Popen(
        [str(binary)], cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                OPENER.open(f"{url}/daemonstatus.json", timeout=2).read()
                break
            except OSError:
                assert process.poll() is None, "scrapyd exited"
                assert time.monotonic() < deadline, "scrapyd did not start"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def api(url: str, data: dict[str, str] | list[tuple[str, str]] | None = None) -> Any:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    with OPENER.open(url, data=body, timeout=30) as response:
        return json.loads(response.read())


def test_scrapyd_deploy_schedule_and_results(
    scrapyd: str, site: Callable[[str], MockServer], tmp_path: Path
) -> None:
    server = site("basic")
    tree = copy_tree(tmp_path / "tree")
    (tree / "scrapy.cfg").write_text(
        "[settings]\ndefault = sitemapcrawl.settings\n\n"
        f"[deploy]\nurl = {scrapyd}\nproject = sitemapcrawl\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    deploy = subprocess.run(
        [str(BIN / "scrapyd-deploy"), "-v", "test-1"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert deploy.returncode == 0, deploy.stderr
    assert api(f"{scrapyd}/listspiders.json?project=sitemapcrawl")["spiders"] == ["sitemap"]

    jobs = {}
    deadline = time.monotonic() + 180

    def schedule(name: str, state: Path, **extra: str) -> None:
        scheduled = api(
            f"{scrapyd}/schedule.json",
            [
                ("project", "sitemapcrawl"),
                ("spider", "sitemap"),
                ("origin", server.base),
                ("setting", "CONCURRENT_REQUESTS=1"),
                # one state file per series of scheduled runs (README, "Scrapyd")
                ("setting", f"SITEMAPCRAWL_STATE_PATH={state}"),
                *extra.items(),
            ],
        )
        assert scheduled["status"] == "ok"
        jobs[name] = scheduled["jobid"]

    def wait(*names: str) -> None:
        for name in names:
            while api(f"{scrapyd}/status.json?job={jobs[name]}")["currstate"] != "finished":
                assert time.monotonic() < deadline, "the scrapyd jobs did not finish"
                time.sleep(0.5)

    schedule("all", tmp_path / "site.sqlite")
    schedule("capped", tmp_path / "capped.sqlite", max_sitemaps="3", guess="off")
    wait("all", "capped")
    # the next scheduled run of the same site: incremental, from the state the first left
    schedule("since", tmp_path / "site.sqlite", since="last")
    wait("since")

    def feed(job: str) -> list[dict[str, Any]]:
        items = OPENER.open(f"{scrapyd}/items/sitemapcrawl/sitemap/{job}.jl").read().decode()
        rows = [json.loads(line) for line in items.splitlines()]
        assert "segments" in rows[-1]  # the site report closes the feed
        return rows

    def results(job: str) -> tuple[list[str], str]:
        log = OPENER.open(f"{scrapyd}/logs/sitemapcrawl/sitemap/{job}.log").read().decode()
        return sorted(row["url"] for row in feed(job)[:-1]), log

    all_urls, log = results(jobs["all"])
    b = server.base
    assert all_urls == sorted(
        [
            f"{b}/", f"{b}/about", f"{b}/extra/from-cdn", f"{b}/news/merger",
            f"{b}/blog/first-post", f"{b}/blog/second-post?a=1&b=2", f"{b}/blog/third-post",
            f"{b}/archive/2018/gallery", f"{b}/archive/relative",
        ]
    )  # fmt: skip
    assert "'finish_reason': 'finished'" in log
    assert " ERROR: " not in log
    capped, log = results(jobs["capped"])
    # robots.txt declares 2 sitemaps; with 3 allowed, only the newest child of the index.
    assert capped == sorted([f"{b}/", f"{b}/about", f"{b}/news/merger"])
    assert "'sitemapcrawl/limits/max_sitemaps_count': 4" in log

    rows = feed(jobs["since"])
    items, report = rows[:-1], rows[-1]
    assert sorted(row["url"] for row in items) == all_urls
    # nothing changed since the first run: no URL is new, and every one has a decision
    assert all(row["refetch_reason"] not in (None, "new") for row in items)
    assert report["incremental"]["since"] == "last"
    assert report["incremental"]["urls"] == len(all_urls)
    assert (report["state"]["path"], report["state"]["run"]) == (str(tmp_path / "site.sqlite"), 2)
    since_log = results(jobs["since"])[1]
    assert "'finish_reason': 'finished'" in since_log
    assert " ERROR: " not in since_log
    assert "'sitemapcrawl/state/not_modified_count': " in since_log
