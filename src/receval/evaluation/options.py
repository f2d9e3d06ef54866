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
    ('item_str_desc', 'keep', 2.0)
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
from receval.errors import OptionError, ReceValError, said
from receval.evaluation import conventions
from receval.metrics.spec import suggest
from receval.records import Columns

__all__ = [
    "CHOICES",
    "INPUTS",
    "OPTIONS",
    "TIES",
    "EvalOptions",
    "Option",
    "markdown_options",
    "split_kwargs",
]


@dataclass(frozen=True)
class Option:
    """One option of an evaluation, declared once: the field of
    :class:`EvalOptions`, its keyword in Python, its flag on the command line,
    its validation and its lines of help and documentation.

    Attributes:
        name: the field and keyword (``empty_truth``).
        kind: ``choice`` (one of ``choices``), ``number`` (a finite float),
            ``count`` (a positive integer or None), ``flag`` (True/False),
            ``column`` (a column name) or ``convention`` (a convention's name).
        default: receval's own value (a convention may set another); None
            where unset means something (``depth``: whole lists).
        help: the command line's one-line help.
        doc: the documentation's line (docs/options.md).
        choices: the values a ``choice`` takes.
        metavar: what the flag's value is called in ``--help``.
        preset: whether a convention sets it (see :mod:`receval.evaluation.conventions`).
        ratings: read by the rating inputs only (``evaluate_explicit``,
            ``evaluate_ratings``, ``evaluate-ratings``).
    """

    name: str
    kind: str
    default: Any
    help: str
    doc: str
    choices: tuple[str, ...] = ()
    metavar: str = ""
    preset: bool = False
    ratings: bool = False

    @property
    def flag(self) -> str:
        """The command-line flag (``--empty-truth``; ``--graded/--no-graded``)."""
        flag = "--" + self.name.replace("_", "-")
        return f"{flag}/--no-{flag[2:]}" if self.kind == "flag" else flag


def _col(name: str, what: str, ratings: bool = False) -> Option:
    return Option(
        name,
        "column",
        None,
        what,
        f'The {what}; None: detected by its usual spellings (docs/inputs.md, "Columns").',
        metavar="NAME",
        ratings=ratings,
    )


