"""No input is ever an output (issue #31, point 2): every input of every command,
whatever its flag, is refused as an output target (exit 2, one line naming both,
before any work or write), compared by file identity (a hard link, a symbolic
link), and an output folder may not hold an input. The commands that write files:
evaluate (--per-user), report (--out, --png), split and demo (--out), backtest
(--report) and next-items (--per-session, --by-position, --report); the audit at
the end fails when a command gains an output flag that is not covered here."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest
import typer.main

from receval.cli import app, main

RECS = "user,item,score\n1,1,1.0\n1,2,0.9\n1,3,0.8\n2,1,1.0\n2,2,0.9\n2,4,0.8\n"
TRUTH = "user,item,relevance\n1,1,1\n1,3,1\n2,2,1\n"
OFF_POLICY = (
    '{"estimates":{"ips":{"estimate":0.5,"low":0.4,"high":0.6,"ess":9.0,"rows":10}},'
    '"ci":0.95,"n_resamples":100,"seed":0,"notes":{"rows":10.0}}'
)
INPUTS = {  # file -> its text (every input a command takes, valid as such)
    "recs.csv": RECS,
    "truth.csv": TRUTH,
    "train.csv": "user,item\n1,5\n2,5\n2,3\n",
    "catalog.csv": "item\n1\n2\n3\n4\n5\n",
    "feats.csv": "item,genre\n1,a\n2,b\n3,a\n4,b\n5,a\n",
    "popular.csv": "item\n1\n5\n",
    "igroups.csv": "item,group\n1,head\n2,tail\n3,tail\n4,tail\n5,head\n",
    "ugroups.csv": "user,group\n1,x\n2,y\n",
    "props.csv": "item,propensity\n1,0.5\n2,0.25\n3,0.5\n4,1\n",  # evaluate --propensities
    "op.json": OFF_POLICY,  # report --off-policy: what `receval off-policy --json` writes
    "log.csv": "user,item,timestamp\n1,1,1\n1,2,2\n2,1,3\n2,3,4\n1,4,5\n",  # backtest LOG
    # next-items LISTS (the list after each prefix) and SESSIONS
    "lists.csv": "session,step,item,rank\ns1,1,2,1\ns1,1,3,2\ns1,2,4,1\ns2,1,5,1\n",
    "sessions.csv": "session,item,time\ns1,1,1\ns1,2,2\ns1,3,3\ns2,4,1\ns2,5,2\n",
}

#: an input flag -> (its file, its name in the error)
ITEM_FLAGS = {
    "--train": ("train.csv", "train file"),
    "--catalog": ("catalog.csv", "catalog file"),
    "--item-features": ("feats.csv", "item features file"),
    "--popular": ("popular.csv", "popular file"),
    "--item-groups": ("igroups.csv", "item groups file"),
    "--user-groups": ("ugroups.csv", "user groups file"),
}
ITEM_ARGS = [a for flag, (file, _) in ITEM_FLAGS.items() for a in (flag, file)]


def _evaluate(out_flag: str, out: str, *extra: str) -> list[str]:
    argv = ["evaluate", "recs.csv", "truth.csv", "-m", "p@2", *ITEM_ARGS, *extra]
    return [*argv, "--propensities", "props.csv", out_flag, out]


def _backtest(out_flag: str, out: str) -> list[str]:
    """The model is never run: the refusal comes first."""
    argv = ["backtest", "log.csv", "--command", "true {out}", "--test-length", "2", "-m", "p@2"]
    return [*argv, out_flag, out]


def _next_items(out_flag: str, out: str) -> list[str]:
    argv = ["next-items", "lists.csv", "sessions.csv", "-m", "mrr@2"]
    return [*argv, "--train", "train.csv", "--catalog", "catalog.csv", out_flag, out]


def _report(out_flag: str, out: str) -> list[str]:
    argv = ["report", "truth.csv", "recs.csv", "-m", "p@2", *ITEM_ARGS, "--n-resamples", "20"]
    argv += ["--off-policy", "op.json"]
    if out_flag == "--png":
        argv += ["--out", "report.html"]
    return [*argv, out_flag, out]


#: (command, output flag, whether the output is a folder) -> the command line
COMMANDS = {
    ("evaluate", "--per-user", False): _evaluate,
    ("evaluate --engine spark", "--per-user", True): (
        lambda flag, out: _evaluate(flag, out, "--engine", "spark", "--master", "local[1]")
    ),
    ("report", "--out", False): _report,
    ("report", "--png", True): _report,
    ("backtest", "--report", False): _backtest,
    ("next-items", "--per-session", False): _next_items,
    ("next-items", "--by-position", False): _next_items,
    ("next-items", "--report", False): _next_items,
}
#: the inputs of evaluate and report: (input flag, its file, its name in the error)
EVALUATE_INPUTS = [
    ("RECS", "recs.csv", "recommendations file"),
    ("TRUTH", "truth.csv", "truth file"),
    *((flag, file, label) for flag, (file, label) in ITEM_FLAGS.items()),
    ("--propensities", "props.csv", "propensities file"),
]
REPORT_INPUTS = [
    ("TRUTH", "truth.csv", "truth file"),
    ("RUN", "recs.csv", "recommendations file 1"),
    *((flag, file, label) for flag, (file, label) in ITEM_FLAGS.items()),
    ("--off-policy", "op.json", "off-policy file op"),  # named by the file's stem
]
#: each command's inputs (the first word of a COMMANDS key)
INPUTS_OF = {
    "evaluate": EVALUATE_INPUTS,
    "report": REPORT_INPUTS,
    "backtest": [("LOG", "log.csv", "interactions file")],
    "next-items": [
        ("LISTS", "lists.csv", "lists file"),
        ("SESSIONS", "sessions.csv", "sessions file"),
        ("--train", "train.csv", "train file"),
        ("--catalog", "catalog.csv", "catalog file"),
    ],
}
#: the outputs whose suffix is checked before the inputs: an input under its own name
#: (not .html) is refused by the suffix rule, still with exit 2 and nothing written.
#: None: next-items' --report was one, and said "receval writes no .csv file" for
#: ``--report lists.csv`` instead of the error the user needs first (issue #36)
SUFFIX_FIRST: set[tuple[str, str]] = set()
#: the output flags that write an HTML page (the links made to an input end in .html)
PAGES = {"--out", "--report"}

#: how the output names the input: its own name, a hard link, a symbolic link;
#: an output folder: also a folder holding it (itself, or through a link to it)
FILE_WAYS = ("same", "hard link", "symlink")
FOLDER_WAYS = (*FILE_WAYS, "folder holding it", "symlink to its folder")


def _cases() -> list[tuple[str, str, bool, str, str, str, str]]:
    cases = []
    for (command, out_flag, folder), _ in COMMANDS.items():
        for in_flag, file, label in INPUTS_OF[command.split()[0]]:
            for way in FOLDER_WAYS if folder else FILE_WAYS:
                cases.append((command, out_flag, folder, in_flag, file, label, way))
    return cases


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every input in a folder ``data`` (the current folder)."""
    data = tmp_path / "data"
    data.mkdir()
    for name, text in INPUTS.items():
        (data / name).write_text(text)
    monkeypatch.chdir(data)
    return data


