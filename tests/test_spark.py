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

import math
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError, OptionError
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
        res = receval.evaluate(sr, st, metrics, **kw)
        _assert_identical(whole, res)
        assert res.parameters["engine"] == "spark"


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
        train=spark.createDataFrame(train),  # collected: O(training interactions)
    )
    _assert_identical(whole, res)


def test_refused_before_any_work(spark: Any) -> None:
    recs, truth, _ = workload(0)
    sr, st = spark.createDataFrame(recs), spark.createDataFrame(truth)
    with pytest.raises(OptionError, match="ties='input' is not allowed") as info:
        receval.evaluate(sr, st, "ndcg@10", ties="input")
    assert "no order" in str(info.value)
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
    assert res.per_user.empty  # nothing per user reaches the driver unless asked
    got = res.per_user_spark.toPandas().set_index("user").sort_index()
    want = whole.per_user
    assert list(got.columns) == list(want.columns)
    assert got.index.tolist() == want.index.tolist()
    a, b = want.to_numpy(), got.to_numpy()
    assert ((a == b) | (np.isnan(a) & np.isnan(b))).all()
