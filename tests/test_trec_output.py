"""trec_eval's output, byte for byte: ``receval trec_eval`` and ``evaluate -o trec_eval``.

The expected texts are trec_eval 10.0's own: the files of its test folder
(``shared/conformance/trec_eval``, :data:`tests.required.TREC_FILES`; the
commands are those of trec_eval's Makefile, ``quicktest``), and, on the
repository's ``examples/``, texts printed by trec_eval 10.0 built from
https://github.com/usnistgov/trec_eval (tag v10.0) with the commands written
beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from receval.cli import main
from receval.evaluation.trec_text import request
from tests.required import TREC_FILES

ROOT = Path(__file__).resolve().parent.parent
RUN, QRELS = ROOT / "examples" / "run.txt", ROOT / "examples" / "qrels.txt"


def receval_says(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- trec_eval's own test files ---------------------------------------------------------------

#: expected file -> trec_eval's flags, qrels, run (trec_eval's Makefile, quicktest)
MAKEFILE = {
    "out.test": ([], "qrels.test", "results.test"),
    "out.comment.test": ([], "qrels.comment.test", "results.comment.test"),
    "out.test.a": (["-m", "all_trec"], "qrels.test", "results.test"),
    "out.test.aq": (["-m", "all_trec", "-q"], "qrels.test", "results.test"),
    "out.test.aqc": (["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc"),
    "out.test.aqcM": (["-m", "all_trec", "-q", "-c", "-M100"], "qrels.test", "results.trunc"),
    "out.test.aql": (
        ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"],
        "qrels.rel_level",
        "results.test",
    ),
}
#: out.test.meas_params's flags but the two receval does not compute (custom levels, gains)
MEAS_PARAMS = [
    "-q",
    "-miprec_at_recall..10,.20,.25,.75,.50",
    "-m",
    "P.5,7,3",
    "-m",
    "recall.20,2000",
    "-m",
    "Rprec_mult.5.0,0.2,0.35",
    "-mutility.2,-1,0,0",
    "-mndcg_cut.10,20,23.4",
    "-msuccess.2,5,20",
]


@pytest.fixture
def trec() -> Path:
    """trec_eval's files: a test using them is marked ``trec_files`` (it skips
    without them) or fails here."""
    return TREC_FILES


@pytest.mark.trec_files
@pytest.mark.parametrize("name", list(MAKEFILE))
def test_trec_eval_command_prints_trec_eval_s_expected_files(
    name: str, trec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags, qrels, run = MAKEFILE[name]
    code, out, err = receval_says(capsys, "trec_eval", *flags, trec / qrels, trec / run)
    assert code == 0, err
    assert out == (trec / name).read_text()  # every byte, line for line


@pytest.mark.trec_files
def test_measures_with_parameters_print_as_trec_eval_s(
    trec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """out.test.meas_params (parameters sorted, names as trec_eval writes them),
    less the lines of 11pt_avg..25,.5,.75 and ndcg.1=3,2=9,4=4.5, which receval
    refuses (exit 2, one line)."""
    code, out, err = receval_says(
        capsys, "trec_eval", *MEAS_PARAMS, trec / "qrels.test", trec / "results.test"
    )
    assert code == 0, err
    kept = [
        line
        for line in (trec / "out.test.meas_params").read_text().splitlines(keepends=True)
        if not line.startswith(("11pt_avg_", "ndcg_1="))
    ]
    assert len(kept) == 20 * 4  # 22 measures' lines per query less 2
    assert out == "".join(kept)
    for flag in ("11pt_avg..25,.5,.75", "ndcg.1=3,2=9,4=4.5"):
        code, out, err = receval_says(
            capsys, "trec_eval", "-m", flag, trec / "qrels.test", trec / "results.test"
        )
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert flag in err and "not computed by receval" in err


@pytest.mark.trec_files
@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("out.test", []),
        ("out.test.a", ["-m", "all_trec"]),
        ("out.test.aqcM", ["-m", "all_trec", "--missing-recs", "zero", "--depth", "100"]),
    ],
)
def test_evaluate_output_trec_eval_prints_the_all_lines(
    name: str, policy: list[str], trec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluate --convention trec_eval -o trec_eval``: trec_eval's text without
    -q (its ``all`` lines), the policy flags as trec_eval's (-c -M100)."""
    run = MAKEFILE[name][2]
    argv = ["evaluate", trec / run, trec / "qrels.test", "--convention", "trec_eval"]
    code, out, err = receval_says(capsys, *argv, *policy, "-o", "trec_eval")
    assert code == 0, err
    want = [ln for ln in (trec / name).read_text().splitlines(keepends=True) if "\tall\t" in ln]
    assert out == "".join(want)


# -- the repository's examples (default suite) ------------------------------------------------

