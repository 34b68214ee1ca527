"""State across runs: the SQLite state file and the crawl's view of it (no Scrapy, no Twisted)."""
