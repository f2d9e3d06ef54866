"""Next-item evaluation: a list after each prefix of a test session
(:func:`evaluate_next_items`, docs/next-items.md).

For a test session s1..sn (its items in time order) the model is asked for a
list after each prefix s1..st, t = 1..n−1: *step* t. The list of step t is
evaluated against

* ``target="next"``: the next item s(t+1) alone (one relevant item), or
* ``target="remaining"``: the distinct items of s(t+1)..sn (an item that
  occurs again later in the session is one relevant item, counted once).

Each (session, step) is one unit of :func:`receval.evaluate` (its "user"),
so every ranking metric, option and convention of ``evaluate`` applies
unchanged: no formula is written here. The steps' values are then averaged
as ``average`` says: over all steps (``"steps"``: session-rec's and Cornac's
default), per session then over sessions (``"sessions"``), or per user over
all the steps of their sessions then over users (``"users"``: Cornac's
``user_based=True``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np
import pandas as pd

import receval.ids as ids
from receval.errors import InputError, OptionError, option, plain
from receval.evaluation.result import Result
from receval.exact import ExactSum
from receval.io.interactions import time_key
from receval.metrics.spec import MetricSpec

__all__ = ["NextItemResult", "evaluate_next_items"]

Target = Literal["next", "remaining"]
Average = Literal["steps", "sessions", "users"]
Steps = Literal["all", "last"]

TARGETS = ("next", "remaining")
AVERAGES = ("steps", "sessions", "users")
STEP_CHOICES = ("all", "last")

#: the options of :func:`receval.evaluate` passed on to the evaluation of the steps
FORWARDED = frozenset(
    {
        "options",
        "convention",
        "missing_recs",
        "ties",
        "relevant_from",
        "duplicates",
        "rank",
        "depth",
        "unjudged",
        "catalog_size",
        "train",
        "catalog",
        "item_features",
        "popular",
        "item_groups",
        "progress",
    }
)

#: usual spellings of each column (compared case-insensitively), first found wins
SPELLINGS = {
    "session": ("session", "session_id", "sessionid", "sid"),
    "item": ("item", "item_id", "itemid", "iid"),
    "user": ("user", "user_id", "userid", "uid"),
    "time": ("time", "timestamp", "ts", "datetime"),
    "step": ("step",),
    "rank": ("rank",),
    "score": ("score", "prediction", "prediction_score"),
}


def _n(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless the count is 1."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


@dataclass(repr=False)
class NextItemResult(Result):
    """What :func:`evaluate_next_items` returns: a :class:`~receval.Result`
    whose ``summary`` averages the steps' values as ``average`` says, and
    whose ``per_user`` holds the paired units of :func:`receval.compare`:
    one row per session (indexed by ``session``; its metrics' means over its
    steps) or, with ``average="users"``, one row per user (the mean over all
    the steps of their sessions).

    Attributes:
        per_step: one row per step: ``session``, ``step`` (t: the list
            followed the prefix s1..st), ``user`` (when the sessions have
            users) and each per-step metric's value (NaN: undefined or
            skipped).
        per_session: indexed by ``session`` (the sessions with a step):
            ``steps`` (its steps evaluated: n−1, or 1 with ``steps="last"``)
            and each metric's mean over them (NaN values left out).
        by_position: indexed by ``step``: ``steps`` (how many sessions have
            that step) and each metric's mean over them: the metric by
            position in the session.
    """

    per_step: pd.DataFrame | None = field(default=None, compare=False)
    per_session: pd.DataFrame | None = field(default=None, compare=False)
    by_position: pd.DataFrame | None = field(default=None, compare=False)

    def _counts_line(self) -> str:
        c = self.counts
        unit = {"users": "users"}.get(str(self.parameters.get("average")), "sessions")
        line = (
            f"{_n(c['steps_evaluated'], 'step')} evaluated of {c['steps']}, in "
            f"{_n(c['sessions_evaluated'], 'session')} of {c['sessions']}"
        )
        if c.get("sessions_too_short"):
            line += f" ({c['sessions_too_short']} with one item: no step)"
        for why, n in c["steps_skipped"].items():
            if n:
                line += f"; {_n(n, 'step')} skipped ({why.replace('_', ' ')})"
        for why, n in c["steps_scored_zero"].items():
            if n:
                line += f"; {_n(n, 'step')} scored 0 ({why.replace('_', ' ')})"
        return line + f"; averaged over {self.parameters.get('average')} ({unit} compared)"

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Result.to_dict` and ``by_position``: one record per step index."""
        from receval.evaluation.result import clean

        out = super().to_dict()
        if self.by_position is not None:
            out["by_position"] = clean(self.by_position.reset_index().to_dict(orient="records"))
        return out

    def __repr__(self) -> str:
        return f"NextItemResult({self.summary!r})"


