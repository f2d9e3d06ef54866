"""Hostile data (#17 point 5): spreadsheet-bound CSVs neutralise formulas,
data exports keep ids exact, Markdown tables keep their columns, the HTML
report escapes everything. Real evaluations, real files, the real CLI."""

from __future__ import annotations

import csv
import html as htmllib
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.analysis.compare import Comparison, compare
from receval.analysis.formatting import spreadsheet_cell, spreadsheet_safe
from receval.analysis.report import report
from receval.evaluation.result import markdown_escape
from receval.io.write import OutputSet
from receval.workflow import demo

#: System names a spreadsheet would run, or that break a table or a page.
FORMULA = "=cmd|' /C calc'!A0"
HOSTILE = [
    FORMULA,
    "+1+2",
    "-2+3",
    "@SUM(A1:A9)",
    "\tTab",
    "\rCR",
    '<script>alert("x")</script>',
    "a|b\\|c\nd",
]
#: Text that looks like a number is a number to a spreadsheet, not a formula.
NUMERIC_TEXT = "-1.5"

TRUTH = {u: [u % 5, 5 + u % 3] for u in range(30)}


def _run(shift: int) -> dict[int, list[int]]:
    return {u: [(u + shift) % 5, 5 + (u + shift) % 3, 9] for u in range(30)}


def _spreadsheet(name: str) -> str:
    """What the CSV cell of a system name must read."""
    formula = name.startswith(("=", "+", "-", "@", "\t", "\r")) and name != NUMERIC_TEXT
    return "'" + name if formula else name


@pytest.fixture(scope="module")
def cmp() -> Comparison:
    names = ["x", NUMERIC_TEXT, *HOSTILE]
    runs = {n: _run(0 if i == 0 else i % 4) for i, n in enumerate(names)}
    return compare(
        runs, TRUTH, ["p@2", "coverage@2"], n_resamples=50, ci="percentile", catalog=range(10)
    )


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_spreadsheet_cell_rule() -> None:
    for bad in HOSTILE[:6]:
        assert spreadsheet_cell(bad) == "'" + bad
    for kept in ("x", "a=b", "1e-3", "-1.5", "+2", "-.5", "-1e-07", "", "'=already"):
        assert spreadsheet_cell(kept) == kept
    for not_text in (-2.5, float("nan"), None, 3, True):
        value = spreadsheet_cell(not_text)
        assert value is not_text or (isinstance(value, float) and math.isnan(value))
    frame = pd.DataFrame(
        {"name": ["=a", "-b", "c"], "v": [-1.0, float("nan"), 2.0]},
        index=pd.Index(["@i", "j", "-3"], name="=idx"),
    )
    safe = spreadsheet_safe(frame)
    assert list(safe["name"]) == ["'=a", "'-b", "c"]
    assert safe["v"].to_numpy().tobytes() == frame["v"].to_numpy().tobytes()
    assert list(safe.index) == ["'@i", "j", "-3"] and safe.index.name == "'=idx"
    assert list(frame["name"]) == ["=a", "-b", "c"]  # the input is not changed


def test_comparison_csv_neutralises_text_keeps_numbers(cmp: Comparison, tmp_path: Path) -> None:
    path = tmp_path / "comparison.csv"
    text = cmp.to_csv(path)
    assert path.read_bytes().decode("utf-8") == text
    rows = _csv_rows(text)
    long = cmp.to_long()
    assert len(rows) == len(long)
    for row, (_, ref) in zip(rows, long.iterrows(), strict=True):
        assert row["system"] == _spreadsheet(ref["system"])
        if isinstance(ref["versus"], str):
            assert row["versus"] == _spreadsheet(ref["versus"])
            # winner is a name too
            if isinstance(ref["winner"], str):
                assert row["winner"] == _spreadsheet(ref["winner"])
        for col in ("mean", "diff", "ci_low", "ci_high", "p_value", "statistic"):
            value = ref[col]
            if pd.isna(value):
                assert row[col] == ""
            else:
                assert float(row[col]) == float(value), col  # full precision, unquoted
        if isinstance(ref["beats"], str) and ref["beats"]:
            assert row["beats"] == _spreadsheet(ref["beats"])
    diffs = [float(r["diff"]) for r in rows if r["diff"]]
    assert any(d < 0 for d in diffs) and all(not r["diff"].startswith("'") for r in rows)
    assert any(r["ci_low"] == "" for r in rows)  # NaN (the aggregate metric) stays empty
    assert any(r["system"] == NUMERIC_TEXT for r in rows)
    assert any(r["system"] == "'" + FORMULA for r in rows)


