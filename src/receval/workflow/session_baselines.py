"""Reference recommenders for sessions: recent popularity, session item-kNN, Markov.

Baselines for :func:`receval.evaluate_next_items` (docs/next-items.md,
"Baselines for sessions"). Each is fitted on training sessions (a table
with a session, an item and a time column; rows of one session in time
order, equal times in row order) and gives, for the prefixes of test
sessions, top-``k`` lists in the form ``evaluate_next_items`` reads
(``session``, ``step``, ``item``, ``score``, ``rank``).

- :class:`RecentPopularRecommender` (``recent_popular``): score(j) = the
  number of distinct training sessions with an event of j in the window
  ``(now − window, now]`` (``now``: the last training time unless given);
  items without an event there come after, by all-time popularity.
- :class:`SessionItemKNNRecommender` (``session_item_knn``): session-rec's
  item-based kNN on co-occurrence in sessions (``algorithms/knn/iknn.py``,
  class ``ItemKNN``): with ``c(s, i)`` the events of item i in session s,
  ``sim(i, j) = Σ_s c(s, i) · c(s, j) / ((supp_i + λ)^α · (supp_j + λ)^(1−α))``
  (``supp_i = Σ_s c(s, i)``, the events of i; ``sim(i, i) = 0``), each item
  keeping its ``neighbors`` most similar items; the list after a prefix
  scores j by ``sim(last, j)``, ``last`` the prefix's last item.
- :class:`MarkovRecommender` (``markov``): first-order transitions: with
  ``T(i, j)`` the consecutive pairs (i then j) within training sessions,
  score(j) = ``P(next = j | last = i) = T(i, j) / Σ_j' T(i, j')``.

Items the model does not score (no neighbour or transition of the last
item, a last item unknown in training) are filled in by popularity with
scores ``−1 + pop(j) / (max pop + 1)`` in [−1, 0), below every model score
(``pop``: distinct training sessions with the item), as
:class:`receval.workflow.baselines.ItemKNNRecommender` fills. Ties in score
are broken by item id ascending (the id order of
:func:`receval.ids.order_of`), so the lists do not depend on the training
rows' order nor on the form of the ids (``1``, ``"1"``). With
``exclude_seen=True`` (default) an item of the prefix is never recommended.
Everything is vectorised over the steps of a batch (sparse rows, one sort).

>>> import pandas as pd
>>> train = pd.DataFrame({"session": [1, 1, 1, 2, 2], "item": ["a", "b", "c", "a", "b"],
...                       "time": [1, 2, 3, 4, 5]})
>>> model = MarkovRecommender().fit(train)
>>> prefixes = pd.DataFrame({"session": ["t"], "step": [1], "position": [1], "item": ["a"]})
>>> model.lists(prefixes, k=2).values.tolist()
[['t', 1, 'b', 1.0, 1], ['t', 1, 'c', -0.6666666666666667, 2]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from receval.errors import InputError, OptionError, ReceValError
from receval.ids import as_str, canonical, order_of
from receval.workflow.baselines import BLOCK_CELLS, cooccurrence_blocks
from receval.workflow.split import duration

__all__ = [
    "SESSION_BASELINES",
    "MarkovRecommender",
    "RecentPopularRecommender",
    "SessionItemKNNRecommender",
    "SessionRecommender",
    "session_baseline",
]

_EMPTY = np.zeros(0, dtype=np.int64)


def _table(obj: Any, what: str) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        return obj
    if hasattr(obj, "to_pandas"):
        return obj.to_pandas()
    raise InputError(
        f"expected a table (pandas, polars, pyarrow), found {type(obj).__name__}", source=what
    )


def _need(frame: pd.DataFrame, col: str, role: str, what: str) -> None:
    if col not in frame.columns:
        found = ", ".join(map(str, frame.columns))
        raise InputError(
            f"no {role} column {col!r} (columns found: {found}); name it with {role}_col=",
            source=what,
        )


def _times(s: pd.Series, what: str) -> tuple[np.ndarray, bool]:
    """A time column as sortable numbers (int64 nanoseconds for dates) and
    whether it holds dates."""
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        try:
            s = pd.to_datetime(s)
        except (ValueError, TypeError):
            raise InputError(
                f"time column {s.name!r} holds values that are neither numbers nor dates",
                source=what,
            ) from None
    if pd.api.types.is_datetime64_any_dtype(s):
        if s.isna().any():
            row = int(np.flatnonzero(s.isna().to_numpy())[0])
            raise InputError("missing time", source=what, row=row)
        if getattr(s.dtype, "tz", None) is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        return s.to_numpy().astype("datetime64[ns]").astype(np.int64).astype(np.float64), True
    try:
        values = s.to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        raise InputError(
            f"time column {s.name!r} must hold numbers or dates", source=what
        ) from None
    bad = ~np.isfinite(values)
    if bad.any():
        raise InputError("missing or non-finite time", source=what, row=int(np.flatnonzero(bad)[0]))
    return values, False


def _instant(value: Any, dates: bool) -> float:
    """A time given by the caller (``now=``) on the scale of :func:`_times`."""
    if dates:
        ts = pd.Timestamp(value)
        if ts.tzinfo is not None:
            ts = ts.tz_convert("UTC").tz_localize(None)
        return float(ts.value)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise OptionError("now", value, expected="a number (the time column holds numbers)")
    return float(value)


def _ranked(
    rows: np.ndarray, items: np.ndarray, vals: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The entries (row, item, value) ordered by row, value descending, item
    ascending, at most ``k`` per row."""
    order = np.lexsort((items, -vals, rows))
    rows, items, vals = rows[order], items[order], vals[order]
    if len(rows):
        first = np.r_[True, rows[1:] != rows[:-1]]
        idx = np.arange(len(rows))
        rank = idx - np.maximum.accumulate(np.where(first, idx, 0))
        keep = rank < k
        rows, items, vals = rows[keep], items[keep], vals[keep]
    return rows, items, vals


