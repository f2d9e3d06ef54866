"""Each convention against the real tool, on the same random workloads.

Every tool runs in its own interpreter (its pins clash with each other's):
``tests/conformance/setup_venvs.sh DIR`` builds them, and this test finds them
under ``$RECEVAL_CONFORMANCE_DIR`` (default ``.conformance`` at the repo root).
A tool whose interpreter is missing is skipped, unless
``RECEVAL_CONFORMANCE_REQUIRED=1`` (``.ci/run`` sets it), then it fails.

Workloads: graded truth (0 = judged non-relevant), users only in the truth or
only in the recommendations, truth users without a relevant item, short lists
and score ties. Ties are left out for the two tools whose order of equal
scores is unspecified (torchmetrics, RecBole: torch.topk), and lists stay at
most 15 long for ranx (its Numba quicksort keeps the input order only that far).
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

# other tools start in their own venvs (Spark, RecBole, torch): more than the default 300 s
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(1200)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"

#: tool -> its virtual environment's directory name
VENV = {
    "trec_eval": "core",
    "ranx": "core",
    "torchmetrics": "core",
    "rectools": "rectools",
    "replay": "replay",
    "mllib": "spark",
    "recbole": "recbole",
    "recommenders": "recommenders",
    "lenskit": "lenskit",
}
NO_TIES = {"torchmetrics", "recbole"}
TOL = {"torchmetrics": 1e-6}
SEEDS = (0, 1, 2)
KS = [1, 3, 5, 10]


def workload(seed: int, ties: bool) -> dict[str, Any]:
    """Recommendations and graded truth as the runners' JSON (ids are digit strings)."""
    rng = np.random.default_rng(seed)
    n_items = 40
    recs: dict[str, list[list[Any]]] = {}
    truth: dict[str, dict[str, int]] = {}
    for u in range(30):
        user = str(100 + u)
        kind = rng.random()
        if kind > 0.1:  # 10%: only in the truth
            n = int(rng.integers(1, 16))
            items = rng.choice(n_items, n, replace=False)
            if ties:
                scores = rng.integers(1, 5, n).astype(float)  # many ties
            else:
                scores = rng.permutation(n) + 1.0 + rng.random()
            recs[user] = [[str(i), float(s)] for i, s in zip(items, scores, strict=True)]
        if kind < 0.92:  # 8%: only in the recommendations
            m = int(rng.integers(1, 8))
            items = rng.choice(n_items, m, replace=False)
            grades = rng.integers(0, 4, m)
            if rng.random() < 0.1:
                grades[:] = 0  # judged, nothing relevant
            truth[user] = {str(i): int(g) for i, g in zip(items, grades, strict=True)}
    return {"recs": recs, "truth": truth, "k": KS}


def tables(w: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    recs = pd.DataFrame(
        [(u, i, s) for u, r in w["recs"].items() for i, s in r], columns=["user", "item", "score"]
    )
    truth = pd.DataFrame(
        [(u, i, g) for u, t in w["truth"].items() for i, g in t.items()],
        columns=["user", "item", "relevance"],
    )
    return recs, truth


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
        [str(python), str(HERE / "runners.py"), tool, str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(dst.read_text())


@pytest.mark.parametrize("tool", list(VENV))
def test_convention_reproduces_the_tool(tool: str, tmp_path: Path) -> None:
    conv = receval.evaluation.conventions.get(tool)
    checked = 0
    for seed in SEEDS:
        w = workload(seed, ties=tool not in NO_TIES)
        theirs = run_tool(tool, w, tmp_path)
        recs, truth = tables(w)
        names = sorted(theirs)
        res = receval.evaluate(recs, truth, names, convention=tool)
        extra = {}
        if tool == "recommenders":  # its ndcg_at_k averages the truth's users (see the docs)
            ndcg = [n for n in names if n.startswith("ndcg")]
            extra = receval.evaluate(recs, truth, ndcg, convention=tool, missing_recs="zero")
            extra = extra.summary
        for name in names:
            key = str(receval.parse_metric(name, conv.params))
            mine = extra.get(key, res.summary[key]) if name.startswith("ndcg") else res.summary[key]
            other = theirs[name]
            if math.isnan(other):
                assert math.isnan(mine), (tool, seed, name)
                continue
            assert mine == pytest.approx(other, abs=TOL.get(tool, 1e-9)), (tool, seed, name, key)
            checked += 1
    assert checked >= 3 * 4 * len(SEEDS)
