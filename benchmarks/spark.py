"""receval's Spark engine against Spark MLlib's ``RankingEvaluator``, in one run
(issue #18: the benchmark against MLlib, 100k -> 5M users).

Both engines start from ``spark.read.parquet`` of the same workload files
(``workload.py``: ~94 rec rows and ~10 truth rows per user, generated once per
size under ``--data``/<users>) on the same kind of session (``--master``,
default ``local[2]``; ``spark.driver.memory`` from ``--driver-memory``,
default 4g, which is the JVM's ``-Xmx``; the Spark UI off;
``SPARK_LOCAL_IP=127.0.0.1``; the executors' Python is this interpreter, with
this checkout's ``src`` first on ``PYTHONPATH``; every other setting is
Spark's default, e.g. ``spark.sql.shuffle.partitions=200`` with adaptive
execution for MLlib's group-bys and join, while receval's engine repartitions
by user into the session's default parallelism, 2 on ``local[2]``):

* **MLlib**: what its users write. Per user, the list ordered by rank
  (``sort_array(collect_list(struct(rank, item)))`` turned into the items as
  doubles), **left-joined** with the user's truth items (``collect_list(item)``
  as doubles) on user: the users are those with a list, and a user without
  truth gets an empty label array (MLlib scores it 0 and keeps it in the mean;
  a null label would fail). Every truth row counts as relevant (the workload's
  grades are 1-5). Then one ``RankingEvaluator(k=10).evaluate`` per metric:
  ``precisionAtK``, ``recallAtK``, ``ndcgAtK``, ``meanAveragePrecisionAtK``.
  By default the joined arrays are ``cache()``d before the first ``evaluate``
  (what a user evaluating four metrics does; the first call fills the cache)
  and unpersisted after the timing; ``--no-mllib-cache`` runs each
  ``evaluate`` from the files again (4 reads, shuffles and joins).
* **receval**: ``receval.evaluate(recs_df, truth_df, [precision, recall,
  ndcg, ap, rr, hit_rate @10,100])`` (12 metrics, receval's default
  conventions, graded nDCG): its kernels per user partition (``mapInArrow``).

The timed section of both: from ``spark.read.parquet`` of the two files to the
means in hand (imports and the session's start are outside it).

**Fairness.** Every (engine, repeat) runs in a fresh process with its own
SparkSession, so no cache, JIT state, Python worker or grown JVM heap of one
engine serves the other, and every run reads the files again. Runs are
interleaved (mllib, receval, mllib, receval, ...; ``--repeat``, default 3)
because the project machine is shared and noisy; the table gives the median.
Before its timed run, each process runs its engine once, untimed, on a
2,000-user workload (``--warmup-users``; 0 for none): the session's one-time
costs (JIT of the JVM's code, receval's Python workers started and importing
receval) are then not in the timed section; they are reported apart (the
warm-up's seconds, ``warmup_s`` in the JSON). The OS file cache is shared:
the files of a size are read once, untimed, before its runs, so every run
reads warm files.

**Memory.** A thread of the benchmark's process (the Spark driver's Python)
samples the resident memory (``VmRSS`` of ``/proc/<pid>/status``) of itself
and all its descendants (found through the parent pid in ``/proc/*/stat``)
every 50 ms (``--sample-ms``), each process by its role, told by its command
line: the **driver Python** (this process), the **JVM** (``java``: in local
mode the driver and the executors are this one JVM, so "executors" are its
tasks), the **Python workers** (``pyspark.daemon`` and the workers it forks).
The peak over the timed section is that run's peak tree RSS (absolute,
nothing subtracted; the JVM's RSS already holds what the session's start and
the warm-up made it grow), and each role has its own peak (its largest
sample). The tables give the largest peaks over the repeats; the JSON has
each run's peak, its split at that moment, each role's peak, and the tree's
RSS when the timer started. Two details: helper processes the JVM spawns for
an instant (``rm``, ``bash``) are left out, since between ``vfork`` and
``exec`` they show the JVM's own RSS; and RSS counts the pages a forked Python
worker still shares with ``pyspark.daemon`` once per process (tens of MiB,
receval's side only).
A run that fails (e.g. out of memory) or exceeds ``--timeout`` is reported as
``failed`` with the end of its stderr; the other runs go on.

With two sizes or more, the time per million users of each engine is the
least-squares slope of the median time against users (with three sizes or
more, linear when R^2 >= 0.99), and the growth of the time between the two
largest sizes against that of the users (1.0: proportional; below: fixed
costs still weigh). Printed:
a markdown table, the slopes, and the four MLlib values beside receval's
(they differ by definition: MLlib counts users without truth as 0 and uses
binary relevance; receval by default leaves them out and grades nDCG; a third
column is receval in-process with ``convention="mllib", missing_recs="skip"``,
i.e. MLlib's definitions on the users of this join). Nothing is asserted.

    python benchmarks/spark.py --users 100000,1000000 --repeat 3 --json spark.json
    python benchmarks/spark.py --users 100000,1000000,5000000 --repeat 1
    python benchmarks/spark.py --users 20000 --repeat 1          # a quick look

Options: ``--master``, ``--driver-memory``, ``--conf KEY=VALUE`` (repeatable,
extra Spark settings for both engines), ``--data`` (default ``bench-data``,
git-ignored; a size's files are reused when they hold the same users and
seed), ``--seed``, ``--timeout`` (per run), ``--no-mllib-cache``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # run as a script: its neighbours import
import workload  # noqa: E402

ENGINES = ("mllib", "receval")
RECEVAL_METRICS = ["precision@10,100", "recall@10,100", "ndcg@10,100", "ap@10,100"]
RECEVAL_METRICS += ["rr@10,100", "hit_rate@10,100"]
MLLIB_METRICS = ("precisionAtK", "recallAtK", "ndcgAtK", "meanAveragePrecisionAtK")
# MLlib metric -> receval's metric of the same name
SAME_NAME = {
    "precisionAtK": "precision@10",
    "recallAtK": "recall@10",
    "ndcgAtK": "ndcg@10",
    "meanAveragePrecisionAtK": "ap@10",
}
MIB = 2**20


# -- peak RSS of a process tree -------------------------------------------------------------


def _stats() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU ticks used: user + system) of every process
    (from /proc/*/stat)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat[stat.rindex(b")") + 2 :].split()
        out[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return out


def _ppids() -> dict[int, int]:
    """pid -> parent pid of every process."""
    return {pid: ppid for pid, (ppid, _) in _stats().items()}


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


#: pid -> its role, for the processes whose role is settled (a pid is not
#: reused within a benchmark's few minutes)
_ROLES: dict[int, str] = {}


def _role(pid: int, root: int, parent_role: str) -> str:
    """The role of one process of the tree, by its command line: 'driver' (the
    benchmark's own Python, the Spark driver's Python), 'jvm' (the JVM: in local
    mode driver and executors in one), 'workers' (``pyspark.daemon`` and the
    Python workers it forks, which keep its command line) or 'other'.

    A child of the JVM that still has the JVM's command line is a helper between
    its ``vfork`` and ``exec`` (``rm``, ``bash``): it shows the JVM's own memory,
    so it is 'other', never counted."""
    if pid == root:
        return "driver"
    if pid in _ROLES:
        return _ROLES[pid]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return "other"
    role = "other"
    if argv and os.path.basename(argv[0]) == b"java":
        role = "jvm" if parent_role != "jvm" else "other"
    elif any(a.startswith((b"pyspark.daemon", b"pyspark.worker")) for a in argv):
        role = "workers"
    if role != "other":
        _ROLES[pid] = role
    return role


def _rss(pid: int) -> int:
    """VmRSS of one process in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree(root: int) -> list[tuple[int, str, int, int]]:
    """(pid, role, RSS bytes, CPU ticks) of ``root`` and each descendant,
    roles by :func:`_role`."""
    children: dict[int, list[int]] = {}
    stats = _stats()
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    todo, out = [(root, "")], []
    while todo:
        pid, parent_role = todo.pop()
        role = _role(pid, root, parent_role)
        out.append((pid, role, _rss(pid), stats.get(pid, (0, 0))[1]))
        todo.extend((c, role) for c in children.get(pid, ()))
    return out


