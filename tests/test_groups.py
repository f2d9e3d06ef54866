"""User groups (issue #20 point 1): each group's row is its users evaluated alone,
bit for bit, through every input door; built-in groupings from train; errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import receval
from receval.errors import InputError, ReceValError
from receval.evaluation.groups import ACTIVITY_EDGES

SRC = str(Path(__file__).resolve().parents[1] / "src")
METRICS = [
    "ndcg@5",
    "precision@3",
    "ap@5",
    "err@5",
    "hit_rate@5",
    "coverage@5",
    "gini@5",
    "novelty@5",
    "personalization@3",
]


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    users, items = int(rng.integers(20, 80)), int(rng.integers(10, 40))
    n = users * 6
    recs = pd.DataFrame(
        {
            "user": rng.integers(0, users, n),
            "item": rng.integers(0, items, n),
            "score": rng.integers(0, 5, n).astype(float),  # ties: broken by item id
        }
    ).drop_duplicates(["user", "item"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(0, users + 5, users * 2),  # some users without a list
            "item": rng.integers(0, items, users * 2),
            "relevance": rng.integers(1, 5, users * 2),  # graded: err uses the group's max
        }
    ).drop_duplicates(["user", "item"])
    everyone = np.arange(users + 5)
    groups = pd.DataFrame(
        {
            "user": everyone,
            "region": rng.choice(["north", "south", "east"], len(everyone)),
            "tier": rng.choice([1.0, 2.0, np.nan], len(everyone)),  # nulls: no group
        }
    ).iloc[rng.permutation(len(everyone))[: len(everyone) - 3]]  # 3 users in no row
    train = pd.DataFrame(
        {"user": rng.integers(0, users, users * 4), "item": rng.integers(0, items, users * 4)}
    )
    return recs, truth, groups, train


def _alone(recs, truth, users, metrics, **kw) -> receval.Result:
    keep = list(users)
    return receval.evaluate(
        recs[recs["user"].isin(keep)], truth[truth["user"].isin(keep)], metrics, **kw
    )


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == b


#: without err (whose default normaliser is the truth's largest grade) the groups
#: are cut out of the one evaluation pass; with it each group is read alone
ONE_PASS = [m for m in METRICS if not m.startswith("err")]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "policy", [{}, {"empty_truth": "zero", "missing_recs": "skip"}, {"threshold": 3}]
)
@pytest.mark.parametrize("metrics", [METRICS, ONE_PASS], ids=["alone", "one_pass"])
def test_each_group_is_its_users_evaluated_alone(seed: int, policy: dict, metrics: list) -> None:
    recs, truth, groups, train = _data(seed)
    res = receval.evaluate(recs, truth, metrics, user_groups=groups, train=train, **policy)
    assert list(res.groups.columns) == [*res.summary, "users"]
    seen = 0
    for (grouping, label), row in res.groups.iterrows():
        members = groups.loc[groups[grouping] == label, "user"]
        alone = _alone(recs, truth, members, metrics, train=train, **policy)
        for m in alone.summary:
            assert _same(alone.summary[m], row[m]), (grouping, label, m)
        assert row["users"] == alone.counts["users_evaluated"]
        mine = res.group_results[grouping, label]
        assert mine.counts == alone.counts, (grouping, label)
        pd.testing.assert_frame_equal(mine.per_user, alone.per_user, check_exact=True)
        seen += 1
    assert seen == len(res.groups)
    # the main evaluation is unchanged by the groups
    plain = receval.evaluate(recs, truth, metrics, train=train, **policy)
    assert plain.summary == res.summary or all(
        _same(plain.summary[m], res.summary[m]) for m in plain.summary
    )
    assert plain.counts == {k: v for k, v in res.counts.items() if k != "user_groups"}
    pd.testing.assert_frame_equal(plain.per_user, res.per_user, check_exact=True)
    every = set(recs["user"]) | set(truth["user"])
    for name in ("region", "tier"):
        placed = set(groups.loc[groups[name].notna(), "user"])
        assert res.counts["user_groups"][name]["users_without_group"] == len(every - placed)
    assert res.counts["user_groups"]["tier"]["users_with_a_null_group"] == int(
        groups["tier"].isna().sum()
    )


def test_groups_through_every_door(tmp_path: Path) -> None:
    """Tables of any kind, mappings and files (CSV, and two Parquet files read by
    chunks) give the same groups; so do the groups given as any kind of table, a
    mapping or a file, and the command line."""
    recs, truth, groups, train = _data(11)
    groups = groups.dropna()[["user", "region"]]
    metrics = ["ndcg@5", "precision@3", "coverage@5"]
    want = receval.evaluate(recs, truth, metrics, user_groups=groups, train=train).groups
    recs.to_csv(tmp_path / "recs.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    recs.to_parquet(tmp_path / "recs.parquet", index=False)
    truth.to_parquet(tmp_path / "truth.parquet", index=False)
    groups.to_csv(tmp_path / "groups.csv", index=False)
    groups.to_parquet(tmp_path / "groups.parquet", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)
    inputs = [
        (pl.from_pandas(recs), pl.from_pandas(truth)),
        (pa.Table.from_pandas(recs), pa.Table.from_pandas(truth)),
        (str(tmp_path / "recs.csv"), str(tmp_path / "truth.csv")),
        (str(tmp_path / "recs.parquet"), str(tmp_path / "truth.parquet")),
    ]
    for r, t in inputs:
        got = receval.evaluate(r, t, metrics, user_groups=groups, train=train).groups
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    given = [
        pl.from_pandas(groups),
        pa.Table.from_pandas(groups, preserve_index=False),
        str(tmp_path / "groups.csv"),
        tmp_path / "groups.parquet",
    ]
    for g in given:
        got = receval.evaluate(recs, truth, metrics, user_groups=g, train=train).groups
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    mapping = dict(zip(groups["user"], groups["region"], strict=True))
    got = receval.evaluate(recs, truth, metrics, user_groups=mapping, train=train).groups
    assert got.index.get_level_values("grouping").unique().tolist() == ["group"]
    assert np.array_equal(got.to_numpy(), want.to_numpy())
    done = subprocess.run(
        [sys.executable, "-m", "receval", "evaluate", "recs.csv", "truth.csv"]
        + [f"--metric={m}" for m in metrics]
        + ["--user-groups", "groups.csv", "--train", "train.csv", "-o", "json"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["groups"]
    assert [(r["grouping"], r["group"]) for r in rows] == list(want.index)
    for r, (_, w) in zip(rows, want.iterrows(), strict=True):
        assert [r[m] for m in [*metrics, "users"]] == [w[m] for m in [*metrics, "users"]]


def test_activity_and_cold_start_from_train() -> None:
    """activity buckets by distinct training items (repeats count once); users
    without a training row are bucket 0 and cold."""
    sizes = {1: 1, 2: 4, 3: 5, 4: 19, 5: 20, 6: 99, 7: 100, 8: 250}
    train = pd.DataFrame(
        [(u, i) for u, n in sizes.items() for i in range(n)] + [(1, 0)],  # a repeat
        columns=["user", "item"],
    )
    users = [*sizes, 9, 10]  # 9 and 10 have no training row
    truth = pd.DataFrame({"user": users, "item": 999})
    recs = pd.DataFrame({"user": users, "item": 999, "rank": 1})
    res = receval.evaluate(recs, truth, "hit_rate@1", user_groups="activity", train=train)
    assert ACTIVITY_EDGES == (0, 1, 5, 20, 100)
    groups = res.groups.loc["activity"]
    assert groups.index.tolist() == ["0", "1-4", "5-19", "20-99", "100+"]
    assert groups["users"].tolist() == [2, 2, 2, 2, 2]
    assert groups["hit_rate@1"].tolist() == [1.0] * 5
    cold = receval.evaluate(recs, truth, "hit_rate@1", user_groups="cold_start", train=train)
    assert cold.groups.loc["cold_start", "users"].tolist() == [2, 8]
    assert cold.groups.index.get_level_values("group").tolist() == ["cold", "warm"]


def test_a_group_that_cannot_be_evaluated_alone() -> None:
    """A group whose users with lists and users in the truth are different users
    (evaluated alone: "no user shared", an error): NaN, 0 users and a note; a
    group with lists only (evaluated alone: nobody evaluated) and an empty group
    (a bucket nobody is in): NaN and 0 users."""
    recs = pd.DataFrame({"user": [1, 2, 3, 5], "item": [5, 5, 5, 5], "rank": 1})
    truth = pd.DataFrame({"user": [1, 2, 4], "item": [5, 6, 5]})
    groups = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    res = receval.evaluate(recs, truth, "precision@1", user_groups=groups)
    assert res.groups["users"].tolist() == [2, 0, 0]
    assert res.groups.loc[("group", "a"), "precision@1"] == 0.5
    assert res.groups.loc[[("group", "b"), ("group", "c")], "precision@1"].isna().all()
    assert [n for n in res.notes if "user group" in n] == [
        "user group group='b': its users with recommendations and its users in the truth "
        "have no user in common; not evaluated"
    ]
    train = pd.DataFrame({"user": [1, 2, 3], "item": [1, 2, 3]})
    act = receval.evaluate(recs, truth, "precision@1", user_groups="activity", train=train)
    assert act.groups.loc[("activity", "100+"), "users"] == 0
    assert np.isnan(act.groups.loc[("activity", "100+"), "precision@1"])


def test_groups_in_outputs() -> None:
    recs, truth, groups, _ = _data(3)
    res = receval.evaluate(recs, truth, "ndcg@5", user_groups=groups[["user", "region"]])
    data = json.loads(res.to_json())
    assert [(g["grouping"], g["group"]) for g in data["groups"]] == list(res.groups.index)
    assert "by user group (each group evaluated alone):" in str(res)
    assert "groups" not in receval.evaluate(recs, truth, "ndcg@5").to_dict()


def test_bad_user_groups() -> None:
    recs, truth, groups, _ = _data(4)
    twice = pd.concat([groups, groups.assign(region="west").head(1)])
    with pytest.raises(InputError, match=r"is in 2 groups of 'region': \w+, west") as info:
        receval.evaluate(recs, truth, "ndcg@5", user_groups=twice)
    assert info.value.user == groups["user"].iloc[0]
    with pytest.raises(InputError, match="at least one group column"):
        receval.evaluate(recs, truth, "ndcg@5", user_groups=groups[["user"]])
    with pytest.raises(ReceValError, match=r"user_groups='activity' .*give train="):
        receval.evaluate(recs, truth, "ndcg@5", user_groups="activity")
    with pytest.raises(ReceValError, match="user_groups must be a table"):
        receval.evaluate(recs, truth, "ndcg@5", user_groups=42)


def test_a_group_has_its_own_largest_grade() -> None:
    """Evaluated alone, a group's graded metrics normalise by its own largest
    grade (err: 2^g - 1 over 2^max): here 2 in group a, 4 in the whole truth."""
    recs = pd.DataFrame({"user": [1, 2], "item": [7, 7], "rank": 1})
    truth = pd.DataFrame({"user": [1, 2], "item": [7, 7], "relevance": [2, 4]})
    res = receval.evaluate(recs, truth, "err@1", user_groups={1: "a", 2: "b"})
    assert res.groups.loc[("group", "a"), "err@1"] == 0.75  # (2^2 - 1) / 2^2
    assert res.groups.loc[("group", "b"), "err@1"] == 15 / 16
    assert res.summary["err@1"] == (3 / 16 + 15 / 16) / 2  # one scale for all: 2^4


def test_group_gap() -> None:
    """The gap between two groups: the groups' own means (bit for bit those of
    res.groups), Welch's test and interval as SciPy computes them, and a
    permutation test; unpaired, on each group's own per-user values."""
    import scipy.stats as sps

    recs, truth, groups, train = _data(5)
    res = receval.evaluate(
        recs, truth, ["ndcg@5", "err@5", "coverage@5"], user_groups=groups, train=train
    )
    gap = receval.group_gap(res, "region", "north", "south")
    assert gap.index.tolist() == ["ndcg@5", "err@5"]  # per-user metrics only
    for m in gap.index:
        assert gap.loc[m, "mean_a"] == res.groups.loc[("region", "north"), m]
        assert gap.loc[m, "mean_b"] == res.groups.loc[("region", "south"), m]
        x = res.group_results[("region", "north")].per_user[m].dropna()
        y = res.group_results[("region", "south")].per_user[m].dropna()
        ref = sps.ttest_ind(x, y, equal_var=False)
        assert gap.loc[m, "statistic"] == pytest.approx(ref.statistic, rel=1e-12)
        assert gap.loc[m, "p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
        lo, hi = ref.confidence_interval(0.95)
        assert gap.loc[m, "ci_low"] == pytest.approx(lo, rel=1e-9)
        assert gap.loc[m, "ci_high"] == pytest.approx(hi, rel=1e-9)
        assert gap.loc[m, "users_a"] == len(x) and gap.loc[m, "users_b"] == len(y)
    perm = receval.group_gap(res, "region", "north", "south", "ndcg@5", test="permutation")
    assert 0 < perm.loc["ndcg@5", "p_value"] <= 1
    assert np.isnan(perm.loc["ndcg@5", "ci_low"])
    again = receval.group_gap(res, "region", "north", "south", "ndcg@5", test="permutation")
    assert again.equals(perm)
    with pytest.raises(ReceValError, match=r"no group \('region', 'west'\).*'east', 'north'"):
        receval.group_gap(res, "region", "north", "west")
    with pytest.raises(ReceValError, match="not a per-user metric"):
        receval.group_gap(res, "region", "north", "south", "coverage@5")
    with pytest.raises(ReceValError, match="needs an evaluation with user groups"):
        receval.group_gap(receval.evaluate(recs, truth, "ndcg@5"), "region", "a", "b")
    with pytest.raises(ReceValError, match="test="):
        receval.group_gap(res, "region", "north", "south", test="t")


@pytest.mark.parametrize("test", ["t", "randomization"])
def test_compare_by_group(test: str) -> None:
    """compare(..., user_groups=): within each group, the comparison of the
    systems' evaluations of that group's users alone — the same numbers as
    comparing the runs restricted to those users, with the same seed."""
    recs, truth, groups, train = _data(8)
    rng = np.random.default_rng(1)
    runs = {
        name: recs.assign(score=rng.permutation(recs["score"].to_numpy()))
        for name in ("x", "y", "z")
    }
    metrics = ["ndcg@5", "recall@5", "coverage@5"]
    kw = {"n_resamples": 300, "seed": 4, "test": test, "train": train}
    cmp = receval.compare(runs, truth, metrics, user_groups=groups[["user", "region"]], **kw)
    assert list(cmp.by_group) == [("region", "east"), ("region", "north"), ("region", "south")]
    assert cmp.settings["evaluate"]["user_groups"] is True
    for (_, label), within in cmp.by_group.items():
        members = groups.loc[groups["region"] == label, "user"]
        literal = receval.compare(
            {k: v[v["user"].isin(members)] for k, v in runs.items()},
            truth[truth["user"].isin(members)],
            metrics,
            **kw,
        )
        pd.testing.assert_frame_equal(within.table, literal.table, check_exact=True)
        pd.testing.assert_frame_equal(within.pairs, literal.pairs, check_exact=True)
    # Results evaluated with the groups compare alike; without them, a clear error
    given = {
        k: receval.evaluate(v, truth, metrics, user_groups=groups[["user", "region"]], train=train)
        for k, v in runs.items()
    }
    again = receval.compare(given, truth, metrics, user_groups=groups[["user", "region"]], **kw)
    for key, within in again.by_group.items():
        pd.testing.assert_frame_equal(within.pairs, cmp.by_group[key].pairs, check_exact=True)
    plain = {k: receval.evaluate(v, truth, metrics, train=train) for k, v in runs.items()}
    with pytest.raises(ReceValError, match="has no user groups"):
        receval.compare(plain, truth, metrics, user_groups=groups[["user", "region"]], **kw)
    assert receval.compare(runs, truth, metrics, **kw).by_group is None


def test_report_by_group_from_the_command_line(tmp_path: Path) -> None:
    recs, truth, groups, _ = _data(9)
    recs.to_csv(tmp_path / "recs.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    groups[["user", "region"]].to_csv(tmp_path / "groups.csv", index=False)
    argv = ["report", "truth.csv", "recs.csv", "recs.csv", "--names", "a,b", "-m", "ndcg@5"]
    argv += ["--user-groups", "groups.csv", "--n-resamples", "200", "--out", "r.html", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "receval", *argv],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    assert "By user group" in html and 'data-chart="group-region-ndcg@5"' in html
    for label in ("east", "north", "south"):
        assert f"region = {label} (" in html


def test_groups_with_rows_dropped_as_duplicates() -> None:
    """Rows dropped as duplicates are counted by row, not by user: such chunks
    are cut into the cells' rows, each evaluated alone — the same numbers."""
    recs, truth, groups, train = _data(4)
    recs = pd.concat([recs, recs.iloc[::7]])  # repeated (user, item) rows
    truth = pd.concat([truth, truth.iloc[::5]])
    kw = {"duplicates": "keep", "train": train}
    res = receval.evaluate(recs, truth, ONE_PASS, user_groups=groups, **kw)
    plain = receval.evaluate(recs, truth, ONE_PASS, **kw)
    assert plain.counts == {k: v for k, v in res.counts.items() if k != "user_groups"}
    assert plain.counts["recommendation_rows_duplicate_dropped"] > 0
    for (grouping, label), row in res.groups.iterrows():
        members = groups.loc[groups[grouping] == label, "user"]
        alone = _alone(recs, truth, members, ONE_PASS, **kw)
        for m in alone.summary:
            assert _same(alone.summary[m], row[m]), (grouping, label, m)
        assert res.group_results[grouping, label].counts == alone.counts


def test_integer_labels_with_an_empty_cell_stay_integers(tmp_path: Path) -> None:
    """A group column of integers with an empty cell is read as floats (1.0,
    2.0, NaN) by pandas and Arrow: the labels are the integers written, through
    the file, a DataFrame read from it and a nullable Int64 column alike; the
    users in no group are said under the table."""
    (tmp_path / "g.csv").write_text("user,tier\nu1,1\nu2,2\nu3,\n")
    recs = {"u1": [1], "u2": [2], "u3": [3]}
    truth = {"u1": [1], "u2": [5], "u3": [3]}
    forms = [
        tmp_path / "g.csv",
        pd.read_csv(tmp_path / "g.csv"),
        pd.read_csv(tmp_path / "g.csv").astype({"tier": "Int64"}),
    ]
    for groups in forms:
        res = receval.evaluate(recs, truth, "rr", user_groups=groups)
        assert res.groups.index.tolist() == [("tier", 1), ("tier", 2)]
        assert all(type(g) is int for _, g in res.groups.index)
        assert "tier: 1 user is in no group (1 with a null 'tier')" in str(res)
