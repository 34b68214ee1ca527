"""Item pipelines: page sampling and verdicts (``sampling``), the site report (``report``),
the scraped-item count (``scrapedcount``).

``sitemapcrawl.pipelines.PageSamplingPipeline`` and ``.ScrapedCountPipeline`` are the
deprecated paths of the pipelines (one release).
"""

from sitemapcrawl.deprecate import moved

__getattr__ = moved(
    __name__,
    {
        "PageSamplingPipeline": "sitemapcrawl.pipelines.sampling",
        "ScrapedCountPipeline": "sitemapcrawl.pipelines.scrapedcount",
    },
)