def evaluate_next_items(
    lists: Any,
    sessions: Any,
    metrics: str | MetricSpec | Iterable[str | MetricSpec],
    *,
    target: Target = "next",
    average: Average = "steps",
    steps: Steps = "all",
    batch_size: int = 10_000,
    session_col: str | None = None,
    item_col: str | None = None,
    time_col: str | None = None,
    user_col: str | None = None,
    step_col: str | None = None,
    rank_col: str | None = None,
    score_col: str | None = None,
    **evaluate_options: Any,
) -> NextItemResult:
    """Evaluate the lists a sequential model gives after each prefix of the
    test sessions, against the next item or the remaining ones.

    Step t of a session s1..sn is the list that follows the prefix s1..st
    (t = 1..n−1; a session of one item has no step). Its truth is the next
    item s(t+1) (``target="next"``) or the distinct items of s(t+1)..sn
    (``target="remaining"``); each step is then evaluated as one user of
    :func:`receval.evaluate`, with the same kernels and options.

    Args:
        lists: the lists, either a table (pandas, polars, pyarrow) with a
            session, a step, an item and a rank (1 = best) or a score column
            (without either, the rows' order within each step is the
            ranking), or a mapping ``(session, step) -> items``, best
            first, or a callable ``lists(prefixes) -> table`` that is handed
            the prefixes of whole sessions in batches: a pandas DataFrame with
            one row per item of each prefix, columns ``session``, ``step``
            (t), ``position`` (1..t) and ``item`` (s at that position), in
            session then step then position order; it returns a table (or
            mapping) as above for (some of) the batch's steps. Each batch is
            evaluated as it comes and only the steps' values are kept
            (bounded memory), with the numbers of the same rows as one table.
        sessions: the test sessions: a table with a session, an item and,
            optionally, a time or step column giving their order (ties and
            no such column: the rows' order) and a user column (one user per
            session), or a mapping ``session -> items`` in order.
        metrics: metric strings, as for :func:`receval.evaluate`.
        target: ``"next"`` (the next item) or ``"remaining"`` (the distinct
            items of the rest of the session).
        average: ``"steps"``: the mean over all steps of all sessions (a
            session counts as many times as it has steps; session-rec's and
            Cornac's); ``"sessions"``: each session's mean over its steps,
            then the mean over sessions; ``"users"``: each user's mean over
            all the steps of their sessions, then the mean over users
            (Cornac's ``user_based=True``; needs a user column). Undefined
            (NaN) values are left out at each level. Aggregate metrics
            (coverage, ...) are computed over every step's list whatever it is.
        steps: ``"all"`` (every step) or ``"last"`` (only step n−1: the
            leave-last-out protocol, Cornac's ``mode="last"``; lists of
            earlier steps are dropped and counted).
        batch_size: with a callable ``lists``: the steps per call (whole
            sessions: a batch ends with the session that reaches it); the
            numbers do not depend on it.
        session_col, item_col, time_col, user_col: the sessions' columns
            (None: ``session``, ``item``, ``time``/``timestamp`` or ``step``,
            ``user`` and their usual spellings); ``session_col``,
            ``item_col`` name the lists' columns too.
        step_col, rank_col, score_col: the lists' columns (None: ``step``,
            ``rank``, ``score``).
        **evaluate_options: options of :func:`receval.evaluate` applied to
            the steps: ``options``, ``convention``, ``missing_recs`` (a step
            without a list: ``zero``, the default, ``skip`` or ``error``),
            ``ties``, ``relevant_from``, ``duplicates``, ``rank``, ``depth``,
            ``unjudged``, ``catalog_size``, ``train``, ``catalog``,
            ``item_features``, ``popular``, ``item_groups``, ``progress``.

    Returns:
        A :class:`NextItemResult`: ``summary`` (metric → mean as ``average``
        says), ``per_user`` (per session, or per user: the units
        :func:`receval.compare` pairs), ``per_step``, ``per_session``,
        ``by_position`` (the metric by step index), ``counts``, ``parameters``.

    Raises:
        InputError: a list for a session not in ``sessions`` or for a step
            the session does not have (t < 1 or t > n−1), a missing id, a
            session with two users; from a callable, a list for a session
            not in its batch, batches' lists in two forms (ranks, scores) or,
            with aggregate metrics or item inputs, item ids of two kinds.
        OptionError: an unknown ``target``, ``average``, ``steps``, or an
            option ``evaluate`` takes that has no meaning here.

    Example:
        >>> sessions = {"s1": [1, 2, 3], "s2": [4, 5]}
        >>> lists = {("s1", 1): [2, 9], ("s1", 2): [9, 3], ("s2", 1): [9, 8]}
        >>> res = evaluate_next_items(lists, sessions, "mrr@2")
        >>> res["mrr@2"]  # steps: 1, 1/2, 0
        0.5
        >>> evaluate_next_items(lists, sessions, "mrr@2", average="sessions")["mrr@2"]
        0.375
    """
    from receval.evaluation.api import evaluate

    _check_choice("target", target, TARGETS)
    _check_choice("average", average, AVERAGES)
    _check_choice("steps", steps, STEP_CHOICES)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise OptionError("batch_size", batch_size, expected="an integer >= 1")
    unknown = sorted(set(evaluate_options) - FORWARDED)
    if unknown:
        raise OptionError(
            unknown[0],
            evaluate_options[unknown[0]],
            expected="no value",
            reason="evaluate_next_items passes on to evaluate only "
            + ", ".join(sorted(FORWARDED))
            + " (the truth of each step comes from the sessions)",
        )
    cols = {"session": session_col, "item": item_col, "time": time_col, "user": user_col}
    log = _Sessions.of(sessions, cols, steps)
    if average == "users" and log.users is None:
        raise OptionError(
            "average",
            average,
            allowed=("steps", "sessions"),
            reason=f"the sessions have no user column: give one ({option('user_col')}) or "
            "average over steps or sessions",
        )
    list_cols = {"session": session_col, "item": item_col, "step": step_col}
    list_cols |= {"rank": rank_col, "score": score_col}
    notes: list[str] = []
    if callable(lists) and not isinstance(lists, Mapping) and log.n_units:
        # evaluated batch by batch as the callable gives them (bounded memory)
        res, recs = _batched(lists, log, list_cols, target, batch_size, metrics, evaluate_options)
        notes = list(dict.fromkeys(recs.notes))  # the same note of every batch: once
        return _assembled(res, log, recs, target, average, steps, batch_size, notes)
    if callable(lists) and not isinstance(lists, Mapping):  # no session has a step: no call
        recs = _ListRows.empty()
    else:
        recs = _read_lists(lists, list_cols, log, notes)
    truth_units, truth_items = log.truth(target)
    # columns named by their roles: evaluate finds them (and records no column option)
    try:
        res = evaluate(
            pd.DataFrame(_recs_columns(recs), copy=False),
            pd.DataFrame({"user": truth_units, "item": truth_items}, copy=False),
            metrics,
            **evaluate_options,
        )
    except InputError as exc:
        raise _in_lists(exc, recs, log) from None
    return _assembled(res, log, recs, target, average, steps, batch_size, notes)


