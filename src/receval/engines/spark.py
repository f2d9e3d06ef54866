"""The Spark engine: receval's own kernels on each partition of users.

``receval.evaluate(recs, truth, metrics, ...)`` with ``pyspark.sql.DataFrame``
inputs runs here, on their session. Spark moves the data; receval computes:

1. :mod:`receval.io.spark_files` opens the inputs (:class:`~receval.records.SparkRows`):
   the columns of each role found on the DataFrames' schemas, as for any
   table, the global facts taken first (whether ids are text on either
   side), and the rows of both inputs put in one DataFrame (a side column
   tells them apart). The largest grade of the whole truth is a Spark job of
   its own, run only when a metric of the request is bounded by it
   (:func:`reads_largest_grade`); otherwise each partition reports its own
   with its results;
2. :meth:`Spark.parts`: the rows of each user are grouped into lists in the
   JVM (:func:`grouped`: ``collect_list`` per side and column, the sides
   joined on the user; Spark aggregates partly before its shuffle, which then
   carries about one row per user instead of every row), made rows again in
   the Python worker (:func:`ungrouped`), so that every row of a user is in
   one partition (the rows are repartitioned by user instead when a list
   would leave out a missing value, or the ids are neither integers nor
   text), and each partition runs
   :func:`receval.engines.driver.evaluate_pair` — the very code of the
   in-process engine — through ``mapInArrow``, returning one pickled
   :class:`~receval.engines.driver.Part`: exact sums, counts, item counts of
   the aggregate metrics; no per-user value;
3. the driver adds the parts (:meth:`~receval.engines.base.Engine.combine`):
   exact sums and integer counts, so no number depends on the partitioning.

What reaches the driver is O(partitions × (metrics + items recommended)),
never O(users). No metric formula is written for Spark. Per-user values are
a lazy Spark DataFrame (:meth:`Spark.per_user`).

The core never imports pyspark: this module imports it inside its functions.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from receval._lazy import pc
from receval.engines import driver
from receval.engines.base import Engine, register
from receval.errors import InputError, ReceValError
from receval.ids import canonical
from receval.metrics.context import ItemContext, TrainPairs
from receval.metrics.spec import MetricSpec
from receval.records import KEY, SIDE, Pair, SparkRows, floats_read, respelled, text_rule

__all__ = [
    "LISTS",
    "Dropped",
    "Spark",
    "by_user",
    "fails_on",
    "first_failing",
    "groupable",
    "grouped",
    "part_batch",
    "parts_of",
    "reads_largest_grade",
    "table_of",
    "ungrouped",
    "user_array",
    "user_type",
    "without_rows",
]


@register
class Spark(Engine):
    """Inputs on a Spark session (:class:`~receval.records.SparkRows`)."""

    name = "spark"
    ordered_rows = False  # the rows of a Spark DataFrame have no order
    remote = True  # a Spark train= is counted where it lies

    @classmethod
    def accepts(cls, inputs: Any) -> bool:
        return isinstance(inputs, SparkRows)

    def prepare(
        self, specs: Sequence[MetricSpec], settings: Mapping[str, Any], items: ItemContext | None
    ) -> driver.Plan:
        rows: SparkRows = self.inputs
        self.notes = list(rows.notes)
        train = rows.train and items is not None
        plan = driver.Plan(tuple(specs), rows.max_grade, items=items, spark_train=train, **settings)
        # the largest grade of the whole truth: read first (a Spark job) only
        # when a metric is bounded by it; else the partitions report theirs
        find = getattr(rows, "largest_grade", None)  # receval.io.spark_files.OpenedRows
        #: whether plan.max_grade is the whole truth's largest grade
        self.grade_read = find is None or not plan.graded
        if not self.grade_read and reads_largest_grade(plan.specs):
            plan = dataclasses.replace(plan, max_grade=find())
            self.grade_read = True
        return plan

    #: whether the rows of each user are grouped into lists in the JVM
    #: (:func:`grouped`); False after a partition found a missing value in them
    lists: bool | None = None
    #: whether text user ids are put in the text rule's form in the JVM before
    #: the shuffle (:func:`receval.records.text_rule`): after a partition met
    #: one written apart (``"7.0"`` beside ``"7"``: :func:`receval.records.respelled`),
    #: which grouping them as written may have split. Off otherwise: it costs
    #: the JVM a few expressions a row, for ids nearly always written alike
    spelled: bool = False

    def _grouped(self) -> Any:
        # every row of a user in one partition; Spark chooses how many (its
        # spark.sql.shuffle.partitions, coalesced to a bounded size by adaptive
        # execution), so each partition stays small whatever the data's size.
        # Grouped into lists in the JVM (one row per user, :func:`grouped`) when
        # the inputs allow it; else every row through the shuffle.
        rows: SparkRows = self.inputs
        if self.lists is None:
            self.lists = groupable(rows)
        sides, every = rows.sides, rows.rows  # type: ignore[attr-defined]
        if self.spelled:
            sides, every = [_spelled(df) for df in sides], _spelled(every)
        if self.lists:
            return grouped(sides, rows.key)
        if rows.partitions:
            return every.repartition(rows.partitions, rows.key)
        return every.repartition(rows.key)

    def parts(self, plan: driver.Plan, cells: driver.UserCells | None = None) -> list[Any]:
        """Each partition's part, collected; the error of the smallest user,
        whatever the partitioning, when a partition failed.
        :attr:`partitions`: how many partitions held users."""
        df = self._grouped()
        names = self.inputs.rows.columns if self.lists else None
        check = self.inputs.texts and not self.spelled
        function = _partition_function(plan, self.inputs, cells, names, check)
        partitions = parts_of(df.mapInArrow(function, "part binary"))
        collected = [got for partition in partitions for got in partition]
        if any(kind == "dropped" for kind, _ in collected):
            # a missing value that collect_list left out: every row again, as rows
            self.lists = False
            return self.parts(plan, cells)
        if any(kind == "respelled" for kind, _ in collected):
            # a user written apart from the text rule's form: again, each user
            # in that form (so "7" and "7.0" are one string before the shuffle)
            self.spelled = True
            return self.parts(plan, cells)
        errors = [payload for kind, payload in collected if kind == "error"]
        if errors:
            raise min(errors, key=lambda e: (e[0] is not None, 0 if e[0] is None else e[0]))[1]
        self.partitions = len(partitions)
        if not self.grade_read:  # the largest grade of the whole truth, from the partitions'
            tops = [top for _, (_, top) in collected if top is not None]
            self.plan = dataclasses.replace(plan, max_grade=max(tops) if tops else 1.0)
            self.grade_read = True
        if not collected:  # no row on either side: no user, as in-process (NaN values)
            return [driver.evaluate_pair(plan, _no_rows())]
        return [part for _, (part, _) in collected]

    def per_user(self, plan: driver.Plan, names: list[str]) -> Any:
        """The per-user values as a lazy Spark DataFrame: a user column and
        one column per name (of ``plan.per_user``), one row per user."""
        from pyspark.sql.types import DoubleType, StructField, StructType

        spark_type, arrow_type = user_type(self.inputs.user_type)
        schema = StructType(
            [StructField("user", spark_type)] + [StructField(name, DoubleType()) for name in names]
        )
        df = self._grouped()
        columns = self.inputs.rows.columns if self.lists else None
        function = _per_user_function(plan, self.inputs, names, arrow_type, columns)
        return df.mapInArrow(function, schema)


def reads_largest_grade(specs: Sequence[MetricSpec]) -> bool:
    """Whether a metric of ``specs`` needs the largest grade of the whole truth
    before the evaluation, as the registry declares it: a parameter bounded
    by it (``ParamDef.at_least == "max_grade"``, e.g. ERR's ``max_grade``),
    left unset (the values normalise by the largest grade,
    :attr:`MetricSpec.reads_max_grade`) or set (it is checked against the
    largest grade, :meth:`MetricDef.check_data`). Only then does the Spark
    engine run the job that reads it; the grades are read only under
    ``graded=True``, which the caller checks.

    >>> from receval.metrics.spec import parse_metrics
    >>> reads_largest_grade(parse_metrics(["ndcg@10", "ap"]))
    False
    >>> reads_largest_grade(parse_metrics(["err@10"]))
    True
    """
    return any(p.at_least == "max_grade" for s in specs for p in s.definition.params)


#: the columns of :func:`grouped`: side i's row count is ``f"{LISTS}{i}"``, the
#: list of its column c ``f"{LISTS}{i}_{c}"``
LISTS = "__receval_lists_"


def _spelled(df: Any) -> Any:
    """``df`` with each text user id in the text rule's form (``"7.0"`` is
    ``"7"``: :func:`receval.records.text_rule`)."""
    from pyspark.sql import functions as F

    return df.withColumn("user", text_rule(F.col("user")))


def groupable(rows: SparkRows) -> bool:
    """Whether the engine groups each user's rows into lists in the JVM
    (:func:`grouped`): when the inputs carry their sides apart
    (:attr:`receval.io.spark_files.OpenedRows.sides`), no number of
    partitions is asked for, and the user ids are integers or text (grouping
    keys of other types, e.g. doubles, are normalised by Spark: -0.0 would
    come back 0.0)."""
    from pyspark.sql.types import IntegralType, StringType

    sides = getattr(rows, "sides", ())
    if not sides or rows.partitions:
        return False
    return isinstance(rows.rows.schema["user"].dataType, (IntegralType, StringType))


def grouped(sides: Sequence[Any], key: str = "user") -> Any:
    """The rows of each side (recommendations, truth, a Spark ``train=``'s
    pairs) grouped by user in the JVM and the sides joined on the user: one
    row per user, with per side its row count and one list per column
    (``collect_list``, named as :data:`LISTS` says). Spark aggregates each
    list partly before the shuffle (on the map side, as MLlib's evaluation
    does), so about one row per user crosses it instead of every row, and
    Spark's cost per row falls: at 100k users 0.58x the JVM's CPU of the
    rows repartitioned by user (benchmarks/README.md, issue #33 point 5).
    :func:`ungrouped` makes them rows again in the Python worker.

    The lists of one side are filled together, row by row, in one
    aggregation, so they are aligned; ``collect_list`` leaves out missing
    values, which the row count reveals (the partition then says so and the
    engine falls back to the rows). ``key``: the column the rows of a user
    share (:attr:`receval.records.SparkRows.key`)."""
    from pyspark.sql import functions as F

    out = None
    for i, df in enumerate(sides):
        lists = [
            F.collect_list(F.col(f"`{c}`")).alias(f"{LISTS}{i}_{c}") for c in df.columns if c != key
        ]
        side = df.groupBy(key).agg(F.count(F.lit(1)).alias(f"{LISTS}{i}"), *lists)
        out = side if out is None else out.join(side, key, "full_outer")
    return out


#: List rows (every side's) a worker evaluates at once: an Arrow batch of lists
#: (``spark.sql.execution.arrow.maxRecordsPerBatch`` users, 10,000 by default) is
#: cut into pieces of whole users of at most this many rows (a longer user's
#: rows alone), as the table door's pairs hold at most 500,000 list rows of
#: integer ids: a worker's memory is bounded by this, not by the session's
#: batch size times the users' list lengths. The parts add up as any cut's do.
PIECE_ROWS = 500_000


def pieces(batch: pa.RecordBatch, rows: int = PIECE_ROWS) -> list[pa.RecordBatch]:
    """A batch of :func:`grouped` (one row per user, per side a row count)
    cut into slices of consecutive users holding at most ``rows`` rows in
    all (a user with more alone in its slice).

    >>> b = pa.RecordBatch.from_pydict({"user": [1, 2, 3], f"{LISTS}0": [2, 2, 3]})
    >>> [p.num_rows for p in pieces(b, 4)]
    [2, 1]
    """
    sides = [c for c in batch.schema.names if c[len(LISTS) :].isdigit() and c.startswith(LISTS)]
    n = batch.num_rows
    if not n:
        return []
    per_user = np.zeros(n, dtype=np.int64)
    for name in sides:
        per_user += batch.column(name).fill_null(0).to_numpy(zero_copy_only=False)
    held = np.cumsum(per_user)  # rows of the users up to each, inclusive
    out, start = [], 0
    while start < n:  # a loop over pieces (not users): the users each piece ends at
        before = int(held[start - 1]) if start else 0
        end = max(int(np.searchsorted(held, before + rows, side="right")), start + 1)
        out.append(batch.slice(start, end - start))
        start = end
    return out


class Dropped(Exception):
    """A list of :func:`grouped` is shorter than its side's row count: a
    missing value that ``collect_list`` left out."""


def ungrouped(table: pa.Table, names: Sequence[str], key: str = "user") -> pa.Table:
    """A partition of :func:`grouped` (one row per user) as the rows the
    engine reads otherwise: per side, the user repeated by its row count and
    each list flattened (Arrow's offsets; no per-row Python), with the side
    column, the sides one after the other and the columns ``names`` (those
    of :attr:`SparkRows.rows`; a column a side lacks is null). Integer users
    come in ascending order (:func:`by_user` then finds them sorted), each
    user's rows in the order of its lists. Raises :class:`Dropped` when a
    list is shorter than its row count. ``key``: the column the users were
    grouped by (:attr:`receval.records.SparkRows.key`; text ids' user column
    is then one of the lists)."""
    users = table.column(key)
    if pa.types.is_integer(users.type) and not users.null_count and table.num_rows > 1:
        ids = users.to_numpy()
        if not bool(np.all(ids[1:] >= ids[:-1])):
            table = table.take(np.argsort(ids, kind="stable"))
    table = table.combine_chunks()
    users = table.column(key)
    sides, i = [], 0
    while f"{LISTS}{i}" in table.column_names:
        counts = table.column(f"{LISTS}{i}").fill_null(0).to_numpy()
        repeat = np.repeat(np.arange(table.num_rows), counts)
        columns: dict[str, Any] = {key: users.take(repeat)}
        prefix = f"{LISTS}{i}_"
        for name in table.column_names:
            if not name.startswith(prefix):
                continue
            lists = table.column(name)
            lengths = pc.list_value_length(lists).fill_null(0).to_numpy()
            if not np.array_equal(lengths, counts):
                raise Dropped(name[len(prefix) :])
            columns[name[len(prefix) :]] = pc.list_flatten(lists)
        columns[SIDE] = pa.array(np.full(len(repeat), i, np.int8))
        sides.append(pa.table(columns))
        i += 1
    rows = pa.concat_tables(sides, promote_options="default")
    return rows.select(list(names))


#: the Spark integer types of an id column -> the Arrow type of the same width
_INTEGERS = {"ByteType": pa.int8(), "ShortType": pa.int16(), "IntegerType": pa.int32()}


def user_type(data_type: Any) -> tuple[Any, pa.DataType]:
    """The user column of per-user values computed on Spark, from the type of
    the input's user column: (its Spark type, the Arrow type the partitions
    write it as). Integer ids keep their column's type (a CSV's ``int``, a
    Parquet ``long``: the ids are read as int64 and fit it); any other type
    (text, and ids of other types such as doubles, read by the id rule) is
    text: each user as receval reads it (``"007"``, ``"u1"``; ``1.0`` is
    ``"1"``)."""
    from pyspark.sql.types import StringType

    name = type(data_type).__name__
    if name == "LongType":
        return data_type, pa.int64()
    if name in _INTEGERS:
        return data_type, _INTEGERS[name]
    return StringType(), pa.string()


def user_array(users: Any, arrow_type: pa.DataType) -> pa.Array:
    """A partition's users (int64 or text ids, canonical) as the Arrow column
    of the type :func:`user_type` declared."""
    if pa.types.is_string(arrow_type):
        return pa.array([str(u) for u in users.tolist()], type=arrow_type)
    return pa.array(users.tolist(), type=arrow_type)


def table_of(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """A partition's rows as one table (None when it has none)."""
    got = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(got) if got else None


