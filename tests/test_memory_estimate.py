"""Dense blocks are estimated from level counts and refused past --max-memory before anything large is built."""

import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from bayesrepro.cli import main
from bayesrepro.design import model_frame
from bayesrepro.design.memory_estimate import dense_estimate, format_bytes, parse_memory
from bayesrepro.errors import EXIT_BAD_INPUT, BayesreproError
from bayesrepro.frequentist.deviance import ProfiledDeviance
from bayesrepro.frequentist.lmm import fit_lmm
from bayesrepro.frequentist.fit_choice import choose_fit

COMMANDS = {
    "vca": ["--formula", "y ~ 1 + (1|a) + (1|b)"],
    "phi": ["--formula", "y ~ 1 + (1|a) + (1|b)"],
    "compare": ["--formula", "y ~ 1 + (1|a) + (1|b)"],
    "glrt": ["--h0", "y ~ 1 + (1|a)", "--h1", "y ~ 1 + (1|a) + (1|b)"],
    "plan": ["--formula", "y ~ 1 + (1|a) + (1|b)"],
    "report": ["--spec", "vca", "--out", "report.html"],
}


def _two_huge_factors(rows=300_000, seed=0):
    """The probe's case: a 7 MB table with two crossed factors of 50,000 and 100,000 levels."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 50_000, rows).astype(str), "b": rng.integers(0, 100_000, rows).astype(str),
                         "y": rng.normal(size=rows)})


def _three_factors(rows=3_000, levels=2_600, seed=0):
    """The probe's other case: three factors of 2,600 levels on 3,000 rows (117 s of dense factorisations)."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({name: rng.integers(0, levels, rows).astype(str) for name in "abc"})
    return table.assign(y=rng.normal(size=rows))


def test_two_factors_of_50000_and_100000_levels_are_refused_with_the_size_needed():
    with pytest.raises(BayesreproError) as refusal:
        fit_lmm("y ~ 1 + (1|a) + (1|b)", _two_huge_factors(), max_memory="8G")
    message = str(refusal.value)
    assert "needs a dense" in message and "past the memory limit of 8.0 GB (--max-memory)" in message
    size = int(message.split("dense ")[1].split(" x")[0].replace(",", ""))
    assert 49_000 < size < 50_001     # the smaller factor's observed levels and the intercept
    assert "GB" in message.split("about ")[1].split(" and")[0]


def test_the_same_design_in_vca_takes_the_monte_carlo_path_instead(capsys):
    frame = model_frame("y ~ 1 + (1|a) + (1|b)", _two_huge_factors(), max_memory="8G")
    fit = choose_fit(frame, "reml", progress=True)
    assert fit.method == "reml" and not fit.exact and fit.converged and np.isnan(fit.loglik)
    assert "path: REML with Monte Carlo traces (about " in capsys.readouterr().err
    assert any("a sparse factor of 49," in note and "memory limit 8.0 GB" in note for note in fit.notes)


def test_a_factor_that_fits_memory_but_would_take_long_to_factorise_goes_to_the_monte_carlo_path(capsys):
    """About 6,900 levels left after the largest factor: 760 MB of worst-case factor (within a quarter of 8 GB) but
    ~11 s a factorisation (a uniform crowd of 7,960 raters took 134 s exactly)."""
    rng = np.random.default_rng(2)
    table = pd.DataFrame({"a": rng.integers(0, 20_000, 30_000).astype(str),
                          "b": rng.integers(0, 7_000, 30_000).astype(str), "y": rng.normal(size=30_000)})
    fit = choose_fit(model_frame("y ~ 1 + (1|a) + (1|b)", table, max_memory="8G"), "reml", progress=True)
    assert fit.method == "reml" and not fit.exact
    err = capsys.readouterr().err
    assert "path: REML with Monte Carlo traces" in err and "~11 s a factorisation" in err


def test_the_moments_are_left_where_the_monte_carlo_path_would_pass_the_limit_too(capsys):
    rng = np.random.default_rng(1)
    rows = 100_000
    table = pd.DataFrame({"a": rng.integers(0, 50_000, rows).astype(str), "b": rng.integers(0, 20_000, rows).astype(str),
                          "y": rng.normal(size=rows)})
    fit = choose_fit(model_frame("y ~ 1 + (1|a) + (1|b)", table, max_memory="64M"), "reml", progress=True)
    assert fit.method == "moments"
    assert "the Monte Carlo REML path would need about" in capsys.readouterr().err


def test_three_factors_of_2600_levels_take_the_sparse_core_the_moments_path_or_are_refused():
    frame = model_frame("y ~ 1 + (1|a) + (1|b) + (1|c)", _three_factors())
    assert frame.dense_estimate().seconds > 60       # the dense path's estimated minutes
    exact = choose_fit(frame, "reml")
    assert exact.method == "reml" and any("sparse core" in note for note in exact.notes)
    iterative = choose_fit(frame.with_memory_limit("200M"), "reml")   # its factor's bound: 432 MB
    assert iterative.method == "reml" and not iterative.exact
    with pytest.raises(BayesreproError, match=r"past the memory limit of 100.0 MB \(--max-memory\)"):
        fit_lmm(model_frame("y ~ 1 + (1|a) + (1|b) + (1|c)", _three_factors()), max_memory="100M")


