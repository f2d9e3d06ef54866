"""Under the core conformance interpreter: TREC ndeval's values through pyndeval.

    python pyndeval_check.py IN.json OUT.json

IN.json: ``{"qrels": [[query, subtopic, doc, judgment], ...], "run": [[query, doc,
score], ...], "alpha": a, "measures": ["alpha-nDCG@20", ...]}``; OUT.json:
pyndeval's ``{query: {measure: value}}`` (the queries in both inputs). Imports
only pyndeval.
"""

from __future__ import annotations

import json
import sys

import pyndeval


def main(path_in: str, path_out: str) -> None:
    with open(path_in) as f:
        w = json.load(f)
    qrels = [pyndeval.SubtopicQrel(str(q), str(s), str(d), int(j)) for q, s, d, j in w["qrels"]]
    run = [pyndeval.ScoredDoc(str(q), str(d), float(x)) for q, d, x in w["run"]]
    out = pyndeval.ndeval(qrels, run, measures=w["measures"], alpha=w["alpha"])
    with open(path_out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