def test_to_long_keeps_names_exact(cmp: Comparison) -> None:
    long = cmp.to_long()
    assert set(long["system"]) == set(cmp.systems)
    assert FORMULA in set(long["versus"].dropna())


def _md_cells(line: str) -> list[str]:
    """The cells of a GFM table row, as a renderer shows them: split on
    unescaped pipes, backslash escapes undone, ``<br>`` a line break."""
    cells, cur, i = [], "", 0
    body = line.strip()
    assert body.startswith("|") and body.endswith("|"), line
    body = body[1:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur += body[i + 1]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur)
    return [c.strip(" \t").replace("<br>", "\n") for c in cells]


def _raw_tags(md: str) -> set[str]:
    """The HTML tags a Markdown renderer would see (``\\<`` is a plain ``<``)."""
    return set(re.findall(r"(?<!\\)<(/?\w+)", md))


def _shown(name: str) -> str:
    """A name as a Markdown cell shows it (line breaks as one; \\r\\n and \\r too)."""
    return name.replace("\r\n", "\n").replace("\r", "\n").strip(" \t")


def test_markdown_escape() -> None:
    assert markdown_escape("a|b") == "a\\|b"
    assert markdown_escape("C:\\x|y") == "C:\\\\x\\|y"
    assert markdown_escape("<script>") == "\\<script>"
    assert markdown_escape("1\n2\r\n3\r4") == "1<br>2<br>3<br>4"
    assert markdown_escape(-1.5) == "-1.5"
    for name in HOSTILE:
        row = f"| {markdown_escape(name)} | 1 |"
        assert "\n" not in row and _md_cells(row) == [_shown(name), "1"]


def test_comparison_markdown_keeps_columns(cmp: Comparison) -> None:
    md = cmp.to_markdown()
    assert _raw_tags(md) <= {"sup", "/sup", "br"}
    lines = md.splitlines()
    head = lines.index("| | system | precision@2 | coverage@2 |")
    board = lines[head + 2 : head + 2 + len(cmp.systems)]
    for name, line in zip(cmp.systems, board, strict=True):
        cells = _md_cells(line)
        assert len(cells) == 4 and cells[:2] == [cmp.letters[name], _shown(name)]
    table = lines[lines.index("| system | mean | 95% CI |") + 2 :][: len(cmp.systems)]
    for name, line in zip(cmp.systems, table, strict=True):
        cells = _md_cells(line)
        assert len(cells) == 3 and cells[0] == _shown(f"{cmp.letters[name]} {name}")
    pair_rows = [x for x in lines if " − " in x and x.startswith("| ")]
    assert len(pair_rows) == len(cmp.pairs)
    for line, (a, b) in zip(pair_rows, cmp.pairs.index.droplevel(0), strict=True):
        cells = _md_cells(line)
        assert len(cells) == 7 and cells[0] == _shown(f"{a} − {b}")
        assert cells[1].startswith(("+", "-"))  # a signed number, as it was


def test_result_markdown_rows() -> None:
    res = receval.evaluate({"=u": ["|i"]}, {"=u": ["|i"]}, ["p@1", "ndcg@3"])
    lines = res.to_markdown().splitlines()
    assert [_md_cells(x) for x in lines[2:]] == [
        ["precision@1", "1.0000", "1"],
        ["ndcg@3", "1.0000", "1"],
    ]


def test_demo_files(cmp: Comparison, tmp_path: Path) -> None:
    """leaderboard.csv / significance.csv neutralised, leaderboard.md escaped."""
    results = cmp.results
    board = cmp.to_frame().rename_axis("system")  # demo._leaderboard's shape
    protocol = demo._Protocol(
        source="my|data\n.csv",
        relevance=demo.Relevance(column=None, threshold=None, phrase="every item"),
        split_text="by time",
    )
    with OutputSet(tmp_path, "demo") as out:
        files = demo._write_outputs(out, board, cmp, results, protocol)
    rows = _csv_rows(files["leaderboard_csv"].read_bytes().decode("utf-8"))
    assert [r["system"] for r in rows] == [_spreadsheet(s) for s in board.index]
    for r, (_, ref) in zip(rows, board.iterrows(), strict=True):
        assert [float(r[c]) for c in board.columns] == list(ref)
    sig = files["significance_csv"].read_bytes().decode("utf-8")
    assert sig == cmp.to_csv()
    md = files["leaderboard_md"].read_text(encoding="utf-8")
    assert "- data: my\\|data<br>.csv" in md and _raw_tags(md) <= {"sup", "/sup", "br"}
    last = md.splitlines()[-len(board) :]
    for name, line in zip(board.index, last, strict=True):
        cells = _md_cells(line)
        assert cells[0] == _shown(name) and len(cells) == 1 + len(board.columns)


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "receval", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=240,
    )


