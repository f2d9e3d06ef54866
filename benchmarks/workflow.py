"""Everything around the evaluation, timed as a user waits for it (#19 points 2, 4, 5).

Each step is the real command (``python -m receval ...``) in a fresh process;
its wall time and peak RSS (``os.wait4``) are compared with a process that
only reads the step's input files (the same interpreter, ``import receval.cli``,
``pyarrow.parquet.read_table`` of each file): "x read" is the step's multiple
of reading its input.

Steps (``--scale s`` multiplies every size; two scales show memory grow
linearly):

- ``demo 200k``: ``receval demo --users 200000·s`` (no input file: no ratio);
- ``demo 25M``: ``receval demo --interactions log.parquet``, a
  MovieLens-25M-shaped log generated once (162,541·s users, 59,047 items,
  25,000,095·s draws, :func:`receval.synthetic_interactions`);
- ``split 25M``: ``receval split log.parquet`` (per-user chronological 80/20);
- ``check 25M``: ``receval check --recs --train --test`` on the demo's item-kNN
  run and split (the 24M log's rows plus 3M recommendations);
- ``report 1M x 3``: ``receval report`` of three runs of 1M·s users × 20 items
  (generated: each system puts a relevant item in its list with its own
  probability) with ndcg@10, recall@10 and the default comparison (paired
  t-tests, BCa intervals from 10,000 resamples), then with 1,000 resamples:
  the bootstrap is most of a report's time at this size.

    python benchmarks/workflow.py --scale 1 [--scale 0.25] [--src OLD/src] [--out F.json]

``--src`` runs the commands from another source tree (e.g. a worktree of an
older commit, with its compiled module built in place:
``python setup.py build_ext --inplace``) on the same data: the "before" column.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ML25_USERS, ML25_ITEMS, ML25_ROWS = 162_541, 59_047, 25_000_095


def _log(folder: Path, scale: float) -> Path:
    """The MovieLens-25M-shaped log (generated once per scale)."""
    path = folder / "log.parquet"
    if not path.exists():
        from receval.workflow.synthetic import synthetic_interactions

        log = synthetic_interactions(
            int(ML25_USERS * scale), ML25_ITEMS, interactions=int(ML25_ROWS * scale), seed=0
        )
        log.to_parquet(path, index=False)
    return path


def _runs(folder: Path, scale: float) -> tuple[list[Path], Path]:
    """Three runs of users × 20 items and their truth (generated once per scale)."""
    names = [folder / f"run_{s}.parquet" for s in "abc"]
    truth_path = folder / "truth.parquet"
    if all(p.exists() for p in [*names, truth_path]):
        return names, truth_path
    rng = np.random.default_rng(0)
    users, items, k = int(1_000_000 * scale), 50_000, 20
    n_rel = rng.integers(1, 6, users)
    t_user = np.repeat(np.arange(users), n_rel)
    t_item = rng.integers(0, items, len(t_user))
    truth = pd.DataFrame({"user": t_user, "item": t_item}).drop_duplicates()
    truth.to_parquet(truth_path, index=False)
    first = truth.groupby("user")["item"].first().reindex(range(users)).to_numpy()
    for path, hit in zip(names, (0.35, 0.30, 0.10), strict=True):
        item = rng.integers(0, items, (users, k))
        slot = rng.integers(0, k, users)
        put = rng.random(users) < hit
        item[np.flatnonzero(put), slot[put]] = first[put]
        frame = pd.DataFrame(
            {
                "user": np.repeat(np.arange(users), k),
                "item": item.ravel(),
                "rank": np.tile(np.arange(1, k + 1), users),
            }
        )
        # a repeated item in a list keeps its first (best) rank
        frame = frame.drop_duplicates(["user", "item"])
        frame["rank"] = frame.groupby("user").cumcount() + 1
        frame.to_parquet(path, index=False)
    return names, truth_path


def _measure(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Wall seconds and peak RSS (MiB) of one fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    got = {"seconds": round(seconds, 2), "peak_mib": round(usage.ru_maxrss / 1024, 0)}
    if proc.returncode != 0:  # recorded (e.g. -9: killed by the OOM killer), not fatal
        print(f"{' '.join(argv)} failed ({proc.returncode}):\n{err}", file=sys.stderr)
        got["exit"] = proc.returncode
    return got


def _read(files: list[Path], env: dict[str, str], cwd: Path) -> dict[str, float]:
    code = (
        "import sys, receval.cli, pyarrow.parquet as pq\n"
        "for f in sys.argv[1:]:\n"
        "    pq.read_table(f)\n"
    )
    return _measure([sys.executable, "-c", code, *map(str, files)], env, cwd)


def run(
    scale: float, data: Path, src: Path, work: Path, skip: set[str], d25: Path | None
) -> list[dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cli = [sys.executable, "-m", "receval"]
    data.mkdir(parents=True, exist_ok=True)
    # the inputs are made in a process of their own: a child forked from a large
    # harness would count the harness's pages in its peak RSS
    subprocess.run(
        [sys.executable, __file__, "--make-data", str(data), "--scale", str(scale)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    log = data / "log.parquet"
    runs = [data / f"run_{s}.parquet" for s in "abc"]
    truth = data / "truth.parquet"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    rows: list[dict[str, object]] = []

    def step(name: str, argv: list[str], inputs: list[Path]) -> None:
        if name.split()[0] in skip:
            return
        got = _measure([*cli, *argv], env, work)
        row: dict[str, object] = {"step": name, "scale": scale, **got}
        if inputs:
            base = _read(inputs, env, work)
            row |= {
                "read_seconds": base["seconds"],
                "read_peak_mib": base["peak_mib"],
                "x_read": round(got["seconds"] / base["seconds"], 1),
                "rows_in": int(sum(pd.read_parquet(p, columns=[]).shape[0] for p in inputs)),
            }
        print(json.dumps(row), flush=True)
        rows.append(row)

    users = int(200_000 * scale)
    step(f"demo {users // 1000}k users", ["demo", "--users", str(users), "--out", "d200", "-q"], [])
    step(
        "demo ML-25M-shaped log", ["demo", "--interactions", str(log), "--out", "d25", "-q"], [log]
    )
    step("split", ["split", str(log), "--out", "split", "-q"], [log])
    d25 = d25 or work / "d25"  # --d25: the check's inputs from another run's demo
    check_in = [d25 / "runs" / "item_knn.parquet", d25 / "split" / "train.parquet"]
    check_in.append(d25 / "split" / "test.parquet")
    step(
        "check",
        [
            "check",
            "--recs",
            str(check_in[0]),
            "--train",
            str(check_in[1]),
            "--test",
            str(check_in[2]),
            "-k",
            "20",
            "--chronological",
        ],
        check_in,
    )
    report = ["report", str(truth), *map(str, runs), "-m", "ndcg@10", "-m", "recall@10"]
    report += ["--names", "a,b,c", "--out", "report.html", "-q"]
    step("report 3 systems (10,000 resamples)", report, [*runs, truth])
    step("report 3 systems (1,000 resamples)", [*report, "--n-resamples", "1000"], [*runs, truth])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, action="append", default=None)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--data", type=Path, default=ROOT / "bench-data" / "workflow")
    parser.add_argument("--work", type=Path, default=Path("/tmp/receval-workflow"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--skip", default="", help="steps to leave out, e.g. demo,report")
    parser.add_argument("--d25", type=Path, default=None, help="the check's inputs: a demo folder")
    parser.add_argument("--make-data", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_data is not None:
        _log(args.make_data, args.scale[0])
        _runs(args.make_data, args.scale[0])
        return
    rows = []
    for scale in args.scale or [1.0]:
        folder = args.data / f"scale-{scale:g}"
        skip = set(filter(None, args.skip.split(",")))
        rows += run(scale, folder, args.src.resolve(), args.work, skip, args.d25)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
