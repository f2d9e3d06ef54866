"""Validation parts of the ``session`` and ``time_windows`` splits (issue #36
point 1): hand-worked logs with known train / validation / test rows, the
edge cases (no session in the validation window, a validation window longer
than the train, a user with only validation rows), a slow literal reference
on seeded random logs (every row in exactly one part or counted as dropped),
the leakage checks between the three parts, the command line's flags; and
``receval next-items``' order of refusals (an output naming an input first)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.cli import main
from receval.errors import ReceValError
from receval.workflow.checks import check
from receval.workflow.split import session_split, split, time_windows


def items(frame: pd.DataFrame | None) -> list:
    return [] if frame is None else sorted(frame["item"].tolist(), key=str)


# -- session ---------------------------------------------------------------------------------

# gap 30 (or the sid column): user 1: S1 [0, 10] (items 1, 2), S2 [100] (3);
# user 2: S3 [95, 99] (4, 5); user 3: S4 [50, 60] (6, 7), S5 [200] (8).
# validation cut 55, test cut 98: S4 straddles the validation cut, S3 the test cut.
SES = pd.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 3, 3, 3],
        "item": [1, 2, 3, 4, 5, 6, 7, 8],
        "timestamp": [0, 10, 100, 95, 99, 50, 60, 200],
        "sid": ["x", "x", "y", "x", "x", "x", "x", "z"],
    }
)


@pytest.mark.parametrize(
    ("straddle", "train", "validation", "test", "sessions"),
    [
        # by the last row: S4 (last 60 >= 55) validation, S3 (last 99 >= 98) test
        ("test", [1, 2], [6, 7], [3, 4, 5, 8], (1, 1, 3)),
        # by the first row: S4 (first 50 < 55) train, S3 (first 95 in [55, 98)) validation
        ("train", [1, 2, 6, 7], [4, 5], [3, 8], (2, 1, 2)),
        # S4 and S3 dropped: validation strictly between the cuts, here empty
        ("drop", [1, 2], [], [3, 8], (1, 0, 2)),
    ],
)
def test_session_validation_hand_worked(
    straddle: str, train: list, validation: list, test: list, sessions: tuple
) -> None:
    for how in ({"session_gap": 30}, {"session_col": "sid"}):
        s = session_split(SES, cutoff=98, validation_cutoff=55, straddle=straddle, **how)
        assert (items(s.train), items(s.validation), items(s.test)) == (train, validation, test)
        n_train, n_val, n_test = sessions
        assert s.info["sessions"] == {
            "train": n_train,
            "validation": n_val,
            "test": n_test,
            "straddling": 1,
            "straddling_validation": 1,
        }
        assert s.info["parameters"]["validation_cutoff"] == 55
        assert s.sizes()["validation"]["rows"] == len(validation)
    if straddle == "drop":  # both straddlers, counted once each
        assert s.info["dropped"]["straddling_sessions"] == {"sessions": 2, "rows": 4}
        assert any("no session in the validation window" in n for n in s.info["notes"])


def test_session_validation_found_from_its_size() -> None:
    # by the last row: 10, 60, 99, 100, 200; the last 2 are test (cut 100), the one
    # before them validation (cut 99): S3
    s = split(SES, "session", session_gap=30, test_size=2, validation_size=1)
    assert (items(s.train), items(s.validation), items(s.test)) == ([1, 2, 6, 7], [4, 5], [3, 8])
    assert s.info["parameters"]["validation_cutoff_found"] == 99
    share = split(SES, "session", session_gap=30, test_size=2, validation_size=0.4)  # 2 of 5
    assert items(share.validation) == [4, 5, 6, 7]
    everything = split(SES, "session", session_gap=30, test_size=2, validation_size=10)
    assert items(everything.train) == [] and items(everything.validation) == [1, 2, 4, 5, 6, 7]
    with pytest.raises(ReceValError, match=r"validation_cutoff=99 is not allowed.*at or before"):
        session_split(SES, cutoff=98, validation_cutoff=99, session_gap=30)
    with pytest.raises(ReceValError, match=r"validation_cutoff=5 is not allowed.*time and session"):
        split(SES, "random", validation_cutoff=5)


def test_session_validation_edges() -> None:
    # no session assigned in [70, 98): an empty validation part, said in a note
    empty = session_split(SES, cutoff=98, validation_cutoff=70, session_gap=30)
    assert items(empty.validation) == [] and empty.info["sessions"]["validation"] == 0
    assert any("no session in the validation window" in n for n in empty.info["notes"])
    # the cuts equal: nothing between them
    same = session_split(SES, cutoff=98, validation_cutoff=98, session_gap=30)
    assert items(same.validation) == [] and items(same.test) == [3, 4, 5, 8]
    # user 4 has only validation rows: kept, or dropped and counted with drop_unseen_users
    log = pd.concat(
        [SES, pd.DataFrame({"user": [4, 4], "item": [9, 10], "timestamp": [70, 72], "sid": "w"})]
    )
    s = session_split(log, cutoff=98, validation_cutoff=65, session_gap=30)
    assert items(s.validation) == [10, 9]  # sorted as text
    d = session_split(log, cutoff=98, validation_cutoff=65, session_gap=30, drop_unseen_users=True)
    assert items(d.validation) == []
    assert d.info["dropped"]["unseen_users"]["validation"] == {"rows": 2, "users": 1}
    assert d.info["dropped"]["unseen_users"]["test"] == {"rows": 2, "users": 1}  # user 2


def test_session_validation_saved_with_its_manifest(tmp_path: Path) -> None:
    s = session_split(SES, cutoff=98, validation_cutoff=55, session_gap=30)
    paths = s.save(tmp_path / "s")
    assert items(pd.read_parquet(paths["validation"])) == [6, 7]
    manifest = json.loads(paths["manifest"].read_text())
    assert "validation.parquet" in manifest["files"]
    info = json.loads((tmp_path / "s" / "split.json").read_text())
    assert info["parameters"]["validation_cutoff"] == 55
    assert info["sizes"]["validation"] == {"rows": 2, "users": 1, "items": 2}


# -- time_windows ----------------------------------------------------------------------------

TW = pd.DataFrame({"user": [1, 2] * 5, "item": range(10), "timestamp": range(10)})


def parts(folds) -> list[tuple[list, list, list]]:
    return [(items(f.train), items(f.validation), items(f.test)) for f in folds]


def test_time_windows_validation_hand_worked() -> None:
    # test windows [4, 6), [6, 8), [8, 10) (end 10: just after the last row)
    expanding = time_windows(TW, 2, n_folds=3, validation_length=1)
    assert parts(expanding) == [
        ([0, 1, 2], [3], [4, 5]),
        ([0, 1, 2, 3, 4], [5], [6, 7]),
        ([0, 1, 2, 3, 4, 5, 6], [7], [8, 9]),
    ]
    # rolling: train_length 3 spans train and validation, [lo - 3, lo)
    rolling = time_windows(TW, 2, n_folds=3, train_length=3, validation_length=1)
    assert parts(rolling) == [([1, 2], [3], [4, 5]), ([3, 4], [5], [6, 7]), ([5, 6], [7], [8, 9])]
    f0 = rolling.info["folds"][0]
    assert (f0["train"]["from"], f0["train"]["to"], f0["train"]["rows"]) == (1, 3, 2)
    assert f0["validation"] == {"from": 3, "to": 4, "rows": 1, "users": 1, "items": 1}
    assert f0["outside"] == 10 - 2 - 1 - 2
    assert rolling[0].info["fold"]["validation"] == {"from": 3, "to": 4}
    assert rolling.info["parameters"]["validation_length"] == 1
    assert "validation [3, 4) 1 rows" in str(rolling)
    # rows out of time order take the general path: the same parts
    shuffled = time_windows(
        TW.sample(frac=1, random_state=2), 2, n_folds=3, train_length=3, validation_length=1
    )
    assert parts(shuffled) == parts(rolling)
    assert [f["outside"] for f in shuffled.info["folds"]] == [5, 5, 5]


def test_time_windows_validation_edges() -> None:
    # a validation window as long as the rolling train window leaves nothing to train on
    with pytest.raises(ReceValError, match=r"validation_length=3 is not allowed.*shorter than"):
        time_windows(TW, 2, train_length=3, validation_length=3)
    # expanding: a validation window longer than the data before it empties the train
    long = time_windows(TW, 2, validation_length=9)
    assert parts(long) == [([], [0, 1, 2, 3, 4, 5, 6, 7], [8, 9])]
    assert "fold 0: no interaction in its train window" in long.info["notes"]
    gap = time_windows(TW, 2, n_folds=1, start=4, validation_length="1s")
    assert parts(gap)[0][1] == [3]
    # user 3 only in fold 0's validation window [3, 4): dropped with drop_unseen_users
    log = pd.concat([TW, pd.DataFrame({"user": [3], "item": [99], "timestamp": [3.5]})])
    folds = time_windows(log, 2, n_folds=1, start=4, validation_length=1, drop_unseen_users=True)
    assert items(folds[0].validation) == [3]
    assert folds[0].info["dropped"]["unseen_users"]["validation"] == {"rows": 1, "users": 1}
    with pytest.raises(ReceValError, match="validation_size=1 is not allowed"):
        split(TW, "time_windows", test_length=2, validation_size=1)
    with pytest.raises(ReceValError, match="validation_length=1 is not allowed"):
        split(TW, "session", session_gap=2, validation_length=1)


def test_time_windows_validation_saved(tmp_path: Path) -> None:
    folds = time_windows(TW, 2, n_folds=2, validation_length=1)
    paths = folds.save(tmp_path / "tw")
    manifest = json.loads(paths["manifest"].read_text())
    assert {"fold_0/validation.parquet", "fold_1/validation.parquet"} <= set(manifest["files"])
    info = json.loads((tmp_path / "tw" / "folds.json").read_text())
    assert [(f["validation"]["from"], f["validation"]["rows"]) for f in info["folds"]] == [
        (5, 1),
        (7, 1),
    ]


# -- a slow literal reference on random logs -------------------------------------------------


def random_log(seed: int, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": rng.integers(0, 25, n),
            "item": rng.integers(0, 50, n),
            "timestamp": rng.integers(0, 400, n),  # many ties
            "row": np.arange(n),
        }
    )


def rows(part: pd.DataFrame | None) -> list[int]:
    return [] if part is None else sorted(part["row"].tolist())


def literal_sessions(log: pd.DataFrame, gap: int, cut: int, vcut: int, straddle: str) -> dict:
    """Each row's part, session by session, one user at a time."""
    where: dict[int, str] = {}
    for _, g in log.groupby("user"):
        ordered = g.sort_values("timestamp", kind="stable")
        sessions, last = [], None
        for r, t in zip(ordered["row"], ordered["timestamp"], strict=True):
            if last is None or t - last > gap:
                sessions.append([])
            sessions[-1].append((r, t))
            last = t
        for session in sessions:
            first_t, last_t = session[0][1], session[-1][1]
            by = last_t if straddle == "test" else first_t
            across = first_t < cut <= last_t or first_t < vcut <= last_t
            if straddle == "drop" and across:
                part = "dropped"
            elif by >= cut:
                part = "test"
            elif by >= vcut:
                part = "validation"
            else:
                part = "train"
            for r, _ in session:
                where[r] = part
    return where


