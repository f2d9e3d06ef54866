"""Run another tool on a workload with repeated rows (``duplicates="count"``).

    python duplicates_runners.py TOOL IN.json OUT.json

IN.json: ``{"recs": [[user, item, score], ...], "truth": [[user, item], ...],
"k": [1, 3, ...]}``: rows as they are, an item repeated in a list or a
(user, item) pair repeated in the truth kept; scores distinct within a user.
OUT.json: ``{"precision@5": mean, ...}``, named by the receval metric the
tool's corresponds to (only those the tool counts row by row). Runs under the
tool's interpreter; imports only the tool and what it needs.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

Workload = dict[str, Any]


def _lists(w: Workload) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each user's list (score descending, repeats kept) and test rows."""
    recs: dict[str, list[tuple[float, str]]] = {}
    for u, i, s in w["recs"]:
        recs.setdefault(u, []).append((s, i))
    truth: dict[str, list[str]] = {}
    for u, i in w["truth"]:
        truth.setdefault(u, []).append(i)
    ordered = {u: [i for _, i in sorted(r, key=lambda p: -p[0])] for u, r in recs.items()}
    return ordered, truth


def lenskit(w: Workload) -> dict[str, float]:
    """Every list row tested on its own; len(test) counts the test rows."""
    import numpy as np
    from lenskit.data import ItemList
    from lenskit.metrics import NDCG, Hit, Precision, Recall, RecipRank
    from lenskit.metrics.ranking import AveragePrecision

    recs, truth = _lists(w)
    users = sorted(u for u in recs if truth.get(u))
    out = {}
    for k in w["k"]:
        for ours, metric in (
            ("precision", Precision(k)),
            ("recall", Recall(k)),
            ("ndcg", NDCG(k)),
            ("rr", RecipRank(k)),
            ("hit_rate", Hit(k)),
            ("ap", AveragePrecision(k=k)),
        ):
            values = [
                float(
                    metric.measure_list(
                        ItemList(item_ids=recs[u], ordered=True), ItemList(item_ids=truth[u])
                    )
                )
                for u in users
            ]
            out[f"{ours}@{k}"] = float(np.nanmean(values)) if values else math.nan
    return out


def replay(w: Workload) -> dict[str, float]:
    """MAP, NDCG, MRR and HitRate (row by row; Precision and Recall count
    distinct items, which receval does not reproduce)."""
    import warnings

    import pandas as pd
    from replay.metrics import MAP, MRR, NDCG, HitRate

    warnings.simplefilter("ignore")  # MetricDuplicatesWarning
    recs = pd.DataFrame(
        [(int(u), int(i), float(s)) for u, i, s in w["recs"]],
        columns=["query_id", "item_id", "rating"],
    )
    truth = pd.DataFrame([(int(u), int(i)) for u, i in w["truth"]], columns=["query_id", "item_id"])
    out = {}
    for ours, cls in (("ap", MAP), ("ndcg", NDCG), ("rr", MRR), ("hit_rate", HitRate)):
        got = cls(topk=list(w["k"]))(recs, truth)
        for k in w["k"]:
            out[f"{ours}@{k}"] = float(got[f"{cls.__name__}@{k}"])
    return out


TOOLS = {f.__name__: f for f in (lenskit, replay)}

if __name__ == "__main__":
    tool, src, dst = sys.argv[1:4]
    with open(src) as fh:
        workload = json.load(fh)
    with open(dst, "w") as fh:
        json.dump(TOOLS[tool](workload), fh)
