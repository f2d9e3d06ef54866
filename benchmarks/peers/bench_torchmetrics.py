"""torchmetrics: retrieval metrics (``RetrievalPrecision`` etc.) with ``indexes``.

    python benchmarks/peers/bench_torchmetrics.py --recs R --truth T [--out result.json]

Conversion: the recommended rows become torchmetrics' retrieval input —
``preds`` = score, ``indexes`` = user, ``target`` = whether (user, item) is in
the truth (its grade for NDCG, which accepts graded targets; the other
metrics need a binary target) — found with one Arrow join. Two
``MetricCollection``s (binary and graded targets) share their stored state.

torchmetrics only sees the candidates it is given, here the recommended
rows, so its conventions differ from a recommender evaluator's:

* users are those with recommendations; a user whose list has no relevant
  item (including users without truth) scores 0 (``empty_target_action="neg"``,
  the default); truth users without recommendations are absent
  (receval ``empty_truth="zero", missing_recs="skip"``);
* recall@k divides by the relevant items *in the list*, not R (no receval
  equivalent); NDCG's ideal is the list's relevant grades re-sorted, so
  ndcg@100 (lists <= 100 items) is receval's ``ndcg@100[ideal=retrieved]``
  and ndcg@10 has no equivalent; MAP@k divides by the hits in the top k
  (``ap@k[denominator=hits]``) and counts only items with preds > 0 as
  relevant (every score in the workload is > 0);
* torchmetrics computes in float32 in places, so agreement is to ~1e-7.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common

KS = (10, 100)
CONVENTION = {
    "relevance": "graded",
    "empty_truth": "zero",
    "missing_recs": "skip",
    "metrics": {
        **{f"precision@{k}": f"precision@{k}" for k in KS},
        **{f"recall@{k}": None for k in KS},
        "ndcg@10": None,
        "ndcg@100": "ndcg@100[ideal=retrieved]",
        **{f"map@{k}": f"ap@{k}[denominator=hits]" for k in KS},
        **{f"mrr@{k}": f"rr@{k}" for k in KS},
        **{f"hit_rate@{k}": f"hit_rate@{k}" for k in KS},
    },
    "notes": [
        "only recommended rows are candidates: users = users with recs, no-hit lists score 0",
        "recall@k denominator = relevant items in the list (no receval equivalent)",
        "ndcg ideal = the list's relevant grades re-sorted (ndcg@10: no equivalent)",
        "map@k denominator = hits in the top k",
        "float32 in places",
    ],
}


def version() -> str:
    from importlib.metadata import version as v

    return v("torchmetrics")


def compute(recs, truth) -> dict[str, float]:
    import numpy as np
    import pyarrow as pa
    import torch
    from torchmetrics import MetricCollection
    from torchmetrics.retrieval import (
        RetrievalHitRate,
        RetrievalMAP,
        RetrievalMRR,
        RetrievalNormalizedDCG,
        RetrievalPrecision,
        RetrievalRecall,
    )

    # target: the grade of (user, item) in the truth, 0 if absent; keep the recs' row order
    rows = recs.select(["user", "item", "score"]).append_column(
        "_row", pa.array(np.arange(recs.num_rows, dtype=np.int64))
    )
    joined = rows.join(truth, ["user", "item"], join_type="left outer").sort_by("_row")
    grade = joined["relevance"].fill_null(0).to_numpy().astype(np.int64)
    preds = torch.from_numpy(np.require(joined["score"].to_numpy(), requirements="W"))
    indexes = torch.from_numpy(np.require(joined["user"].to_numpy(), requirements="W"))
    graded = torch.from_numpy(grade)
    binary = graded > 0

    bin_metrics = MetricCollection(
        {
            **{f"precision@{k}": RetrievalPrecision(top_k=k) for k in KS},
            **{f"recall@{k}": RetrievalRecall(top_k=k) for k in KS},
            **{f"map@{k}": RetrievalMAP(top_k=k) for k in KS},
            **{f"mrr@{k}": RetrievalMRR(top_k=k) for k in KS},
            **{f"hit_rate@{k}": RetrievalHitRate(top_k=k) for k in KS},
        }
    )
    ndcg = MetricCollection({f"ndcg@{k}": RetrievalNormalizedDCG(top_k=k) for k in KS})
    bin_metrics.update(preds, binary, indexes=indexes)
    ndcg.update(preds, graded, indexes=indexes)
    out = {name: float(v) for name, v in bin_metrics.compute().items()}
    out.update({name: float(v) for name, v in ndcg.compute().items()})
    return {name: out[name] for name in CONVENTION["metrics"]}


if __name__ == "__main__":
    _common.run("torchmetrics", version, compute, convention=CONVENTION)
