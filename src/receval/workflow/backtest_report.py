"""The HTML page of one or more backtests: :func:`backtest_report`.

Self-contained as the main report (:mod:`receval.analysis.report`): inline CSS
and SVG, no JavaScript, no network. It shows each metric over time (one line
per system, a point per fold), each system's per-fold table (windows, sizes,
values), the means across folds with their t intervals and, for two systems
or more, the comparison paired by (fold, user) of :func:`compare_backtests`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from receval._version import __version__
from receval.analysis.formatting import fmt_p, fmt_value
from receval.analysis.report import svg
from receval.errors import ReceValError
from receval.io.write import atomic_write_text, make_folder
from receval.workflow.backtest import BacktestResult, compare_backtests

__all__ = ["backtest_report"]

_CSS = """
body { margin: 0; background: #f6f7f9; color: #1d1f23;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1340px; margin: 0 auto; padding: 24px 28px 48px; }
header { border-bottom: 3px solid #0072B2; margin-bottom: 18px; padding-bottom: 8px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 30px 0 10px; border-bottom: 1px solid #d6d9de; }
.meta, .note { color: #555; font-size: 13px; }
table { border-collapse: collapse; background: #fff; margin: 6px 0 10px; }
th, td { padding: 5px 10px; border-bottom: 1px solid #e5e7ea; text-align: right; }
th { background: #eef1f5; font-weight: 600; }
td.name, th.name { text-align: left; }
.ci { display: block; color: #6a6f76; font-size: 11.5px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
figure { margin: 0; background: #fff; padding: 8px; border-radius: 6px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 12.5px; padding: 4px 6px 0; }
"""


def backtest_report(
    backtests: BacktestResult | Mapping[str, BacktestResult],
    *,
    out: str | Path | None = None,
    title: str = "receval backtest",
    comparison: Any = None,
    **compare_options: Any,
) -> str:
    """A self-contained HTML page of backtests: the metric over time, per fold and across folds.

    Args:
        backtests: one :class:`BacktestResult`, or system name → its backtest
            (all on the same folds when there are two or more).
        out: also write the page there (UTF-8, whole or not at all).
        title: the page's title.
        comparison: a :func:`compare_backtests` result of these backtests to
            draw (two systems or more); None: computed here with
            ``compare_options`` (``n_resamples``, ``test``, ``seed``, ...).

    Returns:
        The HTML text. Each chart has ``data-chart="over-time-<metric>"``.

    Example:
        >>> import pandas as pd
        >>> from receval.workflow.backtest import backtest
        >>> log = pd.DataFrame({"user": [1, 2, 1, 2], "item": [1, 2, 2, 1],
        ...                     "timestamp": [0, 0, 1, 1]})
        >>> bt = backtest(log, {"test_length": 1}, lambda tr, us, f: {u: [1] for u in us}, "p@1")
        >>> page = backtest_report(bt)
        >>> page.startswith("<!DOCTYPE html>"), 'data-chart="over-time-precision@1"' in page
        (True, True)
    """
    runs = {"model": backtests} if isinstance(backtests, BacktestResult) else dict(backtests)
    if not runs or not all(isinstance(b, BacktestResult) for b in runs.values()):
        raise ReceValError(
            "backtest_report needs a BacktestResult or a mapping of names to BacktestResults"
        )
    first = next(iter(runs.values()))
    metrics = first.metrics
    cmp = comparison
    if cmp is None and len(runs) > 1:
        cmp = compare_backtests(runs, **compare_options)
    body = [
        f"<header><h1>{escape(title)}</h1><div class='meta'>{len(runs)} system"
        f"{'s' if len(runs) != 1 else ''} · {len(first)} folds · "
        f"{escape(', '.join(metrics))} · receval {escape(__version__)}</div></header>",
        _section("over-time", "The metrics over time", _charts(runs, metrics)),
        _section("across-folds", "Across folds", _across(runs, metrics, first.confidence)),
    ]
    if cmp is not None:
        body.append(
            _section(
                "paired",
                "Paired by fold and user",
                "<p class='note'>Each unit is a (fold, user); means over those units.</p>",
                _compared(cmp),
            )
        )
    for name, bt in runs.items():
        body.append(_section(f"folds-{escape(name)}", f"Per fold: {name}", _fold_table(bt)))
    html = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta name='generator' content='receval {escape(__version__)}'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )
    if out is not None:
        path = Path(out)
        make_folder(path.parent)
        atomic_write_text(path, html)
    return html


def _section(sid: str, title: str, *content: str) -> str:
    return f"<section id='{sid}'><h2>{escape(title)}</h2>{''.join(content)}</section>"


def _charts(runs: Mapping[str, BacktestResult], metrics: list[str]) -> str:
    figures = []
    for m in metrics:
        series = {}
        for name, bt in runs.items():
            frame = bt.to_frame()
            series[name] = (frame.index.tolist(), frame[m].tolist())
        chart = svg.line_chart(
            f"over-time-{m}",
            m,
            series,
            xlabel="fold (oldest test window first)",
            ylabel=m,
            integer_x=True,
        )
        caption = f"{m} of each fold, evaluated on its test window."
        figures.append(f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>")
    return "<div class='grid'>" + "".join(figures) + "</div>"


def _across(runs: Mapping[str, BacktestResult], metrics: list[str], confidence: float) -> str:
    head = "".join(f"<th>{escape(m)}</th>" for m in metrics)
    rows = []
    for name, bt in runs.items():
        cells = []
        for m in metrics:
            iv = bt.intervals.loc[m]
            ci = ""
            if math.isfinite(float(iv["ci_low"])):
                lo, hi = fmt_value(iv["ci_low"]), fmt_value(iv["ci_high"])
                ci = f"<span class='ci'>[{lo}, {hi}]</span>"
            cells.append(f"<td>{fmt_value(iv['mean'])}{ci}</td>")
        rows.append(f"<tr><td class='name'>{escape(name)}</td>{''.join(cells)}</tr>")
    note = (
        f"<p class='note'>The mean of the fold values (each fold weighs the same) and its "
        f"{confidence:.0%} Student t interval over the folds.</p>"
    )
    table = f"<table><tr><th class='name'>system</th>{head}</tr>{''.join(rows)}</table>"
    return table + note


def _compared(cmp: Any) -> str:
    """The paired comparison: each system's mean over the (fold, user) units,
    then each pair's difference, interval, adjusted p-value and winner."""
    head = "".join(f"<th>{escape(m)}</th>" for m in cmp.metrics)
    rows = []
    for s in cmp.systems:
        cells = []
        for m in cmp.metrics:
            r = cmp.table.loc[(m, s)]
            wins = f" <sup>{escape(str(r['wins']))}</sup>" if r["wins"] else ""
            cells.append(f"<td>{fmt_value(r['mean'])}{wins}</td>")
        name = f"{escape(cmp.letters[s])} {escape(s)}"
        rows.append(f"<tr><td class='name'>{name}</td>{''.join(cells)}</tr>")
    board = f"<table><tr><th class='name'>system</th>{head}</tr>{''.join(rows)}</table>"
    pairs = []
    for (m, a, b), r in cmp.pairs.iterrows():
        ci = f"[{fmt_value(r['ci_low'])}, {fmt_value(r['ci_high'])}]"
        cells = [m, f"{a} − {b}", fmt_value(r["diff"]), ci, fmt_p(r["p_adjusted"])]
        cells.append("" if r["winner"] is None else str(r["winner"]))
        pairs.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    names = ["metric", "pair", "difference", "interval", "p (adjusted)", "better"]
    pair_table = (
        "<table><tr>"
        + "".join(f"<th>{n}</th>" for n in names)
        + "</tr>"
        + "".join(pairs)
        + "</table>"
    )
    note = f"<p class='note'>{escape(cmp.footnote())}</p>"
    return board + note + pair_table


def _fold_table(bt: BacktestResult) -> str:
    frame = bt.to_frame()
    cols = ["train", "test", "train rows", "test rows", "test users", *bt.metrics]
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    rows = []
    for f, r in frame.iterrows():
        train = f"[{_when(r['train_from'])}, {_when(r['train_to'])})"
        test = f"[{_when(r['test_from'])}, {_when(r['test_to'])})"
        cells = [train, test, str(int(r["train_rows"])), str(int(r["test_rows"]))]
        cells += [str(int(r["test_users"])), *(fmt_value(r[m]) for m in bt.metrics)]
        rows.append(
            f"<tr><td class='name'>{f}</td>" + "".join(f"<td>{escape(c)}</td>" for c in cells)
        )
    t = bt.timing
    timing = (
        f"<p class='note'>Time: the model {t['model_total']:.3f} s, receval "
        f"{t['receval_total']:.3f} s (split {t['split']:.3f} s, evaluations "
        f"{sum(t['evaluate']):.3f} s).</p>"
    )
    notes = "".join(f"<p class='note'>{escape(n)}</p>" for n in bt.notes)
    return f"<table><tr><th class='name'>fold</th>{head}</tr>{''.join(rows)}</table>{timing}{notes}"


def _when(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "…"
    return str(value)
