"""``evaluate_ratings`` takes a path, through the one way in (issue #30):
the same numbers as the table the file holds, bit for bit, with ids as
integers, digit strings and text, and errors naming the file's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval

METRICS = ["mae", "rmse", "r2", "rmse[per_user=true]", "pearson[per_user=true]"]


def _ratings(form: str) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    users = rng.integers(0, 40, 300)
    frame = pd.DataFrame(
        {
            "user": users,
            "item": rng.integers(0, 90, 300),
            "actual": rng.integers(1, 6, 300).astype(float),
            "predicted": np.round(rng.uniform(1, 5, 300), 3),
        }
    )
    if form == "digits":
        frame["user"] = frame["user"].astype(str)
    elif form == "text":
        frame["user"] = "u" + frame["user"].astype(str)
    return frame


@pytest.mark.parametrize("form", ["int", "digits", "text"])
@pytest.mark.parametrize("suffix", ["csv", "tsv", "parquet"])
def test_a_ratings_file_gives_the_numbers_of_its_table(
    tmp_path: Path, form: str, suffix: str
) -> None:
    frame = _ratings(form)
    path = tmp_path / f"ratings.{suffix}"
    if suffix == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False, sep="\t" if suffix == "tsv" else ",")
    want = receval.evaluate_ratings(frame, METRICS)
    got = receval.evaluate_ratings(str(path), METRICS)
    assert got.summary == want.summary
    assert got.counts == want.counts
    a, b = got.per_user, want.per_user
    b.index = b.index.map(lambda u: int(u) if form == "digits" else u)  # "7" is 7 in a file
    pd.testing.assert_frame_equal(a.sort_index(), b.sort_index(), check_exact=True)


def test_an_error_names_the_file_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("user,item,actual,predicted\n1,1,4,3.5\n1,2,x,2.5\n")
    with pytest.raises(
        receval.InputError,
        match=r"bad\.csv, line 3, user 1, item 2: actual rating must be a number",
    ):
        receval.evaluate_ratings(str(path), ["mae"])
