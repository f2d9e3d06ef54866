"""The command line on real files: formats in, formats out, and bad input as a table."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from receval.cli import main
from tests.required import TREC_FILES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TREC = TREC_FILES

RECS = "user,item,score\nu1,1,1.0\nu1,6,0.9\nu1,8,0.8\nu2,1,1.0\nu2,2,0.9\nu2,3,0.8\n"
TRUTH = "user,item,relevance\nu1,1,1\nu1,6,1\nu2,2,1\nu3,2,1\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_evaluate_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        EXAMPLES / "recs.csv",
        EXAMPLES / "truth.csv",
        "-m",
        "precision@3",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"metrics", "counts", "parameters", "version"}
    assert data["metrics"]["precision@3"] == pytest.approx(1 / 3)
    assert data["parameters"]["inputs"]["recommendations"]["format"] == "csv"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl", "csv.gz", "csv.zst", "wide"])
def test_every_format_gives_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    recs = pd.read_csv(EXAMPLES / "recs.csv")
    truth = EXAMPLES / "truth.csv"
    path = tmp_path / f"recs.{fmt}"
    if fmt == "csv":
        recs.to_csv(path, index=False)
    elif fmt == "tsv":
        recs.to_csv(path, index=False, sep="\t")
    elif fmt == "parquet":
        recs.to_parquet(path, index=False)
    elif fmt == "jsonl":
        recs.to_json(path, orient="records", lines=True)
    elif fmt == "csv.gz":
        path.write_bytes(gzip.compress(recs.to_csv(index=False).encode()))
    elif fmt == "csv.zst":
        with pa.CompressedOutputStream(str(path), "zstd") as f:
            f.write(recs.to_csv(index=False).encode())
    else:  # one row per user with a list column, best first
        wide = recs.sort_values(["user", "score"], ascending=[True, False]).groupby("user")
        table = pa.table({"user": list(wide.groups), "item": [list(g["item"]) for _, g in wide]})
        path = tmp_path / "wide.parquet"
        pq.write_table(table, path)
    code, out, err = run(capsys, "evaluate", path, truth, "-m", "ndcg@3", "-m", "map@5", "--json")
    assert code == 0, err
    metrics = json.loads(out)["metrics"]
    assert metrics["ndcg@3"] == pytest.approx(0.3538, abs=5e-5)
    assert metrics["ap@5"] == pytest.approx(0.2444, abs=5e-5)


def test_column_spellings_are_detected_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _write(tmp_path / "r.csv", RECS.replace("user,item,score", "user_id,itemId,score"))
    truth = _write(tmp_path / "t.csv", TRUTH.replace("relevance", "rating"))
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "p@1")
    assert code == 0
    assert "using column user_id as user" in err and "using column itemId as item" in err
    assert "using column rating as relevance" in err
    code, _, err = run(
        capsys,
        "evaluate",
        recs,
        truth,
        "-m",
        "p@1",
        "--user-col",
        "user_id",
        "--item-col",
        "itemId",
        "-q",
    )
    # a named column must exist in every file it applies to (the truth has "user")
    assert code == 2 and "t.csv" in err and "no user column 'user_id'" in err
    truth_same = _write(tmp_path / "t2.csv", TRUTH.replace("user,item,", "user_id,itemId,"))
    code, _, err = run(
        capsys, "evaluate", recs, truth_same, "-m", "p@1", "--user-col", "user_id", "-q"
    )
    assert code == 0 and err == ""


def test_k_applies_to_metrics_without_a_cutoff(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        EXAMPLES / "recs.csv",
        EXAMPLES / "truth.csv",
        "-m",
        "ndcg",
        "-m",
        "rr@2",
        "-k",
        "1,3",
        "--json",
    )
    assert code == 0
    assert list(json.loads(out)["metrics"]) == ["ndcg@1", "ndcg@3", "rr@2"]


@pytest.mark.parametrize("output", ["table", "csv", "markdown", "latex"])
def test_outputs(capsys: pytest.CaptureFixture[str], output: str) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        EXAMPLES / "recs.csv",
        EXAMPLES / "truth.csv",
        "-m",
        "hit_rate@3",
        "--output",
        output,
    )
    assert code == 0
    expected = {
        "table": "hit_rate@3",
        "csv": "hit_rate@3,0.666",
        "markdown": "| hit_rate@3 |",
        "latex": r"hit\_rate@3",
    }[output]
    assert expected in out


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_per_user_output_keeps_every_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    target = tmp_path / f"per_user{suffix}"
    code, _, _ = run(
        capsys,
        "evaluate",
        EXAMPLES / "recs.csv",
        EXAMPLES / "truth.csv",
        "-m",
        "ndcg@3",
        "--per-user",
        target,
    )
    assert code == 0
    frame = pd.read_csv(target) if suffix == ".csv" else pd.read_parquet(target)
    assert list(frame["user"]) == ["u1", "u2", "u3", "u4"]
    assert frame["ndcg@3"].isna().tolist() == [False, False, False, True]


def test_a_metric_asked_twice_is_reported_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-m repeated, or two spellings of one metric: one metric, computed once,
    in the place of the first, in the table, the JSON and the per-user file."""
    target = tmp_path / "per_user.csv"
    given = ["-m", "ndcg@3", "-m", "recall@3", "-m", "NDCG@3", "-m", "ndcg@3,3", "-m", "map@3"]
    args = ["evaluate", EXAMPLES / "recs.csv", EXAMPLES / "truth.csv", *given, "-m", "ap@3"]
    code, out, _ = run(capsys, *args, "-o", "json", "--per-user", target)
    assert code == 0
    assert list(json.loads(out)["metrics"]) == ["ndcg@3", "recall@3", "ap@3"]
    assert list(pd.read_csv(target).columns) == ["user", "ndcg@3", "recall@3", "ap@3"]
    code, out, _ = run(capsys, *args)
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines()[2:5]]
    assert rows == ["ndcg@3", "recall@3", "ap@3"] and out.count("ndcg@3") == 1, out


