"""The demo: ordering of the baselines, every output file, MovieLens formats."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from receval.errors import InputError
from receval.io.interactions import detect_format, read_interactions
from receval.workflow.demo import SYSTEMS, run_demo
from receval.workflow.synthetic import synthetic_interactions


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_demo(tmp_path_factory.mktemp("demo"), users=2000, quiet=True)


def test_ordering(demo: dict) -> None:
    board = demo["leaderboard"]
    ndcg = board["ndcg@10"]
    assert ndcg["item_knn"] > ndcg["popular"] > ndcg["random"]
    assert list(board.index) == list(SYSTEMS)
    assert board.loc["random", "coverage@10"] > board.loc["popular", "coverage@10"]
    sig = demo["significance"]
    main = sig[sig["metric"] == "ndcg@10"]
    assert len(main) == 3 and main["significant"].all()
    table = demo["comparison"].table.loc["ndcg@10"]
    assert table.loc["item_knn", "wins"] == "bc" and table.loc["popular", "wins"] == "c"


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
