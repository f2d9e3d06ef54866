"""The read-ahead of sorted Parquet files (issue #33 point 3): items in order,
errors raised at the item where they happened, the thread ended when the
reading stops early; files evaluated the same as tables."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import receval
from receval.io import stream
from receval.io.stream import _read_ahead


def _threads() -> int:
    return sum(t.name == "receval-read-ahead" for t in threading.enumerate())


def test_items_in_order_and_errors_where_they_happen() -> None:
    before = _threads()
    assert list(_read_ahead(iter(range(50)), depth=2)) == list(range(50))

    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("bad row 3")

    got = []
    with pytest.raises(ValueError, match="bad row 3"):
        for x in _read_ahead(failing()):
            got.append(x)
    assert got == [1, 2]
    assert _threads() == before


def test_closing_early_ends_the_thread_and_the_source() -> None:
    before = _threads()
    closed = []

    def endless() -> Iterator[int]:
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.append(True)

    it = _read_ahead(endless())
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()
    assert closed == [True]
    assert _threads() == before


@pytest.mark.parametrize("ahead", [1, 0])
def test_files_read_ahead_give_the_tables_values(
    ahead: int, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "CHUNK_ROWS", 64)  # many batches read ahead
    monkeypatch.setattr(stream, "READ_AHEAD", ahead)
    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(300), 7)
    recs = pa.table(
        {
            "user": users,
            "item": (users * 7 + np.tile(np.arange(1, 8), 300) * 13) % 60,
            "rank": np.tile(np.arange(1, 8), 300),
        }
    )
    tu = np.repeat(np.arange(0, 320, 2), 3)
    truth = pa.table(
        {"user": tu, "item": rng.integers(0, 60, len(tu)), "relevance": np.ones(len(tu))}
    )
    truth = truth.group_by(["user", "item"]).aggregate([("relevance", "max")])
    truth = truth.rename_columns(["user", "item", "relevance"]).sort_by([("user", "ascending")])
    rp, tp = f"{tmp_path}/r.parquet", f"{tmp_path}/t.parquet"
    pq.write_table(recs, rp, row_group_size=100)
    pq.write_table(truth, tp, row_group_size=50)
    metrics = ["ndcg@5", "recall@5", "ap@7", "p@3"]
    whole = receval.evaluate(recs, truth, metrics)
    before = _threads()
    streamed = receval.evaluate(rp, tp, metrics)
    assert _threads() == before
    assert streamed.metrics == whole.metrics
    assert streamed.counts == whole.counts


def test_largest_grade_without_a_float_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "SMALL_COLUMN", 0)  # the Arrow path, whatever the size
    for values, typ in [
        ([3, None, -7, 2**31 - 1], pa.int32()),
        ([3, 9, 250], pa.uint8()),
        ([0.5, float("nan"), None, -2.25], pa.float32()),
        ([float("nan"), 1e300, -1e300], pa.float64()),
        ([None, None], pa.int16()),
        ([float("nan")], pa.float64()),
    ]:
        col = pa.chunked_array([pa.array(values, typ)])
        expected = pa.compute.max(col.cast(pa.float64())).as_py()
        got = stream._largest(col)
        assert (got is None and expected is None) or np.array_equal(got, expected, equal_nan=True)
