"""Off-policy estimates (receval.off_policy, issue #35 points 2 and 5): speed and
memory on a large log, bias and RMSE against a synthetic policy of known value.

    python benchmarks/off_policy.py --rows 10000000 --data bench-data/off_policy
    python benchmarks/off_policy.py --accuracy --draws 200 --draw-rows 20000
    python benchmarks/off_policy.py --slates 1000000 --data bench-data/off_policy_slates

The synthetic world: ``contexts`` users drawn uniformly, ``actions`` actions,
a true expected reward ``q(x, a)`` in (0, 1), rewards Bernoulli(q); the logging
policy a softmax of random scores (temperature 1), the evaluation policy a
softmax of ``q`` with noise (temperature 0.2), so that the two differ and the
weights are heavy-tailed. The true value is ``mean_x Σ_a π(a|x) q(x, a)``. The
reward model given to dm and the dr family is ``q`` plus N(0, 0.1) noise
(misspecified on purpose), clipped to [0, 1].

Speed: the log is written once as Parquet (row groups of 1M rows); each mode
runs in a fresh process (``--run``), which reports its wall time and its peak
resident memory (``ru_maxrss``): the whole file in memory, and
``batch_rows=1_000_000`` (one pass, out of core), each with and without the
bootstrap. Accuracy: ``--draws`` independent logs of ``--draw-rows`` rows, the
bias (mean error) and the RMSE of each estimator, with the standard error of
the bias.

Slates (``--slates S``): S slates of 5 positions (5·S rows, written slate by
slate in row groups of 1M rows), each position's action drawn independently
from the logging policy (so the pseudo-inverse's closed form holds), reward
Bernoulli(q); the evaluation policy the ranking of each context's five most
probable actions under the evaluation softmax. The slate estimators iips,
rips, sips and pi, the whole file in memory against ``batch_rows=1_000_000``,
with and without the bootstrap, each in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ESTIMATORS = ["dm", "ips", "snips", "dr", "sndr", "switch-dr"]
SLATE = ["iips", "rips", "sips", "pi"]
SLATE_LEN = 5


def world(contexts: int, actions: int, seed: int) -> dict[str, np.ndarray]:
    """The true rewards, the logging and evaluation policies, the reward model."""
    rng = np.random.default_rng(seed)
    q = rng.beta(1.0, 3.0, (contexts, actions))

    def softmax(z: np.ndarray) -> np.ndarray:
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    behaviour = softmax(rng.normal(0.0, 1.0, (contexts, actions)))
    target = softmax((q + rng.normal(0.0, 0.05, q.shape)) / 0.2)
    q_hat = np.clip(q + rng.normal(0.0, 0.1, q.shape), 0.0, 1.0)
    return {"q": q, "behaviour": behaviour, "target": target, "q_hat": q_hat}


def draw(w: dict[str, np.ndarray], rows: int, rng: np.random.Generator) -> pd.DataFrame:
    """``rows`` logged rows of the logging policy."""
    contexts, _ = w["q"].shape
    ctx = rng.integers(0, contexts, rows)
    cdf = np.cumsum(w["behaviour"][ctx], axis=1)
    action = np.minimum((rng.random(rows)[:, None] > cdf).sum(axis=1), cdf.shape[1] - 1)
    reward = (rng.random(rows) < w["q"][ctx, action]).astype(np.float64)
    return pd.DataFrame(
        {
            "context": ctx,
            "action": action,
            "reward": reward,
            "propensity": w["behaviour"][ctx, action],
        }
    )


def tables(w: dict[str, np.ndarray]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluation policy and the reward model as (context, action, ...) tables."""
    contexts, actions = w["q"].shape
    grid = {
        "context": np.repeat(np.arange(contexts), actions),
        "action": np.tile(np.arange(actions), contexts),
    }
    policy = pd.DataFrame({**grid, "probability": w["target"].ravel()})
    model = pd.DataFrame({**grid, "reward": w["q_hat"].ravel()})
    return policy, model


def write(data: Path, rows: int, contexts: int, actions: int, seed: int) -> None:
    """The log (Parquet, row groups of 1M rows), the policy and the model tables."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data.mkdir(parents=True, exist_ok=True)
    w = world(contexts, actions, seed)
    policy, model = tables(w)
    policy.to_parquet(data / "policy.parquet")
    model.to_parquet(data / "model.parquet")
    rng = np.random.default_rng(seed + 1)
    writer = None
    for lo in range(0, rows, 1_000_000):
        part = pa.Table.from_pandas(draw(w, min(1_000_000, rows - lo), rng), preserve_index=False)
        writer = writer or pq.ParquetWriter(data / "logs.parquet", part.schema)
        writer.write_table(part)
    assert writer is not None
    writer.close()
    truth = float((w["target"] * w["q"]).sum(axis=1).mean())
    (data / "meta.json").write_text(json.dumps({"rows": rows, "true_value": truth}))


def write_slates(data: Path, slates: int, contexts: int, actions: int, seed: int) -> None:
    """The slate log (slate by slate, row groups of 1M rows) and the ranking."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data.mkdir(parents=True, exist_ok=True)
    w = world(contexts, actions, seed)
    top = np.argsort(-w["target"], axis=1, kind="stable")[:, :SLATE_LEN]
    pd.DataFrame(
        {
            "context": np.repeat(np.arange(contexts), SLATE_LEN),
            "position": np.tile(np.arange(1, SLATE_LEN + 1), contexts),
            "action": top.ravel(),
        }
    ).to_parquet(data / "ranking.parquet")
    rng = np.random.default_rng(seed + 3)
    per = 1_000_000 // SLATE_LEN
    writer = None
    for lo in range(0, slates, per):
        n = min(per, slates - lo)
        ctx = np.repeat(rng.integers(0, contexts, n), SLATE_LEN)
        cdf = np.cumsum(w["behaviour"][ctx], axis=1)
        action = np.minimum((rng.random(len(ctx))[:, None] > cdf).sum(axis=1), cdf.shape[1] - 1)
        mu = w["behaviour"][ctx, action].reshape(n, SLATE_LEN)
        frame = pd.DataFrame(
            {
                "context": ctx,
                "slate": np.repeat(np.arange(lo, lo + n), SLATE_LEN),
                "position": np.tile(np.arange(1, SLATE_LEN + 1), n),
                "action": action,
                "reward": (rng.random(len(ctx)) < w["q"][ctx, action]).astype(np.float64),
                "propensity": mu.ravel(),
                "propensity_cascade": np.cumprod(mu, axis=1).ravel(),
                "propensity_slate": np.repeat(mu.prod(axis=1), SLATE_LEN),
            }
        )
        part = pa.Table.from_pandas(frame, preserve_index=False)
        writer = writer or pq.ParquetWriter(data / "slates.parquet", part.schema)
        writer.write_table(part)
    assert writer is not None
    writer.close()
    (data / "meta.json").write_text(json.dumps({"rows": slates * SLATE_LEN, "slates": slates}))


