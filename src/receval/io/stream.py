"""Parquet files larger than memory, evaluated by chunks of complete users.

Two Parquet inputs are read batch by batch, never whole, and cut into pairs
(recommendations, truth) that each hold *every* row of their users:

* **Merge** (files sorted by user, as most pipelines write them): both files
  are read in step; a pair ends just before the last user read so far, whose
  rows may continue in the next batch. Memory: a few batches.
* **Partition** (anything else): one pass writes both files into hash buckets
  of users (Parquet, in a temporary directory, with each row's original row
  number), then each bucket is one pair. Memory: one bucket.

In-memory tables take the merge too: sorted by user as they are, or put in
user order first (:func:`user_order`, each user's rows in their order; errors
name the row as given).

Sortedness is checked on every batch as it is read; the first batch out of
order switches to partitioning (an error found on the way is only reported
once the files are known to be sorted). The pairs (:class:`StreamedFiles`) are
evaluated by the engine of streamed inputs (:class:`receval.engines.local.Streamed`),
whose values do not depend on how users are cut, so the numbers are bit-for-bit
those of reading the files whole. Errors name the file and the row of the file.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import receval.ids as _id_rules
from receval._lazy import pc
from receval.errors import InputError, PolicyError
from receval.ids import (
    INT,
    NUMBER_LITERAL,
    SMALL_COLUMN,
    STR,
    arrow_ints,
    canonical,
    combine_kinds,
    distinct_sorted,
    kind,
    numbers,
    one_chunk,
    runs_in_order,
)
from receval.io.columns import RECS, TRUTH, normalise, renamed, resolve
from receval.io.files import FileInfo, checked_path, fail, is_parquet
from receval.io.inputs import FileInput, is_path, opened
from receval.io.manifest import notes_for
from receval.io.tables import CHUNK_ROWS, read_recs, read_truth, shared_dictionaries
from receval.records import Columns, Pair, PairSource

__all__ = ["ParquetInput", "StreamedFiles", "is_parquet", "open_parquet", "pairs"]

_CANON = Columns()  # chunks carry their roles' names: detected as such


def _type_kind(typ: pa.DataType) -> str | None:
    """The id kind that an Arrow type alone decides (int / str), or None
    when the values decide (floats, uint64, strings: ``"7"`` is the integer 7
    under the text rule of :mod:`receval.ids`, others)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_integer(typ) and not pa.types.is_uint64(typ):
        return INT
    if pa.types.is_boolean(typ):
        return STR
    return None


def _plain_text(col: pa.ChunkedArray) -> bool:
    """Strings none of which is a number literal: their own canonical form."""
    typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        return False
    values = col.cast(typ) if typ != col.type else col
    return not pc.any(pc.match_substring_regex(values, NUMBER_LITERAL)).as_py()


def _arrow_ids(col: pa.ChunkedArray, want: str, role: str, source: str) -> pa.ChunkedArray:
    """A column of ids as int64 (kind int) or large strings (kind str),
    values under the id rule (never Arrow's own casts of floats)."""
    target = pa.int64() if want == INT else pa.large_string()
    if col.type == target:
        return col
    if _type_kind(col.type) == INT or (want == STR and _plain_text(col)):
        return col.cast(target)
    ids = canonical(col, role, source, want)
    if want == INT:
        return pa.chunked_array([arrow_ints(ids)], type=target)
    return pa.chunked_array([pa.array(ids, type=target)])


def _pieces(file: Any, rows: int, columns: list[str]) -> Iterator[pa.Table]:
    """The file's rows in order, in tables of at most about ``rows`` rows.

    Row group by row group: ``ParquetFile.iter_batches`` over a whole file
    holds on to what it has read until the end (2.6 MB per million rows
    read here), which would make memory grow with the file.
    """
    meta = file.metadata
    for i in range(meta.num_row_groups):
        n = meta.row_group(i).num_rows
        if n <= 4 * rows:
            group = file.read_row_group(i, columns=columns)
            for at in range(0, n, rows):
                yield group.slice(at, rows)
        else:  # a huge row group: its batches (the reader lives for this group only)
            for batch in file.iter_batches(batch_size=rows, row_groups=[i], columns=columns):
                yield pa.Table.from_batches([batch])


def _largest(col: pa.ChunkedArray) -> float | None:
    """``pc.max(col.cast(pa.float64()))``: the largest value as a float, nulls
    and NaN left out (None when none is left). A small column of floats, or of
    integers that are exact as floats, is read by NumPy (no pyarrow.compute
    to load for a small file: issue #33); any other through Arrow, whose cast
    refuses integers beyond 2**53 and text (ArrowInvalid)."""
    typ = col.type
    if len(col) <= SMALL_COLUMN and (pa.types.is_floating(typ) or pa.types.is_integer(typ)):
        values = np.array([v for v in col.to_pylist() if v is not None], dtype=object)
        if pa.types.is_floating(typ) or all(abs(v) <= 2**53 for v in values):
            kept = values.astype(np.float64)
            kept = kept[~np.isnan(kept)]
            return float(kept.max()) if len(kept) else None
    if _exact_as_float(typ):  # every value exact as a float: the largest, then converted
        top = pc.max(col).as_py()  # (no float64 copy of the column, 7 ms per million rows)
        return None if top is None else float(top)
    return pc.max(col.cast(pa.float64())).as_py()


