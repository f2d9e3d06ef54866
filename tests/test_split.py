"""Splits: exact sizes on hand-made logs, disjointness, determinism, time order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from receval.errors import InputError, ReceValError
from receval.workflow.split import (
    filter_interactions,
    kfold,
    leave_one_out,
    random_split,
    split,
    time_split,
    user_time_split,
)
from receval.workflow.synthetic import synthetic_interactions


def hand_log() -> pd.DataFrame:
    """u1: 5 rows (t 1..5), u2: 3 rows (t 10, 20, 20: a tie), u3: 1 row."""
    return pd.DataFrame(
        {
            "id": range(9),
            "user": ["u1"] * 5 + ["u2"] * 3 + ["u3"],
            "item": [1, 2, 3, 4, 5, 1, 2, 6, 1],
            "rating": [5, 4, 3, 2, 1, 5, 2, 4, 3],
            "timestamp": [5, 1, 4, 2, 3, 10, 20, 20, 7],
        }
    )


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    frame = synthetic_interactions(300, 80, seed=3)
    return frame.assign(id=np.arange(len(frame)))


def parts(s):
    return [p for p in (s.train, s.validation, s.test) if p is not None]


def assert_partition(s, log: pd.DataFrame) -> None:
    ids = np.concatenate([p["id"].to_numpy() for p in parts(s)])
    assert len(ids) == len(set(ids)), "a row is in two parts"
    assert set(ids) == set(log["id"]), "a row was lost"


def test_leave_one_out_exact() -> None:
    s = leave_one_out(hand_log())
    # u1's latest is t=5 (item 1); u2's t=20 tie: the later row (item 6) is last;
    # u3 has one row and stays in train.
    assert s.test["id"].tolist() == [0, 7]
    assert s.sizes()["train"] == {"rows": 7, "users": 3, "items": 5}
    assert s.sizes()["test"] == {"rows": 2, "users": 2, "items": 2}
    assert s.info["users_without_test"] == 1
    assert any("1 users have no test row" in n for n in s.describe())


def test_user_time_share_rounds_half_up() -> None:
    s = user_time_split(hand_log(), 0.5)
    # u1: round(2.5) = 3 rows (t 3, 4, 5); u2: round(1.5) = 2 rows; u3: 0 (keeps 1).
    assert sorted(s.test["id"].tolist()) == [0, 2, 4, 6, 7]
    assert s.sizes()["test"]["rows"] == 5


def test_user_time_count_capped_and_validation() -> None:
    s = split(hand_log(), "user_time", test_size=1, validation_size=1)
    assert s.test["id"].tolist() == [0, 7]
    assert s.validation is not None
    assert s.validation["id"].tolist() == [2, 6]
    assert sorted(s.train["id"].tolist()) == [1, 3, 4, 5, 8]


def test_time_global_share_and_cutoff() -> None:
    s = time_split(hand_log(), 0.25)  # round(2.25) = 2 rows: the t=20 pair
    assert sorted(s.test["id"].tolist()) == [6, 7]
    assert s.info["parameters"]["cutoff_found"] == 20
    s = time_split(hand_log(), 3 / 9)  # 3 rows: starts at t=10
    assert sorted(s.test["id"].tolist()) == [5, 6, 7]
    s = split(hand_log(), "time", cutoff=5, validation_cutoff=4)
    assert sorted(s.test["id"].tolist()) == [0, 5, 6, 7, 8]
    assert s.validation is not None and s.validation["id"].tolist() == [2]


def test_time_global_ties_stay_together() -> None:
    log = pd.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 1, 1], "timestamp": [1, 2, 2, 2]})
    s = time_split(log, 1)  # one row asked; the three rows at t=2 go together
    assert len(s.test) == 3


def test_time_on_dates() -> None:
    log = hand_log().assign(timestamp=pd.to_datetime(hand_log()["timestamp"], unit="D"))
    s = split(log, "time", cutoff="1970-01-11")
    assert sorted(s.test["id"].tolist()) == [5, 6, 7]


def test_random_sizes_determinism_disjointness(log: pd.DataFrame) -> None:
    a = random_split(log, 0.2, seed=7, validation_size=0.1)
    b = random_split(log, 0.2, seed=7, validation_size=0.1)
    c = random_split(log, 0.2, seed=8, validation_size=0.1)
    n = len(log)
    assert len(a.test) == int(np.floor(0.2 * n + 0.5))
    assert a.validation is not None and len(a.validation) == int(np.floor(0.1 * n + 0.5))
    assert a.test.equals(b.test) and a.train.equals(b.train)
    assert not a.test.equals(c.test)
    assert_partition(a, log)
    assert len(random_split(log, 17, seed=1).test) == 17


def test_user_random_per_user_counts(log: pd.DataFrame) -> None:
    s = split(log, "user_random", test_size=0.3, seed=1)
    assert_partition(s, log)
    n = log.groupby("user").size()
    t = s.test.groupby("user").size().reindex(n.index, fill_value=0)
    expected = np.minimum(np.floor(0.3 * n + 0.5), n - 1).astype(int)
    assert (t == expected).all()
    assert s.test.equals(split(log, "user_random", test_size=0.3, seed=1).test)


def test_chronological_per_user_order(log: pd.DataFrame) -> None:
    s = split(log, "user_time", test_size=0.25, validation_size=0.25)
    assert_partition(s, log)
    assert s.validation is not None
    tr = s.train.groupby("user")["timestamp"].max()
    va = s.validation.groupby("user")["timestamp"]
    te = s.test.groupby("user")["timestamp"].min()
    assert (tr.reindex(te.index) <= te).all()
    assert (va.max().reindex(te.index).fillna(-np.inf) <= te).all()
    assert (tr.reindex(va.min().index) <= va.min()).all()


def test_chronological_global_order(log: pd.DataFrame) -> None:
    s = time_split(log, 0.2, validation_size=0.1)
    assert_partition(s, log)
    assert s.validation is not None
    assert s.train["timestamp"].max() < s.validation["timestamp"].min()
    assert s.validation["timestamp"].max() < s.test["timestamp"].min()


def test_filter_fixed_point(log: pd.DataFrame) -> None:
    kept, dropped = filter_interactions(log, min_user_interactions=10, min_item_interactions=15)
    assert (kept.groupby("user").size() >= 10).all()
    assert (kept.groupby("item").size() >= 15).all()
    assert dropped["rows"] == len(log) - len(kept)
    assert dropped["rounds"] >= 2
    s = split(log, "user_time", min_user_interactions=10, min_item_interactions=15)
    assert s.info["sizes"]["filtered"]["rows"] == len(kept)
    assert s.info["dropped"]["min_interactions"] == dropped


def test_threshold_and_unseen() -> None:
    s = leave_one_out(hand_log(), relevance_threshold=3)
    # u1's last row is rated 5 (kept); u2's last (item 6) is rated 4 (kept).
    assert s.test["id"].tolist() == [0, 7]
    s = split(hand_log(), "user_time", test_size=2, relevance_threshold=4)
    # u1 last two: t=4 (rating 3) and t=5 (rating 5); u2: ids 6 (2) and 7 (4).
    assert s.test["id"].tolist() == [0, 7]
    assert s.info["dropped"]["below_threshold"] == {"test": 2}
    s = leave_one_out(hand_log(), drop_unseen_items=True)
    # item 6 (u2's test item) never occurs in train.
    assert s.test["id"].tolist() == [0]
    assert s.info["dropped"]["unseen_items"] == {"test": {"rows": 1, "items": 1}}
    s = split(hand_log(), "time", cutoff=7, drop_unseen_users=True)
    # u3's only row (t=7) and all of u2's rows are test: neither has a training row.
    assert s.test["id"].tolist() == []
    assert s.info["dropped"]["unseen_users"]["test"] == {"rows": 4, "users": 2}


def test_kfold_by_interaction(log: pd.DataFrame) -> None:
    folds = list(kfold(log, 4, by="interaction", seed=2))
    assert len(folds) == 4
    test_ids = [set(f.test["id"]) for f in folds]
    assert set().union(*test_ids) == set(log["id"])
    assert sum(len(t) for t in test_ids) == len(log)
    for f in folds:
        assert_partition(f, log)
        assert abs(len(f.test) - len(log) / 4) <= 1
    again = list(kfold(log, 4, by="interaction", seed=2))
    assert all(a.test.equals(b.test) for a, b in zip(folds, again, strict=True))


def test_kfold_by_user(log: pd.DataFrame) -> None:
    folds = list(kfold(log, 3, by="user", holdout=2, order="time", seed=0))
    users = [set(f.test["user"]) for f in folds]
    assert not (users[0] & users[1]) and not (users[1] & users[2])
    for f in folds:
        assert_partition(f, log)
        assert (f.test.groupby("user").size() <= 2).all()
        tr = f.train.groupby("user")["timestamp"].max()
        te = f.test.groupby("user")["timestamp"].min()
        assert (tr.reindex(te.index) <= te).all()
    assert [f.info["fold"] for f in folds] == [0, 1, 2]


def test_save(tmp_path) -> None:
    s = leave_one_out(hand_log())
    paths = s.save(tmp_path)
    assert pd.read_parquet(paths["test"]).equals(s.test)
    assert paths["info"].read_text().startswith("{")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "user_time", "test_size": 1.5}, ReceValError, "test_size"),
        ({"method": "bogus"}, ReceValError, "method=.bogus. is not allowed: expected one of"),
        ({"method": "random", "test_size": -1}, ReceValError, "test_size"),
        ({"method": "random", "test_size": 0}, ReceValError, r"test_size=0 .*a count >= 1"),
        ({"method": "user_time", "test_size": 0}, ReceValError, r"test_size=0 .*a count >= 1"),
        (
            {"method": "random", "min_user_interactions": -3},
            ReceValError,
            r"min_user_interactions=-3 is not allowed: expected a whole number >= 0",
        ),
        ({"method": "time", "cutoff": "abc"}, ReceValError, r"cutoff='abc' is not allowed"),
    ],
)
def test_errors(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        split(hand_log(), **kwargs)


def test_missing_columns() -> None:
    with pytest.raises(InputError, match="timestamp column 'timestamp'"):
        leave_one_out(hand_log().drop(columns="timestamp"))
    with pytest.raises(InputError, match="rating column"):
        leave_one_out(hand_log().drop(columns="rating"), relevance_threshold=3)
    bad = hand_log().astype({"timestamp": float})
    bad.loc[3, "timestamp"] = np.nan
    with pytest.raises(InputError, match="row 3"):
        leave_one_out(bad)


@pytest.mark.parametrize("form", ["int", "digits", "text"])
def test_user_time_ties_in_time_depend_on_no_row_order(form: str) -> None:
    """Rows of a user sharing the timestamp at the cut: the same test rows
    whatever the row order and the ids' form (ties by item id, the larger later)."""
    log = pd.DataFrame(
        {
            "user": [1, 1, 1, 1, 2, 2, 2],
            "item": [5, 3, 9, 4, 7, 2, 8],
            "timestamp": [1, 2, 2, 2, 5, 6, 6],
        }
    )
    if form != "int":
        log["item"] = log["item"].map(lambda v: f"i{v}" if form == "text" else str(v))
    want = None
    for seed in range(4):
        shuffled = log.sample(frac=1, random_state=seed).reset_index(drop=True)
        test = split(shuffled, "user_time", test_size=1).test
        got = sorted(zip(test["user"], test["item"].astype(str), strict=True))
        want = want or got
        assert got == want
    assert [i for _, i in want] == (["i9", "i8"] if form == "text" else ["9", "8"])


def test_timestamps_written_as_text_of_numbers_split_as_numbers() -> None:
    """A timestamp column of digit strings (a JSON file's "9") splits as the
    same numbers do (was refused: neither numbers nor dates)."""
    log = pd.DataFrame(
        {"user": [1, 1, 1, 2, 2], "item": [1, 2, 3, 1, 4], "timestamp": [9, 10, 11, 5, 100]}
    )
    want = split(log, method="leave_last_out")
    got = split(log.astype({"timestamp": str}), method="leave_last_out")
    assert got.test[["user", "item"]].values.tolist() == want.test[["user", "item"]].values.tolist()
    assert got.test[["user", "item"]].values.tolist() == [[1, 3], [2, 4]]
