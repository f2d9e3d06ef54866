"""What a rank column means: ``order`` (receval's default: ranks order a list,
gaps close up) or ``position`` (rank r is position r; RecTools).

The engine takes ``rank=`` like ``ties=`` (``InProcess(...).run(specs, {"rank": ...})``);
``convention="rectools"`` sets it (``Convention.rank``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines import numpy_engine
from receval.engines.local import InProcess
from receval.evaluation.conventions import get
from receval.io.tables import iter_recs, read_truth
from receval.metrics.spec import parse_metrics
from receval.records import Columns, Tables
from tests.reference import ref_metric

COLS = Columns()  # detected


def run(recs: pd.DataFrame, truth: Any, metrics: list[str], **kw: Any) -> pd.DataFrame:
    """Per-user values through the engine, with its keyword options."""
    options = {"threshold": 1.0, "empty_truth": "skip", "missing_recs": "zero"}
    options |= {"duplicates": "error", **kw}
    specs = parse_metrics(metrics)
    out = InProcess(Tables(iter_recs(recs, COLS), read_truth(truth, COLS))).run(specs, options)
    return pd.DataFrame(out.values.T, index=out.user_ids, columns=[str(s) for s in specs])


def test_rank_gap_is_an_empty_position() -> None:
    """Regression: a list whose only item has rank 3 scored as if at position 1.
    RecTools (a hit is rank <= k): precision@1, mrr@1 and map@1 are 0."""
    recs = pd.DataFrame({"user": [1], "item": [10], "rank": [3]})
    metrics = ["precision@1", "rr@1", "ap@1[denominator=relevant]", "rr", "ndcg@3"]
    got = run(recs, {1: [10]}, metrics, rank="position").loc[1]
    assert got["precision@1"] == 0.0 and got["rr@1"] == 0.0
    assert got["ap@1[denominator=relevant]"] == 0.0
    assert got["rr"] == pytest.approx(1 / 3)
    assert got["ndcg@3"] == pytest.approx(1 / math.log2(4))
    closed = run(recs, {1: [10]}, metrics).loc[1]  # receval's default: order
    assert closed["precision@1"] == 1.0 and closed["rr"] == 1.0


def test_rectools_convention_reads_ranks_as_positions() -> None:
    assert get("rectools").rank == "position"
    assert {c.rank for name, c in receval.evaluation.conventions.CONVENTIONS.items()} == {
        "order",
        "position",
    }
    assert get("receval").rank == "order"


def test_gaps_are_counted_under_either_meaning() -> None:
    recs = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 2], "rank": [1, 3, 1, 2]})
    for rank in ("order", "position"):
        specs = parse_metrics(["precision@2"])
        inputs = Tables(iter_recs(recs, COLS), read_truth({1: [2], 2: [2]}, COLS))
        options = {"threshold": 1.0, "empty_truth": "skip", "missing_recs": "zero"}
        out = InProcess(inputs).run(specs, options | {"duplicates": "error", "rank": rank})
        assert out.counts["lists_with_rank_gaps"] == 1


#: metrics that only read positions, not the list's length: a gap is exactly a
#: non-relevant filler item there
POSITIONAL = [
    "precision@{k}",
    "recall@{k}",
    "hit_rate@{k}",
    "hits@{k}",
    "rr@{k}",
    "ap@{k}",
    "ap@{k}[denominator=relevant]",
    "dcg@{k}[gain=exp]",
    "ndcg@{k}",
    "ndcg@{k}[ideal=k]",
    "rbp@{k}",
    "err@{k}",
    "r_precision@{k}",
]


@pytest.mark.parametrize("seed", range(4))
def test_positions_equal_the_list_with_fillers_in_the_gaps(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under rank="position", each metric of the list equals the slow reference
    on the list whose gaps hold non-relevant filler items; the retrieved
    denominators count the items only; tiny blocks change no bit."""
    rng = np.random.default_rng(seed)
    rows, truth, lists, fillers = [], {}, {}, iter(range(10_000, 20_000))
    for u in range(25):
        n = int(rng.integers(0, 8))
        ranks = np.sort(rng.choice(15, n, replace=False) + 1)
        items = rng.choice(30, n, replace=False)
        rows += [(u, int(i), int(r)) for i, r in zip(items, ranks, strict=True)]
        slots: list[Any] = [next(fillers) for _ in range(int(ranks.max()) if n else 0)]
        for i, r in zip(items, ranks, strict=True):
            slots[r - 1] = int(i)
        lists[u] = (slots, [int(i) for i in items])
        truth[u] = {int(i): int(rng.integers(0, 4)) for i in rng.choice(30, 6, replace=False)}
    recs = pd.DataFrame(rows, columns=["user", "item", "rank"])
    k = int(rng.integers(1, 12))
    metrics = [m.format(k=k) for m in POSITIONAL]
    metrics += [f"precision@{k}[denominator=retrieved]", f"ap@{k}[denominator=retrieved]", "auc"]
    kw = {"rank": "position", "empty_truth": "zero"}
    got = run(recs, truth, metrics, **kw)
    top = max(g for t in truth.values() for g in t.values())
    for u, (slots, items) in lists.items():
        grades = truth[u]
        if not any(g >= 1 for g in grades.values()):
            continue
        for m in metrics:
            name, _, rest = m.partition("@")
            params = dict(p.split("=") for p in rest.partition("[")[2].rstrip("]").split(",") if p)
            if "retrieved" in params.values() or name == "auc":
                # items only: the list without its gaps
                items_at = [i for i in slots[:k] if i < 10_000] if name != "auc" else items
                want = ref_metric(name, None if name == "auc" else k, {}, items_at, grades)
                if name != "auc":
                    hits = sum(1 for i in items_at if grades.get(i, 0) >= 1)
                    want = hits / len(items_at) if items_at and name == "precision" else want
                    if name == "ap":
                        want = ref_metric(name, k, {"denominator": "retrieved"}, slots, grades)
                        want = want * min(k, len(slots)) / len(items_at) if items_at else 0.0
            else:
                want = ref_metric(name, k, params, slots, grades, max_grade=top)
            value = got.loc[u, str(receval.parse_metric(m))]
            assert value == pytest.approx(want, nan_ok=True), (m, u, slots, grades)
    monkeypatch.setattr(numpy_engine, "BLOCK_CELLS", 1)
    tiny = run(recs, truth, metrics, **kw)
    pd.testing.assert_frame_equal(got, tiny, check_exact=True)


def test_evaluate_applies_rank_from_options_and_conventions() -> None:
    """The rank option reaches the engine through EvalOptions (every door)."""
    recs = pd.DataFrame({"user": [1], "item": [10], "rank": [3]})
    for kwargs in ({"rank": "position"}, {"convention": "rectools"}):
        res = receval.evaluate(recs, {1: [10]}, ["precision@1", "rr@1"], **kwargs)
        assert res.summary == {"precision@1": 0.0, "rr@1": 0.0}, kwargs
        assert res.parameters["rank"] == "position"
    res = receval.evaluate(recs, {1: [10]}, ["precision@1", "rr@1"])
    assert res.summary == {"precision@1": 1.0, "rr@1": 1.0}
    assert res.parameters["rank"] == "order"
