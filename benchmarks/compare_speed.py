"""How long ``receval.compare`` takes next to the evaluations it compares
(issue #19 point 1: resampling at the speed of arithmetic).

The case of the issue: 3 systems × 2 metrics (``ndcg@10``, ``recall@10``) on
the standard workload (``workload.py``), 10,000 resamples, randomization tests
and BCa intervals. Three runs: the workload's lists, and two others made from
them by adding seeded noise to the scores (so the three differ a little, as
real systems do). Measured in one process, each step ``--repeat`` times
(median):

* ``evaluate``: ``receval.evaluate`` of the three runs (what ``compare`` does
  first);
* ``compare``: ``receval.compare`` given those three Results (only the
  alignment, the tests and the intervals), for ``resampling="index"`` (the
  default) and ``resampling="poisson"``;
* the ratio ``compare / evaluate`` (the issue's target: at most 5);
* the peak RSS of the process during ``compare`` (``ru_maxrss`` is
  monotone, so each size runs in a fresh process: ``--child``).

    python benchmarks/compare_speed.py                       # 20k users
    python benchmarks/compare_speed.py --users 20000,1000000 --repeat 1
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


def child(users: int, data: Path, repeat: int, resampling: str) -> dict:
    import receval

    runs, truth = _runs(users, data)
    evaluate, compare = [], []
    results = {}
    for _ in range(repeat):
        t = time.perf_counter()
        results = {name: receval.evaluate(run, truth, METRICS) for name, run in runs.items()}
        evaluate.append(time.perf_counter() - t)
    for _ in range(repeat):
        t = time.perf_counter()
        receval.compare(
            results,
            truth,
            METRICS,
            test="randomization",
            ci="bca",
            n_resamples=10_000,
            resampling=resampling,
        )
        compare.append(time.perf_counter() - t)
    e, c = statistics.median(evaluate), statistics.median(compare)
    return {
        "users": users,
        "resampling": resampling,
        "evaluate_s": round(e, 3),
        "compare_s": round(c, 3),
        "ratio": round(c / e, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="20000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE.parent / "bench-data")
    parser.add_argument("--resampling", default="index,poisson")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.child:
        out = child(int(args.users), args.data, args.repeat, args.resampling)
        print(json.dumps(out))
        return
    rows = []
    for users in [int(u) for u in args.users.split(",")]:
        for resampling in args.resampling.split(","):
            cmd = [sys.executable, __file__, "--child", "--users", str(users)]
            cmd += ["--repeat", str(args.repeat), "--data", str(args.data)]
            cmd += ["--resampling", resampling]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(rows[-1], file=sys.stderr)
    print("| users | resampling | 3 evaluations s | compare s | ratio | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['users']:,} | {r['resampling']} | {r['evaluate_s']} | {r['compare_s']} "
            f"| {r['ratio']}× | {r['peak_rss_mib']:,} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
