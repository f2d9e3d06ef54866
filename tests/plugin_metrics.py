"""Metrics of a team's own, declared through receval's public API only (the module
tests/test_custom_metrics.py and the Spark doors load as a plugin: ``--plugin
tests.plugin_metrics``, ``check_metric``). Importing it registers them."""

from __future__ import annotations

import numpy as np

import receval
from receval.metrics.kernels.batch import Batch
from receval.metrics.kernels.beyond import Exposure, top_of


def _at_least_one(x: int) -> bool:
    return x >= 1


@receval.metric(
    "cold_share",
    description="share of the top k held by cold items (fewer than min_users training users)",
    formula="|{i ≤ min(k, n) : pop(i) < min_users}| / min(k, n); NaN for an empty list",
    params=(
        receval.ParamDef(
            "min_users",
            int,
            3,
            "an item is cold below this many distinct training users",
            check=_at_least_one,
            check_text="an integer >= 1",
        ),
    ),
    needs=("train",),
    needs_truth=False,
    undefined="empty lists (NaN, left out of the mean)",
)
def cold_share(batch: Batch, k: int | None, *, min_users: int) -> np.ndarray:
    idx, valid, count = top_of(batch, k)
    assert batch.items is not None
    cold = (batch.items.pop < min_users)[idx] & valid
    out = np.full(batch.size, np.nan)
    np.divide(cold.sum(axis=1), count, out=out, where=count > 0)
    return out


def _strong_hits(batch: Batch, k: int | None, *, min_grade: float) -> np.ndarray:
    """hits@k of grade >= min_grade, over k (over the list without k)."""
    strong = (batch.hits.value >= min_grade).astype(np.float64)
    den = batch.retrieved(k) if k is None else np.full(batch.size, k)
    out = np.zeros(batch.size)
    np.divide(batch.hits.row_sums(strong, k), den, out=out, where=den > 0)
    return out


STRONG = receval.MetricDef(
    name="strong_precision",
    aliases=("sp",),
    description="precision counting only items of grade min_grade or more",
    formula="|{i ≤ k : g_i ≥ min_grade}| / k",
    kernel=_strong_hits,
    params=(receval.ParamDef("min_grade", float, 2.0, "the smallest grade that counts"),),
    graded=True,
)
receval.register_metric(STRONG)


def _top_item_share(e: Exposure) -> float:
    """The most recommended item's share of every recommended slot."""
    total = e.counts.sum()
    return float(e.counts.max() / total) if total else float("nan")


TOP_SHARE = receval.register_metric(
    receval.MetricDef(
        name="top_item_share",
        description="the most recommended item's share of the top-k slots",
        formula="max_i c_i / Σ_i c_i, c_i: the lists holding item i in their top k",
        kernel=_top_item_share,
        kind="aggregate",
        needs_truth=False,
        higher_is_better=False,
        undefined="no item recommended (NaN)",
    )
)

#: the names this plugin registers
NAMES = ("cold_share", "strong_precision", "top_item_share")
