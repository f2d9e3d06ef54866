"""A slow, obviously-correct reference for the ranking metrics of SPEC §4.

Plain Python loops over one user at a time, one small function per metric,
written straight from the formulas of SPEC §4 and independent of the package's
kernels. The tests compare ``receval.evaluate`` with :func:`ref_evaluate`.

Conventions (SPEC §1, §2.4):

- ``ranked``: one user's list, best first, distinct items.
- ``grades``: the user's truth, item -> grade. An item is *relevant* when its
  grade is >= ``threshold`` and > 0; graded metrics use the grade of relevant
  items as their gain and 0 for every other item (in the list and the ideal).
- ``k=None``: the whole list. Sums run over positions i = 1..min(k, n).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "METRIC_PARAMS",
    "is_relevant",
    "lists_from_rows",
    "ref_evaluate",
    "ref_means",
    "ref_metric",
    "ref_parse",
]

Item = Hashable
Grades = Mapping[Any, float]

#: The largest grade the random tests draw (ERR's max_grade may not be below it).
MAX_GRADE = 4.0

#: Values tried for numeric parameters (those a parameter's check rejects are left out).
_NUMBERS: dict[type, list[Any]] = {
    float: [0.1, 0.5, 0.8, 0.9, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0],
    int: [1, 2, 3, 5],
    bool: [False, True],
}

#: The item groups of the random tests' ``item_groups`` (``exposure``'s ``group=``).
GROUP_NAMES = ("g0", "g1", "g2")

#: Requirements the random tests can meet (registry.REQUIREMENTS): engine data
#: only; ratings input and the extra item inputs are tested elsewhere.
AVAILABLE = {"positive_grades", "positive_scores", "score_ties"}


def param_values(p: Any) -> list[Any]:
    """The values of a registry parameter (``ParamDef``) the random tests draw:
    its choices, or numbers its check accepts, minus values that need an input
    the tests do not give; bounded by the data (``at_least``) where declared."""
    if p.choices is not None:
        values = list(p.choices)
    elif p.type is str:  # free text: a name from the data (an item group)
        values = list(GROUP_NAMES)
    else:
        values = [v for v in _NUMBERS[p.type] if p.check is None or p.check(v)]
    if p.at_least == "max_grade":
        values = [v for v in values if v >= MAX_GRADE]
    if p.only_with is not None:  # applies only with another parameter's value (gamma)
        return []
    blocked = {v for v, need in p.needs if need not in AVAILABLE}
    return [v for v in values if v not in blocked]


def metric_params(defs: Iterable[Any]) -> dict[str, dict[str, list[Any]]]:
    """Metric name -> parameter -> values to draw, for registry declarations."""
    return {d.name: {p.name: param_values(p) for p in d.params} for d in defs}


def by_evaluate(d: Any) -> bool:
    """Whether ``evaluate`` runs this metric: False for the metrics that only a door of
    their own runs (``MetricDef.door``: receval.agreement, receval.intent_aware). The one
    rule by which registry-driven tests leave metrics to their door, where
    tests/test_door_only_metrics.py runs the same properties (and tests/test_agreement.py,
    tests/test_intent_aware.py their references)."""
    return d.door is None


def _ranking_defs() -> list[Any]:
    import receval

    return [
        d
        for d in receval.metrics().values()
        if d.kind == "ranking" and not d.needs and by_evaluate(d)
    ]


#: Every ranking metric of the registry (those computed from the lists and the
#: truth alone) and the values each of its parameters may take. Used by the
#: random tests to draw metric strings; each must have a function below.
METRIC_PARAMS: dict[str, dict[str, list[Any]]] = metric_params(_ranking_defs())


# --- helpers -----------------------------------------------------------------


def is_relevant(grade: float | None, threshold: float) -> bool:
    """An item of the truth is relevant when its grade is >= threshold and > 0."""
    return grade is not None and grade >= threshold and grade > 0


def _gain_of(item: Item, grades: Grades, threshold: float) -> float:
    """The grade of a relevant item, 0 for anything else (SPEC §1)."""
    grade = grades.get(item)
    return float(grade) if grade is not None and is_relevant(grade, threshold) else 0.0


def _relevant_items(grades: Grades, threshold: float) -> list[Item]:
    """The user's relevant items (order unspecified)."""
    return [item for item, grade in grades.items() if is_relevant(grade, threshold)]


