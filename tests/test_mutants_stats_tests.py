"""Tests written to kill the mutants of ``receval.analysis.stats`` that survived
the full mutmut run of issue #37: the paired and unpaired tests (``run_test``,
``t_test_of``, ``welch_of``, ``welch_t_test``, ``wilcoxon_test``) and the
multiple-comparison corrections (``normalize_correction``, ``adjust_pvalues``).

Each test names the mutants it kills. Expected values come from SciPy, from
hand-worked arithmetic written in the docstring, or from NumPy's generator
drawn by the documented scheme, never from receval along another path.
See docs/mutation.md for the verdicts on the mutants left alive.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from receval.analysis.stats import (
    adjust_pvalues,
    paired_t_test,
    run_test,
    welch_t_test,
    wilcoxon_test,
)
from receval.errors import ReceValError


def _flip_count(d: np.ndarray, n_resamples: int, seed: int) -> int:
    """#{|Σ ± d| ≥ |Σ d|} over the sign vectors of the documented scheme: one
    uint64 draw per resample (n ≤ 64), its bits least significant first, 1 =
    flip. ``d`` holds integers, so the comparison is exact."""
    words = np.random.default_rng(seed).integers(
        0, 2**64 - 1, size=(n_resamples, 1), dtype=np.uint64, endpoint=True
    )
    flips = np.unpackbits(words.view(np.uint8), axis=1, count=d.size, bitorder="little")
    flipped = d.sum() - 2 * (flips.astype(np.int64) @ d)
    return int(np.count_nonzero(np.abs(flipped) >= abs(d.sum())))


# --- run_test: the dispatch ------------------------------------------------------


def test_run_test_t_pairs_a_with_b():
    """run_test mutants 9 (``paired_t_test(a, None)``) and 11
    (``paired_t_test(a, )``): b was dropped, a read as the differences.

    d = a − b = (1, 1, 3): mean 5/3, s² = (4/9 + 4/9 + 16/9) / 2 = 4/3,
    t = (5/3) / √(4/9) = 2.5; a alone (1, 2, 4) gives t = (7/3) / √(7/9) ≈ 2.65.
    Reference: scipy.stats.ttest_rel."""
    a, b = [1.0, 2.0, 4.0], [0.0, 1.0, 1.0]
    r = run_test("t", a, b)
    want = sps.ttest_rel(a, b)
    assert r.statistic == pytest.approx(2.5, rel=1e-12)
    assert r.statistic == pytest.approx(want.statistic, rel=1e-12)
    assert r.pvalue == pytest.approx(want.pvalue, rel=1e-12)


def test_run_test_randomization_pairs_a_with_b():
    """run_test mutants 20 (``randomization_test(a, None, …)``) and 24
    (``randomization_test(a, …)``): b was dropped.

    Exact (2**3 = 8 ≤ 10 000 sign vectors). d = a − b = (−1, 1, 3), T = |Σ d| = 3;
    the 8 sums ±1 ± 1 ± 3 are ±5, ±3, ±3, ±1: 6 reach 3, p = 6/8. a alone
    (1, 2, 4): T = 7, only ±7 reach it, p = 2/8."""
    r = run_test("randomization", [1.0, 2.0, 4.0], [2.0, 1.0, 1.0])
    assert (r.statistic, r.pvalue) == (1.0, 0.75)


def test_run_test_randomization_defaults():
    """run_test mutants 1 (default ``n_resamples=10001``) and 2 (default
    ``seed=1``): the public defaults are 10 000 resamples and seed 0.

    30 users (2**30 > 10 000: Monte Carlo), integer differences; the count of
    sign vectors reaching |Σ d| is worked from ``default_rng(0)`` by the
    documented scheme, and p = (1 + count) / (1 + 10 000). The reference shows
    that seed 1 gives another count."""
    j = np.arange(30)
    d = (j % 7) - 2  # Σ d = 25: about 4.5% of the sign vectors reach it
    a = d.astype(np.float64)
    b = np.zeros(30)
    count = _flip_count(d, 10_000, 0)
    assert count != _flip_count(d, 10_000, 1)
    r = run_test("randomization", a, b)
    assert r.pvalue == (1 + count) / (1 + 10_000)


# --- t_test_of (through paired_t_test) -----------------------------------------


def test_paired_t_test_of_two_users():
    """t_test_of mutants 1 (``n <= 2``) and 2 (``n < 3``): two users got NaN.

    d = (1, 3): mean 2, s = √2, t = 2 / (√2 / √2) = 2; with 1 degree of freedom
    T is Cauchy, p = 2 (1/2 − atan(2)/π) = 1 − 2 atan(2)/π ≈ 0.2952."""
    r = paired_t_test([1.0, 3.0], [0.0, 0.0])
    assert r.statistic == pytest.approx(2.0, rel=1e-12)
    assert r.pvalue == pytest.approx(1 - 2 * math.atan(2) / math.pi, rel=1e-12)
    want = sps.ttest_rel([1.0, 3.0], [0.0, 0.0])
    assert r.pvalue == pytest.approx(want.pvalue, rel=1e-12)


def test_paired_t_test_conventions():
    """t_test_of mutant 3 (statistic ``None`` for fewer than 2 users), 13 and
    17 (statistic ``None`` / 1.0 when every difference is zero): the
    documented conventions, NaN for fewer than 2 users, t = 0 and p = 1 for
    all differences zero."""
    for a, b in (([0.5], [0.25]), ([], [])):
        r = paired_t_test(a, b)
        assert math.isnan(r.statistic) and math.isnan(r.pvalue)
    r = paired_t_test([0.5, 0.25, 1.0], [0.5, 0.25, 1.0])
    assert (r.statistic, r.pvalue) == (0.0, 1.0)
    assert isinstance(r.statistic, float)


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # SciPy's, not ours
def test_paired_t_test_of_tiny_equal_differences():
    """t_test_of mutant 8 (``s1 == 0 or s2 == 0``: "every difference zero"
    when only Σ d² is zero). Three differences of 1e-300: Σ d = 3e-300 ≠ 0 but
    d² underflows, Σ d² = 0. Every difference is equal and not zero: t = +inf,
    p = 0 (the documented convention; scipy.stats.ttest_1samp agrees); the
    mutant gave t = 0, p = 1."""
    d = [1e-300, 1e-300, 1e-300]
    r = paired_t_test(d)
    want = sps.ttest_1samp(d, 0.0)
    assert (r.statistic, r.pvalue) == (math.inf, 0.0)
    assert (float(want.statistic), float(want.pvalue)) == (math.inf, 0.0)


# --- welch_of / welch_t_test -----------------------------------------------------


def test_welch_t_test_of_one_value_is_nan():
    """welch_of mutant 6 (statistic ``None`` with fewer than 2 values on a
    side): the documented NaN, on either side."""
    for a, b in (([1.0], [1.0, 2.0, 4.0]), ([1.0, 2.0], [])):
        r = welch_t_test(a, b)
        assert math.isnan(r.statistic) and math.isnan(r.pvalue)


def test_welch_t_test_errors_name_the_argument():
    """welch_t_test mutants 7, 9, 10, 11 (``_vector(a, None)``, ``_vector(a)``,
    ``"XXaXX"``, ``"A"``: the message named "None", "x", "XXaXX", "A") and
    14, 16, 17, 18 (the same for b)."""
    with pytest.raises(ReceValError, match=r"^a must be one-dimensional; got shape \(1, 2\)$"):
        welch_t_test([[1.0, 2.0]], [1.0, 2.0])
    finite = r" must hold finite numbers \(drop NaN users first\)$"
    with pytest.raises(ReceValError, match="^a" + finite):
        welch_t_test([1.0, math.inf], [1.0, 2.0])
    with pytest.raises(ReceValError, match=r"^b must be one-dimensional; got shape \(2, 1\)$"):
        welch_t_test([1.0, 2.0], [[1.0], [2.0]])
    with pytest.raises(ReceValError, match="^b" + finite):
        welch_t_test([1.0, 2.0], [1.0, math.nan])


# --- wilcoxon_test ----------------------------------------------------------------


def test_wilcoxon_test_conventions():
    """wilcoxon_test mutants 8 (statistic ``None`` for no user), 13 and 17
    (statistic ``None`` / 1.0 when every difference is zero): the documented
    NaN for no user, and W = 0 (no rank of either sign), p = 1 for all zero."""
    r = wilcoxon_test([], [])
    assert math.isnan(r.statistic) and math.isnan(r.pvalue)
    r = wilcoxon_test([0.5, 0.25, 0.125], [0.5, 0.25, 0.125])
    assert (r.statistic, r.pvalue) == (0.0, 1.0)
    assert isinstance(r.statistic, float)


# --- adjust_pvalues -----------------------------------------------------------------


def test_adjust_pvalues_messages():
    """adjust_pvalues mutants 12, 13, 14 (the one-dimensional message: None,
    "XX…XX", upper case) and 24, 25 (the [0, 1] message)."""
    with pytest.raises(ReceValError, match=r"^p-values must be one-dimensional$"):
        adjust_pvalues([[0.1, 0.2]])
    with pytest.raises(ReceValError, match=r"^p-values must lie in \[0, 1\]$"):
        adjust_pvalues([0.5, 1.5])


def test_adjust_pvalues_reads_floats():
    """adjust_pvalues mutants 7 and 9 (``np.asarray(pvalues)`` without
    ``dtype=float64``): a missing p-value given as ``None`` (an object array)
    made ``np.isnan`` raise a TypeError, and integer p-values came back as
    integers.

    Holm by hand, the NaN not counted (m = 2): sorted 0.01, 0.04 →
    min(1, 2 · 0.01) = 0.02, max(0.02, 1 · 0.04) = 0.04. The default method is
    Holm."""
    got = adjust_pvalues([0.01, None, 0.04])
    assert got.dtype == np.float64
    assert got[0] == pytest.approx(0.02, rel=1e-15) and got[2] == pytest.approx(0.04, rel=1e-15)
    assert math.isnan(got[1])
    for method in ("none", "holm", "bh"):
        out = adjust_pvalues([0, 1], method)
        assert out.dtype == np.float64, method
        assert out.tolist() == [0.0, 1.0]