#: trec_eval 10.0: trec_eval -q -c -l2 -M3 -m runid -m num_q -m num_rel -m map -m gm_map
#:     -m P.5,2 -m relstring.4 -m ndcg examples/qrels.txt examples/run.txt
EXAMPLES_L2_M3 = (
    "num_rel               \tq1\t1\n"
    "map                   \tq1\t0.3333\n"
    "P_2                   \tq1\t0.0000\n"
    "P_5                   \tq1\t0.2000\n"
    "relstring_4           \tq1\t'0.2'"
    "\n"
    "ndcg                  \tq1\t0.3194\n"
    "num_rel               \tq2\t1\n"
    "map                   \tq2\t0.0000\n"
    "P_2                   \tq2\t0.0000\n"
    "P_5                   \tq2\t0.0000\n"
    "relstring_4           \tq2\t'-10'"
    "\n"
    "ndcg                  \tq2\t0.2398\n"
    "num_rel               \tq3\t0\n"
    "map                   \tq3\t0.0000\n"
    "P_2                   \tq3\t0.0000\n"
    "P_5                   \tq3\t0.0000\n"
    "relstring_4           \tq3\t'-'"
    "\n"
    "ndcg                  \tq3\t0.0000\n"
    "runid                 \tall\tdemo\n"
    "num_q                 \tall\t3\n"
    "num_rel               \tall\t6\n"
    "map                   \tall\t0.1111\n"
    "gm_map                \tall\t0.0003\n"
    "P_2                   \tall\t0.0000\n"
    "P_5                   \tall\t0.0667\n"
    "ndcg                  \tall\t0.1864\n"
)

#: trec_eval 10.0: trec_eval -q -c -J -m relstring -m num_ret -m set_F.0.5 -m rbp.p=0.5
#:     examples/qrels.txt examples/run.txt
EXAMPLES_J = (
    "num_ret               \tq1\t3\n"
    "relstring             \tq1\t'021'"
    "\n"
    "set_F_0.5             \tq1\t0.6667\n"
    "rbp_p=0.5             \tq1\t0.3125\n"
    "num_ret               \tq2\t3\n"
    "relstring             \tq2\t'102'"
    "\n"
    "set_F_0.5             \tq2\t0.7500\n"
    "rbp_p=0.5             \tq2\t0.3750\n"
    "num_ret               \tq3\t0\n"
    "relstring             \tq3\t''"
    "\n"
    "set_F_0.5             \tq3\t0.0000\n"
    "rbp_p=0.5             \tq3\t0.0000\n"
    "num_ret               \tall\t6\n"
    "set_F_0.5             \tall\t0.4722\n"
    "rbp_p=0.5             \tall\t0.2292\n"
)


def _m(names: str) -> list[str]:
    return [arg for name in names.split() for arg in ("-m", name)]


