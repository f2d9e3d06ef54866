"""Each convention pinned by its tool's own numbers, in the default suite (issue #37).

The tools themselves run only in the deselected conformance tests (their own
venvs). Here the numbers they gave on one small fixed dataset
(``tests/conformance/record_values.py``: graded truth, relevant items the list
misses, R above k, equal scores over ids 8, 100, 9, 55, a user whose only truth
row is graded 0, a user without a list, a user without truth, a list shorter
than k) are literals, and ``receval.evaluate(..., convention=TOOL)`` must give
them: to 1e-12 (the tools' float64), torchmetrics to two float32 ulps (it
computes in float32 and its numbers are float32 values).

Recorded with the venvs of ``tests/conformance/setup_venvs.sh``:

    bash tests/conformance/setup_venvs.sh .conformance
    python tests/conformance/record_values.py --out values.json

(each tool's versions are in ``PINNED``). To re-record after a tool update,
run the same and paste the printed ``PINNED``; a value that moves is a change
in the tool or in receval, to explain in docs/conventions.md, never to paste
over silently. The ``receval`` convention has no other tool: its values are
worked by hand below.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.evaluation import conventions
from tests.conformance.record_values import KS, VENV, workload, workload_for

#: each tool's own numbers, recorded 2026-11-26 on Python 3.11 (Linux x86_64) by
#: ``python tests/conformance/record_values.py`` in the venvs of setup_venvs.sh
PINNED: dict[str, dict[str, Any]] = {
    "trec_eval": {
        "versions": {"pytrec-eval-terrier": "0.5.11"},
        "values": {
            "ap": 0.3104166666666667,
            "ap@1": 0.125,
            "ap@10": 0.3104166666666667,
            "ap@3": 0.22916666666666666,
            "ap@5": 0.2791666666666667,
            "hit_rate@1": 0.5,
            "hit_rate@10": 0.75,
            "hit_rate@3": 0.75,
            "hit_rate@5": 0.75,
            "ndcg": 0.3685833379455595,
            "ndcg@1": 0.3333333333333333,
            "ndcg@10": 0.3685833379455595,
            "ndcg@3": 0.3085240454939495,
            "ndcg@5": 0.3514333758348397,
            "precision@1": 0.5,
            "precision@10": 0.15,
            "precision@3": 0.3333333333333333,
            "precision@5": 0.25,
            "recall@1": 0.125,
            "recall@10": 0.5,
            "recall@3": 0.3125,
            "recall@5": 0.4375,
            "rr": 0.625,
        },
    },
    "ranx": {
        "versions": {"ranx": "0.3.21", "numba": "0.68.1"},
        "values": {
            "ap@1": 0.1,
            "ap@10": 0.24166666666666664,
            "ap@3": 0.16666666666666666,
            "ap@5": 0.21666666666666665,
            "f1@1": 0.16,
            "f1@10": 0.18095238095238095,
            "f1@3": 0.25142857142857145,
            "f1@5": 0.24761904761904768,
            "hit_rate@1": 0.4,
            "hit_rate@10": 0.6,
            "hit_rate@3": 0.6,
            "hit_rate@5": 0.6,
            "hits@1": 0.4,
            "hits@10": 1.2,
            "hits@3": 0.8,
            "hits@5": 1.0,
            "ndcg@1": 0.26666666666666666,
            "ndcg@10": 0.296846289158318,
            "ndcg@3": 0.27487549642472014,
            "ndcg@5": 0.2831263194697422,
            "precision@1": 0.4,
            "precision@10": 0.12,
            "precision@3": 0.26666666666666666,
            "precision@5": 0.2,
            "recall@1": 0.1,
            "recall@10": 0.4,
            "recall@3": 0.25,
            "recall@5": 0.35,
            "rr@1": 0.4,
            "rr@10": 0.4666666666666666,
            "rr@3": 0.4666666666666666,
            "rr@5": 0.4666666666666666,
        },
    },
    "torchmetrics": {
        "versions": {"torchmetrics": "1.9.0", "torch": "2.13.0+cpu"},
        "values": {
            "ap@1": 0.4000000059604645,
            "ap@10": 0.42777782678604126,
            "ap@3": 0.4333333373069763,
            "ap@5": 0.44999998807907104,
            "hit_rate@1": 0.4000000059604645,
            "hit_rate@10": 0.6000000238418579,
            "hit_rate@3": 0.6000000238418579,
            "hit_rate@5": 0.6000000238418579,
            "ndcg@1": 0.2666666805744171,
            "ndcg@10": 0.44704222679138184,
            "ndcg@3": 0.3970568776130676,
            "ndcg@5": 0.42979639768600464,
            "precision@1": 0.4000000059604645,
            "precision@10": 0.12000000476837158,
            "precision@3": 0.2666666805744171,
            "precision@5": 0.20000000298023224,
            "recall@1": 0.2666666805744171,
            "recall@10": 0.6000000238418579,
            "recall@3": 0.4333333373069763,
            "recall@5": 0.5333333611488342,
            "rr@1": 0.4000000059604645,
            "rr@10": 0.46666663885116577,
            "rr@3": 0.46666663885116577,
            "rr@5": 0.46666663885116577,
        },
    },
    "rectools": {
        "versions": {"rectools": "0.19.0", "pandas": "2.3.3", "numpy": "1.26.4"},
        "values": {
            "ap@1": 0.29,
            "ap@10": 0.44666666666666666,
            "ap@3": 0.35,
            "ap@5": 0.42000000000000004,
            "hit_rate@1": 0.6,
            "hit_rate@10": 0.8,
            "hit_rate@3": 0.8,
            "hit_rate@5": 0.8,
            "ndcg@1": 0.6,
            "ndcg@10": 0.22773936323643357,
            "ndcg@3": 0.37542298081820524,
            "ndcg@5": 0.3267828496899026,
            "precision@1": 0.6,
            "precision@10": 0.16,
            "precision@3": 0.3333333333333333,
            "precision@5": 0.27999999999999997,
            "recall@1": 0.29,
            "recall@10": 0.61,
            "recall@3": 0.43,
            "recall@5": 0.5700000000000001,
            "rr@1": 0.6,
            "rr@10": 0.6666666666666666,
            "rr@3": 0.6666666666666666,
            "rr@5": 0.6666666666666666,
        },
    },
    "replay": {
        "versions": {"replay-rec": "0.22.0", "pandas": "2.3.3"},
        "values": {
            "ap@1": 0.6,
            "ap@10": 0.47333333333333333,
            "ap@3": 0.42777777777777776,
            "ap@5": 0.44666666666666666,
            "hit_rate@1": 0.6,
            "hit_rate@10": 0.8,
            "hit_rate@3": 0.8,
            "hit_rate@5": 0.8,
            "ndcg@1": 0.6,
            "ndcg@10": 0.5633841880503718,
            "ndcg@3": 0.5120099244582865,
            "ndcg@5": 0.5392219275104729,
            "precision@1": 0.6,
            "precision@10": 0.16,
            "precision@3": 0.3333333333333333,
            "precision@5": 0.27999999999999997,
            "recall@1": 0.29,
            "recall@10": 0.61,
            "recall@3": 0.43,
            "recall@5": 0.5700000000000001,
            "rr@1": 0.6,
            "rr@10": 0.7,
            "rr@3": 0.7,
            "rr@5": 0.7,
        },
    },
    "mllib": {
        "versions": {"pyspark": "4.3.0"},
        "values": {
            "ap": 0.38055555555555554,
            "ap@1": 0.5,
            "ap@10": 0.38055555555555554,
            "ap@3": 0.3425925925925926,
            "ap@5": 0.35833333333333334,
            "ndcg@1": 0.5,
            "ndcg@10": 0.4561069549000077,
            "ndcg@3": 0.4132950685732701,
            "ndcg@5": 0.43597173778342535,
            "precision@1": 0.5,
            "precision@10": 0.13333333333333333,
            "precision@3": 0.27777777777777773,
            "precision@5": 0.23333333333333336,
            "recall@1": 0.2416666666666667,
            "recall@10": 0.5083333333333333,
            "recall@3": 0.35833333333333334,
            "recall@5": 0.47500000000000003,
        },
    },
    "recbole": {
        "versions": {"recbole": "1.2.1", "torch": "2.13.0+cpu"},
        "values": {
            "ap@1": 0.6,
            "ap@10": 0.456666666666667,
            "ap@3": 0.411111111111111,
            "ap@5": 0.43,
            "hit_rate@1": 0.6,
            "hit_rate@10": 0.8,
            "hit_rate@3": 0.8,
            "hit_rate@5": 0.8,
            "ndcg@1": 0.6,
            "ndcg@10": 0.547328345880009,
            "ndcg@3": 0.495954082287924,
            "ndcg@5": 0.52316608534011,
            "precision@1": 0.6,
            "precision@10": 0.16,
            "precision@3": 0.333333333333333,
            "precision@5": 0.28,
            "recall@1": 0.29,
            "recall@10": 0.61,
            "recall@3": 0.43,
            "recall@5": 0.57,
            "rr@1": 0.6,
            "rr@10": 0.666666666666667,
            "rr@3": 0.666666666666667,
            "rr@5": 0.666666666666667,
        },
    },
    "recommenders": {
        "versions": {"recommenders": "1.2.1", "pandas": "2.3.3"},
        "values": {
            "ap@1": 0.6666666666666666,
            "ap@10": 0.40277777777777773,
            "ap@3": 0.3518518518518518,
            "ap@5": 0.3611111111111111,
            "ndcg@1": 0.5,
            "ndcg@10": 0.4214120058615875,
            "ndcg@3": 0.36994260285990505,
            "ndcg@5": 0.3866479609838936,
            "precision@1": 0.6666666666666666,
            "precision@10": 0.19999999999999998,
            "precision@3": 0.4444444444444444,
            "precision@5": 0.3333333333333333,
            "recall@1": 0.16666666666666666,
            "recall@10": 0.6666666666666666,
            "recall@3": 0.4166666666666667,
            "recall@5": 0.5833333333333334,
        },
    },
    "lenskit": {
        "versions": {"lenskit": "2025.8.1"},
        "values": {
            "ap@1": 0.75,
            "ap@10": 0.7583333333333333,
            "ap@3": 0.6805555555555556,
            "ap@5": 0.725,
            "hit_rate@1": 0.75,
            "hit_rate@10": 1.0,
            "hit_rate@3": 1.0,
            "hit_rate@5": 1.0,
            "ndcg@1": 0.75,
            "ndcg@10": 0.6479455351780086,
            "ndcg@3": 0.5788662191964322,
            "ndcg@5": 0.6207911578139449,
            "precision@1": 0.75,
            "precision@10": 0.6416666666666666,
            "precision@3": 0.625,
            "precision@5": 0.625,
            "recall@1": 0.75,
            "recall@10": 0.7625,
            "recall@3": 0.625,
            "recall@5": 0.7125,
            "rr@1": 0.75,
            "rr@10": 0.8333333333333333,
            "rr@3": 0.8333333333333333,
            "rr@5": 0.8333333333333333,
        },
    },
}

#: the ``receval`` convention on the tool-less dataset (ties by item id ascending:
#: user 2's list is [7 8 9 55 100]). Users 1, 2, 4 (no list: 0) and 6 are averaged;
#: 3 (no relevant item) and 5 (no truth) are left out. u1: relevant 10 (3), 20 (1),
#: 30 (2), 40 (1), hits at 1 (20), 3 (10), 6 (40); u2: 9 (1) at 3, 100 (2) at 5;
#: u6: 4 relevant items, a hit at 1 of a list of one.
L3, L5, L6, L7 = math.log2(3), math.log2(5), math.log2(6), math.log2(7)
RECEVAL: dict[str, float] = {
    "precision@3": (2 / 3 + 1 / 3 + 0 + 1 / 3) / 4,
    "precision@10": (3 / 10 + 2 / 10 + 0 + 1 / 10) / 4,
    "recall@3": (2 / 4 + 1 / 2 + 0 + 1 / 4) / 4,
    "ap@3": ((1 / 1 + 2 / 3) / 3 + (1 / 3) / 2 + 0 + (1 / 1) / 3) / 4,  # / min(3, R)
    "ap@10": ((1 / 1 + 2 / 3 + 3 / 6) / 4 + (1 / 3 + 2 / 5) / 2 + 0 + (1 / 1) / 4) / 4,
    # linear gains; ideal: u1 [3 2 1 1], u2 [2 1], u6 [1 1 1 1]
    "ndcg@3": (
        (1 + 3 / 2) / (3 + 2 / L3 + 1 / 2) + (1 / 2) / (2 + 1 / L3) + 0 + 1 / (1 + 1 / L3 + 1 / 2)
    )
    / 4,
    "ndcg@10": (
        (1 + 3 / 2 + 1 / L7) / (3 + 2 / L3 + 1 / 2 + 1 / L5)
        + (1 / 2 + 2 / L6) / (2 + 1 / L3)
        + 0
        + 1 / (1 + 1 / L3 + 1 / 2 + 1 / L5)
    )
    / 4,
    "rr@10": (1 + 1 / 3 + 0 + 1) / 4,
    "hit_rate@1": (1 + 0 + 0 + 1) / 4,
}

#: options the runners' way of calling a tool needs besides its convention
#: (docs/conventions.md): Recommenders' ndcg_at_k also averages the truth's users
#: without a list, as 0
OVERRIDES: dict[str, dict[str, dict[str, Any]]] = {
    "recommenders": {"ndcg": {"missing_recs": "zero"}},
}


def _tables(tool: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The dataset as given to ``tool`` (None: with ties and every grade), as tables."""
    w = workload_for(tool) if tool else workload()
    recs = pd.DataFrame(
        [(u, i, s) for u, r in w["recs"].items() for i, s in r], columns=["user", "item", "score"]
    )
    truth = pd.DataFrame(
        [(u, i, g) for u, t in w["truth"].items() for i, g in t.items()],
        columns=["user", "item", "relevance"],
    )
    return recs, truth


