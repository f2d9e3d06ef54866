"""evaluate_next_items with a callable: the callable runs on the calling
thread, in session order, while the threads evaluate the previous batch (at
most two batches alive); the parts are kept in unit order (issue #36 point 6)."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

import receval
import receval.evaluation.next_items as next_items
from receval.errors import InputError
from receval.evaluation.accumulator import Accumulator


def _log(n: int = 30, seed: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 7, size=n)
    sessions = pd.DataFrame(
        {
            "session": np.repeat(np.arange(n), lengths),
            "item": rng.integers(0, 12, size=int(lengths.sum())),
            "step": np.concatenate([np.arange(k) for k in lengths]),
        }
    )
    rows = [
        (s, t, int(x), r)
        for s in range(n)
        for t in range(1, int(lengths[s]))
        for r, x in enumerate(rng.choice(12, size=4, replace=False), 1)
    ]
    return sessions, pd.DataFrame(rows, columns=["session", "step", "item", "rank"])


def test_callable_on_the_calling_thread_with_two_batches_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions, table = _log()
    monkeypatch.setattr(next_items, "PIECE_ROWS", 6)  # several pieces a batch
    kept: list[np.ndarray] = []
    add = Accumulator._add_part

    def recorded(self: Accumulator, part: object) -> None:
        kept.append(part.values[0])  # type: ignore[attr-defined]
        add(self, part)

    monkeypatch.setattr(Accumulator, "_add_part", recorded)
    caller = threading.get_ident()
    batches: list[np.ndarray] = []
    steps_before: list[int] = []

    def model(prefixes: pd.DataFrame) -> pd.DataFrame:
        assert threading.get_ident() == caller
        batches.append(prefixes["session"].unique())
        # batch j is asked for once every step of batches 0..j-2 is kept
        steps_before.append(sum(len(u) for u in kept))
        return table[table["session"].isin(batches[-1])]

    metrics = ["rr@3", "ndcg@4", "recall@2"]
    res = receval.evaluate_next_items(model, sessions, metrics, batch_size=5)
    whole = receval.evaluate_next_items(table, sessions, metrics)
    pd.testing.assert_frame_equal(res.per_step, whole.per_step, check_exact=True)
    assert res.summary == whole.summary
    order = np.concatenate(batches)
    assert (np.diff(order) > 0).all()  # the sessions in order, each once
    per_batch = [
        int(table[table["session"].isin(b)].groupby(["session", "step"]).ngroups) for b in batches
    ]
    for j in range(2, len(batches)):
        assert steps_before[j] >= sum(per_batch[: j - 1])
    units = np.concatenate(kept)
    assert (np.diff(units) > 0).all()  # the parts kept in unit order: no sort to combine


def test_accumulator_part_is_update() -> None:
    recs = pd.DataFrame({"user": [1, 1, 2, 3], "item": [5, 6, 5, 7], "rank": [1, 2, 1, 1]})
    truth = pd.DataFrame({"user": [1, 2, 3], "item": [6, 4, 7]})
    a, b = Accumulator(["ndcg@2", "rr@2"]), Accumulator(["ndcg@2", "rr@2"])
    a.update(recs.iloc[:2], truth.iloc[:1])
    a.update(recs.iloc[2:], truth.iloc[1:])
    for part in [b._part(recs.iloc[:2], truth.iloc[:1]), b._part(recs.iloc[2:], truth.iloc[1:])]:
        b._add_part(part)
    assert len(b) == 2
    ra, rb = a.compute(), b.compute()
    assert ra.summary == rb.summary
    pd.testing.assert_frame_equal(ra.per_user, rb.per_user, check_exact=True)


def test_callable_ranks_of_python_objects_are_read_as_a_table() -> None:
    sessions, table = _log(6)
    ranks = table.astype({"rank": object})
    res = receval.evaluate_next_items(lambda p: ranks, sessions, "rr@3", batch_size=10**6)
    assert res.summary == receval.evaluate_next_items(table, sessions, "rr@3").summary
    bad = ranks.copy()
    bad.loc[2, "rank"] = "first"
    with pytest.raises(InputError, match="rank"):
        receval.evaluate_next_items(lambda p: bad, sessions, "rr@3", batch_size=10**6)


@pytest.mark.parametrize("col", ["score", "rank"])
def test_callable_nan_refused_as_the_table_refuses_it(col: str) -> None:
    sessions = pd.DataFrame({"session": [1, 1, 1, 2, 2], "item": [1, 2, 3, 4, 5]})
    values = [0.5, np.nan, 0.2, 0.1] if col == "score" else [1.0, np.nan, 1.0, 1.0]
    table = pd.DataFrame({"session": [1, 1, 1, 2], "step": [1, 1, 2, 1], "item": [2, 9, 3, 5]})
    table[col] = values
    messages = []
    for lists in (table, lambda prefixes: table):
        with pytest.raises(InputError, match="missing value") as caught:
            receval.evaluate_next_items(lists, sessions, "rr@3")
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
