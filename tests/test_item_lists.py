"""A list of items a row (``user, [items]``: how models write their top-k) is
read as the long rows it stands for, by a table (pandas, polars, Arrow) as by
a file (Parquet, JSON): rank = position in the list, a column of lists along
the items (scores, grades) read value by value, a column of one value a row
repeated. Errors name the caller's row (a file's line), not the row of the
expanded table. The numbers through every door: tests/test_every_door.py
(``item_lists_*``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval.errors import InputError
from receval.io.columns import item_lists


def _literal(users: list[int], lists: list[list[int] | None], other: list[Any]) -> dict:
    """item_lists, literally: row by row, item by item."""
    out: dict[str, list[Any]] = {"user": [], "item": [], "other": [], "rank": [], "row": []}
    for row, (u, items, o) in enumerate(zip(users, lists, other, strict=True)):
        for position, item in enumerate(items or [], start=1):
            out["user"].append(u)
            out["item"].append(item)
            out["other"].append(o[position - 1] if isinstance(o, list) else o)
            out["rank"].append(position)
            out["row"].append(row)
    return out


@settings(max_examples=60, deadline=None)
@given(
    lists=st.lists(
        st.one_of(st.none(), st.lists(st.integers(-5, 50), max_size=6)), min_size=0, max_size=12
    ),
    along=st.booleans(),
)
def test_lists_become_one_row_per_item_as_read_literally(
    lists: list[list[int] | None], along: bool
) -> None:
    users = list(range(len(lists)))
    if along:  # a list of values beside each list of items, one per item
        other: list[Any] = [None if x is None else [v * 0.5 for v in x] for x in lists]
    else:  # one value a row
        other = [float(u) for u in users]
    table = pa.table(
        {
            "user": pa.array(users, pa.int64()),
            "item": pa.array(lists, pa.list_(pa.int64())),
            "other": pa.array(other, pa.list_(pa.float64()) if along else pa.float64()),
        }
    )
    got = item_lists(table, True, "recommendations")
    assert got is not None
    long, rows = got
    want = _literal(users, lists, other)
    assert long.column_names == ["user", "item", "other", "rank"]
    for name in ("user", "item", "other", "rank"):
        assert long.column(name).to_pylist() == want[name], name
    assert rows.tolist() == want["row"]
    assert item_lists(table.drop(["item"]), True, "x") is None  # no lists: as given


FORMS = ("pandas", "numpy arrays", "tuples", "pyarrow", "polars", "parquet", "jsonl")


def _recs(form: str, tmp: Path, lists: list[Any], users: list[Any] | None = None) -> Any:
    users = users or [f"u{i}" for i in range(len(lists))]
    frame = pd.DataFrame({"user": users, "item": lists})
    if form == "numpy arrays":
        frame["item"] = [np.asarray(x) if isinstance(x, list) else x for x in lists]
    elif form == "tuples":
        frame["item"] = [tuple(x) if isinstance(x, list) else x for x in lists]
    elif form == "pyarrow":
        return pa.Table.from_pandas(frame, preserve_index=False)
    elif form == "polars":
        return pytest.importorskip("polars").from_pandas(frame)
    elif form == "parquet":
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp / "recs.parquet")
        return tmp / "recs.parquet"
    elif form == "jsonl":
        frame.to_json(tmp / "recs.jsonl", orient="records", lines=True)
        return tmp / "recs.jsonl"
    return frame


TRUTH = {"u0": {12: 2, 13: 1}, "u1": {10: 1}, "u2": {7: 3}, "u3": {4: 1}}


@pytest.mark.parametrize("form", FORMS)
def test_a_table_of_lists_is_the_long_table_it_stands_for(form: str, tmp_path: Path) -> None:
    lists = [[10, 11, 12], [13, 10], None, []]  # u2: a missing list, u3: an empty one
    long = pd.DataFrame(
        {"user": ["u0"] * 3 + ["u1"] * 2, "item": [10, 11, 12, 13, 10], "rank": [1, 2, 3, 1, 2]}
    )
    metrics = ["ndcg@3", "ap@3", "recall@2", "rr"]
    want = receval.evaluate(long, TRUTH, metrics)
    got = receval.evaluate(_recs(form, tmp_path, lists), TRUTH, metrics)
    assert got.summary == want.summary
    assert got.per_user.equals(want.per_user)
    assert got.counts == want.counts  # the rows read: the items listed
    assert got.counts["recommendation_rows"] == 5
    assert got.parameters["columns"]["recommendations"]["rank"] == "rank"


def _error(form: str, tmp: Path, lists: list[Any], **kw: Any) -> InputError:
    with pytest.raises(InputError) as got:
        receval.evaluate(_recs(form, tmp, lists, **kw), TRUTH, "ndcg@3")
    return got.value


@pytest.mark.parametrize("form", FORMS)
def test_errors_name_the_callers_row_or_line(form: str, tmp_path: Path) -> None:
    line = 1 if form == "jsonl" else 0  # a JSON line numbers from 1, a row from 0
    where = (lambda r: f"line {r + line}") if form == "jsonl" else (lambda r: f"row {r}")

    err = _error(form, tmp_path, [[10, 11], [12, 13], [5, 6, 5]])
    assert where(2) in str(err) and "item 5" in str(err), err
    assert f"appears twice in this user's list (both in {where(2)})" in str(err), err

    err = _error(form, tmp_path, [[10, 11], [12], [6]], users=["u0", "u1", "u0"])
    assert where(2) in str(err), err
    both = f"lines {line} and {2 + line}" if form == "jsonl" else "rows 0 and 2"
    assert f"has a list of items on {both}" in str(err), err

    if form not in ("parquet", "jsonl", "polars", "pyarrow"):  # Arrow types a list whole
        err = _error(form, tmp_path, [[10, 11], 12, [6]])
        assert "row 1" in str(err) and "holds 12, not a list of ids" in str(err), err


def test_a_missing_item_in_a_list_names_its_row() -> None:
    frame = pd.DataFrame({"user": ["u0", "u1", "u2"], "item": [[10, 11], [12], [7, None]]})
    with pytest.raises(InputError, match=r"row 2, user 'u2': missing item id"):
        receval.evaluate(frame, TRUTH, "ndcg@3")


def test_lists_along_must_hold_one_value_per_item(tmp_path: Path) -> None:
    truth = pd.DataFrame({"user": ["u0", "u1"], "item": [[12, 13], [10]], "rating": [[2], [1]]})
    with pytest.raises(InputError) as got:
        receval.evaluate({"u0": [12]}, truth, "ndcg@3")
    assert got.value.row == 0 and got.value.column == "rating"
    assert "holds 1 values for 2 items" in str(got.value)


def test_grades_along_the_items_are_read_and_one_grade_a_row_is_repeated() -> None:
    recs = {"u0": [13, 12, 9], "u1": [10]}
    along = pd.DataFrame({"user": ["u0", "u1"], "item": [[12, 13], [10]], "rating": [[2, 1], [1]]})
    assert (
        receval.evaluate(recs, along, "ndcg@3").summary
        == receval.evaluate(recs, {"u0": {12: 2, 13: 1}, "u1": {10: 1}}, "ndcg@3").summary
    )
    one = pd.DataFrame({"user": ["u0", "u1"], "item": [[12, 13], [10]], "rating": [3, 1]})
    assert (
        receval.evaluate(recs, one, "ndcg@3").summary
        == receval.evaluate(recs, {"u0": {12: 3, 13: 3}, "u1": {10: 1}}, "ndcg@3").summary
    )


def test_the_command_line_reads_lists_and_names_the_row(tmp_path: Path) -> None:
    frame = pd.DataFrame({"user": ["u0", "u1"], "item": [[10, 11, 12], [13, 13]]})
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "recs.parquet")
    truth = tmp_path / "truth.csv"
    truth.write_text("user,item\nu0,12\nu1,10\n")
    run = [sys.executable, "-m", "receval", "evaluate", str(tmp_path / "recs.parquet")]
    done = subprocess.run(
        [*run, str(truth), "-m", "ndcg@3"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "recs.parquet, row 1, user 'u1', item 13" in done.stderr, done.stderr
    assert "--duplicates keep" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("form", ["pandas", "pyarrow"])
def test_lists_out_of_user_order_merge_and_name_the_callers_row(form: str) -> None:
    """A table of lists is merged pair by pair of users like a long table
    (put in user order when it is not): the same numbers as its long table,
    and an error met in user order names the caller's row of the list."""
    rng = np.random.default_rng(3)
    users = [f"u{i:03d}" for i in range(60)][::-1]  # users in reverse order
    lists = [list(rng.choice(40, 8, replace=False)) for _ in users]
    truth = {u: list(rng.choice(40, 3, replace=False)) for u in users}
    long = pd.DataFrame(
        [(u, int(i), r) for u, xs in zip(users, lists, strict=True) for r, i in enumerate(xs, 1)],
        columns=["user", "item", "rank"],
    )
    metrics = ["ndcg@5", "ap@8", "rr"]
    want = receval.evaluate(long, truth, metrics)
    got = receval.evaluate(_recs(form, Path("."), lists, users=users), truth, metrics)
    assert got.summary == want.summary and got.per_user.equals(want.per_user)
    lists[40] = [*lists[40][:3], lists[40][1]]  # a repeat in the 41st row (user u019)
    with pytest.raises(InputError) as err:
        receval.evaluate(_recs(form, Path("."), lists, users=users), truth, metrics)
    assert err.value.row == 40 and err.value.user == "u019", err.value
    assert "(both in row 40)" in str(err.value)


