"""Kernels of the measures trec_eval has and the other kernels do not.

Definitions read from trec_eval 10.0's source (``m_<measure>.c``; the list's
relevance codes from ``form_res_rels.c``), written as array operations over a
block of users: every measure is one pass of running sums over the
``(users, positions)`` matrices of the batch, never a loop over users.

A listed item is *relevant* (grade >= threshold and > 0), *judged
non-relevant* (in the user's truth, grade >= 0, not relevant), *pooled but
unjudged* (in the truth with a negative grade, ``negative_grades="unjudged"``)
or *unjudged* (not in the truth at all). ``N``, the user's judged
non-relevant items, is ``n_judged − R``. A cut-off ``k`` cuts the list first:
every quantity is then that of the top ``min(k, n)`` items (trec_eval's
``-M k`` for one measure).
"""

from __future__ import annotations

import numpy as np

from receval.metrics.kernels.batch import Batch, cumsum_rows
from receval.metrics.kernels.ranking import graded_cells, ratio

__all__ = [
    "bin_g",
    "bpref",
    "g",
    "infap",
    "iprec",
    "iprec_avg",
    "judged",
    "judged_nonrelevant",
    "n_relevant",
    "n_retrieved",
    "ndcg_rel",
    "rbp_residual",
    "relative_precision",
    "rndcg",
    "set_ap",
    "unjudged",
    "utility",
]

#: trec_eval's floor of a value before its logarithm (MIN_GEO_MEAN, trec_eval.h)
GEO_FLOOR = 1e-5
#: trec_eval's INFAP_EPSILON (trec_eval.h)
INFAP_EPSILON = 1e-5


def geometric(values: np.ndarray) -> np.ndarray:
    """ln(max(v, 1e-5)): the per-user value whose mean's exponential is the
    geometric mean (trec_eval's gm_map, gm_bpref: m_gm_map.c, meas_avg.c)."""
    return np.log(np.maximum(values, GEO_FLOOR))


def _cols(b: Batch, k: int | None) -> int:
    """The columns a cut-off reads."""
    return b.col(k) + 1


def _filled(b: Batch, k: int | None) -> np.ndarray:
    """``(m, c)`` bool: the positions within the top k that hold an item."""
    c = _cols(b, k)
    filled = b.filled()
    if filled is not None:
        return filled[:, :c]
    return b.positions()[None, :c] <= b.retrieved(k)[:, None]


def _judged(b: Batch) -> np.ndarray:
    """``(m, W)`` bool: is the item at each position judged."""
    if b.judged is None:  # pragma: no cover - the engine builds it (reads_judged)
        raise ValueError("this metric needs the judgments (MetricDef.reads_judged)")
    return b.cached("judged", lambda: b.judged.dense() > 0)  # type: ignore[union-attr]


def _nonrel(b: Batch) -> np.ndarray:
    """``(m, W)`` bool: judged and not relevant."""
    return b.cached("judged_nonrel", lambda: _judged(b) & ~b.relevant())


def _n_nonrel(b: Batch) -> np.ndarray:
    """``(m,)`` int64: N, the user's judged non-relevant items."""
    assert b.n_judged is not None
    return b.n_judged - b.n_relevant


def _before(b: Batch, key: str, matrix: np.ndarray) -> np.ndarray:
    """``(c,)`` per relevant cell of ``hits``: how many positions before it
    are True in ``matrix`` (an exclusive running count)."""

    def compute() -> np.ndarray:
        cum = cumsum_rows(np.asfortranarray(matrix), np.int64)
        h = b.hits
        return cum[h.user, h.pos] - matrix[h.user, h.pos]

    return b.cached(("before", key), compute)


def _in_top(b: Batch, k: int | None) -> tuple[np.ndarray, np.ndarray] | None:
    return b.hits.upto(None if k is None else min(k, b.width))


def _cell_sums(b: Batch, terms: np.ndarray, k: int | None) -> np.ndarray:
    return b.hits.row_sums(terms, k)


