"""How a :class:`~receval.analysis.compare.Comparison` is shown: the console
text, Markdown, LaTeX, the CSV of :meth:`~receval.analysis.compare.Comparison.to_long`,
the JSON-ready dict and JSON, and the sentences under the tables (the footnote
of the marks, the note on the intervals).

``Comparison`` is data (the tables, the settings, the evaluations) and its
methods ``__str__``, ``to_markdown``, ``to_latex``, ``to_csv``, ``to_dict``,
``to_json``, ``footnote`` and ``interval_note`` call the functions here. Every
number is written by :mod:`receval.analysis.formatting`, so that each rendering
(and the HTML report) shows the same digits. This module reads a comparison
through :class:`Compared` and never imports :mod:`receval.analysis.compare`
(which imports it).

Example:
    >>> from receval.analysis.compare import compare
    >>> truth = {1: [1], 2: [2], 3: [1], 4: [2]}
    >>> c = compare({"x": {1: [1], 2: [2], 3: [1], 4: [3]},
    ...              "y": {1: [2], 2: [1], 3: [2], 4: [2]}}, truth, "p@1", n_resamples=100)
    >>> text(c).splitlines()[2].split()
    ['a', 'x', '0.7500']
    >>> footnote(c) == c.footnote() and markdown(c) == c.to_markdown()
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from receval.analysis.formatting import fmt_p, fmt_value, spreadsheet_csv, superscript
from receval.evaluation.result import Result, clean, latex_escape, markdown_escape
from receval.io.write import atomic_write_text

__all__ = [
    "Compared",
    "csv_text",
    "footnote",
    "interval_note",
    "json_ready",
    "json_text",
    "latex",
    "markdown",
    "text",
]

_TEST_LABEL = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "randomization": "paired randomization test",
    "tukey": "randomised Tukey HSD test",
}
_CORRECTION_LABEL = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "bh": "Benjamini–Hochberg",
    "none": "no",
}


class Compared(Protocol):
    """What the renderings read of a comparison: the fields and questions of
    :class:`~receval.analysis.compare.Comparison` (see there for what each holds)."""

    systems: list[str]
    letters: dict[str, str]
    metrics: list[str]
    table: pd.DataFrame
    missing: pd.DataFrame
    settings: dict[str, Any]
    results: dict[str, Result]
    aligned: dict[str, pd.DataFrame]
    omnibus: pd.DataFrame | None
    notes: list[str]
    version: str

    @property
    def by_group(self) -> Mapping[tuple[str, Any], Compared] | None: ...

    @property
    def has_intervals(self) -> bool: ...

    def is_per_user(self, metric: str) -> bool: ...

    def compared_pairs(self, metric: str) -> pd.DataFrame: ...

    def best(self, metric: str) -> set[str]: ...

    def to_long(self) -> pd.DataFrame: ...


# -- the sentences under the tables ------------------------------------------------------


def footnote(cmp: Compared) -> str:
    """One sentence saying what the superscript marks mean: the test, its
    scope (all pairs or against the baseline), the correction, the number of
    comparisons and α; or why there are no marks. Nothing about intervals:
    :func:`interval_note` describes those where they are shown."""
    s = cmp.settings
    if s["comparisons"] == 0:
        if len(cmp.systems) < 2:
            why = "one system, nothing to compare with"
        elif not cmp.aligned:
            why = "no per-user metric, so no paired test"
        else:
            why = "too few users compared for a test"
        return f"No significance marks: {why}."
    corr = _CORRECTION_LABEL[s["correction"]]
    scope = f"against the baseline {s['baseline']}" if s["baseline"] is not None else "all pairs"
    if s["test"] == "tukey":  # family-wise over each metric's pairs by construction
        return (
            f"Superscript letters name the systems a system beats significantly "
            f"({_TEST_LABEL['tukey']}, {scope}: p-values family-wise over all pairs of "
            f"systems of each metric, {s['comparisons']} comparisons, α = {s['alpha']})."
        )
    return (
        f"Superscript letters name the systems a system beats significantly "
        f"({_TEST_LABEL[s['test']]}, {scope}, {corr} correction over "
        f"{s['comparisons']} comparisons, α = {s['alpha']})."
    )


def interval_note(cmp: Compared, where: str = "") -> str:
    """What the intervals are, e.g. ``interval_note(cmp, "in brackets")`` →
    "Intervals in brackets: 95% bootstrap over users (bca, 10000 resamples,
    seed 0)." (confidence = 1 − α); empty when none were computed."""
    s = cmp.settings
    if not cmp.has_intervals:
        return ""
    kind = "Poisson bootstrap" if s.get("resampling") == "poisson" else "bootstrap"
    return (
        f"Intervals{' ' + where if where else ''}: {s['confidence']:.0%} {kind} over "
        f"users ({s['ci']}, {s['n_resamples']} resamples, seed {s['seed']})."
    )


