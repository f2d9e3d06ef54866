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
    if form == "dates":  # text that Arrow's JSON and CSV readers would take for timestamps
        return (lambda i: f"2024-01-{i + 1:02d}"), (lambda j: f"2024-02-{j + 1:02d}T10:00:00Z")
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


def _columns_mapping(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    """Mappings of columns (``DataFrame.to_dict("list")``): the tables they stand for."""
    t = {k: v.to_dict("list") for k, v in d.items()}
    return _api(t["recs"], t["truth"], t["train"], d["catalog"])


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


def _rows_in_another_order(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    """Tables not in user order, as models and logs write them (put in user
    order by evaluate's table door): the lists user by user, the users in
    reverse; the truth's rows scattered."""
    recs = d["recs"]
    rank = {u: -i for i, u in enumerate(recs["user"].unique())}
    recs = recs.iloc[np.argsort(recs["user"].map(rank).to_numpy(), kind="stable")]
    truth = d["truth"].sample(frac=1, random_state=5)
    return _api(recs, truth, d["train"], d["catalog"])


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


def _cli(ext: str, lists: bool = False) -> Callable[[dict[str, pd.DataFrame], Path], Outcome]:
    def door(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
        p = _write(_lists_of(d) if lists else d, tmp, ext)
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

    door.__name__ = f"cli_{ext}" + ("_item_lists" if lists else "")
    return door


def _lists_of(d: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The inputs as one row per user holding a list: the recommendations each
    user's items best first (the list order is the rank), the truth each
    user's items and their grades (two lists along each other), the train each
    user's items."""
    ranked = _ranked_mapping(d["recs"])
    truth = d["truth"].groupby("user", sort=False)
    train = d["train"].groupby("user", sort=False)
    return {
        "recs": pd.DataFrame({"user": list(ranked), "item": list(ranked.values())}),
        "truth": pd.DataFrame(
            {
                "user": list(truth.groups),
                "item": [list(g["item"]) for _, g in truth],
                "rating": [list(g["rating"]) for _, g in truth],
            }
        ),
        "train": pd.DataFrame(
            {"user": list(train.groups), "item": [tuple(g["item"]) for _, g in train]}
        ),
        "catalog": d["catalog"],
    }


def _item_lists(form: str) -> Callable[[dict[str, pd.DataFrame], Path], Outcome]:
    """A list of items a row (``user, [items]``), as models write their top-k:
    read as the long rows they stand for, through a table and a file alike."""

    def door(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
        t: dict[str, Any] = _lists_of(d)
        if form == "pyarrow":
            t = {k: pa.Table.from_pandas(v, preserve_index=False) for k, v in t.items()}
        elif form == "polars":
            t = {k: imported("polars").from_pandas(v) for k, v in t.items()}
        elif form == "parquet":
            for k in ("recs", "truth", "train"):
                pq.write_table(pa.Table.from_pandas(t[k], preserve_index=False), tmp / f"{k}.pq")
                t[k] = tmp / f"{k}.pq"
        return _api(t["recs"], t["truth"], t["train"], t["catalog"])

    door.__name__ = f"item_lists_{form}"
    return door


#: Every way in: a function (data, tmp dir) -> (summary, per-user columns).
DOORS: list[Callable[[dict[str, pd.DataFrame], Path], Outcome]] = [
    _mapping,
    _score_mapping,
    _columns_mapping,
    _column_names,
    _compare_paths,
    _pandas,
    _pyarrow,
    _polars,
    _rows_in_another_order,
    _files("csv"),
    _files("tsv"),
    _files("jsonl"),
    _files("parquet"),
    _parquet_whole,
    _parquet_streamed,
    _trec,
    _accumulator,
    _item_lists("pandas"),
    _item_lists("pyarrow"),
    _item_lists("polars"),
    _item_lists("parquet"),
    _cli("csv"),
    _cli("parquet"),
    _cli("parquet", lists=True),
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


@pytest.mark.parametrize("door", DOORS, ids=lambda f: f.__name__.strip("_"))
def test_every_door_keeps_ids_that_look_like_dates(door: Any, tmp_path: Path) -> None:
    """Ids written as dates and times stay the text they are through every
    door (JSON Lines read them as timestamps until the twelfth session): the
    numbers are those of the pandas door."""
    check_door(door(_data("dates"), tmp_path), expected_for("dates", tmp_path))


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


# -- the doors of their own: receval.agreement and receval.intent_aware (issue #34) -----------
#
# Their metrics run only through their door (MetricDef.door); each door reads the run in
# every form evaluate reads, and its second input (a reference run; subtopic judgments) in
# the forms it accepts. The same numbers, bit for bit, ids in the three forms. The command
# line prints summaries only (no per-user table): they are compared alone.

AGREEMENT = ["rbo@5", "rbo_min@5[p=0.8]", "rbo_res", "intersection@3[ref_k=5]", "jaccard@5"]
#: users listed in the run only are compared with an empty list, the reference's skipped
AGREEMENT_OPTIONS = {"only_in_run": "empty", "only_in_reference": "skip"}
AGREEMENT_FLAGS = ["--only-in-run", "empty", "--only-in-reference", "skip"]
INTENT = ["alpha_ndcg@3,5", "alpha_dcg@5", "err_ia@5", "nerr_ia@3"]
ALPHA = 0.4


def _second(form: str) -> dict[str, pd.DataFrame]:
    """The reference run (users 2..11, some scores tied) and the subtopic judgments
    (queries 2..11, one to three subtopics, judgments 0 or 1) of ``_data(form)``'s ids."""
    rng = np.random.default_rng(34)
    user, item = _ids(form)
    users = [user(i) for i in range(12)]
    reference = pd.DataFrame(
        [
            (u, item(j), float(5 - min(r, 2)))  # positions 2.. tie: the tie rule orders them
            for u in users[2:]
            for r, j in enumerate(rng.choice(20, 5, replace=False))
        ],
        columns=["user", "item", "score"],
    )
    qrels = pd.DataFrame(
        [
            (u, s, item(j), int(rng.integers(0, 2)))
            for u in users[2:]
            for s in range(1, int(rng.integers(2, 5)))
            for j in rng.choice(20, 4, replace=False)
        ],
        columns=["query", "subtopic", "doc", "judgment"],
    )
    return {"reference": reference, "qrels": qrels}


def _ranked_mapping(recs: pd.DataFrame) -> dict[Any, list[Any]]:
    """``{user: items}`` best first (score descending, ties by the tie rule)."""
    return {
        u: [
            i
            for _, i in sorted(
                zip(g["score"], g["item"], strict=True), key=lambda r: (-r[0], _id_key(r[1]))
            )
        ]
        for u, g in recs.groupby("user")
    }


def _scored_mapping(recs: pd.DataFrame) -> dict[Any, dict[Any, float]]:
    """``{user: {item: score}}`` in a shuffled insertion order (ranx's runs)."""
    out: dict[Any, dict[Any, float]] = {}
    for u, i, s in recs.sample(frac=1, random_state=3)[["user", "item", "score"]].itertuples(
        index=False
    ):
        out.setdefault(u, {})[i] = s
    return out


def _trec_run(recs: pd.DataFrame, path: Path) -> Path:
    ranked = recs.sort_values(["user", "score"], ascending=[True, False])
    ranked["rank"] = ranked.groupby("user").cumcount() + 1
    path.write_text(
        "".join(
            f"{u} Q0 {i} {r} {s!r} sys\n"
            for u, i, r, s in ranked[["user", "item", "rank", "score"]].itertuples(index=False)
        )
    )
    return path


def _as(form: str, frame: pd.DataFrame, path: Path) -> Any:
    """A run in one of the forms the doors read (a table, a mapping or a file)."""
    if form == "pandas":
        return frame
    if form == "pyarrow":
        return pa.Table.from_pandas(frame, preserve_index=False)
    if form == "polars":
        return imported("polars").from_pandas(frame)
    if form == "mapping":
        return _ranked_mapping(frame)
    if form == "score_mapping":
        return _scored_mapping(frame)
    if form == "trec":
        return _trec_run(frame, path.with_suffix(".run"))
    return _write({path.name: frame}, path.parent, form)[path.name]


RUN_FORMS = ("pandas", "pyarrow", "polars", "mapping", "score_mapping")
RUN_FORMS += ("csv", "tsv", "jsonl", "parquet", "trec")


def _agreement_api(run: Any, reference: Any) -> Outcome:
    res = receval.agreement(run, reference, AGREEMENT, **AGREEMENT_OPTIONS)
    return dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns}


def _intent_api(run: Any, qrels: Any) -> Outcome:
    res = receval.intent_aware(run, qrels, INTENT, alpha=ALPHA)
    return dict(res.summary), {m: res.per_query[m] for m in res.per_query.columns}


_EXPECTED_OWN: dict[tuple[str, str], Outcome] = {}


def _expected_own(door: str, form: str) -> Outcome:
    """The pandas door's numbers for ids written in ``form`` (computed once)."""
    if (door, form) not in _EXPECTED_OWN:
        d, o = _data(form), _second(form)
        _EXPECTED_OWN[(door, form)] = (
            _agreement_api(d["recs"], o["reference"])
            if door == "agreement"
            else _intent_api(d["recs"], o["qrels"])
        )
    return _EXPECTED_OWN[(door, form)]


@pytest.mark.parametrize("form", ID_FORMS)
@pytest.mark.parametrize("run_form", RUN_FORMS)
def test_agreement_through_every_door(run_form: str, form: str, tmp_path: Path) -> None:
    """Both runs in the same form (tables, mappings, files); with integer ids also the
    run in each form against a pandas reference: the numbers of two pandas tables."""
    d, o = _data(form), _second(form)
    run = _as(run_form, d["recs"], tmp_path / "recs")
    reference = _as(run_form, o["reference"], tmp_path / "reference")
    want = _expected_own("agreement", form)
    check_door(_agreement_api(run, reference), want)
    if form == "int":
        check_door(_agreement_api(run, o["reference"]), want)


def _ndeval_file(qrels: pd.DataFrame, path: Path) -> Path:
    path.write_text("".join(f"{q} {s} {d} {j}\n" for q, s, d, j in qrels.itertuples(index=False)))
    return path


def _qrels_as(qrels_form: str, qrels: pd.DataFrame, tmp: Path) -> Any:
    if qrels_form == "ndeval":
        return _ndeval_file(qrels, tmp / "qrels.txt")
    if qrels_form == "mapping":
        out: dict[Any, dict[Any, dict[Any, int]]] = {}
        for q, s, doc, j in qrels.itertuples(index=False):
            out.setdefault(q, {}).setdefault(s, {})[doc] = j
        return out
    return _as(qrels_form, qrels, tmp / "qrels")


@pytest.mark.parametrize("form", ID_FORMS)
@pytest.mark.parametrize("run_form", RUN_FORMS)
def test_intent_aware_through_every_door(run_form: str, form: str, tmp_path: Path) -> None:
    d, o = _data(form), _second(form)
    run = _as(run_form, d["recs"], tmp_path / "recs")
    check_door(_intent_api(run, o["qrels"]), _expected_own("intent_aware", form))


@pytest.mark.parametrize("form", ID_FORMS)
@pytest.mark.parametrize("qrels_form", ["pyarrow", "polars", "mapping", "ndeval"])
def test_intent_aware_judgments_in_every_form(qrels_form: str, form: str, tmp_path: Path) -> None:
    d, o = _data(form), _second(form)
    qrels = _qrels_as(qrels_form, o["qrels"], tmp_path)
    check_door(_intent_api(d["recs"], qrels), _expected_own("intent_aware", form))


def _command(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The command's JSON, run in this process (``receval.cli.main``, what the installed
    command calls; ``cli_csv`` above runs a real process)."""
    from receval.cli import main

    code = main([*args, "--json", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)  # type: ignore[no-any-return]


def _summary_only(got: dict[str, Any], want: Outcome) -> None:
    got = {k: math.nan if v is None else v for k, v in got.items()}
    check_door((got, {}), (want[0], {}))


#: the files each command reads: the formats of `receval evaluate` (a TREC run too)
COMMAND_FORMS = ("csv", "tsv", "jsonl", "parquet", "trec")


@pytest.mark.parametrize("form", ID_FORMS)
def test_agreement_command_reads_every_format(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``receval agreement RUN REFERENCE``, the files in each format (one process for
    each format of the run and the reference)."""
    d, o = _data(form), _second(form)
    want = _expected_own("agreement", form)
    for ext in COMMAND_FORMS:
        run = _as(ext, d["recs"], tmp_path / f"recs_{ext}")
        reference = _as(ext, o["reference"], tmp_path / f"reference_{ext}")
        args = ["agreement", str(run), str(reference), *AGREEMENT_FLAGS]
        for m in AGREEMENT:
            args += ["-m", m]
        _summary_only(_command(args, capsys)["metrics"], want)


@pytest.mark.parametrize("form", ID_FORMS)
def test_intent_aware_command_reads_every_format(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, o = _data(form), _second(form)
    want = _expected_own("intent_aware", form)
    qrels = _ndeval_file(o["qrels"], tmp_path / "qrels.txt")
    for ext in COMMAND_FORMS:
        run = _as(ext, d["recs"], tmp_path / f"recs_{ext}")
        args = ["intent-aware", str(run), str(qrels), "--alpha", str(ALPHA)]
        for m in INTENT:
            args += ["-m", m]
        _summary_only(_command(args, capsys)["metrics"], want)


@pytest.mark.spark
@pytest.mark.timeout(900)
@pytest.mark.parametrize("form", ID_FORMS)
def test_agreement_and_intent_aware_on_spark(spark: Any, form: str) -> None:
    """Spark DataFrames at both doors: the run evaluated by the Spark engine, the
    reference run and the subtopic judgments collected to the driver (the truth the
    door builds from them is made there). The command-line doors have no --engine."""
    d, o = _data(form), _second(form)
    run = spark.createDataFrame(d["recs"])
    reference = spark.createDataFrame(o["reference"])
    res = receval.agreement(run, reference, AGREEMENT, **AGREEMENT_OPTIONS)
    assert res.parameters["engine"] == "spark"
    want = _expected_own("agreement", form)
    # Spark's per-user table orders digit-string ids as text (evaluate's Spark engine,
    # not this door): the values are compared in the in-process order
    order = next(iter(want[1].values())).index
    per_user = res.per_user.set_axis(res.per_user.index.astype(str)).loc[order.astype(str)]
    check_door((dict(res.summary), {m: per_user[m] for m in per_user.columns}), want)
    qrels = spark.createDataFrame(o["qrels"])
    check_door(_intent_api(run, qrels), _expected_own("intent_aware", form))


# -- propensity-weighted metrics (issue #35 point 1): the same numbers through every door ---

WEIGHTED = [
    "recall@5[weighting=ips]",
    "ndcg@5[weighting=snips,clip=0.2]",
    "ap@5[weighting=ips,clip=0.1]",
    "precision@3[weighting=snips]",
    "hit_rate@5[weighting=ips]",
]


def _weighted_data(form: str) -> dict[str, pd.DataFrame]:
    """The doors' data with one propensity per truth row (the same values whatever
    the id form; six decimals, which every file format writes exactly)."""
    d = _data(form)
    rng = np.random.default_rng(35)
    t = d["truth"]
    d["propensities"] = pd.DataFrame(
        {
            "user": t["user"],
            "item": t["item"],
            "propensity": np.round(rng.uniform(0.05, 1.0, len(t)), 6),
        }
    )
    return {k: d[k] for k in ("recs", "truth", "propensities")}


def _weighted_api(recs: Any, truth: Any, props: Any) -> Outcome:
    res = receval.evaluate(recs, truth, WEIGHTED, propensities=props, **OPTIONS)
    return dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns}


def _w_pandas(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    return _weighted_api(d["recs"], d["truth"], d["propensities"])


def _w_pyarrow(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    t = {k: pa.Table.from_pandas(v, preserve_index=False) for k, v in d.items()}
    return _weighted_api(t["recs"], t["truth"], t["propensities"])


def _w_polars(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    pl = imported("polars")
    t = {k: pl.from_pandas(v) for k, v in d.items()}
    return _weighted_api(t["recs"], t["truth"], t["propensities"])


def _w_mapping(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    pairs = d["propensities"]
    props = {(u, i): p for u, i, p in pairs.itertuples(index=False)}
    return _weighted_api(d["recs"], d["truth"], props)


def _w_files(ext: str) -> Callable[[dict[str, pd.DataFrame], Path], Outcome]:
    def door(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
        p = _write(d, tmp, ext)
        return _weighted_api(p["recs"], p["truth"], p["propensities"])

    door.__name__ = f"weighted_{ext}"
    return door


def _w_streamed(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    p = _write(d, tmp, "parquet")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(stream, "CHUNK_ROWS", 5)  # many chunks of users
        return _weighted_api(p["recs"], p["truth"], p["propensities"])


def _w_accumulator(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
    users = sorted(set(d["recs"]["user"]) | set(d["truth"]["user"]))
    one, two = (
        receval.Accumulator(WEIGHTED, propensities=d["propensities"], **OPTIONS) for _ in "12"
    )
    for j, batch in enumerate([users[:4], users[4:7], users[7:]]):
        (one if j == 1 else two).update(
            d["recs"][d["recs"]["user"].isin(batch)], d["truth"][d["truth"]["user"].isin(batch)]
        )
    res = one.merge(two).compute()
    return dict(res.summary), {m: res.per_user[m] for m in res.per_user.columns}


def _w_cli(ext: str) -> Callable[[dict[str, pd.DataFrame], Path], Outcome]:
    def door(d: dict[str, pd.DataFrame], tmp: Path) -> Outcome:
        p = _write(d, tmp, ext)
        out = tmp / "per_user.csv"
        args = [sys.executable, "-m", "receval", "evaluate", str(p["recs"]), str(p["truth"])]
        for m in WEIGHTED:
            args += ["-m", m]
        args += ["--propensities", str(p["propensities"])]
        args += ["--per-user", str(out), "--json", "-q", *FLAGS]
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)["metrics"]
        summary = {k: math.nan if v is None else v for k, v in summary.items()}
        frame = pd.read_csv(out, dtype={"user": str}).set_index("user")
        return summary, {m: frame[m] for m in frame.columns}

    door.__name__ = f"weighted_cli_{ext}"
    return door


WEIGHTED_DOORS: list[Callable[[dict[str, pd.DataFrame], Path], Outcome]] = [
    _w_pyarrow,
    _w_polars,
    _w_mapping,
    _w_files("csv"),
    _w_files("jsonl"),
    _w_files("parquet"),
    _w_streamed,
    _w_accumulator,
]
#: (door, id form): every in-process door with every id form; the command line (a
#: process, the slow part) once, with digit strings, which a file reads as numbers
WEIGHTED_CASES = [(door, form) for door in WEIGHTED_DOORS for form in ID_FORMS]
WEIGHTED_CASES += [(_w_cli("csv"), "digits")]


@pytest.mark.parametrize(
    ("door", "form"),
    WEIGHTED_CASES,
    ids=[f"{door.__name__.strip('_')}-{form}" for door, form in WEIGHTED_CASES],
)
def test_weighted_metrics_through_every_door(door: Any, form: str, tmp_path: Path) -> None:
    d = _weighted_data(form)
    check_door(door(d, tmp_path), _w_pandas(d, tmp_path))


# -- next items (issue #36 point 2): lists after each prefix of a session, every door -------
#
# The same sessions and lists, ids in the three forms, go through every form of
# receval.evaluate_next_items' lists (a table: pandas, pyarrow, polars; a mapping
# (session, step) -> items; a callable handed the prefixes) and through
# `receval next-items` on CSV and Parquet files; the summary, each session's means
# and the metric by position must equal the pandas door's, bit for bit.

NEXT_METRICS = ["ndcg@5", "rr", "recall@3", "precision@3", "ap@5"]
NEXT_OPTIONS = {"target": "remaining", "average": "sessions"}
NEXT_FLAGS = ["--target", "remaining", "--average", "sessions"]

NextOutcome = tuple[dict[str, float], pd.DataFrame, pd.DataFrame]


def _next_data(form: str) -> dict[str, pd.DataFrame]:
    """Sessions (rows shuffled: the time column orders them; one session of one
    item; items repeated within a session) and their lists: five items after
    each prefix, the 3rd and 4th tied in score, a few steps without a list."""
    rng = np.random.default_rng(36)
    user, item = _ids(form)
    rows = []
    for s in range(9):
        n = 1 if s == 4 else int(rng.integers(2, 7))
        for t, j in enumerate(rng.choice(8, n)):  # repeats allowed
            rows.append((user(100 + s), user(s % 3), item(int(j)), 10 * s + t))
    sessions = pd.DataFrame(rows, columns=["session", "user", "item", "time"])
    sessions = sessions.sample(frac=1, random_state=2).reset_index(drop=True)
    lists = []
    for sid, g in sessions.groupby("session", sort=False):
        for t in range(1, len(g)):
            if rng.random() < 0.15:
                continue  # no list for this step: scored 0
            for r, j in enumerate(rng.choice(12, 5, replace=False)):
                score = float(10 - min(r, 3)) + (rng.random() / 10 if r < 3 else 0.0)
                lists.append((sid, t, item(int(j)), score))
    frame = pd.DataFrame(lists, columns=["session", "step", "item", "score"])
    return {"sessions": sessions, "lists": frame}


def _next_api(lists: Any, sessions: Any) -> NextOutcome:
    res = receval.evaluate_next_items(lists, sessions, NEXT_METRICS, **NEXT_OPTIONS)
    assert res.per_session is not None and res.by_position is not None
    per_session = res.per_session.copy()
    per_session.index = per_session.index.map(str)
    return dict(res.summary), per_session, res.by_position


def _n_pandas(d: dict[str, pd.DataFrame], tmp: Path) -> NextOutcome:
    return _next_api(d["lists"], d["sessions"])


def _n_pyarrow(d: dict[str, pd.DataFrame], tmp: Path) -> NextOutcome:
    t = {k: pa.Table.from_pandas(v, preserve_index=False) for k, v in d.items()}
    return _next_api(t["lists"], t["sessions"])


def _n_polars(d: dict[str, pd.DataFrame], tmp: Path) -> NextOutcome:
    pl = imported("polars")
    return _next_api(pl.from_pandas(d["lists"]), pl.from_pandas(d["sessions"]))


def _n_mapping(d: dict[str, pd.DataFrame], tmp: Path) -> NextOutcome:
    """Lists as (session, step) -> items, best first (ties by the tie rule);
    sessions as session -> items in time order."""
    lists = {
        key: [
            i
            for _, i in sorted(
                zip(g["score"], g["item"], strict=True), key=lambda r: (-r[0], _id_key(r[1]))
            )
        ]
        for key, g in d["lists"].groupby(["session", "step"])
    }
    ordered = d["sessions"].sort_values("time", kind="stable")
    sessions = {s: list(g["item"]) for s, g in ordered.groupby("session")}
    res = receval.evaluate_next_items(lists, sessions, NEXT_METRICS, **NEXT_OPTIONS)
    per_session = res.per_session.copy()  # type: ignore[union-attr]
    per_session.index = per_session.index.map(str)
    return dict(res.summary), per_session, res.by_position  # type: ignore[return-value]


def _n_callable(d: dict[str, pd.DataFrame], tmp: Path) -> NextOutcome:
    """A model handed the prefixes in batches of about 4 steps: it returns the
    lists of the steps of its batch (ids matched by their text)."""
    lists = d["lists"].assign(
        key=d["lists"]["session"].map(str) + "|" + d["lists"]["step"].map(str)
    )
    batches = []

    def model(prefixes: pd.DataFrame) -> pd.DataFrame:
        keys = set(prefixes["session"].map(str) + "|" + prefixes["step"].map(str))
        batches.append(len(keys))
        return lists[lists["key"].isin(keys)].drop(columns="key")

    res = receval.evaluate_next_items(
        model, d["sessions"], NEXT_METRICS, batch_size=4, **NEXT_OPTIONS
    )
    assert len(batches) > 2  # several batches
    per_session = res.per_session.copy()  # type: ignore[union-attr]
    per_session.index = per_session.index.map(str)
    return dict(res.summary), per_session, res.by_position  # type: ignore[return-value]


def _n_cli(ext: str) -> Callable[[dict[str, pd.DataFrame], Path], NextOutcome]:
    def door(d: dict[str, pd.DataFrame], tmp: Path) -> NextOutcome:
        from receval.cli import main

        p = _write(d, tmp, ext)
        per_session, by_position = tmp / "per_session.csv", tmp / "by_position.parquet"
        args = ["next-items", str(p["lists"]), str(p["sessions"]), *NEXT_FLAGS]
        for m in NEXT_METRICS:
            args += ["-m", m]
        args += ["--per-session", str(per_session), "--by-position", str(by_position)]
        args += ["-o", "json", "-q"]
        with pytest.MonkeyPatch.context() as mp:
            import io as _io

            out = _io.StringIO()
            mp.setattr(sys, "stdout", out)
            code = main(args)
        assert code == 0
        summary = json.loads(out.getvalue())["metrics"]
        summary = {k: math.nan if v is None else v for k, v in summary.items()}
        sessions = pd.read_csv(per_session, dtype={"session": str})
        return (
            summary,
            sessions.set_index("session"),
            pd.read_parquet(by_position).set_index("step"),
        )

    door.__name__ = f"next_items_cli_{ext}"
    return door


NEXT_DOORS: list[Callable[[dict[str, pd.DataFrame], Path], NextOutcome]] = [
    _n_pandas,
    _n_pyarrow,
    _n_polars,
    _n_mapping,
    _n_callable,
    _n_cli("csv"),
    _n_cli("parquet"),
]


#: the pandas door's numbers per id form (computed once)
_NEXT_EXPECTED: dict[str, NextOutcome] = {}


def _same_frame(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.index) == list(want.index)
    assert list(got.columns) == list(want.columns)
    for c in want.columns:
        for a, b in zip(got[c].tolist(), want[c].tolist(), strict=True):
            assert _same(float(a), float(b)), (c, a, b)


@pytest.mark.parametrize("form", ID_FORMS)
@pytest.mark.parametrize("door", NEXT_DOORS, ids=lambda f: f.__name__.strip("_"))
def test_next_items_through_every_door(door: Any, form: str, tmp_path: Path) -> None:
    d = _next_data(form)
    if form not in _NEXT_EXPECTED:
        _NEXT_EXPECTED[form] = _n_pandas(d, tmp_path)
    got, want = door(d, tmp_path), _NEXT_EXPECTED[form]
    assert list(got[0]) == list(want[0])
    for m, v in want[0].items():
        assert _same(got[0][m], v), (m, got[0][m], v)
    _same_frame(got[1], want[1])
    _same_frame(got[2], want[2])
    assert want[2]["steps"].sum() > 10 and want[1].notna().all().all()


# -- backtest: receval.backtest in Python and `receval backtest --command` ------------------
#
# One popularity model, as a Python callable and as a script the command runs per
# fold (reading the fold's Parquet files, writing a CSV): each fold's values and
# their mean equal bit for bit, ids in the three forms.

BACKTEST_METRICS = ["ndcg@3", "hit_rate@3", "recall@3", "coverage@3"]

#: the model's script: the k most frequent items of the fold's train (ties by the tie
#: rule), for every test user. Arrow's Parquet reader alone (pyarrow.parquet loads
#: pandas: 0.4 s more per fold), so each fold's process starts quickly
POPULAR = """
import sys, collections
import pyarrow as pa
try:
    from pyarrow._parquet import ParquetReader
    def column(path, name):
        reader = ParquetReader()
        reader.open(pa.OSFile(path))
        return reader.read_all().column(name).to_pylist()
except ImportError:  # another pyarrow: its public reader
    import pyarrow.parquet as pq
    def column(path, name):
        return pq.read_table(path).column(name).to_pylist()
train, users, out, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def key(v):
    t = str(v)
    return (0, int(t)) if t.lstrip("-").isdigit() else (1, t)
counts = collections.Counter(column(train, "item"))
top = sorted(counts, key=lambda i: (-counts[i], key(i)))[:k]
with open(out, "w") as f:
    f.write("user,item,rank\\n")
    for u in column(users, "user"):
        f.writelines(f"{u},{i},{r + 1}\\n" for r, i in enumerate(top))
"""


def _backtest_log(form: str) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    user, item = _ids(form)
    weights = 1 / np.arange(1, 13)
    items = rng.choice(12, 60, p=weights / weights.sum())
    return pd.DataFrame(
        {
            "user": [user(int(u)) for u in rng.integers(0, 8, 60)],
            "item": [item(int(j)) for j in items],
            "timestamp": np.arange(60),
        }
    )


def _popular(train: pd.DataFrame, users: np.ndarray, fold: Any) -> pd.DataFrame:
    counts = train["item"].value_counts()
    top = sorted(counts.index, key=lambda i: (-counts[i], _id_key(i)))[: fold.k]
    return pd.DataFrame(
        [(u, i, r + 1) for u in users for r, i in enumerate(top)], columns=["user", "item", "rank"]
    )


@pytest.mark.parametrize("form", ID_FORMS)
def test_backtest_in_python_and_on_the_command_line(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _backtest_log(form)
    windows = {"test_length": 10, "n_folds": 2}
    res = receval.backtest(log, windows, _popular, BACKTEST_METRICS, k=3)
    path, script = tmp_path / "log.csv", tmp_path / "popular.py"
    log.to_csv(path, index=False)
    script.write_text(POPULAR)
    template = f"{sys.executable} {script} {{train}} {{users}} {{out}} {{k}}"
    args = ["backtest", str(path), "--command", template, "--test-length", "10"]
    args += ["--n-folds", "2", "-k", "3", *(a for m in BACKTEST_METRICS for a in ("-m", m))]
    got = _command(args, capsys)
    want = res.to_frame()
    assert len(got["folds"]) == len(want) == 2
    for m in BACKTEST_METRICS:
        values = [math.nan if f[m] is None else f[m] for f in got["folds"]]
        assert all(_same(a, b) for a, b in zip(values, want[m].tolist(), strict=True)), m
        assert _same(got["metrics"][m], res.summary[m]), m
    assert [f["users_evaluated"] for f in got["folds"]] == want["users_evaluated"].tolist()
    assert want["hit_rate@3"].notna().all() and want["users_evaluated"].min() > 0
