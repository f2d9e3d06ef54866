"""Issue #30, one way in, at the command line: the commands read no file
themselves. They hand paths (with ``--format`` and ``--sep`` as a
:class:`~receval.io.inputs.FileInput`) and the options, unchanged, down to
the library, whose one reader opens every input; and their flags are made
from the one table of options (:data:`receval.evaluation.options.OPTIONS`).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import typer.main
import typer.rich_utils

import receval
from receval.cli import COLUMN_FLAGS, POLICY_FLAGS, app, main
from receval.evaluation.options import OPTIONS
from receval.io.inputs import FileInput

CLI = sorted(Path(receval.__file__).with_name("cli").glob("*.py"))  # the package's modules
RECS = pd.DataFrame(
    {
        "user": ["u1", "u1", "u1", "u2", "u2", "u2"],
        "item": [1, 6, 8, 1, 2, 3],
        "score": [1.0, 0.9, 0.8, 1.0, 0.9, 0.8],
    }
)
TRUTH = pd.DataFrame(
    {"user": ["u1", "u1", "u2", "u2", "u3"], "item": [1, 6, 2, 3, 2], "relevance": [1, 3, 2, 1, 1]}
)
METRICS = ["ndcg@3", "ap@3", "recall@2"]


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _metrics(capsys: pytest.CaptureFixture[str], *argv: object) -> dict[str, float]:
    code, out, err = run(capsys, "evaluate", *argv, *_flags(METRICS), "--json", "-q")
    assert code == 0, err
    return dict(json.loads(out)["metrics"])


def _flags(metrics: list[str]) -> list[str]:
    return [a for m in metrics for a in ("-m", m)]


# -- --format and --sep reach the library's reader ---------------------------------------------


def test_format_tsv_of_files_named_csv_reaches_the_reader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"  # tab-separated, named .csv
    RECS.to_csv(recs, sep="\t", index=False)
    TRUTH.to_csv(truth, sep="\t", index=False)
    got = _metrics(capsys, recs, truth, "--format", "tsv")
    want = receval.evaluate(FileInput(recs, format="tsv"), FileInput(truth, format="tsv"), METRICS)
    assert got == pytest.approx(want.summary)
    assert got == pytest.approx(receval.evaluate(RECS, TRUTH, METRICS).summary)
    # the format is the reader's: a comma-separated truth read as TSV has one column
    TRUTH.to_csv(truth, index=False)
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "ndcg@3", "--format", "tsv")
    assert code == 2 and str(truth) in err and "no user column" in err, err


def test_sep_reaches_the_reader(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"
    RECS.to_csv(recs, sep=";", index=False)
    TRUTH.to_csv(truth, sep=";", index=False)
    got = _metrics(capsys, recs, truth, "--sep", ";")
    want = receval.evaluate(FileInput(recs, sep=";"), FileInput(truth, sep=";"), METRICS)
    assert got == pytest.approx(want.summary)
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "ndcg@3", "--sep", ",")
    assert code == 2 and str(recs) in err and "no user column" in err, err


def test_compare_hands_its_runs_down_with_the_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = {"a": RECS, "b": RECS.assign(score=RECS["score"][::-1].to_numpy())}
    paths = {name: tmp_path / f"{name}.txt" for name in runs}
    for name, frame in runs.items():
        frame.to_csv(paths[name], sep="\t", index=False)
    truth = tmp_path / "t.txt"
    TRUTH.to_csv(truth, sep="\t", index=False)
    argv = ["compare", truth, *paths.values(), *_flags(METRICS), "--format", "tsv", "-o", "json"]
    code, out, err = run(capsys, *argv, "--n-resamples", "200", "-q")
    assert code == 0, err
    cmp = receval.compare(runs, TRUTH, METRICS, n_resamples=200)
    got = json.loads(out)["metrics"]
    for name in runs:
        for m in METRICS:
            assert got[m]["systems"][name]["mean"] == pytest.approx(cmp.results[name].summary[m])


def test_evaluate_ratings_opens_its_file_with_the_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ratings = pd.DataFrame({"actual": [3.5, 4, 2, 5], "predicted": [3, 4.5, 1.5, 4.5]})
    path = tmp_path / "ratings.dat"
    ratings.to_csv(path, sep="\t", index=False)
    code, out, err = run(capsys, "evaluate-ratings", path, "-m", "mae", "--format", "tsv", "--json")
    assert code == 0, err
    want = receval.evaluate_ratings(ratings, "mae").summary["mae"]
    assert json.loads(out)["metrics"]["mae"] == pytest.approx(want)


# -- the options go down unchanged: the library applies the column options ---------------------


def test_truth_user_col_of_a_csv_pair(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"
    RECS.rename(columns={"user": "uid"}).to_csv(recs, index=False)
    TRUTH.rename(columns={"user": "customer", "item": "sku"}).to_csv(truth, index=False)
    cols = ["--user-col", "uid", "--truth-user-col", "customer", "--truth-item-col", "sku"]
    code, out, err = run(capsys, "evaluate", recs, truth, *_flags(METRICS), *cols, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["metrics"] == pytest.approx(receval.evaluate(RECS, TRUTH, METRICS).summary)
    assert result["parameters"]["truth_user_col"] == "customer"
    read = result["parameters"]["inputs"]
    assert read["truth"]["columns"]["user"] == "customer" and read["truth"]["format"] == "csv"
    assert read["recommendations"]["columns"]["user"] == "uid"
    # what was read under another name is said, naming the file
    assert f"{truth}: using column customer as user" in err
    assert f"{truth}: using column sku as item" in err
    assert f"{recs}: using column uid as user" in err


def test_remove_seen_with_named_columns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--remove-seen opens the lists and --train (the one way in); the column
    options apply to what it hands down as they would to the files."""
    recs, truth, train = tmp_path / "r.csv", tmp_path / "t.csv", tmp_path / "train.csv"
    RECS.rename(columns={"user": "uid", "item": "iid"}).to_csv(recs, index=False)
    TRUTH.rename(columns={"user": "uid", "item": "iid"}).to_csv(truth, index=False)
    seen = pd.DataFrame({"uid": ["u1", "u2"], "iid": [8, 1]})
    seen.to_csv(train, index=False)
    cols = ["--user-col", "uid", "--item-col", "iid"]
    code, out, err = run(
        capsys, "evaluate", recs, truth, "-m", "ndcg@3", *cols, "--train", train, "--remove-seen"
    )
    assert code == 0, err
    assert f"{recs}: 2 recommendation rows seen in --train removed" in err
    seen_pairs = {("u1", 8), ("u2", 1)}
    pairs = zip(RECS["user"], RECS["item"], strict=True)
    kept = RECS[[pair not in seen_pairs for pair in pairs]]
    direct = receval.evaluate(kept, TRUTH, "ndcg@3").summary["ndcg@3"]
    argv = ["evaluate", recs, truth, "-m", "ndcg@3", *cols, "--train", train, "--remove-seen"]
    code, out, err = run(capsys, *argv, "--json", "-q")
    assert code == 0, err
    result = json.loads(out)
    assert result["metrics"]["ndcg@3"] == pytest.approx(direct)
    assert result["counts"]["recommendation_rows_seen_in_train_removed"] == 2


