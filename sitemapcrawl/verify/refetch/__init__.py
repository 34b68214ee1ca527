"""Lastmod verification: incremental runs, should this URL be fetched again?

The design: docs/verification.md, "Scheduling incremental refetches", "Audit", "Change
rates" and "Page dates as change history". The rooms, from the knobs to the decision:
``policy`` (:class:`~sitemapcrawl.verify.refetch.policy.Policy`, the decision's shape),
``moves`` (whether a lastmod moved since our cut, read in the site's zone), ``rates`` (a
page's change rate from our fetches and its page dates; waves), ``audits`` (the seeded
draw and the share of a trusted segment's URLs audited) and ``decide`` (one URL's
decision, from all of them). Pure Python.

The rooms are imported by their own names (``sitemapcrawl.verify.refetch.decide``): this
package re-exports nothing, so that the module ``decide`` is never shadowed by its function.
"""
