#!/usr/bin/env bash
# Build the benchmark peers' virtual environments (see requirements-bench.txt).
#   bash benchmarks/setup_venvs.sh [PREFIX]      (default PREFIX: /tmp/bench-venv)
# creates PREFIX (pytrec_eval, ranx, torchmetrics), PREFIX-rectools and
# PREFIX-replay, then prints the benchmarks/run.py command that uses them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prefix="${1:-/tmp/bench-venv}"

python3 -m venv "$prefix"
"$prefix/bin/pip" install --quiet --upgrade pip
"$prefix/bin/pip" install --quiet numpy pandas "pyarrow>=14"
"$prefix/bin/pip" install --quiet torch==2.13.0          # CPU build first: no CUDA download
"$prefix/bin/pip" install --quiet -r "$here/requirements-bench.txt"

python3 -m venv "$prefix-rectools"
"$prefix-rectools/bin/pip" install --quiet --upgrade pip
"$prefix-rectools/bin/pip" install --quiet rectools==0.19.0 "pyarrow<21"

python3 -m venv "$prefix-replay"
"$prefix-replay/bin/pip" install --quiet --upgrade pip
"$prefix-replay/bin/pip" install --quiet replay-rec==0.22.0

cat <<MSG
python benchmarks/run.py --users 100000 --peer-python $prefix/bin/python \\
    --python-for rectools=$prefix-rectools/bin/python \\
    --python-for replay=$prefix-replay/bin/python
MSG
