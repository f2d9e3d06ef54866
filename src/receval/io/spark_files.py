"""Inputs on Spark: files read by Spark, DataFrames opened for the Spark engine.

- Files read by Spark (the command line's ``--engine spark``): the Spark side
  of receval's one table of readers (:data:`receval.io.files.READERS`). Each
  format of that table has its Spark reader here, keyed by the same name, so
  a format is added in one place for both engines (docs/contributing.md).
- :func:`opened`: an evaluation's inputs on their Spark session, in the form
  the Spark engine takes (:class:`~receval.records.SparkRows`).
- The side inputs counted where they lie (:func:`popularity_of`,
  :func:`activity_of`), or collected (:func:`collected`, :func:`items_of`),
  the session of a command-line run (:func:`command_session`) and the
  per-user values written by Spark.

Spark is imported only inside the functions: the core never imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from receval._lazy import pc
from receval.errors import InputError, OptionError
from receval.ids import canonical
from receval.io.columns import RATINGS, RECS, TRAIN, TRUTH, is_frame, no_order, resolve
from receval.io.tables import read_recs, read_truth
from receval.records import (
    KEY,
    SIDE,
    Columns,
    Pair,
    SparkRows,
    floats_read,
    key_mode,
    user_key,
)

__all__ = [
    "OpenedRows",
    "activity_of",
    "beside",
    "check_master",
    "collected",
    "command_session",
    "format_of",
    "is_spark",
    "items_of",
    "opened",
    "opened_ratings",
    "popularity_of",
    "read",
    "refuse_existing",
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
        typed = spark.read.csv(path, header=True, inferSchema=True, sep=delimiter)
        return _as_written(spark.read.csv(path, header=True, sep=delimiter), typed)

    return read_delimited


def _as_written(text: Any, typed: Any) -> Any:
    """A delimited file's columns (``text``: every field as written) of the
    types Spark guessed (``typed``) where each value written back is the text
    of the file, else as text: ``007``, ``+5`` or ``11.50`` stay text, as the
    in-process reader keeps them by the id rule (Spark made ``007`` and ``7``
    one user). One job over the file, when Spark guessed a type at all."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    guessed = {
        f.name: f.dataType for f in typed.schema.fields if not isinstance(f.dataType, StringType)
    }
    if not guessed:
        return text
    col = lambda name: F.col(f"`{name}`")  # noqa: E731
    differ = [
        F.sum(F.when(col(n).cast(t).cast("string") != col(n), 1).otherwise(0)).alias(n)
        for n, t in guessed.items()
    ]
    counts = text.select(*differ).first().asDict()
    keep = {n: t for n, t in guessed.items() if not counts[n]}
    return text.select(
        *[col(n).cast(keep[n]).alias(n) if n in keep else col(n) for n in text.columns]
    )


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
    if role == "recommendations":  # ordered by score, as trec_eval and the in-process reader
        return df.select("user", "item", F.col("score").cast("double"))
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
    (read under ``graded=False`` too: the engine applies it), ids of one
    kind (text where either side's are), and every row in one DataFrame with
    a :data:`~receval.records.SIDE` column (``train``, a Spark DataFrame: its
    pairs as side 2). The largest grade of the whole truth is not read here:
    :meth:`OpenedRows.largest_grade` reads it, when a metric asks for it.
    Also returns the columns read on each side (role -> column)."""
    from pyspark.sql import functions as F

    session = (recs if is_spark(recs) else truth).sparkSession
    recs = _on_session(session, recs, "recommendations")
    truth = _on_session(session, truth, "truth")
    r, rfound = _roles(recs, cols, RECS, "recommendations")
    if "rank" not in rfound and "score" not in rfound:
        raise no_order(list(recs.columns), "recommendations")
    t, tfound = _roles(truth, cols, TRUTH, "truth")
    # read under graded=False too: the engine reads negative grades and graded
    # gains (LensKit's gain='rating') there, as it does for every other input
    reads_grades = "relevance" in tfound
    tr = None if train is None else _roles(train, cols, TRAIN, "train")[0]
    r, t, tr, text, notes, floats = _one_kind(r, t, tr)
    grades = t.select("relevance") if reads_grades and graded else None
    kinds = ("str" if text["user"] else None, "str" if text["item"] else None)
    r, t, recs_columns, truth_columns = _slim(r, t)
    sides = [r, t] if tr is None else [r, t, tr]  # side 0, 1, 2
    rows = r.withColumn(SIDE, F.lit(0).cast("byte"))
    for i, df in enumerate(sides[1:], start=1):
        rows = rows.unionByName(
            df.withColumn(SIDE, F.lit(i).cast("byte")), allowMissingColumns=True
        )
    to_pair = functools.partial(
        _pair_of, recs_columns, truth_columns, kinds, negative_grades, floats
    )
    # each side apart too, its columns of the union's types (what a partition's
    # rows hold either way), for the engine to group each user's rows in the JVM
    typed = [
        df.select([F.col(f"`{c}`").cast(rows.schema[c].dataType).alias(c) for c in df.columns])
        for df in sides
    ]
    found = OpenedRows(
        rows,
        to_pair,
        r.schema["user"].dataType,
        1.0,
        tr is not None,
        partitions,
        notes,
        KEY if KEY in r.columns else "user",
        floats,
        text["user"] and KEY not in r.columns,
        grades,
        tuple(typed),
    )
    return found, rfound, tfound


@dataclasses.dataclass
class OpenedRows(SparkRows):
    """The rows :func:`opened` makes, whose largest grade is read only when
    asked (:meth:`largest_grade`): finding it is a Spark job of its own over
    the whole truth (≈ 10 CPU seconds at 1M users, benchmarks/README.md), and
    only a metric bounded by it needs it before the evaluation (ERR's
    normaliser, :func:`receval.engines.spark.reads_largest_grade`). Until
    then :attr:`max_grade` is 1.0, and the partitions report each their
    largest grade with their results instead (the largest grade a result's
    metadata names).

    >>> rows = OpenedRows(None, str, None)  # no grade read: 1.0, no job
    >>> rows.largest_grade()
    1.0
    """

    #: the truth's grade column (a Spark DataFrame) until its largest grade is
    #: read; None when grades are not read (``graded=False``, no grade column)
    grades: Any = None
    #: the rows of each side (recommendations, truth, then a Spark ``train=``'s
    #: pairs) as Spark DataFrames without the side column, each column of the
    #: type it has in :attr:`rows`: what the engine groups by user in the JVM
    #: (:func:`receval.engines.spark.grouped`)
    sides: tuple[Any, ...] = ()

    def largest_grade(self) -> float:
        """The largest grade of the whole truth (1.0 when grades are not read
        or the truth is empty): one Spark job, run on the first call only,
        whose answer is kept in :attr:`max_grade`."""
        if self.grades is not None:
            from pyspark.sql import functions as F

            top = self.grades.agg(F.max("relevance")).first()[0]
            self.max_grade = 1.0 if top is None else float(top)
            self.grades = None
        return self.max_grade


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
    frame = obj if is_frame(obj) else pa.table(obj).to_pandas()
    return session.createDataFrame(frame)


def _roles(
    df: Any, cols: Columns, roles: tuple[tuple[str, ...], tuple[str, ...]], name: str
) -> Any:
    from pyspark.sql import functions as F

    found = resolve(list(df.columns), cols, roles, name)
    df = df.select([F.col(f"`{column}`").alias(role) for role, column in found.items()])
    return _item_lists(df, found, roles is RECS, name), found


def _item_lists(df: Any, found: dict[str, str], rank: bool, name: str) -> Any:
    """A DataFrame holding a list of items a row as one row per listed item,
    as a table's (:func:`receval.io.columns.item_lists`): rank = position in
    the list (unless a rank column is read), other list columns read along
    the items (one value per item, else an error naming a user), a column of
    one value a row repeated, a missing or empty list no row."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    if not isinstance(df.schema["item"].dataType, ArrayType):
        return df
    along = [c for c in df.columns if c != "item" and isinstance(df.schema[c].dataType, ArrayType)]
    size = lambda c: F.when(F.col(c).isNull(), 0).otherwise(F.size(c))  # noqa: E731
    for c in along:
        wrong = df.filter(size(c) != size("item")).select("user", size(c), size("item")).take(1)
        if wrong:
            user, given, items = wrong[0]
            raise InputError(
                f"the list in column {found[c]!r} holds {given} values for {items} items: one "
                "value per listed item",
                source=name,
                user=user,
                column=found[c],
            )
    others = [c for c in df.columns if c != "item" and c not in along]
    zipped = F.posexplode(F.arrays_zip("item", *along)).alias("position", "listed")
    long = df.select(*others, zipped)
    columns = [F.col(c) for c in others] + [F.col(f"listed.{c}").alias(c) for c in ("item", *along)]
    if rank and "rank" not in found:
        columns.append((F.col("position") + 1).cast("long").alias("rank"))
        found["rank"] = "rank"
    return long.select(*columns)


def _one_kind(
    r: Any, t: Any, tr: Any
) -> tuple[Any, Any, Any, dict[str, bool], list[str], dict[int, dict[str, str]]]:
    """The id columns of the inputs (and train) of one kind: strings where any
    side's are (ids are then read by the text rule in each partition, so
    ``"7"`` is 7 as in-process), with a note when the two sides differed.
    Also returns, per side (0, 1, 2), the roles whose column held floats
    before it became text (role -> ``"float64"`` or ``"float32"``): the JVM
    writes a float its own way (``1.0E16``), so each partition reads those
    values back as the floats they were (:func:`receval.records.floats_read`). Where
    float user ids meet text ones (the JVM cannot write a float as the id
    rule does), each side gets the column :data:`KEY`
    (:func:`receval.records.user_key`) that the engine groups the users by;
    text users written apart (``"7.0"`` for 7) are found by the partitions
    (:attr:`receval.records.SparkRows.texts`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, StringType

    def apart(a: Any, b: Any) -> bool:  # types Spark cannot union: dates and numbers, ...
        numeric = isinstance(a, NumericType) and isinstance(b, NumericType)
        return a != b and not numeric

    text = {
        role: isinstance(r.schema[role].dataType, StringType)
        or isinstance(t.schema[role].dataType, StringType)
        or apart(r.schema[role].dataType, t.schema[role].dataType)
        for role in ("user", "item")
    }
    if tr is not None:
        for role in ("user", "item"):
            if tr.schema[role].dataType != r.schema[role].dataType:  # as in-process: as text
                text[role] = True
    sides = [r, t] if tr is None else [r, t, tr]
    floats: dict[int, dict[str, str]] = {i: {} for i in range(len(sides))}
    notes = []
    for role, is_text in text.items():
        if not is_text:
            continue
        if r.schema[role].dataType != t.schema[role].dataType:  # a number, a date, a boolean
            notes.append(
                f"{role} ids are numbers on one side and strings on the other: matched as strings"
            )
        for i, df in enumerate(sides):
            width = _FLOATS.get(type(df.schema[role].dataType).__name__)
            if width:
                floats[i][role] = width
    keyed = text["user"] and any("user" in f for f in floats.values())
    if keyed:  # float users beside text: grouped by a key, read in each partition
        mode = key_mode([df.schema["user"].dataType for df in sides])
        sides = [
            df.withColumn(KEY, user_key(F.col("user"), df.schema["user"].dataType, mode))
            for df in sides
        ]
    for role, is_text in text.items():
        if is_text:
            sides = [df.withColumn(role, F.col(role).cast("string")) for df in sides]
    r, t = sides[0], sides[1]
    return r, t, (sides[2] if tr is not None else None), text, notes, floats


#: the Spark float types -> how a partition reads their values back
#: (:func:`receval.records.floats_read`)
_FLOATS = {"DoubleType": "float64", "FloatType": "float32"}


def _pair_of(
    recs_columns: list[tuple[str, str]],
    truth_columns: list[tuple[str, str]],
    kinds: tuple[str | None, str | None],
    negative_grades: str,
    floats: dict[int, dict[str, str]],
    table: pa.Table,
) -> Pair:
    """A partition's rows (``table``) as the engine's input: each side's rows
    read as any table is (the same checks and errors), ids of the kinds of the
    whole input, floats that the JVM wrote as text read back (``floats``,
    :func:`_one_kind`)."""
    side = table.column(SIDE)
    rt = _as_roles(floats_read(table.filter(pc.equal(side, 0)), floats[0]), recs_columns)
    tt = _as_roles(floats_read(table.filter(pc.equal(side, 1)), floats[1]), truth_columns)
    with _naming_user(rt, kinds[0]):
        rdata = read_recs(rt, Columns(), "recommendations", kinds)
    with _naming_user(tt, kinds[0]):
        tdata = read_truth(tt, Columns(), "truth", kinds, negative_grades)
    return Pair(rdata, tdata, int, int, rdata.rows)


@contextlib.contextmanager
def _naming_user(table: pa.Table, kind: str | None) -> Iterator[None]:
    """An error about a row of ``table`` (a partition's rows of one side)
    that names no user (a missing item id: the reader names its row) names
    the user of that row, as the reader reads it: on Spark the error loses
    its row (a partition's rows are not the input's), so the user is what
    says where the value is. A row whose user is itself missing is left as
    it is (``missing user id``)."""
    try:
        yield
    except InputError as exc:
        raise exc.of_user(lambda row: _user_at(table, row, kind)) from None


def _user_at(table: pa.Table, row: int, kind: str | None) -> Any:
    """The user id of one row of ``table`` as the reader reads it; None for
    a row out of range, a missing user or one that is no id."""
    if not 0 <= row < table.num_rows:
        return None
    users = table.column("user").slice(row, 1)
    if users.null_count:
        return None
    try:
        return canonical(users, "user", "", kind)[0]
    except InputError:
        return None


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
    recs_columns = [(c, c) for c in r.columns if c != KEY]
    truth_columns = [(c, c) for c in t.columns if c != KEY]
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

#: the forms of a Spark master URL (Spark's own: SparkContext's local masters,
#: the standalone cluster's, and the cluster managers YARN and Kubernetes)
_MASTER = re.compile(
    r"local"
    r"|local\[\s*(\*|[1-9][0-9]*)\s*(,\s*[1-9][0-9]*\s*)?\]"
    r"|local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]"
    r"|spark://[^\s/:,]+:[0-9]+(,[^\s/:,]+:[0-9]+)*"
    r"|yarn"
    r"|k8s://\S+"
)

#: what a master must look like, said by the error that refuses one
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT, yarn or k8s://HOST:PORT"

#: the thread properties of a Spark job group, put back after a run in a session not ours
_JOB_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def check_master(master: str | None) -> None:
    """Refuse a ``master`` that is no Spark master URL (an
    :class:`~receval.errors.OptionError` naming ``master``, ``--master`` on
    the command line), before any Java starts. None: Spark's default."""
    if master is not None and not _MASTER.fullmatch(master.strip()):
        raise OptionError(
            "master", master, expected=f"a Spark master URL: {MASTER_FORMS}", reason=None
        )


@contextlib.contextmanager
def command_session(master: str | None = None, app: str = "receval") -> Iterator[Any]:
    """The Spark session of one run of a command (``evaluate --engine spark``),
    a good guest of its process:

    - an active session (the user's, e.g. under ``spark-submit``) is used as
      it is: never reconfigured, never stopped;
    - else a session is started on ``master`` (checked first:
      :func:`check_master`), and stopped at the end. Its Java process is
      started with its console (Spark's log, the JVM's warnings, the Python
      workers' output) in a file, deleted at the end: what the user reads
      comes from receval (a Java process that cannot start: one error with
      the line of that file that says why). The workers run this interpreter
      on a local master unless ``PYSPARK_PYTHON`` or ``spark.pyspark.python``
      says otherwise; Spark's own ``SPARK_HOME`` is given to the Java
      launcher only (no ``PATH`` needed). ``os.environ`` is as it was once
      the session has started;
    - py4j's log records are not printed during the run (its tracebacks of a
      connection cut by Ctrl-C); the logging configuration is put back after;
    - the run's jobs are one job group: an error or Ctrl-C (KeyboardInterrupt)
      cancels them (only them) before it goes on.
    """
    check_master(master)
    with _quiet_py4j():
        spark, owned = _started(master, app)
        sc = spark.sparkContext
        group = f"receval-{uuid.uuid4().hex}"
        before: dict[str, str | None] = {}
        try:
            before.update((key, sc.getLocalProperty(key)) for key in _JOB_PROPERTIES)
            sc.setJobGroup(group, f"receval ({app})", interruptOnCancel=True)
            yield spark
        except BaseException as exc:
            _quietly(sc.cancelJobGroup, group)
            if isinstance(exc, Exception):
                found = _worker_error(exc)
                if found is not None:
                    raise found from None
            raise
        finally:
            if owned is None:
                for key, value in before.items():
                    _quietly(sc.setLocalProperty, key, value)
            else:
                owned.close()


class _Owned:
    """A session receval started, and the Java process when receval launched it."""

    def __init__(self, spark: Any, console: str | None) -> None:
        self.spark = spark
        self.console = console  # the file of the Java process's console, when launched here

    def close(self) -> None:
        """Stop the session and end the Java process launched here, quietly."""
        _quietly(self.spark.stop)
        if self.console is not None:
            _end_gateway(self.console)


def _end_gateway(console: str) -> None:
    """End the Java process receval launched (its stdin closed: Spark's
    gateway exits and its shutdown hooks run; killed if it hangs), and remove
    the file of its console."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    SparkContext._gateway = None
    SparkContext._jvm = None
    try:
        proc = getattr(gateway, "proc", None)
        if gateway is not None:
            _quietly(gateway.shutdown)
        if proc is None:
            return
        _quietly(proc.stdin.close)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        except BaseException:  # a second Ctrl-C: no waiting
            proc.kill()
            raise
    finally:
        _remove(console)


def _started(master: str | None, app: str) -> tuple[Any, _Owned | None]:
    """The session to run on, and what receval owns of it (None: the user's)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, None
    if SparkContext._active_spark_context is not None:  # the user's context, as it is
        return SparkSession.builder.getOrCreate(), None
    conf = SparkConf().setAppName(app).set("spark.ui.showConsoleProgress", "false")
    if master:
        conf.setMaster(master.strip())
    console = None
    handler = _sigint_handler()
    try:
        if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
            fd, console = tempfile.mkstemp(prefix="receval-spark-", suffix=".log")
            os.close(fd)
            with _signals_deferred():  # a launch cut short leaves a Java process behind
                _launch(conf, console)
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
    except BaseException as exc:  # Ctrl-C too: the Java process launched here ends
        error = _start_error(exc, master, console) if isinstance(exc, Exception) else None
        if console is not None:
            _end_gateway(console)
        if error is None:
            raise
        raise error from None
    finally:
        if handler is not None:  # PySpark's own, which calls the JVM inside a signal handler
            signal.signal(signal.SIGINT, handler)
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    python = sc.getConf().get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON")
    if python:
        sc.pythonExec = python
    elif sc.master.startswith("local"):  # the workers run here: this interpreter
        sc.pythonExec = sys.executable
    return spark, _Owned(spark, console)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held until the block ends, then handled as they
    would have been (in the main thread, where a Python handler is set):
    PySpark's launcher cut short by one leaves its Java process running, out
    of reach."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[tuple[int, Any]] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if callable(handler):
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: held.append((number, frame)))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    for signum, frame in held[:1]:
        previous[signum](signum, frame)


def _sigint_handler() -> Any:
    """The SIGINT handler in place (None off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGINT)


def _launch(conf: Any, console: str) -> None:
    """Start Spark's Java process (its gateway) with its console in the file
    ``console``. ``SPARK_HOME`` (PySpark's own Spark, found without ``PATH``)
    is set for the launcher alone."""
    from pyspark import SparkContext
    from pyspark.find_spark_home import _find_spark_home
    from pyspark.java_gateway import launch_gateway

    with open(console, "wb") as out, _environ(SPARK_HOME=_find_spark_home()):
        kwargs = {"stdout": out, "stderr": subprocess.STDOUT}
        gateway = launch_gateway(conf, popen_kwargs=kwargs)
    SparkContext._ensure_initialized(gateway=gateway)


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` where unset, for the block only."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _start_error(exc: Exception, master: str | None, console: str | None) -> Exception | None:
    """The one-line error of a session that could not start, or None (not Spark's)."""
    from receval.errors import ReceValError

    on = f" on master {master!r}" if master else ""
    if getattr(exc, "getCondition", lambda: None)() == "JAVA_GATEWAY_EXITED" or (
        "JAVA_GATEWAY_EXITED" in str(exc)
    ):
        said = _first_said(console)
        reason = f": {said}" if said else ""
        java = "" if said and "java" not in said.lower() else _NEEDS_JAVA
        return ReceValError(f"Spark could not start{on} (its Java process exited{reason}){java}")
    if type(exc).__module__.startswith(("pyspark.", "py4j.")):
        return ReceValError(f"Spark could not start{on}: {_first_line(exc)}")
    return None


#: a line of the Java process's console that says why it failed
_FAILED = re.compile(r"Exception|Error|error|not set|No such file|[Cc]annot|[Uu]nable")


#: what Spark needs of Java, said when Java did not start
_NEEDS_JAVA = "; Spark needs Java 17 or later: `java` on PATH, or JAVA_HOME set"


def _first_said(path: str | None) -> str:
    """Why the Java process's console says it failed: its first line that
    reads as a failure (else its last line), without Java's class prefixes."""
    if path is None:
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    said = [line for line in lines if not line.startswith(("at ", "..."))]
    errors = [line for line in said if _FAILED.search(line)]
    if not said:
        return ""
    line = errors[0] if errors else said[-1]
    line = re.sub(r'^Exception in thread "[^"]*"\s*', "", line)
    return re.sub(r"^(?:[a-z][\w$]*\.)+[A-Z][\w$]*:\s*", "", line)


def _first_line(exc: BaseException) -> str:
    """An exception of Spark or py4j in one line: its message's first line,
    without the JVM's class prefix."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"^(?:[a-z][\w$]*\.)+[A-Z][\w$]*:\s*", "", line).strip() or type(exc).__name__


def _worker_error(exc: Exception) -> Exception | None:
    """A Python worker that cannot import receval (its interpreter is not
    this one): an error saying which Python to give Spark, or None."""
    from receval.errors import ReceValError

    if not type(exc).__module__.startswith(("pyspark.", "py4j.")):
        return None
    missing = r"ModuleNotFoundError: No module named '(receval|pyspark|pyarrow)\b"
    found = re.search(missing, str(exc))
    if found is None:
        return None
    return ReceValError(
        f"Spark's Python workers cannot import {found.group(1)}: their Python is not one "
        "with receval[spark] installed; set PYSPARK_PYTHON (or spark.pyspark.python) to "
        "such a Python on every executor"
    )


class _Py4jRecords(logging.Filter):
    """Refuses the log records of py4j (it logs on the root logger too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        where = record.pathname.replace("\\", "/")
        return not (record.name.startswith("py4j") or "/py4j/" in where)


@contextlib.contextmanager
def _quiet_py4j() -> Iterator[None]:
    """py4j's log records kept off the console for the block: the ``py4j``
    loggers stop propagating, the root logger refuses py4j's own records, and
    any handler added meanwhile (``logging.exception`` configures the root
    logger when it has none) is removed after."""
    root = logging.getLogger()
    py4j = logging.getLogger("py4j")
    handlers, propagate = list(root.handlers), py4j.propagate
    refuse = _Py4jRecords()
    root.addFilter(refuse)
    py4j.propagate = False
    try:
        yield
    finally:
        root.removeFilter(refuse)
        py4j.propagate = propagate
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)


def _quietly(call: Callable[..., Any], *args: Any) -> None:
    """``call(*args)``, its failure ignored (cleaning up after an error or Ctrl-C)."""
    with contextlib.suppress(Exception):  # best effort: the first error is the one said
        call(*args)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def items_of(df: Any, cols: Columns, name: str) -> list[Any]:
    """The item column of a Spark DataFrame (catalog, popular items), collected."""
    found = resolve(list(df.columns), cols, (("item",), ("item",)), name)
    return [row[0] for row in df.select(f"`{found['item']}`").collect()]


def write_per_user(df: Any, path: str) -> None:
    """Per-user values written by Spark where it can write (a folder of part
    files: Parquet for a ``.parquet``/``.pq`` name, else CSV with a header).
    Spark's committer writes ``_SUCCESS`` last: a folder without it is not
    complete, and a write that fails or is interrupted (Ctrl-C: the run's
    job group is cancelled first) leaves no folder. An existing path is an
    :class:`~receval.errors.OutputError` (:func:`refuse_existing`), left as it is."""
    from receval.errors import OutputError

    spark = df.sparkSession
    refuse_existing(spark, path)
    group = spark.sparkContext.getLocalProperty("spark.jobGroup.id")
    writer = df.write.mode("error")
    try:
        if path.rstrip("/").lower().endswith((".parquet", ".pq")):
            writer.parquet(path)
        else:
            writer.csv(path, header=True)
    except BaseException as exc:
        if "PATH_ALREADY_EXISTS" in str(exc).split("\n", 1)[0]:
            raise _taken(path) from None  # written meanwhile by someone else: not ours
        if group is not None and not isinstance(exc, Exception):  # Ctrl-C: stop the job first
            _quietly(spark.sparkContext.cancelJobGroup, group)
        _discard(spark, path, group)
        if isinstance(exc, Exception) and type(exc).__module__.startswith(("pyspark.", "py4j.")):
            reason = _first_line(exc)
            raise OutputError(f"cannot write {path} with Spark: {reason}", path=path) from None
        raise


def refuse_existing(spark: Any, path: str) -> None:
    """An :class:`~receval.errors.OutputError` when ``path`` exists where
    Spark would write it (``--per-user``: checked before any work)."""
    if _exists(spark, path):
        raise _taken(path)


def _taken(path: str) -> Exception:
    from receval.errors import OutputError

    reason = "it already exists (choose another path, or remove it first)"
    return OutputError(f"cannot write {path} with Spark: {reason}", path=path)


def _hadoop_path(spark: Any, path: str) -> tuple[Any, Any]:
    """``path`` on the file system Spark writes it to: (file system, path)."""
    sc = spark.sparkContext
    where = sc._jvm.org.apache.hadoop.fs.Path(path)
    return where.getFileSystem(sc._jsc.hadoopConfiguration()), where


def _exists(spark: Any, path: str) -> bool:
    """Whether ``path`` exists where Spark would write it (False when Spark
    cannot tell: the write then says why)."""
    try:
        fs, where = _hadoop_path(spark, path)
        return bool(fs.exists(where))
    except Exception:
        return False


def _discard(spark: Any, path: str, group: str | None) -> None:
    """Remove what a failed write left at ``path`` (any file system Spark
    writes to), once the jobs of ``group`` have stopped (at most 10 s)."""
    import time

    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 10
    while group is not None and time.monotonic() < deadline:
        try:
            jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
        except Exception:  # the JVM is going away: nothing to wait for
            break
        if not any(job is not None and job.status == "RUNNING" for job in jobs):
            break
        time.sleep(0.1)

    def delete() -> None:
        fs, where = _hadoop_path(spark, path)
        fs.delete(where, True)

    _quietly(delete)


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


def popularity_of(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """The training data's item counts, computed by Spark where the data lies:
    the items, the distinct users of each, the distinct users, the training
    rows of each (repeated (user, item) pairs included; O(items) on the
    driver, whatever the size of ``train``)."""
    from pyspark.sql import functions as F

    df, _ = _roles(train, cols, TRAIN, "train")
    pairs = df.groupBy("user", "item").agg(F.count(F.lit(1)).alias("rows"))
    counts = (
        pairs.groupBy("item")
        .agg(F.count(F.lit(1)).alias("users"), F.sum("rows").alias("rows"))
        .toPandas()
    )
    users = pairs.select("user").distinct().count()
    return (
        counts["item"].to_numpy(),
        counts["users"].to_numpy(dtype=np.int64),
        int(users),
        counts["rows"].to_numpy(dtype=np.int64),
    )
