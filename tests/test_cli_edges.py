"""The command line's edges: what it prints of what the user gave it.

Each test pins one defect of a user audit: install hints whose extra
vanished from ``--help`` (rich markup), rich markup and terminal control
characters in file names, ids and names, NumPy reprs in messages, Python
keywords suggested on the command line, output files written in a format
their name does not say, and the flags of the truth's columns, of graded
relevance and of the demo's columns.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import typer

import receval
from receval import EvalOptions, InputError, OptionError, ReceValError
from receval.cli import app, main
from receval.errors import for_cli, for_python, option

RECS = "user,item,score\nu1,1,1.0\nu1,6,0.9\nu1,8,0.8\nu2,1,1.0\nu2,2,0.9\nu2,3,0.8\n"
TRUTH = "user,item,relevance\nu1,1,1\nu1,6,1\nu2,2,1\nu3,2,1\n"
ESC, BEL = "\x1b[31mEVIL", "u\x07"  # ids that would recolour the terminal, ring its bell


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _raw_controls(text: str) -> list[str]:
    """The control characters (category Cc) of ``text`` other than line breaks."""
    return [c for c in text if (ord(c) < 32 or 0x7F <= ord(c) <= 0x9F) and c != "\n"]


# -- 1. --help shows the extras of its install hints ----------------------------------------


def _help(capsys: pytest.CaptureFixture[str], *names: str) -> str:
    code, out, err = run(capsys, *names, "--help")
    assert code == 0, err
    return out


def test_help_shows_the_extra_of_every_install_hint(capsys: pytest.CaptureFixture[str]) -> None:
    evaluate = _help(capsys, "evaluate")
    assert "pip install 'receval[spark]'" in evaluate
    assert '"receval[mlflow]"' in evaluate
    assert "'receval')" not in evaluate and '"receval")' not in evaluate
    assert '"receval[mlflow]"' in _help(capsys, "compare")
    assert '"receval[plot]"' in _help(capsys, "report")


def test_every_bracket_of_every_help_text_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole class: any word with brackets in a help text (an extra, a
    Spark master's local[4]) reaches --help as written."""
    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    checked = 0
    for name, cmd in commands.items():
        shown = _help(capsys, name)
        texts = [cmd.help or "", *(getattr(p, "help", None) or "" for p in cmd.params)]
        written = " ".join(texts).replace("\\[", "[")  # as the source has it
        for word in re.findall(r"[\w.'\"-]*\[[^\]\s]*\][\w'\"]*", written):
            assert word in shown, f"{name} --help lost {word!r}"
            checked += 1
    assert checked >= 3  # [spark], [mlflow], [plot] at least


# -- 2. rich markup in what the user gave: text, never markup --------------------------------


@pytest.fixture
def marked(tmp_path: Path) -> dict[str, Path]:
    """Files whose paths hold rich markup: ``[/]`` (a closing tag with nothing
    to close) and ``[red]x[/red]``; the recommendations' columns have other
    names, so that reading them prints a note naming the file."""
    recs = RECS.replace("user,item,score", "uid,iid,score")
    return {
        "close": _write(tmp_path / "d[" / "]recs.csv", recs),  # .../d[/]recs.csv
        "red": _write(tmp_path / "[red]x[" / "red].csv", recs),  # .../[red]x[/red].csv
        "truth": _write(tmp_path / "truth.csv", TRUTH),
        "dup": _write(tmp_path / "[red]x[" / "red]dup.csv", RECS + "u1,1,0.1\n"),
    }


@pytest.mark.parametrize("which", ["close", "red"])
def test_markup_in_a_file_name_is_printed_as_written(
    capsys: pytest.CaptureFixture[str], marked: dict[str, Path], which: str
) -> None:
    path = marked[which]
    assert "[/]" in str(path) or "[red]x[/red]" in str(path)
    code, _, err = run(capsys, "evaluate", path, marked["truth"], "-m", "p@2")
    assert code == 0, err
    assert f"{path}: using column uid as user" in err, err  # the note names the file whole


