"""``receval demo``: the whole offline-evaluation pipeline in one call, no download.

:func:`run_demo` (the CLI's ``receval demo`` wraps it):

1. data: the synthetic log built into the package
   (:func:`receval.data.synthetic_interactions`: Zipf-like popularity, users
   with tastes over genres, timestamps), or the user's own log
   (:func:`receval.data.read_interactions`: CSV, Parquet, MovieLens
   ``u.data`` / ``ratings.dat`` / ``ratings.csv``);
2. split: per user, chronologically — each user's last 20% of interactions
   are test (users keep at least one training row; users with fewer than 5
   interactions are dropped first, repeated to a fixed point; a log without
   timestamps is split at random per user instead);
3. three baselines (:mod:`receval.baselines`): random, most popular, item-kNN,
   each recommending 20 unseen items to every test user;
4. evaluation: precision, recall, nDCG at 5, 10, 20; MAP, MRR, hit rate at
   10; coverage, novelty, ARP, long-tail share, Gini and personalization at 10
   (popularity from the training part);
5. comparison: every pair of systems, paired over users — ``receval.compare``
   when the installed receval has it; and always a paired t-test
   (``scipy.stats.ttest_rel``) on each per-user metric with Holm's correction
   over the pairs;
6. output: the leaderboard printed and written (CSV, Markdown), the runs
   (Parquet), the split (Parquet + JSON), per-system results (JSON), the
   significance table (CSV), and an HTML report when ``receval.report`` exists.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import baselines
from .api import evaluate
from .data.readers import as_frame, read_interactions
from .data.synthetic import synthetic_interactions
from .errors import ReceValError
from .result import Result
from .split import Split, split

__all__ = ["DEMO_METRICS", "SYSTEMS", "run_demo"]

#: The metrics the demo reports (canonical names appear in the output).
DEMO_METRICS: list[str] = [
    "precision@5,10,20",
    "recall@5,10,20",
    "ndcg@5,10,20",
    "map@10",
    "mrr@10",
    "hit_rate@10",
    "coverage@10",
    "novelty@10",
    "arp@10",
    "long_tail@10",
    "gini@10",
    "personalization@10",
]

#: The systems, best expected first.
SYSTEMS: tuple[str, ...] = ("item_knn", "popular", "random")

#: Length of every recommended list.
LIST_LENGTH = 20

#: The metric the leaderboard is sorted by.
MAIN_METRIC = "ndcg@10"

#: Per-user metrics tested for significance.
TESTED = ("ndcg@10", "recall@10", "ap@10")


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (NaN kept)."""
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if not len(ok):
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adj
    return out


def paired_tests(results: dict[str, Result], metrics: tuple[str, ...] = TESTED) -> pd.DataFrame:
    """Paired t-tests between every pair of systems on per-user values.

    Users are aligned by id; a user counts in a pair when both systems have a
    value. p-values are two-sided (``scipy.stats.ttest_rel``), then adjusted
    with Holm's method over the pairs of each metric.

    Returns:
        One row per (metric, a, b): ``mean_a``, ``mean_b``, ``diff`` (a − b),
        ``users``, ``t``, ``p``, ``p_holm``, ``significant`` (p_holm < 0.05).
    """
    from scipy import stats

    rows = []
    for metric in metrics:
        block = []
        for a, b in itertools.combinations(results, 2):
            pa, pb = results[a].per_user, results[b].per_user
            if metric not in pa.columns or metric not in pb.columns:
                continue
            joined = pd.concat([pa[metric].rename("a"), pb[metric].rename("b")], axis=1).dropna()
            x, y = joined["a"].to_numpy(), joined["b"].to_numpy()
            if len(x) > 1 and np.any(x != y):
                t, p = stats.ttest_rel(x, y)
            else:
                t, p = math.nan, (1.0 if len(x) > 1 else math.nan)
            block.append(
                {
                    "metric": metric,
                    "a": a,
                    "b": b,
                    "mean_a": float(x.mean()) if len(x) else math.nan,
                    "mean_b": float(y.mean()) if len(y) else math.nan,
                    "diff": float((x - y).mean()) if len(x) else math.nan,
                    "users": len(x),
                    "t": float(t),
                    "p": float(p),
                }
            )
        if block:
            adj = _holm(np.array([r["p"] for r in block], dtype=float))
            for r, q in zip(block, adj, strict=True):
                r["p_holm"] = float(q)
                r["significant"] = bool(q < 0.05)
            rows += block
    columns = [
        "metric",
        "a",
        "b",
        "mean_a",
        "mean_b",
        "diff",
        "users",
        "t",
        "p",
        "p_holm",
        "significant",
    ]
    return pd.DataFrame(rows, columns=columns)


