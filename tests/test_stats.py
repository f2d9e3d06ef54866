"""Statistics of receval.analysis.stats checked against SciPy, exact enumeration, known
coverage and hand-worked corrections."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import receval
from receval.analysis import stats
from receval.errors import ReceValError


def _pairs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, n)
    b = np.clip(a - 0.05 + rng.normal(0, 0.2, n), 0, 1)
    return a, b


# -- t-test and Wilcoxon against SciPy -------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", [5, 30, 400])
def test_t_test_matches_scipy(seed: int, n: int) -> None:
    a, b = _pairs(seed, n)
    ours = stats.paired_t_test(a, b)
    ref = sps.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    # b=None: a holds the differences.
    assert stats.paired_t_test(a - b).pvalue == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", [8, 40, 300])
def test_wilcoxon_matches_scipy(seed: int, n: int) -> None:
    a, b = _pairs(seed, n)
    b[:3] = a[:3]  # some zero differences, dropped by the wilcox convention
    ours = stats.wilcoxon_test(a, b)
    ref = sps.wilcoxon(a, b, zero_method="wilcox")
    assert ours.statistic == pytest.approx(ref.statistic)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-10)


def test_wilcoxon_with_ties_matches_scipy() -> None:
    a = np.array([0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 1.0, 0.5, 1.0, 1.0, 0.0, 0.5])
    b = np.array([0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5, 0.0, 0.0])
    ref = sps.wilcoxon(a, b)
    assert stats.wilcoxon_test(a, b).pvalue == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("fn", [stats.paired_t_test, stats.wilcoxon_test, stats.randomization_test])
def test_identical_systems_give_p_one(fn) -> None:  # type: ignore[no-untyped-def]
    a = np.array([0.1, 0.5, 0.9, 0.3])
    assert fn(a, a.copy()).pvalue == 1.0


def test_too_few_users_give_nan() -> None:
    assert math.isnan(stats.paired_t_test([1.0], [0.0]).pvalue)
    assert math.isnan(stats.wilcoxon_test([], []).pvalue)
    assert math.isnan(stats.randomization_test([], []).pvalue)
    assert math.isnan(stats.cohens_d([1.0], [0.0]))
    lo, hi = stats.bootstrap_ci([], [])
    assert math.isnan(lo) and math.isnan(hi)


def test_inputs_are_checked() -> None:
    with pytest.raises(ReceValError, match="same length"):
        stats.paired_t_test([1.0, 2.0], [1.0])
    with pytest.raises(ReceValError, match="finite"):
        stats.wilcoxon_test([1.0, math.nan], [1.0, 2.0])
    with pytest.raises(ReceValError, match="test='z' is not allowed: expected one of 't'"):
        stats.run_test("z", [1.0], [2.0])
    with pytest.raises(
        ReceValError, match="correction='sidak' is not allowed: expected one of 'holm'"
    ):
        stats.adjust_pvalues([0.1], "sidak")
    with pytest.raises(ReceValError, match="alpha"):
        stats.bootstrap_ci([1.0, 2.0], alpha=1.5)


# -- randomization test against exact enumeration ----------------------------------


def _exact_sign_flip_p(d: np.ndarray) -> float:
    """All 2**n sign vectors, written the slow and obvious way."""
    observed = abs(d.mean())
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=len(d)):
        if abs(np.mean(np.array(signs) * d)) >= observed - 1e-12:
            hits += 1
    return hits / 2 ** len(d)


@pytest.mark.parametrize("seed", range(6))
def test_randomization_exact_mode_equals_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 11))
    d = np.round(rng.normal(0.1, 0.3, n), 2)  # rounded: ties among |sums| happen
    expected = _exact_sign_flip_p(d)
    assert stats.randomization_test(d, exact=True).pvalue == pytest.approx(expected, abs=1e-15)
    # automatic: exact when 2**n <= n_resamples
    assert stats.randomization_test(d, n_resamples=2**n).pvalue == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(4))
def test_randomization_monte_carlo_agrees_with_enumeration(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    d = rng.normal(0.15, 0.4, 12)
    expected = _exact_sign_flip_p(d)
    b = 40_000
    got = stats.randomization_test(d, n_resamples=b, seed=seed, exact=False).pvalue
    se = math.sqrt(expected * (1 - expected) / b) + 1 / b
    assert abs(got - expected) < 5 * se


def test_randomization_is_reproducible_and_seed_dependent() -> None:
    a, b = _pairs(1, 200)
    p1 = stats.randomization_test(a, b, n_resamples=3000, seed=7).pvalue
    p2 = stats.randomization_test(a, b, n_resamples=3000, seed=7).pvalue
    p3 = stats.randomization_test(a, b, n_resamples=3000, seed=np.random.SeedSequence(7)).pvalue
    assert p1 == p2 == p3
    ps = {stats.randomization_test(a, b, n_resamples=500, seed=s).pvalue for s in range(8)}
    assert len(ps) > 1 or ps == {1 / 501}


def test_randomization_blocks_do_not_change_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _pairs(2, 300)
    a = a + np.random.default_rng(0).normal(0, 0.01, 300)
    ref = stats.randomization_test(a, b, n_resamples=2000, seed=5).pvalue
    ci = stats.bootstrap_ci(a, b, n_resamples=2000, seed=5, method="percentile")
    monkeypatch.setattr(stats, "_BLOCK_VALUES", 300 * 7)  # blocks of 7 resamples
    assert stats.randomization_test(a, b, n_resamples=2000, seed=5).pvalue == ref
    # the same resamples; their means are matrix products, whose last bits may
    # follow the block's shape (which depends only on the number of users)
    got = stats.bootstrap_ci(a, b, n_resamples=2000, seed=5, method="percentile")
    assert got == pytest.approx(ci, rel=1e-13)


def test_randomization_matches_scipy_permutation_test_roughly() -> None:
    a, b = _pairs(3, 60)
    ours = stats.randomization_test(a, b, n_resamples=20_000, seed=1).pvalue
    ref = sps.permutation_test(
        (a - b,),
        np.mean,
        permutation_type="samples",
        n_resamples=20_000,
        random_state=1,
    ).pvalue
    assert ours == pytest.approx(ref, abs=0.01)


# -- bootstrap ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_coverage_of_a_known_mean(method: str) -> None:
    """About 95% of 95% intervals contain the true mean (200 seeds)."""
    true_mean = 0.3
    covered = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        x = rng.normal(true_mean, 0.25, 60)
        lo, hi = stats.bootstrap_ci(x, method=method, n_resamples=1000, seed=seed)
        covered += lo <= true_mean <= hi
    assert 0.90 <= covered / 200 <= 0.99


def test_bca_coverage_on_skewed_data() -> None:
    covered = 0
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        x = rng.exponential(1.0, 50)  # mean 1
        lo, hi = stats.bootstrap_ci(x, method="bca", n_resamples=1000, seed=seed)
        covered += lo <= 1.0 <= hi
    assert 0.88 <= covered / 200 <= 0.99


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_agrees_with_scipy(method: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.exponential(0.4, 80)
    ours = stats.bootstrap_ci(x, method=method, n_resamples=20_000, seed=2)
    ref = sps.bootstrap(
        (x,), np.mean, method=method, n_resamples=20_000, random_state=2
    ).confidence_interval
    width = ref.high - ref.low
    assert ours[0] == pytest.approx(ref.low, abs=0.03 * width)
    assert ours[1] == pytest.approx(ref.high, abs=0.03 * width)


def test_bootstrap_paired_difference_is_interval_of_differences() -> None:
    a, b = _pairs(5, 100)
    assert stats.bootstrap_ci(a, b, seed=3, n_resamples=500) == stats.bootstrap_ci(
        a - b, seed=3, n_resamples=500
    )


def test_bootstrap_of_constant_values_is_a_point() -> None:
    assert stats.bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_bca_is_skewed_like_the_data() -> None:
    rng = np.random.default_rng(9)
    x = rng.exponential(1.0, 40)
    lo, hi = stats.bootstrap_ci(x, method="bca", seed=1)
    m = x.mean()
    assert hi - m > m - lo  # right-skewed data: longer upper arm


# -- effect size -------------------------------------------------------------------


def test_cohens_d_is_mean_over_sd_of_differences() -> None:
    a, b = _pairs(6, 50)
    d = a - b
    assert stats.cohens_d(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    assert stats.cohens_d([1.0, 2.0], [0.0, 1.0]) == math.inf
    assert stats.cohens_d([1.0, 2.0], [1.0, 2.0]) == 0.0


# -- corrections: hand-worked examples ---------------------------------------------


def test_bonferroni_hand_worked() -> None:
    p = [0.01, 0.02, 0.03, 0.04, 0.5]
    # m = 5: 5 p, capped at 1
    assert stats.adjust_pvalues(p, "bonferroni") == pytest.approx([0.05, 0.1, 0.15, 0.2, 1.0])


def test_holm_hand_worked() -> None:
    p = [0.04, 0.01, 0.03, 0.005]
    # sorted: .005 .01 .03 .04; factors 4 3 2 1 -> .02 .03 .06 .04; running max -> .02 .03 .06 .06
    assert stats.adjust_pvalues(p, "holm") == pytest.approx([0.06, 0.03, 0.06, 0.02])
    # significant at .05: the two smallest only (Holm stops at the first failure)
    assert (stats.adjust_pvalues(p, "holm") < 0.05).tolist() == [False, True, False, True]


def test_bh_hand_worked() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # sorted .005 .01 .03 .04 .2 -> m p / i: .025 .025 .05 .05 .2; running min from the top
    assert stats.adjust_pvalues(p, "bh") == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.2])
    p2 = [0.02, 0.03]  # 2·.02/1 = .04, 2·.03/2 = .03 -> min from top: .03 .03
    assert stats.adjust_pvalues(p2, "bh") == pytest.approx([0.03, 0.03])


def test_corrections_skip_nan_and_keep_order() -> None:
    p = [0.01, math.nan, 0.02]
    out = stats.adjust_pvalues(p, "bonferroni")
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)
    assert stats.adjust_pvalues(p, "none")[2] == 0.02
    assert stats.adjust_pvalues([], "holm").size == 0


@pytest.mark.parametrize("method", ["bonferroni", "holm", "bh"])
def test_corrections_are_monotone_and_never_below_raw(method: str) -> None:
    p = np.random.default_rng(0).uniform(0, 0.2, 30)
    adj = stats.adjust_pvalues(p, method)
    assert (adj >= p - 1e-15).all() and (adj <= 1).all()
    order = np.argsort(p)
    assert (np.diff(adj[order]) >= -1e-15).all()


@pytest.mark.parametrize("seed", range(5))
def test_welch_t_test_matches_scipy(seed: int) -> None:
    from receval.analysis.stats import Moments, welch_of, welch_t_test

    rng = np.random.default_rng(seed)
    a = rng.normal(0.3, rng.uniform(0.1, 2), int(rng.integers(2, 60)))
    b = rng.normal(0.1, rng.uniform(0.1, 2), int(rng.integers(2, 60)))
    ref = sps.ttest_ind(a, b, equal_var=False)
    got = welch_t_test(a, b)
    assert got.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    _, df = welch_of(Moments.of(a), Moments.of(b))
    assert df == pytest.approx(ref.df, rel=1e-12)


def test_welch_conventions() -> None:
    from receval.analysis.stats import welch_t_test

    assert np.isnan(welch_t_test([1.0], [1.0, 2.0]).pvalue)
    same, apart = welch_t_test([1.0, 1.0], [1.0, 1.0]), welch_t_test([2.0, 2.0], [1.0, 1.0])
    assert (same.statistic, same.pvalue) == (0.0, 1.0)
    assert (apart.statistic, apart.pvalue) == (math.inf, 0.0)


def test_permutation_test_against_enumeration() -> None:
    """Small samples: the Monte Carlo p-value is the exact one (every relabelling
    enumerated) within sampling error; one seed, one p-value."""
    from receval.analysis.stats import permutation_test

    a = np.array([0.9, 0.7, 0.8, 0.4, 0.95])
    b = np.array([0.3, 0.5, 0.1, 0.6])
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    hits = total = 0
    for pick in itertools.combinations(range(len(pooled)), len(a)):
        mask = np.zeros(len(pooled), dtype=bool)
        mask[list(pick)] = True
        stat = abs(pooled[mask].mean() - pooled[~mask].mean())
        hits += stat >= observed - 1e-12
        total += 1
    exact = hits / total
    got = permutation_test(a, b, n_resamples=40_000, seed=3)
    assert got.statistic == pytest.approx(a.mean() - b.mean(), rel=1e-15)
    assert abs(got.pvalue - exact) < 4 * math.sqrt(exact * (1 - exact) / 40_000) + 1e-4
    assert permutation_test(a, b, n_resamples=500, seed=3) == permutation_test(
        a, b, n_resamples=500, seed=3
    )
    assert permutation_test([1.0, 1.0], [1.0], n_resamples=10).pvalue == 1.0
    assert np.isnan(permutation_test([], [1.0]).pvalue)


# --- the randomised Tukey HSD test (#21: many systems) ------------------------


def _tukey_literal(x: np.ndarray) -> np.ndarray:
    """Every assignment of a permutation of the systems to every user, one at a
    time: p = #{range of the column sums >= |S_i - S_j|} / (m!)^n."""
    import itertools

    n, m = x.shape
    sums = x.sum(axis=0)
    count = np.zeros((m, m))
    total = 0
    for choice in itertools.product(itertools.permutations(range(m)), repeat=n):
        s = [sum(x[j][choice[j][i]] for j in range(n)) for i in range(m)]
        r = max(s) - min(s)
        total += 1
        for i in range(m):
            for k in range(m):
                if r >= abs(sums[i] - sums[k]) - 1e-9:
                    count[i, k] += 1
    p = count / total
    np.fill_diagonal(p, 1.0)
    return p