#: Every option, declared once: EvalOptions validates by it, the command line's
#: flags are made from it, docs/options.md is generated from it.
OPTIONS: tuple[Option, ...] = (
    Option(
        "convention",
        "convention",
        "receval",
        "reproduce a tool's numbers; sets the default of every policy below",
        "The tool whose numbers to reproduce; it sets every option of this table that a "
        "convention sets, and the metrics' parameters; an option given explicitly wins "
        "(docs/conventions.md).",
        metavar="NAME",
    ),
    Option(
        "threshold",
        "number",
        1.0,
        "an item is relevant when its grade is ≥ GRADE and > 0",
        "An item is relevant when its grade is >= threshold and > 0. Under graded=False, "
        "given explicitly, it selects the relevant rows (each with gain 1).",
        metavar="GRADE",
        preset=True,
    ),
    Option(
        "empty_truth",
        "choice",
        "skip",
        "users in the truth without a relevant item",
        "Users in the truth without a relevant item: skip (NaN, counted), zero, keep (each "
        "metric's own value: trec_eval's reading) or error.",
        ("skip", "zero", "keep", "error"),
        preset=True,
    ),
    Option(
        "missing_recs",
        "choice",
        "zero",
        "users with relevant items but no list",
        "Users with relevant items but no list: zero (an empty list), skip or error.",
        ("zero", "skip", "error"),
        preset=True,
    ),
    Option(
        "no_truth",
        "choice",
        None,
        "users with a list who are not in the truth (default: as --empty-truth)",
        "Users with a list who are not in the truth at all; None: as empty_truth.",
        ("skip", "zero", "keep", "error"),
        preset=True,
    ),
    Option(
        "ties",
        "choice",
        "item",
        "the order of equal scores",
        "The order of equal scores: item (numbers numerically, then text by code point), "
        "item_desc, item_str / item_str_desc (ids as strings) or input (the rows' order).",
        tuple(TIES),
        preset=True,
    ),
    Option(
        "relevant_from",
        "choice",
        "truth",
        "R and the ideal from the user's relevant items, or the list's only",
        "R and the ideal ranking from the user's relevant items (truth) or from the "
        "relevant items the list holds (list).",
        ("truth", "list"),
        preset=True,
    ),
    Option(
        "duplicates",
        "choice",
        "error",
        "an item twice in a list, a (user, item) pair twice in the truth",
        "An item twice in a list or a pair twice in the truth: error, keep the first "
        "occurrence / the largest grade (counted), or count every row: two positions (each "
        "a hit when relevant) / two relevant items, counted (LensKit's reading); "
        "count_distinct: as count, but precision and recall count distinct items (RePlay); "
        "join: every (list row, truth row) pair of an item is a hit, R the truth rows "
        "(Microsoft Recommenders); left_join: the same, R the rows of the truth left-joined "
        "with the list (RecTools). Under join and left_join values can exceed 1.",
        ("error", "keep", "count", "count_distinct", "join", "left_join"),
        preset=True,
    ),
    Option(
        "graded",
        "flag",
        True,
        "--no-graded: binary relevance, every truth row relevant (those graded ≥ "
        "--threshold when it is given), each with gain 1",
        "Grades are gains (True), or relevance is binary (False: every truth row relevant "
        "with gain 1, or the rows graded >= an explicit threshold).",
        preset=True,
    ),
    Option(
        "rank",
        "choice",
        "order",
        "what a rank column means: an order (gaps close up) or positions",
        "What a rank column means: order (gaps close up) or position (a gap is an empty position).",
        tuple(RANKS),
        preset=True,
    ),
    Option(
        "depth",
        "count",
        None,
        "read only the first M items of each list (trec_eval's -M)",
        "Read only the first depth items of each list (trec_eval's -M); None: whole lists.",
        metavar="M",
    ),
    Option(
        "unjudged",
        "choice",
        "keep",
        "items not in the user's truth: keep them, or condense the lists (-J)",
        "Items of a list not in the user's truth: keep, or condense the lists (Sakai 2007; "
        "trec_eval's -J), counted.",
        ("keep", "condense"),
        preset=True,
    ),
    Option(
        "negative_grades",
        "choice",
        "error",
        "a negative grade: an error, a pooled but unjudged item (trec_eval), relevant "
        "(tools that read no grades) or judged non-relevant (ranx)",
        "A negative grade: an error, a pooled but unjudged item (unjudged: trec_eval), a "
        "relevant item (relevant: the tools that read no grades, every truth row relevant; "
        "its grade becomes max(threshold, 1)) or a judged non-relevant one (nonrelevant: "
        "ranx; its grade becomes 0); the rows read so are counted.",
        ("error", "unjudged", "relevant", "nonrelevant"),
        preset=True,
    ),
    Option(
        "catalog_size",
        "count",
        None,
        "the lists rank sampled candidates; N items a full ranking would rank",
        "How many items a full ranking would rank, when the lists rank sampled "
        "candidates (the metrics' correction=, docs/sampled.md).",
        metavar="N",
    ),
    _col("user_col", "user column"),
    _col("item_col", "item column"),
    _col("score_col", "score column (higher = better)"),
    _col("rank_col", "rank column (1 = best)"),
    _col("relevance_col", "grade column of the truth (relevance, rating, ...)"),
    _col("actual_col", "actual rating column of rating inputs", ratings=True),
    _col("predicted_col", "predicted rating column of rating inputs", ratings=True),
    _col("truth_user_col", "user column of the truth, where it differs from the recommendations'"),
    _col("truth_item_col", "item column of the truth, where it differs from the recommendations'"),
)

#: name -> its declaration
OPTION: Mapping[str, Option] = {o.name: o for o in OPTIONS}

#: The values each choice option takes.
CHOICES: Mapping[str, tuple[str, ...]] = {o.name: o.choices for o in OPTIONS if o.kind == "choice"}

# receval's own value of every option a convention may set
_DEFAULTS: Mapping[str, Any] = {o.name: o.default for o in OPTIONS if o.preset}

#: The keyword arguments of ``evaluate`` that are inputs, not options.
INPUTS = ("train", "catalog", "item_features", "popular", "item_groups", "progress")

