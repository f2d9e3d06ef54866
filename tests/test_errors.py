"""Bad input of SPEC §2 as a table: each gives a ValueError subclass naming what and where."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval import InputError, PolicyError, ReceValError

TRUTH = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "relevance": [1, 2, 1]})
RECS = pd.DataFrame({"user": [1, 1, 2], "item": [10, 12, 11], "score": [0.9, 0.5, 0.3]})


def recs(**cols: list[Any]) -> pd.DataFrame:
    frame = RECS.copy()
    for k, v in cols.items():
        frame[k] = v
    return frame


def truth(**cols: list[Any]) -> pd.DataFrame:
    frame = TRUTH.copy()
    for k, v in cols.items():
        frame[k] = v
    return frame


CASES: list[tuple[str, dict[str, Any], type[Exception], list[str]]] = [
    (
        "duplicate item in a list",
        dict(recommendations=recs(item=[10, 10, 11])),
        InputError,
        ["recommendations", "user 1", "item 10", "appears twice", "rows 0 and 1"],
    ),
    (
        "duplicate (user, item) in the truth",
        dict(truth=truth(item=[10, 10, 10])),
        InputError,
        ["truth", "user 1", "item 10", "twice", "rows 0 and 1"],
    ),
    (
        "NaN score",
        dict(recommendations=recs(score=[0.9, math.nan, 0.3])),
        InputError,
        ["recommendations", "row 1", "user 1", "item 12", "finite", "missing value"],
    ),
    (
        "infinite score",
        dict(recommendations=recs(score=[0.9, 0.5, math.inf])),
        InputError,
        ["row 2", "user 2", "item 11", "finite"],
    ),
    (
        "non-numeric score",
        dict(recommendations=recs(score=["0.9", "high", "0.3"])),
        InputError,
        ["row 1", "user 1", "item 12", "a finite number", "'high'"],
    ),
    (
        "negative grade",
        dict(truth=truth(relevance=[1, -1, 1])),
        InputError,
        ["truth", "row 1", "user 1", "item 11", "non-negative", "-1"],
    ),
    (
        "NaN grade",
        dict(truth=truth(relevance=[1, 2, math.nan])),
        InputError,
        ["truth", "row 2", "user 2", "item 10", "non-negative"],
    ),
    (
        "rank zero",
        dict(recommendations=RECS.assign(rank=[1, 0, 1]).drop(columns="score")),
        InputError,
        ["row 1", "user 1", "item 12", "positive integer", "found 0"],
    ),
    (
        "fractional rank",
        dict(recommendations=RECS.assign(rank=[1, 2.5, 1]).drop(columns="score")),
        InputError,
        ["row 1", "positive integer", "2.5"],
    ),
    (
        "repeated rank",
        dict(recommendations=RECS.assign(rank=[1, 1, 1]).drop(columns="score")),
        InputError,
        ["rank 1 appears twice", "user 1", "rows 0 and 1"],
    ),
    (
        "no rank or score column",
        dict(recommendations=RECS.drop(columns="score")),
        InputError,
        ["rank column", "score column", "columns found: user, item"],
    ),
    (
        "missing user column",
        dict(recommendations=RECS.rename(columns={"user": "usr"})),
        InputError,
        ["no user column (looked for user, user_id", "columns found: usr, item, score", "'usr'"],
    ),
    (
        "a close name that serves another role is no hint",
        dict(recommendations=RECS.rename(columns={"user": "visitor"})),
        InputError,
        ["no user column (looked for user", "columns found: visitor, item, score", "user_col="],
    ),
    (
        "an explicit name missing: no hint of a column named for another role",
        dict(recommendations=RECS.rename(columns={"score": "pts"}), score_col="item"),
        InputError,
        [
            "no item column",
            "columns found: user, item, pts",
            "'item' is the score (score_col='item')",
        ],
    ),
    (
        "the user ids in a pandas index",
        dict(recommendations=RECS.set_index("user")),
        InputError,
        ["no user column", "the DataFrame's index 'user' is not read", ".reset_index()"],
    ),
    (
        "missing item column in truth",
        dict(truth=TRUTH.rename(columns={"item": "items"})),
        InputError,
        ["truth", "no item column (looked for item", "did you mean 'items'"],
    ),
    (
        "missing user id",
        dict(recommendations=recs(user=[1, None, 2])),
        InputError,
        ["row 1", "missing user id"],
    ),
    (
        "not a table",
        dict(recommendations=[1, 2, 3]),
        InputError,
        ["pandas/polars/pyarrow table or a mapping", "list"],
    ),
    (
        "truth mapping with a bad grade",
        dict(truth={1: {10: "high"}}),
        InputError,
        ["user 1", "item 10", "relevance must be a number"],
    ),
    ("unknown metric", dict(metrics="ndgc@10"), ReceValError, ["did you mean 'ndcg'"]),
    (
        "bad policy",
        dict(empty_truth="drop"),
        ReceValError,
        ["empty_truth='drop'", "'skip', 'zero', 'keep', 'error'"],
    ),
    ("bad missing_recs", dict(missing_recs="x"), ReceValError, ["missing_recs"]),
    (
        "bad duplicates",
        dict(duplicates="first"),
        ReceValError,
        ["duplicates='first'", "'error', 'keep'"],
    ),
    (
        "bad threshold",
        dict(threshold="high"),
        ReceValError,
        ["threshold='high' is not allowed: expected a finite number"],
    ),
    (
        "empty_truth=error",
        dict(truth=truth(relevance=[1, 2, 0]), empty_truth="error"),
        PolicyError,
        ["user 2", "no relevant item", "empty_truth='error'"],
    ),
    (
        "empty_truth=error on a recommendation-only user",
        dict(truth=TRUTH[TRUTH.user == 1], empty_truth="error"),
        PolicyError,
        ["user 2", "recommendations but no truth"],
    ),
    (
        "missing_recs=error",
        dict(recommendations=RECS[RECS.user == 1], missing_recs="error"),
        PolicyError,
        ["user 2", "no recommendations", "missing_recs='error'"],
    ),
    (
        "err max_grade below the truth's grades",
        dict(metrics="err[max_grade=1]"),
        ReceValError,
        ["max_grade=1", "largest grade in the truth (2)"],
    ),
]


@pytest.mark.parametrize(("what", "kwargs", "error", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error(
    what: str, kwargs: dict[str, Any], error: type[Exception], words: list[str]
) -> None:
    args: dict[str, Any] = {"recommendations": RECS, "truth": TRUTH, "metrics": "ndcg@10"}
    args.update(kwargs)
    with pytest.raises(error) as info:
        receval.evaluate(
            args.pop("recommendations"), args.pop("truth"), args.pop("metrics"), **args
        )
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_input_error_carries_its_location() -> None:
    with pytest.raises(InputError) as info:
        receval.evaluate(recs(score=[0.9, math.nan, 0.3]), TRUTH, "p@1")
    err = info.value
    assert (err.source, err.row, err.user, err.item) == ("recommendations", 1, 1, 12)
    moved = err.located(source="recs.csv", line_offset=2)
    assert str(moved).startswith("recs.csv, line 3, user 1, item 12:")


def test_duplicates_keep_first_occurrence_and_largest_grade() -> None:
    r = pd.DataFrame({"user": [1, 1, 1], "item": [10, 12, 10], "score": [0.9, 0.8, 0.7]})
    t = pd.DataFrame({"user": [1, 1], "item": [12, 12], "relevance": [1, 3]})
    res = receval.evaluate(r, t, ["dcg@2", "precision@2"], duplicates="keep")
    # list [10, 12]; item 12 keeps grade 3
    assert res.summary["dcg@2"] == pytest.approx(3 / math.log2(3))
    assert res.summary["precision@2"] == pytest.approx(0.5)
    assert res.counts["recommendation_rows_duplicate_dropped"] == 1
    assert res.counts["truth_rows_duplicate_dropped"] == 1
    assert res.counts["recommendation_rows"] == 3
    assert res.counts["truth_rows"] == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"recommendations": RECS.rename(columns={"user": "visitor"})},  # 'score' is the score
        {"recommendations": RECS.rename(columns={"score": "pts"}), "score_col": "item"},
    ],
)
def test_no_close_match_is_offered_that_serves_another_role(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"recommendations": RECS, "truth": TRUTH, **kwargs}
    with pytest.raises(InputError) as info:
        receval.evaluate(args.pop("recommendations"), args.pop("truth"), "ndcg@10", **args)
    assert "did you mean" not in str(info.value)


_BAD_VALUES = [("user", math.nan), ("item", math.nan), ("score", math.inf), ("score", math.nan)]


@pytest.mark.parametrize("seed", range(6))
def test_the_error_names_the_first_offending_row_whatever_check_finds_it(
    seed: int, tmp_path: Path
) -> None:
    """SPEC 2.3: bad values of several kinds on several rows (a missing user
    or item id, a missing or infinite score; a negative or missing grade):
    the error names the first offending row of the input, though the checks
    run kind by kind. Through a CSV file (its line), an empty id is met as
    the file is read, before any value is checked: the first line with an
    empty id of either column is named, else the first offending line."""
    rng = np.random.default_rng(seed)
    n = 40
    recs = pd.DataFrame(
        {
            "user": rng.integers(0, 8, n).astype(float),
            "item": np.arange(n, dtype=float),
            "score": rng.random(n),
        }
    )
    truth = pd.DataFrame({"user": np.arange(n) % 8, "item": np.arange(n), "relevance": 1.0})
    rows = rng.choice(n, 4, replace=False)
    empty_ids = []
    if seed % 2 == 0:
        for row, how in zip(rows, rng.permutation(4), strict=True):
            column, value = _BAD_VALUES[how]
            recs.loc[row, column] = value
            if column != "score":
                empty_ids.append(row)
        name = "recommendations"
    else:
        truth.loc[rows[:2], "relevance"] = [-1.0, math.nan]
        rows, name = rows[:2], "truth"
    with pytest.raises(InputError) as got:
        receval.evaluate(recs, truth, "ndcg@10")
    assert (got.value.source, got.value.row) == (name, min(rows)), str(got.value)
    recs.to_csv(tmp_path / "recs.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    with pytest.raises(InputError) as read:
        receval.evaluate(tmp_path / "recs.csv", tmp_path / "truth.csv", "ndcg@10")
    first = min(empty_ids or rows)
    assert read.value.line == first + 2, str(read.value)  # the header is line 1
