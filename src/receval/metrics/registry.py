"""The metric registry: every metric declared once.

A :class:`MetricDef` carries everything about a metric: its canonical name,
aliases, parameters (type, choices, default, description), bounds, whether
higher is better, the edge-case policy, its formula and its kernel. Parsing,
validation, documentation, the command line and reports all read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType, ModuleType
from typing import Any, NamedTuple

import numpy as np

from receval.metrics.kernels import beyond as B
from receval.metrics.kernels import corrected as C
from receval.metrics.kernels import groups as G
from receval.metrics.kernels import ranking as K
from receval.metrics.kernels import rating as RK
from receval.metrics.kernels import sampled as S
from receval.metrics.kernels import trec as T
from receval.metrics.kernels.batch import Batch

__all__ = [
    "REGISTRY",
    "MetricDef",
    "ParamDef",
    "lookup",
    "metric",
    "metrics",
    "register_metric",
    "unregister_metric",
]


@dataclass(frozen=True)
class ParamDef:
    """A metric parameter: name, type, default and the values it accepts."""

    name: str
    type: type
    default: Any
    description: str
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], bool] | None = None
    check_text: str = ""
    #: (value, requirement) pairs: a value that needs an input or engine data
    #: (see :data:`REQUIREMENTS`), e.g. ``("recommended", "ratings")``.
    needs: tuple[tuple[Any, str], ...] = ()
    #: the name of a statistic of the data that a given value may not be below
    #: (``"max_grade"``: the largest grade of the truth); None: no such bound.
    at_least: str | None = None
    #: text kept as given (a group name), not lower-cased
    keep_case: bool = False
    #: (other parameter, its values): this one applies only with those
    #: (``gamma`` only with ``correction=bv``); None: always
    only_with: tuple[str, tuple[Any, ...]] | None = None

    def convert(self, raw: Any) -> Any:
        """Turn a raw value (a string from a metric name, or a Python value) into
        this parameter's type; raise ValueError with the expected form."""
        if self.type is bool:
            if isinstance(raw, bool):
                value: Any = raw
            elif str(raw).strip().lower() in ("true", "1", "yes"):
                value = True
            elif str(raw).strip().lower() in ("false", "0", "no"):
                value = False
            else:
                raise ValueError("expected true or false")
        elif self.type is float:
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise ValueError("expected a number") from None
            if not math.isfinite(value):
                raise ValueError("expected a finite number")
        elif self.type is int:
            try:
                value = int(str(raw).strip())
            except ValueError:
                raise ValueError("expected an integer") from None
        else:
            value = str(raw).strip() if self.keep_case else str(raw).strip().lower()
        if self.choices is not None and value not in self.choices:
            raise ValueError("expected one of " + ", ".join(self.choices))
        if self.check is not None and not self.check(value):
            raise ValueError(f"expected {self.check_text}")
        return value

    def format(self, value: Any) -> str:
        """Canonical text of a value."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return repr(value)
        return str(value)


#: What a metric (or one of its parameter values) may require, and what provides it.
REQUIREMENTS: Mapping[str, str] = MappingProxyType(
    {
        "train": "training interactions (train=)",
        "catalog": "the item catalog (catalog=, or train=)",
        "item_features": "item features (item_features=)",
        "popular": "a popular-item set (popular=, or train=)",
        "item_groups": "item groups (item_groups=)",
        "ratings": "predicted ratings (explicit-feedback input)",
        "cutoff": "a cut-off @k",
        "catalog_size": "the size of the full catalog (catalog_size=): sampled evaluation",
        "positive_grades": "every grade > 0 whatever the threshold (engine data)",
        "positive_scores": "which listed items are scored > 0 (engine data)",
        "score_ties": "the groups of equal scores in each list (engine data)",
        "reference": "a reference run read as the truth (receval.agreement)",
        "subtopics": "subtopic judgments, read one subtopic at a time (receval.intent_aware)",
        "propensities": "the propensity of each relevant (user, item) pair (propensities=)",
    }
)


class Door(NamedTuple):
    """An entry point that provides a metric's extra input (``MetricDef.door``).

    ``needs``: the requirement (a key of :data:`REQUIREMENTS`) that only this door
    meets; ``call`` and ``command``: how to use it in Python and on the command line.
    """

    needs: str
    call: str
    command: str


#: The entry points that alone run the metrics declaring them (``MetricDef.door``):
#: ``evaluate`` and the ``Accumulator`` refuse those metrics, naming the door.
DOORS: Mapping[str, Door] = MappingProxyType(
    {
        "agreement": Door(
            "reference",
            "receval.agreement(run, reference, metrics)",
            "receval agreement RUN REFERENCE -m ...",
        ),
        "intent_aware": Door(
            "subtopics",
            "receval.intent_aware(run, subtopic_qrels, metrics)",
            "receval intent-aware RUN QRELS -m ...",
        ),
    }
)

#: The statistics of the data a parameter value may be bounded by (``ParamDef.at_least``).
STATISTICS: Mapping[str, str] = MappingProxyType({"max_grade": "the largest grade in the truth"})


@dataclass(frozen=True)
class MetricDef:
    """The one declaration of a metric.

    ``kind`` says how its kernel is called: ``ranking`` (per user, from a
    :class:`~receval.metrics.kernels.batch.Batch`, averaged over users), ``aggregate``
    (one value from combinable statistics of all lists) or ``rating`` (from
    actual and predicted ratings). ``needs`` names the extra inputs it requires
    (``train``, ``item_features``, ``catalog``, ``popular``).

    Everything that makes the engine, the driver or the entry points treat a
    metric differently is a field here, never a test of its name:

    * ``needs_truth``: False for metrics that describe the list alone
      (novelty, arp, long_tail, ild, user_coverage, the aggregates). The user
      policies that score a user 0 (``empty_truth``, ``no_truth`` = ``zero``)
      concern the metrics that need the truth; list-only metrics keep the
      value of the user's list.
    * ``needs_cutoff``: the metric has no meaning without ``@k``;
      ``takes_cutoff``: False when it has none with one (G, Rndcg, ndcg_rel
      read the user's whole ideal).
    * ``needs_ties``: the kernel reads the groups of equal scores.
    * a parameter's ``needs`` / ``at_least``: requirements of one value
      (``precision[denominator=recommended]`` needs ratings input; ERR's
      ``max_grade`` may not be below the largest grade of the truth).
    * ``by_user``: the per-user kernel of a rating metric;
      ``from_error_sums``: its value over all pairs from the exact means of
      ``|a − p|`` and ``(a − p)²`` (None: it needs every pair at once).
    * ``reads_history``: the kernel reads each user's training items
      (``Batch.history``).
    * ``reads_judged``: the kernel reads which listed items are judged
      (``Batch.judged``, ``pooled``, ``n_judged``).
    * ``door``: the entry point (a key of :data:`DOORS`) that alone provides the
      metric's extra input and runs it: ``agreement`` (the truth encodes a
      reference run's ranks, :mod:`receval.metrics.kernels.agreement`) or
      ``intent_aware`` (the truth is one subtopic's judgments at a time,
      :mod:`receval.metrics.intent`). ``evaluate`` and the ``Accumulator``
      refuse it elsewhere, naming the door (``needs_reference`` is
      ``door == "agreement"``).
    * ``of_item_groups``: an aggregate whose kernel takes the item-group
      tallies (:class:`~receval.metrics.kernels.groups.GroupCounts`), not the
      item counts.
    * ``tallies``: the item-group tallies its kernel reads besides the slots
      (``hits``, ``relevant``, ``seen``: see
      :class:`~receval.metrics.kernels.groups.GroupTally`).
    * ``per_item_group``: an aggregate that also has a value within each item
      group (a column of ``Result.item_groups``).
    * :attr:`per_user_of_item_groups` (told by ``needs`` and ``kind``): a
      per-user metric of the item groups (awrf, miscalibration), whose values
      are per user rather than columns of ``Result.item_groups``.
    """

    name: str
    description: str
    formula: str
    kernel: Callable[..., np.ndarray]
    aliases: tuple[str, ...] = ()
    params: tuple[ParamDef, ...] = ()
    bounds: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    graded: bool = False
    needs_ties: bool = False
    undefined: str = "users without relevant items (empty_truth policy)"
    notes: str = ""
    kind: str = "ranking"
    needs: tuple[str, ...] = ()
    needs_truth: bool = True
    needs_cutoff: bool = False
    #: False for metrics that read the user's whole ideal (no @k)
    takes_cutoff: bool = True
    by_user: Callable[..., np.ndarray] | None = None
    reads_history: bool = False
    reads_judged: bool = False
    #: the entry point that alone runs it (a key of DOORS), None: evaluate and every other
    #: door run it
    door: str | None = None
    #: the summary of the mean of the per-user values (exp for the geometric
    #: means, whose per-user values are logarithms); None: the mean itself
    summary_of_mean: Callable[[float], float] | None = None
    of_item_groups: bool = False
    tallies: tuple[str, ...] = ()
    per_item_group: bool = False
    #: a rating metric over all pairs computed from the exact means of |a − p|
    #: and (a − p)² (what an engine of parts adds up, e.g. Spark); None: it
    #: needs every pair at once (r2, the correlations)
    from_error_sums: Callable[[float, float], float] | None = None
    param_map: Mapping[str, ParamDef] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "param_map", MappingProxyType({p.name: p for p in self.params}))
        if self.door is not None and self.door not in DOORS:
            raise ValueError(
                f"{self.name}: door={self.door!r} is none of receval's: {', '.join(DOORS)}"
            )

    @property
    def needs_reference(self) -> bool:
        """Whether it compares with a reference run (``door == "agreement"``).

        Example:
            >>> REGISTRY["rbo"].needs_reference, REGISTRY["ndcg"].needs_reference
            (True, False)
        """
        return self.door == "agreement"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its declared fields (``param_map`` is rebuilt): a metric of one's
        own travels to Spark's workers and other processes with the specs naming it."""
        return (_metric_def, (tuple((f.name, getattr(self, f.name)) for f in _INIT_FIELDS),))
        for need in self.needs:
            if need not in REQUIREMENTS:  # pragma: no cover - a declaration error
                raise ValueError(f"{self.name}: unknown requirement {need!r}")

    @property
    def per_user_of_item_groups(self) -> bool:
        """Whether this is a per-user metric of the item groups: it needs
        ``item_groups`` and has a value per user (``kind`` is not
        ``aggregate``), so its values are per user (intervals, tests, the
        report's distribution of per-user values), not columns of
        ``Result.item_groups``.

        Example:
            >>> REGISTRY["miscalibration"].per_user_of_item_groups
            True
            >>> REGISTRY["exposure"].per_user_of_item_groups  # an aggregate
            False
        """
        return "item_groups" in self.needs and self.kind != "aggregate"

    def requirements(self, k: int | None, params: Mapping[str, Any]) -> tuple[str, ...]:
        """Everything this metric needs at cut-off ``k`` with these parameters
        (keys of :data:`REQUIREMENTS`): its ``needs``, a cut-off when it has
        none, and what its parameter values need.

        Example:
            >>> REGISTRY["precision"].requirements(5, {"denominator": "recommended"})
            ('ratings',)
            >>> REGISTRY["personalization"].requirements(None, {})
            ('cutoff',)
        """
        out = list(self.needs)
        if self.needs_cutoff and k is None:
            out.append("cutoff")
        if self.door is not None:
            out.append(DOORS[self.door].needs)
        for p in self.params:
            value = params.get(p.name, p.default)
            out += [need for v, need in p.needs if v == value]
        return tuple(dict.fromkeys(out))

    def check_data(self, params: Mapping[str, Any], stats: Mapping[str, float]) -> str | None:
        """Why these parameter values do not fit the data (``stats``: e.g.
        ``{"max_grade": 4.0}``), or None when they do."""
        for p in self.params:
            value = params.get(p.name)
            if p.at_least is None or value is None or p.at_least not in stats:
                continue
            floor = stats[p.at_least]
            if value < floor:
                return f"{p.name}={value:g} is below {STATISTICS[p.at_least]} ({floor:g})"
        return None

    def check_params(self, params: Mapping[str, Any]) -> str | None:
        """Why these parameter values (the non-default ones) do not go together,
        or None: a parameter that applies only with another's values
        (``ParamDef.only_with``), and a correction's neutral parameters."""
        for name in params:
            rule = self.param_map[name].only_with
            if rule is None:
                continue
            other, allowed = rule
            value = params.get(other, self.param_map[other].default)
            if value not in allowed:
                shown = " or ".join(f"{other}={v}" for v in allowed)
                return f"{name}= applies only with {shown}"
        if params.get("weighting", "none") != "none":
            for name, value in _UNWEIGHTED_VIEWS.items():
                if params.get(name) == value:
                    return f"weighting= does not go with {name}={value}: leave one out"
            if params.get("correction", "none") != "none":
                return "weighting= does not go with correction=: leave one out"
        correction = params.get("correction", "none")
        if correction != "none":
            neutral = C.NEUTRAL.get(self.name, {})
            for name, value in params.items():
                if name in ("correction", "gamma"):
                    continue
                allowed = neutral.get(name, ())
                if allowed is not None and value not in allowed:
                    return (
                        f"correction={correction} estimates the metric of each held-out item at "
                        f"its full-catalog rank, where {name}={value} has no part: leave it out"
                    )
        return None

    def summarise(self, mean: float) -> float:
        """The summary of a mean of per-user values (see ``summary_of_mean``)."""
        if self.summary_of_mean is None or math.isnan(mean):
            return mean
        return self.summary_of_mean(mean)

    def compute(self, batch: Batch, k: int | None, params: Mapping[str, Any]) -> np.ndarray:
        """Run the kernel on a batch with defaults filled in."""
        full = {p.name: params.get(p.name, p.default) for p in self.params}
        return self.kernel(batch, k, **full)


_INIT_FIELDS = tuple(f for f in fields(MetricDef) if f.init)


def _metric_def(declared: tuple[tuple[str, Any], ...]) -> MetricDef:
    """A :class:`MetricDef` unpickled."""
    return MetricDef(**dict(declared))


def _positive(x: float) -> bool:
    return x > 0


_GAIN = ParamDef(
    "gain",
    str,
    "linear",
    "gain of a grade g: g (linear), 2^g − 1 (exp) or 1 (binary)",
    choices=("linear", "exp", "binary"),
)
_GRADES = ParamDef(
    "grades",
    str,
    "relevant",
    "which grades give gain: those of relevant items (grade >= threshold), or every "
    "grade > 0 whatever the threshold (trec_eval's nDCG under -l)",
    choices=("relevant", "positive"),
    needs=(("positive", "positive_grades"),),
)
_DISCOUNT = ParamDef(
    "discount",
    str,
    "log",
    "position discount: 1 / log(i + 1), or Järvelin & Kekäläinen's 1 / max(1, log i) "
    "(ranks 1 and 2 undiscounted; LensKit)",
    choices=("log", "jarvelin"),
)
_BETA = ParamDef(
    "beta",
    float,
    1.0,
    "weight of recall relative to precision",
    check=_positive,
    check_text="a number > 0",
)

_CORRECTION = ParamDef(
    "correction",
    str,
    "none",
    "the lists rank sampled candidates: estimate the full-catalog value from the sampled "
    "ranks (rank: rank estimation; bv: the bias-variance trade-off; min_bias: bv with gamma 0; "
    "Krichene & Rendle 2020, docs/sampled.md); needs catalog_size=",
    choices=S.CORRECTIONS,
    needs=tuple((c, "catalog_size") for c in S.CORRECTIONS if c != "none"),
)
_GAMMA = ParamDef(
    "gamma",
    float,
    S.DEFAULT_GAMMA,
    "the weight of the variance against the bias in correction=bv",
    check=lambda x: 0.0 <= x <= 1.0,
    check_text="a number in [0, 1]",
    only_with=("correction", ("bv",)),
)


#: an empty list's value: 0, or NaN (LensKit's Precision and AveragePrecision)
_EMPTY = ParamDef(
    "empty",
    str,
    "zero",
    "an empty list (no item in the top k): 0, or NaN, left out of the mean (LensKit)",
    choices=("zero", "nan"),
)


#: which listed items may be hits: any, or those scored > 0 (torchmetrics)
_SCORES = ParamDef(
    "scores",
    str,
    "any",
    "which listed items may be hits: any, or only those scored > 0 (torchmetrics' "
    "precision, recall, AP and RR); without a score column every item counts",
    choices=("any", "positive"),
    needs=(("positive", "positive_scores"),),
)


#: equal scores: in the list's order, or sharing their gains (torchmetrics' nDCG)
_TIED = ParamDef(
    "tied",
    str,
    "order",
    "items of equal score: gain by their place in the list's order, or each the mean gain "
    "of its group of equal scores (sklearn's and torchmetrics' tie-averaged DCG)",
    choices=("order", "average"),
    needs=(("average", "score_ties"),),
)


#: inverse-propensity weighting of the relevant pairs (docs/counterfactual-metrics.md)
_WEIGHTING = ParamDef(
    "weighting",
    str,
    "none",
    "each relevant (user, item) pair weighted by 1/p, its propensity (propensities=): none, "
    "ips (inverse propensity scoring), or snips (self-normalised: each user's weights scaled "
    "to sum to R; Yang et al. 2018)",
    choices=K.WEIGHTINGS,
    needs=(("ips", "propensities"), ("snips", "propensities")),
)
_CLIP = ParamDef(
    "clip",
    float,
    0.0,
    "the smallest propensity allowed: p below it counts as clip (weight at most 1/clip); "
    "the pairs clipped are counted (relevant_pairs_clipped_at_CLIP)",
    check=lambda x: 0.0 <= x <= 1.0,
    check_text="a number in [0, 1]",
    only_with=("weighting", ("ips", "snips")),
)
#: the parameter values under which the list's hits are not the relevant items as
#: they are, which weighting does not read (a view without the weights)
_UNWEIGHTED_VIEWS = {
    "scores": "positive",
    "grades": "positive",
    "tied": "average",
}


def _corrected(kernel: Callable[..., np.ndarray], family: str) -> Callable[..., np.ndarray]:
    """The kernel, or with ``correction=`` the full-catalog estimate from the
    sampled ranks (:func:`receval.metrics.kernels.corrected.estimate`)."""

    def run(
        b: Batch,
        k: int | None,
        *,
        correction: str = "none",
        gamma: float = S.DEFAULT_GAMMA,
        **params: Any,
    ) -> np.ndarray:
        if correction == "none":
            return kernel(b, k, **params)
        return C.estimate(b, k, family, correction, gamma)

    run.__name__ = kernel.__name__
    run.__doc__ = (kernel.__doc__ or "") + (
        "\n\nWith ``correction=`` (sampled evaluation): the estimate of the full-catalog "
        "value from the sampled ranks (receval.metrics.kernels.corrected)."
    )
    return run


_DEFS: tuple[MetricDef, ...] = (
    MetricDef(
        name="precision",
        aliases=("p", "prec"),
        description="share of the first k positions holding a relevant item",
        formula="hits@k / k  (denominator=retrieved: hits@k / min(k, n); no k: hits / n)",
        kernel=_corrected(K.precision, "precision"),
        params=(
            ParamDef(
                "denominator",
                str,
                "k",
                "what hits are divided by: k, min(k, n), or the recommended items of the top k "
                "(explicit-feedback input)",
                choices=("k", "retrieved", "recommended"),
                needs=(("recommended", "ratings"),),
            ),
            _EMPTY,
            _SCORES,
            _CORRECTION,
            _GAMMA,
            _WEIGHTING,
            _CLIP,
        ),
        undefined="users without relevant items (empty_truth policy); with empty=nan, empty "
        "lists (NaN), and with denominator=recommended lists recommending nothing (NaN)",
        notes="A list shorter than k still divides by k (denominator=k).",
    ),
    MetricDef(
        name="recall",
        aliases=("r", "rec"),
        description="share of the user's relevant items found in the first k positions",
        formula="hits@k / R (min(k, R) with denominator=min_k_relevant)",
        kernel=_corrected(K.recall, "recall"),
        params=(
            ParamDef(
                "denominator",
                str,
                "relevant",
                "what hits are divided by: R, or min(k, R) (LensKit)",
                choices=("relevant", "min_k_relevant"),
            ),
            _SCORES,
            _CORRECTION,
            _GAMMA,
            _WEIGHTING,
            _CLIP,
        ),
    ),
    MetricDef(
        name="f1",
        aliases=("f", "fscore", "f_score", "f_measure"),
        description="harmonic mean of precision@k and recall@k (F-beta with beta)",
        formula="(1 + β²)·P·R / (β²·P + R), 0 when P = R = 0",
        kernel=K.f1,
        params=(_BETA,),
    ),
    MetricDef(
        name="hit_rate",
        aliases=("hr", "hit", "success"),
        description="1 if at least one relevant item is in the first k positions",
        formula="1 if hits@k > 0 else 0",
        kernel=_corrected(K.hit_rate, "hit_rate"),
        params=(_CORRECTION, _GAMMA, _WEIGHTING, _CLIP),
        notes="`hits` is not an alias: it is the count hits@k (ranx's hits).",
    ),
    MetricDef(
        name="hits",
        aliases=("hit_count", "num_rel_ret"),
        description="number of relevant items in the first k positions",
        formula="hits@k = Σ_{i≤min(k,n)} rel_i",
        kernel=K.hits,
        bounds=(0.0, math.inf),
        notes="ranx's hits@k; hit_rate is 1 when it is > 0. trec_eval's num_rel_ret is hits "
        "(its `all` line is the sum: the mean times the users evaluated).",
    ),
    MetricDef(
        name="ap",
        aliases=("map", "average_precision"),
        description="average precision: precision at each relevant position, averaged",
        formula="Σ_{i≤min(k,n)} rel_i · precision@i / D, D = min(k, R) (R without k); 0 when D = 0",
        kernel=_corrected(K.average_precision, "ap"),
        params=(
            ParamDef(
                "denominator",
                str,
                "min_k_relevant",
                "D: min(k, R), R, hits@k, min(k, n), k, or min(k, n, R)",
                choices=(
                    "min_k_relevant",
                    "relevant",
                    "hits",
                    "retrieved",
                    "k",
                    "min_retrieved_relevant",
                ),
            ),
            _EMPTY,
            _SCORES,
            _CORRECTION,
            _GAMMA,
            _WEIGHTING,
            _CLIP,
        ),
        undefined="users without relevant items (empty_truth policy); with empty=nan, empty "
        "lists (NaN)",
        notes="trec_eval's map_cut divides by R (denominator=relevant); some papers by hits.",
    ),
    MetricDef(
        name="rr",
        aliases=("mrr", "reciprocal_rank", "recip_rank"),
        description="reciprocal rank of the first relevant item within k",
        formula="1 / (position of the first relevant item ≤ k); 0 if none",
        kernel=_corrected(K.reciprocal_rank, "rr"),
        params=(_SCORES, _CORRECTION, _GAMMA),
    ),
    MetricDef(
        name="r_precision",
        aliases=("rprec", "r_prec", "rprecision"),
        description="precision at R, the user's number of relevant items",
        formula="hits@s / s, s = ⌊mult·R + 0.9⌋ (R for mult = 1); with @k: s = min(k, s)",
        kernel=K.r_precision,
        params=(
            ParamDef(
                "mult",
                float,
                1.0,
                "precision at a multiple of R, rounded as trec_eval's Rprec_mult does "
                "(⌊mult·R + 0.9⌋)",
                check=_positive,
                check_text="a number > 0",
            ),
        ),
    ),
    MetricDef(
        name="dcg",
        description="discounted cumulative gain of the first k positions",
        formula="Σ_{i≤min(k,n)} gain(g_i) / log_base(i + 1); gain = g (linear), 2^g − 1 (exp) "
        "or 1 (binary)",
        kernel=K.dcg,
        params=(
            _GAIN,
            ParamDef(
                "base",
                float,
                2.0,
                "base of the logarithm in the discount",
                check=lambda x: x > 1,
                check_text="a number > 1",
            ),
            _GRADES,
            _DISCOUNT,
            _TIED,
            _WEIGHTING,
            _CLIP,
        ),
        bounds=(0.0, math.inf),
        graded=True,
    ),
    MetricDef(
        name="ndcg",
        description="DCG@k divided by the DCG@k of the ideal ordering",
        formula="dcg@k / idcg@k, ideal = the user's relevant grades sorted descending, cut at k; "
        "0 when idcg = 0",
        kernel=_corrected(K.ndcg, "ndcg"),
        params=(
            _GAIN,
            ParamDef(
                "ideal",
                str,
                "relevant",
                "ideal list: all relevant items of the truth, the retrieved top k re-sorted, "
                "or k items at the user's top grade whatever R",
                choices=("relevant", "retrieved", "k"),
            ),
            _GRADES,
            _DISCOUNT,
            _TIED,
            _CORRECTION,
            _GAMMA,
            ParamDef(
                "zero_ideal",
                str,
                "zero",
                "a user with relevant items whose ideal DCG is exactly 0 (gains of 0 or below): "
                "0, or dcg / 0 as IEEE arithmetic gives it, NaN (0/0) or ±inf "
                "(LensKit 2025.8's NDCG(gain=...))",
                choices=("zero", "divide"),
                only_with=("gain", ("linear", "exp")),
            ),
            _WEIGHTING,
            _CLIP,
        ),
        graded=True,
        notes="The log base cancels out in nDCG, so it is not a parameter.",
    ),
    MetricDef(
        name="rbp",
        description="rank-biased precision: a patient user stops after each item with 1 − p",
        formula="(1 − p) Σ_{i≤min(k,n)} (g_i / g_max,u) · p^(i−1), g_max,u = the user's top grade",
        kernel=K.rbp,
        params=(
            ParamDef(
                "p",
                float,
                0.8,
                "persistence: chance of looking at the next item",
                check=lambda x: 0 < x < 1,
                check_text="a number in (0, 1)",
            ),
            _GRADES,
        ),
        graded=True,
        notes="trec_eval's rbp is rbp[p=0.9,grades=positive] (its gains are the grades, "
        "divided by the query's top grade when that is above 1; m_rbp.c).",
    ),
    MetricDef(
        name="err",
        description="expected reciprocal rank (cascade model over graded relevance)",
        formula="Σ_{r≤min(k,n)} (1/r) · R_r · Π_{i<r} (1 − R_i), R_i = (2^g_i − 1) / 2^g_max",
        kernel=K.err,
        params=(
            ParamDef(
                "max_grade",
                float,
                None,
                "g_max; default: the largest grade in the truth",
                check=_positive,
                check_text="a number > 0",
                at_least="max_grade",
            ),
        ),
        graded=True,
    ),
    MetricDef(
        name="auc",
        aliases=("roc_auc",),
        description="share of (relevant, non-relevant) pairs in the list ordered correctly",
        formula="#{(i, j): i relevant, j not, i ranked above j} / (P·N), score ties count ½",
        kernel=K.auc,
        needs_ties=True,
        undefined="users without relevant items (empty_truth policy), and lists without both "
        "a relevant and a non-relevant item (NaN)",
    ),
)


_ROUNDING = ParamDef(
    "rounding",
    str,
    "nearest",
    "how c = recall·R is rounded: to the nearest (trec_eval 10's lround) or ⌊recall·R + 0.9⌋ "
    "(trec9: trec_eval 9 and pytrec_eval, which bundles trec_eval 9.0.8)",
    choices=("nearest", "trec9"),
)


#: interpolated precision of a list given empty: 0, or trec_eval's 0/0
_IPREC_EMPTY = ParamDef(
    "empty",
    str,
    "zero",
    "a list given empty (no item in the top k): 0, or NaN at the recall levels whose c is 0 "
    "(trec_eval's num_rel_ret / num_ret = 0/0, m_iprec_at_recall.c); a user without a list "
    "(missing_recs='zero', trec_eval's -c) stays 0",
    choices=("zero", "nan"),
)


def _geometric_ap(b: Batch, k: int | None, *, denominator: str = "relevant") -> np.ndarray:
    """ln(max(ap, 1e-5)): per user, the log whose mean's exp is GMAP."""
    return T.geometric(K.average_precision(b, k, denominator=denominator))


def _geometric_bpref(b: Batch, k: int | None) -> np.ndarray:
    """ln(max(bpref, 1e-5)): per user, the log whose mean's exp is the geometric mean."""
    return T.geometric(T.bpref(b, k))


_GEOMETRIC = (
    "The per-user value is ln(max(v, 1e-5)) (trec_eval keeps it so, MIN_GEO_MEAN); the summary "
    "is the exponential of their mean, the geometric mean."
)
_JUDGED = (
    "Judged: in the user's truth with a grade >= 0 (relevant or not); unjudged: not in the "
    "truth, or pooled but unjudged (a negative grade, negative_grades='unjudged')."
)
_COUNT = "trec_eval's `all` line is the sum over queries: the mean times the users evaluated."

# Measures from trec_eval (and ir_measures) that read judgments or whole sets
_DEFS += (
    MetricDef(
        name="n_retrieved",
        aliases=("num_ret", "numret"),
        description="items in the list's first k positions",
        formula="min(k, n)",
        kernel=T.n_retrieved,
        bounds=(0.0, math.inf),
        needs_truth=False,
        undefined="never (an empty list retrieves 0)",
        notes=_COUNT,
    ),
    MetricDef(
        name="n_relevant",
        aliases=("num_rel", "numrel"),
        description="the user's relevant items, R",
        formula="R",
        kernel=T.n_relevant,
        bounds=(0.0, math.inf),
        notes=_COUNT,
    ),
    MetricDef(
        name="judged_nonrelevant",
        aliases=("num_nonrel_judged_ret",),
        description="judged non-relevant items in the first k positions",
        formula="#{i ≤ min(k, n): item i judged, not relevant}",
        kernel=T.judged_nonrelevant,
        bounds=(0.0, math.inf),
        reads_judged=True,
        notes=_JUDGED + " " + _COUNT,
    ),
    MetricDef(
        name="judged",
        description="share of the items in the first k positions that are judged",
        formula="#{i ≤ min(k, n): item i judged} / min(k, n) (n without k)",
        kernel=T.judged,
        reads_judged=True,
        notes=_JUDGED + " ir_measures' Judged@k (its judged provider: a list shorter than k "
        "divides by its length); ir_measures counts any document of the qrels as judged, "
        "a negative label too, which negative_grades='unjudged' reads as not judged.",
    ),
    MetricDef(
        name="unjudged",
        aliases=("unj",),
        description="share of the first k positions holding an unjudged item",
        formula="#{i ≤ min(k, n): item i unjudged} / k (n without k)",
        kernel=T.unjudged,
        reads_judged=True,
        notes=_JUDGED + " trec_eval's unj_k.",
    ),
    MetricDef(
        name="bpref",
        description="binary preference: how few judged non-relevant items are ranked above "
        "each relevant one",
        formula="(1/R) Σ_{relevant r ≤ min(k, n)} (1 − min(nr_r, R) / min(N, R)); nr_r the judged "
        "non-relevant items above r (a term is 1 when nr_r = 0), N the user's judged "
        "non-relevant items",
        kernel=T.bpref,
        reads_judged=True,
        notes=_JUDGED + " Unjudged items are skipped. Buckley & Voorhees, SIGIR 2004; "
        "trec_eval's m_bpref.c.",
    ),
    MetricDef(
        name="gm_bpref",
        description="bpref, for a geometric mean over users",
        formula="ln(max(bpref, 1e-5)); summary: exp of the mean",
        kernel=_geometric_bpref,
        summary_of_mean=math.exp,
        bounds=(math.log(T.GEO_FLOOR), 0.0),
        reads_judged=True,
        notes=_GEOMETRIC,
    ),
    MetricDef(
        name="gm_ap",
        aliases=("gm_map", "gmap"),
        description="average precision, for a geometric mean over users (GMAP)",
        formula="ln(max(ap, 1e-5)) with ap's denominator (default R); summary: exp of the mean",
        kernel=_geometric_ap,
        summary_of_mean=math.exp,
        params=(
            ParamDef(
                "denominator",
                str,
                "relevant",
                "D of ap: R, or min(k, R)",
                choices=("relevant", "min_k_relevant"),
            ),
        ),
        bounds=(math.log(T.GEO_FLOOR), 0.0),
        notes=_GEOMETRIC + " Robertson 2006; trec_eval's m_gm_map.c.",
    ),
    MetricDef(
        name="infap",
        aliases=("inf_ap",),
        description="inferred average precision from a sampled judgment pool",
        formula="(1/R) Σ_{relevant at position j+1 ≤ min(k, n)} [1 if j = 0, else "
        "1/(j+1) + (j/(j+1))·((r+d+u)/j)·((r+ε)/(r+d+2ε))]; r, d, u the relevant, judged "
        "non-relevant and pooled-unjudged items above it, ε = 1e-5",
        kernel=T.infap,
        reads_judged=True,
        notes=_JUDGED + " Equals AP when every item above a relevant one is judged. "
        "Yilmaz & Aslam, CIKM 2006; trec_eval's m_infap.c.",
    ),
    MetricDef(
        name="relative_precision",
        aliases=("relative_p", "rel_p", "set_relative_p"),
        description="precision over the best precision possible at that size",
        formula="hits@k / min(k, R); without k: hits / min(n, R)",
        kernel=T.relative_precision,
        notes="trec_eval's relative_P_k, and set_relative_P without k.",
    ),
    MetricDef(
        name="set_ap",
        aliases=("set_map",),
        description="unranked average precision of the set retrieved: recall times precision",
        formula="hits@k² / (min(k, n) · R)",
        kernel=T.set_ap,
        notes="trec_eval's set_map (without k).",
    ),
    MetricDef(
        name="utility",
        description="linear utility of the set retrieved",
        formula="rel_ret·hits@k + nonrel_ret·(min(k, n) − hits@k) + rel_nonret·(R − hits@k)",
        kernel=T.utility,
        params=(
            ParamDef("rel_ret", float, 1.0, "worth of a relevant item retrieved"),
            ParamDef("nonrel_ret", float, -1.0, "worth of a non-relevant item retrieved"),
            ParamDef("rel_nonret", float, 0.0, "worth of a relevant item not retrieved"),
        ),
        bounds=(-math.inf, math.inf),
        notes="trec_eval's utility.a,b,c,d without d (non-relevant items not retrieved: it "
        "needs the collection's size, which trec_eval takes as 0 unless told).",
    ),
    MetricDef(
        name="bin_g",
        aliases=("bing",),
        description="binary G: each relevant item discounted by the non-relevant items above it",
        formula="(1/R) Σ_{relevant r ≤ min(k, n)} 1 / log2(2 + non-relevant items above r)",
        kernel=T.bin_g,
        notes="trec_eval's binG (m_binG.c).",
    ),
    MetricDef(
        name="rbp_residual",
        aliases=("rbp_resid",),
        description="how much RBP could still grow if every unjudged item were relevant",
        formula="p^n + (1 − p) Σ_{unjudged i ≤ min(k, n)} p^(i−1) when an item is unjudged, else 0",
        kernel=T.rbp_residual,
        params=(
            ParamDef(
                "p",
                float,
                0.8,
                "persistence: chance of looking at the next item",
                check=lambda x: 0 < x < 1,
                check_text="a number in (0, 1)",
            ),
        ),
        reads_judged=True,
        notes=_JUDGED + " Moffat & Zobel 2008; trec_eval's rbp_resid (m_rbp_resid.c).",
    ),
    MetricDef(
        name="iprec",
        aliases=("iprec_at_recall", "ip"),
        description="interpolated precision at a recall level",
        formula="max_{j ≥ i_c} hits@j / j, i_c the position of the c-th relevant item, "
        "c = round(recall · R) (the first for c = 0); 0 when the list has fewer than c",
        kernel=T.iprec,
        params=(
            ParamDef(
                "recall",
                float,
                0.0,
                "the recall level",
                check=lambda x: 0.0 <= x <= 1.0,
                check_text="a number in [0, 1]",
            ),
            _ROUNDING,
            _IPREC_EMPTY,
        ),
        notes="trec_eval's iprec_at_recall_x (m_iprec_at_recall.c); ir_measures' IPrec@x.",
    ),
    MetricDef(
        name="iprec_avg",
        aliases=("eleven_point",),
        description="mean interpolated precision at the recall levels 0, 0.1, ..., 1",
        formula="(1/11) Σ_{x ∈ {0, 0.1, ..., 1}} iprec[recall=x]",
        kernel=T.iprec_avg,
        params=(_ROUNDING, _IPREC_EMPTY),
        notes="trec_eval's 11pt_avg (m_11pt_avg.c; the name `11pt_avg` parses too).",
    ),
)

_GAIN_LEVELS = (
    "Gains are the grades (trec_eval's default gains, its relevance levels; grades=positive "
    "counts every grade > 0, as trec_eval does); the whole list and the whole ideal are "
    "read, so there is no @k."
)
_DEFS += (
    MetricDef(
        name="g",
        description="normalised gain: each item's gain discounted by how far the list's "
        "gain so far lags the ideal's",
        formula="(1 / Σ ideal gains) Σ_i g_i / log2(2 + C_i − S_i), C_i = Σ_{j≤i} max(ideal "
        "gain at j, 1), S_i = Σ_{j≤i} g_j",
        kernel=T.g,
        params=(_GRADES,),
        graded=True,
        takes_cutoff=False,
        notes=_GAIN_LEVELS + " trec_eval's G (m_G.c); with binary grades it is bin_g.",
    ),
    MetricDef(
        name="ndcg_rel",
        description="nDCG averaged over the user's items with gain > 0",
        formula="(1/R') [Σ_{retrieved, gain > 0} DCG@i / IDCG@i + (R' − their number) · "
        "DCG@n / IDCG], R' the items with gain > 0",
        kernel=T.ndcg_rel,
        params=(_GRADES,),
        graded=True,
        takes_cutoff=False,
        notes=_GAIN_LEVELS + " trec_eval's ndcg_rel (m_ndcg_rel.c).",
    ),
    MetricDef(
        name="rndcg",
        aliases=("r_ndcg",),
        description="nDCG averaged at the user's R-levels (where the ideal's gain changes)",
        formula="mean over b ∈ {after each grade of the ideal} ∪ {n if n > R' + 1} of "
        "DCG@min(b, n) / IDCG@b; 0 when R = 0",
        kernel=T.rndcg,
        params=(_GRADES,),
        graded=True,
        takes_cutoff=False,
        notes=_GAIN_LEVELS + " trec_eval's Rndcg (m_Rndcg.c).",
    ),
)

_EMPTY_LIST = (
    "empty lists (NaN); users the user policies leave out are left out here too (a user "
    "they score 0 keeps the value of its list: the metric describes the list, not the truth)"
)
_AGGREGATE = "one value over the top-k lists of the users evaluated; no per-user value"

_DEFS += (
    MetricDef(
        name="novelty",
        needs_truth=False,
        description="how unknown the recommended items are: self-information of popularity",
        formula="mean over the top-k items of −log2(pop(i) / |training users|)",
        kernel=B.novelty,
        bounds=(0.0, math.inf),
        needs=("train",),
        undefined=_EMPTY_LIST,
        notes="pop(i) = distinct training users with item i; items never seen in training: 1.",
    ),
    MetricDef(
        name="arp",
        needs_truth=False,
        aliases=("average_recommendation_popularity", "avg_pop"),
        description="average popularity of the recommended items",
        formula="mean over the top-k items of pop(i)",
        kernel=B.arp,
        params=(
            ParamDef(
                "unseen",
                float,
                1.0,
                "pop(i) of an item never seen in training: 1, or 0 as RecBole counts it",
                check=lambda x: x >= 0,
                check_text="a number >= 0",
            ),
            ParamDef(
                "count",
                str,
                "pairs",
                "what pop(i) counts: distinct training users of the item (pairs), or its "
                "training rows, repeated (user, item) pairs included (rows, as RecBole)",
                choices=("pairs", "rows"),
            ),
        ),
        bounds=(0.0, math.inf),
        higher_is_better=False,
        needs=("train",),
        undefined=_EMPTY_LIST,
    ),
    MetricDef(
        name="long_tail",
        needs_truth=False,
        aliases=("long_tail_share", "tail", "tail_percentage"),
        description="share of recommended items in the long tail of training popularity",
        formula="share of the top-k items in the tail: outside the most popular training items "
        "that together hold `head` (80%) of the training interactions (rule=head), or "
        "RecBole's TailPercentage (rule=ratio): the max(int(n × ratio), 1) least popular of "
        "the n training items (ratio ≤ 1), or those with at most `ratio` interactions "
        "(ratio > 1)",
        kernel=B.long_tail,
        params=(
            ParamDef(
                "head",
                float,
                0.8,
                "share of training interactions held by the short head (rule=head)",
                check=lambda x: 0 < x <= 1,
                check_text="a number in (0, 1]",
            ),
            ParamDef(
                "rule",
                str,
                "head",
                "how the tail is chosen: outside the short head (head), or the least popular "
                "training items (ratio, RecBole's TailPercentage)",
                choices=("head", "ratio"),
            ),
            ParamDef(
                "ratio",
                float,
                0.1,
                "rule=ratio: the share of training items in the tail (≤ 1), or the most "
                "interactions of a tail item (> 1)",
                check=_positive,
                check_text="a number > 0",
                only_with=("rule", ("ratio",)),
            ),
            ParamDef(
                "count",
                str,
                "pairs",
                "what an interaction is: a distinct (user, item) pair of the training data "
                "(pairs), or a training row, repeated pairs included (rows, as RecBole)",
                choices=("pairs", "rows"),
            ),
        ),
        needs=("train",),
        undefined=_EMPTY_LIST,
        notes="Interactions are counted as distinct (user, item) pairs of the training data "
        "unless count=rows; ties in popularity at the tail's edge are broken by item id. "
        "Items never seen in training are in the tail under rule=head, never under "
        "rule=ratio (RecBole). The share divides by the list's length within k.",
    ),
    MetricDef(
        name="serendipity",
        description="relevant recommendations that are not popular, per list slot",
        formula="|top-k ∩ (relevant \\ popular)| / k",
        kernel=B.serendipity,
        params=(
            ParamDef(
                "top",
                float,
                0.1,
                "share of catalog items that count as popular when no popular set is given",
                check=lambda x: 0 <= x <= 1,
                check_text="a number in [0, 1]",
            ),
        ),
        needs=("popular",),
        notes="popular = the items given with popular=, else the top `top` share of catalog "
        "items by training popularity (ties by item id).",
    ),
    MetricDef(
        name="ild",
        needs_truth=False,
        aliases=("intra_list_diversity", "diversity"),
        description="intra-list diversity: how different the recommended items are",
        formula="1 − mean over pairs of top-k items of sim(i, j); cosine of feature vectors, "
        "or Jaccard of category sets",
        kernel=B.ild,
        bounds=(0.0, 2.0),
        needs=("item_features",),
        undefined="lists with fewer than 2 items with features (NaN); users the user policies "
        "leave out are left out here too (a user they score 0 keeps the value of its list)",
        notes="Items without features (not in item_features, or given an all-zero vector or "
        "an empty category set) are left out of the pairs; Result.notes says how many users "
        "that leaves undefined.",
    ),
    MetricDef(
        name="user_coverage",
        needs_truth=False,
        description="share of users whose list has at least k items",
        formula="1 if n ≥ min_items (default k; 1 without k) else 0, averaged over users",
        kernel=B.user_coverage,
        undefined="never (an empty list scores 0); users the user policies leave out are left "
        "out here too (a user they score 0 keeps the value of its list)",
        params=(
            ParamDef(
                "min_items",
                int,
                None,
                "list length required (default: k)",
                check=lambda x: x >= 1,
                check_text="an integer ≥ 1",
            ),
        ),
    ),
    MetricDef(
        name="coverage",
        needs_truth=False,
        aliases=("catalog_coverage", "item_coverage"),
        description="share of the catalog recommended to at least one user",
        formula="|{catalog items in at least one top-k list}| / |catalog|",
        kernel=B.coverage,
        kind="aggregate",
        needs=("catalog",),
        undefined=_AGGREGATE,
        per_item_group=True,
    ),
    MetricDef(
        name="prediction_coverage",
        needs_truth=False,
        description="share of (user, catalog item) pairs that were recommended",
        formula="Σ_u |top-k list of u ∩ catalog| / (users × |catalog|)",
        kernel=B.prediction_coverage,
        kind="aggregate",
        needs=("catalog",),
        undefined=_AGGREGATE,
        per_item_group=True,
    ),
    MetricDef(
        name="gini",
        needs_truth=False,
        aliases=("gini_index",),
        description="inequality of exposure across catalog items (0 equal, → 1 concentrated)",
        formula="Σ_i (2i − n − 1) x_(i) / (n Σ x), x = list counts of the n catalog items "
        "sorted ascending (never shown: 0)",
        kernel=B.gini,
        kind="aggregate",
        higher_is_better=False,
        needs=("catalog",),
        undefined=_AGGREGATE,
        per_item_group=True,
    ),
    MetricDef(
        name="entropy",
        needs_truth=False,
        aliases=("shannon_entropy",),
        description="Shannon entropy (bits) of how exposure spreads over recommended items",
        formula="−Σ_i p_i log2 p_i, p_i = share of all top-k slots holding item i; base=e: "
        "ln; divide=items: divided by the number of distinct recommended items (RecBole)",
        kernel=B.entropy,
        kind="aggregate",
        params=(
            ParamDef(
                "base",
                str,
                "2",
                "logarithm: 2 (bits) or e (nats, as RecBole's ShannonEntropy)",
                choices=("2", "e"),
            ),
            ParamDef(
                "divide",
                str,
                "none",
                "divide the entropy by nothing (none), or by the number of distinct "
                "recommended items (items, as RecBole's ShannonEntropy)",
                choices=("none", "items"),
            ),
        ),
        bounds=(0.0, math.inf),
        undefined=_AGGREGATE,
        notes="The slots counted are the filled ones: a list shorter than k adds fewer "
        "(RecBole's lists are always k long, users × k slots).",
        per_item_group=True,
    ),
    MetricDef(
        name="personalization",
        needs_truth=False,
        description="how different users' lists are from each other",
        formula="1 − mean over pairs of users of |L_u ∩ L_v| / k, from item counts c_i: "
        "Σ_pairs |L_u ∩ L_v| = Σ_i c_i (c_i − 1) / 2",
        kernel=B.personalization,
        kind="aggregate",
        needs_cutoff=True,
        undefined=_AGGREGATE + "; NaN with fewer than 2 users; needs a cut-off @k",
    ),
)

# Item groups (item_groups=): exposure, parity, calibration (docs/groups.md).
_GROUP_AGGREGATE = (
    "one value over the top-k lists of the users evaluated; no per-user value; groups "
    "whose P has a zero denominator are left out"
)
_ATTENTION = (
    ParamDef(
        "discount",
        str,
        "log",
        "attention a user gives rank r: 1 / log2(r + 1) (log, DCG's), 1 / log2(max(r, 2)) "
        "(trec, TREC Fair Ranking's), patience^(r − 1) (geometric, RBP's) or 1 (none)",
        choices=("log", "trec", "geometric", "none"),
    ),
    ParamDef(
        "patience",
        float,
        0.5,
        "the geometric discount's probability of looking at the next rank",
        check=lambda x: 0 < x < 1,
        check_text="a number in (0, 1)",
    ),
)

_DEFS += (
    MetricDef(
        name="rsp",
        needs_truth=False,
        aliases=("ranking_statistical_parity",),
        description="ranking-based statistical parity across item groups (0: parity)",
        formula="std / mean over groups g of P(g) = top-k slots holding an item of g / "
        "Σ_u |items of g not in u's train| (Zhu, Wang & Caverlee 2020)",
        kernel=G.rsp,
        kind="aggregate",
        of_item_groups=True,
        tallies=("seen",),
        higher_is_better=False,
        bounds=(0.0, math.inf),
        needs=("item_groups",),
        needs_cutoff=True,
        params=(
            ParamDef(
                "exclude_train",
                bool,
                True,
                "leave each user's training items out of the denominator (the paper's "
                "definition; needs train=)",
                needs=((True, "train"),),
            ),
        ),
        undefined=_GROUP_AGGREGATE,
        notes="Population standard deviation. An item in several groups counts in each.",
    ),
    MetricDef(
        name="reo",
        aliases=("ranking_equal_opportunity",),
        description="ranking-based equal opportunity across item groups (0: parity)",
        formula="std / mean over groups g of P(g) = top-k slots holding a relevant item of g "
        "/ (user, relevant item of g) pairs (Zhu, Wang & Caverlee 2020)",
        kernel=G.reo,
        kind="aggregate",
        of_item_groups=True,
        tallies=("hits", "relevant"),
        higher_is_better=False,
        bounds=(0.0, math.inf),
        needs=("item_groups",),
        needs_cutoff=True,
        undefined=_GROUP_AGGREGATE,
        notes="Population standard deviation. Relevant pairs come from the truth of the "
        "users evaluated, whatever relevant_from says.",
    ),
    MetricDef(
        name="exposure",
        needs_truth=False,
        aliases=("exposure_share",),
        description="share of position-discounted attention that one item group gets",
        formula="Σ_{top-k slots holding an item of g} a(r) / Σ_{all top-k slots} a(r), "
        "a(r) = 1/log2(r + 1) by default (Singh & Joachims 2018)",
        kernel=G.exposure,
        kind="aggregate",
        of_item_groups=True,
        needs=("item_groups",),
        needs_cutoff=True,
        params=(
            ParamDef(
                "group",
                str,
                None,
                "the item group (its name as in item_groups; required)",
                keep_case=True,
            ),
            *_ATTENTION,
        ),
        undefined=_AGGREGATE + "; NaN when no slot is filled",
        notes="Every group's share is in Result.item_groups. An item in several groups "
        "gives its slot's attention to each.",
    ),
    MetricDef(
        name="awrf",
        needs_truth=False,
        aliases=("attention_weighted_rank_fairness",),
        description="attention-weighted rank fairness: how close a list's spread of "
        "attention over the item groups is to a target (1: equal)",
        formula="1 − JSD(ε, t): ε_g ∝ Σ_r a(r) m(i_r, g) over the top-k, m = 1 / (groups "
        "of the item); t uniform or the catalog's; JSD in bits (Sapiezynski et al. 2019; "
        "TREC Fair Ranking 2021-22)",
        kernel=G.awrf,
        needs=("item_groups",),
        params=(
            *_ATTENTION,
            ParamDef(
                "target",
                str,
                "uniform",
                "the fair distribution: every group alike (uniform) or the groups' share of "
                "the catalog's items (catalog)",
                choices=("uniform", "catalog"),
                needs=(("catalog", "catalog"),),
            ),
            ParamDef(
                "base",
                str,
                "2",
                "logarithm of the divergence: 2 (bits; AWRF in [0, 1]) or e (nats; TREC Fair "
                "Ranking's numbers, in [1 − ln 2, 1])",
                choices=("2", "e"),
            ),
        ),
        undefined="lists without an item in a group (NaN); users the user policies leave out "
        "are left out here too (a user they score 0 keeps the value of its list)",
        notes="Items in no group are left out of ε. TREC Fair Ranking 2022: "
        "awrf[discount=trec,base=e] with its own per-topic target.",
    ),
    MetricDef(
        name="miscalibration",
        aliases=("calibration", "c_kl"),
        needs_truth=False,
        description="how far the item groups of a list are from those of the user's history",
        formula="Σ_g p(g|u) ln(p(g|u) / ((1 − α) q(g|u) + α p(g|u))); p: history, q: top-k "
        "(Steck 2018)",
        kernel=G.miscalibration,
        reads_history=True,
        higher_is_better=False,
        bounds=(0.0, math.inf),
        needs=("train", "item_groups"),
        params=(
            ParamDef(
                "alpha",
                float,
                0.01,
                "weight of p in the smoothed q, so that a group of the history missing from "
                "the list costs a finite amount",
                check=lambda x: 0 < x <= 1,
                check_text="a number in (0, 1]",
            ),
            ParamDef(
                "base",
                str,
                "e",
                "logarithm of the divergence: e (nats, Steck's KL) or 2 (bits, as the "
                "widely copied implementations and LibRec)",
                choices=("e", "2"),
            ),
        ),
        undefined="users without a grouped item in their training history (NaN, counted)",
        notes="p(g|i) = 1 / (number of groups of i). Items in no group are left out of both "
        "means; a list without a grouped item gives q = 0.",
    ),
)

# Rating-prediction metrics (SPEC §5): one value over (actual, predicted) pairs.
_PER_USER = ParamDef(
    "per_user",
    bool,
    False,
    "false: one value over all pairs; true: the value of each user, averaged over users "
    "(users with an undefined value left out and counted)",
)
_ERROR_UNDEFINED = "no pairs (NaN)"
_CORR_UNDEFINED = (
    "fewer than 2 pairs, or actual or predicted values all equal (NaN); per user: such users "
    "are left out of the mean and counted"
)

RATING_DEFS: tuple[MetricDef, ...] = (
    MetricDef(
        name="mae",
        aliases=("mean_absolute_error",),
        description="mean absolute error of predicted ratings",
        formula="Σ |a_i − p_i| / n",
        kernel=RK.mae,
        by_user=RK.mae_by_user,
        from_error_sums=RK.mae_from_means,
        params=(_PER_USER,),
        bounds=(0.0, math.inf),
        higher_is_better=False,
        undefined=_ERROR_UNDEFINED,
        kind="rating",
    ),
    MetricDef(
        name="mse",
        aliases=("mean_squared_error",),
        description="mean squared error of predicted ratings",
        formula="Σ (a_i − p_i)² / n",
        kernel=RK.mse,
        by_user=RK.mse_by_user,
        from_error_sums=RK.mse_from_means,
        params=(_PER_USER,),
        bounds=(0.0, math.inf),
        higher_is_better=False,
        undefined=_ERROR_UNDEFINED,
        kind="rating",
    ),
    MetricDef(
        name="rmse",
        aliases=("root_mean_squared_error",),
        description="root mean squared error of predicted ratings",
        formula="sqrt(Σ (a_i − p_i)² / n)",
        kernel=RK.rmse,
        by_user=RK.rmse_by_user,
        from_error_sums=RK.rmse_from_means,
        params=(_PER_USER,),
        bounds=(0.0, math.inf),
        higher_is_better=False,
        undefined=_ERROR_UNDEFINED,
        kind="rating",
        notes="per_user=true averages each user's RMSE (not the square root of the mean MSE).",
    ),
    MetricDef(
        name="r2",
        aliases=("r_squared",),
        description="coefficient of determination of predicted ratings",
        formula="1 − Σ (a_i − p_i)² / Σ (a_i − ā)²",
        kernel=RK.r2,
        by_user=RK.r2_by_user,
        params=(_PER_USER,),
        bounds=(-math.inf, 1.0),
        undefined="all actual values equal, so SS_tot = 0 (NaN); per user also fewer than 2 "
        "pairs; such users are left out of the mean and counted",
        kind="rating",
    ),
    MetricDef(
        name="pearson",
        aliases=("pearson_r",),
        description="Pearson correlation of actual and predicted ratings",
        formula="Σ (a_i − ā)(p_i − p̄) / sqrt(Σ (a_i − ā)² Σ (p_i − p̄)²)",
        kernel=RK.pearson,
        by_user=RK.pearson_by_user,
        params=(_PER_USER,),
        bounds=(-1.0, 1.0),
        undefined=_CORR_UNDEFINED,
        kind="rating",
    ),
    MetricDef(
        name="spearman",
        aliases=("spearman_rho",),
        description="Spearman rank correlation of actual and predicted ratings",
        formula="pearson(rank(a), rank(p)), ties get their average rank",
        kernel=RK.spearman,
        by_user=RK.spearman_by_user,
        params=(_PER_USER,),
        bounds=(-1.0, 1.0),
        undefined=_CORR_UNDEFINED,
        kind="rating",
    ),
    MetricDef(
        name="kendall",
        aliases=("kendall_tau",),
        description="Kendall rank correlation (tau-b) of actual and predicted ratings",
        formula="(C − D) / sqrt((n0 − T_a)(n0 − T_p)), n0 = n(n − 1)/2, T = tied pairs",
        kernel=RK.kendall,
        by_user=RK.kendall_by_user,
        params=(_PER_USER,),
        bounds=(-1.0, 1.0),
        undefined=_CORR_UNDEFINED,
        kind="rating",
        notes="tau-b; per user, users with more than 600 pairs loop in Python "
        "(scipy.stats.kendalltau), the others are vectorized.",
    ),
)

_DEFS += RATING_DEFS

#: the kinds of metric a kernel can be (``MetricDef.kind``)
KINDS: tuple[str, ...] = ("ranking", "aggregate", "rating")
#: the kinds a metric declared outside receval may be (``register_metric``): a rating
#: metric's kernel runs only in ``evaluate_ratings``, whose metrics are receval's own
USER_KINDS: tuple[str, ...] = ("ranking", "aggregate")
#: the entry-point group of metric plugins (``[project.entry-points."receval.metrics"]``)
ENTRY_POINTS = "receval.metrics"
#: a metric's name and aliases: what the metric grammar reads (``name@k[...]``), lower case
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_TYPES = (bool, int, float, str)

_REGISTRY: dict[str, MetricDef] = {}
#: canonical name → declaration of every metric, receval's own first; read-only, and
#: it shows metrics registered later (:func:`register_metric`)
REGISTRY: Mapping[str, MetricDef] = MappingProxyType(_REGISTRY)
_ALIASES: dict[str, str] = {}
#: the names receval itself declares (never replaced nor unregistered)
_BUILT_IN: frozenset[str] = frozenset()
_plugins_loaded = False
#: True while receval registers its own metrics (which may be of every kind)
_BOOTSTRAP = True


def _declaration_error(d: Any, kinds: tuple[str, ...] = USER_KINDS) -> str | None:
    """What is wrong with a declaration offered to :func:`register_metric`, or None
    (``kinds``: those it may be)."""
    if not isinstance(d, MetricDef):
        return f"expected a receval.MetricDef, got {type(d).__name__}"
    for name in (d.name, *d.aliases):
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            return (
                f"the name {name!r} is not a metric name: lower-case letters, digits and "
                "underscores, not starting with a digit"
            )
    if len({d.name, *d.aliases}) != 1 + len(d.aliases):
        return "a name or alias is given twice"
    if d.kind not in kinds:
        return f"kind={d.kind!r}: expected one of " + ", ".join(repr(k) for k in kinds)
    if not callable(d.kernel):
        return "kernel= is not callable"
    lo, hi = d.bounds
    if not lo <= hi:
        return f"bounds={d.bounds!r}: the lower bound is above the upper"
    names = [p.name for p in d.params]
    if len(set(names)) != len(names):
        return "a parameter is declared twice"
    for prm in d.params:
        if not _NAME.fullmatch(prm.name):
            return f"parameter {prm.name!r}: not a parameter name"
        if prm.type not in _TYPES:
            return f"parameter {prm.name!r}: type {prm.type!r} is not bool, int, float or str"
        if prm.default is not None:
            try:
                prm.convert(prm.default)
            except ValueError as e:
                return f"parameter {prm.name!r}: its default {prm.default!r} is refused ({e})"
    return None


def register_metric(definition: MetricDef, *, replace: bool = False) -> MetricDef:
    """Declare a metric: from now on its name (and aliases) work wherever a metric
    name does, through every door and engine (``evaluate``, streamed files, Spark,
    the ``Accumulator``, ``compare``, ``report``, groups, the command line with
    ``--plugin``, ``receval metrics`` and ``explain``).

    receval's own metrics are registered by this function too, at import.

    Args:
        definition: the declaration (:class:`MetricDef`). Its ``kernel`` is called
            as ``kernel(batch, k, **params)`` for ``kind="ranking"`` (a
            :class:`~receval.metrics.kernels.batch.Batch` of users; one float per
            user, NaN where undefined) and ``kernel(exposure, **params)`` for
            ``kind="aggregate"`` (an :class:`~receval.metrics.kernels.beyond.Exposure`;
            one float), every parameter given, defaults filled in.
        replace: let a metric of the same name registered earlier (not one of
            receval's own) be replaced: a notebook re-running its cell.

    Returns:
        The definition, as registered.

    Raises:
        MetricError: the declaration is malformed (what is wrong is said), or a
            name or alias is taken.

    Example:
        >>> import numpy as np
        >>> def first_relevant_at_1(batch, k):  # 1 if the top item is relevant
        ...     return (batch.hits_at(1) > 0).astype(np.float64)
        >>> d = register_metric(MetricDef(
        ...     name="top1_hit", description="the first item is relevant",
        ...     formula="[rel_1]", kernel=first_relevant_at_1))
        >>> import receval
        >>> receval.evaluate({"u": [3, 1]}, {"u": [3]}, ["top1_hit"]).summary
        {'top1_hit': 1.0}
        >>> unregister_metric("top1_hit")
    """
    from receval.errors import MetricError

    why = _declaration_error(definition, KINDS if _BOOTSTRAP else USER_KINDS)
    if why is not None:
        name = getattr(definition, "name", definition)
        raise MetricError(f"cannot register the metric {name!r}: {why}")
    old = _REGISTRY.get(definition.name)
    if old is not None and (definition.name in _BUILT_IN or not replace):
        whose = "receval's own" if definition.name in _BUILT_IN else "registered already"
        hint = "" if definition.name in _BUILT_IN else " (replace=True replaces it)"
        raise MetricError(f"cannot register the metric {definition.name!r}: {whose}{hint}")
    for name in definition.aliases:
        owner = _ALIASES.get(name)
        if owner is not None and owner != definition.name:
            raise MetricError(
                f"cannot register the metric {definition.name!r}: its alias {name!r} "
                f"is a name of {owner!r}"
            )
    if definition.name in _ALIASES and _ALIASES[definition.name] != definition.name:
        raise MetricError(
            f"cannot register the metric {definition.name!r}: it is an alias of "
            f"{_ALIASES[definition.name]!r}"
        )
    if old is not None:
        unregister_metric(old.name)
    _REGISTRY[definition.name] = definition
    for name in (definition.name, *definition.aliases):
        _ALIASES[name] = definition.name
    return definition


def unregister_metric(name: str) -> None:
    """Forget a metric registered by :func:`register_metric` (not one of receval's own).

    Raises:
        MetricError: no such registered metric, or it is receval's own.
    """
    from receval.errors import MetricError

    canonical = _ALIASES.get(name.strip().lower())
    if canonical is None:
        raise MetricError(f"no registered metric {name!r}")
    if canonical in _BUILT_IN:
        raise MetricError(f"{canonical!r} is receval's own metric: it cannot be unregistered")
    d = _REGISTRY.pop(canonical)
    for alias in (d.name, *d.aliases):
        _ALIASES.pop(alias, None)


def metric(
    name: str,
    *,
    description: str,
    formula: str,
    replace: bool = False,
    **declaration: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the kernel of a metric: the other keywords
    are :class:`MetricDef`'s (``params``, ``bounds``, ``kind``, ``needs``, ...).
    The function is returned unchanged.

    Example:
        >>> import numpy as np
        >>> @metric("top1_hit", description="the first item is relevant", formula="[rel_1]")
        ... def top1_hit(batch, k):
        ...     return (batch.hits_at(1) > 0).astype(np.float64)
        >>> "top1_hit" in metrics()
        True
        >>> unregister_metric("top1_hit")
    """

    def register(kernel: Callable[..., Any]) -> Callable[..., Any]:
        register_metric(
            MetricDef(
                name=name, description=description, formula=formula, kernel=kernel, **declaration
            ),
            replace=replace,
        )
        return kernel

    return register


def is_built_in(name: str) -> bool:
    """Whether ``name`` (canonical) is one of receval's own metrics."""
    return name in _BUILT_IN


def load_plugins() -> None:
    """Register the metrics of installed packages (entry-point group
    ``receval.metrics``), once per process: each entry point names a
    :class:`MetricDef`, a sequence of them, or a module whose import registers its
    metrics (``@receval.metric``). Called on the first use of a name receval does
    not know, and before listing the metrics.

    Raises:
        MetricError: a plugin failed to load (the entry point, its package and why).
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    from receval.errors import MetricError

    for ep in entry_points(group=ENTRY_POINTS):
        dist = getattr(ep, "dist", None)
        where = f"{ep.name} = {ep.value}" + (
            f" (package {dist.name} {dist.version})" if dist is not None else ""
        )
        try:
            loaded = ep.load()
            if isinstance(loaded, MetricDef):
                loaded = (loaded,)
            if isinstance(loaded, (list, tuple)):
                for d in loaded:
                    if not (isinstance(d, MetricDef) and _REGISTRY.get(d.name) is d):
                        register_metric(d)
            elif not isinstance(loaded, ModuleType):
                raise MetricError(
                    f"it names a {type(loaded).__name__}: expected a MetricDef, a sequence "
                    "of them, or a module that registers its metrics"
                )
        except Exception as e:  # any failure of a plugin is said as one
            raise MetricError(
                f"the metric plugin {where} failed to load: {type(e).__name__}: {e}"
            ) from e


from receval.metrics.agreement import definitions as _agreement  # noqa: E402
from receval.metrics.intent import definitions as _intent  # noqa: E402

for _d in _DEFS + _agreement(MetricDef, ParamDef) + _intent(MetricDef, ParamDef):
    register_metric(_d)
_BOOTSTRAP = False
_BUILT_IN = frozenset(_REGISTRY)


def lookup(name: str) -> MetricDef | None:
    """The declaration for a name or alias (case-insensitive), or None; a name not
    known loads the installed plugins first (:func:`load_plugins`)."""
    key = name.strip().lower()
    canonical = _ALIASES.get(key)
    if canonical is None and not _plugins_loaded:
        load_plugins()
        canonical = _ALIASES.get(key)
    return None if canonical is None else _REGISTRY[canonical]


def all_names() -> list[str]:
    """Every accepted name and alias (plugins loaded)."""
    load_plugins()
    return sorted(_ALIASES)


def metrics() -> Mapping[str, MetricDef]:
    """The registry: canonical name → :class:`MetricDef`.

    Example:
        >>> import receval
        >>> receval.metrics()["ap"].aliases
        ('map', 'average_precision')
    """
    load_plugins()
    return REGISTRY