def _state(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, st.st_ino


def _target(way: str, file: str, suffix: str) -> tuple[str, str]:
    """The output naming the input ``file`` (in the current folder) ``way``, and
    the input's path as now given (moved alone into a folder ``sub`` for a
    folder holding it)."""
    if way == "same":
        return file, file
    if way == "hard link":
        os.link(file, f"hard{suffix}")
        return f"hard{suffix}", file
    if way == "symlink":
        os.symlink(Path(file).resolve(), f"sym{suffix}")
        return f"sym{suffix}", file
    os.mkdir("sub")
    os.replace(file, f"sub/{file}")
    if way == "folder holding it":
        return "sub", f"sub/{file}"
    os.symlink(Path("sub").resolve(), "../folder-link")
    return "../folder-link", f"sub/{file}"


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("command", "out_flag", "folder", "in_flag", "file", "label", "way"),
    _cases(),
    ids=lambda v: str(v) if not isinstance(v, bool) else None,
)
def test_an_input_is_never_an_output(
    files: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    out_flag: str,
    folder: bool,
    in_flag: str,
    file: str,
    label: str,
    way: str,
) -> None:
    suffix = ".html" if out_flag in PAGES else Path(file).suffix
    out, given = _target(way, file, suffix)
    argv = COMMANDS[command, out_flag, folder](out_flag, out)
    argv = [given if a == file else a for a in argv]
    paths = [given if name == file else name for name in INPUTS]
    before = {name: _state(files / name) for name in paths}
    line = _refused(capsys, argv)
    if (command, out_flag) in SUFFIX_FIRST and Path(out).suffix != ".html":
        assert f"{out_flag} {out}: receval writes no" in line and "HTML page" in line, line
    else:
        assert f"{out_flag} {Path(out)} would write" in line, line
        assert f"the {label} {given}" in line, line
        assert "choose another output" in line, line
    assert {name: _state(files / name) for name in paths} == before
    if way in ("hard link", "symlink"):
        assert os.path.samefile(out, file)  # the link is left as it was
    extra = {p.name for p in files.iterdir()} - set(INPUTS) - {"sub", out}
    assert not extra, extra  # nothing written: no report.html, no per-user file or folder
    if (files / "sub").exists():
        assert [p.name for p in (files / "sub").iterdir()] == [file]


