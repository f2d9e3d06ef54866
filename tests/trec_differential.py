"""A differential of ``receval trec_eval`` against a trec_eval binary, by hand.

    python tests/trec_differential.py /tmp/te/trec_eval/trec_eval [--seeds 0-49]

For each seed, :func:`workload` writes a random qrels and run (Python's
:class:`random.Random`, so the files depend on the seed only, not on NumPy's
version) with trec_eval's edge cases: queries judged with nothing relevant,
queries graded 1 at most (nothing relevant under ``-l2``), lists whose
documents are all unjudged (``-J`` condenses them to nothing), ties in score,
``-1`` judgments (pooled, not judged; some queries judged only ``-1``),
queries of the run missing from the qrels and of the qrels missing from the
run (``-c``), query ids that sort differently as numbers and as strings.
Then it runs both programs with each flag set of :data:`FLAGS` and prints a
unified diff of every difference; the exit status is the number of (seed,
flags) pairs that differ (at most 125).

``tests/test_trec_output.py`` pins the sha256 of trec_eval 10.0's output on
a few of these pairs, so the default suite holds receval to it without the
binary.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import random
import subprocess
import sys
import tempfile
from pathlib import Path

#: trec_eval's flag sets the differential runs (each also with ``-q -m all_trec``
#: where it does not name its measures)
FLAGS: tuple[str, ...] = (
    "",
    "-J",
    "-l2",
    "-J -l2",
    "-c -J",
    "-M5 -J",
    "-q -m all_trec",
    "-q -m all_trec -J",
    "-q -m all_trec -l2",
    "-q -m all_trec -J -l2",
    "-q -m all_trec -c",
    "-q -m all_trec -c -J",
    "-q -m all_trec -c -l2",
    "-q -m all_trec -M5 -J",
    "-q -m all_trec -M3 -c -J -l2",
)


def workload(seed: int) -> tuple[str, str]:
    """The qrels and run texts of ``seed``: 3 to 30 queries of seven kinds."""
    rng = random.Random(seed)
    qrels: list[str] = []
    run: list[str] = []
    n_queries = rng.randint(3, 30)
    docs = [f"d{i}" for i in range(rng.randint(8, 60))]
    for q in range(n_queries):
        qid = str(rng.choice([q, q * 7 + 1, 100 + q]))
        if any(line.split()[0] == qid for line in qrels + run):
            qid = f"{qid}x"
        kind = rng.randrange(7)
        pool = rng.sample(docs, rng.randint(1, min(len(docs), 25)))
        grades = {
            0: [0, 0, -1],  # nothing relevant
            1: [0, 1, 1, -1],  # grade 1 at most: nothing relevant at -l2
            2: [0, 1, 2, 3, -1],
            3: [0, 1, 2, 3, 4, 12],
            4: [1, 2],  # everything relevant
            5: [0, 1, 2, -1],  # the run retrieves only unjudged documents
            6: [0, 2, 2, 1],  # in the qrels, not in the run
        }[kind]
        judged = [(d, rng.choice(grades)) for d in pool]
        for d, g in judged:
            qrels.append(f"{qid} 0 {d} {g}")
        if kind == 6:
            continue
        if kind == 5:
            retrieved = [f"u{i}" for i in range(rng.randint(1, 12))]
        else:
            length = rng.choice([1, 2, 5, 12, 40, rng.randint(1, 250)])
            universe = docs + [f"u{i}" for i in range(40)]
            retrieved = rng.sample(universe, min(length, len(universe)))
        steps = rng.choice([1, 3, 1000])  # few distinct scores: ties
        for rank, d in enumerate(retrieved, 1):
            score = rng.randrange(steps) if steps < 1000 else round(rng.uniform(-5, 5), 3)
            run.append(f"{qid} Q0 {d} {rank} {score} tag{seed}")
    for q in range(rng.randint(0, 2)):  # queries of the run only: no line of theirs
        run.append(f"zz{q} Q0 d1 1 1.0 tag{seed}")
    rng.shuffle(qrels)
    rng.shuffle(run)
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


def stops_trec_eval_10(seed: int, flags: str) -> bool:
    """Whether trec_eval 10.0 stops on the files of ``seed`` ("Can't calculate
    measure 'num_ret'", exit 4): the first query it evaluates (the qrels'
    first in ``strcmp`` order that the run has, any under ``-c``) is judged
    only -1. form_res_rels.c sizes its array of grades by the top grade + 1,
    0 there, and te_chk_and_malloc returns the array it has not allocated yet
    (NULL) for 0; a later such query finds the array of an earlier one.
    receval evaluates that query as trec_eval does when it is not the first."""
    qrels_text, run_text = workload(seed)
    ran = {line.split()[0] for line in run_text.splitlines()}
    grades: dict[str, list[int]] = {}
    for line in qrels_text.splitlines():
        qid, _, _, grade = line.split()
        if "-c" in flags.split() or qid in ran:
            grades.setdefault(qid, []).append(int(grade))
    first = min(grades, key=lambda q: q.encode("utf-8"))
    return max(grades[first]) < 0


def receval_text(qrels: Path, run: Path, flags: str) -> str:
    """``receval trec_eval FLAGS QRELS RUN``'s stdout, in this process."""
    from receval.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trec_eval", *flags.split(), str(qrels), str(run)])
    if code != 0:
        return f"exit {code}: {err.getvalue()}"
    return out.getvalue()


