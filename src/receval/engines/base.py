"""What an engine is, and how the engine of an evaluation is chosen.

An engine evaluates inputs already opened by :mod:`receval.io` into its
canonical form, in three steps that every engine shares:

1. :meth:`Engine.prepare`: the facts of the whole input that each part needs
   (the largest grade of the truth, one id kind for both sides) and the
   :class:`~receval.engines.driver.Plan` built from them;
2. :meth:`Engine.parts`: each part of the users evaluated — a chunk of a
   table, a pair of chunks of two files, a Spark partition, a batch of a
   training loop — by the one kernel runner,
   :func:`~receval.engines.driver.evaluate_pair`;
3. :meth:`Engine.combine`: the parts added up by one
   :class:`~receval.engines.driver.Combiner` (exact sums, integer counts), the
   same for every engine, so no number depends on the engine or on how the
   users were cut into parts.

Engines register themselves (:func:`register`);
:func:`receval.engines.engine_for` chooses one
by the form of the opened inputs (:meth:`Engine.accepts`), so no caller asks
what kind of table it holds. A new engine is a subclass with ``accepts``,
``prepare`` and ``parts``, registered here (docs/contributing.md, "Add an
engine").

Example:
    >>> from receval.engines import engine_for
    >>> from receval.records import Tables
    >>> engine_for(Tables([], None)).name
    'in_process'
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from receval.engines.driver import Combiner, GroupCombiners, Outcome, Plan, UserCells
from receval.metrics.context import ItemContext
from receval.metrics.spec import MetricSpec

__all__ = ["ENGINES", "Engine", "register"]


class Engine(ABC):
    """One evaluation's engine, made for its opened inputs (:func:`engine_for`).

    Class attributes:
        name: the engine's name, as ``Result.parameters["engine"]`` says it.
        ordered_rows: whether its inputs' rows have an order (``ties="input"``
            needs one; Spark rows have none).
        remote: whether the data stays where it lies (side inputs of the same
            kind, e.g. a Spark ``train=``, are then counted there too).
    """

    name: ClassVar[str]
    ordered_rows: ClassVar[bool] = True
    remote: ClassVar[bool] = False

    def __init__(self, inputs: Any) -> None:
        self.inputs = inputs
        #: notes about the whole input made while preparing (e.g. ids matched as text)
        self.notes: list[str] = []

    @classmethod
    @abstractmethod
    def accepts(cls, inputs: Any) -> bool:
        """Whether this engine evaluates inputs of this form."""

    @abstractmethod
    def prepare(
        self, specs: Sequence[MetricSpec], settings: Mapping[str, Any], items: ItemContext | None
    ) -> Plan:
        """The plan of the evaluation: the metrics, the policies (``settings``:
        ``EvalOptions.engine()``), the item context and the facts of the whole
        input (the largest grade), which this step reads."""

    @abstractmethod
    def parts(self, plan: Plan, cells: UserCells | None = None) -> Iterable[Any]:
        """Each part of the users evaluated: a :class:`~receval.engines.driver.Part`,
        or with ``cells`` the part and its cells' parts
        (:func:`~receval.engines.driver.evaluate_cells`)."""

    def combine(
        self,
        plan: Plan,
        parts: Iterable[Any],
        cells: UserCells | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Outcome:
        """The parts added up, in any order, into one outcome (per group of
        users too, with ``cells``); ``progress`` is called with the
        recommendation rows done after each part. The same for every engine:
        engines do not override it."""
        groups = None if cells is None else GroupCombiners(plan, cells)
        combiner = Combiner(plan) if groups is None else groups.whole
        for done in parts:
            if groups is None:
                combiner.add(done)
            else:
                groups.add(done)
            if progress is not None:
                progress(int(combiner.counts.get("recommendation_rows", 0)))
        return combiner.outcome(self.notes) if groups is None else groups.outcome(self.notes)

    def run(
        self,
        specs: Sequence[MetricSpec],
        settings: Mapping[str, Any],
        items: ItemContext | None = None,
        cells: UserCells | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Outcome:
        """Prepare, evaluate every part, combine (:attr:`plan`: the plan it ran)."""
        self.plan = plan = self.prepare(specs, settings, items)
        return self.combine(plan, self.parts(plan, cells), cells, progress)


#: the registered engines, asked in order by :func:`engine_for`
ENGINES: list[type[Engine]] = []


def register(engine: type[Engine]) -> type[Engine]:
    """Add an engine to :data:`ENGINES` (a class decorator)."""
    if engine not in ENGINES:
        ENGINES.append(engine)
    return engine
