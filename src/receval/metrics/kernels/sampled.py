"""Estimating full-catalog metrics from sampled ranks (Krichene & Rendle, KDD 2020).

Sampled evaluation ranks each held-out item against ``m`` sampled negatives
instead of the whole catalog of ``N`` items. The item's *sampled rank*
``r`` (1 = above every sampled negative, ``m + 1`` = below all of them)
stands in for its *full rank* ``R`` (1..N, its position among the relevant
item and the ``N − 1`` non-relevant items). Computing the metric on ``r``
("uncorrected") is biased, and by a different amount for different
recommenders, so it can reverse the order of two systems. A *correction* is
a table ``t``: the estimate of the full-catalog metric M(R) for an item whose
sampled rank is ``r`` is ``t[r]``.

Sampling model (Krichene & Rendle 2020, §3 "Sampled metrics" / the rank
distribution under sampling): the ``m`` negatives are drawn uniformly *with
replacement* from the ``N − 1`` non-relevant items; each one is ranked above
the relevant item with probability ``(R − 1)/(N − 1)``, so

    r − 1 | R  ~  Binomial(m, (R − 1)/(N − 1)),
    p(r | R) = C(m, r−1) · q^(r−1) · (1 − q)^(m−r+1),   q = (R − 1)/(N − 1).

(Sampling without replacement makes ``r − 1`` hypergeometric; for
``m ≪ N`` the two agree closely and the paper uses the binomial.)

The metrics, for one relevant item at full rank R (``k`` None: no cut-off):

    hit_rate, recall: [R ≤ k]       precision: [R ≤ k] / k
    ndcg: [R ≤ k] / log2(R + 1)     ap, rr: [R ≤ k] / R

Corrections (``correction_table(..., correction=...)``; KDD 2020, §5
"Corrected metrics"):

- ``none``: ``t[r] = M(r)``, the metric on the sampled rank (what papers
  using "100 sampled negatives" report).
- ``rank`` (rank estimation): ``(r − 1)/m`` is an unbiased estimate of
  ``(R − 1)/(N − 1)``, so ``R̂(r) = 1 + ⌊(N − 1)(r − 1)/m⌋`` estimates R and
  ``t[r] = M(R̂(r))``.
- ``bv`` (bias–variance trade-off, parameter ``gamma`` ∈ [0, 1], default
  :data:`DEFAULT_GAMMA` = 0.1): ``t`` minimises, under a uniform prior
  p(R) = 1/N,

      Σ_R p(R) [ (E[t[r] | R] − M(R))² + γ · Var[t[r] | R] ],

  whose normal equations are ``((1 − γ) AᵀA + γ diag(c)) t = Aᵀb`` with
  ``A[R, r] = √p(R) · p(r | R)``, ``b[R] = √p(R) · M(R)`` and
  ``c[r] = Σ_R p(R) p(r | R)``. γ = 1 gives the posterior mean
  ``t[r] = E[M(R) | r]``; γ → 0 the minimal-bias estimator.
- ``min_bias`` (minimal bias): γ = 0, ``t = argmin Σ_R p(R)(E[t[r] | R] − M(R))²``,
  the least-squares solution ``(AᵀA)⁺ Aᵀb`` (minimum norm). ``AᵀA`` is a
  Gram matrix of Bernstein polynomials: its condition number grows
  exponentially with ``m``, so for ``m`` beyond ~20 the problem is
  numerically ill-posed and this table oscillates wildly (the paper's
  Fig. 4 shows the same); prefer ``bv``.

Every ``bv`` table (any γ, ``min_bias`` included when ``AᵀA`` is
well-conditioned) is unbiased *on average over a uniform R*:
``Σ_R p(R) E[t[r] | R] = Σ_R p(R) M(R)`` — summing the normal equations,
since ``AᵀA·1 = diag(c)·1 = c``.

How the tables are computed: ``p(r | R)`` is a polynomial of degree ``m`` in
R, so ``AᵀA`` and ``c`` (sums over R = 1..N of polynomials of degree ≤ 2m)
are computed *exactly* with an (m + 1)-point Gauss rule for the discrete
uniform measure on {0, …, N − 1} (discrete Chebyshev / Gram polynomials,
Golub–Welsch), as is ``Aᵀb`` for the metrics constant on R ≤ k (hit rate,
recall, precision). For ndcg, ap and rr, ``Aᵀb`` is summed term by term over
the first m + 64 ranks and, beyond, over intervals [a, 2a) on which M is
analytic with a Gauss rule of ⌊m/2⌋ + 32 nodes: equal to the direct sum to
rounding (see :func:`_weighted_sum`). Nothing is ever of size N: memory is
O(m²) and a table for N = 10⁶, m = 100 takes milliseconds.

Several relevant items: the kernels compute each relevant item's sampled
rank (1 + the non-relevant list items above it, other relevant items not
counted) and give the user the mean of ``t[r]`` over its relevant items, an
estimate of the mean of M over its relevant items, each ranked as if it were
the only relevant one. With one held-out item per user (leave-one-out, the
paper's protocol) this is exactly the paper's estimator.

Example:
    >>> t = correction_table("recall", 10, 10_000, 100, "rank")
    >>> t[1:4].tolist()  # r = 1 -> R̂ = 1; r = 2 -> R̂ = 100 > 10
    [1.0, 0.0, 0.0]
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

# SciPy is imported where a table is made, not with the registry: it would add
# ~0.2 s to every evaluation's start (benchmarks/README.md, cold start)

__all__ = [
    "CORRECTIONS",
    "DEFAULT_GAMMA",
    "METRICS",
    "correction_table",
    "expected_estimate",
    "metric_at_rank",
    "sampled_rank_pmf",
]

#: the metrics a table can be made for (one relevant item at full rank R)
METRICS: tuple[str, ...] = ("hit_rate", "recall", "precision", "ndcg", "ap", "rr")
#: the corrections: the metric on the sampled rank, rank estimation, the
#: bias–variance trade-off, minimal bias (= ``bv`` with γ = 0)
CORRECTIONS: tuple[str, ...] = ("none", "rank", "bv", "min_bias")
#: γ of ``bv``: the value the paper found best in its experiments (BV 0.1)
DEFAULT_GAMMA = 0.1

_FLAT = ("hit_rate", "recall", "precision")  # M constant on R <= k


# --------------------------------------------------------------------------- model


def metric_at_rank(metric: str, k: int | None, ranks: np.ndarray) -> np.ndarray:
    """M(R) for one relevant item at each full rank in ``ranks`` (≥ 1).

    hit_rate, recall: [R ≤ k]; precision: [R ≤ k]/k; ndcg: [R ≤ k]/log2(R + 1);
    ap, rr: [R ≤ k]/R (KDD 2020, §2: the metrics for one relevant item).

    >>> metric_at_rank("ndcg", 3, np.array([1, 3, 4])).tolist()
    [1.0, 0.5, 0.0]
    """
    _check_metric(metric, k)
    r = np.asarray(ranks, dtype=np.float64)
    inside = np.ones(r.shape, dtype=bool) if k is None else r <= k
    if metric in ("hit_rate", "recall"):
        value = np.ones_like(r)
    elif metric == "precision":
        value = np.full_like(r, 1.0 / k)  # type: ignore[operator]
    elif metric == "ndcg":
        value = 1.0 / np.log2(r + 1.0)
    else:  # ap, rr
        value = 1.0 / r
    return np.where(inside, value, 0.0)


def sampled_rank_pmf(ranks: np.ndarray, catalog_size: int, negatives: int) -> np.ndarray:
    """p(r | R): one row per full rank R in ``ranks``, columns r = 1..m+1.

    ``r − 1 ~ Binomial(m, (R − 1)/(N − 1))`` (KDD 2020, §3: m negatives drawn
    uniformly with replacement among the N − 1 non-relevant items).

    >>> sampled_rank_pmf(np.array([1, 3]), 3, 2).round(3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    _check_sizes(catalog_size, negatives)
    q = (np.asarray(ranks, dtype=np.float64) - 1.0) / (catalog_size - 1)
    return _pmf(q, negatives)


def _pmf(q: np.ndarray, m: int) -> np.ndarray:
    x = np.arange(m + 1, dtype=np.float64)
    from scipy.special import gammaln, xlog1py, xlogy

    log_c = gammaln(m + 1.0) - gammaln(x + 1.0) - gammaln(m - x + 1.0)
    q = q[:, None]
    return np.exp(log_c + xlogy(x, q) + xlog1py(m - x, -q))


def expected_estimate(
    table: np.ndarray, ranks: np.ndarray, catalog_size: int, negatives: int
) -> np.ndarray:
    """E[t[r] | R] = Σ_r p(r | R) t[r] for each full rank R in ``ranks``.

    >>> t = correction_table("recall", 1, 3, 2, "none")
    >>> expected_estimate(t, np.array([1, 2, 3]), 3, 2).tolist()
    [1.0, 0.25, 0.0]
    """
    return sampled_rank_pmf(ranks, catalog_size, negatives) @ np.asarray(table)[1:]


# --------------------------------------------------------------------------- tables


def correction_table(
    metric: str,
    k: int | None,
    catalog_size: int,
    negatives: int,
    correction: str,
    gamma: float = DEFAULT_GAMMA,
) -> np.ndarray:
    """The estimates ``t[r]`` of the full-catalog metric for each sampled rank r.

    Args:
        metric: one of :data:`METRICS`.
        k: the cut-off, or None (no cut-off).
        catalog_size: N, how many items a full ranking would rank (≥ 2).
        negatives: m, the sampled negatives each relevant item is ranked
            against (1 ≤ m < N).
        correction: ``none``, ``rank``, ``bv`` or ``min_bias`` (module
            docstring: definitions and sources).
        gamma: γ of ``bv`` in [0, 1] (ignored by the others).

    Returns:
        float64 array of shape ``(m + 2,)``: ``t[r]`` for r = 1..m+1 (1 =
        ranked above every sampled negative); ``t[0]`` is NaN.

    Formulas (KDD 2020, §5): ``none`` t[r] = M(r); ``rank`` t[r] =
    M(1 + ⌊(N − 1)(r − 1)/m⌋); ``bv`` t = ((1 − γ)AᵀA + γ diag(c))⁻¹ Aᵀb;
    ``min_bias`` t = (AᵀA)⁺Aᵀb.

    Example:
        >>> t = correction_table("recall", 10, 1_000_000, 100, "bv")
        >>> t.shape, bool(np.isnan(t[0]))
        ((102,), True)
        >>> bool(t[1] < 0.01)  # one sampled rank of 1 stands for R ≤ 10⁴ or so
        True
    """
    _check_metric(metric, k)
    _check_sizes(catalog_size, negatives)
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {correction!r}")
    if correction == "bv":
        g = float(gamma)
        if not (math.isfinite(g) and 0.0 <= g <= 1.0):
            raise ValueError(f"gamma must be a number in [0, 1]; got {gamma!r}")
    else:
        g = 0.0
    # a cut-off at or beyond the catalog cuts nothing (precision keeps its 1/k)
    k_eff = None if k is None or (k >= catalog_size and metric != "precision") else int(k)
    key = (metric, k_eff, int(catalog_size), int(negatives))
    return _table(*key, correction, g).copy()


@lru_cache(maxsize=64)
def _table(metric: str, k: int | None, n: int, m: int, correction: str, gamma: float) -> np.ndarray:
    out = np.full(m + 2, np.nan)
    r = np.arange(1, m + 2, dtype=np.float64)
    if correction == "none":
        out[1:] = metric_at_rank(metric, k, r)
    elif correction == "rank":
        est = 1.0 + np.floor((n - 1) * (r - 1.0) / m)
        out[1:] = metric_at_rank(metric, k, est)
    else:
        from scipy.linalg import lstsq, solve

        gram, c = _gram(n, m)
        atb = _atb(metric, k, n, m, c)
        if correction == "min_bias" or gamma == 0.0:
            out[1:] = lstsq(gram, atb, cond=None)[0]
        else:
            lhs = (1.0 - gamma) * gram
            lhs[np.diag_indices(m + 1)] += gamma * c
            out[1:] = solve(lhs, atb, assume_a="pos")
    out.flags.writeable = False
    return out


def _gauss(length: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss rule for the uniform measure on {0, …, length − 1}: nodes t and
    weights w (Σ w = length) with Σ_j f(j) = Σ_i w_i f(t_i) for every
    polynomial f of degree ≤ 2·nodes − 1 (nodes ≤ length).

    Golub–Welsch on the Jacobi matrix of the monic discrete Chebyshev (Gram)
    polynomials: α_k = (L − 1)/2, β_k = k²(L² − k²)/(4(4k² − 1)) (Gautschi,
    *Orthogonal Polynomials: Computation and Approximation*, 2004, §1.5.2).
    """
    from scipy.linalg import eigh_tridiagonal

    k = np.arange(1, nodes, dtype=np.float64)
    beta = k * k * (float(length) ** 2 - k * k) / (4.0 * (4.0 * k * k - 1.0))
    d = np.full(nodes, (length - 1) / 2.0)
    t, v = eigh_tridiagonal(d, np.sqrt(beta), lapack_driver="stemr")
    return t, length * v[0] ** 2


def _poly_sum(lo: int, hi: int, n: int, m: int, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (as q = (R − 1)/(N − 1)) and weights summing exactly, over the
    integer ranks R = lo..hi, any polynomial in R of degree ≤ ``degree``."""
    length = hi - lo + 1
    nodes = degree // 2 + 1
    if length <= nodes:
        ranks = np.arange(lo, hi + 1, dtype=np.float64)
        return (ranks - 1.0) / (n - 1), np.ones(length)
    t, w = _gauss(length, nodes)
    return (t + (lo - 1)) / (n - 1), w


@lru_cache(maxsize=16)
def _gram(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """AᵀA = Σ_R p(R) p(·|R) p(·|R)ᵀ and c = Σ_R p(R) p(·|R), p(R) = 1/N, exactly."""
    q, w = _poly_sum(1, n, n, m, 2 * m)
    b = _pmf(q, m)
    weighted = b * (w / n)[:, None]
    gram = weighted.T @ b
    gram = (gram + gram.T) / 2.0
    c = weighted.sum(axis=0)
    return gram, c


def _atb(metric: str, k: int | None, n: int, m: int, c: np.ndarray) -> np.ndarray:
    """Aᵀb = Σ_R p(R) M(R) p(·|R)."""
    top = n if k is None else min(k, n)
    if metric in _FLAT:
        scale = 1.0 / k if metric == "precision" and k is not None else 1.0
        if top == n:
            return scale * c
        q, w = _poly_sum(1, top, n, m, m)
        return scale * (w / n) @ _pmf(q, m)
    return _weighted_sum(metric, k, n, m, top)


def _weighted_sum(metric: str, k: int | None, n: int, m: int, top: int) -> np.ndarray:
    """Σ_{R=1}^{top} M(R)/N · p(·|R) for ndcg, ap and rr (M not a polynomial).

    The first ranks (R ≤ H = m + 64) are summed term by term. Beyond H, M is
    analytic on each interval [a, 2a) (its singularity is at R = 0): there the
    sum of M(R)·p(·|R) over the interval's integers is taken with the discrete
    Gauss rule of ⌊m/2⌋ + 32 nodes, exact for polynomials of degree m + 63,
    hence exact for p(·|R) times the degree-63 Chebyshev interpolant of M,
    whose error on [a, 2a] is below 5.8⁻⁶³ ≈ 1e-48 of M: the result is the
    direct sum to rounding (tested against it), in O(m² log(N/m)) time.
    """
    head = min(top, m + 64)
    ranks = np.arange(1, head + 1, dtype=np.float64)
    acc = (metric_at_rank(metric, k, ranks) / n) @ _pmf((ranks - 1.0) / (n - 1), m)
    nodes = m // 2 + 32
    lo = head + 1
    while lo <= top:
        hi = min(2 * lo - 1, top)
        if hi - lo + 1 <= nodes:
            ranks = np.arange(lo, hi + 1, dtype=np.float64)
            weight = np.ones(len(ranks))
        else:
            t, weight = _gauss(hi - lo + 1, nodes)
            ranks = lo + t
        acc += (weight * metric_at_rank(metric, k, ranks) / n) @ _pmf((ranks - 1.0) / (n - 1), m)
        lo = hi + 1
    return acc


# --------------------------------------------------------------------------- checks


def _check_metric(metric: str, k: int | None) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ValueError(f"k must be an integer >= 1 or None; got {k!r}")
    if metric == "precision" and k is None:
        raise ValueError("precision needs a cut-off k (precision@k = [R <= k] / k)")


def _check_sizes(catalog_size: int, negatives: int) -> None:
    for name, v in (("catalog_size", catalog_size), ("negatives", negatives)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    if catalog_size <= negatives:
        raise ValueError(
            f"catalog_size ({catalog_size}) must exceed negatives ({negatives}): the negatives "
            "are drawn among the catalog's catalog_size - 1 non-relevant items"
        )
