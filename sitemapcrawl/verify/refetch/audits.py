"""Refetch scheduling: the audit, the URLs refetched although lastmod did not move.

docs/verification.md, "Audit". The audit is what measures the misses of a trusted lastmod:
a seeded uniform draw per URL and run (:func:`audit_draw`) against a share, the policy's or,
on a TRUSTED segment, the one its recall bound needs (:func:`trusted_audit_share`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sitemapcrawl.verify.crossrun import Z_L2

if TYPE_CHECKING:
    from sitemapcrawl.verify.refetch.policy import Policy

__all__ = [
    "audit_draw",
    "trusted_audit_share",
]


def audit_draw(seed: str, run: int, url: str) -> float:
    """A reproducible uniform draw in [0, 1) for ``url`` on run ``run``.

    >>> audit_draw("s", 1, "https://a/") == audit_draw("s", 1, "https://a/")
    True
    >>> audit_draw("s", 1, "https://a/") != audit_draw("s", 2, "https://a/")
    True
    """
    digest = hashlib.blake2b(f"{seed}\0{run}\0{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def trusted_audit_share(
    tp: float,
    n_unchanged: float,
    decay: float,
    policy: Policy,
    *,
    audits: float = 0.0,
    runs: int | None = None,
    target: float = 0.85,
    pool: tuple[float, float, float] | None = None,
) -> float:
    """The audit share that keeps a TRUSTED segment's recall lower bound near ``target``.

    The bound is TP / (TP + m_hi·N_unch); with no miss, the one-sided Wilson bound on the
    miss rate after n audits is about z²/(n + z²), so the bound holds while the decayed
    audit count is n ≥ z²(1/m* - 1), m* = (TP/N_unch)(1/target - 1): a number set by the
    segment's change rate, not its size. ``audits`` (decayed) are counted already; after
    this run's decay they must be topped up to n, which in the steady state takes
    (1 - decay)·n audits per run, and nothing while an earlier, larger audit (a
    PROVISIONAL segment's first one) still covers it. The share is that number (at least
    ``policy.audit_min``) over the run's ΔL = 0 URLs, at most ``policy.audit_trusted``: on
    a large segment the audit costs a few fetches per run, not a percentage. The run's ΔL
    = 0 URLs are N_unch's per-run part over the ``runs`` runs that summed it (decayed), not
    the steady state's: early on that would understate them.

    ``pool``: the (TP, N_unch, audits) of the site's PROVISIONAL and TRUSTED segments,
    this one included (crossrun "Pooling"). A segment whose pages change rarely needs many
    audits to bound its own recall (the need grows as 1/change rate) but may be trusted on
    the pooled bound; the pool's need, spread over its URLs at one share (proportional
    allocation keeps the pooled miss rate unbiased), is then enough, and the segment keeps
    at least ``policy.audit_min`` audits of its own per run for its own demotion rules.

    >>> from sitemapcrawl.verify.refetch.policy import Policy
    >>> # 100 URLs changing 5 % a run, in the steady state: the cap (9 needed, 3 allowed)
    >>> round(trusted_audit_share(219, 4166, 0.977, Policy(), audits=385), 3)
    0.03
    >>> # 10,000 URLs: the steady state's 7 a run; 5 a run (the floor) while an audit of
    >>> # 320 pages is still decaying to the 289 needed
    >>> round(trusted_audit_share(21900, 416600, 0.977, Policy(), audits=289) * 9500, 1)
    6.6
    >>> round(trusted_audit_share(21900, 416600, 0.977, Policy(), audits=320) * 9500, 1)
    5.0
    >>> # 1,000 URLs changing 1 % a run, alone (the 3 % cap: 30 a run) and beside 2,000
    >>> # changing 5 % (the pool's need, 9 a run, is under this segment's floor)
    >>> slow = trusted_audit_share(438, 43000, 0.977, Policy(), audits=900)
    >>> pooled = trusted_audit_share(
    ...     438, 43000, 0.977, Policy(), audits=900, pool=(4818, 126600, 1250)
    ... )
    >>> round(slow * 990), round(pooled * 990)
    (30, 5)
    >>> # 10,000 URLs changing 5 % after 10 runs (the decayed sums hold a fifth of the
    >>> # steady state's), 160 audits counted: 131 more tops them up to the 289 needed
    >>> round(trusted_audit_share(4550, 86500, 0.977, Policy(), audits=160, runs=10) * 9500)
    131
    """
    span = 1 - decay ** max(runs, 1) if runs is not None else 1.0
    per_run_unchanged = n_unchanged * (1 - decay) / span
    if per_run_unchanged <= 0:
        return policy.audit_trusted
    shares = []
    if tp > 0:
        shares.append(_audits_to_hold(tp, n_unchanged, audits, decay, target) / per_run_unchanged)
    if pool is not None and pool[0] > 0 and pool[1] > 0:
        pool_tp, pool_unchanged, pool_audits = pool
        held = _audits_to_hold(pool_tp, pool_unchanged, pool_audits, decay, target)
        shares.append(held / (pool_unchanged * (1 - decay) / span))
    if not shares:
        return policy.audit_trusted
    share = max(min(shares), policy.audit_min / per_run_unchanged)
    return min(share, policy.audit_trusted)


def _audits_to_hold(
    tp: float, n_unchanged: float, audits: float, decay: float, target: float
) -> float:
    """Audits this run that keep TP / (TP + m_hi·N_unch) at ``target`` (no miss): what the
    decayed count will lack of z²(1/m* - 1) after this run's decay."""
    m_star = (tp / n_unchanged) * (1 / target - 1)
    return max(Z_L2**2 * (1 / m_star - 1) - audits * decay, 0.0)


def _audit_share(verdict: str | None, audit_share: float | None, policy: Policy) -> float:
    """The share of a trusted segment's unchanged URLs audited this run: the segment's
    own when set, else the policy's for its verdict (PROVISIONAL audits more)."""
    if audit_share is not None:
        return audit_share
    if verdict in ("TRUSTED", "OVER_REPORTING"):
        return policy.audit_trusted
    return policy.audit_provisional
