"""Property-based fuzzing of the data reader, formulas, --where and every command's options.

Whatever the input, a run ends with exit status 0 and a well-formed result,
2 (bad input) with exactly one stderr line starting ``bayesrepro: error:`` and
nothing on stdout, or 3 (did not converge) with the result and one warning
line, or only the error line; never with status 1 (an internal error is a
bug), never with a traceback, and no file is written but the one
``--out``/``--plot`` names. The package's own floating-point warnings are
errors here, so a computation that meets an invalid value is a failure too.
The command line runs in-process through ``bayesrepro.cli.main`` (a
subprocess costs ~0.7 s of start-up); ``test_hostile_corpus`` replays fixed
hostile inputs in subprocesses, where aborts and hangs show.

Each command's strategy mostly draws usual values, so that many runs get
through to a result: every command must reach exit 0 in some cases. The
Bayesian commands sample for real in about one case in six (a few hundred
draws on 72 rows); in the others their options or data fail first.

The default run is bounded (fixed ``max_examples``, derandomized, so CI sees
the same cases every time) to a few minutes; the same properties with four
times the examples are marked slow.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesrepro.cli import build_parser, main
from bayesrepro.data import read_table
from bayesrepro.levels import level_labels
from bayesrepro.errors import EXIT_BAD_INPUT, EXIT_NOT_CONVERGED, EXIT_OK, BayesreproError
from bayesrepro.where import parse_where

# derandomized: the same cases in every run; no example database between runs
SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
SCALE = {"default": 1, "slow": 4}
PROFILE = [pytest.param("default"), pytest.param("slow", marks=pytest.mark.slow)]
# the package's own invalid values, overflows and divisions by zero fail the run (numerical_work silences
# only the libraries')
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning:bayesrepro")


def fuzz(profile: str, examples: int):
    """Hypothesis settings of a profile: ``examples`` cases in the default run, four times as many when slow."""
    return settings(max_examples=examples * SCALE[profile], **SETTINGS)


# --- running the command line ------------------------------------------------------------------

ERROR_LINE = re.compile(r"^bayesrepro: error: \S")
WARNING_LINE = re.compile(r"^bayesrepro: warning: \S")


def run_cli(argv: list[str], cwd: Path):
    """(status, stdout, stderr, help_shown) of one in-process run with ``cwd`` as working directory."""
    out, err = io.StringIO(), io.StringIO()
    help_shown = False
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit_:   # argparse's --help
                status, help_shown = exit_.code, True
    finally:
        os.chdir(previous)
    return status, out.getvalue(), err.getvalue(), help_shown


def files_under(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if not p.is_dir()}


SAMPLING_PROGRESS = re.compile(r"bayesrepro: sampling: [0-9]+/[0-9]+ draws, [0-9]+ s$")


def assert_outcome(argv, status, out, err, help_shown, json_expected=False):
    # a progress bar redraws one line with carriage returns and clears it at the end
    lines = [line.split("\r")[-1] for line in err.split("\n")]   # what a terminal shows
    lines = [line for line in lines if line.strip()]
    if "--progress" in argv:   # asked for: on a pipe the sampler's progress comes as lines of their own
        lines = [line for line in lines if not SAMPLING_PROGRESS.match(line)]
    assert status in (EXIT_OK, EXIT_BAD_INPUT, EXIT_NOT_CONVERGED), (argv, status, err, out[-500:])
    if help_shown:
        assert status == EXIT_OK and out.startswith("usage: bayesrepro") and not lines, (argv, err)
        return
    errors = [line for line in lines if ERROR_LINE.match(line)]
    if errors:   # refused: one line and nothing else
        assert len(lines) == 1 and status != EXIT_OK and not out.strip(), (argv, status, err, out[-500:])
        return
    # a result, with notes (e.g. dropped rows) and, when it did not converge, one warning line
    assert out.strip() and all(line.startswith("bayesrepro: ") for line in lines), (argv, err)
    warnings_ = [line for line in lines if WARNING_LINE.match(line)]
    assert len(warnings_) == (status == EXIT_NOT_CONVERGED), (argv, status, err)
    if json_expected:
        json.loads(out)


def check_run(argv, folder: Path, allowed_outputs=()):
    before = files_under(folder)
    status, out, err, help_shown = run_cli(argv, folder)
    assert_outcome(argv, status, out, err, help_shown, json_expected="--json" in argv)
    after = files_under(folder)
    written = {name for name, stamp in after.items() if before.get(name) != stamp}
    assert written <= set(allowed_outputs), (argv, written)
    return status, out, err


# --- a small data set every command can read ---------------------------------------------------

def fixture_frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    items = ["007", "7", "NA", "it's", "a b", "x,y", "é", "10", "010", "null", "11", "12"]
    rows = []
    for k, item in enumerate(items):
        effect = rng.normal()
        for system in ("A", "B"):
            for seed in (1, 2, 3):
                score = effect + (0.4 if system == "B" else 0) + rng.normal(0, 0.5)
                rows.append((item, system, seed, f"r{seed % 2}", round(score, 4), int(score > 0),
                             round(rng.uniform(), 4), round(np.sin(3 * rng.uniform()), 4)))
    frame = pd.DataFrame(rows, columns=["item", "system", "seed", "rater", "score", "correct", "x", "pred"])
    frame["lr"] = np.where(frame["seed"] == 1, "1e-3", "0.0001")
    return frame


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from bayesrepro.harness.simulate import simulate_grid

    folder = tmp_path_factory.mktemp("fuzz")
    frame = fixture_frame()
    frame.to_csv(folder / "rows.csv", index=False)
    frame.to_json(folder / "rows.jsonl", orient="records", lines=True)
    frame.to_parquet(folder / "rows.parquet")
    simulate_grid(folder / "logs", seeds=(1, 2), items=6)
    (folder / "out").mkdir()
    return folder


COLUMNS = list(fixture_frame().columns)
DATA = ["rows.csv", "rows.jsonl", "rows.parquet", "kreutzer_annotation", "missing.csv", "out", "rows.xlsx"]
GARBAGE = ["", " ", "nope", "score ", "Score", "-", "--", "'", '"', "`", "a:b", "0", "-1", "é", "x" * 300,
           "--json", "NA", "\x00", "\n", "../../etc/passwd", "rows.csv"]
FORMULAS = [
    "score ~ 1 + (1|item)", "score ~ system + (1|item) + (1|seed)", "score ~ system + (1|item)",
    "score ~ 1 + (1|item) + (1|seed) + (1|item:seed)", "correct ~ system + (1|item)", "score ~ x + (1|item)",
    "score ~ item + (1|item)", "score ~ 1", "score ~", "~ item", "score ~ (x|item)", "item ~ 1 + (1|seed)",
    "score ~ np.save('pwned', x) + (1|item)", "score ~ system * x + (1|item/seed)", "score ~ 1 + (1|nope)",
    "score ~ C(seed) + (1|item)", "score ~ scale(x) + (1|rater)", "x ~ 1 + (1|lr)", "pred ~ 0 + (1|item)",
    "score ~ 1 + (1|item:seed) + (1|system)",
]
WHERES = [
    "system == 'A'", "seed > 1", "item == '007'", "item == 7", "seed == '1'", "item != 'NA'", "isna(item)",
    "x.__class__", "__import__('os').system('echo pwned > pwned')", "seed", "[1, 2]", "seed in [1, 2] & system == 'B'",
    "not seed == 1 | x > 0.5", "startswith(item, '0')", "`item` in ('a b', 'x,y')", "score / 0 > 1", "@seed",
    "lr == '1e-3'", "x > 2", "", "seed ==", "open('pwned', 'w')",
]


# Usual values of each option (most cases use these, so that many runs get far) and odd ones. A tuple is one
# value per repetition of the option (--column score=score --column item=item).
USUAL = {
    "data": ["rows.csv", "rows.jsonl", "rows.parquet"],
    "formula": FORMULAS[:6], "h0": ["score ~ 1 + (1|item)"], "h1": FORMULAS[:6],
    "where": ["system == 'A'", "seed > 1", "item != 'NA'", "seed in [1, 2] | x > 0.5", "notna(x)"],
    "spec": ["minimal_phi", "system_comparison"], "out": ["out/report.html"], "plot": ["out/curve.png"],
    "column": [("score=score", "item=item"), ("score=score", "item=item", "system=system")],
    "prior_scale": ["item=0.1", "Residual=2"], "prior": ["scaled", "r2d2"],
    "categorical": ["seed", "lr"], "a": ["A"], "b": ["B"], "item": ["item"], "system": ["system"],
    "score": ["score", "correct"], "instance": ["seed"], "rater": ["rater", "seed"], "config": ["seed", "lr"],
    "prediction": ["pred"], "features": ["x"], "defining": ["x"], "object": ["item"],
    "factor": ["system"], "by": ["x"], "bootstrap_samples": ["20", "50"], "resamples": ["200", "1000"],
    "budgets": ["1", "2", "3"], "df": ["4", "5"], "nagq": ["1"], "seed": ["0", "1", "4294967295"],
    "reference": ["auto", "chi2", "kenward-roger", "satterthwaite", "bootstrap", "exact-rlrt"],
}
# per command, where the shared ones do not fit: agreement rates units (item, system) by each seed once;
# plan's facets are those of its formula; import reads the logs of the fixture
COMMAND_USUAL = {
    "agreement": {"item": [("item", "system")], "rater": ["seed"], "score": ["score", "correct"]},
    "plan": {"formula": ["score ~ system + (1|item) + (1|system:seed)"], "contrast": ["system=B-A"],
             "vary": [("item=6,12",), ("item=6,12", "seed=2,3"), ("seed=2,4",)], "simulations": ["0", "10"],
             "workers": ["1"], "replicates": ["1", "2"], "effect": ["0.5", "-0.2"], "alpha": ["0.05"],
             "test": ["wald", "lrt"], "family": ["gaussian"], "object": ["item"], "rope": ["0", "0.1"],
             "draws": ["100"], "chains": ["2"]},
    "import": {"harness": ["lm-eval"], "paths": ["logs"], "out": ["out/scores.parquet", "out/scores.csv"],
               "metric": ["acc"]},
    # Spark starts a JVM (seconds): it is tried among the odd values
    **{name: {"engine": ["auto", "memory", "duckdb"], "spark_master": ["local[1]"]} for name in ("vca", "glrt", "phi")},
    "baselines": {"score": ["correct"], "formula": ["correct ~ system + (1|item)"]},
    # rank's factor (system by default) is a term of its formula
    "rank": {"formula": ["score ~ system + (1|item) + (1|seed)", "score ~ system + (1|item)",
                         "correct ~ system + (1|item)", "score ~ 1 + (1|item:seed) + (1|system)"]},
    "circularity": {"features": ["x", ("x", "score")], "prediction": ["pred"]},
}
# options given now and then only: --spark-master is refused without --engine spark, which starts a JVM
RARELY = {"spark_master"}
# optional options given in almost every case, as required ones are
ALMOST_ALWAYS = {"plan": {"contrast", "vary", "simulations"}, "report": {"column"}, "bootstrap": {"instance"},
                 "permutation": {"instance"}, "circularity": {"df"}}
ODD = {
    "data": DATA[3:], "formula": FORMULAS[6:], "h0": FORMULAS, "h1": FORMULAS[6:], "where": WHERES,
    "spec": ["nope", "rows.csv", "../x.toml"],
    "out": ["out/report.txt", "out", "missing/dir/report.html", "rows.csv/x.html"],
    "plot": ["out/curve.svg", "out/curve.txt", "missing/curve.png", "out"],
    "column": ["score", "=", "nope=score", "score=nope"], "prior_scale": ["item", "item=-1", "nope=1", "item=x",
                                                                         "item=1e-300", "item=1e300"],
    "prior": ["bambi", "nope"], "categorical": ["seed,item", "nope", ",", "score"],
    "a": ["B", "C", ""], "b": ["A", "C", ""], "object": ["item:seed", "Residual", "seed", "system"],
    "vary": ["item=0", "item=1e9", "nope=3", "item=" + ",".join(map(str, range(1, 200))), "item="],
    "contrast": ["system=A-B", "system=C-A", "system", "nope=B-A"],
    "reference": ["bogus", "Chi2", "kenward_roger"],
}
INTEGERS = (["20", "2", "4", "10", "100", "199"],
            ["1", "5", "0", "-1", "-5", str(10**12), str(10**30), "1e12", "1.5", "x", "", "nan"])
FLOATS = (["0.95", "0.5", "0.9", "0.01"], ["0.0", "1.0", "1.5", "-0.1", "nan", "inf", "1e300", "x", ""])


def option_values(command: str, action: argparse.Action):
    """A strategy for one option's value: a usual one four times in five, else an odd or absurd one."""
    usual_values = COMMAND_USUAL.get(command, {}).get(action.dest, USUAL.get(action.dest))
    limit = getattr(action.type, "limit", None)
    if action.choices:
        usual, odd = usual_values or list(action.choices), ["bogus", "", *action.choices]
    elif limit is not None:
        usual = usual_values or [str(limit.low), str(min(limit.high, max(limit.low, 100)))]
        # out of range only: the top of a range may take minutes (test_hostile_corpus runs it with a timeout)
        odd = INTEGERS[1] + [str(limit.low - 1), str(limit.high + 1)]
    elif action.type is float:
        usual, odd = FLOATS
    else:
        usual, odd = usual_values or COLUMNS, ODD.get(action.dest, []) + COLUMNS + GARBAGE
    odd_values = st.sampled_from(odd) if limit is not None or action.type is float or action.choices else \
        st.sampled_from(odd) | st.text(max_size=8)
    return st.integers(0, 4).flatmap(lambda k: st.sampled_from(usual) if k < 4 else odd_values)