def _cut(ranked: Sequence[Item], k: int | None) -> list[Item]:
    """The first min(k, n) items (the whole list without k)."""
    return list(ranked) if k is None else list(ranked[:k])


def _hits(ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None) -> int:
    """hits@k: relevant items among the first k positions."""
    count = 0
    for item in _cut(ranked, k):
        if is_relevant(grades.get(item), threshold):
            count += 1
    return count


def _hit_grades(
    ranked: Sequence[Item], grades: Grades, score_list: Sequence[float] | None, scores: str
) -> Grades:
    """The grades hits are read from: all of them (``scores="any"``), or without
    the listed items scored <= 0 (``"positive"``: torchmetrics'
    ``torch.where(preds > 0, target, 0)``; R is still read from ``grades``)."""
    if scores == "any" or score_list is None:
        return grades
    dropped = {item for item, s in zip(ranked, score_list, strict=True) if s <= 0}
    return {item: g for item, g in grades.items() if item not in dropped}


def _transform_gain(g: float, kind: str) -> float:
    """linear: g; exp: 2^g - 1; binary: 1 for any g > 0."""
    if kind == "linear":
        return g
    if kind == "binary":
        return 1.0 if g > 0 else 0.0
    if kind == "exp":
        return 2.0**g - 1.0
    raise ValueError(f"unknown gain {kind!r}")


# --- one function per metric -------------------------------------------------


