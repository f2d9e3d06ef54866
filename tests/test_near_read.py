"""The evaluation near the read (issue #33 point 3): what each pair reuses.

- the metrics' needs are read from the registry once per plan
  (:class:`numpy_engine.Facts`), kept on the plan and left out of its pickle;
- a thread's :class:`_workspace.Workspace` hands the largest arrays of one
  pair to the next: values are bit for bit those of fresh arrays, a nested
  evaluation never shares them, and chunks evaluated one after the other on
  one thread do not see each other's buffers;
- ranks read as int32 stay int32 (no cast of the column), and the compiled
  list-order check reads them as the NumPy path does.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval import _workspace, ids
from receval.engines import driver, numpy_engine
from receval.io.tables import check_ranks, read_recs, read_truth
from receval.metrics.kernels import batch
from receval.metrics.spec import parse_metrics
from receval.records import Pair
from tests.test_stream import _same

METRICS = ["precision@10,100", "recall@10", "ndcg@5,50", "ap@100", "rr", "hit_rate@1"]


def _tables(seed: int, users: int, rank_type: Any = None) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 60, users)
    user = np.repeat(np.arange(users), n)
    rank = np.concatenate([np.arange(1, k + 1) for k in n]) if len(user) else np.empty(0)
    item = rng.integers(0, 400, len(user))
    recs = pd.DataFrame({"user": user, "item": item, "rank": rank}).drop_duplicates(
        ["user", "item"]
    )
    recs["rank"] = recs.groupby("user").cumcount() + 1
    m = rng.integers(0, 12, users)
    tu = np.repeat(np.arange(users), m)
    truth = pd.DataFrame(
        {
            "user": tu,
            "item": rng.integers(0, 400, len(tu)),
            "relevance": rng.integers(0, 4, len(tu)),
        }
    ).drop_duplicates(["user", "item"])
    rank_type = pa.int32() if rank_type is None else rank_type
    schema = pa.schema([("user", pa.int64()), ("item", pa.int64()), ("rank", rank_type)])
    return pa.Table.from_pandas(recs, schema=schema, preserve_index=False), pa.Table.from_pandas(
        truth, preserve_index=False
    )


def test_facts_are_read_once_per_plan_and_not_pickled() -> None:
    specs = tuple(parse_metrics(["ndcg@10", "precision@5", "ap", "rr@3"]))
    plan = driver.Plan(specs, 1.0, 1.0, "skip", "skip", "error")
    facts = plan.facts
    assert plan.facts is facts  # kept
    assert facts.max_k == 10 and facts.whole and not facts.need_ties
    assert facts.needs_truth == (True, True, True, True)
    assert plan.per_user == list(specs)
    again = pickle.loads(pickle.dumps(plan))
    assert "_facts" not in again.__dict__ and again == plan
    assert again.facts == facts


def test_workspace_buffers_are_reused_and_nested_claims_get_fresh_arrays() -> None:
    space = _workspace.Workspace()
    a = space.take("x", 10, np.int64)
    b = space.take("x", 8, np.int64)
    assert np.shares_memory(a, b) and len(b) == 8
    c = space.take("x", 100, np.int64)  # grown
    assert len(c) == 100 and not np.shares_memory(a, c)
    assert not np.shares_memory(space.take("x", 4, np.float64), c)  # one buffer per dtype
    _workspace.install()
    try:
        with _workspace.reusing():
            outer = _workspace.take("y", 5, np.int64)
            with _workspace.reusing():  # nested: allocates as usual
                inner = _workspace.take("y", 5, np.int64)
            assert not np.shares_memory(outer, inner)
            assert np.shares_memory(outer, _workspace.take("y", 5, np.int64))
        fresh = _workspace.take("y", 5, np.int64)  # not claimed: new
        assert not np.shares_memory(outer, fresh)
    finally:
        _workspace.uninstall()
    with _workspace.reusing():  # no workspace on this thread
        assert not np.shares_memory(_workspace.take("y", 5, np.int64), outer)


def _numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numpy_engine, "_native", None)
    monkeypatch.setattr(batch, "_native", None)
    monkeypatch.setattr(ids, "_native", None)


def _pair(recs: pa.Table, truth: pa.Table) -> Pair:
    r, t = read_recs(recs), read_truth(truth)
    return Pair(r, t, lambda i: i, lambda i: i, r.rows)


@pytest.mark.parametrize("native", [True, False])
def test_pairs_on_one_thread_with_a_workspace_equal_fresh_arrays(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pairs of different sizes one after the other on one thread: each part is
    that of an evaluation without the workspace (and of the NumPy path)."""
    if not native:
        _numpy_only(monkeypatch)
    plan = driver.Plan(tuple(parse_metrics(METRICS)), 3.0, 1.0, "skip", "skip", "error")
    sizes = [(1, 40), (2, 7), (3, 60), (4, 1)]
    fresh = [driver.evaluate_pair(plan, _pair(*_tables(s, u))) for s, u in sizes]
    _workspace.install()
    try:
        reused = [driver.evaluate_pair(plan, _pair(*_tables(s, u))) for s, u in sizes]
    finally:
        _workspace.uninstall()
    for a, b in zip(fresh, reused, strict=True):
        assert a.values is not None and b.values is not None
        for x, y in zip(a.values, b.values, strict=True):
            np.testing.assert_array_equal(x, y)
        assert a.counts == b.counts and a.evaluated == b.evaluated