def test_markup_in_a_file_name_of_an_error_is_printed_as_written(
    capsys: pytest.CaptureFixture[str], marked: dict[str, Path], tmp_path: Path
) -> None:
    dup = marked["dup"]
    code, _, err = run(capsys, "evaluate", dup, marked["truth"], "-m", "p@2")
    assert code == 2 and "internal error" not in err
    assert err.startswith(f"error: {dup}, line 8, user 'u1', item 1:"), err
    missing = tmp_path / "no[" / "]such[red]x[/red].csv"
    code, _, err = run(capsys, "evaluate", missing, marked["truth"], "-m", "p@2")
    assert code == 2 and str(missing) in err and "internal error" not in err, err


def test_markup_and_emoji_codes_in_names_are_printed_as_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    truth = _write(tmp_path / "truth.csv", TRUTH)
    recs = _write(tmp_path / "recs.csv", RECS)
    train = _write(tmp_path / "train.csv", "user,item\nu1,1\n")
    names = "a[/],b[red]x[/red],:smile:"
    argv = ["compare", truth, recs, recs, recs, "--names", names, "-m", "p@2"]
    code, out, err = run(capsys, *argv, "--n-resamples", "20", "--train", train, "--remove-seen")
    assert code == 0, err
    for name in names.split(","):
        assert name in out
    assert "a[/]: 1 recommendation rows seen in --train removed" in err
    assert "b[red]x[/red]: 1 recommendation rows" in err
    code, out, err = run(capsys, *argv, "--n-resamples", "20", "-o", "json")
    assert code == 0, err
    assert [s["name"] for s in json.loads(out)["systems"]] == names.split(",")


# -- 3. control characters: escaped on the terminal, kept in files ---------------------------


@pytest.fixture
def evil(tmp_path: Path) -> dict[str, Path]:
    recs = f"user,item,score\nu1,1,1.0\nu1,{ESC},0.9\n{BEL},1,1.0\n"
    return {
        "recs": _write(tmp_path / "recs.csv", recs),
        "truth": _write(tmp_path / "truth.csv", f"user,item,relevance\nu1,1,1\n{BEL},1,1\n"),
        "groups": _write(tmp_path / "groups.csv", f"user,grp\nu1,{ESC}\n{BEL},ok\n"),
    }


def test_ids_with_control_characters_are_escaped_on_the_terminal(
    capsys: pytest.CaptureFixture[str], evil: dict[str, Path]
) -> None:
    argv = ["check", "--recs", evil["recs"], "--test", evil["truth"], "--train", evil["truth"]]
    code, out, err = run(capsys, *argv, "-k", 3)
    assert code == 1, err  # test is train: leakage
    assert "\\x1b[31mEVIL" in out and "u\\x07" in out  # visible, and not dropped
    assert not _raw_controls(out)
    argv = ["evaluate", evil["recs"], evil["truth"], "-m", "p@2", "--user-groups", evil["groups"]]
    code, out, err = run(capsys, *argv)  # -o table: the group's label
    assert code == 0, err
    assert "\\x1b[31mEVIL" in out and not _raw_controls(out)
    names = f"A{ESC},B\x07"
    argv = ["compare", evil["truth"], evil["recs"], evil["recs"], "--names", names, "-m", "p@2"]
    code, out, err = run(capsys, *argv, "--n-resamples", "20")
    assert code == 0, err
    assert "A\\x1b[31mEVIL" in out and "B\\x07" in out and not _raw_controls(out)


