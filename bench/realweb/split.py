"""The tuning / held-out split of the real-history corpus (issue 36, point 5).

Rule, written down on 2026-12-07 before any site of the enlarged corpus was run or any
verdict of it read: a site is **held-out** when the low bit of the first byte of
``blake2b(repo, digest_size=8)`` is 1, ``repo`` being the ``owner/name`` of its
repository exactly as ``sites.json`` spells it (UTF-8); else it is **tuning**. The two
eras of one repository (hugo-iris, hugo-iris-2020) fall in the same half. Rules of the
spider are written against the tuning half only; the held-out half is run and reported,
never read for ideas.
"""

from __future__ import annotations

import hashlib

TUNING = "tuning"
HELD_OUT = "held-out"


def half(repo: str) -> str:
    """The half of the site whose repository is ``repo`` (``owner/name``)."""
    digest = hashlib.blake2b(repo.encode("utf-8"), digest_size=8).digest()
    return HELD_OUT if digest[0] & 1 else TUNING
