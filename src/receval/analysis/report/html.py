"""One self-contained HTML report: :func:`report`.

The page needs no network and no JavaScript: CSS is inline and every chart is
an inline SVG drawn in Python (:mod:`.svg`). The page draws one
:class:`~receval.analysis.compare.Comparison` — computed here, or given — so
its leaderboard, marks and p-values are those of that comparison, exactly.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd

from receval._progress import silent, steps_of
from receval._version import __version__
from receval.analysis.compare import AlsoEvaluated, Comparison, compare
from receval.analysis.formatting import fmt_p, fmt_value
from receval.analysis.off_policy import OffPolicyResult
from receval.analysis.report import svg
from receval.analysis.report.data import curve_specs, curves_frame, popularity_deciles, top_k_items
from receval.errors import ReceValError, option
from receval.evaluation.api import needs_item_context
from receval.evaluation.next_items import NextItemResult
from receval.evaluation.options import EvalOptions, split_kwargs
from receval.evaluation.result import Result
from receval.io.inputs import is_path
from receval.io.spark_files import is_spark
from receval.io.write import (
    PAGE_SUFFIXES,
    atomic_write_text,
    check_target,
    make_folder,
    refuse_inputs,
    suffix_format,
)
from receval.metrics.spec import MetricSpec, parse_metric, parse_metrics

__all__ = ["Report", "next_item_positions", "report"]

_MAX_K = 1000

#: the suffixes of the page written (``out=``, :meth:`Report.save`): as ``report --out``
#: the keywords of :func:`report` that may name an input file
_FILE_KEYWORDS = (
    "train",
    "catalog",
    "item_features",
    "popular",
    "item_groups",
    "user_groups",
    "propensities",
)

#: compare's settings and their defaults (as :func:`receval.analysis.compare.compare`).
_COMPARE_DEFAULTS: dict[str, Any] = {
    "baseline": None,
    "test": "t",
    "correction": None,
    "alpha": 0.05,
    "n_resamples": 10_000,
    "seed": 0,
    "ci": "bca",
    "n_jobs": 1,
}

#: Result parameters that may differ between two evaluations of the same lists.
#: parameters that differ without changing a number (``given``: which options were
#: typed; where it matters, under ``graded=False``, the grade cut is compared apart)
_INCIDENTAL_PARAMETERS = frozenset({"engine", "inputs", "given"})

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f7f9; color: #1d1f23;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1340px; margin: 0 auto; padding: 24px 28px 48px; }
header { border-bottom: 3px solid #0072B2; margin-bottom: 18px; padding-bottom: 8px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 30px 0 10px; border-bottom: 1px solid #d6d9de; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 18px 0 6px; }
.meta, .note { color: #555; font-size: 13px; }
table { border-collapse: collapse; background: #fff; margin: 6px 0 10px;
  box-shadow: 0 1px 2px rgba(0,0,0,.06); }
th, td { padding: 5px 10px; border-bottom: 1px solid #e5e7ea; text-align: right;
  vertical-align: top; }
th { background: #eef1f5; font-weight: 600; }
td.name, th.name { text-align: left; }
td.letter { text-align: center; color: #555; font-weight: 600; }
.ci { display: block; color: #6a6f76; font-size: 11.5px; }
.best { font-weight: 700; }
sup.wins { color: #0072B2; font-weight: 700; margin-left: 1px; }
.sig { color: #0a7a3d; font-weight: 700; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
figure { margin: 0; background: #fff; padding: 8px; border-radius: 6px;
  box-shadow: 0 1px 2px rgba(0,0,0,.08); }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 12.5px; padding: 4px 6px 0; }
dl.params { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 4px 0; }
dl.params dt { font-weight: 600; } dl.params dd { margin: 0; font-family: ui-monospace, monospace; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
"""


@dataclass
class Report:
    """What :func:`report` returns.

    Attributes:
        html: the page.
        comparison: the :class:`~receval.analysis.compare.Comparison` the page draws.
        curves: long table ``system, metric, k, value`` of the metric-vs-k curves.
        popularity: share of recommendation slots per popularity decile (rows:
            systems and ``training data``), or None without training data.
        coverage: system → catalog coverage at ``max_k``, or None without a catalog.
        charts: the ``data-chart`` ids of every chart in the page.
        max_k: the largest cut-off of the curves (and the k of the popularity
            and coverage charts).
        images: the PNG files written (``png_dir``).
        path: where the HTML was written (``out``), or None.
        notes: what the caller should know, e.g. that PNG images were asked
            for but matplotlib is not installed (the HTML is written anyway).
        off_policy: name → the :class:`~receval.analysis.off_policy.OffPolicyResult`
            drawn in the section "Counterfactual estimates" (empty: no section).
        next_items: name → the :class:`~receval.NextItemResult` drawn in the
            section "Next items: metric by position in session" (empty: no section).
        next_items_comparison: the paired comparison of ``next_items`` over
            their units (sessions, or users with ``average="users"``), or None
            (no next-item results). With next-item results alone (no runs) it
            is also :attr:`comparison`.
        positions: long table ``system, metric, step, sessions, value`` of the
            charts of metric by position (None: no next-item results).
        inputs: the files the report was computed from (their name in a
            message → path): :meth:`save` never writes over one of them.
    """

    html: str
    comparison: Comparison
    curves: pd.DataFrame
    popularity: pd.DataFrame | None
    coverage: dict[str, float] | None
    charts: list[str]
    max_k: int
    images: list[Path] = field(default_factory=list)
    path: Path | None = None
    notes: list[str] = field(default_factory=list)
    off_policy: dict[str, OffPolicyResult] = field(default_factory=dict)
    next_items: dict[str, NextItemResult] = field(default_factory=dict)
    next_items_comparison: Comparison | None = None
    positions: pd.DataFrame | None = None
    inputs: dict[str, str] = field(default_factory=dict, repr=False)

    def save(self, path: str | Path) -> Path:
        """Write the page (UTF-8) and return its path: a name ending in
        ``.html`` or ``.htm``, never one of the report's :attr:`inputs` (the
        same file by any spelling or link), else a
        :class:`~receval.errors.ReceValError` before anything is written; its
        folder is made if need be."""
        _check_page(path, self.inputs, "path")
        p = Path(path)
        make_folder(p.parent)
        atomic_write_text(p, self.html)  # whole or not at all; a link at p is replaced
        self.path = p
        return p

    def save_images(self, folder: str | Path) -> list[Path]:
        """Write one PNG per chart into ``folder`` (see :func:`report`'s
        ``png_dir``); a note, not an error, when matplotlib is missing."""
        _write_images(self, folder)
        return self.images

    def __str__(self) -> str:
        where = f" written to {self.path}" if self.path is not None else ""
        lines = [
            f"receval report of {len(self.comparison.systems)} systems, "
            f"{len(self.charts)} charts{where}"
        ]
        return "\n".join([*lines, *(f"note: {n}" for n in self.notes)])

    def __repr__(self) -> str:
        return (
            f"Report(systems={self.comparison.systems!r}, charts={len(self.charts)}, "
            f"path={self.path!r})"
        )


@dataclass(frozen=True)
class _Figure:
    """One chart of the page: its ``data-chart`` id and its ``<figure>`` HTML."""

    chart: str
    html: str


def _figure(chart: str, svg_text: str, caption: str) -> _Figure:
    return _Figure(chart, f"<figure>{svg_text}<figcaption>{escape(caption)}</figcaption></figure>")


# -- the entry point -------------------------------------------------------------------


