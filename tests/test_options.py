"""EvalOptions: one frozen, validated object holds every policy of an evaluation."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pandas as pd
import pytest

import receval
from receval import EvalOptions, OptionError
from receval.evaluation import conventions
from receval.evaluation.options import CHOICES

RECS = pd.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 3],
        "item": [10, 11, 12, 10, 13, 14],
        "score": [0.9, 0.8, 0.8, 0.7, 0.6, 0.5],
    }
)
TRUTH = pd.DataFrame({"user": [1, 1, 2, 4], "item": [11, 12, 14, 10], "relevance": [1, 3, 2, 1]})
METRICS = ["ndcg@2", "ap@3", "recall@3", "rr"]


def _same(a: receval.Result, b: receval.Result) -> None:
    assert a.summary.keys() == b.summary.keys()
    for k in a.summary:
        assert a.summary[k] == b.summary[k] or (
            math.isnan(a.summary[k]) and math.isnan(b.summary[k])
        )
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
    assert a.counts == b.counts


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_every_choice_is_validated_with_option_value_and_allowed(name: str) -> None:
    with pytest.raises(OptionError) as info:
        EvalOptions(**{name: "bogus"})
    err = info.value
    assert err.option == name and err.value == "bogus" and err.allowed == CHOICES[name]
    assert f"{name}='bogus'" in str(err)
    assert f"--{name.replace('_', '-')} bogus" in err.cli_message()
    for value in CHOICES[name]:
        assert getattr(EvalOptions(**{name: value}), name) == value


@pytest.mark.parametrize("bad", ["high", math.nan, math.inf, True, [1]])
def test_threshold_must_be_a_finite_number(bad: object) -> None:
    with pytest.raises(OptionError, match=r"threshold=.* expected a finite number"):
        EvalOptions(threshold=bad)


def test_unknown_convention_and_column_names() -> None:
    with pytest.raises(OptionError, match="convention='nope' is not allowed"):
        EvalOptions(convention="nope")
    with pytest.raises(OptionError, match="user_col=''"):
        EvalOptions(user_col="")
    assert EvalOptions(convention="PyTrec_Eval").convention == "trec_eval"


@pytest.mark.parametrize("name", sorted(conventions.CONVENTIONS))
def test_a_convention_is_a_preset(name: str) -> None:
    conv = conventions.get(name)
    o = EvalOptions(convention=name)
    assert o.ties == conv.ties and o.empty_truth == conv.empty_truth
    assert o.missing_recs == conv.missing_recs and o.threshold == conv.threshold
    assert o.no_truth == (conv.no_truth or conv.empty_truth)
    assert o.graded == conv.graded and o.relevant_from == conv.relevant_from
    assert o.metric_defaults == conv.params
    # explicit values win over the preset
    assert EvalOptions(convention=name, ties="item_desc").ties == "item_desc"


def test_replace_follows_a_new_convention_but_keeps_what_was_given() -> None:
    o = EvalOptions(convention="trec_eval", threshold=2)
    r = o.replace(convention="receval")
    assert r.threshold == 2.0 and r.ties == "item" and r.empty_truth == "skip"
    assert o.ties == "item_str_desc"  # frozen: the original is unchanged
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.ties = "item"  # type: ignore[misc]
    with pytest.raises(OptionError, match="no such option"):
        o.replace(tie="item")


def test_plain_data_that_pickles_and_round_trips() -> None:
    o = EvalOptions(convention="mllib", relevance_col="rating", duplicates="keep")
    assert pickle.loads(pickle.dumps(o)) == o
    d = o.to_dict()
    assert d["given"] == ["convention", "duplicates", "relevance_col"]  # the others: mllib's
    assert all(isinstance(v, (str, float, bool, type(None))) for k, v in d.items() if k != "given")
    assert EvalOptions.from_dict(d) == o and EvalOptions.from_dict(d).given == o.given
    assert EvalOptions.from_dict({**d, "engine": "numpy", "catalog_items": 3}) == o


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"convention": "trec_eval"},
        {"threshold": 2, "empty_truth": "zero"},
        {"ties": "item_desc", "missing_recs": "skip", "no_truth": "zero"},
        {"convention": "ranx", "relevant_from": "list"},
    ],
)
def test_keywords_are_sugar_and_parameters_replay_the_evaluation(kwargs: dict) -> None:
    by_keywords = receval.evaluate(RECS, TRUTH, METRICS, **kwargs)
    by_object = receval.evaluate(RECS, TRUTH, METRICS, options=EvalOptions(**kwargs))
    _same(by_keywords, by_object)
    replayed = receval.evaluate(
        RECS, TRUTH, METRICS, options=EvalOptions.from_dict(by_keywords.parameters)
    )
    _same(by_keywords, replayed)
    assert by_keywords.parameters.items() >= EvalOptions(**kwargs).to_dict().items()


def test_keywords_apply_on_top_of_an_options_object() -> None:
    base = EvalOptions(convention="trec_eval")
    res = receval.evaluate(RECS, TRUTH, "ap@3", options=base, empty_truth="skip")
    assert res.parameters["empty_truth"] == "skip"
    assert res.parameters["ties"] == "item_str_desc"
    with pytest.raises(OptionError, match="options='dict'"):
        receval.evaluate(RECS, TRUTH, "ap@3", options={"threshold": 2})  # type: ignore[arg-type]


def test_explicit_feedback_takes_options() -> None:
    r = pd.DataFrame(
        {"user": [1, 1, 1], "item": [1, 2, 3], "actual": [5, 2, 4], "predicted": [4.5, 4.0, 2.0]}
    )
    metric = "precision@3[denominator=recommended]"
    a = receval.evaluate_explicit(r, metric, threshold=3.5)
    b = receval.evaluate_explicit(r, metric, options=EvalOptions(threshold=3.5))
    _same(a, b)
    assert a.parameters["threshold"] == 3.5 and np.isclose(a.summary[metric], 0.5)


RUNS = {
    "a": RECS,
    "b": pd.DataFrame(
        {"user": [1, 1, 2, 3], "item": [12, 11, 14, 10], "score": [0.9, 0.5, 0.4, 0.3]}
    ),
}


def test_compare_takes_options_and_parses_metrics_under_the_convention() -> None:
    """Regression: compare() parsed metric strings with receval's defaults, so
    convention="trec_eval" compared ap@3 with receval's denominator."""
    opts = EvalOptions(convention="trec_eval")
    cmp = receval.compare(RUNS, TRUTH, "map@3", options=opts, n_resamples=50)
    assert cmp.metrics == ["ap@3[denominator=relevant]"]
    for name, run in RUNS.items():
        want = receval.evaluate(run, TRUTH, "map@3", convention="trec_eval").summary
        assert cmp.results[name].summary == want
    by_keyword = receval.compare(RUNS, TRUTH, "map@3", convention="trec_eval", n_resamples=50)
    assert by_keyword.table.equals(cmp.table) and by_keyword.pairs.equals(cmp.pairs)
    assert cmp.settings["evaluate"]["convention"] == "trec_eval"


