"""Every door gives the same numbers, bit for bit.

The same rows (string ids, graded truth in a ``rating`` column, train and
catalog) go through every input form × the Python API × the CLI; summaries
and per-user values must be equal with ``==`` (NaN equal to NaN).

To add a door, append a function to :data:`DOORS`: it takes the data (as
pandas frames) and a temporary directory and returns the result as
``(summary, per_user)`` — a dict and a Series per metric indexed by user.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import receval
from receval.io import stream

METRICS = [
    "ndcg@5",
    "precision@3",
    "ap@5",
    "recall@5",
    "rr",
    "coverage@5",
    "novelty@5",
    "bpref",
    "infap",
    "gm_ap",
    "rndcg",
    "iprec_avg",
]
#: options every door passes (keywords in Python, flags on the command line): lists cut
#: at depth 5 (of 6), then condensed (the unjudged items dropped)
OPTIONS = {"depth": 5, "unjudged": "condense"}
FLAGS = ["--depth", "5", "--unjudged", "condense"]


def _data() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(16)
    users = [f"u{i}" for i in range(12)]
    recs = pd.DataFrame(
        [
            (u, f"i{j}", float(10 - r) + rng.random() / 10)
            for u in users[:10]
            for r, j in enumerate(rng.choice(20, 6, replace=False))
        ],
        columns=["user", "item", "score"],
    )
    truth = pd.DataFrame(
        [
            (u, f"i{j}", int(rng.integers(0, 6)))  # 0: judged, not relevant
            for u in users[2:]
            for j in rng.choice(20, 3, replace=False)
        ],
        columns=["user", "item", "rating"],
    )
    train = pd.DataFrame(
        [(u, f"i{j}") for u in users for j in rng.choice(25, 4, replace=False)],
        columns=["user", "item"],
    )
    catalog = pd.DataFrame({"item": [f"i{j}" for j in range(25)]})
    return {"recs": recs, "truth": truth, "train": train, "catalog": catalog}


Outcome = tuple[dict[str, float], dict[str, pd.Series]]


def _api(recs: Any, truth: Any, train: Any, catalog: Any) -> Outcome:
    res = receval.evaluate(recs, truth, METRICS, train=train, catalog=catalog, **OPTIONS)
    per_user = {m: res.per_user[m] for m in res.per_user.columns}
    return dict(res.summary), per_user


def _mapping(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    recs = {
        u: list(g.sort_values("score", ascending=False)["item"])
        for u, g in d["recs"].groupby("user")
    }
    truth = {
        u: dict(zip(g["item"], g["rating"], strict=True)) for u, g in d["truth"].groupby("user")
    }
    train = {u: list(g["item"]) for u, g in d["train"].groupby("user")}
    return _api(recs, truth, train, list(d["catalog"]["item"]))


def _pandas(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    return _api(d["recs"], d["truth"], d["train"], d["catalog"])


def _pyarrow(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    t = {k: pa.Table.from_pandas(v, preserve_index=False) for k, v in d.items()}
    return _api(t["recs"], t["truth"], t["train"], t["catalog"])


def _polars(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    pl = pytest.importorskip("polars")
    t = {k: pl.from_pandas(v) for k, v in d.items()}
    return _api(t["recs"], t["truth"], t["train"], t["catalog"])


def _write(d: dict[str, pd.DataFrame], tmp: Path, ext: str) -> dict[str, Path]:
    paths = {}
    for name, frame in d.items():
        p = tmp / f"{name}.{ext}"
        if ext == "csv":
            frame.to_csv(p, index=False)
        elif ext == "tsv":
            frame.to_csv(p, index=False, sep="\t")
        elif ext == "parquet":
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), p, row_group_size=7)
        elif ext == "jsonl":
            frame.to_json(p, orient="records", lines=True, double_precision=15)
        paths[name] = p
    return paths


def _files(ext: str) -> Callable[[dict[str, pd.DataFrame], Path], Outcome]:
    def door(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
        p = _write(d, tmp, ext)
        return _api(p["recs"], p["truth"], p["train"], p["catalog"])

    door.__name__ = f"python_{ext}"
    return door


def _parquet_whole(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    p = _write(d, tmp, "parquet")
    t = {k: pq.read_table(v) for k, v in p.items()}
    return _api(t["recs"], t["truth"], t["train"], t["catalog"])


def _parquet_streamed(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    p = _write(d, tmp, "parquet")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(stream, "CHUNK_ROWS", 5)  # many chunks of users
        return _api(p["recs"], p["truth"], p["train"], d["catalog"])


def _accumulator(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    """receval.Accumulator fed three batches of users, two of them merged from
    another accumulator (a second worker)."""
    kw = {"train": d["train"], "catalog": d["catalog"], **OPTIONS}
    users = sorted(set(d["recs"]["user"]) | set(d["truth"]["user"]))
    batches = [users[:4], users[4:7], users[7:]]
    one, two = receval.Accumulator(METRICS, **kw), receval.Accumulator(METRICS, **kw)
    for j, batch in enumerate(batches):
        acc = one if j == 1 else two
        acc.update(
            d["recs"][d["recs"]["user"].isin(batch)], d["truth"][d["truth"]["user"].isin(batch)]
        )
    res = one.merge(two).compute()
    return dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns}


def _trec(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    run, qrels = tmp / "recs.run", tmp / "truth.qrels"
    ranked = d["recs"].sort_values(["user", "score"], ascending=[True, False])
    ranked["rank"] = ranked.groupby("user").cumcount() + 1
    run.write_text(
        "".join(
            f"{u} Q0 {i} {r} {s!r} sys\n"
            for u, i, r, s in ranked[["user", "item", "rank", "score"]].itertuples(index=False)
        )
    )
    qrels.write_text("".join(f"{u} 0 {i} {g}\n" for u, i, g in d["truth"].itertuples(index=False)))
    return _api(run, qrels, d["train"], d["catalog"])


def _cli(ext: str) -> Callable[[dict[str, pd.DataFrame], Path], Outcome]:
    def door(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
        p = _write(d, tmp, ext)
        out = tmp / "per_user.csv"
        args = [sys.executable, "-m", "receval", "evaluate", str(p["recs"]), str(p["truth"])]
        for m in METRICS:
            args += ["-m", m]
        args += ["--train", str(p["train"]), "--catalog", str(p["catalog"])]
        args += ["--per-user", str(out), "--json", "-q", *FLAGS]
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)["metrics"]
        summary = {k: math.nan if v is None else v for k, v in summary.items()}
        frame = pd.read_csv(out, dtype={"user": str}).set_index("user")
        return summary, {m: frame[m] for m in frame.columns}

    door.__name__ = f"cli_{ext}"
    return door


#: Every way in: a function (data, tmp dir) -> (summary, per-user columns).
DOORS: list[Callable[[dict[str, pd.DataFrame], Path], Outcome]] = [
    _mapping,
    _pandas,
    _pyarrow,
    _polars,
    _files("csv"),
    _files("tsv"),
    _files("jsonl"),
    _files("parquet"),
    _parquet_whole,
    _parquet_streamed,
    _trec,
    _accumulator,
    _cli("csv"),
    _cli("parquet"),
]


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return _pandas(_data(), tmp_path_factory.mktemp("pandas"))


@pytest.mark.parametrize("door", DOORS, ids=lambda f: f.__name__.strip("_"))
def test_every_door_gives_the_same_numbers(door: Any, expected: Outcome, tmp_path: Path) -> None:
    check_door(door(_data(), tmp_path), expected)


def check_door(got: Outcome, expected: Outcome) -> None:
    """A door's summary and per-user values are the expected ones, bit for bit
    (also used by the Spark doors, tests/test_spark.py)."""
    summary, per_user = got
    want_summary, want_users = expected
    assert set(summary) == set(want_summary)
    for m, v in want_summary.items():
        assert _same(summary[m], v), (m, summary[m], v)
    for m, col in want_users.items():
        got = per_user[m]
        assert list(got.index.astype(str)) == list(col.index.astype(str)), m
        for u, v in col.items():
            assert _same(float(got[str(u)]), float(v)), (m, u, got[str(u)], v)


def test_the_rating_column_is_the_graded_relevance_everywhere(tmp_path: Path) -> None:
    d = _data()
    graded = receval.evaluate(d["recs"], d["truth"], "ndcg@5")
    renamed = d["truth"].rename(columns={"rating": "relevance"})
    assert graded.summary == receval.evaluate(d["recs"], renamed, "ndcg@5").summary
    binary = receval.evaluate(d["recs"], d["truth"].drop(columns="rating"), "ndcg@5")
    assert graded.summary != binary.summary
    p = _write(d, tmp_path, "csv")
    assert receval.evaluate(p["recs"], p["truth"], "ndcg@5").summary == graded.summary


def test_readers_report_the_columns_they_used() -> None:
    from receval.io.tables import read_recs, read_truth

    d = _data()
    truth = d["truth"].rename(columns={"user": "userId", "item": "movieId"})
    tr = read_truth(truth)
    assert tr.columns == {"user": "userId", "item": "movieId", "relevance": "rating"}
    assert tr.max_grade == float(d["truth"]["rating"].max())
    assert read_recs(d["recs"]).columns == {"user": "user", "item": "item", "score": "score"}
