"""Beyond-accuracy metrics (SPEC §6): known values, edge cases, and a slow reference."""

from __future__ import annotations

import csv
import itertools
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval import ReceValError

# --- known values: tests/data/known_values_beyond.csv ------------------------

DATA = Path(__file__).parent / "data" / "known_values_beyond.csv"

TRAIN = pd.DataFrame(
    {"user": [1, 1, 2, 2, 3, 3, 3, 4], "item": ["a", "b", "a", "c", "a", "b", "d", "a"]}
)
# pop: a 4, b 2, c 1, d 1; 4 training users; 8 distinct (user, item) pairs

CASES: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "spec_coverage": (
        {1: [1, 3, 5, 7, 9], 2: [2, 4, 6, 8], 3: list(range(11, 18))},
        {1: [2, 3, 5, 7, 11], 2: [1, 4, 6, 8, 9], 3: list(range(16, 21))},
        {"catalog": range(1, 21)},
    ),
    "spec_serendipity": (
        {
            1: [1, 3, 5, 7, 9, 2, 4, 6, 8, 11],
            2: [2, 4, 6, 8, 1, 3, 5, 7, 9, 12],
            3: [11, 12, 13, 14, 15, 16, 17, 1, 3, 5],
        },
        {
            1: [2, 3, 5, 7, 11, 13, 15, 17],
            2: [1, 4, 6, 8, 9, 11, 14, 16],
            3: [1, 3, 5, 7, 9, 11, 12, 13, 15, 17],
        },
        {"popular": range(1, 10)},
    ),
    "unseen": ({10: ["a", "zzz"], 11: ["c"]}, {10: ["a"], 11: ["c"]}, {"train": TRAIN}),
    "tail": ({10: ["a", "d", "c", "e"]}, {10: ["a"]}, {"train": TRAIN}),
    "dense": (
        {1: ["a"], 2: ["a", "b"], 3: ["a", "c", "nofeat"]},
        {1: ["a"], 2: ["a"], 3: ["a"]},
        {
            "item_features": pd.DataFrame(
                {"x": [1.0, 0.0, 1.0], "y": [0.0, 1.0, 1.0]}, index=["a", "b", "c"]
            )
        },
    ),
    "categories": (
        {1: ["a", "b", "c"]},
        {1: ["a"]},
        {"item_features": {"a": {"x", "y"}, "b": {"y"}, "c": {"z"}}},
    ),
    "same_list": (
        {u: [1, 2, 3] for u in range(5)},
        {u: [1] for u in range(5)},
        {"catalog": range(1, 101)},
    ),
    "disjoint": (
        {u: [10 * u + j for j in range(3)] for u in range(4)},
        {u: [10 * u] for u in range(4)},
        {"catalog": range(40)},
    ),
    "outside_catalog": ({1: [1, 2, 3, 4], 2: [3, 9]}, {1: [1], 2: [3]}, {"catalog": [1, 2, 3]}),
    "user_coverage": ({1: [1, 2, 3], 2: [1]}, {1: [1], 2: [1], 3: [1]}, {}),
    # item groups: pop = {10, 11, 12}, tail = {12, 13, 14} (12 in both)
    "groups": (
        {1: [10, 11, 12], 2: [12, 13, 10], 3: [14, 10]},
        {1: [10, 13], 2: [13], 3: [11, 14]},
        {
            "train": {1: [11, 14], 2: [10, 14], 3: [12]},
            "item_groups": {10: "pop", 11: "pop", 12: ["pop", "tail"], 13: "tail", 14: "tail"},
        },
    ),
    "groups_no_history": (
        {1: [10, 13], 2: [13]},
        {1: [10], 2: [13]},
        {"train": {1: [99]}, "item_groups": {10: "pop", 13: "tail"}},
    ),
}


def _rows() -> list[dict[str, str]]:
    with DATA.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['case']}-{r['metric']}-{r['user']}")
def test_known_values(row: dict[str, str]) -> None:
    lists, truth, kwargs = CASES[row["case"]]
    res = receval.evaluate(lists, truth, row["metric"], **kwargs)
    name = str(receval.parse_metric(row["metric"]))
    if row["user"]:
        user: Any = int(row["user"]) if row["user"].isdigit() else row["user"]
        got = res.per_user.loc[user, name]
    else:
        got = res.summary[name]
    expected = float(row["expected"])
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12), row["why"]


