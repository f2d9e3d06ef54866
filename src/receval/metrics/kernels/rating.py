"""Rating-prediction kernels (SPEC §5): errors and correlations of (actual, predicted) pairs.

Two forms of each metric:

* ``kernel(actual, predicted) -> float`` over all pairs (the default,
  ``per_user=false``);
* ``kernel_by_user(actual, predicted, users, n_users=None) -> ndarray``: one value
  per user code ``0 .. n_users-1`` (NaN for codes without pairs), computed for
  every user at once from sums over groups (``np.add.reduceat`` on the pairs
  sorted by user) — no Python loop per user, except for Kendall's tau of users
  with more than :data:`KENDALL_PAIRWISE_MAX` pairs, which calls
  :func:`scipy.stats.kendalltau` once per such user (smaller users are counted
  together over all their within-user pairs).

Kernels assume finite values (the callers check them). Conventions:

* ``r2 = 1 − SS_res / SS_tot``; NaN when SS_tot = 0 (all actual values equal,
  which includes a single pair).
* ``pearson`` is NaN when either side is constant (or there are fewer than 2
  pairs); ``spearman`` is Pearson's r of the average ranks (ties share the mean
  of their positions); ``kendall`` is tau-b (ties in either side handled), NaN
  when either side is constant.
* an empty input gives NaN.

The metrics are declared in :mod:`receval.metrics.registry` (``kind="rating"``).
"""

from __future__ import annotations

import math

import numpy as np

from receval.exact import ExactSum

__all__ = [
    "kendall",
    "kendall_by_user",
    "mae",
    "mae_by_user",
    "mae_from_means",
    "mse",
    "mse_by_user",
    "mse_from_means",
    "pearson",
    "pearson_by_user",
    "r2",
    "r2_by_user",
    "rmse",
    "rmse_by_user",
    "rmse_from_means",
    "spearman",
    "spearman_by_user",
]


def _pair(actual: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(actual, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if a.shape != p.shape or a.ndim != 1:
        raise ValueError(f"actual {a.shape} and predicted {p.shape} must be 1-d of one length")
    return a, p


# --------------------------------------------------------------------------- groups


class _Groups:
    """Pairs sorted by user code, with the start and size of each present user."""

    def __init__(self, users: np.ndarray, n_users: int | None) -> None:
        codes = np.asarray(users)
        if codes.dtype.kind not in "iu":
            raise ValueError("users must be integer codes 0 .. n_users-1")
        codes = codes.astype(np.int64, copy=False)
        if len(codes) and codes.min() < 0:
            raise ValueError("users must be integer codes >= 0")
        size = int(codes.max()) + 1 if len(codes) else 0
        self.n_users = size if n_users is None else int(n_users)
        if size > self.n_users:
            raise ValueError(f"user code {size - 1} >= n_users ({self.n_users})")
        self.order = np.argsort(codes, kind="stable")
        self.codes = codes[self.order]
        counts = np.bincount(codes, minlength=self.n_users)
        self.present = np.flatnonzero(counts)
        self.sizes = counts[self.present]
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1])).astype(np.int64)
        # index of each sorted pair's group among the present users
        self.group = np.repeat(np.arange(len(self.present)), self.sizes)

    def sort(self, x: np.ndarray) -> np.ndarray:
        return x[self.order]

    def sum(self, x_sorted: np.ndarray) -> np.ndarray:
        if not len(x_sorted):
            return np.zeros(0)
        return np.add.reduceat(x_sorted, self.starts)

    def mean(self, x_sorted: np.ndarray) -> np.ndarray:
        return self.sum(x_sorted) / self.sizes

    def constant(self, x_sorted: np.ndarray) -> np.ndarray:
        if not len(x_sorted):
            return np.zeros(0, dtype=bool)
        return np.maximum.reduceat(x_sorted, self.starts) == np.minimum.reduceat(
            x_sorted, self.starts
        )

    def centered(self, x_sorted: np.ndarray) -> np.ndarray:
        return x_sorted - self.mean(x_sorted)[self.group]

    def scatter(self, values: np.ndarray) -> np.ndarray:
        out = np.full(self.n_users, math.nan)
        out[self.present] = values
        return out

    def ranks(self, x_sorted: np.ndarray) -> np.ndarray:
        """Average ranks (1-based) of the sorted pairs' values within each user."""
        n = len(x_sorted)
        if not n:
            return np.zeros(0)
        order = np.lexsort((x_sorted, self.codes))  # by user, then value
        xs, gs = x_sorted[order], self.group[order]
        new_run = np.ones(n, dtype=bool)
        new_run[1:] = (xs[1:] != xs[:-1]) | (gs[1:] != gs[:-1])
        run_start = np.flatnonzero(new_run)
        run_end = np.append(run_start[1:], n) - 1
        run = np.cumsum(new_run) - 1
        within = (run_start + run_end) / 2.0 - self.starts[gs[run_start]]  # 0-based mean
        out = np.empty(n)
        out[order] = within[run] + 1.0
        return out


