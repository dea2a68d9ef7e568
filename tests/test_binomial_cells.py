"""Binomial cells: p(successes, trials) responses, collapsing rows, grouped aggregates, one family resolution."""

import duckdb
import numpy as np
import pandas as pd
import pytest

from bayesrepro.design import BinomialCells, build_model_frame, parse_formula, resolve_family
from bayesrepro.design.gaussian import stats_from_sums
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glmm import fit_binomial_cells, fit_glmm
from bayesrepro.links import log_binomial_coefficient
from bayesrepro.simulate import binary_grid

FORMULA = "correct ~ system + (1|item) + (1|prompt)"


@pytest.fixture(scope="module")
def grid():
    return binary_grid(items=60, seeds=3, prompts=3, random_state=11)


def test_binomial_response_names_successes_and_trials():
    spec = parse_formula("p(hits, shots) ~ period + (1|herd)")
    assert (spec.response, spec.trials) == ("hits", "shots")
    assert spec.variables[:2] == ("hits", "shots")
    assert spec.rewritten(drop_fixed=lambda used: True) == "p(hits, shots) ~ 1 + (1|herd)"
    assert parse_formula("p(hits, 10) ~ 1 + (1|herd)").trials == 10


@pytest.mark.parametrize("formula, message", [
    ("p(hits) ~ 1 + (1|herd)", "must be p\\(successes, trials\\)"),
    ("p(hits, 0) ~ 1 + (1|herd)", "whole number of at least 1"),
])
def test_malformed_binomial_responses_are_refused(formula, message):
    with pytest.raises(BayesreproError, match=message):
        parse_formula(formula)


@pytest.mark.parametrize("hits, shots, message", [
    ([1, 5, 2, 3], [4, 4, 4, 4], "successes 'hits' exceed the trials 'shots' \\(the row with index label 1: 5 of 4\\)"),
    ([1, 1.5, 2, 3], [4, 4, 4, 4], "successes 'hits' must be whole numbers"),
    ([0, 1, 2, 3], [4, 0, 4, 4], "trials 'shots' must be whole numbers of at least 1"),
])
def test_bad_counts_name_the_column_and_row(hits, shots, message):
    data = pd.DataFrame({"hits": hits, "shots": shots, "herd": list("aabb")})
    with pytest.raises(BayesreproError, match=message):
        build_model_frame("p(hits, shots) ~ 1 + (1|herd)", data)


def test_auto_family_says_once_that_zero_one_scores_are_bernoulli(grid):
    frame = build_model_frame(FORMULA, grid)
    family = resolve_family(frame)
    assert (family.name, family.link, family.scale) == ("bernoulli", "logit", "latent")
    assert "0/1" in family.note and "--family gaussian" in family.note
    assert resolve_family(frame, "gaussian") .name == "gaussian"
    assert resolve_family(frame, "bernoulli", "probit").note == ""


@pytest.mark.parametrize("formula, family, link, message", [
    ("score ~ 1 + (1|item)", "bernoulli", None, "--family bernoulli needs 0/1 scores in 'score'"),
    ("score ~ 1 + (1|item)", "auto", "probit", "--link probit applies to 0/1 scores"),
    ("p(k, n) ~ 1 + (1|item)", "gaussian", None, "is binomial; use --family binomial"),
    ("score ~ 1 + (1|item)", "poisson", None, "--family 'poisson' is unknown"),
])
def test_family_choices_that_do_not_fit_the_response_fail_in_one_line(formula, family, link, message):
    data = pd.DataFrame({"item": list("aabbcc"), "score": [0.2, 0.4, 0.5, 0.9, 0.1, 0.3],
                         "k": [1, 2, 0, 3, 1, 1], "n": [3, 3, 3, 3, 3, 3]})
    with pytest.raises(BayesreproError, match=message):
        resolve_family(build_model_frame(formula, data), family, link)


def test_rows_collapse_into_cells_of_one_fixed_row_and_one_level_per_factor(grid):
    cells = build_model_frame(FORMULA, grid).binomial()
    # the seeds are no grouping factor here: 3 seeds of one system on one item with one prompt are one cell
    assert cells.n_cells == 60 * 3 * 3 and set(cells.trials) == {3.0}
    assert cells.successes.sum() == grid["correct"].sum() and cells.n_rows == len(grid)
    assert cells.group_names == ("item", "prompt") and cells.sizes == (60, 3)
    assert cells.log_coefficient == 0.0   # 0/1 rows as observed


