"""Reference recommenders: random, most popular, item-kNN.

Small, vectorized and deterministic — they exist to sanity-check a model (a
model that does not beat most-popular has a problem) and to make the demo
real; they are not a modelling library. Each one is fitted on training
interactions (user, item; repeated pairs count once) and produces a run in
receval's long format: ``user``, ``item``, ``score``, ``rank`` (1 = best),
at most ``k`` rows per user, ordered by user then rank.

- :class:`RandomRecommender`: score ~ Uniform[0, 1) per (user, item), drawn
  from ``numpy.random.default_rng(seed)`` block by block.
- :class:`PopularRecommender`: score = pop(i), the number of distinct
  training users with item i.
- :class:`ItemKNNRecommender`: cosine similarity on co-occurrence,
  ``sim(i, j) = |U_i ∩ U_j| / (sqrt(|U_i| · |U_j|) + shrink)``, each item keeping
  its ``neighbors`` most similar items; a user's score for j is
  ``Σ_{i ∈ I_u} sim(i, j)`` over the items i the user has. Items no neighbour
  reaches (and every item for users without history) are filled in by
  popularity, with scores ``−1 + pop(j) / (max pop + 1)`` in [−1, 0), below
  every similarity score.

Ties in score are broken by item id ascending (receval's own tie rule), so
evaluating the run by ``rank`` or by ``score`` gives the same lists. With
``exclude_seen=True`` (default) the items a user has in train are never
recommended. Random and most-popular score users in blocks of about 2M
(user, item) cells with ``np.argpartition``; item-kNN never builds a dense
block: its neighbour lists and top-k lists come from a compiled pass
(``receval._native``, threads) or, without it, from sparse products a block
at a time — the same lists and scores, bit for bit.

>>> import pandas as pd
>>> train = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": ["a", "b", "a", "c", "a"]})
>>> run = recommend("popular", train, k=2)
>>> run.values.tolist()
[[1, 'c', 1.0, 1], [2, 'b', 1.0, 1], [3, 'b', 1.0, 1], [3, 'c', 1.0, 2]]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from receval._accel import NATIVE
from receval.engines.driver import THREADS
from receval.errors import InputError, ReceValError, check_seed
from receval.io.interactions import as_frame

__all__ = [
    "BASELINES",
    "ItemKNNRecommender",
    "PopularRecommender",
    "RandomRecommender",
    "Recommender",
    "recommend",
]

#: (user, item) cells scored at once.
BLOCK_CELLS = 1 << 21


def top_k(key: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``key`` (b × m), the ``k`` largest finite-or-inf entries above
    −inf, ordered by value descending then column ascending.

    Returns ``(rows, cols, values)`` flattened in output order.

    >>> r, c, v = top_k(np.array([[0.5, 0.9, 0.5, -np.inf], [1.0, 1.0, 1.0, 1.0]]), 2)
    >>> r.tolist(), c.tolist(), v.tolist()
    ([0, 0, 1, 1], [1, 0, 0, 1], [0.9, 0.5, 1.0, 1.0])
    """
    b, m = key.shape
    k = min(k, m)
    if b == 0 or k <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    if k < m:
        cols = np.argpartition(-key, k - 1, axis=1)[:, :k]
        vals = np.take_along_axis(key, cols, axis=1)
        kth = vals.min(axis=1, keepdims=True)
        # Rows whose k-th value is tied with a value left outside: redo exactly,
        # taking the tied items of smallest column first.
        tied = (key == kth).sum(axis=1) > (vals == kth).sum(axis=1)
        if tied.any():
            sub = key[tied]
            t = kth[tied]
            above = sub > t
            eq = sub == t
            need = k - above.sum(axis=1, keepdims=True)
            take = above | (eq & (np.cumsum(eq, axis=1) <= need))
            cols[tied] = np.nonzero(take)[1].reshape(-1, k)
            vals[tied] = np.take_along_axis(sub, cols[tied], axis=1)
    else:
        cols = np.broadcast_to(np.arange(m), (b, m)).copy()
        vals = key.copy()
    # Order by value descending, then column ascending.
    order = np.lexsort((cols, -vals), axis=1)
    cols = np.take_along_axis(cols, order, axis=1).ravel()
    vals = np.take_along_axis(vals, order, axis=1).ravel()
    rows = np.repeat(np.arange(b), k)
    ok = vals > -np.inf
    return rows[ok], cols[ok], vals[ok]


