"""What groups add to an evaluation (issue #20 point 5: at most 30% at 1M users).

    python benchmarks/groups.py --users 100000 [--groups 5] [--groupings 1] [--repeat 3]

Reads the standard workload of ``benchmarks/workload.py`` (``bench-data/<users>``,
made with ``python benchmarks/workload.py --users N --out bench-data/N`` when
absent) and evaluates the 12 standard metrics plain, with ``user_groups=``
(``--groupings`` columns of ``--groups`` random groups each, seeded) and with
``item_groups=`` (``--groups`` random groups of items, an item in one or two:
``Result.item_groups`` at k = 100), in one process, after one untimed warm-up
each; prints the median times and their ratios to plain.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
METRICS = [f"{m}@10,100" for m in ("precision", "recall", "ndcg", "ap", "rr", "hit_rate")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=5)
    parser.add_argument("--groupings", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = ROOT / "bench-data" / str(args.users)
    if not (data / "recs.parquet").exists():
        make = [sys.executable, str(ROOT / "benchmarks" / "workload.py")]
        subprocess.run([*make, "--users", str(args.users), "--out", str(data)], check=True)
    import receval

    recs = pq.read_table(data / "recs.parquet")
    truth = pq.read_table(data / "truth.parquet")
    users = np.unique(truth.column("user").to_numpy())
    rng = np.random.default_rng(0)
    groups = pd.DataFrame(
        {"user": users}
        | {f"grouping{j}": rng.integers(0, args.groups, len(users)) for j in range(args.groupings)}
    )
    items = np.unique(recs.column("item").to_numpy())
    item_groups = pd.DataFrame(
        {"item": np.concatenate([items, items[::2]])}
        | {"group": rng.integers(0, args.groups, len(items) + len(items[::2]))}
    ).drop_duplicates()
    ways = {"plain": {}, "user_groups": {"user_groups": groups}}
    ways["item_groups"] = {"item_groups": item_groups}
    for kw in ways.values():
        receval.evaluate(recs, truth, METRICS, **kw)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, kw in ways.items():
            started = time.perf_counter()
            receval.evaluate(recs, truth, METRICS, **kw)
            times[name].append(time.perf_counter() - started)
    plain, grouped, by_item = (statistics.median(times[k]) for k in ways)
    print(
        f"{args.users} users, {recs.num_rows} rows: plain {plain:.2f} s; "
        f"user_groups ({args.groupings} grouping(s) of {args.groups}) {grouped:.2f} s "
        f"({grouped / plain:.2f}x); item_groups ({args.groups} groups of "
        f"{len(items)} items) {by_item:.2f} s ({by_item / plain:.2f}x); target <= 1.30x"
    )


if __name__ == "__main__":
    main()