def _load(interactions: Any, users: int, seed: int) -> tuple[pd.DataFrame, str]:
    if interactions is None:
        log = synthetic_interactions(users, seed=seed)
        return (
            log,
            f"synthetic log (receval.data.synthetic_interactions, users={users}, seed={seed})",
        )
    if isinstance(interactions, (str, Path)):
        return read_interactions(interactions), str(interactions)
    return as_frame(interactions, "interactions"), "the given table"


def _markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join([frame.index.name or "", *cols]) + " |"]
    lines.append("|---|" + "---:|" * len(cols))
    for idx, row in frame.iterrows():
        cells = [f"{v:.{digits}f}" if isinstance(v, (float, np.floating)) else str(v) for v in row]
        lines.append("| " + " | ".join([str(idx), *cells]) + " |")
    return "\n".join(lines) + "\n"


def _try_compare(
    runs: dict[str, pd.DataFrame], truth: pd.DataFrame, train: pd.DataFrame, note: Callable
) -> Any:
    """``receval.compare`` when the installed receval has it (else None)."""
    import receval

    compare = getattr(receval, "compare", None)
    if compare is None:
        try:
            from . import compare as module  # type: ignore[attr-defined]
        except ImportError:
            return None
        compare = getattr(module, "compare", None)
    if not callable(compare):
        return None
    metrics = [m for m in DEMO_METRICS if not m.startswith(("coverage", "gini", "person"))]
    try:
        return compare(runs, truth, metrics, train=train)
    except Exception as exc:  # an API still being built: fall back, and say so
        note(f"receval.compare failed ({type(exc).__name__}: {exc}); paired t-tests only")
        return None


def _try_report(comparison: Any, results: dict[str, Result], path: Path, note: Callable) -> bool:
    import receval

    report = getattr(receval, "report", None)
    if not callable(report):
        return False
    try:
        out = report(comparison if comparison is not None else results, path)
    except Exception as exc:  # an API still being built: skip, and say so
        note(f"receval.report failed ({type(exc).__name__}: {exc}); no HTML report")
        return False
    if isinstance(out, str) and not path.exists():
        path.write_text(out)
    return path.exists()


