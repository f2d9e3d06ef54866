"""One metric under every convention: what each tool would report, and why.

``receval explain METRIC --compare`` prints this table.
"""

from __future__ import annotations

import inspect
from typing import Any

import pandas as pd

from receval.errors import MetricError, OptionError
from receval.evaluation import conventions
from receval.evaluation.api import evaluate
from receval.metrics.spec import parse_metric, suggest

__all__ = ["compare_conventions"]


#: what compare_conventions passes on to every evaluate()
_EVALUATE_KEYWORDS = frozenset(
    name
    for name, p in inspect.signature(evaluate).parameters.items()
    if p.kind == p.KEYWORD_ONLY and name not in ("options", "convention")
)


def compare_conventions(
    recommendations: Any,
    truth: Any,
    metric: str,
    names: list[str] | None = None,
    **options: Any,
) -> pd.DataFrame:
    """One metric under every convention, on the same data, with the decisions that differ.

    Returns a DataFrame indexed by convention: ``value`` (the mean), ``metric``
    (the canonical metric computed), ``users`` (users averaged), then one column
    per decision whose setting differs between the conventions compared
    (see :func:`decisions`). Conventions whose tool lacks the metric are left
    out. ``options`` go to every :func:`receval.evaluate` call (column names,
    ``duplicates``, ...); policies given here override every convention's.

    Example:
        >>> recs = {"u1": ["a", "b", "c"], "u2": ["d"]}
        >>> truth = {"u1": {"b": 1, "x": 1, "y": 1}, "u3": {"a": 1}}
        >>> table = compare_conventions(recs, truth, "map@2", names=["receval", "trec_eval"])
        >>> table["value"].round(4).to_dict()  # receval: u3 has no list, scores 0
        {'receval': 0.125, 'trec_eval': 0.1667}
        >>> table["users"].to_dict()
        {'receval': 2, 'trec_eval': 1}
        >>> list(table.columns[3:])  # doctest: +NORMALIZE_WHITESPACE
        ['equal scores ordered by', 'user in the truth without relevant items',
         'user with relevant items but no list', 'AP@k divides by']
    """
    if not isinstance(metric, str):
        raise MetricError(
            f"compare_conventions compares one metric (a string like 'map@10'); got {metric!r}"
        )
    if "convention" in options:
        raise OptionError(
            "convention",
            options["convention"],
            reason="compare_conventions evaluates under every convention; choose them with names=",
        )
    unknown = sorted(set(options) - set(_EVALUATE_KEYWORDS))
    if unknown:
        raise OptionError(
            unknown[0],
            options[unknown[0]],
            expected="a keyword of receval.evaluate()" + suggest(unknown[0], _EVALUATE_KEYWORDS),
        )
    parse_metric(metric)  # a bad name fails before any work
    chosen = [conventions.get(n) for n in (names or list(conventions.CONVENTIONS))]
    rows = {}
    texts = {}
    for c in chosen:
        spec = parse_metric(metric, c.params)
        if spec.name not in c.metrics:
            continue
        res = evaluate(recommendations, truth, metric, convention=c.name, **options)
        key = str(spec)
        rows[c.name] = {
            "value": res.summary[key],
            "metric": key,
            "users": res.counts["users_evaluated"],
        }
        texts[c.name] = conventions.decisions(c)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    if texts:
        name = parse_metric(metric).name
        keys = [k for k in next(iter(texts.values())) if conventions.ABOUT.get(k, name) == name]
        differ = [k for k in keys if len({t[k] for t in texts.values()}) > 1]
        for k in differ:
            frame[k] = [texts[n][k] for n in frame.index]
    frame.index.name = "convention"
    return frame
