"""RecBole's beyond-accuracy metrics under ``convention="recbole"`` (issue #34, point 6).

The known values are RecBole 1.2.1's own numbers on tiny inputs, computed by
its metric classes (``tests/conformance/recbole_beyond_runner.py``; the
random workloads of ``tests/conformance/test_recbole_beyond.py`` check the
same under ``-m conformance``), from ``recbole/evaluator/metrics.py``:

- ``AveragePopularity.get_pop``: ``item_count.get(row[j], 0)``, where
  ``data.count_items`` is ``train_data.dataset.item_counter``
  (``evaluator/collector.py``), ``Counter(inter_feat[iid_field])``
  (``data/dataset/dataset.py`` ``Dataset.counter``): every training row,
  repeated (user, item) pairs included — ``arp[unseen=0,count=rows]``.
- ``TailPercentage.get_tail``: ``sorted(count_items.items(), key=lambda kv:
  (kv[1], kv[0]))``, ``cut = max(int(len(count_items) * self.tail), 1)``; with
  ``tail > 1``: ``cnt <= self.tail`` — ``long_tail[rule=ratio,count=rows]``.
- ``ShannonEntropy.get_entropy``: ``p = cnt / total_num``,
  ``-p * np.log(p)`` summed, ``/ len(item_count)`` —
  ``entropy[base=e,divide=items]``.
- ``ItemCoverage.get_coverage`` and ``GiniIndex.get_gini`` divide by
  ``data.num_items`` = ``dataset.num(iid_field)``, which counts the ``[PAD]``
  token ``Dataset._remap`` puts first (a RecBole dataset of 5 items has
  ``num(item_id) == 6``): receval's ``coverage`` and ``gini`` with
  ``catalog=`` RecBole's ids 0..num_items − 1.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.evaluation.conventions import get, variants

# --- RecBole's own numbers ---------------------------------------------------

#: rec.items of three users (RecBole's internal ids; 0 is [PAD], never recommended)
RB_ITEMS = {"a": [1, 2, 3], "b": [4, 5, 1], "c": [2, 1, 6]}
RB_TRUTH = {u: {1: 1} for u in RB_ITEMS}
#: training rows (user, item): item 1 three times (t1 twice), 7 four times (t1 twice)
RB_TRAIN = pd.DataFrame(
    [
        ("t1", 1),
        ("t1", 1),
        ("t2", 1),
        ("t1", 2),
        ("t2", 3),
        ("t3", 3),
        ("t1", 5),
        ("t1", 7),
        ("t1", 7),
        ("t2", 7),
        ("t3", 7),
        ("t4", 8),
    ],
    columns=["user", "item"],
)
#: RecBole's data.num_items: items 1..9 and [PAD]
RB_CATALOG = list(range(10))
#: RecBole 1.2.1 (recbole_beyond_runner.py on the input above, tail_ratio 0.1)
RB_KNOWN = {
    "itemcoverage@1": 0.3,
    "giniindex@1": 0.7,
    "shannonentropy@1": 0.36620409622270317,
    "averagepopularity@1": 1.3333333333333333,
    "tailpercentage@1": 0.3333333333333333,
    "itemcoverage@2": 0.4,
    "giniindex@2": 0.6666666666666667,
    "shannonentropy@2": 0.3324153372136895,
    "averagepopularity@2": 1.5,
    "tailpercentage@2": 0.3333333333333333,
    "itemcoverage@3": 0.6,
    "giniindex@3": 0.5444444444444445,
    "shannonentropy@3": 0.2794979623870696,
    "averagepopularity@3": 1.5555555555555554,
    "tailpercentage@3": 0.2222222222222222,
}
#: RecBole's metric → receval's metric name
OURS = {
    "itemcoverage": "coverage",
    "giniindex": "gini",
    "shannonentropy": "entropy",
    "averagepopularity": "arp",
    "tailpercentage": "tail_percentage",
}


def ours(name: str) -> str:
    """receval's metric string of a RecBole metric name (``giniindex@3`` → ``gini@3``)."""
    metric, k = name.split("@")
    return f"{OURS[metric]}@{k}"


def recbole_summary(res: receval.Result, names: list[str]) -> dict[str, float]:
    params = get("recbole").params
    return {n: res.summary[str(receval.parse_metric(ours(n), params))] for n in names}


def test_recbole_beyond_accuracy_known_values() -> None:
    names = list(RB_KNOWN)
    res = receval.evaluate(
        RB_ITEMS,
        RB_TRUTH,
        [ours(n) for n in names],
        convention="recbole",
        train=RB_TRAIN,
        catalog=RB_CATALOG,
    )
    assert recbole_summary(res, names) == pytest.approx(RB_KNOWN, rel=1e-15, abs=1e-15)


