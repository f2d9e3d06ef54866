"""The report evaluates each run once (issue #33 point 4): the curves' metrics ride in
the comparison's own pass, and the comparison is the one those metrics alone give.

Two checks that do not trust the shortcut: ``restricted`` of an evaluation of more
metrics equals the evaluation of the comparison's metrics alone, field by field, on
random data under many options; and the page of one pass equals, byte for byte, the
page drawn from a comparison computed apart (then the curves are a second
evaluation), including where the shortcut is refused.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.compare import restricted
from receval.analysis.report import html as report_html
from receval.analysis.report.data import curve_specs
from receval.evaluation.options import split_kwargs
from receval.evaluation.result import Result
from receval.metrics.spec import parse_metrics

ITEMS = 40


def _data(seed: int, ids: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Scored lists with ties, graded truth, a train; users without lists and
    users without truth; ids as integers, digit strings or text."""
    rng = np.random.default_rng(seed)
    rows, truth, train = [], [], []
    for u in range(60):
        n = int(rng.integers(0, 14))  # empty lists and lists shorter than the cut-offs
        for item in rng.choice(ITEMS, n, replace=False):
            rows.append((u, int(item), float(rng.integers(0, 4))))  # tied scores
        if u % 11 != 3:  # some users have no truth
            for item in rng.choice(ITEMS, int(rng.integers(1, 5)), replace=False):
                truth.append((u, int(item), int(rng.integers(0, 4))))  # grades, 0 too
        for item in rng.choice(ITEMS, 5, replace=False):
            train.append((u, int(item)))
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    gold = pd.DataFrame(truth, columns=["user", "item", "relevance"])
    seen = pd.DataFrame(train, columns=["user", "item"])
    convert = {
        "int": lambda s: s,
        "digits": lambda s: s.map(lambda v: f"{v:03d}"),
        "text": lambda s: s.map(lambda v: f"id-{v}"),
    }[ids]
    for frame in (recs, gold, seen):
        frame["user"] = convert(frame["user"])
        frame["item"] = convert(frame["item"])
    return recs, gold, seen


def _same(a: Result, b: Result, where: str = "") -> None:
    """Every field of two Results, bit for bit (NaN equal to NaN)."""
    assert list(a.summary) == list(b.summary), where
    for name in a.summary:
        x, y = a.summary[name], b.summary[name]
        assert (math.isnan(x) and math.isnan(y)) or x == y, (where, name, x, y)
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True, obj=where)
    assert a.counts == b.counts, where
    assert a.parameters == b.parameters, where
    assert a.notes == b.notes, where
    assert [str(s) for s in a.metrics] == [str(s) for s in b.metrics], where
    for field in ("groups", "item_groups"):
        fa, fb = getattr(a, field), getattr(b, field)
        assert (fa is None) == (fb is None), (where, field)
        if fa is not None:
            pd.testing.assert_frame_equal(fa, fb, check_exact=True, obj=f"{where} {field}")
    assert (a.group_results is None) == (b.group_results is None), where
    if a.group_results is not None and b.group_results is not None:
        assert list(a.group_results) == list(b.group_results), where
        for key, r in a.group_results.items():
            _same(r, b.group_results[key], f"{where} group {key}")


CASES: list[tuple[list[str], dict[str, Any], bool]] = [
    # (compared metrics, evaluate keywords, with train=)
    (["ndcg@10", "recall@5"], {}, False),
    (["ndcg@10", "ap@10", "mrr@10"], {"threshold": 2}, False),
    (["ndcg@10", "precision@10"], {"empty_truth": "zero", "ties": "item_desc"}, False),
    (["ndcg@8", "hit_rate@3"], {"convention": "trec_eval"}, False),
    (["ndcg@10"], {"missing_recs": "skip", "graded": False}, False),
    (["ndcg@10", "coverage@10", "novelty@10"], {}, True),  # item context both ways
    (["ndcg@10", "recall@10", "coverage@10"], {"user_groups": "activity"}, True),
]


