"""The method of moments for crossed random intercepts: its equations, its agreement with REML, its errors."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.design import model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.moments import fit_moments, moment_design
from bayesrepro.simulate import simulate_crowd

CROWD = "score ~ 1 + (1|item) + (1|rater)"


def _indicators(codes, levels):
    z = np.zeros((len(codes), levels))
    z[np.arange(len(codes)), codes] = 1.0
    return z


def test_the_equations_are_the_expectations_of_the_sums_of_squares():
    """Each coefficient is tr(A_k Z_l Z_l') (A_k the within-level projection of factor k, A_0 the centring),
    computed densely on a small unbalanced design of three crossed factors with repeated pairs."""
    rng = np.random.default_rng(5)
    rows = 150
    table = pd.DataFrame({"a": rng.integers(0, 12, rows), "b": rng.integers(0, 7, rows), "c": rng.integers(0, 30, rows)})
    table = table.astype(str).assign(y=rng.normal(size=rows))
    frame = model_frame("y ~ 1 + (1|a) + (1|b) + (1|c)", table)
    design = moment_design(frame)
    zs = [_indicators(g.codes, g.n_levels) for g in frame.groups]
    projections = [np.full((rows, rows), 1.0 / rows)] + [z @ np.diag(1.0 / z.sum(axis=0)) @ z.T for z in zs]
    expected = np.array([[np.trace((np.eye(rows) - p) @ cov) for cov in [z @ z.T for z in zs] + [np.eye(rows)]]
                         for p in projections])
    np.testing.assert_allclose(design.coefficients, expected, rtol=1e-12, atol=1e-9)
    # and the sums of squares are those quadratic forms of y
    squares = design.squares(frame.y, [g.codes for g in frame.groups])
    np.testing.assert_allclose(squares, [frame.y @ (np.eye(rows) - p) @ frame.y for p in projections], rtol=1e-10)


def test_on_a_balanced_crossed_design_the_moments_are_the_reml_estimates():
    """With every item scored once by every rater, the moment (ANOVA) estimates are REML's when positive."""
    rng = np.random.default_rng(11)
    items, raters = 40, 25
    item, rater = (a.ravel() for a in np.meshgrid(np.arange(items), np.arange(raters), indexing="ij"))
    y = rng.normal(0, 1.0, items)[item] + rng.normal(0, 0.6, raters)[rater] + rng.normal(0, 0.8, len(item))
    table = pd.DataFrame({"item": item.astype(str), "rater": rater.astype(str), "score": y})
    frame = model_frame(CROWD, table)
    moments, reml = fit_moments(frame, replicates=2), fit_model_frame(frame, "reml")
    for name in ("item", "rater", "Residual"):
        assert moments.variances[name] == pytest.approx(reml.variances[name], rel=1e-6)


def test_on_a_sparse_crowd_design_moments_and_reml_agree_within_the_moments_errors():
    table, _ = simulate_crowd(4_000, 1_500, 300, skew=1.0, random_state=2)
    frame = model_frame(CROWD, table)
    moments, reml = fit_moments(frame, replicates=60, seed=1), fit_model_frame(frame, "reml")
    for name in ("item", "rater", "Residual"):
        assert abs(moments.variances[name] - reml.variances[name]) < 3 * moments.variance_se[name], name
    assert moments.beta[0] == pytest.approx(reml.beta[0], abs=3 * moments.se[0])


def test_the_estimates_of_a_simulated_crowd_lie_within_their_errors_of_the_truth():
    table, truth = simulate_crowd(40_000, 20_000, 8_000, skew=1.0, item_sd=1.0, rater_sd=0.5, residual_sd=1.0,
                                  random_state=4)
    fit = fit_moments(model_frame(CROWD, table), seed=3)
    for name, sd in (("item", truth.item_sd), ("rater", truth.rater_sd), ("Residual", truth.residual_sd)):
        assert abs(fit.variances[name] - sd ** 2) < 4 * fit.variance_se[name], name
    assert fit.method == "moments" and fit.converged and np.isnan(fit.loglik)


@pytest.mark.slow
def test_the_bootstrap_errors_match_the_spread_of_the_estimates_over_simulations():
    """Over 40 simulated crowds the standard deviation of each estimate is within 30 % of the mean bootstrap error
    (the error of a standard deviation from 40 draws is about 11 %)."""
    estimates, errors = [], []
    for seed in range(40):
        table, _ = simulate_crowd(6_000, 2_500, 600, skew=1.0, random_state=100 + seed)
        fit = fit_moments(model_frame(CROWD, table), replicates=40, seed=seed)
        estimates.append(list(fit.variances.values()))
        errors.append(list(fit.variance_se.values()))
    ratio = np.std(estimates, axis=0, ddof=1) / np.mean(errors, axis=0)
    assert np.all(np.abs(ratio - 1.0) < 0.3), ratio


def test_fixed_terms_and_frames_without_rows_are_refused_in_one_line():
    table, _ = simulate_crowd(400, 150, 30, random_state=0)
    table["group"] = np.where(np.arange(len(table)) % 2, "x", "y")
    with pytest.raises(BayesreproError, match="intercept-only formulas"):
        fit_moments(model_frame("score ~ group + (1|item) + (1|rater)", table))


def test_confounded_factors_are_refused():
    table, _ = simulate_crowd(400, 150, 30, random_state=0)
    table["copy"] = table["item"]
    with pytest.raises(BayesreproError, match="not identified by their moments"):
        fit_moments(model_frame("score ~ 1 + (1|item) + (1|copy) + (1|rater)", table))


def test_the_simulated_crowd_has_what_it_promises():
    table, truth = simulate_crowd(10_000, 4_000, 1_000, skew=1.2, random_state=9)
    per_item = table.groupby("item")["rater"].agg(["nunique", "size"])
    assert len(per_item) == 4_000 and (per_item["nunique"] == per_item["size"]).all() and per_item["size"].min() >= 2
    activity = table["rater"].value_counts()
    assert activity.iloc[0] > 50 * activity.median()      # a few raters score a large share
    uniform, _ = simulate_crowd(10_000, 4_000, 1_000, skew=0.0, random_state=9)
    assert uniform["rater"].value_counts().iloc[0] < 5 * uniform["rater"].value_counts().median()
    binary, truth = simulate_crowd(10_000, 4_000, 1_000, binary=True, random_state=9)
    assert set(binary["score"].unique()) == {0, 1} and truth.residual_sd == 0.0


@pytest.mark.slow
def test_a_million_row_crowd_is_estimated_within_its_errors_and_issue_24s_tolerances_where_they_are_met():
    """1,000,000 rows, 200,000 items × 20,000 raters, skewed: every variance within 3 bootstrap standard errors
    of the truth; the item SD within 3 % and the residual SD within 1 % (their errors are 0.2 % and 0.1 %). The
    rater SD's own error is about 5 % on this design, so issue 24's 3 % is not something the moments promise."""
    table, truth = simulate_crowd(1_000_000, 200_000, 20_000, skew=1.0, random_state=24)
    fit = fit_moments(model_frame(CROWD, table), replicates=20, seed=1)
    for name, sd in (("item", truth.item_sd), ("rater", truth.rater_sd), ("Residual", truth.residual_sd)):
        assert abs(fit.variances[name] - sd ** 2) < 3 * fit.variance_se[name], name
    assert abs(np.sqrt(fit.variances["item"]) / truth.item_sd - 1) < 0.03
    assert abs(np.sqrt(fit.variances["Residual"]) / truth.residual_sd - 1) < 0.01


def test_a_slow_exact_fit_of_grouped_sums_names_the_path_the_rows_allow(tmp_path):
    from types import SimpleNamespace

    from bayesrepro.frequentist.fit_choice import _rows_remedy

    table, _ = simulate_crowd(600, 200, 40, random_state=1)
    path = tmp_path / "crowd.csv"
    table.to_csv(path, index=False)
    formula = "score ~ 1 + (1|item) + (1|rater)"
    grouped, rows = model_frame(formula, str(path), engine="duckdb"), model_frame(formula, table)
    slow, quick = SimpleNamespace(seconds=8000.0), SimpleNamespace(seconds=5.0)
    assert "--engine memory" in _rows_remedy(grouped, slow)
    assert _rows_remedy(grouped, quick) == "" and _rows_remedy(rows, slow) == ""
