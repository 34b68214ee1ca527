"""``scrapy check sitemap``: the contracts in the spider's callback docstrings, against the
basic test site on loopback (``tests/contracts.py`` resolves their ``{base}``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conftest import SITES
from tests.contracts import ENV
from tests.mockserver import MockServer

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = {
    "tests.contracts.SiteContract": 10,
    "tests.contracts.SitemapTaskContract": 11,
    "tests.contracts.LastmodsContract": 12,
}
EXPECTED = [
    "_parse_robots (@site pre-hook)",
    "_parse_robots (@returns post-hook)",
    "_parse_robots (@returns post-hook)",
    "_parse_sitemap (@site pre-hook)",
    "_parse_sitemap (@returns post-hook)",
    "_parse_sitemap (@returns post-hook)",
    "_parse_sitemap (@scrapes post-hook)",
    "_read_sitemap (@site pre-hook)",
    "_read_sitemap (@returns post-hook)",
    "_read_sitemap (@returns post-hook)",
    "_read_sitemap (@lastmods post-hook)",
    "_read_sitemap (@scrapes post-hook)",
]


def scrapy_check(base: str) -> tuple[int, str]:
    """Run ``scrapy check sitemap -v`` with the contracts on the site at ``base``."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env[ENV] = base
    result = subprocess.run(
        [
            sys.executable, "-m", "scrapy", "check", "sitemap", "-v", "-a", f"origin={base}",
            "-s", f"SPIDER_CONTRACTS={json.dumps(CONTRACTS)}",
            "-s", "REMOTE_CONTROL_ENABLED=False", "-s", "TELNETCONSOLE_ENABLED=False",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def results(output: str) -> list[tuple[str, str]]:
    """``(contract, outcome)`` for each line ``[sitemap] METHOD (CONTRACT) ... OUTCOME``."""
    found = re.findall(r"^\[sitemap\] (.+?) \.\.\. (\w+)$", output, re.MULTILINE)
    return sorted(found)


def test_contracts_pass(site: Callable[[str], MockServer]) -> None:
    code, output = scrapy_check(site("basic").base)
    assert code == 0, output
    assert results(output) == sorted((name, "ok") for name in EXPECTED), output
    assert f"Ran {len(EXPECTED)} contracts" in output


def test_contracts_catch_a_planted_break(tmp_path: Path) -> None:
    """The basic site, changed: pages.txt lists a third URL, and posts.xml loses a lastmod."""
    root = tmp_path / "basic"
    shutil.copytree(SITES / "basic", root)
    with (root / "pages.txt").open("a", encoding="utf-8") as pages:
        pages.write("{base}/contact\n")
    posts = root / "sitemaps" / "posts.xml"
    posts.write_text(
        posts.read_text(encoding="utf-8").replace("<lastmod>2024-05-31</lastmod>", ""),
        encoding="utf-8",
    )
    with MockServer(root=root) as server:
        code, output = scrapy_check(server.base)
    assert code == 1, output
    failed = [name for name, outcome in results(output) if outcome != "ok"]
    assert failed == ["_parse_sitemap (@returns post-hook)", "_read_sitemap (@lastmods post-hook)"]
    assert "ContractFail: Returned 3 items, expected 2" in output
    assert "ContractFail: 1 items carry a lastmod, expected 2" in output
    assert f"Ran {len(EXPECTED)} contracts" in output
    assert "FAILED (failures=2)" in output