def _exact_as_float(typ: pa.DataType) -> bool:
    """Types whose every value is a float64 exactly (so the cast to float64
    keeps their order): integers of at most 32 bits, float32 and float64."""
    return (pa.types.is_integer(typ) and typ.bit_width <= 32) or (
        pa.types.is_float32(typ) or pa.types.is_float64(typ)
    )


def _ascends(ids: np.ndarray) -> bool:
    """Whether int64 ids ascend: one compiled walk writing nothing (no
    array of the chunk's size allocated), or :func:`distinct_sorted`."""
    native = _id_rules._native  # the compiled module as receval.ids uses it (or None)
    if native is not None and hasattr(native, "user_walk") and ids.dtype == np.int64:
        count, _ = native.user_walk(np.ascontiguousarray(ids), None, None, None)
        return bool(count >= 0)
    return distinct_sorted(ids) is not None


def _in_order(user: Any, last: Any) -> bool:
    """Whether a batch's users ascend, from ``last`` (the previous batch's
    last user, or None)."""
    n = len(user)
    if pa.types.is_int64(user.type) and n and not user.null_count:
        prev = None if last is None else last.as_py()
        for chunk in user.chunks:  # each chunk as it is (no copy), then the joins
            if len(chunk):
                ids = numbers(chunk)
                if not _ascends(ids) or (prev is not None and ids[0] < prev):
                    return False
                prev = ids[-1]
        return True
    if n > 1 and not pc.all(pc.greater_equal(user.slice(1), user.slice(0, n - 1))).as_py():
        return False
    return not (n and last is not None and pc.less(user[0], last).as_py())


@dataclass
class ParquetInput:
    """A Parquet file of recommendations or truth, opened but not read."""

    path: str
    role: str  # "recommendations" or "truth"
    file: Any  # pyarrow.parquet.ParquetFile
    read: list[str]  # the file's columns to read
    names: list[str]  # their canonical names
    info: FileInfo
    user_kind: str
    item_kind: str
    _max_grade: float | None = field(default=None, init=False, repr=False)
    #: users known to ascend (checked whole by :meth:`is_sorted`): not checked again
    #: batch by batch while merging
    sorted_known: bool = field(default=False, init=False, repr=False)

    @property
    def num_rows(self) -> int:
        return int(self.file.metadata.num_rows)

    @property
    def user_type(self) -> pa.DataType:
        """The type user ids are read as: int64 or large strings."""
        return pa.int64() if self.user_kind == "int" else pa.large_string()

    @property
    def graded(self) -> bool:
        return "relevance" in self.names

    def batches(self, rows: int) -> Iterator[tuple[pa.Table, int]]:
        """Tables of about ``rows`` rows with canonical column names (user
        ids as int64 or large strings), each with the file row it starts at."""
        start = 0
        for table in self._pieces(rows, self.read):
            table = table.rename_columns(self.names)
            user = table.column("user")
            if user.null_count:
                row = int(np.flatnonzero(user.is_null().to_numpy(zero_copy_only=False))[0])
                raise InputError("missing user id", source=self.path, row=start + row)
            if user.type != self.user_type:
                try:
                    ids = _arrow_ids(user, self.user_kind, "user", self.path)
                except InputError as exc:
                    raise exc.remap(lambda r, at=start: r + at) from None
                table = table.set_column(0, "user", ids)
            yield table, start
            start += table.num_rows

    def _pieces(self, rows: int, columns: list[str]) -> Iterator[pa.Table]:
        return _pieces(self.file, rows, columns)

    def read_all(self) -> pa.Table:
        """The whole file (for the in-memory path), its columns named by their
        roles, each remembering the file's own name (:func:`renamed`)."""
        table = self.file.read(columns=self.read)
        return renamed(table, dict(zip(self.names, self.read, strict=True)))

    def max_grade(self) -> float:
        """The largest grade of the file (1 without grades), from the row
        groups' statistics when every one has them, else from one pass (once:
        the value is kept). A bad grade is reported when its chunk is read."""
        if self._max_grade is None:
            self._max_grade = self._find_max_grade()
        return self._max_grade

    def _find_max_grade(self) -> float:
        if not self.graded:
            return 1.0
        col = self.read[self.names.index("relevance")]
        meta = None if self.file is None else self.file.metadata
        try:
            index = meta.schema.to_arrow_schema().get_field_index(col)
            groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
            stats = [g.column(index).statistics for g in groups]
            if all(s is not None and s.has_min_max for s in stats):
                values = [float(s.max) for s in stats if s.num_values]
                if all(math.isfinite(v) for v in values):
                    return max(values, default=1.0)
        except (TypeError, ValueError, IndexError, AttributeError):
            pass
        best = -math.inf
        try:
            for piece in self._pieces(CHUNK_ROWS, [col]):
                top = _largest(piece.column(0))
                if top is not None and math.isfinite(top):
                    best = max(best, top)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return 1.0
        return best if math.isfinite(best) else 1.0

    def is_sorted(self) -> bool:
        """Whether the users are in ascending order (one pass over that column)."""
        last = None
        col = self.read[0]
        for piece in self._pieces(CHUNK_ROWS, [col]):
            user = _arrow_ids(piece.column(0), self.user_kind, "user", self.path)
            if not _in_order(user, last):
                return False
            if len(user):
                last = user[-1]
        return True

    def column_kind(self, role: str) -> str:
        """The id kind of the whole user or item column: from its type, or
        from one pass over its values (floats, uint64), so that every chunk
        gets the kind of the column read whole."""
        col = self.read[self.names.index(role)]
        decided = _type_kind(self.file_type(col))
        if decided is not None:
            return decided
        kinds, start = [], 0
        for piece in self._pieces(CHUNK_ROWS, [col]):
            try:
                kinds.append(kind(canonical(piece.column(0), role, self.path)))
            except InputError as exc:  # the file's row, not the piece's
                raise exc.remap(lambda r, at=start: r + at) from None
            start += piece.num_rows
        return combine_kinds(kinds)

    def user_at(self, row: int) -> Any:
        """The user id of one file row, as the id rule reads it; None when it
        is missing or not an id (then the error names only the row)."""
        col, start = self.read[self.names.index("user")], 0
        for piece in self._pieces(CHUNK_ROWS, [col]):
            if row < start + piece.num_rows:
                one = piece.column(0).slice(row - start, 1)
                try:  # as the whole column reads it (its kind found before the items')
                    return canonical(one, "user", self.path, self.user_kind)[0]
                except InputError:
                    return None
            start += piece.num_rows
        return None

    def file_type(self, column: str) -> pa.DataType:
        """The Arrow type of one of the file's columns."""
        return self.file.schema_arrow.field(column).type


