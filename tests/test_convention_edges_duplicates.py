"""Repeated rows as the tools count them (issue #34, point 6): ``duplicates="count"``,
``"count_distinct"``, ``"join"`` and ``"left_join"``.

Under ``duplicates="count"`` every row counts: an item twice in a list is two
positions and, when relevant, two hits; a (user, item) pair twice in the truth
is two relevant items (R and the ideal count truth rows; a listed item reads
the pair's largest grade). The known values below were computed by running
each tool in its conformance venv (``tests/conformance/test_duplicates_edges.py``
runs the tools on random workloads with repeats):

- LensKit 2025.8.1 (the ``lenskit`` convention's default):
  ``lenskit/metrics/ranking/_pr.py`` ``Precision.measure_list`` /
  ``Recall.measure_list`` (``recs.isin(test).sum()``, ``nrel = len(test)``),
  ``_map.py`` ``AveragePrecision.measure_list`` (``good = recs.isin(test)``,
  ``min(len(test), len(recs))``), ``_dcg.py`` (``recs.isin(test)``;
  ``fixed_dcg(min(len(test), k))``), ``_recip.py``: each list row is tested on
  its own, and ``len(test)`` counts the test list's rows.
- RePlay 0.22, ``replay/metrics/map.py``, ``ndcg.py``, ``mrr.py``,
  ``hitrate.py``: each row of the sorted prediction list is tested on its own
  and the ideal / ``min(k, len(ground_truth))`` counts ground-truth rows, as
  ``count`` does; its Precision and Recall count distinct items
  (``set(pred[:k]) & set(ground_truth)``): ``count_distinct``, the ``replay``
  convention's default.
- RecTools 0.19, ``rectools/metrics/base.py`` ``merge_reco`` (the interactions
  left-joined with the recommendations), ``classification.py``
  ``calc_confusions``, ``ranking.py`` ``MAP.fit`` / ``NDCG`` / ``MRR``: every
  (interaction row, recommendation row) pair is a hit and the joined rows are
  what Recall, MAP and the achievable nDCG divide by: ``left_join``, the
  ``rectools`` convention's default. Its own tests
  (``tests/metrics/test_ranking.py``, ``test_when_duplicates_in_interactions``
  of ``TestMAP`` and ``TestMRR``) pin MAP@3 = [3.5/3, 1] and MRR@3 = [1, 0].
- Microsoft Recommenders 1.2.1, ``python_evaluation.py``
  ``merge_ranking_true_pred`` (an inner join: every pair a hit, R the truth
  rows), ``_get_reciprocal_rank`` (a term per pair) and ``ndcg_at_k`` (the
  pairs joined once more with the predictions and the truth): ``join``, the
  ``recommenders`` convention's default. Its ``tests/unit/recommenders/
  evaluation/test_python_evaluation.py`` lines 245, 293, 307 (and recall's
  test): the fixture ``rating_nohit`` (``conftest.py``: item 100 listed 18
  times) gives 0 for every metric.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError
from receval.evaluation.conventions import get

NAMES = [
    f"{m}@{k}" for k in (2, 4) for m in ("precision", "recall", "ap", "ndcg", "rr", "hit_rate")
]


def _summary(res: receval.Result, names: list[str], conv: str) -> dict[str, float]:
    params = get(conv).params
    return {n: res.summary[str(receval.parse_metric(n, params))] for n in names}


def _one(lst: list[int], truth: list[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One user's list (scores descending in list order) and truth rows."""
    recs = pd.DataFrame({"user": 1, "item": lst, "score": [10.0 - n for n in range(len(lst))]})
    return recs, pd.DataFrame({"user": 1, "item": truth})


# --- LensKit: the lenskit convention counts every row -------------------------

