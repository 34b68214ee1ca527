"""Sitemap discovery, bookkeeping: faults logged once, the top-level files, URLs listed twice.

Every fault the spider side records has a code in :data:`GLUE_FAULTS` (the reader's own are
``sitemapcrawl.sitemaps.errors.FAULT_CODES``); :meth:`DiscoveryLog.log_once` takes no other.

>>> fault_key("http_503"), fault_key("DownloadTimeoutError"), fault_key("html")
('http_<status>', '<exception>', '<kind>')
>>> fault_stat("http_503"), fault_stat("private"), fault_key("no_such_code") is None
('sitemaps/failed_count/http_503', 'sitemaps/private_address_count', True)
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from sitemapcrawl.sitemaps.errors import FAULT_CODES
from sitemapcrawl.spiders.task import task_dict

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.statscollectors import StatsCollector

    from sitemapcrawl.crawlparts import SiteStats
    from sitemapcrawl.incremental.sitemapfiles import SitemapFiles
    from sitemapcrawl.sitemaps import SitemapReader
    from sitemapcrawl.spiders.arguments import CrawlArguments
    from sitemapcrawl.spiders.task import SitemapTask

# Faults are the spider's: logged under its name, which users filter the log by.
logger = logging.getLogger("sitemapcrawl.spiders.sitemap")

__all__ = ["GLUE_FAULTS", "NOT_A_SITEMAP", "DiscoveryLog", "GlueFault", "fault_key", "fault_stat"]

#: The site report lists the first ones; the stats count them all.
MAX_FAULTS_LISTED = 1000
MAX_TOP_LEVEL_LISTED = 1000
#: Examples of URLs listed by several sitemaps (the first listing was emitted).
MAX_TWICE = 50
#: Hosts of dropped URLs counted per site (the report names the most common).
MAX_HOSTS_KEPT = 1000
_P = "sitemapcrawl/"


class GlueFault(NamedTuple):
    """A fault code of the spider side: when it is recorded, the stat (under
    ``sitemapcrawl/``; ``{code}`` is the code itself, for a family; ``{why}`` the scope
    rule) counted every time it happens, and what the crawl does next. Each is also one
    WARNING per (code, URL) and an entry of the site report's ``faults``."""

    when: str
    stat: str
    then: str


#: The kinds of body that are not a sitemap (``SitemapReader.sniff``), each a fault code of
#: its own when a sitemap turns out to be one; all but ``unknown`` (the reader's
#: ``unknown_format``) are also the reader's codes.
NOT_A_SITEMAP: Final = ("html", "empty", "error_document", "unknown_root", "unknown")