def _theirs_vs_mine(tool: str) -> list[tuple[str, float, float]]:
    """(the tool's metric name, its number, receval's under the convention)."""
    recs, truth = _tables(tool)
    conv = conventions.get(tool)
    values = PINNED[tool]["values"]
    by_family: dict[str, list[str]] = {}
    for name in values:
        by_family.setdefault(receval.parse_metric(name).name, []).append(name)
    out = []
    for family, names in by_family.items():
        options = OVERRIDES.get(tool, {}).get(family, {})
        res = receval.evaluate(recs, truth, names, convention=tool, **options)
        for name in names:
            key = str(receval.parse_metric(name, conv.params))
            out.append((name, values[name], res.summary[key]))
    return out


def test_every_convention_is_pinned() -> None:
    assert set(PINNED) | {"receval"} == set(conventions.CONVENTIONS)
    assert set(PINNED) == set(VENV)


@pytest.mark.parametrize("tool", list(PINNED))
def test_convention_gives_the_tools_own_numbers(tool: str) -> None:
    checked = _theirs_vs_mine(tool)
    assert len(checked) >= 4 * len(KS), tool
    for name, theirs, mine in checked:
        # float32 tools (torchmetrics adds in float32): two float32 ulps
        f32 = conventions.get(tool).float32
        tol = 2 * float(np.spacing(np.float32(theirs))) if f32 else 1e-12
        assert abs(mine - theirs) <= tol, (tool, name, theirs, mine)


@pytest.mark.parametrize("tool", list(PINNED))
def test_the_dataset_tells_the_convention_apart(tool: str) -> None:
    """The pinned numbers are not receval's own: the dataset shows what the
    convention changes (otherwise pinning it would prove nothing)."""
    recs, truth = _tables(tool)
    values = PINNED[tool]["values"]
    res = receval.evaluate(recs, truth, sorted(values))
    own = {name: res.summary[str(receval.parse_metric(name))] for name in values}
    differ = [n for n in values if abs(own[n] - values[n]) > 1e-6]
    assert len(differ) >= 4, (tool, differ)


def test_receval_convention_by_hand() -> None:
    recs, truth = _tables(None)
    res = receval.evaluate(recs, truth, list(RECEVAL), convention="receval")
    for name, value in RECEVAL.items():
        got = res.summary[str(receval.parse_metric(name))]
        assert got == pytest.approx(value, rel=1e-12, abs=1e-12), name
