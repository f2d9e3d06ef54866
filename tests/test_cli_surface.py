"""One surface: the same flags, names and meanings on every command; integers
stay integers; --help shows flags as flags; each door speaks its own syntax;
every format read everywhere; bad input exits 2 in one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import typer

import receval
from receval import EvalOptions
from receval.cli import COLUMN_FLAGS, POLICY_FLAGS, app, main
from receval.errors import InputError, for_cli, for_python, option, said

ROOT = Path(__file__).resolve().parent.parent
RECS = "user,item,score\nu1,1,1.0\nu1,6,0.9\nu1,8,0.8\nu2,1,1.0\nu2,2,0.9\nu2,3,0.8\n"
TRUTH = "user,item,relevance\nu1,1,1\nu1,6,3\nu2,2,2\nu2,3,1\nu3,2,1\n"
EVALUATING = ("evaluate", "compare", "report")


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _commands() -> dict[str, object]:
    return dict(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _options(cmd: object) -> dict[str, object]:
    """flag -> click parameter of a command"""
    return {o: p for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}  # type: ignore[attr-defined]


# -- 1. one set of policy flags --------------------------------------------------------


def test_policy_flags_are_the_same_on_every_evaluating_command() -> None:
    commands = _commands()
    flags = ["--" + n.replace("_", "-") for n in (*POLICY_FLAGS, *COLUMN_FLAGS)]
    assert set(flags) >= {
        "--convention",
        "--threshold",
        "--empty-truth",
        "--missing-recs",
        "--no-truth",
        "--ties",
        "--relevant-from",
        "--duplicates",
        "--rank",
        "--user-col",
        "--item-col",
        "--score-col",
        "--rank-col",
        "--relevance-col",
    }
    first = _options(commands["evaluate"])
    for name in EVALUATING:
        opts = _options(commands[name])
        for flag in flags:
            p, q = opts[flag], first[flag]
            assert (p.help, p.metavar) == (q.help, q.metavar), flag  # type: ignore[attr-defined]
            assert p.default is None, f"{name} {flag} overrides the convention"  # type: ignore[attr-defined]
    # each policy flag is a field of the one options object
    fields = set(EvalOptions().to_dict())
    assert set(POLICY_FLAGS) | set(COLUMN_FLAGS) <= fields


def test_unset_flags_leave_the_convention_its_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, truth = _write(tmp_path / "r.csv", RECS), _write(tmp_path / "t.csv", TRUTH)
    code, out, err = run(
        capsys, "evaluate", recs, truth, "-m", "ap@3", "--convention", "trec_eval", "--json", "-q"
    )
    assert code == 0, err
    params = json.loads(out)["parameters"]
    preset = EvalOptions(convention="trec_eval").to_dict()
    for name in ("ties", "empty_truth", "missing_recs", "no_truth", "duplicates", "threshold"):
        assert params[name] == preset[name], name
    code, out, _ = run(
        capsys,
        "evaluate",
        recs,
        truth,
        "-m",
        "ap@3",
        "--convention",
        "trec_eval",
        "--ties",
        "item",
        "--json",
    )
    assert json.loads(out)["parameters"]["ties"] == "item"  # a given flag wins


def test_compare_and_report_honour_the_policy_flags_as_evaluate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, truth = _write(tmp_path / "a.csv", RECS), _write(tmp_path / "t.csv", TRUTH)
    values = {}
    for threshold in ("1", "2"):
        code, out, err = run(
            capsys, "evaluate", recs, truth, "-m", "ndcg@3", "--threshold", threshold, "--json"
        )
        assert code == 0, err
        expected = json.loads(out)["metrics"]["ndcg@3"]
        code, out, err = run(
            capsys,
            "compare",
            truth,
            recs,
            recs,
            "--names",
            "a,b",
            "-m",
            "ndcg@3",
            "--threshold",
            threshold,
            "--n-resamples",
            "50",
            "-o",
            "csv",
        )
        assert code == 0, err
        table = pd.read_csv(pd.io.common.StringIO(out))
        assert table.loc[0, "mean"] == pytest.approx(expected, abs=1e-12)
        values[threshold] = expected
    assert values["1"] != values["2"]  # the flag reached the evaluation


# -- 2. documented options exist ---------------------------------------------------------


def _documented() -> list[tuple[str | None, str]]:
    """(command or None, flag) for every --flag the README and docs name."""
    found = []
    commands = set(_commands())  # built once: building the app is the slow part
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    # mutation.md: benchmarks/mutation.py's flags; releasing.md: build, twine, cibuildwheel
    for path in [p for p in pages if p.name not in ("mutation.md", "releasing.md")]:
        for line in path.read_text().splitlines():
            if "benchmarks/" in line or "spark-submit" in line:  # other programs' flags
                continue
            cmd = None
            for segment in line.split("|"):  # "receval metrics | explain X | check --train T"
                named = re.match(r"\s*(?:`?receval )?([a-z][a-z-]+)", segment)
                if named and named.group(1) in commands:
                    cmd = named.group(1)
                elif said := re.search(r"receval ([a-z][a-z-]+)", segment):
                    cmd = said.group(1)
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", segment):
                    found.append((cmd, flag))
    return found


def test_every_documented_flag_exists() -> None:
    commands = _commands()
    flags = {name: set(_options(cmd)) for name, cmd in commands.items()}
    everywhere = set().union(*flags.values()) | {"--version", "--help"}
    missing = []
    for cmd, flag in _documented():
        if cmd in flags:
            if flag not in flags[cmd]:
                missing.append(f"receval {cmd} {flag}")
        elif flag not in everywhere:
            missing.append(flag)
    assert not missing, missing


def test_item_inputs_and_remove_seen_on_every_evaluating_command() -> None:
    commands = _commands()
    for name in EVALUATING:
        opts = _options(commands[name])
        for flag in ("--train", "--catalog", "--item-features", "--popular", "--remove-seen", "-k"):
            assert flag in opts, f"{name} {flag}"
    for name in ("demo", "split", "check"):
        assert {"--user-col", "--item-col"} <= set(_options(commands[name])), name
    assert "--threshold" in _options(commands["demo"])


def test_compare_computes_beyond_accuracy_metrics_from_the_shell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _write(tmp_path / "a.csv", RECS)
    b = _write(tmp_path / "b.csv", RECS.replace("u1,1,1.0", "u1,9,1.0"))
    truth = _write(tmp_path / "t.csv", TRUTH)
    train = _write(tmp_path / "train.csv", "user,item\nx,1\ny,1\ny,2\nz,9\n")
    metrics = ["-m", "novelty@3", "-m", "coverage@3"]
    code, out, err = run(
        capsys,
        "compare",
        truth,
        a,
        b,
        *metrics,
        "--train",
        train,
        "--n-resamples",
        "50",
        "-o",
        "csv",
    )
    assert code == 0, err
    table = pd.read_csv(pd.io.common.StringIO(out))
    table = table[table["versus"].isna()].set_index(["metric", "system"])  # the means
    for system, path in (("a", a), ("b", b)):
        code, out, err = run(capsys, "evaluate", path, truth, *metrics, "--train", train, "--json")
        assert code == 0, err
        expected = json.loads(out)["metrics"]
        for m in ("novelty@3", "coverage@3"):
            assert table.loc[(m, system), "mean"] == pytest.approx(expected[m], abs=1e-12)


def test_remove_seen_filters_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs, truth = _write(tmp_path / "r.csv", RECS), _write(tmp_path / "t.csv", TRUTH)
    train = _write(tmp_path / "train.csv", "user,item\nu1,1\nu2,2\n")
    code, out, err = run(
        capsys, "evaluate", recs, truth, "-m", "p@2", "--train", train, "--remove-seen", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["counts"]["recommendation_rows_seen_in_train_removed"] == 2
    assert data["parameters"]["remove_seen"] is True
    assert "2 recommendation rows seen in --train removed" in err
    filtered = _write(
        tmp_path / "f.csv", "user,item,score\nu1,6,0.9\nu1,8,0.8\nu2,1,1.0\nu2,3,0.8\n"
    )
    code, out, _ = run(capsys, "evaluate", filtered, truth, "-m", "p@2", "--json")
    assert json.loads(out)["metrics"] == data["metrics"]
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "p@2", "--remove-seen")
    assert code == 2 and "--remove-seen needs --train" in err


# -- 3. integers stay integers -----------------------------------------------------------


LOG = "".join(
    f"{u},{i},{(u + i) % 5 + 1},{100 * u + i}\n" for u in range(1, 5) for i in range(1, 6)
)


def test_split_test_size_integer_is_rows_per_user_and_fraction_a_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write(tmp_path / "log.csv", "user,item,rating,timestamp\n" + LOG)
    code, _, err = run(capsys, "split", log, "--test-size", "2", "--out", tmp_path / "two")
    assert code == 0, err
    test = pd.read_parquet(tmp_path / "two" / "test.parquet")
    assert test.groupby("user").size().tolist() == [2, 2, 2, 2]
    assert list(test.columns) == ["user", "item", "rating", "timestamp"]
    info = json.loads((tmp_path / "two" / "split.json").read_text())
    assert json.dumps(info).count('"test_size": 2') == 1  # recorded as the integer 2
    code, _, err = run(capsys, "split", log, "--test-size", "0.4", "--out", tmp_path / "share")
    assert code == 0, err
    share = pd.read_parquet(tmp_path / "share" / "test.parquet")
    assert share.groupby("user").size().tolist() == [2, 2, 2, 2]
    code, _, err = run(capsys, "split", log, "--test-size", "two")
    assert code == 2 and "--test-size two is not allowed" in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["demo", "--users", "2.5"], "--users"),
        (["compare", "t.csv", "a.csv", "-m", "p@1", "--n-resamples", "1e3"], "--n-resamples"),
        (["check", "--train", "t.csv", "-k", "1.5"], "-k"),
        (["split", "t.csv", "--min-user-interactions", "2.5"], "--min-user-interactions"),
        (["compare", "t.csv", "a.csv", "-m", "p@1", "--seed", "0.5"], "--seed"),
    ],
)
def test_integer_flags_refuse_non_integers(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and flag in err and "integer" in err


# -- 4. --help ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [None, *sorted(_commands())])
def test_help_shows_flags_as_flags_and_one_default(
    capsys: pytest.CaptureFixture[str], name: str | None
) -> None:
    code, out, _ = run(capsys, *([name] if name else []), "--help")
    assert code == 0 and "Usage" in out
    assert "<bool>" not in out and "BOOLEAN" not in out
    text = re.sub(r"[│╭╮╰╯─\s]+", " ", out)
    assert not re.search(r"\(default: [^)]*\) \[default:", text), text
    assert not re.search(r"default: detected\)? ?\[default", text)
    for cmd in [typer.main.get_command(app), *_commands().values()]:
        for p in cmd.params:  # type: ignore[attr-defined]
            # every boolean is one flag, no --no-x; but --graded/--no-graded: a
            # convention's preset may be either, so both are said explicitly
            assert not p.secondary_opts or p.opts == ["--graded"], p.opts
    if name in EVALUATING:
        for flag in ("--threshold", "--empty-truth", "--user-col", "--remove-seen"):
            assert flag in text


# -- 5. each door speaks its own syntax ------------------------------------------------------


def test_option_phrases_render_per_door() -> None:
    text = (
        "pass "
        + option("duplicates", "keep")
        + " or "
        + option("train")
        + "; "
        + said("a()", "--a")
    )
    assert for_python(text) == "pass duplicates='keep' or train=; a()"
    assert for_cli(text) == "pass --duplicates keep or --train; --a"
    assert for_cli(option("png_dir", flag="--png")) == "--png"
    err = InputError("x " + option("dropna", True), source="f.csv", line=3)
    assert str(err) == "f.csv, line 3: x dropna=True"
    assert err.cli_message() == "f.csv, line 3: x --dropna"
    assert "\ue000" not in str(err.remap(lambda r: r)) and "\ue000" not in repr(str(err))


def test_cli_messages_use_cli_syntax_and_python_messages_python_syntax(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _write(tmp_path / "r.csv", RECS + "u1,1,0.1\n")
    truth = _write(tmp_path / "t.csv", TRUTH)
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "p@1")
    assert code == 2 and "--duplicates keep" in err and "duplicates=" not in err
    with pytest.raises(InputError, match="duplicates='keep'") as info:
        receval.evaluate(str(recs), str(truth), "p@1")
    assert "--duplicates" not in str(info.value)
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "p@1", "--empty-truth", "zeros")
    assert code == 2 and "--empty-truth zeros is not allowed" in err and "empty_truth" not in err
    code, _, err = run(capsys, "evaluate", _write(tmp_path / "ok.csv", RECS), truth, "-m", "ild@3")
    assert code == 2 and "--item-features" in err and "item_features=" not in err
    with pytest.raises(receval.ReceValError) as info:
        receval.evaluate(str(tmp_path / "ok.csv"), str(truth), "ild@3")
    assert "item_features=" in str(info.value) and "--" not in str(info.value)


def test_check_says_remove_seen_in_the_syntax_of_its_door(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _write(tmp_path / "r.csv", RECS)
    train = _write(tmp_path / "train.csv", "user,item\nu1,1\n")
    code, out, err = run(capsys, "check", "--recs", recs, "--train", train)
    assert code == 0, err
    line = next(s for s in out.splitlines() if "seen_in_train" in s)
    assert "--remove-seen" in line and "remove_seen(" not in line
    report = receval.check(train=pd.read_csv(train), recs=pd.read_csv(recs))
    assert "remove_seen(recs, train)" in str(report) and "--remove-seen" not in str(report)


# -- 6. report -------------------------------------------------------------------------------


def test_report_of_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, truth = _write(tmp_path / "a.csv", RECS), _write(tmp_path / "t.csv", TRUTH)
    html = tmp_path / "one.html"
    code, _, err = run(
        capsys, "report", truth, a, "-m", "ndcg@3", "--out", html, "--n-resamples", "50"
    )
    assert code == 0, err
    assert html.read_text().lstrip().lower().startswith("<!doctype html")


def test_report_png_without_matplotlib_writes_the_html_and_says_how(tmp_path: Path) -> None:
    a, truth = _write(tmp_path / "a.csv", RECS), _write(tmp_path / "t.csv", TRUTH)
    html, png = tmp_path / "r.html", tmp_path / "png"
    argv = ["report", str(truth), str(a), "-m", "p@2", "--out", str(html), "--png", str(png)]
    argv += ["--n-resamples", "50"]
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from receval.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert "receval[plot]" in done.stderr and "pip install" in done.stderr
    assert html.read_text().lstrip().lower().startswith("<!doctype html")
    assert not list(png.glob("*.png")) if png.exists() else True


# -- 7. every format demo reads, in inspect, check and split ---------------------------------


def _log_files(d: Path) -> dict[str, Path]:
    rows = [line.split(",") for line in LOG.splitlines()]
    frame = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"]).astype(int)
    files = {
        "csv": d / "log.csv",
        "tsv": d / "log.tsv",
        "parquet": d / "log.parquet",
        "jsonl": d / "log.jsonl",
        "u.data": d / "u.data",
        "ratings.dat": d / "ratings.dat",
        "ratings.csv": d / "ratings.csv",
        "qrels": d / "log.qrels",
    }
    frame.to_csv(files["csv"], index=False)
    frame.to_csv(files["tsv"], index=False, sep="\t")
    frame.to_parquet(files["parquet"], index=False)
    frame.to_json(files["jsonl"], orient="records", lines=True)
    frame.to_csv(files["u.data"], index=False, header=False, sep="\t")
    files["ratings.dat"].write_text(
        "".join("::".join(map(str, r)) + "\n" for r in frame.itertuples(index=False))
    )
    frame.rename(columns={"user": "userId", "item": "movieId"}).to_csv(
        files["ratings.csv"], index=False
    )
    files["qrels"].write_text(
        "".join(f"{r.user} 0 {r.item} {r.rating}\n" for r in frame.itertuples(index=False))
    )
    return files


@pytest.mark.parametrize(
    "kind", ["csv", "tsv", "parquet", "jsonl", "u.data", "ratings.dat", "ratings.csv", "qrels"]
)
def test_inspect_check_and_split_read_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = _log_files(tmp_path)[kind]
    code, out, err = run(capsys, "inspect", path, "--truth")
    assert code == 0, err
    assert "users: 4; items: 5" in out and "20 rows" in out
    code, out, err = run(capsys, "check", "--train", path, "--test", path)
    assert code == 1, err  # test is train: every test row leaks
    assert "[LEAK] train_test_overlap: 20 of 20 test rows (100.0%" in out
    assert "duplicate_rows_train" in out
    code, out, err = run(
        capsys,
        "split",
        path,
        "--method",
        "user_random",
        "--test-size",
        "1",
        "--out",
        tmp_path / f"out-{kind}",
    )
    assert code == 0, err
    test = pd.read_parquet(tmp_path / f"out-{kind}" / "test.parquet")
    user = test.columns[0]  # the file's own name: user, userId, qid...
    assert len(test) == 4 and sorted(test[user].astype(str)) == ["1", "2", "3", "4"]


def test_split_and_check_take_column_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write(
        tmp_path / "log.csv",
        "who,what,when\n"
        + "".join(f"{u},{i},{10 * u + i}\n" for u in range(1, 4) for i in range(1, 4)),
    )
    argv = ["--user-col", "who", "--item-col", "what"]
    code, _, err = run(
        capsys,
        "split",
        log,
        *argv,
        "--timestamp-col",
        "when",
        "--test-size",
        "1",
        "--out",
        tmp_path / "s",
    )
    assert code == 0, err
    assert pd.read_parquet(tmp_path / "s" / "test.parquet")["what"].tolist() == [3, 3, 3]
    code, out, err = run(capsys, "check", "--train", log, *argv)
    assert code == 0 and "duplicate_rows_train" in out, err


# -- 8. evaluate-ratings detects its columns -------------------------------------------------


def test_evaluate_ratings_detects_rating_and_prediction_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "userId,movieId,rating,prediction\n1,1,3.5,3\n1,2,4,4.5\n2,1,5,4.5\n2,2,3,2.5\n"
    path = _write(tmp_path / "r.csv", text)
    code, out, err = run(capsys, "evaluate-ratings", path, "-m", "mae", "--json")
    assert code == 0, err
    assert json.loads(out)["metrics"]["mae"] == pytest.approx(0.5)
    named = _write(tmp_path / "n.csv", text.replace("rating,prediction", "a,b"))
    code, out, err = run(
        capsys,
        "evaluate-ratings",
        named,
        "-m",
        "mae",
        "--actual-col",
        "a",
        "--predicted-col",
        "b",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["metrics"]["mae"] == pytest.approx(0.5)


def test_evaluate_ratings_flags_default_to_detection() -> None:
    opts = _options(_commands()["evaluate-ratings"])
    assert opts["--actual-col"].default is None and opts["--predicted-col"].default is None  # type: ignore[attr-defined]
    assert "--dropna" in opts and "--no-dropna" not in opts


# -- 9. exit 2, one line, no traceback, for every command ------------------------------------


BAD: list[tuple[str, list[str], str]] = [
    ("evaluate missing file", ["evaluate", "nope.csv", "t.csv", "-m", "p@1"], "nope.csv"),
    ("evaluate bad policy", ["evaluate", "r.csv", "t.csv", "-m", "p@1", "--ties", "x"], "--ties x"),
    (
        "evaluate bad convention",
        ["evaluate", "r.csv", "t.csv", "-m", "p@1", "--convention", "x"],
        "--convention x",
    ),
    (
        "evaluate bad threshold",
        ["evaluate", "r.csv", "t.csv", "-m", "p@1", "--threshold", "inf"],
        "--threshold inf",
    ),
    ("compare bad file", ["compare", "t.csv", "bad.csv", "-m", "p@1"], "bad.csv"),
    (
        "compare bad test",
        ["compare", "t.csv", "r.csv", "r.csv", "--names", "a,b", "-m", "p@1", "--test", "z"],
        "--test z is not allowed",
    ),
    (
        "compare bad correction",
        ["compare", "t.csv", "r.csv", "r.csv", "--names", "a,b", "-m", "p@1", "--correction", "z"],
        "--correction z is not allowed",
    ),
    (
        "compare unknown baseline",
        ["compare", "t.csv", "r.csv", "r.csv", "--names", "a,b", "-m", "p@1", "--baseline", "c"],
        "--baseline c is not allowed: expected one of a, b",
    ),
    (
        "agreement of another metric",
        ["agreement", "r.csv", "r.csv", "-m", "p@1"],
        "receval evaluate the others",
    ),
    ("report missing run", ["report", "t.csv", "nope.csv", "-m", "p@1"], "nope.csv"),
    ("inspect missing file", ["inspect", "nope.csv"], "nope.csv"),
    ("inspect bad file", ["inspect", "bad.csv"], "bad.csv"),
    ("split bad size", ["split", "t.csv", "--test-size", "-1"], "--test-size -1.0 is not allowed"),
    ("split bad method", ["split", "t.csv", "--method", "sideways"], "--method sideways is not"),
    ("check nothing", ["check"], "--recs"),
    ("check missing file", ["check", "--train", "nope.csv"], "nope.csv"),
    ("demo bad users", ["demo", "--users", "0"], "--users 0"),
    ("evaluate-ratings bad file", ["evaluate-ratings", "bad.csv"], "bad.csv"),
    ("explain unknown metric", ["explain", "ndgc"], "did you mean"),
    ("unknown flag", ["evaluate", "r.csv", "t.csv", "--nope"], "--nope"),
]


@pytest.mark.parametrize(("name", "argv", "word"), BAD, ids=[b[0] for b in BAD])
def test_bad_invocations_exit_2_in_one_line(
    tmp_path: Path, name: str, argv: list[str], word: str
) -> None:
    _write(tmp_path / "r.csv", RECS)
    _write(tmp_path / "t.csv", TRUTH)
    _write(tmp_path / "bad.csv", "user,item,score\nu1,1,0.5\nu1,2\n")
    done = subprocess.run(
        [sys.executable, "-m", "receval", *argv], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    lines = [
        s for s in done.stderr.splitlines() if s.strip() and not set(s.strip()) <= set("╭╮╰╯─│ ")
    ]
    assert len(lines) <= 3, done.stderr
    assert word in done.stderr, done.stderr
    assert not list(tmp_path.glob("*.html")) and not (tmp_path / "split").exists()


def test_demo_threshold_and_columns_of_your_own_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [(u, i, (u * i) % 5 + 1, 10 * i) for u in range(1, 41) for i in range(1, 13)]
    log = _write(
        tmp_path / "log.csv",
        "who,what,rating,timestamp\n" + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in rows),
    )
    argv = ["demo", "--interactions", log, "--user-col", "who", "--item-col", "what"]
    code, _, err = run(capsys, *argv, "--threshold", "3", "--out", tmp_path / "d", "-q")
    assert code == 0, err
    results = json.loads((tmp_path / "d" / "results.json").read_text())
    assert "3" in json.dumps(results) and (tmp_path / "d" / "report.html").is_file()
    code, _, err = run(capsys, "demo", "--threshold", "nan", "--out", tmp_path / "e")
    assert code == 2 and "--threshold nan is not allowed" in err
