"""The cost of propensity weighting (issue #35 point 5): weighted metrics against
their unweighted versions on the same data, in the same process.

    python benchmarks/weighted_cost.py --users 1000000
    python benchmarks/weighted_cost.py --users 100000 --repeats 5

Data (seeded): ``--users`` users, each a list of ``--list`` items ranked among
``--items`` (Zipf-like popularity) and ``--relevant`` relevant items, a third
of them in the list; one propensity per item (an item table, the common case).
Timed: ``receval.evaluate`` of recall, precision, ndcg, ap and hit_rate at 10,
unweighted, then ``weighting=ips`` and ``weighting=snips,clip=0.05`` (the
propensity join included), each the best of ``--repeats`` runs, interleaved,
after one untimed run of each: wall-clock seconds, and the CPU seconds of the
process (every thread; ``cpu_seconds``, ``cpu_ratio``), which a machine shared
with other work disturbs less than the wall clock.
The target: weighted at most 1.3x unweighted.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

import receval

BASE = ["recall@10", "precision@10", "ndcg@10", "ap@10", "hit_rate@10"]


def data(users: int, items: int, length: int, relevant: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, items + 1) ** 0.8
    pop /= pop.sum()
    u = np.repeat(np.arange(users, dtype=np.int64), length)
    listed = rng.choice(items, size=(users, 3 * length), p=pop)
    # the first `length` distinct items of each row: sort a row's draws, drop repeats
    listed = np.sort(listed, axis=1)
    listed[:, 1:][listed[:, 1:] == listed[:, :-1]] = items  # repeats -> a sentinel
    listed = np.sort(listed, axis=1)[:, :length]
    listed = np.where(listed == items, items + np.arange(length), listed)  # fill: fresh ids
    rank = np.tile(np.arange(1, length + 1), users)
    order = rng.permuted(np.tile(np.arange(length), (users, 1)), axis=1)
    recs = pd.DataFrame(
        {"user": u, "item": np.take_along_axis(listed, order, 1).ravel(), "rank": rank}
    )
    hit = listed[:, : relevant // 3]
    n_other = relevant - relevant // 3  # relevant items not listed: distinct in each row
    other = items + length + rng.integers(0, items // 8, (users, n_other)) * n_other
    other += np.arange(n_other)
    truth_items = np.concatenate([hit, other], axis=1)
    truth = pd.DataFrame(
        {"user": np.repeat(np.arange(users), relevant), "item": truth_items.ravel()}
    )
    all_items = np.unique(np.concatenate([recs["item"].to_numpy(), truth["item"].to_numpy()]))
    p = np.clip(rng.beta(2, 5, len(all_items)), 0.01, 1.0)
    props = pd.DataFrame({"item": all_items, "propensity": p})
    return {"recs": recs, "truth": truth, "props": props}


def timed(d: dict[str, object], metrics: list[str], props: object) -> tuple[float, float, dict]:
    """Wall-clock and CPU seconds of one evaluation, and its summary."""
    cpu, start = time.process_time(), time.perf_counter()
    res = receval.evaluate(d["recs"], d["truth"], metrics, propensities=props)
    return time.perf_counter() - start, time.process_time() - cpu, res.summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--list", type=int, default=20)
    ap.add_argument("--relevant", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=35)
    a = ap.parse_args()
    d = data(a.users, a.items, a.list, a.relevant, a.seed)
    runs = {
        "none": (BASE, None),
        "ips": ([f"{m}[weighting=ips]" for m in BASE], d["props"]),
        "snips_clip": ([f"{m}[weighting=snips,clip=0.05]" for m in BASE], d["props"]),
    }
    for metrics, props in runs.values():  # warm up (imports, first allocations): not timed
        timed(d, metrics, props)
    best = {k: float("inf") for k in runs}
    cpu = dict(best)
    for _ in range(a.repeats):  # interleaved: drift on a shared machine hits every mode
        for name, (metrics, props) in runs.items():
            seconds, cpu_seconds, _ = timed(d, metrics, props)
            best[name] = min(best[name], seconds)
            cpu[name] = min(cpu[name], cpu_seconds)
    out = {
        "users": a.users,
        "rows": len(d["recs"]),
        "truth_rows": len(d["truth"]),
        "seconds": {k: round(v, 3) for k, v in best.items()},
        "ratio": {k: round(best[k] / best["none"], 3) for k in ("ips", "snips_clip")},
        "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
        "cpu_ratio": {k: round(cpu[k] / cpu["none"], 3) for k in ("ips", "snips_clip")},
    }
    out["summary"] = {k: timed(d, m, p)[2] for k, (m, p) in runs.items()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
