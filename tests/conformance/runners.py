"""Run another tool on a workload, the way a user of that tool would.

    python runners.py TOOL IN.json OUT.json

IN.json: ``{"recs": {user: [[item, score], ...]}, "truth": {user: {item: grade}},
"k": [1, 3, ...]}`` (ids are strings; users with an empty list have no rows).
OUT.json: ``{"precision@5": mean, ...}``: the tool's own metric, named by the
receval metric it corresponds to (the test evaluates that name with
``convention=TOOL``). Runs under the tool's interpreter; imports only the tool
and what the tool itself needs.
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


def trec_eval(w: Workload) -> dict[str, float]:
    import pytrec_eval

    qrel = {u: {i: int(g) for i, g in t.items()} for u, t in w["truth"].items() if t}
    run = {u: {i: float(s) for i, s in r} for u, r in w["recs"].items() if r}
    ks = ",".join(str(k) for k in w["k"])
    names = {f"P.{ks}", f"recall.{ks}", f"ndcg_cut.{ks}", f"map_cut.{ks}", f"success.{ks}"}
    per = pytrec_eval.RelevanceEvaluator(qrel, names | {"recip_rank", "map", "ndcg"}).evaluate(run)
    out = {}
    for k in w["k"]:
        for ours, theirs in (
            ("precision", "P"),
            ("recall", "recall"),
            ("ndcg", "ndcg_cut"),
            ("ap", "map_cut"),
            ("hit_rate", "success"),
        ):
            out[f"{ours}@{k}"] = _mean([v[f"{theirs}_{k}"] for v in per.values()])
    out["rr"] = _mean([v["recip_rank"] for v in per.values()])
    out["ap"] = _mean([v["map"] for v in per.values()])
    out["ndcg"] = _mean([v["ndcg"] for v in per.values()])
    return out


def ranx(w: Workload) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels.from_dict({u: {i: int(g) for i, g in t.items()} for u, t in w["truth"].items()})
    run = Run.from_dict({u: {i: float(s) for i, s in r} for u, r in w["recs"].items() if r})
    names = {"precision": "precision", "recall": "recall", "ndcg": "ndcg", "ap": "map"}
    names |= {"rr": "mrr", "hit_rate": "hit_rate", "hits": "hits", "f1": "f1"}
    metrics = [f"{theirs}@{k}" for theirs in names.values() for k in w["k"]]
    got = evaluate(qrels, run, metrics, make_comparable=True)
    out = {
        f"{ours}@{k}": float(got[f"{theirs}@{k}"]) for ours, theirs in names.items() for k in w["k"]
    }
    return out


def torchmetrics(w: Workload) -> dict[str, float]:
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


def rectools(w: Workload) -> dict[str, float]:
    import pandas as pd
    from rectools import Columns
    from rectools.metrics import MAP, MRR, NDCG, HitRate, Precision, Recall, calc_metrics

    rows = []
    for u, r in w["recs"].items():
        # rectools reads ranks: score descending, equal scores by item id ascending (the
        # ids are digit strings: numbers, as receval reads them, issue #30)
        ranked = sorted(r, key=lambda p: (-p[1], int(p[0])))
        rows += [(u, item, n) for n, (item, _) in enumerate(ranked, start=1)]
    reco = pd.DataFrame(rows, columns=[Columns.User, Columns.Item, Columns.Rank])
    pairs = [(u, i) for u, t in w["truth"].items() for i in t]
    interactions = pd.DataFrame(pairs, columns=[Columns.User, Columns.Item])
    metrics = {}
    for k in w["k"]:
        metrics |= {
            f"precision@{k}": Precision(k=k),
            f"recall@{k}": Recall(k=k),
            f"ndcg@{k}": NDCG(k=k),
            f"ap@{k}": MAP(k=k),
            f"rr@{k}": MRR(k=k),
            f"hit_rate@{k}": HitRate(k=k),
        }
    got = calc_metrics(metrics, reco=reco, interactions=interactions)
    return {name: float(v) for name, v in got.items()}


def replay(w: Workload) -> dict[str, float]:
    import pandas as pd
    from replay.metrics import MAP, MRR, NDCG, HitRate, Precision, Recall

    # ids as integers, as RePlay users hold them: RePlay orders equal scores by the
    # item id's own order (descending), so string ids would be compared as text
    # (receval: ties="item_str_desc"); the digit strings are numbers for receval (#30)
    rows = [(int(u), int(i), float(s)) for u, r in w["recs"].items() for i, s in r]
    recs = pd.DataFrame(rows, columns=["query_id", "item_id", "rating"])
    pairs = [(int(u), int(i)) for u, t in w["truth"].items() for i in t]
    truth = pd.DataFrame(pairs, columns=["query_id", "item_id"])
    out = {}
    for ours, cls in (
        ("precision", Precision),
        ("recall", Recall),
        ("ndcg", NDCG),
        ("ap", MAP),
        ("rr", MRR),
        ("hit_rate", HitRate),
    ):
        got = cls(topk=list(w["k"]))(recs, truth)
        for k in w["k"]:
            out[f"{ours}@{k}"] = float(got[f"{cls.__name__}@{k}"])
    return out


def mllib(w: Workload) -> dict[str, float]:
    from pyspark.mllib.evaluation import RankingMetrics
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    users = sorted(set(w["recs"]) | set(w["truth"]))  # a full outer join
    pairs = [(_ordered(w["recs"].get(u, [])), list(w["truth"].get(u, {}))) for u in users]
    m = RankingMetrics(spark.sparkContext.parallelize(pairs, 2))
    out = {"ap": m.meanAveragePrecision}
    for k in w["k"]:
        out[f"precision@{k}"] = m.precisionAt(k)
        out[f"recall@{k}"] = m.recallAt(k)
        out[f"ap@{k}"] = m.meanAveragePrecisionAt(k)
        out[f"ndcg@{k}"] = m.ndcgAt(k)
    spark.stop()
    return out


def recbole(w: Workload) -> dict[str, float]:
    import torch
    from recbole.evaluator.collector import DataStruct
    from recbole.evaluator.metrics import MAP, MRR, NDCG, Hit, Precision, Recall

    ks = list(w["k"])
    top = max(ks)
    items = sorted({i for r in w["recs"].values() for i, _ in r})
    col = {i: n for n, i in enumerate(items)}
    users = sorted(u for u, t in w["truth"].items() if t)  # the test set's users
    scores = torch.full((len(users), max(len(items), top)), -math.inf)
    for n, u in enumerate(users):
        for i, s in w["recs"].get(u, []):
            scores[n, col[i]] = float(s)
    _, idx = torch.topk(scores, top, dim=-1)  # RecBole's full-sort top-k
    hits = torch.zeros_like(idx)
    for n, u in enumerate(users):
        listed = {col[i] for i, _ in w["recs"].get(u, [])}
        truth = {col[i] for i in w["truth"][u] if i in col}
        for j in range(top):
            c = int(idx[n, j])
            hits[n, j] = int(c in listed and c in truth)
    pos_len = torch.tensor([[len(w["truth"][u])] for u in users])
    data = DataStruct()
    data.set("rec.topk", torch.cat([hits, pos_len], dim=1))
    config = {"topk": ks, "metric_decimal_place": 15}
    out = {}
    for ours, cls, theirs in (
        ("precision", Precision, "precision"),
        ("recall", Recall, "recall"),
        ("ndcg", NDCG, "ndcg"),
        ("ap", MAP, "map"),
        ("rr", MRR, "mrr"),
        ("hit_rate", Hit, "hit"),
    ):
        got = cls(config).calculate_metric(data)
        for k in ks:
            out[f"{ours}@{k}"] = float(got[f"{theirs}@{k}"])
    return out


def recommenders(w: Workload) -> dict[str, float]:
    import pandas as pd
    from recommenders.evaluation import python_evaluation as E

    true = pd.DataFrame(
        [(u, i, float(g)) for u, t in w["truth"].items() for i, g in t.items()],
        columns=["userID", "itemID", "rating"],
    )
    pred = pd.DataFrame(
        [(u, i, float(s)) for u, r in w["recs"].items() for i, s in r],
        columns=["userID", "itemID", "prediction"],
    )
    out = {}
    for k in w["k"]:
        out[f"precision@{k}"] = E.precision_at_k(true, pred, k=k)
        out[f"recall@{k}"] = E.recall_at_k(true, pred, k=k)
        out[f"ap@{k}"] = E.map_at_k(true, pred, k=k)
        out[f"ndcg@{k}"] = E.ndcg_at_k(true, pred, k=k)  # averaged over the truth's users
    return {name: float(v) for name, v in out.items()}


def lenskit(w: Workload) -> dict[str, float]:
    import numpy as np
    from lenskit.data import ItemList
    from lenskit.metrics import NDCG, Hit, Precision, Recall, RecipRank
    from lenskit.metrics.ranking import AveragePrecision

    out = {}
    # the lists measured: users with a list and test items (AveragePrecision divides
    # by zero on an empty test list)
    users = sorted(u for u, r in w["recs"].items() if r and w["truth"].get(u))
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
                test = ItemList(item_ids=list(w["truth"].get(u, {})))
                values.append(float(metric.measure_list(recs, test)))
            out[f"{ours}@{k}"] = float(np.nanmean(values)) if values else math.nan
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


TOOLS = {
    f.__name__: f
    for f in (
        trec_eval,
        ranx,
        torchmetrics,
        rectools,
        replay,
        mllib,
        recbole,
        recommenders,
        lenskit,
    )
}

if __name__ == "__main__":
    tool, src, dst = sys.argv[1:4]
    with open(src) as fh:
        workload = json.load(fh)
    result = TOOLS[tool](workload)
    with open(dst, "w") as fh:
        json.dump(result, fh)
