"""The Spark engine's rows grouped into lists in the JVM (issue #33 point 5):
:func:`receval.engines.spark.ungrouped` makes one row per user (per side a
row count and one list per column, as :func:`~receval.engines.spark.grouped`
builds them) the rows again, by hand-worked cases on Arrow tables (no Spark
needed); and, on Spark, a missing value that ``collect_list`` leaves out makes
the engine read the rows instead, with the in-process outcome."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval.engines import spark as spark_engine
from receval.engines.spark import LISTS, Dropped, pieces, ungrouped
from receval.errors import ReceValError
from receval.records import SIDE

NAMES = ["user", "item", "v", SIDE, "relevance"]


def _grouped(users: list[Any], sides: list[dict[str, list[Any] | None]]) -> pa.Table:
    """One row per user: per side its row count and its lists (None: the user
    is not on that side, as a full outer join leaves it)."""
    columns: dict[str, Any] = {"user": users}
    for i, side in enumerate(sides):
        lengths = None
        for name, lists in side.items():
            columns[f"{LISTS}{i}_{name}"] = lists
            lengths = [None if x is None else len(x) for x in lists]
        columns[f"{LISTS}{i}"] = pa.array(lengths, pa.int64())
    return pa.table(columns)


def test_lists_become_the_rows_users_ascending() -> None:
    table = _grouped(
        [7, 2, 5],
        [
            {"item": [[70, 71], [20], None], "v": [[1.0, 2.0], [1.0], None]},
            {"item": [[71], None, [50, 51]], "relevance": [[3.0], None, [1.0, 2.0]]},
        ],
    )
    got = ungrouped(table, NAMES)
    assert got.column_names == NAMES
    # the sides one after the other, each with its users ascending
    assert got.column("user").to_pylist() == [2, 7, 7, 5, 5, 7]
    rows = list(zip(*(got.column(n).to_pylist() for n in NAMES), strict=True))
    assert rows == [
        (2, 20, 1.0, 0, None),
        (7, 70, 1.0, 0, None),
        (7, 71, 2.0, 0, None),
        (5, 50, None, 1, 1.0),
        (5, 51, None, 1, 2.0),
        (7, 71, None, 1, 3.0),
    ]
    assert got.column(SIDE).type == pa.int8()


def test_text_users_keep_their_order_and_a_short_list_is_dropped() -> None:
    table = _grouped(["b", "a"], [{"item": [["x"], ["y", "z"]], "v": [[1.0], [1.0, 2.0]]}])
    got = ungrouped(table, ["user", "item", "v", SIDE])
    assert got.column("user").to_pylist() == ["b", "a", "a"]
    assert got.column("item").to_pylist() == ["x", "y", "z"]
    short = table.set_column(
        table.column_names.index(f"{LISTS}0_v"),
        f"{LISTS}0_v",
        pa.array([[1.0], [2.0]], pa.list_(pa.float64())),  # one value left out
    )
    with pytest.raises(Dropped):
        ungrouped(short, ["user", "item", "v", SIDE])


def test_empty_lists_give_no_rows() -> None:
    table = _grouped([1], [{"item": [[]], "v": [[]]}])
    got = ungrouped(table, ["user", "item", "v", SIDE])
    assert got.num_rows == 0
    assert got.column_names == ["user", "item", "v", SIDE]


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_is_cut_in_pieces_of_whole_users(seed: int) -> None:
    """Consecutive users, at most ``rows`` rows in a piece (every side's rows
    counted, a missing side as none) unless one user holds more, alone; each
    piece as long as the next user does not fit (greedy)."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(0, 30))
        counts = rng.integers(0, 12, (2, n))
        lists = [[[1] * int(c) for c in side] for side in counts]
        lists[1] = [
            None if c == 0 and rng.random() < 0.5 else x
            for c, x in zip(counts[1], lists[1], strict=True)
        ]
        table = _grouped(list(range(n)), [{"item": lists[0]}, {"item": lists[1]}])
        rows = int(rng.integers(1, 30))
        batch = pa.RecordBatch.from_arrays(
            [c.combine_chunks() for c in table.columns], schema=table.schema
        )
        got = pieces(batch, rows)
        assert [u for p in got for u in p.column("user").to_pylist()] == list(range(n))
        total, at = counts.sum(axis=0), 0
        for p in got:
            k = p.num_rows
            held = int(total[at : at + k].sum())
            assert k >= 1 and (held <= rows or k == 1)
            if at + k < n:
                assert held + total[at + k] > rows
            at += k