@pytest.mark.trec_files
def test_trec_files_of_trec_eval(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        TREC / "results.test",
        TREC / "qrels.test",
        "-m",
        "map",
        "-m",
        "P@5,10",
        "-m",
        "rr",
        "-m",
        "r_precision",
        "--json",
    )
    assert code == 0
    m = json.loads(out)["metrics"]
    # trec_eval's own out.test: map 0.1785, P_5 0.2667, P_10 0.3000, recip_rank 0.4064,
    # Rprec 0.2174 (its defaults coincide with receval's for these measures)
    assert m["ap"] == pytest.approx(0.1785, abs=5e-5)
    assert m["precision@5"] == pytest.approx(0.2667, abs=5e-5)
    assert m["precision@10"] == pytest.approx(0.3, abs=5e-5)
    assert m["rr"] == pytest.approx(0.4064, abs=5e-5)
    assert m["r_precision"] == pytest.approx(0.2174, abs=5e-5)
    for recs, qrels, flags in (
        ("results.comment.test", "qrels.comment.test", []),
        ("results.trunc", "qrels.rel_level", ["--negative-grades", "unjudged"]),
    ):
        code, _, err = run(
            capsys, "evaluate", TREC / recs, TREC / qrels, "-m", "ndcg@10", "-q", *flags
        )
        assert code == 0, err
    # a negative grade without --negative-grades: the line, and the way out
    code, _, err = run(
        capsys, "evaluate", TREC / "results.trunc", TREC / "qrels.rel_level", "-m", "bpref"
    )
    assert code == 2
    assert "qrels.rel_level, line " in err and "--negative-grades unjudged" in err


def _corrupt_parquet(p: Path) -> Path:
    p.write_bytes(b"PAR1 this is not parquet PAR1")
    return p


def _latin1(p: Path) -> Path:
    p.write_bytes("user,item,score\nJosé,1,0.5\n".encode("latin-1"))
    return p


