"""Ranking-metric kernels: pure NumPy functions of a :class:`Batch`.

Each kernel takes a batch, the cut-off ``k`` (None = the whole list) and the
metric's parameters, and returns a float64 array with one value per user of
the batch. Kernels never decide which users count: the engine applies the
user policies (users without relevant items, users without a list) after the
kernel ran. Values for users with R = 0 are therefore arbitrary but finite.

Notation (SPEC §1): ``rel_i`` is 1 when the item at position i is relevant,
``g_i`` its grade (0 when not relevant), R the user's number of relevant
items, n the list length, hits@k the relevant items among the first k.

Sums over positions whose terms are 0 unless the item is relevant (hits, DCG,
the AP numerator, the ideal DCG) run over the batch's relevant cells only
(:meth:`~receval.metrics.kernels.batch.Cells.row_sums`), left to right per user.
"""

from __future__ import annotations

import numpy as np

from receval._accel import NATIVE as _native
from receval.metrics.kernels.batch import Batch, Cells, cumsum_rows

__all__ = [
    "auc",
    "average_precision",
    "dcg",
    "err",
    "f1",
    "graded_cells",
    "hit_rate",
    "hits",
    "ndcg",
    "pair_weights",
    "precision",
    "r_precision",
    "ratio",
    "rbp",
    "recall",
    "reciprocal_rank",
]


def ratio(num: np.ndarray, den: np.ndarray | float) -> np.ndarray:
    """num / den, 0 where den == 0 (no warnings): the kernels' division."""
    num = np.asarray(num, dtype=np.float64)
    if np.ndim(den) == 0:  # a cut-off: one division, no mask
        d = float(den)  # type: ignore[arg-type]
        return num / d if d != 0 else np.zeros_like(num)
    den = np.asarray(den, dtype=np.float64)
    if den.shape != num.shape:
        den = np.broadcast_to(den, num.shape)
    zero = den == 0
    out = num / np.where(zero, 1.0, den)  # plain loops: faster than a masked divide
    out[zero] = 0.0
    return out


WEIGHTINGS = ("none", "ips", "snips")