def test_control_characters_in_an_error_are_escaped(
    capsys: pytest.CaptureFixture[str], evil: dict[str, Path], tmp_path: Path
) -> None:
    missing = tmp_path / f"no{ESC}\r.csv"
    code, _, err = run(capsys, "evaluate", missing, evil["truth"], "-m", "p@2")
    assert code == 2 and "\\x1b[31mEVIL\\r.csv" in err and not _raw_controls(err), err
    dup = _write(tmp_path / f"dup{ESC}.csv", f"user,item,score\n{BEL},x\x07,1\n{BEL},x\x07,0.5\n")
    code, _, err = run(capsys, "evaluate", dup, evil["truth"], "-m", "p@2")
    assert code == 2 and "dup\\x1b[31mEVIL.csv, line 3" in err, err
    assert "user 'u\\x07'" in err and not _raw_controls(err)
    assert len(err.strip().splitlines()) == 1


def test_files_and_data_outputs_keep_ids_as_they_are(
    capsys: pytest.CaptureFixture[str], evil: dict[str, Path], tmp_path: Path
) -> None:
    per_user = tmp_path / "pu.csv"
    argv = ["evaluate", evil["recs"], evil["truth"], "-m", "p@2", "--per-user", per_user]
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == 0, err
    assert set(pd.read_csv(per_user)["user"]) == {"u1", BEL}  # the file: ids exact
    names = f"A{ESC},B\r:smile:"
    argv = ["compare", evil["truth"], evil["recs"], evil["recs"], "--names", names, "-m", "p@2"]
    code, out, err = run(capsys, *argv, "--n-resamples", "20", "-o", "json")
    assert code == 0, err
    assert [s["name"] for s in json.loads(out)["systems"]] == names.split(",")
    code, out, err = run(capsys, *argv, "--n-resamples", "20", "-o", "csv")
    assert code == 0, err
    assert ESC in out and "B\r:smile:" in out  # CSV on stdout: data, byte for byte


# -- 4. values as users wrote them, never np.int64(1) ---------------------------------------


def test_messages_show_numpy_values_as_their_values() -> None:
    err = InputError("bad", source="recs.csv", user=np.str_("abc"), item=np.int64(7))
    assert str(err) == "recs.csv, user 'abc', item 7: bad"
    assert err.cli_message() == str(err)
    assert for_python(option("threshold", np.float64(4.0))) == "threshold=4.0"
    assert for_cli(option("threshold", np.float64(4.0))) == "--threshold 4.0"
    bad = OptionError("ties", np.str_("x"), allowed=(np.str_("item"), np.str_("score")))
    assert str(bad) == "ties='x' is not allowed: expected one of 'item', 'score'"
    assert bad.cli_message() == "--ties x is not allowed: expected one of item, score"
    # a message some caller formatted with !r of NumPy scalars
    text = "user np.int64(1), item np.str_('a'), grade np.float64(0.5), np.True_"
    for e in (ReceValError(text), InputError(text)):
        assert str(e) == e.cli_message() == "user 1, item 'a', grade 0.5, True"


def test_errors_of_both_doors_show_ids_as_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(tmp_path / "recs.csv", "user,item,score\n1,1,1.0\n2,1,1.0\n")
    truth = _write(tmp_path / "truth.csv", "user,item,relevance\n1,1,1\n2,2,1\n")
    groups = _write(tmp_path / "groups.csv", "user,grp\n1,a\n1,b\n2,a\n")
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "p@2", "--user-groups", groups)
    assert code == 2 and "user 1 is in 2 groups" in err and "np." not in err, err
    assert err.startswith(f"error: {groups}, user 1:"), err  # names the file it read
    with pytest.raises(InputError) as info:
        receval.evaluate(
            pd.read_csv(recs), pd.read_csv(truth), "p@2", user_groups=pd.read_csv(groups)
        )
    assert "user 1 is in 2 groups" in str(info.value) and "np." not in str(info.value)
    with pytest.raises(ReceValError, match=r"k must be an integer >= 1; got 0$"):
        receval.check(recs=pd.read_csv(recs), k=np.int64(0))


# -- 5. receval check: flags on the command line, keywords in Python --------------------------


