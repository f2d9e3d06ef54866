# shellcheck shell=bash
# new_venv DIR: a virtual environment with pip, made by python3. If Python's
# ensurepip fails (CI once failed every venv at it, printing only "returned
# non-zero exit status 1"), say why (its own output, the free space) and
# bootstrap pip with the pip of the calling interpreter instead.
new_venv() {
    python3 -m venv "$1" && return 0
    echo "python3 -m venv $1 failed; ensurepip's own output and the free space:"
    rm -rf "$1"
    python3 -m venv --without-pip "$1" || return 1
    "$1/bin/python" -m ensurepip --default-pip && return 0
    df -h "$(dirname "$1")" "${TMPDIR:-/tmp}"
    python3 -m pip --python "$1/bin/python" install --quiet pip
}