def pair_weights(
    b: Batch, weighting: str, clip: float = 0.0
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The inverse-propensity weights of a weighted metric (docs/counterfactual-metrics.md).

    Returns None for ``weighting="none"``; else ``(w, scale)``: ``w`` the weight
    of each cell of ``b.hits`` (the relevant item at that position),
    w = 1 / max(p, clip) with p the pair's propensity, and ``scale`` None
    (``ips``) or, per user, R / Σ_{i relevant} w_i (``snips``: the relevant
    items' weights normalised to sum to R, the self-normalised estimator of
    Yang et al. 2018, per user). Every kernel that sums over relevant items
    multiplies each item's term by its w, and its value by ``scale``. With
    every p = 1 both are exactly 1: the unweighted value, bit for bit.

    >>> from receval.metrics.kernels.batch import Cells
    >>> hits = Cells.from_dense(np.array([[1.0, 0.0, 1.0]]))
    >>> b = Batch(hits, Cells.from_dense(np.array([[1.0, 1.0]])), n=np.array([3]),
    ...           n_relevant=np.array([2]), hit_weights=np.array([2.0, 4.0]),
    ...           relevant_weights=(np.array([0, 0]), np.array([2.0, 4.0])))
    >>> w, scale = pair_weights(b, "snips", 0.5)  # weights 2, 4 clipped to 2, 2: scale 2 / 4
    >>> w.tolist(), scale.tolist()
    ([2.0, 2.0], [0.5])
    """
    if weighting == "none":
        return None
    if b.hit_weights is None or (weighting == "snips" and b.relevant_weights is None):
        raise ValueError(
            f"weighting={weighting} needs the engine's propensities (propensities=), and "
            "reads the list's relevant items as they are (not with scores=positive, "
            "grades=positive, tied=average, correction= or grades read as gains)"
        )
    if b.pairs is not None or b.distinct_hits is not None:
        raise ValueError(
            f"weighting={weighting} reads each relevant item once: not with repeated rows "
            "joined or counted distinct (duplicates='join', 'left_join' or 'count_distinct'); "
            "give duplicates='error' or 'keep'"
        )

    def compute() -> tuple[np.ndarray, np.ndarray | None]:
        assert b.hit_weights is not None
        cap = 1.0 / clip if clip > 0 else None
        w = b.hit_weights if cap is None else np.minimum(b.hit_weights, cap)
        if weighting == "ips":
            return w, None
        assert b.relevant_weights is not None
        users, rw = b.relevant_weights
        return w, ratio(b.n_relevant, _weight_sums(users, rw, cap, b.size))

    return b.cached(("pair_weights", weighting, clip), compute)


def _weight_sums(users: np.ndarray, rw: np.ndarray, cap: float | None, size: int) -> np.ndarray:
    """Per user, Σ min(w, cap) of its weights, added in their order from 0: one
    compiled pass (``_native.user_sums``), or np.bincount's same sums."""
    if hasattr(_native, "user_sums") and users.dtype == np.int64 and rw.dtype == np.float64:
        out = np.empty(size)
        c = np.ascontiguousarray
        _native.user_sums(c(users), c(rw), np.inf if cap is None else float(cap), out)
        return out
    rw = rw if cap is None else np.minimum(rw, cap)
    return np.bincount(users, weights=rw, minlength=size)


def _weighted_hits(b: Batch, k: int | None, weighting: str, clip: float) -> np.ndarray:
    """Σ_{i ∈ hits@k} w_i per user, once per batch, cut-off and clip (recall,
    precision and hit rate, ips and snips share it, as they share hits@k)."""
    key = None if k is None or k >= b.width else k
    w = pair_weights(b, weighting, clip)
    assert w is not None
    return b.cached(("weighted_hits", clip, key), lambda: b.hits.row_sums(w[0], k))


def _scaled(values: np.ndarray, weights: tuple[np.ndarray, np.ndarray | None] | None) -> np.ndarray:
    """``values`` times the SNIPS scale R / Σw (unchanged for ips and none)."""
    if weights is None or weights[1] is None:
        return values
    return values * weights[1]


def _min_k(k: int | None, x: np.ndarray) -> np.ndarray:
    return x if k is None else np.minimum(k, x)


def _empty_nan(b: Batch, k: int | None, values: np.ndarray, empty: str) -> np.ndarray:
    """``values``, NaN where the top k holds no item when ``empty="nan"``
    (LensKit's Precision and AveragePrecision: ``if nrecs == 0: return np.nan``)."""
    if empty == "zero":
        return values
    return np.where(b.retrieved(k) > 0, values, np.nan)


def _scored(b: Batch, scores: str) -> Batch:
    """The batch whose hits a kernel reads: every listed item (``scores="any"``)
    or only those scored > 0 (``"positive"``, torchmetrics)."""
    return b if scores == "any" else b.scored_positive()


def precision(
    b: Batch,
    k: int | None,
    *,
    denominator: str = "k",
    empty: str = "zero",
    scores: str = "any",
    weighting: str = "none",
    clip: float = 0.0,
) -> np.ndarray:
    """hits@k / k; ``denominator="retrieved"`` divides by min(k, n). Without k: hits / n.

    ``denominator="recommended"`` (explicit-feedback input): hits@k divided by
    the items of the top k whose predicted rating reaches the threshold; NaN
    when there is none. ``empty="nan"``: an empty list is NaN (left out of the
    mean) rather than 0. ``scores="positive"``: items scored <= 0 are never hits.
    ``weighting``: each hit counts its weight 1/p (:func:`pair_weights`).
    """
    b = _scored(b, scores)
    weights = pair_weights(b, weighting, clip)
    if weights is None:
        hits = b.distinct_at(k)  # hits@k, or distinct items (duplicates="count_distinct")
    else:
        hits = _scaled(_weighted_hits(b, k, weighting, clip), weights)
    if denominator == "recommended":
        if b.recommended is None:
            raise ValueError("precision[denominator=recommended] needs ratings input")
        rec = b.cached("cum_rec", lambda: cumsum_rows(b.recommended, np.int64))
        den = rec[:, b.col(k)]
        out = np.full(b.size, np.nan)
        np.divide(hits, den, out=out, where=den > 0)
        return out
    if denominator == "retrieved" or k is None:
        return _empty_nan(b, k, ratio(hits, b.retrieved(k)), empty)
    return _empty_nan(b, k, ratio(hits, k), empty)


def recall(
    b: Batch,
    k: int | None,
    *,
    denominator: str = "relevant",
    scores: str = "any",
    weighting: str = "none",
    clip: float = 0.0,
) -> np.ndarray:
    """hits@k / R: the share of the user's R relevant items found in the top k;
    ``denominator="min_k_relevant"`` divides by min(k, R) (LensKit);
    ``scores="positive"``: items scored <= 0 are never hits (R unchanged).
    ``weighting``: Σ_{hits} w_i / R (``ips``), Σ_{hits} w_i / Σ_{relevant} w_i
    (``snips``), w_i = 1/p (:func:`pair_weights`)."""
    b = _scored(b, scores)
    r = b.n_relevant if b.n_distinct is None else b.n_distinct  # count_distinct: items
    den = _min_k(k, r) if denominator == "min_k_relevant" else r
    weights = pair_weights(b, weighting, clip)
    if weights is not None:
        return _scaled(ratio(_weighted_hits(b, k, weighting, clip), den), weights)
    return ratio(b.distinct_at(k), den)


def f1(b: Batch, k: int | None, *, beta: float = 1.0) -> np.ndarray:
    """(1 + β²)·P·R / (β²·P + R) with P = precision@k, R = recall@k; 0 when both are 0."""
    p = precision(b, k)
    r = recall(b, k)
    b2 = beta * beta
    return ratio((1.0 + b2) * p * r, b2 * p + r)


def hits(b: Batch, k: int | None) -> np.ndarray:
    """hits@k: the number of relevant items among the first k positions (ranx's ``hits``)."""
    return b.hits_at(k).astype(np.float64)


def hit_rate(b: Batch, k: int | None, *, weighting: str = "none", clip: float = 0.0) -> np.ndarray:
    """1 if hits@k > 0 else 0. ``weighting``: the mean weight of the hits
    within k, Σ_{hits} w_i / hits@k (0 without a hit): w_i 1[rank_i <= k]
    for a single relevant item (leave-one-out), 1 when every p is 1."""
    weights = pair_weights(b, weighting, clip)
    if weights is not None:
        return _scaled(ratio(_weighted_hits(b, k, weighting, clip), b.hits_at(k)), weights)
    return (b.hits_at(k) > 0).astype(np.float64)


def _ap_numerator(b: Batch, k: int | None, w: np.ndarray | None = None) -> np.ndarray:
    """Σ_{i ≤ min(k, n)} rel_i · hits@i / i per user (each term times w_i when weighted)."""
    if b.pairs is not None:  # duplicates="join"/"left_join" (weighting refuses them)
        return b.pairs.row_sums(b.cached("ap_pair_terms", lambda: _ap_pair_terms(b)), k)
    # rel_i · hits@i / i at each relevant cell
    terms = b.cached("ap_terms", lambda: b.hit_rank() / (b.hits.pos + 1))
    return b.hits.row_sums(terms if w is None else terms * w, k)


def _ap_pair_terms(b: Batch) -> np.ndarray:
    """The AP terms at each relevant position when its m (list row, truth
    row) pairs are hits (``Batch.pairs``), C the pairs up to it: C / i once
    per position (RecTools' ``MAP``: its sparse matrix adds a position's pairs
    into one cell), or with ``each_pair`` Σ_{c=1..m} (C − m + c) / i, one term
    per pair (Microsoft Recommenders' ``map_at_k``: ``cumcount() + 1`` over
    the joined rows divided by their rank)."""
    c = b.pairs
    assert c is not None
    running = np.cumsum(c.value)
    starts = np.concatenate(([0.0], running))[c.offsets[:-1]]
    upto = running - starts[c.user]  # C: the user's pairs up to this position
    at = c.pos + 1.0
    if not b.each_pair:
        return upto / at
    m = c.value
    return (m * (upto - m) + m * (m + 1.0) / 2.0) / at


def average_precision(
    b: Batch,
    k: int | None,
    *,
    denominator: str = "min_k_relevant",
    empty: str = "zero",
    scores: str = "any",
    weighting: str = "none",
    clip: float = 0.0,
) -> np.ndarray:
    """Σ_{i ≤ min(k, n)} rel_i · precision@i / D; 0 when D = 0.

    D: ``min_k_relevant`` min(k, R) (R without k), ``relevant`` R,
    ``hits`` hits@k, ``retrieved`` min(k, n) (n without k), ``k`` k (n
    without k), ``min_retrieved_relevant`` min(k, n, R) (LensKit).
    ``empty="nan"``: an empty list is NaN (left out of the mean) rather than 0;
    ``scores="positive"``: items scored <= 0 are never hits.
    ``weighting``: each relevant item's term rel_i · precision@i times its w_i
    (precision@i itself unweighted; D unchanged; :func:`pair_weights`).
    """
    b = _scored(b, scores)
    weights = pair_weights(b, weighting, clip)
    num = _ap_numerator(b, k, None if weights is None else weights[0])
    if denominator == "min_k_relevant":
        den = _min_k(k, b.n_relevant)
    elif denominator == "relevant":
        den = b.n_relevant
    elif denominator == "hits":
        den = b.hits_at(k)
    elif denominator == "retrieved":
        den = b.retrieved(k)
    elif denominator == "k":
        den = b.n if k is None else np.full(b.size, k)
    elif denominator == "min_retrieved_relevant":
        den = np.minimum(b.retrieved(k), b.n_relevant)
    else:  # pragma: no cover - the registry validates choices
        raise ValueError(denominator)
    return _empty_nan(b, k, _scaled(ratio(num, den), weights), empty)


def reciprocal_rank(b: Batch, k: int | None, *, scores: str = "any") -> np.ndarray:
    """1 / (position of the first relevant item) if it is within k, else 0
    (``scores="positive"``: the first relevant item scored > 0)."""
    b = _scored(b, scores)
    pos = b.first_hit()
    ok = pos > 0 if k is None else (pos > 0) & (pos <= k)
    return ratio(ok.astype(np.float64), pos)


def r_precision(b: Batch, k: int | None, *, mult: float = 1.0) -> np.ndarray:
    """hits@s / s with s = ⌊mult·R + 0.9⌋ (s = R for mult = 1; min(k, s) with a
    cut-off): precision at R, or at a multiple of R rounded as trec_eval's
    Rprec_mult does (m_Rprec_mult.c)."""
    s = b.n_relevant if mult == 1.0 else np.floor(mult * b.n_relevant + 0.9).astype(np.int64)
    s = _min_k(k, s)
    return ratio(b.hits_at_each(s), s)


def gain_of(grades: np.ndarray, gain: str) -> np.ndarray:
    """The gain of each grade: g (``linear``), 2^g − 1 (``exp``) or 1 if g > 0 (``binary``)."""
    if gain == "exp":
        return np.exp2(grades) - 1.0
    if gain == "binary":
        return (grades > 0).astype(np.float64)
    return grades


_gain = gain_of


def graded_cells(b: Batch, grades: str) -> tuple[Cells, Cells]:
    """The (list, ideal) cells: relevant grades only, or every grade > 0."""
    if grades == "positive":
        assert b.positive_hits is not None and b.positive_ideal_cells is not None
        return b.positive_hits, b.positive_ideal_cells
    return b.hits, b.ideal_cells


def _discount(b: Batch, width: int, base: float, discount: str = "log") -> np.ndarray:
    """1 / log_base(i + 1) for i = 1..width; ``jarvelin``: 1 / max(1, log_base(i))."""

    def compute() -> np.ndarray:
        if discount == "jarvelin":
            logs = np.log(np.arange(1, width + 1, dtype=np.float64)) / np.log(base)
            return 1.0 / np.maximum(logs, 1.0)
        return np.log(base) / np.log(np.arange(2, width + 2, dtype=np.float64))

    return b.cached(("discount", width, base, discount), compute)


def _discounted(b: Batch, cells: Cells, gain: str, base: float, discount: str) -> np.ndarray:
    """gain(g_i) / log_base(i + 1) at each cell."""
    weights = _discount(b, cells.width, base, discount)
    return _gain(cells.value, gain) * weights[cells.pos]


def dcg(
    b: Batch,
    k: int | None,
    *,
    gain: str = "linear",
    base: float = 2.0,
    grades: str = "relevant",
    discount: str = "log",
    tied: str = "order",
    weighting: str = "none",
    clip: float = 0.0,
) -> np.ndarray:
    """Σ_{i ≤ min(k, n)} gain(g_i) / log_base(i + 1); gain linear g, exp 2^g − 1 or
    binary 1; g_i the grade of a relevant item (``grades=positive``: of any item
    graded > 0, whatever the threshold). ``discount="jarvelin"``: 1 / max(1,
    log_base(i)), ranks 1 and 2 undiscounted (Järvelin & Kekäläinen; LensKit).
    ``tied="average"``: each item gains the mean gain of its group of equal
    scores (over the whole list), so a group straddling k counts the share of
    its gains its positions within k hold (sklearn's ``_tie_average_dcg``).
    ``weighting``: each relevant item's term times its w_i (:func:`pair_weights`)."""
    weights = None if weighting == "none" else pair_weights(b, weighting, clip)
    if tied == "average":
        if b.tied_gains is None or (gain, grades) not in b.tied_gains:
            raise ValueError("tied=average needs the engine's tied_gains")
        avg = b.tied_gains[(gain, grades)]
        weights = _discount(b, avg.width, base, discount)
        return b.cached(
            ("dcg_tied", gain, base, grades, discount, k),
            lambda: avg.row_sums(avg.value * weights[avg.pos], k),
        )
    cells = graded_cells(b, grades)[0]
    pairs = b.pairs if cells is b.hits else None  # a relevant position gains once per pair

    def discounted() -> np.ndarray:
        out = _discounted(b, cells, gain, base, discount)
        return out if pairs is None else out * pairs.value

    terms = b.cached(("dcg_terms", gain, base, grades, discount), discounted)
    if weights is not None:
        w = weights
        return b.cached(
            ("dcg", gain, base, grades, discount, k, weighting, clip),
            lambda: _scaled(cells.row_sums(terms * w[0], k), w),
        )
    return b.cached(("dcg", gain, base, grades, discount, k), lambda: cells.row_sums(terms, k))


def _rejoined_ndcg(
    b: Batch, k: int | None, gain: str, ideal: str, discount: str, plain: np.ndarray
) -> np.ndarray:
    """nDCG with every position's pairs joined once more with the list's
    and the truth's rows of its item (``Batch.rejoined``: Microsoft
    Recommenders' ``ndcg_at_k`` merges its hits with the predictions and then
    with the truth): DCG Σ rejoined_i / log(i + 1); the ideal: the joined rows,
    R + Σ rejoin_extra over the top k of them, cut at k. Every row gains the
    same: 1 (binary), or gain(g) where all of a user's relevant grades are g.
    Users without a repeated row keep ``plain``, the nDCG of their rows."""
    rejoined, extra = b.rejoined, b.rejoin_extra
    assert rejoined is not None
    repeated = np.zeros(b.size, dtype=bool)
    repeated[rejoined.user[rejoined.value != 1.0]] = True
    if extra is not None:
        repeated[extra.user] = True
    if not repeated.any():
        return plain
    cells = b.ideal_cells
    has = np.diff(cells.offsets) > 0
    top = cells.first()
    low = np.zeros(b.size)
    low[has] = cells.value[cells.offsets[1:][has] - 1]  # each user's grades descend
    mixed = repeated & (top != low)
    if ideal != "relevant" or (gain != "binary" and mixed.any()):
        raise ValueError(
            "repeated rows joined twice (duplicates='join') are read by ndcg with ideal="
            "relevant and gain=binary (or all of a user's relevant grades equal), not "
            f"gain={gain}, ideal={ideal} on these grades: give another duplicates value"
        )
    weights = _discount(b, rejoined.width, 2.0, discount)
    scale = np.ones(b.size) if gain == "binary" else _gain(top, gain)
    dcg = rejoined.row_sums(rejoined.value * weights[rejoined.pos], k) * scale
    rows = b.n_relevant.astype(np.float64)
    if extra is not None:
        rows = rows + extra.row_sums(extra.value, k)
    span = np.rint(rows).astype(np.int64)
    span = span if k is None else np.minimum(span, k)
    whole = _discount(b, int(span.max(initial=0)), 2.0, discount)
    best = np.concatenate(([0.0], np.cumsum(whole)))[span] * scale
    return np.where(repeated, ratio(dcg, best), plain)


def _ideal_dcg(b: Batch, k: int | None, gain: str, grades: str, discount: str) -> np.ndarray:
    cells = graded_cells(b, grades)[1]
    terms = b.cached(
        ("idcg_terms", gain, grades, discount),
        lambda: _discounted(b, cells, gain, 2.0, discount),
    )
    return cells.row_sums(terms, k)


def ndcg(
    b: Batch,
    k: int | None,
    *,
    gain: str = "linear",
    ideal: str = "relevant",
    grades: str = "relevant",
    discount: str = "log",
    tied: str = "order",
    zero_ideal: str = "zero",
    weighting: str = "none",
    clip: float = 0.0,
) -> np.ndarray:
    """dcg@k / idcg@k; 0 when idcg@k = 0.

    ``ideal="relevant"``: the ideal list is the user's relevant grades sorted
    descending, cut at k. ``ideal="retrieved"``: the first min(k, n) gains of
    the list itself, re-sorted descending. ``ideal="k"``: k items at the user's
    top grade whatever R (n without k; RecTools' default, binary). The log
    base cancels out (base 2).
    ``grades="positive"``: gains and ideal take every grade > 0, whatever the
    relevance threshold (trec_eval's nDCG under ``-l``).
    ``tied="average"``: equal scores share their gains (:func:`dcg`); the
    ideal is unchanged (torchmetrics' nDCG).
    ``zero_ideal="divide"``: a user with relevant items whose idcg@k is
    exactly 0 (gains of 0 or below: grades read as gains) gets dcg@k / 0 as
    IEEE arithmetic gives it, NaN for 0/0 and ±inf otherwise (LensKit 2025.8's
    ``NDCG(gain=...)``, which divides by its ideal unguarded).
    ``weighting``: the DCG's terms weighted (:func:`dcg`), the ideal unchanged.
    """
    rejoin = b.rejoined is not None and grades == "relevant" and tied == "order"
    actual = dcg(
        b, k, gain=gain, grades=grades, discount=discount, tied=tied, weighting=weighting, clip=clip
    )
    if ideal == "relevant":
        best = _ideal_dcg(b, k, gain, grades, discount)
    elif ideal == "k":  # k items at the user's top grade, whatever R (n without k)
        span = b.n if k is None else np.full(b.size, k)
        whole = _discount(b, int(span.max(initial=0)), 2.0, discount)
        top = _gain(graded_cells(b, grades)[1].first(), gain)
        best = np.concatenate(([0.0], np.cumsum(whole)))[span] * top
    else:
        best = _retrieved_ideal_dcg(b, k, gain, grades, discount)
    out = ratio(actual, best)
    if zero_ideal == "divide":
        zero = (best == 0) & (b.n_relevant > 0)
        if zero.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                out[zero] = actual[zero] / best[zero]
    if rejoin:  # duplicates="join": a repeated item's rows joined twice (Recommenders)
        return _rejoined_ndcg(b, k, gain, ideal, discount, out)
    return out


def _retrieved_ideal_dcg(
    b: Batch, k: int | None, gain: str, grades: str, discount: str
) -> np.ndarray:
    """DCG of the top-k list's own gains re-sorted descending: the list's
    relevant cells within k, sorted by grade per user, at positions 1, 2, ...

    Summed per user in position order (``np.bincount`` adds its weights one by
    one in input order), so a user's value never depends on the other users of
    its block: a dense row sum over the re-sorted gains did (NumPy's pairwise
    sum of a single-row block adds in another order than a loop over columns).
    """
    cells = graded_cells(b, grades)[0]
    sel = cells.upto(k)
    user, value = (cells.user, cells.value) if sel is None else (sel[0], cells.value[sel[1]])
    order = np.lexsort((-value, user))
    user, value = user[order], value[order]
    rank = np.arange(len(user)) - np.searchsorted(user, user, side="left")
    terms = _gain(value, gain) * _discount(b, cells.width, 2.0, discount)[rank]
    return np.bincount(user, weights=terms, minlength=b.size)


def rbp(b: Batch, k: int | None, *, p: float = 0.8, grades: str = "relevant") -> np.ndarray:
    """(1 − p) Σ_{i ≤ min(k, n)} (g_i / g_max,u) · p^(i − 1), g_max,u the user's
    top grade (``grades=positive``: every grade > 0 gains, whatever the threshold)."""
    hits, ideal = graded_cells(b, grades)

    def compute() -> np.ndarray:
        # trec_eval's m_rbp.c, operation for operation (so its text agrees to the
        # last digit): each gain scaled to [0, 1] first, the weight p^(i-1) by
        # repeated multiplication, the terms added left to right
        steps = np.full(b.width, p, dtype=np.float64)
        steps[:1] = 1.0
        weights = np.cumprod(steps)  # 1, 1·p, (1·p)·p, ...: trec_eval's cur_p
        gains = b.gains if grades == "relevant" else hits.dense()
        return cumsum_rows(ratio(gains, ideal.first()[:, None]) * weights)

    cum = b.cached(("cum_rbp", p, grades), compute)
    return (1.0 - p) * cum[:, b.col(k)]


def err(b: Batch, k: int | None, *, max_grade: float | None = None) -> np.ndarray:
    """Σ_{r ≤ min(k, n)} (1/r) · R_r · Π_{i<r} (1 − R_i), R_i = (2^g_i − 1) / 2^g_max.

    g_max is ``max_grade`` (default: the largest grade in the whole truth).
    """
    gmax = b.max_grade if max_grade is None else float(max_grade)

    def compute() -> np.ndarray:
        stop = (np.exp2(b.gains) - 1.0) / np.exp2(gmax)
        reach = np.cumprod(1.0 - stop, axis=1)
        before = np.ones_like(reach)
        before[:, 1:] = reach[:, :-1]
        return cumsum_rows(stop * before / b.positions())

    return b.cached(("cum_err", gmax), compute)[:, b.col(k)]


def auc(b: Batch, k: int | None) -> np.ndarray:
    """Share of (relevant, non-relevant) pairs among the top-min(k, n) items
    ranked correctly; pairs tied in score count ½. NaN without both kinds.

    Computed as a Mann–Whitney U with mid-ranks for ties: with c = min(k, n)
    candidates, P relevant and N = c − P non-relevant,
    AUC = (Σ_rel (c + 1 − mid_i) − P(P + 1)/2) / (P·N), where mid_i is the mean
    position of the tie group of position i (cut at c).
    """
    c = b.retrieved(k)
    cols = b.col(k) + 1
    pos = b.positions()[:cols]
    filled = b.filled()
    if filled is not None:  # empty positions are no candidates: rank among the items
        pos = cumsum_rows(np.asfortranarray(filled[:, :cols]), np.int64).astype(np.float64)
        inside = filled[:, :cols]
    else:
        inside = pos[None, :] <= c[:, None]
    rel = b.relevant()[:, :cols] & inside
    n_pos = rel.sum(axis=1)
    n_neg = c - n_pos
    if b.tie_start is None or b.tie_end is None:
        mid = np.broadcast_to(pos, rel.shape)  # no ties: rank input
    else:
        start = b.tie_start[:, :cols]
        end = np.minimum(b.tie_end[:, :cols], c[:, None])
        mid = (start + end) / 2.0
    asc_rank = np.where(rel, (c + 1)[:, None] - mid, 0.0).sum(axis=1)
    u = asc_rank - n_pos * (n_pos + 1) / 2.0
    pairs = (n_pos * n_neg).astype(np.float64)
    out = np.full(b.size, np.nan)
    np.divide(u, pairs, out=out, where=pairs > 0)
    return out
