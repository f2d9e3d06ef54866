"""Rating-prediction metrics on Apache Spark (``evaluate_ratings`` of a Spark DataFrame).

The same numbers as in process, bit for bit, whatever the partitioning:

- the rows (their columns named by role:
  :func:`receval.io.spark_files.opened_ratings`) are hash-partitioned by
  user (when there is a user column); each partition reads its rows with
  :func:`receval.io.ratings.read_part` (the same checks and errors) and
  returns one small pickled part: rows read, used and dropped, users, users
  with a single pair, per per-user metric the exact sum of the users' values
  (:class:`receval.exact.ExactSum`) and how many are undefined, and the
  exact sums of ``|a − p|`` and ``(a − p)²`` (the metrics declared
  ``from_error_sums``: mae, mse, rmse over all pairs). Each user's pairs are
  put in the order of their own values before computing, in process too, so
  no value depends on the order of rows.
- ``r2``, ``pearson``, ``spearman`` and ``kendall`` over all pairs need every
  pair at once (the mean of all actual ratings, global ranks): their
  (actual, predicted) columns are collected to the driver, 16 bytes per pair
  (a note in the result says so); their per-user forms do not.

The values are assembled into a result by the surface
(:func:`receval.evaluation.ratings.evaluate_ratings`). Per-user values are a
lazy Spark DataFrame (``per_user_spark``), collected by ``per_user`` on first
use. A failing partition reports the error of its smallest offending row (its
rows ordered by content), so the message does not depend on the
partitioning; row numbers are left out (Spark rows have none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from receval.engines.spark import (
    fails_on,
    first_failing,
    part_batch,
    parts_of,
    table_of,
    user_array,
    user_type,
    without_rows,
)
from receval.errors import ReceValError
from receval.exact import ExactSum
from receval.metrics.spec import MetricSpec
from receval.records import key_mode, respelled, text_rule, user_key

__all__ = ["RatingPart", "collected_pairs", "per_user_frame", "totals"]


@dataclass
class RatingPart:
    """What a partition returns: its counts and exact sums (they add up)."""

    rows: int = 0
    used: int = 0
    dropped: int = 0
    users: int = 0
    single: int = 0
    sums: list[ExactSum] = field(default_factory=list)  # per per-user metric
    absolute: ExactSum = field(default_factory=ExactSum)  # Σ |a − p|
    squared: ExactSum = field(default_factory=ExactSum)  # Σ (a − p)²
    #: the users were grouped in the text rule's form (:func:`_grouped`): a
    #: partition met a text user id written apart from it ("7.0")
    spelled: bool = False

    def __add__(self, other: RatingPart) -> RatingPart:
        return RatingPart(
            self.rows + other.rows,
            self.used + other.used,
            self.dropped + other.dropped,
            self.users + other.users,
            self.single + other.single,
            [a + b for a, b in zip(self.sums, other.sums, strict=True)],
            self.absolute + other.absolute,
            self.squared + other.squared,
            self.spelled or other.spelled,
        )


def _per_user(
    specs: Sequence[MetricSpec], r: Any
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The users (sorted), their number of pairs and each per-user metric's values."""
    uniq, codes = np.unique(r.users, return_inverse=True)
    order = np.lexsort((r.predicted, r.actual, codes))
    a, p, c = r.actual[order], r.predicted[order], codes[order]
    values = []
    for s in specs:
        by_user = s.definition.by_user
        assert by_user is not None
        values.append(by_user(a, p, c, len(uniq)))
    return uniq, np.bincount(codes, minlength=len(uniq)), values


def _part(
    table: pa.Table,
    specs: Sequence[MetricSpec],
    dropna: bool,
    need: Any,
    read: Callable[[pa.Table, bool, tuple[str, ...]], Any],
) -> RatingPart:
    per_user = [s for s in specs if s.param_dict.get("per_user", False)]
    r = read(table, dropna, need)
    if r is None:
        return RatingPart(table.num_rows, 0, table.num_rows, sums=[ExactSum() for _ in per_user])
    part = RatingPart(r.rows, len(r.actual), r.dropped)
    diff = r.actual - r.predicted
    part.absolute = ExactSum.of(np.abs(diff))
    part.squared = ExactSum.of(diff**2)
    if r.users is not None:
        uniq, sizes, values = _per_user(per_user, r)
        part.users, part.single = len(uniq), int((sizes == 1).sum())
        part.sums = [ExactSum.of(v) for v in values]
    else:
        part.sums = [ExactSum() for _ in per_user]
    return part


def _smallest_row_error(table: pa.Table, check: Callable[[pa.Table], Any]) -> tuple:
    """The error of the smallest failing row of a partition (rows ordered by
    content; errors here are about one row each): found by bisection."""
    rows = table.sort_by([(name, "ascending") for name in table.column_names])
    lo = first_failing(rows.num_rows, lambda i: fails_on(check, rows.slice(0, i + 1)))
    row = rows.slice(lo, 1)
    try:
        check(row)
    except ReceValError as exc:
        key = tuple("" if v is None else str(v) for v in row.to_pylist()[0].values())
        return key, without_rows(exc)
    raise AssertionError("a partition failed but none of its rows does")  # pragma: no cover