#: (list, test rows) → LensKit 2025.8.1's numbers (run in .conformance/lenskit)
LENSKIT: list[tuple[list[int], list[int], dict[str, float]]] = [
    (
        [1, 2, 1, 3],
        [1, 3],
        {
            "precision@2": 0.5, "recall@2": 0.5, "ap@2": 0.5, "ndcg@2": 0.5, "rr@2": 1.0,
            "hit_rate@2": 1.0, "precision@4": 0.75, "recall@4": 1.5,
            "ap@4": 1.2083333333333333, "ndcg@4": 1.0654648767857287, "rr@4": 1.0,
            "hit_rate@4": 1.0,
        },
    ),
    (
        [2, 1, 1, 3],
        [1, 3],
        {
            "precision@2": 0.5, "recall@2": 0.5, "ap@2": 0.25, "ndcg@2": 0.5, "rr@2": 0.5,
            "hit_rate@2": 1.0, "precision@4": 0.75, "recall@4": 1.5,
            "ap@4": 0.9583333333333333, "ndcg@4": 1.0654648767857287, "rr@4": 0.5,
            "hit_rate@4": 1.0,
        },
    ),
    (
        [1, 2, 3],
        [1, 1, 3],
        {
            "precision@2": 0.5, "recall@2": 0.5, "ap@2": 0.5, "ndcg@2": 0.5, "rr@2": 1.0,
            "hit_rate@2": 1.0, "precision@4": 2 / 3, "recall@4": 2 / 3,
            "ap@4": 0.5555555555555555, "ndcg@4": 0.6199062332840657, "rr@4": 1.0,
            "hit_rate@4": 1.0,
        },
    ),
    (
        [2, 1],
        [1, 1],
        {
            "precision@2": 0.5, "recall@2": 0.5, "ap@2": 0.25, "ndcg@2": 0.5, "rr@2": 0.5,
            "hit_rate@2": 1.0, "precision@4": 0.5, "recall@4": 0.5, "ap@4": 0.25,
            "ndcg@4": 0.5, "rr@4": 0.5, "hit_rate@4": 1.0,
        },
    ),
    (
        [5, 5, 1],
        [1],
        {
            "precision@2": 0.0, "recall@2": 0.0, "ap@2": 0.0, "ndcg@2": 0.0, "rr@2": 0.0,
            "hit_rate@2": 0.0, "precision@4": 1 / 3, "recall@4": 1.0, "ap@4": 1 / 3,
            "ndcg@4": 0.6309297535714574, "rr@4": 1 / 3, "hit_rate@4": 1.0,
        },
    ),
]  # fmt: skip


@pytest.mark.parametrize(("lst", "truth", "known"), LENSKIT)
def test_lenskit_counts_every_row(lst: list[int], truth: list[int], known: dict) -> None:
    recs, tr = _one(lst, truth)
    res = receval.evaluate(recs, tr, NAMES, convention="lenskit")
    assert res.parameters["duplicates"] == "count"
    assert _summary(res, NAMES, "lenskit") == pytest.approx(known, abs=1e-12)


# --- RePlay: AP, nDCG, RR and HitRate count every row -------------------------

#: (list, ground-truth rows) → RePlay 0.22's MAP, NDCG, MRR, HitRate (run in .conformance/replay)
REPLAY: list[tuple[list[int], list[int], dict[str, float]]] = [
    (
        [1, 2, 1, 3],
        [1, 3],
        {
            "ap@2": 0.5, "ap@4": 1.2083333333333333, "ndcg@2": 0.6131471927654584,
            "ndcg@4": 1.1837889117207785, "rr@2": 1.0, "rr@4": 1.0, "hit_rate@2": 1.0,
            "hit_rate@4": 1.0,
        },
    ),
    (
        [2, 1, 1, 3],
        [1, 3],
        {
            "ap@2": 0.25, "ap@4": 0.9583333333333333, "ndcg@2": 0.38685280723454163,
            "ndcg@4": 0.9574945261898617, "rr@2": 0.5, "rr@4": 0.5, "hit_rate@2": 1.0,
            "hit_rate@4": 1.0,
        },
    ),
    (
        [1, 2, 1],
        [1, 1, 3],
        {
            "ap@2": 0.5, "ap@4": 0.5555555555555555, "ndcg@2": 0.6131471927654584,
            "ndcg@4": 0.7039180890341347, "rr@2": 1.0, "rr@4": 1.0, "hit_rate@2": 1.0,
            "hit_rate@4": 1.0,
        },
    ),
    (
        [5, 5, 1],
        [1],
        {
            "ap@2": 0.0, "ap@4": 0.3333333333333333, "ndcg@2": 0.0, "ndcg@4": 0.5,
            "rr@2": 0.0, "rr@4": 0.3333333333333333, "hit_rate@2": 0.0, "hit_rate@4": 1.0,
        },
    ),
]  # fmt: skip


