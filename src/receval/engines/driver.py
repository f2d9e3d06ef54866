"""What every engine shares: the plan, one part's evaluation, the combiner.

A :class:`Plan` holds everything an evaluation of a set of users needs but
the data. :func:`evaluate_pair` evaluates one :class:`~receval.records.Pair`
(the lists and the truth of the same complete users) into a :class:`Part`:
per-user values, exact sums, integer counts, item counts. A
:class:`Combiner` adds parts up in any order into one :class:`Outcome`, per
group of users too (:class:`GroupCombiners`). Every engine
(:mod:`receval.engines.base`) cuts its inputs into pairs its own way and
goes through these, so the numbers do not depend on the engine, the chunking,
the partitioning or the number of threads (:func:`evaluated` runs pairs on a
few threads and gives their parts in order).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from receval import _malloc, _workspace
from receval._accel import NATIVE as _native
from receval.engines import numpy_engine
from receval.engines.numpy_engine import Prepared
from receval.errors import InputError, NoSharedUser, PolicyError, option, plain, said
from receval.exact import ExactSum
from receval.ids import as_str, distinct, kind
from receval.metrics.context import ItemContext, ItemGroups, positions
from receval.metrics.kernels.beyond import Exposure
from receval.metrics.kernels.groups import GroupCounts, GroupTally, exposure_shares
from receval.metrics.spec import MetricSpec
from receval.records import Pair, TruthData, subset

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Combiner", "Outcome", "Part", "Plan", "evaluate_pair", "evaluated"]


#: Threads evaluating chunks of users at once.
THREADS = max(1, min(4, os.cpu_count() or 1))


@dataclass
class Outcome:
    """Per-user values of every per-user metric, in sorted user order, the
    values of aggregate metrics, the counts, and the exact sum of each
    per-user metric over the users evaluated (the means come from these:
    combined exactly, they cannot depend on how users were cut into parts)."""

    user_ids: np.ndarray
    values: np.ndarray  # (n per-user metrics, n_users)
    evaluated: np.ndarray  # (n_users,) bool: included in the means
    counts: dict[str, Any]
    aggregates: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sums: list[ExactSum] = field(default_factory=list)
    item_groups: pd.DataFrame | None = None
    #: with user groups (:class:`UserCells`): (grouping, group) -> the
    #: :class:`Combiner` of that group's parts (its :meth:`Combiner.summary`
    #: and :meth:`Combiner.outcome`), None when nobody of the group was evaluated
    groups: dict[tuple[int, int], Any] | None = None
    group_notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class UserCells:
    """The groups of users of one evaluation (``user_groups=``), as cells: the
    users in the same group of every grouping share a cell, whose code holds
    one digit per grouping (the group's position, or ``sizes[j]`` for none).

    Each chunk's evaluation is cut into the parts of its cells
    (:func:`evaluate_cells`); a group's outcome is its cells' parts combined.
    Users of different cells are disjoint and a user's values do not depend
    on the other users, so a group's outcome is, bit for bit, the evaluation
    of its users alone (the parts combine exactly).

    Attributes:
        ids: per grouping, the sorted distinct ids of the users it places.
        groups: per grouping, the group of each of ``ids``.
        default: per grouping, the group of users not in ``ids`` (a group
            defined as "everybody else", e.g. the cold start), or -1: none.
        sizes: per grouping, its number of groups.
    """

    ids: tuple[np.ndarray, ...]
    groups: tuple[np.ndarray, ...]
    default: tuple[int, ...]
    sizes: tuple[int, ...]

    def codes(self, users: np.ndarray) -> np.ndarray:
        """The cell code of each user."""
        code = np.zeros(len(users), dtype=np.int64)
        for ids, groups, default, size in zip(
            self.ids, self.groups, self.default, self.sizes, strict=True
        ):
            pos = positions(ids, users) if len(ids) else np.full(len(users), -1, np.int64)
            g = np.where(pos >= 0, groups[np.maximum(pos, 0)] if len(ids) else 0, default)
            g[g < 0] = size
            code = code * (size + 1) + g
        return code

    def group_of(self, code: int, j: int) -> int:
        """The group of grouping ``j`` of a cell (-1: none)."""
        for size in self.sizes[j + 1 :][::-1]:
            code //= size + 1
        g = int(code % (self.sizes[j] + 1))
        return -1 if g == self.sizes[j] else g


def _cell_rows(users: np.ndarray, cells: UserCells) -> dict[int, np.ndarray]:
    """The rows of each cell among rows of ``users``, in row order (the codes
    of the distinct users, then one per row)."""
    if not len(users):
        return {}
    import pandas as pd

    codes, uniq = pd.factorize(users)
    row_code = cells.codes(np.asarray(uniq, dtype=users.dtype))[codes]
    return {int(c): np.flatnonzero(row_code == c) for c in distinct(row_code)}


def _cells_of(pair: Pair, cells: UserCells) -> list[tuple[int, Pair]]:
    """A pair cut into the pairs of its cells (rows in their order)."""
    recs, truth = pair.loaded()
    parts = [
        _cell_rows(np.asarray(x), cells)
        for x in (recs.users, recs.empty_users, truth.users, truth.empty_users)
    ]
    found = sorted(set().union(*parts))
    if len(found) == 1:
        return [(found[0], pair)]
    none = np.empty(0, dtype=np.int64)
    out = []
    for code in found:
        r, re_, t, te = (p.get(code, none) for p in parts)
        out.append(
            (
                code,
                Pair(
                    subset(recs, r, re_),
                    subset(truth, t, te),
                    lambda i, at=r: pair.recs_row(int(at[i])),
                    lambda i, at=t: pair.truth_row(int(at[i])),
                    len(r),
                ),
            )
        )
    return out


def evaluate_cells(
    plan: Plan, pair: Pair, cells: UserCells, keep_values: bool = True
) -> tuple[Part, list[tuple[int, Part]]]:
    """The part of a pair, and the part of each of its cells: cut from the
    pair's one evaluation (each user's values do not depend on the other
    users), or — when a count cannot be cut by user (duplicates dropped) or a
    note was made — each cell's rows evaluated alone."""
    with _workspace.reusing():  # the thread's buffers, if the pool gave it some
        done = _evaluate(plan, pair)
        whole = done.part(plan, keep_values)
        if done.splittable():
            return whole, done.parts(plan, cells.codes(done.p.user_ids), keep_values)
    by_cell = _cells_of(pair, cells)
    return whole, [(code, evaluate_pair(plan, sub, keep_values)) for code, sub in by_cell]


