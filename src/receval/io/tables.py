"""In-memory inputs: pandas, polars and pyarrow tables, and plain mappings.

Everything is turned into NumPy columns (:class:`RecsData`, :class:`TruthData`)
with every value checked; a bad value raises :class:`~receval.errors.InputError`
naming the table, the 0-based row, the user and the item.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from receval._malloc import check_headroom
from receval.errors import InputError, option
from receval.ids import SMALL_COLUMN, STR, arrow_bools, by_codes, canonical, first_true, numbers
from receval.io.columns import (
    RECS,
    TRUTH,
    columns_of,
    columns_table,
    is_list_type,
    is_table,
    item_lists,
    kind_of,
    no_order,
    normalise,
    read_number,
)
from receval.io.inputs import is_path, read_located
from receval.records import Columns, RecsData, TruthData

__all__ = ["iter_recs", "read_recs", "read_truth"]

#: Recommendation rows per chunk when a large table is grouped by user.
CHUNK_ROWS = 500_000


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
        out = np.empty(len(values), dtype=np.float64)
        for i, v in enumerate(values):
            try:
                out[i] = read_number(v)
            except (TypeError, ValueError):
                found = "a missing value (empty or NaN)" if v is None else _as_read(col, i, v)
                raise InputError(
                    f"{role} must be {expected}; found {found}", source=source, row=i
                ) from None
        return out
    if col.null_count:
        row = first_true(col.is_null().to_numpy(zero_copy_only=False))
        raise InputError(
            f"{role} must be {expected}; found a missing value (empty or NaN)",
            source=source,
            row=row,
        )
    values = numbers(col)
    if keep_ints and values.dtype.kind in "iu":
        return values
    return values.astype(np.float64, copy=False)


def _as_read(col: pa.ChunkedArray, row: int, value: Any) -> str:
    """A value that is no number, shown as the input holds it: text as
    Arrow writes its type (a date ``'2024-01-01'``, a boolean ``'true'``),
    not as Python's repr of the converted value (``np.datetime64(...)``)."""
    if isinstance(value, str):
        return repr(value)
    try:
        return repr(col.slice(row, 1).cast(pa.string()).to_pylist()[0])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return repr(value)


#: Within :func:`shared_dictionaries`: the canonical ids of whole dictionaries, by
#: the dictionary's buffers and the kind asked for.
_SHARED: ContextVar[dict[Any, np.ndarray | None] | None] = ContextVar(
    "receval_shared_dictionaries", default=None
)


@contextlib.contextmanager
def shared_dictionaries(shared: dict[Any, np.ndarray | None]) -> Iterator[None]:
    """Within the block, the dictionary-encoded id columns read (the chunks
    of one larger column: :mod:`receval.io.stream`) have their whole
    dictionary put under the id rule once, kept in ``shared`` (one dict for
    all the chunks of an evaluation, on every thread), and taken by each
    chunk's codes: the same Python strings for every chunk, not new ones per
    chunk. The values are those of each chunk read alone."""
    token = _SHARED.set(shared)
    try:
        yield
    finally:
        _SHARED.reset(token)


def _whole_dictionary(
    values: pa.Array, role: str, source: str, kind: str | None, shared: dict[Any, Any]
) -> np.ndarray | None:
    """The canonical ids of a whole dictionary (kept in ``shared``), or None
    when that cannot stand for the chunk's own values: no kind forced (the
    values used decide it), or a value that this chunk may not use fails the
    rule or is of another kind (an unused text category among integer ids);
    the chunk's own values are then read alone, and any error is theirs."""
    if kind is None:
        return None
    key = (_where(values), len(values), kind)
    if key not in shared:
        check_headroom((16 << 20) + 128 * len(values) + values.nbytes)
        try:
            whole = canonical(values, role, source, kind)
        except InputError:
            whole = None
        if whole is not None and (whole.dtype == object) != (kind == STR):
            whole = None
        shared[key] = whole
    return shared[key]


def _where(values: pa.Array) -> tuple[int, ...]:
    """Where an array's buffers are in memory: the same for the slices of one
    column's dictionary, which is how chunks that share one are told."""
    return tuple(b.address if b is not None else 0 for b in values.buffers())


def _one_dictionary(col: pa.ChunkedArray) -> bool:
    """Whether every chunk of a dictionary-encoded column holds the same
    dictionary (the same buffers: the slices of one column)."""
    keys = {_where(c.dictionary) for c in col.chunks}
    return len(keys) <= 1 and col.num_chunks > 0