def test_cells_from_a_database_group_by_equal_the_cells_from_rows(grid):
    from_rows = build_model_frame(FORMULA, grid).binomial()
    table = duckdb.sql("SELECT system, item, prompt, SUM(correct) AS successes, COUNT(*) AS trials "
                       "FROM grid GROUP BY ALL ORDER BY random()").df()
    aggregated = BinomialCells.from_aggregates(FORMULA, table)
    key = lambda c: np.lexsort([c.codes[1], c.codes[0], c.fixed_cell])  # noqa: E731
    a, b = key(from_rows), key(aggregated)
    np.testing.assert_array_equal(from_rows.successes[a], aggregated.successes[b])
    np.testing.assert_array_equal(from_rows.trials[a], aggregated.trials[b])
    np.testing.assert_array_equal(from_rows.X[a], aggregated.X[b])
    for rows_codes, table_codes, rows_levels, table_levels in zip(from_rows.codes, aggregated.codes,
                                                                  from_rows.levels, aggregated.levels):
        np.testing.assert_array_equal(rows_levels[rows_codes[a]], table_levels[table_codes[b]])
    assert aggregated.fixed_names == from_rows.fixed_names and aggregated.n_rows == len(grid)
    fit_rows, fit_table = fit_binomial_cells(from_rows), fit_binomial_cells(aggregated)
    assert fit_table.loglik == pytest.approx(fit_rows.loglik, abs=1e-8)
    assert fit_table.variances == pytest.approx(fit_rows.variances, rel=1e-8)


def test_counts_given_as_p_successes_trials_fit_the_same_model_as_their_rows(grid):
    rows = fit_glmm("correct ~ system + (1|item)", grid)
    counts = grid.groupby(["item", "system"], observed=True, as_index=False).agg(k=("correct", "sum"),
                                                                                 n=("correct", "size"))
    binomial = fit_glmm("p(k, n) ~ system + (1|item)", counts)
    assert binomial.family == "binomial" and binomial.n_cells == rows.n_cells
    assert binomial.variances == pytest.approx(rows.variances, rel=1e-8)
    np.testing.assert_allclose(binomial.beta, rows.beta, rtol=1e-8)
    # the counts' likelihood is that of the rows times the number of orders the rows could have come in
    constant = log_binomial_coefficient(counts["k"].to_numpy(float), counts["n"].to_numpy(float)).sum()
    assert binomial.loglik - rows.loglik == pytest.approx(constant, abs=1e-6)


def test_grouped_sums_of_the_cells_are_the_gaussian_sums_of_the_rows(grid):
    frame = build_model_frame(FORMULA, grid)
    cells = frame.binomial()
    ours = stats_from_sums(cells.grouped_sums(), cells.X_fixed, list(cells.group_names), True)
    theirs = frame.stats()
    for name in ("dominant_counts", "dominant_zy", "dominant_zx", "rest_gram", "rest_zy", "rest_zx", "xtx", "xty"):
        np.testing.assert_allclose(getattr(ours, name), getattr(theirs, name), err_msg=name)
    assert ours.yty == pytest.approx(theirs.yty)


def test_scores_without_variation_are_refused():
    data = pd.DataFrame({"item": list("aabbcc"), "k": [3, 3, 2, 2, 1, 1], "n": [3, 3, 2, 2, 1, 1]})
    with pytest.raises(BayesreproError, match="every one of the 12 trials .* is a success"):
        build_model_frame("p(k, n) ~ 1 + (1|item)", data).binomial()


def test_binary_grid_spec_runs_its_glrt_and_latent_d_study_on_a_simulated_grid():
    from bayesrepro.frequentist.glrt import glrt
    from bayesrepro.reliability import d_study, latent_variances
    from bayesrepro.specs import load_spec

    spec = load_spec("binary_grid")
    data = spec.prepare(binary_grid(items=80, seeds=3, prompts=3, random_state=2))
    test = glrt(spec.h0, spec.formula, data)
    assert test.family == "bernoulli" and test.df == 2
    fit = fit_glmm(spec.formula, data)
    study = d_study(latent_variances(fit.variances), spec.object, {facet: 3 for facet in spec.facets})
    assert fit.phi(spec.object) < study["phi"] < 1
