"""Which column holds what: one alias table and one resolver for every input.

Dicts, pandas, polars and Arrow tables and every file format go through
:func:`resolve` (names → roles) and :func:`normalise` (a table → an Arrow
table holding only the roles' columns, under the roles' names, with its id
columns under the id rule of :mod:`receval.ids`).

The rule (docs/inputs.md, "Columns"): a column named explicitly (``user_col=``,
``--user-col``, ...) must exist; a role left to detection (None) takes the
first column whose name matches one of the role's aliases (:data:`ALIASES`,
compared without case, ``_``, ``-`` or spaces: ``userId`` ≡ ``user_id``).
``""`` means "do not read this role". A truth column named like a grade
(``relevance``, ``rating``, ``grade``, ``label``, ...) *is* the graded
relevance, for tables as for files.

Example:
    >>> resolve(["userId", "movieId", "rating"], Columns(), TRUTH, "truth")
    {'user': 'userId', 'item': 'movieId', 'relevance': 'rating'}
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from receval import errors
from receval.errors import InputError
from receval.ids import STR, any_number_literal, canonical, used_values
from receval.records import Columns

__all__ = [
    "ALIASES",
    "ITEMS",
    "RATINGS",
    "RECS",
    "TRAIN",
    "TRUTH",
    "USER_GROUPS",
    "columns_table",
    "is_frame",
    "is_list_type",
    "is_table",
    "item_lists",
    "normalise",
    "resolve",
    "to_arrow",
]

#: Spellings of each role found in the wild, in order of preference.
ALIASES: Mapping[str, tuple[str, ...]] = {
    "user": (
        "user",
        "user_id",
        "uid",
        "qid",
        "query_id",
        "query",
        "session",
        "session_id",
        "customer_id",
    ),
    "item": (
        "item",
        "item_id",
        "iid",
        "docno",
        "doc_id",
        "movie_id",
        "product_id",
        "track_id",
        "artist_id",
    ),
    "score": ("score", "prediction", "predicted", "pred"),
    "rank": ("rank", "position", "pos"),
    "relevance": ("relevance", "rating", "rel", "grade", "label", "target", "weight"),
    "actual": ("actual", "rating", "true", "y_true", "target", "label", "relevance"),
    "predicted": ("predicted", "prediction", "pred", "score", "y_pred", "estimate"),
}

#: The roles each kind of input reads, and which of them it needs.
RECS = (("user", "item", "rank", "score"), ("user", "item"))
TRUTH = (("user", "item", "relevance"), ("user", "item"))
RATINGS = (("user", "item", "actual", "predicted"), ("actual", "predicted"))
TRAIN = (("user", "item"), ("user", "item"))
ITEMS = (("user", "item"), ("item",))
#: a user-groups table: the user column, every other column a grouping
USER_GROUPS = (("user",), ("user",))

_OPTION = {role: f"{role}_col" for role in ALIASES}


def read_number(value: Any) -> float:
    """A value written as a number (a score, a grade, a rank), as every door
    reads it: Python's ``float``, except text it reads that no file's number
    is: digit separators (``"1_0"``) and digits of other scripts (``"١"``,
    ``"２"``), which Arrow's CSV and RecBole's readers refuse; ValueError.

    Example:
        >>> read_number("2.5"), read_number(3)
        (2.5, 3.0)
    """
    if isinstance(value, str) and ("_" in value or not value.isascii()):
        raise ValueError(value)
    return float(value)


def _key(name: str) -> str:
    return "".join(c for c in name.lower() if c not in "_- ")


def _once(found: Mapping[str, str], names: Sequence[str], source: str) -> None:
    """A column read for a role must be the only one of its name: of two
    columns named alike (a table or a file may hold them), which one is
    meant cannot be told, and readers would take either."""
    for role, name in found.items():
        at = [i + 1 for i, n in enumerate(names) if n == name]
        if len(at) > 1:
            raise InputError(
                f"the column {name!r} appears {len(at)} times (columns "
                f"{', '.join(map(str, at[:-1]))} and {at[-1]}): which one is the {role} "
                "cannot be told; rename the others",
                source=source,
                column=name,
            )


def _missing(
    role: str,
    wanted: str | None,
    names: Sequence[str],
    source: str,
    truth: bool = False,
    taken: Mapping[str, str] | None = None,
    index: Sequence[str] = (),
) -> InputError:
    """The error of a missing column: the columns found, and a close match
    among those that serve no other role (``taken``: column -> the role it was
    named or found for); a column named like the role but named for another,
    or a pandas index (``index``: its names) holding the role, is said."""
    taken = taken or {}
    found = ", ".join(names) or "none"
    option = f"truth_{role}_col" if truth and role in ("user", "item") else _OPTION[role]
    free = [n for n in names if n not in taken]
    aliases = {_key(a) for a in ALIASES[role]}
    held = [n for n in index if n == wanted or _key(n) in aliases]
    elsewhere = [n for n in taken if n == wanted or (wanted is None and _key(n) in aliases)]
    said = ""  # where the column is, when it is somewhere: then no close match is offered
    if held:
        said = f"; the DataFrame's index {held[0]!r} is not read: make it a column (.reset_index())"
    elif elsewhere:
        other = errors.option(_OPTION[taken[elsewhere[0]]], elsewhere[0])
        said = f"; the column {elsewhere[0]!r} is the {taken[elsewhere[0]]} ({other})"
    if wanted is not None:
        close = difflib.get_close_matches(wanted, free, n=1, cutoff=0.5)
        hint = said or (f" — did you mean {close[0]!r}?" if close else "")
        return InputError(
            f"no {role} column {wanted!r} (columns found: {found}){hint}",
            source=source,
            column=wanted,
        )
    close = difflib.get_close_matches(role, free, n=1, cutoff=0.4)
    hint = said or (f"; did you mean {close[0]!r}?" if close else "")
    if not said:
        hint += f" — name it with {errors.option(option)}"
    return InputError(
        f"no {role} column (looked for {', '.join(ALIASES[role][:4])}, ...; columns found: "
        f"{found}){hint}",
        source=source,
    )


def resolve(
    names: Sequence[str],
    cols: Columns,
    roles: tuple[tuple[str, ...], tuple[str, ...]],
    source: str,
    index: Sequence[str] = (),
) -> dict[str, str]:
    """The column of each role found: role → column name.

    ``roles`` is ``(read, required)`` (:data:`RECS`, :data:`TRUTH`, ...).
    An explicit name must exist; a role left as None is detected by its
    aliases; a column serves one role at most. Raises
    :class:`~receval.errors.InputError` for a missing required or explicit
    column, naming the columns found and a close match (``index``: the names
    of a pandas index, named when it holds a missing role).
    """
    read, required = roles
    if roles is TRUTH:
        cols = cols.for_truth()
    keys: dict[str, str] = {}
    for n in names:
        keys.setdefault(_key(n), n)
    out: dict[str, str] = {}
    explicit = {r: getattr(cols, r) for r in read if getattr(cols, r)}
    named: dict[str, str] = {}
    for role, name in explicit.items():
        if name in named:  # a column serves one role at most
            first, second = (_OPTION[r] for r in (named[name], role))
            raise InputError(
                f"{errors.option(first)} and {errors.option(second)} both name the column "
                f"{name!r}: a column serves one role",
                source=source,
                column=name,
            )
        named[name] = role
    for role, name in explicit.items():
        if name not in names:
            if roles is ITEMS and role not in required:
                continue  # a list of items may have no user column: --user-col names others
            others = {n: r for r, n in explicit.items() if r != role}
            raise _missing(role, name, names, source, roles is TRUTH, others, index)
        out[role] = name
    taken = set(out.values())
    for role in read:
        if role in out or getattr(cols, role) is not None:
            continue
        for alias in ALIASES[role]:
            hit = alias if alias in names else keys.get(_key(alias))
            if hit is not None and hit not in taken:
                out[role] = hit
                taken.add(hit)
                break
    for role in required:
        if role not in out:
            wanted = getattr(cols, role) or None
            others = {n: r for r, n in out.items()}
            raise _missing(role, wanted, names, source, roles is TRUTH, others, index)
    _once(out, names, source)
    if roles is RECS and "rank" not in out and "score" not in out:
        graded = [n for n in names if _key(n) in {_key(a) for a in ALIASES["relevance"]}]
        if graded:  # a truth given where the recommendations go
            raise InputError(
                "recommendations need a rank column (1 = best) or a score column (higher = "
                f"better) to order each list (columns found: {', '.join(names)}); this input "
                f"has a {graded[0]!r} column, as a truth has: are the recommendations and the "
                "truth given the other way round? The recommendations come first",
                source=source,
            )
    return out


#: schema metadata of a table read from a text file: every column of the file,
#: tab-separated (only its roles' columns are read), for errors to name
FILE_COLUMNS = b"receval.file_columns"


def columns_of(obj: Any) -> list[str]:
    """The columns of an input as its user sees them: a table's, or, for one
    read from a text file, every column of the file (:data:`FILE_COLUMNS`)."""
    meta = getattr(getattr(obj, "schema", None), "metadata", None) or {}
    if FILE_COLUMNS in meta:
        return meta[FILE_COLUMNS].decode().split("\t")
    return names_of(obj)


def no_order(names: Sequence[str], source: str) -> InputError:
    """The error of recommendations with neither a rank nor a score column,
    naming every column of the input (``names``)."""
    return InputError(
        "recommendations need a rank column (1 = best) or a score column (higher = "
        f"better) to order each list (columns found: {', '.join(names)}) — name it with "
        + errors.option("rank_col")
        + " or "
        + errors.option("score_col"),
        source=source,
    )


def is_frame(obj: Any, kind: str = "DataFrame") -> bool:
    """Whether ``obj`` is a pandas ``DataFrame`` (or the pandas class ``kind``),
    told without loading pandas: an object of pandas means pandas is loaded."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, getattr(pd, kind))