@pytest.mark.parametrize("seed", range(6))
def test_tukey_hsd_exact_is_the_literal_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 4)), int(rng.integers(2, 4))
    x = rng.integers(0, 4, (n, m)).astype(float) / 3
    got = stats.tukey_hsd(x, n_resamples=10**6)  # (m!)^n <= 10^6: exact
    np.testing.assert_allclose(got, _tukey_literal(x), rtol=0, atol=1e-12)
    assert np.allclose(got, got.T)


def test_tukey_hsd_monte_carlo_agrees_with_the_exact_test() -> None:
    rng = np.random.default_rng(7)
    x = rng.random((5, 3)) + np.array([0.0, 0.3, 0.6])
    exact = stats.tukey_hsd(x, exact=True)
    b = 40_000
    mc = stats.tukey_hsd(x, n_resamples=b, seed=3, exact=False)
    se = np.sqrt(exact * (1 - exact) / b) + 1 / b
    assert (np.abs(mc - exact) <= 5 * se).all(), (mc, exact)
    # seeded: one seed, one answer
    again = stats.tukey_hsd(x, n_resamples=b, seed=3, exact=False)
    np.testing.assert_array_equal(mc, again)


def test_tukey_hsd_edge_cases_and_its_two_system_case() -> None:
    assert np.isnan(stats.tukey_hsd(np.empty((0, 3)))).all()
    same = np.tile(np.array([[0.5, 0.5, 0.5]]), (30, 1))
    assert (stats.tukey_hsd(same, n_resamples=999) == 1.0).all()
    # two systems: the range of the permuted sums is |Σ ± d|: the randomization test
    rng = np.random.default_rng(1)
    x = rng.random((8, 2))
    p = stats.tukey_hsd(x, exact=True)[0, 1]
    assert p == stats.randomization_test(x[:, 0], x[:, 1], exact=True).pvalue
    # more systems than enumerable permutations: argsort of random keys
    wide = rng.random((6, 8))
    p = stats.tukey_hsd(wide, n_resamples=200, seed=0)
    assert p.shape == (8, 8) and ((p > 0) & (p <= 1)).all()


