"""Ids written differently on each side, on Spark as in-process (SPEC §2's
id rule through the Spark door).

Two failures of the Spark engine that these tests pin:

* the shuffle grouped text user ids as written, so ``"7.0"`` and ``"7"``
  (one user under the text rule) could land in two partitions and be
  counted as two users, one without truth and one without a list;
* a float id column matched with text ids was made text by the JVM
  (``1.0E16``, ``1.0E-7``, ``NaN``), which is not the id rule's text
  (``"1e+16"``, ``"1e-07"``, a missing id), so items did not match and a
  NaN was an id.

Every case runs with the shuffle's partitions left as they are (adaptive
execution coalesces them: often one) and with many partitions forced, on the
lists path and on the rows path (``Spark.lists = False``); the results must be the
in-process ones bit for bit, per user too.

Run with ``pytest -m spark`` (``pip install -e ".[spark]"``, Java 17).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines.spark import Spark
from receval.errors import InputError
from receval.ids import text_value

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

METRICS = ["ndcg@3", "recall@3", "rr", "precision@2"]


@pytest.fixture()
def split(spark: Any) -> Iterator[None]:
    """Shuffles cut into 6 partitions, none coalesced: the users of one key
    in two partitions would show."""
    conf = spark.conf
    before = {
        k: conf.get(k) for k in ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions")
    }
    conf.set("spark.sql.adaptive.enabled", "false")
    conf.set("spark.sql.shuffle.partitions", "6")
    try:
        yield
    finally:
        for k, v in before.items():
            conf.set(k, v)


def _same(spark: Any, recs: pd.DataFrame, truth: pd.DataFrame, **kw: Any) -> receval.Result:
    """``evaluate`` through Spark (lists, then every row through the shuffle) gives
    the in-process result: summary, counts and per-user values bit for bit."""
    want = receval.evaluate(recs, truth, METRICS, **kw)
    on_spark = {
        k: spark.createDataFrame(v) if isinstance(v, pd.DataFrame) else v for k, v in kw.items()
    }
    r, t = spark.createDataFrame(recs), spark.createDataFrame(truth)
    for lists in (None, False):  # grouped into lists in the JVM when it can; the rows
        Spark.lists = lists
        try:
            got = receval.evaluate(r, t, METRICS, **on_spark)
        finally:
            Spark.lists = None
        assert got.counts == want.counts, lists
        assert got.summary == want.summary, lists
        per_user = got.per_user_spark.toPandas()
        per_user["user"] = [str(text_value(str(u))) for u in per_user["user"]]
        expected = want.per_user.reset_index()
        expected["user"] = [str(text_value(str(u))) for u in expected["user"]]
        a = per_user.set_index("user").sort_index()[METRICS].to_numpy()
        b = expected.set_index("user").sort_index()[METRICS].to_numpy()
        assert a.tobytes() == b.tobytes(), lists
    return want


def _lists(users: list[Any], items: list[list[Any]]) -> pd.DataFrame:
    rows = [
        (u, i, len(its) - j) for u, its in zip(users, items, strict=True) for j, i in enumerate(its)
    ]
    return pd.DataFrame(rows, columns=["user", "item", "score"]).astype({"score": float})


def test_text_users_the_text_rule_reads_as_one(spark: Any, split: None) -> None:
    """``"7.0"``, ``"7e0"`` and ``"7"`` are user 7; ``"-0"`` and ``"0.0"`` user
    0; ``"0.5"`` and ``"5e-1"`` stay two texts (the rule keeps a number that
    is not whole as written): one user each, in one partition."""
    n = 40
    forms = [lambda k: f"{k}.0", lambda k: f"{k}e0", lambda k: f"{k}0e-1", str]
    listed = [forms[k % 4](k) for k in range(1, n + 1)] + ["-0", "0.5"]
    recs = _lists(listed, [["a", "b", "c"]] * (n + 2))
    truth = pd.DataFrame(
        {
            "user": [str(k) for k in range(1, n + 1)] + ["0.0", "5e-1"],
            "item": ["b"] * n + ["a", "a"],
        }
    )
    want = _same(spark, recs, truth)
    assert want.counts["users"] == n + 3  # 1..n, 0, and "0.5" and "5e-1" apart
    assert want.counts["users_evaluated"] == n + 2  # "0.5" has no truth


def test_float_user_and_item_ids_beside_text(spark: Any, split: None) -> None:
    """Float ids beside text ids are read by the id rule, not written by the
    JVM: 1e21 is ``"1e+21"``, 12345678.5 ``"12345678.5"``, 1e-07
    ``"1e-07"``; float32 ids are their own width's text (0.1 is ``"0.1"``)."""
    n = 30
    users = [k + 0.5 if k % 3 else float(k) for k in range(n)] + [1e21, 2.0**60]
    items = [[12345678.5, 1e-7, 0.1, 1e16, 3.0]] * (n + 2)
    recs = _lists(users, items)
    text_users = [repr(u) if u != int(u) or abs(u) > 2**53 else str(int(u)) for u in users]
    truth = pd.DataFrame(
        {
            "user": [u for u in text_users for _ in range(2)],
            "item": ["1e-07", "1e+16"] * (n // 2) + ["12345678.5", "3"] * (n // 2 + 2),
        }
    )
    want = _same(spark, recs, truth)
    assert want.counts["users"] == n + 2 and want.summary["recall@3"] > 0
    assert _same(
        spark, recs.astype({"item": np.float32}), truth.drop_duplicates("user").assign(item="0.1")
    ).summary["rr"] == pytest.approx(1 / 3)
    got = receval.evaluate(
        spark.createDataFrame(recs),
        spark.createDataFrame(truth),
        "coverage@5",
        train=spark.createDataFrame(recs.head(10)),
    )
    assert got.summary == receval.evaluate(recs, truth, "coverage@5", train=recs.head(10)).summary


def test_float32_and_float64_users_beside_text(spark: Any, split: None) -> None:
    """Users of float32 on one side, float64 in train and text in the truth:
    every id that is not whole shares one key then (rounding either float to
    the other is not the text rule), the rest keep theirs; the numbers are
    in-process's."""
    users = np.array([0.5, 1.25, 2.0, 3.0, 1e-3, 2.5e-5], dtype=np.float32)
    recs = _lists(list(users), [["a", "b"]] * len(users)).astype({"user": np.float32})
    truth = pd.DataFrame(
        {"user": ["0.5", "1.25", "2", "3.0", "0.001", "2.5e-05"], "item": ["b"] * 6}
    )
    _same(spark, recs, truth)
    train = pd.DataFrame({"user": [0.5, 2.0, 7.5], "item": ["a", "b", "c"]})
    _same(spark, recs, truth, train=train)


def test_a_nan_or_infinite_float_id_beside_text_is_refused(spark: Any) -> None:
    """A NaN id is a missing id and an infinite one is refused, as in-process
    (the JVM's ``NaN`` and ``Infinity`` were read as the texts "NaN" and
    "Infinity")."""
    truth = pd.DataFrame({"user": ["u"], "item": ["1"]})
    for bad, said in ((float("nan"), "missing item id"), (float("inf"), "non-finite item id")):
        recs = pd.DataFrame({"user": ["u", "u"], "item": [1.0, bad], "score": [2.0, 1.0]})
        with pytest.raises(InputError, match=said):
            receval.evaluate(recs, truth, "rr")
        with pytest.raises(InputError) as remote:
            receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), "rr")
        assert remote.value.reason == said and remote.value.user == "u"


