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
    for name in args.models.split(","):

        def fit_predict(train, users, fold, name=name):  # type: ignore[no-untyped-def]
            return recommend(name, train, users=users, k=fold.k)

        best = None
        for _ in range(args.repeat):
            bt = receval.backtest(log, windows, fit_predict, metrics, threshold=4)
            if best is None or bt.timing["receval_total"] < best.timing["receval_total"]:
                best = bt
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


if __name__ == "__main__":
    main()
