"""One self-contained HTML report: :func:`report`.

The page needs no network and no JavaScript: CSS is inline and every chart is
an inline SVG drawn in Python (:mod:`.svg`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd

from receval._version import __version__
from receval.analysis.compare import Comparison, compare
from receval.analysis.report import svg
from receval.analysis.report.data import curve_specs, curves_frame, popularity_deciles, top_k_items
from receval.errors import ReceValError
from receval.evaluation.result import Result
from receval.metrics.spec import MetricSpec, parse_metrics

__all__ = ["Report", "report"]

_MAX_K = 1000

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
        comparison: the :class:`~receval.analysis.compare.Comparison` behind the leaderboard.
        curves: long table ``system, metric, k, value`` of the metric-vs-k curves.
        popularity: share of recommendation slots per popularity decile (rows:
            systems and ``training data``), or None without training data.
        coverage: system → catalog coverage at K, or None without a catalog.
        charts: the ``data-chart`` ids of every chart in the page.
        images: the PNG files written (``png_dir``).
        path: where the HTML was written (``out``), or None.
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

    def save(self, path: str | Path) -> Path:
        """Write the page (UTF-8) and return its path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.html, encoding="utf-8")
        self.path = p
        return p

    def __str__(self) -> str:
        where = f" written to {self.path}" if self.path is not None else ""
        return (
            f"receval report of {len(self.comparison.systems)} systems, "
            f"{len(self.charts)} charts{where}"
        )

    def __repr__(self) -> str:
        return (
            f"Report(systems={self.comparison.systems!r}, charts={len(self.charts)}, "
            f"path={self.path!r})"
        )


def _num(v: Any, digits: int = 4) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return escape(str(v))
    if not math.isfinite(f):
        return "–"
    return f"{f:.{digits}f}"


def _p(v: float) -> str:
    if not math.isfinite(v):
        return "–"
    return f"{v:.1e}" if v < 1e-4 else f"{v:.4f}"


def _leaderboard(cmp: Comparison) -> str:
    head = "".join(f"<th>{escape(m)}</th>" for m in cmp.metrics)
    rows = []
    for s in cmp.systems:
        cells = []
        for m in cmp.metrics:
            r = cmp.table.loc[(m, s)]
            best = s in cmp._best(m)
            value = f'<span class="{"best" if best else "value"}">{_num(r["mean"])}</span>'
            wins = str(r["wins"])
            if wins:
                value += f'<sup class="wins">{escape(wins)}</sup>'
            if math.isfinite(float(r["ci_low"])):
                value += f'<span class="ci">[{_num(r["ci_low"])}, {_num(r["ci_high"])}]</span>'
            cells.append(f"<td>{value}</td>")
        rows.append(
            f'<tr><td class="letter">{cmp.letters[s]}</td><td class="name">{escape(s)}</td>'
            + "".join(cells)
            + "</tr>"
        )
    return (
        '<table class="leaderboard"><thead><tr><th></th><th class="name">system</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p class="note">{escape(cmp.footnote())} Best value of each metric in bold; '
        "intervals in brackets.</p>"
    )


def _pairs(cmp: Comparison) -> str:
    out = []
    conf = f"{cmp.settings['confidence']:.0%}"
    corr = cmp.settings["correction"]
    for m in cmp.metrics:
        if m not in cmp.pairs.index.get_level_values(0):
            continue
        users = int(cmp.table.loc[(m, cmp.systems[0]), "users"])
        rows = []
        for (a, b), r in cmp.pairs.loc[m].iterrows():
            sig = bool(r["significant"])
            winner = r["winner"] if r["winner"] is not None else ""
            rows.append(
                f'<tr><td class="name">{escape(a)} − {escape(b)}</td>'
                f"<td>{float(r['diff']):+.4f}</td>"
                f"<td>[{_num(r['ci_low'])}, {_num(r['ci_high'])}]</td>"
                f"<td>{_num(r['statistic'], 3)}</td><td>{_p(float(r['p_value']))}</td>"
                f'<td class="{"sig" if sig else ""}">{_p(float(r["p_adjusted"]))}'
                f"{' *' if sig else ''}</td>"
                f"<td>{_num(r['effect_size'], 3)}</td>"
                f'<td class="name">{escape(str(winner))}</td></tr>'
            )
        out.append(
            f"<h3>{escape(m)} <span class='meta'>({users} users compared)</span></h3>"
            '<table class="pairs"><thead><tr><th class="name">comparison</th><th>Δ mean</th>'
            f"<th>{conf} CI of Δ</th><th>statistic</th><th>p</th><th>p ({escape(corr)})</th>"
            "<th>Cohen's d</th><th class='name'>better</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
        )
    return "".join(out) or '<p class="note">No per-user metric: no test.</p>'


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"


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


