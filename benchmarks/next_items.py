"""Next-item evaluation against ``evaluate`` on the same list rows (issue #36 point 6).

    python benchmarks/next_items.py --sessions 10000 [--steps 10] [--k 100] [--repeat 3]
        [--lists table|callable] [--batch-size 10000] [--only next,remaining]

Makes ``--sessions`` sessions of ``--steps`` + 1 items (seeded) and a list of
``--k`` ranked items after each prefix (sessions × steps × k list rows), then
times, in one process after one untimed warm-up each, interleaved:

* ``evaluate(recs, truth, ...)`` of the same rows, each step its own user and
  the next item its truth (what ``target="next"`` reduces to);
* ``evaluate_next_items(lists, sessions, ...)`` with ``target="next"``;
* ``evaluate(recs, truth, ...)`` with the truth of ``target="remaining"`` (the
  distinct items of the rest of each session: up to ``--steps`` rows a step);
* ``evaluate_next_items`` with ``target="remaining"``;

and prints each one's best and median wall time and process CPU time (all
threads; steadier than the wall time on a shared machine), the list rows per
second, and each next-item run's ratio to ``evaluate`` on the same truth (the
target: the same per-row speed). ``--lists callable`` hands the lists as a
callable (``lists(prefixes)``: the rows of the batch's sessions, sliced from
the table) instead of the table; ``--only`` times a subset (``evaluate`` runs
are always timed beside the next-item runs they are compared with).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

METRICS = [f"{m}@10,100" for m in ("precision", "recall", "ndcg", "ap", "rr", "hit_rate")]


def workload(sessions: int, steps: int, k: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The sessions, their lists, and the same rows as ``evaluate``'s inputs
    (``truth``: each step's next item; ``truth_remaining``: the distinct items
    of the rest of its session, in session order)."""
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
    listed = ((nxt[:, None] + offsets) % n_items).ravel()
    del offsets
    unit = np.repeat(np.arange(units), k)
    ranks = np.tile(np.arange(1, k + 1), units)
    lists = pd.DataFrame(
        {"session": unit // steps, "step": unit % steps + 1, "item": listed, "rank": ranks}
    )
    recs = pd.DataFrame({"user": unit, "item": listed, "rank": ranks}, copy=False)
    truth = pd.DataFrame({"user": np.arange(units), "item": nxt})
    # remaining: for step t (0-based position t..steps), the first occurrence of each item
    later_u, later_i = [], []
    for t in range(1, length):
        rest = items[:, t:]
        first = np.ones(rest.shape, dtype=bool)
        for j in range(1, rest.shape[1]):  # an item seen earlier in the rest: not again
            first[:, j] = (rest[:, :j] != rest[:, j : j + 1]).all(axis=1)
        u = np.arange(sessions)[:, None] * steps + (t - 1)
        later_u.append(np.broadcast_to(u, rest.shape)[first])
        later_i.append(rest[first])
    u_all, i_all = np.concatenate(later_u), np.concatenate(later_i)
    order = np.argsort(u_all, kind="stable")
    truth_remaining = pd.DataFrame({"user": u_all[order], "item": i_all[order]})
    return {
        "sessions": session_frame,
        "lists": lists,
        "recs": recs,
        "truth": truth,
        "truth_remaining": truth_remaining,
    }


def sliced(lists: pd.DataFrame) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A callable giving, for a batch of prefixes, the rows of the batch's
    sessions (sessions 0..n-1 in order: a slice of the table)."""
    bounds = np.searchsorted(lists["session"].to_numpy(), np.arange(lists["session"].iat[-1] + 2))

    def lists_of(prefixes: pd.DataFrame) -> pd.DataFrame:
        first, last = int(prefixes["session"].iat[0]), int(prefixes["session"].iat[-1])
        return lists.iloc[bounds[first] : bounds[last + 1]]

    return lists_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lists", choices=("table", "callable"), default="table")
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--only", default="next,remaining", help="next, remaining or both")
    args = parser.parse_args()
    import receval

    data = workload(args.sessions, args.steps, args.k)
    rows = len(data["lists"])
    lists: Any = data["lists"] if args.lists == "table" else sliced(data["lists"])
    targets = [t for t in ("next", "remaining") if t in args.only.split(",")]
    ways: dict[str, Callable[[], Any]] = {}
    for target in targets:
        truth = data["truth"] if target == "next" else data["truth_remaining"]
        ways[f"evaluate ({target} truth)"] = lambda truth=truth: receval.evaluate(
            data["recs"], truth, METRICS, duplicates="keep"
        )
        ways[f"next_items {target}"] = lambda target=target: receval.evaluate_next_items(
            lists, data["sessions"], METRICS, target=target, duplicates="keep",
            batch_size=args.batch_size,
        )  # fmt: skip
    for run in ways.values():
        run()  # warm-up
    wall: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    load = []
    for _ in range(args.repeat):
        for name, run in ways.items():
            w, c = time.perf_counter(), time.process_time()
            run()
            cpu[name].append(time.process_time() - c)
            wall[name].append(time.perf_counter() - w)
            load.append(os.getloadavg()[0])
    print(
        f"{args.sessions} sessions x {args.steps} steps x {args.k} items = {rows} list rows "
        f"(lists as a {args.lists}); load average {min(load):.1f}-{max(load):.1f}"
    )
    print(f"  {'':<26} {'wall best':>9} {'median':>7} {'cpu best':>9} {'median':>7} "
          f"{'M rows/s':>8} {'ratio wall':>10} {'ratio cpu':>9}")  # fmt: skip
    base = ""
    for name in ways:
        if name.startswith("evaluate"):
            base = name
        w, c = min(wall[name]), min(cpu[name])
        print(
            f"  {name:<26} {w:9.2f} {statistics.median(wall[name]):7.2f} {c:9.2f} "
            f"{statistics.median(cpu[name]):7.2f} {rows / w / 1e6:8.2f} "
            f"{w / min(wall[base]):9.3f}x {c / min(cpu[base]):8.3f}x"
        )


if __name__ == "__main__":
    main()
