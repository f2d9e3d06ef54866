"""Next-item results in the report (``receval.report(next_items=...)``) and the
``receval next-items`` command (issue #36 point 2)."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.formatting import fmt_value
from receval.analysis.report.html import next_item_positions
from receval.cli import main
from receval.errors import ReceValError
from tests.required import imported

METRICS = ["mrr@3", "recall@3"]

SESSIONS = pd.DataFrame(
    {
        "session": ["s1"] * 4 + ["s2"] * 2 + ["s3"] * 3,
        "user": ["u1"] * 4 + ["u2"] * 2 + ["u1"] * 3,
        "item": ["a", "b", "c", "b", "d", "e", "x", "y", "z"],
        "time": [1, 2, 3, 4, 1, 2, 1, 2, 3],
    }
)
#: s1: a b c b (steps 1..3), s2: d e (step 1), s3: x y z (steps 1, 2)
LISTS = pd.DataFrame(
    {
        "session": ["s1"] * 6 + ["s2"] * 2 + ["s3"] * 4,
        "step": [1, 1, 2, 2, 3, 3, 1, 1, 1, 1, 2, 2],
        "item": ["b", "q", "q", "c", "q", "r", "e", "d", "y", "z", "q", "z"],
        "rank": [1, 2] * 6,
    }
)


def _results() -> dict[str, receval.NextItemResult]:
    worse = LISTS.assign(rank=3 - LISTS["rank"])  # every list reversed
    return {
        "model": receval.evaluate_next_items(LISTS, SESSIONS, METRICS),
        "reversed": receval.evaluate_next_items(worse, SESSIONS, METRICS),
    }


@pytest.fixture(scope="module")
def results() -> dict[str, receval.NextItemResult]:
    return _results()


def _cells(page: str, metric: str) -> dict[tuple[int, str], str]:
    """The by-position table of ``metric``: (step, system) -> the cell's text."""
    table = re.search(
        rf"<table class='positions' data-metric='{re.escape(metric)}'>.*?</table>", page
    )
    assert table is not None
    out = {}
    for step, row in re.findall(r'<tr data-step="(\d+)">(.*?)</tr>', table.group(0)):
        for system, text in re.findall(r'<td data-system="([^"]+)">([^<]*)</td>', row):
            out[(int(step), htmllib.unescape(system))] = text
    return out


def test_hand_worked_positions(results: dict[str, receval.NextItemResult]) -> None:
    # model: s1 steps 1 (b: rr 1), 2 (c at 2: 1/2), 3 (b not listed: 0); s2 step 1 (e: 1);
    # s3 step 1 (y: 1), 2 (z at 2: 1/2). By position: t=1: (1+1+1)/3, t=2: (1/2+1/2)/2, t=3: 0
    frame = next_item_positions(results, ["rr@3"])
    model = frame[frame["system"] == "model"]
    assert model["step"].tolist() == [1, 2, 3]
    assert model["sessions"].tolist() == [3, 2, 1]
    assert model["value"].tolist() == [1.0, 0.5, 0.0]
    # reversed: t=1: s1 b at 2, s2 e at 2, s3 y at 2 -> 1/2; t=2: s1 c at 1, s3 z at 1 -> 1
    rev = frame[frame["system"] == "reversed"]
    assert rev["value"].tolist() == [0.5, 1.0, 0.0]


def test_section_draws_each_metric_by_position_and_the_paired_comparison(
    results: dict[str, receval.NextItemResult],
) -> None:
    truth = {1: [1, 2], 2: [3]}
    runs = {"x": {1: [1, 3], 2: [3, 1]}, "y": {1: [3, 1], 2: [1, 2]}}
    rep = receval.report(runs, truth, "ndcg@2", n_resamples=200, next_items=results)
    assert rep.charts[-2:] == ["position-rr@3", "position-recall@3"]
    page = rep.html
    assert "<h2>Next items: metric by position in session</h2>" in page
    assert "Paired comparison over sessions" in page and "(3 sessions compared)" in page
    for m in ("rr@3", "recall@3"):
        cells = _cells(page, m)
        for name, res in results.items():
            assert res.by_position is not None
            for t, value in res.by_position[m].items():
                assert cells[(int(t), name)] == fmt_value(value)
    # the comparison is compare's over the results, exactly
    assert rep.next_items_comparison is not None
    direct = receval.compare(results, None, ["rr@3", "recall@3"], n_resamples=200)
    pd.testing.assert_frame_equal(rep.next_items_comparison.table, direct.table)
    assert len(rep.next_items_comparison.aligned["rr@3"]) == 3  # sessions are the units
    # the runs' page is unchanged: its comparison is of the runs
    assert rep.comparison.systems == ["x", "y"]
    assert list(rep.positions.columns) == ["system", "metric", "step", "sessions", "value"]