def _provenance(cmp: Comparison, specs: list[MetricSpec], max_k: int) -> str:
    first = cmp.results[cmp.systems[0]]
    settings = {k: v for k, v in cmp.settings.items() if k != "evaluate"}
    settings["curves up to K"] = max_k
    parts = ["<h3>Comparison</h3>", _dl(settings)]
    parts += ["<h3>Evaluation parameters and conventions</h3>", _dl(first.parameters)]
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
    parts.append(
        "<h3>Metrics</h3><table><thead><tr><th class='name'>metric</th>"
        "<th class='name'>what</th><th class='name'>formula</th><th class='name'>notes</th>"
        "</tr></thead><tbody>" + "".join(defs) + "</tbody></table>"
    )
    flat = {s: _flat(cmp.results[s].counts) for s in cmp.systems}
    keys = list(dict.fromkeys(k for f in flat.values() for k in f))
    head = "".join(f"<th>{escape(s)}</th>" for s in cmp.systems)
    body = "".join(
        f'<tr><td class="name">{escape(k)}</td>'
        + "".join(f"<td>{escape(str(flat[s].get(k, '')))}</td>" for s in cmp.systems)
        + "</tr>"
        for k in keys
    )
    parts.append(
        "<h3>Counts</h3><table class='counts'><thead><tr><th class='name'>count</th>"
        f"{head}</tr></thead><tbody>{body}</tbody></table>"
    )
    miss = cmp.missing
    mhead = "".join(f"<th>{escape(str(c))}</th>" for c in miss.columns)
    mbody = "".join(
        f'<tr><td class="name">{escape(s)}</td>'
        + "".join(f"<td>{escape(str(v))}</td>" for v in miss.loc[s])
        + "</tr>"
        for s in cmp.systems
    )
    parts.append(
        "<h3>Users left out of comparisons</h3><p class='note'>Per metric, users compared are "
        "those with a value in every run; each column counts the users a run lacked.</p>"
        f"<table><thead><tr><th class='name'>system</th>{mhead}</tr></thead>"
        f"<tbody>{mbody}</tbody></table>"
    )
    notes = [n for s in cmp.systems for n in cmp.results[s].notes]
    if notes:
        parts.append(
            "<h3>Notes</h3><ul>"
            + "".join(f"<li>{escape(n)}</li>" for n in dict.fromkeys(notes))
            + "</ul>"
        )
    parts.append(f"<p class='meta'>receval version {escape(cmp.version)}</p>")
    return "".join(parts)


