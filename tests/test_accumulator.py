"""receval.Accumulator: batch by batch, merged from workers, the numbers of evaluate().

Bit for bit: any batching of complete users and any merge order give what
receval.evaluate gives on all the data at once (summary, per-user values,
counts); dense scores go through partial selection with evaluate's tie rule.
"""

from __future__ import annotations

import importlib
import pickle
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.errors import ReceValError
from tests.required import imported

pytestmark = pytest.mark.timeout(120)

METRICS = [
    "ndcg@10",
    "ndcg@5[gain=exp]",
    "precision@5",
    "recall@10",
    "ap@10",
    "rr",
    "hit_rate@3",
    "err@10[max_grade=4]",
    "auc@10",
    "bpref",
    "coverage@10",
    "gini@10",
]


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    recs = pd.DataFrame(
        {
            "user": rng.integers(0, 60, 1500),
            "item": rng.integers(0, 80, 1500),
            "score": rng.integers(0, 6, 1500).astype(float),  # ties
        }
    ).drop_duplicates(["user", "item"])
    truth = pd.DataFrame(
        {"user": rng.integers(5, 70, 500), "item": rng.integers(0, 80, 500)}
    ).drop_duplicates()
    truth["relevance"] = rng.integers(0, 5, len(truth))
    return recs, truth


def _same(a: receval.Result, b: receval.Result) -> None:
    assert list(a.summary) == list(b.summary)
    for m, v in a.summary.items():
        w = b.summary[m]
        assert v == w or (np.isnan(v) and np.isnan(w)), m
    pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
    assert a.counts == b.counts


@pytest.mark.parametrize("seed", range(3))
def test_any_batching_and_merge_order_is_evaluate_bit_for_bit(seed: int) -> None:
    recs, truth = _data(seed)
    kw = {"catalog": range(80), "empty_truth": ["skip", "zero"][seed % 2]}
    whole = receval.evaluate(recs, truth, METRICS, **kw)
    rng = np.random.default_rng(seed)
    users = np.array(sorted(set(recs["user"]) | set(truth["user"])))
    for cuts in (1, 3, 17):
        batches = np.array_split(rng.permutation(users), cuts)
        workers = [receval.Accumulator(METRICS, **kw) for _ in range(3)]
        for j, batch in enumerate(batches):
            workers[j % 3].update(recs[recs["user"].isin(batch)], truth[truth["user"].isin(batch)])
        order = rng.permutation(3)
        acc = workers[order[0]].merge(workers[order[1]]).merge(workers[order[2]])
        _same(acc.compute(), whole)


def test_batches_of_integer_then_text_users_with_users_on_one_side_only() -> None:
    """Users with a list and no truth (and the other way) in a batch of
    integer ids and in one of text ids: evaluate's numbers (the example
    users of each side kept as strings once both kinds are met), no crash;
    and with no user shared, evaluate's error."""
    recs = {1: [1], 2: [3], "x5": [2], "x6": [4], 30: [5]}
    truth = {1: [1], "x5": [2], 40: [9]}
    whole = receval.evaluate(recs, truth, ["rr", "precision@2"])
    for order in ((0, 1), (1, 0)):
        acc = receval.Accumulator(["rr", "precision@2"])
        parts = [
            ({1: [1], 2: [3], 30: [5]}, {1: [1], 40: [9]}),
            ({"x5": [2], "x6": [4]}, {"x5": [2]}),
        ]
        for i in order:
            acc.update(*parts[i])
        _same(acc.compute(), whole)
    acc = receval.Accumulator("rr")
    acc.update({2: [3]}, {3: [1]})
    acc.update({"x6": [4]}, {"x7": [1]})
    with pytest.raises(receval.errors.NoSharedUser) as got:
        acc.compute()
    assert got.value.recommendation_users == ["2", "x6"] and got.value.truth_users == ["3", "x7"]


