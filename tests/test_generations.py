"""One folder, one writer, one generation (issue #31 point 3): no receval run writes
inside a folder another holds (nested folders too), a set is published whole or not
at all, a killed run's left-overs are cleaned (or its complete set published) by the
next run into the folder, and readers check a file against its set's manifest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import receval
from receval.cli import main
from receval.errors import OutputError
from receval.io.write import LOCK, STAGING, OutputSet, atomic_write_text, output_notes

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock and POSIX signals")

SRC = str(Path(__file__).resolve().parents[1] / "src")

#: a process that holds ``argv[1]`` as an OutputSet (its lock taken) until stdin closes
HOLDER = """
import sys
from receval.io.write import OutputSet
with OutputSet(sys.argv[1], "split") as out:
    out.write("a.txt", lambda p: p.write_text("a"))
    print("holding", flush=True)
    sys.stdin.read()
"""


def _holding(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        env={**os.environ, "PYTHONPATH": SRC},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    return proc


def _let_go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def _log(n: int = 40, seed: int = 0) -> pd.DataFrame:
    return receval.synthetic_interactions(n, seed=seed)


def _recs(truth: pd.DataFrame) -> pd.DataFrame:
    """Recommendations that list each user's test items, ranked."""
    recs = truth[["user", "item"]].copy()
    return recs.assign(rank=recs.groupby("user").cumcount() + 1)


def _matches(folder: Path, name: str = "manifest.json") -> dict[str, Any]:
    import hashlib

    manifest = json.loads((folder / name).read_text())
    for file, facts in manifest["files"].items():
        data = (folder / file).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (facts["bytes"], facts["sha256"])
    return manifest


# -- one writer: nested folders -----------------------------------------------------------


def test_a_set_inside_a_held_folder_is_refused(tmp_path: Path) -> None:
    """``split --out d/split`` while another run holds ``d``: exit 2 naming both."""
    (tmp_path / "d").mkdir()
    _log().to_csv(tmp_path / "log.csv", index=False)
    holder = _holding(tmp_path / "d")
    try:
        with pytest.raises(OutputError, match=r"is inside .*d, which is being written by"):
            OutputSet(tmp_path / "d" / "split", "split").__enter__()
        code = main(["split", str(tmp_path / "log.csv"), "--out", str(tmp_path / "d" / "split")])
        assert code == 2
        assert not (tmp_path / "d" / "split").exists() or not any(
            (tmp_path / "d" / "split").iterdir()
        )
    finally:
        _let_go(holder)
    assert _matches(tmp_path / "d")["files"].keys() == {"a.txt"}  # the holder's set alone


def test_a_set_writing_into_a_held_subfolder_is_refused(tmp_path: Path) -> None:
    """The other way round: a run holds ``d/split``; a set of ``d`` that would
    write ``split/...`` is refused, and ``d`` is left as it was."""
    (tmp_path / "d" / "split").mkdir(parents=True)
    holder = _holding(tmp_path / "d" / "split")
    try:
        with (
            pytest.raises(OutputError, match=r"d/split is being written by another"),
            OutputSet(tmp_path / "d", "demo") as out,
        ):
            out.write("leaderboard.csv", lambda p: p.write_text("x"))
            out.write("split/train.parquet", lambda p: p.write_text("x"))
    finally:
        _let_go(holder)
    assert not (tmp_path / "d" / "leaderboard.csv").exists()  # nothing was published
    assert not (tmp_path / "d" / STAGING).exists()


