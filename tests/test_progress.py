"""The library is silent unless asked; progress=True names each long step on
stderr (issue #19 point 3). The numbers never depend on it."""

from __future__ import annotations

import re

import pytest

import receval
from receval._progress import rows_to_stderr, silent, steps_of
from receval.analysis.report import report

TRUTH = {1: [1, 2], 2: [3], 3: [1], 4: [2, 4]}
RUNS = {
    "a": {1: [1, 3], 2: [3, 1], 3: [2, 1], 4: [4, 1]},
    "b": {1: [3, 1], 2: [1, 2], 3: [1, 2], 4: [1, 3]},
}


def test_silent_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    receval.evaluate(RUNS["a"], TRUTH, "ndcg@2", progress=False)
    receval.evaluate(RUNS["a"], TRUTH, "ndcg@2")
    receval.compare(RUNS, TRUTH, "ndcg@2", n_resamples=50)
    report(RUNS, TRUTH, "ndcg@2", n_resamples=50, train={1: [9]})
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_compare_and_report_name_their_steps(capsys: pytest.CaptureFixture[str]) -> None:
    quiet = receval.compare(RUNS, TRUTH, ["ndcg@2", "p@1"], n_resamples=50)
    told = receval.compare(RUNS, TRUTH, ["ndcg@2", "p@1"], n_resamples=50, progress=True)
    assert told.pairs.equals(quiet.pairs) and told.table.equals(quiet.table)
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["receval compare: evaluating a ...", err[1]]
    assert re.fullmatch(r"receval compare: evaluating a: \d+\.\d s", err[1])
    assert "receval compare: precision@1: tests and intervals (50 resamples of 4 users) ..." in err
    assert len(err) == 8  # two runs, two metrics: a start and an end line each

    report(RUNS, TRUTH, "ndcg@2", n_resamples=50, train={1: [9]}, progress=True)
    err = capsys.readouterr().err.splitlines()
    starts = [line for line in err if line.endswith(" ...")]
    assert starts == [
        "receval report: comparing the systems ...",
        "receval compare: evaluating a ...",
        "receval compare: evaluating b ...",
        "receval compare: ndcg@2: tests and intervals (50 resamples of 4 users) ...",
        "receval report: curves: every system at k = 1..2 ...",
        "receval report: popularity deciles ...",
    ]


def test_poisson_resampling_step(capsys: pytest.CaptureFixture[str]) -> None:
    receval.compare(RUNS, TRUTH, "ndcg@2", n_resamples=50, resampling="poisson", progress=True)
    err = capsys.readouterr().err
    assert "receval compare: Poisson bootstrap and sign flips (50 resamples) ..." in err


def test_evaluate_rows_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """progress=True: the rows evaluated, at most once a second (here every call)."""
    told = receval.evaluate(RUNS["a"], TRUTH, ["ndcg@2", "p@1"], progress=True)
    assert told.summary == receval.evaluate(RUNS["a"], TRUTH, ["ndcg@2", "p@1"]).summary
    say = rows_to_stderr("evaluate", every=0.0)
    say(8)
    assert re.fullmatch(
        r"receval evaluate: 8 recommendation rows evaluated \(\d+\.\d s\)\n",
        capsys.readouterr().err,
    )


def test_steps_of() -> None:
    assert steps_of(None, "x") is silent and steps_of(False, "x") is silent
    mine = lambda what: silent(what)  # noqa: E731
    assert steps_of(mine, "x") is mine
    with pytest.raises(TypeError, match="progress must be True, False or a function"):
        steps_of("yes", "x")
