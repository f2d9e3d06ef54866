"""Record every tool's own numbers on one small fixed dataset (issue #37).

    python tests/conformance/record_values.py [--venvs DIR] [--out FILE] [TOOL ...]

Runs each tool in its own virtual environment (``tests/conformance/setup_venvs.sh
DIR`` builds them; default ``.conformance`` at the repo root, or
``$RECEVAL_CONFORMANCE_DIR``) through ``runners.py``, the way a user of the tool
would, on :func:`workload`, and prints the values as the Python literal that
``tests/test_convention_values.py`` holds (``PINNED``), with each tool's
version. ``--out`` also writes them as JSON. Needs only the standard library
here: the tools run in their venvs.

The dataset shows the choices that tell the conventions apart:

* user 1: graded truth (grades 3, 2, 1, 1 and a judged 0), a relevant item
  the list misses (nDCG's ideal, recall) and one at position 6, beyond k = 3
  and 5 (AP's denominator: min(k, R), R, the hits, the relevant items listed);
* user 2: four equal scores over the ids 8, 100, 9, 55, given in that row
  order, two of them relevant (9, 100): item id ascending (8 9 55 100),
  descending (100 55 9 8), as strings descending (trec_eval: 9 8 55 100) and
  the input order put the relevant items at four different pairs of positions;
* user 3: a list, and a truth whose only row is graded 0 (no relevant item for
  the tools that read grades; relevant for those that read none);
* user 4: relevant items and no list; user 5: a list and no truth;
* user 6: a list of one item for four relevant ones (k beyond the list,
  precision's and AP's denominators, RecTools' ideal of k).

Tools whose order of equal scores is unspecified (torchmetrics, RecBole:
torch.topk) get user 2 without ties; Recommenders gets the truth without the
rows graded 0 (it counts them relevant, receval never does: docs/conventions.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KS = [1, 3, 5, 10]

#: tool -> the venv that holds it (as in test_conventions_differential.py)
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
#: tool -> the distributions whose versions are recorded with its numbers
PACKAGES = {
    "trec_eval": ("pytrec-eval-terrier",),
    "ranx": ("ranx", "numba"),
    "torchmetrics": ("torchmetrics", "torch"),
    "rectools": ("rectools", "pandas", "numpy"),
    "replay": ("replay-rec", "pandas"),
    "mllib": ("pyspark",),
    "recbole": ("recbole", "torch"),
    "recommenders": ("recommenders", "pandas"),
    "lenskit": ("lenskit",),
}
#: tools whose order of equal scores is unspecified (torch.topk): no ties for them
NO_TIES = {"torchmetrics", "recbole"}
#: tools that count a truth row graded 0 as relevant: those rows are left out for them
ZERO_GRADE_RELEVANT = {"recommenders"}


def workload(ties: bool = True, zero_grades: bool = True) -> dict[str, Any]:
    """The dataset in runners.py's form: ids are digit strings, users of
    ``recs`` with no list have no entry."""
    t8, t100, t9, t55 = (0.5, 0.5, 0.5, 0.5) if ties else (0.5, 0.4, 0.3, 0.2)
    recs: dict[str, list[list[Any]]] = {
        "1": [["20", 0.9], ["60", 0.8], ["10", 0.7], ["50", 0.6], ["70", 0.5], ["40", 0.45]],
        "2": [["7", 0.9], ["8", t8], ["100", t100], ["9", t9], ["55", t55]],
        "3": [["11", 0.8], ["12", 0.4]],
        "5": [["15", 0.3], ["16", 0.2]],
        "6": [["17", 0.6]],
    }
    truth: dict[str, dict[str, int]] = {
        "1": {"10": 3, "20": 1, "30": 2, "40": 1, "50": 0},
        "2": {"9": 1, "100": 2},
        "3": {"11": 0},
        "4": {"13": 1, "14": 2},
        "6": {"17": 1, "18": 1, "19": 1, "21": 1},
    }
    if not zero_grades:
        truth = {u: {i: g for i, g in t.items() if g > 0} for u, t in truth.items()}
        truth = {u: t for u, t in truth.items() if t}
    return {"recs": recs, "truth": truth, "k": list(KS)}


def workload_for(tool: str) -> dict[str, Any]:
    """The dataset as ``tool`` is given it (see the module's docstring)."""
    return workload(ties=tool not in NO_TIES, zero_grades=tool not in ZERO_GRADE_RELEVANT)


def venvs_dir() -> Path:
    return Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))


def versions(python: Path, packages: tuple[str, ...]) -> dict[str, str]:
    """The installed version of each distribution in that interpreter."""
    code = (
        "import json, sys, importlib.metadata as m\n"
        "print(json.dumps({p: m.version(p) for p in sys.argv[1:]}))"
    )
    out = subprocess.run(
        [str(python), "-c", code, *packages], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def record(tool: str, venvs: Path) -> dict[str, Any]:
    """The tool's own numbers on its workload, with its versions and the command."""
    python = venvs / VENV[tool] / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{tool}: no interpreter at {python} (run setup_venvs.sh)")
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(workload_for(tool)))
        proc = subprocess.run(
            [str(python), str(HERE / "runners.py"), tool, str(src), str(dst)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed:\n{proc.stderr[-3000:]}")
        values = json.loads(dst.read_text())
    return {
        "versions": versions(python, PACKAGES[tool]),
        "values": {name: float(values[name]) for name in sorted(values)},
    }


def as_literal(recorded: dict[str, dict[str, Any]]) -> str:
    """The Python literal of ``PINNED`` (floats by repr: they read back exactly)."""
    lines = ["PINNED: dict[str, dict[str, Any]] = {"]
    for tool, rec in recorded.items():
        lines.append(f"    {tool!r}: {{")
        lines.append(f"        'versions': {rec['versions']!r},")
        lines.append("        'values': {")
        for name, value in rec["values"].items():
            lines.append(f"            {name!r}: {value!r},")
        lines.append("        },")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines).replace("'", '"')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tools", nargs="*", help="default: " + " ".join(VENV))
    parser.add_argument("--venvs", type=Path, default=venvs_dir())
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    unknown = set(args.tools) - set(VENV)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}; known: {' '.join(VENV)}")
    recorded: dict[str, dict[str, Any]] = {}
    failed = []
    for tool in args.tools or list(VENV):
        try:
            recorded[tool] = record(tool, args.venvs)
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            print(f"# {tool}: not recorded: {exc}", file=sys.stderr)
            failed.append(tool)
    print(as_literal(recorded))
    if args.out is not None:
        args.out.write_text(json.dumps(recorded, indent=1, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