def totals(
    df: Any,
    specs: Sequence[MetricSpec],
    dropna: bool,
    need: tuple[str, ...],
    read: Callable[[pa.Table, bool, tuple[str, ...]], Any],
) -> RatingPart:
    """Every partition's part added up: ``df`` holds the ratings' columns
    named by role (:func:`receval.io.spark_files.opened_ratings`), hash-
    partitioned by user when it has a user column; ``read`` reads a
    partition's rows (:func:`receval.io.ratings.read_part`: the checks and
    errors of every table). A failing partition raises the error of its
    smallest offending row, whatever the partitioning. Text user ids are
    grouped as written unless a partition meets one written apart from the
    text rule's form (:func:`receval.records.respelled`); then again, in that
    form (the part's ``spelled``)."""
    for spelled in (False, True):
        total = _totals(df, specs, dropna, need, read, spelled)
        if total is not None:
            return total
    raise AssertionError("users in the text rule's form met one written apart")  # pragma: no cover


def _totals(
    df: Any,
    specs: Sequence[MetricSpec],
    dropna: bool,
    need: tuple[str, ...],
    read: Callable[[pa.Table, bool, tuple[str, ...]], Any],
    spelled: bool,
) -> RatingPart | None:
    """:func:`totals` of one grouping (``spelled``: users in the text rule's
    form); None when a partition met a text user id written apart."""
    per_user = [s for s in specs if s.param_dict.get("per_user", False)]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        if not spelled and "user" in table.column_names and respelled(table.column("user")):
            yield part_batch(("respelled", None))
            return
        try:
            out: tuple[str, Any] = ("part", _part(table, specs, dropna, need, read))
        except ReceValError:
            check = lambda t: _part(t, specs, dropna, need, read)  # noqa: E731
            out = ("error", _smallest_row_error(table, check))
        yield part_batch(out)

    total = RatingPart(sums=[ExactSum() for _ in per_user], spelled=spelled)
    errors = []
    for kind, payload in parts_of(_grouped(df, spelled).mapInArrow(run, "part binary")):
        if kind == "respelled":
            return None
        if kind == "error":
            errors.append(payload)
        else:
            total = total + payload
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return total


def _grouped(df: Any, spelled: bool = False) -> Any:
    """Every pair of a user in one partition: repartitioned by the user
    (``spelled``: text ids in the text rule's form,
    :func:`receval.records.text_rule`, so ``"7"`` and ``"7.0"`` are one user
    as in-process; float ids by their key, :func:`receval.records.user_key`)."""
    if "user" not in df.columns:
        return df
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    data_type = df.schema["user"].dataType
    if isinstance(data_type, (DoubleType, FloatType)):  # -0.0 and 0.0: one user
        return df.repartition(user_key(F.col("user"), data_type, key_mode([data_type])))
    if spelled:
        return df.repartition(text_rule(F.col("user")))
    return df.repartition("user")


def per_user_frame(
    df: Any,
    specs: Sequence[MetricSpec],
    dropna: bool,
    read: Callable[[pa.Table, bool, tuple[str, ...]], Any],
    spelled: bool = False,
) -> Any:
    """The per-user values of the per-user metrics ``specs``, as a lazy Spark
    DataFrame (a user column, one column per metric); ``spelled``: group the
    users as :func:`totals` last did (its part's ``spelled``)."""
    from pyspark.sql.types import DoubleType, StructField, StructType

    names = [str(s) for s in specs]
    spark_type, arrow_type = user_type(df.schema["user"].dataType)
    schema = StructType(
        [StructField("user", spark_type)] + [StructField(name, DoubleType()) for name in names]
    )
    rows = _per_user_rows(specs, dropna, names, read, arrow_type)
    return _grouped(df, spelled).mapInArrow(rows, schema)


def collected_pairs(df: Any, dropna: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every (actual, predicted) pair, on the driver (rows with a missing rating
    dropped: the partitions have already refused them unless ``dropna``)."""
    from pyspark.sql import functions as F

    both = df.select(F.col("actual").cast("double"), F.col("predicted").cast("double"))
    frame = both.toPandas()
    a = frame["actual"].to_numpy(dtype=np.float64)
    p = frame["predicted"].to_numpy(dtype=np.float64)
    keep = ~(np.isnan(a) | np.isnan(p))
    return a[keep], p[keep]


def _per_user_rows(
    specs: Sequence[MetricSpec],
    dropna: bool,
    names: list[str],
    read: Callable[[pa.Table, bool, tuple[str, ...]], Any],
    arrow_type: pa.DataType,
) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        r = read(table, dropna, ("user",))
        if r is None:
            return
        uniq, _, values = _per_user(specs, r)
        columns: dict[str, Any] = {"user": user_array(uniq, arrow_type)}
        for name, v in zip(names, values, strict=True):
            columns[name] = pa.array(v, type=pa.float64())
        yield pa.RecordBatch.from_pydict(columns)

    return run
