"""receval: the standard 12 metrics on the Arrow tables as read (no conversion needed).

    python benchmarks/peers/bench_receval.py --recs R --truth T [--out result.json]

With ``--check conventions.json`` it instead computes, untimed, receval's means
under other libraries' conventions (see ``convention`` in each peer runner):
binary relevance (the truth without its grade column), ``empty_truth`` and
``missing_recs`` policies, and metric variants such as
``ap@10[denominator=relevant]``; it prints {peer: {peer_metric: mean}}.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common

CONVENTION = {
    "relevance": "graded",
    "empty_truth": "skip",
    "missing_recs": "zero",
    "metrics": {m: m for m in _common.STANDARD_METRICS},
    "notes": ["receval defaults"],
}


def version() -> str:
    import receval

    return receval.__version__


def compute(recs, truth) -> dict[str, float]:
    import receval

    res = receval.evaluate(recs, truth, _common.STANDARD_SPEC)
    return dict(res.summary)


def check(argv: list[str]) -> None:
    """receval's means under each peer's convention (untimed)."""
    import argparse

    import receval

    ap = argparse.ArgumentParser()
    ap.add_argument("--recs", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--check", required=True, help="JSON {peer: convention}")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    with open(args.check) as f:
        conventions = json.load(f)
    recs, truth, _ = _common.read_inputs(args.recs, args.truth)
    binary_truth = truth.select(["user", "item"])
    out: dict[str, dict] = {}
    for peer, conv in conventions.items():
        wanted = {name: spec for name, spec in conv["metrics"].items() if spec}
        if not wanted:
            out[peer] = {}
            continue
        res = receval.evaluate(
            recs,
            binary_truth if conv.get("relevance") == "binary" else truth,
            sorted(set(wanted.values())),
            empty_truth=conv.get("empty_truth", "skip"),
            missing_recs=conv.get("missing_recs", "zero"),
        )
        canon = {str(receval.parse_metric(s)): s for s in set(wanted.values())}
        by_spec = {canon[name]: v for name, v in res.summary.items() if name in canon}
        out[peer] = {
            "metrics": {name: by_spec[spec] for name, spec in wanted.items()},
            "canonical": {name: str(receval.parse_metric(spec)) for name, spec in wanted.items()},
            "users_averaged": int(res.per_user[next(iter(res.summary))].notna().sum()),
        }
    text = json.dumps(out, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        check(argv)
    else:
        _common.run("receval", version, compute, convention=CONVENTION, argv=argv)


if __name__ == "__main__":
    main()
