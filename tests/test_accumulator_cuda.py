"""The Accumulator on a CUDA device: the top k chosen where the tensors live.

``Accumulator.update_scores`` takes PyTorch tensors on any device (and CuPy or
JAX arrays through DLPack): the top k of each row is selected there and only
it leaves the device (``receval.evaluation.accumulator._select_torch``). On a
GPU that selection runs CUDA's sort and top-k, so these tests hold it to the
host's NumPy selection bit for bit: the same lists (ties by item id), the same
Result, whatever the score dtype, the batch cut and the exclusions.

They need a CUDA device (``-m gpu``; skipped elsewhere, CI has none). Run on a
GPU machine with ``python -m pytest -m gpu tests/test_accumulator_cuda.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.evaluation.accumulator import _select_torch, _top_k

pytestmark = pytest.mark.gpu

METRICS = ["ndcg@10", "recall@20", "ap@10", "rr", "precision@5", "hit_rate@3"]


@pytest.fixture(scope="module")
def torch() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def _data(seed: int, m: int = 300, n: int = 500) -> tuple[np.ndarray, ...]:
    """Scores with many ties (a few distinct values), graded targets, seen items."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random((m, n)) * 6) / 2
    targets = (rng.random((m, n)) < 0.05) * rng.integers(1, 4, (m, n))
    seen = (rng.random((m, n)) < 0.1) & (targets == 0)
    return scores, targets, seen


def _same(a: receval.Result, b: receval.Result) -> None:
    assert list(a.summary) == list(b.summary)
    for name, v in a.summary.items():
        w = b.summary[name]
        assert v == w or (np.isnan(v) and np.isnan(w)), name
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
    assert a.counts == b.counts


def _by_numpy(scores: np.ndarray, targets: np.ndarray, seen: np.ndarray, step: int) -> Any:
    acc = receval.Accumulator(METRICS)
    for i in range(0, len(scores), step):
        s = slice(i, i + step)
        acc.update_scores(scores[s], targets[s], exclude=seen[s])
    return acc.compute()


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_cuda_tensors_give_the_hosts_result_bit_for_bit(torch: Any, dtype: str) -> None:
    """Scores in each dtype, on the GPU, against the same values (as the dtype
    holds them) selected by NumPy on the host: the same Result, bit for bit."""
    scores, targets, seen = _data(1)
    t = getattr(torch, dtype)
    on_gpu = torch.from_numpy(scores).to("cuda").to(t)
    as_held = on_gpu.to(torch.float64).cpu().numpy()  # the values the dtype holds
    want = _by_numpy(as_held, targets, seen, 64)
    acc = receval.Accumulator(METRICS)
    tg = torch.from_numpy(targets).to("cuda")
    sg = torch.from_numpy(seen).to("cuda")
    for i in range(0, len(scores), 64):
        acc.update_scores(on_gpu[i : i + 64], tg[i : i + 64], exclude=sg[i : i + 64])
    _same(acc.compute(), want)


@pytest.mark.parametrize("k", [1, 7, 10, 499, 500, 800])
def test_the_selection_on_the_gpu_is_the_hosts(torch: Any, k: int) -> None:
    """``_select_torch`` on CUDA picks the columns ``_top_k`` picks on the host:
    partial selection, a whole row (k = n), beyond the row (k > n), ties by id."""
    scores, targets, _ = _data(2)
    cols, picked, keep, (tu, ti, tv) = _select_torch(
        torch.from_numpy(scores).to("cuda"), torch.from_numpy(targets).to("cuda"), None, k
    )
    assert isinstance(cols, np.ndarray)  # only the top k came back to the host
    assert np.array_equal(cols, _top_k(scores, k))
    assert np.array_equal(picked, np.take_along_axis(scores.astype(np.float64), cols, 1))
    assert keep.all()
    nu, ni = np.nonzero(targets)
    assert np.array_equal(tu, nu) and np.array_equal(ti, ni)
    assert np.array_equal(tv, targets[nu, ni].astype(np.float64))


def test_batches_cut_anywhere_and_merged_accumulators_agree(torch: Any) -> None:
    """GPU batches of any size, and two accumulators merged, give the host's Result."""
    scores, targets, seen = _data(3)
    want = _by_numpy(scores, targets, seen, 300)
    sg, tg, eg = (torch.from_numpy(x).to("cuda") for x in (scores, targets, seen))
    for step in (1, 37, 300):
        acc = receval.Accumulator(METRICS)
        for i in range(0, len(scores), step):
            acc.update_scores(sg[i : i + step], tg[i : i + step], exclude=eg[i : i + step])
        _same(acc.compute(), want)
    left, right = receval.Accumulator(METRICS), receval.Accumulator(METRICS)
    users = np.arange(len(scores))
    left.update_scores(sg[:150], tg[:150], users=users[:150], exclude=eg[:150])
    right.update_scores(sg[150:], tg[150:], users=users[150:], exclude=eg[150:])
    _same(left.merge(right).compute(), want)


def test_cupy_and_jax_arrays_on_the_gpu_through_dlpack(torch: Any) -> None:
    """Arrays of other GPU libraries come through DLPack, without a copy to the
    host, and give the host's Result."""
    scores, targets, seen = _data(4, 120, 200)
    want = _by_numpy(scores, targets, seen, 120)
    tried = 0
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        acc = receval.Accumulator(METRICS)
        acc.update_scores(cupy.asarray(scores), cupy.asarray(targets), exclude=cupy.asarray(seen))
        _same(acc.compute(), want)
        tried += 1
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None and any(d.platform == "gpu" for d in jax.devices()):
        jax.config.update("jax_enable_x64", True)
        gpu = next(d for d in jax.devices() if d.platform == "gpu")
        arrays = [jax.device_put(x, gpu) for x in (scores, targets, seen)]
        acc = receval.Accumulator(METRICS)
        acc.update_scores(arrays[0], arrays[1], exclude=arrays[2])
        _same(acc.compute(), want)
        tried += 1
    if not tried:
        pytest.skip("neither CuPy nor JAX with a GPU is installed")


def test_non_finite_scores_on_the_gpu_are_refused(torch: Any) -> None:
    scores, targets, _ = _data(5, 4, 10)
    scores[2, 3] = np.nan
    acc = receval.Accumulator(METRICS)
    with pytest.raises(receval.ReceValError, match="finite"):
        acc.update_scores(torch.from_numpy(scores).to("cuda"), torch.from_numpy(targets).cuda())