@pytest.mark.parametrize("straddle", ["test", "train", "drop"])
def test_session_validation_matches_a_literal_reference(straddle: str) -> None:
    for seed in range(3):
        log = random_log(seed)
        s = session_split(log, cutoff=300, validation_cutoff=200, session_gap=15, straddle=straddle)
        want = literal_sessions(log, 15, 300, 200, straddle)
        for part in ("train", "validation", "test"):
            assert rows(getattr(s, part)) == sorted(r for r, p in want.items() if p == part)
        dropped = s.info["dropped"].get("straddling_sessions", {}).get("rows", 0)
        got = [rows(s.train), rows(s.validation), rows(s.test)]
        together = [r for p in got for r in p]
        assert len(together) == len(set(together)) and len(together) + dropped == len(log)
        # cuts found from sizes give the parts of the same cuts given
        found = split(
            log, "session", session_gap=15, straddle=straddle, test_size=0.2, validation_size=0.25
        )
        cuts = found.info["parameters"]
        again = session_split(
            log,
            cutoff=cuts["cutoff_found"],
            session_gap=15,
            straddle=straddle,
            validation_cutoff=cuts["validation_cutoff_found"],
        )
        assert rows(found.validation) == rows(again.validation) != []
        assert rows(found.test) == rows(again.test)
        report = check(s.train, s.test, validation=s.validation, session_gap=15)
        assert report["session_straddles_cut"].count == 0
        assert report["session_straddles_validation_cut"].count == 0
        if straddle == "drop":  # train < validation cut <= validation < test cut <= test
            glob = check(s.train, s.test, validation=s.validation, chronological="global")
            assert glob["validation_before_train"].count == 0
            assert glob["test_before_validation"].count == 0