def test_check_hints_speak_the_syntax_of_their_door(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    train = _write(tmp_path / "train.csv", "user,item\nu1,1\nu1,1\n")
    test = _write(tmp_path / "test.csv", "user,item\nu1,6\nu2,2\nu4,9\n")
    recs = _write(tmp_path / "recs.csv", RECS)
    argv = ["check", "--train", train, "--test", test, "--recs", recs, "-k", "5"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    for flag in ("--missing-recs zero", "-k 5", "--drop-unseen", "--duplicates keep"):
        assert flag in out, flag
    assert not re.search(r"\w=", out), out  # no keyword=value anywhere
    report = receval.check(
        train=pd.read_csv(train), test=pd.read_csv(test), recs=pd.read_csv(recs), k=5
    )
    text = str(report)
    for keyword in ("missing_recs='zero'", "k=5", "drop_unseen_users=True", "duplicates='keep'"):
        assert keyword in text, keyword
    assert "--" not in text
    for finding in report.findings:
        assert "--" not in finding.message and not re.search(r"\w=", finding.cli_message or "")


def test_check_errors_speak_the_syntax_of_their_door(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(tmp_path / "recs.csv", RECS)
    code, _, err = run(capsys, "check", "--recs", recs, "-k", "0")
    assert code == 2 and err.strip() == "error: -k must be an integer >= 1; got 0", err
    train = _write(tmp_path / "train.csv", "user,item\nu1,1\n")
    test = _write(tmp_path / "test.csv", "user,item\nu1,6\n")
    code, _, err = run(capsys, "check", "--train", train, "--test", test, "--chronological")
    assert code == 2 and "--timestamp-col" in err and "timestamp_col" not in err, err
    assert err.startswith(f"error: {train}:"), err  # names the file, not "train"
    with pytest.raises(InputError, match="timestamp_col=") as info:
        receval.check(train=pd.read_csv(train), test=pd.read_csv(test), chronological=True)
    assert "--" not in str(info.value)


# -- 6. an output's suffix says its format: any other is an error -----------------------------


@pytest.mark.parametrize("name", ["pu.xlsx", "pu", "pu.csv.gz", "pu.json"])
def test_per_user_refuses_a_suffix_it_does_not_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    target = tmp_path / name
    missing = tmp_path / "no-such-recs.csv"  # never read: the suffix is checked first
    code, _, err = run(capsys, "evaluate", missing, missing, "-m", "p@2", "--per-user", target)
    assert code == 2, err
    line = err.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: --per-user {target}:")
    assert ".csv" in line and ".parquet" in line and "no such file" not in line
    assert not target.exists()


def test_per_user_refuses_a_suffix_spark_does_not_write_before_starting_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "pu.xlsx"
    argv = ["evaluate", "--engine", "spark", tmp_path / "r.csv", tmp_path / "t.csv", "-m", "p@2"]
    code, _, err = run(capsys, *argv, "--per-user", target)
    assert code == 2 and err.startswith(f"error: --per-user {target}:") and ".parquet" in err


@pytest.mark.parametrize("name", ["pu.csv", "PU.CSV", "pu.parquet", "pu.pq"])
def test_per_user_writes_the_format_its_suffix_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    recs = _write(tmp_path / "recs.csv", RECS)
    truth = _write(tmp_path / "truth.csv", TRUTH)
    target = tmp_path / name
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "p@2", "--per-user", target, "-q")
    assert code == 0, err
    is_csv = target.suffix.lower() == ".csv"
    frame = pd.read_csv(target) if is_csv else pd.read_parquet(target)
    assert target.read_bytes().startswith(b"PAR1") != is_csv
    assert list(frame["user"]) == ["u1", "u2", "u3"]


def test_report_out_refuses_a_name_that_is_not_html(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(tmp_path / "recs.csv", RECS)
    truth = _write(tmp_path / "truth.csv", TRUTH)
    for name in ("r.txt", "report", "r.pdf"):
        target = tmp_path / name
        code, _, err = run(capsys, "report", truth, recs, "-m", "p@2", "--out", target)
        assert code == 2 and err.startswith(f"error: --out {target}:"), err
        assert ".html" in err and not target.exists()
    target = tmp_path / "r.HTM"
    code, _, err = run(capsys, "report", truth, recs, "-m", "p@2", "--out", target, "-q")
    assert code == 0, err
    assert target.read_text().startswith("<!DOCTYPE html>")


# -- 7. new flags: the truth's columns, graded relevance, the demo's columns ------------------


def _truth_columns_differ(tmp_path: Path) -> tuple[Path, Path, Path]:
    recs = _write(tmp_path / "recs.csv", RECS.replace("user,item", "uid,iid"))
    truth = _write(tmp_path / "truth.csv", TRUTH.replace("user,item", "customer,product"))
    same = _write(tmp_path / "same.csv", TRUTH.replace("user,item", "uid,iid"))
    return recs, truth, same


def test_python_side_of_the_truth_columns_exists() -> None:
    opts = EvalOptions(truth_user_col="customer", truth_item_col="product")
    assert (opts.truth_user_col, opts.truth_item_col) == ("customer", "product")


@pytest.mark.parametrize("name", ["evaluate", "compare", "report", "explain", "inspect"])
def test_every_command_reading_a_truth_names_its_columns(name: str) -> None:
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    flags = {o for p in cmd.params for o in p.opts}
    assert {"--truth-user-col", "--truth-item-col", "--user-col", "--item-col"} <= flags


def test_truth_columns_of_their_own(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    recs, truth, same = _truth_columns_differ(tmp_path)
    cols = ["--user-col", "uid", "--item-col", "iid"]
    code, out, err = run(capsys, "evaluate", recs, same, "-m", "ndcg@3", *cols, "--json")
    assert code == 0, err
    expected = json.loads(out)["metrics"]
    truth_cols = ["--truth-user-col", "customer", "--truth-item-col", "product"]
    code, out, err = run(
        capsys, "evaluate", recs, truth, "-m", "ndcg@3", *cols, *truth_cols, "--json"
    )
    assert code == 0, err
    found = json.loads(out)
    assert found["metrics"] == expected
    assert found["parameters"]["truth_user_col"] == "customer"
    argv = ["compare", truth, recs, "-m", "ndcg@3", *cols, *truth_cols, "--n-resamples", "20"]
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == 0, err
    assert _compared(out) == pytest.approx(expected["ndcg@3"])
    html = tmp_path / "r.html"
    argv = ["report", truth, recs, "-m", "ndcg@3", *cols, *truth_cols, "--out", html, "-q"]
    code, _, err = run(capsys, *argv, "--n-resamples", "20")
    assert code == 0 and html.exists(), err
    code, out, err = run(capsys, "inspect", truth, "--truth", *truth_cols)
    assert code == 0 and "column customer read as user" in out, err


def test_every_option_of_an_evaluation_is_a_flag_of_evaluate() -> None:
    """Python's options and the command line's flags do not drift apart: each
    option of :data:`receval.evaluation.options.OPTIONS` (but the rating
    inputs' columns) is a flag of evaluate, compare and report, spelt as declared."""
    from receval.evaluation.options import OPTIONS

    for name in ("evaluate", "compare", "report"):
        cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
        flags = {"/".join([*p.opts, *p.secondary_opts]) for p in cmd.params}
        missing = [o.flag for o in OPTIONS if not o.ratings and o.flag not in flags]
        assert not missing, (name, missing)


def test_a_truth_column_that_is_not_there_names_its_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs, truth, _ = _truth_columns_differ(tmp_path)
    argv = ["evaluate", recs, truth, "-m", "p@2", "--user-col", "uid", "--item-col", "iid"]
    code, _, err = run(capsys, *argv, "--truth-user-col", "client", "--truth-item-col", "product")
    assert code == 2 and str(truth) in err and "'client'" in err and "customer" in err, err
    assert "truth_user_col" not in err


def test_no_graded_reads_every_truth_row_as_relevant_with_gain_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs = _write(tmp_path / "recs.csv", RECS)
    graded = _write(tmp_path / "graded.csv", TRUTH.replace("u1,6,1", "u1,6,3"))
    binary = _write(tmp_path / "binary.csv", TRUTH)

    def ndcg(truth: Path, *flags: str) -> Any:
        code, out, err = run(capsys, "evaluate", recs, truth, "-m", "ndcg@3", *flags, "--json")
        assert code == 0, err
        return json.loads(out)["metrics"]["ndcg@3"]

    assert ndcg(graded) != ndcg(binary)  # receval's default: grades are gains
    assert ndcg(graded, "--no-graded") == ndcg(binary)
    assert ndcg(graded, "--graded") == ndcg(graded)
    assert ndcg(graded, "--convention", "receval", "--no-graded") == ndcg(binary)


def test_no_graded_on_compare_and_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in ("evaluate", "compare", "report"):
        cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
        pair = [p for p in cmd.params if p.opts == ["--graded"]]
        assert len(pair) == 1 and pair[0].secondary_opts == ["--no-graded"], name
    recs = _write(tmp_path / "recs.csv", RECS)
    graded = _write(tmp_path / "graded.csv", TRUTH.replace("u1,6,1", "u1,6,3"))
    binary = _write(tmp_path / "binary.csv", TRUTH)
    means = {}
    for truth, flags in ((graded, []), (graded, ["--no-graded"]), (binary, [])):
        argv = ["compare", truth, recs, "-m", "ndcg@3", "--n-resamples", "20", "-o", "json"]
        code, out, err = run(capsys, *argv, *flags)
        assert code == 0, err
        assert json.loads(out)["settings"]["evaluate"]["graded"] is not bool(flags)
        means[truth.stem, bool(flags)] = _compared(out)
    assert means["graded", True] == means["binary", False] != means["graded", False]


def _compared(out: str) -> float:
    """The one system's mean of the one metric of ``compare -o json``."""
    (metric,) = json.loads(out)["metrics"].values()
    (system,) = metric["systems"].values()
    return float(system["mean"])


def _demo_log(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = [
        (u, int(i), int(rng.integers(1, 6)), 1000 + 10 * j)
        for u in range(30)
        for j, i in enumerate(rng.choice(50, 10, replace=False))
    ]
    log = pd.DataFrame(rows, columns=["uid", "iid", "stars", "ts"])
    path = tmp_path / "log.csv"
    log.to_csv(path, index=False)
    return path


def test_demo_column_flags_reach_its_python_keywords(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import receval.workflow.demo as demo

    seen: dict[str, Any] = {}
    monkeypatch.setattr(demo, "run_demo", lambda out, **kw: seen.update(kw))
    log = _demo_log(tmp_path)
    argv = ["demo", "--interactions", log, "--out", tmp_path / "d", "-q"]
    code, _, err = run(capsys, *argv, "--rating-col", "stars", "--timestamp-col", "ts")
    assert code == 0, err
    assert seen["rating_col"] == "stars" and seen["timestamp_col"] == "ts"
    assert seen["interactions"] == log
    seen.clear()  # with --user-col the command reads the file itself, every column named
    code, _, err = run(capsys, *argv, "--user-col", "uid", "--rating-col", "stars")
    assert code == 0, err
    frame = seen["interactions"]
    assert "rating" in frame.columns and "rating_col" not in seen
    code, _, err = run(capsys, "demo", "--rating-col", "stars", "--out", tmp_path / "e")
    assert code == 2 and "--rating-col" in err and "--interactions" in err, err


@pytest.mark.parametrize("read_here", [False, True])
def test_demo_reads_the_rating_and_timestamp_columns_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, read_here: bool
) -> None:
    log = _demo_log(tmp_path)
    argv = ["demo", "--interactions", log, "--out", tmp_path / "d"]
    argv += ["--rating-col", "stars", "--timestamp-col", "ts"]
    if read_here:
        argv += ["--user-col", "uid", "--item-col", "iid"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "as graded relevance" in out and "user_time" in out
    assert "no timestamp column" not in out and "no rating column" not in out
