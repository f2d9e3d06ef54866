"""The Spark engine with text user ids: what checking them costs.

    python benchmarks/spark_text_ids.py [--users 100000] [--repeat 3]
    python benchmarks/spark_text_ids.py --against OLD/src --rounds 2 [--respelled]

Text user ids are grouped as written on Spark, so each partition checks its
users for one written apart from the text rule's form (``"7.0"`` for 7:
``receval.records.respelled``) and the engine groups again by that form when
one is (``receval.records.text_rule``). This benchmark times ``evaluate`` on
Spark (``local[2]``) of the standard workload (``workload.py``, generated under
``--data``/<users> if missing) with the user ids as digit strings (Spark casts
them from the files' integers, as text read from a CSV would be), the 12
standard metrics: the median of ``--repeat`` runs after one warm-up, in one
session per process.

With ``--against`` another tree's ``src`` (``git archive`` of an older commit,
its compiled module built), each of ``--rounds`` rounds runs this script in
fresh processes for both trees, each first in turn, and prints both medians: on a
busy machine only figures taken side by side compare. Also ``--respelled``:
every tenth user written ``"<id>.0"`` in the truth, so the engine groups
again (the cost of a first pass that finds one). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
METRICS = ["precision@10,100", "recall@10,100", "ndcg@10,100", "ap@10,100", "rr@10,100"]
METRICS += ["hit_rate@10,100"]


def _run(args: argparse.Namespace) -> None:
    """One process: this interpreter's receval (PYTHONPATH) on a local session."""
    warnings.simplefilter("ignore")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    sys.path.insert(0, str(HERE))
    import workload  # type: ignore[import-not-found]
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import receval

    folder = Path(args.data) / str(args.users)
    workload.ensure(args.users, folder, seed=0)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    user = F.col("user").cast("string")
    recs = spark.read.parquet(str(folder / "recs.parquet")).withColumn("user", user)
    truth = spark.read.parquet(str(folder / "truth.parquet")).withColumn("user", user)
    if args.respelled:
        apart = (F.col("user").cast("long") % 10) == 0
        truth = truth.withColumn("user", F.when(apart, F.concat(user, F.lit(".0"))).otherwise(user))
    receval.evaluate(recs, truth, METRICS)  # warm
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = receval.evaluate(recs, truth, METRICS)
        times.append(time.perf_counter() - t0)
    spark.stop()
    print(f"RESULT {statistics.median(times):.3f} {res.summary['ndcg@10']!r} {receval.__file__}")


def _in_process(src: Path, argv: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, __file__, "--one", *argv], env=env, capture_output=True, text=True
    )
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")]
    if not line:
        raise SystemExit(out.stderr[-3000:])
    seconds, ndcg, where = line[0].split()[1:]
    print(f"  {seconds} s  ndcg@10 {ndcg}  ({Path(where).parents[1]})", flush=True)
    return float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default="bench-data")
    parser.add_argument("--respelled", action="store_true", help="every tenth truth user '<id>.0'")
    parser.add_argument("--against", help="another tree's src: rounds of both, alternating")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _run(args)
        return
    argv = [f"--users={args.users}", f"--repeat={args.repeat}", f"--data={args.data}"]
    argv += ["--respelled"] if args.respelled else []
    trees = [SRC] + ([Path(args.against)] if args.against else [])
    got: dict[Path, list[float]] = {t: [] for t in trees}
    for r in range(args.rounds if args.against else 1):
        print(f"round {r + 1}:")
        for tree in trees if r % 2 == 0 else trees[::-1]:  # each tree first in turn
            got[tree].append(_in_process(tree, argv))
    for tree, seconds in got.items():
        print(f"{tree}: median {statistics.median(seconds):.3f} s over {len(seconds)} rounds")


if __name__ == "__main__":
    main()