def report(
    runs: Mapping[str, Any] | None,
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec] | None = None,
    *,
    comparison: Comparison | None = None,
    out: str | Path | None = None,
    png_dir: str | Path | None = None,
    max_k: int | None = None,
    title: str = "receval report",
    provenance: Mapping[str, Any] | None = None,
    baseline: str | None = None,
    test: str | None = None,
    correction: str | None = None,
    alpha: float | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    ci: str | None = None,
    n_jobs: int | None = None,
    options: EvalOptions | None = None,
    off_policy: OffPolicyResult | Mapping[str, OffPolicyResult] | None = None,
    next_items: NextItemResult | Mapping[str, NextItemResult] | None = None,
    **evaluate_kwargs: Any,
) -> Report:
    """A self-contained HTML report of one or more systems (and PNG images on request).

    The page holds the leaderboard with significance marks (one
    :func:`receval.analysis.compare` call, or the ``comparison`` given), every
    pairwise comparison, metric-vs-k curves of each metric asked (each system
    is evaluated once more with ``metric@1-K``), precision–recall curves
    (``precision@k`` against ``recall@k``, k = 1..K), the distribution of
    per-user values (box plots), and — with ``train=`` — popularity bias
    (share of top-K slots per item popularity decile) and catalog coverage;
    then the data, parameters, conventions, counts and version that produced it.

    Args:
        runs: system name → recommendations (anything :func:`receval.evaluate`
            accepts; not precomputed results, the curves need the lists). One
            system is enough: the page then has no comparison. Empty (``{}``
            or None) only with ``next_items``: a page of next-item results alone.
        truth: the truth, as for :func:`receval.evaluate` (None with next-item
            results alone).
        metrics: the leaderboard's metrics (not needed with ``comparison``).
        comparison: a :class:`~receval.analysis.compare.Comparison` of these
            runs (same names) already computed: the page draws it instead of
            computing one, so the page and, e.g., a console table or a CSV of
            that comparison agree to the last digit. ``evaluate_kwargs`` must
            then be those of its evaluation (checked on the evaluation
            parameters), and the comparison settings below must not be given.
        out: write the HTML there (UTF-8): a name ending in ``.html`` or
            ``.htm``, never one of the inputs (the truth, a run's file,
            ``train=`` ...: compared by file), checked before any work.
        png_dir: also write one PNG per chart there (matplotlib, Agg backend).
            Without matplotlib the HTML is still written and built, no PNG is
            written, and :attr:`Report.notes` says how to get them.
        max_k: K of the curves; default the largest cut-off among the metrics
            (10 when none has one).
        title: the page's title.
        provenance: extra facts shown first under "How these numbers were
            produced" (e.g. ``{"data": "u.data", "relevance": "rating ≥ 4"}``).
        baseline, test, correction, alpha, n_resamples, seed, ci, n_jobs: as
            for :func:`receval.analysis.compare` (None: its defaults).
        options: the evaluation's :class:`~receval.EvalOptions`.
        off_policy: counterfactual estimates to show in a section of their own
            ("Counterfactual estimates", before the provenance): an
            :class:`~receval.analysis.off_policy.OffPolicyResult` (what
            :func:`receval.off_policy` returns; shown as "evaluation policy") or
            a mapping name → result, e.g. one per candidate policy. Per result:
            each estimator's estimate with its interval, its effective sample
            size, the quantiles, maximum and shares above thresholds of its
            weights (:class:`~receval.analysis.off_policy.WeightSummary`), and
            a histogram of the weights per decade (chart ``weights-<name>``).
            Nothing else on the page changes.
        next_items: next-item results (what :func:`receval.evaluate_next_items`
            returns) to show in the section "Next items: metric by position in
            session": one :class:`~receval.NextItemResult` (shown as "model")
            or a mapping system name → result, evaluated with the same
            ``target``, ``steps`` and ``average``. Per metric (those of every
            result but aggregates): a chart of its mean at each step position
            t (chart ``position-<metric>``, one line per system) and a table
            (position, sessions with that step, each system's value); each
            system's summary; and one :func:`receval.compare` of the results
            over their paired units (sessions; users with
            ``average="users"``) with the settings above — its leaderboard
            and, with two or more systems, its pairwise tests. ``runs`` may
            then be empty (``{}`` or None, ``truth`` None): the page holds
            only that section and how its numbers were produced
            (:attr:`Report.comparison` is then the next-item comparison, the
            curves are empty); ``metrics``, if given, chooses among the
            results' metrics. With runs, nothing else on the page changes.
        **evaluate_kwargs: options as keywords (``threshold``, column names,
            policies ..., on top of ``options``) and the inputs of
            :func:`receval.evaluate` (``train``, ``catalog`` ...).
            ``progress=True`` writes each step and its time on stderr (the
            comparison's steps too). Default: silent. ``user_groups=`` (as
            for :func:`receval.evaluate`) adds a section "By user group": each
            system's value in each group (bars) and one leaderboard per group
            (:attr:`Comparison.by_group`). ``item_groups=`` adds a section "By
            item group": each group's share of the top-k attention per system
            against its share of the catalog, and each group's numbers
            (``Result.item_groups``).

    Returns:
        A :class:`Report` (``.html``, the data behind the charts, the PNG paths,
        notes).

    Example:
        >>> truth = {1: [1, 2], 2: [3], 3: [1]}
        >>> runs = {"a": {1: [1, 3], 2: [3, 1], 3: [2, 1]}, "b": {1: [3, 1], 2: [1, 2], 3: [1, 2]}}
        >>> rep = report(runs, truth, "ndcg@2", n_resamples=200)
        >>> rep.html.startswith("<!DOCTYPE html>"), rep.charts
        (True, ['curve-ndcg', 'curve-precision', 'curve-recall', 'pr-curve', 'dist-ndcg@2'])
    """
    settings = {
        "baseline": baseline,
        "test": test,
        "correction": correction,
        "alpha": alpha,
        "n_resamples": n_resamples,
        "seed": seed,
        "ci": ci,
        "n_jobs": n_jobs,
    }
    files = _input_files(runs, truth, evaluate_kwargs)
    if out is not None:  # before any work, as ``report --out``
        _check_page(out, files, "out")
    sequential = _next_item_results(next_items)
    if sequential and not runs:  # a page of next-item results alone
        page = {"out": out, "png_dir": png_dir, "title": title, "provenance": provenance}
        given = (comparison, off_policy, options, evaluate_kwargs)
        return _next_items_report(sequential, truth, metrics, settings, given, page)
    runs = _check_runs(runs)
    counterfactual = _off_policy_results(off_policy)
    user_groups = evaluate_kwargs.pop("user_groups", None)
    opts, inputs = split_kwargs(options, evaluate_kwargs, caller="report")
    step = silent
    told = inputs.get("progress")
    if isinstance(told, bool):  # True: the steps on stderr
        step = steps_of(told, "report")
        inputs = {**inputs, "progress": None}
    evaluate_kwargs = {"options": opts, **inputs}
    if user_groups is not None:
        if comparison is not None:
            raise ReceValError(
                "report: user_groups= cannot be given with comparison= (the comparison's own "
                "groups are drawn: compare(..., user_groups=...))"
            )
        settings["user_groups"] = user_groups
    train = evaluate_kwargs.get("train")
    with_catalog = train is not None or evaluate_kwargs.get("catalog") is not None
    also = _one_pass(runs, metrics, comparison, max_k, with_catalog, opts, inputs)
    with step("comparing the systems"):
        given = {**evaluate_kwargs, "progress": told}
        if also is not None:  # the curves' metrics evaluated in the same pass
            given["_also"] = also
        cmp = _comparison(runs, truth, metrics, comparison, settings, given)
    specs = parse_metrics(cmp.metrics)
    max_k = _max_k(specs, max_k)
    runs = {s: runs[s] for s in cmp.systems}
    bases, cspecs = curve_specs(list(specs), max_k, with_catalog)
    if also is not None:
        summaries = also.summaries
    else:
        with step(f"curves: every system at k = 1..{max_k}"):
            summaries = _curve_summaries(runs, truth, cspecs, cmp, evaluate_kwargs)
    curves = curves_frame(summaries, bases, max_k)
    popularity = None
    if train is not None:
        with step("popularity deciles"):
            popularity = _popularity(runs, max_k, opts, inputs)
    coverage = (
        {s: float(summaries[s][f"coverage@{max_k}"]) for s in cmp.systems} if with_catalog else None
    )
    figures = _figures(cmp, curves, bases, popularity, coverage, max_k, counterfactual)
    ncmp, positions, section = _next_items_beside(sequential, settings, comparison, figures, step)
    html = _page(
        title, cmp, figures, _provenance(cmp, specs, max_k, provenance), counterfactual, section
    )
    rep = Report(
        html=html,
        comparison=cmp,
        curves=curves,
        popularity=popularity,
        coverage=coverage,
        charts=[f.chart for group in figures.values() for f in group],
        max_k=max_k,
        off_policy=counterfactual,
        next_items=sequential,
        next_items_comparison=ncmp,
        positions=positions,
    )
    return _finished(rep, out, png_dir, files)


