"""Hooks of the whole suite."""

from __future__ import annotations

import pytest

from tests.required import need_trec_files


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``trec_files`` skips (or fails, when required) without trec_eval's
    own test files; the README says how many such tests there are
    (``tests/test_docs_examples.py`` counts them)."""
    if item.get_closest_marker("trec_files") is not None:
        need_trec_files()