def test_tail_ratio_above_one_and_items_never_trained() -> None:
    """RecBole tail_ratio=2 on the input above: the tail is every item with at
    most 2 training rows (2, 3, 5, 8); 4 and 6, never in training, are not in it."""
    known = {"@1": 0.3333333333333333, "@2": 0.5, "@3": 0.4444444444444444}
    names = [f"long_tail{k}[rule=ratio,ratio=2,count=rows]" for k in known]
    res = receval.evaluate(RB_ITEMS, RB_TRUTH, names, train=RB_TRAIN)
    assert [res.summary[str(receval.parse_metric(n))] for n in names] == pytest.approx(
        list(known.values()), abs=1e-15
    )
    # counted as distinct pairs, item 3 (2 users) and 1 (2 users) are in it too
    pairs = receval.evaluate(RB_ITEMS, RB_TRUTH, "long_tail@3[rule=ratio,ratio=2]", train=RB_TRAIN)
    assert pairs.summary["long_tail@3[ratio=2.0,rule=ratio]"] == pytest.approx(
        (1 + 2 / 3 + 2 / 3) / 3
    )


@pytest.mark.parametrize(("ratio", "known"), [(0.29, 0.28), (0.3, 0.3)])
def test_tail_cut_truncates_as_recbole(ratio: float, known: float) -> None:
    """100 training items, one row each (ties by id): RecBole's cut is
    int(100 × ratio) — 28 for 0.29 (100 × 0.29 = 28.999999999999996), 30 for
    0.3 (RecBole 1.2.1: tailpercentage@100 = 0.28 and 0.3)."""
    train = pd.DataFrame({"user": np.arange(100) % 7, "item": np.arange(100)})
    recs = {"u": list(range(100))}
    name = f"long_tail@100[rule=ratio,ratio={ratio}]"
    res = receval.evaluate(recs, {"u": {0: 1}}, name, train=train)
    assert res.summary[str(receval.parse_metric(name))] == known


# --- hand-worked -------------------------------------------------------------


def test_entropy_base_and_division_by_hand() -> None:
    """Two users, k = 2: items x, x, y, z → p = 1/2, 1/4, 1/4."""
    recs = {1: ["x", "y"], 2: ["x", "z"]}
    truth = {1: {"x": 1}, 2: {"x": 1}}
    names = [
        "entropy@2",
        "entropy@2[base=e]",
        "entropy@2[divide=items]",
        "entropy@2[base=e,divide=items]",
    ]
    got = receval.evaluate(recs, truth, names).summary
    h = 1.5  # bits
    assert got["entropy@2"] == h
    assert got["entropy@2[base=e]"] == pytest.approx(h * math.log(2), abs=1e-15)
    assert got["entropy@2[divide=items]"] == 0.5
    assert got["entropy@2[base=e,divide=items]"] == pytest.approx(h * math.log(2) / 3, abs=1e-15)


def test_entropy_of_short_lists_divides_by_the_filled_slots() -> None:
    """A list shorter than k adds fewer slots: user 2 has one item, so 3 slots
    are filled (x twice, y once), p = 2/3, 1/3 — not users × k = 4 (RecBole's
    lists are always k long, where the two agree)."""
    recs = {1: ["x", "y"], 2: ["x"]}
    got = receval.evaluate(recs, {1: {"x": 1}, 2: {"x": 1}}, "entropy@2", convention="recbole")
    p = np.array([2 / 3, 1 / 3])
    expected = -(p * np.log(p)).sum() / 2
    assert got.summary["entropy@2[base=e,divide=items]"] == pytest.approx(expected, abs=1e-15)


def test_rows_count_repeated_pairs_and_defaults_are_unchanged() -> None:
    """arp over training rows: item 1 has 3 rows (2 users), 7 has 4 (3 users)."""
    recs, truth = {"a": [1, 7]}, {"a": {1: 1}}
    res = receval.evaluate(recs, truth, ["arp@2", "arp@2[count=rows]"], train=RB_TRAIN)
    assert res.summary == {"arp@2": 2.5, "arp@2[count=rows]": 3.5}
    # receval's own defaults: distinct pairs, unseen items 1, the short-head tail
    assert str(receval.parse_metric("long_tail@5")) == "long_tail@5"
    assert str(receval.parse_metric("arp@5")) == "arp@5"
    assert str(receval.parse_metric("entropy@5")) == "entropy@5"
    # the short head over rows: 7 (4 rows) and 1 (3) hold 7 of 12 rows, +3 (2) 9 >= 0.7 × 12
    got = receval.evaluate(
        recs | {"b": [3, 5]},
        truth | {"b": {1: 1}},
        "long_tail@2[head=0.7,count=rows]",
        train=RB_TRAIN,
    )
    assert got.summary["long_tail@2[count=rows,head=0.7]"] == 0.25  # a: 0; b: 5 of [3, 5]


