"""Benchmark receval against other evaluation libraries on one synthetic workload.

    python benchmarks/run.py --users 100000 --peer-python /tmp/bench-venv/bin/python \\
        --python-for rectools=/tmp/bench-venv-rectools/bin/python \\
        --python-for replay=/tmp/bench-venv-replay/bin/python

1. generates (or reuses) the workload (``benchmarks/workload.py``) at the chosen
   size under ``--data`` (default ``bench-data/<users>``, git-ignored);
2. runs receval and each peer in its own process, on the same Parquet files,
   each measuring read time, conversion + warm compute time and peak RSS
   (``benchmarks/peers/bench_<name>.py``); a peer whose package does not import
   under its interpreter is skipped with a note;
3. recomputes, untimed, receval's numbers under each peer's conventions and
   prints them side by side with the peer's (``=`` equal to 1e-9, ``~`` to
   1e-6, ``X`` differ, ``-`` no equivalent);
4. prints the timing table (ratios are peer / receval) and writes it, with
   all raw results, to ``<data>/results.json`` and ``<data>/results.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

PEERS = ["rectools", "replay", "pytrec_eval", "ranx", "torchmetrics"]
MODULE = {  # what must import for the library to count as installed
    "receval": "receval",
    "receval_files": "receval",
    "rectools": "rectools",
    "replay": "replay.metrics",
    "pytrec_eval": "pytrec_eval",
    "ranx": "ranx",
    "torchmetrics": "torchmetrics.retrieval",
}


def interpreter_for(name: str, args: argparse.Namespace) -> str:
    if name in args.python_for:
        return args.python_for[name]
    if name in ("receval", "receval_files"):
        return args.receval_python or sys.executable
    return args.peer_python or sys.executable


def importable(python: str, module: str) -> tuple[bool, str]:
    try:
        p = subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    if p.returncode == 0:
        return True, ""
    lines = p.stderr.strip().splitlines()
    return False, lines[-1] if lines else f"exit code {p.returncode}"


def run_library(name: str, python: str, recs: Path, truth: Path, timeout: float) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [
        python,
        str(HERE / "peers" / f"bench_{name}.py"),
        "--recs",
        str(recs),
        "--truth",
        str(truth),
        "--out",
        out,
    ]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"library": name, "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    try:
        if p.returncode != 0:
            tail = "\n".join(p.stderr.strip().splitlines()[-5:])
            return {"library": name, "error": f"exit code {p.returncode}: {tail}"}
        with open(out) as f:
            res = json.load(f)
    finally:
        os.unlink(out)
    res["process_wall_s"] = round(wall, 3)
    return res


def run_check(python: str, recs: Path, truth: Path, conventions: dict, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        conv = Path(d) / "conventions.json"
        conv.write_text(json.dumps(conventions))
        out = Path(d) / "check.json"
        cmd = [
            python,
            str(HERE / "peers" / "bench_receval.py"),
            "--recs",
            str(recs),
            "--truth",
            str(truth),
            "--check",
            str(conv),
            "--out",
            str(out),
        ]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"receval check failed:\n{p.stderr[-2000:]}")
        return json.loads(out.read_text())


def mark(a: float, b: float | None) -> tuple[str, float | None]:
    if b is None:
        return "-", None
    if math.isnan(a) and math.isnan(b):
        return "=", 0.0
    d = abs(a - b)
    if d <= 1e-9:
        return "=", d
    if d <= 1e-6:
        return "~", d
    return "X", d


def fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}x"


def timing_table(results: list[dict]) -> list[str]:
    base = next((r for r in results if r["library"] == "receval" and "error" not in r), None)
    lines = [
        "| library | version | read s | convert+compute s | total s | peak RSS MiB "
        "| compute ratio | total ratio | memory ratio |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "error" in r or "skipped" in r:
            why = r.get("error") or r.get("skipped")
            lines.append(f"| {r['library']} | | | | | | | | {why.splitlines()[0][:80]} |")
            continue
        total = r["read_s"] + r["compute_s"]
        ratios = [None, None, None]
        if base:
            btotal = base["read_s"] + base["compute_s"]
            ratios = [
                r["compute_s"] / base["compute_s"],
                total / btotal,
                r["peak_rss_mib"] / base["peak_rss_mib"],
            ]
        lines.append(
            f"| {r['library']} | {r['version']} | {r['read_s']:.2f} | {r['compute_s']:.2f} "
            f"| {total:.2f} | {r['peak_rss_mib']:.0f} | {fmt_ratio(ratios[0])} "
            f"| {fmt_ratio(ratios[1])} | {fmt_ratio(ratios[2])} |"
        )
    return lines


def end_to_end(results: list[dict]) -> list[str]:
    """receval from the files (streamed) against the fastest peer's read +
    compute, and whether its numbers are receval's in-memory numbers, bit for bit."""
    ok = [r for r in results if "error" not in r and "skipped" not in r]
    files = next((r for r in ok if r["library"] == "receval_files"), None)
    mem = next((r for r in ok if r["library"] == "receval"), None)
    if files is None:
        return []
    lines = [""]
    if mem is not None:
        same = files["metrics"] == mem["metrics"]
        lines.append(
            f"receval from the files (streamed by chunks of users) vs the tables read whole: "
            f"numbers {'identical' if same else 'DIFFERENT'}."
        )
    peers = [r for r in ok if not r["library"].startswith("receval")]
    if peers:
        best = min(peers, key=lambda r: r["read_s"] + r["compute_s"])
        total = best["read_s"] + best["compute_s"]
        lines.append(
            f"End to end (files on disk to the 12 means): receval {files['compute_s']:.2f} s, "
            f"{files['peak_rss_mib']:.0f} MiB; fastest peer {best['library']} {total:.2f} s, "
            f"{best['peak_rss_mib']:.0f} MiB: {total / files['compute_s']:.1f}x faster, "
            f"{best['peak_rss_mib'] / files['peak_rss_mib']:.1f}x less memory."
        )
    return lines


