"""Run RecBole's beyond-accuracy metrics on a workload (issue #34, point 6).

    python recbole_beyond_runner.py IN.json OUT.json

IN.json: ``{"items": [[item, ...], ...]`` (each user's top list, every one
``max(k)`` long, RecBole's ``rec.items``), ``"train": [item, ...]`` (the item
of each training row, repeats included: what ``data.count_items`` counts),
``"num_items": n`` (RecBole's ``data.num_items``, its ``[PAD]`` item
included), ``"k": [1, 3, ...]``, ``"tail_ratio": 0.1}``. OUT.json:
``{"itemcoverage@k": v, "averagepopularity@k": v, "shannonentropy@k": v,
"giniindex@k": v, "tailpercentage@k": v, ...}``: what each metric class's
``calculate_metric`` computes, without its rounding to
``metric_decimal_place`` (the classes' own methods, called as
``calculate_metric`` calls them). Runs under RecBole's interpreter.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any


def run(w: dict[str, Any]) -> dict[str, float]:
    import numpy as np
    import torch
    from recbole.evaluator.collector import DataStruct
    from recbole.evaluator.metrics import (
        AveragePopularity,
        GiniIndex,
        ItemCoverage,
        ShannonEntropy,
        TailPercentage,
    )

    ks = list(w["k"])
    data = DataStruct()
    data.set("rec.items", torch.tensor(w["items"], dtype=torch.int64))
    data.set("data.count_items", Counter(int(i) for i in w["train"]))
    data.set("data.num_items", int(w["num_items"]))
    config = {"topk": ks, "metric_decimal_place": 15, "tail_ratio": w.get("tail_ratio")}
    out: dict[str, float] = {}

    cov = ItemCoverage(config)
    matrix, num_items = cov.used_info(data)
    gini = GiniIndex(config)
    ent = ShannonEntropy(config)
    for k in ks:
        out[f"itemcoverage@{k}"] = float(cov.get_coverage(matrix[:, :k], num_items))
        out[f"giniindex@{k}"] = float(gini.get_gini(matrix[:, :k], num_items))
        out[f"shannonentropy@{k}"] = float(ent.get_entropy(matrix[:, :k]))

    pop = AveragePopularity(config)
    matrix, count = pop.used_info(data)
    means = pop.metric_info(pop.get_pop(matrix, count)).mean(axis=0)
    out.update({f"averagepopularity@{k}": float(means[k - 1]) for k in ks})

    tail = TailPercentage(config)
    matrix, count = tail.used_info(data)
    means = tail.metric_info(tail.get_tail(matrix, count)).mean(axis=0)
    out.update({f"tailpercentage@{k}": float(means[k - 1]) for k in ks})

    # the rounded numbers RecBole reports agree with the unrounded ones
    for metric in (cov, gini, ent, pop, tail):
        for name, value in metric.calculate_metric(data).items():
            assert abs(value - out[name]) <= 1e-14, (name, value, out[name])
    assert np.isfinite(list(out.values())).all()
    return out


if __name__ == "__main__":
    src, dst = sys.argv[1:3]
    with open(src) as fh:
        workload = json.load(fh)
    with open(dst, "w") as fh:
        json.dump(run(workload), fh)
