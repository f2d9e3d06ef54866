"""Evaluation batch by batch: inside a training loop, on several workers.

:class:`Accumulator` holds what :func:`receval.evaluate` combines internally:
one part per batch of complete users (their per-user values, exact sums,
integer counts and item counts), evaluated by the same engine as soon as the
batch arrives. Parts add up exactly in any order, so :meth:`Accumulator.compute`
after any batching and any :meth:`Accumulator.merge` order is bit for bit
``receval.evaluate`` on all the data at once.

Example:
    >>> import receval
    >>> acc = receval.Accumulator(["ndcg@2", "recall@2"])
    >>> acc.update({"u1": [1, 2]}, {"u1": [2]})
    >>> acc.update({"u2": [3, 4]}, {"u2": [3, 5]})
    >>> acc.compute().summary == receval.evaluate(
    ...     {"u1": [1, 2], "u2": [3, 4]}, {"u1": [2], "u2": [3, 5]}, ["ndcg@2", "recall@2"]
    ... ).summary
    True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from receval.engines import driver
from receval.engines.local import Batches
from receval.errors import ReceValError
from receval.evaluation.assemble import result_of, with_columns
from receval.evaluation.options import EvalOptions, split_kwargs
from receval.evaluation.result import Result
from receval.io.items import build_context
from receval.io.propensities import DEFAULT_GAMMA, Propensities
from receval.io.tables import read_recs, read_truth
from receval.metrics.spec import MetricSpec, parse_metrics
from receval.records import Columns

__all__ = ["Accumulator"]


class Accumulator:
    """Metrics over a stream of batches, each holding every row of its users.

    Args:
        metrics: metric strings or specs, as for :func:`receval.evaluate`.
        options: an :class:`~receval.EvalOptions`; option keywords
            (``threshold=``, ``empty_truth=``, ...) apply on top.
        train, catalog, item_features, popular, item_groups: the item-side
            inputs of :func:`receval.evaluate`, given once.
        propensities, propensity_gamma: the propensities of the relevant
            pairs, for the weighted metrics (``weighting=``), as for
            :func:`receval.evaluate`; each batch's truth is matched with them.

    A user must come in one batch only (:meth:`compute` says which user came
    twice). ERR without ``max_grade=`` normalises by the largest grade of the
    whole truth, which a stream does not know: a batch with grades above 1
    asks for ``err[max_grade=...]``.
    """

    def __init__(
        self,
        metrics: str | MetricSpec | Iterable[str | MetricSpec],
        *,
        options: EvalOptions | None = None,
        propensities: Any = None,
        propensity_gamma: float = DEFAULT_GAMMA,
        **kwargs: Any,
    ) -> None:
        opts, inputs = split_kwargs(options, kwargs, caller="Accumulator")
        from receval.evaluation.api import check_groups, check_inputs

        specs = parse_metrics(metrics, opts.metric_defaults)
        given = {
            "train": inputs.get("train") is not None,
            "catalog": inputs.get("catalog") is not None or inputs.get("train") is not None,
            "item_features": inputs.get("item_features") is not None,
            "popular": inputs.get("popular") is not None or inputs.get("train") is not None,
            "item_groups": inputs.get("item_groups") is not None,
            "catalog_size": opts.catalog_size is not None,
            "propensities": propensities is not None,
        }
        check_inputs(specs, given)
        self._propensities = None
        if propensities is not None and any(
            s.param_dict.get("weighting", "none") != "none" for s in specs
        ):
            self._propensities = Propensities(
                propensities,
                train=inputs.get("train"),
                gamma=propensity_gamma,
                cols=Columns(user=opts.user_col, item=opts.item_col),
            )
        items = None
        if inputs.get("item_groups") is not None or any(
            s.definition.needs or s.definition.kind == "aggregate" for s in specs
        ):
            items = build_context(
                train=inputs.get("train"),
                catalog=inputs.get("catalog"),
                item_features=inputs.get("item_features"),
                popular=inputs.get("popular"),
                item_groups=inputs.get("item_groups"),
                cols=Columns(user=opts.user_col, item=opts.item_col),
            )
            check_groups(specs, items)
        self.options = opts
        self.specs = list(specs)
        self._items = items
        self._items_digest = _digest(items)
        self._engine = Batches(driver.Plan(tuple(specs), 1.0, items=items, **opts.engine()))
        self._reads_max_grade = [s for s in specs if s.reads_max_grade]
        self._rows = 0  # rows of update_scores so far: the default user ids
        # what evaluate says of the inputs' columns: the columns each side was
        # read from (the first batch's) and the largest grade of every batch
        self._columns: tuple[dict[str, str], dict[str, str]] | None = None
        self._top = 1.0

    # -- feeding -------------------------------------------------------------

    def update(self, recommendations: Any, truth: Any) -> None:
        """Evaluate one batch: anything :func:`receval.evaluate` takes in
        memory (tables, mappings), holding every row of its users."""
        self._engine.add(*self._read(recommendations, truth))

    def _read(self, recommendations: Any, truth: Any) -> tuple[Any, Any]:
        """One batch's lists and truth read and checked as :meth:`update` takes them."""
        cols = self.options.columns()
        recs = read_recs(recommendations, cols)
        tr = read_truth(truth, cols, negative_grades=self.options.negative_grades)
        top = float(tr.grades.max()) if len(tr.grades) else 0.0
        if self._reads_max_grade and self.options.graded and top > 1.0:
            raise ReceValError(
                f"{self._reads_max_grade[0]} normalises by the largest grade of the whole truth, "
                "which a stream of batches does not know: give it, e.g. "
                f"err@10[max_grade={float(tr.grades.max()):g}]"
            )
        if self._propensities is not None:
            tr.propensity = self._propensities.of(tr)
        self._columns = self._columns or (dict(recs.columns), dict(tr.columns))
        self._top = max(self._top, top)
        return recs, tr

    def _part(self, recommendations: Any, truth: Any) -> Any:
        """:meth:`update`'s evaluation of one batch, returned instead of kept
        (thread-safe: nothing of this accumulator changes): a caller that
        evaluates batches on threads keeps the parts with :meth:`_add_part`
        in its own order (parts in user order are combined without a sort)."""
        one = Batches(self._engine.plan)
        one.add(*self._read(recommendations, truth))
        return one.inputs[0]

    def _add_part(self, part: Any) -> None:
        """Keep a part :meth:`_part` made, as :meth:`update` keeps its own."""
        self._engine.inputs.append(part)

    def update_scores(
        self,
        scores: Any,
        targets: Any,
        users: Any = None,
        exclude: Any = None,
    ) -> None:
        """Evaluate a batch of dense scores (batch × items): each row a user,
        each column an item (its index is its id).

        ``scores`` and ``targets`` are NumPy arrays, PyTorch tensors (on any
        device: the top k is chosen there, and only it leaves the device),
        anything with ``__array__``, or any DLPack array (``__dlpack__``: CuPy,
        JAX, ...; taken without a copy, on the host by NumPy, on a device by
        PyTorch, which must then be installed); ``targets`` holds grades (0:
        not relevant) or booleans; ``exclude`` (boolean, same shape) marks
        items never to recommend (seen items): they are left out of the lists.
        Only the top k of each row is kept (k the largest cut-off; the whole
        row for a metric without one),
        chosen by partial selection, ties by item id ascending as
        :func:`receval.evaluate` breaks them. ``users``: the rows' user ids
        (default: 0, 1, 2, ... across this accumulator's batches so far; give
        them when accumulators of several workers are merged, or their users
        collide).
        """
        named = ((scores, "scores"), (targets, "targets"), (exclude, "exclude"))
        scores, targets, exclude = (_adopt(x, name) for x, name in named)
        shape = tuple(getattr(scores, "shape", np.shape(scores)))
        if len(shape) != 2 or tuple(getattr(targets, "shape", np.shape(targets))) != shape:
            raise ReceValError(
                "scores and targets must be matrices of one shape (users × items); got "
                f"{shape} and {tuple(getattr(targets, 'shape', np.shape(targets)))}"
            )
        if exclude is not None and tuple(getattr(exclude, "shape", np.shape(exclude))) != shape:
            raise ReceValError(f"exclude must have the scores' shape {shape}")
        m, n_items = shape
        if users is None:
            ids = np.arange(self._rows, self._rows + m, dtype=np.int64)
        else:
            ids = np.asarray(users)
            if ids.shape != (m,):
                raise ReceValError(f"users must hold one id per row ({m}); got {ids.shape}")
        ks = [x.k for x in self.specs]
        k = n_items if any(x is None for x in ks) else min(n_items, max(ks))  # type: ignore[type-var]
        if _is_torch(scores):  # selected where the tensors live; only the top k leaves
            cols, picked, keep, (tu, ti, tv) = _select_torch(scores, targets, exclude, k)
        else:
            cols, picked, keep, (tu, ti, tv) = _select(scores, targets, exclude, k)
        self._rows += m
        kept = keep.reshape(-1)
        rows = np.repeat(np.arange(m), cols.shape[1])
        rows, cols = rows[kept], cols.reshape(-1)[kept]
        # the selected items with their scores (not ranks): evaluate orders them as
        # it orders the same top k given as a table, and counts their ties alike
        recs = pd.DataFrame({"user": ids[rows], "item": cols, "score": picked.reshape(-1)[kept]})
        # the truth: every nonzero target (a row without one is a user with a
        # list and no truth: the no_truth policy)
        truth = pd.DataFrame({"user": ids[tu], "item": ti, "relevance": tv})
        self.update(recs, truth)

    # -- combining -----------------------------------------------------------

    def merge(self, other: Accumulator) -> Accumulator:
        """Add another accumulator's batches (another worker's); returns self."""
        if not isinstance(other, Accumulator):
            raise ReceValError(f"merge() takes an Accumulator; got {type(other).__name__}")
        mine, theirs = [str(s) for s in self.specs], [str(s) for s in other.specs]
        if mine != theirs:
            raise ReceValError(
                f"merge(): the accumulators differ in their metrics: {', '.join(mine)} here, "
                f"{', '.join(theirs)} in the other"
            )
        ours, others = self.options.to_dict(), other.options.to_dict()
        differ = [k for k in ours if k != "given" and ours[k] != others[k]]
        if not differ and self.options.grade_cut != other.options.grade_cut:
            differ = ["threshold"]  # graded=False: given in one only, it selects the rows
        if differ:
            k = differ[0]
            raise ReceValError(
                f"merge(): the accumulators differ in their options: {k}={ours[k]!r} here, "
                f"{k}={others[k]!r} in the other"
                + (" (given explicitly in one only)" if ours[k] == others[k] else "")
            )
        if getattr(other, "_items_digest", None) != self._items_digest:
            raise ReceValError(
                "merge(): the accumulators differ in their item inputs (train=, catalog=, "
                "item_features=, popular=, item_groups=): their parts would be counted against "
                "different items; build every worker's accumulator with the same ones"
            )
        self._engine.inputs.extend(other._engine.inputs)
        self._rows += other._rows
        self._columns = self._columns or other._columns
        self._top = max(self._top, other._top)
        return self

    def reset(self) -> None:
        """Forget every batch (a new epoch)."""
        self._engine.inputs.clear()
        self._rows = 0

    def compute(self) -> Result:
        """The :class:`~receval.Result` of every batch so far: bit for bit
        ``receval.evaluate`` on all of them at once."""
        parts = self._engine.parts(self._engine.plan)
        if not parts:
            raise ReceValError("compute(): no batch yet (update() first)")
        ids = [p.values[0] for p in parts if p.values is not None]
        every = np.concatenate(ids) if ids else np.empty(0)
        if every.dtype != object and bool(np.all(every[1:] > every[:-1])):
            every = every[:0]  # ascending: each user once (no sort needed to tell)
        found, counts = np.unique(
            every.astype(str) if every.dtype == object else every, return_counts=True
        )
        if (counts > 1).any():
            user = found[counts > 1][0]
            user = user.item() if isinstance(user, np.generic) else user
            raise ReceValError(
                f"user {user!r} came in two batches: each batch must hold every row of its "
                "users, and each user come once (a distributed sampler that repeats users to "
                "fill the last batch of every worker sends some twice)"
            )
        out = self._engine.combine(self._engine.plan, parts)
        res = result_of(out, self.specs, self.options, self._items)
        recs_columns, truth_columns = self._columns or ({}, {})
        top = self._top if self.options.graded else 1.0
        return with_columns(res, recs_columns, truth_columns, top, self.options)

    def __len__(self) -> int:
        """The batches so far."""
        return len(self._engine.inputs)


