"""Peer: advertools ``sitemap_to_df(robots_url)``; counts the rows with a loc.

    python bench/peers/advertools_df.py http://127.0.0.1:PORT/robots.txt

Prints ``RESULT {json}`` on stdout.
"""

from __future__ import annotations

import json
import logging
import sys

import advertools as adv


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    df = adv.sitemap_to_df(sys.argv[1])
    n = int(df["loc"].notna().sum()) if "loc" in df.columns else 0
    errors = int(df["errors"].notna().sum()) if "errors" in df.columns else 0
    print("RESULT " + json.dumps({"urls": n, "rows": len(df), "errors": errors}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
