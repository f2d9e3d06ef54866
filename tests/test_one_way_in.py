"""Issue #30, one way in: each defect found at the doors, pinned.

Every test here failed on the main of 2026-11-25 (0351b76): the same ids,
options and files must give the same numbers whichever door they come
through.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval import EvalOptions
from receval.cli import main

STARS = pd.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 2, 3, 3],
        "item": [10, 11, 12, 10, 13, 14, 11, 15],
        "rating": [5, 2, 4, 1, 5, 3, 2, 1],
    }
)
RECS = pd.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 2, 3, 3, 3],
        "item": [12, 10, 13, 14, 13, 10, 11, 10, 15],
        "score": [0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9, 0.8, 0.7],
    }
)


def test_a_mapping_of_scores_is_ordered_by_score() -> None:
    # ranx / pytrec_eval / ir_measures runs: {query: {doc: score}}
    res = receval.evaluate({"q": {"d1": 0.1, "d2": 0.9}}, {"q": {"d2": 1}}, "rr")
    assert res.summary["rr"] == 1.0
    # ties by the tie rule (item id ascending), not by insertion order
    tied = {"q": {"d2": 0.5, "d1": 0.5}}
    assert receval.evaluate(tied, {"q": ["d1"]}, "rr").summary["rr"] == 1.0
    assert receval.evaluate(tied, {"q": ["d1"]}, "rr", ties="item_desc").summary["rr"] == 0.5


def test_a_mapping_mixing_lists_and_scores_is_an_error() -> None:
    with pytest.raises(receval.ReceValError, match="one form"):
        receval.evaluate({"a": {"x": 1.0}, "b": ["y"]}, {"a": ["x"]}, "rr")
    with pytest.raises(receval.ReceValError, match="score must be a finite number"):
        receval.evaluate({"a": {"x": "high"}}, {"a": ["x"]}, "rr")


@pytest.mark.parametrize("convention", ["rectools", "recbole", "lenskit", "replay", "mllib"])
def test_an_explicit_threshold_is_honoured_under_a_binary_convention(convention: str) -> None:
    # what the tool computes when given only the rows rated >= 4
    metrics = ["ndcg@3", "precision@3", "recall@3"]
    kept = STARS[STARS["rating"] >= 4].drop(columns="rating")
    want = receval.evaluate(RECS, kept, metrics, convention=convention)
    got = receval.evaluate(RECS, STARS, metrics, convention=convention, threshold=4)
    assert got.counts["users_evaluated"] == want.counts["users_evaluated"] > 0
    assert got.summary == want.summary
    assert not any(math.isnan(v) for v in got.summary.values())


def test_graded_false_with_a_threshold_reads_binary_relevance() -> None:
    got = receval.evaluate(RECS, STARS, "ndcg@3", graded=False, threshold=4)
    kept = STARS[STARS["rating"] >= 4].assign(rating=1)
    assert got.summary == receval.evaluate(RECS, kept, "ndcg@3").summary
    every_row = receval.evaluate(RECS, STARS, "ndcg@3", graded=False)
    assert (
        every_row.summary == receval.evaluate(RECS, STARS.drop(columns="rating"), "ndcg@3").summary
    )


def test_the_command_line_honours_a_threshold_under_a_binary_convention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RECS.to_csv(tmp_path / "r.csv", index=False)
    STARS.to_csv(tmp_path / "t.csv", index=False)
    args = [str(tmp_path / "r.csv"), str(tmp_path / "t.csv"), "-m", "precision@3"]
    code = main(["evaluate", *args, "--convention", "rectools", "--threshold", "4", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert '"precision@3": null' not in out and "NaN" not in out


def test_every_option_is_a_keyword_of_evaluate() -> None:
    params = set(inspect.signature(receval.evaluate).parameters)
    ratings_only = {"actual_col", "predicted_col"}
    missing = EvalOptions._names() - ratings_only - params
    assert not missing
    res = receval.evaluate(RECS, STARS, "ndcg@3", graded=True)
    assert res.parameters["graded"] is True


def test_a_text_id_in_one_batch_does_not_change_the_tie_order_of_the_others() -> None:
    # user 1's items 9 and 10 tie; a text item ("x") appears in user 2's batch only
    recs = pd.DataFrame(
        {"user": [1, 1, 2, 2], "item": [10, 9, "x", 3], "score": [1.0, 1.0, 1.0, 0.5]}
    )
    truth = pd.DataFrame({"user": [1, 2], "item": [9, 3]})
    whole = receval.evaluate(recs, truth, "precision@1")
    acc = receval.Accumulator("precision@1")
    acc.update(recs[recs["user"] == 1], truth[truth["user"] == 1])
    acc.update(recs[recs["user"] == 2], truth[truth["user"] == 2])
    batched = acc.compute()
    assert whole.summary == batched.summary == {"precision@1": 0.5}
    assert whole.per_user["precision@1"].tolist() == batched.per_user["precision@1"].tolist()


def test_digit_ids_in_a_frame_of_strings_are_the_ids_of_a_csv_file(tmp_path: Path) -> None:
    recs = pd.DataFrame(
        {"user": ["1"] * 3 + ["2"] * 3, "item": ["9", "10", "100", "7", "70", "8"], "score": 1.0}
    )
    truth = pd.DataFrame({"user": ["1", "2"], "item": ["100", "8"]})
    recs.to_csv(tmp_path / "r.csv", index=False)
    truth.to_csv(tmp_path / "t.csv", index=False)
    metrics = ["rr", "ndcg@2"]
    frame = receval.evaluate(recs, truth, metrics)
    files = receval.evaluate(tmp_path / "r.csv", tmp_path / "t.csv", metrics)
    assert frame.summary == files.summary
    # numbers numerically: 9 < 10 < 100 and 7 < 8 < 70
    assert frame.per_user["rr"].tolist() == [1 / 3, 1 / 2]


def test_report_and_compare_take_paths_with_a_path_train(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    RECS.to_csv(runs / "pop.csv", index=False)
    STARS.to_csv(runs / "test.csv", index=False)
    train = pd.DataFrame({"user": [1, 2, 3, 4], "item": [20, 21, 10, 11]})
    train.to_csv(runs / "train.csv", index=False)
    metrics = ["ndcg@3", "novelty@3"]
    page = receval.report(
        {"pop": str(runs / "pop.csv")},
        str(runs / "test.csv"),
        metrics,
        train=str(runs / "train.csv"),
    )
    want = receval.evaluate(RECS, STARS, metrics, train=train)
    assert page.comparison.results["pop"].summary == want.summary


def test_explicit_column_names_apply_to_files_read_by_path(tmp_path: Path) -> None:
    RECS.rename(columns={"user": "uid"}).to_csv(tmp_path / "r.csv", index=False)
    STARS.rename(columns={"user": "uid"}).to_csv(tmp_path / "t.csv", index=False)
    got = receval.evaluate(tmp_path / "r.csv", tmp_path / "t.csv", "ndcg@3", user_col="uid")
    assert got.summary == receval.evaluate(RECS, STARS, "ndcg@3").summary


def test_the_truth_may_name_its_columns_differently() -> None:
    truth = STARS.rename(columns={"user": "customer_ref", "item": "sku"})
    got = receval.evaluate(
        RECS, truth, "ndcg@3", truth_user_col="customer_ref", truth_item_col="sku"
    )
    assert got.summary == receval.evaluate(RECS, STARS, "ndcg@3").summary
    with pytest.raises(receval.ReceValError, match="truth_user_col="):
        receval.evaluate(RECS, truth, "ndcg@3", truth_item_col="sku")


def test_a_group_nobody_is_in_has_the_values_of_no_rows() -> None:
    catalog = range(10, 16)
    metrics = ["ndcg@2", "coverage@2"]
    res = receval.evaluate(RECS, STARS, metrics, catalog=catalog, user_groups={1: "a", 7: "c"})
    alone = receval.evaluate(RECS.iloc[:0], STARS.iloc[:0], metrics, catalog=catalog)
    row = res.groups.loc[("group", "c")]
    assert math.isnan(row["ndcg@2"]) and math.isnan(alone.summary["ndcg@2"])
    assert row["coverage@2"] == alone.summary["coverage@2"] == 0.0
    assert any("'c'" in n and "0 users" in n for n in res.notes), res.notes  # and said
    # no id of the groups is an evaluated user: every group would be empty, refused
    with pytest.raises(receval.InputError, match="none of the 1 user ids"):
        receval.evaluate(RECS, STARS, metrics, catalog=catalog, user_groups={7: "c"})


def test_ids_order_numbers_first_whatever_the_column() -> None:
    from receval.ids import order_of

    ids = np.array(["b", "10", "9", "-3", "007", "a", "9223372036854775808"], dtype=object)
    assert ids[order_of(ids)].tolist() == [
        "-3",
        "9",
        "10",
        "007",
        "9223372036854775808",
        "a",
        "b",
    ]


def test_accumulator_batches_of_users_of_both_kinds_merge() -> None:
    # a batch of number users, then one of text users: the users of evaluate, in its order
    recs = pd.DataFrame(
        {"user": [1, 1, "x", "x"], "item": [10, 9, 5, 3], "score": [1.0, 1.0, 1.0, 0.5]}
    )
    truth = pd.DataFrame({"user": [1, "x"], "item": [9, 3]})
    whole = receval.evaluate(recs, truth, "precision@1")
    acc = receval.Accumulator("precision@1")
    for user in (1, "x"):
        acc.update(recs[recs["user"] == user], truth[truth["user"] == user])
    batched = acc.compute()
    assert batched.summary == whole.summary == {"precision@1": 0.5}
    assert batched.per_user.index.tolist() == whole.per_user.index.tolist() == ["1", "x"]


def test_the_demo_writes_its_notes_in_one_spelling(tmp_path: Path) -> None:
    # a note naming an option was written to leaderboard.md with both spellings glued
    from receval.workflow.demo import run_demo

    run_demo(tmp_path / "d", users=300, threshold=5, quiet=True)
    board = (tmp_path / "d" / "leaderboard.md").read_text()
    notes = [line for line in board.splitlines() if line.startswith("- note")]
    assert any("empty_truth='skip' (counted" in line for line in notes), notes
    assert not any("--empty-truth" in line for line in notes), notes


def test_a_parquet_file_beside_a_csv_file_names_its_own_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a Parquet file read whole (its partner is not Parquet) lost its column
    # names: the result said "user" for the file's "uid", and the command line
    # could not say which column it read
    recs = pd.DataFrame({"uid": [1, 1, 2], "iid": [1, 2, 3], "score": [0.9, 0.5, 0.3]})
    truth = pd.DataFrame({"uid": [1, 2], "iid": [2, 3]})
    recs.to_parquet(tmp_path / "r.parquet")
    truth.to_csv(tmp_path / "t.csv", index=False)
    res = receval.evaluate(str(tmp_path / "r.parquet"), str(tmp_path / "t.csv"), ["rr"])
    want = receval.evaluate(recs, truth, ["rr"])
    assert res.summary == want.summary
    assert res.parameters["columns"] == want.parameters["columns"]
    assert res.parameters["columns"]["recommendations"]["user"] == "uid"
    code = main(["evaluate", str(tmp_path / "r.parquet"), str(tmp_path / "t.csv"), "-m", "rr"])
    assert code == 0
    assert "r.parquet: using column uid as user" in capsys.readouterr().err
