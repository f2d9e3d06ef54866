"""trec_eval's text, line for line: ``receval trec_eval`` and ``evaluate -o trec_eval``.

This module only formats. Every number comes from :func:`receval.evaluate`
under ``convention="trec_eval"`` (each trec_eval measure parses to its receval
metric: :mod:`receval.metrics.spec`); what it adds is trec_eval 10.0's way
of printing them:

- the measures of ``-m`` (names, parameters, the nicknames ``official``,
  ``all_trec`` and ``set``) in the order of trec_eval's table (measures.c),
  whatever the order of the flags; a measure's cut-offs sorted ascending and
  named ``P_5`` (``%s_%ld``) or ``iprec_at_recall_0.10`` (``%s_%3.2f``),
  a measure with other parameters named with them as written
  (``set_F_0.5``, ``utility_2,-1,0,0``: meas_init.c);
- per query (``-q``), the queries in the qrels' order (sorted by ``strcmp``:
  get_qrels.c), each with its measures in that order; then the ``all`` lines
  (``-n``: none);
- ``%-22s\\t%s\\t%6.4f`` for a value, ``%-22s\\t%s\\t%ld`` for a count
  (meas_print_single.c, meas_print_final.c); the ``all`` line of a count
  is the sum over the queries, of a value trec_eval's mean (each query's
  double added in the qrels' order, divided by the queries: meas_acc.c,
  meas_avg.c), ``num_q`` and ``runid`` only have one, and
  ``gm_map``/``gm_bpref`` have no per-query line;
- under ``-J``, ``  -nan`` (glibc's ``%6.4f`` of a NaN) where trec_eval
  divides 0 by 0: ``iprec_at_recall``/``11pt_avg`` of a list condensed to
  nothing (m_iprec_at_recall.c), and their ``all`` lines; the library's
  value is NaN there too (``iprec[empty=nan]``, the trec_eval convention's),
  but for a query of the qrels missing from the run (``-c``), whose value
  is 0;
- ``runid``: the tag (6th column) of the run's last line (get_trec_results.c);
- ``relstring``: per query only, the grades of the first N documents
  retrieved as text (m_relstring.c), read from the same files with the
  convention's order (score descending, docno descending as strings).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from receval.errors import MetricError

# -- trec_eval's table of measures (measures.c), in its order -------------------------------

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALLS = tuple(i / 10 for i in range(11))
_MULTS = tuple(round(0.2 * i, 1) for i in range(1, 11))


@dataclass(frozen=True)
class Measure:
    """One of trec_eval's measures: its name, how it is printed (``kind``) and
    its default parameters.

    kind: ``runid``, ``num_q``, ``count`` (a ``%ld`` per query, summed), ``value``
    (``%6.4f``, averaged), ``gm`` (``all`` line only), ``cut`` (integer cut-offs),
    ``level`` (real cut-offs), ``param`` (real parameters), ``pairs``
    (``name=value`` parameters), ``relstring``; ``none``: not computed by receval.
    """

    name: str
    kind: str
    defaults: tuple[float, ...] = ()


MEASURES: tuple[Measure, ...] = (
    Measure("runid", "runid"),
    Measure("num_q", "num_q"),
    Measure("num_ret", "count"),
    Measure("num_rel", "count"),
    Measure("num_rel_ret", "count"),
    Measure("map", "value"),
    Measure("gm_map", "gm"),
    Measure("Rprec", "value"),
    Measure("bpref", "value"),
    Measure("recip_rank", "value"),
    Measure("iprec_at_recall", "level", _RECALLS),
    Measure("P", "cut", _CUTS),
    Measure("relstring", "relstring", (10,)),
    Measure("recall", "cut", _CUTS),
    Measure("infAP", "value"),
    Measure("gm_bpref", "gm"),
    Measure("Rprec_mult", "level", _MULTS),
    Measure("utility", "param", (1.0, -1.0, 0.0, 0.0)),
    Measure("11pt_avg", "param"),
    Measure("binG", "value"),
    Measure("G", "pairs"),
    Measure("dcg", "none"),
    Measure("ideal_dcg", "none"),
    Measure("ndcg", "pairs"),
    Measure("ndcg_rel", "pairs"),
    Measure("Rndcg", "pairs"),
    Measure("ndcg_cut", "cut", _CUTS),
    Measure("map_cut", "cut", _CUTS),
    Measure("relative_P", "cut", _CUTS),
    Measure("success", "cut", (1, 5, 10)),
    Measure("set_P", "value"),
    Measure("set_relative_P", "value"),
    Measure("set_recall", "value"),
    Measure("set_map", "value"),
    Measure("set_F", "param", (1.0,)),
    Measure("num_nonrel_judged_ret", "count"),
    *(
        Measure(n, "none")
        for n in [
            "prefs_num_prefs_poss",
            "prefs_num_prefs_ful",
            "prefs_num_prefs_ful_ret",
            "prefs_simp",
            "prefs_pair",
            "prefs_avgjg",
            "prefs_avgjg_Rnonrel",
            "prefs_simp_ret",
            "prefs_pair_ret",
            "prefs_avgjg_ret",
            "prefs_avgjg_Rnonrel_ret",
            "prefs_simp_imp",
            "prefs_pair_imp",
            "prefs_avgjg_imp",
            "map_avgjg",
            "P_avgjg",
            "Rprec_mult_avgjg",
            "yaap",
        ]
    ),
    Measure("rbp", "pairs"),
    Measure("rbp_resid", "pairs"),
    Measure("unj", "cut", (5, 10, 20)),
)
_BY_NAME = {m.name: m for m in MEASURES}

#: trec_eval's nicknames (measures.c): the measures each marks
_OFFICIAL = [
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
]
NICKNAMES: Mapping[str, list[str]] = {
    "official": _OFFICIAL,
    "all_trec": [
        *_OFFICIAL,
        "relstring",
        "recall",
        "unj",
        "rbp",
        "rbp_resid",
        "infAP",
        "gm_bpref",
        "utility",
        "11pt_avg",
        "ndcg",
        "relative_P",
        "Rprec_mult",
        "success",
        "map_cut",
        "ndcg_cut",
        "ndcg_rel",
        "Rndcg",
        "binG",
        "G",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
        "num_nonrel_judged_ret",
    ],
    "set": [
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "utility",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
    ],
}


@dataclass(frozen=True)
class Line:
    """One name trec_eval prints: its text, the receval metric it parses to
    (None for ``runid``, ``num_q``, ``relstring``) and how it prints."""

    name: str
    metric: str | None
    kind: str
    length: int = 0  # relstring: how many documents


@dataclass
class Request:
    """The measures of trec_eval's ``-m`` flags, resolved: :func:`request`."""

    lines: list[Line] = field(default_factory=list)

    @property
    def metrics(self) -> list[str]:
        """The receval metric texts to evaluate, once each, in order."""
        return list(dict.fromkeys(ln.metric for ln in self.lines if ln.metric))


