"""receval.evaluate agrees with the slow reference of tests/reference.py on random input.

Inputs: several users with int or str ids (users and items drawn independently),
lists given by score (with ties) or by rank (with gaps), short and empty lists,
users only in the recommendations or only in the truth, graded truth (grades
0..4, a few fractions) or none, threshold 1 or 2, every ranking metric with a
random cut-off and random parameter values, and every user policy.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from tests.reference import METRIC_PARAMS, lists_from_rows, ref_evaluate, ref_means

INT_IDS = [0, 1, 2, 3, 5, 8, 9, 10, 11, 42, 10**12]
STR_IDS = ["a", "b", "B", "Z", "aa", "10", "9", "é", "x y", "_"]
SCORES = [-1.5, 0.0, 0.25, 0.5, 1.0, 3.0]
KS: list[int | None] = [1, 2, 3, 5, 10, None]
TOL = 1e-9
#: grades 0..4, now and then a fraction (0.5 is > 0 but below threshold 1)
GRADES = st.one_of(st.integers(0, 4), st.sampled_from([0.5, 1.5, 2.5]))


def metric_string(name: str, k: int | None, params: dict[str, Any]) -> str:
    """``name@k[p=v,...]`` (parameters in the order given)."""
    if not receval.metrics()[name].takes_cutoff:  # G, Rndcg, ndcg_rel: the whole list
        k = None
    text = name if k is None else f"{name}@{k}"
    if params:
        text += "[" + ",".join(f"{p}={v}" for p, v in params.items()) + "]"
    return text


@st.composite
def metric_specs(draw: st.DrawFn) -> dict[str, tuple[str, int | None, dict[str, Any]]]:
    """Every ranking metric once, with a random k and random (or default) parameters."""
    specs: dict[str, tuple[str, int | None, dict[str, Any]]] = {}
    for name, choices in METRIC_PARAMS.items():
        k = draw(st.sampled_from(KS)) if receval.metrics()[name].takes_cutoff else None
        params: dict[str, Any] = {}
        for param, values in choices.items():
            value = draw(st.sampled_from([None, *values]))
            if value is not None:
                params[param] = value
        specs[metric_string(name, k, params)] = (name, k, params)
    return specs


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """Random recommendations (rows) and truth (user -> item -> grade)."""
    user_pool = INT_IDS if draw(st.booleans()) else STR_IDS
    users = draw(st.lists(st.sampled_from(user_pool), min_size=1, max_size=5, unique=True))
    items = st.sampled_from(INT_IDS if draw(st.booleans()) else STR_IDS)
    graded = draw(st.booleans())
    by = draw(st.sampled_from(["score", "rank"]))
    rec_rows: list[tuple[Any, Any, float]] = []
    truth: dict[Any, dict[Any, float]] = {}
    for user in users:
        ranked = draw(st.lists(items, max_size=8, unique=True))
        if by == "score":
            values = [draw(st.sampled_from(SCORES)) for _ in ranked]
        else:
            values = draw(
                st.lists(
                    st.integers(1, 40), min_size=len(ranked), max_size=len(ranked), unique=True
                )
            )
        rec_rows += [(user, item, value) for item, value in zip(ranked, values, strict=True)]
        relevant = draw(st.lists(items, max_size=6, unique=True))
        if relevant:
            grade = GRADES if graded else st.just(1)
            truth[user] = {item: draw(grade) for item in relevant}
    if not rec_rows:  # at least one row in each table
        rec_rows.append((users[0], draw(items), 1.0))
    if not truth:
        truth[users[-1]] = {draw(items): 1}
    if not {u for u, _, _ in rec_rows} & set(truth):  # no shared user is an error
        truth[rec_rows[0][0]] = {draw(items): 1}
    return {
        "rec_rows": draw(st.permutations(rec_rows)),
        "truth": truth,
        "graded": graded,
        "by": by,
        "threshold": draw(st.sampled_from([1, 2])),
        "empty_truth": draw(st.sampled_from(["skip", "zero", "skip", "zero", "error"])),
        "missing_recs": draw(st.sampled_from(["zero", "skip", "zero", "skip", "error"])),
        "no_truth": draw(st.sampled_from([None, None, "skip", "zero", "error"])),
        "ties": draw(st.sampled_from(["item", "item", "item_desc", "item_str_desc", "input"])),
        "relevant_from": draw(st.sampled_from(["truth", "truth", "list"])),
        "metrics": draw(metric_specs()),
    }


def frames(s: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scenario as long tables: (user, item, score|rank) and (user, item[, relevance])."""
    users, items, values = zip(*s["rec_rows"], strict=True)
    recs = pd.DataFrame({"user": list(users), "item": list(items), s["by"]: list(values)})
    pairs = [(u, i, g) for u, grades in s["truth"].items() for i, g in grades.items()]
    truth = pd.DataFrame(pairs, columns=["user", "item", "relevance"])
    if not s["graded"]:
        truth = truth.drop(columns="relevance")
    return recs, truth