def is_table(obj: Any) -> bool:
    """Whether ``obj`` is a pandas, polars or pyarrow table."""
    mod = type(obj).__module__
    return (
        is_frame(obj)
        or isinstance(obj, (pa.Table, pa.RecordBatch))
        or (mod.startswith("polars") and hasattr(obj, "to_arrow") and hasattr(obj, "columns"))
    )


def names_of(obj: Any) -> list[str]:
    """The column names of a table."""
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return list(obj.column_names)
    return [str(c) for c in obj.columns]


def _item_lists(values: Any) -> bool:
    """Whether a pandas object column holds a list of items a row (lists,
    tuples or arrays that Arrow types as a list column); else its values are
    read as ids (and a list among them is an error naming its row)."""
    if values.dtype != object or not len(values):
        return False
    first = values.iloc[0]  # a whole pass (first_valid_index) only when it is missing
    if first is None or (isinstance(first, float) and first != first):
        at = values.first_valid_index()
        first = None if at is None else values[at]
    return isinstance(first, _LISTS)


_LISTS = (list, tuple, np.ndarray)
_ARROW_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    OverflowError,
    TypeError,
    ValueError,
)


def _list_column(values: Any, name: str, source: str) -> pa.Array:
    """A pandas column of item lists as an Arrow list column: as Arrow types
    it, else (ids of several kinds) by :func:`id_lists`."""
    try:
        column = pa.array(values, from_pandas=True)
        if is_list_type(column.type):
            return column
    except _ARROW_ERRORS:
        pass
    return id_lists(list(values), name, source)