def request(measures: Sequence[str] = ()) -> Request:
    """The lines trec_eval prints for its ``-m`` flags ``measures`` (none:
    ``official``, trec_eval's default), in trec_eval's order.

    A flag is a measure, a nickname, or a measure with parameters after a dot
    (``P.5,10``, ``iprec_at_recall..25``, ``rbp.p=0.5``); where a measure is
    given parameters twice, the first flag's are used (trec_eval.c's
    ``meas_arg`` lookup). Raises :class:`~receval.errors.MetricError` for a
    measure trec_eval does not have or receval does not compute.

    >>> [ln.name for ln in request(["P.10,5", "map"]).lines]
    ['map', 'P_5', 'P_10']
    """
    marked: set[str] = set()
    params: dict[str, str] = {}
    for flag in measures or ["official"]:
        name, dot, raw = flag.partition(".")
        if dot:
            if not raw:
                raise MetricError(f"trec_eval measure {flag!r}: no parameter after the '.'")
            params.setdefault(name, raw)
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
        elif name in _BY_NAME:
            marked.add(name)
        else:
            raise MetricError(f"trec_eval has no measure {name!r} (in -m {flag})")
    out = Request()
    for m in MEASURES:
        if m.name in marked:
            out.lines += _lines(m, params.get(m.name))
    return out


