"""The one id rule (receval.ids): hand-worked values, the wrong numbers it
fixes, and a fuzz across input forms and both engines against a slow
reference that applies the rule literally, value by value."""

from __future__ import annotations

import json
import math
import re
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, localcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import receval
from receval import ids
from receval.engines import numpy_engine
from receval.errors import InputError, NoSharedUser
from receval.io import stream
from receval.io.files import read_file
from receval.metrics.kernels import batch

# --- the rule, value by value -------------------------------------------------

I64 = 2**63 - 1


def ref_value(v: Any) -> int | str:
    """The typed rule, literally."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return v if -(2**63) <= v <= I64 else str(v)
    if isinstance(v, float):
        assert math.isfinite(v)
        return int(v) if v.is_integer() and abs(v) <= 2**53 else repr(v)
    assert isinstance(v, str)
    return ref_text(v)  # a string is text, whatever the input (#30)


def ref_text(t: str) -> int | str:
    """The text rule, literally."""
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", t):
        v = int(t)
        return v if -(2**63) <= v <= I64 else t
    if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", t):
        with localcontext(Context(Emax=MAX_EMAX, Emin=MIN_EMIN)):  # 1e1000000 too
            d = Decimal(t)  # the literal's exact value
            if d == d.to_integral_value() and abs(d) <= 2**53:
                return int(d)
    return t


def ref_column(values: list[int | str]) -> list[int | str]:
    """A column: ints when all are, else strings (ints as decimal strings)."""
    if all(isinstance(v, int) for v in values):
        return values
    return [str(v) for v in values]


@pytest.mark.parametrize(
    "value, expected",
    [
        (7, 7),
        (np.int8(-3), -3),
        (np.uint64(2**64 - 1), "18446744073709551615"),
        (2**63, "9223372036854775808"),
        (-(2**63), -(2**63)),
        (7.0, 7),
        (-0.0, 0),
        (11.5, "11.5"),
        (2.0**53, 2**53),
        (2.0**53 + 2, "9007199254740994.0"),
        (1e20, "1e+20"),
        (np.float32(0.5), "0.5"),
        (True, "true"),
        (np.bool_(False), "false"),
        ("1", 1),  # strings are read by the text rule (#30): "1" is 1 through every door
        ("1.0", 1),
        ("007", "007"),
        ("true", "true"),
        (Decimal("7.00"), 7),  # a decimal's digits by the text rule, as the same text
        (Decimal("7.50"), "7.50"),
        (Decimal("-3"), -3),
        (b"1.0", 1),  # text as bytes: the text rule on it
        (b"007", "007"),
    ],
)
def test_canonical_value(value: Any, expected: Any) -> None:
    assert ids.canonical_value(value) == expected
    assert type(ids.canonical_value(value)) is type(expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", 1),
        ("-0", 0),
        ("1.0", 1),
        ("2e3", 2000),
        ("-4.00", -4),
        ("9223372036854775807", I64),
        ("9223372036854775808", "9223372036854775808"),
        ("18446744073709551615", "18446744073709551615"),
        ("007", "007"),
        ("+5", "+5"),
        ("11.5", "11.5"),
        ("1e400", "1e400"),
        ("1e1000000", "1e1000000"),  # was an internal error (decimal.Overflow)
        ("-2.5e99999999", "-2.5e99999999"),
        ("0e99999999", 0),
        ("1e-1000000", "1e-1000000"),
        ("9007199254740993.0", "9007199254740993.0"),  # beyond 2**53: kept as written
        ("9007199254740992.000", 2**53),
        ("4503599627370495.5", "4503599627370495.5"),  # its nearest float is whole
        ("1.5e1", 15),
        ("1e-1", "1e-1"),
        ("true", "true"),
        (" 1", " 1"),
        ("1.", "1."),
        ("alice", "alice"),
        ("6\n", "6\n"),  # never stripped: a regex's `$` also matches before a last newline
        ("-4.00\n", "-4.00\n"),
        ("6\r", "6\r"),
    ],
)
def test_text_rule(text: str, expected: Any) -> None:
    got = ids.from_text(pa.array([text]), "item", "x.csv")
    assert got.tolist() == [expected]
    assert ref_text(text) == expected
    assert ids.text_value(text) == expected  # one value at a time (columns of mixed types)


def test_an_id_ending_in_a_newline_is_text_through_every_door(tmp_path: Path) -> None:
    """ "6\n" next to a number (a column of mixed types, read value by value)
    and in a column of text (read as a column) is the same text id: never 6."""
    truth = {1: [6]}
    mixed = receval.evaluate({1: ["6\n", 5]}, truth, "rr")
    text = receval.evaluate({1: ["6\n", "5"]}, truth, "rr")
    frame = pd.DataFrame({"user": [1, 1], "item": pd.Series(["6\n", 5], dtype=object)})
    frame["score"] = [0.9, 0.8]
    path = tmp_path / "recs.csv"
    path.write_text('user,item,score\n1,"6\n",0.9\n1,5,0.8\n')
    got = [mixed, text, receval.evaluate(frame, truth, "rr"), receval.evaluate(path, truth, "rr")]
    assert [r.summary["rr"] for r in got] == [0.0] * 4


def test_columns_take_one_kind_and_engines_see_int64_or_str() -> None:
    assert ids.canonical([1, 2.0, np.int32(3)], "item", "t").dtype == np.int64
    mixed = ids.canonical([1, 11.5, "a", True], "item", "t")
    assert mixed.dtype == object and mixed.tolist() == ["1", "11.5", "a", "true"]
    text = ids.from_text(pa.array(["1", "1.0", "x"]), "item", "t")
    assert text.tolist() == ["1", "1", "x"]
    for arr in (
        np.array([1.5, 2.0]),
        np.array([True, False]),
        np.array([2**64 - 1], dtype=np.uint64),
        pa.chunked_array([pa.array([1.0, 2.0], pa.float32())]),
        pa.array(["a", "b"]).dictionary_encode(),
    ):
        out = ids.canonical(arr, "item", "t")
        assert out.dtype in (np.int64, object)
        assert out.dtype != object or all(type(v) is str for v in out)


@pytest.mark.parametrize(
    "values, row", [([1, None], 1), ([1.0, math.nan], 1), ([math.inf], 0), ([pd.NA, 1], 0)]
)
def test_missing_or_non_finite_ids_name_the_row(values: list[Any], row: int) -> None:
    with pytest.raises(InputError) as info:
        ids.canonical(values, "user", "recommendations")
    assert info.value.row == row and "user id" in str(info.value)


def test_float_user_ids_are_ids_never_an_internal_crash() -> None:
    recs = pd.DataFrame({"user": [1.5, 2.5, 3.0], "item": [1, 2, 3], "score": [1.0, 1.0, 1.0]})
    res = receval.evaluate(recs, {1.5: [1], 3: [9]}, "hit_rate@1")
    got = res.per_user["hit_rate@1"].to_dict()
    assert got["1.5"] == 1.0 and got["3"] == 0.0 and math.isnan(got["2.5"])
    with pytest.raises(InputError, match=r"missing (or non-finite )?user id"):
        receval.evaluate(recs.assign(user=[1.0, math.nan, 2.0]), {1: [1]}, "hit_rate@1")


# --- the wrong numbers of issue #16 --------------------------------------------


def _engines() -> list[Any]:
    return [True, False] if numpy_engine._native is not None else [False]


def _native_off(m: pytest.MonkeyPatch) -> None:
    for mod in (ids, numpy_engine, batch):
        m.setattr(mod, "_native", None)


@pytest.mark.parametrize("native", _engines())
def test_non_whole_float_item_is_no_false_hit(native: bool) -> None:
    with pytest.MonkeyPatch.context() as m:
        if not native:
            _native_off(m)
        recs = pd.DataFrame({"user": [1], "item": [11.5], "score": [1.0]})
        assert receval.evaluate(recs, {1: [11]}, "hit_rate@1").summary["hit_rate@1"] == 0.0
        assert receval.evaluate(recs, {1: ["11.5"]}, "hit_rate@1").summary["hit_rate@1"] == 1.0
        assert receval.evaluate(recs, {1: [11.5]}, "hit_rate@1").summary["hit_rate@1"] == 1.0


def test_float_items_in_a_mapping_match_a_float_column() -> None:
    truth = pd.DataFrame({"user": [1, 1], "item": [1.0, 2.0]})
    as_dict = receval.evaluate({1: [1.0, 3.0, 2.0]}, truth, "precision@3")
    as_frame = receval.evaluate(
        pd.DataFrame({"user": 1, "item": [1.0, 3.0, 2.0], "rank": [1, 2, 3]}), truth, "precision@3"
    )
    assert as_dict.summary == as_frame.summary == {"precision@3": pytest.approx(2 / 3)}


def test_one_string_user_does_not_unmatch_whole_floats() -> None:
    truth = {1: [1], 2: [5]}
    alone = receval.evaluate({1: [1.0], 2: [5.0]}, truth, "hit_rate@1")
    with_alice = receval.evaluate({1: [1.0], 2: [5.0], "alice": [1]}, truth, "hit_rate@1")
    assert alone.per_user["hit_rate@1"].tolist() == [1.0, 1.0]
    assert with_alice.per_user.loc[["1", "2"], "hit_rate@1"].tolist() == [1.0, 1.0]


def test_csv_user_true_is_not_user_1(tmp_path: Path) -> None:
    r = tmp_path / "r.csv"
    r.write_text("user,item,rank\ntrue,5,1\n1,6,1\n")
    t = tmp_path / "t.csv"
    t.write_text("user,item\n1,5\ntrue,6\n")
    res = receval.evaluate(r, t, "hit_rate@1")
    assert res.per_user["hit_rate@1"].to_dict() == {"1": 0.0, "true": 0.0}


def test_csv_ids_beyond_int64_do_not_collide(tmp_path: Path) -> None:
    big = 2**64 - 1  # as a float, equal to 2**64 - 2
    r = tmp_path / "r.csv"
    r.write_text(f"user,item,rank\n1,{big},1\n1,{big - 1},2\n")
    t = tmp_path / "t.csv"
    t.write_text(f"user,item\n1,{big - 1}\n")
    res = receval.evaluate(r, t, ["hit_rate@1", "precision@2"])
    assert res.summary == {"hit_rate@1": 0.0, "precision@2": 0.5}
    table, _ = read_file(r, role="recommendations")
    assert table.column("item").to_pylist() == [str(big), str(big - 1)]


def test_catalog_as_a_dataframe_is_its_item_column() -> None:
    recs = {1: [0, 1], 2: [2, 0]}
    ranged = receval.evaluate(recs, {1: [0], 2: [5]}, "coverage@2", catalog=range(10))
    framed = receval.evaluate(
        recs, {1: [0], 2: [5]}, "coverage@2", catalog=pd.DataFrame({"item": range(10)})
    )
    assert ranged.summary == framed.summary == {"coverage@2": pytest.approx(0.3)}
    keyed = receval.evaluate(
        recs, {1: [0], 2: [5]}, "coverage@2", catalog={i: "x" for i in range(10)}
    )
    assert keyed.summary == ranged.summary
    with pytest.raises(InputError, match="no item column"):
        receval.evaluate(
            recs, {1: [0], 2: [5]}, "coverage@2", catalog=pd.DataFrame({"x": range(10)})
        )
    with pytest.raises(InputError, match="catalog must be"):
        receval.evaluate(recs, {1: [0], 2: [5]}, "coverage@2", catalog=5)


# --- kinds never depend on chunking ----------------------------------------------


def test_streamed_float_column_gets_the_kind_of_the_whole_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # items 1.0..: whole in the first chunks, 11.5 only in the last one
    n = 60
    recs = pd.DataFrame(
        {
            "user": np.repeat(np.arange(n // 3), 3),
            "item": np.r_[np.arange(1, n, dtype=float), 11.5],
            "score": np.tile([3.0, 2.0, 1.0], n // 3),
        }
    )
    truth = pd.DataFrame({"user": np.arange(n // 3), "item": np.arange(1, n, 3, dtype=float)})
    truth.loc[n // 3 - 1, "item"] = 11.5
    metrics = ["hit_rate@1", "ndcg@3", "precision@2"]
    whole = receval.evaluate(recs, truth, metrics)
    r, t = tmp_path / "r.parquet", tmp_path / "t.parquet"
    recs.to_parquet(r, row_group_size=7)
    truth.to_parquet(t, row_group_size=5)
    src = stream.open_parquet(r, "recommendations")
    assert src is not None and src.item_kind == "str"
    for rows in (1, 4, 1000):
        monkeypatch.setattr(stream, "CHUNK_ROWS", rows)
        got = receval.evaluate(r, t, metrics)
        assert got.summary == whole.summary
        pd.testing.assert_frame_equal(got.per_user, whole.per_user)
    # in memory, chunked: the same
    from receval.io import tables

    monkeypatch.setattr(tables, "CHUNK_ROWS", 6)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 6)  # tables merged by user
    chunked = receval.evaluate(recs, truth, metrics)
    pd.testing.assert_frame_equal(chunked.per_user, whole.per_user)


# --- fuzz: every form, both engines, against the literal rule ---------------------

SAFE = st.text(alphabet="abc01.e-+_", min_size=1, max_size=4)
VALUES = st.one_of(
    st.integers(-5, 5),
    st.integers(-(2**70), 2**70),
    st.integers(-5, 5).map(float),
    st.floats(-100, 100, allow_nan=False).filter(lambda f: not f.is_integer()),
    st.sampled_from(["1", "1.0", "007", "11.5", "true", "false", "alice", str(2**64 - 1), "2e1"]),
    SAFE,
    st.booleans(),
)


def _text_of(v: Any) -> str:
    """How a typed value is written to a CSV file."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def _shared(recs: dict[Any, list[Any]], truth: dict[Any, list[Any]], rule: Any) -> bool:
    """Whether some user (under the rule, matched as strings when kinds differ)
    is on both sides."""
    ru = ref_column([rule(u) for u in recs])
    tu = ref_column([rule(u) for u in truth])
    if any(isinstance(v, str) for v in ru + tu):
        ru, tu = [str(v) for v in ru], [str(v) for v in tu]
    return bool(set(ru) & set(tu))


