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

__all__ = ["RANGE", "estimate", "range_notes"]

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


#: The range of every metric a correction estimates (hit rate, recall,
#: precision, ndcg, ap, rr: each between 0 and 1).
RANGE = (0.0, 1.0)


def undefined_notes(counts: Mapping[str, Any], specs: Any) -> list[str]:
    """A note for each corrected estimate undefined for some users evaluated
    (counted in ``counts["undefined"]``): why, since no other count says it.

    Example:
        >>> from receval.metrics.spec import parse_metric
        >>> spec = parse_metric("recall@10[correction=bv]")
        >>> counts = {"users_evaluated": 4, "undefined": {str(spec): 1}}
        >>> undefined_notes(counts, [spec])[0].split(":")[0]
        'recall@10[correction=bv] is undefined (NaN, left out of the mean) for 1 of 4 users'
    """
    notes = []
    evaluated = int(counts.get("users_evaluated", 0))
    for spec in specs:
        if dict(spec.params).get("correction", "none") == "none":
            continue
        nan = int(counts.get("undefined", {}).get(str(spec), 0))
        if nan and evaluated:
            notes.append(
                f"{spec} is undefined (NaN, left out of the mean) for {nan} of {evaluated} users: "
                "a corrected estimate needs every held-out item in the sampled list and at least "
                "one sampled negative beside it"
            )
    return notes


def range_notes(summary: Mapping[str, float], specs: Any) -> list[str]:
    """A note for each corrected estimate (``correction=`` not ``none``) whose
    mean lies outside its metric's range (:data:`RANGE`): the correction's
    table extrapolates from the sampled ranks, so nothing holds the estimate
    within [0, 1] (``min_bias`` beyond about 20 negatives is ill-posed and
    oscillates: hit rate 24.2). The value is left as computed, never clipped:
    clipping would hide how far off the estimator is, and bias it.

    Example:
        >>> from receval.metrics.spec import parse_metric
        >>> spec = parse_metric("hit_rate@10[correction=min_bias]")
        >>> range_notes({str(spec): 24.2}, [spec])[0].split(";")[0]
        'hit_rate@10[correction=min_bias] = 24.2 is outside the range of hit_rate, [0, 1]'
    """
    notes = []
    low, high = RANGE
    for spec in specs:
        correction = dict(spec.params).get("correction", "none")
        value = summary.get(str(spec))
        if correction == "none" or value is None or value != value or low <= value <= high:
            continue  # NaN: undefined, counted elsewhere
        advice = (
            "; min_bias is ill-posed beyond about 20 negatives: use correction=bv"
            if correction == "min_bias"
            else ""
        )
        notes.append(
            f"{spec} = {value:.4g} is outside the range of {spec.name}, [0, 1]; "
            f"correction={correction} extrapolates from the sampled ranks and nothing "
            f"holds its estimate in that range (left as computed, not clipped){advice}"
        )
    return notes
