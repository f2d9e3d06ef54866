"""Memory and time of reading a large CSV (issue #17 point 7).

Target: peak memory at most 2x the file's size plus the columns kept. The
standard workload (``workload.py``) is written as CSV once; then, in a fresh
process each time (so peaks do not mix), receval reads the recommendations
file (``receval.io.files.read_file``) and evaluates it end to end
(``python -m receval evaluate``). Each process reports its peak resident
memory (``ru_maxrss``) and its time; the table gives them and the ratios to
the file's size. ``--src`` runs another checkout (e.g. before a change), so
both can be measured in one run:

    python benchmarks/csv_memory.py --users 100000 --src /path/to/old/src --src src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_READ = """
import json, resource, sys, time
import pyarrow as pa
t = time.perf_counter()
from receval.io.files import read_file
table, info = read_file(sys.argv[1], role="recommendations")
kept = table.nbytes
print(json.dumps({"seconds": time.perf_counter() - t, "kept": kept,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

_EVALUATE = """
import json, resource, runpy, sys, time, contextlib, io
t = time.perf_counter()
sys.argv = ["receval", "evaluate", sys.argv[1], sys.argv[2], "-m", "ndcg@10", "-m", "recall@10",
            "-q", "-o", "json"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        runpy.run_module("receval", run_name="__main__")
    except SystemExit as e:
        assert not e.code, e.code
print(json.dumps({"seconds": time.perf_counter() - t,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def csv_workload(users: int, folder: Path) -> tuple[Path, Path]:
    """The standard workload as recs.csv and truth.csv in ``folder`` (made once)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    data = folder / "data"
    if not (data / "recs.parquet").exists():
        subprocess.run(
            [sys.executable, str(HERE / "workload.py"), "--users", str(users), "--out", str(data)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    recs, truth = folder / "recs.csv", folder / "truth.csv"
    for parquet, csv in ((data / "recs.parquet", recs), (data / "truth.parquet", truth)):
        if not csv.exists():
            pcsv.write_csv(pq.read_table(parquet), csv)
    return recs, truth


def _run(code: str, src: str, *args: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": src, "RECEVAL_MALLOC": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--src", action="append", help="a checkout's src folder (repeatable)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per case (best time, max peak)")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    srcs = args.src or [str(HERE.parent / "src")]
    folder = Path(args.dir or tempfile.mkdtemp(prefix="receval-csvmem-"))
    folder.mkdir(parents=True, exist_ok=True)
    recs, truth = csv_workload(args.users, folder)
    size = recs.stat().st_size
    mib = 2**20
    print(
        f"# recs.csv {size / mib:.0f} MiB ({args.users} users), truth.csv "
        f"{truth.stat().st_size / mib:.0f} MiB; python {sys.version.split()[0]}"
    )
    print("| src | step | time s | peak MiB | peak / file | columns kept MiB |")
    print("|---|---|---:|---:|---:|---:|")
    for _ in range(1):
        for src in srcs:
            for step in ("read", "evaluate"):
                runs = [
                    _run(_READ, src, str(recs))
                    if step == "read"
                    else _run(_EVALUATE, src, str(recs), str(truth))
                    for _ in range(args.repeat)
                ]
                best = min(r["seconds"] for r in runs)
                peak = max(r["peak"] for r in runs)
                kept = runs[0].get("kept")
                print(
                    f"| {src} | {step} | {best:.2f} | {peak / mib:.0f} | {peak / size:.2f} | "
                    + (f"{kept / mib:.0f} |" if kept else "- |")
                )


if __name__ == "__main__":
    main()
