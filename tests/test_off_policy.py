"""receval.off_policy: hand-worked values on a tiny log, a literal row-by-row
reference on random logs, the checks on its inputs, the bootstrap's seeding,
and the table and file doors (obp: tests/conformance/test_obp.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.analysis.off_policy import ESTIMATORS, off_policy
from receval.errors import InputError, OptionError

ALL = list(ESTIMATORS)


def _tiny() -> tuple[pd.DataFrame, pd.DataFrame]:
    logs = pd.DataFrame(
        {
            "context": [1, 1, 2, 2],
            "action": ["a", "b", "a", "b"],
            "reward": [1.0, 0.0, 1.0, 1.0],
            "propensity": [0.5, 0.5, 0.25, 0.75],
        }
    )
    policy = pd.DataFrame(
        {
            "context": [1, 1, 2, 2],
            "action": ["a", "b", "a", "b"],
            "probability": [0.8, 0.2, 0.5, 0.5],
        }
    )
    return logs, policy


def test_tiny_log_by_hand() -> None:
    # w = 1.6, 0.4, 2, 2/3; built-in q̂(a) = 1, q̂(b) = 0.5; q̂π = 0.9 (x=1), 0.75 (x=2)
    logs, policy = _tiny()
    res = off_policy(logs, policy, ALL, switch_tau=0.5, n_resamples=0)
    assert res["ips"].estimate == pytest.approx(16 / 15, abs=1e-15)
    assert res["snips"].estimate == pytest.approx(32 / 35, abs=1e-15)
    assert res["dm"].estimate == pytest.approx(0.825, abs=1e-15)
    assert res["dr"].estimate == pytest.approx(0.825 + 1 / 30, abs=1e-15)
    assert res["sndr"].estimate == pytest.approx(0.825 + 1 / 35, abs=1e-15)
    assert res["switch-dr"].estimate == pytest.approx(0.775, abs=1e-15)  # only w=0.4 kept
    assert res["switch-dr"].notes["switched_rows"] == 3
    ess = (14 / 3) ** 2 / (1.6**2 + 0.4**2 + 2**2 + (2 / 3) ** 2)
    assert res["ips"].ess == pytest.approx(ess, abs=1e-12)
    assert res["dm"].ess == 4
    assert res.notes["unsupported_mass"] == 0 and res.notes["max_weight"] == 2
    clipped = off_policy(logs, policy, ["ips", "dr"], clip=1.5, n_resamples=0)
    assert clipped["ips"].estimate == pytest.approx(11 / 12, abs=1e-15)
    assert clipped["dr"].estimate == pytest.approx(0.825 + (-0.2 + 1 / 3) / 4, abs=1e-15)
    assert clipped["ips"].notes["clipped_rows"] == 2
    assert np.isnan(res["ips"].low)
    assert list(res.to_frame().index) == ALL
    assert "snips" in str(res)


def test_unsupported_mass_is_counted() -> None:
    logs, policy = _tiny()
    res = off_policy(logs.iloc[[0, 2, 3]], policy, ["ips"], n_resamples=0)
    # context 1 logged only "a": the policy's 0.2 on "b" is unsupported (one of 3 rows)
    assert res.notes["unsupported_mass"] == pytest.approx(0.2 / 3, abs=1e-15)
    assert res.notes["unsupported_contexts"] == 1


def test_deterministic_ranking_takes_the_first_position() -> None:
    logs, _ = _tiny()
    ranking = pd.DataFrame(
        {"context": [1, 1, 2, 2], "position": [2, 1, 1, 2], "action": ["a", "b", "a", "b"]}
    )
    res = off_policy(logs, ranking, ["ips"], n_resamples=0)
    # picks b for x=1 (w = 2, r = 0) and a for x=2 (w = 4, r = 1)
    assert res["ips"].estimate == pytest.approx(1.0, abs=1e-15)


def _random(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n, k, m = 400, 5, 60
    ctx = rng.integers(0, m, n)
    behaviour = rng.dirichlet(np.ones(k), m)
    action = (rng.random(n)[:, None] > np.cumsum(behaviour[ctx], axis=1)).sum(axis=1)
    action = np.minimum(action, k - 1)
    logs = pd.DataFrame(
        {
            "context": ctx,
            "action": action,
            "reward": rng.random(n),
            "propensity": behaviour[ctx, action],
        }
    )
    grid = {"context": np.repeat(np.arange(m), k), "action": np.tile(np.arange(k), m)}
    policy = pd.DataFrame({**grid, "probability": rng.dirichlet(np.ones(k), m).ravel()})
    model = pd.DataFrame({**grid, "reward": rng.random(m * k)})
    return logs, policy, model


def _literal(
    logs: pd.DataFrame,
    policy: pd.DataFrame,
    model: pd.DataFrame,
    name: str,
    clip: float | None,
    tau: float,
) -> float:
    """Row by row in plain Python, the formulas as written in the docs."""
    pi = {(c, a): p for c, a, p in policy.itertuples(index=False)}
    q = {(c, a): v for c, a, v in model.itertuples(index=False)}
    acts = {}
    for c, a in pi:
        acts.setdefault(c, []).append(a)
    n = len(logs)
    s_dm = s_ips = s_w = s_wr = s_dr = s_sw = s_res = 0.0
    for c, a, r, p in logs.itertuples(index=False):
        w = pi.get((c, a), 0.0) / p
        wc = min(w, clip) if clip is not None else w
        qpi = sum(pi[(c, b)] * q[(c, b)] for b in acts[c])
        s_dm += qpi
        s_ips += wc * r
        s_w += w
        s_wr += w * r
        s_dr += qpi + wc * (r - q[(c, a)])
        s_sw += qpi + (w if w <= tau else 0.0) * (r - q[(c, a)])
        s_res += w * (r - q[(c, a)])
    return {
        "dm": s_dm / n,
        "ips": s_ips / n,
        "snips": s_wr / s_w,
        "dr": s_dr / n,
        "sndr": s_dm / n + s_res / s_w,
        "switch-dr": s_sw / n,
    }[name]


@pytest.mark.parametrize("seed", range(3))
def test_equals_a_literal_reference(seed: int) -> None:
    logs, policy, model = _random(seed)
    clip = [None, 2.0, 0.7][seed]
    tau = [1.0, 3.0, 0.5][seed]
    res = off_policy(
        logs, policy, ALL, reward_model=model, clip=clip, switch_tau=tau, n_resamples=0
    )
    for name in ALL:
        want = _literal(logs, policy, model, name, clip if name in ("ips", "dr") else None, tau)
        assert res[name].estimate == pytest.approx(want, abs=1e-12, rel=0), name


def test_array_policy_equals_table_policy() -> None:
    logs, policy, model = _random(3)
    table = off_policy(logs, policy, ALL, reward_model=model, switch_tau=1.0, n_resamples=50)
    pi = logs.merge(policy, on=["context", "action"], how="left")["probability"].to_numpy()
    q_logged = logs.merge(model, on=["context", "action"], how="left")["reward_y"].to_numpy()
    both = policy.merge(model, on=["context", "action"])
    qpi = (both["probability"] * both["reward"]).groupby(both["context"]).sum()
    arrays = off_policy(
        logs,
        pi,
        ALL,
        reward_model=(q_logged, qpi.reindex(logs["context"]).to_numpy()),
        switch_tau=1.0,
        n_resamples=50,
    )
    for a, b in zip(table.estimates, arrays.estimates, strict=True):
        assert a.estimate == pytest.approx(b.estimate, abs=1e-12)
        assert (a.low, a.high) == pytest.approx((b.low, b.high), abs=1e-12)


def test_interval_is_seeded_and_independent_of_row_order() -> None:
    logs, policy, model = _random(4)
    kw = {"reward_model": model, "n_resamples": 200}
    a = off_policy(logs, policy, ALL[:5], seed=7, **kw)
    b = off_policy(logs.sample(frac=1.0, random_state=1), policy, ALL[:5], seed=7, **kw)
    c = off_policy(logs, policy, ALL[:5], seed=8, **kw)
    for x, y, z in zip(a.estimates, b.estimates, c.estimates, strict=True):
        assert x.estimate == pytest.approx(y.estimate, abs=1e-12)
        assert (x.low, x.high) == pytest.approx((y.low, y.high), abs=1e-12)
        assert x.low <= x.estimate <= x.high or x.estimator == "sndr"
        assert (x.low, x.high) != (z.low, z.high)


@pytest.mark.parametrize("slates", [False, True])
def test_interval_does_not_depend_on_how_the_ids_are_written(slates: bool) -> None:
    """Contexts and actions as integers, digit strings and text: the same
    estimates, intervals and effective sample sizes, bit for bit."""
    rng = np.random.default_rng(3)
    n = 400
    if slates:
        size = 3
        logs = pd.DataFrame(
            {
                "context": np.repeat(rng.permutation(n), size),
                "position": np.tile(np.arange(size), n),
                "action": rng.integers(0, 6, n * size),
                "reward": rng.integers(0, 2, n * size).astype(float),
                "propensity": rng.uniform(0.1, 1.0, n * size),
                "propensity_cascade": rng.uniform(0.05, 1.0, n * size),
                "propensity_slate": np.repeat(rng.uniform(0.01, 1.0, n), size),
            }
        )
        arrays = {
            "probability": rng.uniform(0, 1, n * size),
            "cascade": rng.uniform(0, 1, n * size),
            "slate": rng.uniform(0, 1, n * size),
        }
        names = list(SLATE)
    else:
        logs, policy, _ = _random(6)
        names = ["ips", "snips", "dm", "dr"]

    def run(context: object, action: object) -> list[tuple[float, ...]]:
        frame = logs.copy()
        frame["context"] = frame["context"].map(context)
        frame["action"] = frame["action"].map(action)
        if slates:
            pol: object = arrays
        else:
            pol = policy.copy()
            pol["context"] = pol["context"].map(context)  # type: ignore[index]
            pol["action"] = pol["action"].map(action)  # type: ignore[index]
        res = off_policy(frame, pol, names, n_resamples=200, seed=5)
        return [(e.estimate, e.low, e.high, e.ess) for e in res.estimates]

    ints = run(int, int)
    assert run(str, str) == ints
    assert run(lambda x: f"u{x}", lambda x: f"item-{x}") == ints


def test_file_doors_equal_the_table(tmp_path: Path) -> None:
    logs, policy, model = _random(5)
    want = off_policy(logs, policy, ALL[:5], reward_model=model, n_resamples=30)
    logs.to_parquet(tmp_path / "logs.parquet")
    policy.to_csv(tmp_path / "policy.csv", index=False)
    model.to_csv(tmp_path / "model.csv", index=False)
    got = off_policy(
        tmp_path / "logs.parquet",
        str(tmp_path / "policy.csv"),
        ALL[:5],
        reward_model=tmp_path / "model.csv",
        n_resamples=30,
    )
    import pyarrow as pa

    arrow = off_policy(
        pa.Table.from_pandas(logs), policy, ALL[:5], reward_model=model, n_resamples=30
    )
    for a, b, c in zip(want.estimates, got.estimates, arrow.estimates, strict=True):
        assert a == b == c


def _with(frame: pd.DataFrame, row: int, col: str, value: object) -> pd.DataFrame:
    frame = frame.copy()
    frame[col] = frame[col].astype(object)
    frame.loc[row, col] = value
    return frame


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (0.0, "could not have taken"),
        (-0.1, r"\(0, 1\]"),
        (1.5, r"\(0, 1\]"),
        (float("nan"), "finite numbers"),
    ],
)
def test_bad_propensity(value: float, words: str) -> None:
    logs, policy = _tiny()
    with pytest.raises(InputError, match=words) as err:
        off_policy(_with(logs, 2, "propensity", value), policy, n_resamples=0)
    assert err.value.row == 2 and err.value.column == "propensity"


def test_policy_checks() -> None:
    logs, policy = _tiny()
    with pytest.raises(InputError, match=r"context 2 sum to 1\.2"):
        off_policy(logs, _with(policy, 3, "probability", 0.7), n_resamples=0)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        off_policy(logs, _with(policy, 3, "probability", -0.5), n_resamples=0)
    with pytest.raises(InputError, match="no probabilities for context 2"):
        off_policy(logs, policy.iloc[:2], n_resamples=0)
    with pytest.raises(InputError, match="twice"):
        off_policy(logs, pd.concat([policy, policy.iloc[:1]]), n_resamples=0)
    with pytest.raises(InputError, match="one probability per logged row"):
        off_policy(logs, np.ones(3), ["ips"], n_resamples=0)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        off_policy(logs, np.array([0.5, 0.5, 2.0, 0.5]), ["ips"], n_resamples=0)
    with pytest.raises(OptionError, match="reward_model"):
        off_policy(logs, np.full(4, 0.5), ["dr"], n_resamples=0)
    with pytest.raises(InputError, match="no reward column: expected one named 'reward'"):
        off_policy(logs.drop(columns="reward"), policy, n_resamples=0)


def test_option_checks() -> None:
    logs, policy = _tiny()
    with pytest.raises(OptionError, match="estimators='magic'"):
        off_policy(logs, policy, ["magic"])
    with pytest.raises(OptionError, match="switch_tau"):
        off_policy(logs, policy, ["switch-dr"])
    with pytest.raises(OptionError, match="clip"):
        off_policy(logs, policy, clip=0)
    with pytest.raises(OptionError, match="seed"):
        off_policy(logs, policy, seed=-1)
    with pytest.raises(InputError, match="no estimate for context"):
        off_policy(
            logs, policy, ["dm"], reward_model=pd.DataFrame({"action": ["a"], "reward": [1.0]})
        )


SLATE = ["iips", "rips", "sips", "pi"]


def _tiny_slates() -> tuple[pd.DataFrame, pd.DataFrame]:
    logs = pd.DataFrame(
        {
            "context": ["u1", "u1", "u2", "u2"],
            "position": [1, 2, 2, 1],
            "action": ["x", "y", "x", "y"],
            "reward": [1.0, 0.0, 1.0, 0.0],
            "propensity": [0.5, 0.5, 0.5, 0.25],
            "propensity_cascade": [0.5, 0.25, 0.125, 0.25],
            "propensity_slate": [0.25, 0.25, 0.125, 0.125],
        }
    )
    ranking = pd.DataFrame(
        {
            "context": ["u1", "u1", "u2", "u2"],
            "position": [1, 2, 1, 2],
            "action": ["x", "z", "y", "x"],
        }
    )
    return logs, ranking


def test_tiny_slates_by_hand() -> None:
    logs, ranking = _tiny_slates()
    res = off_policy(logs, ranking, SLATE, n_resamples=0)
    assert res["iips"].estimate == 2.0  # (1/0.5 + 1/0.5) / 2 slates
    assert res["rips"].estimate == 5.0  # (1/0.5 + 1/0.125) / 2
    assert res["sips"].estimate == 4.0  # u1's slate differs; u2: 1/0.125 · 1 / 2
    assert res["pi"].estimate == 3.0  # (1 · (2 + 0 − 1) + 1 · (4 + 2 − 1)) / 2
    assert res.notes["slates"] == 2


def _literal_slates(logs: pd.DataFrame, policy: dict, name: str) -> float:
    prop = {
        "iips": "propensity",
        "pi": "propensity",
        "rips": "propensity_cascade",
        "sips": "propensity_slate",
    }[name]
    key = {"iips": "probability", "pi": "probability", "rips": "cascade", "sips": "slate"}[name]
    slates: dict = {}
    for i, row in enumerate(logs.itertuples(index=False)):
        slates.setdefault(row.context, []).append((getattr(row, prop), policy[key][i], row.reward))
    total = 0.0
    for rows in slates.values():
        if name == "pi":
            w = sum(p / mu for mu, p, _ in rows) - (len(rows) - 1)
            total += w * sum(r for _, _, r in rows)
        else:
            total += sum(p / mu * r for mu, p, r in rows)
    return total / len(slates)


def test_slates_equal_a_literal_reference() -> None:
    rng = np.random.default_rng(11)
    n, size = 150, 4
    mu = rng.uniform(0.05, 1.0, (n, size))
    pi = rng.uniform(0.0, 1.0, (n, size))
    logs = pd.DataFrame(
        {
            "context": np.repeat(rng.permutation(n), size),
            "position": np.tile(np.arange(size), n),
            "action": rng.integers(0, 9, n * size),
            "reward": rng.random(n * size),
            "propensity": mu.ravel(),
            "propensity_cascade": np.cumprod(mu, axis=1).ravel(),
            "propensity_slate": np.repeat(mu.prod(axis=1), size),
        }
    )
    policy = {
        "probability": pi.ravel(),
        "cascade": np.cumprod(pi, axis=1).ravel(),
        "slate": np.repeat(pi.prod(axis=1), size),
    }
    shuffled = rng.permutation(len(logs))
    res = off_policy(logs, policy, SLATE, n_resamples=100)
    again = off_policy(
        logs.iloc[shuffled], {k: v[shuffled] for k, v in policy.items()}, SLATE, n_resamples=100
    )
    for name in SLATE:
        want = _literal_slates(logs, policy, name)
        assert res[name].estimate == pytest.approx(want, abs=1e-12, rel=0), name
        assert again[name].estimate == pytest.approx(want, abs=1e-12, rel=0), name
        assert (res[name].low, res[name].high) == pytest.approx(
            (again[name].low, again[name].high), abs=1e-12
        )


def test_slate_checks() -> None:
    logs, ranking = _tiny_slates()
    with pytest.raises(InputError, match="need the position"):
        off_policy(logs.drop(columns="position"), ranking, ["iips"])
    with pytest.raises(InputError, match="finite numbers"):
        off_policy(_with(logs, 1, "position", None), ranking, ["iips"])
    with pytest.raises(InputError, match="appears twice"):
        off_policy(_with(logs, 1, "position", 1), ranking, ["iips"])
    with pytest.raises(InputError, match="cascade"):
        off_policy(logs.drop(columns="propensity_cascade"), ranking, ["rips"])
    with pytest.raises(InputError, match="same on every row"):
        off_policy(_with(logs, 1, "propensity_slate", 0.5), ranking, ["sips"])
    with pytest.raises(InputError, match="ranks nothing for context 'u2'"):
        off_policy(logs, ranking.iloc[:2], ["iips"])
    with pytest.raises(InputError, match="'cascade'"):
        off_policy(logs, {"probability": np.ones(4)}, ["rips"])
    with pytest.raises(OptionError, match="not both"):
        off_policy(logs, ranking, ["iips", "ips"])


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from receval.cli import main

    logs, policy = _tiny()
    logs.rename(columns={"context": "user_id"}).to_csv(tmp_path / "logs.csv", index=False)
    policy.rename(columns={"context": "user_id"}).to_parquet(tmp_path / "policy.parquet")
    args = [
        str(tmp_path / "logs.csv"),
        str(tmp_path / "policy.parquet"),
        "--context-col",
        "user_id",
    ]
    code = main(["off-policy", *args, "-e", "ips", "-e", "dr", "--json", "--n-resamples", "20"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["estimates"]["ips"]["estimate"] == pytest.approx(16 / 15, abs=1e-15)
    assert out["estimates"]["dr"]["estimate"] == pytest.approx(0.825 + 1 / 30, abs=1e-15)
    logs.rename(columns={"context": "user_id"}).to_parquet(tmp_path / "logs.parquet")
    pd.DataFrame({"action": ["a", "b"], "reward": [1.0, 0.5]}).to_csv(tmp_path / "q.csv")
    streamed = [
        str(tmp_path / "logs.parquet"),
        *args[1:],
        "--reward-model",
        str(tmp_path / "q.csv"),
    ]
    assert main(["off-policy", *streamed, "--batch-rows", "3", "-e", "dr", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["estimates"]["dr"]["estimate"] == pytest.approx(0.825 + 1 / 30, abs=1e-15)
    assert main(["off-policy", *args, "-e", "switch-dr"]) == 2
    assert "switch-dr needs --switch-tau (a number >= 0)" in capsys.readouterr().err
    assert main(["off-policy", *args, "-e", "magic"]) == 2
    assert "--estimator magic is not allowed" in capsys.readouterr().err
    logs.loc[1, "propensity"] = 0.0
    logs.rename(columns={"context": "user_id"}).to_csv(tmp_path / "logs.csv", index=False)
    assert main(["off-policy", *args]) == 2
    assert "could not have taken" in capsys.readouterr().err


def test_batches_equal_the_whole_log(tmp_path: Path) -> None:
    logs, policy, model = _random(6)
    logs.to_parquet(tmp_path / "logs.parquet", row_group_size=50)
    kw = {"reward_model": model, "clip": 2.0, "switch_tau": 1.5, "n_resamples": 60}
    whole = off_policy(tmp_path / "logs.parquet", policy, ALL, **kw)
    parts = off_policy(tmp_path / "logs.parquet", policy, ALL, batch_rows=37, **kw)
    for a, b in zip(whole.estimates, parts.estimates, strict=True):
        assert (a.estimate, a.low, a.high, a.ess) == pytest.approx(
            (b.estimate, b.low, b.high, b.ess), abs=1e-12
        )
        assert a.notes == b.notes and a.rows == b.rows
    assert parts.notes == {"rows": 400, "max_weight": whole.notes["max_weight"]}
    bad = _with(logs, 150, "propensity", 0.0)
    bad["propensity"] = bad["propensity"].astype(float)
    bad.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="could not have taken") as err:
        off_policy(tmp_path / "bad.parquet", policy, ["ips"], batch_rows=37)
    assert err.value.row == 150
    with pytest.raises(OptionError, match="reward_model"):
        off_policy(tmp_path / "logs.parquet", policy, ["dr"], batch_rows=37)
    with pytest.raises(OptionError, match="batch_rows"):
        off_policy(logs, policy, ["ips"], batch_rows=37)
    with pytest.raises(OptionError, match="batch_rows"):
        off_policy(tmp_path / "logs.parquet", policy, ["ips"], batch_rows=0)


def test_a_bad_row_of_a_file_names_the_file_and_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log or policy read from a file: its bad row is named by the file and
    line (the header is line 1), in Python and on the command line."""
    from receval.cli import main

    logs = tmp_path / "logs.csv"
    logs.write_text("context,action,reward,propensity\nc1,a,1,0.5\nc1,b,,0.5\nc2,a,0,0.5\n")
    policy = tmp_path / "pol.csv"
    policy.write_text("context,action,probability\nc1,a,1\nc2,a,1\n")
    with pytest.raises(InputError) as got:
        off_policy(logs, policy, ["ips"], n_resamples=0)
    assert got.value.source == str(logs) and got.value.line == 3
    assert "found a missing value (empty or NaN) (1 such row)" in str(got.value)
    assert main(["off-policy", str(logs), str(policy), "-e", "ips"]) == 2
    assert f"{logs}, line 3: column 'reward'" in capsys.readouterr().err
    logs.write_text("context,action,reward,propensity\nc1,a,1,0.5\nc2,a,0,0\nc2,b,0,0\n")
    with pytest.raises(InputError) as got:
        off_policy(logs, policy, ["ips"], n_resamples=0)
    assert got.value.line == 3 and "2 such rows" in str(got.value)


