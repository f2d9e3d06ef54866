"""Deterministic synthetic workload for benchmarking recommender evaluation.

U users over N_ITEMS = 100,000 items with Zipf-like popularity (item ids are a
seeded permutation of the popularity order, so id order says nothing about
popularity). Per user:

* a truth set: size ~ round(lognormal) with mean about 10 (2% of users have
  none), distinct items drawn by popularity, graded 1-5;
* a top-100 list: distinct items, strictly descending positive scores, rank 1..n
  (about 10% of users get a shorter list of 1..99 items, 1% get none). Hits
  (truth items) are planted with a probability that decays with the rank so
  that about 17% of the top-10 rows are hits.

Written as long-format Parquet, sorted by user then rank:

* ``recs.parquet``:  user int64, item int64, score float64, rank int32
* ``truth.parquet``: user int64, item int64, relevance int32

Generation is vectorised NumPy, done in fixed blocks of 50,000 users with one
seeded generator per block, so a given ``--seed`` and ``--users`` always give
the same files; memory stays bounded by the block size (1M users: ~30 s,
~1 GiB RSS on the 2-core project machine).

    python benchmarks/workload.py --users 100000 --out bench-data/100k --seed 0
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N_ITEMS = 100_000
BLOCK_USERS = 50_000
LIST_LENGTH = 100

P_NO_TRUTH = 0.02
TRUTH_MEAN = 10.0
TRUTH_SIGMA = 1.0
TRUTH_MAX = 1_000
GRADE_P = np.array([0.40, 0.25, 0.15, 0.12, 0.08])  # grades 1..5

P_NO_RECS = 0.01
P_SHORT_LIST = 0.10
# P(hit at rank r) = HIT_A * r ** -HIT_B (capped by the user's truth size):
# about 17% of top-10 rows are hits
HIT_A = 0.42
HIT_B = 0.60

RECS_SCHEMA = pa.schema(
    [("user", pa.int64()), ("item", pa.int64()), ("score", pa.float64()), ("rank", pa.int32())]
)
TRUTH_SCHEMA = pa.schema([("user", pa.int64()), ("item", pa.int64()), ("relevance", pa.int32())])


def _popularity(seed: int) -> np.ndarray:
    """Popularity rank -> item id: a seeded permutation."""
    return np.random.default_rng([seed, 0xC0FFEE]).permutation(N_ITEMS).astype(np.int64)


_LOG_N1 = math.log(N_ITEMS + 1)


def _draw(rng: np.random.Generator, n: int, perm: np.ndarray) -> np.ndarray:
    """n items by Zipf-like popularity (exponent 1): P(rank k) = log((k+2)/(k+1)) / log(N+1).

    Inverse CDF of the continuous 1/x law, so O(1) per draw (no table search).
    """
    x = np.exp(rng.random(n) * _LOG_N1)
    idx = x.astype(np.int64) - 1
    np.clip(idx, 0, N_ITEMS - 1, out=idx)
    return perm[idx]


def _within(counts: np.ndarray) -> np.ndarray:
    """Position within each group (0-based) for rows grouped by consecutive counts."""
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts, counts)


ORDER_BITS = 26  # candidates per call < 2**26; keys < 2**37 (users per block * items)


def _fresh(keys: np.ndarray, exclude: np.ndarray) -> np.ndarray:
    """Mask of the first occurrence of each key that is not in ``exclude``.

    One sort of (key, position) packed into int64: the excluded copy of a key
    sorts first (position 0), so a key is kept only where its group starts with
    a candidate. (Sort-based: far faster here than np.unique / np.isin.)
    """
    n = len(keys)
    if n >= 1 << ORDER_BITS:
        raise ValueError("too many candidates for one call")
    packed = np.concatenate(
        [exclude << ORDER_BITS, (keys << ORDER_BITS) + np.arange(1, n + 1, dtype=np.int64)]
    )
    packed.sort()
    k = packed >> ORDER_BITS
    pos = packed & ((1 << ORDER_BITS) - 1)
    start = np.ones(len(packed), dtype=bool)
    start[1:] = k[1:] != k[:-1]
    keep = np.zeros(n, dtype=bool)
    keep[pos[start & (pos > 0)] - 1] = True
    return keep


def _distinct(
    rng: np.random.Generator,
    need: np.ndarray,
    perm: np.ndarray,
    exclude: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per local user u, draw need[u] distinct items by popularity, none in ``exclude``.

    ``exclude`` holds keys ``u * N_ITEMS + item``. Returns (local user, item)
    rows grouped by user, in draw order within a user.
    """
    n_users = len(need)
    got_u: list[np.ndarray] = []
    got_i: list[np.ndarray] = []
    deficit = need.astype(np.int64).copy()
    taken = exclude
    rnd = 0
    while deficit.sum() > 0:
        users = np.flatnonzero(deficit > 0)
        m = deficit[users]
        c = np.ceil(m * (1.3 if rnd == 0 else 3.0)).astype(np.int64) + 10
        cu = np.repeat(users, c)
        ci = _draw(rng, len(cu), perm)
        keys = cu * N_ITEMS + ci
        ok = _fresh(keys, taken)
        cu, ci, keys = cu[ok], ci[ok], keys[ok]
        counts = np.bincount(cu, minlength=n_users)
        pos = _within(counts[counts > 0])
        keep = pos < deficit[cu]
        cu, ci, keys = cu[keep], ci[keep], keys[keep]
        got_u.append(cu)
        got_i.append(ci)
        deficit -= np.bincount(cu, minlength=n_users)
        taken = np.concatenate([taken, keys])
        rnd += 1
        if rnd > 50:  # impossible in practice: 100k items, lists of <= 1,000
            raise RuntimeError("could not draw enough distinct items")
    if not got_u:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    u = np.concatenate(got_u)
    i = np.concatenate(got_i)
    if len(got_u) > 1:
        order = np.argsort(u, kind="stable")  # rounds appended in order: stable keeps it
        u, i = u[order], i[order]
    return u, i


