"""A team's own metric, declared through receval's public API (docs/custom-metrics.md).

receval evaluate ... -m cold_share@10 --train TRAIN --plugin examples/team_metrics.py
"""

import numpy as np

import receval
from receval.metrics.kernels.beyond import top_of


def at_least_one(x: int) -> bool:
    return x >= 1


@receval.metric(
    "cold_share",
    description="share of the top k held by cold items (fewer than min_users training users)",
    formula="|{i ≤ min(k, n) : pop(i) < min_users}| / min(k, n)",
    params=(
        receval.ParamDef(
            "min_users", int, 50, "an item is cold below this many distinct training users",
            check=at_least_one, check_text="an integer >= 1",
        ),
    ),
    needs=("train",),  # pop(i): the distinct training users of item i
    needs_truth=False,  # a property of the list alone
    higher_is_better=False,
    undefined="empty lists (NaN, left out of the mean)",
)
def cold_share(batch, k, *, min_users):
    items, filled, length = top_of(batch, k)  # the top k's item indexes, which slots hold one
    cold = (batch.items.pop < min_users)[items] & filled
    out = np.full(batch.size, np.nan)
    np.divide(cold.sum(axis=1), length, out=out, where=length > 0)
    return out