def n_retrieved(b: Batch, k: int | None) -> np.ndarray:
    """min(k, n): the items retrieved (trec_eval's num_ret; m_num_ret.c)."""
    return b.retrieved(k).astype(np.float64)


def n_relevant(b: Batch, k: int | None) -> np.ndarray:
    """R, the user's relevant items (trec_eval's num_rel; m_num_rel.c)."""
    return b.n_relevant.astype(np.float64)


def judged(b: Batch, k: int | None) -> np.ndarray:
    """Judged items among the first min(k, n) / min(k, n) (n without k):
    ir_measures' ``Judged@k`` (providers/judged_provider.py since 0.3.5: a
    list shorter than k divides by its length); 0 for an empty list."""
    inside = _filled(b, k)
    count = (inside & _judged(b)[:, : inside.shape[1]]).sum(axis=1)
    return ratio(count, b.retrieved(k))


def unjudged(b: Batch, k: int | None) -> np.ndarray:
    """Unjudged items (not in the truth, or pooled but unjudged) among the
    first min(k, n) / k (n without k): trec_eval's ``unj_k`` (m_unjudged.c)."""
    inside = _filled(b, k)
    count = (inside & ~_judged(b)[:, : inside.shape[1]]).sum(axis=1)
    return ratio(count, b.n if k is None else k)


def judged_nonrelevant(b: Batch, k: int | None) -> np.ndarray:
    """Judged non-relevant items among the first k: trec_eval's
    ``num_nonrel_judged_ret`` (m_num_nonrel_judged_ret.c)."""
    return _nonrel(b)[:, : _cols(b, k)].sum(axis=1).astype(np.float64)


def bpref(b: Batch, k: int | None) -> np.ndarray:
    """(1/R) Σ_{relevant r in the top k} (1 − min(nr_r, R) / min(N, R)), nr_r
    the judged non-relevant items above r, a term 1 when nr_r = 0; unjudged
    items are skipped. Buckley & Voorhees 2004; trec_eval's m_bpref.c."""
    nr = _before(b, "nonrel", _nonrel(b)).astype(np.float64)
    h = b.hits
    r = b.n_relevant[h.user].astype(np.float64)
    cap = np.minimum(_n_nonrel(b), b.n_relevant)[h.user].astype(np.float64)
    terms = np.where(nr > 0, 1.0 - ratio(np.minimum(nr, r), cap), 1.0)
    return ratio(_cell_sums(b, terms, k), b.n_relevant)


