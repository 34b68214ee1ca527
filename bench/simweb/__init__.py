"""A deterministic simulated web for benchmarking lastmod verification.

``model`` generates sites (pages, change processes, ground truth) from a seed,
``render`` turns a site's state at a virtual time into robots.txt, sitemaps and
HTML pages, ``server`` serves them on 127.0.0.1 with a virtual clock and an
access log, ``policies`` replays the baseline re-crawl policies on the same
event log, ``metrics`` scores fetch matrices and verdicts against the ground
truth, ``spider`` runs the real ``sitemap`` spider once per simulated day and
``run`` ties everything together. See ``bench/README.md``.
"""
