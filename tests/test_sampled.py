"""Sampled evaluation: the correction tables (metrics/kernels/sampled.py) and
the negative sampler (workflow/sampling.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from receval.errors import InputError, OptionError
from receval.metrics.kernels.sampled import (
    CORRECTIONS,
    DEFAULT_GAMMA,
    METRICS,
    correction_table,
    expected_estimate,
    metric_at_rank,
    sampled_rank_pmf,
)
from receval.workflow.sampling import RECBOLE, sample_negatives

# --------------------------------------------------------------------------- the slow reference


def _m_literal(metric: str, k: int | None, r: int) -> float:
    """M(R) for one relevant item, one rank at a time."""
    if k is not None and r > k:
        return 0.0
    return {
        "hit_rate": 1.0,
        "recall": 1.0,
        "precision": 1.0 / k if k else math.nan,
        "ndcg": 1.0 / math.log2(r + 1),
        "ap": 1.0 / r,
        "rr": 1.0 / r,
    }[metric]


def _reference(
    metric: str, k: int | None, n: int, m: int, correction: str, gamma: float
) -> np.ndarray:
    """The paper's definitions summed literally over R = 1..N with scipy's binomial."""
    t = np.full(m + 2, np.nan)
    if correction == "none":
        t[1:] = [_m_literal(metric, k, r) for r in range(1, m + 2)]
        return t
    if correction == "rank":
        t[1:] = [
            _m_literal(metric, k, 1 + math.floor((n - 1) * (r - 1) / m)) for r in range(1, m + 2)
        ]
        return t
    a = np.zeros((n, m + 1))
    b = np.zeros(n)
    for big_r in range(1, n + 1):
        a[big_r - 1] = binom.pmf(np.arange(m + 1), m, (big_r - 1) / (n - 1)) / math.sqrt(n)
        b[big_r - 1] = _m_literal(metric, k, big_r) / math.sqrt(n)
    c = np.array(
        [sum(binom.pmf(x, m, (r - 1) / (n - 1)) / n for r in range(1, n + 1)) for x in range(m + 1)]
    )
    g = 0.0 if correction == "min_bias" else gamma
    lhs = (1 - g) * a.T @ a + g * np.diag(c)
    t[1:] = np.linalg.lstsq(lhs, a.T @ b, rcond=None)[0]
    return t


CASES = [
    ("recall", 3, 40, 5),
    ("hit_rate", 1, 25, 4),
    ("precision", 5, 60, 6),
    ("ndcg", 4, 50, 5),
    ("ndcg", None, 30, 3),
    ("ap", None, 45, 4),
    ("rr", 10, 200, 6),
    ("ndcg", 100, 300, 8),  # k beyond the first m + 64 ranks: the interval sums
]


@pytest.mark.parametrize("metric,k,n,m", CASES)
@pytest.mark.parametrize("correction", ["none", "rank", "bv", "min_bias"])
def test_tables_match_the_literal_definitions(metric, k, n, m, correction):
    got = correction_table(metric, k, n, m, correction)
    want = _reference(metric, k, n, m, correction, DEFAULT_GAMMA)
    assert got.shape == (m + 2,) and np.isnan(got[0])
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("metric,k", [("ndcg", None), ("ap", 500), ("recall", 700), ("rr", None)])
def test_large_sums_match_direct_summation(metric, k):
    # N = 3000 ranks, m = 150: the Gauss rules against Σ_R M(R) p(r|R) term by term
    n, m, gamma = 3000, 150, 0.05
    ranks = np.arange(1, n + 1)
    p = sampled_rank_pmf(ranks, n, m)
    a = p / math.sqrt(n)
    b = metric_at_rank(metric, k, ranks) / math.sqrt(n)
    c = p.sum(axis=0) / n
    want = np.linalg.solve((1 - gamma) * a.T @ a + gamma * np.diag(c), a.T @ b)
    got = correction_table(metric, k, n, m, "bv", gamma)[1:]
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)


def test_hand_worked_example():
    # N = 3 items, m = 1 negative, recall@1. R = 1, 2, 3 -> q = 0, 1/2, 1.
    # p(r=1|R) = 1, 1/2, 0 ; p(r=2|R) = 0, 1/2, 1. M(R) = 1, 0, 0.
    # γ = 1 (posterior mean): t[r] = Σ_R p(r|R) M(R) / Σ_R p(r|R) -> t = [1/1.5, 0].
    t = correction_table("recall", 1, 3, 1, "bv", gamma=1.0)
    np.testing.assert_allclose(t[1:], [2 / 3, 0.0], atol=1e-14)
    # rank estimate: R̂ = 1 + (3 - 1)(r - 1)/1 = 1, 3
    assert correction_table("recall", 1, 3, 1, "rank")[1:].tolist() == [1.0, 0.0]
    # minimal bias: 2 unknowns, 3 equations; normal equations by hand:
    # AᵀA = [[1.25, .25], [.25, 1.25]]/3, Aᵀb = [1, 0]/3 -> t = [5/6, -1/6]
    np.testing.assert_allclose(
        correction_table("recall", 1, 3, 1, "min_bias")[1:], [5 / 6, -1 / 6], atol=1e-12
    )


@pytest.mark.parametrize("metric", METRICS)
def test_none_is_the_metric_on_the_sampled_rank(metric):
    k = 5
    t = correction_table(metric, k, 1000, 20, "none")
    np.testing.assert_array_equal(t[1:], metric_at_rank(metric, k, np.arange(1, 22)))


@pytest.mark.parametrize("metric,k", [("recall", 3), ("ndcg", 10), ("ap", None), ("rr", 2)])
@pytest.mark.parametrize("gamma", [0.0, 0.01, 0.1, 1.0])
def test_unbiased_on_average_over_uniform_ranks(metric, k, gamma):
    # Σ_R p(R) E[t[r] | R] = Σ_R p(R) M(R) for every γ (sum of the normal equations)
    n, m = 400, 12
    ranks = np.arange(1, n + 1)
    t = correction_table(metric, k, n, m, "bv", gamma)
    lhs = expected_estimate(t, ranks, n, m).mean()
    assert lhs == pytest.approx(metric_at_rank(metric, k, ranks).mean(), rel=1e-9)


def test_min_bias_has_the_least_squared_bias_and_bv_tends_to_it():
    n, m, metric, k = 300, 8, "ndcg", 5
    ranks = np.arange(1, n + 1)
    truth = metric_at_rank(metric, k, ranks)

    def bias2(t: np.ndarray) -> float:
        return float(np.mean((expected_estimate(t, ranks, n, m) - truth) ** 2))

    best = correction_table(metric, k, n, m, "min_bias")
    losses = [bias2(correction_table(metric, k, n, m, "bv", g)) for g in (0.3, 0.1, 1e-2, 1e-4)]
    assert all(x >= bias2(best) - 1e-15 for x in losses)
    assert losses == sorted(losses, reverse=True)  # less γ, less bias
    np.testing.assert_allclose(correction_table(metric, k, n, m, "bv", 1e-9), best, rtol=1e-3)
    assert bias2(correction_table(metric, k, n, m, "none")) > 10 * bias2(best)


def test_posterior_mean_at_gamma_one():
    n, m = 200, 5
    ranks = np.arange(1, n + 1)
    p = sampled_rank_pmf(ranks, n, m)
    mr = metric_at_rank("ap", None, ranks)
    np.testing.assert_allclose(
        correction_table("ap", None, n, m, "bv", 1.0)[1:], (mr @ p) / p.sum(axis=0), rtol=1e-10
    )


@pytest.mark.parametrize("correction", CORRECTIONS)
def test_cutoff_beyond_the_catalog_cuts_nothing(correction):
    n, m = 50, 6
    ones = correction_table("recall", n, n, m, correction)
    if correction in ("bv", "min_bias"):  # M ≡ 1 is estimated exactly, with no variance
        np.testing.assert_allclose(ones[1:], 1.0, atol=1e-9)
    else:
        assert (ones[1:] == 1.0).all()
    np.testing.assert_array_equal(
        correction_table("ndcg", 10 * n, n, m, correction),
        correction_table("ndcg", None, n, m, correction),
    )
    p = correction_table("precision", 2 * n, n, m, correction)
    np.testing.assert_allclose(p[1:], ones[1:] / (2 * n), atol=1e-9)


def test_binomial_model():
    np.testing.assert_allclose(
        sampled_rank_pmf(np.array([1, 7, 10]), 10, 4),
        [binom.pmf(np.arange(5), 4, q) for q in (0.0, 6 / 9, 1.0)],
        atol=1e-15,
    )


def test_large_catalog_is_fast_and_sane():
    import time

    start = time.perf_counter()
    t = correction_table("ndcg", None, 1_000_000, 100, "bv", 0.05)
    assert time.perf_counter() - start < 3.0
    assert np.isfinite(t[1:]).all()
    r = correction_table("recall", 10, 1_000_000, 100, "rank")
    assert r[1] == 1.0 and (r[2:] == 0).all()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"metric": "map"}, "metric must be"),
        ({"k": 0}, "k must be"),
        ({"metric": "precision", "k": None}, "precision needs"),
        ({"catalog_size": 100, "negatives": 100}, "must exceed"),
        ({"negatives": 0}, "negatives must be"),
        ({"correction": "cls"}, "correction must be"),
        ({"correction": "bv", "gamma": 1.5}, "gamma must be"),
        ({"correction": "bv", "gamma": float("nan")}, "gamma must be"),
    ],
)
def test_table_errors(kwargs, match):
    args = {
        "metric": "recall",
        "k": 10,
        "catalog_size": 1000,
        "negatives": 100,
        "correction": "none",
    } | kwargs
    with pytest.raises(ValueError, match=match):
        correction_table(**args)


# --------------------------------------------------------------------------- the sampler


def _data(users: int = 200, items: int = 300, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    train = pd.DataFrame(
        {"user": rng.integers(0, users, 20 * users), "item": rng.zipf(1.5, 20 * users) % items}
    ).drop_duplicates()
    truth = pd.DataFrame({"user": np.arange(users), "item": rng.integers(0, items, users)})
    truth = truth.merge(train, how="left", indicator=True)
    truth = truth[truth["_merge"] == "left_only"].drop(columns="_merge")
    return train, truth


def _key(frame: pd.DataFrame) -> set[tuple]:
    return set(map(tuple, frame[["user", "item"]].to_numpy().tolist()))


@pytest.mark.parametrize("strategy", ["uniform", "popularity"])
def test_sampler_reproducible_under_shuffles(strategy):
    train, truth = _data()
    a = sample_negatives(truth, train, n=20, strategy=strategy, seed=3)
    b = sample_negatives(
        truth.sample(frac=1, random_state=1),
        train.sample(frac=1, random_state=2),
        n=20,
        strategy=strategy,
        seed=3,
    )
    pd.testing.assert_frame_equal(a, b)
    if strategy == "uniform":  # a user's negatives do not depend on the other users
        # (with popularity they do, through the counts, which include truth rows)
        some = truth[truth["user"] < 50]
        c = sample_negatives(
            some,
            train,
            n=20,
            strategy=strategy,
            seed=3,
            catalog=np.unique(np.r_[train["item"], truth["item"]]),
        )
        pd.testing.assert_frame_equal(c, a[a["user"] < 50].reset_index(drop=True))
    d = sample_negatives(truth, train, n=20, strategy=strategy, seed=4)
    assert not a.equals(d)


@pytest.mark.parametrize("strategy", ["uniform", "popularity"])
@pytest.mark.parametrize("per", ["item", "user"])
def test_sampler_counts_and_exclusions(strategy, per):
    train, truth = _data()
    extra = truth.assign(item=(truth["item"] + 1) % 300)  # e.g. a validation split
    truth2 = pd.concat([truth, truth.assign(item=(truth["item"] + 2) % 300)])  # two per user
    truth2 = truth2.merge(train, how="left", indicator=True)
    truth2 = truth2[truth2["_merge"] == "left_only"].drop(columns="_merge")
    c = sample_negatives(truth2, train, n=10, strategy=strategy, per=per, exclude=extra, seed=0)
    assert list(c.columns) == ["user", "item", "positive"]
    neg, pos = c[~c["positive"]], c[c["positive"]]
    assert _key(pos) == _key(truth2)
    assert not (_key(neg) & (_key(train) | _key(truth2) | _key(extra)))
    assert not neg.duplicated(["user", "item"]).any()
    npos = pos.groupby("user").size()
    want = npos * 10 if per == "item" else npos * 0 + 10
    pd.testing.assert_series_equal(neg.groupby("user").size(), want, check_names=False)
    assert set(neg["item"]) <= set(train["item"]) | set(truth2["item"]) | set(extra["item"])


def test_popularity_frequencies_follow_popularity():
    # one user, a catalog of 40 items with counts 1..40 (other users' rows), n = 1:
    # the first draw is ∝ count; over 4000 users-with-seeds the frequencies follow
    items = np.arange(40)
    counts = items + 1
    train = pd.DataFrame(
        {"user": np.repeat(-np.arange(1, 41), counts), "item": np.repeat(items, counts)}
    )
    truth = pd.DataFrame({"user": np.arange(3000), "item": 0})
    c = sample_negatives(truth, train, n=1, strategy="popularity", seed=11)
    freq = c.loc[~c["positive"], "item"].value_counts().reindex(items[1:], fill_value=0)
    # truth rows add 3000 to item 0's count, but item 0 is each user's positive
    expected = counts[1:] / counts[1:].sum() * 3000
    assert np.corrcoef(freq.to_numpy(), expected)[0, 1] > 0.95
    assert abs(freq.to_numpy()[-5:].sum() / expected[-5:].sum() - 1) < 0.15
    u = sample_negatives(truth, train, n=1, strategy="uniform", seed=11)
    uf = u.loc[~u["positive"], "item"].value_counts().reindex(items[1:], fill_value=0)
    assert uf.max() < 2 * uf.min() + 60  # flat


def test_conventions():
    train, truth = _data(users=30, items=400)
    a = sample_negatives(truth, train, convention="uni100", seed=1)
    b = sample_negatives(truth, train, n=100, strategy="uniform", per="item", seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert RECBOLE["pop100"] == {"n": 100, "strategy": "popularity", "per": "item"}
    p = sample_negatives(truth, train, convention="pop7", seed=1)
    assert (p[~p["positive"]].groupby("user").size() == 7).all()
    assert len(sample_negatives(truth, train, convention="uni100", n=5, seed=1)) == 6 * len(truth)


def test_heavy_users_take_the_exact_path():
    # a user who has seen 290 of 300 items: acceptance < 1/4, the exact path
    train = pd.DataFrame({"user": 0, "item": np.arange(290)})
    truth = pd.DataFrame({"user": [0, 1], "item": [295, 295]})
    c = sample_negatives(truth, train, n=9, catalog=range(300), seed=5)
    neg0 = c[(c["user"] == 0) & ~c["positive"]]["item"]
    assert set(neg0) <= {290, 291, 292, 293, 294, 296, 297, 298, 299} and len(neg0) == 9
    again = sample_negatives(truth, train.iloc[::-1], n=9, catalog=list(range(300))[::-1], seed=5)
    pd.testing.assert_frame_equal(c, again)


def test_string_ids_and_mappings():
    truth = {"a": ["x"], "b": ["y"]}
    train = {"a": ["y", "z"], "b": ["x"]}
    c = sample_negatives(truth, train, n=1, catalog=["x", "y", "z", "w"], seed=0)
    assert c["user"].tolist() == ["a", "a", "b", "b"]
    assert c.loc[~c["positive"], "item"].tolist()[0] == "w"


def test_too_few_candidates():
    train = pd.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3]})
    truth = pd.DataFrame({"user": [1, 2], "item": [4, 4]})
    with pytest.raises(InputError, match=r"user 1: only 1 candidate negatives.*too_few='all'"):
        sample_negatives(truth, train, n=3, catalog=[1, 2, 3, 4, 5])
    c = sample_negatives(truth, train, n=3, catalog=[1, 2, 3, 4, 5], too_few="all")
    assert c.loc[~c["positive"]].groupby("user").size().to_dict() == {1: 1, 2: 3}


@pytest.mark.parametrize(
    "kwargs,option",
    [
        ({"n": 0}, "n"),
        ({"strategy": "pop"}, "strategy"),
        ({"per": "row"}, "per"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"alpha": -1}, "alpha"),
        ({"too_few": "clip"}, "too_few"),
        ({"convention": "full"}, "convention"),
    ],
)
def test_sampler_option_errors(kwargs, option):
    truth = pd.DataFrame({"user": [1], "item": [1]})
    with pytest.raises(OptionError) as err:
        sample_negatives(truth, catalog=[1, 2, 3], **kwargs)
    assert err.value.option == option