def run_demo(
    out_dir: str | Path,
    *,
    users: int = 10_000,
    interactions: Any = None,
    seed: int = 0,
    quiet: bool = False,
) -> dict[str, Any]:
    """Generate (or read) a log, split it, train three baselines, evaluate and compare them.

    Args:
        out_dir: where the files go (created if needed).
        users: users of the synthetic log (ignored with ``interactions``).
        interactions: your own log instead: a path (CSV, Parquet, MovieLens
            ``u.data`` / ``ratings.dat`` / ``ratings.csv``) or a table with
            ``user``, ``item`` and, ideally, ``timestamp`` columns.
        seed: seed of the synthetic log and of the random baseline.
        quiet: print nothing.

    Returns:
        ``leaderboard`` (DataFrame: one row per system, one column per metric,
        best ``ndcg@10`` first), ``significance`` (DataFrame, see
        :func:`paired_tests`), ``comparison`` (what ``receval.compare``
        returned, or None), ``results`` (system → :class:`~receval.Result`),
        ``split`` (the :class:`~receval.split.Split`), ``files`` (name →
        path), ``notes``, ``seconds``.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    say: Callable[[str], None] = (lambda s: None) if quiet else print

    log, source = _load(interactions, users, seed)
    say(
        f"data: {source}: {len(log)} interactions, {log['user'].nunique()} users, "
        f"{log['item'].nunique()} items"
    )
    options: dict[str, Any] = {"test_size": 0.2, "min_user_interactions": 5}
    method = "user_time"
    if "timestamp" not in log.columns:
        method = "user_random"
        options["seed"] = seed
        notes.append("the log has no timestamp column: split at random per user instead")
    sp: Split = split(log, method, **options)  # type: ignore[arg-type]
    if len(sp.test) == 0 or len(sp.train) == 0:
        raise ReceValError("the split left an empty train or test part: too few interactions")
    truth = sp.test.drop_duplicates(["user", "item"])[["user", "item"]]
    if len(truth) < len(sp.test):
        notes.append(f"{len(sp.test) - len(truth)} repeated test (user, item) rows counted once")
    train = sp.train[["user", "item"]]
    for line in sp.describe():
        say(line)

    files: dict[str, Path] = {}
    for name, path in sp.save(out / "split").items():
        files[f"split_{name}"] = path
    test_users = pd.unique(truth["user"])
    runs: dict[str, pd.DataFrame] = {}
    results: dict[str, Result] = {}
    (out / "runs").mkdir(exist_ok=True)
    for name in SYSTEMS:
        t = time.perf_counter()
        run = baselines.recommend(name, train, users=test_users, k=LIST_LENGTH, seed=seed)  # type: ignore[arg-type]
        fit = time.perf_counter() - t
        runs[name] = run
        files[f"run_{name}"] = out / "runs" / f"{name}.parquet"
        run.to_parquet(files[f"run_{name}"], index=False)
        results[name] = evaluate(run, truth, DEMO_METRICS, train=train)
        say(
            f"{name}: {len(run)} recommendations in {fit:.2f} s, evaluated in "
            f"{time.perf_counter() - t - fit:.2f} s"
        )

    names = [str(s) for s in results[SYSTEMS[0]].metrics]
    board = pd.DataFrame(
        {name: [res.summary[m] for m in names] for name, res in results.items()}, index=names
    ).T
    board.index.name = "system"
    board = board.sort_values(MAIN_METRIC, ascending=False, kind="stable")
    sig = paired_tests(results)
    comparison = _try_compare(runs, truth, train, notes.append)

    files["leaderboard_csv"] = out / "leaderboard.csv"
    board.to_csv(files["leaderboard_csv"])
    md = [
        "# receval demo: leaderboard",
        "",
        f"Data: {source}.",
        "",
        f"Split: {method}, " + ", ".join(f"{k}={v}" for k, v in options.items()),
        "",
        _markdown(board),
        "## Paired t-tests (Holm-adjusted over pairs)",
        "",
    ]
    md.append(_markdown(sig.set_index("metric")) if len(sig) else "(none)\n")
    if comparison is not None:
        md += ["## receval.compare", "", "```", str(comparison), "```", ""]
    files["leaderboard_md"] = out / "leaderboard.md"
    files["leaderboard_md"].write_text("\n".join(md))
    files["significance_csv"] = out / "significance.csv"
    sig.to_csv(files["significance_csv"], index=False)
    files["results_json"] = out / "results.json"
    files["results_json"].write_text(
        json.dumps({n: r.to_dict() for n, r in results.items()}, indent=2) + "\n"
    )
    report_path = out / "report.html"
    if _try_report(comparison, results, report_path, notes.append):
        files["report_html"] = report_path

    shown = [
        c
        for c in (
            "ndcg@10",
            "recall@10",
            "precision@10",
            "ap@10",
            "rr@10",
            "coverage@10",
            "novelty@10",
            "gini@10",
        )
        if c in board.columns
    ]
    say("")
    say(board[shown].to_string(float_format=lambda v: f"{v:.4f}"))
    say("")
    for r in sig[sig["metric"] == MAIN_METRIC].itertuples():
        verdict = "significant" if r.significant else "not significant"
        say(
            f"{r.metric}: {r.a} vs {r.b}: diff {r.diff:+.4f} over {r.users} users, "
            f"p_holm = {r.p_holm:.2g} ({verdict})"
        )
    if comparison is not None:
        say(str(comparison))
    for n in notes:
        say(f"note: {n}")
    seconds = time.perf_counter() - t0
    say("")
    say(f"files ({seconds:.1f} s):")
    for name, path in files.items():
        say(f"  {name}: {path}")
    return {
        "leaderboard": board,
        "significance": sig,
        "comparison": comparison,
        "results": results,
        "split": sp,
        "files": files,
        "notes": notes,
        "seconds": seconds,
    }
