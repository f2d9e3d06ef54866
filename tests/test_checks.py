"""Leakage and sanity checks: every finding counted on hand-made data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import InputError, ReceValError
from receval.workflow.checks import check, remove_seen


def data() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    train = pd.DataFrame(
        {"user": [1, 1, 2, 2, 2], "item": [1, 2, 1, 3, 3], "timestamp": [1, 5, 2, 3, 4]}
    )
    # user 1's test row at t=3 precedes its training row at t=5; user 9 and item 7 are cold.
    test = pd.DataFrame(
        {"user": [1, 1, 2, 9, 9], "item": [4, 4, 5, 7, 1], "timestamp": [3, 6, 6, 6, 7]}
    )
    recs = pd.DataFrame(
        {
            "user": [1, 1, 1, 2, 2],
            "item": [2, 4, 8, 4, 4],
            "score": [0.9, 0.5, 0.5, 0.3, 0.2],
        }
    )
    return train, test, recs


def test_every_finding() -> None:
    train, test, recs = data()
    r = check(train, test, recs, k=3, chronological=True)
    assert r["duplicate_rows_train"].count == 1
    assert r["duplicate_rows_test"].count == 1
    assert r["duplicate_rows_recs"].count == 1
    assert r["seen_in_train"].count == 1
    assert r["seen_in_train"].examples == [(1, 2)]
    assert r["recommended_items_not_in_train"].count == 2  # items 4 and 8
    assert r["test_users_not_in_train"].count == 1
    assert r["test_items_not_in_train"].count == 3  # items 4, 5, 7
    assert r["test_before_train"].count == 1
    assert r["missing_lists"].count == 1  # user 9
    assert r["short_lists"].count == 1  # user 2 has 2 rows < 3
    assert r["score_ties"].count == 2  # user 1's two rows at 0.5
    assert not r.ok
    assert "duplicate_rows_train" not in [f.code for f in r.problems]  # info only
    text = str(r)
    assert len(text.splitlines()) == len(r.findings)
    assert "1 of 5 recommendation rows (1 of 2 users)" in r["seen_in_train"].message
    assert set(r.to_frame()["check"]) == set(r.codes())
    assert r.to_dict()["seen_in_train"]["examples"] == [[1, 2]]


def test_global_chronology() -> None:
    train, test, _ = data()
    r = check(train, test, chronological="global")
    # latest training row: t=5; test rows before it: t=3.
    assert r["test_before_train"].count == 1
    assert "latest training row (5)" in r["test_before_train"].message


def test_only_what_inputs_allow() -> None:
    train, test, recs = data()
    r = check(train=train, test=test)
    assert "seen_in_train" not in r.codes()
    assert r["test_before_train"].count == 1  # timestamps in both: checked unasked
    r = check(train=train, test=test, chronological=False)
    assert "test_before_train" not in r.codes()  # a random split: not checked
    r = check(recs=recs)
    assert "short_lists" not in r.codes()  # no k
    assert "score_ties" in r.codes()
    with pytest.raises(KeyError, match="no check"):
        r["seen_in_train"]


def test_clean_inputs_are_ok() -> None:
    train = pd.DataFrame({"user": [1, 2], "item": [1, 2], "timestamp": [1, 1]})
    test = pd.DataFrame({"user": [1, 2], "item": [2, 1], "timestamp": [2, 2]})
    recs = pd.DataFrame({"user": [1, 2], "item": [2, 1], "rank": [1, 1]})
    r = check(train, test, recs, k=1, chronological="user")
    assert r.ok
    assert all(f.count == 0 for f in r.findings)
    assert all(line.startswith("[ok  ]") for line in str(r).splitlines())


def test_check_changes_nothing() -> None:
    train, test, recs = data()
    copies = [x.copy() for x in (train, test, recs)]
    check(train, test, recs, k=3, chronological=True)
    for a, b in zip(copies, (train, test, recs), strict=True):
        assert a.equals(b)


def test_remove_seen_reranks() -> None:
    train, _, _ = data()
    recs = pd.DataFrame({"user": [1, 1, 1, 2], "item": [1, 5, 2, 6], "rank": [1, 2, 3, 1]})
    out = remove_seen(recs, train)
    assert out[["user", "item", "rank"]].values.tolist() == [[1, 5, 1], [2, 6, 1]]
    assert out.attrs["removed"] == 2
    res = receval.evaluate(out, {1: [5], 2: [6]}, "precision@1")
    assert res.summary["precision@1"] == 1.0


def test_errors() -> None:
    train, test, _ = data()
    with pytest.raises(ReceValError, match="chronological"):
        check(train, test, chronological="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="timestamp"):
        check(train.drop(columns="timestamp"), test, chronological=True)
    with pytest.raises(InputError, match=r"train: no item column .*columns found: user, thing"):
        check(train.rename(columns={"item": "thing"}))
    with pytest.raises(ReceValError, match="k must be"):
        check(recs=data()[2], k=0)


def test_check_reads_inputs_as_evaluate_does() -> None:
    """Columns detected by the same aliases (userId, movieId), ids compared under
    the one id rule (1.0 is 1), column names from EvalOptions."""
    train = pd.DataFrame({"userId": [1, 1, 2], "movieId": [10.0, 11.0, 10.0]})
    recs = pd.DataFrame({"userId": [1, 1, 2], "movieId": [10, 12, 13], "score": [3, 2, 1]})
    report = check(train=train, recs=recs)
    seen = report["seen_in_train"]
    assert seen.count == 1 and seen.examples == [(1, 10)]
    opts = receval.EvalOptions(user_col="userId", item_col="movieId")
    named = check(train=train, recs=recs, options=opts)
    assert [(f.code, f.count) for f in named.findings] == [
        (f.code, f.count) for f in report.findings
    ]
    kept = remove_seen(recs, train)
    assert kept["movieId"].tolist() == [12, 13] and kept.attrs["removed"] == 1
    assert list(kept.columns) == ["userId", "movieId", "score"]


@pytest.mark.parametrize(
    ("column", "values", "found"),
    [
        ("score", [0.9, "abc", 0.5], "score must be a finite number; found 'abc'"),
        ("score", [0.9, float("nan"), 0.5], "found a missing value (empty or NaN)"),
        ("score", [0.9, float("inf"), 0.5], "score must be a finite number; found inf"),
        ("rank", [1, 0, 1], "rank must be a positive integer; found 0"),
    ],
)
def test_check_refuses_a_score_as_evaluate_does(column: str, values: list, found: str) -> None:
    """A score that is no finite number (a rank no positive integer) passed the
    check and then failed (or misordered) evaluate: both refuse it, one message."""
    recs = pd.DataFrame({"user": ["u1", "u1", "u2"], "item": [1, 2, 3], column: values})
    with pytest.raises(InputError) as evaluated:
        receval.evaluate(recs, {"u1": [1], "u2": [3]}, "ndcg@2")
    with pytest.raises(InputError) as checked:
        check(recs=recs)
    assert str(checked.value) == str(evaluated.value)
    assert str(checked.value).startswith("recommendations, row 1, user 'u1', item 2: ")
    assert found in str(checked.value)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("score\nu1,1,0.9\nu1,2,abc\n", "score must be a finite number; found 'abc'"),
        ("score\nu1,1,0.9\nu1,2,nan\n", "score must be a finite number; found a missing value"),
        ("score\nu1,1,0.9\nu1,2,\n", "score must be a finite number; found a missing value"),
        ("rank\nu1,1,1\nu1,2,0\n", "rank must be a positive integer; found 0"),
    ],
)
def test_check_command_refuses_a_score_as_evaluate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, found: str
) -> None:
    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    recs.write_text("user,item," + text + "u2,3,1\n")
    truth.write_text("user,item\nu1,1\nu2,3\n")
    assert main(["evaluate", str(recs), str(truth), "-m", "ndcg@2"]) == 2
    evaluated = capsys.readouterr().err
    assert main(["check", "--recs", str(recs)]) == 2  # bad input, as a missing item id
    out, err = capsys.readouterr()
    assert err == evaluated and out == ""
    assert err.startswith(f"error: {recs}, line 3, user 'u1', item 2: {found}"), err


def test_check_reads_text_scores_as_numbers() -> None:
    """Scores of text that are numbers are read as evaluate reads them: "0.50" ties 0.5."""
    recs = pd.DataFrame({"user": ["u1", "u1"], "item": [1, 2], "score": ["0.50", "0.5"]})
    assert check(recs=recs)["score_ties"].count == 2


@pytest.mark.parametrize(
    "items, scores, row",
    [
        (["x", "y", "z", None], [1.0, float("nan"), 0.3, 0.2], 1),  # the score's row first
        (["x", None, "z", "w"], [1.0, 0.5, float("inf"), 0.2], 1),  # the item's row first
        (["x", "y", "z", None], [1.0, 0.5, 0.3, "high"], 3),  # one row, both: the id's
    ],
)
def test_check_names_the_first_row_any_check_refuses_as_evaluate_does(
    items: list[Any], scores: list[Any], row: int
) -> None:
    """A bad score before a missing item id is the score's error (check had
    named the later missing id: it read every id before any score), the
    same error evaluate raises (SPEC §2.3)."""
    recs = pd.DataFrame({"user": ["a", "a", "b", "b"], "item": items, "score": scores})
    truth = pd.DataFrame({"user": ["a"], "item": ["x"]})
    with pytest.raises(InputError) as evaluated:
        receval.evaluate(recs, truth, "ndcg@5")
    with pytest.raises(InputError) as checked:
        receval.check(recs=recs)
    assert evaluated.value.row == row
    assert str(checked.value) == str(evaluated.value)