def test_tukey_hsd_controls_the_family_wise_error() -> None:
    """Under the null (exchangeable systems), the chance that any pair is
    called significant at 0.05 stays near 0.05 (pairwise tests would not)."""
    rng = np.random.default_rng(11)
    false = 0
    trials = 200
    for _ in range(trials):
        x = rng.random((12, 5))
        p = stats.tukey_hsd(x, n_resamples=199, seed=rng)
        false += bool((p[np.triu_indices(5, 1)] < 0.05).any())
    assert false / trials < 0.1


# --- omnibus tests of three systems or more (#21) ----------------------------


def _anova_literal(x: list[list[float]]) -> tuple[float, float]:
    """Repeated-measures one-way ANOVA written out: sums of squares in loops."""
    n, m = len(x), len(x[0])
    grand = sum(sum(row) for row in x) / (n * m)
    col = [sum(x[j][i] for j in range(n)) / n for i in range(m)]
    row = [sum(r) / m for r in x]
    ss_total = sum((x[j][i] - grand) ** 2 for j in range(n) for i in range(m))
    ss_sys = n * sum((c - grand) ** 2 for c in col)
    ss_users = m * sum((r - grand) ** 2 for r in row)
    ss_err = ss_total - ss_sys - ss_users
    f = (ss_sys / (m - 1)) / (ss_err / ((m - 1) * (n - 1)))
    return f, float(sps.f.sf(f, m - 1, (m - 1) * (n - 1)))