def infap(b: Batch, k: int | None) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam 2006; trec_eval's m_infap.c): for a
    relevant item at position j + 1 (0-based j > 0) with r relevant, d judged
    non-relevant and u pooled-but-unjudged items above it,
    1/(j+1) + (j/(j+1)) · ((r + d + u)/j) · ((r + ε)/(r + d + 2ε)), ε = 1e-5;
    1 at the first position; summed and divided by R."""
    h = b.hits
    pooled = b.pooled
    assert pooled is not None
    r = (b.hit_rank() - 1).astype(np.float64)
    d = _before(b, "nonrel", _nonrel(b)).astype(np.float64)
    u = _before(b, "pooled", pooled.dense() > 0).astype(np.float64)
    j = h.pos.astype(np.float64)
    safe = np.where(j > 0, j, 1.0)
    eps = INFAP_EPSILON
    terms = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((r + d + u) / safe) * (
        (r + eps) / (r + d + 2 * eps)
    )
    terms = np.where(j > 0, terms, 1.0)
    return ratio(_cell_sums(b, terms, k), b.n_relevant)


def relative_precision(b: Batch, k: int | None) -> np.ndarray:
    """hits@k / min(k, R); without k, hits / min(n, R): precision over the
    best precision possible (trec_eval's relative_P, set_relative_P)."""
    den = np.minimum(b.n if k is None else k, b.n_relevant)
    return ratio(b.hits_at(k), den)


def set_ap(b: Batch, k: int | None) -> np.ndarray:
    """hits² / (min(k, n) · R): the unranked AP of the set retrieved, recall
    times precision (trec_eval's set_map; m_set_map.c)."""
    h = b.hits_at(k).astype(np.float64)
    return ratio(h * h, b.retrieved(k) * b.n_relevant)


def utility(
    b: Batch,
    k: int | None,
    *,
    rel_ret: float = 1.0,
    nonrel_ret: float = -1.0,
    rel_nonret: float = 0.0,
) -> np.ndarray:
    """rel_ret·hits + nonrel_ret·(retrieved − hits) + rel_nonret·(R − hits):
    the linear utility of the set retrieved (trec_eval's utility, m_utility.c;
    its 4th coefficient, for the non-relevant documents of the collection not
    retrieved, needs the collection's size and is left out)."""
    hits = b.hits_at(k).astype(np.float64)
    return (
        rel_ret * hits + nonrel_ret * (b.retrieved(k) - hits) + rel_nonret * (b.n_relevant - hits)
    )


def bin_g(b: Batch, k: int | None) -> np.ndarray:
    """(1/R) Σ_{relevant r in the top k} 1 / log2(2 + non-relevant items above r)
    (trec_eval's binG; m_binG.c)."""
    h = b.hits
    above = (h.pos - (b.hit_rank() - 1)).astype(np.float64)
    terms = 1.0 / np.log2(2.0 + above)
    return ratio(_cell_sums(b, terms, k), b.n_relevant)


def rbp_residual(b: Batch, k: int | None, *, p: float = 0.8) -> np.ndarray:
    """p^n + (1 − p) Σ_{unjudged i ≤ n} p^(i−1) when the top k holds an
    unjudged item, else 0: how much RBP could still grow if every unjudged
    item had the top grade (Moffat & Zobel 2008; trec_eval's m_rbp_resid.c)."""
    inside = _filled(b, k)
    unj = inside & ~_judged(b)[:, : inside.shape[1]]
    weights = np.power(p, np.arange(inside.shape[1], dtype=np.float64))
    total = cumsum_rows(np.asfortranarray(np.where(unj, weights, 0.0)))[:, -1]
    n = b.retrieved(k)
    out = np.power(p, n.astype(np.float64)) + (1.0 - p) * total
    return np.where(unj.any(axis=1), out, 0.0)


def _interpolated(b: Batch, k: int | None) -> np.ndarray:
    """``(m, c)``: interpolated precision max_{j >= i} hits@j / j over the
    positions of the top k (positions past the list never raise it)."""

    def compute() -> np.ndarray:
        c = _cols(b, k)
        hits = cumsum_rows(np.asfortranarray(b.relevant()[:, :c]), np.int64)
        prec = hits / b.positions()[None, :c]
        return np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]

    return b.cached(("interpolated", k), compute)


def _recall_cut(level: float, r: np.ndarray, rounding: str = "nearest") -> np.ndarray:
    """The relevant items a recall level asks for: lround(level · R) (half
    away from zero, C's lround: trec_eval 10), or ⌊level · R + 0.9⌋
    (``rounding="trec9"``: trec_eval 9 and earlier, and pytrec_eval, which
    bundles trec_eval 9.0.8)."""
    x = level * r.astype(np.float64)
    if rounding == "trec9":
        return np.floor(x + 0.9).astype(np.int64)
    whole = np.floor(x)
    return (whole + (x - whole >= 0.5)).astype(np.int64)


def iprec(
    b: Batch,
    k: int | None,
    *,
    recall: float = 0.0,
    rounding: str = "nearest",
    empty: str = "zero",
) -> np.ndarray:
    """Interpolated precision at a recall level: the largest precision at or
    after the position where the list reaches c = round(recall · R) relevant
    items (its first relevant item for c = 0); 0 when it never does.
    trec_eval's iprec_at_recall (m_iprec_at_recall.c).

    ``empty="nan"``: a list given empty (no item in the top k) is NaN at the
    levels whose c is 0, 0 at the others: trec_eval starts from
    ``num_rel_ret / num_ret`` = 0/0 and keeps it for the levels it never
    passes (pytrec_eval on a query mapped to ``{}``; a list ``-J`` condenses
    to nothing). A user without a list (``Batch.listed`` False: trec_eval
    ``-c`` ranks one document that is in no qrels) stays 0.
    """
    return _iprec_at(b, k, recall, rounding, empty)


