"""Request meta keys: the one ``sitemapcrawl_*`` namespace every component writes and reads."""

from __future__ import annotations

__all__ = [
    "COUNTED",
    "EXPECTED",
    "HEADERS_AT",
    "LINK",
    "LOCAL",
    "RECEIVED",
    "REDIRECT_TAKEN",
    "REFETCH",
    "ROBOTS",
    "SAMPLE",
    "SITEMAP",
    "STOPPED",
]

#: A sitemap request of the spider: pause/resume keeps it, its body stays compressed for
#: the core's streaming decoder, the download guards cap it.
SITEMAP = "sitemapcrawl_sitemap"
#: The spider's own robots.txt request: the robots.txt middleware parses its response
#: instead of fetching the file again for the pages.
ROBOTS = "sitemapcrawl_robots"
#: robots.txt and sitemap requests counted in the workers' shared progress (Redis).
COUNTED = "sitemapcrawl_counted"
#: Bytes of a sitemap body received so far.
RECEIVED = "sitemapcrawl_received"
#: Why the download guard stopped a sitemap body: ``too_large`` or ``too_slow``.
STOPPED = "sitemapcrawl_stopped"
#: A sitemap body's announced length (0: unknown).
EXPECTED = "sitemapcrawl_expected"
#: When a sitemap response's headers arrived (``time.monotonic``).
HEADERS_AT = "sitemapcrawl_headers_at"
#: The URL the sitemap redirect middleware let a redirected sitemap request go to.
REDIRECT_TAKEN = "sitemapcrawl_redirect_taken"
#: A sampled page request: its segment's name.
SAMPLE = "sitemapcrawl_sample"
#: A page refetched on an incremental run: why it was marked.
REFETCH = "sitemapcrawl_refetch"
#: A page request of the link follower: its depth in clicks.
LINK = "sitemapcrawl_link"
#: A request that stays in the worker that made it (distributed mode: the site report's).
LOCAL = "sitemapcrawl_local"
