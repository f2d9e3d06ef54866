"""Every trec_eval measure: receval against pytrec_eval (trec_eval's C code) in the same run.

    python benchmarks/trec.py [--queries 2000] [--docs 1000] [--repeat 3] \
        [--pytrec-python /tmp/trec-venv/bin/python]

Makes a TREC-shaped workload (``--queries`` queries, each a run of ``--docs``
documents with ties in score, and qrels of ~30% of them plus documents the run
never retrieved, graded -1..3: -1 is pooled but unjudged), then times

- receval: ``evaluate(run, qrels, <all 97 measures>, convention="trec_eval")``
  from Arrow tables (per-query values kept);
- pytrec_eval: the same columns (as Python lists) into its dicts, then
  ``RelevanceEvaluator(qrels, {"all_trec"}).evaluate(run)``, timed together
  as benchmarks/peers does, in its own interpreter (``--pytrec-python``: a venv
  with ``pytrec-eval-terrier``);

and checks that every measure agrees per query (max |difference| over
queries; the sums of trec_eval's ``num_*`` lines and the geometric means are
compared as receval reports them). Prints the median times and the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: trec_eval's measures as `-m all_trec` prints them (its parameters' defaults)
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
LEVELS = [f"{x / 10:.2f}" for x in range(11)]
MULTS = [f"{x / 10:.2f}" for x in range(2, 21, 2)]
MEASURES = (
    ["num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"]
    + [f"iprec_at_recall_{x}" for x in LEVELS]
    + [f"P_{k}" for k in CUTS]
    + [f"recall_{k}" for k in CUTS]
    + ["infAP", "gm_bpref"]
    + [f"Rprec_mult_{x}" for x in MULTS]
    + ["utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg"]
    + [f"ndcg_cut_{k}" for k in CUTS]
    + [f"map_cut_{k}" for k in CUTS]
    + [f"relative_P_{k}" for k in CUTS]
    + ["success_1", "success_5", "success_10", "set_P", "set_relative_P", "set_recall"]
    + ["set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj_5", "unj_10"]
    + ["unj_20"]
)
PEER = r"""
import json, sys, time
import pytrec_eval

def nested(users, items, values):
    out = {}
    for u, i, v in zip(users, items, values):
        out.setdefault(u, {})[i] = v
    return out

qcols, rcols = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
times = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()  # the columns into pytrec_eval's dicts, then evaluate
    qrel, run = nested(*qcols), nested(*rcols)
    out = pytrec_eval.RelevanceEvaluator(qrel, {"all_trec"}).evaluate(run)
    times.append(time.perf_counter() - t)
json.dump({"times": times, "per_query": out}, open(sys.argv[4], "w"))
"""


def workload(queries: int, docs: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(queries), docs)
    d = np.tile(np.arange(docs), queries) + rng.integers(0, 50, queries * docs) * 0
    score = np.round(rng.random(queries * docs) * 50, 1)  # ties in score
    run = pd.DataFrame({"user": q.astype(str), "item": "d" + d.astype(str), "score": score})
    judged = rng.random(queries * docs) < 0.3
    grades = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], judged.sum())
    qrels = pd.DataFrame({"user": q[judged].astype(str), "item": "d" + d[judged].astype(str)})
    qrels["relevance"] = grades
    extra = pd.DataFrame(  # relevant documents the run never retrieved
        {
            "user": np.arange(queries).repeat(5).astype(str),
            "item": "x" + np.arange(queries * 5).astype(str),
            "relevance": 1,
        }
    )
    return run, pd.concat([qrels, extra], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pytrec-python", default="/tmp/trec-venv/bin/python")
    args = parser.parse_args()
    import pyarrow as pa

    import receval

    run, qrels = workload(args.queries, args.docs, args.seed)
    conv = receval.EvalOptions(convention="trec_eval")
    specs = {m: str(receval.parse_metric(m, conv.metric_defaults)) for m in MEASURES}
    # pytrec_eval bundles trec_eval 9.0.8: recall levels rounded as floor(x·R + 0.9)
    for m, text in specs.items():
        if text.startswith("iprec"):
            joined = "," if "[" in text else "["
            specs[m] = str(receval.parse_metric(text.rstrip("]") + joined + "rounding=trec9]"))
    recs_t, truth_t = pa.Table.from_pandas(run), pa.Table.from_pandas(qrels)
    receval.evaluate(recs_t.slice(0, 1000), truth_t, list(specs.values()), options=conv)  # warm-up
    mine = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        res = receval.evaluate(recs_t, truth_t, list(specs.values()), options=conv)
        mine.append(time.perf_counter() - t)
    print(f"{len(run):,} run rows, {len(qrels):,} qrels rows, {len(MEASURES)} measures")
    runs = ", ".join(f"{x:.2f}" for x in mine)
    print(f"receval      median {statistics.median(mine):.2f} s  ({runs})")

    with tempfile.TemporaryDirectory() as tmp:
        qfile, rfile, out = Path(tmp, "q.json"), Path(tmp, "r.json"), Path(tmp, "out.json")
        columns = [qrels[c].tolist() for c in ("user", "item", "relevance")]
        qfile.write_text(json.dumps(columns))
        rfile.write_text(json.dumps([run[c].tolist() for c in ("user", "item", "score")]))
        peer_script = Path(tmp, "peer.py")
        peer_script.write_text(PEER)
        done = subprocess.run(
            [
                args.pytrec_python,
                str(peer_script),
                str(qfile),
                str(rfile),
                str(args.repeat),
                str(out),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            print("pytrec_eval failed:", done.stderr[-2000:])
            return
        peer = json.loads(out.read_text())
    theirs = peer["times"]
    print(
        f"pytrec_eval  median {statistics.median(theirs):.2f} s  "
        f"({', '.join(f'{x:.2f}' for x in theirs)})"
    )
    print(
        f"ratio        receval is {statistics.median(theirs) / statistics.median(mine):.1f}x faster"
    )

    per_query = peer["per_query"]
    worst = {}
    absent = [m for m in specs if m not in next(iter(per_query.values()))]
    for m, column in specs.items():
        if m in absent:
            continue
        # per query (gm_map, gm_bpref: trec_eval keeps the log, as receval does)
        got = res.per_user[column]
        worst[m] = max(abs(float(got.loc[q]) - v[m]) for q, v in per_query.items())
    if absent:
        print(f"not in pytrec_eval's all_trec output: {', '.join(absent)}")
    bad = {m: d for m, d in worst.items() if d > 1e-9}
    print(
        f"agreement    {len(worst)} measures x {len(per_query)} queries: max |diff| "
        f"{max(worst.values()):.1e}" + (f"; over 1e-9: {bad}" if bad else "")
    )


if __name__ == "__main__":
    main()
