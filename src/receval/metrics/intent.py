"""The per-subtopic kernel of the intent-aware diversity metrics.

α-DCG (Clarke et al. 2008) and ERR-IA (Chapelle et al. 2009, as TREC's
``ndeval`` computes it) decompose by subtopic. With J(d, s) = 1 when document d
is relevant to subtopic s and r_{s,i−1} the number of documents relevant to s
among the first i − 1:

    Σ_i Σ_s J(d_i, s) (1 − α)^{r_{s,i−1}} / disc(i)
        = Σ_s Σ_j (1 − α)^{j−1} / disc(pos_{s,j})

where pos_{s,j} is the position of the j-th document relevant to s, and
disc(i) = log2(1 + i) (α-DCG) or i (ERR-IA). :data:`INTENT_GAIN` is the inner
sum of one subtopic: evaluated with the subtopic's relevant documents as the
truth, its value for a query is that subtopic's share of the query's sum.
:func:`receval.intent_aware` adds the shares of a query's subtopics and
normalises them; the value of one share alone is no diversity metric, so the
declaration is registered only while that function runs (``evaluate`` does not
know its name otherwise).
"""

from __future__ import annotations

import numpy as np

from receval.metrics.kernels.batch import Batch
from receval.metrics.registry import MetricDef, ParamDef

__all__ = ["INTENT_GAIN", "subtopic_gain"]


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


def _alpha_ok(x: float) -> bool:
    return 0.0 <= x <= 1.0


INTENT_GAIN = MetricDef(
    name="intent_subtopic_gain",
    description=("one subtopic's share of α-DCG or ERR-IA (computed only by receval.intent_aware)"),
    formula="Σ_{j : pos_j ≤ k} (1 − α)^{j−1} / disc(pos_j)",
    kernel=subtopic_gain,
    params=(
        ParamDef(
            "alpha",
            float,
            0.5,
            "redundancy penalty: the j-th document of a subtopic gains (1 − α)^(j−1)",
            check=_alpha_ok,
            check_text="a number in [0, 1]",
        ),
        ParamDef(
            "discount",
            str,
            "log2",
            "position discount: log2(1 + i) (α-DCG) or i (ERR-IA)",
            choices=("log2", "rank"),
        ),
    ),
    bounds=(0.0, float("inf")),
    needs_cutoff=True,
    undefined="queries without a document relevant to the subtopic",
    notes="a share of a sum over subtopics; receval.intent_aware adds and normalises them",
)
