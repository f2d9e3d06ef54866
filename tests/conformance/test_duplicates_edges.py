"""Repeated rows against the real tools (issue #34, point 6).

Random lists with items repeated in them and truth with (user, item) pairs
repeated, run through each tool and through receval under the tool's
convention, whose default ``duplicates`` reads them as the tool does:
LensKit (``count``: every row counts), RePlay (``count_distinct``: MAP, NDCG,
MRR, HitRate count every row, Precision and Recall distinct items), RecTools
(``left_join``: every (interaction, recommendation) pair a hit, the joined
rows as R) and Microsoft Recommenders (``join``: every pair a hit, R the truth
rows, nDCG's pairs joined twice). The tools run in their own interpreters
(``tests/conformance/setup_venvs.sh``), found as in
``test_conventions_differential.py``.
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
from receval.evaluation.conventions import get

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(1200)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"
VENV = {
    "lenskit": "lenskit",
    "replay": "replay",
    "rectools": "rectools",
    "recommenders": "recommenders",
}
#: the counts' key of the rows each convention's reading keeps
WHY = {"lenskit": "counted", "replay": "counted", "rectools": "joined", "recommenders": "joined"}
KS = [1, 3, 5, 10]
SEEDS = (0, 1, 2)


def workload(seed: int) -> dict[str, Any]:
    """30 users; lists of 1..15 rows drawn with replacement from 12 items
    (repeats common), distinct scores; 1..6 truth rows with replacement."""
    rng = np.random.default_rng(seed)
    recs, truth = [], []
    for u in range(30):
        user = str(100 + u)
        n = int(rng.integers(1, 16))
        scores = rng.permutation(n) + rng.random()
        recs += [
            [user, str(i), float(s)] for i, s in zip(rng.integers(0, 12, n), scores, strict=True)
        ]
        truth += [[user, str(i)] for i in rng.integers(0, 12, int(rng.integers(1, 7)))]
    return {"recs": recs, "truth": truth, "k": KS}


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
        [str(python), str(HERE / "duplicates_runners.py"), tool, str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(dst.read_text())


@pytest.mark.parametrize("tool", list(VENV))
def test_the_convention_reproduces_the_tool_with_repeated_rows(tool: str, tmp_path: Path) -> None:
    conv = get(tool)
    checked = 0
    for seed in SEEDS:
        w = workload(seed)
        theirs = run_tool(tool, w, tmp_path)
        names = sorted(theirs)
        recs = pd.DataFrame(w["recs"], columns=["user", "item", "score"])
        truth = pd.DataFrame(w["truth"], columns=["user", "item"])
        res = receval.evaluate(recs, truth, names, convention=tool)  # its default reading
        assert res.parameters["duplicates"] == conv.duplicates
        assert res.counts["recommendation_rows_duplicate_" + WHY[tool]] > 0
        assert res.counts["truth_rows_duplicate_" + WHY[tool]] > 0
        for name in names:
            value = res.summary[str(receval.parse_metric(name, conv.params))]
            if math.isnan(theirs[name]):
                assert math.isnan(value), (tool, seed, name)
                continue
            assert value == pytest.approx(theirs[name], abs=1e-12), (tool, seed, name)
            checked += 1
    assert checked >= len(KS) * len(SEEDS)
