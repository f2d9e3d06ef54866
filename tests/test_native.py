"""The compiled join (receval._native) gives what the NumPy path gives, bit for bit.

Every evaluation below runs twice: with the compiled pass and with it
switched off (the sorting path of numpy_engine.prepare). Per-user values,
means, counts, notes — or the error raised — must be identical. Inputs with
an item twice in a list or in the truth always go the NumPy way; that is
checked too.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval import ids
from receval.engines import numpy_engine
from receval.metrics.kernels import batch
from tests.required import REQUIRE_NATIVE, need
from tests.test_reference_agreement import frames, scenarios
from tests.test_stream import _same

native = numpy_engine._native
_NOT_BUILT = "not built (gcc and Python's headers build it at install)"


@pytest.fixture(scope="module")
def _native() -> None:
    need("receval._native", REQUIRE_NATIVE, native is not None, _NOT_BUILT)


needs_native = pytest.mark.usefixtures("_native")


def test_native_is_built_where_required() -> None:
    """CI sets RECEVAL_REQUIRE_NATIVE=1: the extension must have compiled there."""
    if os.environ.get("RECEVAL_REQUIRE_NATIVE") == "1":
        assert numpy_engine.native_available()


def _outcome(on: bool, fn: Any) -> Any:
    with pytest.MonkeyPatch.context() as m:
        if not on:
            m.setattr(numpy_engine, "_native", None)
            m.setattr(batch, "_native", None)
            m.setattr(ids, "_native", None)
        try:
            return fn()
        except receval.ReceValError as exc:
            return exc


def _both(fn: Any) -> Any:
    a = _outcome(True, fn)
    b = _outcome(False, fn)
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
    else:
        _same(a, b)
    return a


@needs_native
@settings(max_examples=100, deadline=None)
@given(s=scenarios(), keep=st.booleans())
def test_random_scenarios_equal_the_numpy_path(s: dict[str, Any], keep: bool) -> None:
    recs, truth = frames(s)
    kwargs = {
        "threshold": s["threshold"],
        "empty_truth": s["empty_truth"],
        "missing_recs": s["missing_recs"],
        "no_truth": s["no_truth"],
        "ties": s["ties"],
        "relevant_from": s["relevant_from"],
        "duplicates": "keep" if keep else "error",
    }
    metrics = [*s["metrics"], "ndcg@3[grades=positive]"]
    _both(lambda: receval.evaluate(recs, truth, metrics, **kwargs))


def _random_tables(seed: int, n_users: int, span: int, dup: str | None) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    parts, truth = [], []
    for u in range(n_users):
        n = int(rng.integers(0, 150))
        items = rng.choice(span, size=min(n, span), replace=False) - span // 3
        parts.append(pd.DataFrame({"user": u, "item": items, "rank": np.arange(1, len(items) + 1)}))
        r = int(rng.integers(0, 40))
        t_items = np.concatenate(
            [rng.choice(items, size=min(r // 2, len(items)), replace=False), rng.choice(span, r)]
        )
        t_items = np.unique(t_items)
        truth.append(
            pd.DataFrame(
                {"user": u + 3, "item": t_items, "relevance": rng.integers(0, 5, len(t_items))}
            )
        )
    recs = pd.concat(parts, ignore_index=True)
    tr = pd.concat(truth, ignore_index=True)
    if dup == "recs":
        row = recs.iloc[[len(recs) // 2]].assign(rank=10_000)
        recs = pd.concat([recs, row], ignore_index=True)
    elif dup == "truth":
        tr = pd.concat([tr, tr.iloc[[len(tr) // 3]].assign(relevance=4)], ignore_index=True)
    return recs, tr.sample(frac=1.0, random_state=seed).reset_index(drop=True)


METRICS = ["precision@10,100", "recall@10", "ndcg@5,50", "ap@100", "rr", "hit_rate@1", "auc"]


@needs_native
@pytest.mark.parametrize("span", [60, 1000, 10**12])
@pytest.mark.parametrize("dup", [None, "recs", "truth"])
@pytest.mark.parametrize("duplicates", ["error", "keep"])
def test_long_lists_and_wide_item_ids(span: int, dup: str | None, duplicates: str) -> None:
    """Lists of up to 150 items (collisions in the per-user tables), item ids
    dense, sparse or beyond 32 bits (then encoded), truth shuffled; a
    duplicate in either table."""
    if span == 10**12:  # rng.choice would allocate the span: draw ids and dedupe
        recs, truth = _random_tables(1, 60, 500, dup)
        recs["item"] = recs["item"] * 1_999_999_973
        truth["item"] = truth["item"] * 1_999_999_973
    else:
        recs, truth = _random_tables(span, 60, span, dup)
    got = _both(
        lambda: receval.evaluate(recs, truth, METRICS, duplicates=duplicates),
    )
    if dup is not None and duplicates == "error":
        assert isinstance(got, receval.ReceValError) and "twice" in str(got)
    else:
        assert not isinstance(got, Exception)


@needs_native
def test_explicit_feedback_and_chunked_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    recs, truth = _random_tables(7, 200, 300, None)
    rng = np.random.default_rng(3)
    ratings = recs.drop(columns="rank").assign(
        actual=rng.integers(0, 6, len(recs)), predicted=rng.random(len(recs)) * 5
    )
    _both(
        lambda: receval.evaluate_explicit(
            ratings, ["precision@5[denominator=recommended]", "ndcg@10", "recall@10"], threshold=3
        ),
    )
    from receval.io import stream, tables

    monkeypatch.setattr(tables, "CHUNK_ROWS", 500)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 500)  # tables merged by user
    _both(lambda: receval.evaluate(recs, truth, METRICS))


@needs_native
def test_status_codes_and_bad_arrays() -> None:
    def run(ru: list[int], ri: list[int], tu: list[int], ti: list[int], users: int) -> int:
        n, m = len(ru), len(tu)
        out = (np.empty(n), np.empty(n), np.empty(users + 1, np.int64))
        a = [np.asarray(x, dtype=np.int64) for x in (ru, ri, tu, ti)]
        return native.join(*a, np.ones(m), users, 1.0, *out)

    assert run([0, 0, 1], [5, 6, 5], [1, 0], [5, 6], 2) == 0
    assert run([0, 0, 1], [5, 5, 5], [1], [5], 2) == 1  # an item twice in a list
    assert run([0, 1], [5, 5], [1, 1], [7, 7], 2) == 2  # twice in a user's truth
    assert run([1, 0], [5, 5], [], [], 2) == 3  # list rows not grouped by ascending user
    assert run([0, 2], [5, 5], [], [], 2) == 4  # a user code out of range
    assert run([0], [5], [-1], [5], 2) == 4
    with pytest.raises(ValueError, match="lengths"):
        run([0, 0], [5], [], [], 1)
    with pytest.raises(ValueError, match="8-byte"):
        native.join(
            np.zeros(1, np.int32), *[np.zeros(1, np.int64)] * 3, np.ones(1), 1, 1.0,
            np.empty(1), np.empty(1), np.empty(2, np.int64),
        )  # fmt: skip


@needs_native
def test_grades_gains_and_offsets() -> None:
    ru = np.array([0, 0, 0, 2, 2], np.int64)
    ri = np.array([9, 4, 7, 4, 1], np.int64)
    tu = np.array([2, 0, 0, 1], np.int64)
    ti = np.array([1, 7, 4, 3], np.int64)
    tg = np.array([3.0, 0.5, 2.0, 1.0])
    grade, gain, off = np.empty(5), np.empty(5), np.empty(4, np.int64)
    assert native.join(ru, ri, tu, ti, tg, 3, 1.0, grade, gain, off) == 0
    assert grade.tolist() == [0.0, 2.0, 0.5, 0.0, 3.0]
    assert gain.tolist() == [0.0, 2.0, 0.0, 0.0, 3.0]  # 0.5 is below the threshold
    assert off.tolist() == [0, 3, 3, 5]
    gain2 = np.empty(5)
    assert native.join(ru, ri, tu, ti, tg, 3, 1.0, None, gain2, off) == 0  # no grades asked
    assert np.array_equal(gain2, gain)


@needs_native
@pytest.mark.parametrize("seed", range(8))
def test_ideal_grades_sorted_per_user(seed: int) -> None:
    """Users with 0 to ~3,000 grades (sorting networks and insertion up to 16,
    Shell sort above; whole grades 1..64 counted), their rows in user order
    (one pass) or not (a counting sort first)."""
    rng = np.random.default_rng(seed)
    users = int(rng.integers(1, 40))
    m = int(rng.integers(0, 6000))
    tu = rng.integers(0, users, m).astype(np.int64)
    if seed % 4 >= 2:
        tu.sort()  # the usual truth, grouped by user
    levels = [0.0, 0.5, 1.0, 2.0, 3.0, 4.5, 5.0] if seed % 4 == 1 else [1.0, 2.0, 5.0, 64.0, 65.0]
    grades = rng.choice(levels, m) if seed % 2 else rng.random(m) * 9
    if seed == 6:
        grades = rng.integers(1, 6, m).astype(np.float64)  # stars: all counted
    out, off = np.empty(m), np.empty(users + 1, np.int64)
    count = native.ideal(tu, grades, users, 1.0, out, off)
    assert count == off[-1] == int((grades >= 1.0).sum())
    for u in range(users):
        want = -np.sort(-grades[(tu == u) & (grades >= 1.0)])
        assert np.array_equal(out[off[u] : off[u + 1]], want)


@needs_native
@pytest.mark.parametrize("tu", [[0, 1, 3], [0, -1, 1], [2, 1, 3]])
def test_ideal_refuses_a_user_code_out_of_range(tu: list[int]) -> None:
    grades = np.ones(3)
    out, off = np.empty(3), np.empty(4, np.int64)
    with pytest.raises(ValueError, match="out of range"):
        native.ideal(np.array(tu, np.int64), grades, 3, 1.0, out, off)


@needs_native
def test_fill_blocks_and_bad_offsets() -> None:
    off = np.array([0, 3, 3, 4], np.int64)
    values = np.array([1.0, 2.0, 3.0, 4.0])
    out = np.full((2, 3), -1.0)  # (width, users) as numpy_engine lays it out
    native.fill(off, 0, 3, values, 2, out.reshape(-1))
    assert out.T.tolist() == [[1.0, 2.0], [-1.0, -1.0], [4.0, -1.0]]  # cut at width 2
    with pytest.raises(ValueError, match="ascending"):
        native.fill(np.array([0, 3, 1, 4], np.int64), 0, 3, values, 2, out.reshape(-1))
    with pytest.raises(ValueError, match="match"):
        native.fill(off, 0, 3, values, 3, out.reshape(-1))
    with pytest.raises(ValueError, match="match"):
        native.fill(off, 0, 4, values, 2, out.reshape(-1))


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 30), max_size=25),
    width=st.integers(1, 35),
    density=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    seed=st.integers(0, 2**32 - 1),
    on=st.booleans(),
)
def test_cell_sources_equal_a_plain_scan(
    lengths: list[int], width: int, density: float, seed: int, on: bool
) -> None:
    """The relevant cells of each user's first `width` rows, compiled or NumPy."""
    if on:
        need("receval._native", REQUIRE_NATIVE, native is not None, _NOT_BUILT)
    rng = np.random.default_rng(seed)
    off = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    values = np.where(rng.random(int(off[-1])) < density, rng.random(int(off[-1])) + 0.5, 0.0)
    with pytest.MonkeyPatch.context() as m:
        if not on:
            m.setattr(numpy_engine, "_native", None)
        src = numpy_engine._CellSource(off, values, width)
    want = [
        (u, p, values[off[u] + p])
        for u in range(len(lengths))
        for p in range(min(lengths[u], width))
        if values[off[u] + p] != 0
    ]
    got = list(zip(src.user.tolist(), src.pos.tolist(), src.value.tolist(), strict=True))
    assert got == [(u, p, float(v)) for u, p, v in want]
    counts = np.bincount([u for u, _, _ in want], minlength=len(lengths))
    assert src.offsets.tolist() == [0, *np.cumsum(counts).tolist()]
    for u0, u1 in [(0, len(lengths)), (len(lengths) // 2, len(lengths))]:
        block = src.block(u0, u1)
        assert block.rows == u1 - u0 and block.width == width
        assert block.offsets[0] == 0 and block.offsets[-1] == len(block.user)
        assert np.array_equal(block.user + u0, src.user[src.offsets[u0] : src.offsets[u1]])


@needs_native
def test_cells_bad_arrays() -> None:
    off = np.array([0, 2, 5], np.int64)
    values = np.array([1.0, 0.0, 0.0, 2.0, 3.0])
    out = [np.empty(4, np.int64), np.empty(4, np.int64), np.empty(4), np.empty(3, np.int64)]
    assert native.cells(off, values, 2, *out) == 2  # cut at width 2: (0, 0, 1.0), (1, 1, 2.0)
    assert out[0][:2].tolist() == [0, 1] and out[1][:2].tolist() == [0, 1]
    assert out[2][:2].tolist() == [1.0, 2.0] and out[3].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="too short"):
        native.cells(off, values, 3, *out)  # 2 + 3 rows to scan, room for 4
    with pytest.raises(ValueError, match="ascending"):
        native.cells(np.array([0, 3, 2], np.int64), values, 2, *out)
    with pytest.raises(ValueError, match="match"):
        native.cells(np.array([0, 2, 9], np.int64), values, 2, *out)
    with pytest.raises(ValueError, match="8-byte"):
        native.cells(off, values.astype(np.float32), 2, *out)


@needs_native
@pytest.mark.parametrize("seed", range(4))
def test_item_group_tallies_equal_the_numpy_path(seed: int) -> None:
    """rsp, reo, exposure and Result.item_groups count the same integers with
    the compiled tally and without it (items in 0, 1 or several groups)."""
    from tests.test_blocks import workload

    recs, truth, extra = workload(seed)
    metrics = ["rsp@5", "reo@10", "exposure@3[group=g1]", "awrf@5", "ndcg@20", "coverage@10"]
    on = receval.evaluate(recs, truth, metrics, **extra)
    with pytest.MonkeyPatch.context() as m:
        m.setattr("receval.engines.driver._native", None)
        off = receval.evaluate(recs, truth, metrics, **extra)
    assert on.summary == off.summary or all(
        _same(on.summary[k], off.summary[k]) for k in on.summary
    )
    pd.testing.assert_frame_equal(on.item_groups, off.item_groups, check_exact=True)


@needs_native
def test_group_tally_bad_arrays() -> None:
    z = np.zeros(3, dtype=np.int64)
    one = np.ones(1, np.uint8)
    with pytest.raises(ValueError, match="lengths do not match"):
        native.group_tally(
            z, np.array([0, 3]), one, z[:2], None, np.zeros(2, np.int32), 1, 2, 1, z, None, z
        )

    def tally(idx: int, table: list[int]) -> int:
        return native.group_tally(
            np.array([idx]),
            np.array([0, 1]),
            one,
            None,
            None,
            np.array(table, np.int32),
            1,
            1,
            1,
            np.zeros(2, np.int64),
            None,
            np.zeros(1, np.int64),
        )

    assert tally(5, [0]) == 4  # an item index past the table
    assert tally(0, [3]) == 4  # a group number past n_groups (+ the padding row)
    assert tally(0, [-1]) == 4
    assert tally(0, [0]) == 0


@needs_native
def test_item_group_tallies_with_rank_positions() -> None:
    """rank="position": the compiled tally reads each row's rank, gaps included."""
    rng = np.random.default_rng(3)
    rows = [
        (u, int(i), int(r))
        for u in range(40)
        for r, i in zip(
            np.sort(rng.choice(30, 8, replace=False)) + 1,
            rng.choice(25, 8, replace=False),
            strict=True,
        )
    ]
    recs = pd.DataFrame(rows, columns=["user", "item", "rank"])
    truth = pd.DataFrame({"user": rng.integers(0, 40, 120), "item": rng.integers(0, 25, 120)})
    truth = truth.drop_duplicates()
    groups = {i: ["a", "b", "c"][: 1 + i % 3] for i in range(0, 25, 2)}
    metrics = ["rsp@10[exclude_train=false]", "reo@10", "exposure@10[group=b]", "ndcg@10"]
    kw = {"rank": "position", "item_groups": groups}
    on = receval.evaluate(recs, truth, metrics, **kw)
    with pytest.MonkeyPatch.context() as m:
        m.setattr("receval.engines.driver._native", None)
        off = receval.evaluate(recs, truth, metrics, **kw)
    assert on.summary == off.summary
    pd.testing.assert_frame_equal(on.item_groups, off.item_groups, check_exact=True)
    assert on.counts["lists_with_rank_gaps"] > 0


@needs_native
@pytest.mark.parametrize("bitgen", ["PCG64", "MT19937", "Philox", "SFC64"])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 65_537])
def test_bootstrap_counts_equal_numpys_draws(bitgen: str, n: int) -> None:
    """The compiled bootstrap counts are NumPy's ``integers(0, n, size=(m, n))``
    counted per row, from any bit generator, and leave the generator where NumPy's
    draws leave it (n = 1: NumPy draws nothing)."""
    from receval.analysis import stats

    m = 4
    theirs = np.random.Generator(getattr(np.random, bitgen)(11))
    mine = np.random.Generator(getattr(np.random, bitgen)(11))
    idx = theirs.integers(0, n, size=(m, n))
    want = np.array([np.bincount(row, minlength=n) for row in idx], dtype=np.float64)
    got = stats._boot_counts(mine, n, m)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert theirs.integers(0, 2**62, size=3).tolist() == mine.integers(0, 2**62, size=3).tolist()


