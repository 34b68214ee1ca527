"""The pure verification core: page dates (extruct) and lastmod trust scoring.

Like ``sitemapcrawl.sitemaps``, nothing here imports Scrapy or Twisted.
"""
