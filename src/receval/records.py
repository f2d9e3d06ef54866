"""The engine-neutral data contract: what readers produce and engines consume.

:class:`Columns` names the input columns; :class:`RecsData` and
:class:`TruthData` hold an input as NumPy columns (ids already under the id
rule of :mod:`receval.ids`); :class:`Pair` is one unit of work, the lists and
truth of the same users.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    #: the column the rows of one user share and are grouped by: the user
    #: ids, or a key of text ids that the text rule reads as one user
    #: (``"7"`` and ``"7.0"``: :func:`user_key`)
    key: str = "user"
    #: per side (0, 1, 2), the id roles whose floats the JVM wrote as text
    #: (role -> "float64" or "float32"), read back as floats by each partition
    floats: dict[int, dict[str, str]] = field(default_factory=dict)
    #: the user ids are text grouped as written: a partition that meets one
    #: written apart from the text rule's form (``"7.0"``, :func:`respelled`)
    #: says so, and the engine groups them by :func:`text_rule` instead
    texts: bool = False


#: the column text user ids are grouped by on Spark (:func:`user_key`)
KEY = "__receval_user_key"

#: a number literal with a fraction or an exponent (the text rule's others
#: are integer literals or stay text); ``\z``: the very end, as Python's fullmatch
_FRACTION_OR_EXPONENT = r"^-?(0|[1-9][0-9]*)(\.[0-9]+([eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)\z"


#: a number literal with a fraction or an exponent, its parts captured: sign,
#: integer digits, fraction digits, exponent
_PARTS = r"^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$"


def text_rule(text: Any) -> Any:
    """The text rule (:func:`receval.ids.text_value`) in the JVM: a Spark
    Column of strings as each id's canonical text, so that ids the rule reads
    as one (``"7"``, ``"7.0"``, ``"7e0"``, ``"70e-1"``; ``"-0"`` and ``"0"``)
    are one string before any shuffle. Exact, with no float: a number literal
    with a fraction or an exponent whose value is whole and within 2**53 is
    that integer's digits (``"9007199254740993.0"`` and ``"7.000000000000000001"``
    stay as written, as in-process); any other string is itself.
    Tested against :func:`receval.ids.text_value` on generated literals
    (tests/test_spark_id_forms.py)."""
    from pyspark.sql import functions as F

    dotted = F.instr(text, ".") + F.instr(text, "e") + F.instr(text, "E") > 0
    # the literals' work behind a gate that nearly every id fails. It still
    # makes the stage's generated method larger than HotSpot compiles (8,000
    # bytes of bytecode; -XX:-DontCompileHugeMethods lifts it): the stage runs
    # ~3x slower, so the engine applies this only after a partition met an id
    # written apart (benchmarks/README.md, "Text user ids on Spark")
    number = F.transform(F.array(text), _canonical_number)[0]
    return (
        F.when(text == "-0", F.lit("0"))
        .when(dotted & text.rlike(_FRACTION_OR_EXPONENT), number)
        .otherwise(text)
    )


def respelled(users: Any) -> bool:
    """Whether some text id of ``users`` (an Arrow string column) is not
    written as the text rule reads it: ``"7.0"``, ``"7e0"`` (7), ``"-0"`` (0),
    so that grouping the ids as written could split one user. One regular
    expression over the column (Arrow's); the few literals it finds are read
    by :func:`receval.ids.text_value`.

    >>> import pyarrow as pa
    >>> respelled(pa.array(["7", "u1", "7.5"])), respelled(pa.array(["1", "7.0"]))
    (False, True)
    """
    import pyarrow as pa

    from receval._lazy import pc
    from receval.ids import text_value

    if not (pa.types.is_string(users.type) or pa.types.is_large_string(users.type)):
        return False
    found = pc.or_(pc.match_substring_regex(users, _FRACTION_OR_EXPONENT), pc.equal(users, "-0"))
    if not pc.any(found).as_py():
        return False
    return any(str(text_value(t)) != t for t in users.filter(found).to_pylist())


def _canonical_number(text: Any) -> Any:
    """The canonical text of a number literal with a fraction or an exponent
    (a Spark Column): exact, by its digits (:func:`text_rule`)."""
    from pyspark.sql import functions as F

    def part(i: int) -> Any:
        return F.regexp_extract(text, _PARTS, i)

    sign, whole_digits, fraction = part(1), part(2), part(3)
    exponent = F.when(part(4) == "", F.lit(0)).otherwise(
        F.when(F.length(F.regexp_replace(part(4), "^[+-]?0*", "")) > 5, F.lit(10**6)).otherwise(
            part(4).cast("int")
        )
    )
    digits = F.concat(whole_digits, fraction)  # the value: 0.digits * 10**point
    point = F.length(whole_digits) + exponent
    lead = F.length(digits) - F.length(F.regexp_replace(digits, "^0+", ""))
    kept = F.regexp_replace(F.regexp_replace(digits, "^0+", ""), "0+$", "")  # significant
    point = point - lead  # after the leading zeros went
    zeros = point - F.length(kept)  # >= 0: whole, that many zeros follow
    # its digits when whole (only read within 16 digits: the length capped)
    integer = F.call_function("rpad", kept, F.least(point, F.lit(17)), F.lit("0"))
    fits = (point < 16) | ((point == 16) & (integer <= F.lit(str(2**53))))
    return (
        F.when(kept == "", F.lit("0"))
        .when((zeros >= 0) & fits, F.concat(sign, integer))
        .otherwise(text)
    )


def key_mode(types: list[Any]) -> str:
    """How :func:`user_key` keys the ids that are not whole numbers: by their
    double (``"double"``), by their float when a side's ids are float32
    (``"float"``), or all as one key when float32 and float64 ids meet
    (``"coarse"``: a float32's text read as a double differs from it, and
    rounding a double to a float32 may differ from reading its text as one)."""
    names = {type(t).__name__ for t in types}
    if "FloatType" not in names:
        return "double"
    return "coarse" if "DoubleType" in names else "float"


def user_key(user: Any, data_type: Any, mode: str) -> Any:
    """The key of text user ids on Spark (a Spark Column): two ids the text
    rule reads as one user (``"7"``, ``"7.0"``, ``"7e0"``, the double 7.0; the
    double 0.5 and ``"0.5"``) have one key, so every row of a user is in one
    partition, as the shuffle groups by the key. Ids that are not one user
    may share a key (``"7.00000000000000001"`` and 7, or every id that is not
    whole in ``"coarse"`` mode): they then sit in one partition, whose rows
    are read by the id rule itself. Each value is keyed alone (never by the
    rest of its column), so no partitioning changes a key."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType, StringType

    def whole(d: Any) -> Any:  # the text rule's integers: whole, |x| <= 2**53
        return (F.abs(d) <= float(2**53)) & (d % 1.0 == 0.0)

    def number(d: Any, other: Any) -> Any:  # a whole number as its integer, else other
        return F.when(whole(d), d.cast("bigint").cast("string")).otherwise(other)

    name = type(data_type).__name__
    coarse = F.lit("~")
    if name == "DoubleType":
        return number(user, coarse if mode == "coarse" else user.cast("string"))
    if name == "FloatType":
        return number(user.cast("double"), coarse if mode == "coarse" else user.cast("string"))
    if isinstance(data_type, IntegralType):  # its decimal text, the text rule's integer
        return user.cast("string")
    s = user if isinstance(data_type, StringType) else user.cast("string")
    d = s.cast("double")  # a number literal: every one reads as a double
    other = {"double": d.cast("string"), "float": s.cast("float").cast("string")}
    return (
        F.when(s == "-0", F.lit("0"))
        .when(s.rlike(_FRACTION_OR_EXPONENT), number(d, other.get(mode, coarse)))
        .otherwise(s)
    )


def floats_read(table: Any, floats: Mapping[str, str]) -> Any:
    """One side's rows with the id columns that held floats (role ->
    ``"float64"`` or ``"float32"``, :attr:`SparkRows.floats`)
    read back from the text the JVM wrote (``1.0E16``, ``NaN``: each the
    float it was; the JVM's text of a float reads back as that float), so the
    id rule reads them as in-process: 1e16 is ``"1e+16"``, NaN a missing id.

    >>> import pyarrow as pa
    >>> t = pa.table({"item": ["1.0E16", "0.5", "3.0"]})
    >>> floats_read(t, {"item": "float64"}).column("item").to_pylist()
    [1e+16, 0.5, 3.0]
    """
    from receval._lazy import pc

    for role, width in floats.items():
        at = table.schema.get_field_index(role)
        table = table.set_column(at, role, pc.cast(table.column(role), width))
    return table


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
