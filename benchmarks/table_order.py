"""Tables not in user order (evaluate's table door puts integer user ids in
user order, then merges them like sorted files): warm ``evaluate`` of the
standard workload's tables with their rows in user order, in runs of users in
a random order (lists written in the order of the test users), and scattered
(a log in time order, each user's rows in their order); and the same with text
user ids (``u0000042``), sorted and in runs.

    python benchmarks/table_order.py [--users 100000] [--repeat 5]
    python benchmarks/table_order.py --users 100000 --against OLD/src --rounds 3

Each case runs in a fresh process (``--case``), so that its peak resident
memory is its own: it reads the two Parquet files of ``workload.py``
(generated under ``--data``/<users> if missing), reorders them, evaluates
once to warm up, then ``--repeat`` times; it prints the best wall time, the
process's CPU time of that run (every thread), the resident memory before the
first evaluation and the peak (``ru_maxrss``). With ``--against`` another
tree's ``src`` (``git archive`` of an older commit, its compiled module built),
rounds alternate between the trees. Both trees' values are checked to be
equal to the sorted tables'. Nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = ("sorted", "runs", "scattered", "pandas runs", "text sorted", "text runs")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reordered(table: Any, case: str, seed: int) -> Any:
    """The table's rows in runs of users in a random order, or scattered
    with each user's rows in their order."""
    import numpy as np
    import pyarrow.compute as pc

    users = pc.dictionary_encode(table.column("user")).combine_chunks().indices.to_numpy()
    rng = np.random.default_rng(seed)
    if case.endswith("runs"):
        starts = np.concatenate(([0], np.flatnonzero(users[1:] != users[:-1]) + 1))
        lengths = np.diff(np.append(starts, len(users)))
        order = rng.permutation(len(starts))
        rows = np.concatenate([np.arange(starts[r], starts[r] + lengths[r]) for r in order])
    else:
        slots = rng.permutation(len(users))
        rows = np.empty(len(users), dtype=np.int64)
        rows[np.argsort(users[slots], kind="stable")] = np.argsort(users, kind="stable")
    out = table.take(rows).combine_chunks()
    return out.to_pandas() if case.startswith("pandas") else out


def _text_users(table: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_lpad(pc.cast(table.column("user"), pa.string()), 7, "0")
    user = pc.binary_join_element_wise(pa.scalar("u"), text, "")
    return table.set_column(0, "user", user).combine_chunks()


def one_case(users: int, data: str, case: str, repeat: int) -> dict[str, Any]:
    """One case in this process: its figures as a dict (printed as JSON)."""
    import pyarrow.parquet as pq

    sys.path[:0] = [str(HERE), str(HERE / "peers")]
    import _common
    import workload

    import receval

    folder = Path(data) / str(users)
    workload.ensure(users, folder, seed=0)
    recs = pq.read_table(folder / "recs.parquet", columns=["user", "item", "rank"])
    truth = pq.read_table(folder / "truth.parquet", columns=["user", "item", "relevance"])
    metrics = _common.STANDARD_SPEC
    want = receval.evaluate(recs, truth, metrics).summary if case != "sorted" else None
    if case.startswith("text"):  # user ids as text (u0000042: code point order = number order)
        recs, truth = _text_users(recs), _text_users(truth)
    if not case.endswith("sorted"):
        recs, truth = _reordered(recs, case, 1), _reordered(truth, case, 2)
    before = _rss_mib()
    got = receval.evaluate(recs, truth, metrics)  # warm
    if want is not None and got.summary != want:
        raise SystemExit(f"{case}: values differ from the sorted tables'")
    best, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        receval.evaluate(recs, truth, metrics)
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, _cpu() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"case": case, "wall": best, "cpu": cpu, "rss_before": before, "peak": peak}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=str(HERE.parent / "bench-data"))
    ap.add_argument("--against", help="another tree's src: rounds of both, alternating")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--cases", default=",".join(CASES), help=f"among {', '.join(CASES)}")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(one_case(args.users, args.data, args.case, args.repeat)))
        return
    trees = {"this": str(HERE.parent / "src")}
    if args.against:
        trees["other"] = args.against
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for case in args.cases.split(","):
            for tree, src in trees.items():
                cmd = [sys.executable, __file__, "--case", case, "--users", str(args.users)]
                cmd += ["--repeat", str(args.repeat), "--data", args.data]
                env = {**os.environ, "PYTHONPATH": src}
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                runs.setdefault((case, tree), []).append(json.loads(out.stdout.splitlines()[-1]))
    print(f"{args.users:,} users, best of {args.repeat}, medians of {args.rounds} round(s)")
    head = ("wall s", "CPU s", "RSS before", "peak MiB")
    print(f"{'case':12s} {'tree':6s} " + " ".join(f"{h:>10s}" for h in head))
    keys = ("wall", "cpu", "rss_before", "peak")
    for (case, tree), got in runs.items():
        med = {k: statistics.median(g[k] for g in got) for k in keys}
        print(
            f"{case:12s} {tree:6s} {med['wall']:8.3f} {med['cpu']:8.3f} "
            f"{med['rss_before']:11.0f} {med['peak']:9.0f}"
        )


if __name__ == "__main__":
    main()
