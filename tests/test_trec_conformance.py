"""trec_eval's own test data, reproduced through the command line.

`shared/conformance/trec_eval/` holds trec_eval 10.0's test files and its
expected outputs:

- ``out.test``: ``trec_eval qrels.test results.test``
- ``out.test.a``: ``-m all_trec``; ``out.test.aq``: the same per query (``-q``)
- ``out.test.aqc``: ``-m all_trec -q -c qrels.test results.trunc`` (a query of
  the qrels missing from the run scores 0 and stays in the mean)
- ``out.test.aql``: ``-m all_trec -q -l2 qrels.rel_level results.test`` (relevant
  from grade 2; nDCG still gains from every grade > 0)

``receval evaluate --convention trec_eval`` must print every measure receval
has to trec_eval's 4 decimals, per query and over all queries, and count the
same queries (``num_q``) and relevant documents (``num_rel``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.io.files import read_file
from tests.required import TREC_FILES

TREC = TREC_FILES


#: every test here reads trec_eval's files (skipped without them: tests/conftest.py)
pytestmark = pytest.mark.trec_files


#: trec_eval's lines that are no measure: the run's name, and relstring (a text)
_NOT = {"runid", "relstring"}
#: measures whose `all` line is a sum over queries (receval's summary: the mean)
_SUMS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}

#: expected file -> (run, qrels, extra CLI options: trec_eval's flags)
CASES = {
    "out.test": ("results.test", "qrels.test", []),
    "out.test.a": ("results.test", "qrels.test", []),
    "out.test.aq": ("results.test", "qrels.test", []),
    "out.test.aqc": ("results.trunc", "qrels.test", ["--missing-recs", "zero"]),  # -c
    "out.test.aql": ("results.test", "qrels.rel_level", ["--threshold", "2"]),  # -l2
    "out.test.aqcM": (  # -c -M100
        "results.trunc",
        "qrels.test",
        ["--missing-recs", "zero", "--depth", "100"],
    ),
}


def receval_name(measure: str) -> str | None:
    """The metric text receval reads for a trec_eval measure (its trec_eval
    name itself), None for the measures receval does not have."""
    if measure in _NOT or measure == "num_q" or measure.startswith("relstring"):
        return None
    return measure


def expected(name: str) -> dict[tuple[str, str], float]:
    """(measure, query or 'all') -> value, for the measures receval has, plus num_q."""
    out = {}
    for line in (TREC / name).read_text().splitlines():
        measure, query, value = line.split()
        if receval_name(measure) is not None or measure == "num_q":
            out[(measure, query)] = float(value)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_cli_reproduces_trec_eval(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, qrels, flags = CASES[name]
    want = expected(name)
    measures = sorted({m for m, _ in want if receval_name(m)})
    assert len(measures) >= (10 if name == "out.test" else 97)
    per_user = tmp_path / "per_user.csv"
    argv = [
        "evaluate",
        str(TREC / run),
        str(TREC / qrels),
        "--convention",
        "trec_eval",
        *flags,
        "--json",
        "--per-user",
        str(per_user),
    ]
    for m in measures:
        argv += ["-m", str(receval_name(m))]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    table = pd.read_csv(per_user, dtype={"user": str}).set_index("user")
    conv = receval.evaluation.conventions.get("trec_eval")
    checked = 0
    users = result["counts"]["users_evaluated"]
    for (measure, query), value in want.items():
        if measure == "num_q":
            assert users == value
            continue
        column = str(receval.parse_metric(str(receval_name(measure)), conv.params))
        if query == "all":
            got = result["metrics"][column]
            if measure in _SUMS:
                got *= users
        else:
            got = float(table.loc[query, column])
        assert round(got, 4) == pytest.approx(value, abs=1e-9), (measure, query, got)
        checked += 1
    assert checked >= len(measures)


def test_receval_defaults_already_agree_on_these_queries() -> None:
    """Without the convention the numbers of out.test.a hold too: on this run, trec_eval's
    tie rule and query policies change none of them (a documented coincidence)."""
    want = {m: v for (m, q), v in expected("out.test.a").items() if q == "all"}
    recs, _ = read_file(TREC / "results.test", role="recommendations")
    qrels, _ = read_file(TREC / "qrels.test", role="truth")
    # rbp and rbp_resid: receval's p is 0.8, trec_eval's 0.9; ndcg_rel: trec_eval's tie
    # rule moves it by 5e-6, across a rounding edge (0.36815 vs 0.368148)
    differ = {"num_q", "ndcg", "rbp", "rbp_resid", "ndcg_rel"}
    names = [m for m in want if m not in differ]
    res = receval.evaluate(recs, qrels, [str(receval_name(m)) for m in names])
    users = res.counts["users_evaluated"]
    for measure in names:
        got = res.summary[str(receval.parse_metric(str(receval_name(measure))))]
        got *= users if measure in _SUMS else 1
        assert round(got, 4) == pytest.approx(want[measure], abs=1e-9), measure


def test_trec_eval_tie_rule_is_docno_descending_as_strings() -> None:
    """Equal scores: trec_eval sorts docnos descending by strcmp ("10" before "9")."""
    recs = pd.DataFrame({"user": 1, "item": [9, 10, 2], "score": [1.0, 1.0, 1.0]})
    truth = {1: {9: 1}}
    trec = receval.evaluate(recs, truth, "rr", convention="trec_eval")
    # "9" > "2" > "10" as strings: 9 comes first
    assert trec.summary["rr"] == 1.0
    mine = receval.evaluate(recs, truth, "rr")  # numerically ascending: 2, 9, 10
    assert mine.summary["rr"] == 0.5


def test_trec_eval_query_policies() -> None:
    """Run-only queries are ignored; qrels queries without relevant docs score 0;
    qrels queries missing from the run are left out (scored 0 with -c)."""
    recs = {"a": ["x", "y"], "b": ["x"], "runonly": ["x"]}
    truth = {"a": {"x": 1}, "b": {"x": 0}, "norun": {"x": 1}, "nothing": {"x": 0}}
    res = receval.evaluate(recs, truth, "P_1", convention="trec_eval")
    assert res.summary["precision@1"] == 0.5  # a: 1, b: 0
    assert res.counts["users_evaluated"] == 2
    assert res.counts["users_skipped"] == {
        "no_truth": 1,
        "no_relevant_items": 0,
        "no_recommendations": 2,
    }
    c = receval.evaluate(recs, truth, "P_1", convention="trec_eval", missing_recs="zero")
    assert c.summary["precision@1"] == 0.25  # a, b, norun, nothing
    assert c.counts["users_evaluated"] == 4


@pytest.mark.parametrize(
    ("measure", "beta", "value"),
    [("set_F.0.5", 0.5**0.5, 0.6923), ("set_F.2", 2**0.5, 0.8182), ("set_F.1.0", 1.0, 0.75)],
)
def test_set_f_parameter_is_beta_squared(
    measure: str, beta: float, value: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: trec_eval's set_F.x is (x + 1)PR / (xP + R) (m_set_F.c), so x is β².

    P = 3/5 and R = 1: trec_eval prints 0.6923 for set_F.0.5 and 0.8182 for
    set_F.2, where f1[beta=0.5] and f1[beta=2] are 0.6522 and 0.8824.
    """
    spec = receval.parse_metric(measure)
    assert spec.name == "f1" and dict(spec.params).get("beta", 1.0) == pytest.approx(beta)
    recs, truth = {"q": ["a", "b", "c", "d", "e"]}, {"q": ["a", "b", "c"]}
    res = receval.evaluate(recs, truth, measure, convention="trec_eval")
    assert round(res.summary[str(spec)], 4) == value
    assert round(receval.evaluate(recs, truth, "f1[beta=0.5]").summary["f1[beta=0.5]"], 4) == (
        0.6522
    )
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q Q0 {d} {i + 1} {5 - i} t\n" for i, d in enumerate("abcde")))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q 0 {d} 1\n" for d in "abc"))
    argv = ["evaluate", str(run), str(qrels), "--convention", "trec_eval", "-m", measure]
    assert main([*argv, "--json"]) == 0
    assert round(json.loads(capsys.readouterr().out)["metrics"][str(spec)], 4) == value