def by_user(table: pa.Table) -> pa.Table:
    """A partition's rows grouped by user in ascending id order, by a stable
    sort: the rows of one user keep their order, so nothing a user's rows
    decide changes (the first of two duplicates, ties), only where the user
    sits. Spark hands a partition's users in blocks in no order (and a user's
    recommendations and truth apart); the kernels' rows must be in list order
    (user, then rank or score), and they are then found in order instead of
    sorted by (user, rank): at 100k users on ``local[2]`` (5.2M rows a
    partition), sorting here and evaluating take 0.5 s instead of 1.5 s
    (benchmarks/README.md, issue #33 point 5).
    Integer ids only (their numeric order is the kernels' order); text ids
    and a column with missing ids are left as they are."""
    users = table.column("user")
    if table.num_rows < 2 or users.null_count or not pa.types.is_integer(users.type):
        return table
    ids = users.to_numpy()
    if bool(np.all(ids[1:] >= ids[:-1])):
        return table
    return table.take(np.argsort(ids, kind="stable"))


def part_batch(part: Any) -> pa.RecordBatch:
    """What a partition returns to the driver: one pickled object."""
    return pa.RecordBatch.from_pydict({"part": [pickle.dumps(part)]})


def _no_rows() -> Pair:
    """A pair of inputs with no row (what both inputs empty give)."""
    from receval.records import RecsData, TruthData

    none = np.empty(0, dtype=np.int64)
    recs = RecsData(none, none.copy(), np.empty(0), None, rows=0)
    truth = TruthData(none.copy(), none.copy(), np.empty(0), rows=0, graded=False)
    return Pair(recs, truth, int, int, 0)