def _digest(items: Any) -> str | None:
    """A fingerprint of the item context (None: none), to tell whether two
    accumulators were given the same item inputs."""
    if items is None:
        return None
    import dataclasses
    import hashlib
    import pickle

    # arrays and plain values only (not the lazily filled cache): the same
    # inputs give the same bytes in every worker process
    state = [(f.name, getattr(items, f.name)) for f in dataclasses.fields(items)]
    return hashlib.sha256(pickle.dumps([x for x in state if x[0] != "_cache"])).hexdigest()


def _is_torch(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "torch"


#: DLPack's device type of the host's memory (``kDLCPU``)
_DLPACK_CPU = 1


def _adopt(obj: Any, name: str) -> Any:
    """``obj`` as the selection takes it: a DLPack array on a device (CuPy, JAX,
    ...: their ``__array__`` refuses or copies to the host) becomes, without a
    copy, a PyTorch tensor on that device; one on the host without
    ``__array__``, a NumPy array; anything else stays."""
    if obj is None or _is_torch(obj) or not hasattr(obj, "__dlpack__"):
        return obj
    device = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else _DLPACK_CPU
    if int(device) == _DLPACK_CPU:
        return obj if hasattr(obj, "__array__") else np.from_dlpack(obj)
    try:
        import torch
    except ImportError:
        raise ReceValError(
            f"{name} live on a device (DLPack device type {int(device)}): the top k is chosen "
            'there by PyTorch (pip install "receval[torch]"), or copy them to the host first'
        ) from None
    return torch.from_dlpack(obj)


#: what a selection gives: each row's k columns in list order, their scores, whether
#: each is kept (not excluded), and the nonzero targets (rows, columns, values)
_Selected = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]


