"""receval: offline evaluation of recommender systems, every definition explicit.

>>> import receval
>>> res = receval.evaluate({"u1": [1, 6, 8]}, {"u1": {1, 2, 3, 4, 5, 6}}, ["p@3", "map@3"])
>>> {name: round(value, 4) for name, value in res.summary.items()}
{'precision@3': 0.6667, 'ap@3': 0.6667}
"""

from ._version import __version__
from .api import evaluate, score
from .errors import InputError, MetricError, PolicyError, ReceValError
from .registry import MetricDef, ParamDef, metrics
from .result import Result
from .spec import MetricSpec, parse_metric, parse_metrics

__all__ = [
    "InputError",
    "MetricDef",
    "MetricError",
    "MetricSpec",
    "ParamDef",
    "PolicyError",
    "ReceValError",
    "Result",
    "__version__",
    "evaluate",
    "metrics",
    "parse_metric",
    "parse_metrics",
    "score",
]