def test_known_cases_report_what_they_used() -> None:
    lists, truth, kw = CASES["spec_coverage"]
    res = receval.evaluate(lists, truth, ["coverage", "prediction_coverage"], **kw)
    assert "coverage" not in res.per_user.columns
    assert res.parameters["catalog"] == "catalog" and res.parameters["catalog_items"] == 20
    lists, truth, kw = CASES["unseen"]
    assert receval.evaluate(lists, truth, "arp", **kw).parameters["training_users"] == 4
    lists, truth, kw = CASES["dense"]
    assert receval.evaluate(lists, truth, "ild@3", **kw).counts["undefined"] == {"ild@3": 1}


def test_catalog_smaller_than_recommended_set_is_counted() -> None:
    res = receval.evaluate(
        {1: [1, 2, 3, 4], 2: [3, 9]}, {1: [1], 2: [3]}, ["coverage", "gini"], catalog=[1, 2, 3]
    )
    assert res.summary["coverage"] == pytest.approx(1.0)
    assert res.counts["recommended_items_outside_catalog"] == 2  # items 4 and 9


def test_catalog_from_train() -> None:
    res = receval.evaluate({1: ["a", "q"]}, {1: ["a"]}, "coverage", train=TRAIN)
    assert res.parameters["catalog"] == "train"
    assert res.summary["coverage"] == pytest.approx(1 / 4)


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("novelty@10", "train="),
        ("arp", "train="),
        ("long_tail@5", "train="),
        ("ild@5", "item_features="),
        ("coverage", "catalog= or train="),
        ("gini@10", "catalog="),
        ("serendipity@10", "popular= or train="),
        ("personalization", "needs a cut-off"),
    ],
)
def test_missing_inputs_fail_before_any_work(metric: str, words: str) -> None:
    with pytest.raises(ReceValError) as info:
        # the recommendations are not even a table: the check comes first
        receval.evaluate(object(), object(), metric)
    assert words in str(info.value)
    assert "--" not in str(info.value)  # Python's syntax; the CLI says --train (cli_message)


# --- user policies: they concern the metrics that need the truth ------------


LIST_ONLY = ["novelty@2", "arp@2", "long_tail@2", "user_coverage@2", "ild@2"]


@pytest.mark.parametrize("option", ["empty_truth", "no_truth"])
def test_zero_policies_keep_the_values_of_list_only_metrics(option: str) -> None:
    """Regression: empty_truth/no_truth="zero" zeroed novelty, arp, ... of the user.

    User 2 has nothing relevant (empty_truth) or is not in the truth at all
    (no_truth): metrics of the truth score 0, metrics of the list keep the
    list's value (the issue's numbers: novelty 1.085, arp 1.5, user_coverage 1).
    """
    recs = {1: ["a", "b"], 2: ["a", "b"]}
    truth: dict[int, Any] = {1: ["a"]}
    if option == "empty_truth":
        truth[2] = {"z": 0}
    feats = pd.DataFrame({"x": [1.0, 0.0], "y": [0.0, 1.0]}, index=["a", "b"])
    metrics = [*LIST_ONLY, "precision@2", "serendipity@2"]
    res = receval.evaluate(
        recs, truth, metrics, train=TRAIN, item_features=feats, **{option: "zero"}
    )
    row = res.per_user.loc[2]
    assert row["novelty@2"] == pytest.approx((-math.log2(4 / 4) - math.log2(2 / 4)) / 2)
    assert row["arp@2"] == 3.0 and row["user_coverage@2"] == 1.0 and row["ild@2"] == 1.0
    assert row["long_tail@2"] == res.per_user.loc[1, "long_tail@2"]
    assert row["precision@2"] == 0.0 and row["serendipity@2"] == 0.0
    assert (
        res.counts["users_scored_zero"]["no_truth" if option == "no_truth" else "no_relevant_items"]
        == 1
    )
    # skip leaves the user out of every metric alike: one population of users
    skipped = receval.evaluate(recs, truth, metrics, train=TRAIN, item_features=feats)
    assert skipped.per_user.loc[2].isna().all()


