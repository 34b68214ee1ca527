"""Peer: ultimate-sitemap-parser ``sitemap_tree_for_homepage(origin)``.

    python bench/peers/usp_tree.py http://127.0.0.1:PORT/

Default arguments (so usp also probes its list of well-known sitemap paths,
which 404 on the benchmark site; the runner reports those requests apart),
then counts ``all_pages()``.  Prints ``RESULT {json}`` on stdout.
"""

from __future__ import annotations

import json
import logging
import sys

from usp.tree import sitemap_tree_for_homepage


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    tree = sitemap_tree_for_homepage(sys.argv[1])
    n = sum(1 for _ in tree.all_pages())
    print("RESULT " + json.dumps({"urls": n}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
