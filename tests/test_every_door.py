"""Every door gives the same numbers, bit for bit.

The same rows (graded truth in a ``rating`` column, train and catalog, some
scores tied) go through every input form × the Python API × the CLI, with
ids written as text (``u3``, ``i12``), as digit strings (``"3"``, ``"12"``
in the frames; digits in a file) and as integers; summaries and per-user
values must be equal with ``==`` (NaN equal to NaN) to those of the pandas
door for the same ids.

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
from tests.required import imported

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
#: at depth 5 (of 6), then condensed (the unjudged items dropped); users judged without a
#: relevant item kept with each metric's own value (trec_eval's reading)
OPTIONS = {"depth": 5, "unjudged": "condense", "empty_truth": "keep"}
FLAGS = ["--depth", "5", "--unjudged", "condense", "--empty-truth", "keep"]


#: how the ids are written: text, digit strings (numbers under the text rule), integers
ID_FORMS = ("text", "digits", "int")


def _ids(form: str) -> tuple[Callable[[int], Any], Callable[[int], Any]]:
    """user and item id of a number, written in ``form``."""
    if form == "text":
        return (lambda i: f"u{i}"), (lambda j: f"i{j}")
    if form == "digits":
        return str, str
    return int, int


def _data(form: str = "text") -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(16)
    user, item = _ids(form)
    users = [user(i) for i in range(12)]
    # positions 3 and 4 of every list tie in score: the tie rule orders them
    recs = pd.DataFrame(
        [
            (u, item(j), float(10 - min(r, 3)) + (rng.random() / 10 if r < 3 else 0.0))
            for u in users[:10]
            for r, j in enumerate(rng.choice(20, 6, replace=False))
        ],
        columns=["user", "item", "score"],
    )
    truth = pd.DataFrame(
        [
            (u, item(j), int(rng.integers(0, 6)))  # 0: judged, not relevant
            for u in users[2:]
            for j in rng.choice(20, 3, replace=False)
        ],
        columns=["user", "item", "rating"],
    )
    truth.loc[truth["user"] == users[2], "rating"] = 0  # judged, nothing relevant: kept
    train = pd.DataFrame(
        [(u, item(j)) for u in users for j in rng.choice(25, 4, replace=False)],
        columns=["user", "item"],
    )
    catalog = pd.DataFrame({"item": [item(j) for j in range(25)]})
    return {"recs": recs, "truth": truth, "train": train, "catalog": catalog}


Outcome = tuple[dict[str, float], dict[str, pd.Series]]


def _api(recs: Any, truth: Any, train: Any, catalog: Any) -> Outcome:
    res = receval.evaluate(recs, truth, METRICS, train=train, catalog=catalog, **OPTIONS)
    per_user = {m: res.per_user[m] for m in res.per_user.columns}
    return dict(res.summary), per_user


def _id_key(value: Any) -> tuple[int, Any]:
    """The tie rule ``item``, literally: numbers (ints and digit strings)
    numerically first, then text by code point."""
    text = str(value)
    if text.lstrip("-").isdigit():
        return (0, int(text))
    return (1, text)


def _mapping(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    recs = {
        u: [
            i
            for _, i in sorted(
                zip(g["score"], g["item"], strict=True), key=lambda r: (-r[0], _id_key(r[1]))
            )
        ]
        for u, g in d["recs"].groupby("user")
    }
    truth = {
        u: dict(zip(g["item"], g["rating"], strict=True)) for u, g in d["truth"].groupby("user")
    }
    train = {u: list(g["item"]) for u, g in d["train"].groupby("user")}
    return _api(recs, truth, train, list(d["catalog"]["item"]))


def _score_mapping(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    """The run of ranx, pytrec_eval and ir_measures: ``{user: {item: score}}``
    (ordered by score, ties by the tie rule), in a shuffled insertion order."""
    rows = d["recs"].sample(frac=1, random_state=3)
    recs: dict[Any, dict[Any, float]] = {}
    for u, i, s in rows[["user", "item", "score"]].itertuples(index=False):
        recs.setdefault(u, {})[i] = s
    truth = {
        u: dict(zip(g["item"], g["rating"], strict=True)) for u, g in d["truth"].groupby("user")
    }
    return _api(recs, truth, d["train"], d["catalog"])


def _column_names(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    """The two inputs name their columns differently (per-input column options)."""
    truth = d["truth"].rename(columns={"user": "customer", "item": "sku"})
    res = receval.evaluate(
        d["recs"].rename(columns={"user": "uid"}),
        truth,
        METRICS,
        train=d["train"].rename(columns={"user": "uid"}),
        catalog=d["catalog"],
        user_col="uid",
        truth_user_col="customer",
        truth_item_col="sku",
        **OPTIONS,
    )
    return dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns}


def _compare_paths(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    """receval.compare given paths, train= a path too (a system's Result)."""
    p = _write(d, tmp, "csv")
    comparison = receval.compare(
        {"sys": p["recs"], "same": p["recs"]},
        p["truth"],
        METRICS,
        train=p["train"],
        catalog=p["catalog"],
        n_resamples=100,
        ci="none",
        **OPTIONS,
    )
    res = comparison.results["sys"]
    return dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns}


