"""Propensities: how likely each relevant (user, item) pair was to be observed.

``evaluate(..., propensities=)`` (``--propensities`` on the command line) takes

* a table (pandas, polars, pyarrow, or a file) with a user, an item and a
  ``propensity`` column: one propensity per (user, item) pair;
* a table with an item and a ``propensity`` column (no user column): one per
  item, whoever the user;
* a mapping ``item -> p`` or ``(user, item) -> p``;
* ``"popularity"``: the popularity model of Yang et al. (2018), estimated
  from ``train=``: p_i = (n_i / n_max)^((γ + 1) / 2), n_i the training rows
  of item i and n_max the largest n_i (the most popular item is always
  observed when relevant, p = 1). An item never seen in training has p = 0.

Every propensity given must be a number in (0, 1]. The propensities are
matched with the truth's rows under the id rule (:mod:`receval.ids`), so
``7``, ``7.0`` and ``"7"`` are one id; a truth row without one gets NaN,
which is an error only for a relevant pair (the weighted metrics read no
other). The weighting itself is :func:`receval.metrics.kernels.ranking.pair_weights`
(docs/counterfactual-metrics.md).

Example:
    >>> import pandas as pd
    >>> from receval.records import TruthData
    >>> truth = TruthData(np.array([1, 1]), np.array([10, 20]), np.ones(2), 2, False)
    >>> propensities_of({10: 0.5}, truth).tolist()
    [0.5, nan]
    >>> train = pd.DataFrame({"user": [1, 2, 3, 1], "item": [10, 10, 10, 20]})
    >>> propensities_of("popularity", truth, train=train, gamma=1.0).tolist()
    [1.0, 0.3333333333333333]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from receval.errors import InputError, OptionError, ReceValError, option
from receval.ids import as_str, canonical, kind
from receval.io.columns import ITEMS, names_of, resolve, to_arrow
from receval.io.inputs import is_path, opened
from receval.io.items import train_pairs
from receval.io.spark_files import is_spark
from receval.records import Columns, Pair, RecsData, TruthData

__all__ = [
    "DEFAULT_GAMMA",
    "MODELS",
    "PairsWithPropensities",
    "Propensities",
    "is_model",
    "popularity_propensities",
    "propensities_of",
    "read_propensities",
]

#: the named propensity models
MODELS = ("popularity",)


def is_model(obj: Any) -> bool:
    """Whether ``propensities=`` names a model of :data:`MODELS` (else a table or a file).

    >>> is_model(" Popularity"), is_model("props.csv")
    (True, False)
    """
    return isinstance(obj, str) and obj.strip().lower() in MODELS


#: γ of the popularity model: p_i ∝ n_i^((γ + 1) / 2); 1 makes p_i ∝ n_i
DEFAULT_GAMMA = 1.0

#: names of the propensity column, compared without case, ``_``, ``-`` or spaces
PROPENSITY_COLUMNS = ("propensity", "propensities", "pscore", "p")

_SOURCE = "propensities"


def _key(name: str) -> str:
    return "".join(c for c in name.lower() if c not in "_- ")


def read_propensities(
    obj: Any, cols: Columns = Columns()
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """``(users or None, items, propensities)`` of a table, a file or a
    mapping; users None for propensities per item. Every value is checked: a
    number in (0, 1], each key once (errors name the row, user and item).

    >>> read_propensities({("u1", 3): 0.5})[0].tolist()
    ['u1']
    """
    if isinstance(obj, Mapping):
        return _checked(*_from_mapping(obj), _SOURCE)
    if not is_path(obj):
        return _checked(*_table(obj, cols, _SOURCE), _SOURCE)
    table, columns, info = opened(obj, "items", cols)  # a file: every column kept
    try:
        return _checked(*_table(table, columns, info.path), info.path)
    except InputError as exc:
        raise info.locate(exc) from None


def _from_mapping(obj: Mapping[Any, Any]) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    keys = list(obj)
    pairs = [isinstance(k, tuple) for k in keys]
    if any(pairs) and not all(pairs):
        raise InputError(
            "expected every key to be an item, or every key a (user, item) pair; found both",
            source=_SOURCE,
        )
    values = np.array([_number(v, i) for i, v in enumerate(obj.values())], dtype=np.float64)
    if keys and all(pairs):
        if any(len(k) != 2 for k in keys):
            raise InputError("expected (user, item) pairs as keys", source=_SOURCE)
        users = canonical([k[0] for k in keys], "user", _SOURCE)
        return users, canonical([k[1] for k in keys], "item", _SOURCE), values
    return None, canonical(keys, "item", _SOURCE), values


def _number(value: Any, row: int) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"expected a propensity in (0, 1]; found {value!r}", source=_SOURCE, row=row
        ) from None


def _table(
    obj: Any, cols: Columns, source: str
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    names = names_of(obj)
    found = resolve(names, cols, ITEMS, source)
    wanted = {_key(n) for n in PROPENSITY_COLUMNS}
    taken = set(found.values())
    pcol = next((n for n in names if _key(str(n)) in wanted and n not in taken), None)
    if pcol is None:
        raise InputError(
            "expected a column named propensity (the probability in (0, 1] that a relevant "
            f"pair is observed); found columns {', '.join(map(str, names))}",
            source=source,
        )
    id_cols = {found[r]: r for r in ("user", "item") if r in found}
    table = to_arrow(obj, source, [*id_cols, pcol], id_cols)
    items = canonical(table.column(found["item"]), "item", source)
    users = canonical(table.column(found["user"]), "user", source) if "user" in found else None
    column = table.column(pcol)
    try:
        values = np.asarray(column.to_numpy(), dtype=np.float64)
    except (TypeError, ValueError):
        values = np.array([_number(v, i) for i, v in enumerate(column.to_pylist())])
    return users, items, values


def _checked(
    users: np.ndarray | None, items: np.ndarray, values: np.ndarray, source: str
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    bad = ~((values > 0) & (values <= 1))  # NaN fails both
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"a propensity must be a number in (0, 1]; found {values[row]!r} "
            f"({int(bad.sum())} such rows)",
            source=source,
            row=row,
            user=None if users is None else users[row],
            item=items[row],
        )
    import pandas as pd

    index = pd.Index(items) if users is None else pd.MultiIndex.from_arrays([users, items])
    if not index.is_unique:
        row = int(np.flatnonzero(index.duplicated())[0])
        raise InputError(
            "this " + ("item" if users is None else "(user, item) pair") + " has two propensities",
            source=source,
            row=row,
            user=None if users is None else users[row],
            item=items[row],
        )
    return users, items, values


def popularity_propensities(
    train: Any, gamma: float = DEFAULT_GAMMA, cols: Columns = Columns()
) -> tuple[np.ndarray, np.ndarray]:
    """``(items, p)`` of the popularity model (Yang et al. 2018, §4):
    p_i = (n_i / n_max)^((γ + 1) / 2), n_i the rows of item i in ``train``.

    >>> import pandas as pd
    >>> train = pd.DataFrame({"user": [1, 2, 2], "item": [5, 5, 6]})
    >>> items, p = popularity_propensities(train, 3.0)
    >>> items.tolist(), p.tolist()
    ([5, 6], [1.0, 0.25])
    """
    if not math.isfinite(gamma) or gamma < -1:
        raise OptionError("propensity_gamma", gamma, expected="a finite number >= -1")
    _, t_items = train_pairs(train, cols)
    import pandas as pd

    counts = pd.Series(t_items).value_counts(sort=False)
    items = np.asarray(counts.index.to_numpy())
    n = counts.to_numpy().astype(np.float64)
    order = np.argsort(items, kind="stable") if items.dtype != object else np.arange(len(items))
    items, n = items[order], n[order]
    top = n.max(initial=1.0)
    return items, (n / top) ** ((gamma + 1.0) / 2.0)


class Propensities:
    """Propensities read once, matched with the truth of each part of the
    users (:meth:`of`): a table's, or a named model's estimated from ``train``.
    ``missing``: the value of a pair not found (NaN; 0 under the popularity
    model, an item never seen in training)."""

    def __init__(
        self,
        obj: Any,
        *,
        train: Any = None,
        gamma: float = DEFAULT_GAMMA,
        cols: Columns = Columns(),
    ) -> None:
        if is_model(obj):
            if train is None:
                raise OptionError(
                    "propensities",
                    obj,
                    expected="a table of propensities",
                    reason="the popularity model is estimated from "
                    + option("train")
                    + ", which was not given",
                )
            if is_spark(train):
                raise ReceValError(
                    f"propensities={obj!r} estimates the propensities from "
                    + option("train")
                    + " in this process, which a Spark DataFrame is not: give a table of "
                    "propensities (user, item, propensity, or item, propensity), or train= as "
                    "a table"
                )
            self.items, self.values = popularity_propensities(train, gamma, cols)
            self.users: np.ndarray | None = None
            self.missing = 0.0
        else:
            self.users, self.items, self.values = read_propensities(obj)
            self.missing = np.nan
        self._index: dict[tuple[str, str], Any] = {}

    def _lookup(self, users_kind: str, items_kind: str) -> Any:
        import pandas as pd

        key = (users_kind, items_kind)
        if key not in self._index:
            items = self.items if kind(self.items) == items_kind else as_str(self.items)
            if self.users is None:
                self._index[key] = pd.Index(items)
            else:
                users = self.users if kind(self.users) == users_kind else as_str(self.users)
                self._index[key] = pd.MultiIndex.from_arrays([users, items])
        return self._index[key]

    def of(self, truth: TruthData) -> np.ndarray:
        """The propensity of each row of ``truth`` (``missing`` where none)."""
        import pandas as pd

        t_users, t_items = truth.users, truth.items
        if kind(self.items) != kind(t_items):
            t_items = as_str(t_items)
        if self.users is not None and kind(self.users) != kind(t_users):
            t_users = as_str(t_users)
        if self.users is None and t_items.dtype == np.int64:
            return self._dense(t_items)
        index = self._lookup(kind(t_users), kind(t_items))
        if self.users is None:
            at = index.get_indexer(t_items)
        else:
            at = index.get_indexer(pd.MultiIndex.from_arrays([t_users, t_items]))
        at = np.asarray(at, dtype=np.int64)
        if not len(self.values):
            return np.full(len(at), self.missing)
        return np.where(at >= 0, self.values[np.maximum(at, 0)], self.missing)

    def _dense(self, t_items: np.ndarray) -> np.ndarray:
        """Per-item propensities of integer ids, by one array lookup where the ids are
        small (a table as long as the largest id), else by a sorted search."""
        key = ("dense", "")
        if key not in self._index:
            lo = int(self.items.min(initial=0))
            hi = int(self.items.max(initial=0))
            if lo >= 0 and hi < 4 * len(self.items) + 1024:
                table = np.full(hi + 2, self.missing)  # the last slot: ids outside
                table[self.items] = self.values
                self._index[key] = table
            else:
                order = np.argsort(self.items)
                self._index[key] = (self.items[order], self.values[order])
        found = self._index[key]
        if isinstance(found, np.ndarray):
            if not len(t_items) or (t_items.min() >= 0 and t_items.max() < len(found) - 1):
                return found[t_items]  # every id inside the table (usual): one gather
            inside = (t_items >= 0) & (t_items < len(found) - 1)
            return found[np.where(inside, t_items, len(found) - 1)]
        items, values = found
        at = np.minimum(np.searchsorted(items, t_items), max(len(items) - 1, 0))
        if not len(items):
            return np.full(len(t_items), self.missing)
        return np.where(items[at] == t_items, values[at], self.missing)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the lookup indexes (rebuilt where it is unpickled: Spark's workers)."""
        return {**self.__dict__, "_index": {}}

    def attach(self, pair: Pair) -> Pair:
        """``pair`` whose truth carries its rows' propensities (when loaded, if lazy)."""
        load = pair.load
        if load is None:
            assert pair.truth is not None
            pair.truth.propensity = self.of(pair.truth)
            return pair

        def loaded() -> tuple[RecsData, TruthData]:
            recs, truth = load()
            truth.propensity = self.of(truth)
            return recs, truth

        pair.load = loaded
        return pair


class PairsWithPropensities:
    """``to_pair`` (a partition's rows -> its :class:`Pair`, on Spark's workers)
    whose pairs carry the propensities: it pickles with them."""

    def __init__(self, to_pair: Callable[[Any], Pair], known: Propensities) -> None:
        self.to_pair, self.known = to_pair, known

    def __call__(self, table: Any) -> Pair:
        return self.known.attach(self.to_pair(table))


def propensities_of(
    obj: Any,
    truth: TruthData,
    *,
    train: Any = None,
    gamma: float = DEFAULT_GAMMA,
    cols: Columns = Columns(),
) -> np.ndarray:
    """The propensity of each truth row's (user, item) pair: NaN where none
    was given; 0 for an item absent from ``train=`` under ``"popularity"``.
    ``cols``: the columns of ``train`` (a propensity table's are detected)."""
    return Propensities(obj, train=train, gamma=gamma, cols=cols).of(truth)