def _in_lists(exc: InputError, recs: _ListRows, log: _Sessions) -> InputError:
    """An error of the list rows as evaluated (a unit code for a user, rows
    of the steps kept) said of the lists as given: their row (a file's line,
    where the caller knows it), the session and the step."""
    if exc.source != "recommendations":
        return exc
    unit, where = exc.user, ""
    if isinstance(unit, int) and 0 <= unit < log.n_units:
        c = int(np.searchsorted(log.first, unit, side="right")) - 1
        step = int(log.lengths[c]) - 1 if log.last_only else unit - int(log.first[c]) + 1
        where = f"session {plain(log.ids[c])!r}, step {step}: "
    kept = recs.kept
    moved = exc.remap(lambda r: r if kept is None else int(kept[r]))
    reason = exc.reason.replace("this user's list", "this list")
    return InputError(
        where + reason, source="lists", row=moved.row, other_row=moved.other_row, item=exc.item
    )


def _part_of(acc: Any, recs: Any, truth: Any, where: tuple[int, _ListRows, _Sessions]) -> Any:
    """The accumulator's part of a piece; an error said of the lists as the
    callable gave them (``where``: the piece's first row in its batch, the
    batch's rows and the sessions; :func:`_in_lists`)."""
    start, part, log = where
    try:
        return acc._part(recs, truth)
    except InputError as exc:
        raise _in_lists(exc.remap(lambda r: r + start), part, log) from None


def _batched(
    fn: Callable[[pd.DataFrame], Any],
    log: _Sessions,
    list_cols: Mapping[str, str | None],
    target: str,
    batch_size: int,
    metrics: Any,
    evaluate_options: Mapping[str, Any],
) -> tuple[Result, _ListRows]:
    """The callable's lists evaluated batch by batch, in bounded memory: each
    batch of whole sessions (their steps are units ``lo..hi-1``) is read,
    given its truth (from its sessions alone) and evaluated as it comes by an
    :class:`~receval.Accumulator` (the engine ``evaluate`` runs, on its
    threads, in pieces of whole steps: one part per piece holding per-unit
    values, exact sums and integer counts), and only those parts are kept,
    in unit order (combined without a sort). The callable is called on this
    thread, in session order, while the threads evaluate the previous batch:
    before the callable makes batch i+1, the pieces of batch i-1 are done
    (two batches alive at most). Pieces reach the accumulator as Arrow
    tables, as ``evaluate`` reads its own.
    Pieces hold disjoint units, so the combined result is bit for bit
    ``evaluate`` on all the rows at once; ``evaluate``'s record of the
    columns read, and its note on item ids matched as text, are added (the
    accumulator keeps neither). Returns the result and the rows' counts and
    reading notes (a :class:`_ListRows` without rows)."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from receval.engines.driver import THREADS
    from receval.evaluation.accumulator import Accumulator
    from receval.evaluation.assemble import with_columns

    options = dict(evaluate_options)
    progress = options.pop("progress", None)
    if progress is True:
        from receval._progress import rows_to_stderr

        progress = rows_to_stderr("evaluate_next_items")
    acc = Accumulator(metrics, **options)
    notes: list[str] = []
    rows = not_evaluated = evaluated_rows = 0
    with_scores: bool | None = None
    item_kind: str | None = None
    # counts kept per item across batches (aggregates, item inputs): one id kind
    item_keyed = options.get("item_groups") is not None or any(
        s.definition.needs or s.definition.kind == "aggregate" for s in acc.specs
    )
    pending: deque[Future[Any]] = deque()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        try:
            for sessions, out in _called(fn, log, batch_size):
                part = _read_lists(out, list_cols, log, notes)
                del out
                with_scores = _same_form(part, with_scores)
                item_kind = _same_item_kind(part, item_kind, item_keyed, log, sessions)
                lo, hi, truth_units, truth_items = log.batch_truth(sessions, target)
                _inside(part, lo, hi, log, sessions)
                rows += part.rows
                not_evaluated += part.not_evaluated
                # pieces of about the rows ``evaluate`` hands its threads, a few
                # in flight (their parts hold per-unit values only), kept in
                # unit order; the threads evaluate this batch while the
                # callable makes the next one: the earlier batches are done
                # first (two batches alive at most)
                count = 0
                for recs, truth, at in _pieces(part, truth_units, truth_items):
                    pending.append(pool.submit(_part_of, acc, recs, truth, (at, part, log)))
                    count += 1
                    while len(pending) > IN_FLIGHT * THREADS:
                        acc._add_part(pending.popleft().result())
                while len(pending) > count:
                    acc._add_part(pending.popleft().result())
                evaluated_rows += len(part.units)
                if progress is not None:
                    progress(evaluated_rows)
            while pending:  # the parts kept in unit order: combined without a sort
                acc._add_part(pending.popleft().result())
        finally:
            for future in pending:
                future.cancel()
    res = acc.compute()
    if (
        item_kind is not None
        and item_kind != ids.kind(log.items)
        and ITEMS_AS_TEXT not in res.notes
    ):
        res.notes.insert(0, ITEMS_AS_TEXT)  # as evaluate says it of the rows as one table
    recs_columns = {"user": "user", "item": "item"}
    recs_columns |= {"score": "score"} if with_scores else {"rank": "rank"}
    with_columns(res, recs_columns, {"user": "user", "item": "item"}, 1.0, acc.options)
    empty = _ListRows.empty()
    return res, _ListRows(empty.units, empty.items, empty.ranks, None, rows, not_evaluated, notes)


#: pieces of one batch queued per thread (a piece holds ~6 MB of integer
#: ids): the threads stay busy while the callable makes the next batch's lists
IN_FLIGHT = 4

#: list rows per piece evaluated at once: what ``evaluate`` hands each of its
#: threads for integer ids (``receval.io.stream.pairs``)
PIECE_ROWS = 250_000


def _pieces(
    part: _ListRows, truth_units: np.ndarray, truth_items: np.ndarray
) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """A batch's list rows and truth in pieces of whole units of about
    :data:`PIECE_ROWS` rows (the whole batch when its rows are not in unit
    order), each with its first row: every unit of the truth in exactly one piece."""
    units = part.units
    n = len(units)
    cuts = [0]
    if n > PIECE_ROWS and bool(np.all(units[1:] >= units[:-1])):
        at = np.arange(PIECE_ROWS, n, PIECE_ROWS)
        # each cut at the first row of the unit it falls in (units whole)
        cuts += sorted(set(np.searchsorted(units, units[at], side="left").tolist()) - {0})
    cols = _recs_columns(part)
    # Arrow tables of the columns (no copy of integers; NaN read as missing, as
    # pandas converts it): what ``evaluate`` reads its pieces from, cheaper to
    # build and read than DataFrames; columns of Python objects (ranks as the
    # callable gave them) stay in a DataFrame, whose reading reports their bad
    # values
    table: Callable[[dict[str, np.ndarray]], Any] = _arrow_table
    if any(v.dtype == object for k, v in cols.items() if k != "item"):  # (items: canonical)
        table = partial(pd.DataFrame, copy=False)
    bounds = [*cuts, n]
    for i in range(len(cuts)):
        a, b = bounds[i], bounds[i + 1]
        t0 = np.searchsorted(truth_units, units[a]) if i else 0
        t1 = np.searchsorted(truth_units, units[b]) if b < n else len(truth_units)
        recs = table({k: v[a:b] for k, v in cols.items()})
        truth = table({"user": truth_units[t0:t1], "item": truth_items[t0:t1]})
        yield recs, truth, a


def _arrow_table(columns: Mapping[str, np.ndarray]) -> Any:
    """An Arrow table of NumPy columns, NaN as missing (as from pandas)."""
    import pyarrow as pa

    return pa.table({k: pa.array(v, from_pandas=True) for k, v in columns.items()})


def _same_form(part: _ListRows, with_scores: bool | None) -> bool | None:
    """Whether the batches' lists have scores (None: no row yet); a batch in
    the other form than the earlier ones is refused."""
    if not part.rows:
        return with_scores
    if with_scores is not None and with_scores != (part.scores is not None):
        raise InputError(
            "the callable's tables differ: some have a score column, others do not "
            "(give every batch's lists in one form)",
            source="lists",
        )
    return part.scores is not None


#: ``evaluate``'s note when the lists' item ids are text and the truth's numbers
ITEMS_AS_TEXT = "item ids are numbers on one side and strings on the other: matched as strings"


def _same_item_kind(
    part: _ListRows, kind: str | None, strict: bool, log: _Sessions, sessions: np.ndarray
) -> str | None:
    """The kind of the batches' item ids (numbers or text, by the id rule;
    None: no row yet), the batch's ids read (``part.items``, in place). A
    table of every batch's rows is read as one column: ids of two kinds are
    all matched as text there. A step's values are the same either way (ids
    equal as numbers are equal as text), but the items counted across
    batches (aggregate metrics, item inputs) would not meet, so there
    (``strict``) a batch in another kind than the earlier ones is refused."""
    if not len(part.items):
        return kind
    if part.items.dtype.kind != "i":
        part.items = ids.canonical(part.items, "item", "lists")
    found = ids.kind(part.items)
    if strict and kind is not None and found != kind:
        names = {ids.INT: "numbers", ids.STR: "text"}
        raise InputError(
            f"the callable's lists give item ids as {names[kind]} in earlier batches and as "
            f"{names[found]} in the batch of sessions {log.ids[sessions[0]]!r} .. "
            f"{log.ids[sessions[-1]]!r} (e.g. {part.items[0]!r}): give them in one form in "
            "every batch (a float column with a fraction, e.g. 9.5, is read as text)",
            source="lists",
        )
    return ids.STR if ids.STR in (kind, found) else found


def _inside(part: _ListRows, lo: int, hi: int, log: _Sessions, sessions: np.ndarray) -> None:
    """The batch's lists are for its own steps (units ``lo..hi-1``)."""
    heads = part.runs if part.runs is not None else part.units  # (the runs: fewer)
    if len(heads) and (heads.min() < lo or heads.max() >= hi):
        bad = int(np.flatnonzero((part.units < lo) | (part.units >= hi))[0])
        sess = log.ids[np.searchsorted(log.first, part.units[bad], side="right") - 1]
        raise InputError(
            f"the callable gave a list for session {sess!r}, which is not in the batch of "
            f"sessions it was handed ({log.ids[sessions[0]]!r} .. {log.ids[sessions[-1]]!r}): "
            "return lists for the batch's steps only",
            source="lists",
        )