def parts_of(df: Any) -> list[Any]:
    """The objects the partitions of ``df`` (a ``mapInArrow`` of
    :func:`part_batch`) returned, collected to the driver."""
    return [pickle.loads(row["part"]) for row in df.collect()]


def first_failing(count: int, fails: Callable[[int], bool]) -> int:
    """The smallest ``i < count`` with ``fails(i)``, by bisection, for a
    ``fails`` that stays true from some i on (a prefix that fails); ``fails(count
    - 1)`` must be true."""
    lo, hi = 0, count - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def fails_on(evaluate: Callable[[pa.Table], Any], table: pa.Table) -> bool:
    """Whether ``evaluate(table)`` raises a :class:`ReceValError`."""
    try:
        evaluate(table)
    except ReceValError:
        return True
    return False


def _with_train(plan: driver.Plan, table: pa.Table, floats: Mapping[str, str]) -> driver.Plan:
    """The plan with the training pairs of the partition's users (rows of side
    2), when ``train=`` is a Spark DataFrame (its pairs are not in the plan);
    ``floats``: its id roles that the JVM wrote as text (:func:`floats_read`)."""
    if plan.items is None or plan.items.train_pairs is not None or not plan.spark_train:
        return plan
    rows = floats_read(table.filter(pc.equal(table.column(SIDE), 2)), floats)
    pairs = TrainPairs.of(
        canonical(rows.column("user"), "user", "train"),
        plan.items.index_of(canonical(rows.column("item"), "item", "train")),
        plan.items.unknown + 1,
    )
    return dataclasses.replace(plan, items=dataclasses.replace(plan.items, train_pairs=pairs))


