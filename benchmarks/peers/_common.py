"""Shared harness for one library's benchmark run (one library per process).

Every runner does the same three steps and reports them the same way:

1. read:    ``pyarrow.parquet.read_table`` of recs and truth (the same step for
            every library; timed as ``read_s``);
2. compute: conversion of the already-loaded Arrow tables into the library's
            input, plus the library's metric computation (timed together as
            ``compute_s``; JIT libraries are warmed up on a tiny input first, in
            the same process, and that warm-up is not timed);
3. report:  the process's peak resident memory (``ru_maxrss``), the library's
            version and the per-metric means, as one JSON object on stdout and,
            with ``--out``, in a file.

Only NumPy and PyArrow are imported here, so a runner can be executed by an
interpreter that has nothing but the library under test installed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# The standard metric set, in receval's canonical names (the table's rows).
STANDARD_METRICS = [
    f"{m}@{k}" for m in ("precision", "recall", "ndcg", "ap", "rr", "hit_rate") for k in (10, 100)
]
STANDARD_SPEC = [
    "precision@10,100",
    "recall@10,100",
    "ndcg@10,100",
    "ap@10,100",
    "rr@10,100",
    "hit_rate@10,100",
]


def peak_rss_mib() -> float:
    # Linux reports ru_maxrss in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def warm_reader() -> None:
    """Read a tiny Parquet file from memory once, untimed, so that the timed read
    of every library pays no one-off start-up cost of the Parquet reader."""
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"user": pa.array([1], pa.int64())}), buf)
    pq.read_table(pa.BufferReader(buf.getvalue()))


def read_inputs(recs_path: str, truth_path: str) -> tuple[pa.Table, pa.Table, float]:
    t0 = time.perf_counter()
    recs = pq.read_table(recs_path)
    truth = pq.read_table(truth_path)
    return recs, truth, time.perf_counter() - t0


def tiny_tables(n_users: int = 200) -> tuple[pa.Table, pa.Table]:
    """A tiny input shaped like the workload (its generator, another seed), for
    warming up JIT-compiled libraries: every code path the real input takes
    (short and missing lists, users without truth) is compiled before timing."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import workload

    recs, truth, _, _ = workload.generate_block(12345, 0, 0, n_users, workload._popularity(12345))
    return recs, truth


def run(
    library: str,
    version: Callable[[], str],
    compute: Callable[[pa.Table, pa.Table], dict[str, float]],
    *,
    convention: dict[str, Any],
    warmup: bool = False,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """Parse the command line, read, (warm up,) compute, report."""
    ap = argparse.ArgumentParser(description=f"Benchmark {library} on a recs/truth workload")
    ap.add_argument("--recs", required=True, help="recs.parquet (user, item, score, rank)")
    ap.add_argument("--truth", required=True, help="truth.parquet (user, item, relevance)")
    ap.add_argument("--out", help="write the JSON result here too")
    args = ap.parse_args(argv)

    warm_reader()
    if warmup:
        compute(*tiny_tables())
        gc.collect()

    recs, truth, read_s = read_inputs(args.recs, args.truth)
    t0 = time.perf_counter()
    metrics = compute(recs, truth)
    compute_s = time.perf_counter() - t0
    result = {
        "library": library,
        "version": version(),
        "python": sys.executable,
        "metrics": {
            k: float(metrics[k])
            for k in [
                *convention["metrics"],
                *(m for m in metrics if m not in convention["metrics"]),
            ]
            if k in metrics
        },
        "read_s": round(read_s, 4),
        "compute_s": round(compute_s, 4),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "recs_rows": recs.num_rows,
        "truth_rows": truth.num_rows,
        "convention": convention,
    }
    text = json.dumps(result, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return result