def test_a_glrt_is_refused_before_its_smaller_model_is_fitted(tmp_path, capsys):
    path = tmp_path / "three.csv"
    _three_factors().to_csv(path, index=False)
    status = main(["glrt", str(path), "--h0", "y ~ 1 + (1|a) + (1|b)", "--h1", "y ~ 1 + (1|a) + (1|b) + (1|c)",
                   "--max-memory", "100M"])
    assert status == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dense 3," in err and "--max-memory" in err


def test_the_bayesian_fast_path_and_the_binomial_engine_check_their_own_blocks():
    from bayesrepro.bayes import fit_bayes

    table = _three_factors()
    table["g"] = np.where(np.arange(len(table)) % 2, "x", "z")   # a fixed term: the crossed Gibbs sampler does not apply
    with pytest.raises(BayesreproError, match="in the bayes engine"):
        fit_bayes("y ~ g + (1|a) + (1|b)", table, max_memory="180M", draws=100, tune=100, chains=2)
    binary = table.assign(y=(table.y > 0).astype(int))
    frame = model_frame("y ~ 1 + (1|a) + (1|b)", binary, max_memory="64M")
    with pytest.raises(BayesreproError, match="in the binomial engine"):
        frame.binomial()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_model_command_takes_max_memory_and_refuses_a_bad_size(command, tmp_path, capsys):
    path = tmp_path / "scores.csv"
    _three_factors(rows=200, levels=20).to_csv(path, index=False)
    status = main([command, str(path), *COMMANDS[command], "--max-memory", "lots"])
    assert status == EXIT_BAD_INPUT
    assert "--max-memory must be a size such as 4G" in capsys.readouterr().err


def test_the_limit_reaches_the_frames_a_command_derives():
    frame = model_frame("y ~ 1 + (1|a) + (1|b)", _three_factors(rows=200, levels=20), max_memory="1G")
    assert frame.max_memory == 1 << 30
    assert frame.sibling("y ~ 1 + (1|a)").max_memory == 1 << 30


@pytest.mark.parametrize("text, size", [("4G", 4 << 30), ("500M", 500 << 20), ("1.5GB", int(1.5 * (1 << 30))),
                                        ("2000000000", 2_000_000_000), (" 2 gib ", 2 << 30), ("1T", 1 << 40)])
def test_sizes_are_read_as_people_write_them(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("text", ["4X", "", "-1G", "G", "1e9", "10M", "nan", True])
def test_sizes_that_mean_nothing_or_too_little_are_refused(text):
    with pytest.raises(BayesreproError, match="--max-memory must be"):
        parse_memory(text)


def test_the_estimate_bounds_what_the_dense_path_allocates():
    """tracemalloc's peak over building the statistics and one criterion with its gradient stays below the estimate,
    and the estimate is not wildly above it (within a factor of 3)."""
    rng = np.random.default_rng(3)
    rows = 6_000
    table = pd.DataFrame({"a": rng.integers(0, 2_000, rows).astype(str), "b": rng.integers(0, 600, rows).astype(str),
                          "y": rng.normal(size=rows)})
    frame = model_frame("y ~ 1 + (1|a) + (1|b)", table)
    estimate = frame.dense_estimate()
    tracemalloc.start()
    try:
        objective = ProfiledDeviance(frame.stats(), reml=True)
        objective.value_and_gradient(np.array([0.7, 0.4]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= estimate.bytes <= 3 * peak, (format_bytes(peak), format_bytes(estimate.bytes))


def test_the_estimate_counts_levels_of_all_but_the_largest_factor():
    estimate = dense_estimate([50_000, 100_000, 20], n_fixed=3)
    assert estimate.dense_size == 50_023
    assert estimate.bytes == 8 * 5 * 50_023 ** 2
    assert dense_estimate([100, 10], 1, "bayes", distinct_counts=5).bytes == 8 * 9 * 11 ** 2


def test_vca_json_of_the_monte_carlo_path_has_standard_errors_their_monte_carlo_errors_and_no_likelihood(
        tmp_path, capsys):
    path = tmp_path / "three.csv"
    _three_factors().to_csv(path, index=False)
    assert main(["vca", str(path), "--formula", "y ~ 1 + (1|a) + (1|b) + (1|c)", "--max-memory", "200M", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["method"] == "reml" and payload["path"] == "monte-carlo" and payload["loglik"] is None
    assert set(payload["variance_se"]) == set(payload["monte_carlo_se"]) == {"a", "b", "c", "Residual"}
    assert payload["probes"] == 16
    assert any(note.startswith("method: REML with Monte Carlo traces") for note in payload["notes"])


def test_progress_names_the_exact_path_and_its_block_when_it_fits(capsys):
    frame = model_frame("y ~ 1 + (1|a) + (1|b)", _three_factors(rows=400, levels=40))
    fit = choose_fit(frame, "reml", progress=True)
    assert fit.method == "reml"
    assert "bayesrepro: path: exact REML with a dense 41 x 41 block" in capsys.readouterr().err