def test_time_windows_validation_matches_a_literal_reference() -> None:
    for seed in range(3):
        log = random_log(seed)
        for kw in ({}, {"train_length": 120}):
            folds = time_windows(log, 50, n_folds=3, step=40, validation_length=30, **kw)
            end = int(log["timestamp"].max()) + 1
            for f, fold in enumerate(folds):
                lo = end - 50 - (2 - f) * 40
                want: dict[str, list[int]] = {"train": [], "validation": [], "test": []}
                outside = 0
                for r, t in zip(log["row"], log["timestamp"], strict=True):
                    if lo <= t < lo + 50:
                        want["test"].append(r)
                    elif lo - 30 <= t < lo:
                        want["validation"].append(r)
                    elif t < lo - 30 and ("train_length" not in kw or t >= lo - 120):
                        want["train"].append(r)
                    else:
                        outside += 1
                for part, expected in want.items():
                    assert rows(getattr(fold, part)) == sorted(expected)
                assert fold.info["fold"]["outside"] == outside
                found = check(
                    fold.train, fold.test, validation=fold.validation, chronological="global"
                )
                times = ("test_before_train", "validation_before_train", "test_before_validation")
                assert [found[code].count for code in times] == [0, 0, 0]  # (pairs repeat)


# -- the leakage checks with a validation part -----------------------------------------------


