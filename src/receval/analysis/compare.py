"""Comparing systems on the same truth (SPEC §10): :func:`compare`.

Each run is evaluated once with :func:`receval.evaluate` (a truth file is
read once for all of them); the per-user values of each metric are aligned by
user id over the users that every run has a value for, and the statistics of
:mod:`receval.analysis.stats` are applied to them. :class:`Comparison` holds
the result; its renderings live beside it in
:mod:`receval.analysis.comparison_render`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval._progress import Step, silent, steps_of
from receval._version import __version__
from receval.analysis import comparison_render as render
from receval.analysis import stats
from receval.analysis.formatting import letters_for
from receval.errors import InputError, NoSharedUser, OptionError, ReceValError, check_seed
from receval.evaluation.options import EvalOptions, split_kwargs
from receval.evaluation.result import Result
from receval.io.columns import TRUTH, renamed, resolve
from receval.io.files import FileInfo, is_parquet
from receval.io.inputs import FileInput, is_path, opened
from receval.io.spark_files import is_spark
from receval.metrics.spec import MetricSpec, parse_metrics
from receval.records import Columns

__all__ = [
    "LONG_COLUMNS",
    "TAIL_RESAMPLES",
    "Comparison",
    "compare",
    "letters_for",
    "resampling_notes",
]

_PAIR_COLUMNS = [
    "diff",
    "ci_low",
    "ci_high",
    "statistic",
    "p_value",
    "p_adjusted",
    "effect_size",
    "effect_ci_low",
    "effect_ci_high",
    "significant",
    "winner",
]

#: Columns of :meth:`Comparison.to_long` (and of its CSV export).
LONG_COLUMNS = [
    "metric",
    "system",
    "letter",
    "versus",
    "mean",
    "diff",
    "ci_low",
    "ci_high",
    "users",
    "wins",
    "beats",
    "statistic",
    "p_value",
    "p_adjusted",
    "effect_size",
    "effect_ci_low",
    "effect_ci_high",
    "significant",
    "winner",
]


@dataclass
class Comparison:
    """What :func:`compare` returns: data. Its renderings (``str()``,
    :meth:`to_markdown`, :meth:`to_latex`, :meth:`to_csv`, :meth:`to_json`,
    the footnotes) are :mod:`receval.analysis.comparison_render`'s.

    Attributes:
        systems: the system names, in the order given.
        letters: system name → letter (a, b, c, … in the order given).
        metrics: the canonical metric names, in the order asked.
        table: one row per (metric, system), indexed by both: ``letter``,
            ``mean`` (over the users compared; for an aggregate metric its one
            value), ``ci_low``/``ci_high`` (bootstrap interval of the mean),
            ``users`` (users compared), ``wins`` (letters of the systems this
            one beats significantly, e.g. ``"ac"``), ``beats`` (their names, a
            tuple), ``higher_is_better``.
        pairs: one row per comparison, indexed by (metric, system, versus):
            ``diff`` = mean(system − versus) over the users compared,
            ``ci_low``/``ci_high`` (bootstrap interval of the difference),
            ``statistic``, ``p_value``, ``p_adjusted`` (corrected across all
            comparisons of all metrics), ``effect_size`` (paired Cohen's d),
            ``significant`` (``p_adjusted < alpha``), ``winner`` (the system
            that is better, or None).
        missing: one row per system: ``no_recommendations`` (users of the truth
            without a list in that run), ``counted_as`` (how evaluate treated
            them: ``"0"`` or ``"left out"``), then one column per per-user
            metric: users left out of that metric's comparison because this run
            had no value for them while another run had.
        settings: test, correction, alpha, confidence, ci method, resamples,
            seed, baseline, number of comparisons, evaluation options.
        results: system name → the :class:`~receval.Result` of its evaluation.
        aligned: metric → DataFrame (users compared × systems) of the per-user
            values the tests used (per-user metrics only), in user order; the
            index resampling takes each system's values, and each pair's
            differences, in the order of those values.
        omnibus: with 3 systems or more (in process): one row per per-user
            metric — do the systems differ at all? — the one-way
            repeated-measures ANOVA (``anova_f``, ``anova_df1``, ``anova_df2``,
            ``anova_p``) and Friedman's rank test (``friedman_chi2``,
            ``friedman_p``) over the users compared, and ``users``. Not
            corrected; read before the pairs. None otherwise.
        notes: what to read before the numbers, one sentence each: resamples
            too few for the intervals or the tests asked (:func:`resampling_notes`),
            then the notes of the evaluations (``"name: ..."`` when not every
            run has it). ``str()``, Markdown, LaTeX and JSON show them; ``receval
            compare`` prints them on stderr.
        by_group: with ``user_groups=``: (grouping, group) → the comparison of
            the systems on that group's users, each system's group evaluated
            alone (:attr:`~receval.Result.group_results`), with the same
            settings and seed; each group is its own family of comparisons for
            the correction. None otherwise.
        version: the receval version.
    """

    systems: list[str]
    letters: dict[str, str]
    metrics: list[str]
    table: pd.DataFrame
    pairs: pd.DataFrame
    missing: pd.DataFrame
    settings: dict[str, Any]
    results: dict[str, Result]
    aligned: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    by_group: dict[tuple[str, Any], Comparison] | None = field(default=None, repr=False)
    omnibus: pd.DataFrame | None = field(default=None, repr=False)
    notes: list[str] = field(default_factory=list)
    version: str = __version__

    # -- questions -------------------------------------------------------------

    def is_per_user(self, metric: str) -> bool:
        """Whether ``metric`` has per-user values (and so intervals and tests);
        aggregate metrics (coverage, gini, …) have one value per system."""
        return metric in self.aligned

    def compared_pairs(self, metric: str) -> pd.DataFrame:
        """The rows of :attr:`pairs` of one metric, indexed by (system, versus)."""
        if metric in self.pairs.index.get_level_values(0):
            return self.pairs.loc[metric]
        return self.pairs.iloc[:0].droplevel(0)

    def best(self, metric: str) -> set[str]:
        """The systems with the best value of ``metric`` (its direction: lower
        ``arp`` wins); empty when every value is NaN."""
        sub = self.table.loc[metric]
        values = sub["mean"].astype(float)
        if values.isna().all():
            return set()
        hib = bool(sub["higher_is_better"].iloc[0])
        best = values.max() if hib else values.min()
        return set(values.index[values == best])

    @property
    def has_intervals(self) -> bool:
        """Whether bootstrap intervals were computed (``ci`` is not ``none``)."""
        return self.settings["ci"] != "none"

    def footnote(self) -> str:
        """One sentence saying what the superscript marks mean (and nothing
        about intervals: :meth:`interval_note` describes those where they are
        shown)."""
        return render.footnote(self)

    def interval_note(self, where: str = "") -> str:
        """What the intervals are, e.g. ``interval_note("in brackets")`` →
        "Intervals in brackets: 95% bootstrap over users (bca, 10000 resamples,
        seed 0)."; empty when none were computed."""
        return render.interval_note(self, where)

    # -- tables ------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The leaderboard: one row per system, one column per metric (means over
        the users compared)."""
        wide = self.table["mean"].unstack(level=0)
        return wide.reindex(index=self.systems, columns=self.metrics)

    def to_long(self) -> pd.DataFrame:
        """Everything in one flat table (columns :data:`LONG_COLUMNS`): per
        metric, one row per system (``versus`` empty; ``mean``, its interval,
        ``users``, ``wins``, ``beats``), then one row per comparison
        (``versus`` set; ``diff``, its interval, ``statistic``, ``p_value``,
        ``p_adjusted``, ``effect_size``, ``significant``, ``winner``).
        ``beats`` joins the names of the systems beaten with ``;``.

        Example:
            >>> truth = {1: [1], 2: [2], 3: [1], 4: [2]}
            >>> c = compare({"x": {1: [1], 2: [2], 3: [1], 4: [3]},
            ...              "y": {1: [2], 2: [1], 3: [2], 4: [2]}}, truth, "p@1", n_resamples=100)
            >>> long = c.to_long()
            >>> long[["system", "versus", "mean", "diff"]].astype(object).fillna("").values.tolist()
            [['x', '', 0.75, ''], ['y', '', 0.25, ''], ['x', 'y', '', 0.5]]
            >>> round(float(long.loc[2, "p_value"]), 4)
            0.391
        """
        rows: list[dict[str, Any]] = []
        for m in self.metrics:
            for s in self.systems:
                r = self.table.loc[(m, s)]
                rows.append(
                    {
                        "metric": m,
                        "system": s,
                        "letter": self.letters[s],
                        "mean": float(r["mean"]),
                        "ci_low": float(r["ci_low"]),
                        "ci_high": float(r["ci_high"]),
                        "users": r["users"],
                        "wins": str(r["wins"]),
                        "beats": ";".join(r["beats"]),
                    }
                )
            for (a, b), r in self.compared_pairs(m).iterrows():
                rows.append(
                    {
                        "metric": m,
                        "system": a,
                        "letter": self.letters[a],
                        "versus": b,
                        **{c: r[c] for c in _PAIR_COLUMNS},
                    }
                )
        frame = pd.DataFrame(rows, columns=LONG_COLUMNS)
        frame["users"] = frame["users"].astype("Int64")
        return frame

    # -- renderings (receval.analysis.comparison_render) --------------------------

    def to_csv(self, path: str | Path | None = None) -> str:
        """:meth:`to_long` as CSV (p-values in full precision, NaN as an empty
        field, no index); also written to ``path`` when given.

        The CSV is meant for spreadsheets: a text cell (a system name, the
        names beaten) that begins with ``=``, ``+``, ``-``, ``@``, a tab or a
        carriage return is written with a leading ``'`` so that no spreadsheet
        runs it as a formula (numbers, negative ones too, are written as
        numbers). :meth:`to_long` keeps the names exact."""
        return render.csv_text(self, path)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form: settings, systems, every metric's means, intervals,
        comparisons and marks, the users left out, each evaluation's counts."""
        return render.json_ready(self)

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (NaN and infinities written as null)."""
        return render.json_text(self, indent)

    def to_markdown(self, digits: int = 4) -> str:
        """Markdown: the leaderboard with superscript marks (``<sup>``) and their
        footnote, then per metric the means (with intervals when computed) and
        every comparison, then the users left out."""
        return render.markdown(self, digits)

    def to_latex(self, digits: int = 4, details: bool = False) -> str:
        """A LaTeX ``tabular`` (booktabs) of the leaderboard: best value in bold,
        ``\\textsuperscript`` letters for significant wins, the footnote as a
        comment; with ``details`` one more tabular per per-user metric with
        every comparison."""
        return render.latex(self, digits, details)

    def to_ranx_table(self, rounding_digits: int = 3, show_percentages: bool = False) -> str:
        """The leaderboard as ranx 0.3.21's report table (``str(ranx.compare(...))``),
        byte for byte in layout: letters, ranx's metric labels (``NDCG@10``,
        ``MAP@100``), means rounded to ``rounding_digits``, superscript letters
        for the significant wins of receval's tests
        (:func:`receval.analysis.ranx_table.ranx_table`)."""
        from receval.analysis.ranx_table import comparison_table

        return comparison_table(self, rounding_digits, show_percentages)

    def __str__(self) -> str:
        """The console text: the leaderboard with superscript letters, its
        footnote, the users left out, then one leaderboard per user group."""
        return render.text(self)

    def __repr__(self) -> str:
        return f"Comparison(systems={self.systems!r}, metrics={self.metrics!r})"


# -- compare ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    """One unit of work with its own seed: a system's mean or a pair's test."""

    kind: str  # "mean" or "pair"
    metric: str
    systems: tuple[str, ...]


def compare(
    runs: Mapping[str, Any],
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    baseline: str | None = None,
    test: str = "t",
    correction: str | None = None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    ci: str = "bca",
    n_jobs: int = 1,
    resampling: str | None = None,
    options: EvalOptions | None = None,
    **evaluate_kwargs: Any,
) -> Comparison:
    """Compare systems on the same truth with paired tests (SPEC §10).

    Args:
        runs: system name → its recommendations (anything
            :func:`receval.evaluate` accepts, or an already computed
            :class:`~receval.Result` holding the metrics). Systems are
            lettered a, b, c, … in this order. One system is allowed: its
            means and intervals, and no test.
        truth: the truth, as for :func:`receval.evaluate`. A file is read
            once for all the runs (not once per run; a pipe works too), with
            the numbers and errors of reading it in each evaluation; a
            Parquet file is opened by each (it streams beside Parquet runs).
        metrics: metric strings, as for :func:`receval.evaluate`.
        baseline: compare every system with this one; None: all pairs.
        test: ``t`` (paired t-test), ``wilcoxon`` (signed-rank),
            ``randomization`` (alias ``permutation``; sign flips), or ``tukey``:
            the randomised Tukey HSD test (:func:`~receval.analysis.stats.tukey_hsd`),
            whose p-values control the family-wise error over all pairs of
            systems of each metric (for 3 or more systems).
        correction: ``holm`` (the default), ``bonferroni``, ``bh``
            (Benjamini–Hochberg) or ``none``, applied across all comparisons
            of all metrics. With ``test="tukey"``: ``none`` (the default
            there; the p-values are already family-wise).
        alpha: significance level; intervals have confidence ``1 - alpha``.
        n_resamples: resamples of the randomization test and the bootstrap.
        seed: the root seed. ``SeedSequence(seed).spawn`` gives one child per
            unit of work — per metric, first each system's mean, then each pair
            — in that fixed order, so results do not depend on ``n_jobs``.
        ci: bootstrap interval: ``bca``, ``percentile`` or ``none``.
        n_jobs: threads for the units of work (results are identical).
        resampling: how resamples are drawn. ``index`` (the default in
            process): users drawn by index from one random stream per unit of
            work. ``poisson`` (the only way on Spark, and the default there):
            the Poisson bootstrap and sign flips seeded per user
            (:mod:`receval.analysis.resampling`), the same numbers whatever
            the partitioning; the Wilcoxon test is not available with it (it
            ranks every user's difference at once).
        options: the evaluation's :class:`~receval.EvalOptions`; every run is
            evaluated under it (a :class:`~receval.Result` given as a run must
            have been evaluated under the same options).
        **evaluate_kwargs: options as keywords (``threshold``, ``empty_truth``,
            ``convention`` ..., applied on top of ``options``) and the inputs of
            :func:`receval.evaluate` (``train``, ``catalog``, ``item_features``,
            ``popular``), and ``user_groups`` (as for :func:`receval.evaluate`:
            then :attr:`Comparison.by_group` compares the systems within each
            group). ``progress=True`` writes each step (each run's
            evaluation, each metric's tests and intervals) and its time on
            stderr; a function is passed on to the evaluations (rows evaluated).
            Default: silent.

    Per-user values are aligned by user id; for each metric only users with a
    value in every run are compared, and :attr:`Comparison.missing` says how
    many each run lacked. Aggregate metrics (coverage, gini, …) have no
    per-user values: their values are reported without tests.

    Example:
        >>> truth = {1: [1, 2], 2: [3], 3: [1], 4: [2, 3]}
        >>> runs = {"pop": {1: [1, 9], 2: [9, 1], 3: [9, 2], 4: [9, 1]},
        ...         "knn": {1: [1, 2], 2: [3, 9], 3: [1, 9], 4: [2, 9]}}
        >>> cmp = compare(runs, truth, "precision@2", test="randomization", n_resamples=999)
        >>> float(cmp.table.loc[("precision@2", "knn"), "mean"]), cmp.letters["knn"]
        (0.625, 'b')
        >>> float(cmp.pairs.loc[("precision@2", "pop", "knn"), "p_value"])  # exact: 2 of 16
        0.125
    """
    runs = _named_runs(runs)
    systems = list(runs)
    settings = _settings(systems, baseline, test, correction, alpha, n_resamples, seed, ci, n_jobs)
    user_groups = evaluate_kwargs.pop("user_groups", None)
    also: AlsoEvaluated | None = evaluate_kwargs.pop("_also", None)  # the report's curves
    opts, inputs = split_kwargs(options, evaluate_kwargs, caller="compare")
    step, inputs = _steps(inputs)
    specs = parse_metrics(metrics, opts.metric_defaults)
    names = list(dict.fromkeys(str(s) for s in specs))
    hib = {str(s): s.definition.higher_is_better for s in specs}
    grouped = inputs if user_groups is None else {**inputs, "user_groups": user_groups}
    results = _evaluate_runs(runs, truth, specs, opts, grouped, step, also)
    per_user = list(dict.fromkeys(str(s) for s in specs if s.definition.kind != "aggregate"))
    on_spark = _on_spark(results)
    settings["resampling"] = _resampling(resampling, on_spark, settings["test"])
    tested = _tested(results, systems, per_user, settings, on_spark, n_jobs, step)
    pairs = _pairs_frame(tested.of_pairs(), settings["correction"], alpha, hib)
    letters = dict(zip(systems, letters_for(len(systems)), strict=True))
    table = _table_frame(names, systems, letters, results, tested.users, tested.means(), pairs, hib)
    settings |= _family(pairs, settings["test"])
    notes = resampling_notes(settings, bool(per_user)) + _run_notes(results, systems)
    omnibus = None if on_spark or len(systems) < 3 else _omnibus(tested.aligned, systems)
    settings["evaluate"] = _evaluated_with(opts, inputs)
    by_group = None
    if user_groups is not None:
        settings["evaluate"]["user_groups"] = True
        given = {k: settings[k] for k in ("baseline", "test", "correction", "n_resamples")}
        given |= {"alpha": alpha, "seed": seed, "ci": ci, "n_jobs": n_jobs}
        by_group = _by_group(results, systems, truth, names, given, resampling, opts, step)
    return Comparison(
        systems=systems,
        letters=letters,
        metrics=names,
        table=table,
        pairs=pairs,
        missing=_missing_frame(systems, results, tested.missing),
        settings=settings,
        results=results,
        aligned=tested.aligned,
        omnibus=omnibus,
        by_group=by_group,
        notes=notes,
    )


def _steps(inputs: dict[str, Any]) -> tuple[Step, dict[str, Any]]:
    """The steps of ``progress=True`` (a line on stderr as each starts, its
    time as it ends; the evaluations then report no rows of their own) and
    the inputs handed to the evaluations; any other ``progress`` (a function
    of the rows, None) is the evaluations' own, and the steps are silent."""
    if isinstance(inputs.get("progress"), bool):  # True: the steps on stderr
        return steps_of(inputs["progress"], "compare"), {**inputs, "progress": None}
    return silent, inputs


@dataclass
class _Tested:
    """The numbers of a comparison's units of work (:func:`_units`), and what
    they were computed over: per per-user metric, the users × systems frame of
    the users compared (``aligned``) and their number (``users``), and per
    system the users it lacked a value for while another run had one
    (``missing``)."""

    aligned: dict[str, pd.DataFrame]
    missing: dict[str, dict[str, int]]
    users: dict[str, int]
    done: list[tuple[_Unit, dict[str, float]]]

    def of_pairs(self) -> list[tuple[_Unit, dict[str, float]]]:
        """Each pair's unit and numbers (difference, interval, test, effect size)."""
        return [(u, out) for u, out in self.done if u.kind == "pair"]

    def means(self) -> dict[tuple[str, str], dict[str, float]]:
        """(metric, system) → its mean and interval."""
        return {(u.metric, u.systems[0]): out for u, out in self.done if u.kind == "mean"}


def _tested(
    results: Mapping[str, Result],
    systems: Sequence[str],
    metrics: Sequence[str],
    settings: Mapping[str, Any],
    on_spark: bool,
    n_jobs: int,
    step: Step,
) -> _Tested:
    """Every unit of work of the per-user ``metrics`` (each system's mean,
    each pair's test), resampled as ``settings["resampling"]`` says: by index
    in this process (:func:`_run_units`), or the Poisson bootstrap
    (:func:`_poisson_tested`)."""
    pair_list = _pair_list(systems, settings["baseline"])
    units = _units(metrics, systems, pair_list)
    if settings["resampling"] == "poisson":
        return _poisson_tested(
            results, systems, metrics, pair_list, units, settings, on_spark, step
        )
    aligned, missing = _align(results, systems, metrics)
    users = {m: len(frame) for m, frame in aligned.items()}
    outputs = _run_units(units, aligned, settings, n_jobs, step)
    return _Tested(aligned, missing, users, list(zip(units, outputs, strict=True)))


def _poisson_tested(
    results: Mapping[str, Result],
    systems: Sequence[str],
    metrics: Sequence[str],
    pair_list: Sequence[tuple[str, str]],
    units: Sequence[_Unit],
    settings: Mapping[str, Any],
    on_spark: bool,
    step: Step,
) -> _Tested:
    """The units' numbers from :mod:`receval.analysis.resampling`'s two
    passes over the users (on Spark: over its partitions, never collected),
    with resamples and sign flips seeded per user."""
    from receval.analysis import resampling as rs

    layout = rs.layout_of(metrics, systems, pair_list, settings)
    with step(f"Poisson bootstrap and sign flips ({settings['n_resamples']} resamples)"):
        if on_spark:
            from receval.analysis.spark_compare import passes

            first, second, aligned = passes(layout, results)
        else:
            aligned, _ = _align(results, systems, metrics)
            first, second = _local_passes(layout, results)
    found = rs.finish(layout, first, second, settings["alpha"], settings["test"])
    missing = {
        s: {m: first.missing[j][i] for j, m in enumerate(metrics)} for i, s in enumerate(systems)
    }
    users = dict(zip(metrics, first.compared, strict=True))
    done = [(u, found[(u.metric, u.systems)]) for u in units]
    return _Tested(aligned, missing, users, done)


def _family(pairs: pd.DataFrame, test: str) -> dict[str, Any]:
    """The settings that say what was corrected together: the number of
    comparisons with a p-value, and their family."""
    return {
        "comparisons": int(pairs["p_value"].notna().sum()),
        "family": "all pairs of systems of each metric"
        if test == "tukey"
        else "all comparisons of all metrics",
    }


#: Resampled means that should lie beyond each end of a bootstrap interval:
#: with fewer, its ends rest on a handful of draws (a note; docs/compare.md).
TAIL_RESAMPLES = 25

_RESAMPLED_TESTS = {"randomization": "randomization", "tukey": "randomised Tukey HSD"}


def resampling_notes(settings: Mapping[str, Any], per_user: bool = True) -> list[str]:
    """What :attr:`Comparison.notes` says about ``n_resamples`` (B), from the
    comparison's settings:

    * intervals (``ci`` not ``none``, a per-user metric) whose ends rest on
      fewer than :data:`TAIL_RESAMPLES` resampled means beyond each:
      ``(B + 1) · alpha / 2 < 25`` (B < 999 at 95%, B < 4999 at 99%);
    * a test with resampled p-values (randomization, Tukey HSD), which are
      never below ``1 / (B + 1)``, that could not find anything significant
      at ``alpha``: ``1 / (B + 1)`` times the comparisons (Bonferroni, Holm;
      once for BH and none) is ``alpha`` or more.

    Example:
        >>> s = {"n_resamples": 19, "alpha": 0.05, "ci": "percentile",
        ...      "test": "randomization", "correction": "holm", "comparisons": 3}
        >>> for note in resampling_notes(s):
        ...     print(note)  # doctest: +NORMALIZE_WHITESPACE
        intervals from 19 resamples: a 95% interval has about 0.5 resampled means beyond
        each end, fewer than 25, so its ends rest on a handful of draws and move with the
        seed; use at least 999 resamples
        the randomization test's p-values from 19 resamples are at least 1/20 = 0.05,
        3 times that after the Holm correction over 3 comparisons: never below alpha =
        0.05, so no comparison can be significant; use at least 60 resamples
    """
    b, alpha = int(settings["n_resamples"]), float(settings["alpha"])
    notes = []
    if settings["ci"] != "none" and per_user:
        floor = math.ceil(2 * TAIL_RESAMPLES / alpha - 1e-9) - 1  # (B + 1) α / 2 >= 25
        if b < floor:
            notes.append(
                f"intervals from {b} resamples: a {1 - alpha:.0%} interval has about "
                f"{(b + 1) * alpha / 2:.3g} resampled means beyond each end, fewer than "
                f"{TAIL_RESAMPLES}, so its ends rest on a handful of draws and move with the "
                f"seed; use at least {floor} resamples"
            )
    label, m = _RESAMPLED_TESTS.get(settings["test"]), int(settings.get("comparisons", 0))
    if label is not None and m:
        times = m if settings["correction"] in ("bonferroni", "holm") else 1
        if times / (b + 1) >= alpha:
            needed = math.floor(times / alpha)
            while times / (needed + 1) >= alpha:
                needed += 1
            scaled = (
                f", {times} times that after the {settings['correction'].title()} "
                f"correction over {m} comparisons"
                if times > 1
                else ""
            )
            notes.append(
                f"the {label} test's p-values from {b} resamples are at least 1/{b + 1} = "
                f"{1 / (b + 1):.3g}{scaled}: never below alpha = {alpha:g}, so no comparison "
                f"can be significant; use at least {needed} resamples"
            )
    return notes


def _run_notes(results: Mapping[str, Result], systems: Sequence[str]) -> list[str]:
    """The evaluations' notes: once as it is when every run has it, else
    ``"name: note"`` for each run that has it (in the order found)."""
    found: dict[str, list[str]] = {}
    for name in systems:
        for note in results[name].notes:
            found.setdefault(note, [])
            if name not in found[note]:
                found[note].append(name)
    out = []
    for note, names in found.items():
        if len(names) == len(systems):
            out.append(note)
        else:
            out += [f"{name}: {note}" for name in names]
    return out


def _evaluated_with(opts: EvalOptions, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``settings["evaluate"]``: the evaluation options set, and ``True`` for
    each input given (``train``, ``catalog``, ...)."""
    return {
        **{k: v for k, v in opts.to_dict().items() if v is not None and k != "given"},
        **{k: True for k, v in inputs.items() if v is not None and k != "progress"},
    }


def _by_group(
    results: Mapping[str, Result],
    systems: Sequence[str],
    truth: Any,
    metrics: Sequence[str],
    settings: Mapping[str, Any],
    resampling: str | None,
    opts: EvalOptions,
    step: Step,
) -> dict[tuple[str, Any], Comparison]:
    """The comparison of each group that every system could evaluate alone:
    each system's Result of that group's users, compared as any Results are."""
    first = results[systems[0]]
    for name in systems:
        if results[name].group_results is None:
            raise ReceValError(
                f"the Result given for {name!r} has no user groups: evaluate it with "
                "user_groups= (the same as the comparison's) or pass its recommendations"
            )
    out: dict[tuple[str, Any], Comparison] = {}
    assert first.groups is not None
    for key in first.groups.index:
        alone = {s: (results[s].group_results or {}).get(key) for s in systems}
        if any(r is None for r in alone.values()):
            continue  # a group some system could not evaluate alone (see its notes)
        with step(f"group {key[0]}={key[1]!r}"):
            out[key] = compare(
                alone,  # type: ignore[arg-type]
                truth,
                list(metrics),
                resampling=resampling,
                options=opts,
                **settings,
            )
    return out


def _named_runs(runs: Mapping[str, Any]) -> dict[str, Any]:
    """The runs keyed by their names as strings, checked."""
    if not isinstance(runs, Mapping) or len(runs) < 1:
        raise ReceValError("compare needs a mapping of system names to runs (at least one)")
    named = {str(k): v for k, v in runs.items()}
    if len(named) != len(runs):
        raise ReceValError("system names must be distinct")
    return named


#: Names of the randomised Tukey HSD test.
_TUKEY = ("tukey", "tukey_hsd", "hsd", "randomized_tukey", "randomised_tukey")


def _settings(
    systems: Sequence[str],
    baseline: str | None,
    test: str,
    correction: str | None,
    alpha: float,
    n_resamples: int,
    seed: int,
    ci: str,
    n_jobs: int,
) -> dict[str, Any]:
    """The comparison's settings, validated and in canonical form."""
    if baseline is not None and str(baseline) not in systems:
        raise OptionError("baseline", baseline, allowed=tuple(systems), reason="a system's name")
    # each message in the caller's syntax: seed=-1 in Python, --seed -1 in the shell
    if not 0 < alpha < 1:
        raise OptionError("alpha", alpha, expected="a number between 0 and 1 (exclusive)")
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 2:
        raise OptionError(
            "n_resamples",
            n_resamples,
            expected="a whole number >= 2",
            reason="one resample gives intervals of zero width and p-values of 0.5 or more",
        )
    check_seed(seed)
    ci = str(ci).lower()
    if ci not in (*stats.CI_METHODS, "none"):
        raise OptionError("ci", ci, allowed=(*stats.CI_METHODS, "none"))
    if n_jobs < 1:
        raise OptionError("n_jobs", n_jobs, expected="a whole number >= 1")
    name = str(test).strip().lower()
    name = "tukey" if name in _TUKEY else stats.normalize_test(test)
    if name == "tukey":
        if correction is not None and stats.normalize_correction(correction) != "none":
            raise OptionError(
                "correction",
                correction,
                allowed=("none",),
                reason="the randomised Tukey HSD p-values already control the family-wise "
                "error over all pairs of systems of each metric",
            )
        correction = "none"
    return {
        "test": name,
        "correction": stats.normalize_correction("holm" if correction is None else correction),
        "alpha": alpha,
        "confidence": 1 - alpha,
        "ci": ci,
        "n_resamples": int(n_resamples),
        "seed": seed,
        "baseline": None if baseline is None else str(baseline),
    }


@dataclass
class AlsoEvaluated:
    """Metrics evaluated in the same pass as a comparison's (the report's curves):
    ``specs`` asked, ``summaries`` filled with each run's summary of them. Only for
    metrics that change no count and no note of the comparison's own evaluation
    (:func:`restricted`); the report checks that (``report.html._one_pass``)."""

    specs: list[MetricSpec]
    summaries: dict[str, dict[str, float]] = field(default_factory=dict)


def restricted(res: Result, specs: Sequence[MetricSpec]) -> Result:
    """``res``, an evaluation of ``specs`` and more metrics in one pass, as the
    evaluation of ``specs`` alone gives it: their summary, per-user values and
    undefined counts, the groups' values of those metrics (and each group's Result
    likewise). Counts and notes are kept: the caller evaluates more metrics in one
    pass only when they change none (same largest cut-off, same item context, no
    note of their own)."""
    import dataclasses

    names = list(dict.fromkeys(str(s) for s in specs))
    per_user = [n for n in res.per_user.columns if n in names]
    counts = dict(res.counts)
    if "undefined" in counts:
        counts["undefined"] = {k: v for k, v in counts["undefined"].items() if k in names}
    groups = res.groups
    if groups is not None:
        groups = groups[[c for c in groups.columns if c in names or c not in res.summary]]
    inner = res.group_results
    if inner is not None:
        inner = {key: restricted(r, specs) for key, r in inner.items()}
    return dataclasses.replace(
        res,
        summary={n: res.summary[n] for n in names},
        # a copy of its own: a selection of columns shares the block of every metric
        # (pandas' copy on write), which would keep the other metrics' values alive
        per_user=res.per_user[per_user].copy(),
        counts=counts,
        metrics=[s for s in res.metrics if str(s) in names],
        groups=groups,
        group_results=inner,
    )


def _evaluate_runs(
    runs: Mapping[str, Any],
    truth: Any,
    specs: list[MetricSpec],
    opts: EvalOptions,
    inputs: Mapping[str, Any],
    step: Step = silent,
    also: AlsoEvaluated | None = None,
) -> dict[str, Result]:
    """Each run's Result: the one given (evaluated under the same options), or
    :func:`receval.evaluate` of its lists (with ``also``'s metrics in the same pass,
    their summaries kept there)."""
    from receval.evaluation.api import evaluate

    names = [str(s) for s in specs]
    extra = [] if also is None else [s for s in also.specs if str(s) not in names]
    shared = _SharedTruth(truth, runs.values(), opts.columns())
    out: dict[str, Result] = {}
    for name, run in runs.items():
        if isinstance(run, Result):
            absent = [m for m in names if m not in run.summary]
            if absent:
                raise ReceValError(
                    f"the Result given for {name!r} has no {', '.join(absent)}; "
                    "evaluate it with these metrics or pass its recommendations"
                )
            _same_options(name, run, opts)
            out[name] = run
            continue
        try:
            with step(f"evaluating {name}"):
                given = shared.for_run(run)
                res = evaluate(run, given, [*specs, *extra], options=opts, **inputs)
            if also is not None:
                also.summaries[name] = res.summary
                res = restricted(res, specs)
            out[name] = res
        except InputError as exc:  # say which run: "recommendations of 'b', row 3"
            about_truth = shared.located(exc, run)
            if about_truth is not None:  # a row of the truth read once: its file and line
                raise about_truth from None
            if isinstance(exc, NoSharedUser):  # say of which run
                raise NoSharedUser(
                    exc.reason,
                    recommendation_users=exc.recommendation_users,
                    truth_users=exc.truth_users,
                    source=run_source(name),
                ) from None
            if exc.source != "recommendations":
                raise
            raise exc.located(source=run_source(name)) from None
    if any(isinstance(run, Result) for run in runs.values()):
        _one_truth(out)
    return out


def _one_truth(results: Mapping[str, Result]) -> None:
    """Every system is compared on one truth: a Result given must have read as
    many truth rows, of as many users, as the others (a Result keeps no copy
    of its truth, so truths of the same size but other rows go unseen)."""
    read = {
        name: (r.counts.get("truth_rows"), r.counts.get("users_in_truth"))
        for name, r in results.items()
    }
    first, want = next(iter(read.items()))
    for name, got in read.items():
        if got != want:
            raise ReceValError(
                f"the systems were evaluated on different truths: {first!r} read {want[0]} "
                f"truth rows of {want[1]} users, {name!r} {got[0]} rows of {got[1]} users; "
                "compare evaluates every system on one truth (evaluate the Results given "
                "on the comparison's truth, or pass their recommendations)"
            )


class _SharedTruth:
    """The truth of a comparison, read once for all its runs rather than once
    per evaluation (a pipe can be read only once, and a large text file is
    parsed once).

    A truth file that at least two runs evaluate in this process is opened by
    :func:`receval.io.inputs.opened` — as :func:`receval.evaluate` opens it,
    with the evaluation's columns — when the first of them is evaluated, and
    that table is handed to each of them; an error about one of its rows
    names the file and its line (:meth:`FileInfo.locate`), as it did. The
    numbers, notes, recorded columns and errors are those of reading the file
    in each evaluation. The truth is handed down as given:

    * when it is no file (a table, a mapping), or one run at most reads it;
    * to a run on Spark (Spark reads the file);
    * when it is a Parquet file: it streams alongside Parquet runs in chunks
      of users (bounded memory) and its columns are read from the file itself;
    * when opening a regular file fails: each evaluation then reports the
      error where it did (a pipe's error is raised at once: it cannot be
      read again);
    * when the table could not be read under the evaluation's column names
      exactly as the file is (:func:`_readable_alike`).
    """

    def __init__(self, truth: Any, runs: Iterable[Any], cols: Columns) -> None:
        self.given = truth
        self.cols = cols
        self.info: FileInfo | None = None
        self._table: Any = None
        readers = sum(1 for run in runs if self._reads_table(run))
        fmt = truth.format if isinstance(truth, FileInput) else "auto"
        self._open = is_path(truth) and not is_parquet(truth, fmt) and readers >= 2

    @staticmethod
    def _reads_table(run: Any) -> bool:
        """Whether the run is evaluated in this process from its lists."""
        return not isinstance(run, Result) and not is_spark(run)

    def for_run(self, run: Any) -> Any:
        """The truth to evaluate ``run`` with: the table read once, or as given."""
        if not self._reads_table(run):
            return self.given
        if self._open:
            self._open = False
            self._read()
        return self.given if self._table is None else self._table

    def located(self, exc: InputError, run: Any) -> InputError | None:
        """``exc`` naming the truth file (and the line of its row) when it is
        about the table read once that ``run`` was handed; None otherwise."""
        if exc.source != "truth" or self.info is None or not self._reads_table(run):
            return None
        return self.info.locate(exc)

    def _read(self) -> None:
        """Open the file (once); on a failure a regular file is handed down."""
        path = os.fspath(self.given)
        try:
            table, _, info = opened(self.given, "truth", self.cols)
        except ReceValError:
            if _is_pipe(path):  # read once, as it came: not again by each evaluation
                raise
            return  # each evaluation reads it and says what is wrong, where it did
        table = _readable_alike(table, self.cols)
        if table is not None:
            self._table, self.info = table, info


def _is_pipe(path: str) -> bool:
    """Whether ``path`` is read once, as it comes: ``-`` (the standard
    input), ``<(...)``, a named pipe (anything there but a file or a folder)."""
    p = Path(path)
    return path == "-" or (p.exists() and not p.is_file() and not p.is_dir())


def _readable_alike(table: pa.Table, cols: Columns) -> pa.Table | None:
    """A truth table as :func:`receval.io.inputs.opened` gives it (columns
    named by their roles, each remembering the file's name), made readable
    under the evaluation's column names ``cols`` exactly as under
    ``Columns()`` (how an evaluation reads a file it opened): a role whose
    column ``cols`` names (``user_col="uid"``, ``truth_user_col=``, ...) is
    renamed to that name, remembering its origin. None when the two readings
    would differ."""
    given = cols.for_truth()
    names = {r: getattr(given, r) for r in TRUTH[0] if r in table.column_names}
    names = {r: n for r, n in names.items() if n is not None and n != r}
    out = renamed(table, {n: r for r, n in names.items()}) if names else table
    try:
        before = resolve(table.column_names, Columns(), TRUTH, "truth")
        after = resolve(out.column_names, cols, TRUTH, "truth")
    except InputError:
        return None
    alike = before == {r: r for r in before} and after == {r: names.get(r, r) for r in before}
    return out if alike else None


def run_source(name: str) -> str:
    """How an error in the recommendations of the run ``name`` names them
    (the command line puts the run's file and line in its place)."""
    return f"recommendations of {name!r}"


def _same_options(name: str, run: Result, opts: EvalOptions) -> None:
    """A Result given as a run must come from the options of the comparison."""
    replayed = EvalOptions.from_dict(run.parameters)
    given = replayed.to_dict()
    if replayed.grade_cut != opts.grade_cut:  # graded=False: a threshold given selects rows
        raise OptionError(
            "threshold",
            replayed.grade_cut,
            expected=repr(opts.grade_cut),
            reason=f"the Result given for {name!r} was evaluated with relevant rows "
            f"{_cut(replayed.grade_cut)}, the comparison evaluates with {_cut(opts.grade_cut)}",
        )
    for key, value in opts.to_dict().items():
        if key != "given" and key in run.parameters and given[key] != value:
            raise OptionError(
                key,
                given[key],
                expected=repr(value),
                reason=f"the Result given for {name!r} was evaluated with {key}={given[key]!r}, "
                f"the comparison evaluates with {key}={value!r}",
            )


def _cut(grade_cut: float | None) -> str:
    """What a grade cut reads as relevant, under ``graded=False``."""
    return "every truth row" if grade_cut is None else f"graded >= {grade_cut:g} (threshold given)"


def _align(
    results: Mapping[str, Result], systems: Sequence[str], metrics: Sequence[str]
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, int]]]:
    """Per metric, the users × systems frame of the users with a value in every
    run, and per system the users it lacked while another run had a value."""
    aligned: dict[str, pd.DataFrame] = {}
    missing: dict[str, dict[str, int]] = {s: {} for s in systems}
    for m in metrics:
        frame = pd.concat(
            {s: results[s].per_user[m] for s in systems}, axis=1, join="outer", sort=True
        )
        defined = frame.notna()
        somewhere = defined.any(axis=1)
        for s in systems:
            missing[s][m] = int((somewhere & ~defined[s]).sum())
        aligned[m] = frame[defined.all(axis=1)]
    return aligned, missing


def _on_spark(results: Mapping[str, Result]) -> bool:
    """Whether the runs were evaluated on Spark (all of them, or none)."""
    spark = [r.per_user_spark is not None for r in results.values()]
    if any(spark) and not all(spark):
        raise ReceValError(
            "some runs were evaluated on Spark and others in this process: compare them on "
            "one engine (pass Spark DataFrames for all, or in-process tables for all)"
        )
    return any(spark)


def _resampling(resampling: str | None, on_spark: bool, test: str) -> str:
    """The resampling scheme: ``index`` or ``poisson`` (the only one on Spark)."""
    allowed = ("index", "poisson")
    chosen = ("poisson" if on_spark else "index") if resampling is None else str(resampling)
    if chosen not in allowed:
        raise OptionError("resampling", resampling, allowed=allowed)
    if on_spark and chosen != "poisson":
        raise OptionError(
            "resampling",
            resampling,
            allowed=("poisson",),
            reason="on Spark, resamples are drawn per user (the Poisson bootstrap)",
        )
    whole = {
        "wilcoxon": "the Wilcoxon test ranks every difference at once",
        "tukey": "the randomised Tukey HSD test permutes every user's systems at once",
    }
    if chosen == "poisson" and test in whole:
        raise OptionError(
            "test",
            test,
            allowed=("t", "randomization"),
            reason=f"{whole[test]}; with per-user resampling (Spark) use the t-test or the "
            "randomization test",
        )
    return chosen


def _local_passes(layout: Any, results: Mapping[str, Result]) -> tuple[Any, Any]:
    """:mod:`receval.analysis.resampling`'s two passes over every user at once
    (what a Spark partition does over its users)."""
    from receval.analysis import resampling as rs

    frame = pd.concat(
        {
            layout.column(j, i): results[s].per_user[m]
            for j, m in enumerate(layout.metrics)
            for i, s in enumerate(layout.systems)
        },
        axis=1,
        join="outer",
        sort=True,
    )
    values = {c: frame[c].to_numpy(dtype=np.float64) for c in frame.columns}
    users = frame.index.to_numpy()
    first = rs.first_pass(layout, values)
    second = rs.second_pass(layout, rs.Totals.of(first), users, values)
    return first, second


def _omnibus(aligned: Mapping[str, pd.DataFrame], systems: Sequence[str]) -> pd.DataFrame:
    """:attr:`Comparison.omnibus`: the repeated-measures ANOVA and Friedman's
    test of every per-user metric over the users compared."""
    rows = {}
    for m, frame in aligned.items():
        x = frame[list(systems)].to_numpy(dtype=np.float64)
        f, df1, df2, p = stats.repeated_measures_anova(x)
        fr = stats.friedman_test(x)
        rows[m] = {
            "anova_f": f,
            "anova_df1": df1,
            "anova_df2": df2,
            "anova_p": p,
            "friedman_chi2": fr.statistic,
            "friedman_p": fr.pvalue,
            "users": len(frame),
        }
    columns = ["anova_f", "anova_df1", "anova_df2", "anova_p", "friedman_chi2", "friedman_p"]
    out = pd.DataFrame.from_dict(rows, orient="index", columns=[*columns, "users"])
    out.index.name = "metric"
    return out


def _pair_list(systems: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    if baseline is None:
        return list(itertools.combinations(systems, 2))
    return [(s, baseline) for s in systems if s != baseline]


def _units(
    metrics: Sequence[str], systems: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> list[_Unit]:
    """The units of work in their fixed order: per metric, each system's mean, then each pair."""
    units: list[_Unit] = []
    for m in metrics:
        units += [_Unit("mean", m, (s,)) for s in systems]
        units += [_Unit("pair", m, p) for p in pairs]
    return units


def _run_units(
    units: Sequence[_Unit],
    aligned: Mapping[str, pd.DataFrame],
    settings: Mapping[str, Any],
    n_jobs: int,
    step: Step = silent,
) -> list[dict[str, float]]:
    """Every unit's numbers. The work is done per metric: metric j draws from
    child j of ``SeedSequence(seed)`` (split in two: the bootstrap, the sign
    flips), and one resample serves every unit of its metric — each system's
    mean and each pair's difference are columns of one matrix product — so the
    results do not depend on ``n_jobs``."""
    metrics = list(dict.fromkeys(u.metric for u in units))
    seeds = np.random.SeedSequence(settings["seed"]).spawn(len(metrics))
    children = dict(zip(metrics, seeds, strict=True))

    def work(m: str) -> dict[tuple[str, ...], dict[str, float]]:
        mine = [u for u in units if u.metric == m]
        what = f"{m}: tests and intervals ({settings['n_resamples']} resamples"
        with step(f"{what} of {len(aligned[m])} users)"):
            return _metric_units(mine, aligned[m], settings, children[m])

    if n_jobs == 1 or len(metrics) < 2:
        done = [work(m) for m in metrics]
    else:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            done = list(pool.map(work, metrics))
    found = dict(zip(metrics, done, strict=True))
    return [found[u.metric][u.systems] for u in units]


def _metric_units(
    units: Sequence[_Unit],
    frame: pd.DataFrame,
    settings: Mapping[str, Any],
    seed: np.random.SeedSequence,
) -> dict[tuple[str, ...], dict[str, float]]:
    """The numbers of one metric's units: means and intervals of the systems,
    differences, intervals, tests and effect sizes of the pairs."""
    boot_seed, flip_seed = seed.spawn(2)
    columns, flipped = _unit_columns(units, frame)
    n = len(frame)
    x = np.column_stack(columns) if columns else np.empty((n, 0))
    intervals = [(math.nan, math.nan)] * len(units)
    pairs = [i for i, u in enumerate(units) if u.kind == "pair"]
    effects = {i: (math.nan, math.nan) for i in pairs}
    if settings["ci"] != "none" and n:
        # one pass of resamples serves the means of every unit and, for Cohen's d,
        # the means of each pair's squared differences: extra columns of one product
        both = _canonical(
            np.column_stack([x, x[:, pairs] ** 2]),
            lambda m: stats.bootstrap_means(m, settings["n_resamples"], stats.rng_from(boot_seed)),
        )
        means, sq = both[:, : len(units)], both[:, len(units) :]
        intervals = [
            stats.interval_of(x[:, i], means[:, i], settings["alpha"], settings["ci"])
            for i in range(len(units))
        ]
        for j, i in enumerate(pairs):
            effects[i] = stats.effect_size_interval(means[:, i], sq[:, j], n, settings["alpha"])
    if settings["test"] == "tukey" and pairs:  # one draw serves every pair of the metric
        names = list(dict.fromkeys(s for i in pairs for s in units[i].systems))
        names = [c for c in frame.columns if c in names]
        p = stats.tukey_hsd(
            frame[names].to_numpy(dtype=np.float64),
            n_resamples=settings["n_resamples"],
            seed=stats.rng_from(flip_seed),
        )
        at = {name: j for j, name in enumerate(names)}
        tests: dict[int, stats.StatResult | None] = {
            i: stats.StatResult(
                float(columns[i].mean()) if len(columns[i]) else math.nan,
                float(p[at[units[i].systems[0]], at[units[i].systems[1]]]),
            )
            for i in pairs
        }
    else:
        tests = {i: _test(settings, columns[i]) for i in pairs}
    # Monte Carlo sign flips: one draw serves every pair of the metric
    flip = [i for i in pairs if tests[i] is None]
    if flip:
        b = settings["n_resamples"]
        counts = _canonical(
            x[:, flip], lambda m: stats.flip_counts(m, b, stats.rng_from(flip_seed))[None]
        )[0]
        for i, c in zip(flip, counts.tolist(), strict=True):
            tests[i] = stats.StatResult(float(columns[i].mean()), (1 + c) / (1 + b))
    return _unit_numbers(units, columns, flipped, intervals, tests, effects)


def _unit_columns(
    units: Sequence[_Unit], frame: pd.DataFrame
) -> tuple[list[np.ndarray], list[bool]]:
    """Each unit's values in their own order (a system's, a pair's differences):
    a resample of positions then gives a unit the same numbers whatever the
    users' ids, the other systems and the order the systems were given in
    (users of equal values are interchangeable for the unit; docs/compare.md);
    a pair's differences in one orientation, and whether the pair's numbers
    are the mirror of that orientation's (:func:`_oriented`)."""
    flipped = [False] * len(units)
    columns = []
    for i, u in enumerate(units):
        values = frame[u.systems[0]].to_numpy(dtype=np.float64)
        if u.kind == "pair":
            values = values - frame[u.systems[1]].to_numpy(dtype=np.float64)
            values, flipped[i] = _oriented(values)
        columns.append(np.sort(values))
    return columns, flipped


def _unit_numbers(
    units: Sequence[_Unit],
    columns: Sequence[np.ndarray],
    flipped: Sequence[bool],
    intervals: Sequence[tuple[float, float]],
    tests: Mapping[int, stats.StatResult | None],
    effects: Mapping[int, tuple[float, float]],
) -> dict[tuple[str, ...], dict[str, float]]:
    """The numbers :func:`_metric_units` reports for each unit."""
    out: dict[tuple[str, ...], dict[str, float]] = {}
    for i, u in enumerate(units):
        lo, hi = intervals[i]
        moments = stats.Moments.of(columns[i])  # exact sums rounded once, as evaluate
        if u.kind == "mean":
            out[u.systems] = {"mean": moments.mean(), "ci_low": lo, "ci_high": hi}
            continue
        res = tests[i]
        assert res is not None
        sign = -1.0 if flipped[i] else 1.0  # -x: every signed number and interval mirrored
        (lo, hi), (elo, ehi) = (lo, hi)[:: int(sign)], effects[i][:: int(sign)]
        out[u.systems] = {
            "diff": sign * moments.mean(),
            "ci_low": sign * lo,
            "ci_high": sign * hi,
            "statistic": sign * res.statistic,
            "p_value": res.pvalue,
            "effect_size": sign * stats.effect_size_of(moments),
            "effect_ci_low": sign * elo,
            "effect_ci_high": sign * ehi,
        }
    return out


def _canonical(x: np.ndarray, product: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``product(x)`` (a matrix product of resamples with x's columns) taken
    with the columns in the order of their values (the first user's, then the
    next's), its columns put back in x's order: the BLAS kernel that sums a
    column depends on where it stands, so a column's last bits would depend on
    the order of the systems without it."""
    if x.shape[1] < 2:
        return product(x)
    order = np.lexsort(x[::-1])
    out = product(x[:, order])
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return out[:, back]


def _oriented(d: np.ndarray) -> tuple[np.ndarray, bool]:
    """A pair's differences in the orientation its numbers are computed in, and
    whether that is ``-d``: the one of positive mean (exact sums), else the one
    whose sorted values come first. The pair (a, b) and the pair (b, a) are
    then the same resampled numbers, mirrored: which system was given first
    moves no interval or p-value."""
    mean = stats.Moments.of(d).mean() if d.size else 0.0
    if mean != 0.0:
        return (-d, True) if mean < 0.0 else (d, False)
    up, down = np.sort(d), np.sort(-d)
    differ = np.flatnonzero(up != down)
    if differ.size and down[differ[0]] < up[differ[0]]:
        return -d, True
    return d, False


def _test(settings: Mapping[str, Any], d: np.ndarray) -> stats.StatResult | None:
    """A pair's test, or None for a randomization test drawn with the others."""
    name, b = settings["test"], settings["n_resamples"]
    if name != "randomization":
        return stats.run_test(name, d)
    n = d.size
    if n == 0 or not np.any(d) or (n <= 62 and (1 << n) <= b):  # no draw needed
        return stats.randomization_test(d, n_resamples=b)
    return None


def _pairs_frame(
    done: Sequence[tuple[_Unit, dict[str, float]]],
    correction: str,
    alpha: float,
    hib: Mapping[str, bool],
) -> pd.DataFrame:
    """:attr:`Comparison.pairs`: p-values corrected across all comparisons, winners."""
    if not done:
        return pd.DataFrame(
            columns=_PAIR_COLUMNS,
            index=pd.MultiIndex.from_tuples([], names=["metric", "system", "versus"]),
        )
    rows = [
        {"metric": u.metric, "system": u.systems[0], "versus": u.systems[1], **out}
        for u, out in done
    ]
    pairs = pd.DataFrame(rows).set_index(["metric", "system", "versus"])
    pairs["p_adjusted"] = stats.adjust_pvalues(pairs["p_value"].to_numpy(), correction)
    pairs["significant"] = pairs["p_adjusted"] < alpha
    winners: list[str | None] = []
    for (m, a, b), row in pairs.iterrows():
        diff = float(row["diff"])
        if not row["significant"] or diff == 0 or math.isnan(diff):
            winners.append(None)
        else:
            winners.append(a if (diff > 0) == hib[m] else b)
    pairs["winner"] = pd.Series(winners, index=pairs.index, dtype=object)
    return pairs.reindex(columns=_PAIR_COLUMNS)  # Poisson resampling: no effect interval


def _table_frame(
    names: Sequence[str],
    systems: Sequence[str],
    letters: Mapping[str, str],
    results: Mapping[str, Result],
    users: Mapping[str, int],
    means: Mapping[tuple[str, str], dict[str, float]],
    pairs: pd.DataFrame,
    hib: Mapping[str, bool],
) -> pd.DataFrame:
    """:attr:`Comparison.table`: per (metric, system) the mean, interval and marks."""
    beaten: dict[tuple[str, str], set[str]] = {}
    for (m, a, b), row in pairs.iterrows():
        w = row["winner"]
        if w is not None:
            beaten.setdefault((m, w), set()).add(b if w == a else a)
    rows = []
    for m in names:
        for s in systems:
            if m in users:
                out = means[(m, s)]
                mean, lo, hi, n = out["mean"], out["ci_low"], out["ci_high"], users[m]
            else:
                mean, lo, hi, n = results[s].summary[m], math.nan, math.nan, math.nan
            beats = tuple(x for x in systems if x in beaten.get((m, s), ()))
            rows.append(
                {
                    "metric": m,
                    "system": s,
                    "letter": letters[s],
                    "mean": float(mean),
                    "ci_low": lo,
                    "ci_high": hi,
                    "users": n,
                    "wins": "".join(letters[x] for x in beats),
                    "beats": beats,
                    "higher_is_better": hib[m],
                }
            )
    return pd.DataFrame(rows).set_index(["metric", "system"])


def _missing_frame(
    systems: Sequence[str], results: Mapping[str, Result], missing: Mapping[str, dict[str, int]]
) -> pd.DataFrame:
    """:attr:`Comparison.missing`: users without a list, and users left out per metric."""
    miss = pd.DataFrame(
        {
            s: {
                "no_recommendations": _no_recs(results[s]),
                "counted_as": _counted_as(results[s]),
                **missing[s],
            }
            for s in systems
        }
    ).T.reindex(list(systems))
    for col in miss.columns:
        if col != "counted_as":
            miss[col] = miss[col].astype(int)
    return miss


def _no_recs(res: Result) -> int:
    c = res.counts
    return int(
        c.get("users_scored_zero", {}).get("no_recommendations", 0)
        + c.get("users_skipped", {}).get("no_recommendations", 0)
    )


def _counted_as(res: Result) -> str:
    policy = res.parameters.get("missing_recs", "zero")
    return {"zero": "0", "skip": "left out", "error": "error"}.get(str(policy), str(policy))
