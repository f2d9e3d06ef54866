"""compare reads the truth once, not once per run (issue #30): the table
read once goes to every evaluation, and the numbers, notes, columns and
errors are those of reading the file in each evaluation."""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
import receval.io.files
from receval.errors import InputError
from receval.io.inputs import FileInput

METRICS = ["ndcg@5", "precision@3", "ap@5", "rr"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Any]:
    """A graded truth with columns under other names (uid, item_id, rating)
    and three runs (one lacking a user)."""
    rng = np.random.default_rng(7)
    rows = [
        (u, int(i), int(g))
        for u in range(1, 41)
        for i, g in zip(rng.choice(50, 4, replace=False), rng.integers(1, 6, 4), strict=True)
    ]
    truth = tmp_path / "truth.csv"
    pd.DataFrame(rows, columns=["uid", "item_id", "rating"]).to_csv(truth, index=False)
    runs = {}
    for s in range(3):
        r = np.random.default_rng(s)
        recs = [
            (u, int(i), k + 1)
            for u in range(1, 41)
            if not (s == 1 and u == 2)
            for k, i in enumerate(r.choice(50, 6, replace=False))
        ]
        runs[f"sys{s}"] = str(tmp_path / f"sys{s}.csv")
        pd.DataFrame(recs, columns=["uid", "item_id", "rank"]).to_csv(runs[f"sys{s}"], index=False)
    return {"truth": str(truth), "runs": runs, "dir": tmp_path}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Every file read by receval.io.files.read_file, counted by role (the
    real reader does the reading)."""
    counted: collections.Counter[str] = collections.Counter()
    real = receval.io.files.read_file

    def counting(path: Any, **kw: Any) -> Any:
        counted[kw["role"]] += 1
        return real(path, **kw)

    monkeypatch.setattr(receval.io.files, "read_file", counting)
    return counted


def _per_system(
    runs: dict[str, str], truth: Any, **kw: Any
) -> tuple[receval.Comparison, dict[str, receval.Result]]:
    """The comparison of the runs each evaluated alone (the truth read by
    each evaluation), and those evaluations."""
    alone = {name: receval.evaluate(run, truth, METRICS, **kw) for name, run in runs.items()}
    return receval.compare(alone, truth, METRICS, n_resamples=200, **kw), alone


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"threshold": 3},
        {"user_col": "uid", "item_col": "item_id", "relevance_col": "rating"},
        {"truth_user_col": "uid"},
        {"missing_recs": "skip", "graded": False},
    ],
    ids=["detected", "threshold", "columns-named", "truth-column-named", "policies"],
)
def test_the_truth_file_is_read_once_with_the_numbers_of_one_read_per_run(
    files: dict[str, Any], reads: collections.Counter[str], kw: dict[str, Any]
) -> None:
    runs, truth = files["runs"], files["truth"]
    once = receval.compare(runs, truth, METRICS, n_resamples=200, **kw)
    assert reads == {"truth": 1, "recommendations": 3}
    reads.clear()
    per_system, alone = _per_system(runs, truth, **kw)
    assert reads == {"truth": 3, "recommendations": 3}  # evaluate reads it each time
    assert once.to_json() == per_system.to_json()  # every number, count and parameter
    for name, res in alone.items():
        got = once.results[name]
        pd.testing.assert_frame_equal(got.per_user, res.per_user)
        assert got.notes == res.notes
        assert got.parameters["columns"] == res.parameters["columns"]
        assert got.parameters["columns"]["truth"]["user"] == "uid"


def test_a_format_given_with_the_file_is_read_once(
    files: dict[str, Any], reads: collections.Counter[str]
) -> None:
    tsv = files["dir"] / "truth.txt"
    pd.read_csv(files["truth"]).to_csv(tsv, sep="\t", index=False)
    truth = FileInput(tsv, format="tsv")
    once = receval.compare(files["runs"], truth, METRICS, n_resamples=200)
    assert reads["truth"] == 1
    assert once.to_json() == _per_system(files["runs"], truth)[0].to_json()


def test_a_single_run_or_a_table_is_handed_down_as_given(
    files: dict[str, Any], reads: collections.Counter[str]
) -> None:
    one = {"sys0": files["runs"]["sys0"]}
    receval.compare(one, files["truth"], METRICS, n_resamples=50)
    assert reads["truth"] == 1
    reads.clear()
    table = pd.read_csv(files["truth"])
    receval.compare(files["runs"], table, METRICS, n_resamples=50)
    assert reads["truth"] == 0


def _error(call: Callable[[], Any]) -> str:
    with pytest.raises(InputError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("user,item,relevance\n1,1,1\n2,2,-1\n", "line 3"),  # a row: the file's line
        ("user,item,relevance\n1,1,1\n1,1,1\n", "line 3"),  # a pair twice: both lines
        ("user,foo\n1,1\n", "no item column"),  # the file itself
    ],
)
def test_an_error_in_the_truth_is_the_one_evaluate_gives(
    files: dict[str, Any], tmp_path: Path, content: str, where: str
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    runs = files["runs"]
    got = _error(lambda: receval.compare(runs, str(bad), "ndcg@5", n_resamples=50))
    want = _error(lambda: receval.evaluate(runs["sys0"], str(bad), "ndcg@5"))
    assert got == want and str(bad) in got and where in got


def test_a_missing_truth_file_is_reported_where_it_was(files: dict[str, Any]) -> None:
    """Opening the truth fails: each evaluation reads it and reports what is
    wrong in its own order (here the run's missing column comes first)."""
    missing = str(files["dir"] / "nowhere.csv")
    got = _error(lambda: receval.compare(files["runs"], missing, "ndcg@5", user_col="userId"))
    assert "sys0.csv" in got and "no user column 'userId'" in got


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash's <(...)")
def test_the_command_reads_a_truth_from_a_pipe_for_every_run(files: dict[str, Any]) -> None:
    """A pipe can be read once: before, the second run found it empty."""
    d = files["dir"]
    exe = f"{sys.executable} -m receval compare"
    args = "sys0.csv sys1.csv sys2.csv -m ndcg@5 --n-resamples 100 -q"
    piped = subprocess.run(
        ["bash", "-c", f"{exe} <(cat truth.csv) {args}"], capture_output=True, text=True, cwd=d
    )
    from_file = subprocess.run(
        ["bash", "-c", f"{exe} truth.csv {args}"], capture_output=True, text=True, cwd=d
    )
    assert piped.returncode == 0, piped.stderr
    assert from_file.returncode == 0, from_file.stderr
    assert piped.stdout == from_file.stdout and "sys2" in piped.stdout
