"""Engines behind one interface (issue #30, point 3).

Every engine is a :class:`receval.engines.base.Engine` (prepare, evaluate
each part, combine), chosen by :func:`receval.engines.engine_for` from the
form :mod:`receval.io` opened the inputs into, never by a test of the
inputs' type in the evaluation surface. The combine step is the base
class's, for every engine: that is why the numbers cannot depend on the
engine. A new engine is a dozen lines (``test_a_new_engine_...``).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines import ENGINES, engine_for, local, spark
from receval.engines.base import Engine, register
from receval.engines.driver import Pair, Plan, evaluate_pair
from receval.evaluation.assemble import result_of
from receval.exact import ExactSum
from receval.io import pair as io_pair
from receval.io.tables import read_recs, read_truth
from receval.metrics.spec import parse_metrics
from receval.records import Columns, PairSource, SparkRows, Tables, subset

PACKAGE = Path(receval.__file__).resolve().parent
METRICS = ["ndcg@3", "recall@2", "ap", "rr", "precision@1", "coverage@2"]


def _data(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    recs = pd.DataFrame(
        {
            "user": np.repeat(np.arange(30), 4),
            "item": rng.integers(0, 12, 120),
            "score": rng.integers(0, 3, 120).astype(float),  # many ties
        }
    ).drop_duplicates(["user", "item"])
    truth = pd.DataFrame({"user": rng.integers(0, 34, 60), "item": rng.integers(0, 12, 60)})
    return recs, truth.drop_duplicates()


def test_the_engine_is_chosen_by_the_form_of_the_opened_inputs(tmp_path: Path) -> None:
    recs, truth = _data()
    shuffled = recs.sample(frac=1, random_state=1)
    # integer users in any order: put in user order, merged pair by pair of users
    merged = io_pair.open_pair(shuffled, truth, Columns())
    assert isinstance(merged.inputs, PairSource)
    assert type(engine_for(merged.inputs)) is local.Streamed
    # text users in the lists, numbers in the truth: in memory
    text = shuffled.assign(user="u" + shuffled["user"].astype(str))
    opened = io_pair.open_pair(text, truth, Columns())
    assert isinstance(opened.inputs, Tables)
    assert type(engine_for(opened.inputs)) is local.InProcess
    recs.to_parquet(tmp_path / "r.parquet")
    truth.to_parquet(tmp_path / "t.parquet")
    files = io_pair.open_pair(str(tmp_path / "r.parquet"), str(tmp_path / "t.parquet"), Columns())
    assert isinstance(files.inputs, PairSource)
    assert type(engine_for(files.inputs)) is local.Streamed
    rows = SparkRows(rows=None, to_pair=lambda t: t, user_type=None)
    assert type(engine_for(rows)) is spark.Spark
    with pytest.raises(TypeError, match="no engine evaluates inputs of the form dict"):
        engine_for({})


def test_every_engine_is_an_engine_and_combines_the_one_way() -> None:
    engines = {*ENGINES, local.Batches}
    assert {e.name for e in engines} == {"in_process", "streamed", "spark", "batches"}
    for engine in engines:
        assert issubclass(engine, Engine)
        assert engine.combine is Engine.combine, f"{engine.name} combines on its own"
        for step in ("accepts", "prepare", "parts"):
            assert step in vars(engine), f"{engine.name} lacks {step}"
    assert not local.Batches.accepts(Tables([], None))  # made by the Accumulator only
    assert spark.Spark.remote and not spark.Spark.ordered_rows
    assert local.InProcess.ordered_rows and not local.InProcess.remote


@dataclass
class OneUserAtATime:
    """A form of inputs of the test's own: tables, evaluated user by user,
    largest user first."""

    recs: Any
    truth: Any


def test_a_new_engine_is_chosen_by_its_form_and_gives_the_same_numbers() -> None:
    class Reversed(Engine):
        name = "reversed"

        @classmethod
        def accepts(cls, inputs: Any) -> bool:
            return isinstance(inputs, OneUserAtATime)

        def prepare(self, specs: Any, settings: Any, items: Any) -> Plan:
            self.r = read_recs(self.inputs.recs, Columns())
            self.t = read_truth(self.inputs.truth, Columns())
            top = float(self.t.grades.max()) if len(self.t.grades) else 1.0
            return Plan(tuple(specs), top, items=items, **settings)

        def parts(self, plan: Plan, cells: Any = None) -> Iterator[Any]:
            users = np.union1d(self.r.users, self.t.users)
            for u in users[::-1]:
                r, t = self.r.users == u, self.t.users == u
                none = np.zeros(0, dtype=bool)
                sub_r, sub_t = subset(self.r, r, none), subset(self.t, t, none)
                pair = Pair(sub_r, sub_t, int, int, int(r.sum()))
                yield evaluate_pair(plan, pair)

    recs, truth = _data(3)
    register(Reversed)
    try:
        engine = engine_for(OneUserAtATime(recs, truth))
        assert isinstance(engine, Reversed)
        specs = parse_metrics(["ndcg@3", "recall@2", "ap", "rr"])
        options = receval.EvalOptions()
        out = engine.run(specs, options.engine())
        got = result_of(out, specs, options, None)
    finally:
        ENGINES.remove(Reversed)
    want = receval.evaluate(recs, truth, ["ndcg@3", "recall@2", "ap", "rr"])
    assert got.summary == want.summary  # bit for bit: one combiner for every engine
    pd.testing.assert_frame_equal(got.per_user, want.per_user, check_exact=True)


def test_the_accumulator_runs_on_the_batches_engine() -> None:
    recs, truth = _data(5)
    acc = receval.Accumulator(["ndcg@3", "recall@2", "rr"])
    for lo in range(0, 34, 7):
        acc.update(
            recs[(recs.user >= lo) & (recs.user < lo + 7)],
            truth[(truth.user >= lo) & (truth.user < lo + 7)],
        )
    assert isinstance(acc._engine, local.Batches) and len(acc) == 5
    want = receval.evaluate(recs, truth, ["ndcg@3", "recall@2", "rr"])
    assert acc.compute().summary == want.summary


def _names(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    found |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    found |= {  # a class made an engine here
        "subclass of Engine"
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef) and any(ast.unparse(b).endswith("Engine") for b in n.bases)
    }
    return found


def test_the_evaluation_layer_is_the_surface_only() -> None:
    """No module of ``receval.evaluation`` tests what kind of table it holds
    (``is_spark``), runs Spark (``mapInArrow``, ``repartition``) or defines an
    engine: those live in ``receval.engines`` and ``receval.io``."""
    wrong = []
    for module in sorted((PACKAGE / "evaluation").glob("*.py")):
        used = _names(module) & {
            "is_spark",
            "mapInArrow",
            "repartition",
            "subclass of Engine",
            "pyspark",
        }
        if used:
            wrong.append(f"{module.name}: {sorted(used)}")
    assert not wrong, "\n".join(wrong)
    assert not (PACKAGE / "evaluation" / "spark.py").exists()
    assert not (PACKAGE / "evaluation" / "spark_ratings.py").exists()


def test_metric_knowledge_of_the_rating_engine_is_declared() -> None:
    """The Spark engine of ratings knows which metrics come from the exact
    sums of the errors by their declaration, not by their names."""
    from receval.evaluation import ratings
    from receval.metrics.registry import REGISTRY

    for source in (
        inspect.getsource(ratings),
        (PACKAGE / "engines" / "spark_ratings.py").read_text(),
    ):
        by_name = [  # a test of a metric's name: `s.name == "mae"`, `s.name in (...)`
            ast.unparse(n)
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Attribute)
            and n.left.attr == "name"
        ]
        assert not by_name, by_name
    for name in ("mae", "mse", "rmse"):
        assert REGISTRY[name].from_error_sums is not None
    for name in ("r2", "pearson", "spearman", "kendall"):
        assert REGISTRY[name].from_error_sums is None
    rng = np.random.default_rng(0)
    a, p = rng.uniform(1, 5, 50), rng.uniform(1, 5, 50)
    d = a - p
    means = ExactSum.of(np.abs(d)).mean(), ExactSum.of(d**2).mean()
    for name in ("mae", "mse", "rmse"):
        definition = REGISTRY[name]
        assert definition.from_error_sums(*means) == definition.kernel(a, p)


@pytest.mark.parametrize("items", [[5, 5], [5, 6]])
def test_judgments_of_a_part_without_truth_rows(items: list[int]) -> None:
    """A part whose users have no truth row (a batch, a chunk of users the
    truth does not know) with judgments read (``unjudged="condense"``): the
    Python join failed on it (IndexError) when a list held an item twice."""
    from receval.engines import numpy_engine
    from receval.records import RecsData, TruthData

    none = np.empty(0, np.int64)
    recs = RecsData(np.array([1, 1]), np.array(items), np.array([2.0, 1.0]), None, rows=2)
    truth = TruthData(none, none, np.empty(0), rows=0, graded=True)
    p = numpy_engine.prepare(recs, truth, judged=True, duplicates="keep")
    assert len(p.n) == 1 and p.rec_judged is not None and not p.rec_judged.any()