# -- the log of split and demo, in their output folder ----------------------------------------


def _log(path: Path, users: int = 30) -> Path:
    rows = [
        (u, (u * 7 + j) % 40, 1 + (u + j) % 5, 1_000 * u + j)
        for u in range(users)
        for j in range(8)
    ]
    log = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        log.to_parquet(path, index=False)
    else:
        log.to_csv(path, index=False)
    return path


LOG_COMMANDS = {
    "split": lambda log, out: ["split", log, "--out", out, "--test-size", "2"],
    "demo": lambda log, out: ["demo", "--interactions", log, "--out", out, "-q"],
}


@pytest.mark.parametrize("command", list(LOG_COMMANDS))
@pytest.mark.parametrize(
    ("way", "log_at", "out", "said"),
    [
        ("same", "log.csv", "log.csv", "--out log.csv would write over"),
        ("hard link", "log.csv", "hard.csv", "--out hard.csv would write over"),
        ("symlink", "log.csv", "sym", "--out sym would write over"),
        ("folder holding it", "d/log.csv", "d", "--out d would write into the folder holding"),
        ("symlink to its folder", "d/log.csv", "dl", "--out dl would write into the folder"),
        ("deep in it", "d/x/y/log.csv", "d", "--out d would write into the folder holding"),
        ("through a link in it", "d/link.csv", "d", "--out d would write into the folder"),
    ],
)
def test_split_and_demo_refuse_their_log_as_an_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    way: str,
    log_at: str,
    out: str,
    said: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    real = _log(tmp_path / ("elsewhere.csv" if way == "through a link in it" else log_at))
    if way == "through a link in it":  # the input given is a link inside the folder
        (tmp_path / "d").mkdir()
        os.symlink(real, log_at)
    elif way == "hard link":
        os.link(log_at, out)
    elif way == "symlink":
        os.symlink(real, out)
    elif way == "symlink to its folder":
        os.symlink(real.parent, out)
    before = _state(real)
    line = _refused(capsys, LOG_COMMANDS[command](log_at, out))
    assert said in line and f"the interactions file {log_at}" in line, line
    assert "choose another output folder" in line, line
    assert _state(real) == before
    assert not list(tmp_path.rglob("manifest.json")) and not list(tmp_path.rglob("*.parquet"))


@pytest.mark.parametrize("command", list(LOG_COMMANDS))
def test_a_log_named_as_a_file_the_command_writes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """``demo --interactions d/split/train.parquet --out d`` (the demo's own split),
    ``split d/train.parquet --out d``; and a hard link of the log where the
    command writes, the log given under its own name elsewhere."""
    monkeypatch.chdir(tmp_path)
    inside = "split/train.parquet" if command == "demo" else "train.parquet"
    log = _log(tmp_path / "d" / inside)
    before = _state(log)
    line = _refused(capsys, LOG_COMMANDS[command](f"d/{inside}", "d"))
    assert line == (
        f"error: --out d ({inside}) would write over the interactions file d/{inside}; "
        "choose another output folder"
    )
    assert _state(log) == before
    elsewhere = tmp_path / "log.parquet"
    os.link(log, elsewhere)
    line = _refused(capsys, LOG_COMMANDS[command]("log.parquet", "d"))
    assert f"--out d ({inside}) would write over the interactions file log.parquet" in line
    assert _state(log) == before and _state(elsewhere) == before
    assert not list(tmp_path.rglob("manifest.json"))


