"""Curves (SPEC §7): metrics over cut-offs, interpolated PR, global ROC, metric ranges."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis import curves
from receval.analysis.curves import (
    curve,
    interpolated_precision,
    pr_curve,
    roc,
    roc_auc,
    roc_points,
)
from receval.errors import InputError, MetricError, OptionError, ReceValError
from tests.required import TREC_FILES

# SPEC §11, seed 004: u1 truth {1..6}, list [1,6,8]; u2 truth {2,4,6}, list [1..5];
# u3 truth {2,4,6}, no list; u4 no truth, list [1..4]; u5 neither
RECS = {"u1": [1, 6, 8], "u2": [1, 2, 3, 4, 5], "u4": [1, 2, 3, 4]}
TRUTH = {"u1": [1, 2, 3, 4, 5, 6], "u2": [2, 4, 6], "u3": [2, 4, 6]}


def random_run(seed: int, n_users: int = 40, n_items: int = 30) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    recs, truth = {}, {}
    for u in range(n_users):
        n = int(rng.integers(0, 12))
        if n:
            recs[u] = rng.choice(n_items, n, replace=False).tolist()
        r = int(rng.integers(0, 8))
        if r:
            truth[u] = rng.choice(n_items, r, replace=False).tolist()
    return recs, truth


# --------------------------------------------------------------------------- curve


def test_curve_known_values() -> None:
    c = curve(RECS, TRUTH, k=5)
    assert c.index.tolist() == [1, 2, 3, 4, 5] and c.index.name == "k"
    assert list(c.columns) == ["precision", "recall"]
    # SPEC §11 table (k = 1, 3, 5)
    assert c.loc[[1, 3, 5], "precision"].tolist() == pytest.approx([1 / 3, 1 / 3, 0.2667], abs=1e-4)
    assert c.loc[[1, 3, 5], "recall"].tolist() == pytest.approx([0.0556, 0.2222, 0.3333], abs=1e-4)


def test_curve_is_one_evaluate_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = curves.evaluate

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(curves, "evaluate", counting)
    curve(RECS, TRUTH, k=10, metrics=["precision", "recall", "ndcg[gain=exp]"])
    assert len(calls) == 1 and len(calls[0]) == 30


@pytest.mark.parametrize("seed", [0, 1])
def test_curve_equals_separate_calls(seed: int) -> None:
    recs, truth = random_run(seed)
    metrics = ["precision", "recall", "ndcg[gain=exp]", "ap[denominator=relevant]", "MRR"]
    c = curve(recs, truth, k=8, metrics=metrics, threshold=1)
    assert list(c.columns) == [
        "precision",
        "recall",
        "ndcg[gain=exp]",
        "ap[denominator=relevant]",
        "rr",
    ]
    for k in (1, 4, 8):
        res = receval.evaluate(
            recs,
            truth,
            [
                f"p@{k}",
                f"r@{k}",
                f"ndcg@{k}[gain=exp]",
                f"map@{k}[denominator=relevant]",
                f"mrr@{k}",
            ],
        )
        assert c.loc[k].tolist() == pytest.approx(list(res.summary.values()), rel=1e-12)


def test_curve_passes_evaluate_options() -> None:
    a = curve(RECS, TRUTH, k=3, empty_truth="zero")
    b = curve(RECS, TRUTH, k=3)
    assert (a["precision"] < b["precision"]).all()  # u4 now counts 0


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        ({"k": 0}, ReceValError, "positive integer"),
        ({"k": 2.5}, ReceValError, "positive integer"),
        ({"metrics": ["ndcg@10"]}, MetricError, "no cut-off"),
        ({"metrics": []}, MetricError, "no metric"),
        ({"metrics": ["ndgc"]}, MetricError, "did you mean 'ndcg'"),
    ],
)
def test_curve_errors(kwargs: dict, exc: type, word: str) -> None:
    with pytest.raises(exc, match=word):
        curve(RECS, TRUTH, **kwargs)


# --------------------------------------------------------------------------- metric ranges


def test_metric_range_equals_separate_cutoffs() -> None:
    recs, truth = random_run(3, n_items=150)
    for u in list(recs)[:5]:
        recs[u] = list(range(120))  # some lists longer than 100
    res = receval.evaluate(recs, truth, "ndcg@1-100")
    assert list(res.summary) == [f"ndcg@{k}" for k in range(1, 101)]
    for k in (1, 2, 7, 50, 100):
        alone = receval.evaluate(recs, truth, f"ndcg@{k}")
        assert res.summary[f"ndcg@{k}"] == pytest.approx(alone.summary[f"ndcg@{k}"], rel=1e-12)
        pd.testing.assert_series_equal(res.per_user[f"ndcg@{k}"], alone.per_user[f"ndcg@{k}"])


# --------------------------------------------------------------------------- PR curve


def slow_iprec(recs: dict, truth: dict, levels: np.ndarray) -> np.ndarray:
    """trec_eval's iprec_at_recall, one user at a time: max precision at any
    rank with recall ≥ r, 0 above the recall reached; users without relevant
    items skipped, users without a list 0."""
    rows = []
    for u, rel in truth.items():
        rel = set(rel)
        hits, points = 0, []
        for i, item in enumerate(recs.get(u, []), start=1):
            hits += item in rel
            points.append((hits / i, hits / len(rel)))
        rows.append([max([p for p, r in points if r >= lv], default=0.0) for lv in levels])
    return np.mean(rows, axis=0)


def test_pr_curve_hand_worked() -> None:
    # list [1,2,3,4], relevant {1,3}: (P, R) = (1, .5), (.5, .5), (.667, 1), (.5, 1)
    pr = pr_curve({"u": [1, 2, 3, 4]}, {"u": [1, 3]})
    assert pr["recall"].tolist() == pytest.approx([i / 10 for i in range(11)])
    assert pr["precision"].tolist() == pytest.approx([1.0] * 6 + [2 / 3] * 5)
    assert pr.attrs["users"] == 1
    # recall never above 1/2: levels above get 0
    pr = pr_curve({"u": [9, 1, 8]}, {"u": [1, 3]})
    assert pr["precision"].tolist() == pytest.approx([0.5] * 6 + [0.0] * 5)


def test_pr_curve_known_users() -> None:
    pr = pr_curve(RECS, TRUTH)  # u4 (no truth) skipped, u3 (no list) counts 0
    assert pr.attrs["users"] == 3
    expected = slow_iprec(RECS, TRUTH, curves.RECALL_LEVELS)
    assert pr["precision"].to_numpy() == pytest.approx(expected)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pr_curve_matches_slow_reference(seed: int) -> None:
    recs, truth = random_run(seed)
    pr = pr_curve(recs, truth)
    assert pr["precision"].to_numpy() == pytest.approx(
        slow_iprec(recs, truth, curves.RECALL_LEVELS), rel=1e-12
    )
    # interpolated precision never rises with recall
    assert (np.diff(pr["precision"].to_numpy()) <= 1e-12).all()


def test_pr_curve_from_scored_table() -> None:
    recs, truth = random_run(4)
    rows = [(u, it, float(-i)) for u, lst in recs.items() for i, it in enumerate(lst)]
    table = pd.DataFrame(rows, columns=["uid", "iid", "s"]).sample(frac=1, random_state=0)
    tt = pd.DataFrame([(u, it) for u, lst in truth.items() for it in lst], columns=["uid", "iid"])
    pr = pr_curve(table, tt, user_col="uid", item_col="iid", score_col="s")
    assert pr["precision"].to_numpy() == pytest.approx(pr_curve(recs, truth)["precision"])


def test_interpolated_precision_edge_cases() -> None:
    assert interpolated_precision(np.zeros((2, 0)), np.zeros((2, 0))).shape == (2, 11)
    out = interpolated_precision(np.array([[0.0, 0.0]]), np.array([[0.0, 0.0]]))
    assert out.tolist() == [[0.0] * 11]


# --------------------------------------------------------------------------- ROC


def pair_auc(score: np.ndarray, label: np.ndarray) -> float:
    """O(n²): share of (positive, negative) pairs ordered correctly, ties ½."""
    pos, neg = score[label], score[~label]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def scored_run(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(50):
        items = rng.choice(40, int(rng.integers(1, 15)), replace=False)
        rows += [(u, int(i), float(rng.integers(0, 10))) for i in items]  # many ties
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(0, 55, 400),
            "item": rng.integers(0, 40, 400),
            "relevance": rng.integers(0, 4, 400),
        }
    ).drop_duplicates(["user", "item"])
    return recs, truth


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [1, 2])
def test_roc_auc_matches_pair_count(seed: int, threshold: int) -> None:
    recs, truth = scored_run(seed)
    table, auc = roc(recs, truth, threshold=threshold)
    rel = truth[truth.relevance >= threshold]
    label = recs.merge(rel, on=["user", "item"], how="left")["relevance"].notna().to_numpy()
    assert auc == pytest.approx(pair_auc(recs["score"].to_numpy(), label), rel=1e-12)
    assert list(table.columns) == ["fpr", "tpr", "threshold"]
    assert table.iloc[0].tolist() == [0.0, 0.0, math.inf]
    assert table.iloc[-1][["fpr", "tpr"]].tolist() == [1.0, 1.0]
    assert (np.diff(table["fpr"]) >= 0).all() and (np.diff(table["tpr"]) >= 0).all()
    assert len(table) == recs["score"].nunique() + 1  # one step per distinct score


def test_roc_hand_worked_and_row_order() -> None:
    recs = pd.DataFrame({"user": [1, 1, 1, 2], "item": [1, 2, 3, 1], "score": [0.9, 0.5, 0.5, 0.1]})
    table, auc = roc(recs, {1: [1, 3], 2: [2]})
    assert auc == pytest.approx(3.5 / 4)
    assert table["tpr"].tolist() == [0.0, 0.5, 1.0, 1.0]
    _, again = roc(recs.iloc[::-1], {1: [1, 3], 2: [2]})
    assert again == auc


def test_roc_ids_as_strings_on_one_side() -> None:
    recs = pd.DataFrame({"user": [1, 1], "item": [1, 2], "score": [2.0, 1.0]})
    truth = pd.DataFrame({"user": ["1"], "item": ["1"]})
    assert roc(recs, truth)[1] == 1.0


def test_roc_one_class_is_nan() -> None:
    recs = pd.DataFrame({"user": [1, 1], "item": [1, 2], "score": [2.0, 1.0]})
    table, auc = roc(recs, {1: [5]})
    assert math.isnan(auc) and table["tpr"].isna().all()
    assert math.isnan(roc_auc(np.array([0.0]), np.array([0.0])))
    _, _, thr = roc_points(np.array([]), np.array([], dtype=bool))
    assert thr.tolist() == [math.inf]


def test_roc_duplicates_keep() -> None:
    recs = pd.DataFrame({"user": [1, 1, 1], "item": [1, 1, 2], "score": [3.0, 0.0, 1.0]})
    truth = pd.DataFrame({"user": [1, 1], "item": [1, 1], "relevance": [0, 2]})
    assert roc(recs, truth, duplicates="keep")[1] == 1.0


@pytest.mark.parametrize("mode", ["count", "count_distinct"])
def test_roc_duplicates_count_keeps_every_scored_row(mode: str) -> None:
    # item 1 scored twice (3.0 and 0.0, both positive), item 2 once (1.0, negative):
    # pairs (pos, neg) = (3 > 1) and (0 < 1): AUC 1/2, where keep reads 1.0
    recs = pd.DataFrame({"user": [1, 1, 1], "item": [1, 1, 2], "score": [3.0, 0.0, 1.0]})
    truth = pd.DataFrame({"user": [1, 1], "item": [1, 1], "relevance": [0, 2]})
    curve, auc = roc(recs, truth, duplicates=mode)
    assert auc == 0.5
    assert curve["tpr"].tolist() == [0.0, 0.5, 0.5, 1.0]


@pytest.mark.parametrize("mode", ["join", "left_join"])
def test_roc_refuses_joined_duplicates(mode: str) -> None:
    recs = pd.DataFrame({"user": [1], "item": [1], "score": [1.0]})
    with pytest.raises(OptionError, match=f"duplicates='{mode}'"):
        roc(recs, {1: [1]}, duplicates=mode)


ROC_ERRORS = [
    (lambda: roc({"u": [1, 2]}, {"u": [1]}), ReceValError, "needs scores"),
    (
        lambda: roc(pd.DataFrame({"user": [1], "item": [1], "rank": [1]}), {1: [1]}),
        InputError,
        "needs scores: no score column",
    ),
    (
        lambda: roc(pd.DataFrame({"user": [1, 1], "item": [2, 2], "score": [1.0, 2.0]}), {1: [1]}),
        InputError,
        "row 1, user 1, item 2: the same item twice",
    ),
    (
        lambda: roc(
            pd.DataFrame({"user": [1], "item": [2], "score": [1.0]}),
            pd.DataFrame({"user": [1, 1], "item": [2, 2]}),
        ),
        InputError,
        "truth, row 0, user 1, item 2: the same .user, item. twice",
    ),
    (
        lambda: roc(pd.DataFrame({"user": [1], "item": [2], "score": [np.nan]}), {1: [1]}),
        InputError,
        "row 0",
    ),
    (
        lambda: roc(pd.DataFrame({"user": [], "item": [], "score": []}), {1: [1]}),
        InputError,
        "empty",
    ),
    (
        lambda: roc(
            pd.DataFrame({"user": [1], "item": [2], "score": [1.0]}), {1: [1]}, duplicates="drop"
        ),
        ReceValError,
        "duplicates=.drop. is not allowed: expected one of .error., .keep.",
    ),
]


@pytest.mark.parametrize("call, exc, match", ROC_ERRORS, ids=range(len(ROC_ERRORS)))
def test_roc_errors(call, exc, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=match):
        call()


CONFORMANCE = TREC_FILES


def _trec(name: str, columns: list[str]) -> pd.DataFrame:
    frame = pd.read_csv(
        CONFORMANCE / name,
        sep=r"\s+",
        header=None,
        names=columns,
        dtype={"user": str, "item": str},
        usecols=range(len(columns)),
    )
    return frame[~frame["user"].str.startswith("#")]


@pytest.mark.trec_files
@pytest.mark.parametrize(
    "results, qrels, expected_file",
    [
        ("results.test", "qrels.test", "out.test"),
        ("results.comment.test", "qrels.comment.test", "out.comment.test"),
    ],
)
def test_pr_curve_matches_trec_eval_iprec_at_recall(
    results: str, qrels: str, expected_file: str
) -> None:
    # trec_eval orders by score descending, ties by document id descending (as strings),
    # evaluates only topics of both the run and the qrels (no -c), and counts topics
    # without a relevant document 0
    run = _trec(results, ["user", "q0", "item", "rank0", "score"])
    run = run.astype({"score": float}).sort_values(
        ["user", "score", "item"], ascending=[True, False, False]
    )
    run["rank"] = run.groupby("user").cumcount() + 1
    truth = _trec(qrels, ["user", "iter", "item", "relevance"]).astype({"relevance": float})
    run = run[run["user"].isin(set(truth["user"]))]
    expected = {}
    for line in (CONFORMANCE / expected_file).read_text().splitlines():
        name, topic, value = line.split()
        if name.startswith("iprec_at_recall_") and topic == "all":
            expected[float(name.rsplit("_", 1)[1])] = float(value)
    assert len(expected) == 11
    recs, truth = run[["user", "item", "rank"]], truth[["user", "item", "relevance"]]
    opts = {"missing_recs": "skip", "empty_truth": "zero"}
    pr = pr_curve(recs, truth, recall_cutoff="trec_eval", **opts)
    assert pr["precision"].tolist() == pytest.approx(
        [expected[r] for r in pr["recall"].round(2)], abs=5.1e-5
    )
    # the exact rule (recall >= r) never gives more than trec_eval's rounding
    exact = pr_curve(recs, truth, **opts)["precision"].to_numpy()
    assert (exact <= pr["precision"].to_numpy() + 1e-12).all()
    if results == "results.test":  # topic 302: R = 77, 23 relevant found reach 0.3
        assert exact[3] < pr["precision"].iloc[3] - 0.01


def test_pr_curve_recall_cutoff_rounding() -> None:
    # R = 3, hits at ranks 1, 3, 5. Relevant items needed for level r: exact ceil(3r);
    # trec_eval int(3r + 0.5): 0.4 → 1 (not 2), 0.7 and 0.8 → 2 (not 3)
    recs, truth = {"u": [1, 9, 2, 8, 3]}, {"u": [1, 2, 3]}
    exact = pr_curve(recs, truth)["precision"].round(4).tolist()
    trec = pr_curve(recs, truth, recall_cutoff="trec_eval")["precision"].round(4).tolist()
    assert exact == [1.0, 1.0, 1.0, 1.0, 0.6667, 0.6667, 0.6667, 0.6, 0.6, 0.6, 0.6]
    assert trec == [1.0, 1.0, 1.0, 1.0, 1.0, 0.6667, 0.6667, 0.6667, 0.6667, 0.6, 0.6]
    with pytest.raises(ReceValError, match="recall_cutoff must be one of"):
        pr_curve(recs, truth, recall_cutoff="ceil")
