"""Reading the item-side inputs (``train=``, ``catalog=``, ``item_features=``,
``popular=``, ``item_groups=``) into an :class:`~receval.metrics.context.ItemContext`.

Each is a table, a mapping, ... or the path of a file, opened by the one way
in (:func:`receval.io.inputs.read_located`): an error about a row of a file
names the file and its line, and what the reader noted about the file goes
to whoever asks (:func:`receval.io.inputs.files_read`: the command line)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from receval.errors import InputError, option
from receval.ids import as_str, canonical
from receval.io.columns import (
    ITEMS,
    TRAIN,
    columns_table,
    is_frame,
    is_table,
    item_lists,
    names_of,
    normalise,
    resolve,
    to_arrow,
)
from receval.io.inputs import read_located
from receval.metrics.context import ItemContext, ItemGroups, TrainPairs
from receval.records import Columns

__all__ = [
    "TrainRange",
    "TrainRows",
    "build_context",
    "read_item_groups",
    "read_items",
    "train_pairs",
]


def read_items(obj: Any, what: str, cols: Columns = Columns()) -> np.ndarray:
    """A set of items (``catalog=``, ``popular=``) as ids under the id rule.

    Takes a table (its item column, detected as for recommendations: ``item``,
    ``item_id``, ``movieId``, ... or ``cols.item``), the path of a file of
    one, a mapping (its keys), a pandas Series or Index, a NumPy array or
    any iterable of ids.

    Example:
        >>> import pandas as pd
        >>> read_items(pd.DataFrame({"item": [3, 1]}), "catalog").tolist()
        [3, 1]
    """
    return read_located(obj, "items", cols, lambda table, columns, _: _items(table, what, columns))


def _items(obj: Any, what: str, cols: Columns) -> np.ndarray:
    """:func:`read_items` of an input opened."""
    if is_table(obj):
        table, _ = normalise(obj, cols, ITEMS, what)
        return canonical(table.column("item"), "item", what)
    if is_frame(obj, "Series"):
        return canonical(obj.to_numpy(), "item", what)
    if isinstance(obj, np.ndarray):
        return canonical(obj.reshape(-1), "item", what)
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Iterable):
        raise InputError(
            f"{what} must be a table with an item column, a mapping or an iterable of item "
            f"ids; got {type(obj).__name__}",
            source=what,
        )
    return canonical(list(obj), "item", what)


def train_pairs(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """The (user, item) rows of ``train`` (a table, a file, a mapping user ->
    items or a :class:`TrainRange`) as two id arrays under the id rule."""
    if isinstance(train, TrainRange):
        ranged = train.counted(cols)
        if ranged is not None:
            return ranged.pairs()
        train = train.table
    return read_located(train, "train", cols, lambda table, columns, _: _pairs(table, columns))


def _pairs(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """:func:`train_pairs` of an input opened."""
    if isinstance(train, Mapping) and (table := columns_table(train, "train")) is not None:
        train = table  # a mapping of columns: its table
    if isinstance(train, Mapping):
        users: list[Any] = []
        items: list[Any] = []
        for u, its in train.items():
            if isinstance(its, (str, bytes)) or not isinstance(its, Iterable):
                raise InputError(
                    f"expected an iterable of items; found {type(its).__name__}",
                    source="train",
                    user=u,
                )
            seq = list(its)
            users += [u] * len(seq)
            items += seq
        return canonical(users, "user", "train"), canonical(items, "item", "train")
    if not is_table(train):
        raise InputError(
            "train must be a pandas/polars/pyarrow table or a mapping user -> items; "
            f"got {type(train).__name__}",
            source="train",
        )
    table, _ = normalise(train, cols, TRAIN, "train")
    lists = item_lists(table, False, "train")  # a list of items a row, as a file's
    if lists is not None:
        table, given = lists
    try:
        return (
            canonical(table.column("user"), "user", "train"),
            canonical(table.column("item"), "item", "train"),
        )
    except InputError as exc:
        raise exc if lists is None else exc.remap(lambda r: int(given[r])) from None


def read_item_groups(obj: Any, cols: Columns = Columns()) -> tuple[str, np.ndarray, np.ndarray]:
    """The (item, group) pairs of ``item_groups=``: the grouping's name, the item
    ids (under the id rule) and their groups, one pair per row (long format: an
    item in several groups has several rows).

    Takes a table with an item column (detected, or ``cols.item``) and one
    group column (with more, the one named ``group``), its file, or a mapping
    ``item -> group`` / ``item -> iterable of groups``. Rows with a null group
    are left out. Groups are compared as given (``"Comedy"`` is not ``"comedy"``).

    Example:
        >>> name, items, groups = read_item_groups({1: "a", 2: ["a", "b"]})
        >>> name, items.tolist(), groups.tolist()
        ('group', [1, 2, 2], ['a', 'a', 'b'])
    """
    return read_located(obj, "items", cols, lambda table, columns, _: _groups(table, columns))


def _groups(obj: Any, cols: Columns) -> tuple[str, np.ndarray, np.ndarray]:
    """:func:`read_item_groups` of an input opened."""
    what = "item_groups"
    if isinstance(obj, Mapping):
        items: list[Any] = []
        groups: list[Any] = []
        for item, found in obj.items():
            many = not isinstance(found, (str, bytes)) and isinstance(found, Iterable)
            for g in list(found) if many else [found]:
                items.append(item)
                groups.append(g)
        name = "group"
    elif is_table(obj):
        table = to_arrow(obj, what)
        column = _item_column(table, cols)
        if column is None:
            raise InputError(
                f"{option(what)} needs an item column (item, item_id, itemId, movieId, ...; "
                f"{option('item_col')} names it); found {', '.join(table.column_names)}",
                source=what,
            )
        rest = [c for c in table.column_names if c != column and c != "user"]
        if len(rest) > 1 and "group" in rest:
            rest = ["group"]
        if len(rest) != 1:
            found_text = ", ".join(rest) if rest else "no other column"
            raise InputError(
                f"{option(what)} needs the item column and one group column (long format: an "
                f"item in several groups has several rows); found {found_text}",
                source=what,
            )
        name = rest[0]
        items = table.column(column).to_pylist()
        groups = table.column(name).to_pylist()
    else:
        raise InputError(
            f"{option(what)} must be a table with an item column and a group column, its "
            f"file, or a mapping item -> group(s); got {type(obj).__name__}",
            source=what,
        )
    keep = [g is not None and not (isinstance(g, float) and math.isnan(g)) for g in groups]
    rows = [r for r, k in enumerate(keep) if k]
    try:
        ids = canonical([items[r] for r in rows], "item", what)
    except InputError as exc:  # a row of the pairs kept: the input's row
        raise exc.remap(lambda r: rows[r]) from None
    labels = [groups[r] for r in rows]
    if labels and len({type(g) for g in labels}) > 1:
        labels = [str(g) for g in labels]
    out = np.empty(len(labels), dtype=object)
    out[:] = labels
    return str(name), ids, out


def _is_categories(value: Any) -> bool:
    """A set of labels, or a list of strings, is categories; numbers are a vector."""
    if isinstance(value, (set, frozenset)):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(x, str) for x in value)


def _is_text(typ: pa.DataType) -> bool:
    return bool(pa.types.is_string(typ) or pa.types.is_large_string(typ))


def _category_matrix(table: pa.Table, columns: list[str]) -> np.ndarray:
    """A 0/1 (items × categories) matrix from text columns: each column's
    value is a category (``genre=Comedy``), and a value holding ``|`` is
    several (``Comedy|Drama``, as MovieLens writes genres); empty values none."""
    labels: list[set[str]] = [set() for _ in range(table.num_rows)]
    for name in columns:
        for i, value in enumerate(table.column(name).to_pylist()):
            if value:
                labels[i].update(f"{name}={v.strip()}" for v in value.split("|") if v.strip())
    cats = sorted(set().union(*labels)) if labels else []
    where = {c: j for j, c in enumerate(cats)}
    matrix = np.zeros((table.num_rows, len(cats)))
    for i, found in enumerate(labels):
        matrix[i, [where[c] for c in found]] = 1.0
    return matrix


def _features(obj: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Item ids and dense unit vectors, or ids and a 0/1 category matrix.

    A table with an item column (detected, or ``cols.item``) takes its other
    columns as the features; a pandas DataFrame without one takes its index.
    """
    return read_located(obj, "items", cols, lambda table, columns, _: _vectors(table, columns))


