"""A backtest's folds with a validation part (``validation_length=``): the
model is handed it (``Fold.validation``; ``{validation}`` on the command
line), trains on what precedes it, and receval evaluates the test window
alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import ReceValError
from receval.workflow.backtest import Fold, ShellModel
from receval.workflow.baselines import recommend

pytestmark = pytest.mark.timeout(120)

# times 0..9; test windows of 2, validation the 2 before each
LOG = pd.DataFrame(
    {
        "user": [1, 2, 1, 3, 2, 1, 3, 2, 3, 1],
        "item": [1, 2, 2, 1, 3, 3, 2, 1, 3, 1],
        "rating": [5] * 10,
        "timestamp": list(range(10)),
    }
)
WINDOWS = {"test_length": 2, "n_folds": 2, "validation_length": 2}


def test_the_model_gets_each_folds_validation_and_trains_before_it() -> None:
    seen: list[tuple[Fold, pd.DataFrame]] = []

    def fit_predict(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> pd.DataFrame:
        seen.append((fold, train))
        return recommend("popular", train, users=users, k=fold.k)

    bt = receval.backtest(LOG, WINDOWS, fit_predict, ["hit_rate@1"])
    folds = list(receval.split(LOG, "time_windows", **WINDOWS))
    assert len(seen) == 2
    for (fold, train), s in zip(seen, folds, strict=True):
        # by hand: fold 0 tests [6, 8), validation [4, 6), train [0, 4); fold 1 shifted by 2
        start = 6 + 2 * fold.number
        assert (fold.validation_from, fold.validation_to) == (start - 2, start)
        assert (fold.test_from, fold.test_to) == (start, start + 2)
        assert fold.train_to == start - 2
        assert fold.validation is not None
        assert fold.validation["timestamp"].tolist() == [start - 2, start - 1]
        assert train["timestamp"].tolist() == list(range(start - 2))
        pd.testing.assert_frame_equal(fold.validation, s.validation)
        # the test window alone is evaluated: each fold equals evaluate on its split
        lists = recommend("popular", s.train, users=s.test["user"].unique(), k=1)
        expected = receval.evaluate(lists, s.test, ["hit_rate@1"]).summary["hit_rate@1"]
        assert bt.results[fold.number].summary["hit_rate@1"] == expected


def test_without_validation_length_the_fold_has_none() -> None:
    seen: list[Fold] = []

    def fit_predict(train: pd.DataFrame, users: np.ndarray, fold: Fold) -> pd.DataFrame:
        seen.append(fold)
        return recommend("popular", train, users=users, k=fold.k)

    receval.backtest(LOG, {"test_length": 2, "n_folds": 2}, fit_predict, ["hit_rate@1"])
    assert [(f.validation, f.validation_from, f.validation_to) for f in seen] == [(None,) * 3] * 2


def test_a_command_reading_validation_needs_the_split_to_have_one() -> None:
    model = ShellModel("cp {validation} {out}", recs_format="parquet")
    with pytest.raises(ReceValError, match=r"fold 0: the command reads \{validation\}"):
        receval.backtest(LOG, {"test_length": 2, "n_folds": 1}, model, ["hit_rate@1"])
    model.close()


# reads train and validation, checks that validation follows train, writes the
# most popular items of both
MODEL = (
    "import sys, pandas as pd; tr = pd.read_parquet(sys.argv[1]); "
    "va = pd.read_parquet(sys.argv[2]); us = pd.read_parquet(sys.argv[3]); "
    "assert len(va) and va['timestamp'].min() >= tr['timestamp'].max(); "
    "k = int(sys.argv[5]); top = pd.concat([tr, va])['item'].value_counts().index[:k]; "
    "pd.DataFrame([(u, i, r + 1) for u in us['user'] for r, i in enumerate(top)], "
    "columns=['user', 'item', 'rank']).to_csv(sys.argv[4], index=False)"
)


def test_cli_hands_the_command_each_folds_validation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.csv"
    LOG.to_csv(log, index=False)
    template = f'{sys.executable} -c "{MODEL}" {{train}} {{validation}} {{users}} {{out}} {{k}}'
    argv = ["backtest", log, "--test-length", "2", "--n-folds", "2", "-m", "hit_rate@1", "-q"]
    code = main([str(a) for a in [*argv, "--validation-length", "2", "--command", template]])
    out, err = capsys.readouterr()
    assert code == 0, err
    code = main([str(a) for a in [*argv, "--validation-length", "2", "--command", template]]
                + ["--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(json.loads(out)["folds"]) == 2
    code = main([str(a) for a in [*argv, "--command", template]])  # no validation part
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "{validation}" in err and "--validation-length" in err and "Traceback" not in err
