"""Ctrl-C, SIGTERM and SIGHUP sent to the real command: exit 130 / 143 / 129, one
stderr line, no traceback, no partial output left, and the command stops within about a
second. A closed stdout (``receval demo | head``) ends the output quietly and the
command's files are complete."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.errors import SIGNAL_MESSAGES
from tests.pipes import default_signals, open_for_writing

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")

SRC = str(Path(__file__).resolve().parents[1] / "src")
CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
WORDS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 3M-row CSV (ending in a newline, as files do) and its truth: seconds to evaluate."""
    folder = tmp_path_factory.mktemp("big")
    users, k = 300_000, 10
    rng = np.random.default_rng(0)
    item = rng.permuted(np.tile(np.arange(k), (users, 1)), axis=1).ravel() + 1000 * (
        np.arange(users * k) % 7
    )
    recs = pd.DataFrame(
        {
            "user": np.repeat(np.arange(users), k),
            "item": item,
            "rank": np.tile(np.arange(1, k + 1), users),
        }
    )
    recs.to_csv(folder / "recs.csv", index=False)
    recs.iloc[::5, :2].to_csv(folder / "truth.csv", index=False)
    return folder / "recs.csv", folder / "truth.csv"


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "receval", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,  # not pytest's dispositions (SIGINT ignored in `cmd &`)
    )


def _caught(pid: int, signum: int) -> bool:
    """Whether the process has a handler for ``signum`` (Linux: ``SigCgt`` in
    /proc/PID/status; elsewhere assumed)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    mask = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("SigCgt:")), None)
    return mask is None or bool(int(mask, 16) >> (signum - 1) & 1)


def _interrupt(argv: list[str], cwd: Path, signum: int, delay: float) -> tuple[int, str, float]:
    """Start the command, wait until it holds the signal, then ``delay`` seconds, and
    send it. (Before the launcher holds the signals, in Python's own start-up, a signal
    kills the process as it would any program: on a loaded machine that took 0.3 s.)"""
    proc = _start(argv, cwd)
    deadline = time.monotonic() + 30
    while not _caught(proc.pid, signum) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(delay)
    assert proc.poll() is None, "the command finished before the signal: make the input bigger"
    sent = time.monotonic()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err, time.monotonic() - sent


def _check(code: int, err: str, took: float, signum: int) -> None:
    assert code == CODES[signum], err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert WORDS[signum] in err
    # the ~1 s latency target is measured, not asserted (shared CI machines stall):
    # here only that the command stops instead of running on or hanging
    assert took < 20.0, f"the command took {took:.1f} s to stop"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_evaluate_stops_while_reading(big: tuple[Path, Path], tmp_path: Path, signum: int) -> None:
    """The signal comes while the command is provably still reading: its recommendations
    come through a named pipe that holds back the second half of the file."""
    recs, truth = big
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "recs.pipe"
    os.mkfifo(fifo)
    argv = ["evaluate", str(fifo), str(truth), "-m", "ndcg@10", "--per-user", "pu.csv"]
    proc = _start(argv, work)
    data = recs.read_bytes()
    with os.fdopen(open_for_writing(fifo, proc), "wb") as pipe:
        pipe.write(data[: len(data) // 2])  # blocks until the reader has taken most of it
        pipe.flush()
        time.sleep(0.3)
        assert proc.poll() is None, "the command cannot finish: half its input is held back"
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    _check(proc.returncode, err, took, signum)
    assert os.listdir(work) == []  # no per-user file, no temporary file


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_evaluate_stops_after_start(big: tuple[Path, Path], tmp_path: Path, signum: int) -> None:
    """A signal half a second after the start of a real file's evaluation (start-up or
    reading, depending on the machine)."""
    recs, truth = big
    argv = ["evaluate", str(recs), str(truth), "-m", "ndcg@10", "--per-user", "pu.csv"]
    code, err, took = _interrupt(argv, tmp_path, signum, 0.5)
    _check(code, err, took, signum)
    assert os.listdir(tmp_path) == []  # no per-user file, no temporary file


SWALLOWED = """
import os, signal, sys

class Swallow:  # what a library that drops the signal's exception as it loads does
    def find_spec(self, name, path=None, target=None):
        if name == "receval.cli._main":
            sys.meta_path.remove(self)
            try:
                os.kill(os.getpid(), signal.SIG{name})
                for _ in range(100_000):
                    pass  # the handler runs here, and its exception is dropped
            except BaseException:
                pass
        return None

