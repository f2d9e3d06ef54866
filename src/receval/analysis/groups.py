"""The gap between two groups of users: unpaired tests (issue #20); the mean
absolute deviation across all groups of a grouping (Elliot's MAD, issue #34).

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

__all__ = ["group_gap", "group_mad"]

_TESTS = ("welch", "permutation")
_MAD_TESTS = ("permutation", "kruskal")


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
    names = _asked(metrics, [str(m) for m in result.metrics if str(m) in values[a].columns])
    rows = []
    for m in names:
        # sorted: a multiset of values, whatever order the users came in (ids as
        # numbers sort apart from ids as text; the relabelling must not see it)
        x = np.sort(values[a][m].dropna().to_numpy(dtype=np.float64))
        y = np.sort(values[b][m].dropna().to_numpy(dtype=np.float64))
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


def group_mad(
    result: Result,
    grouping: str,
    metrics: str | Iterable[str] | None = None,
    *,
    groups: Iterable[Any] | None = None,
    test: str = "permutation",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """How far apart the groups of a grouping are: the mean absolute deviation
    (MAD) of a metric's group means, with its significance.

    For a per-user metric and the groups ``1..G`` of ``grouping`` (each with
    ``n_g`` users whose value is defined and mean ``m_g``: the exact means of
    ``result.groups``)

    ``MAD = (2 / (G (G − 1))) · Σ_{g < h} |m_g − m_h|``,

    the mean of the absolute differences over all pairs of groups: Elliot's
    ``UserMADranking`` / ``UserMADrating`` (Deldjoo, Anelli, Zamani, Bellogín &
    Di Noia, "A flexible framework for evaluating user and item fairness in
    recommender systems", UMUAI 2021) for any metric receval evaluates, one of
    your own included. With two groups it is ``|mean_a − mean_b|`` of
    :func:`group_gap`. Groups without a defined value are left out (named in
    ``skipped``); fewer than two groups give NaN.

    Its significance (no difference between the groups):

    - ``test="permutation"``: the group labels are exchangeable under the null;
      a resample deals the pooled values to the groups at random (sizes kept:
      the order of ``n`` uniform keys, ``rng.random``, in blocks whose size
      depends only on the sizes, so one seed gives one p-value), and
      ``p = (1 + #{MAD* ≥ MAD}) / (1 + n_resamples)`` (never 0; within 1e-9 of
      the values' scale counts as reaching it). All values equal gives ``p = 1``.
      Its cost is ``n_resamples`` sorts of the users' values.
    - ``test="kruskal"``: the Kruskal–Wallis H test (:func:`scipy.stats.kruskal`,
      ties corrected) of the groups' distributions: ranks, no resampling, for
      many users; ``statistic`` is H. All values equal gives ``p = 1``.

    Args:
        result: an evaluation with ``user_groups=``.
        grouping: a grouping of it (a group column, ``group`` for a mapping,
            ``activity``, ``cold_start``).
        metrics: per-user metrics of the result (default: every one).
        groups: the groups to compare (default: every group of ``grouping``
            that was evaluated).

    Returns:
        One row per metric: ``mad``, ``groups`` (how many took part), ``users``,
        ``largest_gap`` (the largest ``|m_g − m_h|``), ``test``, ``statistic``
        (the MAD for the permutation test, H for Kruskal–Wallis), ``p_value``,
        ``skipped`` (groups left out). Not corrected for multiple metrics.

    Example:
        >>> import receval
        >>> truth = {u: [1] for u in range(9)}
        >>> recs = {u: [1] if u < 3 else [2, 1] if u < 6 else [2, 3] for u in range(9)}
        >>> tier = {u: ("a", "b", "c")[u // 3] for u in range(9)}
        >>> res = receval.evaluate(recs, truth, "rr@2", user_groups=tier)
        >>> row = group_mad(res, "group").loc["rr@2"]  # means 1, 0.5, 0
        >>> round(float(row["mad"]), 4), int(row["groups"]), float(row["largest_gap"])
        (0.6667, 3, 1.0)
    """
    if result.group_results is None or result.groups is None:
        raise ReceValError(
            "group_mad needs an evaluation with user groups: receval.evaluate(..., user_groups=...)"
        )
    if result.parameters.get("engine") == "spark":
        raise ReceValError(
            "group_mad tests per-user values, which a Spark evaluation keeps on the cluster "
            "(Result.per_user_spark); evaluate in-process for the test, or compare the groups' "
            "means in Result.groups"
        )
    test = str(test).lower()
    if test not in _MAD_TESTS:
        raise OptionError("test", test, allowed=_MAD_TESTS)
    if test == "permutation" and (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 1
    ):
        raise OptionError("n_resamples", n_resamples, expected="a whole number >= 1")
    chosen = _mad_groups(result, grouping, groups)
    frames = {v: result.group_results[(grouping, v)].per_user for v in chosen}
    names = _asked(
        metrics,
        [str(m) for m in result.metrics if all(str(m) in f.columns for f in frames.values())],
    )
    # each group's values sorted: the deal must not see the users' order
    rows = [
        _mad_row(
            [np.sort(frames[v][m].dropna().to_numpy(dtype=np.float64)) for v in chosen],
            chosen,
            test,
            n_resamples,
            seed,
        )
        for m in names
    ]
    columns = ["mad", "groups", "users", "largest_gap", "test", "statistic", "p_value"]
    frame = pd.DataFrame(rows, columns=[*columns, "skipped"], index=pd.Index(names, name="metric"))
    frame.attrs.update({"grouping": grouping, "groups": tuple(chosen)})
    return frame


def _mad_groups(result: Result, grouping: str, groups: Iterable[Any] | None) -> list[Any]:
    """The groups of ``grouping`` that :func:`group_mad` compares, checked."""
    labels = [v for g, v in result.groups.index if g == grouping]
    if not labels:
        raise ReceValError(
            f"no grouping {grouping!r} in the result; its groupings: "
            + ", ".join(map(repr, dict.fromkeys(g for g, _ in result.groups.index)))
        )
    if groups is None:
        return [v for v in labels if (grouping, v) in result.group_results]
    chosen = list(dict.fromkeys(groups))
    for label in chosen:
        if label not in labels:
            raise ReceValError(
                f"no group {label!r} of {grouping!r} in the result; its groups: "
                + ", ".join(map(repr, labels))
            )
        if (grouping, label) not in result.group_results:
            raise ReceValError(f"group {label!r} of {grouping!r} was not evaluated (see the notes)")
    return chosen


def _mad_row(
    values: list[np.ndarray], chosen: list[Any], test: str, n_resamples: int, seed: int
) -> dict[str, Any]:
    """One metric's row of :func:`group_mad` from each group's sorted values."""
    kept = [x for x in values if x.size]
    row: dict[str, Any] = {
        "mad": math.nan,
        "groups": len(kept),
        "users": sum(x.size for x in kept),
        "largest_gap": math.nan,
        "test": test,
        "statistic": math.nan,
        "p_value": math.nan,
        "skipped": tuple(v for v, x in zip(chosen, values, strict=True) if not x.size),
    }
    if len(kept) < 2:
        return row
    means = np.array([stats.Moments.of(x).mean() for x in kept])
    gaps = _pair_gaps(means[None, :])[0]
    row |= {"mad": float(gaps.mean()), "largest_gap": float(gaps.max())}
    if test == "permutation":
        return row | {"statistic": row["mad"], "p_value": _mad_p(kept, n_resamples, seed)}
    pooled = np.concatenate(kept)
    if float(pooled.max() - pooled.min()) == 0.0:
        return row | {"statistic": 0.0, "p_value": 1.0}
    found = _sps.kruskal(*kept)
    return row | {"statistic": float(found.statistic), "p_value": float(found.pvalue)}


def _pair_gaps(means: np.ndarray) -> np.ndarray:
    """``|m_g − m_h|`` for every pair ``g < h`` of each row of group means."""
    i, j = np.triu_indices(means.shape[1], 1)
    return np.abs(means[:, i] - means[:, j])


def _mad_p(kept: list[np.ndarray], n_resamples: int, seed: int) -> float:
    """The permutation p-value of the MAD of ``kept`` (see :func:`group_mad`)."""
    pooled = np.concatenate(kept)
    if float(pooled.max() - pooled.min()) == 0.0:
        return 1.0
    sizes = np.array([x.size for x in kept])
    ends = np.cumsum(sizes)
    starts = ends - sizes
    n = int(ends[-1])
    observed = _pair_gaps(np.array([[x.sum() / x.size for x in kept]]))[0].mean()
    target = observed - 1e-9 * float(np.abs(pooled).sum()) / int(sizes.min())
    rng = stats.rng_from(seed)
    count = 0
    rows = stats._block_rows(n, n_resamples)
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        dealt = pooled[np.argsort(rng.random((m, n)), axis=1)]
        sums = np.concatenate([np.zeros((m, 1)), np.cumsum(dealt, axis=1)], axis=1)
        means = (sums[:, ends] - sums[:, starts]) / sizes
        count += int(np.count_nonzero(_pair_gaps(means).mean(axis=1) >= target))
    return (1 + count) / (1 + n_resamples)


def _asked(metrics: str | Iterable[str] | None, per_user: list[str]) -> list[str]:
    """The metrics asked for (canonical names; default: every per-user one), each
    checked to be a per-user metric of the result."""
    if metrics is None:
        return per_user
    from receval.metrics.spec import parse_metric

    names = [str(parse_metric(m)) for m in ([metrics] if isinstance(metrics, str) else metrics)]
    missing = [m for m in names if m not in per_user]
    if missing:
        raise ReceValError(
            f"{', '.join(missing)}: not a per-user metric of this result "
            f"(per-user metrics: {', '.join(per_user)})"
        )
    return names


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