def test_check_catches_leaks_into_and_out_of_validation() -> None:
    train = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "timestamp": [0, 10, 5]})
    validation = pd.DataFrame({"user": [1, 2], "item": [2, 4], "timestamp": [8, 6]})
    test = pd.DataFrame({"user": [1, 2, 2], "item": [5, 4, 6], "timestamp": [20, 3, 30]})
    r = check(train, test, validation=validation)
    # validation (1, 2) is in train; (1, 2) at 8 precedes user 1's train row at 10
    assert r["train_validation_overlap"].count == 1
    assert r["train_validation_overlap"].examples == [(1, 2)]
    assert r["validation_before_train"].count == 1
    # test (2, 4) is in validation and at 3 precedes user 2's validation row at 6
    assert r["validation_test_overlap"].count == 1
    assert r["test_before_validation"].count == 1
    assert "latest validation row" in r["test_before_validation"].message
    assert r["test_before_train"].count == 1  # (2, 4) at 3 < 5
    assert {f.code for f in r.leakage} == {
        "train_validation_overlap",
        "validation_before_train",
        "validation_test_overlap",
        "test_before_validation",
        "test_before_train",
    }
    # sessions by a gap of 3 over the three parts together: user 2's 3, 5, 6 are one
    sess = check(train, test, validation=validation, session_gap=3, chronological=False)
    assert sess["session_straddles_validation_cut"].count == 2  # 10 with 8; 5 with 6
    assert sess["session_straddles_cut"].count == 1  # test 3 with train 5 / validation 6
    alone = check(train, validation=validation, session_gap=3)  # no test part
    assert alone["session_straddles_validation_cut"].count == 2
    assert "session_straddles_cut" not in alone.codes()
    # a validation row bridges train and test: only over the three parts is it one session
    tr = pd.DataFrame({"user": [1], "item": [1], "timestamp": [0]})
    va = pd.DataFrame({"user": [1], "item": [2], "timestamp": [20]})
    te = pd.DataFrame({"user": [1], "item": [3], "timestamp": [40]})
    assert check(tr, te, session_gap=30)["session_straddles_cut"].count == 0
    bridged = check(tr, te, validation=va, session_gap=30)
    assert bridged["session_straddles_cut"].count == 1
    assert bridged["session_straddles_validation_cut"].count == 1


