"""The declarations of the agreement metrics (kernels: :mod:`receval.metrics.kernels.agreement`).

Registered with receval's own metrics by :mod:`receval.metrics.registry`, which
calls :func:`definitions` with its ``MetricDef`` and ``ParamDef`` classes: this
module never imports the registry (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from receval.metrics.kernels.agreement import intersection, jaccard, rbo_ext, rbo_min, rbo_res

__all__ = ["definitions"]


def _persistence(x: float) -> bool:
    return 0 < x < 1


def _at_least_one(x: int | None) -> bool:
    return x is None or x >= 1


_UNDEFINED = "users whose list and reference are both empty (NaN)"
_VIA = (
    "Through receval.agreement (a reference run, not a truth; door=agreement): the "
    "reference's ranks are read from grades it encodes; evaluate refuses these metrics."
)


def definitions(
    MetricDef: Callable[..., Any],
    ParamDef: Callable[..., Any],
) -> tuple[Any, ...]:
    """The ``MetricDef`` declarations of the agreement metrics, made with the
    registry's ``MetricDef`` and ``ParamDef`` (registered with receval's own)."""

    p = ParamDef(
        "p",
        float,
        0.9,
        "persistence: the chance of comparing one depth further",
        check=_persistence,
        check_text="a number in (0, 1)",
    )
    common = {"door": "agreement", "undefined": _UNDEFINED}
    paper = "Webber, Moffat & Zobel (2010), 'A similarity measure for indefinite rankings'"
    return (
        MetricDef(
            name="rbo",
            aliases=("rbo_ext",),
            description="rank-biased overlap with a reference run, extrapolated (point estimate)",
            formula="(1−p)/p · (Σ_{d≤l} X_d/d p^d + Σ_{s<d≤l} X_s (d−s)/(s d) p^d) "
            "+ ((X_l − X_s)/l + X_s/s) p^l; X_d = |A_{:d} ∩ B_{:d}|, s, l the shorter "
            "and longer length (cut at k)",
            kernel=rbo_ext,
            params=(p,),
            notes=f"RBO_EXT, eq. 32 of {paper}. {_VIA}",
            **common,
        ),
        MetricDef(
            name="rbo_min",
            description="rank-biased overlap with a reference run, lower bound",
            formula="(1−p)/p · (Σ_{d≤l} X_d/d p^d + X_l (−ln(1−p) − Σ_{d≤l} p^d/d))",
            kernel=rbo_min,
            params=(p,),
            notes=f"RBO_MIN, eq. 11 of {paper}, on uneven lists (no overlap below the "
            f"seen prefixes). {_VIA}",
            **common,
        ),
        MetricDef(
            name="rbo_res",
            description="rank-biased overlap with a reference run: residual (upper − lower bound)",
            formula="p^s + p^l − p^f − (1−p)/p (s Σ_{s<d≤f} p^d/d + l Σ_{l<d≤f} p^d/d "
            "+ X_l (−ln(1−p) − Σ_{d≤f} p^d/d)), f = l + s − X_l",
            kernel=rbo_res,
            params=(p,),
            higher_is_better=False,
            notes=f"RBO_RES, eq. 30 of {paper}: rbo_min + rbo_res is the upper bound. {_VIA}",
            **common,
        ),
        MetricDef(
            name="intersection",
            description="share of the top k that the reference's top ref_k also holds",
            formula="|A_{:k} ∩ B_{:ref_k}| / |A_{:k}|",
            kernel=intersection,
            params=(
                ParamDef(
                    "ref_k",
                    int,
                    None,
                    "the depth of the reference compared (default: k)",
                    check=_at_least_one,
                    check_text="an integer >= 1",
                ),
            ),
            notes=f"RecTools' Intersection (a share of the list's top k). {_VIA}",
            **common,
        ),
        MetricDef(
            name="jaccard",
            description="Jaccard index of the top k and the reference's top k",
            formula="|A_{:k} ∩ B_{:k}| / |A_{:k} ∪ B_{:k}|",
            kernel=jaccard,
            notes=_VIA,
            **common,
        ),
    )