class SessionRecommender:
    """Base class: ``fit(train)`` on training sessions, then ``lists(prefixes, k)``.

    Subclasses set ``_scores`` (a CSR item × item matrix: row i holds the
    positive scores given after the last item i; None: no such scores) and
    ``_base`` (one score per item, given to every item the row leaves out;
    below every positive score).
    """

    name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.item_ids: np.ndarray = np.zeros(0, dtype=np.int64)
        self.pop: np.ndarray = np.zeros(0)
        self._scores: sp.csr_matrix | None = None
        self._base: np.ndarray = np.zeros(0)
        self._base_order: np.ndarray = _EMPTY
        self._base_rank: np.ndarray = _EMPTY
        self._index: pd.Index = pd.Index([])
        self._str_index: pd.Index | None = None

    def fit(
        self,
        train: Any,
        *,
        session_col: str = "session",
        item_col: str = "item",
        time_col: str | None = "time",
    ) -> SessionRecommender:
        """Learn from training sessions.

        Args:
            train: a table (pandas, polars, pyarrow) with one row per event.
            session_col, item_col: its session and item columns.
            time_col: its time column (numbers or dates) ordering each
                session's events (equal times: row order); None: the rows'
                order. ``RecentPopularRecommender`` needs one.
        """
        what = "train"
        frame = _table(train, what)
        _need(frame, session_col, "session", what)
        _need(frame, item_col, "item", what)
        if time_col is not None:
            _need(frame, time_col, "time", what)
        if len(frame) == 0:
            raise InputError("the training data is empty", source=what)
        canon = canonical(frame[item_col].to_numpy(), "item", what)
        codes, uniques = pd.factorize(canon, sort=False)
        by_id = order_of(np.asarray(uniques, dtype=canon.dtype))
        rank = np.empty(len(by_id), dtype=np.int64)
        rank[by_id] = np.arange(len(by_id))
        items = rank[codes]  # item codes follow the id order: ties by code = ties by id
        self.item_ids = np.asarray(uniques, dtype=canon.dtype)[by_id]
        self._index = pd.Index(self.item_ids)
        self._str_index = None
        sess = frame[session_col]
        if sess.isna().any():
            row = int(np.flatnonzero(sess.isna().to_numpy())[0])
            raise InputError("missing session id", source=what, row=row)
        scodes = pd.factorize(sess, sort=False)[0].astype(np.int64)
        if time_col is not None:
            time, dates = _times(frame[time_col], what)
            order = np.lexsort((np.arange(len(frame)), time, scodes))
        else:
            time, dates = np.zeros(len(frame)), False
            order = np.argsort(scodes, kind="stable")
        n = len(self.item_ids)
        n_sessions = int(scodes.max()) + 1
        counts = sp.csr_matrix(
            (np.ones(len(frame)), (scodes, items)), shape=(n_sessions, n), dtype=np.float64
        )
        counts.sum_duplicates()
        self.pop = np.diff(counts.tocsc().indptr).astype(np.float64)  # sessions with the item
        self._fill = -1.0 + self.pop / (self.pop.max() + 1.0)
        self._base = self._fill
        self._fit(counts, scodes[order], items[order], time[order], dates)
        self._base_order = np.lexsort((np.arange(n), -self._base)).astype(np.int64)
        self._base_rank = np.empty(n, dtype=np.int64)
        self._base_rank[self._base_order] = np.arange(n)
        # each item's row of scores, best first (ties by item id): a list needs
        # only the first k + (items excluded) entries of its last item's row
        self._ptr = np.zeros(n + 1, dtype=np.int64)
        self._cols, self._vals = _EMPTY, np.zeros(0)
        if self._scores is not None:
            coo = self._scores.tocoo()
            keep = coo.data > 0
            r, c, v = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64), coo.data[keep]
            o = np.lexsort((c, -v, r))
            self._cols, self._vals = c[o], v[o]
            self._ptr[1:] = np.cumsum(np.bincount(r, minlength=n))
        return self

    def _fit(
        self,
        counts: sp.csr_matrix,
        sessions: np.ndarray,
        items: np.ndarray,
        time: np.ndarray,
        dates: bool,
    ) -> None:
        """Model-specific fitting: ``counts`` (sessions × items: events), the
        events in session then time order (session codes, item codes, times)."""

    def _codes(self, values: np.ndarray, what: str) -> np.ndarray:
        """Item codes of ids (−1: not in training)."""
        canon = canonical(values, "item", what)
        if canon.dtype == object and self.item_ids.dtype != object:
            if self._str_index is None:
                self._str_index = pd.Index(as_str(self.item_ids))
            return self._str_index.get_indexer(canon)
        if canon.dtype != object and self.item_ids.dtype == object:
            canon = as_str(canon)
        return self._index.get_indexer(canon)

    def lists(self, prefixes: Any, k: int = 20, *, exclude_seen: bool = True) -> pd.DataFrame:
        """The top-``k`` list after each prefix.

        Args:
            prefixes: what :func:`receval.evaluate_next_items` hands a
                callable: one row per item of each prefix, columns
                ``session``, ``step``, ``position`` (1..t) and ``item``.
            k: list length (shorter when fewer items are left).
            exclude_seen: never recommend an item of the prefix.

        Returns:
            ``session``, ``step``, ``item``, ``score``, ``rank`` (1 = best),
            steps in the order they first appear, then by rank.
        """
        if not len(self.item_ids):
            raise ReceValError(f"{type(self).__name__} is not fitted: call fit(train) first")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ReceValError(f"k must be an integer >= 1; got {k!r}")
        what = "prefixes"
        frame = _table(prefixes, what)
        for col in ("session", "step", "position", "item"):
            _need(frame, col, col, what)
        units, first = pd.MultiIndex.from_arrays([frame["session"], frame["step"]]).factorize()
        units = units.astype(np.int64)
        n_units = len(first)
        position = frame["position"].to_numpy()
        codes = self._codes(frame["item"].to_numpy(), what)
        order = np.lexsort((position, units))
        u_sorted = units[order]
        last_row = order[np.r_[u_sorted[1:] != u_sorted[:-1], True]] if len(order) else _EMPTY
        last = np.full(n_units, -1, dtype=np.int64)
        last[units[last_row]] = codes[last_row]
        known = codes >= 0
        seen_u, seen_i = (units[known], codes[known]) if exclude_seen else (_EMPTY, _EMPTY)
        # blocks of steps: about BLOCK_CELLS candidates (scores of the last item, the fill)
        width = 2 * k + (np.bincount(seen_u).max() if len(seen_u) else 0)
        block = max(1, BLOCK_CELLS // max(1, int(width)))
        s_order = np.argsort(seen_u, kind="stable")
        seen_u, seen_i = seen_u[s_order], seen_i[s_order]
        out_r, out_i, out_v = [], [], []
        for start in range(0, n_units, block):
            stop = min(n_units, start + block)
            lo, hi = np.searchsorted(seen_u, [start, stop])
            r, i, v = self._block(last[start:stop], seen_u[lo:hi] - start, seen_i[lo:hi], k)
            out_r.append(r + start)
            out_i.append(i)
            out_v.append(v)
        rows = np.concatenate(out_r) if out_r else _EMPTY
        items = np.concatenate(out_i) if out_i else _EMPTY
        vals = np.concatenate(out_v) if out_v else np.zeros(0)
        rank = np.ones(len(rows), dtype=np.int64)
        if len(rows):
            new = np.r_[True, rows[1:] != rows[:-1]]
            idx = np.arange(len(rows))
            rank = idx - np.maximum.accumulate(np.where(new, idx, 0)) + 1
        session = first.get_level_values(0).to_numpy()
        step = first.get_level_values(1).to_numpy()
        out = pd.DataFrame(
            {
                "session": session[rows],
                "step": step[rows],
                "item": self.item_ids[items],
                "score": vals.astype(np.float64),
                "rank": rank,
            }
        )
        out.attrs["model"] = self.name
        return out

    def lister(
        self, k: int = 20, *, exclude_seen: bool = True
    ) -> Callable[[pd.DataFrame], pd.DataFrame]:
        """``prefixes -> lists(prefixes, k)``: the callable
        :func:`receval.evaluate_next_items` takes as its ``lists``."""
        return lambda prefixes: self.lists(prefixes, k, exclude_seen=exclude_seen)

    def _block(
        self, last: np.ndarray, seen_r: np.ndarray, seen_c: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-k (row, item, score) of a block of steps: the last item's row of
        scores without the excluded items, best first, then the base order."""
        b, n = len(last), len(self.item_ids)
        rows, cols, vals = _EMPTY, _EMPTY, np.zeros(0)
        has = np.zeros(b, dtype=np.int64)
        where = np.flatnonzero(last >= 0)
        if len(self._cols) and where.size:
            # the first k + (the step's excluded items) entries of the last item's row
            start = self._ptr[last[where]]
            room = self._ptr[last[where] + 1] - start
            take = np.minimum(room, k + np.bincount(seen_r, minlength=b)[where])
            pos = np.repeat(start - np.cumsum(take) + take, take) + np.arange(int(take.sum()))
            rows, cols, vals = np.repeat(where, take), self._cols[pos], self._vals[pos]
            if len(seen_r):
                keep = ~np.isin(rows * n + cols, seen_r * n + seen_c)
                rows, cols, vals = rows[keep], cols[keep], vals[keep]
            if len(rows):  # in row order, best first: keep the first k of each row
                new = np.r_[True, rows[1:] != rows[:-1]]
                idx = np.arange(len(rows))
                keep = idx - np.maximum.accumulate(np.where(new, idx, 0)) < k
                rows, cols, vals = rows[keep], cols[keep], vals[keep]
            has = np.bincount(rows, minlength=b)
        short = np.flatnonzero(has < k)
        if short.size:
            fr, fc = self._fill_rows(short, k - has[short], rows, cols, seen_r, seen_c)
            rows = np.concatenate([rows, fr])
            cols = np.concatenate([cols, fc])
            vals = np.concatenate([vals, self._base[fc]])
            order = np.lexsort((cols, -vals, rows))
            rows, cols, vals = rows[order], cols[order], vals[order]
        return rows, cols, vals

    def _fill_rows(
        self,
        short: np.ndarray,
        need: np.ndarray,
        rows: np.ndarray,
        cols: np.ndarray,
        seen_r: np.ndarray,
        seen_c: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """For the rows ``short``, the first ``need`` items of the base order
        that are neither excluded nor already listed: (row, item)."""
        where = np.full(int(short.max()) + 1, -1, dtype=np.int64)
        where[short] = np.arange(short.size)
        er = np.concatenate([rows, seen_r])
        ec = np.concatenate([cols, seen_c])
        mine = er <= short.max()
        er, ec = er[mine], ec[mine]
        mine = where[er] >= 0
        er, ec = where[er[mine]], ec[mine]
        per_row = np.bincount(er, minlength=short.size)
        width = int(min(len(self._base), (need + per_row).max()))
        position = self._base_rank[ec]
        inside = position < width
        free = np.ones((short.size, width), dtype=bool)
        free[er[inside], position[inside]] = False
        take = free & (np.cumsum(free, axis=1) <= need[:, None])
        r, p = np.nonzero(take)
        return short[r], self._base_order[p]


class RecentPopularRecommender(SessionRecommender):
    """Most popular in the recent window.

    score(j) = the distinct training sessions with an event of j at a time
    in ``(now − window, now]``; items with no such event follow, by all-time
    popularity (scores in [−1, 0)); ties by item id. ``now`` defaults to the
    last training time; a window with no event (``now`` long after the
    training data) leaves the all-time popularity order.

    Args:
        window: a duration: ``"7D"``, ``"12h"``, a :class:`pandas.Timedelta`
            (read as seconds for a numeric time column), or a number (the
            time column's unit; seconds for dates); None: the whole training
            data (plain most popular).
        now: the window's end (a time of the time column's kind); None: the
            last training time.
    """

    name = "recent_popular"

    def __init__(self, window: Any = "7D", now: Any = None) -> None:
        super().__init__()
        self.window = window
        self.now = now

    def fit(
        self,
        train: Any,
        *,
        session_col: str = "session",
        item_col: str = "item",
        time_col: str | None = "time",
    ) -> SessionRecommender:
        """See :meth:`SessionRecommender.fit`; the time column is needed."""
        if time_col is None and self.window is not None:
            raise ReceValError("recent_popular needs a time column (time_col=) for its window")
        return super().fit(train, session_col=session_col, item_col=item_col, time_col=time_col)

    def _fit(
        self,
        counts: sp.csr_matrix,
        sessions: np.ndarray,
        items: np.ndarray,
        time: np.ndarray,
        dates: bool,
    ) -> None:
        if self.window is None:
            self._base = self.pop.copy()
            return
        span = duration("window", self.window, dates)
        now = float(time.max()) if self.now is None else _instant(self.now, dates)
        inside = (time > now - span) & (time <= now)
        pairs = np.unique(sessions[inside] * len(self.item_ids) + items[inside])
        recent = np.bincount(pairs % len(self.item_ids), minlength=len(self.item_ids))
        self.recent = recent.astype(np.float64)
        self._base = np.where(recent > 0, self.recent, self._fill)


class SessionItemKNNRecommender(SessionRecommender):
    """Session-rec's item-based kNN (``ItemKNN``, ``algorithms/knn/iknn.py``).

    ``sim(i, j) = Σ_s c(s, i) · c(s, j) / ((supp_i + λ)^α · (supp_j + λ)^(1−α))``,
    ``c(s, i)`` the events of item i in training session s and ``supp_i``
    the events of i; ``sim(i, i) = 0``. Each item keeps its ``neighbors``
    most similar items (ties by item id); after a prefix, item j scores
    ``sim(last, j)``; the other items follow by popularity.

    Args:
        neighbors: similar items kept per item (session-rec's ``n_sims``, 100).
        lmbd: λ, damps rare items (session-rec's default 20).
        alpha: α: 0.5 is cosine-like, 1 the confidence i → j (default 0.5).
    """

    name = "session_item_knn"

    def __init__(self, neighbors: int = 100, lmbd: float = 20.0, alpha: float = 0.5) -> None:
        super().__init__()
        if isinstance(neighbors, bool) or not isinstance(neighbors, (int, np.integer)):
            raise OptionError("neighbors", neighbors, expected="an integer >= 1")
        if neighbors < 1:
            raise OptionError("neighbors", neighbors, expected="an integer >= 1")
        if not np.isfinite(lmbd) or lmbd < 0:
            raise OptionError("lmbd", lmbd, expected="a number >= 0")
        if not np.isfinite(alpha) or not 0 <= alpha <= 1:
            raise OptionError("alpha", alpha, expected="a number in [0, 1]")
        self.neighbors = int(neighbors)
        self.lmbd = float(lmbd)
        self.alpha = float(alpha)

    def _fit(
        self,
        counts: sp.csr_matrix,
        sessions: np.ndarray,
        items: np.ndarray,
        time: np.ndarray,
        dates: bool,
    ) -> None:
        x = counts
        n = x.shape[1]
        supp = np.asarray(x.sum(axis=0)).ravel()
        left = (supp + self.lmbd) ** self.alpha
        right = (supp + self.lmbd) ** (1.0 - self.alpha)
        rows_, cols_, vals_ = [], [], []
        for start, product in cooccurrence_blocks(x, BLOCK_CELLS >> 2):
            sub = product.tocoo()
            r = sub.row.astype(np.int64) + start
            c = sub.col.astype(np.int64)
            norm = left[r] * right[c]
            norm[norm == 0] = 1.0
            v = sub.data / norm
            keep = (c != r) & (v > 0)
            r, c, v = _ranked(r[keep], c[keep], v[keep], self.neighbors)
            rows_.append(r)
            cols_.append(c)
            vals_.append(v)
        self._scores = sp.csr_matrix(
            (np.concatenate(vals_), (np.concatenate(rows_), np.concatenate(cols_))), shape=(n, n)
        )
        self.similarity = self._scores


class MarkovRecommender(SessionRecommender):
    """First-order Markov chain on the last item.

    ``P(next = j | last = i) = T(i, j) / Σ_j' T(i, j')``, ``T(i, j)`` the
    consecutive pairs (i then j) within training sessions (a repeated
    item, i then i, counts as a pair); the items i never leads to follow by
    popularity.
    """

    name = "markov"

    def _fit(
        self,
        counts: sp.csr_matrix,
        sessions: np.ndarray,
        items: np.ndarray,
        time: np.ndarray,
        dates: bool,
    ) -> None:
        n = len(self.item_ids)
        same = sessions[1:] == sessions[:-1]
        a, b = items[:-1][same], items[1:][same]
        t = sp.csr_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
        t.sum_duplicates()
        out = np.asarray(t.sum(axis=1)).ravel()
        t.data /= np.repeat(out, np.diff(t.indptr))
        self._scores = t
        self.transitions = t


SESSION_BASELINES: dict[str, type[SessionRecommender]] = {
    "recent_popular": RecentPopularRecommender,
    "session_item_knn": SessionItemKNNRecommender,
    "markov": MarkovRecommender,
}

SessionBaseline = Literal["recent_popular", "session_item_knn", "markov"]


def session_baseline(name: SessionBaseline, **params: Any) -> SessionRecommender:
    """A session baseline by name (``recent_popular``, ``session_item_knn``,
    ``markov``; aliases ``popular_recent``, ``iknn``), built with its
    parameters (``params``: the class's arguments), not yet fitted.

    Example:
        >>> session_baseline("markov").name
        'markov'
    """
    aliases = {"popular_recent": "recent_popular", "iknn": "session_item_knn"}
    key = aliases.get(str(name).lower(), str(name).lower())
    if key not in SESSION_BASELINES:
        raise OptionError("name", name, allowed=tuple(SESSION_BASELINES))
    return SESSION_BASELINES[key](**params)