def test_bootstrap_means_with_and_without_the_compiled_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bootstrap_means`` (every bootstrap interval of ``compare``) gives the same bits
    with the compiled counts and with NumPy's, over several blocks."""
    from receval.analysis import stats

    x = np.random.default_rng(3).random((3001, 3))
    on = stats.bootstrap_means(x, 2800, np.random.default_rng(5))  # blocks of ~1398 rows
    monkeypatch.setattr(stats, "NATIVE", None)
    off = stats.bootstrap_means(x, 2800, np.random.default_rng(5))
    assert np.array_equal(on, off)


@needs_native
def test_bootstrap_counts_bad_arguments() -> None:
    out = np.empty(6)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="whole rows of n"):
        native.boot_counts(rng.bit_generator.capsule, 4, out)
    with pytest.raises(ValueError, match=r"n must be in \[1, 2\*\*31 - 1\]"):
        native.boot_counts(rng.bit_generator.capsule, 0, out)
    with pytest.raises(ValueError):  # not a bit generator's capsule
        native.boot_counts(object(), 3, out)


@needs_native
@pytest.mark.parametrize("seed", range(6))
def test_cell_row_sums_and_counts_below_k_equal_bincount(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Cells.row_sums`` and ``counts`` at k below the width, from the compiled
    pass, are np.bincount's over the masked cells bit for bit: rows empty or
    long, positions in order or not, terms with NaN, infinities and -0.0."""
    rng = np.random.default_rng(seed)
    m, width = int(rng.integers(1, 50)), int(rng.integers(2, 120))
    lengths = np.minimum(rng.integers(0, 40, m), width)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    n = int(offsets[-1])
    user = np.repeat(np.arange(m), lengths).astype(np.int64)
    pos = rng.integers(0, width, n).astype(np.int64)
    if seed % 2:  # the usual cells: each row's positions ascending
        pos = np.concatenate([np.sort(rng.choice(width, k, replace=False)) for k in lengths])
        pos = pos.astype(np.int64)
    terms = rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, n)
    special = rng.random(n)
    terms[special < 0.02] = np.nan
    terms[(special >= 0.02) & (special < 0.04)] = np.inf
    terms[(special >= 0.04) & (special < 0.08)] = -0.0
    cells = batch.Cells(user, pos, np.abs(terms) + 1.0, offsets, width)
    for k in {1, width // 2, width - 1}:
        sums, counts = cells.row_sums(terms, k), cells.counts(k)
        mask = pos < k
        want = np.bincount(user[mask], weights=terms[mask], minlength=m)
        assert np.array_equal(sums.view(np.int64), want.view(np.int64))  # bits, NaN included
        assert np.array_equal(counts, np.bincount(user[mask], minlength=m))
    k = width // 2
    compiled = cells.row_sums(terms, k)
    monkeypatch.setattr(batch, "_native", None)  # the NumPy path: the same bits
    fresh = batch.Cells(user, pos, np.abs(terms) + 1.0, offsets, width)
    assert np.array_equal(fresh.row_sums(terms, k).view(np.int64), compiled.view(np.int64))


@needs_native
def test_row_sums_refuses_offsets_that_do_not_describe_the_cells() -> None:
    pos, terms = np.array([0, 1, 2], np.int64), np.ones(3)
    out = np.empty(2)
    assert native.row_sums(np.array([0, 2, 3], np.int64), pos, terms, 2, out) == 0
    assert out.tolist() == [2.0, 0.0]
    for off in ([0, 2, 4], [1, 2, 3], [0, 3, 2]):
        assert native.row_sums(np.array(off, np.int64), pos, terms, 2, out) == -1
    with pytest.raises(ValueError, match="match"):
        native.row_sums(np.array([0, 3], np.int64), pos, terms, 2, out)
