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

import dataclasses
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.engines import driver
from receval.errors import InputError, OptionError, ReceValError, option
from receval.evaluation.assemble import result_of, with_columns
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import Result
from receval.io.columns import RECS, TRAIN, TRUTH, resolve
from receval.io.spark_files import format_of, read  # the readers live with the others
from receval.io.tables import read_recs, read_truth
from receval.metrics.context import ItemContext, TrainPairs
from receval.metrics.spec import MetricSpec
from receval.records import Columns, Pair

__all__ = [
    "collected",
    "evaluate_spark",
    "fails_on",
    "first_failing",
    "format_of",
    "is_spark",
    "items_of",
    "part_batch",
    "parts_of",
    "popularity_of",
    "read",
    "session",
    "table_of",
    "without_rows",
    "write_per_user",
]

_SIDE = "__receval_side"
_VALUE = "__receval_value"  # the rank or score of a recommendation, the grade of the truth


def is_spark(obj: Any) -> bool:
    """Whether ``obj`` is a Spark DataFrame (told by its type's module: no import)."""
    return type(obj).__module__.startswith("pyspark.")


def collected(obj: Any) -> Any:
    """A Spark DataFrame as pandas (for the O(items) inputs), anything else as is."""
    return obj.toPandas() if is_spark(obj) else obj


def _on_session(session: Any, obj: Any, name: str) -> Any:
    """A table given next to a Spark DataFrame, as a DataFrame of the same session."""
    if is_spark(obj):
        return obj
    from receval.io.tables import is_table

    if not is_table(obj):
        raise InputError(
            f"with Spark DataFrames, the {name} must be a Spark DataFrame or a table "
            f"(pandas, polars, pyarrow); got {type(obj).__name__}",
            source=name,
        )
    frame = obj if isinstance(obj, pd.DataFrame) else pa.table(obj).to_pandas()
    return session.createDataFrame(frame)


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
    train: Any = None,
    cells: driver.UserCells | None = None,
) -> tuple[Result, driver.Outcome]:
    """Evaluate Spark DataFrames on their session (see the module's docstring);
    the result and the engine's outcome. ``train`` (a Spark DataFrame) joins
    each partition with its users' training pairs (for the count of
    recommendations already seen in training); its item counts are already in
    ``items`` (:func:`popularity_of`). ``cells``: each partition also returns
    the part of each cell of users (:func:`~receval.engines.driver.evaluate_cells`),
    combined per group on the driver (``Outcome.groups``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, StructField, StructType

    _refuse_row_order(opts)
    session = (recs if is_spark(recs) else truth).sparkSession
    recs = _on_session(session, recs, "recommendations")
    truth = _on_session(session, truth, "truth")
    cols = opts.columns()
    r, rfound = _roles(recs, cols, RECS, "recommendations")
    t, tfound = _roles(truth, cols, TRUTH, "truth")
    graded = (opts.graded or opts.grade_cut is not None) and "relevance" in tfound
    if "relevance" in tfound and not graded:
        t = t.drop("relevance")
    tr = None
    if train is not None and items is not None:
        tr, _ = _roles(train, cols, TRAIN, "train")
    r, t, tr, text, notes = _one_kind(r, t, tr)
    max_grade = 1.0
    if graded and opts.graded:
        top = t.agg(F.max("relevance")).first()[0]
        max_grade = 1.0 if top is None else float(top)
    plan = driver.Plan(
        tuple(specs), max_grade, items=items, spark_train=tr is not None, **opts.engine()
    )
    kinds = ("str" if text["user"] else None, "str" if text["item"] else None)
    r, t, recs_columns, truth_columns = _slim(r, t)
    sides = [r, t] if tr is None else [r, t, tr]  # side 0, 1, 2
    both = r.withColumn(_SIDE, F.lit(0).cast("byte"))
    for i, df in enumerate(sides[1:], start=1):
        both = both.unionByName(
            df.withColumn(_SIDE, F.lit(i).cast("byte")), allowMissingColumns=True
        )
    # every row of a user in one partition; Spark chooses how many (its
    # spark.sql.shuffle.partitions, coalesced to a bounded size by adaptive
    # execution), so each partition stays small whatever the data's size.
    # (Grouping each user's rows into one list in the JVM first was measured:
    # no faster at 1M users, 2.5x the memory; benchmarks/README.md.)
    grouped = both.repartition(partitions, "user") if partitions else both.repartition("user")
    parts_df = grouped.mapInArrow(
        _partition_function(plan, recs_columns, truth_columns, kinds, cells),
        "part binary",
    )
    out, n_parts = _combined(parts_of(parts_df), plan, cells, notes)
    res = result_of(out, specs, opts, items)
    names = [str(x) for x in plan.per_user]
    schema = StructType(
        [StructField("user", r.schema["user"].dataType)]
        + [StructField(name, DoubleType()) for name in names]
    )
    res.per_user = None  # collected from per_user_spark when first read
    res.per_user_spark = grouped.mapInArrow(
        _per_user_function(plan, recs_columns, truth_columns, kinds, names), schema
    )
    res.parameters["engine"] = "spark"
    res.parameters["partitions"] = n_parts  # partitions holding users
    return with_columns(res, rfound, tfound, max_grade, opts), out


def _refuse_row_order(opts: EvalOptions) -> None:
    """``ties="input"`` has no meaning on Spark: its rows have no order."""
    if opts.ties != "input":
        return
    reason = "the rows of a Spark DataFrame have no order: break ties by item id"
    if "ties" not in opts.given and opts.convention:  # the convention's choice
        reason = (
            f"the convention {opts.convention!r} breaks ties by the input's row order, "
            "which the rows of a Spark DataFrame do not have: give "
            + option("ties", "item")
            + " (equal scores ordered by item id) with it"
        )
    raise OptionError(
        "ties", "input", allowed=("item", "item_desc", "item_str", "item_str_desc"), reason=reason
    )


def _one_kind(r: Any, t: Any, tr: Any) -> tuple[Any, Any, Any, dict[str, bool], list[str]]:
    """The id columns of the inputs (and train) of one kind: strings where any
    side's are (ids are then read by the text rule in each partition, so
    ``"7"`` is 7 as in-process), with a note when the two sides differed."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    text = {
        role: isinstance(r.schema[role].dataType, StringType)
        or isinstance(t.schema[role].dataType, StringType)
        for role in ("user", "item")
    }
    if tr is not None:
        for role in ("user", "item"):
            if tr.schema[role].dataType != r.schema[role].dataType:  # as in-process: as text
                text[role] = True
    notes = []
    for role, is_text in text.items():
        if not is_text:
            continue
        if tr is not None:
            tr = tr.withColumn(role, F.col(role).cast("string"))
        if len({isinstance(df.schema[role].dataType, StringType) for df in (r, t)}) > 1:
            notes.append(
                f"{role} ids are numbers on one side and strings on the other: matched as strings"
            )
        r = r.withColumn(role, F.col(role).cast("string"))
        t = t.withColumn(role, F.col(role).cast("string"))
    return r, t, tr, text, notes


