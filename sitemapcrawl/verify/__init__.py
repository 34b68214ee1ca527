"""Lastmod verification, the pure core: read top to bottom, the pipeline of docs/verification.md.

Like ``sitemapcrawl.sitemaps``, nothing here imports Scrapy or Twisted. One job a room, in
the order a segment is judged:

1. ``thresholds``: every bar of the single-run tests, in one table.
2. ``intervals``: the interval a lastmod stands for; Wilson bounds; whole-hour shifts.
3. ``dispersion``: L0, the dispersion test of one sitemap fetch (``SegmentL0Accumulator``,
   ``SegmentL0``, ``l0_signals``).
4. ``sampling``: the seeded, stratified sample of pages to fetch.
5. ``pagehtml``, ``pagedates/``: what a fetched page declares about itself
   (``page_evidence``); ``fingerprint``: its content fingerprint, in a room of its own.
6. ``agreement``: L1, one page's lastmod against its own date, and the outcome names.
7. ``stamps``: dates a build or a template wrote (``SiteView``, ``stamp_cluster``,
   ``page_stamps``).
8. ``verdict``, ``rules``: the static verdict of one run (``static_verdict``).
9. ``crossrun``: L2, the cross-run score and the verdict over runs.
10. ``refetch/``: incremental runs, whether to fetch a URL again (``policy``, ``moves``,
    ``rates``, ``audits``, ``decide``).
11. ``coverage``: what the sitemap misses, from the links the crawl follows.

Each room imports only the rooms above it.
"""