SAMPLING_COMMANDS = ("phi", "compare", "report", "rank")
# a real NUTS run on the fixture's 72 rows: long enough to converge, short enough for a fuzz case
REAL_SAMPLING = ["--draws", "400", "--tune", "400", "--chains", "2", "--seed", "1"]


@st.composite
def command_lines(draw, command: str, subparser: argparse.ArgumentParser):
    argv = [command]
    for action in subparser._actions:
        if isinstance(action, argparse._HelpAction):
            if draw(st.integers(0, 30)) == 30:
                argv.append("--help")
            continue
        values = option_values(command, action)
        if not action.option_strings:                     # positional: the data, or import's harness and paths
            value = draw(values)
            argv += list(value) if isinstance(value, tuple) else [value]
            continue
        flag = action.option_strings[-1]
        # required options are left out now and then, optional ones given half of the time
        often = action.required or action.dest in ALMOST_ALWAYS.get(command, ())
        if often:
            present = draw(st.integers(0, 12)) < 12
        else:
            present = draw(st.integers(0, 12)) == 12 if action.dest in RARELY else draw(st.integers(0, 2)) == 2
        if not present:
            continue
        if action.nargs == 0:
            argv.append(flag)
            continue
        value = draw(values)
        if isinstance(value, tuple) and action.nargs == "+":
            argv += [flag, *value]
        elif isinstance(value, tuple):
            argv += [part for item in value for part in (flag, item)]
        elif action.nargs == "+":
            argv += [flag, value, *draw(st.lists(values.filter(lambda v: not isinstance(v, tuple)), max_size=2))]
        else:
            argv += [flag, value]
    if command in SAMPLING_COMMANDS:
        # the last occurrence of an option wins: about one case in six samples for real, the others fail
        # their validation before sampling
        if draw(st.integers(0, 5)) == 0:
            argv += REAL_SAMPLING + (["--bootstrap", "100"] if command != "phi" else [])
        else:
            argv += ["--draws", draw(st.sampled_from(["99", "5", "0", "-1", "1e12"]))]
    return argv


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


