"""receval.io.write and the commands that write: whole files, links replaced not followed,
modes from the umask or the file replaced, and never over one of the command's inputs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from receval.cli import main
from receval.errors import OutputError, ReceValError
from receval.io.write import atomic_write, atomic_write_text, refuse_inputs, umask

RECS = "user,item,rank\nu1,1,1\nu1,2,2\nu2,3,1\n"
TRUTH = "user,item\nu1,1\nu2,2\n"


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert umask() == 0o027
        atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o640  # not the 0o600 of a temporary file


def test_existing_mode_is_kept(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_text("old")
    p.chmod(0o604)
    atomic_write_text(p, "new")
    assert p.read_text() == "new" and _mode(p) == 0o604


def test_a_link_is_replaced_not_followed(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    link = tmp_path / "out.txt"
    link.symlink_to(precious)
    atomic_write_text(link, "new")
    assert precious.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == "new"


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_failure_leaves_the_old_file_and_no_temporary(tmp_path: Path, exc: BaseException) -> None:
    p = tmp_path / "a.txt"
    p.write_text("old")

    def write(tmp: Path) -> None:
        tmp.write_text("half")
        raise exc

    # an OSError becomes an OutputError naming the target, never the temporary file
    with pytest.raises(OutputError if isinstance(exc, OSError) else type(exc)) as info:
        atomic_write(p, write)
    if isinstance(exc, OSError):
        assert str(info.value) == (
            f"cannot write {p}: no space left on the device; free some space or write elsewhere"
        )
    assert p.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]


def test_refuse_inputs_compares_files_not_spellings(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("x")
    (tmp_path / "link.csv").symlink_to(tmp_path / "in.csv")
    (tmp_path / "sub").mkdir()
    with pytest.raises(ReceValError, match="would write over the truth file"):
        refuse_inputs(
            ("--out", tmp_path / "sub" / ".." / "link.csv"), [("truth file", tmp_path / "in.csv")]
        )
    refuse_inputs(("--out", tmp_path / "other.csv"), [("truth file", tmp_path / "in.csv")])


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "recs.csv").write_text(RECS)
    (tmp_path / "truth.csv").write_text(TRUTH)
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@2", "--per-user", "recs.csv"],
            "--per-user recs.csv would write over the recommendations file recs.csv",
        ),
        (
            ["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@2", "--per-user", "./truth.csv"],
            "--per-user truth.csv would write over the truth file truth.csv",
        ),
        (
            ["report", "truth.csv", "recs.csv", "--out", "truth.csv"],
            "--out truth.csv would write over the truth file truth.csv",
        ),
        (
            ["report", "truth.csv", "recs.csv", "--out", "recs.csv"],
            "--out recs.csv would write over the recommendations file 1 recs.csv",
        ),
    ],
)
def test_a_command_never_writes_over_its_input(
    files: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert main(argv) == 2
    assert said in capsys.readouterr().err
    assert (files / "recs.csv").read_text() == RECS
    assert (files / "truth.csv").read_text() == TRUTH


def test_split_refuses_its_log_as_an_output(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = pd.DataFrame({"user": [1, 1, 1, 2, 2, 2], "item": range(6), "timestamp": range(6)})
    log.to_parquet(files / "train.parquet")
    before = (files / "train.parquet").read_bytes()
    assert main(["split", "train.parquet", "--out", "."]) == 2
    err = capsys.readouterr().err
    assert "--out . (train.parquet) would write over the interactions file train.parquet" in err
    assert (files / "train.parquet").read_bytes() == before


def _no_space(*args: object, **kwargs: object) -> None:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("fault", ["a file as --out", "a full disk"])
def test_split_says_what_it_wrote_only_once_written(
    files: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    log = pd.DataFrame({"user": [1, 1, 1, 2, 2, 2], "item": range(6), "timestamp": range(6)})
    log.to_parquet(files / "log.parquet")
    with pytest.MonkeyPatch.context() as mp:
        if fault == "a file as --out":
            (files / "sp").write_text("not a folder")
            said = "cannot write into sp: it is a file, not a folder"
        else:
            mp.setattr(pd.DataFrame, "to_parquet", _no_space)
            said = "no space left on the device"
        assert main(["split", "log.parquet", "--out", "sp"]) == 2
        out, err = capsys.readouterr()
    assert out == ""  # no summary of a split that was not written
    assert said in err and "train:" not in err and "Traceback" not in err
    assert not (files / "sp" / "manifest.json").exists()
    assert main(["split", "log.parquet", "--out", "written"]) == 0  # once written, it is said
    out, err = capsys.readouterr()
    assert out.startswith("split: user_time") and "train: written/train.parquet" in err


def test_split_per_user_and_report_replace_links(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = files / "precious.txt"
    precious.write_text("keep me")
    log = pd.DataFrame({"user": [1, 1, 1, 2, 2, 2], "item": range(6), "timestamp": range(6)})
    log.to_parquet(files / "log.parquet")
    (files / "sp").mkdir()
    for name in ("test.parquet", "split.json"):
        (files / "sp" / name).symlink_to(precious)
    (files / "pu.csv").symlink_to(precious)
    (files / "r.html").symlink_to(precious)
    assert main(["split", "log.parquet", "--out", "sp"]) == 0
    assert main(["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@2", "--per-user", "pu.csv"]) == 0
    assert main(["report", "truth.csv", "recs.csv", "--out", "r.html", "-q"]) == 0
    assert precious.read_text() == "keep me"
    for p in (
        files / "sp" / "test.parquet",
        files / "sp" / "split.json",
        files / "pu.csv",
        files / "r.html",
    ):
        assert not p.is_symlink() and p.stat().st_size > 0
    assert not [p for p in files.rglob(".*")]  # no temporary files left