@pytest.mark.parametrize("seed", range(5))
def test_repeated_measures_anova(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random((int(rng.integers(3, 30)), int(rng.integers(2, 6))))
    f, df1, df2, p = stats.repeated_measures_anova(x)
    want_f, want_p = _anova_literal(x.tolist())
    assert f == pytest.approx(want_f, rel=1e-10) and p == pytest.approx(want_p, rel=1e-8)
    assert (df1, df2) == (x.shape[1] - 1, (x.shape[1] - 1) * (x.shape[0] - 1))
    # two systems: F is the paired t statistic squared, with the same p-value
    t = sps.ttest_rel(x[:, 0], x[:, 1])
    f2, _, _, p2 = stats.repeated_measures_anova(x[:, :2])
    assert f2 == pytest.approx(t.statistic**2, rel=1e-9) and p2 == pytest.approx(t.pvalue, 1e-8)


def test_omnibus_edge_cases_and_friedman_is_scipys() -> None:
    assert math.isnan(stats.repeated_measures_anova(np.ones((1, 3)))[0])
    f, _, _, p = stats.repeated_measures_anova(np.ones((5, 3)))
    assert math.isnan(f) and p == 1.0
    f, _, _, p = stats.repeated_measures_anova(np.tile([0.0, 1.0, 2.0], (5, 1)))
    assert f == math.inf and p == 0.0
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (20, 4)).astype(float)  # ties
    want = sps.friedmanchisquare(*x.T)
    got = stats.friedman_test(x)
    assert (got.statistic, got.pvalue) == (want.statistic, want.pvalue)
    assert math.isnan(stats.friedman_test(x[:, :2]).pvalue)
    assert stats.friedman_test(np.ones((4, 3))).pvalue == 1.0


