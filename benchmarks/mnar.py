"""Propensity-weighted metrics on a synthetic missing-not-at-random log (issue #35 point 1).

    python benchmarks/mnar.py                       # 2,000 users, 1,000 items, 100 draws
    python benchmarks/mnar.py --users 5000 --draws 200

The world (seeded, fixed across draws): each user likes ``--relevant`` items drawn
uniformly (true preferences, independent of popularity); item i is exposed with
propensity p_i = max(p_min, (1 / rank_i)^alpha) (a long tail: the head always seen,
the tail rarely). Three systems rank every item by
``quality · liked + bias · log p_i + N(0, 1)`` and recommend their top 10:
``popular`` (drawn to exposed items), ``mixed`` (less so) and ``personal``
(blind to exposure), equally good at finding liked items. The full-information value
of a metric is computed on every liked item; each draw observes a liked pair with
probability p_i (the clicks), and the metric is estimated from the observed pairs
unweighted, with ``weighting=ips`` and with ``weighting=snips``, the true p_i given
as an item table (``propensities=``). none and ips are averaged over every user
(``empty_truth="zero"``, ``no_truth="zero"``: a user without an observed liked item
scores 0, the unbiased reading of ips); snips over the users with one.

Reported: each system's full-information value; per estimator its mean over the
draws, bias (mean − full) and standard deviation; how often (share of draws) the
estimator orders the three systems as the full information does, and the share of
(draw, pair of systems) it orders as the full information does.
"""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
import pandas as pd

import receval

SYSTEMS = {"popular": (1.5, 1.2), "mixed": (1.5, 0.6), "personal": (1.5, 0.0)}
METRICS = ["recall@10", "precision@10", "ndcg@10"]
ESTIMATORS = ("none", "ips", "snips")


def world(users: int, items: int, relevant: int, alpha: float, p_min: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    p = np.maximum(p_min, (1.0 / np.arange(1, items + 1)) ** alpha)
    liked = np.argpartition(rng.random((users, items)), relevant, axis=1)[:, :relevant]
    like = np.zeros((users, items))
    np.put_along_axis(like, liked, 1.0, axis=1)
    lists = {}
    for name, (quality, bias) in SYSTEMS.items():
        score = quality * like + bias * np.log(p) + rng.normal(size=(users, items))
        top = np.argsort(-score, axis=1)[:, :10]
        lists[name] = pd.DataFrame(
            {
                "user": np.repeat(np.arange(users), 10),
                "item": top.ravel(),
                "rank": np.tile(np.arange(1, 11), users),
            }
        )
    truth = pd.DataFrame({"user": np.repeat(np.arange(users), relevant), "item": liked.ravel()})
    return {"p": p, "truth": truth, "lists": lists}


def estimates(w: dict, observed: pd.DataFrame, props: pd.DataFrame) -> dict:
    out = {}
    for name, recs in w["lists"].items():
        asked = [m if e == "none" else f"{m}[weighting={e}]" for e in ESTIMATORS for m in METRICS]
        # none and ips average over every user (0 without an observed relevant item: the
        # unbiased reading of ips); snips over the users with one (it is undefined without)
        zero = receval.evaluate(
            recs, observed, asked, propensities=props, empty_truth="zero", no_truth="zero"
        ).summary
        skip = receval.evaluate(recs, observed, asked, propensities=props).summary
        values = [(skip if a.endswith("snips]") else zero)[a] for a in asked]
        out[name] = {
            e: dict(zip(METRICS, values[j * len(METRICS) : (j + 1) * len(METRICS)], strict=True))
            for j, e in enumerate(ESTIMATORS)
        }
    return out


def order(values: dict[str, float]) -> tuple[str, ...]:
    return tuple(sorted(values, key=lambda s: -values[s]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=2000)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--relevant", type=int, default=30)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--p-min", type=float, default=0.02)
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--seed", type=int, default=35)
    a = ap.parse_args()
    w = world(a.users, a.items, a.relevant, a.alpha, a.p_min, a.seed)
    props = pd.DataFrame({"item": np.arange(a.items), "propensity": w["p"]})
    full = {
        name: receval.evaluate(recs, w["truth"], METRICS).summary
        for name, recs in w["lists"].items()
    }
    rng = np.random.default_rng(a.seed + 1)
    draws = []
    truth = w["truth"]
    seen_p = w["p"][truth["item"].to_numpy()]
    for _ in range(a.draws):
        observed = truth[rng.random(len(truth)) < seen_p]
        draws.append(estimates(w, observed, props))
    report: dict = {"setup": vars(a), "systems": {}, "same_order_as_full": {}, "pairs_as_full": {}}
    for name in SYSTEMS:
        report["systems"][name] = {}
        for m in METRICS:
            row = {"full": full[name][m]}
            for e in ESTIMATORS:
                x = np.array([d[name][e][m] for d in draws])
                row[e] = {
                    "mean": round(float(x.mean()), 5),
                    "bias": round(float(x.mean() - full[name][m]), 5),
                    "std": round(float(x.std(ddof=1)), 5),
                }
            report["systems"][name][m] = row
    for m, e in itertools.product(METRICS, ESTIMATORS):
        want = order({s: full[s][m] for s in SYSTEMS})
        hits = [order({s: d[s][e][m] for s in SYSTEMS}) == want for d in draws]
        report["same_order_as_full"][f"{m} {e}"] = round(float(np.mean(hits)), 3)
        pairs = [
            (full[s][m] > full[t][m]) == (d[s][e][m] > d[t][e][m])
            for d in draws
            for s, t in itertools.combinations(SYSTEMS, 2)
        ]
        report["pairs_as_full"][f"{m} {e}"] = round(float(np.mean(pairs)), 3)
    report["full_order"] = {m: order({s: full[s][m] for s in SYSTEMS}) for m in METRICS}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
