"""Evaluation on Apache Spark: receval's own kernels on each partition of users.

``receval.evaluate(recs, truth, metrics, ...)`` with ``pyspark.sql.DataFrame``
inputs runs here, on their session. Spark moves the data; receval computes:

1. the columns of each role are found on the DataFrames' schemas, as for any
   table (:func:`receval.io.columns.resolve`), and the global facts are taken
   first: the largest grade of the whole truth (graded metrics normalise by
   it) and whether ids are text on either side (then both sides compare as
   text, as in-process);
2. the rows of both inputs are put together (a side column tells them apart)
   and hash-partitioned by user, so that every row of a user is in one
   partition;
3. each partition runs :func:`receval.engines.driver.evaluate_pair` — the very
   code of the in-process engine — through ``mapInArrow``, and returns one
   pickled :class:`~receval.engines.driver.Part`: exact sums, counts, item
   counts of the aggregate metrics; no per-user value;
4. the driver adds the parts (:class:`~receval.engines.driver.Combiner`):
   exact sums and integer counts, so no number depends on the partitioning.

What reaches the driver is O(partitions × (metrics + items recommended)),
never O(users). No metric formula is written for Spark. ``ties="input"`` is
refused (Spark rows have no order). ``train=``, ``catalog=``,
``item_features=`` and ``popular=`` may be Spark DataFrames: they are collected
to the driver (they are O(items), ``train`` O(training interactions)).

The core never imports pyspark: this module imports it inside its functions.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.engines import driver
from receval.errors import OptionError, ReceValError
from receval.evaluation.assemble import result_of
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import Result
from receval.io.columns import RECS, TRUTH, resolve
from receval.io.tables import read_recs, read_truth
from receval.metrics.context import ItemContext
from receval.metrics.spec import MetricSpec
from receval.records import Columns, Pair

__all__ = ["collected", "evaluate_spark", "is_spark"]

_SIDE = "__receval_side"


def is_spark(obj: Any) -> bool:
    """Whether ``obj`` is a Spark DataFrame (told by its type's module: no import)."""
    return type(obj).__module__.startswith("pyspark.")


def collected(obj: Any) -> Any:
    """A Spark DataFrame as pandas (for the O(items) inputs), anything else as is."""
    return obj.toPandas() if is_spark(obj) else obj


def _roles(
    df: Any, cols: Columns, roles: tuple[tuple[str, ...], tuple[str, ...]], name: str
) -> Any:
    from pyspark.sql import functions as F

    found = resolve(list(df.columns), cols, roles, name)
    return df.select([F.col(f"`{column}`").alias(role) for role, column in found.items()]), found


def evaluate_spark(
    recs: Any,
    truth: Any,
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    items: ItemContext | None,
    partitions: int | None = None,
) -> Result:
    """Evaluate Spark DataFrames on their session (see the module's docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    if opts.ties == "input":
        raise OptionError(
            "ties",
            "input",
            allowed=("item", "item_desc"),
            reason="the rows of a Spark DataFrame have no order: break ties by item id",
        )
    cols = opts.columns()
    r, rfound = _roles(recs, cols, RECS, "recommendations")
    t, tfound = _roles(truth, cols, TRUTH, "truth")
    graded = opts.graded and "relevance" in tfound
    if "relevance" in tfound and not graded:
        t = t.drop("relevance")
    text = {
        role: isinstance(r.schema[role].dataType, StringType)
        or isinstance(t.schema[role].dataType, StringType)
        for role in ("user", "item")
    }
    notes = []
    for role, is_text in text.items():
        if is_text:
            kinds = {isinstance(df.schema[role].dataType, StringType) for df in (r, t)}
            if len(kinds) > 1:
                notes.append(
                    f"{role} ids are numbers on one side and strings on the other: matched as "
                    "strings"
                )
            r = r.withColumn(role, F.col(role).cast("string"))
            t = t.withColumn(role, F.col(role).cast("string"))
    max_grade = 1.0
    if graded:
        top = t.agg(F.max("relevance")).first()[0]
        max_grade = 1.0 if top is None else float(top)
    plan = driver.Plan(tuple(specs), max_grade, items=items, **opts.engine())
    kinds = ("str" if text["user"] else None, "str" if text["item"] else None)
    recs_columns, truth_columns = list(r.columns), list(t.columns)
    both = r.withColumn(_SIDE, F.lit(0)).unionByName(
        t.withColumn(_SIDE, F.lit(1)), allowMissingColumns=True
    )
    n = partitions or both.sparkSession.sparkContext.defaultParallelism
    parts_df = both.repartition(n, "user").mapInArrow(
        _partition_function(plan, recs_columns, truth_columns, kinds, graded), "part binary"
    )
    combiner = driver.Combiner(plan)
    errors: list[tuple[Any, ReceValError]] = []
    for row in parts_df.collect():
        kind, payload = pickle.loads(row["part"])
        if kind == "error":
            errors.append(payload)
        else:
            combiner.add(payload)
    if errors:  # the error of the smallest user, whatever the partitioning
        raise min(errors, key=lambda e: (e[0] is None, str(e[0])))[1]
    res = result_of(combiner.outcome(notes), specs, opts, items)
    names = [str(x) for x in plan.per_user]
    schema = StructType(
        [StructField("user", r.schema["user"].dataType)]
        + [StructField(name, DoubleType()) for name in names]
    )
    res.per_user_spark = both.repartition(n, "user").mapInArrow(
        _per_user_function(plan, recs_columns, truth_columns, kinds, graded, names), schema
    )
    res.parameters["engine"] = "spark"
    res.parameters["partitions"] = n
    res.parameters["columns"] = {"recommendations": rfound, "truth": tfound}
    return res


def _pair_of(
    batches: Iterator[pa.RecordBatch],
    recs_columns: list[str],
    truth_columns: list[str],
    kinds: tuple[str | None, str | None],
    graded: bool,
) -> Pair | None:
    """A partition's rows as the in-process engine's input (None when empty)."""
    got = [b for b in batches if b.num_rows]
    if not got:
        return None
    table = pa.Table.from_batches(got)
    side = table.column(_SIDE)
    rt = table.filter(pc.equal(side, 0)).select(recs_columns)
    tt = table.filter(pc.equal(side, 1)).select(truth_columns)
    rdata = read_recs(rt, Columns(), "recommendations", kinds)
    tdata = read_truth(tt, Columns(), "truth", kinds)
    if not graded:
        tdata.grades = np.ones(len(tdata.grades))
    return Pair(rdata, tdata, int, int, rdata.rows)


def _partition_function(
    plan: driver.Plan,
    recs_columns: list[str],
    truth_columns: list[str],
    kinds: tuple[str | None, str | None],
    graded: bool,
) -> Any:
    """What each partition runs: its rows → one pickled Part (or the error it met)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            pair = _pair_of(batches, recs_columns, truth_columns, kinds, graded)
            if pair is None:
                return
            out: tuple[str, Any] = ("part", driver.evaluate_pair(plan, pair, keep_values=False))
        except ReceValError as exc:
            out = ("error", (getattr(exc, "user", None), exc))
        yield pa.RecordBatch.from_pydict({"part": [pickle.dumps(out)]})

    return run


def _per_user_function(
    plan: driver.Plan,
    recs_columns: list[str],
    truth_columns: list[str],
    kinds: tuple[str | None, str | None],
    graded: bool,
    names: list[str],
) -> Any:
    """What each partition runs for the per-user values: one row per user."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pair = _pair_of(batches, recs_columns, truth_columns, kinds, graded)
        if pair is None:
            return
        part = driver.evaluate_pair(plan, pair, keep_values=True)
        assert part.values is not None
        users, values, _ = part.values
        columns: dict[str, Any] = {"user": pa.array(users.tolist())}
        for j, name in enumerate(names):
            columns[name] = pa.array(values[j], type=pa.float64())
        yield pa.RecordBatch.from_pydict(columns)

    return run
