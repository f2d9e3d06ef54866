"""Run Cornac's next-item evaluation on sessions saved by test_cornac_next.py.

    python cornac_next_check.py IN.json OUT.json      (under the cornac conformance venv)

IN holds ``rows`` (user, session, item, time; sorted by session then time, as
Cornac reads a session in row order), ``items`` (every item: the training
set, so that none is unknown) and ``k``. The model is a fixed scoring of
(history, item) with no training and no ties. OUT holds, for each
``mode:user_based`` (mode ``next`` or ``last``), Cornac's averages of NDCG@k,
Recall@k, Precision@k, HitRatio@k and MRR (its full ranking), and ``lists``:
for each session and step t (the model asked after the prefix s1..st) the
model's full ranking of the items, as raw ids.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict

import numpy as np
from cornac.data import SequentialDataset
from cornac.eval_methods.next_item_evaluation import ranking_eval
from cornac.metrics import MRR, NDCG, HitRatio, Precision, Recall
from cornac.models import NextItemRecommender


class Fixed(NextItemRecommender):
    """Scores every known item from the history alone (deterministic, no ties)."""

    def __init__(self) -> None:
        super().__init__("fixed", trainable=True)

    def fit(self, train_set, val_set=None):  # type: ignore[no-untyped-def]
        super().fit(train_set, val_set)
        return self

    def score(self, user_idx, history_items, **kwargs):  # type: ignore[no-untyped-def]
        x = np.arange(self.num_items, dtype=np.float64)
        last = float(history_items[-1])
        return np.sin((x + 1.0) * (last + 1.7) + 0.31 * len(history_items)) + 1e-9 * x


def main() -> None:
    with open(sys.argv[1]) as f:
        data = json.load(f)
    k = int(data["k"])
    uid, sid, iid = OrderedDict(), OrderedDict(), OrderedDict()
    train_rows = [("train_user", "train_session", item, n) for n, item in enumerate(data["items"])]
    train = SequentialDataset.build(
        train_rows, fmt="USIT", global_uid_map=uid, global_iid_map=iid, global_sid_map=sid
    )
    rows = [tuple(r) for r in data["rows"]]
    test = SequentialDataset.build(
        rows, fmt="USIT", global_uid_map=uid, global_iid_map=iid, global_sid_map=sid
    )
    model = Fixed().fit(train)
    out: dict[str, object] = {}
    for mode in ("next", "last"):
        for user_based in (False, True):
            metrics = [NDCG(k=k), Recall(k=k), Precision(k=k), HitRatio(k=k), MRR()]
            avg, _ = ranking_eval(model, metrics, train, test, user_based=user_based, mode=mode)
            names = ["ndcg", "recall", "precision", "hit_rate", "rr"]
            out[f"{mode}:{user_based}"] = dict(zip(names, map(float, avg), strict=True))
    raw_item = {v: key for key, v in iid.items()}
    lists = []
    for [s], [mapped], [items] in test.si_iter(batch_size=1, shuffle=False):
        session = test.uir_tuple[0][mapped[0]]
        raw_session = next(key for key, v in sid.items() if v == s)
        for t in range(1, len(items)):
            ranked, _ = model.rank(session, np.arange(train.num_items), history_items=items[:t])
            lists.append([raw_session, t, [raw_item[int(i)] for i in ranked]])
    out["lists"] = lists
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
