"""Grades at the edges, against the real tools (issue #34 point 6).

Random workloads whose truth holds negative and zero grades, run by each
tool as its users would run it (``tests/conformance/grades_runners.py``):
every convention must give the tool's numbers with its own default of
``negative_grades`` (relevant: the tools that read no grades; nonrelevant:
ranx; unjudged: trec_eval). And LensKit's ``NDCG(k, gain="rating")`` (the
grades as gains, every test row relevant, negative and zero grades included)
must be ``ndcg@k[gain=linear]`` under ``convention="lenskit"``.
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

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(1800)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"
VENV = {
    "lenskit_graded": "lenskit",
    "lenskit": "lenskit",
    "rectools": "rectools",
    "replay": "replay",
    "recbole": "recbole",
    "recommenders": "recommenders",
    "ranx": "core",
    "trec_eval": "core",
    "mllib": "spark",
}
KS = [1, 3, 5, 10]
SEEDS = (0, 1)


def workload(tool: str, seed: int) -> dict[str, Any]:
    """Random lists (distinct scores) and a truth graded -2..4 whose two
    largest grades are positive, but for LensKit's graded nDCG, whose truth
    may hold only grades of 0 and below (an ideal of exactly 0, which LensKit
    divides by: ``zero_ideal=divide``). Recommenders: no grade 0."""
    rng = np.random.default_rng(seed)
    grades = [-2, -1, 1, 2, 3, 4] if tool == "recommenders" else [-2, -1, 0, 1, 2, 3, 4]
    recs: dict[str, list[list[Any]]] = {}
    truth: dict[str, dict[str, int]] = {}
    for u in range(30):
        user = str(100 + u)
        n = int(rng.integers(1, 16))
        items = rng.choice(40, n, replace=False)
        scores = rng.permutation(n) + rng.random()
        recs[user] = [[str(i), float(s)] for i, s in zip(items, scores, strict=True)]
        m = int(rng.integers(1, 8))
        pool = rng.choice(40, m, replace=False)
        g = [int(x) for x in rng.choice(grades, m)]
        if tool != "lenskit_graded":
            g[: min(m, 2)] = [int(x) for x in rng.integers(1, 5, min(m, 2))]
        truth[user] = {str(i): x for i, x in zip(pool, g, strict=True)}
    return {"recs": recs, "truth": truth, "k": KS}


def run_tool(tool: str, w: dict[str, Any], tmp: Path) -> dict[str, float]:
    python = VENVS / VENV[tool] / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"{tool}: no interpreter at {python} (run setup_venvs.sh)")
        pytest.skip(f"{tool}: no interpreter at {python}")
    src, dst = tmp / "in.json", tmp / "out.json"
    src.write_text(json.dumps(w))
    proc = subprocess.run(
        [str(python), str(HERE / "grades_runners.py"), tool, str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(dst.read_text())


def receval_of(conv: str, w: dict[str, Any], names: list[str]) -> receval.Result:
    recs = pd.DataFrame(
        [(u, i, s) for u, r in w["recs"].items() for i, s in r],
        columns=["user", "item", "score"],
    )
    truth = pd.DataFrame(
        [(u, i, g) for u, t in w["truth"].items() for i, g in t.items()],
        columns=["user", "item", "relevance"],
    )
    return receval.evaluate(recs, truth, names, convention=conv)


@pytest.mark.parametrize("tool", list(VENV))
def test_convention_reads_grades_as_its_tool(tool: str, tmp_path: Path) -> None:
    conv_name = "lenskit" if tool == "lenskit_graded" else tool
    conv = receval.evaluation.conventions.get(conv_name)
    checked = 0
    for seed in SEEDS:
        w = workload(tool, seed)
        theirs = run_tool(tool, w, tmp_path)
        names = sorted(n for n in theirs if n.split("@")[0].split("[")[0] in conv.metrics)
        res = receval_of(conv_name, w, names)
        negative = sum(g < 0 for t in w["truth"].values() for g in t.values())
        if conv.negative_grades in ("relevant", "nonrelevant"):
            assert res.counts[f"truth_rows_negative_{conv.negative_grades}"] == negative
        for name in names:
            value = res.summary[str(receval.parse_metric(name, conv.params))]
            if math.isnan(theirs[name]):
                assert math.isnan(value), (tool, seed, name)
                continue
            assert value == pytest.approx(theirs[name], abs=1e-9), (tool, seed, name)
            checked += 1
    assert checked >= len(KS) * len(SEEDS)


def test_rectools_r_precision_is_recall_min_k_relevant(tmp_path: Path) -> None:
    """RecTools' Precision(k, r_precision=True) (rectools/metrics/classification.py:
    Precision.calc_per_user_from_confusion_df, / min(k, tp + fn)) is
    recall@k[denominator=min_k_relevant]."""
    python = VENVS / "rectools" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"rectools: no interpreter at {python}")
        pytest.skip("rectools: no interpreter")
    w = workload("rectools", 3)
    script = (
        "import json, sys, pandas as pd\n"
        "from rectools import Columns\n"
        "from rectools.metrics import Precision, calc_metrics\n"
        "w = json.load(open(sys.argv[1]))\n"
        "rows = []\n"
        "for u, r in w['recs'].items():\n"
        "    ranked = sorted(r, key=lambda p: (-p[1], int(p[0])))\n"
        "    rows += [(u, i, n) for n, (i, _) in enumerate(ranked, start=1)]\n"
        "reco = pd.DataFrame(rows, columns=[Columns.User, Columns.Item, Columns.Rank])\n"
        "pairs = [(u, i) for u, t in w['truth'].items() for i in t]\n"
        "inter = pd.DataFrame(pairs, columns=[Columns.User, Columns.Item])\n"
        "m = {f'recall@{k}[denominator=min_k_relevant]': Precision(k=k, r_precision=True)"
        " for k in w['k']}\n"
        "print(json.dumps(calc_metrics(m, reco=reco, interactions=inter)))\n"
    )
    (tmp_path / "in.json").write_text(json.dumps(w))
    (tmp_path / "rp.py").write_text(script)
    proc = subprocess.run(
        [str(python), str(tmp_path / "rp.py"), str(tmp_path / "in.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    mine = receval_of("rectools", w, sorted(theirs)).summary
    for name, value in theirs.items():
        assert mine[name] == pytest.approx(value, abs=1e-12), name
