"""The lock of a multi-file output (issue #31 point 1): it never writes through a
link, a stale one is taken over and said, another run's live one is refused, and
a signal while it is being taken leaves none behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import receval.io.write as write
from receval.cli import main
from receval.errors import OutputError
from receval.io.write import LOCK, STAGING, OutputSet, output_notes

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock and POSIX file kinds")

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with an interactions log (``log.parquet``) and a file a link may
    point to (``v.txt``, dated 2020); the current folder."""
    monkeypatch.chdir(tmp_path)
    log = pd.DataFrame({"user": [1, 1, 1, 2, 2, 2], "item": range(6), "timestamp": range(6)})
    log.to_parquet(tmp_path / "log.parquet")
    victim = tmp_path / "v.txt"
    victim.write_text("keep me\n")
    os.utime(victim, ns=(1_577_836_800_000_000_000, 1_577_836_800_000_000_000))
    (tmp_path / "out").mkdir()
    return tmp_path


def _untouched(victim: Path) -> None:
    assert victim.read_text() == "keep me\n"
    assert victim.stat().st_mtime_ns == 1_577_836_800_000_000_000


def _python(code: str, *args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": SRC},
        text=True,
        **kw,
    )


# -- never through a link ------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["split", "log.parquet", "--out", "out"],
        ["demo", "--users", "300", "--out", "out", "-q"],
    ],
    ids=["split", "demo"],
)
def test_a_link_at_the_lock_is_refused_and_its_target_untouched(
    here: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    lock = here / "out" / LOCK
    lock.symlink_to(here / "v.txt")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"error: out/{LOCK} is a symbolic link, not a receval lock: remove it" in err
    _untouched(here / "v.txt")
    assert lock.is_symlink() and os.readlink(lock) == str(here / "v.txt")
    assert sorted(p.name for p in (here / "out").iterdir()) == [LOCK]  # nothing written


def test_a_dangling_link_at_the_lock_is_refused_not_created(here: Path) -> None:
    (here / "out" / LOCK).symlink_to(here / "nowhere.txt")
    with pytest.raises(OutputError, match="is a symbolic link, not a receval lock"):
        OutputSet(here / "out", "split").__enter__()
    assert not (here / "nowhere.txt").exists()


@pytest.mark.parametrize("kind", ["named pipe", "folder", "hard link"])
def test_anything_but_a_plain_lock_file_is_refused(here: Path, kind: str) -> None:
    lock = here / "out" / LOCK
    if kind == "named pipe":
        os.mkfifo(lock)
        said = "is a named pipe, not a receval lock"
    elif kind == "folder":
        lock.mkdir()
        said = "is a folder, not a receval lock"
    else:
        os.link(here / "v.txt", lock)
        said = "is a second name (hard link) of another file, not a receval lock"
    with pytest.raises(OutputError, match=re.escape(said)) as caught:
        OutputSet(here / "out", "split").__enter__()
    assert caught.value.path == str(lock)
    _untouched(here / "v.txt")
    assert sorted(p.name for p in (here / "out").iterdir()) == [LOCK]


# -- stale and live locks -----------------------------------------------------------------

_KILLED_HOLDING = """
import os, sys
from receval.io.write import OutputSet
with OutputSet(sys.argv[1], "split"):
    os.kill(os.getpid(), 9)
"""


def _left_by_a_killed_run(folder: Path) -> int:
    """The pid of a run killed (SIGKILL) while it held ``folder``'s lock; its lock
    file is left behind."""
    proc = _python(_KILLED_HOLDING, str(folder))
    assert proc.wait(timeout=120) == -9
    who = json.loads((folder / LOCK).read_text())
    assert who["pid"] == proc.pid
    return proc.pid


def test_a_stale_lock_is_taken_over_and_said(here: Path) -> None:
    pid = _left_by_a_killed_run(here / "out")
    told: list[str] = []
    with output_notes(told.append), OutputSet(here / "out", "split") as out:
        out.write("a.txt", lambda p: p.write_text("a"))
        assert json.loads((here / "out" / LOCK).read_text())["pid"] == os.getpid()
    assert len(out.notes) == 1 and told == out.notes
    note = out.notes[0]
    assert note.startswith(f"took over the lock {here / 'out' / LOCK}: it was left by ")
    assert f"receval split, pid {pid} on " in note and f"(process {pid} is gone)" in note
    assert json.loads((here / "out" / "manifest.json").read_text())["files"].keys() == {"a.txt"}
    assert not (here / "out" / LOCK).exists()


def test_an_empty_lock_nobody_holds_is_taken_over(here: Path) -> None:
    (here / "out" / LOCK).write_text("")  # an old run stopped before it wrote itself in
    with OutputSet(here / "out", "split") as out:
        pass
    assert out.notes == []  # nothing to say: it named no run
    assert not (here / "out" / LOCK).exists()


def test_split_takes_over_a_stale_lock(here: Path) -> None:
    _left_by_a_killed_run(here / "out")
    assert main(["split", "log.parquet", "--out", "out", "-q"]) == 0
    manifest = json.loads((here / "out" / "manifest.json").read_text())
    assert {"train.parquet", "test.parquet", "split.json"} <= manifest["files"].keys()
    assert not (here / "out" / LOCK).exists()


def test_the_command_line_says_it_took_over_a_stale_lock(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = _left_by_a_killed_run(here / "out")
    assert main(["split", "log.parquet", "--out", "out"]) == 0
    err = capsys.readouterr().err
    assert f"note: took over the lock out/{LOCK}: " in err and f"process {pid} is gone" in err


_HOLDING = """
import sys
from receval.io.write import OutputSet
with OutputSet(sys.argv[1], "split"):
    print("holding", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held(here: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``out``'s lock until its stdin closes."""
    proc = _python(_HOLDING, str(here / "out"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
        yield proc
    finally:
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=60)


def test_a_live_lock_is_refused(
    here: Path, held: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]
) -> None:
    lock = here / "out" / LOCK
    before = lock.read_bytes()
    with pytest.raises(OutputError, match=f"receval split, pid {held.pid} on "):
        OutputSet(here / "out", "split").__enter__()
    assert main(["split", "log.parquet", "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert "out is being written by another receval run (receval split, pid" in err
    assert lock.read_bytes() == before  # the holder's lock, as it was
    assert held.stdin is not None
    held.stdin.close()
    assert held.wait(timeout=60) == 0
    assert not lock.exists()  # the holder removed it when done


# -- a signal while the lock is taken ------------------------------------------------------


def _is_lock(fd: int) -> bool:
    return os.readlink(f"/proc/self/fd/{fd}").endswith(LOCK)


def _once(real: Any, when: Any) -> Any:
    """``real``, except that its first call for which ``when(*args)`` holds raises
    KeyboardInterrupt (what a signal handler raises)."""
    fired: list[bool] = []

    def call(*args: Any, **kw: Any) -> Any:
        if not fired and when(*args):
            fired.append(True)
            raise KeyboardInterrupt
        return real(*args, **kw)

    return call


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
@pytest.mark.parametrize("stale", [False, True], ids=["new", "stale"])
@pytest.mark.parametrize("at", ["flock", "ftruncate", "pwrite", "staging"])
def test_a_signal_while_locking_leaves_no_lock(
    here: Path, monkeypatch: pytest.MonkeyPatch, at: str, stale: bool
) -> None:
    import fcntl

    folder = here / "out"
    if stale:
        (folder / LOCK).write_text('{"pid": 1, "host": "elsewhere", "command": "receval x"}')
    if at == "flock":
        monkeypatch.setattr(fcntl, "flock", _once(fcntl.flock, lambda fd, *_: _is_lock(fd)))
    elif at == "staging":  # entering makes the set's hidden folder once the lock is held
        made = _once(Path.mkdir, lambda p, *_, **__: p.name == STAGING)
        monkeypatch.setattr(Path, "mkdir", made)
    else:  # only receval.io.write's calls are interrupted, through its own `os`
        proxy = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os)})
        setattr(proxy, at, _once(getattr(os, at), lambda fd, *_: _is_lock(fd)))
        if at == "pwrite":  # the code before the fix wrote with os.write
            proxy.write = _once(os.write, lambda fd, *_: _is_lock(fd))
        monkeypatch.setattr(write, "os", proxy)
    with pytest.raises(KeyboardInterrupt):
        OutputSet(folder, "split").__enter__()
    monkeypatch.undo()
    assert list(folder.iterdir()) == []  # no lock, nothing else
    with OutputSet(folder, "split") as out:  # and the folder can be written at once
        out.write("a.txt", lambda p: p.write_text("a"))
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt", "manifest.json"]
