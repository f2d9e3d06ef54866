"""The doors of next-item evaluation against its Python call (issue #36 point 2).

    python benchmarks/next_items_doors.py --sessions 5000 [--steps 10] [--k 50] [--repeat 3]

The workload of ``benchmarks/next_items.py`` (``--sessions`` sessions of
``--steps`` + 1 items, a ranked list of ``--k`` items after each prefix),
written once as Parquet; then, in one process, interleaved, after one untimed
warm-up each:

* ``evaluate_next_items(lists, sessions, ...)`` on the pandas frames;
* ``receval next-items LISTS SESSIONS ... --json`` (``receval.cli.main``, in
  this process): the same, the two Parquet files read first;
* ``receval.report(None, None, next_items=...)`` of that result: the page of
  next-item results alone (its comparison over sessions, 1000 resamples).

Prints the best of ``--repeat`` times and the command's ratio to the call.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from next_items import workload  # the same generator

METRICS = ["ndcg@10", "recall@50", "rr@50"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=5_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import receval
    from receval.cli import main as command

    data = workload(args.sessions, args.steps, args.k)
    with tempfile.TemporaryDirectory() as folder:
        lists, sessions = Path(folder, "lists.parquet"), Path(folder, "sessions.parquet")
        data["lists"].to_parquet(lists, index=False)
        data["sessions"].to_parquet(sessions, index=False)
        argv = ["next-items", str(lists), str(sessions), "--time-col", "step"]
        argv += [a for m in METRICS for a in ("-m", m)]
        argv += ["--duplicates", "keep", "--json", "-q"]
        found = {}

        def call() -> None:
            found["result"] = receval.evaluate_next_items(
                data["lists"], data["sessions"], METRICS, duplicates="keep"
            )

        def door() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                assert command(argv) == 0

        def page() -> None:
            receval.report(None, None, next_items={"model": found["result"]}, n_resamples=1000)

        ways = {"evaluate_next_items": call, "receval next-items": door, "report": page}
        for run in ways.values():
            run()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.repeat):
            for name, run in ways.items():
                started = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - started)
    rows = len(data["lists"])
    best = {name: min(t) for name, t in times.items()}
    print(f"{args.sessions} sessions x {args.steps} steps x {args.k} items = {rows:,} list rows")
    for name, t in best.items():
        ratio = f"  {t / best['evaluate_next_items']:5.2f}x the call" if name != "report" else ""
        print(f"  {name:<22} {t:7.2f} s{ratio}")


if __name__ == "__main__":
    main()
