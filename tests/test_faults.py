"""Fault injection, for real (issue #17 point 8): a full disk, a read-only
folder, concurrent writers, signals during a multi-file output, hostile and
broken inputs, memory exhaustion and `-q`. Each case runs the real command in
a subprocess and asserts the exit code, the message, and that every file left
behind is either complete and valid or absent (no temporary file, no half of
one).

A full disk is a tiny tmpfs when the machine lets the test mount one (root),
else a file-size limit (RLIMIT_FSIZE: writes fail past N bytes, as on a full
disk). A read-only folder is a read-only tmpfs when root (chmod does not stop
root), else a folder without write permission.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from receval.workflow.synthetic import synthetic_interactions
from tests.pipes import default_signals, open_for_writing

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file systems and signals")

SRC = str(Path(__file__).resolve().parents[1] / "src")
ROOT = os.geteuid() == 0
OUT_D, OUT_C = ("--out", "d", "-q"), ("--out", "c", "-q")


def receval(
    *argv: str, cwd: Path, stdin: bytes | None = None, limit: Any = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "receval", *argv],
        cwd=cwd,
        env=env,
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
    )


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    users, k = 400, 20
    recs = pd.DataFrame(
        {
            "user": np.repeat(np.arange(users), k),
            "item": rng.integers(0, 300, users * k),
            "score": rng.random(users * k),
        }
    ).drop_duplicates(["user", "item"])
    recs.to_csv(tmp_path / "recs.csv", index=False)
    recs.assign(score=rng.random(len(recs))).to_csv(tmp_path / "recs2.csv", index=False)
    recs.iloc[::7, :2].to_csv(tmp_path / "truth.csv", index=False)
    log = recs.iloc[:, :2].assign(timestamp=np.arange(len(recs)))
    log.to_csv(tmp_path / "log.csv", index=False)
    return tmp_path


def _no_temporaries(folder: Path) -> None:
    left = [p for p in folder.rglob("*") if p.name.endswith(".tmp") or ".receval.lock" in p.name]
    assert not left, left


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


# -- the disk ----------------------------------------------------------------------------


@contextlib.contextmanager
def _mounted(folder: Path, options: str) -> Iterator[bool]:
    """A tmpfs at ``folder`` (True), or nothing when this machine forbids it (False)."""
    folder.mkdir(exist_ok=True)
    if not ROOT:
        yield False
        return
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _limit_file_size(size: int) -> Any:
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


WRITERS = {
    "per-user": (["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "--per-user"], "pu.csv"),
    "report": (
        ["report", "truth.csv", "recs.csv", "recs2.csv", "-m", "ndcg@10", "--out"],
        "r.html",
    ),
    "split": (["split", "log.csv", "--out"], "parts"),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_full_disk(inputs: Path, writer: str) -> None:
    argv, target = WRITERS[writer]
    disk = inputs / "disk"
    with _mounted(disk, "size=4k") as mounted:
        limit = None if mounted else _limit_file_size(4096)
        proc = receval(*argv, str(disk / target), cwd=inputs, limit=limit)
        line = _one_error_line(proc)
        assert str(disk / target) in line or f"{disk / target}/" in line, line
        assert "space" in line or "too large" in line, line
        assert ".tmp" not in line  # the target is named, never the temporary file
        _no_temporaries(disk)
        out = disk / target
        if out.is_dir():  # a split folder: no manifest, so visibly incomplete
            assert not (out / "manifest.json").exists()
        else:
            assert not out.exists()


@pytest.mark.parametrize("writer", list(WRITERS))
def test_read_only_folder(inputs: Path, writer: str) -> None:
    argv, target = WRITERS[writer]
    ro = inputs / "ro"
    with _mounted(ro, "ro,size=64k") as mounted:
        if not mounted:
            if ROOT:
                pytest.skip("root without mount: no read-only folder can stop root here")
            ro.chmod(0o555)
        proc = receval(*argv, str(ro / target), cwd=inputs)
        line = _one_error_line(proc)
        assert str(ro / target) in line, line
        assert "read-only" in line or "permission" in line, line
        assert not (ro / target).exists()


def test_a_folder_where_a_file_goes_and_a_file_where_a_folder_goes(inputs: Path) -> None:
    (inputs / "afile").write_text("keep")
    (inputs / "adir").mkdir()
    line = _one_error_line(receval("demo", "--users", "300", "--out", "afile", cwd=inputs))
    assert "afile" in line and "not a folder" in line
    line = _one_error_line(
        receval("report", "truth.csv", "recs.csv", "--png", "afile", "--out", "r.html", cwd=inputs)
    )
    assert "--png afile" in line and "not a folder" in line
    assert not (inputs / "r.html").exists()  # nothing written when the charts cannot be
    line = _one_error_line(
        receval("evaluate", "recs.csv", "truth.csv", "-m", "p@5", "--per-user", "adir", cwd=inputs)
    )
    assert "adir" in line and "folder" in line
    assert (inputs / "afile").read_text() == "keep"


# -- multi-file outputs: one writer, manifest last -----------------------------------------


def _manifest_matches(folder: Path) -> dict[str, Any]:
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, facts in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert len(data) == facts["bytes"], name
        assert hashlib.sha256(data).hexdigest() == facts["sha256"], name
    return manifest


def _demo_holding_the_folder(folder: Path, users: int, *extra: str) -> subprocess.Popen[str]:
    """A demo into ``folder / "d"``, returned once it holds the folder's lock."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "receval", "demo", *extra, "--users", str(users), *OUT_D],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": SRC},
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,  # a test signals it: not pytest's dispositions
    )
    lock = folder / "d" / ".receval.lock"
    for _ in range(1200):
        if lock.exists() and lock.read_text():
            return proc
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the demo never took the lock")