QUICK_COMMANDS = [name for name in subparsers() if name not in SAMPLING_COMMANDS + ("demo",)]
EXAMPLES = {"phi": 24, "compare": 18, "report": 18, "rank": 24}


@pytest.mark.parametrize("profile", PROFILE)
@pytest.mark.parametrize("command", QUICK_COMMANDS + list(SAMPLING_COMMANDS))
def test_every_option_of_every_command(command, profile, workdir):
    subparser = subparsers()[command]
    statuses = []

    @fuzz(profile, EXAMPLES.get(command, 60))
    @given(command_lines(command, subparser))
    def run(argv):
        allowed = {value for option, value in zip(argv, argv[1:]) if option in ("--out", "--plot")}
        status, _, _ = check_run(argv, workdir, allowed)
        statuses.append((status, "--help" in argv))

    run()
    # the strategy reaches results, not only refusals
    assert (EXIT_OK, False) in statuses, (command, statuses)


# --- the reader ----------------------------------------------------------------------------------

TEXTS = ["007", "7", "7.0", "1", "1.0", "+1", "-0", "0", "0.0", "-0.0", "NA", "null", "None", "nan", "inf", "",
         " 7", "a", "b", "it's", 'say "hi"', "x,y", "line\nbreak", "é", "1e-3", "0.001", "TRUE", "\ufeffa", "2"]
