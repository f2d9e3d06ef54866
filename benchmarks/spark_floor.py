"""What Spark itself costs before any metric: the floor under issue #18's target.

    python benchmarks/spark_floor.py --users 100000 --repeat 3

On the workload of ``benchmarks/spark.py`` (``workload.py``; generated under
``--data``/<users> if missing) and its session (``--master``, default
``local[2]``; ``--driver-memory``; ``--conf KEY=VALUE``), one
warm session, each plan run ``--repeat`` times after one untimed run. Every
plan reads both Parquet files and puts the rows of a user together as the
engine does (the recommendations' (user, item, rank) and the truth's (user,
item, grade) as one table with a side column, hash-partitioned by user into
the session's parallelism), then:

- ``shuffle``: a sum in the JVM (read + shuffle, nothing else);
- ``shuffle+sort``: the same after sorting each partition by (user, side,
  value, item) in the JVM;
- ``to python, N columns``: the first N of (user, item, value, side) handed to
  Python through ``mapInArrow``, which only counts the rows (what moving
  the rows costs: the engine's Python workers read exactly these four);
- ``windows``: the JVM finds each recommendation's grade (a window by
  (user, item)) and its position (a window by user ordered by rank), and
  only the truth rows, the hits and one row per user go to Python;
- ``receval, 12 metrics``: the engine itself (``receval.evaluate`` on the two
  DataFrames: P/R/nDCG/AP/RR/HR at 10 and 100), for scale.

Prints the median seconds of each plan. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _count(batches: Any) -> Any:
    import pyarrow as pa

    n = 0
    for batch in batches:
        n += batch.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def plans(spark: Any, folder: Path) -> dict[str, Any]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def both() -> Any:
        recs = spark.read.parquet(str(folder / "recs.parquet")).select(
            "user", "item", F.col("rank").cast("double").alias("v")
        )
        truth = spark.read.parquet(str(folder / "truth.parquet")).select(
            "user", "item", F.col("relevance").cast("double").alias("v")
        )
        recs = recs.withColumn("s", F.lit(0).cast("byte"))
        truth = truth.withColumn("s", F.lit(1).cast("byte"))
        return recs.unionByName(truth).repartition("user")

    def to_python(df: Any) -> int:
        return sum(row.n for row in df.mapInArrow(_count, "n long").collect())

    def windows() -> int:
        df = both()
        pair = Window.partitionBy("user", "item")
        df = df.withColumn("g", F.max(F.when(F.col("s") == 1, F.col("v"))).over(pair))
        df = df.withColumn(
            "pos", F.row_number().over(Window.partitionBy("user").orderBy("s", "v", "item"))
        )
        keep = (F.col("s") == 1) | F.col("g").isNotNull() | (F.col("pos") == 1)
        return to_python(df.where(keep).select("user", "item", "v", "s", "g", "pos"))

    out: dict[str, Any] = {
        "shuffle": lambda: both().agg(F.sum("v")).first()[0],
        "shuffle+sort": lambda: (
            both().sortWithinPartitions("user", "s", "v", "item").agg(F.sum("v")).first()[0]
        ),
    }
    columns = ["user", "item", "v", "s"]
    for n in (1, 2, 4):
        out[f"to python, {n} column{'s' if n > 1 else ''}"] = lambda n=n: to_python(
            both().select(*columns[:n])
        )
    out["windows"] = windows

    def engine() -> Any:
        import receval

        recs = spark.read.parquet(str(folder / "recs.parquet"))
        truth = spark.read.parquet(str(folder / "truth.parquet"))
        metrics = [
            f"{m}@{k}"
            for m in ("precision", "recall", "ndcg", "ap", "rr", "hit_rate")
            for k in (10, 100)
        ]
        return receval.evaluate(recs, truth, metrics).summary

    out["receval, 12 metrics"] = engine
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--data", default=str(HERE.parent / "bench-data"), help="workload folder")
    ap.add_argument("--conf", action="append", help="extra Spark settings, KEY=VALUE")
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import spark as bench  # benchmarks/spark.py: the same session as its runs
    import workload

    folder = Path(args.data) / str(args.users)
    workload.ensure(args.users, folder)
    spark = bench._session(args)
    print(f"{args.users:,} users, {args.master}, median of {args.repeat} (after one untimed run)")
    for name, plan in plans(spark, folder).items():
        plan()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            plan()
            times.append(time.perf_counter() - start)
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"{name:24s} {statistics.median(times):6.2f} s  ({runs})", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
