"""The off-policy weights' summary, slate logs read in batches, and the
report's section of counterfactual estimates (#35 point 4)."""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.analysis.off_policy import (
    WEIGHT_QUANTILES,
    WEIGHT_THRESHOLDS,
    OffPolicyResult,
    WeightSummary,
    _Hist,
    off_policy,
)
from receval.analysis.report.html import weight_histogram
from receval.errors import InputError, OptionError
from tests.required import headless_chromium, need_chromium

SLATE = ["iips", "rips", "sips", "pi"]


# --------------------------------------------------------------------------- the weights


def test_weight_summary_by_hand() -> None:
    s = _Hist.of(np.array([-0.5, 0.0, 1.0, 1.0, 2.0, 10.0, 40.0, 250.0])).summary()
    assert (s.count, s.negative, s.zero, s.min, s.max) == (8, 1, 1, -0.5, 250.0)
    assert s.mean == pytest.approx(303.5 / 8, abs=1e-15)
    # > 1: 2, 10, 40, 250; > 2 and > 5: 10, 40, 250; > 10: 40, 250; > 100: 250
    assert s.above == {1.0: 0.5, 2.0: 0.375, 5.0: 0.375, 10.0: 0.25, 100.0: 0.125}
    # the 4th smallest (q 0.5) is 1: bin (10^(-1/20), 1], exact; the 8th is the max
    assert s.quantiles[0.5] == 1.0 and s.quantiles[0.999] == 250.0
    # 7.2 -> the 8th (250), capped at the max
    assert s.quantiles[0.9] == 250.0
    assert s.decades() == {
        "< 0": 0.125,
        "0": 0.125,
        "0.1–1": 0.25,
        "1–10": 0.25,
        "10–100": 0.125,
        "100–1000": 0.125,
    }
    assert _Hist.of(np.array([-2.0, -1.0])).summary().quantiles[0.5] == -1.0  # min(0, max)


@pytest.mark.parametrize("seed", [0, 1])
def test_weight_summary_against_a_literal_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    v = np.exp(rng.normal(0.0, 2.0, 3000))
    v[rng.integers(0, v.size, 40)] = 0.0
    parts = [_Hist.of(chunk) for chunk in np.array_split(v, 7)]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged + part
    whole = _Hist.of(v).summary()
    got = merged.summary()
    assert (got.count, got.zero, got.bins, got.above, got.quantiles) == (
        whole.count,
        whole.zero,
        whole.bins,
        whole.above,
        whole.quantiles,
    )
    assert got.mean == pytest.approx(v.mean(), rel=1e-12)
    ordered = np.sort(v)
    for q in WEIGHT_QUANTILES:
        exact = ordered[max(1, math.ceil(q * v.size)) - 1]
        assert exact <= got.quantiles[q] <= exact * 10 ** (1 / 20) * (1 + 1e-12), q
    for t in WEIGHT_THRESHOLDS:
        assert got.above[t] == (v > t).sum() / v.size
    assert sum(c for _, c in got.bins) == (v > 0).sum()
    for k, c in got.bins:  # each weight in its bin (10^(k/20), 10^((k+1)/20)]
        inside = (v > 10 ** (k / 20) * (1 - 1e-12)) & (v <= 10 ** ((k + 1) / 20) * (1 + 1e-12))
        assert abs(int(inside.sum()) - c) <= 2  # bins' edges as floating point


