"""ExactSum.of_rows (issue #33 point 3): the exact sums of the rows of a 2-d
array in one compiled call are those of ExactSum.of row by row, bit for bit,
with and without the compiled module."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from receval import exact
from receval.exact import ExactSum


def _literal(row: np.ndarray) -> ExactSum:
    """The slow literal reference: fractions of the finite values, counts of the rest."""
    finite = [float(v) for v in row if math.isfinite(v)]
    total = sum((Fraction(v) for v in finite), Fraction(0)) * 2**1074
    assert total.denominator == 1
    return ExactSum(
        int(total),
        len(finite),
        int(np.isnan(row).sum()),
        int((row == np.inf).sum()),
        int((row == -np.inf).sum()),
    )


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 13)), int(rng.integers(0, 40))
    v = rng.standard_normal((m, n)) * 10.0 ** rng.integers(-320, 308, (m, n))
    v[rng.random((m, n)) < 0.05] = np.nan
    v[rng.random((m, n)) < 0.02] = np.inf
    v[rng.random((m, n)) < 0.02] = -np.inf
    v[rng.random((m, n)) < 0.05] = 0.0
    return v, rng.random(n) < 0.7


class _OlderModule:
    """A compiled module built before ``exact_sums``: only ``exact_sum``."""

    def __init__(self, native: object) -> None:
        self.exact_sum = native.exact_sum  # type: ignore[attr-defined]


@pytest.mark.parametrize("native", ["now", "older", "none"])
def test_rows_match_of_and_the_literal_sum(native: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if native != "none" and exact.NATIVE is None:
        pytest.skip("no compiled module")
    if native == "older":
        monkeypatch.setattr(exact, "NATIVE", _OlderModule(exact.NATIVE))
    elif native == "none":
        monkeypatch.setattr(exact, "NATIVE", None)
    for seed in range(25):
        v, mask = _rows(seed)
        for m in (mask, None, np.ones(v.shape[1], dtype=bool)):
            got = ExactSum.of_rows(v, m)
            picked = v if m is None else v[:, m]
            assert got == [ExactSum.of(row) for row in picked]
            if m is mask:
                assert got == [_literal(row) for row in picked]


def test_edge_values_and_shapes() -> None:
    tiny, big = 5e-324, 1.7976931348623157e308
    v = np.array(
        [
            [tiny, -tiny, tiny, 0.0],
            [big, big, -big, 1.0],
            [-big, -big, -0.0, -1e-310],
            [0.1, 0.2, 0.3, np.nan],
        ]
    )
    got = ExactSum.of_rows(v)
    assert got == [_literal(row) for row in v]
    assert got[0].value() == tiny
    assert got[1].value() == big + 1.0
    assert got[2].value() == -math.inf  # the exact sum overflows a double
    assert got[2].mean() == -big / 2  # its mean does not
    assert got[3].mean() == 0.2
    assert ExactSum.of_rows(np.empty((0, 5))) == []
    assert ExactSum.of_rows(np.empty((3, 0))) == [ExactSum()] * 3
    assert ExactSum.of_rows(v[:, ::2]) == [ExactSum.of(r) for r in v[:, ::2]]  # a strided view
    with pytest.raises(ValueError, match="2-d array"):
        ExactSum.of_rows(np.zeros(3))
    with pytest.raises(ValueError, match="mask of 4 booleans"):
        ExactSum.of_rows(v, np.ones(3, dtype=bool))