def test_two_demos_into_one_folder(tmp_path: Path) -> None:
    """The first demo reads its log through a named pipe that stays silent: it
    provably holds the folder while the second one tries."""
    log = synthetic_interactions(300, seed=1)
    fifo = tmp_path / "log.pipe"
    os.mkfifo(fifo)
    first = _demo_holding_the_folder(tmp_path, 300, "--interactions", "log.pipe")
    started = time.monotonic()
    second = receval("demo", "--users", "300", "--seed", "2", "--out", "d", cwd=tmp_path)
    assert time.monotonic() - started < 30  # at once, not after the first
    line = _one_error_line(second)
    assert "being written by another receval run" in line and "receval demo, pid" in line
    with os.fdopen(open_for_writing(fifo, first), "w") as pipe:
        pipe.write(log.to_csv(index=False))
    assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    manifest = _manifest_matches(tmp_path / "d")
    assert manifest["parameters"]["seed"] == 0  # one run's files, not a mix
    assert pd.read_parquet(tmp_path / "d" / "split" / "train.parquet")["user"].nunique() <= 300
    _no_temporaries(tmp_path / "d")


def test_demo_reads_its_log_from_a_pipe(tmp_path: Path) -> None:
    """A pipe is read once (a second open would wait for a writer forever): the
    demo of a log from stdin or a named pipe is the demo of the file."""
    log = synthetic_interactions(300, seed=1)
    log.to_csv(tmp_path / "log.csv", index=False)
    data = (tmp_path / "log.csv").read_bytes()
    from_file = receval("demo", "--interactions", "log.csv", "--out", "a", "-q", cwd=tmp_path)
    assert from_file.returncode == 0, from_file.stderr
    stdin = receval("demo", "--interactions", "-", "--out", "b", "-q", cwd=tmp_path, stdin=data)
    assert stdin.returncode == 0, stdin.stderr
    fifo = tmp_path / "log.pipe"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "receval", "demo", "--interactions", "log.pipe", *OUT_C],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": SRC},
        stderr=subprocess.PIPE,
        text=True,
    )
    with os.fdopen(open_for_writing(fifo, proc), "wb") as pipe:
        pipe.write(data)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    want = (tmp_path / "a" / "leaderboard.csv").read_text()
    for out in ("b", "c"):
        assert (tmp_path / out / "leaderboard.csv").read_text() == want
    empty = receval("demo", "--interactions", "-", "--out", "e", cwd=tmp_path, stdin=b"")
    assert "nothing came through the pipe" in _one_error_line(empty)


def test_sigterm_during_a_demo_leaves_the_old_set_whole(tmp_path: Path) -> None:
    """The new set is written aside and published whole at the end: a demo stopped
    half way leaves the folder's previous set as it was, manifest and all."""
    first = receval("demo", "--users", "300", "--out", "d", "-q", cwd=tmp_path)
    assert first.returncode == 0
    before = _manifest_matches(tmp_path / "d")
    proc = _demo_holding_the_folder(tmp_path, 100000)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert _manifest_matches(tmp_path / "d") == before  # one run's files, the first's
    assert not (tmp_path / "d" / ".receval-new").exists()
    _no_temporaries(tmp_path / "d")


def test_split_folder_has_a_manifest(inputs: Path) -> None:
    proc = receval("split", "log.csv", "--out", "parts", "-q", cwd=inputs)
    assert proc.returncode == 0, proc.stderr
    assert set(_manifest_matches(inputs / "parts")["files"]) == {
        "train.parquet",
        "test.parquet",
        "split.json",
    }


# -- inputs --------------------------------------------------------------------------------


