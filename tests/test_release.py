"""The version has one source, and what cites and records it agrees (issue #32 point 2)."""

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


def test_the_changelog_dates_the_version() -> None:
    """The version has its dated section in CHANGELOG.md (``## X.Y.Z (YYYY-MM-DD)``,
    what the release workflow checks on a tag); changes since sit above it, under
    ``## Unreleased`` only."""
    text = (ROOT / "CHANGELOG.md").read_text()
    heads = re.findall(r"^## (.+)$", text, re.M)
    dated = [h for h in heads if re.fullmatch(r"\d+\.\d+\.\d+ \(\d{4}-\d{2}-\d{2}\)", h)]
    assert any(h.startswith(receval.__version__ + " (") for h in dated), heads[:3]
    assert set(heads) - set(dated) <= {"Unreleased"}
    assert heads[0] in ("Unreleased", dated[0])


def test_the_package_under_test_is_the_one_asked_for() -> None:
    """``scripts/release_check.sh`` runs the suite against the installed wheel
    (``RECEVAL_EXPECT_INSTALLED=1``): receval then comes from site-packages, with
    its compiled part, and every module of the source tree is in the wheel."""
    import os

    if os.environ.get("RECEVAL_EXPECT_INSTALLED") != "1":
        assert Path(receval.__file__).resolve().is_relative_to(ROOT / "src")  # editable
        return
    here = Path(receval.__file__).resolve().parent
    assert "site-packages" in here.parts, here
    source = {
        p.relative_to(ROOT / "src" / "receval") for p in (ROOT / "src" / "receval").rglob("*.py")
    }
    installed = {p.relative_to(here) for p in here.rglob("*.py")}
    assert source <= installed, sorted(source - installed)
    assert any(
        p.name.startswith("_native.") and p.suffix in (".so", ".pyd") for p in here.iterdir()
    )


def test_the_release_workflow_builds_every_platform_and_publishes_by_trust() -> None:
    """.github/workflows/release.yml cannot run here: its shape is checked, and the
    local mirror of its steps (scripts/release_check.sh) is what .ci/run runs."""
    yaml = imported("yaml")
    flow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    assert flow[True]["push"]["tags"] == ["v*.*.*"]  # YAML reads the key `on` as True
    jobs = flow["jobs"]
    assert set(jobs["wheels"]["strategy"]["matrix"]["os"]) >= {"ubuntu-latest", "windows-latest"}
    assert any("pypa/cibuildwheel@" in step.get("uses", "") for step in jobs["wheels"]["steps"])
    assert jobs["publish"]["permissions"] == {"id-token": "write"}
    assert set(jobs["publish"]["needs"]) == {"wheels", "sdist", "check"}
    assert "token" not in str(jobs["publish"]["steps"]).replace("id-token", "")
    cibw = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]
    assert cibw["build"] == "cp311-*"  # abi3: one wheel per platform
    assert "bash scripts/release_check.sh" in (ROOT / ".ci/run").read_text()
