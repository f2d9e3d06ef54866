"""The engine-neutral data contract: what readers produce and engines consume.

:class:`Columns` names the input columns; :class:`RecsData` and
:class:`TruthData` hold an input as NumPy columns (ids already under the id
rule of :mod:`receval.ids`); :class:`Pair` is one unit of work, the lists and
truth of the same users.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from receval.ids import as_str

__all__ = [
    "Columns",
    "Pair",
    "PairSource",
    "RecsData",
    "SparkRows",
    "Tables",
    "TruthData",
    "as_strings",
    "subset",
]


@dataclass(frozen=True)
class Columns:
    """Which column holds what: a name, None (detect it by the aliases of
    :data:`receval.io.columns.ALIASES`) or ``""`` (do not read this role).

    An explicit name must exist in the input (an error names the columns
    found and a close match). ``actual`` and ``predicted`` are read from
    ratings inputs only.

    Example:
        >>> Columns(user="userId").user, Columns().item
        ('userId', None)
    """

    user: str | None = None
    item: str | None = None
    score: str | None = None
    rank: str | None = None
    relevance: str | None = None
    actual: str | None = None
    predicted: str | None = None
    #: the truth's user and item columns, where they differ from ``user``/``item``
    truth_user: str | None = None
    truth_item: str | None = None

    def for_truth(self) -> Columns:
        """The columns of the truth input: ``truth_user``/``truth_item`` in
        place of ``user``/``item`` where given.

        >>> Columns(user="uid", truth_user="customer").for_truth().user
        'customer'
        """
        if self.truth_user is None and self.truth_item is None:
            return self
        return replace(
            self,
            user=self.truth_user or self.user,
            item=self.truth_item or self.item,
            truth_user=None,
            truth_item=None,
        )


@dataclass
class RecsData:
    """Recommendations as columns: one row per (user, item) with a rank or score.

    ``recommended`` (explicit-feedback input only) marks the rows whose
    predicted rating reaches the threshold; the others are ranked but not
    recommended, so they never count as hits.
    """

    users: np.ndarray
    items: np.ndarray
    score: np.ndarray | None
    rank: np.ndarray | None
    rows: int
    source: str = "recommendations"
    recommended: np.ndarray | None = None
    empty_users: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    #: role -> the input column read for it (``{}`` for mappings)
    columns: dict[str, str] = field(default_factory=dict)
    #: the input's row of each row, when they differ (a table of item lists,
    #: one row per listed item); None: row r is the input's row r
    given: np.ndarray | None = None

    def row_of(self, row: int) -> int:
        """The input's row of row ``row`` (what an error names)."""
        return row if self.given is None else int(self.given[row])


@dataclass
class TruthData:
    """The truth as columns: one row per (user, item) with a grade
    (``graded``: read from a relevance column or a mapping of grades)."""

    users: np.ndarray
    items: np.ndarray
    grades: np.ndarray
    rows: int
    graded: bool
    source: str = "truth"
    empty_users: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    #: role -> the input column read for it (``{}`` for mappings); the
    #: ``relevance`` entry names the column the grades came from
    columns: dict[str, str] = field(default_factory=dict)
    #: the propensity of each row's (user, item) pair, NaN where none was given
    #: (``evaluate(..., propensities=)``); None: no weighted metric asked
    propensity: np.ndarray | None = None
    #: the input's row of each row, when they differ (:attr:`RecsData.given`)
    given: np.ndarray | None = None

    def row_of(self, row: int) -> int:
        """The input's row of row ``row`` (what an error names)."""
        return row if self.given is None else int(self.given[row])

    @property
    def max_grade(self) -> float:
        """The largest grade (1.0 without grades or rows): with
        ``columns.get("relevance")``, what a note about a rating scale needs."""
        return float(self.grades.max()) if self.graded and len(self.grades) else 1.0


@dataclass
class Pair:
    """A chunk of recommendations and the truth of the same users, with the
    row of the input each of their rows came from (for error messages).

    ``load`` (when given, with ``recs`` and ``truth`` None) makes them on first
    use, in the thread that evaluates the pair; ``rows`` is the number of
    recommendation rows, known before.
    """

    recs: RecsData | None
    truth: TruthData | None
    recs_row: Callable[[int], int]
    truth_row: Callable[[int], int]
    rows: int = 0
    load: Callable[[], tuple[RecsData, TruthData]] | None = None

    def loaded(self) -> tuple[RecsData, TruthData]:
        """The recommendations and the truth, made by ``load`` if need be."""
        if self.load is not None:
            self.recs, self.truth = self.load()
            self.load = None
        assert self.recs is not None and self.truth is not None
        return self.recs, self.truth


# -- the forms receval.io opens an evaluation's inputs into; each names its engine ----------


@dataclass
class Tables:
    """Inputs in memory: the recommendations in chunks of complete users
    (each a :class:`RecsData` and the input row of its first row) and the
    whole truth. Evaluated by :class:`receval.engines.local.InProcess`."""

    chunks: Iterable[tuple[RecsData, int]]
    truth: TruthData


class PairSource(ABC):
    """Inputs read pair by pair of complete users (two files sorted by user,
    merged, or partitioned by user first): evaluated by
    :class:`receval.engines.local.Streamed`."""

    @property
    @abstractmethod
    def max_grade(self) -> float:
        """The largest grade of the whole truth (1.0 when grades are not read)."""

    @abstractmethod
    def over_pairs(self, run: Callable[[Iterator[Pair], list[str]], Any]) -> Any:
        """``run(pairs, notes)`` over every pair, once, or again from the
        start when the first way of cutting the files failed (rows found out
        of order while merging); what ``run`` returned."""


#: the column of :attr:`SparkRows.rows` telling the sides apart: 0 recommendations,
#: 1 truth, 2 the training pairs of the partition's users
SIDE = "__receval_side"


@dataclass
class SparkRows:
    """Inputs on Spark: the rows of both (and of a Spark ``train=``) in one
    DataFrame with columns named by role and a :data:`SIDE` column, and how
    a partition's rows become a :class:`Pair` (``to_pair``, a module-level
    function: it pickles to the executors). Evaluated by
    :class:`receval.engines.spark.Spark`."""

    rows: Any  # pyspark.sql.DataFrame
    to_pair: Callable[[Any], Pair]  # a pyarrow.Table of a partition -> its Pair
    user_type: Any  # the Spark type of the user column (of the per-user values)
    max_grade: float = 1.0
    train: bool = False  # rows of side 2 hold training pairs
    partitions: int | None = None  # None: Spark's own number
    notes: list[str] = field(default_factory=list)


def as_strings(data: RecsData | TruthData, users: bool, items: bool) -> None:
    """Ids as strings (in place) when the other side's are strings."""
    if users:
        data.users, data.empty_users = as_str(data.users), as_str(data.empty_users)
    if items:
        data.items = as_str(data.items)


def subset(data: Any, keep: np.ndarray, keep_empty: np.ndarray) -> Any:
    """``data`` (:class:`RecsData` or :class:`TruthData`) with only the rows
    ``keep`` (a mask or row numbers, in order) and the users without rows
    ``keep_empty``."""
    import dataclasses

    users = data.users[keep]
    changes: dict[str, Any] = {
        "users": users,
        "items": data.items[keep],
        "rows": len(users),
        "empty_users": np.asarray(data.empty_users)[keep_empty],
    }
    for name in ("score", "rank", "recommended", "grades", "propensity"):
        value = getattr(data, name, None)
        if isinstance(value, np.ndarray):
            changes[name] = value[keep]
    return dataclasses.replace(data, **changes)
