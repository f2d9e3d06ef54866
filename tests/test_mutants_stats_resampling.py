"""Tests written to kill the survivors of the full mutation run of
``receval/analysis/stats.py`` in its resampling tests (issue #37; see
docs/mutation.md): ``permutation_test``, ``randomization_test``,
``flip_counts`` and their helpers.

Each test names the mutants it kills. Expected values are worked by hand from
the documented rule, or drawn from NumPy's generator by the documented scheme
(a resample of the permutation test is the ``n_a`` smallest of ``n`` uniform
keys; a sign vector is the bits, least significant first, of 64-bit words)
and counted in integer arithmetic, never computed by receval along another
path.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from receval.analysis.stats import (
    Moments,
    StatResult,
    flip_counts,
    paired_t_test,
    permutation_test,
    randomization_test,
    wilcoxon_test,
)
from receval.errors import ReceValError

_MAX64 = 2**64 - 1


def _pair(r: StatResult) -> tuple[float, float]:
    return r.statistic, r.pvalue


def _label_counts(a: list[int], b: list[int], n_resamples: int, seed: int) -> int:
    """How many of the documented resamples of the permutation test reach T:
    group a of a resample is the ``n_a`` smallest of ``n`` uniform keys
    (``rng.random``, one row of keys a resample, drawn in order). Integer
    values: ``|ā* − b̄*| ≥ |ā − b̄|`` is ``|n_b Σa* − n_a Σb*| ≥ |n_b Σa − n_a Σb|``."""
    pooled = np.array(a + b, dtype=np.int64)
    na, nb = len(a), len(b)
    keys = np.random.default_rng(seed).random((n_resamples, na + nb))
    sa = pooled[np.argsort(keys, axis=1)[:, :na]].sum(axis=1)
    stat = np.abs(nb * sa - na * (pooled.sum() - sa))
    return int(np.count_nonzero(stat >= abs(nb * sum(a) - na * sum(b))))


def _sign_bits(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The documented sign vectors: user j of a resample is bit j % 64 (least
    significant first) of its (j // 64)-th uniform 64-bit word, ⌈n / 64⌉ words
    a resample, drawn in order."""
    words = rng.integers(
        0, _MAX64, size=(n_resamples, (n + 63) // 64), dtype=np.uint64, endpoint=True
    )
    j = np.arange(n)
    return ((words[:, j // 64] >> (j % 64).astype(np.uint64)) & np.uint64(1)).astype(np.int64)


# --- permutation_test ----------------------------------------------------------


def test_permutation_test_defaults_draw_the_documented_resamples() -> None:
    """permutation_test mutants 1 (default ``n_resamples=10001``), 2 (default
    seed 1), 100 and 101 (``argpartition`` at ``n_a + 1`` / ``n_a − 2``: not
    the n_a smallest keys). a = (5, 8, 13), b = (1, 2, 4, 6, 9): ā − b̄ =
    26/3 − 22/5 = 64/15; p = (1 + count) / (1 + 10000) with the count of the
    10000 resamples of seed 0 (``_label_counts``)."""
    a, b = [5, 8, 13], [1, 2, 4, 6, 9]
    count = _label_counts(a, b, 10_000, 0)
    assert 100 < count < 9_000
    assert count != _label_counts(a, b, 10_000, 1)
    r = permutation_test(np.array(a, float), np.array(b, float))
    assert r.statistic == pytest.approx(64 / 15, rel=1e-12)
    assert r.pvalue == (1 + count) / (1 + 10_000)


def test_permutation_test_of_one_value_in_b() -> None:
    """permutation_test mutant 100 (``argpartition`` at ``n_a + 1`` = n: out of
    range when b has one value). a = (1, 2, 3), b = (10): T = |2 − 10| = 8;
    a resample moving 10 into a gives |(15 − v)/3 − v| ≤ 4 for v ∈ {1, 2, 3},
    so only the resamples that leave 10 in b reach T: those whose largest of
    the 4 keys is the 4th."""
    keys = np.random.default_rng(3).random((200, 4))
    count = int(np.count_nonzero(np.argmax(keys, axis=1) == 3))
    r = permutation_test([1.0, 2.0, 3.0], [10.0], n_resamples=200, seed=3)
    assert (r.statistic, r.pvalue) == (-8.0, (1 + count) / 201)


def test_permutation_test_of_one_value_in_a() -> None:
    """permutation_test mutant 101 (``argpartition`` at ``n_a − 2`` = −1, the
    last position: the first key is then not the smallest of 301; for
    n_a ≥ 2 NumPy's selection happens to leave the n_a smallest in front).
    a = (200), b = (0, ..., 299): ā − b̄ = 200 − 149.5; about 2/3 of the
    resamples reach T (a value ≤ 99 or ≥ 200 in a); p from the resamples of
    seed 3 (``_label_counts``)."""
    b = list(range(300))
    count = _label_counts([200], b, 200, 3)
    assert 10 < count < 190
    r = permutation_test([200.0], np.array(b, float), n_resamples=200, seed=3)
    assert (r.statistic, r.pvalue) == (50.5, (1 + count) / 201)


def test_permutation_test_edge_results_and_resample_count() -> None:
    """permutation_test mutants 22 (no value in a: statistic None, not NaN),
    41 (all values equal: statistic None, not ā − b̄ = 0), 26 and 27 (one
    resample refused) and 28 (the message ``None``). One resample of
    a = (0, 1), b = (1, 0): T = 0, which every resample reaches: p = (1 + 1) / 2."""
    r = permutation_test([], [1.0])
    assert math.isnan(r.statistic) and math.isnan(r.pvalue)
    assert _pair(permutation_test([2.0, 2.0], [2.0])) == (0.0, 1.0)
    assert permutation_test([0.0, 1.0], [1.0, 0.0], n_resamples=1).pvalue == 1.0
    with pytest.raises(ReceValError, match=r"^n_resamples must be a positive integer; got 0$"):
        permutation_test([0.0, 1.0], [1.0, 0.0], n_resamples=0)


def test_permutation_test_tolerance_is_relative_to_the_values_scale() -> None:
    """permutation_test mutants 52 (tolerance 1e-9 / Σ|v| / min(n_a, n_b)) and
    51 (1e-9 · Σ|v| · min(n_a, n_b)); documented: equal within 1e-9 of the
    values' scale (1e-9 · Σ|v| / min(n_a, n_b)) counts as reaching T.

    a = (0, 1), b = (δ, 1.5): T = |0.5 − (1.5 + δ)/2| = 0.25 + δ/2. Of the 6
    ways to give 2 of the 4 values to a, {0, 1}, {δ, 1.5} give T, {0, δ},
    {1, 1.5} give 1.25 − δ/2, and {0, 1.5}, {δ, 1} give 0.25 − δ/2 = T − δ.
    The scale is (2.5 + δ)/2 ≈ 1.25, so the tolerance is ≈ 1.25e-9:

    - δ = 6e-10 is within it: every resample reaches T, p = 201/201 = 1
      (mutant 52: tolerance 2e-10, the T − δ resamples do not count);
    - δ = 2.5e-9 is not: the resamples giving a {0, 1.5} or {δ, 1} (pooled
      positions 0 and 3, or 1 and 2, holding the two smallest keys) do not count (mutant 51:
      tolerance 5e-9, every resample counts, p = 1)."""
    assert permutation_test([0.0, 1.0], [6e-10, 1.5], n_resamples=200, seed=5).pvalue == 1.0
    keys = np.random.default_rng(5).random((200, 4))
    first = np.sort(np.argsort(keys, axis=1)[:, :2], axis=1)
    short = (first[:, 0] == 0) & (first[:, 1] == 3) | (first[:, 0] == 1) & (first[:, 1] == 2)
    count = 200 - int(np.count_nonzero(short))
    assert count < 200
    r = permutation_test([0.0, 1.0], [2.5e-9, 1.5], n_resamples=200, seed=5)
    assert r.pvalue == (1 + count) / 201


def test_ties_count_at_a_subnormal_scale() -> None:
    """permutation_test mutant 124 and randomization_test mutant 96 (``>`` for
    ``≥``). At a subnormal scale the tolerance 1e-9 · scale underflows to 0,
    and only ``≥`` counts the resamples that tie with T exactly:

    - a = (0), b = (1e-320): both labellings give |0 − 1e-320| = T, so
      p = (1 + 50) / (1 + 50) = 1 (the mutant: 1/51);
    - d = (1e-320): both sign vectors give |±1e-320| = T, exact p = 2/2 = 1
      (the mutant: 0)."""
    assert permutation_test([0.0], [1e-320], n_resamples=50).pvalue == 1.0
    assert randomization_test([1e-320]).pvalue == 1.0


def test_permutation_test_in_blocks() -> None:
    """permutation_test mutants 83 (blocks from resample 1: one resample
    short), 89 (the last block as long as the others) and 120 (the count of
    the last block only). Resamples come in blocks of ⌊2**22 / n⌋ (about
    2**22 values a block): with n = 1,500,000 values, 3 resamples are blocks
    of 2 and 1. a = b = (0, 1, 0, 1, ...): T = 0, which every resample
    reaches, so p = (1 + 3) / (1 + 3) = 1 (mutants: 3/4, 5/4, 2/4)."""
    half = [0.0, 1.0] * 375_000
    assert permutation_test(half, half, n_resamples=3).pvalue == 1.0


# --- randomization_test --------------------------------------------------------


def test_randomization_test_defaults_draw_the_documented_sign_vectors() -> None:
    """randomization_test mutants 1 (default ``n_resamples=10001``) and 112
    (the Monte Carlo statistic ``None``). 14 users: 2**14 > 10000, so 10000
    random sign vectors of seed 0 (``_sign_bits``); integer d, so
    ``|Σ d − 2 Σ_flipped d| ≥ |Σ d|`` is exact; p = (1 + count) / (1 + 10000),
    the statistic is mean(d) = 20/14."""
    d = np.array([3, -1, 4, 1, -5, 28, 2, -6, 5, 3, -5, 8, -9, -8])
    flips = _sign_bits(14, 10_000, np.random.default_rng(0))
    count = int(np.count_nonzero(np.abs(d.sum() - 2 * (flips @ d)) >= abs(d.sum())))
    assert 100 < count < 9_000
    r = randomization_test(d.astype(np.float64))
    assert (r.statistic, r.pvalue) == (20 / 14, (1 + count) / (1 + 10_000))


def test_randomization_test_edge_results() -> None:
    """randomization_test mutants 11 (no user: statistic None, not NaN) and 18
    (all differences zero: statistic None, not 0)."""
    r = randomization_test([])
    assert math.isnan(r.statistic) and math.isnan(r.pvalue)
    assert _pair(randomization_test([1.0, 2.0], [1.0, 2.0])) == (0.0, 1.0)


def test_randomization_exact_in_two_blocks() -> None:
    """randomization_test mutants 73 (every block's codes from 0) and 92 (the
    count of the last block only). d = 18 ones, enumerated: T = 18 and
    |18 − 2k| ≥ 18 only for k = 0 or 18 flipped signs: p = 2 / 2**18. The
    2**18 codes come in blocks of ⌊2**22 / 18⌋ = 233016: two blocks, the
    first holding code 0, the second code 2**18 − 1 (mutants: 3 / 2**18,
    1 / 2**18)."""
    assert randomization_test(np.ones(18), exact=True).pvalue == 2 / 2**18


def test_randomization_tolerance_is_relative_to_the_sum_of_sizes() -> None:
    """randomization_test mutant 29 and flip_counts mutant 9 (tolerance
    1e-9 / Σ|d| for 1e-9 · Σ|d|). d = (x, 5e-10): T = x + 5e-10; flipping x
    gives x − 5e-10 = T − 1e-9 (flipping both: T; flipping 5e-10 alone: T − 1e-9).

    - x = 10: the tolerance 1e-9 · 10 covers the gap 1e-9: all 4 sign vectors
      count, exact p = 1; Monte Carlo p = (1 + 50) / (1 + 50) = 1 (mutants:
      tolerance 1e-10, half of them);
    - x = 0.1: the tolerance 1e-10 does not: exact p = 2/4 (mutant 29:
      tolerance 1e-8, p = 1)."""
    assert randomization_test([10.0, 5e-10]).pvalue == 1.0
    assert randomization_test([10.0, 5e-10], n_resamples=50, exact=False).pvalue == 1.0
    assert randomization_test([0.1, 5e-10]).pvalue == 0.5


@pytest.mark.timeout(20)
def test_randomization_exact_enumeration_limits() -> None:
    """randomization_test mutants 39 (``n < 62``: with 2**62 resamples asked
    for 62 users the mutant draws them at random, forever, instead of refusing
    the enumeration), 45 (``n > 25``: 25 users enumerated) and 46 (the message
    ``None``). Enumeration is refused above 24 users."""
    with pytest.raises(
        ReceValError, match=r"^exact enumeration of 2\*\*62 sign vectors is too large$"
    ):
        randomization_test(np.ones(62), n_resamples=2**62)
    with pytest.raises(
        ReceValError, match=r"^exact enumeration of 2\*\*25 sign vectors is too large$"
    ):
        randomization_test(np.ones(25), exact=True)


def test_randomization_in_blocks() -> None:
    """flip_counts mutants 43 (the last block as long as the others) and 49
    (the count of the last block only). 1,500,000 users: sign vectors come in
    blocks of ⌊2**22 / n⌋ = 2, so 3 resamples are blocks of 2 and 1.
    d = (1, −1, 1, −1, ...): Σ d = 0, which every sign vector reaches:
    p = (1 + 3) / (1 + 3) = 1 (mutants: 5/4, 2/4)."""
    d = np.array([1.0, -1.0] * 750_000)
    assert randomization_test(d, n_resamples=3).pvalue == 1.0


# --- flip_counts ---------------------------------------------------------------


def test_flip_counts_per_column_with_65_users() -> None:
    """flip_counts mutants 4 (Σ d over every column for each column's T) and 11
    (the tolerance 1e-9 · Σ|d| over every column: ≈ 3e4 here, which the small
    column's sums, even integers apart, do not have), and _unpacked_signs
    mutant 5 (⌊(n + 63) / 65⌋ = 1 word for 65 users: user 65 never flipped and
    the stream shifted). Counted from the documented sign vectors (two 64-bit
    words a resample) in integer arithmetic."""
    j = np.arange(65)
    small = (j % 7 - 3) + np.where(j == 0, 9, 0)
    other = (j % 5 - 2) * 3 + np.where(j == 64, 7, 0)
    large = (j % 3 + 1) * 10_000_000_000
    d = np.column_stack([small, other, large])
    flips = _sign_bits(65, 300, np.random.default_rng(11))
    total = d.sum(axis=0)
    want = np.count_nonzero(np.abs(total - 2 * (flips @ d)) >= np.abs(total), axis=0)
    assert 20 < want[0] < 280 and 20 < want[1] < 280
    got = flip_counts(d.astype(np.float64), 300, np.random.default_rng(11))
    assert got.tolist() == want.tolist()


# --- _diff, _vector, _all_zero -------------------------------------------------


def test_paired_errors_name_a() -> None:
    """_diff mutants 3, 5, 6, 7 (a named ``None``, ``x``, ``XXaXX``, ``A`` in
    the messages of the paired tests)."""
    with pytest.raises(ReceValError, match=r"^a must be one-dimensional; got shape \(1, 2\)$"):
        paired_t_test([[1.0, 2.0]])
    with pytest.raises(ReceValError, match=r"^a must hold finite numbers"):
        randomization_test([1.0, math.inf], [1.0, 2.0])


def test_paired_differences_of_narrow_integers() -> None:
    """_vector mutants 5 and 7 (the values kept in their own dtype): uint8
    scores 0 and 1 differ by −1, not by 255 (uint8 wraps around). d = (−1, −1,
    −1): mean −1; T = 3 and |−3 + 2k| ≥ 3 only for k = 0 or 3 flipped signs:
    exact p = 2/8."""
    a, b = np.zeros(3, dtype=np.uint8), np.ones(3, dtype=np.uint8)
    assert _pair(randomization_test(a, b)) == (-1.0, 0.25)


def test_wilcoxon_of_zero_differences_warns_nothing() -> None:
    """_all_zero mutant 1 (never "all zero"): all differences zero would go to
    SciPy, whose normal approximation divides 0 by 0 (a RuntimeWarning on the
    host) for the same (0, 1). The convention: statistic 0, p = 1, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _pair(wilcoxon_test([0.5, 0.25, 0.0], [0.5, 0.25, 0.0])) == (0.0, 1.0)


# --- Moments.variance ----------------------------------------------------------


def test_variance_of_overflowing_or_infinite_values_is_nan() -> None:
    """Moments.variance mutants 4 (an overflowing Σd² alone no longer gives
    NaN) and 5 (an infinity in Σd alone no longer gives NaN). The squares of
    1e200 and 2e200 overflow a double (documented range ≈ 2**±480): the
    variance is NaN, not the 0 that the finite parts of the sums give; an
    infinite value makes it NaN too."""
    with np.errstate(over="ignore", invalid="ignore"):
        big = Moments.of(np.array([1e200, 2e200]))
        inf = Moments.of(np.array([math.inf, 1.0]))
    assert math.isnan(big.variance())
    assert math.isnan(inf.variance())


def test_huge_differences_warn_nothing() -> None:
    """Found while judging the ``Moments`` survivors: differences beyond about 1.3e154
    overflow the exact split of the squares, and NumPy's RuntimeWarnings reached the
    caller. The t statistic is NaN there (the documented exact range is about
    2**-480 to 2**480), without a warning."""
    from receval.analysis.stats import paired_t_test

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = paired_t_test([1e200, 3e200])
    assert math.isnan(res.statistic)
