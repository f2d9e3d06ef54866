"""The Spark engine against the in-process one, on a real local Spark session
(issue #18): the same summary and counts, bit for bit, whatever the number
of partitions, for every metric of the registry (tests/test_blocks.py's
workload: random parameters, beyond-accuracy metrics with train, catalog and
item features) and for conventions; the same errors before any work.

Run with ``pytest -m spark`` (``pip install -e ".[spark]"``); ``.ci/run`` does.
One Spark session for the module, ``SPARK_LOCAL_IP=127.0.0.1``, the executors'
Python is this interpreter.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError, OptionError, ReceValError
from tests.test_blocks import random_metrics, workload

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("receval-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@contextlib.contextmanager
def _partitions(spark: Any, n: int) -> Iterator[None]:
    """Users hash-partitioned into exactly ``n`` partitions (no coalescing)."""
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
        spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "true")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _assert_identical(whole: receval.Result, spark: receval.Result) -> None:
    assert whole.summary.keys() == spark.summary.keys()
    wrong = [m for m, v in whole.summary.items() if not _same(v, spark.summary[m])]
    assert not wrong, [(m, whole.summary[m], spark.summary[m]) for m in wrong[:5]]
    assert whole.counts == spark.counts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_metric_bit_identical_whatever_the_partitions(spark: Any, seed: int) -> None:
    recs, truth, extra = workload(seed)
    metrics = random_metrics(np.random.default_rng(seed))
    kw = {"empty_truth": ["skip", "zero"][seed % 2], "no_truth": "zero", **extra}
    whole = receval.evaluate(recs, truth, metrics, **kw)
    for parts in (1, 3, 8):
        sr = spark.createDataFrame(recs).repartition(parts)
        st = spark.createDataFrame(truth).repartition(max(1, parts // 2))
        with _partitions(spark, parts):
            res = receval.evaluate(sr, st, metrics, **kw)
        assert res.parameters["partitions"] == parts
        _assert_identical(whole, res)
        assert res.parameters["engine"] == "spark"
        # item groups (rsp, reo, exposure ... and Result.item_groups): integer tallies
        pd.testing.assert_frame_equal(res.item_groups, whole.item_groups, check_exact=True)


@pytest.mark.parametrize("convention", ["trec_eval", "rectools", "recbole"])
def test_conventions(spark: Any, convention: str) -> None:
    recs, truth, _ = workload(3)
    truth = truth.assign(relevance=np.ceil(truth["relevance"]))
    metrics = ["ndcg@10", "ap@10", "recall@5", "rr@10", "precision@3"]
    whole = receval.evaluate(recs, truth, metrics, convention=convention)
    res = receval.evaluate(
        spark.createDataFrame(recs), spark.createDataFrame(truth), metrics, convention=convention
    )
    _assert_identical(whole, res)


def test_text_ids_and_spark_side_inputs(spark: Any) -> None:
    recs, truth, extra = workload(4)
    recs = recs.assign(user="u" + recs["user"].astype(str))
    truth = truth.assign(user="u" + truth["user"].astype(str))
    train = extra["train"].assign(user="u" + extra["train"]["user"].astype(str))
    metrics = ["ndcg@10", "novelty@10", "coverage@10", "gini@10"]
    whole = receval.evaluate(recs, truth, metrics, train=train)
    res = receval.evaluate(
        spark.createDataFrame(recs),
        spark.createDataFrame(truth),
        metrics,
        train=spark.createDataFrame(train),  # counted in Spark; pairs go with the partitions
    )
    _assert_identical(whole, res)
    assert res.counts["recommendations_seen_in_train"] > 0
    assert res.parameters["training_users"] == whole.parameters["training_users"]


def test_refused_before_any_work(spark: Any) -> None:
    recs, truth, _ = workload(0)
    sr, st = spark.createDataFrame(recs), spark.createDataFrame(truth)
    with pytest.raises(OptionError, match="ties='input' is not allowed") as info:
        receval.evaluate(sr, st, "ndcg@10", ties="input")
    assert "no order" in str(info.value)
    with pytest.raises(OptionError, match="convention 'mllib' breaks ties") as info:
        receval.evaluate(sr, st, "ndcg@10", convention="mllib")
    assert "ties='item'" in str(info.value) and "--ties item" in info.value.cli_message()
    with pytest.raises(ReceValError, match=r"user_groups= on the Spark engine.*max_grade"):
        receval.evaluate(sr, st, "err@10", user_groups={1: "a"})
    res = receval.evaluate(sr, st, "ndcg@10", convention="mllib", ties="item")
    assert (
        res.summary
        == receval.evaluate(recs, truth, "ndcg@10", convention="mllib", ties="item").summary
    )
    with pytest.raises(InputError) as spark_error:
        receval.evaluate(sr.withColumnRenamed("item", "thing"), st, "ndcg@10")
    with pytest.raises(InputError) as local_error:
        receval.evaluate(recs.rename(columns={"item": "thing"}), truth, "ndcg@10")
    assert str(spark_error.value) == str(local_error.value)


def test_a_bad_score_is_the_same_error(spark: Any) -> None:
    recs = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "score": [0.5, np.inf, 0.2]})
    truth = pd.DataFrame({"user": [1, 2], "item": [1, 3]})
    with pytest.raises(InputError) as local:
        receval.evaluate(recs, truth, "ndcg@10")
    with pytest.raises(InputError) as remote:
        receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), "ndcg@10")
    # the same reason, user and item (rows of a partition are not the input's rows)
    assert (remote.value.user, remote.value.item) == (local.value.user, local.value.item)
    assert remote.value.reason == local.value.reason


def test_per_user_values_bit_identical(spark: Any) -> None:
    recs, truth, extra = workload(5)
    metrics = random_metrics(np.random.default_rng(5))
    kw = {"empty_truth": "skip", "no_truth": "zero", **extra}
    whole = receval.evaluate(recs, truth, metrics, **kw)
    res = receval.evaluate(
        spark.createDataFrame(recs).repartition(3), spark.createDataFrame(truth), metrics, **kw
    )
    assert "_per_user" not in vars(res) or vars(res)["_per_user"] is None  # not yet collected
    assert str(res) == str(whole).replace("numpy", "spark")  # users per metric from counts
    got = res.per_user_spark.toPandas().set_index("user").sort_index()
    want = whole.per_user
    assert list(got.columns) == list(want.columns)
    assert got.index.tolist() == want.index.tolist()
    a, b = want.to_numpy(), got.to_numpy()
    assert ((a == b) | (np.isnan(a) & np.isnan(b))).all()
    # res.per_user collects it: the in-process frame, bit for bit
    pd.testing.assert_frame_equal(res.per_user, want, check_exact=True)
    pd.testing.assert_frame_equal(res.to_frame(), whole.to_frame(), check_exact=True)


def _bad_inputs() -> list[tuple[str, pd.DataFrame, pd.DataFrame, dict[str, Any]]]:
    """Inputs with several offending users each: the error names the smallest."""
    users = np.repeat(np.arange(40), 3)
    items = np.tile([1, 2, 3], 40)
    recs = pd.DataFrame({"user": users, "item": items, "rank": np.tile([1, 2, 3], 40)})
    truth = pd.DataFrame({"user": np.arange(40), "item": np.ones(40, dtype=np.int64)})
    bad_rank = recs.copy()
    bad_rank.loc[[100, 31, 70], "rank"] = [0, -2, 0]  # users 33, 10, 23
    dup_recs = recs.copy()
    dup_recs.loc[[110, 50], "item"] = [1, 1]  # users 36 and 16: item 1 twice
    dup_truth = pd.concat([truth, truth.iloc[[30, 12]]], ignore_index=True)
    no_truth = truth[~truth["user"].isin([25, 7])]
    null_item = recs.astype({"item": "float64"})
    null_item.loc[[90, 40], "item"] = np.nan  # users 30 and 13
    return [
        ("rank", bad_rank, truth, {}),
        ("duplicate recommendation", dup_recs, truth, {}),
        ("duplicate truth", recs, dup_truth, {}),
        ("policy", recs, no_truth, {"no_truth": "error"}),
        ("missing item", null_item, truth, {}),
    ]


@pytest.mark.parametrize("case", range(5))
def test_errors_name_the_smallest_user_whatever_the_partitions(spark: Any, case: int) -> None:
    name, recs, truth, kw = _bad_inputs()[case]
    with pytest.raises(receval.ReceValError) as local:
        receval.evaluate(recs, truth, "ndcg@10", **kw)
    messages = set()
    for parts in (1, 3, 8):
        sr = spark.createDataFrame(recs.sample(frac=1, random_state=parts)).repartition(parts)
        st = spark.createDataFrame(truth).repartition(parts)
        with pytest.raises(receval.ReceValError) as remote, _partitions(spark, parts):
            receval.evaluate(sr, st, "ndcg@10", **kw)
        assert type(remote.value) is type(local.value), name
        messages.add(str(remote.value))
    assert len(messages) == 1, messages  # the partitioning changes nothing
    message = messages.pop()
    assert "row" not in message  # a partition's rows are not the input's
    if isinstance(local.value, InputError):
        assert remote.value.reason.split(" (")[0] == local.value.reason.split(" (")[0]
        # in-process the first offending row and its user; on Spark the smallest user
        # (a missing item id: rows 40 and 90, users 13 and 30)
        assert remote.value.user == local.value.user, (message, str(local.value))
    else:
        assert message == str(local.value)


def test_missing_user_id_and_missing_train(spark: Any) -> None:
    recs = pd.DataFrame({"user": [1.0, np.nan, 2.0], "item": [1, 2, 3], "rank": [1, 1, 1]})
    truth = pd.DataFrame({"user": [1, 2], "item": [1, 3]})
    with pytest.raises(InputError) as local:
        receval.evaluate(recs, truth, "ndcg@10")
    with pytest.raises(InputError) as remote:
        receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), "ndcg@10")
    assert remote.value.reason == local.value.reason
    assert "missing" in remote.value.reason
    with pytest.raises(receval.ReceValError, match="needs train="):
        receval.evaluate(
            spark.createDataFrame(truth.assign(rank=1)), spark.createDataFrame(truth), "novelty@5"
        )


# -- every door: the Spark ones join tests/test_every_door.py's data and numbers --------------


def _compare_doors(summary: dict[str, float], per_user: pd.DataFrame, form: str = "text") -> None:
    from tests.test_every_door import _data, _pandas, check_door

    got = (summary, {m: per_user[m] for m in per_user.columns})
    check_door(got, _pandas(_data(form), Path(".")))


@pytest.mark.parametrize("lists", [False, True], ids=["long", "item_lists"])
def test_every_door_spark_dataframes(spark: Any, lists: bool) -> None:
    """The long tables as Spark DataFrames, and a list of items a row
    (tests/test_item_lists.py): the recommendations ranked by list position,
    the truth's grades along its items, the train's lists; a list along of
    another length names a user."""
    from tests.test_every_door import METRICS, OPTIONS, _data, _lists_of

    d = _lists_of(_data()) if lists else _data()
    if lists:
        d["train"]["item"] = d["train"]["item"].map(list)
    res = receval.evaluate(
        spark.createDataFrame(d["recs"]),
        spark.createDataFrame(d["truth"]),
        METRICS,
        train=spark.createDataFrame(d["train"]),
        catalog=list(d["catalog"]["item"]),
        **OPTIONS,
    )
    _compare_doors(res.summary, res.per_user)
    if not lists:
        return
    assert res.parameters["columns"]["recommendations"]["rank"] == "rank"
    short = d["truth"].copy()
    short.loc[3, "rating"] = short.loc[3, "rating"][:1]
    with pytest.raises(InputError) as got:
        receval.evaluate(spark.createDataFrame(d["recs"]), spark.createDataFrame(short), "rr")
    assert got.value.user == short.loc[3, "user"] and got.value.column == "rating"
    assert "holds 1 values for 3 items" in str(got.value)


@pytest.mark.parametrize("form", ["text", "digits", "int"])
def test_spark_with_a_train_file_of_another_format(
    spark: Any, form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue #30: a CSV train= read by Spark as text beside Parquet inputs read as
    # numbers changed the tie order (ndcg@10 0.0965418 vs 0.0965374 in-process)
    from receval.cli import main
    from tests.test_every_door import FLAGS, METRICS, _data, _write

    d = _data(form)
    parquet, csv = _write(d, tmp_path, "parquet"), _write(d, tmp_path, "csv")
    args = ["evaluate", "--engine", "spark", str(parquet["recs"]), str(parquet["truth"])]
    for m in METRICS:
        args += ["-m", m]
    folder = tmp_path / "per_user.parquet"
    args += ["--train", str(csv["train"]), "--catalog", str(csv["catalog"])]
    args += ["--per-user", str(folder), "--json", "-q", *FLAGS]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = {
        k: math.nan if v is None else v for k, v in json.loads(captured.out)["metrics"].items()
    }
    frame = pd.read_parquet(folder).astype({"user": str}).set_index("user")
    frame = (
        frame.loc[sorted(frame.index, key=lambda u: (len(u), u))]
        if form != "text"
        else frame.sort_index()
    )
    _compare_doors(summary, frame, form)


@pytest.mark.parametrize("ext", ["csv", "parquet", "jsonl"])
def test_every_door_spark_command_line(
    spark: Any, ext: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from receval.cli import main
    from tests.test_every_door import FLAGS, METRICS, _data, _write

    p = _write(_data(), tmp_path, ext)
    folder = tmp_path / "per_user.parquet"
    args = ["evaluate", "--engine", "spark", str(p["recs"]), str(p["truth"])]
    for m in METRICS:
        args += ["-m", m]
    args += ["--train", str(p["train"]), "--catalog", str(p["catalog"])]
    args += ["--per-user", str(folder), "--json", "-q", *FLAGS]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    assert out["parameters"]["engine"] == "spark"
    summary = {k: math.nan if v is None else v for k, v in out["metrics"].items()}
    assert (folder / "_SUCCESS").exists()  # Spark's committer: the folder is complete
    frame = pd.read_parquet(folder).astype({"user": str}).set_index("user").sort_index()
    _compare_doors(summary, frame)


def test_command_line_errors_exit_2(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from receval.cli import main

    recs = tmp_path / "recs.csv"
    recs.write_text("user,item,rank\n1,1,1\n2,5,0\n3,7,1\n")
    truth = tmp_path / "truth.csv"
    truth.write_text("user,item\n1,1\n2,5\n")
    code = main(["evaluate", "--engine", "spark", str(recs), str(truth), "-m", "ndcg@10", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{recs}, user 2, item 5: rank must be a positive integer; found 0" in err, err
    missing = tmp_path / "nothing.parquet"
    code = main(["evaluate", "--engine", "spark", str(missing), str(truth), "-m", "ndcg", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and str(missing) in err and "Traceback" not in err
    taken = tmp_path / "taken.parquet"
    taken.mkdir()
    args = ["evaluate", "--engine", "spark", str(recs), str(truth), "-m", "ndcg", "-q"]
    recs.write_text("user,item,rank\n1,1,1\n2,5,1\n3,7,1\n")
    code = main([*args, "--per-user", str(taken)])
    err = capsys.readouterr().err
    assert code == 2 and "already exists" in err, err


@pytest.mark.parametrize("test", ["t", "randomization"])
def test_compare_on_spark_is_poisson_in_process_bit_for_bit(spark: Any, test: str) -> None:
    from receval.errors import OptionError as Refused
    from tests.test_resampling import _runs

    runs, truth = _runs()
    metrics = ["ndcg@10", "recall@5"]
    local = receval.compare(runs, truth, metrics, resampling="poisson", test=test, n_resamples=499)
    for parts in (1, 3):
        with _partitions(spark, parts):
            remote = receval.compare(
                {name: spark.createDataFrame(run) for name, run in runs.items()},
                spark.createDataFrame(truth),
                metrics,
                test=test,
                n_resamples=499,
            )
        assert remote.settings["resampling"] == "poisson"
        pd.testing.assert_frame_equal(remote.table, local.table, check_exact=True)
        pd.testing.assert_frame_equal(remote.pairs, local.pairs, check_exact=True)
        pd.testing.assert_frame_equal(remote.missing, local.missing, check_exact=True)
    # per-user values reach the driver only when read
    pd.testing.assert_frame_equal(remote.aligned["recall@5"], local.aligned["recall@5"])
    with pytest.raises(Refused, match="Wilcoxon"):
        receval.compare(
            {"a": spark.createDataFrame(runs["a"])},
            spark.createDataFrame(truth),
            metrics,
            test="wilcoxon",
        )


def _ratings(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 3000
    users = rng.integers(0, 300, n)
    actual = rng.integers(1, 6, n).astype(float)
    predicted = np.clip(actual + rng.normal(0, 1, n), 1, 5).round(1)
    frame = pd.DataFrame(
        {"user": users, "item": rng.integers(0, 500, n), "actual": actual, "predicted": predicted}
    )
    return frame.drop_duplicates(["user", "item"]).reset_index(drop=True)


RATING_METRICS = ["mae", "mse", "rmse", "r2", "pearson", "spearman", "kendall"]


@pytest.mark.parametrize("seed", [0, 1])
def test_rating_metrics_bit_identical(spark: Any, seed: int) -> None:
    frame = _ratings(seed)
    if seed == 1:  # missing ratings, dropped and counted
        frame.loc[frame.sample(frac=0.05, random_state=1).index, "predicted"] = np.nan
    metrics = RATING_METRICS + [f"{m}[per_user=true]" for m in RATING_METRICS]
    whole = receval.evaluate_ratings(frame, metrics, dropna=True)
    shuffled = frame.sample(frac=1, random_state=seed)  # rows in another order: same bits
    for parts in (1, 3):
        with _partitions(spark, parts):
            res = receval.evaluate_ratings(
                spark.createDataFrame(shuffled).repartition(parts), metrics, dropna=True
            )
        _assert_identical(whole, res)
        assert res.parameters["engine"] == "spark"
    pd.testing.assert_frame_equal(res.per_user, whole.per_user, check_exact=True)
    pd.testing.assert_frame_equal(res.to_frame(), whole.to_frame(), check_exact=True)
    assert any("collected to the driver" in n for n in res.notes)
    local = receval.evaluate_ratings(shuffled, metrics, dropna=True)  # row order changes no bit
    _assert_identical(whole, local)


def test_rating_errors_do_not_depend_on_partitions(spark: Any) -> None:
    frame = _ratings(2)
    frame.loc[[40, 7, 300], "actual"] = np.nan
    with pytest.raises(InputError) as local:
        receval.evaluate_ratings(frame, "rmse")
    messages = set()
    for parts in (1, 3, 8):
        with _partitions(spark, parts), pytest.raises(InputError) as remote:
            receval.evaluate_ratings(spark.createDataFrame(frame).repartition(parts), "rmse")
        messages.add(str(remote.value))
        assert remote.value.reason == local.value.reason
    assert len(messages) == 1
    assert "row " not in messages.pop().split(":")[0]  # no partition row number


def test_item_groups_on_spark(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item-group metrics and Result.item_groups on Spark (DataFrames, a Spark
    item_groups= and the command line) are the in-process numbers, bit for bit."""
    from receval.cli import main
    from tests.test_every_door import _data, _write
    from tests.test_item_groups import METRICS, _door_pandas, _groups

    want_summary, want_users, want_table = _door_pandas(_data(), tmp_path)
    d = _data()
    res = receval.evaluate(
        spark.createDataFrame(d["recs"]),
        spark.createDataFrame(d["truth"]),
        METRICS,
        train=spark.createDataFrame(d["train"]),
        catalog=d["catalog"],
        item_groups=spark.createDataFrame(_groups()),
    )
    assert res.parameters["engine"] == "spark"
    for m, v in want_summary.items():
        assert res.summary[m] == v or (math.isnan(v) and math.isnan(res.summary[m])), m
    pd.testing.assert_frame_equal(res.item_groups, want_table, check_exact=True)
    got = res.per_user.sort_index()
    for m in want_users:
        a, b = want_users[m].to_numpy(), got[m].to_numpy()
        assert ((a == b) | (np.isnan(a) & np.isnan(b))).all(), m
    p = _write({**d, "groups": _groups()}, tmp_path, "csv")
    args = ["evaluate", "--engine", "spark", str(p["recs"]), str(p["truth"])]
    for m in METRICS:
        args += ["-m", m]
    args += ["--train", str(p["train"]), "--catalog", str(p["catalog"])]
    args += ["--item-groups", str(p["groups"]), "--json", "-q"]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    for m, v in want_summary.items():
        got_v = out["metrics"][m]
        assert (got_v is None and math.isnan(v)) or got_v == v, m
    assert [r["exposure@5"] for r in out["item_groups"]] == want_table["exposure@5"].tolist()


