"""Outputs the user owns: no door writes over an input, checks its targets
before any work, names the target (never a staging file) when writing fails,
and says what is wrong in the caller's own syntax."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.errors import OutputError, ReceValError
from receval.evaluation.result import clean
from receval.io.write import OutputSet

TRUTH = "user,item\nu1,1\nu2,2\nu3,3\n"
RECS = "user,item,score\nu1,1,1\nu1,2,0.5\nu2,2,1\nu3,1,1\n"
LISTS = "session,step,item,rank\ns1,1,b,1\ns1,1,x,2\ns2,1,d,1\ns2,1,c,2\n"
SESSIONS = "session,item,time\ns1,a,1\ns1,b,2\ns2,c,1\ns2,d,2\n"


def cli(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``receval ARGV`` run in ``cwd``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "receval", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder (the current one) with a truth and a run."""
    (tmp_path / "t.csv").write_text(TRUTH)
    (tmp_path / "recs.csv").write_text(RECS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- 1. the Python doors of the report and the demo ------------------------------------


def test_report_out_is_an_html_page_never_an_input(files: Path) -> None:
    with pytest.raises(ReceValError, match=r"out='t.csv': receval writes no .csv file"):
        receval.report({"a": "recs.csv"}, "t.csv", "ndcg@3", out="t.csv", n_resamples=50)
    (files / "link.html").symlink_to("t.csv")
    with pytest.raises(ReceValError, match=r"out='link\.html' would write over the truth file"):
        receval.report({"a": "recs.csv"}, "t.csv", "ndcg@3", out="link.html", n_resamples=50)
    assert (files / "t.csv").read_text() == TRUTH


def test_report_save_refuses_an_input_and_another_suffix(files: Path) -> None:
    rep = receval.report({"a": "recs.csv"}, "t.csv", "ndcg@3", n_resamples=50)
    with pytest.raises(ReceValError, match=r"path='recs.csv': receval writes no .csv file"):
        rep.save("recs.csv")
    os.link(files / "recs.csv", files / "hard.html")  # the run's file by another name
    with pytest.raises(ReceValError, match="would write over the recommendations file"):
        rep.save("hard.html")
    assert (files / "recs.csv").read_text() == RECS
    assert rep.save("page.htm").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_run_demo_refuses_a_log_inside_its_folder(files: Path) -> None:
    (files / "pdm").mkdir()
    receval.synthetic_interactions(30, seed=0).to_csv(files / "pdm" / "mylog.csv", index=False)
    with pytest.raises(ReceValError, match="out_dir='pdm' would write into the folder holding"):
        receval.run_demo("pdm", interactions="pdm/mylog.csv", quiet=True)
    assert sorted(p.name for p in (files / "pdm").iterdir()) == ["mylog.csv"]


# -- 2. backtest --report, checked before any fold runs --------------------------------


@pytest.mark.parametrize("report", ["model2.py", "folder.html"])
def test_backtest_report_is_checked_before_the_folds(files: Path, report: str) -> None:
    (files / "log.csv").write_text("user,item,timestamp\n1,1,0\n2,1,0\n3,1,1\n3,2,2\n")
    (files / "model2.py").write_text("print('my model')\n")
    (files / "folder.html").mkdir()
    ran = files / "ran"
    model = f"touch {ran}; printf 'user,item,rank\\n3,1,1\\n' > {{out}}"
    argv = ["backtest", "log.csv", "--test-length", "1", "-m", "p@1", "--command", model]
    proc = cli(files, *argv, "--report", report)
    refused(proc, f"--report {report}")
    assert not ran.exists()  # no fold ran
    assert (files / "model2.py").read_text() == "print('my model')\n"


# -- 3. Comparison.to_csv and the JSON of infinities ------------------------------------


def _constant_difference() -> receval.Comparison:
    """x beats y by 0.5 for every user: t and d are infinite."""
    truth = {u: [1] for u in range(1, 6)}
    runs = {"x": {u: [1, 2] for u in truth}, "y": {u: [2, 3] for u in truth}}
    return receval.compare(runs, truth, "p@2", n_resamples=50)


def test_to_csv_replaces_a_link_and_names_its_target(files: Path) -> None:
    cmp = _constant_difference()
    (files / "victim.txt").write_text("mine\n")
    (files / "out.csv").symlink_to("victim.txt")
    cmp.to_csv(files / "out.csv")
    assert (files / "victim.txt").read_text() == "mine\n"
    assert not (files / "out.csv").is_symlink()
    assert (files / "out.csv").read_text(encoding="utf-8").startswith("metric,system")
    with pytest.raises(
        OutputError, match=r"cannot write .*nodir/x\.csv: its folder does not exist"
    ):
        cmp.to_csv(files / "nodir" / "x.csv")


def test_to_csv_is_whole_or_not_at_all(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cmp = _constant_difference()
    (files / "old.csv").write_text("old\n")
    real = Path.write_text

    def half_then_full(self: Path, text: str, *args: object, **kwargs: object) -> int:
        real(self, text[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full)
    with pytest.raises(OutputError, match=r"cannot write .*old.csv: no space left") as err:
        cmp.to_csv(files / "old.csv")
    monkeypatch.undo()
    assert err.value.path == str(files / "old.csv")
    assert (files / "old.csv").read_text() == "old\n"
    assert sorted(p.name for p in files.iterdir() if p.name.startswith(".")) == []


def test_json_writes_infinities_apart_from_undefined() -> None:
    found = json.loads(_constant_difference().to_json())
    (pair,) = next(iter(found["metrics"].values()))["comparisons"]
    assert pair["statistic"] == "inf" and pair["effect_size"] == "inf"
    assert pair["effect_ci"] == [None, None]  # undefined stays null
    assert clean([float("-inf"), float("nan"), 1.5]) == ["-inf", None, 1.5]


# -- 4. the TREC writers -----------------------------------------------------------------


def test_trec_writers_never_write_over_their_input(files: Path) -> None:
    (files / "run.txt").write_text("q1 Q0 d1 1 2.5 bm25\n")
    (files / "qrels.txt").write_text("q1 0 d1 1\n")
    with pytest.raises(ReceValError, match=r"would write over the recommendations file run\.txt"):
        receval.write_trec_run("run.txt", "./run.txt")
    with pytest.raises(ReceValError, match=r"would write over the truth file qrels\.txt"):
        receval.write_trec_qrels("qrels.txt", files / "qrels.txt")
    assert (files / "run.txt").read_text() == "q1 Q0 d1 1 2.5 bm25\n"
    assert (files / "qrels.txt").read_text() == "q1 0 d1 1\n"


# -- 5. every output target checked up front --------------------------------------------


def test_next_items_checks_every_target_before_writing_any(files: Path) -> None:
    (files / "lists.csv").write_text(LISTS)
    (files / "sess.csv").write_text(SESSIONS)
    (files / "dd.html").mkdir()
    argv = ["next-items", "lists.csv", "sess.csv", "-m", "mrr@2"]
    proc = cli(files, *argv, "--per-session", "ps.csv", "--report", "dd.html")
    refused(proc, "--report dd.html: it is a folder")
    assert not (files / "ps.csv").exists()
    proc = cli(files, *argv, "--by-position", "bp.csv", "--per-session", "nodir/ps.csv")
    refused(proc, "--per-session nodir/ps.csv: its folder does not exist")
    assert not (files / "bp.csv").exists()


def test_evaluate_checks_per_user_before_reading(files: Path) -> None:
    (files / "bad.csv").write_text("user,item,score\nu1,1,oops\n")  # an error to read
    proc = cli(files, "evaluate", "bad.csv", "t.csv", "-m", "ndcg@3", "--per-user", "nodir/x.csv")
    refused(proc, "cannot write --per-user nodir/x.csv: its folder does not exist")


# -- 6. a failed write names the target, not the set's staging folder --------------------


def test_a_full_disk_names_the_target_not_the_staging_file(files: Path) -> None:
    def full(path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError) as err, OutputSet(files / "sp", "split") as out:
        out.write("train.parquet", full)
    target = str(files / "sp" / "train.parquet")
    assert str(err.value).startswith(f"cannot write {target}: no space left")
    assert ".receval-new" not in str(err.value) and err.value.path == target


# -- 7. RECEVAL_TMPDIR ----------------------------------------------------------------------


@pytest.mark.parametrize(("where", "said"), [("nonexist", "does not exist"), ("afile", "a file")])
def test_a_bad_receval_tmpdir_is_named(files: Path, where: str, said: str) -> None:
    # unsorted by user: partitioned into the temporary folder
    pd.DataFrame({"user": [2, 2, 1], "item": [1, 2, 1], "rank": [1, 2, 1]}).to_parquet("r.pq")
    pd.DataFrame({"user": [2, 1], "item": [1, 1]}).to_parquet("t.pq")
    (files / "afile").write_text("")
    tmp = str(files / where)
    proc = cli(files, "evaluate", "r.pq", "t.pq", "-m", "ndcg@2", env={"RECEVAL_TMPDIR": tmp})
    refused(proc, f"RECEVAL_TMPDIR={tmp} names", said)
    assert "receval-" not in proc.stderr  # not the subfolder it would have made


# -- 8. a timestamp that is no time -----------------------------------------------------------


def test_split_names_the_bad_timestamp_and_warns_nothing(files: Path) -> None:
    (files / "badts.csv").write_text("user,item,timestamp\n1,1,5\n1,2,6\n2,1,7\n2,2,oops\n")
    proc = cli(files, "split", "badts.csv", "--out", "bts")
    refused(proc, "badts.csv, line 5", "holds 'oops'")  # the file's line, not the row
    assert "Warning" not in proc.stderr
    log = pd.DataFrame(
        {"user": [1, 1, 2, 2], "item": [1, 2, 1, 2], "timestamp": ["x", "b", "c", "d"]}
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ReceValError, match="holds 'x'"):
            receval.split(log, "user_time")
    assert [str(w.message) for w in seen] == []


# -- 9. an output flag given twice --------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["evaluate", "recs.csv", "t.csv", "-m", "ndcg@3"], "--per-user"),
        (["next-items", "lists.csv", "sess.csv", "-m", "mrr@2"], "--per-session"),
        (["next-items", "lists.csv", "sess.csv", "-m", "mrr@2"], "--report"),
        (
            ["backtest", "log.csv", "--test-length", "1", "-m", "p@1", "--command", "true {out}"],
            "--report",
        ),
    ],
)
def test_an_output_flag_given_twice_is_refused(files: Path, argv: list[str], flag: str) -> None:
    (files / "lists.csv").write_text(LISTS)
    (files / "sess.csv").write_text(SESSIONS)
    (files / "log.csv").write_text("user,item,timestamp\n1,1,0\n2,1,0\n3,1,1\n")
    suffix = ".html" if flag == "--report" else ".csv"
    proc = cli(files, *argv, flag, f"a{suffix}", flag, f"b{suffix}")
    refused(proc, f"{flag} is given 2 times")
    assert not (files / f"a{suffix}").exists() and not (files / f"b{suffix}").exists()


def test_a_set_is_not_written_into_another_sets_files(tmp_path: Path) -> None:
    """A set written into a folder whose files another set's manifest lists
    (a split into the demo's split folder) would leave that manifest listing
    other files and its readers unaware: refused, before anything is written."""
    outer = tmp_path / "d"
    with OutputSet(outer, "demo") as files:
        files.write("split/train.csv", lambda p: p.write_text("user,item\n1,2\n"))
        files.write("leaderboard.csv", lambda p: p.write_text("x\n"))
    before = (outer / "split" / "train.csv").read_text()
    with (
        pytest.raises(OutputError, match=r"lists split/train.csv"),
        OutputSet(outer / "split", "split") as files,
    ):
        files.write("train.csv", lambda p: p.write_text("changed\n"))
    assert (outer / "split" / "train.csv").read_text() == before
    with OutputSet(outer, "demo") as files:  # the outer set written again whole: fine
        files.write("split/train.csv", lambda p: p.write_text("user,item\n3,4\n"))
    with OutputSet(tmp_path / "elsewhere", "split") as files:
        files.write("train.csv", lambda p: p.write_text("user,item\n1,2\n"))
