"""The engines of this machine: tables in memory, files streamed, batches.

All three cut the users into parts (:class:`~receval.records.Pair`: the
lists and the truth of the same complete users), evaluate each part with
:func:`~receval.engines.driver.evaluate_pair` a few at a time on threads
(:func:`~receval.engines.driver.evaluated`) and combine the parts in user
order (:meth:`~receval.engines.base.Engine.combine`). Per-user values, and the
means taken from them, are therefore bit for bit the same whatever the
chunking: peak memory is bounded by one chunk's working set, not by the size
of the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from receval.engines import numpy_engine
from receval.engines.base import Engine, register
from receval.engines.driver import Part, Plan, UserCells, evaluate_pair, evaluated
from receval.engines.numpy_engine import encode, user_offsets
from receval.ids import kind, runs
from receval.metrics.context import ItemContext
from receval.metrics.spec import MetricSpec
from receval.records import Pair, PairSource, RecsData, Tables, TruthData, as_strings

__all__ = ["Batches", "InProcess", "Streamed"]


def text_sides(recs: RecsData, truth: TruthData) -> tuple[bool, bool]:
    """Whether users, and items, are matched as text: their ids are numbers
    on one side and text on the other (a truth without rows decides nothing)."""
    str_users = kind(recs.users) != kind(truth.users) and len(truth.users) > 0
    str_items = kind(recs.items) != kind(truth.items) and len(truth.items) > 0
    return str_users, str_items


@register
class InProcess(Engine):
    """Tables in memory (:class:`~receval.records.Tables`): each chunk of the
    recommendations evaluated with the truth of its users, then the users of
    the truth no chunk held, with empty lists."""

    name = "in_process"

    @classmethod
    def accepts(cls, inputs: Any) -> bool:
        return isinstance(inputs, Tables)

    def prepare(
        self, specs: Sequence[MetricSpec], settings: Mapping[str, Any], items: ItemContext | None
    ) -> Plan:
        """The first chunk read; ids of one kind on both sides (as text where
        they differ, with a note); the truth indexed by user."""
        truth = self.inputs.truth
        self._chunks: Iterator[tuple[RecsData, int]] = iter(self.inputs.chunks)
        first = next(self._chunks, None)
        if first is None:  # pragma: no cover - io always gives one chunk
            raise ValueError("no recommendations chunk")
        self._first = first
        self._text = text_sides(first[0], truth)
        for what, differ, ids in zip(
            ("user", "item"), self._text, (first[0].users, first[0].items), strict=True
        ):
            if differ and len(ids):
                self.notes.append(_MATCHED_AS_TEXT.format(what=what))
        as_strings(truth, *self._text)
        self._index = _TruthIndex(truth)
        return Plan(tuple(specs), numpy_engine._max_grade(truth.grades), items=items, **settings)

    def parts(self, plan: Plan, cells: UserCells | None = None) -> Iterator[Any]:
        return evaluated(plan, self._pairs(), cells)

    def _pairs(self) -> Iterator[Pair]:
        template, truth = self._first[0], self.inputs.truth
        for recs, offset in [self._first, *self._chunks]:
            as_strings(recs, *self._text)
            sub, rows = self._index.subset(_distinct_users(recs))
            yield Pair(
                recs,
                sub,
                lambda r, at=offset, d=recs: d.row_of(r) + at,
                lambda r, rows=rows: truth.row_of(rows[r]),
                recs.rows,
            )
        sub, rows = self._index.rest()
        if sub.rows or len(sub.empty_users):
            yield Pair(
                _empty_recs(template), sub, lambda r: r, lambda r, rows=rows: truth.row_of(rows[r])
            )


#: the note of ids of two kinds, matched as text (in-process and in batches alike)
_MATCHED_AS_TEXT = "{what} ids are numbers on one side and strings on the other: matched as strings"


@register
class Streamed(Engine):
    """Inputs read pair by pair of users (:class:`~receval.records.PairSource`:
    two Parquet files, or two tables sorted by user); evaluated again from
    the start when the source changes how it cuts them (rows out of order)."""

    name = "streamed"

    @classmethod
    def accepts(cls, inputs: Any) -> bool:
        return isinstance(inputs, PairSource)

    def prepare(
        self, specs: Sequence[MetricSpec], settings: Mapping[str, Any], items: ItemContext | None
    ) -> Plan:
        return Plan(tuple(specs), self.inputs.max_grade, items=items, **settings)

    def parts(self, plan: Plan, cells: UserCells | None = None) -> Iterator[Any]:
        return evaluated(plan, self._pairs, cells)

    def run(
        self,
        specs: Sequence[MetricSpec],
        settings: Mapping[str, Any],
        items: ItemContext | None = None,
        cells: UserCells | None = None,
        progress: Any = None,
    ) -> Any:
        def attempt(pairs: Iterator[Pair], notes: list[str]) -> Any:
            self._pairs, self.notes = pairs, list(notes)
            return Engine.run(self, specs, settings, items, cells, progress)

        return self.inputs.over_pairs(attempt)


class Batches(Engine):
    """The batches of an :class:`~receval.Accumulator`, each holding every row
    of its users, evaluated as each arrives (:meth:`add`) and combined when
    asked. Made by the accumulator with its plan, never chosen for inputs
    given whole (a stream does not know its largest grade)."""

    name = "batches"

    def __init__(self, plan: Plan, parts: Iterable[Part] = ()) -> None:
        super().__init__(list(parts))
        self.plan = plan

    @classmethod
    def accepts(cls, inputs: Any) -> bool:
        return False

    def add(self, recs: RecsData, truth: TruthData) -> None:
        """Evaluate one batch now (its errors are raised here): ids of one
        kind on both sides, as in-process."""
        text = text_sides(recs, truth)
        as_strings(recs, *text)
        as_strings(truth, *text)
        pair = Pair(recs, truth, recs.row_of, truth.row_of, recs.rows)
        part = evaluate_pair(self.plan, pair, keep_values=True)
        for what, differ, ids in zip(("user", "item"), text, (recs.users, recs.items), strict=True):
            note = _MATCHED_AS_TEXT.format(what=what)
            if differ and len(ids) and note not in part.notes:  # as evaluate says it
                part.notes.append(note)
        self.inputs.append(part)

    def prepare(
        self, specs: Sequence[MetricSpec], settings: Mapping[str, Any], items: ItemContext | None
    ) -> Plan:
        return self.plan

    def parts(self, plan: Plan, cells: UserCells | None = None) -> list[Part]:
        return list(self.inputs)


class _TruthIndex:
    """The truth grouped by user, to hand each chunk the rows of its users."""

    def __init__(self, truth: TruthData) -> None:
        self.truth = truth
        (codes, _), self.uniq = encode([truth.users, truth.empty_users])
        self.order = np.argsort(codes, kind="stable")
        self.offsets = user_offsets(codes, len(self.uniq))
        self.seen = np.zeros(len(self.uniq), dtype=bool)

    def _codes(self, users: np.ndarray) -> np.ndarray:
        if self.uniq.dtype == object or users.dtype == object:
            import pandas as pd

            return np.asarray(pd.Index(self.uniq).get_indexer(users), dtype=np.int64)
        pos = np.searchsorted(self.uniq, users)
        pos[pos == len(self.uniq)] = 0
        ok = self.uniq[pos] == users if len(self.uniq) else np.zeros(len(users), dtype=bool)
        return np.where(ok, pos, -1)

    def _take(self, codes: np.ndarray) -> tuple[TruthData, np.ndarray]:
        self.seen[codes] = True
        starts, ends = self.offsets[codes], self.offsets[codes + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        shift = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        rows = self.order[shift + np.arange(total)] if total else np.empty(0, dtype=np.int64)
        t = self.truth
        sub = TruthData(
            users=t.users[rows],
            items=t.items[rows],
            grades=t.grades[rows],
            rows=total,
            graded=t.graded,
            source=t.source,
            empty_users=self.uniq[codes[lengths == 0]],
            propensity=None if t.propensity is None else t.propensity[rows],
        )
        return sub, rows

    def subset(self, users: np.ndarray) -> tuple[TruthData, np.ndarray]:
        """The truth of these (distinct) users, and the original row of each of its rows."""
        codes = self._codes(users)
        return self._take(codes[codes >= 0])

    def rest(self) -> tuple[TruthData, np.ndarray]:
        """The truth of the users no chunk held."""
        return self._take(np.flatnonzero(~self.seen))


def _empty_recs(like: RecsData) -> RecsData:
    return RecsData(
        users=like.users[:0],
        items=like.items[:0],
        score=None if like.score is None else like.score[:0],
        rank=None if like.rank is None else like.rank[:0],
        rows=0,
        source=like.source,
    )


def _distinct(users: np.ndarray) -> np.ndarray:
    found = None if users.dtype == object else runs(users)
    if found is not None:
        return found[0]
    import pandas as pd

    return np.asarray(pd.unique(users))


def _distinct_users(recs: RecsData) -> np.ndarray:
    users, empty = recs.users, recs.empty_users
    return _distinct(np.concatenate([users, empty]) if len(empty) else users)
