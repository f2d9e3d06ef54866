"""The version has one source, and what cites it agrees (issue #32 point 2, in part)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import receval
from tests.required import imported

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_has_one_source() -> None:
    """src/receval/_version.py; pyproject reads it (dynamic), the installed
    metadata and ``receval.__version__`` agree, and it is semantic (X.Y.Z)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"] and "version" not in pyproject["project"]
    dynamic = pyproject["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "receval._version.__version__"}
    assert importlib.metadata.version("receval") == receval.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", receval.__version__)


def test_the_citation_file_names_the_version() -> None:
    yaml = imported("yaml")  # PyYAML comes with the test extra (mlflow-skinny needs it)
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == receval.__version__
    assert cff["title"].startswith("receval") and cff["authors"] and cff["license"] == "MIT"
