"""Run another tool on a workload with graded truth: negative and zero grades,
and LensKit's graded nDCG (issue #34 point 6, "grades at the edges").

    python grades_runners.py TOOL IN.json OUT.json

IN.json as ``runners.py``'s (``{"recs": {user: [[item, score], ...]}, "truth":
{user: {item: grade}}, "k": [...]}``). ``TOOL`` is a tool of ``runners.py``
(each given the truth as its users would give it: the tools that read no
grades are given the rows only), or ``lenskit_graded``: LensKit's
``NDCG(k, gain="rating")`` with the grades as the test items' ``rating``
field, named ``ndcg@k[gain=linear]`` (and ``ndcg[gain=linear]`` for the
whole list). Runs under the tool's interpreter.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runners import TOOLS, _ordered

Workload = dict[str, Any]


def lenskit_graded(w: Workload) -> dict[str, float]:
    """LensKit 2025.8's NDCG(gain='rating'): lenskit/metrics/ranking/_dcg.py
    (``_graded_dcg``; the ideal ``gains.nlargest(n)`` of every test row)."""
    import numpy as np
    from lenskit.data import ItemList
    from lenskit.metrics.ranking import NDCG

    warnings.simplefilter("ignore")
    users = sorted(u for u, r in w["recs"].items() if r and w["truth"].get(u))
    out = {}
    for k in [*w["k"], None]:
        metric = NDCG(k, gain="rating")
        values = []
        for u in users:
            recs = ItemList(item_ids=_ordered(w["recs"][u]), ordered=True)
            truth = w["truth"][u]
            test = ItemList(item_ids=list(truth), rating=[float(g) for g in truth.values()])
            values.append(float(metric.measure_list(recs, test)))
        name = "ndcg[gain=linear]" if k is None else f"ndcg@{k}[gain=linear]"
        out[name] = float(np.nanmean(values)) if values else math.nan
    return out


RUN = {**TOOLS, "lenskit_graded": lenskit_graded}

if __name__ == "__main__":
    tool, src, dst = sys.argv[1:4]
    with open(src) as fh:
        workload = json.load(fh)
    with open(dst, "w") as fh:
        json.dump(RUN[tool](workload), fh)