class GroupCombiners:
    """The :class:`Combiner` of the whole evaluation and one per group of
    users: each pair's whole part goes to the first, each cell's part to the
    combiner of every group the cell is in (:func:`evaluate_cells`)."""

    def __init__(self, plan: Plan, cells: UserCells) -> None:
        self.cells = cells
        self.whole = Combiner(plan)
        self.by_group = {
            (j, g): Combiner(plan) for j, size in enumerate(cells.sizes) for g in range(size)
        }

    def add(self, done: tuple[Part, list[tuple[int, Part]]]) -> None:
        whole, by_cell = done
        self.whole.add(whole)
        for code, part in by_cell:
            for j in range(len(self.cells.sizes)):
                g = self.cells.group_of(code, j)
                if g >= 0:
                    self.by_group[j, g].add(part)

    def outcome(self, notes: list[str] | None = None) -> Outcome:
        """The whole outcome, with each group's combiner (None: nobody)."""
        out = self.whole.outcome(notes)
        out.groups = {key: c if c.added else None for key, c in self.by_group.items()}
        out.group_notes = list(notes or [])
        return out


class _ExposureCounter:
    """Map → combine for aggregate metrics: item counts in the top-k lists of
    the users evaluated, per cut-off, summed over chunks."""

    def __init__(self, ks: set[int | None]) -> None:
        self.parts: dict[int | None, list[pd.Series]] = {k: [] for k in ks}
        self.users = 0

    def add(self, counts: dict[int | None, pd.Series], users: int) -> None:
        """Combine: keep a chunk's counts."""
        self.users += users
        for k, series in counts.items():
            self.parts[k].append(series)

    def exposure(self, k: int | None, items: ItemContext | None) -> Exposure:
        import pandas as pd

        parts = [s for s in self.parts[k] if len(s)]
        total = pd.concat(parts).groupby(level=0, sort=True).sum() if parts else pd.Series()
        ids = np.asarray(total.index)
        counts = total.to_numpy(dtype=np.int64)
        if items is None:
            in_catalog, n_catalog = np.zeros(len(ids), dtype=bool), 0
        else:
            in_catalog = items.in_catalog[items.index_of(ids)]
            n_catalog = int(items.in_catalog.sum())
        return Exposure(counts, in_catalog, n_catalog, self.users, k, ids)


def _apply_policies(
    p: Prepared,
    values: np.ndarray,
    empty_truth: str,
    missing_recs: str,
    no_truth: str,
    needs_truth: np.ndarray,
    inherited: bool = False,
) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, str]]]:
    """Set values of users without relevant items / without lists by policy;
    return who is evaluated and, per reason, its users and their policy.

    Groups: ``no_truth`` (a list, not in the truth: ``no_truth`` policy),
    ``no_relevant_items`` (in the truth, nothing relevant: ``empty_truth``),
    ``no_recommendations`` (relevant items, no list: ``missing_recs``). A user
    without a list and without relevant items falls under both ``empty_truth``
    and ``missing_recs``: skipped if either says skip, else zero.

    The policies decide which users are evaluated, for every metric alike (one
    population: means and paired tests compare the same users). ``zero``
    scores 0 the metrics that need the truth (``needs_truth``: one flag per
    row of ``values``); metrics of the list alone (novelty, arp, ...) keep
    the value of the user's list. ``keep`` (``empty_truth``, ``no_truth``)
    evaluates the users as they are: every metric keeps its kernel's value
    for a user without relevant items (trec_eval's reading).
    """
    no_rel = p.n_relevant == 0
    no_list = ~p.has_recs
    # in the truth without relevant items and without a list: skipped as a
    # missing list when only missing_recs says skip, else under empty_truth
    lost = no_rel & p.in_truth & no_list
    if not (missing_recs == "skip" and empty_truth != "skip"):
        lost[:] = False
    groups = {
        "no_truth": (no_rel & ~p.in_truth, no_truth),
        "no_relevant_items": (no_rel & p.in_truth & ~lost, empty_truth),
        "no_recommendations": ((~no_rel & no_list) | lost, missing_recs),
    }
    out = np.ones(len(p.user_ids), dtype=bool)
    what = {
        "no_truth": ("has recommendations but no truth", "no_truth"),
        "no_relevant_items": ("has no relevant item in the truth", "empty_truth"),
        "no_recommendations": ("has relevant items but no recommendations", "missing_recs"),
    }
    for why, (mask, policy) in groups.items():
        if policy == "error" and mask.any():
            user = plain(p.user_ids[np.flatnonzero(mask)[0]])
            text, name = what[why]
            policy_named = option(name, "error")
            if why == "no_truth" and inherited:  # the caller gave empty_truth, not no_truth
                follows = said("no_truth", "--no-truth")
                policy_named = (
                    f"{option('empty_truth', 'error')}, which {follows} follows unless given"
                )
            error = PolicyError(f"user {user!r} {text} ({policy_named})")
            error.user = user
            raise error
    for why, (mask, policy) in groups.items():
        if policy == "skip":
            values[:, mask] = np.nan
            out &= ~mask
        elif policy == "zero" and why != "no_recommendations" and mask.any():
            # users without a list keep the values of an empty list (auc: NaN)
            values[np.ix_(needs_truth, mask)] = 0.0
    return out, groups