@pytest.mark.parametrize("form", FORMS)
def test_check_reads_a_table_of_lists_as_evaluate_does(form: str, tmp_path: Path) -> None:
    """``receval check`` reads a list of items a row as the long rows it stands
    for, through every form: the same findings as the long table; an error in
    a list names the caller's row (a file's line), with evaluate's message."""
    from receval.workflow.checks import check

    truth = pd.DataFrame({"user": ["u0", "u0", "u1"], "item": [12, 13, 10]})
    long = pd.DataFrame(
        {"user": ["u0"] * 3 + ["u1"] * 2, "item": [10, 11, 12, 13, 13], "rank": [1, 2, 3, 1, 2]}
    )
    lists = [[10, 11, 12], [13, 13], None]
    want = {f.code: f.message for f in check(test=truth, recs=long).findings}
    got = {f.code: f.message for f in check(test=truth, recs=_recs(form, tmp_path, lists)).findings}
    assert got == want
    assert "1 of 5 recs rows repeat" in got["duplicate_rows_recs"]

    bad = [[10, 11], [12, None]]
    with pytest.raises(InputError) as said:
        receval.evaluate(_recs(form, tmp_path, bad), TRUTH, "ndcg@3")
    with pytest.raises(InputError) as checked:
        check(test=truth, recs=_recs(form, tmp_path, bad))
    assert str(checked.value) == str(said.value)
    assert ("line 2" if form == "jsonl" else "row 1") in str(checked.value), checked.value