def test_a_single_file_into_a_held_folder_is_refused(tmp_path: Path) -> None:
    """``evaluate --per-user d/sub/pu.csv`` while a run holds ``d``: refused."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    holder = _holding(tmp_path / "d")
    try:
        with pytest.raises(OutputError, match=r"cannot write .*pu.csv: .*d is being written"):
            atomic_write_text(tmp_path / "d" / "sub" / "pu.csv", "x")
    finally:
        _let_go(holder)
    atomic_write_text(tmp_path / "d" / "sub" / "pu.csv", "x")  # once it is let go
    assert (tmp_path / "d" / "sub" / "pu.csv").read_text() == "x"


def test_the_demo_writes_its_split_as_part_of_its_set(tmp_path: Path) -> None:
    """A set opened inside the folder of the set being written in this process
    (the demo's split) is part of it: one lock, one publication."""
    with OutputSet(tmp_path / "d", "demo") as out:
        with OutputSet(tmp_path / "d" / "split", "split") as inner:
            inner.write("train.parquet", lambda p: p.write_text("t"))
        assert not (tmp_path / "d" / "split").exists()  # published with the outer set
        for name, path in inner.files.items():
            out.add(f"split/{name}", path)
        out.add("split/manifest.json", inner.manifest)
        out.write("report.html", lambda p: p.write_text("r"))
    outer = _matches(tmp_path / "d")
    assert set(outer["files"]) == {"split/train.parquet", "split/manifest.json", "report.html"}
    assert set(_matches(tmp_path / "d" / "split")["files"]) == {"train.parquet"}
    assert not list((tmp_path / "d").rglob(LOCK))


# -- one generation -----------------------------------------------------------------------


def test_a_failed_set_leaves_the_old_one_whole(tmp_path: Path) -> None:
    """A set that fails half way (Ctrl-C here) publishes nothing: the folder
    keeps the previous set, manifest and all, and no hidden folder."""
    with OutputSet(tmp_path, "split", {"seed": 0}) as out:
        out.write("train.parquet", lambda p: p.write_text("train 0"))
        out.write("test.parquet", lambda p: p.write_text("test 0"))
    before = _matches(tmp_path)
    with pytest.raises(KeyboardInterrupt), OutputSet(tmp_path, "split", {"seed": 1}) as out:
        out.write("train.parquet", lambda p: p.write_text("train 1"))
        raise KeyboardInterrupt
    assert _matches(tmp_path) == before
    assert (tmp_path / "train.parquet").read_text() == "train 0"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "manifest.json",
        "test.parquet",
        "train.parquet",
    ]


def test_a_new_set_removes_the_old_sets_files_it_does_not_have(tmp_path: Path) -> None:
    """A split with validation, then one without: the old validation file goes
    (it is the old manifest's, of its size); a file of the user's stays."""
    with OutputSet(tmp_path, "split") as out:
        for name in ("train.parquet", "validation.parquet", "test.parquet"):
            out.write(name, lambda p, n=name: p.write_text(n))
    (tmp_path / "notes.txt").write_text("mine")
    with OutputSet(tmp_path, "split") as out:
        for name in ("train.parquet", "test.parquet"):
            out.write(name, lambda p, n=name: p.write_text(n + " 2"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "manifest.json",
        "notes.txt",
        "test.parquet",
        "train.parquet",
    ]
    assert set(_matches(tmp_path)["files"]) == {"train.parquet", "test.parquet"}


#: a split's save killed (SIGKILL: no cleanup) at the n-th rename of its publication
KILLED_AT_RENAME = """
import os, signal, sys
import receval.io.write as w
from receval.io.write import OutputSet
real, seen = os.replace, []
def replace(a, b):
    seen.append(b)
    if len(seen) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(a, b)
w.os = type("os", (), {k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
w.os.replace = staticmethod(replace)
with OutputSet(sys.argv[1], "split", {"seed": 1}) as out:
    out.write("train.parquet", lambda p: p.write_text("train 1"))
    out.write("test.parquet", lambda p: p.write_text("test 1"))
"""


@pytest.mark.parametrize("at", [4, 5, 6])  # 1-3: the staged writes
def test_a_split_killed_during_its_renames(tmp_path: Path, at: int) -> None:
    """Killed (``kill -9``: no handler runs) while its files are renamed into place,
    a split never leaves train of one run beside test of another under a manifest;
    the next run into the folder finishes the publication (the set was complete)
    and says so, then writes its own."""
    with OutputSet(tmp_path, "split", {"seed": 0}) as out:
        out.write("train.parquet", lambda p: p.write_text("train 0"))
        out.write("test.parquet", lambda p: p.write_text("test 0"))
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_AT_RENAME, str(tmp_path), str(at)],
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL
    manifest = tmp_path / "manifest.json"
    if manifest.exists():  # a manifest there is whole and true
        _matches(tmp_path)
    notes: list[str] = []
    with output_notes(notes.append), OutputSet(tmp_path, "split", {"seed": 2}) as out:
        after = _matches(tmp_path)  # the interrupted run's set, finished
        assert after["parameters"] == {"seed": 1}
        assert (tmp_path / "test.parquet").read_text() == "test 1"
        out.write("train.parquet", lambda p: p.write_text("train 2"))
        out.write("test.parquet", lambda p: p.write_text("test 2"))
    assert any("finished publishing the files of an interrupted run" in n for n in notes), notes
    assert any("took over the lock" in n for n in notes), notes
    assert _matches(tmp_path)["parameters"] == {"seed": 2}
    assert not (tmp_path / STAGING).exists()