def tree_rss(root: int) -> tuple[int, dict[str, int], int]:
    """(total RSS bytes, bytes per role, number of processes) of ``root`` and
    its descendants, roles by :func:`_role`.

    The total is the driver, the JVM and the Python workers; 'other' (the JVM's
    short-lived helpers, and anything unknown) is kept apart, outside it.
    """
    found = tree(root)
    kinds: dict[str, int] = {}
    for _, role, rss, _ in found:
        kinds[role] = kinds.get(role, 0) + rss
    return sum(v for k, v in kinds.items() if k != "other"), kinds, len(found)


ROLES = ("driver", "jvm", "workers")


class PeakSampler:
    """A thread sampling the tree RSS of ``root`` every ``interval`` s; ``stop()``
    -> the peak of the total (and its split at that moment) and the peak of
    each role on its own (driver Python, JVM, Python workers: each role's
    largest sample, which need not fall at the same moment)."""

    def __init__(self, root: int, interval: float) -> None:
        self.root, self.interval = root, interval
        self.peak, self.kinds, self.samples, self.processes, self.other = 0, {}, 0, 0, 0
        self.role_peak: dict[str, int] = dict.fromkeys(ROLES, 0)
        self.ticks: dict[int, list[Any]] = {}  # pid -> [role, first ticks, last ticks]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _take(self) -> None:
        found = tree(self.root)
        kinds: dict[str, int] = {}
        for pid, role, rss, ticks in found:
            kinds[role] = kinds.get(role, 0) + rss
            if role != "other":  # born after the first sample: all its ticks count
                base = ticks if self.samples == 0 else 0
                self.ticks.setdefault(pid, [role, base, ticks])[2] = ticks
        total = sum(v for k, v in kinds.items() if k != "other")
        self.samples += 1
        self.processes = max(self.processes, len(found))
        self.other = max(self.other, kinds.pop("other", 0))
        for role in ROLES:
            self.role_peak[role] = max(self.role_peak[role], kinds.get(role, 0))
        if total > self.peak:
            self.peak, self.kinds = total, kinds

    def cpu(self) -> dict[str, float]:
        """CPU seconds (user + system) each role used between the first and
        the last sample (a process born meanwhile: all it used by its last
        sample). Less sensitive than wall time to other work on a shared
        machine."""
        out = dict.fromkeys(ROLES, 0.0)
        for role, first, last in self.ticks.values():
            out[role] += (last - first) / TICK
        return {k: round(v, 2) for k, v in out.items()}

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def start(self) -> None:
        self._take()
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        self._take()
        return {
            "peak_rss_mib": round(self.peak / MIB, 1),
            "peak_split_mib": {k: round(v / MIB, 1) for k, v in sorted(self.kinds.items()) if v},
            "role_peak_mib": {k: round(v / MIB, 1) for k, v in self.role_peak.items()},
            "role_cpu_s": self.cpu(),
            "other_helpers_max_mib": round(self.other / MIB, 1),  # not in the peak
            "samples": self.samples,
            "processes": self.processes,
        }