def test_set_measures_reject_bad_parameters() -> None:
    with pytest.raises(receval.MetricError, match="must be > 0"):
        receval.parse_metric("set_F.0")
    with pytest.raises(receval.MetricError, match="takes no parameter"):
        receval.parse_metric("set_P.5")


#: out.test.meas_params's measures with parameters receval has -> receval text (the
#: custom gains of ndcg_1=3,2=9,4=4.5 and the levels of 11pt_avg_.25,.5,.75 it has not)
_PARAMETERS = {"utility_2,-1,0,0": "utility[rel_ret=2]"}
_UNSUPPORTED = {"ndcg_1=3,2=9,4=4.5", "11pt_avg_.25,.5,.75"}


def test_measure_parameters_of_trec_eval(tmp_path: Path) -> None:
    """trec_eval's -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35 -m utility.2,-1,0,0
    -m ndcg_cut.10,20,23.4 -m success.2,5,20 -m iprec_at_recall..10,.20,.25,.75,.50."""
    want: dict[tuple[str, str], float] = {}
    for line in (TREC / "out.test.meas_params").read_text().splitlines():
        measure, query, value = line.split()
        if measure not in _UNSUPPORTED and measure != "runid":
            want[(measure, query)] = float(value)
    names = sorted({m for m, _ in want})
    conv = receval.evaluation.conventions.get("trec_eval")
    texts = {m: _PARAMETERS.get(m, m) for m in names}
    recs, _ = read_file(TREC / "results.test", role="recommendations")
    qrels, _ = read_file(TREC / "qrels.test", role="truth")
    res = receval.evaluate(recs, qrels, list(texts.values()), convention="trec_eval")
    for (measure, query), value in want.items():
        column = str(receval.parse_metric(texts[measure], conv.params))
        per_user = res.per_user.rename(index=str)  # qids "301" are the integer 301 (#30)
        got = res.summary[column] if query == "all" else per_user.loc[query, column]
        assert round(float(got), 4) == pytest.approx(value, abs=1e-9), (measure, query)
    assert len(names) == 20


