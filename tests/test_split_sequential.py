"""Splits for sequential protocols (issue #36 point 1): ``leave_last_out``
(``leave_one_out`` is its n = 1 case), ``session`` and ``time_windows``, on
hand-worked logs with known parts; every row in exactly one part; the same
parts whatever the row order and the form of the ids; a slow literal
reference on random logs; the leakage checks catching planted leaks; the
command line's refusals naming the flag."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.cli import main
from receval.errors import ReceValError
from receval.workflow.checks import check
from receval.workflow.split import (
    leave_last_out,
    leave_one_out,
    session_split,
    split,
    time_windows,
)


def items(frame: pd.DataFrame | None) -> list:
    return [] if frame is None else sorted(frame["item"].tolist(), key=str)


# -- leave_last_out --------------------------------------------------------------------------

# user a: by time, then item id: 8 (t0), 5 (t1), 6 and 7 (t2: 6 first), 9 (t3).
# user b: three rows at t5: items 1, 2, 10 in id order (10 after 2: numeric, not text).
# user c: one row: train only.
LLO = pd.DataFrame(
    {
        "user": ["a", "a", "a", "a", "a", "b", "b", "b", "c"],
        "item": [5, 7, 6, 8, 9, 10, 1, 2, 3],
        "timestamp": [1, 2, 2, 0, 3, 5, 5, 5, 4],
    }
)


def test_leave_last_out_hand_worked() -> None:
    s = leave_last_out(LLO, 2, validation=1)
    a = s.test[s.test["user"] == "a"]
    assert items(a) == [7, 9]
    assert items(s.validation) == [6]  # b: 3 rows, 2 test, none left for validation
    assert items(s.test[s.test["user"] == "b"]) == [10, 2]
    assert sorted(s.train["item"].tolist()) == [1, 3, 5, 8]
    assert s.info["method"] == "leave_last_out"
    assert s.info["parameters"] == {"test_size": 2, "validation_size": 1}
    one = leave_last_out(LLO)
    assert items(one.test) == [10, 9]


def test_leave_one_out_is_leave_last_out_one() -> None:
    a, b = leave_one_out(LLO), leave_last_out(LLO, 1)
    pd.testing.assert_frame_equal(a.test, b.test)
    pd.testing.assert_frame_equal(a.train, b.train)
    assert a.info["method"] == "leave_one_out" and a.info["parameters"] == {}


def test_leave_last_out_ties_ignore_row_order_and_id_form() -> None:
    base = leave_last_out(LLO, 2)
    shuffled = leave_last_out(LLO.sample(frac=1, random_state=3), 2)
    assert items(shuffled.test) == items(base.test)
    texts = LLO.assign(item=LLO["item"].astype(str), user=LLO["user"])
    assert sorted(leave_last_out(texts, 2).test["item"].astype(int)) == sorted(base.test["item"])
    floats = LLO.assign(item=LLO["item"].astype(float))
    assert sorted(leave_last_out(floats, 2).test["item"]) == sorted(base.test["item"])


def test_leave_last_out_refuses_shares() -> None:
    with pytest.raises(ReceValError, match=r"test_size=0\.5 is not allowed: expected an integer"):
        split(LLO, "leave_last_out", test_size=0.5)
    with pytest.raises(ReceValError, match="validation_size"):
        split(LLO, "leave_last_out", validation_size=0.1)
    with pytest.raises(ReceValError, match="session_gap=30 is not allowed"):
        split(LLO, "leave_last_out", session_gap=30)


# -- session ---------------------------------------------------------------------------------

# gap 30: user 1: [0, 10] and [100]; user 2: [95, 99]; user 3: [50, 60] and [200].
# cut 98: [95, 99] straddles it.
SES = pd.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 3, 3, 3],
        "item": [1, 2, 3, 4, 5, 6, 7, 8],
        "timestamp": [0, 10, 100, 95, 99, 50, 60, 200],
        "sid": ["x", "x", "y", "x", "x", "x", "x", "z"],
    }
)


@pytest.mark.parametrize(
    ("straddle", "test", "train", "sessions"),
    [
        ("test", [3, 4, 5, 8], [1, 2, 6, 7], {"train": 2, "test": 3, "straddling": 1}),
        ("train", [3, 8], [1, 2, 4, 5, 6, 7], {"train": 3, "test": 2, "straddling": 1}),
        ("drop", [3, 8], [1, 2, 6, 7], {"train": 2, "test": 2, "straddling": 1}),
    ],
)
def test_session_hand_worked(straddle: str, test: list, train: list, sessions: dict) -> None:
    for how in ({"session_gap": 30}, {"session_col": "sid"}):
        s = session_split(SES, cutoff=98, straddle=straddle, **how)
        assert items(s.test) == test and items(s.train) == train
        assert s.info["sessions"] == sessions
    if straddle == "drop":
        assert s.info["dropped"]["straddling_sessions"] == {"sessions": 1, "rows": 2}


def test_session_cut_found_and_durations() -> None:
    s = split(SES, "session", session_gap=30, test_size=2)  # two sessions by their last row
    assert s.info["parameters"]["cutoff_found"] == 100 and items(s.test) == [3, 8]
    dated = SES.assign(timestamp=pd.Timestamp("2024-01-01") + pd.to_timedelta(SES.timestamp, "min"))
    for gap in ("30min", 1800, "0.5h"):
        d = session_split(dated, cutoff="2024-01-01 01:38", session_gap=gap)
        assert items(d.test) == [3, 4, 5, 8]
    assert items(session_split(dated, cutoff="2024-01-01 01:38", session_gap="1min").test) == [
        3,
        5,
        8,
    ]
    with pytest.raises(ReceValError, match=r"session_col= .* or session_gap="):
        split(SES, "session")
    with pytest.raises(ReceValError, match="session_gap='soon' is not allowed"):
        split(SES, "session", session_gap="soon")
    with pytest.raises(ReceValError, match="straddle='both' is not allowed"):
        split(SES, "session", session_gap=30, straddle="both")  # type: ignore[arg-type]


# -- time_windows ----------------------------------------------------------------------------

TW = pd.DataFrame({"user": [1, 2] * 5, "item": range(10), "timestamp": range(10)})


def windows(folds) -> list[tuple[list, list]]:
    return [(items(f.train), items(f.test)) for f in folds]


def test_time_windows_hand_worked() -> None:
    expanding = time_windows(TW, 2, n_folds=3)  # end: 10, just after the last row (9)
    assert windows(expanding) == [
        ([0, 1, 2, 3], [4, 5]),
        ([0, 1, 2, 3, 4, 5], [6, 7]),
        ([0, 1, 2, 3, 4, 5, 6, 7], [8, 9]),
    ]
    rolling = time_windows(TW, 2, n_folds=3, train_length=3)
    assert windows(rolling) == [([1, 2, 3], [4, 5]), ([3, 4, 5], [6, 7]), ([5, 6, 7], [8, 9])]
    f0 = rolling.info["folds"][0]
    assert (f0["train"]["from"], f0["train"]["to"], f0["train"]["rows"]) == (1, 4, 3)
    assert (f0["test"]["from"], f0["test"]["to"], f0["outside"]) == (4, 6, 5)  # 0, 6..9
    overlapping = time_windows(TW, 2, n_folds=2, step=1)
    assert windows(overlapping)[0][1] == [7, 8] and windows(overlapping)[1][1] == [8, 9]
    forward = time_windows(TW, 3, n_folds=2, start=2)
    assert windows(forward) == [([0, 1], [2, 3, 4]), ([0, 1, 2, 3, 4], [5, 6, 7])]
    with pytest.raises(ReceValError, match="test_length"):
        split(TW, "time_windows")
    with pytest.raises(ReceValError, match="n_folds=0 is not allowed"):
        time_windows(TW, 2, n_folds=0)
    with pytest.raises(ReceValError, match=r"test_size=0\.2 is not allowed"):
        split(TW, "time_windows", test_length=2, test_size=0.2)


def test_time_windows_save_writes_folds_and_manifest(tmp_path: Path) -> None:
    folds = time_windows(TW, 2, n_folds=2, train_length=4)
    paths = folds.save(tmp_path / "tw")
    info = json.loads((tmp_path / "tw" / "folds.json").read_text())
    assert [(f["test"]["from"], f["test"]["to"], f["test"]["rows"]) for f in info["folds"]] == [
        (6, 8, 2),
        (8, 10, 2),
    ]
    manifest = json.loads(paths["manifest"].read_text())
    assert {"fold_0/train.parquet", "fold_1/test.parquet", "folds.json"} <= set(manifest["files"])
    back = pd.read_parquet(tmp_path / "tw" / "fold_1" / "test.parquet")
    assert back["item"].tolist() == [8, 9]


# -- properties: a partition, deterministic; a literal reference ----------------------------


def random_log(seed: int, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": rng.integers(0, 30, n),
            "item": rng.integers(0, 60, n),
            "timestamp": rng.integers(0, 500, n),  # many ties
            "row": np.arange(n),
        }
    )


def rows(part: pd.DataFrame | None) -> list[int]:
    return [] if part is None else sorted(part["row"].tolist())


CASES = [
    ("leave_last_out", {"test_size": 2, "validation_size": 1}),
    ("session", {"session_gap": 20, "test_size": 0.3}),
    ("session", {"session_gap": 20, "cutoff": 250, "straddle": "drop"}),
    ("time_windows", {"test_length": 60, "n_folds": 3, "train_length": 100}),
]


@pytest.mark.parametrize(("method", "kw"), CASES)
def test_every_row_in_one_part_whatever_the_order_and_ids(method: str, kw: dict) -> None:
    log = random_log(1)
    got = split(log, method, **kw)  # type: ignore[call-overload]
    splits = list(got) if method == "time_windows" else [got]
    for s in splits:
        parts = [rows(s.train), rows(s.validation), rows(s.test)]
        together = sorted(r for part in parts for r in part)
        assert len(together) == len(set(together))
        outside = s.info.get("fold", {}).get("outside", 0)
        outside += s.info["dropped"].get("straddling_sessions", {}).get("rows", 0)
        assert len(together) + outside == len(log)
    other = log.sample(frac=1, random_state=7).assign(
        user=lambda f: "u" + f["user"].astype(str), item=lambda f: f["item"].astype(str)
    )
    again = split(other, method, **kw)  # type: ignore[call-overload]
    for a, b in zip(splits, list(again) if method == "time_windows" else [again], strict=True):
        assert [rows(a.train), rows(a.validation), rows(a.test)] == [
            rows(b.train),
            rows(b.validation),
            rows(b.test),
        ]


def test_leave_last_out_and_sessions_match_a_literal_reference() -> None:
    for seed in range(3):
        log = random_log(seed, 300)
        s = leave_last_out(log, 2)
        want, sessions = [], {}
        for _, g in log.groupby("user"):  # the literal definition, one user at a time
            ordered = g.sort_values(["timestamp", "item", "row"], kind="stable")
            if len(g) > 1:
                want += ordered["row"].tolist()[-min(2, len(g) - 1) :]
            sid, last = None, None
            for r, t in zip(ordered["row"], ordered["timestamp"], strict=True):
                if last is None or t - last > 20:
                    sid = (g["user"].iloc[0], r)
                sessions[r], last = sid, t
        assert rows(s.test) == sorted(want)
        by_session = pd.Series(sessions).groupby(pd.Series(sessions).map(str))
        when = log.set_index("row")["timestamp"]
        ends = {k: when.loc[list(v.index)].max() for k, v in by_session}
        test = sorted(r for r, sid in sessions.items() if ends[str(sid)] >= 250)
        assert rows(session_split(log, cutoff=250, session_gap=20).test) == test


# -- the leakage checks ----------------------------------------------------------------------


def test_check_catches_a_session_across_the_cut() -> None:
    s = session_split(SES, cutoff=98, session_gap=30)
    for how in ({"session_gap": 30}, {"session_col": "sid"}):
        assert check(s.train, s.test, **how)["session_straddles_cut"].count == 0
    train = pd.concat([s.train, s.test.iloc[[1]]])  # user 2's row at t=95 planted in train
    test = s.test.drop(index=1)
    gap = check(train, test, session_gap=30)["session_straddles_cut"]
    assert (gap.count, gap.severity, gap.examples) == (1, "leakage", [(2, 95)])
    assert "user 2, session starting at 95, test row 1" in gap.message
    col = check(train, test, session_col="sid")["session_straddles_cut"]
    assert col.count == 1 and "user 2, session 'x'" in col.message
    with pytest.raises(ReceValError, match="exclude each other"):
        check(train, test, session_col="sid", session_gap=30)


def test_check_catches_time_travel_in_the_new_splits() -> None:
    s = leave_last_out(LLO, 2)
    assert check(s.train, s.test, chronological=True)["test_before_train"].count == 0
    moved = pd.concat([s.train, s.test[s.test["item"] == 7]])
    found = check(moved, s.test[s.test["item"] != 7], chronological=True)["test_before_train"]
    assert found.count == 0  # 9 at t3 is after 7 at t2
    late = pd.concat([s.train, s.test[s.test["item"] == 9]])  # a's t=3 row in train
    found = check(late, s.test[s.test["item"] != 9], chronological=True)["test_before_train"]
    assert found.count == 1
    for fold in time_windows(TW, 2, n_folds=2):
        assert check(fold.train, fold.test, chronological="global").leakage == []
    fold = time_windows(TW, 2, n_folds=2)[0]
    rolled = pd.concat([fold.train, TW.iloc[[9]]])
    assert check(rolled, fold.test, chronological="global")["test_before_train"].count == 2


# -- the command line ------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--method", "session", "--session-gap", "soon"], "--session-gap soon"),
        (["--method", "session"], "--session-col"),
        (["--method", "session", "--session-gap", "30", "--straddle", "both"], "--straddle"),
        (["--method", "leave_last_out", "--test-size", "0.5"], "--test-size 0.5"),
        (["--method", "time_windows", "--test-length", "2", "--n-folds", "0"], "--n-folds 0"),
        (["--method", "random", "--session-gap", "30"], "--session-gap 30"),
        (["--method", "time_windows"], "--test-length"),
    ],
)
def test_the_command_refuses_bad_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    SES.to_csv(tmp_path / "log.csv", index=False)
    code, _, err = run(capsys, "split", tmp_path / "log.csv", "--out", tmp_path / "o", *flags)
    assert code == 2 and named in err
    assert not (tmp_path / "o" / "manifest.json").exists()


def test_the_command_splits_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    SES.to_csv(tmp_path / "log.csv", index=False)
    log, out = tmp_path / "log.csv", tmp_path / "s"
    args = ["--method", "session", "--session-gap", "30", "--cutoff", "98", "-q"]
    assert run(capsys, "split", log, "--out", out, *args)[0] == 0
    assert items(pd.read_parquet(out / "test.parquet")) == [3, 4, 5, 8]
    train, test = out / "train.parquet", out / "test.parquet"
    code, text, _ = run(capsys, "check", "--train", train, "--test", test, "--session-gap", "30")
    assert code == 0 and "session_straddles_cut: 0 sessions" in text
    pd.concat([pd.read_parquet(train), pd.read_parquet(test).iloc[[1]]]).to_parquet(
        tmp_path / "leaky.parquet"
    )
    code, text, _ = run(
        capsys,
        "check",
        "--train",
        tmp_path / "leaky.parquet",
        "--test",
        test,
        "--session-col",
        "sid",
    )
    assert code == 1 and "session_straddles_cut (1)" in text
    tw = ["--method", "time_windows", "--test-length", "50", "--n-folds", "2", "-q"]
    assert run(capsys, "split", log, "--out", tmp_path / "tw", *tw)[0] == 0
    folds = json.loads((tmp_path / "tw" / "folds.json").read_text())["folds"]
    assert [(f["test"]["from"], f["test"]["to"]) for f in folds] == [(101, 151), (151, 201)]