@pytest.mark.parametrize("rank_type", [pa.int32(), pa.int64(), pa.int16()])
def test_int32_ranks_stay_int32_and_order_as_int64(
    rank_type: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    recs, truth = _tables(5, 30, rank_type)
    got = read_recs(recs).rank
    assert got is not None and got.dtype == (np.int32 if rank_type == pa.int32() else np.int64)
    whole = receval.evaluate(recs, truth, METRICS)
    wide = receval.evaluate(
        recs.cast(recs.schema.set(2, pa.field("rank", pa.int64()))), truth, METRICS
    )
    _same(whole, wide)
    shuffled = recs.take(np.random.default_rng(0).permutation(recs.num_rows))  # sorted again
    _same(whole, receval.evaluate(shuffled, truth, METRICS))
    _numpy_only(monkeypatch)
    _same(whole, receval.evaluate(shuffled, truth, METRICS))


def test_in_order_reads_int32_and_int64_ranks() -> None:
    native = numpy_engine._native
    if native is None:
        pytest.skip("the compiled module is not built")
    ru = np.array([0, 0, 0, 1, 1], dtype=np.int64)
    for dtype in (np.int32, np.int64):
        assert native.in_order(ru, np.array([1, 2, 5, 1, 2], dtype), None, None)
        assert not native.in_order(ru, np.array([1, 3, 2, 1, 2], dtype), None, None)
        assert not native.in_order(ru, np.array([1, 2, 2, 1, 2], dtype), None, None)
    for bad in (np.array([1, 2, 3, 1, 2], np.uint32), np.array([1.0, 2, 3, 1, 2])):
        with pytest.raises(ValueError, match="rank"):
            native.in_order(ru, bad, None, None)
    with pytest.raises(ValueError, match="every row"):
        native.in_order(ru, np.array([1, 2], np.int32), None, None)


def test_check_ranks_keeps_int32_and_refuses_bad_ones() -> None:
    users = items = np.arange(3)
    ok = np.array([1, 2, 3], np.int32)
    assert check_ranks(ok, users, items, "recs") is ok
    assert check_ranks(ok.astype(np.uint8), users, items, "recs").dtype == np.int64
    with pytest.raises(receval.ReceValError, match="positive integer"):
        check_ranks(np.array([1, 0, 2], np.int32), users, items, "recs")


def _grouped_lists(seed: int, form: str, by: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lists written user by user, the users in a shuffled order (each user's
    rows together and in list order), with ranks or with scores that tie."""
    rng = np.random.default_rng(seed)
    users = rng.permutation(300)
    n = rng.integers(1, 30, len(users))
    user = np.repeat(users, n)
    pos = np.concatenate([np.arange(1, k + 1) for k in n])
    item = rng.integers(0, 200, len(user))
    keep = ~pd.DataFrame({"u": user, "i": item}).duplicated().to_numpy()
    user, item, pos = user[keep], item[keep], pos[keep]
    recs = pd.DataFrame({"user": user, "item": item})
    if by == "rank":
        recs["rank"] = pos
    else:  # scores descending in each list, ties broken by item id ascending
        recs["score"] = (40 - pos) // 3
        recs = recs.sort_values(["user", "score", "item"], ascending=[True, False, True])
        order = {u: i for i, u in enumerate(users)}
        recs = recs.sort_values("user", key=lambda c: c.map(order), kind="stable")
    tu = rng.integers(0, 320, 3000)
    truth = pd.DataFrame({"user": tu, "item": rng.integers(0, 200, len(tu))}).drop_duplicates()
    truth["rating"] = rng.integers(1, 6, len(truth))
    if form != "int":
        for t in (recs, truth):
            for c in ("user", "item"):
                t[c] = t[c].map(lambda v: f"u{v}" if form == "text" else str(v))
    return recs.reset_index(drop=True), truth


@pytest.mark.parametrize("form", ["int", "digits", "text"])
@pytest.mark.parametrize("by", ["rank", "score"])
def test_lists_grouped_by_user_in_any_user_order(form: str, by: str) -> None:
    """Rows grouped by user but the users out of order take the grouped path
    (runs put in user order, codes from the runs' heads): the same numbers as
    the rows sorted by user, and as rows shuffled one by one."""
    recs, truth = _grouped_lists(7, form, by)
    metrics = ["ndcg@5,20", "ap@20", "rr", "precision@10"]
    got = receval.evaluate(recs, truth, metrics, threshold=3)
    sorted_recs = recs.sort_values("user", kind="stable").reset_index(drop=True)
    shuffled = recs.sample(frac=1, random_state=3).reset_index(drop=True)
    for other in (sorted_recs, shuffled):
        _same(got, receval.evaluate(other, truth, metrics, threshold=3))
    u = recs["user"].to_numpy()
    if form == "int":
        assert numpy_engine._grouped_runs(u) is not None  # the path is taken


# --- one walk along the users (issue #33 point 3, eighth session) -------------


def _walk_native() -> Any:
    native = numpy_engine._native
    if native is None or not hasattr(native, "user_walk"):
        pytest.skip("the compiled module (with user_walk) is not built")
    return native


def _sorted_users(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted user ids (negative ones too) and a rank per row, ascending with
    gaps within each user."""
    users = np.sort(rng.integers(-5, 40, n)).astype(np.int64)
    rank = np.ones(n, np.int64)
    if n:
        step = rng.integers(1, 4, n)
        start = np.r_[True, users[1:] != users[:-1]]
        run = np.cumsum(start) - 1
        total = np.cumsum(step)
        rank = total - (total - step)[np.flatnonzero(start)][run] + 1
    return users, rank


@pytest.mark.parametrize("seed", range(3))
def test_user_walk_gives_the_runs_and_the_list_order(seed: int) -> None:
    """The runs (values, starts) are those of ids.runs; the order flag is
    in_order()'s on the same rows; the order only checked writes nothing."""
    native = _walk_native()
    rng = np.random.default_rng(seed)
    for n in [0, 1, 2, *rng.integers(3, 300, 12).tolist()]:
        users, rank = _sorted_users(rng, n)
        if n > 2 and rng.random() < 0.4:  # a rank out of order within some user
            j = int(rng.integers(1, n))
            rank[j] = rank[j - 1] - int(rng.integers(0, 2))
        want = ids.runs(users)
        assert want is not None
        for dtype in (np.int32, np.int64):
            values, starts = np.empty(n, np.int64), np.empty(n, np.int64)
            count, ordered = native.user_walk(users, rank.astype(dtype), values, starts)
            assert count == len(want[0])
            assert values[:count].tolist() == want[0].tolist()
            assert starts[:count].tolist() == (np.cumsum(want[1]) - want[1]).tolist()
            assert ordered == (not n or native.in_order(users, rank.astype(dtype), None, None))
        assert native.user_walk(users, None, None, None) == (count, False)
    down = np.array([3, 2], np.int64)
    assert native.user_walk(down, np.array([1, 1], np.int32), None, None) == (-1, False)
    users, rank = _sorted_users(rng, 50)
    for bad in (rank.astype(np.float64), rank.astype(np.uint32), rank[:3]):
        with pytest.raises(ValueError, match="rank"):
            native.user_walk(users, bad, None, None)
    with pytest.raises(ValueError, match="both outputs"):
        native.user_walk(users, None, np.empty(50, np.int64), None)
    short = np.empty(1, np.int64), np.empty(1, np.int64)
    assert native.user_walk(users, rank, *short) == (-2, False)  # more runs than room
    for n in (0, 1, 100, 1000):  # lists of one row: more runs than the first room
        single = np.arange(n, dtype=np.int64) * 3
        walked = numpy_engine.walk_users(single, np.ones(n, np.int32))
        assert walked is not None and walked.in_order
        assert walked.values.tolist() == single.tolist()
        assert walked.starts.tolist() == list(range(n))
    assert numpy_engine.walk_users(single[::-1].copy(), None) is None  # not sorted


@pytest.mark.parametrize("seed", range(4))
def test_user_walk_of_long_lists_in_blocks(seed: int) -> None:
    """Lists of up to 200 rows, walked sixteen rows at a time where a block
    holds one user (the compiled walk's fast path): the runs and the order
    flag are those of the row-by-row reading, with a rank out of order, or a
    user id going down, anywhere in a block."""
    native = _walk_native()
    rng = np.random.default_rng(100 + seed)
    lengths = rng.integers(1, 200, 60)
    users = np.repeat(np.cumsum(rng.integers(1, 5, 60)), lengths).astype(np.int64)
    n = len(users)
    start = np.r_[True, users[1:] != users[:-1]]
    rank = (np.arange(n) - np.flatnonzero(start)[np.cumsum(start) - 1] + 1).astype(np.int32)
    want = ids.runs(users)
    assert want is not None
    for case in range(6):
        r = rank.copy()
        if case:  # one rank not above the one before, at a random row
            j = int(rng.integers(1, n))
            r[j] = r[j - 1] - int(rng.integers(0, 2))
        inside = bool(np.all(np.where(start[1:], True, r[1:] > r[:-1])))
        for dtype in (np.int32, np.int64):
            values, starts = np.empty(n, np.int64), np.empty(n, np.int64)
            count, ordered = native.user_walk(users, r.astype(dtype), values, starts)
            assert count == len(want[0]) and ordered == inside
            assert values[:count].tolist() == want[0].tolist()
            assert starts[:count].tolist() == (np.cumsum(want[1]) - want[1]).tolist()
            assert native.user_walk(users, r.astype(dtype), None, None) == (count, inside)
        assert native.user_walk(users, None, None, None) == (count, False)
    for _ in range(6):  # an id going down, inside a long run or at its end
        down = users.copy()
        j = int(rng.integers(1, n))
        down[j] = down[j - 1] - 1
        outs = np.empty(n, np.int64), np.empty(n, np.int64)
        assert native.user_walk(down, rank, *outs)[0] == -1
        assert native.user_walk(down, None, None, None) == (-1, False)


def test_spread_writes_each_runs_value_along_its_rows() -> None:
    native = _walk_native()
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 9, 40)
    values = rng.integers(0, 1000, 40).astype(np.int64)
    starts = (np.cumsum(lengths) - lengths).astype(np.int64)
    out = np.full(int(lengths.sum()), -1, np.int64)
    native.spread(values, starts, out)
    assert out.tolist() == np.repeat(values, lengths).tolist()
    native.spread(values[:0], starts[:0], out[:0])
    for bad in (starts + 1, starts[::-1].copy(), np.r_[starts[:-1], len(out) + 1]):
        with pytest.raises(ValueError, match="starts"):
            native.spread(values, bad, out)


def test_join_with_the_offsets_given_equals_the_join_finding_them() -> None:
    native = _walk_native()
    rng = np.random.default_rng(11)
    users = 30
    ru = np.sort(rng.integers(0, users, 600)).astype(np.int64)
    ri = np.concatenate([rng.permutation(500)[:k] for k in np.bincount(ru, minlength=users)])
    tu = rng.integers(0, users, 200).astype(np.int64)
    ti = np.concatenate([rng.permutation(500)[:k] for k in np.bincount(tu, minlength=users)])
    tu = np.sort(tu)
    tg = rng.integers(0, 4, len(tu)).astype(np.float64)
    args = (ru, ri.astype(np.int64), tu, ti.astype(np.int64), tg, users, 1.0)
    found = [np.empty(len(ru)), np.empty(len(ru)), np.empty(users + 1, np.int64)]
    assert native.join(*args, *found) == 0
    given = [np.empty(len(ru)), np.empty(len(ru)), numpy_engine.user_offsets(ru, users)]
    assert native.join(*args, *given, None, None, None, True) == 0
    for a, b in zip(found, given, strict=True):
        assert a.tobytes() == b.tobytes()
    wrong = [np.empty(len(ru)), np.empty(len(ru)), given[2].copy()]
    wrong[2][-1] -= 1  # the last offset is not the number of rows
    assert native.join(*args, *wrong, None, None, None, True) == 4
    wrong[2] = given[2].copy()
    wrong[2][[3, 4]] = wrong[2][[4, 3]] + np.array([1, -1])  # not ascending
    if wrong[2][3] > wrong[2][4]:
        assert native.join(*args, *wrong, None, None, None, True) == 3


class _Older:
    """The compiled module as built before ``user_walk`` and ``spread`` (its
    join takes no ``offsets_given``)."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def __getattr__(self, name: str) -> Any:
        if name in ("user_walk", "spread"):
            raise AttributeError(name)
        if name == "join":

            def join(*args: Any) -> Any:
                assert len(args) <= 13, "an older join takes no offsets_given"
                return self._native.join(*args)

            return join
        return getattr(self._native, name)


def _walk_cases() -> list[tuple[str, pa.Table, pa.Table, dict[str, Any]]]:
    recs, truth = _tables(21, 50)
    rank = recs.column("rank").to_numpy().copy()
    swapped = rank.copy()
    swapped[[3, 4]] = swapped[[4, 3]]  # one list out of rank order: sorted by the engine
    scored = recs.drop_columns(["rank"]).append_column(
        "score", pa.array(1.0 / rank + np.random.default_rng(2).random(len(rank)) * 0.01)
    )
    user, item = recs.column("user").to_numpy(), recs.column("item").to_numpy().copy()
    j = int(np.flatnonzero(user[1:] == user[:-1])[0])
    item[j + 1] = item[j]  # an item twice in a list: the sorting path
    doubled = recs.set_column(1, "item", pa.array(item))
    return [
        ("in order", recs, truth, {}),
        (
            "a list out of order",
            recs.set_column(2, "rank", pa.array(swapped, pa.int32())),
            truth,
            {},
        ),
        ("scores", scored, truth, {}),
        ("depth", recs, truth, {"depth": 7}),
        ("repeated rows", doubled, truth, {"duplicates": "keep"}),
    ]


@pytest.mark.parametrize("case", range(5))
def test_the_walk_equals_an_older_module_and_the_numpy_path(
    case: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evaluations with the one walk along the users, with a module built
    before it (the separate passes), and on the NumPy path: the same result."""
    native = _walk_native()
    name, recs, truth, options = _walk_cases()[case]
    called: list[tuple[str, int]] = []

    class Counted:
        def __getattr__(self, attr: str) -> Any:
            f = getattr(native, attr)
            return lambda *a: called.append((attr, len(a))) or f(*a)

    with monkeypatch.context() as m:
        m.setattr(numpy_engine, "_native", Counted())
        walked = receval.evaluate(recs, truth, METRICS, **options)
    names = [c for c, _ in called]
    assert "user_walk" in names
    if name == "in order":  # no separate order check, codes walk or list offsets
        assert "in_order" not in names and ("join", 14) in called and "codes" in names
    with monkeypatch.context() as m:
        for module in (numpy_engine, ids):
            m.setattr(module, "_native", _Older(native))
        _same(walked, receval.evaluate(recs, truth, METRICS, **options))
    _numpy_only(monkeypatch)
    _same(walked, receval.evaluate(recs, truth, METRICS, **options))


def _rechunked(table: pa.Table, size: int) -> pa.Table:
    """The table in chunks of ``size`` rows, each in buffers of its own (as
    ``pyarrow.parquet`` reads row groups), not slices of one buffer."""
    pieces = [
        pa.Table.from_pylist(table.slice(i, size).to_pylist(), schema=table.schema)
        for i in range(0, len(table), size)
    ]
    return pa.concat_tables(pieces)


@pytest.mark.parametrize("threads", [1, 2])
def test_pairs_cut_across_chunks_read_into_reused_buffers_equal_one_chunk(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tables whose chunks sit in separate buffers, cut into many pairs that
    span chunks: each pair's columns are joined into the thread's reused
    buffers (:func:`receval.ids.one_chunk`), and every user's values, the
    means and the counts are those of the same tables in one chunk."""
    from receval.io import stream

    recs, truth = _tables(11, 300)
    whole = receval.evaluate(recs.combine_chunks(), truth.combine_chunks(), METRICS)
    chunked_recs, chunked_truth = _rechunked(recs, 97), _rechunked(truth, 13)
    items = chunked_recs.column("item").chunks
    assert len(items) > 10 and len({c.buffers()[1].address for c in items}) == len(items)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 400)  # pairs of a few hundred rows
    monkeypatch.setattr(driver, "THREADS", threads)
    _same(receval.evaluate(chunked_recs, chunked_truth, METRICS), whole)


def test_one_chunk_joins_into_the_claimed_buffers() -> None:
    col = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())])
    table = pa.table({"user": col, "name": pa.chunked_array([["a", "b"], ["c"]])})
    assert ids.one_chunk(table, "x").column("user").chunk(0).buffers()[1].address not in (
        c.buffers()[1].address for c in col.chunks
    )
    _workspace.install()
    try:
        with _workspace.reusing():
            first = ids.one_chunk(table, "x")
            address = first.column("user").chunk(0).buffers()[1].address
            assert first.column("name").num_chunks == 2  # text: left as it is
        with _workspace.reusing():  # the thread's next pair: the same buffer
            again = ids.one_chunk(table.slice(1), "x")
            assert again.column("user").chunk(0).buffers()[1].address == address
            assert again.column("user").to_pylist() == [2, 3]
    finally:
        _workspace.uninstall()
    assert first.column("user").to_pylist() == [2, 3, 3]  # overwritten: one pair at a time
    nulls = pa.table({"user": pa.chunked_array([[1, None], [3]])})
    assert ids.one_chunk(nulls, "x").column("user").num_chunks == 2


def test_blocks_are_large_from_the_start_once_a_plan_saw_sparse_metrics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first block of the first pair is small (a probe: does a metric read
    a dense matrix?); once it showed none, the plan's later pairs start with
    large blocks. The values are those of small blocks throughout."""
    blocks: list[int] = []
    real = numpy_engine._batch

    def counted(*args: Any) -> Any:
        blocks.append(args[-1] - args[-2])  # u1 - u0
        return real(*args)

    plan = driver.Plan(tuple(parse_metrics(METRICS)), 3.0, 1.0, "skip", "skip", "error")
    small = driver.Plan(tuple(parse_metrics(METRICS)), 3.0, 1.0, "skip", "skip", "error")
    monkeypatch.setattr(numpy_engine, "_batch", counted)
    monkeypatch.setattr(numpy_engine, "BLOCK_CELLS", 600)  # 10 users a block at width 60
    monkeypatch.setattr(numpy_engine, "SPARSE_BLOCK_USERS", 1000)
    first = driver.evaluate_pair(plan, _pair(*_tables(1, 80)))
    assert blocks[0] < 80 and len(blocks) == 2  # the probe, then the rest at once
    blocks.clear()
    second = driver.evaluate_pair(plan, _pair(*_tables(2, 80)))
    assert blocks == [80]  # one block: the plan knows its metrics are sparse
    monkeypatch.setattr(numpy_engine, "SPARSE_BLOCK_USERS", 1)  # every block small
    for got, seed in ((first, 1), (second, 2)):
        want = driver.evaluate_pair(small, _pair(*_tables(seed, 80)))
        assert got.values is not None and want.values is not None
        for x, y in zip(got.values, want.values, strict=True):
            np.testing.assert_array_equal(x, y)