@dataclass
class TableInput(ParquetInput):
    """An in-memory Arrow table read like a file (``file`` is None)."""

    table: Any = None
    #: the caller's row of each row of ``table`` when the table is the caller's
    #: rows put in user order (:func:`user_order`), else None
    rows: np.ndarray | None = None
    #: the table as the caller gave it, once ``table`` is it put in user order
    given: Any = None
    #: the caller's row of each row, when the caller's table holds a list of
    #: items a row and this one an item a row (:func:`~receval.io.columns.item_lists`)
    listed: np.ndarray | None = None

    @property
    def num_rows(self) -> int:
        return int(self.table.num_rows)

    def row_of(self, row: Callable[[int], int]) -> Callable[[int], int]:
        """``row`` (a pair's row → a row of ``table``) continued to the caller's row."""
        rows, listed = self.rows, self.listed
        if rows is None and listed is None:
            return row
        if listed is None:
            return lambda i: int(rows[row(i)])  # type: ignore[index]
        if rows is None:
            return lambda i: int(listed[row(i)])
        return lambda i: int(listed[rows[row(i)]])

    def listed_row(self, row: int) -> int:
        """The caller's row of a row of the table before it was put in user order."""
        return row if self.listed is None else int(self.listed[row])

    def file_type(self, column: str) -> pa.DataType:
        return self.table.schema.field(column).type

    def _pieces(self, rows: int, columns: list[str]) -> Iterator[pa.Table]:
        t = self.table.select(columns)
        for at in range(0, t.num_rows, rows):
            yield t.slice(at, rows)


