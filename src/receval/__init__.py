"""receval: offline evaluation of recommender systems, every definition explicit.

>>> import receval
>>> res = receval.evaluate({"u1": [1, 6, 8]}, {"u1": {1, 2, 3, 4, 5, 6}}, ["p@3", "map@3"])
>>> {name: round(value, 4) for name, value in res.summary.items()}
{'precision@3': 0.6667, 'ap@3': 0.6667}
"""

from __future__ import annotations

import importlib
from typing import Any

from receval._version import __version__
from receval.analysis.curves import curve, pr_curve, roc
from receval.errors import (
    InputError,
    MetricError,
    NoSharedUser,
    OptionError,
    PolicyError,
    ReceValError,
)
from receval.evaluation.api import evaluate, evaluate_explicit, score
from receval.evaluation.options import EvalOptions
from receval.evaluation.ratings import evaluate_ratings, score_ratings
from receval.evaluation.result import Result
from receval.metrics.registry import MetricDef, ParamDef, metrics
from receval.metrics.spec import MetricSpec, parse_metric, parse_metrics
from receval.workflow.checks import check
from receval.workflow.split import kfold, split  # the function shadows the module name on purpose

# Heavier parts (SciPy, the baselines, the report) load on first use, so that
# `import receval` stays fast.
_LAZY = {
    "run_demo": ("receval.workflow.demo", "run_demo"),
    "report": ("receval.analysis.report", "report"),
    "compare": ("receval.analysis.compare", "compare"),
    "Comparison": ("receval.analysis.compare", "Comparison"),
    "compare_conventions": ("receval.analysis.explain", "compare_conventions"),
    "Report": ("receval.analysis.report", "Report"),
    "synthetic_interactions": ("receval.workflow.synthetic", "synthetic_interactions"),
    "read_interactions": ("receval.io.interactions", "read_interactions"),
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
    "EvalOptions",
    "InputError",
    "MetricDef",
    "MetricError",
    "MetricSpec",
    "NoSharedUser",
    "OptionError",
    "ParamDef",
    "PolicyError",
    "ReceValError",
    "Report",
    "Result",
    "__version__",
    "check",
    "compare",
    "compare_conventions",
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