def same(got: float, expected: float) -> bool:
    """Equal within TOL, NaN only matching NaN."""
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return abs(got - expected) <= TOL


def check(s: dict[str, Any], res: receval.Result, ref: dict[Any, dict[str, float]]) -> None:
    """Per-user values and means of ``res`` are those of the reference."""
    # users compared as written: "10" is the integer 10 (the text rule, #30)
    table = res.per_user.rename(index=str)
    assert set(table.index) == set(map(str, ref)), (sorted(table.index), sorted(map(str, ref)))
    for metric in s["metrics"]:
        column = str(receval.parse_metric(metric))
        for user, row in ref.items():
            got = float(table.loc[str(user), column])
            assert same(got, row[metric]), f"{metric} user {user!r}: {got} != {row[metric]}"
    for metric, mean in ref_means(ref).items():
        got = float(res.summary[str(receval.parse_metric(metric))])
        assert same(got, mean) or abs(got - mean) <= 1e-12 * max(1.0, abs(mean)), (
            f"mean {metric}: {got} != {mean}"
        )


def run_both(s: dict[str, Any], recs: Any, truth: Any, scores: Any) -> None:
    """Evaluate with receval and the reference; compare, or both raise under "error"."""
    lists, _ = lists_from_rows(s["rec_rows"], by=s["by"], ties=s["ties"])
    kwargs = {
        "threshold": s["threshold"],
        "empty_truth": s["empty_truth"],
        "missing_recs": s["missing_recs"],
        "no_truth": s["no_truth"],
        "relevant_from": s["relevant_from"],
    }
    try:
        ref = ref_evaluate(lists, s["truth"], s["metrics"], scores=scores, **kwargs)
    except ValueError:
        with pytest.raises(receval.ReceValError):
            receval.evaluate(recs, truth, list(s["metrics"]), ties=s["ties"], **kwargs)
        return
    res = receval.evaluate(recs, truth, list(s["metrics"]), ties=s["ties"], **kwargs)
    check(s, res, ref)


def convert(frame: pd.DataFrame, kind: str) -> Any:
    """A pandas table as a pandas, polars or pyarrow table."""
    if kind == "polars":
        import polars as pl

        return pl.from_pandas(frame)
    if kind == "pyarrow":
        import pyarrow as pa

        return pa.Table.from_pandas(frame, preserve_index=False)
    return frame


@settings(max_examples=140, deadline=None)
@given(scenarios(), st.sampled_from(["pandas", "pandas", "polars", "pyarrow"]))
def test_tables_agree_with_reference(s: dict[str, Any], kind: str) -> None:
    """Pandas tables mostly; polars and pyarrow now and then."""
    recs, truth = (convert(frame, kind) for frame in frames(s))
    _, values = lists_from_rows(s["rec_rows"], by=s["by"], ties=s["ties"])
    run_both(s, recs, truth, values if s["by"] == "score" else None)


@settings(max_examples=100, deadline=None)
@given(scenarios())
def test_mappings_agree_with_reference(s: dict[str, Any]) -> None:
    """The same scenarios given as user -> list and user -> {item: grade} (or item set)."""
    lists, _ = lists_from_rows(s["rec_rows"], by=s["by"], ties=s["ties"])
    truth: Any = s["truth"] if s["graded"] else {u: set(g) for u, g in s["truth"].items()}
    run_both(s, lists, truth, None)


def test_metric_strings_cover_every_parameter_value() -> None:
    """Every parameter value drawn above is accepted and named canonically."""
    for name, choices in METRIC_PARAMS.items():
        for param, values in choices.items():
            for value in values:
                spec = receval.parse_metric(metric_string(name, 3, {param: value}))
                assert spec.name == name