# --- power: users needed (#21) -------------------------------------------------


@pytest.mark.parametrize(("d", "users"), [(0.2, 199), (0.5, 34), (0.8, 15)])
def test_power_gives_g_power_sample_sizes(d: float, users: int) -> None:
    """G*Power 3 (Faul et al. 2007), t tests, matched pairs, two tails,
    α = 0.05, power 0.80: effect size dz 0.2, 0.5, 0.8 need 199, 34, 15 pairs."""
    x = np.random.default_rng(0).standard_normal(5000)
    x = (x - x.mean()) / x.std(ddof=1) + d  # a pilot with dz = d exactly
    got = stats.power(x)
    assert got.d == pytest.approx(d, rel=1e-9)
    assert got.users == users
    assert got.power >= 0.8 > stats.t_test_power(d, users - 1)


def test_t_test_power_agrees_with_simulation() -> None:
    rng = np.random.default_rng(3)
    n, d, trials = 20, 0.5, 4000
    x = rng.standard_normal((trials, n)) + d
    t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / np.sqrt(n))
    rejected = (np.abs(t) > sps.t.ppf(0.975, n - 1)).mean()
    want = stats.t_test_power(d, n)
    assert abs(rejected - want) < 4 * math.sqrt(want * (1 - want) / trials)