def test_pipes_and_stdin_are_inputs(inputs: Path) -> None:
    want = receval("evaluate", "recs.csv", "truth.csv", "-m", "p@5", "-o", "json", cwd=inputs)
    data = (inputs / "recs.csv").read_bytes()
    dash = receval("evaluate", "-", "truth.csv", "-m", "p@5", "-o", "json", cwd=inputs, stdin=data)
    fifo = inputs / "fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "receval",
            "evaluate",
            "fifo",
            "truth.csv",
            "-m",
            "p@5",
            "-o",
            "json",
        ],
        cwd=inputs,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with os.fdopen(open_for_writing(fifo, proc), "wb") as f:
        f.write(data)
    out, err = proc.communicate(timeout=120)
    for got in (dash.stdout, out):
        assert json.loads(got)["metrics"] == json.loads(want.stdout)["metrics"], err
    empty = receval("evaluate", "-", "truth.csv", "-m", "p@5", cwd=inputs, stdin=b"")
    assert "nothing came through the pipe" in _one_error_line(empty)


@pytest.mark.parametrize("sep", ["", ";;", '"'])
def test_bad_separators(inputs: Path, sep: str) -> None:
    line = _one_error_line(
        receval("evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "--sep", sep, cwd=inputs)
    )
    assert line.startswith("error: --sep ") and "one character" in line


def test_tab_written_as_backslash_t(inputs: Path) -> None:
    for name in ("recs", "truth"):
        text = (inputs / f"{name}.csv").read_text().replace(",", "\t")
        (inputs / f"{name}.txt").write_text(text)
    a = receval("evaluate", "recs.txt", "truth.txt", "-m", "ndcg@10", "--sep", "\\t", cwd=inputs)
    b = receval("evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", cwd=inputs)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout


def test_line_numbers_after_quoted_multiline_fields(tmp_path: Path) -> None:
    (tmp_path / "recs.csv").write_text(
        'user,item,score\n1,"a\nb",0.5\n\n2,c,0.4\n1,"a\nb",0.3\n', encoding="utf-8"
    )
    (tmp_path / "truth.csv").write_text("user,item\n1,c\n", encoding="utf-8")
    line = _one_error_line(receval("evaluate", "recs.csv", "truth.csv", "-m", "p@5", cwd=tmp_path))
    assert "recs.csv, line 6" in line and "lines 2 and 6" in line, line


def test_a_field_over_a_megabyte(tmp_path: Path) -> None:
    big = "x" * 1_500_000
    (tmp_path / "truth.csv").write_text(f"user,item,note\n1,10,{big}\n2,11,y\n")
    (tmp_path / "recs.csv").write_text("user,item,score\n1,10,0.9\n2,12,0.8\n")
    proc = receval(
        "evaluate", "recs.csv", "truth.csv", "-m", "hit_rate@10", "-o", "json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["metrics"]["hit_rate@10"] == 0.5


BROKEN = {
    "empty": b"",
    "binary": bytes(range(256)) * 20,
    "blank": b"\n\n\n",
    "truncated parquet": b"PAR1" + bytes(100),
}


@pytest.mark.parametrize("kind", list(BROKEN))
@pytest.mark.parametrize(
    "argv",
    [
        ["split", "{f}", "--out", "o"],
        ["check", "--train", "{f}", "--test", "truth.csv"],
        ["demo", "--interactions", "{f}", "--out", "o"],
        ["evaluate", "{f}", "truth.csv", "-m", "p@5"],
    ],
)
def test_broken_input_files(inputs: Path, kind: str, argv: list[str]) -> None:
    name = "bad.parquet" if "parquet" in kind else "bad.csv"
    (inputs / name).write_bytes(BROKEN[kind])
    line = _one_error_line(receval(*[a.format(f=name) for a in argv], cwd=inputs))
    assert name in line, line
    assert not (inputs / "o" / "manifest.json").exists()


def test_text_item_features_are_categories(inputs: Path) -> None:
    pd.DataFrame({"item": range(300), "genre": [f"g{i % 4}|h{i % 3}" for i in range(300)]}).to_csv(
        inputs / "feats.csv", index=False
    )
    ok = receval(
        "evaluate",
        "recs.csv",
        "truth.csv",
        "-m",
        "ild@10",
        "--item-features",
        "feats.csv",
        "-o",
        "json",
        cwd=inputs,
    )
    assert ok.returncode == 0, ok.stderr
    assert 0 < json.loads(ok.stdout)["metrics"]["ild@10"] <= 1
    pd.DataFrame({"item": range(300), "genre": ["a"] * 300, "x": range(300)}).to_csv(
        inputs / "mixed.csv", index=False
    )
    line = _one_error_line(
        receval(
            "evaluate",
            "recs.csv",
            "truth.csv",
            "-m",
            "ild@10",
            "--item-features",
            "mixed.csv",
            cwd=inputs,
        )
    )
    assert "mixed.csv" in line and "--item-features mixes numeric columns (x)" in line


def test_string_grades_in_inspect(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item,relevance\n1,2,3\n\n1,3,high\n")
    line = _one_error_line(receval("inspect", "--truth", "t.csv", cwd=tmp_path))
    assert "t.csv, line 4, user 1" in line and "'high'" in line


def test_compare_seed_and_errors_name_the_file(inputs: Path) -> None:
    line = _one_error_line(
        receval(
            "compare",
            "truth.csv",
            "recs.csv",
            "recs2.csv",
            "-m",
            "ndcg@10",
            "--seed",
            "-1",
            cwd=inputs,
        )
    )
    assert "--seed -1 is not allowed" in line
    text = (inputs / "recs2.csv").read_text().splitlines()
    text.insert(5, text[4])  # a duplicate row, on line 6
    (inputs / "recs2.csv").write_text("\n".join(text) + "\n")
    for command in ("compare", "report"):
        line = _one_error_line(
            receval(command, "truth.csv", "recs.csv", "recs2.csv", "-m", "ndcg@10", cwd=inputs)
        )
        assert "recs2.csv, line 6" in line, line


def test_out_of_memory(tmp_path: Path) -> None:
    n = 3_000_000
    pd.DataFrame(
        {
            "user": np.repeat(np.arange(n // 100), 100),
            "item": np.tile(np.arange(100), n // 100),
            "score": np.random.default_rng(0).random(n),
        }
    ).to_parquet(tmp_path / "recs.parquet")
    pd.DataFrame({"user": np.arange(n // 100), "item": 0}).to_parquet(tmp_path / "truth.parquet")

    def limit(mib: int) -> Any:
        return lambda: resource.setrlimit(resource.RLIMIT_AS, (mib * 2**20, mib * 2**20))

    argv = ["evaluate", "recs.parquet", "truth.parquet", "-m", "ndcg@100", "-m", "rbp@100"]
    clean = 0
    for mib in (600, 500, 400, 350):
        proc = receval(*argv, "-m", "auc", cwd=tmp_path, limit=limit(mib))
        if proc.returncode == 0:
            continue  # enough memory at this limit
        line = _one_error_line(proc)
        assert "out of memory" in line and "Parquet" in line, line
        clean += 1
    assert clean, "no memory limit gave the out-of-memory message"


# -- -q --------------------------------------------------------------------------------------


QUIET = [
    ["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "--per-user", "pu.csv"],
    ["compare", "truth.csv", "recs.csv", "recs2.csv", "-m", "ndcg@10", "--n-resamples", "200"],
    ["report", "truth.csv", "recs.csv", "recs2.csv", "-m", "ndcg@10", "--out", "r.html"],
    ["split", "log.csv", "--out", "parts"],
    ["check", "--recs", "recs.csv", "--test", "truth.csv"],
    ["demo", "--users", "300", "--out", "d"],
    ["inspect", "recs.csv"],
]
QUIET_FLAG = {"inspect": []}  # inspect prints its findings on stdout and has no -q


@pytest.mark.parametrize("argv", QUIET, ids=[a[0] for a in QUIET])
def test_quiet_prints_nothing_on_stderr(inputs: Path, argv: list[str]) -> None:
    proc = receval(*argv, *QUIET_FLAG.get(argv[0], ["-q"]), cwd=inputs)
    assert proc.returncode in (0, 1), proc.stderr  # check exits 1 when it finds something
    assert proc.stderr == ""


def test_per_user_csv_keeps_ids_with_line_breaks(tmp_path: Path) -> None:
    import pyarrow.csv as pcsv

    users = ["a\rb", "c\nd", 'e"f', "g,h", "=1+1", "plain"]
    pd.DataFrame({"user": users, "item": 1, "score": 1.0}).to_parquet(tmp_path / "r.parquet")
    pd.DataFrame({"user": users, "item": 1}).to_parquet(tmp_path / "t.parquet")
    proc = receval(
        "evaluate", "r.parquet", "t.parquet", "-m", "p@1", "--per-user", "pu.csv", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(pd.read_csv(tmp_path / "pu.csv")["user"]) == sorted(users)
    assert sorted(pcsv.read_csv(tmp_path / "pu.csv").column("user").to_pylist()) == sorted(users)


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "recs.csv", "truth.csv", "-m", "p@5"],
        ["compare", "truth.csv", "recs.csv", "recs2.csv", "-m", "p@5"],
        ["split", "log.csv", "--out", "o"],
        ["check", "--recs", "recs.csv", "--test", "truth.csv"],
        ["inspect", "recs.csv"],
    ],
    ids=lambda a: a[0],
)
def test_a_column_named_that_is_not_there(inputs: Path, argv: list[str]) -> None:
    """--user-col names a column: when it is missing, an error, never a fallback."""
    line = _one_error_line(receval(*argv, "--user-col", "uid", cwd=inputs))
    assert "no user column 'uid'" in line and "columns found: user" in line, line
