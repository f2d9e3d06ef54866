"""Intent-aware diversity (receval.intent_aware): α-nDCG@k, α-DCG@k, ERR-IA@k and
nERR-IA@k over subtopic judgments, as TREC's ndeval computes them.

Known values: hand-worked, and ndeval's own (pyndeval 0.0.8, which wraps ndeval
4.5, on the example of pyndeval's test suite). A literal reference (loops per
position and subtopic, ndeval's greedy ideal with its docno tie-break) on random
data; id forms, row order and file inputs; the edges and the errors. The
conformance test against pyndeval itself is tests/conformance/test_pyndeval.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.intent_aware import intent_aware
from receval.errors import InputError, MetricError
from receval.metrics.registry import lookup

ALL = ["alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia"]


def _log2(i: int) -> float:
    return math.log2(i + 1)


def test_hand_worked_values() -> None:
    # subtopic 1: a, b; subtopic 2: c. The list a, b, c gains 1, 0.5, 1.
    res = intent_aware(
        {"q1": ["a", "b", "c"]}, {"q1": {1: ["a", "b"], 2: ["c"]}}, [f"{m}@3" for m in ALL]
    )
    raw_dcg = 1 + 0.5 / _log2(2) + 1 / _log2(3)
    raw_err = 1 + 0.5 / 2 + 1 / 3
    # greedy ideal: a, b and c all gain 1 first; ties go to the greatest id (c), then b, a
    ideal_dcg = 1 + 1 / _log2(2) + 0.5 / _log2(3)
    ideal_err = 1 + 1 / 2 + 0.5 / 3
    ideal_ideal_dcg = 2 * (1 + 0.5 / _log2(2) + 0.25 / _log2(3))
    ideal_ideal_err = 2 * (1 + 0.5 / 2 + 0.25 / 3)
    assert res.summary == pytest.approx(
        {
            "alpha_ndcg@3": raw_dcg / ideal_dcg,
            "alpha_dcg@3": raw_dcg / ideal_ideal_dcg,
            "err_ia@3": raw_err / ideal_ideal_err,
            "nerr_ia@3": raw_err / ideal_err,
        },
        abs=1e-15,
    )
    assert res.summary["err_ia@3"] == 0.59375 and res.summary["nerr_ia@3"] == pytest.approx(0.95)
    # ERR-IA is the mean of the subtopics' ERR (stop at a relevant document with
    # probability α) over the ERR of a list relevant everywhere
    err_1 = 0.5 * (1 + 0.5 / 2)
    err_2 = 0.5 * (1 / 3)
    every = sum(0.5 * 0.5 ** (i - 1) / i for i in (1, 2, 3))
    assert res.summary["err_ia@3"] == pytest.approx((err_1 + err_2) / 2 / every, abs=1e-15)


def test_ndeval_known_values() -> None:
    # pyndeval's own test example, ndeval 4.5's values (through pyndeval 0.0.8)
    qrels = pd.DataFrame(
        [
            ("0", "a", "A", 1),
            ("0", "b", "B", 1),
            ("0", "b", "D", 1),
            ("0", "c", "C", 1),
            ("0", "a", "E", 0),  # judged, relevant to nothing
        ],
        columns=["query", "subtopic", "doc", "judgment"],
    )
    run = pd.DataFrame({"query": "0", "doc": ["A", "D", "E", "B"], "score": [9.3, 8.4, 8.1, 7.6]})
    metrics = ["alpha-nDCG@5,20", "alpha-DCG@5", "ERR-IA@5,20", "nERR-IA@5,20"]
    res = intent_aware(run, qrels, metrics, user_col="query", item_col="doc")
    assert res.summary == pytest.approx(
        {
            "alpha_ndcg@5": 0.786895617614416,
            "alpha_ndcg@20": 0.786895617614416,
            "alpha_dcg@5": 0.40528923045010684,
            "err_ia@5": 0.39334341906202724,
            "err_ia@20": 0.3907299314335837,
            "nerr_ia@5": 0.8297872340425532,
            "nerr_ia@20": 0.8297872340425532,
        },
        abs=1e-14,
    )
    res = intent_aware(run, qrels, ["alpha_ndcg@5", "err_ia@5", "nerr_ia@5"], alpha=0.25,
                       user_col="query", item_col="doc")  # fmt: skip
    assert res.summary == pytest.approx(
        {
            "alpha_ndcg@5": 0.7962458021829808,
            "err_ia@5": 0.3249097472924188,
            "nerr_ia@5": 0.8350515463917527,
        },
        abs=1e-14,
    )


# -- a literal reference: ndeval's loops --------------------------------------------


def _sums(
    docs: dict[object, dict[str, int]],
    subtopics: list[str],
    ranking: list[str],
    k: int,
    alpha: float,
) -> tuple[float, float]:
    """α-DCG@k and the ERR-IA sum@k of a ranking, position by position."""
    weight = dict.fromkeys(subtopics, 1.0)
    dcg = err = 0.0
    for i, d in enumerate(ranking[:k], 1):
        score = 0.0
        for s in subtopics:
            if docs.get(d, {}).get(s, 0):
                score += weight[s]
                weight[s] *= 1 - alpha
        dcg += score / math.log2(i + 1)
        err += score / i
    return dcg, err


def _reference(
    qrels: list[tuple[object, object, str, int]],
    run: dict[object, list[str]],
    k: int,
    alpha: float,
    all_queries: bool = False,
) -> dict[object, dict[str, float]]:
    """ndeval, literally: per position the sum over subtopics of the novelty
    gain; the ideal list by ndeval's quadratic greedy over the judged documents
    in docno order, ties to the greater docno; "ideal ideal" normalisation."""
    judged: dict[object, dict[str, dict[object, int]]] = {}
    for q, s, d, j in qrels:
        rel = judged.setdefault(q, {}).setdefault(d, {})
        rel[s] = max(rel.get(s, 0), 1 if j > 0 else 0)
    out: dict[object, dict[str, float]] = {}
    for q, docs in judged.items():
        if q not in run and not all_queries:
            continue
        subtopics = sorted({s for rel in docs.values() for s, v in rel.items() if v}, key=str)

        names = sorted(docs, key=str)
        placed: list[str] = []
        weight = dict.fromkeys(subtopics, 1.0)
        for _ in names:
            where, best = None, 0.0
            for d in names:
                if d in placed:
                    continue
                score = sum(weight[s] for s in subtopics if docs[d].get(s, 0))
                if where is None or score > best or (score == best and str(d) > str(where)):
                    where, best = d, score
            placed.append(where)
            for s in subtopics:
                if docs[where].get(s, 0):
                    weight[s] *= 1 - alpha
        dcg, err = _sums(docs, subtopics, run.get(q, []), k, alpha)
        idcg, ierr = _sums(docs, subtopics, placed, k, alpha)
        ii_dcg = sum(
            len(subtopics) * (1 - alpha) ** (i - 1) / math.log2(i + 1) for i in range(1, k + 1)
        )
        ii_err = sum(len(subtopics) * (1 - alpha) ** (i - 1) / i for i in range(1, k + 1))
        out[q] = {
            f"alpha_ndcg@{k}": dcg / idcg if dcg else 0.0,
            f"alpha_dcg@{k}": dcg / ii_dcg if dcg else 0.0,
            f"err_ia@{k}": err / ii_err if err else 0.0,
            f"nerr_ia@{k}": err / ierr if err else 0.0,
        }
    return out


def _random(seed: int) -> tuple[list[tuple[object, object, str, int]], dict[object, list[str]]]:
    rng = np.random.default_rng(seed)
    qrels: list[tuple[object, object, str, int]] = []
    for q in range(7):
        n_docs = int(rng.integers(1, 15))
        for s in range(int(rng.integers(1, 4))):
            for d in range(n_docs):
                if rng.random() < 0.6:
                    qrels.append((q, s, f"d{d}", int(rng.integers(-1, 3))))
    run = {
        q: [f"d{d}" for d in rng.permutation(18)[: int(rng.integers(0, 18))]]
        for q in range(9)
        if q != 2
    }
    return qrels, run


@pytest.mark.parametrize("seed, k, alpha", [(0, 5, 0.5), (1, 10, 0.3), (2, 3, 1.0), (3, 20, 0.0)])
def test_matches_literal_reference(seed: int, k: int, alpha: float) -> None:
    qrels, run = _random(seed)
    table = pd.DataFrame(qrels, columns=["query", "subtopic", "doc", "judgment"])
    run = {q: items for q, items in run.items() if items}
    for all_queries in (False, True):
        want = _reference(qrels, run, k, alpha, all_queries)
        res = intent_aware(
            run, table, [f"{m}@{k}" for m in ALL], alpha=alpha, all_queries=all_queries
        )
        assert sorted(res.per_query.index) == sorted(want)
        for q, values in want.items():
            for name, value in values.items():
                assert res.per_query.loc[q, name] == pytest.approx(value, abs=1e-12), (q, name)
        assert res.counts["queries"] == len(want)


# -- edges --------------------------------------------------------------------------


def test_edges_queries_counted_as_ndeval_does() -> None:
    qrels = pd.DataFrame(
        [
            ("q1", 1, "a", 1),
            ("q1", 1, "a", 1),  # judged twice: once
            ("q1", 2, "b", 0),  # subtopic 2: nothing relevant, no subtopic of q1
            ("q2", 1, "x", 0),  # q2: nothing relevant at all -> 0, counted
            ("q3", 1, "z", 1),  # q3: not in the run
        ],
        columns=["qid", "subtopic", "docno", "rel"],
    )
    run = {"q1": ["b", "a"], "q2": ["x", "y"], "q4": ["z"]}
    res = intent_aware(run, qrels, ["alpha_ndcg@1,2,50", "err_ia@50"])
    assert list(res.per_query.index) == ["q1", "q2"]
    assert res.per_query.loc["q1", "alpha_ndcg@1"] == 0.0
    assert res.per_query.loc["q1", "alpha_ndcg@2"] == pytest.approx(1 / math.log2(3))
    assert res.per_query.loc["q1", "alpha_ndcg@50"] == pytest.approx(1 / math.log2(3))  # k > n
    # one subtopic: the ideal ideal of ERR at 50 is Σ 0.5^(i-1)/i
    every = sum(0.5 ** (i - 1) / i for i in range(1, 51))
    assert res.per_query.loc["q1", "err_ia@50"] == pytest.approx(0.5 / every)
    assert res.per_query.loc["q2"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert res.counts == {
        "queries": 2,
        "queries_in_qrels": 3,
        "queries_without_relevant": 1,
        "queries_without_list": 1,
        "run_queries_not_in_qrels": 1,
        "subtopics": 2,
    }
    every_query = intent_aware(run, qrels, ["alpha_ndcg@2"], all_queries=True)  # ndeval -c
    assert list(every_query.per_query.index) == ["q1", "q2", "q3"]
    assert every_query.summary["alpha_ndcg@2"] == pytest.approx(1 / math.log2(3) / 3)


def test_id_forms_row_order_and_files_agree(tmp_path: Path) -> None:
    qrels, run = _random(7)
    run = {q: items for q, items in run.items() if items}
    metrics = ["alpha_ndcg@5,10", "nerr_ia@10", "err_ia@5"]
    rows = [(q, d, float(len(items) - i)) for q, items in run.items() for i, d in enumerate(items)]
    frame = pd.DataFrame(rows, columns=["user", "item", "score"])
    table = pd.DataFrame(qrels, columns=["query", "subtopic", "doc", "judgment"])
    base = intent_aware(frame, table, metrics)
    shuffled = intent_aware(
        frame.sample(frac=1, random_state=1), table.sample(frac=1, random_state=2), metrics
    )
    assert shuffled.summary == base.summary
    as_text = intent_aware(
        frame.assign(user="u" + frame["user"].astype(str)),
        table.assign(query="u" + table["query"].astype(str)),
        metrics,
    )
    assert as_text.summary == base.summary
    as_digits = intent_aware(frame.assign(user=frame["user"].astype(str)), table, metrics)
    assert as_digits.summary == base.summary
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("".join(f"{q} {s} {d} {j}\n" for q, s, d, j in qrels))
    run_file = tmp_path / "run.txt"
    run_file.write_text("".join(f"{q} Q0 {d} {i} {s} tag\n" for i, (q, d, s) in enumerate(rows)))
    from_files = intent_aware(str(run_file), qrels_file, metrics)
    assert from_files.summary == pytest.approx(base.summary, abs=1e-15)
    assert from_files.per_query.shape == base.per_query.shape


# -- errors and the guard -----------------------------------------------------------


def test_clear_errors(tmp_path: Path) -> None:
    run = {"q1": ["a"]}
    qrels = {"q1": {1: ["a"]}}
    with pytest.raises(MetricError, match=r"needs a cut-off, e.g. alpha_ndcg@20"):
        intent_aware(run, qrels, "alpha_ndcg")
    with pytest.raises(MetricError, match=r"'ndcg@10': unknown \(measures: alpha_ndcg@k"):
        intent_aware(run, qrels, "ndcg@10")
    with pytest.raises(
        MetricError, match=r"alpha=1.5 is not allowed: expected a number in \[0, 1\]"
    ):
        intent_aware(run, qrels, alpha=1.5)
    with pytest.raises(receval.ReceValError, match="sets empty_truth itself"):
        intent_aware(run, qrels, empty_truth="skip")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1 d1 1\n\n1 1 d2\n")
    with pytest.raises(InputError, match=r"bad.txt, line 3: expected 4 fields .* found 3"):
        intent_aware(run, bad)
    bad.write_text("# comment\n1 1 d1 yes\n")
    with pytest.raises(
        InputError, match=r"bad.txt, line 2: the judgment must be an integer; found 'yes'"
    ):
        intent_aware(run, bad)
    with pytest.raises(InputError, match="no subtopic column"):
        intent_aware(run, pd.DataFrame({"query": [1], "doc": ["a"]}))
    with pytest.raises(InputError, match="no query of the run is in the subtopic qrels"):
        intent_aware({"q9": ["a"]}, qrels)


def test_subtopic_shares_only_through_the_door() -> None:
    """The metrics are in the registry with door="intent_aware" (one mechanism for
    door-only metrics: tests/test_door_only_metrics.py); evaluate names the door."""
    intent_aware({"q1": ["a"]}, {"q1": {1: ["a"]}}, "alpha_ndcg@5")
    for name in ("alpha_ndcg@5", "err_ia@5", "nerr_ia@5", "alpha_dcg@5"):
        assert lookup(name.split("@")[0]).door == "intent_aware"
        with pytest.raises(receval.ReceValError, match=r"computed only by receval.intent_aware"):
            receval.evaluate({"q1": ["a"]}, {"q1": ["a"]}, name)
    with pytest.raises(MetricError):
        intent_aware({"q1": ["a"]}, {"q1": {1: ["a"]}}, "alpha_ndcg@0")


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from receval.cli import main

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("0 a A 1\n0 b B 1\n0 b D 1\n0 c C 1\n0 a E 0\n")
    run = tmp_path / "run.txt"
    run.write_text("0 Q0 A 1 9.3 t\n0 Q0 D 2 8.4 t\n0 Q0 E 3 8.1 t\n0 Q0 B 4 7.6 t\n")
    code = main(["intent-aware", str(run), str(qrels), "-m", "alpha_ndcg@5", "--json", "-q"])
    out = capsys.readouterr().out
    assert code == 0
    means = json.loads(out)
    assert list(means) == ["metrics", "counts", "parameters", "summary"]
    assert means["metrics"] == pytest.approx({"alpha_ndcg@5": 0.786895617614416})
    assert means["summary"] == means["metrics"]  # deprecated, kept for its readers
    qrels.write_text("0 a A\n")
    assert main(["intent-aware", str(run), str(qrels)]) == 2
    assert "qrels.txt, line 1: expected 4 fields" in capsys.readouterr().err


def test_the_means_are_named_metrics_as_every_command_names_them() -> None:
    res = intent_aware({"q1": ["a", "b", "c"]}, {"q1": {1: ["a", "b"], 2: ["c"]}}, "alpha_ndcg@3")
    as_dict, as_json = res.to_dict(), json.loads(res.to_json())
    assert as_dict["metrics"] == as_json["metrics"] == res.summary
    assert as_dict["summary"] == as_json["summary"] == res.summary  # deprecated, still there
