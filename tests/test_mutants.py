"""Tests written to kill the mutants that survived benchmarks/mutation.py.

Each test names the mutants it kills (see docs/mutation.md). Expected values are
worked by hand from the module's rule, never computed by receval along another
path.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from receval.errors import InputError
from receval.ids import canonical, canonical_value, from_text, order_of, runs, text_value

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


# --- receval.ids -------------------------------------------------------------


def test_order_of_integers_is_a_stable_sort():
    """int64 columns: a stable argsort (order_of mutants 1-7)."""
    ids = np.array([i % 3 for i in range(60)], dtype=np.int64)
    expected = [i for r in range(3) for i in range(r, 60, 3)]  # ties keep their order
    assert order_of(ids).tolist() == expected


def test_order_of_strings_integers_first_then_text():
    """Object columns: int64 literals first, numerically; then text by code
    point; the int64 bounds are integers, one past them is text (order_of
    mutants 1, 10-46)."""
    ids = np.array(
        ["10", "9", "a", "-1", "007", str(I64_MAX + 1), str(I64_MAX), str(I64_MIN), "-5"],
        dtype=object,
    )
    # integers: I64_MIN(7), -5(8), -1(3), 9(1), 10(0), I64_MAX(6);
    # text by code point: "007"(4) < "9223372036854775808"(5) < "a"(2)
    assert order_of(ids).tolist() == [7, 8, 3, 1, 0, 6, 4, 5, 2]


def test_order_of_text_ties_are_stable():
    """Text ties keep their input order (order_of mutants 54-64)."""
    ids = np.array(["b", "a"] * 40 + ["1"], dtype=object)
    expected = [80, *range(1, 80, 2), *range(0, 80, 2)]
    assert order_of(ids).tolist() == expected


def test_order_of_integer_ties_and_precision():
    """Integer ties in an object column keep their order; integers beyond
    2**53 compare exactly, never through a float (order_of mutants 24, 26,
    54, 56)."""
    ids = np.array(["2", "1"] * 40, dtype=object)
    assert order_of(ids).tolist() == list(range(1, 80, 2)) + list(range(0, 80, 2))
    close = np.array(["9007199254740993", "9007199254740992", "x"], dtype=object)
    assert order_of(close).tolist() == [1, 0, 2]


def test_canonical_value_bounds_and_other_types():
    """canonical_value mutants 17, 33-41, 49."""
    assert canonical_value(I64_MAX) == I64_MAX
    assert canonical_value(I64_MIN) == I64_MIN
    assert canonical_value(I64_MAX + 1) == "9223372036854775808"
    assert canonical_value(b"ab") == "ab"
    assert canonical_value(b"\xffa") == "\ufffda"  # undecodable bytes replaced
    assert canonical_value(datetime.date(2024, 1, 2)) == "2024-01-02"
    assert canonical_value(Decimal("1.5")) == "1.5"
    with pytest.raises(ValueError):
        canonical_value(None)


def test_text_value_edges():
    """text_value mutants 1, 7, 8, 14, 15, 22."""
    assert text_value("") == ""
    assert text_value("-5") == -5
    assert text_value("-x") == "-x"
    assert text_value(str(I64_MAX)) == I64_MAX
    assert text_value(str(I64_MIN)) == I64_MIN
    assert text_value(str(I64_MAX + 1)) == str(I64_MAX + 1)
    assert text_value("9.007199254740992e15") == 2**53  # |x| <= 2**53: whole
    assert text_value("9.007199254740994e15") == "9.007199254740994e15"


def test_runs_of_sorted_and_unsorted():
    """runs mutants 1-6, 18."""
    values, lengths = runs(np.array([1, 1, 2, 5, 5, 5]))
    assert values.tolist() == [1, 2, 5] and lengths.tolist() == [2, 1, 3]
    values, lengths = runs(np.array([], dtype=np.int64))
    assert values.tolist() == [] and lengths.tolist() == []
    assert runs(np.array([1, 3, 2])) is None
    assert runs(np.array([2, 1])) is None
    assert runs(np.array([3, 1, 2, 2])) is None  # only its first pair is in order


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1, None], "truth.csv, row 1: missing item id"),
        (["a", 2, None], "truth.csv, row 2: missing item id"),
        ([1, 2.5, float("inf")], "truth.csv, row 2: non-finite item id"),
        ([1, "x", float("-inf")], "truth.csv, row 2: non-finite item id"),
        ([1.0, float("nan")], "truth.csv, row 1: missing item id"),
        # every float type at once: still the float path's "missing" (mutant 31)
        ([1.0, np.float64(2.0), np.float32("nan")], "truth.csv, row 2: missing item id"),
    ],
)
def test_canonical_errors_name_source_row_and_kind(values, message):
    """_missing mutants 4, 7; _from_values mutants 34, 52-70."""
    with pytest.raises(InputError) as err:
        canonical(values, "item", "truth.csv")
    assert str(err.value) == message


def test_canonical_columns_of_one_type():
    """_from_values mutants 4-8, 15-31, 79-85; _from_uints mutants 1-6."""
    empty = canonical([], "item", "t")
    assert empty.dtype == np.int64 and len(empty) == 0
    assert canonical(["7", "12"], "item", "t").tolist() == [7, 12]
    assert canonical(["7", "12"], "item", "t").dtype == np.int64
    assert canonical([np.int32(3), 4], "item", "t").dtype == np.int64
    assert canonical([1.0, np.float32(2.0)], "item", "t").tolist() == [1, 2]
    mixed = canonical([1, True, "x"], "item", "t")
    assert mixed.tolist() == ["1", "true", "x"] and mixed.dtype == object
    assert canonical(np.array([I64_MAX], dtype=np.uint64), "item", "t").dtype == np.int64
    big = canonical(np.array([I64_MAX + 1, 1], dtype=np.uint64), "item", "t")
    assert big.tolist() == ["9223372036854775808", "1"]
    assert canonical(np.array([], dtype=np.uint64), "item", "t").dtype == np.int64


def test_from_text_missing_chunks_and_typed():
    """from_text mutants 1-38."""
    with pytest.raises(InputError) as err:
        from_text(pa.array(["1", "2", None]), "user", "x.csv")
    assert str(err.value) == "x.csv, row 2: missing user id"
    two = from_text(pa.chunked_array([["1"], ["x"]]), "user", "s")
    assert two.tolist() == ["1", "x"]
    one = from_text(pa.chunked_array([["3", "4"]]), "user", "s")
    assert one.tolist() == [3, 4] and one.dtype == np.int64
    none = from_text(pa.chunked_array([], type=pa.string()), "user", "s")
    assert none.dtype == np.int64 and len(none) == 0
    assert from_text(pa.array([1, 2]), "user", "s").tolist() == [1, 2]
    with pytest.raises(InputError) as err:
        from_text(pa.array([1.0, float("nan")]), "user", "typed.csv")
    assert str(err.value) == "typed.csv, row 1: missing user id"


# --- receval.analysis.stats ----------------------------------------------------


def test_adjust_pvalues_rejects_values_outside_0_1():
    """adjust_pvalues mutant 18 (``|`` → ``&``: no p-value is both < 0 and > 1)."""
    from receval.analysis.stats import adjust_pvalues
    from receval.errors import ReceValError

    for bad in ([0.5, 1.5], [-0.1, 0.5]):
        with pytest.raises(ReceValError, match=r"\[0, 1\]"):
            adjust_pvalues(bad)


def test_no_correction_by_none():
    """normalize_correction mutant 4: None means no correction."""
    from receval.analysis.stats import adjust_pvalues, normalize_correction

    assert normalize_correction(None) == "none"
    assert adjust_pvalues([0.2, 0.01], None).tolist() == [0.2, 0.01]


def test_run_test_randomization_pairs_a_with_b():
    """run_test mutants 23, 26: d = a - b = [1, 1, 3], T = 5; of the 8 sign
    vectors only (+,+,+) and (-,-,-) reach |sum| >= 5: p = 2/8 (exact)."""
    from receval.analysis.stats import randomization_test, run_test

    assert run_test("randomization", [1.0, 2.0, 4.0], [0.0, 1.0, 1.0]).pvalue == 0.25
    # Monte Carlo: the seed is passed on (a seed other than the default 0)
    a = [float(i % 7) for i in range(40)]
    b = [float(i % 5) for i in range(40)]
    got = run_test("randomization", a, b, n_resamples=50, seed=3).pvalue
    assert got == randomization_test(a, b, n_resamples=50, seed=3).pvalue
    assert got != randomization_test(a, b, n_resamples=50, seed=0).pvalue


def test_tukey_hsd_of_one_system():
    """tukey_hsd mutant 9: one system, the 1x1 matrix [[1]]."""
    from receval.analysis.stats import tukey_hsd

    assert tukey_hsd(np.array([[1.0], [2.0]])).tolist() == [[1.0]]


def test_moments_of_integers():
    """Moments.of mutant 3: integer input is read as float64: [1, 2, 4] has
    mean 7/3 and variance ((4/3)^2 + (1/3)^2 + (5/3)^2) / 2 = 7/3."""
    from receval.analysis.stats import Moments

    m = Moments.of(np.array([1, 2, 4]))
    assert m.n == 3 and m.mean() == 7 / 3 and m.variance() == pytest.approx(7 / 3, rel=1e-15)
    big = Moments.of(np.array([2**40, 2**40 + 2], dtype=np.int64))  # squares beyond int64
    assert big.variance() == 2.0
    # float32 values are split in float64 (NumPy 2 keeps float32 * float in
    # float32): the variance is the exact one of the float32 values, rounded once
    f32 = np.array([0.1, 0.2, 0.7, 1e-3], dtype=np.float32)
    xs = [Fraction(float(v)) for v in f32]
    mean = sum(xs) / len(xs)
    exact = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    assert Moments.of(f32).variance() == float(exact)


# --- receval.evaluation.conventions --------------------------------------------


def test_markdown_sections_has_every_tool():
    """markdown_sections mutant 5 (``continue`` → ``break`` at receval's own
    convention, which comes first)."""
    from receval.evaluation.conventions import CONVENTIONS, markdown_sections

    text = markdown_sections()
    for name in CONVENTIONS:
        assert (f"### `{name}` —" in text) == (name != "receval")


# --- receval.metrics.kernels.corrected -----------------------------------------


def test_corrected_estimate_needs_one_negative_not_two():
    """corrected.estimate mutant 56 (``negatives < 1`` → ``<= 1``): a list of
    the held-out item and ONE sampled negative has an estimate; a list with no
    negative has none (NaN), as the docstring says."""
    import pandas as pd

    import receval

    recs = pd.DataFrame(
        [(1, 10, 1), (1, 11, 2), (2, 20, 1)], columns=["user", "item", "rank"]
    )  # user 1: the held-out item 10 and one negative; user 2: no negative
    truth = pd.DataFrame([(1, 10), (2, 20)], columns=["user", "item"])
    metric = "hit_rate@1[correction=bv]"
    res = receval.evaluate(recs, truth, [metric], catalog_size=100)
    values = res.per_user[metric]
    assert np.isfinite(values[1]) and np.isnan(values[2])


def test_range_notes_only_for_corrected_estimates():
    """corrected.range_notes mutants 7, 21: a metric without ``correction=``
    gets no note whatever its value (parse_metric drops ``correction=none``)."""
    from receval.metrics.kernels.corrected import range_notes
    from receval.metrics.spec import parse_metric

    for text in ("recall@10", "hit_rate@10[correction=none]"):
        spec = parse_metric(text)
        assert range_notes({str(spec): 2.0}, [spec]) == []
    spec = parse_metric("hit_rate@10[correction=bv]")
    assert len(range_notes({str(spec): 2.0}, [spec])) == 1


# --- receval.metrics.kernels.sampled -------------------------------------------


def test_precision_needs_k_and_says_so():
    """sampled._check_metric mutant 19 (the message)."""
    from receval.metrics.kernels.sampled import metric_at_rank

    with pytest.raises(ValueError, match=r"^precision needs a cut-off k \(precision@k"):
        metric_at_rank("precision", None, np.array([1, 2]))
    assert metric_at_rank("precision", 2, np.array([1, 2, 3])).tolist() == [0.5, 0.5, 0.0]
