"""Checks run under the core conformance interpreter (ir_measures 0.4.3, ranx 0.3.21):

    python ir_tools_check.py ir_measures|ranx

Prints one line per disagreement and ``ok N`` at the end (N checks made);
exits 1 on any disagreement. receval is imported from the repository's src/.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

MEASURES = [
    "P@5", "P@10", "P(rel=2)@5", "R@10", "R@100", "AP", "AP@10", "AP(rel=2)", "nDCG",
    "nDCG@10", "RR", "RR(rel=2)", "RR@10", "Rprec", "Success@5", "NumRet", "NumRet(rel=1)",
    "NumRel", "NumQ", "Judged@10", "Judged@5", "Bpref", "SetP", "SetR", "SetAP", "infAP",
]  # fmt: skip


def workload(seed: int, ties: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Qrels (grades -1 to 3) and a run over 25 queries; ids text, digit
    strings and zero-led digit strings; with ``ties`` many equal scores."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(25):
        qid = rng.choice([str(q), f"q{q}", f"0{q}"])
        if rng.random() < 0.9:
            docs = rng.sample(range(60), rng.randint(1, 12))
            grades = [-1, 0, 0, 1, 1, 2, 3]
            qrels[qid] = {(f"d{d}" if d % 3 else str(d)): rng.choice(grades) for d in docs}
        if rng.random() < 0.9:
            docs = rng.sample(range(60), rng.randint(1, 40))
            run[qid] = {
                (f"d{d}" if d % 3 else str(d)): (
                    float(rng.randint(1, 4)) if ties else rng.random() * 10
                )
                for d in docs
            }
    return qrels, run


def check_ir_measures() -> int:
    import ir_measures
    from ir_measures import parse_measure

    from receval.analysis.ir_measures_provider import provider, register, unregister

    ours_p = provider()
    checks = bad = 0
    for seed in range(6):
        qrels, run = workload(seed, ties=seed % 2 == 1)
        for name in MEASURES:
            m = parse_measure(name)
            theirs_p = next(
                p
                for p in ir_measures.DefaultPipeline.providers
                if p is not ours_p and p.is_available() and p.supports(m)
            )
            theirs = {x.query_id: x.value for x in theirs_p.iter_calc([m], qrels, run)}
            ours = {x.query_id: x.value for x in ours_p.iter_calc([m], qrels, run)}
            checks += 1
            if set(theirs) != set(ours) or any(abs(theirs[q] - ours[q]) > 1e-12 for q in theirs):
                bad += 1
                print(f"seed {seed} {name} per query: {theirs_p.NAME} {theirs} receval {ours}")
            a = theirs_p.calc_aggregate([m], qrels, run)[m]
            b = ours_p.calc_aggregate([m], qrels, run)[m]
            checks += 1
            if abs(a - b) > 1e-12:
                bad += 1
                print(f"seed {seed} {name} aggregate: {theirs_p.NAME} {a!r} receval {b!r}")
    # through ir_measures' own functions, receval first in DefaultPipeline
    qrels, run = workload(99, ties=True)
    measures = [parse_measure(n) for n in MEASURES]
    before = ir_measures.calc_aggregate(measures, qrels, run)
    register()
    register()  # twice: once in the pipeline
    try:
        assert ir_measures.DefaultPipeline.providers[0] is ours_p
        assert ir_measures.DefaultPipeline.providers.count(ours_p) == 1
        assert ir_measures.providers.registry["receval"] is ours_p
        evaluator = ir_measures.evaluator(measures, qrels)
        assert type(evaluator).__name__ == "ReceValEvaluator", type(evaluator)
        after = ir_measures.calc_aggregate(measures, qrels, run)
        per_query = list(ir_measures.iter_calc(measures, qrels, run))
        mixed = ir_measures.calc_aggregate(
            [parse_measure("IPrec@0.2"), parse_measure("P@5")], qrels, run
        )
    finally:
        unregister()
    assert ours_p not in ir_measures.DefaultPipeline.providers
    assert len(per_query) == len(measures) * len(qrels), len(per_query)
    assert len(mixed) == 2
    for m in measures:
        checks += 1
        if abs(before[m] - after[m]) > 1e-12:
            bad += 1
            print(f"DefaultPipeline {m}: without receval {before[m]!r}, with {after[m]!r}")
    print(f"ok {checks}" if not bad else f"{bad} of {checks} checks disagree")
    return 1 if bad else 0


#: receval metric name -> ranx's name of the same metric
RANX_NAMES = {
    "ndcg@10": "ndcg@10",
    "ap@100": "map@100",
    "rr": "mrr",
    "rr@10": "mrr@10",
    "precision@5": "precision@5",
    "recall@20": "recall@20",
    "hit_rate@5": "hit_rate@5",
    "hits@3": "hits@3",
    "f1@3": "f1@3",
    "r_precision": "r-precision",
    "bpref": "bpref",
    "dcg@5": "dcg@5",
    "ndcg": "ndcg",
}
NAMES = ["bm25", "x", "a much longer model name", "1", "2.5", "True", "rm3", "dpr-multi", "nan"]


def _report(rng: random.Random, n_models: int, metrics: list[str], digits: int, pct: bool) -> Any:
    """A ranx Report with random means and significance."""
    from ranx.data_structures.frozenset_dict import FrozensetDict
    from ranx.data_structures.report import Report

    models = [rng.choice(NAMES) + (str(i) if rng.random() < 0.5 else "") for i in range(n_models)]
    models = list(dict.fromkeys(models))
    results = {}
    for m in models:
        results[m] = {}
        for metric in metrics:
            kind = rng.random()
            if kind < 0.2:
                value = rng.randint(0, 2000) / 2000  # on rounding edges
            elif kind < 0.25:
                value = float(rng.randint(0, 1))
            else:
                value = rng.random()
            results[m][RANX_NAMES[metric]] = value
    comparisons = FrozensetDict()
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            comparisons[frozenset({a, b})] = {
                RANX_NAMES[metric]: {"p_value": 0.0, "significant": rng.random() < 0.4}
                for metric in metrics
            }
    return Report(
        model_names=models,
        results=results,
        comparisons=comparisons,
        metrics=[RANX_NAMES[m] for m in metrics],
        max_p=0.01,
        win_tie_loss={},
        rounding_digits=digits,
        show_percentages=pct,
    )


def _ours(report: Any, metrics: list[str]) -> str:
    from receval.analysis.ranx_table import ranx_table

    means = {
        m: {metric: report.results[m][RANX_NAMES[metric]] for metric in metrics}
        for m in report.model_names
    }
    wins = {
        m: {
            metric: [
                o
                for o in report.model_names
                if o != m
                and report.comparisons[m, o][RANX_NAMES[metric]]["significant"]
                and means[m][metric] > means[o][metric]
            ]
            for metric in metrics
        }
        for m in report.model_names
    }
    return ranx_table(
        means,
        wins,
        metrics=metrics,
        rounding_digits=report.rounding_digits,
        show_percentages=report.show_percentages,
    )


def check_ranx() -> int:
    import numpy as np
    import ranx

    checks = bad = 0
    rng = random.Random(7)
    cases = []
    for seed in range(40):
        n = rng.choice([1, 2, 3, 4, 5, 8, 18, 26])
        metrics = rng.sample(sorted(RANX_NAMES), rng.randint(1, 5))
        digits = rng.choice([3, 3, 2, 4, 5])
        cases.append((seed, n, metrics, digits, rng.random() < 0.2))
    for seed, n, metrics, digits, pct in cases:
        report = _report(random.Random(seed), n, metrics, digits, pct)
        checks += 1
        theirs, ours = str(report), _ours(report, metrics)
        if theirs != ours:
            bad += 1
            print(f"case {seed}: ranx\n{theirs}\nreceval\n{ours}")
    # a real ranx.compare
    gen = np.random.default_rng(3)
    qrels = ranx.Qrels.from_dict(
        {
            f"q{q}": {f"d{d}": int(gen.integers(1, 3)) for d in gen.choice(30, 5, replace=False)}
            for q in range(40)
        }
    )
    runs = []
    for name in ("bm25", "dpr", "tuned"):
        run = ranx.Run.from_dict(
            {
                f"q{q}": {f"d{d}": float(gen.random()) for d in gen.choice(30, 12, replace=False)}
                for q in range(40)
            },
            name=name,
        )
        runs.append(run)
    metrics = ["ndcg@10", "map@100", "precision@5"]
    report = ranx.compare(qrels, runs, metrics, max_p=0.2, stat_test="student")
    ours_names = ["ndcg@10", "ap@100", "precision@5"]
    checks += 1
    if str(report) != _ours(report, ours_names):
        bad += 1
        print(f"ranx.compare: ranx\n{report}\nreceval\n{_ours(report, ours_names)}")
    print(f"ok {checks}" if not bad else f"{bad} of {checks} checks disagree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit({"ir_measures": check_ir_measures, "ranx": check_ranx}[sys.argv[1]]())
