"""Mutation testing of the modules where a wrong character gives a wrong number.

Runs mutmut 3 (chosen by measurement, see docs/mutation.md) on one module at a
time, each with its own selection of tests, in a scratch copy of ``src/`` and
``tests/`` (mutmut writes a ``mutants/`` folder and must never touch the
working tree that others edit). Prints, and writes as JSON, a per-module
table: mutants, killed, survived, timeout, other, kill rate, and every
survivor with its diff.

It needs mutmut next to the project's dependencies, e.g.::

    python -m venv /tmp/mut-venv
    echo "$PWD/.venv/lib/python3.11/site-packages" \
        > /tmp/mut-venv/lib/python3.11/site-packages/zz_project.pth
    /tmp/mut-venv/bin/pip install mutmut==3.8.1
    /tmp/mut-venv/bin/python benchmarks/mutation.py --sample 50 ids stats

(or ``pip install -e .[test] mutmut==3.8.1`` into a fresh venv). The scratch
copy is imported from its own ``src/``: do not put this checkout's editable
install on that venv's path after the copy's (the ``.pth`` line above adds the
site-packages folder without processing its ``__editable__`` file).

Too slow for the default CI: a full run of one module takes minutes to an hour
on 2 cores. ``--sample N --seed S`` draws N mutants at random per module.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the tests that pin its numbers (kept small: mutmut runs, per mutant,
# only those of them that call the mutated function)
MODULES: dict[str, tuple[str, list[str]]] = {
    "ids": ("src/receval/ids.py", ["tests/test_ids.py", "tests/test_pinned.py"]),
    "stats": (
        "src/receval/analysis/stats.py",
        [
            "tests/test_stats.py",
            "tests/test_resampling.py",
            "tests/test_mutants_stats_tests.py",
            "tests/test_mutants_stats_multi.py",
            "tests/test_mutants_stats_power.py",
            "tests/test_mutants_stats_resampling.py",
            "tests/test_mutants_stats_bootstrap.py",
            "tests/test_native.py",  # the bootstrap's counts, compiled and NumPy's
        ],
    ),
    "conventions": (
        "src/receval/evaluation/conventions.py",
        [
            "tests/test_conventions.py",
            "tests/test_convention_values.py",
            "tests/test_known_values.py",
            # its page test: docs/conventions.md holds the generated table and notes
            "tests/test_registry.py",
        ],
    ),
    "ranking": (
        "src/receval/metrics/kernels/ranking.py",
        [
            "tests/test_known_values.py",
            "tests/test_known_values_multi.py",
            "tests/test_explicit.py",  # precision[denominator=recommended]
        ],
    ),
    "trec": (
        "src/receval/metrics/kernels/trec.py",
        [
            "tests/test_known_values.py",
            "tests/test_known_values_multi.py",
            "tests/test_conventions.py",
            "tests/test_convention_values.py",
        ],
    ),
    "batch": (
        "src/receval/metrics/kernels/batch.py",
        ["tests/test_known_values.py", "tests/test_known_values_multi.py", "tests/test_pinned.py"],
    ),
    "beyond": (
        "src/receval/metrics/kernels/beyond.py",
        ["tests/test_beyond.py", "tests/test_known_values.py"],
    ),
    "rating": (
        "src/receval/metrics/kernels/rating.py",
        ["tests/test_ratings.py", "tests/test_explicit.py"],
    ),
    "groups": (
        "src/receval/metrics/kernels/groups.py",
        ["tests/test_groups.py", "tests/test_item_groups.py"],
    ),
    # the engine's tie and merge logic (run with --functions, see FUNCTIONS)
    "engine": (
        "src/receval/engines/numpy_engine.py",
        [
            "tests/test_engine.py",
            "tests/test_options.py",
            "tests/test_rank_position.py",
            "tests/test_native.py",
            "tests/test_known_values.py",
        ],
    ),
    "accumulator": (
        "src/receval/evaluation/accumulator.py",
        ["tests/test_accumulator.py", "tests/test_pinned.py"],
    ),
    "sampled": (
        "src/receval/metrics/kernels/sampled.py",
        ["tests/test_sampled.py", "tests/test_sampled_eval.py", "tests/test_values_flagged.py"],
    ),
    "corrected": (
        "src/receval/metrics/kernels/corrected.py",
        ["tests/test_sampled.py", "tests/test_values_flagged.py", "tests/test_compare.py"],
    ),
}
# module -> the functions --functions=default restricts it to
FUNCTIONS: dict[str, list[str]] = {
    "engine": [
        "_tie_key",
        "_list_order",
        "_order_lists",
        "_dedupe_lists",
        "_dedupe_truth",
        "_tie_groups",
        "_sorted_keys",
    ],
    "accumulator": ["Accumulator.merge"],
}
#: the tests written to kill survivors
EXTRA_TESTS = [
    "tests/test_mutants.py",
    "tests/test_mutants_more.py",
    # every module's docstring examples, run by the default suite
    "tests/test_registry.py::test_docstring_examples_run",
]

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped"}
TIMEOUT_CODES = {36, 24, -24, 152, 255}
GEN = (
    "import os\n"
    "from mutmut.__main__ import (copy_src_dir, copy_also_copy_files,\n"
    "    setup_source_paths, create_mutants)\n"
    "os.makedirs('mutants', exist_ok=True)\n"
    "copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(1)\n"
)


# Put first on the path of every Python a test starts (``python -m receval`` in a
# temporary folder): while mutmut collects which tests call which functions
# (MUTANT_UNDER_TEST=stats), such a child would look for mutmut's configuration
# in its own working folder and fail; it runs the unmutated code instead (its
# calls are not recorded). While a mutant runs, children run that mutant.
SITECUSTOMIZE = (
    "import os\n"
    "if os.environ.get('MUTANT_UNDER_TEST') == 'stats':\n"
    "    os.environ['MUTANT_UNDER_TEST'] = ''\n"
)


def toml_list(items: list[str]) -> str:
    """A TOML array of strings."""
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def mutmut_config(module: str, tests: list[str]) -> str:
    """The ``[tool.mutmut]`` table for one module and its tests."""
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {toml_list([module])}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "--timeout=120"]\n'
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        "use_git_change_detection = false\n"
        'also_copy = ["docs"]\n'  # tests/test_registry.py reads docs/conventions.md
    )


def scratch_copy(work: Path, module: str, tests: list[str]) -> None:
    """Copy src/ and tests/ under ``work`` with a pyproject.toml that configures mutmut."""
    if work.exists():
        shutil.rmtree(work)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "mutants")
    shutil.copytree(ROOT / "src", work / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    shutil.copytree(ROOT / "docs", work / "docs", ignore=ignore)
    (work / "hooks").mkdir()
    (work / "hooks" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    text = (ROOT / "pyproject.toml").read_text()
    text = re.sub(r"\n\[tool\.mutmut\][^\[]*", "\n", text)  # ours replaces any
    (work / "pyproject.toml").write_text(text + mutmut_config(module, tests))


def function_of(name: str) -> str:
    """The function a mutant's name is in: ``f`` of ``pkg.x_f__mutmut_3``,
    ``C.m`` of ``pkg.xǁCǁm__mutmut_3``."""
    stem = name.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    if stem.startswith("xǁ"):
        return ".".join(stem[2:].split("ǁ"))
    return stem.removeprefix("x_")


def mutant_names(work: Path, module: str) -> list[str]:
    """Every mutant mutmut makes of ``module`` (generated, not run)."""
    subprocess.run([sys.executable, "-c", GEN], cwd=work, check=True, capture_output=True)
    mutated = (work / "mutants" / module).read_text()
    dotted = module.removeprefix("src/").removesuffix(".py").replace("/", ".")
    return [f"{dotted}.{n}" for n in re.findall(r"^\s*def (\S+__mutmut_\d+)\(", mutated, re.M)]


VERIFY = (
    "import os, sys, pytest\n"
    "names, tests = sys.argv[1].split(','), sys.argv[2:]\n"
    "for name in names:\n"
    "    os.environ['MUTANT_UNDER_TEST'] = name\n"
    "    rc = pytest.main(['-q', '-x', '-p', 'no:cacheprovider', '--no-header', *tests])\n"
    "    verdict = 'killed' if rc == 1 else 'survived' if rc == 0 else rc\n"
    "    print('VERDICT', name, verdict, flush=True)\n"
)


def verify(work: Path, names: list[str], tests: list[str]) -> dict[str, str]:
    """Run ``tests`` against each mutant in one process (mutmut's trampoline
    reads MUTANT_UNDER_TEST at every call): which survivors they kill."""
    if not names:
        return {}
    env = {**os.environ, "PYTHONPATH": "src"}
    cmd = [sys.executable, "-c", VERIFY, ",".join(names), *tests]
    out = subprocess.run(cmd, cwd=work / "mutants", env=env, capture_output=True, text=True)
    found = re.findall(r"^VERDICT (\S+) (\S+)$", out.stdout, re.M)
    return dict(found)


def classify(code: int | None) -> str:
    """mutmut's exit code for a mutant, as one of our columns."""
    if code in TIMEOUT_CODES:
        return "timeout"
    return STATUS.get(code, "other") if code is not None else "not run"


