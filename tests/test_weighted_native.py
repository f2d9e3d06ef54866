"""The weighted metrics' compiled path (issue #35 point 5) gives what the NumPy path
gives, bit for bit.

The compiled join also returns the truth row of each relevant list row (so grade
and weight come from one join), ``_native.relevant_weights`` groups the relevant
pairs' weights by user in one pass and ``_native.sort_runs`` sorts each user's
(sorting networks, branchless insertion, Shell sort). Checked here: those passes
against NumPy on random data, and whole evaluations with the compiled module and
without it (values, counts, errors), ids as integers, digit strings and text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines import numpy_engine
from receval.metrics.kernels import ranking
from receval.records import RecsData, TruthData
from tests.required import REQUIRE_NATIVE, need
from tests.test_native import _outcome
from tests.test_stream import _same

native = numpy_engine._native


@pytest.fixture(scope="module")
def _native() -> None:
    need("receval._native", REQUIRE_NATIVE, native is not None, "not built")


needs_native = pytest.mark.usefixtures("_native")


def _run(on: bool, fn: Any) -> Any:
    """``fn()`` (or the error it raises) with the compiled module, or without it
    (the engine's NumPy path and the kernels' np.bincount sums)."""
    with pytest.MonkeyPatch.context() as m:
        if not on:
            m.setattr(ranking, "_native", None)
        return _outcome(on, fn)


def _both(fn: Any) -> Any:
    a, b = _run(True, fn), _run(False, fn)
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
    else:
        _same(a, b)
    return a


WEIGHTED = ["recall", "precision", "ndcg", "ap", "dcg", "hit_rate"]


def _metrics(weighting: str, clip: float) -> list[str]:
    extra = f",clip={clip}" if clip else ""
    return [f"{m}@{k}[weighting={weighting}{extra}]" for m in WEIGHTED for k in (3, 20)]


@needs_native
def test_sort_runs_and_relevant_weights_match_numpy() -> None:
    rng = np.random.default_rng(35)
    for trial in range(120):
        users = int(rng.integers(1, 30))
        sizes = rng.integers(0, [5, 9, 17, 45][trial % 4], users)
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        x = rng.choice([np.inf, 1.0, 2.0, *rng.uniform(1.0, 50.0, 6)], int(off[-1]))
        y = x.copy()
        native.sort_runs(off, y)
        want = [np.sort(x[off[u] : off[u + 1]]) for u in range(users)]
        assert np.array_equal(y, np.concatenate([np.empty(0), *want]))
        # relevant_weights: grouped by user in the truth's order, users in any order
        tu = np.repeat(np.arange(users, dtype=np.int64), sizes)
        if trial % 2:
            tu = rng.permutation(tu)
        grades = rng.integers(0, 3, len(tu)).astype(np.float64)
        w = rng.uniform(1.0, 9.0, len(tu))
        out, who = np.empty(len(tu)), np.empty(len(tu), np.int64)
        offsets = np.empty(users + 1, np.int64)
        status, count, missing, first = native.relevant_weights(
            tu, grades, w, users, 1.0, out, who, offsets
        )
        rel = grades >= 1.0
        order = np.argsort(tu[rel], kind="stable")
        assert (status, count, missing, first) == (0, rel.sum(), 0, -1)
        assert np.array_equal(out[:count], w[rel][order])
        assert np.array_equal(who[:count], tu[rel][order])
        assert np.array_equal(np.diff(offsets), np.bincount(tu[rel], minlength=users))
        # user_sums: np.bincount's sums of min(w, cap), bit for bit
        for cap in (np.inf, 4.0):
            sums = np.empty(users)
            native.user_sums(tu[rel][order], w[rel][order], cap, sums)
            want = np.bincount(tu[rel], weights=np.minimum(w[rel], cap), minlength=users)
            assert np.array_equal(sums, want)
    # a relevant row without a propensity (NaN): counted, the first named
    tu = np.array([0, 0, 1, 1], np.int64)
    w = np.array([2.0, np.nan, 1.0, np.nan])
    got = native.relevant_weights(tu, np.ones(4), w, 2, 1.0, np.empty(4), np.empty(4, np.int64),
                                  np.empty(3, np.int64))  # fmt: skip
    assert got[2:] == (2, 1)
    got = native.relevant_weights(tu, np.ones(4), w, 1, 1.0, np.empty(4), np.empty(4, np.int64),
                                  np.empty(2, np.int64))  # fmt: skip
    assert got[0] == 4  # a user code out of range: the NumPy path
    with pytest.raises(ValueError, match="lengths"):
        native.relevant_weights(tu, np.ones(3), w, 2, 1.0, np.empty(4), np.empty(4, np.int64),
                                np.empty(3, np.int64))  # fmt: skip


@needs_native
def test_join_returns_the_truth_row_of_each_hit() -> None:
    rng = np.random.default_rng(5)
    users, n = 50, 600
    ru = np.sort(rng.integers(0, users, n)).astype(np.int64)
    ri = np.empty(n, np.int64)
    for u in range(users):  # distinct items per list
        at = np.flatnonzero(ru == u)
        ri[at] = rng.choice(40, len(at), replace=False)
    pairs = {(int(u), int(i)) for u, i in zip(ru, ri, strict=True)}
    extra = {
        (int(u), int(i))
        for u, i in zip(rng.integers(0, users, 300), rng.integers(0, 60, 300), strict=True)
    }
    truth = sorted(pairs)[::2] + sorted(extra - pairs)
    order = rng.permutation(len(truth))
    tu = np.array([truth[j][0] for j in order], np.int64)
    ti = np.array([truth[j][1] for j in order], np.int64)
    tg = rng.integers(0, 4, len(tu)).astype(np.float64)
    args = (ru, ri, tu, ti, tg, users, 1.0, None, np.empty(n), np.empty(users + 1, np.int64))
    assert native.join(*args) == 0  # the call without the pairs: unchanged
    gain = args[8].copy()
    hit = np.empty((3, n), np.int64)
    status, count = native.join(*args, hit[0], hit[1], hit[2])
    assert status == 0
    assert np.array_equal(args[8], gain)
    rows, truth_rows, pos = hit[:, :count]
    assert np.array_equal(rows, np.flatnonzero(gain > 0))
    assert np.array_equal(tu[truth_rows], ru[rows]) and np.array_equal(ti[truth_rows], ri[rows])
    assert np.array_equal(pos, rows - args[9][ru[rows]])
    with pytest.raises(ValueError, match="lengths"):
        native.join(*args, hit[0], hit[1, :3])


def _tables(seed: int, users: int = 60) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Lists of 0-30 items, 0-40 truth items per user (some heavy: Shell sort), the
    truth shuffled; a propensity per (user, item), some 0 (clip= needed)."""
    rng = np.random.default_rng(seed)
    recs, truth = [], []
    for u in range(users):
        listed = rng.choice(90, int(rng.integers(0, 30)), replace=False)
        recs.append(
            pd.DataFrame({"user": u, "item": listed, "rank": np.arange(1, len(listed) + 1)})
        )
        r = int(rng.integers(0, 40))
        items = np.unique(np.concatenate([listed[: r // 2], rng.choice(90, r)]))
        truth.append(
            pd.DataFrame({"user": u, "item": items, "relevance": rng.integers(0, 3, len(items))})
        )
    t = pd.concat(truth, ignore_index=True).sample(frac=1.0, random_state=seed)
    p = rng.choice([0.0, 0.05, 0.5, 1.0, *rng.uniform(0.01, 1.0, 8)], len(t))
    props = pd.DataFrame({"user": t["user"], "item": t["item"], "propensity": np.maximum(p, 1e-3)})
    return pd.concat(recs, ignore_index=True), t.reset_index(drop=True), props


@needs_native
@pytest.mark.parametrize("seed", [1])
def test_weighted_metrics_equal_the_numpy_path(seed: int) -> None:
    recs, truth, props = _tables(seed)
    for weighting, clip in (("ips", 0.0), ("snips", 0.0), ("ips", 0.1), ("snips", 0.3)):
        got = _both(
            lambda w=weighting, c=clip: receval.evaluate(
                recs, truth, [*_metrics(w, c), "ndcg@10"], propensities=props
            )
        )
        assert not isinstance(got, Exception)
    # rank positions with gaps, a depth cut, per-item propensities
    gaps = recs.assign(rank=recs["rank"] * 2)
    items = props.groupby("item", as_index=False)["propensity"].min()
    got = _both(
        lambda: receval.evaluate(
            gaps, truth, _metrics("snips", 0.2), propensities=items, rank="position", depth=12
        )
    )
    assert not isinstance(got, Exception)
    # a repeated list row (the sorting path, kept) and errors: the same on both paths
    twice = pd.concat([recs, recs.iloc[[3]].assign(rank=99)], ignore_index=True)
    kept = _both(
        lambda: receval.evaluate(
            twice, truth, _metrics("ips", 0.1), propensities=props, duplicates="keep"
        )
    )
    assert not isinstance(kept, Exception)
    zero = props.assign(propensity=np.where(props.index % 7 == 0, 0.0, props["propensity"]))
    missing = props.iloc[5:]
    for bad in (zero, missing):
        err = _both(
            lambda b=bad: receval.evaluate(recs, truth, _metrics("ips", 0.0), propensities=b)
        )
        assert isinstance(err, receval.ReceValError)


@needs_native
def test_explicit_feedback_hits_only_where_recommended() -> None:
    """Rows whose item is relevant but not recommended (predicted below the
    threshold) carry no weight: the join's pairs are filtered like the gains."""
    rng = np.random.default_rng(9)
    n = 400
    ru = np.sort(rng.integers(0, 40, n))
    ri = np.concatenate([rng.choice(200, int((ru == u).sum()), replace=False) for u in range(40)])
    recs = RecsData(ru, ri, rng.random(n), None, n, recommended=rng.random(n) < 0.6)
    tu = np.concatenate([ru[::2], rng.integers(0, 40, 50)])
    ti = np.concatenate([ri[::2], 500 + np.arange(50)])
    truth = TruthData(tu, ti, rng.integers(0, 4, len(tu)).astype(float), len(tu), True)
    truth.propensity = rng.uniform(0.05, 1.0, len(tu))
    spec = [receval.parse_metric(m) for m in _metrics("snips", 0.1)]

    def run() -> Any:
        p = numpy_engine.prepare(recs, truth)
        return numpy_engine.compute(p, spec), p.hit_rows, p.hit_weight, p.hit_pos is not None

    on, off = _run(True, run), _run(False, run)
    assert on[3] and not off[3]  # the join's pairs, then the second join
    for a, b in zip(on[:3], off[:3], strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert 0 < len(on[1]) < int((truth.grades[: n // 2] >= 1).sum())  # some not recommended


def test_ids_as_integers_digit_strings_and_text_agree() -> None:
    recs, truth, props = _tables(4, users=40)
    metrics = [*_metrics("snips", 0.1), *_metrics("ips", 0.0)[:4]]
    want = receval.evaluate(recs, truth, metrics, propensities=props).per_user.to_numpy()
    for form in (str, lambda x: f"id-{x}"):
        r, t, p = (
            f.assign(user=f["user"].map(form), item=f["item"].map(form))
            for f in (recs, truth, props)
        )
        got = receval.evaluate(r, t, metrics, propensities=p).per_user
        if form is str:  # digit strings: the same ids, the same order
            assert np.array_equal(got.to_numpy(), want, equal_nan=True)
        else:  # text: users in text order; the same value per user
            back = got.rename(index=lambda s: int(s[3:])).sort_index().to_numpy()
            assert np.array_equal(back, want, equal_nan=True)
