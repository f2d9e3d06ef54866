"""Accumulators merge only when built alike (issue #31 point 7): metrics,
options, and now the item inputs (``train=``, ``catalog=``, ...). Parts
counted against other items (popularity, catalog) cannot be added up."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

import receval

METRICS = ["coverage@2", "novelty@2", "ndcg@2"]
TRAIN = {"a": ["i1", "i2", "i3"], "b": ["i2", "i4"]}


def _batches(acc: receval.Accumulator, users: list[str]) -> receval.Accumulator:
    for u in users:
        acc.update({u: ["i1", "i2"]}, {u: ["i2"]})
    return acc


@pytest.mark.parametrize(
    "other",
    [
        {"train": {"a": ["i1", "i2", "i9"]}},
        {"train": TRAIN, "catalog": ["i1", "i2", "i3", "i4", "i5"]},
        {"train": TRAIN, "popular": ["i2"]},
    ],
)
def test_accumulators_with_other_item_inputs_do_not_merge(other: dict) -> None:
    mine = _batches(receval.Accumulator(METRICS, train=TRAIN), ["x"])
    theirs = _batches(receval.Accumulator(METRICS, **other), ["y"])
    with pytest.raises(receval.ReceValError, match="differ in their item inputs"):
        mine.merge(theirs)
    assert len(mine) == 1  # nothing was added


_WORKER = """
import pickle, sys
import receval
acc = receval.Accumulator(%r, train=%r)
acc.update({"y": ["i1", "i2"]}, {"y": ["i2"]})
sys.stdout.buffer.write(pickle.dumps(acc))
"""


def test_workers_built_alike_merge_whatever_their_hash_seed() -> None:
    """Another process (another string hash seed) with the same inputs merges,
    and the merge is evaluate on all the batches."""
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", _WORKER % (METRICS, TRAIN)], capture_output=True, env=env, check=True
    ).stdout
    mine = _batches(receval.Accumulator(METRICS, train=TRAIN), ["x"])
    merged = mine.merge(pickle.loads(out)).compute()
    want = receval.evaluate(
        {"x": ["i1", "i2"], "y": ["i1", "i2"]}, {"x": ["i2"], "y": ["i2"]}, METRICS, train=TRAIN
    )
    assert merged.summary == want.summary