def ref_precision(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    denominator: str = "k",
    empty: str = "zero",
    scores: str = "any",
    score_list: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """hits@k / k, or / min(k, n) with denominator=retrieved; hits / n without k.
    ``empty="nan"``: NaN for an empty list; ``scores="positive"``: items scored
    <= 0 are no hits."""
    if empty == "nan" and not ranked:
        return math.nan
    hits = _hits(ranked, _hit_grades(ranked, grades, score_list, scores), threshold, k)
    n = len(ranked)
    if k is None:
        den = n
    elif denominator == "k":
        den = k
    elif denominator == "retrieved":
        den = min(k, n)
    else:
        raise ValueError(f"unknown precision denominator {denominator!r}")
    return hits / den if den > 0 else 0.0


def ref_recall(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    denominator: str = "relevant",
    scores: str = "any",
    score_list: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """hits@k / R (min(k, R) with denominator="min_k_relevant"); ``scores="positive"``:
    items scored <= 0 are no hits (R unchanged)."""
    big_r = len(_relevant_items(grades, threshold))
    if denominator == "min_k_relevant" and k is not None:
        big_r = min(big_r, k)
    hit_grades = _hit_grades(ranked, grades, score_list, scores)
    return _hits(ranked, hit_grades, threshold, k) / big_r if big_r else 0.0


def ref_f1(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    beta: float = 1.0,
    **_: Any,
) -> float:
    """F-beta of precision@k and recall@k: (1 + b²)PR / (b²P + R); 0 when P = R = 0."""
    p = ref_precision(ranked, grades, threshold, k)
    r = ref_recall(ranked, grades, threshold, k)
    b2 = float(beta) ** 2
    if p == 0 and r == 0:
        return 0.0
    return (1 + b2) * p * r / (b2 * p + r)


def ref_hit_rate(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """1 if hits@k > 0 else 0."""
    return 1.0 if _hits(ranked, grades, threshold, k) > 0 else 0.0


def ref_hits(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """hits@k, a count."""
    return float(_hits(ranked, grades, threshold, k))


def ref_ap(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    denominator: str = "min_k_relevant",
    empty: str = "zero",
    scores: str = "any",
    score_list: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """Σ_i rel_i · precision@i / D over i <= min(k, n); 0 when D = 0. ``empty="nan"``:
    NaN for an empty list; ``scores="positive"``: items scored <= 0 are no hits."""
    if empty == "nan" and not ranked:
        return math.nan
    hit_grades = _hit_grades(ranked, grades, score_list, scores)
    total = 0.0
    hits = 0
    for i, item in enumerate(_cut(ranked, k), start=1):
        if is_relevant(hit_grades.get(item), threshold):
            hits += 1
            total += hits / i
    big_r = len(_relevant_items(grades, threshold))
    n = len(ranked)
    if denominator == "min_k_relevant":
        den = big_r if k is None else min(k, big_r)
    elif denominator == "relevant":
        den = big_r
    elif denominator == "hits":
        den = hits
    elif denominator == "retrieved":
        den = n if k is None else min(k, n)
    elif denominator == "k":
        den = n if k is None else k
    elif denominator == "min_retrieved_relevant":
        den = min(big_r, n if k is None else min(k, n))
    else:
        raise ValueError(f"unknown ap denominator {denominator!r}")
    return total / den if den > 0 else 0.0


def ref_rr(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    scores: str = "any",
    score_list: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """1 / position of the first relevant item within k; 0 if none (``scores="positive"``:
    the first one scored > 0)."""
    hit_grades = _hit_grades(ranked, grades, score_list, scores)
    for i, item in enumerate(_cut(ranked, k), start=1):
        if is_relevant(hit_grades.get(item), threshold):
            return 1.0 / i
    return 0.0


def ref_r_precision(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    mult: float = 1.0,
    **_: Any,
) -> float:
    """hits@s / s, s = floor(mult·R + 0.9); with k: s = min(k, s); 0 when s = 0."""
    big_r = len(_relevant_items(grades, threshold))
    s = math.floor(float(mult) * big_r + 0.9)
    s = s if k is None else min(k, s)
    return _hits(ranked, grades, threshold, s) / s if s > 0 else 0.0


def ref_dcg(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    gain: str = "linear",
    base: float = 2.0,
    grades_from: str = "relevant",
    discount: str = "log",
    tied: str = "order",
    score_list: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """Σ gain(g_i) / log_base(i + 1); ``grades_from="positive"``: threshold 0+;
    ``tied="average"``: each item gains the mean gain of the items of its score."""
    if grades_from == "positive":
        threshold = 0.0
    gains = _tied_gains(ranked, grades, threshold, gain, tied, score_list)
    total = 0.0
    for i in range(1, len(_cut(ranked, k)) + 1):
        total += gains[i - 1] / _disc(i, float(base), discount)
    return total


def _tied_gains(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    gain: str,
    tied: str,
    score_list: Sequence[float] | None,
) -> list[float]:
    """The gain of each listed item; ``tied="average"``: the mean gain of every
    listed item with the same score (sklearn's tie-averaged DCG)."""
    own = [_transform_gain(_gain_of(item, grades, threshold), gain) for item in ranked]
    if tied == "order" or score_list is None:
        return own
    out = []
    for s in score_list:
        group = [g for g, t in zip(own, score_list, strict=True) if t == s]
        out.append(sum(group) / len(group))
    return out


def _disc(i: int, base: float = 2.0, discount: str = "log") -> float:
    """The discount divisor of 1-based position i."""
    if discount == "jarvelin":
        return max(1.0, math.log(i) / math.log(base))
    return math.log(i + 1) / math.log(base)


def _dcg_of_gains(gains: Iterable[float], gain: str, discount: str = "log") -> float:
    """DCG (base 2) of a list of raw grades."""
    total = 0.0
    for i, g in enumerate(gains, start=1):
        total += _transform_gain(g, gain) / _disc(i, 2.0, discount)
    return total


def ref_ndcg(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    gain: str = "linear",
    ideal: str = "relevant",
    grades_from: str = "relevant",
    discount: str = "log",
    tied: str = "order",
    score_list: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """dcg@k / idcg@k; the ideal is the relevant grades sorted (or the top-k re-sorted);
    ``grades_from="positive"``: every grade > 0 counts, whatever the threshold;
    ``tied="average"``: the DCG of tie-averaged gains (the ideal unchanged)."""
    if grades_from == "positive":
        threshold = 0.0
    top = _cut(ranked, k)
    own = [_gain_of(item, grades, threshold) for item in top]
    if ideal == "relevant":
        best = sorted(
            (float(g) for g in grades.values() if is_relevant(g, threshold)), reverse=True
        )
        if k is not None:
            best = best[:k]
    elif ideal == "retrieved":
        best = sorted(own, reverse=True)
    elif ideal == "k":  # k items at the user's top grade (n without k)
        top = max((float(g) for g in grades.values() if is_relevant(g, threshold)), default=0.0)
        best = [top] * (len(ranked) if k is None else k)
    else:
        raise ValueError(f"unknown ndcg ideal {ideal!r}")
    idcg = _dcg_of_gains(best, gain, discount)
    if tied == "average" and score_list is not None:
        avg = _tied_gains(ranked, grades, threshold, gain, tied, score_list)
        cut = avg[: len(_cut(ranked, k))]
        dcg = sum(g / _disc(i, 2.0, discount) for i, g in enumerate(cut, start=1))
        return dcg / idcg if idcg > 0 else 0.0
    return _dcg_of_gains(own, gain, discount) / idcg if idcg > 0 else 0.0


def ref_rbp(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    p: float = 0.8,
    grades_from: str = "relevant",
    **_: Any,
) -> float:
    """(1 - p) Σ (g_i / g_max,u) p^(i - 1), g_max,u the user's largest relevant grade
    (``grades=positive``: every grade > 0 gains, whatever the threshold)."""
    level = threshold if grades_from == "relevant" else 0.0
    gmax = max((float(g) for g in grades.values() if is_relevant(g, level)), default=0.0)
    if gmax <= 0:
        return 0.0
    p = float(p)
    total = 0.0
    for i, item in enumerate(_cut(ranked, k), start=1):
        total += (_gain_of(item, grades, level) / gmax) * p ** (i - 1)
    return (1 - p) * total


def ref_err(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    max_grade: float | None = None,
    **_: Any,
) -> float:
    """Σ_r (1/r) R_r Π_{i<r} (1 - R_i), R_i = (2^g_i - 1) / 2^max_grade."""
    if max_grade is None:  # standalone use: the largest grade of this truth
        max_grade = max((float(g) for g in grades.values()), default=0.0)
    scale = 2.0 ** float(max_grade)
    total = 0.0
    not_stopped = 1.0
    for r, item in enumerate(_cut(ranked, k), start=1):
        stop = (2.0 ** _gain_of(item, grades, threshold) - 1.0) / scale
        total += not_stopped * stop / r
        not_stopped *= 1.0 - stop
    return total


def ref_auc(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    scores: Sequence[float] | None = None,
    **_: Any,
) -> float:
    """Share of (relevant, non-relevant) candidate pairs ranked correctly; equal scores ½."""
    top = _cut(ranked, k)
    pos: list[tuple[int, float | None]] = []  # (position, score) of relevant candidates
    neg: list[tuple[int, float | None]] = []
    for i, item in enumerate(top):
        key = (i, None if scores is None else float(scores[i]))
        if is_relevant(grades.get(item), threshold):
            pos.append(key)
        else:
            neg.append(key)
    if not pos or not neg:
        return math.nan
    good = 0.0
    for pi, ps in pos:
        for ni, ns in neg:
            if ps is not None and ps == ns:
                good += 0.5
            elif pi < ni:
                good += 1.0
    return good / (len(pos) * len(neg))


def ref_user_coverage(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    min_items: float | None = None,
    **_: Any,
) -> float:
    """1 if the list has at least min_items items (default k; 1 without k), else 0."""
    need = min_items if min_items is not None else (k if k is not None else 1)
    return 1.0 if len(ranked) >= need else 0.0


# --- trec_eval's measures: judgments and sets (m_<name>.c) ------------------


def _judged(item: Item, grades: Grades) -> bool:
    """Judged: in the user's truth with a grade >= 0 (relevant or not)."""
    return item in grades and float(grades[item]) >= 0


def _n_nonrel(grades: Grades, threshold: float) -> int:
    """N: the user's judged items that are not relevant."""
    return sum(1 for g in grades.values() if g >= 0 and not is_relevant(g, threshold))


def ref_n_retrieved(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """min(k, n)."""
    return float(len(_cut(ranked, k)))


def ref_n_relevant(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """R."""
    return float(len(_relevant_items(grades, threshold)))


def ref_judged_nonrelevant(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """Judged non-relevant items among the first k."""
    return float(
        sum(
            1
            for it in _cut(ranked, k)
            if _judged(it, grades) and not is_relevant(grades[it], threshold)
        )
    )


def ref_judged(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """Judged items among the first min(k, n) / min(k, n) (ir_measures'
    Judged@k); 0 for an empty list."""
    top = _cut(ranked, k)
    return sum(1 for it in top if _judged(it, grades)) / len(top) if top else 0.0


def ref_unjudged(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """Unjudged items among the first k / k (n without k)."""
    den = len(ranked) if k is None else k
    return sum(1 for it in _cut(ranked, k) if not _judged(it, grades)) / den if den else 0.0


def ref_bpref(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """(1/R) Σ_{relevant r} (1 − min(nr_r, R)/min(N, R)), 1 when nr_r = 0."""
    big_r = len(_relevant_items(grades, threshold))
    big_n = _n_nonrel(grades, threshold)
    total, nonrel = 0.0, 0
    for it in _cut(ranked, k):
        if not _judged(it, grades):
            continue
        if is_relevant(grades[it], threshold):
            total += 1.0 if nonrel == 0 else 1.0 - min(nonrel, big_r) / min(big_n, big_r)
        else:
            nonrel += 1
    return total / big_r if big_r else 0.0


def ref_gm_bpref(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """ln(max(bpref, 1e-5))."""
    return math.log(max(ref_bpref(ranked, grades, threshold, k), 1e-5))


def ref_gm_ap(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    denominator: str = "relevant",
    **_: Any,
) -> float:
    """ln(max(ap, 1e-5))."""
    return math.log(max(ref_ap(ranked, grades, threshold, k, denominator=denominator), 1e-5))


def ref_infap(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """Yilmaz & Aslam's inferred AP, as trec_eval's m_infap.c computes it."""
    big_r = len(_relevant_items(grades, threshold))
    total, rel, nonrel, pooled = 0.0, 0, 0, 0
    eps = 1e-5
    for j, it in enumerate(_cut(ranked, k)):
        if it not in grades:
            continue
        if float(grades[it]) < 0:
            pooled += 1
        elif not is_relevant(grades[it], threshold):
            nonrel += 1
        else:
            if j == 0:
                total += 1.0
            else:
                total += 1 / (j + 1) + (j / (j + 1)) * ((rel + nonrel + pooled) / j) * (
                    (rel + eps) / (rel + nonrel + 2 * eps)
                )
            rel += 1
    return total / big_r if big_r else 0.0


def ref_relative_precision(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """hits@k / min(k, R) (min(n, R) without k)."""
    big_r = len(_relevant_items(grades, threshold))
    den = min(len(ranked) if k is None else k, big_r)
    return _hits(ranked, grades, threshold, k) / den if den else 0.0


def ref_set_ap(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """hits² / (min(k, n)·R)."""
    big_r = len(_relevant_items(grades, threshold))
    n = len(_cut(ranked, k))
    h = _hits(ranked, grades, threshold, k)
    return h * h / (n * big_r) if n and big_r else 0.0


def ref_utility(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    rel_ret: float = 1.0,
    nonrel_ret: float = -1.0,
    rel_nonret: float = 0.0,
    **_: Any,
) -> float:
    """rel_ret·hits + nonrel_ret·(retrieved − hits) + rel_nonret·(R − hits)."""
    h = _hits(ranked, grades, threshold, k)
    n = len(_cut(ranked, k))
    big_r = len(_relevant_items(grades, threshold))
    return float(rel_ret) * h + float(nonrel_ret) * (n - h) + float(rel_nonret) * (big_r - h)


def ref_bin_g(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, **_: Any
) -> float:
    """(1/R) Σ_{relevant r} 1/log2(2 + non-relevant items above r)."""
    big_r = len(_relevant_items(grades, threshold))
    total, nonrel = 0.0, 0
    for it in _cut(ranked, k):
        if is_relevant(grades.get(it), threshold):
            total += 1 / math.log2(2 + nonrel)
        else:
            nonrel += 1
    return total / big_r if big_r else 0.0


def ref_rbp_residual(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    p: float = 0.8,
    **_: Any,
) -> float:
    """p^n + (1 − p) Σ_{unjudged i} p^(i−1) when an item is unjudged, else 0."""
    p = float(p)
    items = _cut(ranked, k)
    unj = [i for i, it in enumerate(items) if not _judged(it, grades)]
    if not unj:
        return 0.0
    return p ** len(items) + (1 - p) * sum(p**i for i in unj)


def _iprec(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    level: float,
    rounding: str = "nearest",
) -> float:
    items = _cut(ranked, k)
    big_r = len(_relevant_items(grades, threshold))
    x = level * big_r
    if rounding == "trec9":  # trec_eval 9: (long)(x + 0.9)
        c = math.floor(x + 0.9)
    else:  # trec_eval 10: lround, half away from zero
        c = math.floor(x) + (1 if x - math.floor(x) >= 0.5 else 0)
    rel_positions = [i for i, it in enumerate(items, 1) if is_relevant(grades.get(it), threshold)]
    if c > len(rel_positions) or not rel_positions:
        return 0.0
    start = rel_positions[max(c, 1) - 1]
    best, hits = 0.0, 0
    for i, it in enumerate(items, 1):
        hits += is_relevant(grades.get(it), threshold)
        if i >= start:
            best = max(best, hits / i)
    return best


def ref_iprec(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    recall: float = 0.0,
    rounding: str = "nearest",
    **_: Any,
) -> float:
    """Interpolated precision at the c-th relevant item, c = round(recall·R)."""
    return _iprec(ranked, grades, threshold, k, float(recall), str(rounding))


def ref_iprec_avg(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    rounding: str = "nearest",
    **_: Any,
) -> float:
    """Mean iprec at recall 0, 0.1, ..., 1."""
    levels = (i / 10 for i in range(11))
    return sum(_iprec(ranked, grades, threshold, k, x, str(rounding)) for x in levels) / 11


def _level_gains(
    ranked: Sequence[Item], grades: Grades, threshold: float, k: int | None, grades_from: str
) -> tuple[list[float], list[float]]:
    """The list's gains and the ideal's (descending): relevant grades, or every grade > 0."""
    level = threshold if grades_from == "relevant" else 0.0
    own = [_gain_of(it, grades, level) for it in _cut(ranked, k)]
    ideal = sorted((float(g) for g in grades.values() if is_relevant(g, level)), reverse=True)
    return own, ideal


def ref_g(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    grades_from: str = "relevant",
    **_: Any,
) -> float:
    """Σ_i g_i / log2(2 + cost_i − got_i) / Σ ideal, cost_i = Σ_{j≤i} max(ideal_j, 1)."""
    own, ideal = _level_gains(ranked, grades, threshold, k, grades_from)
    total, cost, got = 0.0, 0.0, 0.0
    for i, gain in enumerate(own):
        got += gain
        cost += max(ideal[i] if i < len(ideal) else 0.0, 1.0)
        if gain != 0:
            total += gain / math.log2(2 + cost - got)
    best = sum(ideal)
    return total / best if best > 0 else 0.0


def _running_dcg(gains: Sequence[float]) -> list[float]:
    out, acc = [], 0.0
    for i, gain in enumerate(gains, start=1):
        acc += gain / math.log2(i + 1)
        out.append(acc)
    return out


def ref_ndcg_rel(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    grades_from: str = "relevant",
    **_: Any,
) -> float:
    """nDCG at each retrieved item with gain > 0; DCG@n / IDCG for each one missed; / R'."""
    own, ideal = _level_gains(ranked, grades, threshold, k, grades_from)
    if not ideal:
        return 0.0
    dcg = _running_dcg(own)
    idcg = _running_dcg(ideal)
    total, found = 0.0, 0
    for i, gain in enumerate(own):
        if gain > 0:
            total += dcg[i] / idcg[min(i, len(ideal) - 1)]
            found += 1
    last = dcg[-1] if dcg else 0.0
    total += (len(ideal) - found) * last / idcg[-1]
    return total / len(ideal)


def ref_rndcg(
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float,
    k: int | None,
    grades_from: str = "relevant",
    **_: Any,
) -> float:
    """Mean nDCG at the points b where the ideal's gain changes (and at n if
    n > R' + 1: m_Rndcg.c); 0 without a relevant item."""
    own, ideal = _level_gains(ranked, grades, threshold, k, grades_from)
    if not ideal or not any(is_relevant(g, threshold) for g in grades.values()):
        return 0.0
    dcg = _running_dcg(own)
    idcg = _running_dcg(ideal)
    points = [b for b in range(1, len(ideal)) if ideal[b] != ideal[b - 1]] + [len(ideal)]
    values = [(dcg[min(b, len(own)) - 1] if own else 0.0) / idcg[b - 1] for b in points]
    if len(own) > len(ideal) + 1:
        values.append(dcg[-1] / idcg[-1])
    return sum(values) / len(values)


#: Metrics whose summary is the geometric mean: exp of the mean of the per-user logs.
GEOMETRIC = {"gm_ap", "gm_bpref", "gm_map"}


#: Metrics that describe the list alone: a user policy that scores a user 0
#: leaves them the value of the user's list (SPEC §2.4 as receval reads it).
LIST_ONLY = {"user_coverage", "n_retrieved"}

_FUNCS: dict[str, Callable[..., float]] = {
    "precision": ref_precision,
    "recall": ref_recall,
    "f1": ref_f1,
    "hit_rate": ref_hit_rate,
    "hits": ref_hits,
    "ap": ref_ap,
    "rr": ref_rr,
    "r_precision": ref_r_precision,
    "dcg": ref_dcg,
    "ndcg": ref_ndcg,
    "rbp": ref_rbp,
    "err": ref_err,
    "auc": ref_auc,
    "user_coverage": ref_user_coverage,
    "n_retrieved": ref_n_retrieved,
    "n_relevant": ref_n_relevant,
    "judged_nonrelevant": ref_judged_nonrelevant,
    "judged": ref_judged,
    "unjudged": ref_unjudged,
    "bpref": ref_bpref,
    "gm_bpref": ref_gm_bpref,
    "gm_ap": ref_gm_ap,
    "infap": ref_infap,
    "relative_precision": ref_relative_precision,
    "set_ap": ref_set_ap,
    "utility": ref_utility,
    "bin_g": ref_bin_g,
    "rbp_residual": ref_rbp_residual,
    "iprec": ref_iprec,
    "iprec_avg": ref_iprec_avg,
    "g": ref_g,
    "ndcg_rel": ref_ndcg_rel,
    "rndcg": ref_rndcg,
}

_ALIASES = {"map": "ap", "mrr": "rr", "hr": "hit_rate", "success": "hit_rate", "p": "precision"}
_ALIASES |= {"hit_count": "hits"}
_ALIASES |= {"r": "recall"}
_ALIASES |= {"gm_map": "gm_ap", "num_ret": "n_retrieved", "num_rel": "n_relevant"}


def ref_metric(
    name: str,
    k: int | None,
    params: Mapping[str, Any],
    ranked: Sequence[Item],
    grades: Grades,
    threshold: float = 1,
    scores: Sequence[float] | None = None,
    max_grade: float | None = None,
) -> float:
    """One ranking metric of one user (no user policy applied).

    ``max_grade`` is err's default ``max_grade`` (the largest grade of the
    whole truth table); a ``max_grade`` in ``params`` wins over it.
    """
    name = _ALIASES.get(name.lower(), name.lower())
    if name not in _FUNCS:
        raise ValueError(f"no reference for {name!r}")
    if len(set(ranked)) != len(ranked):
        raise ValueError("a list must hold distinct items")
    kwargs = dict(params)
    if "grades" in kwargs:  # the metric parameter, not the user's truth
        kwargs["grades_from"] = kwargs.pop("grades")
    if name == "err" and kwargs.get("max_grade") is None:
        kwargs["max_grade"] = max_grade
    if name == "auc":
        kwargs["scores"] = scores
    if name in ("precision", "recall", "ap", "rr", "dcg", "ndcg"):
        kwargs["score_list"] = scores
    return float(_FUNCS[name](list(ranked), grades, threshold, k, **kwargs))


# --- inputs and user policies -----------------------------------------------

MetricSpecs = Mapping[str, tuple[str, int | None, Mapping[str, Any]]]


def id_key(value: Any) -> tuple[int, Any]:
    """The id order of ``ties="item"``, literally: integers (ints, and strings
    that are an integer literal within int64 under the text rule, #30) first,
    numerically, then text by code point."""
    if isinstance(value, str) and re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
        number = int(value)
        if -(2**63) <= number < 2**63:
            return (0, number)
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return (0, value)
    return (1, str(value))


def _tie_order(pairs: list[tuple[Any, float]], ties: str) -> list[tuple[Any, float]]:
    """Pairs in the order equal scores take under a tie rule (then sorted stably by score)."""
    if ties == "input":
        return pairs
    as_str = ties in ("item_str", "item_str_desc")
    desc = ties in ("item_desc", "item_str_desc")
    return sorted(pairs, key=lambda p: str(p[0]) if as_str else id_key(p[0]), reverse=desc)


def lists_from_rows(
    rows: Iterable[tuple[Any, Any, float]], by: str = "score", ties: str = "item"
) -> tuple[dict[Any, list[Any]], dict[Any, list[float]]]:
    """Lists and their scores from (user, item, score-or-rank) rows (SPEC §2.1).

    ``by="score"``: score descending, ties by the tie rule (``item``: item id
    ascending; ``item_desc``; ``item_str``/``item_str_desc``: ids as strings;
    ``input``: row order). ``by="rank"``: rank ascending. Returns (user ->
    items, user -> values).
    """
    per_user: dict[Any, list[tuple[Any, float]]] = {}
    for user, item, value in rows:
        per_user.setdefault(user, []).append((item, value))
    lists: dict[Any, list[Any]] = {}
    values: dict[Any, list[float]] = {}
    for user, pairs in per_user.items():
        if by == "score":
            pairs = _tie_order(pairs, ties)  # the tie order ...
            pairs = sorted(pairs, key=lambda p: -p[1])  # ... then (stable) score descending
        elif by == "rank":
            pairs = sorted(pairs, key=lambda p: p[1])
        else:
            raise ValueError(f"unknown order {by!r}")
        lists[user] = [item for item, _ in pairs]
        values[user] = [value for _, value in pairs]
    return lists, values


def ref_evaluate(
    recs: Mapping[Any, Sequence[Item]],
    truth: Mapping[Any, Grades],
    metric_specs: MetricSpecs,
    threshold: float = 1,
    empty_truth: str = "skip",
    missing_recs: str = "zero",
    scores: Mapping[Any, Sequence[float]] | None = None,
    no_truth: str | None = None,
    relevant_from: str = "truth",
) -> dict[Any, dict[str, float]]:
    """Per-user values of every metric, with the user policies of SPEC §2.4.

    ``metric_specs``: column name -> (metric name, k, params). ``scores``: user
    -> scores parallel to the user's list (for auc's ties); omit for rank input.
    Users: every user of the truth, plus recommendation-only users. A user with
    no relevant item gets NaN (``empty_truth="skip"``) or 0.0 (``"zero"``); a user
    with relevant items but no list gets an empty list (``missing_recs="zero"``)
    or NaN (``"skip"``); a user scored 0 keeps its list's value of the
    metrics of :data:`LIST_ONLY`. A user of the truth with neither a list nor a relevant
    item is skipped when either policy says skip. Users with a list who are not
    in the truth follow ``no_truth`` (default: ``empty_truth``). ``"error"``
    raises ValueError. ``relevant_from="list"``: each user's truth is cut to
    the items of their list before anything else.
    """
    all_grades = [float(g) for grades in truth.values() for g in grades.values()]
    table_max = max(all_grades, default=0.0)
    out: dict[Any, dict[str, float]] = {}
    users = list(truth) + [u for u in recs if u not in truth]
    for user in users:
        grades = truth.get(user, {})
        if relevant_from == "list":
            listed = set(recs.get(user, []))
            grades = {item: g for item, g in grades.items() if item in listed}
        n_relevant = len(_relevant_items(grades, threshold))
        fill: float | None = None
        if n_relevant == 0:
            policy = empty_truth if user in truth else (no_truth or empty_truth)
            if user in truth and user not in recs and "skip" in (empty_truth, missing_recs):
                policy = "skip"
            if policy == "error":
                raise ValueError(f"user {user!r} has no relevant item")
            fill = math.nan if policy == "skip" else 0.0
        elif user not in recs:
            if missing_recs == "error":
                raise ValueError(f"user {user!r} has no recommendations")
            if missing_recs == "skip":
                fill = math.nan
        row: dict[str, float] = {}
        ranked = list(recs.get(user, []))
        user_scores = None if scores is None or user not in scores else scores[user]
        for column, (name, k, params) in metric_specs.items():
            if fill is not None and not (fill == 0.0 and _ALIASES.get(name, name) in LIST_ONLY):
                row[column] = fill
                continue
            row[column] = ref_metric(
                name, k, params, ranked, grades, threshold, user_scores, table_max
            )
        out[user] = row
    return out


def ref_means(per_user: Mapping[Any, Mapping[str, float]]) -> dict[str, float]:
    """Mean over users of the non-NaN values of each column (NaN if there are none)."""
    sums: dict[str, list[float]] = {}
    for row in per_user.values():
        for column, value in row.items():
            bucket = sums.setdefault(column, [])
            if not math.isnan(value):
                bucket.append(value)
    out = {c: (sum(v) / len(v) if v else math.nan) for c, v in sums.items()}
    for c, v in out.items():  # the geometric means: exp of the mean of the logs
        if c.split("@")[0].split("[")[0] in GEOMETRIC and not math.isnan(v):
            out[c] = math.exp(v)
    return out


def ref_parse(metric: str) -> tuple[str, int | None, dict[str, Any]]:
    """``name@k[p=v,...]`` as (name, k, params); numbers in params become floats."""
    head, _, rest = metric.partition("[")
    name, _, k_text = head.partition("@")
    params: dict[str, Any] = {}
    for pair in filter(None, rest.rstrip("]").split(",")):
        key, _, value = pair.partition("=")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            params[key.strip()] = value.strip()
    return name.strip().lower(), (int(k_text) if k_text else None), params
