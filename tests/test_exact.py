"""receval.exact.ExactSum: exact sums of doubles, mergeable in any cut."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval.exact as exact
from receval.exact import ExactSum

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


def numpy_path(x: np.ndarray) -> ExactSum:
    saved, exact.NATIVE = exact.NATIVE, None
    try:
        return ExactSum.of(x)
    finally:
        exact.NATIVE = saved


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, max_size=40), st.integers(0, 40))
def test_sum_is_fsum_and_cut_free(values: list[float], cut: int) -> None:
    x = np.array(values, dtype=np.float64)
    s = ExactSum.of(x)
    assert s == numpy_path(x)  # the compiled and NumPy paths give the same integer
    assert ExactSum.of(x[:cut]) + ExactSum.of(x[cut:]) == s
    assert s.count == len(values)
    try:
        want = math.fsum(values)
    except OverflowError:  # fsum's intermediate overflow; the exact sum is still exact
        want = None
    if want is not None and want != 0:
        assert s.value() == want
    if values:
        try:
            mean = float(sum(map(Fraction, values)) / len(values))
        except OverflowError:
            return
        assert s.mean() == mean  # correctly rounded, once


def test_nan_left_out_and_inf_propagates() -> None:
    s = ExactSum.of(np.array([1.0, np.nan, 2.0]))
    assert (s.count, s.nan, s.mean()) == (2, 1, 1.5)
    assert ExactSum.of(np.array([np.nan])).mean() != ExactSum.of(np.array([np.nan])).mean()
    assert ExactSum.of(np.array([1.0, np.inf])).mean() == math.inf
    assert math.isnan(ExactSum.of(np.array([np.inf, -np.inf])).value())
    assert ExactSum.of(np.array([1e308, 1e308])).value() == math.inf  # overflow at rounding
    assert numpy_path(np.array([1.0, np.nan, -np.inf])) == ExactSum.of(
        np.array([1.0, np.nan, -np.inf])
    )


def test_subnormals_and_cancellation() -> None:
    x = np.array([1e300, 5e-324, -1e300, 5e-324, 0.1, -0.1])
    assert ExactSum.of(x).value() == 1e-323
    assert numpy_path(x) == ExactSum.of(x)


@pytest.mark.parametrize("n", [0, 1, 1000, 100_003])
def test_large_arrays_match_fractions(n: int) -> None:
    x = np.random.default_rng(n).random(n) / 3
    s = ExactSum.of(x)
    assert s == numpy_path(x)
    if n:
        assert s.value() == math.fsum(x.tolist())
    if 0 < n <= 1000:
        assert s.mean() == float(sum(map(Fraction, x.tolist())) / n)
