"""Run another tool on an edge workload (what the tool does at its edges).

    python edge_runners.py TOOL IN.json OUT.json

IN.json: ``{"recs": {user: [[item, score], ...]}, "truth": {user: {item: grade}},
"train": [[user, item], ...], "k": [1, 3, ...]}``; a user whose list is ``[]``
has an empty list (not a missing one). OUT.json: ``{"precision@5": mean, ...}``,
named by the receval metric the tool's corresponds to. Runs under the tool's
interpreter; imports only the tool and what it needs.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

Workload = dict[str, Any]


def _ordered(items: list[list[Any]]) -> list[str]:
    """A list by score descending, equal scores in input order (a stable sort)."""
    return [i for i, _ in sorted(items, key=lambda p: -p[1])]


def lenskit(w: Workload) -> dict[str, float]:
    """Empty lists: NaN for Precision and AveragePrecision, 0 for the others."""
    import numpy as np
    from lenskit.data import ItemList
    from lenskit.metrics import NDCG, Hit, Precision, Recall, RecipRank
    from lenskit.metrics.ranking import AveragePrecision

    out = {}
    users = sorted(u for u in w["recs"] if w["truth"].get(u))
    for k in w["k"]:
        for ours, metric in (
            ("precision", Precision(k)),
            ("recall", Recall(k)),
            ("ndcg", NDCG(k)),
            ("rr", RecipRank(k)),
            ("hit_rate", Hit(k)),
            ("ap", AveragePrecision(k=k)),
        ):
            values = []
            for u in users:
                recs = ItemList(item_ids=_ordered(w["recs"][u]), ordered=True)
                test = ItemList(item_ids=list(w["truth"][u]))
                values.append(float(metric.measure_list(recs, test)))
            out[f"{ours}@{k}"] = float(np.nanmean(values)) if values else math.nan
    return out


def recbole(w: Workload) -> dict[str, float]:
    """AveragePopularity with recommended items never seen in training."""
    from collections import Counter

    import torch
    from recbole.evaluator.collector import DataStruct
    from recbole.evaluator.metrics import AveragePopularity

    ks = list(w["k"])
    top = max(ks)
    users = sorted(w["recs"])
    items = torch.tensor([[int(i) for i in _ordered(w["recs"][u])[:top]] for u in users])
    data = DataStruct()
    data.set("rec.items", items)
    data.set("data.count_items", Counter(int(i) for _, i in w["train"]))
    config = {"topk": ks, "metric_decimal_place": 15}
    got = AveragePopularity(config).calculate_metric(data)
    return {f"arp@{k}": float(got[f"averagepopularity@{k}"]) for k in ks}


def torchmetrics(w: Workload) -> dict[str, float]:
    """Scores <= 0: never hits in precision, recall, AP and RR."""
    import torch
    from torchmetrics import retrieval as R

    preds, grades, index = [], [], []
    users = sorted(u for u, r in w["recs"].items() if r)
    for n, u in enumerate(users):
        truth = w["truth"].get(u, {})
        for item, score in w["recs"][u]:
            preds.append(float(score))
            grades.append(int(truth.get(item, 0)))
            index.append(n)
    p = torch.tensor(preds, dtype=torch.float64)
    g = torch.tensor(grades)
    i = torch.tensor(index)
    out = {}
    for k in w["k"]:
        for ours, cls in (
            ("precision", R.RetrievalPrecision),
            ("recall", R.RetrievalRecall),
            ("ap", R.RetrievalMAP),
            ("rr", R.RetrievalMRR),
            ("hit_rate", R.RetrievalHitRate),
        ):
            out[f"{ours}@{k}"] = float(cls(top_k=k)(p, g > 0, indexes=i))
        out[f"ndcg@{k}"] = float(R.RetrievalNormalizedDCG(top_k=k)(p, g, indexes=i))
    return out


TOOLS = {f.__name__: f for f in (lenskit, recbole, torchmetrics)}

if __name__ == "__main__":
    tool, src, dst = sys.argv[1:4]
    with open(src) as fh:
        workload = json.load(fh)
    with open(dst, "w") as fh:
        json.dump(TOOLS[tool](workload), fh)
