"""Resampling seeded per user: comparisons whose numbers no cut of the users changes.

:func:`receval.compare` resamples users to give intervals (bootstrap) and
p-values (randomization test). In one process it draws index matrices from
one random stream; that needs every user in one place. This module is the
scalable alternative, used by the Spark engine and, with
``compare(..., resampling="poisson")``, in-process (the two give the same
bits):

- **Poisson bootstrap** (Oza & Russell 2001; Chamandy et al. 2012, "Estimating
  uncertainty for massive data streams"): in resample ``b`` each user counts
  ``w[u, b] ~ Poisson(1)`` times, instead of drawing n users with replacement;
  the resampled mean is ``Σ_u w[u, b] x[u] / Σ_u w[u, b]``. As n grows the
  weights of the multinomial bootstrap tend to independent Poisson(1) counts.
- **Sign flips** of the randomization test: in resample ``b`` the difference of
  user ``u`` keeps or flips its sign with probability 1/2.

Both draws are a hash of (seed, user id, resample): a SplitMix64 finaliser of
``pandas.util.hash_array(user ids)``, the seed and the resample number; a
weight is the Poisson(1) quantile of a 32-bit uniform (two per hash, capped
at 15, P(w ≥ 15) ≈ 3e-13); a flip is one bit (64 per hash). The same user gets
the same draws in whatever partition, order or block it comes.

Sums are exact, so they add up across partitions in any order: the weighted
sums are taken in fixed point, each value rounded to a multiple of
``2**(e - 37)`` where ``2**e`` bounds the largest ``|x|`` of its column over all
users (found in a first pass), so that a block's matrix product of small
integers is exact in float64 and blocks add as integers. Intervals thus carry
an error below ``2**-37`` of the largest value (7e-12 for a metric in [0, 1]),
far below their own sampling error. Means, t-tests and effect sizes use the
exact moments of :class:`receval.analysis.stats.Moments`, as in-process.

Work is done in two passes over the per-user values, each returning a small
part per partition (O(resamples × columns), never O(users)):
:func:`first_pass` (counts, moments, largest values) and :func:`second_pass`
(centred power sums for BCa, bootstrap and flip sums); :func:`finish` turns the
combined parts into each unit's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.analysis.stats import (
    Moments,
    StatResult,
    effect_size_of,
    quantile_interval,
    t_test_of,
)
from receval.exact import ExactSum

__all__ = [
    "Layout",
    "Totals",
    "finish",
    "first_pass",
    "poisson_weights",
    "second_pass",
    "sign_flips",
    "user_keys",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_BITS = 37  # fixed-point bits of the largest |value| of a column
_MAX_WEIGHT = 15
#: 32-bit thresholds of Poisson(1): w = #{k : T[k] <= u} for a uniform u in [0, 2**32)
_POISSON = np.array(
    [
        math.floor(math.exp(-1.0) * sum(1.0 / math.factorial(j) for j in range(k + 1)) * 2.0**32)
        for k in range(_MAX_WEIGHT)
    ],
    dtype=np.uint64,
)
_BLOCK_VALUES = 1 << 21  # resamples × users per block
_BLOCK_USERS = 4096  # 4096 × 15 × 2**37 < 2**53: a block's products sum exactly
_FLUSH_BLOCKS = 256  # int64 sums moved into Python ints every so many blocks


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014), elementwise on uint64."""
    z = z ^ (z >> np.uint64(30))
    z = z * _M1
    z = z ^ (z >> np.uint64(27))
    z = z * _M2
    return z ^ (z >> np.uint64(31))


def user_keys(users: Any) -> np.ndarray:
    """A 64-bit key per user id, the same in every process: numbers hash as
    int64 (whatever their integer width), text as text.

    Example:
        >>> bool((user_keys([1, 2]) == user_keys(np.array([1, 2], dtype=np.int32))).all())
        True
    """
    arr = np.asarray(users)
    if arr.dtype.kind in "iub":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind in "USO":
        arr = arr.astype(object)
    return _mix(pd.util.hash_array(arr, categorize=False).astype(np.uint64))


def _seed_word(seed: int, stream: int) -> np.uint64:
    state = np.random.SeedSequence(seed, spawn_key=(stream,)).generate_state(1, np.uint64)
    return np.uint64(state[0])


def _hashes(keys: np.ndarray, rows: int, word: np.uint64) -> np.ndarray:
    """(rows × users) hashes of (seed word, user key, row)."""
    r = np.arange(1, rows + 1, dtype=np.uint64)[:, None]
    with np.errstate(over="ignore"):
        return _mix((keys[None, :] ^ word) + r * _GOLDEN)


