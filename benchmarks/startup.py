"""Start-up that fits a shell loop (issue #33 point 2): whole processes, small data.

The target: ``receval evaluate`` of a small file in at most 0.25 s as a whole
process, ``import receval`` plus a first small evaluation in at most 0.3 s.
Each case below is a new process on the same 13-row input (a CSV pair; the
same rows as Python dicts for the in-process cases and for pytrec_eval), run
``--runs`` times, the cases alternating run by run so that the load of a
shared machine falls on each alike:

- ``python -c pass``: the interpreter's floor;
- ``import numpy, pyarrow``: the floor of what reading a file needs;
- ``python -m receval evaluate recs.csv truth.csv -m ndcg@10`` (the table on
  stdout), with ``-o json``, and with ``--per-user``;
- ``import receval; receval.evaluate(recs, truth, "ndcg@10")`` on dicts;
- the same with ``import pandas`` first (what a host that already uses pandas pays);
- pytrec_eval (``--pytrec-python``: an interpreter with ``pytrec-eval-terrier``,
  e.g. ``python -m venv /tmp/startup-peer-venv && /tmp/startup-peer-venv/bin/pip
  install pytrec-eval-terrier``): ``RelevanceEvaluator(qrels, {"ndcg_cut"})`` on
  the same rows (trec_eval's own C code: the trec_eval-style peer); skipped with a
  note when not given or not importable.

    python benchmarks/startup.py [--runs 20] [--pytrec-python /tmp/startup-peer-venv/bin/python]
        [--baseline-src DIR]   (DIR: e.g. ``git archive HEAD src | tar -x -C /tmp/base``)

Prints a Markdown table: the median wall time of each case and its spread
(min-max), the median minus the floor's, and the median peak RSS (the child's
``ru_maxrss``, from ``os.wait4``); then the ndcg@10 each computed (they agree).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: 13 recommendation rows of 5 users (one with no truth), 6 truth rows of 4 of them
RECS = [
    (1, 10, 1), (1, 11, 2), (1, 12, 3),
    (2, 10, 1), (2, 13, 2), (2, 14, 3),
    (3, 11, 1), (3, 12, 2), (3, 15, 3),
    (4, 10, 1), (4, 16, 2),
    (6, 12, 1), (6, 13, 2),
]  # fmt: skip
TRUTH = [(1, 10), (1, 12), (2, 13), (2, 14), (3, 12), (4, 17)]

_DICTS = (
    f"recs = {{}}\nfor u, i, r in {RECS!r}:\n    recs.setdefault(u, []).append(i)\n"
    f"truth = {{}}\nfor u, i in {TRUTH!r}:\n    truth.setdefault(u, []).append(i)\n"
)
IN_PROCESS = (
    "import receval\n" + _DICTS + "print(receval.evaluate(recs, truth, 'ndcg@10')['ndcg@10'])\n"
)
PYTREC = (
    "import pytrec_eval\n"
    f"run, qrels = {{}}, {{}}\n"
    f"for u, i, r in {RECS!r}:\n    run.setdefault(str(u), {{}})[str(i)] = 1.0 / r\n"
    f"for u, i in {TRUTH!r}:\n    qrels.setdefault(str(u), {{}})[str(i)] = 1\n"
    "out = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut'}).evaluate(run)\n"
    "print(sum(v['ndcg_cut_10'] for v in out.values()) / len(out))\n"
)


def _files(folder: Path) -> tuple[Path, Path]:
    recs, truth = folder / "recs.csv", folder / "truth.csv"
    recs.write_text("user,item,rank\n" + "".join(f"{u},{i},{r}\n" for u, i, r in RECS))
    truth.write_text("user,item\n" + "".join(f"{u},{i}\n" for u, i in TRUTH))
    return recs, truth


def _cases(folder: Path, pytrec: str | None, baseline: str | None) -> dict[str, list[str]]:
    """Each case's command line; ``baseline``: a ``src`` folder of another
    receval (e.g. ``git archive HEAD src``), whose command and in-process
    cases are added, run with ``PYTHONPATH`` set to it."""
    py = sys.executable
    recs, truth = _files(folder)
    command = [py, "-m", "receval", "evaluate", str(recs), str(truth), "-m", "ndcg@10"]
    cases = {
        "python -c pass (floor)": [py, "-c", "pass"],
        "import numpy, pyarrow": [py, "-c", "import numpy, pyarrow"],
        "receval evaluate (table)": command,
        "receval evaluate -o json": [*command, "-o", "json"],
        "receval evaluate --per-user x.csv": [*command, "--per-user", str(folder / "pu.csv")],
        "import receval; evaluate(dicts)": [py, "-c", IN_PROCESS],
        "import pandas, receval; evaluate(dicts)": [py, "-c", "import pandas\n" + IN_PROCESS],
    }
    if baseline is not None:
        with_path = ["env", f"PYTHONPATH={baseline}"]
        cases["baseline: receval evaluate (table)"] = [*with_path, *command]
        cases["baseline: import receval; evaluate(dicts)"] = [*with_path, py, "-c", IN_PROCESS]
    if pytrec is not None:
        cases["pytrec_eval (trec_eval's C)"] = [pytrec, "-c", PYTREC]
    return cases


def _timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB: the child's own ``ru_maxrss``, which
    ``os.wait4`` returns as it reaps it) and stdout of one process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()  # .pyc written by the untimed run, as pip writes them
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv} exited {proc.returncode}: {err.decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024, out.decode()


def _pytrec(python: str | None) -> tuple[str | None, str]:
    """The interpreter with pytrec_eval, or None and why not."""
    if python is None:
        return None, "pytrec_eval: not run (give --pytrec-python)"
    check = subprocess.run([python, "-c", "import pytrec_eval"], capture_output=True)
    if check.returncode:
        return None, f"pytrec_eval: not importable under {python}"
    return python, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pytrec-python", default=None)
    parser.add_argument("--baseline-src", default=None, help="another receval's src folder")
    args = parser.parse_args()
    pytrec, note = _pytrec(args.pytrec_python)
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(Path(tmp), pytrec, args.baseline_src)
        walls: dict[str, list[float]] = {name: [] for name in cases}
        rss: dict[str, list[float]] = {name: [] for name in cases}
        shown: dict[str, str] = {}
        for name, argv in cases.items():  # once untimed: the files cached, .pyc written
            shown[name] = _timed(argv)[2]
        for _ in range(args.runs):
            for name, argv in cases.items():
                wall, peak, _ = _timed(argv)
                walls[name].append(wall)
                rss[name].append(peak)
    floor = statistics.median(walls["python -c pass (floor)"])
    print(f"{args.runs} runs each, alternating; {sys.executable} ({sys.version.split()[0]})\n")
    print("| case | median s | min-max s | median - floor s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    for name in cases:
        w = walls[name]
        med = statistics.median(w)
        print(
            f"| {name} | {med:.3f} | {min(w):.3f}-{max(w):.3f} | {med - floor:.3f} "
            f"| {statistics.median(rss[name]):.0f} |"
        )
    values = {
        "receval evaluate -o json": json.loads(shown["receval evaluate -o json"])["metrics"][
            "ndcg@10"
        ],
        "receval in process": float(shown["import receval; evaluate(dicts)"]),
    }
    if pytrec is not None:
        values["pytrec_eval"] = float(shown["pytrec_eval (trec_eval's C)"])
    print()
    for name, value in values.items():
        print(f"ndcg@10 {name}: {value:.6f}")
    if note:
        print(note)


if __name__ == "__main__":
    main()
