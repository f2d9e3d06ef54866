"""The property suite receval's own metrics pass, for a metric of yours.

:func:`check_metric` runs a registered metric (or several) through the checks that
hold for every built-in metric, on random workloads (NumPy only; no test framework
needed), so a team can put one line in its own CI::

    from receval.testing import check_metric
    check_metric("price_weighted_hits")

What it checks, each as receval's own test suite does for the built-ins
(``tests/test_blocks.py``, ``tests/test_every_door.py``, ``tests/test_engine.py``):

1. **bounds**: every per-user value, mean and aggregate lies within the declared
   ``bounds`` (or is NaN, where the metric is undefined);
2. **row order**: the rows of both tables shuffled give the same numbers, bit for bit;
3. **blocks, chunks and threads**: the users cut into tiny blocks and chunks, on one
   thread or several, give the same numbers, bit for bit;
4. **ids**: the users' and items' ids as integers, digit strings and text give the
   same numbers, bit for bit;
5. **batches**: the :class:`~receval.Accumulator` fed the users in random batches
   gives the same numbers as one evaluation, bit for bit;
6. **every door**: pandas, pyarrow (and polars, when installed) tables, CSV and
   Parquet files (Parquet streamed), and, given ``spark=``, Spark DataFrames on the
   Spark engine, give the same numbers, bit for bit;
7. **pickling**: the metric's spec goes to another process (a process pool) and
   back by the standard pickle (not checked for a kernel of ``__main__``, a notebook's
   or a script's: Spark's workers get it by value, a process pool cannot).

Each metric is checked at several cut-offs (where it takes one) and with each value
of each parameter that has choices (bools: both). A failure raises
:class:`MetricCheckError` naming the check, the metric string, the seed and the
users whose values differ.
"""

from __future__ import annotations

import math
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from receval.errors import ReceValError
from receval.metrics.registry import MetricDef, ParamDef, lookup
from receval.metrics.spec import parse_metric

__all__ = ["MetricCheckError", "check_metric", "metric_strings", "workload"]

#: the largest grade of the random truth (a parameter bounded by it is drawn above)
MAX_GRADE = 4.0
#: the item groups of the random workload (free-text parameters draw from them)
GROUP_NAMES = ("g0", "g1", "g2")
#: (cells per block, users per sparse block, rows per chunk, threads): tiny to large
SETTINGS = ((1, 1, 10**9, 1), (8, 3, 10**9, 1), (64, 7, 5, 2), (1 << 10, 1 << 16, 1, 3))
#: what the random workload provides (registry.REQUIREMENTS); values of parameters
#: needing anything else (ratings input, a sampled catalog's size) are not drawn
PROVIDED = frozenset({"train", "catalog", "item_features", "popular", "item_groups", "cutoff"})
_NUMBERS: dict[type, tuple[Any, ...]] = {
    float: (0.1, 0.5, 0.9, 1.0, 2.0, 5.0),
    int: (1, 2, 3, 5),
    bool: (False, True),
}


class MetricCheckError(AssertionError):
    """A metric failed a check of :func:`check_metric` (which, on what, why)."""


@dataclass
class _Run:
    """The outcome of one check run: how many evaluations each check compared."""

    metrics: list[str]
    compared: dict[str, int] = field(default_factory=dict)


def _values(p: ParamDef) -> list[Any]:
    """The values of a parameter drawn by the suite."""
    if p.only_with is not None:
        return []
    if p.choices is not None:
        values: list[Any] = list(p.choices)
    elif p.type is str:
        values = list(GROUP_NAMES)
    else:
        values = [v for v in _NUMBERS[p.type] if p.check is None or p.check(v)]
        values = [p.default, *values] if p.default is not None else values
    if p.at_least == "max_grade":
        values = [v for v in values if v is not None and v >= MAX_GRADE]
    blocked = {v for v, need in p.needs if need not in PROVIDED}
    return list(dict.fromkeys(v for v in values if v not in blocked))


def metric_strings(d: MetricDef) -> list[str]:
    """The metric strings the suite evaluates for one declaration: each cut-off
    of ``None, 1, 3, 10`` it takes, and each drawn value of each parameter."""
    ks: list[int | None] = [None, 1, 3, 10] if d.takes_cutoff else [None]
    if d.needs_cutoff:
        ks = [k for k in ks if k is not None]
    out = [d.name if k is None else f"{d.name}@{k}" for k in ks]
    required = {p.name: _values(p)[0] for p in d.params if p.default is None and _values(p)}
    for p in d.params:
        for v in _values(p):
            params = {**required, p.name: p.format(v)}
            k = ks[-1]
            text = d.name if k is None else f"{d.name}@{k}"
            out.append(text + "[" + ",".join(f"{n}={x}" for n, x in params.items()) + "]")
    if required:
        text = "[" + ",".join(f"{n}={v}" for n, v in required.items()) + "]"
        out = [s if "[" in s else s + text for s in out]
    return list(dict.fromkeys(str(parse_metric(s)) for s in out))


