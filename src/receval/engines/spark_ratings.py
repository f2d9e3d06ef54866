"""Rating-prediction metrics on Apache Spark (``evaluate_ratings`` of a Spark DataFrame).

The same numbers as in process, bit for bit, whatever the partitioning:

- the rows are hash-partitioned by user (when there is a user column), and
  each partition reads its rows with :func:`receval.io.ratings.read_ratings`
  (the same checks and errors) and returns one small pickled part: rows read,
  used and dropped, users, users with a single pair, and per per-user metric
  the exact sum of the users' values (:class:`receval.exact.ExactSum`) and
  how many are undefined; for ``mae``, ``mse`` and ``rmse`` over all pairs,
  the exact sums of ``|a − p|`` and ``(a − p)²``. Each user's pairs are put in
  the order of their own values before computing, in process too, so no
  value depends on the order of rows.
- ``r2``, ``pearson``, ``spearman`` and ``kendall`` over all pairs need every
  pair at once (the mean of all actual ratings, global ranks): their
  (actual, predicted) columns are collected to the driver, 16 bytes per pair
  (a note in the result says so); their per-user forms do not.

Per-user values are a lazy Spark DataFrame (``per_user_spark``), collected by
``per_user`` on first use. A failing partition reports the error of its
smallest offending row (its rows ordered by content), so the message does not
depend on the partitioning; row numbers are left out (Spark rows have none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.errors import InputError, ReceValError
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import Result
from receval.evaluation.spark import (
    fails_on,
    first_failing,
    part_batch,
    parts_of,
    table_of,
    without_rows,
)
from receval.exact import ExactSum
from receval.io.columns import RATINGS, resolve
from receval.io.ratings import read_ratings
from receval.metrics.spec import MetricSpec
from receval.records import Columns

__all__ = ["evaluate_ratings_spark"]

_POOLED_EXACT = ("mae", "mse", "rmse")  # over all pairs from exact sums


@dataclass
class _Part:
    rows: int = 0
    used: int = 0
    dropped: int = 0
    users: int = 0
    single: int = 0
    sums: list[ExactSum] = field(default_factory=list)  # per per-user metric
    absolute: ExactSum = field(default_factory=ExactSum)  # Σ |a − p|
    squared: ExactSum = field(default_factory=ExactSum)  # Σ (a − p)²

    def __add__(self, other: _Part) -> _Part:
        return _Part(
            self.rows + other.rows,
            self.used + other.used,
            self.dropped + other.dropped,
            self.users + other.users,
            self.single + other.single,
            [a + b for a, b in zip(self.sums, other.sums, strict=True)],
            self.absolute + other.absolute,
            self.squared + other.squared,
        )


def _read(table: pa.Table, dropna: bool, need: tuple[str, ...]) -> Any:
    """The partition's ratings (None when every row was dropped as missing)."""
    try:
        return read_ratings(table, Columns(), dropna=dropna, need=need)
    except InputError as exc:
        if dropna and exc.reason.startswith("no rating pairs left"):
            return None  # this partition only: other partitions may have pairs
        raise


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


def _part(table: pa.Table, specs: Sequence[MetricSpec], dropna: bool, need: Any) -> _Part:
    per_user = [s for s in specs if s.param_dict.get("per_user", False)]
    r = _read(table, dropna, need)
    if r is None:
        return _Part(table.num_rows, 0, table.num_rows, sums=[ExactSum() for _ in per_user])
    part = _Part(r.rows, len(r.actual), r.dropped)
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