def test_dense_scores_are_top_k_with_evaluates_tie_rule() -> None:
    rng = np.random.default_rng(4)
    scores = np.round(rng.random((64, 50)) * 4)  # many ties
    targets = (rng.random((64, 50)) < 0.1) * rng.integers(1, 4, (64, 50))
    seen = rng.random((64, 50)) < 0.15
    ids = np.array([f"u{j:02d}" for j in range(64)])
    metrics = ["ndcg@10", "recall@5", "ap@10", "precision@3", "hit_rate@10"]
    acc = receval.Accumulator(metrics)
    for i in range(0, 64, 9):
        s = slice(i, i + 9)
        acc.update_scores(scores[s], targets[s], users=ids[s], exclude=seen[s])
    rows = []
    for u in range(64):
        items = sorted((j for j in range(50) if not seen[u, j]), key=lambda j: (-scores[u, j], j))
        rows += [(ids[u], j, scores[u, j]) for j in items[:10]]
    tu, ti = np.nonzero(targets)
    truth = pd.DataFrame({"user": ids[tu], "item": ti, "relevance": targets[tu, ti]})
    # the same top 10 as a table of scores: the same values, counts (its ties) and notes
    by_hand = receval.evaluate(
        pd.DataFrame(rows, columns=["user", "item", "score"]), truth, metrics
    )
    got = acc.compute()
    _same(got, by_hand)
    assert got.notes == by_hand.notes and got.counts["recommendation_rows_tied"] > 0
    assert any("grades up to 3" in n for n in got.notes)


def test_dense_scores_read_whole_rows_for_a_metric_without_cutoff() -> None:
    scores = np.array([[0.1, 0.9, 0.5, 0.5], [0.3, 0.2, 0.1, 0.0]])
    targets = np.array([[0, 0, 0, 1], [0, 0, 0, 1]])
    acc = receval.Accumulator(["rr", "ndcg@2"])
    acc.update_scores(scores, targets)
    res = acc.compute()
    # row 0: 1, then 2 and 3 tied (2 first: item id ascending), then 0 -> item 3 at 3
    assert res.per_user.loc[0, "rr"] == pytest.approx(1 / 3)
    assert res.per_user.loc[1, "rr"] == pytest.approx(1 / 4)


def test_errors_say_what_to_do() -> None:
    recs, truth = _data(1)
    acc = receval.Accumulator(["ndcg@10"])
    acc.update(recs[recs["user"] < 30], truth[truth["user"] < 30])
    acc.update(recs[recs["user"] >= 20], truth[truth["user"] >= 30])
    with pytest.raises(ReceValError, match=r"^user 20 came in two batches"):
        acc.compute()
    with pytest.raises(ReceValError, match="max_grade"):
        receval.Accumulator(["err@10"]).update(recs, truth)
    with pytest.raises(ReceValError, match="differ"):
        receval.Accumulator(["ndcg@10"]).merge(receval.Accumulator(["ndcg@5"]))
    with pytest.raises(ReceValError, match="no batch"):
        receval.Accumulator(["ndcg@10"]).compute()
    with pytest.raises(ReceValError, match="one shape"):
        receval.Accumulator(["ndcg@10"]).update_scores(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(receval.errors.OptionError, match="Accumulator"):
        receval.Accumulator(["ndcg@10"], thresold=2)


def test_state_pickles_for_a_gather_across_workers_and_resets() -> None:
    recs, truth = _data(2)
    whole = receval.evaluate(recs, truth, ["ndcg@10", "recall@10"])
    a, b = (
        receval.Accumulator(["ndcg@10", "recall@10"]),
        receval.Accumulator(["ndcg@10", "recall@10"]),
    )
    a.update(recs[recs["user"] < 35], truth[truth["user"] < 35])
    b.update(recs[recs["user"] >= 35], truth[truth["user"] >= 35])
    gathered = [pickle.loads(pickle.dumps(x)) for x in (b, a)]  # what all_gather_object does
    _same(gathered[0].merge(gathered[1]).compute(), whole)
    a.reset()
    assert len(a) == 0
    a.update(recs, truth)
    _same(a.compute(), whole)


def test_torch_tensors_select_on_their_device_the_same_lists() -> None:
    torch = imported("torch")
    rng = np.random.default_rng(6)
    scores = np.round(rng.random((40, 60)) * 3).astype(np.float32)  # float32, ties
    targets = (rng.random((40, 60)) < 0.1) * rng.integers(1, 4, (40, 60))
    seen = rng.random((40, 60)) < 0.1
    metrics = ["ndcg@10", "recall@20", "ap@10", "rr"]
    with_numpy, with_torch = receval.Accumulator(metrics), receval.Accumulator(metrics)
    for i in range(0, 40, 16):
        s = slice(i, i + 16)
        with_numpy.update_scores(scores[s], targets[s], exclude=seen[s])
        with_torch.update_scores(
            torch.from_numpy(scores[s]),
            torch.from_numpy(targets[s]),
            exclude=torch.from_numpy(seen[s]),
        )
    _same(with_torch.compute(), with_numpy.compute())
    for k in (10, 60):  # partial selection and whole rows
        cols_t = receval.evaluation.accumulator._select_torch(
            torch.from_numpy(scores), torch.from_numpy(targets), None, k
        )[0]
        cols_n = receval.evaluation.accumulator._top_k(scores.astype(np.float64), k)
        assert np.array_equal(cols_t, cols_n)


def test_the_documented_pytorch_loop_runs_on_a_real_process_group(tmp_path) -> None:
    """docs/training.md's plain-PyTorch example, run as written on a gloo group of
    one worker: the gathered, merged state gives evaluate()'s numbers."""
    torch = imported("torch")
    dist = imported("torch.distributed")
    text = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "docs/training.md", "exec"), namespace)  # the example, as documented

    torch.manual_seed(0)
    n_users, n_items = 30, 25
    model = torch.nn.Embedding(n_users, n_items)
    targets = (torch.rand(n_users, n_items) < 0.15).float()
    seen = (torch.rand(n_users, n_items) < 0.1) & (targets == 0)
    loader = [
        (torch.arange(i, min(i + 8, n_users)), targets[i : i + 8]) for i in range(0, n_users, 8)
    ]
    dist.init_process_group("gloo", init_method=(tmp_path / "group").as_uri(), rank=0, world_size=1)
    try:
        got = namespace["validate"](model, loader, seen, epoch=0)
    finally:
        dist.destroy_process_group()
    scores = model.weight.detach().numpy().astype(np.float64)
    rows = []
    for u in range(n_users):
        items = sorted(
            (j for j in range(n_items) if not seen[u, j]), key=lambda j: (-scores[u, j], j)
        )
        rows += [(u, j, r + 1) for r, j in enumerate(items[:20])]
    tu, ti = np.nonzero(targets.numpy())
    want = receval.evaluate(
        pd.DataFrame(rows, columns=["user", "item", "rank"]),
        pd.DataFrame({"user": tu, "item": ti}),
        ["ndcg@10", "recall@20", "ap@10[denominator=relevant]"],
    )
    assert got == want.summary


