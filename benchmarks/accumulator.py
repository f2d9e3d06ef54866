"""receval.Accumulator against torchmetrics' retrieval metrics on a stream of dense scores.

    python benchmarks/accumulator.py [--users 10000] [--items 50000] [--batch 1000]

Run it with an interpreter that has torch, torchmetrics and receval
(``pip install torch==2.13.0 torchmetrics==1.9.0 && pip install -e .``). Each batch
is ``--batch`` users × ``--items`` float32 scores (a signal on each user's 5
held-out items, 20 seen items excluded). Both libraries compute nDCG, MAP,
MRR, recall and precision at 10 and 20 over the whole stream:

- receval: ``Accumulator.update_scores(scores, targets, exclude=seen)`` per
  batch (top 20 chosen on the tensors' device), one ``compute()``;
- torchmetrics: a ``MetricCollection`` of the ten ``Retrieval*`` metrics fed
  the flattened batch (``preds``, ``target``, ``indexes``; seen items scored
  −inf, since torchmetrics cannot leave items out). It keeps every score of the
  stream until ``compute()``; to stay within memory it is computed and reset
  per batch and the batch means averaged (every batch has the same number of
  users, each with 5 relevant items, so this is the mean over users).

Prints the median time of each over ``--repeat`` runs, the ratio, the peak
memory the stream adds, and the largest difference between the two libraries'
means (float32 in torchmetrics, float64 in receval).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

KS = (10, 20)
NAMES = ("ndcg", "ap", "rr", "recall", "precision")


def batches(users: int, items: int, batch: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    for start in range(0, users, batch):
        m = min(batch, users - start)
        scores = torch.randn(m, items, generator=g)
        held = torch.randint(0, items, (m, 5), generator=g)
        seen = torch.randint(0, items, (m, 20), generator=g)
        targets = torch.zeros(m, items, dtype=torch.bool)
        targets.scatter_(1, held, True)
        scores += targets * 2.5  # the model's signal
        exclude = torch.zeros(m, items, dtype=torch.bool)
        exclude.scatter_(1, seen, True)
        exclude &= ~targets
        yield scores, targets, exclude


def run_receval(args: argparse.Namespace) -> tuple[float, dict[str, float]]:
    import receval

    names = [f"{n}@{k}" for n in NAMES for k in KS]
    # torchmetrics' AP@k divides by the relevant items retrieved (receval's
    # denominator=hits); its other four definitions are receval's. (Not the
    # torchmetrics convention: it takes R from the lists, which here hold the
    # top 20 only; torchmetrics sees every candidate.)
    metrics = [f"{m}[denominator=hits]" if m.startswith("ap@") else m for m in names]
    t = time.perf_counter()
    acc = receval.Accumulator(metrics)
    for scores, targets, exclude in batches(args.users, args.items, args.batch, args.seed):
        acc.update_scores(scores, targets, exclude=exclude)
    res = acc.compute()
    # the summary follows the metrics' order: keyed by the names asked
    return time.perf_counter() - t, dict(zip(names, res.summary.values(), strict=True))


def run_torchmetrics(args: argparse.Namespace) -> tuple[float, dict[str, float]]:
    import torch
    from torchmetrics import MetricCollection
    from torchmetrics import retrieval as R

    kinds = {
        "ndcg": R.RetrievalNormalizedDCG,
        "ap": R.RetrievalMAP,
        "rr": R.RetrievalMRR,
        "recall": R.RetrievalRecall,
        "precision": R.RetrievalPrecision,
    }
    t = time.perf_counter()
    coll = MetricCollection({f"{n}@{k}": kinds[n](top_k=k) for n in NAMES for k in KS})
    sums: dict[str, float] = {}
    seen_batches = 0
    for scores, targets, exclude in batches(args.users, args.items, args.batch, args.seed):
        m, n = scores.shape
        preds = scores.masked_fill(exclude, float("-inf")).reshape(-1)
        indexes = torch.arange(m).repeat_interleave(n)
        coll.update(preds, targets.reshape(-1), indexes=indexes)
        for name, value in coll.compute().items():
            sums[name] = sums.get(name, 0.0) + float(value)
        coll.reset()
        seen_batches += 1
    out = {name: total / seen_batches for name, total in sums.items()}
    return time.perf_counter() - t, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("receval", "torchmetrics"), default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.only:  # one library in this process: its own peak memory
        run = run_receval if args.only == "receval" else run_torchmetrics
        times = [run(args)[0] for _ in range(args.repeat)]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{args.only}: median {statistics.median(times):.2f} s "
            f"({', '.join(f'{x:.2f}' for x in times)}), peak RSS {peak:.0f} MiB"
        )
        return
    mine, theirs = [], []
    for _ in range(args.repeat):  # interleaved: the machine is shared
        a, ours = run_receval(args)
        b, peer = run_torchmetrics(args)
        mine.append(a)
        theirs.append(b)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.users:,} users x {args.items:,} items, batches of {args.batch:,}")
    for name, times in (("receval     ", mine), ("torchmetrics", theirs)):
        runs = ", ".join(f"{x:.2f}" for x in times)
        print(f"{name} median {statistics.median(times):.2f} s  ({runs})")
    print(
        f"ratio        receval is {statistics.median(theirs) / statistics.median(mine):.1f}x faster"
    )
    print(f"peak RSS     {peak:.0f} MiB (process start {before:.0f} MiB)")
    diffs = {m: abs(ours[m] - peer[m]) for m in ours}
    for m in ours:
        print(f"  {m:14s} receval {ours[m]:.8f}  torchmetrics {peer[m]:.8f}  diff {diffs[m]:.1e}")
    print(f"largest difference {max(diffs.values()):.1e}")


if __name__ == "__main__":
    main()
