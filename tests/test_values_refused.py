"""Values that cannot be right are refused (issue #31 point 7, in part).

``--seed -1`` was an internal error (NumPy's message, a traceback line) in
split and the demo; ``--test-size 0.6 --validation-size 0.5`` was accepted
and left train a sliver. Both are now an error in the caller's syntax (exit
2 in the shell), before any file is written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import OptionError
from receval.workflow import baselines, split, synthetic


@pytest.fixture
def log(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "user": rng.integers(0, 30, 400),
            "item": rng.integers(0, 50, 400),
            "rating": rng.integers(1, 6, 400),
            "timestamp": np.arange(400),
        }
    )
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("method", ["random", "user_random"])
@pytest.mark.parametrize("seed", ["-1", "-7"])
def test_split_refuses_a_negative_seed(
    log: Path, tmp_path: Path, method: str, seed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(["split", str(log), "--out", str(out), "--method", method, "--seed", seed])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--seed {seed} is not allowed: expected a whole number >= 0" in err
    assert "internal error" not in err
    assert not out.exists() or not any(out.iterdir())


def test_the_demo_refuses_a_negative_seed_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--seed", "-1", "--users", "50"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--seed -1 is not allowed" in err and "internal error" not in err
    assert not out.exists()


def test_python_callers_read_the_keyword(log: Path) -> None:
    frame = pd.read_csv(log)
    for call in (
        lambda: split.split(frame, "random", seed=-1),
        lambda: next(split.kfold(frame, 3, seed=-1)),
        lambda: synthetic.synthetic_interactions(50, seed=-1),
        lambda: baselines.RandomRecommender(seed=-1),
        lambda: split.split(frame, "random", seed=1.5),
        lambda: split.split(frame, "random", seed=True),
    ):
        with pytest.raises(OptionError, match=r"seed=.* is not allowed"):
            call()
    assert len(split.split(frame, "random", seed=np.int64(3)).test)  # a NumPy integer is fine


@pytest.mark.parametrize(("test", "validation"), [("0.6", "0.5"), ("0.5", "0.5"), ("0.9", "0.2")])
def test_shares_that_leave_nothing_to_train_on_are_refused(
    log: Path, tmp_path: Path, test: str, validation: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["split", str(log), "--out", str(out), "--method", "user_time"]
    code = main([*args, "--test-size", test, "--validation-size", validation])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--validation-size {validation} is not allowed" in err and "no share to train" in err
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(OptionError, match="validation_size="):
        receval.split(
            pd.read_csv(log), "user_time", test_size=float(test), validation_size=float(validation)
        )


def test_shares_that_leave_a_share_to_train_on_still_split(log: Path) -> None:
    parts = receval.split(pd.read_csv(log), "user_time", test_size=0.5, validation_size=0.3)
    assert len(parts.train) and len(parts.validation) and len(parts.test)
