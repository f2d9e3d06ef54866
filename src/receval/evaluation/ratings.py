"""Rating-prediction metrics (SPEC §5): how close predicted ratings are to actual ones.

:func:`evaluate_ratings` takes a (user, item, actual, predicted) table and returns
a :class:`~receval.evaluation.result.Result`; :func:`score_ratings` takes two plain arrays.

Metrics: ``mae``, ``mse``, ``rmse``, ``r2``, ``pearson``, ``spearman``,
``kendall`` (tau-b). Each is computed over all pairs by default, or per user
and then averaged over users with ``[per_user=true]``; users whose value is
undefined (fewer than 2 pairs or constant ratings, for r2 and the correlations)
are left out of that mean and counted in ``counts["undefined"]``. Note that
``rmse[per_user=true]`` is the mean of the users' RMSEs, not the square root of
the mean per-user MSE.

Metric strings use the grammar of ranking metrics without the cut-off:
``name[param=value]`` (``"RMSE[per_user=true]"``); the canonical string is lower
case, aliases resolved and defaults dropped (``"rmse[per_user=true]"``).

Example:
    >>> import pandas as pd
    >>> r = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 3],
    ...                   "actual": [4.0, 2.0, 5.0, 3.0], "predicted": [3.5, 2.5, 4.0, 3.0]})
    >>> res = evaluate_ratings(r, ["MAE", "rmse[per_user=true]"])
    >>> {name: round(value, 4) for name, value in res.summary.items()}
    {'mae': 0.5, 'rmse[per_user=true]': 0.6036}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from receval._version import __version__
from receval.errors import InputError, MetricError, ReceValError
from receval.evaluation.options import EvalOptions
from receval.evaluation.result import Result
from receval.exact import ExactSum
from receval.io import spark_files
from receval.io.inputs import read_located
from receval.io.ratings import read_part, read_ratings
from receval.metrics.registry import REGISTRY, MetricDef
from receval.metrics.registry import lookup as ranking_lookup
from receval.metrics.spec import GRAMMAR, MetricSpec, parse_params, suggest
from receval.records import Columns

__all__ = [
    "RATING_METRICS",
    "RatingResult",
    "RatingSpec",
    "evaluate_ratings",
    "parse_rating_metric",
    "parse_rating_metrics",
    "score_ratings",
]

#: canonical name → declaration of every rating-prediction metric.
RATING_METRICS: Mapping[str, MetricDef] = MappingProxyType(
    {d.name: d for d in REGISTRY.values() if d.kind == "rating"}
)
_ALIASES: dict[str, str] = {
    name: d.name for d in RATING_METRICS.values() for name in (d.name, *d.aliases)
}


def _lookup(name: str) -> MetricDef | None:
    canonical = _ALIASES.get(name.strip().lower())
    return None if canonical is None else RATING_METRICS[canonical]


class RatingSpec(MetricSpec):
    """A rating metric with its non-default parameters; ``k`` is always None.

    Its ``str()`` is the canonical metric string, as for ranking metrics.

    Example:
        >>> str(parse_rating_metric("RMSE[per_user=true]"))
        'rmse[per_user=true]'
    """

    @property
    def definition(self) -> MetricDef:
        """The declaration of this metric (from :data:`RATING_METRICS`)."""
        d = _lookup(self.name)
        if d is None:  # pragma: no cover - specs are only built from known names
            raise MetricError(f"unknown rating metric {self.name!r}")
        return d

    @property
    def per_user(self) -> bool:
        """Whether the metric is averaged over users."""
        return bool(self.param_dict.get("per_user", False))


def parse_rating_metric(text: str) -> RatingSpec:
    """Parse one rating metric string ``name[param=value,...]`` (no ``@k``).

    Example:
        >>> spec = parse_rating_metric("R_Squared[per_user=false]")
        >>> str(spec), spec.per_user
        ('r2', False)
    """
    if not isinstance(text, str):
        raise MetricError(f"a metric must be a string like 'rmse'; got {text!r}")
    m = GRAMMAR.match(text)
    if not m:
        raise MetricError(
            f"cannot read metric {text!r}: expected name[param=value,...], e.g. 'rmse' "
            "or 'rmse[per_user=true]'"
        )
    name = m.group("name")
    d = _lookup(name)
    if d is None:
        ranking = ranking_lookup(name)
        if ranking is not None:
            raise MetricError(
                f"{text!r} is a ranking metric, not a rating-prediction metric; rating metrics "
                f"are {', '.join(RATING_METRICS)} (ranking metrics of ratings: "
                "receval.evaluate_explicit)"
            )
        raise MetricError(
            f"unknown rating metric {name!r} (valid: {', '.join(RATING_METRICS)})"
            + suggest(name, _ALIASES)
        )
    if m.group("k") is not None:
        raise MetricError(
            f"{text!r}: the rating metric {d.name} takes no cut-off @k; "
            f"write {d.name!r} or '{d.name}[per_user=true]'"
        )
    params = parse_params(m.group("params") or "", d, text)
    return RatingSpec(d.name, None, params)


def parse_rating_metrics(metrics: str | Iterable[str | MetricSpec]) -> list[RatingSpec]:
    """Parse one rating metric string or many; duplicates dropped, first kept.

    Example:
        >>> [str(s) for s in parse_rating_metrics(["RMSE", "mae[per_user=1]", "rmse"])]
        ['rmse', 'mae[per_user=true]']
    """
    items = [metrics] if isinstance(metrics, (str, MetricSpec)) else list(metrics)
    if not items:
        raise MetricError("no metric given")
    out: list[RatingSpec] = []
    for item in items:
        if isinstance(item, RatingSpec):
            out.append(item)
        elif isinstance(item, MetricSpec):
            out.append(parse_rating_metric(str(item)))
        else:
            out.append(parse_rating_metric(item))
    return list(dict.fromkeys(out))


def _compute(
    spec: RatingSpec,
    actual: np.ndarray,
    predicted: np.ndarray,
    codes: np.ndarray | None,
    n_users: int,
) -> tuple[float, np.ndarray | None]:
    """The metric's value, and with per_user its value for every user code.

    The pairs are first put in an order of their own values (actual, then
    predicted; by user first for per-user values), so that no value depends on
    the order of the input's rows: the Spark engine, whose rows have no order,
    gives the same bits."""
    if not spec.per_user:
        order = np.lexsort((predicted, actual))
        return float(spec.definition.kernel(actual[order], predicted[order])), None
    assert codes is not None
    by_user = spec.definition.by_user
    assert by_user is not None  # every rating metric declares one
    order = np.lexsort((predicted, actual, codes))
    values = by_user(actual[order], predicted[order], codes[order], n_users)
    return ExactSum.of(values).mean(), values  # exact sum, NaN (undefined) left out


def score_ratings(
    metric: str,
    actual: Sequence[float] | np.ndarray,
    predicted: Sequence[float] | np.ndarray,
    *,
    users: Sequence[Any] | np.ndarray | None = None,
) -> float:
    """One rating metric of two plain arrays (and user ids, for ``per_user=true``).

    Args:
        metric: one rating metric string, e.g. ``"rmse"`` or ``"pearson[per_user=true]"``.
        actual, predicted: the ratings, pair by pair; same length, no NaN.
        users: the user of each pair; needed by ``[per_user=true]``.

    Returns:
        The value: e.g. MAE ``Σ |a_i − p_i| / n``; NaN when undefined.

    Example:
        >>> score_ratings("rmse", [3.5, 4, 2, 5, 3], [3, 4.5, 1.5, 4.5, 2.5])
        0.5
    """
    spec = parse_rating_metric(metric)
    a = _as_ratings(actual, "actual")
    p = _as_ratings(predicted, "predicted")
    if len(a) != len(p):
        raise ReceValError(
            f"actual has {len(a)} values but predicted has {len(p)}: arrays of different lengths"
        )
    if len(a) == 0:
        raise ReceValError("no rating pairs: actual and predicted are empty")
    for values, role in ((a, "actual"), (p, "predicted")):
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{role} rating is {'missing (NaN)' if np.isnan(values[i]) else 'infinite'}",
                source=role,
                row=i,
            )
    codes: np.ndarray | None = None
    n_users = 0
    if spec.per_user:
        if users is None:
            raise ReceValError(f"{spec} needs users= (the user of each pair)")
        u = np.asarray(users)
        if len(u) != len(a):
            raise ReceValError(
                f"users has {len(u)} values but actual has {len(a)}: arrays of different lengths"
            )
        uniq, codes = np.unique(u, return_inverse=True)
        n_users = len(uniq)
    return _compute(spec, a, p, codes, n_users)[0]


def _as_ratings(values: Any, role: str) -> np.ndarray:
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ReceValError(f"{role} must be numbers; got {values!r:.80}") from None
    if out.ndim != 1:
        raise ReceValError(f"{role} must be one-dimensional; got shape {out.shape}")
    return out


class RatingResult(Result):
    """The :class:`~receval.evaluation.result.Result` of :func:`evaluate_ratings`.

    ``summary`` maps each canonical rating metric string to its value;
    ``per_user`` has one row per user (index: user id, sorted) and one column
    per metric with ``per_user=true`` — metrics computed over all pairs have no
    per-user column; ``counts`` holds ``rows`` (read), ``rows_used``,
    ``rows_dropped_missing``, ``users``, ``users_single_pair`` and
    ``undefined`` (per per-user metric: users left out of its mean).
    """

    def __getitem__(self, metric: str) -> float:
        """The value of a metric, by any spelling of its name (``res["RMSE"]``)."""
        return self.summary[str(parse_rating_metric(metric))]

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: its value and the users it averages (per-user
        metrics: users with a defined value; metrics over all pairs: all users)."""
        undefined = self.counts.get("undefined", {})
        users = [int(self.counts["users"]) - int(undefined.get(str(m), 0)) for m in self.metrics]
        return pd.DataFrame(
            {"mean": [self.summary[str(m)] for m in self.metrics], "users": users},
            index=pd.Index([str(m) for m in self.metrics], name="metric"),
        )

    def _counts_line(self) -> str:
        c = self.counts
        line = f"{c['rows_used']} rating pairs of {c['rows']} rows, {c['users']} users"
        if c["rows_dropped_missing"]:
            line += f"; {c['rows_dropped_missing']} rows dropped (missing rating)"
        return line