def _figures(
    cmp: Comparison,
    curves: pd.DataFrame,
    bases: Sequence[MetricSpec],
    popularity: pd.DataFrame | None,
    coverage: Mapping[str, float] | None,
    max_k: int,
    counterfactual: Mapping[str, OffPolicyResult],
) -> dict[str, list[_Figure]]:
    """The charts of the page of runs, by section, in the page's order."""
    return {
        "curves": [
            *_curve_figures(curves, bases, cmp.systems, max_k),
            _pr_figure(curves, cmp.systems, max_k),
        ],
        "distributions": _distribution_figures(cmp),
        "bias": _bias_figures(popularity, coverage, cmp.systems, max_k),
        "groups": _group_figures(cmp),
        "item_groups": _item_group_figures(cmp),
        "off_policy": _weight_figures(counterfactual),
    }


def _finished(
    rep: Report,
    out: str | Path | None,
    png_dir: str | Path | None,
    inputs: Mapping[str, str] | None = None,
) -> Report:
    """The report, written to ``out`` and its images to ``png_dir`` when given
    (``inputs``: the files it read, never written over: :attr:`Report.inputs`)."""
    rep.inputs = dict(inputs or {})
    if out is not None:
        rep.save(out)
    if png_dir is not None:
        _write_images(rep, png_dir)
    return rep


def _input_files(runs: Any, truth: Any, evaluate_kwargs: Mapping[str, Any]) -> dict[str, str]:
    """The files :func:`report` reads (the runs', the truth, ``train=`` ...),
    by their name in a message."""
    found: dict[str, str] = {}
    if isinstance(runs, Mapping):
        for name, run in runs.items():
            if is_path(run):
                found[f"recommendations file of {name!r}"] = os.fspath(run)
    if is_path(truth):
        found["truth file"] = os.fspath(truth)
    for key in _FILE_KEYWORDS:
        given = evaluate_kwargs.get(key)
        if is_path(given):
            found[f"{key.replace('_', ' ')} file"] = os.fspath(given)
    return found


def _check_page(path: str | Path, inputs: Mapping[str, str], name: str = "out") -> None:
    """The page's target checked before any work, as ``report --out`` checks
    it: a name ending in ``.html`` or ``.htm``, not one of ``inputs`` (by
    file: another spelling, a link), not a folder, in a folder that is or can
    be made. ``name``: the keyword it was given as (``out``, ``path``)."""
    suffix_format(name, path, dict.fromkeys(PAGE_SUFFIXES, "html"), "the report is an HTML page")
    refuse_inputs((option(name, path), path), inputs.items())
    check_target(path, name, folder_made=True)


