"""What beyond-accuracy metrics know about items: popularity, catalog, features.

Built once per evaluation from ``train=`` (user, item interactions),
``catalog=``, ``item_features=`` and ``popular=`` by
:func:`receval.io.items.build_context`. Items get an index into
the context's arrays; the last index stands for every item the context does
not know (popularity 1, no features, outside the catalog). Kernels read these
arrays through an index matrix, never ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from receval.ids import as_str, distinct

__all__ = ["ItemContext", "ItemGroups", "TrainPairs", "positions"]


def positions(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The position of each of ``values`` in ``ids`` (sorted, distinct), −1 when
    absent; text and numbers compare as text.

    A long array is factorized first, so that only its distinct values are looked
    up (a hash pass instead of a binary search per value).

    >>> positions(np.array([2, 5, 9]), np.array([9, 3, 2])).tolist()
    [2, -1, 0]
    """
    if len(values) == 0:
        return np.empty(0, dtype=np.int64)
    if (ids.dtype == object) != (values.dtype == object):
        ids, values = as_str(ids), as_str(values)
    if ids.dtype.kind == "i" and values.dtype.kind == "i" and len(ids):
        found = _dense(ids, values)
        if found is not None:
            return found
    if len(values) > 4 * max(len(ids), 1024):
        import pandas as pd

        codes, seen = pd.factorize(values)
        return _lookup(ids, np.asarray(seen, dtype=values.dtype))[codes]
    return _lookup(ids, values)


#: The largest span of integer ids looked up through a table (8 bytes each).
_DENSE_SPAN = 1 << 24