@pytest.mark.parametrize("ids", ["int", "digits", "text"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_restricted_is_the_evaluation_alone(case: int, ids: str) -> None:
    metrics, kwargs, with_train = CASES[case]
    recs, truth, train = _data(case, ids)
    side = {"train": train} if with_train else {}
    plain = {k: v for k, v in kwargs.items() if k != "user_groups"}  # report pops it
    opts, inputs = split_kwargs(None, {**plain, **side}, caller="report")
    also = report_html._one_pass({"a": recs}, metrics, None, None, with_train, opts, inputs)
    assert also is not None, "the report takes one pass here"
    specs = parse_metrics(metrics, opts.metric_defaults)
    _, cspecs = curve_specs(specs, max(s.k for s in specs if s.k), with_train)
    names = {str(s) for s in specs}
    extra = [s for s in cspecs if str(s) not in names]
    assert extra, "the curves add metrics"
    both = receval.evaluate(recs, truth, [*specs, *extra], **kwargs, **side)
    alone = receval.evaluate(recs, truth, specs, **kwargs, **side)
    _same(restricted(both, specs), alone, f"case {case}, {ids}")


def _world() -> tuple[dict[str, pd.DataFrame], pd.DataFrame, pd.DataFrame]:
    recs, truth, train = _data(7, "int")
    rng = np.random.default_rng(1)
    other = recs.assign(score=recs["score"] + rng.normal(0, 1.0, len(recs)))
    return {"a": recs, "b": other}, truth, train


@pytest.mark.parametrize(
    "metrics, kwargs, one_pass",
    [
        (["ndcg@10", "recall@5"], {}, True),
        (["ndcg@10", "coverage@10"], {"train": True}, True),
        (["ndcg@10"], {"train": True}, False),  # coverage@k: an item context ndcg lacks
        (["ndcg@5"], {"max_k": 8}, False),  # curves beyond the largest cut-off
        (["ndcg@10", "coverage@10"], {"user_groups": "activity", "train": True}, True),
    ],
)
def test_one_pass_page_is_the_two_pass_page(
    metrics: list[str], kwargs: dict[str, Any], one_pass: bool, capsys: pytest.CaptureFixture
) -> None:
    """The page of one pass equals the page drawn from a comparison computed apart;
    ``progress=True`` shows whether the curves were a second evaluation."""
    runs, truth, train = _world()
    kwargs = dict(kwargs)
    if kwargs.pop("train", False):
        kwargs["train"] = train
    max_k = kwargs.pop("max_k", None)
    settings = {"n_resamples": 300, "seed": 3}
    capsys.readouterr()
    page = receval.report(runs, truth, metrics, max_k=max_k, progress=True, **settings, **kwargs)
    said = capsys.readouterr().err
    assert ("curves: every system" in said) is not one_pass, said
    assert said.count("evaluating a ...") == 1
    groups = kwargs.pop("user_groups", None)
    extra = {} if groups is None else {"user_groups": groups}
    cmp = receval.compare(runs, truth, metrics, **settings, **kwargs, **extra)
    apart = receval.report(runs, truth, comparison=cmp, max_k=max_k, **kwargs)
    assert page.html == apart.html
    pd.testing.assert_frame_equal(page.curves, apart.curves, check_exact=True)


def test_restricted_keeps_no_other_metric_alive() -> None:
    """The comparison's Result holds its own values, not a view of the block of every
    metric evaluated in the pass (pandas' copy on write shares it on a selection of
    columns): the curves' values are freed once their summaries are taken."""
    recs, truth, _ = _data(0, "int")
    specs = parse_metrics(["ndcg@10", "recall@5"])
    _, cspecs = curve_specs(specs, 10, False)
    both = receval.evaluate(recs, truth, [*specs, *[s for s in cspecs if s not in specs]])
    mine = restricted(both, specs)
    for column in mine.per_user.columns:
        assert not np.shares_memory(mine.per_user[column].to_numpy(), both.per_user.to_numpy())
