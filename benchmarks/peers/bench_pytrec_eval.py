"""pytrec_eval (trec_eval bindings): ``RelevanceEvaluator`` on dicts of string ids.

    python benchmarks/peers/bench_pytrec_eval.py --recs R --truth T [--out result.json]

Conversion: Arrow -> ``qrel = {user: {item: grade}}`` and
``run = {user: {item: score}}`` with str ids (what pytrec_eval takes).
Measures: ``P``, ``recall``, ``ndcg_cut``, ``map_cut``, ``success`` at 10 and
100, and ``recip_rank`` (trec_eval has no cut-off for it). trec_eval orders
by score (ties by docno descending; the workload has no ties), uses graded
gains for ndcg_cut, divides map_cut by R, and evaluates only users that are
in both the qrels and the run: users of the truth without recommendations are
left out (receval ``missing_recs="skip"``), not scored 0.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common

KS = (10, 100)
MEASURES = {
    "P.10,100",
    "recall.10,100",
    "ndcg_cut.10,100",
    "map_cut.10,100",
    "success.10,100",
    "recip_rank",
}
CONVENTION = {
    "relevance": "graded",
    "empty_truth": "skip",
    "missing_recs": "skip",
    "metrics": {
        **{f"P_{k}": f"precision@{k}" for k in KS},
        **{f"recall_{k}": f"recall@{k}" for k in KS},
        **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in KS},
        **{f"map_cut_{k}": f"ap@{k}[denominator=relevant]" for k in KS},
        "recip_rank": "rr",
        **{f"success_{k}": f"hit_rate@{k}" for k in KS},
    },
    "notes": [
        "users in both qrels and run only (truth users without recommendations are dropped)",
        "recip_rank has no cut-off (receval 'rr' over the whole list)",
        "map_cut denominator = R",
    ],
}


def version() -> str:
    from importlib.metadata import version as v

    return v("pytrec-eval-terrier")


def _nested(users, items, values) -> dict[str, dict[str, float]]:
    """{user: {item: value}} from three aligned columns grouped by user."""
    out: dict[str, dict] = {}
    u_prev = None
    cur: dict = {}
    for u, i, v in zip(users, items, values, strict=True):
        if u != u_prev:
            cur = out.setdefault(u, {})
            u_prev = u
        cur[i] = v
    return out


def compute(recs, truth) -> dict[str, float]:
    import pyarrow as pa
    import pytrec_eval

    def s(col):  # ids as str, cast by Arrow
        return col.cast(pa.string()).to_pylist()

    qrel = _nested(s(truth["user"]), s(truth["item"]), truth["relevance"].to_pylist())
    run = _nested(s(recs["user"]), s(recs["item"]), recs["score"].to_pylist())
    evaluator = pytrec_eval.RelevanceEvaluator(qrel, MEASURES)
    per_query = evaluator.evaluate(run)
    names = list(CONVENTION["metrics"])
    n = len(per_query)
    sums = dict.fromkeys(names, 0.0)
    for values in per_query.values():
        for name in names:
            sums[name] += values[name]
    return {name: (sums[name] / n if n else float("nan")) for name in names}


if __name__ == "__main__":
    _common.run("pytrec_eval", version, compute, convention=CONVENTION)
