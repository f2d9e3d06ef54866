"""Resampling seeded per user (receval.analysis.resampling, issue #18 point 6).

The Poisson bootstrap and the sign flips are drawn from a hash of (seed,
user, resample), and their sums are exact, so the numbers cannot depend on how
users are cut into partitions or ordered: here the users are cut into 1, 7
and 64 parts in a shuffled order, as a Spark engine would, and every number
must be bit-identical; the draws have the moments of Poisson(1) and fair
coins; the interval and the p-value agree with a slow literal reference
written from the definitions (Fractions, one user at a time).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis import resampling as rs
from receval.analysis.stats import Moments, paired_t_test
from receval.errors import OptionError


def _values(n: int, seed: int, systems: int = 3) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    users = rng.permutation(np.arange(10 * n))[:n]
    values = {}
    for j in range(2):
        base = rng.random(n)
        for i in range(systems):
            x = np.clip(base + rng.normal(0.05 * i, 0.2, n), 0, 1)
            x[rng.random(n) < 0.05] = np.nan  # users without a value in this run
            values[f"m{j}s{i}"] = x
    return users, values


def _layout(test: str = "randomization", ci: str = "bca", b: int = 499) -> rs.Layout:
    return rs.Layout(("m", "n"), ("a", "b", "c"), ((0, 1), (0, 2), (1, 2)), b, 7, test != "t", ci)


def _run(layout: rs.Layout, users: np.ndarray, values: dict[str, np.ndarray], parts: int) -> dict:
    cut = pd.util.hash_array(users) % np.uint64(parts)
    order = np.random.default_rng(parts).permutation(parts)
    pieces = [np.flatnonzero(cut == p) for p in order]
    first = rs.first_pass(layout, {k: v[:0] for k, v in values.items()})
    for rows in pieces:
        first = first + rs.first_pass(layout, {k: v[rows] for k, v in values.items()})
    totals = rs.Totals.of(first)
    second = rs.second_pass(layout, totals, users[:0], {k: v[:0] for k, v in values.items()})
    for rows in pieces:
        part = rs.second_pass(layout, totals, users[rows], {k: v[rows] for k, v in values.items()})
        second = second + part
    return rs.finish(layout, first, second, 0.05, "randomization" if layout.flips else "t")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("ci", ["bca", "percentile"])
@pytest.mark.parametrize("test", ["t", "randomization"])
def test_no_cut_of_the_users_changes_a_bit(test: str, ci: str) -> None:
    users, values = _values(3000, 0)
    layout = _layout(test, ci)
    whole = _run(layout, users, values, 1)
    for parts in (7, 64):
        cut = _run(layout, users, values, parts)
        assert cut.keys() == whole.keys()
        for unit, numbers in whole.items():
            for name, v in numbers.items():
                assert _same(cut[unit][name], v), (parts, unit, name, cut[unit][name], v)


def test_draws_are_poisson_and_fair_coins_per_user() -> None:
    keys = rs.user_keys(np.arange(50_000))
    w = rs.poisson_weights(keys, 64, seed=3)
    assert abs(w.mean() - 1) < 0.01 and abs(w.var() - 1) < 0.02
    assert abs((w == 0).mean() - math.exp(-1)) < 0.005
    f = rs.sign_flips(keys, 128, seed=3)
    assert abs(f.mean() - 0.5) < 0.005
    # a user's draws do not depend on the other users in its block
    alone = rs.poisson_weights(keys[1234:1235], 64, seed=3)
    assert (alone[:, 0] == w[:, 1234]).all()
    assert (rs.sign_flips(keys[7:8], 128, seed=3)[:, 0] == f[:, 7]).all()
    # text ids and ints of any width hash as themselves
    assert (rs.user_keys(np.array([5], dtype=np.int32)) == rs.user_keys([5])).all()
    assert (rs.user_keys(np.array(["u1"])) == rs.user_keys(["u1"])).all()
    # another seed, other draws
    assert not (rs.poisson_weights(keys[:100], 8, seed=4) == w[:8, :100]).all()


def _literal(users: np.ndarray, x: np.ndarray, d: np.ndarray, b: int, seed: int) -> tuple:
    """The percentile interval of the mean of x and the flip p-value of d, one
    user at a time with Fractions (x and d already in fixed point)."""
    means, count = [], 0
    keys = rs.user_keys(users)
    w = [rs.poisson_weights(keys[u : u + 1], b, seed)[:, 0] for u in range(len(users))]
    f = [rs.sign_flips(keys[u : u + 1], b, seed)[:, 0] for u in range(len(users))]
    total = sum(Fraction(v) for v in d)
    for r in range(b):
        s = sum(Fraction(int(w[u][r])) * Fraction(x[u]) for u in range(len(users)))
        n = sum(int(w[u][r]) for u in range(len(users)))
        if n:
            means.append(float(s / n))
        flipped = sum(-Fraction(d[u]) if f[u][r] else Fraction(d[u]) for u in range(len(users)))
        count += abs(flipped) >= abs(total)
    lo, hi = np.quantile(np.array(means), [0.025, 0.975])
    return float(lo), float(hi), (1 + count) / (1 + b)


def test_agrees_with_a_literal_reference() -> None:
    rng = np.random.default_rng(5)
    n, b = 40, 199
    users = np.arange(100, 100 + n)
    # values on the fixed-point grid already (multiples of 2**-37 below 1)
    a = np.floor(rng.random(n) * 2**20) / 2**20
    c = np.floor(rng.random(n) * 2**20) / 2**20
    layout = rs.Layout(("m",), ("a", "c"), ((0, 1),), b, 11, True, "percentile")
    values = {"m0s0": a, "m0s1": c}
    got = _run(layout, users, values, 3)
    lo, hi, p = _literal(users, a, a - c, b, 11)
    assert got[("m", ("a",))]["ci_low"] == pytest.approx(lo, abs=1e-15)
    assert got[("m", ("a",))]["ci_high"] == pytest.approx(hi, abs=1e-15)
    assert got[("m", ("a", "c"))]["p_value"] == p
    assert got[("m", ("a",))]["mean"] == float(sum(Fraction(v) for v in a) / n)
    assert lo < a.mean() < hi


def test_moments_are_exact_and_give_the_t_test() -> None:
    rng = np.random.default_rng(2)
    d = rng.normal(0.01, 0.1, 1001)
    m = Moments.of(d)
    exact_mean = sum(Fraction(v) for v in d) / len(d)
    exact_var = sum((Fraction(v) - exact_mean) ** 2 for v in d) / (len(d) - 1)
    assert m.mean() == float(exact_mean)
    assert m.variance() == float(exact_var)
    parts = Moments.of(d[:300]) + Moments.of(d[300:]) + Moments.of(d[:0])
    assert parts == m
    from scipy import stats as sps

    ref = sps.ttest_1samp(d, 0.0)
    assert paired_t_test(d).statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert paired_t_test(d).pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def _runs() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    from tests.test_blocks import workload

    recs, truth, _ = workload(1)
    rng = np.random.default_rng(0)
    runs = {
        "a": recs,
        "b": recs.assign(score=recs["score"] + rng.random(len(recs))),
        "c": recs.assign(score=rng.random(len(recs))),
    }
    return runs, truth


def test_compare_with_poisson_resampling_in_process() -> None:
    runs, truth = _runs()
    metrics = ["ndcg@10", "recall@5", "coverage@10"]
    kw = {"catalog": list(range(200))}
    poisson = receval.compare(runs, truth, metrics, resampling="poisson", n_resamples=999, **kw)
    index = receval.compare(runs, truth, metrics, n_resamples=999, **kw)
    assert poisson.settings["resampling"] == "poisson"
    assert "Poisson bootstrap" in poisson.interval_note()
    # same means, tests and effect sizes; intervals of the same size
    for col in ("mean", "users"):
        pd.testing.assert_series_equal(poisson.table[col], index.table[col])
    for col in ("diff", "statistic", "p_value", "effect_size"):
        pd.testing.assert_series_equal(poisson.pairs[col], index.pairs[col])
    width = poisson.table["ci_high"] - poisson.table["ci_low"]
    other = index.table["ci_high"] - index.table["ci_low"]
    ratio = (width / other).dropna()
    assert ((ratio > 0.8) & (ratio < 1.25)).all(), ratio
    pd.testing.assert_frame_equal(poisson.missing, index.missing)
    # the means are the evaluations' summaries (exact sums, one rounding)
    for s in runs:
        assert poisson.table.loc[("ndcg@10", s), "mean"] == poisson.results[s]["ndcg@10"]


def test_poisson_refusals() -> None:
    runs, truth = _runs()
    with pytest.raises(OptionError, match="Wilcoxon"):
        receval.compare(runs, truth, "ndcg@10", resampling="poisson", test="wilcoxon")
    with pytest.raises(OptionError, match="resampling"):
        receval.compare(runs, truth, "ndcg@10", resampling="bayesian")
