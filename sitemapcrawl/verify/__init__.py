"""Lastmod verification, the pure core: sampling, page dates, scores, scheduling, coverage.

Like ``sitemapcrawl.sitemaps``, nothing here imports Scrapy or Twisted.
"""
