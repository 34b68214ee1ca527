"""``scrapy sitemapreport FEED -o report.html``: a crawl's feed as a self-contained HTML report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Render the JSON or JSON Lines feed of ``scrapy crawl sitemap`` as one HTML file.

    The feed is read as a stream (its URL items are counted, not kept). It must hold a
    ``SiteReport``: CSV feeds leave it out. A feed appended to by several crawls gives one
    section per crawl. Exit status 1, with one line on stderr, when the feed is missing,
    unreadable or holds no report; 2 for a usage error.
    """

    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<feed.jsonl|feed.json|state.sqlite> -o <report.html>"

    def short_desc(self) -> str:
        return "Render a sitemap crawl's feed as a self-contained HTML site report"

    def long_desc(self) -> str:
        return (
            "Render the JSON or JSON Lines feed of `scrapy crawl sitemap` (its URL items and "
            "its closing SiteReport) as one HTML file with a lastmod histogram per segment "
            "and a timeline against the sitemap's fetch time. The file loads nothing when "
            "viewed. A SQLite state file (SITEMAPCRAWL_STATE_PATH) gives the last report of "
            "each site it holds. Use -o - to write it to standard output."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-o", "--output", metavar="FILE", help="where to write the HTML report (- for stdout)"
        )
        parser.add_argument(
            "--max-plots",
            metavar="N",
            type=int,
            default=60,
            help="draw histograms for the N largest segments at most (default: 60)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one feed file", print_help=False)
        if not opts.output:
            raise UsageError("-o FILE is required (where to write the HTML report)")
        if opts.max_plots < 0:
            raise UsageError("--max-plots must be 0 or more")
        # Imported here: every scrapy command loads this module, and matplotlib is slow.
        from sitemapcrawl.htmlreport.feed import FeedError, read_runs  # noqa: PLC0415
        from sitemapcrawl.htmlreport.render import render_html  # noqa: PLC0415

        feed = Path(args[0])
        try:
            runs, left_out = read_runs(feed)
        except FeedError as exc:
            sys.stderr.write(f"sitemapreport: error: {exc}\n")
            self.exitcode = 1
            return
        document = render_html(runs, source=feed.name, max_plots=opts.max_plots, left_out=left_out)
        if opts.output == "-":
            sys.stdout.write(document)
            return
        output = Path(opts.output)
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(document, encoding="utf-8")
        except OSError as exc:
            sys.stderr.write(f"sitemapreport: error: {output}: {exc.strerror or exc}\n")
            self.exitcode = 1
            return
        urls = sum(run.tally.items for run in runs)
        sys.stderr.write(
            f"sitemapreport: wrote {output} ({len(runs)} site report(s), {urls:,} URLs)\n"
        )
        if left_out:
            sys.stderr.write(
                f"sitemapreport: warning: {left_out:,} URL items after the last site report "
                "were left out\n"
            )
