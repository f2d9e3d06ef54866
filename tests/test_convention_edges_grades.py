"""Grades at the edges: LensKit's graded nDCG and negative grades per tool
(issue #34, point 6).

Each known value is the tool's own number on a tiny input, computed by the
tool in its conformance venv (``tests/conformance/test_grades_edges.py`` runs
the same edges on random workloads under ``-m conformance``):

- LensKit 2025.8.1, ``lenskit/metrics/ranking/_dcg.py`` ``NDCG.measure_list``
  with ``gain="rating"``: the DCG of the list's test items with their
  ratings as gains (``_graded_dcg``), over the ideal ``gains.nlargest(n=self.n)``
  of every test row (zero and negative ratings included) weighted by
  ``LogRankWeight`` (1 / max(1, log2 rank)). lkpy's own tests
  (``tests/eval/test_rank_ndcg.py``: ``test_ndcg_shorter_not_best``,
  ``test_ndcg_almost_perfect_k_gain``) pin 0.734431 and 0.777778.
- A negative grade: RecTools 0.19, RePlay 0.22, RecBole 1.2.1, MLlib and
  LensKit read no grades (every truth row is relevant: ``rectools/metrics/
  classification.py`` ``calc_confusions``; ``replay/metrics/base_metric.py``;
  ``recbole/evaluator/metrics.py`` ``pos_len``; ``RankingMetrics.scala``
  labels; ``lenskit/metrics/ranking/_pr.py`` ``recs.isin(test)``); Microsoft
  Recommenders 1.2.1 counts every truth row as a hit
  (``python_evaluation.py`` ``merge_ranking_true_pred``); ranx 0.3.21 keeps
  ``rel >= rel_lvl`` (``ranx/metrics/common.py`` ``clean_qrels``): not
  relevant; trec_eval: pooled but unjudged; torchmetrics 1.9.0 refuses it
  (``_check_retrieval_inputs``: "`target` must contain `binary` values").
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.evaluation.conventions import get

# --- A. LensKit's NDCG(gain="rating") ---------------------------------------

LK_TRUTH = {"u": {1: 3.0, 2: 5.0, 3: 4.0}}  # lkpy's truth: ItemList([1, 2, 3], rating=[3, 5, 4])

#: (list, metric, LensKit 2025.8.1's number)
LK_GRADED = [
    # test_ndcg_shorter_not_best: array_dcg([3, 5]) / array_dcg([5, 4, 3])
    ({"u": [1, 2]}, LK_TRUTH, "ndcg[gain=linear]", 0.7344308063364978),
    # test_ndcg_almost_perfect_k_gain: array_dcg([3, 4]) / array_dcg([5, 4]), n=2
    ({"u": [1, 3]}, LK_TRUTH, "ndcg@2[gain=linear]", 0.7777777777777778),
    # every rating negative: DCG / ideal of the same negative gains
    (
        {"u": [1, 2, 3, 4, 5]},
        {"u": dict(zip(range(1, 6), [-1, -2, -3, -4, -5], strict=True))},
        "ndcg[gain=linear]",
        1.0,
    ),
    # mixed signs: 2025.8.1 does not clip (later lkpy clips at 0 and pins 0.5982)
    (
        {"u": [1, 2, 3, 4, 5]},
        {"u": dict(zip(range(1, 6), [-6, -2, 3, 1, -3], strict=True))},
        "ndcg[gain=linear]",
        5.126044846526743,
    ),
    # a negative test item at rank 1: -1 / (2 + (-1))
    ({"u": [1, 2, 3]}, {"u": {1: -1.0, 9: 2.0}}, "ndcg@3[gain=linear]", -1.0),
    # a test item rated 0 gains 0, still one of the relevant ones
    ({"u": [1, 2, 3]}, {"u": {1: 0.0, 9: 2.0}}, "ndcg@3[gain=linear]", 0.0),
]


@pytest.mark.parametrize(("recs", "truth", "metric", "known"), LK_GRADED)
def test_lenskit_graded_ndcg_known_values(
    recs: dict[str, list[int]], truth: dict[str, dict[int, float]], metric: str, known: float
) -> None:
    res = receval.evaluate(recs, truth, metric, convention="lenskit")
    got = res.summary[str(receval.parse_metric(metric, get("lenskit").params))]
    assert got == pytest.approx(known, rel=1e-14, abs=1e-15)


#: an ideal DCG of exactly 0 (LensKit 2025.8.1 divides by it: NaN for 0/0, ±inf otherwise)
LK_ZERO_IDEAL = [
    # every rating 0: 0/0
    ({"u": ["a", "b", "c"]}, {"u": {"a": 0.0, "x": 0.0}}, "ndcg[gain=linear]", math.nan),
    # ideal 1·1 + (−1)·1 = 0 (both ranks undiscounted), the list gains −1
    ({"u": ["b"]}, {"u": {"a": 1.0, "b": -1.0}}, "ndcg[gain=linear]", -math.inf),
    ({"u": ["b"]}, {"u": {"a": 1.0, "b": -1.0}}, "ndcg@1[gain=linear]", -1.0),
    # the top rating is 0: the ideal @1 is 0, the list's first item gains −1
    ({"u": ["b", "c"]}, {"u": {"a": 0.0, "b": -1.0}}, "ndcg@1[gain=linear]", -math.inf),
    ({"u": ["b", "c"]}, {"u": {"a": 0.0, "b": -1.0}}, "ndcg[gain=linear]", 1.0),
]


@pytest.mark.parametrize(("recs", "truth", "metric", "known"), LK_ZERO_IDEAL)
def test_lenskit_divides_by_a_zero_ideal(
    recs: dict[str, list[str]], truth: dict[str, dict[str, float]], metric: str, known: float
) -> None:
    """zero_ideal=divide, the convention's (only with gain=linear/exp: a binary
    ideal is never 0); NaN is left out of the mean and counted as undefined."""
    res = receval.evaluate(recs, truth, metric, convention="lenskit")
    name = str(receval.parse_metric(metric, get("lenskit").params))
    assert "zero_ideal=divide" in name
    got = float(res.per_user[name].iloc[0])
    if math.isnan(known):
        assert math.isnan(got) and res.counts["undefined"] == {name: 1}
    else:
        assert got == known and res.summary[name] == known
    # receval's own reading (and zero_ideal=zero under the convention): 0
    plain = metric.replace("]", ",zero_ideal=zero]")
    zero = receval.evaluate(recs, truth, plain, convention="lenskit").per_user.iloc[0, 0]
    assert zero == (known if math.isfinite(known) else 0.0)


def test_zero_ideal_applies_only_with_graded_gains() -> None:
    """The convention's zero_ideal=divide is left out where gain=binary (the
    names of binary nDCG do not change); given by hand with it, an error."""
    params = get("lenskit").params
    assert str(receval.parse_metric("ndcg@3", params)) == "ndcg@3[discount=jarvelin,gain=binary]"
    with pytest.raises(receval.MetricError, match="zero_ideal= applies only with gain=linear"):
        receval.parse_metric("ndcg@3[gain=binary,zero_ideal=divide]")


def test_graded_gains_leave_relevance_binary() -> None:
    """gain=linear reads the grades as gains only: relevance stays every truth
    row (R, hits), and gain=binary is unchanged."""
    recs, truth = {"u": [1, 2, 3]}, {"u": {1: 0.0, 9: 2.0, 3: 5.0}}
    names = ["ndcg@3", "ndcg@3[gain=linear]", "recall@3", "precision@3"]
    res = receval.evaluate(recs, truth, names, convention="lenskit")
    s = {n: res.summary[str(receval.parse_metric(n, get("lenskit").params))] for n in names}
    assert s["recall@3"] == pytest.approx(2 / 3)  # items 1 and 3 of 3 (grade 0 relevant)
    assert s["precision@3"] == pytest.approx(2 / 3)
    assert s["ndcg@3"] == pytest.approx((1 + 1 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert s["ndcg@3[gain=linear]"] == pytest.approx((5 / math.log2(3)) / (5 + 2))
    # graded=False given under a graded convention keeps every gain 1 (SPEC)
    flat = receval.evaluate(recs, truth, ["ndcg@3", "ndcg@3[gain=exp]"], graded=False).summary
    assert (
        flat["ndcg@3"]
        == flat["ndcg@3[gain=exp]"]
        == pytest.approx(1.5 / (1.5 + 1 / math.log2(3)))  # log discount: 1 and 3 of 3
    )
    # a graded convention is unchanged: receval's own reads grade 0 as not relevant
    own = receval.evaluate(recs, truth, "ndcg@3[discount=jarvelin]").summary
    assert own["ndcg@3[discount=jarvelin]"] == pytest.approx((5 / math.log2(3)) / (5 + 2))


# --- B. negative grades, per tool ----------------------------------------------

NEG_RECS = {"u": [1, 2, 3]}  # scores 3, 2, 1
NEG_TRUTH = {"u": {1: -1, 9: 2}}
ZERO_TRUTH = {"u": {1: 0, 9: 2}}
NEG_METRICS = ["precision@3", "recall@3", "ndcg@3", "ap@3", "rr@3"]
#: the tools' numbers on NEG_TRUTH: (precision@3, recall@3, ndcg@3, ap@3, rr@3)
EVERY_ROW = {"precision@3": 1 / 3, "recall@3": 0.5, "ap@3": 0.5, "rr@3": 1.0}
NONE = dict.fromkeys(NEG_METRICS, 0.0)
NEG_KNOWN: dict[str, dict[str, float]] = {
    "rectools": EVERY_ROW | {"ndcg@3": 0.46927872602275644},
    "replay": EVERY_ROW | {"ndcg@3": 0.6131471927654584},
    "recbole": EVERY_ROW | {"ndcg@3": 0.613147192765458},
    "lenskit": EVERY_ROW | {"ndcg@3": 0.5},
    "mllib": {k: v for k, v in EVERY_ROW.items() if k != "rr@3"} | {"ndcg@3": 0.6131471927654584},
    "recommenders": {k: v for k, v in EVERY_ROW.items() if k != "rr@3"}
    | {"ndcg@3": 0.6131471927654584},
    "ranx": NONE,
    "trec_eval": NONE,
}
NEG_READING = {
    "rectools": "relevant",
    "replay": "relevant",
    "recbole": "relevant",
    "lenskit": "relevant",
    "mllib": "relevant",
    "recommenders": "relevant",
    "ranx": "nonrelevant",
    "trec_eval": "unjudged",
    "torchmetrics": "error",
    "receval": "error",
}


def _summary(res: receval.Result, names: list[str], conv: str) -> dict[str, float]:
    params = get(conv).params
    return {n: res.summary[str(receval.parse_metric(n, params))] for n in names}


@pytest.mark.parametrize("conv", sorted(NEG_KNOWN))
def test_negative_grade_as_the_tool_reads_it(conv: str) -> None:
    known = NEG_KNOWN[conv]
    res = receval.evaluate(NEG_RECS, NEG_TRUTH, list(known), convention=conv)
    assert _summary(res, list(known), conv) == pytest.approx(known, abs=1e-12)
    key = {"unjudged": "truth_rows_unjudged"}.get(
        NEG_READING[conv], f"truth_rows_negative_{NEG_READING[conv]}"
    )
    assert res.counts[key] == 1


@pytest.mark.parametrize("conv", sorted(set(NEG_KNOWN) - {"recommenders"}))
def test_a_zero_grade_as_the_tool_reads_it(conv: str) -> None:
    """A grade 0: relevant to the tools that read no grades, judged non-relevant
    to ranx and trec_eval (the same numbers as a negative grade). Recommenders
    counts it relevant, receval's recommenders convention does not (documented)."""
    known = NEG_KNOWN[conv]
    res = receval.evaluate(NEG_RECS, ZERO_TRUTH, list(known), convention=conv)
    assert _summary(res, list(known), conv) == pytest.approx(known, abs=1e-12)


