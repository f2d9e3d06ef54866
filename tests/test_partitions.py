"""Numbers do not depend on how users are cut into partitions (issue #18).

A Spark engine evaluates each partition of users on its own and combines the
parts on the driver; here the same is done in-process, no Spark needed: the
users are hash-partitioned into 1, 7 and 64 parts, each part is evaluated by
:func:`receval.engines.driver.evaluate_pair` (per-user values dropped, as an
executor does), the parts are combined in a shuffled order by
:class:`receval.engines.driver.Combiner`, and the summary and counts must be
bit-identical to :func:`receval.evaluate` on the whole data. Means are exact
sums rounded once (:class:`receval.exact.ExactSum`), so they cannot depend on
the cut.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines import driver, numpy_engine
from receval.evaluation import api
from receval.evaluation.options import EvalOptions
from receval.io.items import build_context
from receval.io.tables import iter_recs, read_truth
from receval.metrics.spec import parse_metrics
from receval.records import Pair, RecsData, TruthData
from tests.test_blocks import random_metrics, workload


def _subset_recs(recs: RecsData, rows: np.ndarray) -> RecsData:
    return RecsData(
        users=recs.users[rows],
        items=recs.items[rows],
        score=None if recs.score is None else recs.score[rows],
        rank=None if recs.rank is None else recs.rank[rows],
        rows=len(rows),
        source=recs.source,
    )


def _subset_truth(truth: TruthData, rows: np.ndarray, empty: np.ndarray) -> TruthData:
    return TruthData(
        users=truth.users[rows],
        items=truth.items[rows],
        grades=truth.grades[rows],
        rows=len(rows),
        graded=truth.graded,
        source=truth.source,
        empty_users=empty,
    )


def _part_of(users: np.ndarray, parts: int) -> np.ndarray:
    """A user's partition: a hash of its id, as a Spark repartition by user does."""
    return (pd.util.hash_array(np.asarray(users)) % np.uint64(parts)).astype(np.int64)


def partitioned(
    recs: pd.DataFrame, truth: pd.DataFrame, metrics: list[str], parts: int, seed: int, **kw
) -> receval.Result:
    opts = EvalOptions(**{k: v for k, v in kw.items() if k in EvalOptions.__dataclass_fields__})
    specs = parse_metrics(metrics, opts.metric_defaults)
    items = build_context(
        train=kw.get("train"),
        catalog=kw.get("catalog"),
        item_features=kw.get("item_features"),
        item_groups=kw.get("item_groups"),
    )
    (r, _), *_ = list(iter_recs(recs))
    t = read_truth(truth)
    plan = driver.Plan(
        tuple(specs),
        numpy_engine._max_grade(t.grades),
        items=items,
        **opts.engine(),
    )
    rp, tp = _part_of(r.users, parts), _part_of(t.users, parts)
    pieces = []
    for p in range(parts):
        rows, trows = np.flatnonzero(rp == p), np.flatnonzero(tp == p)
        if not len(rows) and not len(trows):
            continue
        empty = t.empty_users[_part_of(t.empty_users, parts) == p]
        pair = Pair(_subset_recs(r, rows), _subset_truth(t, trows, empty), int, int, len(rows))
        pieces.append(driver.evaluate_pair(plan, pair, keep_values=False))
    combiner = driver.Combiner(plan)
    for i in np.random.default_rng(seed).permutation(len(pieces)):
        combiner.add(pieces[i])
    return api.result_of(combiner.outcome(), specs, opts, items)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("parts", [1, 7, 64])
def test_partitions_change_no_bit(seed: int, parts: int) -> None:
    recs, truth, extra = workload(seed)
    metrics = random_metrics(np.random.default_rng(seed))
    kw = {"empty_truth": ["skip", "zero"][seed % 2], "no_truth": "zero", **extra}
    whole = receval.evaluate(recs, truth, metrics, **kw)
    cut = partitioned(recs, truth, metrics, parts, seed, **kw)
    assert whole.summary.keys() == cut.summary.keys()
    wrong = [m for m, v in whole.summary.items() if not _same(v, cut.summary[m])]
    assert not wrong, [(m, whole.summary[m], cut.summary[m]) for m in wrong[:5]]
    assert whole.counts == cut.counts
    pd.testing.assert_frame_equal(whole.item_groups, cut.item_groups, check_exact=True)


def test_means_are_exact_sums_rounded_once() -> None:
    """The mean is the correctly rounded exact mean, not a float sum: values
    whose float sum depends on the order give the exact answer."""
    from fractions import Fraction

    recs, truth, _ = workload(0)
    res = receval.evaluate(recs, truth, ["ndcg@10", "ap@10", "rr"], empty_truth="skip")
    for name, mean in res.summary.items():
        v = res.per_user[name].dropna().to_numpy()
        exact = sum(Fraction(x) for x in v.tolist()) / len(v)
        assert mean == float(exact), name
