"""Agreement with a reference run (#34 point 5): rbo (extrapolated), rbo_min, rbo_res,
intersection@k and jaccard@k through ``receval.agreement``."""

from __future__ import annotations

import csv
import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.agreement import agreement, reference_truth_table
from receval.errors import InputError, OptionError, ReceValError

METRICS = ("rbo", "rbo_min", "rbo_res", "intersection", "jaccard")


def _one(run: list[Any], ref: list[Any], metric: str) -> float:
    res = agreement({"u": run}, {"u": ref}, metric)
    return res.summary[next(iter(res.summary))]


# Known values ---------------------------------------------------------------------------

#: The cases of tests/data/known_values_agreement.csv (user "u"): (list, reference).
CASES: dict[str, tuple[list[Any], list[Any]]] = {
    "fig5": (list("abcdefg"), list("zcavwxy")),
    "uneven": (list("abcde"), list("baf")),
    "long_short": ([f"i{i}" for i in range(1, 9)], ["i3", "i9", "i1"]),
    "swap": (list("abc"), list("acb")),
    "prefix": (list("abcdefg"), list("abcde")),
    "share": (list("abcd"), list("bxay")),
}
KNOWN = list(csv.DictReader((Path(__file__).parent / "data" / "known_values_agreement.csv").open()))


@pytest.mark.parametrize("row", KNOWN, ids=[f"{r['case']}-{r['metric']}" for r in KNOWN])
def test_known_values(row: dict[str, str]) -> None:
    run, ref = CASES[row["case"]]
    assert _one(run, ref, row["metric"]) == pytest.approx(float(row["expected"]), abs=1e-12)
    if row["metric"].startswith("rbo"):  # RBO is symmetric
        assert _one(ref, run, row["metric"]) == pytest.approx(float(row["expected"]), abs=1e-12)


def test_hand_worked() -> None:
    # a b c vs a c b, p = 0.9: X = 1, 1, 3;
    # ext = (1/9)(0.9 + 0.81/2 + 0.729) + 0.729 = 0.955
    assert _one(list("abc"), list("acb"), "rbo@3") == pytest.approx(0.955, abs=1e-15)
    assert _one(list("abc"), list("acb"), "rbo") == pytest.approx(0.955, abs=1e-15)
    # identical: ext 1, min + res = 1 (the upper bound is 1)
    assert _one(list("abcd"), list("abcd"), "rbo") == pytest.approx(1.0, abs=1e-15)
    low = _one(list("abcd"), list("abcd"), "rbo_min")
    assert low + _one(list("abcd"), list("abcd"), "rbo_res") == pytest.approx(1.0, abs=1e-14)
    # min of identical lists of 4: (1-p)/p (Σ_{d≤4} p^d + 4 (−ln(1−p) − Σ_{d≤4} p^d/d))
    p = 0.9
    expect = (
        (1 - p)
        / p
        * (
            sum(p**d for d in range(1, 5))
            + 4 * (-math.log(1 - p) - sum(p**d / d for d in range(1, 5)))
        )
    )
    assert low == pytest.approx(expect, abs=1e-14)
    # disjoint: ext and min 0
    assert _one(list("abc"), list("xyz"), "rbo") == 0.0
    assert _one(list("abc"), list("xyz"), "rbo_min") == 0.0
    # a longer list that extends the shorter one: ext 1 (changyaochen/rbo's README: A vs D)
    assert _one(list("abcdefg"), list("abcde"), "rbo") == pytest.approx(1.0, abs=1e-15)
    # intersection (RecTools: share of the list's top k) and Jaccard
    assert _one(list("abcd"), list("bxay"), "intersection@2") == 0.5  # {a,b} ∩ {b,x}
    assert _one(list("abcd"), list("bxay"), "intersection@2[ref_k=4]") == 1.0
    assert _one(list("abcd"), list("bxay"), "intersection@4[ref_k=1]") == 0.25
    assert _one(list("abcd"), list("bxay"), "jaccard@2") == pytest.approx(1 / 3)
    assert _one(list("abcd"), list("bxay"), "jaccard@4") == pytest.approx(2 / 6)
    assert _one(list("ab"), list("bxay"), "jaccard@4") == pytest.approx(2 / 4)  # k past a list