def sorted_tables(
    recs: Any, truth: Any, cols: Columns = Columns(), truth_cols: Columns | None = None
) -> tuple[Any, Any] | None:
    """Two in-memory tables as inputs to merge by user (the same path as
    sorted Parquet files), or None unless both are tables whose user ids are
    of one kind (integers or text) and have no missing value. Tables not in
    user order are put in it when the merge finds them so (:func:`in_user_order`).
    ``truth_cols``: the truth's columns when they are not ``cols``."""
    from receval.io.columns import is_table, item_lists

    if not (is_table(recs) and is_table(truth)):
        return None
    out = []
    sides = ((recs, "recommendations", RECS, cols), (truth, "truth", TRUTH, truth_cols or cols))
    for obj, role, roles, columns in sides:
        table, found = normalise(obj, columns, roles, role)
        listed = None
        lists = item_lists(table, role == "recommendations", role, found)
        if lists is not None:  # a list of items a row: one row per listed item
            table, listed = lists
            if role == "recommendations":
                found.setdefault("rank", "rank")
        names = table.column_names
        if role == "recommendations":
            if "rank" in found:
                names = ["user", "item", "rank"]
            elif "score" in found:
                names = ["user", "item", "score"]
            else:
                return None
        if table.num_rows == 0 or table.column("user").null_count:
            return None
        kinds = _table_kinds(table, role)
        info = FileInfo(role, "table", columns=dict(found))
        src = TableInput(role, role, None, names, names, info, kinds[0], kinds[1], table)
        src.listed = listed
        out.append(src)
    if out[0].user_kind != out[1].user_kind:
        return None
    # the users' order is checked as the merge reads them, batch by batch on
    # the reading thread while the first pairs are evaluated (not in one pass
    # before the first pair); a table found out of order is put in user order
    # and merged again (StreamedFiles.over_pairs, in_user_order)
    return out[0], out[1]


def _table_kinds(table: pa.Table, role: str) -> list[str]:
    """The id kinds of a table's user and item columns (its users have no
    nulls); a missing item id's error names its row's user too."""
    from receval.io.columns import kind_of

    users = table.column("user")
    user_kind = _type_kind(users.type) or kind_of(users, "user", role)
    try:
        item_kind = _type_kind(table.schema.field("item").type) or kind_of(
            table.column("item"), "item", role
        )
    except InputError as exc:  # the row's user as the whole column reads it
        raise exc.of_user(
            lambda r: canonical(users.slice(r, 1), "user", role, user_kind)[0]
        ) from None
    return [user_kind, item_kind]


def in_user_order(src: TableInput) -> bool:
    """Put a table in user order (:func:`user_order`) unless it is: its rows
    then remember the caller's (:attr:`TableInput.rows`). False when its ids
    cannot be ordered (the caller partitions instead)."""
    if src.rows is None and not src.is_sorted():
        # ids as the merge reads them: digit strings of kind int as numbers
        user = _arrow_ids(src.table.column("user"), src.user_kind, "user", src.path)
        order = user_order(user)
        if order is None:
            return False
        table = src.table.select(src.names)
        table = table.set_column(table.schema.get_field_index("user"), "user", user)
        src.given, src.table, src.rows = src.table, _taken(table, order), order
    src.sorted_known = True
    return True


def first_bad_row(
    recs: TableInput, truth: TableInput, negative_grades: str = "error"
) -> InputError | None:
    """The first error of the row checks (ids, scores, ranks, grades) of the
    tables as the caller gave them, in their row order, the truth's first (as
    the in-memory path reads it whole first), chunk by chunk; None when every
    row passes. The merge of tables put in user order meets the rows in user
    order: an error it met is replaced by this one, so that an error names the
    first offending row of the input (SPEC §2.3), whatever its order."""
    kinds = (recs.user_kind, recs.item_kind)
    sides = (
        (truth, lambda t, path: read_truth(t, _CANON, path, kinds, negative_grades)),
        (recs, lambda t, path: read_recs(t, _CANON, path, kinds)),
    )
    for src, read in sides:
        table = src.table if src.given is None else src.given
        given = dataclasses.replace(src, table=table, rows=None, given=None)
        with shared_dictionaries({}):
            try:
                for table, start in given.batches(CHUNK_ROWS):
                    try:
                        read(table, src.path)
                    except InputError as exc:
                        return exc.remap(lambda r, at=start, s=src: s.listed_row(r + at))
            except InputError as exc:  # a missing user id: named by the batches
                return exc
    return None


def user_order(user: pa.ChunkedArray) -> np.ndarray | None:
    """The rows of a table put in ascending user order, each user's rows in
    their order (a stable sort by user), for user ids that are integers or
    text (in code point order); None for ids of other types. Values do not
    depend on it: every metric is computed per user from that user's rows in
    their order, and an error names the row as given (:attr:`TableInput.rows`).

    Lists written user by user in another order (a model's lists in the order
    of its test users, the commonest way they come) are whole runs moved
    (:func:`~receval.ids.runs_in_order`, no row sorted); other
    rows (a log in time order) a stable radix sort of the ids (two passes of
    16 bits) when they span less than 2**32, else NumPy's stable sort. In
    user order, the table is merged with the other input pair by pair of
    users like two sorted files (``benchmarks/README.md``, "Tables not in
    user order")."""
    typ = user.type
    if user.null_count or not len(user):
        return None
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        u = _text_ranks(user)
    elif pa.types.is_integer(typ) and not pa.types.is_uint64(typ):
        parts = [numbers(c) for c in user.chunks if len(c)]
        u = (parts[0] if len(parts) == 1 else np.concatenate(parts)).astype(np.int64, copy=False)
    else:
        return None
    n = len(u)
    starts = np.flatnonzero(u[1:] != u[:-1]) + 1
    starts = np.concatenate((np.zeros(1, np.int64), starts))
    if len(starts) * 4 <= n:  # runs of 4 rows or more on average: whole runs moved
        moved = runs_in_order(u, starts)
        if moved is not None:
            return moved
    heads = u[starts]
    low = int(heads.min())
    if int(heads.max()) - low < 2**32:  # two stable passes over the 16-bit halves
        shifted = (u - low).astype(np.uint32)
        first = np.argsort((shifted & 0xFFFF).astype(np.uint16), kind="stable")
        high = (shifted[first] >> 16).astype(np.uint16)
        return first[np.argsort(high, kind="stable")]
    return np.argsort(u, kind="stable")


