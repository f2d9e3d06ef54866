"""Off-policy (counterfactual) estimates of a policy's value from logged bandit feedback.

A log holds one row per shown action: the context (or user) ``x_i``, the action
``a_i`` the logging policy took, the reward ``r_i`` seen and the logging
propensity ``p_i = π_0(a_i | x_i)``. Given an evaluation policy ``π`` (action
probabilities per context, a deterministic choice per context, or the
probability ``π(a_i | x_i)`` per logged row), :func:`off_policy` estimates
``V(π) = E_x E_{a~π(·|x)} [r]`` with, for ``w_i = π(a_i | x_i) / p_i``,
``q̂`` a reward model, ``q̂_i = q̂(x_i, a_i)`` and ``q̂π_i = Σ_a π(a | x_i) q̂(x_i, a)``:

- ``dm``: ``(1/n) Σ q̂π_i``, the direct method (Beygelzimer & Langford 2009);
- ``ips``: ``(1/n) Σ min(w_i, c) r_i`` (Horvitz & Thompson 1952; clipped: Ionides 2008);
- ``snips``: ``Σ w_i r_i / Σ w_i``, self-normalised (Swaminathan & Joachims 2015);
- ``dr``: ``(1/n) Σ [q̂π_i + min(w_i, c)(r_i − q̂_i)]``, doubly robust (Dudík et al. 2011);
- ``sndr``: ``(1/n) Σ q̂π_i + Σ w_i (r_i − q̂_i) / Σ w_i``, self-normalised DR (obp's SNDR);
- ``switch-dr``: ``(1/n) Σ [q̂π_i + 1[w_i ≤ τ] w_i (r_i − q̂_i)]`` (Wang, Agarwal & Dudík 2017).

On slate logs (one row per slate ``s`` and position ``l``, slot rewards
``r_sl``, ``S`` slates), with the ratios of the evaluation to the logging
policy's probabilities of the logged action at ``l`` (``w_sl``), of the logged
first ``l`` actions (``w^c_sl``) and of the whole slate (``w^s_s``):

- ``iips``: ``(1/S) Σ_s Σ_l w_sl r_sl``, independent IPS (Li et al. 2018);
- ``rips``: ``(1/S) Σ_s Σ_l w^c_sl r_sl``, reward-interaction / cascade IPS
  (McInerney et al. 2020);
- ``sips``: ``(1/S) Σ_s w^s_s Σ_l r_sl``, standard slate IPS;
- ``pi``: ``(1/S) Σ_s (Σ_l w_sl − L_s + 1) Σ_l r_sl``, the pseudo-inverse
  estimator (Swaminathan et al. 2017) in its closed form for a logging policy
  that chooses each position independently.

``c`` is ``clip`` (none by default) and ``τ`` is ``switch_tau``. These are the
definitions of Open Bandit Pipeline 0.5.7 (``obp.ope``: InverseProbabilityWeighting
with ``lambda_=c``, SelfNormalizedInverseProbabilityWeighting, DirectMethod,
DoublyRobust with ``lambda_=c``, SelfNormalizedDoublyRobust, SwitchDoublyRobust
with ``lambda_=τ``; on slates SlateStandardIPS, SlateIndependentIPS and
SlateRewardInteractionIPS); tests/conformance/test_obp.py checks them to 1e-9.
obp has no pseudo-inverse estimator.

Each estimate comes with a percentile interval of the Poisson bootstrap over
contexts (:mod:`receval.analysis.resampling`: the contexts, put in the order of
their sums, count ``Poisson(1)`` times in resample ``b``, a hash of the seed,
the context's position in that order and ``b``), so the interval depends on
neither the order of the rows nor how the ids are written, and with the
effective sample size ``(Σ v_i)² / Σ v_i²`` of the weights ``v_i`` the
estimator puts on the rewards (``n`` for the direct method).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import receval.ids as id_rule
from receval._accel import NATIVE
from receval.analysis.resampling import poisson_weights, user_keys
from receval.analysis.stats import quantile_interval
from receval.errors import InputError, OptionError, check_seed, option, said

__all__ = [
    "ESTIMATORS",
    "SLATE_ESTIMATORS",
    "OffPolicyEstimate",
    "OffPolicyResult",
    "WeightSummary",
    "off_policy",
]

#: The estimators :func:`off_policy` knows, in the order they are reported.
ESTIMATORS: tuple[str, ...] = ("dm", "ips", "snips", "dr", "sndr", "switch-dr")
#: The slate (top-k) estimators, on logs with one row per (slate, position).
SLATE_ESTIMATORS: tuple[str, ...] = ("iips", "rips", "sips", "pi")
_SLATE_PROPENSITY = {
    "iips": "propensity",
    "pi": "propensity",
    "rips": "propensity_cascade",
    "sips": "propensity_slate",
}
_SLATE_POLICY = {"iips": "probability", "pi": "probability", "rips": "cascade", "sips": "slate"}
_NEEDS_MODEL = frozenset({"dm", "dr", "sndr", "switch-dr"})
_SUM_TOL = 1e-6  # |Σ_a π(a|x) − 1| allowed


#: Bins of the weights' histogram per decade: bin ``k`` holds ``10^(k/B) < v <= 10^((k+1)/B)``.
_BINS_PER_DECADE = 20
#: The thresholds of :attr:`WeightSummary.above`.
WEIGHT_THRESHOLDS: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 100.0)
#: The levels of :attr:`WeightSummary.quantiles`.
WEIGHT_QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99, 0.999)


@dataclass(frozen=True)
class WeightSummary:
    """The distribution of the weights ``v_i`` an estimator puts on the logged
    rewards (one per logged row: ``min(w_i, clip)`` for ips and dr, ``w_i`` for
    snips and sndr, 1 for dm, the row's slate weight for the slate
    estimators), summarised in the same pass as the estimate: a log read in
    batches never holds them all.

    ``count``, ``negative`` (the pseudo-inverse's weights can be < 0),
    ``zero``, ``min``, ``max`` and ``mean`` are exact; ``above[t]``: the exact
    share of the weights ``> t``, for ``t`` in 1, 2, 5, 10, 100; ``bins``:
    ``(k, count)`` for the positive weights, bin ``k`` holding
    ``10^(k/20) < v <= 10^((k+1)/20)``; ``quantiles[q]``, q in 0.5, 0.9, 0.99,
    0.999: the upper edge of the bin holding the ``ceil(q·count)``-th smallest
    weight, kept within ``[min, max]`` (an upper bound of the exact quantile,
    at most ``10^(1/20) ≈ 1.12`` times it for a positive weight, exact at 1,
    10, 100; 0 for a zero weight, ``min(0, max)`` for a negative one).

    Example:
        >>> s = _Hist.of(np.array([0.5, 1.0, 1.0, 4.0])).summary()
        >>> s.max, s.above[2.0], s.quantiles[0.999]
        (4.0, 0.25, 4.0)
    """

    count: int
    negative: int
    zero: int
    min: float
    max: float
    mean: float
    above: Mapping[float, float]
    quantiles: Mapping[float, float]
    bins: tuple[tuple[int, int], ...]

    def decades(self) -> dict[str, float]:
        """The share of the weights per decade: ``< 0``, ``0``, then
        ``(10^j, 10^(j+1)]`` for each decade from the smallest positive
        weight's to the largest's (labels ``0.1–1``, ``1000–1e4``); the data
        of the report's histogram.

        Example:
            >>> _Hist.of(np.array([0.5, 2.0, 2.0, 40.0])).summary().decades()
            {'0.1–1': 0.25, '1–10': 0.5, '10–100': 0.25}
        """
        out: dict[str, float] = {}
        n = self.count or 1
        if self.negative:
            out["< 0"] = self.negative / n
        if self.zero:
            out["0"] = self.zero / n
        if self.bins:
            per: dict[int, int] = {}
            for k, c in self.bins:
                per[k // _BINS_PER_DECADE] = per.get(k // _BINS_PER_DECADE, 0) + c
            for j in range(min(per), max(per) + 1):
                out[f"{_power(j)}–{_power(j + 1)}"] = per.get(j, 0) / n
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (the keys of ``above`` and ``quantiles`` as text)."""
        return {
            "count": self.count,
            "negative": self.negative,
            "zero": self.zero,
            "min": _num(self.min),
            "max": _num(self.max),
            "mean": _num(self.mean),
            "above": {f"{t:g}": _num(v) for t, v in self.above.items()},
            "quantiles": {f"{q:g}": _num(v) for q, v in self.quantiles.items()},
            "bins": [list(b) for b in self.bins],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WeightSummary:
        """The inverse of :meth:`to_dict`."""

        def f(x: Any) -> float:
            return math.nan if x is None else float(x)

        return cls(
            int(d["count"]),
            int(d["negative"]),
            int(d["zero"]),
            f(d["min"]),
            f(d["max"]),
            f(d["mean"]),
            {float(t): f(v) for t, v in d["above"].items()},
            {float(q): f(v) for q, v in d["quantiles"].items()},
            tuple((int(k), int(c)) for k, c in d["bins"]),
        )


def _power(j: int) -> str:
    """10^j as a short label: 0.01 … 1000, else 1e-5, 1e6."""
    return f"{10.0**j:g}" if -2 <= j <= 3 else f"1e{j}"


def _num(x: float) -> float | None:
    """NaN as None (JSON)."""
    return None if x != x else float(x)


@dataclass
class _Hist:
    """A mergeable summary of weights: counts, extremes, sum, counts above the
    thresholds and the histogram of the positive ones (:class:`WeightSummary`)."""

    count: int
    negative: int
    zero: int
    vmin: float
    vmax: float
    total: float
    above: np.ndarray
    keys: np.ndarray  # bin numbers, ascending
    counts: np.ndarray

    @classmethod
    def of(cls, v: np.ndarray) -> _Hist:
        vmin = float(v.min()) if v.size else math.inf
        pos = v if vmin > 0 else v[v > 0]
        x = np.log10(pos)
        x *= _BINS_PER_DECADE
        np.ceil(x, out=x)
        k = x.astype(np.int64)
        k -= 1
        low = int(k.min()) if k.size else 0
        counts = np.bincount(k - low)  # the bins span a few hundred numbers at most
        keys = np.flatnonzero(counts) + low
        counts = counts[counts > 0]
        above = [np.count_nonzero(v > t) for t in WEIGHT_THRESHOLDS]
        return cls(
            int(v.size),
            int(np.count_nonzero(v < 0)) if vmin < 0 else 0,
            int(v.size - pos.size - (np.count_nonzero(v < 0) if vmin < 0 else 0)),
            vmin,
            float(v.max()) if v.size else -math.inf,
            float(v.sum()),
            np.array(above, dtype=np.int64),
            keys,
            counts.astype(np.int64),
        )

    def __add__(self, other: _Hist) -> _Hist:
        keys, inverse = np.unique(np.concatenate([self.keys, other.keys]), return_inverse=True)
        counts = np.zeros(len(keys), dtype=np.int64)
        np.add.at(counts, inverse, np.concatenate([self.counts, other.counts]))
        return _Hist(
            self.count + other.count,
            self.negative + other.negative,
            self.zero + other.zero,
            min(self.vmin, other.vmin),
            max(self.vmax, other.vmax),
            self.total + other.total,
            self.above + other.above,
            keys,
            counts,
        )

    def summary(self) -> WeightSummary:
        n = self.count
        edges = [min(0.0, self.vmax)] * (self.negative > 0) + [0.0] * (self.zero > 0)
        sizes = [self.negative] * (self.negative > 0) + [self.zero] * (self.zero > 0)
        edges += [10.0 ** ((int(k) + 1) / _BINS_PER_DECADE) for k in self.keys]
        sizes += [int(c) for c in self.counts]
        cum = np.cumsum(np.asarray(sizes, dtype=np.int64))
        quantiles = {}
        for q in WEIGHT_QUANTILES:
            at = int(np.searchsorted(cum, max(1, math.ceil(q * n - 1e-9))))
            quantiles[q] = min(max(edges[at], self.vmin), self.vmax) if n else math.nan
        share = [int(c) / n if n else math.nan for c in self.above]
        return WeightSummary(
            count=n,
            negative=self.negative,
            zero=self.zero,
            min=self.vmin if n else math.nan,
            max=self.vmax if n else math.nan,
            mean=self.total / n if n else math.nan,
            above=dict(zip(WEIGHT_THRESHOLDS, share, strict=True)),
            quantiles=quantiles,
            bins=tuple((int(k), int(c)) for k, c in zip(self.keys, self.counts, strict=True)),
        )


@dataclass(frozen=True)
class OffPolicyEstimate:
    """One estimator's estimate of the evaluation policy's value.

    ``low``/``high``: the bootstrap percentile interval at level ``ci`` (NaN
    when ``n_resamples=0``); ``ess``: the effective sample size
    ``(Σ v)² / Σ v²`` of the weights ``v`` the estimator puts on the logged
    rewards; ``notes``: counts of what the estimator did to the weights
    (rows clipped, rows switched to the reward model); ``weights``: the
    distribution of those weights (:class:`WeightSummary`; None on an
    estimate not made by :func:`off_policy`).
    """

    estimator: str
    estimate: float
    low: float
    high: float
    ess: float
    rows: int
    notes: Mapping[str, float] = field(default_factory=dict)
    weights: WeightSummary | None = None


def _what_is_wrong(d: Any, exc: Exception) -> str:
    """What an off-policy result read back lacks, in words (not an exception's repr)."""

    def json_type(v: Any) -> str:
        kinds = ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"))
        kinds += ((list, "an array"), (Mapping, "an object"))
        return next((name for t, name in kinds if isinstance(v, t)), "null")

    if not isinstance(d, Mapping):
        return f"found {json_type(d)}, not an object"
    missing = [k for k in ("estimates", "ci", "n_resamples", "seed", "notes") if k not in d]
    if missing:
        return f"found no {', '.join(repr(k) for k in missing)}"
    if not isinstance(d["estimates"], Mapping):
        return f"'estimates' is {json_type(d['estimates'])}, not an object of estimators"
    if isinstance(exc, KeyError):
        return f"an estimate has no {exc.args[0]!r}"
    return f"a value is not a number ({exc})"


@dataclass(frozen=True)
class OffPolicyResult:
    """What :func:`off_policy` returns: one :class:`OffPolicyEstimate` per
    estimator asked, the settings, and counted notes on the log
    (``rows``, ``contexts``, ``max_weight``, ``unsupported_mass``: the mean over
    logged rows of the evaluation policy's probability on actions never logged
    for the row's context, ``unsupported_contexts``: contexts with such mass;
    the last two only when the policy is a table)."""

    estimates: tuple[OffPolicyEstimate, ...]
    ci: float
    n_resamples: int
    seed: int
    notes: Mapping[str, float]

    def __getitem__(self, name: str) -> OffPolicyEstimate:
        for est in self.estimates:
            if est.estimator == name:
                return est
        raise KeyError(name)

    def to_frame(self) -> pd.DataFrame:
        """One row per estimator: estimate, low, high, ess, rows and the notes."""
        rows = [
            {
                "estimator": e.estimator,
                "estimate": e.estimate,
                "low": e.low,
                "high": e.high,
                "ess": e.ess,
                "rows": e.rows,
                **dict(e.notes),
            }
            for e in self.estimates
        ]
        return pd.DataFrame(rows).set_index("estimator")

    def to_dict(self) -> dict[str, Any]:
        """The estimates, settings and notes as plain Python values (NaN as
        None); each estimate's ``weights`` as :meth:`WeightSummary.to_dict`.
        :meth:`from_dict` reads it back."""
        num = _num
        return {
            "estimates": {
                e.estimator: {
                    "estimate": num(e.estimate),
                    "low": num(e.low),
                    "high": num(e.high),
                    "ess": num(e.ess),
                    "rows": e.rows,
                    **{k: num(v) for k, v in e.notes.items()},
                    **({"weights": e.weights.to_dict()} if e.weights is not None else {}),
                }
                for e in self.estimates
            },
            "ci": self.ci,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "notes": {k: num(v) for k, v in self.notes.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OffPolicyResult:
        """The result :meth:`to_dict` (or ``receval off-policy --json``) wrote.

        Example:
            >>> r = OffPolicyResult((OffPolicyEstimate("ips", 0.5, 0.4, 0.6, 9.0, 10),),
            ...                     0.95, 100, 0, {"rows": 10.0})
            >>> OffPolicyResult.from_dict(r.to_dict()) == r
            True
        """

        def f(x: Any) -> float:
            return math.nan if x is None else float(x)

        try:
            estimates = []
            for name, e in d["estimates"].items():
                fixed = {"estimate", "low", "high", "ess", "rows", "weights"}
                notes = {k: f(v) for k, v in e.items() if k not in fixed}
                weights = WeightSummary.from_dict(e["weights"]) if "weights" in e else None
                estimates.append(
                    OffPolicyEstimate(
                        str(name),
                        f(e["estimate"]),
                        f(e["low"]),
                        f(e["high"]),
                        f(e["ess"]),
                        int(e["rows"]),
                        notes,
                        weights,
                    )
                )
            notes = {k: f(v) for k, v in d["notes"].items()}
            return cls(
                tuple(estimates), float(d["ci"]), int(d["n_resamples"]), int(d["seed"]), notes
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                "expected an off-policy result as OffPolicyResult.to_dict writes it "
                f"(receval off-policy --json): estimates, ci, n_resamples, seed, notes; "
                f"{_what_is_wrong(d, exc)}",
                source="off_policy",
            ) from None

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        import json

        return json.dumps(self.to_dict(), indent=2)

    def to_markdown(self) -> str:
        """:meth:`to_frame` as a Markdown table."""
        frame = self.to_frame()
        head = ["estimator", *map(str, frame.columns)]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, row in frame.iterrows():
            cells = [str(name), *(f"{v:.6g}" for v in row.to_numpy(dtype=float))]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_latex(self) -> str:
        """:meth:`to_frame` as a LaTeX tabular."""
        frame = self.to_frame()
        head = ["estimator", *(str(c).replace("_", r"\_") for c in frame.columns)]
        lines = [r"\begin{tabular}{l" + "r" * len(frame.columns) + "}", " & ".join(head) + r" \\"]
        for name, row in frame.iterrows():
            cells = [str(name), *(f"{v:.6g}" for v in row.to_numpy(dtype=float))]
            lines.append(" & ".join(cells) + r" \\")
        return "\n".join([*lines, r"\end{tabular}"])

    def __str__(self) -> str:
        level = f"{self.ci:.0%}"
        lines = [f"{'estimator':<10} {'estimate':>10} {level + ' interval':>24} {'ess':>12}"]
        for e in self.estimates:
            interval = "-" if e.low != e.low else f"[{e.low:.6g}, {e.high:.6g}]"
            lines.append(f"{e.estimator:<10} {e.estimate:>10.6g} {interval:>24} {e.ess:>12.6g}")
        notes = ", ".join(f"{k} {v:.6g}" for k, v in self.notes.items())
        return "\n".join([*lines, notes]) if notes else "\n".join(lines)


# --------------------------------------------------------------------------- inputs


#: the files :func:`off_policy` read, by the name its errors give them ("logs", ...)
_FILES_READ: ContextVar[dict[str, Any] | None] = ContextVar("_FILES_READ", default=None)


@contextlib.contextmanager
def _located() -> Iterator[None]:
    """Within the block, an error of a row of a file read (``logs``,
    ``policy``, ...) names the file and its line."""
    read: dict[str, Any] = {}
    token = _FILES_READ.set(read)
    try:
        yield
    except InputError as exc:
        info = read.get(str(exc.source))
        if info is None:
            raise
        raise info.locate(exc) from None
    finally:
        _FILES_READ.reset(token)


def _frame(obj: Any, source: str, action: str = "action") -> pd.DataFrame:
    """A pandas frame of a table or of a file receval reads (Parquet, CSV/TSV,
    JSONL; every column kept, ``action`` the column the file must have)."""
    if isinstance(obj, (str, os.PathLike)):
        from receval.io.bandit_logs import read_bandit_file

        table, info = read_bandit_file(obj, action)
        read = _FILES_READ.get()
        if read is not None:  # an error of its rows then names the file and line
            read[source] = info
        return table.to_pandas()
    if isinstance(obj, pd.DataFrame):
        return obj.reset_index(drop=True)
    from receval.io.columns import is_table, to_arrow

    if is_table(obj):
        return to_arrow(obj, source).to_pandas()
    raise InputError(
        f"expected a pandas, polars or pyarrow table or a Parquet/CSV path; "
        f"got {type(obj).__name__}",
        source=source,
    )


def _with_ids(frame: pd.DataFrame, columns: Mapping[str, str], source: str) -> pd.DataFrame:
    """``frame`` with its id columns (column -> ``context`` / ``action``) under the
    id rule (:func:`receval.ids.canonical`: ``"1"`` is ``1``, as in every other
    input), a missing id an error naming its row."""
    out = frame.copy(deep=False)
    for col, role in columns.items():
        out[col] = id_rule.canonical(frame[col].to_numpy(), role, source)
    return out


def _one_kind(*columns: np.ndarray) -> list[np.ndarray]:
    """Id columns to be matched, of one kind: all as text when some are text
    (numbers then their decimal strings), as :func:`receval.ids.unify` does."""
    if len({id_rule.kind(c) for c in columns if len(c)}) > 1:
        return [id_rule.as_str(c) for c in columns]
    return list(columns)


def _column(frame: pd.DataFrame, names: Sequence[str], source: str, role: str) -> str:
    for name in names:
        if name in frame.columns:
            return name
    raise InputError(
        f"no {role} column: expected one named {' or '.join(repr(n) for n in names)}; "
        f"found {list(map(str, frame.columns))}",
        source=source,
        column=names[0],
    )


def _such(n: int) -> str:
    """``n`` such rows, in words: "1 such row", "2 such rows"."""
    return f"{n} such row" if n == 1 else f"{n} such rows"


def _numbers(frame: pd.DataFrame, col: str, source: str) -> np.ndarray:
    values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = int(bad[0])
        value = frame[col].iloc[row]
        found = "a missing value (empty or NaN)" if pd.isna(value) else repr(value)
        raise InputError(
            f"column {col!r} must hold finite numbers; found {found} ({_such(bad.size)})",
            source=source,
            row=row,
            column=col,
        )
    return values


def _check_probability(
    values: np.ndarray, col: str, source: str, *, zero_ok: bool, what: str
) -> None:
    bad = values < 0 if zero_ok else values <= 0
    bad |= values > 1
    idx = np.flatnonzero(bad)
    if idx.size:
        row = int(idx[0])
        found = values[row]
        why = (
            "the logging policy could not have taken this action"
            if found == 0 and not zero_ok
            else "a probability must lie in " + ("[0, 1]" if zero_ok else "(0, 1]")
        )
        raise InputError(
            f"{what} {col!r} is {found!r} ({why}); {_such(idx.size)}",
            source=source,
            row=row,
            column=col,
        )


@dataclass(frozen=True)
class _Rows:
    """Per logged row: context codes and keys, reward, weight, q̂ terms."""

    codes: np.ndarray  # int64 context code per row
    keys: np.ndarray  # 64-bit hash per distinct context
    reward: np.ndarray
    weight: np.ndarray
    q_logged: np.ndarray | None
    q_policy: np.ndarray | None
    notes: dict[str, float]
    slate_weights: Mapping[str, np.ndarray] = field(default_factory=dict)  # per slate estimator


def _policy_table(
    policy: pd.DataFrame,
    logs: pd.DataFrame,
    ctx: str,
    act: str,
    src: str,
) -> pd.DataFrame:
    """The policy as (context, action, probability) rows, checked."""
    pctx = _column(policy, [ctx], src, "context")
    pact = _column(policy, [act], src, "action")
    policy = _with_ids(policy, {pctx: "context", pact: "action"}, src)
    if "probability" in policy.columns:
        prob = _numbers(policy, "probability", src)
        _check_probability(prob, "probability", src, zero_ok=True, what="probability")
        table = pd.DataFrame(
            {"context": policy[pctx].to_numpy(), "action": policy[pact].to_numpy(), "p": prob}
        )
        dup = table.duplicated(["context", "action"], keep="first").to_numpy()
        if dup.any():
            row = int(np.flatnonzero(dup)[0])
            raise InputError(
                f"context {table['context'].iloc[row]!r} gives action "
                f"{table['action'].iloc[row]!r} a probability twice",
                source=src,
                row=row,
            )
        sums = table.groupby("context", sort=False)["p"].sum()
        off = np.abs(sums.to_numpy() - 1.0) > _SUM_TOL
        if off.any():
            where = int(np.flatnonzero(off)[0])
            raise InputError(
                f"the probabilities of context {sums.index[where]!r} sum to "
                f"{sums.iloc[where]!r}, expected 1 (within {_SUM_TOL:g}); "
                f"{int(off.sum())} such contexts",
                source=src,
                column="probability",
            )
        return table
    if "position" in policy.columns:
        pos = _numbers(policy, "position", src)
        order = np.lexsort((pos,))
        first = policy.iloc[order].drop_duplicates(pctx, keep="first")
        return pd.DataFrame(
            {
                "context": first[pctx].to_numpy(),
                "action": first[pact].to_numpy(),
                "p": np.ones(len(first)),
            }
        )
    raise InputError(
        "expected a policy table with columns (context, action, probability) or "
        f"(context, position, action) for a deterministic ranking; found {list(policy.columns)}",
        source=src,
    )


def _reward_model_table(model: Any, logs: pd.DataFrame | None, ctx: str, act: str) -> pd.DataFrame:
    """q̂ as (context?, action, q) rows: the given table, or the mean logged reward per action."""
    if model is None:
        assert logs is not None
        codes, actions = pd.factorize(logs[act].to_numpy(), sort=False)
        rewards = logs["__r"].to_numpy(dtype=np.float64)
        total = _sums_by(codes, rewards, len(actions))  # each action's in the order of its rewards
        q = total / np.bincount(codes, minlength=len(actions))
        return pd.DataFrame({"action": np.asarray(actions), "q": q})
    src = "reward_model"
    frame = _frame(model, src, act)
    mact = _column(frame, [act], src, "action")
    mrew = _column(frame, ["reward", "estimate"], src, "reward estimate")
    frame = _with_ids(frame, {mact: "action"} | ({ctx: "context"} if ctx in frame else {}), src)
    out = {"action": frame[mact].to_numpy(), "q": _numbers(frame, mrew, src)}
    if ctx in frame.columns:
        out = {"context": frame[ctx].to_numpy(), **out}
    return pd.DataFrame(out)


def _lookup_q(
    model: pd.DataFrame,
    contexts: np.ndarray,
    actions: np.ndarray,
    fallback: float,
    what: str,
    *,
    checked: bool = False,
) -> np.ndarray:
    """q̂(x, a) for each (context, action); a per-action model ignores x.
    ``checked``: the model's keys are known to be unique (pandas then does not
    check them again, a third of the merge's time)."""
    keys = ["context", "action"] if "context" in model.columns else ["action"]
    query = pd.DataFrame({"context": contexts, "action": actions})
    merged = query.merge(model, on=keys, how="left", validate=None if checked else "many_to_one")
    q = merged["q"].to_numpy(dtype=np.float64, copy=True)  # written below (pandas 3: read-only)
    missing = np.flatnonzero(np.isnan(q))
    if missing.size:
        if fallback == fallback:  # the built-in model: actions never logged get the mean reward
            q[missing] = fallback
        else:
            row = int(missing[0])
            raise InputError(
                f"the reward model has no estimate for context {contexts[row]!r}, "
                f"action {actions[row]!r} ({what}); {missing.size} such pairs",
                source="reward_model",
            )
    return q


@dataclass
class _Log:
    """A log read and checked: its frame, column names, rewards and contexts."""

    frame: pd.DataFrame
    ctx: str
    act: str
    reward: np.ndarray
    contexts: np.ndarray
    actions: np.ndarray
    codes: np.ndarray
    uniques: np.ndarray


def _read_log(logs: Any, columns: Mapping[str, str], *, order: str | None = None) -> _Log:
    """The log's frame and its context, action and reward columns, checked;
    ``order``: a position column to sort each slate by (slate logs)."""
    src = "logs"
    frame = _frame(logs, src, columns.get("action", "action"))
    ctx = _column(frame, [columns.get("context", "context"), "user"], src, "context")
    act = _column(frame, [columns.get("action", "action")], src, "action")
    rew = _column(frame, [columns.get("reward", "reward")], src, "reward")
    if len(frame) == 0:
        raise InputError("the log has no rows", source=src)
    reward = _numbers(frame, rew, src)
    frame = _with_ids(frame, {ctx: "context", act: "action"}, src)
    contexts = frame[ctx].to_numpy()
    codes, uniques = pd.factorize(contexts, use_na_sentinel=False)
    return _Log(
        frame, ctx, act, reward, contexts, frame[act].to_numpy(), np.asarray(codes), uniques
    )


def _array_policy(
    policy: Any, reward_model: Any, n: int, need_model: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """π(a_i|x_i) given per row, and the reward model's two arrays when needed."""
    p_eval = np.asarray(policy, dtype=np.float64)
    if p_eval.shape != (n,):
        raise InputError(
            f"expected one probability per logged row ({n}); "
            f"found an array of shape {p_eval.shape}",
            source="policy",
        )
    nonfinite = np.flatnonzero(~np.isfinite(p_eval))
    if nonfinite.size:
        raise InputError(
            f"probabilities must be finite numbers; found {p_eval[nonfinite[0]]!r}",
            source="policy",
            row=int(nonfinite[0]),
        )
    _check_probability(p_eval, "probability", "policy", zero_ok=True, what="probability")
    if not need_model:
        return p_eval, None, None
    if not (isinstance(reward_model, tuple) and len(reward_model) == 2):
        raise OptionError(
            "reward_model",
            type(reward_model).__name__ if reward_model is not None else None,
            expected="(q_logged, q_policy): two arrays aligned with the log "
            "(q̂(x_i, a_i) and Σ_a π(a|x_i) q̂(x_i, a)) when the policy is an array",
        )
    q_logged, q_policy = (np.asarray(a, dtype=np.float64) for a in reward_model)
    for name, arr in (("q_logged", q_logged), ("q_policy", q_policy)):
        if arr.shape != (n,) or not np.isfinite(arr).all():
            raise InputError(
                f"expected {n} finite numbers, one per logged row; found shape {arr.shape}",
                source=f"reward_model {name}",
            )
    return p_eval, q_logged, q_policy


def _uncovered(log: _Log, known: pd.Index, what: str) -> None:
    """An error for the first logged context the policy says nothing of."""
    absent = ~pd.Index(log.uniques).isin(known)
    if absent.any():
        first = log.uniques[int(np.flatnonzero(absent)[0])]
        raise InputError(
            f"the policy {what} for context {first!r} of the log; "
            f"{int(absent.sum())} such contexts",
            source="policy",
            column=log.ctx,
        )


def _unsupported(log: _Log, p_eval: np.ndarray) -> dict[str, float]:
    """The policy's mass on actions never logged for a context (1 − the sum of
    its probabilities of the distinct logged actions; its probabilities sum to
    1): the mean over logged rows, and the number of contexts with any."""
    act_codes, act_uniques = pd.factorize(log.actions, sort=True)  # ids of one kind
    n_ctx, n_act = len(log.uniques), len(act_uniques)
    pair = log.codes.astype(np.int64) * n_act + act_codes
    if n_ctx * n_act <= 1 << 26:  # a dense table: each pair written once, whatever its repeats
        mass = np.zeros(n_ctx * n_act)
        mass[pair] = p_eval
        supported = mass.reshape(n_ctx, n_act).sum(axis=1)
    else:
        _, first = np.unique(pair, return_index=True)
        supported = np.bincount(log.codes[first], weights=p_eval[first], minlength=n_ctx)
    per_ctx = np.clip(1.0 - supported, 0.0, None)
    return {
        "unsupported_mass": _sum(per_ctx[log.codes]) / len(log.codes),
        "unsupported_contexts": float((per_ctx > _SUM_TOL).sum()),
    }


@dataclass(frozen=True)
class _Prepared:
    """A policy table read and checked once, with the reward model's
    ``Σ_a π(a|x) q̂(x, a)`` per context (for a log read in batches)."""

    table: pd.DataFrame
    known: pd.Index
    model: pd.DataFrame | None
    q_per_context: pd.Series | None


def _prepare(table: pd.DataFrame, model: pd.DataFrame | None, fallback: float) -> _Prepared:
    known = pd.Index(table["context"].unique())
    if model is None:
        return _Prepared(table, known, None, None)
    q_table = _lookup_q(
        model,
        table["context"].to_numpy(),
        table["action"].to_numpy(),
        fallback,
        "an action of the policy",
    )
    codes, contexts = pd.factorize(table["context"].to_numpy(), sort=False)
    expected = _sums_by(codes, table["p"].to_numpy() * q_table, len(contexts))
    return _Prepared(table, known, model, pd.Series(expected, index=np.asarray(contexts)))


def _model_terms(log: _Log, prepared: _Prepared, fallback: float) -> tuple[np.ndarray, np.ndarray]:
    """q̂(x_i, a_i) and Σ_a π(a|x_i) q̂(x_i, a) per logged row."""
    assert prepared.model is not None and prepared.q_per_context is not None
    q_logged = _lookup_q(
        prepared.model, log.contexts, log.actions, fallback, "a logged action", checked=True
    )  # checked by _prepare's lookup, on the same model
    q_policy = prepared.q_per_context.reindex(log.uniques).to_numpy()[log.codes]
    return q_logged, q_policy


def _match_kinds(log: _Log, *tables: pd.DataFrame) -> None:
    """The log's ids and the tables' (a policy, a reward model, a ranking) of
    one kind, role by role, so that ``1`` in one and ``"1"`` in the other
    match, and ``"a"`` and ``1`` meet as text (the id rule, docs/inputs.md)."""
    for role, col in (("context", log.ctx), ("action", log.act)):
        names = {"context": ("context",), "action": ("action", "chosen")}[role]
        where = [(t, n) for t in tables for n in names if n in t.columns]
        mine = log.contexts if role == "context" else log.actions
        found = _one_kind(mine, *(t[n].to_numpy() for t, n in where))
        if found[0] is mine:
            continue  # one kind already
        for (t, n), values in zip(where, found[1:], strict=True):
            t[n] = values
        log.frame[col] = found[0]
        if role == "context":
            log.contexts, log.uniques = found[0], id_rule.as_str(np.asarray(log.uniques))
        else:
            log.actions = found[0]


def _prepared_for(log: _Log, policy: Any, reward_model: Any, need_model: bool) -> _Prepared:
    """The policy table (and reward model) of an in-memory log."""
    table = _policy_table(_frame(policy, "policy", log.act), log.frame, log.ctx, log.act, "policy")
    if not need_model:
        _match_kinds(log, table)
        return _prepare(table, None, float("nan"))
    frame = log.frame.assign(__r=log.reward)
    model = _reward_model_table(reward_model, frame, log.ctx, log.act)
    _match_kinds(log, table, model)
    fallback = _sum(log.reward) / len(log.reward) if reward_model is None else float("nan")
    return _prepare(table, model, fallback)


def _rows(
    logs: Any,
    policy: Any,
    reward_model: Any,
    need_model: bool,
    columns: Mapping[str, str],
    *,
    support: bool = True,
    prepared: _Prepared | None = None,
) -> _Rows:
    """The per-row terms of the per-action estimators (``support``: with the
    notes on the policy's mass on actions never logged)."""
    log = _read_log(logs, columns)
    prop = _column(log.frame, [columns.get("propensity", "propensity")], "logs", "propensity")
    propensity = _numbers(log.frame, prop, "logs")
    _check_probability(propensity, prop, "logs", zero_ok=False, what="propensity")
    notes: dict[str, float] = {"rows": float(len(log.frame)), "contexts": float(len(log.uniques))}
    if isinstance(policy, (np.ndarray, list, tuple, pd.Series)):
        p_eval, q_logged, q_policy = _array_policy(policy, reward_model, len(log.frame), need_model)
    else:
        if prepared is None:
            prepared = _prepared_for(log, policy, reward_model, need_model)
        table, known = prepared.table, prepared.known
        _uncovered(log, known, "gives no probabilities")
        query = pd.DataFrame({"context": log.contexts, "action": log.actions})
        # no pair twice in the table: _policy_table refuses one (pandas need not check)
        merged = query.merge(table, on=["context", "action"], how="left")
        p_eval = merged["p"].fillna(0.0).to_numpy(dtype=np.float64)
        if support:
            notes |= _unsupported(log, p_eval)
        q_logged = q_policy = None
        if need_model:
            fallback = _sum(log.reward) / len(log.reward) if reward_model is None else math.nan
            q_logged, q_policy = _model_terms(log, prepared, fallback)
    weight = p_eval / propensity
    notes["max_weight"] = float(weight.max())
    codes, keys = np.asarray(log.codes, dtype=np.int64), user_keys(log.uniques)
    # the rows in an order of their own (context key, then reward, weight, q̂): every
    # sum over them then depends on neither the order of the log's rows nor the
    # writing of its ids; contexts ranked by key (a key shared: one group, by value)
    rank = np.unique(keys, return_inverse=True)[1].reshape(-1)
    terms = [] if q_logged is None else [q_logged]  # q_policy is one value per context
    order = _grouped_order(rank[codes], len(keys), log.reward, weight, *terms)
    return _Rows(
        codes=codes[order],
        keys=keys,
        reward=log.reward[order],
        weight=weight[order],
        q_logged=None if q_logged is None else q_logged[order],
        q_policy=None if q_policy is None else q_policy[order],
        notes=notes,
    )


@dataclass
class _Slates:
    """A slate log sorted by slate and position."""

    log: _Log
    position: np.ndarray
    slates: np.ndarray  # slate code per row
    slate_col: str
    order: np.ndarray  # sorted row -> row of the log as given
    first: np.ndarray  # the first row of each slate


def _read_slates(logs: Any, names: Sequence[str], columns: Mapping[str, str]) -> _Slates:
    """The slate log, checked (positions present, none twice in a slate) and sorted."""
    log = _read_log(logs, columns)
    frame, src = log.frame, "logs"
    poscol = columns.get("position", "position")
    if poscol not in frame.columns:
        raise InputError(
            f"the slate estimators ({', '.join(names)}) need the position of each "
            f"logged action: no column {poscol!r}; found {list(map(str, frame.columns))}",
            source=src,
            column=poscol,
        )
    position = _numbers(frame, poscol, src)
    slate_col = columns.get("slate", "slate")
    slate_col = slate_col if slate_col in frame.columns else log.ctx
    slates = pd.factorize(frame[slate_col].to_numpy(), use_na_sentinel=False)[0]
    dup = pd.DataFrame({"s": slates, "p": position}).duplicated().to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise InputError(
            f"position {position[row]:g} appears twice in slate {frame[slate_col].iloc[row]!r}",
            source=src,
            row=row,
            column=poscol,
        )
    order = np.lexsort((position, slates))
    frame = frame.iloc[order].reset_index(drop=True)
    contexts = log.contexts[order]
    codes, uniques = pd.factorize(contexts, use_na_sentinel=False)
    sorted_log = _Log(
        frame,
        log.ctx,
        log.act,
        log.reward[order],
        contexts,
        log.actions[order],
        np.asarray(codes),
        uniques,
    )
    slates = slates[order]
    first = np.ones(len(frame), dtype=bool)
    first[1:] = slates[1:] != slates[:-1]
    return _Slates(sorted_log, position[order], slates, slate_col, order, first)


def _slate_policy_arrays(
    policy: Mapping[str, Any], needed: Sequence[str], s: _Slates
) -> dict[str, np.ndarray]:
    """The evaluation policy's probabilities given per logged row, sorted as the log."""
    n = len(s.order)
    evals = {}
    for key in needed:
        if key not in policy:
            raise InputError(
                f"the slate estimators asked need the evaluation policy's {key!r} "
                f"probabilities per logged row; the mapping has {sorted(policy)}",
                source="policy",
            )
        arr = np.asarray(policy[key], dtype=np.float64)
        if arr.shape != (n,) or not np.isfinite(arr).all():
            raise InputError(
                f"expected {n} finite probabilities for {key!r}, one per logged row; "
                f"found shape {arr.shape}",
                source="policy",
            )
        _check_probability(arr, key, "policy", zero_ok=True, what="probability")
        evals[key] = arr[s.order]
    return evals


def _ranking_table(policy: Any, ctx: str, act: str, poscol: str) -> pd.DataFrame:
    """A deterministic ranking as (context, position, chosen) rows, checked."""
    pframe = _frame(policy, "policy", act)
    pctx = _column(pframe, [ctx], "policy", "context")
    pact = _column(pframe, [act], "policy", "action")
    ppos = _column(pframe, [poscol], "policy", "position")
    pframe = _with_ids(pframe, {pctx: "context", pact: "action"}, "policy")
    ranking = pd.DataFrame(
        {
            "context": pframe[pctx].to_numpy(),
            "position": _numbers(pframe, ppos, "policy"),
            "chosen": pframe[pact].to_numpy(),
        }
    )
    dup = ranking.duplicated(["context", "position"]).to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise InputError(
            f"the ranking of context {ranking['context'].iloc[row]!r} has position "
            f"{ranking['position'].iloc[row]:g} twice",
            source="policy",
            row=row,
        )
    return ranking


def _slate_ranking(ranking: pd.DataFrame, s: _Slates) -> dict[str, np.ndarray]:
    """A deterministic ranking's probabilities of the logged actions: 1 where
    they match it (at the position, up to it, in the whole slate), else 0."""
    log = s.log
    _uncovered(log, pd.Index(ranking["context"].unique()), "ranks nothing")
    query = pd.DataFrame({"context": log.contexts, "position": s.position})
    chosen = query.merge(ranking, on=["context", "position"], how="left")["chosen"]
    match = (chosen.to_numpy() == log.actions).astype(np.float64)
    misses = pd.Series(1.0 - match).groupby(s.slates).cumsum().to_numpy()
    return {
        "probability": match,
        "cascade": (misses == 0).astype(np.float64),
        "slate": pd.Series(match).groupby(s.slates).transform("min").to_numpy(),
    }


_SLATE_PROPENSITY_WHAT = {
    "propensity": "probability of each action at its position",
    "propensity_cascade": "probability of each slate's first positions up to each row (cascade)",
    "propensity_slate": "probability of each whole slate",
}


def _slate_propensity(name: str, s: _Slates, columns: Mapping[str, str]) -> np.ndarray:
    """The logging propensity estimator ``name`` needs, checked."""
    frame = s.log.frame
    role = _SLATE_PROPENSITY[name]
    pcol = columns.get(role, role)
    if pcol not in frame.columns:
        raise InputError(
            f"estimator {name!r} needs the logging policy's {_SLATE_PROPENSITY_WHAT[role]}: "
            f"no column {pcol!r}",
            source="logs",
            column=pcol,
        )
    try:
        prop = _numbers(frame, pcol, "logs")
        _check_probability(prop, pcol, "logs", zero_ok=False, what="propensity")
    except InputError as exc:  # the row as the log gives it, not as sorted
        assert exc.row is not None
        row = int(s.order[exc.row])
        raise InputError(exc.reason, source=exc.source, row=row, column=exc.column) from None
    if name == "sips":
        by_slate = pd.Series(prop).groupby(s.slates)
        spread = by_slate.transform("max") - by_slate.transform("min")
        if (spread.to_numpy() > 0).any():
            row = int(np.flatnonzero(spread.to_numpy() > 0)[0])
            raise InputError(
                f"{pcol!r} must be the same on every row of a slate; slate "
                f"{frame[s.slate_col].iloc[row]!r} has several values",
                source="logs",
                row=int(s.order[row]),
                column=pcol,
            )
    return prop


def _slate_rows(
    logs: Any,
    policy: Any,
    names: Sequence[str],
    columns: Mapping[str, str],
    *,
    ranking: pd.DataFrame | None = None,
) -> _Rows:
    """The per-row terms of the slate estimators (rows sorted by slate and
    position); ``ranking``: the policy's :func:`_ranking_table`, read once."""
    s = _read_slates(logs, names, columns)
    needed = sorted({_SLATE_POLICY[n] for n in names})
    if isinstance(policy, Mapping):
        evals = _slate_policy_arrays(policy, needed, s)
    else:
        if ranking is None:
            poscol = columns.get("position", "position")
            ranking = _ranking_table(policy, s.log.ctx, s.log.act, poscol)
        _match_kinds(s.log, ranking)
        evals = _slate_ranking(ranking, s)
    weights: dict[str, np.ndarray] = {}
    for name in names:
        w = evals[_SLATE_POLICY[name]] / _slate_propensity(name, s, columns)
        if name == "pi":
            # Swaminathan et al. 2017 with a logging policy that factorises over positions
            w = pd.Series(w - 1.0).groupby(s.slates).transform("sum").to_numpy() + 1.0
        weights[name] = w
    log = s.log
    notes = {
        "rows": float(len(log.frame)),
        "slates": float(s.first.sum()),
        "contexts": float(len(log.uniques)),
        "max_weight": float(max(float(w.max()) for w in weights.values())),
    }
    return _Rows(
        codes=np.asarray(log.codes, dtype=np.int64),
        keys=user_keys(log.uniques),
        reward=log.reward,
        weight=s.first.astype(np.float64),
        q_logged=None,
        q_policy=None,
        notes=notes,
        slate_weights=weights,
    )


# --------------------------------------------------------------------------- estimators


def _columns_of(name: str, d: _Rows, clip: float | None, tau: float | None) -> np.ndarray:
    """The per-row columns whose sums make up estimator ``name`` (see :func:`_finish`)."""
    ones = np.ones_like(d.reward)
    w = d.weight
    if name in SLATE_ESTIMATORS:  # d.weight: 1 on the first row of each slate
        ws = d.slate_weights[name]
        return np.stack([w, ws * d.reward, ws])
    wc = np.minimum(w, clip) if clip is not None else w
    if name == "ips":
        return np.stack([ones, wc * d.reward, wc])
    if name == "snips":
        return np.stack([w, w * d.reward, w])
    assert d.q_logged is not None and d.q_policy is not None
    resid = d.reward - d.q_logged
    if name == "dm":
        return np.stack([ones, d.q_policy, ones])
    if name == "dr":
        return np.stack([ones, d.q_policy + wc * resid, wc])
    if name == "switch-dr":
        assert tau is not None
        ws = np.where(w <= tau, w, 0.0)
        return np.stack([ones, d.q_policy + ws * resid, ws])
    if name == "sndr":
        return np.stack([ones, d.q_policy, w, w * resid, w])
    raise AssertionError(name)


def _finish(name: str, sums: np.ndarray) -> np.ndarray:
    """The estimate from the column sums (last axis: columns)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "sndr":
            return sums[..., 1] / sums[..., 0] + sums[..., 3] / sums[..., 2]
        return sums[..., 1] / sums[..., 0]


@dataclass
class _Sums:
    """An estimator's sums over rows, and per context (for the bootstrap); the
    sums of two parts of a log add up, contexts matched by their 64-bit key."""

    totals: np.ndarray  # per column of _columns_of
    square: float  # Σ v² of the weights
    keys: np.ndarray | None  # one per context (None: no bootstrap)
    per_context: np.ndarray | None  # (columns × contexts) sums
    rows: int
    counts: dict[str, float]
    weights: _Hist  # the distribution of the weights v

    def __add__(self, other: _Sums) -> _Sums:
        keys = per_context = None
        if self.keys is not None and other.keys is not None:
            assert self.per_context is not None and other.per_context is not None
            keys, inverse = np.unique(np.concatenate([self.keys, other.keys]), return_inverse=True)
            both = np.concatenate([self.per_context, other.per_context], axis=1)
            per_context = np.stack(
                [np.bincount(inverse, weights=c, minlength=len(keys)) for c in both]
            )
        return _Sums(
            self.totals + other.totals,
            self.square + other.square,
            keys,
            per_context,
            self.rows + other.rows,
            {k: v + other.counts[k] for k, v in self.counts.items()},
            self.weights + other.weights,
        )


def _boots(parts: Sequence[_Sums], n_resamples: int, seed: int) -> list[np.ndarray]:
    """Each part's (resamples × columns) sums, each context weighted by its
    Poisson(1) count (:func:`_boot_together`). Parts with as many contexts
    share their draws, as many at a time as hold :data:`_SHARED_VALUES` sums
    per context (each part's sums the same bits as alone)."""
    tables: list[np.ndarray] = []
    runs: dict[int, list[list[int]]] = {}  # by number of contexts: parts drawn together
    for i, part in enumerate(parts):
        assert part.per_context is not None
        tables.append(part.per_context)
        mine = runs.setdefault(part.per_context.shape[1], [[]])
        if mine[-1] and sum(tables[j].size for j in mine[-1]) + tables[i].size > _SHARED_VALUES:
            mine.append([])
        mine[-1].append(i)
    out = [np.empty(0)] * len(parts)
    for run in (run for mine in runs.values() for run in mine):
        sums = _boot_together([tables[j] for j in run], n_resamples, seed)
        for i, boot in zip(run, sums, strict=True):
            out[i] = boot
    return out


def _boot_together(tables: Sequence[np.ndarray], n_resamples: int, seed: int) -> list[np.ndarray]:
    """The bootstrap's sums of (columns × contexts) sums per context, all of
    as many contexts, the contexts taken a block at a time.

    Each table's contexts are put in the order of their sums first, and the
    Poisson counts are drawn for those positions: the interval depends on
    neither the rows' order nor how the ids are written (1, "1" or "u1";
    contexts with equal sums are interchangeable). The counts are a hash of
    the seed, the position and the resample, the same for every table: each
    block's are drawn once for all of them."""
    values = [t[:, np.lexsort(t[::-1])] for t in tables]
    outs = [np.zeros((n_resamples, len(v))) for v in values]
    width = values[0].shape[1]
    positions = user_keys(np.arange(width, dtype=np.int64))
    step = max(1, _BLOCK_VALUES // n_resamples)
    for lo in range(0, width, step):
        w = poisson_weights(positions[lo : lo + step], n_resamples, seed)
        for out, v in zip(outs, values, strict=True):
            out += w @ v[:, lo : lo + step].T
    return outs


_BLOCK_VALUES = 1 << 21  # Poisson weights drawn at a time (resamples × contexts)
#: per-context sums sorted at a time, of the parts that share their Poisson draws (128 MB)
_SHARED_VALUES = 1 << 24


def _weight_kind(name: str, clip: float | None) -> str:
    """Estimators with this kind put the same weights on the rows of a log."""
    if name in ("ips", "dr"):
        return "raw" if clip is None else "clipped"
    return {"snips": "raw", "sndr": "raw", "dm": "ones"}.get(name, name)


def _sums(
    name: str,
    d: _Rows,
    clip: float | None,
    tau: float | None,
    n_resamples: int,
    seed: int,
    hists: dict[str, _Hist] | None = None,
) -> _Sums:
    """Estimator ``name``'s sums over the rows of ``d``: the columns, the
    squared weights and, for the bootstrap, the columns' sums per context;
    ``hists``: the weights' summaries of ``d`` already made, by kind."""
    cols = _columns_of(name, d, clip, tau)
    v = cols[-1]
    keys = per_ctx = None
    if n_resamples:
        keys = d.keys
        per_ctx = np.stack([np.bincount(d.codes, weights=c, minlength=len(keys)) for c in cols])
    counts: dict[str, float] = {}
    if clip is not None and name in ("ips", "dr"):
        counts["clipped_rows"] = float((d.weight > clip).sum())
    if name == "switch-dr":
        counts["switched_rows"] = float((d.weight > float(tau or 0)).sum())
    kind = _weight_kind(name, clip)
    hist = hists.get(kind) if hists is not None else None
    if hist is None:
        hist = _Hist.of(v)
        if hists is not None:
            hists[kind] = hist
    return _Sums(cols.sum(axis=1), float((v * v).sum()), keys, per_ctx, len(d.reward), counts, hist)


def _sum(values: np.ndarray) -> float:
    """A sum over the log's rows in the order of the values, so that it does
    not depend on the order of the rows (nor do the estimates and ess made of it)."""
    return float(np.sort(values).sum())


def _sums_by(codes: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Each group's sum of ``values`` (``codes``: its group, in ``0..n-1``), its
    rows taken in the order of their values (:func:`_grouped_order`), so that
    any order of the rows gives the same sums."""
    order = _grouped_order(codes, n, values)
    return np.bincount(codes[order], weights=values[order], minlength=n)


def _grouped_order(groups: np.ndarray, n: int, *values: np.ndarray) -> np.ndarray:
    """The rows in an order of their own: by group (``groups``: ints in
    ``0..n-1``), then by ``values`` (float64 columns, the first the most
    significant): the permutation ``np.lexsort((*reversed(values), groups))``
    gives, bit for bit.

    Why it is the rows' own: rows equal in their group and every value, the
    only ones whose places depend on the order they came in (both sorts are
    stable), are interchangeable in any sum of their values, so a sum that
    follows this order (pairwise, or one per group) gives the same bits
    however the rows were ordered. Values are equal as NumPy sorts them:
    ``-0.0`` is ``0.0`` (no sum tells them apart), NaN is NaN and comes last.

    The compiled pass (``receval._native.group_order``: a counting pass by
    group, then a stable sort of each group's rows; about 5x faster than
    ``np.lexsort`` on 1M rows of 20,000 contexts, 32 bytes a row of scratch)
    for up to three columns; else ``np.lexsort``.
    """
    group_order = getattr(NATIVE, "group_order", None)
    if group_order is not None and len(values) <= 3:
        out = np.empty(len(groups), dtype=np.int64)
        keys = [np.ascontiguousarray(v, dtype=np.float64) for v in values]
        status = group_order(np.ascontiguousarray(groups, dtype=np.int64), n, out, *keys)
        if status == 0:
            return out
        if status == 5:
            raise MemoryError("off_policy: no memory to order the rows by context")
        raise AssertionError(f"group_order: status {status} (a group outside 0..{n - 1})")
    return np.lexsort((*values[::-1], groups))


def _estimate(name: str, sums: _Sums, ci: float, boot_sums: np.ndarray | None) -> OffPolicyEstimate:
    """The estimate, interval and effective sample size from the sums and the
    bootstrap's sums (:func:`_boots`; None: no interval)."""
    sv = float(sums.totals[-1])
    ess = sv * sv / sums.square if sums.square else 0.0
    low = high = float("nan")
    if boot_sums is not None:
        boot = _finish(name, boot_sums)
        boot = boot[np.isfinite(boot)]
        if boot.size:
            low, high = quantile_interval(boot, 1.0 - ci)
    estimate = float(_finish(name, sums.totals))
    return OffPolicyEstimate(
        name, estimate, low, high, ess, sums.rows, sums.counts, sums.weights.summary()
    )


def _stream(
    logs: Any,
    policy: Any,
    reward_model: Any,
    names: Sequence[str],
    columns: Mapping[str, str],
    batch_rows: int,
    settings: tuple[float | None, float | None, int, int],
) -> tuple[dict[str, _Sums], dict[str, float]]:
    """The sums of a Parquet log read ``batch_rows`` rows at a time, in one pass."""
    if not isinstance(logs, (str, os.PathLike)):
        raise OptionError(
            "batch_rows", batch_rows, expected="None unless the log is a Parquet file's path"
        )
    if isinstance(policy, (np.ndarray, list, tuple, pd.Series, Mapping)):
        raise OptionError("batch_rows", batch_rows, expected="None with a policy given as arrays")
    if any(n in SLATE_ESTIMATORS for n in names):
        return _stream_slates(logs, policy, names, columns, batch_rows, settings)
    need_model = bool(_NEEDS_MODEL & set(names))
    if need_model and (reward_model is None or isinstance(reward_model, tuple)):
        raise OptionError(
            "reward_model",
            reward_model,
            expected="a table of reward estimates when the log is read in batches "
            "(the built-in model needs a pass of its own)",
        )
    from receval.io.bandit_logs import iter_bandit_batches

    act = columns.get("action", "action")
    ctx = columns.get("context", "context")
    policy_frame = _frame(policy, "policy", act)
    if ctx not in policy_frame.columns and "user" in policy_frame.columns:
        ctx = "user"
    table = _policy_table(policy_frame, policy_frame, ctx, act, "policy")
    model = None
    if need_model:
        model = _reward_model_table(_frame(reward_model, "reward_model", act), None, ctx, act)
    prepared = _prepare(table, model, float("nan"))
    total: dict[str, _Sums] = {}
    notes: dict[str, float] = {"rows": 0.0, "max_weight": 0.0}
    offset = 0
    for batch in iter_bandit_batches(logs, batch_rows, act):
        frame = batch.to_pandas()
        try:
            d = _rows(
                frame, None, reward_model, need_model, columns, support=False, prepared=prepared
            )
        except InputError as exc:
            if exc.row is None or exc.source != "logs":
                raise
            raise InputError(
                exc.reason, source=str(logs), row=exc.row + offset, column=exc.column
            ) from None
        hists: dict[str, _Hist] = {}
        for name in names:
            part = _sums(name, d, *settings, hists)
            total[name] = total[name] + part if name in total else part
        notes["rows"] += d.notes["rows"]
        notes["max_weight"] = max(notes["max_weight"], d.notes["max_weight"])
        offset += len(frame)
    if not total:
        raise InputError("the log has no rows", source=str(logs))
    return total, notes


def _offset(exc: InputError, logs: Any, offset: int) -> InputError:
    """The error of a batch with the row counted from the file's first row."""
    if exc.row is None or exc.source != "logs":
        return exc
    return InputError(exc.reason, source=str(logs), row=exc.row + offset, column=exc.column)


def _stream_slates(
    logs: Any,
    policy: Any,
    names: Sequence[str],
    columns: Mapping[str, str],
    batch_rows: int,
    settings: tuple[float | None, float | None, int, int],
) -> tuple[dict[str, _Sums], dict[str, float]]:
    """The sums of the slate estimators over a Parquet slate log read
    ``batch_rows`` rows at a time, in one pass.

    Each slate's rows must be next to each other in the file (any order within
    the slate): the rows of the last slate of a batch wait for the next batch,
    so every slate is computed whole, as :func:`_slate_rows` computes it on the
    whole log; a slate seen again after other slates is an error. Memory: one
    batch, the longest slate, the policy, and a 64-bit key per slate seen."""
    from receval.io.bandit_logs import iter_bandit_batches

    act = columns.get("action", "action")
    poscol = columns.get("position", "position")
    total: dict[str, _Sums] = {}
    notes: dict[str, float] = {"rows": 0.0, "slates": 0.0, "max_weight": -math.inf}
    ranking: pd.DataFrame | None = None
    seen = np.empty(0, dtype=np.uint64)  # the keys of the slates done, sorted
    pending: pd.DataFrame | None = None  # the rows of the last slate of the batch before
    start = 0  # the file row of the first row of ``pending``

    def run(chunk: pd.DataFrame, start: int) -> None:
        nonlocal ranking, seen
        ctx = _column(chunk, [columns.get("context", "context"), "user"], "logs", "context")
        scol = columns.get("slate", "slate")
        scol = scol if scol in chunk.columns else ctx
        ids = chunk[scol].to_numpy()
        codes, uniques = pd.factorize(ids, use_na_sentinel=False)
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        keys = np.sort(user_keys(uniques))
        at = np.minimum(np.searchsorted(seen, keys), max(len(seen) - 1, 0))
        again = seen[at] == keys if len(seen) else np.zeros(len(keys), dtype=bool)
        if len(starts) != len(uniques) or again.any():
            if again.any():
                row = int(np.flatnonzero(np.isin(user_keys(ids), keys[again]))[0])
            else:
                row = int(starts[np.flatnonzero(pd.Index(codes[starts]).duplicated())[0]])
            found = ids[row].item() if isinstance(ids[row], np.generic) else ids[row]
            raise InputError(
                f"slate {found!r} has rows apart from each other (again at this row): "
                "reading a slate log in batches needs each slate's rows next to each "
                "other; sort the file by slate, or read it whole (batch_rows=None)",
                source=str(logs),
                row=row + start,
                column=scol,
            )
        seen = np.sort(np.concatenate([seen, keys]))  # keys are new: no repeats
        if ranking is None and not isinstance(policy, Mapping):
            ranking = _ranking_table(policy, ctx, act, poscol)
        try:
            d = _slate_rows(chunk, policy, names, columns, ranking=ranking)
        except InputError as exc:
            raise _offset(exc, logs, start) from None
        hists: dict[str, _Hist] = {}
        for name in names:
            part = _sums(name, d, *settings, hists)
            total[name] = total[name] + part if name in total else part
        notes["rows"] += d.notes["rows"]
        notes["slates"] += d.notes["slates"]
        notes["max_weight"] = max(notes["max_weight"], d.notes["max_weight"])

    for batch in iter_bandit_batches(logs, batch_rows, act):
        frame = batch.to_pandas()
        if pending is not None:
            frame = pd.concat([pending, frame], ignore_index=True)
        if not len(frame):
            continue
        ctx = _column(frame, [columns.get("context", "context"), "user"], "logs", "context")
        scol = columns.get("slate", "slate")
        ids = frame[scol if scol in frame.columns else ctx].to_numpy()
        codes = pd.factorize(ids, use_na_sentinel=False)[0]
        differ = np.flatnonzero(codes != codes[-1])
        cut = int(differ[-1]) + 1 if differ.size else 0  # the last slate's run starts here
        if cut:
            run(frame.iloc[:cut].reset_index(drop=True), start)
            start += cut
        pending = frame.iloc[cut:].reset_index(drop=True)
    if pending is not None and len(pending):
        run(pending, start)
    if not total:
        raise InputError("the log has no rows", source=str(logs))
    return total, notes


def off_policy(
    logs: Any,
    policy: Any,
    estimators: Sequence[str] = ("ips", "snips", "dm", "dr"),
    *,
    reward_model: Any = None,
    clip: float | None = None,
    switch_tau: float | None = None,
    ci: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    columns: Mapping[str, str] | None = None,
    batch_rows: int | None = None,
) -> OffPolicyResult:
    """Estimate an evaluation policy's value from logged bandit feedback.

    Formulas (``w_i = π(a_i|x_i) / p_i``, ``q̂`` the reward model; see the
    module docstring and docs/off-policy.md for sources and assumptions):

    - ``dm``: ``(1/n) Σ_i Σ_a π(a|x_i) q̂(x_i, a)`` (direct method)
    - ``ips``: ``(1/n) Σ_i min(w_i, clip) r_i`` (inverse propensity scoring)
    - ``snips``: ``Σ_i w_i r_i / Σ_i w_i`` (self-normalised IPS)
    - ``dr``: ``(1/n) Σ_i [q̂π_i + min(w_i, clip) (r_i − q̂(x_i, a_i))]`` (Dudík et al. 2011)
    - ``sndr``: ``(1/n) Σ_i q̂π_i + Σ_i w_i (r_i − q̂(x_i, a_i)) / Σ_i w_i``
    - ``switch-dr``: DR with the weights above ``switch_tau`` set to 0 (Wang et al. 2017)
    - slates (``S`` slates, ``r_sl`` the reward at position ``l``): ``iips``
      ``(1/S) Σ Σ_l w_sl r_sl``; ``rips`` the same with the ratio of the first
      ``l`` actions' probabilities; ``sips`` with the whole slate's; ``pi``
      ``(1/S) Σ_s (Σ_l w_sl − L_s + 1) Σ_l r_sl`` (Swaminathan et al. 2017,
      a logging policy independent per position)

    Args:
        logs: a pandas/polars/pyarrow table or a Parquet/CSV path with columns
            ``context`` (or ``user``), ``action``, ``reward`` and ``propensity``
            (the logging policy's probability of the logged action, in (0, 1]).
        policy: the evaluation policy: a table of (context, action, probability)
            (each context's probabilities summing to 1), a table of
            (context, position, action) for a deterministic ranking (its first
            position is the action chosen), or an array with
            ``π(a_i | x_i)`` per logged row. For the slate estimators: a
            (context, position, action) ranking, or a mapping of arrays aligned
            with the log: ``probability`` (of the logged action at its position;
            iips, pi), ``cascade`` (of the logged actions up to the row's
            position; rips), ``slate`` (of the whole logged slate; sips).
        estimators: names among ``dm, ips, snips, dr, sndr, switch-dr``, or among
            the slate estimators ``iips, rips, sips, pi`` (not both). Slate logs
            have one row per (slate, position): a ``position`` column, a ``slate``
            column (default: one slate per context), and the logging policy's
            ``propensity`` (of the action at its position; iips, pi),
            ``propensity_cascade`` (rips) and ``propensity_slate`` (sips).
        reward_model: ``q̂``: None for the built-in model (the mean logged reward
            of each action, the mean of all rewards for actions never logged),
            a table of (action, reward) or (context, action, reward), or, with an
            array policy, a pair of arrays ``(q̂(x_i, a_i), Σ_a π(a|x_i) q̂(x_i, a))``.
        clip: cap of the weights of ``ips`` and ``dr`` (obp's ``lambda_``); None: none.
        switch_tau: the threshold of ``switch-dr`` (needed by it).
        ci: the interval's level.
        n_resamples: Poisson-bootstrap resamples (0: no interval).
        seed: the bootstrap's seed.
        columns: other names of the log's columns, e.g. ``{"context": "user_id"}``
            (roles: context, action, reward, propensity, position, slate,
            propensity_cascade, propensity_slate); the policy's and the reward
            model's context and action columns take the same names.
        batch_rows: read a Parquet log this many rows at a time, in one pass
            (out of core: memory holds one batch, the policy and the reward
            model). Per-action estimators with a policy table and, for dm and
            the dr family, a reward-model table; the notes then lack
            ``contexts`` and the unsupported mass (they need every row of a
            context at once). The slate estimators with a (context, position,
            action) ranking, on a log whose slates' rows are next to each other
            (a slate spanning two batches waits for the second; a slate whose
            rows are apart is an error); notes ``rows``, ``slates``,
            ``max_weight``. The same numbers as in memory, up to the order of
            floating-point sums (to 1e-12), and the same weight summaries.

    Returns:
        An :class:`OffPolicyResult` (``result["ips"].estimate``, ``.to_frame()``;
        ``result["ips"].weights``: the :class:`WeightSummary` of its weights).

    Raises:
        InputError: a propensity ≤ 0 or > 1, a policy probability outside
            [0, 1], a context whose probabilities do not sum to 1, a logged
            context the policy does not cover, a missing column, a slate log
            without positions or with a position twice in a slate, a slate
            log read in batches whose slate has rows apart.
        OptionError: an unknown estimator or a bad setting.

    Example:
        >>> import pandas as pd
        >>> logs = pd.DataFrame({"context": [1, 1, 2, 2], "action": ["a", "b", "a", "b"],
        ...                      "reward": [1.0, 0.0, 0.0, 1.0], "propensity": [0.5] * 4})
        >>> policy = pd.DataFrame({"context": [1, 2], "action": ["a", "a"],
        ...                        "probability": [1.0, 1.0]})
        >>> res = off_policy(logs, policy, ["ips", "snips"], n_resamples=0)
        >>> res["ips"].estimate, res["snips"].estimate
        (0.5, 0.5)
    """
    names = [estimators] if isinstance(estimators, str) else list(estimators)
    for name in names:
        if name not in ESTIMATORS + SLATE_ESTIMATORS:
            raise OptionError("estimators", name, allowed=ESTIMATORS + SLATE_ESTIMATORS)
    if not names:
        raise OptionError("estimators", [], expected="at least one of " + ", ".join(ESTIMATORS))
    names = list(dict.fromkeys(names))
    slate = [n for n in names if n in SLATE_ESTIMATORS]
    if slate and len(slate) < len(names):
        raise OptionError(
            "estimators",
            names,
            expected="either per-action estimators (" + ", ".join(ESTIMATORS) + ") or slate "
            "estimators (" + ", ".join(SLATE_ESTIMATORS) + "), not both: their logs differ",
        )
    if clip is not None and not (isinstance(clip, (int, float)) and clip > 0):
        raise OptionError("clip", clip, expected="a number > 0")
    if "switch-dr" in names and switch_tau is None:
        raise OptionError(
            "estimators",
            "switch-dr",
            expected="an estimator given what it needs",
            reason=f"switch-dr needs {option('switch_tau')} (a number >= 0)",
        )
    if "switch-dr" in names and (not isinstance(switch_tau, (int, float)) or switch_tau < 0):
        raise OptionError("switch_tau", switch_tau, expected="a number >= 0 (switch-dr needs it)")
    if not (isinstance(ci, float) and 0 < ci < 1):
        raise OptionError("ci", ci, expected="a level between 0 and 1")
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int)
        or n_resamples < 0
        or n_resamples == 1
    ):
        raise OptionError(
            "n_resamples",
            n_resamples,
            expected="0 (no interval) or a whole number >= 2",
            reason="one resample gives an interval of zero width, which need not hold the estimate",
        )
    check_seed(seed)
    if batch_rows is not None and (
        isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1
    ):
        raise OptionError(
            "batch_rows", batch_rows, expected="a whole number >= 1" + said(", or None", "")
        )

    cols = dict(columns or {})
    need_model = bool(_NEEDS_MODEL & set(names))
    settings = (clip, switch_tau, n_resamples, seed)
    if batch_rows is not None:
        sums, notes = _stream(logs, policy, reward_model, names, cols, batch_rows, settings)
    else:
        with _located():
            if slate:
                d = _slate_rows(logs, policy, names, cols)
            else:
                d = _rows(logs, policy, reward_model, need_model, cols)
        hists: dict[str, _Hist] = {}
        sums, notes = {name: _sums(name, d, *settings, hists) for name in names}, d.notes
    boots = _boots([sums[n] for n in names], n_resamples, seed) if n_resamples else None
    out = tuple(
        _estimate(name, sums[name], ci, boots[i] if boots is not None else None)
        for i, name in enumerate(names)
    )
    return OffPolicyResult(out, ci, n_resamples, seed, notes)
