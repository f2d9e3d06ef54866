"""Tests written to kill the mutants that survived the third mutation sample
(``benchmarks/mutation.py --sample 50 --seed 3``; see docs/mutation.md).

Each test names the mutants it kills. Expected values are worked by hand from
the module's rule (or drawn from NumPy's generator by the documented scheme),
never computed by receval along another path.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import InputError, MetricError, ReceValError

# --- receval.metrics.kernels.corrected -----------------------------------------


def test_rank_estimate_per_user_by_hand():
    """``recall@50[correction=rank]``, N = 100: R̂(r) = 1 + ⌊99 (r − 1) / m⌋,
    the estimate is [R̂ ≤ 50] (module docstring of sampled.py).

    - user 1: m = 1, r = 1: R̂ = 1 → 1 (estimate mutant 21, ``m <= 1``
      skipped every user with one negative: 0);
    - user 2: m = 1, r = 2: R̂ = 100 → 0 (mutant 26, the table without its
      cut-off: 1);
    - user 3: m = 2, r = 2: R̂ = 50 → 1;
    - user 4: m = 2, r = 3: R̂ = 100 → 0 (mutant 26: 1; mutant 39,
      ``at = None``, looks every user's rank up in every table: rank 3 in the
      m = 1 table, of 3 entries, an IndexError);
    - user 5: its held-out item is not listed → NaN; being the last user with
      no listed relevant item, it also kills mutant 52 (``np.bincount``
      without ``minlength``: one value short, a broadcast error).
    """
    recs = {1: [10, 11], 2: [21, 20], 3: [31, 30, 32], 4: [41, 42, 40], 5: [50, 51]}
    truth = {1: [10], 2: [20], 3: [30], 4: [40], 5: [59]}
    metric = "recall@50[correction=rank]"
    values = receval.evaluate(recs, truth, metric, catalog_size=100).per_user[metric]
    assert values[[1, 2, 3, 4]].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert math.isnan(values[5])


def test_estimate_without_catalog_size_names_it():
    """corrected.estimate mutant 3 (``MetricError(None)``): called without a
    catalog size, the kernel says which option is missing."""
    from receval.metrics.kernels.batch import Batch, Cells
    from receval.metrics.kernels.corrected import estimate

    b = Batch(
        Cells.from_dense(np.array([[1.0, 0.0]])),
        Cells.from_dense(np.array([[1.0]])),
        n=np.array([2]),
        n_relevant=np.array([1]),
    )
    with pytest.raises(MetricError, match=r"^correction=rank needs catalog_size=$"):
        estimate(b, 1, "hit_rate", "rank", 0.1)


def test_range_notes_bounds_order_and_text():
    """corrected.range_notes mutants 25 (``value < high``: 1.0 got a note),
    26 (``break``: an in-range estimate stopped the notes of the next ones),
    30 and 35 (the advice text for ``min_bias``, and none for ``bv``)."""
    from receval.metrics.kernels.corrected import range_notes
    from receval.metrics.spec import parse_metric

    low = parse_metric("hit_rate@10[correction=bv]")
    high = parse_metric("recall@10[correction=bv]")
    far = parse_metric("hit_rate@10[correction=min_bias]")
    below = parse_metric("ndcg@10[correction=bv]")
    summary = {str(low): 0.0, str(high): 1.0, str(far): 24.2, str(below): -0.5}
    assert range_notes({str(low): 0.0, str(high): 1.0}, [low, high]) == []
    notes = range_notes(summary, [low, high, far, below])
    tail = (
        "extrapolates from the sampled ranks and nothing holds its estimate in that range "
        "(left as computed, not clipped)"
    )
    assert notes == [
        "hit_rate@10[correction=min_bias] = 24.2 is outside the range of hit_rate, [0, 1]; "
        f"correction=min_bias {tail}; min_bias is ill-posed beyond about 20 negatives: "
        "use correction=bv",
        f"ndcg@10[correction=bv] = -0.5 is outside the range of ndcg, [0, 1]; correction=bv {tail}",
    ]


# --- receval.metrics.kernels.sampled -------------------------------------------


@pytest.mark.parametrize("k", [True, 2.5, 0])
def test_k_must_be_an_integer_not_a_bool_or_float(k):
    """sampled._check_metric mutant 8 (``isinstance(k, bool) and not
    isinstance(k, int)``, never true: True and 2.5 were taken as cut-offs)."""
    from receval.metrics.kernels.sampled import correction_table, metric_at_rank

    message = f"^k must be an integer >= 1 or None; got {k!r}$"
    with pytest.raises(ValueError, match=message):
        metric_at_rank("recall", k, np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=message):
        correction_table("recall", k, 100, 5, "none")
    assert metric_at_rank("recall", np.int64(2), np.array([1, 2, 3])).tolist() == [1.0, 1.0, 0.0]


# --- receval.analysis.stats ----------------------------------------------------


def test_stat_errors_name_the_argument():
    """stats.permutation_test mutants 7 (``_vector(a)``: "x must ...") and 9
    ("A must ..."); stats._diff mutant 13 (``_vector(b)``: "x must ...")."""
    from receval.analysis.stats import paired_t_test, permutation_test

    with pytest.raises(ReceValError, match=r"^a must be one-dimensional; got shape \(1, 2\)$"):
        permutation_test([[1.0, 2.0]], [1.0])
    with pytest.raises(ReceValError, match=r"^b must hold finite numbers"):
        permutation_test([1.0], [math.nan])
    with pytest.raises(ReceValError, match=r"^b must be one-dimensional; got shape \(1, 2\)$"):
        paired_t_test([1.0, 2.0], [[1.0, 2.0]])


def test_run_test_wilcoxon_pairs_a_with_b():
    """stats.run_test mutant 17 (``wilcoxon_test(b)``: b read as the
    differences). d = a − b = 1..6, all positive: W− = 0, the statistic is 0
    and the exact two-sided p is 2 / 2**6. b alone (−1, 2, −3, 4, −5, 6)
    would give min(W+, W−) = min(12, 9) = 9."""
    from receval.analysis.stats import run_test

    b = [-1.0, 2.0, -3.0, 4.0, -5.0, 6.0]
    a = [0.0, 4.0, 0.0, 8.0, 0.0, 12.0]
    r = run_test("wilcoxon", a, b)
    assert (r.statistic, r.pvalue) == (0.0, 2 / 64)


def test_randomization_test_with_one_resample():
    """stats.randomization_test mutant 23 (``n_resamples <= 1`` refused one
    resample). One difference: every sign vector gives |±1| ≥ 1, so the count
    is 1 and p = (1 + 1) / (1 + 1)."""
    from receval.analysis.stats import randomization_test

    assert randomization_test([1.0], n_resamples=1, seed=0).pvalue == 1.0
    with pytest.raises(ReceValError, match="n_resamples must be a positive integer; got 0"):
        randomization_test([1.0], n_resamples=0)


def test_randomization_signs_of_64_users_use_one_word_per_resample():
    """stats._unpacked_signs mutant 4 (``(n + 64) // 64`` words: two 64-bit
    draws per resample when n is a multiple of 64, so a seed gave another
    p-value). The sign vectors are the bits (least significant first) of one
    uint64 draw per resample; d is integer, so |Σ ± d| ≥ |Σ d| is exact."""
    from receval.analysis.stats import randomization_test

    n, resamples, seed = 64, 999, 7
    j = np.arange(n)
    d = (j + 1) * np.where(j % 2 == 0, 1, -1)
    d[0] += 150  # |Σ d| = 118: about half of the resamples reach it
    words = np.random.default_rng(seed).integers(
        0, 2**64 - 1, size=(resamples, 1), dtype=np.uint64, endpoint=True
    )
    flips = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").astype(np.int64)
    flipped = d.sum() - 2 * (flips @ d)
    count = int(np.count_nonzero(np.abs(flipped) >= abs(d.sum())))
    assert 100 < count < 900
    r = randomization_test(d.astype(np.float64), n_resamples=resamples, seed=seed, exact=False)
    assert r.pvalue == (1 + count) / (1 + resamples)


def test_bca_of_two_users_warns_nothing():
    """stats.interval_of mutant 23 (jackknife means over ``n − 2``): with two
    users a division by zero, a RuntimeWarning on the host (the acceleration
    is 0 either way: Σ(θ_(·) − θ_(i))³ = 0 for two values; for n > 2 the
    acceleration is scale-free, so the mutant is otherwise equivalent)."""
    from receval.analysis.stats import bootstrap_ci

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = bootstrap_ci([0.2, 0.7], method="bca", n_resamples=200, seed=0)
    assert 0.2 <= lo <= hi <= 0.7


def test_bca_with_every_mean_on_one_side_is_the_percentile_interval():
    """stats.quantile_interval mutant 28 (``z0 = 1.0`` when the correction is
    undefined). Every mean above θ = 0: the percentile interval, q(0.05) and
    q(0.95) of 1..5 by linear interpolation: 1 + 0.2 and 1 + 3.8."""
    from receval.analysis.stats import quantile_interval

    means = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert quantile_interval(means, 0.1, theta=0.0) == pytest.approx((1.2, 4.8), abs=1e-12)
    assert quantile_interval(means, 0.1, theta=9.0, acc=0.3) == pytest.approx((1.2, 4.8), abs=1e-12)


# --- receval.ids ---------------------------------------------------------------


def test_boolean_array_ids_are_true_and_false():
    """ids._from_numpy mutant 25 (``"TRUE"``): SPEC, booleans → "true" / "false"."""
    from receval.ids import canonical

    ids = canonical(np.array([True, False, True]), "item", "x")
    assert ids.tolist() == ["true", "false", "true"]


def test_whitespace_notes_say_which_case():
    """ids.whitespace_notes mutants 32, 36 (a TypeError), 33 (every stripped
    id read as "None") and 45 (the advice)."""
    from receval.ids import whitespace_notes

    example = "ids are read as written (' 1' and '1' are two items)"
    padded_only = np.array([" a", "b ", "c"], dtype=object)
    assert whitespace_notes(padded_only, "item") == [
        f"some item ids begin or end with whitespace: {example}; "
        "strip them if the whitespace is not part of the id"
    ]
    same = np.array([" 1.0", "1", "c"], dtype=object)  # " 1.0" stripped reads as 1
    assert whitespace_notes(same, "item") == [
        f"some item ids differ from other item ids only by surrounding whitespace: {example}; "
        "strip them if they are the same item"
    ]


# --- receval.engines.numpy_engine ----------------------------------------------


def test_duplicate_item_message_says_how_to_keep_it():
    """numpy_engine._dedupe_lists mutant 39 (``option("duplicates")``: "pass
    duplicates= to keep ...")."""
    recs = pd.DataFrame({"user": [1, 1, 1], "item": [10, 9, 10], "rank": [1, 2, 3]})
    message = (
        r"row 2, user 1, item 10: the item appears twice in this user's list \(rows 0 and 2\); "
        r"pass duplicates='keep' to keep the first occurrence$"
    )
    with pytest.raises(InputError, match=message):
        receval.evaluate(recs, {1: [9]}, "precision@1")


def test_sorted_keys_beyond_63_bits_is_a_stable_argsort():
    """numpy_engine._sorted_keys mutants 11 (``n or ...``: keys packed with
    their row even when they do not fit in 63 bits: overflow) and 35 (the
    argsort of that case not stable). Keys below 2**62 and 200 rows need
    62 + 8 bits; ties keep their row order. Through ``evaluate`` the case
    needs n_users · n_items · rows ≥ 2**63 (millions of rows)."""
    from receval.engines.numpy_engine import _sorted_keys

    big = 2**62 - 1
    key = np.array([big, 5] * 100, dtype=np.int64)
    order, skey = _sorted_keys(key, 2**62)
    assert order.tolist() == list(range(1, 200, 2)) + list(range(0, 200, 2))
    assert skey.tolist() == [5] * 100 + [big] * 100


# --- seed-4 sample (docs/mutation.md) ---------------------------------------------


def test_permutation_test_of_values_symmetric_around_zero() -> None:
    """a = −1 ten times, b = +1 ten times: no resample of 999 puts the same ten
    values in a (1 in C(20, 10) = 184,756), so p = (1 + 0) / (1 + 999), as for
    0 and 1 (permutation_test mutant 36 took max + min = 0 for "all values equal"
    and returned p = 1)."""
    from receval.analysis.stats import permutation_test

    r = permutation_test([-1.0] * 10, [1.0] * 10, n_resamples=999, seed=1)
    assert (r.statistic, r.pvalue) == (-2.0, 0.001)


def test_power_pairs_a_series_with_a_list_by_position() -> None:
    """power(a, b) with a Series a and a plain list b pairs them by position, as
    two arrays (power mutant 35 joined them on the Series' index: no user in
    common); alpha must be below 1 (power mutant 7 took alpha = 1)."""
    import pandas as pd

    from receval.analysis.stats import power
    from receval.errors import OptionError

    a = [0.5, 0.7, 0.2, 0.9, 0.4]
    b = [0.4, 0.5, 0.3, 0.6, 0.1]
    by_position = power(np.array(a), np.array(b))
    with_index = power(pd.Series(a, index=[10, 11, 12, 13, 14]), b)
    assert with_index == by_position
    with pytest.raises(OptionError, match="alpha"):
        power(np.array(a), np.array(b), alpha=1.0)
    with pytest.raises(OptionError, match="a nonzero difference to detect"):  # mutant 98
        power(np.array(a), np.array(b), effect=0.0)


def test_sampled_size_errors_name_the_argument() -> None:
    """sampled_rank_pmf with a bad catalog_size or negatives names which
    (sampled._check_sizes mutant 1 misnamed catalog_size); the corrected
    estimate's error names the largest count of sampled negatives
    (corrected.estimate mutant 12)."""
    from receval.metrics.kernels.sampled import sampled_rank_pmf

    with pytest.raises(ValueError, match=r"^catalog_size must be an integer >= 1; got 0$"):
        sampled_rank_pmf(np.array([1]), 0, 2)
    with pytest.raises(ValueError, match=r"^negatives must be an integer >= 1; got 0$"):
        sampled_rank_pmf(np.array([1]), 5, 0)
    lists = {1: [1, 2, 3], 2: [4, 5]}
    with pytest.raises(MetricError, match=r"sampled negatives \(2\): give the size"):
        receval.evaluate(lists, {1: [1], 2: [4]}, "recall@2[correction=rank]", catalog_size=2)


def test_rating_kernels_warn_nothing_on_constant_actual_values() -> None:
    """R² of a user whose actual values are constant but predictions are not:
    SS_tot = 0 < SS_res, NaN with no division warning (r2_by_user mutant 24 let
    NumPy warn); integer user codes are required, and the message says so
    (_Groups mutant 6)."""
    from receval.metrics.kernels import rating

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r2 = rating.r2_by_user(np.array([2.0, 2.0]), np.array([1.0, 3.0]), np.array([0, 0]))
    assert math.isnan(r2[0])
    with pytest.raises(ValueError, match="users must be integer codes"):
        rating.r2_by_user(np.array([1.0]), np.array([1.0]), np.array([0.5]))


def test_numpy_string_ids() -> None:
    """A NumPy array of strings is read by the text rule (ids._from_numpy mutant
    48 called from_text without the values): digit strings are integers, a column
    holding text stays text."""
    from receval.ids import canonical

    assert canonical(np.array(["7", "8"]), "item", "recs").tolist() == [7, 8]
    assert canonical(np.array(["7", "x"]), "item", "recs").tolist() == ["7", "x"]


def test_rank_estimate_beside_a_list_without_negatives() -> None:
    """A user whose list holds only its relevant item has no sampled negative
    (m = 0): NaN, and the users with negatives are still estimated (m = 1,
    r = 1: R̂ = 1 → 1; corrected.estimate mutant 23 stopped at m = 0, the first
    count, and left everyone at 0)."""
    metric = "recall@50[correction=rank]"
    res = receval.evaluate({1: [10, 11], 6: [60]}, {1: [10], 6: [60]}, metric, catalog_size=100)
    assert res.per_user.loc[1, metric] == 1.0
    assert math.isnan(res.per_user.loc[6, metric])


def test_bv_takes_its_gamma_and_min_bias_is_bv_at_gamma_zero() -> None:
    """``correction=bv`` with ``gamma=0.5`` is the table built with γ = 0.5 read at
    the user's sampled rank (corrected.estimate mutant 36 built it with the
    default γ); ``min_bias`` is ``bv`` with γ = 0. (sampled.correction_table
    mutant 26, γ None instead of 0.0 for the corrections other than ``bv``, is
    equivalent: ``_table`` tests ``min_bias`` before γ, and ``rank`` never reads it.)"""
    from receval.metrics.kernels.sampled import correction_table

    bv0 = correction_table("recall", 5, 100, 4, "bv", 0.0)
    np.testing.assert_array_equal(correction_table("recall", 5, 100, 4, "min_bias"), bv0)
    table = correction_table("recall", 5, 100, 4, "bv", 0.5)  # t[0] is NaN: no rank 0
    assert table[1:].tolist() != correction_table("recall", 5, 100, 4, "bv")[1:].tolist()
    metric = "recall@5[correction=bv,gamma=0.5]"
    res = receval.evaluate({1: [7, 10, 11, 12, 13]}, {1: [10]}, metric, catalog_size=100)
    assert res.summary[metric] == table[2]  # the relevant item at sampled rank 2


def test_coverage_of_an_empty_catalog_is_nan_without_a_warning() -> None:
    """No catalog item: coverage is NaN, and no 0/0 is computed (beyond.coverage
    mutant 2 divided by the empty catalog's size). An empty ``catalog=`` is
    refused before any work (as a catalog file of a header only), so the kernel
    is asked directly."""
    from receval.metrics.kernels.beyond import Exposure, coverage

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty = Exposure(np.array([1, 1]), np.zeros(2, bool), 0, 1, 2)
        assert math.isnan(coverage(empty))
    with pytest.raises(receval.errors.InputError, match="no item given"):
        receval.evaluate({1: ["a", "b"]}, {1: ["a"]}, "coverage@2", catalog=[])


def test_tukey_tolerance_is_relative_to_each_users_spread() -> None:
    """Randomized Tukey HSD: B is A + 0.2 for every user, C is A; one user has
    1e9 for every system (no spread: it moves no difference). No resample of 999
    reaches B − A's range, p = 1/1000; A and C tie, p = 1. The tolerance for
    "as extreme" is 1e-9 of the users' own ranges (tukey_hsd mutant 31 took the
    global maximum: a tolerance of 30 made every p-value 1)."""
    from receval.analysis.stats import tukey_hsd

    base = np.arange(30) / 30
    x = np.vstack([np.column_stack([base, base + 0.2, base]), [1e9, 1e9, 1e9]])
    p = tukey_hsd(x, n_resamples=999, seed=1)
    assert p[0, 1] == p[1, 2] == 0.001
    assert p[0, 2] == 1.0


# --- seed-5 sample of stats (docs/mutation.md) ------------------------------------


def test_stats_edges_seed_5() -> None:
    """Hand-checked edges of receval.analysis.stats (seed-5 survivors):

    - Welch's test of samples with equal, nonzero variances is Welch's test, not
      the both-constant case (welch_of mutant 15 tested ``va − vb == 0``):
      against scipy.stats.ttest_ind(equal_var=False);
    - constant nonzero paired differences: t = ±inf, p = 0 (t_test_of mutant 23
      gave p None);
    - the power of a test of no effect is its level α (t_test_power mutant 21
      subtracted the lower tail);
    - Holm's adjustment of integer p-values 0 and 1 (adjust_pvalues mutant 9,
      the integers kept as such, makes floats here; it is killed with
      ``correction="none"`` and ``None`` entries in test_mutants_stats_tests.py);
    - randomization_test's default seed is 0 (mutant 2: 1);
    - Power keeps α when the users cap is reached (power mutant 137)."""
    from scipy import stats as sps

    from receval.analysis.stats import (
        adjust_pvalues,
        paired_t_test,
        power,
        randomization_test,
        t_test_power,
        welch_t_test,
    )

    a, b = [1.0, 2.0, 3.0, 5.0], [2.0, 3.0, 4.0, 6.0]  # equal variances, means 2.75, 3.75
    got = welch_t_test(a, b)
    want = sps.ttest_ind(a, b, equal_var=False)
    assert got.statistic == pytest.approx(want.statistic, rel=1e-12)
    assert got.pvalue == pytest.approx(want.pvalue, rel=1e-12)
    r = paired_t_test([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert (r.statistic, r.pvalue) == (math.inf, 0.0)
    assert t_test_power(0.0, 20, 0.05) == pytest.approx(0.05, abs=1e-12)
    assert adjust_pvalues([0, 1], "holm").tolist() == [0.0, 1.0]
    x = (np.arange(40) % 7) / 7.0  # 40 users: resampled, not enumerated
    y = (np.arange(40) % 5) / 5.0
    assert randomization_test(x, y) == randomization_test(x, y, seed=0)
    assert randomization_test(x, y) != randomization_test(x, y, seed=1)
    capped = power(np.array([0.1, 0.0, 0.05, -0.02]), max_users=10, alpha=0.05)
    assert capped.users is None and capped.alpha == 0.05


def test_effect_size_interval_is_scale_free() -> None:
    """Cohen's d is free of the scale: the same resamples of differences in
    micro-units give the same interval (effect_size_interval mutant 21 measured
    the variance against max(m₂, 1), dropping every resample of small values)."""
    from receval.analysis.stats import effect_size_interval

    m = np.array([0.1, 0.2, 0.3, 0.25])
    m2 = m**2 + 0.04
    whole = effect_size_interval(m, m2, 5, 0.5)
    small = effect_size_interval(m * 1e-6, m2 * 1e-12, 5, 0.5)
    assert small == pytest.approx(whole, rel=1e-9)
    assert not math.isnan(small[0])