@pytest.mark.parametrize("form", ["pandas", "tuples", "jsonl"])
def test_lists_of_ids_of_two_kinds_are_read_as_a_long_column_is(form: str, tmp_path: Path) -> None:
    """Numbers and text in the lists: every id as text (the id rule on the ids
    listed, as on a long column), through a table as through JSON Lines (whose
    reader had written each such list whole as one id, "[12, 'x']")."""
    truth = {"u0": [10], "u1": ["x", 12]}
    long = pd.DataFrame(
        {"user": ["u0", "u0", "u1", "u1"], "item": [10, 11, 12, "x"], "rank": [1, 2, 1, 2]}
    )
    want = receval.evaluate(long, truth, ["ndcg@3", "precision@2"])
    got = receval.evaluate(
        _recs(form, tmp_path, [[10, 11], [12, "x"]]), truth, ["ndcg@3", "precision@2"]
    )
    assert got.summary == want.summary and got.per_user.equals(want.per_user)
    assert got.summary["precision@2"] == 0.75
    with pytest.raises(InputError) as bad:
        receval.evaluate(_recs(form, tmp_path, [[10, 11], [12, [1]]]), truth, "ndcg@3")
    assert ("line 2" if form == "jsonl" else "row 1") in str(bad.value), bad.value


def test_json_lists_of_ids_beyond_int64_are_exact(tmp_path: Path) -> None:
    """Arrow reads JSON integers beyond int64 (and non-integers) as lossy
    floats, in a list as in a column: such lists are read again exactly,
    as the long file of the same ids is."""
    big = 12345678901234567890
    lists = tmp_path / "lists.jsonl"
    lists.write_text(f'{{"user": "u0", "item": [{big}, 11]}}\n{{"user": "u1", "item": [1.5, 2]}}\n')
    long = tmp_path / "long.jsonl"
    rows = [("u0", big, 1), ("u0", 11, 2), ("u1", 1.5, 1), ("u1", 2, 2)]
    long.write_text("".join(f'{{"user": "{u}", "item": {i}, "rank": {r}}}\n' for u, i, r in rows))
    truth = {"u0": [str(big)], "u1": ["1.5"]}
    want = receval.evaluate(long, truth, ["precision@2", "ndcg@2"])
    got = receval.evaluate(lists, truth, ["precision@2", "ndcg@2"])
    assert got.summary == want.summary and got.summary["precision@2"] == 0.5