def _reference(
    recs: dict[Any, list[Any]], truth: dict[Any, list[Any]], rule: Any, k: int
) -> dict[Any, float] | None:
    """Per-user hit_rate@k, literally; None when the rule makes an input invalid
    (two ids of one list or two users the same after canonicalisation)."""
    ru = ref_column([rule(u) for u in recs])
    tu = ref_column([rule(u) for u in truth])
    ri = ref_column([rule(i) for v in recs.values() for i in v])
    ti = ref_column([rule(i) for v in truth.values() for i in v])
    if any(isinstance(v, str) for v in ru + tu):
        ru, tu = [str(v) for v in ru], [str(v) for v in tu]
    if any(isinstance(v, str) for v in ri + ti):
        ri, ti = [str(v) for v in ri], [str(v) for v in ti]
    assume(len(set(ru)) == len(ru) and len(set(tu)) == len(tu))  # keys, not ids
    lists, at = {}, 0
    for u, v in zip(ru, recs.values(), strict=True):
        lists[u] = ri[at : at + len(v)]
        at += len(v)
        if len(set(lists[u])) != len(lists[u]):
            return None
    rel, at = {}, 0
    for u, v in zip(tu, truth.values(), strict=True):
        rel[u] = set(ti[at : at + len(v)])
        if len(rel[u]) != len(v):
            return None
        at += len(v)
    out = {}
    for u in set(ru) | set(tu):
        if not rel.get(u):
            continue  # no relevant item: skipped
        out[u] = float(bool(set(lists.get(u, [])[:k]) & rel[u]))
    return out