def evaluate_ratings_spark(
    ratings: Any,
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    *,
    dropna: bool,
    build: Callable[..., Result],
) -> Result:
    """:func:`receval.evaluate_ratings` of a Spark DataFrame (see the module);
    ``build`` makes its result from the values (``ratings.rating_result``: the
    rating metrics' module calls this one, not the other way round)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, StructField, StructType

    per_user = [s for s in specs if s.param_dict.get("per_user", False)]
    need = ("user",) if per_user else ()
    cols = Columns(
        user=opts.user_col, item=opts.item_col, actual=opts.actual_col, predicted=opts.predicted_col
    )
    read, required = RATINGS
    try:
        found = resolve(list(ratings.columns), cols, (read, (*required, *need)), "ratings")
    except InputError as exc:
        if per_user and "user" in exc.reason and exc.column is None:
            raise InputError(f"{exc.reason} (needed by {per_user[0]})", source=exc.source) from None
        raise
    df = ratings.select([F.col(f"`{c}`").alias(role) for role, c in found.items()])
    grouped = df.repartition("user") if "user" in found else df

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        try:
            out: tuple[str, Any] = ("part", _part(table, specs, dropna, need))
        except ReceValError:
            out = ("error", _smallest_row_error(table, lambda t: _part(t, specs, dropna, need)))
        yield part_batch(out)

    total = _Part(sums=[ExactSum() for _ in per_user])
    errors = []
    for kind, payload in parts_of(grouped.mapInArrow(run, "part binary")):
        if kind == "error":
            errors.append(payload)
        else:
            total = total + payload
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    if total.rows == 0:
        raise InputError("no rating pairs: the ratings table is empty", source="ratings")
    if total.used == 0:
        raise InputError(
            f"no rating pairs left: all {total.rows} rows have a missing rating", source="ratings"
        )
    summary: dict[str, float] = {}
    undefined: dict[str, int] = {}
    pooled = [s for s in specs if s not in per_user and s.name not in _POOLED_EXACT]
    pairs = _collected_pairs(df, dropna) if pooled else None
    sums = dict(zip([str(s) for s in per_user], total.sums, strict=True))
    for s in specs:
        name = str(s)
        if s in per_user:
            summary[name] = sums[name].mean()
            if sums[name].nan:
                undefined[name] = sums[name].nan
        elif s.name == "mae":
            summary[name] = total.absolute.mean()
        elif s.name in ("mse", "rmse"):
            mse = total.squared.mean()
            summary[name] = mse if s.name == "mse" else float(np.sqrt(mse))
        else:
            assert pairs is not None
            a, p = pairs
            order = np.lexsort((p, a))
            summary[name] = float(s.definition.kernel(a[order], p[order]))
    counts: dict[str, Any] = {
        "rows": total.rows,
        "rows_used": total.used,
        "rows_dropped_missing": total.dropped,
        "users": total.users,
        "users_evaluated": total.users,
        "users_single_pair": total.single,
        "undefined": undefined,
    }
    res = build(specs, summary, None, counts, opts, dropna, found, "user" not in found)
    if pooled:
        res.notes.append(
            f"{', '.join(str(s) for s in pooled)} over all pairs: the actual and predicted "
            "ratings were collected to the driver (16 bytes per pair)"
        )
    if "user" in found:
        names = [str(s) for s in per_user]
        schema = StructType(
            [StructField("user", df.schema["user"].dataType)]
            + [StructField(name, DoubleType()) for name in names]
        )
        res.per_user_spark = grouped.mapInArrow(_per_user_rows(per_user, dropna, names), schema)
    else:
        res.per_user = pd.DataFrame(columns=[str(s) for s in per_user])
    res.parameters["engine"] = "spark"
    return res


def _collected_pairs(df: Any, dropna: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every (actual, predicted) pair, on the driver (rows with a missing rating
    dropped: the partitions have already refused them unless ``dropna``)."""
    from pyspark.sql import functions as F

    both = df.select(F.col("actual").cast("double"), F.col("predicted").cast("double"))
    frame = both.toPandas()
    a = frame["actual"].to_numpy(dtype=np.float64)
    p = frame["predicted"].to_numpy(dtype=np.float64)
    keep = ~(np.isnan(a) | np.isnan(p))
    return a[keep], p[keep]


def _per_user_rows(specs: Sequence[MetricSpec], dropna: bool, names: list[str]) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        r = _read(table, dropna, ("user",))
        if r is None:
            return
        uniq, _, values = _per_user(specs, r)
        columns: dict[str, Any] = {"user": pa.array(uniq.tolist())}
        for name, v in zip(names, values, strict=True):
            columns[name] = pa.array(v, type=pa.float64())
        yield pa.RecordBatch.from_pydict(columns)

    return run
