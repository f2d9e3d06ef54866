"""Intent-aware diversity over subtopic judgments: α-nDCG, α-DCG, ERR-IA, nERR-IA.

The kernels of the metrics that :func:`receval.intent_aware` computes from
subtopic judgments (declarations: :mod:`receval.metrics.intent`). Evaluated with
one subtopic's relevant documents as the truth, a kernel's value for a query is
that subtopic's share Σ_j (1 − α)^{j−1} / disc(pos_j) of the query's sum;
the door adds the shares of a query's subtopics and normalises the sum.
"""

from __future__ import annotations

import numpy as np

from receval.metrics.kernels.batch import Batch

__all__ = ["dcg_share", "err_share", "subtopic_gain"]


def subtopic_gain(
    b: Batch, k: int | None, *, alpha: float = 0.5, discount: str = "log2"
) -> np.ndarray:
    """Σ_j (1 − α)^{j−1} / disc(pos_j) over the relevant items of the first k
    positions, pos_j the (1-based) position of the j-th of them; disc(i) is
    log2(1 + i) (``discount="log2"``) or i (``"rank"``).

    Example (a list whose positions 1 and 3 hold the subtopic's documents):
        >>> from receval.metrics.kernels.batch import Batch, Cells
        >>> hits = Cells.from_dense(np.array([[1.0, 0.0, 1.0]]))
        >>> b = Batch(hits, hits, n=np.array([3]), n_relevant=np.array([2]))
        >>> subtopic_gain(b, 3).tolist()  # 1/log2(2) + 0.5/log2(4)
        [1.25]
    """
    cells = b.hits
    earlier = np.arange(len(cells.user), dtype=np.int64) - cells.offsets[cells.user]
    novelty = np.power(1.0 - alpha, earlier.astype(np.float64))
    position = cells.pos.astype(np.float64) + 1.0
    terms = novelty / (np.log2(position + 1.0) if discount == "log2" else position)
    return cells.row_sums(terms, k)


def dcg_share(b: Batch, k: int | None, *, alpha: float = 0.5) -> np.ndarray:
    """One subtopic's share of α-DCG@k: :func:`subtopic_gain` with disc(i) = log2(1 + i)."""
    return subtopic_gain(b, k, alpha=alpha, discount="log2")


def err_share(b: Batch, k: int | None, *, alpha: float = 0.5) -> np.ndarray:
    """One subtopic's share of ERR-IA@k's sum: :func:`subtopic_gain` with disc(i) = i."""
    return subtopic_gain(b, k, alpha=alpha, discount="rank")