def _lines(m: Measure, raw: str | None) -> list[Line]:
    """The lines of one marked measure, its parameters ``raw`` as written (or None)."""
    if m.kind == "none":
        raise MetricError(
            f"trec_eval's {m.name} is not computed by receval (preference judgments, "
            "jg qrels and yaap need inputs receval does not read)"
            if m.name not in ("dcg", "ideal_dcg")
            else f"trec_eval's {m.name} is not computed by receval: use ndcg"
        )
    if m.kind in ("runid", "num_q"):
        return [Line(m.name, None, m.kind)]
    if m.kind in ("count", "value", "gm"):
        _no_params(m, raw)
        return [Line(m.name, m.name, m.kind)]
    if m.kind == "cut":
        cuts = _cutoffs(m, raw, integer=True) if raw else list(m.defaults)
        return [Line(f"{m.name}_{int(k)}", f"{m.name}_{int(k)}", "value") for k in cuts]
    if m.kind == "level":
        levels = _cutoffs(m, raw, integer=False) if raw else list(m.defaults)
        return [Line(f"{m.name}_{x:3.2f}", f"{m.name}_{x!r}", "value") for x in levels]
    if m.kind == "relstring":
        n = int(_atof(raw.split(",")[0])) if raw else 10
        return [Line(m.name if raw is None else f"{m.name}_{raw}", None, "relstring", n)]
    name = m.name if raw is None else f"{m.name}_{raw}"
    return [Line(name, _param_metric(m, raw), "value")]


def _no_params(m: Measure, raw: str | None) -> None:
    if raw is not None:
        raise MetricError(f"trec_eval's {m.name} takes no parameter; got {m.name}.{raw}")


def _atof(text: str) -> float:
    """C's ``atof``/``atol`` on trec_eval's parameters: the longest number at
    the start, 0 when there is none."""
    import re

    found = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(found.group(0)) if found else 0.0


def _cutoffs(m: Measure, raw: str, *, integer: bool) -> list[float]:
    """trec_eval's cut-offs (meas_init.c ``get_long_cutoffs``/``get_double_cutoffs``):
    comma separated, sorted ascending, no duplicates, integers > 0."""
    values = sorted((float(int(_atof(p))) if integer else _atof(p)) for p in raw.split(","))
    if integer and values[0] <= 0:
        parts = [p for p in raw.split(",") if _atof(p) <= 0]
        raise MetricError(
            f"trec_eval's {m.name}.{raw}: cut-offs must be whole numbers > 0; got {parts[0]!r}"
        )
    if any(a == b for a, b in itertools.pairwise(values)):
        raise MetricError(f"trec_eval's {m.name}.{raw}: a cut-off is repeated")
    return values


def _param_metric(m: Measure, raw: str | None) -> str:
    """The receval metric of a measure with parameters (``set_F.0.5``,
    ``utility.2,-1,0,0``, ``rbp.p=0.5``); raises where receval has no form."""
    if raw is None:
        return m.name
    values = [_atof(p) for p in raw.split(",")] if m.kind == "param" else []
    if m.name == "set_F":
        return f"set_F.{values[0]!r}"
    if m.name == "utility" and len(values) == 4 and values[3] == 0:
        a, b, c, _ = values
        return f"utility[rel_ret={a!r},nonrel_ret={b!r},rel_nonret={c!r}]"
    if m.name in ("rbp", "rbp_resid"):
        key, _, value = raw.partition("=")
        if key == "p" and "," not in raw:
            return f"{m.name}.p={_atof(value)!r}"
    why = {
        "utility": "four coefficients with the fourth 0 (it needs the collection's size)",
        "11pt_avg": "no levels of its own (trec_eval's eleven; iprec_at_recall.x gives any)",
        "rbp": "only p=x",
        "rbp_resid": "only p=x",
    }.get(m.name, "no gains of its own: the gains are the grades")
    raise MetricError(f"trec_eval's {m.name}.{raw} is not computed by receval: it takes {why}")


# -- the text ---------------------------------------------------------------------------------


def _float(name: str, qid: str, value: float) -> str:
    """``%-22s\\t%s\\t%6.4f`` (meas_print_single.c); NaN as glibc prints it."""
    text = f"{value:6.4f}" if not math.isnan(value) else f"{'-nan':>6}"
    return f"{name:<22}\t{qid}\t{text}"