def id_lists(values: Sequence[Any], name: str, source: str, role: str = "item") -> pa.Array:
    """A column holding a list of ids a row as an Arrow list column, the ids
    under the id rule as one column of every id listed (numbers and text
    mixed: every id as text, as in a long column; :func:`receval.ids.canonical`).
    A missing list (None, NaN) is null; a missing id in a list stays missing
    (the reader names its row). A row holding anything but a list (one id
    where the others hold lists), or an id the rule refuses, is an
    :class:`InputError` naming its row (``column``: ``name``).

    Example:
        >>> id_lists([[1, 2], ["x"], None], "item", "recs").to_pylist()
        [['1', '2'], ['x'], None]
    """
    missing = []
    for row, value in enumerate(values):
        gone = value is None or (isinstance(value, float) and value != value)
        missing.append(gone)
        if not gone and not isinstance(value, _LISTS):
            raise InputError(
                f"column {name!r} holds a list of items a row; this row holds "
                f"{_shown(value)}, not a list of ids",
                source=source,
                row=row,
                column=name,
            )
    lists = [[] if gone else list(v) for v, gone in zip(values, missing, strict=True)]
    flat = [x for v in lists for x in v]
    present = np.array([x is not None for x in flat], dtype=bool)
    lengths = np.array([len(v) for v in lists], dtype=np.int64)
    try:
        ids = canonical([x for x in flat if x is not None], role, source)
    except InputError as exc:  # its row among the ids present: the row holding it
        rows = np.repeat(np.arange(len(lists)), lengths)[present]
        raise exc.remap(lambda r: int(rows[r])) from None
    typ = pa.large_string() if ids.dtype == object else pa.int64()
    full = np.empty(len(flat), dtype=ids.dtype)
    full[present] = ids
    items = pa.array(full, type=typ, mask=~present)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), type=pa.int32())
    return pa.ListArray.from_arrays(offsets, items, mask=pa.array(missing, type=pa.bool_()))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def to_arrow(
    obj: Any,
    source: str,
    columns: Sequence[str] | None = None,
    ids: Mapping[str, str] | None = None,
) -> pa.Table:
    """A table as an Arrow table (only ``columns`` when given, in that order).

    pandas object columns named in ``ids`` (column → role) are put under the
    id rule value by value (:func:`receval.ids.canonical`), so that mixed
    Python values never go through Arrow's type inference; other object
    columns that Arrow cannot type are read as strings (and reported by the
    reader that needs numbers).
    """
    if isinstance(obj, pa.RecordBatch):
        obj = pa.Table.from_batches([obj])
    if isinstance(obj, pa.Table):
        return obj if columns is None else obj.select(list(columns))
    if is_frame(obj):
        frame = obj.reset_index(drop=True)
        frame.columns = [str(c) for c in frame.columns]
        if columns is not None:
            frame = frame[list(columns)]
        arrays = {}
        for name in frame.columns:
            values = frame[name]
            if ids and ids.get(name) == "item" and _item_lists(values):
                arrays[name] = _list_column(values, name, source)  # expanded by item_lists
                continue
            if ids and name in ids and (values.dtype == object or values.dtype.kind == "c"):
                out = canonical(values.to_numpy(), ids[name], source)
                arrays[name] = pa.array(
                    out, type=pa.large_string() if out.dtype == object else pa.int64()
                )
                continue
            try:
                arrays[name] = pa.array(values, from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
                arrays[name] = pa.array(
                    [None if v is None else str(v) for v in values], type=pa.large_string()
                )
        return pa.table(arrays) if arrays else pa.table({})
    if type(obj).__module__.startswith("polars"):
        frame = obj if columns is None else obj.select(list(columns))
        try:
            return frame.to_arrow()
        except _ARROW_ERRORS as exc:  # a type Arrow lacks (Int128): named, with what to do
            raise InputError(
                "a polars column of a type Arrow cannot hold ("
                + ", ".join(f"{n!r}: {t}" for n, t in frame.schema.items() if "128" in str(t))
                + f"; {exc}): cast it to Int64, Float64 or String",
                source=source,
            ) from None
    raise InputError(
        f"expected a pandas, polars or pyarrow table or a mapping; got {type(obj).__name__}",
        source=source,
    )


def normalise(
    obj: Any,
    cols: Columns,
    roles: tuple[tuple[str, ...], tuple[str, ...]],
    source: str,
) -> tuple[pa.Table, dict[str, str]]:
    """A table's columns of ``roles`` as an Arrow table named by role, and
    role → the column read (the name in the file when a reader renamed it).

    Id columns are not converted here (:func:`receval.ids.canonical` reads
    them), except pandas object columns, read under the id rule value by value.
    """
    index = [str(n) for n in obj.index.names if n is not None] if is_frame(obj) else []
    found = resolve(names_of(obj), cols, roles, source, index)
    ordered = list(found)
    ids = {found[r]: r for r in ordered if r in ("user", "item")}
    table = to_arrow(obj, source, [found[r] for r in ordered], ids)
    out = pa.Table.from_arrays(list(table.columns), names=ordered)
    origin = {}
    for role, name in found.items():
        meta = table.schema.field(name).metadata or {}
        origin[role] = meta.get(b"receval.column", name.encode()).decode()
    return out, origin


def columns_table(obj: Mapping[Any, Any], source: str) -> pa.Table | None:
    """A mapping of columns (``DataFrame.to_dict("list")``: column name ->
    values, as long as each other, its names naming a user and an item
    column as a table's do) as the table it stands for; None for any other
    mapping (``user -> items``: a user named like a column is no column). A
    mapping of columns whose values Arrow cannot type (ids of two kinds in
    one column) is an error saying to make it a DataFrame."""
    if len(obj) < 2 or not all(isinstance(k, str) for k in obj):
        return None
    values = list(obj.values())
    if not all(isinstance(v, (list, tuple, np.ndarray)) for v in values):
        return None
    if len({len(v) for v in values}) != 1 or not len(values[0]):
        return None
    keys = {_key(k): k for k in obj}
    spelled = lambda role: any(_key(a) in keys for a in ALIASES[role])  # noqa: E731
    if not (spelled("user") and spelled("item")):
        return None
    try:
        return pa.table({k: list(v) if isinstance(v, tuple) else v for k, v in obj.items()})
    except _ARROW_ERRORS as exc:
        raise InputError(
            f"a mapping of columns ({', '.join(obj)}) whose columns Arrow cannot type ({exc}): "
            "make it a table, e.g. pandas.DataFrame(mapping)",
            source=source,
        ) from None


def is_list_type(typ: pa.DataType) -> bool:
    """Whether a column of this type holds a list a row (items of a user)."""
    return pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)


