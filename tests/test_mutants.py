"""Tests written to kill the mutants that survived benchmarks/mutation.py.

Each test names the mutants it kills (see docs/mutation.md). Expected values are
worked by hand from the module's rule, never computed by receval along another
path.
"""

from __future__ import annotations

import datetime
import math
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval.errors import InputError, ReceValError
from receval.ids import canonical, canonical_value, from_text, order_of, runs, text_value
from receval.metrics.kernels import beyond, trec
from receval.metrics.kernels.batch import Batch, Cells, cumsum_rows

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


# --- receval.metrics.kernels.batch ---------------------------------------------


def _running_sums(m: int, w: int) -> np.ndarray:
    """Row u of x is u, u + 1, ..., u + w - 1: its running sum at column j is
    (j + 1) * u + j * (j + 1) / 2."""
    j = np.arange(w)
    return np.array([(j + 1) * u + j * (j + 1) // 2 for u in range(m)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cumsum_rows_of_many_users(dtype):
    """64 users or more, column-major: the compiled loop (float64) and the
    column-by-column one (float32, which it does not take) both give each row's
    running sum (cumsum_rows mutants 33, 49, 61, 69)."""
    m, w = 70, 5
    x = np.asfortranarray(np.add.outer(np.arange(m), np.arange(w)).astype(dtype))
    got = cumsum_rows(x)
    assert got.dtype == dtype
    assert got.tolist() == _running_sums(m, w).tolist()


def test_cells_from_dense_and_dense_built():
    """Cells.from_dense keeps each nonzero's value (from_dense mutants 24, 34);
    asking for the dense ideal matrix alone counts as a dense matrix built
    (dense_built mutant 6)."""
    c = Cells.from_dense(np.array([[0.0, 3.0, 0.5], [0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]))
    assert c.value.tolist() == [3.0, 0.5, 2.0]
    assert c.user.tolist() == [0, 0, 2] and c.pos.tolist() == [1, 2, 0]
    b = Batch(
        c,
        Cells.from_dense(np.array([[3.0], [0.0], [2.0]])),
        n=np.array([3, 0, 1]),
        n_relevant=np.array([1, 0, 1]),
    )
    assert not b.dense_built()
    assert b.ideal.tolist() == [[3.0], [0.0], [2.0]]
    assert b.dense_built()


def test_filled_positions_with_gaps():
    """Ranks as positions with gaps: filled() is True exactly where an item
    sits (filled mutants 3, 10)."""
    slots = Cells.from_dense(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    hits = Cells.from_dense(np.zeros((2, 3)))
    b = Batch(
        hits,
        Cells.from_dense(np.zeros((2, 1))),
        n=np.array([3, 2]),
        n_relevant=np.array([0, 0]),
        slots=slots,
    )
    assert not b.dense_built()
    assert b.filled().tolist() == [[True, False, True], [False, True, False]]
    assert b.dense_built()  # the filled matrix is a dense one (dense_built mutant 7)
    # items retrieved: those in the slots, not the positions (retrieved mutant 16)
    assert b.retrieved(None).tolist() == [2, 1]
    assert b.retrieved(2).tolist() == [1, 1]


# --- receval.metrics.kernels.trec ----------------------------------------------


def _one_list(grades: list[float], ideal: list[float], **more) -> Batch:
    """A batch of one user whose list has these grades (0: not relevant)."""
    return Batch(
        Cells.from_dense(np.array([grades], dtype=np.float64)),
        Cells.from_dense(np.array([ideal], dtype=np.float64)),
        n=np.array([len(grades)]),
        n_relevant=np.array([len(ideal)]),
        **more,
    )


def test_iprec_with_a_cut_off():
    """iprec[recall=1]@k, list relevant at positions 1 and 3, R = 2: the 2nd
    relevant item is at position 3, precision 2/3 there and nothing after it
    within @3; @2 never reaches it: 0 (_in_top mutant 8)."""
    b = _one_list([1.0, 0.0, 1.0, 0.0], [1.0, 1.0])
    assert trec.iprec(b, 3, recall=1.0).tolist() == [2 / 3]
    assert trec.iprec(b, 2, recall=1.0).tolist() == [0.0]


def test_g_reads_the_positive_grades():
    """G with grades="positive", threshold 2, list grades (1, 2), ideal (2, 1):
    C = (2, 3), S = (1, 3), G = (1/log2(3) + 2/log2(2)) / 3; relevant grades
    only would give (2/log2(3)) / 3 (g mutant 5)."""
    b = _one_list(
        [0.0, 2.0],
        [2.0],
        positive_hits=Cells.from_dense(np.array([[1.0, 2.0]])),
        positive_ideal_cells=Cells.from_dense(np.array([[2.0, 1.0]])),
    )
    assert trec.g(b, None, grades="positive")[0] == pytest.approx((1 / np.log2(3) + 2) / 3)


# --- receval.metrics.kernels.beyond --------------------------------------------


def test_mean_over_an_empty_list_is_nan_without_a_warning():
    """The mean over the top-k of an empty list is NaN, and 0/0 is never
    computed (a RuntimeWarning on stderr): _mean_over_list mutant 29."""
    values = np.array([[2.0, 4.0], [5.0, 7.0]])
    valid = np.array([[True, True], [False, False]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = beyond._mean_over_list(values, valid, np.array([2, 0]))
    assert got[0] == 3.0 and np.isnan(got[1])


# --- receval.metrics.kernels.groups --------------------------------------------

GROUPS_AB = {1: "a", 2: "b", 3: "a", 4: "b"}


def test_reo_per_group():
    """reo@2, groups a = {1, 3}, b = {2, 4}: user 1 (truth 1, 3) gets both a
    items, user 2 (truth 2, 4) one b item of two: P(a) = 2/2, P(b) = 1/2,
    REO = std/mean = 0.25/0.75 = 1/3 (reo mutant 3: every group's hits summed
    gives P = 3/2 for both, REO 0)."""
    res = receval.evaluate(
        {1: [1, 3], 2: [2, 1]}, {1: [1, 3], 2: [2, 4]}, "reo@2", item_groups=GROUPS_AB
    )
    assert res.summary["reo@2"] == pytest.approx(1 / 3, abs=1e-15)


def test_miscalibration_reads_only_the_top_k():
    """History (1: a, 2: b): p = (1/2, 1/2). miscalibration@1 of the list
    (1, 2): q = (1, 0), C = ½ ln(0.5 / (0.99 + 0.005)) + ½ ln(0.5 / 0.005); the
    whole list gives q = p, C = 0 (miscalibration mutant 50; @2 in the same run
    makes the batch hold both positions)."""
    metrics = ["miscalibration@1", "miscalibration@2"]
    res = receval.evaluate({1: [1, 2]}, {1: [1]}, metrics, item_groups=GROUPS_AB, train={1: [1, 2]})
    want = 0.5 * math.log(0.5 / 0.995) + 0.5 * math.log(100)
    assert res.summary["miscalibration@1"] == pytest.approx(want, rel=1e-14)
    assert res.summary["miscalibration@2"] == 0.0


def test_awrf_with_a_target_group_the_list_misses():
    """A list of group a only, uniform target (1/2, 1/2): ε = (1, 0),
    μ = (3/4, 1/4), JSD = ½ log2(4/3) + ¼ log2(2/3) + ¼ log2(2) bits; the last
    term is the missed group's (awrf mutant 35)."""
    res = receval.evaluate({1: [1, 3]}, {1: [1]}, "awrf@2", item_groups=GROUPS_AB)
    jsd = 0.5 * math.log2(4 / 3) + 0.25 * math.log2(2 / 3) + 0.25
    assert res.summary["awrf@2"] == pytest.approx(1 - jsd, rel=1e-14)


# --- receval.engines.numpy_engine: tie rules -----------------------------------


@pytest.mark.parametrize(
    ("ties", "first_is_9"),
    [
        ("item", True),
        ("item_desc", False),
        ("item_str", False),
        ("item_str_desc", True),
        ("input", False),
    ],
)
def test_tie_rules_on_numeric_ids(ties, first_is_9):
    """Items 10 then 9 (input order), equal scores, 9 relevant: precision@1 is
    1 when 9 comes first. Numerically 9 < 10, as strings "10" < "9"; input
    order puts 10 first (_tie_key mutants 33, 69)."""
    recs = pd.DataFrame({"user": [1, 1], "item": [10, 9], "score": [0.5, 0.5]})
    res = receval.evaluate(recs, {1: [9]}, "precision@1", ties=ties)
    assert res.summary["precision@1"] == (1.0 if first_is_9 else 0.0)


def test_a_rank_twice_names_both_rows_user_and_item():
    """Ranks 1, 2, 1 in one list: an InputError naming the later row (2, item 7)
    and the earlier one (0) (_order_lists mutants 34, 56)."""
    recs = pd.DataFrame({"user": [1, 1, 1], "item": [10, 9, 7], "rank": [1, 2, 1]})
    message = r"row 2, user 1, item 7: rank 1 appears twice in this user's list \(rows 0 and 2\)"
    with pytest.raises(InputError, match=message):
        receval.evaluate(recs, {1: [9]}, "precision@1")


# --- receval.evaluation.accumulator: merge -------------------------------------


def test_merge_messages():
    """Each refusal of merge() says what differs, word for word (merge mutants
    2, 3, 10, 20-26)."""
    acc = receval.Accumulator(["ndcg@10"])
    with pytest.raises(ReceValError, match=r"^merge\(\) takes an Accumulator; got int$"):
        acc.merge(42)
    with pytest.raises(
        ReceValError,
        match=r"^merge\(\): the accumulators differ in their metrics: ndcg@10 here, ndcg@5 in "
        r"the other$",
    ):
        acc.merge(receval.Accumulator(["ndcg@5"]))
    with pytest.raises(
        ReceValError,
        match=r"^merge\(\): the accumulators differ in their options: ties='item' here, "
        r"ties='item_desc' in the other$",
    ):
        acc.merge(receval.Accumulator(["ndcg@10"], ties="item_desc"))
    items = (
        r"^merge\(\): the accumulators differ in their item inputs \(train=, catalog=, "
        r"item_features=, popular=, item_groups=\): their parts would be counted against "
        r"different items; build every worker's accumulator with the same ones$"
    )
    with pytest.raises(ReceValError, match=items):
        acc.merge(receval.Accumulator(["ndcg@10"], item_groups={1: "a"}))


def test_merge_counts_the_other_rows_for_default_user_ids():
    """update_scores numbers users by the rows fed so far, merged ones
    included: 2 rows here, 3 merged, so the next row is user 5 (merge mutant
    28: 3). An accumulator without ``_items_digest`` (pickled before it
    existed) merges as one without item inputs (merge mutant 16)."""
    acc = receval.Accumulator(["precision@1"])
    acc.update_scores(np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([[1, 0], [1, 0]]))
    other = receval.Accumulator(["precision@1"])
    other.update_scores(np.array([[0.5, 0.4]] * 3), np.array([[1, 0]] * 3), users=[10, 11, 12])
    del other._items_digest
    acc.merge(other)
    acc.update_scores(np.array([[0.3, 0.7]]), np.array([[0, 1]]))
    per_user = acc.compute().per_user["precision@1"]
    assert per_user.to_dict() == {0: 1.0, 1: 0.0, 5: 1.0, 10: 1.0, 11: 1.0, 12: 1.0}


@pytest.mark.parametrize("src", [np.int32, np.float32, np.uint8])
def test_cumsum_rows_to_int64_from_other_dtypes(src) -> None:  # type: ignore[no-untyped-def]
    """batch._native_kind: only bool input has a compiled int64 running sum;
    other dtypes summed into int64 take NumPy's path (``src != np.bool_``
    read int32/float32/uint8 buffers as bools). 64+ users, column-major:
    the shape that would reach the compiled loop."""
    x = np.asfortranarray(np.tile(np.array([[3, 0, 2, 5]], dtype=src), (70, 1)))
    out = cumsum_rows(x, np.int64)
    assert out.dtype == np.int64
    assert (out == np.array([3, 3, 5, 10])).all()


def test_ild_of_a_short_list_counts_only_its_items() -> None:
    """beyond.ild (categories, Jaccard) of a list shorter than k: its padding is
    no item. By hand, a = {x, y}, b = {y}, c = {y, z}: user 2's list b, c has one
    pair, 1 - 1/2; user 1's three pairs are 1 - 1/2, 1 - 1/3, 1 - 1/2. (The mutant
    ``valid | (size > 0)`` still passes this: the padding's slots seem to hold no
    categories, which would make it equivalent; docs/mutation.md.)"""
    feats = {"a": {"x", "y"}, "b": {"y"}, "c": {"y", "z"}}
    with warnings.catch_warnings():  # ild mutant 139 (``/ ok``) gave the same values, warning
        warnings.simplefilter("error")
        res = receval.evaluate(
            {1: ["a", "b", "c"], 2: ["b", "c"]}, {1: ["a"], 2: ["b"]}, "ild@3", item_features=feats
        )
    assert res.per_user.loc[2, "ild@3"] == pytest.approx(0.5, abs=1e-15)
    assert res.per_user.loc[1, "ild@3"] == pytest.approx((0.5 + 2 / 3 + 0.5) / 3, abs=1e-15)


def test_cumsum_rows_int64_into_float64_and_bool_into_int64() -> None:
    """cumsum_rows with 64+ column-major rows, the shape the compiled loop takes:
    int64 input asked for float64 gives float64 (it gave int64 until the seed-2
    mutation sample found it: ``_native_kind`` read a float64 ``dst`` as None;
    cumsum_rows mutant 19 passed no dtype on), and bool input summed into int64
    is written into an int64 buffer (mutant 29 wrote the compiled int64 sums into
    a float64 one)."""
    m, w = 70, 5
    ints = np.asfortranarray(np.add.outer(np.arange(m), np.arange(w)).astype(np.int64))
    got = cumsum_rows(ints, np.float64)
    assert got.dtype == np.float64
    assert got.tolist() == _running_sums(m, w).tolist()
    flags = np.asfortranarray(np.tile(np.array([[True, False, True, True, False]]), (m, 1)))
    counts = cumsum_rows(flags, np.int64)
    assert counts.dtype == np.int64
    assert (counts == np.array([1, 1, 2, 3, 3])).all()
    # bool asked for float64 is not the compiled bool-to-int64 loop (_native_kind mutant 16)
    as_float = cumsum_rows(flags, np.float64)
    assert as_float.dtype == np.float64
    assert (as_float == np.array([1.0, 1.0, 2.0, 3.0, 3.0])).all()


def test_cells_from_dense_with_empty_last_rows() -> None:
    """Cells.from_dense of a matrix whose last rows hold nothing: one offset per
    row all the same (from_dense mutant 7 counted only up to the last nonzero
    row and failed)."""
    c = Cells.from_dense(np.array([[0.0, 1.5], [0.0, 0.0], [0.0, 0.0]]))
    assert c.offsets.tolist() == [0, 1, 1, 1]
    assert c.offsets.dtype == np.int64  # offsets index arrays (from_dense mutant 11)
    assert c.rows == 3


def test_ild_of_dense_features_in_several_blocks() -> None:
    """beyond.ild with dense feature vectors wide enough (2**19) that 2 users fill
    a block: the second block holds users 3 and 4 only (ild mutant 41 sliced it
    from the first user and failed). Cosine by hand: a ⊥ b, c = (a + b)/√2, e ⊥ all."""
    d = 1 << 19

    def vec(*nonzero: int) -> np.ndarray:
        x = np.zeros(d)
        x[list(nonzero)] = 1.0
        return x

    feats = {"a": vec(0), "b": vec(1), "c": vec(0, 1), "e": vec(d - 1)}
    res = receval.evaluate(
        {1: ["a", "b"], 2: ["a", "c"], 3: ["c", "e"], 4: ["b", "nofeat"]},
        {1: ["a"], 2: ["a"], 3: ["c"], 4: ["b"]},
        "ild@2",
        item_features=feats,
    )
    got = res.per_user["ild@2"]
    assert got[1] == 1.0 and got[3] == 1.0
    assert got[2] == pytest.approx(1 - math.sqrt(0.5), abs=1e-15)
    assert math.isnan(got[4])  # one item with features: no pair


def test_awrf_with_the_catalog_as_target() -> None:
    """awrf with ``target=catalog``: catalog 1 (a), 2 (b), 3 (a) gives t = (2/3, 1/3);
    the list's top item is of group a, ε = (1, 0), μ = (5/6, 1/6):
    JSD = ½ log2(6/5) + ⅓ log2(4/5) + ⅙ log2(2) bits (_target mutant 3 never
    matched "catalog" and used the uniform target)."""
    res = receval.evaluate(
        {1: [1, 2]}, {1: [1]}, "awrf@1[target=catalog]", item_groups=GROUPS_AB, catalog=[1, 2, 3]
    )
    jsd = 0.5 * math.log2(6 / 5) + math.log2(4 / 5) / 3 + 1 / 6
    assert res.summary["awrf@1[target=catalog]"] == pytest.approx(1 - jsd, rel=1e-14)


def test_rating_kernels_on_constant_and_empty_users_warn_nothing() -> None:
    """Per-user R² and Pearson's r of a user whose values are constant are NaN and
    raise no NumPy warning (0/0 is expected there: r2_by_user mutant 23 and
    _pearson_sorted mutant 15 let it warn); with no pairs at all every user is NaN
    (_Groups.constant mutant 5 returned a float mask that cannot index)."""
    from receval.metrics.kernels import rating

    a, p, u = np.array([2.0, 2, 1, 3]), np.array([2.0, 2, 1, 2]), np.array([0, 0, 1, 1])
    none, no_users = np.array([]), np.array([], dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r2 = rating.r2_by_user(a, p, u)
        r = rating.pearson_by_user(a, p, u)
        empty = rating.r2_by_user(none, none, no_users, n_users=2)
    assert math.isnan(r2[0]) and r2[1] == 0.5  # 1 - (0 + 1) / 2
    assert math.isnan(r[0]) and r[1] == 1.0
    assert np.isnan(empty).all() and len(empty) == 2


# --- seed-3 sample (docs/mutation.md) ---------------------------------------------


def test_ranking_denominators_without_a_cutoff() -> None:
    """Truth {a, b}, list a, x, b (n = 3), no cut-off: AP with ``denominator=k``
    divides by n, (1/1 + 2/3) / 3 (average_precision mutant 34 divided by a
    missing k); nDCG with ``ideal=k`` takes n items at the top grade as ideal,
    (1 + 1/2) / (1 + 1/log2 3 + 1/2) (ndcg mutant 38); utility@1 counts the
    first item only, 1, the whole list 2 − 2 = 0 with a, x, y, b (utility mutant 5)."""
    res = receval.evaluate(
        {1: ["a", "x", "b"]}, {1: ["a", "b"]}, ["ap[denominator=k]", "ndcg[ideal=k]"]
    )
    assert res.summary["ap[denominator=k]"] == pytest.approx(5 / 9, rel=1e-15)
    idcg = 1 + 1 / math.log2(3) + 0.5
    assert res.summary["ndcg[ideal=k]"] == pytest.approx(1.5 / idcg, rel=1e-15)
    util = receval.evaluate({1: ["a", "x", "y", "b"]}, {1: ["a", "b"]}, ["utility@1", "utility"])
    assert util.summary == {"utility@1": 1.0, "utility": 0.0}


def test_r_precision_at_a_multiple_of_r() -> None:
    """R = 4, mult = 0.5: s = ⌊0.5 · 4 + 0.9⌋ = 2 (trec_eval's Rprec_mult); the
    list a, x, b holds 1 relevant item in its first 2: 1/2 (r_precision mutant 7)."""
    res = receval.evaluate({1: ["a", "x", "b"]}, {1: ["a", "b", "c", "d"]}, "r_precision[mult=0.5]")
    assert res.summary["r_precision[mult=0.5]"] == 0.5


def test_graded_metrics_of_positive_grades_under_a_threshold() -> None:
    """Truth a = 2, b = 1 with threshold 2 (only a relevant), list b, a.
    RBP: relevant grades only, 0.2 · (0 + 0.8 · 2/2) = 0.16; ``grades=positive``
    counts b too, 0.2 · (1/2 + 0.8) = 0.26 (rbp mutant 21 swapped them).
    Rndcg (levels after grade 2 and grade 1, n = R' = 2, so no level at n):
    (1/2 + (1 + 2/L)/(2 + 1/L)) / 2 with L = log2 3, the same with
    ``grades=positive`` at threshold 2 as with every grade relevant (rndcg
    mutant 5 read the ideal of the relevant grades only; mutant 96 added a
    level at n = R')."""
    truth = {1: {"a": 2, "b": 1}}
    metrics = ["rbp", "rbp[grades=positive]", "rndcg[grades=positive]"]
    res = receval.evaluate({1: ["b", "a"]}, truth, metrics, threshold=2)
    assert res.summary["rbp"] == pytest.approx(0.16, rel=1e-14)
    assert res.summary["rbp[grades=positive]"] == pytest.approx(0.26, rel=1e-14)
    el = math.log2(3)
    want = (0.5 + (1 + 2 / el) / (2 + 1 / el)) / 2
    assert res.summary["rndcg[grades=positive]"] == pytest.approx(want, rel=1e-14)
    every = receval.evaluate({1: ["b", "a"]}, truth, "rndcg")
    assert every.summary["rndcg"] == pytest.approx(want, rel=1e-14)


def test_rank_positions_with_gaps_in_item_and_judgment_metrics() -> None:
    """rank="position", items at ranks 1 and 3 (rank 2 holds nothing).
    unjudged@3: only the item at rank 1 is unjudged: 1/3 (trec._filled mutant 6
    counted the empty rank 2 and dropped rank 3). arp (training popularity p: 2,
    q: 1): @2 reads rank 1 only, 2; @3 both items, (2 + 1) / 2 (beyond.top_of
    mutant 7 read one rank more, mutant 8 counted the gap as an item)."""
    recs = pd.DataFrame({"user": [1, 1], "item": ["u", "j"], "rank": [1, 3]})
    res = receval.evaluate(recs, {1: ["j"]}, "unjudged@3", rank="position")
    assert res.summary["unjudged@3"] == pytest.approx(1 / 3, rel=1e-15)
    recs = pd.DataFrame({"user": [1, 1], "item": ["p", "q"], "rank": [1, 3]})
    train = {1: ["p"], 2: ["p"], 3: ["q"]}
    res = receval.evaluate(recs, {1: ["p"]}, ["arp@2", "arp@3"], train=train, rank="position")
    assert res.summary == {"arp@2": 2.0, "arp@3": 1.5}


def test_novelty_with_one_training_user() -> None:
    """One training user: an item seen by it, or never seen (popularity 1), has
    −log2(1/1) = 0 bits (novelty mutant 17 divided by at least 2 users)."""
    res = receval.evaluate({1: ["a", "b"]}, {1: ["a"]}, "novelty@2", train={9: ["a"]})
    assert res.summary["novelty@2"] == 0.0


def test_group_metrics_with_ungrouped_items_and_users_without_history() -> None:
    """awrf@3 of a list whose first item is in no group: ε from ranks 2 (a) and
    3 (b), a(r) = 1 / log2(r + 1), so ε = (1/L, 1/2) / (1/L + 1/2), L = log2 3, against
    the uniform target; no NumPy warning (groups._membership mutant 10 divided
    by the ungrouped item's zero count). awrf with the geometric discount reads
    ``patience``: ε = (1, p) / (1 + p) (awrf mutant 44 dropped it). A user
    without history is NaN for miscalibration, the users before it computed.
    Nobody evaluated: exposure is NaN."""

    def awrf_of(e_a: float, e_b: float) -> float:
        mu = ((e_a + 0.5) / 2, (e_b + 0.5) / 2)
        kl_e = sum(e * math.log2(e / m) for e, m in zip((e_a, e_b), mu, strict=True) if e > 0)
        kl_t = sum(0.5 * math.log2(0.5 / m) for m in mu)
        return 1 - (kl_e + kl_t) / 2

    el = math.log2(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = receval.evaluate({1: [5, 1, 2]}, {1: [1]}, "awrf@3", item_groups=GROUPS_AB)
    share = (1 / el) / (1 / el + 0.5)
    assert res.summary["awrf@3"] == pytest.approx(awrf_of(share, 1 - share), rel=1e-14)
    geo = "awrf@2[discount=geometric,patience=0.9]"
    res = receval.evaluate({1: [1, 2]}, {1: [1]}, geo, item_groups=GROUPS_AB)
    assert res.summary[geo] == pytest.approx(awrf_of(1 / 1.9, 0.9 / 1.9), rel=1e-14)
    res = receval.evaluate(
        {1: [1, 2], 2: [3, 4]},
        {1: [1], 2: [3]},
        "miscalibration@2",
        item_groups=GROUPS_AB,
        train={1: [1, 2]},
    )
    assert res.per_user.loc[1, "miscalibration@2"] == 0.0  # q = p = (1/2, 1/2)
    assert math.isnan(res.per_user.loc[2, "miscalibration@2"])
    truth = pd.DataFrame({"user": [1], "item": [5], "relevance": [0]})  # nobody relevant
    res = receval.evaluate({1: [1, 2]}, truth, "exposure@2[group=a]", item_groups=GROUPS_AB)
    assert math.isnan(res.summary["exposure@2[group=a]"])


def test_spearman_of_no_pairs() -> None:
    """Spearman's rho over no pairs is NaN (an edge of rating.spearman; its
    mutant 9, groups sized from the data, is equivalent: the empty case returns
    first, and one group of a non-empty input has size 1 either way)."""
    from receval.metrics.kernels import rating

    assert math.isnan(rating.spearman(np.array([]), np.array([])))


def test_group_tally_zeros() -> None:
    """GroupTally.zeros(G, k): (G, k) slots and hits, k slots in all, G relevant
    and seen, no user (what the engine combines when no part brought a tally;
    its mutants 14 and 16 left an argument out)."""
    from receval.metrics.kernels.groups import GroupTally

    t = GroupTally.zeros(2, 3)
    assert t.slots.shape == t.hits.shape == (2, 3) and t.all_slots.shape == (3,)
    assert t.relevant.tolist() == t.seen.tolist() == [0, 0] and t.users == 0
    assert t.slots.dtype == t.all_slots.dtype == np.int64
    assert t.slots is not t.hits  # independent arrays: tallies are added into them


def test_a_missing_id_in_a_numpy_object_array_names_its_role() -> None:
    """A NumPy object array of ids with a None: the error names the source, the
    row and the role (ids._from_numpy mutant 57 lost the role)."""
    with pytest.raises(InputError, match=r"^recs, row 1: missing user id$"):
        canonical(np.array([1, None, "a"], dtype=object), "user", "recs")


def test_unused_dictionary_values_are_dropped() -> None:
    """ids.used_values keeps the dictionary's values the rows use, and recodes
    the rows (used_values mutant 23 kept every value): an unused text category
    beside digit strings no longer decides the ids' kind."""
    from receval.ids import used_values

    col = pa.DictionaryArray.from_arrays(pa.array([2, 0, 2]), pa.array(["7", "x", "9"]))
    codes, values = used_values(col)
    assert values.to_pylist() == ["7", "9"] and codes.tolist() == [1, 0, 1]
    users = pd.Categorical(["7", "9"], categories=["7", "x", "9"])
    recs = pd.DataFrame({"user": users, "item": [1, 2], "rank": [1, 1]})
    res = receval.evaluate(recs, {7: [1], 9: [3]}, "hit_rate@1")
    assert res.per_user.index.tolist() == [7, 9]  # integers, as the digits read