def _long(mapping: dict[Any, list[Any]], ranked: bool) -> dict[str, list[Any]]:
    users = [u for u, v in mapping.items() for _ in v]
    items = [i for v in mapping.values() for i in v]
    out: dict[str, list[Any]] = {"user": users, "item": items}
    if ranked:
        out["rank"] = [j + 1 for v in mapping.values() for j in range(len(v))]
    return out


def _homogeneous(columns: dict[str, list[Any]]) -> bool:
    return all(len({type(v) for v in col}) <= 1 for col in columns.values())


def _forms(recs: dict[Any, list[Any]], truth: dict[Any, list[Any]], tmp: Path) -> dict[str, Any]:
    """(recs, truth, rule) per form that can hold these values."""
    lr, lt = _long(recs, True), _long(truth, False)
    obj = {c: pd.Series(v, dtype=object) if c != "rank" else pd.Series(v) for c, v in lr.items()}
    forms: dict[str, Any] = {
        "dict": (recs, truth, ref_value),
        "pandas": (
            pd.DataFrame(obj),
            pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in lt.items()}),
            ref_value,
        ),
    }
    text_r = "user,item,rank\n" + "".join(
        f"{_text_of(u)},{_text_of(i)},{r}\n" for u, i, r in zip(*lr.values(), strict=True)
    )
    text_t = "user,item\n" + "".join(
        f"{_text_of(u)},{_text_of(i)}\n" for u, i in zip(*lt.values(), strict=True)
    )
    (tmp / "r.csv").write_text(text_r)
    (tmp / "t.csv").write_text(text_t)
    forms["csv"] = (tmp / "r.csv", tmp / "t.csv", lambda v: ref_text(_text_of(v)))
    (tmp / "r.jsonl").write_text(
        "".join(
            json.dumps(dict(zip(lr, row, strict=True))) + "\n"
            for row in zip(*lr.values(), strict=True)
        )
    )
    (tmp / "t.jsonl").write_text(
        "".join(
            json.dumps(dict(zip(lt, row, strict=True))) + "\n"
            for row in zip(*lt.values(), strict=True)
        )
    )
    forms["jsonl"] = (tmp / "r.jsonl", tmp / "t.jsonl", ref_value)
    small = all(
        not isinstance(v, int) or isinstance(v, bool) or -(2**63) <= v <= I64
        for col in (*lr.values(), *lt.values())
        for v in col
    )
    if _homogeneous(lr) and _homogeneous(lt) and small:
        ar, at = pa.table(lr), pa.table(lt)
        forms["pyarrow"] = (ar, at, ref_value)
        pq.write_table(ar, tmp / "r.parquet", row_group_size=2)
        pq.write_table(at, tmp / "t.parquet", row_group_size=2)
        forms["parquet"] = (tmp / "r.parquet", tmp / "t.parquet", ref_value)
        try:
            import polars as pl

            forms["polars"] = (pl.from_arrow(ar), pl.from_arrow(at), ref_value)
        except ImportError:  # pragma: no cover - polars is a test dependency
            pass
    return forms