def test_user_groups_on_spark(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """user_groups= on Spark: every group's row and counts are the in-process
    ones (each group's users evaluated alone), whatever the partitions; built-in
    groupings are counted by Spark from a Spark train; the command line too."""
    from receval.cli import main
    from tests.test_groups import ONE_PASS, _data

    recs, truth, groups, train = _data(3)
    kw = {"empty_truth": "zero", "missing_recs": "skip"}
    want = receval.evaluate(recs, truth, ONE_PASS, user_groups=groups, train=train, **kw)
    sr, st, strain = (spark.createDataFrame(x) for x in (recs, truth, train))
    for parts in (1, 4):
        with _partitions(spark, parts):
            res = receval.evaluate(sr, st, ONE_PASS, user_groups=groups, train=strain, **kw)
        pd.testing.assert_frame_equal(res.groups, want.groups, check_exact=True)
        assert res.counts["user_groups"] == want.counts["user_groups"]
        for key, alone in want.group_results.items():
            got = res.group_results[key]
            assert got.counts == alone.counts and got.parameters["engine"] == "spark"
    for name in ("activity", "cold_start"):
        a = receval.evaluate(recs, truth, ONE_PASS, user_groups=name, train=train)
        b = receval.evaluate(sr, st, ONE_PASS, user_groups=name, train=strain)
        pd.testing.assert_frame_equal(b.groups, a.groups, check_exact=True)
    with pytest.raises(receval.ReceValError, match="Spark evaluation keeps on the cluster"):
        receval.group_gap(res, "region", "north", "south", "ndcg@5")
    with pytest.raises(receval.ReceValError, match=r"err@10\[max_grade=4\]"):
        receval.evaluate(sr, st, "err@5", user_groups=groups)
    for name, frame in (("recs", recs), ("truth", truth), ("groups", groups)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    args = ["evaluate", "--engine", "spark", str(tmp_path / "recs.csv")]
    args += [str(tmp_path / "truth.csv"), "-m", "ndcg@5", "--user-groups"]
    code = main([*args, str(tmp_path / "groups.csv"), "--json", "-q"])
    out = capsys.readouterr()
    assert code == 0, out.err
    rows = json.loads(out.out)["groups"]
    plain = receval.evaluate(recs, truth, "ndcg@5", user_groups=groups).groups
    assert [r["ndcg@5"] for r in rows] == [
        None if math.isnan(v) else v for v in plain["ndcg@5"].tolist()
    ]


def test_judgments_and_sampled_corrections_on_spark(spark: Any) -> None:
    """#21's options on Spark: negative grades read as pooled-unjudged, condensed
    lists, a depth, and corrected sampled metrics: bit for bit the in-process numbers."""
    rng = np.random.default_rng(21)
    rows, truth_rows = [], []
    for u in range(60):
        items = rng.choice(400, 31, replace=False)
        rows += [(u, int(i), float(31 - j)) for j, i in enumerate(rng.permutation(items))]
        truth_rows += [(u, int(items[0]), int(rng.integers(1, 4)))]
        truth_rows += [(u, int(i), int(rng.integers(-1, 1))) for i in items[1:6]]
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    truth = pd.DataFrame(truth_rows, columns=["user", "item", "relevance"])
    judged = ["bpref", "infap", "judged@10", "unjudged@10", "gm_ap", "rndcg", "iprec_avg"]
    sampled = ["recall@10[correction=bv]", "ndcg@10[correction=rank]", "rr[correction=bv]"]
    for kw, metrics in (
        ({"negative_grades": "unjudged"}, judged),
        ({"negative_grades": "unjudged", "unjudged": "condense", "depth": 20}, judged),
        ({"negative_grades": "unjudged", "catalog_size": 5_000}, sampled),
    ):
        whole = receval.evaluate(recs, truth, metrics, **kw)
        with _partitions(spark, 3):
            res = receval.evaluate(
                spark.createDataFrame(recs).repartition(3),
                spark.createDataFrame(truth),
                metrics,
                **kw,
            )
        _assert_identical(whole, res)


def test_command_line_logs_a_spark_result_to_mlflow(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evaluate --engine spark --mlflow``: the same numbers logged as in
    process, to a real local MLflow file store (no HTML report: its curves
    read the lists in this process)."""
    pytest.importorskip("mlflow")
    from receval.cli import main

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    from mlflow.tracking import MlflowClient

    recs = tmp_path / "recs.csv"
    recs.write_text("user,item,rank\n1,1,1\n1,2,2\n2,5,1\n2,4,2\n3,7,1\n")
    truth = tmp_path / "truth.csv"
    truth.write_text("user,item\n1,2\n2,5\n3,9\n")
    metrics = ["-m", "ndcg@2", "-m", "ap@2"]
    args = ["evaluate", "--engine", "spark", str(recs), str(truth), *metrics, "--json", "-q"]
    code = main([*args, "--mlflow", "--mlflow-experiment", "spark"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    shown = json.loads(captured.out)
    client = MlflowClient()
    (run,) = client.search_runs([client.get_experiment_by_name("spark").experiment_id])
    alone = receval.evaluate(
        {1: [1, 2], 2: [5, 4], 3: [7]}, {1: [2], 2: [5], 3: [9]}, ["ndcg@2", "ap@2"]
    )
    assert run.data.metrics["ndcg_at_2"] == alone.summary["ndcg@2"] == shown["metrics"]["ndcg@2"]
    assert run.data.metrics["ap_at_2"] == alone.summary["ap@2"]
    assert run.data.params["engine"] == "spark"
    paths = [a.path for a in client.list_artifacts(run.info.run_id, "receval")]
    assert "receval/result.json" in paths and "receval/report.html" not in paths


def test_csv_files_with_a_byte_order_mark_read_by_spark(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue #30: Excel's "CSV UTF-8" starts with a byte-order mark; receval's
    # own readers skip it, and Spark's CSV reader does too (checked here: a
    # kept mark would name the first column "\ufeffuser", and no user is found)
    from receval.cli import main
    from receval.io import spark_files

    recs = pd.DataFrame(
        {"user": [1, 1, 2, 2], "item": [10, 11, 10, 12], "score": [0.9, 0.5, 0.8, 0.7]}
    )
    truth = pd.DataFrame({"user": [1, 2], "item": [11, 12], "rating": [4.0, 5.0]})
    paths = {}
    for name, frame in (("recs", recs), ("truth", truth)):
        paths[name] = tmp_path / f"{name}.csv"
        paths[name].write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False).encode())
    df = spark_files.read(spark, str(paths["recs"]), "recommendations")
    assert df.columns == ["user", "item", "score"]
    want = receval.evaluate(recs, truth, ["ndcg@2", "rr"])
    code = main(
        [
            "evaluate",
            "--engine",
            "spark",
            str(paths["recs"]),
            str(paths["truth"]),
            "-m",
            "ndcg@2",
            "-m",
            "rr",
            "--json",
            "-q",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["metrics"] == want.summary


def test_the_spark_engine_is_chosen_by_dispatch_and_named_in_the_result(spark: Any) -> None:
    from receval.engines import engine_for
    from receval.engines import spark as spark_engine
    from receval.io.pair import open_pair
    from receval.records import Columns

    recs = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "score": [0.9, 0.5, 0.8]})
    truth = pd.DataFrame({"user": [1, 2], "item": [11, 10]})
    opened = open_pair(spark.createDataFrame(recs), truth, Columns())  # one side on Spark
    engine = engine_for(opened.inputs)
    assert isinstance(engine, spark_engine.Spark)
    res = receval.evaluate(spark.createDataFrame(recs), truth, ["rr"])
    assert res.parameters["engine"] == "spark"
    assert res.summary == receval.evaluate(recs, truth, ["rr"]).summary


def _jobs(spark: Any, group: str, run: Any) -> tuple[Any, int]:
    """What ``run()`` returns, and how many Spark jobs it ran (its job group's)."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        out = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


def test_the_largest_grade_job_runs_only_for_a_metric_bounded_by_it(spark: Any) -> None:
    """The largest grade of the whole truth is a Spark job of its own: run
    only when a metric's parameter is bounded by it (ERR's normaliser, unset
    or set: checked); otherwise the partitions report theirs, and the result
    is the in-process one, bit for bit, notes included (grades up to 4)."""
    from receval.engines.spark import reads_largest_grade
    from receval.metrics.spec import parse_metrics

    rng = np.random.default_rng(7)
    recs = pd.DataFrame(
        {"user": rng.integers(0, 40, 600), "item": rng.integers(0, 30, 600)}
    ).drop_duplicates(["user", "item"])
    recs["score"] = rng.random(len(recs))
    truth = pd.DataFrame(
        {"user": rng.integers(0, 40, 200), "item": rng.integers(0, 30, 200)}
    ).drop_duplicates(["user", "item"])
    truth["relevance"] = rng.integers(0, 5, len(truth))  # grades 0..4: ERR normalises by 4
    plain, bounded = ["ndcg@10", "ap", "precision@5"], ["ndcg@10", "ap", "precision@5", "err@10"]
    assert not reads_largest_grade(parse_metrics(plain))
    assert reads_largest_grade(parse_metrics(bounded))
    assert reads_largest_grade(parse_metrics(["err@10[max_grade=4]"]))  # checked against it
    sr, st = spark.createDataFrame(recs), spark.createDataFrame(truth)
    counted = {}
    for name, metrics, kw in [
        ("plain", plain, {}),
        ("bounded", bounded, {}),
        ("plain-binary", plain, {"graded": False}),
        ("bounded-binary", bounded, {"graded": False}),  # grades 0/1: nothing to read
    ]:
        with _partitions(spark, 3):
            res, counted[name] = _jobs(
                spark,
                f"receval-grade-{name}",
                lambda m=metrics, k=kw: receval.evaluate(sr, st, m, **k),
            )
        whole = receval.evaluate(recs, truth, metrics, **kw)
        _assert_identical(whole, res)
        assert res.notes == whole.notes, name  # "grades up to 4", from the partitions'
    assert counted["bounded"] > counted["plain"]  # the one job more: the largest grade
    assert counted["plain-binary"] == counted["plain"] == counted["bounded-binary"]
    with pytest.raises(ReceValError) as local_error:  # a set normaliser below the grades
        receval.evaluate(recs, truth, ["err@10[max_grade=2]"])
    with pytest.raises(ReceValError) as spark_error:
        receval.evaluate(sr, st, ["err@10[max_grade=2]"])
    assert str(spark_error.value) == str(local_error.value)
