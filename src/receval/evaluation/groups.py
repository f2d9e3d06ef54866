"""User groups: the evaluation of each group of users, as if evaluated alone.

``receval.evaluate(..., user_groups=G)`` adds ``Result.groups``: one row per
(grouping, group) with the value of every metric over that group's users and
the number of users evaluated, each row equal, bit for bit, to evaluating that
group's rows of the inputs alone (its own truth, its own largest grade, the same
``train``/``catalog``, the ids read as for the whole input). ``G`` is

- a table (pandas, polars, pyarrow, or a file) with a user column, found like
  the other inputs' (``user_col`` names it), and one or more other columns,
  each a *grouping* (e.g. ``region``, ``segment``): a user belongs to one
  group of each grouping, or to none (a user absent from the table, or with a
  null value: counted in ``counts["user_groups"]``);
- a mapping ``user -> group`` (one grouping named ``group``);
- ``"activity"``: users by the number of distinct items they have in
  ``train`` (:data:`ACTIVITY_EDGES`: ``0``, ``1-4``, ``5-19``, ``20-99``,
  ``100+``; ``0`` is the cold start);
- ``"cold_start"``: ``cold`` (no training item) and ``warm``.

Groups of a table are sorted by value; the built-in ones in their own order.
A group whose users have recommendations but no truth (or the reverse)
cannot be evaluated alone: its row holds NaN and 0 users, with a note. A
group of a table none of whose ids is a user of the evaluation has 0 users,
with a note (and ``counts["user_groups"][name]["user_ids_not_evaluated"]``);
a table none of whose ids is, is an :class:`~receval.errors.InputError`.
:func:`item_group_notes` says why item groups sharing no item with the
evaluation give NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from receval.engines.driver import UserCells
from receval.errors import InputError, NoSharedUser, ReceValError, option
from receval.ids import canonical, distinct, distinct_sorted
from receval.io.inputs import is_path, opened
from receval.metrics.context import positions
from receval.records import Columns, RecsData, TruthData, subset

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ACTIVITY_EDGES",
    "BUILT_IN",
    "Grouping",
    "cells_of",
    "group_rows",
    "group_table",
    "groupings_of",
    "item_group_notes",
]

#: Lower edges of the ``activity`` buckets (distinct training items per user).
ACTIVITY_EDGES: tuple[int, ...] = (0, 1, 5, 20, 100)

#: The groupings computed from ``train``.
BUILT_IN = ("activity", "cold_start")


@dataclass(frozen=True)
class Grouping:
    """One grouping: its name, and for each of its groups (in order) the sorted
    distinct ids of its users; ``unassigned`` counts the table's users with no
    group (null values); ``source``: where its ids come from (a file's path,
    ``user_groups``; None for the built-in groupings, computed from ``train``)."""

    name: str
    groups: tuple[tuple[Any, np.ndarray], ...]
    unassigned: int = 0
    source: str | None = None


def _activity_labels() -> list[str]:
    edges = ACTIVITY_EDGES
    labels = []
    for lo, hi in zip(edges, [*edges[1:], None], strict=True):
        labels.append(f"{lo}+" if hi is None else (str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}"))
    return labels


def groupings_of(
    user_groups: Any, *, train: Any = None, cols: Columns = Columns()
) -> list[Grouping]:
    """The groupings of ``user_groups`` (see the module docstring), checked:
    a user in two groups of one grouping is an error naming the user."""
    import pandas as pd

    if isinstance(user_groups, str) and user_groups in BUILT_IN:
        return [_built_in(user_groups, train, cols)]
    if isinstance(user_groups, Mapping):
        frame = pd.DataFrame(
            {"user": list(user_groups.keys()), "group": list(user_groups.values())}
        )
        return _from_frame(frame, "user_groups")
    if is_path(user_groups) and user_groups not in BUILT_IN:
        table, _, info = opened(user_groups, "user_groups", cols)
        return _from_frame(table.to_pandas(), info.path)
    from receval.io.columns import USER_GROUPS, is_table, resolve

    if not is_table(user_groups):
        raise ReceValError(
            "user_groups must be a table (user column + group columns), a mapping user -> "
            f"group, a file, or one of {', '.join(map(repr, BUILT_IN))}; "
            f"got {type(user_groups).__name__}"
        )
    from receval.io.interactions import as_frame

    frame = as_frame(user_groups, "user_groups").rename(columns=str)
    found = resolve(list(frame.columns), cols, USER_GROUPS, "user_groups")
    return _from_frame(frame.rename(columns={found["user"]: "user"}), "user_groups")


def _from_frame(frame: pd.DataFrame, source: str) -> list[Grouping]:
    import pandas as pd

    names = [c for c in frame.columns if c != "user"]
    if not names:
        raise InputError(
            "a user-groups table needs a user column and at least one group column; "
            f"found only {', '.join(map(str, frame.columns))}",
            source=source,
        )
    users = canonical(frame["user"].to_numpy(), "user", source)
    out = []
    for name in names:
        values = frame[name]
        has = values.notna().to_numpy()
        values = _whole_labels(values, has)
        fast = _sorted_grouping(str(name), users, values, has)
        if fast is not None:
            out.append(Grouping(fast.name, fast.groups, fast.unassigned, source))
            continue
        pairs = pd.DataFrame({"user": users[has], "group": values[has].to_numpy()})
        pairs = pairs.drop_duplicates()
        twice = pairs["user"].duplicated(keep=False).to_numpy()
        if twice.any():
            user = pairs["user"][twice].iloc[0]
            found = sorted(map(str, pairs["group"][pairs["user"] == user]))
            raise InputError(
                f"a user belongs to one group of each grouping; user {user!r} is in "
                f"{len(found)} groups of {name!r}: {', '.join(found)}",
                source=source,
                user=user,
            )
        labels = pairs["group"].to_numpy()
        try:
            order = sorted(pd.unique(labels).tolist())
        except TypeError:  # mixed kinds: by their text
            order = sorted(pd.unique(labels).tolist(), key=str)
        members = pairs["user"].to_numpy()
        groups = tuple((label, _sorted_ids(members[labels == label])) for label in order)
        unassigned = len(pd.unique(users[~has])) if (~has).any() else 0
        out.append(Grouping(str(name), groups, unassigned, source))
    return out


def _whole_labels(values: pd.Series, has: np.ndarray) -> pd.Series:
    """Group labels that are whole numbers read as floats (a column of integers
    with an empty cell: ``1.0``, ``2.0``, NaN, as pandas and Arrow read it) as
    the integers written; other labels as they are."""
    import pandas as pd

    if values.dtype.kind != "f" or not has.any():
        return values
    given = values.to_numpy(dtype=np.float64)[has]
    if not (np.all(given == np.floor(given)) and np.all(np.abs(given) <= 2.0**53)):
        return values
    labels = np.zeros(len(values), dtype=np.int64)
    labels[has] = given.astype(np.int64)
    return pd.Series(labels, index=values.index, name=values.name)


def _sorted_grouping(
    name: str, users: np.ndarray, values: pd.Series, has: np.ndarray
) -> Grouping | None:
    """A grouping of number ids already sorted (tables usually are), in one
    pass: the same as the general path, or None when it does not apply (text
    ids, unsorted ids, a user in two groups: the general path says which)."""
    import pandas as pd

    u = users[has]
    if u.dtype == object or not bool(np.all(u[1:] >= u[:-1])):
        return None
    try:
        codes, labels = pd.factorize(values[has].to_numpy(), sort=True)
    except TypeError:  # mixed kinds: the general path orders them by text
        return None
    repeat = np.zeros(len(u), dtype=bool)
    repeat[1:] = u[1:] == u[:-1]
    if (repeat[1:] & (codes[1:] != codes[:-1])).any():
        return None  # a user in two groups: the general path names it
    u, codes = u[~repeat], codes[~repeat]
    groups = tuple((label, u[codes == g]) for g, label in enumerate(labels.tolist()))
    unassigned = len(pd.unique(users[~has])) if (~has).any() else 0
    return Grouping(name, groups, unassigned)


def _built_in(name: str, train: Any, cols: Columns) -> Grouping:
    import pandas as pd

    if train is None:
        raise ReceValError(
            f"{option('user_groups', name)} groups users by their training data: "
            f"give {option('train')}"
        )
    from receval.io import spark_files

    there = spark_files.activity_of(train, cols)  # a Spark train: counted where it lies
    if there is not None:
        ids, counts = there
    else:
        from receval.io.items import train_pairs

        users, items = train_pairs(train, cols)
        frame = pd.DataFrame({"user": users, "item": items}).drop_duplicates()
        n = frame.groupby("user", sort=True).size()
        ids = np.asarray(n.index)
        counts = n.to_numpy()
    if name == "cold_start":
        # every user with a training item is warm; cold ones are found per evaluation
        return Grouping(name, (("cold", _NOT_IN), ("warm", ids)))
    labels = _activity_labels()
    bucket = np.searchsorted(np.asarray(ACTIVITY_EDGES), counts, side="right") - 1
    groups: list[tuple[Any, np.ndarray]] = [("0", _NOT_IN)]
    for b, label in enumerate(labels[1:], start=1):
        groups.append((label, ids[bucket == b]))
    return Grouping(name, tuple(groups))


#: Stands for "every user of the evaluation not in train" (the cold start).
_NOT_IN = np.empty(0, dtype=object)


def _members(grouping: Grouping, users: np.ndarray) -> list[np.ndarray]:
    """For each group, a mask over ``users`` (the evaluation's distinct users)."""
    masks = []
    others = np.ones(len(users), dtype=bool)
    for _, ids in grouping.groups:
        if ids is _NOT_IN:
            masks.append(None)
            continue
        mask = positions(ids, users) >= 0 if len(ids) else np.zeros(len(users), dtype=bool)
        others &= ~mask
        masks.append(mask)
    return [others if m is None else m for m in masks]


def cells_of(groupings: Sequence[Grouping]) -> UserCells:
    """The cells of these groupings (:class:`~receval.engines.driver.UserCells`):
    each chunk of users is cut into them during the one evaluation pass."""
    ids, groups, default, sizes = [], [], [], []
    for grouping in groupings:
        listed = [(g, members) for g, (_, members) in enumerate(grouping.groups)]
        explicit = [(g, m) for g, m in listed if m is not _NOT_IN]
        everyone_else = [g for g, m in listed if m is _NOT_IN]
        members = [m for _, m in explicit if len(m)]
        if members:
            found = np.concatenate(members)
            if found.dtype == object:
                from receval.ids import as_str

                found = as_str(found)
            labels = np.concatenate([np.full(len(m), g) for g, m in explicit if len(m)])
            order = (
                np.array(sorted(range(len(found)), key=found.__getitem__))
                if found.dtype == object
                else np.argsort(found, kind="stable")
            )
            found, labels = found[order], labels[order].astype(np.int64)
        else:
            found, labels = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        ids.append(found)
        groups.append(labels)
        default.append(everyone_else[0] if everyone_else else -1)
        sizes.append(len(grouping.groups))
    return UserCells(tuple(ids), tuple(groups), tuple(default), tuple(sizes))


class _Renamed(Mapping[tuple[str, Any], Any]):
    """A mapping keyed by (grouping, group) over one keyed by positions."""

    def __init__(self, results: Any, keys: dict[tuple[str, Any], tuple[int, int]]) -> None:
        self._results, self._keys = results, keys

    def __getitem__(self, key: tuple[str, Any]) -> Any:
        return self._results[self._keys[key]]

    def __iter__(self) -> Any:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def group_table(
    groupings: Sequence[Grouping], results: Any, n_users: int, nobody: Mapping[str, float]
) -> tuple[pd.DataFrame, dict[str, Any], list[str], Mapping[tuple[str, Any], Any]]:
    """:func:`group_rows`' outputs from the groups of one pass: ``results``
    maps (grouping position, group position) to that group's Result, made
    when first read, and has ``summary(key)`` (its values and users evaluated;
    None: nobody; NoSharedUser when it cannot be evaluated alone) and
    ``users(key)`` (its users); ``n_users``: the evaluation's users;
    ``nobody``: the values of evaluating no rows (a group without users)."""
    rows: list[dict[str, Any]] = []
    index: list[tuple[str, Any]] = []
    counts: dict[str, Any] = {}
    notes: list[str] = []
    metrics = list(nobody)
    keys: dict[tuple[str, Any], tuple[int, int]] = {}
    for j, grouping in enumerate(groupings):
        for g, (label, _) in enumerate(grouping.groups):
            values: dict[str, float] = dict(nobody)
            users = 0
            try:
                found = results.summary((j, g))
            except NoSharedUser:
                values = dict.fromkeys(nobody, float("nan"))
                notes.append(_not_shared(grouping.name, label))
            else:
                if found is not None:
                    values, users = found
                    keys[grouping.name, label] = (j, g)
            rows.append({**values, "users": users})
            index.append((grouping.name, label))
        sizes = [results.users((j, g)) for g in range(len(grouping.groups))]
        counts[grouping.name] = {
            "groups": len(grouping.groups),
            "users_without_group": n_users - sum(sizes),
        }
        if grouping.unassigned:
            counts[grouping.name]["users_with_a_null_group"] = grouping.unassigned
        notes += _matched(grouping, sizes, counts[grouping.name])
    return _frame(rows, index, metrics), counts, notes, _Renamed(results, keys)


def _matched(grouping: Grouping, sizes: Sequence[int], counts: dict[str, Any]) -> list[str]:
    """How the ids of a grouping given as a table (or mapping, or file)
    matched the users of the evaluation (``sizes``: each group's users found
    in it): ``counts["user_ids_not_evaluated"]`` (ids of the table that are no
    user of the recommendations or the truth), and a note naming the groups
    with no user (their values: those of no rows). No id matching any user is
    an :class:`~receval.errors.InputError`: every group would be empty (ids
    written otherwise: ``u1`` for ``1``, another user column)."""
    if grouping.source is None:  # built in: computed from train, for these users
        return []
    listed = sum(len(ids) for _, ids in grouping.groups)
    counts["user_ids_not_evaluated"] = listed - int(sum(sizes))
    if listed and not sum(sizes):
        ids = np.concatenate([ids for _, ids in grouping.groups])[:3].tolist()
        raise InputError(
            f"none of the {listed} user ids of the user groups (e.g. "
            f"{', '.join(map(repr, ids))}) is a user of the recommendations or the truth, "
            f"so every group of {grouping.name!r} would be empty: are they written as the "
            f"evaluation's ids are, and is their user column the right one "
            f"({option('user_col')} names it)?",
            source=grouping.source,
        )
    empty = [label for (label, _), n in zip(grouping.groups, sizes, strict=True) if not n]
    if not empty:
        return []
    shown = ", ".join(f"{grouping.name}={label!r}" for label in empty[:5])
    more = f" and {len(empty) - 5} more" if len(empty) > 5 else ""
    return [
        f"user groups with no user of the evaluation: {shown}{more} (0 users: the values "
        f"of no rows, NaN for per-user metrics); {counts['user_ids_not_evaluated']} of the "
        f"{listed} user ids of {grouping.source} are not users of the recommendations or "
        "the truth"
    ]


def _not_shared(name: str, label: Any) -> str:
    """A group evaluated alone would raise NoSharedUser: its values are NaN."""
    return (
        f"user group {name}={label!r}: its users with recommendations and its users in the "
        "truth have no user in common; not evaluated"
    )


def _frame(
    rows: list[dict[str, Any]], index: list[tuple[str, Any]], metrics: list[str]
) -> pd.DataFrame:
    """One row per (grouping, group): every metric asked (a column even when no
    group has an evaluated user) and the users evaluated."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=[*metrics, "users"])
    frame.index = pd.MultiIndex.from_tuples(index, names=["grouping", "group"])
    frame["users"] = frame["users"].astype(np.int64)
    return frame


def group_rows(
    groupings: Sequence[Grouping],
    recs: RecsData,
    truth: TruthData,
    evaluate_subset: Any,
    nobody: Mapping[str, float],
) -> tuple[pd.DataFrame, dict[str, Any], list[str], dict[tuple[str, Any], Any]]:
    """``Result.groups``, ``counts["user_groups"]``, notes and each group's own
    :class:`~receval.Result`: each group's rows of ``recs`` and ``truth``
    evaluated alone by ``evaluate_subset(recs, truth)``; a group without
    users has ``nobody``'s values (those of evaluating no rows), as in
    :func:`group_table`."""
    all_users = _all_users(recs, truth)
    # each row's user as a position in all_users, once (a group is then a compare)
    where = {
        (side, name): positions(all_users, np.asarray(getattr(data, name)))
        for side, data in (("recs", recs), ("truth", truth))
        for name in ("users", "empty_users")
    }
    rows: list[dict[str, Any]] = []
    index: list[tuple[str, Any]] = []
    counts: dict[str, Any] = {}
    notes: list[str] = []
    metrics = list(nobody)
    alone: dict[tuple[str, Any], Any] = {}
    for grouping in groupings:
        masks = _members(grouping, all_users)
        placed = np.zeros(len(all_users), dtype=bool)
        group_of = np.full(len(all_users) + 1, -1, dtype=np.int64)  # last: absent (-1 index)
        for g, mask in enumerate(masks):
            group_of[:-1][mask] = g
        sizes = [int(mask.sum()) for mask in masks]
        for g, ((label, _), mask) in enumerate(zip(grouping.groups, masks, strict=True)):
            placed |= mask
            members = all_users[mask]
            values: dict[str, float] = dict(nobody)
            users = 0
            if not len(members):  # nobody: the values of no rows, 0 users
                rows.append({**values, "users": 0})
                index.append((grouping.name, label))
                continue
            try:
                res = evaluate_subset(
                    subset(recs, *(group_of[where["recs", n]] == g for n in _LISTS)),
                    subset(truth, *(group_of[where["truth", n]] == g for n in _LISTS)),
                )
                values = dict(res.summary)
                users = int(res.counts.get("users_evaluated", 0))
                alone[grouping.name, label] = res
            except NoSharedUser:
                values = dict.fromkeys(nobody, float("nan"))
                notes.append(_not_shared(grouping.name, label))
            rows.append({**values, "users": users})
            index.append((grouping.name, label))
        counts[grouping.name] = {
            "groups": len(grouping.groups),
            "users_without_group": int((~placed).sum()),
        }
        if grouping.unassigned:
            counts[grouping.name]["users_with_a_null_group"] = grouping.unassigned
        notes += _matched(grouping, sizes, counts[grouping.name])
    return _frame(rows, index, metrics), counts, notes, alone


def _all_users(recs: RecsData, truth: TruthData) -> np.ndarray:
    parts = [recs.users, recs.empty_users, truth.users, truth.empty_users]
    parts = [np.asarray(p) for p in parts if len(p)]
    if not parts:
        return np.empty(0, dtype=np.int64)
    if any(p.dtype == object for p in parts):  # one kind: text
        from receval.ids import as_str

        parts = [as_str(p) for p in parts]
    # each part's distinct users first (one pass when sorted, as inputs usually are)
    return _sorted_ids(np.concatenate([_sorted_ids(p) for p in parts]))


def _sorted_ids(values: np.ndarray) -> np.ndarray:
    """The distinct ids of ``values``, sorted (one pass when already sorted)."""
    if values.dtype == object:
        return np.array(sorted(set(values.tolist())), dtype=object)
    found = distinct_sorted(values)
    return found if found is not None else distinct(values)


#: The id arrays of RecsData and TruthData: the rows' users, the users with no row.
_LISTS = ("users", "empty_users")


#: Why a metric of the item groups is NaN over every user evaluated.
_ITEM_GROUP_NAN = {
    "rsp": "no item group has an item a user could be recommended (every group's denominator "
    "is 0: its items are not in the catalog, or in every user's training data)",
    "reo": "no item of the truth is in an item group (no relevant pair in any group)",
    "awrf": "no list holds an item of an item group (every user's value is undefined)",
    "miscalibration": "no user's training history holds an item of an item group (every "
    "user's value is undefined)",
}


def item_group_notes(result: Any) -> list[str]:
    """What to say about the NaN values that item groups sharing no item
    with the evaluation give (they were said nowhere): a metric of the item
    groups (``rsp``, ``reo``, ``awrf``, ``miscalibration``) NaN over the users
    evaluated, and why; the groups of ``Result.item_groups`` whose values
    within the group are NaN because none of their items is in the catalog.

    Example:
        >>> import receval, pandas as pd
        >>> groups = pd.DataFrame({"item": [7, 8], "group": ["a", "b"]})
        >>> res = receval.evaluate({1: [1, 2]}, {1: [1]}, ["rsp@2", "coverage@2"],
        ...                        train={1: [3]}, item_groups=groups)
        >>> for note in item_group_notes(res):
        ...     print(note.split(":")[0])
        rsp@2 is NaN
        item groups with no item in the catalog
    """
    notes = []
    for spec in result.metrics:
        value = result.summary.get(str(spec))
        why = _ITEM_GROUP_NAN.get(spec.name)
        if why is not None and value is not None and value != value:
            notes.append(f"{spec} is NaN: {why}")
    table = result.item_groups
    if table is None or not len(table):
        return notes
    within = [c for c in table.columns if c not in ("items", "catalog_share")]
    within = [c for c in within if not str(c).startswith("exposure@")]
    share = table["catalog_share"].to_numpy(dtype=np.float64)
    found: dict[str, tuple[list[str], dict[str, None]]] = {}
    for (grouping, label), row in table[share == 0].iterrows():
        nan = [str(c) for c in within if row[c] != row[c]]
        if nan:
            named, columns = found.setdefault(str(grouping), ([], {}))
            named.append(f"{grouping}={label!r} ({int(row['items'])} items)")
            columns.update(dict.fromkeys(nan))
    for named, columns in found.values():
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        notes.append(
            f"item groups with no item in the catalog: {shown}: their {', '.join(columns)} "
            "within the group are NaN (0 of 0 catalog items); an item group's items count "
            "only where they are items of the catalog"
        )
    return notes
