"""REML/ML with Monte Carlo traces against the exact fits: estimates, their errors, the Monte Carlo error, seeds."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from bayesrepro.design import model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.conjugate_gradients import solve_many
from bayesrepro.frequentist.crossed_system import CrossedSystem
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.monte_carlo_reml import fit_monte_carlo, monte_carlo_bytes
from bayesrepro.simulate import simulate_crowd

CROWD = "score ~ 1 + (1|item) + (1|rater)"


@pytest.fixture(scope="module")
def crowd():
    table, _ = simulate_crowd(6_000, 2_500, 600, skew=1.0, random_state=2)
    return model_frame(CROWD, table)


def _agrees(fit, exact, sd_tolerance=0.01):
    """Every SD within ``sd_tolerance`` of the exact fit's, and every variance within 4 Monte Carlo errors of it
    (plus the steps' own tolerance, a hundredth of a standard error); the Monte Carlo error below a tenth of the
    standard error."""
    for name, variance in exact.variances.items():
        assert np.sqrt(fit.variances[name] / variance) == pytest.approx(1.0, abs=sd_tolerance), name
        assert abs(fit.variances[name] - variance) <= 4 * fit.monte_carlo_se[name] + 0.01 * fit.variance_se[name], name
        assert fit.monte_carlo_se[name] < 0.1 * fit.variance_se[name], name


def test_the_system_solves_the_mixed_model_equations_of_three_crossed_factors():
    """C x = b through the eliminated lead factor equals a dense solve of Z'Z + Γ⁻¹."""
    rng = np.random.default_rng(0)
    sizes = [40, 15, 7]
    codes = [rng.integers(0, s, 300) for s in sizes]
    system = CrossedSystem(codes, sizes)
    gamma = np.array([0.8, 0.3, 1.5])
    system.set_ratios(gamma)
    z = np.hstack([np.eye(s)[c] for s, c in zip(sizes, codes)])
    dense = z.T @ z + np.diag(np.repeat(1.0 / gamma, sizes))
    rhs = rng.normal(size=(sum(sizes), 3))
    solved, _, _ = system.solve(rhs, rtol=1e-12)
    np.testing.assert_allclose(solved, np.linalg.solve(dense, rhs), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(system.gram_product(rhs), z.T @ z @ rhs, rtol=1e-12)


def test_conjugate_gradients_stop_each_column_at_its_tolerance_and_take_a_start():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(30, 30))
    a = a @ a.T + 30 * np.eye(30)
    rhs = rng.normal(size=(30, 4))
    x, iterations = solve_many(lambda v: a @ v, rhs, 1.0 / np.diag(a), rtol=1e-10)
    np.testing.assert_allclose(a @ x, rhs, atol=1e-8)
    again, none = solve_many(lambda v: a @ v, rhs, 1.0 / np.diag(a), start=x, rtol=1e-6)
    assert none == 0 and iterations > 0 and np.array_equal(again, x)


def test_conjugate_gradients_take_a_preconditioning_function():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(40, 40))
    a = a @ a.T + np.eye(40)
    nearby = a + 0.01 * np.diag(rng.uniform(size=40))
    rhs = rng.normal(size=(40, 2))
    x, iterations = solve_many(lambda v: a @ v, rhs, lambda r: np.linalg.solve(nearby, r), rtol=1e-10)
    np.testing.assert_allclose(a @ x, rhs, atol=1e-8)
    _, jacobi_iterations = solve_many(lambda v: a @ v, rhs, 1.0 / np.diag(a), rtol=1e-10)
    assert iterations <= 4 < jacobi_iterations   # the inverse of a nearby matrix as preconditioner: a few steps


def test_reml_on_a_skewed_crowd_is_the_exact_fit_within_its_monte_carlo_error(crowd):
    exact = fit_model_frame(crowd, "reml")
    fit = fit_monte_carlo(crowd, "reml", seed=1)
    _agrees(fit, exact)
    assert fit.converged and fit.method == "reml" and not fit.exact and np.isnan(fit.loglik)
    assert fit.beta[0] == pytest.approx(exact.beta[0], abs=0.02 * fit.se[0])
    assert fit.se[0] == pytest.approx(exact.se[0], rel=0.01)


def test_ml_is_the_exact_ml_fit_within_its_monte_carlo_error(crowd):
    _agrees(fit_monte_carlo(crowd, "ml", seed=2), fit_model_frame(crowd, "ml"))


def test_fixed_effects_and_three_crossed_factors():
    rng = np.random.default_rng(7)
    rows = 5_000
    codes = {"a": rng.integers(0, 900, rows), "b": rng.integers(0, 400, rows), "c": rng.integers(0, 60, rows)}
    x = rng.normal(size=rows)
    y = (0.3 * x + rng.normal(0, 0.8, 900)[codes["a"]] + rng.normal(0, 0.5, 400)[codes["b"]]
         + rng.normal(0, 0.4, 60)[codes["c"]] + rng.normal(size=rows))
    table = pd.DataFrame({**{k: v.astype(str) for k, v in codes.items()}, "x": x, "y": y})
    frame = model_frame("y ~ x + (1|a) + (1|b) + (1|c)", table)
    exact = fit_model_frame(frame, "reml")
    fit = fit_monte_carlo(frame, seed=3)
    _agrees(fit, exact, sd_tolerance=0.02)     # c: 60 levels, an SD known to 10 %
    np.testing.assert_allclose(fit.beta, exact.beta, atol=0.02 * fit.se.min())
    np.testing.assert_allclose(fit.se, exact.se, rtol=0.01)


