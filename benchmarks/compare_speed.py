"""How long ``receval.compare`` and ``receval.report`` take next to the evaluations
they compare (issue #19 point 1, issue #33 points 1 and 4).

The case: 3 systems × 2 metrics (``ndcg@10``, ``recall@10``) on the standard
workload (``workload.py``), 10,000 resamples. Three runs: the workload's lists,
and two others made from them by adding seeded noise to the scores (so the
three differ a little, as real systems do). Measured in one process, each step
``--repeat`` times (median):

* ``evaluate``: ``receval.evaluate`` of the three runs (what ``compare`` does
  first);
* ``compare, Results in``: ``receval.compare`` given those three Results (only
  the alignment, the tests and the intervals), with ``--test`` (default ``t``,
  compare's default; ``randomization`` for the sign-flip test) and BCa
  intervals, for each ``--resampling``;
* ``compare, DataFrames in``: ``receval.compare`` given the three DataFrames
  (its evaluations included);
* ``report``: ``receval.report`` of the three DataFrames (``--report``;
  the comparison and the curves, no file written);
* the ratios: compare / evaluate (#33's target: at most 5, Results in and
  DataFrames in) and report / compare with DataFrames in (at most 2);
* the peak RSS of the process (``ru_maxrss`` is monotone, so each size runs
  in a fresh process: ``--child``).

    python benchmarks/compare_speed.py                       # 20k users
    python benchmarks/compare_speed.py --users 20000,1000000 --repeat 1 --report
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

METRICS = ["ndcg@10", "recall@10"]


def _runs(users: int, data: Path) -> tuple[dict, object]:
    import numpy as np
    import pyarrow.parquet as pq

    folder = data / str(users)
    workload.ensure(users, folder)
    recs = pq.read_table(folder / "recs.parquet").select(["user", "item", "score"]).to_pandas()
    truth = pq.read_table(folder / "truth.parquet").to_pandas()
    rng = np.random.default_rng(0)
    scale = float(recs["score"].std())
    runs = {
        "a": recs,
        "b": recs.assign(score=recs["score"] + rng.normal(0, 0.3 * scale, len(recs))),
        "c": recs.assign(score=recs["score"] + rng.normal(0, 0.6 * scale, len(recs))),
    }
    return runs, truth


def _timed(repeat: int, call: Any) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def child(users: int, data: Path, repeat: int, resampling: str, test: str, report: bool) -> dict:
    import receval

    runs, truth = _runs(users, data)
    results: dict = {}

    def evaluate() -> None:
        results.update({name: receval.evaluate(run, truth, METRICS) for name, run in runs.items()})

    settings = {"test": test, "ci": "bca", "n_resamples": 10_000}
    tiny = ({"a": {1: [1, 2]}, "b": {1: [2, 1]}}, {1: [1]})  # imports outside the clocks
    receval.report(*tiny, METRICS, n_resamples=20) if report else receval.compare(*tiny, METRICS)
    e = _timed(repeat, evaluate)
    c = _timed(
        repeat, lambda: receval.compare(results, truth, METRICS, resampling=resampling, **settings)
    )
    cd = _timed(
        repeat, lambda: receval.compare(runs, truth, METRICS, resampling=resampling, **settings)
    )
    out = {
        "users": users,
        "test": test,
        "resampling": resampling,
        "evaluate_s": round(e, 3),
        "compare_s": round(c, 3),
        "ratio": round(c / e, 2),
        "compare_frames_s": round(cd, 3),
        "ratio_frames": round(cd / e, 2),
    }
    if report:
        r = _timed(repeat, lambda: receval.report(runs, truth, METRICS, **settings))
        out |= {"report_s": round(r, 3), "report_ratio": round(r / cd, 2)}
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="20000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE.parent / "bench-data")
    parser.add_argument("--resampling", default="index,poisson")
    parser.add_argument("--test", default="t", help="t (compare's default) or randomization")
    parser.add_argument("--report", action="store_true", help="also time receval.report")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.child:
        out = child(
            int(args.users), args.data, args.repeat, args.resampling, args.test, args.report
        )
        print(json.dumps(out))
        return
    rows = []
    for users in [int(u) for u in args.users.split(",")]:
        for resampling in args.resampling.split(","):
            cmd = [sys.executable, __file__, "--child", "--users", str(users)]
            cmd += ["--repeat", str(args.repeat), "--data", str(args.data)]
            cmd += ["--resampling", resampling, "--test", args.test]
            cmd += ["--report"] if args.report else []
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(rows[-1], file=sys.stderr)
    print(
        "| users | test | resampling | 3 evaluations s | compare, Results in s (ratio) "
        "| compare, DataFrames in s (ratio) | report s (÷ compare) | peak RSS MiB |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        rep = f"{r['report_s']} ({r['report_ratio']}×)" if "report_s" in r else "–"
        print(
            f"| {r['users']:,} | {r['test']} | {r['resampling']} | {r['evaluate_s']} "
            f"| {r['compare_s']} ({r['ratio']}×) | {r['compare_frames_s']} "
            f"({r['ratio_frames']}×) | {rep} | {r['peak_rss_mib']:,} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
