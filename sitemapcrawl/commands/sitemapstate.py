"""``scrapy sitemapstate prune|info``: keep the state file bounded, and say what it holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Apply the state file's retention rules (``prune``) or describe the file (``info``).

    ``prune`` removes the sites not crawled for ``--days`` days, each site's runs before
    its last ``--keep-runs`` (with the URL rows none of the kept runs saw) and the stored
    sitemap bodies its last finished run did not use, then vacuums the file; the defaults
    are ``SITEMAPCRAWL_STATE_RETENTION_DAYS`` and ``SITEMAPCRAWL_STATE_KEEP_RUNS`` (0 turns
    a rule off). ``info`` prints the file's size, sites, runs and URL rows, and its bytes
    per URL, as JSON. The file is ``--state`` or ``SITEMAPCRAWL_STATE_PATH``. Exit status 1,
    with one line on stderr, when the file is missing or not a usable state file; 2 for a
    usage error.
    """

    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "prune|info [--state FILE] [--days N] [--keep-runs K] [--dry-run]"

    def short_desc(self) -> str:
        return "Prune the sitemap crawl's state file, or describe it"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--state", metavar="FILE", help="the state file (default: setting)")
        parser.add_argument("--days", type=float, help="drop sites not crawled for N days")
        parser.add_argument("--keep-runs", type=int, help="keep each site's last K runs")
        parser.add_argument("--dry-run", action="store_true", help="count, change nothing")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] not in ("prune", "info"):
            raise UsageError("give prune or info", print_help=False)
        assert self.settings is not None
        # The add-on's defaults under the project's and the command line's settings (no
        # crawler applies the add-on for a command).
        from sitemapcrawl.addon import SitemapCrawlAddon  # noqa: PLC0415

        settings = self.settings.copy()
        SitemapCrawlAddon().update_settings(settings)
        days = (
            opts.days
            if opts.days is not None
            else settings.getfloat("SITEMAPCRAWL_STATE_RETENTION_DAYS")
        )
        keep = (
            opts.keep_runs
            if opts.keep_runs is not None
            else settings.getint("SITEMAPCRAWL_STATE_KEEP_RUNS")
        )
        if days < 0 or keep < 0:
            raise UsageError("--days and --keep-runs must be 0 (off) or more", print_help=False)
        # Imported here: every scrapy command loads this module.
        from sitemapcrawl.incremental.retention import prune, size  # noqa: PLC0415
        from sitemapcrawl.incremental.store import StateError, StateStore  # noqa: PLC0415

        chosen = opts.state or str(settings.get("SITEMAPCRAWL_STATE_PATH") or "")
        path = Path(chosen)
        if not chosen or not path.is_file():
            sys.stderr.write(f"sitemapstate: error: {path}: no such state file\n")
            self.exitcode = 1
            return
        try:
            store = StateStore.open(path)
        except StateError as exc:
            sys.stderr.write(f"sitemapstate: error: {exc}\n")
            self.exitcode = 1
            return
        try:
            if args[0] == "info":
                sys.stdout.write(json.dumps(size(store), indent=1) + "\n")
                return
            done = prune(store, days=days, keep_runs=keep, dry_run=opts.dry_run)
        finally:
            store.close()
        verb = "would remove" if opts.dry_run else "removed"
        sys.stdout.write(
            f"sitemapstate: {path}: {verb} {done.sites} site(s), {done.runs} run(s), "
            f"{done.urls:,} URL row(s), {done.bodies} stored sitemap bod(ies); "
            f"{done.bytes_before:,} -> {done.bytes_after:,} bytes\n"
        )
