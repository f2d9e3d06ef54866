"""Hooks of the whole suite."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.required import need_trec_files


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``trec_files`` skips (or fails, when required) without trec_eval's
    own test files; the README says how many such tests there are
    (``tests/test_docs_examples.py`` counts them)."""
    if item.get_closest_marker("trec_files") is not None:
        need_trec_files()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local Spark session for a module's ``-m spark`` tests (set up as
    tests/test_spark.py's, which keeps its own); modules that define their own
    ``spark`` fixture use theirs."""
    pytest.importorskip("pyspark")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    src = str(Path(__file__).resolve().parent.parent / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("receval-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
