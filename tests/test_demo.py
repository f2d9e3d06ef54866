"""The demo: ordering of the baselines, every output file, MovieLens formats."""

from __future__ import annotations

import contextlib
import html as htmllib
import io
import re
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.analysis.formatting import fmt_p, fmt_value, superscript
from receval.errors import InputError, ReceValError
from receval.io.interactions import detect_format, read_interactions
from receval.workflow.demo import COMPARED, DEFAULT_THRESHOLD, N_RESAMPLES, SYSTEMS, run_demo
from receval.workflow.synthetic import synthetic_interactions


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        out = run_demo(tmp_path_factory.mktemp("demo"), users=2000)
    return {**out, "console": console.getvalue()}


def test_ordering(demo: dict) -> None:
    board = demo["leaderboard"]
    ndcg = board["ndcg@10"]
    assert ndcg["item_knn"] > ndcg["popular"] > ndcg["random"]
    assert list(board.index) == list(SYSTEMS)
    assert board.loc["random", "coverage@10"] > board.loc["popular", "coverage@10"]
    sig = demo["significance"]
    main = sig[(sig["metric"] == "ndcg@10") & sig["versus"].notna()]
    assert len(main) == 3 and main["significant"].all()
    table = demo["comparison"].table.loc["ndcg@10"]
    assert table.loc["item_knn", "wins"] == "bc" and table.loc["popular", "wins"] == "c"
    assert demo["comparison"].letters == {"item_knn": "a", "popular": "b", "random": "c"}


def test_files(demo: dict) -> None:
    files = demo["files"]
    for name in (
        "leaderboard_csv",
        "leaderboard_md",
        "significance_csv",
        "results_json",
        "split_train",
        "split_test",
        "split_info",
        "report_html",
        *(f"run_{s}" for s in SYSTEMS),
    ):
        assert Path(files[name]).is_file(), name
    run = pd.read_parquet(files["run_item_knn"])
    assert list(run.columns) == ["user", "item", "score", "rank"]
    assert "item_knn" in Path(files["leaderboard_md"]).read_text()
    board = pd.read_csv(files["leaderboard_csv"], index_col=0)
    assert board.loc["item_knn", "ndcg@10"] == pytest.approx(
        demo["leaderboard"].loc["item_knn", "ndcg@10"]
    )


def test_one_story(demo: dict) -> None:
    """Regression: the console and leaderboard.md showed a comparison (3 metrics,
    2000 resamples) other than the report's (4 metrics, 1000 resamples). Console,
    leaderboard.md, significance.csv and report.html now show one comparison."""
    cmp = demo["comparison"]
    assert demo["report"].comparison is cmp
    assert cmp.metrics == list(COMPARED) and cmp.settings["n_resamples"] == N_RESAMPLES
    files = demo["files"]
    console = demo["console"]
    md = Path(files["leaderboard_md"]).read_text(encoding="utf-8")
    html = Path(files["report_html"]).read_text(encoding="utf-8")
    csv = pd.read_csv(files["significance_csv"], keep_default_na=False, na_values=[""])

    # the same footnote (test, correction, number of comparisons) everywhere
    for text in (console, md, htmllib.unescape(html)):
        assert cmp.footnote() in text
    assert f"{N_RESAMPLES} resamples" in md and f"<dd>{N_RESAMPLES}</dd>" in html

    # letters: console, Markdown, CSV and HTML against the comparison
    board = console[console.index("   system") :].splitlines()[2 : 2 + len(cmp.systems)]
    html_cells = dict(
        ((htmllib.unescape(m), htmllib.unescape(s)), body)
        for m, s, body in re.findall(
            r'<td data-metric="([^"]+)" data-system="([^"]+)">(.*?)</td>', html
        )
    )
    md_rows = {
        r.split("|")[2].strip(): [c.strip() for c in r.split("|")[3:-1]]
        for r in md.splitlines()
        if r.startswith("| ") and r.count("|") == len(cmp.metrics) + 3
    }
    systems = csv[csv["versus"].isna()].set_index(["metric", "system"])
    for line in board:
        letter, name, *cells = line.split()
        assert cmp.letters[name] == letter
        for m, cell in zip(cmp.metrics, cells, strict=True):
            wins = cmp.table.loc[(m, name), "wins"]
            mean = cmp.table.loc[(m, name), "mean"]
            assert cell == fmt_value(mean) + (superscript(wins) if wins else ""), (m, name)
            md_marks = re.findall(r"<sup>(\w+)</sup>", md_rows[name][cmp.metrics.index(m)])
            assert (md_marks[0] if md_marks else "") == wins
            csv_wins = systems.loc[(m, name), "wins"]
            assert (csv_wins if isinstance(csv_wins, str) else "") == wins
            html_marks = re.findall(r'<sup class="wins">(\w+)</sup>', html_cells[(m, name)])
            assert (html_marks[0] if html_marks else "") == wins
    assert any(cmp.table["wins"] != "")

    # p-values: CSV (full precision), Markdown and HTML (as printed)
    pairs = csv[csv["versus"].notna()].set_index(["metric", "system", "versus"])
    sections = dict(part.split("\n", 1) for part in md.split("### ")[1:])
    html_rows = dict(re.findall(r'<tr data-pair="([^"]+)">(.*?)</tr>', html))
    assert len(pairs) == len(cmp.pairs) == 12
    for (m, a, b), row in cmp.pairs.iterrows():
        assert pairs.loc[(m, a, b), "p_value"] == row["p_value"]
        assert pairs.loc[(m, a, b), "p_adjusted"] == row["p_adjusted"]
        line = next(x for x in sections[m].splitlines() if x.startswith(f"| {a} − {b} |"))
        assert fmt_p(row["p_adjusted"]) in line.split("|")[6]
        cells = re.findall(r"<td[^>]*>(.*?)</td>", html_rows[f"{m}|{a}|{b}"])
        assert cells[-4] == fmt_p(row["p_value"])
        assert cells[-3].removesuffix(" *") == fmt_p(row["p_adjusted"])


