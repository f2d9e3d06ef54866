"""Tests written to kill the mutants of ``receval.analysis.stats.power`` that
survived a full mutmut run of stats.py (issue #37; verdicts in docs/mutation.md).

Each test names the mutants it kills (``power N`` is
``receval.analysis.stats.x_power__mutmut_N``). Expected values are worked by
hand or computed here with SciPy's noncentral t (G*Power's formula for the
two-sided paired t-test), never by receval along another path.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import receval
from receval.analysis.stats import Power, power
from receval.errors import OptionError, ReceValError


def _gpower(d: float, n: int, alpha: float) -> float:
    """G*Power's power of the two-sided paired t-test: P(|T| > t_{1−α/2, n−1})
    for T noncentral t, n − 1 degrees of freedom, noncentrality d √n."""
    df = n - 1
    crit = float(sps.t.ppf(1 - alpha / 2, df))
    ncp = d * math.sqrt(n)
    return float(sps.nct.sf(crit, df, ncp) + sps.nct.cdf(-crit, df, ncp))


def _users_needed(d: float, target: float, alpha: float) -> int:
    """The smallest n >= 2 with enough power, by a plain linear scan."""
    n = 2
    while _gpower(d, n, alpha) < target:
        n += 1
    return n


def _exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


# --- option checks and their messages ---------------------------------------


@pytest.mark.parametrize(
    ("option", "value"), [("alpha", 0.0), ("alpha", 1.0), ("power", 0.0), ("power", 1.0)]
)
def test_alpha_and_power_bounds_are_exclusive_with_exact_messages(option: str, value: float):
    """alpha and power must lie in (0, 1): 0 is refused (kills power 6 and 21,
    ``0 <= alpha`` / ``0 <= power``: alpha = 0 searched with an infinite
    critical value, power = 0 answered 2 users); the message names the option,
    the value and what is expected (kills power 10, 11, 14, 15, 17, 18 for
    alpha; 25, 26, 29, 30, 32, 33 for power: None for the value, "another
    value", "XX...XX" or upper-cased text)."""
    with pytest.raises(OptionError) as info:
        power([0.0, 1.0, 2.0], max_users=10, **{option: value})
    want = f"{option}={value!r} is not allowed: expected a number between 0 and 1 (exclusive)"
    assert str(info.value) == want
    assert (info.value.option, info.value.value) == (option, value)
    flag = f"--{option} {value} is not allowed: expected a number between 0 and 1 (exclusive)"
    assert info.value.cli_message() == flag


@pytest.mark.parametrize("effect", [0.0, math.inf, math.nan])
def test_effect_message_is_exact(effect: float):
    """A zero or non-finite effect is refused with a message naming it (kills
    power 91: the value None; 96: the option "XXeffectXX"; 98: the expected
    phrase "XX...XX")."""
    with pytest.raises(OptionError) as info:
        power([0.0, 1.0, 2.0], effect=effect)
    assert str(info.value) == (
        f"effect={effect!r} is not allowed: expected a nonzero difference to detect"
    )
    assert info.value.option == "effect"


def test_pilot_mean_of_zero_names_the_effect():
    """effect defaults to the pilot's mean; a mean of 0 is the same refusal
    (power 91, 96, 98 again, through the default)."""
    with pytest.raises(
        OptionError,
        match=_exactly("effect=0.0 is not allowed: expected a nonzero difference to detect"),
    ):
        power([-0.5, 0.5])


def test_unequal_lengths_message_is_exact():
    """Two sequences of different lengths: kills power 63 (the message None)."""
    with pytest.raises(
        ReceValError, match=_exactly("power: a and b must hold the same users; got 3 and 2 values")
    ):
        power([0.1, 0.2, 0.3], [0.1, 0.2])


# --- inputs: missing values, dtypes, the pairing ----------------------------


def test_none_in_lists_is_a_missing_user_left_out():
    """None in a plain list is a missing value (float64 NaN), left out like a
    NaN. Kills power 55, 57 (``a`` converted without dtype: an object array,
    None − 0.1 a TypeError), 59, 61 (the same for ``b``), 68, 70 (``a`` alone)
    and 65 (``x + y``).

    By hand: a − b = [0.5, NaN, −0.25, 0.75] (user 2 dropped): Σ = 1, mean 1/3;
    deviations 1/6, −7/12, 5/12, squares (4 + 49 + 25) / 144 = 78/144, over
    n − 1 = 2: variance 39/144, sd √39 / 12."""
    sd = math.sqrt(39 / 144)
    for got in (
        power([0.5, None, 0.25, 1.0], [0.0, 0.1, 0.5, 0.25]),
        power([0.5, 0.2, 0.25, 1.0], [0.0, None, 0.5, 0.25]),
        power([0.5, None, -0.25, 0.75]),
    ):
        assert got.pilot_users == 3
        assert got.effect == 1 / 3
        assert got.sd == pytest.approx(sd, rel=1e-15)


def test_series_of_objects_are_converted_to_floats():
    """Two Series of dtype object (e.g. read from a mixed column) are
    subtracted and converted to float64 (kills power 49, ``to_numpy(dtype=None)``:
    an object array that np.isfinite refuses). Same users and differences as
    the test above: mean 1/3, sd √39 / 12."""
    users = ["u1", "u2", "u3"]
    a = pd.Series([0.5, 0.25, 1.0], index=users, dtype=object)
    b = pd.Series([0.0, 0.5, 0.25], index=users, dtype=object)
    got = power(a, b)
    assert (got.pilot_users, got.effect) == (3, 1 / 3)
    assert got.sd == pytest.approx(math.sqrt(39 / 144), rel=1e-15)


def test_series_of_large_integers_are_subtracted_exactly():
    """Two Series of integers beyond 2**53 with different users: the inner join
    keeps them int64, so the differences are exact (kills power 42, an outer
    join: users 4 and 5 missing on one side turn both columns into float64
    first, 2**53 + 1 → 2**53 and 2**53 + 3 → 2**53 + 4, differences 0, 4, 2:
    sd 2).

    By hand: users 1, 2, 3 in common, differences 1, 3, 2: mean 2, variance
    (1 + 1 + 0) / 2 = 1, sd 1, d = 2."""
    big = 2**53
    a = pd.Series([big + 1, big + 3, big + 2, 7], index=[1, 2, 3, 4])
    b = pd.Series([big, big, big, 1], index=[1, 2, 3, 5])
    got = power(a, b)
    assert (got.pilot_users, got.effect, got.sd, got.d) == (3, 2.0, 1.0, 2.0)
    assert got.users == _users_needed(2.0, 0.8, 0.05)


# --- what Power holds --------------------------------------------------------


def test_constant_differences_need_two_users():
    """Every difference equal (sd 0): two users detect it, with power 1 and an
    infinite d; the other fields as given (kills power 103-108: a field None;
    117: sd 1; 118: power 2)."""
    got = power(np.full(4, 0.25), alpha=0.01)
    assert got == Power(2, 0.25, 0.0, math.inf, 1.0, 0.01, 4)
    assert (got.users, got.effect, got.sd, got.d, got.power, got.alpha, got.pilot_users) == (
        2,
        0.25,
        0.0,
        math.inf,
        1.0,
        0.01,
        4,
    )


def test_capped_search_reports_the_power_at_the_cap():
    """Not reached within max_users = 10: users None, and the power at 10
    users at the level asked (kills power 133, 134, 135, 138: a field None;
    151: the power at α = 0.05 instead of 0.01).

    Pilot [0, 1, 2]: sd 1 (deviations −1, 0, 1: 2 / 2), effect 0.05 → d 0.05."""
    got = power([0.0, 1.0, 2.0], effect=0.05, alpha=0.01, max_users=10)
    assert (got.users, got.effect, got.sd, got.d, got.alpha, got.pilot_users) == (
        None,
        0.05,
        1.0,
        0.05,
        0.01,
        3,
    )
    assert got.power == pytest.approx(_gpower(0.05, 10, 0.01), rel=1e-12)
    assert got.power != pytest.approx(_gpower(0.05, 10, 0.05), rel=1e-6)


def test_users_at_another_level_match_a_linear_scan():
    """At α = 0.01, d = 0.8 needs 22 users (SciPy's noncentral t, scanned n =
    2, 3, ...), α = 0.05 needs 15: the doubling stops at 16 at α = 0.05 but at
    32 at α = 0.01. Kills power 130 (the doubling at α = 0.05: bracket [8, 16],
    answer 16), 169 (the bisection at α = 0.05: answer 16), 194 (the power
    reported at α = 0.05), 176, 177, 180, 181 (a field None)."""
    got = power([0.0, 1.0, 2.0], effect=0.8, alpha=0.01)
    want = _users_needed(0.8, 0.8, 0.01)
    assert want == 22 and _users_needed(0.8, 0.8, 0.05) == 15
    assert (got.users, got.effect, got.sd, got.d, got.alpha, got.pilot_users) == (
        want,
        0.8,
        1.0,
        0.8,
        0.01,
        3,
    )
    assert got.power == pytest.approx(_gpower(0.8, want, 0.01), rel=1e-12)


def test_power_exactly_reached_counts_as_enough():
    """``power`` asked equal to the power of n users: n users suffice ("the
    smallest n with power >= the power asked"). d = 1 (pilot [0, 1, 2], sd 1).

    - asked the power of 3 users: the doubling brackets [2, 4] and the
      bisection tries 3 (kills power 170, ``>``: answer 4);
    - asked the power of 4 users with max_users = 4: the doubling stops at 4
      (kills power 131, ``<=``: it went on and hit the cap, users None)."""
    pilot = [0.0, 1.0, 2.0]
    at3, at4 = _gpower(1.0, 3, 0.05), _gpower(1.0, 4, 0.05)
    assert _gpower(1.0, 2, 0.05) < at3 < at4
    got3 = power(pilot, power=at3)
    assert (got3.users, got3.power) == (3, at3)
    got4 = power(pilot, power=at4, max_users=4)
    assert (got4.users, got4.power) == (4, at4)


def test_max_users_two_is_respected():
    """max_users = 2 with d = 2 and power 0.4: 2 users give 0.176, 3 give 0.471
    (SciPy), so the answer is None, reported with the power of 2 users (kills
    power 124, the search started at 3: it answered 3 users, over the cap)."""
    assert _gpower(2.0, 2, 0.05) < 0.4 <= _gpower(2.0, 3, 0.05)
    got = power([0.0, 1.0, 2.0], effect=2.0, power=0.4, max_users=2)
    assert got.users is None
    assert got.power == pytest.approx(_gpower(2.0, 2, 0.05), rel=1e-12)
    assert power([0.0, 1.0, 2.0], effect=2.0, power=0.4, max_users=3).users == 3


def test_default_max_users_is_ten_million():
    """The default cap is 10,000,000 users: d = 0.0006 is not detected within
    it, and the power reported is the power of exactly 10**7 users (kills power
    3, a cap of 10,000,001: the power of one user more, 0.47510084 against
    0.47510080). About 24 evaluations of the noncentral t: fast."""
    got = receval.power([0.0, 1.0, 2.0], effect=6e-4)
    assert got.users is None
    assert got.power == pytest.approx(_gpower(6e-4, 10_000_000, 0.05), rel=1e-12)
    assert got.power != pytest.approx(_gpower(6e-4, 10_000_001, 0.05), rel=1e-9)


def test_a_large_effect_needs_three_users():
    """d = 3.9 at α = 0.05, power 0.8: 2 users give 0.335, 3 give 0.897
    (SciPy, the lower tail as P(T > t | −δ), which stays finite), so 3 users.

    Kills power 158 (the search tripling: 2, 6, then bisecting [2, 6] through
    n = 4, where SciPy 1.17's ``nct.cdf(−t, 3, 7.8)`` is NaN, so it answered
    5). Once t_test_power no longer gives NaN (see the report on issue #37),
    mutant 158 is equivalent: the power grows with n, so any growth factor
    finds the same smallest n; this test still holds."""

    def gpower(d: float, n: int) -> float:
        crit = float(sps.t.ppf(0.975, n - 1))
        ncp = d * math.sqrt(n)
        return float(sps.nct.sf(crit, n - 1, ncp) + sps.nct.sf(crit, n - 1, -ncp))

    assert gpower(3.9, 2) < 0.8 <= gpower(3.9, 3)
    got = power([0.0, 1.0, 2.0], effect=3.9)
    assert got.users == 3
    assert got.power == pytest.approx(gpower(3.9, 3), rel=1e-12)


def test_power_of_a_large_effect_is_finite() -> None:
    """A bug found while judging ``power``'s survivors: the lower tail was
    ``nct.cdf(-t, df, ncp)``, NaN in SciPy where it underflows, and the search took
    NaN for enough power (2 users, power NaN). d = 6: 2 users give 0.494, 3 give
    0.995 (SciPy, the lower tail as ``nct.sf(t, df, -ncp)``, which is
    P(T < -t | ncp) by the symmetry of the noncentral t)."""
    from scipy import stats as sps

    got = receval.power([0.0, 1.0, 2.0], effect=6.0)
    assert got.users == 3
    crit = sps.t.ppf(0.975, 2)
    want = sps.nct.sf(crit, 2, 6 * 3**0.5) + sps.nct.sf(crit, 2, -6 * 3**0.5)
    assert got.power == pytest.approx(want, rel=1e-12)
    assert got.power == pytest.approx(0.9950890766230956, rel=1e-9)
