"""Ids: how user and item ids are read and compared (one rule for every input).

The rule (docs/inputs.md, "The rules"). Every id *value* has a canonical form that
depends on the value alone, never on its column or its neighbours:

* integers of any type (Python ``int``, NumPy and Arrow int/uint) within
  int64 → that integer; beyond int64 (64-bit hashes as uint64, Python big
  ints) → their decimal string;
* floats: whole with ``|x| <= 2**53`` → the integer (``1.0`` ≡ ``1``);
  any other finite float → the string of Python's shortest ``repr``
  (``11.5`` → ``"11.5"``); NaN and ±inf → an error naming the row;
* booleans → ``"true"`` / ``"false"`` (never 1 / 0);
* strings, whatever the input (a CSV field, a pandas/Arrow/Spark string
  column, a dict key, a TREC qid), are read by the *text rule* below, so the
  same characters are the same id through every door: ``"7"`` is the integer
  7 in a DataFrame of strings as in a CSV file (issue #30);
* missing values (None, null, NaN, NaT) → an error naming the row.

The text rule (:func:`from_text`, :func:`text_value`): an integer literal
``-?(0|[1-9][0-9]*)`` within int64 → that integer; a decimal or exponent
literal (JSON's number grammar, e.g. ``1.0``, ``2e3``) whose exact value
(not its nearest float) is whole with ``|x| <= 2**53`` → that integer;
anything else stays the text as written (``"007"``, ``"11.5"``, ``"true"``,
``"18446744073709551615"``).

A *column* (an array of ids) is int64 when every canonical value is an
integer, else object strings in which integers are their decimal strings.
Under the text rule a string that is the decimal form of an int64 is always
that integer, so in a column of strings such a value *is* an integer id:
:func:`order_of` orders ids the same way whatever the column's kind
(integers first, numerically, then text by code point), which is the tie
order ``ties="item"``. How an id compares never depends on its neighbours,
its batch, its partition or its input.
When two columns to be matched differ in kind (:func:`unify`), the int64 side
becomes strings, so ``1``, ``1.0`` and ``"1"`` all match then, and ``"11.5"``
matches ``11.5``. Engines only ever see int64 or object-str arrays.

Example:
    >>> canonical([1, 2.0, 3], "item", "truth").tolist()
    [1, 2, 3]
    >>> canonical([1, 11.5, True, 2**64], "item", "truth").tolist()
    ['1', '11.5', 'true', '18446744073709551616']
    >>> canonical(["7", "007", "u1"], "item", "truth").tolist()
    ['7', '007', 'u1']
    >>> canonical(["7", "12"], "item", "truth").tolist()
    [7, 12]
    >>> from_text(pa.array(["1", "1.0", "2e1", "007"]), "item", "x.csv").tolist()
    ['1', '1', '20', '007']
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from receval._accel import NATIVE as _native
from receval._lazy import pc
from receval._workspace import take
from receval.errors import InputError

__all__ = [
    "INT",
    "NUMBER_LITERAL",
    "SMALL_COLUMN",
    "STR",
    "any_number_literal",
    "arrow_bools",
    "arrow_floats",
    "arrow_ints",
    "arrow_strings",
    "as_str",
    "canonical",
    "canonical_value",
    "combine_kinds",
    "distinct",
    "from_text",
    "kind",
    "numbers",
    "one_chunk",
    "order_of",
    "text_value",
    "unify",
    "whitespace_notes",
]

#: The two kinds of id column.
INT, STR = "int", "str"

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
#: Floats up to this magnitude are exact integers (2**53); beyond, a whole
#: float may stand for several integers and is kept as its repr.
_EXACT = 2.0**53

_INT_LITERAL = r"^-?(0|[1-9][0-9]*)$"
_SHORT_INT_LITERAL = r"^-?(0|[1-9][0-9]{0,17})$"  # at most 18 digits: always int64
_NUMBER_LITERAL = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
_WHOLE_DECIMAL = r"^-?(0|[1-9][0-9]*)\.0+$"
_EXACT_INT = 2**53
#: a number literal (JSON's grammar): the strings the text rule may read as integers
NUMBER_LITERAL = _NUMBER_LITERAL
_INT_RE = re.compile(_INT_LITERAL)
_SHORT_INT_RE = re.compile(_SHORT_INT_LITERAL)
#: Columns of at most this many values are read by Python and NumPy alone
#: (:func:`_short_ints`, :func:`any_number_literal`, the largest grade): a
#: small file is read and evaluated without loading pyarrow.compute (issue #33).
SMALL_COLUMN = 4096
_NUMBER_RE = re.compile(_NUMBER_LITERAL)


def objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-d object array holding ``values`` as they are."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def first_true(mask: np.ndarray) -> int:
    """The index of the first True of a boolean array (which has one)."""
    return int(np.flatnonzero(mask)[0])


def _missing(role: str, source: str, row: int, what: str = "missing") -> InputError:
    return InputError(f"{what} {role} id", source=source, row=row)


def _not_an_id(role: str, source: str, row: int, value: Any) -> InputError:
    """The error of a value that is no id (:data:`_NOT_IDS`)."""
    shown = repr(value if not isinstance(value, np.ndarray) else value.tolist())
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    hint = ""
    if isinstance(value, (list, tuple, np.ndarray)):
        hint = f": one {role} a row (pandas: DataFrame.explode('{role}'))"
    return InputError(
        f"{role} id must be a number or text; found a {type(value).__name__} {shown}{hint}",
        source=source,
        row=row,
    )


#: values that are no id: containers (a list of items where one item goes) and
#: complex numbers; every other value has a canonical form (its ``str`` at last)
_NOT_IDS = (list, tuple, dict, set, frozenset, np.ndarray, complex, np.complexfloating)


def canonical_value(value: Any) -> int | str:
    """The canonical form of one id value (see the module's rule); raises
    ValueError for a missing or non-finite value.

    Example:
        >>> [canonical_value(v) for v in (7, 7.0, 7.5, False, "7", "007", 2**70)]
        [7, 7, '7.5', 'false', 7, '007', '1180591620717411303424']
    """
    if isinstance(value, str):
        if not value:  # no id, as a file's empty field is
            raise ValueError("missing")
        return text_value(value)
    if value is None:
        raise ValueError("missing")
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        v = int(value)
        return v if _I64_MIN <= v <= _I64_MAX else str(v)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):  # NaN is a missing id, as in a column of floats
            raise ValueError("missing")
        if not math.isfinite(f):
            raise ValueError("non-finite")
        if f == math.floor(f) and abs(f) <= _EXACT:
            return int(f)
        # a float32 or float16 as its own shortest repr ("0.1"), as a column of them reads
        return str(value) if isinstance(value, (np.float32, np.float16)) else repr(f)
    if isinstance(value, bytes):  # text as bytes: the text rule on it
        return text_value(value.decode("utf-8", "replace"))
    if isinstance(value, Decimal):  # a decimal's digits: the text rule ("7.00" is 7)
        if not value.is_finite():
            raise ValueError("missing" if value.is_nan() else "non-finite")
        return text_value(str(value))
    if isinstance(value, _NOT_IDS):  # a container (a list of items), a complex number
        raise ValueError("not an id")
    try:
        import pandas as pd

        if pd.isna(value):
            raise ValueError("missing")
    except (TypeError, ValueError) as exc:
        if str(exc) == "missing":
            raise
    return str(value)


def text_value(text: str) -> int | str:
    """One string under the text rule (see the module's rule).

    >>> [text_value(t) for t in ("12", "-0", "1.0", "2e3", "007", "11.5", "x")]
    [12, 0, 1, 2000, '007', '11.5', 'x']
    """
    if not text or not (text[0].isdigit() or text[0] == "-"):
        return text
    if _INT_RE.fullmatch(text):  # "6\n" is text: `$` alone also matches before a last newline
        v = int(text)
        return v if _I64_MIN <= v <= _I64_MAX else text
    if _NUMBER_RE.fullmatch(text):
        v = _exact_int(text)
        if v is not None:
            return v
    return text


def _exact_int(literal: str) -> int | None:
    """The integer a number literal's exact value is, when it is whole and
    within 2**53; else None. A literal of a huge exponent (``1e1000000``) is
    out of range before Decimal rounds it to an integer (which overflows).

    >>> [_exact_int(t) for t in ("2e3", "0e99999999", "1e1000000", "7.5", "-1.0")]
    [2000, 0, None, None, -1]
    """
    d = Decimal(literal)
    if d.is_zero():
        return 0
    if d.adjusted() > 16 or d != d.to_integral_value() or abs(d) > _EXACT_INT:
        return None
    return int(d)


def _from_values(values: Sequence[Any] | np.ndarray, role: str, source: str) -> np.ndarray:
    """Python objects, one by one (with fast paths for columns of one type)."""
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    types = set(map(type, values))
    if types <= {str}:
        return _text_ids(pa.array(values, type=pa.large_string()), role, source)
    if types <= {int, np.int64, np.int32, np.int16, np.int8}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    elif types <= {float, np.float64, np.float32}:
        return _from_floats(np.asarray(values, dtype=np.float64), role, source)
    out = np.empty(n, dtype=object)
    all_int = True
    for i, v in enumerate(values):
        try:
            c = canonical_value(v)
        except ValueError as exc:
            if str(exc) == "not an id":
                raise _not_an_id(role, source, i, v) from None
            what = "non-finite" if str(exc) != "missing" else "missing"
            raise _missing(role, source, i, what) from None
        out[i] = c
        all_int = all_int and type(c) is int
    if all_int:
        return out.astype(np.int64)
    if not all(type(c) is str for c in out):
        out = objects([c if type(c) is str else str(c) for c in out])
    return out


def _from_floats(a: np.ndarray, role: str, source: str) -> np.ndarray:
    """Float ids (any width): whole ones as int64, others as the shortest
    text that reads back as the same value of their own width (a float32
    0.1 is "0.1", as a CSV writes it, not float64's "0.10000000149011612")."""
    x = a.astype(np.float64, copy=False)  # every float32 or float16 value exactly
    bad = ~np.isfinite(x)
    if bad.any():
        i = first_true(bad)
        raise _missing(role, source, i, "missing" if np.isnan(x[i]) else "non-finite")
    whole = (x == np.floor(x)) & (np.abs(x) <= _EXACT)
    if whole.all():
        return x.astype(np.int64)
    out = a.astype(str).astype(object)  # NumPy's float str: the shortest repr of its width
    if whole.any():
        out[whole] = x[whole].astype(np.int64).astype(str)
    return out


def _from_uints(a: np.ndarray) -> np.ndarray:
    if len(a) and int(a.max()) > _I64_MAX:
        return a.astype(str).astype(object)
    return a.astype(np.int64)


def _from_numpy(arr: np.ndarray, role: str, source: str) -> np.ndarray:
    k = arr.dtype.kind
    if k == "i":
        return arr.astype(np.int64, copy=False)
    if k == "u":
        return _from_uints(arr)
    if k == "b":
        return np.where(arr, "true", "false").astype(object)
    if k == "f":  # float16/32 kept: their text is their own shortest repr ("0.1")
        wide = arr.dtype.itemsize > 8
        return _from_floats(arr.astype(np.float64) if wide else arr, role, source)
    if k in "US":
        return _text_ids(pa.array(arr.astype(str), type=pa.large_string()), role, source)
    return _from_values(arr.astype(object, copy=False), role, source)


def _from_arrow(col: pa.ChunkedArray | pa.Array, role: str, source: str) -> np.ndarray:
    if col.null_count:
        row = first_true(col.is_null().to_numpy(zero_copy_only=False))
        raise _missing(role, source, row)
    typ = col.type
    if pa.types.is_dictionary(typ):
        if len(col):  # each value its rows use read once, then taken row by row
            codes, values = used_values(col)
            if not values.null_count:
                return by_codes(lambda: _from_arrow(values, role, source), codes)
        col = col.cast(typ.value_type)
        typ = col.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _text_ids(col, role, source)
    if pa.types.is_integer(typ):
        return _from_numpy(numbers(col), role, source)
    if pa.types.is_floating(typ):  # float32 kept: its text is its shortest repr ("0.1")
        return _from_floats(numbers(col), role, source)
    if pa.types.is_boolean(typ):
        return _from_numpy(col.to_numpy(zero_copy_only=False), role, source)
    return _from_values(col.to_pylist(), role, source)


def used_values(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """The codes of a dictionary-encoded column without nulls (into one
    dictionary for all its chunks) and the dictionary's values that its rows
    use (a dictionary may hold others: a shared one, unused categories).

    >>> codes, values = used_values(pa.array(["b", "a", "b"]).dictionary_encode())
    >>> codes.tolist(), values.to_pylist()
    ([0, 1, 0], ['b', 'a'])
    """
    if isinstance(col, pa.ChunkedArray):
        col = col.unify_dictionaries()
        chunks = [c for c in col.chunks if len(c)]
        parts = [c.indices.to_numpy(zero_copy_only=False) for c in chunks]
        codes = parts[0] if len(parts) == 1 else np.concatenate(parts)
        values = chunks[0].dictionary
    else:
        codes, values = col.indices.to_numpy(zero_copy_only=False), col.dictionary
    used = np.bincount(codes, minlength=len(values)) > 0
    if not used.all():
        values = values.filter(pa.array(used))
        codes = (np.cumsum(used) - 1)[codes]
    return codes, values


def canonical(
    values: pa.ChunkedArray | pa.Array | np.ndarray | Sequence[Any],
    role: str,
    source: str,
    kind: str | None = None,
) -> np.ndarray:
    """A column of ids under the id rule: int64, or object strings.

    Args:
        values: an Arrow array, a NumPy array or a sequence of Python values.
        role: ``"user"`` or ``"item"`` (for error messages).
        source: the input's name (for error messages).
        kind: ``"str"`` forces strings (the kind of the whole column when this
            is one chunk of it); None: the values decide.

    Raises:
        InputError: a missing or non-finite id, naming its row.
    """
    if isinstance(values, (pa.ChunkedArray, pa.Array)):
        out = _from_arrow(values, role, source)
    elif isinstance(values, np.ndarray):
        out = _from_numpy(values, role, source)
    else:
        out = _from_values(list(values), role, source)
    return as_str(out) if kind == STR else out


#: Arrow's fixed-width number types, by the NumPy type of their values
_NUMBER_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def arrow_ints(values: np.ndarray) -> pa.Array:
    """Integers as an int64 Arrow array (no copy when they are int64 already),
    made without ``pa.array``: that asks pyarrow's pandas shim whether the
    values are pandas', which loads pandas (0.4 s) into a process that needs
    none (issue #33)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def arrow_floats(values: np.ndarray) -> pa.Array:
    """Numbers as a float64 Arrow array, without ``pa.array`` (:func:`arrow_ints`)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


def arrow_strings(values: list[str]) -> pa.Array:
    """Python strings as an Arrow string array, built from its buffers (UTF-8
    bytes and their offsets) without ``pa.array`` (:func:`arrow_ints`); by
    ``pa.array`` where that cannot be done (text that is no UTF-8, more than
    2 GiB of it)."""
    try:
        encoded = [v.encode("utf-8") for v in values]
    except UnicodeEncodeError:
        return pa.array(values, pa.string())
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] >= 2**31:
        return pa.array(values, pa.string())
    bounds = pa.py_buffer(offsets.astype(np.int32))
    return pa.StringArray.from_buffers(len(encoded), bounds, pa.py_buffer(b"".join(encoded)))


def arrow_bools(values: np.ndarray) -> pa.Array:
    """Booleans as an Arrow boolean array, without ``pa.array`` (:func:`arrow_ints`)."""
    bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def numbers(values: pa.Array | pa.ChunkedArray, reuse: str | None = None) -> np.ndarray:
    """``values.to_numpy()``: a read-only view of the buffer of an array (or
    of a chunked array's one chunk), else a copy. A number column with no
    nulls is read here from its buffer, because pyarrow's own conversions
    (``to_numpy``, ``pa.array``) load pandas on first use (its pandas shim:
    0.4 s), which a process that reads numbers never needs (issue #33); any
    other column is pyarrow's. ``reuse``: chunks that must be copied into
    one array go to that buffer of the thread's claimed workspace
    (:func:`receval._workspace.take`), not to new memory.

    Example:
        >>> numbers(pa.chunked_array([[1, 2], [3]])).tolist()
        [1, 2, 3]
    """
    if isinstance(values, pa.ChunkedArray):
        if values.null_count or values.type not in _NUMBER_TYPES:
            return values.to_numpy()
        if values.num_chunks == 1:
            return numbers(values.chunk(0))
        dtype = _NUMBER_TYPES[values.type]
        chunks = [c for c in values.chunks if len(c)]
        joined = _one_buffer(chunks, np.dtype(dtype))
        if joined is not None:
            return joined
        out = take(reuse, len(values), dtype) if reuse else np.empty(len(values), dtype)
        if chunks:
            np.concatenate([numbers(c) for c in chunks], out=out)
        return out
    if values.null_count or values.type not in _NUMBER_TYPES:
        return values.to_numpy(zero_copy_only=False)
    dtype = np.dtype(_NUMBER_TYPES[values.type])
    data = values.buffers()[1]
    if data is None:
        return np.empty(0, dtype)
    out = np.frombuffer(data, dtype, count=len(values), offset=values.offset * dtype.itemsize)
    out.flags.writeable = False  # Arrow's memory, as pyarrow's view
    return out


def one_chunk(table: pa.Table, name: str) -> pa.Table:
    """``table`` with each number column without nulls that Arrow holds in
    chunks of separate buffers (a Parquet file's row groups, as
    ``pyarrow.parquet`` reads them) joined into one chunk, in the buffer
    ``name.column`` of the thread's claimed workspace. A pair of users cut from
    such a table is read this way (:func:`receval.io.stream.pairs`): its columns
    are then views of memory that the next pair of the thread reuses, rather
    than new memory faulted in page by page. Other columns are left as they
    are; the values are the same.

    Example:
        >>> t = pa.table({"user": pa.chunked_array([[1, 2], [3]])})
        >>> one_chunk(t, "recs").column("user").num_chunks
        1
    """
    for i, column in enumerate(table.columns):
        if column.num_chunks < 2 or column.null_count or column.type not in _NUMBER_TYPES:
            continue
        values = numbers(column, reuse=f"{name}.{table.column_names[i]}")
        if not values.flags.writeable:  # a view: the chunks were in one buffer
            continue
        one = pa.Array.from_buffers(column.type, len(values), [None, pa.py_buffer(values)])
        table = table.set_column(i, table.field(i), pa.chunked_array([one]))
    return table


def _one_buffer(chunks: list[pa.Array], dtype: np.dtype) -> np.ndarray | None:
    """A read-only view of chunks that follow each other in one buffer (the
    slices of one row group, as ``pyarrow.parquet`` reads it, and of one table,
    as a merge by user cuts it), else None (a copy is needed)."""
    if len(chunks) < 2:
        return None
    data = chunks[0].buffers()[1]
    if data is None:
        return None
    start = end = chunks[0].offset
    for chunk in chunks:
        buffer = chunk.buffers()[1]
        if buffer is None or buffer.address != data.address or chunk.offset != end:
            return None
        end += len(chunk)
    if end * dtype.itemsize > data.size:
        return None
    out = np.frombuffer(data, dtype, count=end - start, offset=start * dtype.itemsize)
    out.flags.writeable = False  # Arrow's memory
    return out


def by_codes(read: Callable[[], np.ndarray], codes: np.ndarray) -> np.ndarray:
    """``read()[codes]``: the ids of a dictionary's values (``read``) taken row
    by row; an error that names a value's place in the dictionary names the
    first row using that value instead."""
    try:
        return read()[codes]
    except InputError as exc:
        if exc.row is None:
            raise
        raise exc.remap(lambda r: first_true(codes == r)) from None


def _text_ids(values: pa.ChunkedArray | pa.Array, role: str, source: str) -> np.ndarray:
    """A string column of ids (a table's, a Parquet file's, Python strings) by
    :func:`from_text`; an empty string is no id, as a delimited file's empty
    field is not (its reader names that line): an error naming the row."""
    row = _first_empty(values)
    if row is not None:
        raise InputError(f"missing {role} id (an empty text)", source=source, row=row)
    return from_text(values, role, source)


def _first_empty(values: pa.ChunkedArray | pa.Array) -> int | None:
    """The first row of a string column (no nulls) holding the empty text:
    two equal offsets, read from the offsets buffer (no compute kernel
    loaded: the command's start-up, issue #33)."""
    at = 0
    for chunk in values.chunks if isinstance(values, pa.ChunkedArray) else [values]:
        if len(chunk):
            width = np.dtype(np.int64 if pa.types.is_large_string(chunk.type) else np.int32)
            bounds = np.frombuffer(
                chunk.buffers()[1],
                width,
                count=len(chunk) + 1,
                offset=chunk.offset * width.itemsize,
            )
            hit = np.flatnonzero(bounds[1:] == bounds[:-1])
            if len(hit):
                return at + int(hit[0])
        at += len(chunk)
    return None


def from_text(values: pa.ChunkedArray | pa.Array, role: str, source: str) -> np.ndarray:
    """Ids read from untyped text (a CSV column read as strings): int64 when
    every value is an integer literal (or a whole decimal literal), else
    object strings (see the module's rule).

    Example:
        >>> from_text(pa.array(["3", "-0", "2.0"]), "user", "x.csv").tolist()
        [3, 0, 2]
    """
    if values.null_count:
        row = first_true(values.is_null().to_numpy(zero_copy_only=False))
        raise _missing(role, source, row)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return canonical(values, role, source)  # already typed (e.g. read as such)
    n = len(values)
    if n <= SMALL_COLUMN:
        small = _short_ints(values)
        if small is not None:
            return small
    short = pc.match_substring_regex(values, _SHORT_INT_LITERAL)
    if pc.all(short).as_py() is not False:
        return numbers(values.cast(pa.int64())) if n else np.empty(0, np.int64)
    text = values.to_numpy(zero_copy_only=False).astype(object)
    if not any_number_literal(values):
        return text  # no value is a number: all text, as written
    ints = np.zeros(n, dtype=np.int64)
    is_int = short.to_numpy(zero_copy_only=False).astype(bool)
    if is_int.any():
        ints[is_int] = values.filter(short).cast(pa.int64()).to_numpy()
    longer = pc.and_(pc.match_substring_regex(values, _INT_LITERAL), pc.invert(short)).to_numpy(
        zero_copy_only=False
    )
    for i in np.flatnonzero(longer):  # 19+ digits: rare, checked one by one
        v = int(text[i])
        if _I64_MIN <= v <= _I64_MAX:
            ints[i], is_int[i] = v, True
    # whole decimals "12.00": their integer part, exactly (not through a float)
    point = pc.match_substring_regex(values, _WHOLE_DECIMAL)
    where = np.flatnonzero(point.to_numpy(zero_copy_only=False))
    if len(where):
        head = pc.replace_substring_regex(values.filter(point), r"\.0+$", "")
        for j, t in zip(where, head.to_pylist(), strict=True):
            v = int(t)
            if abs(v) <= _EXACT_INT:
                ints[j], is_int[j] = v, True
    # exponents "2e3", "1.5E2": exactly, by Decimal (rare)
    exponent = pc.and_(
        pc.match_substring_regex(values, _NUMBER_LITERAL),
        pc.match_substring_regex(values, "[eE]"),
    )
    for j in np.flatnonzero(exponent.to_numpy(zero_copy_only=False)):
        v = _exact_int(text[j])
        if v is not None:
            ints[j], is_int[j] = v, True
    if is_int.all():
        return ints
    text[is_int] = ints[is_int].astype(str)
    return text


def any_number_literal(values: pa.Array | pa.ChunkedArray) -> bool:
    """Whether some value of a string column is a number literal
    (:data:`NUMBER_LITERAL`; nulls are not): by Python's ``re`` for a small
    column, by Arrow's regex kernel otherwise (the same pattern, the same answer).

    Example:
        >>> any_number_literal(pa.array(["a", None, "2.5e3"]))
        True
    """
    if len(values) <= SMALL_COLUMN:
        return any(t is not None and _NUMBER_RE.fullmatch(t) for t in values.to_pylist())
    return bool(pc.any(pc.match_substring_regex(values, _NUMBER_LITERAL)).as_py())


def _short_ints(values: pa.Array) -> np.ndarray | None:
    """A small string column as int64 when every value is an integer literal
    of at most 18 digits (what :func:`from_text` reads through Arrow's regex
    and cast, with the same pattern and the same values), else None."""
    text = values.to_pylist()
    if not all(_SHORT_INT_RE.fullmatch(t) for t in text):
        return None
    return np.array([int(t) for t in text], dtype=np.int64)


def kind(a: np.ndarray) -> str:
    """``"str"`` for an object array of strings, ``"int"`` for int64."""
    return STR if a.dtype == object else INT


def combine_kinds(kinds: Sequence[str]) -> str:
    """The kind of a column made of parts of these kinds (str wins)."""
    return STR if STR in kinds else INT


def as_str(a: np.ndarray) -> np.ndarray:
    """Ids as object strings (integers as their decimal strings)."""
    if a.dtype == object:
        return a
    return a.astype(str).astype(object)


def unify(parts: list[np.ndarray], what: str, notes: list[str]) -> list[np.ndarray]:
    """Ids to be matched as one kind: when some parts are strings, the
    integer parts become their decimal strings (and a note says so)."""
    kinds = {kind(p) for p in parts if len(p)}
    if len(kinds) > 1:
        notes.append(
            f"{what} ids are numbers on one side and strings on the other: matched as strings"
        )
        return [as_str(p) for p in parts]
    if STR in kinds:  # empty int parts (no rows) join the strings
        return [as_str(p) for p in parts]
    return parts


def whitespace_notes(ids: np.ndarray, what: str) -> list[str]:
    """What to say about the text ids among ``ids`` that begin or end with
    whitespace (Unicode's, as :meth:`str.strip` strips): nothing when none
    does, or ``ids`` are integers (int64 ids hold no whitespace). Ids are
    never stripped (an id is what its input holds: ``" 1"`` is not
    ``"1"``); a padded id that is another id of ``ids`` once stripped (read
    by the text rule: ``" 1.0"`` is ``1``) is a second user or item, which
    the first note says.

    Meant for the distinct ids an engine has found anyway (one Arrow pass
    over them: cheap); repeated ids give the same notes. The notes name no
    count and no id, so that each chunk of a large input says the same
    thing, and it is said once.

    Example:
        >>> ids = np.array([" 1", "1", "u2"], dtype=object)
        >>> [n.split(":")[0] for n in whitespace_notes(ids, "user")]
        ['some user ids differ from other user ids only by surrounding whitespace']
        >>> whitespace_notes(np.array(["1", "u2"], dtype=object), "user")
        []
    """
    if ids.dtype != object or not len(ids):
        return []
    arr = pa.array(ids, type=pa.large_string())
    trimmed = pc.utf8_trim_whitespace(arr)
    padded = pc.not_equal(trimmed, arr).to_numpy(zero_copy_only=False)
    if not padded.any():
        return []
    # the few padded ids: the same id twice is one id; each stripped, read as ids are
    distinct = dict(
        zip(
            arr.filter(pa.array(padded)).to_pylist(),
            trimmed.filter(pa.array(padded)).to_pylist(),
            strict=True,
        )
    )
    stripped = [str(text_value(t)) for t in distinct.values()]
    plain = set(ids[~padded].tolist())
    example = f"{' 1'!r} and {'1'!r} are two {what}s"
    if len(set(stripped)) < len(stripped) or not plain.isdisjoint(stripped):
        return [
            f"some {what} ids differ from other {what} ids only by surrounding whitespace: ids "
            f"are read as written ({example}); strip them if they are the same {what}"
        ]
    return [
        f"some {what} ids begin or end with whitespace: ids are read as written ({example}); "
        "strip them if the whitespace is not part of the id"
    ]


def runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Values and lengths of the runs of a sorted array; None when it is not sorted."""
    if len(a) and not np.all(a[1:] >= a[:-1]):
        return None
    starts = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1]))) if len(a) else a[:0]
    return a[starts], np.diff(np.append(starts, len(a)))


def runs_moved(starts: np.ndarray, order: np.ndarray, n: int) -> np.ndarray:
    """The rows of ``n`` rows in runs (each beginning at ``starts``) with the
    runs taken in ``order`` (run numbers), each run's rows in their order: the
    permutation moving whole runs, without sorting the rows."""
    lengths = np.diff(np.append(starts, n))[order]
    keep = lengths > 0
    lengths, first = lengths[keep], starts[order][keep]
    # one array written once (fresh pages are what a large one costs): a step of 1
    # within a run, and at each run's first row the jump from the row before it
    out = np.ones(n, dtype=np.int64)
    if len(first):
        out[0] = first[0]
        out[np.cumsum(lengths[:-1])] = first[1:] - (first[:-1] + lengths[:-1] - 1)
    return np.cumsum(out, out=out)


def runs_in_order(values: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """The permutation putting the runs of ``values`` (each beginning at
    ``starts``, the first at 0) in ascending order of their value, each run's
    rows in their order (:func:`runs_moved`: lists written user by user, the
    users in any order); None when a value has rows in two runs."""
    heads = values[starts]
    by_value = np.argsort(heads, kind="stable")
    ordered = heads[by_value]
    if np.any(ordered[1:] == ordered[:-1]):
        return None
    return runs_moved(starts, by_value, len(values))


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


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a numeric array, sorted: a sort and one comparison
    pass. (``np.unique`` of a plain integer array hashes it in NumPy 2.3+, which
    measured 10-100x slower on millions of values: 17 s for 19M keys.)

    >>> distinct(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.r_[True, out[1:] != out[:-1]]]
    return out


def order_of(ids: np.ndarray) -> np.ndarray:
    """The permutation sorting ids in the id order: integers first,
    numerically, then text by code point. For an object array of strings
    the integers are the values in the decimal form of an int64 (under the
    text rule no text id has that form), so the order of two ids depends on
    the two values alone, never on the kind of the column they sit in.

    >>> ids = np.array(["10", "9", "a", "-1", "007"], dtype=object)
    >>> ids[order_of(ids)].tolist()
    ['-1', '9', '10', '007', 'a']
    """
    if ids.dtype != object:
        return np.argsort(ids, kind="stable")
    arr = pa.array(ids, type=pa.large_string())
    short = pc.match_substring_regex(arr, _SHORT_INT_LITERAL).to_numpy(zero_copy_only=False)
    is_int = short.astype(bool)
    values = np.zeros(len(ids), dtype=np.int64)
    if is_int.any():
        values[is_int] = arr.filter(pa.array(short)).cast(pa.int64()).to_numpy()
    longer = pc.match_substring_regex(arr, _INT_LITERAL).to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(longer & ~is_int):  # 19+ digits: an int64 or text
        v = int(ids[i])
        if _I64_MIN <= v <= _I64_MAX:
            values[i], is_int[i] = v, True
    ints, text = np.flatnonzero(is_int), np.flatnonzero(~is_int)
    return np.concatenate(
        [ints[np.argsort(values[ints], kind="stable")], text[np.argsort(ids[text], kind="stable")]]
    ).astype(np.int64)