def test_killed_before_publishing_leaves_the_old_set_and_is_cleaned(tmp_path: Path) -> None:
    """Killed while writing its files, a run leaves the previous set whole; its
    unpublished files are removed by the next run, with a note."""
    with OutputSet(tmp_path, "split", {"seed": 0}) as out:
        out.write("train.parquet", lambda p: p.write_text("train 0"))
    code = (
        "import os, signal, sys\n"
        "from receval.io.write import OutputSet\n"
        "with OutputSet(sys.argv[1], 'split', {'seed': 1}) as out:\n"
        "    out.write('train.parquet', lambda p: p.write_text('train 1'))\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=60,
    )
    assert _matches(tmp_path)["parameters"] == {"seed": 0}
    assert (tmp_path / STAGING / "train.parquet").exists()  # what the killed run left
    notes: list[str] = []
    with output_notes(notes.append), OutputSet(tmp_path, "split") as out:
        out.write("train.parquet", lambda p: p.write_text("train 2"))
    assert any("removed the unfinished files of an interrupted run" in n for n in notes)
    assert not (tmp_path / STAGING).exists()


def test_temporaries_of_killed_runs_are_cleaned(tmp_path: Path) -> None:
    """A temporary file whose process is gone is removed by the next write of its
    file, or by the next set into its folder; a live process's is left alone."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    gone = int(done.stdout)
    left = tmp_path / f".pu.csv.{gone}-abcd_123.tmp"
    live = tmp_path / f".pu.csv.{os.getpid()}-zzzz_999.tmp"
    left.write_text("half")
    live.write_text("writing")
    atomic_write_text(tmp_path / "pu.csv", "whole")
    assert not left.exists() and live.exists()
    (tmp_path / "sub").mkdir()
    deep = tmp_path / "sub" / f".train.parquet.{gone}-abcd_123.tmp"
    deep.write_text("half")
    notes: list[str] = []
    with output_notes(notes.append), OutputSet(tmp_path, "split") as out:
        out.write("a.txt", lambda p: p.write_text("a"))
    assert not deep.exists() and live.exists()
    assert any("removed 1 temporary file(s)" in n for n in notes), notes


# -- readers check the manifest -----------------------------------------------------------


@pytest.fixture
def split_folders(tmp_path: Path) -> Path:
    log = _log(60)
    log.to_csv(tmp_path / "log.csv", index=False)
    for out, seed in (("a", "0"), ("b", "1")):
        argv = ["split", str(tmp_path / "log.csv"), "--out", str(tmp_path / out)]
        assert main([*argv, "--method", "random", "--seed", seed, "-q"]) == 0
    return tmp_path


def test_a_changed_file_is_said(split_folders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = split_folders / "a"
    recs = _recs(pd.read_parquet(a / "test.parquet"))
    recs.to_csv(split_folders / "recs.csv", index=False)
    res = receval.evaluate(split_folders / "recs.csv", a / "test.parquet", ["hit_rate@5"])
    assert not [n for n in res.notes if "manifest" in n]
    # the test file replaced by the other split's: a file of another run
    (a / "test.parquet").write_bytes((split_folders / "b" / "test.parquet").read_bytes())
    res = receval.evaluate(split_folders / "recs.csv", a / "test.parquet", ["hit_rate@5"])
    said = [n for n in res.notes if "changed since receval split wrote" in n]
    assert said and str(a / "test.parquet") in said[0], res.notes
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                str(split_folders / "recs.csv"),
                str(a / "test.parquet"),
                "-m",
                "hit_rate@5",
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    assert "changed since receval split wrote" in printed.out + printed.err


def test_a_file_not_in_the_set_is_said(split_folders: Path) -> None:
    a = split_folders / "a"
    extra = a / "test_old.parquet"
    extra.write_bytes((a / "test.parquet").read_bytes())
    recs = _recs(pd.read_parquet(extra))
    res = receval.evaluate(recs, extra, ["hit_rate@5"])
    assert any("not part of the set" in n and str(extra) in n for n in res.notes), res.notes


def test_parts_of_two_splits_are_said(split_folders: Path) -> None:
    """train= of one split and the truth of another do not belong together."""
    a, b = split_folders / "a", split_folders / "b"
    recs = _recs(pd.read_parquet(a / "test.parquet"))
    res = receval.evaluate(recs, b / "test.parquet", ["hit_rate@5"], train=a / "train.parquet")
    assert any("2 different runs of receval split" in n for n in res.notes), res.notes
    same = receval.evaluate(recs, a / "test.parquet", ["hit_rate@5"], train=a / "train.parquet")
    assert not [n for n in same.notes if "different runs" in n]


def test_a_foreign_manifest_is_ignored(tmp_path: Path) -> None:
    """A ``manifest.json`` that is not receval's says nothing."""
    (tmp_path / "manifest.json").write_text('{"files": {"x": 1}}')
    pd.DataFrame({"user": [1], "item": [2]}).to_csv(tmp_path / "truth.csv", index=False)
    res = receval.evaluate(
        pd.DataFrame({"user": [1], "item": [2], "rank": [1]}), tmp_path / "truth.csv", ["p@1"]
    )
    assert not [n for n in res.notes if "set" in n]


