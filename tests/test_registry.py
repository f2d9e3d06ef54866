"""Registry meta-tests: every metric is declared completely, documented and tested.

A metric added to the registry without known values, reference coverage,
documentation or a README row fails here.
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


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_every_metric_has_known_values(d: receval.MetricDef) -> None:
    names = set()
    for path in sorted((ROOT / "tests" / "data").glob("known_values*.csv")):
        with path.open() as f:
            names |= {receval.parse_metric(r["metric"]).name for r in csv.DictReader(f)}
    assert d.name in names, f"no known value for {d.name} in tests/data/known_values*.csv"


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_every_metric_has_a_reference(d: receval.MetricDef) -> None:
    from tests.test_beyond import REFERENCE_NAMES

    if d.name in REFERENCE_NAMES:
        return  # checked against the slow reference of tests/test_beyond.py
    if d.kind == "rating":
        from tests.test_ratings import ref

        value = ref(d.name, [3.5, 4, 2, 5, 3], [3, 4.5, 1.5, 4.5, 2.5])
        assert d.bounds[0] <= value <= d.bounds[1]
        return
    from tests.reference import ref_metric

    value = ref_metric(d.name, 3, {}, [1, 2, 3], {2: 1.0, 4: 1.0}, scores=[3.0, 2.0, 1.0])
    assert isinstance(value, float)
    assert math.isnan(value) or d.bounds[0] <= value <= d.bounds[1]


@pytest.mark.parametrize("d", DEFS, ids=[d.name for d in DEFS])
def test_every_metric_is_in_the_readme(d: receval.MetricDef) -> None:
    readme = (ROOT / "README.md").read_text()
    assert f"| `{d.name}` |" in readme
    for alias in d.aliases:
        assert f"`{alias}`" in readme


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
    from receval.evaluation.conventions import markdown_table

    page = (Path(__file__).resolve().parent.parent / "docs" / "conventions.md").read_text()
    assert markdown_table() in page