def test_zero_policy_keeps_an_undefined_list_value_undefined() -> None:
    """ild of a one-item list is NaN (undefined, counted), not a 0 from the policy."""
    feats = pd.DataFrame({"x": [1.0, 0.0], "y": [0.0, 1.0]}, index=["a", "b"])
    res = receval.evaluate(
        {1: ["a", "b"], 2: ["a"]}, {1: ["a"]}, "ild", item_features=feats, no_truth="zero"
    )
    assert math.isnan(res.per_user.loc[2, "ild"])
    assert res.counts["undefined"] == {"ild": 1}


def test_issue_example_novelty_arp_user_coverage() -> None:
    train = pd.DataFrame({"user": [1, 2, 1, 3], "item": [10, 10, 11, 12]})
    res = receval.evaluate(
        {1: [10, 11], 2: [10, 12]},
        {1: [10], 2: {99: 0}},
        ["novelty@2", "arp@2", "user_coverage@2"],
        train=train,
        empty_truth="zero",
    )
    assert res.per_user.loc[2].round(3).tolist() == [1.085, 1.5, 1.0]


def test_novelty_of_an_item_every_training_user_has_is_plus_zero() -> None:
    """Regression: −log2(4/4) is −0.0, which printed as "-0.0"."""
    train = pd.DataFrame({"user": [1, 2], "item": ["a", "a"]})
    res = receval.evaluate({1: ["a"]}, {1: ["a"]}, "novelty", train=train)
    value = res.per_user.loc[1, "novelty"]
    assert value == 0.0 and math.copysign(1.0, value) == 1.0
    assert math.copysign(1.0, res.summary["novelty"]) == 1.0
    assert "-0" not in res.to_markdown()


# --- a slow reference on random data ---------------------------------------


#: The metrics the slow reference below computes.
BASE_NAMES = {
    "user_coverage",
    "novelty",
    "arp",
    "long_tail",
    "serendipity",
    "ild",
    "coverage",
    "prediction_coverage",
    "gini",
    "entropy",
    "personalization",
}
#: The item-group metrics the slow reference of item groups computes.
GROUP_NAMES = {"rsp", "reo", "exposure", "awrf", "miscalibration"}
REFERENCE_NAMES = BASE_NAMES | GROUP_NAMES


def _ref(
    lists: dict[int, list[int]],
    truth: dict[int, set[int]],
    train: list[tuple[int, int]],
    catalog: list[int],
    feats: dict[int, np.ndarray],
    k: int,
) -> dict[str, float]:
    users_of: dict[int, set[int]] = {}
    for u, i in train:
        users_of.setdefault(i, set()).add(u)
    n_train = len({u for u, _ in train})

    def pop(i: int) -> float:
        return float(len(users_of[i])) if i in users_of else 1.0

    evaluated = [u for u in sorted(set(lists) | set(truth)) if truth.get(u)]
    tops = {u: lists.get(u, [])[:k] for u in evaluated}
    out: dict[str, Any] = {}

    def mean(values: list[float]) -> float:
        values = [v for v in values if not math.isnan(v)]
        return sum(values) / len(values) if values else math.nan

    out["user_coverage"] = mean([float(len(lists.get(u, [])) >= k) for u in evaluated])
    out["novelty"] = mean(
        [
            sum(-math.log2(pop(i) / n_train) for i in t) / len(t) if t else math.nan
            for t in tops.values()
        ]
    )
    out["arp"] = mean([sum(pop(i) for i in t) / len(t) if t else math.nan for t in tops.values()])
    # short head: most popular training items holding 80% of the interactions
    seen = sorted(users_of, key=lambda i: (-len(users_of[i]), i))
    total = sum(len(users_of[i]) for i in seen)
    head: set[int] = set()
    acc = 0
    for i in seen:
        if acc >= 0.8 * total:
            break
        head.add(i)
        acc += len(users_of[i])
    out["long_tail"] = mean(
        [sum(i not in head for i in t) / len(t) if t else math.nan for t in tops.values()]
    )
    ranked_catalog = sorted(catalog, key=lambda i: (-pop(i), i))
    popular = set(ranked_catalog[: math.ceil(0.1 * len(catalog))])
    out["serendipity"] = mean(
        [len([i for i in t if i in truth[u] and i not in popular]) / k for u, t in tops.items()]
    )

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    ilds = []
    for t in tops.values():
        with_f = [i for i in t if i in feats and np.linalg.norm(feats[i]) > 0]
        pairs = list(itertools.combinations(with_f, 2))
        ilds.append(
            1 - sum(cos(feats[a], feats[b]) for a, b in pairs) / len(pairs) if pairs else math.nan
        )
    out["ild"] = mean(ilds)
    exposure = Counter(i for t in tops.values() for i in t)
    cat = set(catalog)
    out["coverage"] = len([i for i in exposure if i in cat]) / len(cat)
    shown = sum(c for i, c in exposure.items() if i in cat)
    out["prediction_coverage"] = shown / (len(evaluated) * len(cat)) if evaluated else math.nan
    x = [exposure.get(i, 0) for i in cat]
    mu = sum(x) / len(x)
    out["gini"] = sum(abs(a - b) for a in x for b in x) / (2 * len(x) ** 2 * mu) if mu else math.nan
    n_slots = sum(exposure.values())
    out["entropy"] = (
        -sum(c / n_slots * math.log2(c / n_slots) for c in exposure.values())
        if n_slots
        else math.nan  # nothing shown: no distribution
    )
    us = list(tops)
    pairs = list(itertools.combinations(us, 2))
    out["personalization"] = (
        1 - sum(len(set(tops[a]) & set(tops[b])) / k for a, b in pairs) / len(pairs)
        if pairs
        else math.nan
    )
    return out