@pytest.mark.parametrize("estimator", ["dm", "dr", "sndr"])
def test_an_action_never_logged_gets_the_mean_reward_with_the_built_in_model(
    estimator: str,
) -> None:
    """The built-in reward model fills an action never logged with the mean
    reward (docs/off-policy.md, "Reward model"): written into the looked-up
    estimates, which pandas 3 hands out read-only (was a ValueError)."""
    logs = pd.DataFrame(
        {"context": [1, 2], "action": ["a", "a"], "reward": [1.0, 0.0], "propensity": [0.5, 0.5]}
    )
    policy = pd.DataFrame(
        {
            "context": [1, 1, 2, 2],
            "action": ["a", "b", "a", "b"],
            "probability": [0.8, 0.2, 0.5, 0.5],
        }
    )
    got = off_policy(logs, policy, [estimator], n_resamples=0)[estimator].estimate
    # q(a) = 0.5 (the mean of a's rewards), q(b) = 0.5 (never logged: the mean reward)
    if estimator == "dm":
        assert got == pytest.approx(0.5)
    assert np.isfinite(got)


def test_one_resample_is_refused() -> None:
    """One resample gives an interval of zero width that need not hold the
    estimate (as compare refuses it); 0 means no interval."""
    logs, policy = _tiny()
    with pytest.raises(OptionError, match=r"0 .no interval. or a whole number >= 2"):
        off_policy(logs, policy, ["ips"], n_resamples=1)
    assert off_policy(logs, policy, ["ips"], n_resamples=2)["ips"].low is not None


