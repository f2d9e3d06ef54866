"""``receval off-policy``: off-policy estimates of a policy's value from logged bandit feedback."""

from __future__ import annotations

from typing import Annotated

import typer

from receval.cli._base import Output, command, show_out
from receval.cli.flags import JsonFlag, OutputOpt, Resamples, Seed
from receval.cli.inputs import render
from receval.errors import OptionError


def _column(flag: str, role: str) -> typer.models.OptionInfo:
    return typer.Option(flag, help=f"the {role} column of the log (default: {role})")


@command("off-policy")
def off_policy_command(
    logs: Annotated[
        str,
        typer.Argument(
            metavar="LOGS",
            help="the log: Parquet/CSV with context (or user), action, reward, propensity",
        ),
    ],
    policy: Annotated[
        str,
        typer.Argument(
            metavar="POLICY",
            help="the evaluation policy: Parquet/CSV of (context, action, probability) or "
            "(context, position, action) for a deterministic ranking",
        ),
    ],
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            "-e",
            help="dm, ips, snips, dr, sndr, switch-dr; or the slate estimators iips, rips, "
            "sips, pi (repeat the flag; default: ips snips dm dr)",
        ),
    ] = None,
    reward_model: Annotated[
        str | None,
        typer.Option(
            "--reward-model",
            help="Parquet/CSV of (action, reward) or (context, action, reward) estimates for "
            "dm and the dr family (default: the mean logged reward of each action)",
        ),
    ] = None,
    clip: Annotated[
        float | None, typer.Option("--clip", help="cap of the weights of ips and dr")
    ] = None,
    switch_tau: Annotated[
        float | None, typer.Option("--switch-tau", help="the weight threshold of switch-dr")
    ] = None,
    ci: Annotated[float, typer.Option("--ci", help="the interval's level")] = 0.95,
    n_resamples: Resamples = 1000,
    seed: Seed = 0,
    batch_rows: Annotated[
        int | None,
        typer.Option(
            "--batch-rows",
            help="read a Parquet LOGS this many rows at a time, in one pass (out of core)",
        ),
    ] = None,
    context_col: Annotated[str | None, _column("--context-col", "context")] = None,
    action_col: Annotated[str | None, _column("--action-col", "action")] = None,
    reward_col: Annotated[str | None, _column("--reward-col", "reward")] = None,
    propensity_col: Annotated[str | None, _column("--propensity-col", "propensity")] = None,
    position_col: Annotated[str | None, _column("--position-col", "position")] = None,
    output: OutputOpt = Output.table,
    as_json: JsonFlag = False,
) -> None:
    """Estimate the value of the policy in POLICY from the logged actions, rewards and
    logging propensities in LOGS, each estimate with a Poisson-bootstrap interval
    over contexts and an effective sample size, e.g.
    -e ips -e snips -e dr --clip 10."""
    from receval.analysis.off_policy import off_policy as run

    given = {
        "context": context_col,
        "action": action_col,
        "reward": reward_col,
        "propensity": propensity_col,
        "position": position_col,
    }
    try:
        result = run(
            logs,
            policy,
            tuple(estimator) if estimator else ("ips", "snips", "dm", "dr"),
            reward_model=reward_model,
            clip=clip,
            switch_tau=switch_tau,
            ci=ci,
            n_resamples=n_resamples,
            seed=seed,
            columns={k: v for k, v in given.items() if v is not None},
            batch_rows=batch_rows,
        )
    except OptionError as exc:  # the flag is --estimator, repeated
        if exc.option != "estimators":
            raise
        raise OptionError(
            "estimator", exc.value, allowed=exc.allowed, expected=exc.expected, reason=exc.reason
        ) from None
    shown_as = Output.json if as_json else output
    show_out(render(result, shown_as), shown_as)
