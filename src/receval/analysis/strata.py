"""Results per propensity stratum, as Cornac's ``PropensityStratifiedEvaluation`` reports them.

Jadidinejad, Macdonald & Ounis (2021, *The Simpson's paradox in the offline evaluation
of recommendation systems*, TOIS) split the test pairs by the propensity of their item
into strata of equal width (Q1 the least exposed, ...), and evaluate each stratum's pairs
alone: a system better overall may be worse in every stratum. :func:`propensity_strata`
does that with :func:`receval.evaluate`: the truth's pairs binned by their propensity
(``propensities=``, as for the weighted metrics, e.g. ``"popularity"`` with ``train=``),
each bin evaluated against the same lists. A user whose truth has no pair in a stratum
is not in that stratum's truth (``no_truth``, default: skipped), as Cornac skips users
without a positive item.

Example:
    >>> import receval
    >>> table = propensity_strata(
    ...     {"u1": [1, 2], "u2": [3, 1]}, {"u1": [1, 3], "u2": [3]}, ["recall@1"],
    ...     propensities={1: 0.9, 3: 0.1}, n_strata=2,
    ... )
    >>> table.index.tolist(), table["pairs"].tolist(), table["recall@1"].tolist()
    (['all', 'Q1', 'Q2'], [3, 2, 1], [0.75, 0.5, 1.0])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from receval.errors import OptionError, ReceValError
from receval.evaluation.api import evaluate
from receval.io.propensities import DEFAULT_GAMMA, Propensities
from receval.io.tables import read_truth
from receval.metrics.spec import MetricSpec
from receval.records import Columns

__all__ = ["propensity_strata"]


def propensity_strata(
    recommendations: Any,
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    propensities: Any,
    n_strata: int = 2,
    train: Any = None,
    propensity_gamma: float = DEFAULT_GAMMA,
    **kwargs: Any,
) -> pd.DataFrame:
    """Each metric over all the truth and within each propensity stratum.

    The truth's (user, item) pairs are binned by their propensity p into
    ``n_strata`` bins of equal width between the smallest and the largest p
    (Cornac's ``np.digitize`` over ``arange(min, max + w, w)``, the largest p in
    the last bin): ``Q1`` holds the least exposed pairs. Each stratum is
    evaluated alone, ``evaluate(recommendations, its pairs, metrics, ...)``.

    Args:
        recommendations, truth, metrics: as for :func:`receval.evaluate` (the
            truth a table or a mapping, in memory).
        propensities: as for :func:`receval.evaluate`: a table, a mapping, or
            ``"popularity"`` (with ``train``); every truth pair needs one.
        n_strata: the number of strata (>= 1).
        train, propensity_gamma: as for :func:`receval.evaluate`.
        **kwargs: any other keyword of :func:`receval.evaluate`.

    Returns:
        A DataFrame indexed by ``all``, ``Q1``, ..., ``Qn``: ``pairs`` (truth
        rows), ``users`` (evaluated), ``p_low`` and ``p_high`` (the stratum's
        smallest and largest propensity), then one column per metric (the mean).
    """
    if not isinstance(n_strata, int) or isinstance(n_strata, bool) or n_strata < 1:
        raise OptionError("n_strata", n_strata, expected="a whole number >= 1")
    cols = Columns(
        user=kwargs.get("truth_user_col") or kwargs.get("user_col"),
        item=kwargs.get("truth_item_col") or kwargs.get("item_col"),
        relevance=kwargs.get("relevance_col"),
    )
    data = read_truth(truth, cols)
    known = Propensities(propensities, train=train, gamma=propensity_gamma, cols=cols)
    p = known.of(data)
    if np.isnan(p).any():
        j = int(np.flatnonzero(np.isnan(p))[0])
        raise ReceValError(
            f"no propensity for the truth's pair (user {data.users[j]!r}, item "
            f"{data.items[j]!r}): propensity_strata needs one for every pair"
        )
    frame = pd.DataFrame({"user": data.users, "item": data.items})
    if data.graded:
        frame["relevance"] = data.grades
    low, high = (float(p.min()), float(p.max())) if len(p) else (0.0, 0.0)
    width = (high - low) / n_strata
    if width > 0:
        edges = np.arange(low, high + width, width)[: n_strata + 1]
        stratum = np.minimum(np.digitize(p, edges), n_strata)
    else:
        stratum = np.ones(len(p), dtype=np.int64)
    kwargs = {k: v for k, v in kwargs.items() if k != "relevance_col"}
    kwargs |= {"truth_user_col": "user", "truth_item_col": "item"}  # the strata's own frames
    if data.graded:
        kwargs["relevance_col"] = "relevance"
    rows = {}
    parts = [("all", np.ones(len(p), dtype=bool))]
    parts += [(f"Q{q}", stratum == q) for q in range(1, n_strata + 1)]
    for name, keep in parts:
        res = evaluate(recommendations, frame[keep], metrics, train=train, **kwargs)
        rows[name] = {
            "pairs": int(keep.sum()),
            "users": int(res.counts["users_evaluated"]),
            "p_low": float(p[keep].min()) if keep.any() else float("nan"),
            "p_high": float(p[keep].max()) if keep.any() else float("nan"),
            **res.summary,
        }
    return pd.DataFrame.from_dict(rows, orient="index")
