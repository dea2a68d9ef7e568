"""What the command line promises whatever it is given: exit statuses, one-line errors, options checked first.

Exit statuses: 0 success, 1 internal error, 2 bad input, 3 did not converge, 4 a native crash (test_native_crash.py),
130 interrupted.
"""

import argparse
import importlib
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import bayesrepro.cli as cli
import bayesrepro.data
from bayesrepro.errors import EXIT_BAD_INPUT, EXIT_NOT_CONVERGED

TER = ("kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)")


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("bayesrepro: error: "), captured
    return lines[0]


@pytest.mark.parametrize("argv, names", [
    (["phi", *TER, "--draws", "abc"], "--draws"),
    (["phi", *TER, "--bogus", "1"], "--bogus"),
    (["vca", "kreutzer_ter"], "--formula"),
    (["report", "kreutzer_ter", "--spec", "system_comparison"], "--out"),
    (["vca", *TER, "--method", "reml2"], "--method"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--drop-missing"], "--drop-missing"),
    (["nosuchcommand"], "nosuchcommand"),
    ([], "COMMAND"),
])
def test_argparse_errors_are_one_line_with_status_2(argv, names, capsys):
    assert cli.main(argv) == EXIT_BAD_INPUT
    line = one_error_line(capsys)
    assert names in line and "usage:" not in line


READING_MODULES = ("bayesrepro.data", "bayesrepro.design.frame", "bayesrepro.design.producers",
                   "bayesrepro.report", "bayesrepro.frequentist.analyses", "bayesrepro.frequentist.glrt",
                   "bayesrepro.plan.pilot")


@pytest.fixture
def no_data_reading(monkeypatch):
    """Fail the test if a command reads its data: its options must be refused before."""
    def refuse(*args, **kwargs):
        raise AssertionError("the data were read before the options were checked")
    # every module that binds read_table at import, all imported before any is patched: one first imported while
    # the patch is on would keep `refuse` for the rest of the session
    modules = [importlib.import_module(name) for name in READING_MODULES]
    for module in modules:
        monkeypatch.setattr(module, "read_table", refuse)


@pytest.mark.parametrize("argv, expected", [
    (["phi", *TER, "--prob", "1.5"], "--prob must lie strictly between 0 and 1"),
    (["phi", *TER, "--prob", "nan"], "--prob must lie strictly between 0 and 1"),
    (["phi", *TER, "--draws", "5"], "--draws must be a whole number from 100 to 100,000, not 5"),
    (["phi", *TER, "--chains", "1"], "--chains must be a whole number from 2 to 64"),
    (["phi", *TER, "--tune", "0"], "--tune must be a whole number from 1 to 100,000"),
    (["phi", *TER, "--seed", "-3"], "--seed must be a whole number from 0 to 4,294,967,295, not -3"),
    (["phi", *TER, "--chains", "64", "--draws", "6000"], "--chains x (--tune + --draws) NUTS steps come to 448,000"),
    (["phi", *TER, "--object", "system"], "--object 'system' is not a grouping factor"),
    (["phi", *TER, "--prior-scale", "seed=0.1"], "--prior-scale names unknown parameter 'seed'"),
    (["phi", *TER, "--prior-scale", "sentence_id=-1"], "--prior-scale sentence_id=-1 must be a positive"),
    (["phi", *TER, "--prior-scale", "sentence_id=abc"], "--prior-scale sentence_id=abc needs a number"),
    (["phi", *TER, "--prior-scale", "sentence_id"], "--prior-scale 'sentence_id' needs the form NAME=VALUE"),
    (["vca", *TER, "--object", "sentence"], "--object 'sentence' is not a grouping factor"),
    (["vca", "kreutzer_ter", "--formula", "ter ~ (1|"], "could not parse formula"),
    (["glrt", "kreutzer_ter", "--h0", "ter ~ 1 + (1|sentence_id)", "--h1", "ter ~"], "'ter ~'"),
    (["compare", *TER, "--bootstrap", "20"], "--bootstrap must be a whole number from 100 to 5,000, not 20"),
    (["compare", *TER, "--bootstrap", "1e11"], "--bootstrap must be a whole number from 100 to 5,000, not 1e11"),
    (["compare", *TER, "--prob", "0"], "--prob must lie strictly between 0 and 1"),
    (["compare", *TER, "--seed", "-1"], "--seed must be a whole number from 0 to 4,294,967,295, not -1"),
    (["glrt", "kreutzer_ter", "--h0", "ter ~ 1 + (1|sentence_id)", "--h1", "ter ~ system + (1|sentence_id)",
      "--seed", "x"], "--seed must be a whole number from 0 to 4,294,967,295, not x"),
    (["vca", *TER, "--nagq", "0"], "--nagq must be a whole number from 1 to 25, not 0"),
    (["vca", *TER, "--nagq", "-3"], "--nagq must be a whole number from 1 to 25, not -3"),
    (["vca", *TER, "--nagq", "100000"], "--nagq must be a whole number from 1 to 25, not 100000"),
    (["vca", "kreutzer_ter", "--formula", "ter ~ 1 + (1|sentence_id) + (1|system)", "--nagq", "5"],
     "--nagq 5: adaptive quadrature integrates over one grouping factor and this model has 2"),
    (["compare", *TER, "--h0", "ter ~ ("], "could not parse formula"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--bootstrap", "99"],
     "--bootstrap must be a whole number from 100 to 5,000, not 99"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--prob", "95"], "--prob"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--column", "scor=TER"],
     "no column parameter scor"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--column", "score"],
     "--column 'score' needs the form PARAMETER=COLUMN"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--column", "score=<b>"],
     "column name '<b>' for {score} cannot appear in a formula"),
    (["report", "kreutzer_ter", "--spec", "system_comparison", "--out", "r.html", "--draws", "10"], "--draws"),
])
def test_options_are_refused_before_the_data_are_read(argv, expected, capsys, no_data_reading):
    assert cli.main(argv) == EXIT_BAD_INPUT
    line = one_error_line(capsys)
    assert expected in line
    for python_name in ("n_boot", "drop_missing=", "prob=", "draws=", "prior_overrides"):
        assert python_name not in line


