"""Run another tool on a workload with repeated rows (``duplicates="count"`` and the rest).

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
    """MAP, NDCG, MRR and HitRate (row by row), Precision and Recall
    (distinct items): ``duplicates="count_distinct"``."""
    import warnings

    import pandas as pd
    from replay.metrics import MAP, MRR, NDCG, HitRate, Precision, Recall

    warnings.simplefilter("ignore")  # MetricDuplicatesWarning
    recs = pd.DataFrame(
        [(int(u), int(i), float(s)) for u, i, s in w["recs"]],
        columns=["query_id", "item_id", "rating"],
    )
    truth = pd.DataFrame([(int(u), int(i)) for u, i in w["truth"]], columns=["query_id", "item_id"])
    out = {}
    for ours, cls in (
        ("ap", MAP),
        ("ndcg", NDCG),
        ("rr", MRR),
        ("hit_rate", HitRate),
        ("precision", Precision),
        ("recall", Recall),
    ):
        got = cls(topk=list(w["k"]))(recs, truth)
        for k in w["k"]:
            out[f"{ours}@{k}"] = float(got[f"{cls.__name__}@{k}"])
    return out


def _frames(w: Workload) -> tuple[Any, Any]:
    """The recommendations (integer ids, score, rank 1.. by score) and the
    truth (rating 1) as pandas frames, rows as given."""
    import pandas as pd

    recs = pd.DataFrame(
        [(int(u), int(i), float(s)) for u, i, s in w["recs"]], columns=["user", "item", "score"]
    )
    recs["rank"] = recs.groupby("user")["score"].rank(ascending=False, method="first")
    recs["rank"] = recs["rank"].astype(int)
    truth = pd.DataFrame([(int(u), int(i)) for u, i in w["truth"]], columns=["user", "item"])
    truth["rating"] = 1.0
    return recs, truth


def rectools(w: Workload) -> dict[str, float]:
    """Every (interaction row, recommendation row) pair a hit (``merge_reco``):
    ``duplicates="left_join"``. Named as the ``rectools`` convention reads them."""
    from rectools import Columns
    from rectools.metrics import MAP, MRR, NDCG, HitRate, Precision, Recall

    recs, truth = _frames(w)
    reco = recs.rename(columns={"user": Columns.User, "item": Columns.Item})[
        [Columns.User, Columns.Item, "rank"]
    ]
    inter = truth.rename(columns={"user": Columns.User, "item": Columns.Item})[
        [Columns.User, Columns.Item]
    ]
    out = {}
    for k in w["k"]:
        for ours, metric in (
            (f"precision@{k}", Precision(k)),
            (f"recall@{k}[denominator=min_k_relevant]", Precision(k, r_precision=True)),
            (f"recall@{k}", Recall(k)),
            (f"ap@{k}", MAP(k)),
            (f"ap@{k}[denominator=k]", MAP(k, divide_by_k=True)),
            (f"ndcg@{k}", NDCG(k)),
            (f"ndcg@{k}[ideal=relevant]", NDCG(k, divide_by_achievable=True)),
            (f"rr@{k}", MRR(k)),
            (f"hit_rate@{k}", HitRate(k)),
        ):
            out[ours] = float(metric.calc(reco, inter))
    return out


def recommenders(w: Workload) -> dict[str, float]:
    """Every (prediction row, truth row) pair a hit (``merge_ranking_true_pred``),
    nDCG joined twice: ``duplicates="join"``."""
    from recommenders.evaluation import python_evaluation as pe

    recs, truth = _frames(w)
    pred = recs[["user", "item", "score"]].rename(columns={"score": "prediction"})
    args = {"col_user": "user", "col_item": "item", "col_prediction": "prediction"}
    out = {}
    for k in w["k"]:
        for ours, fn in (
            (f"precision@{k}", pe.precision_at_k),
            (f"recall@{k}", pe.recall_at_k),
            (f"ap@{k}", pe.map_at_k),
            (f"ap@{k}[denominator=relevant]", pe.map),
            (f"ndcg@{k}", pe.ndcg_at_k),
        ):
            out[ours] = float(fn(truth, pred, k=k, **args))
    return out


TOOLS = {f.__name__: f for f in (lenskit, replay, rectools, recommenders)}

if __name__ == "__main__":
    tool, src, dst = sys.argv[1:4]
    with open(src) as fh:
        workload = json.load(fh)
    with open(dst, "w") as fh:
        json.dump(TOOLS[tool](workload), fh)