def poisson_weights(keys: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The (resamples × users) Poisson(1) weights of the users of ``keys``.

    Example:
        >>> w = poisson_weights(user_keys(np.arange(20000)), 50, seed=0)
        >>> w.shape, round(float(w.mean()), 1), round(float(w.var()), 1)
        ((50, 20000), 1.0, 1.0)
    """
    rows = (n_resamples + 1) // 2
    h = _hashes(keys, rows, _seed_word(seed, 1))
    out = np.empty((2 * rows, len(keys)))
    out[0::2] = np.searchsorted(_POISSON, h >> np.uint64(32), side="right")
    out[1::2] = np.searchsorted(_POISSON, h & np.uint64(0xFFFFFFFF), side="right")
    return out[:n_resamples]


def sign_flips(keys: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The (resamples × users) coin flips (1 = flip the sign) of the users of ``keys``.

    Example:
        >>> f = sign_flips(user_keys(np.arange(1000)), 200, seed=0)
        >>> f.shape, round(float(f.mean()), 1)
        ((200, 1000), 0.5)
    """
    rows = (n_resamples + 63) // 64
    h = _hashes(keys, rows, _seed_word(seed, 2))
    bits = np.unpackbits(h.view(np.uint8).reshape(rows, len(keys), 8), axis=2, bitorder="little")
    return bits.transpose(0, 2, 1).reshape(rows * 64, len(keys))[:n_resamples].astype(np.float64)


@dataclass(frozen=True)
class Layout:
    """What is compared: per-user metrics, systems, pairs of systems (indices),
    and the resampling settings. Column ``(j, i)`` of a partition's values is
    metric ``j`` of system ``i`` (NaN: no value)."""

    metrics: tuple[str, ...]
    systems: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...]
    n_resamples: int
    seed: int
    flips: bool  # the randomization test is asked
    ci: str  # "bca", "percentile" or "none"

    def column(self, j: int, i: int) -> str:
        """The name of the column of metric j, system i in a partition's table."""
        return f"m{j}s{i}"


@dataclass
class FirstPart:
    """A partition's counts, moments and largest values (adds up exactly)."""

    compared: list[int]  # per metric: users with a value in every system
    missing: list[list[int]]  # per metric, per system: users it lacked (another had one)
    means: list[list[Moments]]  # per metric, per system: moments of x over compared users
    diffs: list[list[Moments]]  # per metric, per pair: moments of d
    largest: list[list[float]]  # per metric: max |x| per system, then max |d| per pair

    def __add__(self, other: FirstPart) -> FirstPart:
        return FirstPart(
            [a + b for a, b in zip(self.compared, other.compared, strict=True)],
            _add2(self.missing, other.missing),
            _add2(self.means, other.means),
            _add2(self.diffs, other.diffs),
            [
                [max(a, b) for a, b in zip(x, y, strict=True)]
                for x, y in zip(self.largest, other.largest, strict=True)
            ],
        )


def _add2(a: list[list[Any]], b: list[list[Any]]) -> list[list[Any]]:
    return [[x + y for x, y in zip(p, q, strict=True)] for p, q in zip(a, b, strict=True)]


def _columns(layout: Layout, values: dict[str, np.ndarray], j: int) -> tuple[np.ndarray, ...]:
    """Metric j's values of every system (users × systems), compared users' mask."""
    x = np.column_stack([values[layout.column(j, i)] for i in range(len(layout.systems))])
    defined = ~np.isnan(x)
    return x, defined, defined.all(axis=1)


def first_pass(layout: Layout, values: dict[str, np.ndarray]) -> FirstPart:
    """Pass 1 over one partition's users (``values``: column → float64 array)."""
    compared, missing, means, diffs, largest = [], [], [], [], []
    for j in range(len(layout.metrics)):
        x, defined, every = _columns(layout, values, j)
        somewhere = defined.any(axis=1)
        compared.append(int(every.sum()))
        missing.append([int((somewhere & ~defined[:, i]).sum()) for i in range(x.shape[1])])
        xs = x[every]
        means.append([Moments.of(xs[:, i]) for i in range(x.shape[1])])
        ds = [xs[:, a] - xs[:, b] for a, b in layout.pairs]
        diffs.append([Moments.of(d) for d in ds])
        big = [float(np.abs(c).max()) if len(c) else 0.0 for c in [*xs.T, *ds]]
        largest.append(big)
    return FirstPart(compared, missing, means, diffs, largest)


