"""The Laplace fit of 0/1 scores with Monte Carlo traces against the exact Laplace fit and glmer."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.design import model_frame, resolve_family
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glmm import fit_glmm_frame
from bayesrepro.frequentist.monte_carlo_laplace import fit_monte_carlo_laplace
from bayesrepro.simulate import simulate_crowd

CROWD = "score ~ 1 + (1|item) + (1|rater)"
REPO = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def crowd():
    table, _ = simulate_crowd(3_000, 1_000, 300, skew=1.0, binary=True, random_state=24)
    frame = model_frame(CROWD, table)
    return frame, resolve_family(frame, "auto", None)


def _agrees(fit, variances, beta, sd_tolerance=0.01):
    """Every SD within ``sd_tolerance`` of the reference's and every variance within 4 Monte Carlo errors of it (plus
    a hundredth of its standard error, the steps' tolerance); the Monte Carlo error below a tenth of the standard
    error; β within a tenth of its standard error."""
    for name, variance in variances.items():
        assert np.sqrt(fit.variances[name] / variance) == pytest.approx(1.0, abs=sd_tolerance), name
        assert abs(fit.variances[name] - variance) <= 4 * fit.monte_carlo_se[name] + 0.01 * fit.variance_se[name], name
        assert fit.monte_carlo_se[name] < 0.1 * fit.variance_se[name], name
    np.testing.assert_allclose(fit.beta, beta, atol=0.1 * fit.se.min())


def test_the_laplace_fit_of_a_binary_crowd_is_the_exact_one_within_its_monte_carlo_error(crowd):
    frame, family = crowd
    exact = fit_glmm_frame(frame, family)
    fit = fit_monte_carlo_laplace(frame, family, [], seed=1)
    assert fit.converged and fit.method == "ml" and np.isnan(fit.loglik)
    _agrees(fit, exact.variances, exact.beta)
    assert fit.se[0] == pytest.approx(exact.se[0], rel=0.01)


def test_a_covariate_and_three_crossed_factors():
    rng = np.random.default_rng(7)
    rows = 4_000
    codes = {"a": rng.integers(0, 800, rows), "b": rng.integers(0, 300, rows), "c": rng.integers(0, 40, rows)}
    x = rng.normal(size=rows)
    eta = (0.4 * x + rng.normal(0, 0.9, 800)[codes["a"]] + rng.normal(0, 0.6, 300)[codes["b"]]
           + rng.normal(0, 0.5, 40)[codes["c"]])
    table = pd.DataFrame({**{k: v.astype(str) for k, v in codes.items()}, "x": x,
                          "y": (rng.random(rows) < 1 / (1 + np.exp(-eta))).astype(int)})
    frame = model_frame("y ~ x + (1|a) + (1|b) + (1|c)", table)
    family = resolve_family(frame, "auto", None)
    exact = fit_glmm_frame(frame, family)
    fit = fit_monte_carlo_laplace(frame, family, [], seed=3)
    _agrees(fit, exact.variances, exact.beta)
    np.testing.assert_allclose(fit.se, exact.se, rtol=0.01)


def test_seeds_agree_within_the_monte_carlo_error_they_report(crowd):
    frame, family = crowd
    fits = [fit_monte_carlo_laplace(frame, family, [], seed=seed) for seed in range(8)]
    for name in fits[0].variances:
        values = np.array([f.variances[name] for f in fits])
        reported = np.mean([f.monte_carlo_se[name] for f in fits])
        assert 0.4 < values.std(ddof=1) / reported < 2.5, name
        assert values.max() - values.min() <= 4 * np.sqrt(2) * max(f.monte_carlo_se[name] for f in fits), name


def test_a_binary_design_whose_exact_factor_would_take_long_takes_the_path_and_reports_it():
    rng = np.random.default_rng(4)
    rows = 30_000
    items, raters = rng.integers(0, 20_000, rows), rng.integers(0, 7_000, rows)
    eta = rng.normal(0, 0.8, 20_000)[items] + rng.normal(0, 0.5, 7_000)[raters]
    table = pd.DataFrame({"item": items.astype(str), "rater": raters.astype(str),
                          "score": (rng.random(rows) < 1 / (1 + np.exp(-eta))).astype(int)})
    payload = br.Model(CROWD, table, family="bernoulli", object="item").fit().to_dict()
    assert payload["path"] == "monte-carlo" and payload["approximation"] == "Laplace, Monte Carlo traces"
    assert set(payload["variance_se"]) == set(payload["monte_carlo_se"]) == {"item", "rater"}
    assert any("~11 s a factorisation" in note for note in payload["notes"])


def test_other_links_slopes_and_counts_of_trials_are_refused(crowd):
    frame, _ = crowd
    with pytest.raises(BayesreproError, match="logit link"):
        fit_monte_carlo_laplace(frame, resolve_family(frame, "bernoulli", "probit"), [])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs R with lme4")
def test_the_binary_crowd_of_forty_thousand_scores_matches_glmer(tmp_path):
    """bench_crowd.py's binary design (40,000 rows, 20,000 items × 8,000 raters, skewed), glmer's Laplace fit run by
    benchmarks/glmer_fit.R on the same CSV (about 11 s)."""
    table, _ = simulate_crowd(40_000, 20_000, 8_000, skew=1.0, binary=True, random_state=24)
    table.to_csv(tmp_path / "crowd.csv", index=False)
    run = subprocess.run(["Rscript", str(REPO / "benchmarks" / "glmer_fit.R"), str(tmp_path / "crowd.csv"), CROWD,
                          "item,rater"], capture_output=True, text=True, check=True, timeout=1200)
    glmer = json.loads(run.stdout.strip().splitlines()[-1])
    frame = model_frame(CROWD, table)
    fit = fit_monte_carlo_laplace(frame, resolve_family(frame, "auto", None), [], seed=5)
    _agrees(fit, glmer["variances"], [glmer["fixed_effects"]["(Intercept)"]])


def test_level_effects_of_a_monte_carlo_fit_are_the_exact_modes_at_its_estimates_without_sds(crowd):
    from bayesrepro.frequentist.level_effects import MOMENTS_NOTE, _binary_effects, fitted_effects

    frame, family = crowd
    fit = fit_monte_carlo_laplace(frame, family, [], seed=1)
    effects = fitted_effects(frame, family, fit)
    exact = _binary_effects(frame, family, fit)   # penalized IRLS with the sparse factor at the same estimates
    assert effects.notes == (MOMENTS_NOTE,)
    for term, reference in zip(effects.terms, exact.terms):
        scale = np.sqrt(fit.variances[term.term.group])
        np.testing.assert_allclose(term.estimate, reference.estimate, atol=1e-5 * scale)
        assert np.isnan(term.sd).all() and np.isfinite(reference.sd).all()