class Recommender:
    """Base class: ``fit(train)`` then ``recommend(users, k)``."""

    name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.user_ids: pd.Index = pd.Index([])
        self.item_ids: np.ndarray = np.zeros(0)
        self.matrix: sp.csr_matrix = sp.csr_matrix((0, 0))
        self.pop: np.ndarray = np.zeros(0)
        self.user_col = "user"
        self.item_col = "item"

    def fit(self, train: Any, *, user_col: str = "user", item_col: str = "item") -> Recommender:
        """Learn from the training interactions (a table with user and item columns)."""
        frame = as_frame(train, "train")
        for col, role in ((user_col, "user"), (item_col, "item")):
            if col not in frame.columns:
                found = ", ".join(map(str, frame.columns))
                raise InputError(
                    f"no {role} column {col!r} (columns found: {found})", source="train"
                )
        if len(frame) == 0:
            raise InputError("the training data is empty", source="train")
        self.user_col, self.item_col = user_col, item_col
        ucodes, uniq_users = pd.factorize(frame[user_col], sort=True)
        icodes, uniq_items = pd.factorize(frame[item_col], sort=True)
        self.user_ids = pd.Index(uniq_users)
        self.item_ids = np.asarray(uniq_items)
        x = sp.csr_matrix(
            (np.ones(len(frame)), (ucodes, icodes)), shape=(len(uniq_users), len(uniq_items))
        )
        x.sum_duplicates()
        x.data[:] = 1.0
        self.matrix = x
        self.pop = np.asarray(x.sum(axis=0)).ravel()
        self._fit()
        return self

    def _fit(self) -> None:
        """Model-specific fitting (after the matrix is built)."""

    def _users_per_block(self) -> int:
        """Users scored at once: a dense block of about BLOCK_CELLS scores."""
        return max(1, BLOCK_CELLS // len(self.item_ids))

    def _scores(self, codes: np.ndarray, block: int) -> np.ndarray:
        """Scores (len(codes) × items); codes −1 = user unknown in train."""
        raise NotImplementedError

    def _seen(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(block row, item) of every training pair of the block's known users."""
        known = np.flatnonzero(codes >= 0)
        if not known.size:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        sub = self.matrix[codes[known]].tocoo()
        return known[sub.row], sub.col.astype(np.int64)

    def _block(
        self, codes: np.ndarray, k: int, exclude_seen: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-k (block row, item, score) of a block of users: dense scores."""
        key = self._scores(codes, 0)
        if exclude_seen:
            r, c = self._seen(codes)
            key[r, c] = -np.inf
        return top_k(key, k)

    def recommend(
        self, users: Iterable[Any] | None = None, k: int = 10, *, exclude_seen: bool = True
    ) -> pd.DataFrame:
        """The top-``k`` items of each user, as a long table (user, item, score, rank).

        Args:
            users: whom to recommend to (default: every training user, sorted);
                users unknown in train get the model's cold-start list.
            k: list length (shorter when fewer items are left).
            exclude_seen: never recommend an item the user has in train.
        """
        if not self.item_ids.size:
            raise ReceValError(f"{type(self).__name__} is not fitted: call fit(train) first")
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ReceValError(f"k must be an integer >= 1; got {k!r}")
        if users is None:
            wanted = np.asarray(self.user_ids)
        else:
            given = users if isinstance(users, pd.Series) else pd.Series(list(users))
            wanted = given.drop_duplicates().to_numpy()
        codes = self.user_ids.get_indexer(wanted)
        block = self._users_per_block()
        out_u, out_i, out_s, out_r = [], [], [], []
        for start in range(0, len(codes), block):
            rows, cols, vals = self._block(codes[start : start + block], k, exclude_seen)
            ranks = np.ones(len(rows), dtype=np.int64)
            if len(rows):
                first = np.r_[True, rows[1:] != rows[:-1]]
                idx = np.arange(len(rows))
                ranks = idx - np.maximum.accumulate(np.where(first, idx, 0)) + 1
            out_u.append(wanted[start + rows])
            out_i.append(self.item_ids[cols])
            out_s.append(vals)
            out_r.append(ranks)
        frame = pd.DataFrame(
            {
                self.user_col: _cat(out_u, wanted),
                self.item_col: _cat(out_i, self.item_ids),
                "score": _cat(out_s, np.zeros(0)).astype(np.float64),
                "rank": _cat(out_r, np.zeros(0, dtype=np.int64)),
            }
        )
        frame.attrs["unknown_users"] = int((codes < 0).sum())
        frame.attrs["model"] = self.name
        return frame


def cooccurrence_blocks(x: sp.csr_matrix, budget: int) -> Iterator[tuple[int, Any]]:
    """The item-item co-occurrences ``X^T X`` of a (rows × items) matrix, a block
    of items at a time: ``(first item of the block, X_block^T X)``, each block
    holding about ``budget`` co-occurrences at most (and at least one item),
    counted from each item's rows' lengths."""
    xt = x.T.tocsr()
    n = x.shape[1]
    # co-occurrences an item's row holds at most: the lengths of its rows
    work = np.bincount(
        np.repeat(np.arange(n), np.diff(xt.indptr)),
        weights=np.diff(x.indptr)[xt.indices],
        minlength=n,
    )
    start = 0
    while start < n:
        stop = int(np.searchsorted(np.cumsum(work[start:]), budget)) + start
        stop = min(n, max(stop, start + 1))
        yield start, xt[start:stop] @ x
        start = stop


def _cat(parts: list[np.ndarray], like: np.ndarray) -> np.ndarray:
    return np.concatenate(parts) if parts else like[:0]


def _lists_in_threads(
    part: Any, bounds: np.ndarray, k: int, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lists of at most ``k`` (item, value) for rows 0..bounds[-1]-1, the rows
    cut at ``bounds`` and filled by ``part(r0, r1, count, item, value)`` (the
    compiled pass: its outputs are views of one array each) on a few threads;
    then flattened to ``(row, item, value)`` in row order."""
    n = int(bounds[-1])
    count = np.zeros(n, dtype=np.int64)
    item = np.zeros(n * k, dtype=np.int64)
    value = np.zeros(n * k)
    spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))

    def run(span: tuple[int, int]) -> int:
        r0, r1 = span
        return int(part(r0, r1, count[r0:r1], item[r0 * k : r1 * k], value[r0 * k : r1 * k]))

    with ThreadPoolExecutor(max_workers=max(1, len(spans))) as pool:
        if any(status != 0 for status in pool.map(run, spans)):
            raise MemoryError(f"item-kNN: not enough memory for {what}")
    keep = (np.arange(n * k) % k) < np.repeat(count, k)
    return np.repeat(np.arange(n), count), item[keep], value[keep]


class RandomRecommender(Recommender):
    """Items drawn uniformly without replacement among those the user has not
    seen; each list gets ``k`` Uniform[0, 1) scores sorted descending.
    Reproducible with ``seed`` (the same call gives the same run)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        check_seed(seed)
        self.seed = seed

    def recommend(
        self, users: Iterable[Any] | None = None, k: int = 10, *, exclude_seen: bool = True
    ) -> pd.DataFrame:
        """See :meth:`Recommender.recommend`."""
        self._rng = np.random.default_rng(self.seed)
        return super().recommend(users, k, exclude_seen=exclude_seen)

    def _block(
        self, codes: np.ndarray, k: int, exclude_seen: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, m = len(codes), len(self.item_ids)
        r, c = self._seen(codes) if exclude_seen else (np.zeros(0, np.int64),) * 2
        n_seen = np.bincount(r, minlength=b)
        avail = m - n_seen
        draws = 2 * k + 8
        # Sample positions j among each user's unseen items (with replacement,
        # repeats dropped), then map j to the j-th unseen item.
        cand = np.floor(self._rng.random((b, draws)) * avail[:, None]).astype(np.int64)
        idx = np.argsort(cand, axis=1, kind="stable")
        sc = np.take_along_axis(cand, idx, axis=1)
        dup_sorted = np.zeros(sc.shape, dtype=bool)
        dup_sorted[:, 1:] = sc[:, 1:] == sc[:, :-1]
        valid = np.empty_like(dup_sorted)
        np.put_along_axis(valid, idx, ~dup_sorted, axis=1)
        valid &= (avail > 0)[:, None]
        take = valid & (np.cumsum(valid, axis=1) <= k)
        rows, j = np.nonzero(take)
        pos = cand[rows, j]
        if len(r):
            start = np.r_[0, np.cumsum(n_seen)[:-1]]
            adjusted = r * m + (c - (np.arange(len(r)) - start[r]))
            pos = pos + np.searchsorted(adjusted, rows * m + pos, side="right") - start[rows]
        cols = pos
        # Users left short by repeated draws (tiny catalogs): redo over every item.
        counts = np.bincount(rows, minlength=b)
        short = np.flatnonzero(counts < np.minimum(k, avail))
        if short.size:
            full = self._rng.random((short.size, m))
            sr, sc2 = self._seen(codes[short]) if exclude_seen else (np.zeros(0, np.int64),) * 2
            full[sr, sc2] = -np.inf
            fr, fc, _ = top_k(full, k)
            keep = ~np.isin(rows, short)
            rows = np.r_[rows[keep], short[fr]]
            cols = np.r_[cols[keep], fc]
            o = np.argsort(rows, kind="stable")
            rows, cols = rows[o], cols[o]
            counts = np.bincount(rows, minlength=b)
        scores = -np.sort(-self._rng.random((b, k)), axis=1)
        rank = np.arange(len(rows)) - np.r_[0, np.cumsum(counts)[:-1]][rows]
        return rows, cols, scores[rows, rank]


class PopularRecommender(Recommender):
    """The most popular items: score = distinct training users with the item."""

    name = "popular"

    def _fit(self) -> None:
        self._order = np.lexsort((np.arange(len(self.pop)), -self.pop))
        self._pos = np.empty_like(self._order)
        self._pos[self._order] = np.arange(len(self._order))

    def _block(
        self, codes: np.ndarray, k: int, exclude_seen: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = len(codes)
        r, c = self._seen(codes) if exclude_seen else (np.zeros(0, np.int64),) * 2
        most_seen = int(np.bincount(r, minlength=b).max()) if b and len(r) else 0
        width = min(len(self._order), k + most_seen)
        free = np.ones((b, width), dtype=bool)
        p = self._pos[c]
        inside = p < width
        free[r[inside], p[inside]] = False
        take = free & (np.cumsum(free, axis=1) <= k)
        rows, j = np.nonzero(take)
        cols = self._order[j]
        return rows, cols, self.pop[cols].astype(np.float64)


class ItemKNNRecommender(Recommender):
    """Item-based k-nearest neighbours on cosine similarity of co-occurrence.

    Args:
        neighbors: similar items kept per item (the k of kNN).
        shrink: added to the cosine's denominator (damps rare co-occurrences).
    """

    name = "item_knn"

    def __init__(self, neighbors: int = 100, shrink: float = 0.0) -> None:
        super().__init__()
        if neighbors < 1:
            raise ReceValError(f"neighbors must be >= 1; got {neighbors}")
        self.neighbors = int(neighbors)
        self.shrink = float(shrink)
        self.similarity: sp.csr_matrix = sp.csr_matrix((0, 0))

    def _fit(self) -> None:
        x = self.matrix
        n = x.shape[1]
        norm = np.sqrt(self.pop)
        # the item -> users and user -> items lists (ascending ids in each)
        self._user_ptr = x.indptr.astype(np.int64)
        self._user_items = x.indices.astype(np.int64)
        if NATIVE is not None:
            rows, cols, vals = self._native_neighbors(norm)
        else:
            rows, cols, vals = self._numpy_neighbors(norm)
        self.similarity = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
        self._sim_ptr = self.similarity.indptr.astype(np.int64)
        self._sim_items = self.similarity.indices.astype(np.int64)
        self._fill = -1.0 + self.pop / (self.pop.max() + 1.0)
        # the fill's order: fill value descending, then item id (as top_k orders)
        self._fill_order = np.lexsort((np.arange(n), -self._fill)).astype(np.int64)
        self._fill_rank = np.empty(n, dtype=np.int64)
        self._fill_rank[self._fill_order] = np.arange(n)

    def _numpy_neighbors(self, norm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each item's ``neighbors`` most similar items (ties: item id ascending),
        from the nonzero co-occurrences of blocks of items (X_block^T X), side by
        side (−inf pads): the dense rows' cosines and order, without them."""
        rows_, cols_, vals_ = [], [], []
        # about BLOCK_CELLS / 8 co-occurrences (and at least one item) at once
        for start, product in cooccurrence_blocks(self.matrix, BLOCK_CELLS >> 3):
            sub = product.tocsr()
            sub.eliminate_zeros()
            sub.sort_indices()  # within a row, positions follow item ids
            sizes = np.diff(sub.indptr)
            if sub.nnz:
                row = np.repeat(np.arange(sub.shape[0]), sizes)
                col = sub.indices.astype(np.int64)
                sim = sub.data / (norm[start + row] * norm[col] + self.shrink)
                sim[col == start + row] = -np.inf  # an item is not its own neighbour
                pos = np.arange(sub.nnz) - sub.indptr[row]
                padded = np.full((sub.shape[0], int(sizes.max())), -np.inf)
                padded[row, pos] = sim
                items = np.zeros(padded.shape, dtype=np.int64)
                items[row, pos] = col
                r, q, v = top_k(padded, self.neighbors)
                rows_.append(r + start)
                cols_.append(items[r, q])
                vals_.append(v)
        empty = np.zeros(0, dtype=np.int64)
        return _cat(rows_, empty), _cat(cols_, empty), _cat(vals_, np.zeros(0))

    def _native_neighbors(self, norm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_numpy_neighbors`' lists from the compiled pass, items split in
        ranges of equal work over a few threads (each item's list is its own)."""
        x = self.matrix
        xc = x.tocsc()
        item_ptr = xc.indptr.astype(np.int64)
        item_users = xc.indices.astype(np.int64)
        n, k = x.shape[1], self.neighbors
        work = np.cumsum(np.add.reduceat(np.diff(x.indptr)[item_users], item_ptr[:-1]))
        work = np.where(np.diff(item_ptr) > 0, work, np.maximum.accumulate(work))
        cuts = np.searchsorted(work, work[-1] * np.arange(1, THREADS) / THREADS) if n else []
        bounds = np.unique(np.r_[0, cuts, n]).astype(np.int64)
        lists = (item_ptr, item_users, self._user_ptr, self._user_items, norm, self.shrink, k)

        def part(i0: int, i1: int, count: Any, item: Any, sim: Any) -> int:
            return int(NATIVE.knn_neighbors(*lists, i0, i1, count, item, sim))

        return _lists_in_threads(part, bounds, k, "the neighbour lists")

    def _block(
        self, codes: np.ndarray, k: int, exclude_seen: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-k of a block of users from the sparse scores: the items with a
        positive score (similar to one the user has), best first, then, while
        the list is short, the fill (popularity order) — the dense scores'
        top-k (:meth:`_scores`) without a dense users × items matrix."""
        if NATIVE is not None:
            return self._native_block(codes, k, exclude_seen)
        known = np.flatnonzero(codes >= 0)
        rows = cols = np.zeros(0, dtype=np.int64)
        vals = np.zeros(0)
        seen_r, seen_c = self._seen(codes) if exclude_seen else (rows, cols)
        has = np.zeros(len(codes), dtype=np.int64)
        if known.size:
            x = self.matrix[codes[known]]
            s = (x @ self.similarity).tocsr()
            if exclude_seen:  # a seen item's score becomes 0, and 0 is no candidate
                s = s - s.multiply(x).tocsr()
            s.data[s.data <= 0] = 0.0
            s.eliminate_zeros()
            s.sort_indices()  # within a row, positions follow item ids
            lengths = np.diff(s.indptr)
            has[known] = lengths
            if s.nnz:
                # the candidates of each row side by side (−inf pads): top_k's
                # ties by position are ties by item id
                row = np.repeat(np.arange(len(known)), lengths)
                pos = np.arange(s.nnz) - s.indptr[row]
                padded = np.full((len(known), int(lengths.max())), -np.inf)
                padded[row, pos] = s.data
                items = np.zeros(padded.shape, dtype=np.int64)
                items[row, pos] = s.indices
                r, p, vals = top_k(padded, k)
                rows, cols = known[r].astype(np.int64), items[r, p]
        need = np.maximum(k - np.minimum(has, k), 0)
        short = np.flatnonzero(need > 0)
        if short.size:
            fr, fc = self._fill_rows(short, need[short], rows, cols, has, seen_r, seen_c)
            rows = np.concatenate([rows, fr])
            cols = np.concatenate([cols, fc])
            vals = np.concatenate([vals, self._fill[fc]])
            order = np.lexsort((cols, -vals, rows))
            rows, cols, vals = rows[order], cols[order], vals[order]
        return rows, cols, vals

    def _native_block(
        self, codes: np.ndarray, k: int, exclude_seen: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_block`'s lists from the compiled pass (the same sums in the same
        order, the same ties), users split over a few threads."""
        b = len(codes)
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        bounds = np.linspace(0, b, min(THREADS, b) + 1).astype(np.int64)
        model = (self._user_ptr, self._user_items, self._sim_ptr, self._sim_items)
        fill = (self._fill, self._fill_order, k, exclude_seen)

        def part(r0: int, r1: int, count: Any, item: Any, score: Any) -> int:
            sim = self.similarity.data
            return int(NATIVE.knn_top(*model, sim, codes[r0:r1], *fill, count, item, score))

        return _lists_in_threads(part, bounds, k, "the lists")

    def _users_per_block(self) -> int:
        """Users scored at once: about BLOCK_CELLS candidate scores (a user's
        candidates are at most its items × the neighbours kept, and the items);
        the compiled pass keeps one list per user, so its blocks are larger."""
        if NATIVE is not None:
            return 1 << 16
        per_user = self.matrix.nnz / max(1, self.matrix.shape[0]) * self.neighbors
        # an eighth of BLOCK_CELLS: a block is padded to its longest row, which
        # grows with the block (measured: 128-300 users best at 200k users)
        return max(1, int((BLOCK_CELLS >> 3) // max(1.0, min(per_user, len(self.item_ids)))))

    def _fill_rows(
        self,
        short: np.ndarray,
        need: np.ndarray,
        rows: np.ndarray,
        cols: np.ndarray,
        has: np.ndarray,
        seen_r: np.ndarray,
        seen_c: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """For the rows ``short`` (block rows with fewer than k candidates),
        the first ``need`` items of the fill order that are neither seen nor
        already candidates: (block row, item)."""
        n_items = len(self.item_ids)
        where = np.full(int(short.max()) + 1, -1, dtype=np.int64)
        where[short] = np.arange(short.size)
        excluded_r = np.concatenate([rows, seen_r])
        excluded_c = np.concatenate([cols, seen_c])
        mine = excluded_r <= short.max()
        excluded_r, excluded_c = excluded_r[mine], excluded_c[mine]
        mine = where[excluded_r] >= 0
        er, ec = where[excluded_r[mine]], excluded_c[mine]
        per_row = np.bincount(er, minlength=short.size)
        width = int(min(n_items, (need + per_row).max()))
        position = self._fill_rank[ec]  # place of each excluded item in the fill order
        inside = position < width
        blocked = np.zeros((short.size, width), dtype=bool)
        blocked[er[inside], position[inside]] = True
        free = ~blocked
        take = free & (np.cumsum(free, axis=1) <= need[:, None])
        r, p = np.nonzero(take)
        return short[r], self._fill_order[p]

    def _scores(self, codes: np.ndarray, block: int) -> np.ndarray:
        known = np.flatnonzero(codes >= 0)
        if known.size == len(codes):
            dense = (self.matrix[codes] @ self.similarity).toarray()
        else:
            dense = np.zeros((len(codes), len(self.item_ids)))
            if known.size:
                dense[known] = (self.matrix[codes[known]] @ self.similarity).toarray()
        return np.where(dense > 0, dense, self._fill)


BASELINES: dict[str, type[Recommender]] = {
    "random": RandomRecommender,
    "popular": PopularRecommender,
    "item_knn": ItemKNNRecommender,
}

Baseline = Literal["random", "popular", "item_knn"]


def recommend(
    model: Baseline,
    train: Any,
    users: Iterable[Any] | None = None,
    k: int = 10,
    *,
    exclude_seen: bool = True,
    seed: int = 0,
    neighbors: int = 100,
    shrink: float = 0.0,
    user_col: str = "user",
    item_col: str = "item",
) -> pd.DataFrame:
    """Fit a baseline on ``train`` and return its top-``k`` run (user, item, score, rank).

    Args:
        model: ``random``, ``popular`` or ``item_knn`` (also ``most_popular``,
            ``pop``, ``knn``, ``itemknn``).
        train: training interactions (user and item columns).
        users: whom to recommend to (default: every training user).
        k: list length.
        exclude_seen: never recommend an item the user has in train.
        seed: the seed of ``random``.
        neighbors, shrink: ``item_knn`` parameters.
        user_col, item_col: column names (kept in the output).

    Example:
        >>> import pandas as pd
        >>> train = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [1, 2, 1, 3, 1]})
        >>> recommend("item_knn", train, users=[3], k=2)["item"].tolist()
        [2, 3]
    """
    aliases = {
        "most_popular": "popular",
        "pop": "popular",
        "mostpop": "popular",
        "knn": "item_knn",
        "itemknn": "item_knn",
        "item-knn": "item_knn",
        "rand": "random",
    }
    name = aliases.get(str(model).lower(), str(model).lower())
    if name not in BASELINES:
        raise ReceValError(f"unknown baseline {model!r} (choose from {', '.join(BASELINES)})")
    rec: Recommender
    if name == "random":
        rec = RandomRecommender(seed=seed)
    elif name == "item_knn":
        rec = ItemKNNRecommender(neighbors=neighbors, shrink=shrink)
    else:
        rec = PopularRecommender()
    rec.fit(train, user_col=user_col, item_col=item_col)
    return rec.recommend(users, k, exclude_seen=exclude_seen)
