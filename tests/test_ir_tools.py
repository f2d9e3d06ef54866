"""receval inside ir_measures and ranx workflows (issue #34): TREC run/qrels
files and ranx/pytrec_eval dictionaries written from what receval reads, the
ranx report table, and the ir_measures provider's lazy import. The checks
against the tools themselves are tests/conformance/test_ir_measures_provider.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.ranx_table import ranx_label, ranx_table
from receval.errors import InputError, OptionError

METRICS = ["ndcg@5", "ap", "rr", "precision@3", "recall@10", "hit_rate@2"]


def _workload(seed: int, ids: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scored recommendations (many ties) and graded truth; ids as ints,
    digit strings or text."""
    rng = np.random.default_rng(seed)
    recs, truth = [], []

    def name(x: int, role: str) -> object:
        if ids == "int":
            return x
        if ids == "digits":
            return str(x) if x % 4 else f"0{x}"  # "07" stays text
        return f"{role}{x}" if x % 3 else str(x)

    for u in range(40):
        for i in rng.choice(30, int(rng.integers(0, 12)), replace=False):
            recs.append((name(u, "u"), name(int(i), "i"), float(rng.integers(0, 4)) / 3))
        for i in rng.choice(30, int(rng.integers(1, 6)), replace=False):
            truth.append((name(u, "u"), name(int(i), "i"), int(rng.integers(0, 4))))
    return (
        pd.DataFrame(recs, columns=["user", "item", "score"]),
        pd.DataFrame(truth, columns=["user", "item", "relevance"]),
    )


def _same(a: receval.Result, b: receval.Result) -> None:
    """Bit for bit: the same summary, the same per-user table."""
    assert list(a.summary) == list(b.summary)
    for k in a.summary:
        assert np.array_equal(a.summary[k], b.summary[k], equal_nan=True), k
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)


@pytest.mark.parametrize("ids", ["int", "digits", "text"])
def test_files_and_dicts_round_trip_bit_for_bit(ids: str, tmp_path: Path) -> None:
    recs, truth = _workload(len(ids), ids)
    direct = receval.evaluate(recs, truth, METRICS)
    run_file = receval.write_trec_run(recs, tmp_path / "run.trec", run_id="sys")
    qrels_file = receval.write_trec_qrels(truth, tmp_path / "qrels.txt")
    _same(direct, receval.evaluate(run_file, qrels_file, METRICS))
    run, qrels = receval.run_dict(recs), receval.qrels_dict(truth)
    _same(direct, receval.evaluate(run, qrels, METRICS))
    # back from the files and the dicts: the same dicts
    assert receval.run_dict(run_file) == run == receval.run_dict(run)
    assert receval.qrels_dict(qrels_file) == qrels == receval.qrels_dict(qrels)
    assert all(isinstance(q, str) and isinstance(d, str) for q in run for d in run[q])
    assert all(type(g) is int for q in qrels for g in qrels[q].values())


def test_the_file_is_trec_eval_s_format(tmp_path: Path) -> None:
    recs = {"q1": {"d1": 0.5, "d2": 1 / 3, 7: 0.5}, 10: {"x": 2.0}}
    path = receval.write_trec_run(recs, tmp_path / "r.run")
    assert path.read_text().splitlines() == [
        "10 Q0 x 1 2.0 receval",
        "q1 Q0 7 1 0.5 receval",  # equal scores: ids ascending (ties="item")
        "q1 Q0 d1 2 0.5 receval",
        "q1 Q0 d2 3 0.3333333333333333 receval",
    ]
    receval.write_trec_run(recs, path, ties="item_str_desc", run_id="t")
    assert path.read_text().splitlines()[1:3] == ["q1 Q0 d1 1 0.5 t", "q1 Q0 7 2 0.5 t"]
    truth = pd.DataFrame({"qid": ["b", "b", "a"], "docno": [2, 10, 1], "rel": [1, -1, 0.5]})
    q = receval.write_trec_qrels(truth, tmp_path / "q.qrels")
    assert q.read_text() == "a 0 1 0.5\nb 0 2 1\nb 0 10 -1\n"


def test_ids_become_text_by_the_id_rule() -> None:
    run = receval.run_dict({7: [1.0, "007", 2**70]})
    assert run == {"7": {"1": 3.0, "007": 2.0, str(2**70): 1.0}}
    assert receval.qrels_dict({"7": {11.5: 1}, 8: []}) == {"7": {"11.5": 1}, "8": {}}


def test_lists_without_scores_get_scores_that_keep_their_order(tmp_path: Path) -> None:
    ranked = pd.DataFrame({"user": [1, 1, 1, 2], "item": [5, 6, 7, 5], "rank": [9, 3, 5, 2]})
    assert receval.run_dict(ranked) == {"1": {"6": 3.0, "7": 2.0, "5": 1.0}, "2": {"5": 1.0}}
    truth = {1: [5, 7], 2: [5]}
    direct = receval.evaluate(ranked, truth, METRICS)
    _same(direct, receval.evaluate(receval.run_dict(ranked), truth, METRICS))
    path = receval.write_trec_run(ranked, tmp_path / "r.trec")
    _same(direct, receval.evaluate(path, truth, METRICS))