@pytest.mark.parametrize(("lst", "truth", "known"), REPLAY)
def test_replay_rank_metrics_count_every_row(lst: list[int], truth: list[int], known: dict) -> None:
    recs, tr = _one(lst, truth)
    res = receval.evaluate(recs, tr, list(known), convention="replay", duplicates="count")
    assert _summary(res, list(known), "replay") == pytest.approx(known, abs=1e-12)


# --- Microsoft Recommenders: rating_nohit --------------------------------------


def test_recommenders_rating_nohit_is_zero() -> None:
    """recommenders tests/unit/recommenders/evaluation/conftest.py: rating_true
    and rating_nohit (item 100, 18 rows: 3, 5 and 10 per user); its
    test_python_evaluation.py pins 0 for precision, recall, MAP and nDCG at 10."""
    true = pd.DataFrame(
        {
            "user": [1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1],
            "item": [3, 1, 4, 5, 6, 7, 2, 5, 6, 8, 9, 10, 11, 12, 13, 14, 1, 2],
            "relevance": [3, 5, 5, 3, 3, 1, 5, 5, 5, 4, 4, 3, 3, 3, 2, 1, 5, 4],
        }
    )
    users = [1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1]
    scores = [12, 14, 13, 12, 11, 10, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 14, 13]
    nohit = pd.DataFrame({"user": users, "item": 100, "score": [float(s) for s in scores]})
    names = ["precision@10", "recall@10", "ap@10", "ndcg@10"]
    res = receval.evaluate(nohit, true, names, convention="recommenders")  # join
    assert res.parameters["duplicates"] == "join"
    assert list(_summary(res, names, "recommenders").values()) == [0.0, 0.0, 0.0, 0.0]
    assert res.counts["recommendation_rows_duplicate_joined"] == 15
    res = receval.evaluate(nohit, true, names, convention="recommenders", duplicates="count")
    assert list(_summary(res, names, "recommenders").values()) == [0.0, 0.0, 0.0, 0.0]
    assert res.counts["recommendation_rows_duplicate_counted"] == 15
    with pytest.raises(InputError, match="appears twice"):
        receval.evaluate(nohit, true, names, convention="recommenders", duplicates="error")


# --- RecTools: left_join -------------------------------------------------------


def test_rectools_own_tests_pin_map_and_mrr() -> None:
    """RecTools 0.19 tests/metrics/test_ranking.py, test_when_duplicates_in_interactions:
    user 1's interactions hold item 1 twice, so rank 1 holds two pairs: MAP@3 =
    (2/1 + 3/2) / 3 joined rows; MRR@3 of user 2 (ranks 4..6) is 0."""
    inter = pd.DataFrame({"user": [1, 1, 1, 2, 2, 2], "item": [1, 2, 1, 1, 2, 3]})
    reco = pd.DataFrame({"user": [1, 1, 1, 2, 2, 2], "item": [1, 2, 3, 1, 2, 3]})
    res = receval.evaluate(
        reco.assign(rank=[1, 2, 3, 1, 2, 3]), inter, ["map@3"], convention="rectools"
    )
    assert res.parameters["duplicates"] == "left_join"
    col = "ap@3[denominator=relevant]"
    assert res.per_user[col].tolist() == pytest.approx([3.5 / 3, 3 / 3], abs=1e-15)
    assert res.counts["truth_rows_duplicate_joined"] == 1
    res = receval.evaluate(
        reco.assign(rank=[1, 2, 3, 4, 5, 6]), inter, ["mrr@3"], convention="rectools"
    )
    assert res.per_user["rr@3"].tolist() == [1.0, 0.0]