#: Every fault code the spider side (``sitemapcrawl/spiders``, the downloader middlewares
#: through it) records. A key in angle brackets is a family of codes built at run time.
#: Documented in docs/hardening.md; tests/test_glue_faults.py produces each one.
GLUE_FAULTS: Final[dict[str, GlueFault]] = {
    # robots.txt
    "robots_unreachable": GlueFault(
        "robots.txt answered 5xx after retries, or could not be fetched (no answer, "
        "refused, more than 5 redirects)",
        "robots/unreachable_count",
        "RFC 9309 complete disallow: no sitemap, no page of the site (with ROBOTSTXT_OBEY "
        "off: guessing, and the stat is robots/status_count/{status} or "
        "robots/failed_count/{exception})",
    ),
    "robots_large": GlueFault(
        "robots.txt over SITEMAPCRAWL_ROBOTS_MAX_SIZE (download stopped) or over the "
        "parser's 500 KiB",
        "robots/truncated_count",
        "the Sitemap lines before the cut are read",
    ),
    "robots_html": GlueFault(
        "robots.txt is an HTML page",
        "robots/html_count",
        "ignored: no rules, no Sitemap line; guessing as configured",
    ),
    "robots_invalid_sitemap": GlueFault(
        "Sitemap lines of robots.txt that are not http(s) URLs a request can be made for "
        "(undecodable bytes, white space or a control character inside, another scheme)",
        "robots/invalid_sitemaps_count",
        "those lines are skipped (counted each), the others read; said once, with the first",
    ),
    # a sitemap's download
    "http_<status>": GlueFault(
        "a sitemap answered an error status (4xx, or 5xx after retries)",
        "sitemaps/failed_count/{code}",
        "the file is skipped; when every sitemap robots.txt declares fails, locations are guessed",
    ),
    "http_304": GlueFault(
        "a sitemap answered 304 Not Modified with no stored copy to replay",
        "sitemaps/failed_count/http_304",
        "the file is skipped",
    ),
    "retry_after": GlueFault(
        "429/503 whose Retry-After asks for more than SITEMAPCRAWL_RETRY_AFTER_MAX",
        "sitemaps/failed_count/retry_after",
        "given up at once, no retry",
    ),
    "timeout": GlueFault(
        "no answer within the request's deadline (SITEMAPCRAWL_SITEMAP_DEADLINE), retries included",
        "sitemaps/failed_count/timeout",
        "the file is skipped; the others are read",
    ),
    "<exception>": GlueFault(
        "the download failed otherwise: the exception's class name "
        "(DownloadConnectionRefusedError, CannotResolveHostError, IgnoreRequest for a "
        "redirect to a private address...)",
        "sitemaps/failed_count/{code}",
        "the file is skipped",
    ),
    "too_slow": GlueFault(
        "the body still arriving after SITEMAPCRAWL_READ_DEADLINE of its timeout",
        "errors/too_slow_count",
        "the download is stopped; what arrived is read",
    ),
    "too_large": GlueFault(
        "the body reached SITEMAPCRAWL_MAX_DOWNLOAD_SIZE (also the reader's code for the "
        "decoded-size cap)",
        "errors/too_large_count",
        "the download is stopped; what arrived is read, up to the cap",
    ),
    "dataloss": GlueFault(
        "the connection was lost before the announced Content-Length",
        "errors/dataloss_count",
        "what arrived is read",
    ),
    "<kind>": GlueFault(
        "the body is not a sitemap; the code is its kind: " + ", ".join(NOT_A_SITEMAP),
        "sitemaps/failed_count/{code}",
        "not read (also counted as the reader's fault, errors/{reader code}_count); a "
        "guessed location that is not a sitemap is a quiet miss instead",
    ),
    # redirects
    "redirect_other_host": GlueFault(
        "a sitemap redirects out of the scope policy (another host)",
        "sitemaps/out_of_scope_count",
        "not followed (-a scope=off follows it)",
    ),
    "too_many_redirects": GlueFault(
        "a sitemap redirected more than 10 times",
        "sitemaps/failed_count/too_many_redirects",
        "given up before the 12th request",
    ),
    "redirect_loop": GlueFault(
        "a sitemap redirects back into its own redirect chain",
        "sitemaps/redirect_loop_count",
        "cut before a URL is fetched twice",
    ),
    "loop": GlueFault(
        "an index lists, or a sitemap redirects to, one of its own ancestors",
        "sitemaps/loop_count",
        "not fetched again",
    ),
    # the frontier's gate
    "private": GlueFault(
        "a sitemap on a private, loopback or link-local address the origin is not on",
        "sitemaps/private_address_count",
        "not requested",
    ),
    "child_other_host": GlueFault(
        "an index lists a child on a host the site did not vouch for (logged against the index)",
        "sitemaps/out_of_scope_count",
        "the child is not requested (-a scope=off reads it)",
    ),
    "max_depth": GlueFault(
        "an index deeper than max_depth (logged against the index)",
        "limits/max_depth_count",
        "its children are skipped (counted one by one)",
    ),
    "max_sitemaps": GlueFault(
        "max_sitemaps sitemaps were requested (crawl-wide: logged against the first site)",
        "limits/max_sitemaps_count",
        "later sitemaps are skipped (counted one by one)",
    ),
    "time_budget": GlueFault(
        "discovery ran longer than SITEMAPCRAWL_MAX_DISCOVERY_SECONDS (crawl-wide)",
        "limits/time_budget_count",
        "later sitemaps are skipped (counted one by one)",
    ),
    "max_urls": GlueFault(
        "max_urls URLs were emitted (crawl-wide)",
        "limits/max_urls_count",
        "the site reports go out and the crawl closes (finish_reason max_urls); the stat is 1",
    ),
    # the state file
    "index_lastmod_miss": GlueFault(
        "a child changed while its lastmod in the index did not (logged against the index)",
        "state/index_lastmod_miss_count",
        "the index's lastmods no longer let children be skipped",
    ),
    "state_locked": GlueFault(
        "the state file stayed locked by another crawl past SITEMAPCRAWL_STATE_LOCK_TIMEOUT",
        "state/locked_count",
        "the crawl goes on without it: not incremental, no history kept",
    ),
    # what a crawl that found little says, once per site
    "nothing_found": GlueFault(
        "no URL found for the site (no sitemap, every sitemap failed, or they list none); "
        "not after robots.txt made the site off limits",
        "sites/nothing_found_count",
        "the message says why and which argument helps",
    ),
    "scope_dropped": GlueFault(
        "the scope policy dropped more URLs than were kept",
        "scope/dropped_count/{why}",
        "the message names the hosts and the argument that keeps them",
    ),
}