def generate_block(
    seed: int, block: int, first_user: int, n_users: int, perm: np.ndarray
) -> tuple[pa.Table, pa.Table, int, int]:
    """One block of users: (recs, truth, top-10 rows, top-10 hits)."""
    rng = np.random.default_rng([seed, block])
    users = np.arange(first_user, first_user + n_users, dtype=np.int64)

    # --- truth ---------------------------------------------------------------
    mu = math.log(TRUTH_MEAN) - TRUTH_SIGMA**2 / 2
    size = np.rint(rng.lognormal(mu, TRUTH_SIGMA, n_users)).astype(np.int64)
    np.clip(size, 1, TRUTH_MAX, out=size)
    size[rng.random(n_users) < P_NO_TRUTH] = 0
    tu, ti = _distinct(rng, size, perm, np.zeros(0, np.int64))
    grades = (rng.choice(5, size=len(tu), p=GRADE_P) + 1).astype(np.int32)
    tcount = np.bincount(tu, minlength=n_users)
    tstart = np.cumsum(tcount) - tcount

    # --- list lengths and planted hits ----------------------------------------
    length = np.full(n_users, LIST_LENGTH, dtype=np.int64)
    r = rng.random(n_users)
    short = r < P_SHORT_LIST
    length[short] = rng.integers(1, LIST_LENGTH, short.sum())
    length[r >= 1 - P_NO_RECS] = 0
    ru = np.repeat(np.arange(n_users, dtype=np.int64), length)
    rank = _within(length) + 1
    p_hit = HIT_A * np.arange(1, LIST_LENGTH + 1, dtype=np.float64) ** -HIT_B
    hit = rng.random(len(ru)) < p_hit[rank - 1]
    hit_no = np.cumsum(hit)  # running count of hits within the user -> 1-based hit number
    hit_starts = np.repeat(np.cumsum(length) - length, length)
    before = np.concatenate([[0], hit_no])[hit_starts]
    hit_no = hit_no - before
    hit &= hit_no <= tcount[ru]
    item = np.empty(len(ru), dtype=np.int64)
    # the j-th hit of a user is the user's j-th truth item (truth is in random draw order)
    item[hit] = ti[tstart[ru[hit]] + hit_no[hit] - 1]

    # --- non-hit rows: distinct popular items not in the user's truth ---------
    miss = ~hit
    need = np.bincount(ru[miss], minlength=n_users)
    truth_keys = tu * N_ITEMS + ti
    _, mi = _distinct(rng, need, perm, truth_keys)
    item[miss] = mi

    # --- scores: strictly descending within a list ------------------------------
    step = rng.exponential(0.01, len(ru)) + 1e-6
    csum = np.cumsum(step)
    csum -= np.concatenate([[0.0], csum])[np.repeat(np.cumsum(length) - length, length)]
    base = rng.uniform(2.0, 3.0, n_users)  # keeps every score > 0 (lists lose ~1.0 over 100 ranks)
    score = base[ru] - csum

    recs = pa.table(
        {
            "user": users[ru],
            "item": item,
            "score": score,
            "rank": rank.astype(np.int32),
        },
        schema=RECS_SCHEMA,
    )
    truth = pa.table({"user": users[tu], "item": ti, "relevance": grades}, schema=TRUTH_SCHEMA)
    top10 = rank <= 10
    return recs, truth, int(top10.sum()), int((hit & top10).sum())


def generate(n_users: int, out: str | os.PathLike, seed: int = 0) -> dict:
    """Write recs.parquet and truth.parquet for ``n_users`` users into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    perm = _popularity(seed)
    t0 = time.perf_counter()
    n_recs = n_truth = 0
    top10 = top10_hits = 0
    with (
        pq.ParquetWriter(out / "recs.parquet", RECS_SCHEMA) as wr,
        pq.ParquetWriter(out / "truth.parquet", TRUTH_SCHEMA) as wt,
    ):
        for block, first in enumerate(range(0, n_users, BLOCK_USERS)):
            n = min(BLOCK_USERS, n_users - first)
            recs, truth, n10, h10 = generate_block(seed, block, first, n, perm)
            wr.write_table(recs)
            wt.write_table(truth)
            n_recs += recs.num_rows
            n_truth += truth.num_rows
            top10 += n10
            top10_hits += h10
    meta = {
        "users": n_users,
        "items": N_ITEMS,
        "seed": seed,
        "recs_rows": n_recs,
        "truth_rows": n_truth,
        "top10_hit_share": top10_hits / top10 if top10 else 0.0,
        "generate_s": round(time.perf_counter() - t0, 3),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def ensure(n_users: int, out: str | os.PathLike, seed: int = 0) -> dict:
    """Generate unless ``out`` already holds this exact workload (same users and seed)."""
    out = Path(out)
    meta_path = out / "meta.json"
    if meta_path.exists() and (out / "recs.parquet").exists() and (out / "truth.parquet").exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("users") == n_users and meta.get("seed") == seed:
            return meta
    return generate(n_users, out, seed)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, required=True)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    meta = generate(args.users, args.out, args.seed)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