NAMES = ["item", "score", "seed", "", "score", "item ", "a b", "x,y", "Item"]


@st.composite
def delimited_files(draw):
    """A table written by csv.writer (so its fields are known), and how its bytes are then damaged, if at all."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4))
    n_rows = draw(st.integers(0, 10))
    field = st.sampled_from(TEXTS) | st.text(max_size=4)
    ragged = draw(st.integers(0, 5)) == 0
    rows = [[draw(field) for _ in range(len(names) + (draw(st.integers(-1, 1)) if ragged else 0))]
            for _ in range(n_rows)]
    delimiter = draw(st.sampled_from([",", ",", ",", "\t", ";"]))
    suffix = draw(st.sampled_from([".csv", ".csv", ".csv.gz", ".tsv"]))
    damage = draw(st.sampled_from([None, None, None, None, "bom", "latin1", "cut", "bytes", "nul"]))
    return names, rows, delimiter, suffix, damage, draw(st.binary(max_size=64))


def write_delimited(folder: Path, names, rows, delimiter, suffix, damage, noise) -> Path:
    buffer = io.StringIO()
    # CRLF line ends: csv.writer then quotes a field holding a carriage return, which readers take as a line end
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(names)
    writer.writerows(rows)
    text = buffer.getvalue()
    data = text.encode("latin-1", errors="replace") if damage == "latin1" else text.encode()
    if damage == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage == "bytes":
        data = noise + data[len(noise):]
    elif damage == "nul":
        data = data.replace(b"\r\n", b"\x00\r\n", 1)
    if suffix.endswith(".gz"):
        data = gzip.compress(data)
    if damage == "cut":
        data = data[: max(1, len(data) // 2)]
    path = folder / f"generated{suffix}"
    path.write_bytes(data)
    return path


def plain(names, rows, delimiter, suffix, damage) -> bool:
    """A well-formed file: every row as long as the header, names distinct, read with its own delimiter."""
    expected = "\t" if suffix.startswith(".tsv") else ","
    return (damage in (None, "bom") and delimiter == expected and len(set(names)) == len(names)
            and all(len(row) == len(names) for row in rows) and rows
            and not any("\x00" in field for row in rows for field in row))


@pytest.mark.parametrize("profile", PROFILE)
def test_reading_never_merges_two_texts_and_fails_in_one_line(profile, tmp_path):
    @fuzz(profile, 300)
    @given(delimited_files())
    def run(case):
        names, rows, delimiter, suffix, damage, noise = case
        path = write_delimited(tmp_path, names, rows, delimiter, suffix, damage, noise)
        try:
            frame = read_table(path)
        except BayesreproError as error:
            assert "\n" not in str(error)
            assert not plain(names, rows, delimiter, suffix, damage) or not rows, (case, error)
            return
        if not plain(names, rows, delimiter, suffix, damage):
            return
        assert list(frame.columns) == names
        for j, name in enumerate(names):
            written = [row[j] for row in rows]
            labels = level_labels(frame[name])
            # only an empty field is missing ...
            assert labels.isna().tolist() == [text == "" for text in written], (name, written)
            # ... and distinct texts stay distinct values (no two merged), equal texts equal
            pairs = set(zip(written, labels.astype(object).where(labels.notna(), "<missing>")))
            assert len(pairs) == len(set(written)) == len({label for _, label in pairs}), (name, written, pairs)

    run()


@pytest.mark.parametrize("profile", PROFILE)
def test_commands_on_generated_files_fail_in_one_line(profile, tmp_path):
    @fuzz(profile, 50)
    @given(delimited_files(), st.sampled_from(["vca", "agreement", "budget"]))
    def run(case, command):
        path = write_delimited(tmp_path, *case)
        argv = {
            "vca": ["vca", path.name, "--formula", "score ~ 1 + (1|item)"],
            "agreement": ["agreement", path.name, "--item", "item", "--rater", "seed", "--score", "score"],
            "budget": ["budget", path.name, "--score", "score", "--config", "item", "--resamples", "50"],
        }[command]
        check_run(argv, tmp_path)

    run()


# --- formulas ---------------------------------------------------------------------------------------

FORMULA_PARTS = ["score", "item", "seed", "system", "x", "nope", "1", "0", "-1", "C(seed)", "np.log(x + 1)",
                 "scale(x)", "{x + 1}", "x:system", "system*x", "(1|item)", "(1|seed)", "(1|item:seed)",
                 "(1|item/seed)", "(x|item)", "(1|np.log(x))", "np.save('pwned', x)", "open('pwned')",
                 "I(x ** 2)", "item + item", "((", ")", "|", "~", "'", "`", "__class__", "x.real", "1e400", "é"]


@st.composite
def formulas(draw):
    response = draw(st.sampled_from(["score", "correct", "item", "x", "np.log(score)", "", "nope", "score + x"]))
    terms = draw(st.lists(st.sampled_from(FORMULA_PARTS), min_size=0, max_size=5))
    joiner = draw(st.sampled_from([" + ", " + ", " * ", " - ", " ", ":"]))
    return f"{response} ~ {joiner.join(terms)}" if draw(st.integers(0, 10)) else joiner.join(terms)


@pytest.mark.parametrize("profile", PROFILE)
def test_formulas_never_run_code_or_fail_with_a_traceback(profile, workdir):
    @fuzz(profile, 100)
    @given(formulas(), st.sampled_from(["vca", "glrt"]))
    def run(formula, command):
        if command == "vca":
            argv = ["vca", "rows.csv", "--formula", formula, "--json"]
        else:
            argv = ["glrt", "rows.csv", "--h0", "score ~ 1 + (1|item)", "--h1", formula, "--json"]
        check_run(argv, workdir)

    run()


# --- --where --------------------------------------------------------------------------------------------

WHERE_TOKENS = ["item", "seed", "score", "system", "x", "`a b`", "`item`", "nope", "'007'", "'A'", "7", "1.5", "-1",
                "True", "None", "==", "!=", "<", ">=", "in", "not", "and", "or", "&", "|", "~", "(", ")", "[", "]",
                ",", "+", "-", "*", "/", "isna(item)", "startswith(item, '0')", "contains(system, 'A')", ".",
                "__class__", "@", "lambda", ":", "'", '"', "`", "os.system('x')", "if", "1e999", "\\", "#"]


def frame_for_where():
    frame = fixture_frame()
    frame["a b"] = frame["item"]
    frame.loc[::5, "x"] = np.nan
    frame.loc[::7, "item"] = None
    return frame


@pytest.mark.parametrize("profile", PROFILE)
def test_where_is_a_boolean_mask_or_one_line(profile):
    frame = frame_for_where()

    @fuzz(profile, 800)
    @given(st.lists(st.sampled_from(WHERE_TOKENS), min_size=1, max_size=9).map(" ".join) | st.text(max_size=30))
    def run(text):
        try:
            mask = parse_where(text).mask(frame)
        except BayesreproError as error:
            assert "\n" not in str(error)
            return
        assert mask.dtype == bool and mask.shape == (len(frame),)

    run()


@pytest.mark.parametrize("profile", PROFILE)
def test_where_on_the_command_line(profile, workdir):
    @fuzz(profile, 40)
    @given(st.lists(st.sampled_from(WHERE_TOKENS), min_size=1, max_size=7).map(" ".join) | st.sampled_from(WHERES))
    def run(text):
        check_run(["vca", "rows.csv", "--formula", "score ~ 1 + (1|item)", "--where", text], workdir)

    run()


# --- integer labels around 2**53 -------------------------------------------------------------------

# integers around 2**53 (where doubles stop holding every integer), at the ends of int64, and small ones
LARGE_INTEGERS = [2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3, -(2**53) - 1, -(2**53) - 2, 2**62 + 1,
                  2**63 - 1, 7, 12]


def labelled_rows(labels: list[int], role: str) -> pd.DataFrame:
    """Rows whose column ``rid`` holds ``labels``, each with an effect of its own (a fixed or a grouping term)."""
    rng = np.random.default_rng(len(labels))
    rows = []
    for i in range(12):
        item_effect = rng.normal()
        for k, label in enumerate(labels):
            for seed in (1, 2):
                rows.append((label, f"i{i}", seed, item_effect + 0.7 * k + rng.normal(0, 0.3)))
    frame = pd.DataFrame(rows, columns=["rid", "item", "seed", "score"])
    if role == "grouping":   # a third factor for the labels' random effect to be told apart from the item's
        frame["seed"] = [k % 3 for k in range(len(frame))]
    return frame


def write_labelled(frame: pd.DataFrame, folder: Path, kind: str):
    if kind == "frame":
        return frame
    path = folder / f"labels.{kind}"
    if kind == "csv":
        frame.to_csv(path, index=False)
    elif kind == "jsonl":
        with open(path, "w") as handle:   # integers as written: pandas' writer goes through doubles
            for row in frame.itertuples(index=False):
                handle.write(json.dumps(row._asdict()) + "\n")
    else:
        frame.to_parquet(path)
    return str(path)


@pytest.mark.parametrize("profile", PROFILE)
def test_integer_labels_beyond_2_53_give_one_fit_whatever_the_engine(profile, tmp_path):
    """A column of integers that doubles cannot hold exactly is read as labels by every engine and reader, as a
    fixed term or a grouping one: its fit is that of the same labels written as text. Integers a double holds
    exactly stay numbers (a covariate)."""
    import bayesrepro as br

    @fuzz(profile, 12)
    @given(st.lists(st.sampled_from(LARGE_INTEGERS), min_size=2, max_size=3, unique=True),
           st.sampled_from(["fixed", "grouping"]), st.sampled_from(["frame", "csv", "jsonl", "parquet"]),
           st.sampled_from(["memory", "duckdb"]))
    def run(labels, role, kind, engine):
        if kind == "frame" and engine == "duckdb":
            engine = "memory"   # a DataFrame is read in memory
        frame = labelled_rows(labels, role)
        formula = ("score ~ rid + (1|item) + (1|seed)" if role == "fixed" else
                   "score ~ 1 + (1|item) + (1|rid) + (1|seed)")
        exact = all(int(float(label)) == label for label in labels)
        reference = frame.assign(rid=frame["rid"].astype(float) if exact and role == "fixed" else
                                 "L" + frame["rid"].astype(str))
        expected = br.Model(formula, reference).fit().to_dict()
        fit = br.Model(formula, write_labelled(frame, tmp_path, kind), engine=engine).fit().to_dict()
        assert fit["reml_criterion"] == pytest.approx(expected["reml_criterion"], rel=1e-7, abs=1e-7), \
            (labels, role, kind, engine)
        assert len(fit["fixed_effects"]) == len(expected["fixed_effects"]), (labels, role, kind, engine)
        named = [note for note in fit["notes"] if "beyond 2^53" in note]
        assert bool(named) == (role == "fixed" and not exact), (labels, role, fit["notes"])

    run()
