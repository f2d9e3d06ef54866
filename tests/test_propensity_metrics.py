"""Propensity-weighted ranking metrics (issue #35 point 1): ``weighting=ips|snips``
and ``clip=`` on recall, precision, AP, nDCG, DCG and hit rate, with ``propensities=``.

Known values are worked by hand from the definitions (docs/counterfactual-metrics.md,
after Yang et al. 2018); a literal reference (Python loops over users) checks random data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError, MetricError, ReceValError

RECS = {"u1": [1, 2, 3, 4], "u2": [5, 6, 7]}
TRUTH = {"u1": [1, 3, 9], "u2": [6, 8]}
PROPS = {1: 0.5, 3: 0.25, 9: 1.0, 6: 0.1, 8: 0.5}
WEIGHTED = ("recall", "precision", "ap", "ndcg", "dcg", "hit_rate")


def _values(metrics: list[str], **kw: Any) -> pd.DataFrame:
    kw.setdefault("propensities", PROPS)
    return receval.evaluate(RECS, TRUTH, metrics, **kw).per_user


def test_known_values_worked_by_hand() -> None:
    # u1: hits 1 (p .5, w 2) at 1 and 3 (p .25, w 4) at 3; relevant weights 2, 4, 1 (Σ 7), R 3
    # u2: hit 6 (w 10) at 2; relevant weights 10, 2 (Σ 12), R 2
    got = _values(
        [
            "recall@3[weighting=ips]",
            "recall@3[weighting=snips]",
            "precision@3[weighting=ips]",
            "ap@3[weighting=ips]",
            "hit_rate@3[weighting=ips]",
            "hit_rate@3[weighting=snips]",
            "ndcg@3[weighting=ips]",
            "dcg@3[weighting=snips]",
        ]
    )
    u1, u2 = got.loc["u1"], got.loc["u2"]
    assert u1.iloc[0] == 6 / 3 and u2.iloc[0] == 10 / 2
    assert u1.iloc[1] == pytest.approx(6 / 7, abs=1e-15) and u2.iloc[1] == pytest.approx(10 / 12)
    assert u1.iloc[2] == 6 / 3 and u2.iloc[2] == pytest.approx(10 / 3)
    # AP: (w·hits@i/i) summed: 2·1 + 4·(2/3) = 14/3, over min(k, R) = 3
    assert u1.iloc[3] == pytest.approx(14 / 9, abs=1e-15)
    assert u2.iloc[3] == pytest.approx(10 * (1 / 2) / 2)
    # hit rate: the mean weight of the hits; snips times R / Σw
    assert u1.iloc[4] == 3.0 and u2.iloc[4] == 10.0
    assert u1.iloc[5] == pytest.approx(3 * 3 / 7) and u2.iloc[5] == pytest.approx(10 * 2 / 12)
    idcg3 = 1 + 1 / math.log2(3) + 1 / 2
    assert u1.iloc[6] == pytest.approx((2 + 4 / 2) / idcg3, abs=1e-15)
    assert u2.iloc[7] == pytest.approx(10 / math.log2(3) * 2 / 12, abs=1e-15)


def test_clip_bounds_the_weights_and_counts_the_pairs() -> None:
    res = receval.evaluate(RECS, TRUTH, ["recall@3[weighting=ips,clip=0.3]"], propensities=PROPS)
    # p .25 -> .3 (w 10/3), p .1 -> .3: two relevant pairs clipped
    assert res.per_user.iloc[:, 0].tolist() == pytest.approx([(2 + 1 / 0.3) / 3, (1 / 0.3) / 2])
    assert res.counts["relevant_pairs_clipped_at_0.3"] == 2


def test_propensity_one_is_the_unweighted_value_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    recs, truth = _random(rng, 60)
    ones = {i: 1.0 for i in range(40)}
    metrics = [f"{m}@{k}" for m in WEIGHTED for k in (1, 5, 30)]
    plain = receval.evaluate(recs, truth, metrics).per_user.to_numpy()
    for w in ("ips", "snips"):
        weighted = [f"{m}[weighting={w}]" for m in metrics]
        got = receval.evaluate(recs, truth, weighted, propensities=ones).per_user.to_numpy()
        assert np.array_equal(got, plain, equal_nan=True)


def _random(rng: np.random.Generator, users: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, trows = [], []
    for u in range(users):
        n = int(rng.integers(0, 12))
        for r, i in enumerate(rng.choice(40, size=n, replace=False)):
            rows.append((u, int(i), r + 1))
        for i in rng.choice(40, size=int(rng.integers(1, 8)), replace=False):
            trows.append((u, int(i), int(rng.integers(0, 4))))
    recs = pd.DataFrame(rows, columns=["user", "item", "rank"])
    truth = pd.DataFrame(trows, columns=["user", "item", "relevance"])
    return recs, truth


def _literal(
    metric: str,
    k: int,
    weighting: str,
    clip: float,
    lst: list[int],
    grades: dict[int, float],
    p: dict[tuple[int, int], float],
    u: int,
) -> float:
    """The weighted metric of one user, written out from its definition."""
    rel = {i: g for i, g in grades.items() if g >= 1}
    w = {i: 1.0 / max(p[(u, i)], clip) for i in rel}
    scale = 1.0 if weighting == "ips" else len(rel) / sum(w.values())
    top = lst[:k]
    hits = [(pos, i) for pos, i in enumerate(top, 1) if i in rel]
    if metric == "recall":
        return sum(w[i] for _, i in hits) / len(rel) * scale
    if metric == "precision":
        return sum(w[i] for _, i in hits) / k * scale
    if metric == "hit_rate":
        return (sum(w[i] for _, i in hits) / len(hits) if hits else 0.0) * scale
    if metric == "ap":
        total = sum(w[i] * (n + 1) / pos for n, (pos, i) in enumerate(hits))
        return total / min(k, len(rel)) * scale
    dcg = sum(w[i] * rel[i] / math.log2(pos + 1) for pos, i in hits) * scale
    if metric == "dcg":
        return dcg
    ideal = sorted(rel.values(), reverse=True)[:k]
    return dcg / sum(g / math.log2(j + 2) for j, g in enumerate(ideal))


def test_literal_reference_on_random_data() -> None:
    rng = np.random.default_rng(11)
    recs, truth = _random(rng, 80)
    p = {
        (int(u), int(i)): float(rng.uniform(0.02, 1.0))
        for u, i in zip(truth.user, truth.item, strict=True)
    }
    table = pd.DataFrame(
        [(u, i, v) for (u, i), v in p.items()], columns=["user", "item", "propensity"]
    )
    lists = recs.groupby("user")["item"].apply(list).to_dict()
    grades = {u: dict(zip(g.item, g.relevance, strict=True)) for u, g in truth.groupby("user")}
    for weighting, clip in (("ips", 0.0), ("snips", 0.0), ("ips", 0.1), ("snips", 0.3)):
        extra = f",clip={clip}" if clip else ""
        metrics = [f"{m}@5[weighting={weighting}{extra}]" for m in WEIGHTED]
        got = receval.evaluate(recs, truth, metrics, propensities=table).per_user
        for u, row in got.iterrows():
            for m, value in zip(WEIGHTED, row, strict=True):
                if not any(g >= 1 for g in grades[u].values()):
                    assert math.isnan(value)  # no relevant item: skipped
                    continue
                want = _literal(m, 5, weighting, clip, lists.get(u, []), grades[u], p, u)
                assert value == pytest.approx(want, rel=1e-12, abs=1e-12), (m, u, weighting)


def test_edge_cases() -> None:
    # k beyond the list: the list's own hits; a user without relevant items is skipped
    res = receval.evaluate(
        {"a": [1], "b": [2]},
        pd.DataFrame({"user": ["a", "b"], "item": [1, 2], "relevance": [1, 0]}),
        ["recall@50[weighting=ips]", "precision@50[weighting=snips]"],
        propensities={1: 0.5, 2: 0.5},
    )
    assert res.per_user.loc["a"].tolist() == [2.0, 1 / 50]
    assert res.per_user.loc["b"].isna().all()
    assert res.counts["users_skipped"]["no_relevant_items"] == 1


def test_item_table_pair_table_file_and_mapping_agree(tmp_path: Path) -> None:
    items = pd.DataFrame({"item": list(PROPS), "propensity": list(PROPS.values())})
    pairs = pd.DataFrame(
        [(u, i, PROPS[i]) for u, its in TRUTH.items() for i in its],
        columns=["user", "item", "propensity"],
    )
    path = tmp_path / "p.csv"
    pairs.to_csv(path, index=False)
    metric = ["ndcg@3[weighting=snips]"]
    want = _values(metric).to_numpy()
    for given in (
        items,
        pairs,
        str(path),
        {(u, i): PROPS[i] for u, its in TRUTH.items() for i in its},
    ):
        assert np.array_equal(_values(metric, propensities=given).to_numpy(), want)


def test_popularity_model_from_train() -> None:
    train = pd.DataFrame({"user": [1, 2, 3, 4, 1], "item": [1, 1, 1, 1, 3]})
    # gamma 3: p_i = (n_i / n_max)^2 -> item 1: 1, item 3: 1/16; 6 and 8, 9 unseen: p = 0
    res = receval.evaluate(
        {"u1": [1, 3]},
        {"u1": [1, 3]},
        ["recall@2[weighting=ips]"],
        propensities="popularity",
        train=train,
        propensity_gamma=3.0,
    )
    assert res.summary["recall@2[weighting=ips]"] == (1 + 16) / 2
    with pytest.raises(MetricError, match="propensity 0"):
        receval.evaluate(
            RECS, TRUTH, ["recall@3[weighting=ips]"], propensities="popularity", train=train
        )
    with pytest.raises(ReceValError, match="train="):
        receval.evaluate(RECS, TRUTH, ["recall@3[weighting=ips]"], propensities="popularity")


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, float("nan")])
def test_bad_propensities_name_the_row_user_and_item(bad: float) -> None:
    table = pd.DataFrame({"user": ["u1", "u2"], "item": [1, 6], "propensity": [0.5, bad]})
    with pytest.raises(InputError) as info:
        _values(["recall@3[weighting=ips]"], propensities=table)
    assert info.value.row == 1 and info.value.user == "u2" and info.value.item == 6
    assert "(0, 1]" in str(info.value)


def test_missing_propensities_and_columns() -> None:
    with pytest.raises(InputError, match="no propensity in propensities=") as info:
        _values(["recall@3[weighting=ips]"], propensities={1: 0.5})
    assert info.value.item is not None
    with pytest.raises(InputError, match="propensity"):
        _values(["recall@3[weighting=ips]"], propensities=pd.DataFrame({"item": [1], "x": [1.0]}))
    with pytest.raises(ReceValError, match="needs propensities="):
        receval.evaluate(RECS, TRUTH, ["recall@3[weighting=ips]"])
    with pytest.raises(MetricError, match="clip= applies only"):
        receval.evaluate(RECS, TRUTH, ["recall@3[clip=0.1]"])
    with pytest.raises(MetricError, match="scores=positive"):
        receval.evaluate(
            RECS, TRUTH, ["recall@3[weighting=ips,scores=positive]"], propensities=PROPS
        )


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from receval.cli._main import main

    pd.DataFrame(
        [(u, i, r + 1) for u, its in RECS.items() for r, i in enumerate(its)],
        columns=["user", "item", "rank"],
    ).to_csv(tmp_path / "r.csv", index=False)
    pd.DataFrame(
        [(u, i) for u, its in TRUTH.items() for i in its], columns=["user", "item"]
    ).to_csv(tmp_path / "t.csv", index=False)
    pd.DataFrame({"item": list(PROPS), "propensity": list(PROPS.values())}).to_csv(
        tmp_path / "p.csv", index=False
    )
    args = [str(tmp_path / "r.csv"), str(tmp_path / "t.csv"), "-m", "recall@3[weighting=ips]"]
    assert main(["evaluate", *args, "--propensities", str(tmp_path / "p.csv"), "--json"]) == 0
    assert '"recall@3[weighting=ips]": 3.5' in capsys.readouterr().out
    pd.DataFrame({"item": [1], "propensity": [2.0]}).to_csv(tmp_path / "bad.csv", index=False)
    assert main(["evaluate", *args, "--propensities", str(tmp_path / "bad.csv")]) == 2
    err = capsys.readouterr().err
    assert "bad.csv, line 2" in err and "Traceback" not in err
    assert main(["evaluate", *args]) == 2
    assert "--propensities" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_engine_gives_the_same_numbers(spark: Any) -> None:
    from tests.test_every_door import WEIGHTED, _w_pandas, _weighted_data, check_door

    d = _weighted_data("text")
    res = receval.evaluate(
        spark.createDataFrame(d["recs"]),
        spark.createDataFrame(d["truth"]),
        WEIGHTED,
        propensities=d["propensities"],
        depth=5,
        unjudged="condense",
        empty_truth="keep",
    )
    assert res.parameters["engine"] == "spark"
    got = (dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns})
    check_door(got, _w_pandas(d, Path(".")))


def test_row_order_and_heavy_users_change_nothing() -> None:
    """Each user's Σw adds its weights in ascending order: shuffled truth rows give the
    same bits; a user with many relevant items (the sorting path, not the padded rows)
    agrees with the literal reference."""
    rng = np.random.default_rng(3)
    recs, truth = _random(rng, 30)
    heavy = pd.DataFrame({"user": 999, "item": np.arange(200), "relevance": 1})
    truth = pd.concat([truth, heavy], ignore_index=True)
    recs = pd.concat([recs, pd.DataFrame({"user": 999, "item": [5, 300, 7], "rank": [1, 2, 3]})])
    p = {
        (int(u), int(i)): float(rng.uniform(0.02, 1.0))
        for u, i in zip(truth.user, truth.item, strict=True)
    }
    table = pd.DataFrame(
        [(u, i, v) for (u, i), v in p.items()], columns=["user", "item", "propensity"]
    )
    metrics = ["recall@5[weighting=snips]", "ndcg@5[weighting=snips,clip=0.1]"]
    want = receval.evaluate(recs, truth, metrics, propensities=table).per_user
    shuffled = truth.sample(frac=1.0, random_state=1)
    got = receval.evaluate(recs, shuffled, metrics, propensities=table).per_user
    assert np.array_equal(got.to_numpy(), want.to_numpy(), equal_nan=True)
    lst = [5, 300, 7]
    grades = {i: 1 for i in range(200)}
    assert want.loc[999].iloc[0] == pytest.approx(
        _literal("recall", 5, "snips", 0.0, lst, grades, p, 999), rel=1e-12
    )


def test_propensity_strata_split_the_truth_as_cornac() -> None:
    truth = pd.DataFrame(
        {"user": ["u1", "u1", "u2", "u2"], "item": [1, 3, 3, 9], "rating": [5, 4, 3, 1]}
    )
    props = {1: 0.9, 3: 0.1, 9: 0.52}  # width (0.9 - 0.1) / 2: Q1 [0.1, 0.5), Q2 the rest
    table = receval.propensity_strata(
        RECS, truth, ["recall@3", "ndcg@3"], propensities=props, n_strata=2
    )
    assert table.index.tolist() == ["all", "Q1", "Q2"]
    assert table["pairs"].tolist() == [4, 2, 2]
    for name, keep in (("Q1", [3]), ("Q2", [1, 9])):
        sub = truth[truth["item"].isin(keep)]
        want = receval.evaluate(RECS, sub, ["recall@3", "ndcg@3"]).summary
        assert table.loc[name, "recall@3"] == want["recall@3"]
        assert table.loc[name, "ndcg@3"] == want["ndcg@3"]
    with pytest.raises(ReceValError, match="n_strata"):
        receval.propensity_strata(RECS, truth, ["recall@3"], propensities=props, n_strata=0)


@pytest.mark.spark
def test_spark_command_line_reads_a_propensity_file(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from receval.cli._main import main
    from tests.test_every_door import WEIGHTED, _w_pandas, _weighted_data, _write

    d = _weighted_data("int")
    p = _write(d, tmp_path, "csv")
    args = ["evaluate", "--engine", "spark", str(p["recs"]), str(p["truth"])]
    for m in WEIGHTED:
        args += ["-m", m]
    args += ["--propensities", str(p["propensities"]), "--json", "-q"]
    args += ["--depth", "5", "--unjudged", "condense", "--empty-truth", "keep"]
    assert main(args) == 0
    got = json.loads(capsys.readouterr().out)["metrics"]
    want = _w_pandas(d, tmp_path)[0]
    assert got == pytest.approx(want, rel=0, abs=0)


@pytest.mark.parametrize("duplicates", ["join", "left_join", "count_distinct"])
def test_weighting_refuses_rows_joined_or_counted_distinct(duplicates: str) -> None:
    """A weighted metric reads each relevant item once: the duplicates modes that
    join repeated rows (RecTools, Recommenders) or count them distinct (RePlay) are
    refused, naming the option."""
    recs = pd.DataFrame({"user": [1, 1, 1], "item": ["a", "a", "b"], "rank": [1, 2, 3]})
    truth = pd.DataFrame({"user": [1, 1], "item": ["a", "b"]})
    props = pd.DataFrame({"item": ["a", "b"], "propensity": [0.5, 0.25]})
    with pytest.raises(receval.OptionError, match="duplicates"):
        receval.evaluate(
            recs, truth, "recall@3[weighting=ips]", propensities=props, duplicates=duplicates
        )
