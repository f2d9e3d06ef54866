"""Next-item evaluation against ``evaluate`` on the same list rows (issue #36 point 6).

    python benchmarks/next_items.py --sessions 10000 [--steps 10] [--k 100] [--repeat 3]

Makes ``--sessions`` sessions of ``--steps`` + 1 items (seeded) and a list of
``--k`` ranked items after each prefix (sessions × steps × k list rows), then
times, in one process after one untimed warm-up each:

* ``evaluate_next_items(lists, sessions, ...)`` with ``target="next"`` and
  ``target="remaining"``;
* ``evaluate(recs, truth, ...)`` of the same rows, each step its own user and
  the next item its truth (what next-item evaluation reduces to);

and prints the median times, list rows per second and their ratios (the
target: the same per-row speed as ``evaluate``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

METRICS = [f"{m}@10,100" for m in ("precision", "recall", "ndcg", "ap", "rr", "hit_rate")]


def workload(sessions: int, steps: int, k: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The sessions, their lists, and the same rows as ``evaluate``'s inputs."""
    rng = np.random.default_rng(seed)
    n_items = 50_000
    length = steps + 1
    items = rng.integers(0, n_items, size=(sessions, length))
    session_frame = pd.DataFrame(
        {
            "session": np.repeat(np.arange(sessions), length),
            "item": items.ravel(),
            "step": np.tile(np.arange(length), sessions),
        }
    )
    units = sessions * steps
    # each list: k items near the session's next item (so that some hit), ranks 1..k
    nxt = items[:, 1:].ravel()
    offsets = rng.integers(-3 * k, 3 * k, size=(units, k))
    listed = (nxt[:, None] + offsets) % n_items
    unit = np.repeat(np.arange(units), k)
    lists = pd.DataFrame(
        {
            "session": unit // steps,
            "step": unit % steps + 1,
            "item": listed.ravel(),
            "rank": np.tile(np.arange(1, k + 1), units),
        }
    )
    recs = pd.DataFrame({"user": unit, "item": listed.ravel(), "rank": lists["rank"]})
    truth = pd.DataFrame({"user": np.arange(units), "item": nxt})
    return {"sessions": session_frame, "lists": lists, "recs": recs, "truth": truth}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import receval

    data = workload(args.sessions, args.steps, args.k)
    rows = len(data["lists"])
    ways = {
        "evaluate": lambda: receval.evaluate(
            data["recs"], data["truth"], METRICS, duplicates="keep"
        ),
        "next_items next": lambda: receval.evaluate_next_items(
            data["lists"], data["sessions"], METRICS, duplicates="keep"
        ),
        "next_items remaining": lambda: receval.evaluate_next_items(
            data["lists"], data["sessions"], METRICS, target="remaining", duplicates="keep"
        ),
    }
    for run in ways.values():
        run()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, run in ways.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times["evaluate"])
    print(f"{args.sessions} sessions x {args.steps} steps x {args.k} items = {rows} list rows")
    for name in ways:
        t = statistics.median(times[name])
        print(f"  {name:<22} {t:7.2f} s  {rows / t / 1e6:6.2f} M rows/s  {t / base:5.2f}x")


if __name__ == "__main__":
    main()
