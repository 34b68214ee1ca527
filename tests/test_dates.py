"""Tests for sitemapcrawl.sitemaps.dates (lastmod / feed date parsing)."""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import email.utils
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.sitemaps import dates
from sitemapcrawl.sitemaps.dates import (
    FLAGS,
    PRECISIONS,
    LastMod,
    format_utc,
    parse_feed_date,
    parse_lastmod,
)

if TYPE_CHECKING:
    from collections.abc import Callable

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
FAST = settings(max_examples=200, deadline=None)

# (input, expected iso, precision, flags)
VALID_LASTMOD: list[tuple[str, str, str, tuple[str, ...]]] = [
    # W3C datetime profile
    ("2024", "2024-01-01T00:00:00Z", "year", ("date_only",)),
    ("2024-05", "2024-05-01T00:00:00Z", "month", ("date_only",)),
    ("2024-05-01", "2024-05-01T00:00:00Z", "day", ("date_only",)),
    ("2024-02-29", "2024-02-29T00:00:00Z", "day", ("date_only",)),
    ("2024-05-01T10:00Z", "2024-05-01T10:00:00Z", "minute", ()),
    ("2024-05-01T10:00+02:00", "2024-05-01T08:00:00Z", "minute", ()),
    ("2024-05-01T10:00-05:30", "2024-05-01T15:30:00Z", "minute", ()),
    ("2024-05-01T10:00:05Z", "2024-05-01T10:00:05Z", "second", ()),
    ("2024-05-01T10:00:05+01:00", "2024-05-01T09:00:05Z", "second", ()),
    ("2024-05-01T10:00:05-00:00", "2024-05-01T10:00:05Z", "second", ()),
    ("2024-05-01T10:00:05.5Z", "2024-05-01T10:00:05.5Z", "fraction", ()),
    ("2024-05-01T10:00:05.123456Z", "2024-05-01T10:00:05.123456Z", "fraction", ()),
    ("2024-05-01T10:00:05.120+02:00", "2024-05-01T08:00:05.12Z", "fraction", ()),
    # fractions beyond microseconds are truncated, not rounded
    ("2024-05-01T10:00:05.1234567891Z", "2024-05-01T10:00:05.123456Z", "fraction", ()),
    ("2024-05-01T10:00:05.9999999Z", "2024-05-01T10:00:05.999999Z", "fraction", ()),
    ("2024-05-01T10:00:05.000Z", "2024-05-01T10:00:05.0Z", "fraction", ()),
    ("2024-05-01T10:00:05.0000001Z", "2024-05-01T10:00:05.0Z", "fraction", ()),
    # deviations: case, separators, offset spellings, zone names (nonstandard, kept)
    ("2024-05-01T10:00:05z", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01t10:00:05Z", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05,25Z", "2024-05-01T10:00:05.25Z", "fraction", ("nonstandard",)),
    ("2024-05-01T10:00:05+0200", "2024-05-01T08:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05+02", "2024-05-01T08:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05-0930", "2024-05-01T19:30:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05 +02:00", "2024-05-01T08:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01 10:00:05+02:00", "2024-05-01T08:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01  10:00:05Z", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05UTC", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05 UTC", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05GMT", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01 10:00:05 GMT", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05 utc", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05 Z", "2024-05-01T10:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05UTC+02:00", "2024-05-01T08:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00:05 GMT-0100", "2024-05-01T11:00:05Z", "second", ("nonstandard",)),
    ("2024-05-01T10:00+14:00", "2024-04-30T20:00:00Z", "minute", ()),
    ("2024-05-01T10:00-14:00", "2024-05-02T00:00:00Z", "minute", ()),
    # no timezone: UTC assumed (only when a time is given); XML Schema's dateTime takes a
    # time with seconds and no zone, no standard takes one without seconds or with a space
    ("2024-05-01T10:00:05", "2024-05-01T10:00:05Z", "second", ("assumed_utc",)),
    ("2024-05-01T10:00", "2024-05-01T10:00:00Z", "minute", ("assumed_utc", "nonstandard")),
    ("2024-05-01 10:00:05", "2024-05-01T10:00:05Z", "second", ("assumed_utc", "nonstandard")),
    (
        "2024-05-01 10:00:05.25",
        "2024-05-01T10:00:05.25Z",
        "fraction",
        ("assumed_utc", "nonstandard"),
    ),
    # xs:date style zone on a date: ignored, the calendar day is kept
    ("2024-05-01Z", "2024-05-01T00:00:00Z", "day", ("date_only",)),
    ("2024-05-01+02:00", "2024-05-01T00:00:00Z", "day", ("date_only",)),
    # 24:00 (XML Schema's) and leap seconds (no standard's)
    ("2024-05-01T24:00:00Z", "2024-05-02T00:00:00Z", "second", ()),
    ("2024-05-01T24:00Z", "2024-05-02T00:00:00Z", "minute", ()),
    ("2023-12-31T24:00:00+01:00", "2023-12-31T23:00:00Z", "second", ()),
    ("2024-02-28T24:00:00", "2024-02-29T00:00:00Z", "second", ("assumed_utc",)),
    ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59Z", "second", ("nonstandard",)),
    ("2016-12-31T23:59:60.5Z", "2016-12-31T23:59:59.5Z", "fraction", ("nonstandard",)),
    ("2017-01-01T00:59:60+01:00", "2016-12-31T23:59:59Z", "second", ("nonstandard",)),
    # RFC 2822 in a sitemap: falls back to the feed parser; not the protocol's form
    ("Tue, 10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ("nonstandard",)),
    ("Tue, 10 Jun 2003 04:00 +0200", "2003-06-10T02:00:00Z", "minute", ("nonstandard",)),
    # sentinels
    ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "second", ("sentinel",)),
    ("1970-01-01T00:00:00+00:00", "1970-01-01T00:00:00Z", "second", ("sentinel",)),
    ("1970-01-01", "1970-01-01T00:00:00Z", "day", ("date_only", "sentinel")),
    ("1970", "1970-01-01T00:00:00Z", "year", ("date_only", "sentinel")),
    ("1969-12-31T19:00:00-05:00", "1970-01-01T00:00:00Z", "second", ("sentinel",)),
    ("1970-01-01T01:00:00", "1970-01-01T01:00:00Z", "second", ("assumed_utc", "sentinel")),
    ("1900-01-01", "1900-01-01T00:00:00Z", "day", ("date_only", "sentinel")),
    ("1900-01-01T00:00:00Z", "1900-01-01T00:00:00Z", "second", ("sentinel",)),
    ("1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z", "second", ("sentinel",)),
    ("2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "second", ("sentinel",)),
    ("2000-01-01", "2000-01-01T00:00:00Z", "day", ("date_only", "sentinel")),
    ("1999-12-31T23:00:00-01:00", "2000-01-01T00:00:00Z", "second", ("sentinel",)),
    ("9999-12-31", "9999-12-31T00:00:00Z", "day", ("date_only", "future", "sentinel")),
    ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z", "second", ("future", "sentinel")),
    ("9999-01-01T00:00:00Z", "9999-01-01T00:00:00Z", "second", ("future", "sentinel")),
    # a year-9999 placeholder past datetime.max is clamped
    ("9999-12-31T23:00:00-05:00", "9999-12-31T23:59:59Z", "second", ("future", "sentinel")),
    # near misses that are NOT sentinels
    ("2000-01-01T00:00:01Z", "2000-01-01T00:00:01Z", "second", ()),
    ("2000-01-01T05:00:00+05:00", "2000-01-01T00:00:00Z", "second", ("sentinel",)),
    ("2000-01-01T00:00:00+05:00", "1999-12-31T19:00:00Z", "second", ()),
    ("2000-01-02", "2000-01-02T00:00:00Z", "day", ("date_only",)),
    ("1970-01-02", "1970-01-02T00:00:00Z", "day", ("date_only",)),
    ("1969-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "second", ()),
    ("2024-01-01", "2024-01-01T00:00:00Z", "day", ("date_only",)),
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "second", ()),
    # year range edges (the written year is checked)
    ("1000", "1000-01-01T00:00:00Z", "year", ("date_only",)),
    ("1000-01-01T00:00:00Z", "1000-01-01T00:00:00Z", "second", ()),
    ("1000-01-01T00:00+01:00", "0999-12-31T23:00:00Z", "minute", ()),
    ("9998-12-31T23:59:59Z", "9998-12-31T23:59:59Z", "second", ("future",)),
    # future: strictly more than one day after now
    ("2024-06-02T00:00:00Z", "2024-06-02T00:00:00Z", "second", ()),
    ("2024-06-02T00:00:01Z", "2024-06-02T00:00:01Z", "second", ("future",)),
    ("2024-06-02T02:00:01+02:00", "2024-06-02T00:00:01Z", "second", ("future",)),
    ("2024-06-03", "2024-06-03T00:00:00Z", "day", ("date_only", "future")),
    ("2030-01-01T00:00:00", "2030-01-01T00:00:00Z", "second", ("assumed_utc", "future")),
    ("2025", "2025-01-01T00:00:00Z", "year", ("date_only", "future")),
]

INVALID_LASTMOD: list[str] = [
    "2024-13-01",
    "2024-00-10",
    "2024-13",
    "2024-00",
    "2024-05-32",
    "2024-05-00",
    "2024-04-31",
    "2023-02-29",
    "2024-02-30",
    "0000",
    "0000-01-01",
    "0001-01-01",
    "0999-12-31",
    "0999-12-31T23:00:00Z",
    "10000-01-01",
    "2024-05-01T25:00Z",
    "2024-05-01T24:00:01Z",
    "2024-05-01T24:30Z",
    "2024-05-01T24:00:00.5Z",
    "2024-05-01T10:60Z",
    "2024-05-01T10:00:61Z",
    "2024-05-01T10:00+15:00",
    "2024-05-01T10:00-14:01",
    "2024-05-01T10:00+14:30",
    "2024-05-01T10:00+02:60",
    "2024-05-01T10:00+2:00",
    "2024-05-01T10:00:00+02:00:30",
    "2024-05-01T10:00:00Z+02:00",
    "2024-05-01T10:00:00 XYZ",
    "2024-05-01T10:00:00.Z",
    "2024-05-01T10Z",
    "2024-05-01T10",
    "2024-05-01T",
    "2024-05-01T1:00Z",
    "2024-05-01X10:00:00Z",
    "2024-05-01+15:00",
    "9999-12-31T24:00:00Z",
    "abc",
    "yesterday",
    "NaN",
    "null",
    "2024-05-01Tabc",
    "1700000000",
    "1700000000000",
    "123456789",
    "20240501",
    "20240501T100000Z",
    "2024-W18-3",
    "2024-122",
    "2024-5-1",
    "24-05-01",
    "2024/05/01",
    "01/05/2024",
    "05-01-2024",
    "+2024-05-01",
    "-2024-05-01",
    "\x00",
    "2024-05-01\x00",
    "\uff12\uff10\uff12\uff14-05-01",  # full-width digits
    "\u0662\u0660\u0662\u0664",  # Arabic-Indic digits
    "Tue, 32 Jun 2003 04:00:00 GMT",
    "Tue, 10 Foo 2003 04:00:00 GMT",
    "Tue, 10 Jun 2003 25:00:00 GMT",
    "Tue, 10 Jun 2003 04:60:00 GMT",
    "Tue, 10 Jun 2003 04:00:00 +1500",
    "Tue, 10 Jun 2003 04:00:00 EST+0100",
    "Tue, 10 Jun 2003 04:00:00 GMT trailing",
    "Foo, 10 Jun 2003 04:00:00 GMT",
    "10 Jun 0999 04:00:00 GMT",
]

# (input, expected iso, precision, flags)
VALID_FEED: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("Tue, 10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 +0000", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 -0000", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 UT", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 UTC", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 Z", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 +0200", "2003-06-10T02:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 +02:00", "2003-06-10T02:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 -0930", "2003-06-10T13:30:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 EST", "2003-06-10T09:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 EDT", "2003-06-10T08:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 CST", "2003-06-10T10:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 CDT", "2003-06-10T09:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 MST", "2003-06-10T11:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 MDT", "2003-06-10T10:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 PST", "2003-06-10T12:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 PDT", "2003-06-10T11:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 CEST", "2003-06-10T02:00:00Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00:00 -0500 (EST)", "2003-06-10T09:00:00Z", "second", ()),
    ("tue, 10 jun 2003 04:00:00 gmt", "2003-06-10T04:00:00Z", "second", ()),
    ("TUE, 10 JUN 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),
    ("Tuesday, 10 June 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),
    ("Tue 10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),
    ("Mon, 10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),  # wrong weekday
    ("10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),  # no weekday
    ("Tue, 1 Jun 2003 4:05:06 GMT", "2003-06-01T04:05:06Z", "second", ()),
    ("Fri, 1 Sept 2023 04:05:06 GMT", "2023-09-01T04:05:06Z", "second", ()),
    ("Tue, 10 Jun 2003 04:00 GMT", "2003-06-10T04:00:00Z", "minute", ()),
    ("Tue, 10 Jun 03 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),
    ("Thu, 10 Jun 99 04:00:00 GMT", "1999-06-10T04:00:00Z", "second", ()),
    ("10 Jun 49 04:00:00 GMT", "2049-06-10T04:00:00Z", "second", ("future",)),
    ("10 Jun 50 04:00:00 GMT", "1950-06-10T04:00:00Z", "second", ()),
    ("10 Jun 103 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),  # 3-digit: +1900
    ("Tuesday, 10-Jun-03 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ()),  # RFC 850
    ("Tue Jun 10 04:00:00 2003", "2003-06-10T04:00:00Z", "second", ("assumed_utc", "nonstandard")),
    ("Tue Jun  1 04:00:00 2003", "2003-06-01T04:00:00Z", "second", ("assumed_utc", "nonstandard")),
    ("Tue Jun 10 04:00:00 GMT 2003", "2003-06-10T04:00:00Z", "second", ("nonstandard",)),
    ("Tue, 10 Jun 2003 04:00:00", "2003-06-10T04:00:00Z", "second", ("assumed_utc",)),
    ("Tue, 10 Jun 2003 04:00:00 XYZ", "2003-06-10T04:00:00Z", "second", ("assumed_utc",)),
    ("Tue, 10 Jun 2003 04:00:00 A", "2003-06-10T04:00:00Z", "second", ("assumed_utc",)),
    ("Sat, 31 Dec 2016 23:59:60 GMT", "2016-12-31T23:59:59Z", "second", ()),
    ("Tue, 10 Jun 2003", "2003-06-10T00:00:00Z", "day", ("date_only",)),
    ("June 10, 2003", "2003-06-10T00:00:00Z", "day", ("date_only", "nonstandard")),
    ("Jun 10 2003 04:00:00 GMT", "2003-06-10T04:00:00Z", "second", ("nonstandard",)),
    (
        "Wed May 01 2024 10:00:00 GMT+0200 (Central European Summer Time)",
        "2024-05-01T08:00:00Z",
        "second",
        ("nonstandard",),
    ),
    ("Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00Z", "second", ("sentinel",)),
    # ISO forms fall back to the lastmod parser
    ("2003-06-10T04:00:00Z", "2003-06-10T04:00:00Z", "second", ()),
    ("2003-06-10T04:00:00.25+02:00", "2003-06-10T02:00:00.25Z", "fraction", ()),
    ("2003-06-10", "2003-06-10T00:00:00Z", "day", ("date_only",)),
]


def _check_invariants(result: LastMod) -> None:
    assert result.flags == tuple(sorted(set(result.flags)))
    assert set(result.flags) <= set(FLAGS)
    if result.value is None:
        assert result.precision is None
        assert result.flags == ("invalid",)
        assert result.iso is None
    else:
        assert result.value.tzinfo is dt.UTC
        assert result.precision in PRECISIONS
        assert "invalid" not in result.flags
        assert isinstance(result.iso, str)
        assert result.iso.endswith("Z")
        assert ("date_only" in result.flags) == (result.precision in ("year", "month", "day"))


# --- tables -----------------------------------------------------------------


@pytest.mark.parametrize(("text", "iso", "precision", "flags"), VALID_LASTMOD)
def test_parse_lastmod_valid(text: str, iso: str, precision: str, flags: tuple[str, ...]) -> None:
    result = parse_lastmod(text, now=NOW)
    assert result is not None
    assert (result.iso, result.precision, result.flags) == (iso, precision, flags)
    assert result.raw == text
    _check_invariants(result)


@pytest.mark.parametrize("text", INVALID_LASTMOD)
def test_parse_lastmod_invalid(text: str) -> None:
    result = parse_lastmod(text, now=NOW)
    assert result == LastMod(text.strip(), None, None, ("invalid",))
    assert result.iso is None
    feed = parse_feed_date(text, now=NOW)
    assert feed is not None
    assert feed.flags == ("invalid",)


@pytest.mark.parametrize(("text", "iso", "precision", "flags"), VALID_FEED)
def test_parse_feed_date_valid(text: str, iso: str, precision: str, flags: tuple[str, ...]) -> None:
    result = parse_feed_date(text, now=NOW)
    assert result is not None
    assert (result.iso, result.precision, result.flags) == (iso, precision, flags)
    _check_invariants(result)
    # sitemaps that use RSS dates are handled identically, but that RFC 822 / 2822 is no
    # sitemap standard: nonstandard there
    in_sitemap = parse_lastmod(text, now=NOW)
    assert in_sitemap is not None
    assert (in_sitemap.value, in_sitemap.precision) == (result.value, result.precision)
    iso_form = text[:1].isdigit() and text[4:5] == "-"
    if "nonstandard" in result.flags or iso_form:
        assert in_sitemap == result
    else:
        assert in_sitemap.flags == tuple(sorted((*result.flags, "nonstandard")))


def test_feed_dates_match_email_utils() -> None:
    """Where the stdlib understands a feed date with a zone, we agree with it."""
    compared = 0
    for text, _iso, _precision, flags in VALID_FEED:
        if "assumed_utc" in flags or "date_only" in flags:
            continue
        if text in {"10 Jun 50 04:00:00 GMT", "10 Jun 103 04:00:00 GMT"}:
            # email.utils maps 50-68 to 20xx (POSIX) and keeps 3-digit years;
            # RFC 5322 4.3 says 50-99 and any 3-digit year -> + 1900.
            continue
        try:
            expected = email.utils.parsedate_to_datetime(text)
        except (ValueError, TypeError):
            continue
        if expected.tzinfo is None:
            continue
        result = parse_feed_date(text, now=NOW)
        assert result is not None
        assert result.value == expected, text
        compared += 1
    assert compared >= 20


# --- blank input, whitespace, now, cache --------------------------------------


@pytest.mark.parametrize("text", [None, "", " ", "\n\t  \r\n", "\u00a0", "\u3000"])
def test_blank_input_gives_none(text: str | None) -> None:
    assert parse_lastmod(text) is None
    assert parse_feed_date(text) is None


def test_surrounding_whitespace_is_stripped() -> None:
    result = parse_lastmod("  \n\t2024-05-01T10:00:05Z\r\n ", now=NOW)
    assert result is not None
    assert result.raw == "2024-05-01T10:00:05Z"
    assert result.iso == "2024-05-01T10:00:05Z"
    invalid = parse_lastmod("  nope \n")
    assert invalid == LastMod("nope", None, None, ("invalid",))


def test_future_depends_on_now_not_on_cache() -> None:
    text = "2024-07-01T00:00:00Z"
    early = parse_lastmod(text, now=NOW)
    late = parse_lastmod(text, now=dt.datetime(2024, 8, 1, tzinfo=dt.UTC))
    again = parse_lastmod(text, now=NOW)
    assert early is not None
    assert late is not None
    assert early.flags == ("future",)
    assert late.flags == ()
    assert again == early


def test_now_naive_means_utc_and_other_zones_are_converted() -> None:
    text = "2024-06-02T00:00:01Z"
    naive = parse_lastmod(text, now=NOW.replace(tzinfo=None))
    assert naive is not None
    assert naive.flags == ("future",)
    ahead = dt.datetime(2024, 6, 1, 2, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    result = parse_lastmod(text, now=ahead)  # the same instant as NOW
    assert result is not None
    assert result.flags == ("future",)


def test_now_defaults_to_current_time() -> None:
    tomorrow = dt.datetime.now(dt.UTC) + dt.timedelta(days=3)
    soon = parse_lastmod(format_utc(tomorrow))
    past = parse_lastmod("2001-05-01T00:00:00Z")
    assert soon is not None
    assert "future" in soon.flags
    assert past is not None
    assert past.flags == ()


def test_now_at_datetime_max_does_not_raise() -> None:
    result = parse_lastmod("9999-12-31", now=dt.datetime.max.replace(tzinfo=dt.UTC))
    assert result is not None
    assert "future" not in result.flags


def test_cache_is_bounded() -> None:
    info = dates._parse_cached.cache_info()
    assert info.maxsize is not None
    assert 1024 <= info.maxsize <= 65536


def test_repeated_values_share_the_cached_result() -> None:
    first = parse_lastmod("2023-03-04T05:06:07Z", now=NOW)
    second = parse_lastmod(" 2023-03-04T05:06:07Z ", now=NOW)
    assert first is second


def test_long_fraction_is_still_parsed() -> None:
    text = "2024-05-01T10:00:05." + "1234567890" * 50 + "+02:00"
    result = parse_lastmod(text, now=NOW)
    assert result is not None
    assert result.iso == "2024-05-01T08:00:05.123456Z"
    assert result.precision == "fraction"


@pytest.mark.parametrize(
    "text",
    [
        "10" + " " * 100_000 + "x",
        "Tue" + " " * 50_000 + "," + " " * 50_000 + "x",
        "10 Jun 2003" + " " * 50_000 + "," + " " * 50_000 + "x",
        "10 Jun 2003 04:00:00" + " " * 50_000 + "(" + " " * 50_000,
        "Jun" + " " * 50_000 + "10" + " " * 50_000 + "x",
        "2024-05-01" + " " * 100_000 + "T" + " " * 100_000 + "x",
        "2024-05-01T10:00:00." + "1" * 100_000 + "x",
        "Mon" + "a" * 100_000,
        "9" * 100_000,
    ],
)
def test_pathological_input_is_invalid(text: str) -> None:
    # These once took quadratic time; their speed is watched by bench/, not by a timed test.
    result = parse_lastmod(text, now=NOW)
    assert result is not None
    assert result.flags == ("invalid",)


@pytest.mark.parametrize(
    "text",
    ["Tue,\n10 Jun 2003\t04:00:00  GMT", "Tue,  10   Jun   2003 04:00:00   +0000"],
)
def test_feed_dates_tolerate_whitespace_runs(text: str) -> None:
    result = parse_feed_date(text, now=NOW)
    assert result is not None
    assert result.iso == "2003-06-10T04:00:00Z"


# --- LastMod, format_utc ----------------------------------------------------


def test_lastmod_is_a_frozen_slotted_dataclass() -> None:
    result = parse_lastmod("2024-05-01T10:00:00Z", now=NOW)
    assert result is not None
    assert dataclasses.is_dataclass(result)
    fields = [f.name for f in dataclasses.fields(result) if f.init]
    assert fields == ["raw", "value", "precision", "flags"]
    # the ISO text is cached once computed, and never compared
    fresh = LastMod(result.raw, result.value, "second", ())
    assert result.iso == "2024-05-01T10:00:00Z"
    assert result == fresh
    assert fresh.iso == result.iso
    # a LastMod pickled before the cache existed (four values) still gives its ISO text
    old = LastMod.__new__(LastMod)
    old.__setstate__([result.raw, result.value, "second", ()])
    assert old == result
    assert old.iso == "2024-05-01T10:00:00Z"
    assert not hasattr(result, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.raw = "x"  # type: ignore[misc]
    changed = dataclasses.replace(result, flags=("future",))
    assert changed.flags == ("future",)
    assert changed.value == result.value
    assert pickle.loads(pickle.dumps(result)) == result
    assert hash(result) == hash(LastMod(result.raw, result.value, "second", ()))
    built = LastMod(raw="r", value=None, precision=None, flags=("invalid",))
    assert built == LastMod("r", None, None, ("invalid",))
    assert repr(built) == "LastMod(raw='r', value=None, precision=None, flags=('invalid',))"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC), "2024-05-01T10:00:00Z"),
        (dt.datetime(2024, 5, 1, 10, 0), "2024-05-01T10:00:00Z"),
        (
            dt.datetime(2024, 5, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            "2024-04-30T23:30:00Z",
        ),
        (dt.datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=dt.UTC), "2024-05-01T10:00:00.5Z"),
        (dt.datetime(2024, 5, 1, 10, 0, 0, 1, tzinfo=dt.UTC), "2024-05-01T10:00:00.000001Z"),
        (dt.datetime(999, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "0999-01-02T03:04:05Z"),
        (dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC), "9999-12-31T23:59:59Z"),
    ],
)
def test_format_utc(value: dt.datetime, expected: str) -> None:
    assert format_utc(value) == expected


def test_iso_shows_fraction_only_for_fraction_precision() -> None:
    value = dt.datetime(2024, 5, 1, 10, 0, 0, 250000, tzinfo=dt.UTC)
    assert LastMod("x", value, "fraction", ()).iso == "2024-05-01T10:00:00.25Z"
    zero = value.replace(microsecond=0)
    assert LastMod("x", zero, "fraction", ()).iso == "2024-05-01T10:00:00.0Z"
    assert LastMod("x", zero, "second", ()).iso == "2024-05-01T10:00:00Z"
    assert LastMod("x", None, None, ("invalid",)).iso is None


# --- module hygiene ----------------------------------------------------------


def test_public_api() -> None:
    assert set(dates.__all__) == {
        "FLAGS",
        "PRECISIONS",
        "LastMod",
        "format_utc",
        "parse_feed_date",
        "parse_lastmod",
    }
    assert PRECISIONS == ("year", "month", "day", "minute", "second", "fraction")
    assert set(FLAGS) == {
        "assumed_utc",
        "invalid",
        "future",
        "sentinel",
        "date_only",
        "nonstandard",
    }
    for name in ("LastMod", "format_utc", "parse_feed_date", "parse_lastmod"):
        assert ">>>" in (getattr(dates, name).__doc__ or ""), name


def test_module_imports_only_the_standard_library() -> None:
    source = Path(dates.__file__).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            assert node.module is not None
            imported.add(node.module.split(".")[0])
    assert imported
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


# --- properties --------------------------------------------------------------

NEAR_MISS = st.text(alphabet="0123456789-:.,+ TtZzUCGMSJnuMonTue", max_size=40)
TIMEZONES = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)
AWARE = st.datetimes(
    min_value=dt.datetime(1000, 1, 2),
    max_value=dt.datetime(9998, 12, 30),
    timezones=TIMEZONES,
)


@FAST
@given(st.one_of(st.text(), NEAR_MISS))
def test_never_raises(text: str) -> None:
    for parse in (parse_lastmod, parse_feed_date):
        result = parse(text, now=NOW)
        if not text.strip():
            assert result is None
            continue
        assert result is not None
        assert result.raw == text.strip()
        _check_invariants(result)


@FAST
@given(AWARE)
def test_round_trip_format_utc(value: dt.datetime) -> None:
    result = parse_lastmod(format_utc(value), now=NOW)
    assert result is not None
    assert result.value == value
    assert result.precision == ("fraction" if value.microsecond else "second")
    assert "assumed_utc" not in result.flags
    assert result.iso == format_utc(value)


_TRUNCATE: dict[str, tuple[Callable[[dt.datetime], dt.datetime], str]] = {
    "minutes": (lambda d: d.replace(second=0, microsecond=0), "minute"),
    "seconds": (lambda d: d.replace(microsecond=0), "second"),
    "milliseconds": (lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000), "fraction"),
    "microseconds": (lambda d: d, "fraction"),
}


@FAST
@given(AWARE, st.sampled_from(sorted(_TRUNCATE)), st.sampled_from(["T", " "]))
def test_round_trip_isoformat_with_offsets(value: dt.datetime, timespec: str, sep: str) -> None:
    truncate, precision = _TRUNCATE[timespec]
    result = parse_lastmod(value.isoformat(sep=sep, timespec=timespec), now=NOW)
    assert result is not None
    assert result.value == truncate(value)
    assert result.precision == precision
    assert "assumed_utc" not in result.flags
    # Without the offset the wall clock time is read as UTC.
    naive = parse_lastmod(value.replace(tzinfo=None).isoformat(), now=NOW)
    assert naive is not None
    assert naive.value == value.replace(tzinfo=dt.UTC)
    assert "assumed_utc" in naive.flags


@FAST
@given(AWARE)
def test_round_trip_date_only(value: dt.datetime) -> None:
    day = value.date()
    result = parse_lastmod(day.isoformat(), now=NOW)
    assert result is not None
    assert result.value == dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    assert result.precision == "day"
    assert "date_only" in result.flags


@FAST
@given(AWARE, st.booleans())
def test_round_trip_feed_dates(value: dt.datetime, usegmt: bool) -> None:
    value = value.replace(microsecond=0)
    if usegmt:
        value = value.astimezone(dt.UTC)
    text = email.utils.format_datetime(value, usegmt=usegmt)
    result = parse_feed_date(text, now=NOW)
    assert result is not None
    assert result.value == value
    assert result.precision == "second"
    assert "assumed_utc" not in result.flags


def _two(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(min_value=lo, max_value=hi).map(lambda n: f"{n:02d}")


@st.composite
def iso_like(draw: st.DrawFn) -> str:
    """Canonical-looking W3C strings, including out-of-range fields."""
    text = f"{draw(st.integers(0, 9999)):04d}-{draw(_two(0, 13))}-{draw(_two(0, 32))}"
    if draw(st.booleans()):
        text += draw(st.sampled_from("T ")) + f"{draw(_two(0, 25))}:{draw(_two(0, 60))}"
        if draw(st.booleans()):
            text += f":{draw(_two(0, 61))}"
            if draw(st.booleans()):
                text += "." + draw(st.text(alphabet="0123456789", min_size=1, max_size=9))
        text += draw(
            st.one_of(
                st.sampled_from(["", "Z"]),
                st.builds(
                    lambda sign, hh, mm: f"{sign}{hh}:{mm}",
                    st.sampled_from("+-"),
                    _two(0, 16),
                    _two(0, 60),
                ),
            )
        )
    return text


@FAST
@given(iso_like())
def test_fast_path_agrees_with_general_parser(text: str) -> None:
    fast = dates._parse_cached.__wrapped__(text)
    general = dates._parse_general(text)
    assert fast == general
    assert (fast.precision, fast.flags) == (general.precision, general.flags)
