"""receval: offline evaluation of recommender systems, every definition explicit.

>>> import receval
>>> res = receval.evaluate({"u1": [1, 6, 8]}, {"u1": {1, 2, 3, 4, 5, 6}}, ["p@3", "map@3"])
>>> {name: round(value, 4) for name, value in res.summary.items()}
{'precision@3': 0.6667, 'ap@3': 0.6667}
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__
from .api import evaluate, evaluate_explicit, score
from .checks import check
from .curves import curve, pr_curve, roc
from .errors import InputError, MetricError, PolicyError, ReceValError
from .ratings import evaluate_ratings, score_ratings
from .registry import MetricDef, ParamDef, metrics
from .result import Result
from .spec import MetricSpec, parse_metric, parse_metrics
from .split import kfold, split  # the function shadows the module name on purpose

# Heavier parts (SciPy, the baselines, the report) load on first use, so that
# `import receval` stays fast.
_LAZY = {
    "run_demo": ("receval.demo", "run_demo"),
    "report": ("receval.report", "report"),
    "compare": ("receval.compare", "compare"),
    "Comparison": ("receval.compare", "Comparison"),
    "Report": ("receval.report", "Report"),
    "synthetic_interactions": ("receval.data", "synthetic_interactions"),
    "read_interactions": ("receval.data", "read_interactions"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'receval' has no attribute {name!r}")


__all__ = [
    "Comparison",
    "InputError",
    "MetricDef",
    "MetricError",
    "MetricSpec",
    "ParamDef",
    "PolicyError",
    "ReceValError",
    "Report",
    "Result",
    "__version__",
    "check",
    "compare",
    "curve",
    "evaluate",
    "evaluate_explicit",
    "evaluate_ratings",
    "kfold",
    "metrics",
    "parse_metric",
    "parse_metrics",
    "pr_curve",
    "read_interactions",
    "report",
    "roc",
    "run_demo",
    "score",
    "score_ratings",
    "split",
    "synthetic_interactions",
]