def test_a_lock_that_lives_in_a_subfolder_does_not_block_the_reader(tmp_path: Path) -> None:
    """Reading is never refused: only writing into a held folder is."""
    _log(30).to_csv(tmp_path / "log.csv", index=False)
    assert main(["split", str(tmp_path / "log.csv"), "--out", str(tmp_path / "d"), "-q"]) == 0
    holder = _holding(tmp_path / "d")
    try:
        started = time.monotonic()
        res = receval.evaluate(
            _recs(pd.read_parquet(tmp_path / "d" / "test.parquet")),
            tmp_path / "d" / "test.parquet",
            ["hit_rate@5"],
        )
        assert res.summary["hit_rate@5"] == 1.0
        assert time.monotonic() - started < 30
    finally:
        _let_go(holder)


def test_check_says_parts_of_two_splits(
    split_folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``receval check --train`` of one split, ``--test`` of another: said on stderr."""
    a, b = split_folders / "a", split_folders / "b"
    capsys.readouterr()
    main(["check", "--train", str(a / "train.parquet"), "--test", str(b / "test.parquet")])
    err = capsys.readouterr().err
    assert "2 different runs of receval split" in err and "--train from" in err, err
    main(["check", "--train", str(a / "train.parquet"), "--test", str(a / "test.parquet")])
    assert "different runs" not in capsys.readouterr().err
