"""Judged and unjudged items: depth=, unjudged="condense", negative_grades=.

- ``depth=M`` is cutting every list at M before anything else (trec_eval -M);
- ``unjudged="condense"`` is dropping the items not judged (not in the user's
  truth with a grade >= 0) before anything else (Sakai 2007; trec_eval -J);
- a negative grade is an error, or (``negative_grades="unjudged"``) an item
  pooled but not judged: never relevant, never judged, counted.

Each is checked against doing the same by hand on the input, bit for bit, for
every ranking metric of the registry.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError
from tests.reference import by_evaluate

pytestmark = pytest.mark.timeout(120)


def _metrics() -> list[str]:
    out = []
    for d in receval.metrics().values():
        if d.kind != "ranking" or d.needs or not by_evaluate(d):  # through their door
            continue
        k = "@5" if d.takes_cutoff else ""
        out += [d.name + k, d.name] if k else [d.name]
    return out


def _data(seed: int, negative: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(40):
        n = int(rng.integers(0, 12))
        for r, i in enumerate(rng.choice(30, n, replace=False)):
            rows.append((u, int(i), r + 1))
    recs = pd.DataFrame(rows, columns=["user", "item", "rank"])
    truth = pd.DataFrame(
        {"user": rng.integers(0, 45, 500), "item": rng.integers(0, 30, 500)}
    ).drop_duplicates()
    low = -1 if negative else 0
    truth["relevance"] = rng.integers(low, 4, len(truth))
    return recs, truth


def _same(a: receval.Result, b: receval.Result) -> None:
    assert list(a.per_user.index) == list(b.per_user.index)
    for column in a.per_user.columns:
        x, y = a.per_user[column].to_numpy(), b.per_user[column].to_numpy()
        assert np.array_equal(x, y, equal_nan=True), column
        s, t = a.summary[column], b.summary[column]
        assert s == t or (math.isnan(s) and math.isnan(t)), column


@pytest.mark.parametrize("seed", range(3))
def test_depth_is_cutting_every_list_first(seed: int) -> None:
    recs, truth = _data(seed)
    metrics = _metrics()
    got = receval.evaluate(recs, truth, metrics, depth=4)
    cut = recs[recs["rank"] <= 4]
    _same(got, receval.evaluate(cut, truth, metrics))
    assert got.counts["recommendation_rows_beyond_depth"] == len(recs) - len(cut)
    assert got.counts["recommendation_rows_used"] == len(cut)
    assert got.parameters["depth"] == 4


def test_depth_reads_positions_under_rank_position() -> None:
    recs = pd.DataFrame({"user": 1, "item": [1, 2, 3], "rank": [1, 4, 6]})
    truth = {1: [2, 3]}
    got = receval.evaluate(recs, truth, ["hits", "n_retrieved"], depth=5, rank="position")
    assert got.summary == {"hits": 1.0, "n_retrieved": 2.0}  # rank 6 dropped; 1 and 4 kept
    got = receval.evaluate(recs, truth, ["hits"], depth=2)  # order: the first two rows
    assert got.summary["hits"] == 1.0


@pytest.mark.parametrize("seed", range(3))
def test_condense_is_dropping_the_unjudged_items_first(seed: int) -> None:
    recs, truth = _data(seed, negative=True)
    metrics = _metrics()
    opts = {"negative_grades": "unjudged"}
    got = receval.evaluate(recs, truth, metrics, unjudged="condense", **opts)
    judged = truth[truth["relevance"] >= 0][["user", "item"]]
    kept = recs.merge(judged, on=["user", "item"])
    kept["rank"] = kept.groupby("user")["rank"].rank(method="first").astype(int)
    by_hand = receval.evaluate(kept, truth, metrics, **opts)
    _same(got, by_hand)
    assert got.counts["recommendation_rows_unjudged_dropped"] == len(recs) - len(kept)
    assert (got.per_user["unjudged"].dropna() == 0.0).all()


def test_bpref_ignores_unjudged_items_so_condensing_leaves_it() -> None:
    recs, truth = _data(7, negative=True)
    opts = {"negative_grades": "unjudged"}
    a = receval.evaluate(recs, truth, ["bpref", "bpref@5"], **opts)
    b = receval.evaluate(recs, truth, ["bpref", "bpref@5"], unjudged="condense", **opts)
    assert np.array_equal(a.per_user["bpref"], b.per_user["bpref"], equal_nan=True)
    # a cut-off is taken on the list as given: condensing moves judged items up
    assert not a.per_user["bpref@5"].equals(b.per_user["bpref@5"])


def test_infap_is_ap_when_every_item_above_a_relevant_one_is_judged() -> None:
    recs, truth = _data(3)
    judged = recs[["user", "item"]].merge(truth, how="left").fillna({"relevance": 0})
    full = pd.concat([truth, judged]).drop_duplicates(["user", "item"])  # every listed item judged
    res = receval.evaluate(
        recs, full, ["infap", "ap[denominator=relevant]", "judged", "n_retrieved"]
    )
    listed = res.per_user[res.per_user["n_retrieved"] > 0]
    assert (listed["judged"].dropna() == 1.0).all()
    np.testing.assert_allclose(
        res.per_user["infap"], res.per_user["ap[denominator=relevant]"], rtol=1e-4, atol=1e-9
    )


def test_negative_grades_are_an_error_unless_unjudged() -> None:
    truth = pd.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3], "relevance": [1, -1, 0]})
    recs = {1: [2, 3, 1]}
    with pytest.raises(InputError) as e:
        receval.evaluate(recs, truth, "bpref")
    message = str(e.value)
    assert "row 1" in message and "negative_grades='unjudged'" in message
    res = receval.evaluate(
        recs, truth, ["bpref", "infap", "judged", "hits", "n_relevant"], negative_grades="unjudged"
    )
    # item 2: pooled, unjudged (not relevant, not judged); 3 judged non-relevant
    assert res.summary["judged"] == pytest.approx(2 / 3)
    assert res.summary["hits"] == 1.0 and res.summary["n_relevant"] == 1.0
    assert res.summary["bpref"] == 0.0  # item 3 (judged non-relevant) above item 1
    # infAP at position 3: 1/3 + (2/3) * ((0 + 1 + 1) / 2) * (ε / (1 + 2ε))
    eps = 1e-5
    assert res.summary["infap"] == pytest.approx(1 / 3 + (2 / 3) * 1.0 * (eps / (1 + 2 * eps)))
    assert res.counts["truth_rows_unjudged"] == 1
    assert res.parameters["negative_grades"] == "unjudged"


def test_the_trec_eval_convention_reads_negative_grades_as_unjudged() -> None:
    truth = {1: {1: 1, 2: -1}}
    res = receval.evaluate({1: [2, 1]}, truth, "unjudged@2", convention="trec_eval")
    assert res.summary["unjudged@2"] == 0.5


def test_options_check_their_values() -> None:
    with pytest.raises(receval.errors.OptionError, match="depth"):
        receval.evaluate({1: [1]}, {1: [1]}, "hits", depth=0)
    with pytest.raises(receval.errors.OptionError, match="unjudged"):
        receval.evaluate({1: [1]}, {1: [1]}, "hits", unjudged="drop")
    with pytest.raises(receval.errors.OptionError, match="catalog_size"):
        receval.evaluate({1: [1]}, {1: [1]}, "hits", catalog_size=-3)


def test_the_whole_ideal_metrics_take_no_cutoff() -> None:
    for name in ("g", "ndcg_rel", "rndcg"):
        with pytest.raises(receval.errors.MetricError, match="no cut-off"):
            receval.parse_metric(name + "@10")
