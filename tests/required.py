"""Skips that an environment variable turns into failures.

A test that needs something the repository does not hold (a browser, trec_eval's
files beside the repository, the compiled part, a package of the ``test`` extra)
skips where it is missing, unless its variable is ``1``: then it fails, naming
what is missing. ``.ci/run`` sets every variable, so nothing CI provides is ever
skipped there. A skip is never a guard for a feature of receval that is broken:
such a test fails.

========================================  ============================================
variable                                  what it requires
========================================  ============================================
``RECEVAL_REQUIRE_NATIVE``                the compiled join (``receval._native``)
``RECEVAL_REQUIRE_CHROMIUM``              ``/usr/bin/chromium`` (the report's render)
``RECEVAL_REQUIRE_TREC_FILES``            trec_eval's test files (:data:`TREC_FILES`)
``RECEVAL_REQUIRE_EXTRAS``                every package of ``pip install -e ".[test]"``
``RECEVAL_CONFORMANCE_REQUIRED``          the tools' venvs (``tests/conformance``)
========================================  ============================================
"""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

REQUIRE_NATIVE = "RECEVAL_REQUIRE_NATIVE"
REQUIRE_CHROMIUM = "RECEVAL_REQUIRE_CHROMIUM"
REQUIRE_TREC_FILES = "RECEVAL_REQUIRE_TREC_FILES"
REQUIRE_EXTRAS = "RECEVAL_REQUIRE_EXTRAS"

#: trec_eval 10.0's own test files (qrels, runs and the outputs trec_eval printed):
#: the folder ``RECEVAL_TREC_FILES`` names, else ``../shared/conformance/trec_eval``
#: beside the repository (where the project keeps them). They are the ``test/``
#: folder of https://github.com/usnistgov/trec_eval (tag v10.0), not in this
#: repository: the README's test section says how to point the tests at them.
TREC_FILES = Path(
    os.environ.get("RECEVAL_TREC_FILES")
    or Path(__file__).resolve().parents[2] / "shared" / "conformance" / "trec_eval"
)


def need_trec_files() -> None:
    """Go on when trec_eval's test files are there (:data:`TREC_FILES`); else skip, or
    fail under ``RECEVAL_REQUIRE_TREC_FILES=1``. Called by ``tests/conftest.py`` for
    every test marked ``trec_files``, the one way a test skips for them, so that the
    marked tests are the ones the README counts."""
    need("trec_eval's test files", REQUIRE_TREC_FILES, TREC_FILES.is_dir(), f"no {TREC_FILES}")


def required(env: str) -> bool:
    """Whether the environment variable ``env`` requires its thing (it is ``1``)."""
    return os.environ.get(env) == "1"


def need(what: str, env: str, ok: bool, why: str) -> None:
    """Go on when ``ok``; else skip the calling test, or fail it when ``env`` is ``1``.

    ``what`` names the thing needed and ``why`` says what is missing and how to get it.
    """
    if ok:
        return
    if required(env):
        pytest.fail(f"{what}: {why} ({env}=1 requires it)", pytrace=False)
    pytest.skip(f"{what}: {why} (skipped; {env}=1 makes this a failure)")


def imported(module: str, extra: str = "test") -> ModuleType:
    """``pytest.importorskip(module)``, except that it fails when
    ``RECEVAL_REQUIRE_EXTRAS=1``: CI installs the ``test`` extra, so a package of it
    that cannot be imported there is a broken install, not a reason to skip."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        why = f"cannot be imported ({e}): pip install -e '.[{extra}]'"
    need(module, REQUIRE_EXTRAS, False, why)  # skips or fails: outside the except, unchained
    raise AssertionError("unreachable")  # pragma: no cover


#: Debian's chromium, which .ci/run installs (the report's and the docs site's renders)
CHROMIUM = Path("/usr/bin/chromium")


def need_chromium() -> None:
    """Skip without chromium, unless ``RECEVAL_REQUIRE_CHROMIUM=1`` makes it a failure."""
    why = f"{CHROMIUM} is not installed (apt-get install -y chromium)"
    need("chromium", REQUIRE_CHROMIUM, CHROMIUM.exists(), why)


def headless_chromium(*args: str, profile: str) -> subprocess.CompletedProcess[str]:
    """Run headless chromium with ``args`` on a profile folder of its own, quietly
    (no network of its own, no first-run pages, no scrollbars in screenshots)."""
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
