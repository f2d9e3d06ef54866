"""The engine-neutral input of every ranking kernel: a block of users as arrays.

An engine (in-process NumPy, a chunked file reader, Spark partitions) turns ids,
scores and grades into a :class:`Batch`; kernels never see an id. One batch
serves every metric and every cut-off: derived arrays (hits at each cut-off,
discounted gains, ...) are computed once and cached on the batch.

The relevant items of the lists, and the users' ideal grades, are held as
:class:`Cells`: the few nonzero cells of a (users × positions) matrix, user by
user in list order. Sums over a user's relevant items (hits@k, DCG@k, the AP
numerator, ...) then cost one pass over those cells, not over every position.
The dense matrices (``gains``, ``ideal``) are built from the cells only when a
kernel asks for them (ERR, RBP, AUC, ...). Both views hold the same numbers,
and a sum over cells adds the same terms in the same order as a running sum
along the dense row (zeros add nothing), so they agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from receval._accel import NATIVE as _native

if TYPE_CHECKING:
    from receval.metrics.context import ItemContext

__all__ = ["Batch", "Cells", "cumsum_rows"]


def cumsum_rows(x: np.ndarray, dtype: Any = None) -> np.ndarray:
    """``np.cumsum(x, axis=1)``, bit for bit, computed column by column.

    Each user's sum is still accumulated left to right, one position at a
    time, so the result is exactly NumPy's; but every step adds one column of
    all users at once (contiguous in the column-major result), which is 2.5-6x
    faster than NumPy's row-by-row accumulate on these (users, positions)
    matrices. With receval's compiled module the whole loop is one call.
    """
    if x.ndim != 2 or x.shape[0] < 64:
        return np.cumsum(x, axis=1, dtype=dtype)
    kind = _native_kind(x.dtype, np.dtype(dtype) if dtype is not None else None)
    if kind is not None and x.flags.f_contiguous and x.shape[1]:
        out = np.empty(x.shape, dtype=np.float64 if kind == 0 else np.int64, order="F")
        _native.cumsum(x.T, out.T, x.shape[0], kind)
        return out
    out = np.array(x, dtype=dtype, order="F")
    for j in range(1, out.shape[1]):
        np.add(out[:, j - 1], out[:, j], out=out[:, j])
    return out


def _native_kind(src: np.dtype, dst: np.dtype | None) -> int | None:
    """The compiled running sum that matches (input, output) dtypes, if any.
    (``dst is None`` is tested by identity: a dtype compares equal to None, which
    NumPy reads as float64, so ``dst in (None, np.int64)`` held for float64.)"""
    if _native is None:
        return None
    if src == np.float64 and (dst is None or dst == np.float64):
        return 0
    if src == np.int64 and (dst is None or dst == np.int64):
        return 1
    if src == np.bool_ and dst == np.int64:
        return 2
    return None


@dataclass(frozen=True)
class Cells:
    """The nonzero cells of an ``(m, width)`` matrix, row by row.

    Attributes:
        user: ``(c,)`` int64, the row (block-local user index) of each cell,
            non-decreasing.
        pos: ``(c,)`` int64, the 0-based column (list position) of each cell,
            increasing within a row; every ``pos < width``.
        value: ``(c,)`` float64, the cell's value (> 0).
        offsets: ``(m + 1,)`` int64: row ``u``'s cells are
            ``offsets[u]:offsets[u + 1]``.
        width: the number of columns of the matrix.

    Example:
        >>> c = Cells.from_dense(np.array([[0.0, 2.0, 1.0], [0.0, 0.0, 0.0]]))
        >>> c.user.tolist(), c.pos.tolist(), c.value.tolist(), c.offsets.tolist()
        ([0, 0], [1, 2], [2.0, 1.0], [0, 2, 2])
        >>> c.dense().tolist()
        [[0.0, 2.0, 1.0], [0.0, 0.0, 0.0]]
    """

    user: np.ndarray
    pos: np.ndarray
    value: np.ndarray
    offsets: np.ndarray
    width: int
    _upto: dict[int, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def rows(self) -> int:
        """Number of rows (users) m."""
        return len(self.offsets) - 1

    @classmethod
    def from_dense(cls, matrix: np.ndarray) -> Cells:
        """The cells of a dense ``(m, width)`` matrix (those != 0)."""
        user, pos = np.nonzero(matrix)  # row-major order, whatever the layout
        counts = np.bincount(user, minlength=matrix.shape[0])
        offsets = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(
            user.astype(np.int64),
            pos.astype(np.int64),
            np.asarray(matrix[user, pos], dtype=np.float64),
            offsets,
            int(matrix.shape[1]),
        )

    def dense(self) -> np.ndarray:
        """The ``(m, width)`` float64 matrix, column-major (a position of
        every user contiguous: what the column-by-column running sums read)."""
        m = self.rows
        out = np.zeros((self.width, m))
        out.reshape(-1)[self.pos * m + self.user] = self.value
        return out.T

    def upto(self, k: int | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The cells at positions < k: (their rows, a mask over the cells);
        None when that is every cell (k None or k >= width)."""
        if k is None or k >= self.width:
            return None
        got = self._upto.get(k)
        if got is None:
            mask = self.pos < k
            got = self._upto[k] = (self.user[mask], mask)
        return got

    def row_sums(self, terms: np.ndarray, k: int | None = None) -> np.ndarray:
        """``(m,)`` float64: per row, Σ terms over the cells at positions < k,
        added left to right (the last column of a running sum along the row).

        ``np.bincount`` adds its weights one by one in input order, and the
        cells of a row are in position order: the same additions as a running
        sum along the dense row, whose other terms are 0.
        """
        if k is not None and k < self.width:
            out = self._compiled(terms, k, np.float64)
            if out is not None:
                return out
        sel = self.upto(k)
        if sel is None:
            return np.bincount(self.user, weights=terms, minlength=self.rows)
        return np.bincount(sel[0], weights=terms[sel[1]], minlength=self.rows)

    def counts(self, k: int | None = None) -> np.ndarray:
        """``(m,)`` int64: per row, the cells at positions < k."""
        if k is None or k >= self.width:
            return np.diff(self.offsets)
        out = self._compiled(None, k, np.int64)
        if out is not None:
            return out
        sel = self.upto(k)
        assert sel is not None
        return np.bincount(sel[0], minlength=self.rows)

    def _compiled(self, terms: np.ndarray | None, k: int, dtype: Any) -> np.ndarray | None:
        """:meth:`row_sums` (or, ``terms`` None, :meth:`counts`) at positions
        < k in one compiled pass along each row's cells (the same additions
        in the same order), or None without the compiled module (or for
        arrays it does not read: then NumPy's mask and ``np.bincount``)."""
        row_sums = getattr(_native, "row_sums", None)
        if row_sums is None or self.pos.dtype != np.int64 or self.offsets.dtype != np.int64:
            return None
        if terms is not None and (terms.dtype != np.float64 or terms.shape != self.pos.shape):
            return None
        out = np.empty(self.rows, dtype)
        c = np.ascontiguousarray
        if row_sums(c(self.offsets), c(self.pos), None if terms is None else c(terms), k, out):
            return None  # offsets that do not describe the cells: NumPy's path says so
        return out

    def first(self, of: np.ndarray | None = None) -> np.ndarray:
        """``(m,)``: per row, ``of`` (a per-cell array; default ``value``) at
        the row's first cell, 0 for an empty row."""
        of = self.value if of is None else of
        out = np.zeros(self.rows, dtype=of.dtype)
        has = self.offsets[1:] > self.offsets[:-1]
        out[has] = of[self.offsets[:-1][has]]
        return out