def _subparsers(parser) -> dict:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def count_options():
    """(command, flag, limit) of every count option of every command."""
    return [(name, action.option_strings[-1], action.type.limit)
            for name, command in _subparsers(cli.build_parser()).items() for action in command._actions
            if hasattr(action.type, "limit")]


def test_every_whole_number_option_has_a_documented_range():
    # no option parses a bare int: each count goes through limits.Count, whose range its help states
    for name, command in _subparsers(cli.build_parser()).items():
        for action in command._actions:
            assert action.type is not int, f"{name} {action.option_strings} takes an unbounded int"
            if hasattr(action.type, "limit"):
                assert action.type.limit.range in action.help, (name, action.option_strings)
    flags = {(name, flag) for name, flag, _ in count_options()}
    for expected in [("phi", "--draws"), ("phi", "--tune"), ("phi", "--chains"), ("phi", "--seed"),
                     ("compare", "--bootstrap"), ("report", "--bootstrap"), ("glrt", "--bootstrap-samples"),
                     ("glrt", "--seed"), ("vca", "--nagq"), ("bootstrap", "--resamples"), ("permutation", "--resamples"),
                     ("budget", "--resamples"), ("budget", "--budgets"), ("circularity", "--df"),
                     ("circularity", "--max-size"), ("plan", "--simulations"), ("plan", "--workers"),
                     ("plan", "--replicates"), ("plan", "--seed"), ("plan", "--draws"), ("plan", "--chains")]:
        assert expected in flags


@pytest.mark.parametrize("command, flag, limit", count_options())
def test_every_count_option_refuses_values_outside_its_range_before_reading_data(command, flag, limit, capsys,
                                                                                no_data_reading):
    for value in [limit.low - 1, limit.high + 1, 10**12, "1e12", "1.5", "x"]:
        assert cli.main([command, "data.csv", flag, str(value)]) == EXIT_BAD_INPUT
        line = one_error_line(capsys)
        assert f"{flag} must be a whole number from {limit.range}, not {value}" in line, line
    # the ends of the range are accepted
    assert action_type(command, flag)(str(limit.low)) == limit.low
    assert action_type(command, flag)(str(limit.high)) == limit.high