# -- CSV and JSON --------------------------------------------------------------------------


def csv_text(cmp: Compared, path: str | Path | None = None) -> str:
    """``cmp.to_long()`` as CSV for spreadsheets (p-values in full precision,
    NaN as an empty field, no index, a text cell that a spreadsheet would run
    as a formula written with a leading ``'``); also written to ``path`` when
    given, whole or not at all (:func:`receval.io.write.atomic_write`: a
    symbolic link there is replaced, never followed; a failure is an
    :class:`~receval.errors.OutputError` naming ``path``)."""
    out = spreadsheet_csv(cmp.to_long(), index=False)
    if path is not None:  # whole or not at all; a link at path replaced, never followed
        atomic_write_text(path, out)
    return out


def json_ready(cmp: Compared) -> dict[str, Any]:
    """The JSON-ready form: settings, systems, every metric's means, intervals,
    comparisons and marks, the users left out, each evaluation's counts, the
    omnibus tests and the comparisons by user group when there are some."""
    return clean(
        {
            "systems": [{"name": s, "letter": cmp.letters[s]} for s in cmp.systems],
            "settings": cmp.settings,
            "metrics": {m: _metric_dict(cmp, m) for m in cmp.metrics},
            "missing": {
                s: {str(k): v for k, v in row.items()}
                for s, row in cmp.missing.to_dict(orient="index").items()
            },
            "evaluations": {s: r.to_dict() for s, r in cmp.results.items()},
            **(
                {"omnibus": cmp.omnibus.reset_index().to_dict(orient="records")}
                if cmp.omnibus is not None
                else {}
            ),
            **({"by_group": _groups_dict(cmp.by_group)} if cmp.by_group else {}),
            "notes": list(cmp.notes),
            "version": cmp.version,
        }
    )


def _groups_dict(by_group: Mapping[tuple[str, Any], Compared]) -> list[dict[str, Any]]:
    """``by_group`` of :func:`json_ready`: each group's metrics."""
    return [
        {
            "grouping": g,
            "group": v,
            "metrics": {m: _metric_dict(sub, m) for m in sub.metrics},
        }
        for (g, v), sub in by_group.items()
    ]


def _metric_dict(cmp: Compared, m: str) -> dict[str, Any]:
    """One metric of :func:`json_ready`: its kind, direction, users, each
    system's mean, interval and wins, and every comparison."""
    sub = cmp.table.loc[m]
    per_user = cmp.is_per_user(m)
    return {
        "kind": "ranking" if per_user else "aggregate",
        "higher_is_better": bool(sub["higher_is_better"].iloc[0]),
        "users": int(sub["users"].iloc[0]) if per_user else None,
        "systems": {
            name: {
                "mean": float(sub.loc[name, "mean"]),
                "ci": [float(sub.loc[name, "ci_low"]), float(sub.loc[name, "ci_high"])],
                "wins": str(sub.loc[name, "wins"]),
                "beats": list(sub.loc[name, "beats"]),
            }
            for name in cmp.systems
        },
        "comparisons": [
            {
                "system": a,
                "versus": b,
                "diff": float(r["diff"]),
                "ci": [float(r["ci_low"]), float(r["ci_high"])],
                "statistic": float(r["statistic"]),
                "p_value": float(r["p_value"]),
                "p_adjusted": float(r["p_adjusted"]),
                "effect_size": float(r["effect_size"]),
                "effect_ci": [float(r["effect_ci_low"]), float(r["effect_ci_high"])],
                "significant": bool(r["significant"]),
                "winner": r["winner"],
            }
            for (a, b), r in cmp.compared_pairs(m).iterrows()
        ],
    }


def json_text(cmp: Compared, indent: int | None = 2) -> str:
    """:func:`json_ready` as JSON text: NaN (undefined) written as null, an
    infinity (a t statistic or effect size of a constant non-zero difference)
    as the string ``"inf"`` or ``"-inf"`` (:func:`~receval.evaluation.result.clean`)."""
    return json.dumps(json_ready(cmp), indent=indent, allow_nan=False, ensure_ascii=False)


# -- the leaderboard's cells -----------------------------------------------------------------