def _partition_function(
    plan: driver.Plan,
    inputs: SparkRows,
    cells: driver.UserCells | None = None,
    names: Sequence[str] | None = None,
    check: bool = False,
) -> Any:
    """What each partition runs: its rows → one pickled (Part, largest grade)
    (or the error it met); with ``cells``, the Part and the Part of each of
    its cells. The largest grade of the partition's truth (None: none, or
    grades not read) is taken before the evaluation, which may make the
    grades 0/1. With ``names``, the partition holds lists (:func:`grouped`),
    made rows of those columns first, and each Arrow batch (whole users) is
    evaluated alone, in pieces of at most :data:`PIECE_ROWS` rows (:func:`pieces`);
    ("dropped", None) when a list left out a missing value; with ``check``,
    ("respelled", None) when a text user id is written apart from the text
    rule's form (:func:`receval.records.respelled`), before any evaluation.
    A partition returns the list of its outcomes. Of ``inputs``, what the
    workers need (not its DataFrames): how rows become a pair, the key users
    are grouped by, the train's floats written as text."""
    most = PIECE_ROWS  # read here, on the driver: the workers get this value
    to_pair, key, train_floats = inputs.to_pair, inputs.key, inputs.floats.get(2, {})

    def evaluate(table: pa.Table) -> Any:
        pair = to_pair(table)
        top = _largest_grade(pair) if plan.graded else None
        with_train = _with_train(plan, table, train_floats)
        if cells is not None:
            return driver.evaluate_cells(with_train, pair, cells, False), top
        return driver.evaluate_pair(with_train, pair, keep_values=False), top

    def outcome(table: pa.Table) -> tuple[str, Any]:
        table = by_user(table)
        try:
            return "part", evaluate(table)
        except ReceValError:
            return "error", _smallest_error(table, evaluate)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if names is None:
            table = table_of(batches)
            if table is not None and check and respelled(table.column("user")):
                yield part_batch([("respelled", None)])
            elif table is not None:
                yield part_batch([outcome(table)])
            return
        # lists: every user whole in one batch, so each batch is evaluated
        # alone (the parts add up as any partitioning's do) and the worker
        # holds one batch's rows at a time
        out: list[tuple[str, Any]] = []
        for batch in batches:
            if check and respelled(batch.column(key)):  # one row a user
                yield part_batch([("respelled", None)])
                return
            for piece in pieces(batch, most):
                try:
                    table = ungrouped(pa.Table.from_batches([piece]), names, key)
                except Dropped:
                    yield part_batch([("dropped", None)])
                    return
                out.append(outcome(table))
        if out:
            yield part_batch(out)

    return run