def test_split_and_demo_still_write_beside_their_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not refused: an output folder beside the input, or holding nothing read."""
    monkeypatch.chdir(tmp_path)
    _log(tmp_path / "data" / "log.csv")
    assert main(["split", "data/log.csv", "--out", "data-split", "--test-size", "2", "-q"]) == 0
    assert main(["demo", "--interactions", "data/log.csv", "--out", "demo", "-q"]) == 0
    assert (tmp_path / "demo" / "manifest.json").is_file()
    capsys.readouterr()


# -- the audit: every output flag of every command is covered ---------------------------------

#: command -> its output flags (files or folders); every other command writes no file
OUTPUTS = {
    "evaluate": {"--per-user"},
    "report": {"--out", "--png"},
    "split": {"--out"},
    "demo": {"--out"},
    "backtest": {"--report"},  # each fold's files: a temporary folder, removed
    "next-items": {"--per-session", "--by-position", "--report"},
}
#: options that are not files (--output/-o is stdout's format; --mlflow logs to MLflow)
NOT_FILES = {"--output", "-o", "--json", "--mlflow", "--mlflow-experiment", "--mlflow-run-name"}
WRITING = {"--out", "--per-user", "--png", "--save", "--html", "--csv", "--write", "--dir"}
WRITING |= {"--report", "--per-session", "--by-position"}
#: options whose help speaks of writing but that name no file receval writes:
#: backtest's model (its {out} is a temporary file) and the format of that file
WRITES_NO_FILE = {("backtest", "--command"), ("backtest", "--recs-format")}


def test_every_output_flag_is_audited() -> None:
    cli = typer.main.get_command(app)
    found = {
        name: {o for p in cmd.params for o in p.opts if o in WRITING}
        for name, cmd in cli.commands.items()  # type: ignore[attr-defined]
    }
    assert {n: f for n, f in found.items() if f} == OUTPUTS
    covered = {(c.split()[0], flag) for c, flag, _ in COMMANDS} | {
        (c, "--out") for c in LOG_COMMANDS
    }
    assert covered == {(c, f) for c, flags in OUTPUTS.items() for f in flags}


def test_every_flag_that_writes_is_in_writing() -> None:
    """A new output flag under another name is caught: an option whose help says
    it writes, or whose metavar is PATH (the output flags'), must be in WRITING."""
    cli = typer.main.get_command(app)
    options = [
        (name, p)
        for name, cmd in cli.commands.items()  # type: ignore[attr-defined]
        for p in cmd.params
        if p.param_type_name == "option"  # typer's own click: no isinstance(p, click.Option)
    ]
    unaudited = [
        (name, p.opts[0])
        for name, p in options
        if (
            re.search(r"\bwrit(e|es|ing)\b", getattr(p, "help", None) or "", re.I)
            or p.metavar == "PATH"
        )
        and not set(p.opts) & WRITING
        and (name, p.opts[0]) not in WRITES_NO_FILE
    ]
    assert not unaudited, unaudited


def test_the_newer_outputs_still_write_beside_their_inputs(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not refused: evaluate's --per-user beside its --propensities file, next-items'
    tables beside its inputs (the inputs above, valid as such)."""
    assert main([*_evaluate("--per-user", "pu.csv"), "-q"]) == 0, capsys.readouterr().err
    assert main([*_next_items("--per-session", "ps.csv"), "--by-position", "bp.csv", "-q"]) == 0
    capsys.readouterr()
    assert pd.read_csv("pu.csv")["user"].tolist() == [1, 2]
    assert pd.read_csv("ps.csv")["session"].tolist() == ["s1", "s2"]
    assert pd.read_csv("bp.csv")["step"].tolist() == [1, 2]
    assert {name: (files / name).read_text() for name in INPUTS} == INPUTS


@pytest.mark.parametrize("way", FILE_WAYS)
def test_two_outputs_never_name_one_file(
    files: Path, capsys: pytest.CaptureFixture[str], way: str
) -> None:
    """next-items' --by-position naming the --per-session file (itself or through a
    link once the first exists) would replace it: refused before any work."""
    Path("ps.csv").write_text("kept\n")
    target, _ = _target(way, "ps.csv", ".csv")
    line = _refused(capsys, [*_next_items("--per-session", "ps.csv"), "--by-position", target])
    assert "would write over the output of --per-session ps.csv" in line
    assert Path("ps.csv").read_text() == "kept\n"