def test_recbole_convention_names_and_parameters() -> None:
    v = variants("tail_percentage@10")
    assert v["recbole"] == "long_tail@10[count=rows,rule=ratio]"
    assert str(receval.parse_metric("tail_percentage@10")) == "long_tail@10"
    assert variants("shannon_entropy@10")["recbole"] == "entropy@10[base=e,divide=items]"
    assert variants("arp@10")["recbole"] == "arp@10[count=rows,unseen=0.0]"
    assert variants("gini@10")["recbole"] == "gini@10"
    assert variants("item_coverage@10")["recbole"] == "coverage@10"
    # another tail_ratio under the convention
    spec = receval.parse_metric("tail_percentage@10[ratio=0.2]", get("recbole").params)
    assert str(spec) == "long_tail@10[count=rows,ratio=0.2,rule=ratio]"


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("long_tail@5[rule=ratio,ratio=0]", "a number > 0"),
        ("long_tail@5[ratio=0.2]", "applies only with rule=ratio"),
        ("long_tail@5[rule=lowest]", "head, ratio"),
        ("arp@5[count=users]", "pairs, rows"),
        ("entropy@5[base=10]", "2, e"),
        ("entropy@5[divide=users]", "none, items"),
    ],
)
def test_wrong_parameters_say_what_is_expected(metric: str, words: str) -> None:
    with pytest.raises(receval.ReceValError, match=words):
        receval.evaluate({1: [1]}, {1: {1: 1}}, metric, train={1: [1]})


# --- a slow literal reference on random data ---------------------------------


def _world(seed: int) -> tuple[dict[int, list[int]], dict[int, dict[int, int]], pd.DataFrame]:
    """Lists (some shorter than k, items never trained among them), truth, and
    training rows with repeated (user, item) pairs."""
    rng = np.random.default_rng(seed)
    lists = {
        u: [int(i) for i in rng.choice(40, int(rng.integers(1, 12)), replace=False)]
        for u in range(30)
    }
    truth = {u: {int(rng.integers(40)): 1} for u in range(30)}
    users = rng.integers(0, 15, 150)
    items = np.minimum(rng.geometric(0.08, 150) - 1, 33)  # items 34..39 never trained
    train = pd.DataFrame({"user": users, "item": items})
    return lists, truth, train


def _ref(lists: dict[int, list[int]], train: pd.DataFrame, k: int, params: dict[str, Any]) -> float:
    """One metric literally: ``params["metric"]`` with RecBole's rules written
    as RecBole writes them (dicts, sorted, loops)."""
    rows = Counter(int(i) for i in train["item"])
    pairs = Counter(int(i) for _, i in set(zip(train["user"], train["item"], strict=True)))
    count = rows if params.get("count") == "rows" else pairs
    tops = [t[:k] for t in lists.values()]
    metric = params["metric"]
    if metric == "entropy":
        c = Counter(i for t in tops for i in t)
        total = sum(c.values())
        log = math.log if params["base"] == "e" else math.log2
        h = -sum(n / total * log(n / total) for n in c.values())
        return h / len(c) if params["divide"] == "items" else h
    if metric == "arp":
        unseen = params["unseen"]
        per = [sum(count.get(i, unseen) for i in t) / len(t) for t in tops]
        return sum(per) / len(per)
    assert metric == "long_tail"
    if params["rule"] == "ratio":
        ratio = params["ratio"]
        if ratio > 1:
            tail = {i for i, n in count.items() if n <= ratio}
        else:
            ordered = sorted(count.items(), key=lambda kv: (kv[1], kv[0]))
            tail = {i for i, _ in ordered[: max(int(len(ordered) * ratio), 1)]}
        per = [sum(i in tail for i in t) / len(t) for t in tops]
    else:  # outside the short head holding `head` of the interactions
        total = sum(count.values())
        head: set[int] = set()
        held = 0
        for i, n in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])):
            if held >= params["head"] * total:
                break
            head.add(i)
            held += n
        per = [sum(i not in head for i in t) / len(t) for t in tops]
    return sum(per) / len(per)