def _cells(
    cmp: Compared,
    system: str,
    digits: int,
    mark: Callable[[str], str],
    bold: Callable[[str], str] | None,
) -> list[str]:
    """The leaderboard cells of one system: each metric's value (``bold``
    when best), then ``mark`` of the letters of the systems it beats."""
    cells = []
    for m in cmp.metrics:
        r = cmp.table.loc[(m, system)]
        value = fmt_value(r["mean"], digits)
        if bold is not None and system in cmp.best(m):
            value = bold(value)
        wins = str(r["wins"])
        cells.append(value + (mark(wins) if wins else ""))
    return cells


def _interval_text(row: pd.Series, digits: int) -> str:
    """``[low, high]`` of a row with ``ci_low`` and ``ci_high``."""
    return f"[{fmt_value(row['ci_low'], digits)}, {fmt_value(row['ci_high'], digits)}]"


def _missing_lines(cmp: Compared, esc: Callable[[str], str] = str) -> list[str]:
    """The users left out, one list item per system (``esc`` renders a name)."""
    out = []
    for name in cmp.systems:
        row = cmp.missing.loc[name]
        parts = []
        if row["no_recommendations"]:
            parts.append(
                f"{int(row['no_recommendations'])} users without recommendations "
                f"(counted as {row['counted_as']})"
            )
        for m in cmp.aligned:
            if row[m]:
                parts.append(f"{int(row[m])} users without a value for {m} (left out)")
        if parts:
            out.append(f"- {esc(name)}: " + "; ".join(parts))
    return (["Users:", "", *out, ""]) if out else []


# -- Markdown --------------------------------------------------------------------------------


