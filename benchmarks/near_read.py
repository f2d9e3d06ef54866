"""Evaluation near the read (issue #33 point 3): warm ``evaluate`` beside reading
the same columns, and where the rest of its time goes.

    python benchmarks/near_read.py [--users 100000,1000000] [--repeat 5]
    python benchmarks/near_read.py --users 100000 --no-parts --against OLD/src --rounds 5

With ``--against`` another tree's ``src`` (e.g. ``git archive`` of an older
commit, its compiled module copied in), each round runs this script twice in
fresh processes, this tree's ``src`` then the other's (``PYTHONPATH``),
alternating, and prints each round's figures and the medians of both: on a
busy machine only figures taken side by side compare.

On the workload of ``run.py`` (``workload.py``: generated under ``--data``/<users>
if missing), in one warm process, interleaved repeat by repeat:

- **read**: ``pyarrow.parquet.read_table`` of both files, the columns the
  evaluation reads (user, item, rank; user, item, relevance);
- **evaluate, tables**: ``receval.evaluate`` of the two tables already read
  (the 12 standard metrics: P/R/nDCG/AP/RR/HR at 10 and 100);
- **evaluate, files**: ``receval.evaluate`` of the two Parquet paths (the read
  included: streamed, merged by user).

Each is the best of ``--repeat`` (wall time, and apart the process's CPU
time over every thread, steadier on a busy machine); the ratios are to the
read. Then, on the
tables, the evaluation taken apart (one thread, best of 3): the merge of the
two tables into pairs of users (the reading thread's work), the pairs' columns
turned into checked NumPy arrays (``load``), and ``load`` plus the kernels of
the 12 metrics (``evaluate_pair``), with their share of the one-thread total,
and the kernels' calls that take the most time (cProfile, one thread).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))
import _common  # noqa: E402
import workload  # noqa: E402


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cpu() -> float:
    """CPU seconds of this process so far (user and system, every thread): on a
    busy machine a steadier measure than wall time."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _parts(recs: Any, truth: Any) -> None:
    """The one-thread breakdown of an evaluation of two tables."""
    from receval.engines import driver, numpy_engine
    from receval.evaluation.api import parse_metrics
    from receval.evaluation.options import EvalOptions
    from receval.io import stream

    def checked() -> Any:  # the users' order checked, both tables
        return stream.sorted_tables(recs, truth)

    def merged() -> list[Any]:
        a, b = checked()
        return list(stream.pairs(a, b))

    pairs = merged()
    plan = driver.Plan(
        tuple(parse_metrics(_common.STANDARD_SPEC, {})), 1.0, **EvalOptions().engine()
    )

    def loads() -> None:
        for p in pairs:
            copy.copy(p).loaded()

    try:  # the thread's workspace: its own module since the thirteenth session
        from receval import _workspace as space
    except ImportError:
        space = numpy_engine if hasattr(numpy_engine, "install") else None

    def kernels() -> None:  # with a workspace, as a thread of the engine's pool has one
        if space is not None:
            space.install()
        try:
            for p in pairs:
                driver.evaluate_pair(plan, copy.copy(p))
        finally:
            if space is not None:
                space.uninstall()

    check_s, merge_s = _best(checked, 3), _best(merged, 3)
    load_s, all_s = _best(loads, 3), _best(kernels, 3)
    total = merge_s + all_s
    print(f"\none thread, {len(pairs)} pairs of users:")
    share = f"{merge_s / total:.0%}; the order check {check_s:.3f} s"
    print(f"  merge into pairs     {merge_s:.3f} s ({share})")
    print(f"  load (to NumPy)      {load_s:.3f} s ({load_s / total:.0%})")
    print(f"  kernels              {all_s - load_s:.3f} s ({(all_s - load_s) / total:.0%})")
    prof = cProfile.Profile()
    prof.enable()
    kernels()
    prof.disable()
    stats = pstats.Stats(prof)
    cum = stats.stats  # type: ignore[attr-defined]
    stages = (  # (label, function name, file): cumulative time under cProfile
        ("load: Arrow to NumPy", "loaded", "records.py"),
        ("prepare: encode, order, join, ideal", "prepare", "numpy_engine.py"),
        ("  of it the join", "<built-in method receval._native.join>", "~"),
        ("  the ideal orderings", "<built-in method receval._native.ideal>", "~"),
        ("compute: cells, 12 metrics", "compute", "numpy_engine.py"),
        ("part: exact sums, counts", "part", "driver.py"),
    )
    print("  stages (cProfile, cumulative, with its overhead):")
    for label, name, where in stages:
        found = [v[3] for (path, _, fn), v in cum.items() if fn == name and path.endswith(where)]
        if found:
            print(f"    {sum(found):.4f} s  {label}")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:12]  # type: ignore[attr-defined]
    print("  the calls that take the most time (own time, cProfile):")
    for (path, line, name), (_, calls, own, _cum, _) in rows:
        where = f"{Path(path).name}:{line}" if path != "~" else "builtin"
        print(f"    {own:.4f} s  {calls:6d} calls  {name} ({where})")