def test_each_convention_default_and_the_errors() -> None:
    for conv, reading in NEG_READING.items():
        assert get(conv).negative_grades == reading, conv
        assert receval.EvalOptions(convention=conv).negative_grades == reading
    for conv in ("torchmetrics", "receval"):
        with pytest.raises(receval.InputError, match="non-negative"):
            receval.evaluate(NEG_RECS, NEG_TRUTH, "precision@3", convention=conv)
    # an explicit option wins over the convention
    res = receval.evaluate(
        NEG_RECS, NEG_TRUTH, "precision@3", convention="rectools", negative_grades="unjudged"
    )
    assert res.summary["precision@3"] == 0.0 and res.counts["truth_rows_unjudged"] == 1
    with pytest.raises(receval.OptionError, match="nonrelevant"):
        receval.EvalOptions(negative_grades="ignore")


def test_relevant_under_a_graded_convention() -> None:
    """negative_grades='relevant' with graded=True: the grade becomes
    max(threshold, 1) (gain 1 at the default threshold)."""
    res = receval.evaluate(NEG_RECS, NEG_TRUTH, ["ndcg@3", "recall@3"], negative_grades="relevant")
    assert res.summary["recall@3"] == 0.5
    assert res.summary["ndcg@3"] == pytest.approx(1 / (2 + 1 / math.log2(3)))
    res = receval.evaluate(NEG_RECS, NEG_TRUTH, "recall@3", negative_grades="relevant", threshold=2)
    assert res.summary["recall@3"] == 0.5  # read as grade 2: relevant at threshold 2


