"""The allocator setting of large evaluations (receval._malloc) changes no number."""

from __future__ import annotations

import platform

import numpy as np
import pandas as pd
import pytest

import receval
from receval import _malloc


def test_small_inputs_leave_the_allocator_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECEVAL_MALLOC", "1")
    assert _malloc.tune(_malloc.MIN_ROWS - 1) is False


def test_a_library_call_does_not_tune(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a process that opted in (allow() or RECEVAL_MALLOC=1) is tuned;
    RECEVAL_MALLOC=0 wins over allow() (tests/test_good_guest.py observes glibc)."""
    monkeypatch.delenv("RECEVAL_MALLOC", raising=False)
    monkeypatch.setattr(_malloc, "_allowed", False)
    assert not _malloc.allowed() and _malloc.tune(_malloc.MIN_ROWS) is False
    monkeypatch.setattr(_malloc, "_allowed", True)
    assert _malloc.allowed()
    monkeypatch.setenv("RECEVAL_MALLOC", "0")
    assert not _malloc.allowed()


def test_opt_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECEVAL_MALLOC", "0")
    assert _malloc._glibc() is None


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_glibc_is_tuned_and_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECEVAL_MALLOC", "1")
    assert _malloc._glibc() is not None
    assert _malloc.tune(_malloc.MIN_ROWS) is True
    _malloc.release()


def test_large_evaluation_equals_untuned(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 250,000-row input (tuned) gives the numbers of the same input with
    the setting switched off."""
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(5000), 50)
    ranks = np.tile(np.arange(1, 51), 5000)
    recs = pd.DataFrame({"user": users, "item": rng.integers(0, 10**6, len(users)), "rank": ranks})
    recs = recs.drop_duplicates(["user", "item"])
    truth = recs.sample(frac=0.1, random_state=1)[["user", "item"]]
    metrics = ["ndcg@10", "ap@50", "recall@20"]
    monkeypatch.setenv("RECEVAL_MALLOC", "1")
    a = receval.evaluate(recs, truth, metrics)
    monkeypatch.setattr(_malloc, "_libc", None)
    monkeypatch.setattr(_malloc, "tune", lambda rows: False)
    b = receval.evaluate(recs, truth, metrics)
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
    assert a.summary == b.summary


def test_only_the_command_opts_in() -> None:
    """`receval` / `python -m receval` own their process and tune it; a host
    calling receval.cli.main() does not."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from receval import _malloc, cli\n"
        "sys.argv = ['receval', 'metrics']\n"
        "cli.main(['metrics'])\n"
        "assert not _malloc.allowed()\n"
        "cli.command_line()\n"
        "assert _malloc.allowed()\n"
    )
    env_free = {k: v for k, v in __import__("os").environ.items() if k != "RECEVAL_MALLOC"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env_free
    )
    assert done.returncode == 0, done.stderr