class _DLPackOnly:
    """An array that offers only DLPack (no ``__array__``), as CuPy or JAX arrays do."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self._array, self._device = array, device

    def __dlpack__(self, **kwargs: object) -> object:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def test_dlpack_arrays_are_taken_without_array() -> None:
    rng = np.random.default_rng(8)
    scores = np.round(rng.random((30, 50)) * 4)
    targets = (rng.random((30, 50)) < 0.1) * rng.integers(1, 3, (30, 50))
    seen = rng.random((30, 50)) < 0.1
    metrics = ["ndcg@10", "recall@5", "rr"]
    plain, dlpack = receval.Accumulator(metrics), receval.Accumulator(metrics)
    plain.update_scores(scores, targets, exclude=seen)
    wrapped = [_DLPackOnly(x) for x in (scores, targets, seen)]
    assert not hasattr(wrapped[0], "__array__")
    dlpack.update_scores(wrapped[0], wrapped[1], exclude=wrapped[2])
    _same(dlpack.compute(), plain.compute())


def test_dlpack_arrays_on_a_device_need_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    on_gpu = _DLPackOnly(np.zeros((2, 3)), device=(2, 0))  # kDLCUDA
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(ReceValError, match=r"scores live on a device \(DLPack device type 2\)"):
        receval.Accumulator(["ndcg@2"]).update_scores(on_gpu, np.zeros((2, 3)))


@pytest.mark.parametrize("devices", [1, 2])
def test_the_documented_lightning_module_runs(
    devices: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/training.md's Lightning module, as written, validated by a real
    Trainer on the CPU: one device, and two DDP processes (``ddp_spawn``: the
    gather of the exact state runs on a real process group)."""
    torch = imported("torch")
    lightning = imported("lightning")
    from torch.utils.data import DataLoader, TensorDataset

    text = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text()
    code = text.split("```python\n")[2].split("```", 1)[0]
    assert code.startswith("class Model(lightning.LightningModule)")
    # a module of its own, so that the spawned workers can import the class
    module = "\n".join(["import functools", "import lightning", "import torch", "import receval"])
    module += (
        "\n\n"
        + code
        + (
            "\n\nclass Scored(Model):\n"
            "    def __init__(self, weights):\n"
            "        super().__init__()\n"
            "        self.scores = torch.nn.Embedding.from_pretrained(weights)\n\n"
            "    def forward(self, users):\n"
            "        return self.scores(users)\n"
        )
    )
    (tmp_path / "documented_lightning.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    documented = importlib.import_module("documented_lightning")

    torch.manual_seed(1)
    n_users, n_items = 32, 40
    weights = torch.randn(n_users, n_items)
    targets = (torch.rand(n_users, n_items) < 0.15).float()
    seen = (torch.rand(n_users, n_items) < 0.1) & (targets == 0)
    trainer = lightning.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy="ddp_spawn" if devices > 1 else "auto",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
    )
    loader = DataLoader(TensorDataset(torch.arange(n_users), targets, seen), batch_size=8)
    (got,) = trainer.validate(documented.Scored(weights), loader, verbose=False)
    rows = []
    for u in range(n_users):
        order = sorted(
            (j for j in range(n_items) if not seen[u, j]), key=lambda j: (-float(weights[u, j]), j)
        )
        rows += [(u, j, r + 1) for r, j in enumerate(order[:20])]
    tu, ti = np.nonzero(targets.numpy())
    want = receval.evaluate(
        pd.DataFrame(rows, columns=["user", "item", "rank"]),
        pd.DataFrame({"user": tu, "item": ti}),
        ["ndcg@10", "recall@20"],
    )
    # Lightning keeps a logged number as a float32 tensor: receval's float64, rounded
    assert got == {m: float(np.float32(v)) for m, v in want.summary.items()}


