"""The README's first command ends with ``demo/run.py``: it must work, and say what it found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_and_summarises(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "demo/run.py", "--out-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "'finish_reason': 'finished'" in result.stderr
    records = [json.loads(line) for line in (tmp_path / "urls.jsonl").read_text().splitlines()]
    urls = [r for r in records if "url" in r]
    report = records[-1]
    assert "segments" in report
    assert len(urls) == len({u["url"] for u in urls}) > 0
    assert f"\n{len(urls)} URLs, by segment (lastmod verdict):\n" in result.stdout
    for segment in report["segments"]:
        assert f"  {segment['segment']}  ({segment['verdict']})\n" in result.stdout
    # With the default settings (pages sampled), one verdict of each colour of the report:
    # green, amber, orange, red, grey.
    verdicts = {s["segment"]: s["verdict"] for s in report["segments"]}
    assert {
        name: verdicts.get(name)
        for name in (
            "/_/gzip/sitemaps/products.xml",
            "/sitemaps/blog.xml",
            "/sitemaps/archive-2019.xml",
            "/sitemaps/docs.xml",
            "/sitemaps/pages.txt",
        )
    } == {
        "/_/gzip/sitemaps/products.xml": "PROVISIONAL",
        "/sitemaps/blog.xml": "OVER_REPORTING",
        "/sitemaps/archive-2019.xml": "STALE",
        "/sitemaps/docs.xml": "GENERATION_TIME",
        "/sitemaps/pages.txt": "ABSENT",
    }
    assert report["sample"]["enabled"] is True
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "state.sqlite").exists()
    assert f"HTML site report: {tmp_path / 'report.html'}\n" in result.stdout
