"""Inputs on Spark: files read by Spark, DataFrames opened for the Spark engine.

- Files read by Spark (the command line's ``--engine spark``): the Spark side
  of receval's one table of readers (:data:`receval.io.files.READERS`). Each
  format of that table has its Spark reader here, keyed by the same name, so
  a format is added in one place for both engines (docs/contributing.md).
- :func:`opened`: an evaluation's inputs on their Spark session, in the form
  the Spark engine takes (:class:`~receval.records.SparkRows`).
- The side inputs counted where they lie (:func:`popularity_of`,
  :func:`activity_of`), or collected (:func:`collected`, :func:`items_of`),
  the session (:func:`session`) and the per-user values written by Spark.

Spark is imported only inside the functions: the core never imports it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.errors import InputError
from receval.io.columns import RATINGS, RECS, TRAIN, TRUTH, resolve
from receval.io.tables import read_recs, read_truth
from receval.records import SIDE, Columns, Pair, SparkRows

__all__ = [
    "activity_of",
    "beside",
    "collected",
    "format_of",
    "is_spark",
    "items_of",
    "opened",
    "opened_ratings",
    "popularity_of",
    "read",
    "session",
    "write_per_user",
]


#: the columns of TREC files (whitespace-separated, no header), by role
_TREC = {
    "recommendations": ("user", "q0", "item", "rank", "score", "tag"),
    "truth": ("user", "iteration", "item", "relevance"),
}


#: compression suffixes Spark reads (skipped before a file's format suffix)
_COMPRESSIONS = (".gz", ".bz2", ".zst", ".zstd", ".snappy")


def format_of(path: str, fmt: str = "auto") -> str:
    """The format of a file or folder Spark reads: given, or told by its suffix
    through receval's one table of formats (:data:`receval.io.files.READERS`;
    a folder of part files: by the suffix of its name, else Parquet, what
    Spark writes by default)."""
    from receval.io.files import format_by_suffix

    if fmt != "auto":
        return fmt
    return format_by_suffix(path, _COMPRESSIONS) or "parquet"


def read(spark: Any, path: str, role: str, fmt: str = "auto", sep: str | None = None) -> Any:
    """A file (local, HDFS, S3, any path Spark understands) as a Spark
    DataFrame with the file's own column names (RecBole's without their
    types): each format of :data:`receval.io.files.READERS` by its reader in
    :data:`_READERS` (Parquet, CSV/TSV with a header line, JSON Lines, TREC
    run/qrels by ``role``, RecBole atomic files). A path Spark cannot read is
    an :class:`InputError` naming it."""
    kind = format_of(path, fmt)
    if kind not in _READERS:
        raise InputError(f"unknown format {kind!r}: expected {', '.join(_READERS)}", source=path)
    try:
        return _READERS[kind](spark, path, role, sep)
    except Exception as exc:  # Spark's AnalysisException: no such path, unreadable file
        if type(exc).__module__.startswith(("pyspark.", "py4j.")):
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"Spark cannot read it as {kind}: {reason}", source=path) from None
        raise


def _delimited(kind: str) -> Callable[[Any, str, str, str | None], Any]:
    """Spark's reader of a delimited format with a header line (CSV, TSV)."""

    def read_delimited(spark: Any, path: str, role: str, sep: str | None) -> Any:
        from receval.io.files import READERS

        delimiter = sep or READERS[kind].sep or ","
        return spark.read.csv(path, header=True, inferSchema=True, sep=delimiter)

    return read_delimited


def _recbole(spark: Any, path: str, role: str, sep: str | None) -> Any:
    """A RecBole atomic file: names without their ``:type``, ``float`` columns
    as doubles, ``token`` (ids) and sequence columns as text."""
    from pyspark.sql import functions as F

    from receval.io.files import READERS, recbole_header

    df = spark.read.csv(path, header=True, inferSchema=False, sep=sep or READERS["recbole"].sep)
    names, kinds = recbole_header(df.columns, path)
    columns = []
    for raw, name, kind in zip(df.columns, names, kinds, strict=True):
        column = F.col(f"`{raw}`")
        columns.append((column.cast("double") if kind == "float" else column).alias(name))
    return df.select(*columns)


def _trec(spark: Any, path: str, role: str, sep: str | None = None) -> Any:
    from pyspark.sql import functions as F

    names = _TREC["recommendations" if role == "recommendations" else "truth"]
    fields = F.split(F.trim(F.col("value")), r"\s+")
    lines = spark.read.text(path).where(F.length(F.trim(F.col("value"))) > 0)
    columns = [fields.getItem(i).alias(name) for i, name in enumerate(names)]
    df = lines.select(*columns)
    if role == "recommendations":
        return df.select("user", "item", F.col("rank").cast("long"), F.col("score").cast("double"))
    return df.select("user", "item", F.col("relevance").cast("double"))