def test_cli_compare_csv_and_markdown(tmp_path: Path) -> None:
    pd.DataFrame(
        [(u, i) for u, items in TRUTH.items() for i in items], columns=["user", "item"]
    ).to_csv(tmp_path / "truth.csv", index=False)
    for n in (0, 1):
        pd.DataFrame(
            [(u, i, r + 1) for u, items in _run(n).items() for r, i in enumerate(items)],
            columns=["user", "item", "rank"],
        ).to_csv(tmp_path / f"r{n}.csv", index=False)
    names = f"{FORMULA.replace(',', ';')},@evil|x"
    args = ["compare", "truth.csv", "r0.csv", "r1.csv", "--names", names, "-m", "p@2"]
    done = _cli(*args, "--n-resamples", "50", "-o", "csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = _csv_rows(done.stdout)
    assert [r["system"] for r in rows] == ["'" + FORMULA, "'@evil|x", "'" + FORMULA]
    assert rows[2]["versus"] == "'@evil|x" and float(rows[2]["diff"]) != 0
    done = _cli(*args, "--n-resamples", "50", "-o", "markdown", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("| b |"))
    assert _md_cells(line)[:2] == ["b", "@evil|x"]


def test_per_user_export_keeps_ids_exact(tmp_path: Path) -> None:
    """A data export: hostile user ids come back exactly (CSV and Parquet)."""
    users = [FORMULA, "-1", "+x", "@u", "=1+2", "a|b", "q\"uote'"]
    truth = pd.DataFrame({"user": users, "item": ["i"] * len(users)})
    recs = pd.DataFrame({"user": users, "item": ["i"] * len(users), "rank": 1})
    truth.to_csv(tmp_path / "truth.csv", index=False)
    recs.to_csv(tmp_path / "recs.csv", index=False)
    for out in ("pu.csv", "pu.parquet"):
        done = _cli(
            "evaluate", "recs.csv", "truth.csv", "-m", "p@1", "--per-user", out, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        if out.endswith(".csv"):
            back = pd.read_csv(tmp_path / out, dtype={"user": str}, keep_default_na=False)
        else:
            back = pd.read_parquet(tmp_path / out)
        assert sorted(back["user"].astype(str)) == sorted(users)


def test_report_escapes_hostile_names(tmp_path: Path) -> None:
    truth = {FORMULA: ["<i>"], '"q"': ["a&b"], "<u>": ["<i>"]}
    runs = {
        '<script>alert("x")</script>': {u: ["<i>", "a&b"] for u in truth},
        FORMULA: {u: ["a&b", "<i>"] for u in truth},
        'it\'s "quoted"': {u: ["z"] for u in truth},
    }
    rep = report(
        runs,
        truth,
        ["p@1", "coverage@2"],
        out=tmp_path / "r.html",
        n_resamples=50,
        catalog=["<i>", "a&b", "z"],
    )
    page = rep.html
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(" in page
    assert "<u>" not in page and "<i>" not in page
    text = htmllib.unescape(page)
    for name in runs:
        assert name in text
    # attributes stay closed: every quote inside a name is an entity
    assert 'it\'s "quoted"' not in page


def test_split_outputs_keep_ids_exact(tmp_path: Path) -> None:
    """A data export: ``receval split`` writes the hostile ids as they were read."""
    users = [FORMULA, "-1", "+x", "@u", "a|b"]
    log = pd.DataFrame(
        {
            "user": sorted(users * 5),
            "item": [f"=i{j}" for j in range(25)],
            "timestamp": range(25),
        }
    )
    log.to_csv(tmp_path / "log.csv", index=False)
    done = _cli("split", "log.csv", "--out", "sp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    parts = [pd.read_parquet(tmp_path / "sp" / f"{p}.parquet") for p in ("train", "test")]
    back = pd.concat(parts)
    got = sorted(zip(back["user"].astype(str), back["item"].astype(str), strict=True))
    assert got == sorted(zip(log["user"], log["item"], strict=True))