def test_t_test_power_on_a_grid_agrees_with_simulation_and_is_never_nan() -> None:
    """Issue #34 point 7: the power over a grid of effects and users, where
    SciPy's lower tail used to be NaN (large d, few users) and where the power
    is ≈ 1 (d = 0.5 with 400 users, 1.5 with 50, 2 with 122), against a
    simulation of the test itself; and never NaN on a wide grid."""
    rng = np.random.default_rng(34)
    trials = 4000
    for d in (0.2, 0.5, 1.0, 2.0, 3.0, 6.0):
        for n in (2, 3, 5, 10, 40):
            x = rng.standard_normal((trials, n)) + d
            t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / np.sqrt(n))
            rejected = (np.abs(t) > sps.t.ppf(0.975, n - 1)).mean()
            want = stats.t_test_power(d, n)
            spread = math.sqrt(max(want * (1 - want), 1e-4) / trials)
            assert abs(rejected - want) < 5 * spread, (d, n, rejected, want)
    for d, n in [(0.5, 400), (1.5, 50), (2.0, 122), (6.0, 2), (10.0, 3), (100.0, 2)]:
        assert 0.49 < stats.t_test_power(d, n) <= 1.0, (d, n)
    for d in np.logspace(-6, 3, 19):
        for n in (2, 3, 7, 30, 1000, 10**6, 10**9):
            p = stats.t_test_power(float(d), n)
            assert 0.0 <= p <= 1.0, (d, n, p)  # never NaN


def test_power_where_scipy_gives_nan_comes_from_the_definition() -> None:
    """SciPy's ``nct.sf`` is NaN beyond a noncentrality of about 1e9 (a pilot
    whose differences hardly vary): the power then comes from the integral of
    the definition, which agrees with SciPy where SciPy is finite, and the
    search never takes a NaN for enough power (it answered 2 users, power NaN)."""
    from scipy import stats as sps

    from receval.analysis.stats import _nct_sf

    assert math.isnan(sps.nct.sf(12.7, 1, 1e10))  # SciPy's own answer there
    for df in (1, 2, 5, 30):
        for ncp in (-8.0, -2.0, 0.0, 0.5, 3.0, 8.5, 20.0):
            for t in (0.5, 2.0, 12.7):
                assert _nct_sf(t, df, ncp) == float(sps.nct.sf(t, df, ncp))
    for d in (1e10, 1e100, 1e300):
        for n in (2, 3, 50):
            assert 1 - 1e-10 < stats.t_test_power(d, n) <= 1.0
    got = stats.power([1.0, 1.0 + 1e-15, 1.0 + 2e-15])  # d ≈ 1e15
    assert got.users == 2 and 1 - 1e-10 < got.power <= 1.0


def test_power_inputs_and_errors() -> None:
    a = pd.Series([0.5, 0.7, 0.2, 0.9, 0.4], index=[1, 2, 3, 4, 5])
    b = pd.Series([0.3, 0.6, 0.1, 0.5, 0.4, 0.8], index=[5, 4, 3, 2, 1, 9])
    joined = stats.power(a, b)  # aligned by user; user 9 left out
    diff = a - b.reindex(a.index)
    assert joined == stats.power(diff.to_numpy())
    assert stats.power(diff.to_numpy(), effect=0.1).users > joined.users
    assert stats.power(np.full(4, 0.2)).users == 2  # no variance
    assert receval.power is stats.power
    with pytest.raises(receval.ReceValError, match="2 users or more"):
        stats.power([0.3])
    with pytest.raises(receval.OptionError, match="effect"):
        stats.power([0.1, -0.1])
    with pytest.raises(receval.OptionError, match="power"):
        stats.power([0.1, 0.3], power=1.0)
    tiny = stats.power([0.001, -0.001, 0.0015], max_users=20)  # needs 57
    assert tiny.users is None and tiny.power < 0.8
