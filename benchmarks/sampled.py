"""Sampled evaluation against the truth: how far each correction lands from the
full-catalog metric, and whether it keeps the systems in the right order.

Synthetic and self-contained (NumPy and receval's kernel only). A catalog of
``--items`` items and ``--users`` users, each with one held-out item. Four
"systems" are described by the full rank R of each user's held-out item
(1 = top of a full ranking of the catalog), drawn from rank distributions of
different shapes (as in Krichene & Rendle 2020, Fig. 5: a system that is sharp
at the top but often buries the item, one that is flat, ...):

- ``sharp``: log-normal ranks around 30 (log-sd 2.5), and 20% of the items
  buried in the bottom half of the catalog (the best head, a bad tail);
- ``wide``: log-normal around 50 (log-sd 2);
- ``flat``: log-normal around 80 (log-sd 1): rarely in the top 10, rarely
  far down;
- ``random``: uniform ranks.

For each system the exact full-catalog recall@10 and ndcg@10 are the means of
M(R). Sampled evaluation draws ``--negatives`` negatives per user uniformly
*without replacement* among the ``N − 1`` non-relevant items (what
:func:`receval.workflow.sampling.sample_negatives` does), so the sampled rank
is ``1 + Hypergeometric(N − 1, R − 1, m)``; each correction's table
(:func:`receval.metrics.kernels.sampled.correction_table`) turns sampled ranks
into estimates. Repeated over ``--repeats`` draws of the negatives.

Run: ``python benchmarks/sampled.py [--users 5000] [--items 20000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from receval.metrics.kernels.sampled import correction_table, metric_at_rank

ESTIMATES = [
    ("none", "none", 0.0),
    ("rank", "rank", 0.0),
    ("bv γ=1", "bv", 1.0),
    ("bv γ=0.1", "bv", 0.1),
    ("bv γ=0.01", "bv", 0.01),
    ("min_bias", "min_bias", 0.0),
]
METRICS = [("recall@10", "recall", 10), ("ndcg@10", "ndcg", 10)]


def full_ranks(users: int, items: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The held-out item's full rank (1..items) per user, for each system."""

    def clip(r: np.ndarray) -> np.ndarray:
        return np.clip(np.round(r), 1, items).astype(np.int64)

    def lognormal(centre: float, spread: float) -> np.ndarray:
        return clip(np.exp(rng.normal(np.log(centre), spread, users)))

    sharp = lognormal(30, 2.5)  # often at the very top, often far down
    buried = rng.random(users) < 0.2
    sharp[buried] = rng.integers(items // 2, items + 1, int(buried.sum()))
    return {
        "sharp": sharp,  # the best head, and 20% of items buried in the bottom half
        "wide": lognormal(50, 2.0),
        "flat": lognormal(80, 1.0),  # rarely in the top 10, rarely far down
        "random": rng.integers(1, items + 1, users),
    }


def sampled_ranks(full: np.ndarray, items: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """1 + the number of m negatives, drawn without replacement among the
    items − 1 non-relevant items, that a full ranking puts above the item."""
    return 1 + rng.hypergeometric(full - 1, items - full, m)


def order(values: dict[str, float]) -> tuple[str, ...]:
    return tuple(sorted(values, key=lambda s: -values[s]))


def pairs_right(est: dict[str, float], full: dict[str, float]) -> tuple[int, int]:
    """Pairs of systems ordered as by the full value (ties in the full value skipped)."""
    right = total = 0
    for a, b in itertools.combinations(full, 2):
        if full[a] == full[b]:
            continue
        total += 1
        right += (est[a] - est[b]) * (full[a] - full[b]) > 0
    return right, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=5000)
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--negatives", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=20, help="draws of the negatives")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    n, m = args.items, args.negatives
    ranks = full_ranks(args.users, n, rng)
    systems = list(ranks)
    draws = {s: [sampled_ranks(ranks[s], n, m, rng) for _ in range(args.repeats)] for s in systems}

    t0 = time.perf_counter()
    tables = {
        (metric, label): correction_table(name, k, n, m, corr, gamma)
        for metric, name, k in METRICS
        for label, corr, gamma in ESTIMATES
    }
    t_tables = time.perf_counter() - t0

    print(
        f"{args.users} users, catalog {n} items, {m} sampled negatives (without replacement), "
        f"{args.repeats} draws of the negatives, seed {args.seed}"
    )
    print("estimate: mean over the draws (± their standard deviation); error = estimate − full")
    for metric, name, k in METRICS:
        full = {s: float(metric_at_rank(name, k, ranks[s]).mean()) for s in systems}
        print(f"\n## {metric}   full-catalog order: {' > '.join(order(full))}")
        head = f"{'system':8} {'full':>8} " + " ".join(f"{lab:>22}" for lab, _, _ in ESTIMATES)
        print(head)
        est: dict[str, dict[str, np.ndarray]] = {lab: {} for lab, _, _ in ESTIMATES}
        for s in systems:
            cells = []
            for lab, _, _ in ESTIMATES:
                t = tables[(metric, lab)]
                vals = np.array([t[r].mean() for r in draws[s]])
                est[lab][s] = vals
                cells.append(f"{vals.mean():9.4f}±{vals.std():<7.4f}({vals.mean() - full[s]:+.3f})")
            print(f"{s:8} {full[s]:8.4f} " + " ".join(f"{c:>22}" for c in cells))
        print(f"{'':8} {'':8} " + " ".join(f"{lab:>22}" for lab, _, _ in ESTIMATES))
        mae = []
        rel = []
        same = []
        pairs = []
        for lab, _, _ in ESTIMATES:
            errs = np.array(
                [[est[lab][s][j] - full[s] for s in systems] for j in range(args.repeats)]
            )
            mae.append(np.abs(errs).mean())
            rel.append(
                np.mean([np.abs(errs[:, i]).mean() / full[s] for i, s in enumerate(systems)])
            )
            per_draw = [{s: est[lab][s][j] for s in systems} for j in range(args.repeats)]
            same.append(np.mean([order(d) == order(full) for d in per_draw]))
            good = [pairs_right(d, full) for d in per_draw]
            pairs.append(sum(g for g, _ in good) / max(sum(t for _, t in good), 1))
        print(f"{'mean |error|':17} " + " ".join(f"{x:>22.4f}" for x in mae))
        print(f"{'mean rel. error':17} " + " ".join(f"{x:>21.0%} " for x in rel))
        print(f"{'order kept':17} " + " ".join(f"{x:>21.0%} " for x in same))
        print(f"{'pairs right':17} " + " ".join(f"{x:>21.0%} " for x in pairs))
        means = {lab: {s: float(est[lab][s].mean()) for s in systems} for lab, _, _ in ESTIMATES}
        print(
            f"{'order of means':17} "
            + " ".join(
                f"{'same' if order(means[lab]) == order(full) else 'DIFFERENT':>22}"
                for lab, _, _ in ESTIMATES
            )
        )
    print(
        f"\n'order kept': share of draws whose estimates order all {len(systems)} systems as the "
        "full values do; 'pairs right': share of system pairs ordered right.\n"
        f"tables: {t_tables * 1000:.0f} ms for {len(tables)}; "
        f"total {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