def _long(name: str, qid: str, value: float) -> str:
    """``%-22s\\t%s\\t%ld`` of ``(long) value`` (a count)."""
    return f"{name:<22}\t{qid}\t{int(value)}"


def format_text(
    req: Request,
    result: Any,
    *,
    runid: str = "",
    relstrings: Mapping[str, str] | None = None,
    per_query: bool = False,
    summary: bool = True,
    sums: Mapping[str, float] | None = None,
) -> str:
    """trec_eval's output for ``req`` from a :class:`~receval.Result`
    evaluated with ``req.metrics`` (and ``num_ret``, which says who was
    evaluated, and ``num_rel``) under the trec_eval convention: ``-q`` lines with
    ``per_query``, the ``all`` lines with ``summary`` (``-n``: False).
    ``relstrings``: qid -> text (a query not there: a query of the qrels
    missing from the run, under ``-c``: see :func:`_absent`); ``sums``: an
    ``all`` line of a count that is not the sum of its queries (``num_rel``
    under ``-c -l N``)."""
    from receval.metrics.spec import parse_metric

    conv = _convention_params()
    column = {m: str(parse_metric(m, conv)) for m in [*req.metrics, "num_ret", "num_rel"]}
    table = result.per_user
    evaluated = table[table[str(parse_metric("num_ret", conv))].notna()]
    qids = sorted((str(q) for q in evaluated.index), key=lambda q: q.encode("utf-8"))
    by_qid = {str(q): row for q, row in evaluated.iterrows()}
    out: list[str] = []
    condensed = result.parameters.get("unjudged") == "condense"
    if per_query:
        for q in qids:
            out += _query_lines(req, by_qid[q], q, column, relstrings, condensed)
    if summary:
        order = sorted(range(len(evaluated)), key=lambda i: str(evaluated.index[i]).encode("utf-8"))
        out += _all_lines(req, evaluated.iloc[order], column, runid, condensed, sums)
    return "\n".join(out) + ("\n" if out else "")


def _convention_params() -> Any:
    from receval.evaluation import conventions

    return conventions.get("trec_eval").params


def _query_lines(
    req: Request,
    row: Any,
    qid: str,
    column: Mapping[str, str],
    relstrings: Mapping[str, str] | None,
    condensed: bool,
) -> list[str]:
    out = []
    for ln in req.lines:
        if ln.kind == "relstring":
            text = (relstrings or {}).get(qid, _absent(ln, condensed))
            out.append(f"{ln.name:<22}\t{qid}\t'{text}'")
        elif ln.kind == "count":
            out.append(_long(ln.name, qid, float(row[column[str(ln.metric)]])))
        elif ln.kind == "value":
            out.append(_float(ln.name, qid, _printed(ln, row, column, condensed)))
    return out


def _printed(ln: Line, row: Any, column: Mapping[str, str], condensed: bool) -> float:
    """The value trec_eval holds for ``ln`` on one query: receval's, except
    trec_eval's 0/0 over a list ``-J`` condensed to nothing (``num_ret`` 0):
    m_iprec_at_recall.c and m_11pt_avg.c start from ``num_rel_ret / num_ret``
    and keep it (NaN) for the levels whose cut ``lround(level * num_rel)`` is
    0 relevant documents (recall 0 always, so ``11pt_avg``, their mean, is
    always NaN there); the other levels stay 0. receval's value is NaN there
    too (``empty=nan``) for a list given, 0 for a query of the qrels missing
    from the run (``-c``): to trec_eval that is a list of one unjudged
    document, which ``-J`` condenses to nothing, and ``-c`` alone keeps."""
    value = float(row[column[str(ln.metric)]])
    if not ln.name.startswith(("iprec_at_recall_", "11pt_avg")):
        return value
    if not condensed or float(row[column["num_ret"]]) != 0:
        return value
    if ln.name.startswith("11pt_avg"):
        return math.nan
    level = float(str(ln.metric).rpartition("_")[2])
    # lround(x) == 0 exactly where x < 0.5 (x >= 0), x the same double as C's
    return math.nan if level * float(row[column["num_rel"]]) < 0.5 else value


