"""trec_eval's own test data: measures whose definitions receval shares, by their trec names.

`shared/conformance/trec_eval/out.test.a` is trec_eval 10.0's output of
`-m all_trec qrels.test results.test`. For these measures receval's defaults
already are trec_eval's definitions (P_k divides by k, recall by R, map and
map_cut by all relevant, ndcg_cut with linear gain and an ideal of all relevant
items, success_k = hit rate, recip_rank without cut-off), so reading the same
files through the CLI's reader must reproduce every printed digit. Ties in
score are broken differently (trec_eval: docno descending): on this run that
changes none of these values. A `convention="trec_eval"` (issue #8) will set
the tie rule and the query policies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import receval
from receval.io.files import read_file

TREC = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "trec_eval"
MEASURES = ("map", "Rprec", "recip_rank", "P_", "recall_", "ndcg_cut_", "map_cut_", "success_")

pytestmark = pytest.mark.skipif(
    not TREC.exists(), reason="shared/conformance is not beside the repo"
)


def _expected(name: str) -> dict[str, float]:
    out = {}
    for line in (TREC / name).read_text().splitlines():
        measure, topic, value = line.split()
        if topic == "all" and (measure in MEASURES or measure.startswith(MEASURES[3:])):
            out[measure] = float(value)
    return out


def test_all_trec_measures_receval_shares() -> None:
    expected = _expected("out.test.a")
    assert len(expected) >= 40
    recs, _ = read_file(TREC / "results.test", role="recommendations")
    qrels, _ = read_file(TREC / "qrels.test", role="truth")
    res = receval.evaluate(recs, qrels, list(expected))
    for measure, value in expected.items():
        got = res.summary[str(receval.parse_metric(measure))]
        # trec_eval prints 4 decimals
        assert round(got, 4) == pytest.approx(value, abs=1e-9), measure