def run_mode(data: Path, mode: str) -> None:
    """One timing in this process: prints wall time and peak memory as JSON."""
    import receval

    resamples = 200 if mode.endswith("boot") else 0
    batch = 1_000_000 if mode.startswith("batches") else None
    start = time.perf_counter()
    if (data / "slates.parquet").exists():
        res = receval.off_policy(
            data / "slates.parquet",
            data / "ranking.parquet",
            SLATE,
            n_resamples=resamples,
            batch_rows=batch,
        )
    else:
        res = receval.off_policy(
            data / "logs.parquet",
            data / "policy.parquet",
            ESTIMATORS,
            reward_model=data / "model.parquet",
            switch_tau=5.0,
            n_resamples=resamples,
            batch_rows=batch,
        )
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    estimates = {e.estimator: e.estimate for e in res.estimates}
    print(json.dumps({"mode": mode, "wall_s": wall, "peak_mb": peak, "estimates": estimates}))


def speed(data: Path, repeat: int) -> None:
    """Each mode ``repeat`` times in fresh processes: the median wall time, peak memory."""
    meta = json.loads((data / "meta.json").read_text())
    if "slates" in meta:
        print(f"{meta['rows']:,} rows, {meta['slates']:,} slates of {SLATE_LEN}")
    else:
        print(f"{meta['rows']:,} rows, true value {meta['true_value']:.6f}")
    print(f"{'mode':<16} {'median s':>9} {'runs s':>22} {'peak MB':>8}")
    for mode in ("memory", "memory-boot", "batches", "batches-boot"):
        runs = []
        for _ in range(repeat):
            out = subprocess.run(
                [sys.executable, __file__, "--data", str(data), "--run", mode],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        walls = sorted(r["wall_s"] for r in runs)
        spread = ", ".join(f"{x:.1f}" for x in walls)
        peak = max(r["peak_mb"] for r in runs)
        print(f"{mode:<16} {np.median(walls):>9.1f} {spread:>22} {peak:>8.0f}")


def accuracy(draws: int, rows: int, contexts: int, actions: int, seed: int) -> None:
    """Bias and RMSE of each estimator over ``draws`` logs of ``rows`` rows."""
    import receval

    w = world(contexts, actions, seed)
    policy, model = tables(w)
    truth = float((w["target"] * w["q"]).sum(axis=1).mean())
    rng = np.random.default_rng(seed + 2)
    names = [*ESTIMATORS, "ips-clip10"]
    errors: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(draws):
        logs = draw(w, rows, rng)
        res = receval.off_policy(
            logs, policy, ESTIMATORS, reward_model=model, switch_tau=5.0, n_resamples=0
        )
        for e in res.estimates:
            errors[e.estimator].append(e.estimate - truth)
        clipped = receval.off_policy(logs, policy, ["ips"], clip=10.0, n_resamples=0)
        errors["ips-clip10"].append(clipped["ips"].estimate - truth)
    print(f"true value {truth:.6f}; {draws} logs of {rows:,} rows, {contexts} contexts")
    print(f"{'estimator':<12} {'bias':>10} {'± s.e.':>9} {'RMSE':>9}")
    for name in names:
        err = np.asarray(errors[name])
        se = err.std(ddof=1) / np.sqrt(len(err))
        print(f"{name:<12} {err.mean():>10.5f} {se:>9.5f} {np.sqrt((err**2).mean()):>9.5f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--contexts", type=int, default=100_000)
    ap.add_argument("--actions", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=Path("bench-data/off_policy"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--draw-rows", type=int, default=20_000)
    ap.add_argument("--slates", type=int, default=0, help="time the slate estimators on S slates")
    args = ap.parse_args()
    if args.run:
        run_mode(args.data, args.run)
    elif args.slates:
        meta = args.data / "meta.json"
        if not meta.exists() or json.loads(meta.read_text()).get("slates") != args.slates:
            write_slates(args.data, args.slates, args.contexts, args.actions, args.seed)
        speed(args.data, args.repeat)
    elif args.accuracy:
        accuracy(args.draws, args.draw_rows, 1000, args.actions, args.seed)
    else:
        meta = args.data / "meta.json"
        if not meta.exists() or json.loads(meta.read_text())["rows"] != args.rows:
            write(args.data, args.rows, args.contexts, args.actions, args.seed)
        speed(args.data, args.repeat)


if __name__ == "__main__":
    main()
