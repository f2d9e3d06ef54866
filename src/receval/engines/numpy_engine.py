"""The in-process NumPy engine.

It does the work kernels must not: encoding ids, ordering each list
(rank, or score descending with ties by item id ascending), rejecting
duplicates, joining the lists with the truth, and cutting the result into
blocks of users as :class:`~receval.metrics.kernels.batch.Batch` arrays. Every metric
and cut-off is then computed on the same blocks. No Python loop runs per user
or per row: only per block of users and per metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from receval._accel import NATIVE
from receval._workspace import take as _take
from receval.errors import InputError, MetricError, OptionError, option
from receval.ids import distinct, order_of, runs_in_order, sorted_runs, unify, whitespace_notes
from receval.metrics.context import ItemContext
from receval.metrics.kernels.batch import Batch, Cells
from receval.metrics.kernels.ranking import gain_of
from receval.metrics.spec import MetricSpec
from receval.records import RecsData, TruthData

__all__ = ["Prepared", "compute", "native_available", "prepare"]


_native = NATIVE


def native_available() -> bool:
    """Whether the compiled join (``receval._native``) is in use."""
    return _native is not None


#: Upper bound on the cells (users × positions) of one block's dense
#: matrices: 1 MB per float64 matrix, so that a block's passes stay in the CPU
#: caches (12 dense metrics at W = 100 took 19 ms per 1M rows with 2^21 cells,
#: 10 ms with 2^17; below that NumPy's per-call overhead wins).
BLOCK_CELLS = 1 << 17

#: Users per block once the first block shows that no metric reads a dense
#: matrix (precision, recall, AP, RR, nDCG, ... read the relevant cells
#: only): then fewer, larger blocks only save per-call overhead.
SPARSE_BLOCK_USERS = 1 << 16


@dataclass
class Prepared:
    """Encoded, ordered and joined data: everything a batch is cut from.

    User codes 0..U-1 follow the sorted order of user ids, so per-user arrays
    (and the result's rows) are in a canonical order whatever the input order.
    """

    user_ids: np.ndarray
    n: np.ndarray
    has_recs: np.ndarray
    in_truth: np.ndarray
    n_relevant: np.ndarray
    rec_user: np.ndarray
    rec_pos: np.ndarray | None  # derived from the offsets on first use: _positions()
    positioned: bool  # rec_pos holds rank positions (rank="position"), not list order
    rec_gain: np.ndarray
    rec_offsets: np.ndarray
    ideal_grades: np.ndarray
    ideal_offsets: np.ndarray
    max_grade: float
    rec_item_ids: np.ndarray | None = None
    rec_recommended: np.ndarray | None = None
    tie_start: np.ndarray | None = None
    tie_end: np.ndarray | None = None
    rec_context: np.ndarray | None = None
    positive_gain: np.ndarray | None = None
    positive_ideal_grades: np.ndarray | None = None
    positive_ideal_offsets: np.ndarray | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rec_score: np.ndarray | None = None  # the list rows' scores, in list order
    rec_rank: np.ndarray | None = None  # the list rows' ranks, in list order
    truth_user: np.ndarray | None = None  # the user code of each truth row
    #: judgments (only when a metric reads them, or lists are condensed): per
    #: list row, ``rec_judged`` 1.0 when its item is judged (in the user's
    #: truth with a grade >= 0) and ``rec_pooled`` 1.0 when it is pooled but
    #: unjudged (a negative grade); per user, ``n_judged`` the items judged
    rec_judged: np.ndarray | None = None
    rec_pooled: np.ndarray | None = None
    n_judged: np.ndarray | None = None
    #: counts of rows dropped per user (key of :attr:`counts` -> (U,) int64)
    dropped: dict[str, np.ndarray] = field(default_factory=dict)
    #: under ``graded=False``, when a metric reads grades as gains (LensKit's
    #: ``NDCG(gain='rating')``): per list row the grade of a relevant item (any
    #: value, 0 and negative ones included), and per user the grades of every
    #: relevant truth row, descending, with their offsets (:func:`graded_gains`)
    graded_gain: np.ndarray | None = None
    graded_ideal_grades: np.ndarray | None = None
    graded_ideal_offsets: np.ndarray | None = None
    #: how repeated rows are read, when some were (:class:`Joined`); None:
    #: every relevant position is one hit
    joined: Joined | None = None
    #: with propensities (a weighted metric asked, :func:`pair_weights`): the
    #: relevant list rows (``rec_gain > 0``) and 1/p of each, and 1/p of every
    #: relevant pair of the truth with its user code
    hit_rows: np.ndarray | None = None
    hit_weight: np.ndarray | None = None
    relevant_weight: np.ndarray | None = None
    relevant_user: np.ndarray | None = None
    #: when not None, ``relevant_weight`` is grouped by user (code order), user
    #: u's at ``relevant_offsets[u]..[u + 1] - 1`` (:class:`_RelevantWeights`
    #: sorts each user's, in place, when a metric reads their sum)
    relevant_offsets: np.ndarray | None = None
    #: the position in its list of each of ``hit_rows`` (from the compiled join), or None
    hit_pos: np.ndarray | None = None


#: the ``duplicates`` values under which every row counts (none dropped)
EVERY_ROW = ("count", "count_distinct", "join", "left_join")
#: those that join the truth with the lists: a pair of rows is a hit
JOINS = ("join", "left_join")


@dataclass
class Joined:
    """Per list row, how a position of a repeated item counts, under the
    ``duplicates`` values that read every row (only where some row repeats).

    Attributes:
        pairs: under ``join`` / ``left_join``, the (list row, truth row)
            pairs of the position: the user's relevant truth rows of its item
            (0 where it is not relevant); each is a hit.
        each_pair: AP adds one term per pair (``join``: the c-th pair at
            position i adds (pairs above i + c) / i, Microsoft Recommenders'
            ``map_at_k``) rather than one per position ((pairs up to i) / i:
            RecTools' ``MAP``).
        rejoined: under ``join``, nDCG's gain of a position: its pairs joined
            once more with the list's rows and the truth's rows of the item
            (pairs² × list rows of the item; Recommenders' ``ndcg_at_k``).
        rejoin_extra: the rows that second join adds to the nDCG ideal at a
            position (rejoined, less the item's truth rows at its first
            position): the ideal of the top k holds R + Σ of it over the top k.
        distinct: under ``count_distinct``, the gain of a position only where
            it holds its item's first row (precision and recall count distinct
            items: RePlay); ``n_distinct`` per user its distinct relevant items.
    """

    pairs: np.ndarray | None = None
    each_pair: bool = False
    rejoined: np.ndarray | None = None
    rejoin_extra: np.ndarray | None = None
    distinct: np.ndarray | None = None
    n_distinct: np.ndarray | None = None


def per_user_counts(p: Prepared) -> dict[str, np.ndarray]:
    """The row counts of :attr:`Prepared.counts` that belong to users, per
    user: the rows tied with the row above (``recommendation_rows_tied``)
    and the lists whose ranks leave gaps (``lists_with_rank_gaps``), counted
    as :func:`prepare` counts them. (Rows dropped as duplicates are not.)"""
    n_users = len(p.user_ids)
    out: dict[str, np.ndarray] = dict(p.dropped)
    ru, score = p.rec_user, p.rec_score
    if score is not None and len(score) > 1:
        tie = (ru[1:] == ru[:-1]) & (score[1:] == score[:-1])
        out["recommendation_rows_tied"] = np.bincount(ru[1:][tie], minlength=n_users)
    if p.rec_rank is not None:
        n = np.diff(p.rec_offsets)
        has = n > 0
        first = p.rec_rank[p.rec_offsets[:-1][has]].astype(np.int64)
        last = p.rec_rank[p.rec_offsets[1:][has] - 1].astype(np.int64)
        gaps = np.zeros(n_users, dtype=np.int64)
        gaps[has] = (last - first + 1 != n[has]) | (first != 1)
        out["lists_with_rank_gaps"] = gaps
    return out


def _positions(p: Prepared) -> np.ndarray:
    """The 0-based position of every list row in its list."""
    if p.rec_pos is None:
        p.rec_pos = np.arange(len(p.rec_user), dtype=np.int64) - p.rec_offsets[p.rec_user]
    return p.rec_pos


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values in order of appearance (pandas' ``unique``: one hash pass)."""
    import pandas as pd

    return pd.unique(values)


@dataclass
class Walked:
    """The runs of a sorted column of integer user ids, found by one compiled
    walk (:func:`walk_users`): each run's id and the row it starts at, and
    whether the ranks ascend within every run (the rows already in list order)."""

    values: np.ndarray
    starts: np.ndarray
    in_order: bool


def walk_users(users: np.ndarray, rank: np.ndarray | None) -> Walked | None:
    """One pass along the recommendations' user ids giving what :func:`encode`
    (the runs), :func:`_list_order` (ranks ascending within each user) and
    the join (the list offsets) would each walk the column for; None without
    the compiled walk, for ids that are not int64 or do not ascend (the
    separate passes then run as before)."""
    if _native is None or not hasattr(_native, "user_walk") or users.dtype != np.int64:
        return None
    n = len(users)
    if rank is not None and (rank.dtype.kind != "i" or rank.dtype.itemsize not in (4, 8)):
        rank = None
    users, rank = np.ascontiguousarray(users), None if rank is None else np.ascontiguousarray(rank)
    # room for lists of 8 rows on average; with more runs than that, walked
    # again with room for every row (one run a row)
    for room in (min(n, n // 8 + 64), n):
        values, starts = np.empty(room, np.int64), np.empty(room, np.int64)
        count, in_order = _native.user_walk(users, rank, values, starts)
        if count != -2:
            break
    if count < 0:
        return None
    return Walked(values[:count], starts[:count], bool(in_order))


def _walked_offsets(
    walked: Walked | None, user_ids: np.ndarray, ru: np.ndarray, listed: np.ndarray
) -> np.ndarray | None:
    """The list offsets (users + 1) of the rows whose runs were walked (user
    ``u``'s rows begin where the first run of a user ``>= u`` begins), while
    the list rows are those rows (``listed``, the rows' user codes in list
    order, is ``ru`` itself: none reordered or dropped); else None."""
    if walked is None or listed is not ru:
        return None
    runs = np.searchsorted(user_ids, walked.values)  # each run's user code
    bounds = np.append(walked.starts, len(ru))
    return bounds[np.searchsorted(runs, np.arange(len(user_ids) + 1, dtype=np.int64))]


def encode(
    parts: list[np.ndarray], reuse: str | None = None, walked: Walked | None = None
) -> tuple[list[np.ndarray], np.ndarray]:
    """Codes in sorted id order (numbers numerically, strings by code point).

    Sorted numeric parts (recommendations are usually grouped by user) are
    encoded by their runs, without hashing every row. ``reuse``: the codes of
    the first part go to that buffer of the thread's :class:`~receval._workspace.Workspace`
    (when one is claimed: :func:`reusing`). ``walked``: the runs of the
    first part, already found (:func:`walk_users`).
    """
    if any(p.dtype == object for p in parts):
        # one hash pass over every id (pandas' factorize), then the few distinct
        # ids sorted and the codes renumbered in that order
        import pandas as pd

        both = np.concatenate(parts) if len(parts) > 1 else parts[0]
        first, found = pd.factorize(both)
        found = np.asarray(found, dtype=object)
        order = np.argsort(found, kind="stable")  # Python's str order: code points
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        codes = rank[first]
        bounds = np.cumsum([0] + [len(p) for p in parts])
        return [codes[bounds[i] : bounds[i + 1]] for i in range(len(parts))], found[order]
    runs = [
        (walked.values, walked.starts) if walked is not None and not j else None
        for j in range(len(parts))
    ]
    runs = [r or sorted_runs(p) or _grouped_runs(p) for p, r in zip(parts, runs, strict=True)]
    candidates = [r[0] if r is not None else _unique(p) for p, r in zip(parts, runs, strict=True)]
    uniq = distinct(np.concatenate(candidates)) if candidates else np.empty(0, np.int64)
    codes = []
    for j, (p, r) in enumerate(zip(parts, runs, strict=True)):
        if walked is not None and not j:  # each run's code written along its rows
            out = _take(reuse, len(p), np.int64) if reuse else np.empty(len(p), np.int64)
            _native.spread(np.searchsorted(uniq, walked.values), walked.starts, out)
            codes.append(out)
        elif r is None:
            codes.append(np.searchsorted(uniq, p).astype(np.int64, copy=False))
        elif r[1] is None:  # compiled: one walk along the sorted ids
            out = _take(reuse, len(p), np.int64) if reuse and not j else np.empty(len(p), np.int64)
            _native.codes(np.ascontiguousarray(p), uniq, out)
            codes.append(out)
        else:
            codes.append(np.repeat(np.searchsorted(uniq, r[0]), r[1]).astype(np.int64, copy=False))
    return codes, uniq


def _grouped_runs(p: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The value and length of each run of ``p`` when every value comes in one
    run (lists written user by user, the users in any order); else None."""
    if len(p) < 2:
        return None
    starts = np.flatnonzero(p[1:] != p[:-1]) + 1
    if len(starts) * 4 > len(p):
        return None  # short runs: one hash pass is as cheap
    starts = np.concatenate(([0], starts))
    heads = p[starts]
    if len(distinct(heads)) != len(heads):
        return None
    return heads, np.diff(np.append(starts, len(p)))


def _encode_items(
    parts: list[np.ndarray], raw: bool = True, notes: list[str] | None = None
) -> tuple[list[np.ndarray], int | None]:
    """Item codes ordered like the ids, and the number of codes.

    With the compiled join and integer ids, the ids themselves (``None``
    codes: the join hashes any int64; the sorting path encodes them when it
    is needed). Otherwise integer ids are their own codes (shifted to start
    at 0) when the span is small enough for a (user, item) key in 63 bits;
    else they are encoded.
    """
    if raw and _native is not None and all(p.dtype == np.int64 for p in parts):
        return parts, None
    if all(p.dtype.kind == "i" for p in parts):
        nonempty = [p for p in parts if len(p)]
        lo = min((int(p.min()) for p in nonempty), default=0)
        hi = max((int(p.max()) for p in nonempty), default=0)
        if hi - lo < 2**31:
            return [p - lo for p in parts], hi - lo + 1
    codes, uniq = encode(parts)
    if notes is not None:  # text ids: those with surrounding whitespace said
        notes += whitespace_notes(uniq, "item")
    return codes, len(uniq)


def user_offsets(codes: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=size), out=out[1:])
    return out


#: Tie rules for equal scores: how each orders the items of one score.
TIES = {
    "item": "item id ascending (numbers numerically, then text by code point)",
    "item_desc": "item id descending (the reverse of item)",
    "item_str": "item id ascending, compared as strings",
    "item_str_desc": "item id descending, compared as strings",
    "input": "the order of the rows as given",
}


def _tie_key(rule: str, ri: np.ndarray, raw_items: np.ndarray) -> np.ndarray:
    """An int64 key per row: among equal scores, rows are put in ascending key order."""
    if rule in ("item", "item_desc") and raw_items.dtype == object:
        # ids as strings (some input held text): the id order of each value
        # (ids.order_of: integers numerically, then text), never the column's
        found, first, inverse = np.unique(ri, return_index=True, return_inverse=True)
        rank = np.empty(len(found), dtype=np.int64)
        rank[order_of(raw_items[first])] = np.arange(len(found), dtype=np.int64)
        ri = rank[inverse.reshape(-1)]
    elif rule in ("item_str", "item_str_desc") and raw_items.dtype != object:
        # numbers ordered as strings: only the distinct ids are turned into text
        found, inverse = np.unique(raw_items, return_inverse=True)
        as_text = np.argsort(found.astype(str), kind="stable")
        rank = np.empty(len(found), dtype=np.int64)
        rank[as_text] = np.arange(len(found), dtype=np.int64)
        ri = rank[inverse.reshape(-1)]
    if rule == "input":
        return np.arange(len(ri), dtype=np.int64)
    return -ri if rule in ("item_desc", "item_str_desc") else ri


def _list_order(ru: np.ndarray, key: np.ndarray, recs: RecsData) -> np.ndarray | None:
    """The permutation putting rows in list order (user, then rank or score
    descending, then the tie key ascending); None when they already are."""
    if _native is not None:
        c = np.ascontiguousarray
        rank = recs.rank  # int32 as read, or int64: the compiled check reads either
        if rank is not None and rank.dtype != np.int32:
            rank = c(rank, dtype=np.int64)
        elif rank is not None:
            rank = c(rank)
        score = None if rank is not None or recs.score is None else c(recs.score, np.float64)
        tie = None if rank is not None else c(key, dtype=np.int64)
        if _native.in_order(c(ru, dtype=np.int64), rank, score, tie):
            return None
    du = ru[1:] - ru[:-1]
    if recs.rank is not None:
        rk = recs.rank
        within = rk[1:] > rk[:-1]
        if np.all((du > 0) | ((du == 0) & within)):
            return None
        grouped = _grouped_order(ru, du, within)
        return np.lexsort((rk, ru)) if grouped is None else grouped
    sc = recs.score
    assert sc is not None
    after = (sc[1:] < sc[:-1]) | ((sc[1:] == sc[:-1]) & (key[1:] > key[:-1]))
    if np.all((du > 0) | ((du == 0) & after)):
        return None
    grouped = _grouped_order(ru, du, after)
    return np.lexsort((key, -sc, ru)) if grouped is None else grouped


def _grouped_order(ru: np.ndarray, du: np.ndarray, within: np.ndarray) -> np.ndarray | None:
    """The list order of rows whose users each come in one run, each run
    already in list order (``within``: row i+1 after row i), the runs in any
    order of users (a model writing its lists user by user in its own order):
    the runs put in user order, the very permutation the lexsort gives there.
    None when a user has rows in two runs or a run is out of order."""
    if not np.all((du != 0) | within):
        return None
    starts = np.flatnonzero(du != 0) + 1
    starts = np.concatenate(([0], starts)) if len(ru) else starts
    return runs_in_order(ru, starts)  # None: a user in two runs


#: What a rank column means (SPEC §2.1): ``order`` — lists are ordered by it and
#: gaps close up (ranks 3, 5, 9 are positions 1, 2, 3); ``position`` — rank r is
#: position r, a gap is an empty slot (RecTools: seen items filtered out of a
#: list leave their ranks unused).
RANKS = {
    "order": "ranks order each list; gaps close up",
    "position": "rank r is position r; gaps are empty positions",
}


#: the list rows of gain > 0, their truth rows and positions (:func:`_native_join`)
_HitPairs = tuple[np.ndarray, np.ndarray, np.ndarray]


class _Rows:
    """The recommendation rows in list order, and how to name an input row."""

    def __init__(self, recs: RecsData, ru: np.ndarray, ri: np.ndarray, order: Any) -> None:
        self.recs = recs
        self.order = order  # list row -> input row (None: the same)
        self.ru, self.ri = ru, ri
        self.score, self.recommended, self.rank = recs.score, recs.recommended, recs.rank
        if order is not None:
            self.ru, self.ri = ru[order], ri[order]
            self.score = None if recs.score is None else recs.score[order]
            self.recommended = None if recs.recommended is None else recs.recommended[order]
            self.rank = None if recs.rank is None else recs.rank[order]
        self.source_rows = order  # rows kept, as input rows (None: all, in order)
        #: from the compiled join, when propensities are given: the list row, the
        #: truth row and the 0-based position of every row whose grade makes it
        #: relevant (:func:`pair_weights`)
        self.hit_pairs: _HitPairs | None = None

    def input_row(self, j: int) -> int:
        return j if self.order is None else int(self.order[j])

    def located(
        self, message: str, j: int, k: int, users: np.ndarray, items: np.ndarray
    ) -> InputError:
        """An error naming the later of list rows j and k (and the other)."""
        a, b = sorted((self.input_row(j), self.input_row(k)))
        return InputError(
            message, source=self.recs.source, row=b, other_row=a, user=users[b], item=items[b]
        )

    def keep(self, mask: np.ndarray) -> None:
        """Drop the rows where ``mask`` is False."""
        base = np.arange(len(mask)) if self.source_rows is None else self.source_rows
        self.source_rows = base[mask]
        self.ru, self.ri = self.ru[mask], self.ri[mask]
        for name in ("score", "recommended", "rank"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value[mask])


def prepare(
    recs: RecsData,
    truth: TruthData,
    *,
    threshold: float = 1.0,
    duplicates: str = "error",
    need_ties: bool = False,
    max_grade: float | None = None,
    ties: str = "item",
    positive_grades: bool = False,
    relevant_from: str = "truth",
    rank: str = "order",
    depth: int | None = None,
    judged: bool = False,
    condense: bool = False,
    negative_grades: str = "unjudged",
    gains: np.ndarray | None = None,
) -> Prepared:
    """Encode, order, de-duplicate and join recommendations and truth.

    ``ties`` is the rule ordering equal scores (a key of :data:`TIES`).
    ``positive_grades`` also keeps every grade > 0 whatever the threshold
    (the gains of ``dcg``/``ndcg`` with ``grades=positive``).
    ``relevant_from="list"``: only the recommended items of the truth exist
    (R and the ideal come from the list; torchmetrics' view).
    ``rank``: what a rank column means (a key of :data:`RANKS`).
    ``depth``: only the first ``depth`` positions of each list are read
    (trec_eval's ``-M``). ``judged``: also find which listed items are judged
    (:attr:`Prepared.rec_judged`); ``condense``: drop the unjudged ones and
    close up the lists (Sakai 2007; trec_eval's ``-J``). Dropped rows are counted.

    ``max_grade`` overrides the largest grade of ``truth`` (when ``truth`` is
    the part of a larger truth that belongs to one chunk of users).

    ``negative_grades``: how a negative grade is read (:func:`read_negative`;
    ``unjudged`` and ``error`` keep it). ``gains``: under ``graded=False``,
    the grades as read, one per truth row, when a metric reads them as gains
    (:func:`reads_gains`; the truth's grades are then 0/1).
    """
    notes: list[str] = []
    counts: dict[str, Any] = {"recommendation_rows": recs.rows, "truth_rows": truth.rows}
    users = unify([recs.users, recs.empty_users, truth.users, truth.empty_users], "user", notes)
    items = unify([recs.items, truth.items], "item", notes)
    walked = walk_users(users[0], recs.rank)  # runs, list order and offsets in one pass
    (ru, reu, tu, teu), user_ids = encode(users, reuse="user_codes", walked=walked)
    notes += whitespace_notes(user_ids, "user")
    (ri, ti), n_items = _encode_items(items, notes=notes)
    n_users = len(user_ids)
    rows = _order_lists(recs, ru, ri, items[0], users[0], ties, walked)
    dropped: dict[str, np.ndarray] = {}
    truth = read_negative(truth, negative_grades, threshold, counts, (tu, n_users, dropped))
    if depth is not None:
        _cut(rows, _beyond(rows, n_users, depth, rank), n_users, dropped, counts, "beyond_depth")
    rec_judged, rec_pooled, n_judged = _judge(
        rows, tu, ti, truth.grades, n_users, judged, condense, relevant_from, dropped, counts
    )
    graded = positive_grades or relevant_from == "list" or rows.recommended is not None
    rec_grade, rec_gain, rec_offsets, tuser, grades, ti, joined = _join_truth(
        rows, truth, tu, ti, n_users, n_items, users, items, counts, threshold, duplicates,
        graded, _walked_offsets(walked, user_ids, ru, rows.ru),
    )  # fmt: skip

    # --- the ideal: relevant grades per user, descending --------------------
    if relevant_from == "list":  # the truth is what the lists hold
        tuser, grades = rows.ru, rec_grade
    ig, ideal_offsets = _ideal(tuser, grades, threshold, n_users, reuse="ideal_grades")
    pos_gain, pos_ig, pos_offsets = _positive(
        rows, rec_grade, tuser, grades, n_users, positive_grades
    )
    tie_start, tie_end = _tie_groups(rows.ru, rows.score, rec_offsets, need_ties, counts)
    has_recs, in_truth = _presence(rec_offsets, reu, tu, teu, n_users)
    _listed_condensed(has_recs, dropped)
    positions = _rank_positions(rows, rec_offsets, rank, counts)
    joins = None if joined is None else duplicates  # some row repeats, joined or distinct
    weights = pair_weights(
        rows, truth, (tu, ti), rec_gain, threshold, ideal_offsets, relevant_from, joins
    )
    graded = (None, None, None)
    if gains is not None:
        once = duplicates not in EVERY_ROW  # a pair twice in the truth: in the ideal once
        graded = graded_gains(rows, rec_gain, tu, ti, truth.grades, gains, threshold, n_users, once)
    return Prepared(
        user_ids=user_ids,
        rec_item_ids=items[0] if rows.source_rows is None else items[0][rows.source_rows],
        n=np.diff(rec_offsets),
        has_recs=has_recs,
        in_truth=in_truth,
        n_relevant=np.diff(ideal_offsets),
        rec_user=rows.ru,
        rec_pos=positions,
        positioned=positions is not None,
        rec_gain=rec_gain,
        rec_recommended=rows.recommended,
        rec_offsets=rec_offsets,
        ideal_grades=ig,
        ideal_offsets=ideal_offsets,
        positive_gain=pos_gain,
        positive_ideal_grades=pos_ig,
        positive_ideal_offsets=pos_offsets,
        max_grade=max_grade if max_grade is not None else _max_grade(grades),
        tie_start=tie_start,
        tie_end=tie_end,
        counts=counts,
        notes=notes,
        rec_score=rows.score,
        rec_rank=rows.rank,
        truth_user=tu,
        rec_judged=rec_judged,
        rec_pooled=rec_pooled,
        n_judged=_n_judged(n_judged, tu, ti, truth.grades, n_users, relevant_from, counts),
        dropped=dropped,
        graded_gain=graded[0],
        graded_ideal_grades=graded[1],
        graded_ideal_offsets=graded[2],
        joined=joined,
        **weights,
    )


def _listed_condensed(has_recs: np.ndarray, dropped: dict[str, np.ndarray]) -> None:
    """A list condensed to nothing is still a list (trec_eval's -J): in ``has_recs``."""
    condensed = dropped.get("recommendation_rows_unjudged_dropped")
    if condensed is not None:
        has_recs |= condensed > 0


def pair_weights(
    rows: _Rows,
    truth: TruthData,
    codes: tuple[np.ndarray, np.ndarray],
    rec_gain: np.ndarray,
    threshold: float,
    ideal_offsets: np.ndarray,
    relevant_from: str,
    joins: str | None = None,
) -> dict[str, np.ndarray | None]:
    """The inverse propensities 1/p of the relevant (user, item) pairs, as the
    :class:`Prepared` fields that hold them: the relevant list rows
    (``hit_rows``) and the weight of each (``hit_weight``), the weight of every
    relevant pair of the truth (``relevant_weight``) with its user
    (``relevant_user``), and None or their offsets per user
    (``relevant_offsets``: then they are grouped by user, else in the truth's
    order) and None or each relevant list row's position (``hit_pos``).
    ``truth.propensity`` holds each truth row's p (NaN where none was given:
    an error for a relevant pair, naming it). p = 0 (an item never seen in
    ``train=`` under the popularity model) is an infinite weight, which only
    ``clip=`` makes finite (:func:`compute` says so).
    ``codes``: the truth rows' user and item codes. Nones without
    propensities (no weighted metric asked).

    The compiled path reads each relevant list row's truth row from the join
    (``rows.hit_pairs``: one join gives grade and weight) and groups the
    weights by user in one pass (:func:`_native_relevant_weights`); the NumPy
    path joins the relevant rows once more (:func:`_values_of_pairs`). Both
    give the same weights, bit for bit (1/p of the same p).
    """
    if truth.propensity is None:
        return {}
    if joins is not None:  # repeated rows joined (join, left_join) or counted distinct
        raise OptionError(
            "duplicates",
            joins,
            reason="weighted metrics (weighting=) read each relevant item once: they do not go "
            "with repeated rows joined or counted distinct",
            allowed=("error", "keep", "count"),
        )
    tu, ti = codes
    if relevant_from == "list":
        raise InputError(
            "weighted metrics (weighting=) read the relevant items of the truth: they do "
            "not go with " + option("relevant_from", "list"),
            source="propensities",
        )
    n_relevant = np.diff(ideal_offsets)
    n_users = len(n_relevant)
    fast = None
    if rows.hit_pairs is not None:  # the compiled join ran
        with np.errstate(divide="ignore"):  # every row's 1/p at once (NaN: none given)
            inverse = 1.0 / np.asarray(truth.propensity, dtype=np.float64)
        fast = _native_relevant_weights(tu, truth, inverse, threshold, n_users)
    if fast is not None and rows.hit_pairs is not None:
        w_rel, ru_rel, rel_offsets = fast
        if not np.array_equal(rel_offsets, ideal_offsets):  # the ideal's relevant pairs
            raise InputError(
                "weighted metrics need each relevant (user, item) pair once in the truth",
                source="propensities",
            )
        hit, truth_row, pos = rows.hit_pairs
        if rows.recommended is not None:  # explicit feedback: only recommended items are hits
            keep = rows.recommended[hit]
            hit, truth_row, pos = hit[keep], truth_row[keep], pos[keep]
        return _weight_fields(hit, inverse[truth_row], w_rel, ru_rel, rel_offsets, pos)
    rel = (truth.grades >= threshold) & (truth.grades > 0)
    p_rel = np.asarray(truth.propensity, dtype=np.float64)[rel]
    missing = np.isnan(p_rel)
    if missing.any():
        j = int(np.flatnonzero(rel)[np.flatnonzero(missing)[0]])
        raise InputError(
            f"{int(missing.sum())} relevant (user, item) pairs of the truth have no "
            "propensity in " + option("propensities") + " (every relevant pair needs one)",
            source="propensities",
            user=truth.users[j],
            item=truth.items[j],
        )
    with np.errstate(divide="ignore"):
        w_rel = 1.0 / p_rel
    ru_rel = tu[rel]
    if not np.array_equal(np.bincount(ru_rel, minlength=n_users), n_relevant):
        raise InputError(
            "weighted metrics need each relevant (user, item) pair once in the truth",
            source="propensities",
        )
    # the weight of each relevant list row: its truth row, among the relevant ones
    hit = np.flatnonzero(rec_gain > 0)
    qu, qi = rows.ru[hit], rows.ri[hit]
    joined = _native_join(qu, qi, ru_rel, ti[rel], w_rel, n_users, -np.inf, True)
    if joined is not None and joined[0] is not None:
        found = joined[0]
    else:
        found = _values_of_pairs(qu, qi, ru_rel, ti[rel], w_rel)
    w_rel, ru_rel = np.ascontiguousarray(w_rel), np.ascontiguousarray(ru_rel)
    return _weight_fields(hit, found, w_rel, ru_rel, None, None)


def _weight_fields(*values: np.ndarray | None) -> dict[str, np.ndarray | None]:
    """The :class:`Prepared` fields of :func:`pair_weights`, named."""
    names = ("hit_rows", "hit_weight", "relevant_weight", "relevant_user")
    return dict(zip((*names, "relevant_offsets", "hit_pos"), values, strict=True))


def _native_relevant_weights(
    tu: np.ndarray, truth: TruthData, inverse: np.ndarray, threshold: float, n_users: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The weight (``inverse``: 1/p of each truth row) of every relevant truth
    row (grade >= threshold and > 0), its user, and each user's offsets,
    grouped by user (the compiled pass), or None without it. A relevant row
    without a propensity is an error naming the first (as :func:`pair_weights`
    does)."""
    if _native is None:
        return None
    m = len(tu)
    w, user, offsets = np.empty(m), np.empty(m, np.int64), np.empty(n_users + 1, np.int64)
    grades = np.ascontiguousarray(truth.grades, dtype=np.float64)
    status, count, missing, first = _native.relevant_weights(
        np.ascontiguousarray(tu, dtype=np.int64), grades, inverse, n_users, float(threshold),
        w, user, offsets,
    )  # fmt: skip
    if missing:
        raise InputError(
            f"{missing} relevant (user, item) pairs of the truth have no "
            "propensity in " + option("propensities") + " (every relevant pair needs one)",
            source="propensities",
            user=truth.users[first],
            item=truth.items[first],
        )
    if status != 0:
        return None
    return w[:count], user[:count], offsets


def _values_of_pairs(
    ru: np.ndarray, ri: np.ndarray, tu: np.ndarray, ti: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """Per (ru, ri) row, ``values`` of the first truth row (tu, ti) of the same
    pair (0 where none): the sorting path of :func:`pair_weights`."""
    out = np.zeros(len(ru))
    if not len(ru) or not len(tu):
        return out
    codes, uniq = encode([ti, ri])
    n = max(len(uniq), 1)
    tkey = tu.astype(np.int64) * n + codes[0]
    qkey = ru.astype(np.int64) * n + codes[1]
    order = np.argsort(tkey, kind="stable")
    skey = tkey[order]
    at = np.minimum(np.searchsorted(skey, qkey), len(skey) - 1)
    hit = skey[at] == qkey
    out[hit] = values[order[at[hit]]]
    return out


#: what a negative grade is read as (``negative_grades``), and its count's key
NEGATIVE_READINGS = {
    "relevant": "truth_rows_negative_relevant",
    "nonrelevant": "truth_rows_negative_nonrelevant",
}


def read_negative(
    truth: TruthData,
    negative_grades: str,
    threshold: float,
    counts: dict[str, Any],
    per_user: tuple[np.ndarray, int, dict[str, np.ndarray]] | None = None,
) -> TruthData:
    """The truth with its negative grades read by ``negative_grades``:
    ``relevant`` (the tools that read no grades: every truth row is
    relevant) makes one the smallest relevant grade, max(threshold, 1);
    ``nonrelevant`` (judged, not relevant: ranx) makes it 0. Either is
    counted (``truth_rows_negative_relevant`` / ``_nonrelevant``; with
    ``per_user`` = (the truth rows' user codes, the users, the per-user
    counts), also per user). ``unjudged``
    (trec_eval) and ``error`` (none reaches the engine) keep it.

    >>> t = TruthData(np.array([0, 0]), np.array([1, 2]), np.array([-1.0, 2.0]), 2, True)
    >>> c = {}
    >>> read_negative(t, "relevant", 1.0, c).grades.tolist(), c
    ([1.0, 2.0], {'truth_rows_negative_relevant': 1})
    >>> read_negative(t, "nonrelevant", 1.0, {}).grades.tolist()
    [0.0, 2.0]
    """
    key = NEGATIVE_READINGS.get(negative_grades)
    if key is None or not len(truth.grades):
        return truth
    negative = truth.grades < 0
    if not negative.any():
        return truth
    counts[key] = int(negative.sum())
    if per_user is not None:
        tu, n_users, dropped = per_user
        dropped[key] = np.bincount(tu[negative], minlength=n_users)
    value = max(threshold, 1.0) if negative_grades == "relevant" else 0.0
    return replace(truth, grades=np.where(negative, value, truth.grades))


def reads_gains(specs: Sequence[MetricSpec]) -> bool:
    """Whether a metric reads the grades as gains (a ``gain`` of ``linear``
    or ``exp``): under ``graded=False`` the engine then keeps the grades as
    read beside the 0/1 relevance (:func:`graded_gains`)."""
    return any(_gain_read(s) for s in specs)


def _gain_read(s: MetricSpec) -> bool:
    param = s.definition.param_map.get("gain")
    if param is None:
        return False
    return dict(s.params).get("gain", param.default) in ("linear", "exp")


def graded_gains(
    rows: _Rows,
    rec_gain: np.ndarray,
    tu: np.ndarray,
    ti: np.ndarray,
    relevance: np.ndarray,
    gains: np.ndarray,
    threshold: float,
    n_users: int,
    once: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Under ``graded=False``, the gains of metrics that read grades as gains
    (LensKit's ``NDCG(gain='rating')``, lenskit/metrics/ranking/_dcg.py:
    ``_graded_dcg`` and the ideal ``gains.nlargest(n)`` of every test row):
    relevance stays binary (``relevance``: each truth row's 0/1 or negative
    grade), while each relevant row gains its grade as read (``gains``),
    whatever it is (0 or negative ones included). Returns per list row the
    gain of a relevant item (else 0), and per user the gains of the relevant
    truth rows, descending, with their offsets. A (user, item) pair twice in
    the truth: its largest gain, in the ideal once (``once``) or per row."""
    keep = (relevance >= threshold) & (relevance > 0)
    tu, ti, g = tu[keep], ti[keep], np.asarray(gains, dtype=np.float64)[keep]
    (ri, tic), n_items = _encode_items([rows.ri, ti], raw=False)
    n_items = max(int(n_items or 1), 1)
    tkey = tu * n_items + tic
    order = np.lexsort((g, tkey))  # per pair, its largest gain last
    tkey, g, tuo = tkey[order], g[order], tu[order]
    last = np.append(tkey[1:] != tkey[:-1], True)[: len(tkey)]
    every = (g, tuo)
    tkey, g, tuo = tkey[last], g[last], tuo[last]
    rkey = rows.ru * n_items + ri
    at = np.minimum(np.searchsorted(tkey, rkey), max(len(tkey) - 1, 0))
    rec = np.zeros(len(rkey))
    if len(tkey):
        found = (tkey[at] == rkey) & (rec_gain > 0)
        rec[found] = g[at[found]]
    ig, iu = (g, tuo) if once else every
    iorder = np.lexsort((-ig, iu))
    return rec, ig[iorder], user_offsets(iu[iorder], n_users)


def _judge(
    rows: _Rows,
    tu: np.ndarray,
    ti: np.ndarray,
    grades: np.ndarray,
    n_users: int,
    judged: bool,
    condense: bool,
    relevant_from: str,
    dropped: dict[str, np.ndarray],
    counts: dict[str, Any],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """The judgments, when ``judged`` or ``condense``: per list row, 1.0 when
    its item is judged (``rec_judged``) and 1.0 when it is pooled but unjudged
    (``rec_pooled``); per user, the items judged (``n_judged``). With
    ``condense``, the unjudged list rows are dropped first. Truth rows of
    unjudged items (a negative grade) are counted in any case (also per user)."""
    rec_judged = rec_pooled = n_judged = None
    if judged or condense:
        code = _judgments(rows, tu, ti, grades, n_users)
        if condense:
            _cut(rows, code != 1.0, n_users, dropped, counts, "unjudged_dropped")
            code = code[code == 1.0]
        rec_judged = (code == 1.0).astype(np.float64)
        rec_pooled = (code == 2.0).astype(np.float64)
        if relevant_from == "list":  # the truth is what the lists hold
            n_judged = np.bincount(rows.ru[code == 1.0], minlength=n_users)
        else:
            n_judged = np.bincount(tu[grades >= 0], minlength=n_users)
    unjudged_rows = grades < 0
    if unjudged_rows.any():
        counts["truth_rows_unjudged"] = int(unjudged_rows.sum())
        dropped["truth_rows_unjudged"] = np.bincount(tu[unjudged_rows], minlength=n_users)
    return rec_judged, rec_pooled, n_judged


def _n_judged(
    n_judged: np.ndarray | None,
    tu: np.ndarray,
    ti: np.ndarray,
    grades: np.ndarray,
    n_users: int,
    relevant_from: str,
    counts: dict[str, Any],
) -> np.ndarray | None:
    """Per user, the items judged: as :func:`_judge` counted them, or, when a
    pair twice in the truth was kept once, its distinct pairs counted."""
    if n_judged is None or relevant_from == "list" or "truth_rows_duplicate_dropped" not in counts:
        return n_judged
    return _distinct_judged(tu, ti, grades, n_users)


def _join_truth(
    rows: _Rows,
    truth: TruthData,
    tu: np.ndarray,
    ti: np.ndarray,
    n_users: int,
    n_items: int | None,
    users: list[np.ndarray],
    items: list[np.ndarray],
    counts: dict[str, Any],
    threshold: float,
    duplicates: str,
    want_grades: bool,
    offsets: np.ndarray | None = None,
) -> tuple[
    np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Joined | None
]:
    """The grade of every listed item in the user's truth, joined.

    One pass per user (the compiled module) when it is built and finds no
    item twice; else, and for every input holding duplicates, one sort of
    (user, item) keys on each side (duplicates dropped or an error, per
    ``duplicates``). Both give the same arrays, bit for bit.

    Returns the grade (None from the compiled pass unless ``want_grades``:
    the grades are read, not only the gains) and the gain (the grade of a
    relevant, recommended item, else 0) of every list row, the list offsets,
    the truth's users and grades (de-duplicated on the sorting path) and the
    truth's item codes, and (under the ``duplicates`` values that read every
    row, when some row repeats) how the repeated rows count (:class:`Joined`).
    ``offsets``: the list offsets, when already known (:func:`walk_users`).
    """
    joined = _native_join(
        rows.ru, rows.ri, tu, ti, truth.grades, n_users, threshold, want_grades,
        pairs=truth.propensity is not None and hasattr(_native, "relevant_weights"),
        offsets=offsets, reuse="join",
    )  # fmt: skip
    how = None
    if joined is not None:
        rec_grade, rec_gain, rec_offsets, rows.hit_pairs = joined
        tuser, grades = tu, truth.grades
    else:
        if n_items is None:  # raw integer ids so far: codes for the sorting path
            (rows.ri, ti), n_items = _encode_items([rows.ri, ti], raw=False)
        n_items = max(n_items, 1)
        korder, skey = _dedupe_lists(rows, n_users, n_items, duplicates, users[0], items[0], counts)
        tuser, tkey, grades = _dedupe_truth(
            truth, tu, ti, n_users, n_items, duplicates, users[2], items[1], counts
        )
        if duplicates in EVERY_ROW:  # a key twice in the list: every row reads its grade
            rec_grade = _grades_of_rows(korder, skey, tkey, grades)
            tuser, grades = tu, truth.grades  # every truth row is a relevant item (R, ideal)
        else:
            rec_grade = _grades_of(korder, skey, tkey, grades)
        rec_gain = None
        rec_offsets = user_offsets(rows.ru, n_users)
    if rec_gain is None or rows.recommended is not None:
        relevant = (rec_grade >= threshold) & (rec_grade > 0)
        if rows.recommended is not None:  # explicit feedback: only recommended items are hits
            relevant &= rows.recommended
        rec_gain = np.where(relevant, rec_grade, 0.0)
    if joined is None and duplicates in EVERY_ROW and duplicates != "count":
        how, left = _joins(
            duplicates, korder, skey, tu * max(int(n_items or 1), 1) + ti, truth.grades, rec_gain,
            threshold, max(int(n_items or 1), 1), n_users,
        )  # fmt: skip
        if left is not None:  # left_join: a truth row once per list row of its item (>= 1)
            tuser, grades = np.repeat(tu, left), np.repeat(truth.grades, left)
    return rec_grade, rec_gain, rec_offsets, tuser, grades, ti, how


def _joins(
    duplicates: str,
    korder: np.ndarray,
    skey: np.ndarray,
    tkey: np.ndarray,
    tgrades: np.ndarray,
    rec_gain: np.ndarray,
    threshold: float,
    n_items: int,
    n_users: int,
) -> tuple[Joined, np.ndarray | None]:
    """How repeated rows count under ``duplicates`` (``count_distinct``,
    ``join`` or ``left_join``; :class:`Joined`), from the list rows' sorted
    (user, item) keys (``skey``, ``korder`` their rows) and every truth row's
    key and grade; and under ``left_join`` how many times each truth row
    counts in R and the ideal: once per list row of its item, at least once
    (the rows of the truth left-joined with the list: RecTools'
    ``merge_reco``)."""
    relevant = (tgrades >= threshold) & (tgrades > 0)
    rkeys, rcount = np.unique(tkey[relevant], return_counts=True)
    first = np.ones(len(skey), dtype=bool)
    first[1:] = skey[1:] != skey[:-1]
    in_list = np.zeros(len(skey), dtype=bool)  # the sorted rows, back in list order
    in_list[korder] = first
    if duplicates == "count_distinct":
        distinct = np.where(in_list, rec_gain, 0.0)
        return Joined(
            distinct=distinct, n_distinct=np.bincount(rkeys // n_items, minlength=n_users)
        ), None
    at = np.minimum(np.searchsorted(rkeys, skey), max(len(rkeys) - 1, 0))
    m_sorted = np.zeros(len(skey))
    if len(rkeys):
        found = rkeys[at] == skey
        m_sorted[found] = rcount[at[found]]
    p_sorted = np.searchsorted(skey, skey, "right") - np.searchsorted(skey, skey, "left")
    pairs, listed = np.empty(len(skey)), np.empty(len(skey))
    pairs[korder], listed[korder] = m_sorted, p_sorted
    pairs = np.where(rec_gain > 0, pairs, 0.0)  # hits of explicit feedback only where recommended
    how = Joined(pairs=pairs, each_pair=duplicates == "join")
    if duplicates == "join":
        how.rejoined = pairs * pairs * listed
        how.rejoin_extra = how.rejoined - np.where(in_list, pairs, 0.0)
        return how, None
    left = np.searchsorted(skey, tkey, "right") - np.searchsorted(skey, tkey, "left")
    return how, np.maximum(left, 1)


def _positive(
    rows: _Rows,
    rec_grade: np.ndarray,
    tuser: np.ndarray,
    grades: np.ndarray,
    n_users: int,
    positive_grades: bool,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """With ``positive_grades``, the gains and the ideal of every grade > 0
    whatever the threshold (``grades=positive``): per list row its gain, and
    per user the grades descending with their offsets."""
    if not positive_grades:
        return None, None, None
    positive = rec_grade > 0
    if rows.recommended is not None:
        positive &= rows.recommended
    pos_gain = np.where(positive, rec_grade, 0.0)
    pos_ig, pos_offsets = _ideal(tuser, grades, 0.0, n_users)
    return pos_gain, pos_ig, pos_offsets


def _presence(
    rec_offsets: np.ndarray, reu: np.ndarray, tu: np.ndarray, teu: np.ndarray, n_users: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per user: whether it has a list (rows, or declared with an empty one),
    and whether it is in the truth (rows, or declared with none)."""
    has_recs = np.diff(rec_offsets) > 0
    has_recs[reu] = True
    in_truth = np.zeros(n_users, dtype=bool)
    in_truth[tu] = True
    in_truth[teu] = True
    return has_recs, in_truth


def _beyond(rows: _Rows, n_users: int, depth: int, rank: str) -> np.ndarray:
    """The rows past the first ``depth`` positions of their list."""
    if rank == "position" and rows.rank is not None:
        return rows.rank > depth
    offsets = user_offsets(rows.ru, n_users)
    return np.arange(len(rows.ru)) - offsets[rows.ru] >= depth


def _cut(
    rows: _Rows,
    drop: np.ndarray,
    n_users: int,
    dropped: dict[str, np.ndarray],
    counts: dict[str, Any],
    why: str,
) -> None:
    """Drop list rows, counted as ``recommendation_rows_<why>`` (also per user)."""
    if not drop.any():
        return
    key = "recommendation_rows_" + why
    counts[key] = int(drop.sum())
    dropped[key] = np.bincount(rows.ru[drop], minlength=n_users)
    rows.keep(~drop)


def _judgments(
    rows: _Rows, tu: np.ndarray, ti: np.ndarray, grades: np.ndarray, n_users: int
) -> np.ndarray:
    """Per list row: 1.0 when the item is judged (in the user's truth with a
    grade >= 0), 2.0 when pooled but unjudged (a negative grade), 0.0 when it
    is not in the user's truth (a pair twice in the truth: its largest grade)."""
    code = np.where(grades >= 0, 1.0, 2.0)
    joined = _native_join(rows.ru, rows.ri, tu, ti, code, n_users, 0.5, False)
    if joined is not None:
        return joined[1]
    (ri, ti), n_items = _encode_items([rows.ri, ti], raw=False)
    n_items = max(int(n_items or 1), 1)
    tkey = tu * n_items + ti
    order = np.lexsort((grades, tkey))  # per pair, its largest grade last
    tkey, code = tkey[order], code[order]
    last = np.append(tkey[1:] != tkey[:-1], True)[: len(tkey)]  # no truth row: none
    tkey, code = tkey[last], code[last]
    rkey = rows.ru * n_items + ri
    at = np.minimum(np.searchsorted(tkey, rkey), max(len(tkey) - 1, 0))
    out = np.zeros(len(rkey))
    if len(tkey):
        found = tkey[at] == rkey
        out[found] = code[at[found]]
    return out


def _distinct_judged(
    tu: np.ndarray, ti: np.ndarray, grades: np.ndarray, n_users: int
) -> np.ndarray:
    """Per user, the distinct items judged (a pair twice: its largest grade)."""
    import pandas as pd

    frame = pd.DataFrame({"u": tu, "i": ti, "g": grades}).groupby(["u", "i"])["g"].max()
    users = frame.index.get_level_values(0).to_numpy()
    return np.bincount(users[frame.to_numpy() >= 0], minlength=n_users)


def _order_lists(
    recs: RecsData,
    ru: np.ndarray,
    ri: np.ndarray,
    raw_items: np.ndarray,
    raw_users: np.ndarray,
    ties: str,
    walked: Walked | None = None,
) -> _Rows:
    """The rows in list order (user, then rank or score descending and the tie
    rule); a rank given twice in one list is an error naming both rows.
    ``walked``: the runs of the users, which may show the rows already in list
    order by rank (:func:`walk_users`)."""
    if walked is not None and walked.in_order and recs.rank is not None:
        return _Rows(recs, ru, ri, None)
    plain = recs.rank is not None or (ties == "item" and raw_items.dtype != object)
    tie_key = ri if plain else _tie_key(ties, ri, raw_items)
    rows = _Rows(recs, ru, ri, _list_order(ru, tie_key, recs))
    if rows.order is not None and rows.rank is not None:
        r = rows.rank
        same = (rows.ru[1:] == rows.ru[:-1]) & (r[1:] == r[:-1])
        if same.any():
            j = int(np.flatnonzero(same)[0])
            message = f"rank {r[j]} appears twice in this user's list ({{rows}})"
            raise rows.located(message, j, j + 1, raw_users, raw_items)
    return rows


def _dedupe_lists(
    rows: _Rows,
    n_users: int,
    n_items: int,
    duplicates: str,
    raw_users: np.ndarray,
    raw_items: np.ndarray,
    counts: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray]:
    """An item twice in a list: an error, (``keep``) its later rows dropped
    and counted, or (``count`` and the other values of :data:`EVERY_ROW`)
    every row kept, the later ones counted.
    Returns the stable order of the rows' (user, item) keys and the sorted
    keys."""
    key = rows.ru * n_items + rows.ri
    korder, skey = _sorted_keys(key, n_users * n_items)
    later = skey[1:] == skey[:-1]
    if not later.any():
        return korder, skey
    dup_rows = korder[1:][later]
    if duplicates == "error":
        j = int(dup_rows.min())
        first = int(korder[np.searchsorted(skey, key[j])])
        message = (
            "the item appears twice in this user's list ({rows}); "
            "pass " + option("duplicates", "keep") + " to keep the first occurrence"
        )
        raise rows.located(message, first, j, raw_users, raw_items)
    if duplicates in EVERY_ROW:  # every row stays: its own position, its own hit
        counts["recommendation_rows_duplicate_" + _why(duplicates)] = len(dup_rows)
        return korder, skey
    keep = np.ones(len(key), dtype=bool)
    keep[dup_rows] = False
    new_index = np.cumsum(keep) - 1
    korder = new_index[korder[np.concatenate(([True], ~later))]]
    rows.keep(keep)
    counts["recommendation_rows_duplicate_dropped"] = len(dup_rows)
    return korder, key[keep][korder]


def _dedupe_truth(
    truth: TruthData,
    tu: np.ndarray,
    ti: np.ndarray,
    n_users: int,
    n_items: int,
    duplicates: str,
    raw_users: np.ndarray,
    raw_items: np.ndarray,
    counts: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truth's sorted unique (user, item) keys, their users and grades; a
    pair twice is an error, or (``keep``, ``count``) its largest grade, counted
    (under ``count`` every row still counts in R and the ideal: the caller
    reads the truth's own rows for those)."""
    torder, tkey = _sorted_keys(tu * n_items + ti, n_users * n_items)
    grades = truth.grades[torder]
    tdup = tkey[1:] == tkey[:-1]
    if tdup.any():
        if duplicates == "error":
            j = int(np.flatnonzero(tdup)[0])
            a, b = sorted((int(torder[j]), int(torder[j + 1])))
            raise InputError(
                "this (user, item) pair appears twice in the truth ({rows}); "
                "pass " + option("duplicates", "keep") + " to keep the largest grade",
                source=truth.source,
                row=b,
                other_row=a,
                user=raw_users[b],
                item=raw_items[b],
            )
        starts = np.flatnonzero(np.concatenate(([True], ~tdup)))
        grades = np.maximum.reduceat(grades, starts)
        tkey = tkey[starts]
        counts["truth_rows_duplicate_" + _why(duplicates)] = int(tdup.sum())
    return tkey // n_items, tkey, grades


def _why(duplicates: str) -> str:
    """How repeated rows were read, as their counts' keys say it
    (``recommendation_rows_duplicate_<why>``, ``truth_rows_duplicate_<why>``)."""
    if duplicates in JOINS:
        return "joined"  # every row stays, its pairs are hits
    return "counted" if duplicates in EVERY_ROW else "dropped"  # count: rows stay in R


def _grades_of(
    korder: np.ndarray, skey: np.ndarray, tkey: np.ndarray, grades: np.ndarray
) -> np.ndarray:
    """The grade of every list row (0 when its item is not in the user's truth)."""
    rec_grade = np.zeros(len(skey))
    if len(skey) and len(tkey):
        pos = np.searchsorted(skey, tkey)
        found = pos < len(skey)
        found[found] = skey[pos[found]] == tkey[found]
        rec_grade[korder[pos[found]]] = grades[found]
    return rec_grade


def _grades_of_rows(
    korder: np.ndarray, skey: np.ndarray, tkey: np.ndarray, grades: np.ndarray
) -> np.ndarray:
    """The grade of every list row, a key repeated in the list included (each
    of its rows reads the grade); ``tkey`` holds each truth pair once."""
    rec_grade = np.zeros(len(skey))
    if len(skey) and len(tkey):
        at = np.minimum(np.searchsorted(tkey, skey), len(tkey) - 1)
        found = tkey[at] == skey
        rec_grade[korder[found]] = grades[at[found]]
    return rec_grade


def _tie_groups(
    ru: np.ndarray,
    score: np.ndarray | None,
    rec_offsets: np.ndarray,
    need_ties: bool,
    counts: dict[str, Any],
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Count rows tied in score with the row above; with ``need_ties``, the
    1-based first and last position of each row's group of equal scores."""
    if score is not None and len(score) > 1:
        # rows whose score equals the previous row's of the same user: ties broken by id
        counts["recommendation_rows_tied"] = int(
            ((ru[1:] == ru[:-1]) & (score[1:] == score[:-1])).sum()
        )
    if not need_ties or score is None or not len(score):
        return None, None
    new = np.ones(len(score), dtype=bool)
    new[1:] = (ru[1:] != ru[:-1]) | (score[1:] != score[:-1])
    first_rows = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    last_rows = np.append(first_rows[1:] - 1, len(score) - 1)
    return first_rows[group] - rec_offsets[ru] + 1, last_rows[group] - rec_offsets[ru] + 1


def _rank_positions(
    rows: _Rows, rec_offsets: np.ndarray, rank: str, counts: dict[str, Any]
) -> np.ndarray | None:
    """Under ``rank="position"``, the 0-based position of every row (its rank
    − 1); None when positions follow the list order. Lists whose ranks leave
    gaps are counted (``lists_with_rank_gaps``) under either meaning."""
    if rows.rank is None:
        return None
    n = np.diff(rec_offsets)
    has = n > 0
    # only each list's first and last rank are read (no copy of the whole column)
    first = rows.rank[rec_offsets[:-1][has]].astype(np.int64)
    last = rows.rank[rec_offsets[1:][has] - 1].astype(np.int64)
    gaps = int(((last - first + 1 != n[has]) | (first != 1)).sum())
    if gaps:
        counts["lists_with_rank_gaps"] = gaps
    if rank != "position":
        return None
    return rows.rank.astype(np.int64) - 1


def _native_join(
    ru: np.ndarray,
    ri: np.ndarray,
    tu: np.ndarray,
    ti: np.ndarray,
    grades: np.ndarray,
    n_users: int,
    threshold: float,
    want_grades: bool,
    pairs: bool = False,
    offsets: np.ndarray | None = None,
    reuse: str | None = None,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, _HitPairs | None] | None:
    """Grades (when wanted), gains and list offsets from the compiled pass, or
    None when it is not available or the input needs the sorting path (an
    item twice in a list or in a user's truth). With ``pairs``, also the list
    row, the truth row and the position of every row of gain > 0 (list
    order), else None. ``offsets``: the list offsets, already known (the
    pass then only checks them; a module built before ``user_walk`` finds
    them itself). ``reuse``: the grades and gains go to buffers of that name
    in the claimed :class:`~receval._workspace.Workspace`."""
    if _native is None:
        return None
    n = len(ru)

    def out(what: str) -> np.ndarray:
        return np.empty(n) if reuse is None else _take(f"{reuse}.{what}", n, np.float64)

    grade = out("grade") if want_grades else None
    given = offsets is not None and hasattr(_native, "user_walk")
    gain = out("gain")
    if not given:
        offsets = np.empty(n_users + 1, np.int64)
    c = np.ascontiguousarray
    args = (
        c(ru, dtype=np.int64),
        c(ri, dtype=np.int64),
        c(tu, dtype=np.int64),
        c(ti, dtype=np.int64),
        c(grades, dtype=np.float64),
        n_users,
        float(threshold),
        grade,
        gain,
        offsets,
    )
    if not pairs:
        status = _native.join(*args, None, None, None, True) if given else _native.join(*args)
        return (grade, gain, offsets, None) if status == 0 else None
    cap = min(n, len(tu))  # a row of gain > 0 is a list row and a truth row, each once
    hit = np.empty((3, cap), np.int64)  # list row, truth row, position
    status, count = _native.join(*args, hit[0], hit[1], hit[2], *((True,) if given else ()))
    if status != 0:
        return None
    return grade, gain, offsets, (hit[0, :count], hit[1, :count], hit[2, :count])


def _sorted_keys(key: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """The stable argsort of non-negative keys below ``bound``, and the sorted keys.

    When a key and its row fit in 63 bits together, one plain sort of
    ``key << bits | row`` does it (keys made unique by their row, so the
    order is the stable one), which is faster than an argsort.
    """
    n = len(key)
    bits = max(1, int(n - 1).bit_length())
    if n and (bound - 1).bit_length() + bits <= 63:
        packed = np.sort((key << bits) | np.arange(n, dtype=np.int64))
        return packed & ((1 << bits) - 1), packed >> bits
    order = np.argsort(key, kind="stable")
    return order, key[order]


def _ideal(
    tuser: np.ndarray,
    grades: np.ndarray,
    threshold: float,
    n_users: int,
    reuse: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The grades >= threshold and > 0 of each user sorted descending, and
    their offsets (users in code order); ``reuse``: the grades go to that
    buffer of the claimed :class:`~receval._workspace.Workspace`."""
    if _native is not None:
        out = np.empty(len(grades)) if reuse is None else _take(reuse, len(grades), np.float64)
        offsets = np.empty(n_users + 1, dtype=np.int64)
        c = np.ascontiguousarray
        count = _native.ideal(
            c(tuser, dtype=np.int64), c(grades, dtype=np.float64), n_users, threshold, out, offsets
        )
        return out[:count], offsets
    keep = (grades >= threshold) & (grades > 0)
    iu, ig = tuser[keep], grades[keep]
    if len(ig) and ig.min() != ig.max():
        levels, inv = np.unique(-ig, return_inverse=True)
        iorder = np.argsort(iu * len(levels) + inv, kind="stable")
        iu, ig = iu[iorder], ig[iorder]
    return ig, user_offsets(iu, n_users)


def binary_grades(grades: np.ndarray, cut: float | None) -> np.ndarray:
    """Grades read as binary relevance (``graded=False``, the reading of tools
    that see no grades): every truth row relevant (grade 1) when ``cut`` is
    None, else the rows graded >= ``cut`` (1) and the others judged
    non-relevant (0), as a tool given only the rows that pass the threshold
    would see them. A negative grade stays as it is, for ``negative_grades``
    to read (:func:`read_negative`).

    >>> binary_grades(np.array([5.0, 3.0, -1.0]), 4.0).tolist()
    [1.0, 0.0, -1.0]
    >>> binary_grades(np.array([5.0, 0.0, -1.0]), None).tolist()
    [1.0, 1.0, -1.0]
    """
    if cut is None:
        return np.where(grades < 0, grades, 1.0)
    return np.where(grades < 0, grades, (grades >= cut).astype(np.float64))


def _max_grade(grades: np.ndarray) -> float:
    return float(grades.max()) if len(grades) else 1.0


def _widths(p: Prepared, facts: Facts) -> tuple[int, int]:
    # a correction (sampled evaluation) reads every listed item's sampled rank
    whole, max_k = facts.whole, facts.max_k
    max_n = int(_spans(p).max(initial=0))
    max_r = int(p.n_relevant.max(initial=0))
    if p.positive_ideal_offsets is not None:
        max_r = max(max_r, int(np.diff(p.positive_ideal_offsets).max(initial=0)))
    w = max_n if whole else min(max_k, max_n)
    wi = max_r if whole else min(max_k, max_r)
    return max(w, 1), max(wi, 1)


def _spans(p: Prepared) -> np.ndarray:
    """Per user, the positions a list spans: its length, or under
    ``rank="position"`` its largest rank (gaps included)."""
    if not p.positioned:
        return p.n
    assert p.rec_pos is not None
    out = np.zeros(len(p.n), dtype=np.int64)
    has = p.n > 0
    out[has] = p.rec_pos[p.rec_offsets[1:][has] - 1] + 1
    return out


def _fill(
    offsets: np.ndarray,
    u0: int,
    u1: int,
    values: np.ndarray,
    width: int,
    user: np.ndarray,
    pos: np.ndarray | None = None,
    dtype: Any = np.float64,
    pad: Any = 0,
) -> np.ndarray:
    """A ``(u1 - u0, width)`` matrix of the values of users u0..u1-1 by
    position, column-major: a position of every user is contiguous, which is
    what the kernels' column-by-column running sums read."""
    r0, r1 = offsets[u0], offsets[u1]
    m = u1 - u0
    out = np.zeros((width, m), dtype) if pad == 0 else np.full((width, m), pad, dtype=dtype)
    if r1 == r0:
        return out.T
    if _native is not None and pos is None and out.itemsize == 8 and values.dtype == out.dtype:
        # positions follow the offsets (rows of a user are in list order)
        _native.fill(offsets, u0, u1, np.ascontiguousarray(values), width, out.reshape(-1))
        return out.T
    u = user[r0:r1] - u0
    p = pos[r0:r1] if pos is not None else np.arange(r0, r1) - offsets[user[r0:r1]]
    keep = p < width
    flat = out.reshape(-1)
    if keep.all():
        flat[p * m + u] = values[r0:r1]
    else:
        flat[p[keep] * m + u[keep]] = values[r0:r1][keep]
    return out.T


class _CellSource:
    """The nonzero values of a chunk's per-user rows at positions < width,
    cut into :class:`Cells` block by block. Positions follow the rows' order
    in their list, or are given (``pos``: under ``rank="position"``)."""

    def __init__(
        self,
        offsets: np.ndarray,
        values: np.ndarray,
        width: int,
        pos: np.ndarray | None = None,
        reuse: str | None = None,
    ) -> None:
        users = len(offsets) - 1
        self.offsets = np.empty(users + 1, dtype=np.int64)
        self.width = width
        if _native is not None and pos is None and values.dtype == np.float64:
            cap = int(np.minimum(np.diff(offsets), width).sum())
            if reuse:  # from the thread's Workspace, when one is claimed
                self.user = _take(reuse + ".user", cap, np.int64)
                self.pos = _take(reuse + ".pos", cap, np.int64)
                self.value = _take(reuse + ".value", cap, np.float64)
            else:
                self.user, self.pos = np.empty(cap, np.int64), np.empty(cap, np.int64)
                self.value = np.empty(cap)
            c = _native.cells(offsets, values, width, self.user, self.pos, self.value, self.offsets)
            self.user, self.pos, self.value = self.user[:c], self.pos[:c], self.value[:c]
            return
        rows = np.flatnonzero(values != 0)
        user = np.searchsorted(offsets, rows, side="right") - 1
        at = rows - offsets[user] if pos is None else pos[rows]
        keep = at < width
        self.user, self.pos = user[keep], at[keep]
        self.value = values[rows[keep]].astype(np.float64)
        self.offsets[0] = 0
        np.cumsum(np.bincount(self.user, minlength=users), out=self.offsets[1:])

    def block(self, u0: int, u1: int) -> Cells:
        c0, c1 = self.offsets[u0], self.offsets[u1]
        return Cells(
            self.user[c0:c1] - u0,
            self.pos[c0:c1],
            self.value[c0:c1],
            self.offsets[u0 : u1 + 1] - c0,
            self.width,
        )


def _tied(specs: Sequence[MetricSpec]) -> set[tuple[str, str]]:
    """The (gain, grades) of the specs whose equal scores share their gains."""
    out = set()
    for s in specs:
        params = dict(s.params)
        if "score_ties" in s.definition.requirements(s.k, params):
            out.add((str(params.get("gain", "linear")), str(params.get("grades", "relevant"))))
    return out


def _tie_averaged(p: Prepared, gain: str, grades: str) -> np.ndarray:
    """Per list row, the mean ``gain`` of its group of equal scores (consecutive
    rows of one user with the same score): sklearn's ``_tie_average_dcg``
    gains. Without scores every row is its own group."""
    graded = p.rec_gain if grades == "relevant" else p.positive_gain
    assert graded is not None
    values = gain_of(np.asarray(graded, dtype=np.float64), gain)
    ru, score = p.rec_user, p.rec_score
    if score is None or len(values) < 2:
        return np.ascontiguousarray(values, dtype=np.float64)
    start = np.ones(len(values), dtype=bool)
    start[1:] = (ru[1:] != ru[:-1]) | (score[1:] != score[:-1])
    first = np.flatnonzero(start)
    size = np.diff(np.append(first, len(values)))
    mean = np.add.reduceat(values, first) / size
    return np.ascontiguousarray(np.repeat(mean, size), dtype=np.float64)


def _graded_sources(
    p: Prepared, specs: Sequence[MetricSpec], w: int, wi: int, at: np.ndarray | None
) -> tuple[_CellSource, _CellSource] | None:
    """Under ``graded=False``, the cells of the grades as gains (list, ideal)
    when a metric reads them (:func:`graded_gains`), else None."""
    if p.graded_gain is None or not any(_gain_read(s) for s in specs):
        return None
    assert p.graded_ideal_offsets is not None and p.graded_ideal_grades is not None
    return (
        _CellSource(p.rec_offsets, p.graded_gain, w, at),
        _CellSource(p.graded_ideal_offsets, p.graded_ideal_grades, wi),
    )


def _scored_source(p: Prepared, w: int, at: np.ndarray | None) -> _CellSource:
    """The cells of the hits scored > 0, for the metrics that read only those
    (``scores=positive``: torchmetrics)."""
    gain = p.rec_gain if p.rec_score is None else np.where(p.rec_score > 0, p.rec_gain, 0.0)
    return _CellSource(p.rec_offsets, np.ascontiguousarray(gain, np.float64), w, at)


def _join_sources(p: Prepared, w: int, at: np.ndarray | None) -> dict[str, _CellSource]:
    """The cells of how repeated rows count (:class:`Joined`), by name of
    the :class:`Batch` field they become."""
    how = p.joined
    if how is None:
        return {}
    named = {
        "pairs": how.pairs,
        "rejoined": how.rejoined,
        "rejoin_extra": how.rejoin_extra,
        "distinct_hits": how.distinct,
    }
    return {
        name: _CellSource(p.rec_offsets, np.ascontiguousarray(values, np.float64), w, at)
        for name, values in named.items()
        if values is not None
    }


def _join_block(p: Prepared, sources: dict[str, _CellSource], u0: int, u1: int) -> dict[str, Any]:
    """The :class:`Batch` fields of how repeated rows count, for users u0..u1-1."""
    if p.joined is None:
        return {}
    out: dict[str, Any] = {name: c.block(u0, u1) for name, c in sources.items()}
    out["each_pair"] = p.joined.each_pair
    if p.joined.n_distinct is not None:
        out["n_distinct"] = p.joined.n_distinct[u0:u1]
    return out


def _history_block(
    history: tuple[np.ndarray, np.ndarray], u0: int, u1: int
) -> tuple[np.ndarray, np.ndarray]:
    """Users ``u0:u1`` of the training items' ``(offsets, items)``, offsets from 0."""
    offsets, items = history
    return offsets[u0 : u1 + 1] - offsets[u0], items[offsets[u0] : offsets[u1]]


def _views(
    graded: tuple[_CellSource, _CellSource] | None,
    weights: tuple[_HitWeights, _RelevantWeights | None] | None,
    u0: int,
    u1: int,
) -> dict[str, Any]:
    """A block's :class:`Batch` fields of the grades as gains and of the weights."""
    return {
        "graded_hits": None if graded is None else graded[0].block(u0, u1),
        "graded_ideal_cells": None if graded is None else graded[1].block(u0, u1),
        "hit_weights": None if weights is None else weights[0].block(u0, u1),
        "relevant_weights": None
        if weights is None or weights[1] is None
        else weights[1].block(u0, u1),
    }


class _RelevantWeights:
    """Each user's relevant pairs' weights, ascending (a sum over them never
    depends on the order of the truth's rows), cut block by block as
    ``(block-local user of each, weight)`` (:attr:`Batch.relevant_weights`).
    Weights already grouped by user (``offsets``: the compiled pass of
    :func:`pair_weights`) are sorted in place, a user at a time in C (sorting
    networks for the usual few); else one padded row per user is sorted, or,
    with many weights per user, one argsort."""

    def __init__(
        self,
        users: np.ndarray,
        weights: np.ndarray,
        n_users: int,
        offsets: np.ndarray | None = None,
    ) -> None:
        if offsets is not None and hasattr(_native, "sort_runs"):  # grouped (compiled pass)
            _native.sort_runs(offsets, weights)  # in place: any order of a user's is theirs
            self.user, self.values, self.offsets = users, weights, offsets
            return
        if len(users) and bool((users[1:] >= users[:-1]).all()):  # grouped already (usual)
            self.user, values = users, weights
        else:
            order = np.argsort(users, kind="stable")
            self.user, values = users[order], weights[order]
        self.offsets = user_offsets(self.user, n_users)
        rank = np.arange(len(values)) - self.offsets[self.user]
        width = int(rank.max(initial=-1)) + 1
        if n_users * width <= 4 * len(values) + 1024:  # few per user: one padded row each
            rows = np.full((n_users, width), np.inf)
            at = self.user * width + rank
            rows.reshape(-1)[at] = values
            rows.sort(axis=1)  # the padding (inf) last; equal weights are equal numbers
            self.values = rows.reshape(-1)[at]
        else:
            again = np.argsort(weights)
            again = again[np.argsort(users[again], kind="stable")]
            self.values = weights[again]

    def block(self, u0: int, u1: int) -> tuple[np.ndarray, np.ndarray]:
        c0, c1 = self.offsets[u0], self.offsets[u1]
        return self.user[c0:c1] - u0, self.values[c0:c1]


def weighted(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    """The specs that weight relevant pairs by their inverse propensity (``weighting=``)."""
    return [s for s in specs if s.param_dict.get("weighting", "none") != "none"]


class _HitWeights:
    """The weights of the cells of ``hits`` (the relevant list rows at positions
    below its width), cut block by block like them (:attr:`Batch.hit_weights`)."""

    def __init__(
        self,
        hits: _CellSource,
        rows: np.ndarray,
        weights: np.ndarray,
        at: np.ndarray | None,
        p: Prepared,
    ) -> None:
        if at is not None:
            pos = at[rows]
        elif p.hit_pos is not None:  # from the compiled join
            pos = p.hit_pos
        else:
            pos = rows - p.rec_offsets[p.rec_user[rows]]
        if not len(pos) or pos.max() < hits.width:  # every hit is a cell
            self.values = weights
        else:
            self.values = weights[pos < hits.width]
        self.offsets = hits.offsets
        assert len(self.values) == len(hits.value)

    def block(self, u0: int, u1: int) -> np.ndarray:
        return self.values[self.offsets[u0] : self.offsets[u1]]


def _weight_sources(
    p: Prepared, specs: Sequence[MetricSpec], hits: _CellSource, at: np.ndarray | None
) -> tuple[_HitWeights, _RelevantWeights | None] | None:
    """The weights of the list's relevant cells (aligned with ``hits``: the same
    nonzero rows, 1/p >= 1) and of each user's relevant pairs, when a metric
    is weighted. A pair of propensity 0 is an error unless its metric clips."""
    asked = weighted(specs)
    if not asked:
        return None
    if p.hit_rows is None or p.hit_weight is None or p.relevant_weight is None:
        raise MetricError(f"{asked[0]} needs propensities (propensities=), which were not given")
    unclipped = [s for s in asked if float(s.param_dict.get("clip", 0.0)) == 0.0]
    # weights are >= 1 (never NaN here): an infinite one is the largest (one pass)
    if unclipped and len(p.relevant_weight) and p.relevant_weight.max() == np.inf:
        s = unclipped[0]
        zero = int(np.isinf(p.relevant_weight).sum())
        raise MetricError(
            f"{s}: {zero} relevant (user, item) pairs have propensity 0 (under the "
            "popularity model: items never seen in " + option("train") + "): give clip=, "
            f"the smallest propensity allowed, e.g. {s.name}@{s.k or 10}[weighting="
            f"{s.param_dict['weighting']},clip=0.01]"
        )
    snips = any(s.param_dict["weighting"] == "snips" for s in asked)  # reads Σ_relevant w
    assert p.relevant_user is not None
    return (
        _HitWeights(hits, p.hit_rows, p.hit_weight, at, p),
        _RelevantWeights(p.relevant_user, p.relevant_weight, len(p.n), p.relevant_offsets)
        if snips
        else None,
    )


@dataclass(frozen=True)
class Facts:
    """What a set of metrics asks of the engine, read once from the registry's
    declarations (not once per chunk of users): :func:`facts_of`. The driver
    keeps one per plan (:attr:`receval.engines.driver.Plan.facts`).

    Attributes:
        specs, defs, params: the specs, their definitions and their parameters
            as dicts (non-default ones, as :class:`MetricSpec` holds them).
        need_ties: a metric reads the groups of equal scores.
        positive_grades: a metric reads every grade > 0 (``grades=positive``).
        reads_judged: a metric reads which listed items are judged.
        gain_read: per spec, whether it reads grades as gains under
            ``graded=False`` (:func:`reads_gains`).
        whole: a metric reads whole lists (no cut-off, or a correction).
        max_k: the largest cut-off (0 without one).
        scored: a metric reads only the hits scored > 0 (``scores=positive``).
        tied: the (gain, grades) of the metrics whose equal scores share gains.
        weighted: the specs weighted by inverse propensities (:func:`weighted`).
        needs_items: a metric reads item-side arrays.
        reads_history: a metric reads the users' training items.
        needs_truth: per spec, whether it needs the truth (policies' ``zero``).
    """

    specs: tuple[MetricSpec, ...]
    defs: tuple[Any, ...]
    params: tuple[dict[str, Any], ...]
    need_ties: bool
    positive_grades: bool
    reads_judged: bool
    gain_read: tuple[bool, ...]
    whole: bool
    max_k: int
    scored: bool
    tied: tuple[tuple[str, str], ...]
    weighted: tuple[MetricSpec, ...]
    needs_items: bool
    reads_history: bool
    needs_truth: tuple[bool, ...]
    _checked: dict[float, str | None] = field(default_factory=dict, compare=False, repr=False)
    #: set once a block of users showed that no metric read a dense matrix:
    #: every later chunk then starts with large blocks (block sizes move no number)
    _sparse: list[bool] = field(default_factory=list, compare=False, repr=False)

    def check(self, max_grade: float) -> None:
        """Every metric's check of the data (:meth:`MetricDef.check_data`)
        against the largest grade: a :class:`MetricError` naming the first
        that refuses it (each largest grade checked once)."""
        if max_grade in self._checked:
            failed = self._checked[max_grade]
        else:
            failed = None
            stats = {"max_grade": max_grade}
            for s, d, params in zip(self.specs, self.defs, self.params, strict=True):
                why = d.check_data(dict(params), stats)
                if why is not None:
                    failed = f"{s}: {why}"
                    break
            if len(self._checked) < 64:
                self._checked[max_grade] = failed
        if failed is not None:
            raise MetricError(failed)


def facts_of(specs: Sequence[MetricSpec]) -> Facts:
    """What ``specs`` ask of the engine (:class:`Facts`), read from the registry.

    Example:
        >>> from receval.metrics.spec import parse_metrics
        >>> f = facts_of(parse_metrics(["ndcg@10", "precision@5"]))
        >>> f.max_k, f.need_ties, f.whole
        (10, False, False)
    """
    specs = tuple(specs)
    defs = tuple(s.definition for s in specs)
    params = tuple(dict(s.params) for s in specs)
    needs = [d.requirements(s.k, q) for s, d, q in zip(specs, defs, params, strict=True)]
    return Facts(
        specs=specs,
        defs=defs,
        params=params,
        need_ties=any(d.needs_ties for d in defs),
        positive_grades=any("positive_grades" in n for n in needs),
        reads_judged=any(d.reads_judged for d in defs),
        gain_read=tuple(_gain_read(s) for s in specs),
        whole=any(s.k is None or "catalog_size" in n for s, n in zip(specs, needs, strict=True)),
        max_k=max((s.k for s in specs if s.k is not None), default=0),
        scored=any("positive_scores" in n for n in needs),
        tied=tuple(sorted(_tied(specs))),
        weighted=tuple(weighted(specs)),
        needs_items=any(d.needs for d in defs),
        reads_history=any(d.reads_history for d in defs),
        needs_truth=tuple(bool(d.needs_truth) for d in defs),
    )


def compute(
    p: Prepared,
    specs: Sequence[MetricSpec] | Facts,
    items: ItemContext | None = None,
    catalog_size: int | None = None,
) -> np.ndarray:
    """Every metric for every user: a ``(len(specs), U)`` float64 array.

    Users are processed in blocks; every spec runs on the same block, so
    cumulative arrays are shared across metrics and cut-offs. ``specs`` may
    be their :class:`Facts` (:func:`facts_of`), read once for many chunks.
    """
    facts = specs if isinstance(specs, Facts) else facts_of(specs)
    facts.check(p.max_grade)
    n_users = len(p.user_ids)
    out = np.empty((len(facts.specs), n_users), dtype=np.float64)
    w, wi = _widths(p, facts)
    step = max(1, BLOCK_CELLS // max(w, wi))
    at = p.rec_pos if p.positioned else None  # explicit positions (rank="position")
    src = _sources(p, facts, w, wi, at)
    if facts._sparse and not src.dense_input:  # an earlier chunk's blocks were all sparse
        step = max(step, SPARSE_BLOCK_USERS)
    history = None
    if items is not None and facts.reads_history:
        history = items.history(p.user_ids)
    u0 = 0
    while u0 < n_users:
        u1 = min(n_users, u0 + step)
        batch = _batch(p, src, items, catalog_size, history, w, at, u0, u1)
        for j, (s, d, params) in enumerate(zip(facts.specs, facts.defs, facts.params, strict=True)):
            on = batch.graded_view() if src.graded is not None and facts.gain_read[j] else batch
            out[j, u0:u1] = d.compute(on, s.k, params)
        if u0 == 0 and not src.dense_input and not batch.dense_built():
            step = max(step, SPARSE_BLOCK_USERS)
            if not facts._sparse:
                facts._sparse.append(True)
        u0 = u1
    return out


@dataclass
class _Sources:
    """A chunk's cell sources, cut into every block's :class:`Batch`."""

    hits: _CellSource
    ideal: _CellSource
    slots: _CellSource | None
    scored: _CellSource | None
    tied: dict[tuple[str, str], _CellSource]
    positive: tuple[_CellSource, _CellSource] | None
    graded: tuple[_CellSource, _CellSource] | None
    joins: dict[str, _CellSource]
    weights: tuple[_HitWeights, _RelevantWeights | None] | None
    judged: tuple[_CellSource, _CellSource] | None
    ties: bool
    context: np.ndarray | None
    dense_input: bool


def _sources(p: Prepared, facts: Facts, w: int, wi: int, at: np.ndarray | None) -> _Sources:
    """The cell sources of what the metrics of ``facts`` read."""
    specs = facts.specs
    hits = _CellSource(p.rec_offsets, p.rec_gain, w, at, reuse="hits")
    positive = None
    if p.positive_ideal_offsets is not None:
        assert p.positive_ideal_grades is not None and p.positive_gain is not None
        positive = (
            _CellSource(p.rec_offsets, p.positive_gain, w, at),
            _CellSource(p.positive_ideal_offsets, p.positive_ideal_grades, wi),
        )
    judged = None
    if p.rec_judged is not None and facts.reads_judged:
        assert p.rec_pooled is not None
        judged = (
            _CellSource(p.rec_offsets, p.rec_judged, w, at),
            _CellSource(p.rec_offsets, p.rec_pooled, w, at),
        )
    ties = p.tie_start is not None and facts.need_ties
    # the item index matrix only for the metrics that read item-side arrays
    context = p.rec_context if facts.needs_items else None
    return _Sources(
        hits=hits,
        ideal=_CellSource(p.ideal_offsets, p.ideal_grades, wi, reuse="ideal"),
        slots=None if at is None else _CellSource(p.rec_offsets, np.ones(len(at)), w, at),
        scored=_scored_source(p, w, at) if facts.scored else None,
        tied={key: _CellSource(p.rec_offsets, _tie_averaged(p, *key), w, at) for key in facts.tied},
        positive=positive,
        graded=_graded_sources(p, specs, w, wi, at) if any(facts.gain_read) else None,
        joins=_join_sources(p, w, at),
        weights=_weight_sources(p, specs, hits, at) if facts.weighted else None,
        judged=judged,
        ties=ties,
        context=context,
        dense_input=ties or p.rec_recommended is not None or context is not None,
    )


def _batch(
    p: Prepared,
    src: _Sources,
    items: ItemContext | None,
    catalog_size: int | None,
    history: tuple[np.ndarray, np.ndarray] | None,
    w: int,
    at: np.ndarray | None,
    u0: int,
    u1: int,
) -> Batch:
    """Users u0..u1-1 as one :class:`Batch` of every source."""
    fill = dict(offsets=p.rec_offsets, u0=u0, u1=u1, width=w, user=p.rec_user, pos=at)
    ties, context, positive, judged = src.ties, src.context, src.positive, src.judged
    return Batch(
        src.hits.block(u0, u1),
        src.ideal.block(u0, u1),
        n=p.n[u0:u1],
        n_relevant=p.n_relevant[u0:u1],
        tie_start=_fill(values=p.tie_start, dtype=np.int64, **fill) if ties else None,
        tie_end=_fill(values=p.tie_end, dtype=np.int64, **fill) if ties else None,
        recommended=None
        if p.rec_recommended is None
        else _fill(values=p.rec_recommended, dtype=bool, pad=False, **fill),
        max_grade=p.max_grade,
        item_index=None
        if context is None or items is None
        else _fill(values=context, dtype=np.int64, pad=items.unknown, **fill),
        items=items,
        positive_hits=None if positive is None else positive[0].block(u0, u1),
        positive_ideal_cells=None if positive is None else positive[1].block(u0, u1),
        slots=None if src.slots is None else src.slots.block(u0, u1),
        history=None if history is None else _history_block(history, u0, u1),
        judged=None if judged is None else judged[0].block(u0, u1),
        pooled=None if judged is None else judged[1].block(u0, u1),
        n_judged=None if judged is None or p.n_judged is None else p.n_judged[u0:u1],
        catalog_size=catalog_size,
        scored_hits=None if src.scored is None else src.scored.block(u0, u1),
        tied_gains={key: c.block(u0, u1) for key, c in src.tied.items()} if src.tied else None,
        listed=p.has_recs[u0:u1],
        **_join_block(p, src.joins, u0, u1),
        **_views(src.graded, src.weights, u0, u1),
    )
