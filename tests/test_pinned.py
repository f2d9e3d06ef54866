"""Wrong changes that once passed the whole suite, each pinned by a test that
fails on it (issue #37 point 1). Expected values are worked by hand here, never
computed by receval along another path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import ReceValError
from receval.ids import canonical_value

EXACT = 2**53  # the largest magnitude up to which every integer is a float


# -- ids: a whole float is its integer up to and including 2**53 ---------------------------


@pytest.mark.parametrize("sign", [1, -1])
def test_a_float_id_of_2_to_the_53_is_that_integer(sign: int) -> None:
    """2.0**53 is exactly the integer 2**53 (the rule is ``|x| <= 2**53``, not ``<``):
    one Python value, a NumPy array, a table and a CSV file's text all agree."""
    assert canonical_value(sign * 2.0**53) == sign * EXACT
    assert type(canonical_value(sign * 2.0**53)) is int
    recs = pd.DataFrame({"user": [1], "item": [sign * 2.0**53], "rank": [1]})  # float64 column
    truth = pd.DataFrame({"user": [1], "item": [sign * EXACT]})  # int64 column
    assert recs["item"].dtype == np.float64 and truth["item"].dtype == np.int64
    res = receval.evaluate(recs, truth, ["hit_rate@1"])
    assert res.summary["hit_rate@1"] == 1.0  # by hand: the one item recommended is relevant


def test_a_whole_decimal_text_id_of_2_to_the_53_is_that_integer(tmp_path: object) -> None:
    """In a CSV file, ``9007199254740992.0`` is the id 9007199254740992."""
    from pathlib import Path

    folder = Path(str(tmp_path))
    (folder / "recs.csv").write_text("user,item,rank\n1,9007199254740992.0,1\n")
    (folder / "truth.csv").write_text("user,item\n1,9007199254740992\n")
    res = receval.evaluate(folder / "recs.csv", folder / "truth.csv", ["hit_rate@1"])
    assert res.summary["hit_rate@1"] == 1.0


def test_a_float_beyond_2_to_the_53_is_not_an_integer() -> None:
    """Above 2**53 a whole float stands for several integers: it is kept as written
    and matches no integer id (2.0**53 + 2 is exact, yet not taken as 2**53 + 2)."""
    assert canonical_value(2.0**53 + 2) == "9007199254740994.0"
    recs = pd.DataFrame({"user": [1], "item": [2.0**53 + 2], "rank": [1]})
    truth = pd.DataFrame({"user": [1], "item": [EXACT + 2]})
    res = receval.evaluate(recs, truth, ["hit_rate@1"])
    assert res.summary["hit_rate@1"] == 0.0  # "9007199254740994.0" is not "9007199254740994"
    assert any("matched as strings" in n for n in res.notes)  # and the mix is said


# -- Accumulator.merge: options and the row count -----------------------------------------


def test_merge_refuses_other_options() -> None:
    """An accumulator counting grades >= 3 merged into one counting grades >= 1 would
    mix two definitions of relevance: refused."""
    a = receval.Accumulator(["recall@2"], threshold=1)
    b = receval.Accumulator(["recall@2"], threshold=3)
    with pytest.raises(ReceValError, match="options"):
        a.merge(b)
    with pytest.raises(ReceValError, match="options"):
        b.merge(a)
    a.merge(receval.Accumulator(["recall@2"], threshold=1))  # same options: accepted


def _batch(first_rows_relevant: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Scores where item 0 ranks first in every row; targets marking item 0
    relevant in the rows given (1) and item 3 (last) in the others (0)."""
    scores = np.array([[4.0, 3.0, 2.0, 1.0]] * len(first_rows_relevant))
    targets = np.zeros_like(scores)
    for row, hit in enumerate(first_rows_relevant):
        targets[row, 0 if hit else 3] = 1
    return scores, targets


def test_merge_carries_the_row_count() -> None:
    """Default user ids run on across merged batches: a worker that merged another's
    two rows numbers its next rows 2, 3, 4 (not 0, 1, 2, which would collide).
    By hand: 5 users, hits in rows 0, 2, 4 -> hit rate 3/5; users 5."""
    worker = receval.Accumulator(["hit_rate@1"])
    worker.update_scores(*_batch([1, 0]))  # users 0, 1
    main = receval.Accumulator(["hit_rate@1"])
    main.merge(worker)
    main.update_scores(*_batch([1, 0, 1]))  # users 2, 3, 4
    res = main.compute()
    assert res.counts["users"] == 5
    assert res.summary["hit_rate@1"] == pytest.approx(3 / 5, abs=0)
    assert sorted(res.per_user.index) == [0, 1, 2, 3, 4]


# -- ids: NaN is a missing id, whatever else the column holds ------------------------------


def test_nan_is_a_missing_id_in_a_column_of_mixed_values() -> None:
    """The module's rule says NaN is missing: in a column of floats and in one mixing
    numbers and text alike (it was called "non-finite" in the mixed one); infinity is
    non-finite in both."""
    from receval.ids import canonical

    for values in ([1.0, float("nan")], [1, float("nan"), "x"]):
        with pytest.raises(receval.InputError, match="row 1: missing user id"):
            canonical(values, "user", "recs")
    for values in ([1.0, float("inf")], [1, float("inf"), "x"]):
        with pytest.raises(receval.InputError, match="row 1: non-finite user id"):
            canonical(values, "user", "recs")