def _recs_columns(recs: _ListRows) -> dict[str, np.ndarray]:
    """The list rows as ``evaluate``'s columns, named by their roles."""
    out: dict[str, Any] = {"user": recs.units, "item": recs.items}
    if recs.scores is not None:
        out["score"] = recs.scores
    else:
        out["rank"] = recs.ranks
    return out


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise OptionError(name, value, allowed=allowed)


def _frame(obj: Any, what: str) -> pd.DataFrame:
    """A table as a pandas DataFrame (pandas, polars, pyarrow)."""
    if isinstance(obj, pd.DataFrame):
        return obj
    if hasattr(obj, "to_pandas"):
        return obj.to_pandas()
    raise InputError(
        f"expected a table (pandas, polars, pyarrow) or a mapping, found {type(obj).__name__}",
        source=what,
    )


def _column(frame: pd.DataFrame, role: str, given: str | None, what: str) -> str | None:
    """The column of ``role``: ``given`` (which must exist), else the first
    usual spelling found (case-insensitive), else None."""
    if given is not None:
        if given not in frame.columns:
            raise InputError(
                f"no column {given!r} (the {role} column given); found {list(frame.columns)}",
                source=what,
            )
        return given
    lower = {str(c).lower(): c for c in frame.columns}
    for name in SPELLINGS[role]:
        if name in lower:
            return str(lower[name])
    return None


