"""The ``testmaster`` command line with the shims: ``python -m tests.testmaster.cli ARGS``.

The ``testmaster`` console script itself fails on Scrapy 2.19 (it imports the removed
``scrapy.utils.reqser`` before anything can provide it). Run it with
``SCRAPY_SETTINGS_MODULE=tests.testmaster.settings`` to record.
"""

from __future__ import annotations

import sys

import tests.testmaster.compat  # noqa: F401 - the shims, before testmaster's cli module

if __name__ == "__main__":
    from scrapy_testmaster.cli import main

    sys.exit(main())