def _absent(ln: Line, condensed: bool) -> str:
    """relstring of a query of the qrels missing from the run (``-c``):
    trec_eval evaluates it on a list of one document that is in no qrels
    (trec_eval.c's ``bogus_ranking``), then empties the text of the measure
    named exactly ``relstring`` (trec_eval.c compares the name): ``''`` for
    ``relstring``, ``'-'`` for ``relstring.N`` (``''`` under ``-J``, which
    drops that document: ``condensed``)."""
    if ln.name == "relstring" or ln.length < 1 or condensed:
        return ""
    return "-"


def _all_lines(
    req: Request,
    evaluated: Any,
    column: Mapping[str, str],
    runid: str,
    condensed: bool,
    sums: Mapping[str, float] | None,
) -> list[str]:
    """The ``all`` lines; ``evaluated``: the queries' rows in the qrels' order."""
    sums = sums or {}
    out = []
    for ln in req.lines:
        if ln.kind == "runid":
            out.append(f"{'runid':<22}\tall\t{runid}")
        elif ln.kind == "num_q":
            out.append(_long("num_q", "all", len(evaluated)))
        elif ln.kind == "count":  # trec_eval's all line of a count is its sum
            total = sums.get(ln.name, float(evaluated[column[str(ln.metric)]].sum()))
            out.append(_long(ln.name, "all", total))
        elif ln.kind in ("value", "gm"):
            out.append(_float(ln.name, "all", _mean(ln, evaluated, column, condensed)))
    return out


def _mean(ln: Line, evaluated: Any, column: Mapping[str, str], condensed: bool) -> float:
    """The ``all`` line of a value as trec_eval computes it: each query's
    double added in turn in the qrels' order (meas_acc.c ``te_acc_meas_s``),
    the sum divided by the number of queries (meas_avg.c
    ``te_calc_avg_meas_s``; under ``-c`` every query of the qrels is one).
    ``gm_map``/``gm_bpref``: their per-query values are already
    ``log(max(v, 0.00001))`` (m_gm_map.c), the line is ``exp(sum / n)``
    (``te_calc_avg_meas_s_gm``). The order matters: ``P_200`` of 0.00325
    exactly prints 0.0033 where the sum in that order lands above it."""
    import numpy as np

    values = evaluated[column[str(ln.metric)]].to_numpy(dtype=np.float64, copy=True)
    if not len(values):
        return math.nan
    values[_nan_mask(ln, evaluated, column, condensed)] = np.nan
    total = float(np.cumsum(values)[-1])  # left to right, one double at a time
    if ln.kind == "gm":
        return math.exp(total / len(values))
    return total / len(values)


def _nan_mask(ln: Line, evaluated: Any, column: Mapping[str, str], condensed: bool) -> Any:
    """The queries whose value trec_eval holds as NaN for ``ln`` (:func:`_printed`)."""
    import numpy as np

    nan = np.zeros(len(evaluated), dtype=bool)
    if not condensed or not ln.name.startswith(("iprec_at_recall_", "11pt_avg")):
        return nan
    empty = evaluated[column["num_ret"]].to_numpy(dtype=np.float64) == 0
    if ln.name.startswith("11pt_avg"):
        return empty
    level = float(str(ln.metric).rpartition("_")[2])
    return empty & (level * evaluated[column["num_rel"]].to_numpy(dtype=np.float64) < 0.5)


# -- from the files: the run's tag and relstring ----------------------------------------------


def run_tag(path: str | Path) -> str:
    """The tag (6th column) of the run's last content line, which trec_eval
    prints as ``runid`` (get_trec_results.c keeps the last line's)."""
    last = ""
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.strip()
            if line and not line.startswith("#"):
                last = line
    parts = last.split()
    return parts[5] if len(parts) >= 6 else ""