#: Spark's reader of each format, keyed by the names of :data:`receval.io.files.READERS`
#: (spark, path, role, sep) -> a Spark DataFrame.
_READERS: dict[str, Callable[[Any, str, str, str | None], Any]] = {
    "parquet": lambda spark, path, role, sep: spark.read.parquet(path),
    "recbole": _recbole,
    "trec": _trec,
    "jsonl": lambda spark, path, role, sep: spark.read.json(path),
    "csv": _delimited("csv"),
    "tsv": _delimited("tsv"),
}


# -- the inputs of an evaluation opened on their Spark session -------------------------------

_VALUE = "__receval_value"  # the rank or score of a recommendation, the grade of the truth


def opened(
    recs: Any,
    truth: Any,
    cols: Columns,
    *,
    graded: bool,
    grade_cut: float | None,
    negative_grades: str = "error",
    train: Any = None,
    partitions: int | None = None,
) -> tuple[SparkRows, dict[str, str], dict[str, str]]:
    """Both inputs (one a Spark DataFrame, the other a Spark DataFrame or a
    table) opened on their session for :class:`receval.engines.spark.Spark`:
    the columns of each role found by the one resolver, the truth's grade
    read only when grades are (``graded``, or a ``grade_cut``), the largest
    grade of the whole truth, ids of one kind (text where either side's are),
    and every row in one DataFrame with a :data:`~receval.records.SIDE`
    column (``train``, a Spark DataFrame: its pairs as side 2). Also returns
    the columns read on each side (role -> column)."""
    from pyspark.sql import functions as F

    session = (recs if is_spark(recs) else truth).sparkSession
    recs = _on_session(session, recs, "recommendations")
    truth = _on_session(session, truth, "truth")
    r, rfound = _roles(recs, cols, RECS, "recommendations")
    t, tfound = _roles(truth, cols, TRUTH, "truth")
    reads_grades = (graded or grade_cut is not None) and "relevance" in tfound
    if "relevance" in tfound and not reads_grades:
        t = t.drop("relevance")
    tr = None if train is None else _roles(train, cols, TRAIN, "train")[0]
    r, t, tr, text, notes = _one_kind(r, t, tr)
    max_grade = 1.0
    if reads_grades and graded:
        top = t.agg(F.max("relevance")).first()[0]
        max_grade = 1.0 if top is None else float(top)
    kinds = ("str" if text["user"] else None, "str" if text["item"] else None)
    r, t, recs_columns, truth_columns = _slim(r, t)
    sides = [r, t] if tr is None else [r, t, tr]  # side 0, 1, 2
    rows = r.withColumn(SIDE, F.lit(0).cast("byte"))
    for i, df in enumerate(sides[1:], start=1):
        rows = rows.unionByName(
            df.withColumn(SIDE, F.lit(i).cast("byte")), allowMissingColumns=True
        )
    to_pair = functools.partial(_pair_of, recs_columns, truth_columns, kinds, negative_grades)
    found = SparkRows(
        rows, to_pair, r.schema["user"].dataType, max_grade, tr is not None, partitions, notes
    )
    return found, rfound, tfound


def opened_ratings(
    ratings: Any, cols: Columns, per_user: Any = None
) -> tuple[Any, dict[str, str]] | None:
    """Ratings given as a Spark DataFrame, opened where they lie: the
    DataFrame with its columns of each role (found by the one resolver)
    named by their roles, and which they were; None when ``ratings`` is not a
    Spark DataFrame. ``per_user``: the first per-user metric asked, which
    needs a user column."""
    if not is_spark(ratings):
        return None
    from pyspark.sql import functions as F

    read, required = RATINGS
    need = ("user",) if per_user is not None else ()
    try:
        found = resolve(list(ratings.columns), cols, (read, (*required, *need)), "ratings")
    except InputError as exc:
        if per_user is not None and "user" in exc.reason and exc.column is None:
            raise InputError(f"{exc.reason} (needed by {per_user})", source=exc.source) from None
        raise
    return ratings.select([F.col(f"`{c}`").alias(role) for role, c in found.items()]), found


def is_spark(obj: Any) -> bool:
    """Whether ``obj`` is a Spark DataFrame (told by its type's module: no import)."""
    return type(obj).__module__.startswith("pyspark.")


def beside(side: Any, recommendations: Any, truth: Any) -> Any:
    """``side`` (e.g. ``train=``) when it is a Spark DataFrame given with
    Spark inputs: it stays where it lies, and what the evaluation needs of it
    is counted there (:func:`popularity_of`); else None."""
    if is_spark(side) and (is_spark(recommendations) or is_spark(truth)):
        return side
    return None


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


def _pair_of(
    recs_columns: list[tuple[str, str]],
    truth_columns: list[tuple[str, str]],
    kinds: tuple[str | None, str | None],
    negative_grades: str,
    table: pa.Table,
) -> Pair:
    """A partition's rows (``table``) as the engine's input: each side's rows
    read as any table is (the same checks and errors), ids of the kinds of the
    whole input."""
    side = table.column(SIDE)
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


def activity_of(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray] | None:
    """Each training user and its number of distinct training items, counted
    by Spark where the data lies (``user_groups="activity"``; O(users) on the
    driver); None when ``train`` is not a Spark DataFrame."""
    from receval.ids import canonical

    if not is_spark(train):
        return None
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
