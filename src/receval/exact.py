"""Exact sums of float64 values, so that a mean never depends on how the
values were cut into parts.

Every finite double is an integer multiple of 2**-1074 (the smallest
subnormal), so a sum of doubles is an integer multiple of it too: an
:class:`ExactSum` holds that integer (a Python ``int``), the number of values
added and the non-finite values seen. Adding two exact sums adds integers, so
the sum of parts is the sum of the whole in any order and any cut — the
property ``math.fsum`` has for one list, kept across chunks, threads,
partitions and processes. :meth:`ExactSum.mean` rounds the exact quotient
once (correctly rounded, as Python's integer true division is).

The integer is built without a Python loop over the values: each double is
split into its exponent field and its 53-bit significand; the significands
are added per exponent with ``numpy.bincount`` in two 26/27-bit halves whose
sums stay below 2**53 (so the float64 additions are exact whatever their
order), and only the (at most 2,046) per-exponent sums are shifted and added
as Python integers. The compiled module (``receval._native.exact_sums``)
fills the same buckets in one pass and builds the integer itself (one call
for all the rows of a 2-d array: :meth:`ExactSum.of_rows`); both paths give
the same integer.

Example::

    >>> s = ExactSum.of(np.array([0.1, 0.2, 0.3]))
    >>> s.value() == math.fsum([0.1, 0.2, 0.3])
    True
    >>> (ExactSum.of(np.array([0.1])) + ExactSum.of(np.array([0.2, 0.3]))).mean() == s.mean()
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from receval._accel import NATIVE

__all__ = ["ExactSum"]

_SHIFT = 1074  # the integer counts units of 2**-1074
_HALF = 26  # significands are split into bits [0, 26) and [26, 53)
_BLOCK = 1 << 25  # values per bincount: block * 2**27 < 2**53 keeps float sums exact
_LOW = np.uint64((1 << _HALF) - 1)
_MANT = np.uint64((1 << 52) - 1)


@dataclass(frozen=True)
class ExactSum:
    """The exact sum of some float64 values: ``scaled`` × 2**-1074 over the
    ``count`` finite values. NaN values are left out and counted in ``nan``
    (receval's undefined values, left out of every mean); +inf and -inf are
    counted, and make the sum and mean inf (NaN when both occur), as IEEE
    addition would."""

    scaled: int = 0
    count: int = 0
    nan: int = 0
    pos_inf: int = 0
    neg_inf: int = 0

    @classmethod
    def of(cls, values: np.ndarray) -> ExactSum:
        """The exact sum of an array of numbers (converted to float64)."""
        x = np.ascontiguousarray(values, dtype=np.float64).ravel()
        sums = getattr(NATIVE, "exact_sums", None)
        if sums is not None:
            return cls(*sums(x, 1, None)[0])
        if NATIVE is not None:  # a compiled module built before exact_sums
            high = np.zeros(2047, dtype=np.int64)
            low = np.zeros(2047, dtype=np.int64)
            count, nan, pos_inf, neg_inf = NATIVE.exact_sum(x, high, low)
            return cls(_from_buckets(high, low), count, nan, pos_inf, neg_inf)
        bits = x.view(np.uint64)
        exponent = (bits >> np.uint64(52)) & np.uint64(0x7FF)
        special = exponent == 0x7FF
        nan = pos_inf = neg_inf = 0
        if special.any():
            odd = x[special]
            nan = int(np.isnan(odd).sum())
            pos_inf = int((odd == np.inf).sum())
            neg_inf = int((odd == -np.inf).sum())
            keep = ~special
            x, bits, exponent = x[keep], bits[keep], exponent[keep]
        scaled = 0
        for start in range(0, len(x), _BLOCK):
            scaled += _block_sum(bits[start : start + _BLOCK], exponent[start : start + _BLOCK])
        return cls(scaled, len(x), nan, pos_inf, neg_inf)

    @classmethod
    def of_rows(cls, values: np.ndarray, mask: np.ndarray | None = None) -> list[ExactSum]:
        """The exact sum of each row of a 2-d array, over the columns where
        ``mask`` (booleans, one per column; None: every column) is true:
        ``[ExactSum.of(row[mask]) for row in values]``, the same values, in one
        compiled call when the compiled module is there.

        Example::

            >>> v = np.array([[0.1, 0.2, 0.3], [1.0, np.nan, 2.0]])
            >>> [s.mean() for s in ExactSum.of_rows(v, np.array([True, True, False]))]
            [0.15000000000000002, 1.0]
        """
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 2:
            raise ValueError(
                f"of_rows: expected a 2-d array of values, found {v.ndim} dimension(s)"
            )
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (v.shape[1],):
                raise ValueError(
                    f"of_rows: expected a mask of {v.shape[1]} booleans (one per column), "
                    f"found shape {mask.shape}"
                )
        sums = getattr(NATIVE, "exact_sums", None)
        if sums is None or not len(v):
            return [cls.of(row if mask is None else row[mask]) for row in v]
        x = np.ascontiguousarray(v).ravel()
        m = None if mask is None or mask.all() else np.ascontiguousarray(mask)
        return [cls(*t) for t in sums(x, len(v), m)]

    def __add__(self, other: ExactSum) -> ExactSum:
        return ExactSum(
            self.scaled + other.scaled,
            self.count + other.count,
            self.nan + other.nan,
            self.pos_inf + other.pos_inf,
            self.neg_inf + other.neg_inf,
        )

    def _special(self) -> float | None:
        if self.pos_inf and self.neg_inf:
            return math.nan
        if self.pos_inf:
            return math.inf
        if self.neg_inf:
            return -math.inf
        return None

    def value(self) -> float:
        """The sum of the values but NaN, correctly rounded to a double (what
        ``math.fsum`` gives for them, but that an exact sum of 0 is +0.0)."""
        special = self._special()
        if special is not None:
            return special
        return _ratio(self.scaled, 1)

    def mean(self) -> float:
        """The mean of the values but NaN, correctly rounded: the exact sum
        divided by the number of values, rounded once (NaN when there is no
        value; inf when an inf was added)."""
        special = self._special()
        if special is not None:
            return special
        if not self.count:
            return math.nan
        return _ratio(self.scaled, self.count)

    @property
    def values(self) -> int:
        """How many values but NaN were added (finite and infinite)."""
        return self.count + self.pos_inf + self.neg_inf


def _ratio(scaled: int, n: int) -> float:
    """scaled × 2**-1074 / n, correctly rounded (ints divide exactly in Python)."""
    try:
        return scaled / (n << _SHIFT)
    except OverflowError:
        return math.inf if scaled > 0 else -math.inf


def _block_sum(bits: np.ndarray, exponent: np.ndarray) -> int:
    """Σ of the finite doubles whose bit patterns are ``bits``, in units of 2**-1074."""
    if not len(bits):
        return 0
    significand = bits & _MANT
    significand |= np.where(exponent > 0, np.uint64(1 << 52), np.uint64(0))
    negative = (bits >> np.uint64(63)).astype(bool)
    low = (significand & _LOW).astype(np.float64)
    high = (significand >> np.uint64(_HALF)).astype(np.float64)
    low[negative] *= -1.0
    high[negative] *= -1.0
    where = exponent.astype(np.intp)
    highs = np.bincount(where, weights=high, minlength=2047)
    lows = np.bincount(where, weights=low, minlength=2047)
    return _from_buckets(highs, lows)


def _from_buckets(highs: np.ndarray, lows: np.ndarray) -> int:
    """Σ over exponent fields e of (highs[e] × 2**26 + lows[e]) × 2**(max(e, 1) - 1075),
    in units of 2**-1074 (the buckets hold whole numbers, as ints or exact floats)."""
    total = 0
    for e in np.flatnonzero((highs != 0) | (lows != 0)).tolist():
        total += ((int(highs[e]) << _HALF) + int(lows[e])) << (max(e, 1) - 1)
    return total
