"""Where the callable path of ``evaluate_next_items`` spends its CPU time
(issue #36 point 6): each stage's CPU time summed over the threads it runs on.

    python benchmarks/next_items_stages.py [--sessions 100000] [--target next]

Runs ``--sessions`` generated sessions (10 steps, 100-item lists made per
batch, as ``benchmarks/next_items.py --lists generated``) after a warm-up on
30,000, with receval's internal stages wrapped to add up their
``time.thread_time`` (the callable's too), then ``evaluate`` of the table of
``min(sessions, 30000)`` sessions with its pieces' time (``evaluate_pair``:
reading and kernels) counted the same way. Prints each stage's CPU seconds and
seconds per 10M list rows (= milliseconds per batch of 1M rows ÷ 10).
"""

from __future__ import annotations

import argparse
import collections
import os
import threading
import time
from typing import Any

import numpy as np
import pandas as pd
from next_items import METRICS, generated, session_items, workload

import receval
import receval.engines.driver as driver
import receval.engines.local as local
import receval.evaluation.accumulator as accumulator
import receval.evaluation.next_items as next_items

SPENT: dict[str, float] = collections.defaultdict(float)
LOCK = threading.Lock()


def counted(owner: Any, name: str, label: str | None = None) -> None:
    """Wrap ``owner.name`` to add its CPU time (the calling thread's) to SPENT."""
    f = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c = time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            with LOCK:
                SPENT[label or name] += time.thread_time() - c

    setattr(owner, name, wrapper)


def show(title: str, rows: int) -> None:
    print(title)
    for k, v in SPENT.items():
        print(f"  {k:<24} {v:7.3f} s cpu {v / rows * 1e7:7.3f} s per 10M rows")
    SPENT.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--target", choices=("next", "remaining"), default="next")
    args = parser.parse_args()
    n, target = args.sessions, args.target
    items = session_items(n, 10)
    sessions = pd.DataFrame(
        {
            "session": np.repeat(np.arange(n), 11),
            "item": items.ravel(),
            "step": np.tile(np.arange(11), n),
        }
    )
    make = generated(items, 100)

    def lists(prefixes: pd.DataFrame) -> Any:
        c = time.thread_time()
        made = make(prefixes)
        SPENT["the callable (not receval)"] += time.thread_time() - c
        return made

    def run(frame: pd.DataFrame) -> Any:
        return receval.evaluate_next_items(lists, frame, METRICS, target=target, duplicates="keep")

    run(sessions.iloc[: 30_000 * 11])  # warm-up
    SPENT.clear()
    for owner, name in [
        (next_items, "_raw_lists"),
        (next_items, "_run_heads"),
        (next_items, "_read_lists"),
        (next_items, "_inside"),
        (next_items._Sessions, "prefixes"),
        (next_items._Sessions, "batch_truth"),
        (accumulator, "read_recs"),
        (accumulator, "read_truth"),
        (local, "evaluate_pair"),
        (accumulator.Accumulator, "compute"),
        (next_items, "_assembled"),
    ]:
        counted(owner, name)
    w, c = time.perf_counter(), time.process_time()
    run(sessions)
    w, c = time.perf_counter() - w, time.process_time() - c
    rows = n * 1000
    show(
        f"evaluate_next_items, {n} sessions generated ({rows} rows): wall {w:.2f} s, "
        f"CPU {c:.2f} s ({c / rows * 1e7:.3f} s per 10M rows), load {os.getloadavg()[0]:.2f}",
        rows,
    )
    data = workload(min(n, 30_000), 10, 100)
    truth = data["truth"] if target == "next" else data["truth_remaining"]
    receval.evaluate(data["recs"], truth, METRICS, duplicates="keep")  # warm-up
    counted(driver, "evaluate_pair", "evaluate_pair (reads too)")
    local.evaluate_pair = driver.evaluate_pair
    SPENT.clear()
    w, c = time.perf_counter(), time.process_time()
    receval.evaluate(data["recs"], truth, METRICS, duplicates="keep")
    w, c = time.perf_counter() - w, time.process_time() - c
    rows = len(data["recs"])
    show(
        f"evaluate, the table ({rows} rows): wall {w:.2f} s, CPU {c:.2f} s "
        f"({c / rows * 1e7:.3f} s per 10M rows), load {os.getloadavg()[0]:.2f}",
        rows,
    )


if __name__ == "__main__":
    main()