def _combined(
    rows: list[Any], plan: driver.Plan, cells: driver.UserCells | None, notes: list[str]
) -> tuple[driver.Outcome, int]:
    """The partitions' parts combined (per cell of users too), and how many
    partitions held users; the error of the smallest user, whatever the
    partitioning, when a partition failed."""
    groups = None if cells is None else driver.GroupCombiners(plan, cells)
    combiner = driver.Combiner(plan) if groups is None else groups.whole
    errors: list[tuple[Any, ReceValError]] = []
    for kind, payload in rows:
        if kind == "error":
            errors.append(payload)
        elif groups is not None:
            groups.add(payload)
        else:
            combiner.add(payload)
    if errors:
        raise min(errors, key=lambda e: (e[0] is not None, 0 if e[0] is None else e[0]))[1]
    return (combiner.outcome(notes) if groups is None else groups.outcome(notes)), len(rows)


def table_of(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """A partition's rows as one table (None when it has none)."""
    got = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(got) if got else None


def part_batch(part: Any) -> pa.RecordBatch:
    """What a partition returns to the driver: one pickled object."""
    return pa.RecordBatch.from_pydict({"part": [pickle.dumps(part)]})


def parts_of(df: Any) -> list[Any]:
    """The objects the partitions of ``df`` (a ``mapInArrow`` of
    :func:`part_batch`) returned, collected to the driver."""
    return [pickle.loads(row["part"]) for row in df.collect()]


def first_failing(count: int, fails: Callable[[int], bool]) -> int:
    """The smallest ``i < count`` with ``fails(i)``, by bisection, for a
    ``fails`` that stays true from some i on (a prefix that fails); ``fails(count
    - 1)`` must be true."""
    lo, hi = 0, count - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def fails_on(evaluate: Callable[[pa.Table], Any], table: pa.Table) -> bool:
    """Whether ``evaluate(table)`` raises a :class:`ReceValError`."""
    try:
        evaluate(table)
    except ReceValError:
        return True
    return False


def _pair_of(
    table: pa.Table,
    recs_columns: list[tuple[str, str]],
    truth_columns: list[tuple[str, str]],
    kinds: tuple[str | None, str | None],
    negative_grades: str = "error",
) -> Pair:
    """A partition's rows as the in-process engine's input."""
    side = table.column(_SIDE)
    rt = _as_roles(table.filter(pc.equal(side, 0)), recs_columns)
    tt = _as_roles(table.filter(pc.equal(side, 1)), truth_columns)
    rdata = read_recs(rt, Columns(), "recommendations", kinds)
    tdata = read_truth(tt, Columns(), "truth", kinds, negative_grades)
    return Pair(rdata, tdata, int, int, rdata.rows)


def _slim(r: Any, t: Any) -> tuple[Any, Any, list[tuple[str, str]], list[tuple[str, str]]]:
    """Both inputs with as few columns as the engine reads, since every column
    crosses from the JVM to Python: the score is dropped when a rank orders
    the lists (in-process too, the rank orders), and the order (rank or score)
    and the truth's grade share one float64 column when both are numbers
    (a rank below 2**53 and its float are the same number). Returns the
    DataFrames and, per side, (role, column) pairs."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType

    if "rank" in r.columns and "score" in r.columns:
        r = r.drop("score")
    order = "rank" if "rank" in r.columns else "score"
    recs_columns = [(c, c) for c in r.columns]
    truth_columns = [(c, c) for c in t.columns]
    numeric = [isinstance(r.schema[order].dataType, NumericType)]
    if "relevance" in t.columns:
        numeric.append(isinstance(t.schema["relevance"].dataType, NumericType))
    if all(numeric):
        r = r.withColumn(_VALUE, F.col(order).cast("double")).drop(order)
        recs_columns = [(role, _VALUE if role == order else role) for role, _ in recs_columns]
        if "relevance" in t.columns:
            t = t.withColumn(_VALUE, F.col("relevance").cast("double")).drop("relevance")
            truth_columns = [
                (role, _VALUE if role == "relevance" else role) for role, _ in truth_columns
            ]
    return r, t, recs_columns, truth_columns


def _as_roles(table: pa.Table, columns: list[tuple[str, str]]) -> pa.Table:
    """The columns of one side, named by their roles."""
    return table.select([c for _, c in columns]).rename_columns([role for role, _ in columns])


def _with_train(plan: driver.Plan, table: pa.Table) -> driver.Plan:
    """The plan with the training pairs of the partition's users (rows of side
    2), when ``train=`` is a Spark DataFrame (its pairs are not in the plan)."""
    if plan.items is None or plan.items.train_pairs is not None or not plan.spark_train:
        return plan
    rows = table.filter(pc.equal(table.column(_SIDE), 2))
    from receval.ids import canonical

    pairs = TrainPairs.of(
        canonical(rows.column("user"), "user", "train"),
        plan.items.index_of(canonical(rows.column("item"), "item", "train")),
        plan.items.unknown + 1,
    )
    return dataclasses.replace(plan, items=dataclasses.replace(plan.items, train_pairs=pairs))


def _partition_function(
    plan: driver.Plan,
    recs_columns: list[tuple[str, str]],
    truth_columns: list[tuple[str, str]],
    kinds: tuple[str | None, str | None],
    cells: driver.UserCells | None = None,
) -> Any:
    """What each partition runs: its rows → one pickled Part (or the error it
    met); with ``cells``, the Part and the Part of each of its cells."""

    def evaluate(table: pa.Table) -> Any:
        pair = _pair_of(table, recs_columns, truth_columns, kinds, plan.negative_grades)
        if cells is not None:
            return driver.evaluate_cells(_with_train(plan, table), pair, cells, False)
        return driver.evaluate_pair(_with_train(plan, table), pair, keep_values=False)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        try:
            out: tuple[str, Any] = ("part", evaluate(table))
        except ReceValError:
            out = ("error", _smallest_error(table, evaluate))
        yield part_batch(out)

    return run


def _per_user_function(
    plan: driver.Plan,
    recs_columns: list[tuple[str, str]],
    truth_columns: list[tuple[str, str]],
    kinds: tuple[str | None, str | None],
    names: list[str],
) -> Any:
    """What each partition runs for the per-user values: one row per user."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        pair = _pair_of(table, recs_columns, truth_columns, kinds, plan.negative_grades)
        part = driver.evaluate_pair(_with_train(plan, table), pair, keep_values=True)
        assert part.values is not None
        users, values, _ = part.values
        columns: dict[str, Any] = {"user": pa.array(users.tolist())}
        for j, name in enumerate(names):
            columns[name] = pa.array(values[j], type=pa.float64())
        yield pa.RecordBatch.from_pydict(columns)

    return run