def _iprec_at(
    b: Batch, k: int | None, level: float, rounding: str, empty: str = "zero"
) -> np.ndarray:
    ip = _interpolated(b, k)
    c = _recall_cut(level, b.n_relevant, rounding)
    h = b.hits
    sel = _in_top(b, k)
    user, pos, rank = h.user, h.pos, b.hit_rank()
    if sel is not None:
        user, pos, rank = sel[0], pos[sel[1]], rank[sel[1]]
    found = np.maximum(c, 1)[user] == rank  # the c-th relevant item (the first for c = 0)
    out = np.zeros(b.size)
    out[user[found]] = ip[user[found], pos[found]]
    if empty == "nan":
        out[_given_empty(b, k) & (c == 0)] = np.nan
    return out


def _given_empty(b: Batch, k: int | None) -> np.ndarray:
    """``(m,)`` bool: the users whose list was given and holds no item in the top k."""
    none = b.retrieved(k) == 0
    return none if b.listed is None else none & b.listed


#: trec_eval's 11 recall levels (m_11pt_avg.c)
ELEVEN = tuple(i / 10 for i in range(11))


def iprec_avg(
    b: Batch, k: int | None, *, rounding: str = "nearest", empty: str = "zero"
) -> np.ndarray:
    """Mean interpolated precision at the recall levels 0, 0.1, ..., 1
    (trec_eval's 11pt_avg; m_11pt_avg.c). ``empty="nan"``: NaN for a list
    given empty (its level 0 is 0/0, see :func:`iprec`)."""
    total = np.zeros(b.size)
    for level in ELEVEN:
        total += _iprec_at(b, k, level, rounding, empty)
    return total / len(ELEVEN)


# --- gain measures over the whole ideal (m_G.c, m_ndcg_rel.c, m_Rndcg.c) ------
#
# Gains are the grades (every grade > 0 with grades="positive", trec_eval's
# default gains: the relevance level); the ideal is the user's gains sorted
# descending. These read the whole ideal, so they take no cut-off.


def _gain_cells(b: Batch, grades: str) -> tuple[np.ndarray, np.ndarray]:
    """``(m, W)`` gains of the list and ``(m, W)`` ideal gains at the same
    positions (0 past the ideal)."""
    hits, ideal = graded_cells(b, grades)

    def compute() -> tuple[np.ndarray, np.ndarray]:
        at = np.zeros((b.size, b.width))
        keep = ideal.pos < b.width
        at[ideal.user[keep], ideal.pos[keep]] = ideal.value[keep]
        return hits.dense(), at

    return b.cached(("gain_cells", grades), compute)


