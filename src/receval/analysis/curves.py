"""Curves (SPEC §7): metrics over cut-offs, interpolated precision-recall, global ROC.

Curves are data: each function returns a :class:`pandas.DataFrame` (and ROC
its AUC); pictures come from the report.

* :func:`curve` — any metrics at every cut-off 1..k, averaged over users, from
  one :func:`receval.evaluate` call (one pass of the engine).
* :func:`pr_curve` — the 11-point interpolated precision-recall curve
  (trec_eval's ``iprec_at_recall``).
* :func:`roc` — a global ROC curve over all scored (user, item) pairs and its
  AUC.

Example:
    >>> recs = {"u1": [1, 6, 8], "u2": [1, 2, 3, 4, 5]}
    >>> truth = {"u1": [1, 2, 3, 4, 5, 6], "u2": [2, 4, 6]}
    >>> curve(recs, truth, k=3).round(4).to_dict("list")
    {'precision': [0.5, 0.75, 0.5], 'recall': [0.0833, 0.3333, 0.3333]}
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from receval.errors import InputError, MetricError, OptionError, ReceValError, option
from receval.evaluation.api import evaluate
from receval.evaluation.options import EvalOptions, split_kwargs
from receval.ids import unify
from receval.io.tables import read_recs, read_truth
from receval.metrics.spec import MetricSpec, parse_metric
from receval.records import Columns

__all__ = [
    "RECALL_LEVELS",
    "curve",
    "interpolated_precision",
    "pr_curve",
    "roc",
    "roc_auc",
    "roc_points",
]

#: The 11 standard recall levels 0, 0.1, ..., 1.
RECALL_LEVELS = np.arange(11) / 10


def _cutoff(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ReceValError(f"k must be a positive integer; got {k!r}")
    return int(k)


def curve(
    recommendations: Any,
    truth: Any,
    *,
    k: int = 10,
    metrics: str | Iterable[str | MetricSpec] = ("precision", "recall"),
    options: EvalOptions | None = None,
    **evaluate_kwargs: Any,
) -> pd.DataFrame:
    """Metrics at every cut-off 1..k, each the mean over users (as ``evaluate``).

    All ``metric@j`` for j = 1..k are computed by one :func:`receval.evaluate`
    call, so the engine reads and ranks the input once. With the defaults this is
    the precision-recall curve of SPEC §7: ``precision@j = hits@j / j`` and
    ``recall@j = hits@j / R`` averaged over users.

    Args:
        recommendations, truth: as for :func:`receval.evaluate`.
        k: the largest cut-off.
        metrics: metric names without a cut-off, with parameters if any
            (``"ndcg[gain=exp]"``).
        options, **evaluate_kwargs: the evaluation's :class:`~receval.EvalOptions`
            and option keywords on top of it (``threshold``, ``empty_truth``,
            column names ...), and the inputs of :func:`receval.evaluate`
            (``train``, ...).

    Returns:
        One row per cut-off (index ``k`` = 1..k), one column per metric
        (its canonical name without the cut-off).

    Example:
        >>> c = curve({"u": [1, 2, 3]}, {"u": [2]}, k=3, metrics=["rr", "hit_rate"])
        >>> c.index.tolist(), c.to_dict("list")
        ([1, 2, 3], {'rr': [0.0, 0.5, 0.5], 'hit_rate': [0.0, 1.0, 1.0]})
    """
    k = _cutoff(k)
    names = [metrics] if isinstance(metrics, (str, MetricSpec)) else list(metrics)
    if not names:
        raise MetricError("no metric given")
    base: list[MetricSpec] = []
    for m in names:
        spec = m if isinstance(m, MetricSpec) else parse_metric(m)
        if spec.k is not None:
            raise MetricError(
                f"{m!r}: curve() metrics take no cut-off; the cut-offs are 1..k (k={k})"
            )
        base.append(spec)
    base = list(dict.fromkeys(base))
    specs = [s.with_k(j) for s in base for j in range(1, k + 1)]
    opts, inputs = split_kwargs(options, evaluate_kwargs, caller="curve")
    res = evaluate(recommendations, truth, specs, options=opts, **inputs)
    data = {str(s): [res.summary[str(s.with_k(j))] for j in range(1, k + 1)] for s in base}
    return pd.DataFrame(data, index=pd.RangeIndex(1, k + 1, name="k"))


def _longest_list(recommendations: Any, cols: Columns) -> int:
    recs = read_recs(recommendations, cols)
    if len(recs.users) == 0:
        return 0
    _, counts = np.unique(recs.users, return_counts=True)
    return int(counts.max())


def interpolated_precision(
    precision: np.ndarray,
    recall: np.ndarray,
    levels: np.ndarray = RECALL_LEVELS,
    *,
    relevant: np.ndarray | None = None,
) -> np.ndarray:
    """Interpolated precision of each user (row) at each recall level.

    ``iprec(r) = max { precision@j : j ≥ j_r }`` where ``j_r`` is the first
    cut-off (column) reaching level r; 0 when no cut-off reaches it. Without
    ``relevant``, level r is reached when ``recall@j ≥ r``. With ``relevant``
    (each user's R), trec_eval's rule: when ``hits@j ≥ int(r·R + 0.5)``, r·R
    rounded half up (a level counts as reached when short by less than half a
    relevant item). ``precision`` and ``recall`` are (users × cut-offs) arrays;
    the result is (users × levels).

    Example:
        >>> p = np.array([[1.0, 0.5, 2 / 3]])
        >>> r = np.array([[0.5, 0.5, 1.0]])
        >>> interpolated_precision(p, r, np.array([0.0, 0.5, 0.6, 1.0])).round(4)
        array([[1.    , 1.    , 0.6667, 0.6667]])
    """
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    users = np.arange(p.shape[0])
    if p.shape[1] == 0:
        return np.zeros((p.shape[0], len(levels)))
    best_after = np.maximum.accumulate(p[:, ::-1], axis=1)[:, ::-1]  # max over j' >= j
    if relevant is not None:
        n_rel = np.asarray(relevant, dtype=np.float64)[:, None]
        hits = np.rint(r * n_rel)
    out = np.zeros((p.shape[0], len(levels)))
    for li, level in enumerate(levels):
        if relevant is None:
            reached = r >= level - 1e-12
        else:
            reached = hits >= np.trunc(float(level) * n_rel + 0.5)
        first = reached.argmax(axis=1)  # recall never decreases with j
        out[:, li] = np.where(reached.any(axis=1), best_after[users, first], 0.0)
    return out


def pr_curve(
    recommendations: Any,
    truth: Any,
    *,
    recall_cutoff: str = "exact",
    options: EvalOptions | None = None,
    **evaluate_kwargs: Any,
) -> pd.DataFrame:
    """The 11-point interpolated precision-recall curve, averaged over users.

    For each user, precision@j and recall@j at every cut-off j = 1..K (K = the
    longest list); the interpolated precision at recall level r is
    ``max { precision@j : recall@j ≥ r }``, and 0 at levels above the largest
    recall the user reaches (trec_eval's ``iprec_at_recall`` interpolation).
    The curve is the mean over the users :func:`receval.evaluate` defines
    (users skipped by the ``empty_truth`` / ``missing_recs`` policies are left
    out; users of the truth without recommendations count 0).

    Args:
        recommendations, truth: as for :func:`receval.evaluate`.
        recall_cutoff: ``exact`` (level r reached when recall ≥ r) or
            ``trec_eval``: reached once hits ≥ ``int(r·R + 0.5)`` — trec_eval
            10.0 turns each level into a number of relevant items rounded half
            up, so a level short by less than half an item counts as reached
            (23 of R = 77 reach 0.3, as 0.3·77 = 23.1). Use it, with trec_eval's
            tie order, to reproduce ``iprec_at_recall_*`` exactly.
        **evaluate_kwargs: passed to :func:`receval.evaluate`.

    Returns:
        11 rows: ``recall`` (0, 0.1, ..., 1) and ``precision`` (the mean
        interpolated precision); ``attrs["users"]`` holds the number of users.

    Example:
        >>> pr = pr_curve({"u": [1, 2, 3, 4]}, {"u": [1, 3]})
        >>> pr.precision.round(4).tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667]
    """
    if recall_cutoff not in ("exact", "trec_eval"):
        raise ReceValError(f"recall_cutoff must be one of exact, trec_eval; got {recall_cutoff!r}")
    # K needs the list lengths before evaluating: the input is read once more for them
    opts, inputs = split_kwargs(options, evaluate_kwargs, caller="pr_curve")
    K = max(_longest_list(recommendations, opts.columns()), 1)
    p_specs = [MetricSpec("precision", j) for j in range(1, K + 1)]
    r_specs = [MetricSpec("recall", j) for j in range(1, K + 1)]
    res = evaluate(recommendations, truth, p_specs + r_specs, options=opts, **inputs)
    P = res.per_user[[str(s) for s in p_specs]].to_numpy(dtype=np.float64)
    R = res.per_user[[str(s) for s in r_specs]].to_numpy(dtype=np.float64)
    ok = ~(np.isnan(P).any(axis=1) | np.isnan(R).any(axis=1))
    P, R = P[ok], R[ok]
    relevant = None
    if recall_cutoff == "trec_eval":
        # R of each user from hits@K = precision@K · K and recall@K = hits@K / R
        # (users without a hit reach no level above 0 whatever R is)
        hits = np.rint(P[:, -1] * K)
        with np.errstate(invalid="ignore", divide="ignore"):
            relevant = np.where(hits > 0, np.rint(hits / R[:, -1]), 1.0)
    ip = interpolated_precision(P, R, relevant=relevant)
    mean = ip.mean(axis=0) if len(ip) else np.full(len(RECALL_LEVELS), math.nan)
    out = pd.DataFrame({"recall": RECALL_LEVELS, "precision": mean})
    out.attrs["users"] = int(ok.sum())
    return out


def roc(
    recommendations: Any,
    truth: Any,
    *,
    options: EvalOptions | None = None,
    threshold: float | None = None,
    duplicates: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    relevance_col: str | None = None,
) -> tuple[pd.DataFrame, float]:
    """A global ROC curve over all scored (user, item) pairs, and its AUC.

    Every row of the recommendations is one scored pair; its label is 1 when
    the item is relevant for the user (in the truth with grade ≥ ``threshold``
    and > 0), else 0. Relevant items that were not scored are not part of the
    curve. Each distinct score is one threshold: pairs with score ≥ it are
    predicted positive, so tied scores form one (diagonal) step, and the AUC —
    the trapezoid area under the curve — equals
    ``#{(pos, neg): s_pos > s_neg} + ½ #{(pos, neg): s_pos = s_neg}`` over P·N.
    No point is dropped (unlike scikit-learn's ``drop_intermediate``).

    Args:
        recommendations: a table with user, item and score columns (ranks alone
            carry no thresholds: an error).
        truth: as for :func:`receval.evaluate`.
        options: the :class:`~receval.EvalOptions` (threshold, duplicates and column
            names are read from it; the keywords below apply on top).
        threshold: the grade from which an item is relevant.
        duplicates: ``error`` (default) on a repeated (user, item) pair,
            ``keep`` its first scored row / largest grade, or ``count`` /
            ``count_distinct``: every scored row is a point of the curve (a
            relevant item listed twice is two positive pairs; a truth pair
            twice is relevant once). ``join`` and ``left_join`` (the readings
            of Microsoft Recommenders and RecTools, neither of which has a ROC
            curve) are refused: a curve of scored rows has no joined reading.
        user_col, item_col, score_col, relevance_col: column names (None:
            detected, as by :func:`receval.evaluate`).

    Returns:
        ``(curve, auc)``: ``curve`` has columns ``fpr``, ``tpr`` and
        ``threshold`` (first row ``inf``: nothing positive); ``auc`` is NaN
        (and the rates of the missing class NaN) without both labels.

    Example:
        >>> import pandas as pd
        >>> recs = pd.DataFrame({"user": [1, 1, 1, 2], "item": [1, 2, 3, 1],
        ...                      "score": [0.9, 0.5, 0.5, 0.1]})
        >>> table, auc = roc(recs, {1: [1, 3], 2: [2]})
        >>> table.values.tolist()
        [[0.0, 0.0, inf], [0.0, 0.5, 0.9], [0.5, 1.0, 0.5], [1.0, 1.0, 0.1]]
        >>> auc
        0.875
    """
    opts = EvalOptions.build(
        options,
        threshold=threshold,
        duplicates=duplicates,
        user_col=user_col,
        item_col=item_col,
        score_col=score_col,
        relevance_col=relevance_col,
    )
    threshold, duplicates = opts.threshold, opts.duplicates
    if duplicates in ("join", "left_join"):
        raise OptionError(
            "duplicates",
            duplicates,
            allowed=("error", "keep", "count", "count_distinct"),
            reason="roc() reads each scored row once: it has no joined reading of repeated rows",
        )
    if isinstance(recommendations, Mapping):
        raise ReceValError(
            "roc() needs scores: give a table with a score column, not lists of items"
        )
    # no rank column (""), so that read_recs reads the scores even when the
    # table also has ranks
    cols = dataclasses.replace(opts.columns(), rank="")
    from receval.io.columns import RECS, is_table, names_of, resolve

    if is_table(recommendations):
        names = names_of(recommendations)
        if "score" not in resolve(names, cols, RECS, "recommendations"):
            raise InputError(
                f"roc() needs scores: no score column (columns found: "
                f"{', '.join(names)}); ranks alone give no thresholds",
                source="recommendations",
                column=cols.score,
            )
    recs = read_recs(recommendations, cols)
    assert recs.score is not None
    tr = read_truth(truth, cols, negative_grades=opts.negative_grades)
    if len(recs.users) == 0:
        raise InputError("no scored pairs: the recommendations are empty", source="recommendations")
    ru, ri, tu, ti = recs.users, recs.items, tr.users, tr.items
    ru, tu = unify([ru, tu], "user", [])
    ri, ti = unify([ri, ti], "item", [])

    left = _scored_rows(pd.DataFrame({"u": ru, "i": ri, "score": recs.score}), recs, duplicates)
    right = pd.DataFrame({"u": tu, "i": ti, "g": tr.grades})
    tdup = right.duplicated(["u", "i"], keep=False).to_numpy()
    if tdup.any():
        if duplicates == "error":
            j = int(np.flatnonzero(tdup)[0])
            raise InputError(
                "the same (user, item) twice in the truth; pass "
                + option("duplicates", "keep")
                + " to keep the "
                "largest grade",
                source="truth",
                row=j,
                user=tr.users[j],
                item=tr.items[j],
            )
        right = right.groupby(["u", "i"], as_index=False, sort=False)["g"].max()
    right = right[(right["g"] >= threshold) & (right["g"] > 0)]
    joined = left.merge(right, on=["u", "i"], how="left", sort=False)
    score = joined["score"].to_numpy(dtype=np.float64)
    label = joined["g"].notna().to_numpy()
    fpr, tpr, thr = roc_points(score, label)
    table = pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": thr})
    return table, roc_auc(fpr, tpr)


def _scored_rows(left: pd.DataFrame, recs: Any, duplicates: str) -> pd.DataFrame:
    """The scored rows of :func:`roc`: an item twice in a list is an error,
    its first row (``keep``) or every row (``count``, ``count_distinct``)."""
    dup = left.duplicated(["u", "i"], keep="first").to_numpy()
    if not dup.any() or duplicates not in ("error", "keep"):
        return left
    if duplicates == "error":
        j = int(np.flatnonzero(dup)[0])
        raise InputError(
            "the same item twice in a user's list; pass "
            + option("duplicates", "keep")
            + " to keep the first",
            source="recommendations",
            row=j,
            user=recs.users[j],
            item=recs.items[j],
        )
    return left[~dup]


def roc_points(score: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC points of scored pairs: one per distinct score, highest first.

    At threshold t: ``tpr = #{pos: s ≥ t} / P``, ``fpr = #{neg: s ≥ t} / N``;
    a first point (0, 0) at t = inf. Rates are NaN when P or N is 0.

    Example:
        >>> fpr, tpr, thr = roc_points(np.array([3.0, 2.0, 1.0]), np.array([True, False, True]))
        >>> fpr.tolist(), tpr.tolist(), thr.tolist()
        ([0.0, 0.0, 1.0, 1.0], [0.0, 0.5, 0.5, 1.0], [inf, 3.0, 2.0, 1.0])
    """
    s = np.asarray(score, dtype=np.float64)
    y = np.asarray(label, dtype=bool)
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    tp = np.cumsum(y)
    fp = np.cumsum(~y)
    last = np.append(np.flatnonzero(s[1:] != s[:-1]), len(s) - 1) if len(s) else np.zeros(0, int)
    tps = np.append(0, tp[last]).astype(np.float64)
    fps = np.append(0, fp[last]).astype(np.float64)
    pos, neg = float(y.sum()), float((~y).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = tps / pos if pos else np.full(len(tps), math.nan)
        fpr = fps / neg if neg else np.full(len(fps), math.nan)
    return fpr, tpr, np.append(math.inf, s[last])


def roc_auc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Area under ROC points by the trapezoid rule: ``Σ (f_{j+1} − f_j)(t_{j+1} + t_j) / 2``
    (NaN when a rate is NaN).

    Example:
        >>> roc_auc(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
        1.0
    """
    f, t = np.asarray(fpr, dtype=np.float64), np.asarray(tpr, dtype=np.float64)
    if len(f) < 2 or np.isnan(f).any() or np.isnan(t).any():
        return math.nan
    return float(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2.0))