def _logs(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    logs = pd.DataFrame(
        {
            "context": rng.integers(0, 40, n),
            "action": rng.integers(0, 5, n),
            "reward": rng.binomial(1, 0.4, n).astype(float),
            "propensity": rng.uniform(0.02, 1.0, n),
        }
    )
    probs = rng.dirichlet(np.ones(5), 40)
    policy = pd.DataFrame(
        {
            "context": np.repeat(np.arange(40), 5),
            "action": np.tile(np.arange(5), 40),
            "probability": probs.ravel(),
        }
    )
    return logs, policy


def test_each_estimate_carries_its_weights() -> None:
    logs, policy = _logs()
    res = off_policy(logs, policy, ["ips", "snips", "dm", "dr"], clip=3.0, n_resamples=0)
    w = res["snips"].weights
    assert w is not None and w.count == len(logs)
    raw = (
        logs.merge(policy, on=["context", "action"])["probability"].to_numpy()
        / logs.merge(policy, on=["context", "action"])["propensity"].to_numpy()
    )
    assert w.max == pytest.approx(raw.max(), rel=1e-15)
    assert res["ips"].weights.max == 3.0  # clipped
    assert res["dm"].weights.min == res["dm"].weights.max == 1.0
    # ESS from the same weights: (Σv)² / Σv² with v = w for snips
    assert res["snips"].ess == pytest.approx(raw.sum() ** 2 / (raw**2).sum(), rel=1e-12)


def test_result_round_trips_through_json() -> None:
    logs, policy = _logs()
    res = off_policy(logs, policy, ["ips", "dr", "switch-dr"], switch_tau=2.0, n_resamples=30)
    back = OffPolicyResult.from_dict(json.loads(res.to_json()))
    assert back == res
    assert isinstance(back["dr"].weights, WeightSummary)
    with pytest.raises(InputError, match="receval off-policy --json"):
        OffPolicyResult.from_dict({"estimates": {"ips": {}}})
    whole = json.loads(res.to_json())
    wrong = [  # what is wrong said in words, never an exception's repr
        ([1, 2], "found an array, not an object"),
        ({**whole, "estimates": 5}, "'estimates' is a number, not an object of estimators"),
        ({k: v for k, v in whole.items() if k != "seed"}, "found no 'seed'"),
        ({**whole, "estimates": {"ips": {"estimate": 1.0}}}, "an estimate has no 'low'"),
    ]
    for given, words in wrong:
        with pytest.raises(InputError) as got:
            OffPolicyResult.from_dict(given)  # type: ignore[arg-type]
        assert words in str(got.value) and "Error(" not in str(got.value)


# --------------------------------------------------------------------------- slates in batches


def _slates(n: int = 240, size: int = 3, seed: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.05, 1.0, (n, size))
    logs = pd.DataFrame(
        {
            "context": np.repeat(rng.integers(0, 60, n), size),
            "slate": np.repeat(np.arange(n), size),
            "position": np.tile(np.arange(1, size + 1), n),
            "action": rng.integers(0, 4, n * size),
            "reward": rng.binomial(1, 0.3, n * size).astype(float),
            "propensity": mu.ravel(),
            "propensity_cascade": np.cumprod(mu, axis=1).ravel(),
            "propensity_slate": np.repeat(mu.prod(axis=1), size),
        }
    )
    # rows of a slate together, in any order within it
    logs = logs.sample(frac=1.0, random_state=seed).sort_values("slate", kind="stable")
    ranking = pd.DataFrame(
        {
            "context": np.repeat(np.arange(60), size),
            "position": np.tile(np.arange(1, size + 1), 60),
            "action": rng.integers(0, 4, 60 * size),
        }
    )
    return logs.reset_index(drop=True), ranking


@pytest.mark.parametrize("batch_rows", [1, 13, 10_000])
def test_slate_batches_equal_the_whole_log(tmp_path: Path, batch_rows: int) -> None:
    logs, ranking = _slates(60 if batch_rows == 1 else 240)
    path = tmp_path / "slates.parquet"
    logs.to_parquet(path, row_group_size=64)
    whole = off_policy(path, ranking, SLATE, n_resamples=40)
    parts = off_policy(path, ranking, SLATE, n_resamples=40, batch_rows=batch_rows)
    for a, b in zip(whole.estimates, parts.estimates, strict=True):
        # every slate's rows and weights are the same; only the order of the
        # floating-point sums differs (per batch, then added): equal to 1e-12
        assert (b.estimate, b.low, b.high, b.ess) == pytest.approx(
            (a.estimate, a.low, a.high, a.ess), abs=1e-12, rel=1e-12
        )
        assert a.rows == b.rows and a.notes == b.notes
        assert a.weights is not None and b.weights is not None
        assert a.weights.bins == b.weights.bins and a.weights.quantiles == b.weights.quantiles
        assert a.weights.mean == pytest.approx(b.weights.mean, rel=1e-12)
    assert parts.notes == {k: whole.notes[k] for k in ("rows", "slates", "max_weight")}


def test_slate_batches_refuse_a_slate_split_apart(tmp_path: Path) -> None:
    logs, ranking = _slates(40)
    moved = pd.concat([logs.iloc[:10], logs.iloc[20:], logs.iloc[10:20]], ignore_index=True)
    moved.to_parquet(tmp_path / "apart.parquet")
    for batch_rows in (8, 1000):  # across batches, and within one
        with pytest.raises(InputError, match="rows apart from each other") as err:
            off_policy(tmp_path / "apart.parquet", ranking, ["iips"], batch_rows=batch_rows)
        assert err.value.row == 110  # the first row of logs.iloc[10:20] that comes back
    logs.to_parquet(tmp_path / "slates.parquet")
    arrays = {"probability": np.ones(len(logs))}
    with pytest.raises(OptionError, match="batch_rows"):
        off_policy(tmp_path / "slates.parquet", arrays, ["iips"], batch_rows=8)
    bad = logs.copy()
    bad.loc[57, "propensity"] = 0.0
    bad.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="could not have taken") as err:
        off_policy(tmp_path / "bad.parquet", ranking, ["iips"], batch_rows=8)
    assert err.value.row == 57


# --------------------------------------------------------------------------- the report

TRUTH = {1: [1, 2], 2: [3], 3: [1]}
RUNS = {"a": {1: [1, 3], 2: [3, 1], 3: [2, 1]}, "b": {1: [3, 1], 2: [1, 2], 3: [1, 2]}}


