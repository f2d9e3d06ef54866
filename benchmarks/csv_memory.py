"""Peak memory of ``receval evaluate`` on large CSV files, per kind of id (issue #31 point 8).

Target: the whole command's peak resident memory at most ``--limit`` (2) times
the size of the recommendations file, whatever the ids are: integers
(``1000123``), digit strings that stay text (``00000123``) or text
(``u0000123``). One synthetic workload per kind, written once under ``--dir``
(default ``bench-data/csv_memory``, git-ignored; reused when it holds the same
rows and seed): ``--rows`` recommendation rows, 50 per user, items from a
catalog of 200,000, a score per row (a float64 as Arrow writes it), and a truth
of 5 items per user taken from the user's list. Each run is a fresh process of
the real command, ``python -m receval evaluate recs.csv truth.csv -m ndcg@10
-m recall@10 -q -o json``; its peak is the process's own ``ru_maxrss``
(``os.wait4``), its time the wall time of the whole process.

``--src`` runs another checkout's ``src`` folder (repeatable; e.g. the tree
before a change, from ``git archive``), so that both are measured in one run,
and their numbers are checked to be identical. The runs of the last ``--src``
(default: this checkout) are checked against ``--limit``: the script exits 1
when one of them is above it.

    python benchmarks/csv_memory.py                    # 5M rows, int, digits, text
    python benchmarks/csv_memory.py --src /tmp/old/src --src src --repeat 3
    python benchmarks/csv_memory.py --kinds text,mixed --rows 1000000

``mixed``: digit strings of which some are plain integers (``012345`` and
``123456``), a column whose kind is text with numbers in it. ``long``: text
ids with a longer prefix (``user_0000123``, ``item_012345``), the shape of
the file issue #31 measured (5M rows, ~240 MB); ``text`` is the same ids in
~25% fewer bytes, so the harder case for a ratio to the file's size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

HERE = Path(__file__).resolve().parent
MIB = 2**20
PER_USER = 50
CATALOG = 200_000
STEP = 3_997  # item k of a list: (base + k * STEP) % CATALOG, distinct within a list
TRUTH_AT = (0, 3, 9, 20, 45)  # the positions of each list that are relevant
KINDS = ("int", "digits", "text", "long", "mixed")


def _ids(values: np.ndarray, kind: str, role: str) -> pa.Array:
    """Ids of one kind for the integers ``values`` (users or items)."""
    numbers = pa.array(values, type=pa.int64())
    if kind == "int":
        return pc.add(numbers, 1_000_000 if role == "user" else 100_000)
    text = pc.cast(numbers, pa.string())
    if kind == "digits":  # every one with a leading zero: text under the text rule
        return pc.utf8_lpad(text, width=8 if role == "user" else 7, padding="0")
    if kind == "mixed":  # items 100000 and above have no leading zero: integers
        return pc.utf8_lpad(text, width=7 if role == "user" else 6, padding="0")
    padded = pc.utf8_lpad(text, width=7 if role == "user" else 6, padding="0")
    if kind == "long":  # the audit's shape: 5M rows, ~240 MB
        return pc.binary_join_element_wise("user_" if role == "user" else "item_", padded, "")
    return pc.binary_join_element_wise("u" if role == "user" else "i", padded, "")


def workload(folder: Path, kind: str, rows: int, seed: int) -> tuple[Path, Path]:
    """recs.csv and truth.csv of one kind of id in ``folder/kind`` (made once)."""
    out = folder / kind
    recs, truth, meta = out / "recs.csv", out / "truth.csv", out / "meta.json"
    wanted = {"rows": rows, "seed": seed, "kind": kind, "version": 1}
    if meta.exists() and json.loads(meta.read_text()) == wanted and truth.exists():
        return recs, truth
    out.mkdir(parents=True, exist_ok=True)
    users = rows // PER_USER
    rng = np.random.default_rng(seed)
    base = rng.integers(0, CATALOG, size=users)
    items = (base[:, None] + np.arange(PER_USER) * STEP) % CATALOG
    options = pcsv.WriteOptions(quoting_style="none")
    table = pa.table(
        {
            "user": _ids(np.repeat(np.arange(users), PER_USER), kind, "user"),
            "item": _ids(items.ravel(), kind, "item"),
            "score": rng.random(users * PER_USER),
        }
    )
    pcsv.write_csv(table, recs, options)
    relevant = items[:, list(TRUTH_AT)].ravel()
    truth_table = pa.table(
        {
            "user": _ids(np.repeat(np.arange(users), len(TRUTH_AT)), kind, "user"),
            "item": _ids(relevant, kind, "item"),
        }
    )
    pcsv.write_csv(truth_table, truth, options)
    meta.write_text(json.dumps(wanted))
    return recs, truth


def made(folder: Path, kind: str, rows: int, seed: int) -> tuple[Path, Path]:
    """:func:`workload`, made in a child process: a child started after the
    workload was made here would count this process's pages in its peak
    (``ru_maxrss`` includes what a fork shares until the exec)."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import csv_memory as m; "
    code += "m.workload(m.Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))"
    subprocess.run(
        [sys.executable, "-c", code, str(HERE), str(folder), kind, str(rows), str(seed)],
        check=True,
    )
    out = folder / kind
    return out / "recs.csv", out / "truth.csv"