@dataclass
class Totals:
    """What pass 2 needs from pass 1 over all users: per metric the exact
    means of its columns (systems, then pairs) and their fixed-point exponents."""

    means: list[list[float]]
    exponents: list[list[int]]

    @classmethod
    def of(cls, first: FirstPart) -> Totals:
        means = [
            [m.mean() for m in [*ms, *ds]] for ms, ds in zip(first.means, first.diffs, strict=True)
        ]
        exponents = [[math.frexp(v)[1] if v > 0 else 0 for v in big] for big in first.largest]
        return cls(means, exponents)


@dataclass
class SecondPart:
    """A partition's centred power sums, bootstrap and flip sums (exact integers)."""

    squares: list[list[ExactSum]]  # per metric, per column: Σ (x − mean)²
    cubes: list[list[ExactSum]]  # per metric, per column: Σ (x − mean)³
    boot: np.ndarray | None  # (resamples × (columns + metrics)) object ints: Σ w·xq, Σ w
    flips: np.ndarray | None  # (resamples × pair columns) object ints: Σ flip·dq
    totals: list[int] = field(default_factory=list)  # per pair column: Σ dq

    def __add__(self, other: SecondPart) -> SecondPart:
        return SecondPart(
            _add2(self.squares, other.squares),
            _add2(self.cubes, other.cubes),
            _sum_or_none(self.boot, other.boot),
            _sum_or_none(self.flips, other.flips),
            [a + b for a, b in zip(self.totals, other.totals, strict=True)],
        )