def check_tables(results: list[dict], check: dict) -> list[str]:
    lines: list[str] = []
    for r in results:
        if "error" in r or "skipped" in r or r["library"].startswith("receval"):
            continue
        name = r["library"]
        conv = r["convention"]
        mine = check.get(name, {}).get("metrics", {})
        canon = check.get(name, {}).get("canonical", {})
        pol = (
            f"relevance={conv['relevance']}, empty_truth={conv['empty_truth']}, "
            f"missing_recs={conv['missing_recs']}"
        )
        lines += [
            "",
            f"**{name} {r['version']}** vs receval ({pol}; "
            f"{check.get(name, {}).get('users_averaged', '?')} users averaged by receval)",
            "",
            "| peer metric | peer mean | receval metric | receval mean | abs diff | match |",
            "|---|---:|---|---:|---:|:---:|",
        ]
        for metric, value in r["metrics"].items():
            theirs = mine.get(metric)
            m, d = mark(value, theirs)
            lines.append(
                f"| {metric} | {value:.10f} | {canon.get(metric, '(none)')} | "
                f"{'' if theirs is None else f'{theirs:.10f}'} | "
                f"{'' if d is None else f'{d:.1e}'} | {m} |"
            )
        for note in conv.get("notes", []):
            lines.append(f"- {note}")
    return lines


def parse_python_for(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep:
            raise SystemExit(f"--python-for takes NAME=/path/to/python, got {v!r}")
        out[name.strip()] = path.strip()
    return out


def git_commit() -> str:
    try:
        p = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--exclude", "*"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return p.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", help="workload directory (default bench-data/<users>)")
    ap.add_argument(
        "--peers",
        default=",".join(PEERS),
        help=f"comma-separated subset of {','.join(PEERS)} (or 'none')",
    )
    ap.add_argument("--peer-python", help="interpreter for every peer (default: this one)")
    ap.add_argument("--receval-python", help="interpreter for receval (default: this one)")
    ap.add_argument(
        "--python-for",
        action="append",
        default=[],
        metavar="NAME=PYTHON",
        help="interpreter for one library, e.g. ranx=/tmp/venv/bin/python",
    )
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per library run")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each library this many times (fresh processes) and keep the fastest",
    )
    ap.add_argument("--no-check", action="store_true", help="skip the numbers check")
    args = ap.parse_args(argv)
    args.python_for = parse_python_for(args.python_for)
    peers = [] if args.peers == "none" else [p.strip() for p in args.peers.split(",") if p.strip()]
    for p in peers:
        if p not in PEERS:
            raise SystemExit(f"unknown peer {p!r}; known: {', '.join(PEERS)}")

    data = Path(args.data) if args.data else ROOT / "bench-data" / str(args.users)
    t0 = time.perf_counter()
    meta = workload.ensure(args.users, data, args.seed)
    print(
        f"workload: {args.users} users, {meta['recs_rows']} rec rows, {meta['truth_rows']} "
        f"truth rows, top-10 hit share {meta['top10_hit_share']:.3f} "
        f"({time.perf_counter() - t0:.1f} s) in {data}",
        flush=True,
    )
    recs, truth = data / "recs.parquet", data / "truth.parquet"

    results: list[dict] = []
    for name in ["receval", "receval_files", *peers]:
        python = interpreter_for(name, args)
        ok, why = importable(python, MODULE[name])
        if not ok:
            print(f"- {name}: skipped, not importable with {python}: {why}", flush=True)
            results.append({"library": name, "skipped": f"not installed ({why})"})
            continue
        print(f"- {name}: running with {python} ...", flush=True)
        runs = [run_library(name, python, recs, truth, args.timeout) for _ in range(args.repeat)]
        good = [r for r in runs if "error" not in r]
        res = min(good, key=lambda r: r["read_s"] + r["compute_s"]) if good else runs[0]
        if len(good) > 1:
            res["runs_total_s"] = [round(r["read_s"] + r["compute_s"], 3) for r in good]
        if "error" in res:
            print(f"  error: {res['error']}", flush=True)
        else:
            print(
                f"  read {res['read_s']:.2f} s, convert+compute {res['compute_s']:.2f} s, "
                f"peak RSS {res['peak_rss_mib']:.0f} MiB",
                flush=True,
            )
        results.append(res)

    check: dict = {}
    ran = [r for r in results if "error" not in r and "skipped" not in r]
    if not args.no_check and any(r["library"] == "receval" for r in ran):
        conventions = {r["library"]: r["convention"] for r in ran if r["library"] != "receval"}
        if conventions:
            print("- receval under each peer's convention (untimed) ...", flush=True)
            check = run_check(
                interpreter_for("receval", args), recs, truth, conventions, args.timeout
            )

    header = [
        f"Workload: {args.users:,} users, {meta['recs_rows']:,} rec rows, "
        f"{meta['truth_rows']:,} truth rows (seed {args.seed}); machine: {os.cpu_count()} cores, "
        f"{platform.machine()}, Python {platform.python_version()}; receval at commit "
        f"{git_commit()}.",
        "",
    ]
    lines = header + timing_table(results) + end_to_end(results) + check_tables(results, check)
    text = "\n".join(lines)
    print()
    print(text)
    (data / "results.md").write_text(text + "\n")
    (data / "results.json").write_text(
        json.dumps({"workload": meta, "results": results, "check": check}, indent=2) + "\n"
    )
    print(f"\nwritten: {data / 'results.md'}, {data / 'results.json'}")


if __name__ == "__main__":
    main()