def markdown(cmp: Compared, digits: int = 4) -> str:
    """Markdown: the leaderboard with superscript marks (``<sup>``) and their
    footnote, then per metric the means (with intervals when computed) and
    every comparison, then the users left out."""
    esc = markdown_escape
    lines = ["| | system | " + " | ".join(esc(m) for m in cmp.metrics) + " |"]
    lines.append("|---|---|" + "---:|" * len(cmp.metrics))
    for name in cmp.systems:
        cells = _cells(cmp, name, digits, lambda w: f"<sup>{w}</sup>", lambda v: f"**{v}**")
        lines.append(f"| {cmp.letters[name]} | {esc(name)} | " + " | ".join(cells) + " |")
    lines += ["", esc(footnote(cmp)), ""]
    if cmp.has_intervals and cmp.aligned:
        lines += [interval_note(cmp, "in the tables below"), ""]
    for m in cmp.metrics:
        lines += _markdown_metric(cmp, m, digits)
    lines += _missing_lines(cmp, esc)
    if cmp.notes:
        lines += ["Notes:", "", *(f"- {esc(n)}" for n in cmp.notes), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _markdown_metric(cmp: Compared, m: str, digits: int) -> list[str]:
    """One metric's section: its heading, then its means and its comparisons
    (an aggregate metric: one sentence)."""
    sub = cmp.table.loc[m]
    hib = bool(sub["higher_is_better"].iloc[0])
    direction = "higher is better" if hib else "lower is better"
    if not cmp.is_per_user(m):
        return [
            f"### {markdown_escape(m)}",
            "",
            f"Aggregate metric ({direction}): no per-user values, no test.",
            "",
        ]
    lines = [
        f"### {markdown_escape(m)}",
        "",
        f"{int(sub['users'].iloc[0])} users compared; {direction}.",
        "",
    ]
    lines += _markdown_means(cmp, sub, digits)
    lines += _markdown_pairs(cmp, cmp.compared_pairs(m), digits)
    return [*lines, ""]


def _markdown_means(cmp: Compared, sub: pd.DataFrame, digits: int) -> list[str]:
    """The table of one metric's means (``sub``: its rows of ``cmp.table``)."""
    ci = cmp.has_intervals
    conf = f"{cmp.settings['confidence']:.0%}"
    lines = [
        "| system | mean |" + (f" {conf} CI |" if ci else ""),
        "|---|---:|" + ("---|" if ci else ""),
    ]
    for name in cmp.systems:
        r = sub.loc[name]
        interval = f" {_interval_text(r, digits)} |" if ci else ""
        lines.append(
            f"| {cmp.letters[name]} {markdown_escape(name)} | "
            f"{fmt_value(r['mean'], digits)} |{interval}"
        )
    return lines


def _markdown_pairs(cmp: Compared, pairs: pd.DataFrame, digits: int) -> list[str]:
    """The table of one metric's comparisons (none: no lines)."""
    if not len(pairs):
        return []
    esc = markdown_escape
    ci = cmp.has_intervals
    conf = f"{cmp.settings['confidence']:.0%}"
    corr = cmp.settings["correction"]
    lines = [
        "",
        "| comparison | Δ mean |"
        + (f" {conf} CI of Δ |" if ci else "")
        + f" statistic | p | p ({corr}) | d |",
        "|---|---:|" + ("---|" if ci else "") + "---:|---:|---:|---:|",
    ]
    for (a, b), r in pairs.iterrows():
        star = " *" if r["significant"] else ""
        interval = f" {_interval_text(r, digits)} |" if ci else ""
        lines.append(
            f"| {esc(a)} − {esc(b)} | {float(r['diff']):+.{digits}f} |{interval} "
            f"{fmt_value(r['statistic'], 3)} | {fmt_p(r['p_value'])} | "
            f"{fmt_p(r['p_adjusted'])}{star} | {fmt_value(r['effect_size'], 3)} |"
        )
    return lines


# -- LaTeX -------------------------------------------------------------------------------------


def latex(cmp: Compared, digits: int = 4, details: bool = False) -> str:
    """A LaTeX ``tabular`` (booktabs) of the leaderboard: best value in bold,
    ``\\textsuperscript`` letters for significant wins, the footnote as a
    comment; with ``details`` one more tabular per per-user metric with
    every comparison."""
    esc = latex_escape
    lines = [
        rf"\begin{{tabular}}{{ll{'r' * len(cmp.metrics)}}}",
        r"\toprule",
        " & system & " + " & ".join(esc(m) for m in cmp.metrics) + r" \\",
        r"\midrule",
    ]
    for name in cmp.systems:
        cells = _cells(
            cmp, name, digits, lambda w: rf"\textsuperscript{{{w}}}", lambda v: rf"\textbf{{{v}}}"
        )
        lines.append(f"({cmp.letters[name]}) & {esc(name)} & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", "% " + footnote(cmp)]
    if details:
        for m in cmp.metrics:
            lines += _latex_pairs(cmp, m, digits)
    lines += [f"% note: {_comment(n)}" for n in cmp.notes]
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    """``text`` on one line of a LaTeX comment (a line break would end it)."""
    return " ".join(text.split())


def _latex_pairs(cmp: Compared, m: str, digits: int) -> list[str]:
    """The tabular of one metric's comparisons (none: no lines)."""
    pairs = cmp.compared_pairs(m)
    if not len(pairs):
        return []
    esc = latex_escape
    ci = cmp.has_intervals
    corr = cmp.settings["correction"]
    lines = [
        "",
        rf"\begin{{tabular}}{{lr{'r' if ci else ''}rrr}}",
        r"\toprule",
        rf"{esc(m)} & $\Delta$ & "
        + (r"CI of $\Delta$ & " if ci else "")
        + rf"$p$ & $p$ ({esc(corr)}) & $d$ \\",
        r"\midrule",
    ]
    for (a, b), r in pairs.iterrows():
        lines.append(
            f"{esc(a)} -- {esc(b)} & {float(r['diff']):+.{digits}f} & "
            + (f"{_interval_text(r, digits)} & " if ci else "")
            + f"{fmt_p(r['p_value'])} & {fmt_p(r['p_adjusted'])} & "
            f"{fmt_value(r['effect_size'], 3)} \\\\"
        )
    lines += [r"\bottomrule", r"\end{tabular}"]
    if ci:
        lines.append("% " + interval_note(cmp))
    return lines


# -- console text ------------------------------------------------------------------------------


def text(cmp: Compared, notes: bool = True) -> str:
    """The console text (``str(cmp)``): the leaderboard with superscript
    letters, its footnote, the users left out, then one leaderboard per user
    group (each compared alone), then ``note: ...`` lines (``notes``; the
    command line prints them on stderr instead)."""
    out = _table_lines(cmp)
    out += ["", footnote(cmp)]
    out += [line for line in _missing_lines(cmp) if line.startswith("- ")]
    for (g, v), sub in (cmp.by_group or {}).items():
        users = sub.results[sub.systems[0]].counts.get("users_evaluated", "?")
        out += ["", f"{g} = {v} ({users} users):", *_table_lines(sub)]
    if cmp.by_group:
        out += ["", "Each group is compared alone: its own tests and correction."]
    if notes:
        out += [f"note: {n}" for n in cmp.notes]
    return "\n".join(out)


def _table_lines(cmp: Compared) -> list[str]:
    """The leaderboard in aligned columns (names left, values right), a rule
    under the header."""
    rows = [["", "system", *cmp.metrics]]
    for name in cmp.systems:
        cells = _cells(cmp, name, 4, superscript, None)
        rows.append([cmp.letters[name], name, *cells])
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
    return out