def _largest_grade(pair: Pair) -> float | None:
    """The largest grade of a partition's truth as read (checked, finite);
    None when it has no row or no grade column."""
    _, truth = pair.loaded()
    if not truth.graded or not len(truth.grades):
        return None
    return float(truth.grades.max())


def _per_user_function(
    plan: driver.Plan,
    inputs: SparkRows,
    names: list[str],
    arrow_type: pa.DataType,
    rows_as: Sequence[str] | None = None,
) -> Any:
    """What each partition runs for the per-user values: one row per user.
    With ``rows_as`` (column names), the partition holds lists (:func:`grouped`), made rows
    of those columns first. ``inputs`` as for :func:`_partition_function`."""
    most = PIECE_ROWS  # read here, on the driver: the workers get this value
    to_pair, key, train_floats = inputs.to_pair, inputs.key, inputs.floats.get(2, {})

    def values(table: pa.Table) -> pa.RecordBatch:
        table = by_user(table)
        with_train = _with_train(plan, table, train_floats)
        part = driver.evaluate_pair(with_train, to_pair(table), keep_values=True)
        assert part.values is not None
        users, values, _ = part.values
        columns: dict[str, Any] = {"user": user_array(users, arrow_type)}
        for j, name in enumerate(names):
            columns[name] = pa.array(values[j], type=pa.float64())
        return pa.RecordBatch.from_pydict(columns)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if rows_as is None:
            table = table_of(batches)
            if table is not None:
                yield values(table)
            return
        for batch in batches:  # lists: every user whole in one batch, cut in pieces
            for piece in pieces(batch, most):
                yield values(ungrouped(pa.Table.from_batches([piece]), rows_as, key))

    return run