def _ids(col: pa.ChunkedArray, role: str, source: str, kind: str | None) -> np.ndarray:
    """A column of ids under the id rule (:func:`receval.ids.canonical`; ``kind``
    as there). Strings, plain or dictionary-encoded, are put under the rule once
    per distinct value and taken back row by row: an id repeated on many rows is
    one Python string (8 bytes a row, not ~60), read once. The values are those
    of :func:`~receval.ids.canonical` of the column, whose rule depends on each
    value alone; a missing value is reported by it (naming the row)."""
    typ = col.type
    dictionary = pa.types.is_dictionary(typ)
    text = typ.value_type if dictionary else typ
    if (
        col.null_count
        or not len(col)
        or not (pa.types.is_string(text) or pa.types.is_large_string(text))
        or (not dictionary and len(col) <= SMALL_COLUMN)  # small: no encoding to load
    ):
        return canonical(col, role, source, kind)
    import pyarrow.compute as pc

    if dictionary and _one_dictionary(col):  # as it is (unifying would copy the dictionary)
        encoded = col
    else:
        encoded = col.unify_dictionaries() if dictionary else pc.dictionary_encode(col)
    parts = [numbers(c.indices) for c in encoded.chunks if len(c)]
    codes = parts[0] if len(parts) == 1 else np.concatenate(parts)
    values = encoded.chunk(0).dictionary
    if values.null_count:  # a null among a dictionary's values: its row is named there
        return canonical(col, role, source, kind)
    shared = _SHARED.get()
    if dictionary and shared is not None and len(values) <= 2 * len(codes):
        # a chunk of a larger column whose dictionary is not much longer than the
        # chunk (the items of a large chunk of recommendations): the whole dictionary
        # once, for all the chunks (users, or the few items of a chunk of truth: the
        # values used, each chunk on its own, as below)
        whole = _whole_dictionary(values, role, source, kind, shared)
        if whole is not None:
            return whole[codes]
    used = np.bincount(codes, minlength=len(values)) > 0
    if not used.all():  # a dictionary shared with other rows: only this column's values
        values = values.filter(arrow_bools(used))
        codes = (np.cumsum(used) - 1)[codes]
    # Arrow's conversion to Python strings ends the process when it runs out of
    # memory: under an address-space limit, room for them is made sure of first
    check_headroom((16 << 20) + 128 * len(values) + values.nbytes)
    return by_codes(lambda: canonical(values, role, source, kind), codes)


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
    """Ranks must be positive integers; returns them as int64, or as int32
    when they are (the column as read: no copy, the engine reads either)."""
    if rank.dtype.kind in "iu":  # integers: only the sign to check (one reduction, no mask)
        if not len(rank) or rank.min() >= 1:
            if rank.dtype == np.int32:
                return rank
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


def read_order(
    column: pa.ChunkedArray, role: str, users: np.ndarray, items: np.ndarray, source: str
) -> np.ndarray:
    """A recommendations' ``rank`` or ``score`` column (``role``) as
    :func:`read_recs` reads it: ranks positive integers (int64, or int32 as
    read), scores finite float64. A value that is not (text, a missing value,
    NaN, an infinity, a rank below 1) is an :class:`~receval.errors.InputError`
    naming its row, user and item (``users``, ``items``: the rows' ids) and
    the value found; ``receval check`` refuses a bad score or rank with it."""
    expected = "a positive integer" if role == "rank" else "a finite number"
    try:
        values = _numbers(column, role, source, expected, role == "rank")
    except InputError as exc:
        raise _locate(exc, users, items) from None
    if role == "rank":
        return check_ranks(values, users, items, source)
    check_scores(values, users, items, source)
    return values


def check_grades(
    grades: np.ndarray,
    users: np.ndarray,
    items: np.ndarray,
    source: str,
    negative_grades: str = "error",
) -> None:
    """Grades must be finite and non-negative (negative ones are allowed with
    ``negative_grades="unjudged"``: pooled but unjudged items, as trec_eval reads them)."""
    bad = ~np.isfinite(grades)
    if negative_grades == "error":
        bad |= grades < 0
    if bad.any():
        i = first_true(bad)
        hint = ""
        if np.isfinite(grades[i]):
            hint = (
                " (a negative grade marks an item pooled but not judged, as trec_eval reads "
                "it, with " + option("negative_grades", "unjudged") + ")"
            )
        raise InputError(
            f"relevance must be a non-negative number; found {grades[i]:g}{hint}",
            source=source,
            row=i,
            user=users[i],
            item=items[i],
        )