def one_size(users: int, data: str, repeat: int, parts: bool) -> None:
    """The three timings at one size, and the breakdown."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import receval

    metrics = _common.STANDARD_SPEC
    folder = Path(data) / str(users)
    workload.ensure(users, folder, seed=0)
    rp, tp = str(folder / "recs.parquet"), str(folder / "truth.parquet")

    def read() -> tuple[Any, Any]:
        recs = pq.read_table(rp, columns=["user", "item", "rank"])
        return recs, pq.read_table(tp, columns=["user", "item", "relevance"])

    recs, truth = read()
    receval.evaluate(recs, truth, metrics)  # warm: allocator, threads, imports
    tiny = (recs.slice(0, 100), truth.filter(pc.less_equal(truth.column("user"), 1)))
    fixed = _best(lambda: receval.evaluate(*tiny, metrics), repeat)  # the per-call costs
    cases = {
        "read": read,
        "tables": lambda: receval.evaluate(recs, truth, metrics),
        "files": lambda: receval.evaluate(rp, tp, metrics),
    }
    best = dict.fromkeys(cases, float("inf"))
    cpu = dict.fromkeys(cases, float("inf"))  # the process's CPU seconds, every thread
    for _ in range(repeat):  # interleaved
        for name, fn in cases.items():
            c0 = _cpu()
            best[name] = min(best[name], _best(fn, 1))
            cpu[name] = min(cpu[name], _cpu() - c0)
    r, rc = best["read"], cpu["read"]
    print(f"\n{users:,} users, {recs.num_rows:,} rec rows, best of {repeat}:")
    print(f"  read both files      {r:.3f} s (cpu {rc:.3f} s)")
    print(f"  evaluate, 100 rows   {fixed:.4f} s (what every call costs: options, plan, result)")
    for name in ("tables", "files"):
        w, c = best[name], cpu[name]
        print(
            f"  evaluate, {name:6s}     {w:.3f} s ({w / r:.2f}x the read; "
            f"cpu {c:.3f} s, {c / rc:.2f}x)"
        )
    if parts:
        _parts(recs, truth)


def _against(args: argparse.Namespace) -> None:
    """Rounds of this tree and another, each in a fresh process, alternating."""
    import os
    import re
    import statistics
    import subprocess

    trees = {"this": str(HERE.parent / "src"), "other": args.against}
    runs: dict[tuple[str, str, str], list[float]] = {}
    for r in range(args.rounds):
        for tree, src in trees.items():
            cmd = [sys.executable, __file__, "--users", args.users, "--repeat", str(args.repeat)]
            cmd += ["--data", args.data, "--no-parts"]
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            users = "?"
            for line in out.splitlines():
                head = re.match(r"^([\d,]+) users", line)
                if head:
                    users = head.group(1)
                got = re.match(
                    r"^\s+(read both files|evaluate, tables|evaluate, files)\s+([\d.]+) s"
                    r".*cpu ([\d.]+) s",
                    line,
                )
                if got:
                    for what, value in (("", got.group(2)), (" cpu", got.group(3))):
                        key = (users, got.group(1) + what, tree)
                        runs.setdefault(key, []).append(float(value))
            print(f"round {r + 1}, {tree} ({src}):\n{out.strip()}", flush=True)
    print(f"\nmedians of {args.rounds} rounds (each the best of {args.repeat}), this / other:")
    for (users, case, tree), values in runs.items():
        if tree == "this":
            other = runs.get((users, case, "other"), [float("nan")])
            a, b = statistics.median(values), statistics.median(other)
            print(f"  {users:>9} users  {case:18s} {a:.3f} / {b:.3f} s  ({a / b:.2f}x)")
            print(
                f"      runs: {', '.join(f'{v:.3f}' for v in values)} / "
                f"{', '.join(f'{v:.3f}' for v in other)}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=str(HERE.parent / "bench-data"))
    ap.add_argument("--no-parts", action="store_true", help="skip the breakdown")
    ap.add_argument("--against", help="another tree's src: rounds of both, alternating")
    ap.add_argument("--rounds", type=int, default=5, help="rounds with --against")
    args = ap.parse_args()
    if args.against:
        _against(args)
        return
    for users in [int(u) for u in args.users.split(",")]:
        one_size(users, args.data, args.repeat, not args.no_parts)


if __name__ == "__main__":
    main()
