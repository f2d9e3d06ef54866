"""The public entry points: :func:`evaluate` and :func:`score`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from receval._progress import rows_to_stderr
from receval.engines import driver, engine_for
from receval.engines.base import Engine
from receval.engines.local import InProcess
from receval.errors import OptionError, ReceValError, option, said
from receval.evaluation.assemble import result_of, with_columns
from receval.evaluation.options import EvalOptions
from receval.evaluation.reference import door_open
from receval.evaluation.result import Result
from receval.io import spark_files
from receval.io.files import checked_path
from receval.io.items import build_context
from receval.io.manifest import set_notes
from receval.io.pair import open_pair
from receval.io.propensities import (
    DEFAULT_GAMMA,
    PairsWithPropensities,
    Propensities,
    is_model,
)
from receval.io.tables import read_recs, read_truth
from receval.metrics.context import ItemContext
from receval.metrics.registry import DOORS, REQUIREMENTS
from receval.metrics.spec import MetricSpec, parse_metrics, suggest
from receval.records import Columns, Pair, PairSource, RecsData, SparkRows, Tables, TruthData

__all__ = ["evaluate", "score"]

EmptyTruth = Literal["skip", "zero", "keep", "error"]
MissingRecs = Literal["zero", "skip", "error"]
Duplicates = Literal["error", "keep", "count", "count_distinct", "join", "left_join"]
Ties = Literal["item", "item_desc", "item_str", "item_str_desc", "input"]


def evaluate(
    recommendations: Any,
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    options: EvalOptions | None = None,
    convention: str | None = None,
    threshold: float | None = None,
    graded: bool | None = None,
    empty_truth: EmptyTruth | None = None,
    missing_recs: MissingRecs | None = None,
    no_truth: EmptyTruth | None = None,
    ties: Ties | None = None,
    relevant_from: Literal["truth", "list"] | None = None,
    duplicates: Duplicates | None = None,
    rank: Literal["order", "position"] | None = None,
    depth: int | None = None,
    unjudged: Literal["keep", "condense"] | None = None,
    negative_grades: Literal["error", "unjudged", "relevant", "nonrelevant"] | None = None,
    catalog_size: int | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    relevance_col: str | None = None,
    truth_user_col: str | None = None,
    truth_item_col: str | None = None,
    train: Any = None,
    catalog: Iterable[Any] | None = None,
    item_features: Any = None,
    popular: Iterable[Any] | None = None,
    progress: Callable[[int], None] | bool | None = None,
    user_groups: Any = None,
    item_groups: Any = None,
    propensities: Any = None,
    propensity_gamma: float = DEFAULT_GAMMA,
) -> Result:
    """Evaluate recommendation lists against the truth.

    Args:
        recommendations: a long table (pandas, polars or pyarrow) with a user,
            an item and a rank (1 = best) or a score (higher = better) column,
            or a mapping ``user -> sequence of items``, best first, or the
            path of a file (CSV/TSV, Parquet, JSON Lines, TREC run). With only
            scores, ties are broken by item id ascending.
        truth: a table (user, item, optional relevance grade), a mapping
            ``user -> iterable of items`` or ``user -> {item: grade}``, or the
            path of a file. When both are Parquet files they are read in
            chunks of users, never whole (:mod:`receval.io.stream`): memory
            stays bounded whatever their size, and the numbers are the same.
        metrics: one metric string or several, e.g. ``"ndcg@10"``,
            ``["precision@5,10", "ap@10[denominator=relevant]"]``.
        options: every policy below in one :class:`~receval.EvalOptions`
            (e.g. ``EvalOptions.from_dict(res.parameters)`` to replay an
            evaluation); keyword arguments given here are applied on top.
        convention: a tool whose numbers to reproduce (``"trec_eval"``,
            ``"ranx"``, ... see :mod:`receval.evaluation.conventions`): it sets the
            defaults of every option below left as None and of every metric
            parameter a metric string does not give. None: receval's own.
        threshold: an item is relevant when its grade is >= threshold (and > 0);
            default 1.
        graded: False reads relevance as binary, as tools that see no grades
            do: every truth row is relevant with gain 1, or, with a
            ``threshold`` given explicitly, the rows graded >= it. Default:
            True (grades are gains), or the convention's (``rectools``,
            ``recbole``, ``lenskit``, ``replay`` read no grades).
        empty_truth: users in the truth without a relevant item: ``skip``
            (NaN, left out of the means and counted; the default), ``zero``
            (scored 0), ``keep`` (evaluated as they are: each metric's own
            value, e.g. gm_ap ln(1e-5), utility minus the items retrieved;
            trec_eval's reading) or ``error``.
        missing_recs: users with relevant items but no recommendations:
            ``zero`` (an empty list: every metric 0; the default), ``skip`` or
            ``error``. A user with neither a list nor a relevant item is
            skipped when either policy says ``skip``.
        no_truth: users with recommendations who are not in the truth at all:
            ``skip``, ``zero``, ``keep`` or ``error``; default: as ``empty_truth``.
        ties: the order of equal scores: ``item`` (item id ascending, numbers
            numerically, strings by code point; the default), ``item_desc``,
            ``item_str`` / ``item_str_desc`` (ids compared as strings, as
            trec_eval does) or ``input`` (the rows' order, a stable sort).
        relevant_from: ``truth`` (R and the ideal ranking come from the
            user's relevant items; the default) or ``list`` (only the relevant
            items the list holds exist, as for tools that only see the
            candidates they are given, e.g. torchmetrics).
        duplicates: ``error``, or ``keep``: the first occurrence of an item in
            a list, the largest grade of a (user, item) pair in the truth, or
            ``count``: every row counts, as LensKit counts them;
            ``count_distinct`` (RePlay), ``join`` (Microsoft Recommenders)
            and ``left_join`` (RecTools): every (list row, truth row) pair of
            an item a hit (see :class:`~receval.EvalOptions`).
        rank: what a rank column means: ``order`` or ``position`` (see
            :class:`~receval.EvalOptions`).
        depth: read only the first ``depth`` items of each list (trec_eval's
            ``-M``); rows past it are counted.
        unjudged: ``keep`` the items of a list not in the user's truth, or
            ``condense`` the lists without them (Sakai 2007; trec_eval ``-J``).
        negative_grades: a negative grade is an ``error``, or marks an item
            pooled but ``unjudged`` (trec_eval's reading; infAP tells it apart),
            or is read as ``relevant`` (the tools that read no grades) or
            ``nonrelevant`` (judged, not relevant: ranx); each convention
            defaults to its tool's reading (see :class:`~receval.EvalOptions`).
        catalog_size: the lists rank sampled candidates; how many items a
            full ranking would rank (the metrics' ``correction=``; docs/sampled.md).
        user_col, item_col, score_col, rank_col, relevance_col: column
            names; None (the default) detects each by its usual spellings
            (``user``, ``user_id``, ``userId``, ...; docs/inputs.md, "Columns"). A
            truth column named ``relevance``, ``rating``, ``grade``,
            ``label``, ... is the graded relevance.
        truth_user_col, truth_item_col: the truth's user and item columns,
            when they are named differently from the recommendations'.
        train: the training interactions (a table with user and item columns,
            or a mapping user -> items): item popularity (distinct users per
            item) and, without ``catalog``, the catalog. Needed by novelty,
            arp, long_tail, and by serendipity without ``popular``.
        catalog: the item universe of coverage, prediction_coverage and gini.
        item_features: for ild: a DataFrame (index = item, numeric columns),
            a mapping item -> vector, or a mapping item -> set of categories.
        popular: the items serendipity treats as popular (default: the top
            10% of catalog items by training popularity).
        progress: called with the number of recommendation rows evaluated so
            far, after each chunk of users (for progress bars); True writes
            that number on stderr at most once a second. Default: silent.
        user_groups: also evaluate groups of users (:mod:`receval.evaluation.groups`):
            a table (user column + one column per grouping) or its file, a
            mapping ``user -> group``, or ``"activity"`` / ``"cold_start"``
            (from ``train``). ``Result.groups`` then holds one row per
            (grouping, group), each equal to evaluating that group's users
            alone. On the Spark engine: a table, file or mapping (or a Spark
            DataFrame, collected: O(users) on the driver), or a built-in
            grouping counted by Spark from a Spark ``train``.
        item_groups: groups of items, for the item-group metrics (rsp, reo,
            exposure, awrf, miscalibration) and ``Result.item_groups``: a
            table (item column + group column; an item in several groups has
            several rows) or its file, or a mapping ``item -> group(s)``; on
            the Spark engine it may be a Spark DataFrame (collected: one row per
            (item, group)).
        propensities: the propensity p of each relevant (user, item) pair,
            read by the weighted metrics (``recall@10[weighting=ips]``,
            ``ndcg@10[weighting=snips,clip=0.05]``; docs/counterfactual-metrics.md):
            a table (user, item, ``propensity``) or its file, a table (item,
            ``propensity``), a mapping ``item -> p`` or ``(user, item) -> p``,
            or ``"popularity"``: Yang et al.'s (2018) model estimated from
            ``train``, p_i = (n_i / n_max)^((γ + 1) / 2). Every relevant pair
            needs one, in (0, 1]. Every engine (Spark: a table, or ``train`` in memory).
        propensity_gamma: γ of the ``"popularity"`` model (default 1: p_i ∝ n_i).

    Returns:
        A :class:`Result`: ``summary`` (metric → mean), ``per_user``,
        ``counts``, ``parameters``.

    Example:
        >>> res = evaluate({"u1": [1, 6, 8]}, {"u1": [1, 2, 3, 4, 5, 6]}, "precision@3")
        >>> round(res.summary["precision@3"], 4)
        0.6667
    """
    opts = EvalOptions.build(
        options,
        convention=convention,
        threshold=threshold,
        graded=graded,
        empty_truth=empty_truth,
        missing_recs=missing_recs,
        no_truth=no_truth,
        ties=ties,
        relevant_from=relevant_from,
        duplicates=duplicates,
        rank=rank,
        depth=depth,
        unjudged=unjudged,
        negative_grades=negative_grades,
        catalog_size=catalog_size,
        user_col=user_col,
        item_col=item_col,
        score_col=score_col,
        rank_col=rank_col,
        relevance_col=relevance_col,
        truth_user_col=truth_user_col,
        truth_item_col=truth_item_col,
    )
    specs = parse_metrics(metrics, opts.metric_defaults)
    if progress is True:
        progress = rows_to_stderr("evaluate")
    elif progress is False:
        progress = None
    side = {"train": train, "catalog": catalog, "item_features": item_features}
    side |= {"popular": popular, "item_groups": item_groups}
    check_inputs(specs, _given(side, opts) | {"propensities": propensities is not None})
    # a Spark train= beside Spark inputs stays where it is: its item counts are computed there
    train_there = spark_files.beside(train, recommendations, truth)
    items = _item_context(specs, opts, side, train_there)
    opened = open_pair(
        recommendations,
        truth,
        opts.columns(),
        graded=opts.graded,
        grade_cut=opts.grade_cut,
        negative_grades=opts.negative_grades,
        train=train_there if items is not None else None,
    )
    weighted = _with_propensities(specs, opened, propensities, train, propensity_gamma, opts)
    engine = engine_for(opened.inputs)
    if not engine.ordered_rows:
        _refuse_row_order(opts)
    groupings, cells = _user_groupings(user_groups, specs, opts, train, train_there, engine)
    with opened.located():  # an error about a row of a file names the file and its line
        out = engine.run(specs, opts.engine(), items, cells, progress)
    res = result_of(out, specs, opts, items)
    with_columns(res, *opened.columns(), engine.plan.max_grade, opts)
    if engine.remote:
        _per_user_there(res, engine)
    if groupings is not None and cells is not None:
        _groups_of_pass(res, out, groupings, specs, opts, items)
    elif groupings is not None:
        assert opened.sources is not None
        _add_groups(res, groupings, *opened.sources, specs, opts, items)
    if item_groups is not None and res.item_groups is None:
        res.notes.append(
            "Result.item_groups (each item group's exposure) is computed at a cut-off: no "
            "metric asked has one (e.g. ndcg@10)"
        )
    res.notes.extend(set_notes({"recommendations": recommendations, "truth": truth, **side}))
    if propensities is not None:
        res.parameters["propensities"] = _named(propensities)
        res.parameters["propensity_gamma"] = propensity_gamma
        if not weighted:
            _exists(propensities)  # unread, but a file named must be there
            res.notes.append(
                "propensities were given but no metric is weighted: ask for one with "
                "weighting=, e.g. recall@10[weighting=ips]"
            )
    return res


def _exists(propensities: Any) -> None:
    """A file of propensities named (not a model's name) must exist, though
    no metric reads it: a mistyped path is an error, not a note."""
    if isinstance(propensities, (str, os.PathLike)) and not is_model(propensities):
        checked_path(propensities)


def _named(propensities: Any) -> str:
    """What the parameters record of ``propensities=``: a model's name, a file's path, or
    the kind of table."""
    if isinstance(propensities, (str, os.PathLike)):
        return os.fspath(propensities)
    return type(propensities).__name__


def _with_propensities(
    specs: Sequence[MetricSpec],
    opened: Any,
    propensities: Any,
    train: Any,
    gamma: float,
    opts: EvalOptions,
) -> bool:
    """When a metric is weighted (``weighting=``), the truth of each part of the
    users carries each row's propensity (``TruthData.propensity``): the whole
    truth of tables in memory, each pair's of inputs streamed or of Spark's
    partitions; whether one is."""
    if propensities is None or not any(
        s.param_dict.get("weighting", "none") != "none" for s in specs
    ):
        return False
    inputs = opened.inputs
    known = Propensities(propensities, train=train, gamma=gamma, cols=opts.columns())
    if isinstance(inputs, Tables):
        inputs.truth.propensity = known.of(inputs.truth)
    elif isinstance(inputs, SparkRows):  # each partition's pair, on the workers
        opened.inputs = dataclasses.replace(
            inputs, to_pair=PairsWithPropensities(inputs.to_pair, known)
        )
    else:
        opened.inputs = _WithPropensities(inputs, known)
    return True


class _WithPropensities(PairSource):
    """A :class:`PairSource` whose pairs' truth carries the propensities."""

    def __init__(self, inner: PairSource, known: Propensities) -> None:
        self.inner, self.known = inner, known

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def max_grade(self) -> float:
        return self.inner.max_grade

    def over_pairs(self, run: Callable[[Iterator[Pair], list[str]], Any]) -> Any:
        return self.inner.over_pairs(lambda pairs, notes: run(map(self.known.attach, pairs), notes))


def _per_user_there(res: Result, engine: Engine) -> None:
    """Per-user values left where the data lies (a lazy Spark DataFrame,
    ``Result.per_user_spark``, collected by ``per_user`` when first read)."""
    names = [str(x) for x in engine.plan.per_user]
    res.per_user = None
    res.per_user_spark = engine.per_user(engine.plan, names)  # type: ignore[attr-defined]
    res.parameters["engine"] = engine.name
    res.parameters["partitions"] = engine.partitions  # type: ignore[attr-defined]


def _refuse_row_order(opts: EvalOptions) -> None:
    """``ties="input"`` has no meaning for an engine whose rows have no order
    (Spark's)."""
    if opts.ties != "input":
        return
    reason = "the rows of a Spark DataFrame have no order: break ties by item id"
    if "ties" not in opts.given and opts.convention:  # the convention's choice
        reason = (
            f"the convention {opts.convention!r} breaks ties by the input's row order, "
            "which the rows of a Spark DataFrame do not have: give "
            + option("ties", "item")
            + " (equal scores ordered by item id) with it"
        )
    raise OptionError(
        "ties", "input", allowed=("item", "item_desc", "item_str", "item_str_desc"), reason=reason
    )


def _given(side: Mapping[str, Any], opts: EvalOptions) -> dict[str, bool]:
    """Which of the inputs metrics may need were given (train also gives a
    catalog and the popular items)."""
    train = side["train"] is not None
    return {
        "train": train,
        "catalog": side["catalog"] is not None or train,
        "item_features": side["item_features"] is not None,
        "popular": side["popular"] is not None or train,
        "item_groups": side["item_groups"] is not None,
        "catalog_size": opts.catalog_size is not None,
    }


def needs_item_context(specs: Sequence[MetricSpec]) -> bool:
    """Whether a metric of ``specs`` reads what is known of the items (train,
    catalog, features, popularity) or counts items (an aggregate): ``evaluate``
    then builds the item context, and records it in the Result's parameters."""
    return any(s.definition.needs or s.definition.kind == "aggregate" for s in specs)


def _item_context(
    specs: Sequence[MetricSpec], opts: EvalOptions, side: Mapping[str, Any], train_df: Any
) -> ItemContext | None:
    """What the metrics know of the items (popularity, catalog, features,
    groups), when one needs it; None otherwise. ``train_df``: a Spark
    ``train=``, counted where it lies."""
    if side["item_groups"] is None and not needs_item_context(specs):
        return None
    cols = Columns(user=opts.user_col, item=opts.item_col)
    popularity = None
    if train_df is not None:
        popularity = spark_files.popularity_of(train_df, cols)
    items = build_context(
        train=None if train_df is not None else spark_files.collected(side["train"]),
        catalog=spark_files.collected(side["catalog"]),
        item_features=spark_files.collected(side["item_features"]),
        popular=spark_files.collected(side["popular"]),
        item_groups=spark_files.collected(side["item_groups"]),
        cols=cols,
        popularity=popularity,
    )
    check_groups(specs, items)
    return items


def _user_groupings(
    user_groups: Any,
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    train: Any,
    train_df: Any,
    engine: Engine,
) -> tuple[Any, driver.UserCells | None]:
    """The groupings of ``user_groups=`` (None: none), and their cells when
    the groups are cut out of the one pass (else each is evaluated alone)."""
    if user_groups is None:
        return None, None
    from receval.evaluation.groups import cells_of, groupings_of

    groupings = groupings_of(
        spark_files.collected(user_groups),
        train=train_df if train_df is not None else spark_files.collected(train),
        cols=opts.columns(),
    )
    alone = _groups_alone(specs, opts)
    if engine.remote and alone:
        raise ReceValError(
            f"{option('user_groups')} on the Spark engine: a user group's ERR normalises by "
            "the largest grade of that group's truth, which the one pass over the "
            "partitions does not know; give the normaliser, e.g. err@10[max_grade=4], or "
            "evaluate in-process"
        )
    return groupings, (cells_of(groupings) if engine.remote or not alone else None)


def _groups_of_pass(
    res: Result,
    out: driver.Outcome,
    groupings: Any,
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    items: ItemContext | None,
) -> None:
    """``res.groups`` and the rest from the groups combined in the one pass."""
    from receval.evaluation.groups import group_table

    assert out.groups is not None
    engine = str(res.parameters.get("engine", "numpy"))
    results = _GroupResults(out.groups, out.group_notes, specs, opts, items, engine)
    nobody = _nobody(specs, opts, items)
    grouped = group_table(groupings, results, int(res.counts["users"]), nobody)
    res.groups, res.counts["user_groups"], notes, res.group_results = grouped
    res.notes.extend(notes)


class _GroupResults(Mapping[tuple[int, int], Any]):
    """Each user group's :class:`Result`, made from its parts when first asked
    for (``Result.group_results``); :meth:`summary` gives its values without it."""

    def __init__(
        self,
        combiners: Mapping[tuple[int, int], Any],
        notes: list[str],
        specs: Sequence[MetricSpec],
        opts: EvalOptions,
        items: ItemContext | None,
        engine: str,
    ) -> None:
        self._combiners = dict(combiners)
        self._notes, self._specs, self._opts, self._items = notes, specs, opts, items
        self._made: dict[tuple[int, int], Result] = {}
        self.engine = engine  # on Spark each group's Result has no per-user values

    def __getitem__(self, key: tuple[int, int]) -> Result:
        if key not in self._made:
            combiner = self._combiners[key]
            if combiner is None:
                raise KeyError(key)
            out = combiner.outcome(self._notes)
            res = result_of(out, self._specs, self._opts, self._items)
            res.parameters["engine"] = self.engine
            self._made[key] = res
        return self._made[key]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return (k for k, c in self._combiners.items() if c is not None)

    def __len__(self) -> int:
        return sum(c is not None for c in self._combiners.values())

    def summary(self, key: tuple[int, int]) -> tuple[dict[str, float], int] | None:
        """The group's values and users evaluated (None: nobody); raises
        NoSharedUser as its evaluation alone would."""
        combiner = self._combiners[key]
        return None if combiner is None else combiner.summary()

    def users(self, key: tuple[int, int]) -> int:
        """The group's users (in the recommendations or the truth)."""
        combiner = self._combiners[key]
        return 0 if combiner is None else int(combiner.counts.get("users", 0))


def _groups_alone(specs: Sequence[MetricSpec], opts: EvalOptions) -> bool:
    """Whether each user group must be read and evaluated alone, not cut out
    of the one pass: a metric normalises by the largest grade of the truth
    (ERR without ``max_grade=``), which a group's own truth may not reach."""
    return opts.graded and any(s.reads_max_grade for s in specs)


def _add_groups(
    res: Result,
    groupings: Any,
    recommendations: tuple[Any, Columns],
    truth: tuple[Any, Columns],
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    items: ItemContext | None,
) -> None:
    """``res.groups``: each group's rows of the inputs (each with the columns
    to read it with) evaluated alone (the inputs read whole once more: a file
    streamed by chunks is read here)."""
    from receval.evaluation.groups import group_rows
    from receval.io.stream import ParquetInput

    inputs = []
    for obj, columns in (recommendations, truth):
        if isinstance(obj, ParquetInput):  # its columns are named by their roles
            inputs.append((obj.read_all(), Columns()))
        else:
            inputs.append((obj, columns))
    recs = read_recs(*inputs[0])
    tr = read_truth(*inputs[1], negative_grades=opts.negative_grades)

    def alone(sub_recs: RecsData, sub_truth: TruthData) -> Result:
        return run([(sub_recs, 0)], sub_truth, specs, opts, items)

    found = group_rows(groupings, recs, tr, alone, _nobody(specs, opts, items))
    res.groups, res.counts["user_groups"], notes, res.group_results = found
    res.notes.extend(notes)


def _nobody(
    specs: Sequence[MetricSpec], opts: EvalOptions, items: ItemContext | None
) -> dict[str, float]:
    """The values of evaluating no rows: those of a user group without users
    (NaN for per-user metrics; e.g. coverage 0), the one rule of both group paths."""
    none = np.empty(0, dtype=np.int64)
    recs = RecsData(none, none, None, none, rows=0)
    truth = TruthData(none, none, np.empty(0), rows=0, graded=False)
    return dict(run([(recs, 0)], truth, specs, opts, items).summary)


def run(
    chunks: Iterable[tuple[RecsData, int]],
    truth: TruthData,
    specs: Sequence[MetricSpec],
    opts: EvalOptions,
    items: ItemContext | None = None,
    order: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Evaluate already-read inputs and assemble the :class:`Result`."""
    engine = InProcess(Tables(chunks, truth))
    out = engine.run(specs, opts.engine(), items, progress=progress)
    return result_of(out, specs, opts, items, order)


#: requirement (registry.REQUIREMENTS) -> what the error says after "{metric} needs"
_PROVIDERS = {
    "train": option("train") + ", which was not given",
    "catalog": option("catalog") + " or " + option("train") + ", which was not given",
    "item_features": option("item_features") + ", which was not given",
    "item_groups": option("item_groups") + ", which was not given",
    "popular": option("popular") + " or " + option("train") + ", which was not given",
    "ratings": "predicted ratings: use receval.evaluate_explicit (explicit feedback)",
    "catalog_size": option("catalog_size")
    + " (how many items a full ranking would rank), which was not given",
    "cutoff": "a cut-off, e.g. {name}@10",
    "propensities": option("propensities") + " (the propensity of each relevant pair, or "
    "'popularity' with " + option("train") + "), which was not given",
}


def check_inputs(specs: Sequence[MetricSpec], given: Mapping[str, bool]) -> None:
    """Fail before any work when a metric needs an input that was not given
    (what each metric needs is declared in the registry:
    :meth:`~receval.metrics.registry.MetricDef.requirements`)."""
    for s in specs:
        d = s.definition
        if d.kind == "rating":
            raise ReceValError(f"{s} is a rating-prediction metric: use receval.evaluate_ratings")
        if d.door is not None and not door_open(d.door):
            door = DOORS[d.door]
            raise ReceValError(
                f"{s} is computed only by {said(door.call, door.command)}, not by "
                f"{said('evaluate', 'receval evaluate')}: it needs "
                f"{REQUIREMENTS[door.needs]}"
            )
        for need in d.requirements(s.k, dict(s.params)):
            if need in _PROVIDERS and not given.get(need, False):
                provider = _PROVIDERS[need].format(name=s.name)
                raise ReceValError(f"{s} needs {provider}")


def check_groups(specs: Sequence[MetricSpec], items: ItemContext | None) -> None:
    """Fail before any work when a metric names an item group that does not
    exist (``exposure@10[group=...]``), or none."""
    groups = None if items is None else items.groups
    for s in specs:
        if "group" not in s.definition.param_map or groups is None:
            continue
        name = s.param_dict["group"]
        labels = [str(g) for g in groups.labels]
        shown = ", ".join(labels[:20]) + (", ..." if len(labels) > 20 else "")
        if name is None:
            raise ReceValError(
                f"{s} needs a group: {s.name}@{s.k or 10}[group=NAME] (groups of "
                f"{groups.name!r}: {shown})"
            )
        if name not in labels:
            raise ReceValError(
                f"{s}: no item group {name!r} in {option('item_groups')} (groups of "
                f"{groups.name!r}: {shown}){suggest(name, labels)}"
            )


def score(
    metric: str,
    ranked: Sequence[Any],
    relevant: Iterable[Any] | Mapping[Any, float],
    *,
    scores: Sequence[float] | None = None,
    threshold: float = 1,
) -> float:
    """One metric for one list: a quick check.

    Args:
        metric: one metric string, e.g. ``"ndcg@10"``.
        ranked: the list, best first (with ``scores``: in any order, ordered by
            score descending, ties by item id ascending).
        relevant: the relevant items, or a mapping item → grade.
        scores: optional scores parallel to ``ranked`` (``auc`` counts ties ½).
        threshold: the grade from which an item is relevant.

    Returns:
        The metric's value; NaN when it is undefined (no relevant item).

    Example:
        >>> round(score("ndcg@3", ranked=[1, 2, 3, 4, 5], relevant={2, 4, 6}), 4)
        0.2961
    """
    specs = parse_metrics(metric)
    if len(specs) != 1:
        raise ReceValError(f"score() takes one metric; {metric!r} names {len(specs)}")
    user = 0
    truth = {user: dict(relevant) if isinstance(relevant, Mapping) else list(relevant)}
    if scores is None:
        recs: Any = {user: list(ranked)}
    else:
        if len(scores) != len(ranked):
            raise ReceValError(
                f"scores has {len(scores)} values but ranked has {len(ranked)} items"
            )
        import pandas as pd

        recs = pd.DataFrame({"user": user, "item": list(ranked), "score": list(scores)})
    res = evaluate(recs, truth, specs, threshold=threshold)
    return float(res.per_user.iloc[0, 0])


def evaluate_explicit(
    ratings: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    options: EvalOptions | None = None,
    threshold: float | None = None,
    dropna: bool = False,
    empty_truth: EmptyTruth | None = None,
    missing_recs: MissingRecs | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    actual_col: str | None = None,
    predicted_col: str | None = None,
) -> Result:
    """Ranking metrics on explicit feedback (SPEC §4): ratings instead of lists.

    Each user's list is their rated items ordered by predicted rating
    (descending, ties by item id ascending). An item is relevant when its
    actual rating is >= ``threshold``, and *recommended* when its predicted
    rating is; only recommended items count as hits. So
    ``precision@k[denominator=recommended]`` is |recommended ∩ relevant in the
    top k| / |recommended in the top k| and ``recall@k`` counts recommended
    relevant items over all relevant ones; both are NaN when their denominator
    is 0. Rows with a missing rating are an error, or dropped with
    ``dropna=True`` and counted (``counts["rating_rows_dropped_missing"]``).

    Example:
        >>> import pandas as pd
        >>> r = pd.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3],
        ...                   "actual": [5, 2, 4], "predicted": [4.5, 4.0, 2.0]})
        >>> evaluate_explicit(r, "precision@3[denominator=recommended]", threshold=3.5).summary
        {'precision@3[denominator=recommended]': 0.5}
    """
    opts = EvalOptions.build(
        options,
        threshold=threshold,
        empty_truth=empty_truth,
        missing_recs=missing_recs,
        user_col=user_col,
        item_col=item_col,
        actual_col=actual_col,
        predicted_col=predicted_col,
    )
    specs = parse_metrics(metrics, opts.metric_defaults)
    for s in specs:
        if s.definition.kind != "ranking" or s.definition.needs:
            raise ReceValError(f"{s} is not a ranking metric of explicit-feedback input")
    check_inputs(specs, {"ratings": True})
    recs, truth, dropped = read_ratings(
        ratings,
        Columns(
            user=opts.user_col,
            item=opts.item_col,
            actual=opts.actual_col,
            predicted=opts.predicted_col,
        ),
        dropna=dropna,
        threshold=opts.threshold,
    )
    res = run(
        [(recs, 0)],
        truth,
        specs,
        opts,
        order="predicted rating descending, then item id ascending",
    )
    res.counts["rating_rows_dropped_missing"] = dropped
    return res


def read_ratings(
    ratings: Any,
    cols: Columns,
    *,
    dropna: bool,
    threshold: float,
) -> tuple[RecsData, TruthData, int]:
    """A (user, item, actual, predicted) table as recommendations (ordered by
    predicted rating, recommended when predicted >= threshold) and truth
    (graded by the actual rating): :mod:`receval.io.ratings`."""
    from receval.io.ratings import as_lists
    from receval.io.ratings import read_ratings as read

    r = read(ratings, cols, dropna=dropna, need=("user", "item"))
    recs, truth = as_lists(r, threshold)
    return recs, truth, r.dropped