def test_the_cli_flag_takes_the_new_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = tmp_path / "recs.csv"
    truth = tmp_path / "truth.csv"
    recs.write_text("user,item,score\nu,1,3\nu,2,2\nu,3,1\n")
    truth.write_text("user,item,relevance\nu,1,-1\nu,9,2\n")
    got = {}
    for value in ("relevant", "nonrelevant", "unjudged"):
        code = main(
            [
                "evaluate",
                str(recs),
                str(truth),
                "-m",
                "recall@3",
                "--negative-grades",
                value,
                "--json",
            ]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        got[value] = out
    assert '"recall@3": 0.5' in got["relevant"]
    assert '"recall@3": 0.0' in got["nonrelevant"]
    assert '"truth_rows_negative_nonrelevant": 1' in got["nonrelevant"]


# --- a slow, literal reference on random data ---------------------------------


def _random_rows(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for u in range(40):
        n = int(rng.integers(1, 9))
        items = rng.choice(30, n, replace=False)
        scores = rng.permutation(n) + rng.random()  # distinct
        rows += [(u, int(i), float(s)) for i, s in zip(items, scores, strict=True)]
        m = int(rng.integers(1, 6))
        grades = rng.integers(-2, 5, m)
        grades[: min(m, 2)] = rng.integers(1, 5, min(m, 2))  # the graded ideal is not 0
        truth += [
            (u, int(i), int(g))
            for i, g in zip(rng.choice(30, m, replace=False), grades, strict=True)
        ]
    return (
        pd.DataFrame(rows, columns=["user", "item", "score"]),
        pd.DataFrame(truth, columns=["user", "item", "relevance"]),
    )


def _ref(recs: pd.DataFrame, truth: pd.DataFrame, reading: str, k: int) -> dict[str, float]:
    """Per user, one loop each, written from the definitions: binary relevance
    (every truth row relevant, a negative one as ``reading`` says) and LensKit's
    graded nDCG (gain = the grade as read, ideal = the largest k grades of the
    relevant rows, weights 1 / max(1, log2 rank))."""
    out: dict[str, list[float]] = {"recall": [], "ap": [], "ndcg_lin": [], "ndcg_exp": []}
    for u, t in truth.groupby("user"):
        grades = dict(zip(t["item"], t["relevance"], strict=True))
        rel = {i: g for i, g in grades.items() if g >= 0 or reading == "relevant"}
        r = recs[recs.user == u].sort_values("score", ascending=False)["item"].tolist()[:k]
        if not rel:
            continue
        hits = [i in rel for i in r]
        out["recall"].append(sum(hits) / min(k, len(rel)))
        prec = [sum(hits[: j + 1]) / (j + 1) for j, h in enumerate(hits) if h]
        out["ap"].append(sum(prec) / min(k, len(r), len(rel)) if r else math.nan)
        w = [1 / max(1.0, math.log2(j + 1)) for j in range(k)]
        for name, gain in (("ndcg_lin", lambda g: g), ("ndcg_exp", lambda g: 2.0**g - 1)):
            dcg = sum(gain(rel[i]) * w[j] for j, i in enumerate(r) if i in rel)
            top = sorted((gain(g) for g in rel.values()), reverse=True)[:k]
            ideal = sum(g * w[j] for j, g in enumerate(top))
            with np.errstate(divide="ignore", invalid="ignore"):  # LensKit divides by 0
                out[name].append(float(np.float64(dcg) / ideal))
    return {n: float(np.nanmean(v)) for n, v in out.items()}


REF_METRICS = {
    "recall": "recall@4",
    "ap": "ap@4",
    "ndcg_lin": "ndcg@4[gain=linear]",
    "ndcg_exp": "ndcg@4[gain=exp]",
}


@pytest.mark.parametrize("reading", ["relevant", "nonrelevant"])
def test_the_slow_reference_agrees(reading: str) -> None:
    recs, truth = _random_rows(11)
    ref = _ref(recs, truth, reading, 4)
    res = receval.evaluate(
        recs, truth, list(REF_METRICS.values()), convention="lenskit", negative_grades=reading
    )
    got = _summary(res, list(REF_METRICS.values()), "lenskit")
    for name, metric in REF_METRICS.items():
        assert got[metric] == pytest.approx(ref[name], abs=1e-12), (reading, metric)


# --- every door gives the same numbers ------------------------------------------

DOOR_METRICS = ["ndcg@3[gain=linear]", "ndcg[gain=exp]", "ndcg@3", "recall@3", "ap@3", "rr@3"]


def _graded_doors_names(conv: str) -> list[str]:
    params = get(conv).params
    return [str(receval.parse_metric(n, params)) for n in DOOR_METRICS]


@pytest.mark.parametrize("conv", ["lenskit", "ranx"])
def test_files_and_accumulator_give_the_same_numbers(tmp_path: Path, conv: str) -> None:
    recs, truth = _random_rows(12)
    local = receval.evaluate(recs, truth, DOOR_METRICS, convention=conv)
    recs.to_csv(tmp_path / "recs.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    recs.to_parquet(tmp_path / "recs.parquet")
    truth.to_parquet(tmp_path / "truth.parquet")
    for ext in ("csv", "parquet"):
        files = receval.evaluate(
            str(tmp_path / f"recs.{ext}"),
            str(tmp_path / f"truth.{ext}"),
            DOOR_METRICS,
            convention=conv,
        )
        assert files.summary == local.summary, ext
        key = f"truth_rows_negative_{get(conv).negative_grades}"
        assert files.counts[key] == local.counts[key] == int((truth.relevance < 0).sum())
    acc = receval.Accumulator(DOOR_METRICS, convention=conv)
    acc.update(recs[recs.user < 20], truth[truth.user < 20])
    acc.update(recs[recs.user >= 20], truth[truth.user >= 20])
    assert acc.compute().summary == local.summary


@pytest.mark.spark
@pytest.mark.timeout(900)
@pytest.mark.parametrize("conv", ["lenskit", "ranx"])
def test_spark_gives_the_same_numbers(spark: Any, conv: str) -> None:
    recs, truth = _random_rows(13)
    kw = {"convention": conv, "ties": "item"}  # Spark rows have no input order
    local = receval.evaluate(recs, truth, DOOR_METRICS, **kw)
    res = receval.evaluate(
        spark.createDataFrame(recs), spark.createDataFrame(truth), DOOR_METRICS, **kw
    )
    assert res.parameters["engine"] == "spark"
    assert res.summary == local.summary
    key = f"truth_rows_negative_{get(conv).negative_grades}"
    assert res.counts[key] == local.counts[key] == int((truth.relevance < 0).sum())


def test_user_groups_split_the_negative_counts() -> None:
    """The rows read as relevant / non-relevant are counted per user too, so a
    pass cut into user groups keeps them (driver: every count per user)."""
    recs, truth = {"a": [1, 2, 3], "b": [4, 5]}, {"a": {1: -1, 9: 2}, "b": {4: -2, 5: 1}}
    for conv, known in (("lenskit", [0.5, 1.0]), ("ranx", [0.0, 1.0])):
        res = receval.evaluate(
            recs, truth, "recall@3", convention=conv, user_groups={"a": "g1", "b": "g2"}
        )
        name = str(receval.parse_metric("recall@3", get(conv).params))
        assert res.groups[name].tolist() == known, conv
        assert res.counts[f"truth_rows_negative_{get(conv).negative_grades}"] == 2