#: a, b, a, c (scores 4..1) against truth rows a, a, c, d: position 1 and 3
#: hold two pairs each (a is twice in the truth), position 4 one.
HAND_RECS = pd.DataFrame({"user": 1, "item": ["a", "b", "a", "c"], "score": [4.0, 3, 2, 1]})
HAND_TRUTH = pd.DataFrame({"user": 1, "item": ["a", "a", "c", "d"]})
_D = [1 / math.log2(i + 1) for i in range(1, 5)]


def test_left_join_hand_worked() -> None:
    """RecTools (run in .conformance/rectools on this case gives these): 5 pairs
    in the top 4; the left join has 6 rows (a's two truth rows each meet two list
    rows; c one; d none, kept once); MAP adds (pairs up to i) / i once per rank."""
    names = ["precision@4", "recall@4", "map@4", "map@2", "ndcg@4", "ndcg@4[ideal=relevant]",
             "recall@4[denominator=min_k_relevant]", "mrr@4", "hr@4"]  # fmt: skip
    res = receval.evaluate(HAND_RECS, HAND_TRUTH, names, convention="rectools")
    dcg = 2 * _D[0] + 2 * _D[2] + _D[3]
    want = [5 / 4, 5 / 6, (2 / 1 + 4 / 3 + 5 / 4) / 6, (2 / 1) / 6, dcg / sum(_D),
            dcg / sum(_D), 5 / 4, 1.0, 1.0]  # fmt: skip
    assert list(_summary(res, names, "rectools").values()) == pytest.approx(want, abs=1e-12)
    assert want[2] == pytest.approx(0.7638888888888888, abs=1e-15)  # RecTools' MAP(4)
    assert res.counts["recommendation_rows_duplicate_joined"] == 1
    assert res.counts["truth_rows_duplicate_joined"] == 1


def test_join_hand_worked() -> None:
    """Microsoft Recommenders (run in .conformance/recommenders on this case
    gives these): 5 pairs in the top 4, R = 4 truth rows; map_at_k's c-th pair
    at rank i adds (pairs above + c) / i; ndcg_at_k's rows joined twice: rank 1
    and 3 gain 2² × 2 (a listed twice), rank 4 gains 1, and the ideal holds
    18 such rows (8 + 8 + 1 + d's one), cut at 4."""
    names = ["precision@4", "recall@4", "map@4", "map@2", "ndcg@4", "ndcg@2"]
    res = receval.evaluate(HAND_RECS, HAND_TRUTH, names, convention="recommenders")
    ap4 = (1 + 2 + 3 / 3 + 4 / 3 + 5 / 4) / 4
    want = [5 / 4, 5 / 4, ap4, (1 + 2) / 2, (8 * _D[0] + 8 * _D[2] + _D[3]) / sum(_D),
            8 * _D[0] / (_D[0] + _D[1])]  # fmt: skip
    assert list(_summary(res, names, "recommenders").values()) == pytest.approx(want, abs=1e-12)
    assert want[4] == pytest.approx(4.852688136176337, abs=1e-12)  # Recommenders' ndcg_at_k
    with pytest.raises(ValueError, match="gain=binary"):  # score_type='raw' with repeats
        receval.evaluate(HAND_RECS, HAND_TRUTH, ["ndcg@4[gain=linear]"], convention="recommenders")


def test_joins_refuse_what_they_do_not_reproduce() -> None:
    """Errors, not numbers no tool gives: nDCG's rows joined twice with mixed
    grades, and scores=positive with pairs as hits."""
    graded = HAND_TRUTH.assign(relevance=[2, 1, 1, 1])  # a's two rows: grades 2 and 1
    with pytest.raises(ValueError, match="gain=binary"):
        receval.evaluate(HAND_RECS, graded, ["ndcg@4"], duplicates="join")
    same = receval.evaluate(HAND_RECS, HAND_TRUTH, ["ndcg@4"], duplicates="join")  # grades 1
    assert same.summary["ndcg@4"] == pytest.approx(4.852688136176337, abs=1e-12)
    with pytest.raises(ValueError, match="scores=positive"):
        receval.evaluate(HAND_RECS, HAND_TRUTH, ["precision@4[scores=positive]"], duplicates="join")


