"""Tests written to kill the mutants of the bootstrap intervals of
``receval/analysis/stats.py`` (``bootstrap_ci``, ``interval_of``,
``quantile_interval``, ``effect_size_interval``, ``bootstrap_means``) that
survived the full mutation run of the module (issue #37; docs/mutation.md).

Each test names the mutants it kills. Expected values come from a literal
bootstrap written here (the documented resampling scheme: ``n`` users drawn
with replacement by ``np.random.default_rng(seed).integers(0, n, size=(m, n))``
in blocks of ``m = max(1, min(B, 2**22 // n))`` resamples) and Efron's
percentile / BCa formulas as the docstring of ``bootstrap_ci`` states them, or
are worked by hand — never computed by receval along another path.

Data are integers over a unit, ``x = k / per``: ties of a resampled mean with
the observed mean are counted on the integer sums (exact arithmetic), which is
what the documented tolerance (``1e-9 · mean|x|``) stands for.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import receval
from receval.analysis import stats
from receval.errors import ReceValError


def _draws(k: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Per resample, the indices of the n users drawn (resamples × n), block by block."""
    n = len(k)
    rng = np.random.default_rng(seed)
    rows = max(1, min(n_resamples, (1 << 22) // n))  # resamples per block (_block_rows)
    blocks = []
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        blocks.append(rng.integers(0, n, size=(m, n)))
    return np.concatenate(blocks)


def _reference(
    k: list[int],
    per: float,
    *,
    alpha: float = 0.05,
    method: str = "bca",
    n_resamples: int = 200,
    seed: int = 0,
    acc: float | None = None,
) -> tuple[float, float]:
    """The bootstrap interval of the mean of ``x = k / per`` by the definition.

    θ*_r = Σ x[idx_r] / n; percentile: [q(α/2), q(1 − α/2)] (linear
    interpolation, ``np.quantile``); BCa: z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B)
    with the comparisons made on the integer sums of ``k``; a from the
    jackknife means θ_(i) (the mean of x without user i) and θ_(·) their mean,
    a = Σ(θ_(·) − θ_(i))³ / (6 [Σ(θ_(·) − θ_(i))²]^{3/2}); α_j = Φ(z0 + (z0 + z_j)
    / (1 − a (z0 + z_j))); z0 infinite (every θ* on one side): percentile.
    """
    ki = np.asarray(k, dtype=np.int64)
    x = ki / per
    n = len(ki)
    idx = _draws(ki, n_resamples, seed)
    means = x[idx].sum(axis=1) / n
    if method == "percentile":
        lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
        return (float(lo), float(hi))
    sums, total = ki[idx].sum(axis=1), ki.sum()  # n · θ* and n · θ̂ in units of 1/per: exact
    below = 2 * np.count_nonzero(sums < total) + np.count_nonzero(sums == total)
    z0 = float(special.ndtri(below / (2.0 * n_resamples)))
    if acc is None:
        jack = np.array([np.delete(x, i).mean() for i in range(n)])
        dev = jack.mean() - jack
        acc = float(np.sum(dev**3) / (6.0 * np.sum(dev**2) ** 1.5))
    if not math.isfinite(z0):
        z0, acc = 0.0, 0.0
    ps = []
    for z in (special.ndtri(alpha / 2), special.ndtri(1 - alpha / 2)):
        s = z0 + z
        ps.append(float(special.ndtr(z0 + s / (1 - acc * s))))
    lo, hi = np.quantile(means, ps)
    return (float(lo), float(hi))


# eighths: every sum of resampled values is exact, so the real code and the
# reference round the same numbers the same way (bit-equal intervals)
_EIGHTHS = [
    # interval_of 20 (first set), 22 (first two): jackknife means scaled by
    # (n - 1)² or (n - 1)/(n + 1), the same acceleration in exact arithmetic,
    # other last bits of the BCa ends here; 27, 44; quantile_interval 15, 18
    # (exact ties with θ̂)
    [2, 5, 4, 8, -5, 6],
    [6, 5, 8, -3, 7, 7, -5],
    # max − min = 1 and max + min = 0: bootstrap_ci 28 and 30 skipped the draw
    [-4, 1, 2, 4, 3, -1],
]


@pytest.mark.parametrize("k", _EIGHTHS)
@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_ci_equals_a_literal_bootstrap(k, method):
    """``bootstrap_ci`` of ``k / 8`` is bit-equal to the literal bootstrap
    (B = 200, seed 5).

    Kills ``interval_of`` 20, 22 (a scaled acceleration: equal in exact
    arithmetic, but the last bits of the BCa ends move: 20 on the first data
    set, 22 on the first two; the reference's leave-one-out means of eighths
    are one rounding of an exact sum, as the real code's), 27
    (``jack.mean() + jack``), 44 (``7.0 * den``); ``quantile_interval`` 15 and
    18 (a resample mean equal to θ̂ counted twice / not at all);
    ``bootstrap_ci`` 28 (``max + min == 0``) and 30 (``max - min == 1``), which
    treat the third data set as constant and interval empty means.
    """
    x = np.asarray(k) / 8
    got = stats.bootstrap_ci(x, method=method, n_resamples=200, seed=5)
    assert got == _reference(k, 8, method=method, seed=5)


def test_bootstrap_ci_public_defaults():
    """The documented defaults ``n_resamples=10_000``, ``seed=0`` and
    ``method="bca"``: bit-equal to the literal BCa bootstrap with B = 10 000
    drawn from ``default_rng(0)`` (one block: 10 000 ≤ 2**22 // 20), for 20
    values k / 1024 (exact sums; resampled means nearly all distinct, so a
    quantile moves with one resample more).

    Kills ``bootstrap_ci`` 4 (10 001 resamples) and 5 (seed 1)."""
    k = [-127, -133, 736, 349, 467, 481, 625, -263, 331, -108]
    k += [221, 906, 412, -209, 405, -132, 680, 932, 973, 508]
    assert stats.bootstrap_ci(np.asarray(k) / 1024) == _reference(k, 1024, n_resamples=10_000)


def test_bootstrap_ci_paired_and_decimal_ties_counted_within_tolerance():
    """Tenths ``a - b``: resampled means equal to θ̂ in exact (decimal)
    arithmetic differ from it by rounding noise; they count as equal.
    k = (3, 8, 5, 4, 4, 6) (θ̂ = 0.5), B = 200, seed 0: the reference counts
    ties on the integer sums, the real code within 1e-9 · mean|x|.

    Kills ``interval_of`` 57 (no tolerance: ties split by rounding noise,
    both ends move by ~0.01)."""
    k = [3, 8, 5, 4, 4, 6]
    a = np.asarray(k) / 10 + 0.25
    b = np.full(len(k), 0.25)
    got = stats.bootstrap_ci(a, b, n_resamples=200, seed=0)
    assert got == pytest.approx(_reference(k, 10), rel=1e-12)
    assert stats.bootstrap_ci(np.asarray(k) / 10, n_resamples=200, seed=0) == pytest.approx(
        _reference(k, 10), rel=1e-12
    )


def test_bootstrap_ci_tolerance_is_relative_to_the_values():
    """Values ``k · 2**-20`` (mean|x| ≈ 5e-6): the tolerance 1e-9 · mean|x| is
    about 5e-15, far below the spacing of the resampled means (2**-20 / 6 ≈
    1.6e-7). Bit-equal to the literal BCa bootstrap (B = 200, seed 5).

    Kills ``interval_of`` 58 (tolerance 1e-9 / mean|x| ≈ 2e-4: every mean
    counts as equal to θ̂, z0 = 0) and 59 (1.000000001 · mean|x|: the same)."""
    k = [2, 5, 4, 8, -5, 6]
    got = stats.bootstrap_ci(np.asarray(k) / 2.0**20, n_resamples=200, seed=5)
    assert got == _reference(k, 2.0**20, seed=5)


def test_bootstrap_ci_of_tiny_symmetric_values():
    """Values ``k · 2**-600`` with k = (−3, −1, 0, 1, 3): the squared
    jackknife deviations (≈ 2**-1200) underflow to 0, so the denominator of
    the acceleration is 0; for symmetric data a = 0 in exact arithmetic
    (Σ(θ_(·) − θ_(i))³ = 0), and the interval is BCa with a = 0 — bit-equal to
    the literal bootstrap with a = 0 (B = 200, seed 1).

    Kills ``interval_of`` 37 and 45 (``den > 0`` dropped / ``den >= 0``:
    0.0 / 0.0, a ZeroDivisionError) and 47 (a = 1 when den = 0)."""
    k = [-3, -1, 0, 1, 3]
    for method in ("bca", "percentile"):
        got = stats.bootstrap_ci(np.asarray(k) / 2.0**600, method=method, n_resamples=200, seed=1)
        assert got == _reference(k, 2.0**600, method=method, seed=1, acc=0.0)
        assert got[0] < 0.0 < got[1]


def test_bootstrap_ci_one_resample():
    """``n_resamples=1`` is a positive integer: allowed. Percentile of one
    mean m is (m, m), with m the mean of the one resample drawn.

    Kills ``bootstrap_ci`` 21 (``n_resamples <= 1``) and 22 (``< 2``)."""
    k = [2, 5, 4, 8, -5, 6]
    (idx,) = _draws(np.asarray(k), 1, 7)
    m = sum(k[i] for i in idx) / 8 / 6
    got = stats.bootstrap_ci(np.asarray(k) / 8, method="percentile", n_resamples=1, seed=7)
    assert got == (m, m)  # Σ k / 8 exact, one rounding of / 6 either way
    lo, hi = stats.bootstrap_ci(np.asarray(k) / 8, n_resamples=1, seed=7)  # BCa: finite
    assert math.isfinite(lo) and lo == hi


def test_bootstrap_ci_rejections_name_the_argument():
    """Exact messages for α = 0 and α = 1 (outside (0, 1)), an unknown method
    and ``n_resamples=0``.

    Kills ``bootstrap_ci`` 13 (``0 <= alpha``: α = 0 accepted), 14
    (``alpha <= 1``: α = 1 accepted), 18, 19, 20 (the method message: None /
    a TypeError / ``bcaXX, XXpercentile``), 23 (the n_resamples message: None)."""
    x = [0.1, 0.5, 0.2]
    with pytest.raises(ReceValError, match=r"^alpha must be in \(0, 1\); got 0$"):
        stats.bootstrap_ci(x, alpha=0)
    with pytest.raises(ReceValError, match=r"^alpha must be in \(0, 1\); got 1\.0$"):
        stats.bootstrap_ci(x, alpha=1.0)
    with pytest.raises(ReceValError, match=r"^method must be one of bca, percentile; got 'BCa'$"):
        stats.bootstrap_ci(x, method="BCa")  # type: ignore[arg-type]
    with pytest.raises(ReceValError, match=r"^n_resamples must be a positive integer; got 0$"):
        stats.bootstrap_ci(x, n_resamples=0)


def test_quantile_interval_by_hand():
    """``quantile_interval`` on means 1, 2, …, 10 (q(p) = 1 + 9p, linear
    interpolation), α = 0.5 (z_1 = −z_2 = Φ⁻¹(0.25) ≈ −0.6745):

    - θ = 5, tol = 0: #{< 5} = 4, #{≤ 5} = 5: z0 = Φ⁻¹(9/20); a = 0 (the
      default): α_j = Φ(2 z0 + z_j). ``quantile_interval`` 1 (default a = 1),
      14 (``<= theta - tol``: 10/20) and 17 (``< theta + tol``: 8/20) move it.
    - θ = 5.25, tol = 0.5: 5 is within tol of θ, so counts as equal: again 9/20.
      Mutants 15 (``< theta + tol``: 10/20) and 18 (``<= theta - tol``: 8/20).
    - θ = 5, tol = 0, a = 0.1: α_j = Φ(z0 + s / (1 − 0.1 s)), s = z0 + z_j.
      Mutant 42 (``acc / s``).
    - no θ: the percentile interval [q(0.25), q(0.75)] = [3.25, 7.75].
    """
    means = np.arange(1.0, 11.0)

    def bca(z0: float, a: float) -> list[float]:
        z = special.ndtri(0.25)
        return [1 + 9 * float(special.ndtr(z0 + s / (1 - a * s))) for s in (z0 + z, z0 - z)]

    z0 = float(special.ndtri(9 / 20))
    assert list(stats.quantile_interval(means, 0.5, 5.0)) == pytest.approx(bca(z0, 0.0), rel=1e-12)
    assert list(stats.quantile_interval(means, 0.5, 5.25, tol=0.5)) == pytest.approx(
        bca(z0, 0.0), rel=1e-12
    )
    assert list(stats.quantile_interval(means, 0.5, 5.0, 0.1)) == pytest.approx(
        bca(z0, 0.1), rel=1e-12
    )
    assert stats.quantile_interval(means, 0.5) == (3.25, 7.75)


def test_effect_size_interval_of_two_users_by_hand():
    """n = 2 users: per resample var = (m₂ − m²) · 2/1, d* = m / √var.

    - values (1, 3): m = 2, m₂ = 5, var = 2, d* = √2;
    - values (−1, 3): m = 1, m₂ = 5, var = 8, d* = 1/(2√2) = √2/4;
    - values (1, 1) and (3, 3): var = 0, left out.

    α = 0.5: [q(0.25), q(0.75)] of (√2/4, √2) = √2/4 + (0.25, 0.75) · (3√2/4).
    Kills ``effect_size_interval`` 2 (``n <= 2``) and 3 (``n < 3``): NaN."""
    means = np.array([2.0, 1.0, 1.0, 3.0])
    squares = np.array([5.0, 5.0, 1.0, 9.0])
    r = math.sqrt(2)
    expected = (r / 4 + 0.25 * 3 * r / 4, r / 4 + 0.75 * 3 * r / 4)
    assert stats.effect_size_interval(means, squares, 2, 0.5) == pytest.approx(expected, rel=1e-12)


def test_effect_size_interval_of_one_user_is_nan():
    """One user: no standard deviation, so no effect size: (nan, nan), directly
    and in ``compare`` (1 user, 2 systems, ci on).

    Kills ``effect_size_interval`` 1 (``n < 2 and not len(means)``: one user
    with resamples went on to n / (n − 1), a ZeroDivisionError)."""
    lo, hi = stats.effect_size_interval(np.array([0.5, 0.5]), np.array([0.25, 0.25]), 1, 0.05)
    assert math.isnan(lo) and math.isnan(hi)
    runs = {"A": {1: [10, 11]}, "B": {1: [11, 10]}}
    pairs = receval.compare(runs, {1: [10]}, "ndcg@2", n_resamples=50).pairs
    assert pairs["effect_ci_low"].isna().all() and pairs["effect_ci_high"].isna().all()


def test_effect_size_interval_variance_at_the_threshold_is_none():
    """A resample "without variance" is one whose variance is at most 1e-12 of
    its mean square (rounding noise of a constant resample). n = 2, t = 3002 ·
    2**-52, m₂ = 0x1.5549b2f3b4p-1 and m = 0x1.a204b71047ff7p-1 (found by a
    search, checked below): fl(m²) = m₂ − t/2 exactly, so var = (m₂ − m²) · 2 = t
    = fl(1e-12 · m₂): on the threshold, left out, no resample left, (nan, nan).
    With m₂ one step of 2**-41 larger, var = t + 2**-40 > the threshold and
    d* = m / √var.

    Kills ``effect_size_interval`` 14 (``var >= …``: d* = m / √t)."""
    t = 3002 * 2.0**-52
    m, m2 = float.fromhex("0x1.a204b71047ff7p-1"), float.fromhex("0x1.5549b2f3b4p-1")
    assert m * m == m2 - t / 2 and (m2 - m * m) * 2.0 == t == 1e-12 * m2  # the case holds
    lo, hi = stats.effect_size_interval(np.array([m]), np.array([m2]), 2, 0.05)
    assert math.isnan(lo) and math.isnan(hi)
    up = m2 + 2.0**-41
    d = m / math.sqrt((up - m * m) * 2.0)
    assert stats.effect_size_interval(np.array([m]), np.array([up]), 2, 0.05) == pytest.approx(
        (d, d), rel=1e-12
    )


def test_bootstrap_ci_bca_is_free_of_the_scale() -> None:
    """A bug found while judging ``interval_of``'s survivors: the acceleration's
    (Σ dev²)^1.5 overflowed (an OverflowError) for values beyond ~1e103 and its terms
    underflowed to 0 below ~1e-105 (a = 0: a wrong interval). The BCa interval of
    x · 2**e is the interval of x times 2**e (a is free of scale; a power of 2 is exact)."""
    k = np.array([0.0, 1, 3, 10, 2, 0, 1])
    base = stats.bootstrap_ci(k, n_resamples=200, seed=0)
    for e in (-400, 350):
        got = stats.bootstrap_ci(k * 2.0**e, n_resamples=200, seed=0)
        assert got == pytest.approx(tuple(v * 2.0**e for v in base), rel=1e-12)