def cpu_ticks(pid: int) -> int | None:
    """CPU time (user + system, in clock ticks) a process has used; None once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def children(pid: int) -> list[int]:
    """The direct children of a process (Linux)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):  # the task ended meanwhile
            found += [int(c) for c in task.read_text().split()]
    return found


def watch(proc: subprocess.Popen, deadline: float, hang: int) -> tuple[int, list[int]]:
    """Wait for mutmut until ``deadline`` (then stop it: it saves as it goes),
    ending each mutant process that has used no CPU for ``hang`` seconds.

    A fork of the warm pytest process, which has already run threads (Arrow,
    the engine's pool), can deadlock; mutmut's timeout is a CPU-time limit,
    which such a process never reaches. The mutants of the processes ended
    here count as "other": run them with ``verify()``."""
    seen: dict[int, tuple[int | None, float]] = {}
    hung: list[int] = []
    while True:
        try:
            return proc.wait(timeout=min(10.0, max(deadline - time.monotonic(), 0.1))), hung
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            os.killpg(proc.pid, signal.SIGTERM)
            return proc.wait(), hung
        if not hang or not Path("/proc").is_dir():
            continue
        for pid in children(proc.pid):
            ticks = cpu_ticks(pid)
            last, since = seen.get(pid, (None, time.monotonic()))
            if ticks != last:
                seen[pid] = (ticks, time.monotonic())
            elif time.monotonic() - since > hang:
                os.kill(pid, signal.SIGKILL)
                hung.append(pid)