def test_count_distinct_hand_worked() -> None:
    """RePlay (run in .conformance/replay on this case gives these): Precision
    and Recall count the distinct items a and c; MAP counts rows (hits at 1, 3, 4)
    over min(k, 4 ground-truth rows)."""
    names = ["precision@4", "recall@4", "precision@2", "recall@2", "map@4", "ndcg@4"]
    res = receval.evaluate(HAND_RECS, HAND_TRUTH, names, convention="replay")
    assert res.parameters["duplicates"] == "count_distinct"
    ndcg = (_D[0] + _D[2] + _D[3]) / sum(_D)
    want = [2 / 4, 2 / 3, 1 / 2, 1 / 3, (1 + 2 / 3 + 3 / 4) / 4, ndcg]
    assert list(_summary(res, names, "replay").values()) == pytest.approx(want, abs=1e-12)
    assert res.counts["recommendation_rows_duplicate_counted"] == 1


# --- hand-worked ---------------------------------------------------------------


def test_hand_worked_default_metrics() -> None:
    """a, b, a, c against a (grade 3 and 1) and c (1): positions 1, 3 and 4 are
    hits (a reads its largest grade, 3); R = 3 truth rows; the ideal holds the
    three rows' grades 3, 1, 1."""
    recs = pd.DataFrame({"user": 1, "item": ["a", "b", "a", "c"], "score": [4.0, 3, 2, 1]})
    truth = pd.DataFrame({"user": 1, "item": ["a", "a", "c"], "relevance": [3, 1, 1]})
    names = ["precision@4", "recall@4", "ap@4", "rr@4", "hit_rate@4", "ndcg@4"]
    res = receval.evaluate(recs, truth, names, duplicates="count")
    d = [1 / math.log2(i + 1) for i in range(1, 5)]
    dcg = 3 * d[0] + 3 * d[2] + d[3]  # linear gains (the default)
    idcg = 3 * d[0] + d[1] + d[2]
    want = [3 / 4, 3 / 3, (1 + 2 / 3 + 3 / 4) / 3, 1.0, 1.0, dcg / idcg]
    assert [res.summary[n] for n in names] == pytest.approx(want, abs=1e-12)
    assert res.counts["recommendation_rows_duplicate_counted"] == 1
    assert res.counts["truth_rows_duplicate_counted"] == 1
    assert "recommendation_rows_duplicate_dropped" not in res.counts
    keep = receval.evaluate(recs, truth, ["precision@4"], duplicates="keep")
    assert keep.summary["precision@4"] == 2 / 4  # keep: b, a, c (a once)
    with pytest.raises(InputError, match="appears twice"):
        receval.evaluate(recs, truth, ["precision@4"])  # the receval convention: error


def test_the_option_and_the_conventions() -> None:
    assert get("lenskit").duplicates == "count"
    assert get("replay").duplicates == "count_distinct"
    assert get("rectools").duplicates == "left_join"
    assert get("recommenders").duplicates == "join"
    for name in ("receval", "trec_eval", "ranx", "torchmetrics", "mllib", "recbole"):
        assert get(name).duplicates == "error"
    for mode in ("count_distinct", "join", "left_join"):  # without repeats: the plain numbers
        recs, truth = _random_rows(3)
        recs = recs.drop_duplicates(["user", "item"])
        truth = truth.drop_duplicates()
        plain = receval.evaluate(recs, truth, DOOR_NAMES)
        assert receval.evaluate(recs, truth, DOOR_NAMES, duplicates=mode).summary == plain.summary
    res = receval.evaluate(*_one([1, 2], [1]), ["precision@2"], convention="lenskit")
    assert res.parameters["duplicates"] == "count"
    with pytest.raises(ValueError, match="count"):
        receval.evaluate(*_one([1, 2], [1]), ["precision@2"], duplicates="twice")  # type: ignore[arg-type]


# --- a slow literal reference --------------------------------------------------