def test_a_count_may_be_written_in_scientific_notation():
    assert action_type("phi", "--draws")("2e3") == 2000
    assert action_type("plan", "--simulations")("1E2") == 100


def action_type(command, flag):
    (action,) = [a for a in _subparsers(cli.build_parser())[command]._actions if flag in a.option_strings]
    return action.type


def test_the_python_functions_check_the_same_ranges():
    from bayesrepro.bayes.sampling import SamplingSettings
    from bayesrepro.compare import check_bootstrap
    from bayesrepro.errors import BayesreproError
    from bayesrepro.frequentist.glmm import fit_glmm
    from bayesrepro.instruments.resampling import paired_bootstrap_test

    for kwargs, message in [({"draws": 10**9}, "--draws must be a whole number from 100 to 100,000"),
                            ({"chains": 100_000}, "--chains must be a whole number from 2 to 64"),
                            ({"tune": 10**13}, "--tune must be a whole number from 1 to 100,000"),
                            ({"seed": -1}, "--seed must be a whole number from 0 to 4,294,967,295, not -1"),
                            ({"seed": np.int64(-1)}, "--seed must be a whole number from 0 to 4,294,967,295, not -1")]:
        with pytest.raises(BayesreproError, match=re.escape(message)):
            SamplingSettings(**kwargs)
    with pytest.raises(BayesreproError, match="--bootstrap must be a whole number from 100 to 5,000, not 100000000000"):
        check_bootstrap(10**11)
    with pytest.raises(BayesreproError, match="--seed must be a whole number from 0 to 4,294,967,295, not -2"):
        paired_bootstrap_test(np.arange(5.0), np.arange(5.0) + 1, seed=-2)
    grid = pd.DataFrame({"item": np.repeat(np.arange(20), 4), "correct": np.tile([0, 1, 1, 0], 20)})
    for nagq in (0, -3, 26):
        with pytest.raises(BayesreproError, match=f"--nagq must be a whole number from 1 to 25, not {nagq}"):
            fit_glmm("correct ~ 1 + (1|item)", grid, nagq=nagq)


def test_a_posterior_too_large_for_memory_is_refused_before_sampling(monkeypatch):
    import bayesrepro.bayes.fit as fit
    from bayesrepro.errors import BayesreproError

    monkeypatch.setattr(fit, "_fit_fast", lambda *args: pytest.fail("sampling started"))
    # 1,041 sentences: 4 chains x 90,000 draws x ~1,060 values per draw > 1e8
    with pytest.raises(BayesreproError, match="values stored per draw .* more than the 100,000,000 that fit in memory"):
        fit.fit_bayes("ter ~ system + (1|sentence_id)", "kreutzer_ter", draws=90_000, tune=1, chains=4)


def test_an_internal_error_is_one_line_with_status_1_and_a_traceback_on_request(monkeypatch, capsys):
    import bayesrepro.frequentist.lmm

    def broken(*args, **kwargs):
        raise ZeroDivisionError("float division by zero\n  second line")

    monkeypatch.setattr(bayesrepro.frequentist.lmm, "fit_model_frame", broken)
    monkeypatch.delenv(cli.DEBUG_VARIABLE, raising=False)
    assert cli.main(["vca", *TER]) == 1
    line = one_error_line(capsys)
    assert "internal error (ZeroDivisionError: float division by zero)" in line and "BAYESREPRO_DEBUG=1" in line
    monkeypatch.setenv(cli.DEBUG_VARIABLE, "1")
    with pytest.raises(ZeroDivisionError):
        cli.main(["vca", *TER])


def _unconverged(monkeypatch):
    """Make every REML/ML fit report that its optimiser did not converge."""
    import bayesrepro.frequentist.lmm as lmm

    real = lmm.optimise

    def optimise(objective, *args, **kwargs):
        theta, _, _ = real(objective, *args, **kwargs)
        return theta, False, "iteration limit reached"

    monkeypatch.setattr(lmm, "optimise", optimise)


