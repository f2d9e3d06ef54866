"""Sampled evaluation: a metric's full-catalog estimate from the sampled ranks.

When each list ranks a user's held-out items among ``m`` sampled negatives
(not the whole catalog of ``N = catalog_size`` items), ``correction=`` turns
the ranks into an estimate of the full-catalog metric (Krichene & Rendle,
KDD 2020; the tables and their definitions are in
:mod:`receval.metrics.kernels.sampled`). Per user:

- each relevant item's *sampled rank* is 1 + the non-relevant items listed
  above it (the other relevant items are not counted: each held-out item is
  ranked against the negatives only);
- ``m`` is the non-relevant items of the list (the user's sampled negatives);
- the value is the mean of ``t_m[r]`` over the user's relevant items, with
  ``t_m`` the correction's table for (metric, k, N, m).

The list must hold every candidate: a user with a relevant item missing from
the list (its sampled rank is unknown), or with no negative, gets NaN (counted
in ``counts["undefined"]``). One table per distinct ``m`` (usually one), so
the work is one lookup per relevant item.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from receval.errors import MetricError
from receval.metrics.kernels.batch import Batch
from receval.metrics.kernels.ranking import ratio
from receval.metrics.kernels.sampled import correction_table

__all__ = ["estimate"]

#: the parameters a metric may keep with a correction: those that do not
#: change its value for one relevant item (None: any value)
NEUTRAL: Mapping[str, Mapping[str, tuple[Any, ...] | None]] = {
    "precision": {"denominator": ("k",)},
    "recall": {"denominator": ("relevant", "min_k_relevant")},
    "ap": {"denominator": ("min_k_relevant", "relevant")},
    "ndcg": {"gain": None, "grades": None, "ideal": ("relevant",), "discount": ("log",)},
}


def estimate(b: Batch, k: int | None, metric: str, correction: str, gamma: float) -> np.ndarray:
    """Per user, the mean over its relevant items of the correction's estimate
    of ``metric`` at the item's sampled rank (module docstring); NaN for a user
    whose relevant items are not all listed, or whose list has no negative."""
    n_catalog = b.catalog_size
    if n_catalog is None:  # pragma: no cover - the registry requires catalog_size
        raise MetricError(f"correction={correction} needs catalog_size=")
    h = b.hits
    listed = np.diff(h.offsets)
    negatives = b.n - listed
    too_big = negatives >= n_catalog
    if too_big.any():
        raise MetricError(
            f"catalog_size={n_catalog} is not larger than a list's sampled negatives "
            f"({int(negatives[too_big].max())}): give the size of the full catalog"
        )
    rank = h.pos - b.hit_rank() + 2  # 1 + the non-relevant items above
    per_cell = negatives[h.user]
    values = np.zeros(len(rank))
    for m in np.unique(per_cell):
        if m < 1:
            continue
        table = correction_table(metric, k, int(n_catalog), int(m), correction, gamma)
        at = per_cell == m
        values[at] = table[rank[at]]
    out = ratio(np.bincount(h.user, weights=values, minlength=b.size), listed)
    out[(listed < b.n_relevant) | (negatives < 1)] = math.nan
    return out
