"""Known values of several metrics at several cut-offs asked in ONE call (issue #37).

``tests/test_known_values.py`` asks one metric per call, so mixing metrics and
cut-offs in a call was covered only by the random reference. Here every metric
family of the registry is asked together with others, at several cut-offs
(shared cut-offs across metrics, an alias next to its canonical name), on
small data worked by hand: each expected number below is written as the
arithmetic that gives it, never computed by receval. The data hold lists
shorter than k, users without a relevant item (left out: NaN), users without
a list (scored 0), users only in the lists (left out) and equal scores.

A registry-driven test checks that no metric of ``receval metrics`` is left
out, and another that a multi-metric call gives the bits of the metrics asked
one by one (an extra check, not a replacement of the hand values).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

import receval
from receval.metrics.registry import REGISTRY
from tests.reference import by_evaluate

NAN = math.nan
L3 = math.log2(3)  # the discount of position 2 is 1 / L3
L5 = math.log2(5)  # the discount of position 4 is 1 / L5
EPS = 1e-5  # trec_eval's INFAP_EPSILON


def _jsd_bits(eps: list[float], t: list[float]) -> float:
    """Jensen-Shannon divergence in bits, by the textbook formula (0 log 0 = 0)."""
    mid = [(a + b) / 2 for a, b in zip(eps, t, strict=True)]
    kl_e = sum(a * math.log2(a / m) for a, m in zip(eps, mid, strict=True) if a > 0)
    kl_t = sum(b * math.log2(b / m) for b, m in zip(t, mid, strict=True) if b > 0)
    return kl_e / 2 + kl_t / 2


# --- A: the binary ranking metrics ------------------------------------------
# u1: list [1 2 3 4 5], relevant {1, 3, 6}: hits at positions 1 and 3, R = 3
# u2: list [7 8] (shorter than most k), relevant {8 9 10 11}: a hit at 2, R = 4
# u3: a list, but its only truth row is graded 0: no relevant item -> left out
# u4: relevant {15}, no list -> scored 0 (an empty list)
# u5: a list, not in the truth -> left out
A_RECS = {"u1": [1, 2, 3, 4, 5], "u2": [7, 8], "u3": [12, 13, 14], "u5": [16]}
A_TRUTH = {"u1": [1, 3, 6], "u2": [8, 9, 10, 11], "u3": {12: 0}, "u4": [15]}
A_USERS = ("u1", "u2", "u3", "u4", "u5")
I3 = 1 + 1 / L3 + 1 / 2  # ideal DCG@3 of 3 or more relevant items
I4 = I3 + 1 / L5  # ideal DCG@4 (and @5) of 4 relevant items

#: metric -> ((value of u1, u2, u3, u4, u5), mean over u1, u2, u4)
A_EXPECTED: dict[str, tuple[tuple[float, ...], float]] = {
    "precision@1": ((1, 0, NAN, 0, NAN), 1 / 3),
    "p@1": ((1, 0, NAN, 0, NAN), 1 / 3),  # the alias, asked in the same call
    "precision@3": ((2 / 3, 1 / 3, NAN, 0, NAN), (2 / 3 + 1 / 3) / 3),
    "precision@5": ((2 / 5, 1 / 5, NAN, 0, NAN), (2 / 5 + 1 / 5) / 3),  # u2 still / 5
    "precision@5[denominator=retrieved]": ((2 / 5, 1 / 2, NAN, 0, NAN), (2 / 5 + 1 / 2) / 3),
    "recall@2": ((1 / 3, 1 / 4, NAN, 0, NAN), (1 / 3 + 1 / 4) / 3),
    "recall@5": ((2 / 3, 1 / 4, NAN, 0, NAN), (2 / 3 + 1 / 4) / 3),
    "recall@2[denominator=min_k_relevant]": ((1 / 2, 1 / 2, NAN, 0, NAN), 1 / 3),
    # F1 = 2PR / (P + R): u1 P = R = 2/3; u2 P = 1/3, R = 1/4
    "f1@3": ((2 / 3, 2 * (1 / 3) * (1 / 4) / (1 / 3 + 1 / 4), NAN, 0, NAN), (2 / 3 + 2 / 7) / 3),
    "hit_rate@1": ((1, 0, NAN, 0, NAN), 1 / 3),
    "hit_rate@2": ((1, 1, NAN, 0, NAN), 2 / 3),
    "hits@5": ((2, 1, NAN, 0, NAN), 1),
    # AP@k = (Σ precision at each hit within k) / min(k, R)
    "ap@3": (((1 / 1 + 2 / 3) / 3, (1 / 2) / 3, NAN, 0, NAN), (5 / 9 + 1 / 6) / 3),
    "ap@5": (((1 / 1 + 2 / 3) / 3, (1 / 2) / 4, NAN, 0, NAN), (5 / 9 + 1 / 8) / 3),
    "map@5[denominator=relevant]": (((1 + 2 / 3) / 3, (1 / 2) / 4, NAN, 0, NAN), 49 / 216),
    "ap@5[denominator=hits]": (((1 + 2 / 3) / 2, (1 / 2) / 1, NAN, 0, NAN), (5 / 6 + 1 / 2) / 3),
    "rr@1": ((1, 0, NAN, 0, NAN), 1 / 3),
    "mrr@5": ((1, 1 / 2, NAN, 0, NAN), (1 + 1 / 2) / 3),
    "rr": ((1, 1 / 2, NAN, 0, NAN), (1 + 1 / 2) / 3),
    # precision at R: u1 2 hits in the top 3, u2 1 hit in the top 4
    "r_precision": ((2 / 3, 1 / 4, NAN, 0, NAN), (2 / 3 + 1 / 4) / 3),
    "n_retrieved@3": ((3, 2, NAN, 0, NAN), 5 / 3),
    "n_relevant": ((3, 4, NAN, 1, NAN), (3 + 4 + 1) / 3),
    # hits@2 / min(2, R)
    "relative_precision@2": ((1 / 2, 1 / 2, NAN, 0, NAN), 1 / 3),
    # hits² / (min(k, n) · R)
    "set_ap@5": ((2**2 / (5 * 3), 1 / (2 * 4), NAN, 0, NAN), (4 / 15 + 1 / 8) / 3),
    # hits − (min(k, n) − hits)
    "utility@3": ((2 - 1, 1 - 1, NAN, 0, NAN), 1 / 3),
    "ndcg@1": ((1, 0, NAN, 0, NAN), 1 / 3),
    "ndcg@3": (
        ((1 + 1 / 2) / I3, (1 / L3) / I3, NAN, 0, NAN),
        ((1 + 1 / 2) / I3 + (1 / L3) / I3) / 3,
    ),
    "ndcg@5": (
        ((1 + 1 / 2) / I3, (1 / L3) / I4, NAN, 0, NAN),
        ((1 + 1 / 2) / I3 + (1 / L3) / I4) / 3,
    ),
    "dcg@3": ((1 + 1 / 2, 1 / L3, NAN, 0, NAN), (1 + 1 / 2 + 1 / L3) / 3),
    # interpolated precision, u1 by position: 1, 2/3, 2/3, 1/2, 2/5; u2: 1/2, 1/2.
    # recall 0.5: c = round(1.5) = 2 (u1: 2nd hit at 3 -> 2/3); u2: round(2) = 2 > 1 hit -> 0
    "iprec@5[recall=0.5]": ((2 / 3, 0, NAN, 0, NAN), (2 / 3) / 3),
    # recall 0 within the top 2: the precision interpolated at the first hit
    "iprec@2": ((1, 1 / 2, NAN, 0, NAN), (1 + 1 / 2) / 3),
    # 11 levels: u1 c = round(x·3) = 0,0,1,1,1,2,2,2,2,3,3 -> 1 ×5, 2/3 ×4, 0 ×2;
    # u2 c = round(x·4) = 0,0,1,1,2,... -> 1/2 ×4, 0 ×7
    "iprec_avg": (((5 + 4 * 2 / 3) / 11, 4 * (1 / 2) / 11, NAN, 0, NAN), (23 / 33 + 2 / 11) / 3),
}

# --- B: equal scores (ties by item id ascending) and AUC --------------------
# u1 scores: 5 .9 | 3 .5, 1 .5 | 4 .2, 2 .2 | 6 .1 -> list [5 1 3 2 4 6], relevant {1, 2}
# u2 scores: 9 1, 8 1, 7 1 | 6 .5 -> list [7 8 9 6], relevant {9}
B_RECS = pd.DataFrame(
    {
        "user": [1] * 6 + [2] * 4,
        "item": [5, 3, 1, 4, 2, 6, 9, 8, 7, 6],
        "score": [0.9, 0.5, 0.5, 0.2, 0.2, 0.1, 1.0, 1.0, 1.0, 0.5],
    }
)
B_TRUTH = {1: [1, 2], 2: [9]}
B_USERS = (1, 2)
B_EXPECTED: dict[str, tuple[tuple[float, ...], float]] = {
    "precision@2": ((1 / 2, 0), 1 / 4),
    "precision@3": ((1 / 3, 1 / 3), 1 / 3),
    "rr@1": ((0, 0), 0),
    "rr@3": ((1 / 2, 1 / 3), (1 / 2 + 1 / 3) / 2),
    "ndcg@2": (((1 / L3) / (1 + 1 / L3), 0), (1 / L3) / (1 + 1 / L3) / 2),
    "ndcg@4": (
        ((1 / L3 + 1 / L5) / (1 + 1 / L3), (1 / 2) / 1),
        ((1 / L3 + 1 / L5) / (1 + 1 / L3) + 1 / 2) / 2,
    ),
    "ap@4": (((1 / 2 + 2 / 4) / 2, (1 / 3) / 1), (1 / 2 + 1 / 3) / 2),
    # relevant × non-relevant pairs of the list ordered by score, equal scores ½:
    # u1: item 1 (.5) vs 5, 3, 4, 6: 0 + ½ + 1 + 1; item 2 (.2): 0 + 0 + ½ + 1 -> 4 / 8
    # u2: item 9 (1) vs 7, 8, 6: ½ + ½ + 1 -> 2 / 3
    "auc": ((4 / 8, 2 / 3), (1 / 2 + 2 / 3) / 2),
}

# --- C: graded relevance ------------------------------------------------------
# u1: list [1 2 3 4], grades 1: 1, 2: 3, 5: 2, 3: 0 (judged, not relevant); 4 unjudged
#     gains in the list [1 3 0 0]; ideal [3 2 1]
# u2: list [6 7], grades 7: 2 -> gains [0 2]; ideal [2]
# u3: its only grade is 0 -> left out
C_RECS = {1: [1, 2, 3, 4], 2: [6, 7], 3: [9]}
C_TRUTH = {1: {1: 1, 2: 3, 5: 2, 3: 0}, 2: {7: 2}, 3: {9: 0}}
C_USERS = (1, 2, 3)
C1_DCG2 = 1 + 3 / L3  # u1's DCG@2 (and @3, @4: positions 3, 4 hold no gain)
C1_IDCG = [3, 3 + 2 / L3, 3 + 2 / L3 + 1 / 2]  # u1's ideal DCG@1, @2, @3 (= whole)
# Rndcg (m_Rndcg.c): the list's end counts only when n > R' + 1: u1 (n 4, R' 3) and
# u2 (n 2, R' 1) end at R' + 1 (pytrec_eval 0.5.11: 0.5398623602797206 and 0)
C1_RNDCG = (1 / 3 + C1_DCG2 / C1_IDCG[1] + C1_DCG2 / C1_IDCG[2]) / 3
C2_RNDCG = (0 / 2) / 1
C_EXPECTED: dict[str, tuple[tuple[float, ...], float]] = {
    "dcg@2": ((C1_DCG2, 2 / L3, NAN), (C1_DCG2 + 2 / L3) / 2),
    # exp gains 2^g − 1: 1, 7 (u1); 3 (u2)
    "dcg@4[gain=exp]": ((1 + 7 / L3, 3 / L3, NAN), (1 + 7 / L3 + 3 / L3) / 2),
    "ndcg@1": ((1 / 3, 0 / 2, NAN), 1 / 6),
    "ndcg@3": ((C1_DCG2 / C1_IDCG[2], (2 / L3) / 2, NAN), (C1_DCG2 / C1_IDCG[2] + 1 / L3) / 2),
    "ndcg@3[gain=exp]": (
        ((1 + 7 / L3) / (7 + 3 / L3 + 1 / 2), (3 / L3) / 3, NAN),
        ((1 + 7 / L3) / (7 + 3 / L3 + 1 / 2) + 1 / L3) / 2,
    ),
    "ndcg@3[gain=binary]": (
        ((1 + 1 / L3) / I3, 1 / L3, NAN),
        ((1 + 1 / L3) / I3 + 1 / L3) / 2,
    ),
    # ideal = the top 2 retrieved, re-sorted: u1 [3 1], u2 [2 0]
    "ndcg@2[ideal=retrieved]": (
        (C1_DCG2 / (3 + 1 / L3), (2 / L3) / 2, NAN),
        (C1_DCG2 / (3 + 1 / L3) + 1 / L3) / 2,
    ),
    # ideal = 2 items at the user's top grade: u1 [3 3], u2 [2 2]
    "ndcg@2[ideal=k]": (
        (C1_DCG2 / (3 + 3 / L3), (2 / L3) / (2 + 2 / L3), NAN),
        (C1_DCG2 / (3 + 3 / L3) + (2 / L3) / (2 + 2 / L3)) / 2,
    ),
    # Järvelin's discount 1 / max(1, log2 i): 1, 1, 1 / L3
    "ndcg@3[discount=jarvelin]": (
        ((1 + 3) / (3 + 2 + 1 / L3), 2 / 2, NAN),
        (4 / (5 + 1 / L3) + 1) / 2,
    ),
    # (1 − p) Σ (g_i / user's top grade) p^(i − 1), p = 0.8
    "rbp@3": (
        (0.2 * (1 / 3 + 3 / 3 * 0.8), 0.2 * (2 / 2 * 0.8), NAN),
        (0.2 * (1 / 3 + 0.8) + 0.16) / 2,
    ),
    # R_i = (2^g − 1) / 2^3 (3: the truth's top grade): u1 R = 1/8, 7/8; u2 R = 0, 3/8
    "err@3": (
        (1 / 8 + (1 / 2) * (7 / 8) * (1 - 1 / 8), (1 / 2) * (3 / 8), NAN),
        (65 / 128 + 3 / 16) / 2,
    ),
    # G: u1 C = 3, 5, ... S = 1, 4, ...: (1 / log2(2 + 3 − 1) + 3 / log2(2 + 5 − 4)) / 6;
    #    u2 C = 2, 3, S = 0, 2: (2 / log2(2 + 3 − 2)) / 2
    "g": (((1 / 2 + 3 / L3) / 6, (2 / L3) / 2, NAN), ((1 / 2 + 3 / L3) / 6 + 1 / L3) / 2),
    # u1: items 1, 2 at positions 1, 2; item 5 missed: DCG@n / whole IDCG
    "ndcg_rel": (
        ((1 / 3 + C1_DCG2 / C1_IDCG[1] + C1_DCG2 / C1_IDCG[2]) / 3, (2 / L3) / 2, NAN),
        ((1 / 3 + C1_DCG2 / C1_IDCG[1] + C1_DCG2 / C1_IDCG[2]) / 3 + 1 / L3) / 2,
    ),
    # levels after each grade of the ideal (u1: 1, 2, 3; u2: 1) and n when n > R' + 1
    "rndcg": ((C1_RNDCG, C2_RNDCG, NAN), (C1_RNDCG + C2_RNDCG) / 2),
}

# --- D: judgments (trec_eval's measures; negative_grades="unjudged") ---------
# u1: list [1 2 3 4 5]: 1 judged non-relevant (0), 2 relevant, 3 pooled but unjudged
#     (-1), 4 not in the truth (unjudged), 5 relevant; also 6 relevant and 7 judged
#     non-relevant, not listed. R = 3, N = 2 judged non-relevant.
# u2: list [8 9]: 8 unjudged, 9 relevant; 10 judged non-relevant. R = 1, N = 1.
D_RECS = {1: [1, 2, 3, 4, 5], 2: [8, 9]}
D_TRUTH = {1: {1: 0, 2: 1, 3: -1, 5: 1, 6: 1, 7: 0}, 2: {9: 1, 10: 0}}
D_USERS = (1, 2)
# infAP terms: 1/(j+1) + (j/(j+1))·((r+d+u)/j)·((r+ε)/(r+d+2ε)), j = 0-based position
D1_INFAP = (
    (1 / 2 + (1 / 2) * (1 / 1) * (EPS / (1 + 2 * EPS)))  # item 2: r 0, d 1, u 0
    + (1 / 5 + (4 / 5) * (3 / 4) * ((1 + EPS) / (2 + 2 * EPS)))  # item 5: r 1, d 1, u 1
) / 3
D2_INFAP = (1 / 2 + (1 / 2) * (0 / 1) * (EPS / (2 * EPS))) / 1  # item 9: r = d = u = 0
D1_RESID = 0.8**5 + 0.2 * (0.8**2 + 0.8**3)  # unjudged at positions 3, 4
D2_RESID = 0.8**2 + 0.2 * 0.8**0  # unjudged at position 1
#: metric -> ((u1, u2), summary)
D_EXPECTED: dict[str, tuple[tuple[float, ...], float]] = {
    "judged_nonrelevant@1": ((1, 0), 1 / 2),
    "judged_nonrelevant@5": ((1, 0), 1 / 2),
    "judged@2": ((2 / 2, 1 / 2), 3 / 4),
    # ir_measures' Judged@k divides by min(k, n): u2 lists 2 items
    "judged@5": ((3 / 5, 1 / 2), (3 / 5 + 1 / 2) / 2),
    "judged@10": ((3 / 5, 1 / 2), (3 / 5 + 1 / 2) / 2),
    "unjudged@2": ((0 / 2, 1 / 2), 1 / 4),
    "unjudged@5": ((2 / 5, 1 / 5), 3 / 10),
    # (1/R) Σ (1 − min(nr, R) / min(N, R)): u1 items 2 and 5 each below 1 judged non-relevant
    "bpref": ((((1 - 1 / 2) + (1 - 1 / 2)) / 3, 1 / 1), 2 / 3),
    "bpref@2": (((1 - 1 / 2) / 3, 1 / 1), (1 / 6 + 1) / 2),
    # per user: ln(value); summary: the geometric mean
    "gm_bpref": ((math.log(1 / 3), math.log(1)), math.sqrt(1 / 3 * 1)),
    # AP / R: u1 (1/2 + 2/5) / 3, u2 (1/2) / 1
    "gm_ap": ((math.log((1 / 2 + 2 / 5) / 3), math.log(1 / 2)), math.sqrt(3 / 10 * 1 / 2)),
    "infap": ((D1_INFAP, D2_INFAP), (D1_INFAP + D2_INFAP) / 2),
    # (1/R) Σ 1 / log2(2 + non-relevant items above): u1 1 and 3 above; u2 1 above
    "bin_g": (((1 / L3 + 1 / L5) / 3, 1 / L3), ((1 / L3 + 1 / L5) / 3 + 1 / L3) / 2),
    "rbp_residual": ((D1_RESID, D2_RESID), (D1_RESID + D2_RESID) / 2),
    "rbp_residual@2": ((0, D2_RESID), D2_RESID / 2),
    "precision@5": ((2 / 5, 1 / 5), 3 / 10),
}

# --- E: beyond accuracy (train, catalog, popular set, item features) ---------
# training popularity (distinct users): a 4, b 2, c 1, d 1, e unseen (1); 4 users,
# 8 interactions: the short head (80% = 6.4) is {a, b, c}
E_TRAIN = {"t1": ["a", "b"], "t2": ["a", "c"], "t3": ["a", "b", "d"], "t4": ["a"]}
E_CATALOG = ["a", "b", "c", "d", "e", "f"]
E_FEATURES = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0], "e": [1.0, 0.0]}
E_RECS = {"u1": ["a", "b", "e"], "u2": ["c", "a"], "u3": ["a", "b", "c"], "u4": ["d", "f"]}
# u4 has no relevant item: left out of every metric, its list of the aggregates too
E_TRUTH = {"u1": ["e", "b"], "u2": ["c"], "u3": ["a", "c"], "u4": {"d": 0}}
E_USERS = ("u1", "u2", "u3", "u4")
S2 = math.sqrt(2)
NONE = (NAN, NAN, NAN, NAN)  # aggregates: no per-user value
E_EXPECTED: dict[str, tuple[tuple[float, ...], float]] = {
    # self-information −log2(pop / 4): a 0, b 1, c 2, e 2
    "novelty@2": (((0 + 1) / 2, (2 + 0) / 2, (0 + 1) / 2, NAN), 2 / 3),
    "novelty@3": (((0 + 1 + 2) / 3, (2 + 0) / 2, (0 + 1 + 2) / 3, NAN), 1),
    "arp@1": ((4, 1, 4, NAN), 3),
    "arp@3": (((4 + 2 + 1) / 3, (1 + 4) / 2, (4 + 2 + 1) / 3, NAN), (7 / 3 + 5 / 2 + 7 / 3) / 3),
    "long_tail@3": ((1 / 3, 0, 0, NAN), 1 / 9),  # e is outside the head
    # relevant and not popular ({a} is) / k
    "serendipity@2": ((1 / 2, 1 / 2, 0, NAN), 1 / 3),
    "serendipity@3": ((2 / 3, 1 / 3, 1 / 3, NAN), 4 / 9),
    # 1 − mean pairwise cosine: u1 (0, 1, 0); u2 1/√2; u3 (0, 1/√2, 1/√2)
    "ild@3": (
        (1 - 1 / 3, 1 - 1 / S2, 1 - (2 / S2) / 3, NAN),
        (2 / 3 + 1 - 1 / S2 + 1 - S2 / 3) / 3,
    ),
    "diversity@2": ((1 - 0, 1 - 1 / S2, 1 - 0, NAN), (3 - 1 / S2) / 3),
    "user_coverage@3": ((1, 0, 1, NAN), 2 / 3),
    "user_coverage@2": ((1, 1, 1, NAN), 1),
    "coverage@1": (NONE, 2 / 6),  # {a, c} of 6 catalog items
    "coverage@3": (NONE, 4 / 6),  # {a, b, c, e}
    "prediction_coverage@2": (NONE, (2 + 2 + 2) / (3 * 6)),
    # top-3 counts of the 6 catalog items, ascending: 0 0 1 2 2 3 (Σ 8); weights 2i − 7
    "gini@3": (NONE, (-5 * 0 - 3 * 0 - 1 * 1 + 1 * 2 + 3 * 2 + 5 * 3) / (6 * 8)),
    # top-2 slots: a 3, b 2, c 1 of 6
    "entropy@2": (
        NONE,
        -(1 / 2 * math.log2(1 / 2) + 1 / 3 * math.log2(1 / 3) + 1 / 6 * math.log2(1 / 6)),
    ),
    # pairs of top-2 lists share 1, 2, 1 items: 1 − (4 / 3) / 2
    "personalization@2": (NONE, 1 - (4 / 3) / 2),
    "precision@2": ((1 / 2, 1 / 2, 1 / 2, NAN), 1 / 2),
}

# --- F: item groups --------------------------------------------------------------
# groups: a, b pop; c, d tail. Histories: u1 [a], u2 [c d].
# u1: list [b c d], relevant {b, d}; u2: list [a b], relevant {a, c}
F_GROUPS = {"a": "pop", "b": "pop", "c": "tail", "d": "tail"}
F_TRAIN = {"u1": ["a"], "u2": ["c", "d"]}
F_RECS = {"u1": ["b", "c", "d"], "u2": ["a", "b"]}
F_TRUTH = {"u1": ["b", "d"], "u2": ["a", "c"]}
F_USERS = ("u1", "u2")
# u1's top 2 [b c]: attention 1 to pop, 1/L3 to tail; u2's [a b]: all to pop
F1_AWRF = 1 - _jsd_bits([1 / (1 + 1 / L3), (1 / L3) / (1 + 1 / L3)], [1 / 2, 1 / 2])
F2_AWRF = 1 - _jsd_bits([1, 0], [1 / 2, 1 / 2])
F_EXPECTED: dict[str, tuple[tuple[float, ...], float]] = {
    # top-2 slots: pop 3, tail 1; unseen items: pop 1 + 2, tail 2 + 0 -> P = 1, 1/2:
    # std / mean = (1/4) / (3/4)
    "rsp@2": ((NAN, NAN), (1 / 4) / (3 / 4)),
    # without the histories: P = 3/4, 1/4 -> (1/4) / (1/2)
    "rsp@2[exclude_train=false]": ((NAN, NAN), (1 / 4) / (1 / 2)),
    # relevant pairs pop 2, tail 2; hits in the top 2: pop 2 (b, a), tail 0 -> P = 1, 0
    "reo@2": ((NAN, NAN), (1 / 2) / (1 / 2)),
    # in the top 3 u1's d is a tail hit -> P = 1, 1/2
    "reo@3": ((NAN, NAN), (1 / 4) / (3 / 4)),
    "exposure@2[group=pop]": ((NAN, NAN), (1 + 1 + 1 / L3) / (1 + 1 / L3 + 1 + 1 / L3)),
    # geometric attention 1, 1/2, 1/4: tail gets u1's 1/2 + 1/4 of 1.75 + 1.5
    "exposure@3[group=tail,discount=geometric]": ((NAN, NAN), (1 / 2 + 1 / 4) / (1.75 + 1.5)),
    "awrf@2": ((F1_AWRF, F2_AWRF), (F1_AWRF + F2_AWRF) / 2),
    # Σ p ln(p / ((1 − α) q + α p)), α = 0.01: u1 p = (1, 0), q = (1/3, 2/3);
    # u2 p = (0, 1), q = (1, 0)
    "miscalibration@3": (
        (math.log(1 / (0.99 / 3 + 0.01)), math.log(1 / 0.01)),
        (math.log(1 / (0.99 / 3 + 0.01)) + math.log(100)) / 2,
    ),
    # top 1: u1 [b] -> q = (1, 0): ln(1 / 1) = 0
    "calibration@1": ((0, math.log(1 / 0.01)), math.log(100) / 2),
    "recall@2": ((1 / 2, 1 / 2), 1 / 2),
}

#: case -> (recommendations, truth, keyword arguments, users, expected)
CASES: dict[str, tuple[Any, Any, dict[str, Any], tuple[Any, ...], dict[str, Any]]] = {
    "binary": (A_RECS, A_TRUTH, {}, A_USERS, A_EXPECTED),
    "ties": (B_RECS, B_TRUTH, {}, B_USERS, B_EXPECTED),
    "graded": (C_RECS, C_TRUTH, {}, C_USERS, C_EXPECTED),
    "judged": (D_RECS, D_TRUTH, {"negative_grades": "unjudged"}, D_USERS, D_EXPECTED),
    "beyond": (
        E_RECS,
        E_TRUTH,
        {
            "train": E_TRAIN,
            "catalog": E_CATALOG,
            "popular": ["a"],
            "item_features": E_FEATURES,
        },
        E_USERS,
        E_EXPECTED,
    ),
    "groups": (F_RECS, F_TRUTH, {"train": F_TRAIN, "item_groups": F_GROUPS}, F_USERS, F_EXPECTED),
}
#: metrics that are aggregates or geometric means: their summary is not the mean of
#: the per-user values
NOT_A_MEAN = {"gm_bpref", "gm_ap"}

# --- G: rating prediction (receval.evaluate_ratings) -----------------------------
# (actual, predicted): u1 (4, 3) (2, 2) (5, 4); u2 (3, 9) (1, 1); errors 1 0 1 −6 0
G_RATINGS = {
    "user": ["u1", "u1", "u1", "u2", "u2"],
    "item": [1, 2, 3, 4, 5],
    "actual": [4, 2, 5, 3, 1],
    "predicted": [3, 2, 4, 9, 1],
}
G_EXPECTED: dict[str, float] = {
    "mae": (1 + 0 + 1 + 6 + 0) / 5,
    "mse": (1 + 0 + 1 + 36 + 0) / 5,
    "rmse": math.sqrt(38 / 5),
    # mean actual 3: SS_tot = 1 + 1 + 4 + 0 + 4
    "r2": 1 - 38 / 10,
    # deviations: actual 1 −1 2 0 −2; predicted (mean 3.8) −.8 −1.8 .2 5.2 −2.8
    "pearson": 7 / math.sqrt(10 * 38.8),
    # the predicted ranks are 3 2 4 5 1: deviations 0 −1 1 2 −2
    "spearman": 7 / math.sqrt(10 * 10),
    # 10 pairs: discordant (1st, 4th) and (3rd, 4th) -> (8 − 2) / 10
    "kendall": (8 - 2) / 10,
    "mae[per_user=true]": ((1 + 0 + 1) / 3 + (6 + 0) / 2) / 2,
    "rmse[per_user=true]": (math.sqrt(2 / 3) + math.sqrt(36 / 2)) / 2,
    # u1: actual 4 2 5 (mean 11/3), predicted 3 2 4 (mean 3): 3 / sqrt(14/3 · 2); u2: 1
    "pearson[per_user=true]": (3 / math.sqrt(14 / 3 * 2) + 1) / 2,
}


def _key(metric: str) -> str:
    return str(receval.parse_metric(metric))


def _same(got: float, expected: float, label: str) -> None:
    if math.isnan(expected):
        assert math.isnan(got), f"{label}: expected NaN, got {got}"
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), label


@pytest.mark.parametrize("case", list(CASES))
def test_several_metrics_and_cutoffs_in_one_call(case: str) -> None:
    recs, truth, kwargs, users, expected = CASES[case]
    res = receval.evaluate(recs, truth, list(expected), **kwargs)
    for metric, (per_user, mean) in expected.items():
        key = _key(metric)
        _same(float(res.summary[key]), mean, f"{case} {metric}: mean")
        if all(math.isnan(v) for v in per_user):  # an aggregate: no per-user column
            assert key not in res.per_user.columns, f"{case} {metric}"
            continue
        for user, value in zip(users, per_user, strict=True):
            got = float(res.per_user.loc[user, key]) if user in res.per_user.index else NAN
            _same(got, value, f"{case} {metric}: user {user}")


@pytest.mark.parametrize("case", list(CASES))
def test_hand_worked_means_agree_with_hand_worked_users(case: str) -> None:
    """The mean written above is the mean of the users' values written above
    (a check of the arithmetic of this file, independent of receval)."""
    for metric, (per_user, mean) in CASES[case][4].items():
        defined = [v for v in per_user if not math.isnan(v)]
        if not defined or receval.parse_metric(metric).name in NOT_A_MEAN:
            continue
        assert math.fsum(defined) / len(defined) == pytest.approx(mean, rel=1e-12), metric


def test_rating_metrics_in_one_call() -> None:
    res = receval.evaluate_ratings(G_RATINGS, list(G_EXPECTED))
    for metric, value in G_EXPECTED.items():
        _same(float(res.summary[_key(metric)]), value, metric)


def test_every_metric_of_the_registry_is_asked_with_others() -> None:
    """No metric family is left out of the calls above (the registry drives it)."""
    asked = {receval.parse_metric(m).name for case in CASES.values() for m in case[4]}
    asked |= {receval.parse_metric(m).name for m in G_EXPECTED}
    # metrics of a door of their own are asked through it (tests/test_door_only_metrics.py)
    assert {n for n, d in REGISTRY.items() if by_evaluate(d)} - asked == set()
    # and every call mixes metrics and cut-offs
    for name, case in CASES.items():
        specs = [receval.parse_metric(m) for m in case[4]]
        assert len({s.name for s in specs}) >= 3, name
        assert len({s.k for s in specs}) >= 2, name


@pytest.mark.parametrize("case", list(CASES))
def test_one_call_equals_the_metrics_one_by_one(case: str) -> None:
    """The bits of a multi-metric call are those of each metric asked alone."""
    recs, truth, kwargs, _, expected = CASES[case]
    together = receval.evaluate(recs, truth, list(expected), **kwargs)
    for metric in expected:
        key = _key(metric)
        alone = receval.evaluate(recs, truth, metric, **kwargs)
        a, b = together.summary[key], alone.summary[key]
        assert (math.isnan(a) and math.isnan(b)) or a == b, (case, metric, a, b)
        if key in alone.per_user.columns:
            col = together.per_user[key].reindex(alone.per_user.index)
            pd.testing.assert_series_equal(col, alone.per_user[key], check_exact=True)


def test_rating_call_equals_the_metrics_one_by_one() -> None:
    together = receval.evaluate_ratings(G_RATINGS, list(G_EXPECTED)).summary
    for metric in G_EXPECTED:
        alone = receval.evaluate_ratings(G_RATINGS, metric).summary
        assert together[_key(metric)] == alone[_key(metric)], metric
