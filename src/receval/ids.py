"""Ids: how user and item ids are read and compared (one rule for every input).

See :func:`ids_to_numpy` for the rule. Engines, readers and the item context
all go through this module; nothing else decides what an id is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from receval._accel import NATIVE as _native
from receval.errors import InputError


def objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def first_true(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def ids_to_numpy(col: pa.ChunkedArray | np.ndarray, role: str, source: str) -> np.ndarray:
    """Ids as int64 (integers, integral floats, booleans), float64, or object str."""
    if isinstance(col, pa.ChunkedArray):
        if col.null_count:
            row = first_true(col.is_null().to_numpy(zero_copy_only=False))
            raise InputError(f"missing {role} id", source=source, row=row)
        typ = col.type
        if pa.types.is_dictionary(typ):
            col = col.cast(typ.value_type)
            typ = col.type
        if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
            return col.to_numpy().astype(np.int64, copy=False)
        if pa.types.is_floating(typ):
            arr = col.to_numpy()
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return col.to_numpy(zero_copy_only=False).astype(object)
        else:
            arr = col.to_numpy(zero_copy_only=False)
    else:
        arr = np.asarray(col)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise InputError(f"missing or non-finite {role} id", source=source, row=first_true(bad))
        if np.all(arr == np.round(arr)) and np.all(np.abs(arr) < 2**62):
            return arr.astype(np.int64)
        return arr.astype(np.float64, copy=False)
    out = np.empty(len(arr), dtype=object)
    kinds = set()
    for i, v in enumerate(arr):
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            raise InputError(f"missing {role} id", source=source, row=i)
        if isinstance(v, (bool, np.bool_, int, np.integer)):
            kinds.add("int")
            out[i] = int(v)
        elif isinstance(v, str):
            kinds.add("str")
            out[i] = v
        else:
            kinds.add("other")
            out[i] = str(v)
    if kinds == {"int"}:
        return out.astype(np.int64)
    if kinds != {"str"}:
        out = np.array([str(v) for v in out], dtype=object)
    return out


def kind(a: np.ndarray) -> str:
    return "str" if a.dtype == object else "number"


def as_str(a: np.ndarray) -> np.ndarray:
    if a.dtype == object:
        return a
    out = np.empty(len(a), dtype=object)
    out[:] = a.astype(str)
    return out


def reconcile(parts: list[np.ndarray], what: str, notes: list[str]) -> list[np.ndarray]:
    """Ids must be of one kind on both sides; numbers and strings are matched as strings."""
    kinds = {kind(p) for p in parts if len(p)}
    if len(kinds) > 1:
        notes.append(
            f"{what} ids are numbers on one side and strings on the other: matched as strings"
        )
        return [as_str(p) for p in parts]
    return parts


def runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Values and lengths of the runs of a sorted array; None when it is not sorted."""
    if len(a) and not np.all(a[1:] >= a[:-1]):
        return None
    starts = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1]))) if len(a) else a[:0]
    return a[starts], np.diff(np.append(starts, len(a)))


def sorted_runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The distinct values of a sorted array, in order, and the length of each
    run (None from the compiled pass, whose codes() needs no lengths); None
    when the array is not sorted."""
    if _native is not None and a.dtype == np.int64:
        out = np.empty(len(a), dtype=np.int64)
        count = _native.runs(np.ascontiguousarray(a), out)
        return None if count < 0 else (out[:count].copy(), None)
    return runs(a)


def distinct_sorted(a: np.ndarray) -> np.ndarray | None:
    """The distinct values of a sorted array, in order; None when it is not sorted."""
    runs = sorted_runs(a)
    return None if runs is None else runs[0]