@pytest.mark.parametrize(
    ("flags", "want"),
    [
        (
            [
                "-q",
                "-c",
                "-l2",
                "-M3",
                *_m("runid num_q num_rel map gm_map P.5,2 relstring.4 ndcg"),
            ],
            EXAMPLES_L2_M3,
        ),
        (
            ["-q", "-c", "-J", *_m("relstring num_ret set_F.0.5 rbp.p=0.5")],
            EXAMPLES_J,
        ),
    ],
)
def test_trec_eval_on_the_examples(
    flags: list[str], want: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """trec_eval's order (measures.c, not the flags'), cut-offs sorted, the
    relstring of a query missing from the run under -c ('-' for relstring.4,
    '' for relstring: trec_eval.c empties only the name 'relstring'), num_rel's
    all line under -c -l2 (every grade > 0 of the qrels: 6, not 1 + 1 + 0),
    -J's condensed relstring, parameters in the names."""
    code, out, err = receval_says(capsys, "trec_eval", *flags, QRELS, RUN)
    assert code == 0, err
    assert out == want


def test_trec_eval_s_default_and_no_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """No -m: official (runid, num_q, the sums, ..., P_1000: 30 lines); -n: no all lines."""
    code, out, _ = receval_says(capsys, "trec_eval", "-c", QRELS, RUN)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 30
    assert lines[:3] == [
        "runid                 \tall\tdemo",
        "num_q                 \tall\t3",
        "num_ret               \tall\t9",
    ]
    assert lines[5] == "map                   \tall\t0.2481"  # trec_eval 10.0 -c
    code, out, _ = receval_says(capsys, "trec_eval", "-n", "-q", "-m", "map", QRELS, RUN)
    assert (
        code == 0
        and out == "map                   \tq1\t0.2444\nmap                   \tq2\t0.5000\n"
    )


def test_measure_flags_resolve_as_trec_eval_s() -> None:
    assert [ln.name for ln in request(["P.10,5", "map", "P.20"]).lines] == ["map", "P_5", "P_10"]
    names = [ln.name for ln in request(["iprec_at_recall..5,.25", "Rprec_mult.1"]).lines]
    assert names == ["iprec_at_recall_0.25", "iprec_at_recall_0.50", "Rprec_mult_1.00"]
    assert len(request(["all_trec"]).lines) == 97 + 3  # + runid, num_q, relstring
    assert [ln.name for ln in request(["set"]).lines][-2:] == ["set_map", "set_F"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["trec_eval", "-m", "P.5,5", QRELS, RUN], "repeated"),
        (["trec_eval", "-m", "nope", QRELS, RUN], "no measure 'nope'"),
        (["trec_eval", "-m", "prefs_simp", QRELS, RUN], "not computed by receval"),
        (["trec_eval", QRELS, ROOT / "examples" / "nothere.txt"], "nothere.txt"),
        (["evaluate", RUN, QRELS, "-o", "trec_eval"], "--convention trec_eval"),
        (["evaluate", RUN, QRELS, "--convention", "trec_eval", "-o", "trec_eval", "-k", "5"], "-k"),
    ],
)
def test_bad_input_exits_2_in_one_line(
    argv: list[object], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = receval_says(capsys, *argv)
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and said in err, err


def test_a_bad_run_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 1 high t\n")
    code, _, err = receval_says(capsys, "trec_eval", QRELS, run)
    assert code == 2 and len(err.splitlines()) == 1
    assert "run.txt" in err and "line 2" in err, err


# -- trec_eval 10.0 on random files (tests/trec_differential.py), held by its output's sha256 --

#: (seed, flags) -> sha256 of what trec_eval 10.0 (usnistgov/trec_eval f425365, built with gcc)
#: prints on tests/trec_differential.py's files of that seed: the qrels of the run's queries
#: unless -c (trec_eval 10 stops on a query of the qrels the run lacks; docs/trec_eval.md).
#: Each pair failed before the fix its comment names.
TREC_EVAL_10_SHA256 = {
    # all lines: the per-query doubles added in the qrels' order, not the exact mean
    (19, ""): "16ce702241e678f2b3d970a02461a354406c9ce78b9896bfb0dcdce3aaacd669",
    (37, "-q -m all_trec"): "0855b74fc41869ea67dad337d706d0ab0258e00d3ed415f9947a1b77ba42eea5",
    (
        6,
        "-q -m all_trec -c -l2",
    ): "ac1889f7854507f1b3f0b36e8b09e75b809979c536f52bd94c5338b9960c9fbc",
    # -J: -nan of iprec_at_recall/11pt_avg over a list condensed to nothing, and in their all lines
    (31, "-q -m all_trec -J"): "fc7a4b02bbe3db703c51b149ba90e2b4a82ea432cef13c8d498a8951655ca192",
    (28, "-m all_trec -J -l2"): "2639e4ef7d321d59d9134f7eda752edcdaadb70d75039e14c4aed687452c52cb",
    (32, "-c -J"): "ee70796e11dc65cdf1497911215bdb0b2541dd0ae414428c81a02457be7e021e",
    (30, "-M5 -J"): "4bd327805d82f608a59ad372cc6fed4af278350d654fff24d93db11ce4c0fa23",
    # a query judged only -1 (33: '7', retrieving only unjudged documents; 0: '129'), with -nan
    (33, "-q -m all_trec -J"): "6fc0098e70687629cf2ab287f7718fa34589f598c60b03a11c7f46b872575655",
    (0, "-q -m all_trec -c -J -l2"): (
        "678bbc8b9e8a3a871b30f3b640b0873ead77915ede561c57ad0a72b266b67c8f"
    ),
}
#: the first 16 hex digits of sha256(qrels + run) of those seeds: the generator is the same
WORKLOADS = {
    0: "88b467bb61c6eda5",
    6: "56359bcf84265b70",
    19: "9cf76012ff0d5761",
    28: "0c4c7c83c3156cc3",
    30: "ba163b5c91e9126a",
    31: "8dc1bf6f889eea8e",
    32: "2c2141fadf18179a",
    33: "87df45acce28e2ee",
    37: "ef937e28b80ea8b8",
}


@pytest.mark.parametrize(("seed", "flags"), list(TREC_EVAL_10_SHA256))
def test_trec_eval_10_s_bytes_on_random_files(
    seed: int, flags: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """receval's text hashes to trec_eval 10.0's on the differential's files
    (queries with nothing relevant, grade 1 only under -l2, lists all
    unjudged, ties, -1 judgments); ``python tests/trec_differential.py BINARY``
    compares them on many more."""
    import hashlib

    from tests.trec_differential import workload, write

    qrels_text, run_text = workload(seed)
    assert hashlib.sha256((qrels_text + run_text).encode()).hexdigest()[:16] == WORKLOADS[seed]
    qrels, run, _ = write(seed, tmp_path)
    code, out, err = receval_says(capsys, "trec_eval", *flags.split(), qrels, run)
    assert code == 0, err
    assert hashlib.sha256(out.encode()).hexdigest() == TREC_EVAL_10_SHA256[seed, flags]
