"""``check`` catches leakage between train and test (issue #31 point 4): test
rows also in train, test rows earlier than the user's latest train row (time
travel), cold users and items; counted with examples on hand-made data, ids of
three kinds, and ``receval check`` exiting 1 on leakage, 0 on a clean split."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import InputError, ReceValError
from receval.workflow.checks import check
from receval.workflow.synthetic import synthetic_interactions

SRC = str(Path(__file__).resolve().parents[1] / "src")

# Worked by hand. Train pairs: (1,10) (1,11) (2,10) (2,12) (3,13); user 1's latest
# train time is 5, user 2's is 3, user 3's is 4; the latest of all is 5.
TRAIN = {"user": [1, 1, 2, 2, 3], "item": [10, 11, 10, 12, 13], "timestamp": [1, 5, 2, 3, 4]}
# Test: (1,10) and (2,12) twice are in train: 3 rows, 2 distinct pairs, users 1 and 2.
# (1,14) at t=3 precedes user 1's train row at t=5: 1 row of 1 user. (2,10) at t=4 is
# after user 2's latest (3) but before the latest of all (5): global time travel only.
# User 4 and item 14 are cold.
TEST = {
    "user": [1, 1, 2, 2, 2, 4],
    "item": [10, 14, 12, 12, 15, 10],
    "timestamp": [6, 3, 7, 8, 4, 9],
}
LEAKY_CODES = ["train_test_overlap", "test_before_train"]


def frames(kind: str = "int") -> tuple[pd.DataFrame, pd.DataFrame]:
    """TRAIN and TEST with ids as integers, digit strings or text (u1, i10)."""

    def ids(frame: dict[str, list[int]]) -> pd.DataFrame:
        out = pd.DataFrame(frame)
        if kind == "str":
            out[["user", "item"]] = out[["user", "item"]].astype(str)
        elif kind == "text":
            out["user"] = "u" + out["user"].astype(str)
            out["item"] = "i" + out["item"].astype(str)
        return out

    return ids(TRAIN), ids(TEST)


def as_kind(kind: str, user: int, item: int) -> tuple[Any, Any]:
    """An example pair as the report gives it for ids of ``kind`` (digit strings
    are integers under the id rule)."""
    return (f"u{user}", f"i{item}") if kind == "text" else (user, item)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- the library: counts and examples worked by hand ----------------------------------------


@pytest.mark.parametrize("kind", ["int", "str", "text"])
def test_overlap_and_time_travel_counted_by_hand(kind: str) -> None:
    train, test = frames(kind)
    r = check(train, test)
    overlap = r["train_test_overlap"]
    assert overlap.count == 3 and overlap.severity == "leakage"
    assert overlap.examples == [as_kind(kind, 1, 10), as_kind(kind, 2, 12)]  # distinct pairs
    assert overlap.message.startswith(
        "3 of 6 test rows (50.0%; 2 distinct (user, item) pairs, 2 of 3 test users) are "
        "also in train"
    ), overlap.message
    travel = r["test_before_train"]
    assert travel.count == 1 and travel.severity == "leakage" and not travel.skipped
    assert travel.examples == [as_kind(kind, 1, 14)]
    assert travel.message.startswith("1 of 6 test rows (1 of 3 test users) are earlier than")
    # cold start: counted with examples, not leakage
    users, items = r["test_users_not_in_train"], r["test_items_not_in_train"]
    assert (users.count, users.examples) == (1, [as_kind(kind, 4, 0)[0]])
    assert (items.count, items.examples) == (2, [as_kind(kind, 0, 14)[1], as_kind(kind, 0, 15)[1]])
    assert [f.code for f in r.leakage] == LEAKY_CODES
    assert not r.ok
    assert "[LEAK] train_test_overlap" in str(r) and "[LEAK] test_before_train" in str(r)
    assert r.to_dict()["train_test_overlap"]["severity"] == "leakage"


def test_global_time_travel_counts_rows_before_the_latest_train_row() -> None:
    train, test = frames()
    r = check(train, test, chronological="global")
    travel = r["test_before_train"]  # t=3 (user 1) and t=4 (user 2) are before t=5
    assert travel.count == 2 and travel.examples == [(1, 14), (2, 15)]
    assert "2 of 6 test rows (2 of 3 test users)" in travel.message
    assert "latest training row (5)" in travel.message


def test_time_travel_counts_users_and_rows_per_user() -> None:
    train = pd.DataFrame({"user": [1, 2, 3], "item": [1, 1, 1], "timestamp": [10, 10, 10]})
    test = pd.DataFrame(
        {
            "user": [1, 1, 1, 2, 3, 3],
            "item": [2, 3, 4, 2, 2, 3],
            "timestamp": [9, 10, 11, 5, 11, 12],
        }
    )
    travel = check(train, test)["test_before_train"]  # user 1 at 9, user 2 at 5; 10 is a tie
    assert travel.count == 2 and travel.examples == [(1, 2), (2, 2)]
    assert "2 of 6 test rows (2 of 3 test users)" in travel.message


def test_a_clean_split_has_no_leakage() -> None:
    log = synthetic_interactions(300, seed=3)
    parts = receval.split(log, "user_time", test_size=0.2)
    r = check(parts.train, parts.test)
    assert r.leakage == [] and r["train_test_overlap"].count == 0
    assert r["test_before_train"].count == 0 and not r["test_before_train"].skipped
    # a random split of the same log travels in time: leakage unless said to be random
    parts = receval.split(log, "random", test_size=0.2, seed=1)
    assert check(parts.train, parts.test)["test_before_train"].count > 0
    r = check(parts.train, parts.test, chronological=False)
    assert "test_before_train" not in r.codes() and r.leakage == []


def test_seen_items_recommended_are_a_warning_not_leakage() -> None:
    train, test = frames()
    train, test = train.iloc[:1], test.iloc[[5]]  # (1, 10) in train; (4, 10) in test
    recs = pd.DataFrame({"user": [1, 4], "item": [10, 11], "score": [1.0, 1.0]})
    r = check(train, test, recs)
    assert r["seen_in_train"].count == 1 and r["seen_in_train"].severity == "warning"
    assert r.leakage == [] and not r.ok


def test_without_timestamps_time_travel_is_skipped_with_a_note() -> None:
    train, test = frames()
    r = check(train.drop(columns="timestamp"), test)
    travel = r["test_before_train"]
    assert travel.skipped and travel.count == 0 and travel.severity == "leakage"
    assert "not checked: train has no timestamp column 'timestamp'" in travel.message
    assert "timestamp_col=" in travel.message and "chronological=False" in travel.message
    assert str(travel).startswith("[skip] test_before_train")
    assert r.to_dict()["test_before_train"]["skipped"] is True
    assert [f.code for f in r.leakage] == ["train_test_overlap"]
    with pytest.raises(InputError, match="train has no timestamp column 'timestamp'"):
        check(train.drop(columns="timestamp"), test, chronological=True)
    # another name, given: checked
    named = check(
        train.rename(columns={"timestamp": "t"}),
        test.rename(columns={"timestamp": "t"}),
        timestamp_col="t",
    )
    assert named["test_before_train"].count == 1


def test_dates_and_missing_timestamps() -> None:
    train, test = frames()
    day = pd.Timestamp("2024-01-01")
    tr_d, te_d = (
        f.assign(timestamp=day + pd.to_timedelta(f["timestamp"], "D")) for f in (train, test)
    )
    tr_s, te_s = (f.assign(timestamp=f["timestamp"].astype(str)) for f in (tr_d, te_d))
    for tr, te in ((tr_d, te_d), (tr_s, te_s), (tr_s, te_d)):  # dates, as text too
        assert check(tr, te)["test_before_train"].count == 1
    # dates against numbers cannot be compared: skipped unasked, an error when asked
    mixed = check(tr_d, test)["test_before_train"]
    assert mixed.skipped and "test has numbers as timestamps and train dates" in mixed.message
    with pytest.raises(InputError, match="cannot be compared"):
        check(tr_d, test, chronological="user")
    # a row without a timestamp is not compared, and counted
    gaps = test.assign(timestamp=test["timestamp"].astype(float))
    gaps.loc[1, "timestamp"] = float("nan")  # the time-travelling row
    travel = check(train, gaps)["test_before_train"]
    assert travel.count == 0 and "1 rows without a timestamp not compared" in travel.message


def test_chronological_is_checked() -> None:
    train, test = frames()
    with pytest.raises(ReceValError, match="chronological must be"):
        check(train, test, chronological="sometimes")  # type: ignore[arg-type]


# -- ids of three kinds, a CSV of integers against a Parquet of strings ---------------------


def test_id_kinds_and_files_give_the_same_counts(tmp_path: Path) -> None:
    counts = []
    for kind in ("int", "str", "text"):
        r = check(*frames(kind))
        counts.append([(f.code, f.count) for f in r.findings])
    assert counts[0] == counts[1] == counts[2]
    frames("int")[0].to_csv(tmp_path / "train.csv", index=False)
    frames("str")[1].to_parquet(tmp_path / "test.parquet", index=False)  # ids as strings
    r = check(tmp_path / "train.csv", tmp_path / "test.parquet")
    assert [(f.code, f.count) for f in r.findings] == counts[0]
    assert r["train_test_overlap"].examples == [(1, 10), (2, 12)]


# -- the command line: exit 1 on leakage, 0 clean, 2 on bad input ----------------------------


def _write(tmp_path: Path, kind: str = "int") -> tuple[Path, Path]:
    train, test = frames(kind)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    return tmp_path / "train.csv", tmp_path / "test.csv"


def test_the_command_exits_1_on_leakage_after_the_full_report(tmp_path: Path) -> None:
    train, test = _write(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "receval", "check", "--train", str(train), "--test", str(test)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    report = check(pd.read_csv(train), pd.read_csv(test)).render(cli=True)
    assert lines[:-1] == report.splitlines()
    assert lines[-1] == "leakage found: train_test_overlap (3), test_before_train (1); exit code 1"
    assert "(e.g. (1, 10), (2, 12))" in proc.stdout and "internal error" not in proc.stderr


@pytest.mark.parametrize("kind", ["int", "str", "text"])
def test_the_command_finds_the_same_with_ids_of_every_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    train, test = _write(tmp_path, kind)
    code, out, err = run(capsys, "check", "--train", train, "--test", test)
    assert code == 1, err
    assert "[LEAK] train_test_overlap: 3 of 6 test rows" in out
    assert "[LEAK] test_before_train: 1 of 6 test rows" in out


def test_the_command_exits_0_on_a_split_it_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synthetic_interactions(300, seed=3).to_csv(tmp_path / "log.csv", index=False)
    code, _, err = run(capsys, "split", tmp_path / "log.csv", "--out", tmp_path / "parts", "-q")
    assert code == 0, err
    parts = tmp_path / "parts"
    code, out, err = run(
        capsys, "check", "--train", parts / "train.parquet", "--test", parts / "test.parquet"
    )
    assert code == 0, err + out
    assert "[ok  ] train_test_overlap: 0 of" in out and "[ok  ] test_before_train: 0 of" in out
    assert "leakage found" not in out


def test_the_command_time_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train, test = frames()
    train, test = train.iloc[[0, 1]], test.iloc[[1]]  # only time travel: (1, 14) at t=3 < 5
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    argv = ["check", "--train", tmp_path / "train.csv", "--test", tmp_path / "test.csv"]
    code, out, _ = run(capsys, *argv)
    assert code == 1 and "leakage found: test_before_train (1)" in out
    code, out, _ = run(capsys, *argv, "--not-chronological")
    assert code == 0 and "test_before_train" not in out
    code, _, err = run(capsys, *argv, "--chronological", "--not-chronological")
    assert code == 2 and "exclude each other" in err
    train.drop(columns="timestamp").to_csv(tmp_path / "train.csv", index=False)
    code, out, _ = run(capsys, *argv)  # no timestamp: skipped, said how to name it
    assert code == 0 and "[skip] test_before_train" in out and "--timestamp-col" in out
    code, _, err = run(capsys, *argv, "--chronological")
    assert code == 2 and err.startswith(f"error: {tmp_path / 'train.csv'}:"), err
