"""Each convention against the real tool at the tool's edges (issue #34).

The random workloads of ``test_conventions_differential.py`` stay clear of
what a tool does unusually; these workloads go straight at it:

- LensKit: empty lists (Precision and AveragePrecision NaN, left out of the
  mean; the other metrics 0);
- RecBole: recommended items never seen in training (AveragePopularity counts
  them as 0);
- torchmetrics: items scored 0 or below (never hits in precision, recall, AP
  and RR; still hits for HitRate and nDCG).

The tools run in their own interpreters (``tests/conformance/setup_venvs.sh``),
found as in ``test_conventions_differential.py``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(1200)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"
VENV = {"lenskit": "lenskit", "recbole": "recbole", "torchmetrics": "core"}
TOL = {"torchmetrics": 1e-6}
KS = [1, 3, 5, 10]
SEEDS = (0, 1, 2)


def workload(tool: str, seed: int, ties: bool = False) -> dict[str, Any]:
    """Random lists and truth with the tool's edge in them (distinct scores;
    ``ties``: integer scores from -2 to 3, many equal)."""
    rng = np.random.default_rng(seed)
    n_items = 40
    recs: dict[str, list[list[Any]]] = {}
    truth: dict[str, dict[str, int]] = {}
    for u in range(30):
        user = str(100 + u)
        n = int(rng.integers(10 if tool == "recbole" else 1, 16))
        items = rng.choice(n_items, n, replace=False)
        scores = rng.permutation(n) + rng.random()
        if tool == "torchmetrics":  # about half the items scored <= 0, one exactly 0
            scores = scores - n / 2
            scores[int(rng.integers(n))] = 0.0
        if ties:
            scores = rng.integers(-2, 4, n).astype(float)
        recs[user] = [[str(i), float(s)] for i, s in zip(items, scores, strict=True)]
        if tool == "lenskit" and rng.random() < 0.3:
            recs[user] = []  # an empty list, not a missing one
        m = int(rng.integers(1, 8))
        truth[user] = {str(i): 1 for i in rng.choice(n_items, m, replace=False)}
    train = [
        [f"t{u}", str(i)]
        for u in range(25)
        for i in rng.choice(n_items - 10, int(rng.integers(1, 12)), replace=False)
    ]  # items 30..39 never seen in training; no repeated (user, item) pair
    return {"recs": recs, "truth": truth, "train": train, "k": KS}


def run_tool(tool: str, w: dict[str, Any], tmp: Path) -> dict[str, float]:
    python = VENVS / VENV[tool] / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(
                f"{tool}: no interpreter at {python} (run tests/conformance/setup_venvs.sh)"
            )
        pytest.skip(f"{tool}: no interpreter at {python}")
    src, dst = tmp / "in.json", tmp / "out.json"
    src.write_text(json.dumps(w))
    proc = subprocess.run(
        [str(python), str(HERE / "edge_runners.py"), tool, str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(dst.read_text())


def receval_of(tool: str, w: dict[str, Any], names: list[str]) -> dict[str, float]:
    """receval's numbers under the tool's convention: mapping input for LensKit
    (an empty list is a list), tables otherwise."""
    if tool == "lenskit":
        recs: Any = {
            u: [i for i, _ in sorted(r, key=lambda p: -p[1])] for u, r in w["recs"].items()
        }
        truth: Any = w["truth"]
    else:
        recs = pd.DataFrame(
            [(u, i, s) for u, r in w["recs"].items() for i, s in r],
            columns=["user", "item", "score"],
        )
        truth = pd.DataFrame(
            [(u, i, g) for u, t in w["truth"].items() for i, g in t.items()],
            columns=["user", "item", "relevance"],
        )
    train = pd.DataFrame(w["train"], columns=["user", "item"]) if tool == "recbole" else None
    return receval.evaluate(recs, truth, names, convention=tool, train=train).summary


@pytest.mark.parametrize("tool", list(VENV))
def test_convention_reproduces_the_tool_at_its_edges(tool: str, tmp_path: Path) -> None:
    conv = receval.evaluation.conventions.get(tool)
    checked = 0
    for seed in SEEDS:
        w = workload(tool, seed)
        theirs = run_tool(tool, w, tmp_path)
        names = sorted(theirs)
        mine = receval_of(tool, w, names)
        for name in names:
            value = mine[str(receval.parse_metric(name, conv.params))]
            if math.isnan(theirs[name]):
                assert math.isnan(value), (tool, seed, name)
                continue
            assert value == pytest.approx(theirs[name], abs=TOL.get(tool, 1e-9)), (tool, seed, name)
            checked += 1
    assert checked >= len(KS) * len(SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_torchmetrics_ndcg_averages_tied_gains(seed: int, tmp_path: Path) -> None:
    """Equal scores (zero and negative ones among them): torchmetrics' nDCG
    gives each the mean gain of its group (ndcg[tied=average]). The other
    metrics order ties by torch.topk, which promises no order: not compared."""
    conv = receval.evaluation.conventions.get("torchmetrics")
    w = workload("torchmetrics", seed, ties=True)
    theirs = {
        n: v for n, v in run_tool("torchmetrics", w, tmp_path).items() if n.startswith("ndcg")
    }
    mine = receval_of("torchmetrics", w, sorted(theirs))
    for name, value in theirs.items():
        got = mine[str(receval.parse_metric(name, conv.params))]
        assert got == pytest.approx(value, abs=TOL["torchmetrics"]), (seed, name)