def _vectors(obj: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """:func:`_features` of an input opened."""
    column = _item_column(obj, cols) if is_table(obj) else None
    if column is not None:
        table = to_arrow(obj, "item_features")
        ids = canonical(table.column(column), "item", "item_features")
        rest = [n for n in table.column_names if n != column]
        text = [n for n in rest if _is_text(table.column(n).type)]
        if text and len(text) == len(rest):  # categories: Jaccard distance
            return ids, None, _category_matrix(table, text)
        if text:
            raise InputError(
                f"{option('item_features')} mixes numeric columns "
                f"({', '.join(n for n in rest if n not in text)}) and text columns "
                f"({', '.join(text)}): give numeric features (cosine distance) or text "
                "categories (Jaccard distance), not both",
                source="item_features",
            )
        try:
            values = (
                np.column_stack(
                    [
                        table.column(n).to_numpy(zero_copy_only=False).astype(np.float64)
                        for n in rest
                    ]
                )
                if rest
                else np.zeros((len(ids), 0))
            )
        except (TypeError, ValueError):
            raise InputError(
                "item_features must have numeric feature columns besides the item column "
                f"(columns found: {', '.join(table.column_names)})",
                source="item_features",
            ) from None
    elif is_frame(obj):
        ids = canonical(obj.index.to_numpy(), "item", "item_features")
        values = obj.to_numpy(dtype=np.float64)
    elif isinstance(obj, Mapping):
        keys = list(obj)
        ids = canonical(keys, "item", "item_features")
        if _is_categories(next(iter(obj.values()), None)):
            cats = sorted({str(c) for v in obj.values() for c in v})
            where = {c: j for j, c in enumerate(cats)}
            matrix = np.zeros((len(keys), len(cats)))
            for i, k in enumerate(keys):
                for c in obj[k]:
                    matrix[i, where[str(c)]] = 1.0
            return ids, None, matrix
        values = np.asarray([np.asarray(obj[k], dtype=np.float64) for k in keys])
    else:
        raise InputError(
            "item_features must be a table with an item column and numeric feature columns, "
            "a DataFrame (index = item, numeric columns), a mapping item -> vector or a "
            f"mapping item -> set of categories; got {type(obj).__name__}",
            source="item_features",
        )
    if values.ndim != 2 or not np.isfinite(values).all():
        raise InputError("item_features must be a finite numeric matrix (one row per item)")
    norms = np.linalg.norm(values, axis=1, keepdims=True)
    unit = np.divide(values, norms, out=np.zeros_like(values), where=norms > 0)
    return ids, unit, None


def _item_column(table: Any, cols: Columns) -> str | None:
    """The item column of a table of features: ``cols.item`` when the table
    has it, else the first item alias found, else None (the index)."""
    names = names_of(table)
    if cols.item and cols.item in names:
        return cols.item
    return resolve(names, Columns(), (("item",), ()), "item_features").get("item")


def build_context(
    *,
    train: Any = None,
    catalog: Any = None,
    item_features: Any = None,
    popular: Any = None,
    item_groups: Any = None,
    cols: Columns = Columns(),
    popularity: tuple[np.ndarray, np.ndarray, int, np.ndarray] | None = None,
) -> ItemContext:
    """The item context of one evaluation (see :class:`ItemContext`).

    ``popularity`` stands for ``train`` when the training data is too large
    to hold (the Spark engine counts it where it lies): the items seen in
    training, the number of distinct training users of each, the number of
    distinct training users, and the training rows of each item (repeated
    pairs included). The context then has no training pairs."""
    t_users = None
    ids: dict[str, np.ndarray | None] = dict.fromkeys(
        ("train", "catalog", "popular", "groups", "features")
    )
    ranged = train.counted(cols) if isinstance(train, TrainRange) else None
    if ranged is not None:
        ids["train"] = ranged.items()
    elif train is not None:
        t_users, ids["train"] = train_pairs(train, cols)
    elif popularity is not None:
        ids["train"] = canonical(pa.array(popularity[0]), "item", "train")
    for name, given in (("catalog", catalog), ("popular", popular)):
        if given is not None:
            ids[name] = read_items(given, name, cols)
            if not len(ids[name]):  # a file of a header only is refused as it is read
                raise InputError(
                    f"no item given: give the {name}'s items, or leave {option(name)} out",
                    source=name,
                )
    g_name, ids["groups"], g_labels = (
        read_item_groups(item_groups, cols) if item_groups is not None else ("", None, None)
    )
    f_unit = f_cats = None
    if item_features is not None:
        ids["features"], f_unit, f_cats = _features(item_features, cols)
    if any(v is not None and v.dtype == object for v in ids.values()):  # one kind: text
        ids = {k: None if v is None else as_str(v) for k, v in ids.items()}
    ctx = _context_of(_distinct_items([v for v in ids.values() if v is not None]))
    n = len(ctx.item_ids)
    if ranged is not None:
        ranged.count(ctx)
    else:
        _count_train(ctx, ids["train"], t_users, popularity)
    if ids["catalog"] is not None:
        ctx.in_catalog[ctx.index_of(ids["catalog"])] = True
        ctx.catalog_source = "catalog"
    elif ids["train"] is not None:
        ctx.in_catalog[:n] = ctx.seen[:n]
        ctx.catalog_source = "train"
    ctx.in_catalog[n] = False
    if ids["popular"] is not None:
        flags = np.zeros(n + 1, dtype=bool)
        flags[ctx.index_of(ids["popular"])] = True
        flags[n] = False
        ctx.popular_given = flags
    if ids["features"] is not None:
        _put_features(ctx, ids["features"], f_unit, f_cats)
    if ids["groups"] is not None and g_labels is not None:
        ctx.groups = ItemGroups.of(g_name, ctx.index_of(ids["groups"]), g_labels, n + 1)
    return ctx


def _distinct_items(parts: list[np.ndarray]) -> np.ndarray:
    """Every item of the item-side inputs once, sorted."""
    if not parts or not any(len(p) for p in parts):
        return np.empty(0, dtype=np.int64)
    import pandas as pd

    distinct = pd.unique(np.concatenate(parts))  # a hash pass, then sort the few
    if distinct.dtype == object:
        return np.array(sorted(set(distinct.tolist())), dtype=object)
    return np.sort(distinct)


def _context_of(ids: np.ndarray) -> ItemContext:
    """An empty context over ``ids`` (popularity 1, nothing in the catalog)."""
    n = len(ids)
    return ItemContext(
        item_ids=ids,
        pop=np.ones(n + 1),
        n_train_users=0,
        in_catalog=np.zeros(n + 1, dtype=bool),
        catalog_source="",
    )


def _count_train(
    ctx: ItemContext,
    t_items: np.ndarray | None,
    t_users: np.ndarray | None,
    popularity: tuple[np.ndarray, np.ndarray, int, np.ndarray] | None,
) -> None:
    """Each item's training popularity (distinct users) and training rows
    (repeated pairs included), from the training pairs or from counts made
    elsewhere (Spark), and the items seen in training."""
    n = len(ctx.item_ids)
    seen = np.zeros(n + 1, dtype=bool)
    rows = np.zeros(n + 1)
    if popularity is not None and t_items is not None:
        at = ctx.index_of(t_items)
        counts = np.zeros(n + 1)
        counts[at] = np.asarray(popularity[1], dtype=np.float64)
        seen = counts > 0
        ctx.pop = np.where(seen, counts, 1.0)
        ctx.n_train_users = int(popularity[2])
        rows[at] = np.asarray(popularity[3], dtype=np.float64)
    if t_items is not None and t_users is not None:
        at = ctx.index_of(t_items)
        pairs = TrainPairs.of(t_users, at, n + 1)
        ctx.train_pairs = pairs
        counts = np.bincount(pairs.keys % (n + 1), minlength=n + 1).astype(np.float64)
        seen = counts > 0
        ctx.pop = np.where(seen, counts, 1.0)
        ctx.n_train_users = len(pairs.users)
        rows = np.bincount(at, minlength=n + 1).astype(np.float64)
    ctx.seen = seen
    ctx.rows = rows


def _put_features(
    ctx: ItemContext, f_ids: np.ndarray, f_unit: np.ndarray | None, f_cats: np.ndarray | None
) -> None:
    """The item features as a matrix row per item: unit vectors, or categories."""
    values = f_unit if f_unit is not None else f_cats
    assert values is not None
    matrix = np.zeros((len(ctx.item_ids) + 1, values.shape[1]))
    matrix[ctx.index_of(f_ids)] = values
    if f_unit is not None:
        ctx.features = matrix
    else:
        ctx.categories = matrix


# --------------------------------------------------------------------------- ranges of one log


class TrainRows:
    """The (user, item) rows of one log, indexed once, so that the item
    context of any range of its rows — each fold's train of a backtest over
    a log in time order — is counted without hashing or sorting that range.

    The index: the log's distinct users and items, sorted, each row's codes
    in them, and the rows ordered by (user, item, row), each with the
    previous row of the same pair (-1 for the pair's first row). The
    distinct pairs of rows [start, stop) are the entries of that order
    inside the range whose previous row is before ``start`` (for a prefix,
    start 0: the pairs' first rows before ``stop``), already sorted by
    (user, item) — the order of :class:`~receval.metrics.context.TrainPairs`'
    keys once the codes are mapped to the range's users and the context's
    items (both mappings keep the order; where text ids given beside make
    the context compare every id as text, the keys are sorted once more).
    Every count equals that of the
    range's rows read as a table (:func:`build_context` with ``train=`` the
    table): only the work differs — O(pairs) comparisons and O(rows)
    bincounts per range instead of a hash and a sort of its rows.

    :meth:`of` makes it for integer id columns only (their ids are the
    values; the ids of other columns follow rules of the whole column, which
    a range need not share), and where the pair codes fit in 62 bits.
    ``prefixes=True`` keeps only what ranges from row 0 need (each pair's
    first row; an expanding window's trains): a range starting later is then
    read as a table. Row counts are carried from the range counted last
    (:meth:`rows_of`): one index serves one evaluation at a time.

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"user": [1, 2, 1, 1], "item": [5, 5, 6, 5]})
        >>> rows = TrainRows.of(log, "user", "item")
        >>> ctx = build_context(train=rows.range(1, 4, log.iloc[1:4]))
        >>> ctx.item_ids.tolist(), ctx.counts("pairs").tolist(), ctx.counts("rows").tolist()
        ([5, 6], [2.0, 1.0, 0.0], [2.0, 1.0, 0.0])
    """

    def __init__(
        self,
        users: tuple[np.ndarray, np.ndarray],
        items: tuple[np.ndarray, np.ndarray],
        columns: tuple[Any, Any],
        prefixes: bool = False,
    ) -> None:
        self.user_col, self.item_col = columns
        self.user_codes, self.user_ids = users
        self.item_codes, self.item_ids = items
        self.prefixes = prefixes
        #: the last range counted: (start, stop, rows per user code, rows per item code)
        self._last: tuple[int, int, np.ndarray, np.ndarray] | None = None
        #: per entry (by user, item, row): its row, the pair's previous row
        #: (-1: none), its user and item codes; only the first rows with prefixes
        self.entry_prev: np.ndarray | None = None
        made = _native_entries(self, prefixes)
        if made is not None:
            self.entry_row, self.entry_user, self.entry_item, self.entry_prev = made
            return
        key = self.user_codes.astype(np.int64) * max(len(self.item_ids), 1) + self.item_codes
        order, key = _by_pair(key, len(self.user_ids) * max(len(self.item_ids), 1))
        order = order.astype(self.user_codes.dtype)
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        del key
        if prefixes:
            order = order[first]
        else:
            prev = np.roll(order, 1)
            prev[first] = -1
            self.entry_prev = prev
        self.entry_row = order
        self.entry_user = self.user_codes[order]
        self.entry_item = self.item_codes[order]

    @classmethod
    def of(
        cls, frame: Any, user_col: Any, item_col: Any, *, prefixes: bool = False
    ) -> TrainRows | None:
        """The index of a pandas table's user and item columns; None unless
        both hold integers (int8 … int64, uint8 … uint32) and the pair codes
        fit in 62 bits."""
        cols = (frame[user_col].to_numpy(), frame[item_col].to_numpy())
        if not all(c.dtype.kind == "i" or (c.dtype.kind == "u" and c.itemsize < 8) for c in cols):
            return None
        narrow = len(frame) < 2**31
        users, items = (_sorted_codes(c.astype(np.int64, copy=False), narrow) for c in cols)
        if len(users[1]) * max(len(items[1]), 1) >= 2**62:
            return None
        return cls(users, items, (user_col, item_col), prefixes)

    def rows_of(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows [start, stop) per user code and per item code. Carried from
        the range counted last when this one starts no earlier, ends no
        earlier and overlaps it (successive folds: an expanding window adds
        its new rows, a rolling one also takes off those it left): O(rows
        changed), not O(rows). The arrays are the index's own (read them,
        do not keep them)."""
        last = self._last
        if last is None or start < last[0] or stop < last[1] or start > last[1]:
            users = np.bincount(self.user_codes[start:stop], minlength=len(self.user_ids))
            items = np.bincount(self.item_codes[start:stop], minlength=len(self.item_ids))
        else:
            (a, b, users, items), n_u, n_i = last, len(self.user_ids), len(self.item_ids)
            users += np.bincount(self.user_codes[b:stop], minlength=n_u)
            items += np.bincount(self.item_codes[b:stop], minlength=n_i)
            users -= np.bincount(self.user_codes[a:start], minlength=n_u)
            items -= np.bincount(self.item_codes[a:start], minlength=n_i)
        self._last = (start, stop, users, items)
        return users, items

    def range(self, start: int, stop: int, table: Any) -> TrainRange:
        """Rows [start, stop) as ``train=``; ``table``: those rows as a table
        (what anything but the item context reads)."""
        return TrainRange(self, int(start), int(stop), table)


def _native_entries(
    rows: TrainRows, prefixes: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """The index entries by the compiled module (``pair_entries``: stable
    counting passes by item, then by user, in place of a sort), the arrays
    :class:`TrainRows` makes by one sort of every row; None where it does not
    apply (not built, or codes wider than 4 bytes: a log of 2**31 rows)."""
    from receval._accel import NATIVE

    codes = (rows.user_codes, rows.item_codes)
    if NATIVE is None or not hasattr(NATIVE, "pair_entries"):
        return None
    if any(c.dtype != np.int32 for c in codes):
        return None
    n = len(rows.user_codes)
    out = [np.empty(n, dtype=np.int32) for _ in range(3)]
    prev = None if prefixes else np.empty(n, dtype=np.int32)
    count = NATIVE.pair_entries(
        *codes, len(rows.user_ids), len(rows.item_ids), prefixes, *out, prev
    )
    if count < 0:
        return None
    if count < n:
        out = [a[:count].copy() for a in out]
    return out[0], out[1], out[2], prev


def _by_pair(key: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows ordered by ``key`` (< ``width``), rows of one key in row
    order; the keys in that order. One sort of ``key · n + row`` where it
    fits in 63 bits (a plain sort of distinct numbers: about twice as fast
    as a stable argsort), else a stable argsort."""
    n = len(key)
    if width * max(n, 1) < 2**63:
        both = np.sort(key * n + np.arange(n, dtype=np.int64))
        return np.divmod(both, max(n, 1))[::-1]
    order = np.argsort(key, kind="stable")
    return order, key[order]


def _sorted_codes(values: np.ndarray, narrow: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each value's code among the distinct values, sorted (int32 when
    ``narrow``); those values. Ids spanning a range at most about twice their
    number (the usual 0..n-1 or 1..n) go through a table of the range (one
    scatter, a running count, one gather), others through a hash (pandas'
    ``factorize``): the same codes."""
    import pandas as pd

    dtype = np.int32 if narrow else np.int64
    if len(values):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < max(2 * len(values), 1 << 16):  # dense ids: a table, no hashing
            held = np.zeros(hi - lo + 1, dtype=bool)
            shifted = values - lo
            held[shifted] = True
            rank = np.cumsum(held, dtype=np.int64) - 1
            return rank.astype(dtype)[shifted], np.flatnonzero(held).astype(np.int64) + lo
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(dtype), np.asarray(uniques, dtype=np.int64)


class TrainRange:
    """Rows [start, stop) of a :class:`TrainRows` log, given as ``train=``:
    the item context counts them from the index (:meth:`count`); anything
    else reads ``table``, the same rows as a table. The index counts them
    when the columns asked (``cols``) are the log's own (or left to
    detection), the range holds a row and the index covers it (a range from
    row 0, or an index of every entry); else the table is read as any
    ``train=``."""

    def __init__(self, rows: TrainRows, start: int, stop: int, table: Any) -> None:
        self.rows, self.start, self.stop, self.table = rows, start, stop, table

    def __len__(self) -> int:
        return self.stop - self.start

    def counted(self, cols: Columns) -> TrainRange | None:
        """This range when the index counts it under ``cols``; else None."""
        r = self.rows
        same = cols.user in (None, r.user_col) and cols.item in (None, r.item_col)
        covered = self.start == 0 or r.entry_prev is not None
        return self if same and covered and self.stop > self.start else None

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The (user, item) ids of each row, as :func:`train_pairs` reads them."""
        r, a, b = self.rows, self.start, self.stop
        return r.user_ids[r.user_codes[a:b]], r.item_ids[r.item_codes[a:b]]

    def items(self) -> np.ndarray:
        """The distinct items of the range, sorted."""
        r = self.rows
        return r.item_ids[r.rows_of(self.start, self.stop)[1] > 0]

    def _firsts(self) -> np.ndarray:
        """The index entries that are the first row of their pair in the range."""
        r, a, b = self.rows, self.start, self.stop
        if r.entry_prev is None:  # first rows only: a range from row 0
            return r.entry_row < b
        inside = r.entry_row < b
        if a:
            inside &= r.entry_row >= a
        return inside & (r.entry_prev < a)

    def _keys(
        self, at: np.ndarray, position: np.ndarray, width: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The range's distinct pairs as keys ``position[user] * width +
        at[item]``, in the index's order, and per context slot its number of
        pairs (float64): one compiled pass over the index (``range_keys``)
        where it is built, else masks and gathers; the same arrays."""
        from receval._accel import NATIVE

        r = self.rows
        if NATIVE is not None and hasattr(NATIVE, "range_keys"):
            keys = np.empty(len(r.entry_row), dtype=np.int64)
            counts = np.zeros(width, dtype=np.float64)
            prev = r.entry_prev
            if prev is None and self.start:  # pragma: no cover - counted() refuses it
                raise ValueError("an index of first rows counts ranges from row 0 only")
            n = NATIVE.range_keys(
                r.entry_row,
                prev,
                r.entry_user,
                r.entry_item,
                self.start,
                self.stop,
                np.ascontiguousarray(at, dtype=np.int64),
                np.ascontiguousarray(position, dtype=np.int64),
                width,
                keys,
                counts,
            )
            if n >= 0:
                return keys[:n], counts
        firsts = self._firsts()
        slot = at[r.entry_item[firsts]]
        keys = position[r.entry_user[firsts]] * width + slot
        return keys, np.bincount(slot, minlength=width).astype(np.float64)

    def count(self, ctx: ItemContext) -> None:
        """What :func:`_count_train` sets from the range's rows: popularity
        (distinct users per item), training rows per item, the items seen,
        the number of distinct users and the training pairs."""
        r, a, b = self.rows, self.start, self.stop
        width = len(ctx.item_ids) + 1
        ids = as_str(r.item_ids) if ctx.item_ids.dtype == object else r.item_ids  # text ids
        at = ctx.index_of(ids)  # each log item's context index
        user_rows, item_rows = r.rows_of(a, b)
        present = user_rows > 0
        position = np.cumsum(present) - 1  # a user's place among the range's users
        keys, counts = self._keys(at, position, width)
        held = item_rows > 0
        if np.any(np.diff(at[held]) < 0):  # text ids: the context orders them otherwise
            keys = np.sort(keys)
        ctx.train_pairs = TrainPairs(r.user_ids[present], keys, width)
        ctx.seen = counts > 0
        ctx.pop = np.where(ctx.seen, counts, 1.0)
        ctx.n_train_users = int(np.count_nonzero(present))
        ctx.rows = np.zeros(width)
        ctx.rows[at[held]] = item_rows[held]
