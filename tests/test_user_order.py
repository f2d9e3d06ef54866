"""Tables whose rows are not in user order (lists written in the test users'
order, a log in time order), with integer or text user ids, are put in user
order by evaluate's table door
(receval.io.stream.user_order) and merged pair by pair of users like sorted
files: the same values, counts, notes and errors as the in-memory path, bit
for bit, with every error naming the row as the caller gave it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval.errors import InputError
from receval.io import stream

METRICS = [
    "precision@1,3,10",
    "recall@3,10",
    "ndcg@3,10",
    "ndcg@10[gain=exp]",
    "ap@10",
    "rr@10",
    "hit_rate@3",
    "r_precision",
    "auc",
]


def _workload(seed: int, repeats: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lists with score ties (and repeated items), users with lists only, with
    truth only, graded truth with zeros (and repeated pairs); users in order."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(60):
        n = int(rng.integers(0, 14))
        items = rng.integers(0, 30, n) if repeats else rng.choice(30, n, replace=False)
        scores = rng.integers(0, 4, n).astype(float)
        rows += [(u * 7 - 100, int(i), s) for i, s in zip(items, scores, strict=True)]
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(0, 70, 300) * 7 - 100,
            "item": rng.integers(0, 30, 300),
            "relevance": rng.integers(0, 4, 300),
        }
    )
    if not repeats:
        truth = truth.drop_duplicates(["user", "item"])
    return recs, truth.sort_values("user", kind="stable").reset_index(drop=True)


def _runs_shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Each user's rows kept together and in their order, the users in a random order."""
    users = frame["user"].unique()
    order = np.random.default_rng(seed).permutation(len(users))
    rank = pd.Series(np.argsort(order), index=users)
    key = frame["user"].map(rank).to_numpy()
    return frame.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)


