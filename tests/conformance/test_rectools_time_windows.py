"""``receval.split(method="time_windows")`` against RecTools 0.19's
``TimeRangeSplitter`` (under the rectools conformance interpreter;
tests/conformance/setup_venvs.sh), where the two definitions coincide:
RecTools' folds are expanding windows (no ``train_length``) whose test windows
of ``test_size`` follow one another (``step`` = ``test_length``) and end at
the last interaction's day (hour) ceiled — one unit later when it falls on a
border — so receval is given ``end=`` that time; its filters
``filter_cold_users`` / ``filter_cold_items`` / ``filter_already_seen`` are
receval's ``drop_unseen_users`` / ``drop_unseen_items`` / ``drop_seen``. On
random logs (dates to the minute, ids as ints) every fold's borders and the
rows of its train and test parts are RecTools'.

A missing interpreter or rectools skips, unless ``RECEVAL_CONFORMANCE_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.workflow.split import split

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"


def _rectools(log: pd.DataFrame, params: dict, tmp: Path) -> list[dict]:
    python = VENVS / "rectools" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"no interpreter at {python} (run tests/conformance/setup_venvs.sh)")
        pytest.skip(f"no interpreter at {python}")
    log.to_parquet(tmp / "in.parquet", index=False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = HERE / "rectools_split_check.py"
    args = [str(python), str(script), str(tmp / "in.parquet"), str(tmp / "out.json")]
    proc = subprocess.run(
        [*args, json.dumps(params)], capture_output=True, text=True, timeout=300, env=env
    )
    if "No module named 'rectools'" in proc.stderr and not REQUIRED:
        pytest.skip("rectools is not installed in the rectools venv")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads((tmp / "out.json").read_text())


def _end(last: pd.Timestamp, unit: str) -> pd.Timestamp:
    """RecTools' end of the last test window: ``last`` ceiled to the unit, one
    unit later when it is on a border already."""
    freq = unit.lower() if unit == "H" else unit  # pandas 3 spells hours "h"
    ceiled = last.ceil(freq)
    return ceiled + pd.Timedelta(1, unit=freq) if ceiled == last else ceiled


@pytest.mark.parametrize("seed", range(6))
def test_time_windows_match_rectools(seed: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 2000))
    unit = "D" if seed % 2 else "H"
    size = int(rng.integers(1, 4))
    span = {"D": 60 * 24 * 20, "H": 60 * 48}[unit]
    minutes = rng.integers(0, span, n)
    if seed == 0:  # the last interaction exactly on a unit border
        minutes[rng.integers(n)] = span
    log = pd.DataFrame(
        {
            "user_id": rng.integers(0, max(n // 8, 2), n),
            "item_id": rng.integers(0, max(n // 10, 2), n),
            "datetime": pd.Timestamp("2024-03-01") + pd.to_timedelta(minutes, unit="min"),
            "row": np.arange(n),
        }
    )
    flags = rng.random(3) < 0.5
    params = {
        "test_size": f"{size}{unit}",
        "n_splits": int(rng.integers(1, 5)),
        "filter_cold_users": bool(flags[0]),
        "filter_cold_items": bool(flags[1]),
        "filter_already_seen": bool(flags[2]),
    }
    theirs = _rectools(log, params, tmp_path)
    end = _end(log["datetime"].max(), unit)
    assert pd.Timestamp(theirs[-1]["end"]) == end  # the documented rule is RecTools'
    folds = split(
        log,
        "time_windows",
        test_length=pd.Timedelta(size, unit=unit.lower() if unit == "H" else unit),
        n_folds=params["n_splits"],
        end=end,
        drop_unseen_users=params["filter_cold_users"],
        drop_unseen_items=params["filter_cold_items"],
        drop_seen=params["filter_already_seen"],
        timestamp_col="datetime",
    )
    assert len(folds) == len(theirs)
    for ours, fold in zip(folds, theirs, strict=True):
        window = ours.info["fold"]["test"]
        assert pd.Timestamp(window["from"]) == pd.Timestamp(fold["start"])
        assert pd.Timestamp(window["to"]) == pd.Timestamp(fold["end"])
        assert sorted(ours.train["row"].tolist()) == fold["train"]
        assert sorted(ours.test["row"].tolist()) == fold["test"]