def run(src: str, recs: Path, truth: Path) -> dict[str, object]:
    """One fresh process of the command: its metrics, peak RSS and wall time."""
    argv = [sys.executable, "-m", "receval", "evaluate", str(recs), str(truth)]
    argv += ["-m", "ndcg@10", "-m", "recall@10", "-q", "-o", "json"]
    env = {**os.environ, "PYTHONPATH": src}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if code != 0:
            raise SystemExit(f"{src}: exit {code}: {err.read().decode()[-2000:]}")
        result = json.loads(out.read())
    numbers = {"metrics": result["metrics"], "counts": result["counts"]}
    return {"numbers": numbers, "peak": usage.ru_maxrss * 1024, "seconds": seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--kinds", default="int,digits,text,long", help=f"among {', '.join(KINDS)}")
    ap.add_argument("--src", action="append", help="a checkout's src folder (repeatable)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per case (largest peak, best time)")
    ap.add_argument("--dir", default=str(HERE.parent / "bench-data" / "csv_memory"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=2.0, help="largest peak / file size allowed")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        ap.error(f"unknown kinds {sorted(unknown)}: choose among {', '.join(KINDS)}")
    srcs = args.src or [str(HERE.parent / "src")]
    print(f"# {args.rows:,} rows, {PER_USER} per user; python {sys.version.split()[0]}")
    print("| src | ids | recs.csv MiB | peak MiB | peak / file | s |")
    print("|---|---|---:|---:|---:|---:|")
    over = []
    for kind in kinds:
        recs, truth = made(Path(args.dir), kind, args.rows, args.seed)
        size = recs.stat().st_size
        numbers = {}
        for src in srcs:
            runs = [run(src, recs, truth) for _ in range(args.repeat)]
            peak = max(int(r["peak"]) for r in runs)  # type: ignore[call-overload]
            best = min(float(r["seconds"]) for r in runs)  # type: ignore[arg-type]
            numbers[src] = runs[0]["numbers"]
            ratio = peak / size
            print(
                f"| {src} | {kind} | {size / MIB:.0f} | {peak / MIB:.0f} | {ratio:.2f} | "
                f"{best:.1f} |"
            )
            if src == srcs[-1] and ratio > args.limit:
                over.append(f"{kind}: {ratio:.2f}")
        if len({json.dumps(m, sort_keys=True) for m in numbers.values()}) > 1:
            print(f"numbers differ between trees for {kind}: {numbers}", file=sys.stderr)
            return 1
    if over:
        print(f"above {args.limit}x the file: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
