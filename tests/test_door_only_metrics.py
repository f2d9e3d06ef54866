"""Metrics that only a door of their own runs (issue #34), and pytrec_eval's empty run lists.

One mechanism: a metric declared with ``MetricDef.door`` (a key of
``receval.metrics.registry.DOORS``: ``agreement``, ``intent_aware``) reads an input that
only that entry point builds (a reference run encoded as grades; one subtopic's
judgments at a time). ``evaluate``, the ``Accumulator`` and ``receval evaluate`` refuse
it and name the door; ``receval metrics`` and ``receval explain`` describe it. The
registry-driven tests leave these metrics out by one rule (``tests.reference.by_evaluate``)
and this file runs the same kind of checks through the door, for every such metric
of the registry: a slow reference, bounds, row order and id forms.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.metrics.registry import DOORS, REQUIREMENTS, MetricDef
from tests.reference import by_evaluate

DOOR_DEFS = [d for d in receval.metrics().values() if not by_evaluate(d)]


def test_the_door_metrics_are_those_of_both_doors() -> None:
    names = {d.name: d.door for d in DOOR_DEFS}
    assert names == {
        **dict.fromkeys(["rbo", "rbo_min", "rbo_res", "intersection", "jaccard"], "agreement"),
        **dict.fromkeys(["alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia"], "intent_aware"),
    }
    for d in DOOR_DEFS:
        assert DOORS[d.door].needs in d.requirements(5, {})
        assert d.needs_reference == (d.door == "agreement")  # the earlier field, read-only
    with pytest.raises(ValueError, match="door='nope' is none of receval's"):
        MetricDef(name="x", description="x", formula="x", kernel=len, door="nope")


# -- 1. refused elsewhere, naming the door ----------------------------------------------


@pytest.mark.parametrize("d", DOOR_DEFS, ids=[d.name for d in DOOR_DEFS])
def test_evaluate_and_the_accumulator_name_the_door(d: Any) -> None:
    door = DOORS[d.door]
    said = rf"{d.name}@5 is computed only by {door.call.split('(')[0]}\(.*it needs "
    with pytest.raises(receval.ReceValError, match=said) as caught:
        receval.evaluate({"u": ["a", "b"]}, {"u": ["a"]}, f"{d.name}@5")
    assert REQUIREMENTS[door.needs] in str(caught.value)
    with pytest.raises(receval.ReceValError, match=said):
        receval.Accumulator([f"{d.name}@5"])


def test_the_command_line_names_the_command(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from receval.cli import main

    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    recs.write_text("user,item,score\nu,a,2\nu,b,1\n")
    truth.write_text("user,item\nu,a\n")
    for metric, command in (("rbo@5", "receval agreement"), ("err_ia@5", "receval intent-aware")):
        assert main(["evaluate", str(recs), str(truth), "-m", metric]) == 2
        err = capsys.readouterr().err
        assert f"computed only by {command} RUN" in err, err
        assert "receval.agreement(" not in err and "receval.intent_aware(" not in err


def test_receval_metrics_and_explain_describe_them(capsys: pytest.CaptureFixture[str]) -> None:
    from receval.cli import main

    assert main(["metrics"]) == 0
    listed = capsys.readouterr().out
    lines = {line.split(" ")[0]: line for line in listed.splitlines()}
    for d in DOOR_DEFS:  # each names its door's command; no other metric names one
        assert lines[d.name].endswith(f"[only through `{DOORS[d.door].command}`]")
    assert sum("only through" in line for line in lines.values()) == len(DOOR_DEFS)
    for name, door in (("rbo", "receval.agreement"), ("alpha_ndcg", "receval.intent_aware")):
        assert main(["explain", name]) == 0
        text = capsys.readouterr().out
        assert "formula:" in text and f"Through {door}" in text, text


# -- 2. the registry-driven checks, through the door ----------------------------------------


def door_reference(name: str) -> float:
    """``name`` through its door on a small case, checked against the slow reference of
    its door's tests (tests/test_agreement.py, tests/test_intent_aware.py); its value."""
    d = receval.metrics()[name]
    if d.door == "agreement":
        from tests.test_agreement import slow

        got = receval.agreement({"u": [1, 2, 3]}, {"u": [2, 4]}, f"{name}@3").summary
        want = slow(name, [1, 2, 3], [2, 4], 3, 0.9, None)
    elif d.door == "intent_aware":
        from tests.test_intent_aware import _reference

        qrels = [(0, 1, "a", 1), (0, 1, "b", 1), (0, 2, "c", 1), (0, 2, "d", 0)]
        run = {0: ["b", "d", "c", "e"]}
        table = pd.DataFrame(qrels, columns=["query", "subtopic", "doc", "judgment"])
        got = receval.intent_aware(run, table, f"{name}@3").summary
        want = _reference(qrels, run, 3, 0.5)[0][f"{name}@3"]
    else:  # pragma: no cover - a door added without a reference here
        raise AssertionError(f"{name}: door {d.door!r} has no reference in this file")
    (value,) = got.values()
    assert value == pytest.approx(want, rel=1e-12, abs=1e-15), name
    return float(value)


