#!/usr/bin/env bash
# Build one virtual environment per tool the conventions are checked against
# (their pins clash: RecTools wants NumPy < 2, RecBole NumPy < 1.24, ...).
#   bash tests/conformance/setup_venvs.sh [DIR]     (default: .conformance)
# Versions are those docs/conventions.md was written against. torch is the CPU
# 2.13.0 wheel, installed first so that no tool pulls a CUDA build.
set -uo pipefail
dir="${1:-.conformance}"
mkdir -p "$dir"

# shellcheck source=../../scripts/venv.sh
. "$(dirname "$0")/../../scripts/venv.sh"  # new_venv

make_venv() {  # name, then pip install argument lists separated by ";"
    local name="$1"; shift
    local venv="$dir/$name" log="$dir/$name.log"
    if [ -x "$venv/bin/python" ] && [ -f "$venv/.ready" ]; then return 0; fi
    rm -rf "$venv"
    {
        new_venv "$venv" &&
        "$venv/bin/pip" install --quiet --upgrade pip &&
        for step in "$@"; do
            # shellcheck disable=SC2086
            "$venv/bin/pip" install --quiet $step || exit 1
        done &&
        touch "$venv/.ready"
    } >"$log" 2>&1 || { echo "conformance venv $name failed, see $log"; tail -n 20 "$log"; return 1; }
}

make_venv core "torch==2.13.0" \
    "numpy pandas pyarrow pytrec-eval-terrier==0.5.11 ranx==0.3.21 torchmetrics==1.9.0 ir-measures==0.4.3" \
    "pyndeval==0.0.8" &
make_venv rectools "rectools==0.19.0 pyarrow<21" &
make_venv replay "replay-rec==0.22.0" &
make_venv spark "pyspark==4.3.0 numpy" &
wait
make_venv recbole "torch==2.13.0" "recbole==1.2.1" "numpy<1.24 pandas<2.1 scipy<1.12" &
make_venv recommenders "recommenders==1.2.1" &
make_venv lenskit "torch==2.13.0" "lenskit==2025.8.1" &
# obp 0.5.7 pins Python < 3.11 and old wheels: its dependencies first, then obp itself without them.
make_venv obp "torch==2.13.0" \
    "numpy scipy pandas scikit-learn matplotlib seaborn tqdm pyyaml" \
    "--no-deps --ignore-requires-python obp==0.5.7 mypy-extensions" &
# Cornac's next-item evaluation (tests/conformance/test_cornac_next.py)
make_venv cornac "cornac==3.0.1 pandas" &
wait
status=0
for name in core rectools replay spark recbole recommenders lenskit obp cornac; do
    [ -f "$dir/$name/.ready" ] || { echo "missing: $name"; status=1; }
done
exit $status