def _dense(ids: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """:func:`positions` of integers through a table indexed by the id (one
    gather per value) when the ids span a small range and the values are
    many enough to pay for building it; None otherwise."""
    lo, hi = int(ids[0]), int(ids[-1])
    span = hi - lo + 1
    if span > max(8 * len(ids), 1 << 16) or span > _DENSE_SPAN or 4 * len(values) < span:
        return None  # a sparse range, or too few values to pay for the table
    if 0 <= lo <= span:  # a table from 0: the values index it as they are
        span, lo = hi + 1, 0
    table = np.full(span, -1, dtype=np.int64)
    table[ids.astype(np.int64) - lo] = np.arange(len(ids), dtype=np.int64)
    v = values.astype(np.int64, copy=False)
    if lo:
        v = v - lo
    if int(v.min()) >= 0 and int(v.max()) < span:
        return table[v]
    inside = (v >= 0) & (v < span)
    out = np.full(len(values), -1, dtype=np.int64)
    out[inside] = table[v[inside]]
    return out


def _lookup(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`positions` of values of the same kind as ``ids``, looked up one by one."""
    if ids.dtype == object:
        import pandas as pd

        return np.asarray(pd.Index(ids).get_indexer(values), dtype=np.int64)
    if not len(ids):
        return np.full(len(values), -1, dtype=np.int64)
    pos = np.searchsorted(ids, values)
    pos[pos == len(ids)] = 0
    return np.where(ids[pos] == values, pos, -1).astype(np.int64)


@dataclass(frozen=True)
class TrainPairs:
    """The distinct (user, item) pairs of the training data, as sorted keys
    ``user position × width + item index`` (users: the sorted distinct training
    users; items: a context's indexes, ``width`` its slots).

    >>> pairs = TrainPairs.of(np.array([7, 7, 3, 7]), np.array([0, 1, 1, 0]), 3)
    >>> pairs.users.tolist(), pairs.keys.tolist()
    ([3, 7], [1, 3, 4])
    >>> pairs.count(np.array([7, 3, 5]), np.array([1, 0, 1]))
    1
    """

    users: np.ndarray
    keys: np.ndarray
    width: int

    @classmethod
    def of(cls, users: np.ndarray, items: np.ndarray, width: int) -> TrainPairs:
        """The pairs of ``users`` (ids) and ``items`` (context indexes < width)."""
        import pandas as pd

        codes, ids = pd.factorize(users, sort=True)
        keys = distinct(codes.astype(np.int64) * width + items)
        return cls(np.asarray(ids, dtype=users.dtype), keys, width)

    def count(self, users: np.ndarray, items: np.ndarray) -> int:
        """How many of the (user id, item index) pairs are training pairs."""
        return int(np.count_nonzero(self.found(users, items)))

    def found(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Which of the (user id, item index) pairs are training pairs.

        Integer ids go through the compiled pass where it is built (each run of
        rows of one user — list rows come grouped by user — finds the user
        once, then looks its rows up among that user's keys only: marked in a
        table by item, or searched); otherwise, or without it, a binary search
        of each pair's key among all the keys: the same flags.

        >>> pairs = TrainPairs.of(np.array([7, 7, 3]), np.array([0, 1, 1]), 3)
        >>> pairs.found(np.array([7, 7, 3, 3, 5]), np.array([1, 2, 1, 0, 1])).tolist()
        [True, False, True, False, False]
        """
        if not len(self.keys):
            return np.zeros(len(users), dtype=bool)
        native = _native_found(self, users, items)
        if native is not None:
            return native
        pos = positions(self.users, users)
        keys = pos * self.width + items
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return (pos >= 0) & (self.keys[at] == keys)


def _native_found(pairs: TrainPairs, users: np.ndarray, items: np.ndarray) -> np.ndarray | None:
    """:meth:`TrainPairs.found` by the compiled pass (``train_found``), or None
    where it does not apply: not built (or an older build without it), ids
    not 64-bit integers on both sides, or arrays of other lengths."""
    from receval._accel import NATIVE

    if NATIVE is None or not hasattr(NATIVE, "train_found") or len(users) != len(items):
        return None
    int64 = np.dtype(np.int64)
    if any(a.dtype != int64 for a in (pairs.users, pairs.keys, users, items)):
        return None
    out = np.empty(len(users), dtype=bool)
    NATIVE.train_found(
        np.ascontiguousarray(pairs.users),
        np.ascontiguousarray(pairs.keys),
        int(pairs.width),
        np.ascontiguousarray(users),
        np.ascontiguousarray(items),
        out,
    )
    return out


@dataclass(frozen=True)
class ItemGroups:
    """Which groups each item belongs to (``item_groups=``; an item may be in
    several), indexed like the context's arrays.

    Attributes:
        name: the grouping's name (the group column of the table).
        labels: the groups, sorted (the table's values).
        offsets: ``(n + 2,)``: the groups of context index ``i`` are
            ``members[offsets[i]:offsets[i + 1]]`` (the unknown slot has none).
        members: group positions (into ``labels``), ascending within an item.

    >>> g = ItemGroups.of("genre", np.array([0, 0, 2]), np.array(["a", "b", "a"]), 3)
    >>> g.labels.tolist(), g.sizes.tolist(), g.count.tolist()
    (['a', 'b'], [2, 1], [2, 0, 1])
    """

    name: str
    labels: np.ndarray
    offsets: np.ndarray
    members: np.ndarray

    @classmethod
    def of(cls, name: str, index: np.ndarray, groups: np.ndarray, slots: int) -> ItemGroups:
        """From (context index, group label) pairs; ``slots``: the context's
        number of indexes, the unknown one included."""
        import pandas as pd

        codes, labels = pd.factorize(groups, sort=True)
        keys = distinct(index.astype(np.int64) * max(len(labels), 1) + codes)
        width = max(len(labels), 1)
        item, member = keys // width, keys % width
        offsets = np.zeros(slots + 1, dtype=np.int64)
        np.cumsum(np.bincount(item, minlength=slots), out=offsets[1:])
        return cls(str(name), np.asarray(labels), offsets, member.astype(np.int64))

    @property
    def n_groups(self) -> int:
        return len(self.labels)

    @property
    def count(self) -> np.ndarray:
        """Per context index, its number of groups."""
        return np.diff(self.offsets)

    @property
    def sizes(self) -> np.ndarray:
        """Per group, its number of items."""
        return np.bincount(self.members, minlength=self.n_groups)

    def expand(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For context indexes, one entry per (position in ``index``, group of
        that item): the positions and the groups, in the order of ``index``."""
        starts, ends = self.offsets[index], self.offsets[index + 1]
        lengths = ends - starts
        at = np.repeat(np.arange(len(index), dtype=np.int64), lengths)
        total = int(lengths.sum())
        shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        return at, self.members[shift + np.arange(total, dtype=np.int64)]

    @cached_property
    def table(self) -> np.ndarray:
        """The groups of each index as a ``(slots, width)`` int32 table, width
        the most groups of an item, padded with ``n_groups`` (for the compiled
        tally: every row does the same work).

        >>> ItemGroups.of("x", np.array([0, 1, 1]), np.array(["a", "a", "b"]), 3).table.tolist()
        [[0, 2], [0, 1], [2, 2]]
        """
        count = self.count
        width = max(int(count.max(initial=0)), 1)
        out = np.full((len(count), width), self.n_groups, dtype=np.int32)
        at, g = self.expand(np.arange(len(count), dtype=np.int64))
        pos = np.arange(len(at)) - self.offsets[:-1][at]
        out[at, pos] = g
        return out


@dataclass
class ItemContext:
    """Item-side arrays indexed by a context index (the last slot = unknown item).

    Attributes:
        item_ids: the known items, sorted (numbers or strings).
        pop: popularity per index: distinct training users with the item
            (1 for items never seen in training, and for the unknown slot).
        seen: per index, was the item seen in training.
        rows: per index, its training rows, repeated (user, item) pairs
            included (0 for items never seen in training, and for the unknown
            slot): popularity as RecBole counts it (``data.count_items``).
        train_pairs: the distinct (user, item) pairs of the training data
            (:class:`TrainPairs`), to count recommended items a user already had
            (a leakage warning).
        n_train_users: distinct users in the training data (0 without it).
        in_catalog: per index, is the item in the catalog.
        catalog_source: "catalog", "train" or "" (none available).
        popular_given: per index, is the item in the explicit ``popular`` set
            (None when no set was given).
        features: ``(n + 1, d)`` float64 unit vectors (zero row = no features),
            or None.
        categories: ``(n + 1, c)`` float64 0/1 matrix of item categories, or None.
        groups: the item groups (``item_groups=``), or None.
    """

    item_ids: np.ndarray
    pop: np.ndarray
    n_train_users: int
    in_catalog: np.ndarray
    catalog_source: str
    seen: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=bool))
    rows: np.ndarray = field(default_factory=lambda: np.zeros(1))
    train_pairs: TrainPairs | None = None
    popular_given: np.ndarray | None = None
    features: np.ndarray | None = None
    categories: np.ndarray | None = None
    groups: ItemGroups | None = None
    _cache: dict[Any, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def unknown(self) -> int:
        """The index standing for items the context does not know."""
        return len(self.item_ids)

    def index_of(self, items: np.ndarray) -> np.ndarray:
        """Context index of each item (``unknown`` when absent)."""
        idx = positions(self.item_ids, items)
        idx[idx < 0] = self.unknown
        return idx

    def history(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The training items of each of ``users`` (ids): ``(offsets, items)``,
        user ``j``'s context indexes ``items[offsets[j]:offsets[j + 1]]``,
        ascending; no items for a user not in the training data."""
        pairs = self.train_pairs
        if pairs is None:  # pragma: no cover - metrics needing it require train=
            raise ValueError("no training pairs")
        pos = positions(pairs.users, users)
        lo = np.searchsorted(pairs.keys, pos * pairs.width)
        hi = np.searchsorted(pairs.keys, (pos + 1) * pairs.width)
        hi[pos < 0] = lo[pos < 0]
        lengths = hi - lo
        offsets = np.zeros(len(users) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        shift = np.repeat(lo - offsets[:-1], lengths)
        keys = pairs.keys[shift + np.arange(offsets[-1], dtype=np.int64)]
        return offsets, keys % pairs.width

    def counts(self, count: str = "pairs") -> np.ndarray:
        """Per index, the item's training interactions (0 when never seen):
        ``pairs`` counts distinct (user, item) pairs (distinct users), ``rows``
        every training row, repeated pairs included (RecBole's ``count_items``).

        >>> ctx = ItemContext(np.array([1, 2]), np.array([2.0, 1.0, 1.0]), 2,
        ...                   np.ones(3, bool), "train", seen=np.array([True, False, False]),
        ...                   rows=np.array([3.0, 0.0, 0.0]))
        >>> ctx.counts("pairs").tolist(), ctx.counts("rows").tolist()
        ([2.0, 0.0, 0.0], [3.0, 0.0, 0.0])
        """
        if count == "rows":
            return self.rows
        if count != "pairs":
            raise ValueError(f"count must be pairs or rows; got {count!r}")
        return self._cached(("pairs",), lambda: self.pop * self.seen)

    def short_head(self, share: float, count: str = "pairs") -> np.ndarray:
        """Per index: is the item among the most popular training items that
        together hold ``share`` of the training interactions (ties by id);
        interactions counted as :meth:`counts` counts them."""

        def compute() -> np.ndarray:
            n = len(self.item_ids)
            seen = self.counts(count)[:n]
            order = np.lexsort((np.arange(n), -seen))
            cum = np.cumsum(seen[order])
            total = cum[-1] if n else 0.0
            head = np.zeros(n + 1, dtype=bool)
            if total > 0:
                size = int(np.searchsorted(cum, share * total - 1e-9 * total)) + 1
                head[order[:size]] = True
            return head

        return self._cached(("short_head", share, count), compute)

    def least_popular(self, ratio: float, count: str = "pairs") -> np.ndarray:
        """Per index: is the item in RecBole's long tail (``TailPercentage``).

        Of the items seen in training, sorted by (interactions, id) ascending:
        the first ``max(int(n × ratio), 1)`` when ``ratio`` <= 1, else those
        with at most ``ratio`` interactions. Items never seen in training are
        never in the tail; interactions are counted as :meth:`counts` counts
        them.

        >>> ctx = ItemContext(np.array([1, 2, 3]), np.array([2.0, 1.0, 5.0, 1.0]), 5,
        ...                   np.ones(4, bool), "train", seen=np.array([1, 1, 1, 0], bool))
        >>> ctx.least_popular(0.5).tolist(), ctx.least_popular(2.0).tolist()
        ([False, True, False, False], [True, True, False, False])
        """

        def compute() -> np.ndarray:
            n = len(self.item_ids)
            counts = self.counts(count)[:n]
            seen = np.flatnonzero(self.seen[:n])
            tail = np.zeros(n + 1, dtype=bool)
            if ratio > 1:
                tail[seen[counts[seen] <= ratio]] = True
            elif len(seen):
                order = seen[np.lexsort((seen, counts[seen]))]
                tail[order[: max(int(len(seen) * ratio), 1)]] = True
            return tail

        return self._cached(("least_popular", ratio, count), compute)

    def popular(self, top: float) -> np.ndarray:
        """Per index: the explicit popular set, or the top ``top`` share of the
        catalog items by popularity (ceil(top × |catalog|), ties by id)."""
        if self.popular_given is not None:
            return self.popular_given

        def compute() -> np.ndarray:
            n = len(self.item_ids)
            cat = np.flatnonzero(self.in_catalog[:n])
            order = cat[np.lexsort((cat, -self.pop[cat]))]
            out = np.zeros(n + 1, dtype=bool)
            out[order[: math.ceil(top * len(cat))]] = True
            return out

        return self._cached(("popular", top), compute)

    def _cached(self, key: Any, compute: Any) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]