def test_edges() -> None:
    # one list missing, compared as an empty list: 0, but rbo_res 1 (nothing is known)
    empty = [0.0, 0.0, 1.0, 0.0, 0.0]
    res = agreement(
        {"v": ["a"]}, {"u": ["a", "b"], "v": ["a"]}, list(METRICS), only_in_reference="empty"
    )
    assert res.per_user.loc["u"].tolist() == empty
    res = agreement({"u": ["a", "b"], "v": ["a"]}, {"v": ["a"]}, list(METRICS), only_in_run="empty")
    assert res.per_user.loc["u"].tolist() == empty
    low = (1 - 0.9) / 0.9 * -math.log(1 - 0.9)  # X_d = 1 at every depth past 1: eq. 11
    assert res.per_user.loc["v"].tolist() == pytest.approx([1.0, low, 1 - low, 1.0, 1.0], abs=1e-15)
    # users in only one run are skipped and counted by default
    res = agreement({"u": ["a"], "w": ["c"]}, {"u": ["a"], "v": ["b"]}, "jaccard")
    assert res.summary == {"jaccard": 1.0}
    assert res.counts["users_skipped"]["no_truth"] == 1
    assert res.counts["users_skipped"]["no_recommendations"] == 1
    with pytest.raises(ReceValError, match=r"user 'w' has a list in the run but none in the r"):
        agreement({"u": ["a"], "w": ["c"]}, {"u": ["a"]}, "jaccard", only_in_run="error")
    with pytest.raises(ReceValError, match=r"'w' has a reference .*only_in_reference='error'"):
        agreement({"u": ["a"]}, {"u": ["a"], "w": ["c"]}, "jaccard", only_in_reference="error")
    # duplicates: an error, or the best rank kept
    with pytest.raises(InputError, match="twice"):
        agreement({"u": ["a"]}, {"u": ["a", "b", "a"]}, "rbo")
    kept = agreement({"u": ["a", "b"]}, {"u": ["a", "b", "a"]}, "rbo", duplicates="keep")
    assert kept.summary["rbo"] == pytest.approx(1.0)


def test_refused_outside_the_door() -> None:
    for m in ("rbo@10", "rbo_min", "rbo_res[p=0.5]", "intersection@5", "jaccard@5"):
        with pytest.raises(ReceValError, match=r"receval\.agreement"):
            receval.evaluate({"u": [1, 2]}, {"u": [1]}, m)
        with pytest.raises(ReceValError, match=r"receval\.agreement"):
            receval.Accumulator(m)
    with pytest.raises(ReceValError, match="not an agreement metric"):
        agreement({"u": [1]}, {"u": [1]}, ["rbo", "ndcg@10"])
    with pytest.raises(OptionError):
        agreement({"u": [1]}, {"u": [1]}, "rbo", only_in_run="keep")  # type: ignore[arg-type]
    with pytest.raises(ReceValError, match="p"):
        agreement({"u": [1]}, {"u": [1]}, "rbo[p=1]")


# A slow literal reference --------------------------------------------------------------


def _x(a: list[Any], b: list[Any], depth: int) -> list[int]:
    """X_d = |a[:d] ∩ b[:d]| for d = 1..depth, by sets, depth by depth."""
    return [len(set(a[:d]) & set(b[:d])) for d in range(1, depth + 1)]


def _rbo_sum(a: list[Any], b: list[Any], p: float, depth: int) -> float:
    """(1 − p) Σ_{d≤depth} p^(d−1) X_d / d, incrementally (the tail past depth is < p^depth)."""
    seen_a: set[Any] = set()
    seen_b: set[Any] = set()
    x = 0
    total = 0.0
    for d in range(1, depth + 1):
        u, v = a[d - 1], b[d - 1]
        x += (u in seen_b) + (v in seen_a) + (u == v)
        seen_a.add(u)
        seen_b.add(v)
        total += p ** (d - 1) * x / d
    return (1 - p) * total


@functools.cache
def _slow(metric: str, a: tuple[Any, ...], b: tuple[Any, ...], k: int | None, p: float) -> float:
    return slow(metric, list(a), list(b), k, p, None)


def slow(
    metric: str, a: list[Any], b: list[Any], k: int | None, p: float, ref_k: int | None
) -> float:
    if metric == "intersection":
        top, ref = a[:k] if k else a, b[: (ref_k or k)] if (ref_k or k) else b
        return len(set(top) & set(ref)) / len(top) if top else math.nan
    a, b = (a[:k], b[:k]) if k else (a, b)
    if metric == "jaccard":
        union = set(a) | set(b)
        return len(set(a) & set(b)) / len(union) if union else math.nan
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, ll = len(short), len(long)
    if ll == 0:
        return math.nan
    depth = math.ceil(math.log(1e-17) / math.log(p))  # the tail past depth is < 1e-17
    fresh = [("fresh", i) for i in range(depth)]
    if metric == "rbo":  # eq. 32, literally
        x = [0, *_x(short, long, ll)]
        seen = sum(x[d] / d * p**d for d in range(1, ll + 1))
        share = x[s] / s if s else 0.0
        extra = sum(share * (d - s) / d * p**d for d in range(s + 1, ll + 1))
        return (1 - p) / p * (seen + extra) + ((x[ll] - x[s]) / ll + share) * p**ll
    # the bounds: RBO of the lists extended with no further overlap (min) or the most
    low = _rbo_sum(short + fresh, long + [("other", i) for i in range(depth)], p, depth)
    if metric == "rbo_min":
        return low
    more_s = short + [v for v in long if v not in short] + fresh
    more_l = long + [v for v in short if v not in long] + fresh
    return _rbo_sum(more_s, more_l, p, depth) - low


