""":func:`receval.compare` of runs evaluated on Spark.

Each run's per-user values stay on the executors (``Result.per_user_spark``);
they are joined by user in Spark (a full outer join, so that users a run
lacks are counted), kept for the two passes of
:mod:`receval.analysis.resampling`, and each partition returns small exact
parts: counts, moments (paired t-tests and means from exact sums) and the sums
of the Poisson bootstrap and of the sign flips, seeded per user. The driver
adds the parts; nothing on it grows with the number of users. The numbers are
the same as ``compare(..., resampling="poisson")`` in process, bit for bit.

The core never imports pyspark: this module imports it inside its functions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.analysis import resampling as rs
from receval.engines.spark import part_batch, parts_of, table_of
from receval.evaluation.result import Result

__all__ = ["passes"]


def _joined(layout: rs.Layout, results: Mapping[str, Result]) -> Any:
    """One row per user of any run: the user and every (metric, system) value."""
    from pyspark.sql import functions as F

    joined = None
    for i, system in enumerate(layout.systems):
        df = results[system].per_user_spark.select(
            "user",
            *[
                F.col(f"`{m}`").cast("double").alias(layout.column(j, i))
                for j, m in enumerate(layout.metrics)
            ],
        )
        joined = df if joined is None else joined.join(df, on="user", how="full")
    return joined


def _values(table: pa.Table, names: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    users = table.column("user").to_numpy(zero_copy_only=False)
    values = {
        name: pc.fill_null(table.column(name), np.nan).to_numpy(zero_copy_only=False)
        for name in names
    }
    return users, values


def _pass(layout: rs.Layout, names: list[str], totals: rs.Totals | None) -> Any:
    """A partition's part of pass 1 (``totals`` None) or pass 2, pickled."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = table_of(batches)
        if table is None:
            return
        users, values = _values(table, names)
        if totals is None:
            part: Any = rs.first_pass(layout, values)
        else:
            part = rs.second_pass(layout, totals, users, values)
        yield part_batch(part)

    return run


def passes(
    layout: rs.Layout, results: Mapping[str, Result]
) -> tuple[rs.FirstPart, rs.SecondPart, Mapping[str, pd.DataFrame]]:
    """Both passes on the executors; the combined parts and the aligned per-user
    values as a mapping that collects a metric's frame only when read."""
    names = [
        layout.column(j, i) for j in range(len(layout.metrics)) for i in range(len(layout.systems))
    ]
    joined = _joined(layout, results).persist()
    try:
        no_users = np.empty(0, dtype=np.int64)  # the parts of no user: the sums' zeros
        no_values = {name: np.empty(0) for name in names}
        first = rs.first_pass(layout, no_values)
        for part in parts_of(joined.mapInArrow(_pass(layout, names, None), "part binary")):
            first = first + part
        totals = rs.Totals.of(first)
        second = rs.second_pass(layout, totals, no_users, no_values)
        for part in parts_of(joined.mapInArrow(_pass(layout, names, totals), "part binary")):
            second = second + part
    finally:
        joined.unpersist()
    return first, second, _Aligned(layout, results)


class _Aligned(Mapping[str, pd.DataFrame]):
    """:attr:`Comparison.aligned` of a Spark comparison: metric → (users compared
    × systems) frame, collected to the driver when a metric is read (O(users))."""

    def __init__(self, layout: rs.Layout, results: Mapping[str, Result]) -> None:
        self._layout = layout
        self._results = results
        self._cache: dict[str, pd.DataFrame] = {}

    def __getitem__(self, metric: str) -> pd.DataFrame:
        if metric not in self._layout.metrics:
            raise KeyError(metric)
        if metric not in self._cache:
            from pyspark.sql import functions as F

            j = self._layout.metrics.index(metric)
            columns = [self._layout.column(j, i) for i in range(len(self._layout.systems))]
            df = _joined(self._layout, self._results).select("user", *columns)
            for c in columns:
                df = df.where(F.col(c).isNotNull() & ~F.isnan(F.col(c)))
            frame = df.toPandas().sort_values("user", kind="stable").set_index("user")
            frame.columns = list(self._layout.systems)
            self._cache[metric] = frame
        return self._cache[metric]

    def __iter__(self) -> Iterator[str]:
        return iter(self._layout.metrics)

    def __len__(self) -> int:
        return len(self._layout.metrics)
