"""Item pipelines: page sampling and verdicts (``sampling``), page downloads (``pages``),
the site report (``report``), the scraped-item count (``scrapedcount``)."""