def evaluate_ratings(
    ratings: Any,
    metrics: str | Iterable[str | MetricSpec],
    *,
    options: EvalOptions | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    actual_col: str | None = None,
    predicted_col: str | None = None,
    dropna: bool = False,
) -> RatingResult:
    """Rating-prediction metrics of a table of (user, item, actual, predicted) rows.

    Args:
        ratings: a pandas, polars or pyarrow table, a mapping column name →
            values (all of one length), the path of a file (any format
            :func:`receval.evaluate` reads; errors name its line) or a Spark
            DataFrame (evaluated on its session). The user column is needed only by
            ``[per_user=true]`` metrics and the item column only names rows in
            error messages.
        metrics: one rating metric string or several: ``mae``, ``mse``,
            ``rmse``, ``r2``, ``pearson``, ``spearman``, ``kendall``, each
            optionally ``[per_user=true]``.
        options: an :class:`~receval.EvalOptions`; only its column names
            apply (rating metrics have no relevance or list policies).
        user_col, item_col, actual_col, predicted_col: column names; None
            (the default) detects them as :func:`receval.evaluate` does
            (actual: ``actual``, ``rating``, ...; predicted: ``predicted``,
            ``prediction``, ``score``, ...; :mod:`receval.io.ratings`).
        dropna: drop rows whose actual or predicted rating is missing (null or
            NaN) and count them in ``counts["rows_dropped_missing"]``; by
            default such a row is an error naming it.

    Returns:
        A :class:`RatingResult`: ``summary`` (e.g. ``mae`` = Σ |a_i − p_i| / n
        over all pairs; a per-user metric is the mean over users of the users'
        values), ``per_user`` (a column per ``per_user=true`` metric only),
        ``counts``, ``parameters``, ``version``.

    Example:
        >>> res = evaluate_ratings({"actual": [3.5, 4, 2, 5, 3],
        ...                         "predicted": [3, 4.5, 1.5, 4.5, 2.5]}, ["mae", "rmse"])
        >>> res.summary
        {'mae': 0.5, 'rmse': 0.5}
    """
    opts = EvalOptions.build(
        options,
        user_col=user_col,
        item_col=item_col,
        actual_col=actual_col,
        predicted_col=predicted_col,
    )
    specs = parse_rating_metrics(metrics)
    per_user = [s for s in specs if s.per_user]
    need = ("user",) if per_user else ()
    cols = Columns(
        user=opts.user_col, item=opts.item_col, actual=opts.actual_col, predicted=opts.predicted_col
    )
    there = spark_files.opened_ratings(ratings, cols, per_user[0] if per_user else None)
    if there is not None:  # a Spark DataFrame: evaluated on its session
        return _on_spark(*there, specs, opts, dropna)
    try:  # a path is opened by the one way in; errors name its file and line
        r = read_located(
            ratings,
            "ratings",
            cols,
            lambda table, columns, source: read_ratings(
                table, columns, dropna=dropna, need=need, source=source
            ),
        )
    except InputError as exc:
        if per_user and exc.column is None and "no user column" in exc.reason:
            raise InputError(f"{exc.reason} (needed by {per_user[0]})", source=exc.source) from None
        raise
    rows, dropped = r.rows, r.dropped
    actual, predicted, users = r.actual, r.predicted, r.users

    codes: np.ndarray | None = None
    uniq: np.ndarray = np.empty(0, dtype=object)
    if users is not None:
        uniq, codes = np.unique(users, return_inverse=True)
    n_users = len(uniq)

    summary: dict[str, float] = {}
    columns: dict[str, np.ndarray] = {}
    undefined: dict[str, int] = {}
    for spec in specs:
        value, by_user = _compute(spec, actual, predicted, codes, n_users)
        summary[str(spec)] = value
        if by_user is not None:
            columns[str(spec)] = by_user
            if np.isnan(by_user).any():
                undefined[str(spec)] = int(np.isnan(by_user).sum())
    index = pd.Index(uniq, name="user")
    frame = pd.DataFrame(columns, index=index, columns=[str(s) for s in per_user])
    single = int((np.bincount(codes, minlength=n_users) == 1).sum()) if codes is not None else 0
    counts: dict[str, Any] = {
        "rows": rows,
        "rows_used": len(actual),
        "rows_dropped_missing": dropped,
        "users": n_users,
        "users_evaluated": n_users,
        "users_single_pair": single,
        "undefined": undefined,
    }
    return rating_result(specs, summary, frame, counts, opts, dropna, r.columns, users is None)


