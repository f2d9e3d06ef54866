"""The gap between two groups of users: unpaired tests (issue #20).

Two groups hold different users, so their gap is tested unpaired — a Welch
t-test, or a permutation test of the group labels — on the per-user values of
each group's own evaluation (``Result.group_results``: each group evaluated
alone, as ``Result.groups`` shows it), never with a paired test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as _sps

from receval.analysis import stats
from receval.errors import OptionError, ReceValError
from receval.evaluation.result import Result

__all__ = ["group_gap"]

_TESTS = ("welch", "permutation")


def group_gap(
    result: Result,
    grouping: str,
    a: Any,
    b: Any,
    metrics: str | Iterable[str] | None = None,
    *,
    test: str = "welch",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Whether two groups of users differ, metric by metric (unpaired).

    For each per-user metric, the users of group ``a`` and of group ``b`` of
    ``grouping`` with a value (evaluated, value defined) give ``mean_a`` and
    ``mean_b`` (exact sums: the values of ``result.groups``) and
    ``difference = mean_a − mean_b``; then

    - ``test="welch"``: :func:`receval.analysis.stats.welch_t_test` —
      ``statistic`` (t), ``df`` (Welch–Satterthwaite), ``p_value``, and the
      ``1 − alpha`` interval of the difference ``difference ± t_{1−α/2, df} · se``
      (``ci_low``, ``ci_high``);
    - ``test="permutation"``: :func:`receval.analysis.stats.permutation_test`
      with ``n_resamples`` reassignments of the group labels from ``seed``
      (``statistic`` = the difference; no interval).

    Args:
        result: an evaluation with ``user_groups=``.
        grouping: a grouping of it (a group column, ``group`` for a mapping,
            ``activity``, ``cold_start``).
        a, b: two groups of that grouping (e.g. ``"cold"``, ``"warm"``).
        metrics: per-user metrics of the result (default: every one).

    Returns:
        One row per metric: ``mean_a``, ``mean_b``, ``difference``, ``users_a``,
        ``users_b``, ``test``, ``statistic``, ``df``, ``p_value``, ``ci_low``,
        ``ci_high``. Not corrected for multiple metrics.

    Example:
        >>> import receval
        >>> truth = {u: [1] for u in range(8)}
        >>> recs = {u: [1] if u < 4 else [2, 1] for u in range(8)}
        >>> res = receval.evaluate(recs, truth, "rr@2", user_groups={u: u < 4 for u in range(8)})
        >>> gap = group_gap(res, "group", True, False)
        >>> gap.loc["rr@2", ["mean_a", "mean_b", "difference"]].tolist()
        [1.0, 0.5, 0.5]
    """
    if result.group_results is None or result.groups is None:
        raise ReceValError(
            "group_gap needs an evaluation with user groups: receval.evaluate(..., user_groups=...)"
        )
    if result.parameters.get("engine") == "spark":
        raise ReceValError(
            "group_gap tests per-user values, which a Spark evaluation keeps on the cluster "
            "(Result.per_user_spark); evaluate in-process for the test, or compare the groups' "
            "means in Result.groups"
        )
    test = _checked(test, alpha, n_resamples)
    values = {}
    for label in (a, b):
        key = (grouping, label)
        if key not in result.groups.index:
            known = [g for g, _ in result.groups.index if g == grouping]
            groups = [v for g, v in result.groups.index if g == grouping]
            what = (
                f"groups of {grouping!r}: {', '.join(map(repr, groups))}"
                if known
                else "groupings: "
                + ", ".join(map(repr, dict.fromkeys(g for g, _ in result.groups.index)))
            )
            raise ReceValError(f"no group {key!r} in the result; its {what}")
        if key not in result.group_results:
            raise ReceValError(f"group {label!r} of {grouping!r} was not evaluated (see the notes)")
        values[label] = result.group_results[key].per_user
    per_user = [str(m) for m in result.metrics if str(m) in values[a].columns]
    if metrics is None:
        names = per_user
    else:
        names = [metrics] if isinstance(metrics, str) else list(metrics)
        from receval.metrics.spec import parse_metric

        names = [str(parse_metric(m)) for m in names]
        missing = [m for m in names if m not in per_user]
        if missing:
            raise ReceValError(
                f"{', '.join(missing)}: not a per-user metric of this result "
                f"(per-user metrics: {', '.join(per_user)})"
            )
    rows = []
    for m in names:
        x = values[a][m].dropna().to_numpy(dtype=np.float64)
        y = values[b][m].dropna().to_numpy(dtype=np.float64)
        ma, mb = stats.Moments.of(x), stats.Moments.of(y)
        row: dict[str, Any] = {
            "mean_a": ma.mean(),
            "mean_b": mb.mean(),
            "difference": ma.mean() - mb.mean(),
            "users_a": ma.n,
            "users_b": mb.n,
            "test": test,
            "df": math.nan,
            "ci_low": math.nan,
            "ci_high": math.nan,
        }
        if test == "welch":
            found, df = stats.welch_of(ma, mb)
            row |= {"statistic": found.statistic, "p_value": found.pvalue, "df": df}
            if df == df:  # an interval where the t distribution is defined
                se = math.sqrt(ma.variance() / ma.n + mb.variance() / mb.n)
                half = float(_sps.t.ppf(1 - alpha / 2, df)) * se
                row |= {"ci_low": row["difference"] - half, "ci_high": row["difference"] + half}
        else:
            found = stats.permutation_test(x, y, n_resamples=n_resamples, seed=seed)
            row |= {"statistic": found.statistic, "p_value": found.pvalue}
        rows.append(row)
    columns = ["mean_a", "mean_b", "difference", "users_a", "users_b", "test"]
    columns += ["statistic", "df", "p_value", "ci_low", "ci_high"]
    frame = pd.DataFrame(rows, columns=columns, index=pd.Index(names, name="metric"))
    frame.attrs.update({"grouping": grouping, "a": a, "b": b, "alpha": alpha})
    return frame


def _checked(test: str, alpha: float, n_resamples: Any) -> str:
    """The test's name, checked with ``alpha`` and (for the permutation test)
    ``n_resamples``: one relabelling gives p-values of 0.5 or more."""
    test = str(test).lower()
    if test not in _TESTS:
        raise OptionError("test", test, allowed=_TESTS)
    if not 0 < alpha < 1:
        raise OptionError("alpha", alpha, expected="a number between 0 and 1 (exclusive)")
    if test == "permutation" and (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 2
    ):
        raise OptionError(
            "n_resamples",
            n_resamples,
            expected="a whole number >= 2",
            reason="one relabelling gives p-values of 0.5 or more",
        )
    return test