def test_next_items_alone_make_a_page_of_their_own(
    results: dict[str, receval.NextItemResult], tmp_path: Path
) -> None:
    out = tmp_path / "n.html"
    rep = receval.report({}, None, next_items=results, n_resamples=100, out=out, title="seq")
    assert rep.comparison is rep.next_items_comparison
    assert rep.charts == ["position-rr@3", "position-recall@3"] and rep.curves.empty
    page = out.read_text(encoding="utf-8")
    assert page == rep.html and "<h2>Leaderboard</h2>" not in page
    assert "Next items: metric by position in session" in page
    assert "How these numbers were produced" in page and "curves up to K" not in page
    assert "3 sessions evaluated" in page
    assert str(rep).startswith("receval report of 2 systems, 2 charts")
    one = receval.report(None, None, next_items=results["model"], n_resamples=100)
    assert one.comparison.systems == ["model"] and "pairs" not in one.html
    only = receval.report(None, None, "recall@3", next_items=results, n_resamples=100)
    assert only.charts == ["position-recall@3"]


def test_the_average_says_what_the_paired_units_are() -> None:
    res = receval.evaluate_next_items(LISTS, SESSIONS, METRICS, average="users")
    rep = receval.report(None, None, next_items={"m": res}, n_resamples=100)
    assert "Paired comparison over users" in rep.html
    assert len(rep.comparison.aligned["rr@3"]) == 2  # u1, u2


def test_the_results_options_are_the_comparisons(
    results: dict[str, receval.NextItemResult],
) -> None:
    """Regression: results evaluated under other options than the defaults were
    refused by the comparison (it evaluated nothing, but checked them against its own)."""
    kw = {"duplicates": "keep", "convention": "trec_eval"}
    keep = {n: receval.evaluate_next_items(LISTS, SESSIONS, METRICS, **kw) for n in "ab"}
    rep = receval.report(None, None, next_items=keep, n_resamples=50)
    assert rep.comparison.settings["evaluate"]["duplicates"] == "keep"
    with pytest.raises(ReceValError, match="convention='receval' is not allowed"):
        receval.report(None, None, next_items={"a": keep["a"], "c": results["model"]})


def test_errors_say_what_was_expected(results: dict[str, receval.NextItemResult]) -> None:
    remaining = receval.evaluate_next_items(LISTS, SESSIONS, METRICS, target="remaining")
    with pytest.raises(ReceValError, match=r"target='remaining'.*share target, steps"):
        receval.report(None, None, next_items={"a": results["model"], "b": remaining})
    with pytest.raises(ReceValError, match="'b' is a dict"):
        receval.report(None, None, next_items={"a": results["model"], "b": {}})
    with pytest.raises(ReceValError, match=r"NextItemResult.*got list"):
        receval.report(None, None, next_items=[results["model"]])
    with pytest.raises(ReceValError, match="truth is not read"):
        receval.report(None, {1: [1]}, next_items=results)
    with pytest.raises(ReceValError, match="threshold apply to runs"):
        receval.report(None, None, next_items=results, threshold=2)
    with pytest.raises(ReceValError, match="ndcg@3 is not a metric of every next-item"):
        receval.report(None, None, "ndcg@3", next_items=results)
    with pytest.raises(ReceValError, match="or next_items="):
        receval.report({}, None, "ndcg@3")


def test_png_images_of_next_items_alone(
    results: dict[str, receval.NextItemResult], tmp_path: Path
) -> None:
    imported("matplotlib")
    rep = receval.report(None, None, next_items=results, n_resamples=50, png_dir=tmp_path)
    assert sorted(p.name for p in rep.images) == ["position_recall_3.png", "position_rr_3.png"]


# -- the command ------------------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    lists, sessions = tmp_path / "lists.csv", tmp_path / "sessions.parquet"
    LISTS.to_csv(lists, index=False)
    SESSIONS.to_parquet(sessions, index=False)
    return lists, sessions