_COLUMNS = tuple(o.name for o in OPTIONS if o.kind == "column")


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
            (NaN, left out of the means, counted), ``zero``, ``keep`` (each
            metric's own value: trec_eval) or ``error``.
        missing_recs: users with relevant items but no list: ``zero`` (an
            empty list), ``skip`` or ``error``.
        no_truth: users with a list who are not in the truth: as
            ``empty_truth`` unless given.
        ties: the order of equal scores (:data:`TIES`).
        relevant_from: ``truth`` (R and the ideal from the user's relevant
            items) or ``list`` (only the relevant items the list holds).
        duplicates: ``error``, or ``keep`` the first occurrence in a list / the
            largest grade of a truth pair (and count what was dropped), or
            ``count``: every row counts: an item twice in a list is two
            positions, each a hit when the item is relevant; a truth pair
            twice is two relevant items (R and the ideal count truth rows; a
            listed item reads the pair's largest grade); counted in
            ``recommendation_rows_duplicate_counted`` /
            ``truth_rows_duplicate_counted``. ``count_distinct``: as
            ``count``, but precision and recall (and F1) count distinct items:
            a relevant item twice in the top k is one hit, and recall divides
            by the user's distinct relevant items (RePlay). ``join``: every
            (list row, truth row) pair of the same item is a hit (hits@k is
            the pairs in the top k; R the relevant truth rows; AP adds a term
            per pair; nDCG's gains and ideal are its rows joined once more
            with the list and the truth: Microsoft Recommenders);
            ``left_join``: every pair a hit too, R the rows of the truth
            left-joined with the whole list (a truth row once per list row
            of its item, at least once; AP adds (pairs up to i) / i once per
            position: RecTools). Under ``join`` and ``left_join`` precision,
            recall, AP and nDCG can exceed 1; repeated rows are counted in
            ``recommendation_rows_duplicate_joined`` /
            ``truth_rows_duplicate_joined``.
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
            only infAP tells it from an item outside the pool), a ``relevant``
            item (the tools that read no grades, where every truth row is
            relevant: its grade becomes max(threshold, 1), its gain under
            ``graded=False`` with a graded gain the grade itself; counted in
            ``truth_rows_negative_relevant``) or a judged ``nonrelevant`` one
            (grade 0: ranx; counted in ``truth_rows_negative_nonrelevant``).
        catalog_size: how many items a full ranking would rank, when the
            lists rank a sample of candidates (sampled evaluation, see
            docs/sampled.md); the metrics' ``correction=`` estimates their
            full-catalog value from it. None: the lists are full rankings.
        user_col, item_col, score_col, rank_col, relevance_col: column names
            of the inputs (None: detected, see docs/inputs.md).
        actual_col, predicted_col: the rating columns of rating inputs.
        truth_user_col, truth_item_col: the truth's user and item columns
            when they are named differently from the recommendations'
            (``user_col``/``item_col`` name both otherwise).
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
    truth_user_col: str | None = None
    truth_item_col: str | None = None
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
        """Each option checked by its kind in :data:`OPTIONS`."""
        for o in OPTIONS:
            if o.kind != "convention":
                object.__setattr__(self, o.name, _checked(o, getattr(self, o.name)))

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
        """Every option, resolved, and ``given``: the names of those given
        explicitly (the others are the convention's). JSON-ready and enough
        to replay (:meth:`from_dict`)."""
        out: dict[str, Any] = {n: getattr(self, n) for n in sorted(self._names(), key=_ORDER.index)}
        out["given"] = sorted(self.given)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalOptions:
        """The options recorded in ``data`` (e.g. ``Result.parameters``; keys
        that are not options are ignored): those its ``given`` names as given,
        the others the convention's, as recorded; without ``given`` (a record
        of 0.2.0), every option recorded as given. Under ``graded=False`` the
        difference is the numbers: a threshold given selects the relevant
        rows (:attr:`grade_cut`), the convention's does not."""
        names = cls._names()
        if isinstance(data.get("given"), (list, tuple)):
            return _rebuild(dict(data), tuple(n for n in data["given"] if n in names))
        return cls(**{n: data[n] for n in names if n in data and data[n] is not None})

    # -- views --------------------------------------------------------------

    @property
    def metric_defaults(self) -> Mapping[str, Mapping[str, Any]]:
        """Metric name → parameter → value: the defaults of metric strings under
        the convention."""
        return conventions.get(self.convention).params

    def columns(self) -> Columns:
        """The column names of the inputs (None: detected, docs/inputs.md, "Columns")."""
        return Columns(
            user=self.user_col,
            item=self.item_col,
            score=self.score_col,
            rank=self.rank_col,
            relevance=self.relevance_col,
            actual=self.actual_col,
            predicted=self.predicted_col,
            truth_user=self.truth_user_col,
            truth_item=self.truth_item_col,
        )

    @property
    def _no_truth_follows(self) -> bool:
        """Whether ``no_truth`` is ``empty_truth``'s, given by neither the
        caller nor the convention."""
        return "no_truth" not in self.given and conventions.get(self.convention).no_truth is None

    @property
    def grade_cut(self) -> float | None:
        """Under ``graded=False``, the threshold given explicitly (the rows
        graded >= it are relevant, with gain 1), or None (every truth row is
        relevant). The rule of "an explicit option wins over a convention":
        ``convention="rectools", threshold=4`` reads 4- and 5-star rows as
        relevant, each with gain 1, as RecTools given those rows would."""
        if self.graded or "threshold" not in self.given:
            return None
        return self.threshold

    @property
    def graded_gains(self) -> bool:
        """Whether a metric asked for a gain of ``linear`` or ``exp`` reads the
        grades as its gains while relevance stays binary: under a convention
        that reads no grades (``graded=False``: ``lenskit``, ``rectools``, ...),
        as LensKit's ``NDCG(gain='rating')`` does. ``graded=False`` given under
        a graded convention keeps every gain 1."""
        return not self.graded and not conventions.get(self.convention).graded

    def engine(self) -> dict[str, Any]:
        """The policies an engine applies (plain data: it pickles, so engines
        on other machines can take it). Under ``graded=False`` the grades
        become 0/1 (:attr:`grade_cut`) and the engine's threshold is 1."""
        return {
            "threshold": self.threshold if self.graded else 1.0,
            "graded": self.graded,
            "grade_cut": self.grade_cut,
            "graded_gains": self.graded_gains,
            "empty_truth": self.empty_truth,
            "missing_recs": self.missing_recs,
            # None: neither given nor the convention's, it follows empty_truth (the
            # value the engine applies; an error then names empty_truth)
            "no_truth": None if self._no_truth_follows else self.no_truth,
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


def _checked(o: Option, value: Any) -> Any:
    """``value`` of option ``o``, validated (and normalised) by its kind."""
    if o.kind == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OptionError(o.name, value, expected="a finite number") from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise OptionError(o.name, value, expected="a finite number")
        return number
    if o.kind == "choice" and value not in o.choices:
        if value is None and o.default is None:
            return value
        raise OptionError(o.name, value, allowed=o.choices)
    if o.kind == "flag" and not isinstance(value, bool):
        raise OptionError(o.name, value, allowed=(True, False))
    if o.kind == "count" and value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise OptionError(o.name, value, expected="a positive integer" + said(" (or None)", ""))
        return int(value)
    if o.kind == "column" and value is not None and (not isinstance(value, str) or not value):
        raise OptionError(o.name, value, expected="a column name (a non-empty string)")
    return value


def markdown_options() -> str:
    """The option table of docs/options.md, made from :data:`OPTIONS`."""
    lines = [
        "| option (Python) | flag (command line) | values | receval's default | "
        "set by a convention | what it means |",
        "|---|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        values = {
            "choice": " \\| ".join(f"`{c}`" for c in o.choices),
            "number": "a number",
            "count": "a positive integer",
            "flag": "`True` \\| `False`",
            "column": "a column name",
            "convention": "a convention's name",
        }[o.kind]
        default = "—" if o.default is None else f"`{o.default}`"
        preset = "yes" if o.preset or o.kind == "convention" else ""
        where = " (rating inputs)" if o.ratings else ""
        lines.append(
            f"| `{o.name}` | `{o.flag}` | {values} | {default} | {preset} | {o.doc}{where} |"
        )
    return "\n".join(lines) + "\n"


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
        close = suggest(unknown[0], names | set(INPUTS))
        raise OptionError(
            unknown[0],
            kwargs[unknown[0]],
            allowed=() if close else tuple(sorted(names | set(INPUTS))),
            expected=f"a keyword of {caller}(){close}" if close else None,
            reason=None if close else f"{caller}() has no such keyword",
        )
    opts = EvalOptions.build(options, **{k: v for k, v in kwargs.items() if k in names})
    return opts, {k: v for k, v in kwargs.items() if k in INPUTS}