def _per_user(res: Any) -> dict[Any, float]:
    col = res.per_user["hit_rate@2"]
    return {u: v for u, v in col.items() if not math.isnan(v)}


MAPS = st.dictionaries(VALUES, st.lists(VALUES, min_size=0, max_size=3), min_size=1, max_size=3)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(recs=MAPS, truth=MAPS)
def test_every_form_and_engine_follows_the_rule(
    recs: dict[Any, list[Any]], truth: dict[Any, list[Any]], tmp_path: Path
) -> None:
    assume(any(truth.values()) and any(recs.values()))
    forms = _forms(recs, truth, tmp_path)
    # long tables cannot hold a user with an empty list
    long_recs = {u: v for u, v in recs.items() if v}
    long_truth = {u: v for u, v in truth.items() if v}
    for name, (r, t, rule) in forms.items():
        if name == "dict":
            expected = _reference(recs, truth, rule, 2)
        else:
            expected = _reference(long_recs, long_truth, rule, 2)
        for native in _engines():
            with pytest.MonkeyPatch.context() as m:
                if not native:
                    _native_off(m)
                m.setattr(stream, "CHUNK_ROWS", 2)
                if expected is None:
                    with pytest.raises(receval.ReceValError):
                        receval.evaluate(r, t, "hit_rate@2", empty_truth="skip")
                    continue
                try:
                    res = receval.evaluate(r, t, "hit_rate@2")
                except NoSharedUser as exc:
                    # the lists and the truth (of this form) have no user in common
                    used = (recs, truth) if name == "dict" else (long_recs, long_truth)
                    assert not _shared(*used, rule), f"{name}: {exc}"
                    continue
                except receval.ReceValError as exc:
                    # every user without a relevant item: fine if the reference has
                    # nothing to score either
                    assert not expected, f"{name}: {exc}"
                    continue
                assert _per_user(res) == expected, (name, native)