def _smallest_error(table: pa.Table, evaluate: Any) -> tuple[Any, ReceValError]:
    """The error of the smallest offending user of a partition that failed,
    with that user's rows alone, ordered by their content, so that neither the
    partitioning nor the order of the rows changes the message. Every check
    is about one user's rows (ids, ranks, scores, grades, duplicates, the
    policies), so a set of users fails when one of them does: the smallest is
    found by bisection over the sorted users. Rows with no user id come
    first. Rows have no number on Spark: the error names the user and item.
    """
    users = table.column("user")
    if users.null_count:
        rows = table.filter(pc.is_null(users))
        key = None
    else:
        distinct = pc.unique(users)
        ordered = pc.take(distinct, pc.array_sort_indices(distinct))
        lo = first_failing(
            len(ordered),
            lambda i: fails_on(evaluate, table.filter(pc.less_equal(users, ordered[i]))),
        )
        key = ordered[lo].as_py()
        rows = table.filter(pc.equal(users, ordered[lo]))
    rows = rows.sort_by([(name, "ascending") for name in rows.column_names])
    try:
        evaluate(rows)
    except ReceValError as exc:
        return key, without_rows(exc)
    raise AssertionError("a partition failed but none of its users does")  # pragma: no cover


def without_rows(exc: ReceValError) -> ReceValError:
    """The error without the partition's row numbers (they mean nothing on Spark)."""
    if isinstance(exc, InputError) and (exc.row is not None or exc.other_row is not None):
        return InputError(
            exc.reason, source=exc.source, user=exc.user, item=exc.item, column=exc.column
        )
    return exc


