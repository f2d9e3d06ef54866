"""Inline SVG charts written as text: line charts, grouped bars and box plots.

No JavaScript and no external resource: every chart is one ``<svg>`` element
with class ``chart`` and a ``data-chart`` id, a ``<title>`` for screen readers,
axes with ticks, and a legend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

import numpy as np

__all__ = ["PALETTE", "bar_chart", "box_plot", "color", "line_chart", "nice_ticks"]

#: Okabe–Ito colours (distinguishable with colour-vision deficiencies).
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
_DASHES = ("", "6 3", "2 3", "8 3 2 3")

W, H = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 170, 36, 52


def color(i: int) -> str:
    """The colour of the i-th series.

    Example:
        >>> color(0), color(8)
        ('#0072B2', '#0072B2')
    """
    return PALETTE[i % len(PALETTE)]


def _dash(i: int) -> str:
    d = _DASHES[(i // len(PALETTE)) % len(_DASHES)]
    return f' stroke-dasharray="{d}"' if d else ""


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]``.

    Example:
        >>> nice_ticks(0, 1)
        [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) if lo else 1.0)
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step + 1e-9) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v = start + step * len(ticks)
    if ticks[-1] < hi - step * 1e-9:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _label(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000 or a < 0.001:
        return f"{v:.2g}"
    return f"{v:.3f}".rstrip("0").rstrip(".")


class _Frame:
    """A plotting area mapping data coordinates to pixels."""

    def __init__(self, x0: float, x1: float, y0: float, y1: float) -> None:
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        self.pw = W - LEFT - RIGHT
        self.ph = H - TOP - BOTTOM

    def x(self, v: float) -> float:
        span = self.x1 - self.x0 or 1.0
        return LEFT + (v - self.x0) / span * self.pw

    def y(self, v: float) -> float:
        span = self.y1 - self.y0 or 1.0
        return TOP + self.ph - (v - self.y0) / span * self.ph


def _open(chart_id: str, title: str) -> list[str]:
    t = escape(title)
    return [
        f'<svg class="chart" data-chart="{escape(chart_id)}" id="chart-{escape(chart_id)}" '
        f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        f'role="img" aria-label="{t}">',
        f"<title>{t}</title>",
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="22" class="chart-title" font-size="15" font-weight="600" '
        f'fill="#222">{t}</text>',
    ]


def _axes(
    f: _Frame,
    xticks: Sequence[tuple[float, str]],
    yticks: Sequence[float],
    xlabel: str,
    ylabel: str,
) -> list[str]:
    out = []
    for v in yticks:
        py = f.y(v)
        out.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{py:.1f}" y2="{py:.1f}" stroke="#e3e3e3"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{py + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#444">{_label(v)}</text>'
        )
    base = TOP + f.ph
    out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{base}" y2="{base}" stroke="#555"/>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{base}" stroke="#555"/>')
    for v, text in xticks:
        px = f.x(v)
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{base}" y2="{base + 4}" stroke="#555"/>')
        out.append(
            f'<text x="{px:.1f}" y="{base + 17}" text-anchor="middle" font-size="11" '
            f'fill="#444">{escape(text)}</text>'
        )
    out.append(
        f'<text x="{LEFT + f.pw / 2:.1f}" y="{H - 12}" text-anchor="middle" font-size="12" '
        f'fill="#222">{escape(xlabel)}</text>'
    )
    out.append(
        f'<text x="16" y="{TOP + f.ph / 2:.1f}" text-anchor="middle" font-size="12" fill="#222" '
        f'transform="rotate(-90 16 {TOP + f.ph / 2:.1f})">{escape(ylabel)}</text>'
    )
    return out


def _legend(names: Sequence[str], marker: str = "line") -> list[str]:
    out = ['<g class="legend">']
    x = W - RIGHT + 16
    for i, name in enumerate(names):
        y = TOP + 10 + i * 20
        if marker == "line":
            out.append(
                f'<line x1="{x}" x2="{x + 22}" y1="{y}" y2="{y}" stroke="{color(i)}" '
                f'stroke-width="2.5"{_dash(i)}/>'
            )
        else:
            out.append(f'<rect x="{x + 4}" y="{y - 6}" width="14" height="12" fill="{color(i)}"/>')
        short = name if len(name) <= 18 else name[:17] + "…"
        out.append(
            f'<text x="{x + 28}" y="{y + 4}" font-size="12" fill="#222">{escape(short)}</text>'
        )
    out.append("</g>")
    return out


def line_chart(
    chart_id: str,
    title: str,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    integer_x: bool = False,
    markers: bool = True,
) -> str:
    """One line per series (name → (x values, y values)); NaN points are skipped.

    Example:
        >>> svg = line_chart("c", "ndcg@k", {"a": ([1, 2], [0.5, 0.6])}, xlabel="k", ylabel="v")
        >>> svg.startswith('<svg class="chart" data-chart="c"'), svg.count("<polyline")
        (True, 1)
    """
    xs = [float(v) for x, _ in series.values() for v in x if math.isfinite(float(v))]
    ys = [float(v) for _, y in series.values() for v in y if math.isfinite(float(v))]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0 = min(0.0, min(ys)) if ys else 0.0
    y1 = max(ys) if ys else 1.0
    if y1 <= y0:
        y1 = y0 + 1.0
    yt = nice_ticks(y0, y1)
    if integer_x:
        step = max(1, math.ceil((x1 - x0 + 1) / 10))
        xt_vals = [float(v) for v in range(int(x0), int(x1) + 1, step)]
    else:
        xt_vals = nice_ticks(x0, x1)
        x0, x1 = xt_vals[0], xt_vals[-1]
    if x1 <= x0:
        x1 = x0 + 1.0
    f = _Frame(x0, x1, yt[0], yt[-1])
    out = _open(chart_id, title)
    out += _axes(f, [(v, _label(v)) for v in xt_vals], yt, xlabel, ylabel)
    for i, (name, (x, y)) in enumerate(series.items()):
        pts = [
            (f.x(float(a)), f.y(float(b)))
            for a, b in zip(x, y, strict=True)
            if math.isfinite(float(a)) and math.isfinite(float(b))
        ]
        if not pts:
            continue
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        out.append(
            f'<polyline class="series" data-series="{escape(name)}" points="{path}" fill="none" '
            f'stroke="{color(i)}" stroke-width="2.2"{_dash(i)}/>'
        )
        if markers and len(pts) <= 40:
            out += [
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.8" fill="{color(i)}"/>' for px, py in pts
            ]
    out += _legend(list(series))
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    chart_id: str,
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    intervals: Mapping[str, Sequence[tuple[float, float]]] | None = None,
) -> str:
    """Grouped bars: one group per label of ``groups``, one bar per series;
    ``intervals`` (per series, per group: (low, high)) draws each bar's
    interval as a whisker.

    Example:
        >>> svg = bar_chart("b", "t", ["x", "y"], {"a": [1, 2], "b": [2, 1]}, xlabel="", ylabel="")
        >>> svg.count('class="bar"')
        4
        >>> ci = {"a": [(0.5, 1.5), (1.5, 2.5)]}
        >>> bar_chart("b", "t", ["x", "y"], {"a": [1, 2]}, xlabel="", ylabel="",
        ...           intervals=ci).count('class="interval"')
        2
    """
    intervals = intervals or {}
    vals = [float(v) for s in series.values() for v in s if math.isfinite(float(v))]
    vals += [float(h) for s in intervals.values() for _, h in s if math.isfinite(float(h))]
    hi = max([*vals, 0.0]) or 1.0
    yt = nice_ticks(0.0, hi)
    n_groups = max(len(groups), 1)
    f = _Frame(0.0, float(n_groups), yt[0], yt[-1])
    out = _open(chart_id, title)
    out += _axes(f, [(i + 0.5, g) for i, g in enumerate(groups)], yt, xlabel, ylabel)
    k = max(len(series), 1)
    slot = f.pw / n_groups
    bw = slot * 0.8 / k
    for j, (name, values) in enumerate(series.items()):
        for i, v in enumerate(values):
            v = float(v)
            if not math.isfinite(v):
                continue
            px = LEFT + i * slot + slot * 0.1 + j * bw
            top = f.y(max(v, 0.0))
            lo, hi = (intervals.get(name) or [(math.nan, math.nan)] * len(values))[i]
            shown = math.isfinite(float(lo)) and math.isfinite(float(hi))
            ci = f" [{_label(float(lo))}, {_label(float(hi))}]" if shown else ""
            out.append(
                f'<rect class="bar" x="{px:.1f}" y="{top:.1f}" width="{max(bw - 1, 1):.1f}" '
                f'height="{max(f.y(0.0) - top, 0):.1f}" fill="{color(j)}">'
                f"<title>{escape(name)} · {escape(str(groups[i]))}: {_label(v)}{ci}</title></rect>"
            )
            if shown:
                cx = px + max(bw - 1, 1) / 2
                y0, y1 = f.y(max(float(lo), 0.0)), f.y(max(float(hi), 0.0))
                cap = min(max(bw / 4, 2.0), 6.0)
                out.append(
                    f'<path class="interval" d="M{cx:.1f},{y0:.1f}V{y1:.1f}'
                    f"M{cx - cap:.1f},{y0:.1f}H{cx + cap:.1f}M{cx - cap:.1f},{y1:.1f}"
                    f'H{cx + cap:.1f}" stroke="#222" stroke-width="1.2" fill="none"/>'
                )
    out += _legend(list(series), marker="box")
    out.append("</svg>")
    return "\n".join(out)


def box_plot(
    chart_id: str,
    title: str,
    data: Mapping[str, Sequence[float] | np.ndarray],
    *,
    ylabel: str,
) -> str:
    """One box per series: quartiles, median (line), mean (diamond), whiskers to
    the furthest values within 1.5 IQR of the box.

    Example:
        >>> svg = box_plot("d", "t", {"a": [0, 0.5, 1], "b": [0.2, 0.4]}, ylabel="v")
        >>> svg.count('class="box"')
        2
    """
    arrays = {k: np.asarray(v, dtype=float) for k, v in data.items()}
    arrays = {k: v[np.isfinite(v)] for k, v in arrays.items()}
    vals = np.concatenate([v for v in arrays.values() if v.size] or [np.zeros(1)])
    lo, hi = float(vals.min()), float(vals.max())
    yt = nice_ticks(min(lo, 0.0), hi if hi > lo else lo + 1.0)
    n = max(len(arrays), 1)
    f = _Frame(0.0, float(n), yt[0], yt[-1])
    out = _open(chart_id, title)
    out += _axes(f, [(i + 0.5, name) for i, name in enumerate(arrays)], yt, "", ylabel)
    slot = f.pw / n
    bw = min(slot * 0.5, 60)
    for i, (name, v) in enumerate(arrays.items()):
        if not v.size:
            continue
        q1, med, q3 = (float(q) for q in np.quantile(v, [0.25, 0.5, 0.75]))
        iqr = q3 - q1
        w_lo = float(v[v >= q1 - 1.5 * iqr].min())
        w_hi = float(v[v <= q3 + 1.5 * iqr].max())
        cx = LEFT + (i + 0.5) * slot
        c = color(i)
        out.append(f'<g class="box" data-series="{escape(name)}">')
        out.append(
            f"<title>{escape(name)}: median {_label(med)}, quartiles {_label(q1)}–{_label(q3)}, "
            f"mean {_label(float(v.mean()))}, {v.size} users</title>"
        )
        out.append(
            f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{f.y(w_lo):.1f}" y2="{f.y(w_hi):.1f}" '
            f'stroke="{c}" stroke-width="1.5"/>'
        )
        for w in (w_lo, w_hi):
            out.append(
                f'<line x1="{cx - bw / 4:.1f}" x2="{cx + bw / 4:.1f}" y1="{f.y(w):.1f}" '
                f'y2="{f.y(w):.1f}" stroke="{c}" stroke-width="1.5"/>'
            )
        top, bottom = f.y(q3), f.y(q1)
        out.append(
            f'<rect x="{cx - bw / 2:.1f}" y="{top:.1f}" width="{bw:.1f}" '
            f'height="{max(bottom - top, 1.0):.1f}" fill="{c}" fill-opacity="0.25" stroke="{c}" '
            f'stroke-width="1.5"/>'
        )
        out.append(
            f'<line x1="{cx - bw / 2:.1f}" x2="{cx + bw / 2:.1f}" y1="{f.y(med):.1f}" '
            f'y2="{f.y(med):.1f}" stroke="{c}" stroke-width="3"/>'
        )
        my = f.y(float(v.mean()))
        out.append(
            f'<path d="M {cx:.1f} {my - 5:.1f} L {cx + 5:.1f} {my:.1f} L {cx:.1f} {my + 5:.1f} '
            f'L {cx - 5:.1f} {my:.1f} Z" fill="#ffffff" stroke="{c}" stroke-width="1.5"/>'
        )
        out.append("</g>")
    out += _legend(list(arrays), marker="box")
    out.append("</svg>")
    return "\n".join(out)
