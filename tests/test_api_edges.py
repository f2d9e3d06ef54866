"""Edges of the Python surface found by an audit (2026-11-27): replaying a
result's options, reading a metric by name under a convention, comparing
results, mappings of columns, an explicit threshold that leaves nobody to
evaluate, and errors that name the keyword the caller can type."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError, MetricError, OptionError, ReceValError
from receval.evaluation import conventions

METRICS = ["precision@3", "recall@5", "ndcg@5", "map@5", "rr"]


def _data(seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    recs = pd.DataFrame(
        [(u, i, float(rng.integers(0, 4))) for u in range(30) for i in rng.choice(12, 6, False)],
        columns=["user", "item", "score"],
    )
    truth = pd.DataFrame(
        [(u, i, int(rng.integers(0, 6))) for u in range(2, 32) for i in rng.choice(12, 4, False)],
        columns=["user", "item", "rating"],
    )
    return recs, truth


@pytest.mark.parametrize("threshold", [None, 1, 3])
@pytest.mark.parametrize("convention", sorted(conventions.CONVENTIONS))
def test_the_recorded_options_replay_the_evaluation(convention: str, threshold: Any) -> None:
    """``EvalOptions.from_dict(res.parameters)`` gives the same numbers: under
    ``graded=False`` a threshold given selects the relevant rows and the
    convention's does not, so the record says which options were given."""
    recs, truth = _data()
    kw = {} if threshold is None else {"threshold": threshold}
    for graded in (None, False):
        if graded is not None:
            kw["graded"] = graded
        res = receval.evaluate(recs, truth, METRICS, convention=convention, **kw)
        options = receval.EvalOptions.from_dict(res.parameters)
        again = receval.evaluate(recs, truth, METRICS, options=options)
        assert again.summary == res.summary, (convention, kw)
        assert again.parameters == res.parameters
        assert options.grade_cut == receval.EvalOptions(convention=convention, **kw).grade_cut


def test_a_record_without_given_replays_every_option_as_given() -> None:
    record = receval.EvalOptions(convention="rectools").to_dict()
    assert record["given"] == ["convention"]
    del record["given"]  # a record of 0.2.0
    assert receval.EvalOptions.from_dict(record).grade_cut == 1.0


def test_a_result_given_to_compare_must_share_the_grade_cut() -> None:
    recs, truth = _data()
    res = receval.evaluate(recs, truth, "ndcg@5", convention="rectools")
    receval.compare({"a": res, "b": res}, truth, "ndcg@5", convention="rectools", n_resamples=99)
    with pytest.raises(OptionError, match=r"every truth row.*graded >= 1"):
        receval.compare({"a": res}, truth, "ndcg@5", convention="rectools", threshold=1)


def test_a_metric_is_read_by_name_as_the_evaluation_read_it() -> None:
    recs = {"u1": [1, 6, 8], "u2": [1, 2, 3, 4, 5]}
    truth = {"u1": [1, 2, 3, 4, 5, 6], "u2": [2, 4, 6]}
    both = ["map@2", "ap@2[denominator=min_k_relevant]"]
    res = receval.evaluate(recs, truth, both, convention="trec_eval")
    assert res["map@2"] == res.summary["ap@2[denominator=relevant]"] == 0.25
    assert res["MAP@2"] == 0.25
    assert res["ap@2[denominator=min_k_relevant]"] == res.summary["ap@2"] == 0.625
    with pytest.raises(KeyError, match=r"read as .ndcg@3.grades=positive.. under the convention"):
        res["ndcg@3"]


def test_results_compare_by_their_numbers() -> None:
    recs, truth = _data()
    a = receval.evaluate(recs, truth, [*METRICS, "auc"])
    b = receval.evaluate(recs.sample(frac=1, random_state=2), truth, [*METRICS, "auc"])
    assert a == b
    assert not a != b  # noqa: SIM202  (the != of __eq__)
    assert a == pickle.loads(pickle.dumps(a))
    assert a != receval.evaluate(recs, truth, METRICS)
    assert a != receval.evaluate(recs.iloc[5:], truth, [*METRICS, "auc"])
    assert a != "a result"