def _random_runs(seed: int, users: int = 25) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    rng = np.random.default_rng(seed)
    run, ref = {}, {}
    for u in range(users):
        pool = rng.permutation(30)
        run[u] = [int(v) for v in pool[: rng.integers(1, 16)]]
        # the reference shares some of the run's items
        other = list(rng.permutation(run[u] + [int(v) for v in rng.permutation(30)[:8]]))
        ref[u] = list(dict.fromkeys(int(v) for v in other))[: rng.integers(1, 16)]
    return run, ref


@pytest.mark.parametrize("seed", [0])
def test_against_the_slow_reference(seed: int) -> None:
    run, ref = _random_runs(seed)
    strings = []
    for k in (None, 1, 3, 10):
        at = f"@{k}" if k else ""
        strings += [
            f"{m}{at}[p={p}]" for m in ("rbo", "rbo_min", "rbo_res") for p in (0.5, 0.9, 0.95)
        ]
        strings += [f"jaccard{at}", f"intersection{at}"]
        strings += [f"intersection{at}[ref_k={r}]" for r in (1, 5)]
    res = agreement(run, ref, strings)
    per_user = res.per_user
    for spec in receval.parse_metrics(strings):
        params = dict(spec.params)
        got = per_user[str(spec)]
        for u in run:
            if spec.name.startswith("rbo"):
                want = _slow(spec.name, tuple(run[u]), tuple(ref[u]), spec.k, params.get("p", 0.9))
            else:
                want = slow(spec.name, run[u], ref[u], spec.k, 0.9, params.get("ref_k"))
            assert got[u] == pytest.approx(want, abs=1e-12, nan_ok=True), (str(spec), u)
            lo, hi = spec.definition.bounds
            assert lo - 1e-12 <= got[u] <= hi + 1e-12
        if spec.name == "rbo_min":
            res_name = str(spec).replace("rbo_min", "rbo_res")
            upper = got + per_user[res_name]
            ext = per_user[str(spec).replace("rbo_min", "rbo")]
            assert (got <= ext + 1e-12).all() and (ext <= upper + 1e-12).all()


# Input forms, id forms, row order ------------------------------------------------------


def _long(lists: dict[Any, list[Any]], ids: Any = lambda v: v) -> pd.DataFrame:
    rows = [(ids(u), ids(i), r) for u, items in lists.items() for r, i in enumerate(items, 1)]
    return pd.DataFrame(rows, columns=["user", "item", "rank"])


def test_forms_and_ids_give_the_same_numbers(tmp_path: Path) -> None:
    run, ref = _random_runs(3, users=12)
    strings = ["rbo@5", "rbo_min", "rbo_res@3[p=0.8]", "intersection@4[ref_k=6]", "jaccard@5"]
    base = agreement(run, ref, strings).summary
    rng = np.random.default_rng(0)

    def same(r: Any, f: Any, **kw: Any) -> None:
        got = agreement(r, f, strings, **kw).summary
        assert got == base  # bit for bit

    same(_long(run), _long(ref))
    shuffled = _long(ref).sample(frac=1, random_state=1)
    same(_long(run).sample(frac=1, random_state=2), shuffled)
    same(_long(run, str), _long(ref, str))  # digit strings
    same(_long(run, lambda v: f"id{v:03d}"), _long(ref, lambda v: f"id{v:03d}"))  # text
    # scores order the lists: a ranx-style mapping user -> {item: score}
    scored = {
        u: {i: float(len(items) - r) + 0.5 for r, i in enumerate(items)} for u, items in ref.items()
    }
    same(run, scored)
    scores = _long(ref).assign(score=lambda t: 100.0 - t["rank"]).drop(columns="rank")
    same(_long(run), scores.sample(frac=1, random_state=int(rng.integers(100))))
    # files: TREC run and Parquet
    trec = tmp_path / "ref.run"
    trec.write_text(
        "".join(
            f"{u} Q0 {i} {r} {100 - r} ref\n"
            for u, items in ref.items()
            for r, i in enumerate(items, 1)
        )
    )
    run_trec = tmp_path / "run.run"
    run_trec.write_text(
        "".join(
            f"{u} Q0 {i} {r} {100 - r} run\n"
            for u, items in run.items()
            for r, i in enumerate(items, 1)
        )
    )
    same(run_trec, trec)
    _long(ref).to_parquet(tmp_path / "ref.parquet")
    _long(run).to_parquet(tmp_path / "run.parquet")
    same(tmp_path / "run.parquet", tmp_path / "ref.parquet")