def _random_world(
    data: st.DataObject, smallest: int
) -> tuple[np.random.Generator, int, int, dict, dict, list]:
    """A random generator, item count, cut-off, lists, truth and training pairs."""
    seed = data.draw(st.integers(0, 10**6))
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(smallest, smallest + 25))
    k = int(data.draw(st.sampled_from([1, 2, 3, 5, 10])))
    lists = {
        u: [
            int(i)
            for i in rng.choice(n_items, int(rng.integers(0, min(n_items, 12))), replace=False)
        ]
        for u in range(int(rng.integers(2, 12)))
    }
    truth = {
        u: {int(i) for i in rng.choice(n_items, int(rng.integers(0, 4)))}
        for u in range(int(rng.integers(1, 14)))
    }
    train = [
        (int(u), int(i))
        for u, i in zip(rng.integers(0, 8, 40), rng.integers(0, n_items + 3, 40), strict=True)
    ]
    return rng, n_items, k, lists, truth, train


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_beyond_metrics_agree_with_a_slow_reference(data: st.DataObject) -> None:
    rng, n_items, k, lists, truth, train = _random_world(data, 5)
    catalog = sorted({int(i) for i in rng.choice(n_items + 5, n_items)})
    feats = {i: rng.integers(0, 3, 3).astype(float) for i in range(n_items) if rng.random() < 0.8}
    expected = _ref(lists, truth, train, catalog, feats, k)
    assert set(expected) == BASE_NAMES
    names = [f"{m}@{k}" for m in expected]
    frame = pd.DataFrame.from_dict(feats, orient="index")
    res = receval.evaluate(
        lists,
        {u: sorted(t) for u, t in truth.items()},
        names,
        train=pd.DataFrame(train, columns=["user", "item"]),
        catalog=catalog,
        item_features=frame,
    )
    for name, value in expected.items():
        got = res.summary[f"{name}@{k}"]
        if math.isnan(value):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(value, abs=1e-9), name


# --- item groups: a slow reference -------------------------------------------


