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

``--lists generated`` is the bounded-memory run (issue #36 point 6 at 1M
sessions: 1G list rows, no table of them ever built):

    python benchmarks/next_items.py --lists generated --sessions 1000000 --repeat 1
        [--table-sessions 20000] [--table-repeat 3] [--batch-size 10000] [--only next]

makes only the ``--sessions`` sessions; the callable generates each batch's
lists as it is called (from a RNG seeded by the batch's first session, the
same recipe as the table's: ``--k`` items near each step's next item), so
the lists are never stored. It is timed ``--repeat`` times (the run of least CPU
time kept; give ``--repeat 1`` at 1M sessions) after a warm-up on the first
``--table-sessions`` sessions, then ``evaluate`` on the table workload of
``--table-sessions`` sessions (``--table-repeat`` times, default ``--repeat``;
the best kept). Printed: wall
and CPU time per list row of both, their ratio, and the peak RSS after the
generated run and after the table runs (the peak is the process's: the
generated run comes first). The callable's own time (making the lists) is
measured too (its wall time, and the CPU time of the thread that calls it:
the process's CPU time would count the pieces evaluated meanwhile), and each
run is also shown less that time: what receval spends (its CPU time exactly;
its wall time is a lower bound, as the callable runs while the previous batch
is evaluated on other threads).
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


N_ITEMS = 50_000


def session_items(sessions: int, steps: int, seed: int = 0) -> np.ndarray:
    """The sessions' items (sessions × steps + 1), seeded as :func:`workload`'s."""
    return np.random.default_rng(seed).integers(0, N_ITEMS, size=(sessions, steps + 1))


def generated(items: np.ndarray, k: int, seed: int = 0) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A callable that makes each batch's lists when called (nothing stored):
    for each step in the prefixes, ``k`` items near the session's next item
    (some hit), ranks 1..k, from a RNG seeded by (seed, the batch's first
    session): the same lists whatever the order of the calls."""

    def lists_of(prefixes: pd.DataFrame) -> pd.DataFrame:
        ends = (prefixes["position"] == prefixes["step"]).to_numpy()  # one row per step
        session = prefixes["session"].to_numpy()[ends]
        step = prefixes["step"].to_numpy()[ends]
        rng = np.random.default_rng([seed, int(session[0])])
        nxt = items[session, step]
        listed = (nxt[:, None] + rng.integers(-3 * k, 3 * k, size=(len(nxt), k))) % N_ITEMS
        return pd.DataFrame(
            {
                "session": np.repeat(session, k),
                "step": np.repeat(step, k),
                "item": listed.ravel(),
                "rank": np.tile(np.arange(1, k + 1), len(nxt)),
            },
            copy=False,
        )

    return lists_of


def peak_rss_gib() -> float:
    """The process's peak resident memory so far (GiB; Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main_generated(args: argparse.Namespace) -> None:
    """The bounded-memory run: lists generated per batch, beside ``evaluate``
    on a table of ``--table-sessions`` sessions."""
    import receval

    targets = [t for t in ("next", "remaining") if t in args.only.split(",")]
    items = session_items(args.sessions, args.steps)
    length = args.steps + 1
    sessions = pd.DataFrame(
        {
            "session": np.repeat(np.arange(args.sessions), length),
            "item": items.ravel(),
            "step": np.tile(np.arange(length), args.sessions),
        }
    )
    small = sessions.iloc[: min(args.table_sessions, args.sessions) * length]
    rows = args.sessions * args.steps * args.k
    out: dict[str, tuple[float, float, int]] = {}
    load = [os.getloadavg()[0]]
    spent = [0.0, 0.0]  # the callable's own wall and CPU time (making the lists)
    make = generated(items, args.k)

    def timed(prefixes: pd.DataFrame) -> Any:
        # the calling thread's CPU time: the process's would count the pieces
        # evaluated on the other threads meanwhile
        w, c = time.perf_counter(), time.thread_time()
        made = make(prefixes)
        spent[0] += time.perf_counter() - w
        spent[1] += time.thread_time() - c
        return made

    for target in targets:

        def run(frame: pd.DataFrame, target: str = target) -> Any:
            return receval.evaluate_next_items(
                timed, frame, METRICS, target=target, duplicates="keep",
                batch_size=args.batch_size,
            )  # fmt: skip

        run(small)  # warm-up
        for _ in range(args.repeat):  # the best of --repeat runs (1 at 1M sessions)
            spent[:] = [0.0, 0.0]
            w, c = time.perf_counter(), time.process_time()
            run(sessions)
            w, c = time.perf_counter() - w, time.process_time() - c
            load.append(os.getloadavg()[0])
            name = f"next_items {target} (generated)"
            if name not in out or c < out[name][1]:
                out[name] = (w, c, rows)
                out[f"{target}: less the callable's time"] = (w - spent[0], c - spent[1], rows)
    del sessions, small
    rss_generated = peak_rss_gib()
    data = workload(args.table_sessions, args.steps, args.k)
    table_rows = len(data["recs"])
    for target in targets:
        truth = data["truth"] if target == "next" else data["truth_remaining"]
        receval.evaluate(data["recs"], truth, METRICS, duplicates="keep")  # warm-up
        best_w = best_c = float("inf")
        for _ in range(args.table_repeat or args.repeat):
            w, c = time.perf_counter(), time.process_time()
            receval.evaluate(data["recs"], truth, METRICS, duplicates="keep")
            best_c = min(best_c, time.process_time() - c)
            best_w = min(best_w, time.perf_counter() - w)
            load.append(os.getloadavg()[0])
        out[f"evaluate ({target} truth, table)"] = (best_w, best_c, table_rows)
    print(
        f"{args.sessions} sessions x {args.steps} steps x {args.k} items = {rows} list rows "
        f"generated per batch (batch size {args.batch_size} steps); evaluate on "
        f"{table_rows} rows; load average {min(load):.1f}-{max(load):.1f}"
    )
    print(f"  peak RSS: {rss_generated:.2f} GiB after the generated runs, "
          f"{peak_rss_gib():.2f} GiB after the table's")  # fmt: skip
    print(f"  {'':<36} {'wall s':>8} {'cpu s':>8} {'M rows/s':>8} {'ns/row cpu':>10} "
          f"{'ratio wall':>10} {'ratio cpu':>9}")  # fmt: skip
    for target in targets:
        base = out[f"evaluate ({target} truth, table)"]
        names = [f"evaluate ({target} truth, table)", f"next_items {target} (generated)"]
        for name in [*names, f"{target}: less the callable's time"]:
            w, c, n = out[name]
            ratio_w = (w / n) / (base[0] / base[2])
            ratio_c = (c / n) / (base[1] / base[2])
            print(
                f"  {name:<36} {w:8.1f} {c:8.1f} {n / w / 1e6:8.2f} {c / n * 1e9:10.1f} "
                f"{ratio_w:9.3f}x {ratio_c:8.3f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lists", choices=("table", "callable", "generated"), default="table")
    parser.add_argument(
        "--table-sessions", type=int, default=20_000, help="--lists generated: evaluate's table"
    )
    parser.add_argument(
        "--table-repeat", type=int, default=0, help="--lists generated: evaluate's runs"
    )
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--only", default="next,remaining", help="next, remaining or both")
    args = parser.parse_args()
    if args.lists == "generated":
        main_generated(args)
        return
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
