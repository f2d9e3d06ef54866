"""RecBole's beyond-accuracy metrics against receval's recbole convention (issue #34).

RecBole 1.2.1's ItemCoverage, AveragePopularity, ShannonEntropy, GiniIndex
and TailPercentage (``recbole/evaluator/metrics.py``) run in RecBole's own
interpreter (``tests/conformance/setup_venvs.sh``) through
``recbole_beyond_runner.py`` on random workloads built at their edges:
training rows with repeated (user, item) pairs, recommended items never seen
in training, training items never recommended, many items of equal training
count (ties broken by id), tail ratios at and above 1. Items are RecBole's
internal ids 1..n (0 is its ``[PAD]``, counted by ``data.num_items``):
receval gets ``catalog=range(n + 1)``. Every list is k long, as RecBole's are.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.evaluation.conventions import get

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(1200)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"
KS = [1, 3, 5, 10]
#: RecBole's metric → receval's metric
OURS = {
    "itemcoverage": "coverage",
    "giniindex": "gini",
    "shannonentropy": "entropy",
    "averagepopularity": "arp",
    "tailpercentage": "tail_percentage",
}


def workload(seed: int, tail_ratio: float) -> dict[str, Any]:
    """Random k-long lists over items 1..n and training rows with repeats."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 80))
    users = int(rng.integers(5, 60))
    items = [
        [int(i) for i in rng.choice(np.arange(1, n + 1), max(KS), replace=False)]
        for _ in range(users)
    ]
    # popular items trained often, the last 5 never: repeated pairs, equal counts
    rows = int(rng.integers(50, 400))
    train_items = np.minimum(rng.geometric(6 / n, rows), n - 5)
    train_users = rng.integers(0, 20, rows)
    return {
        "items": items,
        "train": [int(i) for i in train_items],
        "train_users": [int(u) for u in train_users],
        "num_items": n + 1,
        "k": KS,
        "tail_ratio": tail_ratio,
    }


def run_recbole(w: dict[str, Any], tmp: Path) -> dict[str, float]:
    python = VENVS / "recbole" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(
                f"recbole: no interpreter at {python} (run tests/conformance/setup_venvs.sh)"
            )
        pytest.skip(f"recbole: no interpreter at {python}")
    src, dst = tmp / "in.json", tmp / "out.json"
    src.write_text(json.dumps(w))
    proc = subprocess.run(
        [str(python), str(HERE / "recbole_beyond_runner.py"), str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(dst.read_text())


def receval_of(w: dict[str, Any], names: list[str]) -> dict[str, float]:
    """receval's numbers under the recbole convention, named as RecBole names them."""
    recs = {u: list(t) for u, t in enumerate(w["items"])}
    truth = {u: {t[0]: 1} for u, t in enumerate(w["items"])}
    train = pd.DataFrame({"user": w["train_users"], "item": w["train"]})
    params = get("recbole").params
    metrics = {}
    for name in names:
        metric, k = name.split("@")
        extra = f"[ratio={w['tail_ratio']}]" if metric == "tailpercentage" else ""
        metrics[name] = str(receval.parse_metric(f"{OURS[metric]}@{k}{extra}", params))
    res = receval.evaluate(
        recs,
        truth,
        list(metrics.values()),
        convention="recbole",
        train=train,
        catalog=range(w["num_items"]),
    )
    return {name: res.summary[m] for name, m in metrics.items()}


@pytest.mark.parametrize("tail_ratio", [0.1, 0.25, 0.5, 1, 3])
def test_recbole_beyond_accuracy_metrics(tail_ratio: float, tmp_path: Path) -> None:
    checked = 0
    for seed in range(4):
        w = workload(seed, tail_ratio)
        theirs = run_recbole(w, tmp_path)
        assert len(theirs) == len(OURS) * len(KS)
        mine = receval_of(w, sorted(theirs))
        for name, value in theirs.items():
            assert mine[name] == pytest.approx(value, rel=1e-12, abs=1e-12), (seed, name)
            checked += 1
    assert checked == 4 * len(OURS) * len(KS)
