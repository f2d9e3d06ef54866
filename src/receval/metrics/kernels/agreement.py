"""Agreement with a reference run: rank-biased overlap, intersection@k, Jaccard@k.

These metrics compare each user's list with the same user's list in a
*reference run* (another system, a previous version), not with a truth. The
door :func:`receval.agreement` reads the reference with the readers of
recommendations and turns it into a truth table whose grade encodes the
reference rank: the item at reference rank ``r`` of a list of ``R`` items has
grade ``R + 1 − r`` (1 ≤ grade ≤ R, every one relevant). Then the ordinary
``evaluate`` runs, so every engine computes these kernels from the same
:class:`~receval.metrics.kernels.batch.Batch`: the relevant cells are the items
of the list that the reference also holds (``pos`` their 0-based list
position, ``value`` their grade), ``n_relevant`` is the reference's length R,
and the reference rank of a cell is ``R + 1 − value`` (exact: small integers).

With A the list and B the reference, each cut at depth k (their lengths
a = min(n, k) and b = min(R, k); the whole lists without @k), and
``X_d = |A_{:d} ∩ B_{:d}|``: an item at list position ``i`` and reference rank
``r`` counts in ``X_d`` for every ``d ≥ max(i, r)``. So every sum over depths
is a sum over cells, ``Σ_{d=e}^{l} w_d`` = a difference of prefix sums of
``w``, with no per-user loop.

Rank-biased overlap (W. Webber, A. Moffat, J. Zobel, "A similarity measure for
indefinite rankings", ACM TOIS 28(4), 2010), with persistence p, s = min(a, b)
and l = max(a, b) (the paper's uneven lists; the longer one's items past s are
compared with the shorter one seen whole):

* ``rbo_min`` (the lower bound, eq. 11 extended to uneven lists: no more
  overlap below the seen prefixes):
  ``(1−p)/p · (Σ_{d=1}^{l} X_d/d · p^d + X_l · (−ln(1−p) − Σ_{d=1}^{l} p^d/d))``;
* ``rbo_res`` (the residual, eq. 30: the upper bound minus the lower bound),
  with ``f = l + s − X_l``:
  ``p^s + p^l − p^f − (1−p)/p · (s Σ_{d=s+1}^{f} p^d/d + l Σ_{d=l+1}^{f} p^d/d
  + X_l (−ln(1−p) − Σ_{d=1}^{f} p^d/d))``;
* ``rbo`` (``rbo_ext``, the extrapolation, eq. 32: the agreement at depth s
  carried on below the seen prefixes):
  ``(1−p)/p · (Σ_{d=1}^{l} X_d/d · p^d + Σ_{d=s+1}^{l} X_s (d−s)/(s·d) · p^d)
  + ((X_l − X_s)/l + X_s/s) · p^l``.

Intersection and Jaccard (RecTools' ``Intersection``: the share of the list's
top k that the reference's top ``ref_k`` holds): ``intersection@k[ref_k]`` =
``|A_{:k} ∩ B_{:ref_k}| / |A_{:k}|``, ``jaccard@k`` =
``|A_{:k} ∩ B_{:k}| / |A_{:k} ∪ B_{:k}|``.
"""

from __future__ import annotations

import math

import numpy as np

from receval.metrics.kernels.batch import Batch

__all__ = ["intersection", "jaccard", "rbo_ext", "rbo_min", "rbo_res"]