@dataclass(eq=False)
class Batch:
    """Per-user arrays for a block of ``m`` users.

    Attributes:
        hits: :class:`Cells` of the list's relevant items: ``value`` is the
            grade (grade >= threshold and > 0), ``pos`` the 0-based position,
            ``width`` = W. W is at least the largest cut-off any metric needs
            (or the longest list in the block when a metric has no cut-off),
            and >= 1; relevant items past W are not held.
        ideal_cells: :class:`Cells` of the user's relevant grades sorted
            descending (``pos`` = rank in that order); ``width`` = Wi covers
            every cut-off a metric needs (all R when a metric has no cut-off).
        gains: ``(m, W)`` float64, ``hits`` as a dense matrix (built on first
            use): ``gains[u, i]`` is the grade of the item at position
            ``i + 1`` when relevant, else 0; positions past the list are 0.
        ideal: ``(m, Wi)`` float64, ``ideal_cells`` as a dense matrix, zero
            padded (built on first use).
        n: ``(m,)`` int64, the full length of each list (may exceed ``W``).
        n_relevant: ``(m,)`` int64, R: the user's number of relevant items.
        tie_start, tie_end: ``(m, W)`` int64 or None. The 1-based first and
            last positions of the group of equal scores the item at each
            position belongs to (both equal to the position itself when it is
            tied with nothing). Only built for ``auc``; None means no ties
            (rank or mapping input).
        max_grade: the largest grade in the whole truth (not just this block):
            ERR's default normaliser.
        item_index: ``(m, W)`` int64 or None: the context index of the item at
            each position (see :class:`~receval.metrics.context.ItemContext`); only
            built for beyond-accuracy metrics.
        items: the item context those indexes point into, or None.
        recommended: ``(m, W)`` bool or None: explicit-feedback input only —
            is the item at each position recommended (predicted rating >=
            threshold). Items not recommended are never hits (their gain is 0).
        positive_hits, positive_ideal_cells: like ``hits`` and ``ideal_cells``
            but with every grade > 0 whatever the relevance threshold
            (trec_eval's nDCG under ``-l``); only built when a metric asks for
            ``grades=positive``.
        slots: :class:`Cells` of the positions that hold an item (value 1),
            only when ranks are positions (``rank="position"``), whose gaps
            are empty positions; None: positions 1..n all hold an item.
        history: ``(offsets, items)`` or None: each user's training items as
            context indexes, user ``u``'s ``items[offsets[u]:offsets[u + 1]]``;
            only built for metrics that read the history (miscalibration).
        judged: :class:`Cells` (value 1) of the positions holding a judged
            item: one in the user's truth with a grade >= 0, relevant or not.
            Only built for metrics that read judgments (bpref, infAP,
            judged@k, ...); the positions not in it hold unjudged items.
        pooled: :class:`Cells` (value 1) of the positions holding an item
            pooled but not judged (a negative grade under
            ``negative_grades="unjudged"``); with ``judged``.
        n_judged: ``(m,)`` int64, the user's judged items (truth rows with a
            grade >= 0); with ``judged``. Judged non-relevant: n_judged − R.
        catalog_size: how many items a full ranking would rank (sampled
            evaluation); None when the lists are full rankings.
        scored_hits: like ``hits`` but without the items scored <= 0
            (torchmetrics never counts them as hits); only built when a metric
            asks for ``scores=positive``. Without scores it is ``hits``.
        tied_gains: (gain, grades) → :class:`Cells` of the list's gains
            (already transformed by ``gain``, of ``hits`` or ``positive_hits``
            by ``grades``) with each item's gain replaced by the mean gain of
            its group of equal scores over the whole list; only built for
            ``tied=average`` (torchmetrics' nDCG).
        listed: ``(m,)`` bool or None: was the user's list given (it may be
            empty, or condensed to nothing under ``unjudged="condense"``),
            as against a user without a list that a policy keeps
            (``missing_recs="zero"``: trec_eval's ``-c``); None: every user's
            was. Read by the kernels whose value of a list given empty is not
            that of a missing one (``iprec[empty=nan]``).
        graded_hits, graded_ideal_cells: under ``graded=False`` (binary
            relevance), the grades of the relevant items as gains, whatever
            they are (0 and negative ones included), and each user's grades
            of its relevant truth rows sorted descending; only built when a
            metric reads grades as gains (``gain=linear``/``exp``: LensKit's
            ``NDCG(gain='rating')``), which then sees them as ``hits`` and
            ``ideal_cells`` (:meth:`graded_view`).
        pairs: :class:`Cells` of the (list row, truth row) pairs at each
            relevant position, when the engine joined repeated rows
            (``duplicates="join"`` / ``"left_join"``, only where some row
            repeats): every pair is a hit, so hits@k is Σ pairs over the top
            k and values such as precision or recall can exceed 1. Its cells
            are those of ``hits``. None: each relevant position is one hit.
        each_pair: with ``pairs``, AP adds one term per pair (the c-th pair
            at position i adds (pairs above i + c) / i: Microsoft
            Recommenders' ``map_at_k``) rather than one per position
            ((pairs up to i) / i: RecTools' ``MAP``).
        rejoined, rejoin_extra: with ``pairs`` under ``duplicates="join"``,
            nDCG's gain at each position (its pairs joined once more with the
            list's and the truth's rows of the item: pairs² × list rows of the
            item) and the rows that join adds to the ideal there (its ideal
            of the top k holds R + Σ rejoin_extra over the top k rows of
            gain 1): Recommenders' ``ndcg_at_k``, binary gain.
        distinct_hits, n_distinct: under ``duplicates="count_distinct"``,
            ``hits`` at the first position of each item only, and each user's
            distinct relevant items: what precision and recall count (RePlay's
            ``set(pred[:k]) & set(ground_truth)``).
        hit_weights: ``(c,)`` float64 or None: per cell of ``hits``, the
            inverse propensity 1/p of that relevant (user, item) pair (``inf``
            for p = 0); only built when a metric asks for ``weighting=``
            (:func:`~receval.metrics.kernels.ranking.pair_weights`). The views
            that replace ``hits`` (:meth:`scored_positive`, :meth:`graded_view`)
            drop it.
        relevant_weights: ``(users, weights)`` or None: 1/p of every relevant
            (user, item) pair of the block's users, ``users`` the block-local
            user of each (non-decreasing), each user's weights ascending (so a
            sum over them never depends on the order of the truth's rows); with
            ``hit_weights``, when a metric asks for ``weighting=snips``.

    Example:
        >>> gains = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
        >>> b = Batch(Cells.from_dense(gains), Cells.from_dense(np.array([[1.0], [2.0]])),
        ...           n=np.array([3, 1]), n_relevant=np.array([1, 1]))
        >>> b.hits_at(1).tolist(), b.hits_at(None).tolist()
        ([0, 1], [1, 1])
    """

    hits: Cells
    ideal_cells: Cells
    n: np.ndarray
    n_relevant: np.ndarray
    tie_start: np.ndarray | None = None
    tie_end: np.ndarray | None = None
    max_grade: float = 1.0
    item_index: np.ndarray | None = None
    items: ItemContext | None = None
    recommended: np.ndarray | None = None
    positive_hits: Cells | None = None
    positive_ideal_cells: Cells | None = None
    slots: Cells | None = None
    history: tuple[np.ndarray, np.ndarray] | None = None
    judged: Cells | None = None
    pooled: Cells | None = None
    n_judged: np.ndarray | None = None
    catalog_size: int | None = None
    scored_hits: Cells | None = None
    listed: np.ndarray | None = None
    tied_gains: dict[tuple[str, str], Cells] | None = None
    graded_hits: Cells | None = None
    graded_ideal_cells: Cells | None = None
    pairs: Cells | None = None
    each_pair: bool = False
    rejoined: Cells | None = None
    rejoin_extra: Cells | None = None
    distinct_hits: Cells | None = None
    n_distinct: np.ndarray | None = None
    hit_weights: np.ndarray | None = None
    relevant_weights: tuple[np.ndarray, np.ndarray] | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        """Number of users in the block."""
        return len(self.n)

    @property
    def width(self) -> int:
        """Number of list positions held (W)."""
        return self.hits.width

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """Return ``compute()`` once per batch and key."""
        value = self._cache.get(key)
        if value is None:
            value = compute()
            self._cache[key] = value
        return value

    # Dense views, built on first use ---------------------------------------

    @property
    def gains(self) -> np.ndarray:
        """``(m, W)`` float64 grades of the relevant items by position."""
        return self.cached("gains", self.hits.dense)

    @property
    def ideal(self) -> np.ndarray:
        """``(m, Wi)`` float64 relevant grades sorted descending, zero padded."""
        return self.cached("ideal", self.ideal_cells.dense)

    def dense_built(self) -> bool:
        """Whether a kernel has asked for a dense ``(m, W)`` matrix so far."""
        return any(key in self._cache for key in ("gains", "ideal", "filled"))

    def scored_positive(self) -> Batch:
        """This batch with only the items scored > 0 as hits (``scored_hits``):
        the view of ``scores=positive`` (torchmetrics' precision, recall, AP
        and RR, which read ``torch.where(preds > 0, target, 0)``). R and the
        ideal are unchanged."""
        if self.scored_hits is None:
            raise ValueError("scores=positive needs the engine's scored_hits")
        if self.pairs is not None:
            raise ValueError(
                "scores=positive is not supported with repeated rows joined "
                "(duplicates='join' or 'left_join'): give scores=any or another duplicates value"
            )

        def view() -> Batch:
            return replace(self, hits=self.scored_hits, hit_weights=None, _cache={})

        return self.cached("scored_positive", view)

    def graded_view(self) -> Batch:
        """This batch with the grades as gains (``graded_hits``,
        ``graded_ideal_cells``) in place of ``hits`` and ``ideal_cells``: the
        view of a metric that reads grades as gains under binary relevance.
        R and the lists are unchanged."""
        if self.graded_hits is None or self.graded_ideal_cells is None:
            raise ValueError("the graded view needs the engine's graded_hits")
        if self.pairs is not None:
            raise ValueError(
                "grades read as gains under graded=False are not supported with repeated rows "
                "joined (duplicates='join' or 'left_join'): give gain=binary, graded=True, or "
                "another duplicates value"
            )
        hits, ideal = self.graded_hits, self.graded_ideal_cells

        def view() -> Batch:
            return replace(self, hits=hits, ideal_cells=ideal, hit_weights=None, _cache={})

        return self.cached("graded_view", view)

    # Derived arrays shared by several metrics -----------------------------

    def retrieved(self, k: int | None) -> np.ndarray:
        """``(m,)`` int64: the items in the first k positions, min(k, n) (n
        without k); with empty positions (``slots``), the items counted."""
        if self.slots is None:
            return self.n if k is None else np.minimum(k, self.n)
        key = None if k is None or k >= self.width else k
        return self.cached(("retrieved", key), lambda: self.slots.counts(key))  # type: ignore[union-attr]

    def filled(self) -> np.ndarray | None:
        """``(m, W)`` bool: does the position hold an item (None: every
        position up to n does)."""
        if self.slots is None:
            return None
        return self.cached("filled", lambda: self.slots.dense() > 0)  # type: ignore[union-attr]

    def relevant(self) -> np.ndarray:
        """``(m, W)`` bool: is the item at each position relevant."""
        return self.cached("rel", lambda: self.gains > 0)

    def positions(self) -> np.ndarray:
        """``(W,)`` float64: 1, 2, ..., W."""
        return self.cached("positions", lambda: np.arange(1, self.width + 1, dtype=np.float64))

    def hits_at(self, k: int | None) -> np.ndarray:
        """``(m,)`` int64: hits@k (the whole list when k is None); with
        ``pairs``, the (list row, truth row) pairs in the top k."""
        key = None if k is None or k >= self.width else k
        pairs = self.pairs
        if pairs is not None:
            return self.cached(
                ("pairs_at", key),
                lambda: np.rint(pairs.row_sums(pairs.value, key)).astype(np.int64),
            )
        return self.cached(("hits_at", key), lambda: self.hits.counts(key))

    def hits_at_each(self, s: np.ndarray) -> np.ndarray:
        """``(m,)`` int64: hits at a per-user cut-off ``s`` (0 where s <= 0)."""
        c = self.hits if self.pairs is None else self.pairs
        inside = c.pos < s[c.user]
        if self.pairs is None:
            return np.bincount(c.user[inside], minlength=self.size)
        sums = np.bincount(c.user[inside], weights=c.value[inside], minlength=self.size)
        return np.rint(sums).astype(np.int64)

    def distinct_at(self, k: int | None) -> np.ndarray:
        """``(m,)`` int64: the distinct relevant items in the top k
        (``distinct_hits``; hits@k when no item repeats)."""
        if self.distinct_hits is None:
            return self.hits_at(k)
        key = None if k is None or k >= self.width else k
        cells = self.distinct_hits
        return self.cached(("distinct_at", key), lambda: cells.counts(key))

    def hit_rank(self) -> np.ndarray:
        """``(c,)`` int64, per cell of ``hits``: hits@i at its position i, i.e.
        its 1-based rank among the user's relevant items in list order."""

        def compute() -> np.ndarray:
            c = self.hits
            return np.arange(1, len(c.user) + 1, dtype=np.int64) - c.offsets[c.user]

        return self.cached("hit_rank", compute)

    def first_hit(self) -> np.ndarray:
        """``(m,)`` int64: 1-based position of the first relevant item, 0 when
        there is none."""

        return self.cached("first_hit", lambda: self.hits.first(self.hits.pos + 1))

    def col(self, k: int | None) -> int:
        """Index of the last column a cut-off ``k`` reads (the last one for None)."""
        return self.width - 1 if k is None else min(k, self.width) - 1
