"""Peer: ultimate-sitemap-parser ``sitemap_tree_for_homepage(origin)``.

    python bench/peers/usp_tree.py http://127.0.0.1:PORT/

``use_known_paths=False``: like the other tools, usp reads robots.txt and what it
declares, without probing its list of well-known paths (13 requests that 404 on
the benchmark site; sitemapcrawl guesses only when robots.txt declares nothing).
Then counts ``all_pages()``.  Prints ``RESULT {json}`` on stdout.
"""

from __future__ import annotations

import json
import logging
import sys

from usp.tree import sitemap_tree_for_homepage


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    tree = sitemap_tree_for_homepage(sys.argv[1], use_known_paths=False)
    n = sum(1 for _ in tree.all_pages())
    print("RESULT " + json.dumps({"urls": n}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