def test_the_truth_table_encodes_ranks() -> None:
    table = reference_truth_table(
        pd.DataFrame({"user": [1, 1, 1, 2], "item": [5, 6, 7, 5], "score": [0.1, 0.9, 0.5, 1.0]})
    )
    assert table.to_dict("list") == {
        "user": [1, 1, 1, 2],
        "item": [6, 7, 5, 5],
        "grade": [3, 2, 1, 1],
    }


def test_the_property_suite_holds_under_the_reference_door() -> None:
    """check_metric's doors (row order, id forms, blocks, chunks and threads, the
    Accumulator, pyarrow, polars, CSV, streamed Parquet, pickling) on the kernels,
    with its random truth read as a reference (X_d <= d whatever the grades)."""
    from receval.evaluation.reference import reference_truth
    from receval.testing import check_metric

    with reference_truth():
        compared = check_metric("rbo_res", seeds=[1])
    assert compared["Parquet files (streamed)"] >= 1


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from receval.cli import main

    run, ref = _random_runs(5, users=6)
    _long(run).to_csv(tmp_path / "run.csv", index=False)
    _long(ref).to_csv(tmp_path / "ref.csv", index=False)
    files = [str(tmp_path / "run.csv"), str(tmp_path / "ref.csv")]
    assert (
        main(["agreement", *files, "-m", "rbo@10[p=0.8]", "-m", "jaccard", "-k", "5", "--json"])
        == 0
    )
    got = json.loads(capsys.readouterr().out)["metrics"]
    assert got == agreement(run, ref, ["rbo@10[p=0.8]", "jaccard@5"]).summary
    assert main(["agreement", *files, "-m", "ndcg@10"]) == 2
    assert "not an agreement metric" in capsys.readouterr().err
    assert main(["agreement", *files]) == 2  # an example that the command computes
    assert "give at least one metric with -m, e.g. -m rbo@10" in capsys.readouterr().err
    _long({**run, "extra": ["x"]}).to_csv(tmp_path / "more.csv", index=False)
    more = [str(tmp_path / "more.csv"), files[1]]
    assert main(["agreement", *more, "-m", "rbo", "--only-in-run", "error"]) == 2
    assert "user 'extra' has a list in the run but none in the reference (--only-in-run error)" in (
        capsys.readouterr().err
    )
    assert main(["evaluate", *files, "-m", "rbo@10"]) == 2
    assert "receval agreement RUN REFERENCE" in capsys.readouterr().err


def test_the_reference_order_is_lexsort_s() -> None:
    from receval.analysis.agreement import _by_user_key_item

    rng = np.random.default_rng(7)
    for _ in range(100):
        m = int(rng.integers(1, 40))
        u, i = rng.integers(0, 5, m), rng.integers(0, 7, m)
        k = rng.integers(0, 4, m) * rng.choice([1.0, -0.5])
        want = np.lexsort((i, k, u))
        assert (_by_user_key_item(u, k, i) == want).all()
        u, k, i = u[want], k[want], i[want]  # already in order: the fast path
        assert (_by_user_key_item(u, k, i) == np.arange(m)).all()


def test_a_run_agrees_with_itself_exactly():
    """The same lists in the same order: rbo is 1, not 1 − 1e-15 of the sums."""
    rng = np.random.default_rng(5)
    run = {u: [int(i) for i in rng.permutation(200)[: int(rng.integers(1, 60))]] for u in range(50)}
    per_user = receval.agreement(run, run, ["rbo", "rbo@10[p=0.5]", "jaccard@10"]).per_user
    assert (per_user.to_numpy() == 1.0).all()


def test_no_user_in_common_is_said_of_a_run_and_a_reference() -> None:
    from receval.errors import NoSharedUser

    with pytest.raises(NoSharedUser) as got:
        receval.agreement({"u1": [1, 2]}, {9: [1, 2]}, "rbo@2")
    assert "both the run and the reference" in str(got.value)
    assert "truth" not in str(got.value) and "recommendations" not in str(got.value)


def test_an_item_twice_in_the_reference_names_both_lines(tmp_path: Path) -> None:
    (tmp_path / "run.csv").write_text("user,item,rank\n1,10,1\n1,20,2\n")
    (tmp_path / "ref.csv").write_text("user,item,rank\n1,20,1\n1,30,2\n1,20,3\n")
    with pytest.raises(InputError) as got:
        agreement(tmp_path / "run.csv", pd.read_csv(tmp_path / "ref.csv"), "rbo@3")
    assert (got.value.row, got.value.other_row, got.value.item) == (2, 0, 20)
    assert "(rows 0 and 2)" in str(got.value)
