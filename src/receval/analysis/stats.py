"""Paired statistics for comparing systems on the same users (SPEC §10).

Pure functions on NumPy arrays. A paired comparison of systems A and B works
on the per-user differences ``d = a - b`` (one value per user evaluated by
both). Everything random takes a seed (an ``int``, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`) and
draws its resamples in blocks whose size depends only on the input size, so
the same seed always gives the same p-value and interval.

Functions:

- :func:`paired_t_test` and :func:`wilcoxon_test` (via SciPy),
- :func:`randomization_test` (sign-flip permutation test, exact when all
  ``2**n`` sign vectors fit in ``n_resamples``),
- :func:`bootstrap_ci` (percentile and BCa intervals of a mean),
- :func:`cohens_d` (paired effect size),
- :func:`adjust_pvalues` (Bonferroni, Holm, Benjamini–Hochberg).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as _sps

from receval._accel import NATIVE
from receval.errors import OptionError, ReceValError
from receval.exact import ExactSum

__all__ = [
    "CI_METHODS",
    "CORRECTIONS",
    "TESTS",
    "Moments",
    "Power",
    "StatResult",
    "adjust_pvalues",
    "bootstrap_ci",
    "bootstrap_means",
    "cohens_d",
    "effect_size_interval",
    "effect_size_of",
    "flip_counts",
    "friedman_test",
    "interval_of",
    "normalize_correction",
    "normalize_test",
    "paired_t_test",
    "power",
    "quantile_interval",
    "randomization_test",
    "repeated_measures_anova",
    "rng_from",
    "run_test",
    "t_test_of",
    "t_test_power",
    "tukey_hsd",
    "wilcoxon_test",
]

#: Paired tests by name (``permutation`` is an alias of ``randomization``).
TESTS = ("t", "wilcoxon", "randomization")
#: Multiple-comparison corrections by name.
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
#: Bootstrap interval methods.
CI_METHODS = ("bca", "percentile")

_TEST_ALIASES = {
    "t": "t",
    "ttest": "t",
    "t-test": "t",
    "paired_t": "t",
    "student": "t",
    "wilcoxon": "wilcoxon",
    "signed_rank": "wilcoxon",
    "randomization": "randomization",
    "permutation": "randomization",
    "fisher": "randomization",
}
_CORRECTION_ALIASES = {
    "holm": "holm",
    "holm-bonferroni": "holm",
    "bonferroni": "bonferroni",
    "bh": "bh",
    "fdr_bh": "bh",
    "benjamini-hochberg": "bh",
    "benjamini_hochberg": "bh",
    "none": "none",
}

#: About this many float64 values per resampling block (~32 MB).
_BLOCK_VALUES = 1 << 22

Seed = int | np.random.SeedSequence | np.random.Generator | None


@dataclass(frozen=True)
class StatResult:
    """A test statistic and its two-sided p-value."""

    statistic: float
    pvalue: float


def rng_from(seed: Seed) -> np.random.Generator:
    """A generator from an int, a SeedSequence or a Generator (returned as is).

    Example:
        >>> float(rng_from(0).random()) == float(rng_from(np.random.SeedSequence(0)).random())
        True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def _vector(x: Any, name: str = "x") -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ReceValError(f"{name} must be one-dimensional; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ReceValError(f"{name} must hold finite numbers (drop NaN users first)")
    return arr


def _diff(a: Any, b: Any | None) -> np.ndarray:
    x = _vector(a, "a")
    if b is None:
        return x
    y = _vector(b, "b")
    if x.shape != y.shape:
        raise ReceValError(f"paired samples must have the same length; got {len(x)} and {len(y)}")
    return x - y


def _block_rows(n: int, total: int) -> int:
    """Resamples per block: a function of the input size only (never of threads)."""
    return max(1, min(total, _BLOCK_VALUES // max(n, 1)))


def _all_zero(d: np.ndarray) -> bool:
    scale = float(np.max(np.abs(d))) if d.size else 0.0
    return scale == 0.0


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two halves


@dataclass(frozen=True)
class Moments:
    """Exact ``n``, ``Σ d`` and ``Σ d²`` of some values: the sums are
    :class:`~receval.exact.ExactSum` (each square split exactly into three
    products of half-width numbers, Dekker 1971), so moments of parts add up
    to the moments of the whole in any order, and the mean, variance, t
    statistic and effect size computed from them depend on no cut of the users
    (a Spark partitioning, chunks, threads). Exact for ``|d|`` between about
    ``2**-480`` and ``2**480``.

    Example:
        >>> m = Moments.of(np.array([0.5, 0.25])) + Moments.of(np.array([0.75]))
        >>> m.n, m.mean(), m.variance()
        (3, 0.5, 0.0625)
    """

    n: int = 0
    s1: ExactSum = field(default_factory=ExactSum)
    s2: ExactSum = field(default_factory=ExactSum)

    @classmethod
    def of(cls, d: np.ndarray) -> Moments:
        """The moments of an array of finite values."""
        d = np.ascontiguousarray(d, dtype=np.float64)
        # beyond about 1.3e154 the split overflows (the variance is then NaN, as
        # documented): NumPy's own error state, not the host's warning filters
        with np.errstate(over="ignore", invalid="ignore"):
            c = d * _SPLIT
            hi = c - (c - d)
            lo = d - hi
            s2 = ExactSum.of(hi * hi) + ExactSum.of(2.0 * hi * lo) + ExactSum.of(lo * lo)
        return cls(d.size, ExactSum.of(d), s2)

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.s1 + other.s1, self.s2 + other.s2)

    def mean(self) -> float:
        """Σ d / n, correctly rounded (NaN for no value)."""
        return self.s1.mean()

    def variance(self) -> float:
        """The sample variance (ddof = 1), (Σd² − (Σd)²/n) / (n − 1) in exact
        arithmetic, rounded once (NaN for fewer than 2 values)."""
        n = self.n
        if n < 2:
            return math.nan
        if self.s1.pos_inf or self.s1.neg_inf or self.s2.pos_inf:
            return math.nan
        a, b = self.s1.scaled, self.s2.scaled  # units of 2**-1074
        num = b * n * (1 << 1074) - a * a  # units of 2**-2148
        return max(num, 0) / (n * (n - 1) << 2148)

    def sd(self) -> float:
        """The sample standard deviation: √variance."""
        v = self.variance()
        return math.sqrt(v) if v == v else math.nan


def t_test_of(m: Moments) -> StatResult:
    """The paired t-test of :func:`paired_t_test` from exact moments."""
    if m.n < 2:
        return StatResult(math.nan, math.nan)
    mean = m.mean()
    if m.s1.scaled == 0 and m.s2.scaled == 0:  # every difference zero
        return StatResult(0.0, 1.0)
    sd = m.sd()
    if sd == 0.0:  # every difference equal and not zero
        return StatResult(math.copysign(math.inf, mean), 0.0)
    t = mean / (sd / math.sqrt(m.n))
    return StatResult(t, float(2.0 * _sps.t.sf(abs(t), m.n - 1)))


def effect_size_of(m: Moments) -> float:
    """Paired Cohen's d of :func:`cohens_d` from exact moments."""
    if m.n < 2:
        return math.nan
    mean, sd = m.mean(), m.sd()
    if sd == 0.0:
        return 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    return mean / sd


def effect_size_interval(
    means: np.ndarray, squares: np.ndarray, n: int, alpha: float
) -> tuple[float, float]:
    """The percentile bootstrap interval of the paired Cohen's d from the
    resamples' means of the differences (``means``) and of their squares
    (``squares``), drawn with the same resamples: per resample
    ``d* = m / sd``, ``sd² = (m₂ − m²) · n / (n − 1)``; resamples without
    variance are left out (NaN when none is left, or n < 2).

    Example:
        >>> m = np.array([0.1, 0.2, 0.3]); m2 = m**2 + 0.04 * 2 / 3  # sd 0.2 (n = 3)
        >>> [round(v, 3) for v in effect_size_interval(m, m2, 3, 0.5)]
        [0.75, 1.25]
    """
    if n < 2 or not len(means):
        return (math.nan, math.nan)
    var = (squares - means**2) * (n / (n - 1))
    ok = var > 1e-12 * np.maximum(squares, 1e-300)
    if not ok.any():
        return (math.nan, math.nan)
    d = means[ok] / np.sqrt(var[ok])
    return quantile_interval(d, alpha)


def welch_of(a: Moments, b: Moments) -> tuple[StatResult, float]:
    """The Welch t-test of :func:`welch_t_test` from exact moments, and its
    degrees of freedom (NaN when undefined)."""
    if a.n < 2 or b.n < 2:
        return StatResult(math.nan, math.nan), math.nan
    va, vb = a.variance() / a.n, b.variance() / b.n
    diff = a.mean() - b.mean()
    if va + vb == 0.0:  # both samples constant
        if diff == 0.0:
            return StatResult(0.0, 1.0), math.nan
        return StatResult(math.copysign(math.inf, diff), 0.0), math.nan
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
    return StatResult(t, float(2.0 * _sps.t.sf(abs(t), df))), df


def welch_t_test(a: Any, b: Any) -> StatResult:
    """Unpaired Welch t-test of mean(a) = mean(b), two-sided (two groups of
    users, not the same users twice).

    ``t = (ā − b̄) / √(s²_a/n_a + s²_b/n_b)`` (sample variances, ddof = 1),
    Welch–Satterthwaite degrees of freedom
    ``ν = (s²_a/n_a + s²_b/n_b)² / ((s²_a/n_a)²/(n_a − 1) + (s²_b/n_b)²/(n_b − 1))``
    and ``p = 2 · P(T_ν ≥ |t|)`` (Welch 1947; :func:`scipy.stats.ttest_ind` with
    ``equal_var=False``). Means and variances come from exact sums
    (:class:`Moments`). Conventions: fewer than 2 values on a side gives NaN;
    both samples constant gives ``t = 0, p = 1`` for equal means and
    ``t = ±inf, p = 0`` otherwise.

    Example:
        >>> r = welch_t_test([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0])
        >>> round(r.statistic, 4), round(r.pvalue, 4)
        (-2.2514, 0.0691)
    """
    return welch_of(Moments.of(_vector(a, "a")), Moments.of(_vector(b, "b")))[0]


def permutation_test(a: Any, b: Any, *, n_resamples: int = 10_000, seed: Seed = 0) -> StatResult:
    """Unpaired permutation test of mean(a) = mean(b), two-sided.

    Under the null hypothesis the group labels are exchangeable: a resample
    gives ``n_a`` of the pooled values, drawn at random without replacement, to
    the first group and the rest to the second. With ``T = |ā − b̄|`` and ``T*``
    the same difference in a resample,
    ``p = (1 + #{T* ≥ T}) / (1 + n_resamples)`` (never 0; equal within 1e-9 of
    the values' scale counts as reaching T). The statistic returned is
    ``ā − b̄``. A resample is the ``n_a`` smallest of ``n_a + n_b`` uniform keys
    (``rng.random``), drawn in blocks whose size depends only on the sizes, so
    one seed always gives one p-value. Fewer than one value on a side gives NaN;
    all values equal gives ``p = 1``.

    Example:
        >>> r = permutation_test([0.0] * 10, [1.0] * 10, n_resamples=999, seed=1)
        >>> r.statistic, r.pvalue  # no resample is as extreme: (1 + 0) / (1 + 999)
        (-1.0, 0.001)
    """
    x, y = _vector(a, "a"), _vector(b, "b")
    na, nb = x.size, y.size
    if na == 0 or nb == 0:
        return StatResult(math.nan, math.nan)
    if n_resamples < 1:
        raise ReceValError(f"n_resamples must be a positive integer; got {n_resamples}")
    pooled = np.concatenate([x, y])
    observed = Moments.of(x).mean() - Moments.of(y).mean()
    if float(np.max(pooled) - np.min(pooled)) == 0.0:
        return StatResult(observed, 1.0)
    total = float(pooled.sum())
    n = na + nb
    tol = 1e-9 * float(np.abs(pooled).sum()) / min(na, nb)
    target = abs(float(x.sum()) / na - float(y.sum()) / nb) - tol
    rng = rng_from(seed)
    count = 0
    rows = _block_rows(n, n_resamples)
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        pick = np.argpartition(rng.random((m, n)), na - 1, axis=1)[:, :na] if na < n else None
        sa = pooled[pick].sum(axis=1) if pick is not None else np.full(m, total)
        stat = np.abs(sa / na - (total - sa) / nb)
        count += int(np.count_nonzero(stat >= target))
    return StatResult(observed, (1 + count) / (1 + n_resamples))


def paired_t_test(a: Any, b: Any | None = None) -> StatResult:
    """Paired (one-sample) Student t-test of mean(d) = 0, two-sided.

    ``t = mean(d) / (sd(d) / sqrt(n))`` with ``sd`` the sample standard deviation
    (ddof = 1), and ``p = 2 · P(T_{n-1} ≥ |t|)``: :func:`scipy.stats.ttest_rel`.
    ``b=None`` means ``a`` already holds the differences. Conventions: all
    differences zero gives ``t = 0, p = 1``; fewer than 2 users gives NaN.

    Example:
        >>> r = paired_t_test([0.5, 0.7, 0.9, 0.4], [0.4, 0.5, 0.8, 0.4])
        >>> round(r.statistic, 4), round(r.pvalue, 4)
        (2.4495, 0.0917)
    """
    # t and p computed here rather than by scipy.stats.ttest_1samp, which warns on
    # nearly identical differences: silencing it would change the host's warning
    # filters, which are process-wide (issue #17). Same formula; the mean and
    # variance are exact sums rounded once (:class:`Moments`), so the Spark
    # engine, adding the moments of its partitions, gives the same bits.
    return t_test_of(Moments.of(_diff(a, b)))


def wilcoxon_test(a: Any, b: Any | None = None) -> StatResult:
    """Wilcoxon signed-rank test of a median difference of 0, two-sided.

    Zero differences are dropped (Wilcoxon's convention), the others ranked by
    ``|d|`` (ties share the mean rank); the statistic is ``min(W+, W-)``, the
    smaller sum of ranks of one sign. SciPy's :func:`scipy.stats.wilcoxon`
    gives the p-value (exact distribution for small samples without ties,
    normal approximation otherwise). All differences zero gives ``p = 1``;
    no user gives NaN.

    Example:
        >>> r = wilcoxon_test([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [0.1, 0.2, 0.3, 0.3, 0.2, 0.1])
        >>> r.statistic, round(r.pvalue, 4)
        (0.0, 0.0312)
    """
    d = _diff(a, b)
    if d.size == 0:
        return StatResult(math.nan, math.nan)
    if _all_zero(d):
        return StatResult(0.0, 1.0)
    # no warnings filter is touched (process-wide); SciPy >= 1.13 does not warn here
    res = _sps.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
    return StatResult(float(res.statistic), float(res.pvalue))


def _unpacked_signs(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """A (rows, n) 0/1 float matrix of fair coin flips (1 = flip the sign).

    Each row uses whole 64-bit draws, so blocks concatenate to the same stream
    as one large draw.
    """
    words = (n + 63) // 64
    raw = rng.integers(
        0, np.iinfo(np.uint64).max, size=(rows, words), dtype=np.uint64, endpoint=True
    )
    bits = np.unpackbits(raw.view(np.uint8), axis=1, count=n, bitorder="little")
    return bits.astype(np.float64)


def randomization_test(
    a: Any,
    b: Any | None = None,
    *,
    n_resamples: int = 10_000,
    seed: Seed = 0,
    exact: bool | None = None,
) -> StatResult:
    """Paired randomization (permutation) test of mean(d) = 0, two-sided.

    Under the null hypothesis the two systems are exchangeable for each user,
    so each difference keeps its size and gets a random sign. With ``T = |Σ d|``
    and ``T*`` the same sum after flipping signs:

    - exact (all ``2**n`` sign vectors): ``p = #{T* ≥ T} / 2**n``;
    - Monte Carlo (``n_resamples`` random sign vectors ``s``):
      ``p = (1 + #{T* ≥ T}) / (1 + n_resamples)`` (never 0, valid for any
      number of resamples).

    ``exact=None`` enumerates when ``2**n <= n_resamples``. The statistic
    returned is ``mean(d)``. Sign vectors are drawn as bits of 64-bit words, in
    blocks of a size that depends only on ``n``, so one seed always gives one
    p-value. All differences zero gives ``p = 1``; no user gives NaN.

    Example:
        >>> r = randomization_test([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])  # exact: 2 of 8
        >>> r.statistic, r.pvalue
        (2.0, 0.25)
        >>> r = randomization_test(np.arange(1.0, 21.0), n_resamples=999, seed=1)
        >>> r.pvalue  # (1 + 0) / (1 + 999)
        0.001
    """
    d = _diff(a, b)
    n = d.size
    if n == 0:
        return StatResult(math.nan, math.nan)
    observed = float(d.mean())
    if _all_zero(d):
        return StatResult(observed, 1.0)
    if n_resamples < 1:
        raise ReceValError(f"n_resamples must be a positive integer; got {n_resamples}")
    total = float(d.sum())
    # T* = |Σ d - 2 Σ_{flipped} d|; a relative tolerance keeps floating-point
    # noise from splitting sums that are equal in exact arithmetic.
    tol = 1e-9 * float(np.abs(d).sum())
    target = abs(total) - tol
    if exact is None:
        exact = n <= 62 and (1 << n) <= n_resamples
    if exact:
        if n > 24:
            raise ReceValError(f"exact enumeration of 2**{n} sign vectors is too large")
        count = 0
        m = 1 << n
        rows = _block_rows(n, m)
        cols = np.arange(n, dtype=np.uint64)
        for start in range(0, m, rows):
            codes = np.arange(start, min(m, start + rows), dtype=np.uint64)
            flips = ((codes[:, None] >> cols[None, :]) & np.uint64(1)).astype(np.float64)
            stat = np.abs(total - 2.0 * (flips @ d))
            count += int(np.count_nonzero(stat >= target))
        return StatResult(observed, count / m)
    count = int(flip_counts(d[:, None], n_resamples, rng_from(seed))[0])
    return StatResult(observed, (1 + count) / (1 + n_resamples))


def flip_counts(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """For each column of ``d`` (users × comparisons, finite), how many of
    ``n_resamples`` random sign vectors give ``|Σ ± d| ≥ |Σ d|`` (with the
    tolerance of :func:`randomization_test`). One sign vector per resample
    serves every column: a block of them is a 0/1 matrix ``F`` and the flipped
    sums of all columns are one matrix product, ``Σ d − 2 F d``.

    Example:
        >>> d = np.column_stack([np.arange(1.0, 21.0), np.zeros(20)])
        >>> flip_counts(d, 999, np.random.default_rng(1)).tolist()
        [0, 999]
    """
    d = np.ascontiguousarray(d, dtype=np.float64)  # BLAS sums by layout: one layout
    n = d.shape[0]
    total = d.sum(axis=0)
    target = np.abs(total) - 1e-9 * np.abs(d).sum(axis=0)
    count = np.zeros(d.shape[1], dtype=np.int64)
    rows = _block_rows(n, n_resamples)
    for start in range(0, n_resamples, rows):
        flips = _unpacked_signs(rng, min(rows, n_resamples - start), n)
        stat = np.abs(total - 2.0 * (flips @ d))
        count += np.count_nonzero(stat >= target, axis=0)
    return count


def bootstrap_means(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of the users, for every
    column of ``x`` (users × columns): (resamples × columns).

    A resample draws n users with replacement (``rng.integers``, blocks whose
    size depends only on n); it is held as the count of each user, and the
    means of every column are one matrix product ``W x / n`` of the block of
    counts ``W`` — no gather of values by index. One resample serves every
    column (every system and every paired difference of a metric).

    Example:
        >>> x = np.column_stack([np.ones(5), np.arange(5.0)])
        >>> m = bootstrap_means(x, 3, np.random.default_rng(0))
        >>> m.shape, m[:, 0].tolist()
        ((3, 2), [1.0, 1.0, 1.0])
    """
    x = np.ascontiguousarray(x, dtype=np.float64)  # BLAS sums by layout: one layout
    n = x.shape[0]
    out = np.empty((n_resamples, x.shape[1]))
    rows = _block_rows(n, n_resamples)
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        out[start : start + m] = (_boot_counts(rng, n, m) @ x) / n
    return out


def _boot_counts(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """``m`` resamples of ``n`` users as counts (m × n, float64): the draws of
    ``rng.integers(0, n, size=(m, n))``, row by row. The compiled part draws them
    from the same bit generator by NumPy's own rule and counts as it draws (same
    counts, same generator state after: tests check both); else NumPy."""
    native = getattr(NATIVE, "boot_counts", None)
    counts = np.empty((m, n))
    if native is not None and 1 <= n <= np.iinfo(np.int32).max:
        with rng.bit_generator.lock:  # as NumPy holds it while it draws
            native(rng.bit_generator.capsule, n, counts.reshape(-1))
        return counts
    # 32-bit indices where they fit: NumPy draws the same values for either width
    # (bounded 32-bit draws below 2**32), and writes half the bytes
    width = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    idx = rng.integers(0, n, size=(m, n), dtype=width)
    for r in range(m):  # one resample's counts fit in cache: faster than one bincount
        counts[r] = np.bincount(idx[r], minlength=n)
    return counts


def bootstrap_ci(
    a: Any,
    b: Any | None = None,
    *,
    alpha: float = 0.05,
    method: Literal["bca", "percentile"] = "bca",
    n_resamples: int = 10_000,
    seed: Seed = 0,
) -> tuple[float, float]:
    """A bootstrap ``1 - alpha`` confidence interval of the mean (of ``a - b`` when
    ``b`` is given: the paired difference).

    ``B = n_resamples`` resamples of the n users with replacement give means
    ``θ*_1..θ*_B``; ``θ̂`` is the observed mean and ``q(p)`` the p-quantile of
    the ``θ*`` (linear interpolation).

    - ``percentile``: ``[q(α/2), q(1 − α/2)]``.
    - ``bca`` (bias-corrected and accelerated, Efron 1987):
      ``z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B)`` (θ* within 1e-9 · mean|x|
      of θ̂ counts as equal), acceleration from the
      jackknife means ``θ_(i)`` (each user left out once) and their mean
      ``θ_(·)``: ``a = Σ(θ_(·) − θ_(i))³ / (6 [Σ(θ_(·) − θ_(i))²]^{3/2})``; then
      ``[q(α1), q(α2)]`` with ``α_j = Φ(z0 + (z0 + z_j) / (1 − a (z0 + z_j)))``,
      ``z_1 = Φ⁻¹(α/2)``, ``z_2 = Φ⁻¹(1 − α/2)``.

    All values equal gives ``(θ̂, θ̂)``; no user gives ``(nan, nan)``.

    Example:
        >>> x = [0.2, 0.4, 0.4, 0.5, 0.9, 1.0]
        >>> lo, hi = bootstrap_ci(x, method="percentile", n_resamples=2000, seed=3)
        >>> bool(lo < np.mean(x) < hi), bool(0.2 <= lo and hi <= 1.0)
        (True, True)
    """
    x = _diff(a, b)
    if not 0 < alpha < 1:
        raise ReceValError(f"alpha must be in (0, 1); got {alpha}")
    if method not in CI_METHODS:
        raise ReceValError(f"method must be one of {', '.join(CI_METHODS)}; got {method!r}")
    if n_resamples < 1:
        raise ReceValError(f"n_resamples must be a positive integer; got {n_resamples}")
    if x.size == 0 or float(x.max() - x.min()) == 0.0:  # no draw needed
        return interval_of(x, np.empty(0), alpha, method)
    means = bootstrap_means(x[:, None], n_resamples, rng_from(seed))[:, 0]
    return interval_of(x, means, alpha, method)


def interval_of(x: np.ndarray, means: np.ndarray, alpha: float, method: str) -> tuple[float, float]:
    """The ``percentile`` or ``bca`` interval of the mean of ``x`` from its
    bootstrap ``means`` (see :func:`bootstrap_ci`)."""
    n = x.size
    if n == 0:
        return (math.nan, math.nan)
    theta = float(x.mean())
    if float(x.max() - x.min()) == 0.0:
        return (theta, theta)
    if method != "bca":
        return quantile_interval(means, alpha)
    jack = (x.sum() - x) / (n - 1) if n > 1 else x.copy()
    dev = jack.mean() - jack
    top = float(np.max(np.abs(dev))) if n else 0.0
    if top and not 2.0**-300 < top < 2.0**300:  # a is free of scale: a power of 2 is exact
        dev = np.ldexp(dev, -math.frexp(top)[1])  # (else the cube overflows, or underflows to 0)
    den = float(np.sum(dev**2)) ** 1.5
    acc = float(np.sum(dev**3)) / (6.0 * den) if den > 0 else 0.0
    # resampled means equal to θ̂ in exact arithmetic count as equal: a
    # relative tolerance keeps rounding noise (which depends on how the sums
    # were taken) from moving them below or above it
    return quantile_interval(means, alpha, theta, acc, tol=1e-9 * float(np.abs(x).mean()))


def quantile_interval(
    means: np.ndarray,
    alpha: float,
    theta: float | None = None,
    acc: float = 0.0,
    tol: float = 0.0,
) -> tuple[float, float]:
    """``[q(α/2), q(1 − α/2)]`` of the bootstrap ``means`` (percentile), or,
    given the observed mean ``theta`` and the acceleration ``acc``, BCa's
    ``[q(α1), q(α2)]`` (Efron 1987; see :func:`bootstrap_ci`; means within
    ``tol`` of ``theta`` count as equal to it). Every mean on one side of
    ``theta`` leaves the correction undefined: the percentile interval."""
    lo_p, hi_p = alpha / 2, 1 - alpha / 2
    if theta is not None:
        below = np.count_nonzero(means < theta - tol) + np.count_nonzero(means <= theta + tol)
        z0 = float(special.ndtri(below / (2.0 * means.size)))
        if not math.isfinite(z0):
            z0, acc = 0.0, 0.0
        ps = []
        for zq in (special.ndtri(lo_p), special.ndtri(hi_p)):
            s = z0 + zq
            ps.append(float(special.ndtr(z0 + s / (1 - acc * s))))
        lo_p, hi_p = ps
    lo, hi = np.quantile(means, [lo_p, hi_p])
    return (float(lo), float(hi))


def cohens_d(a: Any, b: Any | None = None) -> float:
    """Paired Cohen's d (d_z): ``mean(d) / sd(d)``, sample sd with ddof = 1.

    Conventions: ``sd = 0`` gives 0 when the mean is 0 and ±inf otherwise;
    fewer than 2 users gives NaN.

    Example:
        >>> round(cohens_d([0.5, 0.7, 0.9, 0.4], [0.4, 0.5, 0.8, 0.4]), 4)
        1.2247
    """
    return effect_size_of(Moments.of(_diff(a, b)))


def adjust_pvalues(pvalues: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """P-values adjusted for multiple comparisons (NaN entries stay NaN and do
    not count among the ``m`` comparisons).

    With the ``m`` p-values sorted ascending, ``p_(1) ≤ … ≤ p_(m)``:

    - ``bonferroni``: ``min(1, m · p_i)``;
    - ``holm`` (step-down): ``p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j))``;
    - ``bh`` (Benjamini–Hochberg, false discovery rate, step-up):
      ``p̃_(i) = min_{j ≥ i} min(1, m p_(j) / j)``;
    - ``none``: unchanged.

    A comparison is significant at level α when its adjusted p-value is < α.

    Example:
        >>> p = [0.01, 0.04, 0.03, 0.005]
        >>> adjust_pvalues(p, "bonferroni").round(4).tolist()
        [0.04, 0.16, 0.12, 0.02]
        >>> adjust_pvalues(p, "holm").round(4).tolist()
        [0.03, 0.06, 0.06, 0.02]
        >>> adjust_pvalues(p, "bh").round(4).tolist()
        [0.02, 0.04, 0.04, 0.02]
    """
    method = normalize_correction(method)
    p = np.asarray(pvalues, dtype=np.float64).copy()
    if p.ndim != 1:
        raise ReceValError("p-values must be one-dimensional")
    ok = ~np.isnan(p)
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise ReceValError("p-values must lie in [0, 1]")
    if method == "none" or not ok.any():
        return p
    q = p[ok]
    m = q.size
    order = np.argsort(q, kind="stable")
    s = q[order]
    if method == "bonferroni":
        adj = np.minimum(1.0, m * s)
    elif method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * s))
    else:  # bh
        adj = np.minimum.accumulate((m * s / np.arange(1, m + 1))[::-1])[::-1]
        adj = np.minimum(1.0, adj)
    out = np.empty(m)
    out[order] = adj
    p[ok] = out
    return p


def normalize_test(test: str) -> str:
    """The canonical name of a paired test (``t``, ``wilcoxon``, ``randomization``).

    Example:
        >>> normalize_test("permutation")
        'randomization'
    """
    key = str(test).strip().lower()
    if key not in _TEST_ALIASES:
        raise OptionError(
            "test", test, allowed=("t", "wilcoxon", "randomization", "permutation", "tukey")
        )
    return _TEST_ALIASES[key]


def normalize_correction(correction: str | None) -> str:
    """The canonical name of a correction (``holm``, ``bonferroni``, ``bh``, ``none``).

    Example:
        >>> normalize_correction("fdr_bh")
        'bh'
    """
    key = "none" if correction is None else str(correction).strip().lower()
    if key not in _CORRECTION_ALIASES:
        raise OptionError("correction", correction, allowed=("holm", "bonferroni", "bh", "none"))
    return _CORRECTION_ALIASES[key]


def tukey_hsd(
    x: Any, *, n_resamples: int = 10_000, seed: Seed = 0, exact: bool | None = None
) -> np.ndarray:
    """The randomised Tukey HSD test of every pair of systems (Carterette 2012,
    "Multiple testing in statistical analysis of systems-based information
    retrieval experiments", TOIS 30(1); Sakai 2014): p-values that control
    the family-wise error over all pairs at once.

    ``x``: users × systems, finite. Under the null hypothesis the systems are
    exchangeable for each user, so each user's row is permuted at random; the
    statistic of a resample is the range of the column sums, ``R* = max_i S*_i
    − min_i S*_i``, and for the pair (i, i') with ``T = |S_i − S_i'|``:

    - exact (all ``(m!)^n`` row permutations): ``p = #{R* ≥ T} / (m!)^n``;
    - Monte Carlo: ``p = (1 + #{R* ≥ T}) / (1 + n_resamples)``,

    as :func:`randomization_test` (its two-system case is that test with
    ``R* = |Σ ± d|``). ``exact=None`` enumerates when ``(m!)^n <= n_resamples``.
    ``≥`` allows 1e-9 of the sum of the rows' ranges (rounding). Returns the
    ``(m, m)`` matrix of p-values (1 on the diagonal; NaN without users).

    Example:
        >>> x = np.array([[3.0, 1.0, 2.0], [3.0, 1.0, 2.0]])  # exact: 36 permutations
        >>> p = tukey_hsd(x)
        >>> float(p[0, 1]), float(p[0, 2])  # 6 of 36 have a range >= 4; 30 >= 2
        (0.16666666666666666, 0.8333333333333334)
    """
    x = np.asarray(x, dtype=np.float64)
    n, m = x.shape
    out = np.ones((m, m))
    if n == 0:
        return np.full((m, m), np.nan)
    if m < 2:
        return out
    sums = x.sum(axis=0)
    target = np.abs(sums[:, None] - sums[None, :])
    target -= 1e-9 * float((x.max(axis=1) - x.min(axis=1)).sum())
    # the permutations act on each row's values in ascending order, the rows in
    # the order of those: a row permuted at random is as random from any of its
    # orders, and the p-values then depend on neither the order of the systems
    # (columns) nor that of the users (rows), which only name them
    x = np.sort(x, axis=1)
    x = x[np.lexsort(x.T[::-1])]
    perms = np.array(list(itertools.permutations(range(m))), dtype=np.int64) if m <= 6 else None
    space = math.factorial(m) ** n if m <= 20 and n * math.log(math.factorial(m)) < 60 else None
    if exact is None:
        exact = perms is not None and space is not None and space <= n_resamples
    if exact:
        if perms is None or space is None:
            raise ReceValError(f"tukey_hsd: {m} systems of {n} users are too many to enumerate")
        choice = np.indices((len(perms),) * n).reshape(n, -1).T  # every row's permutation
        ranges = _permuted_ranges(x, perms[choice])
        count = (ranges[:, None, None] >= target[None]).sum(axis=0)
        p = count / space
    else:
        rng = rng_from(seed)
        count = np.zeros((m, m), dtype=np.int64)
        rows = max(1, _BLOCK_VALUES // (n * m))
        for start in range(0, n_resamples, rows):
            b = min(rows, n_resamples - start)
            if perms is not None:
                chosen = perms[rng.integers(0, len(perms), size=(b, n))]
            else:
                chosen = np.argsort(rng.random((b, n, m)), axis=2)
            ranges = _permuted_ranges(x, chosen)
            count += (ranges[:, None, None] >= target[None]).sum(axis=0)
        p = (1 + count) / (1 + n_resamples)
    np.fill_diagonal(p, 1.0)
    return np.minimum(p, 1.0)


def repeated_measures_anova(x: Any) -> tuple[float, float, float, float]:
    """One-way repeated-measures ANOVA of the systems (columns) over the users
    (rows, the subjects): ``(F, df_systems, df_error, p)``.

    With G the grand mean, ``SS_systems = n Σ_i (x̄_i − G)²``, ``SS_users =
    m Σ_j (x̄_j − G)²``, ``SS_error = Σ (x_ji − G)² − SS_systems − SS_users``,
    ``F = (SS_systems / (m − 1)) / (SS_error / ((m − 1)(n − 1)))`` and ``p`` the
    upper tail of F(m − 1, (m − 1)(n − 1)). With two systems, F is the square of
    the paired t statistic (tested). No error variance: F = inf and p = 0 when
    the systems differ, NaN and p = 1 when nothing differs; fewer than 2 users
    or systems: NaN.

    Example:
        >>> f, df1, df2, p = repeated_measures_anova([[1.0, 2.0, 4.0], [2.0, 2.5, 5.0],
        ...                                           [0.5, 2.0, 3.5], [1.0, 3.0, 4.5]])
        >>> round(f, 3), df1, df2, round(p, 5)
        (83.824, 2.0, 6.0, 4e-05)
    """
    x = np.asarray(x, dtype=np.float64)
    n, m = x.shape if x.ndim == 2 else (0, 0)
    if n < 2 or m < 2:
        return math.nan, math.nan, math.nan, math.nan
    grand = x.mean()
    ss_systems = n * float(((x.mean(axis=0) - grand) ** 2).sum())
    ss_users = m * float(((x.mean(axis=1) - grand) ** 2).sum())
    ss_error = max(float(((x - grand) ** 2).sum()) - ss_systems - ss_users, 0.0)
    df1, df2 = float(m - 1), float((m - 1) * (n - 1))
    scale = float(((x - grand) ** 2).sum())
    if ss_error <= 1e-12 * scale:  # no error variance (up to rounding)
        if ss_systems <= 1e-12 * scale:
            return math.nan, df1, df2, 1.0
        return math.inf, df1, df2, 0.0
    f = (ss_systems / df1) / (ss_error / df2)
    return f, df1, df2, float(_sps.f.sf(f, df1, df2))


@dataclass(frozen=True)
class Power:
    """What :func:`power` found: the users needed, and what it assumed.

    Attributes:
        users: the fewest users for which the paired t-test reaches the power
            asked (None: not within ``max_users``).
        effect: the mean difference to detect.
        sd: the standard deviation of the per-user differences (from the pilot).
        d: the standardized effect ``effect / sd`` (Cohen's d_z).
        power: the power reached with ``users`` users.
        alpha: the two-sided level.
        pilot_users: the users of the pilot.
    """

    users: int | None
    effect: float
    sd: float
    d: float
    power: float
    alpha: float
    pilot_users: int


def t_test_power(d: float, users: int, alpha: float = 0.05) -> float:
    """The power of the two-sided paired t-test at level ``alpha`` for a true
    standardized effect ``d`` (mean / sd of the differences) with ``users``
    users: ``P(|T| > t_{1−α/2, n−1})`` for T noncentral t with n − 1 degrees of
    freedom and noncentrality ``d √n``.

    Example:
        >>> round(t_test_power(0.5, 34), 3)  # G*Power's table: 34 users for 80%
        0.808
    """
    if users < 2:
        return math.nan
    df = users - 1
    crit = float(_sps.t.ppf(1 - alpha / 2, df))
    ncp = d * math.sqrt(users)
    # the lower tail as the upper tail of -T: SciPy's nct.cdf gives NaN where the tail
    # underflows (d = 6 with 2 users), which the search for users took as enough power
    return min(1.0, _nct_sf(crit, df, ncp) + _nct_sf(crit, df, -ncp))


def _nct_sf(t: float, df: int, ncp: float) -> float:
    """P(T > t) for T noncentral t with ``df`` degrees of freedom and
    noncentrality ``ncp``: SciPy's ``nct.sf``, or where SciPy gives NaN (a
    noncentrality beyond about 1e9, e.g. a pilot whose differences hardly
    vary), the same probability from its definition T = (Z + ncp) / (S / √df),
    S ~ χ(df): ∫ Φ(ncp − t s / √df) f_χ(s) ds (``scipy.integrate.quad``,
    absolute error below 1e-10), never NaN for a finite ``ncp``.

    Example:
        >>> round(_nct_sf(12.706, 1, 6 * 2**0.5), 4), _nct_sf(12.706, 1, 1e12) > 1 - 1e-10
        (0.4944, True)
    """
    p = float(_sps.nct.sf(t, df, ncp))
    if math.isfinite(p) or not math.isfinite(ncp):
        return p
    from scipy import integrate

    scale = t / math.sqrt(df)
    value, _ = integrate.quad(
        lambda s: _sps.norm.cdf(ncp - scale * s) * _sps.chi.pdf(s, df),
        0.0,
        math.inf,
        epsabs=1e-12,
        limit=200,
    )
    return min(1.0, max(0.0, value))


def power(
    a: Any,
    b: Any | None = None,
    *,
    effect: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    max_users: int = 10_000_000,
) -> Power:
    """How many users a paired t-test needs to detect a difference, from pilot
    per-user values (Cohen 1988; the noncentral t, as G*Power computes it).

    Args:
        a, b: the pilot's per-user values of two systems (aligned: pandas
            Series are aligned by user, users missing on either side left
            out), or ``a`` alone: the per-user differences.
        effect: the mean difference to detect; default the pilot's.
        alpha: the two-sided level of the test.
        power: the probability of detecting it, 1 − β.
        max_users: the largest answer searched.

    The standard deviation of the differences comes from the pilot (ddof 1);
    the answer is the smallest n ≥ 2 with :func:`t_test_power` ``(effect / sd,
    n, alpha) >= power`` (a doubling search, then bisection: power grows with n).

    Example:
        >>> d = np.array([0.3, -0.2, 0.9, 0.1, 0.4, 0.6, -0.1, 0.5])  # mean 0.3125
        >>> p = power(d)
        >>> p.users, round(p.d, 3), round(p.power, 3)
        (13, 0.849, 0.802)
    """
    if not 0 < alpha < 1:
        raise OptionError("alpha", alpha, expected="a number between 0 and 1 (exclusive)")
    if not 0 < power < 1:
        raise OptionError("power", power, expected="a number between 0 and 1 (exclusive)")
    if b is not None:
        # two Series (per-user values) pair by user; anything else by position (a
        # list has an ``index`` method too: testing for the attribute paired a
        # Series with a list by index and found no user in common)
        if isinstance(a, pd.Series) and isinstance(b, pd.Series):
            both = pd.concat([pd.Series(a), pd.Series(b)], axis=1, join="inner").dropna()
            diff = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy(dtype=np.float64)
        else:
            x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            if x.shape != y.shape:
                raise ReceValError(
                    f"power: a and b must hold the same users; got {x.size} and {y.size} values"
                )
            diff = x - y
    else:
        diff = np.asarray(a, dtype=np.float64).ravel()
    diff = diff[np.isfinite(diff)]
    if len(diff) < 2:
        raise ReceValError(f"power: the pilot needs 2 users or more; it has {len(diff)}")
    moments = Moments.of(diff)
    sd = math.sqrt(moments.variance())
    shift = moments.mean() if effect is None else float(effect)
    if shift == 0 or not math.isfinite(shift):
        raise OptionError("effect", shift, expected="a nonzero difference to detect")
    if sd == 0:  # every difference equal: two users detect it
        return Power(2, shift, 0.0, math.inf, 1.0, alpha, len(diff))
    d = abs(shift) / sd
    lo, hi = 2, 2
    # ``not (x >= power)``: a NaN power is never taken for enough
    while not t_test_power(d, hi, alpha) >= power:
        if hi >= max_users:
            return Power(None, shift, sd, d, t_test_power(d, max_users, alpha), alpha, len(diff))
        lo, hi = hi, min(2 * hi, max_users)
    while lo < hi:  # the smallest n with enough power, in [lo, hi]
        mid = (lo + hi) // 2
        if t_test_power(d, mid, alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return Power(hi, shift, sd, d, t_test_power(d, hi, alpha), alpha, len(diff))


def friedman_test(x: Any) -> StatResult:
    """Friedman's rank test of the systems (columns) over the users (rows):
    ``scipy.stats.friedmanchisquare`` (ties corrected), for 3 systems or more;
    NaN with fewer than 2 users or 3 systems.

    Example:
        >>> r = friedman_test([[1.0, 2.0, 3.0]] * 4)
        >>> r.statistic, round(r.pvalue, 4)
        (8.0, 0.0183)
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 3:
        return StatResult(math.nan, math.nan)
    if not np.any(x != x[:, :1]):  # every user gives every system the same value
        return StatResult(0.0, 1.0)
    res = _sps.friedmanchisquare(*x.T)
    return StatResult(float(res.statistic), float(res.pvalue))


def _permuted_ranges(x: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """For each resample (``chosen``: resamples × users × systems, a
    permutation of the systems per user), the range of the permuted column sums."""
    permuted = np.take_along_axis(x[None, :, :], chosen, axis=2)
    sums = permuted.sum(axis=1)
    return sums.max(axis=1) - sums.min(axis=1)


def run_test(
    test: str, a: Any, b: Any | None = None, *, n_resamples: int = 10_000, seed: Seed = 0
) -> StatResult:
    """Run a paired test by name (see :data:`TESTS`).

    Example:
        >>> run_test("t", [1.0, 2.0, 4.0], [0.0, 1.0, 1.0]).pvalue < 0.2
        True
    """
    name = normalize_test(test)
    if name == "t":
        return paired_t_test(a, b)
    if name == "wilcoxon":
        return wilcoxon_test(a, b)
    return randomization_test(a, b, n_resamples=n_resamples, seed=seed)
