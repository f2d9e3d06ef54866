"""Properties of every ranking metric that hold whatever the input (SPEC §1, §2, §4).

Bounds, perfect rankings, monotonicity when a relevant item moves up, and
invariance under shuffled rows and renamed or reordered users.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from tests.reference import METRIC_PARAMS, is_relevant
from tests.test_reference_agreement import KS, frames, metric_string, scenarios

EPS = 1e-12


def every_variant(k: int | None) -> list[str]:
    """Every ranking metric at cut-off k with each single parameter value (and defaults)."""
    out = []
    for name, choices in METRIC_PARAMS.items():
        out.append(metric_string(name, k, {}))
        for param, values in choices.items():
            out += [metric_string(name, k, {param: v}) for v in values]
    return out


def column(metric: str) -> str:
    """The per-user column (canonical name) of a metric string."""
    return str(receval.parse_metric(metric))


# --- bounds -------------------------------------------------------------------


def declared(metric: str) -> receval.MetricDef:
    """The registry declaration of a metric string."""
    return receval.parse_metric(metric).definition


@settings(max_examples=60, deadline=None)  # check_metric's bounds check covers every metric too
@given(scenarios(), st.sampled_from(KS))
def test_values_within_bounds(s: dict[str, Any], k: int | None) -> None:
    """Every value lies within the registry's bounds; NaN only where the
    registry says the metric can be undefined."""
    recs, truth = frames(s)
    metrics = every_variant(k)
    res = receval.evaluate(recs, truth, metrics, threshold=s["threshold"], empty_truth="zero")
    for metric in metrics:
        d = declared(metric)
        lo, hi = d.bounds
        values = res.per_user[column(metric)]
        for user, value in values.items():
            if math.isnan(value):
                assert "NaN" in d.undefined, f"{metric} user {user!r} is NaN"
                continue
            assert lo - EPS <= value <= hi + EPS, f"{metric} user {user!r}: {value}"
        mean = res.summary[column(metric)]
        lo, hi = d.summarise(lo), d.summarise(hi)  # geometric means: exp of the bounds
        assert math.isnan(mean) or lo - EPS <= mean <= hi + EPS


# --- perfect rankings ---------------------------------------------------------


@st.composite
def perfect_users(draw: st.DrawFn) -> dict[str, Any]:
    """Users with graded truth; each user's perfect list, with and without a tail."""
    threshold = draw(st.sampled_from([1, 2]))
    truth: dict[int, dict[int, int]] = {}
    perfect: dict[int, list[int]] = {}
    tailed: dict[int, list[int]] = {}
    for user in range(draw(st.integers(1, 4))):
        items = draw(st.lists(st.integers(0, 30), min_size=1, max_size=12, unique=True))
        n_rel = draw(st.integers(1, len(items)))
        grades = {i: draw(st.integers(threshold, 4)) for i in items[:n_rel]}
        grades |= {i: draw(st.integers(0, threshold - 1)) for i in items[n_rel:]}
        truth[user] = grades
        rel = [i for i in items if is_relevant(grades[i], threshold)]
        perfect[user] = sorted(rel, key=lambda i: -grades[i])
        others = [i for i in items if i not in rel] + draw(
            st.lists(st.integers(31, 60), max_size=4, unique=True)
        )
        tailed[user] = perfect[user] + draw(st.permutations(others))
    return {"threshold": threshold, "truth": truth, "perfect": perfect, "tailed": tailed}


def scored(lists: dict[int, list[int]]) -> pd.DataFrame:
    """Lists as a table with strictly decreasing scores."""
    rows = [
        (u, item, float(len(lst) - pos)) for u, lst in lists.items() for pos, item in enumerate(lst)
    ]
    return pd.DataFrame(rows, columns=["user", "item", "score"])


def perfect_metrics(k: int | None, big_r: int, tail: bool) -> list[str]:
    """The metrics a perfect list scores 1 on (``tail``: non-relevant items follow)."""
    out = [f"{m}{'' if k is None else f'@{k}'}" for m in ("rr", "hit_rate", "r_precision", "ap")]
    out += [metric_string("ap", k, {"denominator": "hits"})]
    out += [
        metric_string("ndcg", k, {"gain": g, "ideal": i})
        for g in ("linear", "exp")
        for i in ("relevant", "retrieved")
    ]
    if not tail:
        out.append(metric_string("ap", k, {"denominator": "retrieved"}))
    if (k is None and not tail) or (k is not None and big_r >= k):
        out.append(metric_string("precision", k, {}))
    if k is None or k >= big_r:
        out += [metric_string("recall", k, {}), metric_string("ap", k, {"denominator": "relevant"})]
    return out