REF_CASES = [
    ("entropy@5[base=e]", {"metric": "entropy", "base": "e", "divide": "none"}),
    ("entropy@5[divide=items]", {"metric": "entropy", "base": "2", "divide": "items"}),
    ("entropy@10[base=e,divide=items]", {"metric": "entropy", "base": "e", "divide": "items"}),
    ("arp@5[count=rows]", {"metric": "arp", "count": "rows", "unseen": 1.0}),
    ("arp@10[count=rows,unseen=0]", {"metric": "arp", "count": "rows", "unseen": 0.0}),
    ("arp@5[unseen=0]", {"metric": "arp", "count": "pairs", "unseen": 0.0}),
    ("long_tail@5[rule=ratio]", {"metric": "long_tail", "rule": "ratio", "ratio": 0.1}),
    (
        "long_tail@10[rule=ratio,ratio=0.37,count=rows]",
        {"metric": "long_tail", "rule": "ratio", "ratio": 0.37, "count": "rows"},
    ),
    (
        "long_tail@5[rule=ratio,ratio=3,count=rows]",
        {"metric": "long_tail", "rule": "ratio", "ratio": 3.0, "count": "rows"},
    ),
    ("long_tail@5[rule=ratio,ratio=1]", {"metric": "long_tail", "rule": "ratio", "ratio": 1.0}),
    (
        "long_tail@5[count=rows,head=0.6]",
        {"metric": "long_tail", "rule": "head", "head": 0.6, "count": "rows"},
    ),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_slow_reference_agrees(seed: int) -> None:
    lists, truth, train = _world(seed)
    names = [m for m, _ in REF_CASES]
    got = receval.evaluate(lists, truth, names, train=train).summary
    for name, params in REF_CASES:
        k = int(name.split("@")[1].split("[")[0])
        value = got[str(receval.parse_metric(name))]
        assert value == pytest.approx(_ref(lists, train, k, params), abs=1e-12), name


# --- every door gives the same number ----------------------------------------

DOOR_METRICS = [
    "arp@3",
    "arp@5",
    "tail_percentage@3",
    "tail_percentage@5[ratio=0.3]",
    "long_tail@5[ratio=2]",
    "entropy@3",
    "entropy@5",
    "coverage@5",
    "gini@5",
    "long_tail@5[rule=head,head=0.5]",
]


def _tables(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    lists, truth, train = _world(seed)
    rng = np.random.default_rng(seed + 100)
    recs = pd.DataFrame(
        [
            (u, i, float(s))
            for u, t in lists.items()
            for i, s in zip(t, rng.permutation(len(t)), strict=True)
        ],
        columns=["user", "item", "score"],
    )
    truth_t = pd.DataFrame(
        [(u, i, g) for u, t in truth.items() for i, g in t.items()],
        columns=["user", "item", "relevance"],
    )
    return recs, truth_t, train


def test_files_mappings_and_accumulator_give_the_same_numbers(tmp_path: Path) -> None:
    recs, truth, train = _tables(5)
    kw: dict[str, Any] = {"convention": "recbole", "catalog": list(range(41))}
    local = receval.evaluate(recs, truth, DOOR_METRICS, train=train, **kw).summary
    # training as a mapping user -> items (repeats kept)
    mapping = {u: list(g["item"]) for u, g in train.groupby("user")}
    assert receval.evaluate(recs, truth, DOOR_METRICS, train=mapping, **kw).summary == local
    for ext in ("csv", "parquet"):
        paths = {}
        for name, table in (("recs", recs), ("truth", truth), ("train", train)):
            paths[name] = str(tmp_path / f"{name}.{ext}")
            getattr(table, f"to_{ext}")(paths[name], index=False)
        files = receval.evaluate(
            paths["recs"], paths["truth"], DOOR_METRICS, train=paths["train"], **kw
        )
        assert files.summary == local, ext
    acc = receval.Accumulator(DOOR_METRICS, train=train, **kw)
    acc.update(recs[recs.user < 15], truth[truth.user < 15])
    acc.update(recs[recs.user >= 15], truth[truth.user >= 15])
    assert acc.compute().summary == local


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_spark_gives_the_same_numbers(spark: Any) -> None:
    """Training rows counted where they lie (Spark's popularity counts) and
    per-user batches on the workers give the local numbers, bit for bit."""
    recs, truth, train = _tables(6)
    kw: dict[str, Any] = {"convention": "recbole", "catalog": list(range(41))}
    local = receval.evaluate(recs, truth, DOOR_METRICS, train=train, **kw)
    res = receval.evaluate(
        spark.createDataFrame(recs),
        spark.createDataFrame(truth),
        DOOR_METRICS,
        train=spark.createDataFrame(train),
        **kw,
    )
    assert res.parameters["engine"] == "spark"
    assert res.summary == local.summary