# -- Spark sessions and outputs (files are read by receval.io.spark_files) -------------------

#: log4j 2 settings of a Spark driver started by the command line: errors only
_QUIET_LOG = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c{1}: %m%n%ex
"""


def session(master: str | None = None, app: str = "receval", quiet_log: bool = False) -> Any:
    """The Spark session to run on: the active one (e.g. under ``spark-submit``,
    whose ``--master`` and ``--conf`` apply), else a new one on ``master``
    (None: Spark's own default, ``local[*]`` outside a cluster)."""
    from pyspark.sql import SparkSession

    # no console progress bar: the command line shows its own status
    builder = SparkSession.builder.appName(app).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    folder = None
    if quiet_log and SparkSession.getActiveSession() is None:  # a driver started here
        import tempfile

        folder = tempfile.mkdtemp(prefix="receval-spark-")
        path = os.path.join(folder, "log4j2.properties")
        with open(path, "w", encoding="utf-8") as f:
            f.write(_QUIET_LOG)
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{path}"
        )
    try:
        spark = builder.getOrCreate()
    finally:
        if folder is not None:  # read by the JVM as it started
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def items_of(df: Any, cols: Columns, name: str) -> list[Any]:
    """The item column of a Spark DataFrame (catalog, popular items), collected."""
    found = resolve(list(df.columns), cols, (("item",), ("item",)), name)
    return [row[0] for row in df.select(f"`{found['item']}`").collect()]


def write_per_user(df: Any, path: str) -> None:
    """Per-user values written by Spark where it can write (a folder of part
    files: Parquet for a ``.parquet``/``.pq`` name, else CSV with a header).
    Spark's committer writes ``_SUCCESS`` last: a folder without it is not
    complete. An existing path is an :class:`~receval.errors.OutputError`."""
    from receval.errors import OutputError

    writer = df.write.mode("error")
    try:
        if path.rstrip("/").lower().endswith((".parquet", ".pq")):
            writer.parquet(path)
        else:
            writer.csv(path, header=True)
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark.", "py4j.")):
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "PATH_ALREADY_EXISTS" in reason:
                reason = "it already exists (choose another path, or remove it first)"
            raise OutputError(f"cannot write {path} with Spark: {reason}", path=path) from None
        raise


def activity_of(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """Each training user and its number of distinct training items, counted
    by Spark where the data lies (``user_groups="activity"``; O(users) on the
    driver)."""
    from receval.ids import canonical

    df, _ = _roles(train, cols, TRAIN, "train")
    counts = df.select("user", "item").distinct().groupBy("user").count().toPandas()
    counts = counts.sort_values("user", kind="stable")
    users = canonical(counts["user"].to_numpy(), "user", "train")
    return users, counts["count"].to_numpy(dtype=np.int64)


def popularity_of(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray, int]:
    """The training data's item counts, computed by Spark where the data lies:
    the items, the distinct users of each, the distinct users (O(items) on the
    driver, whatever the size of ``train``)."""

    df, _ = _roles(train, cols, TRAIN, "train")
    pairs = df.select("user", "item").distinct()
    counts = pairs.groupBy("item").count().toPandas()
    users = pairs.select("user").distinct().count()
    return counts["item"].to_numpy(), counts["count"].to_numpy(dtype=np.int64), int(users)