def test_ratings_of_one_user_written_two_ways(spark: Any, split: None) -> None:
    """Per-user rating metrics: ``"7"`` and ``"7.0"`` are one user (the
    ratings were repartitioned by the user as written)."""
    rng = np.random.default_rng(5)
    n = 60
    users = [f"{k}.0" if j % 2 else str(k) for k in range(n) for j in range(4)]
    frame = pd.DataFrame(
        {
            "user": users,
            "actual": rng.integers(1, 6, 4 * n) * 1.0,
            "predicted": rng.random(4 * n) * 5,
        }
    )
    metrics = ["rmse[per_user=true]", "mae[per_user=true]", "rmse"]
    want = receval.evaluate_ratings(frame, metrics)
    got = receval.evaluate_ratings(spark.createDataFrame(frame), metrics)
    assert got.summary == want.summary
    assert len(got.per_user) == n


def test_an_error_across_two_writings_of_a_user(spark: Any, split: None) -> None:
    """An item listed once as user ``"7"`` and once as ``"7.0"`` is listed
    twice by user 7: the same error as in-process, whichever spelling the
    partition meets first."""
    recs = pd.DataFrame(
        {"user": ["7", "7.0", "8", "8"], "item": ["a", "a", "a", "b"], "rank": [1, 2, 1, 2]}
    )
    truth = pd.DataFrame({"user": ["7", "8"], "item": ["a", "b"]})
    with pytest.raises(InputError) as local:
        receval.evaluate(recs, truth, "rr")
    for lists in (None, False):
        Spark.lists = lists
        try:
            with pytest.raises(InputError) as remote:
                receval.evaluate(spark.createDataFrame(recs), spark.createDataFrame(truth), "rr")
        finally:
            Spark.lists = None
        assert remote.value.reason == local.value.reason
        assert str(remote.value.user) == str(local.value.user) == "7"


def _literal(rng: random.Random) -> str:
    """A number literal of JSON's grammar, often whole, sometimes huge."""
    sign = rng.choice(["", "", "-"])
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 18)))
    whole = rng.choice(["0", str(rng.randint(1, 9)) + digits])
    fraction = "".join(rng.choice("0000000123456789") for _ in range(rng.randint(1, 22)))
    exponents = ["", "", f"e{rng.randint(-25, 25)}", f"E+{rng.randint(0, 20)}", "e99999999"]
    return sign + whole + rng.choice(["", "." + fraction]) + rng.choice([*exponents, "e-9999999"])


def test_the_text_rule_in_the_jvm_is_the_text_rule(spark: Any) -> None:
    """:func:`receval.records.text_rule` (Spark SQL, no float) gives each
    string the canonical text :func:`receval.ids.text_value` gives it, on
    5,000 generated number literals and the edges: the limit 2**53, zeros,
    signs, huge exponents, what is no literal."""
    from pyspark.sql import functions as F

    from receval.records import text_rule

    rng = random.Random(33)
    edges = ["-0", "0", "7", "7.0", "7e0", "70e-1", "-0.0", "0e99999999999", "1e16", "1e15"]
    edges += ["9007199254740992.0", "9007199254740993.0", "-9007199254740992e0", "1.5E1"]
    edges += ["7.000000000000000001", "1.25e1", "u1", "007", "1.", ".5", "1e", "", "6.0\n"]
    edges += ["\uff11.0", "1e1000000", "12345678901234567890", "-", "e5", "1.0e-0"]
    cases = [_literal(rng) for _ in range(5000)] + edges
    got = spark.createDataFrame([(c,) for c in cases], "s string").select(text_rule(F.col("s")))
    wrong = [
        (c, g) for c, (g,) in zip(cases, got.collect(), strict=True) if g != str(text_value(c))
    ]
    assert not wrong, wrong[:10]