def _text_ranks(user: pa.ChunkedArray) -> np.ndarray:
    """Each text id's place among the column's distinct ids in code point order
    (UTF-8 byte order, the order the merge checks and the engine sorts text
    ids in): one hash pass, the distinct ids sorted, no row compared as text."""
    encoded = pc.dictionary_encode(user.combine_chunks())
    distinct = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[distinct] = np.arange(len(distinct), dtype=np.int64)
    return rank[encoded.indices.to_numpy(zero_copy_only=False)]


def _taken(table: pa.Table, order: np.ndarray) -> pa.Table:
    """The rows of ``table`` in ``order``: one gather per column (the chunks
    joined first: Arrow's gather from many chunks is several times slower)."""
    return table.combine_chunks().take(pa.array(order))


def open_parquet(
    path: str | os.PathLike[str], role: str, cols: Columns = Columns()
) -> ParquetInput | None:
    """Open a Parquet file of recommendations or truth for streaming; None
    when it must be read whole (ids that are floats, lists of items)."""
    import pyarrow.parquet as pq

    p, name = checked_path(path)
    try:
        file = pq.ParquetFile(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise fail(name, f"not a readable Parquet file ({exc})") from None
    if file.metadata.num_rows == 0:
        raise fail(name, "no data rows (only a header?)")
    schema = file.schema_arrow
    info = FileInfo(name, "parquet", rows=file.metadata.num_rows)
    info.messages.extend(notes_for(p))  # checked against its set's manifest, if any
    found = resolve(schema.names, cols, RECS if role == "recommendations" else TRUTH, name)
    info.columns.update(found)
    wanted = ["user", "item"]
    if role == "truth":
        wanted += ["relevance"] if "relevance" in found else []
    elif "rank" in found:
        wanted.append("rank")
    elif "score" in found:
        wanted.append("score")
    else:  # let the table reader word the error
        return None
    if any(_is_list(schema.field(found[r]).type) for r in ("user", "item")):
        return None  # lists of items: read whole and expanded
    read = [found[c] for c in wanted]
    src = ParquetInput(name, role, file, read, wanted, info, INT, INT)
    errors = []
    for what in ("user", "item"):
        try:
            setattr(src, f"{what}_kind", src.column_kind(what))
        except InputError as exc:
            errors.append(exc.of_user(src.user_at) if what == "item" else exc)
    if errors:  # the first row either column refuses (SPEC §2.3), its user named
        raise min(errors, key=lambda e: -1 if e.row is None else e.row)
    return src


def _is_list(typ: pa.DataType) -> bool:
    return pa.types.is_list(typ) or pa.types.is_large_list(typ)


# --- sorted files: read in step ---------------------------------------------


class _NotSorted(Exception):
    """A file's users are not in ascending order: partition instead."""


class _Reader:
    """Batches of one sorted file, buffered so that users are never cut."""

    def __init__(self, src: ParquetInput, rows: int) -> None:
        self.batches = src.batches(rows)
        self.checked = src.sorted_known  # the order was checked whole: not again here
        self.buf: pa.Table | None = None
        self.start = 0  # file row of the buffer's first row
        self.done = False
        self.last: Any = None  # the last user read (an Arrow scalar)

    @property
    def rows(self) -> int:
        return 0 if self.buf is None else self.buf.num_rows

    def _one_user(self) -> bool:
        if self.buf is None or self.buf.num_rows == 0:
            return True
        user = self.buf.column("user")
        return bool(user[0].equals(user[-1]))

    def fill(self, rows: int) -> None:
        """Read until ``rows`` rows and two users are buffered, or the end."""
        while not self.done and (self.rows < rows or self._one_user()):
            got = next(self.batches, None)
            if got is None:
                self.done = True
                break
            table, start = got
            user = table.column("user")
            if not self.checked and not _in_order(user, self.last):
                raise _NotSorted
            if table.num_rows:
                self.last = user[-1]
            if self.buf is None:
                self.buf, self.start = table, start
            else:
                self.buf = pa.concat_tables([self.buf, table])

    def take(self, bound: Any) -> tuple[pa.Table, int]:
        """The buffered rows of users < ``bound`` (all when None), and the
        file row of the first."""
        if self.buf is None:  # pragma: no cover - files have rows
            raise _NotSorted
        start = self.start
        n = self.buf.num_rows if bound is None else _count_below(self.buf.column("user"), bound)
        out = self.buf.slice(0, n)
        self.buf = self.buf.slice(n)
        self.start += n
        return out, start


def _count_below(user: pa.ChunkedArray, bound: Any) -> int:
    """How many of a sorted column's values are < ``bound`` (an Arrow scalar):
    a binary search in each chunk for int64 ids, one comparison pass otherwise."""
    if pa.types.is_int64(user.type) and not user.null_count:
        b = bound.as_py()
        return sum(int(np.searchsorted(numbers(c), b)) for c in user.chunks if len(c))
    return int(pc.sum(pc.less(user, bound)).as_py() or 0)


def _merge(
    recs: ParquetInput, truth: ParquetInput, rows: int
) -> Iterator[tuple[pa.Table, Callable[[int], int], pa.Table, Callable[[int], int]]]:
    r, t = _Reader(recs, rows), _Reader(truth, rows)
    while True:
        r.fill(rows)
        t.fill(rows)
        # every user below the last one read of an unfinished file is complete
        if r.done and t.done:
            bound = None
        elif r.done or t.done:
            bound = t.last if r.done else r.last
        else:
            # ids of one type (int64 or strings, whose UTF-8 byte order is the code points')
            bound = r.last if r.last.as_py() <= t.last.as_py() else t.last
        a, at = r.take(bound)
        b, bt = t.take(bound)
        if a.num_rows or b.num_rows:
            yield a, lambda i, at=at: i + at, b, lambda i, bt=bt: i + bt
        if bound is None:
            return


# --- anything else: partition by a hash of the user -------------------------


def _hash(user: pa.ChunkedArray) -> np.ndarray:
    """A well-mixed unsigned hash of each user id (the same on both files:
    their user columns have one type, int64 or large strings)."""
    if pa.types.is_large_string(user.type):
        import pandas as pd

        text = user.cast(pa.large_string()).to_numpy(zero_copy_only=False)
        return pd.util.hash_array(np.asarray(text, dtype=object))
    u = numbers(user).astype(np.int64, copy=False).view(np.uint64)
    return (u * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(17)


#: Rows of one partition buffered before they are written (all partitions
#: together hold about this many rows in memory).
BUFFERED_ROWS = 4_000_000


def _partition(src: ParquetInput, buckets: int, directory: Path, rows: int) -> None:
    """Write the file's rows into ``buckets`` Parquet files by a hash of the
    user, in file order, each row with its row number in the file (``__row``)."""
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    flush = max(8192, BUFFERED_ROWS // buckets)
    held: list[list[pa.Table]] = [[] for _ in range(buckets)]
    sizes = np.zeros(buckets, dtype=np.int64)
    writers: dict[int, Any] = {}

    def write(b: int) -> None:
        table = pa.concat_tables(held[b])
        if b not in writers:
            writers[b] = pq.ParquetWriter(directory / f"{b}.parquet", table.schema)
        writers[b].write_table(table, row_group_size=max(table.num_rows, 1))
        held[b], sizes[b] = [], 0

    try:
        for table, start in src.batches(rows):
            n = table.num_rows
            bucket = (_hash(table.column("user")) % np.uint64(buckets)).astype(np.int16)
            order = np.argsort(bucket, kind="stable")  # a radix sort: small integers
            table = table.append_column("__row", pa.array(np.arange(start, start + n)))
            table = table.take(pa.array(order))
            counts = np.bincount(bucket, minlength=buckets)
            at = 0
            for b in np.flatnonzero(counts):
                c = int(counts[b])
                held[b].append(table.slice(at, c))
                at += c
                sizes[b] += c
                if sizes[b] >= flush:
                    write(int(b))
        for b in np.flatnonzero(sizes):
            write(int(b))
    finally:
        for w in writers.values():
            w.close()


def _bucket(directory: Path, b: int, like: pa.Schema) -> tuple[pa.Table, np.ndarray]:
    """One bucket's rows in their file order, and their rows in the file."""
    import pyarrow.parquet as pq

    path = directory / f"{b}.parquet"
    if not path.exists():
        return like.empty_table(), np.empty(0, dtype=np.int64)
    table = pq.read_table(path)
    rows = numbers(table.column("__row"))
    if len(rows) > 1 and not np.all(rows[1:] > rows[:-1]):  # pragma: no cover - written in order
        order = np.argsort(rows, kind="stable")
        table, rows = table.take(pa.array(order)), rows[order]
    return table.drop_columns(["__row"]), rows


def _partitioned(
    recs: ParquetInput, truth: ParquetInput, rows: int, tmp: str | None
) -> Iterator[tuple[pa.Table, Callable[[int], int], pa.Table, Callable[[int], int]]]:
    # one bucket ~ one chunk of rows; at most 512 buckets (open files)
    buckets = min(512, max(2, math.ceil(max(recs.num_rows, truth.num_rows) / rows)))
    try:
        made = tempfile.TemporaryDirectory(prefix="receval-", dir=tmp)
    except OSError as exc:  # a bad RECEVAL_TMPDIR: said as such, never its made-up subfolder
        from receval.errors import OutputError

        named = tmp is not None and tmp == os.environ.get("RECEVAL_TMPDIR")
        where = f"RECEVAL_TMPDIR={tmp}" if named else (tmp or tempfile.gettempdir())
        if tmp is not None and not os.path.lexists(tmp):
            why = "names a folder that does not exist"
        elif tmp is not None and not os.path.isdir(tmp):
            why = "names a file, not a folder"
        else:
            why = f"cannot hold a temporary folder ({exc.strerror or exc})"
        advice = "give a folder you may write to"
        if named:
            advice = (
                "set it to a folder you may write to, or unset it to use the system's "
                "temporary folder"
            )
        raise OutputError(
            f"{where} {why}: receval partitions unsorted inputs there by user; {advice}",
            path=str(where),
            errno=exc.errno,
        ) from None
    with made as d:
        base = Path(d)
        _partition(recs, buckets, base / "recs", rows)
        _partition(truth, buckets, base / "truth", rows)
        recs_like = next(recs.batches(1))[0].schema
        truth_like = next(truth.batches(1))[0].schema
        for b in range(buckets):
            a, arows = _bucket(base / "recs", b, recs_like)
            t, trows = _bucket(base / "truth", b, truth_like)
            if a.num_rows or t.num_rows:
                yield (a, lambda i, m=arows: m[i], t, lambda i, m=trows: m[i])


# --- pairs for the driver ----------------------------------------------------


#: Recommendation rows per pair of chunks handed to the engine, as a part of
#: :data:`~receval.io.tables.CHUNK_ROWS` (integer ids, text ids): a few pairs are
#: in flight at once (one per thread and one waiting), which is the memory of an
#: evaluation above its input's columns (``benchmarks/csv_memory.py``: 5M rows
#: read from CSV stay within 2x the file with 500,000 and 125,000 rows: 1.87x
#: for integer ids); ids held as text are Python strings in the engine, ~4x the
#: memory of integer ids. Each pair costs a fixed ~0.5 ms of Python on a thread
#: that holds the GIL, which the other threads wait for: 500,000 rows rather than
#: 250,000 take 10% off the 100k-user workload and 20% off 1M and 5M users from
#: files (``benchmarks/README.md``, "rows per pair").
PAIR_PARTS = (1, 4)


def pairs(
    recs: ParquetInput,
    truth: ParquetInput,
    *,
    rows: int | None = None,
    tmp: str | None = None,
    sorted_files: bool = True,
    negative_grades: str = "error",
) -> Iterator[Any]:
    """Pairs (:class:`~receval.records.Pair`) of the users of both
    files, by merging them when they are sorted by user, else by partitioning.

    ``sorted_files=False`` partitions without trying to merge. A merge that
    meets rows out of order raises :class:`_NotSorted` (the caller restarts
    with ``sorted_files=False``).
    """
    _same_kinds(recs, truth)
    if rows is None:
        ints = recs.user_kind == INT and recs.item_kind == INT
        rows = CHUNK_ROWS // PAIR_PARTS[0 if ints else 1]
    rows = max(1, rows)
    source = _merge(recs, truth, rows) if sorted_files else None
    if source is None:
        source = _partitioned(recs, truth, rows, tmp)
    shared: dict[Any, Any] = {}  # dictionaries of ids, read once for every pair
    for a, arow, t, trow in source:
        if isinstance(recs, TableInput):  # a row of the table as the caller gave it
            arow = recs.row_of(arow)
        if isinstance(truth, TableInput):
            trow = truth.row_of(trow)
        # converted to NumPy by the worker that evaluates the pair, not here:
        # the reading thread only reads and cuts
        load = functools.partial(_load, a, arow, t, trow, recs, truth, negative_grades, shared)
        yield Pair(None, None, arow, trow, rows=a.num_rows, load=load)


def _load(
    a: pa.Table,
    arow: Callable[[int], int],
    t: pa.Table,
    trow: Callable[[int], int],
    recs: ParquetInput,
    truth: ParquetInput,
    negative_grades: str = "error",
    shared: dict[Any, Any] | None = None,
) -> tuple[Any, Any]:
    """One pair's tables as checked NumPy columns (errors name the file row),
    ids of the kinds of the whole files (``shared``: their dictionaries read
    once, :func:`receval.io.tables.shared_dictionaries`)."""
    kinds = (recs.user_kind, recs.item_kind)
    # the pair's number columns in one buffer each, reused by the thread's next pair
    a, t = one_chunk(a, "pair.recs"), one_chunk(t, "pair.truth")
    with shared_dictionaries({} if shared is None else shared):
        try:
            r = read_recs(a, _CANON, recs.path, kinds)
        except InputError as exc:
            raise exc.remap(arow) from None
        try:
            tr = read_truth(t, _CANON, truth.path, kinds, negative_grades)
        except InputError as exc:
            raise exc.remap(trow) from None
    r.columns, tr.columns = dict(recs.info.columns), dict(truth.info.columns)
    return r, tr


def _same_kinds(recs: ParquetInput, truth: ParquetInput) -> list[str]:
    """Both inputs' ids of one kind (strings when either side's are), and
    the notes saying where numbers were matched as strings."""
    notes = []
    for what in ("user", "item"):
        a, b = getattr(recs, f"{what}_kind"), getattr(truth, f"{what}_kind")
        if a != b:
            notes.append(
                f"{what} ids are numbers on one side and strings on the other: matched as strings"
            )
        setattr(recs, f"{what}_kind", combine_kinds([a, b]))
        setattr(truth, f"{what}_kind", combine_kinds([a, b]))
    return notes


class StreamedFiles(PairSource):
    """Two inputs read pair by pair of users (:class:`~receval.records.PairSource`,
    for :class:`receval.engines.local.Streamed`): two Parquet files, or two
    tables sorted by user (:func:`sorted_tables`). Merged when sorted, else (or
    when a batch turns out of order) partitioned by user first."""

    def __init__(
        self,
        recs: ParquetInput,
        truth: ParquetInput,
        *,
        graded: bool = True,
        rows: int | None = None,
        tmp: str | None = None,
        negative_grades: str = "error",
    ) -> None:
        self.recs, self.truth = recs, truth
        self.graded, self.rows, self.tmp = graded, rows, tmp
        self.negative_grades = negative_grades

    @property
    def max_grade(self) -> float:
        return self.truth.max_grade() if self.graded else 1.0

    def over_pairs(self, run: Callable[[Iterator[Any], list[str]], Any]) -> Any:
        """``run(pairs, notes)`` over the pairs of both inputs. An error met
        while merging is raised once both are known to be sorted (else they
        are partitioned), so it never comes from a user whose rows were not
        all read."""
        recs, truth = self.recs, self.truth
        mixed = recs.user_kind != truth.user_kind  # strings of numbers: seldom in string order
        notes = _same_kinds(recs, truth)
        tmp = self.tmp or os.environ.get("RECEVAL_TMPDIR") or None
        grades = self.negative_grades
        if not mixed:
            try:
                return run(pairs(recs, truth, rows=self.rows, negative_grades=grades), list(notes))
            except _NotSorted:
                pass
            except (InputError, PolicyError):
                # raised before all rows of every user were necessarily read
                if recs.is_sorted() and truth.is_sorted():
                    raise
            tables = isinstance(recs, TableInput) and isinstance(truth, TableInput)
            if tables and in_user_order(recs) and in_user_order(truth):  # merged again
                try:
                    got = pairs(recs, truth, rows=self.rows, negative_grades=grades)
                    return run(got, list(notes))
                except InputError as exc:  # met in user order: the input's first bad row
                    raise first_bad_row(recs, truth, grades) or exc from None
        cut = pairs(
            recs, truth, rows=self.rows, tmp=tmp, sorted_files=False, negative_grades=grades
        )
        return run(cut, list(notes))


#: an input opened: the table (or mapping, ...), the columns to read it with,
#: and the FileInfo of the file it was read from (None: not a file read here)
Opened = tuple[Any, Columns, Any]


def opened_pair(recommendations: Any, truth: Any, cols: Columns) -> tuple[Opened, Opened, Any]:
    """Both inputs of an evaluation opened: two Parquet files stream (bounded
    memory; the third item is the pair of :class:`ParquetInput`, else None);
    anything else goes through :func:`receval.io.inputs.opened` (a file read
    whole into a table, whose FileInfo turns a row into the file's line)."""
    inputs: list[Any] = [recommendations, truth]
    for i, role in enumerate(("recommendations", "truth")):
        given = inputs[i]
        fmt = given.format if isinstance(given, FileInput) else "auto"
        if is_path(given) and is_parquet(given, fmt):
            inputs[i] = open_parquet(os.fspath(given), role, cols) or given
    if all(isinstance(x, ParquetInput) for x in inputs):
        pair = (inputs[0], inputs[1])
        return (inputs[0], Columns(), None), (inputs[1], Columns(), None), pair
    out: list[Opened] = []
    for obj, role in zip(inputs, ("recommendations", "truth"), strict=True):
        if isinstance(obj, ParquetInput):
            out.append((obj.read_all(), Columns(), obj.info))
        else:
            out.append(opened(obj, role, cols))
    return out[0], out[1], None
