"""Settings of the recording crawls: the project's own, plus scrapy-testmaster's recorder.

``record.py`` runs ``scrapy crawl`` and ``testmaster parse`` with
``SCRAPY_SETTINGS_MODULE=tests.testmaster.settings``; replay uses the project's settings.
"""

from __future__ import annotations

import os
from pathlib import Path

import sitemapcrawl.settings as _project
from tests.testmaster.compat import record_portably  # the shims, before testmaster is loaded

globals().update({name: getattr(_project, name) for name in dir(_project) if name.isupper()})
record_portably()

TESTMASTER_ENABLED = True
TESTMASTER_BASE_PATH = str(Path(__file__).resolve().parent)
#: One directory per recorded site (``tests/sitemap/<site>/<callback>/``), set by record.py.
TESTMASTER_EXTRA_PATH = os.environ.get("SITEMAPCRAWL_TESTMASTER_SITE", "")
# Nearest the spider (Scrapy's highest is 1000): it records what the callback itself yields.
SPIDER_MIDDLEWARES = {"tests.testmaster.compat.AsyncTestMasterMiddleware": 2000}
# One request at a time, as testmaster asks: the spider state it records before a callback
# is then the state the callback starts from.
CONCURRENT_REQUESTS = 1
AUTOTHROTTLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
TELNETCONSOLE_ENABLED = False
# A default run: no SQLite state across runs (it would make each recording depend on the last).
SITEMAPCRAWL_STATE_PATH = ""
# `testmaster parse` (record.py sets this variable) runs one callback on given URLs: no
# site report, whose recording would describe that partial run.
if os.environ.get("SITEMAPCRAWL_TESTMASTER_PARSE"):
    SITEMAPCRAWL_VERIFY_ENABLED = False