def _one_list_each(table: pa.Table, source: str) -> None:
    """A user's list ranked by position must be one row: two rows of lists
    of the same user would both start at rank 1."""
    import pyarrow.compute as pc

    if "user" not in table.column_names:
        return
    users = table.column("user")
    if pc.count_distinct(users, mode="all").as_py() == table.num_rows:
        return
    seen: dict[Any, int] = {}
    for row, user in enumerate(users.to_pylist()):
        if user in seen:
            raise InputError(
                "this user has a list of items on {rows}: one list per user (each list is "
                "ranked by position, from 1)",
                source=source,
                row=row,
                other_row=seen[user],
                user=user,
            )
        seen[user] = row


def item_lists(
    table: pa.Table, rank: bool, source: str, names: Mapping[str, str] | None = None
) -> tuple[pa.Table, np.ndarray] | None:
    """A table holding a list of items a row (a user's list, best first), as
    one row per listed item: ``(the long table, the given row of each long
    row)``; None when its ``item`` column holds no lists.

    The same for a file and a table (docs/inputs.md): with ``rank``, a rank
    column is the position in the list (1 = first) unless the table has one;
    another column holding a list a row (scores, grades) is read along the
    items, value by value, and must hold as many values as the row's items;
    a column of one value a row is that value for each of the row's items. A
    missing list (null) is a row of no item. ``names``: the caller's name of
    each column (what an error names), where the table's are the roles'.

    Example:
        >>> t = pa.table({"user": [1, 2], "item": [[10, 11], [12]]})
        >>> long, rows = item_lists(t, True, "recommendations")
        >>> long.to_pydict(), rows.tolist()
        ({'user': [1, 1, 2], 'item': [10, 11, 12], 'rank': [1, 2, 1]}, [0, 0, 1])
    """
    if "item" not in table.column_names or not is_list_type(table.schema.field("item").type):
        return None
    import pyarrow.compute as pc

    items = table.column("item").combine_chunks()
    counts = pc.list_value_length(items).fill_null(0).to_numpy(zero_copy_only=False)
    counts = counts.astype(np.int64, copy=False)
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    arrays, fields = [], []
    for field in table.schema:
        column = table.column(field.name)
        if field.name == "item":
            values = pc.list_flatten(items)
        elif is_list_type(field.type):
            named = (field.metadata or {}).get(b"receval.column", field.name.encode()).decode()
            name = (names or {}).get(field.name, named)  # the caller's name of the column
            values = column.combine_chunks()
            given = pc.list_value_length(values).fill_null(0).to_numpy(zero_copy_only=False)
            wrong = np.flatnonzero(given != counts)
            if len(wrong):
                r = int(wrong[0])
                raise InputError(
                    f"the list in column {name!r} holds {int(given[r])} values for "
                    f"{int(counts[r])} items: one value per listed item",
                    source=source,
                    row=r,
                    column=name,
                )
            values = pc.list_flatten(values)
        else:
            values = column.take(pa.array(rows))
        arrays.append(values)
        fields.append(field.with_type(values.type))
    if rank and "rank" not in table.column_names:
        _one_list_each(table, source)
        starts = np.cumsum(counts) - counts
        position = np.arange(len(rows), dtype=np.int64) - np.repeat(starts, counts) + 1
        arrays.append(pa.array(position, type=pa.int64()))
        fields.append(pa.field("rank", pa.int64()))
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return pa.Table.from_arrays(arrays, schema=schema), rows


