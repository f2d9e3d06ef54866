"""RePlay: ``replay.metrics.OfflineMetrics`` (the multi-metric builder) on polars DataFrames.

    python benchmarks/peers/bench_replay.py --recs R --truth T [--out result.json]

Conversion: Arrow -> polars (``polars.from_arrow``), columns renamed to
RePlay's defaults ``query_id``, ``item_id``, ``rating`` (the score; RePlay
orders each list by it). RePlay ignores grades: every ground-truth row is
relevant. Users are the ground truth's users; users without recommendations
score 0. MAP divides by min(k, R) (receval's default), NDCG is binary with
the ideal of min(k, R) hits.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common

KS = [10, 100]
NAMES = {
    "Precision": "precision",
    "Recall": "recall",
    "NDCG": "ndcg",
    "MAP": "map",
    "MRR": "mrr",
    "HitRate": "hit_rate",
}
CONVENTION = {
    "relevance": "binary",
    "empty_truth": "skip",
    "missing_recs": "zero",
    "metrics": {
        **{f"precision@{k}": f"precision@{k}" for k in KS},
        **{f"recall@{k}": f"recall@{k}" for k in KS},
        **{f"ndcg@{k}": f"ndcg@{k}" for k in KS},
        **{f"map@{k}": f"ap@{k}" for k in KS},
        **{f"mrr@{k}": f"rr@{k}" for k in KS},
        **{f"hit_rate@{k}": f"hit_rate@{k}" for k in KS},
    },
    "notes": ["binary relevance (grades ignored)", "ordered by score"],
}


def version() -> str:
    from importlib.metadata import version as v

    return v("replay-rec")


def compute(recs, truth) -> dict[str, float]:
    import polars as pl
    from replay.metrics import MAP, MRR, NDCG, HitRate, OfflineMetrics, Precision, Recall

    recommendations = pl.from_arrow(recs.select(["user", "item", "score"])).rename(
        {"user": "query_id", "item": "item_id", "score": "rating"}
    )
    ground_truth = pl.from_arrow(truth.select(["user", "item"])).rename(
        {"user": "query_id", "item": "item_id"}
    )
    metrics = [Precision(KS), Recall(KS), NDCG(KS), MAP(KS), MRR(KS), HitRate(KS)]
    res = OfflineMetrics(metrics)(recommendations, ground_truth)
    out = {}
    for name, value in res.items():
        base, k = name.split("@")
        out[f"{NAMES.get(base, base)}@{k}"] = value
    return out


if __name__ == "__main__":
    _common.run("replay", version, compute, convention=CONVENTION)