def _discounts(width: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


def g(b: Batch, k: int | None, *, grades: str = "relevant") -> np.ndarray:
    """(1/Σ ideal gains) Σ_i g_i / log2(2 + C_i − S_i), C_i = Σ_{j ≤ i}
    max(ideal gain at j, 1), S_i = Σ_{j ≤ i} g_j: each item's gain discounted
    by how far the list's gain so far lags the ideal's (trec_eval's G; m_G.c)."""
    gains, ideal = _gain_cells(b, grades)
    cost = cumsum_rows(np.asfortranarray(np.maximum(ideal, 1.0)))
    got = cumsum_rows(np.asfortranarray(gains))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(gains != 0, gains / np.log2(2.0 + cost - got), 0.0)
    total = cumsum_rows(np.asfortranarray(terms))[:, -1]
    cells = graded_cells(b, grades)[1]
    best = np.bincount(cells.user, weights=cells.value, minlength=b.size)
    return ratio(total, best)


def _dcg_rows(b: Batch, grades: str) -> tuple[np.ndarray, np.ndarray]:
    """``(m, W)`` running DCG of the list and of the ideal, position by position."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        gains, ideal = _gain_cells(b, grades)
        disc = _discounts(b.width)
        return (
            cumsum_rows(np.asfortranarray(gains * disc)),
            cumsum_rows(np.asfortranarray(ideal * disc)),
        )

    return b.cached(("dcg_rows", grades), compute)


def ndcg_rel(b: Batch, k: int | None, *, grades: str = "relevant") -> np.ndarray:
    """nDCG averaged over the user's R' items with gain > 0: at each such
    item retrieved, DCG@i / IDCG@i at its position i; for each one not
    retrieved, DCG@n / IDCG (the whole ideal). trec_eval's ndcg_rel
    (m_ndcg_rel.c)."""
    hits, ideal = graded_cells(b, grades)
    dcg, idcg = _dcg_rows(b, grades)
    disc = _discounts(max(ideal.width, 1))
    whole = np.bincount(ideal.user, weights=ideal.value * disc[ideal.pos], minlength=b.size)
    # at each retrieved item with gain > 0: the running ratio at its position
    at = ratio(dcg[hits.user, hits.pos], idcg[hits.user, hits.pos])
    total = np.bincount(hits.user, weights=at, minlength=b.size)
    found = np.diff(hits.offsets)
    r_all = np.diff(ideal.offsets)
    last = dcg[:, b.col(None)] if b.width else np.zeros(b.size)
    total = total + (r_all - found) * ratio(last, whole)
    return ratio(total, r_all)


def rndcg(b: Batch, k: int | None, *, grades: str = "relevant") -> np.ndarray:
    """nDCG averaged at the user's R-levels: at each position b where the
    ideal's gain changes (after the items of each grade, the last after all
    R' items with gain > 0), DCG@min(b, n) / IDCG@b, and at n when the list
    goes on past position R' + 1; 0 for a user without relevant items (R = 0,
    whatever the gains). Järvelin & Kekäläinen's nDCG at trec_eval's R-levels
    (m_Rndcg.c: its loop over the list stops at position R' + 1, where the
    ideal's gain reaches 0, and adds the list's end only when documents remain
    after it; it returns 0 when num_rel, counted at the relevance level, is 0)."""
    _, ideal = graded_cells(b, grades)
    dcg, _ = _dcg_rows(b, grades)
    disc = _discounts(max(ideal.width, 1))
    terms = ideal.value * disc[ideal.pos]
    # the ideal DCG after each ideal cell: a running sum along each user's row
    running = cumsum_rows(np.asfortranarray(ideal.dense() * disc))
    idcg_after = running[ideal.user, ideal.pos]
    # boundaries: the last cell of each run of equal grades (b = its pos + 1)
    nxt = np.append(ideal.value[1:], -1.0)
    same_user = np.append(ideal.user[1:] == ideal.user[:-1], False)
    edge = ~same_user | (nxt != ideal.value)
    user, bpos = ideal.user[edge], ideal.pos[edge] + 1
    n = b.n
    upto = np.minimum(bpos, n[user])
    list_dcg = np.where(upto > 0, dcg[user, np.maximum(upto, 1) - 1], 0.0)
    total = np.bincount(user, weights=ratio(list_dcg, idcg_after[edge]), minlength=b.size)
    count = np.bincount(user, minlength=b.size).astype(np.float64)
    # the list's end, when it goes on past position R' + 1 (m_Rndcg.c)
    r_all = np.diff(ideal.offsets)
    longer = (n > r_all + 1) & (r_all > 0)
    whole = np.bincount(ideal.user, weights=terms, minlength=b.size)
    last = dcg[np.arange(b.size), np.minimum(n, b.width) - 1]
    total = total + np.where(longer, ratio(last, whole), 0.0)
    count = count + longer
    return np.where(b.n_relevant > 0, ratio(total, count), 0.0)