def _select(scores: Any, targets: Any, exclude: Any, k: int) -> _Selected:
    """NumPy: each row's k selected columns in list order, their scores, whether
    each is kept (not excluded), and the nonzero targets (rows, columns, values)."""
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(targets, dtype=np.float64)
    if np.isnan(s).any() or np.isposinf(s).any():
        raise ReceValError("scores must be finite numbers (NaN or +inf found)")
    mask = None if exclude is None else np.asarray(exclude, dtype=bool)
    if mask is not None:
        s = np.where(mask, -np.inf, s)
    cols = _top_k(s, k)
    keep = np.ones(cols.shape, dtype=bool) if mask is None else ~np.take_along_axis(mask, cols, 1)
    tu, ti = np.nonzero(t)
    return cols, np.take_along_axis(s, cols, 1), keep, (tu, ti, t[tu, ti])


def _top_k(s: np.ndarray, k: int) -> np.ndarray:
    """Per row, the columns of the k largest scores in list order (partial
    selection; ties by column ascending): an ``(m, k)`` matrix."""
    m, n = s.shape
    if k >= n:
        return np.argsort(-s, axis=1, kind="stable")  # stable: ties by column
    part = np.argpartition(-s, k - 1, axis=1)[:, :k]
    kth = np.take_along_axis(s, part, axis=1).min(axis=1)[:, None]
    above = s > kth
    need = k - above.sum(axis=1)
    tied = s == kth
    take = above | (tied & (np.cumsum(tied, axis=1) <= need[:, None]))
    cols = np.nonzero(take)[1].reshape(m, k)  # each row: its k columns, ascending
    order = np.argsort(-np.take_along_axis(s, cols, axis=1), axis=1, kind="stable")
    return np.take_along_axis(cols, order, axis=1)