def test_the_order_of_the_rows_and_the_writing_of_the_ids_move_nothing() -> None:
    """Shuffled log rows, and ids written as digit strings on either side, give
    every estimate, interval and ess bit for bit (sums taken in the order of
    their values; ids under the id rule, as in every other input)."""
    logs, policy, _ = _random(7)
    names = ["ips", "snips", "dm", "dr", "sndr", "switch-dr"]
    kw = {"n_resamples": 200, "seed": 1, "clip": 8.0, "switch_tau": 5.0}
    want = off_policy(logs, policy, names, **kw)
    forms = [
        (logs.sample(frac=1, random_state=4), policy),
        (logs.sample(frac=1, random_state=5), policy.sample(frac=1, random_state=6)),
        (logs.astype({"context": str, "action": str}), policy),
        (logs, policy.astype({"context": str, "action": str})),
    ]
    for shuffled, pol in forms:
        got = off_policy(shuffled, pol, names, **kw)
        for e in names:
            for f in ("estimate", "low", "high", "ess"):
                assert getattr(got[e], f) == getattr(want[e], f), (e, f)
    bad = logs.astype({"context": object})
    bad.iloc[3, bad.columns.get_loc("context")] = None
    with pytest.raises(InputError, match="row 3: missing context id"):
        off_policy(bad, policy, ["ips"], n_resamples=0)


@pytest.mark.parametrize("shared", [1 << 24, 1])
def test_estimators_asked_together_give_their_bits_alone(
    monkeypatch: pytest.MonkeyPatch, shared: int
) -> None:
    """The bootstrap's Poisson counts, drawn once for all the estimators asked
    (as many at a time as ``_SHARED_VALUES`` allows), give each estimator the
    interval it gets asked alone, bit for bit."""
    from receval.analysis import off_policy as module

    monkeypatch.setattr(module, "_SHARED_VALUES", shared)
    logs, policy, model = _random(5)
    kw = {"reward_model": model, "switch_tau": 1.5, "n_resamples": 150, "seed": 2}
    together = off_policy(logs, policy, ALL, **kw)
    for name in ALL:
        alone = off_policy(logs, policy, [name], **kw)[name]
        assert (alone.estimate, alone.low, alone.high, alone.ess) == (
            together[name].estimate,
            together[name].low,
            together[name].high,
            together[name].ess,
        )
