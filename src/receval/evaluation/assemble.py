"""The :class:`~receval.evaluation.result.Result` of an engine's outcome:
means from exact sums, the reconciled counts, notes and parameters. One place
for every engine (in-process, Spark), so they report alike."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from receval._version import __version__
from receval.engines import driver
from receval.engines.numpy_engine import TIES
from receval.evaluation.groups import item_group_notes
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import PerUserValues, Result
from receval.metrics.context import ItemContext
from receval.metrics.kernels.corrected import range_notes, undefined_notes
from receval.metrics.spec import MetricSpec

__all__ = ["result_of", "with_columns"]


def result_of(
    out: driver.Outcome,
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    items: ItemContext | None,
    order: str | None = None,
) -> Result:
    """The :class:`Result` of the driver's outcome: means, counts, parameters."""
    values, counts = out.values, out.counts

    names = [str(s) for s in specs if s.definition.kind != "aggregate"]
    means: dict[str, float] = {}
    undefined: dict[str, int] = {}
    per_user_specs = [s for s in specs if s.definition.kind != "aggregate"]
    for spec, name, total in zip(per_user_specs, names, out.sums, strict=True):
        # exact sums, rounded once: no mean depends on chunks, threads or engine
        means[name] = spec.definition.summarise(total.mean())
        if total.nan:
            undefined[name] = total.nan
    counts["undefined"] = undefined
    # rows read = rows used + rows rejected (with the reason in the key)
    counts["recommendation_rows_used"] = counts.get("recommendation_rows", 0) - sum(
        counts.get("recommendation_rows_" + why, 0) for why in _DROPPED
    )
    counts["truth_rows_used"] = counts.get("truth_rows", 0) - counts.get(
        "truth_rows_duplicate_dropped", 0
    )
    summary = {str(s): out.aggregates.get(str(s), means.get(str(s), math.nan)) for s in specs}
    notes = list(out.notes) + _warnings(counts, opts.ties) + range_notes(summary, specs)
    notes += _feature_notes(specs, counts) + undefined_notes(counts, specs)

    per_user = PerUserValues(out.user_ids, values, names)  # a frame on first read
    parameters: dict[str, Any] = {
        **opts.to_dict(),
        "order": order or "score descending, then " + TIES[opts.ties],
        "engine": "numpy",
    }
    if items is not None:
        parameters["catalog"] = items.catalog_source or None
        parameters["catalog_items"] = int(items.in_catalog.sum())
        parameters["training_users"] = items.n_train_users
    res = Result(
        summary=summary,
        per_user=per_user,  # type: ignore[arg-type]
        counts=counts,
        parameters=parameters,
        metrics=list(specs),
        notes=notes,
        version=__version__,
        item_groups=out.item_groups,
    )
    res.notes += item_group_notes(res)  # NaN values of item groups sharing no item
    return res


def _feature_notes(specs: Sequence[MetricSpec], counts: Mapping[str, Any]) -> list[str]:
    """What to say of a metric of item features (``ild``) undefined for users
    evaluated: their lists hold fewer than 2 items with features (items that
    ``item_features=`` does not list, or gives an all-zero vector or an empty
    category set, have none), which no count of rows shows."""
    out = []
    evaluated = int(counts.get("users_evaluated", 0))
    for spec in specs:
        if "item_features" not in spec.definition.needs:
            continue
        nan = int(counts.get("undefined", {}).get(str(spec), 0))
        if not nan or not evaluated:
            continue
        top = f"top-{spec.k}" if spec.k is not None else "list"
        said = (
            f"{spec} is NaN: no evaluated user's {top} holds 2 items with features"
            if nan == evaluated
            else f"{spec} is undefined (NaN, left out of the mean) for {nan} of {evaluated} "
            f"users evaluated: their {top} holds fewer than 2 items with features"
        )
        out.append(
            said + "; items that item_features does not list, or gives an all-zero vector or "
            "an empty category set, have none"
        )
    return out


#: why recommendation rows are not used (``recommendation_rows_<why>``)
_DROPPED = ("duplicate_dropped", "beyond_depth", "unjudged_dropped")


def with_columns(
    res: Result,
    recs_columns: Mapping[str, str],
    truth_columns: Mapping[str, str],
    max_grade: float,
    opts: EvalOptions,
) -> Result:
    """Record which input column was read for each role, and say so when the
    grades come from a rating-like column under a threshold nobody chose."""
    res.parameters["columns"] = {
        "recommendations": dict(recs_columns),
        "truth": dict(truth_columns),
    }
    column = truth_columns.get("relevance")
    found = []
    if column and opts.graded and max_grade > 1 and "threshold" not in opts.given:
        found.append(
            f"relevance is the truth column {column!r} (grades up to {max_grade:g}): every "
            f"grade >= {opts.threshold:g} counts as relevant; to count only high grades, "
            "give a threshold (Python: threshold=4, command line: --threshold 4)"
        )
    found += _nobody_relevant(res, truth_columns, opts)
    res.notes += [n for n in found if n not in res.notes]  # said once, however often called
    return res


def _nobody_relevant(res: Result, truth_columns: Mapping[str, str], opts: EvalOptions) -> list[str]:
    """What to say when a threshold given explicitly leaves no user a relevant
    item (the values are NaN, every user skipped or scored 0): why, often that no
    grade column was read, so every truth row was graded 1."""
    counts = res.counts
    users = int(counts.get("users_in_truth", 0))
    relevant = users - int(counts.get("users_skipped", {}).get("no_relevant_items", 0))
    relevant -= int(counts.get("users_scored_zero", {}).get("no_relevant_items", 0))
    if "threshold" not in opts.given or not users or relevant > 0:
        return []
    given = f"{opts.threshold:g}"
    column = truth_columns.get("relevance")
    if column or not truth_columns:
        where = f" of column {column!r}" if column else ""
        return [
            f"no truth grade{where} reaches the threshold given ({given}): no user has a "
            "relevant item"
        ]
    return [
        f"the threshold given ({given}) reads no grade: no grade column of the truth was read "
        f"(read: {', '.join(truth_columns.values())}), so every truth row is graded 1 and no "
        "user has a relevant item; name the grades (Python: relevance_col=, command line: "
        "--relevance-col)"
    ]


def _warnings(counts: Mapping[str, Any], ties: str = "item") -> list[str]:
    """One line per thing worth a look that changed no number (SPEC §2.5)."""
    out = []
    tied = counts.get("recommendation_rows_tied")
    if tied:
        rows = "1 recommendation row ties" if tied == 1 else f"{tied} recommendation rows tie"
        above = "it" if tied == 1 else "them"
        out.append(f"{rows} in score with the row above {above}: ties were broken by {TIES[ties]}")
    short = counts.get("lists_shorter_than_largest_k")
    if short:
        lists = "1 list is" if short == 1 else f"{short} lists are"
        out.append(f"{lists} shorter than the largest cut-off asked")
    seen = counts.get("recommendations_seen_in_train")
    if seen:
        items = "1 recommended item is" if seen == 1 else f"{seen} recommended items are"
        out.append(
            f"{items} already in the user's training data (leakage? see receval check / "
            "checks.remove_seen)"
        )
    return out