def workload(seed: int) -> dict[str, Any]:
    """A random evaluation (the suite's, as ``tests/test_blocks.py`` draws it): 60
    users with lists of 0-30 items, scores with ties, fractional grades up to
    :data:`MAX_GRADE` (0: judged, not relevant), users without truth and truth
    without lists, a training log, dense item features, a catalog and item groups
    (some items in two groups, some in none). Integer ids."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for u in range(60):
        n = int(rng.integers(0, 31))
        items = rng.choice(40, n, replace=False)
        scores = rng.integers(0, 5, n).astype(float)  # ties
        rows += [(u, int(i), s) for i, s in zip(items, scores, strict=True)]
    recs = pd.DataFrame(rows, columns=["user", "item", "score"])
    truth = pd.DataFrame(
        {
            "user": rng.integers(5, 70, 900),
            "item": rng.integers(0, 40, 900),
            "relevance": np.floor(rng.random(900) * MAX_GRADE * 4) / 4,
        }
    ).drop_duplicates(["user", "item"], ignore_index=True)
    truth.loc[0, "relevance"] = MAX_GRADE
    train = pd.DataFrame({"user": rng.integers(0, 30, 300), "item": rng.integers(0, 45, 300)})
    features = pd.DataFrame(rng.random((45, 4)), columns=["f0", "f1", "f2", "f3"])
    features.insert(0, "item", np.arange(45))
    groups = pd.DataFrame(
        {"item": rng.integers(0, 45, 50), "group": rng.choice(list(GROUP_NAMES), 50)}
    ).drop_duplicates(ignore_index=True)
    return {
        "recs": recs,
        "truth": truth,
        "train": train.drop_duplicates(ignore_index=True),
        "item_features": features,
        "catalog": pd.DataFrame({"item": np.arange(50)}),
        "item_groups": groups,
    }


def _relabel(w: Mapping[str, Any], form: str) -> dict[str, Any]:
    """The workload with its ids written as ``int``, ``digits`` (strings) or ``text``
    (``u0007``, ``i0012``: zero-padded, so that text sorts as the numbers do and the
    tie rule orders the same items first)."""
    if form == "int":
        return dict(w)
    user: Callable[[int], str] = str if form == "digits" else "u{:04d}".format
    item: Callable[[int], str] = str if form == "digits" else "i{:04d}".format
    out = {}
    for name, frame in w.items():
        frame = frame.copy()
        if "user" in frame:
            frame["user"] = [user(int(u)) for u in frame["user"]]
        if "item" in frame:
            frame["item"] = [item(int(i)) for i in frame["item"]]
        out[name] = frame
    return out


def _sides(w: Mapping[str, Any], defs: Iterable[MetricDef]) -> dict[str, Any]:
    """The side inputs (train, catalog, ...) the metrics ask for."""
    needs = {n for d in defs for n in d.needs}
    wanted = {"train", "catalog", "item_features", "item_groups"} & (needs | {"train"})
    if "popular" in needs:
        wanted.add("train")
    out = {name: w[name] for name in wanted}
    if "item_features" in out:
        out["item_features"] = out["item_features"].set_index("item")
    return out


@dataclass(frozen=True)
class _Numbers:
    """What an evaluation answered, as compared bit for bit: the summary, the
    per-user values (by user, as integers), the counts, the item-group values."""

    summary: dict[str, float]
    per_user: dict[str, dict[int, float]]
    counts: dict[str, Any]
    item_groups: Any

    @classmethod
    def of(cls, res: Any) -> _Numbers:
        frame = res.per_user
        users = [int(str(u).lstrip("u")) for u in frame.index]
        per_user = {
            str(col): dict(zip(users, frame[col].to_numpy(np.float64).tolist(), strict=True))
            for col in frame.columns
        }
        groups = res.item_groups
        if groups is not None and not groups.empty:
            groups = (list(groups.index), list(groups.columns), groups.to_numpy(np.float64))
        else:
            groups = None
        return cls(dict(res.summary), per_user, dict(res.counts), groups)


def _same_value(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _differences(a: _Numbers, b: _Numbers) -> list[str]:
    """What differs between two answers (empty: they are the same, bit for bit)."""
    out = []
    for name in sorted(set(a.summary) | set(b.summary)):
        x, y = a.summary.get(name, math.nan), b.summary.get(name, math.nan)
        if name not in a.summary or name not in b.summary or not _same_value(x, y):
            out.append(f"{name}: mean {x!r} vs {y!r}")
    for name in sorted(set(a.per_user) & set(b.per_user)):
        pa_, pb = a.per_user[name], b.per_user[name]
        users = sorted(set(pa_) | set(pb))
        bad = [u for u in users if not _same_value(pa_.get(u, -math.inf), pb.get(u, -math.inf))]
        if bad:
            shown = ", ".join(f"user {u}: {pa_.get(u)!r} vs {pb.get(u)!r}" for u in bad[:3])
            out.append(f"{name}: {len(bad)} users differ ({shown})")
    if a.counts != b.counts:
        out.append(f"counts {a.counts} vs {b.counts}")
    ga, gb = a.item_groups, b.item_groups
    if (ga is None) != (gb is None) or (
        ga is not None and (ga[:2] != gb[:2] or not np.array_equal(ga[2], gb[2], equal_nan=True))
    ):
        out.append("the item-group values differ")
    return out


@contextmanager
def _knobs(cells: int, sparse: int, rows: int, threads: int) -> Iterator[None]:
    """receval's block, chunk and thread sizes set for a while (then restored): the
    sizes change how users are cut, never a number."""
    from receval.engines import driver, numpy_engine
    from receval.io import stream, tables

    saved = (
        numpy_engine.BLOCK_CELLS,
        numpy_engine.SPARSE_BLOCK_USERS,
        tables.CHUNK_ROWS,
        stream.CHUNK_ROWS,  # the pairs of users of tables merged by user
        driver.THREADS,
    )
    numpy_engine.BLOCK_CELLS, numpy_engine.SPARSE_BLOCK_USERS = cells, sparse
    tables.CHUNK_ROWS, stream.CHUNK_ROWS, driver.THREADS = rows, rows, threads
    try:
        yield
    finally:
        (
            numpy_engine.BLOCK_CELLS,
            numpy_engine.SPARSE_BLOCK_USERS,
            tables.CHUNK_ROWS,
            stream.CHUNK_ROWS,
            driver.THREADS,
        ) = saved


def _doors(w: Mapping[str, Any], tmp: Path, spark: Any) -> Iterator[tuple[str, Any, Any]]:
    """(door, recommendations, truth): the same two tables through each door."""
    import pyarrow as pa

    recs, truth = w["recs"], w["truth"]
    yield "pyarrow tables", pa.Table.from_pandas(recs), pa.Table.from_pandas(truth)
    try:
        import polars as pl
    except ImportError:
        pass
    else:
        yield "polars frames", pl.from_pandas(recs), pl.from_pandas(truth)
    recs.to_csv(tmp / "recs.csv", index=False)
    truth.to_csv(tmp / "truth.csv", index=False)
    yield "CSV files", tmp / "recs.csv", tmp / "truth.csv"
    recs.to_parquet(tmp / "recs.parquet", index=False)
    truth.to_parquet(tmp / "truth.parquet", index=False)
    yield "Parquet files (streamed)", tmp / "recs.parquet", tmp / "truth.parquet"
    if spark is not None:
        yield "Spark DataFrames", spark.createDataFrame(recs), spark.createDataFrame(truth)


def _out_of_bounds(res: Any, defs: Mapping[str, MetricDef]) -> list[str]:
    """Values outside their metric's declared bounds (NaN aside)."""
    out = []
    for name, value in res.summary.items():
        d = defs[name]
        lo, hi = (d.summarise(b) for b in d.bounds)  # gm_*: the mean of logs, exponentiated
        if not math.isnan(value) and not lo <= value <= hi:
            out.append(f"{name}: mean {value!r} outside [{lo}, {hi}]")
    for name in res.per_user.columns:
        lo, hi = defs[name].bounds
        v = res.per_user[name].to_numpy(np.float64)
        bad = ~np.isnan(v) & ((v < lo) | (v > hi))
        if bad.any():
            users = list(res.per_user.index[bad][:3])
            out.append(f"{name}: {int(bad.sum())} users outside [{lo}, {hi}] (users {users})")
    return out