@pytest.fixture(scope="module")
def results() -> dict[str, OffPolicyResult]:
    logs, policy = _logs()
    greedy = policy.loc[policy.groupby("context")["probability"].idxmax()].assign(probability=1.0)
    kw = {"n_resamples": 50, "clip": 20.0}
    return {
        "soft <policy>": off_policy(logs, policy, ["ips", "snips", "dm", "dr"], **kw),
        "greedy": off_policy(logs, greedy, ["ips", "snips", "dm", "dr"], **kw),
    }


def test_report_section(results: dict[str, OffPolicyResult], tmp_path: Path) -> None:
    plain = receval.report(RUNS, TRUTH, "ndcg@2", n_resamples=100)
    rep = receval.report(
        RUNS, TRUTH, "ndcg@2", n_resamples=100, off_policy=results, out=tmp_path / "r.html"
    )
    assert "id='off-policy'" not in plain.html and plain.off_policy == {}
    section = re.search(r"<section id='off-policy'>.*?</section>\n", rep.html, re.S)
    assert section is not None
    # nothing else on the page changes
    assert rep.html.replace(section.group(0), "") == plain.html
    assert rep.charts == [*plain.charts, "weights-soft <policy>", "weights-greedy"]
    text = section.group(0)
    assert "soft &lt;policy&gt;" in text and "<policy>" not in text
    for name, res in results.items():
        for e in res.estimates:
            row = re.search(
                rf'<tr data-policy="{re.escape(name.replace("<", "&lt;").replace(">", "&gt;"))}"'
                rf' data-estimator="{e.estimator}">(.*?)</tr>',
                text,
            )
            assert row is not None
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
            assert cells[1] == f"{e.estimate:.4f}"
            assert cells[2] == f"[{e.low:.4f}, {e.high:.4f}]"
            assert cells[5] == f"{e.weights.max:.4g}"
    one = receval.report(RUNS, TRUTH, "ndcg@2", n_resamples=100, off_policy=results["greedy"])
    assert "<h3>evaluation policy</h3>" in one.html
    with pytest.raises(receval.ReceValError, match="OffPolicyResult"):
        receval.report(RUNS, TRUTH, "ndcg@2", off_policy={"x": 1.0})
    hist = weight_histogram(results["greedy"])
    assert list(hist.index) == ["ips", "snips", "dr"]  # dm's weights are all 1
    assert hist.sum(axis=1).to_numpy() == pytest.approx(1.0, abs=1e-12)


def test_report_section_renders_in_headless_chromium(
    results: dict[str, OffPolicyResult], tmp_path: Path
) -> None:
    need_chromium()
    out = tmp_path / "r.html"
    rep = receval.report(RUNS, TRUTH, "ndcg@2", n_resamples=100, off_policy=results, out=out)
    with tempfile.TemporaryDirectory() as profile:
        dom = headless_chromium("--dump-dom", out.resolve().as_uri(), profile=profile)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Counterfactual estimates" in dom.stdout and "share &gt; 10" in dom.stdout
    found = re.findall(r'<svg class="chart" data-chart="([^"]+)"', dom.stdout)
    assert [f.replace("&lt;", "<").replace("&gt;", ">") for f in found] == rep.charts


def test_report_command_reads_off_policy_json(tmp_path: Path) -> None:
    from receval.cli import main

    logs, policy = _logs(60)
    logs.to_csv(tmp_path / "logs.csv", index=False)
    policy.to_csv(tmp_path / "policy.csv", index=False)
    pd.DataFrame({"user": [1, 1, 2, 3], "item": [1, 2, 3, 1]}).to_csv(
        tmp_path / "truth.csv", index=False
    )
    pd.DataFrame(
        {"user": [1, 1, 2, 2, 3, 3], "item": [1, 3, 3, 1, 2, 1], "score": [2, 1, 2, 1, 2, 1]}
    ).to_csv(tmp_path / "a.csv", index=False)
    res = off_policy(tmp_path / "logs.csv", tmp_path / "policy.csv", ["ips"], n_resamples=20)
    (tmp_path / "res.json").write_text(res.to_json())
    out = tmp_path / "r.html"
    args = ["report", str(tmp_path / "truth.csv"), str(tmp_path / "a.csv"), "--out", str(out)]
    args += ["-m", "ndcg@2", "--n-resamples", "100", "-q"]
    assert main([*args, "--off-policy", f"soft={tmp_path / 'res.json'}"]) == 0
    html = out.read_text()
    assert "<h3>soft</h3>" in html and f"{res['ips'].estimate:.4f}" in html
    (tmp_path / "bad.json").write_text("{}")
    assert main([*args, "--off-policy", str(tmp_path / "bad.json")]) == 2
    twice = [f"x={tmp_path / 'res.json'}"] * 2
    assert main([*args, "--off-policy", twice[0], "--off-policy", twice[1]]) == 2