@pytest.mark.parametrize(
    ("recs", "found"),
    [
        ({"a b": [1]}, "user 'a b'"),
        ({"u": ["x\ty"]}, "item 'x\\ty'"),
        ({"u": ["a\u3000b"]}, "item 'a\\u3000b'"),
        ({"u\x1c": [1]}, "user 'u\\x1c'"),
        ({"#u": [1]}, "user '#u'"),
    ],
)
def test_ids_a_trec_file_cannot_hold_are_refused(recs: dict, found: str, tmp_path: Path) -> None:
    target = tmp_path / "run.trec"
    with pytest.raises(InputError, match="a TREC file cannot hold") as err:
        receval.write_trec_run(recs, target)
    assert found in str(err.value)
    assert not target.exists() and list(tmp_path.iterdir()) == []
    receval.run_dict(recs)  # a dictionary holds them


def test_an_empty_id_is_missing_before_any_trec_file_is_written(tmp_path: Path) -> None:
    """An empty text is no id through every door: refused as a missing id
    when the run is read, before a TREC file is started."""
    target = tmp_path / "run.trec"
    with pytest.raises(InputError, match="missing item id"):
        receval.write_trec_run({"u": [""]}, target)
    assert list(tmp_path.iterdir()) == []


def test_other_errors(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="run_id"):
        receval.write_trec_run({"u": [1]}, tmp_path / "r", run_id="my run")
    twice = pd.DataFrame({"user": [1, 1], "item": [3, 3], "score": [0.1, 0.2]})
    with pytest.raises(InputError, match="the same item appears twice") as err:
        receval.run_dict(twice)
    assert "user 1" in str(err.value) and "item 3" in str(err.value)
    with pytest.raises(OptionError, match="ties"):
        receval.run_dict({"u": [1]}, ties="random")
    with pytest.raises(InputError, match="qrels"):
        receval.qrels_dict(pd.DataFrame({"user": [1, 1], "item": [2, 2]}))


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "run.trec"
    target.write_text("old\n")

    def half(self: Path, data: bytes) -> int:
        with open(self, "wb") as f:
            f.write(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", half)
    with pytest.raises(Exception, match=r"run\.trec"):
        receval.write_trec_run({"u": list(range(100))}, target)
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.trec"]  # no temporary left


# -- ranx's report table: strings printed by ranx 0.3.21 (Report.__str__) for these inputs --

RANX_PINNED = """\
#    Model    NDCG@10    MAP@100      MRR
---  -------  ---------  ---------  -----
a    bm25     0.412      0.300ᵇ     0.5
b    dpr      0.450ᵃ     0.221      0.75
c    1        0.399      0.301ᵇ     0.625"""


def test_ranx_table_pinned() -> None:
    means = {
        "bm25": {"ndcg@10": 0.4123, "ap@100": 0.3, "rr": 0.5},
        "dpr": {"ndcg@10": 0.45, "ap@100": 0.2205, "rr": 0.75},
        "1": {"ndcg@10": 0.3994, "ap@100": 0.301, "rr": 0.625},
    }
    wins = {"bm25": {"ap@100": ["dpr"]}, "dpr": {"ndcg@10": ["bm25"]}, "1": {"ap@100": ["dpr"]}}
    assert ranx_table(means, wins) == RANX_PINNED
    # percentages; every cell numeric: tabulate's "g" and decimal alignment
    got = ranx_table(
        {"x": {"precision@5": 0.12345}, "y": {"precision@5": 1.0}}, show_percentages=True
    )
    assert got == "#    Model      P@5\n---  -------  -----\na    x         12.3\nb    y        100"
    assert (
        ranx_label("f1@3") == "F1@3" and ranx_label("ap[denominator=k]@5") == "ap[denominator=k]@5"
    )
    with pytest.raises(OptionError, match="wins"):
        ranx_table({"x": {"m": 1.0}}, {"x": {"m": ["z"]}})


def test_comparison_to_ranx_table() -> None:
    truth = {u: [u % 3] for u in range(12)}
    good = {u: [u % 3, 9] for u in range(12)}
    bad = {u: [9, 8] for u in range(12)}
    c = receval.compare(
        {"good": good, "bad": bad}, truth, ["ndcg@2", "precision@1"], ci="none", n_resamples=200
    )
    assert c.to_ranx_table() == (
        "#    Model    NDCG@2    P@1\n"
        "---  -------  --------  ------\n"
        "a    good     1.000ᵇ    1.000ᵇ\n"
        "b    bad      0.000     0.000"
    )


def test_the_ir_measures_provider_imports_ir_measures_only_when_asked() -> None:
    before = "ir_measures" in sys.modules
    import receval.analysis.ir_measures_provider as irp

    assert ("ir_measures" in sys.modules) == before
    if not before:
        try:
            import ir_measures  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match="pip install ir-measures"):
                irp.register()