def _fail(check: str, seed: int, problems: list[str]) -> None:
    if problems:
        shown = "\n  ".join(problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise MetricCheckError(f"{check} (seed {seed}):\n  {shown}{more}")


def _batches(w: Mapping[str, Any], metrics: list[str], rng: np.random.Generator, **kw: Any) -> Any:
    """The Accumulator fed the users in random batches (each user's rows whole)."""
    from receval.evaluation.accumulator import Accumulator

    recs, truth = w["recs"], w["truth"]
    users = np.unique(np.concatenate([recs["user"].to_numpy(), truth["user"].to_numpy()]))
    batch_of = dict(zip(users.tolist(), rng.integers(0, 4, len(users)).tolist(), strict=True))
    acc = Accumulator(metrics, **kw)
    for b in range(4):
        acc.update(recs[recs["user"].map(batch_of) == b], truth[truth["user"].map(batch_of) == b])
    return acc.compute()


def _definitions(metrics: str | MetricDef | Iterable[str | MetricDef]) -> list[MetricDef]:
    """The registered declarations of the metrics named (names, aliases or defs)."""
    if isinstance(metrics, (str, MetricDef)):
        metrics = [metrics]
    out = []
    for m in metrics:
        d = lookup(m.name if isinstance(m, MetricDef) else m)
        if d is None or (isinstance(m, MetricDef) and d is not m):
            name = m.name if isinstance(m, MetricDef) else m
            raise ReceValError(
                f"check_metric: {name!r} is not registered: receval.register_metric(...) first"
            )
        if d.kind not in ("ranking", "aggregate"):
            raise ReceValError(f"check_metric: {d.name!r} is a {d.kind} metric: not checked here")
        out.append(d)
    return out


def _check_seed(defs: list[MetricDef], seed: int, tmp: Path, spark: Any, run: _Run) -> None:
    """Every check on the workload of one seed."""
    from receval.evaluation.api import evaluate

    w = workload(seed)
    metrics = [m for d in defs for m in metric_strings(d)]
    by_name = {str(parse_metric(m)): lookup(parse_metric(m).name) for m in metrics}
    kw = {"empty_truth": ("skip", "zero")[seed % 2], "no_truth": "zero", **_sides(w, defs)}
    whole = evaluate(w["recs"], w["truth"], metrics, **kw)
    expected = _Numbers.of(whole)
    _fail("bounds", seed, _out_of_bounds(whole, by_name))  # type: ignore[arg-type]

    def same(check: str, res: Any) -> None:
        _fail(f"{check} changed a number", seed, _differences(expected, _Numbers.of(res)))
        run.compared[check] = run.compared.get(check, 0) + 1

    rng = np.random.default_rng(seed)
    shuffled = {n: f.sample(frac=1.0, random_state=seed) for n, f in w.items()}
    same("row order", evaluate(shuffled["recs"], shuffled["truth"], metrics, **kw))
    for knobs in SETTINGS:
        with _knobs(*knobs):
            res = evaluate(w["recs"], w["truth"], metrics, **kw)
        same("blocks, chunks and threads", res)
    for form in ("digits", "text"):
        r = _relabel(w, form)
        same(f"ids as {form}", evaluate(r["recs"], r["truth"], metrics, **kw | _sides(r, defs)))
    streamable = [m for m in metrics if not parse_metric(m).reads_max_grade]
    if streamable:
        batches = _batches(w, streamable, rng, **kw)
        only = evaluate(w["recs"], w["truth"], streamable, **kw)
        _fail("Accumulator batches", seed, _differences(_Numbers.of(only), _Numbers.of(batches)))
        run.compared["Accumulator batches"] = run.compared.get("Accumulator batches", 0) + 1
    for door, recs, truth in _doors(w, tmp, spark):
        same(door, evaluate(recs, truth, metrics, **kw))
    for m in metrics:
        spec = parse_metric(m)
        if getattr(spec.definition.kernel, "__module__", None) == "__main__":
            continue  # a notebook's: by value to Spark's workers, never to a process pool
        try:
            back = pickle.loads(pickle.dumps(spec))
        except Exception as e:  # what a process pool or Spark's workers would meet
            why = f"{type(e).__name__}: {e}"
            _fail(
                "pickling",
                seed,
                [f"{m}: {why} (kernel= and check= must be functions of a module, not lambdas)"],
            )
        if back != spec:
            _fail("pickling", seed, [f"{m}: the spec does not come back from pickle"])
        run.compared["pickling"] = run.compared.get("pickling", 0) + 1


def check_metric(
    metrics: str | MetricDef | Iterable[str | MetricDef],
    *,
    seeds: Iterable[int] = (0, 1, 2),
    spark: Any = None,
) -> dict[str, int]:
    """Run receval's metric property suite on registered metrics (see the module's
    docstring for the seven checks); raise :class:`MetricCheckError` on the first
    failure.

    Args:
        metrics: a metric's name (or alias), its :class:`~receval.MetricDef`, or
            several; each must be registered (:func:`receval.register_metric`).
        seeds: the random workloads (one per seed).
        spark: a SparkSession: Spark DataFrames on the Spark engine become one more
            door (the metric's module must be importable by Spark's workers).

    Returns:
        How many evaluations each check compared with the first one.

    Example:
        >>> from receval.testing import check_metric
        >>> sorted(check_metric("precision", seeds=[0]))[:3]
        ['Accumulator batches', 'CSV files', 'Parquet files (streamed)']
    """
    defs = _definitions(metrics)
    run = _Run([m for d in defs for m in metric_strings(d)])
    with tempfile.TemporaryDirectory(prefix="receval-check-") as tmp:
        for seed in seeds:
            _check_seed(defs, seed, Path(tmp), spark, run)
    return run.compared
