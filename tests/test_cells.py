"""Batches hold the relevant items as sparse cells; sums over them equal the
dense running sums bit for bit, and the common metrics never build a dense matrix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from receval.metrics.kernels.batch import Batch, Cells, cumsum_rows
from receval.metrics.spec import parse_metrics


@st.composite
def sparse_matrices(draw: st.DrawFn) -> np.ndarray:
    """(m, w) float64 with ~density nonzeros of magnitudes far apart (any
    change in the order of additions shows in the bits)."""
    m = draw(st.integers(0, 40))
    w = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    x = rng.random((m, w)) * 10.0 ** rng.integers(-8, 8, (m, w))
    x[rng.random((m, w)) >= density] = 0.0
    return np.asfortranarray(x) if draw(st.booleans()) else x


@settings(max_examples=200, deadline=None)
@given(x=sparse_matrices(), k=st.one_of(st.none(), st.integers(1, 40)))
def test_cells_are_the_dense_matrix_and_sum_like_a_running_sum(
    x: np.ndarray, k: int | None
) -> None:
    c = Cells.from_dense(x)
    m, w = x.shape
    assert c.rows == m and c.width == w
    assert np.array_equal(c.dense(), x) and c.dense().flags.f_contiguous
    col = w - 1 if k is None else min(k, w) - 1
    running = cumsum_rows(np.asfortranarray(x))
    if m:
        assert np.array_equal(c.row_sums(c.value, k), running[:, col])  # bit for bit
        assert np.array_equal(c.counts(k), (x != 0)[:, : col + 1].sum(axis=1))
    first = np.array([row[row != 0][0] if (row != 0).any() else 0.0 for row in x])
    assert np.array_equal(c.first(), first.reshape(m))


def _batch(x: np.ndarray, r: np.ndarray | None = None) -> Batch:
    m = x.shape[0]
    ideal = -np.sort(-x, axis=1)
    n_rel = (x != 0).sum(axis=1) if r is None else r
    return Batch(
        Cells.from_dense(x), Cells.from_dense(ideal), n=np.full(m, x.shape[1]), n_relevant=n_rel
    )


@settings(max_examples=150, deadline=None)
@given(x=sparse_matrices(), s_seed=st.integers(0, 2**32 - 1))
def test_hit_positions_and_ranks(x: np.ndarray, s_seed: int) -> None:
    b = _batch(x)
    m, w = x.shape
    rel = x != 0
    cum = np.cumsum(rel, axis=1)
    for k in (None, 1, w // 2 + 1, w, w + 3):
        col = w - 1 if k is None else min(k, w) - 1
        assert np.array_equal(b.hits_at(k), cum[:, col])
    s = np.random.default_rng(s_seed).integers(-2, w + 3, m)
    want = np.array([rel[u, : max(0, s[u])].sum() for u in range(m)], dtype=np.int64)
    assert np.array_equal(b.hits_at_each(s), want.reshape(m))
    assert np.array_equal(b.hit_rank(), cum[rel])  # hits@i at each relevant cell, row-major
    first = np.where(rel.any(axis=1), rel.argmax(axis=1) + 1, 0)
    assert np.array_equal(b.first_hit(), first)


def test_example_batch() -> None:
    x = np.array([[0.0, 3.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [2.0, 0.0, 2.0, 0.0]])
    b = _batch(x)
    assert b.hits_at(2).tolist() == [1, 0, 1]
    assert b.hit_rank().tolist() == [1, 2, 1, 2]
    assert b.first_hit().tolist() == [2, 0, 1]
    assert b.ideal_cells.first().tolist() == [3.0, 0.0, 2.0]
    assert b.ideal.tolist() == [[3.0, 1.0, 0.0, 0.0], [0.0] * 4, [2.0, 2.0, 0.0, 0.0]]


SPARSE = [
    "precision@3,10",
    "recall@3,10",
    "ndcg@3,10",
    "ap@3,10",
    "rr@3,10",
    "hit_rate@3,10",
    "f1@3",
    "r_precision",
    "dcg@3[gain=exp]",
    "ndcg@3[ideal=k]",
    "ap@3[denominator=hits]",
]


def test_common_metrics_read_cells_only() -> None:
    """The standard set never builds a (users x positions) matrix; ERR does."""
    rng = np.random.default_rng(0)
    x = np.where(rng.random((50, 12)) < 0.2, rng.integers(1, 5, (50, 12)), 0).astype(float)
    b = _batch(x)
    for s in parse_metrics(SPARSE):
        values = s.definition.compute(b, s.k, dict(s.params))
        assert values.shape == (50,) and np.isfinite(values).all()
    assert not b.dense_built()
    (err,) = parse_metrics(["err@5"])
    err.definition.compute(b, err.k, dict(err.params))
    assert b.dense_built()


def test_cells_of_an_empty_block() -> None:
    c = Cells.from_dense(np.zeros((0, 5)))
    assert c.rows == 0 and c.dense().shape == (0, 5)
    assert c.row_sums(c.value, 3).shape == (0,) and c.counts().shape == (0,)


@pytest.mark.parametrize("k", [None, 2])
def test_row_sums_keep_empty_rows_at_zero(k: int | None) -> None:
    c = Cells.from_dense(np.array([[0.0, 0.0, 0.0], [0.0, 0.5, 0.25]]))
    assert c.row_sums(c.value, k).tolist() == ([0.0, 0.75] if k is None else [0.0, 0.5])
