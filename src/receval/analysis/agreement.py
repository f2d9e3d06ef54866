"""Agreement of a run with a reference run: ``receval.agreement``.

The reference is read by the readers of recommendations (every form a run
takes: tables, mappings ``user -> items`` or ``user -> {item: score}``, TREC
run, CSV or Parquet files), each list ordered (rank ascending, or score
descending with ties by item id ascending), and turned into a truth table whose
grade encodes the reference rank: ``grade = R + 1 − rank`` for a list of R items.
The ordinary :func:`receval.evaluate` then computes the agreement metrics of
:mod:`receval.metrics.kernels.agreement` from it, marked as reading a reference
(:func:`~receval.evaluation.reference.through_door`), the one way those
metrics run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import numpy as np
import pandas as pd

from receval.errors import (
    InputError,
    NoSharedUser,
    OptionError,
    PolicyError,
    ReceValError,
    option,
    said,
)
from receval.evaluation.api import evaluate
from receval.evaluation.reference import through_door
from receval.evaluation.result import Result
from receval.io import spark_files
from receval.io.tables import read_recs
from receval.metrics.spec import MetricSpec, parse_metrics
from receval.records import Columns

__all__ = ["agreement", "reference_truth_table"]

OnlyIn = Literal["skip", "empty", "error"]
_ONLY_IN = ("skip", "empty", "error")


def reference_truth_table(
    reference: Any,
    *,
    duplicates: Literal["error", "keep"] = "error",
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
) -> pd.DataFrame:
    """The truth table that encodes a reference run: columns ``user``, ``item``
    and ``grade = R + 1 − rank`` (R the user's list length, rank 1 = best).

    Each list is ordered by its rank column (ascending), or by its score
    (descending), ties by item id ascending. An item listed twice for a user is
    an error, or with ``duplicates="keep"`` counts once, at its best rank. A
    Spark DataFrame is collected to the driver (the table is built there).

    Example:
        >>> reference_truth_table({"u": ["b", "a", "c"]}).to_dict("list")
        {'user': ['u', 'u', 'u'], 'item': ['b', 'a', 'c'], 'grade': [3, 2, 1]}
    """
    cols = Columns(user=user_col, item=item_col, score=score_col, rank=rank_col)
    recs = read_recs(spark_files.collected(reference), cols, source="reference")
    if recs.rank is not None:
        key = np.asarray(recs.rank, dtype=np.float64)
    elif recs.score is not None:
        key = -np.asarray(recs.score, dtype=np.float64)
    else:  # a mapping user -> sequence: rank by position
        key = np.zeros(len(recs.users))
    # ids as codes in their own order (numbers numerically, text by code point)
    user_code, _ = pd.factorize(recs.users, sort=True)
    item_code, _ = pd.factorize(recs.items, sort=True)
    if recs.rank is None and recs.score is None:  # a mapping: the lists' own order
        order = np.lexsort((np.arange(len(key)), user_code))
    else:  # best first, equal ranks or scores by item id ascending
        order = _by_user_key_item(user_code, key, item_code)
    user_code, item_code = user_code[order], item_code[order]
    pair = user_code.astype(np.int64) * (int(item_code.max(initial=0)) + 1) + item_code
    twice = pd.Series(pair).duplicated().to_numpy()  # after the item's best place
    if twice.any():
        if duplicates != "keep":
            i = int(np.flatnonzero(twice)[0])
            at, first = order[i], order[int(np.flatnonzero(pair == pair[i])[0])]
            raise InputError(
                "the reference lists this item twice for this user ({rows}): give "
                f"{option('duplicates', 'keep')} to count its best rank only",
                source="reference",
                row=recs.row_of(int(at)),
                other_row=recs.row_of(int(first)),
                user=recs.users[at],
                item=recs.items[at],
            )
        order, user_code = order[~twice], user_code[~twice]
    # rank within each user's run of rows, and the run's length R: grade R + 1 − rank
    starts = np.flatnonzero(np.r_[True, user_code[1:] != user_code[:-1]])
    lengths = np.diff(np.r_[starts, len(order)])
    rank = np.arange(len(order)) - np.repeat(starts, lengths) + 1
    grade = np.repeat(lengths, lengths) + 1 - rank
    return pd.DataFrame(
        {"user": recs.users[order], "item": recs.items[order], "grade": grade.astype(np.int64)}
    )


def _by_user_key_item(user: np.ndarray, key: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The rows' order by user, then key, then item (all ascending): two stable
    sorts of integers (``np.lexsort`` of three keys is 10x slower); none when
    the rows are in that order already (a file written best first)."""
    du, dk, di = np.diff(user), np.diff(key), np.diff(item)
    if ((du > 0) | ((du == 0) & ((dk > 0) | ((dk == 0) & (di > 0))))).all():
        return np.arange(len(user))
    key_code, _ = pd.factorize(key, sort=True)
    width = int(key_code.max(initial=0)) + 1
    if (int(user.max(initial=0)) + 1) * width >= 2**62:  # pragma: no cover - no room
        return np.lexsort((item, key, user))
    by_item = np.argsort(item, kind="stable")
    outer = user.astype(np.int64)[by_item] * width + key_code[by_item]
    return by_item[np.argsort(outer, kind="stable")]


@contextlib.contextmanager
def _said_as_agreement() -> Iterator[None]:
    """A user on one side only, refused under ``only_in_run``/``only_in_reference
    = "error"``, said with those options (the evaluation's own are ``no_truth``
    and ``missing_recs``)."""
    try:
        yield
    except NoSharedUser as exc:  # said of a run and a reference, not of recommendations and truth
        error = NoSharedUser(
            "no user has a list in both the run and the reference: the run's users (e.g. "
            f"{', '.join(map(repr, exc.recommendation_users))}) and the reference's (e.g. "
            f"{', '.join(map(repr, exc.truth_users))}) have none in common. Are the user and "
            "item columns swapped? Are the ids written alike on both sides (e.g. 'u1' vs 1)?",
            recommendation_users=exc.recommendation_users,
            truth_users=exc.truth_users,
        )
        raise error from None
    except PolicyError as exc:
        if "but no truth" in str(exc):
            text, name = "has a list in the run but none in the reference", "only_in_run"
        elif "but no recommendations" in str(exc):
            text, name = "has a reference list but none in the run", "only_in_reference"
        else:  # pragma: no cover - agreement skips users without relevant items
            raise
        error = PolicyError(f"user {exc.user!r} {text} ({option(name, 'error')})")
        error.user = exc.user
        raise error from None


def agreement(
    run: Any,
    reference: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    only_in_run: OnlyIn = "skip",
    only_in_reference: OnlyIn = "skip",
    duplicates: Literal["error", "keep"] = "error",
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    progress: Callable[[int], None] | bool | None = None,
    user_groups: Any = None,
) -> Result:
    """How far each user's list agrees with the same user's list in a reference run.

    Metrics (:mod:`receval.metrics.kernels.agreement`; ``@k`` cuts both lists at k,
    without it the whole lists are compared): ``rbo`` (alias ``rbo_ext``, the
    extrapolated rank-biased overlap, Webber, Moffat & Zobel 2010, eq. 32),
    ``rbo_min`` (its lower bound, eq. 11), ``rbo_res`` (its residual, eq. 30),
    each with ``[p=...]`` (persistence, default 0.9); ``intersection@k[ref_k=...]``
    (the share of the top k in the reference's top ref_k, RecTools'
    Intersection) and ``jaccard@k``.

    Args:
        run: the lists compared, in any form ``evaluate`` reads recommendations.
        reference: the reference lists, in the same forms (a mapping
            ``user -> {item: score}`` is ordered by score, ranx's runs); a
            Spark DataFrame is collected to the driver, where its truth table
            is built (the run stays in Spark).
        metrics: agreement metric strings, e.g. ``["rbo@10[p=0.8]", "jaccard@5"]``.
        only_in_run: users with a list in ``run`` but none in ``reference``:
            ``skip`` (NaN, left out of the means and counted), ``empty`` (compared
            with an empty list: rbo, rbo_min, intersection and jaccard 0, rbo_res
            1) or ``error``.
        only_in_reference: users with a reference list but none in ``run``: the same.
        duplicates: an item listed twice for a user (in either run) is an
            ``error``; ``keep`` counts it once, at its best rank.
        user_col, item_col, score_col, rank_col: column names of both runs'
            tables; None detects them as ``evaluate`` does.
        progress, user_groups: as in :func:`receval.evaluate`.

    Returns:
        A :class:`~receval.Result` (summary, per-user values, counts).

    Example:
        >>> res = agreement({"u": ["a", "b", "c"]}, {"u": ["a", "c", "b"]}, ["rbo@3", "jaccard@2"])
        >>> {m: round(v, 4) for m, v in res.summary.items()}
        {'rbo@3': 0.955, 'jaccard@2': 0.3333}
    """
    specs = parse_metrics(metrics)
    others = [str(s) for s in specs if s.definition.door != "agreement"]
    if others:
        raise ReceValError(
            f"{', '.join(others)}: not an agreement metric; receval.agreement computes "
            "rbo, rbo_min, rbo_res, intersection and jaccard "
            f"({said('receval.evaluate', 'receval evaluate')} the others)"
        )
    for name, value in (("only_in_run", only_in_run), ("only_in_reference", only_in_reference)):
        if value not in _ONLY_IN:
            raise OptionError(name, value, allowed=_ONLY_IN)
    truth = reference_truth_table(
        reference,
        duplicates=duplicates,
        user_col=user_col,
        item_col=item_col,
        score_col=score_col,
        rank_col=rank_col,
    )
    with through_door("agreement"), _said_as_agreement():
        return evaluate(
            run,
            truth,
            specs,
            threshold=1,
            graded=True,
            relevant_from="truth",
            ties="item",
            rank="order",
            duplicates=duplicates,
            empty_truth="skip",
            missing_recs={"empty": "zero"}.get(only_in_reference, only_in_reference),
            no_truth={"empty": "keep"}.get(only_in_run, only_in_run),
            user_col=user_col,
            item_col=item_col,
            score_col=score_col,
            rank_col=rank_col,
            relevance_col="grade",
            truth_user_col="user",
            truth_item_col="item",
            progress=progress,
            user_groups=user_groups,
        )