def test_relevance_is_stated(demo: dict) -> None:
    rel = demo["relevance"]
    assert rel.column == "rating" and rel.threshold == DEFAULT_THRESHOLD
    assert "column rating as graded relevance" in rel.text and "≥ 4" in rel.text
    assert f"relevance: {rel.text}" in demo["console"]
    html = htmllib.unescape(Path(demo["files"]["report_html"]).read_text(encoding="utf-8"))
    assert f"<dt>relevance</dt><dd>{rel.text}</dd>" in html
    assert f"- relevance: {rel.text}" in Path(demo["files"]["leaderboard_md"]).read_text()
    for res in demo["results"].values():
        assert res.parameters["threshold"] == DEFAULT_THRESHOLD
    # users whose test ratings are all below the threshold are said, not hidden
    skipped = demo["results"]["random"].counts["users_skipped"]["no_relevant_items"]
    assert skipped > 0
    assert f"note: {skipped} test users have no test rating ≥ 4" in demo["console"]


def test_threshold_decides_what_is_relevant(tmp_path: Path) -> None:
    log = small_log()
    four = run_demo(tmp_path / "a", interactions=log, quiet=True)
    one = run_demo(tmp_path / "b", interactions=log, threshold=1, quiet=True)
    assert one["relevance"].threshold == 1.0
    assert "≥ 1 (threshold=1 to change it)" in one["relevance"].text
    # every test interaction is relevant at 1: nobody lacks a relevant item
    assert one["results"]["random"].counts["users_skipped"]["no_relevant_items"] == 0
    assert four["results"]["random"].counts["users_skipped"]["no_relevant_items"] > 0
    # graded: the truth carries the ratings
    res = receval.evaluate(
        pd.read_parquet(four["files"]["run_popular"]),
        rated_truth(four),
        "ndcg@10",
        train=four["split"].train[["user", "item"]],
        threshold=4,
    )
    assert res.summary["ndcg@10"] == four["results"]["popular"].summary["ndcg@10"]


def rated_truth(out: dict) -> pd.DataFrame:
    """The demo's truth rebuilt by hand: the test ratings as relevance grades."""
    test = out["split"].test
    grades = test.groupby(["user", "item"], sort=False)["rating"].max()
    return grades.rename("relevance").reset_index()