def _outcome(run: Any) -> Any:
    try:
        res = run()
    except ReceValError as exc:
        # on Spark, rows have no number: the error names the user and item
        return type(exc).__name__, getattr(exc, "reason", str(exc))
    return dict(res.summary), dict(res.counts)


@pytest.mark.spark
def test_a_missing_value_reads_the_rows(spark: Any) -> None:
    """A missing grade and a missing score, which collect_list leaves out of its
    lists: the Spark engine counts the rows apart, sees a list short and
    evaluates the rows instead; the outcome is the in-process one."""
    rng = np.random.default_rng(3)
    recs = pd.DataFrame(
        {"user": np.repeat(np.arange(20), 5), "item": rng.integers(0, 30, 100)}
    ).drop_duplicates(["user", "item"])
    recs["score"] = rng.random(len(recs))
    truth = recs.sample(40, random_state=1)[["user", "item"]].assign(relevance=2.0)
    truth = truth.reset_index(drop=True)
    metrics = ["ndcg@5", "precision@5", "ap"]
    whole = _outcome(lambda: receval.evaluate(recs, truth, metrics))
    assert isinstance(whole[0], dict)
    on_spark = _outcome(
        lambda: receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), metrics)
    )
    assert on_spark == whole
    graded = truth.astype({"relevance": "float64"})
    graded.loc[3, "relevance"] = np.nan
    scored = recs.copy()
    scored.iloc[7, scored.columns.get_loc("score")] = np.nan
    for r, t in ((recs, graded), (scored, truth)):
        here = _outcome(lambda r=r, t=t: receval.evaluate(r, t, metrics))
        there = _outcome(
            lambda r=r, t=t: receval.evaluate(
                spark.createDataFrame(r), spark.createDataFrame(t), metrics
            )
        )
        assert there == here


@pytest.mark.spark
def test_lists_in_pieces_of_a_few_rows_give_the_same_values(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each Arrow batch of lists evaluated in pieces of at most
    ``PIECE_ROWS`` rows (here 7: a piece a user or two): the in-process
    summary, counts, per-user values and errors, bit for bit."""
    rng = np.random.default_rng(8)
    recs = pd.DataFrame(
        {"user": np.repeat(np.arange(40), 6), "item": rng.integers(0, 25, 240)}
    ).drop_duplicates(["user", "item"])
    recs["score"] = rng.integers(0, 4, len(recs)).astype(float)
    truth = recs.sample(90, random_state=2)[["user", "item"]].assign(relevance=2.0)
    truth = truth.reset_index(drop=True)
    metrics = ["ndcg@5", "precision@3", "ap", "rr", "recall@10"]
    monkeypatch.setattr(spark_engine, "PIECE_ROWS", 7)
    whole = receval.evaluate(recs, truth, metrics)
    got = receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), metrics)
    assert got.parameters["engine"] == "spark"
    assert _outcome(lambda: got) == _outcome(lambda: whole)
    per_user = got.per_user_spark.toPandas().set_index("user").sort_index()
    pd.testing.assert_frame_equal(per_user, whole.per_user, check_exact=True, check_names=False)
    bad = recs.copy()
    bad.iloc[100, bad.columns.get_loc("score")] = np.inf
    here = _outcome(lambda: receval.evaluate(bad, truth, metrics))
    there = _outcome(
        lambda: receval.evaluate(spark.createDataFrame(bad), spark.createDataFrame(truth), metrics)
    )
    assert there == here and there[0] == "InputError"