def test_text_rule_is_vectorised_for_integer_columns() -> None:
    # the fast path: one regex pass and one cast, no Python loop per row
    values = pa.array([str(i) for i in range(100_000)])
    out = ids.from_text(values, "item", "x.csv")
    assert out.dtype == np.int64 and out[-1] == 99_999


def test_jsonl_big_integers_are_exact(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text('{"user": 1, "item": 18446744073709551615}\n{"user": 1, "item": 1.0}\n')
    table, _ = read_file(p, role="truth")
    assert table.column("item").to_pylist() == ["18446744073709551615", "1"]


@pytest.mark.parametrize(
    ("make", "found"),
    [
        (lambda: pd.DataFrame({"user": [1, 1], "item": [7, [5, 6]], "score": [0.9, 0.5]}), "list"),
        (
            lambda: pd.DataFrame({"user": [1, 1], "item": [7, {"id": 5}], "score": [0.9, 0.5]}),
            "dict",
        ),
        (lambda: pd.DataFrame({"user": [1, 1], "item": [7, (5,)], "score": [0.9, 0.5]}), "tuple"),
        (
            lambda: pd.DataFrame({"user": [1, 1], "item": [7 + 0j, 5j], "score": [0.9, 0.5]}),
            "complex",
        ),
        (lambda: pd.DataFrame({"user": [[1], 1], "item": [7, 5], "score": [0.9, 0.5]}), "list"),
        (lambda: {1: [7, {"id": 5}]}, "dict"),
    ],
)
def test_a_value_that_is_no_id_is_refused_naming_its_row(make: Any, found: str) -> None:
    """A container where an id goes (a list of items in a long table's item
    column, a dict) or a complex number is no id: an error naming the row
    and what was found, never the id ``str(value)`` (which no file holds)."""
    with pytest.raises(InputError) as got:
        receval.evaluate(make(), {1: [5]}, "rr")
    role = "user" if isinstance(make(), pd.DataFrame) and make()["user"].dtype == object else "item"
    assert f"{role} id must be a number or text; found a {found}" in str(got.value)
    assert got.value.row == (0 if found == "complex" or role == "user" else 1)


def test_a_nested_object_in_a_jsonl_file_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "recs.jsonl"
    rows = [
        {"user": 1, "item": {"id": 7}, "score": 0.9},
        {"user": 1, "item": {"id": 5}, "score": 0.5},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError) as got:
        receval.evaluate(path, {1: [5]}, "rr")
    assert "item id must be a number or text; found a dict" in str(got.value)
    assert got.value.line == 1


def test_decimal_and_binary_ids_are_read_as_their_text_is() -> None:
    """A decimal column (Arrow decimal128, a dict of Decimals, a pandas object
    column) and a binary column are read by the text rule, as the same
    characters in a string column: 7.00 is 7, b"1.0" is 1."""
    truth = {1: [7, 1]}
    want = receval.evaluate(
        pa.table({"user": [1, 1], "item": ["7.00", "1.0"], "rank": [1, 2]}), truth, "rr"
    )
    assert want.summary == {"rr": 1.0}
    forms = [
        pa.table(
            {
                "user": [1, 1],
                "item": pa.array([Decimal("7.00"), Decimal("1.0")], pa.decimal128(5, 2)),
                "rank": [1, 2],
            }
        ),
        pd.DataFrame({"user": [1, 1], "item": [Decimal("7.00"), Decimal("1.0")], "rank": [1, 2]}),
        {1: [Decimal("7.00"), Decimal("1.0")]},
        pa.table(
            {"user": [1, 1], "item": pa.array([b"7.00", b"1.0"], pa.binary()), "rank": [1, 2]}
        ),
        {1: [b"7.00", b"1.0"]},
    ]
    for form in forms:
        got = receval.evaluate(form, truth, "rr")
        assert got.summary == want.summary and got.per_user.equals(want.per_user), form
    with pytest.raises(InputError, match="row 1, user 1: missing item id"):
        receval.evaluate({1: [Decimal("7"), Decimal("NaN")]}, truth, "rr")


def test_jsonl_text_that_looks_like_a_date_stays_as_written(tmp_path: Path) -> None:
    """Arrow's JSON inference turns text like "2024-01-01" into a timestamp,
    written back as "2024-01-01 00:00:00" (two ids could become one): a JSON
    Lines file is read as the CSV of the same ids."""
    rows = [("u1", "2024-01-01", 1), ("u1", "2024-01-02T10:00:00Z", 2), ("2024-01-03", "x", 1)]
    jsonl, csv = tmp_path / "r.jsonl", tmp_path / "r.csv"
    jsonl.write_text(
        "".join(json.dumps({"user": u, "item": i, "rank": r}) + "\n" for u, i, r in rows)
    )
    csv.write_text("user,item,rank\n" + "".join(f"{u},{i},{r}\n" for u, i, r in rows))
    truth = {"u1": ["2024-01-02T10:00:00Z"], "2024-01-03": ["x"]}
    want = receval.evaluate(csv, truth, ["rr", "precision@2"])
    got = receval.evaluate(jsonl, truth, ["rr", "precision@2"])
    assert got.summary == want.summary == {"rr": 0.75, "precision@2": 0.5}
    assert got.per_user.equals(want.per_user)
    assert sorted(got.per_user.index) == ["2024-01-03", "u1"]
    lists = tmp_path / "l.jsonl"
    lists.write_text('{"user": "u1", "item": ["2024-01-01", "2024-01-02T10:00:00Z"]}\n')
    assert receval.evaluate(lists, {"u1": ["2024-01-02T10:00:00Z"]}, "rr").summary == {"rr": 0.5}


def test_jsonl_id_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"user": "u1", "item": 10, "rank": 1}\n\n{"user": "u1", "item": 1e400, "rank": 2}\n'
    )
    with pytest.raises(InputError, match=r"r\.jsonl, line 3: non-finite item id"):
        receval.evaluate(path, {"u1": [10]}, "rr")


