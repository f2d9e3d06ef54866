"""receval.off_policy against Open Bandit Pipeline 0.5.7 (``obp.ope``, under the
obp conformance interpreter; tests/conformance/setup_venvs.sh): on random logs
(one context per row; a random stochastic evaluation policy over 2 to 8 actions;
uniform or skewed logging propensities; a random reward model per context and
action), every estimate equals obp's to 1e-9: IPS (and clipped, obp's
``lambda_``), SNIPS, DM, DR (and clipped), SNDR and Switch-DR; on random slate
logs (2 to 5 positions, a logging and an evaluation policy independent per
position), the slate estimators SIPS, IIPS and RIPS (obp's SlateStandardIPS,
SlateIndependentIPS, SlateRewardInteractionIPS). obp has no pseudo-inverse
estimator.

A missing interpreter or obp skips, unless ``RECEVAL_CONFORMANCE_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.analysis.off_policy import off_policy

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENVS = Path(os.environ.get("RECEVAL_CONFORMANCE_DIR", ROOT / ".conformance"))
REQUIRED = os.environ.get("RECEVAL_CONFORMANCE_REQUIRED") == "1"


def _obp(arrays: dict, tmp: Path) -> dict:
    python = VENVS / "obp" / "bin" / "python"
    if not python.exists():
        if REQUIRED:
            pytest.fail(f"no interpreter at {python} (run tests/conformance/setup_venvs.sh)")
        pytest.skip(f"no interpreter at {python}")
    np.savez(tmp / "in.npz", **arrays)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), str(HERE / "obp_check.py"), str(tmp / "in.npz"), str(tmp / "out.json")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if "No module named 'obp'" in proc.stderr and not REQUIRED:
        pytest.skip("obp is not installed in the obp venv")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads((tmp / "out.json").read_text())


@pytest.mark.parametrize("seed", range(5))
def test_off_policy_matches_obp(seed: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(50, 3000)), int(rng.integers(2, 9))
    behaviour = rng.dirichlet(np.ones(k) * (0.3 if seed % 2 else 5.0), n)
    action = np.array([rng.choice(k, p=p) for p in behaviour])
    pscore = behaviour[np.arange(n), action]
    dist = rng.dirichlet(np.ones(k), n)
    q_hat = rng.random((n, k))
    reward = (rng.random(n) < q_hat[np.arange(n), action]).astype(float)
    clip, tau = float(rng.uniform(1, 5)), float(rng.uniform(1, 5))
    theirs = _obp(
        {
            "action": action,
            "reward": reward,
            "pscore": pscore,
            "action_dist": dist,
            "q_hat": q_hat,
            "clip": clip,
            "tau": tau,
        },
        tmp_path,
    )
    logs = pd.DataFrame(
        {"context": np.arange(n), "action": action, "reward": reward, "propensity": pscore}
    )
    grid = {"context": np.repeat(np.arange(n), k), "action": np.tile(np.arange(k), n)}
    policy = pd.DataFrame({**grid, "probability": dist.ravel()})
    model = pd.DataFrame({**grid, "reward": q_hat.ravel()})
    names = ["ips", "snips", "dm", "dr", "sndr", "switch-dr"]
    ours = off_policy(logs, policy, names, reward_model=model, switch_tau=tau, n_resamples=0)
    clipped = off_policy(logs, policy, ["ips", "dr"], reward_model=model, clip=clip, n_resamples=0)
    for name in names:
        assert ours[name].estimate == pytest.approx(theirs[name], abs=1e-9, rel=0), name
    for name in ("ips", "dr"):
        got = clipped[name].estimate
        assert got == pytest.approx(theirs[f"{name}:clip"], abs=1e-9, rel=0), name


@pytest.mark.parametrize("seed", range(3))
def test_slate_estimators_match_obp(seed: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(100 + seed)
    n, size = int(rng.integers(30, 800)), int(rng.integers(2, 6))
    slate_id = np.repeat(np.arange(n), size)
    position = np.tile(np.arange(size), n)
    action = rng.integers(0, 10, n * size)
    reward = (rng.random(n * size) < 0.3).astype(float)
    mu = rng.uniform(0.05, 1.0, (n, size))
    pi = rng.uniform(0.0, 1.0, (n, size))
    arrays = {
        "slate_id": slate_id,
        "position": position,
        "reward": reward,
        "pscore": mu.ravel(),
        "pscore_cascade": np.cumprod(mu, axis=1).ravel(),
        "pscore_slate": np.repeat(mu.prod(axis=1), size),
        "eval_marginal": pi.ravel(),
        "eval_cascade": np.cumprod(pi, axis=1).ravel(),
        "eval_slate": np.repeat(pi.prod(axis=1), size),
    }
    theirs = _obp(arrays, tmp_path)
    logs = pd.DataFrame(
        {
            "context": slate_id,
            "position": position,
            "action": action,
            "reward": reward,
            "propensity": arrays["pscore"],
            "propensity_cascade": arrays["pscore_cascade"],
            "propensity_slate": arrays["pscore_slate"],
        }
    )
    policy = {
        "probability": arrays["eval_marginal"],
        "cascade": arrays["eval_cascade"],
        "slate": arrays["eval_slate"],
    }
    ours = off_policy(logs, policy, ["sips", "iips", "rips"], n_resamples=0)
    for name in ("sips", "iips", "rips"):
        assert ours[name].estimate == pytest.approx(theirs[name], abs=1e-9, rel=0), name
