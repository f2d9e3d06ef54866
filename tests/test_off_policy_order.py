"""receval.off_policy's order of the rows: by context key, then reward, weight
and q̂ (``_grouped_order``), so that every sum follows one order whatever the
order of the log's rows. The compiled pass (``receval._native.group_order``)
gives np.lexsort's order exactly; ties (equal rewards with other weights,
equal weights with other q̂, whole rows repeated) in one context change no
bit, in memory, in batches and in the bootstrap's intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.analysis import off_policy as op
from tests.required import REQUIRE_NATIVE, need

ALL = list(op.ESTIMATORS)
KW = {"switch_tau": 1.5, "n_resamples": 120, "seed": 3}


def _compiled() -> None:
    need(
        "receval._native.group_order",
        REQUIRE_NATIVE,
        hasattr(op.NATIVE, "group_order"),
        "not built (gcc and Python's headers build it at install)",
    )


def _odd_values(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values with many ties, both zeros, infinities and NaN."""
    pool = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-300, -2.5])
    return np.where(rng.random(n) < 0.5, rng.choice(pool, n), rng.normal(size=n).round(1))


@pytest.mark.parametrize("keys", [0, 1, 2, 3])
@pytest.mark.parametrize("groups", [1, 7, 500])
def test_the_compiled_order_is_lexsorts(keys: int, groups: int) -> None:
    """The same permutation as np.lexsort (both stable), ties and NaN included."""
    _compiled()
    rng = np.random.default_rng(keys * 1000 + groups)
    for n in (0, 1, 2, 30, 3000):
        g = rng.integers(0, groups, n).astype(np.int64)
        values = [_odd_values(rng, n) for _ in range(keys)]
        want = np.lexsort((*values[::-1], g))
        got = op._grouped_order(g, groups + 2, *values)  # groups without rows too
        np.testing.assert_array_equal(got, want)


def test_a_group_outside_the_range_is_refused() -> None:
    _compiled()
    with pytest.raises(AssertionError, match="group_order: status 4"):
        op._grouped_order(np.array([0, 3]), 3, np.array([1.0, 2.0]))


def _tied_log(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Few contexts and actions, 0/1 rewards, propensities from a short list:
    in one context, equal rewards with other weights, equal weights with
    other q̂, and rows repeated whole."""
    rng = np.random.default_rng(seed)
    n, m, k = 300, 6, 4
    logs = pd.DataFrame(
        {
            "context": rng.integers(0, m, n),
            "action": rng.integers(0, k, n),
            "reward": rng.integers(0, 2, n).astype(float),
            "propensity": rng.choice([0.25, 0.5, 0.125], n),
        }
    )
    grid = {"context": np.repeat(np.arange(m), k), "action": np.tile(np.arange(k), m)}
    probability = np.tile([0.5, 0.25, 0.125, 0.125], m)  # actions 2 and 3: equal weights
    policy = pd.DataFrame({**grid, "probability": probability})
    model = pd.DataFrame({**grid, "reward": rng.choice([0.2, 0.7], m * k)})
    return logs, policy, model


def _numbers(res: op.OffPolicyResult) -> list[tuple[float, ...]]:
    return [(e.estimate, e.low, e.high, e.ess) for e in res.estimates]


@pytest.mark.parametrize("compiled", [True, False])
def test_tied_rows_shuffled_give_the_same_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """Rows shuffled give every estimate, interval and ess bit for bit: in
    memory (table and built-in reward models), in batches (rows shuffled
    within each batch; one batch of the whole log equals the log in memory),
    with the compiled order and with np.lexsort's."""
    if compiled:
        _compiled()
    else:
        monkeypatch.setattr(op, "NATIVE", None)
    logs, policy, model = _tied_log(11)
    want = _numbers(op.off_policy(logs, policy, ALL, reward_model=model, **KW))
    built_in = _numbers(op.off_policy(logs, policy, ALL, **KW))
    for seed in (1, 2):
        shuffled = logs.sample(frac=1, random_state=seed)
        assert _numbers(op.off_policy(shuffled, policy, ALL, reward_model=model, **KW)) == want
        assert _numbers(op.off_policy(shuffled, policy, ALL, **KW)) == built_in
    path = tmp_path / "logs.parquet"
    logs.to_parquet(path)
    whole = op.off_policy(path, policy, ALL, reward_model=model, batch_rows=len(logs), **KW)
    assert _numbers(whole) == want
    parts = _numbers(op.off_policy(path, policy, ALL, reward_model=model, batch_rows=70, **KW))
    for seed in (3, 4):
        rng = np.random.default_rng(seed)
        within = np.concatenate([lo + rng.permutation(70) for lo in range(0, 280, 70)])
        within = np.concatenate([within, 280 + rng.permutation(len(logs) - 280)])
        logs.iloc[within].to_parquet(path)
        got = op.off_policy(path, policy, ALL, reward_model=model, batch_rows=70, **KW)
        assert _numbers(got) == parts
