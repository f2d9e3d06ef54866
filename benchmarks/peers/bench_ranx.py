"""ranx: ``Qrels`` / ``Run`` from pandas DataFrames and ``ranx.evaluate``.

    python benchmarks/peers/bench_ranx.py --recs R --truth T [--out result.json]

Conversion: Arrow -> pandas with str (object) ids, as ``Qrels.from_df`` and
``Run.from_df`` require (int64 grades for the qrels). ranx is Numba-compiled:
it is warmed up on a tiny input in the same process first (untimed; its
on-disk cache is used too). ``make_comparable=True`` adds empty lists for
truth users without recommendations (scored 0) and drops recommended users
without truth — receval's default population. ``ndcg`` is Järvelin's linear
gain with the qrels' ideal, ``map@k`` divides by R, ``mrr@k`` is cut at k.
ranx runs its Numba kernels on all cores (2 here).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common

KS = (10, 100)
CONVENTION = {
    "relevance": "graded",
    "empty_truth": "skip",
    "missing_recs": "zero",
    "metrics": {
        **{f"precision@{k}": f"precision@{k}" for k in KS},
        **{f"recall@{k}": f"recall@{k}" for k in KS},
        **{f"ndcg@{k}": f"ndcg@{k}" for k in KS},
        **{f"map@{k}": f"ap@{k}[denominator=relevant]" for k in KS},
        **{f"mrr@{k}": f"rr@{k}" for k in KS},
        **{f"hit_rate@{k}": f"hit_rate@{k}" for k in KS},
    },
    "notes": ["map@k denominator = R", "multi-threaded (Numba, all cores)"],
}


def version() -> str:
    from importlib.metadata import version as v

    return v("ranx")


def compute(recs, truth) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    q = truth.to_pandas()
    q["q_id"] = q["user"].astype(str).astype(object)
    q["doc_id"] = q["item"].astype(str).astype(object)
    q["score"] = q["relevance"].astype("int64")
    r = recs.select(["user", "item", "score"]).to_pandas()
    r["q_id"] = r["user"].astype(str).astype(object)
    r["doc_id"] = r["item"].astype(str).astype(object)
    qrels = Qrels.from_df(q, q_id_col="q_id", doc_id_col="doc_id", score_col="score")
    run = Run.from_df(r, q_id_col="q_id", doc_id_col="doc_id", score_col="score")
    metrics = list(CONVENTION["metrics"])
    res = evaluate(qrels, run, metrics, make_comparable=True)
    return dict(res)


if __name__ == "__main__":
    _common.run("ranx", version, compute, convention=CONVENTION, warmup=True)