def _add_counts(total: dict[str, Any], part: dict[str, Any]) -> None:
    for key, value in part.items():
        if isinstance(value, dict):
            _add_counts(total.setdefault(key, {}), value)
        else:
            total[key] = total.get(key, 0) + value


@dataclass(frozen=True)
class Plan:
    """Everything an evaluation of a set of users needs but the data: the
    per-user and aggregate metrics, the policies, the largest grade of the
    whole truth (graded metrics normalise by it) and the item context. Plain
    data: it pickles, so a worker process or a Spark executor can take it."""

    specs: tuple[MetricSpec, ...]
    max_grade: float
    threshold: float
    empty_truth: str
    missing_recs: str
    duplicates: str
    no_truth: str | None = None
    ties: str = "item"
    relevant_from: str = "truth"
    rank: str = "order"
    items: ItemContext | None = None
    spark_train: bool = False  # the training pairs come with each partition's rows
    depth: int | None = None
    unjudged: str = "keep"
    negative_grades: str = "error"
    catalog_size: int | None = None
    #: grades as read (True), or binary relevance (False): every truth row
    #: relevant, or with ``grade_cut`` the rows graded >= it (numpy_engine.binary_grades)
    graded: bool = True
    grade_cut: float | None = None
    #: under ``graded=False``, a metric asked for a gain of ``linear``/``exp``
    #: reads the grades as gains (a convention that reads no grades: LensKit's
    #: ``NDCG(gain='rating')``; numpy_engine.graded_gains)
    graded_gains: bool = False

    @property
    def per_user(self) -> list[MetricSpec]:
        return list(self.facts.specs)

    @property
    def facts(self) -> numpy_engine.Facts:
        """What the per-user metrics ask of the engine, read from the registry
        once per plan (not per pair; :func:`numpy_engine.facts_of`). Kept on
        the plan, left out when it is pickled."""
        got = self.__dict__.get("_facts")
        if got is None:
            per_user = [s for s in self.specs if s.definition.kind != "aggregate"]
            got = numpy_engine.facts_of(per_user)
            object.__setattr__(self, "_facts", got)  # a cache, not a field
        return got

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_facts", None)
        state.pop("_aggregate", None)
        return state

    @property
    def aggregate(self) -> list[MetricSpec]:
        got = self.__dict__.get("_aggregate")
        if got is None:
            got = tuple(s for s in self.specs if s.definition.kind == "aggregate")
            object.__setattr__(self, "_aggregate", got)  # a cache, not a field
        return list(got)

    @property
    def group_tallies(self) -> set[str]:
        """The item-group tallies the metrics read, besides the slots."""
        return {t for s in self.specs for t in s.definition.tallies}

    @property
    def group_ks(self) -> list[int]:
        """The cut-offs at which item groups are tallied: those of item-group
        metrics and the largest cut-off asked (the exposure of ``item_groups``)."""
        if self.items is None or self.items.groups is None:
            return []
        ks = {s.k for s in self.specs if s.definition.of_item_groups and s.k is not None}
        cut = [s.k for s in self.specs if s.k is not None]
        if cut:
            ks.add(max(cut))
        return sorted(ks)


def evaluate_pair(plan: Plan, pair: Pair, keep_values: bool = True) -> Part:
    """Evaluate one pair (recommendations, truth) holding every row of its
    users: per-user values (unless ``keep_values`` is false), exact sums,
    counts, the item counts of aggregate metrics. Users of different pairs
    are disjoint, so parts :meth:`Combiner.add` up to the same outcome
    whatever the cut."""
    with _workspace.reusing():  # the thread's buffers, if the pool gave it some
        return _evaluate(plan, pair).part(plan, keep_values)


