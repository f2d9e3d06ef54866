"""Comparing systems on the same truth (SPEC §10): :func:`compare`.

Each run is evaluated once with :func:`receval.evaluate`; the per-user values
of each metric are aligned by user id over the users that every run has a
value for, and the statistics of :mod:`receval.analysis.stats` are applied to them.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval._version import __version__
from receval.analysis import stats
from receval.errors import ReceValError
from receval.evaluation.result import Result, _clean, latex_escape
from receval.metrics.spec import MetricSpec, parse_metrics

__all__ = ["Comparison", "compare", "letters_for"]

_SUPERSCRIPT = dict(
    zip(
        "abcdefghijklmnoprstuvwxyz",
        "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ",
        strict=True,
    )
)
_TEST_LABEL = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "randomization": "paired randomization test",
}
_CORRECTION_LABEL = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "bh": "Benjamini–Hochberg",
    "none": "no",
}


def letters_for(n: int) -> list[str]:
    """Letters naming ``n`` systems in order: a, b, …, z, aa, ab, …

    Example:
        >>> letters_for(3), letters_for(28)[-2:]
        (['a', 'b', 'c'], ['aa', 'ab'])
    """
    out: list[str] = []
    for i in range(n):
        s = ""
        j = i
        while True:
            s = chr(ord("a") + j % 26) + s
            j = j // 26 - 1
            if j < 0:
                break
        out.append(s)
    return out


def _superscript(text: str) -> str:
    if all(ch in _SUPERSCRIPT for ch in text):
        return "".join(_SUPERSCRIPT[ch] for ch in text)
    return "^" + text


def _fmt(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        if isinstance(value, float) and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return "–"
    return f"{value:.{digits}f}"


def _fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "–"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}"


@dataclass
class Comparison:
    """What :func:`compare` returns.

    Attributes:
        systems: the system names, in the order given.
        letters: system name → letter (a, b, c, … in the order given).
        metrics: the canonical metric names, in the order asked.
        table: one row per (metric, system), indexed by both: ``letter``,
            ``mean`` (over the users compared; for an aggregate metric its one
            value), ``ci_low``/``ci_high`` (bootstrap interval of the mean),
            ``users`` (users compared), ``wins`` (letters of the systems this
            one beats significantly, e.g. ``"ac"``), ``beats`` (their names),
            ``higher_is_better``.
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
            seed, baseline, evaluation options.
        results: system name → the :class:`~receval.Result` of its evaluation.
        aligned: metric → DataFrame (users compared × systems) of the per-user
            values the tests used.
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
    version: str = __version__

    # -- helpers ---------------------------------------------------------------

    def _kind(self, metric: str) -> str:
        return "aggregate" if metric not in self.aligned else "ranking"

    def _cell(self, metric: str, system: str, digits: int) -> tuple[str, str]:
        row = self.table.loc[(metric, system)]
        return _fmt(float(row["mean"]), digits), str(row["wins"])

    def _best(self, metric: str) -> set[str]:
        sub = self.table.loc[metric]
        values = sub["mean"].astype(float)
        if values.isna().all():
            return set()
        hib = bool(sub["higher_is_better"].iloc[0])
        best = values.max() if hib else values.min()
        return set(values.index[values == best])

    def footnote(self) -> str:
        """One sentence saying what the marks mean."""
        s = self.settings
        corr = _CORRECTION_LABEL[s["correction"]]
        scope = (
            f"against the baseline {s['baseline']}" if s["baseline"] is not None else "all pairs"
        )
        ci = (
            f"; intervals: {s['confidence']:.0%} bootstrap ({s['ci']}, "
            f"{s['n_resamples']} resamples, seed {s['seed']})"
            if s["ci"] != "none"
            else ""
        )
        return (
            f"Superscript letters name the systems a system beats significantly "
            f"({_TEST_LABEL[s['test']]}, {scope}, {corr} correction over "
            f"{s['comparisons']} comparisons, α = {s['alpha']}){ci}."
        )

    # -- renderings --------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The leaderboard: one row per system, one column per metric (means over
        the users compared)."""
        wide = self.table["mean"].unstack(level=0)
        return wide.reindex(index=self.systems, columns=self.metrics)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form: settings, systems, every metric's means, intervals,
        comparisons and marks, the users left out, each evaluation's counts."""
        metrics: dict[str, Any] = {}
        for m in self.metrics:
            sub = self.table.loc[m]
            entry: dict[str, Any] = {
                "kind": self._kind(m),
                "higher_is_better": bool(sub["higher_is_better"].iloc[0]),
                "users": None if self._kind(m) == "aggregate" else int(sub["users"].iloc[0]),
                "systems": {
                    name: {
                        "mean": float(sub.loc[name, "mean"]),
                        "ci": [float(sub.loc[name, "ci_low"]), float(sub.loc[name, "ci_high"])],
                        "wins": str(sub.loc[name, "wins"]),
                        "beats": list(sub.loc[name, "beats"]),
                    }
                    for name in self.systems
                },
                "comparisons": [],
            }
            if m in self.pairs.index.get_level_values(0):
                for (a, b), row in self.pairs.loc[m].iterrows():
                    entry["comparisons"].append(
                        {
                            "system": a,
                            "versus": b,
                            "diff": float(row["diff"]),
                            "ci": [float(row["ci_low"]), float(row["ci_high"])],
                            "statistic": float(row["statistic"]),
                            "p_value": float(row["p_value"]),
                            "p_adjusted": float(row["p_adjusted"]),
                            "effect_size": float(row["effect_size"]),
                            "significant": bool(row["significant"]),
                            "winner": row["winner"],
                        }
                    )
            metrics[m] = entry
        return _clean(
            {
                "systems": [{"name": s, "letter": self.letters[s]} for s in self.systems],
                "settings": self.settings,
                "metrics": metrics,
                "missing": {
                    s: {str(k): v for k, v in row.items()}
                    for s, row in self.missing.to_dict(orient="index").items()
                },
                "evaluations": {s: r.to_dict() for s, r in self.results.items()},
                "version": self.version,
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (NaN and infinities written as null)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    def to_markdown(self, digits: int = 4) -> str:
        """Markdown: the leaderboard with superscript marks (``<sup>``), then per
        metric the means with intervals and every comparison."""
        s = self.settings
        head = "| | system | " + " | ".join(self.metrics) + " |"
        lines = [head, "|---|---|" + "---:|" * len(self.metrics)]
        for name in self.systems:
            cells = []
            for m in self.metrics:
                value, wins = self._cell(m, name, digits)
                if name in self._best(m):
                    value = f"**{value}**"
                cells.append(value + (f"<sup>{wins}</sup>" if wins else ""))
            lines.append(f"| {self.letters[name]} | {name} | " + " | ".join(cells) + " |")
        lines += ["", self.footnote(), ""]
        conf = f"{s['confidence']:.0%}"
        corr = s["correction"]
        for m in self.metrics:
            sub = self.table.loc[m]
            hib = bool(sub["higher_is_better"].iloc[0])
            direction = "higher is better" if hib else "lower is better"
            if self._kind(m) == "aggregate":
                lines += [
                    f"### {m}",
                    "",
                    f"Aggregate metric ({direction}): no per-user values, no test.",
                    "",
                ]
                continue
            lines += [
                f"### {m}",
                "",
                f"{int(sub['users'].iloc[0])} users compared; {direction}.",
                "",
            ]
            lines += [f"| system | mean | {conf} CI |", "|---|---:|---|"]
            for name in self.systems:
                r = sub.loc[name]
                lines.append(
                    f"| {self.letters[name]} {name} | {_fmt(float(r['mean']), digits)} | "
                    f"[{_fmt(float(r['ci_low']), digits)}, {_fmt(float(r['ci_high']), digits)}] |"
                )
            if m in self.pairs.index.get_level_values(0):
                lines += [
                    "",
                    f"| comparison | Δ mean | {conf} CI of Δ | statistic | p | p ({corr}) | d |",
                    "|---|---:|---|---:|---:|---:|---:|",
                ]
                for (a, b), r in self.pairs.loc[m].iterrows():
                    star = " *" if r["significant"] else ""
                    lines.append(
                        f"| {a} − {b} | {float(r['diff']):+.{digits}f} | "
                        f"[{_fmt(float(r['ci_low']), digits)}, "
                        f"{_fmt(float(r['ci_high']), digits)}] | "
                        f"{_fmt(float(r['statistic']), 3)} | {_fmt_p(float(r['p_value']))} | "
                        f"{_fmt_p(float(r['p_adjusted']))}{star} | "
                        f"{_fmt(float(r['effect_size']), 3)} |"
                    )
            lines.append("")
        lines += self._missing_lines()
        return "\n".join(lines).rstrip("\n") + "\n"

    def _missing_lines(self) -> list[str]:
        out = []
        for name in self.systems:
            row = self.missing.loc[name]
            parts = []
            if row["no_recommendations"]:
                parts.append(
                    f"{int(row['no_recommendations'])} users without recommendations "
                    f"(counted as {row['counted_as']})"
                )
            for m in self.aligned:
                if row[m]:
                    parts.append(f"{int(row[m])} users without a value for {m} (left out)")
            if parts:
                out.append(f"- {name}: " + "; ".join(parts))
        return (["Users:", "", *out, ""]) if out else []

    def to_latex(self, digits: int = 4, details: bool = False) -> str:
        """A LaTeX ``tabular`` (booktabs) of the leaderboard: best value in bold,
        ``\\textsuperscript`` letters for significant wins; with ``details`` one
        more tabular per metric with every comparison."""
        esc = latex_escape
        cols = "ll" + "r" * len(self.metrics)
        lines = [
            rf"\begin{{tabular}}{{{cols}}}",
            r"\toprule",
            " & system & " + " & ".join(esc(m) for m in self.metrics) + r" \\",
            r"\midrule",
        ]
        for name in self.systems:
            cells = []
            for m in self.metrics:
                value, wins = self._cell(m, name, digits)
                if name in self._best(m):
                    value = rf"\textbf{{{value}}}"
                cells.append(value + (rf"\textsuperscript{{{wins}}}" if wins else ""))
            lines.append(f"({self.letters[name]}) & {esc(name)} & " + " & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", "% " + self.footnote()]
        if details:
            corr = self.settings["correction"]
            for m in self.metrics:
                if m not in self.pairs.index.get_level_values(0):
                    continue
                lines += [
                    "",
                    r"\begin{tabular}{lrrrrr}",
                    r"\toprule",
                    rf"{esc(m)} & $\Delta$ & CI of $\Delta$ & $p$ & $p$ ({esc(corr)}) & $d$ \\",
                    r"\midrule",
                ]
                for (a, b), r in self.pairs.loc[m].iterrows():
                    lines.append(
                        f"{esc(a)} -- {esc(b)} & {float(r['diff']):+.{digits}f} & "
                        f"[{_fmt(float(r['ci_low']), digits)}, "
                        f"{_fmt(float(r['ci_high']), digits)}] & "
                        f"{_fmt_p(float(r['p_value']))} & {_fmt_p(float(r['p_adjusted']))} & "
                        f"{_fmt(float(r['effect_size']), 3)} \\\\"
                    )
                lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        rows = [["", "system", *self.metrics]]
        for name in self.systems:
            cells = []
            for m in self.metrics:
                value, wins = self._cell(m, name, 4)
                cells.append(value + (_superscript(wins) if wins else ""))
            rows.append([self.letters[name], name, *cells])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = []
        for j, r in enumerate(rows):
            out.append(
                "  ".join(
                    c.ljust(w) if i < 2 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(r, widths, strict=True))
                ).rstrip()
            )
            if j == 0:
                out.append("-" * len(out[0]))
        out += ["", self.footnote()]
        out += [line for line in self._missing_lines() if line.startswith("- ")]
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"Comparison(systems={self.systems!r}, metrics={self.metrics!r})"


def _evaluate_runs(
    runs: Mapping[str, Any],
    truth: Any,
    specs: list[MetricSpec],
    evaluate_kwargs: Mapping[str, Any],
) -> dict[str, Result]:
    from receval.evaluation.api import evaluate

    names = [str(s) for s in specs]
    out: dict[str, Result] = {}
    for name, run in runs.items():
        if isinstance(run, Result):
            absent = [m for m in names if m not in run.summary]
            if absent:
                raise ReceValError(
                    f"the Result given for {name!r} has no {', '.join(absent)}; "
                    "evaluate it with these metrics or pass its recommendations"
                )
            out[name] = run
        else:
            out[name] = evaluate(run, truth, specs, **evaluate_kwargs)
    return out


def compare(
    runs: Mapping[str, Any],
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    baseline: str | None = None,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    ci: str = "bca",
    n_jobs: int = 1,
    **evaluate_kwargs: Any,
) -> Comparison:
    """Compare systems on the same truth with paired tests (SPEC §10).

    Args:
        runs: system name → its recommendations (anything
            :func:`receval.evaluate` accepts, or an already computed
            :class:`~receval.Result` holding the metrics). Systems are
            lettered a, b, c, … in this order.
        truth: the truth, as for :func:`receval.evaluate`.
        metrics: metric strings, as for :func:`receval.evaluate`.
        baseline: compare every system with this one; None: all pairs.
        test: ``t`` (paired t-test), ``wilcoxon`` (signed-rank) or
            ``randomization`` (alias ``permutation``; sign flips).
        correction: ``holm``, ``bonferroni``, ``bh`` (Benjamini–Hochberg) or
            ``none``, applied across all comparisons of all metrics.
        alpha: significance level; intervals have confidence ``1 - alpha``.
        n_resamples: resamples of the randomization test and the bootstrap.
        seed: the root seed. ``SeedSequence(seed).spawn`` gives one child per
            unit of work — per metric, first each system's mean, then each pair
            — in that fixed order, so results do not depend on ``n_jobs``.
        ci: bootstrap interval: ``bca``, ``percentile`` or ``none``.
        n_jobs: threads for the units of work (results are identical).
        **evaluate_kwargs: passed to :func:`receval.evaluate` (``threshold``,
            ``train``, ``catalog``, ``empty_truth``, ``missing_recs`` ...).

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
    if not isinstance(runs, Mapping) or len(runs) < 2:
        raise ReceValError("compare needs a mapping of at least two system names to runs")
    systems = [str(s) for s in runs]
    if len(set(systems)) != len(systems):
        raise ReceValError("system names must be distinct")
    runs = {str(k): v for k, v in runs.items()}
    if baseline is not None and str(baseline) not in systems:
        raise ReceValError(f"baseline {baseline!r} is not one of the systems: {', '.join(systems)}")
    baseline = None if baseline is None else str(baseline)
    test_name = stats.normalize_test(test)
    corr = stats.normalize_correction(correction)
    if not 0 < alpha < 1:
        raise ReceValError(f"alpha must be in (0, 1); got {alpha}")
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise ReceValError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    ci = str(ci).lower()
    if ci not in (*stats.CI_METHODS, "none"):
        raise ReceValError(f"ci must be one of bca, percentile, none; got {ci!r}")
    if n_jobs < 1:
        raise ReceValError(f"n_jobs must be at least 1; got {n_jobs}")

    specs = parse_metrics(metrics)
    names = list(dict.fromkeys(str(s) for s in specs))
    kinds = {str(s): s.definition.kind for s in specs}
    hib = {str(s): s.definition.higher_is_better for s in specs}
    results = _evaluate_runs(runs, truth, specs, evaluate_kwargs)
    letters = dict(zip(systems, letters_for(len(systems)), strict=True))

    if baseline is None:
        pair_list = list(itertools.combinations(systems, 2))
    else:
        pair_list = [(s, baseline) for s in systems if s != baseline]

    # Align the per-user values of each per-user metric.
    aligned: dict[str, pd.DataFrame] = {}
    missing: dict[str, dict[str, int]] = {s: {} for s in systems}
    for m in names:
        if kinds[m] == "aggregate":
            continue
        frame = pd.concat(
            {s: results[s].per_user[m] for s in systems}, axis=1, join="outer", sort=True
        )
        defined = frame.notna()
        somewhere = defined.any(axis=1)
        for s in systems:
            missing[s][m] = int((somewhere & ~defined[s]).sum())
        aligned[m] = frame[defined.all(axis=1)]

    # Units of work in a fixed order, one spawned seed each.
    units: list[tuple[str, str, tuple[str, ...]]] = []
    for m in aligned:
        units += [("mean", m, (s,)) for s in systems]
        units += [("pair", m, p) for p in pair_list]
    children = np.random.SeedSequence(seed).spawn(len(units))
    confidence = 1 - alpha

    def work(i: int) -> dict[str, float]:
        kind, m, who = units[i]
        frame = aligned[m]
        test_seed, ci_seed = children[i].spawn(2)
        if kind == "mean":
            x = frame[who[0]].to_numpy(dtype=np.float64)
            lo, hi = _interval(x, None, ci, alpha, n_resamples, ci_seed)
            return {"mean": float(x.mean()) if x.size else math.nan, "ci_low": lo, "ci_high": hi}
        a = frame[who[0]].to_numpy(dtype=np.float64)
        b = frame[who[1]].to_numpy(dtype=np.float64)
        res = stats.run_test(test_name, a, b, n_resamples=n_resamples, seed=test_seed)
        lo, hi = _interval(a, b, ci, alpha, n_resamples, ci_seed)
        return {
            "diff": float((a - b).mean()) if a.size else math.nan,
            "ci_low": lo,
            "ci_high": hi,
            "statistic": res.statistic,
            "p_value": res.pvalue,
            "effect_size": stats.cohens_d(a, b),
        }

    if n_jobs == 1 or len(units) < 2:
        outputs = [work(i) for i in range(len(units))]
    else:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            outputs = list(pool.map(work, range(len(units))))

    # Pairs, corrected across all comparisons.
    pair_rows = [
        {"metric": m, "system": who[0], "versus": who[1], **out}
        for (kind, m, who), out in zip(units, outputs, strict=True)
        if kind == "pair"
    ]
    pcols = [
        "diff",
        "ci_low",
        "ci_high",
        "statistic",
        "p_value",
        "p_adjusted",
        "effect_size",
        "significant",
        "winner",
    ]
    if pair_rows:
        pairs = pd.DataFrame(pair_rows).set_index(["metric", "system", "versus"])
        pairs["p_adjusted"] = stats.adjust_pvalues(pairs["p_value"].to_numpy(), corr)
        pairs["significant"] = pairs["p_adjusted"] < alpha
        winners: list[str | None] = []
        for (m, a, b), row in pairs.iterrows():
            diff = float(row["diff"])
            if not row["significant"] or diff == 0 or math.isnan(diff):
                winners.append(None)
            else:
                winners.append(a if (diff > 0) == hib[m] else b)
        pairs["winner"] = pd.Series(winners, index=pairs.index, dtype=object)
        pairs = pairs[pcols]
    else:
        pairs = pd.DataFrame(
            columns=pcols,
            index=pd.MultiIndex.from_tuples([], names=["metric", "system", "versus"]),
        )

    # The per-system table.
    means = {
        (m, who[0]): out
        for (kind, m, who), out in zip(units, outputs, strict=True)
        if kind == "mean"
    }
    beaten: dict[tuple[str, str], set[str]] = {}
    for (m, a, b), row in pairs.iterrows():
        w = row["winner"]
        if w is not None:
            beaten.setdefault((m, w), set()).add(b if w == a else a)
    rows = []
    for m in names:
        for s in systems:
            if kinds[m] == "aggregate":
                mean, lo, hi, users = results[s].summary[m], math.nan, math.nan, math.nan
            else:
                out = means[(m, s)]
                mean, lo, hi = out["mean"], out["ci_low"], out["ci_high"]
                users = len(aligned[m])
            rows.append(
                {
                    "metric": m,
                    "system": s,
                    "letter": letters[s],
                    "mean": float(mean),
                    "ci_low": lo,
                    "ci_high": hi,
                    "users": users,
                    "wins": "".join(letters[x] for x in systems if x in beaten.get((m, s), ())),
                    "beats": tuple(x for x in systems if x in beaten.get((m, s), ())),
                    "higher_is_better": hib[m],
                }
            )
    table = pd.DataFrame(rows).set_index(["metric", "system"])

    miss = pd.DataFrame(
        {
            s: {
                "no_recommendations": _no_recs(results[s]),
                "counted_as": _counted_as(results[s]),
                **missing[s],
            }
            for s in systems
        }
    ).T.reindex(systems)
    for col in ("no_recommendations", *aligned):
        miss[col] = miss[col].astype(int)

    settings = {
        "test": test_name,
        "correction": corr,
        "alpha": alpha,
        "confidence": confidence,
        "ci": ci,
        "n_resamples": int(n_resamples),
        "seed": seed,
        "baseline": baseline,
        "comparisons": int(pairs["p_value"].notna().sum()),
        "family": "all comparisons of all metrics",
        "evaluate": {
            k: v for k, v in evaluate_kwargs.items() if isinstance(v, int | float | str | bool)
        },
    }
    return Comparison(
        systems=systems,
        letters=letters,
        metrics=names,
        table=table,
        pairs=pairs,
        missing=miss,
        settings=settings,
        results=results,
        aligned=aligned,
    )


def _interval(
    a: np.ndarray,
    b: np.ndarray | None,
    method: str,
    alpha: float,
    n_resamples: int,
    seed: np.random.SeedSequence,
) -> tuple[float, float]:
    if method == "none":
        return (math.nan, math.nan)
    return stats.bootstrap_ci(
        a,
        b,
        alpha=alpha,
        method=method,
        n_resamples=n_resamples,
        seed=seed,  # type: ignore[arg-type]
    )


def _no_recs(res: Result) -> int:
    c = res.counts
    return int(
        c.get("users_scored_zero", {}).get("no_recommendations", 0)
        + c.get("users_skipped", {}).get("no_recommendations", 0)
    )


def _counted_as(res: Result) -> str:
    policy = res.parameters.get("missing_recs", "zero")
    return {"zero": "0", "skip": "left out", "error": "error"}.get(str(policy), str(policy))