@pytest.mark.parametrize("argv, shown", [
    (["vca", *TER], "converged: NO (iteration limit reached)"),
    (["vca", *TER, "--json"], '"converged": false'),
    (["glrt", "kreutzer_ter", "--h0", "ter ~ 1 + (1|sentence_id)", "--h1", "ter ~ system + (1|sentence_id)"],
     "chi2 = "),
])
def test_an_unconverged_fit_prints_its_result_one_warning_and_exits_3(argv, shown, monkeypatch, capsys):
    _unconverged(monkeypatch)
    assert cli.main(argv) == EXIT_NOT_CONVERGED
    captured = capsys.readouterr()
    assert shown in captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bayesrepro: warning: ") and "did not converge" in lines[0]
    assert "iteration limit reached" in lines[0]


def test_every_command_has_a_description_and_every_option_a_help_text():
    parser = cli.build_parser()
    commands = _subparsers(parser)
    assert len(commands) == len(cli.COMMANDS)   # one subcommand per module (import_logs registers `import`)
    for name, command in commands.items():
        assert command.description and len(command.description) > 20, f"{name} has no description"
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            label = "/".join(action.option_strings) or action.dest
            assert action.help and action.help != argparse.SUPPRESS, f"{name} {label} has no help text"


def test_vca_json_names_the_koo_li_label(capsys):
    assert cli.main(["vca", *TER, "--json"]) == 0
    import json

    payload = json.loads(capsys.readouterr().out)
    from bayesrepro.reliability import koo_li_label

    assert payload["koo_li_label"] == koo_li_label(payload["phi"]) == "excellent"