def _smallest_error(table: pa.Table, evaluate: Any) -> tuple[Any, ReceValError]:
    """The error of the smallest offending user of a partition that failed,
    with that user's rows alone, ordered by their content, so that neither the
    partitioning nor the order of the rows changes the message. Every check
    is about one user's rows (ids, ranks, scores, grades, duplicates, the
    policies), so a set of users fails when one of them does: the smallest is
    found by bisection over the sorted users (over their keys, when text
    ids are grouped by one: :func:`receval.records.user_key`). Rows with no
    user id come first. Rows have no number on Spark: the error names the user and item.
    """
    # by the key text ids are grouped by: every row of a user has one ("7" and "7.0")
    users = table.column(KEY if KEY in table.column_names else "user")
    if users.null_count:
        rows = table.filter(pc.is_null(users))
        key = None
    else:
        distinct = pc.unique(users)
        ordered = pc.take(distinct, pc.array_sort_indices(distinct))
        lo = first_failing(
            len(ordered),
            lambda i: fails_on(evaluate, table.filter(pc.less_equal(users, ordered[i]))),
        )
        key = ordered[lo].as_py()
        rows = table.filter(pc.equal(users, ordered[lo]))
    rows = rows.sort_by([(name, "ascending") for name in rows.column_names])
    try:
        evaluate(rows)
    except ReceValError as exc:
        return key, without_rows(exc)
    raise AssertionError("a partition failed but none of its users does")  # pragma: no cover


def without_rows(exc: ReceValError) -> ReceValError:
    """The error without the partition's row numbers (they mean nothing on Spark)."""
    if isinstance(exc, InputError) and (exc.row is not None or exc.other_row is not None):
        return InputError(
            exc.reason, source=exc.source, user=exc.user, item=exc.item, column=exc.column
        )
    return exc