def _random_rows(seed: int, n_users: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lists and truth with repeated items (distinct scores within a list)."""
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for u in range(n_users):
        n = int(rng.integers(1, 9))
        items = rng.integers(0, 8, n)  # repeats within a list are common
        scores = rng.permutation(n) + 0.5
        rows += [(u, int(i), float(s)) for i, s in zip(items, scores, strict=True)]
        truth += [(u, int(i)) for i in rng.integers(0, 8, int(rng.integers(1, 5)))]
    return (
        pd.DataFrame(rows, columns=["user", "item", "score"]),
        pd.DataFrame(truth, columns=["user", "item"]),
    )


def _literal(recs: pd.DataFrame, truth: pd.DataFrame, k: int) -> dict[str, float]:
    """LensKit's formulas, row by row: every list row tested on its own against
    the test rows; |test| counts rows; the NDCG discount clipped (jarvelin)."""
    per: dict[str, list[float]] = {m: [] for m in ("precision", "recall", "ap", "ndcg", "rr")}
    for u, g in recs.groupby("user"):
        test = truth.loc[truth.user == u, "item"].tolist()
        ranked = g.sort_values("score", ascending=False)["item"].tolist()[:k]
        good = [i in test for i in ranked]
        hits = sum(good)
        per["precision"].append(hits / len(ranked))
        per["recall"].append(hits / min(len(test), k))
        cum = np.cumsum(good)
        ap = sum(cum[j] / (j + 1) for j in range(len(ranked)) if good[j])
        per["ap"].append(ap / min(len(test), len(ranked)))
        w = [1 / max(1.0, math.log2(j + 1)) for j in range(k)]
        dcg = sum(w[j] for j in range(len(ranked)) if good[j])
        per["ndcg"].append(dcg / sum(w[: min(len(test), k)]))
        per["rr"].append(next((1 / (j + 1) for j in range(len(ranked)) if good[j]), 0.0))
    return {f"{m}@{k}": float(np.mean(v)) for m, v in per.items()}


def test_the_slow_reference_agrees() -> None:
    recs, truth = _random_rows(5)
    names = [f"{m}@{k}" for k in (3, 5) for m in ("precision", "recall", "ap", "ndcg", "rr")]
    got = _summary(receval.evaluate(recs, truth, names, convention="lenskit"), names, "lenskit")
    want = _literal(recs, truth, 3) | _literal(recs, truth, 5)
    assert got == pytest.approx(want, abs=1e-12)


def _literal_joined(recs: pd.DataFrame, truth: pd.DataFrame, k: int, mode: str) -> dict:
    """``count_distinct``, ``join`` and ``left_join`` under receval's default
    parameters, pair by pair: m(x) the user's truth rows of x, p(x) its list rows."""
    per: dict[str, list[float]] = {m: [] for m in ("precision", "recall", "ap", "ndcg", "rr")}
    for u, g in recs.groupby("user"):
        test = truth.loc[truth.user == u, "item"].tolist()
        full = g.sort_values("score", ascending=False)["item"].tolist()
        top = full[:k]
        m = [test.count(i) for i in top]
        disc = [1 / math.log2(j + 2) for j in range(k)]
        if mode == "count_distinct":
            found = {i for i in top if i in test}
            per["precision"].append(len(found) / k)
            per["recall"].append(len(found) / len(set(test)))
            m = [min(x, 1) for x in m]  # the other metrics count rows (count)
        else:
            per["precision"].append(sum(m) / k)
        r = len(test) if mode != "left_join" else sum(max(1, full.count(t)) for t in test)
        if mode != "count_distinct":
            per["recall"].append(sum(m) / r)
        ap, before = 0.0, 0
        for j, mj in enumerate(m):
            if mode == "join":  # one term per pair
                ap += sum((before + c) / (j + 1) for c in range(1, mj + 1))
            elif mj:
                ap += (before + mj) / (j + 1)
            before += mj
        per["ap"].append(ap / min(k, r))
        if mode == "join":  # the pairs joined again with the list's and the truth's rows
            gains = [mj * mj * full.count(i) for i, mj in zip(top, m, strict=True)]
            seen = {i for i in top if i in test}
            rows = sum(gains) + sum(1 for t in test if t not in seen)
            ideal = sum(disc[: min(k, rows)])
        else:
            gains, ideal = m, sum(disc[: min(k, r)])
        per["ndcg"].append(sum(x * d for x, d in zip(gains, disc, strict=False)) / ideal)
        per["rr"].append(next((1 / (j + 1) for j, mj in enumerate(m) if mj), 0.0))
    return {f"{name}@{k}": float(np.mean(v)) for name, v in per.items()}


@pytest.mark.parametrize("mode", ["count_distinct", "join", "left_join"])
def test_the_slow_reference_agrees_on_joins(mode: str) -> None:
    recs, truth = _random_rows(8)
    names = [f"{m}@{k}" for k in (3, 5) for m in ("precision", "recall", "ap", "ndcg", "rr")]
    res = receval.evaluate(recs, truth, names, duplicates=mode)
    want = _literal_joined(recs, truth, 3, mode) | _literal_joined(recs, truth, 5, mode)
    assert res.summary == pytest.approx(want, abs=1e-12)
    why = "counted" if mode == "count_distinct" else "joined"
    assert res.counts["recommendation_rows_duplicate_" + why] > 0
    assert res.counts["truth_rows_duplicate_" + why] > 0


# --- every door gives the same number ------------------------------------------

DOOR_NAMES = ["precision@3", "recall@5", "ap@5", "ndcg@5", "rr@3", "hit_rate@3"]
#: (convention, duplicates) run through every door
DOOR_MODES = [
    ("lenskit", "count"),
    ("receval", "count"),
    ("replay", "count_distinct"),
    ("recommenders", "join"),
    ("rectools", "left_join"),
]


def test_files_and_accumulator_give_the_same_numbers(tmp_path: Path) -> None:
    recs, truth = _random_rows(6)
    truth["relevance"] = (truth.index % 3 + 1).astype(int)  # grades, a pair twice with two
    for conv, mode in DOOR_MODES:
        kw: dict[str, Any] = {"convention": conv, "duplicates": mode}
        local = receval.evaluate(recs, truth, DOOR_NAMES, **kw)
        why = "joined" if mode in ("join", "left_join") else "counted"
        assert local.counts["recommendation_rows_duplicate_" + why] > 0
        assert local.counts["truth_rows_duplicate_" + why] > 0
        recs.to_csv(tmp_path / "recs.csv", index=False)
        truth.to_csv(tmp_path / "truth.csv", index=False)
        recs.to_parquet(tmp_path / "recs.parquet", index=False)
        truth.to_parquet(tmp_path / "truth.parquet", index=False)
        for ext in ("csv", "parquet"):
            got = receval.evaluate(
                str(tmp_path / f"recs.{ext}"), str(tmp_path / f"truth.{ext}"), DOOR_NAMES, **kw
            )
            assert got.summary == local.summary, (conv, ext)
            for key in ("recommendation_rows_duplicate_", "truth_rows_duplicate_"):
                assert got.counts[key + why] == local.counts[key + why]
        acc = receval.Accumulator(DOOR_NAMES, **kw)  # each user's rows in one batch
        acc.update(recs[recs.user < 20], truth[truth.user < 20])
        acc.update(recs[recs.user >= 20], truth[truth.user >= 20])
        assert acc.compute().summary == local.summary, conv


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_spark_gives_the_same_numbers(spark: Any) -> None:
    """The Spark engine runs the same kernels on the same per-user batches."""
    recs, truth = _random_rows(7)
    for conv, mode in DOOR_MODES[::2] + DOOR_MODES[3:4]:
        kw = {"convention": conv, "duplicates": mode, "ties": "item"}  # no input order
        local = receval.evaluate(recs, truth, DOOR_NAMES, **kw)
        res = receval.evaluate(
            spark.createDataFrame(recs), spark.createDataFrame(truth), DOOR_NAMES, **kw
        )
        assert res.parameters["engine"] == "spark"
        assert res.summary == local.summary, conv
        why = "joined" if mode in ("join", "left_join") else "counted"
        for key in ("recommendation_rows_duplicate_", "truth_rows_duplicate_"):
            assert res.counts[key + why] == local.counts[key + why]
