"""Request meta keys: the one ``sitemapcrawl_*`` namespace every component writes and reads."""

from __future__ import annotations

__all__ = [
    "COUNTED",
    "EXPECTED",
    "GAVE_UP",
    "HEADERS_AT",
    "HTML",
    "LINK",
    "LOCAL",
    "PAGE_CAP",
    "RECEIVED",
    "REDIRECT_TAKEN",
    "REFETCH",
    "ROBOTS",
    "SAMPLE",
    "SITEMAP",
    "STARTED",
    "STATUS",
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
#: A sitemap or robots.txt body that starts as an HTML document (an error page?).
HTML = "sitemapcrawl_html"
#: Why the download guard stopped a sitemap body: ``too_large``, ``too_slow``, ``html``.
STOPPED = "sitemapcrawl_stopped"
#: A sitemap body's announced length (0: unknown).
EXPECTED = "sitemapcrawl_expected"
#: When a sitemap response's headers arrived (``time.monotonic``).
HEADERS_AT = "sitemapcrawl_headers_at"
#: The URL the sitemap redirect middleware let a redirected sitemap request go to.
REDIRECT_TAKEN = "sitemapcrawl_redirect_taken"
#: When a robots.txt or sitemap request was first tried (``time.monotonic``): its deadline
#: counts from there, retries included.
STARTED = "sitemapcrawl_started"
#: Why the retry middleware gave a robots.txt or sitemap response up at once:
#: ``retry_after`` (it asked to wait too long) or ``deadline``.
GAVE_UP = "sitemapcrawl_gave_up"
#: A page fetched for verification: its body is read up to this many bytes (the head
#: holds the dates), then its download is stopped, not refused whole.
PAGE_CAP = "sitemapcrawl_page_cap"
#: A sampled page request: its segment's name.
SAMPLE = "sitemapcrawl_sample"
#: A page refetched on an incremental run: why it was marked.
REFETCH = "sitemapcrawl_refetch"
#: A page request of the link follower: its depth in clicks.
LINK = "sitemapcrawl_link"
#: The response's HTTP status, written when its headers arrive (before its body), by
#: ``sitemapcrawl.downloadhandlers``: a non-2xx body is read no further than a small cap.
STATUS = "sitemapcrawl_status"
#: A request that stays in the worker that made it (distributed mode: the site report's).
LOCAL = "sitemapcrawl_local"