def test_without_ratings_every_interaction_is_relevant(tmp_path: Path) -> None:
    log = small_log().drop(columns=["rating"])
    out = run_demo(tmp_path, interactions=log, quiet=True)
    assert out["relevance"].column is None and out["relevance"].threshold is None
    assert "every test interaction is relevant" in out["relevance"].text
    assert out["results"]["random"].parameters["threshold"] == 1.0
    with pytest.raises(ReceValError, match="threshold=4 needs a rating column"):
        run_demo(tmp_path / "x", interactions=log, threshold=4, quiet=True)


def test_prints_where_files_went(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_demo(tmp_path, users=300)
    out = capsys.readouterr().out
    assert "leaderboard_csv: " in out and str(tmp_path) in out
    assert "item_knn" in out


def small_log() -> pd.DataFrame:
    return synthetic_interactions(300, 80, seed=4)


def write(path: Path, fmt: str, log: pd.DataFrame) -> None:
    rows = log[["user", "item", "rating", "timestamp"]].itertuples(index=False)
    if fmt == "u.data":
        path.write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in rows))
    elif fmt == "ratings.dat":
        path.write_text("".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in rows))
    else:
        text = "userId,movieId,rating,timestamp\n"
        path.write_text(text + "".join(f"{u},{i},{r}.0,{t}\n" for u, i, r, t in rows))


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("u.data", "movielens-udata"),
        ("ratings.dat", "movielens-dat"),
        ("ratings.csv", "movielens-csv"),
    ],
)
def test_movielens_formats(tmp_path: Path, name: str, fmt: str) -> None:
    log = small_log()
    path = tmp_path / name
    write(path, name, log)
    assert detect_format(path) == fmt
    read = read_interactions(path)
    assert list(read.columns) == ["user", "item", "rating", "timestamp"]
    assert read["user"].tolist() == log["user"].tolist()
    assert read["timestamp"].tolist() == log["timestamp"].tolist()
    out = run_demo(tmp_path / "out", interactions=path, quiet=True)
    assert out["split"].info["method"] == "user_time"
    assert set(out["leaderboard"].index) == set(SYSTEMS)
    assert Path(out["files"]["leaderboard_csv"]).is_file()


def test_own_csv_and_parquet(tmp_path: Path) -> None:
    log = small_log().rename(columns={"user": "customer", "item": "product"})
    csv = tmp_path / "log.csv"
    log.drop(columns=["timestamp"]).to_csv(csv, index=False)
    read = read_interactions(csv, user_col="customer", item_col="product")
    assert list(read.columns) == ["user", "item", "rating"]
    out = run_demo(tmp_path / "out", interactions=read, quiet=True)
    assert out["split"].info["method"] == "user_random"
    assert any("no timestamp" in n for n in out["notes"])
    pq = tmp_path / "log.parquet"
    small_log().to_parquet(pq)
    assert detect_format(pq) == "parquet"
    assert read_interactions(pq).equals(small_log())
    with pytest.raises(InputError, match="no user column"):
        read_interactions(csv)


def test_synthetic_is_deterministic() -> None:
    a = synthetic_interactions(200, 50, seed=9)
    assert a.equals(synthetic_interactions(200, 50, seed=9))
    assert not a.equals(synthetic_interactions(200, 50, seed=10))
    assert not a.duplicated(["user", "item"]).any()
    assert a["rating"].between(1, 5).all()
    assert a["timestamp"].is_monotonic_increasing


def test_progress_is_silent_unless_asked(tmp_path, capsys) -> None:
    """The library says nothing unless asked; progress=True names each long
    step on stderr as it starts and its time as it ends (issue #19 point 3)."""
    from receval.workflow.demo import run_demo

    run_demo(tmp_path / "a", users=300, console=lambda s: None)
    assert capsys.readouterr().err == ""
    seen: list[str] = []

    def step(what: str):
        import contextlib

        seen.append(what)
        return contextlib.nullcontext()

    run_demo(tmp_path / "b", users=300, console=lambda s: None, progress=step)
    assert seen[0] == "generating 300 users" and any("comparing" in s for s in seen)
    run_demo(tmp_path / "c", users=300, console=lambda s: None, progress=True)
    err = capsys.readouterr().err.splitlines()
    assert "receval demo: splitting" in err[2] and err[3].endswith(" s")
    run_demo(tmp_path / "d", users=300, quiet=True, progress=True)
    assert capsys.readouterr().err == ""
