"""RecTools: ``rectools.metrics.calc_metrics`` on Columns-named pandas DataFrames.

    python benchmarks/peers/bench_rectools.py --recs R --truth T [--out result.json]

Conversion: Arrow -> pandas, columns renamed to ``Columns.User/Item/Rank``
(reco) and ``Columns.User/Item`` (interactions = the truth). RecTools ignores
grades: every truth row is relevant. NDCG is asked for with
``divide_by_achievable=True`` (ideal = min(k, R) hits; the default divides by
the ideal of k hits); MAP uses its default denominator, the number of
relevant items R (receval's ``ap@k[denominator=relevant]``). Users are the
interactions' users; users without recommendations score 0.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common

KS = (10, 100)
CONVENTION = {
    "relevance": "binary",
    "empty_truth": "skip",
    "missing_recs": "zero",
    "metrics": {
        **{f"precision@{k}": f"precision@{k}" for k in KS},
        **{f"recall@{k}": f"recall@{k}" for k in KS},
        **{f"ndcg@{k}": f"ndcg@{k}" for k in KS},
        **{f"map@{k}": f"ap@{k}[denominator=relevant]" for k in KS},
        **{f"mrr@{k}": f"rr@{k}" for k in KS},
        **{f"hit_rate@{k}": f"hit_rate@{k}" for k in KS},
    },
    "notes": [
        "binary relevance (grades ignored)",
        "NDCG(divide_by_achievable=True); default NDCG divides by the ideal of k hits",
        "MAP denominator = R (all relevant items), not min(k, R)",
    ],
}


def version() -> str:
    import rectools

    return rectools.__version__


def compute(recs, truth) -> dict[str, float]:
    from rectools import Columns
    from rectools.metrics import MAP, MRR, NDCG, HitRate, Precision, Recall, calc_metrics

    reco = recs.select(["user", "item", "rank"]).to_pandas()
    reco.columns = [Columns.User, Columns.Item, Columns.Rank]
    interactions = truth.select(["user", "item"]).to_pandas()
    interactions.columns = [Columns.User, Columns.Item]
    metrics = {}
    for k in KS:
        metrics[f"precision@{k}"] = Precision(k=k)
        metrics[f"recall@{k}"] = Recall(k=k)
        metrics[f"ndcg@{k}"] = NDCG(k=k, divide_by_achievable=True)
        metrics[f"map@{k}"] = MAP(k=k)
        metrics[f"mrr@{k}"] = MRR(k=k)
        metrics[f"hit_rate@{k}"] = HitRate(k=k)
    return calc_metrics(metrics, reco, interactions)


if __name__ == "__main__":
    _common.run("rectools", version, compute, convention=CONVENTION)
