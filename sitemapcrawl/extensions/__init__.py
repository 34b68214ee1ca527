"""Extensions: progress lines (``progress``), sitemap download guards (``sitemapdownload``).

``sitemapcrawl.extensions.SitemapProgressExtension`` is the deprecated path (one release).
"""

from sitemapcrawl.deprecate import moved

__getattr__ = moved(__name__, {"SitemapProgressExtension": "sitemapcrawl.extensions.progress"})