def relstrings(
    run: Any, qrels: Any, length: int, *, depth: int | None = None, judged_only: bool = False
) -> dict[str, str]:
    """m_relstring.c: per query, the grades of its first ``length`` documents
    as text (``0``–``9``, ``>`` above 9, ``-`` not in the qrels, ``.`` in them
    with a negative grade: pooled, not judged); ``depth`` (``-M``) cuts the
    list first and ``judged_only`` (``-J``) drops the documents not judged.
    ``run`` and ``qrels``: the files as the library opens them."""
    from receval.io.inputs import opened

    recs = opened(run, "recommendations", None)[0].to_pandas()
    truth = opened(qrels, "truth", None)[0].to_pandas()
    grades = {
        (str(u), str(i)): g
        for u, i, g in truth[["user", "item", "relevance"]].itertuples(index=False)
    }
    recs["user"], recs["item"] = recs["user"].astype(str), recs["item"].astype(str)
    # the convention's order: score descending, then docno descending as strings (form_res_rels.c)
    recs["key"] = recs["item"].map(lambda s: s.encode("utf-8"))
    recs = recs.sort_values(["user", "score", "key"], ascending=[True, False, False])
    out: dict[str, str] = {}
    for qid, docs in recs.groupby("user", sort=False)["item"]:
        shown = (
            docs.iloc[: depth or None] if judged_only else docs.iloc[: min(length, depth or length)]
        )
        marks = [_mark(grades.get((str(qid), d))) for d in shown]
        if judged_only:
            marks = [c for c in marks if c not in "-."]
        out[str(qid)] = "".join(marks[:length])
    return out


def _mark(grade: float | None) -> str:
    if grade is None:
        return "-"
    if grade < 0:
        return "."
    return ">" if grade > 9 else str(int(grade))


# -- the one call -----------------------------------------------------------------------------


def trec_eval_text(
    run: Any,
    qrels: Any,
    measures: Sequence[str] = (),
    *,
    per_query: bool = False,
    summary: bool = True,
    options: Any = None,
) -> str:
    """What ``trec_eval [-q] [-n] -m ... QRELS RUN`` prints, from
    :func:`receval.evaluate` (``options``: an :class:`~receval.EvalOptions`
    under the trec_eval convention, carrying ``-c``, ``-l``, ``-M`` and ``-J``
    as ``missing_recs="zero"``, ``threshold``, ``depth`` and
    ``unjudged="condense"``). ``run`` and ``qrels``: paths or
    :class:`~receval.io.inputs.FileInput`."""
    from receval.evaluation.api import evaluate
    from receval.evaluation.options import EvalOptions

    opts = options if options is not None else EvalOptions(convention="trec_eval")
    req = request(measures)
    result = evaluate(run, qrels, [*req.metrics, "num_ret", "num_rel"], options=opts)
    strings: dict[str, str] = {}
    lengths = [ln.length for ln in req.lines if ln.kind == "relstring"]
    if per_query and lengths:
        depth = opts.depth if isinstance(opts.depth, int) else None
        condense = opts.unjudged == "condense"
        strings = relstrings(run, qrels, lengths[0], depth=depth, judged_only=condense)
    tag = run_tag(getattr(run, "path", run)) if any(ln.kind == "runid" for ln in req.lines) else ""
    sums = _num_rel_sum(run, qrels, req, opts) if summary else {}
    return format_text(
        req,
        result,
        runid=tag,
        relstrings=strings if per_query else None,
        per_query=per_query,
        summary=summary,
        sums=sums,
    )


def _num_rel_sum(run: Any, qrels: Any, req: Request, opts: Any) -> dict[str, float]:
    """The ``all`` line of ``num_rel`` under ``-c -l N`` (N > 1): trec_eval
    counts every document of the qrels graded > 0 there (m_num_rel.c,
    ``te_calc_avg_num_rel``), not the queries' relevant documents: receval's
    ``num_rel`` at the default level, summed over the queries (all of the
    qrels' under ``-c``). Empty otherwise (the sum of the queries' values)."""
    from receval.evaluation.api import evaluate

    wanted = any(ln.name == "num_rel" for ln in req.lines)
    if not wanted or opts.missing_recs != "zero" or opts.threshold in (None, 1):
        return {}
    at_1 = evaluate(run, qrels, ["num_rel"], options=opts.replace(threshold=None))
    return {"num_rel": float(at_1.per_user[str(at_1.metrics[0])].sum())}
