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
- ``collect, structs`` / ``collect, arrays`` (keys ``collect``, ``arrays``):
  the same rows grouped by user in the JVM first (``collect_list`` of a
  struct of (item, value, side), or one ``collect_list`` per column), one row
  per user handed to Python and flattened there (Arrow's list offsets);
- ``collect, sides joined`` (key ``sides``): each side grouped by user apart
  (a ``collect_list`` per column: item and value) and the two joined on the
  user (full outer), flattened in Python; ``collect, sides joined, structs``
  (key ``sides-structs``): the same with a list of (item, value) structs.
  The engine's plan since issue #33 point 5 (``sides``);
- ``receval, 12 metrics``: the engine itself (``receval.evaluate`` on the two
  DataFrames: P/R/nDCG/AP/RR/HR at 10 and 100), for scale;
  ``receval, 12 metrics, rows`` (key ``engine-rows``): the engine with every
  row through the shuffle, as before it grouped the rows into lists;
- ``receval, 12 metrics + largest grade`` (key ``grade`` or ``engine+grade``):
  the engine and then the Spark job that reads the largest grade of the
  truth, which the engine ran before every evaluation until it ran it only
  for a metric bounded by it (ERR): that job's cost.

``--plans`` runs only some (keys: ``shuffle``, ``sort``, ``py1``, ``py2``,
``py4`` or ``floor`` (the floor plan: ``to python, 4 columns``), ``windows``,
``collect``, ``arrays``, ``sides``, ``sides-structs``, ``engine``,
``engine-rows``, ``grade``; or the full names), e.g. at large sizes

    python benchmarks/spark_floor.py --users 1000000 --repeat 2 --plans floor,engine,grade

Each plan runs ``--untimed`` times (default 1) untimed, then the plans are
timed interleaved, their
order alternating by repeat (forward, backward, ...). Prints each timed run,
then per plan the median seconds, its ratio to the floor plan, the engine's
ratio to the floor plan in each repeat (neighbouring runs), and the peak RSS
of each role over the plan's timed runs, sampled as ``benchmarks/spark.py``
does: driver Python (this process), the JVM (local mode: driver and
executors in one) and the Python workers (``pyspark.daemon`` and its forks).
In one warm session the JVM's RSS only grows, so its peak per plan is an
upper bound of what the plan needs; ``benchmarks/spark.py`` measures each
engine in a fresh process. Also per plan: the CPU seconds of each role
(median over the repeats; the driver's includes the sampling thread) and
the CPU total's ratio to the floor plan's, which other work on a shared
machine disturbs far less than the wall time. ``--json FILE`` writes it all.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
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


def _flat(batches: Any) -> Any:
    """Rows grouped by user in the JVM (one row per user: the user, then list
    columns) back to one row per (user, list element), as the engine would
    read them, and counted: each list column flattened (a list of structs
    into its fields), the user repeated by the lists' lengths (Arrow's
    offsets; no per-row Python)."""
    import numpy as np
    import pyarrow as pa

    n = 0
    for batch in batches:
        columns = {}
        for name in batch.schema.names[1:]:
            lists = batch.column(name)
            values = lists.flatten()
            if pa.types.is_struct(values.type):
                for field, child in zip(values.type, values.flatten(), strict=True):
                    columns[f"{name}.{field.name}"] = child
            else:
                columns[name] = values
            lengths = np.diff(lists.offsets.to_numpy())
        users = batch.column(0).take(np.repeat(np.arange(batch.num_rows), lengths))
        table = pa.table({"user": users, **columns})
        n += table.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def _flat_sides(batches: Any) -> Any:
    """One row per user with the lists of each side (recommendations' item
    and value, truth's item and value) back to one row per (user, element),
    both sides in one table with a side column, and counted."""
    import numpy as np
    import pyarrow as pa

    n = 0
    for batch in batches:
        sides = []
        for side, (items, values) in enumerate((("ri", "rv"), ("ti", "tv"))):
            lists = batch.column(items)
            lengths = np.diff(lists.offsets.to_numpy())
            users = batch.column(0).take(np.repeat(np.arange(batch.num_rows), lengths))
            sides.append(
                pa.table(
                    {
                        "user": users,
                        "item": lists.flatten(),
                        "v": batch.column(values).flatten(),
                        "s": pa.array(np.full(len(users), side, np.int8)),
                    }
                )
            )
        n += pa.concat_tables(sides).num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def _flat_structs(batches: Any) -> Any:
    """As :func:`_flat_sides`, each side's list a list of (item, value) structs."""
    import numpy as np
    import pyarrow as pa

    n = 0
    for batch in batches:
        sides = []
        for side, name in enumerate(("r", "t")):
            lists = batch.column(name)
            lengths = np.diff(lists.offsets.to_numpy())
            users = batch.column(0).take(np.repeat(np.arange(batch.num_rows), lengths))
            item, value = lists.flatten().flatten()
            sides.append(
                pa.table(
                    {
                        "user": users,
                        "item": item,
                        "v": value,
                        "s": pa.array(np.full(len(users), side, np.int8)),
                    }
                )
            )
        n += pa.concat_tables(sides).num_rows
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

    # grouped in the JVM first (MLlib's collect_list: a partial aggregation on
    # the map side, so the shuffle carries about one row per user and split)
    def collected(df: Any) -> int:
        return sum(row.n for row in df.mapInArrow(_flat, "n long").collect())

    out["collect, structs"] = lambda: collected(
        both().groupBy("user").agg(F.collect_list(F.struct("item", "v", "s")).alias("l"))
    )
    out["collect, arrays"] = lambda: collected(
        both()
        .groupBy("user")
        .agg(
            F.collect_list("item").alias("item"),
            F.collect_list("v").alias("v"),
            F.collect_list("s").alias("s"),
        )
    )

    def sides() -> int:
        recs = spark.read.parquet(str(folder / "recs.parquet"))
        truth = spark.read.parquet(str(folder / "truth.parquet"))
        r = recs.groupBy("user").agg(
            F.collect_list("item").alias("ri"),
            F.collect_list(F.col("rank").cast("double")).alias("rv"),
        )
        t = truth.groupBy("user").agg(
            F.collect_list("item").alias("ti"),
            F.collect_list(F.col("relevance").cast("double")).alias("tv"),
        )
        df = r.join(t, "user", "full_outer")
        return sum(row.n for row in df.mapInArrow(_flat_sides, "n long").collect())

    out["collect, sides joined"] = sides

    def sides_structs() -> int:
        recs = spark.read.parquet(str(folder / "recs.parquet"))
        truth = spark.read.parquet(str(folder / "truth.parquet"))
        r = recs.groupBy("user").agg(
            F.collect_list(F.struct("item", F.col("rank").cast("double").alias("v"))).alias("r")
        )
        t = truth.groupBy("user").agg(
            F.collect_list(F.struct("item", F.col("relevance").cast("double").alias("v"))).alias(
                "t"
            )
        )
        df = r.join(t, "user", "full_outer")
        return sum(row.n for row in df.mapInArrow(_flat_structs, "n long").collect())

    out["collect, sides joined, structs"] = sides_structs

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

    def engine_rows() -> Any:
        # the engine before it grouped each user's rows into lists in the JVM:
        # every row through the shuffle (what it still does with a missing value)
        from receval.engines.spark import Spark

        Spark.lists = False
        try:
            return engine()
        finally:
            Spark.lists = None

    out["receval, 12 metrics, rows"] = engine_rows

    def engine_and_grade() -> Any:
        # what the engine ran before it read the largest grade only for a metric
        # bounded by it (ERR): the same evaluation, and that Spark job over the truth
        got = engine()
        truth = spark.read.parquet(str(folder / "truth.parquet"))
        truth.agg(F.max("relevance")).first()
        return got

    out["receval, 12 metrics + largest grade"] = engine_and_grade
    return out


#: short keys of the plans (``--plans``)
KEYS = {
    "shuffle": "shuffle",
    "sort": "shuffle+sort",
    "py1": "to python, 1 column",
    "py2": "to python, 2 columns",
    "py4": "to python, 4 columns",
    "floor": "to python, 4 columns",
    "windows": "windows",
    "collect": "collect, structs",
    "arrays": "collect, arrays",
    "sides": "collect, sides joined",
    "sides-structs": "collect, sides joined, structs",
    "engine": "receval, 12 metrics",
    "engine-rows": "receval, 12 metrics, rows",
    "grade": "receval, 12 metrics + largest grade",
    "engine+grade": "receval, 12 metrics + largest grade",
}
FLOOR, ENGINE = "to python, 4 columns", "receval, 12 metrics"
GRADE = "receval, 12 metrics + largest grade"


def chosen(text: str | None) -> list[str]:
    """The plans named by ``--plans`` (keys or full names, comma-separated;
    full names may hold commas), in the order of :data:`KEYS`; all when None."""
    names = list(dict.fromkeys(KEYS.values()))
    if not text:
        return names
    tokens, picked, i = text.split(","), set(), 0
    while i < len(tokens):
        for j in range(len(tokens), i, -1):
            word = ",".join(tokens[i:j]).strip()
            if word in KEYS or word in names:
                picked.add(KEYS.get(word, word))
                i = j
                break
        else:
            raise SystemExit(
                f"--plans: unknown plan {tokens[i].strip()!r}; "
                f"keys: {', '.join(KEYS)}; names: {'; '.join(names)}"
            )
    return [n for n in names if n in picked]


def timed(runs: dict[str, Any], names: list[str], repeat: int, sample_ms: float) -> dict[str, Any]:
    """Each plan ``repeat`` times, interleaved: the order alternates by repeat
    (forward, backward, ...), so that drift on a shared machine falls on all
    plans alike; each timed run's RSS peaks by role (driver Python, JVM,
    Python workers) sampled as benchmarks/spark.py does."""
    import spark as bench

    out: dict[str, dict[str, Any]] = {
        n: {"times": [], "cpu": [], "roles": dict.fromkeys(bench.ROLES, 0.0)} for n in names
    }
    for rep in range(repeat):
        for name in names if rep % 2 == 0 else names[::-1]:
            sampler = bench.PeakSampler(os.getpid(), sample_ms / 1000)
            sampler.start()
            start = time.perf_counter()
            runs[name]()
            elapsed = time.perf_counter() - start
            memory = sampler.stop()
            peaks, cpu = memory["role_peak_mib"], memory["role_cpu_s"]
            out[name]["times"].append(elapsed)
            out[name]["cpu"].append(cpu)
            for role, mib in peaks.items():
                out[name]["roles"][role] = max(out[name]["roles"][role], mib)
            roles = f"peak MiB {bench._roles_text(peaks)}, CPU s {bench._roles_text(cpu, '.1f')}"
            print(f"  #{rep + 1} {name:24s} {elapsed:7.2f} s  {roles}", flush=True)
    return out


def _cpu(got: dict[str, Any]) -> tuple[dict[str, float], float]:
    """A plan's median CPU seconds per role, and the median of the runs' totals."""
    import spark as bench

    roles = {k: statistics.median(c[k] for c in got["cpu"]) for k in bench.ROLES}
    return roles, statistics.median(sum(c.values()) for c in got["cpu"])


def report(out: dict[str, Any], repeat: int) -> dict[str, Any]:
    """The table: median per plan, its ratio to the floor plan, the engine's
    ratio per repeat (runs of one repeat are neighbours in time), peaks by
    role, CPU seconds by role (median) and the plan's CPU total to the floor's."""
    import spark as bench

    floor = statistics.median(out[FLOOR]["times"]) if FLOOR in out else None
    floor_cpu = _cpu(out[FLOOR])[1] if FLOOR in out else None
    print(
        "\n| plan | median s | runs s | ÷ floor plan | peak RSS MiB driver Python / JVM / workers "
        "| CPU s driver Python / JVM / workers | CPU ÷ floor plan |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    summary: dict[str, Any] = {}
    for name, got in out.items():
        median = statistics.median(got["times"])
        ratio = median / floor if floor else None
        roles, cpu = _cpu(got)
        cpu_ratio = cpu / floor_cpu if floor_cpu else None
        runs = ", ".join(f"{t:.2f}" for t in got["times"])
        cells = ["–" if x is None else f"{x:.2f}×" for x in (ratio, cpu_ratio)]
        print(
            f"| {name} | {median:.2f} | {runs} | {cells[0]} | {bench._roles_text(got['roles'])} "
            f"| {bench._roles_text(roles, '.1f')} | {cells[1]} |"
        )
        summary[name] = {
            "median_s": median,
            "ratio_to_floor": ratio,
            "cpu_median_s": roles,
            "cpu_ratio_to_floor": cpu_ratio,
            **got,
        }
    for plan, key in (
        (ENGINE, "engine_over_floor_per_repeat"),
        (GRADE, "grade_over_floor_per_repeat"),
    ):
        if FLOOR not in out or plan not in out:
            continue
        pairs = [e / f for e, f in zip(out[plan]["times"], out[FLOOR]["times"], strict=True)]
        print(
            f"\n{plan} ÷ floor plan per repeat: "
            + ", ".join(f"{r:.2f}×" for r in pairs)
            + f" (median {statistics.median(pairs):.2f}×)"
        )
        summary[key] = pairs
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--data", default=str(HERE.parent / "bench-data"), help="workload folder")
    ap.add_argument("--conf", action="append", help="extra Spark settings, KEY=VALUE")
    ap.add_argument(
        "--plans",
        help="plans to run, comma-separated keys or names (default: all); keys: "
        + ", ".join(f"{k} ({v})" for k, v in KEYS.items()),
    )
    ap.add_argument(
        "--untimed", type=int, default=1, help="untimed warm-up runs of each plan (default 1)"
    )
    ap.add_argument("--sample-ms", type=float, default=50.0, help="RSS sampling period")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    names = chosen(args.plans)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import spark as bench  # benchmarks/spark.py: the same session as its runs
    import workload

    folder = Path(args.data) / str(args.users)
    meta = workload.ensure(args.users, folder)
    spark = bench._session(args)
    print(
        f"{args.users:,} users, {args.master}, spark.driver.memory={args.driver_memory}, "
        f"median of {args.repeat} (after {args.untimed} untimed run(s) of each plan; "
        "runs interleaved)",
        flush=True,
    )
    runs = plans(spark, folder)
    for _ in range(args.untimed):
        for name in names:
            start = time.perf_counter()
            runs[name]()
            print(f"  untimed {name:24s} {time.perf_counter() - start:7.2f} s", flush=True)
    out = timed(runs, names, args.repeat, args.sample_ms)
    summary = report(out, args.repeat)
    spark.stop()
    if args.json:
        doc = {"users": args.users, "meta": meta, "settings": vars(args), "plans": summary}
        Path(args.json).write_text(json.dumps(doc, indent=2, default=str) + "\n")
        print(f"# wrote {args.json}")


if __name__ == "__main__":
    main()
