"""Per-user values do not depend on how users are cut into blocks and chunks.

Every metric of the registry (rating metrics aside), with random parameters,
is evaluated whole and with tiny blocks (numpy_engine.BLOCK_CELLS,
SPARSE_BLOCK_USERS) and tiny chunks of users (io.tables.CHUNK_ROWS, the
driver's threads): per-user values, means and counts must be bit-identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines import driver, numpy_engine
from receval.io import stream, tables
from tests.reference import GROUP_NAMES, MAX_GRADE, by_evaluate, param_values

#: (BLOCK_CELLS, SPARSE_BLOCK_USERS, CHUNK_ROWS, THREADS): tiny to large
SETTINGS = [(1, 1, 10**9, 1), (8, 3, 10**9, 1), (64, 7, 5, 2), (1 << 10, 1 << 16, 1, 3)]


def random_metrics(rng: np.random.Generator) -> list[str]:
    """Every non-rating metric of the registry with every value of each of its
    parameters (the other parameters random), each at a random cut-off."""

    def one(d: receval.MetricDef, fixed: dict[str, Any]) -> str:
        k = [None, 1, 3, 10, 20, 20][rng.integers(6)]
        if d.needs_cutoff and k is None:
            k = 4
        if not d.takes_cutoff:
            k = None
        params = dict(fixed)
        for p in d.params:
            values = param_values(p)
            required = p.default is None and p.type is str  # exposure's group
            if p.name not in params and values and (required or rng.random() < 0.5):
                params[p.name] = values[rng.integers(len(values))]
        text = d.name if k is None else f"{d.name}@{k}"
        return text + (
            "[" + ",".join(f"{n}={v}" for n, v in params.items()) + "]" if params else ""
        )

    out = []
    for d in receval.metrics().values():
        if d.kind == "rating" or not by_evaluate(d):  # tests/test_door_only_metrics.py
            continue
        out.append(one(d, {}))
        out += [one(d, {p.name: v}) for p in d.params for v in param_values(p)]
    return list(dict.fromkeys(out))


def workload(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(60):
        n = int(rng.integers(0, 31))
        items = rng.choice(40, n, replace=False)
        scores = rng.integers(0, 5, n).astype(float)  # ties
        rows += [(u, int(i), s) for i, s in zip(items, scores, strict=True)]
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(5, 70, 900),
            "item": rng.integers(0, 40, 900),
            "relevance": rng.random(900) * MAX_GRADE,  # fractional grades: inexact sums
        }
    ).drop_duplicates(["user", "item"])
    truth.loc[truth.index[0], "relevance"] = MAX_GRADE  # the largest grade is MAX_GRADE
    train = pd.DataFrame({"user": rng.integers(0, 30, 300), "item": rng.integers(0, 45, 300)})
    feats: Any = pd.DataFrame(rng.random((45, 4)), index=range(45))
    if seed % 2:  # categories: ild by Jaccard
        feats = {i: set(rng.choice(6, int(rng.integers(1, 4)), replace=False)) for i in range(45)}
    # item groups g0..g2: some items in two groups, some in none
    groups = pd.DataFrame(
        {"item": rng.integers(0, 45, 50), "group": rng.choice(list(GROUP_NAMES), 50)}
    ).drop_duplicates()
    extra = {
        "train": train.drop_duplicates(),
        "item_features": feats,
        "catalog": range(50),
        "item_groups": groups,
    }
    return recs, truth, extra


@pytest.mark.parametrize("seed", [0, 1])  # and check_metric's own seeds (test_custom_metrics)
def test_blocks_and_chunks_change_no_bit(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    recs, truth, extra = workload(seed)
    metrics = random_metrics(np.random.default_rng(seed))
    policy = ["skip", "zero"][seed % 2]
    kw = {"empty_truth": policy, "no_truth": "zero", **extra}
    whole = receval.evaluate(recs, truth, metrics, **kw)
    for cells, sparse, rows, threads in SETTINGS:
        with monkeypatch.context() as m:
            m.setattr(numpy_engine, "BLOCK_CELLS", cells)
            m.setattr(numpy_engine, "SPARSE_BLOCK_USERS", sparse)
            m.setattr(tables, "CHUNK_ROWS", rows)
            m.setattr(stream, "CHUNK_ROWS", rows)  # tables merged by user
            m.setattr(driver, "THREADS", threads)
            cut = receval.evaluate(recs, truth, metrics, **kw)
        for name in whole.per_user:
            a = whole.per_user[name].to_numpy()
            b = cut.per_user[name].to_numpy()
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            assert same.all(), (name, (cells, sparse, rows), whole.per_user.index[~same][:3])
        assert whole.summary.keys() == cut.summary.keys()
        for name, value in whole.summary.items():
            assert value == cut.summary[name] or (np.isnan(value) and np.isnan(cut.summary[name]))
        assert whole.counts == cut.counts
        pd.testing.assert_frame_equal(whole.item_groups, cut.item_groups, check_exact=True)
