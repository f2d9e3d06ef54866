"""Splits and the demo on logs as users have them: columns named user_id,
userId, time, RecBole's typed headers; the file's own columns kept by
``receval split``; the demo's rating and timestamp columns found or named."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from receval.cli import main
from receval.errors import InputError
from receval.workflow.demo import DEFAULT_THRESHOLD, run_demo
from receval.workflow.split import filter_interactions, kfold, split, split_file
from receval.workflow.synthetic import synthetic_interactions


def named_log() -> pd.DataFrame:
    """u1: 4 rows (time 1..4), u2: 3 rows; the columns named as in the wild."""
    return pd.DataFrame(
        {
            "user_id": ["u1"] * 4 + ["u2"] * 3,
            "item_id": [1, 2, 3, 4, 1, 5, 6],
            "stars": [5, 4, 3, 2, 5, 1, 4],
            "time": [4, 1, 3, 2, 10, 30, 20],
            "note": list("abcdefg"),
        }
    )


# -- 1. receval.split finds the columns ---------------------------------------------------------


def test_split_finds_user_id_item_id_and_time() -> None:
    log = named_log()
    s = split(log, "leave_one_out")
    assert s.test["item_id"].tolist() == [1, 5]  # each user's latest row
    assert list(s.test.columns) == list(log.columns)  # every column, its own name
    assert s.info["columns"] == {"user": "user_id", "item": "item_id", "rating": "stars"} | {
        "timestamp": "time"
    }
    kept = split(log, "user_time", test_size=1, relevance_threshold=4)
    assert kept.test["item_id"].tolist() == [1]  # u2's latest is rated 1: dropped


@pytest.mark.parametrize(
    ("renames", "time"),
    [
        ({"user_id": "userId", "item_id": "movieId"}, "timestamp"),
        ({"user_id": "uid", "item_id": "iid"}, "ts"),
        ({"user_id": "customer_id", "item_id": "product_id"}, "date"),
    ],
)
def test_split_takes_every_alias(renames: dict[str, str], time: str) -> None:
    log = named_log().rename(columns={**renames, "time": time})
    if time == "date":
        log[time] = pd.to_datetime(log[time], unit="D")
    s = split(log, "leave_one_out")
    assert s.test[renames["item_id"]].tolist() == [1, 5]
    assert list(s.train.columns) == list(log.columns)


def test_kfold_and_filter_find_the_columns() -> None:
    log = named_log()
    kept, dropped = filter_interactions(log, min_user_interactions=4)
    assert kept["user_id"].unique().tolist() == ["u1"] and dropped["rows"] == 3
    folds = list(kfold(log, 2, by="user", holdout=1, order="time"))
    assert sorted(i for f in folds for i in f.test["item_id"]) == [1, 5]


def test_split_columns_named_and_missing() -> None:
    log = named_log().rename(columns={"time": "when"})
    s = split(log, "leave_one_out", timestamp_col="when")
    assert s.test["item_id"].tolist() == [1, 5]
    with pytest.raises(InputError, match=r"timestamp column 'timestamp' \(or time, ts"):
        split(log, "leave_one_out")
    with pytest.raises(InputError, match="timestamp column 'moment'"):
        split(log, "leave_one_out", timestamp_col="moment")
    with pytest.raises(InputError, match="no user column"):
        split(log.rename(columns={"user_id": "person"}), "random")


# -- 2. receval split keeps the file's columns ---------------------------------------------------

CSV = (
    "user_id,item_id,rating,timestamp,extra\n"
    "1,10,5,1,a\n1,11,4,2,b\n1,12,3,3,c\n2,10,5,1,d\n2,13,2,2,e\n"
)
INTER = (
    "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    "1\t10\t5\t1\n1\t11\t4\t2\n1\t12\t3\t3\n2\t10\t5\t1\n2\t13\t2\t2\n"
)


def test_split_file_keeps_every_column_under_its_name(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text(CSV)
    s = split_file(path, test_size=1)
    assert list(s.test.columns) == ["user_id", "item_id", "rating", "timestamp", "extra"]
    assert s.test.to_dict("list") == {
        "user_id": [1, 2],
        "item_id": [12, 13],
        "rating": [3, 2],
        "timestamp": [3, 2],
        "extra": ["c", "e"],
    }
    saved = s.save(tmp_path / "out")
    assert pd.read_parquet(saved["train"]).columns.tolist() == list(s.train.columns)
    inter = tmp_path / "log.inter"
    inter.write_text(INTER)
    r = split_file(inter, test_size=1)
    assert list(r.test.columns) == ["user_id", "item_id", "rating", "timestamp"]
    assert r.test["item_id"].tolist() == [12, 13]


def test_split_command_keeps_the_file_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.csv"
    path.write_text(CSV)
    code = main(["split", str(path), "--test-size", "1", "--out", str(tmp_path / "o")])
    assert code == 0, capsys.readouterr().err
    test = pd.read_parquet(tmp_path / "o" / "test.parquet")
    assert list(test.columns) == ["user_id", "item_id", "rating", "timestamp", "extra"]


# -- 3. the demo finds (or is told) the rating and timestamp columns -----------------------------


def _recbole(log: pd.DataFrame, path: Path) -> Path:
    header = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    rows = log[["user", "item", "rating", "timestamp"]].itertuples(index=False)
    path.write_text(header + "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in rows))
    return path


def _demo(out: Path, **kwargs: object) -> tuple[dict, str]:
    console = io.StringIO()
    with redirect_stdout(console):
        result = run_demo(out, **kwargs)  # type: ignore[arg-type]
    return result, console.getvalue()


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    return synthetic_interactions(300, 80, seed=4)


def test_demo_reads_recbole_ratings_and_timestamps(tmp_path: Path, small: pd.DataFrame) -> None:
    typed, console = _demo(tmp_path / "a", interactions=_recbole(small, tmp_path / "log.inter"))
    rel = typed["relevance"]
    assert rel.column == "rating" and rel.threshold == DEFAULT_THRESHOLD
    assert "column rating as graded relevance" in rel.text and "≥ 4" in rel.text
    assert typed["columns"] == {
        "user": "user_id",
        "item": "item_id",
        "rating": "rating",
        "timestamp": "timestamp",
    }
    assert "columns: user=user_id, item=item_id, rating=rating, timestamp=timestamp" in console
    assert typed["split"].info["method"] == "user_time"
    assert not any("no timestamp" in n for n in typed["notes"])
    skipped = typed["results"]["random"].counts["users_skipped"]["no_relevant_items"]
    assert skipped > 0  # ratings below 4 are not relevant
    # the same log with plain headers: the same numbers
    plain = tmp_path / "log.csv"
    small.rename(columns={"user": "user_id", "item": "item_id"}).to_csv(plain, index=False)
    same, _ = _demo(tmp_path / "b", interactions=plain)
    pd.testing.assert_frame_equal(typed["leaderboard"], same["leaderboard"])
    assert same["relevance"].text == rel.text


def test_demo_of_a_typed_table_and_named_columns(tmp_path: Path, small: pd.DataFrame) -> None:
    typed = small.rename(
        columns={
            "user": "user_id:token",
            "item": "item_id:token",
            "rating": "rating:float",
            "timestamp": "timestamp:float",
        }
    )
    out, _ = _demo(tmp_path / "a", interactions=typed, quiet=True)
    assert out["relevance"].column == "rating:float" and out["relevance"].threshold == 4.0
    assert out["split"].info["method"] == "user_time"
    own = small.rename(columns={"rating": "grade", "timestamp": "when"})
    named, _ = _demo(
        tmp_path / "b", interactions=own, rating_col="grade", timestamp_col="when", quiet=True
    )
    assert named["relevance"].column == "grade" and named["split"].info["method"] == "user_time"
    pd.testing.assert_frame_equal(out["leaderboard"], named["leaderboard"])
    unnamed, _ = _demo(tmp_path / "c", interactions=own, quiet=True)
    assert unnamed["relevance"].column is None  # "grade" is no rating alias: not guessed
    assert unnamed["split"].info["method"] == "user_random"
    with pytest.raises(InputError, match=r"no rating column 'score'.*columns found: user"):
        run_demo(tmp_path / "d", interactions=own, rating_col="score", quiet=True)


def test_demo_command_reads_a_recbole_file(
    tmp_path: Path, small: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _recbole(small, tmp_path / "log.inter")
    code = main(["demo", "--interactions", str(path), "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0
    assert "column rating as graded relevance" in out and "user_time" in out
    md = (tmp_path / "o" / "leaderboard.md").read_text(encoding="utf-8")
    assert "- columns: user=user_id, item=item_id, rating=rating, timestamp=timestamp" in md
