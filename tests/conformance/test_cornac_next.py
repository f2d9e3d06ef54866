"""receval.evaluate_next_items against Cornac 3.0.1's next-item evaluation
(``cornac.eval_methods.next_item_evaluation.ranking_eval``, under the cornac
conformance interpreter; tests/conformance/setup_venvs.sh).

On random sessions (1 to 7 items from 25, repeats allowed, users shared by
several sessions) and a fixed model without ties that ranks every item
(cornac_next_check.py), receval, given the lists the model made at each step,
reproduces to 1e-12 Cornac's NDCG@k, Recall@k, Precision@k, HitRatio@k and MRR
(receval's ``rr`` with no cut-off: Cornac ranks every known item) in each of
Cornac's four settings: ``mode="next"`` (receval's ``steps="all"``) and
``mode="last"`` (``steps="last"``), each with ``user_based=False`` (receval's
``average="steps"``) and ``user_based=True`` (``average="users"``). Cornac has
no ``target="remaining"`` and no per-session average; the definitions where
they differ are in docs/next-items.md.

A missing interpreter or cornac skips, unless ``RECEVAL_CONFORMANCE_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.evaluation.next_items import evaluate_next_items

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"
K = 5
NAMES = {"ndcg": f"ndcg@{K}", "recall": f"recall@{K}", "precision": f"precision@{K}"}
NAMES |= {"hit_rate": f"hit_rate@{K}", "rr": "rr"}


def _cornac(data: dict, tmp: Path) -> dict:
    python = VENVS / "cornac" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"no interpreter at {python} (run tests/conformance/setup_venvs.sh)")
        pytest.skip(f"no interpreter at {python}")
    (tmp / "in.json").write_text(json.dumps(data))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [
            str(python),
            str(HERE / "cornac_next_check.py"),
            str(tmp / "in.json"),
            str(tmp / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if "No module named 'cornac'" in proc.stderr and not REQUIRED:
        pytest.skip("cornac is not installed in the cornac venv")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads((tmp / "out.json").read_text())


@pytest.mark.parametrize("seed", range(3))
def test_next_items_matches_cornac(seed: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(int(rng.integers(30, 120))):
        user = f"u{int(rng.integers(0, 12))}"
        for t in range(int(rng.integers(1, 8))):
            rows.append([user, f"s{s}", f"i{int(rng.integers(0, 25))}", t])
    theirs = _cornac({"rows": rows, "items": [f"i{j}" for j in range(25)], "k": K}, tmp_path)
    sessions = pd.DataFrame(rows, columns=["user", "session", "item", "time"])
    lists = {(s, t): items for s, t, items in theirs["lists"]}
    for mode, steps in (("next", "all"), ("last", "last")):
        for user_based, average in ((False, "steps"), (True, "users")):
            ours = evaluate_next_items(
                lists, sessions, list(NAMES.values()), steps=steps, average=average
            )
            for name, value in theirs[f"{mode}:{user_based}"].items():
                got = ours[NAMES[name]]
                assert abs(got - value) <= 1e-12, (mode, user_based, name, got, value)