_FAMILIES = (
    ("http_<status>", re.compile(r"http_[1-9]\d\d")),
    ("<exception>", re.compile(r"_*[A-Z]\w*|error")),
    ("<kind>", re.compile("|".join(NOT_A_SITEMAP))),
)


def fault_key(code: str) -> str | None:
    """The :data:`GLUE_FAULTS` key of a fault code (its family's for a code built at run
    time); None for a code the spider side does not record."""
    if code in GLUE_FAULTS:
        return code
    return next((key for key, pattern in _FAMILIES if pattern.fullmatch(code)), None)


def fault_stat(code: str) -> str:
    """The stat (under ``sitemapcrawl/``) a glue fault code counts, every time it happens."""
    key = fault_key(code)
    if key is None:
        raise KeyError(code)
    return GLUE_FAULTS[key].stat.replace("{code}", code)


class ScopeDrops:
    """A file's URLs out of scope: how many for each reason, and the hosts of those on
    another host (named in the report when most are dropped)."""

    __slots__ = ("by_reason", "hosts")

    def __init__(self) -> None:
        self.by_reason: dict[str, int] = {}
        self.hosts: Counter[str] = Counter()

    def add(self, why: str, loc: str) -> None:
        self.by_reason[why] = self.by_reason.get(why, 0) + 1
        if why == "other_host":
            self.hosts[loc.split("/", 3)[2]] += 1