def test_trec_eval_and_ir_measures_names_parse() -> None:
    conv = receval.evaluation.conventions.get("trec_eval").params
    cases = {
        "P.5,7": ["precision@5", "precision@7"],
        "iprec_at_recall..25": ["iprec[empty=nan,recall=0.25]"],
        "Rprec_mult.0.35": ["r_precision[mult=0.35]"],
        "rbp.p=0.5": ["rbp[grades=positive,p=0.5]"],
        "11pt_avg": ["iprec_avg[empty=nan]"],
        "AP@10": ["ap@10[denominator=relevant]"],
        "nDCG(dcg='exp-log2')@10": ["ndcg@10[gain=exp,grades=positive]"],
        "IPrec@0.1": ["iprec[empty=nan,recall=0.1]"],
        "Judged@10": ["judged@10"],
        "NumRelRet": ["hits"],
        "SetAP": ["set_ap"],
        "RBP(p=0.5)": ["rbp[grades=positive,p=0.5]"],
        "RBP": ["rbp[grades=positive]"],  # ir_measures' p = 0.8 (the convention's is 0.9)
        "SetF(beta=0.25)": ["f1[beta=0.5]"],  # trec_eval's set_F.0.25: x is β²
    }
    for text, expected_specs in cases.items():
        got = [str(s) for s in receval.parse_metrics(text, conv)]
        assert got == expected_specs, text
    for text, words in {
        "AP(rel=2)@10": "threshold=2",
        "AP(judged_only=true)": "unjudged='condense'",
        "IPrec": "recall level",
        "SetP@10": "no cut-off",
        "num_q": "users_evaluated",
    }.items():
        with pytest.raises(receval.errors.MetricError, match=words):
            receval.parse_metric(text)