def _ref_groups(
    lists: dict[int, list[int]],
    truth: dict[int, set[int]],
    train: list[tuple[int, int]],
    catalog: list[int],
    groups: dict[int, set[str]],
    k: int,
) -> dict[str, float]:
    """rsp, reo, exposure, awrf and miscalibration written from their papers'
    formulas, one user and one group at a time (see docs/groups.md)."""
    labels = sorted({g for gs in groups.values() for g in gs})
    evaluated = [u for u in sorted(set(lists) | set(truth)) if truth.get(u)]
    tops = {u: lists.get(u, [])[:k] for u in evaluated}
    history: dict[int, set[int]] = {}
    for u, i in train:
        history.setdefault(u, set()).add(i)
    members = {g: {i for i, gs in groups.items() if g in gs} for g in labels}
    out: dict[str, float] = {}

    def spread(p: list[float]) -> float:
        p = [x for x in p if not math.isnan(x)]
        if not p or sum(p) == 0:
            return math.nan
        mu = sum(p) / len(p)
        return math.sqrt(sum((x - mu) ** 2 for x in p) / len(p)) / mu

    p_rsp, p_reo = [], []
    for g in labels:
        slots = sum(1 for t in tops.values() for i in t if i in members[g])
        den = sum(len(members[g] - history.get(u, set())) for u in evaluated)
        p_rsp.append(slots / den if den else math.nan)
        hits = sum(1 for u, t in tops.items() for i in t if i in members[g] and i in truth[u])
        rel = sum(len(members[g] & truth[u]) for u in evaluated)
        p_reo.append(hits / rel if rel else math.nan)
    out["rsp"], out["reo"] = spread(p_rsp), spread(p_reo)

    def a(rank: int) -> float:
        return 1 / math.log2(rank + 1)

    total = sum(a(r) for t in tops.values() for r in range(1, len(t) + 1))
    got = sum(a(r) for t in tops.values() for r, i in enumerate(t, 1) if i in members[labels[0]])
    out["exposure"] = got / total if total else math.nan

    fair = []
    for t in tops.values():
        eps = [0.0] * len(labels)
        for r, i in enumerate(t, 1):
            for g in groups.get(i, set()):
                eps[labels.index(g)] += a(r) / len(groups[i])
        if sum(eps) == 0:
            fair.append(math.nan)
            continue
        eps = [x / sum(eps) for x in eps]
        # x log(x / z) with x = 0 adds nothing
        div = sum(
            (0.5 * x * math.log2(x / ((x + y) / 2)) if x else 0.0)
            + (0.5 * y * math.log2(y / ((x + y) / 2)) if y else 0.0)
            for x, y in zip(eps, [1 / len(labels)] * len(labels), strict=True)
        )
        fair.append(1 - div)
    out["awrf"] = _mean(fair)

    cal = []
    for u, t in tops.items():
        hist = [i for i in sorted(history.get(u, set())) if groups.get(i)]
        if not hist:
            cal.append(math.nan)
            continue
        shown = [i for i in t if groups.get(i)]
        c = 0.0
        for g in labels:
            p = sum(1 / len(groups[i]) for i in hist if g in groups[i]) / len(hist)
            q = (
                sum(1 / len(groups[i]) for i in shown if g in groups[i]) / len(shown)
                if shown
                else 0
            )
            if p > 0:
                c += p * math.log(p / (0.99 * q + 0.01 * p))
        cal.append(c)
    out["miscalibration"] = _mean(cal)
    return out


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_item_group_metrics_agree_with_a_slow_reference(data: st.DataObject) -> None:
    rng, n_items, k, lists, truth, train = _random_world(data, 4)
    names = ["a", "b", "c"][: int(rng.integers(1, 4))]
    groups: dict[int, set[str]] = {}
    for i in range(n_items + 3):
        chosen = {str(g) for g in names if rng.random() < 0.4}
        if chosen:
            groups[i] = chosen
    if not groups:
        groups[0] = {"a"}
    first = sorted({g for gs in groups.values() for g in gs})[0]
    expected = _ref_groups(lists, truth, train, list(range(n_items)), groups, k)
    assert set(expected) == GROUP_NAMES
    metrics = [f"{m}@{k}" for m in expected if m != "exposure"] + [f"exposure@{k}[group={first}]"]
    res = receval.evaluate(
        lists,
        {u: sorted(t) for u, t in truth.items()},
        metrics,
        train=pd.DataFrame(train, columns=["user", "item"]),
        item_groups={i: sorted(gs) for i, gs in groups.items()},
    )
    for name, metric in zip(
        [*[m for m in expected if m != "exposure"], "exposure"], metrics, strict=True
    ):
        got, value = res.summary[metric], expected[name]
        if math.isnan(value):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(value, abs=1e-9), (name, got, value)