sys.meta_path.insert(0, Swallow())
sys.argv = ["receval", *sys.argv[1:]]
from receval._launch import command_line
sys.exit(command_line())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_dropped_while_loading_still_stops(tmp_path: Path, signum: int) -> None:
    """A signal whose exception a library drops while the command loads (seen in CI:
    SIGTERM inside pandas' compiled start-up; the command ran on and exited 0) still
    ends the command once loaded: its code, one line, nothing written."""
    (tmp_path / "recs.csv").write_text("user,item,rank\n1,10,1\n")
    (tmp_path / "truth.csv").write_text("user,item\n1,10\n")
    code = SWALLOWED.replace("{name}", signal.Signals(signum).name[3:])
    argv = ["evaluate", "recs.csv", "truth.csv", "--per-user", "pu.csv"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_signals,
    )
    _check(proc.returncode, proc.stderr, 0.0, signum)
    assert not (tmp_path / "pu.csv").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_demo_stops(tmp_path: Path, signum: int) -> None:
    code, err, took = _interrupt(["demo", "--users", "200000", "--out", "d"], tmp_path, signum, 2.0)
    _check(code, err, took, signum)
    left = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in left if p.name.startswith(".")], left  # no temporary files


def test_sigterm_handler_only_in_the_command() -> None:
    """Importing receval (the CLI module too) leaves SIGTERM alone; main() puts it back."""
    code = (
        "import signal, receval, receval.cli as c\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
        "c.main(['--version'])\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=default_signals,
    )
    assert done.returncode == 0, done.stderr


# A real signal sent by the process to itself at a chosen point of start-up:
# the moment the command begins to load a module of its dependencies.
_AT_IMPORT = """
import os, signal, sys
class Trip:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.{signal})
        return None
sys.meta_path.insert(0, Trip())
sys.argv = ["receval", "metrics"]
from receval._launch import command_line
sys.exit(command_line())
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("module", ["numpy", "pyarrow", "typer"])
def test_signal_while_the_command_starts(sig: signal.Signals, module: str) -> None:
    """Ctrl-C or SIGTERM while the command is still loading its dependencies
    exits like later: the code, one line, no traceback."""
    code = _AT_IMPORT.format(module=module, signal=sig.name)
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=default_signals,
    )
    assert proc.returncode == CODES[sig], proc.stderr
    assert proc.stderr.strip().splitlines() == [SIGNAL_MESSAGES[CODES[sig]]]
    assert proc.stdout == ""


def test_import_receval_loads_no_numpy() -> None:
    """`import receval` loads neither NumPy nor pandas: the command holds its
    signals before anything slow is loaded, and a host pays only for what it uses."""
    code = "import sys, receval; print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_both_entry_points_start_through_launch() -> None:
    """The console script and `python -m receval` both begin in receval._launch."""
    root = Path(SRC).parent
    assert 'receval = "receval._launch:command_line"' in (root / "pyproject.toml").read_text()
    assert "from receval._launch import command_line" in (
        Path(SRC) / "receval" / "__main__.py"
    ).read_text(encoding="utf-8")


def test_sighup_ignored_under_nohup(tmp_path: Path) -> None:
    """Run under ``nohup`` (SIGHUP ignored), the command ignores SIGHUP and finishes."""
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "import receval.cli._main as m\n"
        "real = m._main_unguarded\n"
        "def hup(argv):\n"
        "    import os\n"
        "    os.kill(os.getpid(), signal.SIGHUP)\n"
        "    return real(argv)\n"
        "m._main_unguarded = hup\n"
        "sys.argv = ['receval', 'metrics']\n"
        "from receval._launch import command_line\n"
        "sys.exit(command_line())\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=default_signals,  # SIGHUP ignored by the child itself, above
    )
    assert proc.returncode == 0, proc.stderr
    assert "ndcg" in proc.stdout


_SIGNALS_ITSELF = """
import os, signal, sys
import receval.cli._main as m
real = m._main_unguarded
def signalled(argv):
    os.kill(os.getpid(), signal.{signal})
    return real(argv)
m._main_unguarded = signalled
sys.argv = ["receval", "metrics"]
from receval._launch import command_line
sys.exit(command_line())
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["background-job", "nohup"])
def test_a_signal_ignored_from_the_start_stays_ignored(sig: signal.Signals) -> None:
    """Started with SIGINT ignored (a background job of a script: ``receval ... &``)
    or SIGHUP ignored (``nohup``), as inherited through exec, the command leaves the
    signal ignored and finishes: the terminal's Ctrl-C is for the foreground job."""

    def ignoring() -> None:
        default_signals()
        signal.signal(sig, signal.SIG_IGN)

    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-c", _SIGNALS_ITSELF.format(signal=sig.name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=ignoring,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ndcg" in proc.stdout and proc.stderr == ""


def test_closed_stdout_leaves_a_complete_folder(tmp_path: Path) -> None:
    """``receval demo --out d | head -1``: the reader goes away after one line; the
    command stops printing quietly, exits 0 with nothing on stderr but its notes, and
    its folder is complete (its manifest lists every file it wrote)."""
    import json

    proc = _start(["demo", "--users", "2000", "--out", "d"], tmp_path)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does once it has its line
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(timeout=120) == 0, err
    assert first.startswith("data:")
    assert "Traceback" not in err and "error" not in err.lower(), err
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    for name in manifest["files"]:
        assert (tmp_path / "d" / name).is_file(), name
    assert (tmp_path / "d" / "report.html").is_file()
