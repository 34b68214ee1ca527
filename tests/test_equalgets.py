"""The refetch choice against uniform random and Poisson-only at equal GETs
(bench/equalgets.py, issue 35), on small exact cases."""

from __future__ import annotations

import numpy as np

from bench import equalgets
from bench.simweb import metrics
from bench.simweb.model import DAY, Timeline


def test_uniform_expectation_is_k_over_n_of_the_changes() -> None:
    assert equalgets.uniform_expected(2, 8, 4) == 1.0
    assert equalgets.uniform_expected(8, 8, 3) == 3.0
    assert equalgets.uniform_expected(10, 8, 3) == 3.0  # never more than every page
    assert equalgets.uniform_expected(0, 5, 3) == 0.0


def test_rate_order_prefers_the_page_its_own_fetches_saw_change() -> None:
    order = equalgets.RateOrder()
    order.see({"a": 0, "b": 0, "c": 0}, 0.0)
    assert order.choose(["a", "b", "c"], 3, DAY, {"a": 0, "b": 1, "c": 0}) == {"a", "b", "c"}
    assert order.choose(["a", "b", "c"], 1, 2 * DAY, {"a": 0, "b": 2, "c": 0}) == {"b"}
    assert order.choose(["a", "b", "c"], 0, 3 * DAY, {"a": 0, "b": 2, "c": 0}) == set()


def test_score_run_counts_the_catch_of_each_choice() -> None:
    """Four pages of one segment; b changed at run 1 (every page fetched), a and b at run
    2, where the spider fetched a alone: caught 1, uniform 1/4 x 2 = 0.5, and Poisson-only,
    which saw b change, takes b: 1. A page new at run 2 (e) is not counted."""
    order = equalgets.RateOrder()
    pages = {"a": 0, "b": 0, "c": 0, "d": 0}
    order.see(pages, 0.0)
    seg = dict.fromkeys(pages, "/s/")
    run1 = {"a": 0, "b": 1, "c": 0, "d": 0}
    got = equalgets.score_run(seg, pages, run1, set(pages), order=order, now=DAY)
    assert {k: v.to_json() for k, v in got.items()} == {
        "/s/": {
            "changes": 1,
            "listed": 4,
            "fetched": 4,
            "caught": 1,
            "uniform": 1.0,
            "poisson": 1,
            "x_uniform": 1.0,
            "x_poisson": 1.0,
        }
    }
    run2 = {"a": 1, "b": 2, "c": 0, "d": 0, "e": 0}
    got = equalgets.score_run({**seg, "e": "/t/"}, run1, run2, {"a", "e"}, order=order, now=2 * DAY)
    assert {k: v.to_json() for k, v in got.items()} == {
        "/s/": {
            "changes": 2,
            "listed": 4,
            "fetched": 1,
            "caught": 1,
            "uniform": 0.5,
            "poisson": 1,
            "x_uniform": 2.0,
            "x_poisson": 1.0,
        }
    }


def test_simweb_equal_gets_per_archetype_segment_and_true_verdict() -> None:
    """Three runs, pages 0-1 in segment 0 (STALE), 2-3 in segment 1 (TRUSTED); page 3 is
    published at run 2. Run 1: page 0 changes, the spider fetches page 1; run 2: page 2
    changes and is fetched, page 3 is new.
    Poisson-only, without history at run 1, takes page 0 (the hash breaks the tie)."""
    version = np.array([[0, 0, 0, -1], [1, 0, 0, -1], [1, 0, 1, 0]])
    tl = Timeline(
        times=np.array([0.0, DAY, 2 * DAY]),
        version=version,
        listed=version >= 0,
        lm_value=np.full(version.shape, np.nan),
        lm_upper=np.full(version.shape, np.nan),
        segments=np.array([0, 0, 1, 1]),
    )
    fetched = np.array([[1, 1, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1]], dtype=bool)
    got = metrics.equal_gets(tl, fetched, ["/a/", "/b/"], ["STALE", "TRUSTED"])
    stale = {
        "changes": 1,
        "listed": 4,
        "fetched": 1,
        "caught": 0,
        "uniform": 0.5,
        "poisson": 1,
        "x_uniform": 0.0,
        "x_poisson": 0.0,
    }
    trusted = {
        "changes": 1,
        "listed": 2,
        "fetched": 1,
        "caught": 1,
        "uniform": 1.0,
        "poisson": 1,
        "x_uniform": 1.0,
        "x_poisson": 1.0,
    }
    assert got["by_class"] == {"STALE": stale, "TRUSTED": trusted}
    assert got["by_segment"] == {"/a/": stale, "/b/": trusted}
    assert got["site"] == {
        "changes": 2,
        "listed": 6,
        "fetched": 2,
        "caught": 1,
        "uniform": 1.5,
        "poisson": 2,
        "x_uniform": 0.667,
        "x_poisson": 0.5,
    }
