"""Metric names: ``name@k[param=value,...]`` parsed into :class:`MetricSpec`.

The canonical string of a spec — lower case, aliases resolved, parameters
sorted, defaults dropped — is the metric's identity: the key in results, the
column of per-user tables and the label in reports. It round-trips through
:func:`parse_metric`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from receval.errors import MetricError
from receval.metrics.registry import MetricDef, all_names, is_built_in, lookup, register_metric

__all__ = ["MetricSpec", "parse_metric", "parse_metrics"]

GRAMMAR = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*"
    r"(?:@(?P<k>[^\[\]@]*))?\s*"
    r"(?:\[(?P<params>[^\[\]]*)\])?\s*$"
)
#: the most cut-offs one metric may ask for (a range like ``1-10000`` at most)
_MAX_CUTOFFS = 10_000


@dataclass(frozen=True)
class MetricSpec:
    """A metric with its cut-off and parameters (non-default ones only).

    Example:
        >>> str(parse_metric("MAP@10[denominator=min_k_relevant]"))
        'ap@10'
    """

    name: str
    k: int | None = None
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def definition(self) -> MetricDef:
        """The registry declaration of this metric."""
        d = lookup(self.name)
        assert d is not None  # specs are only built from registered names
        return d

    @property
    def param_dict(self) -> dict[str, Any]:
        """Every parameter, defaults included."""
        d = self.definition
        out = {p.name: p.default for p in d.params}
        out.update(self.params)
        return out

    @property
    def reads_max_grade(self) -> bool:
        """Whether a value depends on the largest grade of the whole truth: a
        parameter bounded by it (``at_least="max_grade"``, ERR's normaliser)
        left unset, as the registry declares it."""
        return any(
            p.at_least == "max_grade" and self.param_dict.get(p.name) is None
            for p in self.definition.params
        )

    def __str__(self) -> str:
        text = self.name if self.k is None else f"{self.name}@{self.k}"
        if self.params:
            d = self.definition
            text += "[" + ",".join(f"{n}={d.param_map[n].format(v)}" for n, v in self.params) + "]"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        """A metric registered outside receval travels with its declaration (to Spark's
        workers, another process), and is registered there if it is not yet."""
        args = (type(self), self.name, self.k, self.params)
        if is_built_in(self.name):
            return (_spec, args)
        return (_spec, (*args, self.definition))

    def with_k(self, k: int | None) -> MetricSpec:
        """The same metric at another cut-off."""
        return MetricSpec(self.name, k, self.params)


def suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word.lower(), list(options), n=1, cutoff=0.5)
    return f" — did you mean {close[0]!r}?" if close else ""


def _parse_cutoffs(text: str, metric: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        try:
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if lo > hi:
                    raise ValueError
            else:
                lo = hi = int(part)
        except ValueError:
            raise MetricError(
                f"{metric!r}: the cut-off must be a positive integer, a list like 1,5,10 "
                f"or a range like 1-10; got {part!r}"
            ) from None
        if len(out) + hi - lo + 1 > _MAX_CUTOFFS:
            raise MetricError(
                f"{metric!r}: at most {_MAX_CUTOFFS:,} cut-offs in one metric; "
                f"{part!r} makes {len(out) + hi - lo + 1:,}"
            )
        out.extend(range(lo, hi + 1))
    for k in out:
        if k <= 0:
            raise MetricError(f"{metric!r}: the cut-off must be a positive integer; got {k}")
    return list(dict.fromkeys(out))


Defaults = Mapping[str, Mapping[str, Any]]


def parse_params(
    text: str, d: MetricDef, metric: str, defaults: Defaults | None = None
) -> tuple[tuple[str, Any], ...]:
    values: dict[str, Any] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise MetricError(f"{metric!r}: a parameter must be name=value; got {part.strip()!r}")
        key, _, raw = part.partition("=")
        key = key.strip().lower()
        p = d.param_map.get(key)
        if p is None:
            valid = ", ".join(d.param_map) or "none"
            raise MetricError(
                f"{metric!r}: unknown parameter {key!r} of {d.name} (valid: {valid})"
                + suggest(key, d.param_map)
            )
        if key in values:
            raise MetricError(f"{metric!r}: parameter {key!r} given twice")
        try:
            values[key] = p.convert(raw)
        except ValueError as exc:
            raise MetricError(
                f"{metric!r}: bad value {raw.strip()!r} for {d.name}'s {key}: {exc}"
                + (suggest(raw.strip(), p.choices) if p.choices else "")
            ) from None
    given = set(values)
    for key, value in (defaults or {}).get(d.name, {}).items():
        values.setdefault(key, value)  # a convention's default, unless given
    for key in set(values) - given:  # ... where it applies (ParamDef.only_with)
        rule = d.param_map[key].only_with
        if rule is not None and values.get(rule[0], d.param_map[rule[0]].default) not in rule[1]:
            del values[key]
    kept = tuple(
        (name, values[name]) for name in sorted(values) if values[name] != d.param_map[name].default
    )
    why = d.check_params(dict(kept))
    if why is not None:
        raise MetricError(f"{metric!r}: {why}")
    return kept


def parse_metrics(
    metrics: str | MetricSpec | Iterable[str | MetricSpec], defaults: Defaults | None = None
) -> list[MetricSpec]:
    """Parse one metric string or many, expanding cut-off lists and ranges.

    ``"ndcg@1,5,10"`` gives three specs, ``"p@1-3"`` three more; duplicates are
    dropped, first occurrence kept. ``defaults`` (metric name → parameter →
    value, a convention's) fill the parameters a string does not give;
    :class:`MetricSpec` objects are taken as they are.

    Example:
        >>> [str(s) for s in parse_metrics(["MRR", "ndcg@5,10[gain=exp]"])]
        ['rr', 'ndcg@5[gain=exp]', 'ndcg@10[gain=exp]']
    """
    if isinstance(metrics, (str, MetricSpec)):
        items: list[Any] = [metrics]
    elif isinstance(metrics, Iterable) and not isinstance(metrics, (bytes, Mapping)):
        items = list(metrics)
    else:
        raise MetricError(
            "metrics must be a metric string like 'ndcg@10' or a list of them; "
            f"got {type(metrics).__name__} {metrics!r}"[:200]
        )
    if not items:
        raise MetricError("no metric given")
    out: list[MetricSpec] = []
    for item in items:
        if isinstance(item, MetricSpec):
            out.append(item)
            continue
        if not isinstance(item, str):
            raise MetricError(f"a metric must be a string like 'ndcg@10'; got {item!r}")
        out.extend(_parse_one(item, defaults))
    return list(dict.fromkeys(out))


#: trec_eval's measure names: name -> receval metric text (the cut-offs follow "_" or ".").
_TREC = {
    "p": "precision",
    "recall": "recall",
    "map_cut": "ap{k}[denominator=relevant]",
    "ndcg_cut": "ndcg",
    "success": "hit_rate",
    "relative_p": "relative_precision",
    "unj": "unjudged",
}
_TREC_NAME = re.compile(
    r"^\s*(P|recall|map_cut|ndcg_cut|success|relative_P|unj)[._](\d+(?:,\d+)*)\s*$", re.I
)

#: trec_eval's measures with a number parameter: name -> receval text with {x}.
_TREC_PARAM = {
    "iprec_at_recall": "iprec[recall={x}]",
    "rprec_mult": "r_precision[mult={x}]",
    "rbp": "rbp[p={x}]",
    "rbp_resid": "rbp_residual[p={x}]",
}
_TREC_PARAM_NAME = re.compile(
    r"^\s*(iprec_at_recall|Rprec_mult)[._](\d*\.?\d+)\s*$|^\s*(rbp|rbp_resid)\.p=(\d*\.?\d+)\s*$",
    re.I,
)

#: trec_eval's names that are not receval names or aliases.
_TREC_PLAIN = {"11pt_avg": "iprec_avg", "set_relative_p": "relative_precision"}
#: trec_eval's lines that are no per-query measure, and where receval has them
_TREC_COUNTS = {
    "num_q": "the number of queries evaluated: Result.counts['users_evaluated']",
    "runid": "the run's name: the system's name in receval.compare",
}


#: trec_eval's set measures (over the whole retrieved list): set_F.x, set_P, set_recall.
_TREC_SET = re.compile(r"^\s*set_(F|P|recall)(?:[._](\d+(?:\.\d*)?|\.\d+))?\s*$", re.I)


def _trec_set(text: str) -> str | None:
    """trec_eval's ``set_F.x`` as ``f1[beta=√x]``: trec_eval's parameter x
    weighs recall as β² does, set_Fx = (x + 1)·P·R / (x·P + R) (m_set_F.c), so
    ``set_F.0.5`` is F-beta with β = √0.5 and ``set_F`` (x = 1) is f1.
    ``set_P`` and ``set_recall`` are precision and recall of the whole list."""
    m = _TREC_SET.match(text)
    if not m:
        return None
    kind, raw = m.group(1).lower(), m.group(2)
    if kind != "f":
        if raw is not None:
            raise MetricError(f"{text!r}: trec_eval's set_{m.group(1)} takes no parameter")
        return "precision" if kind == "p" else "recall"
    x = 1.0 if raw is None else float(raw)
    if not x > 0:
        raise MetricError(f"{text!r}: set_F's parameter (β²) must be > 0; got {raw}")
    return "f1" if x == 1.0 else f"f1[beta={math.sqrt(x)!r}]"


def _trec_alias(text: str) -> str | None:
    """``P_5``, ``map_cut.10,20``, ``ndcg_cut_10``, ``success_1``, ``recall_100``,
    ``relative_P_5``, ``unj_10``, ``iprec_at_recall_0.10``, ``Rprec_mult_0.20``,
    ``rbp.p=0.5``, ``11pt_avg``, ``set_F.0.5`` as receval metric text
    (trec_eval's definitions: map_cut divides by all relevant; set_F's
    parameter is β²). trec_eval's other names are aliases in the registry."""
    count = _TREC_COUNTS.get(text.strip().lower())
    if count is not None:
        raise MetricError(f"trec_eval's {text.strip()} is not a metric: it is {count}")
    plain = _TREC_PLAIN.get(text.strip().lower())
    if plain is not None:
        return plain
    m = _TREC_PARAM_NAME.match(text)
    if m:
        name, x = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return _TREC_PARAM[name.lower()].format(x=float(x))
    m = _TREC_NAME.match(text)
    if not m:
        return _trec_set(text)
    target = _TREC[m.group(1).lower()]
    cut = "@" + m.group(2)
    return target.format(k=cut) if "{k}" in target else target + cut


#: ir_measures' measure names (ir_measures/measures/*.py) -> receval metric names.
#: With the trec_eval convention, their defaults are ir_measures' (which computes
#: these through pytrec_eval): AP@k divides by R, nDCG gains every grade > 0.
_IR = {
    "AP": "ap",
    "P": "precision",
    "R": "recall",
    "RR": "rr",
    "nDCG": "ndcg",
    "ERR": "err",
    "Rprec": "r_precision",
    "Bpref": "bpref",
    "infAP": "infap",
    "Judged": "judged",
    "Success": "hit_rate",
    "NumRet": "n_retrieved",
    "NumRel": "n_relevant",
    "NumRelRet": "hits",
    "SetP": "precision",
    "SetR": "recall",
    "SetF": "f1",
    "SetAP": "set_ap",
    "RBP": "rbp",
    "IPrec": "iprec",
}
_IR_NAME = re.compile(
    r"^\s*(?P<name>[A-Za-z]+)\((?P<params>[^)]*)\)(?:@(?P<at>\d*\.?\d+))?\s*$"
    r"|^\s*(?P<bare>Bpref|infAP|Judged|Success|NumRet|NumRel|NumRelRet|SetP|SetR|SetF|SetAP"
    r"|RBP|IPrec|nDCG|Rprec)(?:@(?P<bare_at>\d*\.?\d+))?\s*$"
)
#: ir_measures' parameters -> receval's, by value (None: any value, as is)
_IR_PARAMS = {
    ("dcg", "log2"): None,
    ("dcg", "exp-log2"): "gain=exp",
    ("p", None): "p={v}",
    # SetF(beta=x) is trec_eval's set_F.x, whose x weighs recall as β² does
    ("beta", None): "beta={root}",
}


def _ir_measures_alias(text: str) -> str | None:
    """ir_measures' ``Name(param=value)@cutoff`` (``nDCG(dcg='exp-log2')@10``,
    ``RBP(p=0.5)``, ``IPrec@0.1``, ``Judged@10``, ``SetF(beta=0.5)``, ...) as
    receval metric text; None when ``text`` is not in that syntax. ``rel=`` and
    ``judged_only=`` are options in receval (``threshold=``, ``unjudged=``)."""
    m = _IR_NAME.match(text)
    if not m:
        return None
    name = m.group("name") or m.group("bare")
    at = m.group("at") if m.group("name") else m.group("bare_at")
    if name not in _IR:  # not an ir_measures name receval has: read as receval's
        return None
    target = _IR[name]
    params: list[str] = []
    for pair in filter(None, (p.strip() for p in (m.group("params") or "").split(","))):
        key, _, raw = pair.partition("=")
        key, value = key.strip(), raw.strip().strip("'\"")
        if key == "rel" and name == "NumRet":
            raise MetricError(  # ir_measures' pytrec_eval provider: num_rel_ret at level rel
                f"{text!r}: ir_measures' NumRet(rel={value}) counts the retrieved documents "
                f"graded >= {value}: receval's hits (NumRelRet), with threshold={value}"
            )
        if key == "rel":
            raise MetricError(
                f"{text!r}: ir_measures' rel= is receval's threshold option "
                f"(threshold={value}), for every metric at once"
            )
        if key == "judged_only":
            raise MetricError(
                f"{text!r}: ir_measures' judged_only= is receval's unjudged='condense' option"
            )
        rule = _IR_PARAMS.get((key, value), _IR_PARAMS.get((key, None), "?"))
        if rule == "?":
            raise MetricError(f"{text!r}: ir_measures' parameter {pair!r} has no receval form")
        if rule is not None:
            root = repr(math.sqrt(float(value))) if key == "beta" else ""
            params.append(rule.format(v=value, root=root))
    if name == "RBP" and not any(p.startswith("p=") for p in params):
        params.append("p=0.8")  # ir_measures' default persistence, whatever the convention
    if name == "IPrec":
        if at is None:
            raise MetricError(f"{text!r}: IPrec needs a recall level, e.g. IPrec@0.1")
        params.append(f"recall={float(at)!r}")
        at = None
    if name.startswith("Set") and at is not None:
        raise MetricError(f"{text!r}: ir_measures' set measures take no cut-off")
    out = target + ("" if at is None else "@" + str(int(float(at))))
    return out + ("[" + ",".join(params) + "]" if params else "")


def _parse_one(text: str, defaults: Defaults | None = None) -> list[MetricSpec]:
    alias = _trec_alias(text)
    if alias is None:
        alias = _ir_measures_alias(text)
    if alias is not None:
        return _parse_one(alias, defaults)
    m = GRAMMAR.match(text)
    if not m:
        raise MetricError(
            f"cannot read metric {text!r}: expected name@k[param=value,...], e.g. 'ndcg@10' "
            "or 'ap@10[denominator=relevant]'"
        )
    d = lookup(m.group("name"))
    if d is None:
        raise MetricError(
            f"unknown metric {m.group('name')!r}" + suggest(m.group("name"), all_names())
        )
    params = parse_params(m.group("params") or "", d, text, defaults)
    if d.kind == "rating" and m.group("k") is not None:
        raise MetricError(
            f"{text!r}: the rating metric {d.name} takes no cut-off @k; write {d.name!r} "
            f"or '{d.name}[per_user=true]'"
        )
    if not d.takes_cutoff and m.group("k") is not None:
        raise MetricError(
            f"{text!r}: {d.name} reads the whole list and the whole ideal: it takes no "
            f"cut-off @k; write {d.name!r}"
        )
    ks: list[int | None] = [None]
    if m.group("k") is not None:
        ks = list(_parse_cutoffs(m.group("k"), text))
    return [MetricSpec(d.name, k, params) for k in ks]


def _spec(
    cls: type[MetricSpec],
    name: str,
    k: int | None,
    params: tuple[tuple[str, Any], ...],
    definition: MetricDef | None = None,
) -> MetricSpec:
    """A spec unpickled; its metric registered first when it came with its declaration
    and this process does not know the name (a Spark worker, a child process)."""
    if definition is not None and lookup(name) is None:
        register_metric(definition)
    return cls(name, k, params)


def parse_metric(text: str, defaults: Defaults | None = None) -> MetricSpec:
    """Parse one metric string into its :class:`MetricSpec` (``defaults``: as
    in :func:`parse_metrics`).

    Example:
        >>> spec = parse_metric("NDCG@10[gain=exp, ideal=relevant]")
        >>> str(spec)
        'ndcg@10[gain=exp]'
        >>> parse_metric(str(spec)) == spec
        True
    """
    specs = _parse_one(text, defaults)
    if len(specs) != 1:
        raise MetricError(
            f"{text!r} names {len(specs)} metrics; use parse_metrics() for cut-off lists"
        )
    return specs[0]
