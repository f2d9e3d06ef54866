"""Rating-prediction metrics (SPEC §5): known values, SciPy agreement, per-user
vectorization against a slow loop, and the error cases as a table."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

import receval
from receval.errors import InputError, MetricError, ReceValError
from receval.evaluation.ratings import (
    RATING_METRICS,
    RatingResult,
    evaluate_ratings,
    parse_rating_metric,
    parse_rating_metrics,
    score_ratings,
)
from receval.metrics import registry
from receval.metrics.kernels import rating as K

NAMES = ["mae", "mse", "rmse", "r2", "pearson", "spearman", "kendall"]
ACTUAL = [3.5, 4, 2, 5, 3]
PREDICTED = [3, 4.5, 1.5, 4.5, 2.5]


# --------------------------------------------------------------------------- references


def ref(name: str, a: np.ndarray, p: np.ndarray) -> float:
    """Obviously correct values: NumPy for errors, r2 by hand, SciPy for correlations."""
    a, p = np.asarray(a, float), np.asarray(p, float)
    if name == "mae":
        return float(np.mean(np.abs(a - p)))
    if name == "mse":
        return float(np.mean((a - p) ** 2))
    if name == "rmse":
        return float(np.sqrt(np.mean((a - p) ** 2)))
    if len(a) < 2 or len(set(a.tolist())) == 1:
        return math.nan
    if name == "r2":
        return 1 - float(np.sum((a - p) ** 2)) / float(np.sum((a - a.mean()) ** 2))
    if len(set(p.tolist())) == 1:
        return math.nan
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
    return float(fn[name](a, p).statistic)


def ref_by_user(name: str, a: np.ndarray, p: np.ndarray, users: np.ndarray) -> dict:
    """The slow loop: one reference call per user."""
    return {u: ref(name, a[users == u], p[users == u]) for u in np.unique(users)}


def random_ratings(seed: int, n_users: int = 60, ties: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, n_users)
    users = np.repeat(np.arange(n_users) * 7 + 3, sizes)  # sparse, non-dense ids
    rng.shuffle(users)
    n = len(users)
    if ties:
        actual = rng.integers(1, 6, n).astype(float)
        predicted = np.clip(actual + rng.integers(-2, 3, n), 1, 5).astype(float)
    else:
        actual = rng.normal(3, 1, n)
        predicted = actual + rng.normal(0, 0.7, n)
    # a user whose actual ratings are all equal, and one with constant predictions
    users[:3] = -1
    actual[:3] = 4.0
    users[3:6] = -2
    predicted[3:6] = 2.5
    return pd.DataFrame(
        {"user": users, "item": np.arange(n), "actual": actual, "predicted": predicted}
    )


# --------------------------------------------------------------------------- known values


def test_spec_known_values_mae_rmse() -> None:
    # SPEC §11: MAE and RMSE of [3.5,4,2,5,3] vs [3,4.5,1.5,4.5,2.5] are both 0.5
    assert score_ratings("mae", ACTUAL, PREDICTED) == pytest.approx(0.5)
    assert score_ratings("rmse", ACTUAL, PREDICTED) == pytest.approx(0.5)
    res = evaluate_ratings({"actual": ACTUAL, "predicted": PREDICTED}, ["MAE", "RMSE"])
    assert res.summary == pytest.approx({"mae": 0.5, "rmse": 0.5})


def test_hand_worked_values() -> None:
    # mean(a) = 3.5, SS_tot = 0 + .25 + 2.25 + 2.25 + .25 = 5, SS_res = 5 · .25
    assert score_ratings("mse", ACTUAL, PREDICTED) == pytest.approx(0.25)
    assert score_ratings("r2", ACTUAL, PREDICTED) == pytest.approx(1 - 1.25 / 5)
    # [1,2,3] vs [1,3,2]: deviations (-1,0,1)·(-1,1,0) = 1 over 2 → 0.5; C=2, D=1 → 1/3
    assert score_ratings("pearson", [1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert score_ratings("spearman", [1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert score_ratings("kendall", [1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # ties: ranks a = (1, 2.5, 2.5, 4), p = (1, 4, 2.5, 2.5) → 2.25 / 4.5 = 0.5
    assert score_ratings("spearman", [1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.5)
    # tau-b: C = 3, D = 1, n0 = 6, one tie on each side → 2 / sqrt(5 · 5)
    assert score_ratings("kendall", [1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.4)
    # r2 can be negative: predicting the reverse
    assert score_ratings("r2", [1, 2, 3], [3, 2, 1]) == pytest.approx(1 - 8 / 2)


def test_hand_worked_per_user() -> None:
    r = pd.DataFrame(
        {
            "user": ["a", "a", "b", "b", "b", "c"],
            "item": [1, 2, 1, 2, 3, 1],
            "actual": [4.0, 2.0, 1.0, 2.0, 3.0, 5.0],
            "predicted": [3.0, 2.0, 1.0, 3.0, 2.0, 5.0],
        }
    )
    metrics = [f"{m}[per_user=true]" for m in NAMES]
    res = evaluate_ratings(r, metrics)
    pu = res.per_user
    assert list(pu.index) == ["a", "b", "c"]
    assert pu["mae[per_user=true]"].tolist() == pytest.approx([0.5, 2 / 3, 0.0])
    assert pu["rmse[per_user=true]"].tolist() == pytest.approx(
        [math.sqrt(0.5), math.sqrt(2 / 3), 0.0]
    )
    # a: SS_tot 2, SS_res 1 → .5; b: SS_tot 2, SS_res 2 → 0; c: one pair → NaN
    assert pu["r2[per_user=true]"].tolist()[:2] == pytest.approx([0.5, 0.0])
    assert math.isnan(pu.loc["c", "r2[per_user=true]"])
    assert res.summary["r2[per_user=true]"] == pytest.approx(0.25)
    assert res.summary["mae[per_user=true]"] == pytest.approx((0.5 + 2 / 3 + 0) / 3)
    # b: (1,1),(2,3),(3,2): pearson .5; a: two pairs → ±1 (1 here)
    assert pu["pearson[per_user=true]"].tolist()[:2] == pytest.approx([1.0, 0.5])
    assert res.counts["undefined"]["pearson[per_user=true]"] == 1
    assert res.counts["users"] == 3
    assert res.counts["users_single_pair"] == 1
    assert "mae[per_user=true]" not in res.counts["undefined"]


# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_global_metric_matches_reference(name: str, seed: int) -> None:
    r = random_ratings(seed, ties=seed != 2)
    a, p = r["actual"].to_numpy(), r["predicted"].to_numpy()
    got = evaluate_ratings(r, name).summary[name]
    assert got == pytest.approx(ref(name, a, p), rel=1e-9, abs=1e-12)
    assert RATING_METRICS[name].by_user is not None
    assert RATING_METRICS[name].kernel(a, p) == pytest.approx(got, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_per_user_matches_slow_loop(name: str, seed: int) -> None:
    r = random_ratings(seed, ties=seed != 2)
    a, p, u = (r[c].to_numpy() for c in ("actual", "predicted", "user"))
    spec = f"{name}[per_user=true]"
    res = evaluate_ratings(r, spec)
    expected = ref_by_user(name, a, p, u)
    got = res.per_user[spec]
    assert list(got.index) == sorted(expected)
    np.testing.assert_allclose(
        got.to_numpy(), [expected[k] for k in got.index], rtol=1e-9, atol=1e-12
    )
    vals = np.array(list(expected.values()))
    assert res.summary[spec] == pytest.approx(float(np.nanmean(vals)), rel=1e-9)
    assert res.counts["undefined"].get(spec, 0) == int(np.isnan(vals).sum())
    if name in ("r2", "pearson", "spearman", "kendall"):
        assert math.isnan(got.loc[-1])  # actual constant
    if name in ("pearson", "spearman", "kendall"):
        assert math.isnan(got.loc[-2])  # predicted constant


def test_kernels_direct_codes_with_gaps() -> None:
    # codes without pairs give NaN; n_users sets the length
    a = np.array([1.0, 2.0, 3.0, 5.0])
    p = np.array([1.0, 3.0, 3.0, 4.0])
    users = np.array([3, 0, 3, 0])
    for name, fn in ((d.name, d.by_user) for d in RATING_METRICS.values()):
        assert fn is not None
        out = fn(a, p, users, 5)
        assert out.shape == (5,)
        assert np.isnan(out[[1, 2, 4]]).all()
        assert out[0] == pytest.approx(ref(name, a[[1, 3]], p[[1, 3]]), nan_ok=True)
        assert out[3] == pytest.approx(ref(name, a[[0, 2]], p[[0, 2]]), nan_ok=True)


def test_correlation_nan_conventions() -> None:
    for name in ("pearson", "spearman", "kendall", "r2"):
        assert math.isnan(score_ratings(name, [3, 3, 3], [1, 2, 3]))
        assert math.isnan(score_ratings(name, [5], [4]))
    for name in ("pearson", "spearman", "kendall"):
        assert math.isnan(score_ratings(name, [1, 2, 3], [2, 2, 2]))
    # near-constant float input: constancy is tested exactly, not by rounding
    assert math.isnan(score_ratings("pearson", [0.1, 0.1, 0.1], [1, 2, 3]))


def test_input_types_agree() -> None:
    r = random_ratings(5)
    metrics = ["rmse", "spearman[per_user=true]", "kendall"]
    base = evaluate_ratings(r, metrics)
    import polars as pl

    for obj in (pa.Table.from_pandas(r), pl.from_pandas(r), {c: r[c].to_numpy() for c in r}):
        other = evaluate_ratings(obj, metrics)
        assert other.summary == pytest.approx(base.summary)
        pd.testing.assert_frame_equal(other.per_user, base.per_user)


def test_row_order_does_not_matter() -> None:
    r = random_ratings(3)
    metrics = [f"{m}[per_user=true]" for m in NAMES] + NAMES
    a = evaluate_ratings(r, metrics)
    b = evaluate_ratings(r.sample(frac=1, random_state=1), metrics)
    assert b.summary == pytest.approx(a.summary)
    pd.testing.assert_frame_equal(a.per_user, b.per_user, rtol=1e-12)


def test_dropna_drops_and_counts() -> None:
    r = pd.DataFrame(
        {
            "user": [1, 1, 2, 2],
            "item": [1, 2, 1, 2],
            "actual": [4.0, None, 3.0, 2.0],
            "predicted": [3.0, 2.0, np.nan, 2.0],
        }
    )
    res = evaluate_ratings(r, ["mae", "mae[per_user=true]"], dropna=True)
    assert res.counts["rows"] == 4
    assert res.counts["rows_used"] == 2
    assert res.counts["rows_dropped_missing"] == 2
    assert res.summary["mae"] == pytest.approx(0.5)
    assert res.per_user["mae[per_user=true]"].tolist() == pytest.approx([1.0, 0.0])
    assert "2 rows dropped" in str(res)


# --------------------------------------------------------------------------- result


def test_result_shape_and_rendering() -> None:
    r = random_ratings(0)
    res = evaluate_ratings(r, ["RMSE", "rmse[per_user=true]", "Pearson_R[per_user=TRUE]"])
    assert isinstance(res, receval.Result) and isinstance(res, RatingResult)
    assert list(res.summary) == ["rmse", "rmse[per_user=true]", "pearson[per_user=true]"]
    # global metrics have no per-user column
    assert list(res.per_user.columns) == ["rmse[per_user=true]", "pearson[per_user=true]"]
    assert res.per_user.index.name == "user"
    assert res["root_mean_squared_error"] == res.summary["rmse"]
    assert res["pearson_r[per_user=1]"] == res.summary["pearson[per_user=true]"]
    frame = res.to_frame()
    assert frame.loc["rmse", "users"] == res.counts["users"]
    assert frame.loc["pearson[per_user=true]", "users"] == (
        res.counts["users"] - res.counts["undefined"]["pearson[per_user=true]"]
    )
    data = json.loads(res.to_json())
    assert data["counts"]["rows"] == len(r) and data["version"] == receval.__version__
    assert "rating pairs" in str(res) and "| rmse |" in res.to_markdown()
    assert res.to_latex().startswith("\\begin{tabular}")


def test_no_user_column_global_only() -> None:
    res = evaluate_ratings({"actual": [1, 2, 3], "predicted": [1, 2, 4]}, "r2")
    assert res.summary["r2"] == pytest.approx(0.5)
    assert res.per_user.empty and res.counts["users"] == 0
    assert any("no user column" in n for n in res.notes)


def test_score_ratings_per_user() -> None:
    v = score_ratings("mae[per_user=true]", [1, 2, 3], [2, 2, 5], users=["x", "y", "y"])
    assert v == pytest.approx(1.0)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("RMSE", "rmse"),
        ("rmse[per_user=true]", "rmse[per_user=true]"),
        ("rmse[per_user=false]", "rmse"),
        ("Mean_Absolute_Error[ per_user = yes ]", "mae[per_user=true]"),
        ("r_squared", "r2"),
        ("spearman_rho[per_user=1]", "spearman[per_user=true]"),
        ("kendall_tau", "kendall"),
        ("mean_squared_error", "mse"),
    ],
)
def test_canonical_strings(text: str, canonical: str) -> None:
    spec = parse_rating_metric(text)
    assert str(spec) == canonical
    assert parse_rating_metric(str(spec)) == spec


def test_parse_many_dedups() -> None:
    assert [str(s) for s in parse_rating_metrics(["mae", "MAE[per_user=false]", "r2"])] == [
        "mae",
        "r2",
    ]


def test_declarations_complete() -> None:
    seen: set[str] = set()
    for d in registry.RATING_DEFS:
        assert d.kind == "rating" and d.description and d.formula
        assert d.kernel.__doc__ and "Example" in d.kernel.__doc__
        assert d.by_user is not None and d.by_user.__doc__
        assert [p.name for p in d.params] == ["per_user"]
        for name in (d.name, *d.aliases):
            assert name not in seen, name
            seen.add(name)
            # no clash with a ranking metric (once merged, the registry holds d itself)
            assert registry.lookup(name) in (None, d), name
    assert not registry.RATING_DEFS[0].higher_is_better
    assert registry.RATING_DEFS[0].bounds == (0.0, math.inf)


# --------------------------------------------------------------------------- errors

GOOD = {"user": [1, 1], "item": [1, 2], "actual": [4.0, 3.0], "predicted": [3.5, 3.0]}


def _with(**cols: list) -> dict:
    return {**GOOD, **cols}


ERRORS = [
    # (call, exception, words the message must contain)
    (lambda: evaluate_ratings(pd.DataFrame(), "mae"), InputError, ["empty"]),
    (
        lambda: evaluate_ratings(pd.DataFrame(columns=["actual", "predicted"]), "mae"),
        InputError,
        ["empty"],
    ),
    (
        lambda: evaluate_ratings(_with(actual=[4.0, np.nan]), "mae"),
        InputError,
        ["row 1", "user 1", "item 2", "missing actual rating", "dropna=True"],
    ),
    (
        lambda: evaluate_ratings(_with(predicted=[None, 3.0]), "mae"),
        InputError,
        ["row 0", "item 1", "missing predicted rating"],
    ),
    (
        lambda: evaluate_ratings(_with(actual=[np.nan, np.nan]), "mae", dropna=True),
        InputError,
        ["no rating pairs left", "2 rows"],
    ),
    (
        lambda: evaluate_ratings(_with(predicted=[3.0, np.inf]), "mae"),
        InputError,
        ["row 1", "infinite"],
    ),
    (
        lambda: evaluate_ratings(_with(actual=["4", "x"]), "mae"),
        InputError,
        ["row 1", "actual rating must be a number", "'x'"],
    ),
    (
        lambda: evaluate_ratings(
            {"user": ["u1", "u2"], "item": [1, 2], "actual": [4, 3], "predicted": ["4", "x"]},
            "mae",
        ),
        InputError,
        ["row 1, user 'u2', item 2: predicted rating must be a number; found 'x'"],
    ),
    (
        lambda: evaluate_ratings({"actual": [1, 2, 3], "predicted": [1, 2]}, "mae"),
        ReceValError,
        ["different lengths", "actual has 3", "predicted has 2"],
    ),
    (
        lambda: evaluate_ratings({"actual": [1], "predicted": [1]}, "mae[per_user=true]"),
        InputError,
        ["no user column", "user_col=", "mae[per_user=true]"],
    ),
    (
        lambda: evaluate_ratings({"actual": [1], "guess": [1]}, "mae"),
        InputError,
        ["no predicted column (looked for predicted, prediction", "predicted_col="],
    ),
    (
        lambda: evaluate_ratings({"actual": [1], "pred": [1]}, "mae", predicted_col="predicted"),
        InputError,
        ["no predicted column 'predicted'", "did you mean 'pred'"],
    ),
    (lambda: evaluate_ratings([1, 2], "mae"), ReceValError, ["must be a pandas"]),
    (
        lambda: evaluate_ratings({"actual": 1, "predicted": 2}, "mae"),
        ReceValError,
        ["mapping", "sequences"],
    ),
    (
        lambda: score_ratings("mae", [1, 2, 3], [1, 2]),
        ReceValError,
        ["different lengths", "actual has 3", "predicted has 2"],
    ),
    (lambda: score_ratings("mae", [], []), ReceValError, ["no rating pairs", "empty"]),
    (
        lambda: score_ratings("rmse", [1, float("nan")], [1, 2]),
        InputError,
        ["actual", "row 1", "missing"],
    ),
    (lambda: score_ratings("rmse[per_user=true]", [1, 2], [1, 2]), ReceValError, ["needs users="]),
    (
        lambda: score_ratings("rmse[per_user=true]", [1, 2], [1, 2], users=[1]),
        ReceValError,
        ["users has 1", "different lengths"],
    ),
    (
        lambda: parse_rating_metric("rmsee"),
        MetricError,
        ["unknown rating metric 'rmsee'", "did you mean 'rmse'"],
    ),
    (lambda: parse_rating_metric("ndcg@10"), MetricError, ["ranking metric", "evaluate_explicit"]),
    (lambda: parse_rating_metric("rmse@10"), MetricError, ["no cut-off", "rmse"]),
    (
        lambda: parse_rating_metric("rmse[per_user=maybe]"),
        MetricError,
        ["bad value 'maybe'", "true or false"],
    ),
    (
        lambda: parse_rating_metric("rmse[peruser=true]"),
        MetricError,
        ["unknown parameter 'peruser'", "per_user"],
    ),
    (lambda: parse_rating_metric("rmse[["), MetricError, ["cannot read metric"]),
    (lambda: parse_rating_metrics([]), MetricError, ["no metric"]),
]


@pytest.mark.parametrize("call, exc, words", ERRORS, ids=range(len(ERRORS)))
def test_errors(call, exc, words: list[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_error_attributes_locate_the_row() -> None:
    with pytest.raises(InputError) as info:
        evaluate_ratings(_with(actual=[4.0, np.nan]), "mae")
    err = info.value
    assert (err.source, err.row, err.user, err.item, err.column) == ("ratings", 1, 1, 2, "actual")


@pytest.mark.parametrize("limit, batch", [(600, 2_000_000), (3, 7), (0, 10)])
def test_kendall_per_user_both_paths(
    monkeypatch: pytest.MonkeyPatch, limit: int, batch: int
) -> None:
    # vectorized pair counting (small users, in batches) and the SciPy loop (large
    # users) give the same tau-b
    monkeypatch.setattr(K, "KENDALL_PAIRWISE_MAX", limit)
    monkeypatch.setattr(K, "_PAIRS_PER_BATCH", batch)
    r = random_ratings(7)
    a, p, u = (r[c].to_numpy() for c in ("actual", "predicted", "user"))
    expected = ref_by_user("kendall", a, p, u)
    got = K.kendall_by_user(a, p, np.unique(u, return_inverse=True)[1])
    np.testing.assert_allclose(got, [expected[k] for k in sorted(expected)], rtol=1e-9)


# --------------------------------------------------------------------------- known values table

KNOWN = Path(__file__).parent / "data" / "known_values_ratings.csv"
KNOWN_CASES = {
    "spec": pd.DataFrame(
        {"user": [1] * 5, "item": range(5), "actual": ACTUAL, "predicted": PREDICTED}
    ),
    "two_users": pd.DataFrame(
        {
            "user": ["u1", "u1", "u2", "u2"],
            "item": [1, 2, 1, 2],
            "actual": [4.0, 2.0, 5.0, 1.0],
            "predicted": [3.5, 2.5, 4.0, 2.0],
        }
    ),
}


def _known_rows() -> list[dict[str, str]]:
    with KNOWN.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("row", _known_rows(), ids=lambda r: f"{r['case']}-{r['metric']}")
def test_known_values_table(row: dict[str, str]) -> None:
    res = receval.evaluate_ratings(KNOWN_CASES[row["case"]], row["metric"])
    name = str(receval.parse_metric(row["metric"]))
    got = res.per_user.loc[row["user"], name] if row["user"] else res.summary[name]
    assert got == pytest.approx(float(row["expected"]), abs=1e-12), row["why"]