def rating_result(
    specs: Sequence[RatingSpec],
    summary: dict[str, float],
    frame: pd.DataFrame | None,
    counts: dict[str, Any],
    opts: EvalOptions,
    dropna: bool,
    columns: Mapping[str, str],
    no_users: bool,
) -> RatingResult:
    """The :class:`RatingResult` of computed values (every engine's)."""
    notes = []
    if no_users:
        notes.append("no user column: metrics computed over all pairs only")
    parameters: dict[str, Any] = {
        **{k: getattr(opts, k) for k in ("user_col", "item_col", "actual_col", "predicted_col")},
        "dropna": bool(dropna),
        "columns": dict(columns),
        "per_user": "mean over users of each user's value; undefined users left out",
        "spearman": "Pearson's r of average ranks",
        "kendall": "tau-b (scipy.stats.kendalltau)",
        "r2": "1 − SS_res / SS_tot; NaN when SS_tot = 0",
    }
    return RatingResult(
        summary=summary,
        per_user=frame,
        counts=counts,
        parameters=parameters,
        metrics=list(specs),
        notes=notes,
        version=__version__,
    )


def _on_spark(
    df: Any,
    found: dict[str, str],
    specs: Sequence[RatingSpec],
    opts: EvalOptions,
    dropna: bool,
) -> RatingResult:
    """:func:`evaluate_ratings` of a Spark DataFrame, by the Spark engine of
    ratings (:mod:`receval.engines.spark_ratings`): the same numbers as in
    process, bit for bit, whatever the partitioning."""
    from receval.engines import spark_ratings as engine

    per_user = [s for s in specs if s.per_user]
    need = ("user",) if per_user else ()
    total = engine.totals(df, specs, dropna, need, read_part)
    if total.rows == 0:
        raise InputError("no rating pairs: the ratings table is empty", source="ratings")
    if total.used == 0:
        raise InputError(
            f"no rating pairs left: all {total.rows} rows have a missing rating", source="ratings"
        )
    summary, undefined, pooled = _spark_summary(df, specs, total, dropna)
    counts: dict[str, Any] = {
        "rows": total.rows,
        "rows_used": total.used,
        "rows_dropped_missing": total.dropped,
        "users": total.users,
        "users_evaluated": total.users,
        "users_single_pair": total.single,
        "undefined": undefined,
    }
    res = rating_result(specs, summary, None, counts, opts, dropna, found, "user" not in found)
    if pooled:
        res.notes.append(
            f"{', '.join(str(s) for s in pooled)} over all pairs: the actual and predicted "
            "ratings were collected to the driver (16 bytes per pair)"
        )
    if "user" in found:
        res.per_user_spark = engine.per_user_frame(df, per_user, dropna, read_part, total.spelled)
    else:
        res.per_user = pd.DataFrame(columns=[str(s) for s in per_user])
    res.parameters["engine"] = "spark"
    return res