def _random_runs(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A run, a reference run and subtopic judgments of 8 users (ties in scores)."""
    rng = np.random.default_rng(seed)
    rows = [
        (u, int(j), float(rng.integers(0, 4)))
        for u in range(8)
        for j in rng.choice(12, int(rng.integers(0, 7)), replace=False)
    ]
    run = pd.DataFrame(rows, columns=["user", "item", "score"])
    rows = [
        (u, int(j), float(rng.integers(0, 4)))
        for u in range(1, 9)
        for j in rng.choice(12, int(rng.integers(1, 7)), replace=False)
    ]
    reference = pd.DataFrame(rows, columns=["user", "item", "score"])
    rows = [
        (u, s, int(j), int(rng.integers(0, 2)))
        for u in range(8)
        for s in range(int(rng.integers(1, 4)))
        for j in rng.choice(12, 3, replace=False)
    ]
    qrels = pd.DataFrame(rows, columns=["query", "subtopic", "doc", "judgment"])
    return run, reference, qrels


def _through(d: Any, run: Any, other: Any, metric: str) -> pd.Series:
    if d.door == "agreement":
        return receval.agreement(run, other, metric, only_in_run="empty").per_user[metric]
    res = receval.intent_aware(run, other, metric)
    return res.per_query[metric]


@pytest.mark.parametrize("d", DOOR_DEFS, ids=[d.name for d in DOOR_DEFS])
def test_every_door_metric_has_the_properties_of_the_others(d: Any) -> None:
    """Bounds, the order of the rows and the id form (integers, digit strings) change
    nothing, bit for bit; two cut-offs and a non-default parameter each."""
    assert d.bounds[0] <= door_reference(d.name) <= d.bounds[1]
    for seed in (0, 1):
        run, reference, qrels = _random_runs(seed)
        other = reference if d.door == "agreement" else qrels
        for metric in (f"{d.name}@2", f"{d.name}@5"):
            values = _through(d, run, other, metric)
            finite = values.dropna().to_numpy()
            assert ((finite >= d.bounds[0]) & (finite <= d.bounds[1])).all(), metric
            shuffled = _through(
                d,
                run.sample(frac=1, random_state=seed),
                other.sample(frac=1, random_state=1),
                metric,
            )
            assert values.equals(shuffled), metric
            digits = _through(
                d,
                run.astype({"user": str, "item": str}),
                other.astype({other.columns[0]: str, other.columns[-2]: str}),
                metric,
            )
            assert values.to_numpy().tolist() == pytest.approx(
                digits.to_numpy().tolist(), nan_ok=True, rel=0, abs=0
            ), metric
    for p in d.params:  # a value of each parameter other than the default
        value = 0.7 if p.type is float else 2
        metric = f"{d.name}@3[{p.name}={value}]"
        if d.door == "intent_aware":  # α is the door's own option: the keyword sets it
            case = ({0: ["a", "b", "c"]}, {0: {1: ["a", "b"], 2: ["c"]}}, f"{d.name}@3")
            one = receval.intent_aware(*case, alpha=value).summary
            assert one != receval.intent_aware(*case).summary
        else:
            got = _through(d, run, reference, metric)
            assert not got.equals(_through(d, run, reference, f"{d.name}@3")), metric


# -- 3. pytrec_eval: a query of the run with no documents ------------------------------------

#: pytrec_eval 0.5.11 (pytrec_eval-terrier, .conformance/core), RelevanceEvaluator(QRELS,
#: measures).evaluate(RUN) per query: q1 and q4 map to an empty dict in the run. Every
#: measure is 0 for them but gm_map (ln 1e-5, trec_eval's m_gm_map.c floor) and num_rel;
#: q9 (not in the qrels) is left out. (iprec_at_recall and 11pt_avg are NaN there:
#: m_iprec_at_recall.c divides num_rel_ret by num_ret = 0; see below.)
QRELS = {
    "q1": {"a": 1, "b": 0},
    "q2": {"c": 1, "x": 2},
    "q3": {"e": 2, "f": 0},
    "q4": {"g": 0},
    "q5": {"h": 1},
}
#: the empty queries are not first: pytrec_eval crashed (SIGSEGV) on some dicts whose
#: first query is empty
RUN = {"q2": {"c": 1.0, "d": 0.5}, "q1": {}, "q3": {"e": 1.0}, "q4": {}, "q5": {"h": 0.2, "i": 0.4}}
RUN_NOT_JUDGED = {"q9": {}}
ZERO = [
    "map",
    "P_5",
    "recall_5",
    "recip_rank",
    "bpref",
    "Rprec",
    "ndcg",
    "ndcg_cut_5",
    "map_cut_5",
    "success_1",
    "infAP",
    "Rndcg",
    "set_P",
    "set_recall",
    "set_F",
    "num_ret",
    "num_rel_ret",
    "set_map",
    "Rprec_mult_0.20",
    "utility",
    "relative_P_5",
    "binG",
    "G",
    "ndcg_rel",
]
PYTREC_EVAL = {
    "q1": {**dict.fromkeys(ZERO, 0.0), "gm_map": -11.512925464970229, "num_rel": 1.0},
    "q4": {**dict.fromkeys(ZERO, 0.0), "gm_map": -11.512925464970229, "num_rel": 0.0},
}


@pytest.mark.parametrize("empty", [{}, []], ids=["dict", "list"])
def test_an_empty_list_in_a_run_dict_scores_as_pytrec_eval(empty: Any) -> None:
    run: dict[str, Any] = {**RUN, **RUN_NOT_JUDGED}
    if empty == []:  # user -> items, best first, every list in that form
        run = {q: sorted(items, key=lambda i: -items[i]) for q, items in run.items()}
    names = [*ZERO, "gm_map", "num_rel"]
    res = receval.evaluate(run, QRELS, names, convention="trec_eval")
    per_user = res.per_user.set_axis([str(u) for u in res.per_user.index])
    assert per_user.loc["q9"].isna().all()  # not judged: left out (skipped, counted)
    assert sorted(per_user.dropna(how="all").index) == ["q1", "q2", "q3", "q4", "q5"]
    assert res.counts["users_evaluated"] == 5
    for column, name in zip(per_user.columns, names, strict=True):
        for query, want in PYTREC_EVAL.items():
            assert per_user.loc[query, column] == want[name], (query, name)
    # the query left out of the run instead is not evaluated (trec_eval without -c)
    absent = receval.evaluate(
        {q: v for q, v in RUN.items() if v}, QRELS, "map", convention="trec_eval"
    )
    assert sorted(str(u) for u in absent.per_user.dropna().index) == ["q2", "q3", "q5"]


#: pytrec_eval 0.5.11's iprec_at_recall and 11pt_avg for RUN and QRELS (its bundled trec_eval
#: 9.0.8 rounds c = ⌊level · R + 0.9⌋: rounding=trec9): trec_eval starts from num_rel_ret /
#: num_ret, 0/0 for a query mapped to {}, and keeps it at the levels whose c is 0 (every level
#: of q4, R = 0; level 0 of q1, R = 1). The same with judged_docs_only_flag=True on lists of
#: unjudged documents only (condensed to nothing).
NAN = math.nan
PYTREC_IPREC = {
    "q1": [NAN] + [0.0] * 10 + [NAN],
    "q4": [NAN] * 12,
    "q2": [1.0] * 6 + [0.0] * 5 + [0.5454545454545454],
}
IPREC = [f"iprec[recall={x / 10},rounding=trec9]" for x in range(11)]
IPREC.append("iprec_avg[rounding=trec9]")


def _same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or got == want


@pytest.mark.parametrize("form", ["empty", "condensed"])
def test_an_empty_list_in_a_run_dict_interpolated_precision(form: str) -> None:
    """NaN where pytrec_eval's 0/0 is NaN: the library's own value, every door alike (the
    trec_eval text prints it as trec_eval does: `  -nan`)."""
    run: dict[str, Any] = dict(RUN)
    options: dict[str, Any] = {}
    if form == "condensed":  # -J: lists of unjudged documents only
        run.update({"q1": {"zz": 1.0}, "q4": {"yy": 2.0}})
        options["unjudged"] = "condense"
    res = receval.evaluate(run, QRELS, IPREC, convention="trec_eval", **options)
    rows = res.per_user.set_axis([str(u) for u in res.per_user.index])
    for query, want in PYTREC_IPREC.items():
        got = rows.loc[query].tolist()
        assert all(map(_same, got, want)), (query, got)
    undefined = [2] + [1] * 10 + [2]  # level 0 and 11pt_avg: q1 and q4; the others: q4
    assert res.counts["undefined"] == {
        str(s): n for s, n in zip(res.metrics, undefined, strict=True)
    }


def test_a_user_without_a_list_is_trec_evals_bogus_ranking() -> None:
    """trec_eval -c ranks one document in no qrels for a query missing from the run:
    num_rel_ret / num_ret = 0/1, so 0 at every level (trec_eval.c's bogus_ranking); a query
    given empty ({}) is 0/0."""
    run = {q: v for q, v in RUN.items() if q != "q1"}
    res = receval.evaluate(run, QRELS, IPREC, convention="trec_eval", missing_recs="zero")
    rows = res.per_user.set_axis([str(u) for u in res.per_user.index])
    assert rows.loc["q1"].tolist() == [0.0] * 12
    assert all(map(_same, rows.loc["q4"].tolist(), PYTREC_IPREC["q4"]))
    # outside the trec_eval convention an empty list is 0 (iprec's default, empty=zero)
    plain = receval.evaluate(RUN, QRELS, ["iprec", "iprec_avg"])
    assert plain.per_user.loc["q1"].tolist() == [0.0, 0.0]


# -- known values (tests/data/known_values_intent.csv, as tests/test_registry.py asks) -------

#: the cases of tests/data/known_values_intent.csv: (run, subtopic qrels)
INTENT_CASES: dict[str, tuple[Any, Any]] = {
    "pyndeval": (
        pd.DataFrame({"query": "0", "doc": ["A", "D", "E", "B"], "score": [9.3, 8.4, 8.1, 7.6]}),
        pd.DataFrame(
            [
                ("0", "a", "A", 1),
                ("0", "b", "B", 1),
                ("0", "b", "D", 1),
                ("0", "c", "C", 1),
                ("0", "a", "E", 0),  # judged, relevant to nothing
            ],
            columns=["query", "subtopic", "doc", "judgment"],
        ),
    ),
    "hand": ({"q1": ["a", "b", "c"]}, {"q1": {1: ["a", "b"], 2: ["c"]}}),
}
INTENT_KNOWN = list(
    csv.DictReader((Path(__file__).parent / "data" / "known_values_intent.csv").open())
)


@pytest.mark.parametrize(
    "row", INTENT_KNOWN, ids=[f"{r['case']}-{r['metric']}" for r in INTENT_KNOWN]
)
def test_intent_aware_known_values(row: dict[str, str]) -> None:
    """The metric string's alpha, given in the string or as the door's alpha=."""
    spec = receval.parse_metric(row["metric"])
    run, qrels = INTENT_CASES[row["case"]]
    cols = {"user_col": "query", "item_col": "doc"} if row["case"] == "pyndeval" else {}
    metric = f"{spec.name}@{spec.k}"
    res = receval.intent_aware(run, qrels, metric, alpha=spec.param_dict["alpha"], **cols)
    want = pytest.approx(float(row["expected"]), rel=1e-14, abs=1e-15)
    assert res.per_query.loc[row["user"], metric] == want
    if "[" in row["metric"]:  # the string's alpha wins over the door's
        own = receval.intent_aware(run, qrels, row["metric"], alpha=0.9, **cols)
        assert own.per_query.loc[row["user"], row["metric"]] == want


def test_intent_aware_alpha_in_the_string_and_its_errors() -> None:
    run, qrels = INTENT_CASES["hand"]
    res = receval.intent_aware(run, qrels, ["alpha_ndcg@3", "alpha_ndcg@3[alpha=0.3]"])
    alone = receval.intent_aware(run, qrels, "alpha_ndcg@3", alpha=0.3)
    assert res.summary["alpha_ndcg@3[alpha=0.3]"] == alone.summary["alpha_ndcg@3"]
    assert res.summary["alpha_ndcg@3"] != alone.summary["alpha_ndcg@3"]
    for bad in ("alpha_ndcg@3[alpha=1.5]", "alpha_ndcg@3[alpha=x]"):
        with pytest.raises(receval.MetricError, match=r"alpha must be a number in \[0, 1\]"):
            receval.intent_aware(run, qrels, bad)
