"""Metric names: canonical strings, aliases, expansion, and errors with suggestions."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import receval
from receval import MetricError, MetricSpec, parse_metric, parse_metrics

CANONICAL = [
    ("MAP@10", "ap@10"),
    ("map@10[denominator=min_k_relevant]", "ap@10"),
    ("ap@10[denominator=relevant]", "ap@10[denominator=relevant]"),
    ("MRR", "rr"),
    ("mrr@5", "rr@5"),
    ("HR@10", "hit_rate@10"),
    ("success@1", "hit_rate@1"),
    ("P@5", "precision@5"),
    ("r@5", "recall@5"),
    ("NDCG@10[ideal=relevant, gain=linear]", "ndcg@10"),
    ("ndcg@10[ideal=retrieved,gain=exp]", "ndcg@10[gain=exp,ideal=retrieved]"),
    ("ndcg@10[gain=EXP]", "ndcg@10[gain=exp]"),
    ("rbp[p=0.8]", "rbp"),
    ("rbp[p=.9]", "rbp[p=0.9]"),
    ("f1@3[beta=2]", "f1@3[beta=2.0]"),
    ("dcg@3[base=10]", "dcg@3[base=10.0]"),
    ("err@5[max_grade=4]", "err@5[max_grade=4.0]"),
    (" auc ", "auc"),
    ("Rprec", "r_precision"),
    # trec_eval's measure names
    ("P_5", "precision@5"),
    ("map_cut_10", "ap@10[denominator=relevant]"),
    ("ndcg_cut.10", "ndcg@10"),
    ("success_1", "hit_rate@1"),
    ("recall_100", "recall@100"),
    ("recip_rank", "rr"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_string(text: str, canonical: str) -> None:
    spec = parse_metric(text)
    assert str(spec) == canonical
    assert parse_metric(str(spec)) == spec


def test_cutoff_lists_and_ranges_expand() -> None:
    assert [str(s) for s in parse_metrics("ndcg@1,5,10")] == ["ndcg@1", "ndcg@5", "ndcg@10"]
    assert [str(s) for s in parse_metrics("p@1-3")] == ["precision@1", "precision@2", "precision@3"]
    assert len(parse_metrics("ndcg@1-10000")) == 10_000  # the most one metric may ask for
    assert [str(s) for s in parse_metrics("ap@1,3-4[denominator=hits]")] == [
        "ap@1[denominator=hits]",
        "ap@3[denominator=hits]",
        "ap@4[denominator=hits]",
    ]
    # duplicates collapse, first occurrence kept
    assert [str(s) for s in parse_metrics(["map@5", "ap@5", "mrr"])] == ["ap@5", "rr"]


def test_trec_cutoff_lists_expand() -> None:
    assert [str(s) for s in parse_metrics("P.5,10")] == ["precision@5", "precision@10"]


def test_parse_metric_rejects_several() -> None:
    with pytest.raises(MetricError, match="parse_metrics"):
        parse_metric("ndcg@5,10")


def test_spec_objects_pass_through() -> None:
    spec = MetricSpec("ndcg", 10)
    assert parse_metrics([spec, "ndcg@10"]) == [spec]


BAD = [
    ("ndgc@10", "did you mean 'ndcg'"),
    ("precison", "did you mean 'precision'"),
    ("foo", "unknown metric 'foo'"),
    ("ndcg@0", "positive integer"),
    ("ndcg@-1", "positive integer"),
    ("ndcg@x", "positive integer"),
    ("ndcg@1.5", "positive integer"),
    ("ndcg@", "positive integer"),
    ("ndcg@10@20", "cannot read metric"),
    ("ndcg@5-1", "positive integer"),
    ("ndcg@1-10001", "at most 10,000 cut-offs in one metric; '1-10001' makes 10,001"),
    ("ndcg@1-5000,5001-10001", "at most 10,000 cut-offs in one metric; '5001-10001' makes 10,001"),
    ("ap@10[denom=hits]", "did you mean 'denominator'"),
    ("ap@10[denominator=hit]", "did you mean 'hits'"),
    ("ap@10[denominator]", "name=value"),
    ("rbp[p=1.5]", "in (0, 1)"),
    ("rbp[p=abc]", "expected a number"),
    ("rbp[p=nan]", "finite"),
    ("f1[beta=0]", "> 0"),
    ("dcg[base=1]", "> 1"),
    ("ndcg[gain=exp,gain=linear]", "given twice"),
    ("hits[p=0.5]", "valid: none"),
    ("ndcg[gain=exp", "cannot read metric"),
    ("", "cannot read metric"),
]


@pytest.mark.parametrize(("text", "words"), BAD)
def test_bad_names_fail_with_a_useful_message(text: str, words: str) -> None:
    with pytest.raises(MetricError) as info:
        parse_metrics(text)
    assert words in str(info.value)
    assert isinstance(info.value, ValueError)


def test_empty_metric_list_fails() -> None:
    with pytest.raises(MetricError, match="no metric"):
        parse_metrics([])


def test_non_string_metric_fails() -> None:
    with pytest.raises(MetricError, match="must be a string"):
        parse_metrics([10])  # type: ignore[list-item]


CANDIDATES = ["0.05", "0.5", "0.8", "0.95", "1", "1.5", "2", "3.0", "10", "true", "false"]


def _valid(p: receval.ParamDef, value: str) -> bool:
    try:
        p.convert(value)
    except ValueError:
        return False
    return True


def _spec_strategy() -> st.SearchStrategy[str]:
    defs = list(receval.metrics().values())

    @st.composite
    def build(draw: st.DrawFn) -> str:
        d = draw(st.sampled_from(defs))
        name = draw(st.sampled_from((d.name, *d.aliases)))
        name = draw(st.sampled_from([name, name.upper(), name.title()]))
        k = None if d.kind == "rating" else draw(st.one_of(st.none(), st.integers(1, 1000)))
        k = k if d.takes_cutoff else None
        params = []
        for p in d.params:
            if draw(st.booleans()):
                if p.choices:
                    value = draw(st.sampled_from(p.choices))
                else:
                    value = draw(st.sampled_from([v for v in CANDIDATES if _valid(p, v)]))
                params.append(f"{p.name}={value}")
        # parameters that go together only (gamma with correction=bv; a correction
        # with its metric's neutral parameters): drawn apart, tested elsewhere
        values = {n: d.param_map[n].convert(v) for n, _, v in (x.partition("=") for x in params)}
        given = {n: v for n, v in values.items() if v != d.param_map[n].default}
        assume(d.check_params(given) is None)
        text = name + ("" if k is None else f"@{k}")
        if params:
            params = draw(st.permutations(params))
            text += "[" + ", ".join(params) + "]"
        return text

    return build()


@settings(max_examples=300, deadline=None)
@given(_spec_strategy())
def test_canonical_strings_round_trip(text: str) -> None:
    spec = parse_metric(text)
    canonical = str(spec)
    assert canonical == canonical.lower()
    again = parse_metric(canonical)
    assert again == spec
    assert str(again) == canonical
    # defaults are dropped, parameters sorted
    names = [n for n, _ in spec.params]
    assert names == sorted(names)
    for n, v in spec.params:
        assert v != spec.definition.param_map[n].default
