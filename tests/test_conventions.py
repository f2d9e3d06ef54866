"""Conventions: what each sets, what overrides it, and explain --compare."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.analysis.explain import compare_conventions
from receval.cli import main
from receval.evaluation.conventions import CONVENTIONS, decisions, get, variants

RECS = {"u1": ["a", "b", "c", "d"], "u2": ["x"], "only_recs": ["a"]}
TRUTH = {"u1": {"b": 2, "c": 0, "e": 1, "f": 1}, "u3": {"a": 1}, "zero": {"a": 0}}


def test_every_convention_is_complete() -> None:
    for name, c in CONVENTIONS.items():
        assert get(name) is c
        text = decisions(c)
        assert all(text.values()), name
        assert c.metrics and set(c.metrics) <= set(receval.metrics()), name
        assert name == "receval" or c.sources, name
        receval.evaluate(RECS, TRUTH, [f"{m}@3" for m in ("precision", "ap")], convention=name)


def test_aliases_and_unknown_names() -> None:
    assert get("pytrec_eval") is get("trec_eval")
    assert get("Spark") is get("mllib")
    with pytest.raises(
        receval.ReceValError, match="convention='nope' is not allowed: expected one of 'lenskit'"
    ):
        receval.evaluate(RECS, TRUTH, "ap@3", convention="nope")


def test_convention_sets_metric_parameters_unless_given() -> None:
    res = receval.evaluate(RECS, TRUTH, ["map@3", "ap@3[denominator=hits]"], convention="ranx")
    assert list(res.summary) == ["ap@3[denominator=relevant]", "ap@3[denominator=hits]"]
    # a MetricSpec is taken as it is
    spec = receval.parse_metric("ap@3")
    assert list(receval.evaluate(RECS, TRUTH, spec, convention="ranx").summary) == ["ap@3"]


def test_explicit_options_override_the_convention() -> None:
    base = receval.evaluate(RECS, TRUTH, "precision@1", convention="trec_eval")
    assert base.parameters["missing_recs"] == "skip"
    assert base.parameters["convention"] == "trec_eval"
    over = receval.evaluate(RECS, TRUTH, "precision@1", convention="trec_eval", missing_recs="zero")
    assert over.parameters["missing_recs"] == "zero"
    assert over.counts["users_evaluated"] == base.counts["users_evaluated"] + 2  # u3, zero


def test_ungraded_tools_read_every_truth_row_as_relevant() -> None:
    mine = receval.evaluate(RECS, TRUTH, "recall@4")  # c has grade 0: not relevant
    theirs = receval.evaluate(RECS, TRUTH, "recall@4", convention="replay")
    assert mine.per_user.loc["u1", "recall@4"] == pytest.approx(1 / 3)  # b of b, e, f
    assert theirs.per_user.loc["u1", "recall@4"] == pytest.approx(2 / 4)  # b, c of b, c, e, f


def test_relevant_from_list_is_torchmetrics_view() -> None:
    res = receval.evaluate(RECS, TRUTH, ["recall@1", "ndcg@4"], convention="torchmetrics")
    recall, ndcg = "recall@1[scores=positive]", "ndcg@4[tied=average]"  # the names it takes
    # u1's list holds b (grade 2) and c (grade 0): R = 1, b at position 2
    assert res.per_user.loc["u1", recall] == 0.0
    assert res.per_user.loc["u1", ndcg] == pytest.approx(1 / 1.584962500721156)
    # only users with a list; no relevant item in it scores 0
    assert set(res.per_user.dropna().index) == {"u1", "u2", "only_recs"}


def test_variants_and_compare_conventions() -> None:
    v = variants("ndcg@10")
    assert v["rectools"] == "ndcg@10[gain=binary,ideal=k]"
    assert v["lenskit"] == "ndcg@10[discount=jarvelin,gain=binary]"
    assert "mllib" not in variants("rr@10")  # MLlib has no reciprocal rank
    table = compare_conventions(RECS, TRUTH, "ap@3")
    assert set(table.index) == set(CONVENTIONS)
    assert {"value", "metric", "users", "AP@k divides by"} <= set(table.columns)
    assert "nDCG gain" not in table.columns  # a decision about another metric
    for name, row in table.iterrows():
        direct = receval.evaluate(RECS, TRUTH, "ap@3", convention=str(name))
        assert row["value"] == direct.summary[row["metric"]]


def _files(tmp_path: Path) -> tuple[Path, Path]:
    recs = pd.DataFrame(
        [(u, i, 10.0 - n) for u, items in RECS.items() for n, i in enumerate(items)],
        columns=["user", "item", "score"],
    )
    truth = pd.DataFrame(
        [(u, i, g) for u, t in TRUTH.items() for i, g in t.items()],
        columns=["user", "item", "relevance"],
    )
    recs.to_csv(tmp_path / "recs.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    return tmp_path / "recs.csv", tmp_path / "truth.csv"


def test_cli_explain_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs, truth = _files(tmp_path)
    assert main(["explain", "--compare", "map@3", str(recs), str(truth)]) == 0
    out = capsys.readouterr().out
    assert "decisions that differ (ap):" in out
    assert "AP@k divides by:" in out and "min(k, n, R)" in out
    for name in CONVENTIONS:
        assert f"\n{name} " in "\n" + out
    assert main(["explain", "--compare", "map@3", str(recs), str(truth), "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["convention"] for r in rows} == set(CONVENTIONS)


def test_cli_convention_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs, truth = _files(tmp_path)
    argv = ["evaluate", str(recs), str(truth), "-m", "map@3", "--json"]
    assert main([*argv, "--convention", "trec_eval"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["parameters"]["convention"] == "trec_eval"
    assert "ap@3[denominator=relevant]" in data["metrics"]
    assert main([*argv, "--convention", "nope"]) == 2
    err = capsys.readouterr().err
    assert (
        "--convention nope is not allowed: expected one of lenskit" in err
        and "Traceback" not in err
    )
    assert main(["explain", "--compare", "map@3"]) == 2
    assert "needs METRIC RECS TRUTH" in capsys.readouterr().err


def test_hits_is_ranx_count_not_hit_rate() -> None:
    """Regression: ``hits@k`` was an alias of hit_rate (1.0); ranx's hits@k
    (ranx/metrics/hits.py) is the number of relevant items in the top k (3)."""
    recs, truth = {"q": ["a", "b", "c", "d"]}, {"q": ["a", "b", "d", "z"]}
    for convention in ("ranx", None):
        res = receval.evaluate(recs, truth, ["hits@4", "hit_rate@4"], convention=convention)
        assert res.summary == {"hits@4": 3.0, "hit_rate@4": 1.0}
    assert receval.parse_metric("hits@4").name == "hits"
    assert receval.parse_metric("hit@4").name == "hit_rate"
    assert variants("hits@10")["ranx"] == "hits@10"


def test_recommenders_reads_grades_for_raw_and_exp_gains() -> None:
    """Regression: convention="recommenders" read no grades, so its score_type='raw'
    (ndcg[gain=linear]) gave 1.0 on Recommenders' own test case, where it expects
    0.785: grades [3, 2, 3, 0, 1, 2, 3, 2] for items 0..7, scores 6..1 for items 0..5."""
    truth = pd.DataFrame({"user": 1, "item": range(8), "relevance": [3, 2, 3, 0, 1, 2, 3, 2]})
    recs = pd.DataFrame({"user": 1, "item": range(6), "score": [6.0, 5, 4, 3, 2, 1]})
    res = receval.evaluate(
        recs, truth, ["ndcg@6[gain=linear]", "ndcg@6", "precision@6"], convention="recommenders"
    )
    # keys are the metrics computed: registry defaults dropped (gain=linear), others kept
    assert list(res.summary) == ["ndcg@6", "ndcg@6[gain=binary]", "precision@6"]
    assert round(res.summary["ndcg@6"], 3) == 0.785
    # Recommenders 1.2.1 itself (ndcg_at_k, precision_at_k on this case): 1.0 and 1.0:
    # every truth row is relevant, item 3 graded 0 included (its inner join hits it)
    assert res.summary["ndcg@6[gain=binary]"] == 1.0
    assert res.summary["precision@6"] == 1.0
    # every grade is relevant, fractions included (no threshold of 1)
    low = receval.evaluate({1: ["a"]}, {1: {"a": 0.5}}, "precision@1", convention="recommenders")
    assert low.summary["precision@1"] == 1.0