def _pandas(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    return _api(d["recs"], d["truth"], d["train"], d["catalog"])


def _pyarrow(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    t = {k: pa.Table.from_pandas(v, preserve_index=False) for k, v in d.items()}
    return _api(t["recs"], t["truth"], t["train"], t["catalog"])


def _polars(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    pl = imported("polars")
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
    _score_mapping,
    _column_names,
    _compare_paths,
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


_EXPECTED: dict[str, Outcome] = {}


def expected_for(form: str, tmp: Path) -> Outcome:
    """The pandas door's numbers for ids written in ``form`` (computed once)."""
    if form not in _EXPECTED:
        _EXPECTED[form] = _pandas(_data(form), tmp)
    return _EXPECTED[form]


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return expected_for("text", tmp_path_factory.mktemp("pandas"))


@pytest.mark.parametrize("form", ID_FORMS)
@pytest.mark.parametrize("door", DOORS, ids=lambda f: f.__name__.strip("_"))
def test_every_door_gives_the_same_numbers(door: Any, form: str, tmp_path: Path) -> None:
    check_door(door(_data(form), tmp_path), expected_for(form, tmp_path))


def test_id_forms_differ_only_where_the_tie_order_does(tmp_path: Path) -> None:
    # digit strings and integers are the same ids (the text rule): the same numbers
    check_door(_pandas(_data("digits"), tmp_path), expected_for("int", tmp_path))


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
        for u, a, b in zip(col.index, got.to_numpy(), col.to_numpy(), strict=True):
            assert _same(float(a), float(b)), (m, u, a, b)


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


@pytest.mark.parametrize("form", ID_FORMS)
def test_the_trec_eval_command_prints_the_libraries_numbers(form: str, tmp_path: Path) -> None:
    """``receval trec_eval -q`` (the installed command's door, trec_eval's text):
    every per-query and ``all`` line is ``receval.evaluate(..., convention="trec_eval")``'s
    value at trec_eval's ``%6.4f``, for the same TREC files, ids in every form."""
    d = _data(form)
    run, qrels = tmp_path / "recs.run", tmp_path / "truth.qrels"
    ranked = d["recs"].sort_values(["user", "score"], ascending=[True, False])
    run.write_text(
        "".join(
            f"{u} Q0 {i} {r} {s!r} sys\n"
            for r, (u, i, s) in enumerate(ranked[["user", "item", "score"]].itertuples(False))
        )
    )
    qrels.write_text("".join(f"{u} 0 {i} {g}\n" for u, i, g in d["truth"].itertuples(index=False)))
    flags = {"map": "map", "P_5": "P.5", "ndcg_cut_5": "ndcg_cut.5", "recip_rank": "recip_rank"}
    names = [*flags, "bpref"]  # the printed names (trec_eval's), flags as trec_eval reads them
    args = [sys.executable, "-m", "receval", "trec_eval", "-q", "-m", "runid", str(qrels), str(run)]
    for name in names:
        args += ["-m", flags.get(name, name)]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    printed: dict[tuple[str, str], str] = {}
    for line in done.stdout.splitlines():
        measure, query, value = line.split("\t")
        printed[(measure.strip(), query)] = value
    res = receval.evaluate(run, qrels, names, convention="trec_eval")
    for name, column in zip(names, res.per_user.columns, strict=True):
        values = res.per_user[column].dropna()
        assert {q for m, q in printed if m == name} == {str(u) for u in values.index} | {"all"}
        for user, value in values.items():
            assert printed[(name, str(user))] == f"{value:6.4f}", (name, user)
        assert printed[(name, "all")] == f"{res.summary[column]:6.4f}", name
    assert printed[("runid", "all")] == "sys"
