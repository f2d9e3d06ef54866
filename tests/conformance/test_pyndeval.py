"""receval.intent_aware against TREC's ndeval (4.5, through pyndeval 0.0.8 under
the core conformance interpreter; tests/conformance/setup_venvs.sh): per query,
to 1e-12, α-nDCG@k, α-DCG@k, ERR-IA@k and nERR-IA@k at k = 2, 5, 10, 20 with
α = 0, 0.3, 0.5, 0.9 and 1 on random workloads (1 to 5 subtopics, judgments 0
and 1, documents judged for no subtopic, queries on one side only, distinct
scores: ndeval breaks equal scores its own way).

A missing interpreter or pyndeval skips, unless ``RECEVAL_CONFORMANCE_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.analysis.intent_aware import intent_aware

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"
MEASURES = [
    f"{m}@{k}" for m in ("alpha-nDCG", "alpha-DCG", "ERR-IA", "nERR-IA") for k in (2, 5, 10, 20)
]


def _ndeval(workload: dict, tmp: Path) -> dict:
    python = VENVS / "core" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"no interpreter at {python} (run tests/conformance/setup_venvs.sh)")
        pytest.skip(f"no interpreter at {python}")
    (tmp / "in.json").write_text(json.dumps(workload))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), str(HERE / "pyndeval_check.py"), str(tmp / "in.json"), str(tmp / "out.json")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if "No module named 'pyndeval'" in proc.stderr and not REQUIRED:
        pytest.skip("pyndeval is not installed in the core venv (pip install pyndeval==0.0.8)")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads((tmp / "out.json").read_text())


@pytest.mark.parametrize("seed", range(5))
def test_intent_aware_matches_ndeval(seed: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(seed)
    alpha = [0.5, 0.3, 0.9, 0.0, 1.0][seed]
    qrels, run = [], []
    for q in range(12):
        n_docs = int(rng.integers(1, 30))
        for s in range(int(rng.integers(1, 6))):
            for d in range(n_docs):
                if rng.random() < 0.5:
                    qrels.append([q, s, f"d{d}", int(rng.random() < 0.4)])
    for q in range(14):
        if q == 3:
            continue  # a query of the qrels without a list
        n = int(rng.integers(1, 30))
        docs = rng.choice(40, size=n, replace=False)
        run += [[q, f"d{d}", float(x)] for d, x in zip(docs, rng.permutation(n), strict=True)]
    theirs = _ndeval({"qrels": qrels, "run": run, "alpha": alpha, "measures": MEASURES}, tmp_path)
    ours = intent_aware(
        pd.DataFrame(run, columns=["user", "item", "score"]),
        pd.DataFrame(qrels, columns=["query", "subtopic", "doc", "judgment"]),
        MEASURES,
        alpha=alpha,
    )
    assert sorted(int(q) for q in theirs) == sorted(ours.per_query.index)
    for q, values in theirs.items():
        for m in MEASURES:
            mine = ours.per_query.loc[int(q), m.lower().replace("-", "_")]
            assert mine == pytest.approx(values[m], abs=1e-12), (q, m)