def renamed(table: pa.Table, found: Mapping[str, str]) -> pa.Table:
    """The table with each found column renamed to its role, remembering
    its original name (field metadata ``receval.column``) so that a later
    :func:`normalise` reports the file's name."""
    back = {name: role for role, name in found.items()}
    fields = []
    for f in table.schema:
        if f.name in back:
            original = (f.metadata or {}).get(b"receval.column", f.name.encode())
            f = f.with_name(back[f.name]).with_metadata({b"receval.column": original})
        fields.append(f)
    return pa.Table.from_arrays(list(table.columns), schema=pa.schema(fields))


def kind_of(col: pa.ChunkedArray | np.ndarray, role: str, source: str) -> str:
    """The kind (int / str) of a whole column under the id rule."""
    if isinstance(col, pa.ChunkedArray):
        typ = col.type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        if pa.types.is_boolean(typ):
            return STR
        if pa.types.is_dictionary(col.type) and len(col) and not col.null_count:
            # the values its rows use, each once (not the column decoded: ~16 bytes a row)
            return "int" if canonical(used_values(col)[1], role, source).dtype != object else STR
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            values = col.cast(typ) if typ != col.type else col
            if not any_number_literal(values):
                return STR  # no number literal: text under the text rule
        if pa.types.is_integer(typ) and not pa.types.is_uint64(typ):
            return "int"
    return "int" if canonical(col, role, source).dtype != object else STR
