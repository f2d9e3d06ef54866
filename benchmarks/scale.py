"""Files larger than memory: ``receval evaluate`` on the workload's Parquet
files at several sizes, each run in a fresh process, with its wall time and
peak memory (issue #4: 5M users under 3 GiB, time linear in size).

    python benchmarks/scale.py --users 1000000,5000000 [--data-root bench-data]
    python benchmarks/scale.py --users 1000000 --partition   # as if not sorted

Each size's workload is generated once (``workload.py``, ~30 s and 1 GB per
million users) and reused. The run is the command line itself
(``receval.cli.main``) with the 12 standard metrics; ``--partition`` makes the
reader hash-partition the files to temporary Parquet buckets, the path taken
by files that are not sorted by user.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

METRICS = ["precision@10,100", "recall@10,100", "ndcg@10,100", "ap@10,100", "rr@10,100"]
METRICS += ["hit_rate@10,100"]


def one(recs: str, truth: str, partition: bool) -> None:
    """The child: one evaluation from the command line, then its numbers."""
    import functools

    from receval.cli import main
    from receval.io import stream

    if partition:
        stream.pairs = functools.partial(stream.pairs, sorted_files=False)
    argv = ["evaluate", recs, truth, "-q", "-o", "json"]
    for m in METRICS:
        argv += ["-m", m]
    t0 = time.perf_counter()
    code = main(argv)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"exit": code, "wall_s": round(wall, 3), "peak_rss_mib": round(peak, 1)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", default="1000000,5000000", help="comma-separated sizes")
    ap.add_argument("--data-root", default=str(HERE.parent / "bench-data"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--partition", action="store_true", help="force the partitioning path")
    ap.add_argument("--one", nargs=2, metavar=("RECS", "TRUTH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(*args.one, args.partition)
        return
    rows = []
    for users in [int(u) for u in args.users.split(",")]:
        data = Path(args.data_root) / str(users)
        meta = workload.ensure(users, data, args.seed)
        cmd = [sys.executable, __file__, "--one", str(data / "recs.parquet")]
        cmd += [str(data / "truth.parquet")] + (["--partition"] if args.partition else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(p.stderr[-3000:])
        lines = p.stdout.strip().splitlines()
        res = json.loads(lines[-1])
        res.update(users=users, recs_rows=meta["recs_rows"])
        rows.append(res)
        print(
            f"{users:>10,} users {meta['recs_rows']:>12,} rows: {res['wall_s']:7.2f} s, "
            f"peak {res['peak_rss_mib']:7.0f} MiB, "
            f"{meta['recs_rows'] / res['wall_s'] / 1e6:.1f}M rows/s",
            flush=True,
        )
    print(
        f"\nmachine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; path: {'partition' if args.partition else 'merge'}"
    )
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        scale = b["recs_rows"] / a["recs_rows"]
        print(
            f"time {b['users']:,} / {a['users']:,} users = {b['wall_s'] / a['wall_s']:.2f} "
            f"for {scale:.2f}x the rows ({b['wall_s'] / (a['wall_s'] * scale):.2f} of linear)"
        )


if __name__ == "__main__":
    main()
