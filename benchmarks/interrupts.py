"""How fast does ``receval`` stop on Ctrl-C or SIGTERM? (issue #17 point 1)

The target is "within about a second", also while a large CSV is read. A
timed test would be flaky on a shared machine, so the latency is measured
here: the standard workload (``workload.py``) is written as CSV once, then
``python -m receval evaluate recs.csv truth.csv --per-user out.csv`` is
started again and again and sent SIGINT or SIGTERM after a delay that sweeps
the run (reading, evaluating, writing). For each run the script records the
exit code, the time from the signal to the exit, and whether anything was
left at ``out.csv`` or as a temporary file beside it.

    python benchmarks/interrupts.py --users 100000 --delays 0.5,1,2,3,4,6

Prints one row per (signal, delay) and the median and largest latency.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # run as a script: its neighbours import

from csv_memory import csv_workload  # noqa: E402


def _one(recs: Path, truth: Path, out: Path, sig: int, delay: float) -> dict[str, object]:
    for leftover in out.parent.glob(out.name + "*"):
        leftover.unlink()
    cmd = [sys.executable, "-m", "receval", "evaluate", str(recs), str(truth)]
    cmd += ["-m", "ndcg@10,ap@10,recall@10", "--per-user", str(out), "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    if proc.poll() is not None:  # finished before the signal
        proc.communicate()
        return {"delay": delay, "finished": True}
    sent = time.perf_counter()
    proc.send_signal(sig)
    _, err = proc.communicate()
    latency = time.perf_counter() - sent
    left = sorted(p.name for p in out.parent.glob(out.name + "*"))
    left += sorted(p.name for p in out.parent.glob("." + out.name + "*"))
    return {
        "delay": delay,
        "finished": False,
        "code": proc.returncode,
        "latency": latency,
        "stderr": err.strip().splitlines()[-1] if err.strip() else "",
        "left": left,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--delays", default="0.5,1,2,3,4,6")
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="receval-interrupts-"))
    folder.mkdir(parents=True, exist_ok=True)
    recs, truth = csv_workload(args.users, folder)
    size = (recs.stat().st_size + truth.stat().st_size) / 2**20
    print(f"# {args.users} users, CSV inputs {size:.0f} MiB, python {sys.version.split()[0]}")
    print("signal   delay_s  exit  latency_s  left_behind  stderr")
    latencies = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        for delay in (float(d) for d in args.delays.split(",")):
            row = _one(recs, truth, folder / "out.csv", sig, delay)
            if row["finished"]:
                print(f"{sig.name:8} {delay:7.2f}  (finished before the signal)")
                continue
            latencies.append(float(row["latency"]))  # type: ignore[arg-type]
            print(
                f"{sig.name:8} {delay:7.2f}  {row['code']:4}  {row['latency']:9.2f}  "
                f"{','.join(row['left']) or '-':11}  {row['stderr']}"  # type: ignore[arg-type]
            )
    if latencies:
        print(
            f"latency: median {statistics.median(latencies):.2f} s, "
            f"largest {max(latencies):.2f} s over {len(latencies)} signals"
        )
    os.sync()


if __name__ == "__main__":
    main()