def test_compare_refuses_a_result_evaluated_under_other_options() -> None:
    done = {name: receval.evaluate(run, TRUTH, "ndcg@2", threshold=2) for name, run in RUNS.items()}
    with pytest.raises(OptionError, match="threshold"):
        receval.compare(done, TRUTH, "ndcg@2", n_resamples=50)
    cmp = receval.compare(done, TRUTH, "ndcg@2", threshold=2, n_resamples=50)
    assert cmp.results["a"] is done["a"]
    with pytest.raises(OptionError, match="a keyword of compare\\(\\) — did you mean 'threshold'"):
        receval.compare(RUNS, TRUTH, "ndcg@2", treshold=2)


def test_curve_and_roc_take_options() -> None:
    opts = EvalOptions(threshold=2)
    a = receval.curve(RECS, TRUTH, k=3, options=opts)
    b = receval.curve(RECS, TRUTH, k=3, threshold=2)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    ta, auc_a = receval.roc(RECS, TRUTH, options=opts)
    tb, auc_b = receval.roc(RECS, TRUTH, threshold=2)
    pd.testing.assert_frame_equal(ta, tb, check_exact=True)
    assert auc_a == auc_b


def test_the_result_says_which_columns_were_read_and_notes_a_rating_scale(tmp_path) -> None:
    recs = pd.DataFrame({"userId": [1, 1, 2], "movieId": [1, 2, 3], "score": [3.0, 2.0, 1.0]})
    truth = pd.DataFrame({"userId": [1, 2], "movieId": [2, 3], "rating": [1, 5]})
    recs.to_parquet(tmp_path / "r.parquet")
    truth.to_parquet(tmp_path / "t.parquet")
    want = {
        "recommendations": {"user": "userId", "item": "movieId", "score": "score"},
        "truth": {"user": "userId", "item": "movieId", "relevance": "rating"},
    }
    for r, t in ((recs, truth), (tmp_path / "r.parquet", tmp_path / "t.parquet")):
        res = receval.evaluate(r, t, "ndcg@2")
        assert res.parameters["columns"] == want
        assert any(
            "relevance is the truth column 'rating' (grades up to 5)" in n for n in res.notes
        )
        chosen = receval.evaluate(r, t, "ndcg@2", threshold=4)
        assert not any("relevance is the truth column" in n for n in chosen.notes)
        assert chosen.summary["ndcg@2"] == 1.0  # user 1's only item is below the threshold
    binary = receval.evaluate(recs, truth.drop(columns="rating"), "ndcg@2")
    assert "relevance" not in binary.parameters["columns"]["truth"]
    assert not any("relevance is the truth column" in n for n in binary.notes)


def test_the_options_table_is_every_field_and_the_docs_page() -> None:
    from pathlib import Path

    from receval.evaluation.options import _ORDER, OPTIONS, markdown_options

    # one declaration per field of EvalOptions, in the same order
    assert [o.name for o in OPTIONS] == _ORDER
    page = (Path(__file__).resolve().parent.parent / "docs" / "options.md").read_text()
    assert page.endswith(markdown_options())


def test_every_option_validates_by_its_declared_kind() -> None:
    from receval.errors import OptionError
    from receval.evaluation.options import OPTIONS

    bad = {"number": "x", "count": 0, "flag": "yes", "column": "", "choice": "nope"}
    for o in OPTIONS:
        if o.kind == "convention":
            continue
        with pytest.raises(OptionError, match=o.name):
            EvalOptions(**{o.name: bad[o.kind]})
