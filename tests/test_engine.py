"""Behaviour of evaluate(): ordering, input kinds, policies, counts, blocks, rendering."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval.engines import numpy_engine

ALL = [
    "precision@1,2,5",
    "precision@3[denominator=retrieved]",
    "recall@2,5",
    "f1@3",
    "f1@3[beta=2]",
    "hit_rate@1,3",
    "ap@3",
    "ap@3[denominator=relevant]",
    "ap@3[denominator=hits]",
    "ap@3[denominator=retrieved]",
    "ap",
    "rr",
    "rr@2",
    "r_precision",
    "r_precision@2",
    "dcg@3",
    "dcg@3[gain=exp,base=10]",
    "ndcg",
    "ndcg@3",
    "ndcg@3[gain=exp]",
    "ndcg@3[ideal=retrieved]",
    "rbp@5",
    "rbp[p=0.5]",
    "err@3",
    "err[max_grade=5]",
    "auc",
    "auc@3",
]


def test_score_ties_break_by_item_id_ascending_numeric() -> None:
    # items 9 and 10 tie: numeric order puts 9 first
    recs = pd.DataFrame({"user": [1, 1], "item": [10, 9], "score": [0.5, 0.5]})
    truth = {1: [9]}
    assert receval.evaluate(recs, truth, "rr").summary["rr"] == 1.0


def test_score_ties_break_by_item_id_numbers_then_text_by_code_point() -> None:
    # text by code point: "b10" < "b9"
    recs = pd.DataFrame({"user": ["a", "a"], "item": ["b9", "b10"], "score": [0.5, 0.5]})
    assert receval.evaluate(recs, {"a": ["b9"]}, "rr").summary["rr"] == 0.5
    assert receval.evaluate(recs, {"a": ["b10"]}, "rr").summary["rr"] == 1.0
    # digit strings are numbers (the text rule, #30): 9 < 10, as in a CSV file;
    # numbers come before text whatever else the column holds
    recs = pd.DataFrame({"user": ["a"] * 3, "item": ["b1", "10", "9"], "score": [0.5] * 3})
    assert receval.evaluate(recs, {"a": ["9"]}, "rr").summary["rr"] == 1.0
    assert receval.evaluate(recs, {"a": ["10"]}, "rr").summary["rr"] == 0.5
    assert receval.evaluate(recs, {"a": ["b1"]}, "rr").summary["rr"] == pytest.approx(1 / 3)


def test_rank_column_wins_over_score() -> None:
    recs = pd.DataFrame({"user": [1, 1], "item": [1, 2], "score": [0.1, 0.9], "rank": [1, 2]})
    assert receval.evaluate(recs, {1: [1]}, "rr").summary["rr"] == 1.0
    # gaps in ranks are fine: the order counts, not the value
    recs["rank"] = [10, 3]
    assert receval.evaluate(recs, {1: [1]}, "rr").summary["rr"] == 0.5


def test_auc_counts_score_ties_half() -> None:
    # relevant 1 and 3; scores 1, 1, .5, .5 -> pairs (1,2) tie ½, (1,4) 1, (3,2) 0, (3,4) tie ½
    assert receval.score("auc", [1, 2, 3, 4], {1, 3}, scores=[1, 1, 0.5, 0.5]) == 0.5
    assert receval.score("auc", [1, 2, 3, 4], {1, 3}) == 0.75
    assert math.isnan(receval.score("auc", [1, 3], {1, 3}))
    assert math.isnan(receval.score("auc", [], {1}))
    # ties cut at k: top 3 is [1, 2, 3] with 3 tied to the excluded 4
    assert receval.score("auc@3", [1, 2, 3, 4], {1, 3}, scores=[1, 1, 0.5, 0.5]) == 0.25


RECS = pd.DataFrame(
    {
        "user": ["u1", "u1", "u1", "u2", "u2", "u2", "u2", "u2", "u4", "u4"],
        "item": [1, 6, 8, 1, 2, 3, 4, 5, 1, 2],
        "score": [3.0, 2.0, 1.0, 5.0, 4.0, 3.0, 2.0, 1.0, 2.0, 1.0],
    }
)
TRUTH = pd.DataFrame(
    {
        "user": ["u1"] * 6 + ["u2"] * 3 + ["u3"] * 3 + ["u5"],
        "item": [1, 2, 3, 4, 5, 6, 2, 4, 6, 2, 4, 6, 1],
        "relevance": [3, 1, 1, 2, 1, 1, 1, 2, 3, 1, 1, 1, 0],
    }
)


def _same(a: receval.Result, b: receval.Result) -> None:
    pd.testing.assert_frame_equal(a.per_user, b.per_user)
    assert a.summary == b.summary


def test_every_input_kind_gives_the_same_numbers() -> None:
    base = receval.evaluate(RECS, TRUTH, ALL)
    _same(base, receval.evaluate(pa.Table.from_pandas(RECS), pa.Table.from_pandas(TRUTH), ALL))
    _same(base, receval.evaluate(pl.from_pandas(RECS), pl.from_pandas(TRUTH), ALL))
    lists = {
        u: list(g.sort_values("score", ascending=False)["item"]) for u, g in RECS.groupby("user")
    }
    grades: dict[str, dict[int, float]] = {}
    for u, i, g in TRUTH.itertuples(index=False):
        grades.setdefault(u, {})[i] = g
    from_maps = receval.evaluate(lists, grades, [m for m in ALL if "auc" not in m])
    for col in from_maps.per_user:
        np.testing.assert_array_equal(from_maps.per_user[col], base.per_user[col])


def test_row_and_user_order_never_matter() -> None:
    base = receval.evaluate(RECS, TRUTH, ALL)
    rng = np.random.default_rng(0)
    for _ in range(5):
        r = RECS.iloc[rng.permutation(len(RECS))]
        t = TRUTH.iloc[rng.permutation(len(TRUTH))]
        _same(base, receval.evaluate(r, t, ALL))


def test_blocks_do_not_change_any_value(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    users = np.repeat(np.arange(300), 7)
    recs = pd.DataFrame(
        {"user": users, "item": rng.integers(0, 50, len(users)), "score": rng.random(len(users))}
    ).drop_duplicates(["user", "item"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(0, 320, 900),
            "item": rng.integers(0, 50, 900),
            "relevance": rng.integers(0, 4, 900),
        }
    ).drop_duplicates(["user", "item"])
    sparse = ["precision@2,5", "recall@3", "ap@4", "rr", "ndcg@3", "ndcg", "hit_rate@2"]
    for spec in (ALL, sparse):  # sparse: after the first block, blocks grow
        whole = receval.evaluate(recs, truth, spec)
        with monkeypatch.context() as m:
            m.setattr(numpy_engine, "BLOCK_CELLS", 8)
            m.setattr(numpy_engine, "SPARSE_BLOCK_USERS", 7)
            _same(whole, receval.evaluate(recs, truth, spec))


def test_policies_and_counts() -> None:
    res = receval.evaluate(RECS, TRUTH, ["ndcg@3", "precision@3"])
    c = res.counts
    assert list(res.per_user.index) == ["u1", "u2", "u3", "u4", "u5"]
    assert c["users"] == 5 and c["users_in_truth"] == 4 and c["users_with_recommendations"] == 3
    assert c["users_evaluated"] == 3
    assert c["users_skipped"] == {"no_truth": 1, "no_relevant_items": 1, "no_recommendations": 0}
    assert c["users_scored_zero"]["no_recommendations"] == 1
    assert c["recommendation_rows"] == 10 and c["truth_rows"] == 13
    assert res.per_user.loc["u3"].tolist() == [0.0, 0.0]
    assert res.per_user.loc[["u4", "u5"]].isna().all().all()
    # users in the table = evaluated + skipped
    assert c["users"] == c["users_evaluated"] + sum(c["users_skipped"].values())

    zero = receval.evaluate(RECS, TRUTH, "precision@3", empty_truth="zero")
    assert zero.per_user.loc[["u4", "u5"], "precision@3"].tolist() == [0.0, 0.0]
    assert zero.counts["users_evaluated"] == 5
    assert zero.summary["precision@3"] == pytest.approx((2 / 3 + 1 / 3) / 5)

    skip = receval.evaluate(RECS, TRUTH, "precision@3", missing_recs="skip")
    assert math.isnan(skip.per_user.loc["u3", "precision@3"])
    assert skip.counts["users_skipped"]["no_recommendations"] == 1
    assert skip.summary["precision@3"] == pytest.approx(0.5)


def test_threshold_turns_low_grades_into_zero_gain() -> None:
    res = receval.evaluate(RECS, TRUTH, ["precision@3", "ndcg@3", "recall@5"], threshold=2)
    # u1: relevant {1 (3), 4 (2)}, list [1, 6, 8]; u2: relevant {4 (2), 6 (3)}, list [1..5]
    assert res.per_user.loc["u1", "precision@3"] == pytest.approx(1 / 3)
    ideal_u1 = 3 + 2 / math.log2(3)
    assert res.per_user.loc["u1", "ndcg@3"] == pytest.approx(3 / ideal_u1)
    assert res.per_user.loc["u2", "recall@5"] == pytest.approx(0.5)
    assert res.counts["users_skipped"]["no_relevant_items"] == 2  # u3 and u5


def test_undefined_values_are_counted() -> None:
    res = receval.evaluate({1: [1, 2], 2: [1]}, {1: [1], 2: [1]}, "auc")
    assert res.summary["auc"] == 1.0
    assert res.counts["undefined"] == {"auc": 1}


def test_ids_of_different_kinds_are_matched_as_strings() -> None:
    recs = pd.DataFrame({"user": [1, 2], "item": [10, 20], "score": [1.0, 1.0]})
    truth = pd.DataFrame({"user": ["1", "2"], "item": ["10", "x21"]})
    res = receval.evaluate(recs, truth, "precision@1")
    assert res.summary["precision@1"] == 0.5
    assert any("matched as strings" in n for n in res.notes)


def test_result_renders() -> None:
    res = receval.evaluate(RECS, TRUTH, ["ndcg@3", "ap@3[denominator=hits]", "auc", "hit_rate@3"])
    text = str(res)
    assert "ndcg@3" in text and "3 users evaluated of 5" in text
    data = json.loads(res.to_json())
    assert set(data) >= {"metrics", "counts", "parameters", "version"}
    assert data["metrics"]["ndcg@3"] == pytest.approx(res.summary["ndcg@3"])
    assert data["version"] == receval.__version__
    md = res.to_markdown()
    assert md.splitlines()[0] == "| metric | mean | users |"
    assert "| ap@3[denominator=hits] |" in md
    tex = res.to_latex()
    assert r"hit\_rate@3 & 0.6667 & 3 \\" in tex
    assert tex.startswith(r"\begin{tabular}{lrr}") and tex.rstrip().endswith(r"\end{tabular}")
    frame = res.to_frame()
    assert list(frame.index) == ["ndcg@3", "ap@3[denominator=hits]", "auc", "hit_rate@3"]
    assert frame.loc["ndcg@3", "users"] == 3
    assert res["NDCG@3"] == res.summary["ndcg@3"]
    assert isinstance(receval.evaluate(RECS, TRUTH, "p@1").summary, dict)


def test_a_metric_asked_twice_is_computed_once_in_its_first_place() -> None:
    """The same metric asked twice, or under two spellings (case, an alias, a
    default parameter written out, a repeated cut-off), is one metric: once in
    the summary, the per-user table, the frame and the JSON, where first asked."""
    asked = ["ndcg@3", "recall@3", "NDCG@3", "ndcg@3[gain=linear]", "map@3", "ap@3", "ndcg@3,3"]
    once = ["ndcg@3", "recall@3", "ap@3"]
    res = receval.evaluate(RECS, TRUTH, asked)
    single = receval.evaluate(RECS, TRUTH, once)
    assert list(res.summary) == once and res.summary == single.summary
    assert list(res.to_frame().index) == once
    assert list(json.loads(res.to_json())["metrics"]) == once
    assert res.per_user is not None
    assert [c for c in res.per_user.columns if c != "user"] == once
    pd.testing.assert_frame_equal(res.per_user, single.per_user)


def test_nan_mean_when_nobody_is_evaluated_serialises_as_null() -> None:
    res = receval.evaluate({1: [1]}, {2: []}, "ndcg@3")
    assert math.isnan(res.summary["ndcg@3"])
    assert json.loads(res.to_json())["metrics"]["ndcg@3"] is None


def test_score_convenience() -> None:
    assert receval.score("ndcg@3", [1, 2, 3, 4, 5], {2, 4, 6}) == pytest.approx(0.2961, abs=5e-5)
    assert receval.score("dcg@2", ["a", "b"], {"b": 3}) == pytest.approx(3 / math.log2(3))
    assert math.isnan(receval.score("ndcg@3", [1, 2], set()))
    with pytest.raises(receval.ReceValError, match="one metric"):
        receval.score("ndcg@3,5", [1], {1})
    with pytest.raises(receval.ReceValError, match="scores has 1 values"):
        receval.score("auc", [1, 2], {1}, scores=[1.0])


def test_k_larger_than_every_list_and_whole_list_metrics() -> None:
    res = receval.evaluate(
        {1: [1, 2]},
        {1: [2, 3]},
        ["precision@10", "precision", "ap", "ndcg", "r_precision", "recall@100"],
    )
    s = res.summary
    assert s["precision@10"] == pytest.approx(0.1)
    assert s["precision"] == pytest.approx(0.5)
    assert s["ap"] == pytest.approx(0.25)
    assert s["r_precision"] == pytest.approx(0.5)
    assert s["recall@100"] == pytest.approx(0.5)
    ideal = 1 + 1 / math.log2(3)
    assert s["ndcg"] == pytest.approx((1 / math.log2(3)) / ideal)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_duplicates_keep_equals_deduplicating_first(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 40))
    rows = data.draw(
        st.lists(
            st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(0, 3)),
            min_size=n,
            max_size=n,
        )
    )
    recs = pd.DataFrame(rows, columns=["user", "item", "score"]).astype({"score": float})
    truth = {u: list(range(u, u + 3)) for u in range(5)}
    metrics = ["ndcg@3", "ap@5", "rr", "precision@2"]
    kept = receval.evaluate(recs, truth, metrics, duplicates="keep")
    # list order: score descending, then item ascending; keep the first occurrence
    ordered = recs.sort_values(["user", "score", "item"], ascending=[True, False, True])
    dedup = ordered.drop_duplicates(["user", "item"], keep="first")
    expected = receval.evaluate(dedup, truth, metrics)
    pd.testing.assert_frame_equal(kept.per_user, expected.per_user)
    dropped = kept.counts.get("recommendation_rows_duplicate_dropped", 0)
    assert dropped == len(recs) - len(dedup)


def _grouped_workload(seed: int, str_ids: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(60):
        n = int(rng.integers(0, 9))
        items = rng.choice(30, n, replace=False)
        scores = rng.integers(0, 4, n).astype(float)  # many ties
        rows += [(u, int(i), s) for i, s in zip(items, scores, strict=True)]
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(10, 75, 300),
            "item": rng.integers(0, 30, 300),
            "relevance": rng.integers(0, 4, 300),
        }
    ).drop_duplicates(["user", "item"])
    if str_ids:
        recs["user"] = "u" + recs["user"].astype(str)
        truth["user"] = "u" + truth["user"].astype(str)
    return recs, truth


@pytest.mark.parametrize("str_ids", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunks_of_users_change_nothing(
    monkeypatch: pytest.MonkeyPatch, seed: int, str_ids: bool
) -> None:
    from receval.engines import driver
    from receval.io import stream, tables

    recs, truth = _grouped_workload(seed, str_ids)
    whole = receval.evaluate(recs, truth, ALL)
    monkeypatch.setattr(tables, "CHUNK_ROWS", 7)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 7)  # tables merged by user
    for threads in (1, 3):
        monkeypatch.setattr(driver, "THREADS", threads)
        chunked = receval.evaluate(recs, truth, ALL)
        pd.testing.assert_frame_equal(whole.per_user, chunked.per_user, check_exact=True)
        assert whole.summary == chunked.summary
        assert whole.counts == chunked.counts
    for policy in ("zero", "skip"):
        a = receval.evaluate(recs, truth, ALL[:5], empty_truth=policy, missing_recs=policy)
        monkeypatch.setattr(tables, "CHUNK_ROWS", 10**9)
        monkeypatch.setattr(stream, "CHUNK_ROWS", 10**9)  # tables merged by user
        b = receval.evaluate(recs, truth, ALL[:5], empty_truth=policy, missing_recs=policy)
        monkeypatch.setattr(tables, "CHUNK_ROWS", 7)
        monkeypatch.setattr(stream, "CHUNK_ROWS", 7)  # tables merged by user
        pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
        assert a.counts == b.counts


def test_errors_in_a_later_chunk_name_the_table_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from receval.io import stream, tables

    recs, truth = _grouped_workload(0, False)
    monkeypatch.setattr(tables, "CHUNK_ROWS", 7)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 7)  # tables merged by user
    bad = recs.copy()
    bad.loc[150, "score"] = math.nan
    with pytest.raises(receval.InputError) as info:
        receval.evaluate(bad, truth, "ndcg@3")
    assert info.value.row == 150
    dup = recs.copy()
    dup.loc[141, "item"] = dup.loc[140, "item"]
    assert dup.loc[141, "user"] == dup.loc[140, "user"]
    with pytest.raises(receval.InputError, match="rows 140 and 141"):
        receval.evaluate(dup, truth, "ndcg@3")
    tdup = pd.concat([truth, truth.iloc[[5]]], ignore_index=True)
    with pytest.raises(receval.InputError, match=f"rows 5 and {len(tdup) - 1}"):
        receval.evaluate(recs, tdup, "ndcg@3")


def test_beyond_accuracy_metrics_do_not_depend_on_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    from receval.engines import driver
    from receval.io import stream, tables

    recs, truth = _grouped_workload(3, False)
    train = pd.DataFrame({"user": [1, 2, 3, 3, 4], "item": [1, 1, 2, 3, 1]})
    feats = pd.DataFrame(np.eye(30)[:, :5] + 0.1, index=range(30))
    metrics = [
        "coverage@3",
        "gini",
        "entropy@5",
        "personalization@4",
        "prediction_coverage",
        "novelty@3",
        "arp",
        "long_tail@5",
        "serendipity@5",
        "ild@4",
        "user_coverage@3",
    ]
    kw = {"train": train, "item_features": feats}
    whole = receval.evaluate(recs, truth, metrics, **kw)
    monkeypatch.setattr(tables, "CHUNK_ROWS", 5)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 5)  # tables merged by user
    monkeypatch.setattr(driver, "THREADS", 2)
    chunked = receval.evaluate(recs, truth, metrics, **kw)
    pd.testing.assert_frame_equal(whole.per_user, chunked.per_user, check_exact=True)
    assert whole.summary == chunked.summary


def test_progress_is_reported_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    from receval.io import stream, tables

    recs, truth = _grouped_workload(0, False)
    monkeypatch.setattr(tables, "CHUNK_ROWS", 50)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 50)  # tables merged by user
    seen: list[int] = []
    receval.evaluate(recs, truth, "ndcg@3", progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == len(recs) and len(seen) > 2


def test_warnings_count_what_changed_no_number() -> None:
    recs = pd.DataFrame(
        {"user": [1, 1, 1, 2], "item": [10, 11, 12, 10], "score": [0.5, 0.5, 0.1, 0.9]}
    )
    truth = {1: [11], 2: [10]}
    train = pd.DataFrame({"user": [1, 2], "item": [12, 5]})
    res = receval.evaluate(recs, truth, ["ndcg@5", "novelty@2"], train=train)
    c = res.counts
    assert c["recommendation_rows_tied"] == 1  # 10 and 11 tie for user 1
    assert c["lists_shorter_than_largest_k"] == 2  # both lists are shorter than 5
    assert c["recommendations_seen_in_train"] == 1  # user 1 already had item 12
    text = " ".join(res.notes)
    assert "broken by item id" in text and "shorter than the largest" in text
    assert "already in the user's training data" in text
    plain = receval.evaluate(recs.assign(score=[3.0, 2.0, 1.0, 1.0]), truth, "ndcg@3")
    assert (
        "recommendation_rows_tied" not in plain.notes
        and plain.counts.get("recommendation_rows_tied") == 0
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(0, 300),
    width=st.integers(1, 40),
    kind=st.sampled_from(["float", "bool", "int"]),
    fortran=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    native=st.booleans(),
)
def test_column_by_column_running_sums_are_numpys_bit_for_bit(
    rows: int, width: int, kind: str, fortran: bool, seed: int, native: bool
) -> None:
    """Both the compiled running sum and the NumPy column loop."""
    from receval.metrics.kernels import batch
    from receval.metrics.kernels.batch import cumsum_rows

    rng = np.random.default_rng(seed)
    if kind == "float":  # magnitudes far apart: any change of order shows in the bits
        x = rng.standard_normal((rows, width)) * 10.0 ** rng.integers(-8, 8, (rows, width))
        dtype = None
    elif kind == "bool":
        x, dtype = rng.random((rows, width)) < 0.3, np.int64
    else:
        x, dtype = rng.integers(-5, 5, (rows, width)), None
    if fortran:
        x = np.asfortranarray(x)
    with pytest.MonkeyPatch.context() as m:
        if not native:
            m.setattr(batch, "_native", None)
        got = cumsum_rows(x, dtype)
    want = np.cumsum(x, axis=1, dtype=dtype)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


def test_positions_of_many_distinct_values() -> None:
    """Looking up many more distinct values than ids (e.g. the recommended users
    among few training users) is one factorize and one lookup, never a loop."""
    from receval.metrics.context import TrainPairs, positions

    ids = np.array([3, 10, 20])
    values = np.tile(np.arange(50_000), 3)
    got = positions(ids, values)
    want = np.where(values == 3, 0, np.where(values == 10, 1, np.where(values == 20, 2, -1)))
    assert np.array_equal(got, want)
    pairs = TrainPairs.of(np.array([3, 10]), np.array([0, 1]), 5)
    assert pairs.count(values, np.zeros(len(values), dtype=np.int64)) == 3  # user 3, item 0
