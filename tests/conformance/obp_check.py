"""Run Open Bandit Pipeline's estimators on a log saved by test_obp.py.

    python obp_check.py IN.npz OUT.json      (under the obp conformance venv)

IN holds action (n,), reward (n,), pscore (n,), action_dist (n, A) and q_hat
(n, A); OUT maps "name" or "name:clip" to obp's estimate. A slate log (IN has
slate_id) runs obp's slate estimators instead: SIPS, IIPS and RIPS.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from obp.ope import (
    DirectMethod,
    DoublyRobust,
    InverseProbabilityWeighting,
    SelfNormalizedDoublyRobust,
    SelfNormalizedInverseProbabilityWeighting,
    SlateIndependentIPS,
    SlateRewardInteractionIPS,
    SlateStandardIPS,
    SwitchDoublyRobust,
)


def slates(d: np.lib.npyio.NpzFile) -> dict[str, float]:
    """obp's slate estimators on a slate log."""
    base = {"slate_id": d["slate_id"], "reward": d["reward"], "position": d["position"]}
    size = int(d["position"].max()) + 1
    return {
        "sips": SlateStandardIPS(len_list=size).estimate_policy_value(
            **base, pscore=d["pscore_slate"], evaluation_policy_pscore=d["eval_slate"]
        ),
        "iips": SlateIndependentIPS(len_list=size).estimate_policy_value(
            **base,
            pscore_item_position=d["pscore"],
            evaluation_policy_pscore_item_position=d["eval_marginal"],
        ),
        "rips": SlateRewardInteractionIPS(len_list=size).estimate_policy_value(
            **base,
            pscore_cascade=d["pscore_cascade"],
            evaluation_policy_pscore_cascade=d["eval_cascade"],
        ),
    }


def main(src: str, dst: str) -> None:
    d = np.load(src)
    if "slate_id" in d:
        with open(dst, "w") as fh:
            json.dump({k: float(v) for k, v in slates(d).items()}, fh)
        return
    action, reward, pscore = d["action"], d["reward"], d["pscore"]
    dist = d["action_dist"][:, :, None]
    q_hat = d["q_hat"][:, :, None]
    clip, tau = float(d["clip"]), float(d["tau"])
    base = {"reward": reward, "action": action, "pscore": pscore, "action_dist": dist}
    model = {**base, "estimated_rewards_by_reg_model": q_hat}
    out = {
        "ips": InverseProbabilityWeighting().estimate_policy_value(**base),
        "ips:clip": InverseProbabilityWeighting(lambda_=clip).estimate_policy_value(**base),
        "snips": SelfNormalizedInverseProbabilityWeighting().estimate_policy_value(**base),
        "dm": DirectMethod().estimate_policy_value(
            action_dist=dist, estimated_rewards_by_reg_model=q_hat
        ),
        "dr": DoublyRobust().estimate_policy_value(**model),
        "dr:clip": DoublyRobust(lambda_=clip).estimate_policy_value(**model),
        "sndr": SelfNormalizedDoublyRobust().estimate_policy_value(**model),
        "switch-dr": SwitchDoublyRobust(lambda_=tau).estimate_policy_value(**model),
    }
    with open(dst, "w") as fh:
        json.dump({k: float(v) for k, v in out.items()}, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
