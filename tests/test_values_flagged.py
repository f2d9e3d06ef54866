"""Values that cannot be right are refused or flagged (issue #31 point 7).

Each was accepted without a word: ``--n-resamples 1`` (intervals of zero
width), a k-core filter that removes every row (empty files, exit 0), user
groups whose ids match no user (groups of 0 users), item groups sharing no
item with the evaluation (NaN), ids that differ only by surrounding
whitespace (two users), a corrected sampled estimate outside its metric's
range (hit rate 24.2). Now each is an error in the caller's syntax (exit 2)
or a note in the result, and on the console (docs/compare.md, docs/groups.md,
docs/sampled.md, docs/protocol.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.compare import resampling_notes
from receval.cli import main
from receval.errors import InputError, OptionError
from receval.evaluation.groups import item_group_notes
from receval.ids import whitespace_notes
from receval.metrics.kernels.corrected import range_notes
from receval.metrics.spec import parse_metric

TRUTH = {u: [u % 4] for u in range(30)}
RUNS = {
    "a": {u: [u % 4, 9] for u in range(30)},
    "b": {u: [9, u % 4] if u % 3 else [u % 4, 9] for u in range(30)},
}


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """The truth and the two runs as CSV files."""
    out = {"truth": tmp_path / "truth.csv"}
    pd.DataFrame(
        [(u, i) for u, items in TRUTH.items() for i in items], columns=["user", "item"]
    ).to_csv(out["truth"], index=False)
    for name, lists in RUNS.items():
        out[name] = tmp_path / f"{name}.csv"
        rows = [(u, i, r) for u, items in lists.items() for r, i in enumerate(items, 1)]
        pd.DataFrame(rows, columns=["user", "item", "rank"]).to_csv(out[name], index=False)
    return out


# -- 1. resamples ---------------------------------------------------------------------------


def test_one_resample_is_refused_in_each_syntax(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(OptionError, match=r"n_resamples=1 is not allowed: expected a whole"):
        receval.compare(RUNS, TRUTH, "rr@2", n_resamples=1)
    argv = ["compare", files["truth"], files["a"], files["b"], "-m", "rr@2"]
    code, out, err = run(capsys, *argv, "--n-resamples", "1")
    assert code == 2 and out == ""
    assert "error: --n-resamples 1 is not allowed: expected a whole number >= 2" in err
    assert "zero width" in err


def test_too_few_resamples_are_noted() -> None:
    cmp = receval.compare(
        RUNS, TRUTH, "rr@2", n_resamples=19, test="randomization", ci="percentile"
    )
    intervals, tests = cmp.notes[:2]
    assert intervals.startswith("intervals from 19 resamples: a 95% interval has about 0.5")
    assert "use at least 999 resamples" in intervals
    assert tests.startswith("the randomization test's p-values from 19 resamples are at least")
    assert "1/20 = 0.05: never below alpha = 0.05, so no comparison can be significant" in tests
    assert not cmp.pairs["significant"].any()  # what the note says
    assert f"note: {intervals}" in str(cmp) and f"- {intervals}" in cmp.to_markdown()
    assert cmp.to_dict()["notes"] == cmp.notes and json.loads(cmp.to_json())["notes"]
    assert "% note: intervals from 19 resamples" in cmp.to_latex()
    # enough resamples, or a test and no interval that use none: nothing to say
    enough = receval.compare(RUNS, TRUTH, "rr@2", n_resamples=999, test="randomization")
    assert enough.notes == []
    assert receval.compare(RUNS, TRUTH, "rr@2", n_resamples=2, ci="none").notes == []


def test_the_floor_follows_alpha_and_the_correction() -> None:
    base = {"ci": "bca", "test": "randomization", "correction": "holm", "comparisons": 4}
    at = {**base, "alpha": 0.01}
    assert "use at least 4999 resamples" in resampling_notes({**at, "n_resamples": 4998})[0]
    assert not any("intervals" in n for n in resampling_notes({**at, "n_resamples": 4999}))
    # Holm over 4 comparisons: 4 / (B + 1) < 0.05 from B = 80 on
    tests = {**base, "alpha": 0.05, "ci": "none"}
    assert "use at least 80 resamples" in resampling_notes({**tests, "n_resamples": 79})[0]
    assert resampling_notes({**tests, "n_resamples": 80}) == []
    bh = {**tests, "correction": "bh", "n_resamples": 20}  # BH: the smallest p once
    assert resampling_notes(bh) == []


def test_a_group_gap_of_one_relabelling_is_refused() -> None:
    groups = {u: u < 15 for u in range(30)}
    res = receval.evaluate(RUNS["b"], TRUTH, "rr@2", user_groups=groups)
    with pytest.raises(OptionError, match=r"n_resamples=1 is not allowed: expected a whole"):
        receval.group_gap(res, "group", True, False, test="permutation", n_resamples=1)
    assert len(receval.group_gap(res, "group", True, False, n_resamples=1))  # Welch: unused


def test_the_command_line_prints_the_notes_on_stderr(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", files["truth"], files["a"], files["b"], "-m", "rr@2"]
    code, out, err = run(capsys, *argv, "--n-resamples", "50")
    assert code == 0, err
    assert "note: intervals from 50 resamples: a 95% interval has about 1.28" in err
    assert "note:" not in out  # the table on stdout, its notes on stderr
    code, out, err = run(capsys, *argv, "--n-resamples", "50", "-o", "json")
    assert code == 0 and json.loads(out)["notes"][0].startswith("intervals from 50")
    assert "note: intervals from 50 resamples" in err
    code, out, err = run(capsys, *argv, "--n-resamples", "50", "-q")
    assert code == 0 and err == ""


def test_the_report_prints_the_comparison_notes(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "report.html"
    argv = ["report", files["truth"], files["a"], "-m", "rr@2", "--out", page]
    code, _, err = run(capsys, *argv, "--n-resamples", "50")
    assert code == 0 and page.is_file(), err
    assert "note: intervals from 50 resamples" in err


# -- 2. the k-core filter -------------------------------------------------------------------


@pytest.fixture
def log(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "user": rng.integers(0, 30, 400),
            "item": rng.integers(0, 50, 400),
            "timestamp": np.arange(400),
        }
    )
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--min-user-interactions", "50"],
            "--min-user-interactions 50 is not allowed: "
            "expected at most 19 (it removes every user: the most active of the 30 users has 19",
        ),
        (
            ["--min-item-interactions", "13"],
            "--min-item-interactions 13 is not allowed: "
            "expected at most 12 (it removes every item: the most frequent of the 50 items has 12",
        ),
        (
            ["--min-user-interactions", "15", "--min-item-interactions", "12"],
            "--min-user-interactions 15 is not allowed: expected a value that leaves some "
            "interactions with --min-item-interactions 12 (together they remove every row",
        ),
    ],
)
def test_a_k_core_that_removes_everything_is_refused_before_writing(
    log: Path, tmp_path: Path, flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code, _, err = run(capsys, "split", log, "--out", out, *flags)
    assert code == 2, err
    assert said in err and "internal error" not in err
    assert not out.exists() or not any(out.iterdir())


def test_a_k_core_in_python(log: Path) -> None:
    frame = pd.read_csv(log)
    with pytest.raises(OptionError, match=r"min_item_interactions=13 is not allowed"):
        receval.split(frame, "random", min_item_interactions=13)
    with pytest.raises(OptionError, match=r"with min_item_interactions=12 \(together"):
        next(receval.kfold(frame, 3, min_user_interactions=15, min_item_interactions=12))
    kept = receval.split(frame, "user_time", min_item_interactions=12)  # the largest kept
    assert len(kept.train) and kept.info["dropped"]["min_interactions"]["rows"]


# -- 3. user groups that match no user --------------------------------------------------------

RECS = {1: [1, 2], 2: [2, 3], 3: [1, 3]}
GRADED = pd.DataFrame({"user": [1, 2, 3], "item": [1, 3, 2], "relevance": [2, 1, 3]})


@pytest.mark.parametrize("metric", ["ndcg@2", "err@2"])  # one pass; each group alone (ERR)
def test_groups_without_users_are_noted(metric: str) -> None:
    groups = {1: "a", 2: "a", 3: "b", 7: "c", 8: "c", "x": "d"}
    res = receval.evaluate(RECS, GRADED, metric, user_groups=groups)
    assert res.groups.loc[("group", "c"), "users"] == 0
    assert res.counts["user_groups"]["group"]["user_ids_not_evaluated"] == 3
    (note,) = [n for n in res.notes if n.startswith("user groups with no user")]
    assert "group='c', group='d' (0 users" in note
    assert "3 of the 6 user ids of user_groups are not users of" in note
    assert f"note: {note}" in str(res)


@pytest.mark.parametrize("metric", ["ndcg@2", "err@2"])
def test_groups_whose_ids_match_no_user_are_refused(
    metric: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError, match=r"none of the 2 user ids of the user groups \(e\.g\."):
        receval.evaluate(RECS, GRADED, metric, user_groups={"u1": "a", "u2": "b"})
    groups = tmp_path / "groups.csv"
    groups.write_text("user,segment\nu1,a\nu2,b\n")
    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    pd.DataFrame(
        [(u, i) for u, items in RECS.items() for i in items], columns=["user", "item"]
    ).assign(rank=[1, 2] * 3).to_csv(recs, index=False)
    GRADED.to_csv(truth, index=False)
    code, out, err = run(capsys, "evaluate", recs, truth, "-m", metric, "--user-groups", groups)
    assert code == 2 and out == ""
    assert f"error: {groups}: none of the 2 user ids of the user groups" in err
    assert "is their user column the right one (--user-col names it)?" in err
    groups.write_text("user,segment\n1,a\n2,a\n3,b\nu1,c\n")
    code, out, err = run(capsys, "evaluate", recs, truth, "-m", metric, "--user-groups", groups)
    assert code == 0, err
    assert "note: user groups with no user of the evaluation: segment='c' (0 users" in out
    assert f"1 of the 4 user ids of {groups} are not users of" in out


def test_built_in_groups_are_not_held_to_it() -> None:
    """``activity`` lists the users of train: its empty buckets are no mistake."""
    res = receval.evaluate(RECS, GRADED, "ndcg@2", user_groups="activity", train={9: [1]})
    assert not any("user groups" in n for n in res.notes)
    assert "user_ids_not_evaluated" not in res.counts["user_groups"]["activity"]


# -- 4. item groups that share no item ---------------------------------------------------------

ITEMS = pd.DataFrame({"item": [100, 101, 102], "genre": ["x", "x", "y"]})
ITEM_METRICS = ["rsp@2", "reo@2", "awrf@2", "miscalibration@2", "coverage@2", "ndcg@2"]


def _item_groups_result() -> receval.Result:
    return receval.evaluate(
        RECS, GRADED, ITEM_METRICS, train={1: [5], 2: [6], 3: [5]}, item_groups=ITEMS
    )


def test_item_groups_sharing_no_item_say_why_their_values_are_nan() -> None:
    notes = item_group_notes(_item_groups_result())
    assert [n.split(" is NaN: ")[0] for n in notes[:4]] == ITEM_METRICS[:4]
    assert "no item of the truth is in an item group" in notes[1]
    assert notes[4].startswith(
        "item groups with no item in the catalog: genre='x' (2 items), genre='y' (1 items): "
        "their coverage@2 within the group are NaN"
    )
    shared = pd.DataFrame({"item": [1, 2, 3, 5, 6], "genre": ["x", "x", "y", "x", "y"]})
    fine = receval.evaluate(
        RECS, GRADED, ITEM_METRICS, train={1: [5], 2: [6], 3: [5]}, item_groups=shared
    )
    assert item_group_notes(fine) == []


def test_the_result_holds_the_item_group_notes() -> None:
    res = _item_groups_result()
    assert any(n.startswith("rsp@2 is NaN") for n in res.notes)


# -- 5. whitespace around ids -------------------------------------------------------------------


def test_padded_ids_are_found_among_distinct_ids() -> None:
    ids = np.array([" 1", "1", "u2"], dtype=object)
    (note,) = whitespace_notes(ids, "user")
    assert note.startswith("some user ids differ from other user ids only by surrounding")
    assert "(' 1' and '1' are two users); strip them if they are the same user" in note
    (alone,) = whitespace_notes(np.array(["u1 ", "u2"], dtype=object), "item")
    assert alone.startswith("some item ids begin or end with whitespace: ids are read as")
    both = np.array(["\u00a07", "7\t", "x"], dtype=object)  # Unicode's whitespace, as str.strip
    assert "differ from other" in whitespace_notes(both, "item")[0]
    assert "differ from other" in whitespace_notes(np.array([" 1.0", "1"], dtype=object), "user")[0]
    assert whitespace_notes(np.array(["a b", "u1"], dtype=object), "user") == []
    assert whitespace_notes(np.arange(5), "user") == []


def test_sampled_candidates_note_padded_users() -> None:
    truth = pd.DataFrame({"user": [" 1", "2"], "item": [3, 4]})
    train = pd.DataFrame({"user": ["1", "2"], "item": [1, 2]})
    cands = receval.sample_negatives(truth, train, n=2, catalog=range(10), seed=0)
    assert any("differ from other user ids only" in n for n in cands.attrs["notes"])
    clean = receval.sample_negatives(
        truth.assign(user=["1", "2"]), train, n=2, catalog=range(10), seed=0
    )
    assert clean.attrs["notes"] == []


PADDED = pd.DataFrame({"user": [" 1", "1", "2"], "item": ["10", "11", "12"], "rank": [1, 1, 1]})
PADDED_TRUTH = pd.DataFrame({"user": ["1", "2"], "item": ["10", "13 "]})


def _doors(tmp_path: Path) -> dict[str, tuple[object, object]]:
    """The same recommendations and truth through each door."""
    out: dict[str, tuple[object, object]] = {"frame": (PADDED, PADDED_TRUTH)}
    out["dict"] = (
        {" 1": ["10"], "1": ["11"], "2": ["12"]},
        {"1": ["10"], "2": ["13 "]},
    )
    for fmt in ("csv", "parquet"):
        paths = []
        for name, frame in (("recs", PADDED), ("truth", PADDED_TRUTH)):
            path = tmp_path / f"{name}.{fmt}"
            if fmt == "csv":
                frame.to_csv(path, index=False)
            else:
                frame.astype(str).assign(
                    **({"rank": frame["rank"]} if "rank" in frame else {})
                ).to_parquet(path, index=False)
            paths.append(path)
        out[fmt] = (paths[0], paths[1])
    return out


def test_padded_ids_are_noted_through_every_door(tmp_path: Path) -> None:
    for door, (recs, truth) in _doors(tmp_path).items():
        res = receval.evaluate(recs, truth, "p@1")
        assert len(res.per_user) == 3, door  # ' 1' and '1' stay two users
        said = [n for n in res.notes if "whitespace" in n]
        assert any(n.startswith("some user ids differ from other user ids") for n in said), door
        assert any(n.startswith("some item ids begin or end with") for n in said), door


# -- 6. corrected estimates outside their range --------------------------------------------------


def _sampled() -> tuple[pd.DataFrame, pd.DataFrame]:
    """40 users, each held-out item ranked among 30 sampled negatives."""
    rng = np.random.default_rng(0)
    rows, truth = [], []
    for u in range(40):
        items = [100_000 + u, *range(u * 200, u * 200 + 30)]
        rng.shuffle(items)
        rows += [(u, i, r) for r, i in enumerate(items, 1)]
        truth.append((u, 100_000 + u))
    return (
        pd.DataFrame(rows, columns=["user", "item", "rank"]),
        pd.DataFrame(truth, columns=["user", "item"]),
    )


SAMPLED = ["hit_rate@10[correction=min_bias]", "hit_rate@10[correction=rank]", "recall@10"]


def test_an_estimate_outside_its_range_is_noted_not_clipped() -> None:
    recs, truth = _sampled()
    res = receval.evaluate(recs, truth, SAMPLED, catalog_size=50_000)
    value = res.summary[SAMPLED[0]]
    assert value > 1  # left as computed
    (note,) = range_notes(res.summary, res.metrics)
    assert note.startswith(f"{SAMPLED[0]} = {value:.4g} is outside the range of hit_rate, [0, 1]")
    assert "correction=min_bias extrapolates" in note and "not clipped" in note
    assert "use correction=bv" in note
    spec = parse_metric("ndcg@10[correction=bv]")
    assert "use correction=bv" not in range_notes({str(spec): -0.01}, [spec])[0]
    assert range_notes({str(spec): float("nan")}, [spec]) == []  # undefined: counted elsewhere


def test_the_result_and_the_console_hold_the_range_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs, truth = _sampled()
    res = receval.evaluate(recs, truth, SAMPLED, catalog_size=50_000)
    assert any(n.startswith(f"{SAMPLED[0]} = ") for n in res.notes)
    recs.to_csv(tmp_path / "a.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    code, _, err = run(
        capsys,
        "compare",
        tmp_path / "truth.csv",
        tmp_path / "a.csv",
        "-m",
        SAMPLED[0],
        "--catalog-size",
        "50000",
        "--n-resamples",
        "999",
    )
    assert code == 0, err
    assert f"note: {SAMPLED[0]} = " in err
