"""Static PNG figures for papers and slides, drawn with matplotlib (imported
only when images are asked for).

A good guest: every figure is a :class:`matplotlib.figure.Figure` drawn on its
own Agg canvas, never pyplot, so the host's backend, its open figures and its
interactive state are left as they were."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.analysis.report.svg import color
from receval.io.write import OutputSet

__all__ = ["write_pngs"]


def _figure_class() -> Any:
    """``Figure`` and ``FigureCanvasAgg`` (no pyplot, no backend switch)."""
    try:
        import matplotlib  # noqa: F401  (first: the package itself may be missing)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("PNG images need matplotlib: pip install 'receval[plot]'") from exc
    return Figure, FigureCanvasAgg


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_") or "metric"


def write_pngs(
    out_dir: str | Path,
    *,
    curves: pd.DataFrame,
    distributions: Mapping[str, pd.DataFrame],
    popularity: pd.DataFrame | None,
    systems: list[str],
    max_k: int | None = None,
    dpi: int = 150,
    weights: Mapping[str, pd.DataFrame] | None = None,
    positions: pd.DataFrame | None = None,
    with_runs: bool = True,
) -> list[Path]:
    """Write one PNG per chart of the report into ``out_dir`` (created if needed):
    ``curve_<metric>.png``, ``pr_curve.png``, ``distribution_<metric>.png`` and,
    with training data, ``popularity.png`` (of the top ``max_k``) and, with
    ``weights`` (name → share of rows per estimator and weight decade, as
    :func:`receval.analysis.report.html.weight_histogram` gives),
    ``weights_<name>.png``, and with ``positions`` (the long table
    ``system, metric, step, sessions, value`` of
    :func:`receval.analysis.report.html.next_item_positions`)
    ``position_<metric>.png``: each metric by step position, one line per
    system. ``with_runs=False`` (a report of next-item results alone): no
    curve, precision–recall or distribution image. Returns the paths written.

    The images are one set (:class:`receval.io.write.OutputSet`): the folder is
    locked while they are drawn, and they are published together with a
    ``manifest.json`` once all are drawn, or not at all.

    Raises:
        ImportError: matplotlib is not installed (nothing is written).
    """
    figure, canvas = _figure_class()
    with OutputSet(out_dir, "report", {"dpi": dpi, "systems": list(systems)}) as out:
        charts = (curves, distributions, popularity, systems, max_k)
        written = _draw_all(out, figure, canvas, *charts, dpi) if with_runs else []
        for name, frame in (weights or {}).items():
            fig = figure(figsize=(7, 4))
            canvas(fig)
            _weights(fig.subplots(), frame, name)
            fig.tight_layout()
            written.append(
                out.write(
                    f"weights_{_slug(name)}.png",
                    lambda tmp, f=fig: f.savefig(tmp, dpi=dpi, format="png"),
                )
            )
        if positions is not None:
            for metric in dict.fromkeys(positions["metric"]):
                fig = figure(figsize=(6, 4))
                canvas(fig)
                _position(fig.subplots(), positions[positions["metric"] == metric], metric)
                fig.tight_layout()
                written.append(
                    out.write(
                        f"position_{_slug(metric)}.png",
                        lambda tmp, f=fig: f.savefig(tmp, dpi=dpi, format="png"),
                    )
                )
        return written


def _position(ax: Any, frame: pd.DataFrame, metric: str) -> None:
    """A metric by step position in session, one line per system."""
    for i, s in enumerate(dict.fromkeys(frame["system"])):
        mine = frame[frame["system"] == s]
        ax.plot(mine["step"], mine["value"], marker="o", ms=3, color=color(i), label=s)
    ax.set_xlabel("step t (the list after the session's first t items)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by position in session")
    ax.grid(alpha=0.3)
    ax.legend()


def _draw_all(
    out: OutputSet,
    figure: Any,
    canvas: Any,
    curves: pd.DataFrame,
    distributions: Mapping[str, pd.DataFrame],
    popularity: pd.DataFrame | None,
    systems: list[str],
    max_k: int | None,
    dpi: int,
) -> list[Path]:
    """Every chart of :func:`write_pngs`, written into the set ``out``."""
    written: list[Path] = []

    def save(name: str, draw: Callable[[Any], None], size: tuple[float, float] = (6, 4)) -> None:
        fig = figure(figsize=size)
        canvas(fig)  # its own Agg canvas: pyplot never sees it
        ax = fig.subplots()
        draw(ax)
        fig.tight_layout()
        # whole or not at all: a temporary file renamed over the target (a link is replaced)
        written.append(out.write(name, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png")))

    for metric in dict.fromkeys(curves["metric"]):
        save(f"curve_{_slug(metric)}.png", lambda ax, m=metric: _curve(ax, curves, m, systems))
    save("pr_curve.png", lambda ax: _pr(ax, curves, systems, max_k))
    for metric, frame in distributions.items():
        save(
            f"distribution_{_slug(metric)}.png",
            lambda ax, m=metric, f=frame: _distribution(ax, f, m, systems),
        )
    if popularity is not None:
        save("popularity.png", lambda ax: _popularity(ax, popularity, max_k), (7, 4))
    return written


def _curve(ax: Any, curves: pd.DataFrame, metric: str, systems: list[str]) -> None:
    for i, s in enumerate(systems):
        sub = curves[(curves["metric"] == metric) & (curves["system"] == s)]
        ax.plot(sub["k"], sub["value"], marker="o", ms=3, color=color(i), label=s)
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k")
    ax.set_title(f"{metric}@k")
    ax.grid(alpha=0.3)
    ax.legend()


def _pr(ax: Any, curves: pd.DataFrame, systems: list[str], max_k: int | None) -> None:
    for i, s in enumerate(systems):
        p = curves[(curves["metric"] == "precision") & (curves["system"] == s)]
        r = curves[(curves["metric"] == "recall") & (curves["system"] == s)]
        ax.plot(
            r["value"].to_numpy(), p["value"].to_numpy(), marker="o", ms=3, color=color(i), label=s
        )
    ax.set_xlabel("recall@k")
    ax.set_ylabel("precision@k")
    ax.set_title(f"Precision–recall (k = 1..{max_k or 'K'})")
    ax.grid(alpha=0.3)
    ax.legend()


def _distribution(ax: Any, frame: pd.DataFrame, metric: str, systems: list[str]) -> None:
    box = ax.boxplot(
        [frame[s].to_numpy(dtype=float) for s in systems], showmeans=True, patch_artist=True
    )
    ax.set_xticks(np.arange(1, len(systems) + 1), systems)
    for i, patch in enumerate(box["boxes"]):
        patch.set_facecolor(color(i))
        patch.set_alpha(0.35)
    ax.set_ylabel(metric)
    ax.set_title(f"Per-user {metric}")
    ax.grid(alpha=0.3, axis="y")


def _popularity(ax: Any, popularity: pd.DataFrame, max_k: int | None) -> None:
    names = list(popularity.index)
    cols = list(popularity.columns)
    width = 0.8 / len(names)
    x = np.arange(len(cols))
    for j, name in enumerate(names):
        ax.bar(
            x + j * width,
            popularity.loc[name].to_numpy(dtype=float),
            width,
            color=color(j),
            label=name,
        )
    ax.set_xticks(x + 0.4 - width / 2, cols)
    ax.set_xlabel("item popularity decile (1 = most popular)")
    ax.set_ylabel("share of recommendations")
    ax.set_title(f"Popularity bias (top-{max_k})" if max_k else "Popularity bias")
    ax.legend()


def _weights(ax: Any, frame: pd.DataFrame, name: str) -> None:
    """Share of the logged rows per weight decade, one bar per estimator."""
    names = list(frame.index)
    cols = list(frame.columns)
    width = 0.8 / max(1, len(names))
    x = np.arange(len(cols))
    for j, est in enumerate(names):
        ax.bar(
            x + j * width, frame.loc[est].to_numpy(dtype=float), width, color=color(j), label=est
        )
    ax.set_xticks(x + 0.4 - width / 2, cols)
    ax.set_xlabel("weight (decade)")
    ax.set_ylabel("share of logged rows")
    ax.set_title(f"Importance weights: {name}")
    ax.legend()