def _cells(b: Batch, k: int | None, ref_k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The cells of the list that the reference also holds, within the cut-offs:
    (their users, their depth ``e = max(i, r)``); and the cut lengths follow
    from ``b.retrieved(k)`` and ``b.n_relevant``."""
    c = b.hits
    rank = b.n_relevant[c.user] + 1 - np.rint(c.value).astype(np.int64)  # reference rank
    pos = c.pos + 1
    keep = rank <= (ref_k if ref_k is not None else (k if k is not None else np.inf))
    if k is not None:
        keep &= pos <= k
    return c.user[keep], np.maximum(pos, rank)[keep]


def _lengths(b: Batch, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(a, b): the lengths of the list and of the reference cut at k."""
    a = b.retrieved(k).astype(np.int64)
    r = b.n_relevant.astype(np.int64)
    return a, (r if k is None else np.minimum(r, k))


def _prefix(p: float, upto: int) -> np.ndarray:
    """``H[n] = Σ_{d=1}^{n} p^d / d`` for n = 0..upto (H[0] = 0), summed left to
    right: a value does not depend on how far the table goes (users in other
    blocks get the same bits)."""
    d = np.arange(1, upto + 1, dtype=np.float64)
    out = np.zeros(upto + 1)
    np.cumsum(p**d / d, out=out[1:])
    return out


def _overlaps(b: Batch, k: int | None) -> tuple[np.ndarray, ...]:
    """Per user: s, l, X_s, X_l and the cells' (users, depths)."""
    user, depth = _cells(b, k)
    la, lb = _lengths(b, k)
    s, ll = np.minimum(la, lb), np.maximum(la, lb)
    x_l = np.bincount(user, minlength=b.size)
    x_s = np.bincount(user[depth <= s[user]], minlength=b.size)
    return s, ll, x_s, x_l, user, depth


def _seen_sum(
    h: np.ndarray, ll: np.ndarray, user: np.ndarray, depth: np.ndarray, m: int
) -> np.ndarray:
    """``Σ_{d=1}^{l} X_d/d · p^d`` per user, as a sum over cells of
    ``Σ_{d=e}^{l} p^d/d = H[l] − H[e − 1]``."""
    return np.bincount(user, weights=h[ll[user]] - h[depth - 1], minlength=m)


def rbo_min(b: Batch, k: int | None, *, p: float) -> np.ndarray:
    """The lower bound of RBO (Webber et al. 2010, eq. 11 for uneven lists)."""
    _, ll, _, x_l, user, depth = _overlaps(b, k)
    h = _prefix(p, int(ll.max(initial=0)))
    seen = _seen_sum(h, ll, user, depth, b.size)
    tail = -math.log1p(-p) - h[ll]
    out = (1 - p) / p * (seen + x_l * tail)
    out[ll == 0] = np.nan
    return out


def rbo_res(b: Batch, k: int | None, *, p: float) -> np.ndarray:
    """The residual of RBO, upper minus lower bound (eq. 30)."""
    s, ll, _, x_l, _, _ = _overlaps(b, k)
    f = ll + s - x_l
    h = _prefix(p, int(f.max(initial=0)))
    inner = s * (h[f] - h[s]) + ll * (h[f] - h[ll]) + x_l * (-math.log1p(-p) - h[f])
    out = p ** s.astype(np.float64) + p ** ll.astype(np.float64) - p ** f.astype(np.float64)
    out -= (1 - p) / p * inner
    out[ll == 0] = np.nan
    return out


def rbo_ext(b: Batch, k: int | None, *, p: float) -> np.ndarray:
    """The extrapolated RBO (eq. 32)."""
    s, ll, x_s, x_l, user, depth = _overlaps(b, k)
    h = _prefix(p, int(ll.max(initial=0)))
    seen = _seen_sum(h, ll, user, depth, b.size)
    ls = ll.astype(np.float64)
    ss = s.astype(np.float64)
    share_s = np.divide(x_s, ss, out=np.zeros(b.size), where=s > 0)  # X_s / s (0 when s = 0)
    # Σ_{d=s+1}^{l} (d − s)/d · p^d = Σ p^d − s Σ p^d/d over d in (s, l]
    geometric = p ** (ss + 1) * (1 - p ** (ls - ss)) / (1 - p)
    extra = share_s * (geometric - ss * (h[ll] - h[s]))
    last = np.divide(x_l - x_s, ls, out=np.zeros(b.size), where=ll > 0) + share_s
    out = (1 - p) / p * (seen + extra) + last * p**ls
    # the same list in the same order (X_d = d at every depth: l cells whose depths
    # sum to 1 + ... + l, the least they can) is 1 exactly, not 1 - 1e-15 of the sums
    depth_sum = np.bincount(user, weights=depth, minlength=b.size)
    out[(x_l == ll) & (s == ll) & (depth_sum == ll * (ll + 1) // 2)] = 1.0
    out[ll == 0] = np.nan
    return out


def intersection(b: Batch, k: int | None, *, ref_k: int | None) -> np.ndarray:
    """``|A_{:k} ∩ B_{:ref_k}| / |A_{:k}|`` (RecTools' Intersection); an empty
    list shares nothing with a reference (0), NaN when both are empty."""
    user, _ = _cells(b, k, ref_k if ref_k is not None else k)
    x = np.bincount(user, minlength=b.size)
    a = b.retrieved(k)
    out = np.divide(x, a, out=np.zeros(b.size), where=a > 0)
    out[(a == 0) & (b.n_relevant == 0)] = np.nan
    return out


def jaccard(b: Batch, k: int | None) -> np.ndarray:
    """``|A_{:k} ∩ B_{:k}| / |A_{:k} ∪ B_{:k}|``; NaN when both are empty."""
    user, _ = _cells(b, k)
    x = np.bincount(user, minlength=b.size)
    la, lb = _lengths(b, k)
    union = la + lb - x
    return np.divide(x, union, out=np.full(b.size, np.nan), where=union > 0)