# -- the command line ------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_writes_and_checks_validation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.csv"
    SES.to_csv(log, index=False)
    args = ["--method", "session", "--session-gap", "30", "--cutoff", "98"]
    code, _, _ = run(
        capsys, "split", log, "--out", tmp_path / "s", *args, "--validation-cutoff", "55", "-q"
    )
    assert code == 0 and items(pd.read_parquet(tmp_path / "s" / "validation.parquet")) == [6, 7]
    parts_ = {p: tmp_path / "s" / f"{p}.parquet" for p in ("train", "validation", "test")}
    code, text, _ = run(
        capsys,
        "check",
        "--train",
        parts_["train"],
        "--test",
        parts_["test"],
        "--validation",
        parts_["validation"],
        "--session-gap",
        "30",
    )
    assert code == 0 and "session_straddles_validation_cut: 0 sessions" in text
    # the train part given as validation: every validation row is in train
    code, text, _ = run(
        capsys,
        "check",
        "--train",
        parts_["train"],
        "--test",
        parts_["test"],
        "--validation",
        parts_["train"],
    )
    assert code == 1 and "train_validation_overlap (2)" in text
    tw = ["--method", "time_windows", "--test-length", "50", "--n-folds", "2"]
    code, _, _ = run(
        capsys, "split", log, "--out", tmp_path / "tw", *tw, "--validation-length", "40", "-q"
    )
    folds = json.loads((tmp_path / "tw" / "folds.json").read_text())["folds"]
    assert code == 0 and [f["validation"]["from"] for f in folds] == [61, 111]
    for flags, named in (
        (["--method", "random", "--validation-cutoff", "5"], "--validation-cutoff 5"),
        (
            ["--method", "session", "--session-gap", "30", "--validation-length", "5"],
            "--validation-length 5",
        ),
        ([*tw, "--train-length", "30", "--validation-length", "40"], "--validation-length 40"),
    ):
        code, _, err = run(capsys, "split", log, "--out", tmp_path / "bad", *flags)
        assert code == 2 and named in err and "Traceback" not in err
        assert not (tmp_path / "bad" / "manifest.json").exists()


def test_next_items_refuses_an_output_naming_an_input_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lists, sessions = tmp_path / "lists.csv", tmp_path / "sessions.csv"
    lists.write_text("session,step,item,rank\n1,1,2,1\n")
    sessions.write_text("session,item\n1,1\n1,2\n")
    before = lists.read_bytes()
    for target, role in ((lists, "lists"), (sessions, "sessions")):
        code, _, err = run(capsys, "next-items", lists, sessions, "-m", "mrr@2", "--report", target)
        assert code == 2 and "Traceback" not in err
        assert f"--report {target} would write over the {role} file" in err
    code, _, err = run(capsys, "next-items", lists, sessions, "-m", "mrr@2", "--per-session", lists)
    assert code == 2 and "--per-session" in err and "would write over the lists file" in err
    assert lists.read_bytes() == before
    # an output that names no input: its suffix is checked next, before any input is read
    code, _, err = run(
        capsys,
        "next-items",
        tmp_path / "absent.csv",
        sessions,
        "-m",
        "mrr@2",
        "--report",
        tmp_path / "page.txt",
    )
    assert code == 2 and "--report" in err and "receval writes no .txt file" in err