def test_command_prints_and_writes_what_the_library_computes(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lists, sessions = files
    want = receval.evaluate_next_items(LISTS, SESSIONS, METRICS, average="sessions")
    per_session, by_position = tmp_path / "ps.parquet", tmp_path / "bp.csv"
    page = tmp_path / "r.html"
    code, out, err = _run(
        capsys,
        "next-items",
        lists,
        sessions,
        *("-m", "mrr@3", "-m", "recall@3", "--average", "sessions"),
        *("--per-session", per_session, "--by-position", by_position, "--report", page),
        *("--json", "--n-resamples", "50"),
    )
    assert code == 0, err
    got = json.loads(out)
    assert got["metrics"] == want.summary
    assert got["by_position"][0] == {"step": 1, "steps": 3, "rr@3": 1.0, "recall@3": 1.0}
    assert got["parameters"]["average"] == "sessions"
    pd.testing.assert_frame_equal(
        pd.read_parquet(per_session).set_index("session"), want.per_session
    )
    written = pd.read_csv(by_position).set_index("step")
    assert written["rr@3"].tolist() == want.by_position["rr@3"].tolist()  # type: ignore[index]
    assert "Next items: metric by position in session" in page.read_text(encoding="utf-8")
    assert f"report: {page}" in err
    code, out, _ = _run(capsys, "next-items", lists, sessions, "-m", "mrr@3", "-o", "csv")
    assert code == 0 and out.splitlines()[:2] == ["metric,mean,users", "rr@3,0.6666666666666666,6"]
    code, _, err = _run(
        capsys,
        "next-items",
        lists,
        sessions,
        "-m",
        "mrr@3",
        "--duplicates",
        "keep",
        "--report",
        page,
        "--n-resamples",
        "20",
        "-q",
    )
    assert code == 0 and err == "" and "duplicates" in page.read_text(encoding="utf-8")
    code, out, _ = _run(capsys, "next-items", lists, sessions, "-m", "mrr@3", "--steps", "last")
    assert code == 0 and "3 steps evaluated of 3" in out


def test_command_bad_input_exits_2_naming_the_file_row_or_flag(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lists, sessions = files
    bad = tmp_path / "bad.csv"
    bad.write_text("session,step,item,rank\ns1,1,b,1\ns1,7,x,1\n")
    old = tmp_path / "old.csv"
    old.write_text("kept\n")
    code, out, err = _run(capsys, "next-items", bad, sessions, "-m", "mrr@3", "--per-session", old)
    assert code == 2 and out == ""
    assert "bad.csv, line 3: a list for step 7 of session 's1'" in err
    assert old.read_text() == "kept\n"  # nothing written: whole or absent
    # a bad row of a list: its line, the session and step (not an internal unit and row)
    for text, said in (
        ("s1,1,b,1\ns1,1,b,2\n", "line 3, item 'b': session 's1', step 1: the item appears"),
        ("s1,1,b,1\ns1,1,c,0\n", "line 3, item 'c': session 's1', step 1: rank must be"),
    ):
        bad.write_text("session,step,item,rank\n" + text)
        code, _, err = _run(capsys, "next-items", bad, sessions, "-m", "mrr@3")
        assert code == 2 and f"bad.csv, {said}" in err, err
    cases = [
        (["--step-col", "nope"], "lists.csv: no column 'nope'"),
        (["--session-col", "sid"], "no session column 'sid'"),
        (["--average", "users", "--user-col", "nobody"], "no column 'nobody'"),
        (["--per-session", tmp_path / "x.txt"], "--per-session"),
        (["--report", tmp_path / "x.csv"], "the report is an HTML page"),
        (["--per-session", lists], "would write over the lists file"),
    ]
    for extra, said in cases:
        code, _, err = _run(capsys, "next-items", lists, sessions, "-m", "mrr@3", *extra)
        assert code == 2 and said in err and "Traceback" not in err, (extra, err)
    code, _, err = _run(capsys, "next-items", lists, tmp_path / "none.csv", "-m", "mrr@3")
    assert code == 2 and "none.csv: no such file" in err
    headless = tmp_path / "items.csv"
    headless.write_text("sku,when\na,1\n")
    code, _, err = _run(capsys, "next-items", lists, headless, "-m", "mrr@3")
    assert code == 2 and "items.csv: no session column" in err and "--session-col" in err
    code, _, err = _run(capsys, "next-items", lists, sessions, "-m", "mrr@3", "--target", "x")
    assert code == 2 and "--target" in err


def test_command_ctrl_c_exits_130(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("receval.evaluation.next_items.evaluate_next_items", interrupted)
    code, out, _ = _run(capsys, "next-items", *files, "-m", "mrr@3")
    assert code == 130 and out == ""


def test_command_reads_ids_in_every_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Digit ids and text ids, TSV and JSONL: the library's numbers."""
    lists = LISTS.assign(session=LISTS["session"].str[1:].astype(int))
    sessions = SESSIONS.assign(session=SESSIONS["session"].str[1:])  # digit strings
    want = receval.evaluate_next_items(lists, sessions, METRICS).summary
    lists.to_csv(tmp_path / "l.tsv", sep="\t", index=False)
    sessions.to_json(tmp_path / "s.jsonl", orient="records", lines=True)
    code, out, err = _run(
        capsys,
        "next-items",
        tmp_path / "l.tsv",
        tmp_path / "s.jsonl",
        "-m",
        "mrr@3",
        "-m",
        "recall@3",
        "--json",
        "-q",
    )
    assert code == 0, err
    assert json.loads(out)["metrics"] == want
    assert np.isfinite(list(want.values())).all()


def test_a_long_session_shows_its_first_100_positions() -> None:
    sessions = {"long": list(range(105)), "short": [1, 2]}
    lists = {("long", t): [t + 1000] for t in range(1, 105)} | {
        ("short", 1): [2]
    }  # all wrong but one
    res = receval.evaluate_next_items(lists, sessions, "hit_rate@1")
    rep = receval.report(None, None, next_items=res, n_resamples=20)
    cells = _cells(rep.html, "hit_rate@1")
    assert sorted({t for t, _ in cells}) == list(range(1, 101))
    assert cells[(1, "model")] == fmt_value(0.5)  # short hit, long missed
    assert "Steps 1..100 of 104 shown" in rep.html
    assert rep.positions is not None and len(rep.positions) == 104
