"""Registry meta-tests: every metric is declared completely, documented and tested.

A metric added to the registry without known values, reference coverage,
documentation or a row of docs/metrics.md fails here.
"""

from __future__ import annotations

import csv
import doctest
import importlib
import math
import pkgutil
from pathlib import Path

import pytest

import receval
from tests.reference import by_evaluate

ROOT = Path(__file__).resolve().parent.parent
DEFS = list(receval.metrics().values())


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_declaration_is_complete(d: receval.MetricDef) -> None:
    assert d.name == d.name.lower()
    assert d.description and d.formula
    assert d.kernel.__doc__ and len(d.kernel.__doc__.strip()) > 20, "kernel needs its formula"
    lo, hi = d.bounds
    assert lo <= hi
    for p in d.params:
        assert p.description
        if p.choices:
            assert p.default in p.choices
        elif p.default is not None:
            assert p.convert(p.default) == p.default


def _known_value_rows() -> list[dict[str, str]]:
    rows = []
    for path in sorted((ROOT / "tests" / "data").glob("known_values*.csv")):
        with path.open() as f:
            rows += list(csv.DictReader(f))
    return rows


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_every_metric_has_known_values(d: receval.MetricDef) -> None:
    """A metric of the registry needs known values in tests/data/known_values*.csv,
    each saying where it comes from (a source, or the hand computation)."""
    rows = [r for r in _known_value_rows() if receval.parse_metric(r["metric"]).name == d.name]
    assert rows, f"no known value for {d.name} in tests/data/known_values*.csv"
    for r in rows:
        assert r["why"].strip(), f"known value of {r['metric']} ({r['case']}) names no source"
        float(r["expected"])  # a number (or nan)


def _beyond_reference_names() -> set[str]:
    from tests.test_beyond import REFERENCE_NAMES

    return set(REFERENCE_NAMES)


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_every_metric_has_a_slow_reference(d: receval.MetricDef) -> None:
    """Each metric of the registry is checked against a slow, independent reference:
    tests/reference.py for ranking metrics of lists and truth, the reference of
    tests/test_beyond.py for metrics needing item inputs and aggregates, and
    tests/test_ratings.py's for rating metrics. A metric added without one fails."""
    if d.kind == "rating":
        from tests.test_ratings import ref

        value = ref(d.name, [3.5, 4, 2, 5, 3], [3, 4.5, 1.5, 4.5, 2.5])
        assert d.bounds[0] <= value <= d.bounds[1]
        return
    if not by_evaluate(d):  # through its door: tests/test_door_only_metrics.py
        from tests.test_door_only_metrics import door_reference

        value = door_reference(d.name)
        assert d.bounds[0] <= value <= d.bounds[1]
        return
    if d.needs or d.kind == "aggregate":
        assert d.name in _beyond_reference_names(), f"{d.name}: no reference in test_beyond"
        return
    from tests.reference import METRIC_PARAMS, ref_metric

    assert d.name in METRIC_PARAMS  # drawn by the random agreement and property tests
    value = ref_metric(d.name, 3, {}, [1, 2, 3], {2: 1.0, 4: 1.0}, scores=[3.0, 2.0, 1.0])
    assert isinstance(value, float)
    assert math.isnan(value) or d.bounds[0] <= value <= d.bounds[1]


def test_reference_names_are_metrics_of_the_registry() -> None:
    assert _beyond_reference_names() <= set(receval.metrics())


def test_list_only_metrics_agree_with_the_reference() -> None:
    """The registry's needs_truth and the reference's independent list agree."""
    from tests.reference import LIST_ONLY, METRIC_PARAMS

    declared = {n for n in METRIC_PARAMS if not receval.metrics()[n].needs_truth}
    assert declared == LIST_ONLY


def test_list_only_metrics_are_those_that_read_no_truth() -> None:
    """needs_truth=False exactly for metrics whose values do not change with the truth."""
    recs = {1: [1, 2, 3], 2: [2, 4]}
    train = {1: [1, 2], 2: [2], 3: [4]}
    feats = {1: [1.0, 0.0], 2: [0.0, 1.0], 3: [1.0, 1.0], 4: [0.5, 0.2]}
    groups = {1: "a", 2: ["a", "b"], 3: "b", 5: "b"}
    kw = {"train": train, "item_features": feats, "catalog": range(1, 6), "item_groups": groups}
    names = [
        f"{d.name}{'@3' if d.takes_cutoff else ''}"
        + ("[group=b]" if "group" in d.param_map else "")
        for d in DEFS
        if d.kind != "rating" and by_evaluate(d)  # the others run through their door
    ]
    a = receval.evaluate(recs, {1: [1], 2: [4]}, names, empty_truth="zero", **kw)
    # item 2 judged non-relevant for user 1 (in the list: judged_nonrelevant sees it)
    b = receval.evaluate(
        recs, {1: {3: 1, 5: 1, 2: 0}, 2: {1: 1, 4: 0}}, names, empty_truth="zero", **kw
    )
    for name in names:
        d = receval.parse_metric(name).definition
        same = a.summary[name] == b.summary[name]
        assert same == (not d.needs_truth), name


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_every_metric_is_on_the_metrics_page(d: receval.MetricDef) -> None:
    page = (ROOT / "docs" / "metrics.md").read_text()
    assert f"| `{d.name}` |" in page
    for alias in d.aliases:
        assert f"`{alias}`" in page


def test_aliases_are_unique() -> None:
    seen: dict[str, str] = {}
    for d in DEFS:
        for name in (d.name, *d.aliases):
            assert name not in seen, f"{name} declared by {seen.get(name)} and {d.name}"
            seen[name] = d.name


def _modules() -> list[str]:
    modules = pkgutil.walk_packages(receval.__path__, "receval.")
    return [m.name for m in modules if m.name != "receval.__main__"]  # that one runs the CLI


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_conventions_page_holds_the_generated_table() -> None:
    """docs/conventions.md shows exactly what receval.evaluation.conventions implements."""
    from receval.evaluation.conventions import markdown_sections, markdown_table

    page = (Path(__file__).resolve().parent.parent / "docs" / "conventions.md").read_text()
    assert markdown_table() in page
    assert page.endswith(markdown_sections())  # each tool's notes and sources