def _sum_or_none(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or b is None else a + b


class _IntSums:
    """Exact integer sums of exact float64 block products: int64 between
    flushes, Python ints (an object array) across them."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.total = np.zeros(shape, dtype=object)
        self.acc = np.zeros(shape, dtype=np.int64)
        self.blocks = 0

    def add(self, block: np.ndarray) -> None:
        self.acc += block.astype(np.int64)
        self.blocks += 1
        if self.blocks == _FLUSH_BLOCKS:
            self.flush()

    def flush(self) -> np.ndarray:
        self.total = self.total + self.acc.astype(object)
        self.acc[:] = 0
        self.blocks = 0
        return self.total


def second_pass(
    layout: Layout, totals: Totals, users: Any, values: dict[str, np.ndarray]
) -> SecondPart:
    """Pass 2 over one partition's users, given pass 1's :class:`Totals`."""
    n_sys = len(layout.systems)
    squares, cubes, quantised, counted, diffs_q = [], [], [], [], []
    for j in range(len(layout.metrics)):
        x, _, every = _columns(layout, values, j)
        cols = [x[:, i] for i in range(n_sys)] + [x[:, a] - x[:, b] for a, b in layout.pairs]
        sq, cu = [], []
        for c, column in enumerate(cols):
            dev = column[every] - totals.means[j][c]
            sq.append(ExactSum.of(dev * dev))
            cu.append(ExactSum.of(dev * dev * dev))
            q = np.where(every, column, 0.0)
            q = np.rint(np.ldexp(q, _BITS - totals.exponents[j][c]))
            quantised.append(q)
            if c >= n_sys:
                diffs_q.append(q)
        squares.append(sq)
        cubes.append(cu)
        counted.append(every.astype(np.float64))
    keys = user_keys(users)
    b = layout.n_resamples
    boot = flips = None
    sums = [int(q.astype(np.int64).sum()) for q in diffs_q]
    if layout.ci != "none" and len(keys):
        matrix = np.column_stack([*quantised, *counted])
        boot = _weighted(keys, matrix, b, layout.seed, poisson_weights)
    elif layout.ci != "none":
        boot = np.zeros((b, len(quantised) + len(counted)), dtype=object)
    if layout.flips and diffs_q and len(keys):
        flips = _weighted(keys, np.column_stack(diffs_q), b, layout.seed, sign_flips)
    elif layout.flips and diffs_q:
        flips = np.zeros((b, len(diffs_q)), dtype=object)
    return SecondPart(squares, cubes, boot, flips, sums)


def _weighted(keys: np.ndarray, matrix: np.ndarray, b: int, seed: int, draw: Any) -> np.ndarray:
    """Σ_u draw[b, u] · matrix[u, :] for every resample b, exactly (object ints)."""
    sums = _IntSums((b, matrix.shape[1]))
    step = max(1, min(_BLOCK_USERS, _BLOCK_VALUES // max(b, 1)))
    for start in range(0, len(keys), step):
        w = draw(keys[start : start + step], b, seed)
        sums.add(w @ matrix[start : start + step])  # small integers: exact
    return sums.flush()


def finish(
    layout: Layout, first: FirstPart, second: SecondPart, alpha: float, test: str
) -> dict[tuple[str, tuple[str, ...]], dict[str, float]]:
    """Every unit's numbers, as :func:`receval.compare` reports them: per
    (metric, (system,)) the mean and its interval; per (metric, (a, b)) the
    difference, its interval, the test and the effect size."""
    totals = Totals.of(first)
    n_sys = len(layout.systems)
    n_cols = n_sys + len(layout.pairs)  # per metric: systems, then pairs
    out: dict[tuple[str, tuple[str, ...]], dict[str, float]] = {}
    offset = 0
    pair_offset = 0
    for j, metric in enumerate(layout.metrics):
        n = first.compared[j]
        for c in range(n_cols):
            column = offset + c
            moments = first.means[j][c] if c < n_sys else first.diffs[j][c - n_sys]
            lo, hi = _interval(layout, first, second, totals, j, c, column, alpha)
            if c < n_sys:
                out[(metric, (layout.systems[c],))] = {
                    "mean": moments.mean(),
                    "ci_low": lo,
                    "ci_high": hi,
                }
                continue
            a, b = layout.pairs[c - n_sys]
            p = pair_offset + c - n_sys
            flip = test != "t"  # the randomization test, from the sign flips
            res = _flip_test(layout, second, p, moments, n) if flip else t_test_of(moments)
            out[(metric, (layout.systems[a], layout.systems[b]))] = {
                "diff": moments.mean(),
                "ci_low": lo,
                "ci_high": hi,
                "statistic": res.statistic,
                "p_value": res.pvalue,
                "effect_size": effect_size_of(moments),
            }
        offset += n_cols
        pair_offset += len(layout.pairs)
    return out


def _flip_test(layout: Layout, second: SecondPart, p: int, moments: Moments, n: int) -> StatResult:
    """The randomization test's p = (1 + #{|T*| ≥ |T|}) / (1 + B), exact integers."""
    if n == 0:
        return StatResult(math.nan, math.nan)
    observed = moments.mean()
    if moments.s2.scaled == 0:  # every difference zero
        return StatResult(observed, 1.0)
    assert second.flips is not None
    total = second.totals[p]
    flipped = np.abs(total - 2 * second.flips[:, p])
    count = int(np.count_nonzero(flipped >= abs(total)))
    return StatResult(observed, (1 + count) / (1 + layout.n_resamples))


def _interval(
    layout: Layout,
    first: FirstPart,
    second: SecondPart,
    totals: Totals,
    j: int,
    c: int,
    column: int,
    alpha: float,
) -> tuple[float, float]:
    """The percentile or BCa interval of column ``c`` of metric ``j``."""
    n = first.compared[j]
    if layout.ci == "none" or n == 0:
        return (math.nan, math.nan)
    theta = totals.means[j][c]
    if first.largest[j][c] == 0.0 or second.squares[j][c].scaled == 0:
        return (theta, theta)  # every value equal
    assert second.boot is not None
    columns = sum(len(layout.systems) + len(layout.pairs) for _ in layout.metrics)
    weights = second.boot[:, columns + j]
    keep = weights != 0  # a resample that drew no user has no mean
    scale = math.ldexp(1.0, totals.exponents[j][c] - _BITS)
    sums = second.boot[keep, column].astype(np.float64)  # Python ints, rounded once each
    means = sums * scale / weights[keep].astype(np.float64)
    if not len(means):
        return (math.nan, math.nan)
    if layout.ci != "bca":
        return quantile_interval(means, alpha)
    den = second.squares[j][c].value() ** 1.5
    acc = second.cubes[j][c].value() / (6.0 * den) if den > 0 else 0.0
    return quantile_interval(means, alpha, theta, acc)  # exact sums: no tolerance needed


def layout_of(
    metrics: Sequence[str],
    systems: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    settings: dict[str, Any],
) -> Layout:
    """The :class:`Layout` of a comparison (``settings`` of :func:`receval.compare`)."""
    index = {s: i for i, s in enumerate(systems)}
    return Layout(
        tuple(metrics),
        tuple(systems),
        tuple((index[a], index[b]) for a, b in pairs),
        int(settings["n_resamples"]),
        int(settings["seed"]),
        settings["test"] == "randomization",
        settings["ci"],
    )
