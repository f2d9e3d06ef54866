"""receval.group_mad: Elliot's MAD of a metric's group means, with its significance."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

import receval
from receval.analysis import stats
from receval.errors import OptionError, ReceValError


def _workload(seed: int, n_users: int = 60, n_groups: int = 4):
    rng = np.random.default_rng(seed)
    truth = {u: [int(i) for i in rng.choice(30, size=3, replace=False)] for u in range(n_users)}
    recs = {u: [int(i) for i in rng.permutation(30)[:8]] for u in range(n_users)}
    tier = {u: f"g{int(rng.integers(n_groups))}" for u in range(n_users)}
    return recs, truth, tier


def _reference_mad(values: list[np.ndarray]) -> float:
    """Literally Elliot's UserMADranking loop over the groups' averages."""
    avg = [sum(v) / len(v) for v in values]
    diffs = [abs(avg[i] - avg[j]) for i in range(len(avg)) for j in range(i + 1, len(avg))]
    return sum(diffs) / len(diffs)


def _reference_p(values: list[np.ndarray], n_resamples: int, seed: int) -> float:
    """The permutation p-value, one resample and one group at a time (same draws)."""
    pooled = np.concatenate(values)
    sizes = [len(v) for v in values]
    observed = _reference_mad(values)
    target = observed - 1e-9 * float(np.abs(pooled).sum()) / min(sizes)
    rng = stats.rng_from(seed)
    rows = stats._block_rows(len(pooled), n_resamples)
    count, done = 0, 0
    while done < n_resamples:
        keys = rng.random((min(rows, n_resamples - done), len(pooled)))
        for row in keys:
            order = sorted(range(len(pooled)), key=lambda i: row[i])
            dealt, at = [], 0
            for size in sizes:
                dealt.append(np.array([pooled[i] for i in order[at : at + size]]))
                at += size
            count += _reference_mad(dealt) >= target
        done += len(keys)
    return (1 + count) / (1 + n_resamples)


def test_three_groups_by_hand():
    truth = {u: [1] for u in range(9)}
    recs = {u: [1] if u < 3 else [2, 1] if u < 6 else [2, 3] for u in range(9)}
    tier = {u: ("a", "b", "c")[u // 3] for u in range(9)}
    res = receval.evaluate(recs, truth, "rr@2", user_groups=tier)
    out = receval.group_mad(res, "group", n_resamples=199)
    row = out.loc["rr@2"]
    # means 1, 0.5, 0: pairs 0.5, 1.0, 0.5
    assert row["mad"] == pytest.approx(2 / 3, abs=0)
    assert (row["groups"], row["users"], row["largest_gap"]) == (3, 9, 1.0)
    assert row["statistic"] == row["mad"]
    assert row["skipped"] == ()
    # the observed split is the most extreme one: only ~1 in 280 deals reach it
    assert row["p_value"] < 0.05


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_a_slow_literal_reference(seed):
    recs, truth, tier = _workload(seed, n_users=40)
    res = receval.evaluate(recs, truth, ["ndcg@5", "rr@8"], user_groups=tier)
    out = receval.group_mad(res, "group", n_resamples=60, seed=seed)
    for m in ["ndcg@5", "rr@8"]:
        values = [
            np.sort(res.group_results[("group", g)].per_user[m].dropna().to_numpy())
            for g in out.attrs["groups"]
        ]
        assert out.loc[m, "mad"] == pytest.approx(_reference_mad(values), rel=1e-12, abs=1e-15)
        assert out.loc[m, "p_value"] == _reference_p(values, 60, seed)
        assert out.loc[m, "users"] == sum(map(len, values))


def test_two_groups_is_the_absolute_gap():
    recs, truth, tier = _workload(3, n_groups=2)
    res = receval.evaluate(recs, truth, "ndcg@8", user_groups=tier)
    gap = receval.group_gap(res, "group", "g0", "g1")
    mad = receval.group_mad(res, "group")
    assert mad.loc["ndcg@8", "mad"] == abs(gap.loc["ndcg@8", "difference"])
    # the same null hypothesis: the two permutation estimates agree within sampling error
    perm = receval.group_gap(res, "group", "g0", "g1", test="permutation", n_resamples=4000)
    assert abs(mad.loc["ndcg@8", "p_value"] - perm.loc["ndcg@8", "p_value"]) < 0.05


def test_separated_groups_reach_the_smallest_p_and_kruskal_is_scipy_s():
    truth = {u: [1] for u in range(30)}
    recs = {u: [1] if u < 10 else [2, 1] if u < 20 else [2, 3, 4] for u in range(30)}
    tier = {u: u // 10 for u in range(30)}
    res = receval.evaluate(recs, truth, "rr@3", user_groups=tier)
    assert receval.group_mad(res, "group", n_resamples=999).loc["rr@3", "p_value"] == 1 / 1000
    kw = receval.group_mad(res, "group", test="kruskal").loc["rr@3"]
    values = [res.group_results[("group", g)].per_user["rr@3"].to_numpy() for g in (0, 1, 2)]
    want = scipy.stats.kruskal(*values)
    assert (kw["statistic"], kw["p_value"]) == (want.statistic, want.pvalue)


@pytest.mark.parametrize("fn", ["mad", "gap"])
def test_row_order_and_id_form_do_not_matter(fn):
    recs, truth, tier = _workload(4, n_groups=2)

    def run(res):
        if fn == "mad":
            return receval.group_mad(res, "group", n_resamples=50)
        return receval.group_gap(res, "group", "g0", "g1", test="permutation", n_resamples=50)

    base = run(receval.evaluate(recs, truth, "ndcg@5", user_groups=tier))
    flip = {f"u{u}": [f"i{i}" for i in v] for u, v in reversed(list(recs.items()))}
    flip_truth = {f"u{u}": [f"i{i}" for i in v] for u, v in truth.items()}
    flip_tier = {f"u{u}": g for u, g in tier.items()}
    other = run(receval.evaluate(flip, flip_truth, "ndcg@5", user_groups=flip_tier))
    assert base.equals(other)


def test_edges():
    truth = {0: [1], 1: [1], 2: [1], 3: [1]}
    recs = {0: [1], 1: [1], 2: [1], 3: [1]}
    res = receval.evaluate(recs, truth, "rr@2", user_groups={0: "a", 1: "a", 2: "b", 3: "b"})
    row = receval.group_mad(res, "group").loc["rr@2"]
    assert (row["mad"], row["p_value"]) == (0.0, 1.0)  # all values equal
    assert receval.group_mad(res, "group", test="kruskal").loc["rr@2", "p_value"] == 1.0
    one = receval.group_mad(res, "group", groups=["a"]).loc["rr@2"]
    assert math.isnan(one["mad"]) and math.isnan(one["p_value"]) and one["groups"] == 1
    # a group whose users have no defined value is left out and named
    truth2 = {0: [1], 1: [1], 2: [], 3: [], 4: [1], 5: [1]}
    recs2 = {u: [1, 2] if u % 2 else [2, 1] for u in range(6)}
    groups2 = {0: "a", 1: "a", 2: "none", 3: "none", 4: "c", 5: "c"}
    res2 = receval.evaluate(recs2, truth2, "rr@2", user_groups=groups2)
    row2 = receval.group_mad(res2, "group").loc["rr@2"]
    assert row2["skipped"] == ("none",) and row2["groups"] == 2


def test_clear_errors():
    recs, truth, tier = _workload(5)
    plain = receval.evaluate(recs, truth, "rr@5")
    with pytest.raises(ReceValError, match="user_groups="):
        receval.group_mad(plain, "group")
    res = receval.evaluate(recs, truth, "rr@5", user_groups=tier)
    with pytest.raises(ReceValError, match=r"no grouping 'tier'.*'group'"):
        receval.group_mad(res, "tier")
    with pytest.raises(ReceValError, match=r"no group 'g9' of 'group'.*'g0'"):
        receval.group_mad(res, "group", groups=["g0", "g9"])
    with pytest.raises(ReceValError, match=r"ndcg@5: not a per-user metric.*rr@5"):
        receval.group_mad(res, "group", "ndcg@5")
    with pytest.raises(OptionError, match="test"):
        receval.group_mad(res, "group", test="welch")
    with pytest.raises(OptionError, match="n_resamples"):
        receval.group_mad(res, "group", n_resamples=0)


def test_pairs_are_every_unordered_pair():
    means = np.array([[0.1, 0.4, 0.9, 0.3]])
    from receval.analysis.groups import _pair_gaps

    want = [abs(a - b) for a, b in itertools.combinations(means[0], 2)]
    assert _pair_gaps(means)[0].tolist() == want