def test_seeds_agree_within_the_monte_carlo_error_they_report(crowd):
    """Over 12 seeds, the spread of each estimate matches the reported Monte Carlo error (within a factor of 2),
    and any two seeds agree within 4 combined errors."""
    fits = [fit_monte_carlo(crowd, seed=seed) for seed in range(12)]
    for name in fits[0].variances:
        values = np.array([f.variances[name] for f in fits])
        reported = np.mean([f.monte_carlo_se[name] for f in fits])
        assert 0.5 < values.std(ddof=1) / reported < 2.0, name
        spread = values.max() - values.min()
        assert spread <= 4 * np.sqrt(2) * max(f.monte_carlo_se[name] for f in fits), name


def test_a_factor_without_variance_goes_to_the_boundary():
    table, _ = simulate_crowd(4_000, 1_500, 300, skew=1.0, rater_sd=0.0, random_state=5)
    frame = model_frame(CROWD, table)
    fit = fit_monte_carlo(frame, seed=0)
    exact = fit_model_frame(frame, "reml")
    assert exact.boundary == ["rater"]
    assert fit.converged and fit.boundary == ["rater"] and fit.variances["rater"] == 0.0
    for name in ("item", "Residual"):
        assert abs(fit.variances[name] - exact.variances[name]) < 0.01 * fit.variance_se[name], name


def test_the_printed_fit_and_its_dict_state_the_path_and_its_errors(crowd):
    fit = fit_monte_carlo(crowd, seed=0, probes=8)
    text = str(fit)
    assert "Monte Carlo traces" in text and "monte_carlo_error" in text and "std_error" in text
    payload = fit.to_dict()
    assert payload["path"] == "monte-carlo" and payload["probes"] == 8 and payload["loglik"] != payload["loglik"]
    assert set(payload["variance_se"]) == set(payload["monte_carlo_se"]) == {"item", "rater", "Residual"}


def test_the_memory_estimate_bounds_what_the_fit_allocates():
    """tracemalloc's peak over a fit (frame built before) stays below ``monte_carlo_bytes``, which is not wildly
    above it (within a factor of 4)."""
    table, _ = simulate_crowd(60_000, 20_000, 3_000, skew=1.0, random_state=3)
    frame = model_frame(CROWD, table)
    estimate = monte_carlo_bytes(frame)
    tracemalloc.start()
    try:
        fit_monte_carlo(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= estimate <= 4 * peak, (peak, estimate)


def test_slopes_one_factor_and_too_few_probes_are_refused_in_one_line(crowd):
    table, _ = simulate_crowd(400, 150, 30, random_state=0)
    with pytest.raises(BayesreproError, match="two grouping factors or more"):
        fit_monte_carlo(model_frame("score ~ 1 + (1|item)", table))
    with pytest.raises(BayesreproError, match="at least 2 probe vectors"):
        fit_monte_carlo(crowd, probes=1)


@pytest.mark.slow
@pytest.mark.parametrize("skew", [1.0, 0.0])
def test_forty_thousand_scores_of_8000_raters_are_the_exact_fit_within_one_percent(skew):
    """The 40 k crowd designs of bench_crowd.py (5,489 active raters when skewed, 7,960 uniform; the exact sparse
    fit of the uniform one takes minutes)."""
    table, _ = simulate_crowd(40_000, 20_000, 8_000, skew=skew, random_state=24)
    frame = model_frame(CROWD, table)
    _agrees(fit_monte_carlo(frame, seed=11), fit_model_frame(frame, "reml"))


@pytest.mark.slow
def test_the_standard_errors_match_the_spread_of_the_estimates_over_simulations():
    """Over 40 simulated crowds the standard deviation of each estimate is within 30 % of the mean reported standard
    error (the error of a standard deviation from 40 draws is about 11 %)."""
    estimates, errors = [], []
    for seed in range(40):
        table, _ = simulate_crowd(6_000, 2_500, 600, skew=1.0, random_state=100 + seed)
        fit = fit_monte_carlo(model_frame(CROWD, table), seed=seed)
        estimates.append(list(fit.variances.values()))
        errors.append(list(fit.variance_se.values()))
    ratio = np.std(estimates, axis=0, ddof=1) / np.mean(errors, axis=0)
    assert np.all(np.abs(ratio - 1.0) < 0.3), ratio


def test_level_effects_of_a_monte_carlo_fit_are_the_exact_modes_at_its_estimates_without_sds(crowd):
    from bayesrepro.design import resolve_family
    from bayesrepro.frequentist.level_effects import MOMENTS_NOTE, _sums_effects, fitted_effects

    fit = fit_monte_carlo(crowd, "reml", seed=1)
    effects = fitted_effects(crowd, resolve_family(crowd, "auto", None), fit)
    exact = _sums_effects(crowd, fit, iterative=False)   # the sparse factor at the same estimates
    assert effects.notes == (MOMENTS_NOTE,)
    for term, reference in zip(effects.terms, exact.terms):
        np.testing.assert_allclose(term.estimate, reference.estimate, atol=1e-6 * np.sqrt(fit.variances[term.term.group]))
        assert np.isnan(term.sd).all() and np.isfinite(reference.sd).all()