def trec_eval_text(binary: str, qrels: Path, run: Path, flags: str) -> str:
    """The binary's stdout (its error text where it fails)."""
    done = subprocess.run(
        [binary, *flags.split(), str(qrels), str(run)], capture_output=True, text=True
    )
    return done.stdout if done.returncode == 0 else f"exit {done.returncode}: {done.stderr}"


def write(seed: int, where: Path) -> tuple[Path, Path, Path]:
    """The files of ``seed`` under ``where``: (qrels, run, the qrels of the
    run's queries only). trec_eval 10.0 stops (exit 4, "result qid '...' not
    found in qrels") on a query of the qrels the run lacks, unless ``-c``;
    receval evaluates the queries of both, as trec_eval 9 did, which is what
    trec_eval 10 prints on the qrels of the run's queries."""
    qrels_text, run_text = workload(seed)
    qrels, run, common = (where / f"{n}.{seed}" for n in ("qrels", "run", "common"))
    qrels.write_text(qrels_text)
    run.write_text(run_text)
    ran = {line.split()[0] for line in run_text.splitlines()}
    common.write_text("".join(f"{ln}\n" for ln in qrels_text.splitlines() if ln.split()[0] in ran))
    return qrels, run, common


def expected(binary: str, seed: int, flags: str, where: Path) -> str:
    """trec_eval's output that receval's must equal for (seed, flags)."""
    qrels, run, common = write(seed, where)
    return trec_eval_text(binary, qrels if "-c" in flags.split() else common, run, flags)


def main(argv: list[str]) -> int:
    """Diff every (seed, flags); print the differences and their count."""
    binary = argv[0]
    first, _, last = (argv[argv.index("--seeds") + 1] if "--seeds" in argv else "0-19").partition(
        "-"
    )
    seeds = range(int(first), int(last or first) + 1)
    differ = stopped = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            qrels, run, _ = write(seed, Path(tmp))
            for flags in FLAGS:
                want = expected(binary, seed, flags, Path(tmp))
                stop = "exit 4: trec_eval: Can't calculate measure 'num_ret'"
                if want.startswith(stop) and stops_trec_eval_10(seed, flags):
                    stopped += 1
                    continue
                got = receval_text(qrels, run, flags)
                if got != want:
                    differ += 1
                    print(f"== seed {seed} flags {flags!r}")
                    sys.stdout.writelines(
                        list(
                            difflib.unified_diff(
                                want.splitlines(True), got.splitlines(True), "trec_eval", "receval"
                            )
                        )[:40]
                    )
    print(
        f"{differ} of {len(seeds) * len(FLAGS)} (seed, flags) differ; "
        f"{stopped} where trec_eval 10.0 stops on a first query judged only -1"
    )
    return min(differ, 125)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
