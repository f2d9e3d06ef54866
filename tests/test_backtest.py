"""Backtests (issue #36 point 3): a model retrained and scored over the folds of
a time-window split. Hand-worked folds and values, each fold equal to
evaluate on its split, the t interval across folds against a hand
computation, compare pairing by (fold, user), and the command line with a
real command template (its failures included)."""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import receval
from receval.cli import main
from receval.errors import InputError, ReceValError
from receval.workflow.backtest import (
    BacktestResult,
    Fold,
    ShellModel,
    backtest,
    compare_backtests,
)
from receval.workflow.baselines import recommend

#: u3 arrives at t=1 and takes the item everyone took (1), then a new one (2).
LOG = pd.DataFrame(
    {"user": [1, 2, 3, 3], "item": [1, 1, 1, 2], "timestamp": [0, 0, 1, 2]},
)


def most_popular(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> dict:
    top = train["item"].value_counts().index[: fold.k].tolist()
    return {u: top for u in users}


def test_hand_worked_folds_values_and_interval() -> None:
    bt = backtest(LOG, {"test_length": 1, "n_folds": 2}, most_popular, ["hit_rate@1", "p@1"])
    frame = bt.to_frame()
    # fold 0: train [.., 1) = u1, u2 on item 1; test [1, 2) = u3 on item 1: a hit
    # fold 1: train [.., 2) adds u3/1; test [2, 3) = u3 on item 2: the top is 1, a miss
    assert frame[["train_rows", "test_rows", "test_users"]].values.tolist() == [
        [2, 1, 1],
        [3, 1, 1],
    ]
    assert frame[["test_from", "test_to"]].values.tolist() == [[1, 2], [2, 3]]
    assert frame["train_from"].isna().all() and frame["train_to"].tolist() == [1, 2]
    assert frame["hit_rate@1"].tolist() == [1.0, 0.0]
    assert bt.summary == {"hit_rate@1": 0.5, "precision@1": 0.5}
    iv = bt.intervals.loc["hit_rate@1"]
    # two folds: s = sqrt(0.5), t_{0.975, 1} = 12.7062047..., half = t * s / sqrt(2)
    half = 12.706204736174698 * math.sqrt(0.5) / math.sqrt(2)
    assert iv["std"] == pytest.approx(math.sqrt(0.5))
    assert (iv["ci_low"], iv["ci_high"]) == pytest.approx((0.5 - half, 0.5 + half))
    assert iv["folds"] == 2
    assert bt.k == 1 and len(bt) == 2


def test_interval_by_hand_over_three_folds_and_confidence() -> None:
    log = pd.DataFrame({"user": [1] * 4, "item": [1, 2, 3, 4], "timestamp": [0, 1, 2, 3]})
    answers = {0: [2], 1: [9], 2: [4]}  # folds 0 and 2 hit, fold 1 misses

    def model(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> dict:
        return {u: answers[fold.number] for u in users}

    bt = backtest(log, {"test_length": 1, "n_folds": 3}, model, "hit_rate@1", confidence=0.9)
    assert bt.to_frame()["hit_rate@1"].tolist() == [1.0, 0.0, 1.0]
    x = np.array([1.0, 0.0, 1.0])
    mean, s = x.mean(), x.std(ddof=1)  # 2/3, sqrt(1/3)
    half = 2.919985580355516 * s / math.sqrt(3)  # t_{0.95, 2}
    iv = bt.intervals.loc["hit_rate@1"]
    assert (iv["mean"], iv["ci_low"], iv["ci_high"]) == pytest.approx(
        (mean, mean - half, mean + half)
    )


def test_one_fold_gives_nan_interval_and_empty_window_is_not_modelled() -> None:
    bt = backtest(LOG, {"test_length": 1}, most_popular, "hit_rate@1")
    iv = bt.intervals.loc["hit_rate@1"]
    assert iv["folds"] == 1 and math.isnan(iv["ci_low"]) and math.isnan(iv["std"])
    called = []

    def model(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> dict:
        called.append(fold.number)
        return {u: [1] for u in users}

    # windows [3, 4) and [4, 5) after the log's end (start=3): empty, no call
    bt = backtest(LOG, {"test_length": 1, "n_folds": 2, "start": 3}, model, "hit_rate@1")
    assert called == [] and math.isnan(bt.summary["hit_rate@1"])
    assert any("no interaction in its test window" in n for n in bt.notes)


def test_each_fold_equals_evaluate_on_its_split() -> None:
    log = receval.synthetic_interactions(300, seed=3)
    folds = receval.split(log, "time_windows", test_length="60D", n_folds=3)
    metrics = ["ndcg@10", "recall@10", "coverage@10"]

    def pop(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> pd.DataFrame:
        return recommend("popular", train, users=users, k=fold.k)

    bt = backtest(None, folds, pop, metrics, threshold=4)
    assert isinstance(bt, BacktestResult) and bt.k == 10
    for s, res in zip(folds, bt.results, strict=True):
        users = pd.unique(s.test["user"])
        direct = receval.evaluate(
            recommend("popular", s.train, users=users, k=10),
            s.test,
            metrics,
            train=s.train,
            threshold=4,
        )
        assert res.summary == pytest.approx(direct.summary, nan_ok=True)
        pd.testing.assert_frame_equal(res.per_user, direct.per_user)
    frame = bt.to_frame()
    assert frame["test_rows"].tolist() == [f["test"]["rows"] for f in folds.info["folds"]]
    assert bt.summary["ndcg@10"] == pytest.approx(frame["ndcg@10"].mean())
    t = bt.timing
    assert len(t["model"]) == len(t["evaluate"]) == 3
    assert t["receval_total"] == pytest.approx(t["split"] + sum(t["evaluate"]))
    assert t["overhead"] == pytest.approx(t["receval_total"] / t["model_total"])
    assert json.loads(bt.to_json())["folds"][0]["fold"] == 0
    assert "95% t interval" in str(bt) and bt.to_markdown().startswith("| fold")


def test_model_sees_literal_windows_on_a_random_log() -> None:
    """What fit_predict is given, against windows cut by hand on a random log:
    train = rows in [test_from - train_length, test_from), users = the distinct
    users of [test_from, test_to), in order of first appearance."""
    rng = np.random.default_rng(7)
    n = 400
    log = pd.DataFrame(
        {
            "user": rng.choice([f"u{i}" for i in range(40)], n),
            "item": rng.integers(0, 30, n),
            "timestamp": rng.integers(0, 100, n),
        }
    )
    seen: list[tuple[Fold, pd.DataFrame, np.ndarray]] = []

    def spy(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> dict:
        seen.append((fold, train, users))
        return {u: [1, 2, 3] for u in users}

    opts = {"test_length": 10, "train_length": 30, "step": 7, "n_folds": 5}
    bt = backtest(log, opts, spy, "recall@3")
    assert len(seen) == 5
    for i, (fold, train, users) in enumerate(seen):
        lo, hi = 100 - 10 - 7 * (4 - i), 100 - 7 * (4 - i)  # windows end at 100 (last + 1)
        assert (fold.number, fold.test_from, fold.test_to) == (i, lo, hi)
        ts = log["timestamp"]
        want = log[(ts >= lo - 30) & (ts < lo)].reset_index(drop=True)
        pd.testing.assert_frame_equal(train, want)
        assert users.tolist() == pd.unique(log[(ts >= lo) & (ts < hi)]["user"]).tolist()
        hits = {u: log[(ts >= lo) & (ts < hi) & (log["user"] == u)]["item"] for u in users}
        manual = np.mean([g.isin([1, 2, 3]).sum() / g.nunique() for g in hits.values()])
        assert bt.results[i].summary["recall@3"] == pytest.approx(manual)
    assert any("repeated (user, item) rows of the test window" in n for n in bt.notes)


def test_a_pair_repeated_in_a_window_counts_once_with_its_largest_rating() -> None:
    log = pd.DataFrame(
        {
            "user": [1, 2, 3, 3],
            "item": [1, 1, 1, 1],
            "rating": [5, 5, 2, 5],
            "timestamp": [0, 0, 1, 1],
        }
    )
    bt = backtest(log, {"test_length": 1}, most_popular, "hit_rate@1", threshold=4)
    assert bt.summary["hit_rate@1"] == 1.0  # the rating-5 row kept: relevant at 4
    assert bt.notes == [
        "fold 0: 1 repeated (user, item) rows of the test window counted once "
        "(the largest rating kept)"
    ]
    with pytest.raises(InputError, match="appears twice"):  # a policy given: as it is
        backtest(log, {"test_length": 1}, most_popular, "hit_rate@1", duplicates="error")


def test_compare_pairs_by_fold_and_user() -> None:
    # users 1 and 2 are in the test of both folds: four (fold, user) units
    log = pd.DataFrame(
        {"user": [1, 2, 1, 2, 1, 2], "item": [1, 2, 2, 1, 3, 3], "timestamp": [0, 0, 1, 1, 2, 2]}
    )
    opts = {"test_length": 1, "n_folds": 2}
    a = backtest(log, opts, lambda tr, us, f: {u: [1, 2, 3] for u in us}, "ndcg@3")
    b = backtest(log, opts, lambda tr, us, f: {u: [3, 2, 1] for u in us}, "ndcg@3")
    cmp = compare_backtests({"a": a, "b": b}, test="t", n_resamples=200)
    aligned = cmp.aligned["ndcg@3"]
    assert aligned.index.names == ["fold", "user"] and len(aligned) == 4
    assert sorted(aligned.index.tolist()) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    # the numbers of compare on the concatenated per-user values
    xa = pd.concat([r.per_user["ndcg@3"] for r in a.results]).to_numpy()
    xb = pd.concat([r.per_user["ndcg@3"] for r in b.results]).to_numpy()
    pair = cmp.pairs.loc[("ndcg@3", "a", "b")]
    assert pair["diff"] == pytest.approx((xa - xb).mean())
    assert pair["p_value"] == pytest.approx(sps.ttest_rel(xa, xb).pvalue)
    assert cmp.table.loc[("ndcg@3", "a"), "mean"] == pytest.approx(xa.mean())
    assert cmp.table.loc[("ndcg@3", "a"), "users"] == 4


def test_report_draws_each_metric_over_time_and_the_pairs() -> None:
    opts = {"test_length": 1, "n_folds": 2}
    a = backtest(LOG, opts, most_popular, ["hit_rate@1", "ndcg@2"])
    b = backtest(LOG, opts, lambda tr, us, f: {u: [2, 1] for u in us}, ["hit_rate@1", "ndcg@2"])
    page = receval.backtest_report({"pop": a, "two": b}, n_resamples=100)
    assert page.count("<svg") == 2 and "over-time-ndcg@2" in page
    assert "Paired by fold and user" in page and "Per fold: two" in page


def test_compare_refuses_other_folds_and_metrics() -> None:
    a = backtest(LOG, {"test_length": 1, "n_folds": 2}, most_popular, "hit_rate@1")
    b = backtest(LOG, {"test_length": 1, "n_folds": 1}, most_popular, "hit_rate@1")
    with pytest.raises(ReceValError, match="share their folds"):
        compare_backtests({"a": a, "b": b})
    with pytest.raises(ReceValError, match="has no ndcg@3"):
        compare_backtests({"a": a, "b": a}, "ndcg@3")


def test_errors_name_what_was_expected() -> None:
    with pytest.raises(ReceValError, match="fit_predict must be a function"):
        backtest(LOG, {"test_length": 1}, "popular", "p@1")  # type: ignore[arg-type]
    with pytest.raises(ReceValError, match="splitter must be the Folds"):
        backtest(LOG, 3, most_popular, "p@1")  # type: ignore[arg-type]
    with pytest.raises(ReceValError, match="returned None"):
        backtest(LOG, {"test_length": 1}, lambda tr, us, f: None, "p@1")
    with pytest.raises(ReceValError, match="own train"):
        backtest(LOG, {"test_length": 1}, most_popular, "p@1", train=LOG)
    with pytest.raises(InputError, match="fold 0, recommendations"):  # a duplicate in a list
        backtest(LOG, {"test_length": 1}, lambda tr, us, f: {u: [1, 1] for u in us}, "p@1")
    with pytest.raises(ReceValError, match="must write the recommendations to"):
        ShellModel("echo {train}")


# -- the command line -------------------------------------------------------------------


MODEL = (
    "import sys, pandas as pd; tr = pd.read_parquet(sys.argv[1]); "
    "us = pd.read_parquet(sys.argv[2]); k = int(sys.argv[4]); "
    "top = tr['item'].value_counts().index[:k].tolist(); "
    "pd.DataFrame([(u, i, r + 1) for u in us['user'] for r, i in enumerate(top)], "
    "columns=['user', 'item', 'rank']).to_csv(sys.argv[3], index=False)"
)


def command(code: str) -> str:
    return f'{sys.executable} -c "{code}" {{train}} {{users}} {{out}} {{k}}'


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "log.csv"
    LOG.to_csv(path, index=False)
    return path


def test_cli_runs_the_command_per_fold(
    capsys: pytest.CaptureFixture[str],
    log_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where the folds' folders go
    argv = ["backtest", log_file, "--test-length", "1", "--n-folds", "2", "-m", "hit_rate@1"]
    code, out, err = run(capsys, *argv, "--command", command(MODEL), "--json")
    assert code == 0, err
    found = json.loads(out)
    assert [f["hit_rate@1"] for f in found["folds"]] == [1.0, 0.0]
    assert found["metrics"] == {"hit_rate@1": 0.5} and found["k"] == 1
    assert "fold 1: 3 train rows, 1 test users" in err
    assert not list(tmp_path.glob("receval-backtest-*"))  # nothing left behind
    fixed = "printf 'user,item,rank\\n3,1,1\\n' > {out}"  # u3 gets item 1 in every fold
    code, out, err = run(capsys, *argv, "--command", fixed, "-q", "-o", "csv")
    assert code == 0 and err == ""
    assert pd.read_csv(io.StringIO(out))["hit_rate@1"].tolist() == [1.0, 0.0]
    page = tmp_path / "report.html"
    code, out, _ = run(capsys, *argv, "--command", fixed, "-q", "--report", page)
    assert code == 0 and "95% t interval" in out
    assert 'data-chart="over-time-hit_rate@1"' in page.read_text(encoding="utf-8")


def test_cli_several_commands_are_compared_on_the_same_folds(
    capsys: pytest.CaptureFixture[str], log_file: Path
) -> None:
    argv = ["backtest", log_file, "--test-length", "1", "--n-folds", "2", "-m", "hit_rate@1"]
    first = "printf 'user,item,rank\\n3,1,1\\n' > {out}"  # hits fold 0 (u3 took 1)
    second = "printf 'user,item,rank\\n3,2,1\\n' > {out}"  # hits fold 1 (u3 took 2)
    code, out, err = run(
        capsys, *argv, "--command", first, "--command", second, "--names", "a,b", "--json", "-q"
    )
    assert code == 0, err
    found = json.loads(out)
    assert [f["hit_rate@1"] for f in found["systems"]["a"]["folds"]] == [1.0, 0.0]
    assert [f["hit_rate@1"] for f in found["systems"]["b"]["folds"]] == [0.0, 1.0]
    assert [s["name"] for s in found["comparison"]["systems"]] == ["a", "b"]
    code, _, err = run(capsys, *argv, "--command", first, "--command", second, "--names", "a")
    assert code == 2 and "--names" in err


def test_cli_failures_exit_2_naming_the_fold_and_flag(
    capsys: pytest.CaptureFixture[str],
    log_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    argv = ["backtest", log_file, "--test-length", "1", "--n-folds", "2", "-m", "p@1", "-q"]
    failing = "import sys; sys.stderr.write('model broke' + chr(10)); sys.exit(3)"
    code, out, err = run(capsys, *argv, "--command", command(failing))
    assert code == 2 and out == ""
    assert "fold 0: the command exited with code 3" in err and "model broke" in err
    code, _, err = run(capsys, *argv, "--command", "true {out}")
    assert code == 2 and "fold 0: the command wrote no recommendations" in err
    assert not list(tmp_path.glob("receval-backtest-*"))
    code, _, err = run(capsys, *argv, "--command", "true")
    assert code == 2 and "{out}" in err
    code, _, err = run(capsys, "backtest", log_file, "-m", "p@1", "--command", "true {out}")
    assert code == 2 and "--test-length" in err
    code, _, err = run(capsys, *argv, "--command", "true {out}", "--n-folds", "0")
    assert code == 2 and "--n-folds" in err
    code, _, err = run(capsys, *argv, "--command", "true {out}", "--recs-format", "xls")
    assert code == 2 and "--recs-format" in err


def test_cli_ctrl_c_in_the_command_exits_130(
    capsys: pytest.CaptureFixture[str], log_file: Path
) -> None:
    argv = ["backtest", log_file, "--test-length", "1", "-m", "p@1", "-q"]
    code, _, _ = run(capsys, *argv, "--command", "kill -INT $$; echo {out}")
    assert code == 130


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stopped_backtest_stops_every_process_its_command_started(
    log_file: Path, tmp_path: Path, sig: str
) -> None:
    """SIGTERM (a scheduler) or SIGINT sent to receval alone: the command's
    shell and what it started in the background go too (its own process
    group), so nothing of the model's keeps running or writes afterwards."""
    import os
    import signal
    import subprocess
    import time

    marker = tmp_path / "survivor.txt"
    script = tmp_path / "model.sh"
    script.write_text(f"#!/bin/sh\n(sleep 3; echo alive > {marker}) &\nsleep 30\n")
    script.chmod(0o755)
    started = tmp_path / "started.txt"
    argv = [sys.executable, "-m", "receval", "backtest", str(log_file), "--test-length", "1"]
    argv += ["-m", "p@1", "-q", "--command", f"touch {started}; {script} {{out}}"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), proc.stderr.read() if proc.stderr else ""
    time.sleep(0.3)
    os.kill(proc.pid, getattr(signal, sig))
    code = proc.wait(timeout=30)
    assert code == (143 if sig == "SIGTERM" else 130)
    time.sleep(4)
    assert not marker.exists(), "a process the command started outlived the backtest"
