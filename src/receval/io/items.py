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
    is_frame,
    is_table,
    names_of,
    normalise,
    resolve,
    to_arrow,
)
from receval.io.inputs import read_located
from receval.metrics.context import ItemContext, ItemGroups, TrainPairs
from receval.records import Columns

__all__ = ["build_context", "read_item_groups", "read_items", "train_pairs"]


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
    """The (user, item) rows of ``train`` (a table, a file or a mapping user ->
    items) as two id arrays under the id rule."""
    return read_located(train, "train", cols, lambda table, columns, _: _pairs(table, columns))


def _pairs(train: Any, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """:func:`train_pairs` of an input opened."""
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
    return (
        canonical(table.column("user"), "user", "train"),
        canonical(table.column("item"), "item", "train"),
    )


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
    if train is not None:
        t_users, ids["train"] = train_pairs(train, cols)
    elif popularity is not None:
        ids["train"] = canonical(pa.array(popularity[0]), "item", "train")
    if catalog is not None:
        ids["catalog"] = read_items(catalog, "catalog", cols)
    if popular is not None:
        ids["popular"] = read_items(popular, "popular", cols)
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