# (name, make recs file, make truth file, extra args, exit code, words in the message)
Maker = Callable[[Path], Path]
CASES: list[tuple[str, Maker, Maker, list[str], int, list[str]]] = [
    (
        "missing file",
        lambda d: d / "nope.csv",
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["nope.csv", "no such file"],
    ),
    ("directory", lambda d: d, lambda d: _write(d / "t.csv", TRUTH), [], 2, ["is a directory"]),
    (
        "empty file",
        lambda d: _write(d / "r.csv", ""),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "empty"],
    ),
    (
        "header only",
        lambda d: _write(d / "r.csv", "user,item,score\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "no data rows"],
    ),
    (
        "unknown extension",
        lambda d: _write(d / "r.xlsx", "x"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["unknown file type", ".xlsx"],
    ),
    (
        "corrupt parquet",
        lambda d: _corrupt_parquet(d / "r.parquet"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.parquet", "not a readable Parquet"],
    ),
    (
        "too few fields",
        lambda d: _write(d / "r.csv", "user,item,score\nu1,1,0.5\nu1,2\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "line 3", "expected 3 fields"],
    ),
    (
        "missing user column",
        lambda d: _write(d / "r.csv", "usr,item,score\nu1,1,0.5\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["no user column", "usr, item, score", "did you mean 'usr'"],
    ),
    (
        "one column named for two roles",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH),
        ["--score-col", "score", "--rank-col", "score"],
        2,
        ["r.csv", "--rank-col and --score-col both name the column 'score'"],
    ),
    (
        "no rank or score: every column of the file named",
        lambda d: _write(d / "r.csv", "user,item,foo,bar\nu1,1,x,y\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "columns found: user, item, foo, bar", "--rank-col or --score-col"],
    ),
    (
        "the item column named as the score",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH),
        ["--score-col", "item"],
        2,
        ["no item column", "the column 'item' is the score (--score-col item)"],
    ),
    (
        "non-numeric score",
        lambda d: _write(d / "r.csv", "user,item,score\nu1,1,0.5\nu1,2,high\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "line 3", "'high'"],
    ),
    (
        "NaN score",
        lambda d: _write(d / "r.csv", "user,item,score\nu1,1,0.5\nu1,2,nan\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "line 3", "u1", "item 2"],
    ),
    (
        "infinite score",
        lambda d: _write(d / "r.csv", "user,item,score\nu1,1,inf\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["line 2", "finite"],
    ),
    (
        "negative grade",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", "user,item,relevance\nu1,1,-1\n"),
        [],
        2,
        ["t.csv", "line 2", "non-negative"],
    ),
    (
        "non-numeric grade",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", "user,item,relevance\nu1,1,good\n"),
        [],
        2,
        ["t.csv", "line 2", "'good'"],
    ),
    (
        "rank not a positive integer",
        lambda d: _write(d / "r.csv", "user,item,rank\nu1,1,0\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["line 2", "positive integer"],
    ),
    (
        "rank repeated",
        lambda d: _write(d / "r.csv", "user,item,rank\nu1,1,1\nu1,2,1\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["rank 1 appears twice", "lines 2 and 3"],
    ),
    (
        "duplicate item in a list",
        lambda d: _write(d / "r.csv", RECS + "u1,1,0.1\n"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["user 'u1'", "item 1", "appears twice"],
    ),
    (
        "duplicate truth pair",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH + "u1,1,2\n"),
        [],
        2,
        ["t.csv", "appears twice", "lines 2 and 6"],
    ),
    (
        "unknown metric",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH),
        ["-m", "ndgc@10"],
        2,
        ["did you mean 'ndcg'"],
    ),
    (
        "k zero",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH),
        ["-m", "ndcg", "-k", "0"],
        2,
        ["positive integers"],
    ),
    (
        "k not an integer",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH),
        ["-m", "ndcg@x"],
        2,
        ["positive integer"],
    ),
    (
        "malformed TREC line",
        lambda d: _write(d / "r.run", "1 Q0 d1 1 0.5 tag\n1 Q0 d2\n"),
        lambda d: _write(d / "t.qrels", "1 0 d1 1\n"),
        [],
        2,
        ["r.run", "line 2", "malformed TREC"],
    ),
    (
        "not UTF-8",
        lambda d: _latin1(d / "r.csv"),
        lambda d: _write(d / "t.csv", TRUTH),
        [],
        2,
        ["r.csv", "not UTF-8", "line 2"],
    ),
    (
        "no metric",
        lambda d: _write(d / "r.csv", RECS),
        lambda d: _write(d / "t.csv", TRUTH),
        ["--no-metric"],
        2,
        ["-m"],
    ),
]


@pytest.mark.parametrize(
    ("name", "recs", "truth", "args", "code", "words"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_input(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    recs: Maker,
    truth: Maker,
    args: list[str],
    code: int,
    words: list[str],
) -> None:
    per_user = tmp_path / "out" / "per_user.csv"
    per_user.parent.mkdir()
    metric = [] if "-m" in args else ["-m", "ndcg@3"]
    args = [a for a in args if a != "--no-metric"]
    if name == "no metric":
        metric = []
    got, _, err = run(
        capsys, "evaluate", recs(tmp_path), truth(tmp_path), *metric, *args, "--per-user", per_user
    )
    assert got == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    assert list(per_user.parent.iterdir()) == []  # no partial output


def test_recommendations_and_truth_sharing_no_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _write(tmp_path / "r.csv", "user,item,score\nx,1,0.5\n")
    truth = _write(tmp_path / "t.csv", "user,item\ny,1\n")
    code, out, err = run(capsys, "evaluate", recs, truth, "-m", "p@1", "--json")
    # not a score of 0 for y and a skip of x: no shared user is a mistake (issue #16)
    assert code == 2 and out == ""
    assert "no user is in both the recommendations and the truth" in err
    assert "'x'" in err and "'y'" in err and "Traceback" not in err


def test_counts_reconcile_on_a_messy_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _write(tmp_path / "r.csv", RECS + "u1,6,0.1\nu9,1,0.3\n")
    truth = _write(tmp_path / "t.csv", TRUTH + "u1,1,1\nu5,7,0\n")
    code, out, err = run(
        capsys, "evaluate", recs, truth, "-m", "p@2", "--duplicates", "keep", "--json"
    )
    assert code == 0, err
    c = json.loads(out)["counts"]
    assert c["recommendation_rows"] == 8 and c["recommendation_rows_duplicate_dropped"] == 1
    assert c["truth_rows"] == 6 and c["truth_rows_duplicate_dropped"] == 1
    assert c["users"] == c["users_evaluated"] + sum(c["users_skipped"].values())
    assert c["users_in_truth"] == 4  # u1 u2 u3 u5


def test_metrics_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "metrics")
    assert code == 0 and "ndcg" in out and "personalization" in out
    code, out, _ = run(capsys, "explain", "map@10")
    assert code == 0
    assert "ap@10" in out and "denominator" in out and "trec_eval" in out
    code, _, err = run(capsys, "explain", "ndgc")
    assert code == 2 and "did you mean" in err


def test_inspect(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", EXAMPLES / "recs.csv")
    assert code == 0
    assert "users: 3" in out and "duplicate (user, item) rows: 0" in out
    code, out, _ = run(capsys, "inspect", EXAMPLES / "truth.csv", "--truth")
    assert code == 0 and "grades: 1: 12" in out


def test_compare_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.csv", RECS)
    b = _write(tmp_path / "b.csv", RECS.replace("u1,1,1.0", "u1,9,1.0"))
    truth = _write(tmp_path / "t.csv", TRUTH)
    code, out, err = run(capsys, "compare", truth, a, b, "-m", "ndcg@3", "--n-resamples", "200")
    assert code == 0, err
    assert "ndcg@3" in out
    html = tmp_path / "r.html"
    code, _, err = run(capsys, "report", truth, a, b, "--out", html, "-m", "ndcg@3")
    assert code == 0, err
    assert html.read_text().lstrip().lower().startswith("<!doctype html")


def test_demo_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "--out", tmp_path / "demo", "--users", "800")
    assert code == 0
    assert (tmp_path / "demo" / "report.html").is_file()
    assert "item_knn" in out


def test_version_says_the_compiled_part_and_the_extras() -> None:
    """``receval --version``: the version (the package's metadata agrees), whether
    the compiled part is in use, and each optional extra, found or not."""
    import importlib.metadata
    import importlib.util

    import receval
    from receval._accel import NATIVE

    exe = [sys.executable, "-m", "receval", "--version"]
    out = subprocess.run(exe, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == f"receval {receval.__version__}"
    assert receval.__version__ == importlib.metadata.version("receval")
    assert out[1].startswith("compiled part: " + ("in use" if NATIVE is not None else "not built"))
    extras = dict(e.rsplit(" ", 1) for e in out[2].removeprefix("extras: ").split(", "))
    assert set(extras) == {"polars", "plot", "spark", "torch", "mlflow"}
    assert extras["plot"] == ("yes" if importlib.util.find_spec("matplotlib") else "no")
    assert out[3].startswith("Python ")
    env = {**os.environ, "RECEVAL_NATIVE": "0"}
    off = subprocess.run(exe, capture_output=True, text=True, check=True, env=env).stdout
    assert "compiled part: off (RECEVAL_NATIVE=0)" in off


def test_console_script_exit_codes(tmp_path: Path) -> None:
    exe = [sys.executable, "-m", "receval"]
    ok = subprocess.run([*exe, "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and "receval" in ok.stdout
    bad = subprocess.run(
        [*exe, "evaluate", "nope.csv", "nope.csv", "-m", "p@1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    usage = subprocess.run([*exe, "evaluate"], capture_output=True, text=True)
    assert usage.returncode == 2


def test_beyond_accuracy_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs = _write(tmp_path / "r.csv", RECS)
    truth = _write(tmp_path / "t.csv", TRUTH)
    train = _write(tmp_path / "train.csv", "user,item\nx,1\ny,1\ny,2\n")
    catalog = _write(tmp_path / "cat.csv", "item\n1\n2\n3\n6\n8\n9\n")
    feats = _write(tmp_path / "f.csv", "item,a,b\n1,1,0\n2,0,1\n3,1,1\n6,1,0\n8,0,1\n")
    popular = _write(tmp_path / "pop.csv", "item\n1\n")
    code, out, err = run(
        capsys,
        "evaluate",
        recs,
        truth,
        "-m",
        "coverage@3",
        "-m",
        "novelty@3",
        "-m",
        "ild@3",
        "-m",
        "serendipity@3",
        "--train",
        train,
        "--catalog",
        catalog,
        "--item-features",
        feats,
        "--popular",
        popular,
        "--json",
    )
    assert code == 0, err
    m = json.loads(out)["metrics"]
    assert m["coverage@3"] == pytest.approx(5 / 6)  # 1 2 3 6 8 of 6 catalog items
    # u1: item 6; u2: item 2 (item 1 is popular); u3 has no list: 0
    assert m["serendipity@3"] == pytest.approx((1 / 3 + 1 / 3 + 0) / 3)
    assert 0 <= m["ild@3"] <= 1 and m["novelty@3"] > 0
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "ild@3")
    assert code == 2 and "--item-features" in err


def test_evaluate_ratings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ratings = _write(
        tmp_path / "ratings.csv",
        "user,item,actual,predicted\n1,1,3.5,3\n1,2,4,4.5\n1,3,2,1.5\n2,1,5,4.5\n2,2,3,2.5\n",
    )
    code, out, err = run(
        capsys,
        "evaluate-ratings",
        ratings,
        "-m",
        "mae",
        "-m",
        "rmse",
        "-m",
        "rmse[per_user=true]",
        "--json",
    )
    assert code == 0, err
    m = json.loads(out)["metrics"]
    assert m["mae"] == pytest.approx(0.5) and m["rmse"] == pytest.approx(0.5)
    assert m["rmse[per_user=true]"] == pytest.approx(0.5)
    bad = _write(tmp_path / "bad.csv", "user,item,actual,predicted\n1,1,3.5,\n")
    code, _, err = run(capsys, "evaluate-ratings", bad, "-m", "mae")
    assert code == 2 and "bad.csv" in err and "line 2" in err


LOG = "user,item,timestamp\nu1,1,10\nu1,2,20\nu1,3,30\nu2,1,5\nu2,4,15\nu2,5,25\n"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--method", "time", "--cutoff", "abc"], "--cutoff abc"),
        (["--method", "time", "--cutoff", "2020-13-45"], "--cutoff 2020-13-45"),
        (
            ["--method", "time", "--cutoff", "15", "--validation-cutoff", "x"],
            "--validation-cutoff x",
        ),
        (["--method", "time_windows", "--test-length", "5", "--start", "abc"], "--start abc"),
        (["--method", "time_windows", "--test-length", "5", "--end", "abc"], "--end abc"),
    ],
)
def test_a_time_that_is_no_time_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], flag: str
) -> None:
    """A cut-off or window bound that reads as no time exits 2 naming the
    flag as typed (was an internal error, exit 1)."""
    log = _write(tmp_path / "log.csv", LOG)
    code, _, err = run(capsys, "split", log, "--out", tmp_path / "parts", *args)
    assert code == 2, err
    assert f"{flag} is not allowed: expected a time" in err and "Traceback" not in err
    assert not (tmp_path / "parts").exists() or not any((tmp_path / "parts").iterdir())


@pytest.mark.parametrize(
    ("content", "args", "words"),
    [
        (TRUTH, [], ["looks like a truth", "inspect it as one with --truth"]),
        (
            "user,item,score\nu1,1,0.5\nu1,2,abc\n",
            [],
            ["line 3", "score must be a finite", "'abc'"],
        ),
        ("user,item,rank\nu1,1,1\nu1,2,0\n", [], ["line 3", "rank must be a positive integer"]),
    ],
)
def test_inspect_reads_a_file_as_the_evaluation_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, args: list, words: list
) -> None:
    """inspect refuses what evaluate refuses (a bad score or rank, named by
    its line), and a truth read as recommendations says --truth."""
    path = _write(tmp_path / "f.csv", content)
    code, _, err = run(capsys, "inspect", path, *args)
    assert code == 2 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    if content == TRUTH:
        assert run(capsys, "inspect", path, "--truth")[0] == 0


def test_a_propensities_file_that_is_not_there_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Even with no weighted metric (so the propensities are not read), a
    mistyped path is an error, not a note."""
    recs, truth = _write(tmp_path / "r.csv", RECS), _write(tmp_path / "t.csv", TRUTH)
    code, _, err = run(capsys, "evaluate", recs, truth, "-m", "ndcg@3", "--propensities", "nope")
    assert code == 2 and "nope: no such file" in err, err
    code, out, err = run(capsys, "evaluate", recs, truth, "-m", "ndcg@3", "--propensities", recs)
    assert code == 0 and "propensities were given but no metric is weighted" in out + err, err
