"""Downloader middlewares: robots.txt, sitemap bodies left compressed, no private redirects."""