def _select_torch(scores: Any, targets: Any, exclude: Any, k: int) -> _Selected:
    """:func:`_select` for PyTorch tensors, on their device: the same
    selection (the same comparisons, so the same columns), and only the k
    columns per row and the nonzero targets are copied to the host."""
    import torch

    s = scores.detach().to(torch.float64)  # float32 scores keep their order and ties
    if bool(torch.isnan(s).any()) or bool(torch.isposinf(s).any()):
        raise ReceValError("scores must be finite numbers (NaN or +inf found)")
    mask = None
    if exclude is not None:
        mask = torch.as_tensor(exclude, device=s.device).to(torch.bool)
        s = s.masked_fill(mask, float("-inf"))
    m, n = s.shape
    if k >= n:
        cols = torch.sort(-s, dim=1, stable=True).indices
    else:
        kth = torch.topk(s, k, dim=1).values[:, -1:]
        above = s > kth
        need = k - above.sum(dim=1, keepdim=True)
        tied = s == kth
        take = above | (tied & (torch.cumsum(tied.to(torch.int64), dim=1) <= need))
        cols = torch.nonzero(take)[:, 1].reshape(m, k)
        order = torch.sort(-torch.gather(s, 1, cols), dim=1, stable=True).indices
        cols = torch.gather(cols, 1, order)
    keep = torch.ones_like(cols, dtype=torch.bool) if mask is None else ~torch.gather(mask, 1, cols)
    t = torch.as_tensor(targets, device=s.device).detach()
    tu, ti = torch.nonzero(t, as_tuple=True)
    tv = t[tu, ti].to(torch.float64)
    return (
        cols.cpu().numpy(),
        torch.gather(s, 1, cols).cpu().numpy(),
        keep.cpu().numpy(),
        (tu.cpu().numpy(), ti.cpu().numpy(), tv.cpu().numpy()),
    )
