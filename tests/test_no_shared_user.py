"""Recommendations and truth without a user in common are an error, not zeros;
a truth given where the recommendations go gets a hint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.errors import InputError, NoSharedUser


def test_no_shared_user_is_an_error_with_examples_of_each_side() -> None:
    with pytest.raises(NoSharedUser) as info:
        receval.evaluate({"u1": [1, 2], "u2": [3]}, {1: [1], 2: [2]}, "ndcg@2")
    err = info.value
    assert err.recommendation_users == ["u1", "u2"] and err.truth_users == ["1", "2"]
    assert "none in common" in str(err) and "'u1', 'u2'" in str(err)
    assert isinstance(err, receval.ReceValError)


def test_no_shared_user_streamed_and_in_chunks(tmp_path: Path) -> None:
    recs = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "score": [3.0, 2.0, 1.0]})
    truth = pd.DataFrame({"user": [7, 8], "item": [1, 3]})
    recs.to_parquet(tmp_path / "r.parquet")
    truth.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(NoSharedUser, match=r"2 users have recommendations \(e.g. 1, 2\)"):
        receval.evaluate(tmp_path / "r.parquet", tmp_path / "t.parquet", "recall@2")


def test_one_shared_user_is_enough() -> None:
    res = receval.evaluate({1: [1], 2: [2]}, {2: [2], 3: [3]}, "recall@1")
    assert res.counts["users_evaluated"] == 2  # user 1 has no truth: skipped


def test_cli_exits_2_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("user,item,score\n1,1,3\n2,2,1\n")
    (tmp_path / "t.csv").write_text("user,item\na,1\nb,2\n")
    done = subprocess.run(
        [sys.executable, "-m", "receval", "evaluate", "r.csv", "t.csv", "-m", "ndcg@2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "no user is in both" in done.stderr and "Traceback" not in done.stderr


def test_truth_given_as_recommendations_gets_a_hint(tmp_path: Path) -> None:
    recs = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "score": [3, 2, 1]})
    truth = pd.DataFrame({"user": [1, 2], "item": [2, 3], "rating": [1, 5]})
    with pytest.raises(InputError, match="the other way round"):
        receval.evaluate(truth, recs, "ndcg@2")
    truth.to_csv(tmp_path / "t.csv", index=False)
    recs.to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(InputError, match="has a 'rating' column, as a truth has"):
        receval.evaluate(tmp_path / "t.csv", tmp_path / "r.csv", "ndcg@2")
