"""Every policy of an evaluation in one frozen, validated object.

:class:`EvalOptions` is what :func:`receval.evaluate`, ``evaluate_explicit``,
``evaluate_ratings``, ``compare``, ``report``, ``curve``, the command line and
the demo build or take; their keyword arguments are sugar for it. A
convention is a preset: the options a convention sets are its values unless
given explicitly. ``Result.parameters`` records :meth:`EvalOptions.to_dict`,
and :meth:`EvalOptions.from_dict` of it replays the evaluation exactly.

Example:
    >>> from receval import EvalOptions
    >>> o = EvalOptions(convention="trec_eval", threshold=2)
    >>> o.ties, o.empty_truth, o.threshold
    ('item_str_desc', 'zero', 2.0)
    >>> EvalOptions.from_dict(o.to_dict()) == o
    True
    >>> EvalOptions(empty_truth="zeros")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    receval.errors.OptionError: empty_truth='zeros' is not allowed: expected one of 'skip', ...
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from receval.engines.numpy_engine import RANKS, TIES
from receval.errors import OptionError, ReceValError
from receval.evaluation import conventions
from receval.records import Columns

__all__ = ["CHOICES", "INPUTS", "TIES", "EvalOptions", "split_kwargs"]

#: The values each choice option takes.
CHOICES: Mapping[str, tuple[str, ...]] = {
    "empty_truth": ("skip", "zero", "error"),
    "missing_recs": ("zero", "skip", "error"),
    "no_truth": ("skip", "zero", "error"),
    "ties": tuple(TIES),
    "relevant_from": ("truth", "list"),
    "duplicates": ("error", "keep"),
    "rank": tuple(RANKS),
    "unjudged": ("keep", "condense"),
    "negative_grades": ("error", "unjudged"),
}

# receval's own value of every option a convention may set
_DEFAULTS: Mapping[str, Any] = {
    "threshold": 1.0,
    "empty_truth": "skip",
    "missing_recs": "zero",
    "no_truth": None,  # as empty_truth
    "ties": "item",
    "relevant_from": "truth",
    "duplicates": "error",
    "graded": True,
    "rank": "order",
    "unjudged": "keep",
    "negative_grades": "error",
}

#: The keyword arguments of ``evaluate`` that are inputs, not options.
INPUTS = ("train", "catalog", "item_features", "popular", "item_groups", "progress")

_COLUMNS = (
    "user_col",
    "item_col",
    "score_col",
    "rank_col",
    "relevance_col",
    "actual_col",
    "predicted_col",
)


@dataclass(frozen=True)
class EvalOptions:
    """The policies of one evaluation (SPEC §1–2, §9), validated on construction.

    Every field left as None takes the convention's value, else receval's
    default; the object holds the resolved values (``EvalOptions().ties ==
    "item"``). Errors name the option, the value and the values allowed
    (:class:`~receval.errors.OptionError`).

    Attributes:
        convention: the tool whose numbers to reproduce (``receval``,
            ``trec_eval``, ``ranx``, ... see :mod:`receval.evaluation.conventions`);
            it also sets the defaults of metric parameters (:attr:`metric_defaults`).
        threshold: an item is relevant when its grade is ≥ threshold and > 0.
        empty_truth: users in the truth without a relevant item: ``skip``
            (NaN, left out of the means, counted), ``zero`` or ``error``.
        missing_recs: users with relevant items but no list: ``zero`` (an
            empty list), ``skip`` or ``error``.
        no_truth: users with a list who are not in the truth: as
            ``empty_truth`` unless given.
        ties: the order of equal scores (:data:`TIES`).
        relevant_from: ``truth`` (R and the ideal from the user's relevant
            items) or ``list`` (only the relevant items the list holds).
        duplicates: ``error``, or ``keep`` the first occurrence in a list / the
            largest grade of a truth pair (and count what was dropped).
        graded: False when grades are not read (every truth row is relevant).
        rank: what a ``rank`` column means: ``order`` (lists are ordered by
            it; gaps close up) or ``position`` (rank r is position r; a gap is
            an empty slot that holds nothing relevant).
        depth: read only the first ``depth`` items of each list (trec_eval's
            ``-M``); the rows past it are counted
            (``recommendation_rows_beyond_depth``). None: whole lists.
        unjudged: items of a list that are not in the user's truth (never
            judged): ``keep`` them (non-relevant, as every metric assumes) or
            ``condense`` the list, dropping them and closing up the positions
            (Sakai 2007; trec_eval's ``-J``), counted
            (``recommendation_rows_unjudged_dropped``).
        negative_grades: a negative grade in the truth is an ``error`` (SPEC
            §2.3) or marks an item that was pooled but ``unjudged`` (trec_eval's
            meaning of a negative qrels label: neither relevant nor judged;
            only infAP tells it from an item outside the pool).
        catalog_size: how many items a full ranking would rank, when the
            lists rank a sample of candidates (sampled evaluation, see
            docs/sampled.md); the metrics' ``correction=`` estimates their
            full-catalog value from it. None: the lists are full rankings.
        user_col, item_col, score_col, rank_col, relevance_col: column names
            of the inputs (None: detected, see README "Inputs").
        actual_col, predicted_col: the rating columns of rating inputs.
    """

    convention: str | None = None
    threshold: float | None = None
    empty_truth: str | None = None
    missing_recs: str | None = None
    no_truth: str | None = None
    ties: str | None = None
    relevant_from: str | None = None
    duplicates: str | None = None
    graded: bool | None = None
    rank: str | None = None
    depth: int | None = None
    unjudged: str | None = None
    negative_grades: str | None = None
    catalog_size: int | None = None
    user_col: str | None = None
    item_col: str | None = None
    score_col: str | None = None
    rank_col: str | None = None
    relevance_col: str | None = None
    actual_col: str | None = None
    predicted_col: str | None = None
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        given = {f.name for f in fields(self) if f.name != "given"}
        given = {n for n in given if getattr(self, n) is not None} | set(self.given)
        object.__setattr__(self, "given", frozenset(given))
        try:
            conv = conventions.get(self.convention or "receval")
        except ReceValError:
            raise OptionError(
                "convention",
                self.convention,
                allowed=tuple(sorted(conventions.CONVENTIONS)),
            ) from None
        object.__setattr__(self, "convention", conv.name)
        for name, default in _DEFAULTS.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(conv, name, default))
        if self.no_truth is None:
            object.__setattr__(self, "no_truth", self.empty_truth)
        self._validate()

    def _validate(self) -> None:
        value = self.threshold
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise OptionError("threshold", value, expected="a finite number") from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise OptionError("threshold", value, expected="a finite number")
        object.__setattr__(self, "threshold", number)
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise OptionError(name, getattr(self, name), allowed=allowed)
        if not isinstance(self.graded, bool):
            raise OptionError("graded", self.graded, allowed=(True, False))
        for name in ("depth", "catalog_size"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise OptionError(name, value, expected="a positive integer (or None)")
            object.__setattr__(self, name, int(value))
        for name in _COLUMNS:
            col = getattr(self, name)
            if col is not None and (not isinstance(col, str) or not col):
                raise OptionError(name, col, expected="a column name (a non-empty string)")

    # -- building -----------------------------------------------------------

    @classmethod
    def build(cls, options: EvalOptions | None = None, **changes: Any) -> EvalOptions:
        """``options`` with the keyword arguments given (not None) applied on
        top: how entry points turn their keyword sugar into one object."""
        changes = {k: v for k, v in changes.items() if v is not None}
        if options is None:
            return cls(**changes)
        if not isinstance(options, EvalOptions):
            raise OptionError(
                "options", type(options).__name__, expected="an EvalOptions (or None)"
            )
        return options.replace(**changes) if changes else options

    def replace(self, **changes: Any) -> EvalOptions:
        """A copy with some options changed. Options this object took from its
        convention follow a new ``convention=``; options given explicitly stay."""
        unknown = sorted(set(changes) - self._names())
        if unknown:
            raise OptionError(
                unknown[0],
                changes[unknown[0]],
                allowed=tuple(sorted(self._names())),
                reason="no such option",
            )
        kept = {n: getattr(self, n) for n in self.given if n not in changes}
        return EvalOptions(**kept, **changes)

    @classmethod
    def _names(cls) -> set[str]:
        return {f.name for f in fields(cls) if f.name != "given"}

    def to_dict(self) -> dict[str, Any]:
        """Every option, resolved: JSON-ready and enough to replay (:meth:`from_dict`)."""
        return {n: getattr(self, n) for n in sorted(self._names(), key=_ORDER.index)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalOptions:
        """The options recorded in ``data`` (e.g. ``Result.parameters``; keys
        that are not options are ignored), every one of them as given."""
        return cls(**{n: data[n] for n in cls._names() if n in data and data[n] is not None})

    # -- views --------------------------------------------------------------

    @property
    def metric_defaults(self) -> Mapping[str, Mapping[str, Any]]:
        """Metric name → parameter → value: the defaults of metric strings under
        the convention."""
        return conventions.get(self.convention).params

    def columns(self) -> Columns:
        """The column names of the inputs (None: detected, README "Columns")."""
        return Columns(
            user=self.user_col,
            item=self.item_col,
            score=self.score_col,
            rank=self.rank_col,
            relevance=self.relevance_col,
            actual=self.actual_col,
            predicted=self.predicted_col,
        )

    def engine(self) -> dict[str, Any]:
        """The policies an engine applies (plain data: it pickles, so engines
        on other machines can take it)."""
        return {
            "threshold": self.threshold,
            "empty_truth": self.empty_truth,
            "missing_recs": self.missing_recs,
            "no_truth": self.no_truth,
            "ties": self.ties,
            "relevant_from": self.relevant_from,
            "duplicates": self.duplicates,
            "rank": self.rank,
            "depth": self.depth,
            "unjudged": self.unjudged,
            "negative_grades": self.negative_grades,
            "catalog_size": self.catalog_size,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.to_dict(), tuple(sorted(self.given))))


_ORDER = [f.name for f in dataclasses.fields(EvalOptions) if f.name != "given"]


def _rebuild(data: dict[str, Any], given: tuple[str, ...]) -> EvalOptions:
    return EvalOptions(**{k: data[k] for k in given}, given=frozenset())


def split_kwargs(
    options: EvalOptions | None, kwargs: Mapping[str, Any], *, caller: str = "evaluate"
) -> tuple[EvalOptions, dict[str, Any]]:
    """The options and the inputs among the keyword arguments that functions
    built on :func:`receval.evaluate` pass on (``compare``, ``report``,
    ``curve``): one :class:`EvalOptions` (``options`` with the option keywords
    on top) and the item-side inputs (``train=``, ``catalog=``, ...)."""
    names = EvalOptions._names()
    unknown = sorted(set(kwargs) - names - set(INPUTS))
    if unknown:
        raise OptionError(
            unknown[0],
            kwargs[unknown[0]],
            allowed=tuple(sorted(names | set(INPUTS))),
            reason=f"{caller}() has no such keyword",
        )
    opts = EvalOptions.build(options, **{k: v for k, v in kwargs.items() if k in names})
    return opts, {k: v for k, v in kwargs.items() if k in INPUTS}
