"""SPEC §11 known values of the ranking metrics: tests/data/known_values.csv.

Each row names a case (the inputs below), a metric string, a user (empty: the
mean over users) and the expected value, printed to 4 decimals in SPEC §11 or
given in full for hand-worked cases. Both ``receval.evaluate`` and the slow
reference of ``tests/reference.py`` must reproduce every row. Each row asks one
metric per call; ``tests/test_known_values_multi.py`` asks several metrics at
several cut-offs in one call, for every metric of the registry.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import receval
from tests.reference import (
    LIST_ONLY,
    METRIC_PARAMS,
    lists_from_rows,
    ref_evaluate,
    ref_means,
    ref_parse,
)

DATA = Path(__file__).parent / "data" / "known_values.csv"
TOL = 5e-5  # values printed to 4 decimals

FIVE_RECS = {"u1": [1, 6, 8], "u2": [1, 2, 3, 4, 5], "u4": [1, 2, 3, 4]}
FIVE_TRUTH = {"u1": [1, 2, 3, 4, 5, 6], "u2": [2, 4, 6], "u3": [2, 4, 6]}
GRADED_TRUTH = {1: {1: 3, 2: 2, 3: 1, 4: 0}, 2: {7: 4}}
TIES = pd.DataFrame({"user": 1, "item": [2, 5, 1, 3], "score": [0.9, 0.5, 0.5, 0.1]})
STRINGS = pd.DataFrame(
    {
        "user": ["x", "x", "y", "y", "z", "z", "z"],
        "item": ["b9", "b10", "a", "B", "10", "9", "q"],
        "score": 1.0,
    }
)
RANKS = pd.DataFrame({"user": 1, "item": [3, 1, 2], "rank": [5, 2, 9]})

#: case -> (recommendations, truth, keyword arguments of evaluate)
CASES: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "spec5": (FIVE_RECS, FIVE_TRUTH, {}),
    "spec5_zero": (FIVE_RECS, FIVE_TRUTH, {"empty_truth": "zero"}),
    "spec5_skip": (FIVE_RECS, FIVE_TRUTH, {"missing_recs": "skip"}),
    "seed002": (
        {1: [1, 3, 5, 7, 9], 2: [2, 4, 6, 8], 3: list(range(11, 18))},
        {1: [2, 3, 5, 7, 11], 2: [1, 4, 6, 8, 9], 3: list(range(16, 21))},
        {},
    ),
    "seed002_pr": ({1: [1, 3, 5, 7, 9]}, {1: [2, 3, 5, 7, 11, 15, 20]}, {}),
    "seed003_a": ({"A": [1, 7, 2, 8, 9]}, {"A": [1, 2, 3, 4, 5, 6]}, {}),
    "seed003_b": ({"B": [7, 1, 8, 2, 9]}, {"B": [1, 2, 3, 4, 5, 6]}, {}),
    "seed003_c": ({"C": [2, 1, 9]}, {"C": [1, 2]}, {}),
    "graded": ({1: [2, 5, 1, 3], 2: [7]}, GRADED_TRUTH, {}),
    "graded_t2": ({1: [2, 5, 1, 3], 2: [7]}, GRADED_TRUTH, {"threshold": 2}),
    "ties": (TIES, {1: {1: 3, 2: 2, 3: 1, 4: 0}}, {}),
    "strings": (STRINGS, {"x": ["b10"], "y": ["a"], "z": ["10"]}, {}),
    "threshold0": ({1: [1, 2]}, {1: {1: 0, 2: 1}}, {"threshold": 0}),
    "ranks": (RANKS, {1: [2]}, {}),
    # trec_eval's judgments: item 3 judged non-relevant, 4 pooled but unjudged (a
    # negative grade), 2 and 7 never judged
    "judged": (
        {1: [1, 2, 3, 4, 5], 2: [6, 7]},
        {1: {1: 1, 3: 0, 4: -1, 5: 2, 9: 1}, 2: {6: 0, 8: 1}},
        {"negative_grades": "unjudged"},
    ),
}


def _rows() -> list[dict[str, str]]:
    with DATA.open() as f:
        return list(csv.DictReader(f))


ROWS = _rows()


def _user(case: str, text: str) -> Any:
    """The user id of a row, typed like the case's ids."""
    truth = CASES[case][1]
    return int(text) if any(isinstance(u, int) for u in truth) else text


def _check(got: float, row: dict[str, str]) -> None:
    expected = float(row["expected"])
    label = f"{row['case']} {row['metric']} user={row['user'] or 'mean'}: {row['why']}"
    if math.isnan(expected):
        assert math.isnan(got), f"{label}: expected NaN, got {got}"
    else:
        assert got == pytest.approx(expected, abs=TOL), label


def _row_id(row: dict[str, str]) -> str:
    return f"{row['case']}-{row['metric']}-{row['user'] or 'mean'}"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_known_value(row: dict[str, str]) -> None:
    recs, truth, kwargs = CASES[row["case"]]
    res = receval.evaluate(recs, truth, row["metric"], **kwargs)
    name = str(receval.parse_metric(row["metric"]))
    if row["user"]:
        got = float(res.per_user.loc[_user(row["case"], row["user"]), name])
    else:
        got = float(res.summary[name])
    _check(got, row)


def _reference(case: str, metric: str) -> tuple[dict[Any, dict[str, float]], dict[str, float]]:
    """Per-user values and means of one metric on one case, by the slow reference."""
    recs, truth, kwargs = CASES[case]
    scores = None
    if isinstance(recs, pd.DataFrame):
        by = "score" if "score" in recs else "rank"
        rows = zip(recs["user"], recs["item"], recs[by], strict=True)
        recs, values = lists_from_rows(rows, by=by)
        scores = values if by == "score" else None
    grades = {
        u: dict(items) if isinstance(items, dict) else dict.fromkeys(items, 1)
        for u, items in truth.items()
    }
    per_user = ref_evaluate(
        recs,
        grades,
        {metric: ref_parse(metric)},
        threshold=kwargs.get("threshold", 1),
        empty_truth=kwargs.get("empty_truth", "skip"),
        missing_recs=kwargs.get("missing_recs", "zero"),
        scores=scores,
    )
    return per_user, ref_means(per_user)


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_reference_reproduces_known_value(row: dict[str, str]) -> None:
    per_user, means = _reference(row["case"], row["metric"])
    if row["user"]:
        got = per_user[_user(row["case"], row["user"])][row["metric"]]
    else:
        got = means[row["metric"]]
    _check(got, row)


def test_five_users_rows() -> None:
    """u1-u3 come from the truth, u4 from the lists; u5 (in neither) is absent."""
    res = receval.evaluate(FIVE_RECS, FIVE_TRUTH, ["precision@3", "ndcg@5"])
    assert sorted(res.per_user.index) == ["u1", "u2", "u3", "u4"]
    assert res.per_user.loc["u4"].isna().all()
    assert res.per_user.loc[["u1", "u2", "u3"]].notna().all().all()


def test_every_ranking_metric_has_a_known_value() -> None:
    """Every ranking metric of the registry that reads the truth has rows here
    (list-only ones are in known_values_beyond.csv)."""
    names = {ref_parse(r["metric"])[0] for r in ROWS}
    canonical = {receval.parse_metric(n).name for n in names}
    assert set(METRIC_PARAMS) - LIST_ONLY <= canonical
