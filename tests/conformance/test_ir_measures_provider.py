"""receval inside ir_measures and ranx workflows (issue #34), checked against
the tools themselves under the core conformance interpreter
(tests/conformance/setup_venvs.sh: ir_measures 0.4.3, pytrec_eval 0.5.11,
ranx 0.3.21; ``ir_tools_check.py`` holds the checks):

* receval's ir_measures provider gives, per query and aggregated, to 1e-12,
  what ir_measures' own providers (pytrec_eval, judged, msmarco) give, for 26
  measures on 6 random workloads (grades -1 to 3, ties, queries on one side
  only), and ``register()`` puts it first in ``ir_measures.DefaultPipeline``
  without changing any aggregate;
* :func:`receval.analysis.ranx_table.ranx_table` is ``str(report)`` of ranx's
  ``Report`` byte for byte on 40 random reports (1 to 26 runs, rounding 2 to
  5 digits, percentages) and on one ``ranx.compare``.

A missing interpreter skips, unless ``RECEVAL_CONFORMANCE_REQUIRED=1``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"


def _check(what: str) -> str:
    python = VENVS / "core" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"no interpreter at {python} (run tests/conformance/setup_venvs.sh)")
        pytest.skip(f"no interpreter at {python}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), str(HERE / "ir_tools_check.py"), what],
        capture_output=True,
        text=True,
        timeout=500,
        env=env,
    )
    if "No module named 'ir_measures'" in proc.stderr and not REQUIRED:
        pytest.skip(
            "ir_measures is not installed in the core venv (pip install ir-measures==0.4.3)"
        )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout


def test_ir_measures_provider_matches_ir_measures_own_providers() -> None:
    out = _check("ir_measures")
    assert out.strip().splitlines()[-1].startswith("ok ")


def test_ranx_table_is_ranx_report_byte_for_byte() -> None:
    out = _check("ranx")
    assert out.strip().splitlines()[-1] == "ok 41"