def test_an_empty_text_id_is_missing_through_every_door(tmp_path: Path) -> None:
    """An empty string is no id: a CSV's empty field always was an error;
    a Parquet, JSON Lines, pandas (object, string, categorical), Arrow or
    mapping "" was a real id (a relevant item no list could hold). Each
    names the row (a file's line) and the row's user."""
    frame = pd.DataFrame({"user": ["u", "u", "u"], "item": ["a", "b", ""]})
    parquet, jsonl, csv = tmp_path / "t.parquet", tmp_path / "t.jsonl", tmp_path / "t.csv"
    frame.to_parquet(parquet)
    frame.to_json(jsonl, orient="records", lines=True)
    csv.write_text('user,item\nu,a\nu,b\nu,""\n')
    forms = {
        "pandas": (frame, "row 2"),
        "string dtype": (frame.astype({"item": "string[pyarrow]"}), "row 2"),
        "categorical": (frame.astype({"item": "category"}), "row 2"),
        "arrow": (pa.Table.from_pandas(frame), "row 2"),
        "mapping": ({"u": ["a", "b", ""]}, "row 2"),
        "parquet": (parquet, "row 2"),
        "jsonl": (jsonl, "line 3"),
        "csv": (csv, "line 4"),
    }
    for name, (form, where) in forms.items():
        with pytest.raises(InputError, match=f"{where}, user 'u': missing item id") as got:
            receval.evaluate({"u": ["a", "b"]}, form, "recall@2")
        assert "empty" in str(got.value), (name, got.value)
    with pytest.raises(InputError, match="row 1: missing user id"):
        receval.evaluate({"u": ["a"], "": ["b"]}, {"u": ["a"]}, "recall@2")


