"""sitemapcrawl: find every URL of a site from its sitemaps, and judge its lastmod dates."""

__version__ = "0.1.0"
