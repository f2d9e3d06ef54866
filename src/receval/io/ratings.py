"""The one reader of ratings inputs: (user, item, actual, predicted) rows.

Used by :func:`receval.evaluate_ratings` (rating-prediction metrics),
:func:`receval.evaluate_explicit` (ranking metrics of explicit feedback) and
the CLI's ``evaluate-ratings``. Columns are detected as :func:`receval.evaluate`
detects them (:mod:`receval.io.columns`): ``actual`` ← actual, rating, true,
y_true, target, label, relevance; ``predicted`` ← predicted, prediction, pred,
score, y_pred, estimate; explicit names (``actual_col=``, ...) must exist.
Ids follow the id rule of :mod:`receval.ids`.

Example:
    >>> r = read_ratings({"rating": [4, 2], "prediction": [3.5, 2.5]})
    >>> r.columns, r.actual.tolist()
    ({'actual': 'rating', 'predicted': 'prediction'}, [4.0, 2.0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from receval.errors import InputError, ReceValError, option
from receval.ids import canonical
from receval.io.columns import RATINGS, is_table, normalise
from receval.io.tables import check_grades
from receval.records import Columns, RecsData, TruthData

__all__ = ["Ratings", "as_lists", "read_ratings"]


@dataclass
class Ratings:
    """Ratings as columns, rows with a missing rating dropped (``dropna``).

    ``users`` / ``items`` are None when the input has no such column;
    ``kept`` holds the input row of every row kept (for error messages);
    ``columns`` maps each role to the input column read.
    """

    users: np.ndarray | None
    items: np.ndarray | None
    actual: np.ndarray
    predicted: np.ndarray
    rows: int
    kept: np.ndarray
    dropped: int = 0
    columns: dict[str, str] = field(default_factory=dict)
    source: str = "ratings"


def _table(ratings: Any, source: str) -> Any:
    """A table, or a mapping column -> values made one."""
    if is_table(ratings):
        return ratings
    if isinstance(ratings, Mapping):
        try:
            lengths = {str(k): len(v) for k, v in ratings.items()}
        except TypeError:
            raise ReceValError(
                "ratings given as a mapping must map column names to sequences of values"
            ) from None
        if len(set(lengths.values())) > 1:
            raise ReceValError(
                "ratings columns have different lengths: "
                + ", ".join(f"{k} has {n}" for k, n in lengths.items())
            )
        import pandas as pd

        return pd.DataFrame({str(k): list(v) for k, v in ratings.items()})
    raise ReceValError(
        "ratings must be a pandas, polars or pyarrow table or a mapping column -> values; "
        f"got {type(ratings).__name__}"
    )


def _values(col: pa.ChunkedArray, role: str, name: str, source: str) -> np.ndarray:
    """A rating column as float64, missing values (null, NaN) as NaN."""
    typ = col.type
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ):
        return col.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    values = col.to_numpy(zero_copy_only=False)
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if v is None:
            out[i] = math.nan
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise InputError(
                f"{role} rating must be a number; found {v!r}", source=source, row=i, column=name
            ) from None
    return out


def read_ratings(
    ratings: Any,
    cols: Columns = Columns(),
    *,
    dropna: bool = False,
    need: tuple[str, ...] = (),
    source: str = "ratings",
) -> Ratings:
    """Read a ratings table (or a mapping column -> values).

    Args:
        ratings: a pandas, polars or pyarrow table or a mapping column → values.
        cols: column names (None: detected; see the module).
        dropna: drop rows whose actual or predicted rating is missing (null or
            NaN) and count them; by default such a row is an error naming it.
        need: roles that must be there besides the ratings (``"user"``,
            ``"item"``), with the reason in the error (e.g. a per-user metric).
        source: the input's name in errors.

    Raises:
        InputError: a missing column, a rating that is not a number, infinite,
            or missing (without ``dropna``), naming the row, user and item.
    """
    obj = _table(ratings, source)
    if len(obj) == 0:
        raise InputError("no rating pairs: the ratings table is empty", source=source)
    read, required = RATINGS
    table, found = normalise(obj, cols, (read, (*required, *need)), source)
    rows = table.num_rows
    if rows == 0:
        raise InputError("no rating pairs: the ratings table is empty", source=source)
    users = canonical(table.column("user"), "user", source) if "user" in found else None
    items = canonical(table.column("item"), "item", source) if "item" in found else None

    def fail(reason: str, i: int, role: str) -> InputError:
        return InputError(
            reason,
            source=source,
            row=i,
            user=None if users is None else users[i],
            item=None if items is None else items[i],
            column=found[role],
        )

    try:
        actual = _values(table.column("actual"), "actual", found["actual"], source)
        predicted = _values(table.column("predicted"), "predicted", found["predicted"], source)
    except InputError as exc:  # named by its user and item too
        assert exc.row is not None and exc.column is not None
        role = "actual" if exc.column == found["actual"] else "predicted"
        raise fail(exc.reason, exc.row, role) from None
    for values, role in ((actual, "actual"), (predicted, "predicted")):
        inf = np.isinf(values)
        if inf.any():
            raise fail(f"{role} rating is infinite", int(np.flatnonzero(inf)[0]), role)
    missing = np.isnan(actual) | np.isnan(predicted)
    dropped = int(missing.sum())
    kept = np.arange(rows)
    if dropped and not dropna:
        i = int(np.flatnonzero(missing)[0])
        role = "actual" if np.isnan(actual[i]) else "predicted"
        raise fail(
            f"missing {role} rating (empty or NaN); pass {option('dropna', True)} to drop rows "
            "with a missing rating",
            i,
            role,
        )
    if dropped:
        keep = ~missing
        kept = kept[keep]
        actual, predicted = actual[keep], predicted[keep]
        users = None if users is None else users[keep]
        items = None if items is None else items[keep]
        if len(actual) == 0:
            raise InputError(
                f"no rating pairs left: all {rows} rows have a missing rating", source=source
            )
    return Ratings(users, items, actual, predicted, rows, kept, dropped, found, source)


def as_lists(r: Ratings, threshold: float) -> tuple[RecsData, TruthData]:
    """Ratings as recommendations (each user's rated items, ordered by
    predicted rating; *recommended* when predicted >= ``threshold``) and truth
    (graded by the actual rating). Negative actual ratings are an error."""
    assert r.users is not None and r.items is not None
    try:
        check_grades(r.actual, r.users, r.items, r.source)
    except InputError as exc:
        raise exc.remap(lambda i: int(r.kept[i])) from None
    recs = RecsData(
        users=r.users,
        items=r.items,
        score=r.predicted,
        rank=None,
        rows=r.rows,
        source=r.source,
        recommended=r.predicted >= threshold,
        columns={k: v for k, v in r.columns.items() if k != "actual"},
    )
    truth = TruthData(
        users=r.users,
        items=r.items,
        grades=r.actual,
        rows=r.rows,
        graded=True,
        source=r.source,
        columns={k: v for k, v in r.columns.items() if k != "predicted"},
    )
    return recs, truth


def read_part(table: Any, dropna: bool, need: tuple[str, ...]) -> Any:
    """One part of the ratings (a Spark partition's rows, columns named by
    role) read as any table is (:func:`read_ratings`); None when ``dropna``
    dropped every row of it (other parts may have pairs)."""
    try:
        return read_ratings(table, Columns(), dropna=dropna, need=need)
    except InputError as exc:
        if dropna and exc.reason.startswith("no rating pairs left"):
            return None
        raise