def test_two_parquet_files_stream_through_the_library(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs, truth = tmp_path / "r.parquet", tmp_path / "t.parquet"
    RECS.to_parquet(recs, index=False)
    TRUTH.to_parquet(truth, index=False)
    got = _metrics(capsys, recs, truth)
    assert got == pytest.approx(receval.evaluate(str(recs), str(truth), METRICS).summary)
    assert got == pytest.approx(receval.evaluate(RECS, TRUTH, METRICS).summary)


# -- errors name the file and its line ---------------------------------------------------------


def test_a_bad_row_of_the_truth_names_the_file_and_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"
    RECS.to_csv(recs, index=False)
    bad = TRUTH.astype({"relevance": object})
    bad.loc[3, "relevance"] = "high"  # the 4th row: line 5 (a header, then rows)
    bad.to_csv(truth, index=False)
    code, out, err = run(capsys, "evaluate", recs, truth, "-m", "ndcg@3")
    assert code == 2 and out == "", err
    assert err.startswith(f"error: {truth}, line 5, user 'u2', item 3:"), err
    assert "'high'" in err and "Traceback" not in err
    # the same through compare, each run named by its file
    code, _, err = run(capsys, "compare", truth, recs, "-m", "ndcg@3", "-q")
    assert code == 2 and f"{truth}, line 5" in err, err


def test_a_bad_row_of_a_run_names_its_file_and_line_in_compare(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good, bad, truth = tmp_path / "good.csv", tmp_path / "bad.csv", tmp_path / "t.csv"
    RECS.to_csv(good, index=False)
    broken = RECS.astype({"score": object})
    broken.loc[2, "score"] = "high"
    broken.to_csv(bad, index=False)
    TRUTH.to_csv(truth, index=False)
    code, _, err = run(capsys, "compare", truth, good, bad, "-m", "ndcg@3", "-q")
    assert code == 2 and f"{bad}, line 4" in err and "'high'" in err, err


# -- the flags are made from the table of options -----------------------------------------------


def _help_rows(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``receval evaluate --help``, one line per option (wide enough not to wrap)."""
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 2000)
    code, out, err = run(capsys, "evaluate", "--help")
    assert code == 0, err
    return [re.sub(r"\s+", " ", line.strip("│ ")) for line in out.splitlines()]


def test_every_option_help_is_its_flag_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _help_rows(capsys, monkeypatch)
    for o in OPTIONS:
        if o.ratings:
            continue
        first = o.flag.split("/")[0]
        row = [r for r in rows if r.split(" ")[0] == first]
        assert len(row) == 1, (o.name, row)
        assert o.help in row[0], (o.name, row[0])
        if o.kind == "choice":
            assert "|".join(o.choices) in row[0], (o.name, row[0])
        if o.default is not None and o.kind in ("choice", "number"):
            default = f"{o.default:g}" if o.kind == "number" else o.default
            assert f"(receval's default: {default})" in row[0], (o.name, row[0])


def test_the_flag_mappings_are_the_table_of_options() -> None:
    assert [*POLICY_FLAGS, *COLUMN_FLAGS] == [o.name for o in OPTIONS if not o.ratings]
    types = {"number": float, "count": int, "flag": bool}
    cmd = typer.main.get_command(app).commands["evaluate"]  # type: ignore[attr-defined]
    params = {p.name: p for p in cmd.params}
    flags = {**POLICY_FLAGS, **COLUMN_FLAGS}
    for o in OPTIONS:
        if o.ratings:
            continue
        param = params[o.name]
        assert "/".join([*param.opts, *param.secondary_opts]) == o.flag, o.name
        assert flags[o.name].__origin__ == types.get(o.kind, str) | None, o.name
        assert param.default is None, o.name  # unset: the convention decides


# -- the command line opens no file itself -----------------------------------------------------

#: the calls that read a file (only receval.io makes them)
READS = {
    "read_file",
    "read_table",
    "read_csv",
    "read_parquet",
    "read_json",
    "open_parquet",
    "open_csv",
    "ParquetFile",
    "read_source",
}


def _calls(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            owner = ast.unparse(f.value) if isinstance(f, ast.Attribute) else ""
            if name in READS or owner in ("pq", "pyarrow.parquet", "pa.csv", "pyarrow.csv"):
                found.append((node.lineno, ast.unparse(f)))
    return found


@pytest.mark.parametrize("module", CLI, ids=lambda p: p.stem)
def test_the_command_line_calls_no_reader(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
    assert not _calls(tree)
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
        if node.module.startswith(("pyarrow", "receval.io.files", "receval.io.stream"))
    }
    assert not imported & (READS | {"parquet", "csv"}), imported


def test_the_check_finds_a_read() -> None:
    """The AST check above is not vacuous."""
    code = "import pyarrow.parquet as pq\npq.read_table('x')\nread_file('y', role='truth')\n"
    assert [name for _, name in _calls(ast.parse(code))] == ["pq.read_table", "read_file"]