Kinds = tuple[str | None, str | None]
_Read = TypeVar("_Read", RecsData, TruthData)


def read_recs(
    obj: Any,
    cols: Columns = Columns(),
    source: str = "recommendations",
    kinds: Kinds = (None, None),
) -> RecsData:
    """Recommendations from a table (user, item, rank or score; columns
    detected as :mod:`receval.io.columns` says) or a mapping ``user ->
    sequence of items`` (best first). ``kinds`` forces the id kind of the
    user and item columns (``"str"``) when this table is one chunk of a
    larger input. With both a rank and a score column, the rank orders.
    A path is read as a file (:mod:`receval.io.inputs`)."""
    if is_path(obj):
        return read_located(obj, "recommendations", cols, lambda t, c, s: read_recs(t, c, s, kinds))
    if isinstance(obj, Mapping) and (table := columns_table(obj, source)) is not None:
        return read_recs(table, cols, source, kinds)  # a mapping of columns: its table
    if isinstance(obj, Mapping):
        return _recs_from_mapping(obj, source, kinds)
    if not is_table(obj):
        raise InputError(
            "recommendations must be a pandas/polars/pyarrow table or a mapping "
            f"user -> list of items; got {type(obj).__name__}",
            source=source,
        )
    table, found = normalise(obj, cols, RECS, source)
    table, rows = long_rows(table, found, True, source)
    read = lambda t, k: _recs_of(t, dict(found), source, k, obj)  # noqa: E731
    return _given_rows(lambda: _earliest(read, table, kinds), rows)


def long_rows(
    table: pa.Table, found: dict[str, str], rank: bool, source: str
) -> tuple[pa.Table, np.ndarray | None]:
    """A table of item lists (:func:`~receval.io.columns.item_lists`) as one
    row per listed item, and the given row of each (None: the table as given);
    the lists' order is the rank (found as ``rank``, as a file's lists are)."""
    lists = item_lists(table, rank, source, found)
    if lists is None:
        return table, None
    if rank:
        found.setdefault("rank", "rank")
    return lists


def _given_rows(read: Callable[[], _Read], rows: np.ndarray | None) -> _Read:
    """``read()``, knowing the given table's row of each of its rows (``rows``,
    when the table read is its item lists expanded: :attr:`RecsData.given`),
    and whose error names the given table's row."""
    if rows is None:
        return read()
    try:
        data = read()
    except InputError as exc:
        raise exc.remap(lambda r: int(rows[r])) from None
    data.given = rows
    return data


def _earliest(read: Callable[[pa.Table, Kinds], _Read], table: pa.Table, kinds: Kinds) -> _Read:
    """``read(table, kinds)``, or the error of the table's first offending row.

    The checks run one after the other (ids, then a column's missing values,
    then its finite values, ...), each naming its own first offending row; so
    when one fails, the rows before that one are read again (with the whole
    column's id kinds), until they pass: the error raised names the first row
    of the table that any check refuses (SPEC §2.3), whatever check finds it.
    """
    try:
        return read(table, kinds)
    except InputError as exc:
        first = exc
    if first.row is not None and first.row > 0:
        with contextlib.suppress(InputError):  # the kinds of the whole columns, when readable
            kinds = tuple(
                k or kind_of(table.column(role), role, "")
                for k, role in zip(kinds, ("user", "item"), strict=True)
            )  # type: ignore[assignment]
    while first.row:  # the rows before the first refused, read again until they pass
        try:
            read(table.slice(0, first.row), kinds)
        except InputError as exc:
            if exc.row is None:  # an error of no row in the prefix: the first one stands
                break
            first = exc
        else:
            break
    raise first from None


def _items_of(table: pa.Table, users: np.ndarray, source: str, kind: str | None) -> np.ndarray:
    """The item column's ids (:func:`of_users`)."""
    return of_users(users, lambda: _ids(table.column("item"), "item", source, kind))


def of_users(users: np.ndarray, read: Callable[[], np.ndarray]) -> np.ndarray:
    """``read()`` (a table's item ids, read after its user ids ``users``),
    whose error of a row (a missing item id) names that row's user too, as
    every later error of a row names it."""
    try:
        return read()
    except InputError as exc:
        raise exc.of_user(lambda r: users[r] if 0 <= r < len(users) else None) from None