def _small_comparison(path):
    rng = np.random.default_rng(7)
    items, systems = 30, ["A", "B", "C"]
    item_effect = rng.normal(0, 1.0, items)
    rows = [{"item": f"i{i}", "system": s, "score": item_effect[i] + 0.3 * k + rng.normal(0, 0.5)}
            for i in range(items) for k, s in enumerate(systems)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command, shown", [
    (["phi", "--formula", "score ~ system + (1|item)", "--draws", "1000", "--tune", "1000", "--chains", "2",
      "--seed", "1", "--allow-unconverged", "--prob", "0.9"],
     ["central 90% intervals", "phi (item, observed scale) = "]),
    (["compare", "--formula", "score ~ system + (1|item)", "--bootstrap", "100", "--draws", "300", "--tune", "300",
      "--chains", "2", "--seed", "1", "--allow-unconverged", "--prob", "0.9"],
     ["REML, 90 % parametric-bootstrap intervals", "posterior median and 90 % interval", "posterior (90 % intervals)"]),
])
def test_a_normal_run_prints_nothing_on_stderr_but_its_own_lines(command, shown, tmp_path):
    data = _small_comparison(tmp_path / "scores.csv")
    run = subprocess.run([sys.executable, "-m", "bayesrepro", command[0], str(data), *command[1:]],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode in (0, EXIT_NOT_CONVERGED), run.stderr
    # nothing from PyTensor, PyMC, ArviZ or NumPy; at most our one warning line when the sampler did not converge,
    # besides our notices of work that takes seconds (compiled code loading after installation, a binary model's
    # posterior mode on a slow machine)
    lines = [line for line in run.stderr.splitlines()
             if not line.startswith(("bayesrepro: loading the compiled", "bayesrepro: finding the posterior mode"))]
    assert len(lines) == (run.returncode == EXIT_NOT_CONVERGED), run.stderr
    assert all(line.startswith("bayesrepro: warning: ") for line in lines), run.stderr
    # --prob reaches every table: the only 95 % left is that of the Wald intervals, which say so
    for text in shown:
        assert text in run.stdout
    assert "95" not in re.sub(r"\(Wald[^;]*, 95 % intervals;", "", run.stdout)


def _grid_csv(path, scale=1.0):
    rng = np.random.default_rng(3)
    rows = [(f"i{i}", s, seed, scale * (rng.normal() + 0.3 * (s == "B")), int(rng.uniform() < 0.6))
            for i in range(30) for s in "AB" for seed in range(3)]
    pd.DataFrame(rows, columns=["item", "system", "seed", "score", "correct"]).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def no_sampling(monkeypatch):
    import bayesrepro.bayes.fit as fit

    monkeypatch.setattr(fit, "_fit_fast", lambda *a, **k: pytest.fail("sampling started"))
    monkeypatch.setattr(fit, "_fit_bambi", lambda *a, **k: pytest.fail("sampling started"))


PLAN = ["--formula", "score ~ system + (1|item) + (1|system:seed)", "--contrast", "system=B-A"]


@pytest.mark.parametrize("argv, expected", [
    (["phi", "{grid}", "--formula", "score ~ system + (1|item)", "--prior-scale", "item=1e-300"],
     "--prior-scale item=1e-300 must lie from"),
    (["vca", "{huge}", "--formula", "score ~ system + (1|item)"],
     "score column 'score' reaches 3.21e+200 in absolute value"),
    (["vca", "{tiny}", "--formula", "score ~ system + (1|item)"], "score column 'score' spans only"),
    (["vca", "{tiny}", "--formula", "score ~ system + (1|item)", "--engine", "duckdb"], "score column 'score' spans only"),
    (["bootstrap", "{huge}", "--item", "item", "--system", "system", "--score", "score", "--a", "A", "--b", "B"],
     "score column 'score' reaches"),
    (["vca", "{grid}", "--formula", "score ~ system + (1|item)", "--categorical", "score"],
     "--categorical names the score column 'score'"),
    (["compare", "{grid}", "--formula", "score ~ system + (1|item)", "--categorical", "seed,score"],
     "--categorical names the score column 'score'"),
    (["budget", "{grid}", "--score", "score", "--config", "seed", "--categorical", "score"],
     "score column 'score' holds categories"),
    (["baselines", "{grid}", "--score", "score", "--item", "item", "--system", "system"],
     "must hold 0/1 scores for these error bars, not 2.04"),
    (["plan", "{grid}", *PLAN, "--vary", "item=10", "--effect", "nan"], "--effect must be a finite number, not nan"),
    (["plan", "{grid}", *PLAN, "--vary", "item=10", "--effect=-inf"], "--effect must be a finite number, not -inf"),
    (["plan", "{grid}", *PLAN, "--vary", "item=" + ",".join(map(str, range(1, 3001))),
      "--vary", "seed=" + ",".join(map(str, range(1, 3001))), "--simulations", "0"],
     "the designs of the --vary grid (every combination of its counts) come to 9,000,000, more than the 10,000"),
    (["plan", "{grid}", *PLAN, "--vary", "item=10,20,40,80", "--vary", "seed=2,3,5", "--simulations", "500"],
     "--simulations 500 x 12 designs (simulated fits) come to 6,000, more than the 5,000"),
    (["plan", "{grid}", *PLAN, "--vary", "item=1000000", "--simulations", "100"],
     "--simulations 100 x the varied levels of every design come to 100,000,000, more than the 10,000,000"),
    (["plan", "{grid}", *PLAN, "--vary", "item=10000000"], "--vary item must be a whole number from 1 to 1,000,000"),
])
def test_bad_values_that_need_the_data_are_refused_before_any_fit(argv, expected, tmp_path, capsys, no_sampling):
    paths = {"grid": _grid_csv(tmp_path / "grid.csv"), "huge": _grid_csv(tmp_path / "huge.csv", 1e200),
             "tiny": _grid_csv(tmp_path / "tiny.csv", 1e-200)}
    argv = [a.format(**paths) if a.startswith("{") else a for a in argv]
    assert cli.main(argv) == EXIT_BAD_INPUT
    line = one_error_line(capsys)
    assert expected in line and "np.float64" not in line, line


def test_a_reader_that_goes_away_ends_the_run_quietly_with_status_141():
    # `bayesrepro vca ... | head`: the reader closes the pipe before the result is printed
    child = subprocess.Popen([sys.executable, "-m", "bayesrepro", "vca", "kreutzer_ter", "--formula",
                              "ter ~ system + (1|sentence_id)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=300) == 141 and err == b""