def _spark_summary(
    df: Any, specs: Sequence[RatingSpec], total: Any, dropna: bool
) -> tuple[dict[str, float], dict[str, int], list[RatingSpec]]:
    """Each metric's value from the partitions' sums: a per-user metric's
    mean over users, a metric declared ``from_error_sums`` from the exact
    means of |a − p| and (a − p)²; any other over all pairs from the pairs
    collected to the driver (returned: those metrics)."""
    from receval.engines.spark_ratings import collected_pairs

    per_user = [s for s in specs if s.per_user]
    pooled = [s for s in specs if not s.per_user and s.definition.from_error_sums is None]
    pairs = collected_pairs(df, dropna) if pooled else None
    sums = dict(zip([str(s) for s in per_user], total.sums, strict=True))
    summary: dict[str, float] = {}
    undefined: dict[str, int] = {}
    for s in specs:
        name = str(s)
        from_sums = s.definition.from_error_sums
        if s.per_user:
            summary[name] = sums[name].mean()
            if sums[name].nan:
                undefined[name] = sums[name].nan
        elif from_sums is not None:
            summary[name] = float(from_sums(total.absolute.mean(), total.squared.mean()))
        else:
            assert pairs is not None
            a, p = pairs
            order = np.lexsort((p, a))
            summary[name] = float(s.definition.kernel(a[order], p[order]))
    return summary, undefined, pooled