def _recs_of(
    table: pa.Table, found: dict[str, str], source: str, kinds: Kinds, obj: Any
) -> RecsData:
    """Recommendations from a table whose columns are named by role."""
    users = _ids(table.column("user"), "user", source, kinds[0])
    items = _items_of(table, users, source, kinds[1])
    score = rank = None
    if "rank" in found:
        rank = read_order(table.column("rank"), "rank", users, items, source)
        found.pop("score", None)
    elif "score" in found:
        score = read_order(table.column("score"), "score", users, items, source)
    else:
        raise no_order(columns_of(obj), source)
    return RecsData(users, items, score, rank, rows=table.num_rows, source=source, columns=found)


def _run_starts(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """The rows (after the first) where a column's value changes, and how many
    distinct values it holds (no nulls). A dictionary-encoded column whose
    dictionary holds each value once (a file read with
    :func:`receval.io.files.compact_ids`, a pandas categorical) is read by
    its codes, never decoded."""
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.unify_dictionaries()
        dictionary = column.chunk(0).dictionary
        if len(pc.unique(dictionary)) == len(dictionary):  # codes compare as their values
            parts = [c.indices.to_numpy(zero_copy_only=False) for c in column.chunks]
            codes = np.concatenate(parts) if len(parts) > 1 else parts[0]
            starts = np.flatnonzero(codes[1:] != codes[:-1]) + 1
            return starts, int(np.count_nonzero(np.bincount(codes, minlength=len(dictionary))))
        column = column.cast(column.type.value_type)
    change = pc.not_equal(column.slice(1), column.slice(0, len(column) - 1))
    starts = np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1
    return starts, int(pc.count_distinct(column).as_py())


def _user_boundaries(column: pa.ChunkedArray, chunk_rows: int) -> list[int] | None:
    """Row offsets splitting a table into chunks of complete users, or None when
    the rows of some user are not contiguous."""
    n = len(column)
    starts, distinct = _run_starts(column)
    if len(starts) + 1 != distinct:
        return None
    bounds = [0]
    for target in range(chunk_rows, n, chunk_rows):
        i = int(np.searchsorted(starts, target))
        if i < len(starts) and starts[i] > bounds[-1]:
            bounds.append(int(starts[i]))
    bounds.append(n)
    return list(dict.fromkeys(bounds))


def iter_recs(
    obj: Any,
    cols: Columns = Columns(),
    chunk_rows: int | None = None,
    source: str = "recommendations",
) -> Iterator[tuple[RecsData, int]]:
    """Recommendations as chunks of complete users, each with the row of the
    table it starts at. A large table whose users' rows are contiguous is cut
    into chunks of about ``chunk_rows`` rows; anything else is one chunk.
    Every chunk's ids have the kind of the whole column (never the chunk's).
    ``source``: the input's name in errors (a file's path)."""
    chunk_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows
    if is_path(obj):
        yield read_recs(obj, cols), 0
        return
    if isinstance(obj, Mapping) or not is_table(obj) or _rows(obj) <= chunk_rows:
        yield read_recs(obj, cols, source), 0
        return
    table, found = normalise(obj, cols, RECS, source)
    table = table.rename_columns([found[r] for r in table.column_names])
    cols = Columns(**{r: found.get(r, "") for r in RECS[0]})
    user, item = table.column(found["user"]), table.column(found["item"])
    bounds = None
    if not user.null_count and not is_list_type(item.type):  # lists: one chunk, expanded
        bounds = _user_boundaries(user, chunk_rows)
    if bounds is None or len(bounds) <= 2:
        yield read_recs(table, cols), 0
        return
    kinds = (kind_of(user, "user", source), kind_of(item, "item", source))
    for start, end in itertools.pairwise(bounds):
        try:
            chunk = read_recs(table.slice(start, end - start), cols, source, kinds)
        except InputError as exc:
            raise exc.remap(lambda r, at=start: r + at) from None
        chunk.rows = end - start
        yield chunk, start


def _rows(obj: Any) -> int:
    return int(obj.num_rows if hasattr(obj, "num_rows") else len(obj))


def _recs_from_mapping(
    obj: Mapping[Any, Any], source: str, kinds: Kinds = (None, None)
) -> RecsData:
    """``user -> items, best first`` (ranks 1, 2, ...), or ``user -> {item:
    score}``, the run of ranx, pytrec_eval and ir_measures (ordered by score
    descending, ties by the tie rule, as a table with a score column)."""
    scored = [isinstance(v, Mapping) for v in obj.values()]
    if any(scored):
        if not all(scored):
            user = list(obj)[scored.index(False)]
            raise InputError(
                "expected every user's recommendations in one form: this mapping holds "
                "{item: score} mappings and, for this user, a "
                f"{type(obj[user]).__name__}",
                source=source,
                user=user,
            )
        return _scored_mapping(obj, source, kinds)
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
    u = canonical(users + empty, "user", source, kinds[0])
    i = of_users(u, lambda: canonical(items, "item", source, kinds[1]))
    return RecsData(
        users=u[: len(users)],
        items=i,
        score=None,
        rank=np.asarray(ranks, dtype=np.int64),
        rows=len(users),
        source=source,
        empty_users=u[len(users) :],
    )


def _scored_mapping(obj: Mapping[Any, Mapping[Any, Any]], source: str, kinds: Kinds) -> RecsData:
    users: list[Any] = []
    items: list[Any] = []
    scores: list[Any] = []
    empty: list[Any] = []
    for user, scored in obj.items():
        if not scored:
            empty.append(user)
        users.extend([user] * len(scored))
        items.extend(scored.keys())
        scores.extend(scored.values())
    u = canonical(users + empty, "user", source, kinds[0])
    i = of_users(u, lambda: canonical(items, "item", source, kinds[1]))
    score = np.empty(len(scores), dtype=np.float64)
    for j, value in enumerate(scores):
        try:
            score[j] = read_number(value)
        except (TypeError, ValueError):
            raise InputError(
                f"score must be a finite number; found {value!r}",
                source=source,
                user=users[j],
                item=items[j],
            ) from None
    check_scores(score, u, i, source)
    return RecsData(
        users=u[: len(users)],
        items=i,
        score=score,
        rank=None,
        rows=len(users),
        source=source,
        empty_users=u[len(users) :],
    )


def read_truth(
    obj: Any,
    cols: Columns = Columns(),
    source: str = "truth",
    kinds: Kinds = (None, None),
    negative_grades: str = "error",
) -> TruthData:
    """Truth from a table (user, item[, relevance]) or a mapping
    ``user -> iterable of items`` / ``user -> mapping item -> grade``.
    ``negative_grades``: ``error``, or ``unjudged`` to keep negative grades
    (pooled but unjudged items, trec_eval's reading).

    A column named like a grade (``relevance``, ``rating``, ``grade``,
    ``label``, ...; :data:`receval.io.columns.ALIASES`) or named by
    ``cols.relevance`` is the graded relevance; ``TruthData.columns`` says
    which column it was. A path is read as a file (:mod:`receval.io.inputs`)."""
    if is_path(obj):
        return read_located(
            obj, "truth", cols, lambda t, c, s: read_truth(t, c, s, kinds, negative_grades)
        )
    if isinstance(obj, Mapping) and (table := columns_table(obj, source)) is not None:
        return read_truth(table, cols, source, kinds, negative_grades)
    if isinstance(obj, Mapping):
        return _truth_from_mapping(obj, source, kinds, negative_grades)
    if not is_table(obj):
        raise InputError(
            "truth must be a pandas/polars/pyarrow table or a mapping user -> items; "
            f"got {type(obj).__name__}",
            source=source,
        )
    table, found = normalise(obj, cols, TRUTH, source)
    table, rows = long_rows(table, found, False, source)
    read = lambda t, k: _truth_of(t, found, source, k, negative_grades)  # noqa: E731
    return _given_rows(lambda: _earliest(read, table, kinds), rows)


def _truth_of(
    table: pa.Table, found: dict[str, str], source: str, kinds: Kinds, negative_grades: str
) -> TruthData:
    """Truth from a table whose columns are named by role."""
    users = _ids(table.column("user"), "user", source, kinds[0])
    items = _items_of(table, users, source, kinds[1])
    graded = "relevance" in found
    if graded:
        try:
            grades = _numbers(
                table.column("relevance"), "relevance", source, "a non-negative number"
            )
        except InputError as exc:
            raise _locate(exc, users, items) from None
        check_grades(grades, users, items, source, negative_grades)
    else:
        grades = np.ones(table.num_rows)
    return TruthData(
        users, items, grades, rows=table.num_rows, graded=graded, source=source, columns=found
    )


def _truth_from_mapping(
    obj: Mapping[Any, Any],
    source: str,
    kinds: Kinds = (None, None),
    negative_grades: str = "error",
) -> TruthData:
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
    u = canonical(users + empty, "user", source, kinds[0])
    i = of_users(u, lambda: canonical(items, "item", source, kinds[1]))
    g = np.asarray(grades, dtype=np.float64)
    check_grades(g, u, i, source, negative_grades)
    return TruthData(
        users=u[: len(users)],
        items=i,
        grades=g,
        rows=len(users),
        graded=graded,
        source=source,
        empty_users=u[len(users) :],
    )