def _check_runs(runs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The runs, checked: a non-empty mapping of lists, not of results."""
    if not isinstance(runs, Mapping) or not runs:
        raise ReceValError(
            "report needs a mapping of system names to runs (at least one), or next_items="
        )
    for name, run in runs.items():
        if isinstance(run, Result):
            raise ReceValError(
                f"report needs the recommendations of {name!r}, not an evaluated Result "
                "(the curves and popularity charts read the lists)"
            )
    return runs


def _comparison(
    runs: Mapping[str, Any],
    truth: Any,
    metrics: Any,
    comparison: Comparison | None,
    settings: Mapping[str, Any],
    evaluate_kwargs: Mapping[str, Any],
) -> Comparison:
    """The comparison the page draws: the one given (checked against the runs),
    or one :func:`compare` call."""
    if comparison is None:
        if metrics is None:
            raise ReceValError("report needs metrics (or a comparison=)")
        given = {k: v for k, v in settings.items() if v is not None}
        return compare(runs, truth, metrics, **{**_COMPARE_DEFAULTS, **given}, **evaluate_kwargs)
    if not isinstance(comparison, Comparison):
        raise ReceValError(
            "comparison must be a Comparison (what compare returns); "
            f"got {type(comparison).__name__}"
        )
    both = [k for k, v in settings.items() if v is not None]
    if both:
        raise ReceValError(
            f"report: {', '.join(both)} cannot be given with comparison= "
            "(the comparison's own settings are drawn)"
        )
    names = [str(s) for s in runs]
    if sorted(names) != sorted(comparison.systems):
        raise ReceValError(
            f"the runs ({', '.join(names)}) are not the systems of the comparison "
            f"({', '.join(comparison.systems)})"
        )
    if metrics is not None:
        asked = list(dict.fromkeys(str(s) for s in parse_metrics(metrics)))
        if asked != comparison.metrics:
            raise ReceValError(
                f"metrics {', '.join(asked)} are not those of the comparison "
                f"({', '.join(comparison.metrics)}); leave metrics out to draw the comparison's"
            )
    return comparison


def _max_k(specs: Sequence[MetricSpec], max_k: int | None) -> int:
    if max_k is None:
        ks = [s.k for s in specs if s.k is not None]
        max_k = max(ks) if ks else 10
    if not isinstance(max_k, int) or not 1 <= max_k <= _MAX_K:
        raise ReceValError(f"max_k must be an integer in [1, {_MAX_K}]; got {max_k!r}")
    return max_k


def _one_pass(
    runs: Mapping[str, Any],
    metrics: Any,
    comparison: Comparison | None,
    max_k: int | None,
    with_catalog: bool,
    opts: EvalOptions,
    inputs: Mapping[str, Any],
) -> AlsoEvaluated | None:
    """The curves' metrics, to be evaluated in the comparison's own pass, when that
    changes nothing of the comparison (:func:`receval.analysis.compare.restricted`):
    no comparison given, every run's lists in this process, the curves' K within the
    largest cut-off asked (the count of short lists and the items' exposure are taken
    at the largest cut-off), the same need of item context (train, catalog), and no
    curve metric that makes a note of its own (a corrected estimate outside its
    range, an item-group metric). Else None: the curves are a second evaluation."""
    if comparison is not None or metrics is None:
        return None
    if any(is_spark(run) for run in runs.values()):
        return None
    specs = parse_metrics(metrics, opts.metric_defaults)
    cuts = [s.k for s in specs if s.k is not None]
    if not cuts or (max_k is not None and max_k > max(cuts)):
        return None
    _, cspecs = curve_specs(specs, _max_k(specs, max_k), with_catalog)
    names = {str(s) for s in specs}
    extra = [s for s in cspecs if str(s) not in names]
    if needs_item_context(specs) != needs_item_context([*specs, *extra]):
        return None
    if any(dict(s.params).get("correction", "none") != "none" for s in extra):
        return None
    if any(s.definition.of_item_groups for s in extra):
        return None
    return AlsoEvaluated(cspecs)


def _curve_summaries(
    runs: Mapping[str, Any],
    truth: Any,
    cspecs: Sequence[MetricSpec],
    cmp: Comparison,
    evaluate_kwargs: Mapping[str, Any],
) -> dict[str, dict[str, float]]:
    """Each system evaluated at every cut-off 1..K, under the comparison's parameters."""
    from receval.evaluation.api import evaluate

    summaries = {}
    for s in cmp.systems:
        res = evaluate(runs[s], truth, list(cspecs), **evaluate_kwargs)
        _check_same_parameters(s, cmp.results[s].parameters, res.parameters)
        summaries[s] = res.summary
    return summaries


def _check_same_parameters(
    system: str, compared: Mapping[str, Any], drawn: Mapping[str, Any]
) -> None:
    """The curves must come from the evaluation the comparison made."""
    if EvalOptions.from_dict(compared).grade_cut != EvalOptions.from_dict(drawn).grade_cut:
        raise ReceValError(
            f"{system!r} was compared with the convention's relevant rows but the report's "
            "evaluation has a threshold given, which selects them under graded=False (or the "
            "other way round): pass report the keywords the comparison was evaluated with"
        )
    for key in compared.keys() & drawn.keys() - _INCIDENTAL_PARAMETERS:
        if compared[key] != drawn[key]:
            raise ReceValError(
                f"{system!r} was compared with {key}={compared[key]!r} but the report's "
                f"evaluation has {key}={drawn[key]!r}: pass report the keywords the "
                "comparison was evaluated with (threshold=, train=, catalog=, ...)"
            )


def _popularity(
    runs: Mapping[str, Any], max_k: int, opts: EvalOptions, inputs: Mapping[str, Any]
) -> pd.DataFrame:
    cols = opts.columns()
    tops = {
        s: top_k_items(
            run,
            max_k,
            user_col=cols.user,
            item_col=cols.item,
            score_col=cols.score,
            rank_col=cols.rank,
        )
        for s, run in runs.items()
    }
    return popularity_deciles(
        tops,
        train=inputs["train"],
        catalog=inputs.get("catalog"),
        user_col=cols.user,
        item_col=cols.item,
    )


def _write_images(rep: Report, png_dir: str | Path) -> None:
    """The PNGs, or a note saying how to get them when matplotlib is missing."""
    from receval.analysis.report.png import write_pngs

    try:
        rep.images = write_pngs(
            png_dir,
            curves=rep.curves,
            distributions=rep.comparison.aligned,
            popularity=rep.popularity,
            systems=rep.comparison.systems,
            max_k=rep.max_k,
            weights={n: weight_histogram(r) for n, r in rep.off_policy.items()} or None,
            positions=rep.positions,
            with_runs=not rep.curves.empty,
        )
    except ImportError as exc:
        written = "; the HTML report was written" if rep.path is not None else ""
        rep.notes.append(f"no PNG images written to {png_dir} ({exc}){written}")


# -- charts -------------------------------------------------------------------------------


def _curve_figures(
    curves: pd.DataFrame, bases: Sequence[MetricSpec], systems: Sequence[str], max_k: int
) -> list[_Figure]:
    """One line chart per metric over k = 1..K; the caption says what a point is."""
    out = []
    for b in bases:
        name = str(b)
        sub = curves[curves["metric"] == name]
        series = {
            s: (list(range(1, max_k + 1)), sub[sub["system"] == s]["value"].tolist())
            for s in systems
        }
        d = b.definition
        if d.kind == "aggregate":
            what = f"{d.description}; one value per system at each k, from all lists together."
        else:
            what = "mean over the users evaluated."
        out.append(
            _figure(
                f"curve-{name}",
                svg.line_chart(
                    f"curve-{name}",
                    f"{name}@k",
                    series,
                    xlabel="cut-off k",
                    ylabel=f"{name}@k",
                    integer_x=True,
                ),
                f"{name}@k at k = 1..{max_k}: {what}",
            )
        )
    return out


def _pr_figure(curves: pd.DataFrame, systems: Sequence[str], max_k: int) -> _Figure:
    pr = {}
    for s in systems:
        mine = curves[curves["system"] == s]
        pr[s] = (
            mine[mine["metric"] == "recall"]["value"].tolist(),
            mine[mine["metric"] == "precision"]["value"].tolist(),
        )
    return _figure(
        "pr-curve",
        svg.line_chart("pr-curve", "Precision–recall", pr, xlabel="recall@k", ylabel="precision@k"),
        f"One point per cut-off k = 1..{max_k}: precision@k against recall@k, "
        "each a mean over the users evaluated.",
    )


def _distribution_figures(cmp: Comparison) -> list[_Figure]:
    out = []
    for m, frame in cmp.aligned.items():
        out.append(
            _figure(
                f"dist-{m}",
                svg.box_plot(
                    f"dist-{m}",
                    f"Per-user {m}",
                    {s: frame[s].to_numpy() for s in cmp.systems},
                    ylabel=m,
                ),
                f"{m} of each of the {len(frame)} users compared: box = quartiles, "
                "line = median, diamond = mean, whiskers = furthest values within 1.5 IQR.",
            )
        )
    return out


def _bias_figures(
    popularity: pd.DataFrame | None,
    coverage: Mapping[str, float] | None,
    systems: Sequence[str],
    max_k: int,
) -> list[_Figure]:
    out = []
    if popularity is not None:
        out.append(
            _figure(
                "popularity",
                svg.bar_chart(
                    "popularity",
                    f"Popularity bias (top-{max_k})",
                    list(popularity.columns),
                    {n: popularity.loc[n].tolist() for n in popularity.index},
                    xlabel="item popularity decile (1 = most popular 10% of catalog items)",
                    ylabel="share",
                ),
                f"Share of all top-{max_k} recommendation slots by item popularity decile "
                "(training users per item); 'training data' is each decile's share of "
                "training interactions; 'outside' = items not in the catalog.",
            )
        )
    if coverage is not None:
        out.append(
            _figure(
                "coverage",
                svg.bar_chart(
                    "coverage",
                    f"Catalog coverage@{max_k}",
                    list(systems),
                    {f"coverage@{max_k}": [coverage[s] for s in systems]},
                    xlabel="system",
                    ylabel="share of catalog",
                ),
                f"coverage@{max_k}: share of catalog items in the top {max_k} of at least one "
                f"user's list; one value per system (the coverage@k curve at k = {max_k}).",
            )
        )
    return out


def _group_figures(cmp: Comparison) -> list[_Figure]:
    """Per grouping and metric: each system's value in each group (bars)."""
    out: list[_Figure] = []
    if not cmp.by_group:
        return out
    groupings = list(dict.fromkeys(g for g, _ in cmp.by_group))
    for g in groupings:
        keys = [key for key in cmp.by_group if key[0] == g]
        labels = [str(v) for _, v in keys]
        for m in cmp.metrics:
            rows = {s: [cmp.by_group[key].table.loc[(m, s)] for key in keys] for s in cmp.systems}
            series = {s: [float(r["mean"]) for r in rs] for s, rs in rows.items()}
            intervals = {
                s: [(float(r["ci_low"]), float(r["ci_high"])) for r in rs] for s, rs in rows.items()
            }
            drawn = any(math.isfinite(lo) for v in intervals.values() for lo, _ in v)
            out.append(
                _figure(
                    f"group-{g}-{m}",
                    svg.bar_chart(
                        f"group-{g}-{m}",
                        f"{m} by {g}",
                        labels,
                        series,
                        xlabel=g,
                        ylabel=m,
                        intervals=intervals if drawn else None,
                    ),
                    f"{m} of each system over the users of each group of {g!r}, each group "
                    "evaluated alone. "
                    + (cmp.interval_note("(whiskers)") + " " if drawn else "")
                    + "Significance in the tables below.",
                )
            )
    return out


def _item_group_tables(cmp: Comparison) -> dict[str, pd.DataFrame] | None:
    """Each system's ``Result.item_groups``, when every system has one."""
    tables = {s: cmp.results[s].item_groups for s in cmp.systems}
    if any(t is None for t in tables.values()):
        return None
    return tables  # type: ignore[return-value]


def _item_group_figures(cmp: Comparison) -> list[_Figure]:
    """Each item group's share of the top-k attention of each system, next to
    its share of the catalog (bars)."""
    tables = _item_group_tables(cmp)
    if tables is None:
        return []
    first = tables[cmp.systems[0]]
    column = next(c for c in first.columns if c.startswith("exposure@"))
    grouping = str(first.index[0][0]) if len(first) else "group"
    labels = [str(v) for _, v in first.index]
    series: dict[str, list[float]] = {}
    if first["catalog_share"].notna().any():
        series["catalog share"] = first["catalog_share"].tolist()
    for s in cmp.systems:
        series[s] = tables[s][column].tolist()
    return [
        _figure(
            "item-exposure",
            svg.bar_chart(
                "item-exposure",
                f"Exposure by {grouping} ({column})",
                labels,
                series,
                xlabel=grouping,
                ylabel="share",
            ),
            f"{column}: each item group's share of the attention of all top-k slots (rank r "
            "weighs 1 / log2(r + 1); an item in several groups counts in each), next to the "
            "group's share of the catalog's items.",
        )
    ]


def _item_groups(cmp: Comparison, figures: Sequence[_Figure]) -> str:
    """The section by item group: the chart, then each group's numbers per system."""
    tables = _item_group_tables(cmp)
    assert tables is not None
    first = tables[cmp.systems[0]]
    columns = [c for c in first.columns if c not in ("items", "catalog_share")]
    head = "<th class='name'>group</th><th>items</th><th>catalog share</th>" + "".join(
        f"<th>{escape(c)} · {escape(cmp.letters[s])}</th>" for c in columns for s in cmp.systems
    )
    rows = []
    for key in first.index:
        cells = "".join(
            f"<td>{fmt_value(tables[s].loc[key, c])}</td>" for c in columns for s in cmp.systems
        )
        rows.append(
            f"<tr><td class='name'>{escape(str(key[1]))}</td><td>{int(first.loc[key, 'items'])}"
            f"</td><td>{fmt_value(first.loc[key, 'catalog_share'])}</td>{cells}</tr>"
        )
    per_user = [m for m in cmp.metrics if parse_metric(m).definition.per_user_of_item_groups]
    note = (
        "Columns: each system's value (by letter). The per-user distribution of "
        + ", ".join(per_user)
        + f" {'is' if len(per_user) == 1 else 'are'} under 'Distribution of per-user values'."
        if per_user
        else "Columns: each system's value (by letter)."
    )
    return (
        _grid(figures, "")
        + f"<table class='item-groups'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}"
        + f"</tbody></table><p class='note'>{escape(note)}</p>"
    )


def _groups(cmp: Comparison, figures: Sequence[_Figure]) -> str:
    """The section by user group: the charts, then one leaderboard per group."""
    assert cmp.by_group is not None
    parts = [_grid(figures, "")]
    for (g, v), sub in cmp.by_group.items():
        users = sub.results[sub.systems[0]].counts.get("users_evaluated", "?")
        parts.append(f"<h3>{escape(str(g))} = {escape(str(v))} ({users} users)</h3>")
        parts.append(_leaderboard(sub))
    parts.append(
        '<p class="note">Each group is its own family of comparisons: tests and corrections '
        "within a group, never across groups (receval.group_gap tests the gap between two "
        "groups).</p>"
    )
    return "\n".join(parts)


# -- tables -------------------------------------------------------------------------------


def _leaderboard(cmp: Comparison) -> str:
    head = "".join(f"<th>{escape(m)}</th>" for m in cmp.metrics)
    rows = []
    for s in cmp.systems:
        cells = "".join(_leaderboard_cell(cmp, m, s) for m in cmp.metrics)
        rows.append(
            f'<tr><td class="letter">{cmp.letters[s]}</td><td class="name">{escape(s)}</td>'
            f"{cells}</tr>"
        )
    notes = [cmp.footnote()]
    if cmp.has_intervals and cmp.aligned:
        notes.append(cmp.interval_note("in brackets under each mean"))
    aggregates = [m for m in cmp.metrics if not cmp.is_per_user(m)]
    if aggregates:
        notes.append(
            f"{', '.join(aggregates)}: one value per system over all lists "
            "(no per-user values: no interval, no test)."
        )
    notes.append("Best value of each metric in bold.")
    return (
        '<table class="leaderboard"><thead><tr><th></th><th class="name">system</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p class="note">{escape(" ".join(notes))}</p>'
    )


def _leaderboard_cell(cmp: Comparison, m: str, s: str) -> str:
    r = cmp.table.loc[(m, s)]
    cls = "best" if s in cmp.best(m) else "value"
    value = f'<span class="{cls}">{fmt_value(r["mean"])}</span>'
    wins = str(r["wins"])
    if wins:
        value += f'<sup class="wins">{escape(wins)}</sup>'
    if cmp.has_intervals and cmp.is_per_user(m):
        value += f'<span class="ci">[{fmt_value(r["ci_low"])}, {fmt_value(r["ci_high"])}]</span>'
    return f'<td data-metric="{escape(m)}" data-system="{escape(s)}">{value}</td>'


def _pairs(cmp: Comparison, unit: str = "users") -> str:
    if len(cmp.systems) < 2:
        return '<p class="note">One system: nothing to compare.</p>'
    if not cmp.aligned:
        return '<p class="note">No per-user metric: no test.</p>'
    ci = cmp.has_intervals
    conf = f"{cmp.settings['confidence']:.0%}"
    head = (
        '<tr><th class="name">comparison</th><th>Δ mean</th>'
        + (f"<th>{conf} CI of Δ</th>" if ci else "")
        + f"<th>statistic</th><th>p</th><th>p ({escape(cmp.settings['correction'])})</th>"
        "<th>Cohen's d</th><th class='name'>better</th></tr>"
    )
    out = []
    for m in cmp.aligned:
        rows = []
        for (a, b), r in cmp.compared_pairs(m).iterrows():
            sig = bool(r["significant"])
            winner = r["winner"] if r["winner"] is not None else ""
            interval = (
                f"<td>[{fmt_value(r['ci_low'])}, {fmt_value(r['ci_high'])}]</td>" if ci else ""
            )
            rows.append(
                f'<tr data-pair="{escape(m)}|{escape(a)}|{escape(b)}">'
                f'<td class="name">{escape(a)} − {escape(b)}</td>'
                f"<td>{float(r['diff']):+.4f}</td>{interval}"
                f"<td>{fmt_value(r['statistic'], 3)}</td><td>{fmt_p(r['p_value'])}</td>"
                f'<td class="{"sig" if sig else ""}">{fmt_p(r["p_adjusted"])}'
                f"{' *' if sig else ''}</td>"
                f"<td>{fmt_value(r['effect_size'], 3)}</td>"
                f'<td class="name">{escape(str(winner))}</td></tr>'
            )
        out.append(
            f"<h3>{escape(m)} <span class='meta'>({len(cmp.aligned[m])} {escape(unit)} "
            "compared)</span></h3>"
            f'<table class="pairs"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
        )
    notes = "* significant after correction. " + (cmp.interval_note() if ci else "")
    return "".join(out) + f'<p class="note">{escape(notes.strip())}</p>'


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def _dl(items: Mapping[str, Any]) -> str:
    return (
        '<dl class="params">'
        + "".join(f"<dt>{escape(str(k))}</dt><dd>{escape(str(v))}</dd>" for k, v in items.items())
        + "</dl>"
    )


def _by_system(
    title: str, cmp: Comparison, values: Mapping[str, Mapping[str, Any]], note: str = ""
) -> str:
    """A table: one row per key, one column per system."""
    keys = list(dict.fromkeys(k for f in values.values() for k in f))
    head = "".join(f"<th>{escape(s)}</th>" for s in cmp.systems)
    body = "".join(
        f'<tr><td class="name">{escape(str(k))}</td>'
        + "".join(f"<td>{escape(str(values[s].get(k, '')))}</td>" for s in cmp.systems)
        + "</tr>"
        for k in keys
    )
    return (
        f"<h3>{escape(title)}</h3>{note}<table class='counts'><thead><tr><th class='name'></th>"
        f"{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _parameters(cmp: Comparison) -> str:
    """The evaluation parameters: one list when every system shares them, else a table."""
    params = {s: _flat(cmp.results[s].parameters) for s in cmp.systems}
    first = params[cmp.systems[0]]
    if all(p == first for p in params.values()):
        return "<h3>Evaluation parameters and conventions</h3>" + _dl(first)
    return _by_system("Evaluation parameters and conventions (they differ)", cmp, params)


def _metric_definitions(specs: Sequence[MetricSpec]) -> str:
    defs = []
    for s in specs:
        d = s.definition
        direction = "higher is better" if d.higher_is_better else "lower is better"
        defs.append(
            f'<tr><td class="name"><code>{escape(str(s))}</code></td>'
            f'<td class="name">{escape(d.description)}</td>'
            f'<td class="name"><code>{escape(d.formula)}</code></td>'
            f'<td class="name">{direction}; undefined: {escape(d.undefined)}</td></tr>'
        )
    return (
        "<h3>Metrics</h3><table><thead><tr><th class='name'>metric</th>"
        "<th class='name'>what</th><th class='name'>formula</th><th class='name'>notes</th>"
        "</tr></thead><tbody>" + "".join(defs) + "</tbody></table>"
    )


def _missing(cmp: Comparison) -> str:
    miss = cmp.missing
    values = {s: {str(c): miss.loc[s, c] for c in miss.columns} for s in cmp.systems}
    note = (
        "<p class='note'>Per metric, users compared are those with a value in every run; "
        "each metric's row counts the users a run lacked.</p>"
    )
    return _by_system("Users left out of comparisons", cmp, values, note)


def _provenance(
    cmp: Comparison, specs: Sequence[MetricSpec], max_k: int | None, extra: Mapping[str, Any] | None
) -> str:
    parts = []
    if extra:
        parts += ["<h3>Data and protocol</h3>", _dl(extra)]
    settings = {k: v for k, v in cmp.settings.items() if k != "evaluate"}
    if max_k is not None:
        settings["curves up to K"] = max_k
    parts += ["<h3>Comparison</h3>", _dl(settings), _parameters(cmp), _metric_definitions(specs)]
    parts.append(_by_system("Counts", cmp, {s: _flat(cmp.results[s].counts) for s in cmp.systems}))
    parts.append(_missing(cmp))
    notes = [n for s in cmp.systems for n in cmp.results[s].notes]
    if notes:
        items = "".join(f"<li>{escape(n)}</li>" for n in dict.fromkeys(notes))
        parts.append(f"<h3>Notes</h3><ul>{items}</ul>")
    parts.append(f"<p class='meta'>receval version {escape(cmp.version)}</p>")
    return "".join(parts)


# -- the page -----------------------------------------------------------------------------


def _section(sid: str, title: str, *content: str) -> str:
    return f"<section id='{sid}'><h2>{escape(title)}</h2>{''.join(content)}</section>"


def _grid(figures: Sequence[_Figure], empty: str) -> str:
    if not figures:
        return f"<p class='note'>{escape(empty)}</p>"
    return "<div class='grid'>" + "".join(f.html for f in figures) + "</div>"


def _page(
    title: str,
    cmp: Comparison,
    figures: Mapping[str, list[_Figure]],
    provenance: str,
    counterfactual: Mapping[str, OffPolicyResult] | None = None,
    next_items: str | None = None,
) -> str:
    s0 = cmp.results[cmp.systems[0]].counts
    n = len(cmp.systems)
    sub = (
        f"{n} system{'s' if n != 1 else ''} · {s0.get('users_evaluated', '?')} users evaluated · "
        f"{escape(', '.join(cmp.metrics))} · receval {escape(__version__)}"
    )
    body = [
        f"<header><h1>{escape(title)}</h1><div class='meta'>{sub}</div></header>",
        _section("leaderboard", "Leaderboard", _leaderboard(cmp)),
        _section("comparisons", "Pairwise comparisons", _pairs(cmp)),
        _section("curves", "Metrics at every cut-off", _grid(figures["curves"], "")),
        _section(
            "distributions",
            "Distribution of per-user values",
            _grid(figures["distributions"], "No per-user metric."),
        ),
    ]
    if figures["bias"]:
        body.append(
            _section("popularity-bias", "Popularity bias and coverage", _grid(figures["bias"], ""))
        )
    if cmp.by_group:
        body.append(_section("user-groups", "By user group", _groups(cmp, figures["groups"])))
    if figures.get("item_groups"):
        body.append(
            _section("item-groups", "By item group", _item_groups(cmp, figures["item_groups"]))
        )
    if counterfactual:
        body.append(
            _section(
                "off-policy",
                "Counterfactual estimates",
                _counterfactual(counterfactual, figures.get("off_policy", [])),
            )
        )
    if next_items is not None:
        body.append(next_items)
    body.append(_section("provenance", "How these numbers were produced", provenance))
    return _document(title, body)


def _document(title: str, body: Sequence[str]) -> str:
    """The whole page around its sections."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta name='generator' content='receval {escape(__version__)}'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


# -- counterfactual (off-policy) estimates -------------------------------------------------

#: the name of a single OffPolicyResult given to report(off_policy=...)
_ONE_POLICY = "evaluation policy"


def _off_policy_results(given: Any) -> dict[str, OffPolicyResult]:
    """``report``'s ``off_policy``: None, one result, or name → result; checked."""
    if given is None:
        return {}
    if isinstance(given, OffPolicyResult):
        return {_ONE_POLICY: given}
    if isinstance(given, Mapping) and given:
        bad = {
            str(k): type(v).__name__ for k, v in given.items() if not isinstance(v, OffPolicyResult)
        }
        if not bad:
            return {str(k): v for k, v in given.items()}
        first = next(iter(bad.items()))
        raise ReceValError(
            f"off_policy must map names to OffPolicyResult (what receval.off_policy returns); "
            f"{first[0]!r} is a {first[1]}"
        )
    raise ReceValError(
        "off_policy must be an OffPolicyResult (what receval.off_policy returns) or a "
        f"non-empty mapping name → OffPolicyResult; got {type(given).__name__}"
    )


def weight_histogram(result: OffPolicyResult) -> pd.DataFrame:
    """The share of each estimator's weights per decade (rows: estimators
    whose weights are not all 1, i.e. not dm; columns: ``< 0``, ``0``, then
    the decades from the smallest weight's to the largest's), the data of the
    report's chart ``weights-<name>``.

    Example:
        >>> import pandas as pd
        >>> from receval.analysis.off_policy import off_policy
        >>> logs = pd.DataFrame({"context": [1, 2], "action": ["a", "b"],
        ...                      "reward": [1.0, 0.0], "propensity": [0.5, 0.05]})
        >>> policy = pd.DataFrame({"context": [1, 2], "action": ["a", "b"],
        ...                        "probability": [1.0, 1.0]})
        >>> h = weight_histogram(off_policy(logs, policy, ["ips"], n_resamples=0))
        >>> list(h.columns), h.loc["ips"].tolist()
        (['1–10', '10–100'], [0.5, 0.5])
    """
    rows: dict[str, dict[str, float]] = {}
    for e in result.estimates:
        w = e.weights
        if w is None or (w.min == 1.0 and w.max == 1.0):
            continue
        rows[e.estimator] = w.decades()
    labels: list[str] = []
    for d in rows.values():
        labels += [k for k in d if k not in labels]
    fixed = [k for k in ("< 0", "0") if k in labels]
    decades = sorted((k for k in labels if k not in fixed), key=lambda k: float(k.split("–")[0]))
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[*fixed, *decades])
    return frame.fillna(0.0)


def _weight_figures(results: Mapping[str, OffPolicyResult]) -> list[_Figure]:
    """One histogram of the weights per result: each estimator's share of rows per decade."""
    out = []
    for name, res in results.items():
        frame = weight_histogram(res)
        if frame.empty:
            continue
        chart = f"weights-{name}"
        out.append(
            _figure(
                chart,
                svg.bar_chart(
                    chart,
                    f"Importance weights: {name}",
                    list(frame.columns),
                    {e: frame.loc[e].tolist() for e in frame.index},
                    xlabel="weight (decade)",
                    ylabel="share of logged rows",
                ),
                "Share of the logged rows whose weight (the factor on the row's reward: "
                "π(a|x) / π₀(a|x), clipped for ips and dr, 0 where switch-dr uses the reward "
                "model; per slate estimator its own ratio) falls in each decade (10^j, 10^(j+1)]. "
                "Mass at large weights means a few rows carry the estimate.",
            )
        )
    return out


def _g(x: float, digits: int = 4) -> str:
    return "–" if x != x else f"{x:.{digits}g}"


def _counterfactual(results: Mapping[str, OffPolicyResult], figures: Sequence[_Figure]) -> str:
    """Per result: a table of estimates, intervals, ESS and weights; then the charts."""
    parts = []
    for name, res in results.items():
        level = f"{res.ci:.0%}"
        head = (
            "<tr><th class='name'>estimator</th><th>estimate</th>"
            f"<th>{level} interval</th><th>ESS</th><th>ESS / rows</th><th>max weight</th>"
            "<th>weight p50</th><th>p90</th><th>p99</th><th>share &gt; 10</th>"
            "<th class='name'>notes</th></tr>"
        )
        rows = []
        for e in res.estimates:
            w = e.weights
            interval = "–" if e.low != e.low else f"[{fmt_value(e.low)}, {fmt_value(e.high)}]"
            q = w.quantiles if w is not None else {}
            notes = ", ".join(f"{k} {v:g}" for k, v in e.notes.items())
            rows.append(
                f'<tr data-policy="{escape(name)}" data-estimator="{escape(e.estimator)}">'
                f"<td class='name'>{escape(e.estimator)}</td><td>{fmt_value(e.estimate)}</td>"
                f"<td>{interval}</td><td>{_g(e.ess, 6)}</td>"
                f"<td>{fmt_value(e.ess / e.rows if e.rows else float('nan'), 3)}</td>"
                f"<td>{_g(w.max) if w else '–'}</td>"
                + "".join(f"<td>{_g(q.get(p, float('nan')))}</td>" for p in (0.5, 0.9, 0.99))
                + f"<td>{fmt_value(w.above.get(10.0, float('nan')), 3) if w else '–'}</td>"
                f"<td class='name'>{escape(notes)}</td></tr>"
            )
        facts = ", ".join(f"{k} {v:g}" for k, v in res.notes.items())
        boot = (
            f"{level} percentile intervals of {res.n_resamples} Poisson-bootstrap resamples "
            f"over contexts (seed {res.seed})"
            if res.n_resamples
            else "no interval (n_resamples=0)"
        )
        parts.append(
            f"<h3>{escape(name)}</h3><table class='off-policy'><thead>{head}</thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            f"<p class='note'>{escape(boot)}. ESS: the effective sample size (Σv)²/Σv² of "
            "the weights v each estimator puts on the logged rewards (rows for dm). "
            "Weight quantiles: upper edges of histogram bins of width 10^(1/20) "
            f"(at most 12% above the exact quantile). Log: {escape(facts)}.</p>"
        )
    parts.append(_grid(figures, ""))
    parts.append(
        "<p class='note'>Definitions, assumptions and biases of each estimator: the "
        "off-policy page of receval's documentation.</p>"
    )
    return "".join(parts)


# -- next items (sequential evaluation): metric by position in session ---------------------

#: the name of a single NextItemResult given to report(next_items=...)
_ONE_MODEL = "model"

#: rows of a table of metric by position shown on the page (all are in Report.positions)
_MAX_POSITIONS = 100

#: compare's settings a next-item comparison takes from a comparison given to report
_TAKEN = ("test", "correction", "alpha", "n_resamples", "seed", "ci")

_TARGETS = {
    "next": "the next item of the session",
    "remaining": "the distinct items left in the session",
}


def _next_item_results(given: Any) -> dict[str, NextItemResult]:
    """``report``'s ``next_items``: None, one result, or name → result; checked."""
    if given is None:
        return {}
    if isinstance(given, NextItemResult):
        return {_ONE_MODEL: given}
    if isinstance(given, Mapping) and given:
        bad = {
            str(k): type(v).__name__ for k, v in given.items() if not isinstance(v, NextItemResult)
        }
        if not bad:
            return {str(k): v for k, v in given.items()}
        name, kind = next(iter(bad.items()))
        raise ReceValError(
            "next_items must map system names to NextItemResult (what "
            f"receval.evaluate_next_items returns); {name!r} is a {kind}"
        )
    raise ReceValError(
        "next_items must be a NextItemResult (what receval.evaluate_next_items returns) or a "
        f"non-empty mapping name → NextItemResult; got {type(given).__name__}"
    )


def _next_settings(settings: Mapping[str, Any], comparison: Comparison | None) -> dict[str, Any]:
    """The settings of the next-item comparison: those given to ``report``, or,
    with a ``comparison`` given, that comparison's own."""
    if comparison is not None:
        return {k: comparison.settings[k] for k in _TAKEN if k in comparison.settings}
    return {k: v for k, v in settings.items() if v is not None and k != "user_groups"}


def _check_protocol(results: Mapping[str, NextItemResult]) -> None:
    """The systems of the section share the protocol: target, steps, average."""
    first_name, first = next(iter(results.items()))
    for name, res in results.items():
        if res.by_position is None:
            raise ReceValError(f"next_items: {name!r} has no by_position table")
        for key in ("target", "steps", "average"):
            mine, theirs = res.parameters.get(key), first.parameters.get(key)
            if mine != theirs:
                raise ReceValError(
                    f"next_items: {name!r} was evaluated with {key}={mine!r} but "
                    f"{first_name!r} with {key}={theirs!r}: the systems compared must share "
                    "target, steps and average"
                )


def _next_item_metrics(
    results: Mapping[str, NextItemResult], metrics: Any
) -> tuple[list[str], list[str]]:
    """The metrics compared (every result's, or those asked) and, of them, the
    per-step ones (charted by position)."""
    first = next(iter(results.values()))
    names = list(dict.fromkeys(str(s) for s in first.metrics))
    common = [m for m in names if all(m in r.summary for r in results.values())]
    if metrics is not None:
        asked = list(dict.fromkeys(str(s) for s in parse_metrics(metrics)))
        missing = [m for m in asked if m not in common]
        if missing:
            raise ReceValError(
                f"report: {missing[0]} is not a metric of every next-item result "
                f"(they have {', '.join(common) or 'none in common'})"
            )
        common = asked
    assert first.by_position is not None
    per_step = [m for m in common if m in first.by_position.columns]
    if not per_step:
        raise ReceValError(
            "report: the next-item results share no per-step metric to draw by position "
            f"(found {', '.join(common) or 'none'})"
        )
    return common, per_step


def next_item_positions(
    results: Mapping[str, NextItemResult], metrics: Sequence[str]
) -> pd.DataFrame:
    """The data of the report's charts ``position-<metric>``: each system's
    ``by_position`` as one long table ``system, metric, step, sessions,
    value`` (``sessions``: how many sessions have step t; ``value``: the
    metric's mean over them), metric by metric.

    Example:
        >>> import receval
        >>> sessions = {"s1": [1, 2, 3], "s2": [4, 5]}
        >>> lists = {("s1", 1): [2, 9], ("s1", 2): [9, 3], ("s2", 1): [9, 8]}
        >>> res = receval.evaluate_next_items(lists, sessions, "rr@2")
        >>> next_item_positions({"m": res}, ["rr@2"]).values.tolist()
        [['m', 'rr@2', 1, 2, 0.5], ['m', 'rr@2', 2, 1, 0.5]]
    """
    frames = []
    for m in metrics:
        for s, res in results.items():
            bp = res.by_position
            assert bp is not None
            frames.append(
                pd.DataFrame(
                    {
                        "system": s,
                        "metric": m,
                        "step": bp.index.to_numpy().astype("int64"),
                        "sessions": bp["steps"].to_numpy().astype("int64"),
                        "value": bp[m].to_numpy(dtype=float),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def _next_items_parts(
    results: Mapping[str, NextItemResult],
    metrics: Any,
    settings: Mapping[str, Any],
) -> tuple[Comparison, pd.DataFrame, list[_Figure]]:
    """The next-item comparison (paired over the results' units), the long
    table of metric by position, and its charts."""
    _check_protocol(results)
    compared, per_step = _next_item_metrics(results, metrics)
    given = dict(settings)
    if given.get("baseline") is not None and given["baseline"] not in results:
        given.pop("baseline")  # the runs' baseline is not a next-item system
    # the options the results were evaluated with (compare checks every result against them)
    given["options"] = EvalOptions.from_dict(next(iter(results.values())).parameters)
    ncmp = compare(dict(results), None, compared, **{**_COMPARE_DEFAULTS, **given})
    positions = next_item_positions(results, per_step)
    target = str(next(iter(results.values())).parameters.get("target"))
    return ncmp, positions, _position_figures(positions, ncmp.systems, target)


def _position_figures(
    positions: pd.DataFrame, systems: Sequence[str], target: str
) -> list[_Figure]:
    """One line chart per metric: its mean at each step position, one line per system."""
    out = []
    for m in dict.fromkeys(positions["metric"]):
        sub = positions[positions["metric"] == m]
        series = {}
        for s in systems:
            mine = sub[sub["system"] == s]
            series[s] = (mine["step"].tolist(), mine["value"].tolist())
        chart = f"position-{m}"
        out.append(
            _figure(
                chart,
                svg.line_chart(
                    chart,
                    f"{m} by position in session",
                    series,
                    xlabel="step t (the list after the session's first t items)",
                    ylabel=m,
                    integer_x=True,
                ),
                f"{m} of the list given after the first t items of a session, against "
                f"{_TARGETS.get(target, target)}: at each t, the mean over the sessions that "
                "have a step t (more than t items; undefined values left out). One line per "
                "system.",
            )
        )
    return out


def _position_table(positions: pd.DataFrame, metric: str, cmp: Comparison) -> str:
    """Position, the sessions with that step, and each system's value."""
    sub = positions[positions["metric"] == metric]
    values = sub.pivot(index="step", columns="system", values="value")
    sessions = sub.pivot(index="step", columns="system", values="sessions")
    systems = cmp.systems
    one = all(sessions[s].equals(sessions[systems[0]]) for s in systems)
    count_cols = [systems[0]] if one else list(systems)
    head = "<th>step t</th>" + (
        "<th>sessions</th>"
        if one
        else "".join(f"<th>sessions · {escape(cmp.letters[s])}</th>" for s in systems)
    )
    head += "".join(f"<th>{escape(s)}</th>" for s in systems)
    rows = []
    for t in values.index[:_MAX_POSITIONS]:
        counts = "".join(f"<td>{int(sessions.loc[t, s])}</td>" for s in count_cols)
        cells = "".join(
            f'<td data-system="{escape(s)}">{fmt_value(values.loc[t, s])}</td>' for s in systems
        )
        rows.append(f'<tr data-step="{int(t)}"><td>{int(t)}</td>{counts}{cells}</tr>')
    more = ""
    if len(values) > _MAX_POSITIONS:
        more = (
            f"<p class='note'>Steps 1..{_MAX_POSITIONS} of {len(values)} shown; every step is "
            "in Report.positions.</p>"
        )
    return (
        f"<h3>{escape(metric)} by position</h3>"
        f"<table class='positions' data-metric='{escape(metric)}'><thead><tr>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>{more}"
    )


def _next_summary(results: Mapping[str, NextItemResult], cmp: Comparison) -> str:
    """Each system's summary (averaged as its ``average`` says) and its counts."""
    head = "".join(f"<th>{escape(s)}</th>" for s in cmp.systems)
    rows = "".join(
        f'<tr><td class="name">{escape(m)}</td>'
        + "".join(
            f'<td data-metric="{escape(m)}" data-system="{escape(s)}">'
            f"{fmt_value(results[s].summary[m])}</td>"
            for s in cmp.systems
        )
        + "</tr>"
        for m in cmp.metrics
    )
    counts = "".join(
        f"<li>{escape(s)}: {escape(results[s]._counts_line())}</li>" for s in cmp.systems
    )
    return (
        "<h3>Summary</h3><table class='next-summary'><thead><tr><th class='name'>metric</th>"
        f"{head}</tr></thead><tbody>{rows}</tbody></table><ul class='note'>{counts}</ul>"
    )


def _next_items_section(
    results: Mapping[str, NextItemResult],
    cmp: Comparison,
    positions: pd.DataFrame,
    figures: Sequence[_Figure],
    with_runs: bool,
) -> str:
    """The section "Next items: metric by position in session"."""
    p = next(iter(results.values())).parameters
    average = str(p.get("average"))
    unit = "users" if average == "users" else "sessions"
    target = str(p.get("target"))
    intro = (
        f"Each list is the one given after a prefix of a test session (steps: {p.get('steps')}), "
        f"judged against {_TARGETS.get(target, target)} (target: {target}); the summary "
        f"averages over {average}."
    )
    parts = [f"<p class='note'>{escape(intro)}</p>", _next_summary(results, cmp)]
    parts.append(_grid(figures, ""))
    parts += [_position_table(positions, m, cmp) for m in dict.fromkeys(positions["metric"])]
    parts.append(f"<h3>Paired comparison over {unit}</h3>")
    parts.append(_leaderboard(cmp))
    if len(cmp.systems) > 1:
        parts.append(_pairs(cmp, unit))
    per = (
        "each session's mean over its steps"
        if unit == "sessions"
        else ("each user's mean over the steps of their sessions")
    )
    note = (
        f"The paired units are the {unit} ({per}); the means of this comparison are means over "
        f"them{', not the summary above (a mean over steps)' if average == 'steps' else ''}. "
        "Steps are never the units of a test: a session's steps are not independent."
    )
    parts.append(f"<p class='note'>{escape(note)}</p>")
    if with_runs:  # else they are under "How these numbers were produced"
        parts.append(_parameters(cmp))
        parts.append(
            _by_system("Counts", cmp, {s: _flat(cmp.results[s].counts) for s in cmp.systems})
        )
    return _section("next-items", "Next items: metric by position in session", *parts)


def _next_items_beside(
    results: Mapping[str, NextItemResult],
    settings: Mapping[str, Any],
    comparison: Comparison | None,
    figures: dict[str, list[_Figure]],
    step: Any,
) -> tuple[Comparison | None, pd.DataFrame | None, str | None]:
    """With runs: the next-item comparison, the positions and the section
    (its charts added to ``figures``); None for each without next-item results.
    ``step``: the report's progress steps."""
    if not results:
        return None, None, None
    with step("next items: comparing the systems over their sessions"):
        ncmp, positions, nfigures = _next_items_parts(
            results, None, _next_settings(settings, comparison)
        )
    figures["next_items"] = nfigures
    return ncmp, positions, _next_items_section(results, ncmp, positions, nfigures, True)


def _next_items_report(
    results: Mapping[str, NextItemResult],
    truth: Any,
    metrics: Any,
    settings: Mapping[str, Any],
    given: tuple[Comparison | None, Any, EvalOptions | None, Mapping[str, Any]],
    page: Mapping[str, Any],
) -> Report:
    """``report`` of next-item results alone (no runs): the section, then how
    its numbers were produced. ``given``: report's ``comparison``,
    ``off_policy``, ``options`` and ``evaluate_kwargs``; ``page``: its
    ``out``, ``png_dir``, ``title`` and ``provenance``."""
    comparison, off_policy, options, evaluate_kwargs = given
    title = str(page["title"])
    if truth is not None:
        raise ReceValError(
            "report: with next_items and no runs, truth is not read (each step's truth is in "
            "its sessions): give truth=None"
        )
    if comparison is not None:
        raise ReceValError(
            "report: comparison= draws runs; with next_items and no runs give no comparison "
            "(the next-item results are compared over their sessions)"
        )
    others = sorted(k for k in evaluate_kwargs if k != "progress")
    if others or options is not None:
        given = ", ".join(others or ["options"])
        raise ReceValError(
            f"report: {given} apply to runs; with next_items and no runs give them to "
            "receval.evaluate_next_items"
        )
    counterfactual = _off_policy_results(off_policy)
    ncmp, positions, nfigures = _next_items_parts(results, metrics, _next_settings(settings, None))
    figures = {"off_policy": _weight_figures(counterfactual), "next_items": nfigures}
    specs = parse_metrics(ncmp.metrics)
    first = next(iter(results.values()))
    n = len(ncmp.systems)
    sub = (
        f"{n} system{'s' if n != 1 else ''} · {first.counts.get('sessions_evaluated', '?')} "
        f"sessions evaluated · {escape(', '.join(ncmp.metrics))} · receval {escape(__version__)}"
    )
    body = [f"<header><h1>{escape(title)}</h1><div class='meta'>{sub}</div></header>"]
    if counterfactual:
        body.append(
            _section(
                "off-policy",
                "Counterfactual estimates",
                _counterfactual(counterfactual, figures["off_policy"]),
            )
        )
    body.append(_next_items_section(results, ncmp, positions, nfigures, False))
    prov = _provenance(ncmp, specs, None, page["provenance"])
    body.append(_section("provenance", "How these numbers were produced", prov))
    rep = Report(
        html=_document(title, body),
        comparison=ncmp,
        curves=pd.DataFrame({"system": [], "metric": [], "k": [], "value": []}),
        popularity=None,
        coverage=None,
        charts=[f.chart for group in figures.values() for f in group],
        max_k=_max_k(specs, None),
        off_policy=counterfactual,
        next_items=dict(results),
        next_items_comparison=ncmp,
        positions=positions,
    )
    return _finished(rep, page["out"], page["png_dir"])