class DiscoveryLog:
    """What the site report says about discovery: faults, top-level files, URLs listed
    twice; and the ``sitemapcrawl/`` stats, with each site's share in a crawl over several.

    A fault is logged once per (code, URL) at WARNING and listed for the report; its stat
    is counted by the caller every time it happens. ``site_stats``: each site's share of
    the stats (the crawl context's).
    """

    def __init__(
        self, site_stats: SiteStats, stats: StatsCollector, first_site: str, multi_site: bool
    ) -> None:
        self._site_stats = site_stats
        self._stats = stats
        self._first_site = first_site
        self._multi_site = multi_site
        #: each distinct fault logged (code, URL, message; and site in a crawl over several)
        self.faults: list[dict[str, str]] = []
        #: top-level sitemap files (URL -> how found, status, kind, counts)
        self.top_level_files: dict[str, dict[str, Any]] = {}
        self.listed_twice: list[dict[str, str]] = []
        self.logged: set[tuple[str, str]] = set()
        #: per site, the hosts of the URLs the scope policy dropped as another host's
        self.other_hosts: dict[str, Counter[str]] = {}
        #: this run resumed a paused one: its stats hold only what it read itself
        self.resumed = False
        #: what became of the sitemaps, kept for the state file when it is used (their
        #: URLs are unconfirmed, not removed, when they were not read)
        self.outcomes: SitemapFiles | None = None

    def inc(self, site: str, key: str, count: int = 1) -> None:
        """Add to the stat ``sitemapcrawl/<key>``, and to ``site``'s share of it when the
        crawl spans several sites (each gets its own report)."""
        self._site_stats.inc(self._stats, site, _P + key, count)

    def log_once(self, code: str, url: str, message: str, site: str = "") -> None:
        """Log a fault once per (code, URL); list it for the report of ``site`` ("" for a
        crawl-wide one, such as a limit, told in every site's report)."""
        assert fault_key(code) is not None or code in FAULT_CODES, f"fault code {code!r}"
        if (code, url) in self.logged:
            return
        self.logged.add((code, url))
        where = url or self._first_site
        logger.warning("%(url)s: %(message)s", {"url": where, "message": message})
        if len(self.faults) < MAX_FAULTS_LISTED:
            fault = {"code": code, "url": where, "message": message}
            if self._multi_site:
                fault["site"] = site
            self.faults.append(fault)

    def failed(self, task: SitemapTask, reason: str, message: str) -> None:
        """A sitemap that could not be read: counted, logged once, its file marked."""
        self.top_level(task, error=reason)
        self.inc(task.site, "sitemaps/failed_count")
        self.inc(task.site, f"sitemaps/failed_count/{reason}")
        self.log_once(reason, task.url, message, task.site)
        if self.outcomes is not None:
            self.outcomes.failed_file(task.url, reason)

    def left_unread(self, task: SitemapTask) -> None:
        """A sitemap a limit (``max_sitemaps``, the discovery time) left unread: the state
        file carries it to the next run."""
        if self.outcomes is not None and not task.probe:
            self.outcomes.left_file(task_dict(task))

    def cut_short(self, reason: str) -> None:
        """Discovery stopped before every sitemap was reached (robots.txt unreachable,
        ``max_urls``): sitemaps not read on this run may still be listed."""
        if self.outcomes is not None:
            self.outcomes.cut.add(reason)

    def top_level(self, task: SitemapTask, **facts: Any) -> None:
        """What became of a top-level sitemap file (not an index's child): the report
        lists each, with how it was found (``SiteReport.sitemaps["files"]``)."""
        if task.depth or task.parent is not None:
            return
        entry = self.top_level_files.get(task.url)
        if entry is None:
            if len(self.top_level_files) >= MAX_TOP_LEVEL_LISTED:
                return
            entry = self.top_level_files[task.url] = {"url": task.url, "found_via": task.found_via}
            if self._multi_site:  # whose report lists it
                entry["site"] = task.site
        entry.update(facts)

    def redirect_refused(self, task: SitemapTask, why: str, target: str) -> None:
        """A redirect not followed (see ``SitemapFrontier.redirect_refusal``). A top-level
        file that leads to one requested already is the same file under another name:
        listed as a duplicate, no fault. A redirect out of scope or back into its own
        chain is a named fault; anything else is a loop, cut and logged."""
        site = task.site
        if why == "duplicate" and not task.depth and task.parent is None:
            self.top_level(task, duplicate_of=target)
            self.inc(site, "sitemaps/duplicate_file_count")
            return
        self.top_level(task, error=why)
        if why == "other_host":
            self.inc(site, "sitemaps/out_of_scope_count")
            message = f"redirects to {target}, on another host; not read (-a scope=off reads it)"
            self.log_once("redirect_other_host", task.url, message, site)
        elif why == "too_many_redirects":
            self.inc(site, "sitemaps/failed_count")
            self.inc(site, "sitemaps/failed_count/too_many_redirects")
            message = "redirected more than 10 times; given up"
            self.log_once("too_many_redirects", task.url, message, site)
        elif why == "redirect_loop":
            self.inc(site, "sitemaps/redirect_loop_count")
            message = f"redirects in a loop (back to {target}); given up"
            self.log_once("redirect_loop", task.url, message, site)
        else:
            self.inc(site, "sitemaps/loop_count")
            self.log_once("loop", task.url, f"redirects to {target}, already read; loop cut", site)

    def file_read(
        self, reader: SitemapReader, site: str, emitted: int, duplicates: int, drops: ScopeDrops
    ) -> None:
        """A file's counts once it is read (or its reading stopped): its items (those past
        the last multiple of 1,024: the rest were counted on the way), duplicates, URLs out
        of scope and their hosts, entries, children, faults (each logged once)."""
        self.inc(site, "urls/found_count", emitted & 1023)
        if duplicates:
            self.inc(site, "urls/duplicate_count", duplicates)
        for why, count in drops.by_reason.items():
            self.inc(site, f"scope/dropped_count/{why}", count)
        for name, count in reader.counts.items():
            self.inc(site, f"entries/{name}_count", count)
        if reader.sitemaps:
            self.inc(site, "children/listed_count", reader.sitemaps)
        for fault in reader.faults:
            self.inc(site, f"errors/{fault.code}_count")
            self.log_once(fault.code, reader.url, fault.message, site)
        if drops.hosts:
            self.dropped_hosts(site, drops.hosts)

    def dropped_hosts(self, site: str, hosts: Counter[str]) -> None:
        """URLs of ``site``'s sitemaps dropped as another host's, by host."""
        known = self.other_hosts.setdefault(site if self._multi_site else "", Counter())
        if len(known) < MAX_HOSTS_KEPT:
            known.update(hosts)

    def explain(self, site: str, values: Mapping[str, Any], args: CrawlArguments) -> None:
        """Say at WARNING (once, and in the report's faults) why a crawl found little or
        nothing: the scope policy dropped most of what the sitemaps list (naming the
        hosts, and the argument that keeps them), every sitemap failed, the sitemaps
        found were HTML pages, or there was no sitemap at all. Not on a resumed run, whose
        stats hold only what it read itself."""
        if self.resumed:
            return
        found = int(values.get(_P + "urls/found_count", 0))
        prefix = _P + "scope/dropped_count/"
        dropped = {
            k.removeprefix(prefix): int(v) for k, v in values.items() if k.startswith(prefix)
        }
        if sum(dropped.values()) > found:
            self._scope_finding(site, found, dropped, args.scope)
        if found or sum(dropped.values()) or values.get(_P + "robots/unreachable_count"):
            return  # (a site off limits was explained when robots.txt was read)
        parsed = int(values.get(_P + "sitemaps/parsed_count", 0))
        failed = int(values.get(_P + "sitemaps/failed_count", 0))
        html = int(values.get(_P + "sitemaps/failed_count/html", 0))
        limits = [
            f"{key.removeprefix(_P + 'limits/').removesuffix('_count')} ({count})"
            for key, count in sorted(values.items())
            if key.startswith(_P + "limits/") and count
        ]
        if parsed:
            why = f"the {parsed} sitemap(s) read list no URL"
            if limits:
                why += f"; limits left sitemaps unread: {', '.join(limits)}, see the faults"
        elif failed and html:
            why = (
                f"every sitemap failed ({failed}), {html} of them an HTML page where a "
                "sitemap was expected (a soft 404, a login page): see the faults"
            )
        elif failed:
            why = f"every sitemap failed ({failed}): see the faults"
        elif args.guess == "off":
            why = (
                "no sitemap: robots.txt declares none and guessing is off (-a guess=fallback "
                "tries the usual locations); give one with -a sitemap_urls=URL"
            )
        else:
            why = (
                "no sitemap: robots.txt declares none and no usual location is one; give "
                "its URL with -a sitemap_urls=URL, or crawl by links with -a links=fallback"
            )
        if ("nothing_found", site) not in self.logged:  # (asked again when the crawl ends)
            self.inc(site, "sites/nothing_found_count")
        self.log_once("nothing_found", site, f"no URL found: {why}", site)

    def _scope_finding(self, site: str, found: int, dropped: dict[str, int], scope: str) -> None:
        total = sum(dropped.values())
        hosts = self.other_hosts.get(site, Counter()).most_common(5)
        named = ", ".join(f"{host} ({count})" for host, count in hosts)
        where = f" on other hosts: {named}" if named else ""
        keep = (
            "-a scope=off keeps them"
            if dropped.get("other_host")
            else "-a scope=robots (for sitemaps robots.txt declares) or -a scope=host keeps them"
        )
        message = (
            f"{total} of the {total + found} URLs the sitemaps list were dropped by "
            f"scope={scope}{where}; {keep}"
        )
        self.log_once("scope_dropped", site, message, site)

    def listed_again(self, url: str, sitemap: str) -> None:
        """A URL another sitemap listed first: kept as an example for the report."""
        if len(self.listed_twice) < MAX_TWICE:
            self.listed_twice.append({"url": url, "sitemap": sitemap})

    def saved(self) -> dict[str, Any]:
        """What a paused crawl keeps for the run that resumes it (``JOBDIR``)."""
        return {
            "top_level_files": self.top_level_files,
            "faults": self.faults,
            "logged": self.logged,
            "listed_twice": self.listed_twice,
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Take back what :meth:`saved` kept (absent keys: a version that did not keep them)."""
        self.top_level_files = saved.get("top_level_files", {})
        self.faults = saved.get("faults", [])
        self.listed_twice = saved.get("listed_twice", [])
        self.logged = saved.get("logged", set())
        self.resumed = True