def _required(frame: pd.DataFrame, role: str, given: str | None, what: str) -> str:
    name = _column(frame, role, given, what)
    if name is None:
        raise InputError(
            f"no {role} column: expected one named {' or '.join(SPELLINGS[role][:3])} "
            f"(or {role}_col=); found {list(frame.columns)}",
            source=what,
        )
    return name


@dataclass
class _Sessions:
    """The test sessions, sorted: session ``ids`` (canonical), each one's
    ``starts`` into ``items`` (its items in order) and ``lengths``, the users
    (None: no user column) and the units: step t of session s is unit
    ``first[s] + t - 1`` (``steps="all"``), or ``first[s]`` for its last step."""

    ids: np.ndarray
    items: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    users: np.ndarray | None
    last_only: bool
    first: np.ndarray = field(init=False)
    n_units: int = field(init=False)

    def __post_init__(self) -> None:
        per = np.maximum(self.lengths - 1, 0)
        if self.last_only:
            per = np.minimum(per, 1)
        self.first = np.concatenate([[0], np.cumsum(per)[:-1]]).astype(np.int64)
        self.n_units = int(per.sum())

    @classmethod
    def of(cls, sessions: Any, cols: Mapping[str, str | None], steps: str) -> _Sessions:
        what = "sessions"
        users = None
        if isinstance(sessions, Mapping):
            keys = list(sessions)
            session_ids = ids.canonical(keys, "user", what)
            by_id = ids.order_of(session_ids)  # sessions in id order
            seqs = [list(sessions[keys[i]]) for i in by_id]
            session_ids = session_ids[by_id]
            same = np.flatnonzero(session_ids[1:] == session_ids[:-1])
            if len(same):
                raise InputError(
                    f"two keys are the session {session_ids[same[0]]!r} (ids read by the id rule)",
                    source=what,
                )
            lengths = np.array([len(s) for s in seqs], dtype=np.int64)
            items = ids.canonical([x for s in seqs for x in s], "item", what)
        else:
            frame = _frame(sessions, what)
            s_col = _required(frame, "session", cols["session"], what)
            i_col = _required(frame, "item", cols["item"], what)
            t_col = _column(frame, "time", cols["time"], what)
            if t_col is None and cols["time"] is None:
                t_col = _column(frame, "step", None, what)
            u_col = _column(frame, "user", cols["user"], what)
            raw = ids.canonical(frame[s_col].to_numpy(), "user", what)
            codes, uniques = pd.factorize(raw, sort=False)
            by_id = ids.order_of(np.asarray(uniques))  # sessions in id order
            rank = np.empty(len(by_id), dtype=np.int64)
            rank[by_id] = np.arange(len(by_id))
            codes, session_ids = rank[codes], np.asarray(uniques)[by_id]
            items = ids.canonical(frame[i_col].to_numpy(), "item", what)
            keys_ = [codes]
            if t_col is not None:  # numbers, dates, or text of either (as a split reads them)
                keys_.insert(0, time_key(frame[t_col], f"{t_col!r}", what))
            order = np.lexsort(keys_) if t_col is not None else np.argsort(codes, kind="stable")
            items = items[order]
            lengths = np.bincount(codes, minlength=len(session_ids)).astype(np.int64)
            if u_col is not None:
                user_raw = ids.canonical(frame[u_col].to_numpy(), "user", what)[order]
                user_codes, user_uniques = pd.factorize(user_raw, sort=False)
                starts_ = np.concatenate([[0], np.cumsum(lengths)[:-1]])
                first_user = user_codes[starts_]
                owner = np.repeat(first_user, lengths)
                bad = np.flatnonzero(owner != user_codes)
                if len(bad):
                    at = int(order[bad[0]])
                    s = codes[at]
                    raise InputError(
                        f"session {session_ids[s]!r} has two users: "
                        f"{user_uniques[owner[bad[0]]]!r} and {user_raw[bad[0]]!r} "
                        "(one user per session)",
                        source=what,
                        row=at,
                    )
                users = np.asarray(user_uniques)[first_user]
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return cls(session_ids, items, starts, lengths, users, steps == "last")

    def steps_of(self, session: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For sessions (codes): their units' session codes and step numbers."""
        per = np.maximum(self.lengths[session] - 1, 0)
        if self.last_only:
            sess = np.repeat(session, np.minimum(per, 1))
            return sess, self.lengths[sess] - 1
        sess = np.repeat(session, per)
        starts = np.concatenate([[0], np.cumsum(per)[:-1]])
        return sess, np.arange(len(sess)) - np.repeat(starts, per) + 1

    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unit's session code and step, in unit order."""
        return self.steps_of(np.arange(len(self.ids)))

    def truth(self, target: str) -> tuple[np.ndarray, np.ndarray]:
        """The units and items of the truth: one row per unit (``next``), or one
        per distinct item of the rest of the session (``remaining``), units
        ascending and each unit's items in session order (as ``evaluate``
        groups them: no reordering there)."""
        sess, step = self.units()
        if target == "next" or self.last_only:  # (the last step's rest: its last item)
            return np.arange(self.n_units, dtype=np.int64), self.items[self.starts[sess] + step]
        # the item at 0-based position j of a session is in the truth of step t
        # (positions t..n-1) when it is its first occurrence there: t <= j and
        # the previous occurrence of the item in the session is before t.
        # Built in unit order (step t, then j), without a sort of the pairs.
        earlier = self._previous_occurrence()
        per_unit = self.lengths[sess] - step  # positions t..n-1: at least 1
        head = np.cumsum(per_unit) - per_unit  # each unit's first pair
        # the row in ``items`` of each (unit, j) pair: starts[s] + t + (pair - head)
        row = np.repeat(self.starts[sess] + step - head, per_unit)
        row += np.arange(len(row), dtype=np.int64)
        keep = earlier[row] < np.repeat(step, per_unit)
        kept = np.add.reduceat(keep.view(np.int8), head, dtype=np.int64) if len(head) else head
        units = np.repeat(np.arange(self.n_units, dtype=np.int64), kept)
        return units, self.items[row[keep]]

    def batch_truth(
        self, sessions: np.ndarray, target: str
    ) -> tuple[int, int, np.ndarray, np.ndarray]:
        """For a batch of sessions (codes, ascending, each with a step): its
        units ``lo..hi-1`` and their truth (units and items, as :meth:`truth`),
        built from these sessions alone."""
        a, b = int(sessions[0]), int(sessions[-1]) + 1
        lo = int(self.first[a])
        sub = _Sessions(
            self.ids[a:b],
            self.items[self.starts[a] : self.starts[b - 1] + self.lengths[b - 1]],
            self.starts[a:b] - self.starts[a],
            self.lengths[a:b],
            None,
            self.last_only,
        )
        units, items = sub.truth(target)
        return lo, lo + sub.n_units, units + lo, items

    def _previous_occurrence(self) -> np.ndarray:
        """For each item of each session: the 0-based position of the same
        item earlier in the session, -1 when none."""
        n = len(self.items)
        session_of_row = np.repeat(np.arange(len(self.ids), dtype=np.int64), self.lengths)
        codes, uniques = pd.factorize(self.items)
        n_codes = max(len(uniques), 1)
        if len(self.ids) * n_codes < 2**62:
            order = np.argsort(session_of_row * n_codes + codes, kind="stable")
        else:
            order = np.lexsort((codes, session_of_row))
        key_s, key_c = session_of_row[order], codes[order]
        same = (key_s[1:] == key_s[:-1]) & (key_c[1:] == key_c[:-1])
        pos = np.arange(n, dtype=np.int64) - self.starts[session_of_row]
        out = np.full(n, -1, dtype=np.int64)
        out[order[1:][same]] = pos[order[:-1][same]]
        return out

    def prefixes(self, session: np.ndarray) -> pd.DataFrame:
        """The prefixes of the steps of these sessions (codes), one row per item."""
        sess, step = self.steps_of(session)
        rows_sess = np.repeat(sess, step)
        rows_step = np.repeat(step, step)
        position = np.arange(len(rows_sess)) - np.repeat(np.cumsum(step) - step, step) + 1
        items = self.items[self.starts[rows_sess] + position - 1]
        return pd.DataFrame(
            {
                "session": self.ids[rows_sess],
                "step": rows_step,
                "position": position,
                "item": items,
            },
            copy=False,
        )


@dataclass
class _ListRows:
    """The list rows read: unit, item, and the rank or the score; rows of
    steps not evaluated (``steps="last"``) already dropped and counted."""

    units: np.ndarray
    items: np.ndarray
    ranks: np.ndarray | None
    scores: np.ndarray | None
    rows: int
    not_evaluated: int

    notes: list[str] = field(default_factory=list)  # the batches' notes on reading them
    runs: np.ndarray | None = None  # the unit of each run of rows (None: not known)
    kept: np.ndarray | None = None  # each row's row of the lists, when some were dropped

    @classmethod
    def empty(cls) -> _ListRows:
        none = np.empty(0, dtype=np.int64)
        return cls(none, none, none, None, 0, 0)


def _called(
    fn: Callable[[pd.DataFrame], Any], log: _Sessions, batch_size: int
) -> Iterator[tuple[np.ndarray, Any]]:
    """Each batch of whole sessions (their codes, ascending) and what ``fn``
    returns for their prefixes."""
    per = np.maximum(log.lengths - 1, 0)
    if log.last_only:
        per = np.minimum(per, 1)
    has = np.flatnonzero(per)
    cum = np.cumsum(per[has])
    start = 0
    while start < len(has):
        reached = int(np.searchsorted(cum, (cum[start - 1] if start else 0) + batch_size))
        stop = min(reached + 1, len(has))
        batch = has[start:stop]
        yield batch, fn(log.prefixes(batch))
        start = stop


def _raw_lists(lists: Any, cols: Mapping[str, str | None]) -> tuple[Any, ...]:
    """The lists' columns as given: session, step, item, rank (or None),
    score (or None), and the step column's name."""
    what = "lists"
    if isinstance(lists, Mapping):
        keys = list(lists)
        for k in keys:
            if not isinstance(k, tuple) or len(k) != 2:
                raise InputError(
                    f"a mapping of lists is keyed by (session, step); found the key {k!r}",
                    source=what,
                )
        seqs = [list(lists[k]) for k in keys]
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        session = np.repeat(np.array([k[0] for k in keys], dtype=object), lengths)
        step = np.repeat(np.array([k[1] for k in keys], dtype=object), lengths)
        items = np.array([x for s in seqs for x in s], dtype=object)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        return session, step, items, np.arange(len(items)) - starts + 1, None, "step"
    frame = _frame(lists, what)
    s_col = _required(frame, "session", cols["session"], what)
    step_name = _required(frame, "step", cols["step"], what)
    i_col = _required(frame, "item", cols["item"], what)
    if cols["rank"] is not None and cols["score"] is not None:
        raise OptionError(
            "score_col", cols["score"], expected="None", reason="give rank_col or score_col"
        )
    r_col = None if cols["score"] is not None else _column(frame, "rank", cols["rank"], what)
    sc_col = _column(frame, "score", cols["score"], what) if r_col is None else None
    return (
        frame[s_col].to_numpy(),
        frame[step_name].to_numpy(),
        frame[i_col].to_numpy(),
        frame[r_col].to_numpy() if r_col is not None else None,
        _scores(frame[sc_col], sc_col, what) if sc_col is not None else None,
        step_name,
    )


def _scores(values: pd.Series, col: str, what: str) -> np.ndarray:
    """A score column as float64; a value that is no number (text) is an error
    naming its row and the value (NaN and infinities are checked with the ranks)."""
    try:
        return values.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        numbers = pd.to_numeric(values, errors="coerce")
        row = int(np.flatnonzero((numbers.isna() & values.notna()).to_numpy())[0])
        raise InputError(
            f"score must be a finite number; found {plain(values.iloc[row])!r}",
            source=what,
            row=row,
            column=col,
        ) from None


def _read_lists(
    lists: Any, cols: Mapping[str, str | None], log: _Sessions, notes: list[str]
) -> _ListRows:
    """The list rows as units of the sessions' steps."""
    what = "lists"
    session, step, items, ranks, scores, step_name = _raw_lists(lists, cols)
    n = len(items)
    t = _steps(step, step_name, what)
    # the rows of one list are usually together: each run of rows with the same
    # (session, step) is looked up once. Integer session ids are their own
    # canonical form: the runs are found on them as given, else on the
    # canonical ids.
    if n and session.dtype.kind in "iu" and session.dtype != np.uint64:
        heads = _run_heads(session, t)
        head_ids = ids.canonical(session[heads], "user", what)
    else:
        sess_ids = ids.canonical(session, "user", what) if n else log.ids[:0]
        heads = _run_heads(sess_ids, t)
        head_ids = sess_ids[heads]
    known, head_ids = ids.unify([log.ids, head_ids], "session", notes)
    run_lengths = np.diff(np.append(heads, n))
    codes = _positions(known, head_ids)
    if (codes < 0).any():
        row = int(heads[np.flatnonzero(codes < 0)[0]])
        raise InputError(
            f"a list for session {session[row]!r}, which is not in the sessions",
            source=what,
            row=row,
        )
    t_runs = t[heads]
    n_steps = log.lengths[codes] - 1
    bad = (t_runs < 1) | (t_runs > n_steps)
    if bad.any():
        first_bad = int(np.flatnonzero(bad)[0])
        row, have = int(heads[first_bad]), int(n_steps[first_bad])
        raise InputError(
            f"a list for step {int(t[row])} of session {session[row]!r}, which has "
            + (f"steps 1..{have}" if have else "no step (one item)")
            + f" ({have + 1} items; step t follows the prefix s1..st)",
            source=what,
            row=row,
        )
    dropped, kept = 0, None
    if log.last_only:
        keep_runs = t_runs == n_steps
        units_runs = log.first[codes]
        if not keep_runs.all():
            keep = np.repeat(keep_runs, run_lengths)
            dropped, kept = int((~keep).sum()), np.flatnonzero(keep)
            items = items[keep]
            ranks = ranks[keep] if ranks is not None else None
            scores = scores[keep] if scores is not None else None
            units_runs, run_lengths = units_runs[keep_runs], run_lengths[keep_runs]
    else:
        units_runs = log.first[codes] + t_runs - 1
    units = np.repeat(units_runs.astype(np.int64, copy=False), run_lengths)
    if ranks is None and scores is None:  # the rows' order within each step
        ranks = _row_ranks(units, units_runs, run_lengths)
    return _ListRows(units, items, ranks, scores, n, dropped, runs=units_runs, kept=kept)


#: rows compared at a time by :func:`_run_heads` (its flags stay in the cache)
HEAD_BLOCK = 1 << 18


def _run_heads(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Where each run of rows with equal (first, second) begins (row 0 first),
    a block of rows at a time."""
    n = len(first)
    if not n:
        return np.empty(0, dtype=np.int64)
    change = np.empty(min(HEAD_BLOCK, n), dtype=bool)
    other = np.empty(len(change), dtype=bool)
    heads = [np.zeros(1, dtype=np.int64)]
    for lo in range(1, n, HEAD_BLOCK):
        hi = min(lo + HEAD_BLOCK, n)
        c, o = change[: hi - lo], other[: hi - lo]
        np.not_equal(first[lo:hi], first[lo - 1 : hi - 1], out=c)
        np.not_equal(second[lo:hi], second[lo - 1 : hi - 1], out=o)
        c |= o
        found = np.flatnonzero(c)
        found += lo
        heads.append(found)
    return np.concatenate(heads) if len(heads) > 1 else heads[0]


def _row_ranks(units: np.ndarray, units_runs: np.ndarray, run_lengths: np.ndarray) -> np.ndarray:
    """1, 2, ... in the rows' order within each unit (a unit's rows may be apart)."""
    if len(units_runs) == len(ids.distinct(units_runs)):  # each unit's rows together
        starts = np.cumsum(run_lengths) - run_lengths
        return np.arange(len(units)) - np.repeat(starts, run_lengths) + 1
    order = np.argsort(units, kind="stable")
    sorted_units = units[order]
    start = np.r_[True, sorted_units[1:] != sorted_units[:-1]]
    begin = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order)) - begin + 1
    return ranks


def _positions(known: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Where each of ``found`` is in ``known`` (the sessions' ids, in id
    order), -1 where absent: a binary search for integers, a hash otherwise."""
    if not len(found):
        return np.empty(0, dtype=np.int64)
    if known.dtype != object and found.dtype != object and len(known):
        at = np.minimum(np.searchsorted(known, found), len(known) - 1)
        return np.where(known[at] == found, at, -1)
    return pd.Index(known).get_indexer(found)


def _steps(step: np.ndarray, name: str, what: str) -> np.ndarray:
    """The step column as int64 (whole numbers only)."""
    if step.dtype.kind in "iu":
        return step.astype(np.int64, copy=False)
    try:
        values = np.asarray(step, dtype=np.float64)
    except (TypeError, ValueError):
        values = np.array([np.nan], dtype=np.float64)
    ok = np.isfinite(values) & (values == np.round(values))
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0]) if len(values) == len(step) else 0
        raise InputError(
            f"the step column {name!r} holds {step[row]!r}: expected whole numbers "
            "(step t follows the prefix s1..st, t >= 1)",
            source=what,
            row=row,
        )
    return values.astype(np.int64)