def _pearson_sorted(g: _Groups, a: np.ndarray, p: np.ndarray) -> np.ndarray:
    da, dp = g.centered(a), g.centered(p)
    sab, saa, spp = g.sum(da * dp), g.sum(da * da), g.sum(dp * dp)
    undefined = g.constant(a) | g.constant(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sab / np.sqrt(saa * spp)
    r = np.clip(r, -1.0, 1.0)
    r[undefined] = math.nan
    return r


# --------------------------------------------------------------------------- global


def mae(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Mean absolute error: ``Σ |a_i − p_i| / n`` (NaN for no pairs); the sum
    is exact and rounded once (:class:`receval.exact.ExactSum`), so it does
    not depend on the order or partitioning of the pairs.

    Example:
        >>> mae(np.array([3.5, 4, 2, 5, 3]), np.array([3, 4.5, 1.5, 4.5, 2.5]))
        0.5
    """
    a, p = _pair(actual, predicted)
    return ExactSum.of(np.abs(a - p)).mean()


def mse(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Mean squared error: ``Σ (a_i − p_i)² / n`` (NaN for no pairs); exact
    sum, rounded once, as :func:`mae`.

    Example:
        >>> mse(np.array([1.0, 2.0]), np.array([2.0, 4.0]))
        2.5
    """
    a, p = _pair(actual, predicted)
    return ExactSum.of((a - p) ** 2).mean()


def rmse(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Root mean squared error: ``sqrt(Σ (a_i − p_i)² / n)`` (NaN for no pairs).

    Example:
        >>> rmse(np.array([3.5, 4, 2, 5, 3]), np.array([3, 4.5, 1.5, 4.5, 2.5]))
        0.5
    """
    return math.sqrt(mse(actual, predicted))


def mae_from_means(mean_abs: float, mean_sq: float) -> float:
    """MAE from the exact means of ``|a − p|`` and ``(a − p)²`` over all pairs,
    the sums an engine of parts adds up (Spark): the first. Bit for bit
    :func:`mae` of the same pairs.

    Example:
        >>> mae_from_means(0.5, 0.25)
        0.5
    """
    return mean_abs


def mse_from_means(mean_abs: float, mean_sq: float) -> float:
    """MSE from the exact means of ``|a − p|`` and ``(a − p)²``: the second
    (bit for bit :func:`mse`).

    Example:
        >>> mse_from_means(0.5, 0.25)
        0.25
    """
    return mean_sq


def rmse_from_means(mean_abs: float, mean_sq: float) -> float:
    """RMSE from the exact means of ``|a − p|`` and ``(a − p)²``:
    ``sqrt(mean_sq)`` (bit for bit :func:`rmse`).

    Example:
        >>> rmse_from_means(0.5, 0.25)
        0.5
    """
    return math.sqrt(mean_sq)


def r2(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Coefficient of determination: ``1 − SS_res / SS_tot`` with
    ``SS_res = Σ (a_i − p_i)²`` and ``SS_tot = Σ (a_i − mean(a))²``; NaN when
    SS_tot = 0 (all actual values equal).

    Example:
        >>> r2(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0]))
        0.5
    """
    a, p = _pair(actual, predicted)
    if len(a) == 0 or a.max() == a.min():
        return math.nan
    ss_tot = float(np.sum((a - a.mean()) ** 2))
    return 1.0 - float(np.sum((a - p) ** 2)) / ss_tot


def pearson(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Pearson's r: ``Σ (a_i − ā)(p_i − p̄) / sqrt(Σ (a_i − ā)² · Σ (p_i − p̄)²)``;
    NaN when either side is constant (or has fewer than 2 values).

    Example:
        >>> pearson(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0]))
        1.0
    """
    a, p = _pair(actual, predicted)
    g = _Groups(np.zeros(len(a), dtype=np.int64), 1)
    return float(_pearson_sorted(g, a, p)[0]) if len(a) else math.nan


def spearman(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks,
    ``pearson(rank(a), rank(p))`` (tied values share the mean of their
    positions); NaN when either side is constant.

    Example:
        >>> spearman(np.array([1.0, 2.0, 3.0]), np.array([1.0, 10.0, 100.0]))
        1.0
    """
    a, p = _pair(actual, predicted)
    if not len(a):
        return math.nan
    g = _Groups(np.zeros(len(a), dtype=np.int64), 1)
    return float(_pearson_sorted(g, g.ranks(a), g.ranks(p))[0])


def kendall(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Kendall's tau-b: ``(C − D) / sqrt((n0 − T_a)(n0 − T_p))`` with C / D the
    concordant / discordant pairs, ``n0 = n(n − 1)/2`` and ``T_a``, ``T_p`` the
    pairs tied in actual, in predicted; NaN when either side is constant.
    Computed by :func:`scipy.stats.kendalltau` (O(n log n)).

    Example:
        >>> kendall(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0]))
        -1.0
    """
    a, p = _pair(actual, predicted)
    if len(a) < 2 or a.max() == a.min() or p.max() == p.min():
        return math.nan
    from scipy.stats import kendalltau

    return float(np.clip(kendalltau(a, p).statistic, -1.0, 1.0))


# --------------------------------------------------------------------------- per user


def mae_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """MAE of each user: ``Σ_{i∈u} |a_i − p_i| / n_u``; NaN for users without pairs.

    Example:
        >>> mae_by_user(np.array([1.0, 2, 3]), np.array([2.0, 2, 5]), np.array([0, 1, 1]))
        array([1., 1.])
    """
    a, p = _pair(actual, predicted)
    g = _Groups(users, n_users)
    return g.scatter(g.mean(g.sort(np.abs(a - p))))


def mse_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """MSE of each user: ``Σ_{i∈u} (a_i − p_i)² / n_u``; NaN for users without pairs.

    Example:
        >>> mse_by_user(np.array([1.0, 2, 3]), np.array([2.0, 2, 5]), np.array([0, 1, 1]))
        array([1., 2.])
    """
    a, p = _pair(actual, predicted)
    g = _Groups(users, n_users)
    return g.scatter(g.mean(g.sort((a - p) ** 2)))


def rmse_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """RMSE of each user: ``sqrt(Σ_{i∈u} (a_i − p_i)² / n_u)``; NaN for users without pairs.

    Example:
        >>> rmse_by_user(np.array([1.0, 2, 3]), np.array([3.0, 2, 5]), np.array([0, 1, 1]))
        array([2.        , 1.41421356])
    """
    return np.sqrt(mse_by_user(actual, predicted, users, n_users))


def r2_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """R² of each user: ``1 − SS_res,u / SS_tot,u``; NaN when the user's actual
    values are all equal (always so with fewer than 2 pairs) or it has no pairs.

    Example:
        >>> r2_by_user(np.array([1.0, 2, 3, 4]), np.array([9.0, 2, 3, 5]), np.array([0, 1, 1, 1]))
        array([nan, 0.5])
    """
    a, p = _pair(actual, predicted)
    g = _Groups(users, n_users)
    sa, sp = g.sort(a), g.sort(p)
    da = g.centered(sa)
    ss_tot, ss_res = g.sum(da * da), g.sum((sa - sp) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - ss_res / ss_tot
    out[g.constant(sa)] = math.nan
    return g.scatter(out)


def pearson_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """Pearson's r of each user (formula of :func:`pearson` within the user);
    NaN when either side is constant for the user (so with fewer than 2 pairs).

    Example:
        >>> pearson_by_user(np.array([1.0, 2, 3, 4]), np.array([1.0, 2, 2, 0]),
        ...                 np.array([0, 0, 1, 1]))
        array([ 1., -1.])
    """
    a, p = _pair(actual, predicted)
    g = _Groups(users, n_users)
    return g.scatter(_pearson_sorted(g, g.sort(a), g.sort(p)))


def spearman_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """Spearman's rho of each user: Pearson's r of the average ranks within the
    user; NaN when either side is constant for the user.

    Example:
        >>> spearman_by_user(np.array([1.0, 2, 3, 4, 5]), np.array([1.0, 8, 9, 7, 5]),
        ...                  np.array([0, 0, 1, 1, 1]))
        array([ 1., -1.])
    """
    a, p = _pair(actual, predicted)
    g = _Groups(users, n_users)
    return g.scatter(_pearson_sorted(g, g.ranks(g.sort(a)), g.ranks(g.sort(p))))


#: Users with more pairs than this get one scipy.stats.kendalltau call each; the
#: others are computed together by enumerating their pairs (n(n − 1)/2 per user).
KENDALL_PAIRWISE_MAX = 600
_PAIRS_PER_BATCH = 2_000_000


def _tau_b_pairwise(
    sa: np.ndarray, sp: np.ndarray, starts: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """Tau-b of small groups at once: every within-group pair (i < j) enumerated."""
    sizes = sizes.astype(np.int64)
    n0 = sizes * (sizes - 1) // 2
    # each element e of a group pairs with the `later` elements after it
    pos = np.repeat(starts, sizes) + _ramp(sizes)
    later = np.repeat(starts + sizes, sizes) - pos - 1
    first = np.repeat(pos, later)
    second = first + 1 + _ramp(later)
    group = np.repeat(np.repeat(np.arange(len(sizes)), sizes), later)
    da = np.sign(sa[first] - sa[second])
    dp = np.sign(sp[first] - sp[second])
    m = len(sizes)
    s = np.bincount(group, da * dp, minlength=m)  # C − D
    ties_a = np.bincount(group, da == 0, minlength=m)
    ties_p = np.bincount(group, dp == 0, minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / np.sqrt((n0 - ties_a) * (n0 - ties_p))


def _ramp(sizes: np.ndarray) -> np.ndarray:
    """0, 1, ..., size−1 for each size, concatenated."""
    total = int(sizes.sum())
    ends = np.cumsum(sizes)
    return np.arange(total) - np.repeat(ends - sizes, sizes)


def kendall_by_user(
    actual: np.ndarray, predicted: np.ndarray, users: np.ndarray, n_users: int | None = None
) -> np.ndarray:
    """Kendall's tau-b of each user (formula of :func:`kendall` within the user);
    NaN when either side is constant for the user.

    Users with up to :data:`KENDALL_PAIRWISE_MAX` pairs are computed together,
    vectorized, by counting concordant, discordant and tied pairs over every
    within-user pair (batches of a few million pairs); larger users loop in
    Python, one :func:`scipy.stats.kendalltau` call (O(n log n)) each.

    Example:
        >>> kendall_by_user(np.array([1.0, 2, 3, 4, 5]), np.array([1.0, 8, 9, 7, 5]),
        ...                 np.array([0, 0, 1, 1, 1]))
        array([ 1., -1.])
    """
    from scipy.stats import kendalltau

    a, p = _pair(actual, predicted)
    g = _Groups(users, n_users)
    sa, sp = g.sort(a), g.sort(p)
    out = np.full(len(g.present), math.nan)
    varying = ~(g.constant(sa) | g.constant(sp))
    small = np.flatnonzero(varying & (g.sizes <= KENDALL_PAIRWISE_MAX))
    pairs = g.sizes[small].astype(np.int64) * (g.sizes[small] - 1) // 2
    batch = np.cumsum(pairs) // _PAIRS_PER_BATCH
    for b in np.unique(batch):  # a few batches, not one iteration per user
        sel = small[batch == b]
        out[sel] = _tau_b_pairwise(sa, sp, g.starts[sel], g.sizes[sel])
    for j in np.flatnonzero(varying & (g.sizes > KENDALL_PAIRWISE_MAX)):
        s, e = g.starts[j], g.starts[j] + g.sizes[j]
        out[j] = kendalltau(sa[s:e], sp[s:e]).statistic
    return g.scatter(np.clip(out, -1.0, 1.0))