def test_torchmetrics_retrieval_metrics_are_receval_defaults_with_ap_over_hits() -> None:
    """docs/training.md's account of torchmetrics, checked against it: on
    scores without ties and users with at least one relevant item, its nDCG,
    recall, precision and MRR at k are receval's defaults and its MAP@k is
    ``ap@k[denominator=hits]``, up to its float32."""
    torch = imported("torch")
    retrieval = imported("torchmetrics.retrieval")
    gen = torch.Generator().manual_seed(3)
    m, n, k = 50, 80, 10
    scores = torch.randn(m, n, generator=gen)  # continuous: no ties
    targets = torch.rand(m, n, generator=gen) < 0.08
    targets[torch.arange(m), torch.randint(0, n, (m,), generator=gen)] = True  # R >= 1
    acc = receval.Accumulator(
        [f"ndcg@{k}", f"recall@{k}", f"precision@{k}", f"rr@{k}", f"ap@{k}[denominator=hits]"]
    )
    acc.update_scores(scores, targets)
    ours = list(acc.compute().summary.values())
    theirs = []
    indexes = torch.arange(m).repeat_interleave(n)
    for kind in ("RetrievalNormalizedDCG", "RetrievalRecall", "RetrievalPrecision"):
        metric = getattr(retrieval, kind)(top_k=k)
        theirs.append(float(metric(scores.reshape(-1), targets.reshape(-1), indexes=indexes)))
    for kind in ("RetrievalMRR", "RetrievalMAP"):
        metric = getattr(retrieval, kind)(top_k=k)
        theirs.append(float(metric(scores.reshape(-1), targets.reshape(-1), indexes=indexes)))
    assert np.allclose(ours, theirs, rtol=0, atol=1e-6), (ours, theirs)
    # and receval's own AP@k (divided by min(R, k)) is not torchmetrics' number here
    own = receval.Accumulator([f"ap@{k}"])
    own.update_scores(scores, targets)
    assert abs(own.compute().summary[f"ap@{k}"] - theirs[-1]) > 1e-3


def test_batches_of_ids_of_two_kinds_are_said_matched_as_text() -> None:
    """As evaluate says it: item ids numbers on one side, text on the other."""
    recs = pd.DataFrame({"user": [1, 1], "item": ["b", "a"], "rank": [1, 2]})
    truth = pd.DataFrame({"user": [1], "item": [10]})
    acc = receval.Accumulator(["rr"])
    acc.update(recs, truth)
    want = receval.evaluate(recs, truth, "rr")
    assert acc.compute().notes == want.notes
    assert any("item ids are numbers on one side" in n for n in want.notes)
