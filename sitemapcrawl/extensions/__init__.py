"""Extensions: progress lines (``progress``), sitemap download guards (``sitemapdownload``)."""