@dataclass
class _Evaluated:
    """One pair evaluated: what its :class:`Part` — and the part of each cell
    of its users — is made of."""

    p: Prepared
    truth: TruthData
    values: np.ndarray
    evaluated: np.ndarray
    policies: dict[str, tuple[np.ndarray, str]]
    short: np.ndarray | None  # lists shorter than the largest cut-off (None: no cut-off)
    seen_rows: np.ndarray | None  # list rows already in the user's train (None: no train)

    def part(self, plan: Plan, keep_values: bool = True) -> Part:
        """The pair's part."""
        p, values, evaluated = self.p, self.values, self.evaluated
        aggregate = plan.aggregate
        seen = _count_items(p, evaluated, {s.k for s in aggregate}) if aggregate else {}
        tallies = _tally_groups(plan, p, self.truth, evaluated) if plan.group_ks else {}
        only = (
            p.user_ids[p.has_recs & ~p.in_truth][:_EXAMPLES].tolist(),
            p.user_ids[p.in_truth & ~p.has_recs][:_EXAMPLES].tolist(),
        )
        sums = ExactSum.of_rows(values, evaluated)  # one compiled call for every metric
        counts = {**p.counts, **self._policy_counts(lambda m: int(np.count_nonzero(m)))}
        kept = (p.user_ids, values, evaluated) if keep_values else None
        return Part(kept, int(evaluated.sum()), sums, counts, list(p.notes), seen, only, tallies)

    def splittable(self) -> bool:
        """Whether the parts of subsets of users can be cut from this
        evaluation: every count is one of users, and no note was made (a note
        may not hold for a subset). Rows dropped or counted as duplicates are
        not counted per user."""
        p = self.p
        if p.notes:
            return False
        return (
            not p.counts.get("recommendation_rows_duplicate_dropped")
            and not p.counts.get("recommendation_rows_duplicate_counted")
            and not p.counts.get("truth_rows_duplicate_dropped")
            and not p.counts.get("truth_rows_duplicate_counted")
            and not p.counts.get("recommendation_rows_duplicate_joined")
            and not p.counts.get("truth_rows_duplicate_joined")
            and p.counts.get("recommendation_rows") == int(p.n.sum())
            and p.counts.get("truth_rows") == len(self.truth.users)
        )

    def parts(
        self, plan: Plan, codes: np.ndarray, keep_values: bool = True
    ) -> list[tuple[int, Part]]:
        """The part of each cell (``codes``: each user's cell), as the
        evaluation of that cell's users alone gives it (see :meth:`splittable`),
        computed for all cells at once: users ordered by cell, each count by
        one bincount over the users."""
        p, values = self.p, self.values
        found = distinct(codes)
        cell = np.searchsorted(found, codes)
        n = len(found)

        def per_cell(x: np.ndarray) -> np.ndarray:
            if x.dtype == bool:
                return np.bincount(cell[x], minlength=n)
            return np.bincount(cell, weights=x, minlength=n).astype(np.int64)

        order = np.argsort(cell, kind="stable")
        bounds = np.searchsorted(cell[order], np.arange(n + 1))
        ids, vals, ev = p.user_ids[order], values[:, order], self.evaluated[order]
        counted = {**self._row_counts(per_cell), **self._policy_counts(per_cell)}
        recs_only = (p.has_recs & ~p.in_truth)[order]
        truth_only = (p.in_truth & ~p.has_recs)[order]
        aggregate = plan.aggregate
        out = []
        for j, code in enumerate(found):
            s = slice(bounds[j], bounds[j + 1])
            evaluated = ev[s]
            seen: dict[int | None, pd.Series] = {}
            tallies: dict[int, GroupTally] = {}
            if aggregate or plan.group_ks:  # counts of items: over the cell's rows
                everyone = self.evaluated & (cell == j)
                if aggregate:
                    seen = _count_items(p, everyone, {s.k for s in aggregate})
                if plan.group_ks:
                    tallies = _tally_groups(plan, p, self.truth, everyone)
            block = vals[:, s]
            # with the values kept, the combiner sums each group's values once
            # (Combiner.totals), not each cell of each chunk
            sums = None if keep_values else ExactSum.of_rows(block, evaluated)
            only = (
                ids[s][recs_only[s]][:_EXAMPLES].tolist(),
                ids[s][truth_only[s]][:_EXAMPLES].tolist(),
            )
            part = Part(
                (ids[s], block, evaluated) if keep_values else None,
                int(evaluated.sum()),
                sums,
                _at(counted, j),
                list(p.notes),
                seen,
                only,
                tallies,
            )
            out.append((int(code), part))
        return out

    def _row_counts(self, per_cell: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
        """Each count of :attr:`Prepared.counts`, per cell: every one is a sum
        over users (:meth:`splittable`)."""
        p = self.p
        n_users = len(p.user_ids)
        per_user = numpy_engine.per_user_counts(p)
        per_user["recommendation_rows"] = p.n
        if p.truth_user is not None:
            per_user["truth_rows"] = np.bincount(p.truth_user, minlength=n_users)
        if self.short is not None:
            per_user["lists_shorter_than_largest_k"] = self.short
        if self.seen_rows is not None:
            seen = p.rec_user[self.seen_rows]
            per_user["recommendations_seen_in_train"] = np.bincount(seen, minlength=n_users)
        out = {}
        for key, value in p.counts.items():
            if key in per_user:
                out[key] = per_cell(per_user[key])
            elif value:  # pragma: no cover - every count above is per user
                raise AssertionError(f"{key} is not counted per user")
            else:
                out[key] = per_cell(np.zeros(n_users, dtype=bool))
        return out

    def _policy_counts(self, count: Callable[[np.ndarray], Any]) -> dict[str, Any]:
        """Who was evaluated, skipped or scored 0 and why, each ``count(mask)``
        of a mask over the users (an int, or one count per cell)."""
        p = self.p
        none = np.zeros(len(p.user_ids), dtype=bool)
        policies = self.policies.items()
        return {
            "users": count(~none),
            "users_in_truth": count(p.in_truth),
            "users_with_recommendations": count(p.has_recs),
            "users_evaluated": count(self.evaluated),
            "users_skipped": {w: count(m if pol == "skip" else none) for w, (m, pol) in policies},
            "users_scored_zero": {
                w: count(none if pol in ("skip", "keep") else m) for w, (m, pol) in policies
            },
        }


def _at(counts: dict[str, Any], j: int) -> dict[str, Any]:
    """Cell ``j``'s counts of per-cell counts (nested as the counts are)."""
    return {k: _at(v, j) if isinstance(v, dict) else int(v[j]) for k, v in counts.items()}


def _evaluate(plan: Plan, pair: Pair) -> _Evaluated:
    """Prepare and compute one pair: per-user values, who is evaluated, the
    users each policy concerns."""
    facts = plan.facts
    specs = list(facts.specs)
    recs, sub = pair.loaded()
    gains = None  # graded=False: the grades as read, for the metrics reading them as gains
    if not plan.graded:  # the one place the relevance reading is applied
        gains = sub.grades if plan.graded_gains and any(facts.gain_read) else None
        sub.grades = numpy_engine.binary_grades(sub.grades, plan.grade_cut)
    try:
        p = numpy_engine.prepare(
            recs,
            sub,
            threshold=plan.threshold,
            duplicates=plan.duplicates,
            need_ties=facts.need_ties,
            max_grade=plan.max_grade if plan.graded else 1.0,
            ties=plan.ties,
            positive_grades=facts.positive_grades,
            relevant_from=plan.relevant_from,
            rank=plan.rank,
            depth=plan.depth,
            judged=facts.reads_judged or plan.unjudged == "condense",
            condense=plan.unjudged == "condense",
            negative_grades=plan.negative_grades,
            gains=gains,
        )
    except InputError as exc:
        if exc.row is None:
            raise
        if exc.source == sub.source:
            raise exc.remap(pair.truth_row) from None
        raise exc.remap(pair.recs_row) from None
    _count_clipped(p, specs)
    items = plan.items
    if items is not None and p.rec_item_ids is not None:
        p.rec_context = items.index_of(p.rec_item_ids)
    values = numpy_engine.compute(p, facts, items, plan.catalog_size)
    seen_rows = None
    if items is not None and items.train_pairs is not None and p.rec_item_ids is not None:
        seen_rows = items.train_pairs.found(p.user_ids[p.rec_user], p.rec_context)
        p.counts["recommendations_seen_in_train"] = int(np.count_nonzero(seen_rows))
    longest_k = max((s.k for s in specs if s.k is not None), default=0)
    short = None
    if longest_k:
        short = p.has_recs & (p.n < longest_k)
        p.counts["lists_shorter_than_largest_k"] = int(short.sum())
    evaluated, policies = _apply_policies(
        p,
        values,
        plan.empty_truth,
        plan.missing_recs,
        plan.empty_truth if plan.no_truth is None else plan.no_truth,
        np.array(facts.needs_truth, dtype=bool),
        inherited=plan.no_truth is None,
    )
    return _Evaluated(p, sub, values, evaluated, policies, short, seen_rows)


def _count_clipped(p: Prepared, specs: list[MetricSpec]) -> None:
    """Count, per ``clip=`` of the weighted metrics, the relevant pairs whose
    weight 1/p it lowered to 1/clip (``relevant_pairs_clipped_at_CLIP``), per user."""
    if p.relevant_weight is None or p.relevant_user is None:
        return
    clips = {float(s.param_dict.get("clip", 0.0)) for s in numpy_engine.weighted(specs)}
    n_users, user = len(p.user_ids), p.relevant_user
    for clip in sorted(clips - {0.0}):
        per_user = np.bincount(user[p.relevant_weight > 1.0 / clip], minlength=n_users)
        key = f"relevant_pairs_clipped_at_{clip:g}"
        p.dropped[key] = per_user
        p.counts[key] = int(per_user.sum())


def _tally_groups(
    plan: Plan, p: Prepared, truth: TruthData, evaluated: np.ndarray
) -> dict[int, GroupTally]:
    """Item-group tallies of the users evaluated, per cut-off (see
    :class:`GroupTally`); the relevant and training pairs, and the hits, only
    when a metric reads them (``MetricDef.tallies``)."""
    items = plan.items
    assert items is not None and items.groups is not None
    groups = items.groups
    n_groups = groups.n_groups
    wanted = plan.group_tallies
    relevant = np.zeros(n_groups, dtype=np.int64)
    if "relevant" in wanted:  # (user, relevant item of g) pairs, from the truth (distinct)
        t_pos = positions(p.user_ids, truth.users)
        t_idx = items.index_of(truth.items)
        keep = (truth.grades >= plan.threshold) & (truth.grades > 0) & (t_pos >= 0)
        keep[keep] = evaluated[t_pos[keep]] & (groups.count[t_idx[keep]] > 0)
        slots = items.unknown + 1
        pairs = distinct(t_pos[keep] * slots + t_idx[keep])
        relevant = np.bincount(groups.expand(pairs % slots)[1], minlength=n_groups)
    seen = np.zeros(n_groups, dtype=np.int64)
    if "seen" in wanted and items.train_pairs is not None:  # (user, training item of g)
        _, history = items.history(p.user_ids[evaluated])
        seen = np.bincount(groups.expand(history)[1], minlength=n_groups)
    out: dict[int, GroupTally] = {}
    users = int(evaluated.sum())
    if p.rec_context is None:
        for k in plan.group_ks:
            t = GroupTally.zeros(n_groups, k)
            out[k] = GroupTally(t.slots, t.hits, t.all_slots, relevant, seen, users)
        return out
    fast = [(k, _native_tally(groups, p, evaluated, k, "hits" in wanted)) for k in plan.group_ks]
    for k, found in fast:
        if found is not None:
            out[k] = GroupTally(*found, relevant, seen, users)
    if len(out) == len(plan.group_ks):
        return out
    rank = numpy_engine._positions(p)
    counted = evaluated[p.rec_user]
    for k in plan.group_ks:
        sel = counted & (rank < k)
        if sel.all():  # every row: no copy
            rows, r, idx = slice(None), rank, p.rec_context
        else:
            rows = np.flatnonzero(sel)
            r, idx = rank[rows], p.rec_context[rows]
        size = n_groups * k
        slots_at = np.bincount(_group_keys(groups, idx, r, k), minlength=size)
        hits_at = np.zeros(size, dtype=np.int64)
        if "hits" in wanted:
            hit = p.rec_gain[rows] > 0
            hits_at = np.bincount(_group_keys(groups, idx[hit], r[hit], k), minlength=size)
        out[k] = GroupTally(
            slots_at.reshape(n_groups, k),
            hits_at.reshape(n_groups, k),
            np.bincount(r, minlength=k),
            relevant,
            seen,
            users,
        )
    return out


def _native_tally(
    groups: ItemGroups, p: Prepared, evaluated: np.ndarray, k: int, hits: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The slots, hits and all slots of :func:`_tally_groups` in one compiled
    pass over the rows; None when the module is not built (the NumPy path
    then counts the same integers)."""
    if _native is None or p.rec_context is None or groups.count.max(initial=0) > _TALLY_WIDTH:
        return None
    n_groups = groups.n_groups
    slots = np.zeros((n_groups + 1) * k, dtype=np.int64)  # the last row: padding
    hit = np.zeros((n_groups + 1) * k, dtype=np.int64)
    every = np.zeros(k, dtype=np.int64)
    rank = p.rec_pos if p.positioned else None  # else: the position in the list
    table = groups.table
    status = _native.group_tally(
        np.ascontiguousarray(p.rec_context, dtype=np.int64),
        np.ascontiguousarray(p.rec_offsets, dtype=np.int64),
        np.ascontiguousarray(evaluated).view(np.uint8),
        None if rank is None else np.ascontiguousarray(rank, dtype=np.int64),
        np.ascontiguousarray(p.rec_gain, dtype=np.float64) if hits else None,
        table.reshape(-1),
        table.shape[1],
        k,
        n_groups,
        slots,
        hit if hits else None,
        every,
    )
    if status != 0:  # pragma: no cover - indexes come from the context
        raise AssertionError(f"group_tally: status {status}")
    cut = n_groups * k
    return slots[:cut].reshape(n_groups, k), hit[:cut].reshape(n_groups, k), every


#: Items in more groups than this are tallied by the NumPy path (the compiled
#: one's table holds this many groups per item).
_TALLY_WIDTH = 16


def _group_keys(groups: ItemGroups, idx: np.ndarray, r: np.ndarray, k: int) -> np.ndarray:
    """``g × k + r`` for every (row, group of the row's item): the j-th group
    of every row whose item has more than j, one gather per j (items are in
    few groups)."""
    count = groups.count[idx]
    start = groups.offsets[idx]
    one = count > 0
    if one.all():
        keys = [groups.members[start] * k + r]
    else:
        keys = [groups.members[start[one]] * k + r[one]]
    j = 1
    while True:
        more = np.flatnonzero(count > j)
        if not len(more):
            break
        keys.append(groups.members[start[more] + j] * k + r[more])
        j += 1
    return keys[0] if len(keys) == 1 else np.concatenate(keys)


def _count_items(
    p: Prepared, evaluated: np.ndarray, ks: set[int | None]
) -> dict[int | None, pd.Series]:
    """Item counts in the top-k lists of the users evaluated, per cut-off."""
    if p.rec_item_ids is None:
        return {}
    import pandas as pd

    counted = evaluated[p.rec_user]
    out = {}
    for k in ks:
        rows = counted if k is None else counted & (numpy_engine._positions(p) < k)
        out[k] = pd.Series(p.rec_item_ids[rows]).value_counts(sort=False)
    return out


@dataclass
class Part:
    """What one set of users gives, to be combined with the parts of other
    (disjoint) sets of users: per-user values (when kept), the number of
    users evaluated, the exact sum of each per-user metric over them, the
    counts, notes, item counts per cut-off (aggregate metrics) and a few
    users found on one side only (for the error when no user is shared).
    It pickles: a Spark executor returns it to the driver."""

    values: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # user ids, values, evaluated
    evaluated: int
    sums: list[ExactSum] | None  # None: to be summed from the values (kept)
    counts: dict[str, Any]
    notes: list[str]
    exposure: dict[int | None, pd.Series]
    only: tuple[list[Any], list[Any]] = ([], [])
    groups: dict[int, GroupTally] = field(default_factory=dict)


class Combiner:
    """Adds up :class:`Part` objects, in any order, into one :class:`Outcome`.

    Sums are exact and counts are integers, so the outcome does not depend on
    the order of the parts or on how the users were cut into them; per-user
    values are put in sorted user order."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.counts: dict[str, Any] = {}
        self.notes: list[str] = []
        self.sums = [ExactSum() for _ in plan.per_user]
        self.unsummed: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.exposure = _ExposureCounter({s.k for s in plan.aggregate})
        self.groups: dict[int, GroupTally] = {}
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.only: tuple[list[Any], list[Any]] = ([], [])
        self.added = 0

    def add(self, part: Part) -> None:
        self.added += 1
        for note in part.notes:
            if note not in self.notes:
                self.notes.append(note)
        _add_counts(self.counts, part.counts)
        self.exposure.add(part.exposure, part.evaluated)
        for k, tally in part.groups.items():
            self.groups[k] = self.groups[k] + tally if k in self.groups else tally
        if part.values is not None:
            self.parts.append(part.values)
        if part.sums is None:
            assert part.values is not None
            self.unsummed.append(part.values)
        else:
            self.sums = [a + b for a, b in zip(self.sums, part.sums, strict=True)]
        # the smallest users of each side, whatever the order of the parts
        self.only = (_smallest(self.only[0], part.only[0]), _smallest(self.only[1], part.only[1]))

    def outcome(self, notes: list[str] | None = None) -> Outcome:
        """The combined outcome (``notes``: notes found before the parts, first)."""
        if not self.added:
            raise ValueError("no users to evaluate")  # pragma: no cover - callers give one part
        found = list(notes or [])
        found.extend(n for n in sorted(self.notes) if n not in found)  # in any part order
        counts = self.counts
        _some_user_shared(counts, self.only)
        if self.parts:
            user_ids, values, evaluated = _in_user_order(self.parts)
        else:  # values not kept (a Spark run): nothing per user reaches here
            user_ids = np.empty(0, dtype=object)
            values = np.empty((len(self.sums), 0))
            evaluated = np.empty(0, dtype=bool)
        aggregates = self.aggregates()
        items = self.plan.items
        aggregate = self.plan.aggregate
        if aggregate and items is not None and items.catalog_source:
            largest = max(aggregate, key=lambda s: np.inf if s.k is None else s.k).k
            e = self.exposure.exposure(largest, items)
            counts["recommended_items_outside_catalog"] = int((~e.in_catalog).sum())
        table = self.item_group_table() if self.plan.group_ks else None
        sums = self.totals()
        return Outcome(user_ids, values, evaluated, counts, aggregates, found, sums, table)

    def totals(self) -> list[ExactSum]:
        """The exact sum of each per-user metric over the users evaluated: the
        parts' sums, and the values of the parts that came without them
        summed here, all at once (exact: the same whatever the grouping)."""
        if not self.unsummed:
            return self.sums
        values = np.concatenate([v[:, e] for _, v, e in self.unsummed], axis=1)
        self.sums = [a + b for a, b in zip(self.sums, ExactSum.of_rows(values), strict=True)]
        self.unsummed = []
        return self.sums

    def summary(self) -> tuple[dict[str, float], int]:
        """Each metric's value and the users evaluated, without putting the
        per-user values in order (what :meth:`outcome` and
        :func:`~receval.evaluation.assemble.result_of` give, bit for bit);
        :class:`NoSharedUser` when no user has both a list and a truth."""
        _some_user_shared(self.counts, self.only)
        values = {
            str(s): s.definition.summarise(t.mean())
            for s, t in zip(self.plan.per_user, self.totals(), strict=True)
        }
        values.update(self.aggregates())
        ordered = {str(s): values[str(s)] for s in self.plan.specs}
        return ordered, int(self.counts.get("users_evaluated", 0))

    def aggregates(self) -> dict[str, float]:
        """The value of each aggregate metric, from the item counts or, for
        item-group metrics, the group tallies."""
        out = {}
        for s in self.plan.aggregate:
            if s.definition.of_item_groups:
                stats: Any = self.group_counts(s.k)
            else:
                stats = self.exposure.exposure(s.k, self.plan.items)
            out[str(s)] = float(s.definition.kernel(stats, **s.param_dict))
        return out

    def group_counts(self, k: int | None) -> GroupCounts:
        """The combined tallies of item groups at cut-off k."""
        items = self.plan.items
        assert items is not None and items.groups is not None and k is not None
        groups = items.groups
        tally = self.groups.get(k) or GroupTally.zeros(groups.n_groups, k)
        if not self.groups:  # no part: nobody evaluated
            tally.users = self.exposure.users
        catalog = np.bincount(
            groups.expand(np.flatnonzero(items.in_catalog))[1], minlength=groups.n_groups
        )
        return GroupCounts(
            tally, groups.labels, groups.sizes, catalog, int(items.in_catalog.sum()), k
        )

    def item_group_table(self) -> pd.DataFrame:
        """``Result.item_groups``: per item group, its items, its share of the
        catalog, its exposure at the largest cut-off, and the value within the
        group of each aggregate metric that has one (``per_item_group``)."""
        import pandas as pd

        items = self.plan.items
        assert items is not None and items.groups is not None
        groups = items.groups
        k = self.plan.group_ks[-1]
        c = self.group_counts(k)
        cols: dict[str, Any] = {"items": c.sizes}
        share = np.full(groups.n_groups, np.nan)
        if c.n_catalog:
            share = c.catalog / c.n_catalog
        cols["catalog_share"] = share
        cols[f"exposure@{k}"] = exposure_shares(c)
        for s in self.plan.aggregate:
            if not s.definition.per_item_group:
                continue
            e = self.exposure.exposure(s.k, items)
            at, g = groups.expand(items.index_of(np.asarray(e.ids)))
            values = []
            for j in range(groups.n_groups):
                mine = at[g == j]
                sub = Exposure(
                    e.counts[mine], e.in_catalog[mine], int(c.catalog[j]), e.n_users, e.k
                )
                values.append(float(s.definition.kernel(sub, **s.param_dict)))
            cols[str(s)] = values
        index = pd.MultiIndex.from_arrays(
            [[groups.name] * groups.n_groups, list(groups.labels)], names=["grouping", "group"]
        )
        return pd.DataFrame(cols, index=index)


def evaluated(plan: Plan, pairs: Iterable[Pair], cells: UserCells | None = None) -> Iterator[Any]:
    """Each pair's part (with ``cells``, the part and its cells' parts:
    :func:`evaluate_cells`), in the order of the pairs, evaluated a few at a
    time on threads (NumPy releases the GIL): what an engine on this machine
    gives :meth:`receval.engines.base.Engine.combine`. The order of the
    results does not depend on the number of threads."""
    # Garbage collection stays as the host set it: switching it off here was
    # process-wide (other threads of the host saw it off) and bought nothing
    # measurable (benchmarks/README.md, issue #17). The allocator is tuned only
    # in a process that opted in (receval._malloc.allow: the receval command).
    tuned = False
    first = True
    try:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            pending: deque[Future[Any]] = deque()
            for pair in pairs:
                if first:  # large input: keep freed memory from here on, after
                    # giving back what reading the input left free
                    tuned, first = _malloc.tune(pair.rows), False
                    if tuned:
                        _malloc.release()
                if cells is None:
                    pending.append(pool.submit(_pooled, evaluate_pair, plan, pair))
                else:
                    pending.append(pool.submit(_pooled, evaluate_cells, plan, pair, cells))
                while len(pending) > THREADS:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
    finally:
        if tuned:
            _malloc.release()


def _pooled(evaluate: Callable[..., Any], *args: Any) -> Any:
    """``evaluate(*args)`` on a thread of :func:`evaluated`'s pool, which keeps
    its buffers from one pair to the next (:class:`receval._workspace.Workspace`;
    the thread, and its buffers, end with the pool)."""
    _workspace.install()
    return evaluate(*args)


_EXAMPLES = 5


def _smallest(a: list[Any], b: Sequence[Any]) -> list[Any]:
    """The :data:`_EXAMPLES` smallest of two parts' example users; users of
    both kinds (batches of an accumulator with integer ids, then text ids) as
    strings, as the evaluation matches them."""
    both = [*a, *b]
    if len({isinstance(u, str) for u in both}) > 1:
        both = [str(u) for u in both]
    return sorted(both)[:_EXAMPLES]


def _some_user_shared(counts: dict[str, Any], only: tuple[list[Any], list[Any]]) -> None:
    """Recommendations and truth that share no user are a mistake (swapped
    columns or inputs, ids of another kind on each side), not a score of 0."""
    in_truth = counts.get("users_in_truth", 0)
    with_recs = counts.get("users_with_recommendations", 0)
    rows = counts.get("truth_rows", 0) and counts.get("recommendation_rows", 0)
    if not (rows and in_truth and with_recs and in_truth + with_recs == counts.get("users", 0)):
        return

    def show(ids: list[Any]) -> str:
        return ", ".join(repr(plain(u)) for u in ids)

    raise NoSharedUser(
        f"no user is in both the recommendations and the truth: {with_recs} users have "
        f"recommendations (e.g. {show(only[0])}) and {in_truth} users are in the truth "
        f"(e.g. {show(only[1])}), none in common. Are the user and item columns, or the two "
        "inputs, swapped? Are the ids written alike on both sides (e.g. 'u1' vs 1)?",
        recommendation_users=only[0],
        truth_users=only[1],
    )


def _in_user_order(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parts' users, values and flags concatenated in sorted user order
    (without a reorder when the parts already are in order)."""
    if len(parts) == 1:
        return parts[0]
    ids = [u for u, _, _ in parts]
    if len({kind(u) for u in ids if len(u)}) > 1:  # batches of both kinds: users as strings
        ids = [as_str(u) for u in ids]
    user_ids = np.concatenate(ids)
    values = np.concatenate([v for _, v, _ in parts], axis=1)
    evaluated = np.concatenate([e for _, _, e in parts])
    if user_ids.dtype != object and np.all(user_ids[1:] > user_ids[:-1]):
        return user_ids, values, evaluated
    order = np.argsort(user_ids, kind="stable")
    return user_ids[order], values[:, order], evaluated[order]
