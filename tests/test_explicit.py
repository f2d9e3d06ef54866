"""Ranking metrics on explicit feedback (SPEC §4): lists from predicted ratings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval.evaluation.api import evaluate_explicit

# one user: by predicted rating the list is 1 (rec, rel), 2 (rec), 4 (rec), 3 (not rec, rel)
RATINGS = pd.DataFrame(
    {
        "user": [1, 1, 1, 1],
        "item": [1, 2, 3, 4],
        "actual": [5.0, 2.0, 4.0, 1.0],
        "predicted": [4.5, 4.0, 2.0, 3.9],
    }
)
REC = "[denominator=recommended]"


def test_hand_worked_user() -> None:
    res = evaluate_explicit(
        RATINGS,
        [f"precision@3{REC}", f"precision@4{REC}", "precision@4", "recall@4", "recall@1"],
        threshold=3.5,
    )
    s = res.summary
    assert s[f"precision@3{REC}"] == pytest.approx(1 / 3)
    assert s[f"precision@4{REC}"] == pytest.approx(1 / 3)  # item 3 is not recommended
    assert s["precision@4"] == pytest.approx(1 / 4)
    assert s["recall@4"] == pytest.approx(1 / 2)  # relevant: 1 and 3; 3 not recommended
    assert s["recall@1"] == pytest.approx(1 / 2)
    assert res.parameters["order"].startswith("predicted rating")


def test_nan_when_nothing_is_recommended() -> None:
    r = RATINGS.assign(predicted=[1.0, 1.0, 1.0, 1.0])
    res = evaluate_explicit(r, [f"precision@2{REC}", "recall@2"], threshold=3.5)
    assert math.isnan(res.summary[f"precision@2{REC}"])
    assert res.summary["recall@2"] == 0.0
    assert res.counts["undefined"] == {f"precision@2{REC}": 1}


def test_user_without_relevant_items_is_skipped() -> None:
    r = pd.concat([RATINGS, RATINGS.assign(user=2, actual=1.0)], ignore_index=True)
    res = evaluate_explicit(r, f"precision@2{REC}", threshold=3.5)
    assert math.isnan(res.per_user.loc[2].iloc[0])
    assert res.counts["users_skipped"]["no_relevant_items"] == 1


def test_missing_ratings_error_or_dropped_and_counted() -> None:
    r = RATINGS.copy()
    r.loc[2, "actual"] = np.nan
    with pytest.raises(receval.InputError) as info:
        evaluate_explicit(r, "recall@2", threshold=3.5)
    assert info.value.row == 2 and info.value.item == 3 and "dropna=True" in str(info.value)
    res = evaluate_explicit(r, "recall@4", threshold=3.5, dropna=True)
    assert res.counts["rating_rows_dropped_missing"] == 1
    assert res.summary["recall@4"] == 1.0  # item 3 is gone: relevant {1}, found
    neg = RATINGS.assign(actual=[5.0, -1.0, 4.0, 1.0])
    r2 = pd.concat([r.iloc[[2]], neg], ignore_index=True)
    with pytest.raises(receval.InputError) as info:
        evaluate_explicit(r2, "recall@2", threshold=3.5, dropna=True)
    assert info.value.row == 2  # the row in the table given, not after dropping


def test_recommended_denominator_needs_ratings() -> None:
    with pytest.raises(receval.ReceValError, match="evaluate_explicit"):
        receval.evaluate({1: [1]}, {1: [1]}, f"precision@3{REC}")
    with pytest.raises(receval.ReceValError, match="not a ranking metric"):
        evaluate_explicit(RATINGS, "coverage")


def _slow(frame: pd.DataFrame, k: int, thr: float) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {"p": {}, "r": {}, "pk": {}}
    for user, g in frame.groupby("user"):
        rows = sorted(g.itertuples(index=False), key=lambda t: (-t.predicted, t.item))
        top = rows[:k]
        relevant = [t for t in rows if t.actual >= thr and t.actual > 0]
        if not relevant:
            continue
        rec_top = [t for t in top if t.predicted >= thr]
        hits = [t for t in rec_top if t.actual >= thr]
        out["p"][user] = len(hits) / len(rec_top) if rec_top else math.nan
        out["r"][user] = len(hits) / len(relevant)
        out["pk"][user] = len(hits) / k
    return out


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_explicit_mode_agrees_with_a_slow_reference(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 40))
    rows = data.draw(
        st.lists(
            st.tuples(st.integers(0, 5), st.integers(1, 5), st.integers(1, 5)),
            min_size=n,
            max_size=n,
        )
    )
    frame = pd.DataFrame(rows, columns=["user", "actual", "predicted"]).astype(float)
    frame["user"] = frame["user"].astype(int)
    frame["item"] = frame.groupby("user").cumcount()
    k = data.draw(st.sampled_from([1, 2, 3, 5]))
    thr = data.draw(st.sampled_from([3.0, 4.0]))
    res = evaluate_explicit(
        frame, [f"precision@{k}{REC}", f"recall@{k}", f"precision@{k}"], threshold=thr
    )
    expected = _slow(frame, k, thr)
    for key, name in (("p", f"precision@{k}{REC}"), ("r", f"recall@{k}"), ("pk", f"precision@{k}")):
        for user, value in expected[key].items():
            got = res.per_user.loc[user, name]
            assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value)