# -- the child: one engine, one fresh session -----------------------------------------------


def _session(args: argparse.Namespace) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(args.master)
        .appName("receval-bench-spark")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for item in args.conf or ():
        key, _, value = item.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_mllib(spark: Any, recs_path: str, truth_path: str, cache: bool) -> dict[str, Any]:
    """MLlib's four metrics at k=10 from the files, as its users compute them."""
    from pyspark.ml.evaluation import RankingEvaluator
    from pyspark.sql import functions as F

    recs = spark.read.parquet(recs_path)
    truth = spark.read.parquet(truth_path)
    predicted = recs.groupBy("user").agg(
        F.sort_array(F.collect_list(F.struct("rank", "item"))).alias("ranked")
    )
    predicted = predicted.select(
        "user", F.transform("ranked", lambda s: s["item"].cast("double")).alias("prediction")
    )
    labels = truth.groupBy("user").agg(F.collect_list(F.col("item").cast("double")).alias("label"))
    data = predicted.join(labels, "user", "left").select(
        "prediction", F.coalesce("label", F.array().cast("array<double>")).alias("label")
    )
    if cache:
        data = data.cache()
    evaluator = RankingEvaluator(predictionCol="prediction", labelCol="label", k=10)
    values = {m: evaluator.evaluate(data, {evaluator.metricName: m}) for m in MLLIB_METRICS}
    return {"values": values, "_cached": data if cache else None}