def report(
    runs: Mapping[str, Any],
    truth: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    out: str | Path | None = None,
    png_dir: str | Path | None = None,
    max_k: int | None = None,
    title: str = "receval report",
    baseline: str | None = None,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    ci: str = "bca",
    n_jobs: int = 1,
    **evaluate_kwargs: Any,
) -> Report:
    """A self-contained HTML report comparing systems (and PNG images on request).

    The page holds the leaderboard with significance marks (:func:`receval.analysis.compare`),
    every pairwise comparison, metric-vs-k curves of each per-user metric asked
    (each system is evaluated once more with ``metric@1-K``), precision–recall
    curves (``precision@k`` against ``recall@k``, k = 1..K), the distribution
    of per-user values (box plots), and — with ``train=`` — popularity bias
    (share of top-K slots per item popularity decile) and catalog coverage;
    then the parameters, conventions, counts and version that produced it.

    Args:
        runs: system name → recommendations (anything :func:`receval.evaluate`
            accepts; not precomputed results, the curves need the lists).
        truth: the truth, as for :func:`receval.evaluate`.
        metrics: the leaderboard's metrics.
        out: write the HTML there (UTF-8).
        png_dir: also write one PNG per chart there (matplotlib, Agg backend).
        max_k: K of the curves; default the largest cut-off among ``metrics``
            (10 when none has one).
        title: the page's title.
        baseline, test, correction, alpha, n_resamples, seed, ci, n_jobs: as
            for :func:`receval.analysis.compare`.
        **evaluate_kwargs: passed to :func:`receval.evaluate` (``threshold``,
            ``train``, ``catalog``, column names, policies ...).

    Returns:
        A :class:`Report` (``.html``, the data behind the charts, the PNG paths).

    Example:
        >>> truth = {1: [1, 2], 2: [3], 3: [1]}
        >>> runs = {"a": {1: [1, 3], 2: [3, 1], 3: [2, 1]}, "b": {1: [3, 1], 2: [1, 2], 3: [1, 2]}}
        >>> rep = report(runs, truth, "ndcg@2", n_resamples=200)
        >>> rep.html.startswith("<!DOCTYPE html>"), rep.charts
        (True, ['curve-ndcg', 'curve-precision', 'curve-recall', 'pr-curve', 'dist-ndcg@2'])
    """
    for name, run in runs.items():
        if isinstance(run, Result):
            raise ReceValError(
                f"report needs the recommendations of {name!r}, not an evaluated Result "
                "(the curves and popularity charts read the lists)"
            )
    specs = parse_metrics(metrics)
    if max_k is None:
        ks = [s.k for s in specs if s.k is not None]
        max_k = max(ks) if ks else 10
    if not isinstance(max_k, int) or not 1 <= max_k <= _MAX_K:
        raise ReceValError(f"max_k must be an integer in [1, {_MAX_K}]; got {max_k!r}")
    cmp = compare(
        runs,
        truth,
        specs,
        baseline=baseline,
        test=test,
        correction=correction,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        ci=ci,
        n_jobs=n_jobs,
        **evaluate_kwargs,
    )
    from receval.evaluation.api import evaluate

    train = evaluate_kwargs.get("train")
    catalog = evaluate_kwargs.get("catalog")
    with_catalog = train is not None or catalog is not None
    bases, cspecs = curve_specs(specs, max_k, with_catalog)
    summaries = {
        s: evaluate(runs[s], truth, cspecs, **evaluate_kwargs).summary for s in cmp.systems
    }
    curves = curves_frame(summaries, bases, max_k)
    systems = cmp.systems

    charts: list[str] = []
    figures: list[str] = []
    for b in bases:
        name = str(b)
        sub = curves[curves["metric"] == name]
        series = {
            s: (list(range(1, max_k + 1)), sub[sub["system"] == s]["value"].tolist())
            for s in systems
        }
        cid = f"curve-{name}"
        charts.append(cid)
        figures.append(
            _figure(
                svg.line_chart(
                    cid, f"{name}@k", series, xlabel="cut-off k", ylabel=f"{name}@k", integer_x=True
                ),
                f"{name} at k = 1..{max_k}, mean over users.",
            )
        )
    pr = {}
    for s in systems:
        p = curves[(curves["metric"] == "precision") & (curves["system"] == s)]["value"]
        r = curves[(curves["metric"] == "recall") & (curves["system"] == s)]["value"]
        pr[s] = (r.tolist(), p.tolist())
    charts.append("pr-curve")
    pr_fig = _figure(
        svg.line_chart("pr-curve", "Precision–recall", pr, xlabel="recall@k", ylabel="precision@k"),
        f"One point per cut-off k = 1..{max_k} (mean precision@k against mean recall@k).",
    )
    dists = []
    for m, frame in cmp.aligned.items():
        cid = f"dist-{m}"
        charts.append(cid)
        dists.append(
            _figure(
                svg.box_plot(
                    cid, f"Per-user {m}", {s: frame[s].to_numpy() for s in systems}, ylabel=m
                ),
                f"{len(frame)} users: box = quartiles, line = median, diamond = mean, "
                "whiskers = 1.5 IQR.",
            )
        )

    popularity = None
    coverage = None
    bias_figs = []
    if train is not None:
        cols = {
            k: evaluate_kwargs[k]
            for k in ("user_col", "item_col", "score_col", "rank_col")
            if k in evaluate_kwargs
        }
        tops = {s: top_k_items(runs[s], max_k, **cols) for s in systems}
        popularity = popularity_deciles(
            tops,
            train=train,
            catalog=catalog,
            user_col=cols.get("user_col"),
            item_col=cols.get("item_col"),
        )
        charts.append("popularity")
        bias_figs.append(
            _figure(
                svg.bar_chart(
                    "popularity",
                    f"Popularity bias (top-{max_k})",
                    list(popularity.columns),
                    {n: popularity.loc[n].tolist() for n in popularity.index},
                    xlabel="item popularity decile (1 = most popular 10% of catalog items)",
                    ylabel="share",
                ),
                "Share of top-K recommendation slots by item popularity decile; "
                "'training data' is each decile's share of training interactions; "
                "'outside' = items not in the catalog.",
            )
        )
    if with_catalog:
        coverage = {s: float(summaries[s][f"coverage@{max_k}"]) for s in systems}
        charts.append("coverage")
        bias_figs.append(
            _figure(
                svg.bar_chart(
                    "coverage",
                    f"Catalog coverage@{max_k}",
                    systems,
                    {f"coverage@{max_k}": [coverage[s] for s in systems]},
                    xlabel="system",
                    ylabel="share of catalog",
                ),
                "Share of catalog items recommended to at least one user "
                "(the coverage@k curve is above).",
            )
        )

    s0 = cmp.results[systems[0]].counts
    sub = (
        f"{len(systems)} systems · {s0.get('users_evaluated', '?')} users evaluated · "
        f"{escape(', '.join(cmp.metrics))} · receval {escape(__version__)}"
    )
    body = [
        f"<header><h1>{escape(title)}</h1><div class='meta'>{sub}</div></header>",
        "<section id='leaderboard'><h2>Leaderboard</h2>",
        _leaderboard(cmp),
        "</section>",
        "<section id='comparisons'><h2>Pairwise comparisons</h2>",
        _pairs(cmp),
        "</section>",
        "<section id='curves'><h2>Metrics at every cut-off</h2><div class='grid'>",
        *figures,
        pr_fig,
        "</div></section>",
        "<section id='distributions'><h2>Distribution of per-user values</h2>",
        "<div class='grid'>",
        *dists,
        "</div>" if dists else "<p class='note'>No per-user metric.</p></div>",
        "</section>",
    ]
    if bias_figs:
        body += [
            "<section id='popularity-bias'><h2>Popularity bias and coverage</h2>",
            "<div class='grid'>",
            *bias_figs,
            "</div></section>",
        ]
    body += [
        "<section id='provenance'><h2>How these numbers were produced</h2>",
        _provenance(cmp, specs, max_k),
        "</section>",
    ]
    html = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta name='generator' content='receval {escape(__version__)}'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )
    rep = Report(
        html=html,
        comparison=cmp,
        curves=curves,
        popularity=popularity,
        coverage=coverage,
        charts=charts,
        max_k=max_k,
    )
    if png_dir is not None:
        from receval.analysis.report.png import write_pngs

        rep.images = write_pngs(
            png_dir,
            curves=curves,
            distributions=cmp.aligned,
            popularity=popularity,
            systems=systems,
        )
    if out is not None:
        rep.save(out)
    return rep
