"""Sampled evaluation through evaluate(): catalog_size= and correction=.

The estimators' tables are tested in tests/test_sampled.py; here, that
evaluate() reads each relevant item's sampled rank right (1 + the non-relevant
items above it), takes m from each list, averages over a user's relevant
items, leaves undefined what cannot be estimated (counted), refuses what
cannot be done before any work, and gives the same numbers through its doors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import MetricError, ReceValError
from receval.metrics.kernels.sampled import correction_table

pytestmark = pytest.mark.timeout(120)

N = 5_000  # the full catalog


def _sampled(users: int, negatives: int, seed: int, held: int = 1) -> tuple[dict, dict]:
    """Lists ranking `held` held-out items among `negatives` sampled ones."""
    rng = np.random.default_rng(seed)
    recs, truth = {}, {}
    for u in range(users):
        items = [int(i) for i in rng.choice(N, negatives + held, replace=False)]
        truth[u] = items[:held]
        recs[u] = [items[j] for j in rng.permutation(len(items))]
    return recs, truth


@pytest.mark.parametrize("correction", ["none", "rank", "bv", "min_bias"])
@pytest.mark.parametrize(
    ("metric", "family", "k"),
    [
        ("recall@10", "recall", 10),
        ("hit_rate@5", "hit_rate", 5),
        ("precision@10", "precision", 10),
        ("ndcg@10", "ndcg", 10),
        ("ap@20", "ap", 20),
        ("rr", "rr", None),
    ],
)
def test_one_held_out_item_is_the_table_at_its_sampled_rank(
    metric: str, family: str, k: int | None, correction: str
) -> None:
    recs, truth = _sampled(60, 99, 1)
    text = metric if correction == "none" else f"{metric}[correction={correction}]"
    res = receval.evaluate(recs, truth, text, catalog_size=N)
    table = correction_table(family, k, N, 99, correction)
    for u, items in recs.items():
        r = items.index(truth[u][0]) + 1
        want = table[r]
        if correction == "none":  # the plain metric of the sampled list
            plain = receval.evaluate({u: items}, {u: truth[u]}, metric).summary[metric]
            assert want == pytest.approx(plain, abs=1e-15)
        assert res.per_user.loc[u].iloc[0] == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_several_held_out_items_each_against_the_negatives_only() -> None:
    # items 1 and 2 relevant; 1 first, 2 after one negative and item 1
    recs = {"u": [1, 7, 2, 8, 9]}
    truth = {"u": [1, 2]}
    res = receval.evaluate(recs, truth, "recall@10[correction=rank]", catalog_size=1000)
    t = correction_table("recall", 10, 1000, 3, "rank")  # m = 3 negatives
    assert res.summary["recall@10[correction=rank]"] == pytest.approx((t[1] + t[2]) / 2)


def test_what_cannot_be_estimated_is_undefined_and_counted() -> None:
    recs = {"a": [1, 5, 6], "b": [7, 8, 9], "c": [3]}
    truth = {"a": [1], "b": [2], "c": [3]}  # b's item not ranked; c: no negative
    res = receval.evaluate(recs, truth, "recall@2[correction=bv]", catalog_size=100)
    per_user = res.per_user["recall@2[correction=bv]"]
    assert not math.isnan(per_user["a"])
    assert math.isnan(per_user["b"]) and math.isnan(per_user["c"])
    assert res.counts["undefined"]["recall@2[correction=bv]"] == 2


def test_refused_before_any_work() -> None:
    recs, truth = _sampled(3, 5, 0)
    with pytest.raises(ReceValError, match="catalog_size="):
        receval.evaluate(recs, truth, "recall@10[correction=bv]")
    with pytest.raises(MetricError, match="not larger"):
        receval.evaluate(recs, truth, "recall@10[correction=bv]", catalog_size=5)
    with pytest.raises(MetricError, match="gamma= applies only with correction=bv"):
        receval.parse_metric("ndcg@10[gamma=0.5]")
    with pytest.raises(MetricError, match="leave it out"):
        receval.parse_metric("precision@10[correction=rank,denominator=retrieved]")


def test_gamma_moves_bv_between_min_bias_and_the_posterior_mean() -> None:
    recs, truth = _sampled(40, 49, 3)
    names = [str(receval.parse_metric(f"recall@10[correction=bv,gamma={g}]")) for g in (0, 0.1, 1)]
    res = receval.evaluate(recs, truth, [*names, "recall@10[correction=min_bias]"], catalog_size=N)
    assert res.summary[names[0]] == pytest.approx(
        res.summary["recall@10[correction=min_bias]"], rel=1e-9, abs=1e-12
    )
    assert res.summary[names[1]] != res.summary[names[2]]


def test_the_same_numbers_through_the_command_line(tmp_path: Path, capsys) -> None:
    recs, truth = _sampled(30, 20, 5, held=2)
    rows = [(u, i, len(items) - j) for u, items in recs.items() for j, i in enumerate(items)]
    rp, tp = tmp_path / "recs.csv", tmp_path / "truth.csv"
    pd.DataFrame(rows, columns=["user", "item", "score"]).to_csv(rp, index=False)
    pd.DataFrame(
        [(u, i) for u, items in truth.items() for i in items], columns=["user", "item"]
    ).to_csv(tp, index=False)
    metrics = ["recall@10[correction=bv]", "ndcg@10[correction=rank]", "recall@10"]
    api = receval.evaluate(recs, truth, metrics, catalog_size=N)
    args = ["evaluate", str(rp), str(tp), "--catalog-size", str(N), "--json", "-q"]
    for m in metrics:
        args += ["-m", m]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["catalog_size"] == N
    for m in metrics:
        assert out["metrics"][m] == api.summary[m]
    parquet = receval.evaluate(rp, tp, metrics, catalog_size=N)
    assert parquet.summary == api.summary


def test_blocks_do_not_change_the_estimates() -> None:
    from receval.engines import numpy_engine

    recs, truth = _sampled(300, 30, 9, held=2)
    metrics = ["recall@10[correction=bv]", "ap@10[correction=rank]"]
    whole = receval.evaluate(recs, truth, metrics, catalog_size=N)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(numpy_engine, "BLOCK_CELLS", 64)
        m.setattr(numpy_engine, "SPARSE_BLOCK_USERS", 7)
        cut = receval.evaluate(recs, truth, metrics, catalog_size=N)
    for name in metrics:
        assert np.array_equal(whole.per_user[name], cut.per_user[name])
        assert whole.summary[name] == cut.summary[name]


def test_an_evaluation_without_corrections_does_not_import_scipy() -> None:
    """The estimators' SciPy loads when a table is made (it costs ~0.2 s at start)."""
    import subprocess
    import sys

    code = (
        "import sys, receval; receval.evaluate({1: [1, 2]}, {1: [1]}, ['ndcg@10', 'bpref']);"
        "print('scipy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