def run_receval(spark: Any, recs_path: str, truth_path: str) -> dict[str, Any]:
    """receval's 12 standard metrics from the files, on the session."""
    import receval

    recs = spark.read.parquet(recs_path)
    truth = spark.read.parquet(truth_path)
    res = receval.evaluate(recs, truth, RECEVAL_METRICS)
    partitions = res.parameters.get("partitions")
    return {"values": dict(res.summary), "counts": res.counts, "partitions": partitions}


def _run(engine: str, spark: Any, recs: str, truth: str, cache: bool) -> dict[str, Any]:
    if engine == "mllib":
        return run_mllib(spark, recs, truth, cache)
    return run_receval(spark, recs, truth)


def _release(out: dict[str, Any]) -> None:
    cached = out.pop("_cached", None)
    if cached is not None:
        cached.unpersist(blocking=True)


def _jvm_heap() -> str | None:
    """The -Xmx of the session's JVM (a descendant named java), from its command line."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _ppids().items():
        children.setdefault(ppid, []).append(pid)
    todo = list(children.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"java"):
            for a in argv:
                if a.startswith(b"-Xmx"):
                    return a[4:].decode()
        todo.extend(children.get(pid, ()))
    return None


def child(args: argparse.Namespace) -> None:
    """One engine on one size in this fresh process: prints one JSON line."""
    engine = args.child
    import pyspark

    if engine == "receval":
        import receval  # noqa: F401  (imported outside the timing, as in run.py)
    t = time.perf_counter()
    spark = _session(args)
    session_s = time.perf_counter() - t
    warmup_s = None
    if args.warmup_recs:
        t = time.perf_counter()
        _release(_run(engine, spark, args.warmup_recs, args.warmup_truth, args.mllib_cache))
        warmup_s = time.perf_counter() - t
    before, _, _ = tree_rss(os.getpid())
    sampler = PeakSampler(os.getpid(), args.sample_ms / 1000)
    sampler.start()
    t = time.perf_counter()
    out = _run(engine, spark, args.recs, args.truth, args.mllib_cache)
    wall = time.perf_counter() - t
    memory = sampler.stop()
    _release(out)
    out.update(
        engine=engine,
        wall_s=round(wall, 3),
        session_s=round(session_s, 3),
        warmup_s=None if warmup_s is None else round(warmup_s, 3),
        rss_at_start_mib=round(before / MIB, 1),
        jvm_xmx=_jvm_heap(),
        pyspark=pyspark.__version__,
        **memory,
    )
    spark.stop()
    print(json.dumps(out, default=str))


# -- the parent: data, interleaved runs, tables ---------------------------------------------


def _spawn(
    engine: str, recs: Path, truth: Path, warm: Path | None, args: argparse.Namespace
) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", engine]
    cmd += ["--recs", str(recs), "--truth", str(truth), "--master", args.master]
    cmd += ["--driver-memory", args.driver_memory, "--sample-ms", str(args.sample_ms)]
    cmd += [] if args.mllib_cache else ["--no-mllib-cache"]
    for item in args.conf or ():
        cmd += ["--conf", item]
    if warm is not None:
        cmd += ["--warmup-recs", str(warm / "recs.parquet")]
        cmd += ["--warmup-truth", str(warm / "truth.parquet")]
    src = str(HERE.parent / "src")
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
    }
    load = os.getloadavg()[0]  # 1-minute average: includes the previous run's tail
    t = time.perf_counter()
    try:
        p = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=args.timeout, cwd=HERE.parent
        )
    except subprocess.TimeoutExpired:
        return {"engine": engine, "error": f"timeout after {args.timeout} s", "load1_before": load}
    process_s = time.perf_counter() - t
    if p.returncode != 0:
        tail = "\n".join(p.stderr.strip().splitlines()[-15:])
        return {"engine": engine, "error": f"exit {p.returncode}: {tail}", "load1_before": load}
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res.update(load1_before=round(load, 2), process_s=round(process_s, 2))
    return res


def _read_once(*paths: Path) -> None:
    """Read the files' bytes once, untimed: no run pays for a cold OS file cache."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def _fit(points: list[tuple[float, float]]) -> dict[str, Any] | None:
    """Least squares of seconds on millions of users, and how far from proportional."""
    points = sorted(points)
    if len(points) < 2:
        return None
    xs, ys = [u / 1e6 for u, _ in points], [t for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    # the two largest sizes, where fixed costs weigh least
    (u0, t0), (u1, t1) = points[-2], points[-1]
    growth = (t1 / t0) / (u1 / u0)  # 1 = proportional to users, < 1 = fixed costs amortised
    exponent = math.log(t1 / t0) / math.log(u1 / u0)
    if slope <= 0:
        verdict = "no growth measured: fixed costs and noise dominate these sizes"
    elif len(points) == 2:
        verdict = "two sizes: a line always fits; see the growth"
    elif ss_tot == 0 or 1 - ss_res / ss_tot >= 0.99:
        verdict = "linear (R^2 >= 0.99)"
    else:
        verdict = f"not linear (R^2 = {1 - ss_res / ss_tot:.3f})"
    return {
        "s_per_million_users": round(slope, 3),
        "intercept_s": round(intercept, 3),
        "r2": None if len(points) == 2 or ss_tot == 0 else round(1 - ss_res / ss_tot, 4),
        "time_ratio": round(t1 / t0, 3),
        "users_ratio": round(u1 / u0, 3),
        "of_proportional": round(growth, 3),
        "exponent": round(exponent, 3),
        "verdict": verdict,
    }


def _mllib_conventions(recs: Path, truth: Path) -> dict[str, float]:
    """receval in-process with MLlib's definitions on the users of the left join (untimed)."""
    import receval

    metrics = list(SAME_NAME.values())
    res = receval.evaluate(
        str(recs), str(truth), metrics, convention="mllib", missing_recs="skip", ties="item"
    )
    # the convention renames some (ndcg@10 -> ndcg@10[gain=binary]); the order is kept
    return dict(zip(metrics, res.summary.values(), strict=True))


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "failed" if x is None else format(x, spec)


def _roles_text(peaks: dict[str, float] | None, spec: str = ",.0f") -> str:
    """'driver Python / JVM / workers' (peaks in MiB, CPU seconds), as a table cell."""
    if not peaks:
        return "failed"
    return " / ".join(format(peaks[k], spec) for k in ROLES)


def _memory_table(rows: list[dict[str, Any]]) -> None:
    """Peak RSS by role: each role's largest sample over the repeats."""
    print(
        "\nBy role (each role's own peak RSS, largest over the repeats): "
        "driver Python / JVM (local mode: driver and executors) / Python workers\n"
    )
    print("| users | MLlib peak MiB | receval peak MiB | MLlib CPU s | receval CPU s |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['users']:,} | {_roles_text(r['mllib_role_peak_mib'])} | "
            f"{_roles_text(r['receval_role_peak_mib'])} | "
            f"{_roles_text(r['mllib_cpu_s'], '.1f')} | {_roles_text(r['receval_cpu_s'], '.1f')} |"
        )
    print("\nCPU s: median over the repeats of each role's CPU time in the timed section.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", default="100000,1000000", help="comma-separated sizes")
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine and size (median)")
    ap.add_argument("--data", default=str(HERE.parent / "bench-data"), help="workload folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g", help="spark.driver.memory (JVM -Xmx)")
    ap.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra Spark setting")
    ap.add_argument(
        "--mllib-cache",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="cache MLlib's joined arrays before its 4 evaluate calls (default: yes)",
    )
    ap.add_argument("--warmup-users", type=int, default=2000, help="untimed warm-up size; 0: none")
    ap.add_argument("--sample-ms", type=float, default=50.0, help="RSS sampling period")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds per run")
    ap.add_argument("--json", help="write the results here")
    # the child's arguments
    ap.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--recs", help=argparse.SUPPRESS)
    ap.add_argument("--truth", help=argparse.SUPPRESS)
    ap.add_argument("--warmup-recs", help=argparse.SUPPRESS)
    ap.add_argument("--warmup-truth", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    sizes = [int(u) for u in args.users.split(",")]
    data = Path(args.data)
    warm = None
    if args.warmup_users:
        warm = data / str(args.warmup_users)
        workload.ensure(args.warmup_users, warm, args.seed)
    print(
        f"# {args.master}, spark.driver.memory={args.driver_memory}, "
        f"{os.cpu_count()} cores, python {platform.python_version()}, "
        f"MLlib arrays {'cached' if args.mllib_cache else 'not cached'}, "
        f"warm-up {args.warmup_users} users, repeat {args.repeat}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    for users in sizes:
        folder = data / str(users)
        t = time.perf_counter()
        meta = workload.ensure(users, folder, args.seed)
        gen_s = time.perf_counter() - t
        if gen_s > 1:
            print(f"# generated {users:,} users in {gen_s:.0f} s -> {folder}", flush=True)
        recs, truth = folder / "recs.parquet", folder / "truth.parquet"
        _read_once(recs, truth)
        runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
        for rep in range(args.repeat):
            for engine in ENGINES:  # interleaved: mllib, receval, mllib, receval, ...
                res = _spawn(engine, recs, truth, warm, args)
                runs[engine].append(res)
                if "error" in res:
                    print(f"  {users:,} {engine} #{rep + 1}: FAILED {res['error']}", flush=True)
                else:
                    warmed = res["warmup_s"]
                    print(
                        f"  {users:,} {engine} #{rep + 1}: {res['wall_s']:.2f} s, "
                        f"peak {res['peak_rss_mib']:.0f} MiB, by role "
                        + _roles_text(res["role_peak_mib"])
                        + ", CPU s "
                        + _roles_text(res["role_cpu_s"], ".1f")
                        + " "
                        + ("(cold)" if warmed is None else f"(warm-up {warmed} s)"),
                        flush=True,
                    )
        row: dict[str, Any] = {
            "users": users,
            "recs_rows": meta["recs_rows"],
            "truth_rows": meta["truth_rows"],
            "runs": runs,
        }
        for engine in ENGINES:
            ok = [r for r in runs[engine] if "error" not in r]
            row[f"{engine}_s"] = statistics.median(r["wall_s"] for r in ok) if ok else None
            row[f"{engine}_peak_mib"] = max(r["peak_rss_mib"] for r in ok) if ok else None
            row[f"{engine}_values"] = ok[0]["values"] if ok else None
            row[f"{engine}_cpu_s"] = (
                {k: statistics.median(r["role_cpu_s"][k] for r in ok) for k in ROLES}
                if ok
                else None
            )
            row[f"{engine}_role_peak_mib"] = (
                {k: max(r["role_peak_mib"][k] for r in ok) for k in ROLES} if ok else None
            )
            times = [r["wall_s"] for r in ok]
            row[f"{engine}_spread"] = max(times) / min(times) if len(times) > 1 else None
        if row["mllib_s"] and row["receval_s"]:
            row["ratio"] = row["mllib_s"] / row["receval_s"]
        else:
            row["ratio"] = None
        rows.append(row)

    noisy = [
        f"{e} at {r['users']:,} users: {r[f'{e}_spread']:.2f}x"
        for r in rows
        for e in ENGINES
        if r[f"{e}_spread"] and r[f"{e}_spread"] > 1.5
    ]
    if noisy:
        print(
            "\n# noisy: slowest / fastest run above 1.5x for "
            + "; ".join(noisy)
            + " (the machine is shared: compare ratios within one run, or raise --repeat)"
        )
    xmx = next(
        (r["jvm_xmx"] for row in rows for e in ENGINES for r in row["runs"][e] if r.get("jvm_xmx")),
        f"{args.driver_memory} (asked)",
    )
    print()
    print(
        "| users | rec rows | MLlib s | receval s | ratio MLlib/receval | MLlib peak RSS MiB "
        "| receval peak RSS MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['users']:,} | {r['recs_rows']:,} | {_fmt(r['mllib_s'])} | "
            f"{_fmt(r['receval_s'])} | {_fmt(r['ratio'], '.1f')}{'x' if r['ratio'] else ''} | "
            f"{_fmt(r['mllib_peak_mib'], ',.0f')} | {_fmt(r['receval_peak_mib'], ',.0f')} |"
        )
    print(
        f"\nTimes: median of {args.repeat} fresh processes each, from spark.read.parquet to the "
        "means ("
        + ("warm session" if args.warmup_users else "cold session: first job of the JVM")
        + "); peak RSS: largest over the repeats, whole process tree "
        f"(driver Python + JVM with -Xmx{xmx} + Python workers)."
    )

    _memory_table(rows)
    slopes: dict[str, Any] = {}
    for engine in ENGINES:
        points = [(r["users"], r[f"{engine}_s"]) for r in rows if r[f"{engine}_s"]]
        slopes[engine] = _fit(points)
    if any(slopes.values()):
        print(
            "\n| engine | s per 1M users (slope) | intercept s | time ratio / users ratio | "
            "verdict |"
        )
        print("|---|---:|---:|---:|---|")
        for engine, fit in slopes.items():
            if fit:
                print(
                    f"| {engine} | {fit['s_per_million_users']:.2f} | {fit['intercept_s']:.2f} | "
                    f"{fit['time_ratio']:.2f}x / {fit['users_ratio']:.2f}x = "
                    f"{fit['of_proportional']:.2f} of proportional | {fit['verdict']} |"
                )

    first = next((r for r in rows if r["mllib_values"] and r["receval_values"]), None)
    comparison: dict[str, Any] = {}
    if first is not None:
        folder = data / str(first["users"])
        same = _mllib_conventions(folder / "recs.parquet", folder / "truth.parquet")
        print(f"\nValues at {first['users']:,} users (they differ by definition; not compared):\n")
        print(
            "| MLlib RankingEvaluator | MLlib | receval metric | receval (default) | "
            "receval in-process, convention=mllib, missing_recs=skip |"
        )
        print("|---|---:|---|---:|---:|")
        for m, name in SAME_NAME.items():
            a, b = first["mllib_values"][m], first["receval_values"][name]
            print(f"| {m} | {a:.6f} | {name} | {b:.6f} | {same[name]:.6f} |")
            comparison[m] = {"mllib": a, name: b, "receval_mllib_convention": same[name]}

    if args.json:
        out = {
            "benchmark": "spark",
            "machine": {
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "settings": {
                "master": args.master,
                "driver_memory": args.driver_memory,
                "conf": args.conf or [],
                "mllib_cache": args.mllib_cache,
                "warmup_users": args.warmup_users,
                "repeat": args.repeat,
                "seed": args.seed,
                "receval_metrics": RECEVAL_METRICS,
                "mllib_metrics": list(MLLIB_METRICS),
            },
            "sizes": rows,
            "slopes": slopes,
            "values": comparison,
        }
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
        print(f"\n# wrote {args.json}")


if __name__ == "__main__":
    main()