def test_a_mapping_of_columns_is_its_table() -> None:
    recs, truth = _data()
    want = receval.evaluate(recs, truth, METRICS)
    got = receval.evaluate(recs.to_dict("list"), truth.to_dict("list"), METRICS)
    assert got.summary == want.summary and got.counts == want.counts
    mixed = {"user": [1, "a"], "item": [1, 2], "score": [0.5, 0.4]}
    with pytest.raises(InputError, match=r"a mapping of columns .*pandas.DataFrame\(mapping\)"):
        receval.evaluate(mixed, truth, "rr")
    # a mapping user -> items whose users are not column names stays that
    assert receval.evaluate({"user": [1], "u2": [2]}, {"user": [1]}, "rr").summary == {"rr": 1.0}


@pytest.mark.parametrize(
    ("truth", "kw", "said"),
    [
        (
            pd.DataFrame({"user": ["u1", "u2"], "item": [1, 2], "stars": [5, 4]}),
            {"threshold": 4},
            "the threshold given (4) reads no grade: no grade column of the truth was read "
            "(read: user, item), so every truth row is graded 1 and no user has a relevant "
            "item; name the grades (Python: relevance_col=, command line: --relevance-col)",
        ),
        (
            pd.DataFrame({"user": ["u1", "u2"], "item": [1, 2], "stars": [5, 4]}),
            {"threshold": 2, "convention": "rectools"},
            "the threshold given (2) reads no grade",
        ),
        (
            pd.DataFrame({"user": ["u1", "u2"], "item": [1, 2], "rating": [5, 4]}),
            {"threshold": 6},
            "no truth grade of column 'rating' reaches the threshold given (6): no user has a "
            "relevant item",
        ),
    ],
)
def test_an_explicit_threshold_that_leaves_nobody_is_said(
    truth: pd.DataFrame, kw: dict[str, Any], said: str
) -> None:
    """An explicit threshold under which no user has a relevant item: the values
    are NaN (every user skipped), and a note says why (docs/inputs.md)."""
    res = receval.evaluate({"u1": [1], "u2": [2]}, truth, "precision@1", **kw)
    assert res.counts["users_evaluated"] == 0
    assert any(said in n for n in res.notes), res.notes
    # a threshold someone passes says nothing, nor does nobody relevant without one
    ok = receval.evaluate({"u1": [1], "u2": [2]}, truth, "precision@1", threshold=1)
    assert ok.counts["users_evaluated"] == 2 and not any("threshold given" in n for n in ok.notes)
    none = receval.evaluate({"u1": [1]}, {"u1": {1: 0}}, "precision@1")
    assert not any("threshold given" in n for n in none.notes)


