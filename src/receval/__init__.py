"""receval: offline evaluation of recommender systems, every definition explicit.

>>> import receval
>>> res = receval.evaluate({"u1": [1, 6, 8]}, {"u1": {1, 2, 3, 4, 5, 6}}, ["p@3", "map@3"])
>>> {name: round(value, 4) for name, value in res.summary.items()}
{'precision@3': 0.6667, 'ap@3': 0.6667}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import receval.metrics as _metrics_package  # bound first: `metrics` below is the function
from receval._version import __version__
from receval.errors import (
    InputError,
    MetricError,
    NoSharedUser,
    OptionError,
    PolicyError,
    ReceValError,
)

if TYPE_CHECKING:  # for type checkers and editors; at run time each loads on first use
    from receval.analysis.agreement import agreement
    from receval.analysis.compare import Comparison, compare
    from receval.analysis.curves import curve, pr_curve, roc
    from receval.analysis.explain import compare_conventions
    from receval.analysis.groups import group_gap, group_mad
    from receval.analysis.intent_aware import IntentAwareResult, intent_aware
    from receval.analysis.off_policy import off_policy
    from receval.analysis.report import Report, report
    from receval.analysis.stats import power
    from receval.analysis.strata import propensity_strata
    from receval.analysis.tracking import log_mlflow, log_wandb
    from receval.evaluation.accumulator import Accumulator
    from receval.evaluation.api import evaluate, evaluate_explicit, score
    from receval.evaluation.next_items import NextItemResult, evaluate_next_items
    from receval.evaluation.options import EvalOptions
    from receval.evaluation.ratings import evaluate_ratings, score_ratings
    from receval.evaluation.result import Result
    from receval.io.interactions import read_interactions
    from receval.io.trec_write import qrels_dict, run_dict, write_trec_qrels, write_trec_run
    from receval.metrics.registry import (
        MetricDef,
        ParamDef,
        metric,
        register_metric,
        unregister_metric,
    )
    from receval.metrics.spec import MetricSpec, parse_metric, parse_metrics
    from receval.workflow.backtest import BacktestResult, backtest, compare_backtests
    from receval.workflow.backtest_report import backtest_report
    from receval.workflow.checks import check
    from receval.workflow.demo import run_demo
    from receval.workflow.sampling import sample_negatives
    from receval.workflow.session_demo import run_session_demo
    from receval.workflow.split import kfold, split
    from receval.workflow.synthetic import synthetic_interactions, synthetic_sessions

# Every public name but the errors loads on first use, so that `import receval`
# imports neither NumPy nor pandas (a few milliseconds), and the receval
# command can answer Ctrl-C from its first moment (receval._launch).
_LAZY = {
    "curve": "receval.analysis.curves",
    "pr_curve": "receval.analysis.curves",
    "roc": "receval.analysis.curves",
    "Accumulator": "receval.evaluation.accumulator",
    "evaluate": "receval.evaluation.api",
    "evaluate_explicit": "receval.evaluation.api",
    "score": "receval.evaluation.api",
    "evaluate_next_items": "receval.evaluation.next_items",
    "NextItemResult": "receval.evaluation.next_items",
    "EvalOptions": "receval.evaluation.options",
    "evaluate_ratings": "receval.evaluation.ratings",
    "score_ratings": "receval.evaluation.ratings",
    "Result": "receval.evaluation.result",
    "MetricDef": "receval.metrics.registry",
    "ParamDef": "receval.metrics.registry",
    "metric": "receval.metrics.registry",
    "register_metric": "receval.metrics.registry",
    "unregister_metric": "receval.metrics.registry",
    "MetricSpec": "receval.metrics.spec",
    "parse_metric": "receval.metrics.spec",
    "parse_metrics": "receval.metrics.spec",
    "backtest": "receval.workflow.backtest",
    "BacktestResult": "receval.workflow.backtest",
    "compare_backtests": "receval.workflow.backtest",
    "backtest_report": "receval.workflow.backtest_report",
    "check": "receval.workflow.checks",
    "kfold": "receval.workflow.split",
    "split": "receval.workflow.split",
    "run_demo": "receval.workflow.demo",
    "sample_negatives": "receval.workflow.sampling",
    "report": "receval.analysis.report",
    "Report": "receval.analysis.report",
    "agreement": "receval.analysis.agreement",
    "compare": "receval.analysis.compare",
    "Comparison": "receval.analysis.compare",
    "compare_conventions": "receval.analysis.explain",
    "group_gap": "receval.analysis.groups",
    "group_mad": "receval.analysis.groups",
    "intent_aware": "receval.analysis.intent_aware",
    "IntentAwareResult": "receval.analysis.intent_aware",
    "off_policy": "receval.analysis.off_policy",
    "power": "receval.analysis.stats",
    "propensity_strata": "receval.analysis.strata",
    "log_mlflow": "receval.analysis.tracking",
    "log_wandb": "receval.analysis.tracking",
    "synthetic_interactions": "receval.workflow.synthetic",
    "synthetic_sessions": "receval.workflow.synthetic",
    "run_session_demo": "receval.workflow.session_demo",
    "read_interactions": "receval.io.interactions",
    "run_dict": "receval.io.trec_write",
    "qrels_dict": "receval.io.trec_write",
    "write_trec_run": "receval.io.trec_write",
    "write_trec_qrels": "receval.io.trec_write",
}


#: Subpackages reachable as attributes (``receval.evaluation.conventions``), loaded on use.
_SUBPACKAGES = ("analysis", "engines", "evaluation", "io", "workflow", "errors", "exact", "ids")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:  # as after an eager import: every public module loaded
        for module in dict.fromkeys(_LAZY.values()):
            importlib.import_module(module)
        return importlib.import_module(f"receval.{name}")
    raise AttributeError(f"module 'receval' has no attribute {name!r}")


def metrics() -> Any:
    """Every metric definition by name: :func:`receval.metrics.registry.metrics`.

    (A function of the package, not the ``receval.metrics`` subpackage, whose
    name it shadows on purpose.)

    Example:
        >>> "ndcg" in metrics()
        True
    """
    from receval.metrics.registry import metrics as definitions

    return definitions()


del _metrics_package


__all__ = [
    "Accumulator",
    "BacktestResult",
    "Comparison",
    "EvalOptions",
    "InputError",
    "IntentAwareResult",
    "MetricDef",
    "MetricError",
    "MetricSpec",
    "NextItemResult",
    "NoSharedUser",
    "OptionError",
    "ParamDef",
    "PolicyError",
    "ReceValError",
    "Report",
    "Result",
    "__version__",
    "agreement",
    "backtest",
    "backtest_report",
    "check",
    "compare",
    "compare_backtests",
    "compare_conventions",
    "curve",
    "evaluate",
    "evaluate_explicit",
    "evaluate_next_items",
    "evaluate_ratings",
    "group_gap",
    "group_mad",
    "intent_aware",
    "kfold",
    "log_mlflow",
    "log_wandb",
    "metric",
    "metrics",
    "off_policy",
    "parse_metric",
    "parse_metrics",
    "power",
    "pr_curve",
    "propensity_strata",
    "qrels_dict",
    "read_interactions",
    "register_metric",
    "report",
    "roc",
    "run_demo",
    "run_dict",
    "run_session_demo",
    "sample_negatives",
    "score",
    "score_ratings",
    "split",
    "synthetic_interactions",
    "synthetic_sessions",
    "unregister_metric",
    "write_trec_qrels",
    "write_trec_run",
]