@settings(max_examples=100, deadline=None)
@given(perfect_users(), st.sampled_from(KS), st.booleans())
def test_perfect_ranking_scores_one(p: dict[str, Any], k: int | None, tail: bool) -> None:
    lists = p["tailed"] if tail else p["perfect"]
    recs: Any = scored(lists) if tail else lists
    big_r = {
        u: sum(is_relevant(g, p["threshold"]) for g in grades.values())
        for u, grades in p["truth"].items()
    }
    wanted = {u: perfect_metrics(k, r, tail) for u, r in big_r.items()}
    metrics = [*sorted({m for ms in wanted.values() for m in ms}), metric_string("auc", k, {})]
    res = receval.evaluate(recs, p["truth"], metrics, threshold=p["threshold"])
    for user, grades in p["truth"].items():
        for metric in wanted[user]:
            value = res.per_user.loc[user, column(metric)]
            assert abs(value - 1.0) <= 1e-9, f"{metric} of {lists[user]} vs {grades}: {value}"
        auc = res.per_user.loc[user, column(metric_string("auc", k, {}))]
        cut = lists[user] if k is None else lists[user][:k]
        if big_r[user] < len(cut):  # both kinds among the candidates
            assert auc == 1.0, f"auc of {cut} vs {grades}"
        else:
            assert math.isnan(auc), f"auc of {cut} vs {grades}"


# --- moving a relevant item one place up --------------------------------------

MONOTONE = ["rr", "ap", "ndcg", "dcg", "rbp", "err", "precision", "recall", "hit_rate"]


def monotone_metrics(k: int | None) -> list[str]:
    """Metrics that never drop when a relevant item moves above a non-relevant one."""
    out = [metric_string(m, k, {}) for m in MONOTONE]
    out += [metric_string("ap", k, {"denominator": d}) for d in ("relevant", "retrieved")]
    out += [metric_string("ndcg", k, {"gain": "exp"}), metric_string("dcg", k, {"gain": "exp"})]
    return out


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(KS), st.sampled_from([1, 2]))
def test_moving_a_relevant_item_up_never_lowers(
    data: st.DataObject, k: int | None, threshold: int
) -> None:
    ranked = data.draw(st.lists(st.integers(0, 15), min_size=2, max_size=10, unique=True))
    truth_items = data.draw(st.lists(st.integers(0, 15), min_size=1, max_size=8, unique=True))
    grades = {i: data.draw(st.integers(0, 4)) for i in truth_items}
    swaps = [
        j
        for j in range(1, len(ranked))
        if is_relevant(grades.get(ranked[j]), threshold)
        and not is_relevant(grades.get(ranked[j - 1]), threshold)
    ]
    if not swaps:
        return
    j = data.draw(st.sampled_from(swaps))
    moved = list(ranked)
    moved[j - 1], moved[j] = moved[j], moved[j - 1]
    metrics = monotone_metrics(k)
    if k is None:  # auc@k is not monotone: the move may change the candidates
        metrics.append("auc")
    res = receval.evaluate(
        {"before": ranked, "after": moved},
        {"before": grades, "after": grades},
        metrics,
        threshold=threshold,
    )
    for metric in metrics:
        before = res.per_user.loc["before", column(metric)]
        after = res.per_user.loc["after", column(metric)]
        if math.isnan(before) or math.isnan(after):
            assert metric.startswith("auc")  # one kind only among the candidates
            continue
        assert after >= before - 1e-12, f"{metric}: {ranked} -> {moved} vs {grades}"


# --- row order and user ids ---------------------------------------------------

NEW_INT_IDS = [7, -3, 100, 55, 2**40, 0]
NEW_STR_IDS = ["zz", "A", "m", "0", "Ω", "user 1"]


@settings(max_examples=60, deadline=None)  # and check_metric's row order and id forms
@given(scenarios(), st.data())
def test_row_order_and_user_names_change_nothing(s: dict[str, Any], data: st.DataObject) -> None:
    recs, truth = frames(s)
    metrics = list(s["metrics"])
    kwargs = {"threshold": s["threshold"], "empty_truth": "skip", "missing_recs": "zero"}
    base = receval.evaluate(recs, truth, metrics, **kwargs)
    users = sorted({*recs["user"], *truth["user"]}, key=str)
    pool = data.draw(st.sampled_from([NEW_INT_IDS, NEW_STR_IDS]))
    new_ids = data.draw(st.permutations(pool))[: len(users)]
    rename = dict(zip(users, new_ids, strict=True))
    recs2 = recs.assign(user=recs["user"].map(rename))
    truth2 = truth.assign(user=truth["user"].map(rename))
    recs2 = recs2.iloc[data.draw(st.permutations(range(len(recs2))))].reset_index(drop=True)
    truth2 = truth2.iloc[data.draw(st.permutations(range(len(truth2))))].reset_index(drop=True)
    other = receval.evaluate(recs2, truth2, metrics, **kwargs)
    # ids compared as written: a digit string is its integer (the text rule, #30)
    named = {str(u): str(v) for u, v in rename.items()}
    mine, theirs = base.per_user.rename(index=str), other.per_user.rename(index=str)
    assert set(theirs.index) == {named[u] for u in mine.index}
    for user in mine.index:
        for name in mine.columns:
            a = mine.loc[user, name]
            b = theirs.loc[named[user], name]
            assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= EPS, (name, user)
    for name, mean in base.summary.items():
        got = other.summary[name]
        assert (math.isnan(mean) and math.isnan(got)) or abs(mean - got) <= EPS, name
