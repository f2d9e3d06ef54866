"""Conventions reproduce their tools at the edges too (issue #34, point 6).

Each known value below is the tool's own number on a tiny input, computed by
the tool (``tests/conformance/edge_runners.py`` runs the same edges on random
workloads under ``-m conformance``) and read from the line of its source that
makes it:

- LensKit 2025.8.1, ``lenskit/metrics/ranking/_pr.py`` ``Precision.measure_list``
  and ``_map.py`` ``AveragePrecision.measure_list``: ``if nrecs == 0: return
  np.nan`` (an empty list is NaN, left out of the mean by ``nanmean``); Recall,
  NDCG, RecipRank and Hit give 0.
- RecBole 1.2.1, ``recbole/evaluator/metrics.py`` ``AveragePopularity.get_pop``:
  ``item_count.get(row[j], 0)`` (an item never seen in training counts 0).
- torchmetrics 1.9.0, ``torchmetrics/functional/retrieval/precision.py``,
  ``recall.py``, ``average_precision.py``, ``reciprocal_rank.py``:
  ``torch.where(preds > 0, target, 0)`` (an item scored <= 0 is never a hit;
  ``hit_rate.py`` and ``ndcg.py`` read ``target`` as it is); ``ndcg.py``
  ``_tie_average_dcg`` (equal scores share their gains).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.evaluation.conventions import get
from tests.reference import lists_from_rows, ref_evaluate, ref_means

# --- LensKit: an empty list --------------------------------------------------

LK_RECS = {"a": ["x", "y"], "b": []}  # b: an empty list (not a missing one)
LK_TRUTH = {"a": {"x": 1}, "b": {"y": 1}}
#: LensKit's numbers: b is NaN for Precision and AveragePrecision (left out),
#: 0 for the others; a: x at rank 1 of 2
LK_KNOWN = {
    "precision@2": 0.5,  # a: 1/2; b: NaN
    "ap@2": 1.0,  # a: 1/min(1, 2); b: NaN
    "recall@2": 0.5,  # (1 + 0) / 2
    "ndcg@2": 0.5,
    "rr@2": 0.5,
    "hit_rate@2": 0.5,
}


def _summary(res: receval.Result, names: list[str], conv: str) -> dict[str, float]:
    params = get(conv).params
    return {n: res.summary[str(receval.parse_metric(n, params))] for n in names}


def test_lenskit_empty_list_is_nan_for_precision_and_ap() -> None:
    res = receval.evaluate(LK_RECS, LK_TRUTH, list(LK_KNOWN), convention="lenskit")
    assert _summary(res, list(LK_KNOWN), "lenskit") == pytest.approx(LK_KNOWN, abs=1e-12)
    per_user = res.per_user
    p = str(receval.parse_metric("precision@2", get("lenskit").params))
    assert math.isnan(per_user.loc["b", p])
    # receval's own default keeps scoring an empty list 0
    assert receval.evaluate(LK_RECS, LK_TRUTH, "precision@2").summary["precision@2"] == 0.25


def test_empty_parameter_names_and_defaults() -> None:
    assert str(receval.parse_metric("precision@2[empty=nan]")) == "precision@2[empty=nan]"
    assert str(receval.parse_metric("ap@2[empty=zero]")) == "ap@2"
    with pytest.raises(receval.ReceValError, match="zero, nan"):
        receval.parse_metric("ap@2[empty=none]")


# --- RecBole: items never seen in training -----------------------------------

RB_TRAIN = pd.DataFrame({"user": ["u1", "u2", "u2"], "item": [1, 1, 3]})
RB_RECS = {"a": [1, 3, 4]}  # item 4 was never seen in training
RB_TRUTH = {"a": {1: 1}}
#: RecBole: averagepopularity@1 = 2, @3 = (2 + 1 + 0) / 3 (DataStruct
#: rec.items [[1, 3, 4]], data.count_items Counter([1, 1, 3]))
RB_KNOWN = {"arp@1": 2.0, "arp@3": 1.0}


def test_recbole_counts_unseen_items_as_zero() -> None:
    res = receval.evaluate(RB_RECS, RB_TRUTH, list(RB_KNOWN), convention="recbole", train=RB_TRAIN)
    assert _summary(res, list(RB_KNOWN), "recbole") == pytest.approx(RB_KNOWN, abs=1e-12)
    # receval's default is unchanged: an unseen item counts 1
    own = receval.evaluate(RB_RECS, RB_TRUTH, "arp@3", train=RB_TRAIN).summary
    assert own == pytest.approx({"arp@3": 4 / 3})
    assert (
        receval.evaluation.conventions.variants("arp@10")["recbole"]
        == "arp@10[count=rows,unseen=0.0]"
    )


# --- torchmetrics: scores <= 0, and equal scores in nDCG ---------------------

TM_RECS = pd.DataFrame({"user": [1, 1, 1], "item": [10, 11, 12], "score": [0.5, -0.1, 0.0]})
TM_TRUTH = pd.DataFrame({"user": [1, 1], "item": [11, 12]})
#: torchmetrics.functional.retrieval on preds [0.5, -0.1, 0.0], target [0, 1, 1], top_k=3
TM_KNOWN = {
    "precision@3": 0.0,
    "recall@3": 0.0,
    "ap@3": 0.0,
    "rr@3": 0.0,
    "hit_rate@3": 1.0,
    "ndcg@3": 0.6934263706207275,  # (1/log2 3 + 1/log2 4) / (1 + 1/log2 3)
}
TIE_RECS = pd.DataFrame({"user": [1, 1, 1], "item": [10, 11, 12], "score": [1.0, 1.0, 0.5]})
TIE_TRUTH = pd.DataFrame({"user": [1, 1], "item": [10, 12]})
#: retrieval_normalized_dcg(preds [1, 1, .5], target [1, 0, 1]) and with top_k=1
TIE_KNOWN = {"ndcg": 0.8065736293792725, "ndcg@1": 0.5}


def test_torchmetrics_items_scored_at_most_zero_are_no_hits() -> None:
    res = receval.evaluate(TM_RECS, TM_TRUTH, list(TM_KNOWN), convention="torchmetrics")
    assert _summary(res, list(TM_KNOWN), "torchmetrics") == pytest.approx(TM_KNOWN, abs=1e-7)
    own = receval.evaluate(TM_RECS, TM_TRUTH, ["precision@3", "rr@3"]).summary
    assert own == pytest.approx({"precision@3": 2 / 3, "rr@3": 0.5})


def test_torchmetrics_ndcg_averages_tied_gains() -> None:
    res = receval.evaluate(TIE_RECS, TIE_TRUTH, list(TIE_KNOWN), convention="torchmetrics")
    assert _summary(res, list(TIE_KNOWN), "torchmetrics") == pytest.approx(TIE_KNOWN, abs=1e-7)
    # ties by item id (10 before 11): the relevant item first, no averaging
    own = receval.evaluate(TIE_RECS, TIE_TRUTH, "ndcg").summary["ndcg"]
    assert own == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))


def test_without_scores_every_item_counts() -> None:
    """A list given without scores: scores=positive and tied=average change nothing."""
    recs, truth = {1: [10, 11, 12]}, {1: {11: 1, 12: 1}}
    names = ["precision@3", "ap@3", "rr@3", "ndcg@3"]
    plain = [
        "precision@3[scores=any]",
        "ap@3[scores=any]",
        "rr@3[scores=any]",
        "ndcg@3[tied=order]",
    ]
    tm = receval.evaluate(recs, truth, names, convention="torchmetrics").summary
    off = receval.evaluate(recs, truth, plain, convention="torchmetrics").summary
    assert list(tm.values()) == pytest.approx(list(off.values()))
    assert list(off.values()) == pytest.approx([2 / 3, (1 / 2 + 2 / 3) / 2, 1 / 2, 0.6934264])


# --- every door gives the same number ----------------------------------------


def _random_rows(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for u in range(40):
        n = int(rng.integers(0, 9))
        items = rng.choice(30, n, replace=False)
        scores = rng.integers(-2, 4, n).astype(float)  # ties, zeros, negatives
        rows += [(u, int(i), float(s)) for i, s in zip(items, scores, strict=True)]
        truth += [(u, int(i), int(rng.integers(1, 4))) for i in rng.choice(30, 4, replace=False)]
    return (
        pd.DataFrame(rows, columns=["user", "item", "score"]),
        pd.DataFrame(truth, columns=["user", "item", "relevance"]),
    )


EDGE_METRICS = [
    "precision@3[scores=positive,empty=nan]",
    "recall@5[scores=positive]",
    "ap@5[scores=positive,empty=nan,denominator=hits]",
    "rr@3[scores=positive]",
    "ndcg@3[tied=average]",
    "ndcg@5[tied=average,gain=exp]",
    "dcg@5[tied=average,grades=positive]",
]


def test_the_slow_reference_agrees() -> None:
    """The literal reference (tests/reference.py) on random rows with ties, zeros
    and negative scores."""
    recs, truth = _random_rows(1)
    lists, scores = lists_from_rows(recs.itertuples(index=False, name=None))
    grades = {
        u: dict(zip(g["item"], g["relevance"], strict=True)) for u, g in truth.groupby("user")
    }
    specs = {}
    for m in EDGE_METRICS:
        spec = receval.parse_metric(m)
        specs[m] = (spec.name, spec.k, dict(spec.params))
    ref = ref_means(ref_evaluate(lists, grades, specs, scores=scores, threshold=2))
    got = receval.evaluate(recs, truth, EDGE_METRICS, threshold=2).summary
    for m in EDGE_METRICS:
        assert got[str(receval.parse_metric(m))] == pytest.approx(ref[m], abs=1e-12), m


def test_files_and_accumulator_give_the_same_numbers(tmp_path: Path) -> None:
    recs, truth = _random_rows(2)
    names = EDGE_METRICS
    local = receval.evaluate(recs, truth, names).summary
    recs.to_csv(tmp_path / "recs.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    files = receval.evaluate(str(tmp_path / "recs.csv"), str(tmp_path / "truth.csv"), names)
    assert files.summary == pytest.approx(local, abs=1e-12)
    acc = receval.Accumulator(names)  # each user's rows in one batch
    acc.update(recs[recs.user < 20], truth[truth.user < 20])
    acc.update(recs[recs.user >= 20], truth[truth.user >= 20])
    assert acc.compute().summary == pytest.approx(local, abs=1e-12)


@pytest.mark.spark
@pytest.mark.timeout(900)
@pytest.mark.parametrize("convention", ["torchmetrics", "lenskit"])
def test_spark_gives_the_same_numbers(spark: Any, convention: str) -> None:
    """The Spark engine runs the same kernels on the same per-user batches."""
    recs, truth = _random_rows(3)
    names = ["precision@3", "recall@5", "ap@5", "rr@3", "ndcg@3", "hit_rate@3"]
    kw = {"convention": convention, "ties": "item"}  # Spark rows have no input order
    local = receval.evaluate(recs, truth, names, **kw)
    res = receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), names, **kw)
    assert res.parameters["engine"] == "spark"
    assert res.summary == local.summary