def _means(
    values: np.ndarray, groups: np.ndarray, n: int, sizes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per group (0..n-1): the mean of the values but NaN, and how many.
    ``sizes``: ``np.bincount(groups, minlength=n)`` when known (the counts
    when no value is NaN: then no row is selected, and the sums are the same)."""
    nan = np.isnan(values)
    if not nan.any():
        count = sizes if sizes is not None else np.bincount(groups, minlength=n)
        total = np.bincount(groups, weights=values, minlength=n)
    else:
        defined = ~nan
        count = np.bincount(groups[defined], minlength=n)
        total = np.bincount(groups[defined], weights=values[defined], minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return mean, count


def _no_list(counts: Mapping[str, int]) -> dict[str, int]:
    return {"no_recommendations": int(counts.get("no_recommendations", 0))}


def _step_tables(
    res: Result, log: _Sessions, names: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``per_step``, ``per_session`` and ``by_position`` from the steps' values."""
    sess, step = log.units()
    values = _unit_values(res, names, log.n_units)
    step_cols: dict[str, Any] = {"session": log.ids[sess], "step": step}
    if log.users is not None:
        step_cols["user"] = log.users[sess]
    step_cols |= values
    per_step = pd.DataFrame(step_cols, copy=False)
    n_sessions = len(log.ids)
    with_steps = np.flatnonzero(log.lengths >= 2)
    sizes = np.bincount(sess, minlength=n_sessions)
    session_cols: dict[str, Any] = {"steps": sizes[with_steps]}
    for m in names:
        session_cols[m] = _means(values[m], sess, n_sessions, sizes)[0][with_steps]
    per_session = pd.DataFrame(
        session_cols, index=pd.Index(log.ids[with_steps], name="session"), copy=False
    )
    top = int(step.max(initial=0))
    sizes = np.bincount(step, minlength=top + 1)
    position_cols: dict[str, Any] = {"steps": sizes[1:]}
    for m in names:
        position_cols[m] = _means(values[m], step, top + 1, sizes)[0][1:]
    by_position = pd.DataFrame(
        position_cols, index=pd.Index(np.arange(1, top + 1), name="step"), copy=False
    )
    return per_step, per_session, by_position


def _unit_values(res: Result, names: list[str], n_units: int) -> dict[str, np.ndarray]:
    """Each metric's value of units 0..n_units-1 (NaN: a unit ``evaluate``
    did not return), read from the evaluation's per-user values as they are
    (no frame built, no reindex) when every unit is there in order."""
    from receval.evaluation.result import pending_per_user

    pending = pending_per_user(res)
    if pending is not None:
        users = pending.user_ids
        if (
            len(users) == n_units
            and users.dtype.kind in "iu"
            and (not n_units or (users[0] == 0 and users[-1] == n_units - 1))
            and bool(np.all(users[1:] > users[:-1]))
        ):
            row = {name: i for i, name in enumerate(pending.names)}
            if all(m in row for m in names):
                return {m: pending.values[row[m]] for m in names}
    values = res.per_user.reindex(np.arange(n_units))
    return {m: values[m].to_numpy() for m in names}


def _user_units(per_step: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per user (in id order): each metric's mean over all the steps of their
    sessions (Cornac's ``user_based=True``)."""
    user_codes, user_ids = pd.factorize(per_step["user"].to_numpy(), sort=False)
    order = ids.order_of(np.asarray(user_ids))
    cols = {m: _means(per_step[m].to_numpy(), user_codes, len(user_ids))[0][order] for m in names}
    index = pd.Index(np.asarray(user_ids)[order], name="user")
    return pd.DataFrame(cols, index=index, copy=False)


def _summary(
    res: Result, units: pd.DataFrame, average: str
) -> tuple[dict[str, float], dict[str, int]]:
    """Each metric's mean as ``average`` says (exact sums), and the undefined
    units per metric. Over steps and for aggregates: ``evaluate``'s own."""
    summary: dict[str, float] = {}
    undefined: dict[str, int] = {}
    for spec in res.metrics:
        m = str(spec)
        if spec.definition.kind == "aggregate" or average == "steps":
            summary[m] = res.summary[m]
            if m in res.counts.get("undefined", {}):
                undefined[m] = int(res.counts["undefined"][m])
            continue
        column = units[m].to_numpy()
        summary[m] = spec.definition.summarise(ExactSum.of(column).mean())
        if np.isnan(column).any():
            undefined[m] = int(np.isnan(column).sum())
    return summary, undefined


def _assembled(
    res: Result,
    log: _Sessions,
    recs: _ListRows,
    target: str,
    average: str,
    steps: str,
    batch_size: int,
    notes: list[str],
) -> NextItemResult:
    """The next-item result of the steps' evaluation ``res``."""
    names = [str(s) for s in res.metrics if s.definition.kind != "aggregate"]
    per_step, per_session, by_position = _step_tables(res, log, names)
    units = _user_units(per_step, names) if average == "users" else per_session[names]
    summary, undefined = _summary(res, units, average)
    n_sessions = len(log.ids)
    with_steps = len(per_session)
    step_counts = res.counts
    evaluated = int(step_counts["users_evaluated"]) if average == "steps" else len(units)
    counts: dict[str, Any] = {
        "sessions": n_sessions,
        "sessions_evaluated": with_steps,
        "sessions_too_short": int((log.lengths < 2).sum()),
        "steps": log.n_units,
        "steps_evaluated": int(step_counts["users_evaluated"]),
        # a step always has a target: only a step without a list is skipped or scored 0
        "steps_skipped": _no_list(step_counts.get("users_skipped", {})),
        "steps_scored_zero": _no_list(step_counts.get("users_scored_zero", {})),
        "list_rows": recs.rows,
        "list_rows_step_not_evaluated": recs.not_evaluated,
        "users": len(units) if average != "steps" else log.n_units,
        "users_evaluated": evaluated,
        "users_skipped": {},
        "users_scored_zero": {},
        "undefined": undefined,
        "of_steps": step_counts,
    }
    parameters = dict(res.parameters)
    parameters |= {"target": target, "average": average, "steps": steps}
    parameters["protocol"] = "next_items"
    parameters["batch_size"] = batch_size
    out = NextItemResult(
        summary=summary,
        per_user=units,
        counts=counts,
        parameters=parameters,
        metrics=list(res.metrics),
        notes=[*notes, *res.notes],
        version=res.version,
        per_step=per_step,
        per_session=per_session,
        by_position=by_position,
    )
    return out
