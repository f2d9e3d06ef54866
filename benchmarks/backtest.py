"""A 12-fold backtest's overhead against its model time (issue #36 points 3 and 6).

    python benchmarks/backtest.py --users 10000 [--folds 12] [--test-length 30D]
        [--models popular,item_knn] [--metrics demo|standard] [--repeat 1]

Makes the synthetic log of ``receval.synthetic_interactions(--users)`` (the
demo's generator: about 25 rows per user over two years), and backtests each
baseline of :mod:`receval.workflow.baselines` over ``--folds`` expanding
windows of ``--test-length`` with :func:`receval.backtest`. receval records
the time of each fold's ``fit_predict`` (the model: fit and top-k lists of
the fold's test users) and its own (the split once, then each fold's
evaluation: finding the test users, reading the lists, the metrics); this
prints, per model, the mean model time of one fold, receval's overhead per
fold (split / folds + evaluation) and its share of the model time (the
target: under 10%). With ``--repeat`` the fastest run of each model is kept.
``--metrics demo`` is the demo's 18 metrics (beyond-accuracy ones included,
which read each fold's train), ``accuracy`` its 12 ranking metrics (lists of
20, no train), ``standard`` the 12 ranking metrics of the other benchmarks
(@10 and @100: lists of 100).

``split`` includes, where a metric reads the train, indexing the log's
(user, item) rows once (:class:`receval.io.items.TrainRows`, a log in time
order). Before/after: run it with ``PYTHONPATH=<other tree>/src`` in turns.

``--stages`` also prints, per model, where receval's time goes (CPU ms per
fold, the fastest run): the split, the truth's pairs made distinct, the
train index (once, spread over the folds), the item context counted from
it, the seen-in-train lookup of the list rows (thread CPU: it runs on the
engine's threads), the engine's run and the whole of ``evaluate``. Stages
are timed by wrapping receval's functions (a tree without one of them
shows no line for it); CPU time, so that a shared machine's load moves
the figures less than wall time.
"""

from __future__ import annotations

import argparse
import os
import time

STANDARD = [f"{m}@10,100" for m in ("precision", "recall", "ndcg", "ap", "rr", "hit_rate")]
#: the demo's ranking metrics (lists of 20), without those that read the train
ACCURACY = [
    "precision@5,10,20",
    "recall@5,10,20",
    "ndcg@5,10,20",
    "map@10",
    "mrr@10",
    "hit_rate@10",
]


#: (module, object or None, function, label, clock) of what ``--stages`` times
STAGES = [
    ("receval.workflow.backtest", None, "split", "split", "process"),
    ("receval.workflow.backtest", None, "_each_pair_once", "truth: each pair once", "process"),
    ("receval.workflow.backtest", "_Trains", "index", "train index (once)", "process"),
    ("receval.evaluation.api", None, "_item_context", "item context", "process"),
    ("receval.metrics.context", "TrainPairs", "found", "seen in train (thread)", "thread"),
    ("receval.engines.base", "Engine", "run", "engine run", "process"),
    ("receval.evaluation.api", None, "evaluate", "evaluate (all)", "process"),
]


def timed_stages(spent: dict[str, float]) -> None:
    """Wrap the functions of :data:`STAGES` to add their CPU seconds to ``spent``."""
    import functools
    import importlib

    for module, owner, name, label, clock in STAGES:
        target: object = importlib.import_module(module)
        if owner is not None:
            target = getattr(target, owner, None)
        f = getattr(target, name, None)
        if f is None:
            continue
        tick = time.thread_time if clock == "thread" else time.process_time

        @functools.wraps(f)
        def wrapped(*a, _f=f, _label=label, _tick=tick, **k):  # type: ignore[no-untyped-def]
            t = _tick()
            try:
                return _f(*a, **k)
            finally:
                spent[_label] = spent.get(_label, 0.0) + _tick() - t

        setattr(target, name, wrapped)


def run(args: argparse.Namespace) -> list[dict[str, float | str]]:
    import receval
    from receval.workflow.baselines import recommend
    from receval.workflow.demo import DEMO_METRICS

    metrics = {"demo": DEMO_METRICS, "accuracy": ACCURACY, "standard": STANDARD}[args.metrics]
    started = time.perf_counter()
    log = receval.synthetic_interactions(args.users, seed=args.seed)
    print(f"log: {len(log):,} rows, {args.users:,} users ({time.perf_counter() - started:.1f}s)")
    windows = {"test_length": args.test_length, "n_folds": args.folds}
    rows = []
    spent: dict[str, float] = {}
    stages: dict[str, float] = {}
    if args.stages:
        timed_stages(spent)
    for name in args.models.split(","):

        def fit_predict(train, users, fold, name=name):  # type: ignore[no-untyped-def]
            return recommend(name, train, users=users, k=fold.k)

        best = None
        for _ in range(args.repeat):
            spent.clear()
            bt = receval.backtest(log, windows, fit_predict, metrics, threshold=4)
            if best is None or bt.timing["receval_total"] < best.timing["receval_total"]:
                best, stages = bt, dict(spent)
        assert best is not None
        t = best.timing
        folds = len(best)
        model = t["model_total"] / folds
        overhead = t["receval_total"] / folds
        frame = best.to_frame()
        rows.append(
            {
                "model": name,
                "folds": folds,
                "test users / fold": frame["test_users"].mean(),
                "train rows (last fold)": frame["train_rows"].iloc[-1],
                "model s / fold": model,
                "receval s / fold": overhead,
                "split s / fold": t["split"] / folds,
                "evaluate s / fold": sum(t["evaluate"]) / folds,
                "share": overhead / model,
                "ndcg@10": best.summary.get("ndcg@10", float("nan")),
                "stages": {k: v / folds for k, v in stages.items()},
            }
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--users", type=int, default=10_000)
    p.add_argument("--folds", type=int, default=12)
    p.add_argument("--test-length", default="30D")
    p.add_argument("--models", default="popular,item_knn")
    p.add_argument("--metrics", choices=("demo", "accuracy", "standard"), default="demo")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stages", action="store_true", help="also print CPU ms per fold by stage")
    args = p.parse_args()
    load = os.getloadavg()[0]
    rows = run(args)
    print(
        f"\n{args.folds} folds of {args.test_length}, {args.users:,} users, {args.metrics} metrics "
        f"(load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end)"
    )
    head = "| model | test users / fold | model s / fold | receval s / fold | of which split "
    print(head + "| of which evaluate | share | ndcg@10 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['model']} | {r['test users / fold']:,.0f} | {r['model s / fold']:.3f} | "
            f"{r['receval s / fold']:.3f} | {r['split s / fold']:.3f} | "
            f"{r['evaluate s / fold']:.3f} | {r['share']:.1%} | {r['ndcg@10']:.4f} |"
        )
    for r in rows if args.stages else []:
        print(f"\n{r['model']}: CPU ms per fold by stage (nested: evaluate holds the context, ...)")
        for label, seconds in r["stages"].items():  # type: ignore[union-attr]
            print(f"  {label:28s} {seconds * 1000:7.1f}")


if __name__ == "__main__":
    main()
