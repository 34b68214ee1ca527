"""The HTML site report: per-segment lastmod histograms and a timeline against fetch time.

``collect`` (per-segment counters and bounded histograms of streamed URL items), ``feed``
(read a JSON/JSON Lines feed as a stream, pair each SiteReport with its URLs), ``markup``
(HTML escaped by default), ``plots`` (matplotlib to inline SVG) and ``render`` (the
document) never import Scrapy or Twisted. ``extension`` writes the report at the end of a
crawl; ``sitemapcrawl/commands/sitemapreport.py`` renders a feed.

Only the light modules are imported here: matplotlib loads when a report is rendered.
"""

from .collect import LastmodHistogram, SiteTally
from .feed import FeedError, Run, collect_runs, iter_feed, read_runs

__all__ = [
    "FeedError",
    "LastmodHistogram",
    "Run",
    "SiteTally",
    "collect_runs",
    "iter_feed",
    "read_runs",
]