def test_a_missing_item_names_its_user_as_the_whole_column_reads_it(tmp_path: Path) -> None:
    """A user column mixing text and digits is text: the user of a missing
    item's row is named '7', as any other error names that user, through the
    table, a Parquet file and a CSV."""
    recs = pd.DataFrame(
        {"user": ["u1", "7", "7", "u3"], "item": ["1", "2", None, "4"], "rank": [1, 1, 2, 1]}
    )
    recs.to_parquet(tmp_path / "r.parquet")
    (tmp_path / "r.csv").write_text("user,item,rank\nu1,1,1\n7,2,1\n7,,2\nu3,4,1\n")
    for form, where in (
        (recs, "recommendations, row 2"),
        (tmp_path / "r.parquet", f"{tmp_path / 'r.parquet'}, row 2"),
        (tmp_path / "r.csv", f"{tmp_path / 'r.csv'}, line 4"),
    ):
        with pytest.raises(InputError) as got:
            receval.evaluate(form, {"u1": ["1"]}, "rr")
        assert str(got.value).startswith(f"{where}, user '7': missing item id"), got.value


def test_float32_ids_read_as_their_own_shortest_text(tmp_path: Path) -> None:
    """A float32 id 0.1 is "0.1", as a CSV or a float64 column writes it
    (it was float64's "0.10000000149011612", which matched nothing): numpy,
    pandas, polars and Arrow columns, Parquet files and scalars in mappings."""
    import polars as pl

    item = np.array([0.1, 0.25, 7.0], dtype=np.float32)
    assert ids.canonical(item, "item", "s").tolist() == ["0.1", "0.25", "7"]
    assert ids.canonical_value(np.float32(0.1)) == "0.1" == ids.canonical_value(0.1)
    assert ids.canonical_value(np.float16(0.1)) == "0.1"
    recs = pd.DataFrame({"user": [1, 1, 1], "item": item, "rank": [1, 2, 3]})
    recs.to_parquet(tmp_path / "r.parquet")
    truth = pd.DataFrame({"user": [1], "item": ["0.25"]})  # as a CSV holds it
    want = receval.evaluate(recs.astype({"item": np.float64}), truth, "rr").summary
    assert want == {"rr": 0.5}
    forms = [recs, pl.from_pandas(recs), pa.Table.from_pandas(recs), tmp_path / "r.parquet"]
    forms.append({1: [np.float32(0.1), np.float32(0.25), np.float32(7.0)]})
    for form in forms:
        assert receval.evaluate(form, truth, "rr").summary == want, type(form)