def run_module(name: str, args: argparse.Namespace) -> dict:
    """Mutate one module, run its tests against the mutants, and tally."""
    module, tests = MODULES[name]
    tests = tests + [t for t in EXTRA_TESTS if (ROOT / t.partition("::")[0]).exists()]
    work = Path(args.scratch) / name
    scratch_copy(work, module, tests)
    names = mutant_names(work, module)
    every = len(names)
    only = FUNCTIONS.get(name, []) if args.functions == "default" else args.functions
    if only:
        names = [n for n in names if function_of(n) in only]
    chosen = names
    if args.sample and args.sample < len(names):
        chosen = sorted(random.Random(args.seed).sample(names, args.sample))
    started = time.monotonic()
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.workers), *chosen]
    with (work / "mutmut.log").open("w") as log:  # its output, for when it fails
        # tests that start a Python of their own import the mutated copy too
        path = os.pathsep.join([str(work / "mutants" / "src"), str(work / "hooks")])
        env = {**os.environ, "PYTHONPATH": path}
        proc = subprocess.Popen(
            cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        rc, hung = watch(proc, started + args.timeout, args.hang)
    seconds = time.monotonic() - started
    meta = json.loads((work / "mutants" / (module + ".meta")).read_text())
    codes = meta["exit_code_by_key"]
    tally = {
        k: 0 for k in ("killed", "survived", "timeout", "no tests", "skipped", "other", "not run")
    }
    survivors = []
    for key in chosen:
        status = classify(codes.get(key))
        tally[status] += 1
        if status in ("survived", "no tests"):
            shown = subprocess.run(
                [sys.executable, "-m", "mutmut", "show", key],
                cwd=work,
                capture_output=True,
                text=True,
            )
            survivors.append({"mutant": key, "status": status, "diff": shown.stdout.strip()})
    # a mutant that no selected test reaches counts as a survivor
    tested = tally["killed"] + tally["survived"] + tally["timeout"] + tally["no tests"]
    return {
        "module": module,
        "tests": tests,
        "mutants_total": len(names),
        "mutants_module": every,
        "functions": only or None,
        "mutants_run": len(chosen),
        "sampled": len(chosen) < len(names),
        **tally,
        "kill_rate": round((tally["killed"] + tally["timeout"]) / tested, 4) if tested else None,
        "seconds": round(seconds, 1),
        "mutmut_rc": rc,
        "hung_ended": len(hung),
        "mutmut_log": str(work / "mutmut.log"),
        "survivors": survivors,
    }


def print_table(rows: list[dict]) -> None:
    """The per-module table, then every survivor's diff."""
    print(
        f"{'module':45} {'total':>6} {'run':>5} {'killed':>6} {'surv':>5} "
        f"{'tmo':>4} {'other':>5} {'rate':>6} {'s':>6}"
    )
    for r in rows:
        rate = "-" if r["kill_rate"] is None else f"{100 * r['kill_rate']:.1f}%"
        print(
            f"{r['module']:45} {r['mutants_total']:6} {r['mutants_run']:5} {r['killed']:6} "
            f"{r['survived'] + r['no tests']:5} {r['timeout']:4} "
            f"{r['other'] + r['not run'] + r['skipped']:5} {rate:>6} {r['seconds']:6}"
        )
    for r in rows:
        for s in r["survivors"]:
            print(f"\n--- {s['mutant']} ({s['status']})\n{s['diff']}")


def main(argv: list[str] | None = None) -> int:
    """Command line: ``mutation.py [--sample N] [--seed S] [module ...]``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("modules", nargs="*", help=f"default: all of {', '.join(MODULES)}")
    parser.add_argument(
        "--sample", type=int, default=0, help="N mutants at random per module (0: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--functions",
        type=lambda text: text if text == "default" else text.split(","),
        default="default",
        help="mutate only these functions (comma separated; Class.method for a method); "
        "'default' (the default): FUNCTIONS' list for the module if it has one, else all",
    )
    parser.add_argument("--workers", type=int, default=1, help="mutmut --max-children (default 1)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per module")
    parser.add_argument(
        "--hang",
        type=int,
        default=60,
        help="end a mutant process that used no CPU for this many seconds (0: never)",
    )
    parser.add_argument("--scratch", default="/tmp/receval-mutation", help="where the copies go")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; expected some of {list(MODULES)}")
    rows = []
    for name in args.modules or list(MODULES):
        rows.append(run_module(name, args))
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
