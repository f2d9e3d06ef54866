"""Parquet files evaluated chunk by chunk of users (receval.io.stream): the
same numbers, counts and errors as the whole tables, bit for bit, whether the
files are merged in step (sorted by user) or partitioned (not sorted)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval.cli import main
from receval.engines import driver, local
from receval.io import stream

METRICS = [
    "precision@1,3,10",
    "recall@3,10",
    "ndcg@3,10",
    "ndcg@10[gain=exp]",
    "ap@3,10",
    "ap@10[denominator=relevant]",
    "rr@10",
    "hit_rate@3",
    "r_precision",
    "err@5",
    "auc",
]


def _workload(
    seed: int, str_users: bool = False, ranks: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Users with lists only, truth only, both, nothing relevant; score ties;
    graded truth with zeros; rows grouped and sorted by user."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(80):
        n = int(rng.integers(0, 12))
        items = rng.choice(40, n, replace=False)
        scores = rng.integers(0, 5, n).astype(float)
        rows += [(u, int(i), s) for i, s in zip(items, scores, strict=True)]
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    if ranks:
        recs = recs.sort_values(["user", "score", "item"], ascending=[True, False, True])
        recs["rank"] = recs.groupby("user").cumcount() + 1
        recs = recs.drop(columns="score")
    truth = pd.DataFrame(
        {
            "user": rng.integers(10, 95, 400),
            "item": rng.integers(0, 40, 400),
            "relevance": rng.integers(0, 4, 400),
        }
    ).drop_duplicates(["user", "item"])
    truth = truth.sort_values("user", kind="stable").reset_index(drop=True)
    if str_users:
        recs["user"] = "u" + recs["user"].astype(str).str.zfill(3)
        truth["user"] = "u" + truth["user"].astype(str).str.zfill(3)
    return recs.reset_index(drop=True), truth


def _write(tmp: Path, recs: pd.DataFrame, truth: pd.DataFrame, group: int = 16) -> tuple[str, str]:
    r, t = tmp / "recs.parquet", tmp / "truth.parquet"
    pq.write_table(pa.Table.from_pandas(recs, preserve_index=False), r, row_group_size=group)
    pq.write_table(pa.Table.from_pandas(truth, preserve_index=False), t, row_group_size=group)
    return str(r), str(t)


def _same(a: receval.Result, b: receval.Result) -> None:
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
    assert a.summary.keys() == b.summary.keys()
    for key in a.summary:  # NaN == NaN here
        assert a.summary[key] == b.summary[key] or (
            math.isnan(a.summary[key]) and math.isnan(b.summary[key])
        )
    assert a.counts == b.counts
    assert a.notes == b.notes


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    order = np.random.default_rng(seed).permutation(len(frame))
    return frame.iloc[order].reset_index(drop=True)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(stream, "CHUNK_ROWS", 7)
    return monkeypatch


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record which way (merge / partition) each evaluation read the files."""
    ways: list[str] = []
    merge, partitioned = stream._merge, stream._partitioned

    def m(*a: object, **k: object):  # type: ignore[no-untyped-def]
        ways.append("merge")
        return merge(*a, **k)  # type: ignore[arg-type]

    def p(*a: object, **k: object):  # type: ignore[no-untyped-def]
        ways.append("partition")
        return partitioned(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(stream, "_merge", m)
    monkeypatch.setattr(stream, "_partitioned", p)
    return ways


@pytest.mark.parametrize("str_users", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorted_files_merge_in_many_chunks_and_equal_the_whole_tables(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch, seed: int, str_users: bool
) -> None:
    recs, truth = _workload(seed, str_users)
    whole = receval.evaluate(recs, truth, METRICS)
    r, t = _write(tmp_path, recs, truth)
    ways = _spy(small_chunks)
    pairs = []
    real = local.evaluated

    def counting(plan, p, *a, **k):  # type: ignore[no-untyped-def]
        items = list(p)
        pairs.append(len(items))
        return real(plan, iter(items), *a, **k)

    small_chunks.setattr(local, "evaluated", counting)
    for threads in (1, 3):
        small_chunks.setattr(driver, "THREADS", threads)
        _same(whole, receval.evaluate(r, t, METRICS))
    assert ways == ["merge", "merge"]
    assert min(pairs) > 20  # really cut into many chunks


@pytest.mark.parametrize("str_users", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_unsorted_files_are_partitioned_and_equal_the_whole_tables(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch, seed: int, str_users: bool
) -> None:
    recs, truth = _workload(seed, str_users)
    recs, truth = _shuffled(recs, seed), _shuffled(truth, seed + 1)
    whole = receval.evaluate(recs, truth, METRICS, ties="input", duplicates="keep")
    r, t = _write(tmp_path, recs, truth)
    ways = _spy(small_chunks)
    got = receval.evaluate(r, t, METRICS, ties="input", duplicates="keep")
    _same(whole, got)
    assert ways[-1] == "partition"


def test_row_order_is_kept_inside_buckets(tmp_path: Path, small_chunks: pytest.MonkeyPatch) -> None:
    # ties="input" and duplicates="keep" (first occurrence) depend on file order
    recs = pd.DataFrame(
        {
            "user": [3, 1, 3, 1, 2, 1, 3, 1],
            "item": [5, 7, 6, 8, 1, 7, 5, 9],
            "score": [1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0],
        }
    )
    truth = pd.DataFrame({"user": [1, 3, 2], "item": [8, 6, 1]})
    r, t = _write(tmp_path, recs, truth, group=2)
    small_chunks.setattr(stream, "CHUNK_ROWS", 1)
    for metric in ("rr", "ndcg@2"):
        a = receval.evaluate(recs, truth, metric, ties="input", duplicates="keep")
        b = receval.evaluate(r, t, metric, ties="input", duplicates="keep")
        _same(a, b)


def test_files_sorted_at_first_switch_to_partitioning(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch
) -> None:
    recs, truth = _workload(4)
    # the list of an early user at the very end: merging has already
    # evaluated that user (with no list) when it meets these rows
    late = recs["user"] == 12
    assert late.any()
    recs = pd.concat([recs[~late], recs[late]], ignore_index=True)
    ways = _spy(small_chunks)
    r, t = _write(tmp_path, recs, truth)
    # tables: merged until the late rows, then put in user order and merged again
    whole = receval.evaluate(recs, truth, METRICS)
    assert ways == ["merge", "merge"]
    ways.clear()
    _same(whole, receval.evaluate(r, t, METRICS))
    assert ways == ["merge", "partition"]
    # an error met on the way is not raised: that user's rows were not all read
    truth = truth[truth["user"].isin(recs["user"])].reset_index(drop=True)
    assert (truth["user"] == 12).any()
    r, t = _write(tmp_path, recs, truth)
    whole = receval.evaluate(recs, truth, METRICS, missing_recs="error", empty_truth="zero")
    ways.clear()
    got = receval.evaluate(r, t, METRICS, missing_recs="error", empty_truth="zero")
    _same(whole, got)
    assert ways == ["merge", "partition"]


def test_policy_errors_of_sorted_files_are_raised(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch
) -> None:
    recs, truth = _workload(5)
    r, t = _write(tmp_path, recs, truth)
    with pytest.raises(receval.PolicyError, match="has no relevant item") as whole:
        receval.evaluate(recs, truth, "ndcg@3", empty_truth="error", no_truth="zero")
    with pytest.raises(receval.PolicyError, match="has no relevant item") as streamed:
        receval.evaluate(r, t, "ndcg@3", empty_truth="error", no_truth="zero")
    assert str(whole.value) == str(streamed.value)


@pytest.mark.parametrize("shuffle", [False, True])
def test_bad_values_name_the_file_and_its_row(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch, shuffle: bool
) -> None:
    recs, truth = _workload(6, ranks=True)
    if shuffle:
        recs, truth = _shuffled(recs, 1), _shuffled(truth, 2)
    bad = recs.copy()
    bad.loc[150, "rank"] = 0
    r, t = _write(tmp_path, bad, truth)
    with pytest.raises(receval.InputError) as info:
        receval.evaluate(r, t, "ndcg@3")
    assert info.value.row == 150 and info.value.source == r
    assert info.value.user == bad.loc[150, "user"]
    assert "rank must be a positive integer" in str(info.value)

    dup = recs.copy()
    i = 100
    same = np.flatnonzero(dup["user"].eq(dup.loc[i, "user"]).to_numpy())
    j = int(same[same != i][-1])
    dup.loc[i, "item"] = dup.loc[j, "item"]
    r, t = _write(tmp_path, dup, truth)
    with pytest.raises(receval.InputError, match=f"rows {min(i, j)} and {max(i, j)}") as info:
        receval.evaluate(r, t, "ndcg@3")
    assert info.value.source == r

    tdup = pd.concat([truth, truth.iloc[[5]]], ignore_index=True)
    r, t = _write(tmp_path, recs, tdup)
    with pytest.raises(receval.InputError, match=f"rows 5 and {len(tdup) - 1}") as info:
        receval.evaluate(r, t, "ndcg@3")
    assert info.value.source == t


def test_cli_streams_parquet_and_prints_errors_without_traceback(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, truth = _workload(7)
    r, t = _write(tmp_path, recs, truth)
    csv_r, csv_t = tmp_path / "r.csv", tmp_path / "t.csv"
    recs.to_csv(csv_r, index=False)
    truth.to_csv(csv_t, index=False)
    args = ["-m", "ndcg@3,10", "-m", "ap@10", "-o", "json"]
    ways = _spy(small_chunks)
    assert main(["evaluate", r, t, *args]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert main(["evaluate", str(csv_r), str(csv_t), *args]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert ways == ["merge", "merge"]  # the CSV tables are sorted by user: merged too
    assert streamed["metrics"] == whole["metrics"]
    assert streamed["counts"] == whole["counts"]

    bad = recs.copy()
    bad.loc[33, "score"] = math.inf
    r, t = _write(tmp_path, bad, truth)
    assert main(["evaluate", r, t, "-m", "ndcg@3"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{r}, row 33" in err.replace("\n", "") and "score must be a finite number" in err


def test_renamed_columns_and_ungraded_conventions(
    tmp_path: Path, small_chunks: pytest.MonkeyPatch
) -> None:
    recs, truth = _workload(8)
    recs = recs.rename(columns={"user": "user_id", "item": "item_id"})
    truth = truth.rename(columns={"user": "user_id", "item": "item_id", "relevance": "rating"})
    r, t = _write(tmp_path, recs, truth)
    both = dict(user_col="user_id", item_col="item_id", relevance_col="rating")
    for convention in ("receval", "rectools", "trec_eval"):
        whole = receval.evaluate(recs, truth, ["ndcg@5", "ap@5"], convention=convention, **both)
        _same(whole, receval.evaluate(r, t, ["ndcg@5", "ap@5"], convention=convention, **both))


def test_mixed_id_kinds_and_float_ids(tmp_path: Path, small_chunks: pytest.MonkeyPatch) -> None:
    recs, truth = _workload(9)
    # text users ("u" + number) in the truth only: the users are matched as strings
    extra = truth.iloc[:2].assign(user=["u1", "u2"])
    truth_str = pd.concat([truth.assign(user=truth["user"].astype(str)), extra])
    r, t = _write(tmp_path, recs, truth_str)
    ways = _spy(small_chunks)
    whole = receval.evaluate(recs, truth_str, METRICS)
    _same(whole, receval.evaluate(r, t, METRICS))
    assert ways == ["partition"]  # string order differs from number order
    assert any("matched as strings" in n for n in whole.notes)
    # float ids: their kind is decided on the whole column (one pass), then streamed
    recs_f = recs.assign(user=recs["user"].astype(float))
    r, t = _write(tmp_path, recs_f, truth)
    src = stream.open_parquet(r, "recommendations")
    assert src is not None and src.user_kind == "int"
    _same(receval.evaluate(recs_f, truth, METRICS), receval.evaluate(r, t, METRICS))


def test_beyond_accuracy_metrics_stream(tmp_path: Path, small_chunks: pytest.MonkeyPatch) -> None:
    recs, truth = _workload(10)
    train = pd.DataFrame({"user": [1, 2, 3, 3, 4, 5], "item": [1, 1, 2, 3, 1, 39]})
    metrics = ["coverage@3", "gini", "entropy@5", "personalization@4", "novelty@3", "arp"]
    whole = receval.evaluate(recs, truth, metrics, train=train, catalog=range(45))
    r, t = _write(tmp_path, recs, truth)
    _same(whole, receval.evaluate(r, t, metrics, train=train, catalog=range(45)))
    r, t = _write(tmp_path, _shuffled(recs, 3), _shuffled(truth, 4))
    _same(whole, receval.evaluate(r, t, metrics, train=train, catalog=range(45)))


def test_other_file_formats_given_by_path(tmp_path: Path) -> None:
    recs, truth = _workload(11)
    recs.to_csv(tmp_path / "r.csv", index=False)
    _, t = _write(tmp_path, recs, truth)
    whole = receval.evaluate(recs, truth, METRICS)
    _same(whole, receval.evaluate(str(tmp_path / "r.csv"), Path(t), METRICS))
    with pytest.raises(receval.InputError, match="no such file"):
        receval.evaluate(str(tmp_path / "missing.parquet"), t, METRICS)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    chunk=st.integers(1, 40),
    shuffle=st.booleans(),
    group=st.integers(1, 50),
)
def test_any_chunking_of_any_file_gives_the_whole_tables_numbers(
    tmp_path_factory: pytest.TempPathFactory, seed: int, chunk: int, shuffle: bool, group: int
) -> None:
    recs, truth = _workload(seed)
    if shuffle:
        recs, truth = _shuffled(recs, seed), _shuffled(truth, seed)
    whole = receval.evaluate(recs, truth, METRICS, ties="input")
    r, t = _write(tmp_path_factory.mktemp("s"), recs, truth, group=group)
    old = stream.CHUNK_ROWS
    stream.CHUNK_ROWS = chunk
    try:
        got = receval.evaluate(r, t, METRICS, ties="input")
    finally:
        stream.CHUNK_ROWS = old
    _same(whole, got)


@pytest.mark.parametrize("str_users", [False, True])
def test_tables_sorted_by_user_merge_like_files(
    small_chunks: pytest.MonkeyPatch, str_users: bool
) -> None:
    recs, truth = _workload(12, str_users)
    ways = _spy(small_chunks)
    for table in (lambda f: f, pa.Table.from_pandas):
        merged = receval.evaluate(table(recs), table(truth), METRICS)
        assert ways.pop() == "merge"
        with small_chunks.context() as m:
            m.setattr(stream, "sorted_tables", lambda *a: None)
            _same(merged, receval.evaluate(table(recs), table(truth), METRICS))
        assert not ways
    # not sorted: met by the merge, put in user order and merged again (the same values)
    _same(merged, receval.evaluate(_shuffled(recs, 1), truth, METRICS))
    assert ways == ["merge", "merge"]
    ways.clear()
    # text users in the lists, a number among them in the truth (or the other way)
    odd = truth.iloc[:1].assign(user=10**6 if str_users else "zz")
    other = pd.concat([truth, odd], ignore_index=True)
    got = receval.evaluate(recs, other, METRICS)
    with small_chunks.context() as m:
        m.setattr(stream, "sorted_tables", lambda *a: None)
        _same(receval.evaluate(recs, other, METRICS), got)
    # text among numbers: ids of two kinds, in memory; a number among text: text
    # (one kind), met out of order by the merge, put in user order and merged again
    assert ways == (["merge", "merge"] if str_users else [])
    ways.clear()
    # digit strings are numbers (the text rule, #30): "7" and 7 merge as one kind
    if not str_users:
        digits = truth.assign(user=truth["user"].astype(str))
        _same(merged, receval.evaluate(recs, digits, METRICS))
        assert ways.pop() == "merge"


def test_a_parquet_files_missing_ids_name_the_files_row_and_its_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids whose kind takes a pass over the file (floats) are read piece by
    piece: a missing one names the file's row (it named the row within its
    piece), and the row's user; of a missing user and a missing item, the
    earlier row is named, as the table reader names it."""
    monkeypatch.setattr(stream, "CHUNK_ROWS", 7)  # pieces of 7 rows
    user = np.repeat(np.arange(10), 2).astype(float)
    item = np.arange(20, dtype=float)
    item[17] = np.nan
    path = tmp_path / "recs.parquet"
    pq.write_table(pa.table({"user": user, "item": item, "rank": np.tile([1, 2], 10)}), path)
    truth = {0: [1]}
    with pytest.raises(receval.InputError) as got:
        receval.evaluate(path, truth, "rr")
    assert str(got.value) == f"{path}, row 17, user 8: missing item id"
    user[19] = np.nan  # a later row: the item's row still named
    pq.write_table(pa.table({"user": user, "item": item, "rank": np.tile([1, 2], 10)}), path)
    with pytest.raises(receval.InputError, match=r"row 17, user 8: missing item id"):
        receval.evaluate(path, truth, "rr")
    user[16] = np.nan  # an earlier one: the user's row
    pq.write_table(pa.table({"user": user, "item": item, "rank": np.tile([1, 2], 10)}), path)
    with pytest.raises(receval.InputError, match=r"row 16: missing user id"):
        receval.evaluate(path, truth, "rr")
    frame = pd.read_parquet(path)  # the table reader: the same errors
    with pytest.raises(receval.InputError, match=r"^recommendations, row 16: missing user id$"):
        receval.evaluate(frame, truth, "rr")
