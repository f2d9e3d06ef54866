"""``receval demo``: the whole offline-evaluation pipeline in one call, no download.

:func:`run_demo` (the CLI's ``receval demo`` wraps it):

1. data: the synthetic log built into the package
   (:func:`receval.synthetic_interactions`: Zipf-like popularity, users
   with tastes over genres, timestamps), or the user's own log
   (:func:`receval.read_interactions`: CSV, Parquet, MovieLens
   ``u.data`` / ``ratings.dat`` / ``ratings.csv``);
2. split: per user, chronologically — each user's last 20% of interactions
   are test (users keep at least one training row; users with fewer than 5
   interactions are dropped first, repeated to a fixed point; a log without
   timestamps is split at random per user instead);
3. three baselines (:mod:`receval.workflow.baselines`): random, most popular, item-kNN,
   each recommending 20 unseen items to every test user;
4. evaluation: precision, recall, nDCG at 5, 10, 20; MAP, MRR, hit rate at
   10; coverage, novelty, ARP, long-tail share, Gini and personalization at 10
   (popularity from the training part);
5. comparison: every pair of systems, paired over users — ``receval.analysis.compare``
   when the installed receval has it; and always a paired t-test
   (``scipy.stats.ttest_rel``) on each per-user metric with Holm's correction
   over the pairs;
6. output: the leaderboard printed and written (CSV, Markdown), the runs
   (Parquet), the split (Parquet + JSON), per-system results (JSON), the
   significance table (CSV), and the HTML report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.errors import ReceValError
from receval.evaluation.api import evaluate
from receval.evaluation.result import Result
from receval.io.interactions import as_frame, read_interactions
from receval.workflow import baselines
from receval.workflow.split import Split, split
from receval.workflow.synthetic import synthetic_interactions

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

#: Metrics of the HTML report (curves run over every cut-off up to the largest).
REPORT_METRICS = ("ndcg@10", "recall@10", "precision@10", "ap@10", "coverage@10")


def _load(interactions: Any, users: int, seed: int) -> tuple[pd.DataFrame, str]:
    if interactions is None:
        log = synthetic_interactions(users, seed=seed)
        return (
            log,
            f"synthetic log (receval.synthetic_interactions, users={users}, seed={seed})",
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
        ``Comparison.pairs``), ``comparison`` (what ``receval.analysis.compare``
        returned, or None), ``results`` (system → :class:`~receval.Result`),
        ``split`` (the :class:`~receval.workflow.split.Split`), ``files`` (name →
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
    from receval.analysis.compare import compare

    # the runs are already evaluated: compare reuses their per-user values
    comparison = compare(
        {name: results[name] for name in SYSTEMS},
        truth,
        list(TESTED),
        test="t",
        correction="holm",
        ci="percentile",
        n_resamples=2000,
        seed=seed,
    )
    sig = comparison.pairs.reset_index()

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
        "## Significance (paired t-tests, Holm correction over all comparisons)",
        "",
        comparison.to_markdown(),
    ]
    files["leaderboard_md"] = out / "leaderboard.md"
    files["leaderboard_md"].write_text("\n".join(md))
    files["significance_csv"] = out / "significance.csv"
    sig.to_csv(files["significance_csv"], index=False)
    files["results_json"] = out / "results.json"
    files["results_json"].write_text(
        json.dumps({n: r.to_dict() for n, r in results.items()}, indent=2) + "\n"
    )
    from receval.analysis.report import report

    files["report_html"] = out / "report.html"
    report(
        runs,
        truth,
        REPORT_METRICS,
        out=files["report_html"],
        train=train,
        title="receval demo",
        test="t",
        ci="percentile",
        n_resamples=1000,
        seed=seed,
    )

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
