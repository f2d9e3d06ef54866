"""The public entry points: :func:`evaluate` and :func:`score`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from ._version import __version__
from .engines import numpy_engine
from .errors import PolicyError, ReceValError, plain
from .io.tables import Columns, read_recs, read_truth
from .result import Result
from .spec import MetricSpec, parse_metrics

__all__ = ["evaluate", "score"]

EmptyTruth = Literal["skip", "zero", "error"]
MissingRecs = Literal["zero", "skip", "error"]
Duplicates = Literal["error", "keep"]


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ReceValError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return str(value)


def evaluate(
    recommendations: Any,
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    threshold: float = 1,
    empty_truth: EmptyTruth = "skip",
    missing_recs: MissingRecs = "zero",
    duplicates: Duplicates = "error",
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    rank_col: str = "rank",
    relevance_col: str = "relevance",
) -> Result:
    """Evaluate recommendation lists against the truth.

    Args:
        recommendations: a long table (pandas, polars or pyarrow) with a user,
            an item and a rank (1 = best) or a score (higher = better) column,
            or a mapping ``user -> sequence of items``, best first. With only
            scores, ties are broken by item id ascending.
        truth: a table (user, item, optional relevance grade), or a mapping
            ``user -> iterable of items`` or ``user -> {item: grade}``.
        metrics: one metric string or several, e.g. ``"ndcg@10"``,
            ``["precision@5,10", "ap@10[denominator=relevant]"]``.
        threshold: an item is relevant when its grade is >= threshold (and > 0).
        empty_truth: users without a relevant item (also users with
            recommendations but no truth): ``skip`` (NaN, left out of the
            means and counted), ``zero`` (scored 0) or ``error``.
        missing_recs: users with relevant items but no recommendations:
            ``zero`` (an empty list: every metric 0), ``skip`` or ``error``.
        duplicates: ``error``, or ``keep``: the first occurrence of an item in
            a list, the largest grade of a (user, item) pair in the truth.
        user_col, item_col, score_col, rank_col, relevance_col: column names.

    Returns:
        A :class:`Result`: ``summary`` (metric → mean), ``per_user``,
        ``counts``, ``parameters``.

    Example:
        >>> res = evaluate({"u1": [1, 6, 8]}, {"u1": [1, 2, 3, 4, 5, 6]}, "precision@3")
        >>> round(res.summary["precision@3"], 4)
        0.6667
    """
    empty_truth = _choice("empty_truth", empty_truth, ("skip", "zero", "error"))  # type: ignore[assignment]
    missing_recs = _choice("missing_recs", missing_recs, ("zero", "skip", "error"))  # type: ignore[assignment]
    duplicates = _choice("duplicates", duplicates, ("error", "keep"))  # type: ignore[assignment]
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise ReceValError(f"threshold must be a number; got {threshold!r}") from None
    if not math.isfinite(threshold):
        raise ReceValError(f"threshold must be a finite number; got {threshold!r}")
    specs = parse_metrics(metrics)
    cols = Columns(user_col, item_col, score_col, rank_col, relevance_col)
    recs = read_recs(recommendations, cols)
    tr = read_truth(truth, cols)

    prepared = numpy_engine.prepare(
        recs,
        tr,
        threshold=threshold,
        duplicates=duplicates,
        need_ties=any(s.definition.needs_ties for s in specs),
    )
    values = numpy_engine.compute(prepared, specs)
    evaluated, counts = _apply_policies(prepared, values, empty_truth, missing_recs)
    counts = {**prepared.counts, **counts}

    names = [str(s) for s in specs]
    summary: dict[str, float] = {}
    undefined: dict[str, int] = {}
    for j, name in enumerate(names):
        v = values[j, evaluated]
        ok = ~np.isnan(v)
        summary[name] = float(np.sum(v[ok]) / ok.sum()) if ok.any() else math.nan
        if (~ok).any():
            undefined[name] = int((~ok).sum())
    counts["undefined"] = undefined

    index = pd.Index(prepared.user_ids, name="user")
    per_user = pd.DataFrame(values.T, index=index, columns=names, copy=False)
    parameters = {
        "threshold": threshold,
        "empty_truth": empty_truth,
        "missing_recs": missing_recs,
        "duplicates": duplicates,
        "ties": "score descending, then item id ascending",
        "engine": "numpy",
    }
    return Result(
        summary=summary,
        per_user=per_user,
        counts=counts,
        parameters=parameters,
        metrics=specs,
        notes=prepared.notes,
        version=__version__,
    )


def _apply_policies(
    p: numpy_engine.Prepared, values: np.ndarray, empty_truth: str, missing_recs: str
) -> tuple[np.ndarray, dict[str, Any]]:
    """Set values of users without relevant items / without lists by policy; count them."""
    no_rel = p.n_relevant == 0
    groups = {
        "no_truth": no_rel & ~p.in_truth,
        "no_relevant_items": no_rel & p.in_truth,
    }
    no_recs = ~no_rel & ~p.has_recs
    skipped: dict[str, int] = {"no_truth": 0, "no_relevant_items": 0, "no_recommendations": 0}
    zero: dict[str, int] = {"no_truth": 0, "no_relevant_items": 0, "no_recommendations": 0}
    out = np.ones(len(p.user_ids), dtype=bool)

    def fail(mask: np.ndarray, what: str, option: str) -> None:
        user = plain(p.user_ids[np.flatnonzero(mask)[0]])
        raise PolicyError(
            f"user {user!r} {what} ({option}='error'; {int(mask.sum())} such users in all)"
        )

    if missing_recs == "error" and no_recs.any():
        fail(no_recs, "has relevant items but no recommendations", "missing_recs")
    if empty_truth == "error":
        for why, mask in groups.items():
            if mask.any():
                text = (
                    "has recommendations but no truth"
                    if why == "no_truth"
                    else ("has no relevant item in the truth")
                )
                fail(mask, text, "empty_truth")
    for why, mask in groups.items():
        if empty_truth == "skip":
            values[:, mask] = np.nan
            out &= ~mask
            skipped[why] = int(mask.sum())
        else:
            values[:, mask] = 0.0
            zero[why] = int(mask.sum())
    if missing_recs == "skip":
        values[:, no_recs] = np.nan
        out &= ~no_recs
        skipped["no_recommendations"] = int(no_recs.sum())
    else:
        zero["no_recommendations"] = int(no_recs.sum())
    counts = {
        "users": len(p.user_ids),
        "users_in_truth": int(p.in_truth.sum()),
        "users_with_recommendations": int(p.has_recs.sum()),
        "users_evaluated": int(out.sum()),
        "users_skipped": skipped,
        "users_scored_zero": zero,
    }
    return out, counts


def score(
    metric: str,
    ranked: Sequence[Any],
    relevant: Iterable[Any] | Mapping[Any, float],
    *,
    scores: Sequence[float] | None = None,
    threshold: float = 1,
) -> float:
    """One metric for one list: a quick check.

    Args:
        metric: one metric string, e.g. ``"ndcg@10"``.
        ranked: the list, best first (with ``scores``: in any order, ordered by
            score descending, ties by item id ascending).
        relevant: the relevant items, or a mapping item → grade.
        scores: optional scores parallel to ``ranked`` (``auc`` counts ties ½).
        threshold: the grade from which an item is relevant.

    Returns:
        The metric's value; NaN when it is undefined (no relevant item).

    Example:
        >>> round(score("ndcg@3", ranked=[1, 2, 3, 4, 5], relevant={2, 4, 6}), 4)
        0.2961
    """
    specs = parse_metrics(metric)
    if len(specs) != 1:
        raise ReceValError(f"score() takes one metric; {metric!r} names {len(specs)}")
    user = 0
    truth = {user: dict(relevant) if isinstance(relevant, Mapping) else list(relevant)}
    if scores is None:
        recs: Any = {user: list(ranked)}
    else:
        if len(scores) != len(ranked):
            raise ReceValError(
                f"scores has {len(scores)} values but ranked has {len(ranked)} items"
            )
        recs = pd.DataFrame({"user": user, "item": list(ranked), "score": list(scores)})
    res = evaluate(recs, truth, specs, threshold=threshold)
    return float(res.per_user.iloc[0, 0])