def test_the_command_line_says_the_threshold_given(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item,stars\nu1,1,5\n")
    (tmp_path / "r.csv").write_text("user,item,rank\nu1,1,1\n")
    args = [sys.executable, "-m", "receval", "evaluate", "r.csv", "t.csv", "-m", "ndcg@3"]
    done = subprocess.run(
        [*args, "--threshold", "4"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "the threshold given (4) reads no grade" in done.stdout + done.stderr


def test_an_unknown_file_type_names_what_each_caller_can_type(tmp_path: Path) -> None:
    path = tmp_path / "r.xyz"
    path.write_text("user,item,rank\nu1,1,1\n")
    with pytest.raises(InputError, match=r"FileInput\(path, format='csv'\)"):
        receval.evaluate(path, {"u1": [1]}, "rr")
    done = subprocess.run(
        [sys.executable, "-m", "receval", "evaluate", str(path), str(path), "-m", "rr"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "or give its format: --format csv" in done.stderr


def test_wrong_kinds_of_argument_name_what_was_expected() -> None:
    with pytest.raises(MetricError, match="metrics must be a metric string"):
        receval.evaluate({1: [1]}, {1: [1]}, 5)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="did you mean 'threshold'"):
        receval.Accumulator(["rr"], thresold=2)
    with pytest.raises(OptionError, match="did you mean 'threshold'"):
        receval.compare({"a": {1: [1]}}, {1: [1]}, "rr", thresold=2)
    with pytest.raises(MetricError, match="compares one metric"):
        receval.compare_conventions({1: [1]}, {1: [1]}, ["map@10"])  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="choose them with names="):
        receval.compare_conventions({1: [1]}, {1: [1]}, "map@10", convention="ranx")
    with pytest.raises(OptionError, match="did you mean 'threshold'"):
        receval.compare_conventions({1: [1]}, {1: [1]}, "map@10", thresold=2)
    with pytest.raises(InputError, match="no item given: give the catalog's items"):
        receval.evaluate({1: [1]}, {1: [1]}, "coverage@3", catalog=[])


def test_merging_accumulators_names_what_differs() -> None:
    with pytest.raises(ReceValError, match="metrics: ndcg@3 here, ndcg@5 in the other"):
        receval.Accumulator(["ndcg@3"]).merge(receval.Accumulator(["ndcg@5"]))
    with pytest.raises(ReceValError, match="ties='item' here, ties='item_desc' in the other"):
        receval.Accumulator(["rr"]).merge(receval.Accumulator(["rr"], ties="item_desc"))
    given = receval.Accumulator(["rr"], convention="rectools", threshold=1)
    with pytest.raises(ReceValError, match="given explicitly in one only"):
        receval.Accumulator(["rr"], convention="rectools").merge(given)


def test_notes_are_plain_text() -> None:
    """A note is read by Python and printed by the command line alike: it holds
    no marker of the two-syntax phrases (errors.said), which only errors render."""
    truth = pd.DataFrame({"user": ["u1", "u2"], "item": [1, 2], "rating": [5, 4]})
    res = receval.evaluate({"u1": [1, 3], "u2": [2, 3]}, truth, "ndcg@3")
    assert any("--threshold 4" in note for note in res.notes)
    assert not any(set(note) & {"\ue000", "\ue001", "\ue002"} for note in res.notes)


def test_ild_undefined_for_lack_of_features_is_said() -> None:
    """Items item_features does not list (or gives an all-zero vector) have no
    features: a list with fewer than 2 such items leaves ild undefined, and a
    note says for how many users (was: NaN and no word)."""
    features = pd.DataFrame({"item": ["x1", "x2", "x3"], "f1": [1, 0, 0], "f2": [0, 1, 0]})
    recs = {"u1": ["a", "b"], "u2": ["x1", "x2"], "u3": ["x1", "x3"]}
    res = receval.evaluate(recs, {u: ["a"] for u in recs}, "ild@10", item_features=features)
    assert res.counts["undefined"] == {"ild@10": 2}
    assert any("for 2 of 3 users evaluated" in n for n in res.notes), res.notes
    none = receval.evaluate({"u1": ["a", "b"]}, {"u1": ["a"]}, "ild@10", item_features=features)
    assert any(n.startswith("ild@10 is NaN: no evaluated user's top-10") for n in none.notes)
    full = receval.evaluate({"u2": ["x1", "x2"]}, {"u2": ["a"]}, "ild@10", item_features=features)
    assert not any("ild" in n for n in full.notes)


def test_a_corrected_estimate_undefined_is_said() -> None:
    """A sampled list holding no negative (m = 0) leaves a corrected estimate
    undefined: counted, and a note says why (docs/sampled.md)."""
    res = receval.evaluate(
        {1: [5], 2: [5, 7, 8]},
        {1: [5], 2: [5]},
        ["recall@10[correction=bv]", "recall@10"],
        catalog_size=100,
    )
    assert res.counts["undefined"] == {"recall@10[correction=bv]": 1}
    assert any(n.startswith("recall@10[correction=bv] is undefined") for n in res.notes)
    assert not any(n.startswith("recall@10 is") for n in res.notes)


def test_a_result_renders_as_csv_as_the_command_prints_it(tmp_path: Path) -> None:
    recs, truth = _data()
    res = receval.evaluate(recs, truth, METRICS)
    assert res.to_csv() == res.to_frame().to_csv()
    recs.to_csv(tmp_path / "r.csv", index=False)
    truth.to_csv(tmp_path / "t.csv", index=False)
    args = [sys.executable, "-m", "receval", "evaluate", "r.csv", "t.csv", "-o", "csv", "-q"]
    for m in METRICS:
        args += ["-m", m]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == res.to_csv().strip()


def test_a_user_without_truth_refused_names_the_option_given() -> None:
    """no_truth follows empty_truth unless given: a refusal under empty_truth='error'
    says so, rather than naming a keyword the caller never typed."""
    with pytest.raises(receval.errors.PolicyError) as got:
        receval.evaluate({1: [1], 2: [3]}, {1: [1]}, "rr", empty_truth="error")
    assert "(empty_truth='error', which no_truth follows unless given)" in str(got.value)
    with pytest.raises(receval.errors.PolicyError, match=r"\(no_truth='error'\)$"):
        receval.evaluate({1: [1], 2: [3]}, {1: [1]}, "rr", no_truth="error")
