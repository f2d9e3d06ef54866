"""``receval demo --sessions``: the next-item protocol end to end, no download.

:func:`run_session_demo`:

1. data: :func:`receval.workflow.synthetic.synthetic_sessions` (sessions
   whose items follow each item's successor, the session's topic and
   trending items);
2. split: :func:`receval.split` ``method="session"``: the last 20% of the
   sessions (by time) are test, whole;
3. systems (:mod:`receval.workflow.session_baselines`): Markov (last-item
   transitions), session item-kNN (session-rec's ``ItemKNN``), most popular
   in the last 7 days, and most popular over all the training data as the
   floor; each lists :data:`LIST_LENGTH` items after every prefix, the
   prefix's items excluded;
4. evaluation: :func:`receval.evaluate_next_items` (target the next item,
   averaged over steps) on :data:`SESSION_METRICS`;
5. comparison: one :func:`receval.compare` of the best system (by
   :data:`MAIN_METRIC`) against the all-time popularity floor, sessions as
   the paired units (paired t-test, percentile bootstrap intervals).

Nothing is written to disk: the console shows the table and the comparison,
and the function returns them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from receval.analysis.compare import compare
from receval.errors import ReceValError, check_seed, for_python
from receval.evaluation.next_items import NextItemResult, evaluate_next_items
from receval.workflow.session_baselines import (
    MarkovRecommender,
    RecentPopularRecommender,
    SessionItemKNNRecommender,
    SessionRecommender,
)
from receval.workflow.split import split
from receval.workflow.synthetic import synthetic_sessions

__all__ = ["LIST_LENGTH", "MAIN_METRIC", "SESSION_METRICS", "run_session_demo"]

#: The metrics of the session demo (target: the next item).
SESSION_METRICS: list[str] = ["hit_rate@10,20", "mrr@10,20", "ndcg@10,20", "coverage@20"]

#: Length of every list.
LIST_LENGTH = 20

#: The metric the table is sorted by (and the comparison tests, with hit_rate@20).
MAIN_METRIC = "rr@20"

#: The metrics the comparison tests.
COMPARED: tuple[str, ...] = ("rr@20", "hit_rate@20")

#: Bootstrap resamples of the comparison's intervals.
N_RESAMPLES = 1000


def _systems() -> dict[str, SessionRecommender]:
    return {
        "markov": MarkovRecommender(),
        "session_item_knn": SessionItemKNNRecommender(),
        "recent_popular": RecentPopularRecommender(window="7D"),
        "popular": RecentPopularRecommender(window=None),
    }


def run_session_demo(
    *,
    sessions: int = 5_000,
    seed: int = 0,
    quiet: bool = False,
    console: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Generate a session log, split it by time, fit four session baselines,
    evaluate their next-item lists and compare the best with popularity.

    Args:
        sessions: sessions of the synthetic log (items: ``max(50, sessions // 10)``).
        seed: seed of the log and of the comparison's bootstrap.
        quiet: print nothing.
        console: where the console lines go (default: print).

    Returns:
        ``leaderboard`` (DataFrame: one row per system, one column per
        metric, best :data:`MAIN_METRIC` first), ``comparison`` (the best
        against ``popular``), ``results`` (system → :class:`~receval.NextItemResult`),
        ``split`` (the :class:`~receval.workflow.split.Split`), ``seconds``.

    Example:
        >>> out = run_session_demo(sessions=400, quiet=True)
        >>> list(out["leaderboard"].index)[-1], out["comparison"].systems[-1]
        ('popular', 'popular')
    """
    check_seed(seed)
    if isinstance(sessions, bool) or not isinstance(sessions, int) or sessions < 10:
        raise ReceValError(f"sessions must be an integer >= 10; got {sessions!r}")
    t0 = time.perf_counter()
    show = console or (lambda s: print(for_python(s)))
    say: Callable[[str], None] = (lambda s: None) if quiet else show
    log = synthetic_sessions(sessions, max(50, sessions // 10), seed=seed)
    say(
        f"data: synthetic session log (receval.synthetic_sessions, sessions={sessions}, "
        f"seed={seed}): {len(log)} events, {log['session'].nunique()} sessions, "
        f"{log['item'].nunique()} items"
    )
    sp = split(log, method="session", session_col="session", test_size=0.2)
    for line in sp.describe():
        say(line)
    say(
        f"protocol: a list of {LIST_LENGTH} after each prefix of each test session, "
        "the prefix's items excluded; target: the next item; averaged over steps"
    )
    catalog = pd.unique(sp.train["item"])  # coverage: the share of these listed
    results: dict[str, NextItemResult] = {}
    for name, model in _systems().items():
        t = time.perf_counter()
        model.fit(sp.train, time_col="timestamp")
        results[name] = evaluate_next_items(
            model.lister(LIST_LENGTH),
            sp.test,
            SESSION_METRICS,
            time_col="timestamp",
            catalog=catalog,
        )
        c = results[name].counts
        say(
            f"{name}: {c['steps_evaluated']} steps of {c['sessions_evaluated']} sessions "
            f"in {time.perf_counter() - t:.2f} s"
        )
    names = [str(m) for m in next(iter(results.values())).metrics]
    board = pd.DataFrame(
        {name: [res.summary[m] for m in names] for name, res in results.items()}, index=names
    ).T
    board.index.name = "system"
    board = board.sort_values(MAIN_METRIC, ascending=False, kind="stable")
    best = str(board.index[0]) if board.index[0] != "popular" else str(board.index[1])
    comparison = compare(
        {best: results[best], "popular": results["popular"]},
        None,
        list(COMPARED),
        test="t",
        correction="holm",
        ci="percentile",
        n_resamples=N_RESAMPLES,
        seed=seed,
    )
    seconds = time.perf_counter() - t0
    for line in [
        "",
        "next-item accuracy (mean over steps):",
        board.to_string(float_format=lambda v: f"{v:.4f}"),
        "",
        f"{best} against popular (sessions paired: each session's mean over its steps):",
        str(comparison),
        "",
        f"done in {seconds:.1f} s",
    ]:
        say(line)
    return {
        "leaderboard": board,
        "comparison": comparison,
        "results": results,
        "split": sp,
        "seconds": seconds,
    }
