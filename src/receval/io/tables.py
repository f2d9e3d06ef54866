"""In-memory inputs: pandas, polars and pyarrow tables, and plain mappings.

Everything is turned into NumPy columns (:class:`RecsData`, :class:`TruthData`)
with every value checked; a bad value raises :class:`~receval.errors.InputError`
naming the table, the 0-based row, the user and the item.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.errors import InputError
from receval.ids import first_true, ids_to_numpy, objects
from receval.records import Columns, RecsData, TruthData

__all__ = ["iter_recs", "read_recs", "read_truth"]

#: Recommendation rows per chunk when a large table is grouped by user.
CHUNK_ROWS = 500_000


def _is_table(obj: Any) -> bool:
    mod = type(obj).__module__
    return isinstance(obj, (pd.DataFrame, pa.Table, pa.RecordBatch)) or mod.startswith("polars")


def _to_arrow(obj: Any, source: str) -> pa.Table:
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if isinstance(obj, pd.DataFrame):
        frame = obj.reset_index(drop=True)
        frame.columns = [str(c) for c in frame.columns]
        try:
            return pa.Table.from_pandas(frame, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # mixed-type object columns: read them as strings, reported later
            fixed = frame.copy()
            for c in fixed.columns:
                if fixed[c].dtype == object:
                    fixed[c] = fixed[c].map(lambda v: None if v is None else str(v))
            return pa.Table.from_pandas(fixed, preserve_index=False)
    if type(obj).__module__.startswith("polars"):
        return obj.to_arrow()
    raise InputError(
        f"expected a pandas, polars or pyarrow table or a mapping; got {type(obj).__name__}",
        source=source,
    )


def _column(table: pa.Table, name: str, role: str, source: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        found = ", ".join(table.column_names) or "none"
        close = difflib.get_close_matches(name, table.column_names, n=1, cutoff=0.5)
        hint = f" — did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"no {role} column {name!r} (columns found: {found}){hint}", source=source, column=name
        )
    return table.column(name)


def _numbers(
    col: pa.ChunkedArray,
    role: str,
    source: str,
    expected: str = "a number",
    keep_ints: bool = False,
) -> np.ndarray:
    """The column as float64 (integers kept as they are with ``keep_ints``)."""
    typ = col.type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)):
        values = col.to_numpy(zero_copy_only=False)
        for i, v in enumerate(values):
            try:
                float(v)
            except (TypeError, ValueError):
                raise InputError(
                    f"{role} must be {expected}; found {v!r}", source=source, row=i
                ) from None
        return np.asarray([float(v) for v in values], dtype=np.float64)
    if col.null_count:
        row = first_true(col.is_null().to_numpy(zero_copy_only=False))
        raise InputError(
            f"{role} must be {expected}; found a missing value (empty or NaN)",
            source=source,
            row=row,
        )
    values = col.to_numpy()
    if keep_ints and values.dtype.kind in "iu":
        return values
    return values.astype(np.float64, copy=False)


def _locate(err: InputError, users: np.ndarray, items: np.ndarray) -> InputError:
    if err.row is None:
        return err
    return InputError(
        err.reason, source=err.source, row=err.row, user=users[err.row], item=items[err.row]
    )


def check_scores(score: np.ndarray, users: np.ndarray, items: np.ndarray, source: str) -> None:
    """Scores must be finite numbers."""
    bad = ~np.isfinite(score)
    if bad.any():
        i = first_true(bad)
        raise InputError(
            f"score must be a finite number; found {score[i]}",
            source=source,
            row=i,
            user=users[i],
            item=items[i],
        )


def check_ranks(rank: np.ndarray, users: np.ndarray, items: np.ndarray, source: str) -> np.ndarray:
    """Ranks must be positive integers; returns them as int64."""
    if rank.dtype.kind in "iu":  # integers: only the sign to check
        bad = rank < 1
        if not bad.any():
            return rank.astype(np.int64, copy=False)
        rank = rank.astype(np.float64)
    bad = ~np.isfinite(rank) | (rank < 1) | (rank != np.floor(rank))
    if bad.any():
        i = first_true(bad)
        raise InputError(
            f"rank must be a positive integer; found {rank[i]:g}",
            source=source,
            row=i,
            user=users[i],
            item=items[i],
        )
    return rank.astype(np.int64)


def check_grades(grades: np.ndarray, users: np.ndarray, items: np.ndarray, source: str) -> None:
    """Grades must be finite and non-negative."""
    bad = ~np.isfinite(grades) | (grades < 0)
    if bad.any():
        i = first_true(bad)
        raise InputError(
            f"relevance must be a non-negative number; found {grades[i]:g}",
            source=source,
            row=i,
            user=users[i],
            item=items[i],
        )


def read_recs(obj: Any, cols: Columns = Columns(), source: str = "recommendations") -> RecsData:
    """Recommendations from a table (user, item, rank or score) or a mapping
    ``user -> sequence of items`` (best first)."""
    if isinstance(obj, Mapping):
        return _recs_from_mapping(obj, source)
    if not _is_table(obj):
        raise InputError(
            "recommendations must be a pandas/polars/pyarrow table or a mapping "
            f"user -> list of items; got {type(obj).__name__}",
            source=source,
        )
    table = _to_arrow(obj, source)
    users = ids_to_numpy(_column(table, cols.user, "user", source), "user", source)
    items = ids_to_numpy(_column(table, cols.item, "item", source), "item", source)
    score = rank = None
    if cols.rank in table.column_names:
        try:
            raw = _numbers(
                table.column(cols.rank), "rank", source, "a positive integer", keep_ints=True
            )
        except InputError as exc:
            raise _locate(exc, users, items) from None
        rank = check_ranks(raw, users, items, source)
    elif cols.score in table.column_names:
        try:
            score = _numbers(table.column(cols.score), "score", source, "a finite number")
        except InputError as exc:
            raise _locate(exc, users, items) from None
        check_scores(score, users, items, source)
    else:
        found = ", ".join(table.column_names)
        raise InputError(
            f"recommendations need a rank column {cols.rank!r} or a score column "
            f"{cols.score!r} to order each list (columns found: {found})",
            source=source,
        )
    return RecsData(users, items, score, rank, rows=table.num_rows, source=source)


def _user_boundaries(column: pa.ChunkedArray, chunk_rows: int) -> list[int] | None:
    """Row offsets splitting a table into chunks of complete users, or None when
    the rows of some user are not contiguous."""
    import pyarrow.compute as pc

    n = len(column)
    change = pc.not_equal(column.slice(1), column.slice(0, n - 1))
    starts = np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1
    if len(starts) + 1 != pc.count_distinct(column).as_py():
        return None
    bounds = [0]
    for target in range(chunk_rows, n, chunk_rows):
        i = int(np.searchsorted(starts, target))
        if i < len(starts) and starts[i] > bounds[-1]:
            bounds.append(int(starts[i]))
    bounds.append(n)
    return list(dict.fromkeys(bounds))


def iter_recs(
    obj: Any, cols: Columns = Columns(), chunk_rows: int | None = None
) -> Iterator[tuple[RecsData, int]]:
    """Recommendations as chunks of complete users, each with the row of the
    table it starts at. A large table whose users' rows are contiguous is cut
    into chunks of about ``chunk_rows`` rows; anything else is one chunk."""
    chunk_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows
    if isinstance(obj, Mapping) or not _is_table(obj):
        yield read_recs(obj, cols), 0
        return
    table = _to_arrow(obj, "recommendations")
    bounds = None
    if table.num_rows > chunk_rows and cols.user in table.column_names:
        user = table.column(cols.user)
        if not user.null_count:
            bounds = _user_boundaries(user, chunk_rows)
    if bounds is None or len(bounds) <= 2:
        yield read_recs(table, cols), 0
        return
    for start, end in itertools.pairwise(bounds):
        try:
            chunk = read_recs(table.slice(start, end - start), cols)
        except InputError as exc:
            raise exc.remap(lambda r, at=start: r + at) from None
        chunk.rows = end - start
        yield chunk, start


def _recs_from_mapping(obj: Mapping[Any, Sequence[Any]], source: str) -> RecsData:
    users: list[Any] = []
    items: list[Any] = []
    ranks: list[int] = []
    empty: list[Any] = []
    for user, ranked in obj.items():
        if isinstance(ranked, (str, bytes)) or not isinstance(ranked, Iterable):
            raise InputError(
                f"expected a sequence of items; found {type(ranked).__name__}",
                source=source,
                user=user,
            )
        seq = list(ranked)
        if not seq:
            empty.append(user)
        users.extend([user] * len(seq))
        items.extend(seq)
        ranks.extend(range(1, len(seq) + 1))
    u = ids_to_numpy(objects(users + empty), "user", source)
    i = ids_to_numpy(objects(items), "item", source) if items else np.empty(0, dtype=np.int64)
    return RecsData(
        users=u[: len(users)],
        items=i,
        score=None,
        rank=np.asarray(ranks, dtype=np.int64),
        rows=len(users),
        source=source,
        empty_users=u[len(users) :],
    )


def read_truth(obj: Any, cols: Columns = Columns(), source: str = "truth") -> TruthData:
    """Truth from a table (user, item[, relevance]) or a mapping
    ``user -> iterable of items`` / ``user -> mapping item -> grade``."""
    if isinstance(obj, Mapping):
        return _truth_from_mapping(obj, source)
    if not _is_table(obj):
        raise InputError(
            "truth must be a pandas/polars/pyarrow table or a mapping user -> items; "
            f"got {type(obj).__name__}",
            source=source,
        )
    table = _to_arrow(obj, source)
    users = ids_to_numpy(_column(table, cols.user, "user", source), "user", source)
    items = ids_to_numpy(_column(table, cols.item, "item", source), "item", source)
    graded = cols.relevance in table.column_names
    if graded:
        try:
            grades = _numbers(
                table.column(cols.relevance), "relevance", source, "a non-negative number"
            )
        except InputError as exc:
            raise _locate(exc, users, items) from None
        check_grades(grades, users, items, source)
    else:
        grades = np.ones(table.num_rows)
    return TruthData(users, items, grades, rows=table.num_rows, graded=graded, source=source)


def _truth_from_mapping(obj: Mapping[Any, Any], source: str) -> TruthData:
    users: list[Any] = []
    items: list[Any] = []
    grades: list[float] = []
    empty: list[Any] = []
    graded = False
    for user, value in obj.items():
        if isinstance(value, Mapping):
            graded = True
            pairs = list(value.items())
        elif isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InputError(
                f"expected an iterable of items or a mapping item -> grade; "
                f"found {type(value).__name__}",
                source=source,
                user=user,
            )
        else:
            pairs = [(it, 1.0) for it in value]
        if not pairs:
            empty.append(user)
        for it, g in pairs:
            try:
                grade = float(g)
            except (TypeError, ValueError):
                raise InputError(
                    f"relevance must be a number; found {g!r}", source=source, user=user, item=it
                ) from None
            users.append(user)
            items.append(it)
            grades.append(grade)
    u = ids_to_numpy(objects(users + empty), "user", source)
    i = ids_to_numpy(objects(items), "item", source) if items else np.empty(0, dtype=np.int64)
    g = np.asarray(grades, dtype=np.float64)
    check_grades(g, u, i, source)
    return TruthData(
        users=u[: len(users)],
        items=i,
        grades=g,
        rows=len(users),
        graded=graded,
        source=source,
        empty_users=u[len(users) :],
    )