def _scattered(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Rows in a random order, each user's rows still in their order (a log in time order)."""
    users = frame["user"].to_numpy()
    slots = np.random.default_rng(seed).permutation(len(frame))  # a random user per slot
    taken = np.empty(len(frame), dtype=np.int64)
    # the j-th slot of user u (slots in order) takes the j-th row of u (rows in order)
    taken[np.argsort(users[slots], kind="stable")] = np.argsort(users, kind="stable")
    return frame.iloc[taken].reset_index(drop=True)


def _same(a: receval.Result, b: receval.Result) -> None:
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
    assert a.summary.keys() == b.summary.keys()
    for key in a.summary:
        assert a.summary[key] == b.summary[key] or (
            math.isnan(a.summary[key]) and math.isnan(b.summary[key])
        )
    assert a.counts == b.counts
    assert a.notes == b.notes


def _in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-memory path, as before tables were put in user order."""
    monkeypatch.setattr(stream, "sorted_tables", lambda *a, **k: None)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """The orders user_order gave (each side put in user order)."""
    seen: list[np.ndarray] = []
    real = stream.user_order

    def spy(user: Any) -> Any:
        got = real(user)
        if got is not None:
            seen.append(got)
        return got

    monkeypatch.setattr(stream, "user_order", spy)
    return seen


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_user_order_is_the_stable_sort_by_user(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = {
        "runs": np.repeat(rng.permutation(500), rng.integers(1, 12, 500)),
        "scattered": rng.integers(-50, 50, 3000),
        "scattered, ids over 16 bits": rng.integers(0, 300, 3000) * 70_001 - 5,
        "wide": rng.choice(np.array([-(2**62), 0, 5, 2**40, 2**62]), 2000),
        "one user": np.full(10, 7),
        "runs, a user twice": np.repeat(np.array([5, 3, 5, 1] * 50), 6),
        "sorted": np.arange(100),
    }
    for name, users in cases.items():
        for chunks in (1, 3):
            col = pa.chunked_array(np.array_split(users.astype(np.int64), chunks))
            order = stream.user_order(col)
            want = np.argsort(users, kind="stable")
            assert order is not None and np.array_equal(order, want), name
        if np.abs(users).max() < 2**31:
            small = stream.user_order(pa.chunked_array([users.astype(np.int32)]))
            assert small is not None and np.array_equal(small, np.argsort(users, kind="stable"))


def test_user_order_leaves_other_ids_alone() -> None:
    for col in (
        pa.chunked_array([pa.array([3, 1], type=pa.uint64())]),
        pa.chunked_array([pa.array([3, None, 1], type=pa.int64())]),
        pa.chunked_array([pa.array([2.0, 1.0])]),
    ):
        assert stream.user_order(col) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", ["runs", "scattered", "reversed"])
def test_tables_in_any_order_give_the_in_memory_values(
    monkeypatch: pytest.MonkeyPatch, seed: int, shape: str
) -> None:
    recs, truth = _workload(seed)
    if shape == "runs":
        recs, truth = _runs_shuffled(recs, seed), _runs_shuffled(truth, seed + 1)
    elif shape == "scattered":
        recs, truth = _scattered(recs, seed), _scattered(truth, seed + 1)
    else:
        recs, truth = recs.iloc[::-1].reset_index(drop=True), truth.iloc[::-1]
    seen = _spy(monkeypatch)
    options: list[dict[str, Any]] = [  # each reads each user's rows in their order
        {"duplicates": "keep"},  # the first of a repeated item, the first of a pair's grades
        {"ties": "input", "duplicates": "keep"},
        {"duplicates": "keep", "empty_truth": "zero", "missing_recs": "zero"},
    ]
    polars = pytest.importorskip("polars")
    forms = [
        (recs, truth),
        (pa.Table.from_pandas(recs), pa.Table.from_pandas(truth)),
        (polars.from_pandas(recs), polars.from_pandas(truth)),
    ]
    got = {}
    for i, kwargs in enumerate(options):
        for j, (r, t) in enumerate(forms):
            got[i, j] = receval.evaluate(r, t, METRICS, **kwargs)
    assert seen, "the tables were put in user order"
    with monkeypatch.context() as m:
        _in_memory(m)
        for i, kwargs in enumerate(options):
            want = receval.evaluate(recs, truth, METRICS, **kwargs)
            for j in range(len(forms)):
                _same(want, got[i, j])


def test_arrow_tables_of_many_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    recs, truth = _workload(5, repeats=False)
    recs = _runs_shuffled(recs, 5)
    table = pa.Table.from_pandas(recs)
    chunked = pa.concat_tables([table.slice(i, 37) for i in range(0, table.num_rows, 37)])
    assert chunked.column("user").num_chunks > 3
    got = receval.evaluate(chunked, truth, METRICS, ties="input")
    with monkeypatch.context() as m:
        _in_memory(m)
        _same(receval.evaluate(recs, truth, METRICS, ties="input"), got)


@pytest.mark.parametrize("side", ["recommendations", "truth"])
def test_an_error_names_the_row_as_given(monkeypatch: pytest.MonkeyPatch, side: str) -> None:
    recs, truth = _workload(7, repeats=False)
    recs, truth = _runs_shuffled(recs, 7), _scattered(truth, 8)
    if side == "recommendations":
        bad = len(recs) // 3
        recs.loc[bad, "score"] = np.inf
        user, item = recs.loc[bad, "user"], recs.loc[bad, "item"]
    else:
        bad = len(truth) // 2
        truth.loc[bad, "relevance"] = -2
        user, item = truth.loc[bad, "user"], truth.loc[bad, "item"]
    seen = _spy(monkeypatch)
    with pytest.raises(InputError) as got:
        receval.evaluate(recs, truth, METRICS)
    assert seen
    assert got.value.source == side and got.value.row == bad
    assert got.value.user == user and got.value.item == item
    with monkeypatch.context() as m:
        _in_memory(m)
        with pytest.raises(InputError) as want:
            receval.evaluate(recs, truth, METRICS)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("side", ["recommendations", "truth", "both"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_first_offending_row_of_the_input_is_named(
    monkeypatch: pytest.MonkeyPatch, side: str, seed: int
) -> None:
    # bad values on several rows of tables not in user order: the error names
    # the first in the input's order (SPEC 2.3), as the in-memory path does,
    # not the first the merge meets in user order
    recs, truth = _workload(seed, repeats=False)
    recs, truth = _scattered(recs, seed), _runs_shuffled(truth, seed + 1)
    rng = np.random.default_rng(seed)
    if side in ("recommendations", "both"):
        bad = rng.choice(len(recs), 4, replace=False)
        recs.loc[bad, "score"] = [np.nan, np.inf, -np.inf, np.nan]
    if side in ("truth", "both"):
        bad = rng.choice(len(truth), 3, replace=False)
        truth.loc[bad, "relevance"] = -1
    monkeypatch.setattr(stream, "CHUNK_ROWS", 50)
    seen = _spy(monkeypatch)
    with pytest.raises(InputError) as got:
        receval.evaluate(recs, truth, METRICS)
    assert seen, "put in user order"
    with monkeypatch.context() as m:
        _in_memory(m)
        with pytest.raises(InputError) as want:
            receval.evaluate(recs, truth, METRICS)
    assert str(got.value) == str(want.value)
    assert (got.value.source, got.value.row) == (want.value.source, want.value.row)
    frame = truth if want.value.source == "truth" else recs
    column = "relevance" if want.value.source == "truth" else "score"
    values = frame[column].to_numpy(dtype=float)
    first = np.flatnonzero(~np.isfinite(values) | (values < 0))[0]
    assert want.value.row == first  # the first offending row of the input


@pytest.mark.parametrize("error", [None, "late user", "early user"])
def test_a_table_found_out_of_order_late_is_put_in_order(
    monkeypatch: pytest.MonkeyPatch, error: str | None
) -> None:
    # the order is checked as the merge reads the table: here the rows of an
    # early user come last, after pairs of users already evaluated (without
    # them); the merge meets them, the table is put in user order and merged
    # again, and the values and errors are the in-memory path's
    recs, truth = _workload(9, repeats=False)
    late = recs["user"] == recs["user"].iloc[0]
    recs = pd.concat([recs[~late], recs[late]], ignore_index=True)
    if error == "late user":  # an item twice in the late user's list, its rows apart
        recs = pd.concat([recs, recs[late].iloc[:1]], ignore_index=True)
        recs.loc[len(recs) - 1, "score"] = -1.0
    elif error == "early user":  # met by a worker before the merge meets the late rows
        recs.loc[3, "score"] = np.nan
    monkeypatch.setattr(stream, "CHUNK_ROWS", 40)
    seen = _spy(monkeypatch)
    if error is None:
        got = receval.evaluate(recs, truth, METRICS, ties="input")
    else:
        with pytest.raises(InputError) as raised:
            receval.evaluate(recs, truth, METRICS)
    assert len(seen) == 1, "the lists were put in user order, the truth already was"
    with monkeypatch.context() as m:
        _in_memory(m)
        if error is None:
            _same(receval.evaluate(recs, truth, METRICS, ties="input"), got)
            return
        with pytest.raises(InputError) as want:
            receval.evaluate(recs, truth, METRICS)
    assert str(raised.value) == str(want.value)
    assert raised.value.row == want.value.row and raised.value.user == want.value.user


@pytest.mark.parametrize("shape", ["runs", "scattered"])
def test_text_users_are_put_in_code_point_order(
    monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    recs, truth = _workload(9, repeats=False)
    names = ["Zoë", "zoe", "Émile", "eve", "ab", "a", "A", "b", "日本", "ß", "ss", "10", "9"]

    def text(f: pd.DataFrame) -> pd.DataFrame:
        code = (f["user"] + 100) // 7
        return f.assign(user=[f"{names[c % len(names)]}{c // len(names)}" for c in code])

    recs, truth = text(recs), text(truth)
    move = _runs_shuffled if shape == "runs" else _scattered
    recs, truth = move(recs, 9), move(truth, 10)
    seen = _spy(monkeypatch)
    got = receval.evaluate(recs, truth, METRICS, ties="input")
    assert seen
    with monkeypatch.context() as m:
        _in_memory(m)
        _same(receval.evaluate(recs, truth, METRICS, ties="input"), got)


def test_text_order_is_the_stable_sort_by_code_point() -> None:
    rng = np.random.default_rng(3)
    pool = ["b", "a", "B", "é", "e", "日", "aa", "a b", "", "ß", "z", "Z", "ü"]
    ids = [pool[i] for i in rng.integers(0, len(pool), 400)]
    for typ in (pa.string(), pa.large_string()):
        col = pa.chunked_array([pa.array(ids[:150], typ), pa.array(ids[150:], typ)])
        order = stream.user_order(col)
        want = sorted(range(len(ids)), key=lambda i: ids[i])  # Python: by code point, stable
        assert order is not None and order.tolist() == want


def test_mixed_kinds_stay_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    recs, truth = _workload(9, repeats=False)
    recs = _runs_shuffled(recs, 9)
    # text users in the lists (digit strings and one word), numbers in the truth
    recs["user"] = recs["user"].astype(str)
    recs.loc[len(recs)] = ["x", 1, 0.5]
    seen = _spy(monkeypatch)
    got = receval.evaluate(recs, truth, METRICS)
    assert not seen
    with monkeypatch.context() as m:
        _in_memory(m)
        _same(receval.evaluate(recs, truth, METRICS), got)
